/* Internal (AVX2): decoding a 16-element group of a repacked Q2_Kx8 super-block
 * (cpu/repack.h), shared by the few-row and many-row kernels. */
#ifndef WICK_CPU_X86_Q2X8_AVX2_H
#define WICK_CPU_X86_Q2X8_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* The codes (0..3) of the 4 steps of group g of the super-block at sb: step t, byte 4c + i =
 * code of element 16g + 4t + i of column c. The group's 32-byte parts of steps 0, 2 and
 * 1, 3 lie 64 bytes apart, its codes at bits 0-1 and 4-5 (g % 4 < 2) or 2-3 and 6-7. */
static inline __attribute__((always_inline)) void wk_q2x8_group(const uint8_t *sb, int g, __m256i q[4])
{
    const __m256i m3 = _mm256_set1_epi8(3);
    const uint8_t *p = sb + 160 + 128 * (g / 4) + 32 * (g % 2);
    const int lo = 2 * ((g / 2) % 2);
    const __m256i a = _mm256_loadu_si256((const __m256i *)p), b = _mm256_loadu_si256((const __m256i *)(p + 64));
    q[0] = _mm256_and_si256(lo ? _mm256_srli_epi16(a, lo) : a, m3);
    q[1] = _mm256_and_si256(lo ? _mm256_srli_epi16(b, lo) : b, m3);
    q[2] = _mm256_and_si256(_mm256_srli_epi16(a, lo + 4), m3);
    q[3] = _mm256_and_si256(_mm256_srli_epi16(b, lo + 4), m3);
}

#endif
