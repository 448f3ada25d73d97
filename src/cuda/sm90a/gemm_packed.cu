/* The quantized matmul for many input rows on Hopper (compute capability 9.0, built as
 * sm_90a): weights in the packed layout (qpack.cuh) are dequantized to f16 in registers,
 * straight into the A operand of wgmma, and multiplied with x from shared memory.
 *
 * The product is D = W x^T, so the weight rows are wgmma's M and the input rows its N:
 * a warpgroup takes 64 weight rows (each warp the 16 rows of one packed row group, whose
 * lane fragments are exactly the A registers of a 16 x 16 step) and BN input rows. A block
 * of WGS warpgroups walks k through a ring of ST shared-memory stages of CPS packed chunks
 * (KC elements each; 4 or 2 of the 64-element chunks, or one of 256), each holding those
 * chunks' weight bytes for the block's row groups and the matching BN-row piece of x. A K
 * chunk's x too large for three such stages (128-256 input rows) goes in halves or
 * quarters, a stage each, with the chunk's weights again, or (where that gives halves for
 * quarters or more stages) in halves alone, the chunk's weights once, with its first half,
 * into one of two weight buffers beside the ring. One more warp only feeds the ring: its first
 * lane has the copy engine (cp.async.bulk) bring each stage in a few whole copies,
 * counted on the stage's "full" mbarrier, as soon as every consumer warp has signalled
 * "empty" on it; the consumers never wait for one another. x is converted to f16 first
 * (permute_x, a launch the kernel follows by programmatic dependent launch), written in
 * the very image of the stages: each 16 elements in the k order the packed fragments use
 * (lane quad t holds elements 4t..4t+3 of a step, which the mma reads at positions 2t,
 * 2t+1, 2t+8, 2t+9), in the 128-byte swizzled layout wgmma reads without bank conflicts.
 * Each step: decode 4 integer weights a lane (exact), one HFMA2 a pair with the block's
 * scale and minimum (the f16 rounding of the dequantized weight, as the f16 form has),
 * then wgmma; up to 6 steps (8 for the K formats) stay in flight.
 *
 * Precision is the f16 form's (x and the dequantized weights rounded to f16, f32 sums),
 * what the dequantize + cuBLAS path it replaces had, without writing and reading the f16
 * weight. */
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#include "cuda/bulk_copy.cuh"
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "cuda/mma.cuh"
#include "cuda/qpack.cuh"
#include "cuda/traits_cxx.h"

