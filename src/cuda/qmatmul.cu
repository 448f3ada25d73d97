/* Quantized matmul on the tensor cores: y = x · Wᵀ with W in its GGUF format.
 *
 * x is first prepared once per call (prepare_x): each row is scaled by a power of two
 * so that its largest |value| is below 1, then split into hi = f16(x) and lo = f16(x - hi),
 * together about 22 significant bits; the sums of each 16 elements are kept in f32 for
 * the formats with an additive term. The main kernel gives each warp 16 weight rows and
 * 8 * MT input rows: per step of 16 elements it decodes 4 integer weights per row per
 * lane into f16 registers (exact), runs mma.m16n8k16 against hi (and lo), and applies
 * the step's scale and additive term in f32. Each weight byte is read once for all
 * input rows of the chunk; the warps of a block split k and add up in shared memory. */
#include <cuda_fp16.h>
#include <stdint.h>

#include "cuda/cuda_util.cuh"
#include "cuda/qdecode.cuh"
#include "cuda/traits_cxx.h"

namespace {

constexpr int SEG = 16; /* elements per step; sums of x are kept per step */

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

int64_t padded_rows(int64_t m) { return m <= 8 ? 8 : (int64_t)round_up((size_t)m, 64); }

struct xprep {
    __half *hi, *lo;
    float *sums;  /* [mpad][k / 16] */
    float *scale; /* [mpad] */
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
    return p;
}

template <typename XT> __device__ __forceinline__ float to_f(XT v);
template <> __device__ __forceinline__ float to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }

/* One block per (padded) row: scale, split, segment sums. Rows >= m become zeros. */
template <typename XT>
__global__ void prepare_x(wk_dptr xd, const int64_t *dpos, int m, int k, xprep p)
{
    __shared__ float red[32];
    int row = blockIdx.x;
    const XT *x = (const XT *)((char *)xd.base + (dpos ? *dpos * xd.stride : 0));
    const XT *xr = x + (size_t)row * k;
    __half *hi = p.hi + (size_t)row * k, *lo = p.lo + (size_t)row * k;
    float *sums = p.sums + (size_t)row * (k / SEG);
    if (row >= m) {
        for (int i = threadIdx.x; i < k; i += blockDim.x) {
            hi[i] = __float2half(0.f);
            lo[i] = __float2half(0.f);
        }
        for (int j = threadIdx.x; j < k / SEG; j += blockDim.x) sums[j] = 0.f;
        if (threadIdx.x == 0) p.scale[row] = 0.f;
        return;
    }
    float mx = 0.f;
    for (int i = threadIdx.x; i < k; i += blockDim.x) mx = fmaxf(mx, fabsf(to_f(xr[i])));
    for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    if (threadIdx.x < 32) {
        mx = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
        for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if (threadIdx.x == 0) red[0] = mx;
    }
    __syncthreads();
    mx = red[0];
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
    for (int j = threadIdx.x; j < k / SEG; j += blockDim.x) {
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < SEG; i++) {
            float v = to_f(xr[j * SEG + i]) * inv;
            __half h = __float2half_rn(v);
            hi[j * SEG + i] = h;
            lo[j * SEG + i] = __float2half_rn(v - __half2float(h));
            sum += v;
        }
        sums[j] = sum;
    }
    if (threadIdx.x == 0) p.scale[row] = s;
}

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
    /* Built for a GPU older than compute capability 8.0: never launched there, since the
     * context refuses such GPUs before any kernel runs. */
    (void)d, (void)a0, (void)a1, (void)a2, (void)a3, (void)b0, (void)b1;
#endif
}

