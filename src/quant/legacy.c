/* The 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1): scalar reference
 * dequantizers, quantizers and dot products.
 *
 * Quantizers produce the bytes of the `gguf` Python package (gguf/quants.py) for Q4_0, Q4_1,
 * Q5_0, Q5_1 and Q8_0, and of ggml's quantize_row_q8_1_ref for Q8_1. Both references compute
 * in float32 with every product and sum rounded on its own (numpy never fuses; the
 * libggml-base.so of llama-cpp-python is built for baseline x86-64, without FMA), so this
 * file must not let the compiler contract a*b+c into a fused multiply-add: see the pragmas
 * below. Where gguf and ggml differ (the sign of d for some all-zero blocks, see
 * wk_signed_absmax), wick follows gguf.
 *
 * Where fusion matters: quantizing is trunc(x*id + 8.5) (Q4_0; 16.5 for Q5_0) or
 * trunc((x - min)*id + 0.5) (Q4_1/Q5_1). When the product rounds onto a point where the sum
 * is an integer but its exact value lies just short of it, the two roundings land on the
 * integer and the single fused rounding does not, so trunc gives one less: for Q4_0/Q5_0
 * with products just below -(k + 1/2), for Q4_1/Q5_1 with products just below 1/2 (the sum
 * 1 - tiny rounds to an even 1 in two steps). tests/py/test_quant_legacy.py builds such
 * rows; a build of this file with -mfma -ffp-contract=fast and no guard fails them.
 * Q8_0/Q8_1 (roundf(x*id)) have no add.
 *
 * Dequantizers compute what both references compute: Q4_0 (q-8)*d, Q5_0 (q-16)*d, Q8_0/Q8_1
 * q*d, and Q4_1/Q5_1 q*d + m, written as two roundings like the gguf package's
 * `(d * qs) + m`. Fusion cannot change them: q has at most 5 bits and d is a half (11
 * bits), so q*d is exact in float and fma(q, d, m) rounds the same sum once.
 *
 * Dot products follow ggml's generic code: an exact integer sum per block, then one float
 * expression per block (in the same evaluation order as ggml's generic kernel of that pair)
 * accumulated into a float. */
#include <math.h>
#include <string.h>

#include "core/half.h"
#include "quant/blocks.h"
#include "quant/formats.h"

/* No fused multiply-add anywhere in this file: clang honours the standard pragma (under its
 * default -ffp-contract=on; its -ffp-contract=fast overrides every pragma, so do not build
 * wick with that), GCC ignores the pragma and needs its per-function option instead, which
 * holds even under -ffp-contract=fast (checked: no vfmadd in this file with -march=haswell). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ---- shared pieces ------------------------------------------------------------------- */

/* The element of largest magnitude, keeping its sign; the first one wins a tie (numpy's
 * argmax, and ggml's strict comparison). For a block of zeros this is x[0] itself, as in
 * gguf (ggml starts from +0 and so returns +0 there: the two differ only for a block of
 * zeros whose first element is -0.0, where gguf stores d = +0 and ggml d = -0). */
