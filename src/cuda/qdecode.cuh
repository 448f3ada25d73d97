/* Internal (CUDA): how each weight format is read by the tensor-core kernels.
 *
 * Every format is cut into "steps" of 16 elements. For step s of a block, lane quad
 * t (0..3) of a warp owns the 4 consecutive elements 16 s + 4 t .. +3. A format's
 * step() returns those four quantized values as two half2 registers holding small
 * integers (exact in f16), and the step's scale and additive term, so that
 *     w[16 s + 4 t + i] = scale * q[i] + add.
 * The kernels multiply the integers on the tensor cores and apply scale and add in
 * f32 afterwards, so the weights enter the product exactly. SG consecutive steps share one
 * scale and additive term, so a kernel may apply them once per SG steps. */
#ifndef WICK_CUDA_QDECODE_CUH
#define WICK_CUDA_QDECODE_CUH

#include <cuda_fp16.h>
#include <stdint.h>

namespace wkq {

/* Plain loads: the kernels decode blocks that were first staged in shared memory. */
/* A 32-bit word from an address that is only 2-byte aligned. */
__device__ __forceinline__ uint32_t ld32_a2(const uint8_t *p)
{
    const uint16_t *h = reinterpret_cast<const uint16_t *>(p);
    return (uint32_t)h[0] | ((uint32_t)h[1] << 16);
}
__device__ __forceinline__ uint32_t ld32_a4(const uint8_t *p)
{
    return *reinterpret_cast<const uint32_t *>(p);
}
__device__ __forceinline__ float ldhalf(const uint8_t *p)
{
    return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short *>(p)));
}
/* Bits 0..3 of x moved to bit 0 of bytes 0..3. */
__device__ __forceinline__ uint32_t spread4(uint32_t x) { return (x * 0x00204081u) & 0x01010101u; }

/* Four biased bytes (each < 256) to two half2 of (byte - bias), exactly. */
__device__ __forceinline__ void bytes_to_h2(uint32_t v, int bias, uint32_t &h01, uint32_t &h23)
{
    uint32_t a = __byte_perm(v, 0x64646464u, 0x4140);
    uint32_t b = __byte_perm(v, 0x64646464u, 0x4342);
    __half2 off = __half2half2(__int2half_rn(1024 + bias));
    __half2 ra = __hsub2(*reinterpret_cast<__half2 *>(&a), off);
    __half2 rb = __hsub2(*reinterpret_cast<__half2 *>(&b), off);
    h01 = *reinterpret_cast<uint32_t *>(&ra);
    h23 = *reinterpret_cast<uint32_t *>(&rb);
}

