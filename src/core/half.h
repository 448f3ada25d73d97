/* Internal: IEEE half and bfloat16 conversions, exact and round-to-nearest-even.
 * Scalar code everywhere uses these; SIMD code may use F16C, which rounds the same way. */
#ifndef WICK_CORE_HALF_H
#define WICK_CORE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t wk_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float wk_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float wk_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return wk_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, nan */
    if (exp == 0) {
        if (man == 0) return wk_bits_f32(sign);
        /* subnormal: man * 2^-24 is exact in f32 */
        float v = (float)man * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return wk_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t wk_float_to_half(float f)
{
    uint32_t u = wk_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu)); /* nan */
    if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (abs < 0x38800000u) {
        /* result is subnormal (or zero): round abs * 2^24 to an integer, ties to even */
        if (abs < 0x33000000u) return (uint16_t)sign; /* < 2^-25: rounds to zero */
        uint32_t e = abs >> 23;
        uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    /* normal: rebias and round 13 dropped bits, ties to even (carry may bump exponent) */
    uint32_t r = abs - 0x38000000u;
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

static inline float wk_bf16_to_float(uint16_t h) { return wk_bits_f32((uint32_t)h << 16); }

/* As ggml: NaN stays a quiet NaN, everything else rounds to nearest even. */
static inline uint16_t wk_float_to_bf16(float f)
{
    uint32_t u = wk_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64u);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

#endif
