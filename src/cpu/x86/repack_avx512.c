/* AVX-512 VNNI few-row kernels of the repacked layouts (cpu/repack.h): one
 * _mm256_dpbusd_epi32 does what takes maddubs + madd + add on AVX2 (four u8 x s8
 * products summed into each 32-bit lane, without the 16-bit saturation), and
 * _mm256_dpwssd_epi32 multiplies a group's 32-bit sum (when it fits 16 bits) by its scale
 * and adds it. The integer sums are the same as the AVX2 kernels', and the float steps
 * are the same helpers or their operations lane by lane (tiles_x86.h), so are the results.
 * Every type but Q2_K takes tiles of 1 to 4 rows (repeated) for every row count; Q2_K up to 7 rows, its
 * own many-row kernel (super-blocks decoded with the scales folded into the codes) from there.
 * One row reads 8 groups side by side.
 * The tiles of every type work in 512-bit registers, two column groups per register
 * (below): 512-bit dpbusd and dpwssd issue on two ports as the 256-bit ones do, so twice the
 * products per instruction, and a group's decoding serves two column groups. */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "cpu/x86/tiles_x86.h"
#include "cpu/x86/repack_rows_avx512.h"
#include "cpu/x86/vnni_avx512.h"
#include "quant/blocks.h"

/* A 4-byte word of activation codes in every 32-bit lane. The tiles keep it a register
 * shared by the groups side by side; as vpdpbusd's broadcast operand (vnni_avx512.h) it
 * measured slower at 1-2 rows (Q4_0 m = 2 0.074 -> 0.088 ms, one thread) and twice the time
 * in the Q2_K many-row kernel, and within 5% elsewhere. */
WK_INLINE __m512i wk_bcast4z(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* The rows' Q8_K super-blocks b and their 4 chains of integer sums at zero (the K-type blocks). */
WK_INLINE void wk512_q8_K_rows(const int R, const char *x, size_t xs, int64_t b, const wk_block_q8_K **xb,
                               __m512i (*ch)[4])
{
    for (int r = 0; r < R; r++) {
        xb[r] = (const wk_block_q8_K *)(x + r * xs) + b;
        for (int j = 0; j < 4; j++) ch[r][j] = _mm512_setzero_si512();
    }
}

/* ---- Q6_Kx8 in 512-bit registers: two column groups (two weight streams) per register ----
 * On these processors 512-bit dpbusd and dpwssd issue on two ports, as the 256-bit ones do,
 * so a zmm does twice the products per instruction; the simple operations take two ports
 * instead of three (4/3 of the bits per cycle), the shuffles one instead of two. A register
 * holds the same 16-element group of two adjacent 8-column groups: each half is loaded from
 * its own stream, and both halves meet the same activations, so those come as embedded
 * broadcasts from memory ({1to16}) at no vector operation. Per row and group: the 4 steps'
 * dpbusd into two 2-step sums that start at the row's lane offsets (-32 x the sum of the 8
 * activations each meets: |sum| <= 8 x 32 x 127 fits 16 bits), then one dpwssd per sum with
 * the scales (high halves zero), to 4 chains. The integer sums equal the AVX2 tiles' and the
 * float step is wk_acc_q6_K, so the bits do. */

/* out[2g + h] = -32 x the sum of the activations of steps 2h and 2h + 1 of group g (elements
 * 16g + 8h .. 16g + 8h + 7): sums of 8 bytes by sad against the codes' bias of 128. */
static void wk_vnni_q6_lane_offs(const int8_t *qs, int32_t *out)
{
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int q = 0; q < 8; q++) {
        __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(qs + 32 * q)), bias);
        __m256i sad = _mm256_sad_epu8(v, _mm256_setzero_si256()); /* 4 x (sum + 1024) */
        __m128i s = _mm256_cvtepi64_epi32(sad);
        s = _mm_mullo_epi32(_mm_sub_epi32(s, _mm_set1_epi32(1024)), _mm_set1_epi32(-32));
        _mm_storeu_si128((__m128i *)(out + 4 * q), s);
    }
}

/* Slice i of n of the prefetch, ahead bytes ahead, of a pair's blocks b0 and b1 (bytes each;
 * b1 == b0: one). */
WK_INLINE void wk_prefetch_pair_slice(const uint8_t *b0, const uint8_t *b1, size_t bytes, size_t ahead, int i, int n)
{
    for (size_t off = bytes * i / n; off < bytes * (i + 1) / n; off += 64) {
        _mm_prefetch((const char *)b0 + ahead + off, _MM_HINT_T0);
        if (b1 != b0) _mm_prefetch((const char *)b1 + ahead + off, _MM_HINT_T0);
    }
}

/* The tiles of 2 to 4 rows (and Q2_K's at every count) prefetch a pair's blocks into L2 (not
 * L1), ahead bytes ahead of the stream (WK_L2_AHEAD, 8 KiB; WK_L2_AHEAD_FAR for the one-row
 * tiles of WK_FAR_ONE_ROW); the K formats' block functions add their L1 slices 2 KiB
 * ahead. With only the L1 prefetch the first loads of a block still waited for memory.
 * Q2_K (Zen 5, 2 threads, [8192, 4096] from memory): 2 rows 0.63-0.64 ms -> 0.36-0.37, 4 rows
 * 0.79-0.80 -> 0.53; one thread, 2 rows 1.19-1.23 -> 0.56, against 0.54 in the cache; L2
 * 2 KiB ahead 0.90-0.92, none 1.57-1.62. The other formats (one thread, three alternated
 * rounds): 4 rows Q8_0 1.73-2.00 -> 1.44-1.66, Q5_0 1.25-1.40 -> 1.11-1.12, Q4_K 1.19-1.24 ->
 * 1.13-1.15; 2 rows Q5_0 0.99-1.28 -> 0.86-1.10, Q4_K 1.01-1.22 -> 0.98-0.99. */
WK_INLINE void wk_prefetch_pair_l2(const uint8_t *b0, const uint8_t *b1, size_t bytes, size_t ahead)
{
    wk_prefetch_block_l2_at(b0, bytes, ahead);
    if (b1 != b0) wk_prefetch_block_l2_at(b1, bytes, ahead);
}

/* How far ahead of block b of nb (bb bytes) a tile of S groups (gs bytes each) prefetches a
 * stream (a unit's of interleaved groups, or in Q4_K and Q6_K a group's: repack.h): WK_PF_AHEAD, but a stream's
 * last blocks the same stream of the next tile (past the tile's other streams), not the
 * next stream's start, which its own stream has read already (a tile of one stream goes on
 * into the next tile). The K
 * types' groups are short (Q2_K: 10.5 KiB at k = 4096, Q6_K 26 KiB), and their first 2 KiB
 * were read with no prefetch ahead: at one row from memory this took 0.90 of the time for
 * Q2_K. Every pair tile takes it (Q4_K m = 1 from memory, Zen 5, 2 threads: 84-87% -> 86-89%
 * of the bandwidth read beside it at about 35 GB/s, 57-58% -> 59-62% at 60; the 32-element
 * formats unchanged). */
WK_INLINE size_t wk_stream_ahead(int64_t b, int64_t nb, int S, size_t gs, size_t bb)
{
    const size_t step = wk_repacked_step(bb), ways = (size_t)wk_repacked_ways(bb);
    const size_t past = (size_t)S > ways ? (size_t)S - ways : 0;
    return S <= 1 || (size_t)b * step + WK_PF_AHEAD < (size_t)nb * step ? WK_PF_AHEAD : WK_PF_AHEAD + past * gs;
}

/* One super-block of the groups at b0 and b1 (b1 == b0 for a lone group) for R rows. */
WK_INLINE void wk_vnni_q6z_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x, size_t xs,
                                 int64_t b, int64_t nb, const void *aux, size_t ahead, __m256 *acc0, __m256 *acc1)
{
    (void)nb;
    const int32_t *lo = aux;
    const __m512i m3f = _mm512_set1_epi8(0x3f), mc0 = _mm512_set1_epi8((char)0xc0);
    const __m512i mf0 = _mm512_set1_epi8((char)0xf0), low16 = _mm512_set1_epi32(0xffff);
    const wk_block_q8_K *xb[4];
    __m512i ch[4][4];
    wk512_q8_K_rows(R, x, xs, b, xb, ch);
    /* g unrolled by two, so that each copy's chains (j = 2 (g % 2), j + 1) are registers,
     * not an array in memory indexed at run time */
    for (int g2 = 0; g2 < 16; g2 += 2)
#pragma GCC unroll 2
        for (int gg = 0; gg < 2; gg++) {
            const int g = g2 + gg;
            wk_prefetch_pair_slice(b0, b1, 8 * sizeof(wk_block_q6_K), ahead, g, 16);
            const uint8_t *g0 = b0 + 144 + 96 * g, *g1 = b1 + 144 + 96 * g;
            const __m512i p0 = wk512_pair(g0, g1), p1 = wk512_pair(g0 + 32, g1 + 32);
            const __m512i p2 = wk512_pair(g0 + 64, g1 + 64);
            const __m512i q0 = _mm512_and_si512(p0, m3f), q1 = _mm512_and_si512(p1, m3f);
            const __m512i q2 = _mm512_and_si512(p2, m3f);
            /* step 3: bits 6-7 of p0, p1, p2 to bits 4-5, 2-3, 0-1 (two bit selects; the 16-bit
             * shifts move the bits that count within their bytes) */
            __m512i t = _mm512_ternarylogic_epi32(mc0, p0, _mm512_srli_epi16(p1, 2), 0xca);
            t = _mm512_ternarylogic_epi32(mf0, t, _mm512_srli_epi16(p2, 4), 0xca);
            const __m512i q3 = _mm512_and_si512(_mm512_srli_epi16(t, 2), m3f);
            /* the 8 + 8 int8 scales as int32 with zero high halves (the dpwssd pairs) */
            __m128i s8 = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(b0 + 16 + 8 * g)),
                                            _mm_loadl_epi64((const __m128i *)(b1 + 16 + 8 * g)));
            const __m512i sc = _mm512_and_si512(_mm512_cvtepi8_epi32(s8), low16);
            for (int r = 0; r < R; r++) {
                const int8_t *xq = xb[r]->qs + 16 * g;
                const int32_t *lr = lo + (r * WK_OFFS_SPAN + b) * 32 + 2 * g;
                __m512i a = _mm512_dpbusd_epi32(_mm512_set1_epi32(lr[0]), q0, wk_bcast4z(xq));
                __m512i c = _mm512_dpbusd_epi32(_mm512_set1_epi32(lr[1]), q2, wk_bcast4z(xq + 8));
                a = _mm512_dpbusd_epi32(a, q1, wk_bcast4z(xq + 4));
                c = _mm512_dpbusd_epi32(c, q3, wk_bcast4z(xq + 12));
                const int j = 2 * gg;
                ch[r][j] = _mm512_dpwssd_epi32(ch[r][j], a, sc);
                ch[r][j + 1] = _mm512_dpwssd_epi32(ch[r][j + 1], c, sc);
            }
        }
    __m256i i0[4], i1[4];
    for (int r = 0; r < R; r++) {
        __m512i s = _mm512_add_epi32(_mm512_add_epi32(ch[r][0], ch[r][1]), _mm512_add_epi32(ch[r][2], ch[r][3]));
        i0[r] = _mm512_castsi512_si256(s);
        i1[r] = _mm512_extracti64x4_epi64(s, 1);
    }
    wk_acc_q6_K(R, b0, xb, i0, acc0);
    wk_acc_q6_K(R, b1, xb, i1, acc1);
}

