/* AVX-512 kernel of the model's quantized form for Q4_K and Q6_K in llama.cpp's order: the
 * integer sums and float operations of the AVX2 kernel (ops_matmul_avx2.c,
 * wk_avx2_exact_groups_k), so the same bits (test_kernels), 16 columns a register.
 *
 * As in ops_matmul_avx512.c, a register holds two adjacent 8-column groups, the activation
 * words are VNNI's broadcast operands, and a pair's super-blocks are decoded once into L1
 * (codes as bytes, scales as the integers the sums need) for every row.
 * - Q4_K: each half of a sub-block (16 products a column, within int16) by 4 `vpdpbusd`,
 *   times the scale by one `vpdpwssd` (a sum within int16 has only its sign in its high
 *   half, and the scale's high half is zero); the mins meet the Q8_K block sums by
 *   `vpdpwssd` with each pair of sums as the broadcast operand (min x (sum a + sum b) =
 *   min x sum a + min x sum b). Four rows a pass.
 * - Q6_K: lane l's sum starts at -32 x (the scales times the block sums of sub-block l) by
 *   one `vpdpwssd`, then takes each step's 4 products by `vpdpbusd` and, times the scale,
 *   by `vpdpwssd` (the AVX2 kernel's `maddubs` and `madd` with it). Two rows a pass, their
 *   16 lane sums in registers. */
#include <immintrin.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "cpu/ops_internal.h"
#include "cpu/x86/k4x8_avx2.h"
#include "cpu/x86/tiles_x86.h"
#include "cpu/x86/vnni_avx512.h"
#include "quant/blocks.h"

enum {
    WK512K_KC = 4,  /* super-blocks decoded at a time: 21-23 KiB */
    WK512K_RB = 32, /* rows a pass when k spans several such chunks (their sums kept between) */
};

/* A Q4_K super-block of a pair of groups: codes (0..15) of sub-block j, step s; the
 * scales as int32 (int16 with a zero high half); the mins twice per column (two int16) for
 * vpdpwssd; d and dmin. */
typedef struct {
    __m512i q[8][8], sc[8], mn[8];
    __m512 d, dmin;
} wk512_q4k;
/* A Q6_K super-block of a pair: codes (0..63) of group g, step s; the scales as int16 with
 * a zero high half; -32 x the scales of sub-block l's two groups (two int16); d. */
typedef struct {
    __m512i q[16][4], sc[16], off[8];
    __m512 d;
} wk512_q6k;

/* 8 bytes at a and 8 at b, one a 32-bit lane (zero- or sign-extended). */
WK_INLINE __m128i wk512k_bytes16(const uint8_t *a, const uint8_t *b)
{
    return _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)b));
}
/* Each int32 lane's low 16 bits in both of its halves. */
WK_INLINE __m512i wk512k_twice(__m512i v)
{
    return _mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(v, 16));
}

WK_INLINE void wk512_decode_q4k(const uint8_t *a, const uint8_t *b, wk512_q4k *o)
{
    o->d = wk512_halves(a, b);
    o->dmin = wk512_halves(a + 16, b + 16);
    uint8_t sa[64], sb[64], ma[64], mb[64];
    wk_k4x8_decode(a + 32, sa);
    wk_k4x8_decode(b + 32, sb);
    wk_k4x8_decode(a + 80, ma);
    wk_k4x8_decode(b + 80, mb);
    for (int j = 0; j < 8; j++) {
        o->sc[j] = _mm512_cvtepu8_epi32(wk512k_bytes16(sa + 8 * j, sb + 8 * j)); /* high half zero */
        o->mn[j] = wk512k_twice(_mm512_cvtepu8_epi32(wk512k_bytes16(ma + 8 * j, mb + 8 * j)));
    }
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int p = 0; p < 4; p++)
        for (int s = 0; s < 8; s++) {
            __m512i v = wk512_pair(a + 128 + 256 * p + 32 * s, b + 128 + 256 * p + 32 * s);
            o->q[2 * p][s] = _mm512_and_si512(v, m4);
            o->q[2 * p + 1][s] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
}

