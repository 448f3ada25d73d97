/* Internal (CUDA): the packed GPU layout of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K to Q6_K
 * weights, made once when a weight is uploaded (pack.cu), and the reading of F16 rows by
 * the same kernels.
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
 * Chunk (group G, chunk c) starts at byte (G * k/KC + c) * CB; it needs n % 16 == 0 and
 * k % KC == 0. The K formats' chunks are 16 rows x 256 elements (one super-block a row, 16
 * steps): codes first (kcodes below: nibbles as above, or 2-bit codes two steps a word,
 * then any high bits), then the rows' scales as the file has them, rows g and g + 8 side
 * by side.
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

#include "wick/common.h"

namespace wkp {

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
/* Where a fragment is loaded from: global memory, streamed (the matrix-vector kernel,
 * packing), or shared memory (the many-row kernel stages chunks there). */
struct from_global {
    __device__ static __forceinline__ uint4 ld16(const uint8_t *p) { return ld_stream16(p); }
    __device__ static __forceinline__ uint2 ld8(const uint8_t *p) { return ld_stream8(p); }
    __device__ static __forceinline__ uint32_t ld4(const uint8_t *p) { return ld_stream4(p); }
};
struct from_shared {
    __device__ static __forceinline__ uint4 ld16(const uint8_t *p) { return *reinterpret_cast<const uint4 *>(p); }
    __device__ static __forceinline__ uint2 ld8(const uint8_t *p) { return *reinterpret_cast<const uint2 *>(p); }
    __device__ static __forceinline__ uint32_t ld4(const uint8_t *p) { return *reinterpret_cast<const uint32_t *>(p); }
};
template <class R = from_global> __device__ __forceinline__ void ld4(const uint8_t *p, uint32_t *w)
{
    const uint4 a = R::ld16(p);
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w;
}

__device__ __forceinline__ uint32_t lop_and_or(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); /* (a & b) | c */
    return d;
}
/* Shift left by a (negative: right), a known once the loops are unrolled. */
__device__ __forceinline__ uint32_t shl(uint32_t v, int a) { return a >= 0 ? v << a : v >> -a; }
__device__ __forceinline__ uint32_t h2u(__half2 h) { return *reinterpret_cast<uint32_t *>(&h); }
__device__ __forceinline__ __half2 u2h(uint32_t u) { return *reinterpret_cast<__half2 *>(&u); }
__device__ __forceinline__ float lo_half(uint32_t u) { return __half2float(__ushort_as_half((unsigned short)u)); }
__device__ __forceinline__ float hi_half(uint32_t u) { return __half2float(__ushort_as_half((unsigned short)(u >> 16))); }

/* A step's nibble word (bits as the header says) as the four half2 of 1024 + q (l) and
 * 1024 + 16 q (h), rows g (l0, h0) and g + 8 (l1, h1); hb: bits ORed into them first. */
struct nib4 {
    uint32_t l0, h0, l1, h1;
};
__device__ __forceinline__ nib4 nibbles(uint32_t w)
{
    const uint32_t w8 = w >> 8;
    return {lop_and_or(w, 0x000f000fu, 0x64006400u), lop_and_or(w, 0x00f000f0u, 0x64006400u),
            lop_and_or(w8, 0x000f000fu, 0x64006400u), lop_and_or(w8, 0x00f000f0u, 0x64006400u)};
}
/* The exact integers q - bias: l - (1024 + bias); h / 16 - (64 + bias) (exact). */
__device__ __forceinline__ void finish_nibbles(const nib4 &n, int bias, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                               uint32_t &a3)
{
    const __half2 loff = __half2half2(__int2half_rn(1024 + bias));
    const __half2 sixteenth = __half2half2(__float2half_rn(0.0625f));
    const __half2 hoff = __half2half2(__int2half_rn(-(64 + bias)));
    a0 = h2u(__hsub2(u2h(n.l0), loff));
    a1 = h2u(__hsub2(u2h(n.l1), loff));
    a2 = h2u(__hfma2(u2h(n.h0), sixteenth, hoff));
    a3 = h2u(__hfma2(u2h(n.h1), sixteenth, hoff));
}