static float wk_signed_absmax(const float *x)
{
    float max = x[0];
    float amax = fabsf(x[0]);
    for (int j = 1; j < WK_QK32; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

/* Smallest and largest element; the first one wins a tie, as in ggml (this decides only
 * the sign of a zero min or max: numpy's SIMD min/max reductions pick one that depends on
 * lane order, so that case has no stable gguf answer). */
static void wk_min_max(const float *x, float *min_out, float *max_out)
{
    float min = x[0], max = x[0];
    for (int j = 1; j < WK_QK32; j++) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
    *min_out = min;
    *max_out = max;
}

static float wk_abs_max(const float *x)
{
    float amax = 0.0f;
    for (int j = 0; j < WK_QK32; j++) {
        float a = fabsf(x[j]);
        if (a > amax) amax = a;
    }
    return amax;
}

/* The reciprocal used to scale, zero for a zero scale (both references). */
static float wk_inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

/* trunc(scaled + offset), capped at top: the references' "add 0.5 (or 8.5, 16.5) and
 * truncate". scaled was rounded to float by the caller before the add (no fusion). The sum
 * is never negative for finite input; NaN (from inf or NaN input) gives code 0 rather than
 * an undefined conversion. */
static uint8_t wk_trunc_code(float scaled, float offset, int top)
{
    float t = scaled + offset;
    if (!(t > 0.0f)) return 0;
    if (t >= (float)top) return (uint8_t)top;
    return (uint8_t)(int)t;
}

/* 32 five-bit codes: low nibbles packed two per byte (element j low, j+16 high), bit 4 of
 * code j in bit j of the little-endian 32-bit qh. */
static void wk_pack5(const uint8_t *q, uint8_t *qs, uint8_t *qh)
{
    uint32_t h = 0;
    for (int j = 0; j < WK_QK32 / 2; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0fu) | ((q[j + 16] & 0x0fu) << 4));
        h |= (uint32_t)((q[j] >> 4) & 1u) << j;
        h |= (uint32_t)((q[j + 16] >> 4) & 1u) << (j + 16);
    }
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

/* The inverse of wk_pack5: the 32 five-bit codes. */
static void wk_unpack5(const uint8_t *qs, const uint8_t *qh, int *q)
{
    uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
                 (uint32_t)qh[3] << 24;
    for (int j = 0; j < WK_QK32 / 2; j++) {
        q[j] = (int)((qs[j] & 0x0fu) | (((h >> j) & 1u) << 4));
        q[j + 16] = (int)((qs[j] >> 4) | (((h >> (j + 16)) & 1u) << 4));
    }
}

/* Round half away from zero: C's roundf, which is what gguf's np_roundf computes
 * (floor(a) + floor(2*(a - floor(a))) is exact for |a| < 2^23). For finite input |v| is at
 * most 127 and a little rounding, so the clamp changes nothing; NaN gives 0. */
static int8_t wk_round_i8(float v)
{
    float r = roundf(v);
    if (r != r) return 0;
    if (r > 127.0f) return 127;
    if (r < -127.0f) return -127;
    return (int8_t)r;
}

/* ---- per-block dequantizers: one block to 32 floats ---------------------------------- */

static void wk_q4_0_block(const wk_block_q4_0 *b, float *y)
{
    float d = wk_half_to_float(b->d);
    for (int j = 0; j < WK_QK32 / 2; j++) {
        y[j] = (float)((b->qs[j] & 0x0f) - 8) * d;
        y[j + 16] = (float)((b->qs[j] >> 4) - 8) * d;
    }
}

static void wk_q4_1_block(const wk_block_q4_1 *b, float *y)
{
    float d = wk_half_to_float(b->d);
    float m = wk_half_to_float(b->m);
    for (int j = 0; j < WK_QK32 / 2; j++) {
        float lo = (float)(b->qs[j] & 0x0f) * d; /* rounded, then + m rounded: unfused */
        float hi = (float)(b->qs[j] >> 4) * d;
        y[j] = lo + m;
        y[j + 16] = hi + m;
    }
}

static void wk_q5_0_block(const wk_block_q5_0 *b, float *y)
{
    float d = wk_half_to_float(b->d);
    int q[WK_QK32];
    wk_unpack5(b->qs, b->qh, q);
    for (int j = 0; j < WK_QK32; j++) y[j] = (float)(q[j] - 16) * d;
}

static void wk_q5_1_block(const wk_block_q5_1 *b, float *y)
{
    float d = wk_half_to_float(b->d);
    float m = wk_half_to_float(b->m);
    int q[WK_QK32];
    wk_unpack5(b->qs, b->qh, q);
    for (int j = 0; j < WK_QK32; j++) {
        float scaled = (float)q[j] * d;
        y[j] = scaled + m;
    }
}

static void wk_q8_0_block(const wk_block_q8_0 *b, float *y)
{
    float d = wk_half_to_float(b->d);
    for (int j = 0; j < WK_QK32; j++) y[j] = (float)b->qs[j] * d;
}

/* s is a by-product for dot products; the values are q*d as for Q8_0. */
static void wk_q8_1_block(const wk_block_q8_1 *b, float *y)
{
    float d = wk_half_to_float(b->d);
    for (int j = 0; j < WK_QK32; j++) y[j] = (float)b->qs[j] * d;
}

/* Row dequantizers to f32 and to f16 (f32 rounded to nearest even), one pair per format. */
#define WK_LEGACY_DEQUANTIZE(t)                                                                    \
    void wk_##t##_dequantize(const void *restrict x, float *restrict y, int64_t n)                 \
    {                                                                                              \
        const wk_block_##t *b = x;                                                                 \
        for (int64_t i = 0; i < n / WK_QK32; i++) wk_##t##_block(&b[i], y + i * WK_QK32);          \
    }                                                                                              \
    void wk_##t##_dequantize_f16(const void *restrict x, uint16_t *restrict y, int64_t n)          \
    {                                                                                              \
        const wk_block_##t *b = x;                                                                 \
        float tmp[WK_QK32];                                                                        \
        for (int64_t i = 0; i < n / WK_QK32; i++) {                                                \
            wk_##t##_block(&b[i], tmp);                                                            \
            for (int j = 0; j < WK_QK32; j++) y[i * WK_QK32 + j] = wk_float_to_half(tmp[j]);       \
        }                                                                                          \
    }

WK_LEGACY_DEQUANTIZE(q4_0)
WK_LEGACY_DEQUANTIZE(q4_1)
WK_LEGACY_DEQUANTIZE(q5_0)
WK_LEGACY_DEQUANTIZE(q5_1)
WK_LEGACY_DEQUANTIZE(q8_0)
WK_LEGACY_DEQUANTIZE(q8_1)

/* ---- quantizers ---------------------------------------------------------------------- */

/* Symmetric 4 bits: d = max / -8 with max the signed element of largest magnitude, so
 * that element maps to code 0 and the codes run 0..15 around 8. */
void wk_q4_0_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q4_0 *y = vy;
    for (int64_t i = 0; i < n / WK_QK32; i++, x += WK_QK32) {
        float d = wk_signed_absmax(x) / -8.0f;
        float id = wk_inverse(d);
        y[i].d = wk_float_to_half(d);
        for (int j = 0; j < WK_QK32 / 2; j++) {
            uint8_t lo = wk_trunc_code(x[j] * id, 8.5f, 15);
            uint8_t hi = wk_trunc_code(x[j + 16] * id, 8.5f, 15);
            y[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

/* Affine 4 bits: codes 0..15 over [min, max], d = (max - min) / 15, m = min. */
void wk_q4_1_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q4_1 *y = vy;
    for (int64_t i = 0; i < n / WK_QK32; i++, x += WK_QK32) {
        float min, max;
        wk_min_max(x, &min, &max);
        float d = (max - min) / 15.0f;
        float id = wk_inverse(d);
        y[i].d = wk_float_to_half(d);
        y[i].m = wk_float_to_half(min);
        for (int j = 0; j < WK_QK32 / 2; j++) {
            uint8_t lo = wk_trunc_code((x[j] - min) * id, 0.5f, 15);
            uint8_t hi = wk_trunc_code((x[j + 16] - min) * id, 0.5f, 15);
            y[i].qs[j] = (uint8_t)(lo | (hi << 4));
        }
    }
}

/* Symmetric 5 bits: d = max / -16, codes 0..31 around 16. */
void wk_q5_0_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q5_0 *y = vy;
    for (int64_t i = 0; i < n / WK_QK32; i++, x += WK_QK32) {
        float d = wk_signed_absmax(x) / -16.0f;
        float id = wk_inverse(d);
        uint8_t q[WK_QK32];
        for (int j = 0; j < WK_QK32; j++) q[j] = wk_trunc_code(x[j] * id, 16.5f, 31);
        y[i].d = wk_float_to_half(d);
        wk_pack5(q, y[i].qs, y[i].qh);
    }
}

/* Affine 5 bits: codes 0..31 over [min, max]. */
void wk_q5_1_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q5_1 *y = vy;
    for (int64_t i = 0; i < n / WK_QK32; i++, x += WK_QK32) {
        float min, max;
        wk_min_max(x, &min, &max);
        float d = (max - min) / 31.0f;
        float id = wk_inverse(d);
        uint8_t q[WK_QK32];
        for (int j = 0; j < WK_QK32; j++) q[j] = wk_trunc_code((x[j] - min) * id, 0.5f, 31);
        y[i].d = wk_float_to_half(d);
        y[i].m = wk_float_to_half(min);
        wk_pack5(q, y[i].qs, y[i].qh);
    }
}

/* Symmetric 8 bits: d = amax / 127, codes rounded half away from zero. */
void wk_q8_0_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / WK_QK32; i++, x += WK_QK32) {
        float d = wk_abs_max(x) / 127.0f;
        float id = wk_inverse(d);
        y[i].d = wk_float_to_half(d);
        for (int j = 0; j < WK_QK32; j++) y[i].qs[j] = wk_round_i8(x[j] * id);
    }
}

