/* Internal (AVX2 and AVX-512 builds): what the few-row tiles of the repacked layouts share
 * (cpu/repack.h): the activation broadcast, the weight prefetch, and the skeleton of a
 * tile of R rows x S adjacent 8-column groups around a type's block function. */
#ifndef WICK_CPU_X86_TILES_X86_H
#define WICK_CPU_X86_TILES_X86_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
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

/* Slice i of n of a block's prefetch, for a block read in n parts (the K types' groups):
 * issued with its part, so that the lines go out a few at a time between the work. The 27
 * prefetches of a whole 1680-byte Q6_K block at its start (likely filling the core's miss
 * buffers at once, the loads behind them waiting) took 1.12-1.19x the time at m = 1. */
WK_INLINE void wk_prefetch_slice(const uint8_t *blk, size_t bytes, int i, int n)
{
    for (size_t off = bytes * i / n; off < bytes * (i + 1) / n; off += 64)
        _mm_prefetch((const char *)blk + WK_PF_AHEAD + off, _MM_HINT_T0);
}
/* A whole block's prefetch. */
WK_INLINE void wk_prefetch_block(const uint8_t *blk, size_t bytes) { wk_prefetch_slice(blk, bytes, 0, 1); }
/* The tiles of 2 to 4 rows prefetch into L2 (not L1), WK_L2_AHEAD bytes ahead: with the L1
 * prefetch 2 KiB ahead the first loads of a block still waited for memory (the AVX-512 tiles'
 * measurements are at wk_prefetch_pair_l2; AVX2, one thread from memory, 4 rows: Q6_K
 * 1.91-2.08 -> 1.63-1.67 ms, Q8_0 2.58-2.70 -> 2.45-2.56, the others within 2%). */
#define WK_L2_AHEAD 8192
/* One row of Q2_K, Q3_K or a lone Q5_K group, one stream a thread with much work a byte, reads best
 * from memory with its L2 prefetch 32 KiB ahead (Zen 4: 16 KiB read less, 64 KiB no more and less evenly;
 * at 8 KiB other types' tiles of 2-4 rows read faster: Q8_0 1.13-1.15 ms against 1.20-1.23). */
#define WK_L2_AHEAD_FAR 32768
WK_INLINE void wk_prefetch_block_l2_at(const uint8_t *blk, size_t bytes, size_t ahead)
{
    for (size_t off = 0; off < bytes; off += 64) _mm_prefetch((const char *)blk + ahead + off, _MM_HINT_T1);
}
WK_INLINE void wk_prefetch_block_l2(const uint8_t *blk, size_t bytes) { wk_prefetch_block_l2_at(blk, bytes, WK_L2_AHEAD); }

WK_INLINE __m256 wk_load_f16x8(const void *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* The rows' Q8_K super-blocks b and their integer sums at zero (the K-type blocks). */
WK_INLINE void wk_q8_K_rows(const int R, const char *x, size_t xs, int64_t b, const wk_block_q8_K **xb,
                            __m256i *isum)
{
    for (int r = 0; r < R; r++) {
        xb[r] = (const wk_block_q8_K *)(x + r * xs) + b;
        isum[r] = _mm256_setzero_si256();
    }
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

/* The float step of the Q4_1, Q5_0 and Q5_1 blocks (XB: the activation block type):
 * acc[r] += isum[r] x (the group's d x row r's d), then, with a min, + m x row r's s. */
#define wk_act_s(xb) _Generic((xb), const wk_block_q8_1 *: wk_q8_1_s, default: wk_q8_0_s)(xb)
WK_INLINE uint16_t wk_q8_1_s(const wk_block_q8_1 *b) { return b->s; }
WK_INLINE uint16_t wk_q8_0_s(const void *b) { (void)b; return 0; }
#define WK_ACC_LEG(R, XB, HAS_MIN, blk, x, xs, b, isum, acc)                                       \
    do {                                                                                           \
        __m256 wd_ = wk_load_f16x8(blk);                                                           \
        for (int r_ = 0; r_ < (R); r_++) {                                                         \
            const XB *xb_ = (const XB *)((x) + r_ * (xs)) + (b);                                   \
            __m256 sc_ = _mm256_mul_ps(wd_, _mm256_set1_ps(_cvtsh_ss(xb_->d)));                    \
            (acc)[r_] = _mm256_fmadd_ps(_mm256_cvtepi32_ps((isum)[r_]), sc_, (acc)[r_]);           \
            if (HAS_MIN)                                                                           \
                (acc)[r_] = _mm256_fmadd_ps(wk_load_f16x8((blk) + 16),                             \
                                            _mm256_set1_ps(_cvtsh_ss(wk_act_s(xb_))), (acc)[r_]);  \
        }                                                                                          \
    } while (0)

/* Bit `bit` of every byte of a Q5 fifth-bit plane, moved to bit 4 (0x10 or 0). */
WK_INLINE __m256i wk_plane_bit4(__m256i plane, int bit)
{
    __m256i v = bit <= 4 ? _mm256_slli_epi16(plane, 4 - bit) : _mm256_srli_epi16(plane, bit - 4);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* The float step of the Q4_K and Q2_K blocks (d at blk, dmin at blk + 16):
 * acc[r] += isum[r] x (d x row r's d), then -= msum[r] x (dmin x row r's d). */
WK_INLINE void wk_acc_q8_K_min(const int R, const uint8_t *blk, const wk_block_q8_K *const *xb,
                               const __m256i *isum, const __m256i *msum, __m256 *acc)
{
    __m256 wd = wk_load_f16x8(blk), wdmin = wk_load_f16x8(blk + 16);
    for (int r = 0; r < R; r++) {
        __m256 dx = _mm256_set1_ps(xb[r]->d);
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(wd, dx), acc[r]);
        acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[r]), _mm256_mul_ps(wdmin, dx), acc[r]);
    }
}