/* A step's 2-bit codes as nib4: word w holds steps 2u and 2u + 1, each code in bits 0-1
 * (step 2u) or 2-3 (step 2u + 1) of the 4-bit slot a nibble word gives its element. */
__device__ __forceinline__ nib4 crumbs(uint32_t w, int s)
{
    const uint32_t v = w >> (2 * (s & 1)), v8 = v >> 8;
    return {lop_and_or(v, 0x00030003u, 0x64006400u), lop_and_or(v, 0x00300030u, 0x64006400u),
            lop_and_or(v8, 0x00030003u, 0x64006400u), lop_and_or(v8, 0x00300030u, 0x64006400u)};
}
/* One more bit of each code, from a qh word (pair j of step s, 0..3, at bit 4 s + j and its
 * second element 16 bits up), ORed in as bit B of the l forms and bit B + 4 of the h forms. */
template <int B> __device__ __forceinline__ void or_high_bit(nib4 &n, uint32_t qh, int s)
{
    const uint32_t ml = 0x00010001u << B, mh = 0x00010001u << (B + 4);
    n.l0 = lop_and_or(shl(qh, B - 4 * s), ml, n.l0);
    n.h0 = lop_and_or(shl(qh, B + 4 - (4 * s + 1)), mh, n.h0);
    n.l1 = lop_and_or(shl(qh, B - (4 * s + 2)), ml, n.l1);
    n.h1 = lop_and_or(shl(qh, B + 4 - (4 * s + 3)), mh, n.h1);
}

/* Where element i (0..3) of row half up (0: g, 1: g + 8) sits in a step's nibble word. */
__device__ __forceinline__ int nib_pos(int i, int up) { return (i & 1) * 16 + (i >> 1) * 4 + up * 8; }
/* Where the fifth bit of element i of row half up in step s sits in a lane's qh word:
 * pair j = i / 2 + 2 up at bit 4 s + j, its second element 16 bits up. */
__device__ __forceinline__ int qh_pos(int s, int i, int up) { return 4 * s + (i >> 1) + 2 * up + 16 * (i & 1); }
/* The lane that holds row rr (0..15) and element e of a chunk row. */
__device__ __forceinline__ int lane_of(int rr, int e) { return 4 * (rr & 7) + ((e & 15) >> 2); }
/* Word s of the nibble region (4 steps a 512-byte quarter) of lane `lane`. */
__device__ __forceinline__ int nib_word_at(int lane, int s) { return 512 * (s >> 2) + 16 * lane + 4 * (s & 3); }
__device__ __forceinline__ uint32_t rd32(const uint8_t *p) { return *reinterpret_cast<const uint32_t *>(p); }

/* Where lane quad t finds its 4 inputs of step s in a chunk (the k order above): element
 * x_at(s) + X_LANE t. Every packed format reads its chunk this way; F16 rows (below) have
 * their own order. ROWS: the format is read from a weight's rows, not from packed chunks. */
struct packed_order {
    static constexpr bool ROWS = false;
    static constexpr int X_LANE = 4;
    __host__ __device__ static constexpr int x_at(int s) { return 16 * s; }
};

/* ---- the 32-element formats: a chunk is 64 elements (two blocks a row, 4 steps) ----
 * BITS 4, 5 or 8; HAS_MIN: the format has a minimum (w = d q + m); BIAS: subtracted from
 * the stored code (Q4_0: 8, Q5_0: 16, Q8_0: 128, else 0); GB: bytes of a GGUF block; the
 * GGUF block's fields: minimum at 2, fifth bits at QH_AT, codes at QS_AT. */
