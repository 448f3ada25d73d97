/* AVX-512 VNNI few-row kernels of the repacked layouts (cpu/repack.h): one
 * _mm256_dpbusd_epi32 does what takes maddubs + madd + add on AVX2 (four u8 x s8
 * products summed into each 32-bit lane, without the 16-bit saturation), and
 * _mm256_dpwssd_epi32 multiplies a group's 32-bit sum (when it fits 16 bits) by its scale
 * and adds it. The integer sums are the same as the AVX2 kernels', and the float steps
 * are the same helpers (tiles_x86.h), so are the results. Q8_0 and Q4_0 take tiles of 1
 * to 4 rows for every row count; the others the AVX2 row thresholds (tiles below, the
 * many-row kernel of repack_rows_avx2.c from there). One row reads 8 groups side by side.
 * Q6_K keeps the AVX2 tiles: a VNNI one (2-step sums from lane offsets, two dpwssd per
 * group) was no faster at 1-2 rows, where the decoding shared by the rows (11 operations
 * a group) is most of the work. */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "cpu/x86/k4x8_avx2.h"
#include "cpu/x86/q2x8_avx2.h"
#include "cpu/x86/tiles_x86.h"
#include "quant/blocks.h"

/* One block of one group for R rows (two sums per row to halve the dependency chain). */
WK_INLINE void wk_vnni_q8_0x8_block(const int R, const uint8_t *blk, const char *x, size_t xs,
                                    int64_t b, int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    __m256i isum[4], isum2[4];
    for (int r = 0; r < R; r++) isum[r] = isum2[r] = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        __m256i wq = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));
        __m256i wa = _mm256_abs_epi8(wq);
        for (int r = 0; r < R; r++) {
            const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;
            __m256i xv = _mm256_sign_epi8(wk_bcast4(xb->qs + 4 * s), wq);
            if (s & 1) isum2[r] = _mm256_dpbusd_epi32(isum2[r], wa, xv);
            else isum[r] = _mm256_dpbusd_epi32(isum[r], wa, xv);
        }
    }
    for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], isum2[r]);
    wk_acc_q8_0(R, blk, x, xs, b, isum, acc);
}
WK_TILES_R4(wk_vnni_q8_0x8, sizeof(wk_block_q8_0))

/* aux: the rows' block sums (nb per row), for the offset 8 of the codes. */
WK_INLINE void wk_vnni_q4_0x8_block(const int R, const uint8_t *blk, const char *x, size_t xs,
                                    int64_t b, int64_t nb, const void *aux, __m256 *acc)
{
    const int16_t *sx = aux;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i isum[4], isum2[4];
    for (int r = 0; r < R; r++) {
        isum[r] = _mm256_set1_epi32(-8 * sx[r * nb + b]);
        isum2[r] = _mm256_setzero_si256();
    }
    for (int s = 0; s < 4; s++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));
        __m256i lo = _mm256_and_si256(v, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        for (int r = 0; r < R; r++) {
            const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;
            isum[r] = _mm256_dpbusd_epi32(isum[r], lo, wk_bcast4(xb->qs + 4 * s));
            isum2[r] = _mm256_dpbusd_epi32(isum2[r], hi, wk_bcast4(xb->qs + 16 + 4 * s));
        }
    }
    for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], isum2[r]);
    wk_acc_q8_0(R, blk, x, xs, b, isum, acc);
}
WK_TILES_R4(wk_vnni_q4_0x8, sizeof(wk_block_q4_0))

/* 8 bytes (one per column) as the low 16 bits of 8 x int32 (high 16 bits zero: the
 * dpwssd pair of a sum that fits 16 bits, whose high half is its sign). */
WK_INLINE __m256i wk_vnni_cols_u8(const uint8_t *v)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)v));
}

/* The K types' scaled sums go to WK_NCH chains per row (chain[r][j]), so that the
 * 5-cycle dpwssd latency does not serialize the groups; wk_vnni_fold adds them up. */
