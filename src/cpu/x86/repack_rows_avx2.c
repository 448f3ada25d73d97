/* AVX2 kernels of the repacked layouts (cpu/repack.h) for several activation rows.
 *
 * The tile kernels of repack_avx2.c decode each weight block once per tile of one or two
 * rows; with more rows that decoding (nibbles, fifth bits, six-bit codes, scales) would
 * cost as much as the products. Here a unit of weights of 8 columns (a 256-element
 * super-block, or up to 8 blocks of 32) is decoded once into L1 — unsigned codes,
 * per-column scale vectors — and then serves every row of the row block; two adjacent
 * groups are served together, 4 rows x 16 columns at a time, one activation broadcast
 * feeding both groups' aligned loads. What each row needs of its activation blocks (the
 * f32 scale, block sums for offsets and mins, the Q5_0/Q6_K lane offsets) is prepared
 * once per unit for all rows and reused by every column group of the batch.
 *
 * Loop order: row block (32 rows), batch of 64 columns, unit, group pair, row tile.
 * The accumulators of a row block and a batch are one contiguous buffer: each unit adds
 * its terms in block order with the same integer sums and the same float operations as
 * the tile kernels, so both paths give the same bits and the row count that picks one
 * never changes a result. */
#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "cpu/x86/k4x8_avx2.h"
#include "cpu/x86/q2x8_avx2.h"
#include "cpu/x86/q6x8_avx2.h"
#include "quant/blocks.h"

#define WK_INLINE static inline __attribute__((always_inline))

#ifndef WK_ROWS_BLOCK
#define WK_ROWS_BLOCK 32 /* rows served by one decoded unit */
#endif
#define WK_UNIT_STEPS 64 /* steps of 4 elements in a unit (256 elements) */
#ifndef WK_BATCH_COLS
#define WK_BATCH_COLS 64 /* columns accumulated together (a multiple of 8) */
#endif

WK_INLINE __m256i wk_bcast4(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Keeps an accumulator in a register at this point: without it GCC turns the unrolled
 * chains of 16-bit sums into trees that need more registers than AVX2 has. */
#define WK_KEEP(v) __asm__("" : "+x"(v))

/* First term of a sum, or the next one added (16 or 32-bit lanes). */
WK_INLINE void wk_acc16(__m256i *acc, bool first, __m256i v)
{
    *acc = first ? v : _mm256_add_epi16(*acc, v);
    WK_KEEP(*acc);
}
WK_INLINE void wk_acc32(__m256i *acc, bool first, __m256i v)
{
    *acc = first ? v : _mm256_add_epi32(*acc, v);
    WK_KEEP(*acc);
}

WK_INLINE __m256 wk_load_f16x8(const void *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* Weights are read in units scattered over the 8-column groups of a batch: what the
 * hardware sees as several strided streams. The next unit is asked for while this one
 * is used by all the rows. */
WK_INLINE void wk_prefetch_unit(const uint8_t *p, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64) _mm_prefetch((const char *)p + off, _MM_HINT_T0);
}

/* 8 bytes (one per column) -> 16 x i16, each value twice (the two pair lanes of a column). */
WK_INLINE __m256i wk_dup8_u8(const uint8_t *v)
{
    const __m128i dup = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm256_cvtepu8_epi16(_mm_shuffle_epi8(_mm_loadl_epi64((const __m128i *)v), dup));
}
/* Two rows of 8 values -> 8 x (a[c], b[c]) int16 pairs, one per 32-bit lane. */
WK_INLINE __m256i wk_pairs_u8(const uint8_t *a, const uint8_t *b)
{
    return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)a),
                                                  _mm_loadl_epi64((const __m128i *)b)));
}