namespace {

using wkp::h2u;
using wkp::u2h;

constexpr int SMEM_LIMIT = 227 * 1024 - 128; /* shared memory a block may have (sm_90), less the barriers */
constexpr int MAX_STAGES = 8;

using wkb::bulk_copy;
using wkb::mbar_arrive;
using wkb::mbar_expect;
using wkb::mbar_init;
using wkb::mbar_wait;
using wkb::smem_addr;

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

/* The descriptor of a K-major operand in the 128-byte swizzle: rows of 128 bytes (64 f16),
 * 8-row atoms 1024 bytes apart (the stride), the leading offset unused. */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

/* D (64 x N, f32) += A (64 x 16, f16, registers) * B (16 x N, f16, shared memory), one
 * overload for each tile width the kernel takes (N = 2 x the accumulators): the
 * accumulators d[b .. b + 15] are operands %b .. %b + 15 (WK_D16, WK_R16_b), then A's four
 * registers and B's descriptor. */
#define WK_R16_0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define WK_R16_16 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WK_R16_32 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define WK_R16_48 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WK_R16_64 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define WK_R16_80 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define WK_R16_96 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define WK_R16_112 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WK_D4(b) "+f"(d[b]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3])
#define WK_D16(b) WK_D4(b), WK_D4(b + 4), WK_D4(b + 8), WK_D4(b + 12)
#define WK_A_DESC "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc)
/* One overload: NREG accumulators, the shape, the accumulators' operand list, then the
 * operand numbers of A's registers and of the descriptor, then the accumulators. */
#define WK_WGMMA(NREG, SHAPE, RLIST, A0, A1, A2, A3, DESC, ...)                                          \
    __device__ __forceinline__ void wgmma(float (&d)[NREG], const uint32_t (&a)[4], uint64_t desc)       \
    {                                                                                                    \
        asm volatile("wgmma.mma_async.sync.aligned." SHAPE ".f32.f16.f16 {" RLIST "}, {%" #A0 ", %" #A1  \
                     ", %" #A2 ", %" #A3 "}, %" #DESC ", 1, 1, 1, 0;"                                     \
                     : __VA_ARGS__                                                                       \
                     : WK_A_DESC);                                                                       \
    }
#define WK_R32 WK_R16_0 ", " WK_R16_16
#define WK_R64 WK_R32 ", " WK_R16_32 ", " WK_R16_48
#define WK_R96 WK_R64 ", " WK_R16_64 ", " WK_R16_80
#define WK_D32 WK_D16(0), WK_D16(16)
#define WK_D64 WK_D32, WK_D16(32), WK_D16(48)
#define WK_D96 WK_D64, WK_D16(64), WK_D16(80)
WK_WGMMA(32, "m64n64k16", WK_R32, 32, 33, 34, 35, 36, WK_D32)
WK_WGMMA(48, "m64n96k16", WK_R32 ", " WK_R16_32, 48, 49, 50, 51, 52, WK_D32, WK_D16(32))
WK_WGMMA(64, "m64n128k16", WK_R64, 64, 65, 66, 67, 68, WK_D64)
WK_WGMMA(80, "m64n160k16", WK_R64 ", " WK_R16_64, 80, 81, 82, 83, 84, WK_D64, WK_D16(64))
WK_WGMMA(96, "m64n192k16", WK_R96, 96, 97, 98, 99, 100, WK_D96)
WK_WGMMA(112, "m64n224k16", WK_R96 ", " WK_R16_96, 112, 113, 114, 115, 116, WK_D96, WK_D16(96))
WK_WGMMA(128, "m64n256k16", WK_R96 ", " WK_R16_96 ", " WK_R16_112, 128, 129, 130, 131, 132, WK_D96, WK_D16(96),
         WK_D16(112))

/* x (m rows of k, f32 or f16, contiguous) as f16 in the image of the kernel's stages:
 * for each tile of BN rows, slabs of 64 elements one after another (a stage of KC
 * elements is KC / 64 consecutive slabs), each BN rows of 128 bytes, the 16-byte pieces of
 * row r swizzled (piece q at q ^ (r & 7)), and each 16 elements in the packed fragments'
 * k order (positions 0-7: elements 0,1,4,5,8,9,12,13; 8-15: 2,3,6,7,10,11,14,15). Rows
 * from m to the tile's end are zeros. One thread a 16 elements. */
template <int BN, class T>
__global__ void permute_x(const T *__restrict__ x, int m, int k, int64_t segs, __half *__restrict__ xs)
{
    /* Launched for programmatic dependent launch: x is written, and the image read, by the
     * kernels before; the product kernel may start its prologue at once. */
    pdl_wait();
    pdl_release();
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= segs) return;
    const int segs_row = k / 16;
    const int row = (int)(i / segs_row), sk = (int)(i % segs_row);
    float v[16];
    if (row < m) {
        wkm::load16(x + (size_t)row * k + 16 * sk, v);
    } else {
#pragma unroll
        for (int j = 0; j < 16; j++) v[j] = 0.f;
    }
    uint4 o[2];
    __half2 *h = reinterpret_cast<__half2 *>(o);
#pragma unroll
    for (int t = 0; t < 4; t++) {
        h[t] = __floats2half2_rn(v[4 * t], v[4 * t + 1]);
        h[4 + t] = __floats2half2_rn(v[4 * t + 2], v[4 * t + 3]);
    }
    const int tile = row / BN, r = row % BN, slab = sk / 4, q = 2 * (sk % 4);
    uint8_t *img = reinterpret_cast<uint8_t *>(xs) + ((size_t)tile * (k / 64) + slab) * (BN * 128) + r * 128;
    *reinterpret_cast<uint4 *>(img + ((q ^ (r & 7)) << 4)) = o[0];
    *reinterpret_cast<uint4 *>(img + (((q + 1) ^ (r & 7)) << 4)) = o[1];
}

/* The ring's geometry for stages of `cps` packed chunks (x and weights), or of a `xp`-th of
 * one chunk's x alone, the chunk's weights then in one of WB buffers of their own. */
