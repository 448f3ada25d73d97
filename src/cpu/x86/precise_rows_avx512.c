/* The precise form's 1 to 4 rows of Q4_0, Q4_1, Q2_K and Q4_K, and 1 to 2 rows of Q5_0 and
 * Q5_1, by table lookups (AVX-512 VL).
 *
 * A block's (or a group's) weight values, fma(code, d, m) exactly as the AVX2 decoders make
 * them, are put into registers once: 16 values in two 256-bit registers. Each 8 elements are
 * then one vpermt2ps of their codes, which reads the low 4 bits of each 32-bit lane and
 * ignores the bits above, so a code needs no mask: one zero-extension of 8 bytes, and a shift
 * for the high nibbles. The AVX2 path (kernels_avx2.c) widens bytes to 32 bits in several
 * shuffles, converts them and applies the scale with an FMA, for every element. 5-bit codes
 * take two tables and a blend by their fifth bits (a mask register).
 *
 * Both paths run the same loop (few_rows_x86.h) on the same values: the same bits. One
 * thread, [2048, 4096] in cache, m = 1, Zen 4: Q4_0 0.69 -> 0.46 ms, Q4_1 0.73 -> 0.51, Q4_K
 * 0.74 -> 0.58, Q2_K 0.74 -> 0.63, Q5_0 0.87 -> 0.81. Q3_K (a masked lookup for its sign bit)
 * and Q5_K (two lookups and a blend a group) were slower than their AVX2 decoding; Q6_K's and
 * the 8-bit formats' codes take too many values for a table. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/x86/few_rows_x86.h"
#include "cpu/x86/kprep_x86.h"
#include "quant/blocks.h"

/* ---- tables --------------------------------------------------------------------------- */
typedef struct {
    __m256 lo, hi; /* the values of codes 0-7 and 8-15 */
} wk_zt_tab;

/* codes c0 .. c0 + 7 as floats */
WK_INLINE __m256 wk_zt_codes(float c0) { return _mm256_add_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(c0)); }

/* fma(c, d, m) for the 16 codes from c0 (the 32-element formats' values) */
WK_INLINE wk_zt_tab wk_zt_fmadd16(float c0, __m256 d, __m256 m)
{
    return (wk_zt_tab){_mm256_fmadd_ps(wk_zt_codes(c0), d, m), _mm256_fmadd_ps(wk_zt_codes(c0 + 8), d, m)};
}
/* fmsub(c, d, m) for the 16 codes from c0 (the K formats' values) */
WK_INLINE wk_zt_tab wk_zt_fmsub16(float c0, __m256 d, __m256 m)
{
    return (wk_zt_tab){_mm256_fmsub_ps(wk_zt_codes(c0), d, m), _mm256_fmsub_ps(wk_zt_codes(c0 + 8), d, m)};
}

WK_INLINE __m256 wk_zt_get(wk_zt_tab t, __m256i idx) { return _mm256_permutex2var_ps(t.lo, idx, t.hi); }
/* 5-bit codes: the low 4 bits index lo16 or hi16, the fifth (bit l of hb for lane l) picks */
WK_INLINE __m256 wk_zt_get5(wk_zt_tab lo16, wk_zt_tab hi16, __m256i idx, uint32_t hb)
{
    return _mm256_mask_blend_ps((__mmask8)hb, wk_zt_get(lo16, idx), wk_zt_get(hi16, idx));
}
/* 8 bytes at p, one a 32-bit lane */
WK_INLINE __m256i wk_zt_bytes8(const uint8_t *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)); }

/* ---- the 32-element formats: a block's table, made once --------------------------------- */
typedef struct {
    wk_zt_tab t[2]; /* codes 0-15, and 16-31 for the 5-bit formats */
    uint32_t hb;    /* the 5-bit formats' fifth bits, bit e for element e */
} wk_zt_block;

WK_INLINE void wk_zt_prep_q4_0(const void *b, wk_zt_block *st)
{
    const wk_block_q4_0 *x = b;
    st->t[0] = wk_zt_fmadd16(-8, _mm256_set1_ps(wk_h2f(x->d)), _mm256_setzero_ps());
}
WK_INLINE void wk_zt_prep_q4_1(const void *b, wk_zt_block *st)
{
    const wk_block_q4_1 *x = b;
    st->t[0] = wk_zt_fmadd16(0, _mm256_set1_ps(wk_h2f(x->d)), _mm256_set1_ps(wk_h2f(x->m)));
}
WK_INLINE void wk_zt_prep_q5_0(const void *b, wk_zt_block *st)
{
    const wk_block_q5_0 *x = b;
    const __m256 d = _mm256_set1_ps(wk_h2f(x->d)), m = _mm256_setzero_ps();
    st->t[0] = wk_zt_fmadd16(-16, d, m);
    st->t[1] = wk_zt_fmadd16(0, d, m);
    memcpy(&st->hb, x->qh, 4);
}
WK_INLINE void wk_zt_prep_q5_1(const void *b, wk_zt_block *st)
{
    const wk_block_q5_1 *x = b;
    const __m256 d = _mm256_set1_ps(wk_h2f(x->d)), m = _mm256_set1_ps(wk_h2f(x->m));
    st->t[0] = wk_zt_fmadd16(0, d, m);
    st->t[1] = wk_zt_fmadd16(16, d, m);
    memcpy(&st->hb, x->qh, 4);
}

