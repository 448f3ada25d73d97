/* AVX-512 kernels of the model's quantized form for the 32-element formats in llama.cpp's
 * order: the AVX2 ones' operations (ops_matmul_avx2.c), two activation rows at a time in
 * the two halves of a 512-bit register. Every lane sees the same integer sums and the same
 * float operations in the same order, so the bits are the AVX2 kernels' (test_kernels);
 * what changes is that four rows' accumulators (16 registers) stay in registers, where the
 * AVX2 kernel's eight rows keep their 64 in memory, and that a lane's four products take one
 * VNNI step. src/cpu/ops.c takes it for several rows of the formats without a min (measured
 * faster there; Q4_1 was slower with its form before the VNNI step, and within noise after). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "cpu/ops_internal.h"
#include "cpu/x86/exact_block_x86.h"

/* 8 floats in both halves. */
WK_INLINE __m512 wk_both(__m256 v) { return _mm512_insertf32x8(_mm512_castps256_ps512(v), v, 1); }
/* Dword l (l = 0..7) of each 256-bit half of v, broadcast over that half; h[q] holds the
 * 128-bit lane q of each half in both of its lanes. */
WK_INLINE __m512i wk_dword_of_halves(const __m512i h[2], int l)
{
    switch (l & 3) {
    case 0: return _mm512_shuffle_epi32(h[l >> 2], _MM_PERM_AAAA);
    case 1: return _mm512_shuffle_epi32(h[l >> 2], _MM_PERM_BBBB);
    case 2: return _mm512_shuffle_epi32(h[l >> 2], _MM_PERM_CCCC);
    default: return _mm512_shuffle_epi32(h[l >> 2], _MM_PERM_DDDD);
    }
}
WK_INLINE float wk_act_half(const char *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return wk_half_to_float(h);
}

/* Rows xr[0], xr[1] (pairs = 1) or xr[0..3] (pairs = 2) against one group; a pointer may
 * repeat the last row (an odd count), and only the first nr rows of y are written. */
WK_INLINE void wk512_group_rows(wk_type t, int pairs, const wk_exact_geom *G, const uint8_t *wg,
                                const char *const *xr, int nr, float *y, size_t ldy)
{
    const bool has_min = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1, sgn = !has_min;
    const __m512i zero = _mm512_setzero_si512();
    __m512 acc[2][8], summs[2];
    for (int p = 0; p < pairs; p++) {
        summs[p] = _mm512_setzero_ps();
        for (int l = 0; l < 8; l++) acc[p][l] = _mm512_setzero_ps();
    }
    const size_t act_bytes = G->act_bytes;
    for (int64_t b = 0; b < G->nb; b++) {
        __m256i w[8], sg[8];
        const uint8_t *blk = wk_exact_block(t, wg, b, G->blk_bytes, w, sg);
        __m512i W[8];
        __mmask64 neg[8];
        for (int l = 0; l < 8; l++) {
            W[l] = _mm512_broadcast_i64x4(w[l]);
            /* sign_epi8(x, s): -x where s < 0 (and 0 where s = 0, whose weight |s| is 0
             * anyway, so the products are the same) */
            neg[l] = sgn ? _mm512_movepi8_mask(_mm512_broadcast_i64x4(sg[l])) : 0;
        }
        const __m512 wd = wk_both(wk_load_f16x8(blk));
        const __m512 wm = has_min ? wk_both(wk_load_f16x8(blk + 16)) : _mm512_setzero_ps();
        for (int p = 0; p < pairs; p++) {
            const char *xa = xr[2 * p] + (size_t)b * act_bytes, *xb = xr[2 * p + 1] + (size_t)b * act_bytes;
            /* the two rows' 32 codes, row a in the low half; lane l's 4 bytes are dword l */
            const __m512i X = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(xa + act_bytes - 32))),
                _mm256_loadu_si256((const __m256i *)(xb + act_bytes - 32)), 1);
            const __m512i h[2] = {_mm512_shuffle_i32x4(X, X, 0xa0), _mm512_shuffle_i32x4(X, X, 0xf5)};
            const __m512 dx = _mm512_mask_broadcastss_ps(_mm512_set1_ps(wk_act_half(xa)), 0xff00,
                                                         _mm_set_ss(wk_act_half(xb)));
            const __m512 dd = _mm512_mul_ps(wd, dx);
            for (int l = 0; l < 8; l++) {
                __m512i xv = wk_dword_of_halves(h, l);
                if (sgn) xv = _mm512_mask_sub_epi8(xv, neg[l], zero, xv);
                /* one VNNI step for maddubs + madd: the same integers, as no pair of
                 * products here reaches 16 bits' saturation (|w| <= 128, |x| <= 127) */
                const __m512i s = _mm512_dpbusd_epi32(zero, W[l], xv);
                acc[p][l] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(s), acc[p][l]);
            }
            if (has_min) {
                const __m512 sx = _mm512_mask_broadcastss_ps(_mm512_set1_ps(wk_act_half(xa + 2)), 0xff00,
                                                             _mm_set_ss(wk_act_half(xb + 2)));
                summs[p] = _mm512_add_ps(summs[p], _mm512_mul_ps(wm, sx));
            }
        }
    }
    for (int p = 0; p < pairs; p++) {
        __m512 *a = acc[p];
        __m512 v = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                                 _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
        if (has_min) v = _mm512_add_ps(v, summs[p]);
        if (2 * p < nr) _mm256_storeu_ps(y + (size_t)(2 * p) * ldy, _mm512_castps512_ps256(v));
        if (2 * p + 1 < nr) _mm256_storeu_ps(y + (size_t)(2 * p + 1) * ldy, _mm512_extractf32x8_ps(v, 1));
    }
}

/* Rows r0 .. r0 + nr - 1 (nr <= 4) of x against group wg, type t known at compile time. */
#define WK512_ROWS(T)                                                                                                \
    do {                                                                                                       \
        if (nr > 2) wk512_group_rows(T, 2, &G, wg, xr, (int)nr, yr, ldy);                 \
        else wk512_group_rows(T, 1, &G, wg, xr, (int)nr, yr, ldy);                        \
    } while (0)

void wk_avx512_exact_groups(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                            size_t x_stride, int64_t m, float *y, size_t ldy)
{
    const wk_exact_geom G = wk_exact_geom_of(t, k);
    for (int64_t g = g0; g < g1; g++) {
        const uint8_t *wg = (const uint8_t *)w + (size_t)g * G.group_bytes;
        for (int64_t r0 = 0; r0 < m; r0 += 4) { /* two pairs of rows a pass */
            int64_t nr = m - r0 < 4 ? m - r0 : 4;
            const char *xr[4];
            for (int i = 0; i < 4; i++) /* past the last row: the last row again, not stored */
                xr[i] = (const char *)x + (size_t)(r0 + (i < nr ? i : nr - 1)) * x_stride;
            float *yr = y + (size_t)r0 * ldy + 8 * g;
            switch (t) {
            case WK_TYPE_Q8_0: WK512_ROWS(WK_TYPE_Q8_0); break;
            case WK_TYPE_Q4_0: WK512_ROWS(WK_TYPE_Q4_0); break;
            case WK_TYPE_Q4_1: WK512_ROWS(WK_TYPE_Q4_1); break;
            case WK_TYPE_Q5_0: WK512_ROWS(WK_TYPE_Q5_0); break;
            default: WK512_ROWS(WK_TYPE_Q5_1); break;
            }
        }
    }
}