/* The float step of the Q6_K block: acc[r] += isum[r] x (d x row r's d). */
WK_INLINE void wk_acc_q6_K(const int R, const uint8_t *blk, const wk_block_q8_K *const *xb,
                           const __m256i *isum, __m256 *acc)
{
    __m256 wd = wk_load_f16x8(blk);
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(wd, _mm256_set1_ps(xb[r]->d)), acc[r]);
}

/* The head of tile NAME##_tile_R_S, a wk_tile_fn (every tile skeleton's). */
#define WK_TILE_HEAD(NAME, R, S)                                                                   \
    static void NAME##_tile_##R##_##S(int64_t nb, const uint8_t *w, size_t gs, const char *x,      \
                                      size_t xs, const void *aux, bool first, float *y, size_t ldy)

/* NAME##_tile_R_S (a wk_tile_fn): the block loop outside, the S groups inside, each group
 * with its own R accumulators, so that S weight streams are read side by side. A block of a
 * group (8 * BB bytes) is prefetched, at 2-4 rows and for Q3_K into L2 (wk_prefetch_block_l2;
 * Q3_K at one row, one thread from memory: 1.39-1.81 -> 1.36-1.40 ms), else at one row
 * into L1 (but Q6_K's, which prefetches its own slices into L1 at every row count: 0.89-0.93 of
 * the time at m = 1-4; Q4_K's and Q2_K's were no faster in slices) and done by
 * NAME##_block(R, blk, x, xs, b, nb, aux, acc): the same operations for a column whatever S,
 * so the bits do not depend on it. */
