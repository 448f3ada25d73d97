/* AVX2 kernels of the repacked layouts (see cpu/repack.h) for few activation rows (more
 * rows: repack_rows_avx2.c): 8 output columns per register, activation bytes broadcast four
 * at a time, each loaded weight block used for the tile's rows; one row reads 8 groups side
 * by side (tiles_x86.h). For 4-bit weights the 16-bit pair sums of up to 16 products are
 * added before widening (at most 16 * 15 * 127 = 30480: no overflow). */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "cpu/x86/k4x8_avx2.h"
#include "cpu/x86/q2x8_avx2.h"
#include "cpu/x86/q6x8_avx2.h"
#include "cpu/x86/tiles_x86.h"
#include "quant/blocks.h"

/* Keeps an accumulator in a register at this point: without it GCC turns the unrolled
 * chains of 16-bit sums into trees that need more registers than AVX2 has (measured:
 * the Q5 tiles gain, the others do not change). */
#define WK_KEEP(v) __asm__("" : "+x"(v))

/* Sum of the 32 activation quants of a block. */
WK_INLINE int16_t wk_q8_block_sum(const int8_t *qs)
{
    __m256i v = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1),
                                                       _mm256_loadu_si256((const __m256i *)qs)),
                                  _mm256_set1_epi16(1));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return (int16_t)_mm_cvtsi128_si32(s);
}
static int16_t wk_q8_block_sum_fn(const int8_t *qs) { return wk_q8_block_sum(qs); }

/* The block functions below do one block of one group for R rows (R <= 4): blk is the
 * block, b its index (x: the tile's first row), acc the group's R accumulators. */

/* ---- Q8_0x8, Q8_1x8 (XB: the activation block; qs at QOFF) ---------------------------- */
#define WK_Q8X8_TILES(NAME, BB, XB, QOFF)                                                          \
    WK_INLINE void NAME##_block(const int R, const uint8_t *blk, const char *x, size_t xs,         \
                                int64_t b, int64_t nb, const void *aux, __m256 *acc)               \
    {                                                                                              \
        (void)nb, (void)aux;                                                                       \
        const __m256i ones = _mm256_set1_epi16(1);                                                 \
        __m256i isum[4];                                                                           \
        for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();                              \
        for (int s = 0; s < 8; s++) {                                                              \
            __m256i wq = _mm256_loadu_si256((const __m256i *)(blk + (QOFF) + 32 * s));             \
            __m256i wa = _mm256_sign_epi8(wq, wq);                                                 \
            for (int r = 0; r < R; r++) {                                                          \
                const XB *xb = (const XB *)(x + r * xs) + b;                                       \
                __m256i xv = _mm256_sign_epi8(wk_bcast4(xb->qs + 4 * s), wq);                      \
                isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xv), ones)); \
            }                                                                                      \
        }                                                                                          \
        WK_ACC_LEG(R, XB, false, blk, x, xs, b, isum, acc);                                        \
    }                                                                                              \
    WK_TILES_R2(NAME, BB)

/* Q8_0 and Q8_1 activations lie in [-127, 127] (their quantizer rounds x / (max / 127)), so
 * the sign trick is exact whatever the codes. */
WK_Q8X8_TILES(wk_q8_0x8, sizeof(wk_block_q8_0), wk_block_q8_0, 16)
WK_Q8X8_TILES(wk_q8_1x8, sizeof(wk_block_q8_1), wk_block_q8_1, 32)

WK_TILES_FN(wk_tiles_q8_1, wk_q8_1x8_tiles, 2, 32, false, NULL)

/* ---- Q8_Kx8: Q8_0's sign trick over a super-block of 64 steps (exact: the activations lie in
 * [-127, 127]), the float step d (f32) x the row's d. */
