/* Quantized matrix-vector products on the tensor cores: 1 to 8 input rows, the decode
 * step's matmuls.
 *
 * y = x · Wᵀ with W in its GGUF format. x (at most 8 rows) is prepared as in the many-row
 * kernel: each row scaled by a power of two below its largest |value|, split into
 * hi = f16(x) and lo = f16(x - hi), sums of each 16 elements kept in f32. Here hi and lo
 * of a row are two columns of the mma's B operand, so one mma.m16n8k16 serves four input
 * rows at full precision, and the weights' scales are applied once per group of steps
 * that share them.
 *
 * A block takes 16 weight rows; its warps split k into chunks of a few format blocks,
 * each warp copying its next chunk's rows into shared memory with 4-byte asynchronous
 * copies while it decodes the current one (rows that start on a 2-byte boundary are
 * copied from the word below and read at an offset). A weight in the packed layout
 * (qpack.cuh) takes qmv_packed_kernel instead: no staging, each lane loads its part of a
 * chunk straight into registers; it also takes more than 8 input rows, 8 a grid slice.
 * The input is prepared inside the
 * kernel when it is small (each block prepares its own copy in shared memory: no
 * separate launch, which is what a decode step's latency is made of), else once by a
 * preparation kernel into scratch. The preparation can also be an RMSNorm of x or
 * silu(gate) * up, and one launch may serve up to three weights of one input (q, k, v;
 * gate, up), each output optionally added to a residual.
 *
 * Decode steps are chains of such launches: each is launched for programmatic dependent
 * launch, so it starts copying its first weight chunks while the kernel before it still
 * runs, and waits for that kernel only before it reads the input (pdl_wait). */
#include <cuda_fp16.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <type_traits>

#include "cuda/cuda_util.cuh"
#include "cuda/mma.cuh"
#include "cuda/qdecode.cuh"
#include "cuda/qpack.cuh"
#include "cuda/trace.cuh"
#include "cuda/traits_cxx.h"

namespace {

WK_TRACE_RING(qmv_ring)

using wkm::mma16816;

constexpr int SEG = 16;     /* elements per step */
constexpr int MAX_WARPS = 8;
constexpr size_t MAX_BLOCK_SMEM = 200 << 10; /* dynamic shared memory a matrix-vector block may ask */
constexpr int MAX_ROWS = 8; /* input rows */

/* Format blocks per chunk. Small chunks (decode's short rows: more warps share k): the
 * fewest (1, 2, 4, 8) making at least 64 bytes per row and whole 32-bit words. Big
 * chunks (long rows: fewer, wider copies): the fewest making at least 128 bytes in whole
 * 16-byte pieces, up to 512 bytes, else the small choice from 128 bytes. */
__host__ __device__ constexpr int chunk_fit(int bytes, int ch, int least, int align)
{
    return ch >= 8 || (ch * bytes >= least && (ch * bytes) % align == 0) ? ch : chunk_fit(bytes, 2 * ch, least, align);
}
__host__ __device__ constexpr int chunk_big(int bytes)
{
    return chunk_fit(bytes, 1, 128, 16) * bytes % 16 == 0 && chunk_fit(bytes, 1, 128, 16) * bytes <= 512
               ? chunk_fit(bytes, 1, 128, 16)
               : chunk_fit(bytes, 1, 128, 4);
}
template <class T, bool BIG> struct geom {
    static constexpr int CH = BIG ? chunk_big(T::BYTES) : chunk_fit(T::BYTES, 1, 64, 4);
    static constexpr int CB = CH * T::BYTES;          /* bytes of a chunk row */
    static constexpr bool A2 = T::BYTES % 4 != 0;     /* rows may start on 2-byte boundaries */
    static constexpr int WPR = (CB + (A2 ? 2 : 0) + 3) / 4; /* words copied per chunk row */
    static constexpr bool V16 = CB % 16 == 0;         /* 16-byte copies when rows allow */
    /* Row pitch in words, = 4 (mod 8): the 8 rows g of one load fall in distinct banks. */
    static constexpr int PITCH_W = WPR % 8 <= 4 ? WPR - WPR % 8 + 4 : WPR - WPR % 8 + 12;
    static constexpr int PITCH = PITCH_W * 4;
};

struct out_desc {
    const uint8_t *w;
    wk_dptr y, add;
    int n;
    int g0; /* first row group of this output in the grid */
    int rope_hd, rope_rot; /* RoPE: head size (0: none), rotated dims */
    int64_t rope_pos;
    double rope_lb; /* log(base) / n_rot */
};

struct params {
    out_desc out[3];
    int nout;
    int rg, wpg; /* row groups per block, warps per row group */
    int k, m, nseg;
    int src; /* wk_qmv_src */
    bool x_f16;
    wk_dptr x, x2, norm_out;
    const float *norm_w;
    float eps;
    const float *add_from; /* read in the epilogue only (a live pointer costs registers) */
    const int64_t *dpos;
    size_t row_bytes;
    /* Prepared input in scratch (inline == false): 2m arrays of xpitch halves, sums
     * [m][nseg], scales [m]. */
    bool inline_x;
    int copy_rows; /* packed kernel: input rows a block copies from scratch into shared memory */
    __half *xg;
    float *sums_g, *scale_g;
    int xpitch;
    int trace_slot; /* measuring builds (trace.cuh) */
    bool inline_one; /* host: the inline input prepared in one block an SM (wk_cuda_qmv) */
};

/* The address of d at step position `step` (0 when the kernel has no position pointer). */
__device__ __forceinline__ const char *at(wk_dptr d, int64_t step) { return (const char *)d.base + step * d.stride; }
/* The step position: written before the graph runs (wk_cuda_set_pos, an ordinary launch
 * ahead of it) and by nothing in it, so kernels read it before their dependency wait. */
__device__ __forceinline__ int64_t step_of(const int64_t *dpos) { return dpos ? __ldcg(dpos) : 0; }

/* Output o's description, field by field from the parameters: a copy of p.out[o] with o
 * known only at run time would be made in local memory, and read from there. */
__device__ __forceinline__ out_desc pick_out(const params &p, int o)
{
    const out_desc &a = p.out[0], &b = p.out[1], &c = p.out[2];
    out_desc d;
    d.w = o == 0 ? a.w : o == 1 ? b.w : c.w;
    d.y.base = o == 0 ? a.y.base : o == 1 ? b.y.base : c.y.base;
    d.y.stride = o == 0 ? a.y.stride : o == 1 ? b.y.stride : c.y.stride;
    d.add.base = o == 0 ? a.add.base : o == 1 ? b.add.base : c.add.base;
    d.add.stride = o == 0 ? a.add.stride : o == 1 ? b.add.stride : c.add.stride;
    d.n = o == 0 ? a.n : o == 1 ? b.n : c.n;
    d.g0 = o == 0 ? a.g0 : o == 1 ? b.g0 : c.g0;
    d.rope_hd = o == 0 ? a.rope_hd : o == 1 ? b.rope_hd : c.rope_hd;
    d.rope_rot = o == 0 ? a.rope_rot : o == 1 ? b.rope_rot : c.rope_rot;
    d.rope_pos = o == 0 ? a.rope_pos : o == 1 ? b.rope_pos : c.rope_pos;
    d.rope_lb = o == 0 ? a.rope_lb : o == 1 ? b.rope_lb : c.rope_lb;
    return d;
}

/* Which output and which 16 rows of it row group rg of this block takes (live <= 0:
 * none; its warps only help to prepare x). */
struct place {
    out_desc od;
    int n0, live;
};
__device__ __forceinline__ place locate(const params &p, int rg)
{
    int o = 0;
    if (p.nout > 1 && (int)blockIdx.x >= p.out[1].g0) o = 1;
    if (p.nout > 2 && (int)blockIdx.x >= p.out[2].g0) o = 2;
    place pl;
    pl.od = pick_out(p, o);
    pl.n0 = (((int)blockIdx.x - pl.od.g0) * p.rg + rg) * 16;
    pl.live = min(16, pl.od.n - pl.n0);
    return pl;
}

/* The sum and the largest value of a warp's lanes, by shuffles in a fixed order; every lane
 * gets lane 0's result (the other lanes add in other orders). */
__device__ __forceinline__ void warp_sum_max(float &sum, float &mx)
{
    for (int o = 16; o; o >>= 1) {
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    }
    sum = __shfl_sync(0xffffffffu, sum, 0);
}

/* The sum of `sum` and the largest `mx` over the block's threads, in a fixed order (the
 * same result every run); red holds 2 floats per warp. The warps' results are added by
 * every warp with shuffles, not one after another by every thread (a block of 24 warps,
 * 8192 x 4096 at one input row, H100: Q4_0 10.5 -> 10.3 us, Q8_0 15.1 -> 14.8). */
__device__ void block_sum_max(float &sum, float &mx, float *red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    warp_sum_max(sum, mx);
    __syncthreads(); /* red may still be read from the previous reduction */
    if (lane == 0) red[2 * warp] = sum, red[2 * warp + 1] = mx;
    __syncthreads();
    sum = lane < nw ? red[2 * lane] : 0.f;
    mx = lane < nw ? red[2 * lane + 1] : 0.f;
    warp_sum_max(sum, mx);
}

/* Where the preparation reads row r: resolved once (the position is read once). */
struct src_rows {
    const char *x, *x2;
    float *norm_out;
};
__device__ __forceinline__ src_rows resolve(const params &p, int64_t step)
{
    src_rows s;
    s.x = at(p.x, step);
    s.x2 = at(p.x2, step);
    s.norm_out = p.norm_out.base ? (float *)at(p.norm_out, step) : NULL;
    return s;
}

/* The 4 values of unit u (elements 4u .. 4u+3) of input row r before any RMSNorm factor:
 * the input or silu(x) * x2 (for an RMSNorm the input; its weight and the row's factor
 * are applied by the caller). */
__device__ __forceinline__ float4 source4(const params &p, const src_rows &sr, int r, int u)
{
    const size_t off = (size_t)r * p.k + (size_t)u * 4;
    if (p.src == WK_QMV_INPUT && p.x_f16) {
        const uint2 h = *reinterpret_cast<const uint2 *>((const __half *)sr.x + off);
        const float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&h.x));
        const float2 b = __half22float2(*reinterpret_cast<const __half2 *>(&h.y));
        return make_float4(a.x, a.y, b.x, b.y);
    }
    float4 v = *reinterpret_cast<const float4 *>((const float *)sr.x + off);
    if (p.src == WK_QMV_SILU_MUL) {
        const float4 g = *reinterpret_cast<const float4 *>((const float *)sr.x2 + off);
        v.x = v.x / (1.f + expf(-v.x)) * g.x;
        v.y = v.y / (1.f + expf(-v.y)) * g.y;
        v.z = v.z / (1.f + expf(-v.z)) * g.z;
        v.w = v.w / (1.f + expf(-v.w)) * g.w;
    }
    return v;
}

