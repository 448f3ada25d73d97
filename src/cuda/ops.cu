/* The Llama forward's operations on the GPU: RMSNorm, RoPE, attention over the KV cache,
 * SiLU-gated product, residual add, copy. Positions and position-dependent addresses can
 * come from the device (dpos) so that one captured graph serves every decode step. */
#include <math.h>
#include <stdint.h>

#include <cooperative_groups.h>

#include "cuda/cuda_util.cuh"
#include "cuda/qdecode.cuh"
#include "cuda/trace.cuh"
#include "cuda/traits_cxx.h"

namespace {

WK_TRACE_RING(ops_ring)

template <typename P> __device__ __forceinline__ P *at(wk_dptr d, const int64_t *dpos)
{
    return (P *)((char *)d.base + (dpos ? *dpos * d.stride : 0));
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float block_sum(float v, float *red)
{
    v = warp_sum(v);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = warp_sum(threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f);
        if (threadIdx.x == 0) red[0] = v;
    }
    __syncthreads();
    return red[0];
}

__global__ void rmsnorm_kernel(wk_dptr yd, wk_dptr xd, const float *__restrict__ w, int dim,
                               float eps, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    __shared__ float red[32];
    const float *x = at<const float>(xd, dpos) + (size_t)blockIdx.x * dim;
    float *y = at<float>(yd, dpos) + (size_t)blockIdx.x * dim;
    float ss = 0.f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) ss += x[i] * x[i];
    ss = block_sum(ss, red);
    float r = 1.f / sqrtf(ss / (float)dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) y[i] = x[i] * r * w[i];
}

/* One thread per (row, head, pair). Angles in double, as on the CPU. */
__global__ void rope_kernel(wk_dptr xd, int rows, int n_heads, int head_dim, int half,
                            int64_t pos_off, double log_base_over_rot, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t total = (int64_t)rows * n_heads * half;
    if (i >= total) return;
    int p = (int)(i % half);
    int64_t rh = i / half;
    int r = (int)(rh / n_heads);
    int64_t pos = pos_off + (dpos ? *dpos : 0) + r;
    float c, s;
    rope_angle(pos, p, log_base_over_rot, c, s);
    float *v = at<float>(xd, dpos) + rh * head_dim + 2 * p;
    const float a = v[0], b = v[1];
    v[0] = rope_rotate(a, b, false, c, s);
    v[1] = rope_rotate(b, a, true, c, s);
}

/* One block of ATT_WARPS warps per (head, row); each warp runs an online softmax over
 * every ATT_WARPS-th key, lanes holding dims lane + 32 i; the warps are merged at the end.
 * Any head size up to 256; sizes 32, 64 and 128 take the tiled kernel below. */
constexpr int ATT_WARPS = 16;
constexpr int ATT_DMAX = 8; /* head_dim <= 256 */

/* The warps' online softmaxes (running maximum m, sum l, and acc: dims lane + 32 i) merged
 * in a fixed order into out[0 .. hd), and into so (shared memory) when given. sm_acc holds
 * ATT_WARPS rows of 32 N floats. */
template <int N>
__device__ __forceinline__ void merge_warps(float m, float l, const float (&acc)[N], float *sm_m, float *sm_l,
                                            float *sm_acc, int hd, float *out, float *so = NULL)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < N; i++) sm_acc[warp * 32 * N + lane + 32 * i] = acc[i];
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < ATT_WARPS; w++) M = fmaxf(M, sm_m[w]);
    float L = 0.f, f[ATT_WARPS];
    for (int w = 0; w < ATT_WARPS; w++) {
        f[w] = sm_m[w] == -INFINITY ? 0.f : expf(sm_m[w] - M);
        L += sm_l[w] * f[w];
    }
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float o = 0.f;
        for (int w = 0; w < ATT_WARPS; w++) o += sm_acc[w * 32 * N + d] * f[w];
        out[d] = o / L;
        if (so) so[d] = o / L;
    }
}

__global__ void __launch_bounds__(ATT_WARPS * 32)
    attention_kernel(wk_dptr outd, wk_dptr qd, const float *__restrict__ kc,
                     const float *__restrict__ vc, int64_t pos_off, int n_heads, int n_kv_heads,
                     int hd, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    __shared__ float sm_m[ATT_WARPS], sm_l[ATT_WARPS];
    __shared__ float sm_acc[ATT_WARPS][ATT_DMAX * 32];
    const int h = blockIdx.x, r = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (n_heads / n_kv_heads);
    const int64_t kv_dim = (int64_t)n_kv_heads * hd;
    const int64_t n_keys = pos_off + (dpos ? *dpos : 0) + r + 1;
    const float *q = at<const float>(qd, dpos) + ((int64_t)r * n_heads + h) * hd;
    const float scale = 1.f / sqrtf((float)hd);
    float qv[ATT_DMAX], acc[ATT_DMAX];
#pragma unroll
    for (int i = 0; i < ATT_DMAX; i++) {
        int d = lane + 32 * i;
        qv[i] = d < hd ? q[d] * scale : 0.f;
        acc[i] = 0.f;
    }
    /* The next key's k and v rows are loaded while the current one is used: the loads of
     * one warp's keys do not wait for each other. */
    float kn[ATT_DMAX], vn[ATT_DMAX];
    auto load_kv = [&](int64_t j) {
        const float *k = kc + j * kv_dim + (int64_t)kvh * hd;
        const float *v = vc + j * kv_dim + (int64_t)kvh * hd;
#pragma unroll
        for (int i = 0; i < ATT_DMAX; i++) {
            int d = lane + 32 * i;
            kn[i] = d < hd ? k[d] : 0.f;
            vn[i] = d < hd ? v[d] : 0.f;
        }
    };
    if (warp < n_keys) load_kv(warp);
    float m = -INFINITY, l = 0.f;
    for (int64_t j = warp; j < n_keys; j += ATT_WARPS) {
        float kj[ATT_DMAX], vj[ATT_DMAX];
#pragma unroll
        for (int i = 0; i < ATT_DMAX; i++) kj[i] = kn[i], vj[i] = vn[i];
        if (j + ATT_WARPS < n_keys) load_kv(j + ATT_WARPS);
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < ATT_DMAX; i++) s += qv[i] * kj[i];
        s = warp_sum(s);
        float mn = fmaxf(m, s);
        float corr = expf(m - mn), p = expf(s - mn);
        l = l * corr + p;
#pragma unroll
        for (int i = 0; i < ATT_DMAX; i++) acc[i] = acc[i] * corr + p * vj[i];
        m = mn;
    }
    merge_warps(m, l, acc, sm_m, sm_l, &sm_acc[0][0], hd, at<float>(outd, dpos) + ((int64_t)r * n_heads + h) * hd);
}