WK_INLINE void wk_q8_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                               int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    const __m256i ones = _mm256_set1_epi16(1);
    const wk_block_q8_K *xb[4];
    __m256i isum[4];
    wk_q8_K_rows(R, x, xs, b, xb, isum);
    for (int s = 0; s < 64; s++) {
        const __m256i wq = _mm256_loadu_si256((const __m256i *)(blk + 32 + 32 * s));
        const __m256i wa = _mm256_sign_epi8(wq, wq);
        for (int r = 0; r < R; r++) {
            const __m256i xv = _mm256_sign_epi8(wk_bcast4(xb[r]->qs + 4 * s), wq);
            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xv), ones));
        }
    }
    const __m256 wd = _mm256_loadu_ps((const float *)blk);
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(wd, _mm256_set1_ps(xb[r]->d)), acc[r]);
}
WK_TILES_R2(wk_q8_Kx8, sizeof(wk_block_q8_K))

WK_TILES_FN(wk_tiles_q8_K, wk_q8_Kx8_tiles, 2, 256, false, NULL)

WK_TILES_FN(wk_tiles_q8_0, wk_q8_0x8_tiles, 2, 32, false, NULL)

/* ---- Q4_0x8: unsigned nibbles q; sum((q - 8) * x) = sum(q * x) - 8 * sum(x) ------------
 * aux: the rows' block sums. */
WK_INLINE void wk_q4_0x8_block(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                               int64_t nb, const void *aux, __m256 *acc)
{
    const int16_t *sx = aux;
    const __m256i ones = _mm256_set1_epi16(1), m4 = _mm256_set1_epi8(0x0f);
    __m256i p16[4];
    for (int r = 0; r < R; r++) p16[r] = _mm256_setzero_si256();
    for (int s = 0; s < 4; s++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));
        __m256i lo = _mm256_and_si256(v, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        for (int r = 0; r < R; r++) {
            const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;
            __m256i a = _mm256_maddubs_epi16(lo, wk_bcast4(xb->qs + 4 * s));
            __m256i c = _mm256_maddubs_epi16(hi, wk_bcast4(xb->qs + 16 + 4 * s));
            p16[r] = _mm256_add_epi16(p16[r], _mm256_add_epi16(a, c));
        }
    }
    for (int r = 0; r < R; r++)
        p16[r] = _mm256_sub_epi32(_mm256_madd_epi16(p16[r], ones), _mm256_set1_epi32(8 * sx[r * nb + b]));
    wk_acc_q8_0(R, blk, x, xs, b, p16, acc);
}
WK_TILES_R2(wk_q4_0x8, sizeof(wk_block_q4_0))

WK_TILES_FN(wk_tiles_q4_0, wk_q4_0x8_tiles, 2, 32, true, wk_q8_block_sum_fn)

/* ---- Q4_Kx8 ----------------------------------------------------------------------- */

/* 8 bytes (one per column) -> 16 x i16 with each value twice (the pair lanes of a column). */
WK_INLINE __m256i wk_dup_cols(const uint8_t *v)
{
    __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)v));
    return _mm256_set_m128i(_mm_unpackhi_epi16(w, w), _mm_unpacklo_epi16(w, w));
}

/* Q4_Kx8 and, with Q5, Q5_Kx8 (the fifth bits of the planes at 1152 ORed into the nibbles:
 * codes up to 31, so the 16-bit sums are widened every 4 steps, 8 products a lane). */