/* The block loop of a pair tile: for block b of every pair p of the S groups (one group:
 * b1 = b0), the two groups' blocks b0 and b1 prefetched, then CALL: at 2-4 rows, for Q2_K
 * and Q3_K, and for a lone Q4_K or Q5_K group into L2 (wk_prefetch_pair_l2; Q3_K at one row, Zen 5,
 * [8192, 4096] from memory, three alternated rounds: one thread 1.43-1.47 -> 1.21-1.27 ms, two
 * 0.83-0.97 -> 0.65-0.77; the lone Q4_K group, Zen 4, one thread: 0.76-0.79 -> 0.71-0.72: WK_L2_PF),
 * else into L1, ahead bytes ahead where wk_cpu_one_row_prefetch says so, not on AMD processors
 * (but Q4_K, Q5_K and Q6_K prefetch their own slices into L1 at every row count:
 * wk_prefetch_pair_slice). */
/* Whether a pair tile of R rows and S groups of BB-byte blocks prefetches into L2. */
#define WK_L2_PF(BB, R, S)                                                                         \
    ((R) >= 2 || (BB) == sizeof(wk_block_q2_K) || (BB) == sizeof(wk_block_q3_K) ||                 \
     (((BB) == sizeof(wk_block_q4_K) || (BB) == sizeof(wk_block_q5_K)) && (S) == 1))
/* The one-row tiles whose L2 prefetch reaches WK_L2_AHEAD_FAR ahead: Q3_K's (Zen 4, two threads,
 * [8192, 4096] from memory: 0.52-0.58 -> 0.42-0.44 ms, 74-78% -> 93-96% of the bandwidth; at 2-4
 * rows that distance was 5-17% slower) and the lone Q5_K group's (0.69-0.72 -> 0.66-0.70 ms; the
 * lone Q4_K group's no faster). Q2_K's one row has a tile of its own (WK_Q2R1_TILE), with the
 * same distance. */
#define WK_FAR_ONE_ROW(BB, R, S)                                                                   \
    ((R) == 1 && ((BB) == sizeof(wk_block_q3_K) || ((BB) == sizeof(wk_block_q5_K) && (S) == 1)))
#define WK_PAIR_BLOCKS(BB, R, S, CALL)                                                             \
    const bool pf_l1 = (BB) < sizeof(wk_block_q4_K) && wk_cpu_one_row_prefetch();                 \
    for (int64_t b = 0; b < nb; b++) {                                                             \
        const size_t ahead = wk_stream_ahead(b, nb, S, gs, 8 * (BB));                              \
        for (int p = 0; p < P; p++) {                                                              \
            const uint8_t *b0 = w + wk_repacked_at(2 * p, b, gs, 8 * (BB));                        \
            const uint8_t *b1 = (S) == 1 ? b0 : w + wk_repacked_at(2 * p + 1, b, gs, 8 * (BB));    \
            if (WK_L2_PF(BB, R, S))                                                                \
                wk_prefetch_pair_l2(b0, b1, 8 * (BB), WK_FAR_ONE_ROW(BB, R, S) ? WK_L2_AHEAD_FAR : WK_L2_AHEAD); \
            else if (pf_l1) wk_prefetch_pair_slice(b0, b1, 8 * (BB), ahead, 0, 1);                      \
            CALL;                                                                                  \
        }                                                                                          \
    }

/* NAME##_tile_R_S (a wk_tile_fn) for blocks of BB bytes in 512-bit registers: S = 1, one group
 * (the registers' high halves a copy, thrown away); else S / 2 pairs of adjacent groups side by
 * side, each pair two streams. NAME##_block(R, b0, b1, x, xs, b, nb, aux, acc0, acc1) does
 * block b of the pair's groups b0 and b1: a column's operations are those of any pair. */
#define WK_PAIR_TILE(NAME, BB, R, S)                                                               \
    WK_TILE_HEAD(NAME, R, S)                                                                       \
    {                                                                                              \
        enum { P = (S + 1) / 2 };                                                                  \
        __m256 acc[2 * P][R];                                                                      \
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++)                                                            \
                acc[q][r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + 8 * q);    \
        WK_PAIR_BLOCKS(BB, R, S, NAME##_block(R, b0, b1, x, xs, b, nb, aux, ahead, acc[2 * p], acc[2 * p + 1]));\
        for (int q = 0; q < S; q++)                                                                \
            for (int r = 0; r < R; r++) _mm256_storeu_ps(y + r * ldy + 8 * q, acc[q][r]);          \
    }
/* The tiles of a pair block and their table, [rows - 1][index of the side-by-side count]. */
#define WK_PAIR_TILES(NAME, BB)                                                                    \
    WK_PAIR_TILE(NAME, BB, 1, 1) WK_PAIR_TILE(NAME, BB, 1, 2) WK_PAIR_TILE(NAME, BB, 1, 4)         \
    WK_PAIR_TILE(NAME, BB, 2, 1) WK_PAIR_TILE(NAME, BB, 2, 2) WK_PAIR_TILE(NAME, BB, 2, 4)         \
    WK_PAIR_TILE(NAME, BB, 3, 1) WK_PAIR_TILE(NAME, BB, 3, 2) WK_PAIR_TILE(NAME, BB, 4, 1)         \
    WK_PAIR_TILE(NAME, BB, 4, 2)                                                                   \
    static wk_tile_fn const NAME##_tiles[4][4] = {                                                 \
        {NAME##_tile_1_1, NAME##_tile_1_2, NAME##_tile_1_4},                                       \
        {NAME##_tile_2_1, NAME##_tile_2_2, NAME##_tile_2_4},                                       \
        {NAME##_tile_3_1, NAME##_tile_3_2},                                                        \
        {NAME##_tile_4_1, NAME##_tile_4_2}};
WK_PAIR_TILES(wk_vnni_q6z, sizeof(wk_block_q6_K))

static void wk_vnni_packed_q6_K(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                               const void *x, size_t xs, float *y, size_t ldy)
{
    wk_run_offset_tiles(wk_vnni_q6z_tiles, wk_vnni_q6_lane_offs, 32, sizeof(wk_block_q6_K), -1, k, nr, nc, w, ws, x, xs, y, ldy);
}
/* The same for weights read from memory: one row one group at a time (repack.h,
 * wk_cpu_repacked_gemm_streamed). */
static void wk_vnni_packed_q6_K_streamed(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                                         const void *x, size_t xs, float *y, size_t ldy)
{
    wk_run_offset_tiles(wk_vnni_q6z_tiles, wk_vnni_q6_lane_offs, 32, sizeof(wk_block_q6_K), 0, k, nr, nc, w, ws, x, xs, y, ldy);
}

/* ---- Q2_Kx8 in 512-bit registers, two column groups per register (as Q6_K above): per two
 * groups of a quad (repack.h) two loads of each stream, 2 shifts and 8 masks for their 8 steps,
 * the scales of the super-block made once; per row and group 4 dpbusd on embedded broadcasts
 * and a dpwssd, the groups whose codes come times 4 in chains of their own. The mins meet the
 * block sums once per super-block, as in the 256-bit tile. ---- */
/* The steps of two groups from the 64 bytes of steps 0, 2 (a) and of steps 1, 3 (b) of a
 * Q2_Kx8 quad (repack.h), one 16-bit shift each: q[0..3] the steps of the group at bits
 * 0-1 and 4-5 (codes 0..3), q[4..7] those of the group at bits 2-3 and 6-7, times 4 (its
 * sums of 16 products stay within 16 bits: 4 x 3 x 128 x 16 = 24576). */
WK_INLINE void wk_q2z_quad_codes(__m512i a, __m512i b, __m512i q[8])
{
    const __m512i m3 = _mm512_set1_epi8(3), mc = _mm512_set1_epi8(0x0c);
    const __m512i a4 = _mm512_srli_epi16(a, 4), b4 = _mm512_srli_epi16(b, 4);
    q[0] = _mm512_and_si512(a, m3), q[1] = _mm512_and_si512(b, m3);
    q[2] = _mm512_and_si512(a4, m3), q[3] = _mm512_and_si512(b4, m3);
    q[4] = _mm512_and_si512(a, mc), q[5] = _mm512_and_si512(b, mc);
    q[6] = _mm512_and_si512(a4, mc), q[7] = _mm512_and_si512(b4, mc);
}

/* p, as a pointer the compiler cannot see through: bytes stored at p are then read back from
 * memory (a zero-extension from memory is one operation; GCC otherwise keeps the stored
 * registers and extracts their 128-bit lanes, one more operation each). */
WK_INLINE const uint8_t *wk_opaque(const uint8_t *p)
{
    __asm__("" : "+r"(p));
    return p;
}

/* The 4-bit scales of a Q2_Kx8 super-block's groups at b0 and b1 (b1 == b0: one) as bytes, in
 * sc[16 g .. 16 g + 15] for group g (b0's 8 columns, then b1's): per super-block 4 shuffles and 4
 * masks, where each group's scales took a shuffle and a mask. */
WK_INLINE void wk_q2z_pair_scales(const uint8_t *b0, const uint8_t *b1, uint8_t *sc)
{
    const __m512i m15 = _mm512_set1_epi8(15);
    /* qword i of b0's and b1's 64 bytes: groups 8h + i; interleaved, groups 8h..8h+3, 8h+4..8h+7 */
    const __m512i lo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), hi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    for (int h = 0; h < 2; h++) {
        const __m512i a = _mm512_loadu_si512((const void *)(b0 + 32 + 64 * h));
        const __m512i c = _mm512_loadu_si512((const void *)(b1 + 32 + 64 * h));
        _mm512_store_si512((void *)(sc + 128 * h), _mm512_and_si512(_mm512_permutex2var_epi64(a, lo, c), m15));
        _mm512_store_si512((void *)(sc + 128 * h + 64), _mm512_and_si512(_mm512_permutex2var_epi64(a, hi, c), m15));
    }
}

/* The end of a K-type pair block with mins (Q2_K, Q4_K): a row's 4 chains of sums and its
 * min sums, each register split into the two groups' halves, through the float step. */
WK_INLINE void wk_pair_acc_q8_K_min(const int R, const uint8_t *b0, const uint8_t *b1,
                                    const wk_block_q8_K *const *xb, __m512i (*ch)[4], const __m512i *msum,
                                    __m256 *acc0, __m256 *acc1)
{
    __m256i i0[4], i1[4], n0[4], n1[4];
    for (int r = 0; r < R; r++) {
        __m512i s = _mm512_add_epi32(_mm512_add_epi32(ch[r][0], ch[r][1]), _mm512_add_epi32(ch[r][2], ch[r][3]));
        i0[r] = _mm512_castsi512_si256(s), i1[r] = _mm512_extracti64x4_epi64(s, 1);
        n0[r] = _mm512_castsi512_si256(msum[r]), n1[r] = _mm512_extracti64x4_epi64(msum[r], 1);
    }
    wk_acc_q8_K_min(R, b0, xb, i0, n0, acc0);
    wk_acc_q8_K_min(R, b1, xb, i1, n1, acc1);
}

WK_INLINE void wk_vnni_q2z_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x, size_t xs,
                                 int64_t b, int64_t nb, const void *aux, size_t ahead, __m256 *acc0, __m256 *acc1)
{
    (void)nb, (void)aux, (void)ahead;
    /* column c's bytes of two consecutive groups as an int16 pair (in each 128-bit lane) */
    const __m256i pairs8 = _mm256_setr_epi8(0, -1, 8, -1, 1, -1, 9, -1, 2, -1, 10, -1, 3, -1, 11, -1,
                                            4, -1, 12, -1, 5, -1, 13, -1, 6, -1, 14, -1, 7, -1, 15, -1);
    const __m512i pairs = _mm512_inserti64x4(_mm512_castsi256_si512(pairs8), pairs8, 1);
    const wk_block_q8_K *xb[4];
    __m512i ch[4][4], msum[4];
    wk512_q8_K_rows(R, x, xs, b, xb, ch);
    for (int r = 0; r < R; r++) msum[r] = _mm512_setzero_si512();
    _Alignas(64) uint8_t sc[256];
    wk_q2z_pair_scales(b0, b1, sc);
    const uint8_t *scp = wk_opaque(sc);
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) { /* groups 4j + h and, its codes times 4, 4j + 2 + h */
            __m512i q[8];
            wk_q2z_quad_codes(wk512_pair(b0 + 160 + 128 * j + 32 * h, b1 + 160 + 128 * j + 32 * h),
                              wk512_pair(b0 + 224 + 128 * j + 32 * h, b1 + 224 + 128 * j + 32 * h), q);
            __m512i scv[2];
            for (int e = 0; e < 2; e++) scv[e] = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(scp + 16 * (4 * j + 2 * e + h))));
            for (int e = 0; e < 2; e++)
                for (int r = 0; r < R; r++) {
                    const int8_t *xq = xb[r]->qs + 16 * (4 * j + 2 * e + h);
                    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[4 * e], wk_bcast4z(xq));
                    p = _mm512_dpbusd_epi32(p, q[4 * e + 1], wk_bcast4z(xq + 4));
                    p = _mm512_dpbusd_epi32(p, q[4 * e + 2], wk_bcast4z(xq + 8));
                    p = _mm512_dpbusd_epi32(p, q[4 * e + 3], wk_bcast4z(xq + 12));
                    ch[r][2 * e + h] = _mm512_dpwssd_epi32(ch[r][2 * e + h], p, scv[e]);
                }
        }
    for (int r = 0; r < R; r++) { /* chains 2, 3 hold 4 x their sums */
        ch[r][2] = _mm512_srai_epi32(ch[r][2], 2);
        ch[r][3] = _mm512_srai_epi32(ch[r][3], 2);
    }
    for (int q = 0; q < 8; q++) {
        /* groups 2q, 2q + 1: the 16 scale/min bytes of each stream in every 128-bit lane, lanes
         * 0-1 of b0 (columns 0-3, 4-7), lanes 2-3 of b1 */
        __m512i mn = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b0 + 32 + 16 * q)))),
                                        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b1 + 32 + 16 * q))), 1);
        mn = _mm512_srli_epi16(_mm512_shuffle_epi8(mn, pairs), 4);
        for (int r = 0; r < R; r++) {
            int32_t bp; /* block sums 2q and 2q + 1 as an int16 pair */
            memcpy(&bp, &xb[r]->bsums[2 * q], 4);
            msum[r] = _mm512_dpwssd_epi32(msum[r], mn, _mm512_set1_epi32(bp));
        }
    }
    wk_pair_acc_q8_K_min(R, b0, b1, xb, ch, msum, acc0, acc1);
}
/* An octet's 8 groups side by side at every row count: the layout's one stream (repack.h). */
WK_OCTET_TILES(WK_PAIR_TILE, wk_vnni_q2z, sizeof(wk_block_q2_K))
WK_TILES_FN(wk_vnni_tiles_q2_K, wk_vnni_q2z_tiles, 4, 256, false, NULL)