/* A 32-element block's 16 code bytes: elements 0-15 in the low nibbles, 16-31 in the high. */
WK_INLINE void wk_zt_nibble_codes(const uint8_t *qs, __m256i idx[4])
{
    idx[0] = wk_zt_bytes8(qs);
    idx[1] = wk_zt_bytes8(qs + 8);
    idx[2] = _mm256_srli_epi32(idx[0], 4);
    idx[3] = _mm256_srli_epi32(idx[1], 4);
}
/* GET: the 8 values of lane vector idx[i] (the 4-bit formats one table, the 5-bit ones two). */
#define WK_ZT_DEQ(T, GET)                                                                          \
    WK_INLINE void wk_zt_deq32_##T(const void *b, int j, wk_zt_block *st, __m256 f[4])             \
    {                                                                                              \
        (void)j;                                                                                   \
        __m256i idx[4];                                                                            \
        wk_zt_nibble_codes(((const wk_block_##T *)b)->qs, idx);                                    \
        for (int i = 0; i < 4; i++) f[i] = GET;                                                    \
    }
WK_ZT_DEQ(q4_0, wk_zt_get(st->t[0], idx[i]))
WK_ZT_DEQ(q4_1, wk_zt_get(st->t[0], idx[i]))
WK_ZT_DEQ(q5_0, wk_zt_get5(st->t[0], st->t[1], idx[i], st->hb >> (8 * i)))
WK_ZT_DEQ(q5_1, wk_zt_get5(st->t[0], st->t[1], idx[i], st->hb >> (8 * i)))

/* ---- the K formats: d x scale and dmin x min once a super-block, the tables per piece ---- */
typedef struct {
    float dl[16], ml[16]; /* d x scale, dmin x min: Q2_K one a 16-element group, Q4_K one a sub-block */
} wk_zt_super;

/* Q4_K: a scale and a min each 32 elements (stored for both of its 16-element groups) */
WK_INLINE void wk_zt_prep_q4_K(const void *b, wk_zt_super *st)
{
    const wk_block_q4_K *x = b;
    __m128i sc, mn;
    wk_k4_scale_bytes(x->scales, &sc, &mn);
    const __m256 d = _mm256_set1_ps(wk_h2f(x->d)), dmin = _mm256_set1_ps(wk_h2f(x->dmin));
    _mm256_storeu_ps(st->dl, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc))));
    _mm256_storeu_ps(st->ml, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn))));
}
/* Q2_K: a 4-bit scale (low nibble) and min (high nibble) each 16 elements */
WK_INLINE void wk_zt_prep_q2_K(const void *b, wk_zt_super *st)
{
    const wk_block_q2_K *x = b;
    const __m256 d = _mm256_set1_ps(wk_h2f(x->d)), dmin = _mm256_set1_ps(wk_h2f(x->dmin));
    for (int h = 0; h < 2; h++) {
        const __m256i v = wk_zt_bytes8(x->scales + 8 * h);
        const __m256i sc = _mm256_and_si256(v, _mm256_set1_epi32(15)), mn = _mm256_srli_epi32(v, 4);
        _mm256_storeu_ps(st->dl + 8 * h, _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
        _mm256_storeu_ps(st->ml + 8 * h, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(mn)));
    }
}

/* Q4_K: piece j is sub-block j (one scale), the nibbles of bytes 32 (j / 2) .. + 31, the high
 * ones for odd j. */
WK_INLINE void wk_zt_k4_codes(const uint8_t *qs, int j, __m256i idx[4])
{
    for (int i = 0; i < 4; i++) {
        idx[i] = wk_zt_bytes8(qs + 32 * (j / 2) + 8 * i);
        if (j & 1) idx[i] = _mm256_srli_epi32(idx[i], 4);
    }
}
WK_INLINE void wk_zt_deq32_q4_K(const void *b, int j, wk_zt_super *st, __m256 f[4])
{
    __m256i idx[4];
    wk_zt_k4_codes(((const wk_block_q4_K *)b)->qs, j, idx);
    const wk_zt_tab t = wk_zt_fmsub16(0, _mm256_set1_ps(st->dl[j]), _mm256_set1_ps(st->ml[j]));
    for (int i = 0; i < 4; i++) f[i] = wk_zt_get(t, idx[i]);
}

