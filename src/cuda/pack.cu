/* The packed GPU layout (qpack.cuh): made from GGUF rows when a weight is uploaded,
 * dequantized for the many-row path, and turned back into GGUF rows (which shows that
 * packing loses nothing: the tests compare them with the file's bytes). Each runs once per
 * weight or per prefill call. */
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

/* The lane and the chunk of thread id in a pass over a packed weight (one thread per row
 * group, chunk and lane), and the GGUF rows g and g + 8 of its group at the chunk's first
 * block (chunk_row: GGUF bytes of a chunk row). live: id is inside the weight. */
struct lane_chunk {
    bool live;
    int lane, g, t, c;
    int64_t gc, G; /* chunk index over the weight, row group */
    const uint8_t *rows[2];
};
__device__ __forceinline__ lane_chunk lane_chunk_of(int64_t groups, int nch, const uint8_t *src = nullptr,
                                                    size_t row_bytes = 0, size_t chunk_row = 0)
{
    lane_chunk l;
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    l.live = id < groups * nch * 32;
    l.lane = (int)(id & 31), l.g = l.lane >> 2, l.t = l.lane & 3;
    l.gc = id >> 5, l.G = l.gc / nch;
    l.c = (int)(l.gc - l.G * nch);
    for (int up = 0; up < 2; up++)
        l.rows[up] = src ? src + (size_t)(16 * l.G + l.g + 8 * up) * row_bytes + (size_t)l.c * chunk_row : nullptr;
    return l;
}