WK_INLINE void wk_k4x8_block(const int R, const bool Q5, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                             __m256 *acc)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    uint8_t sc[64], mn[64];
    wk_k4x8_decode(blk + 32, sc);
    wk_k4x8_decode(blk + 80, mn);
    __m256i isum[4];
    for (int r = 0; r < R; r++) isum[r] = _mm256_setzero_si256();
    for (int p = 0; p < 4; p++) {
        __m256i plo[4], phi[4];
        for (int r = 0; r < R; r++) plo[r] = phi[r] = _mm256_setzero_si256();
        const __m256i slo = wk_dup_cols(sc + 8 * (2 * p)), shi = wk_dup_cols(sc + 8 * (2 * p + 1));
        __m256i pl = _mm256_setzero_si256();
        for (int s = 0; s < 8; s++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 128 + 256 * p + 32 * s));
            __m256i lo = _mm256_and_si256(v, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (Q5) {
                if (s % 4 == 0) pl = _mm256_loadu_si256((const __m256i *)(blk + 1152 + 64 * p + 32 * (s / 4)));
                lo = _mm256_or_si256(lo, wk_plane_bit4(pl, 2 * (s % 4)));
                hi = _mm256_or_si256(hi, wk_plane_bit4(pl, 2 * (s % 4) + 1));
            }
            for (int r = 0; r < R; r++) {
                const int8_t *xq = ((const wk_block_q8_K *)(x + r * xs) + b)->qs + 64 * p;
                plo[r] = _mm256_add_epi16(plo[r], _mm256_maddubs_epi16(lo, wk_bcast4(xq + 4 * s)));
                phi[r] = _mm256_add_epi16(phi[r], _mm256_maddubs_epi16(hi, wk_bcast4(xq + 32 + 4 * s)));
                if (Q5 ? s % 4 == 3 : s == 7) {
                    isum[r] = _mm256_add_epi32(isum[r], _mm256_add_epi32(_mm256_madd_epi16(plo[r], slo),
                                                                         _mm256_madd_epi16(phi[r], shi)));
                    plo[r] = phi[r] = _mm256_setzero_si256();
                }
            }
        }
    }
    __m256i mnp[4];
    for (int q = 0; q < 4; q++)
        mnp[q] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(mn + 16 * q)),
                                                        _mm_loadl_epi64((const __m128i *)(mn + 16 * q + 8))));
    const wk_block_q8_K *xb[4];
    __m256i msum[4];
    for (int r = 0; r < R; r++) {
        xb[r] = (const wk_block_q8_K *)(x + r * xs) + b;
        msum[r] = _mm256_setzero_si256();
        for (int q = 0; q < 4; q++) {
            int bs0 = xb[r]->bsums[4 * q] + xb[r]->bsums[4 * q + 1];
            int bs1 = xb[r]->bsums[4 * q + 2] + xb[r]->bsums[4 * q + 3];
            __m256i bp = _mm256_set1_epi32((int)(((uint32_t)bs0 & 0xffffu) | ((uint32_t)bs1 << 16)));
            msum[r] = _mm256_add_epi32(msum[r], _mm256_madd_epi16(mnp[q], bp));
        }
    }
    wk_acc_q8_K_min(R, blk, xb, isum, msum, acc);
}
WK_INLINE void wk_q4_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                               int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    wk_k4x8_block(R, false, blk, x, xs, b, acc);
}
WK_INLINE void wk_q5_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                               int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    wk_k4x8_block(R, true, blk, x, xs, b, acc);
}
WK_TILES_R2(wk_q5_Kx8, sizeof(wk_block_q5_K))
WK_TILES_R2(wk_q4_Kx8, sizeof(wk_block_q4_K))

/* Two rows share each super-block read (a row at a time read the weights twice: m = 2
 * took 1.5x the time of m = 1). */
WK_TILES_FN(wk_tiles_q4_K, wk_q4_Kx8_tiles, 2, 256, false, NULL)
/* Q5_K: the tiles at every row count (it has no many-row kernel). */
WK_TILES_FN(wk_tiles_q5_K, wk_q5_Kx8_tiles, 2, 256, false, NULL)

/* ---- Q4_1x8, Q5_0x8, Q5_1x8: 4 or 5-bit unsigned codes, with a min or an offset ----------
 * Q5 codes (up to 31) are widened every two loads (8 products per 16-bit lane). */

