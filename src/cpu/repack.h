/* Internal: interleaved ("repacked") weight layouts for the CPU's quantized form.
 *
 * Eight weight rows (output columns) are interleaved block by block, so that one 32-byte
 * load holds four consecutive weights of each of the 8 columns and one broadcast of four
 * activation bytes feeds all of them: integer products for 8 outputs per instruction,
 * each weight block used for several activation rows. A group of 8 rows takes exactly
 * the bytes of the 8 rows it replaces, so repacking is done in place: no second copy.
 *
 * Groups come in pairs (rows 16P..16P+15). In the 32-element formats, whose blocks of a
 * group are small (144-272 bytes), a pair is interleaved block by block: group 2P's block
 * 0, group 2P + 1's block 0, group 2P's block 1, ... (wk_repacked_at). A kernel that reads a
 * pair's blocks side by side (the 512-bit tiles: one register, two groups) then reads one
 * memory stream, not two: on the Zen 5 development machine one stream a core is what reads
 * at the memory's bandwidth (Q4_0 one row from memory, 2 threads: 85-91% of the bandwidth
 * read beside it with two streams a pair, 95-105% with one). Q2_K interleaves 8 groups (an
 * octet, rows 64O..64O+63) the same way, and its kernels read an octet's 8 groups side by
 * side at every row count: one stream (one row from memory, 2 threads: 0.30 ms against
 * 0.37-0.45 with 8 groups apart, where 8 streams had been what kept its activation table
 * in L1). Q3_K too (880 bytes a group's super-block; one row, 2 threads, Zen 4: 0.51-0.54
 * ms against 0.63-0.66 with pairs of groups apart). The other K formats' blocks (1152-2336
 * bytes) stay a group apart (Q5_K in pairs: 1.03 against 0.78 ms at one row):
 * interleaved, a tile's two halves were two runs of 18-26 lines that start over every
 * block, and from memory took twice the time (Q4_K 0.62 -> 1.3 ms). Rows beyond the last
 * full unit (16 rows, Q2_K and Q3_K 64: wk_repack_unit_rows) keep the file's layout.
 *
 * Layouts, per block index b of a group (c = column 0..7 within the group):
 *   Q8_0x8 (272 bytes): d[8] (f16); qs at 16 + 32*s + 4*c + i = column c's qs[4*s + i], s < 8
 *   Q8_1x8 (288 bytes): d[8], s[8] (f16); qs at 32 as Q8_0x8
 *   Q8_Kx8 (2336 bytes): d[8] (f32); qs at 32 + 32*s + 4*c + i = column c's qs[4*s + i], s < 64;
 *     the columns' bsums (kept, not read) at 2080 + 32*c
 *   Q4_0x8 (144 bytes): d[8] (f16); qs at 16 + 32*s + 4*c + i = column c's qs[4*s + i], s < 4
 *   Q4_1x8 (160 bytes): d[8], m[8] (f16); qs at 32 as Q4_0x8
 *   Q5_0x8 (176 bytes): d[8]; at 16 the fifth bits as a 32-byte plane (wk_q5x8_plane); qs at
 *     48 as Q4_0x8
 *   Q5_1x8 (192 bytes): d[8], m[8]; plane at 32; qs at 64
 *   Q6_Kx8 (1680 bytes): d[8]; scales[16][8] at 16; at 144 + 96*g the 16-element group g
 *     (steps 4g..4g+3, codes stored +32, 0..63) as three planes: byte 32*j + 4*c + i (j < 3)
 *     = code of element 16g + 4j + i of column c in bits 0-5, and in bits 6-7 bits 4-2j and
 *     5-2j of the code of element 16g + 12 + i. Decoding: step j = plane j & 0x3f; step 3 =
 *     ((p0 & 0xc0) | ((p1 >> 2) & 0x30) | ((p2 >> 4) & 0x0c)) >> 2
 *   Q2_Kx8 (672 bytes): d[8], dmin[8]; scale/min bytes [16][8] at 32; at 160 + 128*j the
 *     quad of 16-element groups 4j..4j+3 in 128 bytes: byte 64*(t%2) + 32*h + 4*c + i holds
 *     column c's element 16G + 4t + i (step t < 4) of group G = 4j + h (h < 2) at bits
 *     4*(t/2), and of group G = 4j + 2 + h at bits 4*(t/2) + 2. So two 64-byte loads, one
 *     16-bit shift by 4 of each and masks 3 and 0xc give the 4 steps of groups 4j, 4j + 1
 *     (32 bytes each) and, times 4, of groups 4j + 2, 4j + 3
 *   Q4_Kx8 (1152 bytes per super-block): d[8], dmin[8] (f16); the 6-bit scales and mins
 *     re-encoded for SIMD decoding (see wk_k4x8_encode); qs at 128 + 256*p + 32*s + 4*c + i
 *     = column c's qs[32*p + 4*s + i], p < 4, s < 8
 *   Q5_Kx8 (1408 bytes): Q4_Kx8's 1152, then the fifth bits as 8 planes of 32 bytes: at
 *     1152 + 64*p + 32*u, byte 4*c + i holds at bit 2*s + h the fifth bit of column c's
 *     element 64*p + 32*h + 4*(4*u + s) + i (step 4*u + s of chunk p; h = 0 the low
 *     nibbles, 1 the high), as the Q5_0x8 plane does for its 4 steps
 *   Q3_Kx8 (880 bytes): d[8]; the 16 x 8 stored 6-bit scales (value + 32, index 8*g + c) as
 *     two wk_k4x8_encode halves at 16 and 64; at 112 the 2-bit codes in Q2_Kx8's quads; at
 *     624 + 32*(2*j + h) the third bits of quad j's groups 4j + h and 4j + 2 + h: byte 4*c + i
 *     holds at bit t (4 + t) that of the first (second) group's step t element i. */
