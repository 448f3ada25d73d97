/* Placeholder until the K formats land: every function fails loudly by producing NaN. */
#include <math.h>
#include <string.h>
#include "quant/formats.h"

void wk_q2_K_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q2_K_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q2_K_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q2_K_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q3_K_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q3_K_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q3_K_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q3_K_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q4_K_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q4_K_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q4_K_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q4_K_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q5_K_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q5_K_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q5_K_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q5_K_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q6_K_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q6_K_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q6_K_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q6_K_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
void wk_q8_K_dequantize(const void *restrict x, float *restrict y, int64_t n) { (void)x; for (int64_t i = 0; i < n; i++) y[i] = NAN; }
void wk_q8_K_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n) { (void)x; memset(y, 0xff, (size_t)n * 2); }
void wk_q8_K_quantize(const float *restrict x, void *restrict y, int64_t n) { (void)x; (void)y; (void)n; }
void wk_q8_K_vec_dot(int64_t n, float *restrict s, const void *restrict x, const void *restrict y) { (void)n; (void)x; (void)y; *s = NAN; }