/* Grid: x = ceil(n / 16) row groups, y = chunks of 8 * MT input rows. NW warps split k. */
template <class T, int MT, bool SPLIT, int NW>
__global__ void __launch_bounds__(NW * 32) qmm_kernel(const uint8_t *__restrict__ w,
                                                      size_t row_bytes, int n, int k, int m,
                                                      xprep p, wk_dptr yd, const int64_t *dpos)
{
    float *y = (float *)((char *)yd.base + (dpos ? *dpos * yd.stride : 0));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int n0 = blockIdx.x * 16;
    const int m0 = blockIdx.y * 8 * MT;
    const int r0 = min(n0 + g, n - 1), r1 = min(n0 + g + 8, n - 1);
    const uint8_t *w0 = w + (size_t)r0 * row_bytes;
    const uint8_t *w1 = w + (size_t)r1 * row_bytes;
    const int nblk = k / T::QK;
    const int nseg = k / SEG;

    float acc[MT][4];
#pragma unroll
    for (int i = 0; i < MT; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;

    /* U blocks per pass, their loads issued together; a pass past the end reads the last
     * block again with weight 0 (no branch, so the loads can all be in flight). */
    constexpr int U = T::S >= 8 ? 2 : 4;
    for (int b0 = warp; b0 < nblk; b0 += NW * U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int bu = b0 + u * NW;
            const int b = min(bu, nblk - 1);
            const float live = bu < nblk ? 1.f : 0.f;
            const uint8_t *b0p = w0 + (size_t)b * T::BYTES;
            const uint8_t *b1p = w1 + (size_t)b * T::BYTES;
#pragma unroll
            for (int s = 0; s < T::S; s++) {
                uint32_t a0, a1, a2, a3;
                float sc0, sc1, ad0, ad1;
                T::step(b0p, s, t, a0, a2, sc0, ad0);
                T::step(b1p, s, t, a1, a3, sc1, ad1);
                sc0 *= live;
                sc1 *= live;
                const int e = b * T::QK + SEG * s + 4 * t;
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    const size_t xr = (size_t)(m0 + mt * 8 + g) * k + e;
                    uint2 bh = *reinterpret_cast<const uint2 *>(p.hi + xr);
                    float tmp[4] = {0.f, 0.f, 0.f, 0.f};
                    mma16816(tmp, a0, a1, a2, a3, bh.x, bh.y);
                    if (SPLIT) {
                        uint2 bl = *reinterpret_cast<const uint2 *>(p.lo + xr);
                        mma16816(tmp, a0, a1, a2, a3, bl.x, bl.y);
                    }
                    acc[mt][0] = fmaf(sc0, tmp[0], acc[mt][0]);
                    acc[mt][1] = fmaf(sc0, tmp[1], acc[mt][1]);
                    acc[mt][2] = fmaf(sc1, tmp[2], acc[mt][2]);
                    acc[mt][3] = fmaf(sc1, tmp[3], acc[mt][3]);
                    if (T::ADD) {
                        ad0 *= live;
                        ad1 *= live;
                        const int seg = b * (T::QK / SEG) + s;
                        float xs0 = p.sums[(size_t)(m0 + mt * 8 + 2 * t) * nseg + seg];
                        float xs1 = p.sums[(size_t)(m0 + mt * 8 + 2 * t + 1) * nseg + seg];
                        acc[mt][0] = fmaf(ad0, xs0, acc[mt][0]);
                        acc[mt][1] = fmaf(ad0, xs1, acc[mt][1]);
                        acc[mt][2] = fmaf(ad1, xs0, acc[mt][2]);
                        acc[mt][3] = fmaf(ad1, xs1, acc[mt][3]);
                    }
                }
            }
        }
    }

    if (NW > 1) {
        __shared__ float red[NW > 1 ? NW - 1 : 1][MT * 4][32];
        if (warp > 0) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int i = 0; i < 4; i++) red[warp - 1][mt * 4 + i][lane] = acc[mt][i];
        }
        __syncthreads();
        if (warp > 0) return;
        for (int v = 0; v < NW - 1; v++)
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int i = 0; i < 4; i++) acc[mt][i] += red[v][mt * 4 + i][lane];
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int col = n0 + g + (i >= 2 ? 8 : 0);
            int row = m0 + mt * 8 + 2 * t + (i & 1);
            if (row < m && col < n) y[(size_t)row * n + col] = acc[mt][i] * p.scale[row];
        }
    }
}

