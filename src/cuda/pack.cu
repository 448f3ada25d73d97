/* The packed GPU layout (qpack.cuh): made from GGUF rows when a weight is uploaded,
 * turned back into GGUF rows for the kernels that read rows (the decode attention launch),
 * and dequantized for the many-row path. Each runs once per weight or per prefill call. */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/cuda_util.cuh"
#include "cuda/qpack.cuh"
#include "cuda/traits_cxx.h"

namespace {

/* The stored code (q + BIAS, fifth bit included) of element j of a GGUF block. */
template <class P> __device__ __forceinline__ int gguf_code(const uint8_t *blk, int j)
{
    if constexpr (P::BITS == 8) {
        return blk[P::QS_AT + j] ^ 0x80; /* int8 q as q + 128 */
    } else {
        const uint8_t *qs = blk + P::QS_AT;
        int q = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
        if constexpr (P::BITS == 5) {
            const uint32_t qh = (uint32_t)blk[P::QH_AT] | (uint32_t)blk[P::QH_AT + 1] << 8 |
                                (uint32_t)blk[P::QH_AT + 2] << 16 | (uint32_t)blk[P::QH_AT + 3] << 24;
            q |= (int)((qh >> j) & 1u) << 4;
        }
        return q;
    }
}
__device__ __forceinline__ uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
__device__ __forceinline__ void st16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

/* One thread per (row group, chunk, lane): the lane's words of the chunk. */
template <class P>
__global__ void pack_kernel(const uint8_t *__restrict__ src, int64_t groups, int nch, size_t row_bytes,
                            uint8_t *__restrict__ dst)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= groups * nch * 32) return;
    const int lane = (int)(id & 31), g = lane >> 2, t = lane & 3;
    const int64_t gc = id >> 5, G = gc / nch;
    const int c = (int)(gc - G * nch);
    uint8_t *ch = dst + gc * P::CB;
    const uint8_t *rows[2] = {src + (size_t)(16 * G + g) * row_bytes + (size_t)(2 * c) * P::GB,
                              src + (size_t)(16 * G + g + 8) * row_bytes + (size_t)(2 * c) * P::GB};
    uint32_t w[8] = {0, 0, 0, 0, 0, 0, 0, 0}, qh = 0;
    for (int s = 0; s < 4; s++)
        for (int up = 0; up < 2; up++)
            for (int i = 0; i < 4; i++) {
                const int e = 16 * s + 4 * t + i; /* element of the chunk row */
                const uint32_t q = (uint32_t)gguf_code<P>(rows[up] + (e >> 5) * P::GB, e & 31);
                if constexpr (P::BITS == 8) {
                    w[2 * s + up] |= q << (8 * i);
                } else {
                    w[s] |= (q & 15u) << ((i & 1) * 16 + (i >> 1) * 4 + up * 8);
                    if constexpr (P::BITS == 5)
                        qh |= ((q >> 4) & 1u) << (4 * s + (i >> 1) + 2 * up + 16 * (i & 1));
                }
            }
    uint32_t *cw = reinterpret_cast<uint32_t *>(ch + 16 * lane);
    for (int i = 0; i < 4; i++) cw[i] = w[i];
    if constexpr (P::BITS == 8) {
        uint32_t *cw2 = reinterpret_cast<uint32_t *>(ch + 512 + 16 * lane);
        for (int i = 0; i < 4; i++) cw2[i] = w[4 + i];
    }
    if constexpr (P::BITS == 5) *reinterpret_cast<uint32_t *>(ch + P::CODE + 4 * lane) = qh;
    if (t == 0)
        for (int b = 0; b < 2; b++)
            for (int up = 0; up < 2; up++) {
                st16(ch + wkp::scale_off<P>(g + 8 * up, b), ld16(rows[up] + b * P::GB));
                if constexpr (P::ADD) st16(ch + wkp::scale_off<P>(g + 8 * up, b) + 8, ld16(rows[up] + b * P::GB + 2));
            }
}

