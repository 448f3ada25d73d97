/* Dense pieces of the CUDA engine: dequantizing weights (for the f32 and f16 forms),
 * f32 <-> f16 conversion, the cuBLAS forms, and the read-bandwidth kernel. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/cuda_util.cuh"
#include "cuda/qdecode.cuh"
#include "cuda/traits_cxx.h"

namespace {

template <typename OT> __device__ __forceinline__ OT from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

/* One thread per (block, step, quad): 4 values w = scale * q + add. */
template <class T, typename OT>
__global__ void dequant_kernel(const uint8_t *__restrict__ w, int64_t nblocks, OT *__restrict__ y)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t total = nblocks * T::S * 4;
    if (i >= total) return;
    int t = (int)(i & 3);
    int s = (int)((i >> 2) % T::S);
    int64_t b = (i >> 2) / T::S;
    uint32_t h01, h23;
    float scale, add;
    T::step(w + b * T::BYTES, s, t, h01, h23, scale, add);
    float2 q01 = __half22float2(*reinterpret_cast<__half2 *>(&h01));
    float2 q23 = __half22float2(*reinterpret_cast<__half2 *>(&h23));
    OT *o = y + b * T::QK + 16 * s + 4 * t;
    /* The same rounding as the CPU's dequantizers: one product, then the sum. */
    o[0] = from_f<OT>(__fadd_rn(__fmul_rn(scale, q01.x), add));
    o[1] = from_f<OT>(__fadd_rn(__fmul_rn(scale, q01.y), add));
    o[2] = from_f<OT>(__fadd_rn(__fmul_rn(scale, q23.x), add));
    o[3] = from_f<OT>(__fadd_rn(__fmul_rn(scale, q23.y), add));
}

template <typename IT> __device__ __forceinline__ float elem_f(const IT *p, int64_t i);
template <> __device__ __forceinline__ float elem_f<float>(const float *p, int64_t i) { return p[i]; }
template <> __device__ __forceinline__ float elem_f<__half>(const __half *p, int64_t i)
{
    return __half2float(p[i]);
}
template <> __device__ __forceinline__ float elem_f<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i)
{
    return __bfloat162float(p[i]);
}

template <typename IT, typename OT>
__global__ void convert_kernel(const IT *__restrict__ x, OT *__restrict__ y, int64_t count)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<OT>(elem_f<IT>(x, i));
}

template <typename IT, typename OT>
wk_status convert_launch(wk_cuda_ctx *c, const void *x, void *y, int64_t count)
{
    int64_t blocks = (count + 255) / 256;
    if (blocks > 65536) blocks = 65536;
    if (blocks < 1) blocks = 1;
    convert_kernel<IT, OT><<<(unsigned)blocks, 256, 0, c->stream>>>((const IT *)x, (OT *)y, count);
    return wk_cuda_check_launch("the conversion kernel");
}

template <class T, typename OT>
wk_status dequant_launch(wk_cuda_ctx *c, const void *w, int64_t nelem, void *y)
{
    int64_t nblocks = nelem / T::QK;
    int64_t threads = nblocks * T::S * 4;
    dequant_kernel<T, OT><<<(unsigned)((threads + 255) / 256), 256, 0, c->stream>>>(
        (const uint8_t *)w, nblocks, (OT *)y);
    return wk_cuda_check_launch("the dequantization kernel");
}

template <typename OT>
wk_status dequant_any(wk_cuda_ctx *c, wk_type t, const void *w, int64_t nelem, void *y)
{
    switch (t) {
    case WK_TYPE_Q4_0: return dequant_launch<wkq::q4_0, OT>(c, w, nelem, y);
    case WK_TYPE_Q4_1: return dequant_launch<wkq::q4_1, OT>(c, w, nelem, y);
    case WK_TYPE_Q5_0: return dequant_launch<wkq::q5_0, OT>(c, w, nelem, y);
    case WK_TYPE_Q5_1: return dequant_launch<wkq::q5_1, OT>(c, w, nelem, y);
    case WK_TYPE_Q8_0: return dequant_launch<wkq::q8_0, OT>(c, w, nelem, y);
    case WK_TYPE_Q8_1: return dequant_launch<wkq::q8_1, OT>(c, w, nelem, y);
    case WK_TYPE_Q2_K: return dequant_launch<wkq::q2_K, OT>(c, w, nelem, y);
    case WK_TYPE_Q3_K: return dequant_launch<wkq::q3_K, OT>(c, w, nelem, y);
    case WK_TYPE_Q4_K: return dequant_launch<wkq::q4_K, OT>(c, w, nelem, y);
    case WK_TYPE_Q5_K: return dequant_launch<wkq::q5_K, OT>(c, w, nelem, y);
    case WK_TYPE_Q6_K: return dequant_launch<wkq::q6_K, OT>(c, w, nelem, y);
    case WK_TYPE_Q8_K: return dequant_launch<wkq::q8_K, OT>(c, w, nelem, y);
    case WK_TYPE_F32: return convert_launch<float, OT>(c, w, y, nelem);
    case WK_TYPE_F16: return convert_launch<__half, OT>(c, w, y, nelem);
    case WK_TYPE_BF16: return convert_launch<__nv_bfloat16, OT>(c, w, y, nelem);
    default: break;
    }
    return wk_fail(WK_ERR_UNSUPPORTED, "CUDA dequantize: unknown weight type id %d", (int)t);
}

