/* Internal (CUDA): the packed GPU layout of the 32-element formats (Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0), made once when a weight is uploaded (pack.cu).
 *
 * The GGUF layout puts a row's blocks one after another, so a lane of the matrix-vector
 * kernel finds its few weights scattered over bytes that start on 2-byte boundaries; it
 * had to stage them through shared memory and spend about 38 instructions a 16 x 16 step
 * picking them apart. The packed layout stores, for every 16 rows and every 64 elements
 * (two blocks a row: a "chunk"), exactly what each lane of a warp needs for the four
 * mma steps of that chunk, in the order it needs it:
 *
 *   codes   32 lanes x 16 bytes (4 and 5 bits) or 2 x 32 lanes x 16 bytes (8 bits)
 *   qh      32 lanes x 4 bytes (5 bits only): the codes' fifth bits
 *   scales  8 x (4 halves d, then 4 halves m for the formats with a minimum)
 *
 * so that a warp reads a chunk with one or two 16-byte loads a lane from global memory,
 * contiguous across the warp, and decodes a step with a few LOP3s. The bytes are the
 * GGUF bytes rearranged (the same count: 16 rows x 2 blocks), so the weight does not grow.
 * Chunk (group G, chunk c) starts at byte (G * k/64 + c) * CB; it needs n % 16 == 0 and
 * k % 64 == 0.
 *
 * Lane l = 4 g + t owns rows g and g + 8 of the group and, in step s (0..3) of a chunk,
 * elements 16 s + 4 t .. + 3 (the k order the kernels' mma operands use, qdecode.cuh).
 * Its 32-bit code word for step s holds the 8 codes' low 4 bits as
 *   bits  0- 3: row g elem 0    16-19: row g elem 1     (one LOP3 -> half2 1024 + q)
 *   bits  4- 7: row g elem 2    20-23: row g elem 3     (one LOP3 -> half2 1024 + 16 q)
 *   bits  8-15 and 24-31: the same for row g + 8 (the word shifted right by 8)
 * 8-bit codes (stored as q + 128) are two words a step, row g then row g + 8, bytes in
 * element order; the steps 0-1 and 2-3 are the two 16-byte loads. The fifth bit of
 * element pair j of step s (j: 0 row g elems 0-1, 1 row g elems 2-3, 2 and 3 the same for
 * row g + 8) sits at bits 4 s + j and 4 s + j + 16 of qh. The scale halves of lane group g
 * are d(g, block 0), d(g + 8, block 0), d(g, block 1), d(g + 8, block 1). */
#ifndef WICK_CUDA_QPACK_CUH
#define WICK_CUDA_QPACK_CUH

#include <cuda_fp16.h>
#include <stdint.h>

