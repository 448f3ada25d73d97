/* Internal: the scalar functions of every format, gathered by the traits table.
 * dense.c: F32, F16, BF16. legacy.c: the 32-element formats. kquants.c: the K formats. */
#ifndef WICK_QUANT_FORMATS_H
#define WICK_QUANT_FORMATS_H

#include <stdint.h>

#define WK_DECLARE_FORMAT(t)                                                                       \
    void wk_##t##_dequantize(const void *restrict x, float *restrict y, int64_t n);                    \
    void wk_##t##_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n);                 \
    void wk_##t##_quantize(const float *restrict x, void *restrict y, int64_t n);                  \
    void wk_##t##_vec_dot(int64_t n, float *restrict s, const void *restrict x,                    \
                          const void *restrict y);

WK_DECLARE_FORMAT(f32)
WK_DECLARE_FORMAT(f16)
WK_DECLARE_FORMAT(bf16)
WK_DECLARE_FORMAT(q4_0)
WK_DECLARE_FORMAT(q4_1)
WK_DECLARE_FORMAT(q5_0)
WK_DECLARE_FORMAT(q5_1)
WK_DECLARE_FORMAT(q8_0)
WK_DECLARE_FORMAT(q8_1)
WK_DECLARE_FORMAT(q2_K)
WK_DECLARE_FORMAT(q3_K)
WK_DECLARE_FORMAT(q4_K)
WK_DECLARE_FORMAT(q5_K)
WK_DECLARE_FORMAT(q6_K)
WK_DECLARE_FORMAT(q8_K)

#undef WK_DECLARE_FORMAT
#endif
