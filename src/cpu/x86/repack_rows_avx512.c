/* The quantized form's many-row kernel for the repacked 32-element formats (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0) on AVX-512 VNNI.
 *
 * The 512-bit tiles of repack_avx512.c decode a block of two column groups for every tile
 * of 4 rows. Here a pair's blocks are decoded once into L1 (at most WK512R_KC at a time,
 * src/cpu/x86/vnni_avx512.h's wk512_block: unsigned codes, the signed formats' as w + 128)
 * and then serve 8 rows a pass: per row and step one `vpdpbusd` with the activation word as
 * its broadcast operand, and per row and block the tiles' float step. A signed format's sum
 * starts at -128 x the row's block sum, so it is the integer of the tiles (which start Q4_0
 * at -8 x, Q5_0 at -16 x the block sum, with codes not biased), and the bits are theirs:
 * test_kernels compares the many-row and one-row results at every row count. */
#include <immintrin.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "cpu/x86/repack_rows_avx512.h"
#include "cpu/x86/tiles_x86.h"
#include "cpu/x86/vnni_avx512.h"
#include "quant/blocks.h"

enum {
    WK512R_KC = 32,        /* blocks decoded at a time: 20 KiB */
    WK512R_R = 8,          /* rows a pass */
    WK512R_OFFS = 16384,   /* block sums kept at once (64 KiB): rows a pass over them */
};

/* R rows (x: row 0 of the pass at block 0; off: its block offsets, nb a row) over decoded
 * blocks kc0 .. kc0 + nbc - 1; first: the sums start at zero, else at y. */
WK_INLINE void wk512r_rows(wk_type t, const int R, const wk512_block *dec, int64_t kc0, int64_t nbc, int64_t nb,
                           const char *x, size_t xs, const int32_t *off, bool first, float *y, size_t ldy)
{
    const bool has_min = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1;
    const size_t ab = has_min ? sizeof(wk_block_q8_1) : sizeof(wk_block_q8_0);
    __m512 acc[WK512R_R];
    for (int r = 0; r < R; r++) acc[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y + (size_t)r * ldy);
    for (int64_t b = kc0; b < kc0 + nbc; b++) {
        const wk512_block *D = dec + (b - kc0);
        __m512i is[WK512R_R];
        for (int r = 0; r < R; r++) is[r] = has_min ? _mm512_setzero_si512() : _mm512_set1_epi32(off[r * nb + b]);
#pragma GCC unroll 8
        for (int s = 0; s < 8; s++) {
            const __m512i W = D->w[s];
            for (int r = 0; r < R; r++) is[r] = wk512_dpbusd_bcast(is[r], W, x + (size_t)r * xs + (size_t)b * ab + ab - 32 + 4 * s);
        }
        for (int r = 0; r < R; r++) {
            const char *xb = x + (size_t)r * xs + (size_t)b * ab;
            uint16_t h[2];
            memcpy(h, xb, 4);
            const __m512 sc = _mm512_mul_ps(D->d, _mm512_set1_ps(_cvtsh_ss(h[0])));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[r]), sc, acc[r]);
            if (has_min) acc[r] = _mm512_fmadd_ps(D->m, _mm512_set1_ps(_cvtsh_ss(h[1])), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) _mm512_storeu_ps(y + (size_t)r * ldy, acc[r]);
}

/* Per type: decoding a chunk, and the passes of rows over it, each a function of its own
 * (inlined together, the decoding's constants would take the rows' registers). */
#define WK512R_FNS(T, SUF)                                                                                   \
    static __attribute__((noinline)) void wk512r_decode_##SUF(const uint8_t *wa, const uint8_t *wb, size_t gb, \
                                                              int64_t nbc, wk512_block *dec)                 \
    {                                                                                                        \
        wk512_decode_chunk(T, wa, wb, gb, nbc, dec);                                                         \
    }                                                                                                        \
    static __attribute__((noinline)) void wk512r_passes_##SUF(const wk512_block *dec, int64_t kc0, int64_t nbc, \
                                                              int64_t nb, int64_t nr, const char *x, size_t xs, \
                                                              const int32_t *off, float *y, size_t ldy)      \
    {                                                                                                        \
        int64_t r = 0;                                                                                       \
        for (; r + WK512R_R <= nr; r += WK512R_R)                                                            \
            wk512r_rows(T, WK512R_R, dec, kc0, nbc, nb, x + (size_t)r * xs, xs, off + r * nb, kc0 == 0,      \
                        y + (size_t)r * ldy, ldy);                                                           \
        for (; r < nr; r++)                                                                                  \
            wk512r_rows(T, 1, dec, kc0, nbc, nb, x + (size_t)r * xs, xs, off + r * nb, kc0 == 0,             \
                        y + (size_t)r * ldy, ldy);                                                           \
    }