/* aux: the rows' block sums, for an OFFSET. */
#define WK_LEG_TILES(NAME, BB, XB, QOFF, MOFF, HAS_MIN, Q5, OFFSET)                                \
    WK_INLINE void NAME##_block(const int R, const uint8_t *blk, const char *x, size_t xs,         \
                                int64_t b, int64_t nb, const void *aux, __m256 *acc)               \
    {                                                                                              \
        const int16_t *sx = aux;                                                                   \
        const __m256i ones = _mm256_set1_epi16(1);                                                 \
        __m256i p16[4], i32[4];                                                                    \
        for (int r = 0; r < R; r++) p16[r] = i32[r] = _mm256_setzero_si256();                      \
        for (int s = 0; s < 4; s++) {                                                              \
            __m256i lo, hi;                                                                        \
            wk_leg_codes(blk, QOFF, MOFF, Q5, s, &lo, &hi);                                        \
            for (int r = 0; r < R; r++) {                                                          \
                const XB *xb = (const XB *)(x + r * xs) + b;                                       \
                __m256i a = _mm256_maddubs_epi16(lo, wk_bcast4(xb->qs + 4 * s));                   \
                __m256i c = _mm256_maddubs_epi16(hi, wk_bcast4(xb->qs + 16 + 4 * s));              \
                p16[r] = _mm256_add_epi16(p16[r], _mm256_add_epi16(a, c));                         \
                WK_KEEP(p16[r]);                                                                   \
                if (!Q5 ? s == 3 : (s & 1)) {                                                      \
                    i32[r] = _mm256_add_epi32(i32[r], _mm256_madd_epi16(p16[r], ones));            \
                    p16[r] = _mm256_setzero_si256();                                               \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        if (OFFSET)                                                                                \
            for (int r = 0; r < R; r++)                                                            \
                i32[r] = _mm256_sub_epi32(i32[r], _mm256_set1_epi32((OFFSET) * sx[r * nb + b]));   \
        WK_ACC_LEG(R, XB, HAS_MIN, blk, x, xs, b, i32, acc);                                       \
    }                                                                                              \
    WK_TILES_R2(NAME, BB)

WK_LEG_TILES(wk_q4_1x8, sizeof(wk_block_q4_1), wk_block_q8_1, 32, 0, true, false, 0)
WK_LEG_TILES(wk_q5_0x8, sizeof(wk_block_q5_0), wk_block_q8_0, 48, 16, false, true, 16)
WK_LEG_TILES(wk_q5_1x8, sizeof(wk_block_q5_1), wk_block_q8_1, 64, 32, true, true, 0)

WK_TILES_FN(wk_tiles_q4_1, wk_q4_1x8_tiles, 2, 32, false, NULL)

WK_TILES_FN(wk_tiles_q5_0, wk_q5_0x8_tiles, 2, 32, true, wk_q8_block_sum_fn)

WK_TILES_FN(wk_tiles_q5_1, wk_q5_1x8_tiles, 2, 32, false, NULL)

/* ---- Q6_Kx8: 6-bit codes (value + 32), int8 scale per 16 elements --------------------
 * A tile of R rows (1 to 4) x 8 columns reads each super-block once for its rows and
 * decodes a 16-element group (4 steps) in 11 operations (wk_q6x8_group). Per row and
 * step: one broadcast, one maddubs, one 16-bit add; the lanes start at the row's lane
 * offsets (aux: wk_q6x8_lane_offs, made once per call for all column groups), so the +32
 * of the codes needs no correction and one madd per group with its scales widens the sums.
 * The integer sums are those of the many-row kernel (repack_rows_avx2.c), and so are the
 * float operations: one fused multiply-add per super-block. */

WK_INLINE void wk_q6_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                               int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb;
    const int32_t *lo = aux;
    const wk_block_q8_K *xb[4];
    __m256i isum[4];
    wk_q8_K_rows(R, x, xs, b, xb, isum);
    for (int g = 0; g < 16; g++) {
        __m256i q[4];
        wk_prefetch_slice(blk, 8 * sizeof(wk_block_q6_K), g, 16);
        wk_q6x8_group(blk + 144 + 96 * g, q);
        const __m256i sc = wk_q6x8_scales(blk + 16 + 8 * g);
        for (int r = 0; r < R; r++) {
            const int8_t *xq = xb[r]->qs + 16 * g;
            __m256i p = _mm256_add_epi16(_mm256_set1_epi32(lo[(r * WK_OFFS_SPAN + b) * 16 + g]),
                                         _mm256_maddubs_epi16(q[0], wk_bcast4(xq)));
            WK_KEEP(p);
            for (int t = 1; t < 4; t++) {
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[t], wk_bcast4(xq + 4 * t)));
                WK_KEEP(p);
            }
            isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p, sc));
        }
    }
    wk_acc_q6_K(R, blk, xb, isum, acc);
}
WK_TILES_R4(wk_q6_Kx8, sizeof(wk_block_q6_K))