/* Prepare input rows r0 .. r1-1 with all threads of the block: hi/lo halves into
 * xh (row r's hi at array 2r, lo at 2r+1, xpitch halves apart), segment sums, scales.
 * Thread i takes the 4-element units i, i + blockDim.x, ...: the units of one 16-element
 * segment are 4 neighbouring lanes, which add their sums by two shuffles. Two passes:
 * the row's largest |value| (and for an RMSNorm its sum of squares; the largest |x * w|
 * times the row's factor then bounds the values, which is all the scale needs), then the
 * split; the first KEEP units of a thread stay in registers between them.
 * write_norm: also store the RMSNorm's result; with_sums: the segment sums, which only the
 * formats with an additive term read. The block size is a multiple of 32. (The rows brought
 * into shared memory by the copy engine, and each warp preparing its own chunks' input with
 * no block barrier, were slower at one row: docs/cuda.md, session 41.) */
__device__ void prepare_rows(const params &p, const float *norm_w, int64_t step, int r0, int r1, __half *xh,
                             int xpitch, float *sums,
                             float *scale, bool write_norm, float *red, bool with_sums)
{
    constexpr int KEEP = 2;
    const int nu = p.k / 4;
    const bool norm = p.src == WK_QMV_RMSNORM;
    const src_rows sr = resolve(p, step);
    for (int r = r0; r < r1; r++) {
        float4 kept[KEEP];
        float mx = 0.f, ss = 0.f;
        auto measure = [&](const float4 v, int u) {
            if (norm) {
                const float *w = norm_w + 4 * u;
                ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
                mx = fmaxf(fmaxf(fmaxf(mx, fabsf(v.x * w[0])), fmaxf(fabsf(v.y * w[1]), fabsf(v.z * w[2]))),
                           fabsf(v.w * w[3]));
            } else {
                mx = fmaxf(fmaxf(mx, fmaxf(fabsf(v.x), fabsf(v.y))), fmaxf(fabsf(v.z), fabsf(v.w)));
            }
        };
#pragma unroll
        for (int i = 0; i < KEEP; i++) {
            const int u = threadIdx.x + i * blockDim.x;
            kept[i] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (u < nu) {
                kept[i] = source4(p, sr, r, u);
                measure(kept[i], u);
            }
        }
        for (int u = threadIdx.x + KEEP * blockDim.x; u < nu; u += blockDim.x) measure(source4(p, sr, r, u), u);
        block_sum_max(ss, mx, red);
        const float rr = norm ? 1.f / sqrtf(ss / (float)p.k + p.eps) : 1.f;
        mx *= rr;
        /* s = 2^e with max < s (about: values may reach s, f16 holds them all): x / s
         * is exact. NaN/inf keep s = 1 and show. */
        float s = 1.f;
        int inv_e = 0;
        if (mx > 0.f && isfinite(mx)) {
            int e;
            frexpf(mx, &e);
            s = ldexpf(1.f, e);
            inv_e = -e;
        }
        const float inv = ldexpf(1.f, inv_e);
        /* Unit u's halves and its segment's sum; every lane of a warp takes part (the
         * shuffles), lanes past the end with on = false. */
        auto split = [&](float4 t, int u, bool on) {
            float v[4] = {t.x, t.y, t.z, t.w};
            if (on && norm) {
                const float *w = norm_w + 4 * u;
#pragma unroll
                for (int e = 0; e < 4; e++) v[e] = v[e] * rr * w[e];
            }
            if (on && write_norm && sr.norm_out)
                *reinterpret_cast<float4 *>(sr.norm_out + (size_t)r * p.k + 4 * (size_t)u) =
                    make_float4(v[0], v[1], v[2], v[3]);
            /* Converted in pairs, kept in registers (an array cast to a wider type would
             * live in local memory). */
            const float f0 = v[0] * inv, f1 = v[1] * inv, f2 = v[2] * inv, f3 = v[3] * inv;
            const __half2 h01 = __floats2half2_rn(f0, f1), h23 = __floats2half2_rn(f2, f3);
            const float2 b01 = __half22float2(h01), b23 = __half22float2(h23);
            const __half2 l01 = __floats2half2_rn(f0 - b01.x, f1 - b01.y);
            const __half2 l23 = __floats2half2_rn(f2 - b23.x, f3 - b23.y);
            float sum = 0.f;
            if (with_sums) {
                sum = f0 + f1 + f2 + f3;
                sum += __shfl_xor_sync(0xffffffffu, sum, 1);
                sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            }
            if (on) {
                *reinterpret_cast<uint2 *>(xh + (size_t)(2 * r) * xpitch + 4 * u) =
                    make_uint2(*reinterpret_cast<const uint32_t *>(&h01), *reinterpret_cast<const uint32_t *>(&h23));
                *reinterpret_cast<uint2 *>(xh + (size_t)(2 * r + 1) * xpitch + 4 * u) =
                    make_uint2(*reinterpret_cast<const uint32_t *>(&l01), *reinterpret_cast<const uint32_t *>(&l23));
                if (with_sums && (u & 3) == 0) sums[(size_t)r * p.nseg + u / 4] = sum;
            }
        };
        const int iters = (nu + blockDim.x - 1) / blockDim.x;
#pragma unroll
        for (int i = 0; i < KEEP; i++)
            if (i < iters) split(kept[i], threadIdx.x + i * blockDim.x, threadIdx.x + i * blockDim.x < nu);
        for (int i = KEEP; i < iters; i++) {
            const int u = threadIdx.x + i * blockDim.x;
            split(u < nu ? source4(p, sr, r, u) : make_float4(0.f, 0.f, 0.f, 0.f), u, u < nu);
        }
        if (threadIdx.x == 0) scale[r] = s;
    }
}

/* The preparation as its own kernel (large inputs): one block per input row. */
__global__ void __launch_bounds__(256) prepare_kernel(params p)
{
    __shared__ float red[2 * MAX_WARPS];
    const int64_t step = step_of(p.dpos);
    pdl_wait();
    pdl_release();
    int r = blockIdx.x;
    prepare_rows(p, p.norm_w, step, r, r + 1, p.xg, p.xpitch, p.sums_g, p.scale_g,
                 p.src == WK_QMV_RMSNORM && p.norm_out.base, red, true);
}

__device__ __forceinline__ void cp_async4(void *dst, const void *src)
{
    unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(src));
}
/* 16 bytes, bypassing L1 (both addresses on 16 bytes). */
__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
    unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(src));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* The RoPE angles of this lane's outputs: they depend on the step position alone (see
 * step_of), so they are computed before the wait and overlap the previous kernel instead
 * of following the products. In double, as wk_cuda_rope. */
template <int NX, int NA>
__device__ __forceinline__ void rope_angles(const out_desc &od, int n0, int g, int t, int64_t step,
                                            float (&rcos)[NA][2], float (&rsin)[NA][2])
{
#pragma unroll
    for (int j = 0; j < NA; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            rcos[j][h] = 1.f, rsin[j][h] = 0.f;
            const int d = od.rope_hd ? (n0 + g + 8 * h) % od.rope_hd : 0;
            if (j < NX && od.rope_hd && d < od.rope_rot)
                rope_angle(od.rope_pos + step + 4 * j + t, d / 2, od.rope_lb, rcos[j][h], rsin[j][h]);
        }
}