/* Q8_0 blocks (34 bytes: f16 scale, 32 codes) as Q8_1 blocks (36 bytes: the scale, the
 * f16 of scale * sum of codes, the codes): the same values, every block on a word. One
 * thread per block. */
__global__ void q8_0_to_q8_1_kernel(const uint8_t *__restrict__ src, int64_t nblocks,
                                    uint8_t *__restrict__ dst)
{
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nblocks) return;
    const uint16_t *s = reinterpret_cast<const uint16_t *>(src + b * 34); /* 2-byte aligned */
    uint32_t *d = reinterpret_cast<uint32_t *>(dst + b * 36);
    int sum = 0;
    uint32_t words[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint32_t w = (uint32_t)s[1 + 2 * i] | (uint32_t)s[2 + 2 * i] << 16;
        words[i] = w;
#pragma unroll
        for (int j = 0; j < 4; j++) sum += (int8_t)(w >> (8 * j));
    }
    const __half scale = __ushort_as_half(s[0]);
    const __half ssum = __float2half_rn(__half2float(scale) * (float)sum);
    d[0] = (uint32_t)s[0] | (uint32_t)__half_as_ushort(ssum) << 16;
#pragma unroll
    for (int i = 0; i < 8; i++) d[1 + i] = words[i];
}

/* Embedding rows: one thread per (row, block, step, quad) of the picked table rows. */
template <class T>
__global__ void embed_kernel(const uint8_t *__restrict__ w, size_t row_bytes, int64_t dim,
                             wk_dptr idsd, int rows, wk_dptr xd, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    const int32_t *ids = (const int32_t *)((char *)idsd.base + (dpos ? *dpos * idsd.stride : 0));
    float *x = (float *)((char *)xd.base + (dpos ? *dpos * xd.stride : 0));
    int64_t per_row = dim / T::QK * T::S * 4;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= per_row * rows) return;
    int r = (int)(i / per_row);
    int64_t j = i % per_row;
    int t = (int)(j & 3);
    int s = (int)((j >> 2) % T::S);
    int64_t b = (j >> 2) / T::S;
    uint32_t h01, h23;
    float scale, add;
    T::step(w + (size_t)ids[r] * row_bytes + b * T::BYTES, s, t, h01, h23, scale, add);
    float2 q01 = __half22float2(*reinterpret_cast<__half2 *>(&h01));
    float2 q23 = __half22float2(*reinterpret_cast<__half2 *>(&h23));
    float *o = x + (int64_t)r * dim + b * T::QK + 16 * s + 4 * t;
    o[0] = __fadd_rn(__fmul_rn(scale, q01.x), add);
    o[1] = __fadd_rn(__fmul_rn(scale, q01.y), add);
    o[2] = __fadd_rn(__fmul_rn(scale, q23.x), add);
    o[3] = __fadd_rn(__fmul_rn(scale, q23.y), add);
}

template <typename IT>
__global__ void embed_dense_kernel(const IT *__restrict__ w, int64_t dim, wk_dptr idsd, int rows,
                                   wk_dptr xd, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    const int32_t *ids = (const int32_t *)((char *)idsd.base + (dpos ? *dpos * idsd.stride : 0));
    float *x = (float *)((char *)xd.base + (dpos ? *dpos * xd.stride : 0));
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= dim * rows) return;
    int r = (int)(i / dim);
    int64_t d = i % dim;
    x[i] = elem_f<IT>(w + (size_t)ids[r] * dim, d);
}

