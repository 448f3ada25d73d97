/* AVX-512 kernels of the per-type table (cpu/kernels.h): the dense weights (F32, F16, BF16)
 * with f32 activations, for up to 4 rows. The quantized formats' AVX-512 kernels work on
 * their repacked layouts (repack_avx512.c, repack_rows_avx512.c); every other entry is the
 * AVX2 table's.
 *
 * A 512-bit accumulator holds two columns, 8 lanes each: the lanes, the elements that reach
 * them and the order of the FMAs are the AVX2 kernel's (kernels_avx2.c, WK_FEW_ROWS), and
 * each half is summed as it sums a register, so both give the same bits. Half as many
 * instructions a weight byte lets one core keep more reads in flight: F16 8192 x 4096 from
 * memory, m = 1, 2 threads, Zen 5 (session 26, medians of 30): 8 columns in 256-bit
 * registers 1.72 ms, in 512-bit pairs 1.53 ms; 16 columns 1.94 ms; an L1 prefetch slowed both (an
 * L2 prefetch at one row is faster on the Zen 4: WK_Z_PF_AHEAD). */
#include <immintrin.h>
#include <stdint.h>

#include "core/half.h"
#include "cpu/kernels.h"

#define WK_INLINE static inline __attribute__((always_inline))

/* Columns side by side (two a register): 8 streams, the count that read fastest. */
#define WK_Z_COLS 8