/* The residual rows this lane adds to, into L1 while the products run (after the wait:
 * an earlier kernel may have written them). */
template <int NX>
__device__ __forceinline__ void prefetch_residual(const out_desc &od, const float *add, const float *from, int m,
                                                  bool on, int n0, int g, int t)
{
    if (add && on)
#pragma unroll
        for (int j = 0; j < NX; j++)
            if (4 * j + t < m)
                asm volatile("prefetch.global.L1 [%0];" ::"l"(from + (size_t)(4 * j + t) * od.n + n0 + g));
}

/* The prepared input: prepared here into shared memory (inline), or read from scratch. */
struct xview {
    const __half *xh;
    const float *sums, *xscale;
    int xpitch;
};
/* later: asynchronous copy groups committed after the RMSNorm weights' (0..2); r0: the
 * first input row this block multiplies (prepared in scratch when not 0); with_sums: the
 * weight's format reads the segment sums. */
__device__ __forceinline__ xview input_view(const params &p, uint8_t *xin, bool stage_norm, const float *norm_ws,
                                            int later, int64_t step, float *red, int r0, bool with_sums)
{
    xview v;
    if (p.inline_x) {
        v.xpitch = p.k + SEG;
        __half *xs = reinterpret_cast<__half *>(xin);
        float *ss = reinterpret_cast<float *>(xin + (size_t)2 * p.m * v.xpitch * 2);
        float *sc = ss + (size_t)p.m * p.nseg;
        if (stage_norm) {
            if (later == 2) cp_wait<2>();
            else if (later == 1) cp_wait<1>();
            else cp_wait<0>();
            __syncthreads();
        }
        prepare_rows(p, stage_norm ? norm_ws : p.norm_w, step, 0, p.m, xs, v.xpitch, ss, sc,
                     p.src == WK_QMV_RMSNORM && p.norm_out.base && blockIdx.x == 0, red, with_sums);
        __syncthreads();
        v.xh = xs, v.sums = ss, v.xscale = sc;
    } else {
        v.xpitch = p.xpitch;
        v.xh = p.xg + (size_t)(2 * r0) * p.xpitch, v.sums = p.sums_g + (size_t)r0 * p.nseg, v.xscale = p.scale_g + r0;
    }
    return v;
}

/* The warps of a row group add up their k parts in a fixed order; the first warp scales
 * the sums back, applies the RoPE and stores the m rows (and adds them to the residual:
 * add = from + y). */
template <int NX, int NA>
__device__ __forceinline__ void finish(const out_desc &od, int m, float (&acc)[NA][4], float *red, int warp, int kw,
                                       int wpg, int lane, int live, float *y, float *add, const float *from,
                                       const float *xscale, int n0, const float (&rcos)[NA][2],
                                       const float (&rsin)[NA][2])
{
    const int g = lane >> 2, t = lane & 3;
    if (wpg > 1) { /* red: NX sets of 4 x 32 a warp */
        if (kw > 0)
#pragma unroll
            for (int j = 0; j < NX; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) red[(warp * 4 * NX + j * 4 + i) * 32 + lane] = acc[j][i];
        __syncthreads();
        if (kw > 0) return;
        for (int v = 1; v < wpg; v++)
#pragma unroll
            for (int j = 0; j < NX; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) acc[j][i] += red[((warp + v) * 4 * NX + j * 4 + i) * 32 + lane];
    }
    if (live <= 0) return;
#pragma unroll
    for (int j = 0; j < NX; j++) {
        const int row = 4 * j + t;
        const float s = xscale[min(row, m - 1)];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int col = n0 + g + 8 * h;
            float v = (acc[j][2 * h] + acc[j][2 * h + 1]) * s;
            if (od.rope_hd) {
                /* Pair (2p, 2p + 1) is columns g and g ^ 1: lanes 4 apart. Past the
                 * rotated dims the angle is 0 (cos 1, sin 0): v unchanged. */
                const float other = __shfl_xor_sync(0xffffffffu, v, 4);
                const float c = rcos[j][h], sf = rsin[j][h];
                if ((col % od.rope_hd) < od.rope_rot) v = rope_rotate(v, other, g & 1, c, sf);
            }
            if (row >= m || col >= od.n) continue;
            y[(size_t)row * od.n + col] = v;
            if (add) add[(size_t)row * od.n + col] = from[(size_t)row * od.n + col] + v;
        }
    }
}

/* Shared-memory bytes: staging buffers, the warps' partial sums, and (inline) the input. */
template <class G> __host__ __device__ size_t stage_bytes(int nw) { return (size_t)nw * 2 * 16 * G::PITCH; }
__host__ __device__ size_t red_bytes(int nw, int nx = 2) { return (size_t)nw * nx * 4 * 32 * sizeof(float); }
/* The input prepared in the kernel, then (an RMSNorm) its weights, copied in before the wait. */
__host__ __device__ size_t xin_bytes(int m, int k)
{
    return (size_t)2 * m * (k + SEG) * 2 + (size_t)m * (k / SEG) * 4 + MAX_ROWS * 4;
}
__host__ __device__ size_t norm_at(int m, int k) { return (xin_bytes(m, k) + 15) / 16 * 16; }
__host__ __device__ size_t xin_norm_bytes(const params &p)
{
    return p.src == WK_QMV_RMSNORM ? norm_at(p.m, p.k) + (size_t)p.k * 4 : xin_bytes(p.m, p.k);
}
/* The shared memory a block's input takes: prepared inside, copied from scratch, or none. */
size_t x_smem_bytes(const params &p)
{
    return p.inline_x ? xin_norm_bytes(p) : p.copy_rows ? xin_bytes(p.copy_rows, p.k) : 0;
}

/* An RMSNorm's weights (nothing earlier writes them) into shared memory before the wait,
 * as the oldest copy group, so that the preparation after the wait does not wait on them
 * (after a step's stream of weights they are no longer in L2). Whether it did. */
__device__ __forceinline__ bool stage_norm_weights(const params &p, float *norm_ws)
{
    const bool stage = p.inline_x && p.src == WK_QMV_RMSNORM && (uintptr_t)p.norm_w % 16 == 0;
    if (stage) {
        for (int u = threadIdx.x; u < p.k / 4; u += blockDim.x) cp_async16(norm_ws + 4 * u, p.norm_w + 4 * u);
        cp_commit();
    }
    return stage;
}

/* MINB: blocks of 8 warps per SM the registers are sized for (3: at most 80 registers a
 * thread, 2: 128, without spills). */