#define WK_NCH(R) ((R) <= 2 ? 4 : 2)
WK_INLINE void wk_vnni_fold(const int R, __m256i chain[][4], __m256i *isum)
{
    for (int r = 0; r < R; r++) {
        isum[r] = chain[r][0];
        for (int j = 1; j < WK_NCH(R); j++) isum[r] = _mm256_add_epi32(isum[r], chain[r][j]);
    }
}

/* The rows' Q8_K super-blocks b, their min sums and chains at zero. */
WK_INLINE void wk_vnni_k_start(const int R, const char *x, size_t xs, int64_t b,
                               const wk_block_q8_K **xb, __m256i *msum, __m256i ch[][4])
{
    for (int r = 0; r < R; r++) {
        xb[r] = (const wk_block_q8_K *)(x + r * xs) + b;
        msum[r] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) ch[r][j] = _mm256_setzero_si256();
    }
}

/* ---- Q4_1, Q5_0, Q5_1: 4 or 5-bit unsigned codes, with a min or an offset (aux: the
 * rows' block sums, for an OFFSET) ---- */
#define WK_VNNI_LEG_TILES(NAME, BB, XB, QOFF, MOFF, HAS_MIN, Q5, OFFSET)                           \
    WK_INLINE void NAME##_block(const int R, const uint8_t *blk, const char *x, size_t xs,         \
                                int64_t b, int64_t nb, const void *aux, __m256 *acc)               \
    {                                                                                              \
        const int16_t *sx = aux;                                                                   \
        __m256i isum[4], isum2[4];                                                                 \
        for (int r = 0; r < R; r++) {                                                              \
            isum[r] = (OFFSET) ? _mm256_set1_epi32(-(OFFSET) * sx[r * nb + b]) : _mm256_setzero_si256(); \
            isum2[r] = _mm256_setzero_si256();                                                     \
        }                                                                                          \
        for (int s = 0; s < 4; s++) {                                                              \
            __m256i lo, hi;                                                                        \
            wk_leg_codes(blk, QOFF, MOFF, Q5, s, &lo, &hi);                                        \
            for (int r = 0; r < R; r++) {                                                          \
                const XB *xb = (const XB *)(x + r * xs) + b;                                       \
                isum[r] = _mm256_dpbusd_epi32(isum[r], lo, wk_bcast4(xb->qs + 4 * s));             \
                isum2[r] = _mm256_dpbusd_epi32(isum2[r], hi, wk_bcast4(xb->qs + 16 + 4 * s));      \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], isum2[r]);                 \
        WK_ACC_LEG(R, XB, HAS_MIN, blk, x, xs, b, isum, acc);                                      \
    }                                                                                              \
    WK_TILES_R2(NAME, BB)

WK_VNNI_LEG_TILES(wk_vnni_q4_1x8, sizeof(wk_block_q4_1), wk_block_q8_1, 32, 0, true, false, 0)
WK_VNNI_LEG_TILES(wk_vnni_q5_0x8, sizeof(wk_block_q5_0), wk_block_q8_0, 48, 16, false, true, 16)
WK_VNNI_LEG_TILES(wk_vnni_q5_1x8, sizeof(wk_block_q5_1), wk_block_q8_1, 64, 32, true, true, 0)

/* ---- Q4_Kx8: per 32-element sub-block, two sums of 4 steps (16 products of at most
 * 15 x 128: 16 bits) each multiplied by its 6-bit scale with one dpwssd ---- */
