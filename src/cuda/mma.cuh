/* Internal (CUDA): pieces shared by the tensor-core matmul kernels (qmatmul.cu, qmv.cu):
 * 16 consecutive activations as floats, and the mma they feed. */
#ifndef WICK_CUDA_MMA_CUH
#define WICK_CUDA_MMA_CUH

#include <cuda_fp16.h>
#include <stdint.h>

namespace wkm {

/* Sixteen consecutive elements of x as floats (x 16-byte aligned). */
__device__ __forceinline__ void load16(const float *x, float (&v)[16])
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float4 f = reinterpret_cast<const float4 *>(x)[i];
        v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
    }
}
__device__ __forceinline__ void load16(const __half *x, float (&v)[16])
{
#pragma unroll
    for (int i = 0; i < 2; i++) {
        uint4 u = reinterpret_cast<const uint4 *>(x)[i];
        const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float2 f = __half22float2(h[j]);
            v[8 * i + 2 * j] = f.x, v[8 * i + 2 * j + 1] = f.y;
        }
    }
}

/* d += A (16 x 16, f16) * B (16 x 8, f16) in f32. */
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    /* Built for a GPU older than compute capability 8.0: never launched there, since the
     * context refuses such GPUs before any kernel runs. */
    (void)d, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
#endif
}

} // namespace wkm

#endif