/* One thread per (row group, chunk, lane): the lane's words of the chunk. */
template <class P>
__global__ void pack_kernel(const uint8_t *__restrict__ src, int64_t groups, int nch, size_t row_bytes,
                            uint8_t *__restrict__ dst)
{
    const lane_chunk l = lane_chunk_of(groups, nch, src, row_bytes, 2 * P::GB);
    if (!l.live) return;
    const int lane = l.lane, g = l.g, t = l.t;
    uint8_t *ch = dst + l.gc * P::CB;
    const uint8_t *const *rows = l.rows;
    uint32_t w[8] = {0, 0, 0, 0, 0, 0, 0, 0}, qh = 0;
    for (int s = 0; s < 4; s++)
        for (int up = 0; up < 2; up++)
            for (int i = 0; i < 4; i++) {
                const int e = P::x_at(s) + P::X_LANE * t + i; /* element of the chunk row */
                const uint32_t q = (uint32_t)gguf_code<P>(rows[up] + (e >> 5) * P::GB, e & 31);
                if constexpr (P::BITS == 8) {
                    w[2 * s + up] |= q << (8 * i);
                } else {
                    w[s] |= (q & 15u) << wkp::nib_pos(i, up);
                    if constexpr (P::BITS == 5) qh |= ((q >> 4) & 1u) << wkp::qh_pos(s, i, up);
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
                st16(ch + P::scale_off(g + 8 * up, b), ld16(rows[up] + b * P::GB));
                if constexpr (P::ADD) st16(ch + P::scale_off(g + 8 * up, b) + 8, ld16(rows[up] + b * P::GB + 2));
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
    st16(blk, ld16(ch + P::scale_off(rr, b)));
    if constexpr (P::ADD) st16(blk + 2, ld16(ch + P::scale_off(rr, b) + 8));
    if constexpr (P::BITS == 8) {
        for (int j = 0; j < 32; j++) blk[P::QS_AT + j] = (uint8_t)(P::code_at(ch, rr, 32 * b + j) ^ 0x80);
    } else {
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            const int lo = P::code_at(ch, rr, 32 * b + j), hi = P::code_at(ch, rr, 32 * b + 16 + j);
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

/* One thread per (row group, chunk, lane): its weights (8 a step), w = scale q + add with
 * the CPU's rounding (one product, then the sum), as the rows' dequantization kernel. */
template <class P, typename OT>
__global__ void dequant_packed_kernel(const uint8_t *__restrict__ w, int64_t groups, int nch, int64_t k,
                                      OT *__restrict__ y)
{
    const lane_chunk l = lane_chunk_of(groups, nch);
    if (!l.live) return;
    const int lane = l.lane, g = l.g, t = l.t, c = l.c;
    const int64_t G = l.G;
    typename P::frag f;
    P::load(w + l.gc * P::CB, lane, f);
#pragma unroll
    for (int s = 0; s < P::NS; s++) {
        uint32_t a[4];
        P::step(f, s, a[0], a[1], a[2], a[3]);
        const float2 d = P::scale(f, s / P::SG), mn = P::add(f, s / P::SG);
#pragma unroll
        for (int up = 0; up < 2; up++) {
            const float2 q01 = __half22float2(wkp::u2h(a[up])), q23 = __half22float2(wkp::u2h(a[2 + up]));
            const float sc = up ? d.y : d.x, ad = up ? mn.y : mn.x;
            OT *o = y + (size_t)(16 * G + g + 8 * up) * k + (size_t)c * P::KC + P::x_at(s) + P::X_LANE * t;
            store4<OT>(o, __fadd_rn(__fmul_rn(sc, q01.x), ad), __fadd_rn(__fmul_rn(sc, q01.y), ad),
                       __fadd_rn(__fmul_rn(sc, q23.x), ad), __fadd_rn(__fmul_rn(sc, q23.y), ad));
        }
    }
}

/* ---- the K formats (one super-block a chunk row) ----
 * Where a GGUF super-block keeps the stored code (Q6_K: q + 32, Q3_K: q + 4) of element e
 * (0..255): its low P::C::LOW_BITS at bit lo_shift of byte lo_byte, the P::C::HIGH_BITS
 * above them at bit hi_shift of byte hi_byte (128-element half n, quarter r of 32,
 * element l of the quarter). */
struct gguf_place {
    int lo_byte, lo_shift, hi_byte, hi_shift;
};
template <class P> __device__ __forceinline__ gguf_place gguf_place_k(int e)
{
    const int n = e >> 7, r = (e >> 5) & 3, l = e & 31;
    if constexpr (P::GB == 144 || P::GB == 176) /* Q4_K, Q5_K: sub-blocks 2c, 2c + 1 share qs[32 c ..]
                                                 * (low, high nibbles); Q5_K's fifth bit of sub-block
                                                 * j in bit j of qh[l] */
        return {P::GB - 128 + 32 * (e >> 6) + l, 4 * ((e >> 5) & 1), 16 + l, e >> 5};
    else if constexpr (P::GB == 210) /* Q6_K: ql[128], qh[64] */
        return {64 * n + l + 32 * (r & 1), 4 * (r >> 1), 128 + 32 * n + l, 2 * r};
    else if constexpr (P::GB == 84) /* Q2_K: qs[64] from byte 16 */
        return {16 + 32 * n + l, 2 * r, 0, 0};
    else /* Q3_K: hmask[32], qs[64] from byte 32; the third bit in bit 4 n + r of hmask[l] */
        return {32 + 32 * n + l, 2 * r, l, 4 * n + r};
}
template <class P> __device__ __forceinline__ int gguf_code_k(const uint8_t *blk, int e)
{
    using C = typename P::C;
    const gguf_place g = gguf_place_k<P>(e);
    int q = (blk[g.lo_byte] >> g.lo_shift) & ((1 << C::LOW_BITS) - 1);
    if constexpr (C::HIGH_BITS > 0) q |= ((blk[g.hi_byte] >> g.hi_shift) & ((1 << C::HIGH_BITS) - 1)) << C::LOW_BITS;
    return q;
}
/* The inverse: code q of element e ORed into a super-block whose code bytes are zero. */
template <class P> __device__ __forceinline__ void gguf_put_code_k(uint8_t *blk, int e, int q)
{
    using C = typename P::C;
    const gguf_place g = gguf_place_k<P>(e);
    blk[g.lo_byte] |= (uint8_t)((q & ((1 << C::LOW_BITS) - 1)) << g.lo_shift);
    if constexpr (C::HIGH_BITS > 0) blk[g.hi_byte] |= (uint8_t)((q >> C::LOW_BITS) << g.hi_shift);
}
/* The GGUF super-block's header (d, dmin, scales), which the chunk keeps as it is: each
 * piece (block offset, length) goes to chunk offset `at + stride (rr % 8) + len (rr / 8)`
 * (rows g and g + 8 side by side). to_chunk: block -> chunk, else back. */
template <class P> __device__ __forceinline__ void k_header_move(uint8_t *ch, uint8_t *blk, int rr, bool to_chunk)
{
    auto mv = [&](int boff, int at, int stride, int n) {
        const int coff = at + stride * (rr & 7) + n * (rr >> 3);
        for (int i = 0; i < n; i++) {
            if (to_chunk) ch[coff + i] = blk[boff + i];
            else blk[boff + i] = ch[coff + i];
        }
    };
    if constexpr (P::GB == 144 || P::GB == 176) {
        mv(0, P::HDR, 32, 16);
    } else if constexpr (P::GB == 210) {
        mv(192, P::SC, 32, 16);
        mv(208, P::D, 4, 2);
    } else if constexpr (P::GB == 84) {
        mv(0, P::SC, 32, 16);
        mv(80, P::D, 8, 4);
    } else {
        mv(96, P::SC, 24, 12);
        mv(108, P::D, 4, 2);
    }
}

/* One thread per (row group, super-block, lane): the lane's words of the chunk. */
template <class P>
__global__ void pack_k_kernel(const uint8_t *__restrict__ src, int64_t groups, int nch, size_t row_bytes,
                              uint8_t *__restrict__ dst)
{
    using C = typename P::C;
    const lane_chunk l = lane_chunk_of(groups, nch, src, row_bytes, P::GB);
    if (!l.live) return;
    const int lane = l.lane, g = l.g, t = l.t;
    uint8_t *ch = dst + l.gc * P::CB;
    const uint8_t *const *rows = l.rows;
    uint32_t lo[C::LOW_WORDS], hi[C::HIGH_WORDS > 0 ? C::HIGH_WORDS : 1];
#pragma unroll
    for (int w = 0; w < C::LOW_WORDS; w++) lo[w] = 0;
#pragma unroll
    for (int w = 0; w < C::HIGH_WORDS; w++) hi[w] = 0;
#pragma unroll
    for (int s = 0; s < 16; s++)
#pragma unroll
        for (int up = 0; up < 2; up++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const uint32_t q = (uint32_t)gguf_code_k<P>(rows[up], P::x_at(s) + P::X_LANE * t + i);
                lo[C::lo_word(s)] |= (q & ((1u << C::LOW_BITS) - 1)) << C::lo_bit(s, i, up);
                if constexpr (C::HIGH_WORDS > 0) hi[C::hi_word(s)] |= (q >> C::LOW_BITS) << C::hi_bit(s, i, up);
            }
#pragma unroll
    for (int w = 0; w < C::LOW_WORDS; w++) *reinterpret_cast<uint32_t *>(ch + C::lo_off(lane, w)) = lo[w];
#pragma unroll
    for (int w = 0; w < C::HIGH_WORDS; w++) *reinterpret_cast<uint32_t *>(ch + C::hi_off(lane, w)) = hi[w];
    if (t == 0)
        for (int up = 0; up < 2; up++) k_header_move<P>(ch, const_cast<uint8_t *>(rows[up]), g + 8 * up, true);
}

/* One thread per GGUF super-block (row r, block bi): the block written back in its rows. */
template <class P>
__global__ void unpack_k_kernel(const uint8_t *__restrict__ src, int64_t n, int nblk, uint8_t *__restrict__ dst)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= n * nblk) return;
    const int64_t r = id / nblk;
    const int bi = (int)(id - r * nblk), rr = (int)(r & 15);
    const uint8_t *ch = src + ((r >> 4) * nblk + bi) * P::CB;
    uint8_t *blk = dst + ((size_t)r * nblk + bi) * P::GB;
    for (int i = 0; i < P::GB; i++) blk[i] = 0;
    k_header_move<P>(const_cast<uint8_t *>(ch), blk, rr, false);
    for (int e = 0; e < 256; e++) gguf_put_code_k<P>(blk, e, P::code_at(ch, rr, e));
}

unsigned blocks_for(int64_t threads) { return (unsigned)((threads + 255) / 256); }

template <class P> wk_status pack_t(wk_cuda_ctx *c, const void *src, int64_t n, int64_t k, void *dst)
{
    const int64_t groups = n / 16, nch = k / P::KC;
    const unsigned blocks = blocks_for(groups * nch * 32);
    if constexpr (P::KC == 64)
        pack_kernel<P><<<blocks, 256, 0, c->stream>>>((const uint8_t *)src, groups, (int)nch,
                                                      (size_t)(k / 32) * P::GB, (uint8_t *)dst);
    else
        pack_k_kernel<P><<<blocks, 256, 0, c->stream>>>((const uint8_t *)src, groups, (int)nch,
                                                        (size_t)(k / 256) * P::GB, (uint8_t *)dst);
    return wk_cuda_check_launch("the packing kernel");
}
template <class P> wk_status unpack_t(wk_cuda_ctx *c, const void *src, int64_t n, int64_t k, void *dst)
{
    if constexpr (P::KC == 64) {
        const int nblk = (int)(k / 32);
        unpack_kernel<P><<<blocks_for(n * nblk), 256, 0, c->stream>>>((const uint8_t *)src, n, nblk,
                                                                      (uint8_t *)dst);
    } else {
        const int nblk = (int)(k / 256);
        unpack_k_kernel<P><<<blocks_for(n * nblk), 256, 0, c->stream>>>((const uint8_t *)src, n, nblk,
                                                                        (uint8_t *)dst);
    }
    return wk_cuda_check_launch("the unpacking kernel");
}
template <class P>
wk_status dequant_t(wk_cuda_ctx *c, const void *w, int64_t n, int64_t k, void *dst, wk_type dst_type)
{
    const int64_t groups = n / 16, nch = k / P::KC;
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
                                       "Q5_0, Q5_1, Q8_0 with rows a multiple of 16 and k of 64; Q2_K "
                                       "to Q6_K with k of 256)", what,
                       wk_traits(t) ? wk_traits(t)->name : "(unknown type)", (long long)n, (long long)k);
    if ((uintptr_t)a % 16 || (uintptr_t)b % 16)
        return wk_fail(WK_ERR_INVALID, "CUDA %s: buffers must start on 16-byte boundaries", what);
    return WK_OK;
}

} // namespace

