/* The dense formats (F32, F16, BF16): conversions and scalar reference dot products.
 *
 * Conversions are exact where the target holds the value and round to nearest even
 * otherwise (core/half.h): F16 as numpy's astype(float16) and ggml, BF16 as ggml and the
 * gguf package (NaN kept quiet, everything else rounded to nearest even).
 *
 * Dot products accumulate in double. Each product of two elements is exact in double
 * (at most 24 + 24 significant bits), so the only roundings are those of the running sum;
 * ggml's generic code rounds each product to float first, which is exact for F16 and BF16
 * products that stay in float's range and within half an ulp of float for F32. Because the
 * products are exact, a compiler that contracts sum + x*y into a fused multiply-add
 * computes the same sums: no contraction guard is needed here. */
#include <string.h>

#include "core/half.h"
#include "quant/formats.h"

/* ---- F32 ----------------------------------------------------------------------------- */

void wk_f32_dequantize(const void *restrict x, float *restrict y, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(float));
}

void wk_f32_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n)
{
    const float *v = x;
    for (int64_t i = 0; i < n; i++) y[i] = wk_float_to_half(v[i]);
}

void wk_f32_quantize(const float *restrict x, void *restrict y, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(float));
}

void wk_f32_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const float *x = vx, *y = vy;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i] * (double)y[i];
    *s = (float)sum;
}

/* ---- F16 ----------------------------------------------------------------------------- */

void wk_f16_dequantize(const void *restrict x, float *restrict y, int64_t n)
{
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = wk_half_to_float(h[i]);
}

/* Half to float to half is the identity for every value; copying also keeps the payload of
 * a signalling NaN, which the round trip would quieten. */
void wk_f16_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(uint16_t));
}

void wk_f16_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = wk_float_to_half(x[i]);
}

void wk_f16_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const uint16_t *x = vx, *y = vy;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)wk_half_to_float(x[i]) * (double)wk_half_to_float(y[i]);
    *s = (float)sum;
}

/* ---- BF16 ---------------------------------------------------------------------------- */

void wk_bf16_dequantize(const void *restrict x, float *restrict y, int64_t n)
{
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = wk_bf16_to_float(h[i]);
}

void wk_bf16_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n)
{
    const uint16_t *h = x;
    for (int64_t i = 0; i < n; i++) y[i] = wk_float_to_half(wk_bf16_to_float(h[i]));
}

void wk_bf16_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = wk_float_to_bf16(x[i]);
}

void wk_bf16_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const uint16_t *x = vx, *y = vy;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)wk_bf16_to_float(x[i]) * (double)wk_bf16_to_float(y[i]);
    *s = (float)sum;
}
