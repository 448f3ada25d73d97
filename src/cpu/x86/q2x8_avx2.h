/* Internal (AVX2): decoding the 16-element groups of a repacked Q2_Kx8 super-block
 * (cpu/repack.h), shared by the few-row and many-row kernels. */
#ifndef WICK_CPU_X86_Q2X8_AVX2_H
#define WICK_CPU_X86_Q2X8_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* The codes (0..3) of the 4 steps of groups 4j + h (qa) and 4j + 2 + h (qb) of the super-block
 * at sb, which share their two 32-byte parts (steps 0, 2 and 1, 3, 64 bytes apart): step t,
 * byte 4c + i = code of element 16g + 4t + i of column c. */
static inline __attribute__((always_inline)) void wk_q2x8_groups(const uint8_t *sb, int j, int h, __m256i qa[4],
                                                                __m256i qb[4])
{
    const __m256i m3 = _mm256_set1_epi8(3);
    const uint8_t *p = sb + 160 + 128 * j + 32 * h;
    const __m256i a = _mm256_loadu_si256((const __m256i *)p), b = _mm256_loadu_si256((const __m256i *)(p + 64));
    qa[0] = _mm256_and_si256(a, m3);
    qa[1] = _mm256_and_si256(b, m3);
    qa[2] = _mm256_and_si256(_mm256_srli_epi16(a, 4), m3);
    qa[3] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m3);
    qb[0] = _mm256_and_si256(_mm256_srli_epi16(a, 2), m3);
    qb[1] = _mm256_and_si256(_mm256_srli_epi16(b, 2), m3);
    qb[2] = _mm256_and_si256(_mm256_srli_epi16(a, 6), m3);
    qb[3] = _mm256_and_si256(_mm256_srli_epi16(b, 6), m3);
}

#endif
