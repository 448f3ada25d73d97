/* Internal (AVX2): the Q4_K scales and mins of a repacked 8-column group, decoded for the
 * one-row and many-row kernels alike. */
#ifndef WICK_CPU_X86_K4X8_AVX2_H
#define WICK_CPU_X86_K4X8_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* 64 six-bit values (index j*8 + c) from their 48-byte encoding (repack.c). */
static inline __attribute__((always_inline)) void wk_k4x8_decode(const uint8_t *enc, uint8_t out[64])
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

#endif
