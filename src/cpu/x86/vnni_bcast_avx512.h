/* Internal (AVX-512 VNNI): the dot-product steps with a 4-byte word from memory as the
 * instruction's broadcast operand ({1to16}). GCC loads such a word with vpbroadcastd into a
 * register first, and on the Zen 5 development machine that load takes a vector pipe: with
 * the broadcast in the instruction, the 32-element llama-order kernel ran 150 -> 180 GMAC/s
 * (Q8_0, one thread, 139 rows). */
#ifndef WICK_CPU_X86_VNNI_BCAST_AVX512_H
#define WICK_CPU_X86_VNNI_BCAST_AVX512_H

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

#endif