/* Attention for head sizes 32, 64 and 128: the same block of ATT_WARPS warps per (head,
 * row), but a warp takes 32 keys at a time. For the scores, HD / 8 lanes share a key (8
 * dims each, two 16-byte loads), so a warp's load of k rows is contiguous and its 32 keys
 * cost HD / 8 steps of independent loads and a short reduction, not 32 sequential
 * reductions; the softmax runs over the 32 scores at once; for the values, lanes hold dims
 * (lane + 32 i) and add up the 32 keys' v rows. Warps take every ATT_WARPS-th group of 32
 * keys and are merged as above. Fixed order throughout: the same result on every run. */
template <int HD>
__device__ __forceinline__ void attend_tiled(wk_dptr outd, const float *q, const float *kc, const float *vc,
                                             int64_t pos_off, int n_heads, int n_kv_heads, const int64_t *dpos,
                                             float *so)
{
    constexpr int LPK = HD / 8;      /* lanes per key in the scores */
    constexpr int KPS = 32 / LPK;    /* keys per step */
    constexpr int STEPS = 32 / KPS;  /* steps per 32 keys */
    constexpr int DPL = HD / 32;     /* value dims per lane */
    constexpr int SB = STEPS < 8 ? STEPS : 8; /* steps whose k loads are issued together */
    __shared__ float sm_m[ATT_WARPS], sm_l[ATT_WARPS];
    __shared__ float sm_acc[ATT_WARPS][HD];
    const int h = blockIdx.x, r = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int sub = lane % LPK, kq = lane / LPK;
    const int kvh = h / (n_heads / n_kv_heads);
    const int64_t kv_dim = (int64_t)n_kv_heads * HD;
    const int64_t n_keys = pos_off + (dpos ? *dpos : 0) + r + 1;
    const float scale = 1.f / sqrtf((float)HD);
    float qv[8];
    {
        const float4 a = *reinterpret_cast<const float4 *>(q + 8 * sub);
        const float4 b = *reinterpret_cast<const float4 *>(q + 8 * sub + 4);
        qv[0] = a.x * scale, qv[1] = a.y * scale, qv[2] = a.z * scale, qv[3] = a.w * scale;
        qv[4] = b.x * scale, qv[5] = b.y * scale, qv[6] = b.z * scale, qv[7] = b.w * scale;
    }
    const float *kh = kc + (int64_t)kvh * HD + 8 * sub, *vh = vc + (int64_t)kvh * HD + lane;
    float m = -INFINITY, l = 0.f, acc[DPL];
#pragma unroll
    for (int i = 0; i < DPL; i++) acc[i] = 0.f;
    for (int64_t base = (int64_t)warp * 32; base < n_keys; base += ATT_WARPS * 32) {
        const int kn = (int)min((int64_t)32, n_keys - base); /* keys in this group */
        /* The group's v rows into L1 now (lane t: key base + t), so that the value loop
         * below finds them there instead of waiting on L2 once per key. */
        if (lane < kn)
#pragma unroll
            for (int b = 0; b < HD * 4; b += 128)
                asm volatile("prefetch.global.L1 [%0];" ::"l"(vc + (base + lane) * kv_dim + (int64_t)kvh * HD + b / 4));
        /* Every k load of the group first (one wait for all), then the scores: lanes
         * kq * LPK .. + LPK - 1 hold key base + st * KPS + kq's after step st. */
        float sc[STEPS];
#pragma unroll
        for (int s0 = 0; s0 < STEPS; s0 += SB) { /* SB steps of loads in flight: 8 SB registers */
            float4 ka[SB], kb[SB];
#pragma unroll
            for (int i = 0; i < SB; i++) {
                const int jj = (s0 + i) * KPS + kq;
                const float *k = kh + (base + (jj < kn ? jj : 0)) * kv_dim;
                ka[i] = *reinterpret_cast<const float4 *>(k);
                kb[i] = *reinterpret_cast<const float4 *>(k + 4);
            }
#pragma unroll
            for (int i = 0; i < SB; i++) {
                float d = qv[0] * ka[i].x + qv[1] * ka[i].y + qv[2] * ka[i].z + qv[3] * ka[i].w +
                          qv[4] * kb[i].x + qv[5] * kb[i].y + qv[6] * kb[i].z + qv[7] * kb[i].w;
#pragma unroll
                for (int o = 1; o < LPK; o <<= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
                sc[s0 + i] = d;
            }
        }
        /* Lane t takes key base + t's score (step t / KPS, lanes (t % KPS) * LPK). */
        float my = 0.f;
#pragma unroll
        for (int st = 0; st < STEPS; st++) {
            const float v = __shfl_sync(0xffffffffu, sc[st], (lane % KPS) * LPK);
            if (lane / KPS == st) my = v;
        }
        const bool live = lane < kn;
        const float mx = warp_max(live ? my : -INFINITY);
        const float mn = fmaxf(m, mx); /* finite: the group holds a key */
        const float p = live ? expf(my - mn) : 0.f;
        const float corr = expf(m - mn); /* 0 for a warp's first group */
        l = l * corr + warp_sum(p);
        m = mn;
        float vs[DPL];
#pragma unroll
        for (int i = 0; i < DPL; i++) vs[i] = 0.f;
#pragma unroll
        for (int jj = 0; jj < 32; jj++) {
            const float pj = __shfl_sync(0xffffffffu, p, jj); /* 0 past the group's keys */
            const float *v = vh + (base + (jj < kn ? jj : 0)) * kv_dim;
#pragma unroll
            for (int i = 0; i < DPL; i++) vs[i] += pj * v[32 * i];
        }
#pragma unroll
        for (int i = 0; i < DPL; i++) acc[i] = acc[i] * corr + vs[i];
    }
    merge_warps(m, l, acc, sm_m, sm_l, &sm_acc[0][0], HD, at<float>(outd, dpos) + ((int64_t)r * n_heads + h) * HD,
                so);
}

template <int HD>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attention_tiled_kernel(wk_dptr outd, wk_dptr qd, const float *__restrict__ kc,
                           const float *__restrict__ vc, int64_t pos_off, int n_heads, int n_kv_heads,
                           const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    const float *q = at<const float>(qd, dpos) + ((int64_t)blockIdx.y * n_heads + blockIdx.x) * HD;
    attend_tiled<HD>(outd, q, kc, vc, pos_off, n_heads, n_kv_heads, dpos, NULL);
}

/* A decode step's attention (one row) and the output projection's share of its head, in
 * one launch: block h holds head h's result o_h in shared memory after the attention and
 * computes part_h = W[:, h HD .. h HD + HD) · o_h, all n_out of them (stored to parts +
 * h n_out when parts is given); the output projection is the sum of the parts over the
 * heads, which the cluster adds to the residual in a fixed order (send_share, add_shares).
 * The head's slice of every weight row
 * depends on nothing earlier: before the dependency wait the block copies it into shared
 * memory (asynchronous 4-byte copies, consecutive threads on consecutive words of a row),
 * so it arrives while the attention runs. Then a thread takes whole rows: each of its
 * HD / 4 steps decodes 4 weights (the format's step function, exact in f32) and multiplies
 * them with o_h in f32. */
/* The blocks of an attention_o launch are one thread-block cluster: one block per head,
 * and with the q/k/v projections (wk_cuda_att_qkv) one more per k and per v head. Every
 * block r of the cluster owns outputs [r per, r per + per): each head's block writes its
 * share of output i into the owner's shared memory (inbox[h per + i - r per], a store to
 * distributed shared memory), and after one cluster barrier every block adds residual +
 * the heads' shares of its outputs, heads in order, from its own shared memory, into
 * sum.out. */
__device__ __forceinline__ int o_per(int n_out, int n_blocks) { return (n_out + n_blocks - 1) / n_blocks; }
__device__ __forceinline__ void send_share(float *inbox, int i, int n_out, float share)
{
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    const int per = o_per(n_out, (int)cl.num_blocks()), owner = i / per;
    cl.map_shared_rank(inbox, owner)[(int)cl.block_rank() * per + (i - owner * per)] = share;
}
__device__ void add_shares(const wk_cuda_o_sum &sum, const float *inbox, int n_out, int n_heads, const int64_t *dpos)
{
    namespace cg = cooperative_groups;
    cg::cluster_group cl = cg::this_cluster();
    const int per = o_per(n_out, (int)cl.num_blocks());
    const int i0 = (int)cl.block_rank() * per, n = min(n_out - i0, per);
    const int j = (int)threadIdx.x;
    const float x = j < n ? at<const float>(sum.resid, dpos)[i0 + j] : 0.f; /* before the barrier */
    cl.sync();
    for (int jj = j; jj < n; jj += blockDim.x) {
        float s = jj == j ? x : at<const float>(sum.resid, dpos)[i0 + jj];
        for (int h = 0; h < n_heads; h++) s += inbox[h * per + jj];
        sum.out[i0 + jj] = s;
    }
}

template <class T, int HD> struct att_o_geom {
    static constexpr int SLICE = HD >= T::QK ? HD / T::QK * T::BYTES : T::BYTES; /* bytes of a row's slice */
    static constexpr int WORDS = (SLICE + 3 + 3) / 4; /* words a row may take: it may start mid-word */
    /* F16's step reads 8 bytes at once: rows on 8 bytes, 2 banks apart; the others read
     * 4 bytes: an odd number of words, rows in distinct banks. */
    static constexpr bool V8 = T::QK == 16;
    static constexpr int EVEN = WORDS + (WORDS & 1);
    static constexpr int PITCH = (V8 ? (EVEN % 4 == 2 ? EVEN : EVEN + 2) : (WORDS | 1)) * 4;
    /* The q/k/v products: a block's HD rows, TPR threads a row, each on every TPR-th
     * step of 4 inputs. */
    static constexpr int TPR = ATT_WARPS * 32 / HD;
};

/* acc[i] += w[i] * x[i] for the four weights of one step of a staged row (blk: their block,
 * o: the first one's offset in it), each decoded exactly by the format's step function. */
template <class T>
__device__ __forceinline__ void step_fma4(const uint8_t *blk, int o, float x0, float x1, float x2, float x3,
                                          float (&acc)[4])
{
    uint32_t h01, h23;
    float sc, ad;
    T::step(blk, o / 16, (o % 16) / 4, h01, h23, sc, ad);
    const float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&h01));
    const float2 b = __half22float2(*reinterpret_cast<const __half2 *>(&h23));
    acc[0] = fmaf(fmaf(sc, a.x, ad), x0, acc[0]);
    acc[1] = fmaf(fmaf(sc, a.y, ad), x1, acc[1]);
    acc[2] = fmaf(fmaf(sc, b.x, ad), x2, acc[2]);
    acc[3] = fmaf(fmaf(sc, b.y, ad), x3, acc[3]);
}

