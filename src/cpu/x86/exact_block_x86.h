/* One block of a repacked 8-column group of a 32-element format (Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0; layouts in src/cpu/repack.h), decoded for llama.cpp's order of operations: shared by
 * the AVX2 kernels (ops_matmul_avx2.c) and the AVX-512 ones (ops_matmul_avx512.c), which
 * must give the same bits. Included by files built with AVX2 or more. */
#ifndef WICK_CPU_X86_EXACT_BLOCK_X86_H
#define WICK_CPU_X86_EXACT_BLOCK_X86_H

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpu/x86/tiles_x86.h" /* wk_bcast4, wk_load_f16x8, wk_plane_bit4, wk_prefetch_block */
#include "quant/blocks.h"
#include "wick/common.h"

/* One block of a group, decoded once for every activation row: the weights of lane l as
 * bytes ready for _mm256_maddubs_epi16 (w[l]: unsigned codes, or the absolute values of
 * signed ones) and, for signed formats, the signs to move onto the activation (sg[l]). */
WK_INLINE void wk_decode_block(wk_type t, const uint8_t *blk, __m256i w[8], __m256i sg[8])
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    if (t == WK_TYPE_Q8_0) {
        for (int s = 0; s < 8; s++) {
            sg[s] = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));
            w[s] = _mm256_sign_epi8(sg[s], sg[s]);
        }
        return;
    }
    int qoff = t == WK_TYPE_Q4_0 ? 16 : t == WK_TYPE_Q4_1 ? 32 : t == WK_TYPE_Q5_0 ? 48 : 64;
    int poff = t == WK_TYPE_Q5_0 ? 16 : 32;
    bool q5 = t == WK_TYPE_Q5_0 || t == WK_TYPE_Q5_1;
    bool has_min = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1;
    __m256i plane = q5 ? _mm256_loadu_si256((const __m256i *)(blk + poff)) : _mm256_setzero_si256();
    for (int s = 0; s < 4; s++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(blk + qoff + 32 * s));
        __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (q5) {
            lo = _mm256_or_si256(lo, wk_plane_bit4(plane, 2 * s));
            hi = _mm256_or_si256(hi, wk_plane_bit4(plane, 2 * s + 1));
        }
        if (has_min) {
            w[s] = lo;
            w[4 + s] = hi;
        } else {
            __m256i off = _mm256_set1_epi8(q5 ? 16 : 8);
            sg[s] = _mm256_sub_epi8(lo, off);
            sg[4 + s] = _mm256_sub_epi8(hi, off);
            w[s] = _mm256_sign_epi8(sg[s], sg[s]);
            w[4 + s] = _mm256_sign_epi8(sg[4 + s], sg[4 + s]);
        }
    }
}

/* Block b of a group (8 columns' blocks of blk_bytes each): pf bytes 2 KiB ahead of it
 * prefetched, then decoded; returns where it lies (its scales lead it). A lane l's
 * activation bytes are 4l..4l+3 of the block for every format here: elements 4l.. for Q8_0,
 * the low nibbles' 4s.. and the high nibbles' 16 + 4s.. for the 4- and 5-bit formats. */
WK_INLINE const uint8_t *wk_exact_block(wk_type t, const uint8_t *wg, int64_t b, size_t blk_bytes, size_t pf,
                                        __m256i w[8], __m256i sg[8])
{
    const uint8_t *blk = wg + (size_t)b * wk_repacked_step(8 * blk_bytes);
    wk_prefetch_block(blk, pf);
    wk_decode_block(t, blk, w, sg);
    return blk;
}

/* A repacked weight's geometry: blocks a row, bytes of one weight block and of one
 * activation block (Q8_1 for the formats with a min, else Q8_0), bytes of a group. */
typedef struct {
    int64_t nb;
    size_t blk_bytes, act_bytes, group_bytes;
} wk_exact_geom;
WK_INLINE wk_exact_geom wk_exact_geom_of(wk_type t, int64_t k)
{
    wk_exact_geom g;
    g.nb = k / 32;
    g.blk_bytes = t == WK_TYPE_Q8_0   ? sizeof(wk_block_q8_0)
                  : t == WK_TYPE_Q4_0 ? sizeof(wk_block_q4_0)
                  : t == WK_TYPE_Q4_1 ? sizeof(wk_block_q4_1)
                  : t == WK_TYPE_Q5_0 ? sizeof(wk_block_q5_0)
                                      : sizeof(wk_block_q5_1);
    g.act_bytes = (t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1) ? sizeof(wk_block_q8_1) : sizeof(wk_block_q8_0);
    g.group_bytes = (size_t)g.nb * 8 * g.blk_bytes;
    return g;
}

#endif
