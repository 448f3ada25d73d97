/* Quantized matmul on the tensor cores: y = x · Wᵀ with W in its GGUF format.
 *
 * x is first prepared once per call (prepare_x): each row is scaled by a power of two
 * so that its largest |value| is below 1, then split into hi = f16(x) and lo = f16(x - hi),
 * together about 22 significant bits; the sums of each 16 elements are kept in f32 for
 * the formats with an additive term. The prepared x is stored in the order in which the
 * mma fragments read it, so that a warp's load of one step is 256 contiguous bytes.
 *
 * The main kernel gives each block 16 weight rows; its warps split k into chunks of a
 * few format blocks. A warp copies the 16 rows' bytes of its next chunk into its own
 * shared-memory buffer with coalesced asynchronous copies (contiguous bytes per row,
 * whatever the block size) while it decodes the current chunk: per step of 16 elements
 * each lane decodes 4 integer weights of 2 rows into f16 registers (exact), runs
 * mma.m16n8k16 against hi (and lo), and applies the step's scale and additive term in
 * f32. Each weight byte is read from memory once for all input rows of the block.
 * Weights in the packed layout (qpack.cuh) take the packed matrix-vector kernel below 64
 * rows instead. */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/cuda_util.cuh"
#include "cuda/mma.cuh"
#include "cuda/qdecode.cuh"
#include "cuda/traits_cxx.h"