template <int BITS_, bool ADD_, int BIAS_, int GB_, int QH_AT_, int QS_AT_> struct blk32 : packed_order {
    static constexpr int BITS = BITS_, BIAS = BIAS_, GB = GB_, QH_AT = QH_AT_, QS_AT = QS_AT_;
    static constexpr bool ADD = ADD_;
    static constexpr int KC = 64, NS = 4, SG = 2; /* elements, steps, steps a scale */
    static constexpr int CODE = BITS == 8 ? 1024 : 512; /* code bytes of a chunk */
    static constexpr int QH = BITS == 5 ? 128 : 0;
    static constexpr int SCB = ADD ? 16 : 8; /* scale bytes of lane group g */
    static constexpr int CB = CODE + QH + 8 * SCB;
    static_assert(CB == 32 * GB, "a chunk holds the bytes of 32 GGUF blocks");

    struct frag {
        uint32_t w[BITS == 8 ? 8 : 4];
        uint32_t qh;
        uint32_t sc[ADD ? 4 : 2];
    };
    template <class R = from_global> __device__ static __forceinline__ void load(const uint8_t *ch, int lane, frag &f)
    {
        ld4<R>(ch + 16 * lane, f.w);
        if constexpr (BITS == 8) ld4<R>(ch + 512 + 16 * lane, f.w + 4);
        if constexpr (BITS == 5) f.qh = R::ld4(ch + CODE + 4 * lane);
        else f.qh = 0;
        const uint8_t *sc = ch + CODE + QH + (lane >> 2) * SCB;
        if constexpr (ADD) {
            ld4<R>(sc, f.sc);
        } else {
            const uint2 v = R::ld8(sc);
            f.sc[0] = v.x, f.sc[1] = v.y;
        }
    }
    /* Step s's A operand (rows g, g + 8; elements 4t..4t+3 as the pairs (0,1), (2,3)) as
     * exact small integers: a0 = row g (0,1), a2 = row g (2,3), a1 / a3 the same for
     * g + 8. s is known once loops are unrolled (it indexes registers). */
    __device__ static __forceinline__ void step(const frag &f, int s, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                                uint32_t &a3)
    {
        if constexpr (BITS == 8) {
            const __half2 off = __half2half2(__int2half_rn(1024 + BIAS));
            const uint32_t wg = f.w[2 * s], wh = f.w[2 * s + 1];
            a0 = h2u(__hsub2(u2h(__byte_perm(wg, 0x64646464u, 0x4140)), off));
            a2 = h2u(__hsub2(u2h(__byte_perm(wg, 0x64646464u, 0x4342)), off));
            a1 = h2u(__hsub2(u2h(__byte_perm(wh, 0x64646464u, 0x4140)), off));
            a3 = h2u(__hsub2(u2h(__byte_perm(wh, 0x64646464u, 0x4342)), off));
        } else {
            nib4 n = nibbles(f.w[s]);
            if constexpr (BITS == 5) or_high_bit<4>(n, f.qh, s);
            finish_nibbles(n, BIAS, a0, a1, a2, a3);
        }
    }
    /* Block b's scales (rows g, g + 8) and additive terms (the minimums). */
    __device__ static __forceinline__ float2 scale(const frag &f, int b) { return __half22float2(u2h(f.sc[b])); }
    __device__ static __forceinline__ float2 add(const frag &f, int b)
    {
        if constexpr (ADD) return __half22float2(u2h(f.sc[2 + b]));
        else return make_float2(0.f, 0.f);
    }

    /* Element access (packing, unpacking): the stored code (q + BIAS, fifth bit included)
     * of row rr (0..15), element e (0..63) of a chunk; where block b's d of row rr lies
     * (its minimum: 8 bytes on). */
    __device__ static __forceinline__ int code_at(const uint8_t *ch, int rr, int e)
    {
        const int s = e >> 4, i = e & 3, up = rr >> 3, lane = lane_of(rr, e);
        if constexpr (BITS == 8) {
            return ch[512 * (s >> 1) + 16 * lane + 4 * (2 * (s & 1) + up) + i];
        } else {
            int q = (int)((rd32(ch + 16 * lane + 4 * s) >> nib_pos(i, up)) & 15u);
            if constexpr (BITS == 5) q |= (int)((rd32(ch + CODE + 4 * lane) >> qh_pos(s, i, up)) & 1u) << 4;
            return q;
        }
    }
    __device__ static __forceinline__ int scale_off(int rr, int b)
    {
        return CODE + QH + (rr & 7) * SCB + 2 * (2 * b + (rr >> 3));
    }
};
using q4_0 = blk32<4, false, 8, 18, 0, 2>;
using q4_1 = blk32<4, true, 0, 20, 0, 4>;
using q5_0 = blk32<5, false, 16, 22, 2, 6>;
using q5_1 = blk32<5, true, 0, 24, 4, 8>;
using q8_0 = blk32<8, false, 128, 34, 0, 2>;

