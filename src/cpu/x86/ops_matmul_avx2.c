/* AVX2 matmul pieces of the model's quantized form for the 32-element formats (Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0): the activation quantizers and the kernels of the repacked
 * 8-column groups (layouts in src/cpu/repack.h), in llama.cpp's rounding.
 *
 * Activations: per block of 32, d = amax / 127, codes round(x * (127 / amax)) to nearest
 * even (not the file quantizer's x * (1 / d) rounded half away from zero: the two differ
 * in a few codes per row), and for Q8_1 s = d * sum(codes), both stored as halves.
 *
 * Dot products: for each output, 8 float lanes; lane l takes the exact integer sum of
 * elements 4l..4l+3 of each block, times (dw * dx) added by one fused multiply-add, block
 * after block; then ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)), plus, with a min, the sum of
 * m * s over the blocks. Here the 8 lanes of one output are 8 registers each holding that
 * lane for the group's 8 outputs, so the same float operations happen in the same order. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/half.h"
#include "cpu/ops_internal.h"
#include "cpu/x86/exact_block_x86.h"
#include "cpu/x86/q6x8_avx2.h"
#include "quant/blocks.h"


/* The largest of the 8 lanes. */
WK_INLINE float wk_hmax8(__m256 v)
{
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

/* The 32 values v[0..3] times id rounded to nearest even as int8 (saturated: 128 -> 127). */
WK_INLINE __m256i wk_round_codes(const __m256 v[4], __m256 id)
{
    __m256i q[4];
    for (int i = 0; i < 4; i++)
        q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[i], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    /* Pack 32-bit to bytes; the packs interleave 128-bit halves, the permute restores order. */
    __m256i a = _mm256_packs_epi32(q[0], q[1]), b = _mm256_packs_epi32(q[2], q[3]);
    __m256i c = _mm256_packs_epi16(a, b);
    return _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* Codes of one block of 32: amax, d and the rounded codes. */
WK_INLINE __m256i wk_q8_codes(const float *x, float *d_out)
{
    __m256 v[4], sign = _mm256_set1_ps(-0.0f);
    __m256 mx = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, v[i]));
    }
    float amax = wk_hmax8(mx);
    *d_out = amax / 127.0f;
    return wk_round_codes(v, _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f));
}

void wk_avx2_act_q8_0(const float *x, void *vy, int64_t k)
{
    wk_block_q8_0 *y = vy;
    for (int64_t b = 0; b < k / 32; b++) {
        float d;
        __m256i q = wk_q8_codes(x + 32 * b, &d);
        y[b].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT); /* F16C: as wk_float_to_half */
        _mm256_storeu_si256((__m256i *)y[b].qs, q);
    }
}

void wk_avx2_act_q8_1(const float *x, void *vy, int64_t k)
{
    wk_block_q8_1 *y = vy;
    for (int64_t b = 0; b < k / 32; b++) {
        float d;
        __m256i q = wk_q8_codes(x + 32 * b, &d);
        _mm256_storeu_si256((__m256i *)y[b].qs, q);
        /* sum of the codes: pairs of bytes, then 32-bit lanes, then across */
        __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
        __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
        __m128i t = _mm_add_epi32(_mm256_extracti128_si256(s32, 1), _mm256_castsi256_si128(s32));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
        t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
        int sum = _mm_cvtsi128_si32(t);
        y[b].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT); /* F16C: as wk_float_to_half */
        y[b].s = _cvtss_sh(d * (float)sum, _MM_FROUND_TO_NEAREST_INT);
    }
}

/* Q8_K as the reference quantizer makes it (wk_q8_K_quantize), bit for bit: per 256,
 * the first value of the largest magnitude (max, with its sign), codes
 * min(127, round_even(x * (-127 / max))), d = 1 / (-127 / max), sums of 16 codes. */