namespace {

using wkm::load16;
using wkm::mma16816;

constexpr int SEG = 16; /* elements per step; sums of x are kept per step */

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

int64_t padded_rows(int64_t m) { return m <= 8 ? 8 : (int64_t)round_up((size_t)m, 64); }

/* hi/lo: [k / 16 steps][mpad / 8 row groups][32 lanes][4 halves] (the mma B fragments);
 * sums: [k / 16][mpad]; scale: [mpad]. */
struct xprep {
    __half *hi, *lo;
    float *sums;
    float *scale;
    int mpad;
};

xprep carve(void *scratch, int64_t mpad, int64_t k)
{
    xprep p;
    char *s = (char *)scratch;
    p.hi = (__half *)s;
    s += round_up((size_t)(mpad * k) * 2, 256);
    p.lo = (__half *)s;
    s += round_up((size_t)(mpad * k) * 2, 256);
    p.sums = (float *)s;
    s += round_up((size_t)(mpad * (k / SEG)) * 4, 256);
    p.scale = (float *)s;
    p.mpad = (int)mpad;
    return p;
}

/* Offset (in halves) of element e of row `row` in the fragment order. */
__device__ __forceinline__ size_t frag_index(int mpad, int row, int e)
{
    int seg = e / SEG, w = e % SEG;
    return (((size_t)seg * (mpad / 8) + row / 8) * 32 + (row % 8) * 4 + w / 4) * 4 + w % 4;
}

__device__ __forceinline__ void store16(float *y, const float (&v)[16])
{
#pragma unroll
    for (int i = 0; i < 4; i++)
        reinterpret_cast<float4 *>(y)[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
}

__device__ __forceinline__ float block_max128(float v, float *red)
{
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    return fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
}
__device__ __forceinline__ float block_sum128(float v, float *red)
{
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    return (red[0] + red[1]) + (red[2] + red[3]);
}

/* Where the values to prepare come from. get() computes segment j of the row and put()
 * stores it where the operation's own output goes; again() reads it back (the same
 * thread wrote it). */
template <typename XT> struct src_input { /* the input as it is */
    wk_dptr xd;
    const XT *x;
    __device__ void begin(int row, int k, const int64_t *dpos, float *)
    {
        x = (const XT *)((char *)xd.base + (dpos ? *dpos * xd.stride : 0)) + (size_t)row * k;
    }
    __device__ void get(int j, float (&v)[16]) { load16(x + j * SEG, v); }
    __device__ void put(int, const float (&)[16]) {}
    __device__ void again(int j, float (&v)[16]) { load16(x + j * SEG, v); }
};
struct src_rmsnorm { /* y = x / rms(x) * w, y written too (y may be x) */
    wk_dptr xd, yd;
    const float *w;
    float eps;
    const float *x;
    float *y, r;
    __device__ void begin(int row, int k, const int64_t *dpos, float *red)
    {
        x = (const float *)((char *)xd.base + (dpos ? *dpos * xd.stride : 0)) + (size_t)row * k;
        y = (float *)((char *)yd.base + (dpos ? *dpos * yd.stride : 0)) + (size_t)row * k;
        float ss = 0.f;
        for (int i = threadIdx.x; i < k; i += blockDim.x) ss += x[i] * x[i];
        ss = block_sum128(ss, red);
        r = 1.f / sqrtf(ss / (float)k + eps);
        __syncthreads(); /* red is reused by the caller */
    }
    __device__ void get(int j, float (&v)[16])
    {
        load16(x + j * SEG, v);
#pragma unroll
        for (int i = 0; i < 16; i++) v[i] = v[i] * r * w[j * SEG + i];
    }
    __device__ void put(int j, const float (&v)[16]) { store16(y + j * SEG, v); }
    __device__ void again(int j, float (&v)[16]) { load16(y + j * SEG, v); }
};
struct src_silu_mul { /* g = silu(g) * u, g written too */
    wk_dptr gd, ud;
    float *g;
    const float *u;
    __device__ void begin(int row, int k, const int64_t *dpos, float *)
    {
        g = (float *)((char *)gd.base + (dpos ? *dpos * gd.stride : 0)) + (size_t)row * k;
        u = (const float *)((char *)ud.base + (dpos ? *dpos * ud.stride : 0)) + (size_t)row * k;
    }
    __device__ void get(int j, float (&v)[16])
    {
        float uu[16];
        load16(g + j * SEG, v);
        load16(u + j * SEG, uu);
#pragma unroll
        for (int i = 0; i < 16; i++) v[i] = v[i] / (1.f + expf(-v[i])) * uu[i];
    }
    __device__ void put(int j, const float (&v)[16]) { store16(g + j * SEG, v); }
    __device__ void again(int j, float (&v)[16]) { load16(g + j * SEG, v); }
};

/* One block of 128 threads per input row (only the m real rows: the kernels never read
 * padded rows): scale, split, segment sums; each thread takes whole 16-element segments. */
template <class SRC>
__global__ void __launch_bounds__(128) prepare_x(SRC src, const int64_t *dpos, int k, xprep p)
{
    __shared__ float red[4];
    int row = blockIdx.x;
    src.begin(row, k, dpos, red);
    const int nseg = k / SEG;
    float mx = 0.f;
    for (int j = threadIdx.x; j < nseg; j += blockDim.x) {
        float v[16];
        src.get(j, v);
        src.put(j, v);
#pragma unroll
        for (int i = 0; i < 16; i++) mx = fmaxf(mx, fabsf(v[i]));
    }
    mx = block_max128(mx, red);
    /* s = 2^e with max < s: x / s is exact and below 1. NaN/inf keep s = 1 and show. */
    float s = 1.f;
    int inv_e = 0;
    if (mx > 0.f && isfinite(mx)) {
        int e;
        frexpf(mx, &e);
        s = ldexpf(1.f, e);
        inv_e = -e;
    }
    float inv = ldexpf(1.f, inv_e); /* exact: s is a power of two */
    for (int j = threadIdx.x; j < nseg; j += blockDim.x) {
        float v[16], sum = 0.f;
        src.again(j, v);
#pragma unroll
        for (int i = 0; i < SEG; i += 4) {
            __half h[4], l[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                float f = v[i + u] * inv;
                h[u] = __float2half_rn(f);
                l[u] = __float2half_rn(f - __half2float(h[u]));
                sum += f;
            }
            size_t o = frag_index(p.mpad, row, j * SEG + i);
            *reinterpret_cast<uint2 *>(p.hi + o) = *reinterpret_cast<uint2 *>(h);
            *reinterpret_cast<uint2 *>(p.lo + o) = *reinterpret_cast<uint2 *>(l);
        }
        p.sums[(size_t)j * p.mpad + row] = sum;
    }
    if (threadIdx.x == 0) p.scale[row] = s;
}

/* Format blocks per chunk: the fewest (1, 2, 4, 8) whose chunk row has at least 128 bytes
 * and is a multiple of 16 bytes, else of 4 bytes (Q3_K, Q6_K, Q8_K). */
__host__ __device__ constexpr int chunk_fit(int bytes, int ch, int align)
{
    return ch > 8 ? 0 : (ch * bytes >= 128 && (ch * bytes) % align == 0) ? ch : chunk_fit(bytes, 2 * ch, align);
}
template <class T> __host__ __device__ constexpr int chunk_blocks()
{
    return chunk_fit(T::BYTES, 1, 16) && chunk_fit(T::BYTES, 1, 16) * T::BYTES <= 512
               ? chunk_fit(T::BYTES, 1, 16)
               : chunk_fit(T::BYTES, 1, 4);
}

/* Copy `bytes` (a multiple of VEC) of each of 16 rows into dst (row stride dstride),
 * lanes walking the bytes in order so each instruction reads contiguous memory. VEC 16
 * and 4 copy asynchronously (cp.async); VEC 2 copies with plain loads. */
template <int VEC>
__device__ __forceinline__ void stage_rows(uint8_t *dst, int dstride, const uint8_t *src,
                                           size_t sstride, int bytes, int lane)
{
    const int per_row = bytes / VEC, total = 16 * per_row;
    for (int i = lane; i < total; i += 32) {
        int r = i / per_row, c = (i - r * per_row) * VEC;
        const uint8_t *g = src + (size_t)r * sstride + c;
        uint8_t *d = dst + r * dstride + c;
        if (VEC == 2) {
            *reinterpret_cast<uint16_t *>(d) = *reinterpret_cast<const uint16_t *>(g);
        } else {
            unsigned sa = (unsigned)__cvta_generic_to_shared(d);
            if (VEC == 16)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(g));
            else
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(g));
        }
    }
    if (VEC != 2) asm volatile("cp.async.commit_group;\n" ::);
}
template <int VEC> __device__ __forceinline__ void stage_wait_all()
{
    if (VEC != 2) asm volatile("cp.async.wait_group 0;\n" ::);
    __syncwarp();
}
template <int VEC> __device__ __forceinline__ void stage_wait_prev()
{
    if (VEC != 2) asm volatile("cp.async.wait_group 1;\n" ::);
    __syncwarp();
}

