/* wick: the quantized Llama model, sampling and generation. */
#ifndef WICK_MODEL_H
#define WICK_MODEL_H

#include "common.h"
#include "gguf.h"
#include "tensor.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_model wk_model;

#ifdef __cplusplus
}
#endif
#endif
