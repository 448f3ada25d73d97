/* Internal (AVX2 and AVX-512 builds): the precise form's register path for 1 to 4 rows, the
 * lanes' sum and the one-element FMA that end each output. kernels_avx2.c decodes with
 * conversions, precise_rows_avx512.c with table lookups; both run this loop, so the lanes, the
 * values and the order of the FMAs, and with them the bits, are the same. */
#ifndef WICK_CPU_X86_FEW_ROWS_X86_H
#define WICK_CPU_X86_FEW_ROWS_X86_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpu/octets.h"

#ifndef WK_INLINE
#define WK_INLINE static inline __attribute__((always_inline))
#endif

/* a * b + c rounded once, written out so that every kernel's tail has the same operation
 * whatever the compiler contracts (GNU C contracts a * b + c where it sees fit). */
WK_INLINE float wk_fma1(float a, float b, float c)
{
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

WK_INLINE float wk_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Weights are prefetched this many bytes ahead of the block being read (kernels_avx2.c). */
#ifndef WK_PF_AHEAD
#define WK_PF_AHEAD 2048
#endif

/* ELEM for block types, whose k is whole: no tail. */
WK_INLINE float wk_elem_none(const void *w, int64_t i) { (void)w, (void)i; return 0.0f; }

/* NAME(R, C, OCT, k, nc, w, ws, x, xs, y, ldy): R rows x nc columns, C at a time, of a weight
 * in the file's layout or (OCT) in octets (octets.h; C divides 8, so that C columns lie in
 * one octet, and nc is a multiple of 8). STATE: a block's
 * decoding state; PREP(block, &state) once a block, then DEQ32(block, j, &state, f) gives its
 * elements 32j .. 32j + 31 in f[0..3], j in order; BS, BB: elements and bytes of a block;
 * ELEM(w, i): element i of a dense weight, for the k % BS tail.
 *
 * Up to 4 rows, any weight type: each 32-element piece of C columns (WK_FEW_ROWS_RUN: the
 * accumulators stay in registers) decoded in registers and used at
 * once, no L1 buffer, so the weights stream in one pass (session 16, Zen 5, one thread, in
 * cache, m = 1: quantized weights 0.62-0.80 of the buffered path's time; F16 at m = 1
 * earlier 6.8 -> 4.2-4.5 ms). The values and the order of the FMAs are the buffered path's,
 * and the k % 32 tail of dense weights (ELEM) is added after the lanes' sum as there: the
 * same bits. PF: prefetch the weights WK_PF_AHEAD ahead (the dense types stream faster
 * without it: the next lines of each column are the hardware prefetcher's; see WK_DENSE_C).
 * In octets the hardware prefetcher does not keep up with passes that read C of every 8
 * blocks (Q4_K [8192, 4096] from memory, 2 threads, Zen 4: 2 rows 3.8-4.3 ms without
 * software prefetch, 1.7 with the next octet's, 1.5-1.9 with both below). */
#define WK_FEW_ROWS(NAME, STATE, PREP, DEQ32, BS, BB, ELEM, PF)                                  \
    WK_INLINE void NAME(const int R, const int C, const bool OCT, int64_t k, int64_t nc, const void *w, \
                        size_t ws, const void *x, size_t xs, float *y, size_t ldy)                  \
    {                                                                                              \
        const int64_t nb = k / (BS);                                                               \
        const size_t step = wk_octet_step((BB), OCT);                                              \
        for (int64_t c0 = 0; c0 < nc; c0 += C) {                                                   \
            int cc = nc - c0 < C ? (int)(nc - c0) : C;                                             \
            const char *wr[8];                                                                     \
            for (int c = 0; c < C; c++) /* missing columns read column c0 and are dropped */     \
                wr[c] = wk_octet_col(w, c0 + (c < cc ? c : 0), ws, (BB), OCT);                     \
            __m256 a[4][8];                                                                        \
            for (int r = 0; r < 4; r++) /* all: the compiler cannot see that cc <= C */           \
                for (int c = 0; c < 8; c++) a[r][c] = _mm256_setzero_ps();                         \
            /* Octets: a pass (C of the 8 columns) prefetches its share of the next octet into  \
             * L2, and its own next blocks WK_PF_AHEAD bytes of its reading ahead into L1. */     \
            const char *pf_next = OCT ? wk_octet_col(w, (c0 & ~7) + 8, ws, (BB), OCT) : NULL;      \
            const size_t pf_from = OCT ? (size_t)((c0 & 7) / C) * (size_t)nb * C * (BB) : 0;      \
            const int64_t pf_steps = WK_PF_AHEAD / (C * (BB)) > 1 ? WK_PF_AHEAD / (C * (BB)) : 1;  \
            for (int64_t bi = 0; bi < nb; bi++) {                                                  \
                STATE st[8];                                                                       \
                if (OCT && PF) {                                                                   \
                    const size_t from = pf_from + bi * C * (BB);                                   \
                    for (size_t o = from & ~(size_t)63; o < from + C * (BB); o += 64)             \
                        _mm_prefetch(pf_next + o, _MM_HINT_T1);                                    \
                    for (size_t o = 0; o < C * (BB); o += 64)                                      \
                        _mm_prefetch(wr[0] + (bi + pf_steps) * step + o, _MM_HINT_T0);             \
                }                                                                                  \
                for (int c = 0; c < C; c++) {                                                      \
                    if (PF && !OCT)                                                                \
                        for (size_t o = 0; o < (BB); o += 64)                                      \
                            _mm_prefetch(wr[c] + bi * step + WK_PF_AHEAD + o, _MM_HINT_T0);        \
                    PREP(wr[c] + bi * step, &st[c]);                                               \
                }                                                                                  \
                for (int j = 0; j < (BS) / 32; j++)                                                \
                    for (int c = 0; c < C; c++) {                                                  \
                        __m256 f[4];                                                               \
                        DEQ32(wr[c] + bi * step, j, &st[c], f);                                    \
                        for (int i = 0; i < 4; i++)                                                \
                            for (int r = 0; r < R; r++) {                                          \
                                const float *xr = (const float *)((const char *)x + r * xs);       \
                                __m256 xv = _mm256_loadu_ps(xr + bi * (BS) + 32 * j + 8 * i);       \
                                a[r][c] = _mm256_fmadd_ps(f[i], xv, a[r][c]);                      \
                            }                                                                      \
                    }                                                                              \
            }                                                                                      \
            for (int r = 0; r < R; r++)                                                            \
                for (int c = 0; c < cc; c++) {                                                     \
                    const float *xr = (const float *)((const char *)x + r * xs);                   \
                    float s = wk_hsum(a[r][c]);                                                    \
                    for (int64_t i = nb * (BS); i < k; i++) s = wk_fma1(ELEM(wr[c], i), xr[i], s);           \
                    y[r * ldy + c0 + c] = s;                                                       \
                }                                                                                  \
        }                                                                                          \
    }

/* NAME, a wk_gemm_fn on one layout: IMPL(OCT, k, nr, nc, w, ws, x, xs, y, ldy) with OCT fixed
 * (false: the file's layout; true: octets), so that each layout gets its own code. */
#define WK_LAYOUT_GEMM(NAME, IMPL, OCT)                                                            \
    static void NAME(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,   \
                     size_t xs, float *y, size_t ldy)                                              \
    {                                                                                              \
        IMPL(OCT, k, nr, nc, w, ws, x, xs, y, ldy);                                                \
    }

/* NAME (a WK_FEW_ROWS function) on nr = 1 to 4 rows: C1 columns side by side at one row, 4 at
 * two, C34 at three or four (the accumulators stay in registers: 2 in the 16 AVX2 registers,
 * 4 in AVX-512's 32). */
#define WK_FEW_ROWS_RUN(NAME, C1, C34, OCT, nr, k, nc, w, ws, x, xs, y, ldy)                      \
    do {                                                                                           \
        if ((nr) == 1) NAME(1, C1, OCT, k, nc, w, ws, x, xs, y, ldy);                              \
        else if ((nr) == 2) NAME(2, 4, OCT, k, nc, w, ws, x, xs, y, ldy);                          \
        else if ((nr) == 3) NAME(3, C34, OCT, k, nc, w, ws, x, xs, y, ldy);                        \
        else NAME(4, C34, OCT, k, nc, w, ws, x, xs, y, ldy);                                       \
    } while (0)

#endif
