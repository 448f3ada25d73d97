/*
 * wick: quantized language models from GGUF files on the CPU and NVIDIA GPUs.
 *
 * The public C API. Every call that can fail returns a wk_status; on failure
 * wk_last_error() returns a message that names what was wrong, with numbers.
 * Every _open/_create has its _close/_free. The library never prints, exits or
 * aborts on bad input.
 */
#ifndef WICK_H
#define WICK_H

#include "wick/common.h"
#include "wick/gguf.h"
#include "wick/quant.h"
#include "wick/tensor.h"
#include "wick/tokenizer.h"
#include "wick/model.h"

#endif