/* ---- Q2_Kx8 for many rows: a super-block of two column groups is decoded once into L1 with
 * each code already multiplied by its group's scale (scale x code <= 15 x 3 fits a byte), so
 * that a row pays one dpbusd per 4 elements x 16 columns and nothing per group: the tiles'
 * dpwssd with the scales (one per group and row) is gone, and the decoding (4 steps' masks and
 * shifts, the scales, one 16-bit multiply a step) is shared by all the rows of the call. The
 * integer sums are the tiles' (sum over groups of scale x (sum of code x activation), exact in
 * 32 bits: at most 256 x 45 x 128), the min sums are the same dpwssd, and the float step of a
 * lane is wk_acc_q8_K_min's, so the bits equal the tiles'. ---- */
typedef struct {
    __m512i w[64];  /* step t: byte 4c + i of half h = scale x code of element 4t + i of column c of group h */
    __m512i mn[8];  /* int16 pairs (min of 16-element groups 2q, 2q + 1) per column, 16 columns */
    __m512 d, dmin; /* the 16 columns' f32 d and dmin */
} wk_q2z_unit;

/* The super-block of groups b0 (columns 0-7) and b1 (8-15). */
WK_INLINE void wk_q2z_decode(const uint8_t *b0, const uint8_t *b1, wk_q2z_unit *u)
{
    const __m512i m15 = _mm512_set1_epi16(15);
    const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m256i pairs8 = _mm256_setr_epi8(0, -1, 8, -1, 1, -1, 9, -1, 2, -1, 10, -1, 3, -1, 11, -1,
                                            4, -1, 12, -1, 5, -1, 13, -1, 6, -1, 14, -1, 7, -1, 15, -1);
    const __m512i pairs = _mm512_inserti64x4(_mm512_castsi256_si512(pairs8), pairs8, 1);
    u->d = wk512_halves(b0, b1);
    u->dmin = wk512_halves(b0 + 16, b1 + 16);
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) { /* groups 4j + h and 4j + 2 + h (its codes times 4: shifted back) */
            __m512i q[8];
            wk_q2z_quad_codes(wk512_pair(b0 + 160 + 128 * j + 32 * h, b1 + 160 + 128 * j + 32 * h),
                              wk512_pair(b0 + 224 + 128 * j + 32 * h, b1 + 224 + 128 * j + 32 * h), q);
            for (int e = 0; e < 2; e++) {
                const int g = 4 * j + 2 * e + h;
                /* each column's scale in both 16-bit halves of its 32-bit lane */
                const __m128i s0 = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(b0 + 32 + 8 * g)), dup);
                const __m128i s1 = _mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)(b1 + 32 + 8 * g)), dup);
                const __m512i sc = _mm512_and_si512(_mm512_cvtepu8_epi16(_mm256_set_m128i(s1, s0)), m15);
                for (int t = 0; t < 4; t++) {
                    /* two codes of a column in a 16-bit lane, q0 + 256 q1: times s, s q0 + 256 s q1 */
                    const __m512i c = e ? _mm512_srli_epi16(q[4 + t], 2) : q[t];
                    _mm512_store_si512(&u->w[4 * g + t], _mm512_mullo_epi16(c, sc));
                }
            }
        }
    for (int q = 0; q < 8; q++) {
        __m512i mn = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b0 + 32 + 16 * q)))),
                                        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b1 + 32 + 16 * q))), 1);
        _mm512_store_si512(&u->mn[q], _mm512_srli_epi16(_mm512_shuffle_epi8(mn, pairs), 4));
    }
}

/* Keeps an accumulator in its register (GCC otherwise copies the chains between registers at
 * every step of the loop). */
#define WK_KEEPZ(v) __asm__("" : "+v"(v))

/* Super-block b of R rows x P decoded units (16 columns each): acc (rows as floats apart) +=. */
WK_INLINE void wk_q2z_rows(const int R, const int P, const wk_q2z_unit *u, const char *x, size_t xs,
                           int64_t b, float *acc, size_t as)
{
    const wk_block_q8_K *xb[4];
    __m512i is0[4][2], is1[4][2]; /* even and odd steps: two chains */
    for (int r = 0; r < R; r++) {
        xb[r] = (const wk_block_q8_K *)(x + r * xs) + b;
        for (int p = 0; p < P; p++) is0[r][p] = is1[r][p] = _mm512_setzero_si512();
    }
    for (int t = 0; t < 64; t += 2) {
        for (int p = 0; p < P; p++) {
            const __m512i wv = _mm512_load_si512(&u[p].w[t]);
            for (int r = 0; r < R; r++) {
                is0[r][p] = _mm512_dpbusd_epi32(is0[r][p], wv, wk_bcast4z(xb[r]->qs + 4 * t));
                WK_KEEPZ(is0[r][p]);
            }
        }
        for (int p = 0; p < P; p++) {
            const __m512i wv = _mm512_load_si512(&u[p].w[t + 1]);
            for (int r = 0; r < R; r++) {
                is1[r][p] = _mm512_dpbusd_epi32(is1[r][p], wv, wk_bcast4z(xb[r]->qs + 4 * t + 4));
                WK_KEEPZ(is1[r][p]);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        const __m512 dx = _mm512_set1_ps(xb[r]->d);
        for (int p = 0; p < P; p++) {
            __m512i msum = _mm512_setzero_si512();
            for (int q = 0; q < 8; q++) {
                int32_t bp; /* block sums 2q and 2q + 1 as an int16 pair */
                memcpy(&bp, &xb[r]->bsums[2 * q], 4);
                msum = _mm512_dpwssd_epi32(msum, _mm512_load_si512(&u[p].mn[q]), _mm512_set1_epi32(bp));
            }
            const __m512i s = _mm512_add_epi32(is0[r][p], is1[r][p]);
            float *ap = acc + as * r + 16 * p;
            __m512 a = _mm512_load_ps(ap);
            a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(u[p].d, dx), a);
            a = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(u[p].dmin, dx), a);
            _mm512_store_ps(ap, a);
        }
    }
}

/* NAME##_all_rows: the rb rows of a super-block of two decoded units by ROWS(R, P, ...), 4 at a
 * time, then the rest. */
#define WK_UNITS_ALL_ROWS(NAME, UNIT, ROWS)                                                        \
    WK_INLINE void NAME##_all_rows(const UNIT u[2], const char *x, size_t xs, int64_t b, int64_t rb, \
                                   float *acc, size_t as)                                          \
    {                                                                                              \
        int64_t r = 0;                                                                             \
        for (; r + 4 <= rb; r += 4) ROWS(4, 2, u, x + r * xs, xs, b, acc + as * r, as);            \
        switch (rb - r) {                                                                          \
        case 1: ROWS(1, 2, u, x + r * xs, xs, b, acc + as * r, as); break;                         \
        case 2: ROWS(2, 2, u, x + r * xs, xs, b, acc + as * r, as); break;                         \
        case 3: ROWS(3, 2, u, x + r * xs, xs, b, acc + as * r, as); break;                         \
        default: break;                                                                            \
        }                                                                                          \
    }
WK_UNITS_ALL_ROWS(wk_q2z, wk_q2z_unit, wk_q2z_rows)

/* The many-row kernel FN of an octet layout (8 groups, one stream: repack.h) whose super-blocks
 * of two groups (BB bytes a group) DECODE makes into a UNIT and ALL_ROWS does for the rows
 * (acc: as floats apart): an octet per pass, super-block by super-block, its halves decoded into
 * two units each and done for all the rows (up to ROWS) in turn. */