void wk_avx2_act_q8_K(const float *x, void *vy, int64_t k)
{
    wk_block_q8_K *y = vy;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < k / 256; b++, x += 256) {
        __m256 mx = _mm256_setzero_ps();
        for (int i = 0; i < 32; i++) mx = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)), mx);
        const float amax = wk_hmax8(mx);
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        int at = 0;
        for (int i = 0; i < 32; i++) {
            __m256 eq = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)), _mm256_set1_ps(amax), _CMP_EQ_OQ);
            int mask = _mm256_movemask_ps(eq);
            if (mask) {
                at = 8 * i + __builtin_ctz((unsigned)mask);
                break;
            }
        }
        const float iscale = -127.0f / x[at];
        for (int c = 0; c < 8; c++) {
            __m256 v[4];
            for (int i = 0; i < 4; i++) v[i] = _mm256_loadu_ps(x + 32 * c + 8 * i);
            __m256i q = wk_round_codes(v, _mm256_set1_ps(iscale));
            _mm256_storeu_si256((__m256i *)(y[b].qs + 32 * c), q);
            /* sums of 4 codes (lanes 0-3: codes 0-15, 4-7: 16-31), then of 16 */
            __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
            s = _mm256_hadd_epi32(s, s);
            s = _mm256_hadd_epi32(s, s);
            y[b].bsums[2 * c] = (int16_t)_mm256_extract_epi32(s, 0);
            y[b].bsums[2 * c + 1] = (int16_t)_mm256_extract_epi32(s, 4);
        }
        y[b].d = 1.0f / iscale;
    }
}

enum { WK_ROWS = 8 }; /* activation rows per pass over a group's weights */

/* Rows r0..r1 (at most WK_ROWS) against NG groups (1, or the 2 of an interleaved pair, read
 * block by block as they lie): y[r*ldy + 8h + c] for group h at wg[h]. Each group's sums are
 * its own, in the same order either way. */
WK_INLINE void wk_group_rows(wk_type t, const int NG, const wk_exact_geom *G, const uint8_t *const *wg,
                             const char *x, size_t x_stride, int64_t nr, float *y, size_t ldy)
{
    bool has_min = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1;
    bool sgn = !has_min;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[2][WK_ROWS][8], summs[2][WK_ROWS];
    for (int h = 0; h < NG; h++)
        for (int64_t r = 0; r < nr; r++) {
            summs[h][r] = _mm256_setzero_ps();
            for (int l = 0; l < 8; l++) acc[h][r][l] = _mm256_setzero_ps();
        }
    /* prefetch: three lines of a lone group's block; a pair's two blocks whole with the first */
    const size_t pf1 = NG == 2 ? 16 * G->blk_bytes : 3 * 64;
    const size_t act_bytes = G->act_bytes;
    for (int64_t b = 0; b < G->nb; b++)
        for (int h = 0; h < NG; h++) {
            __m256i w[8], sg[8];
            const uint8_t *blk = wk_exact_block(t, wg[h], b, G->blk_bytes, h == 0 ? pf1 : 0, w, sg);
            __m256 wd = wk_load_f16x8(blk);
            __m256 wm = has_min ? wk_load_f16x8(blk + 16) : _mm256_setzero_ps();
            for (int64_t r = 0; r < nr; r++) {
                const char *xb = x + (size_t)r * x_stride + (size_t)b * act_bytes;
                uint16_t xd_h;
                memcpy(&xd_h, xb, 2);
                const int8_t *xq = (const int8_t *)(xb + act_bytes - 32);
                __m256 dd = _mm256_mul_ps(wd, _mm256_set1_ps(wk_half_to_float(xd_h)));
                for (int l = 0; l < 8; l++) {
                    __m256i xv = wk_bcast4(xq + 4 * l);
                    if (sgn) xv = _mm256_sign_epi8(xv, sg[l]);
                    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(w[l], xv), ones);
                    acc[h][r][l] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(p), acc[h][r][l]);
                }
                if (has_min) {
                    uint16_t s_h;
                    memcpy(&s_h, xb + 2, 2);
                    summs[h][r] = _mm256_add_ps(summs[h][r], _mm256_mul_ps(wm, _mm256_set1_ps(wk_half_to_float(s_h))));
                }
            }
        }
    for (int h = 0; h < NG; h++)
        for (int64_t r = 0; r < nr; r++) {
            __m256 *a = acc[h][r];
            __m256 v = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                                     _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
            if (has_min) v = _mm256_add_ps(v, summs[h][r]);
            _mm256_storeu_ps(y + (size_t)r * ldy + 8 * h, v);
        }
}

