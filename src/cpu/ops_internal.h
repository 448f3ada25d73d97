/* Internal: SIMD pieces of the CPU model operations (src/cpu/x86/ops_avx2.c), used by
 * src/cpu/ops.c when the processor has AVX2 and FMA. */
#ifndef WICK_CPU_OPS_INTERNAL_H
#define WICK_CPU_OPS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wick/common.h"

/* g[i] = g[i] / (1 + e^-g[i]) * u[i]. */
void wk_avx2_swiglu(float *g, const float *u, int64_t n);
/* y[i] = e^(x[i] - max), n a multiple of 8; the chunk sums added in double. */
double wk_avx2_softmax_exp(float *y, const float *x, int64_t n, float max);
/* Dot products of q and k (both f32, or both f16 when f16): vec order (n a multiple of
 * 32) and tile order (n a multiple of 8). */
float wk_avx2_dot_vec(const void *q, const void *k, int64_t n, bool f16);
float wk_avx2_dot_tile(const void *q, const void *k, int64_t n, bool f16);
/* s[t] = wk_avx2_dot_vec(q, k + t * k_stride, hd) * scale for t < n_keys (f32, hd a
 * multiple of 32), bit for bit; returns the largest. */
float wk_avx2_scores_vec(float *s, const float *q, const float *k, int64_t k_stride, int64_t n_keys, int64_t hd,
                         float scale);
/* out[d] = sum_j<n_keys p[j] * v[j*v_stride + d], d < hd (a multiple of 8), in the vec
 * order (acc: 32*hd floats) or the tile order (acc: 8*hd floats). */
void wk_avx2_weighted_sum(float *out, const float *p, const void *v, int64_t v_stride, int64_t n_keys,
                          int64_t hd, bool f16, bool vec_order, float *acc);

/* Activation rows in llama.cpp's rounding (see src/cpu/x86/ops_matmul_avx2.c). */
void wk_avx2_act_q8_0(const float *x, void *y, int64_t k);
void wk_avx2_act_q8_1(const float *x, void *y, int64_t k);
void wk_avx2_act_q8_K(const float *x, void *y, int64_t k);
/* Groups [g0, g1) of 8 columns of a repacked Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 weight (k per row)
 * for m activation rows x_stride bytes apart: y[r*ldy + 8g + c]. */
void wk_avx2_exact_groups(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                          size_t x_stride, int64_t m, float *y, size_t ldy);
/* What the AVX-512 kernel needs of each activation block, made once per row for every
 * column: -128 x the sum of lane l's four codes, the scale and (Q8_1) s as floats. */
typedef struct {
    int32_t off[8];
    float d, s;
} wk_exact_xprep;
/* prep[r * (k / 32) + b] for m rows of Q8_0 (q8_1 false) or Q8_1 blocks. */
void wk_avx512_exact_prep(bool q8_1, int64_t k, const void *x, size_t x_stride, int64_t m, wk_exact_xprep *prep);
/* The same bits as wk_avx2_exact_groups with AVX-512, 16 columns a register
 * (src/cpu/x86/ops_matmul_avx512.c): only where the processor has it. */
void wk_avx512_exact_groups(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                            size_t x_stride, const wk_exact_xprep *prep, int64_t m, float *y, size_t ldy);
/* The same for repacked Q4_K and Q6_K weights (k a multiple of 256, x in Q8_K). */
void wk_avx2_exact_groups_k(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                            size_t x_stride, int64_t m, float *y, size_t ldy);
/* The same bits with AVX-512, 16 columns a register (src/cpu/x86/ops_matmul_k_avx512.c). */
void wk_avx512_exact_groups_k(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                              size_t x_stride, int64_t m, float *y, size_t ldy);

#endif