template <class P, int BN, int WGS> struct stage_geom {
    static constexpr int GROUPS = 4 * WGS;
    static constexpr int XC = BN * P::KC * 2;   /* x bytes of a chunk: KC / 64 slabs of BN x 128 */
    static constexpr int WCH = GROUPS * P::CB;  /* a chunk's weight bytes for the block's row groups */
    static constexpr int lesser(int a, int b) { return a < b ? a : b; }
    static constexpr int sb(int cps, int xp) { return (cps * (XC / xp + WCH) + 1023) / 1024 * 1024; }
    static constexpr int st(int cps, int xp) { return lesser((SMEM_LIMIT - 1024) / sb(cps, xp), MAX_STAGES); }
    /* Chunks a stage: every stage costs its copies (one for x, one a row group) whatever
     * their size, so the 64-element chunks go 4 or 2 to a stage while three stages fit
     * (H200, 8192 x 4096, one chunk a stage: m = 64 took 29.7 us for every 64-element
     * format, 18.1-19.7 for the 256-element K formats). */
    static constexpr int CPS = P::KC >= 256 ? 1 : st(4, 1) >= 3 ? 4 : st(2, 1) >= 3 ? 2 : 1;
    /* Pieces of a chunk's x a stage takes: a K format's chunk of 256 elements at 128-256
     * input rows is 64-128 KiB of x, too much for three stages. Its stages then take
     * halves or quarters of it, each with the chunk's weights again (XP), or (SPLIT) the
     * weights go once a chunk, with its first piece, to one of WB buffers of their own.
     * All the first ST stages are filled before any is used, and later a stage is refilled
     * once every consumer has finished the stage after the one it held, so a buffer is
     * refilled only after its chunk's first piece was read when ST <= WB XP. */
    static constexpr int WB = 2;
    static constexpr int WBYTES = (WB * WCH + 1023) / 1024 * 1024;
    static constexpr int sbx(int xp) { return (XC / xp + 1023) / 1024 * 1024; }
    static constexpr int stx(int xp)
    {
        return lesser(lesser((SMEM_LIMIT - 1024 - WBYTES) / sbx(xp), MAX_STAGES), WB * xp);
    }
    static constexpr int XP_OWN = st(1, 1) >= 3 ? 1 : st(1, 2) >= 3 ? 2 : 4;
    /* Split where that takes halves of a chunk the stages with weights would take in
     * quarters, or more stages of halves (H100, 8192 x 4096, us: Q6_K m = 256 41.0 ->
     * 38.9, Q4_K m = 192 31.5 -> 25.4, Q5_K 33.5 -> 27.7; Q4_K m = 256, three stages of
     * halves either way, 34.1 against 35.2 split; docs/cuda.md, session 43). */
    static constexpr bool SPLIT = XP_OWN > 1 && stx(2) >= 3 && (XP_OWN == 4 || stx(2) > st(1, 2));
    static constexpr int XP = SPLIT ? 2 : XP_OWN;
};