/* Shared memory of an attention_o launch: the head's slices of the n_out rows of the
 * output projection, the inbox, and with the q/k/v projections (dim = n_out inputs) the
 * block's HD rows of them (16-byte aligned), the RMSNorm weights and the normalized row. */
constexpr int ATT_O_MAX_HEADS = 16; /* blocks in one (non-portable) cluster on the H200 */
struct att_o_layout {
    size_t inbox, rows, norm_w, xn, total;
};
template <class T, int HD> __host__ __device__ att_o_layout att_o_layout_for(int64_t n_out, int64_t qkv_row_bytes)
{
    att_o_layout a;
    a.inbox = (size_t)n_out * att_o_geom<T, HD>::PITCH;
    a.rows = (a.inbox + (size_t)(n_out + ATT_O_MAX_HEADS) * sizeof(float) + 15) / 16 * 16;
    a.norm_w = a.rows + (qkv_row_bytes ? (size_t)HD * qkv_row_bytes : 0);
    a.xn = a.norm_w + (qkv_row_bytes ? (size_t)n_out * sizeof(float) : 0);
    a.total = qkv_row_bytes ? a.xn + (size_t)n_out * sizeof(float) : a.rows;
    return a;
}

/* The q/k/v stage of a fused launch (block b of n_heads + 2 n_kv_heads): after the wait,
 * x / rms(x) * norm_w into xn, the block's HD rows · xn (TPR threads a row, their sums
 * added in a fixed order), q and k rotated, then q to qs (and q), k or v to its cache row;
 * the cluster barrier makes the cache rows visible to the heads' blocks. */