/* Bit `bit` of every byte of a Q5 fifth-bit plane, moved to bit 4 (0x10 or 0). */
WK_INLINE __m256i wk_plane_bit4(__m256i plane, int bit)
{
    __m256i v = bit <= 4 ? _mm256_slli_epi16(plane, 4 - bit) : _mm256_srli_epi16(plane, bit - 4);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* One decoded unit of 8 columns. Step t: byte 4c + i = code of element 4t + i of column c. */
typedef struct {
    __m256i q[WK_UNIT_STEPS]; /* unsigned codes (Q8_0: |w|) */
    __m256i w[WK_UNIT_STEPS]; /* Q8_0: the signed weights (their signs) */
    __m256i sc[16];           /* K types: integer scale per sub-block, twice per column */
    __m256i mn[8];            /* K types: (min or scale) pairs of two sub-blocks per column */
    __m256 d[8], m[8];        /* per 32-block (legacy) or super-block: f32 scale, min */
} wk_unit;

/* What a row needs of the activation blocks of a unit, prepared once for all columns
 * (96 bytes: the row block's share of L1 stays small). */
typedef struct {
    float d[8]; /* scale of each block (Q8_0, Q8_1: f16 -> f32; Q8_K: its float, d[0]) */
    union {
        float s[8];      /* Q8_1: the s field */
        int32_t off[8];  /* Q4_0: offset * sum of the block's quants; Q5_0: see wk_q5_0_lane_off */
        int32_t bp[8];   /* Q8_K: int16 pairs of bsums (Q4_K: of the 32-element sub-blocks) */
        int32_t lo16[16]; /* Q6_K: lane offsets of the 16-element groups (wk_q6x8_lane_offs) */
    };
} wk_act_unit;

/* ---- the types ----------------------------------------------------------------------
 * Legacy types: unit = up to 8 blocks of 32 (k need not be a multiple of 256). */
enum { WK_K_Q4_0, WK_K_Q4_1, WK_K_Q5_0, WK_K_Q5_1, WK_K_Q8_0, WK_K_Q4_K, WK_K_Q6_K, WK_K_Q2_K };

WK_INLINE size_t wk_group_block_bytes(int kind)
{
    switch (kind) {
    case WK_K_Q4_0: return 8 * sizeof(wk_block_q4_0);
    case WK_K_Q4_1: return 8 * sizeof(wk_block_q4_1);
    case WK_K_Q5_0: return 8 * sizeof(wk_block_q5_0);
    case WK_K_Q5_1: return 8 * sizeof(wk_block_q5_1);
    case WK_K_Q8_0: return 8 * sizeof(wk_block_q8_0);
    case WK_K_Q4_K: return 8 * sizeof(wk_block_q4_K);
    case WK_K_Q6_K: return 8 * sizeof(wk_block_q6_K);
    default: return 8 * sizeof(wk_block_q2_K);
    }
}
WK_INLINE int wk_is_k(int kind) { return kind >= WK_K_Q4_K; }

/* Decode block j (legacy) of a unit, blk = its 8-column group block. */
WK_INLINE void wk_decode_legacy(const int kind, const uint8_t *blk, int j, wk_unit *u)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    u->d[j] = wk_load_f16x8(blk);
    if (kind == WK_K_Q4_1 || kind == WK_K_Q5_1) u->m[j] = wk_load_f16x8(blk + 16);
    if (kind == WK_K_Q8_0) {
        for (int t = 0; t < 8; t++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * t));
            u->w[8 * j + t] = v;
            u->q[8 * j + t] = _mm256_sign_epi8(v, v);
        }
        return;
    }
    const size_t qoff = kind == WK_K_Q4_0 ? 16 : kind == WK_K_Q4_1 ? 32 : kind == WK_K_Q5_0 ? 48 : 64;
    __m256i pl = _mm256_setzero_si256();
    if (kind == WK_K_Q5_0 || kind == WK_K_Q5_1)
        pl = _mm256_loadu_si256((const __m256i *)(blk + (kind == WK_K_Q5_0 ? 16 : 32)));
    for (int s = 0; s < 4; s++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(blk + qoff + 32 * s));
        __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (kind == WK_K_Q5_0 || kind == WK_K_Q5_1) {
            lo = _mm256_or_si256(lo, wk_plane_bit4(pl, 2 * s));
            hi = _mm256_or_si256(hi, wk_plane_bit4(pl, 2 * s + 1));
        }
        u->q[8 * j + s] = lo;     /* elements 4s..4s+3 */
        u->q[8 * j + 4 + s] = hi; /* elements 16+4s.. */
    }
}


