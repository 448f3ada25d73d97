/* The K formats: scalar reference dot products with a Q8_K row.
 *
 * Per super-block everything is integer: for each group, the sum of quant times
 * activation, multiplied by the group's integer scale; the mins enter through the
 * activation's bsums (sums of 16 activations), multiplied by the group's integer min.
 * Only then are the two float factors applied: d = x.d * y.d and dmin = x.dmin * y.d.
 * The integer sums cannot overflow: at most 256 * 127 * 63 * 128 in magnitude. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "core/half.h"
#include "quant/formats.h"
#include "quant/kquants_internal.h"

/* Sum of q[l] * a[l] over len elements. */
static inline int32_t wk_isum(const int8_t *q, const int8_t *a, int len)
{
    int32_t s = 0;
    for (int l = 0; l < len; l++) s += (int32_t)q[l] * (int32_t)a[l];
    return s;
}

void wk_q2_K_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q2_K *x = vx;
    const wk_block_q8_K *y = vy;
    int8_t q[WK_QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        wk_q2_K_unpack(&x[i], q);
        int32_t isum = 0, imin = 0;
        for (int g = 0; g < WK_QK_K / 16; g++) {
            isum += (x[i].scales[g] & 0x0f) * wk_isum(q + 16 * g, y[i].qs + 16 * g, 16);
            imin += (x[i].scales[g] >> 4) * y[i].bsums[g];
        }
        const float d = y[i].d * wk_half_to_float(x[i].d);
        const float dmin = y[i].d * wk_half_to_float(x[i].dmin);
        sum += d * (float)isum - dmin * (float)imin;
    }
    *s = sum;
}

void wk_q3_K_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q3_K *x = vx;
    const wk_block_q8_K *y = vy;
    int8_t q[WK_QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        wk_q3_K_unpack(&x[i], q);
        int32_t isum = 0;
        for (int g = 0; g < WK_QK_K / 16; g++)
            isum += (wk_q3_scale(x[i].scales, g) - 32) * wk_isum(q + 16 * g, y[i].qs + 16 * g, 16);
        sum += (wk_half_to_float(x[i].d) * y[i].d) * (float)isum;
    }
    *s = sum;
}

/* Q4_K and Q5_K differ only in how the quants are unpacked. */
static float wk_k4_block_dot(const uint8_t *scales, uint16_t d16, uint16_t dmin16, const int8_t *q,
                             const wk_block_q8_K *y)
{
    int32_t isum = 0, imin = 0;
    for (int g = 0; g < WK_QK_K / 32; g++) {
        uint8_t sc, m;
        wk_k4_scale_min(scales, g, &sc, &m);
        isum += sc * wk_isum(q + 32 * g, y->qs + 32 * g, 32);
        imin += m * (y->bsums[2 * g] + y->bsums[2 * g + 1]);
    }
    const float d = wk_half_to_float(d16) * y->d;
    const float dmin = wk_half_to_float(dmin16) * y->d;
    return d * (float)isum - dmin * (float)imin;
}

void wk_q4_K_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q4_K *x = vx;
    const wk_block_q8_K *y = vy;
    int8_t q[WK_QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        wk_q4_K_unpack(&x[i], q);
        sum += wk_k4_block_dot(x[i].scales, x[i].d, x[i].dmin, q, &y[i]);
    }
    *s = sum;
}

void wk_q5_K_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q5_K *x = vx;
    const wk_block_q8_K *y = vy;
    int8_t q[WK_QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        wk_q5_K_unpack(&x[i], q);
        sum += wk_k4_block_dot(x[i].scales, x[i].d, x[i].dmin, q, &y[i]);
    }
    *s = sum;
}

void wk_q6_K_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q6_K *x = vx;
    const wk_block_q8_K *y = vy;
    int8_t q[WK_QK_K];
    float sum = 0.0f;
    for (int64_t i = 0; i < n / WK_QK_K; i++) {
        wk_q6_K_unpack(&x[i], q);
        int32_t isum = 0;
        for (int g = 0; g < WK_QK_K / 16; g++)
            isum += x[i].scales[g] * wk_isum(q + 16 * g, y[i].qs + 16 * g, 16);
        sum += (wk_half_to_float(x[i].d) * y[i].d) * (float)isum;
    }
    *s = sum;
}

void wk_q8_K_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q8_K *x = vx;
    const wk_block_q8_K *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / WK_QK_K; i++)
        sum += (x[i].d * y[i].d) * (float)wk_isum(x[i].qs, y[i].qs, WK_QK_K);
    *s = sum;
}