template <class T, int HD>
__device__ __forceinline__ void qkv_stage(const wk_cuda_att_qkv &qkv, int n_out, int row_bytes, int n_heads,
                                          int n_kv_heads, wk_dptr qd, const int64_t *dpos, const uint8_t *rows,
                                          const float *norm_w, float *xn, float rc, float rs, float *qs)
{
    using G = att_o_geom<T, HD>;
    __shared__ float red[32];
    const int b = blockIdx.x, tid = threadIdx.x, r = tid / G::TPR, part = tid % G::TPR;
    const float *x = at<const float>(qkv.x, dpos);
    float ss = 0.f;
    for (int i = tid; i < n_out; i += blockDim.x) {
        const float v = x[i];
        xn[i] = v;
        ss += v * v;
    }
    asm volatile("cp.async.wait_group 1;\n" ::); /* the rows and norm_w (the slices may still come) */
    ss = block_sum(ss, red);
    const float inv = 1.f / sqrtf(ss / (float)n_out + qkv.eps);
    float *norm_out = b == 0 && qkv.norm_out.base ? at<float>(qkv.norm_out, dpos) : NULL;
    for (int i = tid; i < n_out; i += blockDim.x) {
        const float v = xn[i] * inv * norm_w[i];
        xn[i] = v;
        if (norm_out) norm_out[i] = v;
    }
    __syncthreads();
    const uint8_t *row = rows + (size_t)r * row_bytes;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 2
    for (int u = part; u < n_out / 4; u += G::TPR) {
        const int e = 4 * u;
        const float4 xv = *reinterpret_cast<const float4 *>(xn + e);
        step_fma4<T>(row + e / T::QK * T::BYTES, e % T::QK, xv.x, xv.y, xv.z, xv.w, acc);
    }
    float v = (acc[0] + acc[1]) + (acc[2] + acc[3]);
#pragma unroll
    for (int o = 1; o < G::TPR; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (b < n_heads + n_kv_heads) {
        /* Pair (2p, 2p + 1) is rows r and r ^ 1: lanes TPR apart. Past the rotated dims
         * rc = 1, rs = 0. */
        const float other = __shfl_xor_sync(0xffffffffu, v, G::TPR);
        v = rope_rotate(v, other, r & 1, rc, rs);
    }
    if (part == 0) {
        if (b < n_heads) {
            qs[r] = v;
            at<float>(qd, dpos)[b * HD + r] = v;
        } else if (b < n_heads + n_kv_heads) {
            at<float>(qkv.k_new, dpos)[(b - n_heads) * HD + r] = v;
        } else {
            at<float>(qkv.v_new, dpos)[(b - n_heads - n_kv_heads) * HD + r] = v;
        }
    }
    cooperative_groups::this_cluster().sync();
}

/* QKV: with the q/k/v stage (a kernel of its own: with a run-time switch in one kernel the
 * plain launch took about 0.2 us longer a layer). The position's cache rows, which other
 * blocks of the launch write, are read by the heads' blocks only after the cluster
 * barrier and were never in their L1 (the prefetch stops before them), so the read-only
 * path still finds them written, in L2. */
template <class T, int HD, bool QKV>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attention_o_kernel(wk_dptr outd, wk_dptr qd, const float *__restrict__ kc, const float *__restrict__ vc,
                       int64_t pos_off, int n_heads, int n_kv_heads, const int64_t *dpos,
                       const uint8_t *__restrict__ wo, int n_out, int row_bytes, float *__restrict__ parts,
                       wk_cuda_o_sum sum, wk_cuda_att_qkv qkv, int qkv_row_bytes, double rope_lb)
{
    WK_TRACE_BEGIN(ops_ring, -1, 2)
    using G = att_o_geom<T, HD>;
    extern __shared__ __align__(16) uint8_t wsm[]; /* see att_o_layout */
    const att_o_layout L = att_o_layout_for<T, HD>(n_out, QKV ? qkv_row_bytes : 0);
    float *inbox = reinterpret_cast<float *>(wsm + L.inbox);
    __shared__ float so[HD];
    __shared__ __align__(16) float qs[QKV ? HD : 1];
    const int h = blockIdx.x, col0 = h * HD;
    const bool head = !QKV || h < n_heads; /* the other blocks only compute k or v rows */
    const int slice0 = col0 / T::QK * T::BYTES; /* the slice's first byte in a row */
    float rc = 1.f, rs = 0.f;
    if constexpr (QKV) {
        /* This block's rows of Wq, Wk or Wv (contiguous, 16-byte aligned) and the RMSNorm
         * weights, then the RoPE angle of its row (the position is known before the wait). */
        const uint8_t *w = h < n_heads ? (const uint8_t *)qkv.wq + (size_t)h * HD * qkv_row_bytes
                           : h < n_heads + n_kv_heads
                               ? (const uint8_t *)qkv.wk + (size_t)(h - n_heads) * HD * qkv_row_bytes
                               : (const uint8_t *)qkv.wv + (size_t)(h - n_heads - n_kv_heads) * HD * qkv_row_bytes;
        for (int idx = threadIdx.x; idx < HD * qkv_row_bytes / 16; idx += blockDim.x) {
            const unsigned dst = (unsigned)__cvta_generic_to_shared(wsm + L.rows + 16 * idx);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(w + 16 * idx));
        }
        for (int idx = threadIdx.x; idx < n_out / 4; idx += blockDim.x) {
            const unsigned dst = (unsigned)__cvta_generic_to_shared(wsm + L.norm_w + 16 * idx);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(qkv.norm_w + 4 * idx));
        }
        const int r = threadIdx.x / G::TPR;
        if (h < n_heads + n_kv_heads && r < qkv.n_rot)
            rope_angle(qkv.rope_pos + (dpos ? *dpos : 0), r / 2, rope_lb, rc, rs);
    }
    if constexpr (QKV) asm volatile("cp.async.commit_group;\n" ::);
    if (head)
        for (int idx = threadIdx.x; idx < n_out * G::WORDS; idx += blockDim.x) {
            const int i = idx / G::WORDS, wd = idx - i * G::WORDS;
            const uintptr_t src = (uintptr_t)(wo + (size_t)i * row_bytes + slice0);
            if (4 * wd >= (int)(src & 3) + G::SLICE) continue; /* only words that hold slice bytes */
            const unsigned dst = (unsigned)__cvta_generic_to_shared(wsm + (size_t)i * G::PITCH + 4 * wd);
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"((src & ~(uintptr_t)3) + 4 * wd));
        }
    asm volatile("cp.async.commit_group;\n" ::);
    if (QKV && head) {
        /* The earlier keys' k and v rows into L1 while the q/k/v stage runs (written by
         * earlier steps, not by this launch; at most 32 KiB of each). */
        const int64_t kv_dim = (int64_t)n_kv_heads * HD, kvh = h / (n_heads / n_kv_heads);
        const int64_t old = min(pos_off + (dpos ? *dpos : 0), (int64_t)(32768 / (HD * 4)));
        for (int64_t idx = threadIdx.x; idx < old * (HD / 32); idx += blockDim.x) {
            const int64_t j = idx / (HD / 32), b = idx % (HD / 32);
            asm volatile("prefetch.global.L1 [%0];" ::"l"(kc + j * kv_dim + kvh * HD + 32 * b));
            asm volatile("prefetch.global.L1 [%0];" ::"l"(vc + j * kv_dim + kvh * HD + 32 * b));
        }
    }
    /* Shares go into other blocks' shared memory only once those blocks have started: with
     * the q/k/v stage its cluster barrier sees to it, else a barrier phase arrived at here
     * and waited for before the first share. */
    if (!QKV && sum.out) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    pdl_wait();
    pdl_release();
    WK_TRACE_MARK(1);
    if constexpr (QKV)
        qkv_stage<T, HD>(qkv, n_out, qkv_row_bytes, n_heads, n_kv_heads, qd, dpos, wsm + L.rows,
                         reinterpret_cast<const float *>(wsm + L.norm_w), reinterpret_cast<float *>(wsm + L.xn), rc,
                         rs, qs);
    if (head) {
        attend_tiled<HD>(outd, QKV ? qs : at<const float>(qd, dpos) + (int64_t)h * HD, kc, vc, pos_off, n_heads,
                         n_kv_heads, dpos, so);
        WK_TRACE_MARK(2);
        asm volatile("cp.async.wait_all;\n" ::);
        __syncthreads();
        if (!QKV && sum.out) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
        WK_TRACE_MARK(3);
        for (int i = threadIdx.x; i < n_out; i += blockDim.x) {
            const int sh = (int)((uintptr_t)(wo + (size_t)i * row_bytes + slice0) & 3);
            const uint8_t *row = wsm + (size_t)i * G::PITCH + sh;
            /* Four sums, one per element of a step: chains a quarter as long (the products
             * of a row were one chain of HD dependent multiply-adds). */
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int u = 0; u < HD / 4; u++) {
                const int e = col0 + 4 * u;
                step_fma4<T>(row + (e / T::QK - col0 / T::QK) * T::BYTES, e % T::QK, so[4 * u], so[4 * u + 1],
                             so[4 * u + 2], so[4 * u + 3], acc);
            }
            const float share = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            if (parts) parts[(size_t)h * n_out + i] = share;
            if (sum.out) send_share(inbox, i, n_out, share);
        }
    }
    if (sum.out) add_shares(sum, inbox, n_out, n_heads, dpos);
    WK_TRACE_MARK(4);
    WK_TRACE_END();
}