WK_INLINE void wk_decode_k(const int kind, const uint8_t *blk, wk_unit *u)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    u->d[0] = wk_load_f16x8(blk);
    if (kind == WK_K_Q4_K) {
        u->m[0] = wk_load_f16x8(blk + 16);
        uint8_t sc[64], mn[64];
        wk_k4x8_decode(blk + 32, sc);
        wk_k4x8_decode(blk + 80, mn);
        for (int j = 0; j < 8; j++) u->sc[j] = wk_dup8_u8(sc + 8 * j);
        for (int q = 0; q < 4; q++) u->mn[q] = wk_pairs_u8(mn + 16 * q, mn + 16 * q + 8);
        for (int p = 0; p < 4; p++)
            for (int s = 0; s < 8; s++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 128 + 256 * p + 32 * s));
                u->q[16 * p + s] = _mm256_and_si256(v, m4);                             /* sub-block 2p */
                u->q[16 * p + 8 + s] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4); /* 2p + 1 */
            }
    } else if (kind == WK_K_Q6_K) {
        for (int g = 0; g < 16; g++) {
            wk_q6x8_group(blk + 144 + 96 * g, &u->q[4 * g]);
            u->sc[g] = wk_q6x8_scales(blk + 16 + 8 * g);
        }
    } else { /* Q2_K: codes 0..3, 4-bit scale (low) and min (high) per 16 elements */
        u->m[0] = wk_load_f16x8(blk + 16);
        const uint8_t *scb = blk + 32;
        uint8_t sc[128], mn[128];
        for (int q = 0; q < 4; q++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(scb + 32 * q));
            _mm256_storeu_si256((__m256i *)(sc + 32 * q), _mm256_and_si256(v, m4));
            _mm256_storeu_si256((__m256i *)(mn + 32 * q), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        }
        for (int g = 0; g < 16; g++) u->sc[g] = wk_dup8_u8(sc + 8 * g);
        for (int q = 0; q < 8; q++) u->mn[q] = wk_pairs_u8(mn + 16 * q, mn + 16 * q + 8);
        /* the 4 steps of each group, codes 0..3 */
        for (int j = 0; j < 4; j++)
            for (int h = 0; h < 2; h++) wk_q2x8_groups(blk, j, h, &u->q[4 * (4 * j + h)], &u->q[4 * (4 * j + 2 + h)]);
    }
}

/* Q5_0: codes up to 31 overflow 16-bit sums after 4 steps, but the sums of (code - 16) * x
 * over a whole block fit (16 products of at most 16 * 127 in each 16-bit lane). A lane
 * starts at -16 * (the sum of its 16 activations), and wrapping 16-bit adds of the code
 * products then end exactly there: one widening per block, no offset to take off after.
 * Lane 0 of a column holds elements 4s and 4s + 1 of the block, lane 1 4s + 2 and 4s + 3;
 * returned as the two int16 of one 32-bit value. */
WK_INLINE int32_t wk_q5_0_lane_off(const int8_t *qs)
{
    __m256i v = _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)qs));
    __m128i s = _mm_add_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi16(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi16(s, _mm_shuffle_epi32(s, 0xb1));
    s = _mm_sub_epi16(_mm_setzero_si128(), _mm_slli_epi16(s, 4));
    return _mm_cvtsi128_si32(s);
}

/* Bytes of one activation block and where its quants start. */
WK_INLINE size_t wk_act_block_bytes(int kind)
{
    if (wk_is_k(kind)) return sizeof(wk_block_q8_K);
    return kind == WK_K_Q4_1 || kind == WK_K_Q5_1 ? sizeof(wk_block_q8_1) : sizeof(wk_block_q8_0);
}
WK_INLINE size_t wk_act_qs_off(int kind)
{
    if (wk_is_k(kind)) return offsetof(wk_block_q8_K, qs);
    return kind == WK_K_Q4_1 || kind == WK_K_Q5_1 ? offsetof(wk_block_q8_1, qs) : offsetof(wk_block_q8_0, qs);
}

