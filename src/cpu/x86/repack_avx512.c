/* AVX-512 VNNI kernels of the repacked Q8_0x8 and Q4_0x8 layouts (cpu/repack.h): one
 * _mm256_dpbusd_epi32 does what takes maddubs + madd + add on AVX2 (four u8 x s8
 * products summed into each 32-bit lane, without the 16-bit saturation). The integer
 * sums are the same as the AVX2 kernels', so are the results. Other types use the AVX2
 * kernels, which run unchanged on these processors. Tiles of 1 to 4 rows; one row reads
 * 8 groups side by side (tiles_x86.h). */
#include <immintrin.h>
#include <string.h>

#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "cpu/x86/tiles_x86.h"
#include "quant/blocks.h"

/* One block of one group for R rows (two sums per row to halve the dependency chain). */
WK_INLINE void wk_vnni_q8_0x8_block(const int R, const uint8_t *blk, const char *x, size_t xs,
                                    int64_t b, int64_t nb, const void *aux, __m256 *acc)
{
    (void)nb, (void)aux;
    __m256i isum[4], isum2[4];
    for (int r = 0; r < R; r++) isum[r] = isum2[r] = _mm256_setzero_si256();
    for (int s = 0; s < 8; s++) {
        __m256i wq = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));
        __m256i wa = _mm256_abs_epi8(wq);
        for (int r = 0; r < R; r++) {
            const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;
            __m256i xv = _mm256_sign_epi8(wk_bcast4(xb->qs + 4 * s), wq);
            if (s & 1) isum2[r] = _mm256_dpbusd_epi32(isum2[r], wa, xv);
            else isum[r] = _mm256_dpbusd_epi32(isum[r], wa, xv);
        }
    }
    for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], isum2[r]);
    wk_acc_q8_0(R, blk, x, xs, b, isum, acc);
}
WK_TILES_R4(wk_vnni_q8_0x8, sizeof(wk_block_q8_0))

/* aux: the rows' block sums (nb per row), for the offset 8 of the codes. */
WK_INLINE void wk_vnni_q4_0x8_block(const int R, const uint8_t *blk, const char *x, size_t xs,
                                    int64_t b, int64_t nb, const void *aux, __m256 *acc)
{
    const int16_t *sx = aux;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i isum[4], isum2[4];
    for (int r = 0; r < R; r++) {
        isum[r] = _mm256_set1_epi32(-8 * sx[r * nb + b]);
        isum2[r] = _mm256_setzero_si256();
    }
    for (int s = 0; s < 4; s++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * s));
        __m256i lo = _mm256_and_si256(v, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        for (int r = 0; r < R; r++) {
            const wk_block_q8_0 *xb = (const wk_block_q8_0 *)(x + r * xs) + b;
            isum[r] = _mm256_dpbusd_epi32(isum[r], lo, wk_bcast4(xb->qs + 4 * s));
            isum2[r] = _mm256_dpbusd_epi32(isum2[r], hi, wk_bcast4(xb->qs + 16 + 4 * s));
        }
    }
    for (int r = 0; r < R; r++) isum[r] = _mm256_add_epi32(isum[r], isum2[r]);
    wk_acc_q8_0(R, blk, x, xs, b, isum, acc);
}
WK_TILES_R4(wk_vnni_q4_0x8, sizeof(wk_block_q4_0))

/* Sum of the 32 activation quants of a block. */
static int16_t wk_vnni_block_sum(const int8_t *qs)
{
    __m256i v = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1),
                                    _mm256_loadu_si256((const __m256i *)qs));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return (int16_t)_mm_cvtsi128_si32(s);
}

static void wk_vnni_packed_q8_0(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                                const void *x, size_t xs, float *y, size_t ldy)
{
    wk_run_tiles(wk_vnni_q8_0x8_tiles, 4, k / 32, NULL, NULL, 0, 0, nr, nc, w, ws, x, xs, y, ldy);
}

static void wk_vnni_packed_q4_0(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,
                                const void *x, size_t xs, float *y, size_t ldy)
{
    int16_t sx[4 * (k / 32)];
    wk_run_tiles(wk_vnni_q4_0x8_tiles, 4, k / 32, sx, wk_vnni_block_sum, sizeof(wk_block_q8_0), 2,
                 nr, nc, w, ws, x, xs, y, ldy);
}

wk_gemm_fn wk_avx512_repacked_gemm(wk_type t);
wk_gemm_fn wk_avx512_repacked_gemm(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q8_0: return wk_vnni_packed_q8_0;
    case WK_TYPE_Q4_0: return wk_vnni_packed_q4_0;
    default: return NULL;
    }
}