#define WK_OCTET_ROWS_FN(FN, UNIT, DECODE, ALL_ROWS, BB, ROWS)                                     \
    static void FN(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,     \
                   size_t xs, float *y, size_t ldy)                                                \
    {                                                                                              \
        const int64_t nb = k / 256, ng = nc / 8;                                                   \
        const size_t gs = 8 * ws, bb = 8 * (BB), as = 64;                                          \
        const uint8_t *wb = w;                                                                     \
        UNIT u[2];                                                                                 \
        _Alignas(64) float acc[(ROWS) * 64];                                                       \
        for (int64_t r0 = 0; r0 < nr; r0 += (ROWS)) {                                              \
            const int64_t rb = nr - r0 < (ROWS) ? nr - r0 : (ROWS);                                \
            const char *xr = (const char *)x + r0 * xs;                                            \
            for (int64_t g = 0; g < ng; g += 8) {                                                  \
                memset(acc, 0, sizeof(float) * as * (size_t)rb);                                   \
                for (int64_t b = 0; b < nb; b++) {                                                 \
                    /* the octet's super-block two ahead (or the next octet's), into L2: with L1   \
                     * and one ahead (its lines at once), Q2_K at 8 rows took 1.54-1.56 ms, not    \
                     * 1.05 */                                                                     \
                    const int64_t gx = b + 2 < nb ? g : g + 8, bx = b + 2 < nb ? b + 2 : b + 2 - nb; \
                    if (gx < ng && bx < nb) {                                                      \
                        const char *nx = (const char *)wb + wk_repacked_at(gx, bx, gs, bb);        \
                        for (size_t off = 0; off < 8 * bb; off += 64) _mm_prefetch(nx + off, _MM_HINT_T1); \
                    }                                                                              \
                    for (int h = 0; h < 8; h += 4) {                                               \
                        DECODE(wb + wk_repacked_at(g + h, b, gs, bb), wb + wk_repacked_at(g + h + 1, b, gs, bb), &u[0]); \
                        DECODE(wb + wk_repacked_at(g + h + 2, b, gs, bb), wb + wk_repacked_at(g + h + 3, b, gs, bb), &u[1]); \
                        ALL_ROWS(u, xr, xs, b, rb, acc + 8 * h, as);                               \
                    }                                                                              \
                }                                                                                  \
                for (int64_t r = 0; r < rb; r++) memcpy(y + (r0 + r) * ldy + 8 * g, acc + as * r, sizeof(float) * 64); \
            }                                                                                      \
        }                                                                                          \
    }
#ifndef WK_Q2Z_ROWS
#define WK_Q2Z_ROWS 64 /* rows of one pass over an octet (the accumulators: 16 KiB) */
#endif
WK_OCTET_ROWS_FN(wk_vnni_rows_q2_K, wk_q2z_unit, wk_q2z_decode, wk_q2z_all_rows, sizeof(wk_block_q2_K), WK_Q2Z_ROWS)

/* ---- Q2_Kx8 at one row: a register holds two consecutive 16-element groups of one column
 * group (the two 64-byte loads of a quad, one 16-bit shift each and 8 masks give the steps of
 * two such pairs, the second times 4), so the activations of its halves differ:
 * they come from a per-call table of the row's 4-byte words, a 64-byte pattern per pair of
 * groups and step (low half: group 2j's word 8 times, high half: group 2j + 1's), a dpbusd
 * operand from memory. The scales of both groups are one zero-extension of 16 contiguous bytes;
 * the mins of 4 groups one lane shuffle and one byte shuffle, against a pattern of the row's
 * block-sum pairs. An octet's 8 groups (one stream) side by side. The integer sums are the pair tiles', and
 * the float step is wk_acc_q8_K_min: the same bits. (Two rows this way, tables of 68 KiB, were
 * slower than the pair tiles: 1.07-1.14 of their time at m = 2.) ---- */
#define WK_Q2R1_SPAN 16 /* super-blocks whose activation table is made at once (34 KiB) */
typedef struct {
    __m512i x[WK_Q2R1_SPAN][8][4]; /* [super-block][pair of groups][step] */
    __m512i bs[WK_Q2R1_SPAN][4];   /* [super-block][j]: (B 4j, B 4j+1) low half, (B 4j+2, B 4j+3) high */
    int64_t span_start, nb;        /* the span's first super-block, and the row's */
} wk_q2r1_act;

WK_INLINE __m512i wk_two_words(int32_t lo, int32_t hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(lo)), _mm256_set1_epi32(hi), 1);
}

static void wk_q2r1_prepare(const wk_block_q8_K *xb, int64_t sb, wk_q2r1_act *a)
{
    for (int64_t b = 0; b < sb; b++) {
        const int8_t *qs = xb[b].qs;
        for (int j = 0; j < 8; j++)
            for (int t = 0; t < 4; t++) {
                int32_t lo, hi;
                memcpy(&lo, qs + 32 * j + 4 * t, 4);
                memcpy(&hi, qs + 32 * j + 16 + 4 * t, 4);
                a->x[b][j][t] = wk_two_words(lo, hi);
            }
        for (int j = 0; j < 4; j++) {
            int32_t lo, hi;
            memcpy(&lo, &xb[b].bsums[4 * j], 4);
            memcpy(&hi, &xb[b].bsums[4 * j + 2], 4);
            a->bs[b][j] = wk_two_words(lo, hi);
        }
    }
}

WK_INLINE void wk_vnni_q2r1_block(const uint8_t *blk, const char *x, int64_t b, const void *aux, __m256 *acc)
{
    const wk_q2r1_act *a = aux;
    const __m512i m15 = _mm512_set1_epi32(15);
    /* column c's bytes of two consecutive groups as an int16 pair (in each 128-bit lane) */
    const __m256i pairs8 = _mm256_setr_epi8(0, -1, 8, -1, 1, -1, 9, -1, 2, -1, 10, -1, 3, -1, 11, -1,
                                            4, -1, 12, -1, 5, -1, 13, -1, 6, -1, 14, -1, 7, -1, 15, -1);
    const __m512i pairs = _mm512_inserti64x4(_mm512_castsi256_si512(pairs8), pairs8, 1);
    __m512i ch[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()}, msum = _mm512_setzero_si512();
    for (int j = 0; j < 4; j++) { /* a quad: groups 4j, 4j + 1 (pair 2j) and, times 4, 4j + 2, 4j + 3 */
        __m512i q[8];
        wk_q2z_quad_codes(_mm512_loadu_si512((const void *)(blk + 160 + 128 * j)),
                          _mm512_loadu_si512((const void *)(blk + 224 + 128 * j)), q);
        for (int e = 0; e < 2; e++) {
            const int pr = 2 * j + e;
            const __m512i scv = _mm512_and_si512(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 32 + 16 * pr))), m15);
            __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[4 * e], a->x[b][pr][0]);
            p = _mm512_dpbusd_epi32(p, q[4 * e + 1], a->x[b][pr][1]);
            p = _mm512_dpbusd_epi32(p, q[4 * e + 2], a->x[b][pr][2]);
            p = _mm512_dpbusd_epi32(p, q[4 * e + 3], a->x[b][pr][3]);
            ch[e] = _mm512_dpwssd_epi32(ch[e], p, scv);
        }
    }
    ch[1] = _mm512_srai_epi32(ch[1], 2); /* 4 x its sums */
    for (int j = 0; j < 4; j++) { /* groups 4j .. 4j + 3 */
        /* the 16 bytes of groups 4j, 4j + 1 in 128-bit lanes 0-1, of 4j + 2, 4j + 3 in lanes 2-3 */
        const __m512i sm = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(blk + 32 + 32 * j)));
        const __m512i mn = _mm512_srli_epi16(_mm512_shuffle_epi8(_mm512_shuffle_i64x2(sm, sm, 0x50), pairs), 4);
        msum = _mm512_dpwssd_epi32(msum, mn, a->bs[b][j]);
    }
    const __m512i s = _mm512_add_epi32(ch[0], ch[1]);
    const __m256i is = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    const __m256i ms = _mm256_add_epi32(_mm512_castsi512_si256(msum), _mm512_extracti64x4_epi64(msum, 1));
    const wk_block_q8_K *xb = (const wk_block_q8_K *)x + b;
    wk_acc_q8_K_min(1, blk, &xb, &is, &ms, acc);
}
/* The one-row tile of S groups: WK_TILE's loop with wk_stream_ahead's prefetch into L1 and
 * WK_L2_AHEAD_FAR's into L2 (Zen 4, 2 threads, [8192, 4096] from memory, three alternated
 * rounds: 0.347-0.367 ms -> 0.333-0.346 in the slow memory state, about 0.31 -> 0.27 in the
 * fast one; the L2 prefetch alone read no faster than the L1 one). */
#define WK_Q2R1_TILE(S)                                                                            \
    WK_TILE_HEAD(wk_vnni_q2r1, 1, S)                                                               \
    {                                                                                              \
        const wk_q2r1_act *a = aux;                                                                \
        __m256 acc[S][1];                                                                          \
        for (int q = 0; q < S; q++)                                                                \
            acc[q][0] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + 8 * q);                  \
        for (int64_t b = 0; b < nb; b++) {                                                         \
            const size_t ahead = wk_stream_ahead(a->span_start + b, a->nb, S, gs, 8 * sizeof(wk_block_q2_K)); \
            for (int q = 0; q < S; q++) {                                                          \
                const uint8_t *blk = w + wk_repacked_at(q, b, gs, 8 * sizeof(wk_block_q2_K));      \
                wk_prefetch_pair_slice(blk, blk, 8 * sizeof(wk_block_q2_K), ahead, 0, 1);          \
                wk_prefetch_block_l2_at(blk, 8 * sizeof(wk_block_q2_K), WK_L2_AHEAD_FAR);          \
                wk_vnni_q2r1_block(blk, x, b, aux, acc[q]);                                        \
            }                                                                                      \
        }                                                                                          \
        for (int q = 0; q < S; q++) _mm256_storeu_ps(y + 8 * q, acc[q][0]);                        \
    }
WK_Q2R1_TILE(8)

/* One row, its activation table made per span of super-blocks; an octet's 8 groups side by
 * side (its one stream), and each super-block's 2 KiB of the table serves the 8 groups
 * while it is in L1 (the whole table, 36 KiB, is not; Zen 5, 2 threads, [8192, 4096] from
 * memory, groups apart: 0.414-0.421 ms with 4 groups side by side, 0.362-0.366 with 8). */
static void wk_vnni_row_q2_K(int64_t k, const void *w, size_t ws, const void *x, int64_t nc, float *y)
{
    static wk_tile_fn const tiles[4] = {NULL, NULL, NULL, wk_vnni_q2r1_tile_1_8};
    const int64_t nb = k / 256;
    wk_q2r1_act a;
    for (int64_t b0 = 0; b0 < nb; b0 += WK_Q2R1_SPAN) {
        int64_t sb = nb - b0 < WK_Q2R1_SPAN ? nb - b0 : WK_Q2R1_SPAN;
        const wk_block_q8_K *xb = (const wk_block_q8_K *)x + b0;
        wk_q2r1_prepare(xb, sb, &a);
        a.span_start = b0, a.nb = nb;
        const size_t bb = 8 * sizeof(wk_block_q2_K);
        wk_tile_groups(3, tiles, nc / 8, sb, (const uint8_t *)w + wk_repacked_at(0, b0, 8 * ws, bb),
                       8 * ws, bb, (const char *)xb, 0, &a, b0 == 0, y, 0);
    }
}

/* One row: the tiles above; up to 7 rows: the pair tiles (4 rows, repeated); from 8 rows, the
 * decoded super-blocks. */
#ifndef WK_VNNI_Q2_K_MIN_ROWS
#define WK_VNNI_Q2_K_MIN_ROWS 8
#endif
static void wk_vnni_packed_q2_K(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                                const void *x, size_t xs, float *y, size_t ldy)
{
    if (nr == 1) wk_vnni_row_q2_K(k, w, ws, x, nc, y);
    else if (nr >= WK_VNNI_Q2_K_MIN_ROWS) wk_vnni_rows_q2_K(k, nr, nc, w, ws, x, xs, y, ldy);
    else wk_vnni_tiles_q2_K(k, nr, nc, w, ws, x, xs, y, ldy);
}

/* ---- Q4_Kx8 in 512-bit registers, two column groups per register: the 256-bit tile's sums
 * (two of 4 steps per 32-element sub-block, each times its scale by one dpwssd), both groups'
 * scales and mins decoded in registers, 512 bits at a time ---- */
