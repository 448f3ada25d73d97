/* AVX2 kernels of the repacked layouts (see cpu/repack.h): 8 output columns per
 * register, activation bytes broadcast four at a time, a tile of up to 4 activation
 * rows per loaded weight block. For 4-bit weights the 16-bit pair sums of up to 16
 * products are added before widening (at most 16 * 15 * 127 = 30480: no overflow). */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "quant/blocks.h"

#define WK_INLINE static inline __attribute__((always_inline))

WK_INLINE __m256i wk_bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

WK_INLINE __m256 wk_load_f16x8(const void *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* ---- Q8_0x8 --------------------------------------------------------------------- */
#define WK_Q8_0X8_TILE(R)                                                                          \
    static void wk_q8_0x8_tile_##R(int64_t nb, const uint8_t *w, const char *x, size_t xs,       \
                                   float *y, size_t ldy)                                           \
    {                                                                                              \
        const __m256i ones = _mm256_set1_epi16(1);                                                 \
        __m256 acc[R];                                                                             \
        for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();                                  \
        for (int64_t b = 0; b < nb; b++) {                                                         \
            const uint8_t *blk = w + b * 8 * sizeof(wk_block_q8_0);                                \
            __m256i isum[R];                                                                       \
            for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();                          \
            for (int s = 0; s < 8; s++) {                                                          \
                __m256i wq = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));             \
                __m256i wa = _mm256_sign_epi8(wq, wq);                                             \
                for (int r = 0; r < R; r++) {                                                      \
                    const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;             \
                    __m256i xv = _mm256_sign_epi8(wk_bcast4(xb->qs + 4 * s), wq);                  \
                    isum[r] = _mm256_add_epi32(                                                    \
                        isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xv), ones));           \
                }                                                                                  \
            }                                                                                      \
            __m256 wd = wk_load_f16x8(blk);                                                        \
            for (int r = 0; r < R; r++) {                                                          \
                const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;                 \
                __m256 sc = _mm256_mul_ps(wd, _mm256_set1_ps(_cvtsh_ss(xb->d)));                   \
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), sc, acc[r]);                 \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < R; r++) _mm256_storeu_ps(y + r * ldy, acc[r]);                         \
    }

WK_Q8_0X8_TILE(1)
WK_Q8_0X8_TILE(2)
WK_Q8_0X8_TILE(3)
WK_Q8_0X8_TILE(4)

static void wk_packed_q8_0(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                           const void *x, size_t xs, float *y, size_t ldy)
{
    int64_t nb = k / 32;
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        int64_t rr = nr - r0 < 4 ? nr - r0 : 4;
        const char *xr = (const char *)x + r0 * xs;
        for (int64_t g = 0; g < nc / 8; g++) {
            const uint8_t *wg = (const uint8_t *)w + g * 8 * ws;
            float *yg = y + r0 * ldy + 8 * g;
            switch (rr) {
            case 1: wk_q8_0x8_tile_1(nb, wg, xr, xs, yg, ldy); break;
            case 2: wk_q8_0x8_tile_2(nb, wg, xr, xs, yg, ldy); break;
            case 3: wk_q8_0x8_tile_3(nb, wg, xr, xs, yg, ldy); break;
            default: wk_q8_0x8_tile_4(nb, wg, xr, xs, yg, ldy); break;
            }
        }
    }
}

/* ---- Q4_0x8: unsigned nibbles q; sum((q - 8) * x) = sum(q * x) - 8 * sum(x) ------------ */
#define WK_Q4_0X8_TILE(R)                                                                          \
    static void wk_q4_0x8_tile_##R(int64_t nb, const uint8_t *w, const char *x, size_t xs,       \
                                   const int16_t *sx, float *y, size_t ldy)                        \
    {                                                                                              \
        const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);                    \
        __m256 acc[R];                                                                             \
        for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();                                  \
        for (int64_t b = 0; b < nb; b++) {                                                         \
            const uint8_t *blk = w + b * 8 * sizeof(wk_block_q4_0);                                \
            __m256i p16[R];                                                                        \
            for (int r = 0; r < R; r++) p16[r] = _mm256_setzero_si256();                           \
            for (int s = 0; s < 4; s++) {                                                          \
                __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));              \
                __m256i lo = _mm256_and_si256(v, m4);                                              \
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);                        \
                for (int r = 0; r < R; r++) {                                                      \
                    const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;             \
                    __m256i a = _mm256_maddubs_epi16(lo, wk_bcast4(xb->qs + 4 * s));               \
                    __m256i c = _mm256_maddubs_epi16(hi, wk_bcast4(xb->qs + 16 + 4 * s));          \
                    p16[r] = _mm256_add_epi16(p16[r], _mm256_add_epi16(a, c));                     \
                }                                                                                  \
            }                                                                                      \
            __m256 wd = wk_load_f16x8(blk);                                                        \
            for (int r = 0; r < R; r++) {                                                          \
                const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;                 \
                __m256i i32 = _mm256_sub_epi32(_mm256_madd_epi16(p16[r], ones),                    \
                                               _mm256_set1_epi32(8 * sx[r * nb + b]));             \
                __m256 sc = _mm256_mul_ps(wd, _mm256_set1_ps(_cvtsh_ss(xb->d)));                   \
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32), sc, acc[r]);                     \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < R; r++) _mm256_storeu_ps(y + r * ldy, acc[r]);                         \
    }