/* Grid: x = ceil(n / 16) row groups, y = chunks of 8 * MT input rows. Block: nw warps
 * (blockDim.x / 32) that take the k chunks in turn; dynamic shared memory: per warp two
 * buffers of 16 rows x CH * BYTES. Rows past n read row n - 1 (results dropped). */
template <class T, int MT, bool SPLIT, int VEC>
__global__ void __launch_bounds__(256) qmm_kernel(const uint8_t *__restrict__ w, size_t row_bytes,
                                                  int n, int k, int m, xprep p, wk_dptr yd,
                                                  wk_dptr addd, const int64_t *dpos)
{
    extern __shared__ __align__(16) uint8_t smem[];
    constexpr int CH = chunk_blocks<T>(), CB = CH * T::BYTES;
    float *y = (float *)((char *)yd.base + (dpos ? *dpos * yd.stride : 0));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * 16;
    const int m0 = blockIdx.y * 8 * MT;
    const int nblk = k / T::QK;
    const int nchunk = (nblk + CH - 1) / CH;
    const int rows_live = min(16, n - n0);
    const uint8_t *wr = w + (size_t)n0 * row_bytes;
    uint8_t *buf = smem + (size_t)warp * 2 * 16 * CB;
    const int mg = p.mpad / 8;

    float acc[MT][4];
#pragma unroll
    for (int i = 0; i < MT; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;

    /* Stage chunk c into buffer slot; a partial last chunk is copied with plain loads. */
    auto stage = [&](int c, int slot) {
        uint8_t *d = buf + slot * 16 * CB;
        int cb = min(CH, nblk - c * CH);
        size_t off = (size_t)c * CB;
        if (rows_live == 16 && cb == CH) {
            stage_rows<VEC>(d, CB, wr + off, row_bytes, CB, lane);
        } else {
            /* Edge: fewer rows (repeat the last) or a short chunk. */
            const int per_row = cb * T::BYTES / 2;
            for (int i = lane; i < 16 * per_row; i += 32) {
                int r = i / per_row, cc = (i - r * per_row) * 2;
                int rr = min(r, rows_live - 1);
                *reinterpret_cast<uint16_t *>(d + r * CB + cc) =
                    *reinterpret_cast<const uint16_t *>(wr + (size_t)rr * row_bytes + off + cc);
            }
            if (VEC != 2) asm volatile("cp.async.commit_group;\n" ::);
        }
    };

    /* One format block of rows g and g + 8 (b0p, b1p in the staging buffer). */
    auto block = [&](const uint8_t *b0p, const uint8_t *b1p, int blk) {
#pragma unroll
            for (int s = 0; s < T::S; s++) {
                uint32_t a0, a1, a2, a3;
                float sc0, sc1, ad0, ad1;
                T::step(b0p, s, t, a0, a2, sc0, ad0);
                T::step(b1p, s, t, a1, a3, sc1, ad1);
                const int seg = blk * (T::QK / SEG) + s;
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    const size_t xo = (((size_t)seg * mg + m0 / 8 + mt) * 32 + lane) * 4;
                    const bool xlive = m0 + mt * 8 + g < m;
                    uint2 bh = xlive ? __ldg(reinterpret_cast<const uint2 *>(p.hi + xo)) : make_uint2(0, 0);
                    float tmp[4] = {0.f, 0.f, 0.f, 0.f};
                    mma16816(tmp, a0, a1, a2, a3, bh.x, bh.y);
                    if (SPLIT) {
                        uint2 bl = xlive ? __ldg(reinterpret_cast<const uint2 *>(p.lo + xo)) : make_uint2(0, 0);
                        mma16816(tmp, a0, a1, a2, a3, bl.x, bl.y);
                    }
                    acc[mt][0] = fmaf(sc0, tmp[0], acc[mt][0]);
                    acc[mt][1] = fmaf(sc0, tmp[1], acc[mt][1]);
                    acc[mt][2] = fmaf(sc1, tmp[2], acc[mt][2]);
                    acc[mt][3] = fmaf(sc1, tmp[3], acc[mt][3]);
                    if (T::ADD) {
                        const int r2 = m0 + mt * 8 + 2 * t;
                        float2 xs = r2 < m ? __ldg(reinterpret_cast<const float2 *>(p.sums + (size_t)seg * p.mpad + r2))
                                           : make_float2(0.f, 0.f);
                        acc[mt][0] = fmaf(ad0, xs.x, acc[mt][0]);
                        acc[mt][1] = fmaf(ad0, xs.y, acc[mt][1]);
                        acc[mt][2] = fmaf(ad1, xs.x, acc[mt][2]);
                        acc[mt][3] = fmaf(ad1, xs.y, acc[mt][3]);
                    }
                }
            }
    };

    int c = warp;
    if (c < nchunk) stage(c, 0);
    for (int it = 0; c < nchunk; c += nw, it++) {
        const int slot = it & 1;
        if (c + nw < nchunk) {
            stage(c + nw, slot ^ 1);
            stage_wait_prev<VEC>();
        } else {
            stage_wait_all<VEC>();
        }
        const uint8_t *b0row = buf + slot * 16 * CB + g * CB;
        const uint8_t *b1row = b0row + 8 * CB;
        if (c * CH + CH <= nblk) {
#pragma unroll
            for (int bb = 0; bb < CH; bb++) block(b0row + bb * T::BYTES, b1row + bb * T::BYTES, c * CH + bb);
        } else {
            for (int bb = 0; bb < nblk - c * CH; bb++)
                block(b0row + bb * T::BYTES, b1row + bb * T::BYTES, c * CH + bb);
        }
        __syncwarp(); /* the buffer is refilled by the next-but-one stage */
    }

    /* Warps add up their k parts; the staging buffers hold the partial sums. */
    __syncthreads();
    float *red = reinterpret_cast<float *>(smem);
    if (warp > 0) {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int i = 0; i < 4; i++) red[((warp - 1) * MT * 4 + mt * 4 + i) * 32 + lane] = acc[mt][i];
    }
    __syncthreads();
    if (warp > 0) return;
    for (int v = 0; v < nw - 1; v++)
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int i = 0; i < 4; i++) acc[mt][i] += red[(v * MT * 4 + mt * 4 + i) * 32 + lane];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int col = n0 + g + (i >= 2 ? 8 : 0);
            int row = m0 + mt * 8 + 2 * t + (i & 1);
            if (row < m && col < n) {
                float v = acc[mt][i] * p.scale[row];
                y[(size_t)row * n + col] = v;
                if (addd.base) {
                    float *a = (float *)((char *)addd.base + (dpos ? *dpos * addd.stride : 0));
                    a[(size_t)row * n + col] += v;
                }
            }
        }
    }
}

