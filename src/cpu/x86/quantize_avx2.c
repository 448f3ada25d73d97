/* AVX2 activation quantizers of the quantized form: f32 rows into Q8_0 and Q8_1 blocks,
 * byte for byte what the reference quantizers (src/quant/legacy.c) write, for every
 * input (ties, zeros, NaN, infinities). At m = 256 the scalar ones took about 4% of a
 * 4-bit matmul.
 *
 * Per block: amax ignoring NaN (as the reference's "a > amax" does), d = amax / 127 and
 * id = 1 / d in scalar (the same IEEE operations), codes = round half away from zero of
 * x * id computed exactly as floor(|v|) + (|v| - floor(|v|) >= 0.5), NaN -> 0, clamped to
 * +-127. */
#include <immintrin.h>
#include <stdbool.h>

#include "core/half.h"
#include "cpu/kernels.h"
#include "quant/blocks.h"

#define WK_INLINE static inline __attribute__((always_inline))

/* The 32 codes of a block into qs; returns their sum. */
WK_INLINE int wk_q8_block(const float *x, int8_t *qs, uint16_t *d_half, float *d_out)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4], amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        /* max_ps(a, b) is b when a is NaN: NaN inputs never raise amax */
        amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), amax);
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    float d = _mm_cvtss_f32(m) / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    *d_half = wk_float_to_half(d);
    *d_out = d;
    const __m256 vid = _mm256_set1_ps(id), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
    const __m256 lim = _mm256_set1_ps(127.0f), nlim = _mm256_set1_ps(-127.0f);
    __m256i q[4];
    for (int i = 0; i < 4; i++) {
        __m256 s = _mm256_mul_ps(v[i], vid);
        __m256 a = _mm256_andnot_ps(sign, s);
        __m256 f = _mm256_floor_ps(a);
        __m256 r = _mm256_add_ps(f, _mm256_and_ps(_mm256_cmp_ps(_mm256_sub_ps(a, f), half, _CMP_GE_OQ), one));
        r = _mm256_or_ps(r, _mm256_and_ps(sign, s));                /* the sign back */
        r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));       /* NaN -> 0 */
        r = _mm256_min_ps(_mm256_max_ps(r, nlim), lim);
        q[i] = _mm256_cvtps_epi32(r);
    }
    /* 4 x 8 int32 -> 32 int8 in order (the packs work per 128-bit lane) */
    __m256i w16a = _mm256_packs_epi32(q[0], q[1]), w16b = _mm256_packs_epi32(q[2], q[3]);
    __m256i w8 = _mm256_packs_epi16(w16a, w16b);
    w8 = _mm256_permutevar8x32_epi32(w8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)qs, w8);
    __m256i s16 = _mm256_madd_epi16(_mm256_add_epi16(w16a, w16b), _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s16), _mm256_extracti128_si256(s16, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

void wk_avx2_quantize_q8_0(const float *x, void *y, int64_t k)
{
    wk_block_q8_0 *b = y;
    for (int64_t i = 0; i < k / 32; i++, x += 32) {
        float d;
        (void)wk_q8_block(x, b[i].qs, &b[i].d, &d);
    }
}

void wk_avx2_quantize_q8_1(const float *x, void *y, int64_t k)
{
    wk_block_q8_1 *b = y;
    for (int64_t i = 0; i < k / 32; i++, x += 32) {
        float d;
        int sum = wk_q8_block(x, b[i].qs, &b[i].d, &d);
        b[i].s = wk_float_to_half((float)sum * d);
    }
}