template <class T>
wk_status launch_t(wk_cuda_ctx *c, const void *w, int64_t n, int64_t k, xprep p, int64_t m,
                   wk_dptr y, const int64_t *dpos)
{
    size_t row_bytes = (size_t)(k / T::QK) * T::BYTES;
    const uint8_t *wb = (const uint8_t *)w;
    dim3 grid((unsigned)((n + 15) / 16), 1);
    if (m <= 8) {
        qmm_kernel<T, 1, true, 8><<<grid, 256, 0, c->stream>>>(wb, row_bytes, (int)n, (int)k,
                                                              (int)m, p, y, dpos);
    } else if (m <= 16) {
        qmm_kernel<T, 2, true, 4><<<grid, 128, 0, c->stream>>>(wb, row_bytes, (int)n, (int)k,
                                                              (int)m, p, y, dpos);
    } else if (m <= 32) {
        qmm_kernel<T, 4, true, 4><<<grid, 128, 0, c->stream>>>(wb, row_bytes, (int)n, (int)k,
                                                              (int)m, p, y, dpos);
    } else {
        grid.y = (unsigned)((m + 63) / 64);
        qmm_kernel<T, 8, true, 4><<<grid, 128, 0, c->stream>>>(wb, row_bytes, (int)n, (int)k,
                                                              (int)m, p, y, dpos);
    }
    return wk_cuda_check_launch("the quantized matmul kernel");
}

/* Many rows: the weight is dequantized to f16 in scratch and multiplied by cuBLAS on the
 * tensor cores (x rounded to f16: the f16 form's precision). */
wk_status qmm_via_gemm(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n, int64_t k,
                       const void *x, wk_type xtype, int64_t m, float *y)
{
    size_t wb = wtype == WK_TYPE_F16 ? 0 : round_up((size_t)(n * k) * 2, 256);
    size_t xb = xtype == WK_TYPE_F16 ? 0 : (size_t)(m * k) * 2;
    wk_status st = wk_cuda_scratch_reserve(c, wb + xb);
    if (st) return st;
    const void *wh = w, *xh = x;
    if (wb) {
        st = wk_cuda_dequantize(c, wtype, w, n * k, c->scratch, WK_TYPE_F16);
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
    const wk_type_traits *tr = wk_traits(wtype);
    if (!tr || !wk_cuda_qmm_supports(wtype))
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA quantized matmul: weight type %s has no "
                                           "tensor-core kernel", tr ? tr->name : "(unknown)");
    int64_t qk = wtype == WK_TYPE_F16 ? 16 : tr->block_size;
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
    if (m >= WK_CUDA_QMM_GEMM_ROWS && !dpos) return qmm_via_gemm(c, wtype, w, n, k, x.base, xtype, m, (float *)y.base);
    wk_status st = wk_cuda_scratch_reserve(c, wk_cuda_qmm_scratch_bytes(m, k));
    if (st) return st;
    int64_t mpad = padded_rows(m);
    xprep p = carve(c->scratch, mpad, k);
    if (reuse)
        ; /* the previous call prepared this very input */
    else if (xtype == WK_TYPE_F32)
        prepare_x<float><<<(unsigned)mpad, 256, 0, c->stream>>>(x, dpos, (int)m, (int)k, p);
    else
        prepare_x<__half><<<(unsigned)mpad, 256, 0, c->stream>>>(x, dpos, (int)m, (int)k, p);
    WK_LAUNCHED("the matmul input preparation");
    switch (wtype) {
    case WK_TYPE_Q4_0: return launch_t<wkq::q4_0>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q4_1: return launch_t<wkq::q4_1>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q5_0: return launch_t<wkq::q5_0>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q5_1: return launch_t<wkq::q5_1>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q8_0: return launch_t<wkq::q8_0>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q8_1: return launch_t<wkq::q8_1>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q2_K: return launch_t<wkq::q2_K>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q3_K: return launch_t<wkq::q3_K>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q4_K: return launch_t<wkq::q4_K>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q5_K: return launch_t<wkq::q5_K>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q6_K: return launch_t<wkq::q6_K>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_Q8_K: return launch_t<wkq::q8_K>(c, w, n, k, p, m, y, dpos);
    case WK_TYPE_F16: return launch_t<wkq::f16>(c, w, n, k, p, m, y, dpos);
    default: break;
    }
    return wk_fail(WK_ERR_UNSUPPORTED, "CUDA quantized matmul: weight type %s", tr->name);
}