struct q4_0 {
    static constexpr int SG = 2;
    static constexpr int QK = 32, BYTES = 18, S = 2;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        uint32_t w = ld32_a2(b + 2 + 4 * t);
        bytes_to_h2(s ? (w >> 4) & 0x0F0F0F0Fu : w & 0x0F0F0F0Fu, 8, h01, h23);
        scale = ldhalf(b);
        add = 0.f;
    }
};
struct q4_1 {
    static constexpr int SG = 2;
    static constexpr int QK = 32, BYTES = 20, S = 2;
    static constexpr bool ADD = true;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        uint32_t w = ld32_a4(b + 4 + 4 * t);
        bytes_to_h2(s ? (w >> 4) & 0x0F0F0F0Fu : w & 0x0F0F0F0Fu, 0, h01, h23);
        scale = ldhalf(b);
        add = ldhalf(b + 2);
    }
};
struct q5_0 {
    static constexpr int SG = 2;
    static constexpr int QK = 32, BYTES = 22, S = 2;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        uint32_t qh = ld32_a2(b + 2);
        uint32_t w = ld32_a2(b + 6 + 4 * t);
        uint32_t v = s ? (w >> 4) & 0x0F0F0F0Fu : w & 0x0F0F0F0Fu;
        v |= spread4((qh >> (16 * s + 4 * t)) & 0xFu) << 4;
        bytes_to_h2(v, 16, h01, h23);
        scale = ldhalf(b);
        add = 0.f;
    }
};
struct q5_1 {
    static constexpr int SG = 2;
    static constexpr int QK = 32, BYTES = 24, S = 2;
    static constexpr bool ADD = true;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        uint32_t qh = ld32_a4(b + 4);
        uint32_t w = ld32_a4(b + 8 + 4 * t);
        uint32_t v = s ? (w >> 4) & 0x0F0F0F0Fu : w & 0x0F0F0F0Fu;
        v |= spread4((qh >> (16 * s + 4 * t)) & 0xFu) << 4;
        bytes_to_h2(v, 0, h01, h23);
        scale = ldhalf(b);
        add = ldhalf(b + 2);
    }
};
struct q8_0 {
    static constexpr int SG = 2;
    static constexpr int QK = 32, BYTES = 34, S = 2;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        bytes_to_h2(ld32_a2(b + 2 + 16 * s + 4 * t) ^ 0x80808080u, 128, h01, h23);
        scale = ldhalf(b);
        add = 0.f;
    }
};
struct q8_1 {
    static constexpr int SG = 2;
    static constexpr int QK = 32, BYTES = 36, S = 2;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        bytes_to_h2(ld32_a4(b + 4 + 16 * s + 4 * t) ^ 0x80808080u, 128, h01, h23);
        scale = ldhalf(b);
        add = 0.f;
    }
};
/* K formats: 256 elements; step s covers elements 16 s .. 16 s + 15. */
struct q2_K {
    static constexpr int SG = 1;
    static constexpr int QK = 256, BYTES = 84, S = 16;
    static constexpr bool ADD = true;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        int n = s >> 3, j = (s >> 1) & 3, h = s & 1;
        uint32_t w = ld32_a4(b + 16 + 32 * n + 16 * h + 4 * t);
        bytes_to_h2((w >> (2 * j)) & 0x03030303u, 0, h01, h23);
        uint32_t sc = b[s];
        scale = ldhalf(b + 80) * (float)(sc & 0xF);
        add = -ldhalf(b + 82) * (float)(sc >> 4);
    }
};
struct q3_K {
    static constexpr int SG = 1;
    static constexpr int QK = 256, BYTES = 110, S = 16;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        int n = s >> 3, j = (s >> 1) & 3, h = s & 1;
        uint32_t w = (ld32_a2(b + 32 + 32 * n + 16 * h + 4 * t) >> (2 * j)) & 0x03030303u;
        uint32_t hm = (ld32_a2(b + 16 * h + 4 * t) >> (4 * n + j)) & 0x01010101u;
        bytes_to_h2(w | (hm << 2), 4, h01, h23);
        const uint8_t *sc = b + 96;
        int lo = s < 8 ? (sc[s] & 0xF) : (sc[s - 8] >> 4);
        int hi = (sc[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
        scale = ldhalf(b + 108) * (float)((lo | (hi << 4)) - 32);
        add = 0.f;
    }
};
__device__ __forceinline__ void k4_scale_min(const uint8_t *q, int j, int &sc, int &mn)
{
    if (j < 4) {
        sc = q[j] & 63;
        mn = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}
struct q4_K {
    static constexpr int SG = 2;
    static constexpr int QK = 256, BYTES = 144, S = 16;
    static constexpr bool ADD = true;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        int c = s >> 2, hi = (s >> 1) & 1, half = s & 1;
        uint32_t w = ld32_a4(b + 16 + 32 * c + 16 * half + 4 * t);
        bytes_to_h2(hi ? (w >> 4) & 0x0F0F0F0Fu : w & 0x0F0F0F0Fu, 0, h01, h23);
        int sc, mn;
        k4_scale_min(b + 4, s >> 1, sc, mn);
        scale = ldhalf(b) * (float)sc;
        add = -ldhalf(b + 2) * (float)mn;
    }
};
struct q5_K {
    static constexpr int SG = 2;
    static constexpr int QK = 256, BYTES = 176, S = 16;
    static constexpr bool ADD = true;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        int c = s >> 2, hi = (s >> 1) & 1, half = s & 1;
        uint32_t w = ld32_a4(b + 48 + 32 * c + 16 * half + 4 * t);
        uint32_t v = hi ? (w >> 4) & 0x0F0F0F0Fu : w & 0x0F0F0F0Fu;
        uint32_t qh = ld32_a4(b + 16 + 16 * half + 4 * t);
        v |= ((qh >> (2 * c + hi)) & 0x01010101u) << 4;
        bytes_to_h2(v, 0, h01, h23);
        int sc, mn;
        k4_scale_min(b + 4, s >> 1, sc, mn);
        scale = ldhalf(b) * (float)sc;
        add = -ldhalf(b + 2) * (float)mn;
    }
};
struct q6_K {
    static constexpr int SG = 1;
    static constexpr int QK = 256, BYTES = 210, S = 16;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        int n = s >> 3, r = (s >> 1) & 3, h = s & 1;
        int l = 16 * h + 4 * t;
        uint32_t lw = ld32_a2(b + 64 * n + l + 32 * (r & 1));
        uint32_t v = (r >= 2) ? (lw >> 4) & 0x0F0F0F0Fu : lw & 0x0F0F0F0Fu;
        uint32_t hw = ld32_a2(b + 128 + 32 * n + l);
        v |= ((hw >> (2 * r)) & 0x03030303u) << 4;
        bytes_to_h2(v, 32, h01, h23);
        scale = ldhalf(b + 208) * (float)(int8_t)b[192 + s];
        add = 0.f;
    }
};
struct q8_K {
    static constexpr int SG = 16;
    static constexpr int QK = 256, BYTES = 292, S = 16;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        bytes_to_h2(ld32_a4(b + 4 + 16 * s + 4 * t) ^ 0x80808080u, 128, h01, h23);
        scale = *reinterpret_cast<const float *>(b);
        add = 0.f;
    }
};
/* F16 weights: a "block" of 16 halves, used as they are. */
struct f16 {
    static constexpr int SG = 1;
    static constexpr int QK = 16, BYTES = 32, S = 1;
    static constexpr bool ADD = false;
    __device__ static __forceinline__ void step(const uint8_t *b, int s, int t, uint32_t &h01,
                                                uint32_t &h23, float &scale, float &add)
    {
        uint2 v = *reinterpret_cast<const uint2 *>(b + 8 * t);
        h01 = v.x;
        h23 = v.y;
        scale = 1.f;
        add = 0.f;
    }
};

} // namespace wkq

#endif