template <class T, int NX, bool BIG, int MINB>
__global__ void __launch_bounds__(256, MINB) qmv_kernel(params p)
{
    WK_TRACE_BEGIN(qmv_ring, p.trace_slot, 1)
    extern __shared__ __align__(16) uint8_t smem[];
    using G = geom<T, BIG>;
    constexpr int CH = G::CH, CB = G::CB, PITCH = G::PITCH, WPR = G::WPR;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    /* The block takes p.rg groups of 16 rows, p.wpg warps each splitting k. */
    const int wpg = p.wpg, rg = warp / wpg, kw = warp - rg * wpg;

    const place pl = locate(p, rg);
    const out_desc &od = pl.od;
    const int n0 = pl.n0, live = pl.live;
    const uint8_t *wr = od.w + (size_t)n0 * p.row_bytes;
    const int nblk = p.k / T::QK, nchunk = (nblk + CH - 1) / CH;
    const bool last_group = n0 + 16 >= od.n;
    const bool aligned = (uintptr_t)od.w % 4 == 0;
    /* The flat copy takes 16 rows of whole words; it may read 2 bytes past a row, so not
     * in the group that holds the tensor's last row when rows can end mid-word. */
    const bool fast_rows = live == 16 && aligned && (!G::A2 || !last_group);
    /* 16-byte copies: every chunk row starts on 16 bytes and ends where the next begins. */
    const bool vec16 = G::V16 && live == 16 && (uintptr_t)od.w % 16 == 0 && p.row_bytes % 16 == 0;

    uint8_t *stage = smem;
    float *red = reinterpret_cast<float *>(smem + stage_bytes<G>(nw));
    uint8_t *xin = smem + stage_bytes<G>(nw) + red_bytes(nw);
    uint8_t *buf = stage + (size_t)warp * 2 * 16 * PITCH;

    /* Byte offset of row r's data within its staging row (rows are 2-byte aligned). */
    auto shift_of = [&](int r) -> int { return (int)(((uintptr_t)wr + (size_t)r * p.row_bytes) & 3); };
    /* Rows past the end read the last row (their results are dropped). */
    const int row0 = min(g, live - 1), row1 = min(g + 8, live - 1);
    const int sh0 = live > 0 ? shift_of(row0) : 0, sh1 = live > 0 ? shift_of(row1) : 0;

    auto stage_chunk = [&](int c, int slot) {
        uint8_t *d = buf + slot * 16 * PITCH;
        const int cb = min(CH, nblk - c * CH);
        const size_t off = (size_t)c * CB;
        if (vec16 && cb == CH) {
            constexpr int VPR = CB / 16;
            for (int i = lane; i < 16 * VPR; i += 32) {
                const int r = i / VPR, v = i - r * VPR;
                cp_async16(d + r * PITCH + 16 * v, wr + (size_t)r * p.row_bytes + off + 16 * v);
            }
        } else if (fast_rows && cb == CH) {
            for (int i = lane; i < 16 * WPR; i += 32) {
                const int r = i / WPR, wd = i - r * WPR;
                const uint8_t *src = wr + (size_t)r * p.row_bytes + off;
                const uint32_t *s4 = reinterpret_cast<const uint32_t *>((uintptr_t)src & ~(uintptr_t)3) + wd;
                cp_async4(d + r * PITCH + 4 * wd, s4);
            }
        } else if (aligned) {
            /* Edge: a short chunk, fewer rows, or the tensor's end: row by row, exactly the
             * words that hold the row's bytes; a last half word at the tensor's end is
             * copied alone. */
            const int bytes = cb * T::BYTES;
            const bool tensor_end = last_group && c == nchunk - 1;
            for (int r = 0; r < live; r++) {
                const uint8_t *src = wr + (size_t)r * p.row_bytes + off;
                const int sh = (int)((uintptr_t)src & 3);
                const uint8_t *s4 = src - sh;
                const int words = (sh + bytes + 3) / 4;
                const bool cut = tensor_end && r == live - 1 && (sh + bytes) % 4 != 0;
                for (int wd = lane; wd < words; wd += 32) {
                    if (cut && wd == words - 1)
                        *reinterpret_cast<uint16_t *>(d + r * PITCH + 4 * wd) =
                            *reinterpret_cast<const uint16_t *>(s4 + 4 * wd);
                    else
                        cp_async4(d + r * PITCH + 4 * wd, s4 + 4 * wd);
                }
            }
        } else {
            /* A weight that does not start on a word: plain 2-byte copies. */
            const int per_row = cb * T::BYTES / 2;
            for (int r = 0; r < live; r++) {
                const uint16_t *src = reinterpret_cast<const uint16_t *>(wr + (size_t)r * p.row_bytes + off);
                uint16_t *dst = reinterpret_cast<uint16_t *>(d + r * PITCH + shift_of(r));
                for (int h = lane; h < per_row; h += 32) dst[h] = src[h];
            }
        }
        cp_commit();
    };

    float *norm_ws = reinterpret_cast<float *>(xin + norm_at(p.m, p.k));
    const bool stage_norm = stage_norm_weights(p, norm_ws);
    /* Start the copies of the first two chunks (weights: nothing earlier writes them, so
     * this may overlap the previous kernel), then wait for that kernel and prepare the
     * input while the copies are in flight. */
    int c = live > 0 ? kw : nchunk;
    const int later = (c < nchunk) + (c + wpg < nchunk); /* copy groups committed after it */
    if (c < nchunk) stage_chunk(c, 0);
    if (c + wpg < nchunk) stage_chunk(c + wpg, 1);
    const int64_t step = step_of(p.dpos);
    float rcos[2][2], rsin[2][2];
    rope_angles<NX>(od, n0, g, t, step, rcos, rsin);
    pdl_wait();
    pdl_release();
    WK_TRACE_MARK(1);
    float *y = (float *)at(od.y, step);
    float *add = od.add.base ? (float *)at(od.add, step) : NULL;
    const float *from = p.add_from ? p.add_from : add;
    prefetch_residual<NX>(od, add, from, p.m, live > 0 && kw == 0, n0, g, t);
    const xview xv = input_view(p, xin, stage_norm, norm_ws, later, step, red, 0, T::ADD);

    constexpr int nx = NX; /* mmas per step: input rows 0-3, 4-7 */
    const int m2 = 2 * p.m;
    /* Lane g supplies B column g: input row g/2 (+4 for the second mma), hi or lo. */
    const __half *xb0 = xv.xh + (size_t)min(g, m2 - 1) * xv.xpitch + 4 * t;
    const __half *xb1 = xv.xh + (size_t)min(8 + g, m2 - 1) * xv.xpitch + 4 * t;
    const bool bl0 = g < m2, bl1 = 8 + g < m2;
    const float *sum0 = xv.sums + (size_t)min(t, p.m - 1) * p.nseg;
    const float *sum1 = xv.sums + (size_t)min(4 + t, p.m - 1) * p.nseg;

    float acc[2][4];
#pragma unroll
    for (int j = 0; j < 2; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

    auto block = [&](const uint8_t *b0p, const uint8_t *b1p, int blk) {
#pragma unroll
        for (int s0 = 0; s0 < T::S; s0 += T::SG) {
            float tmp[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
            float sc0 = 0.f, sc1 = 0.f, ad0 = 0.f, ad1 = 0.f, xs0 = 0.f, xs1 = 0.f;
#pragma unroll
            for (int s = s0; s < s0 + T::SG; s++) {
                uint32_t a0, a1, a2, a3;
                float c0, c1, d0, d1;
                T::step(b0p, s, t, a0, a2, c0, d0);
                T::step(b1p, s, t, a1, a3, c1, d1);
                if (s == s0) sc0 = c0, sc1 = c1, ad0 = d0, ad1 = d1;
                const int seg = blk * (T::QK / SEG) + s;
                uint2 bx = bl0 ? *reinterpret_cast<const uint2 *>(xb0 + seg * SEG) : make_uint2(0, 0);
                mma16816(tmp[0], a0, a1, a2, a3, bx.x, bx.y);
                if (T::ADD) xs0 += sum0[seg];
                if (nx > 1) {
                    uint2 by = bl1 ? *reinterpret_cast<const uint2 *>(xb1 + seg * SEG) : make_uint2(0, 0);
                    mma16816(tmp[1], a0, a1, a2, a3, by.x, by.y);
                    if (T::ADD) xs1 += sum1[seg];
                }
            }
#pragma unroll
            for (int j = 0; j < 2; j++) {
                if (j >= nx) break;
                acc[j][0] = fmaf(sc0, tmp[j][0], acc[j][0]);
                acc[j][1] = fmaf(sc0, tmp[j][1], acc[j][1]);
                acc[j][2] = fmaf(sc1, tmp[j][2], acc[j][2]);
                acc[j][3] = fmaf(sc1, tmp[j][3], acc[j][3]);
                if (T::ADD) { /* column 2t is row t's hi: the additive term goes there */
                    const float xs = j ? xs1 : xs0;
                    acc[j][0] = fmaf(ad0, xs, acc[j][0]);
                    acc[j][2] = fmaf(ad1, xs, acc[j][2]);
                }
            }
        }
    };

    for (int it = 0; c < nchunk; c += wpg, it++) {
        const int slot = it & 1;
        if (c + wpg < nchunk)
            cp_wait<1>(); /* the next chunk may still be in flight */
        else
            cp_wait<0>();
        __syncwarp();
        const uint8_t *r0 = buf + slot * 16 * PITCH + row0 * PITCH + sh0;
        const uint8_t *r1 = buf + slot * 16 * PITCH + row1 * PITCH + sh1;
        if (c * CH + CH <= nblk) {
#pragma unroll
            for (int bb = 0; bb < CH; bb++) block(r0 + bb * T::BYTES, r1 + bb * T::BYTES, c * CH + bb);
        } else {
            for (int bb = 0; bb < nblk - c * CH; bb++)
                block(r0 + bb * T::BYTES, r1 + bb * T::BYTES, c * CH + bb);
        }
        __syncwarp(); /* every lane is done with the slot: refill it */
        if (c + 2 * wpg < nchunk) stage_chunk(c + 2 * wpg, slot);
    }

    WK_TRACE_MARK(3);
    finish<NX>(od, p.m, acc, red, warp, kw, wpg, lane, live, y, add, from, xv.xscale, n0, rcos, rsin);
    WK_TRACE_MARK(4);
    WK_TRACE_END();
}

/* The packed kernel's register bound as blocks of 8 warps per SM: 3 (80 registers) for
 * 1-4 input rows of the 32-element formats, 1 (255) for a K format's three or four mmas a
 * step (Q6_K's slices, below), else 2 (128: a K format's chunk is four times as large;
 * 5-8 rows at 80 registers: 8192 x 4096 m = 8 Q4_0 16.7 -> 18.6 us, Q8_0 18.2 -> 22.6);
 * and its chunks in flight a warp: 3 for 1-4 rows of the 32-element
 * formats, else 2 (H200, 8192 x 4096: Q4_1 m = 1 12.6 -> 11.4 us with 3 against 2; 4 was
 * slower for Q8_0 and Q4_1 at 2-8 rows, and for all but Q5_0 at 1-4 rows in session 17).
 * Two mmas a step (5-8 rows, slices of 8) also take 3 for the formats with the smallest
 * chunks in registers, Q4_0, Q4_1 and Q5_0 (session 17, three rounds: m = 8 Q4_0 16.0 ->
 * 15.1 us, Q4_1 18.7 -> 18.3, Q5_0 16.8 -> 16.5, Q4_1 m = 16 33.4 -> 32.4); Q5_1 then spilled
 * (m = 8 19.7 -> 22.0), Q8_0 was no faster, and four mmas a step were slower with 3.
 * Session 39 (H100, 1-4 rows, two rounds): 4, 5 or 6 chunks in flight were no faster for
 * Q4_0 (m = 1 10.3-10.7 us against 10.4, though 6 of its chunks are as many bytes as F16
 * rows' 2, which reach 88% of the read bandwidth) and slower for Q5_0, Q4_1, Q8_0, Q5_1.
 * F16 rows (the 32-element formats' bounds) keep 2 chunks in flight at every row count: a
 * chunk of 2 KiB is 16 registers a lane, so 2 of them hold more bytes than Q8_0's 3. */
template <class P> constexpr bool deep_at_two_mmas()
{
    return std::is_same<P, wkp::q4_0>::value || std::is_same<P, wkp::q4_1>::value || std::is_same<P, wkp::q5_0>::value;
}
template <class P> constexpr int packed_minb(int nx) { return nx > 2 && P::KC != 64 ? 1 : nx > 1 || P::KC != 64 ? 2 : 3; }
template <class P> constexpr int packed_depth(int nx)
{
    return P::KC == 64 && !P::ROWS && (nx == 1 || (nx == 2 && deep_at_two_mmas<P>())) ? 3 : 2;
}

/* The same products over a weight in the packed layout (qpack.cuh): no staging; each
 * lane loads its part of a chunk straight into registers, D chunks in flight, and
 * decodes a step with a few LOP3s. Rows are whole groups of 16 (n % 16 ==
 * 0). F16 weights (ROWS) are read the same way from their rows. (A ring of shared-memory
 * stages filled by the copy engine instead of the registers was slower at 1-8 rows:
 * docs/cuda.md, session 39.) */
template <class P, int NX, int MINB, int D, bool XS, bool ONE>
__global__ void __launch_bounds__(ONE ? 256 * MINB : 256, ONE ? 1 : MINB) qmv_packed_kernel(params p)
{
    WK_TRACE_BEGIN(qmv_ring, p.trace_slot, 1)
    constexpr bool ROWS = P::ROWS;
    extern __shared__ __align__(16) uint8_t smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wpg = p.wpg, rg = warp / wpg, kw = warp - rg * wpg;

    const place pl = locate(p, rg);
    const out_desc &od = pl.od;
    const int n0 = pl.n0, live = pl.live;
    const int nchunk = p.k / P::KC;
    const uint8_t *wg = od.w + (size_t)(n0 >> 4) * (ROWS ? 16 * p.row_bytes : (size_t)nchunk * P::CB);
    auto load = [&](int cc, typename P::frag &fr) { /* chunk cc of the row group */
        if constexpr (ROWS) P::load(wg + (size_t)cc * P::CB, p.row_bytes, lane, fr);
        else P::load(wg + (size_t)cc * P::CB, lane, fr);
    };

    float *red = reinterpret_cast<float *>(smem);
    uint8_t *xin = smem + red_bytes(nw, NX);
    float *norm_ws = reinterpret_cast<float *>(xin + norm_at(p.m, p.k));
    const bool stage_norm = stage_norm_weights(p, norm_ws);

    /* The first D chunks' loads go out before the wait (nothing earlier writes weights). */
    int c = live > 0 ? kw : nchunk;
    typename P::frag f[D];
#pragma unroll
    for (int d = 0; d < D; d++)
        if (c + d * wpg < nchunk) load(c + d * wpg, f[d]);
    /* Input rows r0 .. r0 + mh - 1 (more than 8 rows: a slice of 4 NX per blockIdx.y, the
     * input prepared in scratch). */
    const int r0 = (int)blockIdx.y * 4 * NX, mh = min(4 * NX, p.m - r0);
    const int64_t step = step_of(p.dpos);
    float rcos[NX][2], rsin[NX][2];
    rope_angles<NX>(od, n0, g, t, step + r0, rcos, rsin);
    pdl_wait();
    pdl_release();
    WK_TRACE_MARK(1);
    float *y = (float *)at(od.y, step) + (size_t)r0 * od.n;
    float *add = od.add.base ? (float *)at(od.add, step) + (size_t)r0 * od.n : NULL;
    const float *from = p.add_from ? p.add_from + (size_t)r0 * od.n : add;
    prefetch_residual<NX>(od, add, from, mh, live > 0 && kw == 0, n0, g, t);
    const xview xv = input_view(p, xin, stage_norm, norm_ws, 0, step, red, r0, P::ADD);
    WK_TRACE_MARK(2);

    if (XS && !p.inline_x) { /* copy_rows: the scratch's halves and sums, 16 bytes a copy */
        const int hb = 2 * mh * xv.xpitch * 2, sb = mh * p.nseg * 4; /* this slice's rows */
        for (int u = threadIdx.x; u < (hb + sb) / 16; u += blockDim.x) {
            const char *src = u < hb / 16 ? (const char *)xv.xh + 16 * u : (const char *)xv.sums + (16 * u - hb);
            cp_async16(xin + 16 * u, src);
        }
        cp_commit();
        cp_wait<0>();
        __syncthreads();
    }
    const int m2 = 2 * mh;
    /* XS (the input prepared in this block): pointers derived from the shared array alone,
     * so the loads are LDS. Generic loads of shared memory go down the global loads' path
     * and return behind the weight loads issued before them, a DRAM latency a chunk. */
    const __half *xh = XS ? reinterpret_cast<const __half *>(xin) : xv.xh;
    const float *xsums = XS ? reinterpret_cast<const float *>(xin + (size_t)2 * mh * xv.xpitch * 2) : xv.sums;
    /* mma j takes input rows 4j .. 4j + 3: lane g supplies B column g, row 4j + g / 2's hi
     * or lo (array 8j + g), and adds row 4j + t's sums; arrays past the slice's rows are
     * not read (their products are zero, their outputs not stored). One base pointer each
     * and a stride, so that 16 rows take no more registers than 4. */
    const __half *xb = xh + (size_t)g * xv.xpitch + P::X_LANE * t;
    const float *xsum = xsums + (size_t)t * p.nseg;
    const int xstride = 8 * xv.xpitch, sstride = 4 * p.nseg;

    float acc[NX][4];
#pragma unroll
    for (int j = 0; j < NX; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

    auto chunk = [&](const typename P::frag &fr, int cc) {
#pragma unroll
        for (int b = 0; b < P::NS / P::SG; b++) { /* the steps that share a scale */
            float tmp[NX][4], xs[NX];
#pragma unroll
            for (int j = 0; j < NX; j++) tmp[j][0] = tmp[j][1] = tmp[j][2] = tmp[j][3] = xs[j] = 0.f;
#pragma unroll
            for (int h = 0; h < P::SG; h++) {
                const int s = P::SG * b + h, seg = P::NS * cc + s;
                uint32_t a0, a1, a2, a3;
                P::step(fr, s, a0, a1, a2, a3);
#pragma unroll
                for (int j = 0; j < NX; j++) { /* one decoded step, NX mmas */
                    const uint2 bx = 8 * j + g < m2
                                         ? *reinterpret_cast<const uint2 *>(xb + j * xstride + P::KC * cc + P::x_at(s))
                                         : make_uint2(0, 0);
                    mma16816(tmp[j], a0, a1, a2, a3, bx.x, bx.y);
                    if (P::ADD && 4 * j + t < mh) xs[j] += xsum[j * sstride + seg];
                }
            }
            const float2 d = P::scale(fr, b);
            const float2 mn = P::add(fr, b);
#pragma unroll
            for (int j = 0; j < NX; j++) {
                acc[j][0] = fmaf(d.x, tmp[j][0], acc[j][0]);
                acc[j][1] = fmaf(d.x, tmp[j][1], acc[j][1]);
                acc[j][2] = fmaf(d.y, tmp[j][2], acc[j][2]);
                acc[j][3] = fmaf(d.y, tmp[j][3], acc[j][3]);
                if (P::ADD) { /* column 2t is row t's hi: the additive term goes there */
                    acc[j][0] = fmaf(mn.x, xs[j], acc[j][0]);
                    acc[j][2] = fmaf(mn.y, xs[j], acc[j][2]);
                }
            }
        }
    };
    /* Slot d holds chunk c + d wpg; once multiplied it is refilled D chunks ahead. */
    for (; c < nchunk; c += D * wpg) {
#pragma unroll
        for (int d = 0; d < D; d++) {
            const int cc = c + d * wpg;
            if (cc >= nchunk) break;
            chunk(f[d], cc);
            if (cc + D * wpg < nchunk) load(cc + D * wpg, f[d]);
        }
    }

    WK_TRACE_MARK(3);
    finish<NX>(od, mh, acc, red, warp, kw, wpg, lane, live, y, add, from, xv.xscale, n0, rcos, rsin);
    WK_TRACE_MARK(4);
    WK_TRACE_END();
}

/* Largest input (m * k elements) prepared inside the kernel, and the most input elements
 * all blocks together may prepare (blocks x m x k, counted in row groups): beyond either
 * the preparation is a launch of its own. WICK_CUDA_QMV_INLINE and WICK_CUDA_QMV_INLINE_TOTAL
 * override them (0: always a separate preparation); read once. */
long inline_limit()
{
    static const long lim = wk_env_long("WICK_CUDA_QMV_INLINE", 8192);
    return lim;
}
long inline_total()
{
    static const long lim = wk_env_long("WICK_CUDA_QMV_INLINE_TOTAL", 1L << 21);
    return lim;
}

/* Warps per row group: up to 8 splitting k, but no more in all than minb blocks of bw
 * warps per SM (the kernel's register bound), so that large matrices run in one wave. */
int first_wpg(int64_t groups, int nchunk, int sms, int minb, int bw = MAX_WARPS)
{
    int wpg = nchunk < MAX_WARPS ? nchunk : MAX_WARPS;
    const long budget = (long)bw * minb * sms;
    if ((long)groups * wpg > budget) wpg = (int)(budget / groups) < 1 ? 1 : (int)(budget / groups);
    return wpg;
}
/* Then as many row groups per block as fill bw warps while every SM still gets a block
 * (each block prepares its own input); blocks of more than 8 warps, one an SM, as many
 * as make one wave. */
int groups_per_block(int64_t groups, int wpg, int sms, int bw = MAX_WARPS)
{
    int rg = bw / wpg;
    const int64_t fill = bw > MAX_WARPS ? (groups + sms - 1) / sms : groups / sms;
    if (rg > fill) rg = fill < 1 ? 1 : (int)fill;
    return rg;
}

/* Launch kernel K over the row groups: nchunk chunks a row group, stage_per_warp bytes of
 * staging a warp, at most minb blocks of bw warps per SM by its registers, slices of input
 * rows along y, red_sets accumulator sets a warp to add up. */
template <void (*K)(params)>
wk_status launch_geom(wk_cuda_ctx *c, params &p, int sms, int nchunk, size_t stage_per_warp, int minb,
                      int slices = 1, int red_sets = 2, int bw = MAX_WARPS)
{
    int groups = 0;
    for (int i = 0; i < p.nout; i++) groups += (p.out[i].n + 15) / 16;
    int wpg = first_wpg(groups, nchunk, sms, minb, bw);
    /* Fewer warps per row group while shared memory would make a second wave (the big
     * chunks of Q8_0 and Q6_K). */
    static size_t allowed = 48 << 10; /* dynamic shared memory granted to this kernel */
    int rg, nw, blocks;
    size_t smem;
    for (;;) {
        rg = groups_per_block(groups, wpg, sms, bw);
        nw = wpg * rg;
        blocks = 0;
        for (int i = 0; i < p.nout; i++) {
            p.out[i].g0 = blocks;
            blocks += ((p.out[i].n + 15) / 16 + rg - 1) / rg;
        }
        smem = stage_per_warp * nw + red_bytes(nw, red_sets) + x_smem_bytes(p);
        if (smem > MAX_BLOCK_SMEM)
            return wk_fail(WK_ERR_INVALID, "CUDA matrix-vector kernel: %zu bytes of shared memory "
                                           "(k = %d too large)", smem, p.k);
        if (smem > allowed) {
            WK_CU(cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)MAX_BLOCK_SMEM));
            allowed = MAX_BLOCK_SMEM;
        }
        int per_sm = 0; /* asked only when the launch could exceed one block per SM */
        if (wpg == 1 || blocks <= sms ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, K, nw * 32, smem) != cudaSuccess ||
            (long)blocks <= (long)per_sm * sms || (long)blocks > 2L * per_sm * sms)
            break;
        wpg--;
    }
    p.wpg = wpg;
    p.rg = rg;
    return wk_launch_pdl("the quantized matrix-vector kernel", K, dim3((unsigned)blocks, (unsigned)slices),
                         dim3(nw * 32), smem, c->stream, p);
}