/* Warps per block: as many as fit 48 KB of staging (at most 8, and no more than chunks). */
template <class T> int warps_for(int64_t k)
{
    constexpr int CB = chunk_blocks<T>() * T::BYTES;
    int nw = 48000 / (2 * 16 * CB);
    int64_t nchunk = (k / T::QK + chunk_blocks<T>() - 1) / chunk_blocks<T>();
    if (nw > 8) nw = 8;
    if (nw > nchunk) nw = (int)nchunk;
    return nw < 1 ? 1 : nw;
}

template <class T, int MT, int VEC>
void launch_mt(wk_cuda_ctx *c, const uint8_t *w, size_t row_bytes, int64_t n, int64_t k,
               xprep p, int64_t m, wk_dptr y, wk_dptr add, const int64_t *dpos, dim3 grid)
{
    constexpr int CB = chunk_blocks<T>() * T::BYTES;
    int nw = warps_for<T>(k);
    size_t stage_bytes = (size_t)nw * 2 * 16 * CB;
    size_t red_bytes = (size_t)(nw - 1) * MT * 4 * 32 * sizeof(float);
    size_t smem = stage_bytes > red_bytes ? stage_bytes : red_bytes;
    qmm_kernel<T, MT, true, VEC><<<grid, nw * 32, smem, c->stream>>>(w, row_bytes, (int)n, (int)k,
                                                                      (int)m, p, y, add, dpos);
}

