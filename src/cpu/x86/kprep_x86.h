/* Internal (AVX2 and AVX-512 builds): a K-format super-block's scales as integers, one a
 * 16-element group, with d and dmin as floats (wk_kprep). The AVX2 quantized K tiles multiply
 * the integer sums by them and the AVX2 precise form turns them into d x scale and dmin x min;
 * the AVX-512 precise rows (precise_rows_avx512.c) read Q4_K's through wk_k4_scale_bytes, so
 * that both take the same integers apart the same way. */
#ifndef WICK_CPU_X86_KPREP_X86_H
#define WICK_CPU_X86_KPREP_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"

#ifndef WK_INLINE
#define WK_INLINE static inline __attribute__((always_inline))
#endif

WK_INLINE float wk_h2f(uint16_t h) { return _cvtsh_ss(h); }

typedef struct {
    float d, dmin;
    int16_t sc[16]; /* scale of each 16 elements */
    int16_t mn[16]; /* min of each 16 elements (0 if none) */
} wk_kprep;

/* Q4_K's and Q5_K's 8 scales and mins (6 bits, packed in 12 bytes; wk_k4_scale_min), each for
 * two 16-element groups, taken apart as three words and stored as vectors: built byte by byte
 * and read back as vectors, this was as slow as the rest of a block's dequantization (AVX2
 * precise form, Zen 4, Q4_K 0.136 -> 0.076 ns an element). wk_k4_scale_bytes gives the 8
 * scales (sc) and the 8 mins (mn) as bytes 0-7; the AVX-512 table path reads them from it. */
WK_INLINE void wk_k4_scale_bytes(const uint8_t *scales, __m128i *sc, __m128i *mn)
{
    uint32_t a, b, c;
    memcpy(&a, scales, 4), memcpy(&b, scales + 4, 4), memcpy(&c, scales + 8, 4);
    const uint32_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
    const uint32_t mn_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
    *sc = _mm_set_epi32(0, 0, (int)sc_hi, (int)(a & 0x3f3f3f3fu));
    *mn = _mm_set_epi32(0, 0, (int)mn_hi, (int)(b & 0x3f3f3f3fu));
}

WK_INLINE void wk_prep_k4(const uint8_t *scales, uint16_t d, uint16_t dmin, wk_kprep *p)
{
    __m128i sc, mn;
    wk_k4_scale_bytes(scales, &sc, &mn);
    _mm256_storeu_si256((__m256i *)p->sc, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sc, sc)));
    _mm256_storeu_si256((__m256i *)p->mn, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn, mn)));
    p->d = wk_h2f(d);
    p->dmin = wk_h2f(dmin);
}

WK_INLINE void wk_prep_q4_K(const void *b, wk_kprep *p)
{
    const wk_block_q4_K *x = b;
    wk_prep_k4(x->scales, x->d, x->dmin, p);
}

WK_INLINE void wk_prep_q5_K(const void *b, wk_kprep *p)
{
    const wk_block_q5_K *x = b;
    wk_prep_k4(x->scales, x->d, x->dmin, p);
}

WK_INLINE void wk_prep_q6_K(const void *b, wk_kprep *p)
{
    const wk_block_q6_K *x = b;
    p->d = wk_h2f(x->d);
    p->dmin = 0.0f;
    __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    _mm256_storeu_si256((__m256i *)p->sc, sc);
    _mm256_storeu_si256((__m256i *)p->mn, _mm256_setzero_si256());
}

WK_INLINE void wk_prep_q2_K(const void *b, wk_kprep *p)
{
    const wk_block_q2_K *x = b;
    p->d = wk_h2f(x->d);
    p->dmin = wk_h2f(x->dmin);
    for (int g = 0; g < 16; g++) {
        p->sc[g] = x->scales[g] & 0x0f;
        p->mn[g] = x->scales[g] >> 4;
    }
}

/* Q3_K's 16 scales (wk_q3_scale: 4 low bits in nibbles, 2 high bits in bytes 8-11) minus 32,
 * taken apart as words as Q4_K's (precise form 0.134 -> 0.099 ns an element). */
WK_INLINE void wk_prep_q3_K(const void *b, wk_kprep *p)
{
    const wk_block_q3_K *x = b;
    uint32_t lo, hi, top;
    memcpy(&lo, x->scales, 4), memcpy(&hi, x->scales + 4, 4), memcpy(&top, x->scales + 8, 4);
    const uint32_t m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    const __m128i sc = _mm_sub_epi8(_mm_set_epi32((int)(((hi >> 4) & m4) | (((top >> 6) & m2) << 4)),
                                                  (int)(((lo >> 4) & m4) | (((top >> 4) & m2) << 4)),
                                                  (int)((hi & m4) | (((top >> 2) & m2) << 4)),
                                                  (int)((lo & m4) | ((top & m2) << 4))),
                                    _mm_set1_epi8(32));
    _mm256_storeu_si256((__m256i *)p->sc, _mm256_cvtepi8_epi16(sc));
    _mm256_storeu_si256((__m256i *)p->mn, _mm256_setzero_si256());
    p->d = wk_h2f(x->d);
    p->dmin = 0.0f;
}

WK_INLINE void wk_prep_q8_K(const void *b, wk_kprep *p)
{
    const wk_block_q8_K *x = b;
    p->d = x->d;
    p->dmin = 0.0f;
    for (int g = 0; g < 16; g++) {
        p->sc[g] = 1;
        p->mn[g] = 0;
    }
}

#endif