/* The most shared memory the kernel is given. */
constexpr size_t ATT_O_SMEM_MAX = 160 << 10;
/* Lets the kernel take up to ATT_O_SMEM_MAX of dynamic shared memory and clusters of up to
 * 16 blocks (once per kernel; the first failure is kept). */
template <class T, int HD, bool QKV> cudaError_t att_o_allow()
{
    static const cudaError_t e = [] {
        const cudaError_t a = cudaFuncSetAttribute(attention_o_kernel<T, HD, QKV>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ATT_O_SMEM_MAX);
        return a != cudaSuccess ? a
                                : cudaFuncSetAttribute(attention_o_kernel<T, HD, QKV>,
                                                       cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    }();
    return e;
}

typedef void (*att_o_fn)(wk_dptr, wk_dptr, const float *, const float *, int64_t, int, int, const int64_t *,
                         const uint8_t *, int, int, float *, wk_cuda_o_sum, wk_cuda_att_qkv, int, double);
struct att_o_kernel {
    att_o_fn fn;
    size_t smem;                /* for n_out rows (and the q/k/v rows when asked) */
    cudaError_t (*allow)(void); /* its shared-memory limit raised */
};
template <class T, int HD> att_o_kernel att_o_hd(int64_t n_out, int64_t qkv_rb)
{
    if (qkv_rb)
        return {attention_o_kernel<T, HD, true>, att_o_layout_for<T, HD>(n_out, qkv_rb).total,
                att_o_allow<T, HD, true>};
    return {attention_o_kernel<T, HD, false>, att_o_layout_for<T, HD>(n_out, 0).total, att_o_allow<T, HD, false>};
}
template <class T> att_o_kernel att_o_for(int64_t hd, int64_t n_out, int64_t qkv_rb)
{
    if (hd == 32) return att_o_hd<T, 32>(n_out, qkv_rb);
    if (hd == 64) return att_o_hd<T, 64>(n_out, qkv_rb);
    if (hd == 128) return att_o_hd<T, 128>(n_out, qkv_rb);
    return {NULL, 0, NULL};
}

__global__ void silu_mul_kernel(wk_dptr gd, wk_dptr ud, int64_t n, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    float *g = at<float>(gd, dpos);
    const float *u = at<const float>(ud, dpos);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float a = g[i];
        g[i] = a / (1.f + expf(-a)) * u[i];
    }
}

