/* Internal (AVX-512 VNNI): pieces shared by the 512-bit kernels that hold two adjacent
 * 8-column groups in one register (repack_avx512.c, ops_matmul_avx512.c,
 * ops_matmul_k_avx512.c).
 *
 * The dot-product steps take a 4-byte word from memory as the instruction's broadcast operand
 * ({1to16}). GCC loads such a word with vpbroadcastd into a register first, and on the Zen 5
 * development machine that load takes a vector pipe: with the broadcast in the instruction,
 * the llama-order Q8_0 kernel ran 150 -> 180 GMAC/s (one thread, 139 rows). */
#ifndef WICK_CPU_X86_VNNI_AVX512_H
#define WICK_CPU_X86_VNNI_AVX512_H

#include <immintrin.h>
#include <stdint.h>

/* acc + (unsigned bytes of w) . (the 4 signed bytes at p), in every 32-bit lane. */
static inline __attribute__((always_inline)) __m512i wk512_dpbusd_bcast(__m512i acc, __m512i w, const void *p)
{
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)p));
    return acc;
}

/* acc + (the two int16 of each lane of a) . (the two int16 at p), in every 32-bit lane. */
static inline __attribute__((always_inline)) __m512i wk512_dpwssd_bcast(__m512i acc, __m512i a, const void *p)
{
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(a), "m"(*(const int32_t *)p));
    return acc;
}

/* 32 bytes at a (low half) and 32 at b (high half): a block of two groups. */
static inline __attribute__((always_inline)) __m512i wk512_pair(const uint8_t *a, const uint8_t *b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

/* 8 halves at a and 8 at b as 16 floats: the two groups' scales. */
static inline __attribute__((always_inline)) __m512 wk512_halves(const uint8_t *a, const uint8_t *b)
{
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                                   _mm_loadu_si128((const __m128i *)b), 1));
}

#endif