static void wk_q6_lane_offs(const int8_t *qs, int32_t *out) { wk_q6x8_lane_offs(qs, out); }
static void wk_tiles_q6_K(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                           const void *x, size_t xs, float *y, size_t ldy)
{
    wk_run_offset_tiles(wk_q6_Kx8_tiles, wk_q6_lane_offs, 16, sizeof(wk_block_q6_K), -1, k, nr, nc, w, ws, x, xs, y, ldy);
}

/* ---- Q2_Kx8: 2-bit codes, 4-bit scale and min per 16 elements ------------------------
 * A tile of R rows (1 to 4) x 8 columns: two loads give the 4 steps of a 16-element group
 * (a shift and a mask each), whose scales are expanded by a byte shuffle; per row and step
 * one broadcast, one maddubs, one 16-bit add, and one madd per group with its scales. The
 * mins meet the activation's block sums once per super-block (their pairs expanded once
 * for the tile's rows). Integer sums and float steps are those of the many-row kernel. */
/* The rows' integer sums of group g (its 4 steps q) times its scales: isum[r] +=. */
WK_INLINE void wk_q2_Kx8_group_rows(const int R, const __m256i q[4], const uint8_t *scb, int g,
                                    const wk_block_q8_K *const *xb, __m256i *isum)
{
    const __m256i m15 = _mm256_set1_epi16(15);
    /* column c's byte as int16, twice (lane 0: columns 0-3, lane 1: 4-7) */
    const __m256i dup = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1,
                                         4, -1, 4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
    int64_t sv;
    memcpy(&sv, scb + 8 * g, 8);
    __m256i scv = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi64x(sv), dup), m15);
    for (int r = 0; r < R; r++) {
        const int8_t *xq = xb[r]->qs + 16 * g;
        __m256i p = _mm256_maddubs_epi16(q[0], wk_bcast4(xq));
        for (int t = 1; t < 4; t++) {
            p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[t], wk_bcast4(xq + 4 * t)));
            WK_KEEP(p);
        }
        isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p, scv));
    }
}

WK_INLINE void wk_q2_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                               int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    /* column c's bytes of two consecutive groups as an int16 pair */
    const __m256i pairs = _mm256_setr_epi8(0, -1, 8, -1, 1, -1, 9, -1, 2, -1, 10, -1, 3, -1, 11, -1,
                                           4, -1, 12, -1, 5, -1, 13, -1, 6, -1, 14, -1, 7, -1, 15, -1);
    const uint8_t *scb = blk + 32;
    const wk_block_q8_K *xb[4];
    __m256i isum[4];
    wk_q8_K_rows(R, x, xs, b, xb, isum);
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) { /* groups 4j + h and 4j + 2 + h share their loads */
            __m256i qa[4], qb[4];
            wk_q2x8_groups(blk, j, h, qa, qb);
            wk_q2_Kx8_group_rows(R, qa, scb, 4 * j + h, xb, isum);
            wk_q2_Kx8_group_rows(R, qb, scb, 4 * j + 2 + h, xb, isum);
        }
    __m256i mn[8];
    for (int q = 0; q < 8; q++) {
        mn[q] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(scb + 16 * q)));
        mn[q] = _mm256_srli_epi16(_mm256_shuffle_epi8(mn[q], pairs), 4);
    }
    __m256i msum[4];
    for (int r = 0; r < R; r++) {
        msum[r] = _mm256_setzero_si256();
        for (int q = 0; q < 8; q++) {
            int32_t bp; /* block sums 2q and 2q + 1 as an int16 pair */
            memcpy(&bp, &xb[r]->bsums[2 * q], 4);
            msum[r] = _mm256_add_epi32(msum[r], _mm256_madd_epi16(mn[q], _mm256_set1_epi32(bp)));
        }
    }
    wk_acc_q8_K_min(R, blk, xb, isum, msum, acc);
}
/* An octet's 8 groups side by side at every row count: the layout's one stream (repack.h). */
WK_OCTET_TILES(WK_TILE, wk_q2_Kx8, sizeof(wk_block_q2_K))