/* Q2_K: piece j's 2-bit codes are bits 2 (j % 4) of bytes 32 (j / 4) .. + 31, a scale and a
 * min each 16 elements. vpermps reads 3 bits of a lane, so a table of 4 values
 * holds them twice (the bit above the code is the next code's). */
WK_INLINE void wk_zt_k2_codes(const uint8_t *qs, int j, __m256i idx[4])
{
    for (int i = 0; i < 4; i++)
        idx[i] = _mm256_srli_epi32(wk_zt_bytes8(qs + 32 * (j / 4) + 8 * i), 2 * (j % 4));
}
WK_INLINE __m256 wk_zt_codes4(float c0) { return _mm256_add_ps(_mm256_setr_ps(0, 1, 2, 3, 0, 1, 2, 3), _mm256_set1_ps(c0)); }

WK_INLINE void wk_zt_deq32_q2_K(const void *b, int j, wk_zt_super *st, __m256 f[4])
{
    __m256i idx[4];
    wk_zt_k2_codes(((const wk_block_q2_K *)b)->qs, j, idx);
    for (int i = 0; i < 4; i++) {
        const int g = 2 * j + i / 2;
        const __m256 t = _mm256_fmsub_ps(wk_zt_codes4(0), _mm256_set1_ps(st->dl[g]), _mm256_set1_ps(st->ml[g]));
        f[i] = _mm256_permutexvar_ps(idx[i], t);
    }
}

/* ---- the rows: the AVX2 register path's loop (kernels_avx2.c) ------------------------------ */
/* One row takes C1 columns side by side: 8 (4, as the AVX2 path, read slower from memory in
 * the file's layout: Q4_0 [8192, 4096], 2 threads, Zen 4, 1.52-1.68 ms against 1.24-1.47), but
 * 4 for Q2_K, whose tables are made every 16 elements (in cache 0.63 ms against 0.69-0.74).
 * 2 rows take 4 columns, and 3-4 rows 4 as well (AVX-512's 32 registers hold the 16
 * accumulators; with 2, as the AVX2 path, Q4_K's octets took 2.5-2.6 ms at 4 rows from memory
 * against 2.2-2.5, and Q4_0 in cache 0.90 against 0.84-0.85). Q5_0 and Q5_1 (two lookups and a
 * blend each 8 elements) are taken at 1-2 rows only: faster than the AVX2 decoding there,
 * slower at 3-4 (wk_avx512_precise_rows). wk_zt_octets_T: the same on octets (octets.h). */
#define WK_ZT_GEMM(T, STATE, BS, C1)                                                               \
    WK_FEW_ROWS(wk_zt_rows_##T, STATE, wk_zt_prep_##T, wk_zt_deq32_##T, BS, sizeof(wk_block_##T),   \
                wk_elem_none, 1)                                                                   \
    WK_INLINE void wk_zt_##T(const bool OCT, int64_t k, int64_t nr, int64_t nc, const void *w,     \
                             size_t ws, const void *x, size_t xs, float *y, size_t ldy)            \
    {                                                                                              \
        WK_FEW_ROWS_RUN(wk_zt_rows_##T, C1, 4, OCT, nr, k, nc, w, ws, x, xs, y, ldy);              \
    }                                                                                              \
    WK_LAYOUT_GEMM(wk_zt_gemm_##T, wk_zt_##T, false)                                               \
    WK_LAYOUT_GEMM(wk_zt_octets_##T, wk_zt_##T, true)
WK_ZT_GEMM(q4_0, wk_zt_block, 32, 8)
WK_ZT_GEMM(q4_1, wk_zt_block, 32, 8)
WK_ZT_GEMM(q5_0, wk_zt_block, 32, 8)
WK_ZT_GEMM(q5_1, wk_zt_block, 32, 8)
WK_ZT_GEMM(q2_K, wk_zt_super, 256, 4)
WK_ZT_GEMM(q4_K, wk_zt_super, 256, 8)

#define WK_ZT_PICK(T, MAXROWS) return nr <= (MAXROWS) ? (octets ? wk_zt_octets_##T : wk_zt_gemm_##T) : NULL
wk_gemm_fn wk_avx512_precise_rows(wk_type t, int64_t nr, bool octets)
{
    switch (t) {
    case WK_TYPE_Q4_0: WK_ZT_PICK(q4_0, 4);
    case WK_TYPE_Q4_1: WK_ZT_PICK(q4_1, 4);
    case WK_TYPE_Q5_0: WK_ZT_PICK(q5_0, 2);
    case WK_TYPE_Q5_1: WK_ZT_PICK(q5_1, 2);
    case WK_TYPE_Q2_K: WK_ZT_PICK(q2_K, 4);
    case WK_TYPE_Q4_K: WK_ZT_PICK(q4_K, 4);
    default: return NULL;
    }
}
