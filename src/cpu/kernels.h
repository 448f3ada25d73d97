/* Internal: the CPU kernels of one weight type, gathered in a table per instruction set.
 *
 * Every kernel computes a block of outputs y[r*ldy + c] for r < nr rows of x and c < nc
 * rows of W (output columns). W rows are w_stride bytes apart, x rows x_stride bytes.
 * A kernel tiles the block by its own row and column group; each output is computed by
 * the same sequence of operations whatever nr and nc are, so results do not depend on
 * how the work was split among threads. */
#ifndef WICK_CPU_KERNELS_H
#define WICK_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wick/common.h"

typedef void (*wk_gemm_fn)(int64_t k, int64_t nr, int64_t nc, const void *w, size_t w_stride,
                           const void *x, size_t x_stride, float *y, size_t ldy);
/* One row of k f32 values into the weight type's vec-dot type. */
typedef void (*wk_act_quantize_fn)(const float *x, void *y, int64_t k);

typedef struct wk_cpu_kernels {
    const char *isa;               /* "scalar", "avx2", "avx512" */
    wk_act_quantize_fn quantize;   /* activations of the quantized form (NULL for dense types) */
    wk_gemm_fn gemm_q;             /* quantized form: x rows in the vec-dot type */
    wk_gemm_fn gemm_f32;           /* precise form / dense weights: x rows in f32 */
    wk_gemm_fn precise_octets;     /* gemm_f32 on the octet layout (octets.h), bit for bit: nc a
                                      multiple of 8, w an octet's start (NULL: none) */
} wk_cpu_kernels;

typedef enum wk_isa { WK_ISA_SCALAR = 0, WK_ISA_AVX2, WK_ISA_AVX512 } wk_isa;

/* The best instruction set this processor has (WICK_CPU_ISA=scalar|avx2|avx512 lowers it). */
wk_isa wk_cpu_isa(void);
const char *wk_isa_name(wk_isa isa);
/* log2 of the most weight groups a one-row tile reads side by side (wk_tile_groups): 1 on
 * AMD processors, 3 elsewhere; WICK_CPU_STREAMS=1|2|4|8 sets the count (read once). */
int wk_cpu_streams_log2(void);
void wk_cpu_set_streams_log2(int l); /* for tests: results must not depend on it */
/* Whether the one-row tiles of the 32-element formats prefetch their weights: not on AMD
 * processors (isa.c); WICK_CPU_PREFETCH=0 or 1 overrides. */
bool wk_cpu_one_row_prefetch(void);
/* The kernels of weight type t for isa: each entry from the highest instruction set up to
 * isa that has it, else scalar. Never NULL for one of the 15 types. */
const wk_cpu_kernels *wk_cpu_kernels_for(wk_type t, wk_isa isa);

/* Per-isa tables (NULL entries: not provided by that isa). */
const wk_cpu_kernels *wk_cpu_kernels_scalar(wk_type t);
const wk_cpu_kernels *wk_cpu_kernels_avx2(wk_type t);
const wk_cpu_kernels *wk_cpu_kernels_avx512(wk_type t);

/* A weight's whole blocks as floats, 8 at a time: elements 8e .. 8e + 7 of the nblocks blocks
 * at w, step bytes apart, go to out + e * vstride. The AVX2 one of type t (the values of its
 * precise form), for the AVX-512 many-row kernel, which reads two columns interleaved
 * (vstride 16). */
typedef void (*wk_deq_fn)(const void *w, int64_t nblocks, size_t step, float *out, size_t vstride);
wk_deq_fn wk_avx2_deq_for(wk_type t);
/* The AVX-512 precise form of nr (1 to 4) rows by table lookups, bit for bit the AVX2 one's,
 * for the types and row counts where it is faster (precise_rows_avx512.c), on the file's
 * layout or on octets; else NULL. */
wk_gemm_fn wk_avx512_precise_rows(wk_type t, int64_t nr, bool octets);

/* AVX2 activation quantizers, byte-identical to the reference ones (x86/quantize_avx2.c). */
void wk_avx2_quantize_q8_0(const float *x, void *y, int64_t k);
void wk_avx2_quantize_q8_1(const float *x, void *y, int64_t k);

/* Row conversions used around the kernels (SIMD where the processor has it). */
void wk_cpu_f16_to_f32(const uint16_t *x, float *y, int64_t n);
void wk_cpu_f32_to_f16(const float *x, uint16_t *y, int64_t n);
/* Round through half precision: y = (float)(half)x. */
void wk_cpu_round_f16(const float *x, float *y, int64_t n);

#endif