/* The f16 values at p, p + stride, ... p + 7 * stride as 8 floats. */
WK_INLINE __m256 wk_gather_f16x8(const char *p, size_t stride)
{
    uint16_t h[8];
    for (int j = 0; j < 8; j++) memcpy(&h[j], p + j * stride, 2);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

/* Activation side of a unit for row r: x block pointer xb (of the unit's first block). */
WK_INLINE void wk_prepare_act(const int kind, const char *xb, int nbu, wk_act_unit *a)
{
    if (kind == WK_K_Q4_K) {
        const wk_block_q8_K *b = (const wk_block_q8_K *)xb;
        a->d[0] = b->d;
        for (int q = 0; q < 4; q++) {
            int bs0 = b->bsums[4 * q] + b->bsums[4 * q + 1], bs1 = b->bsums[4 * q + 2] + b->bsums[4 * q + 3];
            a->bp[q] = (int32_t)(((uint32_t)bs0 & 0xffffu) | ((uint32_t)bs1 << 16));
        }
        return;
    }
    if (kind == WK_K_Q6_K) {
        const wk_block_q8_K *b = (const wk_block_q8_K *)xb;
        a->d[0] = b->d;
        wk_q6x8_lane_offs(b->qs, a->lo16);
        return;
    }
    if (wk_is_k(kind)) {
        const wk_block_q8_K *b = (const wk_block_q8_K *)xb;
        a->d[0] = b->d;
        memcpy(a->bp, b->bsums, sizeof b->bsums);
        return;
    }
    if (nbu == 8) {
        /* the 8 blocks' f16 scales (and Q8_1 s) converted at once */
        const size_t bb = wk_act_block_bytes(kind);
        _mm256_storeu_ps(a->d, wk_gather_f16x8(xb, bb));
        if (kind == WK_K_Q4_1 || kind == WK_K_Q5_1) _mm256_storeu_ps(a->s, wk_gather_f16x8(xb + 2, bb));
        if (kind == WK_K_Q5_0)
            for (int j = 0; j < 8; j++) a->off[j] = wk_q5_0_lane_off(((const wk_block_q8_0 *)xb)[j].qs);
        if (kind == WK_K_Q4_0) {
            /* the 8 block sums at once: pair sums, then a tree of horizontal adds */
            const __m256i one8 = _mm256_set1_epi8(1), one16 = _mm256_set1_epi16(1);
            __m256i v[8];
            for (int j = 0; j < 8; j++) {
                const wk_block_q8_0 *b = (const wk_block_q8_0 *)xb + j;
                v[j] = _mm256_madd_epi16(_mm256_maddubs_epi16(one8, _mm256_loadu_si256((const __m256i *)b->qs)), one16);
            }
            __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
            __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
            __m256i sums = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
            _mm256_storeu_si256((__m256i *)a->off, _mm256_slli_epi32(sums, 3));
        }
        return;
    }
    for (int j = 0; j < nbu; j++) {
        if (kind == WK_K_Q4_1 || kind == WK_K_Q5_1) {
            const wk_block_q8_1 *b = (const wk_block_q8_1 *)xb + j;
            a->d[j] = _cvtsh_ss(b->d);
            a->s[j] = _cvtsh_ss(b->s);
        } else {
            const wk_block_q8_0 *b = (const wk_block_q8_0 *)xb + j;
            a->d[j] = _cvtsh_ss(b->d);
            if (kind == WK_K_Q4_0) {
                __m256i v = _mm256_madd_epi16(
                    _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)b->qs)),
                    _mm256_set1_epi16(1));
                __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
                s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
                s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
                a->off[j] = 8 * (int16_t)_mm_cvtsi128_si32(s);
            }
            if (kind == WK_K_Q5_0) a->off[j] = wk_q5_0_lane_off(b->qs);
        }
    }
}


/* R rows (x: the first row's first block of the unit) times G decoded units of adjacent
 * column groups (u[0..G-1]); y: the first row's 8 * G accumulators. One broadcast of
 * activation bytes feeds the G groups: with G = 2 a step costs 6 loads for 8 products
 * instead of 5 for 4, which measured 15-25% faster on Zen 3 for the 4-bit codes. */