WK_INLINE void wk512_decode_q6k(const uint8_t *a, const uint8_t *b, wk512_q6k *o)
{
    o->d = wk512_halves(a, b);
    __m512i sc32[16];
    for (int g = 0; g < 16; g++) {
        sc32[g] = _mm512_cvtepi8_epi32(wk512k_bytes16(a + 16 + 8 * g, b + 16 + 8 * g));
        o->sc[g] = _mm512_and_si512(sc32[g], _mm512_set1_epi32(0xffff)); /* int16, high half zero */
    }
    for (int l = 0; l < 8; l++) {
        __m512i lo = _mm512_mullo_epi32(sc32[2 * l], _mm512_set1_epi32(-32));
        __m512i hi = _mm512_mullo_epi32(sc32[2 * l + 1], _mm512_set1_epi32(-32));
        o->off[l] = _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(hi, 16));
    }
    const __m512i m3f = _mm512_set1_epi8(0x3f);
    for (int g = 0; g < 16; g++) { /* the planes of wk_q6x8_group, two groups a register */
        const uint8_t *ga = a + 144 + 96 * g, *gb = b + 144 + 96 * g;
        __m512i p0 = wk512_pair(ga, gb), p1 = wk512_pair(ga + 32, gb + 32), p2 = wk512_pair(ga + 64, gb + 64);
        o->q[g][0] = _mm512_and_si512(p0, m3f);
        o->q[g][1] = _mm512_and_si512(p1, m3f);
        o->q[g][2] = _mm512_and_si512(p2, m3f);
        /* bits 6-7 of p0, p1 >> 2 and p2 >> 4, each in its place (bit selects), then >> 2 */
        __m512i t = _mm512_ternarylogic_epi32(_mm512_set1_epi8((char)0xc0), p0, _mm512_srli_epi16(p1, 2), 0xca);
        t = _mm512_ternarylogic_epi32(_mm512_set1_epi8((char)0xf0), t, _mm512_srli_epi16(p2, 4), 0xca);
        o->q[g][3] = _mm512_and_si512(_mm512_srli_epi16(t, 2), m3f);
    }
}

/* R rows (x[r]: their Q8_K super-block 0 of the chunk) over nbc decoded Q4_K super-blocks;
 * pairs: flush after every two sub-blocks (llama.cpp's gemm order), else once a block. */
WK_INLINE void wk512_rows_q4k(const int R, bool pairs, const wk512_q4k *dec, int64_t nbc,
                              const wk_block_q8_K *const *x, __m512 *acc, __m512 *accm)
{
    for (int64_t b = 0; b < nbc; b++) {
        const wk512_q4k *D = dec + b;
        __m512i isum[4], imin[4];
        for (int r = 0; r < R; r++) isum[r] = imin[r] = _mm512_setzero_si512();
        for (int j = 0; j < 8; j++) {
            /* two halves of 16 products (at most 16 x 15 x 127, within int16), each times
             * the scale by one vpdpwssd (the scale's high half is zero) */
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m512i s[4];
                for (int r = 0; r < R; r++) s[r] = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int st = 4 * h; st < 4 * h + 4; st++) {
                    const __m512i W = D->q[j][st];
                    for (int r = 0; r < R; r++) s[r] = wk512_dpbusd_bcast(s[r], W, x[r][b].qs + 32 * j + 4 * st);
                }
                for (int r = 0; r < R; r++) isum[r] = _mm512_dpwssd_epi32(isum[r], s[r], D->sc[j]);
            }
            for (int r = 0; r < R; r++) imin[r] = wk512_dpwssd_bcast(imin[r], D->mn[j], x[r][b].bsums + 2 * j);
            if (j == 7 || (pairs && (j & 1)))
                for (int r = 0; r < R; r++) {
                    const __m512 dx = _mm512_set1_ps(x[r][b].d);
                    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r]), _mm512_mul_ps(D->d, dx), acc[r]);
                    accm[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin[r]), _mm512_mul_ps(D->dmin, dx), accm[r]);
                    isum[r] = imin[r] = _mm512_setzero_si512();
                }
        }
    }
}

