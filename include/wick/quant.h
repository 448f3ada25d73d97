/* wick: the block formats. Every property of a type comes from one traits table. */
#ifndef WICK_QUANT_H
#define WICK_QUANT_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True for the 15 types wick knows (ids 4, 5 and removed ids are false). */
bool wk_type_known(int id);
/* Lower-case name ("q4_k", "bf16"); "?" for an unknown id. */
const char *wk_type_name(wk_type t);
/* Accepts the names above, case-insensitively. */
wk_status wk_type_from_name(const char *name, wk_type *out);
int64_t wk_type_block_size(wk_type t);  /* elements per block */
size_t wk_type_block_bytes(wk_type t);  /* bytes per block */
bool wk_type_is_quantized(wk_type t);   /* false for F32, F16, BF16 */
wk_type wk_type_vec_dot_type(wk_type t); /* the activation type of its dot product */
/* Bytes of a row of n elements; WK_ERR_INVALID unless n is a multiple of the block size. */
wk_status wk_type_row_bytes(wk_type t, int64_t n, size_t *out);

/* Reference (scalar) conversions of one row of n elements. n must be a multiple of
 * the block size. Quantizers produce ggml's bytes exactly. */
wk_status wk_quantize_row(wk_type t, const float *x, void *y, int64_t n);
wk_status wk_dequantize_row(wk_type t, const void *x, float *y, int64_t n);
wk_status wk_dequantize_row_f16(wk_type t, const void *x, uint16_t *y, int64_t n);
/* Reference dot product of a row of type t with a row of wk_type_vec_dot_type(t). */
wk_status wk_vec_dot(wk_type t, int64_t n, const void *x, const void *y, float *out);

/* IEEE half and bfloat16 conversions (round to nearest even). */
float wk_f16_to_f32(uint16_t h);
uint16_t wk_f32_to_f16(float f);
float wk_bf16_to_f32(uint16_t h);
uint16_t wk_f32_to_bf16(float f);

#ifdef __cplusplus
}
#endif
#endif