template <class T, int VEC>
void launch_vec(wk_cuda_ctx *c, const uint8_t *w, size_t row_bytes, int64_t n, int64_t k,
                xprep p, int64_t m, wk_dptr y, wk_dptr add, const int64_t *dpos)
{
    dim3 grid((unsigned)((n + 15) / 16), 1);
    /* 1 to 8 rows take the matrix-vector kernel (qmv.cu). Input rows per block: 16 (MT = 2)
     * by default, grid.y blocks over m: measured on the H200 at 24-63 rows, 16 rows a block
     * took 0.45-0.9x the time of 32 or 64 (those hold 4 or 8 accumulator sets and spill,
     * one block per SM at 255 registers); WICK_CUDA_QMM_MT (4, 8) allows the larger tiles,
     * for measuring. */
    static const long cap = wk_env_long("WICK_CUDA_QMM_MT", 2);
    const int mt = m <= 16 || cap <= 2 ? 2 : m <= 32 || cap <= 4 ? 4 : 8;
    grid.y = (unsigned)((m + 8 * mt - 1) / (8 * mt));
    if (mt == 2)
        launch_mt<T, 2, VEC>(c, w, row_bytes, n, k, p, m, y, add, dpos, grid);
    else if (mt == 4)
        launch_mt<T, 4, VEC>(c, w, row_bytes, n, k, p, m, y, add, dpos, grid);
    else
        launch_mt<T, 8, VEC>(c, w, row_bytes, n, k, p, m, y, add, dpos, grid);
}

template <class T>
wk_status launch_t(wk_cuda_ctx *c, const void *w, int64_t n, int64_t k, xprep p, int64_t m,
                   wk_dptr y, wk_dptr add, const int64_t *dpos)
{
    constexpr int CB = chunk_blocks<T>() * T::BYTES;
    size_t row_bytes = (size_t)(k / T::QK) * T::BYTES;
    const uint8_t *wb = (const uint8_t *)w;
    uintptr_t a = (uintptr_t)wb;
    /* The widest copy that every row start and chunk keeps aligned. */
    if constexpr (CB % 16 == 0) {
        if (row_bytes % 16 == 0 && a % 16 == 0) {
            launch_vec<T, 16>(c, wb, row_bytes, n, k, p, m, y, add, dpos);
            return wk_cuda_check_launch("the quantized matmul kernel");
        }
    }
    if constexpr (CB % 4 == 0) {
        if (row_bytes % 4 == 0 && a % 4 == 0) {
            launch_vec<T, 4>(c, wb, row_bytes, n, k, p, m, y, add, dpos);
            return wk_cuda_check_launch("the quantized matmul kernel");
        }
    }
    launch_vec<T, 2>(c, wb, row_bytes, n, k, p, m, y, add, dpos);
    return wk_cuda_check_launch("the quantized matmul kernel");
}

