/* F16C row conversions between half and single precision. */
#include <immintrin.h>
#include <stdint.h>

#include "core/half.h"

void wk_avx2_f16_to_f32(const uint16_t *x, float *y, int64_t n);
void wk_avx2_f32_to_f16(const float *x, uint16_t *y, int64_t n);

void wk_avx2_f16_to_f32(const uint16_t *x, float *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; i++) y[i] = wk_half_to_float(x[i]);
}

void wk_avx2_f32_to_f16(const float *x, uint16_t *y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) y[i] = wk_float_to_half(x[i]);
}