#ifndef WICK_CPU_REPACK_H
#define WICK_CPU_REPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/cpu_engine.h"
#include "cpu/pool.h"
#include "quant/blocks.h"
#include "quant/traits.h"

#define WK_REPACK_COLS 8
#ifndef WK_PAIRED_MAX
#define WK_PAIRED_MAX 512
#endif

/* The groups interleaved block by block, for blocks of bb bytes (one block of each of a
 * group's 8 rows): 2 for the 32-element formats (at most 272 bytes), 8 for Q2_K and Q3_K, 1
 * (groups apart) for Q4_K, Q5_K, Q6_K and Q8_K. (Q2_K's 672 bytes in pairs, WK_PAIRED_MAX=672, took 1.2x the time
 * at one row from memory, 8 groups side by side: two runs of 11 lines every block.) */
static inline int wk_repacked_ways(size_t bb)
{
    return bb <= WK_PAIRED_MAX ? 2 : bb == 8 * sizeof(wk_block_q2_K) || bb == 8 * sizeof(wk_block_q3_K) ? 8 : 1;
}

/* Whether a pair's groups are interleaved block by block. */
static inline bool wk_repacked_paired(size_t bb) { return wk_repacked_ways(bb) == 2; }

/* The offset of block b of group g in a repacked weight whose groups are gs bytes and whose
 * blocks bb, from the start of a unit (an even group; in Q2_K a multiple of 8). */
static inline size_t wk_repacked_at(int64_t g, int64_t b, size_t gs, size_t bb)
{
    const int64_t ways = wk_repacked_ways(bb);
    return (size_t)(g / ways * ways) * gs + (size_t)(ways * b + g % ways) * bb;
}

/* The distance between a group's consecutive blocks. */
static inline size_t wk_repacked_step(size_t bb) { return (size_t)wk_repacked_ways(bb) * bb; }

/* The rows repacked together (what a thread's chunk of columns starts on): a pair of
 * groups, in Q2_K and Q3_K an octet. */
static inline int64_t wk_repack_unit_rows(wk_type t)
{
    const int ways = wk_repacked_ways(WK_REPACK_COLS * wk_traits(t)->block_bytes);
    return WK_REPACK_COLS * (ways > 2 ? ways : 2);
}

/* Kernels of the repacked layouts (x86/repack_avx2.c). nc must be a multiple of the type's
 * unit (wk_repack_unit_rows) and w the start of one. NULL when the type has none. */
wk_gemm_fn wk_cpu_repacked_gemm(wk_type t, wk_isa isa);