/* As Q8_0, plus s = sum(qs) * d rounded to half, with d the float scale before its own
 * rounding to half (ggml's quantize_row_q8_1_ref). */
void wk_q8_1_quantize(const float *restrict x, void *restrict vy, int64_t n)
{
    wk_block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / WK_QK32; i++, x += WK_QK32) {
        float d = wk_abs_max(x) / 127.0f;
        float id = wk_inverse(d);
        int sum = 0;
        y[i].d = wk_float_to_half(d);
        for (int j = 0; j < WK_QK32; j++) {
            y[i].qs[j] = wk_round_i8(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = wk_float_to_half((float)sum * d);
    }
}

/* ---- dot products -------------------------------------------------------------------- */

/* Q4_0 . Q8_0: sum over blocks of sumi * dx * dy, evaluated left to right. */
void wk_q4_0_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q4_0 *x = vx;
    const wk_block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / WK_QK32; i++) {
        int sumi = 0;
        for (int j = 0; j < WK_QK32 / 2; j++) {
            sumi += ((x[i].qs[j] & 0x0f) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        }
        float block = (float)sumi * wk_half_to_float(x[i].d) * wk_half_to_float(y[i].d);
        sumf += block;
    }
    *s = sumf;
}

/* Q4_1 . Q8_1: with x = dx*q + mx and y = dy*p, a block is dx*dy*sum(q*p) + mx*(dy*sum(p)),
 * and dy*sum(p) is the s field stored with y. */