#define WK_UNROLL _Pragma("GCC unroll 16")
WK_INLINE void wk_unit_rows(const int kind, const int R, const int G, const wk_unit *u, int nbu,
                            const char *x, size_t xs, const wk_act_unit *a, float *y, size_t ldy)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const int8_t *xq[4];
    __m256 acc[4][2];
    WK_UNROLL for (int r = 0; r < R; r++) {
        xq[r] = (const int8_t *)(x + r * xs + wk_act_qs_off(kind));
        WK_UNROLL for (int g = 0; g < G; g++) acc[r][g] = _mm256_loadu_ps(y + r * ldy + 8 * g);
    }
    if (!wk_is_k(kind)) {
        const size_t xbb = wk_act_block_bytes(kind);
        for (int j = 0; j < nbu; j++) {
            __m256i i32[4][2], p16[4][2];
            WK_UNROLL for (int r = 0; r < 4; r++) /* every one is set by its first step */
                WK_UNROLL for (int g = 0; g < 2; g++) i32[r][g] = p16[r][g] = _mm256_setzero_si256();
            if (kind == WK_K_Q8_0) {
                WK_UNROLL for (int t = 0; t < 8; t++) {
                    __m256i wq[2], ws[2];
                    WK_UNROLL for (int g = 0; g < G; g++) {
                        wq[g] = _mm256_load_si256(&u[g].q[8 * j + t]);
                        ws[g] = _mm256_load_si256(&u[g].w[8 * j + t]);
                    }
                    WK_UNROLL for (int r = 0; r < R; r++) {
                        __m256i xb = wk_bcast4(xq[r] + j * xbb + 4 * t);
                        WK_UNROLL for (int g = 0; g < G; g++)
                            wk_acc32(&i32[r][g], t == 0,
                                     _mm256_madd_epi16(_mm256_maddubs_epi16(wq[g], _mm256_sign_epi8(xb, ws[g])), ones));
                    }
                }
            } else {
                /* Q4 codes (<= 15): 8 steps in 16 bits; Q5_0: 8 steps from the lane offsets
                 * (wk_q5_0_lane_off); Q5_1 codes (<= 31): 4 steps. */
                const int flush = kind == WK_K_Q5_1 ? 4 : 8;
                WK_UNROLL for (int t = 0; t < 8; t++) {
                    __m256i wq[2];
                    WK_UNROLL for (int g = 0; g < G; g++) wq[g] = _mm256_load_si256(&u[g].q[8 * j + t]);
                    WK_UNROLL for (int r = 0; r < R; r++) {
                        __m256i xb = wk_bcast4(xq[r] + j * xbb + 4 * t);
                        if (kind == WK_K_Q5_0 && t == 0) {
                            const __m256i lane_off = _mm256_set1_epi32(a[r].off[j]);
                            WK_UNROLL for (int g = 0; g < G; g++)
                                wk_acc16(&p16[r][g], true, _mm256_add_epi16(lane_off, _mm256_maddubs_epi16(wq[g], xb)));
                        } else {
                            WK_UNROLL for (int g = 0; g < G; g++)
                                wk_acc16(&p16[r][g], t % flush == 0, _mm256_maddubs_epi16(wq[g], xb));
                        }
                    }
                    if (t % flush == flush - 1)
                        WK_UNROLL for (int r = 0; r < R; r++)
                            WK_UNROLL for (int g = 0; g < G; g++)
                                wk_acc32(&i32[r][g], t == flush - 1, _mm256_madd_epi16(p16[r][g], ones));
                }
            }
            WK_UNROLL for (int r = 0; r < R; r++) {
                const __m256 dx = _mm256_set1_ps(a[r].d[j]);
                WK_UNROLL for (int g = 0; g < G; g++) {
                    __m256i v = i32[r][g];
                    if (kind == WK_K_Q4_0) v = _mm256_sub_epi32(v, _mm256_set1_epi32(a[r].off[j]));
                    acc[r][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(u[g].d[j], dx), acc[r][g]);
                    if (kind == WK_K_Q4_1 || kind == WK_K_Q5_1)
                        acc[r][g] = _mm256_fmadd_ps(u[g].m[j], _mm256_set1_ps(a[r].s[j]), acc[r][g]);
                }
            }
        }
    } else {
        /* Sums in 16 bits over `flush` steps (Q4_K: a 32-element sub-block of codes <= 15;
         * Q6_K: a 16-element group from its lane offsets; Q2_K: a 16-element group), then
         * times the sub-block's integer scale into 32 bits. */
        const int flush = kind == WK_K_Q4_K ? 8 : 4;
        const int per_scale = kind == WK_K_Q4_K ? 8 : 4; /* steps per scale */
        __m256i isum[4][2], p16[4][2];
        WK_UNROLL for (int r = 0; r < 4; r++) /* every one is set by its first step */
            WK_UNROLL for (int g = 0; g < 2; g++) isum[r][g] = p16[r][g] = _mm256_setzero_si256();
        for (int t0 = 0; t0 < WK_UNIT_STEPS; t0 += 8) {
            WK_UNROLL for (int t = t0; t < t0 + 8; t++) {
                __m256i wq[2];
                WK_UNROLL for (int g = 0; g < G; g++) wq[g] = _mm256_load_si256(&u[g].q[t]);
                WK_UNROLL for (int r = 0; r < R; r++) {
                    __m256i xb = wk_bcast4(xq[r] + 4 * t);
                    if (kind == WK_K_Q6_K && t % flush == 0) {
                        const __m256i lane_off = _mm256_set1_epi32(a[r].lo16[t / 4]);
                        WK_UNROLL for (int g = 0; g < G; g++)
                            wk_acc16(&p16[r][g], true, _mm256_add_epi16(lane_off, _mm256_maddubs_epi16(wq[g], xb)));
                    } else {
                        WK_UNROLL for (int g = 0; g < G; g++)
                            wk_acc16(&p16[r][g], t % flush == 0, _mm256_maddubs_epi16(wq[g], xb));
                    }
                }
                if (t % flush == flush - 1) {
                    WK_UNROLL for (int g = 0; g < G; g++) {
                        __m256i sc = _mm256_load_si256(&u[g].sc[t / per_scale]);
                        WK_UNROLL for (int r = 0; r < R; r++)
                            wk_acc32(&isum[r][g], t == flush - 1, _mm256_madd_epi16(p16[r][g], sc));
                    }
                }
            }
        }
        const int npairs = kind == WK_K_Q4_K ? 4 : 8;
        WK_UNROLL for (int r = 0; r < R; r++) {
            const __m256 dx = _mm256_set1_ps(a[r].d[0]);
            WK_UNROLL for (int g = 0; g < G; g++) {
                if (kind == WK_K_Q6_K) {
                    /* the +32 of the codes is already out of the lanes */
                    acc[r][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][g]), _mm256_mul_ps(u[g].d[0], dx), acc[r][g]);
                } else {
                    __m256i msum = _mm256_setzero_si256();
                    for (int q = 0; q < npairs; q++)
                        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(_mm256_load_si256(&u[g].mn[q]),
                                                                        _mm256_set1_epi32(a[r].bp[q])));
                    acc[r][g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][g]), _mm256_mul_ps(u[g].d[0], dx), acc[r][g]);
                    acc[r][g] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(u[g].m[0], dx), acc[r][g]);
                }
            }
        }
    }
    WK_UNROLL for (int r = 0; r < R; r++)
        WK_UNROLL for (int g = 0; g < G; g++) _mm256_storeu_ps(y + r * ldy + 8 * g, acc[r][g]);
}