/* Many rows: a packed weight on a GPU that runs sm_90a goes to the wgmma kernel
 * (sm90a/gemm_packed.cu); else the weight is dequantized to f16 in scratch and multiplied
 * by cuBLAS on the tensor cores. Both round x to f16: the f16 form's precision. */
wk_status qmm_via_gemm(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n, int64_t k,
                       const void *x, wk_type xtype, int64_t m, float *y)
{
    if (wk_cuda_gemm_packed_supports(wtype, n, k))
        return wk_cuda_gemm_packed(c, wtype, w, n, k, x, xtype, m, y);
    const size_t wb = wtype == WK_TYPE_F16 ? 0 : round_up((size_t)(n * k) * 2, 256);
    size_t xb = xtype == WK_TYPE_F16 ? 0 : (size_t)(m * k) * 2;
    wk_status st = wk_cuda_scratch_reserve(c, wb + xb);
    if (st) return st;
    const void *wh = w, *xh = x;
    if (wb) {
        st = wk_cuda_is_packed(wtype)
                 ? wk_cuda_dequantize_packed(c, wk_cuda_unpacked(wtype), w, n, k, c->scratch, WK_TYPE_F16)
                 : wk_cuda_dequantize(c, wtype, w, n * k, c->scratch, WK_TYPE_F16);
        if (st) return st;
        wh = c->scratch;
    }
    if (xb) {
        st = wk_cuda_convert(c, x, xtype, (char *)c->scratch + wb, WK_TYPE_F16, m * k);
        if (st) return st;
        xh = (char *)c->scratch + wb;
    }
    const float one = 1.f, zero = 0.f;
    return wk_blas_err(cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
                                    wh, CUDA_R_16F, (int)k, xh, CUDA_R_16F, (int)k, &zero, y,
                                    CUDA_R_32F, (int)n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       "cublasGemmEx (dequantized weight)");
}

} // namespace

extern "C" void wk_cuda_qmm_reuse_input(wk_cuda_ctx *c) { c->reuse_x = true; }

extern "C" void wk_cuda_qmm_add_to(wk_cuda_ctx *c, wk_dptr acc) { c->add_to = acc; }

/* Shared checks of the fused preparations: the matmul that follows takes the input from
 * the prepared scratch (fewer than wk_cuda_qmm_gemm_rows() rows, or a graph step). */
static wk_status fused_prep_check(int64_t rows, int64_t dim, wk_dptr a, wk_dptr b)
{
    if (rows <= 0 || dim <= 0 || dim % SEG != 0 || rows > INT32_MAX / 64 || dim > INT32_MAX)
        return wk_fail(WK_ERR_INVALID, "CUDA fused matmul input: %lld rows of %lld (a multiple of "
                                       "16 is needed)", (long long)rows, (long long)dim);
    if ((uintptr_t)a.base % 16 || a.stride % 16 || (uintptr_t)b.base % 16 || b.stride % 16)
        return wk_fail(WK_ERR_INVALID, "CUDA fused matmul input: rows must start on 16-byte boundaries");
    return WK_OK;
}

extern "C" wk_status wk_cuda_qmm_prepare_rmsnorm(wk_cuda_ctx *c, wk_dptr y, wk_dptr x, const float *w,
                                                 int64_t rows, int64_t dim, float eps,
                                                 const int64_t *dpos)
{
    wk_status st = fused_prep_check(rows, dim, x, y);
    if (!st) st = wk_cuda_scratch_reserve(c, wk_cuda_qmm_scratch_bytes(rows, dim));
    if (st) return st;
    xprep p = carve(c->scratch, padded_rows(rows), dim);
    src_rmsnorm src{x, y, w, eps, NULL, NULL, 0.f};
    prepare_x<<<(unsigned)rows, 128, 0, c->stream>>>(src, dpos, (int)dim, p);
    WK_LAUNCHED("rmsnorm with the matmul input preparation");
    c->reuse_x = true;
    return WK_OK;
}