__global__ void add_kernel(wk_dptr yd, wk_dptr xd, int64_t n, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    float *y = at<float>(yd, dpos);
    const float *x = at<const float>(xd, dpos);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}

__global__ void copy_kernel(wk_dptr dd, wk_dptr sd, int64_t n, const int64_t *dpos)
{
    pdl_wait();
    pdl_release();
    float *d = at<float>(dd, dpos);
    const float *s = at<const float>(sd, dpos);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        d[i] = s[i];
}

/* wk_argmax_f32 (core/argmax.h) on one block: each thread scans every 1024th value (first
 * strictly larger wins), then the (value, index) pairs meet in a tree where the larger
 * value, else the smaller index, wins. NaNs never win; x[0] a NaN means index 0, as in the
 * scan from x[0]. */
constexpr int ARGMAX_THREADS = 1024;
__global__ void __launch_bounds__(ARGMAX_THREADS) argmax_kernel(wk_dptr xd, int64_t n, wk_dptr outd,
                                                               const int64_t *dpos)
{
    __shared__ float sv[ARGMAX_THREADS / 32];
    __shared__ int64_t si[ARGMAX_THREADS / 32];
    pdl_wait();
    pdl_release();
    const float *x = at<const float>(xd, dpos);
    float v = -INFINITY;
    int64_t idx = -1; /* nothing seen */
    auto see = [&](float f, int64_t i) {
        if (f > v || (idx < 0 && f == v)) v = f, idx = i;
    };
    /* 16-byte loads, four of them in flight before the first is compared (one at a time,
     * the scan waited on each load in turn); a thread still sees its indices in increasing
     * order: units t, t + T, t + 2T, ..., then one element of the tail past the last unit. */
    int64_t done = 0;
    if ((uintptr_t)x % 16 == 0) {
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        const int64_t n4 = n / 4, T = blockDim.x;
        for (int64_t b = threadIdx.x; b < n4; b += 4 * T) {
            float4 a[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (b + j * T < n4) a[j] = x4[b + j * T];
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (b + j * T < n4) {
                    const int64_t i = 4 * (b + j * T);
                    see(a[j].x, i), see(a[j].y, i + 1), see(a[j].z, i + 2), see(a[j].w, i + 3);
                }
        }
        done = 4 * n4;
    }
    for (int64_t i = done + threadIdx.x; i < n; i += blockDim.x) see(x[i], i);
    auto better = [](float a, int64_t ia, float b, int64_t ib) {
        if (ib < 0) return false;
        if (ia < 0) return true;
        return b > a || (b == a && ib < ia);
    };
    for (int o = 16; o; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, v, o);
        const int64_t oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (better(v, idx, ov, oi)) v = ov, idx = oi;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sv[warp] = v, si[warp] = idx;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / 32); w++)
            if (better(v, idx, sv[w], si[w])) v = sv[w], idx = si[w];
        *at<int32_t>(outd, dpos) = (n > 0 && isnan(x[0])) || idx < 0 ? 0 : (int32_t)idx;
    }
}

unsigned grid_for(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    if (b > 4096) b = 4096;
    return (unsigned)(b < 1 ? 1 : b);
}

/* The tiled kernel's conditions: head size 32, 64 or 128, rows on 16-byte boundaries. */
bool tiled_fits(wk_dptr q, const float *k_cache, const float *v_cache, int64_t n_kv_heads, int64_t head_dim)
{
    return (head_dim == 32 || head_dim == 64 || head_dim == 128) && (uintptr_t)k_cache % 16 == 0 &&
           (uintptr_t)v_cache % 16 == 0 && (uintptr_t)q.base % 16 == 0 && q.stride % 16 == 0 &&
           n_kv_heads * head_dim % 4 == 0;
}

/* The fused attention + output projection kernel for a weight type and head size. */
att_o_kernel att_o_pick(wk_type t, int64_t hd, int64_t n_out, int64_t qkv_rb = 0)
{
    switch (t) {
    case WK_TYPE_Q4_0: return att_o_for<wkq::q4_0>(hd, n_out, qkv_rb);
    case WK_TYPE_Q4_1: return att_o_for<wkq::q4_1>(hd, n_out, qkv_rb);
    case WK_TYPE_Q5_0: return att_o_for<wkq::q5_0>(hd, n_out, qkv_rb);
    case WK_TYPE_Q5_1: return att_o_for<wkq::q5_1>(hd, n_out, qkv_rb);
    case WK_TYPE_Q8_0: return att_o_for<wkq::q8_0>(hd, n_out, qkv_rb);
    case WK_TYPE_Q8_1: return att_o_for<wkq::q8_1>(hd, n_out, qkv_rb);
    case WK_TYPE_Q2_K: return att_o_for<wkq::q2_K>(hd, n_out, qkv_rb);
    case WK_TYPE_Q3_K: return att_o_for<wkq::q3_K>(hd, n_out, qkv_rb);
    case WK_TYPE_Q4_K: return att_o_for<wkq::q4_K>(hd, n_out, qkv_rb);
    case WK_TYPE_Q5_K: return att_o_for<wkq::q5_K>(hd, n_out, qkv_rb);
    case WK_TYPE_Q6_K: return att_o_for<wkq::q6_K>(hd, n_out, qkv_rb);
    case WK_TYPE_Q8_K: return att_o_for<wkq::q8_K>(hd, n_out, qkv_rb);
    case WK_TYPE_F16: return att_o_for<wkq::f16>(hd, n_out, qkv_rb);
    default: return {NULL, 0, NULL};
    }
}

} // namespace

