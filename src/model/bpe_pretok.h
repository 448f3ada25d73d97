/* Internal: the pre-tokenizers of byte-level BPE: text (as code points) split
 * into words before merging, following the regular expressions llama.cpp uses
 * for each tokenizer.ggml.pre value, implemented by hand. */
#ifndef WICK_MODEL_BPE_PRETOK_H
#define WICK_MODEL_BPE_PRETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wick/common.h"

typedef enum wk_pretok {
    WK_PRETOK_DEFAULT, /* "default" or missing: punctuation runs, GPT-2, number runs, digit triples
                        */
    WK_PRETOK_GPT2,    /* "gpt-2", "phi-2", ...: the GPT-2 expression alone */
    WK_PRETOK_SMOLLM,  /* "smollm", "starcoder", ...: every digit alone, then GPT-2 */
    WK_PRETOK_LLAMA3,  /* "llama3", "llama-bpe", ...: Llama 3's expression, numbers in 1-3 digits */
    WK_PRETOK_QWEN2,   /* "qwen2", ...: Llama 3's expression with single digits */
} wk_pretok;

/* A growable array of word lengths (in code points). */
typedef struct wk_lenvec {
    size_t *v;
    size_t n, cap;
} wk_lenvec;

wk_status wk_lenvec_push(wk_lenvec *a, size_t x);
void wk_lenvec_free(wk_lenvec *a);

/* Map a tokenizer.ggml.pre value to a pre-tokenizer and whether detokenizing
 * tidies spaces; WK_ERR_UNSUPPORTED for one wick does not know. NULL or ""
 * means "default". */
wk_status wk_pretok_from_name(const char *name, wk_pretok *out, bool *clean_spaces);

/* Split cps[0..n) into words; on success *words holds their lengths in order
 * (summing to n; empty when n is 0). words->n is reset first. */
wk_status wk_pretok_split(wk_pretok kind, const uint32_t *cps, size_t n, wk_lenvec *words,
                          wk_lenvec *scratch);

#endif
