/* AVX-512 kernels of the per-type table (cpu/kernels.h): the precise form (f32 activations)
 * of every type, its dense weights' (F32, F16, BF16) up to 4 rows in registers and every
 * type's 5 rows and more through an L1 buffer (1 to 4 rows of a block type: table lookups in
 * precise_rows_avx512.c, or the AVX2 register path). The quantized form's AVX-512 kernels work on
 * the repacked layouts (repack_avx512.c, repack_rows_avx512.c); the entries this table
 * leaves NULL are the AVX2 table's (wk_cpu_kernels_for).
 *
 * A 512-bit accumulator holds two columns, 8 lanes each: the lanes, the elements that reach
 * them and the order of the FMAs are the AVX2 kernel's (kernels_avx2.c, WK_FEW_ROWS), and
 * each half is summed as it sums a register, so both give the same bits. Half as many
 * instructions a weight byte lets one core keep more reads in flight: F16 8192 x 4096 from
 * memory, m = 1, 2 threads, Zen 5 (session 26, medians of 30): 8 columns in 256-bit
 * registers 1.72 ms, in 512-bit pairs 1.53 ms; 16 columns 1.94 ms; an L1 prefetch slowed both (an
 * L2 prefetch at one row is faster on the Zen 4: WK_Z_PF_AHEAD). */
#include <immintrin.h>
#include <stdint.h>

#include "core/half.h"
#include "cpu/kernels.h"
#include "cpu/x86/few_rows_x86.h"
#include "quant/traits.h"

#define WK_INLINE static inline __attribute__((always_inline))

/* Columns side by side (two a register): 8 streams, the count that read fastest. */
#define WK_Z_COLS 8

