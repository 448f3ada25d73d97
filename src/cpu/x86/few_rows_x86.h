/* Internal (AVX2 and AVX-512 builds): the precise form's register path for 1 to 4 rows, the
 * lanes' sum and the one-element FMA that end each output. kernels_avx2.c decodes with
 * conversions, precise_rows_avx512.c with table lookups; both run this loop, so the lanes, the
 * values and the order of the FMAs, and with them the bits, are the same. */
#ifndef WICK_CPU_X86_FEW_ROWS_X86_H
#define WICK_CPU_X86_FEW_ROWS_X86_H

#include <immintrin.h>
#include <stdint.h>

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

/* NAME(R, C, k, nc, w, ws, x, xs, y, ldy): R rows x nc columns, C at a time. STATE: a block's
 * decoding state; PREP(block, &state) once a block, then DEQ32(block, j, &state, f) gives its
 * elements 32j .. 32j + 31 in f[0..3], j in order; BS, BB: elements and bytes of a block;
 * ELEM(w, i): element i of a dense weight, for the k % BS tail.
 *
 * Up to 4 rows, any weight type: each 32-element piece of C columns (up to 8 for 1 row, 4
 * for 2, 2 for 3-4: the accumulators stay in registers) decoded in registers and used at
 * once, no L1 buffer, so the weights stream in one pass (session 16, Zen 5, one thread, in
 * cache, m = 1: quantized weights 0.62-0.80 of the buffered path's time; F16 at m = 1
 * earlier 6.8 -> 4.2-4.5 ms). The values and the order of the FMAs are the buffered path's,
 * and the k % 32 tail of dense weights (ELEM) is added after the lanes' sum as there: the
 * same bits. PF: prefetch the weights WK_PF_AHEAD ahead (the dense types stream faster
 * without it: the next lines of each column are the hardware prefetcher's; see WK_DENSE_C). */
#define WK_FEW_ROWS(NAME, STATE, PREP, DEQ32, BS, BB, ELEM, PF)                                  \
    WK_INLINE void NAME(const int R, const int C, int64_t k, int64_t nc, const void *w, size_t ws,  \
                        const void *x, size_t xs, float *y, size_t ldy)                             \
    {                                                                                              \
        const int64_t nb = k / (BS);                                                               \
        for (int64_t c0 = 0; c0 < nc; c0 += C) {                                                   \
            int cc = nc - c0 < C ? (int)(nc - c0) : C;                                             \
            const char *wr[8];                                                                     \
            for (int c = 0; c < C; c++) /* missing columns read column c0 and are dropped */     \
                wr[c] = (const char *)w + (c0 + (c < cc ? c : 0)) * ws;                            \
            __m256 a[4][8];                                                                        \
            for (int r = 0; r < 4; r++) /* all: the compiler cannot see that cc <= C */           \
                for (int c = 0; c < 8; c++) a[r][c] = _mm256_setzero_ps();                         \
            for (int64_t bi = 0; bi < nb; bi++) {                                                  \
                STATE st[8];                                                                       \
                for (int c = 0; c < C; c++) {                                                      \
                    if (PF)                                                                        \
                        for (size_t o = 0; o < (BB); o += 64)                                      \
                            _mm_prefetch(wr[c] + bi * (BB) + WK_PF_AHEAD + o, _MM_HINT_T0);       \
                    PREP(wr[c] + bi * (BB), &st[c]);                                               \
                }                                                                                  \
                for (int j = 0; j < (BS) / 32; j++)                                                \
                    for (int c = 0; c < C; c++) {                                                  \
                        __m256 f[4];                                                               \
                        DEQ32(wr[c] + bi * (BB), j, &st[c], f);                                    \
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

/* NAME (a WK_FEW_ROWS function) on nr = 1 to 4 rows: C1 columns side by side at one row, 4 at
 * two, 2 at three or four (the accumulators stay in registers). */
#define WK_FEW_ROWS_RUN(NAME, C1, nr, k, nc, w, ws, x, xs, y, ldy)                                \
    do {                                                                                           \
        if ((nr) == 1) NAME(1, C1, k, nc, w, ws, x, xs, y, ldy);                                   \
        else if ((nr) == 2) NAME(2, 4, k, nc, w, ws, x, xs, y, ldy);                               \
        else if ((nr) == 3) NAME(3, 2, k, nc, w, ws, x, xs, y, ldy);                               \
        else NAME(4, 2, k, nc, w, ws, x, xs, y, ldy);                                              \
    } while (0)

#endif