template <class T, int NX, bool BIG, int MINB> wk_status launch_k(wk_cuda_ctx *c, params &p, int sms)
{
    using G = geom<T, BIG>;
    const int nblk = p.k / T::QK, nchunk = (nblk + G::CH - 1) / G::CH;
    return launch_geom<qmv_kernel<T, NX, BIG, MINB>>(c, p, sms, nchunk, stage_bytes<G>(1), MINB);
}

/* The register bound of a kernel, as blocks of 8 warps per SM (measured on the H200): 2
 * (128 registers a thread) for 5-8 input rows, whose two sets of accumulators spilled at
 * 80 registers, and for long rows of most formats; 3 (80 registers, more warps to hide
 * latency) for decode's short rows and for Q4_K, Q5_K and F16 rows. */
template <class T, int NX, bool BIG> constexpr int minb_for()
{
    return NX == 2 || (BIG && !(T::QK == 256 && (T::BYTES == 144 || T::BYTES == 176)) && T::QK != 16) ? 2 : 3;
}

/* Big chunks when k gives 8 warps a big chunk each, or when there are so many rows that
 * a warp takes whole rows anyway (the output head: 49152 rows of 576), a row holds a big
 * chunk and the small chunks' blocks start on 2-byte boundaries (H200, 49152 x 576, m = 1:
 * Q8_0 34.5 -> 26.7 us; Q4_1 18.2 -> 20.5 and Q8_1 17.1 -> 23.4, so not for them); else
 * small ones. WICK_CUDA_QMV_BIG=0 or 1 decides instead (read once). */