/* The shapes the packed kernel's chunks cover: whole groups of 16 rows, k whole chunks of
 * kc elements, both within the kernels' int indexing. */
static bool chunks_fit(int64_t n, int64_t k, int kc)
{
    return n > 0 && k > 0 && n % 16 == 0 && k % kc == 0 && n <= INT32_MAX && k <= (1 << 24);
}

extern "C" bool wk_cuda_pack_supports(wk_type t, int64_t n, int64_t k)
{
    const bool blk32 = t == WK_TYPE_Q4_0 || t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_0 || t == WK_TYPE_Q5_1 ||
                       t == WK_TYPE_Q8_0;
    const bool kq = t == WK_TYPE_Q2_K || t == WK_TYPE_Q3_K || t == WK_TYPE_Q4_K || t == WK_TYPE_Q5_K ||
                    t == WK_TYPE_Q6_K;
    return (blk32 || kq) && chunks_fit(n, k, kq ? 256 : 64);
}

extern "C" bool wk_cuda_f16_rows_fit(int64_t n, int64_t k, const void *w)
{
    static const long on = wk_env_long("WICK_CUDA_F16_ROWS", 1);
    return on != 0 && chunks_fit(n, k, 64) && (uintptr_t)w % 16 == 0;
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
    return wkp::with_format(t, [&](auto fmt) { return pack_t<decltype(fmt)>(c, src, n, k, dst); });
}

extern "C" wk_status wk_cuda_unpack(wk_cuda_ctx *c, wk_type t, const void *src, int64_t n, int64_t k, void *dst)
{
    wk_status st = check("unpacking", t, n, k, src, src);
    if (st) return st;
    if ((uintptr_t)dst % 2) return wk_fail(WK_ERR_INVALID, "CUDA unpacking: the rows would start at an odd address");
    return wkp::with_format(t, [&](auto fmt) { return unpack_t<decltype(fmt)>(c, src, n, k, dst); });
}

extern "C" wk_status wk_cuda_dequantize_packed(wk_cuda_ctx *c, wk_type t, const void *w, int64_t n, int64_t k,
                                               void *dst, wk_type dst_type)
{
    wk_status st = check("packed dequantization", t, n, k, w, dst);
    if (st) return st;
    if (dst_type != WK_TYPE_F32 && dst_type != WK_TYPE_F16)
        return wk_fail(WK_ERR_INVALID, "CUDA packed dequantization: target type must be f32 or f16");
    return wkp::with_format(t, [&](auto fmt) { return dequant_t<decltype(fmt)>(c, w, n, k, dst, dst_type); });
}