#ifndef WK_TILE_ROWS_Q8_0
#define WK_TILE_ROWS_Q8_0 4
#endif
#ifndef WK_TILE_ROWS_K
#define WK_TILE_ROWS_K 4
#endif
#ifndef WK_TILE_ROWS_LEGACY
#define WK_TILE_ROWS_LEGACY 4
#endif
/* Rows of a tile (at most 4). */
WK_INLINE int wk_tile_rows(int kind)
{
    return kind == WK_K_Q8_0 ? WK_TILE_ROWS_Q8_0 : wk_is_k(kind) ? WK_TILE_ROWS_K : WK_TILE_ROWS_LEGACY;
}

/* Rows of a row block in tiles, then the remainder, over G units. */
WK_INLINE void wk_unit_all_rows(const int kind, const int G, const wk_unit *u, int nbu, const char *x,
                                size_t xs, const wk_act_unit *a, float *y, int64_t rb)
{
    const int RT = wk_tile_rows(kind);
    int64_t r = 0;
    switch (RT) {
    case 4: for (; r + 4 <= rb; r += 4) wk_unit_rows(kind, 4, G, u, nbu, x + r * xs, xs, a + r, y + r * WK_BATCH_COLS, WK_BATCH_COLS); break;
    case 3: for (; r + 3 <= rb; r += 3) wk_unit_rows(kind, 3, G, u, nbu, x + r * xs, xs, a + r, y + r * WK_BATCH_COLS, WK_BATCH_COLS); break;
    default: for (; r + 2 <= rb; r += 2) wk_unit_rows(kind, 2, G, u, nbu, x + r * xs, xs, a + r, y + r * WK_BATCH_COLS, WK_BATCH_COLS); break;
    }
    switch (rb - r) {
    case 1: wk_unit_rows(kind, 1, G, u, nbu, x + r * xs, xs, a + r, y + r * WK_BATCH_COLS, WK_BATCH_COLS); break;
    case 2: wk_unit_rows(kind, 2, G, u, nbu, x + r * xs, xs, a + r, y + r * WK_BATCH_COLS, WK_BATCH_COLS); break;
    case 3: wk_unit_rows(kind, 3, G, u, nbu, x + r * xs, xs, a + r, y + r * WK_BATCH_COLS, WK_BATCH_COLS); break;
    default: break;
    }
}

