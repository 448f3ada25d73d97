/* Internal: pieces shared by the K-format quantizers, dequantizers and dot products:
 * the packing of the 6-bit scales, and the unpacking of one super-block into plain
 * integers (quant values and per-group scales), so that dequantize and vec_dot read
 * the bit layouts in one place.
 *
 * Element e (0..255) of a super-block, by format:
 *   Q2_K  2 bits at qs[32*(e/128) + e%32] >> 2*((e/32)%4); scale/min nibbles scales[e/16]
 *   Q3_K  as Q2_K for the low 2 bits; high bit hmask[e%32] bit e/32 (set: +0, clear: -4);
 *         16 signed 6-bit scales (minus 32) packed in 12 bytes
 *   Q4_K  nibble of qs[32*(e/64) + e%32] (low nibble when (e/32) is even); 8 6-bit scale/min
 *         pairs packed in 12 bytes, index e/32
 *   Q5_K  as Q4_K plus high bit qh[e%32] bit e/32
 *   Q6_K  nibble of ql[64*(e/128) + e%64] (low nibble when (e%128) < 64), 2 high bits of
 *         qh[32*(e/128) + e%32] at 2*((e%128)/32); value minus 32; int8 scale scales[e/16]
 */
#ifndef WICK_QUANT_KQUANTS_INTERNAL_H
#define WICK_QUANT_KQUANTS_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"

/* Scale and min j (0..7) of Q4_K/Q5_K: 6 bits each. Bytes 0-3 hold the low 6 bits of
 * scales 0-3, bytes 4-7 those of mins 0-3; for j >= 4 the low 4 bits sit in the
 * nibbles of bytes 8-11 and the top 2 bits in the spare top bits of bytes 0-7. */
static inline void wk_k4_scale_min(const uint8_t *s, int j, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* Scale j (0..15) of Q3_K, as stored (0..63; the value used is this minus 32). Low 4
 * bits in the nibbles of bytes 0-7 (j < 8 low nibble of byte j, else high nibble of
 * byte j-8); top 2 bits in byte 8 + j%4 at bit 2*(j/4). */
static inline int wk_q3_scale(const uint8_t *s, int j)
{
    int lo = j < 8 ? (s[j] & 0x0f) : (s[j - 8] >> 4);
    int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return lo | (hi << 4);
}

/* The quant values of one super-block as plain integers. */
static inline void wk_q2_K_unpack(const wk_block_q2_K *b, int8_t q[WK_QK_K])
{
    for (int e = 0; e < WK_QK_K; e++)
        q[e] = (int8_t)((b->qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3);
}

/* Signed values -4..3. */
static inline void wk_q3_K_unpack(const wk_block_q3_K *b, int8_t q[WK_QK_K])
{
    for (int e = 0; e < WK_QK_K; e++) {
        int lo = (b->qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
        int hi = (b->hmask[e % 32] >> (e / 32)) & 1;
        q[e] = (int8_t)(lo - (hi ? 0 : 4));
    }
}

/* Values 0..15. */
static inline void wk_q4_K_unpack(const wk_block_q4_K *b, int8_t q[WK_QK_K])
{
    for (int e = 0; e < WK_QK_K; e++) {
        uint8_t byte = b->qs[32 * (e / 64) + e % 32];
        q[e] = (int8_t)(((e / 32) % 2) ? (byte >> 4) : (byte & 0x0f));
    }
}

/* Values 0..31. */
static inline void wk_q5_K_unpack(const wk_block_q5_K *b, int8_t q[WK_QK_K])
{
    for (int e = 0; e < WK_QK_K; e++) {
        uint8_t byte = b->qs[32 * (e / 64) + e % 32];
        int lo = ((e / 32) % 2) ? (byte >> 4) : (byte & 0x0f);
        int hi = (b->qh[e % 32] >> (e / 32)) & 1;
        q[e] = (int8_t)(lo | (hi << 4));
    }
}

/* Signed values -32..31. */
static inline void wk_q6_K_unpack(const wk_block_q6_K *b, int8_t q[WK_QK_K])
{
    for (int e = 0; e < WK_QK_K; e++) {
        int r = e % 128;
        uint8_t byte = b->ql[64 * (e / 128) + r % 64];
        int lo = r < 64 ? (byte & 0x0f) : (byte >> 4);
        int hi = (b->qh[32 * (e / 128) + r % 32] >> (2 * (r / 32))) & 3;
        q[e] = (int8_t)((lo | (hi << 4)) - 32);
    }
}

#endif