extern "C" wk_status wk_cuda_qmm_prepare_silu_mul(wk_cuda_ctx *c, wk_dptr gate, wk_dptr up,
                                                  int64_t rows, int64_t dim, const int64_t *dpos)
{
    wk_status st = fused_prep_check(rows, dim, gate, up);
    if (!st) st = wk_cuda_scratch_reserve(c, wk_cuda_qmm_scratch_bytes(rows, dim));
    if (st) return st;
    xprep p = carve(c->scratch, padded_rows(rows), dim);
    src_silu_mul src{gate, up, NULL, NULL};
    prepare_x<<<(unsigned)rows, 128, 0, c->stream>>>(src, dpos, (int)dim, p);
    WK_LAUNCHED("silu_mul with the matmul input preparation");
    c->reuse_x = true;
    return WK_OK;
}

extern "C" bool wk_cuda_qmm_supports(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q4_0: case WK_TYPE_Q4_1: case WK_TYPE_Q5_0: case WK_TYPE_Q5_1:
    case WK_TYPE_Q8_0: case WK_TYPE_Q8_1: case WK_TYPE_Q2_K: case WK_TYPE_Q3_K:
    case WK_TYPE_Q4_K: case WK_TYPE_Q5_K: case WK_TYPE_Q6_K: case WK_TYPE_Q8_K:
    case WK_TYPE_F16:
        return true;
    default:
        return false;
    }
}

/* 64 rows, where prefill is long enough that the f16 form's precision is the price of the
 * tensor cores' rate. From 9 rows the wgmma kernel would take the same time as at 64 (one
 * wave of 64-row tiles; H200, 8192 x 4096, us, m = 9 / 16 / 48: Q4_0 19.0 / 23.7 / 59.1
 * against 16.5 / 16.5 / 16.7, Q4_K 28.0 / 29.5 / 79.7 against 16.8), but a short prompt's
 * logits then moved from the CPU's precise form by 0.023-0.034 instead of 0.00004-0.00013,
 * and the default model's 34-token prefill took 3.0 ms either way
 * (bench/results/cuda-gemm-rows-s24-h200.txt). */
extern "C" int64_t wk_cuda_qmm_gemm_rows(void)
{
    static const long v = wk_env_long("WICK_CUDA_GEMM_ROWS", WK_CUDA_QMM_GEMM_ROWS);
    return v > WK_CUDA_QMV_ROWS ? (int64_t)v : WK_CUDA_QMM_GEMM_ROWS;
}

extern "C" size_t wk_cuda_qmm_scratch_bytes(int64_t m, int64_t k)
{
    int64_t mpad = padded_rows(m);
    return 2 * round_up((size_t)(mpad * k) * 2, 256) + round_up((size_t)(mpad * (k / SEG)) * 4, 256) +
           round_up((size_t)mpad * 4, 256);
}

extern "C" wk_status wk_cuda_qmm(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n,
                                 int64_t k, const void *x, wk_type xtype, int64_t m, float *y)
{
    return wk_cuda_qmm_dyn(c, wtype, w, n, k, wk_dp(x), xtype, m, wk_dp(y), NULL);
}