/* The lanes' sum of 8 floats, in kernels_avx2.c's order (wk_hsum). */
WK_INLINE float wk_z_hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* a * b + c rounded once, as kernels_avx2.c's tails (wk_fma1). */
WK_INLINE float wk_z_fma1(float a, float b, float c)
{
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

/* Elements i..i+7 of two weight rows p and q, as floats: p's in the low half, q's in the high. */
WK_INLINE __m512 wk_z_pair_f32(const void *p, const void *q, int64_t i)
{
    __m256 lo = _mm256_loadu_ps((const float *)p + i), hi = _mm256_loadu_ps((const float *)q + i);
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}
WK_INLINE __m512 wk_z_pair_f16(const void *p, const void *q, int64_t i)
{
    __m128i lo = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    __m128i hi = _mm_loadu_si128((const __m128i *)((const uint16_t *)q + i));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}
WK_INLINE __m512 wk_z_pair_bf16(const void *p, const void *q, int64_t i)
{
    __m128i lo = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    __m128i hi = _mm_loadu_si128((const __m128i *)((const uint16_t *)q + i));
    __m512i v = _mm512_cvtepu16_epi32(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

WK_INLINE float wk_z_elem_f32(const void *w, int64_t i) { return ((const float *)w)[i]; }
WK_INLINE float wk_z_elem_f16(const void *w, int64_t i) { return _cvtsh_ss(((const uint16_t *)w)[i]); }
WK_INLINE float wk_z_elem_bf16(const void *w, int64_t i) { return wk_bf16_to_float(((const uint16_t *)w)[i]); }

/* At one row each column's stream is prefetched into L2 2 KiB ahead, a line at a time: F16
 * 8192 x 4096 from memory, Zen 4, three alternated rounds: one thread 2.96-3.04 -> 2.68-2.82 ms,
 * two 2.08-2.32 -> 1.94-2.14 (88-93% -> 94-97% of the bandwidth); BF16 the same, F32 as
 * before; 512 bytes ahead gained nothing, 1 KiB about as much, into L1 it was slower. */
#define WK_Z_PF_AHEAD 2048
/* wk_z_rows_T: R rows (1-4) x all nc columns, WK_Z_COLS at a time. Elements past the last
 * multiple of 32 are added after the lanes' sum, one FMA each, as the AVX2 kernel does. */
#define WK_Z_ROWS(T, ES)                                                                          \
    WK_INLINE void wk_z_rows_##T(const int R, int64_t k, int64_t nc, const void *w, size_t ws,    \
                                 const void *x, size_t xs, float *y, size_t ldy)                   \
    {                                                                                              \
        const int64_t kfull = k / 32 * 32;                                                         \
        for (int64_t c0 = 0; c0 < nc; c0 += WK_Z_COLS) {                                           \
            const int cc = nc - c0 < WK_Z_COLS ? (int)(nc - c0) : WK_Z_COLS;                       \
            const char *wr[WK_Z_COLS];                                                             \
            for (int c = 0; c < WK_Z_COLS; c++) /* missing columns read column c0, dropped */     \
                wr[c] = (const char *)w + (c0 + (c < cc ? c : 0)) * ws;                            \
            __m512 a[4][WK_Z_COLS / 2];                                                            \
            for (int r = 0; r < 4; r++)                                                            \
                for (int p = 0; p < WK_Z_COLS / 2; p++) a[r][p] = _mm512_setzero_ps();             \
            for (int64_t i0 = 0; i0 < kfull; i0 += 32) {                                           \
                if (R == 1)                                                                        \
                    for (int c = 0; c < WK_Z_COLS; c++)                                            \
                        for (int o = 0; o < 32 * ES; o += 64)                                      \
                            _mm_prefetch(wr[c] + i0 * ES + WK_Z_PF_AHEAD + o, _MM_HINT_T1);        \
                for (int p = 0; p < WK_Z_COLS / 2; p++)                                            \
                    for (int64_t i = i0; i < i0 + 32; i += 8) {                                        \
                        __m512 f = wk_z_pair_##T(wr[2 * p], wr[2 * p + 1], i);                     \
                        for (int r = 0; r < R; r++) {                                              \
                            const float *xr = (const float *)((const char *)x + r * xs);           \
                            __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(xr + i));           \
                            a[r][p] = _mm512_fmadd_ps(f, xv, a[r][p]);                             \
                        }                                                                          \
                    }                                                                              \
            }                                                                                      \
            for (int r = 0; r < R; r++)                                                            \
                for (int c = 0; c < cc; c++) {                                                     \
                    const float *xr = (const float *)((const char *)x + r * xs);                   \
                    __m512 v = a[r][c / 2];                                                        \
                    float s = wk_z_hsum8(c % 2 ? _mm512_extractf32x8_ps(v, 1) : _mm512_castps512_ps256(v)); \
                    for (int64_t i = kfull; i < k; i++)                                    \
                        s = wk_z_fma1(wk_z_elem_##T(wr[c], i), xr[i], s);                  \
                    y[r * ldy + c0 + c] = s;                                                       \
                }                                                                                  \
        }                                                                                          \
    }

/* wk_avx512_gemm_f32_T: up to 4 rows here, more through the AVX2 kernel (its L1-buffered
 * tiles, which give the same bits). */
#define WK_Z_GEMM(T, TYPE, ES)                                                                     \
    WK_Z_ROWS(T, ES)                                                                                 \
    static void wk_avx512_gemm_f32_##T(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, \
                                       const void *x, size_t xs, float *y, size_t ldy)             \
    {                                                                                              \
        switch (nr) {                                                                              \
        case 1: wk_z_rows_##T(1, k, nc, w, ws, x, xs, y, ldy); break;                              \
        case 2: wk_z_rows_##T(2, k, nc, w, ws, x, xs, y, ldy); break;                              \
        case 3: wk_z_rows_##T(3, k, nc, w, ws, x, xs, y, ldy); break;                              \
        case 4: wk_z_rows_##T(4, k, nc, w, ws, x, xs, y, ldy); break;                              \
        default: wk_cpu_kernels_avx2(TYPE)->gemm_f32(k, nr, nc, w, ws, x, xs, y, ldy); break;      \
        }                                                                                          \
    }                                                                                              \
    static const wk_cpu_kernels wk_avx512_##T = {"avx512", NULL, NULL, wk_avx512_gemm_f32_##T};
WK_Z_GEMM(f32, WK_TYPE_F32, 4)
WK_Z_GEMM(f16, WK_TYPE_F16, 2)
WK_Z_GEMM(bf16, WK_TYPE_BF16, 2)

const wk_cpu_kernels *wk_cpu_kernels_avx512(wk_type t)
{
    switch (t) {
    case WK_TYPE_F32: return &wk_avx512_f32;
    case WK_TYPE_F16: return &wk_avx512_f16;
    case WK_TYPE_BF16: return &wk_avx512_bf16;
    default: return NULL; /* the AVX2 table's kernels */
    }
}
