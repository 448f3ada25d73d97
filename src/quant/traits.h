/* Internal: the type-traits table, the one switch over types. Adding a format is
 * adding a row here and a file of functions. */
#ifndef WICK_QUANT_TRAITS_H
#define WICK_QUANT_TRAITS_H

#include "wick/common.h"

/* n is always a multiple of the block size. x is a row of this type; for vec_dot,
 * y is a row of the vec-dot type and *s receives the dot product. */
typedef void (*wk_to_f32_fn)(const void *restrict x, float *restrict y, int64_t n);
typedef void (*wk_to_f16_fn)(const void *restrict x, uint16_t *restrict y, int64_t n);
typedef void (*wk_from_f32_fn)(const float *restrict x, void *restrict y, int64_t n);
typedef void (*wk_vec_dot_fn)(int64_t n, float *restrict s, const void *restrict x,
                              const void *restrict y);

typedef struct wk_type_traits {
    const char *name;      /* lower case, as the CLI spells it */
    int64_t block_size;    /* elements per block */
    size_t block_bytes;    /* bytes per block */
    bool quantized;        /* false for F32, F16, BF16 */
    wk_type vec_dot_type;  /* activation type of vec_dot */
    wk_to_f32_fn to_f32;   /* dequantize */
    wk_to_f16_fn to_f16;   /* dequantize to half (exactly to_f32 then rounded) */
    wk_from_f32_fn from_f32; /* reference quantizer, byte-identical to ggml's */
    wk_vec_dot_fn vec_dot; /* scalar reference dot product */
} wk_type_traits;

/* NULL for an id that is not one of the 15 types. */
const wk_type_traits *wk_traits(wk_type t);

#endif