namespace wkp {

constexpr int ROWS = 16, KC = 64; /* a chunk: 16 rows x 64 elements */

/* BITS 4, 5 or 8; ADD: the format has a minimum (w = d q + m); BIAS: subtracted from the
 * stored code (Q4_0: 8, Q5_0: 16, Q8_0: 128, else 0); GB: bytes of a GGUF block; the
 * GGUF block's fields: minimum at 2, fifth bits at QH_AT, codes at QS_AT. */
template <int BITS_, bool ADD_, int BIAS_, int GB_, int QH_AT_, int QS_AT_> struct fmt {
    static constexpr int BITS = BITS_, BIAS = BIAS_, GB = GB_, QH_AT = QH_AT_, QS_AT = QS_AT_;
    static constexpr bool ADD = ADD_;
    static constexpr int CODE = BITS == 8 ? 1024 : 512; /* code bytes of a chunk */
    static constexpr int QH = BITS == 5 ? 128 : 0;
    static constexpr int SCB = ADD ? 16 : 8; /* scale bytes of lane group g */
    static constexpr int CB = CODE + QH + 8 * SCB;
    static_assert(CB == 32 * GB, "a chunk holds the bytes of 32 GGUF blocks");
};
using q4_0 = fmt<4, false, 8, 18, 0, 2>;
using q4_1 = fmt<4, true, 0, 20, 0, 4>;
using q5_0 = fmt<5, false, 16, 22, 2, 6>;
using q5_1 = fmt<5, true, 0, 24, 4, 8>;
using q8_0 = fmt<8, false, 128, 34, 0, 2>;

/* A lane's part of one chunk, in registers. */
template <class P> struct frag {
    uint32_t w[P::BITS == 8 ? 8 : 4];
    uint32_t qh;
    uint32_t sc[P::ADD ? 4 : 2];
};

/* Weights are read once: not kept in L1; the L2 fetches whole 256-byte stretches. */
__device__ __forceinline__ uint4 ld_stream16(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
__device__ __forceinline__ uint2 ld_stream8(const void *p)
{
    uint2 v;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}
__device__ __forceinline__ uint32_t ld_stream4(const void *p)
{
    uint32_t v;
    asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

/* Lane (g, t)'s part of the chunk at ch. */
template <class P> __device__ __forceinline__ void load(const uint8_t *ch, int lane, frag<P> &f)
{
    const int g = lane >> 2;
    const uint4 a = ld_stream16(ch + 16 * lane);
    f.w[0] = a.x, f.w[1] = a.y, f.w[2] = a.z, f.w[3] = a.w;
    if constexpr (P::BITS == 8) {
        const uint4 b = ld_stream16(ch + 512 + 16 * lane);
        f.w[4] = b.x, f.w[5] = b.y, f.w[6] = b.z, f.w[7] = b.w;
    }
    if constexpr (P::BITS == 5) f.qh = ld_stream4(ch + P::CODE + 4 * lane);
    else f.qh = 0;
    const uint8_t *sc = ch + P::CODE + P::QH + g * P::SCB;
    if constexpr (P::ADD) {
        const uint4 s = ld_stream16(sc);
        f.sc[0] = s.x, f.sc[1] = s.y, f.sc[2] = s.z, f.sc[3] = s.w;
    } else {
        const uint2 s = ld_stream8(sc);
        f.sc[0] = s.x, f.sc[1] = s.y;
    }
}

__device__ __forceinline__ uint32_t lop_and_or(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); /* (a & b) | c */
    return d;
}
/* The fifth bits of pair j of step s moved to bit b (and b + 16); s, j and b are known
 * once the kernels' loops are unrolled. */
__device__ __forceinline__ uint32_t hbits(uint32_t qh, int s, int j, int b)
{
    const int q = 4 * s + j;
    return q >= b ? qh >> (q - b) : qh << (b - q);
}
__device__ __forceinline__ uint32_t h2u(__half2 h) { return *reinterpret_cast<uint32_t *>(&h); }
__device__ __forceinline__ __half2 u2h(uint32_t u) { return *reinterpret_cast<__half2 *>(&u); }

/* Step s's A operand (rows g, g + 8; elements 4t..4t+3 as the pairs (0,1), (2,3)) as
 * exact small integers: a0 = row g (0,1), a2 = row g (2,3), a1 / a3 the same for g + 8.
 * s must be known at compile time once loops are unrolled (it indexes registers). */
template <class P>
__device__ __forceinline__ void step(const frag<P> &f, int s, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                     uint32_t &a3)
{
    if constexpr (P::BITS == 8) {
        const __half2 off = __half2half2(__int2half_rn(1024 + P::BIAS));
        const uint32_t wg = f.w[2 * s], wh = f.w[2 * s + 1];
        a0 = h2u(__hsub2(u2h(__byte_perm(wg, 0x64646464u, 0x4140)), off));
        a2 = h2u(__hsub2(u2h(__byte_perm(wg, 0x64646464u, 0x4342)), off));
        a1 = h2u(__hsub2(u2h(__byte_perm(wh, 0x64646464u, 0x4140)), off));
        a3 = h2u(__hsub2(u2h(__byte_perm(wh, 0x64646464u, 0x4342)), off));
    } else {
        const uint32_t w = f.w[s], w8 = w >> 8;
        uint32_t l0 = lop_and_or(w, 0x000f000fu, 0x64006400u);
        uint32_t h0 = lop_and_or(w, 0x00f000f0u, 0x64006400u);
        uint32_t l1 = lop_and_or(w8, 0x000f000fu, 0x64006400u);
        uint32_t h1 = lop_and_or(w8, 0x00f000f0u, 0x64006400u);
        if constexpr (P::BITS == 5) {
            l0 = lop_and_or(hbits(f.qh, s, 0, 4), 0x00100010u, l0);
            h0 = lop_and_or(hbits(f.qh, s, 1, 8), 0x01000100u, h0);
            l1 = lop_and_or(hbits(f.qh, s, 2, 4), 0x00100010u, l1);
            h1 = lop_and_or(hbits(f.qh, s, 3, 8), 0x01000100u, h1);
        }
        /* l: 1024 + q; h: 1024 + 16 q, scaled by 1/16 (exact) to 64 + q. */
        const __half2 loff = __half2half2(__int2half_rn(1024 + P::BIAS));
        const __half2 sixteenth = __half2half2(__float2half_rn(0.0625f));
        const __half2 hoff = __half2half2(__int2half_rn(-(64 + P::BIAS)));
        a0 = h2u(__hsub2(u2h(l0), loff));
        a1 = h2u(__hsub2(u2h(l1), loff));
        a2 = h2u(__hfma2(u2h(h0), sixteenth, hoff));
        a3 = h2u(__hfma2(u2h(h1), sixteenth, hoff));
    }
}

/* Block b's scales (rows g, g + 8) and minimums. */
template <class P> __device__ __forceinline__ float2 scales(const frag<P> &f, int b)
{
    return __half22float2(u2h(f.sc[b]));
}
template <class P> __device__ __forceinline__ float2 mins(const frag<P> &f, int b)
{
    if constexpr (P::ADD) return __half22float2(u2h(f.sc[2 + b]));
    else return make_float2(0.f, 0.f);
}

/* ---- element access (packing, unpacking, tests): row rr (0..15) of a chunk, element e
 * (0..63) ---- */
__device__ __forceinline__ int lane_of(int rr, int e) { return 4 * (rr & 7) + ((e & 15) >> 2); }

/* The stored code (low BITS bits; the fifth bit included for 5-bit formats). */
template <class P> __device__ __forceinline__ int code_at(const uint8_t *ch, int rr, int e)
{
    const int s = e >> 4, i = e & 3, up = rr >> 3, lane = lane_of(rr, e);
    if constexpr (P::BITS == 8) {
        return ch[512 * (s >> 1) + 16 * lane + 4 * (2 * (s & 1) + up) + i];
    } else {
        const uint32_t w = *reinterpret_cast<const uint32_t *>(ch + 16 * lane + 4 * s);
        const int pos = (i & 1) * 16 + (i >> 1) * 4 + up * 8;
        int q = (int)((w >> pos) & 15u);
        if constexpr (P::BITS == 5) {
            const uint32_t qh = *reinterpret_cast<const uint32_t *>(ch + P::CODE + 4 * lane);
            const int j = (i >> 1) + 2 * up;
            q |= (int)((qh >> (4 * s + j + 16 * (i & 1))) & 1u) << 4;
        }
        return q;
    }
}
/* Where block b's d (m: + 8 bytes) of row rr lies. */
template <class P> __device__ __forceinline__ int scale_off(int rr, int b)
{
    return P::CODE + P::QH + (rr & 7) * P::SCB + 2 * (2 * b + (rr >> 3));
}

} // namespace wkp

#endif