extern "C" wk_status wk_cuda_rmsnorm(wk_cuda_ctx *c, wk_dptr y, wk_dptr x, const float *w,
                                     int64_t rows, int64_t dim, float eps, const int64_t *dpos)
{
    if (rows <= 0) return WK_OK;
    int threads = dim >= 1024 ? 1024 : (int)((dim + 31) / 32 * 32);
    return wk_launch_pdl("rmsnorm", rmsnorm_kernel, dim3((unsigned)rows), dim3(threads), 0, c->stream, y, x, w,
                         (int)dim, eps, dpos);
}

extern "C" wk_status wk_cuda_rope(wk_cuda_ctx *c, wk_dptr x, int64_t rows, int64_t n_heads,
                                  int64_t head_dim, int64_t n_rot, int64_t pos_off, float freq_base,
                                  const int64_t *dpos)
{
    int64_t half = n_rot / 2;
    int64_t total = rows * n_heads * half;
    if (total <= 0) return WK_OK;
    double lb = log((double)freq_base) / (double)n_rot;
    return wk_launch_pdl("rope", rope_kernel, dim3((unsigned)((total + 255) / 256)), dim3(256), 0, c->stream, x,
                         (int)rows, (int)n_heads, (int)head_dim, (int)half, pos_off, lb, dpos);
}

extern "C" wk_status wk_cuda_attention(wk_cuda_ctx *c, wk_dptr out, wk_dptr q, const float *k_cache,
                                       const float *v_cache, int64_t rows, int64_t pos_off,
                                       int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                                       const int64_t *dpos)
{
    if (head_dim > ATT_DMAX * 32)
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA attention: head size %lld (at most %d)",
                       (long long)head_dim, ATT_DMAX * 32);
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
        return wk_fail(WK_ERR_INVALID, "CUDA attention: %lld heads over %lld kv heads",
                       (long long)n_heads, (long long)n_kv_heads);
    if (rows <= 0) return WK_OK;
    dim3 grid((unsigned)n_heads, (unsigned)rows);
    /* The tiled kernel for decode (one row: its 108 registers a thread leave one block per
     * SM, which a prompt's many blocks would wait on); its 16-byte loads need rows on
     * 16-byte boundaries. */
    const bool tiled = rows == 1 && tiled_fits(q, k_cache, v_cache, n_kv_heads, head_dim);
    auto kernel = !tiled ? NULL
                  : head_dim == 32 ? attention_tiled_kernel<32>
                  : head_dim == 64 ? attention_tiled_kernel<64>
                  : head_dim == 128 ? attention_tiled_kernel<128> : NULL;
    if (kernel)
        return wk_launch_pdl("attention", kernel, grid, dim3(ATT_WARPS * 32), 0, c->stream, out, q, k_cache,
                             v_cache, pos_off, (int)n_heads, (int)n_kv_heads, dpos);
    return wk_launch_pdl("attention", attention_kernel, grid, dim3(ATT_WARPS * 32), 0, c->stream, out, q,
                         k_cache, v_cache, pos_off, (int)n_heads, (int)n_kv_heads, (int)head_dim, dpos);
}

extern "C" bool wk_cuda_attention_o_fits(wk_type wtype, const void *w, int64_t n_out, int64_t n_heads,
                                         wk_dptr q, const float *k_cache, const float *v_cache,
                                         int64_t n_kv_heads, int64_t head_dim)
{
    const att_o_kernel k = att_o_pick(wtype, head_dim, n_out);
    return k.fn && k.smem <= ATT_O_SMEM_MAX && (uintptr_t)w % (wtype == WK_TYPE_F16 ? 8 : 4) == 0 &&
           n_heads >= 1 && n_heads <= ATT_O_MAX_HEADS && tiled_fits(q, k_cache, v_cache, n_kv_heads, head_dim);
}

extern "C" bool wk_cuda_attention_qkv_o_fits(wk_type wtype, const void *wo, int64_t n_out, int64_t n_heads,
                                             wk_dptr q, const float *k_cache, const float *v_cache,
                                             int64_t n_kv_heads, int64_t head_dim, const wk_cuda_att_qkv *qkv)
{
    if (!qkv || !qkv->wq || !qkv->wk || !qkv->wv || !qkv->norm_w ||
        !wk_cuda_attention_o_fits(wtype, wo, n_out, n_heads, q, k_cache, v_cache, n_kv_heads, head_dim))
        return false;
    const int64_t be = wk_cuda_block_elems(wtype), rb = wk_cuda_row_bytes(wtype, n_out);
    const att_o_kernel k = att_o_pick(wtype, head_dim, n_out, rb);
    const uintptr_t al = (uintptr_t)qkv->wq | (uintptr_t)qkv->wk | (uintptr_t)qkv->wv | (uintptr_t)qkv->norm_w;
    return n_kv_heads >= 1 && n_heads % n_kv_heads == 0 && n_heads + 2 * n_kv_heads <= ATT_O_MAX_HEADS &&
           be > 0 && n_out % be == 0 && n_out % 4 == 0 && rb > 0 && head_dim * rb % 16 == 0 && al % 16 == 0 &&
           k.smem <= ATT_O_SMEM_MAX && qkv->n_rot >= 0 && qkv->n_rot <= head_dim && qkv->n_rot % 2 == 0;
}