/* Elements i..i+7 of two weight rows p and q, as floats: p's in the low half, q's in the high. */
WK_INLINE __m512 wk_z_pair_f32(const void *p, const void *q, int64_t i)
{
    __m256 lo = _mm256_loadu_ps((const float *)p + i), hi = _mm256_loadu_ps((const float *)q + i);
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}
WK_INLINE __m512 wk_z_pair_f16(const void *p, const void *q, int64_t i)
{
    __m128i lo = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    __m128i hi = _mm_loadu_si128((const __m128i *)((const uint16_t *)q + i));
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
}
WK_INLINE __m512 wk_z_pair_bf16(const void *p, const void *q, int64_t i)
{
    __m128i lo = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    __m128i hi = _mm_loadu_si128((const __m128i *)((const uint16_t *)q + i));
    __m512i v = _mm512_cvtepu16_epi32(_mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

WK_INLINE float wk_z_elem_f32(const void *w, int64_t i) { return ((const float *)w)[i]; }
WK_INLINE float wk_z_elem_f16(const void *w, int64_t i) { return _cvtsh_ss(((const uint16_t *)w)[i]); }
WK_INLINE float wk_z_elem_bf16(const void *w, int64_t i) { return wk_bf16_to_float(((const uint16_t *)w)[i]); }

typedef float (*wk_z_elem_fn)(const void *w, int64_t i);

/* One row's outputs of cc columns from its pair accumulators: each column's 8 lanes summed, then
 * the elements past kfull (a dense weight's k % 32; elem NULL when there are none) one FMA each. */
WK_INLINE void wk_z_store_row(const __m512 *a, int cc, const char *const *wr, wk_z_elem_fn elem, int64_t kfull,
                              int64_t k, const float *xr, float *yr)
{
    for (int c = 0; c < cc; c++) {
        const __m512 v = a[c / 2];
        float s = wk_hsum(c % 2 ? _mm512_extractf32x8_ps(v, 1) : _mm512_castps512_ps256(v));
        for (int64_t i = kfull; i < k; i++) s = wk_fma1(elem(wr[c], i), xr[i], s);
        yr[c] = s;
    }
}

/* At one row each column's stream is prefetched into L2 2 KiB ahead, a line at a time: F16
 * 8192 x 4096 from memory, Zen 4, three alternated rounds: one thread 2.96-3.04 -> 2.68-2.82 ms,
 * two 2.08-2.32 -> 1.94-2.14 (88-93% -> 94-97% of the bandwidth); BF16 the same, F32 as
 * before; 512 bytes ahead gained nothing, 1 KiB about as much, into L1 it was slower. */
#define WK_Z_PF_AHEAD 2048
/* wk_z_rows_T: R rows (1-4) x all nc columns, WK_Z_COLS at a time. Elements past the last
 * multiple of 32 are added after the lanes' sum, one FMA each, as the AVX2 kernel does. */
#define WK_Z_ROWS(T, ES)                                                                          \
    WK_INLINE void wk_z_rows_##T(const int R, int64_t k, int64_t nc, const void *w, size_t ws,    \
                                 const void *x, size_t xs, float *y, size_t ldy)                   \
    {                                                                                              \
        const int64_t kfull = k / 32 * 32;                                                         \
        for (int64_t c0 = 0; c0 < nc; c0 += WK_Z_COLS) {                                           \
            const int cc = nc - c0 < WK_Z_COLS ? (int)(nc - c0) : WK_Z_COLS;                       \
            const char *wr[WK_Z_COLS];                                                             \
            for (int c = 0; c < WK_Z_COLS; c++) /* missing columns read column c0, dropped */     \
                wr[c] = (const char *)w + (c0 + (c < cc ? c : 0)) * ws;                            \
            __m512 a[4][WK_Z_COLS / 2];                                                            \
            for (int r = 0; r < 4; r++)                                                            \
                for (int p = 0; p < WK_Z_COLS / 2; p++) a[r][p] = _mm512_setzero_ps();             \
            for (int64_t i0 = 0; i0 < kfull; i0 += 32) {                                           \
                if (R == 1)                                                                        \
                    for (int c = 0; c < WK_Z_COLS; c++)                                            \
                        for (int o = 0; o < 32 * ES; o += 64)                                      \
                            _mm_prefetch(wr[c] + i0 * ES + WK_Z_PF_AHEAD + o, _MM_HINT_T1);        \
                for (int p = 0; p < WK_Z_COLS / 2; p++)                                            \
                    for (int64_t i = i0; i < i0 + 32; i += 8) {                                        \
                        __m512 f = wk_z_pair_##T(wr[2 * p], wr[2 * p + 1], i);                     \
                        for (int r = 0; r < R; r++) {                                              \
                            const float *xr = (const float *)((const char *)x + r * xs);           \
                            __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(xr + i));           \
                            a[r][p] = _mm512_fmadd_ps(f, xv, a[r][p]);                             \
                        }                                                                          \
                    }                                                                              \
            }                                                                                      \
            for (int r = 0; r < R; r++)                                                            \
                wk_z_store_row(a[r], cc, wr, wk_z_elem_##T, kfull, k, (const float *)((const char *)x + r * xs), \
                               y + r * ldy + c0);                                                  \
        }                                                                                          \
    }

/* ---- 5 rows and more: every weight type ------------------------------------------------ */
/* For each group of 8 columns, a segment of k at a time is dequantized (by the AVX2 code: the
 * precise form's values) into an L1 buffer, two columns interleaved 8 elements at a time, so
 * that one 512-bit load gives a column pair. The segment then serves every row, in tiles of 6
 * rows x 8 columns: 24 accumulators, each FMA a pair times one row's 8 elements broadcast to
 * both halves. Per 8 elements a tile loads 4 pairs and 6 row pieces for 24 FMAs of 16 lanes,
 * where the AVX2 buffered tiles (3 rows x 4 columns, 256 bits) load 15 for 12 FMAs of 8 lanes
 * and were bound by their loads. Each output's lanes, elements and FMA order are the AVX2
 * path's (kernels_avx2.c, WK_F32_GEMM), so the bits are too. */