template <class T>
wk_status embed_launch(wk_cuda_ctx *c, const void *w, int64_t dim, wk_dptr ids, int64_t rows,
                       wk_dptr x, const int64_t *dpos)
{
    size_t row_bytes = (size_t)(dim / T::QK) * T::BYTES;
    int64_t threads = dim / T::QK * T::S * 4 * rows;
    return wk_launch_pdl("the embedding kernel", embed_kernel<T>, dim3((unsigned)((threads + 255) / 256)),
                         dim3(256), 0, c->stream, (const uint8_t *)w, row_bytes, dim, ids, (int)rows, x, dpos);
}

template <typename IT>
wk_status embed_dense_launch(wk_cuda_ctx *c, const void *w, int64_t dim, wk_dptr ids, int64_t rows,
                             wk_dptr x, const int64_t *dpos)
{
    int64_t threads = dim * rows;
    return wk_launch_pdl("the embedding kernel", embed_dense_kernel<IT>, dim3((unsigned)((threads + 255) / 256)),
                         dim3(256), 0, c->stream, (const IT *)w, dim, ids, (int)rows, x, dpos);
}

__global__ void read_kernel(const uint4 *__restrict__ p, size_t n, float *sink)
{
    uint32_t acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldg(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) *sink = (float)acc; /* keeps the loads; practically never stores */
}

} // namespace

extern "C" wk_status wk_cuda_dequantize(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t nelem,
                                        void *dst, wk_type dst_type)
{
    const wk_type_traits *tr = wk_traits(wtype);
    if (!tr) return wk_fail(WK_ERR_INVALID, "CUDA dequantize: unknown weight type id %d", (int)wtype);
    if (nelem < 0 || nelem % tr->block_size != 0)
        return wk_fail(WK_ERR_INVALID, "CUDA dequantize: %lld elements is not a multiple of %s's "
                                       "block size %lld", (long long)nelem, tr->name,
                       (long long)tr->block_size);
    if (nelem == 0) return WK_OK;
    if (dst_type == WK_TYPE_F32) return dequant_any<float>(c, wtype, w, nelem, dst);
    if (dst_type == WK_TYPE_F16) return dequant_any<__half>(c, wtype, w, nelem, dst);
    return wk_fail(WK_ERR_INVALID, "CUDA dequantize: target type must be f32 or f16");
}

extern "C" wk_type wk_cuda_kept_type(wk_type t, int64_t n, int64_t k)
{
    if (wk_cuda_pack_enabled() && wk_cuda_pack_supports(t, n, k)) return wk_cuda_packed(t);
    return t == WK_TYPE_Q8_0 ? WK_TYPE_Q8_1 : t;
}

extern "C" wk_status wk_cuda_relayout(wk_cuda_ctx *c, wk_type t, const void *src, int64_t n, int64_t k,
                                      void *dst)
{
    if (wk_cuda_is_packed(wk_cuda_kept_type(t, n, k))) return wk_cuda_pack(c, t, src, n, k, dst);
    const int64_t nelem = n * k;
    if (t != WK_TYPE_Q8_0)
        return wk_fail(WK_ERR_INVALID, "CUDA relayout: %s weights are kept as they are",
                       wk_traits(t) ? wk_traits(t)->name : "(unknown type)");
    if (nelem < 0 || nelem % 32 != 0)
        return wk_fail(WK_ERR_INVALID, "CUDA relayout: %lld elements is not a multiple of q8_0's "
                                       "block size 32", (long long)nelem);
    const int64_t nblocks = nelem / 32;
    if (nblocks == 0) return WK_OK;
    q8_0_to_q8_1_kernel<<<(unsigned)((nblocks + 255) / 256), 256, 0, c->stream>>>(
        (const uint8_t *)src, nblocks, (uint8_t *)dst);
    return wk_cuda_check_launch("the q8_0 -> q8_1 relayout kernel");
}

