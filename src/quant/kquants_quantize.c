/* The K formats: reference quantizers, byte-identical to ggml's quantize_row_q*_K_ref
 * (the quantizers without an importance matrix).
 *
 * Each format first searches, per group of 16 or 32 values, for a good scale (and
 * min), then quantizes the group scales themselves to 4, 6 or 8 bits against one f16
 * super-block scale, and finally re-quantizes every value against the group scale it
 * will really be decoded with. The searches are greedy and compare float sums, so
 * matching ggml's bytes means matching its float arithmetic operation by operation:
 *
 *  - Every product, sum and quotient is rounded on its own, in ggml's order
 *    (left to right: w*x*l is (w*x)*l; (x + dm)/d is a true division, not a product
 *    with a reciprocal). ggml's reference quantizers live in libggml-base, which
 *    llama.cpp builds with -O3 for baseline x86-64: no FMA instructions exist there,
 *    so nothing is contracted. Checked against llama-cpp-python's libggml-base.so:
 *    its quantize_row_q*_K_ref contain no vfmadd instructions, and these quantizers
 *    reproduce its bytes on every fixture row only with contraction off (see
 *    tests/test_quant_kquants.c). GCC contracts a*b+c into an FMA by default whenever
 *    the target has one (-ffp-contract=fast for GNU C), which changes the searches'
 *    choices: built with -march=native and contraction allowed, 31 of the 126 fixture
 *    rows differ (Q2_K 8, Q4_K 5, Q5_K 12, Q6_K 6; Q3_K and Q8_K happen to agree).
 *    So contraction is switched off for this file: GCC by its optimize pragma, clang
 *    by the standard pragma (honoured unless clang is given -ffp-contract=fast
 *    explicitly, which disregards pragmas; the fixture test catches such a build).
 *  - Rounding to the nearest integer is ties-to-even, done as ggml does by adding
 *    1.5 * 2^23 in float (exact for |v| < 2^22).
 *  - Quants that a group with a zero decoded scale would re-quantize keep the values
 *    of the search, as in ggml.
 *  - Q8_K: for an all-zero super-block ggml leaves bsums unwritten; wick writes 0s
 *    (which is also what they sum to). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stdbool.h>

#include "core/half.h"
#include "quant/formats.h"
#include "quant/kquants_internal.h"

/* Below this magnitude a group counts as all zero. */
#define WK_GROUP_EPS 1e-15f

static inline int wk_imin(int a, int b) { return a < b ? a : b; }
static inline int wk_imax(int a, int b) { return a > b ? a : b; }
static inline int wk_clamp(int v, int lo, int hi) { return wk_imax(lo, wk_imin(hi, v)); }

/* Round to nearest, ties to even: adding 1.5 * 2^23 leaves the integer in the low
 * mantissa bits (offset by 2^22). Valid for |v| < 2^22. */
static inline int wk_nearest(float v)
{
    float t = v + 12582912.0f;
    uint32_t u;
    memcpy(&u, &t, 4);
    return (int)(u & 0x007fffffu) - 0x00400000;
}

/* Value of largest magnitude, keeping its sign (the first one on ties). */
static inline float wk_signed_absmax(const float *x, int n, float *amax_out)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    *amax_out = amax;
    return max;
}

/* Symmetric scale for Q6_K (ggml's make_qx_quants with weights x^2): start from
 * -nmax/max, then try 18 nearby reciprocal scales and keep the one whose
 * least-squares fit (weights x^2) explains the most. L gets values 0..2*nmax-1
 * (quant + nmax). Returns the scale. */