WK_TILES_FN(wk_tiles_q2_K, wk_q2_Kx8_tiles, 4, 256, false, NULL)

/* ---- Q3_Kx8: 3-bit codes (value + 4), signed 6-bit scale per 16 elements ----------------
 * A tile of R rows (1 to 4) x 8 columns, at every row count: two loads of a quad's codes and
 * one of its third-bit plane give the 4 steps of two groups (repack.h), the second group's at
 * 4 times their value (its 2-bit codes where the quad keeps them, bits 2-3); per row and group
 * the 16-bit sums start at the row's lane offset (wk_q3x8_lane_offs: -4 x the group's sum,
 * times 4 for the second group, in the low lane of each column's pair) and one madd with the
 * group's scales widens them; the second groups' sums are divided by 4 (exactly) at the end.
 * The float step is Q6_K's. */
WK_INLINE void wk_q3_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                               int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb;
    const int32_t *lo = aux;
    const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(4), mc = _mm256_set1_epi8(0x0c);
    const __m256i m16 = _mm256_set1_epi8(0x10), c32 = _mm256_set1_epi16(32);
    uint8_t sc[128]; /* the stored scales (value + 32), index 8 g + c */
    wk_k4x8_decode(blk + 16, sc);
    wk_k4x8_decode(blk + 64, sc + 64);
    const wk_block_q8_K *xb[4];
    __m256i isum[4], isum4[4];
    wk_q8_K_rows(R, x, xs, b, xb, isum);
    for (int r = 0; r < R; r++) isum4[r] = _mm256_setzero_si256();
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) { /* groups 4j + h (q[0..3]) and 4j + 2 + h (q[4..7]) */
            const uint8_t *c = blk + 112 + 128 * j + 32 * h;
            const __m256i a = _mm256_loadu_si256((const __m256i *)c), bq = _mm256_loadu_si256((const __m256i *)(c + 64));
            const __m256i a4 = _mm256_srli_epi16(a, 4), bq4 = _mm256_srli_epi16(bq, 4);
            const __m256i pl = _mm256_loadu_si256((const __m256i *)(blk + 624 + 32 * (2 * j + h)));
            const __m256i pr1 = _mm256_srli_epi16(pl, 1);
            __m256i q[8];
            q[0] = _mm256_or_si256(_mm256_and_si256(a, m3), _mm256_and_si256(_mm256_slli_epi16(pl, 2), m4));
            q[1] = _mm256_or_si256(_mm256_and_si256(bq, m3), _mm256_and_si256(_mm256_slli_epi16(pl, 1), m4));
            q[2] = _mm256_or_si256(_mm256_and_si256(a4, m3), _mm256_and_si256(pl, m4));
            q[3] = _mm256_or_si256(_mm256_and_si256(bq4, m3), _mm256_and_si256(pr1, m4));
            q[4] = _mm256_or_si256(_mm256_and_si256(a, mc), _mm256_and_si256(pl, m16));
            q[5] = _mm256_or_si256(_mm256_and_si256(bq, mc), _mm256_and_si256(pr1, m16));
            q[6] = _mm256_or_si256(_mm256_and_si256(a4, mc), _mm256_and_si256(_mm256_srli_epi16(pl, 2), m16));
            q[7] = _mm256_or_si256(_mm256_and_si256(bq4, mc), _mm256_and_si256(_mm256_srli_epi16(pl, 3), m16));
            for (int e = 0; e < 2; e++) {
                const int g = 4 * j + 2 * e + h;
                const __m256i scv = _mm256_sub_epi16(wk_dup_cols(sc + 8 * g), c32);
                for (int r = 0; r < R; r++) {
                    const int8_t *xq = xb[r]->qs + 16 * g;
                    __m256i p = _mm256_add_epi16(_mm256_set1_epi32(lo[(r * WK_OFFS_SPAN + b) * 16 + g]),
                                                 _mm256_maddubs_epi16(q[4 * e], wk_bcast4(xq)));
                    for (int t = 1; t < 4; t++) {
                        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(q[4 * e + t], wk_bcast4(xq + 4 * t)));
                        WK_KEEP(p);
                    }
                    if (e == 0) isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p, scv));
                    else isum4[r] = _mm256_add_epi32(isum4[r], _mm256_madd_epi16(p, scv));
                }
            }
        }
    for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], _mm256_srai_epi32(isum4[r], 2));
    wk_acc_q6_K(R, blk, xb, isum, acc);
}
/* An octet's 8 groups side by side at every row count: the layout's one stream (repack.h). */
WK_OCTET_TILES(WK_TILE, wk_q3_Kx8, sizeof(wk_block_q3_K))