WK512R_FNS(WK_TYPE_Q8_0, q8_0)
WK512R_FNS(WK_TYPE_Q4_0, q4_0)
WK512R_FNS(WK_TYPE_Q4_1, q4_1)
WK512R_FNS(WK_TYPE_Q5_0, q5_0)
WK512R_FNS(WK_TYPE_Q5_1, q5_1)

int64_t wk_avx512_rows_gemm(wk_type t, int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,
                            size_t xs, float *y, size_t ldy)
{
    void (*decode)(const uint8_t *, const uint8_t *, size_t, int64_t, wk512_block *);
    void (*passes)(const wk512_block *, int64_t, int64_t, int64_t, int64_t, const char *, size_t, const int32_t *,
                   float *, size_t);
    switch (t) {
    case WK_TYPE_Q8_0: decode = wk512r_decode_q8_0, passes = wk512r_passes_q8_0; break;
    case WK_TYPE_Q4_0: decode = wk512r_decode_q4_0, passes = wk512r_passes_q4_0; break;
    case WK_TYPE_Q4_1: decode = wk512r_decode_q4_1, passes = wk512r_passes_q4_1; break;
    case WK_TYPE_Q5_0: decode = wk512r_decode_q5_0, passes = wk512r_passes_q5_0; break;
    case WK_TYPE_Q5_1: decode = wk512r_decode_q5_1, passes = wk512r_passes_q5_1; break;
    default: return 0;
    }
    const bool has_min = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1;
    const int64_t nb = k / 32, pairs = nc / 16;
    const size_t ab = has_min ? sizeof(wk_block_q8_1) : sizeof(wk_block_q8_0);
    const size_t gb = ws / (size_t)nb * 8; /* a block of one group */
    alignas(64) wk512_block dec[WK512R_KC];
    /* rows a pass over the block offsets: all, unless that would take more than 64 KiB */
    int64_t rows = nb * nr <= WK512R_OFFS ? nr : WK512R_OFFS / nb;
    if (rows < 1) rows = 1;
    int32_t off[WK512R_OFFS];
    for (int64_t r0 = 0; r0 < nr; r0 += rows) {
        const int64_t rn = nr - r0 < rows ? nr - r0 : rows;
        const char *xr = (const char *)x + (size_t)r0 * xs;
        if (!has_min) /* -128 x each block's code sum: the signed codes' bias of 128 */
            for (int64_t r = 0; r < rn; r++)
                for (int64_t b = 0; b < nb; b++) {
                    const __m256i q = _mm256_loadu_si256((const __m256i *)(xr + (size_t)r * xs + (size_t)b * ab + ab - 32));
                    const __m256i s = _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8((char)0x80)),
                                                      _mm256_setzero_si256()); /* 4 x (sum + 1024) */
                    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
                    off[r * nb + b] = -128 * ((int32_t)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 4096);
                }
        for (int64_t p = 0; p < pairs; p++) {
            for (int64_t kc0 = 0; kc0 < nb; kc0 += WK512R_KC) {
                const int64_t nbc = nb - kc0 < WK512R_KC ? nb - kc0 : WK512R_KC;
                decode((const uint8_t *)w + wk_repacked_at(2 * p, kc0, 8 * ws, gb),
                       (const uint8_t *)w + wk_repacked_at(2 * p + 1, kc0, 8 * ws, gb), gb, nbc, dec);
                passes(dec, kc0, nbc, nb, rn, xr, xs, off, y + (size_t)r0 * ldy + 16 * p, ldy);
            }
        }
    }
    return 16 * pairs;
}