extern "C" wk_status wk_cuda_convert(wk_cuda_ctx *c, const void *src, wk_type src_type, void *dst,
                                     wk_type dst_type, int64_t count)
{
    if (count <= 0) return WK_OK;
    if (src_type == WK_TYPE_F32 && dst_type == WK_TYPE_F16)
        return convert_launch<float, __half>(c, src, dst, count);
    if (src_type == WK_TYPE_F16 && dst_type == WK_TYPE_F32)
        return convert_launch<__half, float>(c, src, dst, count);
    if (src_type == dst_type && (src_type == WK_TYPE_F32 || src_type == WK_TYPE_F16))
        return wk_cuda_copy_d2d(c, dst, src, (size_t)count * (src_type == WK_TYPE_F32 ? 4 : 2));
    return wk_fail(WK_ERR_INVALID, "CUDA convert: only f32 <-> f16");
}

extern "C" wk_status wk_cuda_gemm(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n,
                                  int64_t k, const void *x, wk_type xtype, int64_t m, float *y)
{
    if (wtype != WK_TYPE_F32 && wtype != WK_TYPE_F16)
        return wk_fail(WK_ERR_INVALID, "CUDA dense matmul: weights must be f32 or f16");
    if (xtype != WK_TYPE_F32 && xtype != WK_TYPE_F16)
        return wk_fail(WK_ERR_INVALID, "CUDA matmul: input type must be f32 or f16");
    if (n <= 0 || k <= 0 || m <= 0 || n > INT32_MAX || k > INT32_MAX || m > INT32_MAX)
        return wk_fail(WK_ERR_INVALID, "CUDA dense matmul: bad sizes n = %lld, k = %lld, m = %lld",
                       (long long)n, (long long)k, (long long)m);
    /* Column-major view: y^T [n, m] = W^T^T ... i.e. C(n x m) = A^T(n x k) * B(k x m),
     * with A = W stored [n][k] row-major = k x n column-major. */
    const float one = 1.f, zero = 0.f;
    const void *xin = x;
    if (xtype != wtype) {
        size_t need = (size_t)(m * k) * (wtype == WK_TYPE_F32 ? 4 : 2);
        wk_status st = wk_cuda_scratch_reserve(c, need);
        if (st) return st;
        st = wk_cuda_convert(c, x, xtype, c->scratch, wtype, m * k);
        if (st) return st;
        xin = c->scratch;
    }
    cudaDataType dt = wtype == WK_TYPE_F32 ? CUDA_R_32F : CUDA_R_16F;
    cublasStatus_t bs = cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, w,
                                     dt, (int)k, xin, dt, (int)k, &zero, y, CUDA_R_32F, (int)n,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return wk_blas_err(bs, "cublasGemmEx");
}

extern "C" wk_status wk_cuda_read_kernel(wk_cuda_ctx *c, const void *buf, size_t bytes, float *sink)
{
    read_kernel<<<132 * 16, 512, 0, c->stream>>>((const uint4 *)buf, bytes / 16, sink);
    return wk_cuda_check_launch("the read-bandwidth kernel");
}

extern "C" wk_status wk_cuda_embed_rows(wk_cuda_ctx *c, wk_type t, const void *w, int64_t dim,
                                        wk_dptr ids, int64_t rows, wk_dptr x, const int64_t *dpos)
{
    if (rows <= 0) return WK_OK;
    const wk_type_traits *tr = wk_traits(t);
    if (!tr || dim % tr->block_size != 0)
        return wk_fail(WK_ERR_INVALID, "CUDA embedding: rows of %lld are not whole %s blocks",
                       (long long)dim, tr ? tr->name : "(unknown type)");
    switch (t) {
    case WK_TYPE_Q4_0: return embed_launch<wkq::q4_0>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q4_1: return embed_launch<wkq::q4_1>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q5_0: return embed_launch<wkq::q5_0>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q5_1: return embed_launch<wkq::q5_1>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q8_0: return embed_launch<wkq::q8_0>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q8_1: return embed_launch<wkq::q8_1>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q2_K: return embed_launch<wkq::q2_K>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q3_K: return embed_launch<wkq::q3_K>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q4_K: return embed_launch<wkq::q4_K>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q5_K: return embed_launch<wkq::q5_K>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q6_K: return embed_launch<wkq::q6_K>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_Q8_K: return embed_launch<wkq::q8_K>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_F32: return embed_dense_launch<float>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_F16: return embed_dense_launch<__half>(c, w, dim, ids, rows, x, dpos);
    case WK_TYPE_BF16: return embed_dense_launch<__nv_bfloat16>(c, w, dim, ids, rows, x, dpos);
    default: break;
    }
    return wk_fail(WK_ERR_UNSUPPORTED, "CUDA embedding: type %s", tr->name);
}