static void wk_tiles_q3_K(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                          const void *x, size_t xs, float *y, size_t ldy)
{
    wk_run_offset_tiles(wk_q3_Kx8_tiles, wk_q3x8_lane_offs, 16, sizeof(wk_block_q3_K), -1, k, nr, nc, w, ws, x, xs, y, ldy);
}

/* ---- entry points: the tiles above for few rows, repack_rows_avx2.c for more ------------ */
WK_PACKED_FN(wk, q8_0, WK_TYPE_Q8_0, WK_Q8_0_MIN_ROWS, wk_tiles_q8_0)
WK_PACKED_FN(wk, q4_0, WK_TYPE_Q4_0, WK_Q4_0_MIN_ROWS, wk_tiles_q4_0)
WK_PACKED_FN(wk, q4_K, WK_TYPE_Q4_K, WK_Q4_K_MIN_ROWS, wk_tiles_q4_K)
WK_PACKED_FN(wk, q4_1, WK_TYPE_Q4_1, WK_Q4_1_MIN_ROWS, wk_tiles_q4_1)
WK_PACKED_FN(wk, q5_0, WK_TYPE_Q5_0, WK_Q5_0_MIN_ROWS, wk_tiles_q5_0)
WK_PACKED_FN(wk, q5_1, WK_TYPE_Q5_1, WK_Q5_1_MIN_ROWS, wk_tiles_q5_1)
WK_PACKED_FN(wk, q6_K, WK_TYPE_Q6_K, WK_Q6_K_MIN_ROWS, wk_tiles_q6_K)
WK_PACKED_FN(wk, q2_K, WK_TYPE_Q2_K, WK_Q2_K_MIN_ROWS, wk_tiles_q2_K)

wk_gemm_fn wk_avx2_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx2_repacked_gemm(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q8_0: return wk_packed_q8_0;
    case WK_TYPE_Q4_0: return wk_packed_q4_0;
    case WK_TYPE_Q4_K: return wk_packed_q4_K;
    case WK_TYPE_Q5_K: return wk_tiles_q5_K;
    case WK_TYPE_Q3_K: return wk_tiles_q3_K;
    case WK_TYPE_Q8_1: return wk_tiles_q8_1;
    case WK_TYPE_Q8_K: return wk_tiles_q8_K;
    case WK_TYPE_Q4_1: return wk_packed_q4_1;
    case WK_TYPE_Q5_0: return wk_packed_q5_0;
    case WK_TYPE_Q5_1: return wk_packed_q5_1;
    case WK_TYPE_Q6_K: return wk_packed_q6_K;
    case WK_TYPE_Q2_K: return wk_packed_q2_K;
    default: return NULL;
    }
}
