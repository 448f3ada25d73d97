/* The scalar kernels: the reference every SIMD kernel is tested against. They are built
 * only from the type-traits table (vec_dot, dequantize), one output at a time. */
#include <string.h>

#include "cpu/kernels.h"
#include "quant/traits.h"

#define WK_SCALAR_MAX_BLOCK 256

/* Quantized form: the traits' own dot product of a weight row and an activation row. */
#define WK_SCALAR_GEMM_Q(name, T)                                                                 \
    static void name(int64_t k, int64_t nr, int64_t nc, const void *w, size_t w_stride,           \
                     const void *x, size_t x_stride, float *y, size_t ldy)                         \
    {                                                                                              \
        wk_vec_dot_fn dot = wk_traits(T)->vec_dot;                                                 \
        for (int64_t r = 0; r < nr; r++)                                                           \
            for (int64_t c = 0; c < nc; c++)                                                       \
                dot(k, &y[r * ldy + c], (const char *)w + c * w_stride,                            \
                    (const char *)x + r * x_stride);                                               \
    }

/* Precise form: each weight block dequantized by the traits, then multiplied with f32 x
 * in order of the elements. */
#define WK_SCALAR_GEMM_F32(name, T)                                                               \
    static void name(int64_t k, int64_t nr, int64_t nc, const void *w, size_t w_stride,           \
                     const void *x, size_t x_stride, float *y, size_t ldy)                         \
    {                                                                                              \
        const wk_type_traits *tr = wk_traits(T);                                                   \
        float tmp[WK_SCALAR_MAX_BLOCK];                                                            \
        int64_t bs = tr->block_size == 1 ? 64 : tr->block_size;                                    \
        for (int64_t r = 0; r < nr; r++) {                                                         \
            const float *xr = (const float *)((const char *)x + r * x_stride);                     \
            for (int64_t c = 0; c < nc; c++) {                                                     \
                const char *wr = (const char *)w + c * w_stride;                                   \
                float acc = 0.0f;                                                                  \
                for (int64_t i0 = 0; i0 < k; i0 += bs) {                                           \
                    int64_t len = k - i0 < bs ? k - i0 : bs;                                       \
                    tr->to_f32(wr + (size_t)(i0 / tr->block_size) * tr->block_bytes, tmp, len);    \
                    for (int64_t i = 0; i < len; i++) acc += tmp[i] * xr[i0 + i];                  \
                }                                                                                  \
                y[r * ldy + c] = acc;                                                              \
            }                                                                                      \
        }                                                                                          \
    }

#define WK_SCALAR_QUANTIZE(name, T)                                                               \
    static void name(const float *x, void *y, int64_t k) { wk_traits(T)->from_f32(x, y, k); }

#define WK_SCALAR_TYPE(t, T, VT)                                                                  \
    WK_SCALAR_GEMM_Q(wk_scalar_gemm_q_##t, T)                                                     \
    WK_SCALAR_GEMM_F32(wk_scalar_gemm_f32_##t, T)                                                 \
    WK_SCALAR_QUANTIZE(wk_scalar_quantize_##t, VT)                                                \
    static const wk_cpu_kernels wk_scalar_##t = {"scalar", wk_scalar_quantize_##t,                \
                                                 wk_scalar_gemm_q_##t, wk_scalar_gemm_f32_##t, NULL};

#define WK_SCALAR_DENSE(t, T)                                                                     \
    WK_SCALAR_GEMM_F32(wk_scalar_gemm_f32_##t, T)                                                 \
    static const wk_cpu_kernels wk_scalar_##t = {"scalar", NULL, NULL, wk_scalar_gemm_f32_##t, NULL};

WK_SCALAR_TYPE(q4_0, WK_TYPE_Q4_0, WK_TYPE_Q8_0)
WK_SCALAR_TYPE(q4_1, WK_TYPE_Q4_1, WK_TYPE_Q8_1)
WK_SCALAR_TYPE(q5_0, WK_TYPE_Q5_0, WK_TYPE_Q8_0)
WK_SCALAR_TYPE(q5_1, WK_TYPE_Q5_1, WK_TYPE_Q8_1)
WK_SCALAR_TYPE(q8_0, WK_TYPE_Q8_0, WK_TYPE_Q8_0)
WK_SCALAR_TYPE(q8_1, WK_TYPE_Q8_1, WK_TYPE_Q8_1)
WK_SCALAR_TYPE(q2_K, WK_TYPE_Q2_K, WK_TYPE_Q8_K)
WK_SCALAR_TYPE(q3_K, WK_TYPE_Q3_K, WK_TYPE_Q8_K)
WK_SCALAR_TYPE(q4_K, WK_TYPE_Q4_K, WK_TYPE_Q8_K)
WK_SCALAR_TYPE(q5_K, WK_TYPE_Q5_K, WK_TYPE_Q8_K)
WK_SCALAR_TYPE(q6_K, WK_TYPE_Q6_K, WK_TYPE_Q8_K)
WK_SCALAR_TYPE(q8_K, WK_TYPE_Q8_K, WK_TYPE_Q8_K)
WK_SCALAR_DENSE(f32, WK_TYPE_F32)
WK_SCALAR_DENSE(f16, WK_TYPE_F16)
WK_SCALAR_DENSE(bf16, WK_TYPE_BF16)

const wk_cpu_kernels *wk_cpu_kernels_scalar(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q4_0: return &wk_scalar_q4_0;
    case WK_TYPE_Q4_1: return &wk_scalar_q4_1;
    case WK_TYPE_Q5_0: return &wk_scalar_q5_0;
    case WK_TYPE_Q5_1: return &wk_scalar_q5_1;
    case WK_TYPE_Q8_0: return &wk_scalar_q8_0;
    case WK_TYPE_Q8_1: return &wk_scalar_q8_1;
    case WK_TYPE_Q2_K: return &wk_scalar_q2_K;
    case WK_TYPE_Q3_K: return &wk_scalar_q3_K;
    case WK_TYPE_Q4_K: return &wk_scalar_q4_K;
    case WK_TYPE_Q5_K: return &wk_scalar_q5_K;
    case WK_TYPE_Q6_K: return &wk_scalar_q6_K;
    case WK_TYPE_Q8_K: return &wk_scalar_q8_K;
    case WK_TYPE_F32: return &wk_scalar_f32;
    case WK_TYPE_F16: return &wk_scalar_f16;
    case WK_TYPE_BF16: return &wk_scalar_bf16;
    default: return NULL;
    }
}