/* The kernel of the repacked layout for weights that come from memory, where it differs from
 * wk_cpu_repacked_gemm's (NULL: it does not). The AVX-512 Q4_K, Q5_K and Q6_K kernels read
 * one group at a time at one row there: one memory stream a thread, where two groups in one
 * register are two (Q4_K m=1 from memory on the Zen 5 development machine, 2 threads: 97%
 * of the bandwidth read beside it against 86%). Q4_K and Q5_K fill both halves of a register
 * with one group's consecutive steps, so the one stream costs little compute; Q6_K's high
 * half is a copy (its lone block that fills both halves was no faster from memory). */
wk_gemm_fn wk_cpu_repacked_gemm_streamed(wk_type t, wk_isa isa);

/* If w's type has a repacked layout for isa, rearrange its bytes in place (w->layout
 * becomes WK_LAYOUT_REPACKED) and return the kernel and the number of leading rows
 * repacked (a multiple of wk_repack_unit_rows); otherwise *gemm = NULL and *n_packed = 0. The work is shared
 * by pool's threads (NULL: the calling thread). WICK_NO_REPACK (set, not "0") turns repacking off. */
wk_status wk_cpu_repack(wk_qtensor *w, wk_isa isa, wk_pool *pool, wk_gemm_fn *gemm, int64_t *n_packed);

/* Rearranging a weight in place, for both layouts (this one and octets.h): fn(t, src, dst, k)
 * writes one unit of unit_rows rows from src (the file's layout, a copy) to dst.
 * wk_cpu_rearrange_rows does it for w's leading whole units, shared by pool's threads (NULL:
 * the calling thread), through one unit of temporary memory per thread. */
typedef void (*wk_unit_fn)(wk_type t, const uint8_t *src, uint8_t *dst, int64_t k);
wk_status wk_cpu_rearrange_rows(wk_qtensor *w, wk_pool *pool, int64_t unit_rows, wk_unit_fn fn);
/* WICK_NO_REPACK set (not "0"): weights keep the file's layout in every form. */
bool wk_cpu_rearrange_off(void);

/* Repack the leading units (wk_repack_unit_rows) of groups of n rows of type t (src, file layout, k
 * elements a row) into dst (as many bytes; dst != src). */
void wk_cpu_repack_rows(wk_type t, const void *src, void *dst, int64_t n, int64_t k);

/* A tile kernel of R activation rows x S adjacent 8-column groups of gs bytes from w (an
 * even group when S > 1; group q's block b at w + wk_repacked_at(q, b, gs, ...)):
 * y[r * ldy + 8 q + c] for group q. aux and first are what a type's kernel needs (block
 * sums, lane offsets; first: start from zero, else add to y). */
typedef void (*wk_tile_fn)(int64_t nb, const uint8_t *w, size_t gs, const char *x, size_t xs,
                           const void *aux, bool first, float *y, size_t ldy);

/* The ng groups (whole units) of a row tile, S side by side: tiles[l] takes S = 2^l groups
 * (NULL: none). Each unit of interleaved groups is one memory stream (each group one in
 * Q4_K and Q6_K), and on processors where one stream per core reads well below the memory's
 * bandwidth (the Xeon test host: 22 against 30 GB/s on 2 cores, src/cpu/bandwidth.c),
 * reading several at once is what reaches it (wk_cpu_streams_log2, wk_tile_most). The
 * largest S up to 2^most (but at least an interleaved unit's groups: one stream, not runs
 * with gaps) that fits the groups left is taken, so a tile of S groups starts on a multiple
 * of S; each column's operations do not depend on S. */
static inline void wk_tile_groups(int most, wk_tile_fn const tiles[4], int64_t ng, int64_t nb, const uint8_t *w,
                                  size_t gs, size_t bb, const char *x, size_t xs, const void *aux, bool first,
                                  float *y, size_t ldy)
{
    while (1 << most < wk_repacked_ways(bb)) most++;
    for (int64_t g = 0; g < ng;) {
        int l = most;
        while (l > 0 && (!tiles[l] || ng - g < (1 << l))) l--;
        tiles[l](nb, w + wk_repacked_at(g, 0, gs, bb), gs, x, xs, aux, first, y + 8 * g, ldy);
        g += 1 << l;
    }
}
#endif