/* One launch of attention_o_kernel: the heads' blocks and, with qkv, the k and v heads'. */
static wk_status att_o_launch(wk_cuda_ctx *c, wk_dptr out, wk_dptr q, const float *k_cache, const float *v_cache,
                              int64_t pos_off, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                              const int64_t *dpos, wk_type wtype, const void *w, int64_t n_out, float *parts,
                              wk_cuda_o_sum sum, const wk_cuda_att_qkv *qkv)
{
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
        return wk_fail(WK_ERR_INVALID, "CUDA attention with the output projection: %lld heads over %lld kv "
                                       "heads", (long long)n_heads, (long long)n_kv_heads);
    const int64_t rb = wk_cuda_row_bytes(wtype, n_heads * head_dim);
    if (rb <= 0 || rb > INT32_MAX || (n_heads * head_dim) % wk_cuda_block_elems(wtype))
        return wk_fail(WK_ERR_INVALID, "CUDA attention with the output projection: %lld inputs do not fill "
                                       "%s blocks", (long long)(n_heads * head_dim), wk_traits(wtype)->name);
    const int64_t qkv_rb = qkv ? wk_cuda_row_bytes(wtype, n_out) : 0;
    const att_o_kernel k = att_o_pick(wtype, head_dim, n_out, qkv_rb);
    WK_CU(k.allow());
    wk_cuda_att_qkv args = {0};
    double lb = 0.0;
    if (qkv) {
        args = *qkv;
        lb = qkv->n_rot ? log((double)qkv->rope_base) / (double)qkv->n_rot : 0.0;
    }
    /* One cluster of all the blocks (add_shares). */
    const unsigned blocks = (unsigned)(n_heads + (qkv ? 2 * n_kv_heads : 0));
    return wk_launch_pdl_cluster("attention with the output projection", k.fn, dim3(blocks), dim3(ATT_WARPS * 32),
                                 k.smem, c->stream, blocks, out, q, k_cache, v_cache, pos_off, (int)n_heads,
                                 (int)n_kv_heads, dpos, (const uint8_t *)w, (int)n_out, (int)rb, parts, sum, args,
                                 (int)qkv_rb, lb);
}

extern "C" wk_status wk_cuda_attention_o(wk_cuda_ctx *c, wk_dptr out, wk_dptr q, const float *k_cache,
                                         const float *v_cache, int64_t pos_off, int64_t n_heads,
                                         int64_t n_kv_heads, int64_t head_dim, const int64_t *dpos,
                                         wk_type wtype, const void *w, int64_t n_out, float *parts,
                                         wk_cuda_o_sum sum)
{
    if (n_out <= 0 || n_out > INT32_MAX || !wk_cuda_attention_o_fits(wtype, w, n_out, n_heads, q, k_cache, v_cache, n_kv_heads, head_dim))
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA attention with the output projection: weight type %s, "
                                           "head size %lld, %lld heads, %lld outputs or the rows' alignment",
                       wk_traits(wtype) ? wk_traits(wtype)->name : "(unknown)", (long long)head_dim,
                       (long long)n_heads, (long long)n_out);
    return att_o_launch(c, out, q, k_cache, v_cache, pos_off, n_heads, n_kv_heads, head_dim, dpos, wtype, w, n_out,
                        parts, sum, NULL);
}

extern "C" wk_status wk_cuda_attention_qkv_o(wk_cuda_ctx *c, wk_dptr out, wk_dptr q, const float *k_cache,
                                             const float *v_cache, int64_t pos_off, int64_t n_heads,
                                             int64_t n_kv_heads, int64_t head_dim, const int64_t *dpos,
                                             wk_type wtype, const void *wo, int64_t n_out, wk_cuda_o_sum sum,
                                             const wk_cuda_att_qkv *qkv)
{
    if (n_out <= 0 || n_out > INT32_MAX || !sum.out ||
        !wk_cuda_attention_qkv_o_fits(wtype, wo, n_out, n_heads, q, k_cache, v_cache, n_kv_heads, head_dim, qkv))
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA attention with the q/k/v and output projections: weight type "
                                           "%s, head size %lld, %lld + 2 x %lld heads, %lld inputs, the rotated "
                                           "dims, no sum, or the weights' alignment",
                       wk_traits(wtype) ? wk_traits(wtype)->name : "(unknown)", (long long)head_dim,
                       (long long)n_heads, (long long)n_kv_heads, (long long)n_out);
    return att_o_launch(c, out, q, k_cache, v_cache, pos_off, n_heads, n_kv_heads, head_dim, dpos, wtype, wo, n_out,
                        NULL, sum, qkv);
}

extern "C" wk_status wk_cuda_silu_mul(wk_cuda_ctx *c, wk_dptr gate, wk_dptr up, int64_t n,
                                      const int64_t *dpos)
{
    if (n <= 0) return WK_OK;
    return wk_launch_pdl("silu_mul", silu_mul_kernel, dim3(grid_for(n, 256)), dim3(256), 0, c->stream, gate, up, n, dpos);
}

extern "C" wk_status wk_cuda_add(wk_cuda_ctx *c, wk_dptr y, wk_dptr x, int64_t n, const int64_t *dpos)
{
    if (n <= 0) return WK_OK;
    return wk_launch_pdl("add", add_kernel, dim3(grid_for(n, 256)), dim3(256), 0, c->stream, y, x, n, dpos);
}

extern "C" wk_status wk_cuda_argmax(wk_cuda_ctx *c, wk_dptr x, int64_t n, wk_dptr out, const int64_t *dpos)
{
    if (n <= 0 || n > INT32_MAX) return wk_fail(WK_ERR_INVALID, "CUDA argmax of %lld values", (long long)n);
    return wk_launch_pdl("argmax", argmax_kernel, dim3(1), dim3(ARGMAX_THREADS), 0, c->stream, x, n, out, dpos);
}

extern "C" wk_status wk_cuda_copy_f32(wk_cuda_ctx *c, wk_dptr dst, wk_dptr src, int64_t n,
                                      const int64_t *dpos)
{
    if (n <= 0) return WK_OK;
    return wk_launch_pdl("copy", copy_kernel, dim3(grid_for(n, 256)), dim3(256), 0, c->stream, dst, src, n, dpos);
}