#define WK_ZM_ROWS 6
#define WK_ZM_KSEG 512 /* elements a segment: 16 KiB of buffer, a multiple of every block size */
#define WK_ZM_RB 64    /* rows whose accumulators are kept from one segment to the next */
/* Floats from one column pair to the next in the buffer: 64 bytes past a multiple of 4 KiB, so
 * that the pairs' lines at one element fall into different L1 sets (the rows of x, 4 KiB
 * multiples apart for most k, share one). */
#define WK_ZM_PAIR (2 * WK_ZM_KSEG + 16)

/* R rows (1..WK_ZM_ROWS) x the buffer's 8 columns over len elements, into acc. */
WK_INLINE void wk_zm_tile(const int R, int64_t len, const float *buf, const float *x, size_t xs,
                          __m512 (*acc)[WK_Z_COLS / 2])
{
    __m512 a[WK_ZM_ROWS][WK_Z_COLS / 2];
    for (int r = 0; r < R; r++)
        for (int p = 0; p < WK_Z_COLS / 2; p++) a[r][p] = acc[r][p];
    for (int64_t i = 0; i < len; i += 8) {
        __m512 f[WK_Z_COLS / 2];
        for (int p = 0; p < WK_Z_COLS / 2; p++) f[p] = _mm512_load_ps(buf + p * WK_ZM_PAIR + 2 * i);
        for (int r = 0; r < R; r++) {
            const float *xr = (const float *)((const char *)x + r * xs);
            __m512 xv = _mm512_broadcast_f32x8(_mm256_loadu_ps(xr + i));
            for (int p = 0; p < WK_Z_COLS / 2; p++) a[r][p] = _mm512_fmadd_ps(f[p], xv, a[r][p]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int p = 0; p < WK_Z_COLS / 2; p++) acc[r][p] = a[r][p];
}

/* bs, bb: elements and bytes of a block as deq reads them (dense types: 32 elements); elem:
 * one element, for a dense weight's k % 32 tail (NULL for block types, whose k is whole);
 * octets: the weight in the octet layout (octets.h; nc a multiple of 8). */
static void wk_z_many(wk_deq_fn deq, int64_t bs, size_t bb, wk_z_elem_fn elem, bool octets, int64_t k,
                      int64_t nr, int64_t nc, const void *w, size_t ws, const void *x, size_t xs, float *y,
                      size_t ldy)
{
    float buf[WK_Z_COLS / 2 * WK_ZM_PAIR] __attribute__((aligned(64)));
    __m512 acc[WK_ZM_RB][WK_Z_COLS / 2];
    const int64_t kfull = k / bs * bs;
    const size_t step = wk_octet_step(bb, octets);
    for (int64_t c0 = 0; c0 < nc; c0 += WK_Z_COLS) {
        const int cc = nc - c0 < WK_Z_COLS ? (int)(nc - c0) : WK_Z_COLS;
        const char *wr[WK_Z_COLS];
        for (int c = 0; c < WK_Z_COLS; c++) /* missing columns repeat column c0, dropped */
            wr[c] = wk_octet_col(w, c0 + (c < cc ? c : 0), ws, bb, octets);
        for (int64_t rb = 0; rb < nr; rb += WK_ZM_RB) {
            const int64_t nrb = nr - rb < WK_ZM_RB ? nr - rb : WK_ZM_RB;
            const char *xb = (const char *)x + rb * xs;
            for (int64_t r = 0; r < nrb; r++)
                for (int p = 0; p < WK_Z_COLS / 2; p++) acc[r][p] = _mm512_setzero_ps();
            for (int64_t s0 = 0; s0 < kfull; s0 += WK_ZM_KSEG) {
                const int64_t len = kfull - s0 < WK_ZM_KSEG ? kfull - s0 : WK_ZM_KSEG;
                for (int c = 0; c < WK_Z_COLS; c++)
                    deq(wr[c] + s0 / bs * step, len / bs, step, buf + c / 2 * WK_ZM_PAIR + c % 2 * 8, 16);
                /* The columns' next segments (or the next group's first) into L2 while the
                 * rows use this one: in octets one run for the 8 columns. */
                const int64_t nx = s0 + WK_ZM_KSEG < kfull ? s0 + WK_ZM_KSEG : 0;
                const size_t nbytes = (size_t)((kfull - nx < WK_ZM_KSEG ? kfull - nx : WK_ZM_KSEG) / bs) * step;
                for (int c = 0; c < (octets ? 1 : cc); c++) {
                    const char *np = (nx ? wr[c] : wr[c] + WK_Z_COLS * ws) + nx / bs * step;
                    for (size_t o = 0; o < nbytes; o += 64) _mm_prefetch(np + o, _MM_HINT_T1);
                }
                const char *xs0 = xb + s0 * (int64_t)sizeof(float);
                for (int64_t r0 = 0; r0 < nrb; r0 += WK_ZM_ROWS) {
                    const char *xr = xs0 + r0 * xs;
                    switch (nrb - r0 < WK_ZM_ROWS ? nrb - r0 : WK_ZM_ROWS) {
                    case 1: wk_zm_tile(1, len, buf, (const float *)xr, xs, acc + r0); break;
                    case 2: wk_zm_tile(2, len, buf, (const float *)xr, xs, acc + r0); break;
                    case 3: wk_zm_tile(3, len, buf, (const float *)xr, xs, acc + r0); break;
                    case 4: wk_zm_tile(4, len, buf, (const float *)xr, xs, acc + r0); break;
                    case 5: wk_zm_tile(5, len, buf, (const float *)xr, xs, acc + r0); break;
                    default: wk_zm_tile(6, len, buf, (const float *)xr, xs, acc + r0); break;
                    }
                }
            }
            for (int64_t r = 0; r < nrb; r++)
                wk_z_store_row(acc[r], cc, wr, elem, kfull, k, (const float *)(xb + r * xs), y + (rb + r) * ldy + c0);
        }
    }
}

/* wk_avx512_gemm_f32_T of a dense type: up to 4 rows in registers (wk_z_rows_T), more through
 * wk_z_many. */
#define WK_Z_GEMM(T, TYPE, ES)                                                                     \
    WK_Z_ROWS(T, ES)                                                                                 \
    static void wk_avx512_gemm_f32_##T(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, \
                                       const void *x, size_t xs, float *y, size_t ldy)             \
    {                                                                                              \
        switch (nr) {                                                                              \
        case 1: wk_z_rows_##T(1, k, nc, w, ws, x, xs, y, ldy); break;                              \
        case 2: wk_z_rows_##T(2, k, nc, w, ws, x, xs, y, ldy); break;                              \
        case 3: wk_z_rows_##T(3, k, nc, w, ws, x, xs, y, ldy); break;                              \
        case 4: wk_z_rows_##T(4, k, nc, w, ws, x, xs, y, ldy); break;                              \
        default:                                                                                   \
            wk_z_many(wk_avx2_deq_for(TYPE), 32, 32 * (ES), wk_z_elem_##T, false, k, nr, nc, w, ws, x, \
                      xs, y, ldy);                                                                 \
            break;                                                                                 \
        }                                                                                          \
    }                                                                                              \
    static const wk_cpu_kernels wk_avx512_##T = {"avx512", NULL, NULL, wk_avx512_gemm_f32_##T, NULL};
WK_Z_GEMM(f32, WK_TYPE_F32, 4)
WK_Z_GEMM(f16, WK_TYPE_F16, 2)
WK_Z_GEMM(bf16, WK_TYPE_BF16, 2)

/* The precise form of a block type: up to 4 rows decoded in registers and used at once (the
 * weights read in one pass), by table lookups where the type's codes allow them
 * (precise_rows_avx512.c), else by the AVX2 register path; more rows through wk_z_many. The type's other
 * entries are the AVX2 table's or the repacked kernels' (wk_cpu_kernels_for). wk_avx512_octets_T:
 * the same on octets. */
#define WK_Z_BLOCK_GEMM(T, TYPE)                                                                   \
    WK_INLINE void wk_avx512_f32_##T(const bool OCT, int64_t k, int64_t nr, int64_t nc, const void *w, \
                                     size_t ws, const void *x, size_t xs, float *y, size_t ldy)    \
    {                                                                                              \
        if (nr <= 4) {                                                                             \
            wk_gemm_fn few = wk_avx512_precise_rows(TYPE, nr, OCT);                                \
            if (!few) few = OCT ? wk_cpu_kernels_avx2(TYPE)->precise_octets : wk_cpu_kernels_avx2(TYPE)->gemm_f32; \
            few(k, nr, nc, w, ws, x, xs, y, ldy);                                                  \
            return;                                                                                \
        }                                                                                          \
        const wk_type_traits *tr = wk_traits(TYPE);                                                \
        wk_z_many(wk_avx2_deq_for(TYPE), tr->block_size, tr->block_bytes, NULL, OCT, k, nr, nc, w, ws, \
                  x, xs, y, ldy);                                                                  \
    }                                                                                              \
    WK_LAYOUT_GEMM(wk_avx512_gemm_f32_##T, wk_avx512_f32_##T, false)                               \
    WK_LAYOUT_GEMM(wk_avx512_octets_##T, wk_avx512_f32_##T, true)                                  \
    static const wk_cpu_kernels wk_avx512_##T = {"avx512", NULL, NULL, wk_avx512_gemm_f32_##T,     \
                                                 wk_avx512_octets_##T};
WK_Z_BLOCK_GEMM(q4_0, WK_TYPE_Q4_0)
WK_Z_BLOCK_GEMM(q4_1, WK_TYPE_Q4_1)
WK_Z_BLOCK_GEMM(q5_0, WK_TYPE_Q5_0)
WK_Z_BLOCK_GEMM(q5_1, WK_TYPE_Q5_1)
WK_Z_BLOCK_GEMM(q8_0, WK_TYPE_Q8_0)
WK_Z_BLOCK_GEMM(q8_1, WK_TYPE_Q8_1)
WK_Z_BLOCK_GEMM(q2_K, WK_TYPE_Q2_K)
WK_Z_BLOCK_GEMM(q3_K, WK_TYPE_Q3_K)
WK_Z_BLOCK_GEMM(q4_K, WK_TYPE_Q4_K)
WK_Z_BLOCK_GEMM(q5_K, WK_TYPE_Q5_K)
WK_Z_BLOCK_GEMM(q6_K, WK_TYPE_Q6_K)
WK_Z_BLOCK_GEMM(q8_K, WK_TYPE_Q8_K)

const wk_cpu_kernels *wk_cpu_kernels_avx512(wk_type t)
{
    switch (t) {
    case WK_TYPE_F32: return &wk_avx512_f32;
    case WK_TYPE_F16: return &wk_avx512_f16;
    case WK_TYPE_BF16: return &wk_avx512_bf16;
    case WK_TYPE_Q4_0: return &wk_avx512_q4_0;
    case WK_TYPE_Q4_1: return &wk_avx512_q4_1;
    case WK_TYPE_Q5_0: return &wk_avx512_q5_0;
    case WK_TYPE_Q5_1: return &wk_avx512_q5_1;
    case WK_TYPE_Q8_0: return &wk_avx512_q8_0;
    case WK_TYPE_Q8_1: return &wk_avx512_q8_1;
    case WK_TYPE_Q2_K: return &wk_avx512_q2_K;
    case WK_TYPE_Q3_K: return &wk_avx512_q3_K;
    case WK_TYPE_Q4_K: return &wk_avx512_q4_K;
    case WK_TYPE_Q5_K: return &wk_avx512_q5_K;
    case WK_TYPE_Q6_K: return &wk_avx512_q6_K;
    case WK_TYPE_Q8_K: return &wk_avx512_q8_K;
    default: return NULL;
    }
}