/* The 64 six-bit values of both groups' encodings at ea and eb (wk_k4x8_encode): lo holds
 * values 0-31 (sub-blocks 0-3, index 8 j + c) of ea's group in its low 256 bits and of eb's in
 * its high 256, hi values 32-63: wk_k4x8_decode (k4x8_avx2.h), both groups at once. */
WK_INLINE void wk512_k4x8_decode(const uint8_t *ea, const uint8_t *eb, __m512i *lo, __m512i *hi)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f), m3 = _mm512_set1_epi8(3);
    const __m512i a = wk512_pair(ea, eb);
    const __m512i b = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(ea + 32)))),
                                         _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(eb + 32))), 1);
    const __m512i hl = _mm512_and_si512(_mm512_srlv_epi32(b, _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2)), m3);
    const __m512i hh = _mm512_and_si512(_mm512_srlv_epi32(b, _mm512_setr_epi32(4, 4, 4, 4, 6, 6, 6, 6, 4, 4, 4, 4, 6, 6, 6, 6)), m3);
    *lo = _mm512_or_si512(_mm512_and_si512(a, m4), _mm512_slli_epi16(hl, 4));
    *hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), m4), _mm512_slli_epi16(hh, 4));
}

/* Sub-block j's 8 values of each group (from wk512_k4x8_decode's lo for j < 4, hi for
 * j >= 4) as 16 int32 lanes, zero high halves: the dpwssd operand of the scales. */
WK_INLINE __m512i wk512_k4x8_sub(__m512i v, int j)
{
    const __m512i q = _mm512_permutexvar_epi64(_mm512_set_epi64(0, 0, 0, 0, 0, 0, 4 + j % 4, j % 4), v);
    return _mm512_cvtepu8_epi32(_mm512_castsi512_si128(q));
}

/* The row's sums of its 32-element sub-blocks (16-element block sums added in pairs), those of
 * sub-blocks 2q and 2q + 1 as the int16 pair of dword q' = 0, 1, 4, 5 (q = 0..3): the operand
 * that meets the Q4_K and Q5_K mins. */
WK_INLINE __m512i wk512_sub_block_sum_pairs(const wk_block_q8_K *xb)
{
    const __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)xb->bsums), _mm256_set1_epi16(1));
    return _mm512_castsi256_si512(_mm256_packs_epi32(bs, bs));
}

/* Q4_Kx8 and, with Q5, Q5_Kx8: the fifth bits of its planes (at 1152) ORed into the nibbles;
 * codes up to 31, so a sum goes to its scale's dpwssd every 2 steps (8 products within int16). */
WK_INLINE void wk_vnni_k4z_block(const int R, const bool Q5, const uint8_t *b0, const uint8_t *b1, const char *x,
                                 size_t xs, int64_t b, size_t ahead, __m256 *acc0, __m256 *acc1)
{
    const size_t bb = 8 * (Q5 ? sizeof(wk_block_q5_K) : sizeof(wk_block_q4_K));
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i slo4, shi4, mlo4, mhi4; /* scales and mins of sub-blocks 0-3 and 4-7 */
    wk512_k4x8_decode(b0 + 32, b1 + 32, &slo4, &shi4);
    wk512_k4x8_decode(b0 + 80, b1 + 80, &mlo4, &mhi4);
    const wk_block_q8_K *xb[4];
    __m512i ch[4][4], msum[4];
    wk512_q8_K_rows(R, x, xs, b, xb, ch);
    for (int r = 0; r < R; r++) msum[r] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        const __m512i sv = p < 2 ? slo4 : shi4;
        const __m512i slo = wk512_k4x8_sub(sv, 2 * p), shi = wk512_k4x8_sub(sv, 2 * p + 1);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) { /* steps 4h .. 4h + 3 */
            __m512i plo[4], phi[4];
            for (int r = 0; r < R; r++) plo[r] = phi[r] = _mm512_setzero_si512();
            wk_prefetch_pair_slice(b0, b1, bb, ahead, 2 * p + h, 8);
            const __m512i pl = Q5 ? wk512_pair(b0 + 1152 + 64 * p + 32 * h, b1 + 1152 + 64 * p + 32 * h) : m4;
            const int j = (2 * p + h) % 4;
            for (int s = 4 * h; s < 4 * h + 4; s++) {
                const __m512i v = wk512_pair(b0 + 128 + 256 * p + 32 * s, b1 + 128 + 256 * p + 32 * s);
                __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (Q5) {
                    lo = _mm512_or_si512(lo, wk512_plane_bit4(pl, 2 * (s - 4 * h)));
                    hi = _mm512_or_si512(hi, wk512_plane_bit4(pl, 2 * (s - 4 * h) + 1));
                }
                for (int r = 0; r < R; r++) {
                    const int8_t *xq = xb[r]->qs + 64 * p;
                    plo[r] = _mm512_dpbusd_epi32(plo[r], lo, wk_bcast4z(xq + 4 * s));
                    phi[r] = _mm512_dpbusd_epi32(phi[r], hi, wk_bcast4z(xq + 32 + 4 * s));
                    if (Q5 ? s % 2 == 1 : s == 4 * h + 3) {
                        ch[r][j] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(ch[r][j], plo[r], slo), phi[r], shi);
                        plo[r] = phi[r] = _mm512_setzero_si512();
                    }
                }
            }
        }
    }
    /* the mins of sub-blocks 2q, 2q + 1 as an int16 pair a column: within each 128-bit lane
     * (2q's 8 bytes, then 2q + 1's) interleaved, then group b0's lane and b1's widened */
    const __m512i inter = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    const __m512i mlo = _mm512_shuffle_epi8(mlo4, inter), mhi = _mm512_shuffle_epi8(mhi4, inter);
    __m512i mnp[4];
    mnp[0] = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_shuffle_i64x2(mlo, mlo, 0x08)));
    mnp[1] = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_shuffle_i64x2(mlo, mlo, 0x0d)));
    mnp[2] = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_shuffle_i64x2(mhi, mhi, 0x08)));
    mnp[3] = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(_mm512_shuffle_i64x2(mhi, mhi, 0x0d)));
    for (int r = 0; r < R; r++) {
        const __m512i pk = wk512_sub_block_sum_pairs(xb[r]);
        for (int q = 0; q < 4; q++)
            msum[r] = _mm512_dpwssd_epi32(msum[r], mnp[q], _mm512_permutexvar_epi32(_mm512_set1_epi32(q < 2 ? q : q + 2), pk));
    }
    wk_pair_acc_q8_K_min(R, b0, b1, xb, ch, msum, acc0, acc1);
}
/* Two activation words (8 bytes, w) as word 0 in every lane of the low half and word 1 in
 * every lane of the high half: a broadcast from memory and one in-lane permute (halves: the
 * lanes' 0s and 1s). */
WK_INLINE __m512i wk512_halves_words(int64_t w, __m512i halves)
{
    return _mm512_castps_si512(_mm512_permutevar_ps(_mm512_castsi512_ps(_mm512_set1_epi64(w)), halves));
}
/* A lone Q4_Kx8 (with Q5, Q5_Kx8) group, for the streamed one-row tiles (one memory stream):
 * each register holds two consecutive steps of the group, step 2i in its low half and 2i + 1
 * in its high half, both halves of one sub-block and so of one scale; the activation words
 * meet them through one in-lane permute each, Q5's fifth bits through one rotation by a count
 * a half. A lane takes 8 products before its scale's dpwssd (within 16 bits for Q5's codes up
 * to 31). The halves' chains are added at the end: the same integer sums as the pair block's,
 * so the same bits, with half the code operations of a pair block whose high half is a copy
 * (Zen 4, one thread, [256, 4096] in L2: Q4_K 0.020 -> 0.018 ms, the pair block's time; Q5_K
 * 0.026 against its pair block's 0.023; [8192, 4096] from memory, one thread: Q4_K 0.85 ->
 * 0.71-0.72 ms and Q5_K, from two streams, 1.15-1.19 -> 0.92-1.02, both with the L2 prefetch). */
WK_INLINE void wk_vnni_k4z_lone(const int R, const bool Q5, const uint8_t *b0, const char *x, size_t xs, int64_t b,
                                size_t ahead, __m256 *acc)
{
    const size_t bb = 8 * (Q5 ? sizeof(wk_block_q5_K) : sizeof(wk_block_q4_K));
    const __m512i m4 = _mm512_set1_epi8(0x0f), m16 = _mm512_set1_epi8(0x10);
    /* Q5: the rotations that bring a plane's bit of step 2i (low half), 2i + 1 (high half) to
     * bit 4, for the low nibbles (lo) and the high (hi), i even and odd */
    const __m512i rot_lo[2] = {_mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2),
                               _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 30, 30, 30, 30, 30, 30, 30, 30)};
    const __m512i rot_hi[2] = {_mm512_setr_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1),
                               _mm512_setr_epi32(31, 31, 31, 31, 31, 31, 31, 31, 29, 29, 29, 29, 29, 29, 29, 29)};
    /* sub-blocks 0-3 and 4-7 of the scales (low halves) and the mins (high halves) in one
     * decoding; the scales through memory, each sub-block's read as its dpwssd operand */
    __m512i lo8, hi8;
    wk512_k4x8_decode(b0 + 32, b0 + 80, &lo8, &hi8);
    _Alignas(64) uint8_t sc[128];
    _mm512_store_si512((void *)sc, lo8), _mm512_store_si512((void *)(sc + 64), hi8);
    const uint8_t *scp = wk_opaque(sc);
    const __m512i halves = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const wk_block_q8_K *xb[4];
    __m512i ch[4][4];
    wk512_q8_K_rows(R, x, xs, b, xb, ch);
#pragma GCC unroll 4
    for (int p = 0; p < 4; p++) {
        const uint8_t *sp = scp + 64 * (p / 2) + 16 * (p % 2);
        int64_t s0, s1;
        memcpy(&s0, sp, 8), memcpy(&s1, sp + 8, 8);
        const __m512i slo = _mm512_cvtepu8_epi32(_mm_set1_epi64x(s0)), shi = _mm512_cvtepu8_epi32(_mm_set1_epi64x(s1));
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) { /* steps 4h .. 4h + 3 */
            __m512i plo[4], phi[4];
            for (int r = 0; r < R; r++) plo[r] = phi[r] = _mm512_setzero_si512();
            wk_prefetch_pair_slice(b0, b0, bb, ahead, 2 * p + h, 8);
            const int j = (2 * p + h) % 4;
            const __m512i pl = Q5 ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b0 + 1152 + 64 * p + 32 * h)))
                                  : m4;
            for (int i = 2 * h; i < 2 * h + 2; i++) {
                const __m512i v = _mm512_loadu_si512((const void *)(b0 + 128 + 256 * p + 64 * i));
                __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (Q5) {
                    lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_rolv_epi32(pl, rot_lo[i % 2]), m16));
                    hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_rolv_epi32(pl, rot_hi[i % 2]), m16));
                }
                for (int r = 0; r < R; r++) {
                    int64_t wl, wh;
                    memcpy(&wl, xb[r]->qs + 64 * p + 8 * i, 8), memcpy(&wh, xb[r]->qs + 64 * p + 32 + 8 * i, 8);
                    plo[r] = _mm512_dpbusd_epi32(plo[r], lo, wk512_halves_words(wl, halves));
                    phi[r] = _mm512_dpbusd_epi32(phi[r], hi, wk512_halves_words(wh, halves));
                }
            }
            for (int r = 0; r < R; r++)
                ch[r][j] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(ch[r][j], plo[r], slo), phi[r], shi);
        }
    }
    /* the mins of sub-blocks 2q, 2q + 1 as an int16 pair a column: q = 0 and 1 in m01's
     * halves, 2 and 3 in m23's; they meet the row's block sums of those sub-blocks in the
     * same halves, which are added at the end */
    const __m256i inter = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    const __m512i m01 = _mm512_cvtepu8_epi16(_mm256_shuffle_epi8(_mm512_extracti64x4_epi64(lo8, 1), inter));
    const __m512i m23 = _mm512_cvtepu8_epi16(_mm256_shuffle_epi8(_mm512_extracti64x4_epi64(hi8, 1), inter));
    __m256i isum[4], nsum[4];
    for (int r = 0; r < R; r++) {
        const __m512i pk = wk512_sub_block_sum_pairs(xb[r]);
        const __m512i b01 = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), pk);
        const __m512i b23 = _mm512_permutexvar_epi32(_mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5), pk);
        const __m512i m = _mm512_dpwssd_epi32(_mm512_madd_epi16(m01, b01), m23, b23);
        nsum[r] = _mm256_add_epi32(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
        const __m512i s = _mm512_add_epi32(_mm512_add_epi32(ch[r][0], ch[r][1]), _mm512_add_epi32(ch[r][2], ch[r][3]));
        isum[r] = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    }
    wk_acc_q8_K_min(R, b0, xb, isum, nsum, acc);
}
/* Whether a pair block's b1 is its b0 as the compiler sees it: the lone-group tiles (S = 1),
 * where WK_PAIR_BLOCKS sets b1 = b0; a run-time test in the pair tiles cost them 2-7% (Zen 4,
 * one thread: Q4_K m = 2 0.91-0.93 -> 0.98-1.00 ms from memory, m = 64 1.21 -> 1.24 in the
 * cache). Where the compiler could not tell, the pair block with b1 = b0 gives the same bits. */