#define WK_TILE(NAME, BB, R, S)                                                                    \
    WK_TILE_HEAD(NAME, R, S)                                                                       \
    {                                                                                              \
        __m256 acc[S][R];                                                                          \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++)                                                            \
                acc[q][r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + 8 * q);    \
        for (int64_t b = 0; b < nb; b++)                                                           \
            for (int q = 0; q < S; q++) {                                                          \
                const uint8_t *blk = w + wk_repacked_at(q, b, gs, 8 * (BB));                       \
                if ((R) >= 2 || (BB) == sizeof(wk_block_q3_K)) wk_prefetch_block_l2(blk, 8 * (BB));\
                else if ((BB) != sizeof(wk_block_q6_K)) wk_prefetch_block(blk, 8 * (BB));          \
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

/* The tiles of a layout in octets (Q2_K: repack.h), 1 to 4 rows, each an octet's 8 groups
 * side by side (the layout's one stream), made by TILE (WK_TILE or a pair skeleton), and
 * their table NAME##_tiles. */
#define WK_OCTET_TILES(TILE, NAME, BB)                                                             \
    TILE(NAME, BB, 1, 8) TILE(NAME, BB, 2, 8) TILE(NAME, BB, 3, 8) TILE(NAME, BB, 4, 8)            \
    static wk_tile_fn const NAME##_tiles[4][4] = {{NULL, NULL, NULL, NAME##_tile_1_8},             \
                                                  {NULL, NULL, NULL, NAME##_tile_2_8},             \
                                                  {NULL, NULL, NULL, NAME##_tile_3_8},             \
                                                  {NULL, NULL, NULL, NAME##_tile_4_8}};

/* The groups a tile of R rows reads side by side, log2: most1 for one row when it is not
 * negative, else the processor's (wk_cpu_streams_log2). */
WK_INLINE int wk_tile_most(int R, int most1) { return R == 1 && most1 >= 0 ? most1 : wk_cpu_streams_log2(); }

/* Row tiles of up to rt rows, each over the nc / 8 groups, one-row tiles most1 groups side
 * by side (wk_tile_most). sx, when given, receives the tile's rows' block sums (nb per row; a
 * block's 32 quants at qs_off in xb_bytes), made by bsum, for the types whose offset meets them. */
WK_INLINE void wk_run_tiles(wk_tile_fn const tiles[4][4], int rt, int most1, int64_t nb, int16_t *sx,
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
        wk_tile_groups(wk_tile_most((int)rr, most1), tiles[rr - 1], nc / 8, nb, w, 8 * ws, 8 * ws / nb, xr, xs, sx,
                       true, y + r0 * ldy, ldy);
    }
}

/* FN (a wk_gemm_fn): TILES in row tiles of up to RT rows over blocks of BS, one-row tiles
 * MOST1 groups side by side (wk_tile_most); with SX, the block sums of the rows' activation
 * blocks (XB: wk_block_q8_0 or wk_block_q8_1), by BSUM, for the tiles that take them.
 * WK_TILES_FN: Q8_0 blocks, the processor's choice. */
#define WK_TILES_FN_XB(FN, TILES, RT, BS, SX, BSUM, MOST1, XB)                                     \
    static void FN(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,     \
                   size_t xs, float *y, size_t ldy)                                                \
    {                                                                                              \
        int16_t sx[(SX) ? (RT) * (k / (BS)) : 1];                                                  \
        wk_run_tiles(TILES, RT, MOST1, k / (BS), (SX) ? sx : NULL, BSUM, sizeof(XB), offsetof(XB, qs), \
                     nr, nc, w, ws, x, xs, y, ldy);                                                \
    }
#define WK_TILES_FN_MOST(FN, TILES, RT, BS, SX, BSUM, MOST1)                                       \
    WK_TILES_FN_XB(FN, TILES, RT, BS, SX, BSUM, MOST1, wk_block_q8_0)
#define WK_TILES_FN(FN, TILES, RT, BS, SX, BSUM) WK_TILES_FN_MOST(FN, TILES, RT, BS, SX, BSUM, -1)

/* The 4-bit codes of step s of a Q4_1/Q5_0/Q5_1 block (qs at QOFF), and with Q5 the fifth
 * bits of the plane at MOFF: elements 4s.. of the low nibbles (lo), 16 + 4s.. (hi). */
WK_INLINE void wk_leg_codes(const uint8_t *blk, int qoff, int moff, bool q5, int s, __m256i *lo, __m256i *hi)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i v = _mm256_loadu_si256((const __m256i *)(blk + qoff + 32 * s));
    *lo = _mm256_and_si256(v, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (q5) {
        __m256i pl = _mm256_loadu_si256((const __m256i *)(blk + moff));
        *lo = _mm256_or_si256(*lo, wk_plane_bit4(pl, 2 * s));
        *hi = _mm256_or_si256(*hi, wk_plane_bit4(pl, 2 * s + 1));
    }
}

/* Tiles of up to 4 rows of a K format whose codes are stored plus an offset (Q6_K +32, Q3_K
 * +4), over blocks of block_bytes: the rows' lane offsets, where a group's sums start so that
 * the offset needs no correction (lane_offs: NLO int32 per super-block and row, made once per
 * span of WK_OFFS_SPAN super-blocks for all the column groups; a later span adds to y); one-row
 * tiles most1 groups side by side (wk_tile_most). */
#define WK_OFFS_SPAN 32 /* super-blocks whose lane offsets are made at once */
WK_INLINE void wk_run_offset_tiles(wk_tile_fn const tiles[4][4], void (*lane_offs)(const int8_t *, int32_t *),
                                   const int nlo, size_t block_bytes, int most1, int64_t k, int64_t nr, int64_t nc,
                                   const void *w, size_t ws, const void *x, size_t xs, float *y, size_t ldy)
{
    int64_t nb = k / 256;
    int32_t lo[4 * WK_OFFS_SPAN * 32];
    for (int64_t r0 = 0; r0 < nr; r0 += 4) {
        int R = nr - r0 < 4 ? (int)(nr - r0) : 4;
        const char *xr = (const char *)x + r0 * xs;
        for (int64_t b0 = 0; b0 < nb; b0 += WK_OFFS_SPAN) {
            int64_t sb = nb - b0 < WK_OFFS_SPAN ? nb - b0 : WK_OFFS_SPAN;
            for (int r = 0; r < R; r++)
                for (int64_t b = 0; b < sb; b++)
                    lane_offs(((const wk_block_q8_K *)(xr + r * xs) + b0 + b)->qs,
                              lo + (r * WK_OFFS_SPAN + b) * nlo);
            const size_t bb = 8 * block_bytes;
            wk_tile_groups(wk_tile_most(R, most1), tiles[R - 1], nc / 8, sb,
                           (const uint8_t *)w + wk_repacked_at(0, b0, 8 * ws, bb), 8 * ws, bb,
                           xr + b0 * sizeof(wk_block_q8_K), xs, lo, b0 == 0, y + r0 * ldy, ldy);
        }
    }
}

/* The lane offsets of a row's Q8_K super-block (qs: its 256 quants) for Q3_K's codes (value
 * + 4): out[g] = -4 times group g's sum, and 4 times that for the second groups of a quad's
 * pairs (g % 4 >= 2, whose codes the kernels take at 4 times their value), zero-extended from
 * 16 bits, so that it sits in the low 16-bit lane of each column's 32-bit lane (the sums of
 * (code - 4) * x over a group, even times 4, fit 16 bits: 4 x 16 x 4 x 127 = 32512; the
 * activations of Q8_K never reach -128). */
static inline void wk_q3x8_lane_offs(const int8_t *qs, int32_t *out)
{
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int i = 0; i < 16; i++) s += qs[16 * g + i];
        out[g] = (int32_t)(uint16_t)(-4 * s * (g % 4 >= 2 ? 4 : 1));
    }
}

/* From this many rows the weights are decoded once per 64-row block (repack_rows_avx2.c)
 * instead of once per tile; both give the same bits. Measured single-thread with
 * interleaved trials (AVX2 tiles): 3 rows for Q4_K (its 1-row tile at 2 rows was 7-12%
 * faster; its 2-row tile reads the weights once for both) and for Q4_0, Q4_1, Q5_0, Q5_1;
 * 7 for Q8_0 (its tiles, whose decoding is one abs, were 6-32% faster at 3-6 rows);
 * 5 for Q6_K (its tiles take up to 4 rows and decode a group of 4 steps in 11
 * operations); 17 for Q2_K (a load, 3 shifts and 4 masks per group: its 4-row tiles,
 * repeated, were 5-15% faster than the many-row kernel up to 16 rows). */
#ifndef WK_Q8_0_MIN_ROWS
#define WK_Q8_0_MIN_ROWS 7
#endif
#ifndef WK_Q4_0_MIN_ROWS
#define WK_Q4_0_MIN_ROWS 3
#endif
#ifndef WK_Q4_K_MIN_ROWS
#define WK_Q4_K_MIN_ROWS 3
#endif
#ifndef WK_Q4_1_MIN_ROWS
#define WK_Q4_1_MIN_ROWS 3
#endif
#ifndef WK_Q5_0_MIN_ROWS
#define WK_Q5_0_MIN_ROWS 3
#endif
#ifndef WK_Q5_1_MIN_ROWS
#define WK_Q5_1_MIN_ROWS 3
#endif
#ifndef WK_Q6_K_MIN_ROWS
#define WK_Q6_K_MIN_ROWS 5
#endif
#ifndef WK_Q2_K_MIN_ROWS
#define WK_Q2_K_MIN_ROWS 17
#endif
wk_gemm_fn wk_avx2_rows_gemm(wk_type t);
/* PFX##_packed_T: TILES (k, nr, nc, ...) below MIN_ROWS rows, the many-row kernel from there. */
#define WK_PACKED_FN(PFX, T, TYPE, MIN_ROWS, TILES)                                               \
    static void PFX##_packed_##T(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,      \
                                 const void *x, size_t xs, float *y, size_t ldy)                   \
    {                                                                                              \
        if (nr >= (MIN_ROWS)) wk_avx2_rows_gemm(TYPE)(k, nr, nc, w, ws, x, xs, y, ldy);            \
        else TILES(k, nr, nc, w, ws, x, xs, y, ldy);                                               \
    }

#endif