WK_Q4_0X8_TILE(1)
WK_Q4_0X8_TILE(2)
WK_Q4_0X8_TILE(3)
WK_Q4_0X8_TILE(4)

/* Sum of the 32 activation quants of a block. */
WK_INLINE int16_t wk_q8_block_sum(const int8_t *qs)
{
    __m256i v = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1),
                                                       _mm256_loadu_si256((const __m256i *)qs)),
                                  _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return (int16_t)_mm_cvtsi128_si32(s);
}

static void wk_packed_q4_0(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                           const void *x, size_t xs, float *y, size_t ldy)
{
    int64_t nb = k / 32;
    int16_t sx[4 * nb];
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        int64_t rr = nr - r0 < 4 ? nr - r0 : 4;
        const char *xr = (const char *)x + r0 * xs;
        for (int64_t r = 0; r < rr; r++)
            for (int64_t b = 0; b < nb; b++)
                sx[r * nb + b] = wk_q8_block_sum(((const wk_block_q8_0 *)(xr + r * xs) + b)->qs);
        for (int64_t g = 0; g < nc / 8; g++) {
            const uint8_t *wg = (const uint8_t *)w + g * 8 * ws;
            float *yg = y + r0 * ldy + 8 * g;
            switch (rr) {
            case 1: wk_q4_0x8_tile_1(nb, wg, xr, xs, sx, yg, ldy); break;
            case 2: wk_q4_0x8_tile_2(nb, wg, xr, xs, sx, yg, ldy); break;
            case 3: wk_q4_0x8_tile_3(nb, wg, xr, xs, sx, yg, ldy); break;
            default: wk_q4_0x8_tile_4(nb, wg, xr, xs, sx, yg, ldy); break;
            }
        }
    }
}

/* ---- Q4_Kx8 ----------------------------------------------------------------------- */
/* 64 six-bit values (index j*8 + c) from their 48-byte encoding (repack.c). */
WK_INLINE void wk_k4x8_decode(const uint8_t *enc, uint8_t out[64])
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
    __m256i a = _mm256_loadu_si256((const __m256i *)enc);
    __m128i b = _mm_loadu_si128((const __m128i *)(enc + 32));
    __m256i bb = _mm256_set_m128i(b, b);
    __m256i hl = _mm256_and_si256(_mm256_srlv_epi32(bb, _mm256_set_epi32(2, 2, 2, 2, 0, 0, 0, 0)), m3);
    __m256i hh = _mm256_and_si256(_mm256_srlv_epi32(bb, _mm256_set_epi32(6, 6, 6, 6, 4, 4, 4, 4)), m3);
    __m256i lo = _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_slli_epi16(hl, 4));
    __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_slli_epi16(hh, 4));
    _mm256_storeu_si256((__m256i *)out, lo);
    _mm256_storeu_si256((__m256i *)(out + 32), hi);
}

/* 8 bytes (one per column) -> 16 x i16 with each value twice (the pair lanes of a column). */
WK_INLINE __m256i wk_dup_cols(const uint8_t *v)
{
    __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)v));
    return _mm256_set_m128i(_mm_unpackhi_epi16(w, w), _mm_unpacklo_epi16(w, w));
}