template <class P, int BN, int WGS> struct tile {
    static constexpr int BM = 64 * WGS, GROUPS = BM / 16, THREADS = 128 * WGS;
    using G = stage_geom<P, BN, WGS>;
    static constexpr int CPS = G::CPS;                /* chunks a stage */
    static constexpr int XP = CPS == 1 ? G::XP : 1;   /* stages a chunk */
    static constexpr bool SPLIT = G::SPLIT;          /* weights in buffers of their own */
    static constexpr int XC = G::XC;               /* x bytes of a chunk */
    static constexpr int XB = CPS * XC / XP;       /* x bytes of a stage */
    static constexpr int WC = CPS * P::CB;         /* a row group's weight bytes of a stage (or buffer) */
    static constexpr int SPS = CPS * P::NS / XP;   /* steps a stage */
    static constexpr int SB = SPLIT ? G::sbx(XP) : G::sb(CPS, XP);
    static constexpr int ST = SPLIT ? G::stx(XP) : G::st(CPS, XP);
    static constexpr int WB = SPLIT ? G::WB : 0;   /* weight buffers, after the stages */
    static constexpr int SMEM = ST * SB + (SPLIT ? G::WBYTES : 0) + 1024; /* + alignment of the dynamic base to 1024 */
    static_assert(ST >= 3 && ST <= MAX_STAGES, "at least three stages: one computed, one in flight, one being filled");
    static_assert(!SPLIT || ST <= WB * XP, "a weight buffer is refilled only after its chunk's first piece was read");
    static_assert(!SPLIT || CPS == 1, "only a stage of one chunk splits it (a chunk too large for three stages)");
    static_assert(SMEM + 128 <= 227 * 1024, "the stages fit the shared memory of a block");
    static_assert(P::CB % 16 == 0 && P::NS >= 4, "chunks copy in 16-byte pieces; 4 steps in flight");
    static_assert(P::NS % (4 * XP) == 0, "a piece of a chunk's x is whole slabs of 64 elements");
    /* Where row group gi's weights lie in stage b, or (split chunks) in weight buffer b. */
    __host__ __device__ static constexpr int w_in(int b, int gi)
    {
        return SPLIT ? ST * SB + b * G::WCH + gi * WC : b * SB + XB + gi * WC;
    }
    /* The buffer holding stage sg's weights (its first chunk c0's). */
    __host__ __device__ static constexpr int w_buf(int sg, int c0) { return SPLIT ? c0 % G::WB : sg % ST; }
    /* wgmma steps in flight: up to `most`, no more than a stage has. */
    __host__ __device__ static constexpr int inflight(int most) { return most < SPS ? most : SPS; }
    /* Stages over k, and stage sg's first chunk c0, its chunks cc and which piece of their
     * x it holds (producer and consumers alike). */
    __device__ static int stages(int nchunk) { return (nchunk + CPS - 1) / CPS * XP; }
    __device__ static void stage_chunks(int sg, int nchunk, int &c0, int &cc, int &piece)
    {
        c0 = sg / XP * CPS;
        cc = XP > 1 ? 1 : min(CPS, nchunk - c0); /* a constant where a stage is part of a chunk */
        piece = sg % XP;
    }
    /* The grid: blocks of GROUPS row groups (x), tiles of BN input rows (y). */
    static int64_t grid_x(int64_t n) { return (n / 16 + GROUPS - 1) / GROUPS; }
    static int64_t grid_y(int64_t m) { return (m + BN - 1) / BN; }
};

/* f(std::integral_constant<int, piece>) for the run-time piece, 0 <= piece < N. */
template <int I, int N, class F> __device__ __forceinline__ void for_piece(int piece, F &&f)
{
    if constexpr (I + 1 < N) {
        if (piece != I) {
            for_piece<I + 1, N>(piece, f);
            return;
        }
    }
    f(std::integral_constant<int, I>{});
}