extern "C" wk_status wk_cuda_qmm_dyn(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n,
                                     int64_t k, wk_dptr x, wk_type xtype, int64_t m, wk_dptr y,
                                     const int64_t *dpos)
{
    bool reuse = c->reuse_x; /* one call only, whatever happens to it */
    c->reuse_x = false;
    wk_dptr add = c->add_to;
    c->add_to = wk_dp(NULL);
    const bool packed = wk_cuda_is_packed(wtype);
    const wk_type base = wk_cuda_unpacked(wtype);
    const wk_type_traits *tr = wk_traits(base);
    if (!tr || !wk_cuda_qmm_supports(base))
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA quantized matmul: weight type %s has no "
                                           "tensor-core kernel", tr ? tr->name : "(unknown)");
    int64_t qk = wk_cuda_block_elems(base);
    if (xtype != WK_TYPE_F32 && xtype != WK_TYPE_F16)
        return wk_fail(WK_ERR_INVALID, "CUDA matmul: input type %s (only f32 and f16 inputs)",
                       wk_traits(xtype) ? wk_traits(xtype)->name : "(unknown)");
    if (n <= 0 || m <= 0 || k <= 0 || k % qk != 0)
        return wk_fail(WK_ERR_INVALID, "CUDA %s matmul: k = %lld must be a positive multiple of %lld "
                                       "(n = %lld, m = %lld)", tr->name, (long long)k, (long long)qk,
                       (long long)n, (long long)m);
    if (n > INT32_MAX || k > INT32_MAX || m > INT32_MAX / 64)
        return wk_fail(WK_ERR_INVALID, "CUDA %s matmul: sizes n = %lld, k = %lld, m = %lld too large",
                       tr->name, (long long)n, (long long)k, (long long)m);
    if (m >= wk_cuda_qmm_gemm_rows() && !dpos) {
        wk_status st = qmm_via_gemm(c, wtype, w, n, k, x.base, xtype, m, (float *)y.base);
        if (!st && add.base) st = wk_cuda_add(c, add, y, m * n, NULL);
        return st;
    }
    if ((uintptr_t)x.base % 16 != 0 || x.stride % 16 != 0)
        return wk_fail(WK_ERR_INVALID, "CUDA %s matmul: the input rows must start on 16-byte "
                                       "boundaries", tr->name);
    /* The packed layout has only the matrix-vector kernel, which takes more rows 8 at a
     * time (one launch, a slice of the grid each); so do F16 rows that kernel reads. */
    const bool f16_rows = base == WK_TYPE_F16 && !packed && wk_cuda_f16_rows_fit(n, k, w);
    if ((m <= WK_CUDA_QMV_ROWS || packed || f16_rows) && k % SEG == 0) {
        wk_cuda_qmv_job j = {};
        j.wtype = wtype;
        j.k = k;
        j.m = m;
        j.src = WK_QMV_INPUT;
        j.x = x;
        j.xtype = xtype;
        j.nout = 1;
        j.out[0].w = w;
        j.out[0].n = n;
        j.out[0].y = y;
        j.out[0].add = add;
        j.dpos = dpos;
        return wk_cuda_qmv(c, &j);
    }
    wk_status st = wk_cuda_scratch_reserve(c, wk_cuda_qmm_scratch_bytes(m, k));
    if (st) return st;
    int64_t mpad = padded_rows(m);
    xprep p = carve(c->scratch, mpad, k);
    if (reuse)
        ; /* the previous call prepared this very input */
    else if (xtype == WK_TYPE_F32)
        prepare_x<<<(unsigned)m, 128, 0, c->stream>>>(src_input<float>{x, NULL}, dpos, (int)k, p);
    else
        prepare_x<<<(unsigned)m, 128, 0, c->stream>>>(src_input<__half>{x, NULL}, dpos, (int)k, p);
    WK_LAUNCHED("the matmul input preparation");
    switch (wtype) {
    case WK_TYPE_Q4_0: return launch_t<wkq::q4_0>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q4_1: return launch_t<wkq::q4_1>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q5_0: return launch_t<wkq::q5_0>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q5_1: return launch_t<wkq::q5_1>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q8_0: return launch_t<wkq::q8_0>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q8_1: return launch_t<wkq::q8_1>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q2_K: return launch_t<wkq::q2_K>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q3_K: return launch_t<wkq::q3_K>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q4_K: return launch_t<wkq::q4_K>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q5_K: return launch_t<wkq::q5_K>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q6_K: return launch_t<wkq::q6_K>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_Q8_K: return launch_t<wkq::q8_K>(c, w, n, k, p, m, y, add, dpos);
    case WK_TYPE_F16: return launch_t<wkq::f16>(c, w, n, k, p, m, y, add, dpos);
    default: break;
    }
    return wk_fail(WK_ERR_UNSUPPORTED, "CUDA quantized matmul: weight type %s", tr->name);
}