WK_INLINE void wk_decode_unit(const int kind, const uint8_t *wu, size_t gbb, int nbu, wk_unit *u)
{
    if (wk_is_k(kind)) wk_decode_k(kind, wu, u);
    else
        for (int j = 0; j < nbu; j++) wk_decode_legacy(kind, wu + j * wk_repacked_step(gbb), j, u);
}

#ifndef WK_PF_STEPS
#define WK_PF_STEPS 1 /* prefetch distance in steps of one or two column groups */
#endif
#ifndef WK_PAIR_Q6_K
#define WK_PAIR_Q6_K 1
#endif
#ifndef WK_PAIR_Q4_K
#define WK_PAIR_Q4_K 1
#endif
#ifndef WK_PAIR_Q2_K
#define WK_PAIR_Q2_K 1
#endif
/* Whether two column groups share the activation broadcasts. */
WK_INLINE int wk_pairs_groups(int kind)
{
    return kind == WK_K_Q6_K ? WK_PAIR_Q6_K : kind == WK_K_Q4_K ? WK_PAIR_Q4_K : kind == WK_K_Q2_K ? WK_PAIR_Q2_K : 1;
}

WK_INLINE void wk_rows_gemm(const int kind, int64_t k, int64_t nr, int64_t nc, const uint8_t *w,
                            size_t ws, const char *x, size_t xs, float *y, size_t ldy)
{
    const int64_t blk_elems = wk_is_k(kind) ? 256 : 32;
    const int unit_blocks = wk_is_k(kind) ? 1 : 8;
    const int64_t nb = k / blk_elems, ng = nc / 8;
    const size_t gbb = wk_group_block_bytes(kind), xbb = wk_act_block_bytes(kind);
    wk_unit u[2];
    wk_act_unit act[WK_ROWS_BLOCK];
    /* The accumulators of a row block x a batch of column groups, contiguous (rows of y
     * are far apart, often a multiple of 4 KiB: they would share a few cache sets). */
    float acc[WK_ROWS_BLOCK * WK_BATCH_COLS];
    for (int64_t r0 = 0; r0 < nr; r0 += WK_ROWS_BLOCK) {
        int64_t rb = nr - r0 < WK_ROWS_BLOCK ? nr - r0 : WK_ROWS_BLOCK;
        const char *xr = x + r0 * xs;
        for (int64_t g0 = 0; g0 < ng; g0 += WK_BATCH_COLS / 8) {
            int64_t gn = ng - g0 < WK_BATCH_COLS / 8 ? ng - g0 : WK_BATCH_COLS / 8;
            memset(acc, 0, sizeof(float) * WK_BATCH_COLS * (size_t)rb);
            for (int64_t b0 = 0; b0 < nb; b0 += unit_blocks) {
                int nbu = nb - b0 < unit_blocks ? (int)(nb - b0) : unit_blocks;
                for (int64_t r = 0; r < rb; r++) wk_prepare_act(kind, xr + r * xs + b0 * xbb, nbu, &act[r]);
                const char *xu = xr + b0 * xbb;
                for (int64_t g = g0, pair; g < g0 + gn; g += 1 + pair) {
                    pair = g + 1 < g0 + gn && wk_pairs_groups(kind);
                    const uint8_t *wu = w + wk_repacked_at(g, b0, 8 * ws, gbb);
                    /* the units decoded WK_PF_STEPS steps later: of this unit or the next (a
                     * unit of a paired layout spans its partner's too, asked for with it) */
                    const int64_t step = 1 + pair;
                    const bool paired = wk_repacked_paired(gbb);
                    for (int64_t q = g + WK_PF_STEPS * step; q < g + (WK_PF_STEPS + 1) * step; q++) {
                        if (paired && (q & 1)) continue;
                        const size_t span = (paired ? 2 : 1) * gbb;
                        if (q < g0 + gn) wk_prefetch_unit(w + wk_repacked_at(q, b0, 8 * ws, gbb), span * (size_t)nbu);
                        else if (b0 + unit_blocks < nb && q - gn < g0 + gn)
                            wk_prefetch_unit(w + wk_repacked_at(q - gn, b0 + unit_blocks, 8 * ws, gbb),
                                             span * (size_t)unit_blocks);
                    }
                    wk_decode_unit(kind, wu, gbb, nbu, &u[0]);
                    float *ag = acc + 8 * (g - g0);
                    if (pair) {
                        wk_decode_unit(kind, w + wk_repacked_at(g + 1, b0, 8 * ws, gbb), gbb, nbu, &u[1]);
                        wk_unit_all_rows(kind, 2, u, nbu, xu, xs, act, ag, rb);
                    } else {
                        wk_unit_all_rows(kind, 1, u, nbu, xu, xs, act, ag, rb);
                    }
                }
            }
            for (int64_t r = 0; r < rb; r++)
                memcpy(y + (r0 + r) * ldy + 8 * g0, acc + r * WK_BATCH_COLS, sizeof(float) * 8 * (size_t)gn);
        }
    }
}

