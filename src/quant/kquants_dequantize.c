/* The K formats (Q2_K ... Q6_K, Q8_K): dequantization to f32 and f16.
 *
 * Each value is computed with the same float operations, in the same order, as
 * ggml's dequantize_row_q*_K (a product of the super-block scale and the group
 * scale, times the quant, minus the product of the super-block min and the group min),
 * each operation rounded on its own. ggml's reference build (libggml-base, -O3 for
 * baseline x86-64) has no FMA, so nothing is fused there; contraction is switched off
 * here so that a build with -mfma or -march=native still gives the same bits. (For
 * Q2_K/Q4_K/Q5_K a fused d*q - m would in fact round the same: d is an f16 times a
 * 6-bit scale and q has at most 5 bits, so the product is exact in f32.)
 * dequantize_f16 is exactly dequantize followed by round-to-nearest-even. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "core/half.h"
#include "quant/formats.h"
#include "quant/kquants_internal.h"

void wk_q2_K_dequantize(const void *restrict vx, float *restrict y, int64_t n)
{
    const wk_block_q2_K *x = vx;
    int8_t q[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, y += WK_QK_K) {
        const float d = wk_half_to_float(x[i].d);
        const float dmin = wk_half_to_float(x[i].dmin);
        wk_q2_K_unpack(&x[i], q);
        for (int g = 0; g < WK_QK_K / 16; g++) {
            const float dl = d * (float)(x[i].scales[g] & 0x0f);
            const float ml = dmin * (float)(x[i].scales[g] >> 4);
            for (int l = 0; l < 16; l++) y[16 * g + l] = dl * (float)q[16 * g + l] - ml;
        }
    }
}

void wk_q3_K_dequantize(const void *restrict vx, float *restrict y, int64_t n)
{
    const wk_block_q3_K *x = vx;
    int8_t q[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, y += WK_QK_K) {
        const float d = wk_half_to_float(x[i].d);
        wk_q3_K_unpack(&x[i], q);
        for (int g = 0; g < WK_QK_K / 16; g++) {
            const float dl = d * (float)(wk_q3_scale(x[i].scales, g) - 32);
            for (int l = 0; l < 16; l++) y[16 * g + l] = dl * (float)q[16 * g + l];
        }
    }
}

/* Q4_K and Q5_K share their scales: eight groups of 32, each d * scale * q - dmin * min. */
static void wk_k45_scale_rows(float d, float dmin, const uint8_t *scales, const int8_t *q,
                              float *restrict y)
{
    for (int g = 0; g < WK_QK_K / 32; g++) {
        uint8_t sc, m;
        wk_k4_scale_min(scales, g, &sc, &m);
        const float dl = d * (float)sc;
        const float ml = dmin * (float)m;
        for (int l = 0; l < 32; l++) y[32 * g + l] = dl * (float)q[32 * g + l] - ml;
    }
}

void wk_q4_K_dequantize(const void *restrict vx, float *restrict y, int64_t n)
{
    const wk_block_q4_K *x = vx;
    int8_t q[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, y += WK_QK_K) {
        const float d = wk_half_to_float(x[i].d);
        const float dmin = wk_half_to_float(x[i].dmin);
        wk_q4_K_unpack(&x[i], q);
        wk_k45_scale_rows(d, dmin, x[i].scales, q, y);
    }
}

void wk_q5_K_dequantize(const void *restrict vx, float *restrict y, int64_t n)
{
    const wk_block_q5_K *x = vx;
    int8_t q[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, y += WK_QK_K) {
        const float d = wk_half_to_float(x[i].d);
        const float dmin = wk_half_to_float(x[i].dmin);
        wk_q5_K_unpack(&x[i], q);
        wk_k45_scale_rows(d, dmin, x[i].scales, q, y);
    }
}

void wk_q6_K_dequantize(const void *restrict vx, float *restrict y, int64_t n)
{
    const wk_block_q6_K *x = vx;
    int8_t q[WK_QK_K];
    for (int64_t i = 0; i < n / WK_QK_K; i++, y += WK_QK_K) {
        const float d = wk_half_to_float(x[i].d);
        wk_q6_K_unpack(&x[i], q);
        for (int g = 0; g < WK_QK_K / 16; g++) {
            const float dl = d * (float)x[i].scales[g];
            for (int l = 0; l < 16; l++) y[16 * g + l] = dl * (float)q[16 * g + l];
        }
    }
}

void wk_q8_K_dequantize(const void *restrict vx, float *restrict y, int64_t n)
{
    const wk_block_q8_K *x = vx;
    for (int64_t i = 0; i < n / WK_QK_K; i++, y += WK_QK_K)
        for (int l = 0; l < WK_QK_K; l++) y[l] = x[i].d * (float)x[i].qs[l];
}

/* f16 output: one super-block at a time through a small f32 buffer. */
#define WK_K_TO_F16(t)                                                                             \
    void wk_##t##_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n)          \
    {                                                                                              \
        float buf[WK_QK_K];                                                                        \
        const uint8_t *src = x;                                                                    \
        for (int64_t i = 0; i < n / WK_QK_K; i++) {                                                \
            wk_##t##_dequantize(src + i * (int64_t)sizeof(wk_block_##t), buf, WK_QK_K);            \
            for (int l = 0; l < WK_QK_K; l++) y[i * WK_QK_K + l] = wk_float_to_half(buf[l]);       \
        }                                                                                          \
    }

WK_K_TO_F16(q2_K)
WK_K_TO_F16(q3_K)
WK_K_TO_F16(q4_K)
WK_K_TO_F16(q5_K)
WK_K_TO_F16(q6_K)
WK_K_TO_F16(q8_K)
