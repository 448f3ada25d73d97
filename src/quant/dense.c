/* Placeholder until the dense formats land: every function fails loudly by producing NaN. */
#include <math.h>
#include <string.h>
#include "quant/formats.h"

void wk_f32_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_f32_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_f32_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_f32_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_f16_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_f16_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_f16_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_f16_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_bf16_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_bf16_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_bf16_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_bf16_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