template <class P, int BN, int WGS>
__global__ void __launch_bounds__(128 * WGS + 32, 1)
    gemm_packed_kernel(const uint8_t *__restrict__ w, const __half *__restrict__ xs, int m, int n, int k,
                       float *__restrict__ y)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using T = tile<P, BN, WGS>;
    constexpr int ST = T::ST, SB = T::SB, XC = T::XC, WC = T::WC, XP = T::XP;
    /* wgmma steps in flight (H200, 8192 x 4096, against 4: 6 for the 64-element chunks,
     * Q4_0 m = 64 17.7 -> 16.7 us, 256 32.5 -> 31.4, 8 no faster there; 8 for the K
     * formats, Q6_K m = 256 49.7 -> 49.0, Q4_K m = 64 17.3 -> 16.7). */
    constexpr int DEPTH = T::inflight(P::KC >= 256 ? 8 : 6);
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    const uint32_t sbase = smem_addr(smem);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nchunk = k / P::KC, ngroups = n / 16, nstage = T::stages(nchunk);
    const int g0 = (int)blockIdx.x * T::GROUPS, m0 = (int)blockIdx.y * BN;
    const int gw = g0 + warp; /* this warp's row group */
    const bool live = gw < ngroups;

    /* x's tile for this block (permute_x's image) and the block's live row groups. */
    const uint8_t *ximg = reinterpret_cast<const uint8_t *>(xs) + (size_t)blockIdx.y * nchunk * XC;
    const int glive = min(T::GROUPS, ngroups - g0);
    __shared__ __align__(8) uint64_t full[ST], empty[ST];

    /* Row groups past n are never copied: their bytes stay zero (scale 0, weights 0), in
     * every stage or weight buffer. */
    if (glive < T::GROUPS && tid < T::THREADS)
        for (int i = tid; i < (T::SPLIT ? T::WB : ST) * (T::GROUPS - glive) * WC / 16; i += T::THREADS) {
            const int per = (T::GROUPS - glive) * WC / 16, b = i / per;
            *reinterpret_cast<uint4 *>(smem + T::w_in(b, glive) + 16 * (i % per)) = make_uint4(0, 0, 0, 0);
        }
    if (tid == 0) {
        for (int b = 0; b < ST; b++) {
            mbar_init(smem_addr(&full[b]), 1);
            mbar_init(smem_addr(&empty[b]), 4 * WGS);
        }
        wkb::mbar_init_fence();
    }
    __syncthreads();

    /* The producer warp's first lane: stage s (chunks s CPS .., or piece s % XP of chunk
     * s / XP) into buffer s % ST, once every consumer warp has let go of stage s - ST (they
     * do at the end of the stage after it): x's piece in one copy, each live row group's
     * chunks in one (a row group's chunks lie one after another); with split chunks, the
     * weights only with a chunk's first piece, into weight buffer (s / XP) % WB. */
    if (warp == 4 * WGS) {
        if (lane == 0) {
            /* Stage sg in buffer sg % ST: the bytes its "full" barrier expects, its piece of
             * x, its row groups' weights. */
            auto expect = [&](int sg) {
                int c0, cc, piece;
                T::stage_chunks(sg, nchunk, c0, cc, piece);
                const int wbytes = !T::SPLIT || piece == 0 ? glive * cc * P::CB : 0;
                mbar_expect(smem_addr(&full[sg % ST]), (uint32_t)(cc * XC / XP + wbytes));
            };
            auto copy_x = [&](int sg) {
                int c0, cc, piece;
                T::stage_chunks(sg, nchunk, c0, cc, piece);
                bulk_copy(sbase + (uint32_t)(sg % ST * SB), ximg + (size_t)c0 * XC + (size_t)piece * (XC / XP),
                          cc * XC / XP, smem_addr(&full[sg % ST]));
            };
            auto copy_w = [&](int sg) {
                int c0, cc, piece;
                T::stage_chunks(sg, nchunk, c0, cc, piece);
                if (T::SPLIT && piece != 0) return;
                for (int gi = 0; gi < glive; gi++)
                    bulk_copy(sbase + (uint32_t)T::w_in(T::w_buf(sg, c0), gi),
                              w + ((size_t)(g0 + gi) * nchunk + c0) * P::CB, cc * P::CB, smem_addr(&full[sg % ST]));
            };
            /* The first ST stages' weights go out before the wait for x's conversion
             * (nothing before this kernel writes weights), their x after it. */
            const int first = min(ST, nstage);
            for (int sg = 0; sg < first; sg++) expect(sg), copy_w(sg);
            pdl_wait();
            for (int sg = 0; sg < first; sg++) copy_x(sg);
            for (int sg = first; sg < nstage; sg++) {
                mbar_wait(smem_addr(&empty[sg % ST]), (uint32_t)((sg / ST - 1) & 1));
                expect(sg), copy_x(sg), copy_w(sg);
            }
        }
        return;
    }
    pdl_wait(); /* y may be read by the kernels before x's conversion */

    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) acc[i] = 0.f;

    typename P::frag kept; /* split chunks: loaded at a chunk's first piece, kept for the others */
    for (int sg = 0; sg < nstage; sg++) {
        const int b = sg % ST;
        int c0, cc, piece;
        T::stage_chunks(sg, nchunk, c0, cc, piece);
        mbar_wait(smem_addr(&full[b]), (uint32_t)((sg / ST) & 1));

#pragma unroll 1
        for (int j = 0; j < cc; j++) {
            typename P::frag own;
            if (!T::SPLIT || piece == 0)
                P::template load<wkp::from_shared>(smem + T::w_in(T::w_buf(sg, c0), warp) + j * P::CB, lane,
                                                  T::SPLIT ? kept : own);
            const typename P::frag &f = T::SPLIT ? kept : own;
            /* The steps of this stage's piece of the chunk, chosen once (a compile-time
             * range each): a run-time test at every step cost the K formats' pieces. */
            for_piece<0, XP>(piece, [&](auto pc) {
                constexpr int S0 = decltype(pc)::value * (P::NS / XP);
#pragma unroll
                for (int s = S0; s < S0 + P::NS / XP; s++) {
                    uint32_t a[4]; /* a row group past n reads zero bytes: scale 0, weights 0 */
                    P::step(f, s, a[0], a[1], a[2], a[3]);
                    const float2 d = P::scale(f, s / P::SG);
                    const __half2 d0 = __float2half2_rn(d.x), d1 = __float2half2_rn(d.y);
                    if constexpr (P::ADD) {
                        const float2 mn = P::add(f, s / P::SG);
                        const __half2 m0h = __float2half2_rn(mn.x), m1h = __float2half2_rn(mn.y);
                        a[0] = h2u(__hfma2(u2h(a[0]), d0, m0h)), a[2] = h2u(__hfma2(u2h(a[2]), d0, m0h));
                        a[1] = h2u(__hfma2(u2h(a[1]), d1, m1h)), a[3] = h2u(__hfma2(u2h(a[3]), d1, m1h));
                    } else {
                        a[0] = h2u(__hmul2(u2h(a[0]), d0)), a[2] = h2u(__hmul2(u2h(a[2]), d0));
                        a[1] = h2u(__hmul2(u2h(a[1]), d1)), a[3] = h2u(__hmul2(u2h(a[3]), d1));
                    }
                    const int sp = s - S0; /* the step within the stage's piece of x */
                    const uint32_t xa = sbase + (uint32_t)(b * SB + j * XC + (sp >> 2) * (BN * 128) + (s & 3) * 32);
                    wg_fence();
                    wgmma(acc, a, desc_sw128(xa)); /* the overload of BN columns */
                    wg_commit();
                    wg_wait<DEPTH - 1>();
                }
            });
        }
        /* All but this stage's last DEPTH - 1 steps are done, and every stage but the last
         * has more steps than that: stage sg - 1's buffer is free (the last stage's release
         * frees a buffer nothing fills any more). */
        if (sg > 0 && lane == 0) mbar_arrive(smem_addr(&empty[(sg - 1) % ST]));
    }
    wg_wait<0>();

    if (!live) return;
    const int g = lane >> 2, t = lane & 3;
    const int r0 = gw * 16 + g;
