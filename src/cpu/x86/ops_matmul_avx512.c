/* AVX-512 kernel of the model's quantized form for the 32-element formats in llama.cpp's
 * order: the AVX2 kernel's integer sums and float operations (ops_matmul_avx2.c), so the
 * same bits (test_kernels), with 16 columns a register.
 *
 * A register holds lane l of two adjacent 8-column groups, low half from the first, so one
 * activation word (4 codes) serves all 16 columns as VNNI's broadcast memory operand: per
 * row, lane and block one `vpdpbusd`, one conversion and one fused multiply-add, where the
 * AVX2 kernel (8 columns) takes a broadcast, a sign, `maddubs`, `madd`, a conversion and an
 * FMA. `vpdpbusd` multiplies unsigned bytes by signed ones, and the broadcast operand is the
 * signed one, so the weights are made unsigned: signed formats store w + 128 (Q8_0: w ^ 0x80;
 * Q4_0: code + 120; Q5_0: code + 112), and each lane's sum starts at -128 x the sum of the
 * four activation codes it meets, made once per row (wk_avx512_exact_prep). The integer is
 * then exactly sum(w x), as in the AVX2 kernel.
 *
 * A pair's blocks are decoded once into L1 (at most WK512_KC blocks at a time) for every row;
 * rows then go two at a time, their 16 accumulators in registers. */
#include <immintrin.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "cpu/ops_internal.h"
#include "cpu/x86/exact_block_x86.h"
#include "cpu/x86/vnni_avx512.h"

enum {
    WK512_KC = 32, /* blocks decoded at a time: 20 KiB, in L1 with the rows' bytes */
    WK512_RB = 32, /* rows a pass when k spans several such chunks (their sums kept between) */
};

void wk_avx512_exact_prep(bool q8_1, int64_t k, const void *x, size_t x_stride, int64_t m, wk_exact_xprep *p)
{
    const int64_t nb = k / 32;
    const size_t act_bytes = q8_1 ? sizeof(wk_block_q8_1) : sizeof(wk_block_q8_0);
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t r = 0; r < m; r++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *xb = (const uint8_t *)x + (size_t)r * x_stride + (size_t)b * act_bytes;
            wk_exact_xprep *o = p + r * nb + b;
            __m256i codes = _mm256_loadu_si256((const __m256i *)(xb + act_bytes - 32));
            __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, codes);
            _mm256_storeu_si256((__m256i *)o->off, _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 7)));
            uint16_t h[2] = {0, 0};
            memcpy(h, xb, q8_1 ? 4 : 2);
            o->d = _cvtsh_ss(h[0]); /* F16C: exact, as wk_half_to_float */
            o->s = _cvtsh_ss(h[1]);
        }
}

/* R rows (codes of block 0 at x[r], their prep at p[r]) over nbc decoded blocks: lane
 * sums into acc[r][l], and (with a min) m x s into summs[r]. */
WK_INLINE void wk512_rows(wk_type t, const int R, const wk512_block *dec, int64_t nbc, const char *const *x,
                          size_t act_bytes, const wk_exact_xprep *const *p, __m512 (*acc)[8], __m512 *summs)
{
    const bool has_min = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1;
    for (int64_t b = 0; b < nbc; b++) {
        const wk512_block *D = dec + b;
        __m512 dd[3];
        for (int r = 0; r < R; r++) dd[r] = _mm512_mul_ps(D->d, _mm512_set1_ps(p[r][b].d));
#pragma GCC unroll 8
        for (int l = 0; l < 8; l++) {
            const __m512i W = D->w[l];
            for (int r = 0; r < R; r++) {
                const __m512i init = has_min ? _mm512_setzero_si512() : _mm512_set1_epi32(p[r][b].off[l]);
                const __m512i s = wk512_dpbusd_bcast(init, W, x[r] + (size_t)b * act_bytes + act_bytes - 32 + 4 * l);
                acc[r][l] = _mm512_fmadd_ps(dd[r], _mm512_cvtepi32_ps(s), acc[r][l]);
            }
        }
        if (has_min)
            for (int r = 0; r < R; r++) summs[r] = _mm512_add_ps(summs[r], _mm512_mul_ps(D->m, _mm512_set1_ps(p[r][b].s)));
    }
}

/* R rows starting at row r of the pass: their sums from (first chunk: zero) or into hold,
 * and on the last chunk the 16 outputs of each row into y. */
WK_INLINE void wk512_tile(wk_type t, const int R, const wk512_block *dec, int64_t kc0, int64_t nbc, int64_t nb,
                          const char *x, size_t x_stride, size_t act_bytes, const wk_exact_xprep *prep,
                          int64_t row, __m512 (*hold)[9], int64_t hr, float *y, size_t ldy)
{
    __m512 acc[3][8], summs[3];
    const char *xr[3];
    const wk_exact_xprep *pr[3];
    for (int r = 0; r < R; r++) {
        xr[r] = x + (size_t)(row + r) * x_stride + (size_t)kc0 * act_bytes;
        pr[r] = prep + (row + r) * nb + kc0;
        for (int l = 0; l < 8; l++) acc[r][l] = kc0 ? hold[hr + r][l] : _mm512_setzero_ps();
        summs[r] = kc0 ? hold[hr + r][8] : _mm512_setzero_ps();
    }
    wk512_rows(t, R, dec, nbc, xr, act_bytes, pr, acc, summs);
    const bool last = kc0 + nbc == nb;
    for (int r = 0; r < R; r++) {
        if (!last) {
            for (int l = 0; l < 8; l++) hold[hr + r][l] = acc[r][l];
            hold[hr + r][8] = summs[r];
            continue;
        }
        __m512 *a = acc[r];
        __m512 v = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                                 _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
        if (t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1) v = _mm512_add_ps(v, summs[r]);
        _mm512_storeu_ps(y + (size_t)(row + r) * ldy, v);
    }
}