void wk_q4_1_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q4_1 *x = vx;
    const wk_block_q8_1 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / WK_QK32; i++) {
        int sumi = 0;
        for (int j = 0; j < WK_QK32 / 2; j++) {
            sumi += (x[i].qs[j] & 0x0f) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        }
        float dd = wk_half_to_float(x[i].d) * wk_half_to_float(y[i].d);
        float scaled = dd * (float)sumi;
        float offset = wk_half_to_float(x[i].m) * wk_half_to_float(y[i].s);
        float block = scaled + offset;
        sumf += block;
    }
    *s = sumf;
}

/* Q5_0 . Q8_0: sum over blocks of (dx * dy) * sumi. */
void wk_q5_0_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q5_0 *x = vx;
    const wk_block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / WK_QK32; i++) {
        int q[WK_QK32];
        wk_unpack5(x[i].qs, x[i].qh, q);
        int sumi = 0;
        for (int j = 0; j < WK_QK32; j++) sumi += (q[j] - 16) * y[i].qs[j];
        float dd = wk_half_to_float(x[i].d) * wk_half_to_float(y[i].d);
        float block = dd * (float)sumi;
        sumf += block;
    }
    *s = sumf;
}

/* Q5_1 . Q8_1: as Q4_1 with five-bit codes. */
void wk_q5_1_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    const wk_block_q5_1 *x = vx;
    const wk_block_q8_1 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / WK_QK32; i++) {
        int q[WK_QK32];
        wk_unpack5(x[i].qs, x[i].qh, q);
        int sumi = 0;
        for (int j = 0; j < WK_QK32; j++) sumi += q[j] * y[i].qs[j];
        float dd = wk_half_to_float(x[i].d) * wk_half_to_float(y[i].d);
        float scaled = dd * (float)sumi;
        float offset = wk_half_to_float(x[i].m) * wk_half_to_float(y[i].s);
        float block = scaled + offset;
        sumf += block;
    }
    *s = sumf;
}

/* Sum over 32-element blocks of sumi * (dx * dy), for blocks of `stride` bytes that start
 * with the half scale d and end with the 32 quants (Q8_0, and Q8_1 whose s is not needed). */
static float wk_q8_blocks_dot(int64_t nb, const uint8_t *x, const uint8_t *y, size_t stride)
{
    float sumf = 0.0f;
    for (int64_t i = 0; i < nb; i++, x += stride, y += stride) {
        const int8_t *xq = (const int8_t *)(x + stride - WK_QK32);
        const int8_t *yq = (const int8_t *)(y + stride - WK_QK32);
        int sumi = 0;
        for (int j = 0; j < WK_QK32; j++) sumi += xq[j] * yq[j];
        uint16_t xd, yd;
        memcpy(&xd, x, 2);
        memcpy(&yd, y, 2);
        float dd = wk_half_to_float(xd) * wk_half_to_float(yd);
        float block = (float)sumi * dd;
        sumf += block;
    }
    return sumf;
}

/* Q8_0 . Q8_0: sum over blocks of sumi * (dx * dy). */
void wk_q8_0_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    *s = wk_q8_blocks_dot(n / WK_QK32, vx, vy, sizeof(wk_block_q8_0));
}

/* Q8_1 . Q8_1 (ggml has none: Q8_1 is only an activation type there): as Q8_0, the s
 * fields are not needed because neither side has a min. */
void wk_q8_1_vec_dot(int64_t n, float *restrict s, const void *restrict vx, const void *restrict vy)
{
    *s = wk_q8_blocks_dot(n / WK_QK32, vx, vy, sizeof(wk_block_q8_1));
}