long big_choice()
{
    static const long v = wk_env_long("WICK_CUDA_QMV_BIG", 2); /* 2: the rule above */
    return v;
}
template <class T> wk_status launch(wk_cuda_ctx *c, params &p)
{
    const int sms = wk_cuda_sm_count();
    const int nblk = p.k / T::QK;
    int64_t groups = 0;
    for (int i = 0; i < p.nout; i++) groups += (p.out[i].n + 15) / 16;
    const bool whole_rows = groups >= 8L * sms && nblk >= geom<T, true>::CH && geom<T, false>::A2;
    const long force = big_choice();
    const bool big = force == 0   ? false
                     : force == 1 ? nblk >= geom<T, true>::CH
                                  : nblk >= 8 * geom<T, true>::CH || whole_rows;
    if (p.m > 4)
        return big ? launch_k<T, 2, true, minb_for<T, 2, true>()>(c, p, sms)
                   : launch_k<T, 2, false, minb_for<T, 2, false>()>(c, p, sms);
    return big ? launch_k<T, 1, true, minb_for<T, 1, true>()>(c, p, sms)
               : launch_k<T, 1, false, minb_for<T, 1, false>()>(c, p, sms);
}

/* Whether the packed kernel reads an input prepared in its block with shared-memory loads
 * (WICK_CUDA_QMV_LDS=0: generic loads, as before session 17; read once). Every format does,
 * Q5_0 since session 21 (its kernel had spilled with them; with nvcc 13 it does not: H200,
 * 8192 x 4096, three rounds, m = 1 12.3 -> 11.6 us, m = 4 13.5 -> 11.7, m = 8 16.4 -> 13.9). */
bool shared_x_loads()
{
    static const long v = wk_env_long("WICK_CUDA_QMV_LDS", 1);
    return v != 0;
}
/* The largest prepared input (bytes) a block of the packed kernel copies into its shared
 * memory: as much as leaves room for minb blocks an SM (at most 200 KiB a block) beside their
 * sums of nx accumulator sets, so that the copy costs no occupancy (H200, 8192 x 4096, us,
 * against session 20's 36 KiB: m = 4 Q4_0 11.7 -> 11.2, Q4_1 12.8 -> 11.6, Q4_K 14.3 ->
 * 12.3, Q6_K 15.2 -> 13.7; m = 5 Q4_0 14.3 -> 12.7, Q8_0 16.5 -> 15.0, Q4_K 19.0 -> 15.8;
 * a copy that left an SM one block of 8 warps: 8 rows 40 us against 15.3; ONE below).
 * WICK_CUDA_QMV_COPY=N sets it (0: never; read once). */
/* The shared memory a block may take when minb blocks share an SM (at most 200 KiB), less
 * the block's reserve. */
long block_room(int minb) { return min((long)wk_cuda_smem_per_sm() / minb, (long)MAX_BLOCK_SMEM) - 1024; }
long copy_limit(int minb, int nx, int bw = MAX_WARPS)
{
    static const long forced = wk_env_long("WICK_CUDA_QMV_COPY", LONG_MAX); /* LONG_MAX: unset */
    if (forced != LONG_MAX) return forced;
    return block_room(minb) - (long)red_bytes(bw, nx);
}
/* When the packed kernel copies its input for one block an SM of all the warps its
 * registers allow (launch_packed_nx): 1 by the rule there, 0 never (as before session 21),
 * 2 wherever the input fits (WICK_CUDA_QMV_ONE; read once). */