#define WK_ROWS_FN(NAME, KIND)                                                                     \
    static void NAME(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,  \
                     size_t xs, float *y, size_t ldy)                                              \
    {                                                                                              \
        wk_rows_gemm(KIND, k, nr, nc, w, ws, x, xs, y, ldy);                                       \
    }
WK_ROWS_FN(wk_rows_q4_0, WK_K_Q4_0)
WK_ROWS_FN(wk_rows_q4_1, WK_K_Q4_1)
WK_ROWS_FN(wk_rows_q5_0, WK_K_Q5_0)
WK_ROWS_FN(wk_rows_q5_1, WK_K_Q5_1)
WK_ROWS_FN(wk_rows_q8_0, WK_K_Q8_0)
WK_ROWS_FN(wk_rows_q4_K, WK_K_Q4_K)
WK_ROWS_FN(wk_rows_q6_K, WK_K_Q6_K)
WK_ROWS_FN(wk_rows_q2_K, WK_K_Q2_K)

wk_gemm_fn wk_avx2_rows_gemm(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q4_0: return wk_rows_q4_0;
    case WK_TYPE_Q4_1: return wk_rows_q4_1;
    case WK_TYPE_Q5_0: return wk_rows_q5_0;
    case WK_TYPE_Q5_1: return wk_rows_q5_1;
    case WK_TYPE_Q8_0: return wk_rows_q8_0;
    case WK_TYPE_Q4_K: return wk_rows_q4_K;
    case WK_TYPE_Q6_K: return wk_rows_q6_K;
    case WK_TYPE_Q2_K: return wk_rows_q2_K;
    default: return NULL;
    }
}