#define WK_LONE(b0, b1) (__builtin_constant_p((b1) == (b0)) && (b1) == (b0))
WK_INLINE void wk_vnni_q4kz_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x, size_t xs,
                                  int64_t b, int64_t nb, const void *aux, size_t ahead, __m256 *acc0, __m256 *acc1)
{
    (void)nb, (void)aux;
    if (WK_LONE(b0, b1)) wk_vnni_k4z_lone(R, false, b0, x, xs, b, ahead, acc0);
    else wk_vnni_k4z_block(R, false, b0, b1, x, xs, b, ahead, acc0, acc1);
}
WK_INLINE void wk_vnni_q5kz_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x, size_t xs,
                                  int64_t b, int64_t nb, const void *aux, size_t ahead, __m256 *acc0, __m256 *acc1)
{
    (void)nb, (void)aux;
    if (WK_LONE(b0, b1)) wk_vnni_k4z_lone(R, true, b0, x, xs, b, ahead, acc0);
    else wk_vnni_k4z_block(R, true, b0, b1, x, xs, b, ahead, acc0, acc1);
}
WK_PAIR_TILES(wk_vnni_q4kz, sizeof(wk_block_q4_K))
WK_PAIR_TILES(wk_vnni_q5kz, sizeof(wk_block_q5_K))
/* The tiles (4 rows, repeated) at every row count: with the loops over a super-block's
 * sub-blocks unrolled (the chains in registers, not an array in memory) they took 0.66-0.70
 * of the AVX2 many-row kernel's time from 32 to 256 rows (Zen 5, one thread, [1024, 4096]
 * in cache, best of 9, three rounds), and 0.78 of their own earlier time at 4 to 16 rows. */
WK_TILES_FN(wk_vnni_tiles_q4_K, wk_vnni_q4kz_tiles, 4, 256, false, NULL)
/* For weights read from memory: one row one group at a time (wk_cpu_repacked_gemm_streamed). */
WK_TILES_FN_MOST(wk_vnni_tiles_q4_K_streamed, wk_vnni_q4kz_tiles, 4, 256, false, NULL, 0)
/* Q5_K: the same tiles with its fifth bits, at every row count. */
WK_TILES_FN(wk_vnni_tiles_q5_K, wk_vnni_q5kz_tiles, 4, 256, false, NULL)
WK_TILES_FN_MOST(wk_vnni_tiles_q5_K_streamed, wk_vnni_q5kz_tiles, 4, 256, false, NULL, 0)

/* ---- Q3_Kx8 in 512-bit registers, two column groups per register: per two groups of a quad
 * (repack.h) two loads of each code stream and one of the third-bit plane give their 8 steps:
 * the first group's codes 0..7 (the 2-bit code and the third bit times 4), the second's 4 times
 * that, where the quad keeps its 2-bit codes (bits 2-3: no shift), so that a step is one
 * ternary-logic merge of a code stream and a masked plane bit; per row and group the sum starts
 * at the row's lane offset (wk_q3x8_lane_offs: -4 x the group's sum, times 4 for the second
 * group; the values are the codes - 4), takes 4 dpbusd and goes to the group's signed scale by
 * one dpwssd (its sums of 16 products stay within 16 bits: at most 4 x 16 x 4 x 127 = 32512 for
 * the second group); the second groups' chains are divided by 4 (exactly) at the end. The
 * float step is Q6_K's: one multiply-add per super-block. ---- */
/* (a & mask) | b, one vpternlogd: b holds only bits outside the mask. b, the operand that the
 * instruction overwrites, is the one that dies here (a is a code stream read again). */
WK_INLINE __m512i wk512_merge_bits(__m512i a, __m512i mask, __m512i b)
{
    return _mm512_ternarylogic_epi32(b, a, mask, 0xf8);
}
WK_INLINE void wk_vnni_q3kz_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x, size_t xs,
                                  int64_t b, int64_t nb, const void *aux, size_t ahead, __m256 *acc0, __m256 *acc1)
{
    (void)nb, (void)ahead;
    const int32_t *lo = aux;
    const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(4), mc = _mm512_set1_epi8(0x0c);
    const __m512i m16 = _mm512_set1_epi8(0x10), low16 = _mm512_set1_epi32(0xffff);
    __m512i sv4[4]; /* the stored scales (value + 32) of groups 4v .. 4v + 3, as signed values */
    wk512_k4x8_decode(b0 + 16, b1 + 16, &sv4[0], &sv4[1]);
    wk512_k4x8_decode(b0 + 64, b1 + 64, &sv4[2], &sv4[3]);
    for (int v = 0; v < 4; v++) sv4[v] = _mm512_sub_epi8(sv4[v], _mm512_set1_epi8(32));
    const wk_block_q8_K *xb[4];
    __m512i ch[4][4];
    wk512_q8_K_rows(R, x, xs, b, xb, ch);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) { /* groups 4j + h (steps q[0..3]) and 4j + 2 + h (q[4..7]) */
            const uint8_t *c0 = b0 + 112 + 128 * j + 32 * h, *c1 = b1 + 112 + 128 * j + 32 * h;
            const __m512i a = wk512_pair(c0, c1), bq = wk512_pair(c0 + 64, c1 + 64);
            const __m512i a4 = _mm512_srli_epi16(a, 4), bq4 = _mm512_srli_epi16(bq, 4);
            const __m512i pl = wk512_pair(b0 + 624 + 32 * (2 * j + h), b1 + 624 + 32 * (2 * j + h));
            const __m512i pr1 = _mm512_srli_epi16(pl, 1);
            __m512i q[8];
            q[0] = wk512_merge_bits(a, m3, _mm512_and_si512(_mm512_slli_epi16(pl, 2), m4));
            q[1] = wk512_merge_bits(bq, m3, _mm512_and_si512(_mm512_slli_epi16(pl, 1), m4));
            q[2] = wk512_merge_bits(a4, m3, _mm512_and_si512(pl, m4));
            q[3] = wk512_merge_bits(bq4, m3, _mm512_and_si512(pr1, m4));
            q[4] = wk512_merge_bits(a, mc, _mm512_and_si512(pl, m16));
            q[5] = wk512_merge_bits(bq, mc, _mm512_and_si512(pr1, m16));
            q[6] = wk512_merge_bits(a4, mc, _mm512_and_si512(_mm512_srli_epi16(pl, 2), m16));
            q[7] = wk512_merge_bits(bq4, mc, _mm512_and_si512(_mm512_srli_epi16(pl, 3), m16));
            for (int e = 0; e < 2; e++) {
                const int g = 4 * j + 2 * e + h;
                /* the group's 8 + 8 signed scales as int32 lanes with zero high halves */
                const __m512i q64 = _mm512_permutexvar_epi64(_mm512_set_epi64(0, 0, 0, 0, 0, 0, 4 + g % 4, g % 4), sv4[g / 4]);
                const __m512i sc = _mm512_and_si512(_mm512_cvtepi8_epi32(_mm512_castsi512_si128(q64)), low16);
                for (int r = 0; r < R; r++) {
                    const int8_t *xq = xb[r]->qs + 16 * g;
                    __m512i p = _mm512_dpbusd_epi32(_mm512_set1_epi32(lo[(r * WK_OFFS_SPAN + b) * 16 + g]), q[4 * e], wk_bcast4z(xq));
                    p = _mm512_dpbusd_epi32(p, q[4 * e + 1], wk_bcast4z(xq + 4));
                    p = _mm512_dpbusd_epi32(p, q[4 * e + 2], wk_bcast4z(xq + 8));
                    p = _mm512_dpbusd_epi32(p, q[4 * e + 3], wk_bcast4z(xq + 12));
                    ch[r][2 * e + h] = _mm512_dpwssd_epi32(ch[r][2 * e + h], p, sc);
                }
            }
        }
    __m256i i0[4], i1[4];
    for (int r = 0; r < R; r++) {
        const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(ch[r][0], ch[r][1]),
                                             _mm512_srai_epi32(_mm512_add_epi32(ch[r][2], ch[r][3]), 2));
        i0[r] = _mm512_castsi512_si256(sum);
        i1[r] = _mm512_extracti64x4_epi64(sum, 1);
    }
    wk_acc_q6_K(R, b0, xb, i0, acc0);
    wk_acc_q6_K(R, b1, xb, i1, acc1);
}
/* An octet's 8 groups side by side at every row count: the layout's one stream (repack.h). */
WK_OCTET_TILES(WK_PAIR_TILE, wk_vnni_q3kz, sizeof(wk_block_q3_K))
static void wk_vnni_tiles_q3_K(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                               const void *x, size_t xs, float *y, size_t ldy)
{
    wk_run_offset_tiles(wk_vnni_q3kz_tiles, wk_q3x8_lane_offs, 16, sizeof(wk_block_q3_K), -1, k, nr, nc, w, ws, x,
                        xs, y, ldy);
}

/* ---- Q3_Kx8 for many rows: a super-block of two column groups decoded once into L1 (as Q2_K's
 * many-row kernel does) as its codes 0..7, each group's scales, and -4 x the scales of each pair
 * of groups as int16 pairs. A row pays per group 4 dpbusd and the dpwssd with its scales, on
 * sums from zero (16 products of at most 7 x 127: within 16 bits), and per super-block 8 dpwssd
 * of the scale pairs with its block sums: sum over groups of scale x (sum of code x activation -
 * 4 x the group's sum), the tiles' integer sums exactly, and the float step is theirs, so the
 * bits are. ---- */
typedef struct {
    __m512i q[64];  /* step t: byte 4c + i of half h = code (0..7) of element 4t + i of column c of group h */
    __m512i sc[16]; /* group g's signed scales as int32 lanes with zero high halves */
    __m512i sp[8];  /* -4 x the scales of groups 2q, 2q + 1 as an int16 pair per column */
    __m512 d;       /* the 16 columns' f32 d */
} wk_q3z_unit;