WK_INLINE void wk_vnni_q4_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs,
                                    int64_t b, int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    uint8_t sc[64], mn[64];
    wk_k4x8_decode(blk + 32, sc);
    wk_k4x8_decode(blk + 80, mn);
    const wk_block_q8_K *xb[4];
    __m256i isum[4], msum[4], ch[4][4];
    wk_vnni_k_start(R, x, xs, b, xb, msum, ch);
    for (int p = 0; p < 4; p++) {
        const __m256i slo = wk_vnni_cols_u8(sc + 8 * (2 * p)), shi = wk_vnni_cols_u8(sc + 8 * (2 * p + 1));
        for (int h = 0; h < 2; h++) { /* steps 4h .. 4h + 3 */
            __m256i plo[4], phi[4];
            for (int r = 0; r < R; r++) plo[r] = phi[r] = _mm256_setzero_si256();
            for (int s = 4 * h; s < 4 * h + 4; s++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 128 + 256 * p + 32 * s));
                __m256i lo = _mm256_and_si256(v, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                for (int r = 0; r < R; r++) {
                    const int8_t *xq = xb[r]->qs + 64 * p;
                    plo[r] = _mm256_dpbusd_epi32(plo[r], lo, wk_bcast4(xq + 4 * s));
                    phi[r] = _mm256_dpbusd_epi32(phi[r], hi, wk_bcast4(xq + 32 + 4 * s));
                }
            }
            const int j = (2 * p + h) % WK_NCH(R);
            for (int r = 0; r < R; r++)
                ch[r][j] = _mm256_dpwssd_epi32(_mm256_dpwssd_epi32(ch[r][j], plo[r], slo), phi[r], shi);
        }
    }
    wk_vnni_fold(R, ch, isum);
    for (int q = 0; q < 4; q++) { /* mins of sub-blocks 2q, 2q + 1 as an int16 pair */
        __m256i mnp = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(mn + 16 * q)),
                                                             _mm_loadl_epi64((const __m128i *)(mn + 16 * q + 8))));
        for (int r = 0; r < R; r++) {
            int bs0 = xb[r]->bsums[4 * q] + xb[r]->bsums[4 * q + 1];
            int bs1 = xb[r]->bsums[4 * q + 2] + xb[r]->bsums[4 * q + 3];
            __m256i bp = _mm256_set1_epi32((int)(((uint32_t)bs0 & 0xffffu) | ((uint32_t)bs1 << 16)));
            msum[r] = _mm256_dpwssd_epi32(msum[r], mnp, bp);
        }
    }
    wk_acc_q8_K_min(R, blk, xb, isum, msum, acc);
}
WK_TILES_R2(wk_vnni_q4_Kx8, sizeof(wk_block_q4_K))

/* wk_q2x8_group with one shift instead of three (shifts share two ports with dpbusd;
 * the byte shuffles that replace them run on a third): steps 1 and 3 through a table of
 * nibble >> 2. */
WK_INLINE void wk_vnni_q2x8_group(const uint8_t *grp, __m256i q[4])
{
    const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi8(15);
    const __m256i shr2 = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                          0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m256i v = _mm256_loadu_si256((const __m256i *)grp), h = _mm256_srli_epi16(v, 4);
    q[0] = _mm256_and_si256(v, m3);
    q[1] = _mm256_shuffle_epi8(shr2, _mm256_and_si256(v, m15));
    q[2] = _mm256_and_si256(h, m3);
    q[3] = _mm256_shuffle_epi8(shr2, _mm256_and_si256(h, m15));
}

WK_INLINE void wk_vnni_q2_Kx8_block(const int R, const uint8_t *blk, const char *x, size_t xs,
                                    int64_t b, int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    const __m256i m15 = _mm256_set1_epi32(15);
    /* column c's bytes of two consecutive groups as an int16 pair */
    const __m256i pairs = _mm256_setr_epi8(0, -1, 8, -1, 1, -1, 9, -1, 2, -1, 10, -1, 3, -1, 11, -1,
                                           4, -1, 12, -1, 5, -1, 13, -1, 6, -1, 14, -1, 7, -1, 15, -1);
    const uint8_t *scb = blk + 32;
    const wk_block_q8_K *xb[4];
    __m256i isum[4], msum[4], ch[4][4];
    wk_vnni_k_start(R, x, xs, b, xb, msum, ch);
    for (int g = 0; g < 16; g++) {
        __m256i q[4];
        wk_vnni_q2x8_group(blk + 160 + 32 * g, q);
        const __m256i scv = _mm256_and_si256(wk_vnni_cols_u8(scb + 8 * g), m15);
        for (int r = 0; r < R; r++) {
            const int8_t *xq = xb[r]->qs + 16 * g;
            __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q[0], wk_bcast4(xq));
            for (int t = 1; t < 4; t++) p = _mm256_dpbusd_epi32(p, q[t], wk_bcast4(xq + 4 * t));
            ch[r][g % WK_NCH(R)] = _mm256_dpwssd_epi32(ch[r][g % WK_NCH(R)], p, scv);
        }
    }
    wk_vnni_fold(R, ch, isum);
    for (int q = 0; q < 8; q++) {
        __m256i mn = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(scb + 16 * q)));
        mn = _mm256_srli_epi16(_mm256_shuffle_epi8(mn, pairs), 4);
        for (int r = 0; r < R; r++) {
            int32_t bp; /* block sums 2q and 2q + 1 as an int16 pair */
            memcpy(&bp, &xb[r]->bsums[2 * q], 4);
            msum[r] = _mm256_dpwssd_epi32(msum[r], mn, _mm256_set1_epi32(bp));
        }
    }
    wk_acc_q8_K_min(R, blk, xb, isum, msum, acc);
}
WK_TILES_R4(wk_vnni_q2_Kx8, sizeof(wk_block_q2_K))