/* y[r*ldy + 8g + c] for rows r < m and groups g0 <= g < g1 of a repacked weight of type t
 * (k elements per row); x: m rows of activation blocks, x_stride bytes apart. The groups of
 * an interleaved pair are read together (one at a time, each read the pair's bytes with
 * gaps: 8 rows of Q8_0 at k = 576, one activation row from memory, one thread, 2.1-2.5 ms
 * against 1.2-1.4 for the groups apart). */
void wk_avx2_exact_groups(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                          size_t x_stride, int64_t m, float *y, size_t ldy)
{
    const wk_exact_geom G = wk_exact_geom_of(t, k);
    const size_t bb = 8 * G.blk_bytes;
    for (int64_t g = g0; g < g1;) {
        const int ng = wk_repacked_paired(bb) && g % 2 == 0 && g + 1 < g1 ? 2 : 1;
        const uint8_t *wg[2] = {(const uint8_t *)w + wk_repacked_at(g, 0, G.group_bytes, bb),
                                (const uint8_t *)w + wk_repacked_at(g + 1, 0, G.group_bytes, bb)};
        for (int64_t r0 = 0; r0 < m; r0 += WK_ROWS) {
            int64_t nr = m - r0 < WK_ROWS ? m - r0 : WK_ROWS;
            const char *xr = (const char *)x + (size_t)r0 * x_stride;
            float *yr = y + (size_t)r0 * ldy + 8 * g;
#define WK_GROUP_ROWS(T)                                                                           \
    (ng == 2 ? wk_group_rows(T, 2, &G, wg, xr, x_stride, nr, yr, ldy) : wk_group_rows(T, 1, &G, wg, xr, x_stride, nr, yr, ldy))
            switch (t) {
            case WK_TYPE_Q8_0: WK_GROUP_ROWS(WK_TYPE_Q8_0); break;
            case WK_TYPE_Q4_0: WK_GROUP_ROWS(WK_TYPE_Q4_0); break;
            case WK_TYPE_Q4_1: WK_GROUP_ROWS(WK_TYPE_Q4_1); break;
            case WK_TYPE_Q5_0: WK_GROUP_ROWS(WK_TYPE_Q5_0); break;
            default: WK_GROUP_ROWS(WK_TYPE_Q5_1); break;
            }
#undef WK_GROUP_ROWS
        }
        g += ng;
    }
}

/* ---- K formats ----------------------------------------------------------------------
 * Q4_K, as llama.cpp's 8-column kernels add: per output an exact integer sum of
 * scale * (codes · x) and one of min * (sums of x), each added by a fused multiply-add
 * with (d * dx) and (dmin * dx), once per super-block for a single row (its gemv) and once
 * per pair of sub-blocks for rows taken four at a time (its gemm: the leading m - m % 4
 * rows of a batch); the result is their difference.
 * Q6_K, as its one-output kernel adds: 8 lanes of exact integer sums over the super-block,
 * lane l holding scale * code * x of elements 4l..4l+3 of every 32 (codes 0..63) less
 * 32 * scale * x summed over sub-block l, times (dx * d) by one fused multiply-add each. */

/* The 64 scales or mins (index j*8 + c) of a Q4_Kx8 super-block, from their 48 bytes:
 * low 4 bits of v[t] and v[t+32] in A[t], high 2 bits of v[t], v[t+16], v[t+32], v[t+48]
 * at bits 0, 2, 4, 6 of B[t] (src/cpu/repack.c). */