static float wk_search_symmetric(int n, int nmax, const float *x, int8_t *L)
{
    float amax;
    const float max = wk_signed_absmax(x, n, &amax);
    if (amax < WK_GROUP_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = wk_clamp(wk_nearest(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = wk_clamp(wk_nearest(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + wk_clamp(wk_nearest(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Symmetric scale for Q3_K (ggml's make_q3_quants with rmse): quantize with -nmax/max,
 * then up to 5 passes that move single values to the level the current fit prefers,
 * keeping a move only if it improves the weighted (x^2) fit. L gets 0..2*nmax-1. */
static float wk_search_q3(int n, int nmax, const float *x, int8_t *L)
{
    float amax;
    const float max = wk_signed_absmax(x, n, &amax);
    if (amax < WK_GROUP_EPS) {
        for (int i = 0; i < n; i++) L[i] = 0;
        return 0.0f;
    }
    const float iscale = (float)-nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = wk_clamp(wk_nearest(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float)L[i] * (float)L[i];
                int nl = wk_clamp(wk_nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (nl != L[i]) {
                    slx += w * x[i] * (float)nl;
                    sl2 += w * (float)nl * (float)nl;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)nl;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Scale and min for the affine formats (ggml's make_qkx2_quants): x ~ scale * L - min_out
 * with L in 0..nmax. Starts from the full range [min(x,0), max(x)], then tries nstep+1
 * reciprocal scales (nmax + rmin + rdelta*k) / range, each followed by a weighted
 * least-squares fit of scale and min, keeping the one of smallest weighted error
 * (absolute when use_mad, else squared). *min_out receives -min (>= 0). */
static float wk_search_affine(int n, int nmax, const float *x, const float *w, uint8_t *L,
                              float *min_out, uint8_t *Laux, float rmin, float rdelta, int nstep,
                              bool use_mad)
{
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0.0f) min = 0.0f;
    if (max == min) {
        for (int i = 0; i < n; i++) L[i] = 0;
        *min_out = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = wk_clamp(wk_nearest(iscale * (x[i] - min)), 0, nmax);
        L[i] = (uint8_t)l;
        float diff = scale * (float)l + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = wk_clamp(wk_nearest(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0.0f;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                err += w[i] * diff;
            }
            if (err < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *min_out = -min;
    return scale;
}

/* Pack 256 2-bit values: byte 32*(e/128) + e%32, bits 2*((e/32)%4). */
static void wk_pack_2bit(const uint8_t *L, uint8_t *qs)
{
    for (int j = 0; j < WK_QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                      (L[j + l + 96] << 6));
}

void wk_q2_K_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q2_K *y = vy;
    uint8_t L[WK_QK_K], Laux[16];
    float w[16], scales[WK_QK_K / 16], mins[WK_QK_K / 16];
    const float q4scale = 15.0f;

    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (int g = 0; g < WK_QK_K / 16; g++) {
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * g + l]);
            scales[g] = wk_search_affine(16, 3, x + 16 * g, w, L + 16 * g, &mins[g], Laux, -0.5f,
                                         0.1f, 15, true);
            if (scales[g] > max_scale) max_scale = scales[g];
            if (mins[g] > max_min) max_min = mins[g];
        }
        if (max_scale > 0.0f) {
            const float iscale = q4scale / max_scale;
            for (int g = 0; g < WK_QK_K / 16; g++)
                y[i].scales[g] = (uint8_t)wk_nearest(iscale * scales[g]);
            y[i].d = wk_float_to_half(max_scale / q4scale);
        } else {
            for (int g = 0; g < WK_QK_K / 16; g++) y[i].scales[g] = 0;
            y[i].d = wk_float_to_half(0.0f);
        }
        if (max_min > 0.0f) {
            const float iscale = q4scale / max_min;
            for (int g = 0; g < WK_QK_K / 16; g++)
                y[i].scales[g] |= (uint8_t)((unsigned)wk_nearest(iscale * mins[g]) << 4);
            y[i].dmin = wk_float_to_half(max_min / q4scale);
        } else {
            y[i].dmin = wk_float_to_half(0.0f);
        }
        for (int g = 0; g < WK_QK_K / 16; g++) {
            const float d = wk_half_to_float(y[i].d) * (float)(y[i].scales[g] & 0x0f);
            if (d == 0.0f) continue;
            const float dm = wk_half_to_float(y[i].dmin) * (float)(y[i].scales[g] >> 4);
            for (int l = 0; l < 16; l++)
                L[16 * g + l] = (uint8_t)wk_clamp(wk_nearest((x[16 * g + l] + dm) / d), 0, 3);
        }
        wk_pack_2bit(L, y[i].qs);
    }
}

void wk_q3_K_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q3_K *y = vy;
    int8_t L[WK_QK_K];
    float scales[WK_QK_K / 16];

    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K) {
        float max_scale = 0.0f, amax = 0.0f;
        for (int g = 0; g < WK_QK_K / 16; g++) {
            scales[g] = wk_search_q3(16, 4, x + 16 * g, L + 16 * g);
            float a = fabsf(scales[g]);
            if (a > amax) {
                amax = a;
                max_scale = scales[g];
            }
        }
        memset(y[i].scales, 0, sizeof y[i].scales);
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int g = 0; g < WK_QK_K / 16; g++) {
                /* ggml stores the rounded value in an int8_t before clamping */
                int8_t r = (int8_t)wk_nearest(iscale * scales[g]);
                int l = wk_clamp(r, -32, 31) + 32;
                if (g < 8)
                    y[i].scales[g] = (uint8_t)(l & 0x0f);
                else
                    y[i].scales[g - 8] |= (uint8_t)((l & 0x0f) << 4);
                y[i].scales[8 + g % 4] |= (uint8_t)((l >> 4) << (2 * (g / 4)));
            }
            y[i].d = wk_float_to_half(1.0f / iscale);
        } else {
            y[i].d = wk_float_to_half(0.0f);
        }
        for (int g = 0; g < WK_QK_K / 16; g++) {
            const float d = wk_half_to_float(y[i].d) * (float)(wk_q3_scale(y[i].scales, g) - 32);
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; l++)
                L[16 * g + l] = (int8_t)(wk_clamp(wk_nearest(x[16 * g + l] / d), -4, 3) + 4);
        }
        /* bit 2 of value e goes to hmask[e%32] bit e/32; the low 2 bits as in Q2_K */
        uint8_t low[WK_QK_K];
        memset(y[i].hmask, 0, sizeof y[i].hmask);
        for (int e = 0; e < WK_QK_K; e++) {
            if (L[e] > 3) y[i].hmask[e % 32] |= (uint8_t)(1u << (e / 32));
            low[e] = (uint8_t)(L[e] & 3);
        }
        wk_pack_2bit(low, y[i].qs);
    }
}

/* Group scales and mins of Q4_K/Q5_K: weights sqrt(mean x^2) + |x|, then the 6-bit
 * packing of the 8 scales and 8 mins and the two f16 super-block factors. */
static void wk_k4_scales(const float *x, int nmax, float rmin, int nstep, uint8_t *L,
                         uint8_t packed[WK_K_SCALE_SIZE], uint16_t *d, uint16_t *dmin)
{
    uint8_t Laux[32];
    float w[32], scales[WK_QK_K / 32], mins[WK_QK_K / 32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int g = 0; g < WK_QK_K / 32; g++) {
        const float *xg = x + 32 * g;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++) sum_x2 += xg[l] * xg[l];
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xg[l]);
        scales[g] = wk_search_affine(32, nmax, xg, w, L + 32 * g, &mins[g], Laux, rmin, 0.1f,
                                     nstep, false);
        if (scales[g] > max_scale) max_scale = scales[g];
        if (mins[g] > max_min) max_min = mins[g];
    }
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    for (int g = 0; g < WK_QK_K / 32; g++) {
        /* ggml keeps the rounded value in a uint8_t (wrapping) before the MIN with 63 */
        uint8_t ls = (uint8_t)wk_nearest(inv_scale * scales[g]);
        uint8_t lm = (uint8_t)wk_nearest(inv_min * mins[g]);
        if (ls > 63) ls = 63;
        if (lm > 63) lm = 63;
        if (g < 4) {
            packed[g] = ls;
            packed[g + 4] = lm;
        } else {
            packed[g + 4] = (uint8_t)((ls & 0x0f) | ((lm & 0x0f) << 4));
            packed[g - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[g] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d = wk_float_to_half(max_scale / 63.0f);
    *dmin = wk_float_to_half(max_min / 63.0f);
}

/* Re-quantize every group against its decoded scale and min. */
static void wk_k4_requantize(const float *x, int nmax, const uint8_t *packed, uint16_t d16,
                             uint16_t dmin16, uint8_t *L)
{
    for (int g = 0; g < WK_QK_K / 32; g++) {
        uint8_t sc, m;
        wk_k4_scale_min(packed, g, &sc, &m);
        const float d = wk_half_to_float(d16) * (float)sc;
        if (d == 0.0f) continue;
        const float dm = wk_half_to_float(dmin16) * (float)m;
        for (int l = 0; l < 32; l++)
            L[32 * g + l] = (uint8_t)wk_clamp(wk_nearest((x[32 * g + l] + dm) / d), 0, nmax);
    }
}

void wk_q4_K_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q4_K *y = vy;
    uint8_t L[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K) {
        memset(y[i].scales, 0, sizeof y[i].scales);
        wk_k4_scales(x, 15, -1.0f, 20, L, y[i].scales, &y[i].d, &y[i].dmin);
        wk_k4_requantize(x, 15, y[i].scales, y[i].d, y[i].dmin, L);
        /* value e: nibble of qs[32*(e/64) + e%32], high nibble when (e/32) is odd */
        for (int j = 0; j < WK_QK_K; j += 64)
            for (int l = 0; l < 32; l++)
                y[i].qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

void wk_q5_K_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q5_K *y = vy;
    uint8_t L[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K) {
        memset(y[i].scales, 0, sizeof y[i].scales);
        wk_k4_scales(x, 31, -0.5f, 15, L, y[i].scales, &y[i].d, &y[i].dmin);
        wk_k4_requantize(x, 31, y[i].scales, y[i].d, y[i].dmin, L);
        /* low 4 bits as Q4_K; bit 4 of value e goes to qh[e%32] bit e/32 */
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int e = 0; e < WK_QK_K; e++)
            if (L[e] > 15) y[i].qh[e % 32] |= (uint8_t)(1u << (e / 32));
        for (int j = 0; j < WK_QK_K; j += 64)
            for (int l = 0; l < 32; l++)
                y[i].qs[j / 2 + l] = (uint8_t)((L[j + l] & 0x0f) | ((L[j + l + 32] & 0x0f) << 4));
    }
}

void wk_q6_K_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q6_K *y = vy;
    int8_t L[WK_QK_K];
    float scales[WK_QK_K / 16];

    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K) {
        float max_scale = 0.0f, max_abs = 0.0f;
        for (int g = 0; g < WK_QK_K / 16; g++) {
            scales[g] = wk_search_symmetric(16, 32, x + 16 * g, L + 16 * g);
            float a = fabsf(scales[g]);
            if (a > max_abs) {
                max_abs = a;
                max_scale = scales[g];
            }
        }
        if (max_abs < WK_GROUP_EPS) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -128.0f / max_scale;
        y[i].d = wk_float_to_half(1.0f / iscale);
        for (int g = 0; g < WK_QK_K / 16; g++)
            y[i].scales[g] = (int8_t)wk_imin(127, wk_nearest(iscale * scales[g]));
        for (int g = 0; g < WK_QK_K / 16; g++) {
            const float d = wk_half_to_float(y[i].d) * (float)y[i].scales[g];
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; l++)
                L[16 * g + l] = (int8_t)(wk_clamp(wk_nearest(x[16 * g + l] / d), -32, 31) + 32);
        }
        /* value e (0..63 after +32): low nibble into ql[64*(e/128) + e%64] (high nibble
         * when e%128 >= 64), top 2 bits into qh[32*(e/128) + e%32] at 2*((e%128)/32) */
        memset(y[i].ql, 0, sizeof y[i].ql);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int e = 0; e < WK_QK_K; e++) {
            const int r = e % 128;
            const uint8_t v = (uint8_t)L[e];
            y[i].ql[64 * (e / 128) + r % 64] |= (uint8_t)((v & 0x0f) << (r < 64 ? 0 : 4));
            y[i].qh[32 * (e / 128) + r % 32] |= (uint8_t)((v >> 4) << (2 * (r / 32)));
        }
    }
}

void wk_q8_K_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q8_K *y = vy;
    for (int64_t i = 0; i < n / WK_QK_K; i++, x += WK_QK_K) {
        float amax;
        const float max = wk_signed_absmax(x, WK_QK_K, &amax);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* -127 rather than -128 keeps every quant within [-127, 127] */
        const float iscale = -127.0f / max;
        for (int l = 0; l < WK_QK_K; l++) y[i].qs[l] = (int8_t)wk_imin(127, wk_nearest(iscale * x[l]));
        for (int g = 0; g < WK_QK_K / 16; g++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += y[i].qs[16 * g + l];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}
