/* Internal (AVX2): decoding a repacked Q6_Kx8 super-block (cpu/repack.h), shared by the
 * few-row, many-row and llama.cpp-order kernels. */
#ifndef WICK_CPU_X86_Q6X8_AVX2_H
#define WICK_CPU_X86_Q6X8_AVX2_H

#include <immintrin.h>
#include <stdint.h>

/* The codes (0..63) of the 4 steps of 16-element group g: grp = super-block + 144 + 96 g.
 * Step t: byte 4c + i = code of element 16g + 4t + i of column c. Three loads and 11
 * operations for 4 steps (the planes carry step 3's bits in their top two bits). */
static inline __attribute__((always_inline)) void wk_q6x8_group(const uint8_t *grp, __m256i q[4])
{
    const __m256i m3f = _mm256_set1_epi8(0x3f);
    __m256i p0 = _mm256_loadu_si256((const __m256i *)grp);
    __m256i p1 = _mm256_loadu_si256((const __m256i *)(grp + 32));
    __m256i p2 = _mm256_loadu_si256((const __m256i *)(grp + 64));
    q[0] = _mm256_and_si256(p0, m3f);
    q[1] = _mm256_and_si256(p1, m3f);
    q[2] = _mm256_and_si256(p2, m3f);
    /* bits 6-7 of the planes to bits 6-7, 4-5, 2-3: byte-local after the masks, so one
     * 16-bit shift by 2 brings nothing across bytes */
    __m256i t = _mm256_or_si256(_mm256_and_si256(p0, _mm256_set1_epi8((char)0xc0)),
                                _mm256_and_si256(_mm256_srli_epi16(p1, 2), _mm256_set1_epi8(0x30)));
    t = _mm256_or_si256(t, _mm256_and_si256(_mm256_srli_epi16(p2, 4), _mm256_set1_epi8(0x0c)));
    q[3] = _mm256_srli_epi16(t, 2);
}

/* The int8 scales of group g of the 8 columns (sc8 = super-block + 16 + 8 g) as 16 x int16,
 * each twice (the two pair lanes of a column, for _mm256_madd_epi16): one broadcast, one
 * shuffle into the high bytes, one arithmetic shift. */
static inline __attribute__((always_inline)) __m256i wk_q6x8_scales(const uint8_t *sc8)
{
    const __m256i hi = _mm256_setr_epi8(-1, 0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3,
                                        -1, 4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7);
    int64_t v;
    __builtin_memcpy(&v, sc8, 8);
    return _mm256_srai_epi16(_mm256_shuffle_epi8(_mm256_set1_epi64x(v), hi), 8);
}

/* The lane offsets of a row's Q8_K super-block (qs: its 256 quants) for the codes' +32:
 * out[g] holds, as two int16, -32 times the sum of the 8 activations that each pair lane
 * of group g meets (elements 4t, 4t + 1 and 4t + 2, 4t + 3 of its steps t). The sums of
 * (code - 32) * x over a group fit 16-bit lanes (8 products of at most 32 * 127), so a lane
 * that starts there and adds the unsigned code products in wrapping 16-bit arithmetic
 * ends exactly at that sum. */
static inline __attribute__((always_inline)) void wk_q6x8_lane_offs(const int8_t *qs, int32_t out[16])
{
    for (int q = 0; q < 8; q++) { /* groups 2q (low half) and 2q + 1 (high half) */
        __m256i v = _mm256_maddubs_epi16(_mm256_set1_epi8(32), _mm256_loadu_si256((const __m256i *)(qs + 32 * q)));
        v = _mm256_add_epi16(v, _mm256_shuffle_epi32(v, 0x4e));
        v = _mm256_add_epi16(v, _mm256_shuffle_epi32(v, 0xb1));
        v = _mm256_sub_epi16(_mm256_setzero_si256(), v);
        out[2 * q] = _mm256_extract_epi32(v, 0);
        out[2 * q + 1] = _mm256_extract_epi32(v, 4);
    }
}

#endif