/* ---- F16 weights read in their rows (no packed layout: the rows are what cuBLAS takes
 * for many input rows and the dense forms). A chunk is 16 rows x 64 halves; lane (g, t)
 * loads 16 contiguous bytes at 16 t and at 64 + 16 t of rows g and g + 8 (each warp load
 * covers whole 64-byte stretches of 8 rows), so that in step s it holds elements
 * 32 (s / 2) + 8 t + 4 (s % 2) .. + 3 of both rows: its A operand as it is, nothing to
 * decode, a scale of 1. The input is read in the same order (x_at, X_LANE). ---- */
struct f16_rows {
    static constexpr bool ROWS = true;
    static constexpr int X_LANE = 8;
    __host__ __device__ static constexpr int x_at(int s) { return 32 * (s >> 1) + 4 * (s & 1); }
    static constexpr bool ADD = false;
    static constexpr int KC = 64, NS = 4, SG = 4;
    static constexpr int CB = 128; /* bytes of a chunk's row */
    struct frag {
        uint32_t w[16]; /* row g: bytes 16 t .., 64 + 16 t ..; then row g + 8's */
    };
    /* ch: the chunk's first row; rb: bytes a row. */
    __device__ static __forceinline__ void load(const uint8_t *ch, size_t rb, int lane, frag &f)
    {
        const uint8_t *r0 = ch + (size_t)(lane >> 2) * rb + 16 * (lane & 3), *r1 = r0 + 8 * rb;
        ld4(r0, f.w), ld4(r0 + 64, f.w + 4), ld4(r1, f.w + 8), ld4(r1 + 64, f.w + 12);
    }
    __device__ static __forceinline__ void step(const frag &f, int s, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                                uint32_t &a3)
    {
        const int b = 4 * (s >> 1) + 2 * (s & 1);
        a0 = f.w[b], a2 = f.w[b + 1], a1 = f.w[8 + b], a3 = f.w[8 + b + 1];
    }
    __device__ static __forceinline__ float2 scale(const frag &, int) { return make_float2(1.f, 1.f); }
    __device__ static __forceinline__ float2 add(const frag &, int) { return make_float2(0.f, 0.f); }
};

/* ---- the K formats: a chunk is one super-block a row (256 elements, 16 steps) ----
 * Where a chunk keeps its codes: the low LOW bits (4: one nibble word a step, as above;
 * 2: steps 2u and 2u + 1 in word u, each code in bits 0-1 or 2-3 of its element's 4-bit
 * slot), then HIGH more bits of each code from byte HI (2: as the 2-bit low codes; 1: qh
 * words of 4 steps each, bit qh_pos as the 5-bit formats'). A lane's words of a region lie
 * 16 bytes each 512 (nib_word_at), so that it loads them with 16-byte loads. */
