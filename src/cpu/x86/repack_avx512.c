/* AVX-512 VNNI kernels of the repacked Q8_0x8 and Q4_0x8 layouts (cpu/repack.h): one
 * _mm256_dpbusd_epi32 does what takes maddubs + madd + add on AVX2 (four u8 x s8
 * products summed into each 32-bit lane, without the 16-bit saturation). The integer
 * sums are the same as the AVX2 kernels', so are the results. Other types use the AVX2
 * kernels, which run unchanged on these processors. */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "quant/blocks.h"

#define WK_INLINE static inline __attribute__((always_inline))

WK_INLINE __m256i wk_bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Software prefetch of the weight bytes WK_PF_AHEAD bytes ahead of the block being read:
 * with few threads, more lines in flight per core is what brings the reads near the
 * machine's bandwidth. */
#define WK_PF_AHEAD 2048
WK_INLINE void wk_prefetch_block(const uint8_t *blk, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64) _mm_prefetch((const char *)blk + WK_PF_AHEAD + off, _MM_HINT_T0);
}

WK_INLINE __m256 wk_load_f16x8(const void *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Tiles of R rows x S adjacent groups (wk_tile_groups): the block loop outside, the
 * groups inside, each group with its own accumulators and the operations of one group. */
#define WK_VNNI_Q8_0X8_TILE(R, S)                                                                  \
    static void wk_vnni_q8_0x8_tile_##R##_##S(int64_t nb, const uint8_t *w, size_t gs,            \
                                              const char *x, size_t xs, const void *aux,         \
                                              bool first, float *y, size_t ldy)                   \
    {                                                                                              \
        (void)aux, (void)first;                                                                    \
        __m256 acc[S][R];                                                                          \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++) acc[q][r] = _mm256_setzero_ps();                           \
        for (int64_t b = 0; b < nb; b++)                                                           \
            for (int q = 0; q < S; q++) {                                                          \
                const uint8_t *blk = w + q * gs + b * 8 * sizeof(wk_block_q8_0);                   \
                wk_prefetch_block(blk, 8 * sizeof(wk_block_q8_0));                                 \
                __m256i isum[R], isum2[R];                                                         \
                for (int r = 0; r < R; r++) isum[r] = isum2[r] = _mm256_setzero_si256();           \
                for (int s = 0; s < 8; s++) {                                                      \
                    __m256i wq = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));         \
                    __m256i wa = _mm256_abs_epi8(wq);                                              \
                    for (int r = 0; r < R; r++) {                                                  \
                        const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;         \
                        __m256i xv = _mm256_sign_epi8(wk_bcast4(xb->qs + 4 * s), wq);              \
                        if (s & 1) isum2[r] = _mm256_dpbusd_epi32(isum2[r], wa, xv);               \
                        else isum[r] = _mm256_dpbusd_epi32(isum[r], wa, xv);                       \
                    }                                                                              \
                }                                                                                  \
                for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], isum2[r]);         \
                __m256 wd = wk_load_f16x8(blk);                                                    \
                for (int r = 0; r < R; r++) {                                                      \
                    const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;             \
                    __m256 sc = _mm256_mul_ps(wd, _mm256_set1_ps(_cvtsh_ss(xb->d)));               \
                    acc[q][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), sc, acc[q][r]);       \
                }                                                                                  \
            }                                                                                      \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++) _mm256_storeu_ps(y + r * ldy + 8 * q, acc[q][r]);          \
    }