static void wk_k4x8_decode(const uint8_t *in, int16_t out[64])
{
    const __m128i m4 = _mm_set1_epi8(0x0f), m2 = _mm_set1_epi8(3);
    __m128i a0 = _mm_loadu_si128((const __m128i *)in), a1 = _mm_loadu_si128((const __m128i *)(in + 16));
    __m128i b = _mm_loadu_si128((const __m128i *)(in + 32));
    __m128i h[4];
    for (int i = 0; i < 4; i++) h[i] = _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(b, 2 * i), m2), 4);
    __m128i v[4] = {
        _mm_or_si128(_mm_and_si128(a0, m4), h[0]),                    /* v[0..15] */
        _mm_or_si128(_mm_and_si128(a1, m4), h[1]),                    /* v[16..31] */
        _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a0, 4), m4), h[2]), /* v[32..47] */
        _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a1, 4), m4), h[3]), /* v[48..63] */
    };
    for (int i = 0; i < 4; i++) _mm256_storeu_si256((__m256i *)(out + 16 * i), _mm256_cvtepu8_epi16(v[i]));
}

/* 16 lanes of int16: lanes 2c and 2c+1 = v[c], for madd against pair sums per column. */
WK_INLINE __m256i wk_pairs16(const int16_t *v)
{
    __m128i w = _mm_loadu_si128((const __m128i *)v);
    return _mm256_set_m128i(_mm_unpackhi_epi16(w, w), _mm_unpacklo_epi16(w, w));
}

/* Rows 0..nr-1 (at most WK_ROWS) of x against one Q4_Kx8 group; `pairs`: rows below
 * n_pairs take the four-row order. */
static void wk_q4_Kx8_rows(int64_t nb, const uint8_t *wg, const wk_block_q8_K *x, size_t xs_blocks,
                           int64_t nr, int64_t n_pairs, float *y, size_t ldy)
{
    __m256 acc[WK_ROWS], accm[WK_ROWS];
    for (int64_t r = 0; r < nr; r++) acc[r] = accm[r] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = wg + (size_t)b * wk_repacked_step(8 * sizeof(wk_block_q4_K));
        int16_t sc[64], mn[64];
        wk_k4x8_decode(blk + 32, sc);
        wk_k4x8_decode(blk + 80, mn);
        __m256 wd = wk_load_f16x8(blk), wdm = wk_load_f16x8(blk + 16);
        for (int64_t r = 0; r < nr; r++) {
            const wk_block_q8_K *xb = x + (size_t)r * xs_blocks + b;
            bool pairs = r < n_pairs;
            __m256i isum = _mm256_setzero_si256(), imin = _mm256_setzero_si256();
            for (int j = 0; j < 8; j++) { /* sub-block j: elements 32j.., nibbles of pair j/2 */
                int p = j / 2;
                __m256i p16 = _mm256_setzero_si256();
                for (int s = 0; s < 8; s++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 128 + 256 * p + 32 * s));
                    __m256i q = (j & 1) ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
                    p16 = _mm256_add_epi16(p16, _mm256_maddubs_epi16(q, wk_bcast4(xb->qs + 32 * j + 4 * s)));
                }
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, wk_pairs16(sc + 8 * j)));
                int bs = xb->bsums[2 * j] + xb->bsums[2 * j + 1];
                imin = _mm256_add_epi32(imin, _mm256_madd_epi16(wk_pairs16(mn + 8 * j), _mm256_set1_epi32(bs & 0xffff)));
                if (j == 7 || (pairs && (j & 1))) {
                    __m256 dx = _mm256_set1_ps(xb->d);
                    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(wd, dx), acc[r]);
                    accm[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imin), _mm256_mul_ps(wdm, dx), accm[r]);
                    isum = imin = _mm256_setzero_si256();
                }
            }
        }
    }
    for (int64_t r = 0; r < nr; r++) _mm256_storeu_ps(y + (size_t)r * ldy, _mm256_sub_ps(acc[r], accm[r]));
}