/* One thread per GGUF block (row r, block bi): the block written back in its rows. */
template <class P>
__global__ void unpack_kernel(const uint8_t *__restrict__ src, int64_t n, int nblk, uint8_t *__restrict__ dst)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= n * nblk) return;
    const int64_t r = id / nblk;
    const int bi = (int)(id - r * nblk), c = bi >> 1, b = bi & 1, rr = (int)(r & 15);
    const uint8_t *ch = src + ((r >> 4) * (nblk / 2) + c) * P::CB;
    uint8_t *blk = dst + ((size_t)r * nblk + bi) * P::GB;
    st16(blk, ld16(ch + wkp::scale_off<P>(rr, b)));
    if constexpr (P::ADD) st16(blk + 2, ld16(ch + wkp::scale_off<P>(rr, b) + 8));
    if constexpr (P::BITS == 8) {
        for (int j = 0; j < 32; j++) blk[P::QS_AT + j] = (uint8_t)(wkp::code_at<P>(ch, rr, 32 * b + j) ^ 0x80);
    } else {
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const int lo = wkp::code_at<P>(ch, rr, 32 * b + j), hi = wkp::code_at<P>(ch, rr, 32 * b + 16 + j);
            blk[P::QS_AT + j] = (uint8_t)((lo & 15) | (hi & 15) << 4);
            qh |= (uint32_t)((lo >> 4) & 1) << j | (uint32_t)((hi >> 4) & 1) << (16 + j);
        }
        if constexpr (P::BITS == 5)
            for (int i = 0; i < 4; i++) blk[P::QH_AT + i] = (uint8_t)(qh >> (8 * i));
    }
}

template <typename OT> __device__ __forceinline__ void store4(OT *o, float a, float b, float c, float d);
template <> __device__ __forceinline__ void store4<float>(float *o, float a, float b, float c, float d)
{
    *reinterpret_cast<float4 *>(o) = make_float4(a, b, c, d);
}
template <> __device__ __forceinline__ void store4<__half>(__half *o, float a, float b, float c, float d)
{
    const __half2 x = __floats2half2_rn(a, b), y = __floats2half2_rn(c, d);
    *reinterpret_cast<uint2 *>(o) = make_uint2(*reinterpret_cast<const uint32_t *>(&x),
                                               *reinterpret_cast<const uint32_t *>(&y));
}

/* One thread per (row group, chunk, lane): its 32 weights, w = d q + m with the CPU's
 * rounding (one product, then the sum), as the rows' dequantization kernel. */
template <class P, typename OT>
__global__ void dequant_packed_kernel(const uint8_t *__restrict__ w, int64_t groups, int nch, int64_t k,
                                      OT *__restrict__ y)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= groups * nch * 32) return;
    const int lane = (int)(id & 31), g = lane >> 2, t = lane & 3;
    const int64_t gc = id >> 5, G = gc / nch;
    const int c = (int)(gc - G * nch);
    wkp::frag<P> f;
    wkp::load<P>(w + gc * P::CB, lane, f);
#pragma unroll
    for (int s = 0; s < 4; s++) {
        uint32_t a[4];
        wkp::step<P>(f, s, a[0], a[1], a[2], a[3]);
        const float2 d = wkp::scales<P>(f, s >> 1), mn = wkp::mins<P>(f, s >> 1);
#pragma unroll
        for (int up = 0; up < 2; up++) {
            const float2 q01 = __half22float2(wkp::u2h(a[up])), q23 = __half22float2(wkp::u2h(a[2 + up]));
            const float sc = up ? d.y : d.x, ad = up ? mn.y : mn.x;
            OT *o = y + (size_t)(16 * G + g + 8 * up) * k + (size_t)c * wkp::KC + 16 * s + 4 * t;
            store4<OT>(o, __fadd_rn(__fmul_rn(sc, q01.x), ad), __fadd_rn(__fmul_rn(sc, q01.y), ad),
                       __fadd_rn(__fmul_rn(sc, q23.x), ad), __fadd_rn(__fmul_rn(sc, q23.y), ad));
        }
    }
}

unsigned blocks_for(int64_t threads) { return (unsigned)((threads + 255) / 256); }

template <class P> wk_status pack_t(wk_cuda_ctx *c, const void *src, int64_t n, int64_t k, void *dst)
{
    const int64_t groups = n / 16, nch = k / wkp::KC;
    pack_kernel<P><<<blocks_for(groups * nch * 32), 256, 0, c->stream>>>(
        (const uint8_t *)src, groups, (int)nch, (size_t)(k / 32) * P::GB, (uint8_t *)dst);
    return wk_cuda_check_launch("the packing kernel");
}
template <class P> wk_status unpack_t(wk_cuda_ctx *c, const void *src, int64_t n, int64_t k, void *dst)
{
    const int nblk = (int)(k / 32);
    unpack_kernel<P><<<blocks_for(n * nblk), 256, 0, c->stream>>>((const uint8_t *)src, n, nblk, (uint8_t *)dst);
    return wk_cuda_check_launch("the unpacking kernel");
}
template <class P>
wk_status dequant_t(wk_cuda_ctx *c, const void *w, int64_t n, int64_t k, void *dst, wk_type dst_type)
{
    const int64_t groups = n / 16, nch = k / wkp::KC;
    const unsigned blocks = blocks_for(groups * nch * 32);
    if (dst_type == WK_TYPE_F32)
        dequant_packed_kernel<P, float><<<blocks, 256, 0, c->stream>>>((const uint8_t *)w, groups, (int)nch, k,
                                                                        (float *)dst);
    else
        dequant_packed_kernel<P, __half><<<blocks, 256, 0, c->stream>>>((const uint8_t *)w, groups, (int)nch, k,
                                                                         (__half *)dst);
    return wk_cuda_check_launch("the packed dequantization kernel");
}

