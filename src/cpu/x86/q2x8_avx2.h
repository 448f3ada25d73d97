/* Internal (AVX2): decoding a 16-element group of a repacked Q2_Kx8 super-block
 * (cpu/repack.h), shared by the few-row and many-row kernels. */
#ifndef WICK_CPU_X86_Q2X8_AVX2_H
#define WICK_CPU_X86_Q2X8_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* The codes (0..3) of the 4 steps of group g: grp = super-block + 160 + 32 g. Step t:
 * byte 4c + i = code of element 16g + 4t + i of column c (bits 2t of the group's bytes). */
static inline __attribute__((always_inline)) void wk_q2x8_group(const uint8_t *grp, __m256i q[4])
{
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256i v = _mm256_loadu_si256((const __m256i *)grp);
    for (int t = 0; t < 4; t++) q[t] = _mm256_and_si256(t ? _mm256_srli_epi16(v, 2 * t) : v, m3);
}

#endif