/* R rows over nbc decoded Q6_K super-blocks: acc[r][l], lane l. */
WK_INLINE void wk512_rows_q6k(const int R, const wk512_q6k *dec, int64_t nbc, const wk_block_q8_K *const *x,
                              __m512 (*acc)[8])
{
    for (int64_t b = 0; b < nbc; b++) {
        const wk512_q6k *D = dec + b;
        __m512i isum[2][8];
        for (int r = 0; r < R; r++)
            for (int l = 0; l < 8; l++)
                isum[r][l] = wk512_dpwssd_bcast(_mm512_setzero_si512(), D->off[l], x[r][b].bsums + 2 * l);
        for (int t = 0; t < 8; t++) {
#pragma GCC unroll 8
            for (int l = 0; l < 8; l++) {
                const __m512i W = D->q[2 * t + l / 4][l % 4], S = D->sc[2 * t + l / 4];
                for (int r = 0; r < R; r++) {
                    /* 4 products (at most 4 x 63 x 127, within int16), times the scale by
                     * one vpdpwssd (the scale's high half is zero) */
                    const __m512i p = wk512_dpbusd_bcast(_mm512_setzero_si512(), W, x[r][b].qs + 32 * t + 4 * l);
                    isum[r][l] = _mm512_dpwssd_epi32(isum[r][l], p, S);
                }
            }
        }
        for (int r = 0; r < R; r++) {
            const __m512 d = _mm512_mul_ps(_mm512_set1_ps(x[r][b].d), D->d);
            for (int l = 0; l < 8; l++) acc[r][l] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum[r][l]), acc[r][l]);
        }
    }
}

/* R rows from `row` of a pass over super-blocks kc0 .. kc0 + nbc - 1 of nb: float sums
 * from (first chunk: zero) and into hold[hr..], on the last chunk the outputs into y. */
WK_INLINE void wk512k_tile(wk_type t, const int R, const void *dec, int64_t kc0, int64_t nbc, int64_t nb,
                           const char *x, size_t x_stride, int64_t row, bool pairs, __m512 (*hold)[8], int64_t hr,
                           float *y, size_t ldy)
{
    const wk_block_q8_K *xr[4];
    for (int r = 0; r < R; r++) xr[r] = (const wk_block_q8_K *)(x + (size_t)(row + r) * x_stride) + kc0;
    const bool last = kc0 + nbc == nb;
    if (t == WK_TYPE_Q4_K) {
        __m512 acc[4], accm[4];
        for (int r = 0; r < R; r++) {
            acc[r] = kc0 ? hold[hr + r][0] : _mm512_setzero_ps();
            accm[r] = kc0 ? hold[hr + r][1] : _mm512_setzero_ps();
        }
        wk512_rows_q4k(R, pairs, dec, nbc, xr, acc, accm);
        for (int r = 0; r < R; r++) {
            if (last) _mm512_storeu_ps(y + (size_t)(row + r) * ldy, _mm512_sub_ps(acc[r], accm[r]));
            else hold[hr + r][0] = acc[r], hold[hr + r][1] = accm[r];
        }
        return;
    }
    __m512 acc[2][8];
    for (int r = 0; r < R; r++)
        for (int l = 0; l < 8; l++) acc[r][l] = kc0 ? hold[hr + r][l] : _mm512_setzero_ps();
    wk512_rows_q6k(R, dec, nbc, xr, acc);
    for (int r = 0; r < R; r++) {
        if (!last) {
            for (int l = 0; l < 8; l++) hold[hr + r][l] = acc[r][l];
            continue;
        }
        __m512 *a = acc[r];
        __m512 v = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                                 _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
        _mm512_storeu_ps(y + (size_t)(row + r) * ldy, v);
    }
}

/* The decoding of a chunk and its row tiles, per type, each a function of its own (inlined
 * together, the decoding's constants took registers and the Q6_K tiles spilled). Rows a
 * tile: Q4_K 4, Q6_K 2 (two products a step, more registers). */