template <int LOW, int HIGH, int HI> struct kcodes {
    static constexpr int LOW_BITS = LOW, HIGH_BITS = HIGH, LOW_WORDS = 4 * LOW, HIGH_WORDS = 4 * HIGH;
    __device__ static __forceinline__ int lo_word(int s) { return LOW == 4 ? s : s >> 1; }
    __device__ static __forceinline__ int lo_bit(int s, int i, int up) { return nib_pos(i, up) + (LOW == 4 ? 0 : 2 * (s & 1)); }
    __device__ static __forceinline__ int hi_word(int s) { return HIGH == 2 ? s >> 1 : s >> 2; }
    __device__ static __forceinline__ int hi_bit(int s, int i, int up)
    {
        return HIGH == 2 ? nib_pos(i, up) + 2 * (s & 1) : qh_pos(s & 3, i, up);
    }
    __device__ static __forceinline__ int lo_off(int lane, int w) { return nib_word_at(lane, w); }
    __device__ static __forceinline__ int hi_off(int lane, int w) { return HIGH == 2 ? HI + nib_word_at(lane, w) : HI + 16 * lane + 4 * w; }
    /* A lane's code words of a chunk. */
    template <class R> __device__ static __forceinline__ void load(const uint8_t *ch, int lane, uint32_t *lo, uint32_t *hi)
    {
#pragma unroll
        for (int q = 0; q < LOW; q++) ld4<R>(ch + 512 * q + 16 * lane, lo + 4 * q);
#pragma unroll
        for (int q = 0; q < HIGH; q++) ld4<R>(ch + HI + 512 * q + 16 * lane, hi + 4 * q);
    }
    /* Step s's codes as nib4, bit LOW + 1 and up included. */
    __device__ static __forceinline__ nib4 codes(const uint32_t *lo, const uint32_t *hi, int s)
    {
        nib4 n = LOW == 4 ? nibbles(lo[s]) : crumbs(lo[s >> 1], s);
        if constexpr (HIGH == 1) or_high_bit<LOW>(n, hi[s >> 2], s & 3);
        if constexpr (HIGH == 2) {
            static_assert(LOW == 4, "two high bits sit above nibbles");
            /* The high 2 bits sit in the low bits' slots (+ 2 for odd steps): to bits 4-5
             * of the l forms and 8-9 of the h forms. */
            const uint32_t hw = hi[s >> 1], o = 2 * (s & 1);
            const uint32_t up = shl(hw, 4 - (int)o), dn = shl(hw, -4 - (int)o);
            n.l0 = lop_and_or(up, 0x00300030u, n.l0);
            n.h0 = lop_and_or(up, 0x03000300u, n.h0);
            n.l1 = lop_and_or(dn, 0x00300030u, n.l1);
            n.h1 = lop_and_or(dn, 0x03000300u, n.h1);
        }
        return n;
    }
    /* The stored code of row rr (0..15), element e (0..255) of a chunk. */
    __device__ static __forceinline__ int code_at(const uint8_t *ch, int rr, int e)
    {
        const int s = e >> 4, i = e & 3, up = rr >> 3, lane = lane_of(rr, e);
        int q = (int)((rd32(ch + lo_off(lane, lo_word(s))) >> lo_bit(s, i, up)) & ((1u << LOW) - 1));
        if constexpr (HIGH > 0)
            q |= (int)((rd32(ch + hi_off(lane, hi_word(s))) >> hi_bit(s, i, up)) & ((1u << HIGH) - 1)) << LOW;
        return q;
    }
};

/* What every K format shares: its chunk's size and steps, and its codes C (code_at). */
template <class C_, bool ADD_, int SG_, int GB_> struct kformat : packed_order {
    using C = C_;
    static constexpr bool ADD = ADD_;
    static constexpr int KC = 256, NS = 16, SG = SG_, GB = GB_, CB = 16 * GB;
    __device__ static __forceinline__ int code_at(const uint8_t *ch, int rr, int e) { return C::code_at(ch, rr, e); }
};

/* Q4_K and Q5_K (8 sub-blocks of 32 with 6-bit scales and minimums, w = d sc q - dmin m):
 * the codes, then each row's 16 header bytes (d, dmin, the 12 bytes of scales and
 * minimums) as in the file, rows g and g + 8 side by side. */
template <int HIGH, class B = kformat<kcodes<4, HIGH, 2048>, true, 2, HIGH ? 176 : 144>> struct kmin : B {
    using typename B::C;
    static constexpr int HDR = 2048 + 512 * HIGH; /* the rows' headers */
    struct frag {
        uint32_t w[16];
        uint32_t qh[HIGH ? 4 : 1];
        uint32_t h[8]; /* row g's 16 header bytes, then row g + 8's */
    };
    template <class R = from_global> __device__ static __forceinline__ void load(const uint8_t *ch, int lane, frag &f)
    {
        C::template load<R>(ch, lane, f.w, f.qh);
        ld4<R>(ch + HDR + 32 * (lane >> 2), f.h);
        ld4<R>(ch + HDR + 32 * (lane >> 2) + 16, f.h + 4);
    }
    __device__ static __forceinline__ void step(const frag &f, int s, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                                uint32_t &a3)
    {
        finish_nibbles(C::codes(f.w, f.qh, s), 0, a0, a1, a2, a3);
    }
    /* Sub-block j's 6-bit scale and minimum of a header (words 1-3: the 12 bytes). */
    __device__ static __forceinline__ void sc_min(const uint32_t *h, int j, int &sc, int &mn)
    {
        if (j < 4) {
            sc = (int)((h[1] >> (8 * j)) & 63u);
            mn = (int)((h[2] >> (8 * j)) & 63u);
        } else {
            const int b = 8 * (j - 4);
            sc = (int)(((h[3] >> b) & 15u) | ((h[1] >> (b + 6)) & 3u) << 4);
            mn = (int)(((h[3] >> (b + 4)) & 15u) | ((h[2] >> (b + 6)) & 3u) << 4);
        }
    }
    __device__ static __forceinline__ float2 scale(const frag &f, int j)
    {
        int s0, m0, s1, m1;
        sc_min(f.h, j, s0, m0);
        sc_min(f.h + 4, j, s1, m1);
        return make_float2(lo_half(f.h[0]) * (float)s0, lo_half(f.h[4]) * (float)s1);
    }
    __device__ static __forceinline__ float2 add(const frag &f, int j)
    {
        int s0, m0, s1, m1;
        sc_min(f.h, j, s0, m0);
        sc_min(f.h + 4, j, s1, m1);
        return make_float2(-hi_half(f.h[0]) * (float)m0, -hi_half(f.h[4]) * (float)m1);
    }
};
struct q4_K : kmin<0> {};
struct q5_K : kmin<1> {};

