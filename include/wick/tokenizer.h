/* wick: tokenizers from GGUF metadata (byte-level BPE and SentencePiece) and chat templates. */
#ifndef WICK_TOKENIZER_H
#define WICK_TOKENIZER_H

#include "common.h"
#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_tokenizer wk_tokenizer;

#ifdef __cplusplus
}
#endif
#endif