static void wk_q6_Kx8_rows(int64_t nb, const uint8_t *wg, const wk_block_q8_K *x, size_t xs_blocks,
                           int64_t nr, float *y, size_t ldy)
{
    __m256 acc[WK_ROWS][8];
    for (int64_t r = 0; r < nr; r++)
        for (int l = 0; l < 8; l++) acc[r][l] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = wg + (size_t)b * wk_repacked_step(8 * sizeof(wk_block_q6_K));
        int16_t sc[128];
        for (int i = 0; i < 128; i++) sc[i] = (int8_t)blk[16 + i]; /* [group g][column c] */
        __m256i sc32[16];
        for (int g = 0; g < 16; g++) sc32[g] = _mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i *)(sc + 8 * g)));
        __m256 wd = wk_load_f16x8(blk);
        for (int64_t r = 0; r < nr; r++) {
            const wk_block_q8_K *xb = x + (size_t)r * xs_blocks + b;
            __m256i isum[8];
            for (int l = 0; l < 8; l++) isum[l] = _mm256_setzero_si256();
            for (int t = 0; t < 8; t++) { /* sub-block t: groups 2t and 2t + 1, steps 8t + l */
                __m256i s_lo = wk_pairs16(sc + 8 * (2 * t)), s_hi = wk_pairs16(sc + 8 * (2 * t + 1));
                __m256i q[8];
                wk_q6x8_group(blk + 144 + 96 * (2 * t), q);
                wk_q6x8_group(blk + 144 + 96 * (2 * t + 1), q + 4);
                for (int l = 0; l < 8; l++) {
                    __m256i p16 = _mm256_maddubs_epi16(q[l], wk_bcast4(xb->qs + 32 * t + 4 * l));
                    isum[l] = _mm256_add_epi32(isum[l], _mm256_madd_epi16(p16, l < 4 ? s_lo : s_hi));
                }
            }
            /* The codes' +32, taken off lane l for the whole of sub-block l: 32 * (scale *
             * sum of x) over its two groups of 16. */
            for (int l = 0; l < 8; l++) {
                __m256i a = _mm256_mullo_epi32(sc32[2 * l], _mm256_set1_epi32(xb->bsums[2 * l]));
                __m256i c = _mm256_mullo_epi32(sc32[2 * l + 1], _mm256_set1_epi32(xb->bsums[2 * l + 1]));
                isum[l] = _mm256_sub_epi32(isum[l], _mm256_slli_epi32(_mm256_add_epi32(a, c), 5));
            }
            __m256 d = _mm256_mul_ps(_mm256_set1_ps(xb->d), wd);
            for (int l = 0; l < 8; l++) acc[r][l] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum[l]), acc[r][l]);
        }
    }
    for (int64_t r = 0; r < nr; r++) {
        __m256 *a = acc[r];
        __m256 v = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                                 _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
        _mm256_storeu_ps(y + (size_t)r * ldy, v);
    }
}

void wk_avx2_exact_groups_k(wk_type t, int64_t k, const void *w, int64_t g0, int64_t g1, const void *x,
                            size_t x_stride, int64_t m, float *y, size_t ldy)
{
    int64_t nb = k / 256;
    size_t blk_bytes = t == WK_TYPE_Q4_K ? sizeof(wk_block_q4_K) : sizeof(wk_block_q6_K);
    size_t group_stride = (size_t)nb * 8 * blk_bytes;
    size_t xs_blocks = x_stride / sizeof(wk_block_q8_K);
    int64_t n_pairs = m & ~(int64_t)3; /* rows in fours: llama.cpp's gemm order for Q4_K */
    for (int64_t g = g0; g < g1; g++) {
        const uint8_t *wg = (const uint8_t *)w + wk_repacked_at(g, 0, group_stride, 8 * blk_bytes);
        for (int64_t r0 = 0; r0 < m; r0 += WK_ROWS) {
            int64_t nr = m - r0 < WK_ROWS ? m - r0 : WK_ROWS;
            const wk_block_q8_K *xr = (const wk_block_q8_K *)((const char *)x + (size_t)r0 * x_stride);
            float *yr = y + (size_t)r0 * ldy + 8 * g;
            if (t == WK_TYPE_Q4_K) wk_q4_Kx8_rows(nb, wg, xr, xs_blocks, nr, n_pairs - r0, yr, ldy);
            else wk_q6_Kx8_rows(nb, wg, xr, xs_blocks, nr, yr, ldy);
        }
    }
}