/* ---- Q6_K: 6-bit codes less 32, a scale a step (w = d sc q): the low 4 bits, the high 2,
 * then the rows' 16 int8 scales (rows g, g + 8 side by side) and their d (d(g), d(g + 8)
 * at 4 g) ---- */
struct q6_K : kformat<kcodes<4, 2, 2048>, false, 1, 210> {
    static constexpr int SC = 3072, D = 3328;
    struct frag {
        uint32_t w[16];
        uint32_t hi[8];
        uint32_t sc[8]; /* row g's 16 int8 scales, then row g + 8's */
        uint32_t d;     /* d(g), d(g + 8) */
    };
    template <class R = from_global> __device__ static __forceinline__ void load(const uint8_t *ch, int lane, frag &f)
    {
        C::template load<R>(ch, lane, f.w, f.hi);
        ld4<R>(ch + SC + 32 * (lane >> 2), f.sc);
        ld4<R>(ch + SC + 32 * (lane >> 2) + 16, f.sc + 4);
        f.d = R::ld4(ch + D + 4 * (lane >> 2));
    }
    __device__ static __forceinline__ void step(const frag &f, int s, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                                uint32_t &a3)
    {
        finish_nibbles(C::codes(f.w, f.hi, s), 32, a0, a1, a2, a3);
    }
    __device__ static __forceinline__ float2 scale(const frag &f, int s)
    {
        const int s0 = (int)(int8_t)(f.sc[s >> 2] >> (8 * (s & 3)));
        const int s1 = (int)(int8_t)(f.sc[4 + (s >> 2)] >> (8 * (s & 3)));
        return make_float2(lo_half(f.d) * (float)s0, hi_half(f.d) * (float)s1);
    }
    __device__ static __forceinline__ float2 add(const frag &, int) { return make_float2(0.f, 0.f); }
};

/* ---- Q2_K: 2-bit codes, a 4-bit scale and minimum a step (w = d sc q - dmin m): the
 * codes, the rows' 16 scale bytes (rows g, g + 8 side by side), then d, dmin of row g and
 * of row g + 8 at 8 g ---- */
struct q2_K : kformat<kcodes<2, 0, 0>, true, 1, 84> {
    static constexpr int SC = 1024, D = 1280;
    struct frag {
        uint32_t w[8];
        uint32_t sc[8]; /* row g's 16 scale bytes, then row g + 8's */
        uint32_t dm[2]; /* d, dmin of row g; of row g + 8 */
    };
    template <class R = from_global> __device__ static __forceinline__ void load(const uint8_t *ch, int lane, frag &f)
    {
        C::template load<R>(ch, lane, f.w, nullptr);
        ld4<R>(ch + SC + 32 * (lane >> 2), f.sc);
        ld4<R>(ch + SC + 32 * (lane >> 2) + 16, f.sc + 4);
        const uint2 v = R::ld8(ch + D + 8 * (lane >> 2));
        f.dm[0] = v.x, f.dm[1] = v.y;
    }
    __device__ static __forceinline__ void step(const frag &f, int s, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                                uint32_t &a3)
    {
        finish_nibbles(C::codes(f.w, nullptr, s), 0, a0, a1, a2, a3);
    }
    __device__ static __forceinline__ int sc_byte(const frag &f, int up, int s) { return (int)((f.sc[4 * up + (s >> 2)] >> (8 * (s & 3))) & 255u); }
    __device__ static __forceinline__ float2 scale(const frag &f, int s)
    {
        return make_float2(lo_half(f.dm[0]) * (float)(sc_byte(f, 0, s) & 15),
                           lo_half(f.dm[1]) * (float)(sc_byte(f, 1, s) & 15));
    }
    __device__ static __forceinline__ float2 add(const frag &f, int s)
    {
        return make_float2(-hi_half(f.dm[0]) * (float)(sc_byte(f, 0, s) >> 4),
                           -hi_half(f.dm[1]) * (float)(sc_byte(f, 1, s) >> 4));
    }
};

