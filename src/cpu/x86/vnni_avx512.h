/* Internal (AVX-512 VNNI): pieces shared by the 512-bit kernels that hold two adjacent
 * 8-column groups in one register (repack_avx512.c, repack_rows_avx512.c,
 * ops_matmul_avx512.c, ops_matmul_k_avx512.c).
 *
 * The dot-product steps take a 4-byte word from memory as the instruction's broadcast operand
 * ({1to16}). GCC loads such a word with vpbroadcastd into a register first, and on the Zen 5
 * development machine that load takes a vector pipe: with the broadcast in the instruction,
 * the llama-order Q8_0 kernel ran 150 -> 180 GMAC/s (one thread, 139 rows). */
#ifndef WICK_CPU_X86_VNNI_AVX512_H
#define WICK_CPU_X86_VNNI_AVX512_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpu/x86/tiles_x86.h" /* wk_prefetch_block */
#include "wick/common.h"

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

/* One block of a pair of groups, decoded: the unsigned weights of each lane (16 columns),
 * the columns' scales and (Q4_1, Q5_1) mins as floats. */
typedef struct {
    __m512i w[8];
    __m512 d, m;
} wk512_block;

/* Bit `bit` of each byte of plane at bit 4 (the fifth bit of a code). */
static inline __attribute__((always_inline)) __m512i wk512_plane_bit4(__m512i plane, int bit)
{
    __m512i v = bit <= 4 ? _mm512_slli_epi16(plane, 4 - bit) : _mm512_srli_epi16(plane, bit - 4);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x10));
}

/* Block at a (first group) and b (second group) decoded into o. */
static inline __attribute__((always_inline)) void wk512_decode(wk_type t, const uint8_t *a, const uint8_t *b, wk512_block *o)
{
    const bool has_min = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1;
    o->d = wk512_halves(a, b);
    o->m = has_min ? wk512_halves(a + 16, b + 16) : _mm512_setzero_ps();
    if (t == WK_TYPE_Q8_0) {
        for (int s = 0; s < 8; s++)
            o->w[s] = _mm512_xor_si512(wk512_pair(a + 16 + 32 * s, b + 16 + 32 * s), _mm512_set1_epi8((char)0x80));
        return;
    }
    const int qoff = t == WK_TYPE_Q4_0 ? 16 : t == WK_TYPE_Q4_1 ? 32 : t == WK_TYPE_Q5_0 ? 48 : 64;
    const int poff = t == WK_TYPE_Q5_0 ? 16 : 32;
    const bool q5 = t == WK_TYPE_Q5_0 || t == WK_TYPE_Q5_1;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    /* codes are w + 8 (Q4_0) or w + 16 (Q5_0): w + 128 is code + 120 or code + 112 */
    const __m512i bias = _mm512_set1_epi8(t == WK_TYPE_Q4_0 ? 120 : 112);
    const __m512i plane = q5 ? wk512_pair(a + poff, b + poff) : _mm512_setzero_si512();
    for (int s = 0; s < 4; s++) {
        __m512i v = wk512_pair(a + qoff + 32 * s, b + qoff + 32 * s);
        __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if (q5) {
            lo = _mm512_or_si512(lo, wk512_plane_bit4(plane, 2 * s));
            hi = _mm512_or_si512(hi, wk512_plane_bit4(plane, 2 * s + 1));
        }
        if (!has_min) {
            lo = _mm512_add_epi8(lo, bias);
            hi = _mm512_add_epi8(hi, bias);
        }
        o->w[s] = lo;
        o->w[4 + s] = hi;
    }
}

/* nbc blocks of the groups from wa and wb (gb bytes a block of one group, the next
 * wk_repacked_step(gb) on), each prefetched WK_PF_AHEAD ahead and decoded into dec: the
 * chunk that the many-row kernels reuse. */
static inline __attribute__((always_inline)) void wk512_decode_chunk(wk_type t, const uint8_t *wa, const uint8_t *wb,
                                                                     size_t gb, int64_t nbc, wk512_block *dec)
{
    const size_t step = wk_repacked_step(gb);
    for (int64_t b = 0; b < nbc; b++) {
        wk_prefetch_block(wa + (size_t)b * step, gb);
        wk_prefetch_block(wb + (size_t)b * step, gb);
        wk512_decode(t, wa + (size_t)b * step, wb + (size_t)b * step, dec + b);
    }
}

#endif