#define WK512K_FNS(T, SUF, DEC, BLK, R)                                                                         \
    static __attribute__((noinline)) void wk512k_decode_##SUF(const uint8_t *wa, const uint8_t *wb, size_t sb,  \
                                                              int64_t nbc, void *dec)                           \
    {                                                                                                           \
        const size_t step = wk_repacked_step(sb);                                                               \
        for (int64_t b = 0; b < nbc; b++) {                                                                     \
            wk_prefetch_block(wa + (size_t)b * step, sb);                                                       \
            wk_prefetch_block(wb + (size_t)b * step, sb);                                                       \
            DEC(wa + (size_t)b * step, wb + (size_t)b * step, (BLK *)dec + b);                                  \
        }                                                                                                       \
    }                                                                                                           \
    static __attribute__((noinline)) void wk512k_rows_##SUF(const void *dec, int64_t kc0, int64_t nbc, int64_t nb, \
                                                            const char *x, size_t x_stride, int64_t r0, int64_t rn, \
                                                            int64_t n_pairs, __m512 (*hold)[8], float *y, size_t ldy) \
    {                                                                                                           \
        int64_t r = 0;                                                                                          \
        for (; r + (R) <= rn; r += (R))                                                                         \
            wk512k_tile(T, R, dec, kc0, nbc, nb, x, x_stride, r0 + r, r0 + r + (R) <= n_pairs, hold, r, y, ldy); \
        for (; r < rn; r++) wk512k_tile(T, 1, dec, kc0, nbc, nb, x, x_stride, r0 + r, false, hold, r, y, ldy);  \
    }
WK512K_FNS(WK_TYPE_Q4_K, q4k, wk512_decode_q4k, wk512_q4k, 4)
WK512K_FNS(WK_TYPE_Q6_K, q6k, wk512_decode_q6k, wk512_q6k, 2)

static void wk512k_pairs(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                         size_t x_stride, int64_t m, float *y, size_t ldy)
{
    const int64_t nb = k / 256;
    const size_t sb = 8 * (t == WK_TYPE_Q4_K ? sizeof(wk_block_q4_K) : sizeof(wk_block_q6_K));
    const size_t group_bytes = (size_t)nb * sb;
    const int64_t n_pairs = m & ~(int64_t)3; /* rows in fours: llama.cpp's gemm order for Q4_K */
    const bool q4 = t == WK_TYPE_Q4_K;
    alignas(64) union {
        wk512_q4k q4[WK512K_KC];
        wk512_q6k q6[WK512K_KC];
    } dec;
    alignas(64) __m512 hold[WK512K_RB][8];
    const int64_t pass = nb <= WK512K_KC ? m : WK512K_RB; /* a multiple of 4 */
    for (int64_t g = g0; g < g1; g += 2) {
        for (int64_t r0 = 0; r0 < m; r0 += pass) {
            const int64_t rn = m - r0 < pass ? m - r0 : pass;
            for (int64_t kc0 = 0; kc0 < nb; kc0 += WK512K_KC) {
                const int64_t nbc = nb - kc0 < WK512K_KC ? nb - kc0 : WK512K_KC;
                const uint8_t *ca = (const uint8_t *)w + wk_repacked_at(g, kc0, group_bytes, sb);
                const uint8_t *cb = (const uint8_t *)w + wk_repacked_at(g + 1, kc0, group_bytes, sb);
                if (q4) wk512k_decode_q4k(ca, cb, sb, nbc, &dec);
                else wk512k_decode_q6k(ca, cb, sb, nbc, &dec);
                if (q4) wk512k_rows_q4k(&dec, kc0, nbc, nb, x, x_stride, r0, rn, n_pairs, hold, y + 8 * g, ldy);
                else wk512k_rows_q6k(&dec, kc0, nbc, nb, x, x_stride, r0, rn, n_pairs, hold, y + 8 * g, ldy);
            }
        }
    }
}

void wk_avx512_exact_groups_k(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                              size_t x_stride, int64_t m, float *y, size_t ldy)
{
    const int64_t g_end = g0 + ((g1 - g0) & ~(int64_t)1);
    wk512k_pairs(t, k, w, g0, g_end, x, x_stride, m, y, ldy);
    /* an odd last group: the AVX2 kernel, whose bits these are */
    if (g_end < g1) wk_avx2_exact_groups_k(t, k, w, g_end, g1, x, x_stride, m, y, ldy);
}