/* sx: the rows' block sums (nb per row), for the offset 8 of the codes. */
#define WK_VNNI_Q4_0X8_TILE(R, S)                                                                  \
    static void wk_vnni_q4_0x8_tile_##R##_##S(int64_t nb, const uint8_t *w, size_t gs,            \
                                              const char *x, size_t xs, const void *aux,         \
                                              bool first, float *y, size_t ldy)                   \
    {                                                                                              \
        (void)first;                                                                               \
        const int16_t *sx = aux;                                                                   \
        const __m256i m4 = _mm256_set1_epi8(0x0f);                                                 \
        __m256 acc[S][R];                                                                          \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++) acc[q][r] = _mm256_setzero_ps();                           \
        for (int64_t b = 0; b < nb; b++)                                                           \
            for (int q = 0; q < S; q++) {                                                          \
                const uint8_t *blk = w + q * gs + b * 8 * sizeof(wk_block_q4_0);                   \
                wk_prefetch_block(blk, 8 * sizeof(wk_block_q4_0));                                 \
                __m256i isum[R], isum2[R];                                                         \
                for (int r = 0; r < R; r++) {                                                      \
                    isum[r] = _mm256_set1_epi32(-8 * sx[r * nb + b]);                              \
                    isum2[r] = _mm256_setzero_si256();                                             \
                }                                                                                  \
                for (int s = 0; s < 4; s++) {                                                      \
                    __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));          \
                    __m256i lo = _mm256_and_si256(v, m4);                                          \
                    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);                    \
                    for (int r = 0; r < R; r++) {                                                  \
                        const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;         \
                        isum[r] = _mm256_dpbusd_epi32(isum[r], lo, wk_bcast4(xb->qs + 4 * s));     \
                        isum2[r] = _mm256_dpbusd_epi32(isum2[r], hi, wk_bcast4(xb->qs + 16 + 4 * s)); \
                    }                                                                              \
                }                                                                                  \
                for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], isum2[r]);         \
                __m256 wd = wk_load_f16x8(blk);                                                    \
                for (int r = 0; r < R; r++) {                                                      \
                    const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;             \
                    __m256 sc = _mm256_mul_ps(wd, _mm256_set1_ps(_cvtsh_ss(xb->d)));               \
                    acc[q][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), sc, acc[q][r]);       \
                }                                                                                  \
            }                                                                                      \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++) _mm256_storeu_ps(y + r * ldy + 8 * q, acc[q][r]);          \
    }

/* One row: 8 groups side by side (and 4, 2, 1 for the rest); more rows: one group. */
#define WK_VNNI_TILES(T)                                                                           \
    T(1, 1) T(1, 2) T(1, 4) T(1, 8) T(2, 1) T(3, 1) T(4, 1)
#define WK_VNNI_TABLE(NAME)                                                                        \
    {{NAME##_1_1, NAME##_1_2, NAME##_1_4, NAME##_1_8}, {NAME##_2_1}, {NAME##_3_1}, {NAME##_4_1}}
WK_VNNI_TILES(WK_VNNI_Q8_0X8_TILE)
WK_VNNI_TILES(WK_VNNI_Q4_0X8_TILE)

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

/* Row tiles of up to 4, each over all groups; sx (block sums) made per row tile when given. */
static void wk_vnni_packed(wk_tile_fn const tiles[4][4], int16_t *sx, int64_t k, int64_t nr, int64_t nc,
                           const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ldy)
{
    int64_t nb = k / 32;
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        int64_t rr = nr - r0 < 4 ? nr - r0 : 4;
        const char *xr = (const char *)x + r0 * xs;
        if (sx)
            for (int64_t r = 0; r < rr; r++)
                for (int64_t b = 0; b < nb; b++)
                    sx[r * nb + b] = wk_vnni_block_sum(((const wk_block_q8_0 *)(xr + r * xs) + b)->qs);
        wk_tile_groups(tiles[rr - 1], nc / 8, nb, w, 8 * ws, xr, xs, sx, true, y + r0 * ldy, ldy);
    }
}

static void wk_vnni_packed_q8_0(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                                const void *x, size_t xs, float *y, size_t ldy)
{
    static wk_tile_fn const tiles[4][4] = WK_VNNI_TABLE(wk_vnni_q8_0x8_tile);
    wk_vnni_packed(tiles, NULL, k, nr, nc, w, ws, x, xs, y, ldy);
}

static void wk_vnni_packed_q4_0(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                                const void *x, size_t xs, float *y, size_t ldy)
{
    static wk_tile_fn const tiles[4][4] = WK_VNNI_TABLE(wk_vnni_q4_0x8_tile);
    int16_t sx[4 * (k / 32)];
    wk_vnni_packed(tiles, sx, k, nr, nc, w, ws, x, xs, y, ldy);
}

wk_gemm_fn wk_avx512_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx512_repacked_gemm(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q8_0: return wk_vnni_packed_q8_0;
    case WK_TYPE_Q4_0: return wk_vnni_packed_q4_0;
    default: return NULL;
    }
}