long one_block_copy()
{
    static const long v = wk_env_long("WICK_CUDA_QMV_ONE", 1);
    return v;
}
/* Whether one input row of a 32-element format, which would be prepared by a launch of its
 * own and copied into one block an SM, is prepared inside those blocks instead when they
 * are few enough (wk_cuda_qmv; WICK_CUDA_QMV_INLINE_ONE=0: never; read once). */
bool inline_one_allowed()
{
    static const long v = wk_env_long("WICK_CUDA_QMV_INLINE_ONE", 1);
    return v != 0;
}
/* Formats that take more than 8 input rows in slices of 12 or 16, one decoded step for three
 * or four mmas: the 32-element formats without an additive term, and Q6_K from 32 rows. At
 * 16 rows Q4_1 and Q5_1 spilled, and Q4_K and Q6_K fit only at one block an SM (255
 * registers), which was slower (below) but for Q6_K from 34 rows; the others keep slices of
 * 8 (WICK_CUDA_QMV_SLICE=8: every format; =16: slices of 16 alone). A first build, slices of
 * 16 alone for every format, H200, 8192 x 4096, us, 16 against 8:
 * m = 9, 16, 24, 34, 48, 63: Q4_0 20.1 23.7 37.5 53.7 59.3 75.0 against 25.3 28.5 38.0 54.9
 * 65.0 82.4; Q5_0 22.5 26.3 41.3 59.8 65.0 82.5 against 28.2 30.0 40.7 61.0 72.4 93.1; Q8_0
 * 23.2 28.3 43.6 62.8 69.9 88.7 against 27.4 30.7 41.0 59.2 71.2 90.6; Q4_1 31.6 38.7 60.3
 * 89.2 100.2 131.5 against 30.1 33.7 47.1 70.0 86.7 112.5; Q4_K 44.2 52.5 74.5 93.9 96.1 136.0
 * against 33.2 35.8 50.4 76.4 93.3 120.4; Q6_K 31.5 33.5 58.1 63.8 65.0 88.5 against 33.6
 * 36.2 50.7 77.5 94.4 122.4. */
template <class P> constexpr bool wide_slices() { return (P::KC == 64 && !P::ADD) || std::is_same<P, wkp::q6_K>::value; }
template <class P> constexpr int least_rows_for_wide() { return std::is_same<P, wkp::q6_K>::value ? 32 : MAX_ROWS + 1; }

/* ONE: the warps of minb blocks as one block an SM (same registers a thread, one wave),
 * whose input is copied once an SM. */
template <class P, int NX, bool XS, bool ONE = false>
wk_status launch_packed_at(wk_cuda_ctx *c, params &p, int sms, int nchunk)
{
    constexpr int minb = packed_minb<P>(NX);
    const int slices = (p.m + 4 * NX - 1) / (4 * NX);
    const int bw = ONE ? MAX_WARPS * minb : MAX_WARPS;
    return launch_geom<qmv_packed_kernel<P, NX, minb, packed_depth<P>(NX), XS, ONE>>(
        c, p, sms, nchunk, 0, ONE ? 1 : minb, slices, NX, bw);
}
template <class P, int NX> wk_status launch_packed_nx(wk_cuda_ctx *c, params &p, int sms, int nchunk)
{
    constexpr int minb = packed_minb<P>(NX);
    p.copy_rows = 0;
    if (!shared_x_loads()) return launch_packed_at<P, NX, false>(c, p, sms, nchunk);
    if (p.inline_x) {
        if constexpr (NX == 1 && minb > 1)
            if (p.inline_one) return launch_packed_at<P, NX, true, true>(c, p, sms, nchunk);
        return launch_packed_at<P, NX, true>(c, p, sms, nchunk);
    }
    /* A prepared input (a slice's rows) is copied into each block's shared memory when
     * it leaves the SM its blocks (copy_limit). */
    const int rows = min(p.m, 4 * NX);
    const long need = (long)xin_bytes(rows, p.k), room = copy_limit(minb, NX);
    /* One block an SM of all the warps its registers allow copies the input once an SM,
     * and makes one wave where 3 blocks an SM of 6 warps made 1.3 (the 32-element
     * formats at 1-4 rows; H200, 8192 x 4096: Q4_0 m = 1-4 10.6-11.5 -> 9.9-10.1 us,
     * Q5_1 13.3-13.8 -> 12.6-12.9, m = 5-6 Q4_0 12.6 -> 12.2, Q8_0 15.2 -> 14.7). For
     * Q4_K and Q6_K, already one wave, it was slower at 2-5 rows (Q4_K m = 2 11.9 ->
     * 12.7), so they take it only for an input too large for two blocks (m = 7-8 16.4
     * against 20.5 read from scratch). WICK_CUDA_QMV_ONE=0: never, 2: wherever it fits. */
    if constexpr (NX <= 2 && minb > 1) {
        const long one = one_block_copy();
        if (one && (P::KC == 64 || one == 2 || need > room) && need <= copy_limit(1, NX, MAX_WARPS * minb)) {
            p.copy_rows = rows;
            return launch_packed_at<P, NX, true, true>(c, p, sms, nchunk);
        }
    }
    if (need > room) return launch_packed_at<P, NX, false>(c, p, sms, nchunk);
    p.copy_rows = rows;
    return launch_packed_at<P, NX, true>(c, p, sms, nchunk);
}

/* The packed kernel at its register bound and depth (packed_minb, packed_depth): 1-4 input
 * rows one mma a step, 5-8 two, more in slices of 12 or 16 (three or four mmas a step; Q6_K
 * from 32 rows) or of 8. Cut evenly (H200, same lease, us, slices of 12 or 16 / 16 alone /
 * 8 alone): Q4_0 m = 20 33.0 / 36.2 / 35.1, m = 34 47.2 / 53.8 / 53.2; Q8_0 m = 20 36.5 /
 * 41.9 / 39.6, m = 34 53.0 / 63.0 / 59.0, but m = 40 64.2 / 64.3 / 61.1; Q6_K m = 34 55.4 /
 * 63.8 / 77.4. */
template <class P> wk_status launch_packed(wk_cuda_ctx *c, params &p)
{
    const int sms = wk_cuda_sm_count(), nchunk = p.k / P::KC;
    static const long slice = wk_env_long("WICK_CUDA_QMV_SLICE", 12); /* 8 or 16: those alone */
    if constexpr (wide_slices<P>())
        if (p.m >= least_rows_for_wide<P>() && slice != 8) {
            /* As few slices as 16 rows allow, cut evenly: 12 rows a slice (three mmas a
             * step) where that is enough, so that no slice multiplies a third of nothing. */
            const int n16 = (p.m + 15) / 16;
            if (slice != 16 && (p.m + n16 - 1) / n16 <= 12) return launch_packed_nx<P, 3>(c, p, sms, nchunk);
            return launch_packed_nx<P, 4>(c, p, sms, nchunk);
        }
    if (p.m > 4) return launch_packed_nx<P, 2>(c, p, sms, nchunk);
    return launch_packed_nx<P, 1>(c, p, sms, nchunk);
}

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* f(P{}) for the format the packed kernel reads: F16 rows, or the packed format of base. */
template <class F> auto with_register_format(wk_type base, bool f16_rows, F &&f)
{
    if (f16_rows) return f(wkp::f16_rows{});
    return wkp::with_format(base, f);
}

} // namespace

extern "C" size_t wk_cuda_qmv_scratch_bytes(int64_t m, int64_t k)
{
    return round_up((size_t)(2 * m * (k + SEG)) * 2, 256) + round_up((size_t)(m * (k / SEG)) * 4, 256) +
           round_up(MAX_ROWS * 4, 256);
}