/* ---- Q3_K: 3-bit codes less 4, a 6-bit scale less 32 a step (w = d (sc - 32) (q - 4)):
 * the low 2 bits, the third bits, the rows' 12 scale bytes as in the file (rows g, g + 8
 * side by side, 24 bytes at 24 g), then d(g), d(g + 8) at 4 g ---- */
struct q3_K : kformat<kcodes<2, 1, 1024>, false, 1, 110> {
    static constexpr int SC = 1536, D = 1728;
    struct frag {
        uint32_t w[8];
        uint32_t qh[4];
        uint32_t sc[6]; /* row g's 12 scale bytes, then row g + 8's */
        uint32_t d;     /* d(g), d(g + 8) */
    };
    template <class R = from_global> __device__ static __forceinline__ void load(const uint8_t *ch, int lane, frag &f)
    {
        C::template load<R>(ch, lane, f.w, f.qh);
#pragma unroll
        for (int q = 0; q < 3; q++) {
            const uint2 v = R::ld8(ch + SC + 24 * (lane >> 2) + 8 * q);
            f.sc[2 * q] = v.x, f.sc[2 * q + 1] = v.y;
        }
        f.d = R::ld4(ch + D + 4 * (lane >> 2));
    }
    __device__ static __forceinline__ void step(const frag &f, int s, uint32_t &a0, uint32_t &a1, uint32_t &a2,
                                                uint32_t &a3)
    {
        finish_nibbles(C::codes(f.w, f.qh, s), 4, a0, a1, a2, a3);
    }
    /* Scale s (0..15) of a row's 12 bytes b: the low 4 bits in b[s % 8] (high nibble from
     * s = 8), the high 2 in b[8 + s % 4] (bits 2 (s / 4) up). */
    __device__ static __forceinline__ int sc6(const uint32_t *b, int s)
    {
        const int lo = (int)((b[(s & 7) >> 2] >> (8 * (s & 3) + 4 * (s >> 3))) & 15u);
        const int hi = (int)((b[2] >> (8 * (s & 3) + 2 * (s >> 2))) & 3u);
        return (lo | hi << 4) - 32;
    }
    __device__ static __forceinline__ float2 scale(const frag &f, int s)
    {
        return make_float2(lo_half(f.d) * (float)sc6(f.sc, s), hi_half(f.d) * (float)sc6(f.sc + 3, s));
    }
    __device__ static __forceinline__ float2 add(const frag &, int) { return make_float2(0.f, 0.f); }
};

/* f(P{}) for the packed format P of type t, which must be packable
 * (wk_cuda_pack_supports): the one place a type id becomes a format. */
template <class F> auto with_format(wk_type t, F &&f)
{
    switch (t) {
    case WK_TYPE_Q4_0: return f(q4_0{});
    case WK_TYPE_Q4_1: return f(q4_1{});
    case WK_TYPE_Q5_0: return f(q5_0{});
    case WK_TYPE_Q5_1: return f(q5_1{});
    case WK_TYPE_Q2_K: return f(q2_K{});
    case WK_TYPE_Q3_K: return f(q3_K{});
    case WK_TYPE_Q4_K: return f(q4_K{});
    case WK_TYPE_Q5_K: return f(q5_K{});
    case WK_TYPE_Q6_K: return f(q6_K{});
    default: return f(q8_0{});
    }
}

} // namespace wkp

#endif
