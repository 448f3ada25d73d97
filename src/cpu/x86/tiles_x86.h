/* Internal (AVX2 and AVX-512 builds): what the few-row tiles of the repacked layouts share
 * (cpu/repack.h): the activation broadcast, the weight prefetch, and the skeleton of a
 * tile of R rows x S adjacent 8-column groups around a type's block function. */
#ifndef WICK_CPU_X86_TILES_X86_H
#define WICK_CPU_X86_TILES_X86_H

#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

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
#ifndef WK_PF_AHEAD
#define WK_PF_AHEAD 2048
#endif
WK_INLINE void wk_prefetch_block(const uint8_t *blk, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64) _mm_prefetch((const char *)blk + WK_PF_AHEAD + off, _MM_HINT_T0);
}

WK_INLINE __m256 wk_load_f16x8(const void *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* acc[r] += isum[r] x (the group's 8 f16 scales at blk) x (row r's Q8_0 block b scale). */
WK_INLINE void wk_acc_q8_0(const int R, const uint8_t *blk, const char *x, size_t xs, int64_t b,
                           const __m256i *isum, __m256 *acc)
{
    __m256 wd = wk_load_f16x8(blk);
    for (int r = 0; r < R; r++) {
        const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;
        __m256 sc = _mm256_mul_ps(wd, _mm256_set1_ps(_cvtsh_ss(xb->d)));
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), sc, acc[r]);
    }
}

/* NAME##_tile_R_S (a wk_tile_fn): the block loop outside, the S groups inside, each group
 * with its own R accumulators, so that S weight streams are read side by side. A block of a
 * group (8 * BB bytes) is done by NAME##_block(R, blk, x, xs, b, nb, aux, acc): the same
 * operations for a column whatever S, so the bits do not depend on it. */
#define WK_TILE(NAME, BB, R, S)                                                                    \
    static void NAME##_tile_##R##_##S(int64_t nb, const uint8_t *w, size_t gs, const char *x,      \
                                      size_t xs, const void *aux, bool first, float *y,            \
                                      size_t ldy)                                                  \
    {                                                                                              \
        __m256 acc[S][R];                                                                          \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++)                                                            \
                acc[q][r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + 8 * q);    \
        for (int64_t b = 0; b < nb; b++)                                                           \
            for (int q = 0; q < S; q++) {                                                          \
                const uint8_t *blk = w + q * gs + b * 8 * (BB);                                    \
                wk_prefetch_block(blk, 8 * (BB));                                                  \
                NAME##_block(R, blk, x, xs, b, nb, aux, acc[q]);                                   \
            }                                                                                      \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++) _mm256_storeu_ps(y + r * ldy + 8 * q, acc[q][r]);          \
    }

/* One row: 1, 2, 4 or 8 groups side by side; 2 rows: 1 or 2; 3 and 4 rows: 1 (two groups
 * were slower for the AVX-512 Q4_0 4-row tile and no faster for the others). NAME##_tiles
 * is the table for wk_tile_groups, [rows - 1][log2 S]. */
#define WK_TILES_12(NAME, BB)                                                                      \
    WK_TILE(NAME, BB, 1, 1) WK_TILE(NAME, BB, 1, 2) WK_TILE(NAME, BB, 1, 4) WK_TILE(NAME, BB, 1, 8) \
    WK_TILE(NAME, BB, 2, 1) WK_TILE(NAME, BB, 2, 2)
#define WK_TABLE_12(NAME)                                                                          \
    {NAME##_tile_1_1, NAME##_tile_1_2, NAME##_tile_1_4, NAME##_tile_1_8},                          \
    {NAME##_tile_2_1, NAME##_tile_2_2}
#define WK_TILES_R2(NAME, BB)                                                                      \
    WK_TILES_12(NAME, BB)                                                                          \
    static wk_tile_fn const NAME##_tiles[4][4] = {WK_TABLE_12(NAME)};
#define WK_TILES_R4(NAME, BB)                                                                      \
    WK_TILES_12(NAME, BB) WK_TILE(NAME, BB, 3, 1) WK_TILE(NAME, BB, 4, 1)                          \
    static wk_tile_fn const NAME##_tiles[4][4] = {WK_TABLE_12(NAME), {NAME##_tile_3_1},            \
                                                  {NAME##_tile_4_1}};

/* Row tiles of up to rt rows, each over the nc / 8 groups. sx, when given, receives the
 * tile's rows' block sums (nb per row; a block's 32 quants at qs_off in xb_bytes), made by
 * bsum, for the types whose offset meets them. */
WK_INLINE void wk_run_tiles(wk_tile_fn const tiles[4][4], int rt, int64_t nb, int16_t *sx,
                            int16_t (*bsum)(const int8_t *), size_t xb_bytes, size_t qs_off,
                            int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,
                            size_t xs, float *y, size_t ldy)
{
    for (int64_t r0 = 0; r0 < nr; r0 += rt) {
        int64_t rr = nr - r0 < rt ? nr - r0 : rt;
        const char *xr = (const char *)x + r0 * xs;
        if (sx)
            for (int64_t r = 0; r < rr; r++)
                for (int64_t b = 0; b < nb; b++)
                    sx[r * nb + b] = bsum((const int8_t *)(xr + r * xs + b * xb_bytes + qs_off));
        wk_tile_groups(tiles[rr - 1], nc / 8, nb, w, 8 * ws, xr, xs, sx, true, y + r0 * ldy, ldy);
    }
}

#endif
