/* Placeholder until the legacy formats land: every function fails loudly by producing NaN. */
#include <math.h>
#include <string.h>
#include "quant/formats.h"

void wk_q4_0_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q4_0_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q4_0_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q4_0_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q4_1_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q4_1_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q4_1_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q4_1_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q5_0_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q5_0_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q5_0_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q5_0_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q5_1_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q5_1_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q5_1_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q5_1_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q8_0_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q8_0_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q8_0_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q8_0_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q8_1_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q8_1_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q8_1_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q8_1_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