#pragma unroll
    for (int i = 0; i < BN / 8; i++) {
        const int col = m0 + 8 * i + 2 * t;
        if (col < m) {
            y[(size_t)col * n + r0] = acc[4 * i];
            y[(size_t)col * n + r0 + 8] = acc[4 * i + 2];
        }
        if (col + 1 < m) {
            y[(size_t)(col + 1) * n + r0] = acc[4 * i + 1];
            y[(size_t)(col + 1) * n + r0 + 8] = acc[4 * i + 3];
        }
    }
#else
    (void)w, (void)xs, (void)m, (void)n, (void)k, (void)y;
#endif
}

template <class P, int BN, int WGS> wk_status launch(wk_cuda_ctx *c, const void *w, int64_t n, int64_t k,
                                                     const __half *xs, int64_t m, float *y)
{
    using T = tile<P, BN, WGS>;
    static bool ready = false; /* the shared-memory size is set once per kernel */
    if (!ready) {
        wk_status st = wk_cuda_err(cudaFuncSetAttribute(gemm_packed_kernel<P, BN, WGS>,
                                                        cudaFuncAttributeMaxDynamicSharedMemorySize, T::SMEM),
                                   "the many-row packed matmul kernel's shared memory");
        if (st) return st;
        ready = true;
    }
    const dim3 grid((unsigned)T::grid_x(n), (unsigned)T::grid_y(m));
    return wk_launch_pdl("the many-row packed matmul kernel", gemm_packed_kernel<P, BN, WGS>, grid,
                         dim3(T::THREADS + 32), T::SMEM, c->stream, (const uint8_t *)w, xs, (int)m, (int)n, (int)k, y);
}