extern "C" wk_status wk_cuda_qmv(wk_cuda_ctx *c, const wk_cuda_qmv_job *j)
{
    const bool packed = wk_cuda_is_packed(j->wtype);
    const wk_type base = wk_cuda_unpacked(j->wtype);
    const wk_type_traits *tr = wk_traits(base);
    /* (16 rows of 256: a shape every packable type takes) */
    if (!tr || !wk_cuda_qmm_supports(base) || (packed && !wk_cuda_pack_supports(base, 16, 256)))
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA matrix-vector product: weight type %s%s has no kernel",
                       tr ? tr->name : "(unknown)", packed ? " (packed)" : "");
    const int64_t qk = wk_cuda_block_elems(base);
    /* F16 rows the packed layout's kernel reads (every output fits). */
    bool f16_rows = !packed && base == WK_TYPE_F16 && j->nout >= 1 && j->nout <= 3;
    for (int i = 0; f16_rows && i < j->nout; i++) f16_rows = wk_cuda_f16_rows_fit(j->out[i].n, j->k, j->out[i].w);
    const bool reg = packed || f16_rows; /* the packed kernel, chunks in registers */
    /* Its weights take any number of rows, 8 to 16 a slice of the grid. */
    const long most_rows = reg ? 65535L * MAX_ROWS : MAX_ROWS;
    if (j->m < 1 || j->m > most_rows || j->nout < 1 || j->nout > 3)
        return wk_fail(WK_ERR_INVALID, "CUDA matrix-vector product: %lld input rows, %d outputs "
                                       "(1..%ld rows for a %s weight, 1..3 outputs)", (long long)j->m, j->nout,
                       most_rows, packed ? "packed" : f16_rows ? "f16 (whole row groups)" : "row-major");
    if (j->k <= 0 || j->k % qk != 0 || j->k % SEG != 0 || j->k > (1 << 24))
        return wk_fail(WK_ERR_INVALID, "CUDA %s matrix-vector product: k = %lld must be a positive "
                                       "multiple of %lld", tr->name, (long long)j->k, (long long)(qk > SEG ? qk : SEG));
    if (j->src == WK_QMV_INPUT && j->xtype != WK_TYPE_F32 && j->xtype != WK_TYPE_F16)
        return wk_fail(WK_ERR_INVALID, "CUDA matmul: input type %s (only f32 and f16 inputs)",
                       wk_traits(j->xtype) ? wk_traits(j->xtype)->name : "(unknown)");
    if ((uintptr_t)j->x.base % 16 || j->x.stride % 16 || (uintptr_t)j->x2.base % 16 || j->x2.stride % 16 ||
        (uintptr_t)j->norm_out.base % 16 || j->norm_out.stride % 16)
        return wk_fail(WK_ERR_INVALID, "CUDA %s matrix-vector product: the input rows must start on "
                                       "16-byte boundaries", tr->name);
    params p = {};
    p.nout = j->nout;
    for (int i = 0; i < j->nout; i++) {
        if (j->out[i].n <= 0 || j->out[i].n > INT32_MAX - 16)
            return wk_fail(WK_ERR_INVALID, "CUDA %s matrix-vector product: output %d has %lld rows",
                           tr->name, i, (long long)j->out[i].n);
        if ((uintptr_t)j->out[i].w % 2)
            return wk_fail(WK_ERR_INVALID, "CUDA %s matrix-vector product: weight %d at an odd address",
                           tr->name, i);
        if (packed && (!wk_cuda_pack_supports(base, j->out[i].n, j->k) || (uintptr_t)j->out[i].w % 16))
            return wk_fail(WK_ERR_INVALID, "CUDA packed %s matrix-vector product: weight %d [%lld, %lld] "
                                           "(rows a multiple of 16, k of 64, on 16 bytes)", tr->name, i,
                           (long long)j->out[i].n, (long long)j->k);
        p.out[i].w = (const uint8_t *)j->out[i].w;
        p.out[i].y = j->out[i].y;
        p.out[i].add = j->out[i].add;
        p.out[i].n = (int)j->out[i].n;
        if (j->out[i].rope_head_dim) {
            const int64_t hd = j->out[i].rope_head_dim, rot = j->out[i].rope_n_rot;
            if (hd <= 0 || hd % 2 || j->out[i].n % hd || rot < 0 || rot > hd || rot % 2)
                return wk_fail(WK_ERR_INVALID, "CUDA matrix-vector RoPE: head size %lld, %lld rotated "
                                               "dims, %lld outputs", (long long)hd, (long long)rot,
                               (long long)j->out[i].n);
            p.out[i].rope_hd = (int)hd;
            p.out[i].rope_rot = (int)rot;
            p.out[i].rope_pos = j->out[i].rope_pos;
            p.out[i].rope_lb = rot ? log((double)j->out[i].rope_base) / (double)rot : 0.0;
        }
    }
    p.k = (int)j->k;
    p.m = (int)j->m;
    p.nseg = (int)(j->k / SEG);
    p.src = j->src;
    p.x_f16 = j->src == WK_QMV_INPUT && j->xtype == WK_TYPE_F16;
    p.x = j->x;
    p.x2 = j->x2;
    p.norm_out = j->norm_out;
    p.norm_w = j->norm_w;
    p.eps = j->eps;
    bool any_add = false;
    for (int i = 0; i < j->nout; i++) any_add |= j->out[i].add.base != NULL;
    if (j->add_from && !any_add)
        return wk_fail(WK_ERR_INVALID, "CUDA %s matrix-vector product: a sum to add from but no residual",
                       tr->name);
    p.add_from = j->add_from;
    p.dpos = j->dpos;
    p.row_bytes = (size_t)wk_cuda_row_bytes(base, j->k);
#ifdef WICK_CUDA_TRACE
    p.trace_slot = qmv_ring_slot();
#endif
    /* Inside the kernel when the input is small and few blocks repeat the work. */
    int64_t groups = 0;
    for (int i = 0; i < j->nout; i++) groups += (j->out[i].n + 15) / 16;
    if (reg && j->m > MAX_ROWS) {
        p.inline_x = false; /* the slices share one preparation */
    } else if (reg) {
        /* Counted in blocks, and only half as many: with no weights staged ahead, a block
         * preparing a long input waits (H200, 8192 x 4096 Q4_0, m = 1: 512 blocks of 4096
         * inputs 12.2 us inside, 10.6 in a launch of its own; the 384 blocks of 576 of the
         * 49152 x 576 head 9.9 inside, 11.3 outside). */
        int nchunk = 1, minb = 2;
        bool small_blocks = false; /* a 32-element format (launch_packed_nx's one block an SM) */
        with_register_format(base, f16_rows, [&](auto fmt) {
            using P = decltype(fmt);
            nchunk = p.k / P::KC, minb = packed_minb<P>(p.m > 4 ? 2 : 1);
            small_blocks = P::KC == 64;
        });
        const int sms = wk_cuda_sm_count();
        auto inline_fits = [&](int mb, int bw) {
            const int rg = groups_per_block(groups, first_wpg(groups, nchunk, sms, mb, bw), sms, bw);
            return j->m * j->k <= inline_limit() && (groups + rg - 1) / rg * j->m * j->k <= inline_total() / 2;
        };
        p.inline_x = inline_fits(minb, MAX_WARPS);
        /* One row that would be prepared apart and copied into one block an SM is prepared
         * in those blocks, a quarter as many (H200, 8192 x 4096, m = 1, us: Q4_0 9.9 -> 9.6,
         * Q4_1 10.6 -> 10.2, Q5_1 12.7 -> 12.3, Q8_0 12.9 -> 12.4). Not for two rows, which
         * a block prepares one after the other (10.0 -> 11.5), nor where smaller blocks
         * prepare it already (the 49152 x 576 output head: 7.6 -> 8.4 as one block an SM). */
        p.inline_one = !p.inline_x && small_blocks && j->m == 1 && one_block_copy() && inline_one_allowed() &&
                       inline_fits(1, MAX_WARPS * minb);
        p.inline_x = p.inline_x || p.inline_one;
    } else {
        p.inline_x = j->m * j->k <= inline_limit() && groups * j->m * j->k <= inline_total();
    }
    if (!p.inline_x) {
        wk_status rs = wk_cuda_scratch_reserve(c, wk_cuda_qmv_scratch_bytes(j->m, j->k));
        if (rs) return rs;
        char *s = (char *)c->scratch;
        p.xpitch = (int)(j->k + SEG);
        p.xg = (__half *)s;
        s += round_up((size_t)(2 * j->m * (j->k + SEG)) * 2, 256);
        p.sums_g = (float *)s;
        s += round_up((size_t)(j->m * (j->k / SEG)) * 4, 256);
        p.scale_g = (float *)s;
        wk_status st = wk_launch_pdl("the matrix-vector input preparation", prepare_kernel, dim3((unsigned)j->m),
                                     dim3(256), 0, c->stream, p);
        if (st) return st;
    }
    if (reg) return with_register_format(base, f16_rows, [&](auto fmt) { return launch_packed<decltype(fmt)>(c, p); });
    switch (j->wtype) {
    case WK_TYPE_Q4_0: return launch<wkq::q4_0>(c, p);
    case WK_TYPE_Q4_1: return launch<wkq::q4_1>(c, p);
    case WK_TYPE_Q5_0: return launch<wkq::q5_0>(c, p);
    case WK_TYPE_Q5_1: return launch<wkq::q5_1>(c, p);
    case WK_TYPE_Q8_0: return launch<wkq::q8_0>(c, p);
    case WK_TYPE_Q8_1: return launch<wkq::q8_1>(c, p);
    case WK_TYPE_Q2_K: return launch<wkq::q2_K>(c, p);
    case WK_TYPE_Q3_K: return launch<wkq::q3_K>(c, p);
    case WK_TYPE_Q4_K: return launch<wkq::q4_K>(c, p);
    case WK_TYPE_Q5_K: return launch<wkq::q5_K>(c, p);
    case WK_TYPE_Q6_K: return launch<wkq::q6_K>(c, p);
    case WK_TYPE_Q8_K: return launch<wkq::q8_K>(c, p);
    case WK_TYPE_F16: return launch<wkq::f16>(c, p);
    default: break;
    }
    return wk_fail(WK_ERR_UNSUPPORTED, "CUDA matrix-vector product: weight type %s", tr->name);
}