/* The super-block of groups b0 (columns 0-7) and b1 (8-15). */
WK_INLINE void wk_q3z_decode(const uint8_t *b0, const uint8_t *b1, wk_q3z_unit *u)
{
    const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(4), low16 = _mm512_set1_epi32(0xffff);
    __m512i sv4[4];
    wk512_k4x8_decode(b0 + 16, b1 + 16, &sv4[0], &sv4[1]);
    wk512_k4x8_decode(b0 + 64, b1 + 64, &sv4[2], &sv4[3]);
    for (int g = 0; g < 16; g++) {
        const __m512i q64 = _mm512_permutexvar_epi64(_mm512_set_epi64(0, 0, 0, 0, 0, 0, 4 + g % 4, g % 4), sv4[g / 4]);
        const __m512i v = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm512_castsi512_si128(q64)), _mm512_set1_epi32(32));
        u->sc[g] = _mm512_and_si512(v, low16);
    }
    for (int q = 0; q < 8; q++)
        u->sp[q] = _mm512_mullo_epi16(_mm512_or_si512(u->sc[2 * q], _mm512_slli_epi32(u->sc[2 * q + 1], 16)),
                                      _mm512_set1_epi16(-4));
    u->d = wk512_halves(b0, b1);
    for (int j = 0; j < 4; j++)
        for (int h = 0; h < 2; h++) { /* groups 4j + h and 4j + 2 + h (repack.h) */
            const uint8_t *c0 = b0 + 112 + 128 * j + 32 * h, *c1 = b1 + 112 + 128 * j + 32 * h;
            const __m512i a = wk512_pair(c0, c1), bq = wk512_pair(c0 + 64, c1 + 64);
            const __m512i pl = wk512_pair(b0 + 624 + 32 * (2 * j + h), b1 + 624 + 32 * (2 * j + h));
            const int g0 = 4 * j + h, g1 = g0 + 2;
            for (int t = 0; t < 4; t++) {
                /* step t's 2-bit codes at bits 4 (t / 2) (first group) and 4 (t / 2) + 2 (second) */
                const __m512i c = _mm512_srli_epi16(t % 2 ? bq : a, 4 * (t / 2));
                const __m512i h0 = t <= 2 ? _mm512_slli_epi16(pl, 2 - t) : _mm512_srli_epi16(pl, t - 2);
                const __m512i h1 = _mm512_srli_epi16(pl, t + 2);
                _mm512_store_si512(&u->q[4 * g0 + t], wk512_merge_bits(c, m3, _mm512_and_si512(h0, m4)));
                _mm512_store_si512(&u->q[4 * g1 + t],
                                   wk512_merge_bits(_mm512_srli_epi16(c, 2), m3, _mm512_and_si512(h1, m4)));
            }
        }
}

/* Super-block b of R rows x P decoded units (16 columns each): acc (rows as floats apart) +=. */
WK_INLINE void wk_q3z_rows(const int R, const int P, const wk_q3z_unit *u, const char *x, size_t xs,
                           int64_t b, float *acc, size_t as)
{
    const wk_block_q8_K *xb[4];
    __m512i ch[4][2];
    for (int r = 0; r < R; r++) {
        xb[r] = (const wk_block_q8_K *)(x + r * xs) + b;
        for (int p = 0; p < P; p++) {
            __m512i m = _mm512_setzero_si512();
            for (int q = 0; q < 8; q++) {
                int32_t bp; /* block sums 2q and 2q + 1 as an int16 pair */
                memcpy(&bp, &xb[r]->bsums[2 * q], 4);
                m = _mm512_dpwssd_epi32(m, u[p].sp[q], _mm512_set1_epi32(bp));
            }
            ch[r][p] = m;
        }
    }
    for (int g = 0; g < 16; g++)
        for (int p = 0; p < P; p++)
            for (int r = 0; r < R; r++) {
                const int8_t *xq = xb[r]->qs + 16 * g;
                __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_load_si512(&u[p].q[4 * g]), wk_bcast4z(xq));
                s = _mm512_dpbusd_epi32(s, _mm512_load_si512(&u[p].q[4 * g + 1]), wk_bcast4z(xq + 4));
                s = _mm512_dpbusd_epi32(s, _mm512_load_si512(&u[p].q[4 * g + 2]), wk_bcast4z(xq + 8));
                s = _mm512_dpbusd_epi32(s, _mm512_load_si512(&u[p].q[4 * g + 3]), wk_bcast4z(xq + 12));
                ch[r][p] = _mm512_dpwssd_epi32(ch[r][p], s, _mm512_load_si512(&u[p].sc[g]));
                WK_KEEPZ(ch[r][p]);
            }
    for (int r = 0; r < R; r++) {
        const __m512 dx = _mm512_set1_ps(xb[r]->d);
        for (int p = 0; p < P; p++) {
            float *ap = acc + as * r + 16 * p;
            _mm512_store_ps(ap, _mm512_fmadd_ps(_mm512_cvtepi32_ps(ch[r][p]), _mm512_mul_ps(u[p].d, dx), _mm512_load_ps(ap)));
        }
    }
}
WK_UNITS_ALL_ROWS(wk_q3z, wk_q3z_unit, wk_q3z_rows)
/* Rows of one pass over an octet (the accumulators: 16 KiB, beside 11 KiB of units; Zen 4, 2
 * threads, [8192, 4096] from memory: 64 rows 29.4-29.8 ms at m = 256 against 31.0-31.2 with 32,
 * 7.6 against 8.2 at m = 64) */
#ifndef WK_Q3Z_ROWS
#define WK_Q3Z_ROWS 64
#endif
WK_OCTET_ROWS_FN(wk_vnni_rows_q3_K, wk_q3z_unit, wk_q3z_decode, wk_q3z_all_rows, sizeof(wk_block_q3_K), WK_Q3Z_ROWS)

/* Up to 8 rows the pair tiles (4 rows, repeated), from 9 the decoded super-blocks (same
 * measure: 8 rows 1.31-1.32 ms in tiles against 1.42-1.44, 9 rows 1.55-1.57 against 1.61). */
#ifndef WK_VNNI_Q3_K_MIN_ROWS
#define WK_VNNI_Q3_K_MIN_ROWS 9
#endif
static void wk_vnni_packed_q3_K(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                                const void *x, size_t xs, float *y, size_t ldy)
{
    if (nr >= WK_VNNI_Q3_K_MIN_ROWS) wk_vnni_rows_q3_K(k, nr, nc, w, ws, x, xs, y, ldy);
    else wk_vnni_tiles_q3_K(k, nr, nc, w, ws, x, xs, y, ldy);
}

/* ---- Q4_0, Q4_1, Q5_0, Q5_1 in 512-bit registers: two column groups per register, and the
 * float step of both groups in one register (16 lanes, each with the operations of the 8-lane
 * helpers wk_acc_q8_0 and WK_ACC_LEG: the same bits) ---- */
/* NAME##_tile_R_S as WK_PAIR_TILE, with the accumulators of a pair in one 512-bit register. */
#define WK_PAIRZ_TILE(NAME, BB, R, S)                                                              \
    WK_TILE_HEAD(NAME, R, S)                                                                       \
    {                                                                                              \
        enum { P = (S + 1) / 2 };                                                                  \
        __m512 acc[P][R];                                                                          \
        for (int p = 0; p < P; p++)                                                                \
            for (int r = 0; r < R; r++) {                                                          \
                const float *yp = y + r * ldy + 16 * p;                                            \
                acc[p][r] = first ? _mm512_setzero_ps()                                            \
                            : (S) == 1 ? _mm512_zextps256_ps512(_mm256_loadu_ps(yp))               \
                                       : _mm512_loadu_ps(yp);                                      \
            }                                                                                      \
        WK_PAIR_BLOCKS(BB, R, S, NAME##_block(R, b0, b1, x, xs, b, nb, aux, acc[p]));                 \
        for (int p = 0; p < P; p++)                                                                \
            for (int r = 0; r < R; r++) {                                                          \
                float *yp = y + r * ldy + 16 * p;                                                  \
                if ((S) == 1) _mm256_storeu_ps(yp, _mm512_castps512_ps256(acc[p][r]));             \
                else _mm512_storeu_ps(yp, acc[p][r]);                                              \
            }                                                                                      \
    }

/* The tiles of a 512-bit block NAME##_block and their table, [rows - 1][index of the
 * side-by-side count]. */
#define WK_PAIRZ_TILES(NAME, BB)                                                                   \
    WK_PAIRZ_TILE(NAME, BB, 1, 1) WK_PAIRZ_TILE(NAME, BB, 1, 2) WK_PAIRZ_TILE(NAME, BB, 1, 4)      \
    WK_PAIRZ_TILE(NAME, BB, 1, 8) WK_PAIRZ_TILE(NAME, BB, 2, 1) WK_PAIRZ_TILE(NAME, BB, 2, 2)      \
    WK_PAIRZ_TILE(NAME, BB, 2, 4) WK_PAIRZ_TILE(NAME, BB, 3, 1) WK_PAIRZ_TILE(NAME, BB, 3, 2)      \
    WK_PAIRZ_TILE(NAME, BB, 4, 1) WK_PAIRZ_TILE(NAME, BB, 4, 2)                                    \
    static wk_tile_fn const NAME##_tiles[4][4] = {                                                 \
        {NAME##_tile_1_1, NAME##_tile_1_2, NAME##_tile_1_4, NAME##_tile_1_8},                      \
        {NAME##_tile_2_1, NAME##_tile_2_2, NAME##_tile_2_4},                                       \
        {NAME##_tile_3_1, NAME##_tile_3_2},                                                        \
        {NAME##_tile_4_1, NAME##_tile_4_2}};

/* The float step of a pair of 32-element blocks (XB: the activation block): acc[r] += the
 * rows' two chains of sums x (the groups' d x row r's d), as wk_acc_q8_0 does per group. */
#define WK512_ACC_D(R, XB, b0, b1, x, xs, b, isum, isum2, acc)                                     \
    do {                                                                                           \
        const __m512 wd_ = wk512_halves(b0, b1);                                                   \
        for (int r_ = 0; r_ < (R); r_++) {                                                         \
            const XB *xb_ = (const XB *)((x) + r_ * (xs)) + (b);                                   \
            const __m512 sc_ = _mm512_mul_ps(wd_, _mm512_set1_ps(_cvtsh_ss(xb_->d)));              \
            (acc)[r_] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32((isum)[r_], (isum2)[r_])), sc_, (acc)[r_]); \
        }                                                                                          \
    } while (0)

/* aux: the rows' block sums, for an OFFSET (Q4_0: 8, Q5_0: 16). */
#define WK_VNNI_LEGZ(NAME, BB, XB, QOFF, MOFF, HAS_MIN, Q5, OFFSET)                                \
    WK_INLINE void NAME##_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x,  \
                                size_t xs, int64_t b, int64_t nb, const void *aux, __m512 *acc)    \
    {                                                                                              \
        const int16_t *sx = aux;                                                                   \
        const __m512i m4 = _mm512_set1_epi8(0x0f);                                                 \
        __m512i isum[4], isum2[4];                                                                 \
        for (int r = 0; r < R; r++) {                                                              \
            isum[r] = (OFFSET) ? _mm512_set1_epi32(-(OFFSET) * sx[r * nb + b]) : _mm512_setzero_si512(); \
            isum2[r] = _mm512_setzero_si512();                                                     \
        }                                                                                          \
        const __m512i pl = (Q5) ? wk512_pair(b0 + (MOFF), b1 + (MOFF)) : _mm512_setzero_si512(); \
        for (int s = 0; s < 4; s++) {                                                              \
            const __m512i v = wk512_pair(b0 + (QOFF) + 32 * s, b1 + (QOFF) + 32 * s);            \
            __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4); \
            if (Q5) {                                                                              \
                lo = _mm512_or_si512(lo, wk512_plane_bit4(pl, 2 * s));                               \
                hi = _mm512_or_si512(hi, wk512_plane_bit4(pl, 2 * s + 1));                           \
            }                                                                                      \
            for (int r = 0; r < R; r++) {                                                          \
                const XB *xb = (const XB *)(x + r * xs) + b;                                       \
                isum[r] = _mm512_dpbusd_epi32(isum[r], lo, wk_bcast4z(xb->qs + 4 * s));            \
                isum2[r] = _mm512_dpbusd_epi32(isum2[r], hi, wk_bcast4z(xb->qs + 16 + 4 * s));     \
            }                                                                                      \
        }                                                                                          \
        WK512_ACC_D(R, XB, b0, b1, x, xs, b, isum, isum2, acc);                                    \
        for (int r = 0; r < R && (HAS_MIN); r++) {                                                 \
            const XB *xb = (const XB *)(x + r * xs) + b;                                           \
            acc[r] = _mm512_fmadd_ps(wk512_halves(b0 + 16, b1 + 16),                               \
                                     _mm512_set1_ps(_cvtsh_ss(wk_act_s(xb))), acc[r]);             \
        }                                                                                          \
    }                                                                                              \
    WK_PAIRZ_TILES(NAME, BB)

WK_VNNI_LEGZ(wk_vnni_q4_0z, sizeof(wk_block_q4_0), wk_block_q8_0, 16, 0, false, false, 8)
WK_VNNI_LEGZ(wk_vnni_q4_1z, sizeof(wk_block_q4_1), wk_block_q8_1, 32, 0, true, false, 0)
WK_VNNI_LEGZ(wk_vnni_q5_0z, sizeof(wk_block_q5_0), wk_block_q8_0, 48, 16, false, true, 16)
WK_VNNI_LEGZ(wk_vnni_q5_1z, sizeof(wk_block_q5_1), wk_block_q8_1, 64, 32, true, true, 0)

/* ---- Q8_0x8 and Q8_1x8 (XB: the activation block; qs at QOFF) in 512-bit registers, two
 * column groups per register: the codes plus 128 (one XOR, shared by the rows) are dpbusd's
 * unsigned operand, and the bias comes off as -128 x the row's block sum (aux), so a row's step
 * is one dpbusd where the 256-bit tile took a sign and a dpbusd for half the columns. |sum| <=
 * 32 x 255 x 127 fits 32 bits; the integer sums equal the 256-bit tile's and the float step is
 * wk_acc_q8_0's, so the bits do. ---- */
#define WK_VNNI_Q8Z(NAME, BB, XB, QOFF)                                                            \
    WK_INLINE void NAME##_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x,  \
                                size_t xs, int64_t b, int64_t nb, const void *aux, __m512 *acc)    \
    {                                                                                              \
        const int16_t *sx = aux;                                                                   \
        const __m512i bias = _mm512_set1_epi8((char)0x80);                                         \
        __m512i isum[4], isum2[4];                                                                 \
        for (int r = 0; r < R; r++) {                                                              \
            isum[r] = _mm512_set1_epi32(-128 * sx[r * nb + b]);                                    \
            isum2[r] = _mm512_setzero_si512();                                                     \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int s = 0; s < 8; s++) {                                      \
            const __m512i v = _mm512_xor_si512(wk512_pair(b0 + (QOFF) + 32 * s, b1 + (QOFF) + 32 * s), bias); \
            for (int r = 0; r < R; r++) {                                                          \
                const XB *xb = (const XB *)(x + r * xs) + b;                                       \
                if (s & 1) isum2[r] = _mm512_dpbusd_epi32(isum2[r], v, wk_bcast4z(xb->qs + 4 * s)); \
                else isum[r] = _mm512_dpbusd_epi32(isum[r], v, wk_bcast4z(xb->qs + 4 * s));        \
            }                                                                                      \
        }                                                                                          \
        WK512_ACC_D(R, XB, b0, b1, x, xs, b, isum, isum2, acc);                                    \
    }                                                                                              \
    WK_PAIRZ_TILES(NAME, BB)