/* x into the stage image for tiles of BN rows (scratch), then the kernel. */
template <class P, int BN, int WGS> wk_status run(wk_cuda_ctx *c, const void *w, int64_t n, int64_t k,
                                                  const void *x, wk_type xtype, int64_t m, float *y)
{
    const int64_t mpad = (m + BN - 1) / BN * BN, segs = mpad * k / 16;
    wk_status st = wk_cuda_scratch_reserve(c, (size_t)(mpad * k) * 2);
    if (st) return st;
    __half *xs = (__half *)c->scratch;
    const unsigned blocks = (unsigned)((segs + 255) / 256);
    if (xtype == WK_TYPE_F16)
        st = wk_launch_pdl("the many-row packed matmul's input conversion", permute_x<BN, __half>, dim3(blocks),
                           dim3(256), 0, c->stream, (const __half *)x, (int)m, (int)k, segs, xs);
    else
        st = wk_launch_pdl("the many-row packed matmul's input conversion", permute_x<BN, float>, dim3(blocks),
                           dim3(256), 0, c->stream, (const float *)x, (int)m, (int)k, segs, xs);
    if (st) return st;
    return launch<P, BN, WGS>(c, w, n, k, xs, m, y);
}

/* Whether tiles T over n weight rows and m input rows give enough blocks to keep most of
 * the GPU's SMs busy (else the 64-row tile, with more blocks, is taken). */
template <class T> bool fills_gpu(int64_t n, int64_t m) { return T::grid_x(n) * T::grid_y(m) >= 100; }
/* Waves of blocks (one an SM) that tiles T take over n weight rows and m input rows. */
template <class T> double waves(int64_t n, int64_t m, int sms)
{
    return (double)((T::grid_x(n) * T::grid_y(m) + sms - 1) / sms);
}

/* The least time over the tiles considered: a tile's time a wave of its blocks times its
 * waves over n weight rows and m input rows, among the tiles that fill the GPU; best is
 * that tile's run (NULL: none fills it). */
struct tile_pick {
    wk_status (*best)(wk_cuda_ctx *, const void *, int64_t, int64_t, const void *, wk_type, int64_t, float *) = nullptr;
    double cost = 0;
    /* WICK_CUDA_WGMMA_BN=B (and WICK_CUDA_WGMMA_WGS=W, default 1): only the tile of B input
     * rows and W warpgroups, where the format has it and it fills the GPU (measurements;
     * read once). */
    static bool forced_away(int bn, int wgs)
    {
        static const long bn_v = wk_env_long("WICK_CUDA_WGMMA_BN", 0), wgs_v = wk_env_long("WICK_CUDA_WGMMA_WGS", 1);
        return bn_v != 0 && (bn_v != bn || wgs_v != wgs);
    }
    template <class P, int BN, int WGS> void consider(double wave_us, int64_t n, int64_t m, int sms)
    {
        using T = tile<P, BN, WGS>;
        if (forced_away(BN, WGS)) return;
        if (!fills_gpu<T>(n, m)) return;
        const double t = wave_us * waves<T>(n, m, sms);
        if (!best || t < cost) best = run<P, BN, WGS>, cost = t;
    }
};

/* Whether this GPU runs the sm_90a kernels (a cubin for compute capability 9.0 only). */
bool device_runs_sm90a()
{
    static int ok = -1;
    if (ok < 0) {
        cudaFuncAttributes a;
        ok = cudaFuncGetAttributes(&a, gemm_packed_kernel<wkp::q4_0, 64, 1>) == cudaSuccess;
        (void)cudaGetLastError();
    }
    return ok == 1;
}

} // namespace

/* WICK_CUDA_WGMMA=0 sends many rows to dequantize + cuBLAS (measurements side by side). */
extern "C" bool wk_cuda_gemm_packed_supports(wk_type t, int64_t n, int64_t k)
{
    static const long on = wk_env_long("WICK_CUDA_WGMMA", 1);
    return on != 0 && wk_cuda_is_packed(t) && wk_cuda_pack_supports(wk_cuda_unpacked(t), n, k) && device_runs_sm90a();
}