#define WK_Q4_KX8_TILE(R)                                                                          \
    static void wk_q4_Kx8_tile_##R(int64_t nb, const uint8_t *w, const char *x, size_t xs,       \
                                   float *y, size_t ldy)                                           \
    {                                                                                              \
        const __m256i m4 = _mm256_set1_epi8(0x0f);                                                 \
        __m256 acc[R];                                                                             \
        for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();                                  \
        for (int64_t b = 0; b < nb; b++) {                                                         \
            const uint8_t *blk = w + b * 8 * sizeof(wk_block_q4_K);                                \
            uint8_t sc[64], mn[64];                                                                \
            wk_k4x8_decode(blk + 32, sc);                                                          \
            wk_k4x8_decode(blk + 80, mn);                                                          \
            __m256i isum[R];                                                                       \
            for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();                          \
            for (int p = 0; p < 4; p++) {                                                          \
                __m256i plo[R], phi[R];                                                            \
                for (int r = 0; r < R; r++) plo[r] = phi[r] = _mm256_setzero_si256();              \
                for (int s = 0; s < 8; s++) {                                                      \
                    __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 128 + 256 * p + 32 * s)); \
                    __m256i lo = _mm256_and_si256(v, m4);                                          \
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);                    \
                    for (int r = 0; r < R; r++) {                                                  \
                        const int8_t *xq = ((const wk_block_q8_K *)(x + r * xs) + b)->qs + 64 * p; \
                        plo[r] = _mm256_add_epi16(                                                 \
                            plo[r], _mm256_maddubs_epi16(lo, wk_bcast4(xq + 4 * s)));              \
                        phi[r] = _mm256_add_epi16(                                                 \
                            phi[r], _mm256_maddubs_epi16(hi, wk_bcast4(xq + 32 + 4 * s)));         \
                    }                                                                              \
                }                                                                                  \
                __m256i slo = wk_dup_cols(sc + 8 * (2 * p)), shi = wk_dup_cols(sc + 8 * (2 * p + 1)); \
                for (int r = 0; r < R; r++)                                                        \
                    isum[r] = _mm256_add_epi32(                                                    \
                        isum[r], _mm256_add_epi32(_mm256_madd_epi16(plo[r], slo),                  \
                                                  _mm256_madd_epi16(phi[r], shi)));                \
            }                                                                                      \
            __m256 wd = wk_load_f16x8(blk), wdmin = wk_load_f16x8(blk + 16);                       \
            __m256i mnp[4];                                                                        \
            for (int q = 0; q < 4; q++)                                                            \
                mnp[q] = _mm256_cvtepu8_epi16(                                                     \
                    _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(mn + 16 * q)),             \
                                      _mm_loadl_epi64((const __m128i *)(mn + 16 * q + 8))));       \
            for (int r = 0; r < R; r++) {                                                          \
                const wk_block_q8_K *xb = (const wk_block_q8_K *)(x + r * xs) + b;                 \
                __m256i msum = _mm256_setzero_si256();                                             \
                for (int q = 0; q < 4; q++) {                                                      \
                    int bs0 = xb->bsums[4 * q] + xb->bsums[4 * q + 1];                             \
                    int bs1 = xb->bsums[4 * q + 2] + xb->bsums[4 * q + 3];                         \
                    __m256i bp = _mm256_set1_epi32((int)(((uint32_t)bs0 & 0xffffu) |               \
                                                         ((uint32_t)bs1 << 16)));                  \
                    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mnp[q], bp));                  \
                }                                                                                  \
                __m256 dx = _mm256_set1_ps(xb->d);                                                 \
                acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(wd, dx),       \
                                         acc[r]);                                                  \
                acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(wdmin, dx),      \
                                          acc[r]);                                                 \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < R; r++) _mm256_storeu_ps(y + r * ldy, acc[r]);                         \
    }

WK_Q4_KX8_TILE(1)
WK_Q4_KX8_TILE(2)
WK_Q4_KX8_TILE(3)
WK_Q4_KX8_TILE(4)

static void wk_packed_q4_K(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                           const void *x, size_t xs, float *y, size_t ldy)
{
    int64_t nb = k / 256;
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        int64_t rr = nr - r0 < 4 ? nr - r0 : 4;
        const char *xr = (const char *)x + r0 * xs;
        for (int64_t g = 0; g < nc / 8; g++) {
            const uint8_t *wg = (const uint8_t *)w + g * 8 * ws;
            float *yg = y + r0 * ldy + 8 * g;
            switch (rr) {
            case 1: wk_q4_Kx8_tile_1(nb, wg, xr, xs, yg, ldy); break;
            case 2: wk_q4_Kx8_tile_2(nb, wg, xr, xs, yg, ldy); break;
            case 3: wk_q4_Kx8_tile_3(nb, wg, xr, xs, yg, ldy); break;
            default: wk_q4_Kx8_tile_4(nb, wg, xr, xs, yg, ldy); break;
            }
        }
    }
}

wk_gemm_fn wk_avx2_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx2_repacked_gemm(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q8_0: return wk_packed_q8_0;
    case WK_TYPE_Q4_0: return wk_packed_q4_0;
    case WK_TYPE_Q4_K: return wk_packed_q4_K;
    default: return NULL;
    }
}