/* What every entry point checks: a packable type and shape, 16-byte aligned buffers. */
wk_status check(const char *what, wk_type t, int64_t n, int64_t k, const void *a, const void *b)
{
    if (!wk_cuda_pack_supports(t, n, k))
        return wk_fail(WK_ERR_INVALID, "CUDA %s: a %s [%lld, %lld] weight has no packed layout (Q4_0, Q4_1, "
                                       "Q5_0, Q5_1, Q8_0 with rows a multiple of 16 and k of 64)", what,
                       wk_traits(t) ? wk_traits(t)->name : "(unknown type)", (long long)n, (long long)k);
    if ((uintptr_t)a % 16 || (uintptr_t)b % 16)
        return wk_fail(WK_ERR_INVALID, "CUDA %s: buffers must start on 16-byte boundaries", what);
    return WK_OK;
}

} // namespace

extern "C" bool wk_cuda_pack_supports(wk_type t, int64_t n, int64_t k)
{
    const bool type_ok = t == WK_TYPE_Q4_0 || t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_0 || t == WK_TYPE_Q5_1 ||
                         t == WK_TYPE_Q8_0;
    return type_ok && n > 0 && k > 0 && n % 16 == 0 && k % wkp::KC == 0 && n <= INT32_MAX && k <= (1 << 24);
}

extern "C" bool wk_cuda_pack_enabled(void)
{
    static const long on = wk_env_long("WICK_CUDA_PACK", 1);
    return on != 0;
}

extern "C" wk_status wk_cuda_pack(wk_cuda_ctx *c, wk_type t, const void *src, int64_t n, int64_t k, void *dst)
{
    wk_status st = check("packing", t, n, k, dst, dst);
    if (st) return st;
    if ((uintptr_t)src % 2) return wk_fail(WK_ERR_INVALID, "CUDA packing: the weight starts at an odd address");
    switch (t) {
    case WK_TYPE_Q4_0: return pack_t<wkp::q4_0>(c, src, n, k, dst);
    case WK_TYPE_Q4_1: return pack_t<wkp::q4_1>(c, src, n, k, dst);
    case WK_TYPE_Q5_0: return pack_t<wkp::q5_0>(c, src, n, k, dst);
    case WK_TYPE_Q5_1: return pack_t<wkp::q5_1>(c, src, n, k, dst);
    default: return pack_t<wkp::q8_0>(c, src, n, k, dst);
    }
}

extern "C" wk_status wk_cuda_unpack(wk_cuda_ctx *c, wk_type t, const void *src, int64_t n, int64_t k, void *dst)
{
    wk_status st = check("unpacking", t, n, k, src, src);
    if (st) return st;
    if ((uintptr_t)dst % 2) return wk_fail(WK_ERR_INVALID, "CUDA unpacking: the rows would start at an odd address");
    switch (t) {
    case WK_TYPE_Q4_0: return unpack_t<wkp::q4_0>(c, src, n, k, dst);
    case WK_TYPE_Q4_1: return unpack_t<wkp::q4_1>(c, src, n, k, dst);
    case WK_TYPE_Q5_0: return unpack_t<wkp::q5_0>(c, src, n, k, dst);
    case WK_TYPE_Q5_1: return unpack_t<wkp::q5_1>(c, src, n, k, dst);
    default: return unpack_t<wkp::q8_0>(c, src, n, k, dst);
    }
}

extern "C" wk_status wk_cuda_dequantize_packed(wk_cuda_ctx *c, wk_type t, const void *w, int64_t n, int64_t k,
                                               void *dst, wk_type dst_type)
{
    wk_status st = check("packed dequantization", t, n, k, w, dst);
    if (st) return st;
    if (dst_type != WK_TYPE_F32 && dst_type != WK_TYPE_F16)
        return wk_fail(WK_ERR_INVALID, "CUDA packed dequantization: target type must be f32 or f16");
    switch (t) {
    case WK_TYPE_Q4_0: return dequant_t<wkp::q4_0>(c, w, n, k, dst, dst_type);
    case WK_TYPE_Q4_1: return dequant_t<wkp::q4_1>(c, w, n, k, dst, dst_type);
    case WK_TYPE_Q5_0: return dequant_t<wkp::q5_0>(c, w, n, k, dst, dst_type);
    case WK_TYPE_Q5_1: return dequant_t<wkp::q5_1>(c, w, n, k, dst, dst_type);
    default: return dequant_t<wkp::q8_0>(c, w, n, k, dst, dst_type);
    }
}