extern "C" wk_status wk_cuda_gemm_packed(wk_cuda_ctx *c, wk_type t, const void *w, int64_t n, int64_t k,
                                         const void *x, wk_type xtype, int64_t m, float *y)
{
    const wk_type base = wk_cuda_unpacked(t);
    if (!wk_cuda_gemm_packed_supports(t, n, k) || m <= 0 || m > INT32_MAX / k)
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA many-row packed matmul: a %s [%lld, %lld] weight on this GPU",
                       wk_traits(base) ? wk_traits(base)->name : "(unknown)", (long long)n, (long long)k);
    const int sms = wk_cuda_sm_count();
    return wkp::with_format(base, [&](auto p) -> wk_status {
        using P = decltype(p);
        /* The tile whose waves of blocks (one an SM) take the least time, from each tile's
         * time a wave on the H200 (8192 x 4096, one wave = 128 blocks, us; PDL launches;
         * bench/results/cuda-tiles-s20-h200.txt): one warpgroup of 64 weight rows x BN input
         * rows; Q6_K also 128 weight rows (two warpgroups) x 64 or 96. So a tile is as wide
         * as the rows need: m = 139, Q4_0 33.5 us at 256 rows a tile, 24.6 at 160. Tiles
         * that would leave most of the GPU idle (small n) are not taken; if none is left,
         * 64 x 64. WICK_CUDA_WGMMA_WIDE=0: the choice before session 18 (256 input rows, Q4_K
         * and Q6_K 64 with two warpgroups). */
        static const long wide_v = wk_env_long("WICK_CUDA_WGMMA_WIDE", 1);
        if (m <= 64) return run<P, 64, 1>(c, w, n, k, x, xtype, m, y);
        if (wide_v == 0) {
            if constexpr (P::KC == 256) {
                if (fills_gpu<tile<P, 64, 2>>(n, m)) return run<P, 64, 2>(c, w, n, k, x, xtype, m, y);
            } else {
                if (fills_gpu<tile<P, 256, 1>>(n, m)) return run<P, 256, 1>(c, w, n, k, x, xtype, m, y);
            }
            return run<P, 64, 1>(c, w, n, k, x, xtype, m, y);
        }
        tile_pick pick;
        /* The K formats with a scale a step take Q6_K's tiles, those with one a pair of
         * steps Q4_K's. */
        if constexpr (P::KC == 256 && P::SG == 1) {
            pick.consider<P, 64, 2>(24.0, n, m, sms);
            pick.consider<P, 96, 2>(29.5, n, m, sms);
            pick.consider<P, 224, 1>(34.2, n, m, sms);
            pick.consider<P, 256, 1>(39.4, n, m, sms);
        } else if constexpr (P::KC == 256) {
            pick.consider<P, 128, 1>(20.7, n, m, sms);
            pick.consider<P, 160, 1>(25.6, n, m, sms);
            pick.consider<P, 192, 1>(30.7, n, m, sms);
            pick.consider<P, 224, 1>(32.1, n, m, sms);
            pick.consider<P, 256, 1>(33.2, n, m, sms);
        } else {
            pick.consider<P, 128, 1>(19.8, n, m, sms);
            pick.consider<P, 160, 1>(24.3, n, m, sms);
            pick.consider<P, 192, 1>(24.6, n, m, sms);
            pick.consider<P, 224, 1>(30.0, n, m, sms);
            pick.consider<P, 256, 1>(31.5, n, m, sms);
        }
        /* Two warpgroups of 64 weight rows x 128 input rows: the least x an SM takes in
         * at 129-256 rows, faster there than one warpgroup's 256 for these formats alone
         * (H100, 8192 x 4096, m = 256, us: Q8_0 36.6 -> 33.9, Q2_K 35.3 -> 33.9, Q6_K 41.0
         * -> 37.4; Q4_0 32.4 -> 33.7-34.1, Q5_K 37.3 -> 40.3; docs/cuda.md, session 43): their
         * times a wave scaled from those measurements to the tables' above. */
        if constexpr (std::is_same<P, wkp::q8_0>::value) pick.consider<P, 128, 2>(29.2, n, m, sms);
        if constexpr (std::is_same<P, wkp::q2_K>::value) pick.consider<P, 128, 2>(37.8, n, m, sms);
        if constexpr (std::is_same<P, wkp::q6_K>::value) pick.consider<P, 128, 2>(35.9, n, m, sms);
        if (pick.best) return pick.best(c, w, n, k, x, xtype, m, y);
        return run<P, 64, 1>(c, w, n, k, x, xtype, m, y);
    });
}