/* Per type, the decoding of a chunk and the row tiles over it, each a function of its own:
 * inlined into one loop nest, GCC kept the decoding's constants in registers and spilled an
 * accumulator or a scale of the row tiles (Q4_0: 0.85 ms against Q8_0's 0.68, one thread). */
typedef struct {
    void (*decode)(const uint8_t *wa, const uint8_t *wb, size_t gb, int64_t nbc, wk512_block *dec);
    void (*rows)(const wk512_block *dec, int64_t kc0, int64_t nbc, int64_t nb, const char *x, size_t x_stride,
                 const wk_exact_xprep *prep, int64_t r0, int64_t rn, __m512 (*hold)[9], float *y, size_t ldy);
} wk512_fns;

#define WK512_FNS(T, SUF)                                                                                      \
    static __attribute__((noinline)) void wk512_decode_##SUF(const uint8_t *wa, const uint8_t *wb, size_t gb,  \
                                                             int64_t nbc, wk512_block *dec)                    \
    {                                                                                                          \
        wk512_decode_chunk(T, wa, wb, gb, nbc, dec);                                                           \
    }                                                                                                          \
    static __attribute__((noinline)) void wk512_rows_##SUF(                                                    \
        const wk512_block *dec, int64_t kc0, int64_t nbc, int64_t nb, const char *x, size_t x_stride,          \
        const wk_exact_xprep *prep, int64_t r0, int64_t rn, __m512 (*hold)[9], float *y, size_t ldy)           \
    {                                                                                                          \
        const size_t ab = wk_exact_geom_of(T, 32).act_bytes;                                                   \
        int64_t r = 0;                                                                                         \
        for (; r + 2 <= rn; r += 2) wk512_tile(T, 2, dec, kc0, nbc, nb, x, x_stride, ab, prep, r0 + r, hold, r, y, ldy); \
        if (r < rn) wk512_tile(T, 1, dec, kc0, nbc, nb, x, x_stride, ab, prep, r0 + r, hold, r, y, ldy);       \
    }
WK512_FNS(WK_TYPE_Q8_0, q8_0)
WK512_FNS(WK_TYPE_Q4_0, q4_0)
WK512_FNS(WK_TYPE_Q4_1, q4_1)
WK512_FNS(WK_TYPE_Q5_0, q5_0)
WK512_FNS(WK_TYPE_Q5_1, q5_1)

/* The pairs of groups g, g + 1 for g0 <= g < g1 (g1 - g0 even). */
static void wk512_pairs(const wk512_fns *f, wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1,
                        const void *x, size_t x_stride, const wk_exact_xprep *prep, int64_t m, float *y, size_t ldy)
{
    const wk_exact_geom G = wk_exact_geom_of(t, k);
    const size_t gb = 8 * G.blk_bytes; /* one block of a group */
    alignas(64) wk512_block dec[WK512_KC];
    alignas(64) __m512 hold[WK512_RB][9];
    /* k within one chunk: every row in one pass, nothing held between chunks */
    const int64_t pass = G.nb <= WK512_KC ? m : WK512_RB;
    for (int64_t g = g0; g < g1; g += 2) {
        for (int64_t r0 = 0; r0 < m; r0 += pass) {
            const int64_t rn = m - r0 < pass ? m - r0 : pass;
            for (int64_t kc0 = 0; kc0 < G.nb; kc0 += WK512_KC) {
                const int64_t nbc = G.nb - kc0 < WK512_KC ? G.nb - kc0 : WK512_KC;
                f->decode((const uint8_t *)w + wk_repacked_at(g, kc0, G.group_bytes, gb),
                          (const uint8_t *)w + wk_repacked_at(g + 1, kc0, G.group_bytes, gb), gb, nbc, dec);
                f->rows(dec, kc0, nbc, G.nb, x, x_stride, prep, r0, rn, hold, y + 8 * g, ldy);
            }
        }
    }
}

void wk_avx512_exact_groups(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                            size_t x_stride, const wk_exact_xprep *prep, int64_t m, float *y, size_t ldy)
{
    const int64_t g_end = g0 + ((g1 - g0) & ~(int64_t)1);
    static const wk512_fns q8_0 = {wk512_decode_q8_0, wk512_rows_q8_0}, q4_0 = {wk512_decode_q4_0, wk512_rows_q4_0},
                           q4_1 = {wk512_decode_q4_1, wk512_rows_q4_1}, q5_0 = {wk512_decode_q5_0, wk512_rows_q5_0},
                           q5_1 = {wk512_decode_q5_1, wk512_rows_q5_1};
    const wk512_fns *f = t == WK_TYPE_Q8_0   ? &q8_0
                         : t == WK_TYPE_Q4_0 ? &q4_0
                         : t == WK_TYPE_Q4_1 ? &q4_1
                         : t == WK_TYPE_Q5_0 ? &q5_0
                                             : &q5_1;
    wk512_pairs(f, t, k, w, g0, g_end, x, x_stride, prep, m, y, ldy);
    /* an odd last group: the AVX2 kernel, whose bits these are */
    if (g_end < g1) wk_avx2_exact_groups(t, k, w, g_end, g1, x, x_stride, m, y, ldy);
}