WK_VNNI_Q8Z(wk_vnni_q8_0z, sizeof(wk_block_q8_0), wk_block_q8_0, 16)
WK_VNNI_Q8Z(wk_vnni_q8_1z, sizeof(wk_block_q8_1), wk_block_q8_1, 32)


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

WK_TILES_FN(wk_vnni_packed_q8_0, wk_vnni_q8_0z_tiles, 4, 32, true, wk_vnni_block_sum)
/* Q8_1: the same, its rows' block sums from Q8_1 activation blocks, at every row count. */
WK_TILES_FN_XB(wk_vnni_packed_q8_1, wk_vnni_q8_1z_tiles, 4, 32, true, wk_vnni_block_sum, -1, wk_block_q8_1)

/* ---- Q8_Kx8 in 512-bit registers, two column groups per register: Q8_0's codes plus 128 over
 * a super-block of 64 steps (|sum| <= 256 x 255 x 127 fits 32 bits), the bias off as -128 x
 * the row's sum (its block sums added). The float step is one multiply-add of d (f32) x the
 * row's d per super-block. ---- */
WK_INLINE void wk_vnni_q8kz_block(const int R, const uint8_t *b0, const uint8_t *b1, const char *x, size_t xs,
                                  int64_t b, int64_t nb, const void *aux, __m512 *acc)
{
    (void)nb, (void)aux;
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    const wk_block_q8_K *xb[4];
    __m512i isum[4], isum2[4];
    for (int r = 0; r < R; r++) {
        xb[r] = (const wk_block_q8_K *)(x + r * xs) + b;
        const __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)xb[r]->bsums), _mm256_set1_epi16(1));
        __m128i t = _mm_add_epi32(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
        isum[r] = _mm512_set1_epi32(-128 * _mm_cvtsi128_si32(t));
        isum2[r] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int s = 0; s < 64; s++) {
        const __m512i v = _mm512_xor_si512(wk512_pair(b0 + 32 + 32 * s, b1 + 32 + 32 * s), bias);
        for (int r = 0; r < R; r++) {
            if (s & 1) isum2[r] = _mm512_dpbusd_epi32(isum2[r], v, wk_bcast4z(xb[r]->qs + 4 * s));
            else isum[r] = _mm512_dpbusd_epi32(isum[r], v, wk_bcast4z(xb[r]->qs + 4 * s));
        }
    }
    const __m512 wd = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps((const float *)b0)),
                                         _mm256_loadu_ps((const float *)b1), 1);
    for (int r = 0; r < R; r++)
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(isum[r], isum2[r])),
                                 _mm512_mul_ps(wd, _mm512_set1_ps(xb[r]->d)), acc[r]);
}
WK_PAIRZ_TILES(wk_vnni_q8kz, sizeof(wk_block_q8_K))
WK_TILES_FN(wk_vnni_packed_q8_K, wk_vnni_q8kz_tiles, 4, 256, false, NULL)

WK_TILES_FN(wk_vnni_packed_q4_0, wk_vnni_q4_0z_tiles, 4, 32, true, wk_vnni_block_sum)

/* Q4_1, Q5_0, Q5_1 (and Q2_K, Q6_K above) take the 512-bit tiles at every row count: at 32,
 * 64 and 256 rows they took 0.75-0.85 of the AVX2 many-row kernel's time (Q2_K 0.76 at 64
 * and 256; Q6_K 0.81-0.91 at 8-64, 0.97-1.0 at 256; 2 threads, [8192, 4096] from memory,
 * interleaved): their decoding, shared by 4 rows, costs less than the many-row kernel's
 * 256-bit products. */
WK_TILES_FN(wk_vnni_packed_q4_1, wk_vnni_q4_1z_tiles, 4, 32, false, NULL)
WK_TILES_FN(wk_vnni_packed_q5_0, wk_vnni_q5_0z_tiles, 4, 32, true, wk_vnni_block_sum)
WK_TILES_FN(wk_vnni_packed_q5_1, wk_vnni_q5_1z_tiles, 4, 32, false, NULL)

/* From WK512_MANY_ROWS rows the 32-element formats take the many-row kernel
 * (repack_rows_avx512.c) for their pairs of groups, the tiles for a lone last group. Zen 5,
 * 2 threads, [8192, 4096] from memory, two alternated rounds, ms, tiles -> it: Q8_0 m = 64
 * 4.9-5.1 -> 4.4-4.5, m = 256 18.6-19.0 -> 16.3-16.6; Q5_0 5.0-5.1 -> 4.2-4.3, 19.2-19.6 ->
 * 15.8-16.0; Q4_1 4.4 -> 3.8-3.9, 17.2 -> 14.8; Q4_0 4.2-4.3 -> 4.0-4.2, 16.3-16.9 ->
 * 15.5-15.7; at 16 rows it was slower (Q8_0 1.50-1.55 -> 1.63-1.68). */
#ifndef WK512_MANY_ROWS
#define WK512_MANY_ROWS 32
#endif
#define WK512_ROWS_FN(FN, T, TILES_FN)                                                             \
    static void FN(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,     \
                   size_t xs, float *y, size_t ldy)                                                \
    {                                                                                              \
        int64_t done = nr >= WK512_MANY_ROWS ? wk_avx512_rows_gemm(T, k, nr, nc, w, ws, x, xs, y, ldy) : 0; \
        if (done < nc)                                                                             \
            TILES_FN(k, nr, nc - done, (const uint8_t *)w + (size_t)done * ws, ws, x, xs, y + done, ldy); \
    }
WK512_ROWS_FN(wk_vnni_gemm_q8_0, WK_TYPE_Q8_0, wk_vnni_packed_q8_0)
WK512_ROWS_FN(wk_vnni_gemm_q4_0, WK_TYPE_Q4_0, wk_vnni_packed_q4_0)
WK512_ROWS_FN(wk_vnni_gemm_q4_1, WK_TYPE_Q4_1, wk_vnni_packed_q4_1)
WK512_ROWS_FN(wk_vnni_gemm_q5_0, WK_TYPE_Q5_0, wk_vnni_packed_q5_0)
WK512_ROWS_FN(wk_vnni_gemm_q5_1, WK_TYPE_Q5_1, wk_vnni_packed_q5_1)

wk_gemm_fn wk_avx512_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx512_repacked_gemm(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q8_0: return wk_vnni_gemm_q8_0;
    case WK_TYPE_Q4_0: return wk_vnni_gemm_q4_0;
    case WK_TYPE_Q4_1: return wk_vnni_gemm_q4_1;
    case WK_TYPE_Q5_0: return wk_vnni_gemm_q5_0;
    case WK_TYPE_Q5_1: return wk_vnni_gemm_q5_1;
    case WK_TYPE_Q4_K: return wk_vnni_tiles_q4_K;
    case WK_TYPE_Q5_K: return wk_vnni_tiles_q5_K;
    case WK_TYPE_Q3_K: return wk_vnni_packed_q3_K;
    case WK_TYPE_Q8_1: return wk_vnni_packed_q8_1;
    case WK_TYPE_Q8_K: return wk_vnni_packed_q8_K;
    case WK_TYPE_Q2_K: return wk_vnni_packed_q2_K;
    case WK_TYPE_Q6_K: return wk_vnni_packed_q6_K;
    default: return NULL;
    }
}

wk_gemm_fn wk_avx512_repacked_gemm_streamed(wk_type t);
wk_gemm_fn wk_avx512_repacked_gemm_streamed(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q4_K: return wk_vnni_tiles_q4_K_streamed;
    case WK_TYPE_Q5_K: return wk_vnni_tiles_q5_K_streamed;
    case WK_TYPE_Q6_K: return wk_vnni_packed_q6_K_streamed;
    default: return NULL;
    }
}