/* Sum of the 32 activation quants of a block. */
static int16_t wk_vnni_block_sum(const int8_t *qs)
{
    __m256i v = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1),
                                    _mm256_loadu_si256((const __m256i *)qs));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return (int16_t)_mm_cvtsi128_si32(s);
}

WK_TILES_FN(wk_vnni_packed_q8_0, wk_vnni_q8_0x8_tiles, 4, 32, false, NULL)

WK_TILES_FN(wk_vnni_packed_q4_0, wk_vnni_q4_0x8_tiles, 4, 32, true, wk_vnni_block_sum)

WK_TILES_FN(wk_vnni_tiles_q4_1, wk_vnni_q4_1x8_tiles, 2, 32, false, NULL)

WK_TILES_FN(wk_vnni_tiles_q5_0, wk_vnni_q5_0x8_tiles, 2, 32, true, wk_vnni_block_sum)

WK_TILES_FN(wk_vnni_tiles_q5_1, wk_vnni_q5_1x8_tiles, 2, 32, false, NULL)

WK_TILES_FN(wk_vnni_tiles_q4_K, wk_vnni_q4_Kx8_tiles, 2, 256, false, NULL)

WK_TILES_FN(wk_vnni_tiles_q2_K, wk_vnni_q2_Kx8_tiles, 4, 256, false, NULL)

WK_PACKED_FN(wk_vnni, q4_1, WK_TYPE_Q4_1, WK_Q4_1_MIN_ROWS, wk_vnni_tiles_q4_1)
WK_PACKED_FN(wk_vnni, q5_0, WK_TYPE_Q5_0, WK_Q5_0_MIN_ROWS, wk_vnni_tiles_q5_0)
WK_PACKED_FN(wk_vnni, q5_1, WK_TYPE_Q5_1, WK_Q5_1_MIN_ROWS, wk_vnni_tiles_q5_1)
WK_PACKED_FN(wk_vnni, q4_K, WK_TYPE_Q4_K, WK_Q4_K_MIN_ROWS, wk_vnni_tiles_q4_K)
WK_PACKED_FN(wk_vnni, q2_K, WK_TYPE_Q2_K, WK_Q2_K_MIN_ROWS, wk_vnni_tiles_q2_K)

wk_gemm_fn wk_avx512_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx512_repacked_gemm(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q8_0: return wk_vnni_packed_q8_0;
    case WK_TYPE_Q4_0: return wk_vnni_packed_q4_0;
    case WK_TYPE_Q4_1: return wk_vnni_packed_q4_1;
    case WK_TYPE_Q5_0: return wk_vnni_packed_q5_0;
    case WK_TYPE_Q5_1: return wk_vnni_packed_q5_1;
    case WK_TYPE_Q4_K: return wk_vnni_packed_q4_K;
    case WK_TYPE_Q2_K: return wk_vnni_packed_q2_K;
    default: return NULL;
    }
}
