/* AVX2 kernels of every format: the quantized form (integer dot products with the
 * activations' vec-dot type) and the precise form (weights dequantized in registers,
 * multiplied with f32 activations).
 *
 * Shape of every kernel: a tile of R activation rows x C weight rows (output columns).
 * Each weight block is loaded and decoded once per tile and used for the R rows; each
 * activation block once and used for the C columns. A weight block is decoded into 32
 * signed bytes per 32 elements (its scales kept apart), and the integer products come
 * from _mm256_maddubs_epi16, which wants one unsigned operand: for signed weights the
 * sign of the weight is moved onto the activation (|w| * sign(x, w)).
 *
 * Every output is computed by the same operations in the same order whatever the tile
 * shape, so the way columns are split among threads never changes a bit. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "core/half.h"
#include "cpu/kernels.h"
#include "cpu/x86/few_rows_x86.h"
#include "cpu/x86/kprep_x86.h"
#include "quant/blocks.h"
#include "quant/kquants_internal.h"
#include "quant/traits.h"

#define WK_INLINE static inline __attribute__((always_inline))

/* ---- small helpers --------------------------------------------------------------- */
/* Weights are streamed once per call: prefetching them a little ahead keeps more memory
 * reads in flight than a busy core issues by itself (see repack_avx2.c). */
WK_INLINE void wk_prefetch(const void *p, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64)
        _mm_prefetch((const char *)p + WK_PF_AHEAD + off, _MM_HINT_T0);
}

/* 16 pairs of 4-bit values: low nibbles -> bytes 0..15, high nibbles -> bytes 16..31. */
WK_INLINE __m256i wk_nibbles(const uint8_t *qs)
{
    __m128i b = _mm_loadu_si128((const __m128i *)qs);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* Bit i of a 32-bit mask -> byte i = 0xff when set. */
WK_INLINE __m256i wk_bits_to_bytes(uint32_t bits)
{
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
                                           0x0101010101010101ll, 0x0000000000000000ll);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
    const __m256i sel = _mm256_set1_epi64x(0x8040201008040201ll);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, sel), sel);
}

/* Products of weights (as decoded) and activations, summed in 16-bit pairs. */
WK_INLINE __m256i wk_mul_pairs(__m256i wabs, __m256i w, __m256i x, bool is_unsigned)
{
    if (is_unsigned) return _mm256_maddubs_epi16(w, x);
    return _mm256_maddubs_epi16(wabs, _mm256_sign_epi8(x, w));
}

/* Signed bytes -> 4 x 8 floats (elements 0-7, 8-15, 16-23, 24-31). */
WK_INLINE void wk_s8_to_f32(__m256i q, __m256 out[4])
{
    __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    out[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    out[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    out[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    out[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
}

/* ---- decoders of the 32-element formats --------------------------------------------
 * dec_T(block, &d, &m): 32 signed bytes q with weight = d * q + m (m = 0 if none). */
WK_INLINE __m256i wk_dec_q4_0(const void *b, float *d, float *m)
{
    const wk_block_q4_0 *x = b;
    *d = wk_h2f(x->d);
    *m = 0.0f;
    return _mm256_sub_epi8(wk_nibbles(x->qs), _mm256_set1_epi8(8));
}

WK_INLINE __m256i wk_dec_q4_1(const void *b, float *d, float *m)
{
    const wk_block_q4_1 *x = b;
    *d = wk_h2f(x->d);
    *m = wk_h2f(x->m);
    return wk_nibbles(x->qs);
}

WK_INLINE __m256i wk_q5_bits(const uint8_t *qs, const uint8_t *qh)
{
    uint32_t h;
    memcpy(&h, qh, 4);
    __m256i hi = _mm256_and_si256(wk_bits_to_bytes(h), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(wk_nibbles(qs), hi);
}

WK_INLINE __m256i wk_dec_q5_0(const void *b, float *d, float *m)
{
    const wk_block_q5_0 *x = b;
    *d = wk_h2f(x->d);
    *m = 0.0f;
    return _mm256_sub_epi8(wk_q5_bits(x->qs, x->qh), _mm256_set1_epi8(16));
}

WK_INLINE __m256i wk_dec_q5_1(const void *b, float *d, float *m)
{
    const wk_block_q5_1 *x = b;
    *d = wk_h2f(x->d);
    *m = wk_h2f(x->m);
    return wk_q5_bits(x->qs, x->qh);
}

WK_INLINE __m256i wk_dec_q8_0(const void *b, float *d, float *m)
{
    const wk_block_q8_0 *x = b;
    *d = wk_h2f(x->d);
    *m = 0.0f;
    return _mm256_loadu_si256((const __m256i *)x->qs);
}

WK_INLINE __m256i wk_dec_q8_1(const void *b, float *d, float *m)
{
    const wk_block_q8_1 *x = b;
    *d = wk_h2f(x->d);
    *m = 0.0f;
    return _mm256_loadu_si256((const __m256i *)x->qs);
}

/* Activation blocks: Q8_0 (d, qs) and Q8_1 (d, s = d * sum(qs), qs). */
WK_INLINE __m256i wk_act_q8_0(const void *b, float *d, float *s)
{
    const wk_block_q8_0 *x = b;
    *d = wk_h2f(x->d);
    *s = 0.0f;
    return _mm256_loadu_si256((const __m256i *)x->qs);
}

WK_INLINE __m256i wk_act_q8_1(const void *b, float *d, float *s)
{
    const wk_block_q8_1 *x = b;
    *d = wk_h2f(x->d);
    *s = wk_h2f(x->s);
    return _mm256_loadu_si256((const __m256i *)x->qs);
}

/* ---- quantized form, 32-element formats -------------------------------------------
 * Per block: acc += float(sum of q*p in 8 lanes) * (dw * dx); with a min, the block
 * also adds m * s (s = dx * sum(p), stored with the activation). */
#define WK_LEGACY_TILE(T, R, C, WB, AB, DEC, ACT, UNS, MIN)                                       \
    static void wk_tile_##T##_##R##x##C(int64_t nb, const char *w, size_t ws, const char *x,     \
                                         size_t xs, float *y, size_t ldy)                         \
    {                                                                                              \
        __m256 acc[R][C];                                                                          \
        float macc[R][C];                                                                          \
        for (int r = 0; r < R; r++)                                                                \
            for (int c = 0; c < C; c++) {                                                          \
                acc[r][c] = _mm256_setzero_ps();                                                   \
                macc[r][c] = 0.0f;                                                                 \
            }                                                                                      \
        const __m256i ones = _mm256_set1_epi16(1);                                                 \
        for (int64_t b = 0; b < nb; b++) {                                                         \
            __m256i wq[C], wa[C];                                                                  \
            float wd[C], wm[C];                                                                    \
            for (int c = 0; c < C; c++) {                                                          \
                wk_prefetch(w + c * ws + b * sizeof(WB), 1);                                    \
                wq[c] = DEC(w + c * ws + b * sizeof(WB), &wd[c], &wm[c]);                          \
                wa[c] = UNS ? wq[c] : _mm256_sign_epi8(wq[c], wq[c]);                              \
            }                                                                                      \
            for (int r = 0; r < R; r++) {                                                          \
                float xd, xsum;                                                                    \
                __m256i xq = ACT(x + r * xs + b * sizeof(AB), &xd, &xsum);                         \
                for (int c = 0; c < C; c++) {                                                      \
                    __m256i p = _mm256_madd_epi16(wk_mul_pairs(wa[c], wq[c], xq, UNS), ones);      \
                    acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),                             \
                                                _mm256_set1_ps(wd[c] * xd), acc[r][c]);            \
                    if (MIN) macc[r][c] += wm[c] * xsum;                                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < R; r++)                                                                \
            for (int c = 0; c < C; c++) y[r * ldy + c] = wk_hsum(acc[r][c]) + macc[r][c];          \
    }

/* ---- quantized form, K formats ----------------------------------------------------
 * A super-block's weights are decoded into 8 groups of 32 signed bytes; integer scales
 * (one per 16 elements) multiply the pair sums in _mm256_madd_epi16, and the sums stay
 * integer across the super-block. Mins enter through the activation's bsums. The scales come
 * from wk_kprep (kprep_x86.h). */
WK_INLINE __m256i wk_kscale(const wk_kprep *p, int j)
{
    return _mm256_set_m128i(_mm_set1_epi16(p->sc[2 * j + 1]), _mm_set1_epi16(p->sc[2 * j]));
}

WK_INLINE __m256i wk_kdec_q4_K(const void *b, int j, __m256i *aux)
{
    (void)aux;
    const wk_block_q4_K *x = b;
    __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * (j / 2)));
    if (j & 1) v = _mm256_srli_epi16(v, 4);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

WK_INLINE __m256i wk_kdec_q5_K(const void *b, int j, __m256i *aux)
{
    const wk_block_q5_K *x = b;
    if (j == 0) *aux = _mm256_loadu_si256((const __m256i *)x->qh);
    __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * (j / 2)));
    if (j & 1) v = _mm256_srli_epi16(v, 4);
    v = _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
    const __m256i bit = _mm256_set1_epi8((char)(1 << j));
    __m256i h = _mm256_cmpeq_epi8(_mm256_and_si256(*aux, bit), bit);
    return _mm256_or_si256(v, _mm256_and_si256(h, _mm256_set1_epi8(0x10)));
}

WK_INLINE __m256i wk_kdec_q6_K(const void *b, int j, __m256i *aux)
{
    (void)aux;
    const wk_block_q6_K *x = b;
    int h = j / 4, part = j % 4; /* 128-element half, 32-element part within it */
    __m256i lo = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32 * (part & 1)));
    if (part >= 2) lo = _mm256_srli_epi16(lo, 4);
    lo = _mm256_and_si256(lo, _mm256_set1_epi8(0x0f));
    __m256i hi = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
    hi = _mm256_and_si256(_mm256_srli_epi16(hi, 2 * part), _mm256_set1_epi8(3));
    __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(32));
}

WK_INLINE __m256i wk_kdec_q2_K(const void *b, int j, __m256i *aux)
{
    (void)aux;
    const wk_block_q2_K *x = b;
    __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * (j / 4)));
    v = _mm256_srli_epi16(v, 2 * (j % 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(3));
}

WK_INLINE __m256i wk_kdec_q3_K(const void *b, int j, __m256i *aux)
{
    const wk_block_q3_K *x = b;
    if (j == 0) *aux = _mm256_loadu_si256((const __m256i *)x->hmask);
    __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * (j / 4)));
    v = _mm256_and_si256(_mm256_srli_epi16(v, 2 * (j % 4)), _mm256_set1_epi8(3));
    const __m256i bit = _mm256_set1_epi8((char)(1 << j));
    __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(*aux, bit), bit);
    /* high bit clear: minus 4 */
    return _mm256_sub_epi8(v, _mm256_andnot_si256(set, _mm256_set1_epi8(4)));
}

WK_INLINE __m256i wk_kdec_q8_K(const void *b, int j, __m256i *aux)
{
    (void)aux;
    const wk_block_q8_K *x = b;
    return _mm256_loadu_si256((const __m256i *)(x->qs + 32 * j));
}

#define WK_K_TILE(T, R, C, UNS, MIN)                                                               \
    static void wk_tile_##T##_##R##x##C(int64_t nb, const char *w, size_t ws, const char *x,     \
                                         size_t xs, float *y, size_t ldy)                         \
    {                                                                                              \
        __m256 acc[R][C];                                                                          \
        for (int r = 0; r < R; r++)                                                                \
            for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();                           \
        for (int64_t b = 0; b < nb; b++) {                                                         \
            wk_kprep prep[C];                                                                      \
            __m256i aux[C];                                                                        \
            const char *wb[C];                                                                     \
            for (int c = 0; c < C; c++) {                                                          \
                wb[c] = w + c * ws + b * sizeof(wk_block_##T);                                     \
                wk_prefetch(wb[c], sizeof(wk_block_##T));                                          \
                wk_prep_##T(wb[c], &prep[c]);                                                      \
                aux[c] = _mm256_setzero_si256();                                                   \
            }                                                                                      \
            __m256i isum[R][C];                                                                    \
            for (int r = 0; r < R; r++)                                                            \
                for (int c = 0; c < C; c++) isum[r][c] = _mm256_setzero_si256();                   \
            for (int j = 0; j < 8; j++) {                                                          \
                for (int c = 0; c < C; c++) {                                                      \
                    __m256i wq = wk_kdec_##T(wb[c], j, &aux[c]);                                   \
                    __m256i wa = UNS ? wq : _mm256_sign_epi8(wq, wq);                              \
                    __m256i sc = wk_kscale(&prep[c], j);                                           \
                    for (int r = 0; r < R; r++) {                                                  \
                        const wk_block_q8_K *xb =                                                  \
                            (const wk_block_q8_K *)(x + r * xs) + b;                               \
                        __m256i xq = _mm256_loadu_si256((const __m256i *)(xb->qs + 32 * j));       \
                        __m256i p = _mm256_madd_epi16(wk_mul_pairs(wa, wq, xq, UNS), sc);          \
                        isum[r][c] = _mm256_add_epi32(isum[r][c], p);                              \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            for (int r = 0; r < R; r++) {                                                          \
                const wk_block_q8_K *xb = (const wk_block_q8_K *)(x + r * xs) + b;                 \
                for (int c = 0; c < C; c++) {                                                      \
                    acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r][c]),                    \
                                                _mm256_set1_ps(prep[c].d * xb->d), acc[r][c]);     \
                    if (MIN) {                                                                     \
                        __m256i mn = _mm256_madd_epi16(                                            \
                            _mm256_loadu_si256((const __m256i *)prep[c].mn),                       \
                            _mm256_loadu_si256((const __m256i *)xb->bsums));                       \
                        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mn),                        \
                                                    _mm256_set1_ps(-prep[c].dmin * xb->d),         \
                                                    acc[r][c]);                                    \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < R; r++)                                                                \
            for (int c = 0; c < C; c++) y[r * ldy + c] = wk_hsum(acc[r][c]);                       \
    }

/* ---- the driver of the tiles: full tiles, then the remainders ----------------------- */
typedef void (*wk_tile_fn)(int64_t nb, const char *w, size_t ws, const char *x, size_t xs,
                           float *y, size_t ldy);

/* Row tile 4 x column group 2 for several rows, 1 x 4 for one row. Tables are indexed
 * [rows-1][cols-1]. */
static void wk_run_tiles(wk_tile_fn const tiles[4][4], int64_t nb, int64_t nr, int64_t nc,
                         const char *w, size_t ws, const char *x, size_t xs, float *y, size_t ldy)
{
    int R = nr >= 4 ? 4 : (int)nr;
    int C = nr >= 2 ? 2 : 4;
    for (int64_t c0 = 0; c0 < nc; c0 += C) {
        int cc = nc - c0 < C ? (int)(nc - c0) : C;
        for (int64_t r0 = 0; r0 < nr; r0 += R) {
            int rr = nr - r0 < R ? (int)(nr - r0) : R;
            tiles[rr - 1][cc - 1](nb, w + c0 * ws, ws, x + r0 * xs, xs, y + r0 * ldy + c0, ldy);
        }
    }
}

#define WK_TILE_TABLE(T)                                                                           \
    static wk_tile_fn const wk_tiles_##T[4][4] = {                                                 \
        {wk_tile_##T##_1x1, wk_tile_##T##_1x2, wk_tile_##T##_1x3, wk_tile_##T##_1x4},              \
        {wk_tile_##T##_2x1, wk_tile_##T##_2x2, wk_tile_##T##_2x3, wk_tile_##T##_2x4},              \
        {wk_tile_##T##_3x1, wk_tile_##T##_3x2, wk_tile_##T##_3x3, wk_tile_##T##_3x4},              \
        {wk_tile_##T##_4x1, wk_tile_##T##_4x2, wk_tile_##T##_4x3, wk_tile_##T##_4x4},              \
    };

#define WK_FOR_TILES(M, ...)                                                                       \
    M(__VA_ARGS__, 1, 1) M(__VA_ARGS__, 1, 2) M(__VA_ARGS__, 1, 3) M(__VA_ARGS__, 1, 4)            \
    M(__VA_ARGS__, 2, 1) M(__VA_ARGS__, 2, 2) M(__VA_ARGS__, 2, 3) M(__VA_ARGS__, 2, 4)            \
    M(__VA_ARGS__, 3, 1) M(__VA_ARGS__, 3, 2) M(__VA_ARGS__, 3, 3) M(__VA_ARGS__, 3, 4)            \
    M(__VA_ARGS__, 4, 1) M(__VA_ARGS__, 4, 2) M(__VA_ARGS__, 4, 3) M(__VA_ARGS__, 4, 4)

#define WK_LEGACY_TILE_AT(T, WB, AB, DEC, ACT, UNS, MIN, R, C)                                     \
    WK_LEGACY_TILE(T, R, C, WB, AB, DEC, ACT, UNS, MIN)
#define WK_K_TILE_AT(T, UNS, MIN, R, C) WK_K_TILE(T, R, C, UNS, MIN)

#define WK_LEGACY_GEMM(T, WB, AB, ACT, UNS, MIN)                                                   \
    WK_FOR_TILES(WK_LEGACY_TILE_AT, T, WB, AB, wk_dec_##T, ACT, UNS, MIN)                         \
    WK_TILE_TABLE(T)                                                                               \
    static void wk_avx2_gemm_q_##T(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,   \
                                   const void *x, size_t xs, float *y, size_t ldy)                 \
    {                                                                                              \
        wk_run_tiles(wk_tiles_##T, k / 32, nr, nc, w, ws, x, xs, y, ldy);                          \
    }

#define WK_K_GEMM(T, UNS, MIN)                                                                     \
    WK_FOR_TILES(WK_K_TILE_AT, T, UNS, MIN)                                                        \
    WK_TILE_TABLE(T)                                                                               \
    static void wk_avx2_gemm_q_##T(int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws,   \
                                   const void *x, size_t xs, float *y, size_t ldy)                 \
    {                                                                                              \
        wk_run_tiles(wk_tiles_##T, k / 256, nr, nc, w, ws, x, xs, y, ldy);                         \
    }

WK_LEGACY_GEMM(q4_0, wk_block_q4_0, wk_block_q8_0, wk_act_q8_0, false, false)
WK_LEGACY_GEMM(q4_1, wk_block_q4_1, wk_block_q8_1, wk_act_q8_1, true, true)
WK_LEGACY_GEMM(q5_0, wk_block_q5_0, wk_block_q8_0, wk_act_q8_0, false, false)
WK_LEGACY_GEMM(q5_1, wk_block_q5_1, wk_block_q8_1, wk_act_q8_1, true, true)
WK_LEGACY_GEMM(q8_0, wk_block_q8_0, wk_block_q8_0, wk_act_q8_0, false, false)
WK_LEGACY_GEMM(q8_1, wk_block_q8_1, wk_block_q8_1, wk_act_q8_1, false, false)
WK_K_GEMM(q2_K, true, true)
WK_K_GEMM(q3_K, false, false)
WK_K_GEMM(q4_K, true, true)
WK_K_GEMM(q5_K, true, true)
WK_K_GEMM(q6_K, false, false)
WK_K_GEMM(q8_K, false, false)

/* ---- precise form: dequantize a block into registers/L1, FMA with f32 x ------------ */
/* A block's weights as 32-element pieces in registers: prep_T(block, &state) once, then
 * deq32_T(block, j, &state, f) gives elements 32j .. 32j + 31 in f[0..3], j in order. The
 * buffered path stores these values and the register path (below) uses them at once. */
typedef struct {
    float dl[16], ml[16]; /* K types: d x scale and dmin x min of each 16 elements */
    __m256i aux;          /* K types: what a piece leaves for the next */
} wk_deq_state;

#define WK_LEGACY_DEQ(T)                                                                           \
    WK_INLINE void wk_prep32_##T(const void *b, wk_deq_state *st) { (void)b, (void)st; }          \
    WK_INLINE void wk_deq32_##T(const void *b, int j, wk_deq_state *st, __m256 f[4])              \
    {                                                                                              \
        (void)j, (void)st;                                                                         \
        float d, m;                                                                                \
        wk_s8_to_f32(wk_dec_##T(b, &d, &m), f);                                                    \
        __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);                                     \
        for (int i = 0; i < 4; i++) f[i] = _mm256_fmadd_ps(f[i], vd, vm);                          \
    }

WK_LEGACY_DEQ(q4_0)
WK_LEGACY_DEQ(q4_1)
WK_LEGACY_DEQ(q5_0)
WK_LEGACY_DEQ(q5_1)
/* 8-bit codes: each 8 bytes widened straight from memory (one instruction with its load),
 * where widening a register of 32 bytes takes extracts and shifts first: the same values. */
WK_INLINE void wk_s8x32_to_f32(const int8_t *qs, __m256 f[4])
{
    for (int i = 0; i < 4; i++) f[i] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(qs + 8 * i))));
}
#define WK_Q8_DEQ(T)                                                                               \
    WK_INLINE void wk_prep32_##T(const void *b, wk_deq_state *st) { (void)b, (void)st; }          \
    WK_INLINE void wk_deq32_##T(const void *b, int j, wk_deq_state *st, __m256 f[4])              \
    {                                                                                              \
        (void)j, (void)st;                                                                         \
        const wk_block_##T *x = b;                                                                 \
        wk_s8x32_to_f32(x->qs, f);                                                                 \
        const __m256 vd = _mm256_set1_ps(wk_h2f(x->d)), vm = _mm256_setzero_ps();                  \
        for (int i = 0; i < 4; i++) f[i] = _mm256_fmadd_ps(f[i], vd, vm);                          \
    }
WK_Q8_DEQ(q8_0)
WK_Q8_DEQ(q8_1)

/* The precise form's prep of the K formats: d x scale and dmin x min of each 16 elements. */
#define WK_KPREP32(T)                                                                              \
    WK_INLINE void wk_prep32_##T(const void *b, wk_deq_state *st)                                 \
    {                                                                                              \
        wk_kprep p;                                                                                \
        wk_prep_##T(b, &p);                                                                        \
        for (int g = 0; g < 16; g++) {                                                             \
            st->dl[g] = p.d * (float)p.sc[g];                                                      \
            st->ml[g] = p.dmin * (float)p.mn[g];                                                   \
        }                                                                                          \
        st->aux = _mm256_setzero_si256();                                                          \
    }
WK_KPREP32(q2_K)
WK_KPREP32(q3_K)
WK_KPREP32(q4_K)
WK_KPREP32(q5_K)
WK_KPREP32(q6_K)
WK_KPREP32(q8_K)

#define WK_K_DEQ(T)                                                                                \
    WK_INLINE void wk_deq32_##T(const void *b, int j, wk_deq_state *st, __m256 f[4])              \
    {                                                                                              \
        wk_s8_to_f32(wk_kdec_##T(b, j, &st->aux), f);                                              \
        for (int i = 0; i < 4; i++) {                                                              \
            int g = 2 * j + i / 2;                                                                 \
            f[i] = _mm256_fmsub_ps(f[i], _mm256_broadcast_ss(&st->dl[g]), _mm256_broadcast_ss(&st->ml[g])); \
        }                                                                                          \
    }

WK_K_DEQ(q2_K)
WK_K_DEQ(q3_K)
WK_K_DEQ(q4_K)
WK_K_DEQ(q5_K)
WK_K_DEQ(q6_K)

WK_INLINE void wk_deq32_q8_K(const void *b, int j, wk_deq_state *st, __m256 f[4])
{
    wk_s8x32_to_f32(((const wk_block_q8_K *)b)->qs + 32 * j, f);
    for (int i = 0; i < 4; i++) {
        int g = 2 * j + i / 2;
        f[i] = _mm256_fmsub_ps(f[i], _mm256_broadcast_ss(&st->dl[g]), _mm256_broadcast_ss(&st->ml[g]));
    }
}

/* deq_T(block, out, vs): the BS floats of a block, elements 8e .. 8e + 7 at out + e * vs
 * (vs = 8: in order, for the buffered path here; 16: two columns interleaved, for the
 * AVX-512 many-row kernel through wk_avx2_deq_for). */
#define WK_BLOCK_DEQ(T, BS, BB)                                                                    \
    WK_INLINE void wk_deq_##T(const void *b, float *out, size_t vs)                               \
    {                                                                                              \
        wk_deq_state st;                                                                           \
        wk_prep32_##T(b, &st);                                                                     \
        for (int j = 0; j < (BS) / 32; j++) {                                                      \
            __m256 f[4];                                                                           \
            wk_deq32_##T(b, j, &st, f);                                                            \
            for (int i = 0; i < 4; i++) _mm256_storeu_ps(out + (4 * j + i) * vs, f[i]);           \
        }                                                                                          \
    }                                                                                              \
    static void wk_deq_blocks_##T(const void *w, int64_t nb, size_t step, float *out, size_t vs)  \
    {                                                                                              \
        for (int64_t bi = 0; bi < nb; bi++)                                                        \
            wk_deq_##T((const char *)w + bi * step, out + bi * ((BS) / 8) * vs, vs);              \
    }

/* Dense weights: elements i..i+7 as f32, and a block of 32 of them. */
WK_INLINE __m256 wk_load8_f32(const void *w, int64_t i) { return _mm256_loadu_ps((const float *)w + i); }
WK_INLINE __m256 wk_load8_f16(const void *w, int64_t i)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)));
}
WK_INLINE __m256 wk_load8_bf16(const void *w, int64_t i)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}
#define WK_DENSE_DEQ(T)                                                                            \
    WK_INLINE void wk_prep32_##T(const void *b, wk_deq_state *st) { (void)b, (void)st; }          \
    WK_INLINE void wk_deq32_##T(const void *b, int j, wk_deq_state *st, __m256 f[4])              \
    {                                                                                              \
        (void)j, (void)st;                                                                         \
        for (int i = 0; i < 4; i++) f[i] = wk_load8_##T(b, 8 * i);                                 \
    }
WK_DENSE_DEQ(f32)
WK_DENSE_DEQ(f16)
WK_DENSE_DEQ(bf16)

/* Scalar element of a dense weight, for a k that is not a multiple of 32. */
WK_INLINE float wk_elem_f32(const void *w, int64_t i) { return ((const float *)w)[i]; }
WK_INLINE float wk_elem_f16(const void *w, int64_t i) { return wk_h2f(((const uint16_t *)w)[i]); }
WK_INLINE float wk_elem_bf16(const void *w, int64_t i) { return wk_bf16_to_float(((const uint16_t *)w)[i]); }

/* The precise form runs per group of 4 columns: their weights are dequantized a segment
 * of k at a time into an L1-resident buffer, which then serves every row (3 rows x 4
 * columns of FMAs per step: 12 accumulators hide the FMA latency that 8 left exposed,
 * 1.15-1.3x faster from 7 rows). Each output accumulates 8 lanes over k in order, then a
 * fixed horizontal sum: the same operations whatever the tile, the segment or the split
 * among threads. */
#define WK_FMA_ROWS 3
#define WK_KSEG 1024 /* elements per segment: a multiple of every block size */

#define WK_FMA_TILE(R, C)                                                                          \
    static void wk_fma_tile_##R##x##C(int64_t len, const float (*tmp)[WK_KSEG], const char *x,    \
                                      size_t xs, __m256 *acc)                                      \
    {                                                                                              \
        __m256 a[R][C];                                                                            \
        for (int r = 0; r < R; r++)                                                                \
            for (int c = 0; c < C; c++) a[r][c] = acc[4 * r + c];                                  \
        for (int64_t i = 0; i < len; i += 8) {                                                     \
            for (int r = 0; r < R; r++) {                                                          \
                __m256 xv = _mm256_loadu_ps((const float *)(x + r * xs) + i);                      \
                for (int c = 0; c < C; c++)                                                        \
                    a[r][c] = _mm256_fmadd_ps(_mm256_load_ps(tmp[c] + i), xv, a[r][c]);            \
            }                                                                                      \
        }                                                                                          \
        for (int r = 0; r < R; r++)                                                                \
            for (int c = 0; c < C; c++) acc[4 * r + c] = a[r][c];                                  \
    }

WK_FMA_TILE(1, 1)
WK_FMA_TILE(1, 2)
WK_FMA_TILE(1, 3)
WK_FMA_TILE(1, 4)
WK_FMA_TILE(2, 1)
WK_FMA_TILE(2, 2)
WK_FMA_TILE(2, 3)
WK_FMA_TILE(2, 4)
WK_FMA_TILE(3, 1)
WK_FMA_TILE(3, 2)
WK_FMA_TILE(3, 3)
WK_FMA_TILE(3, 4)

typedef void (*wk_fma_tile_fn)(int64_t len, const float (*tmp)[WK_KSEG], const char *x, size_t xs,
                               __m256 *acc);
static wk_fma_tile_fn const wk_fma_tiles[WK_FMA_ROWS][4] = {
    {wk_fma_tile_1x1, wk_fma_tile_1x2, wk_fma_tile_1x3, wk_fma_tile_1x4},
    {wk_fma_tile_2x1, wk_fma_tile_2x2, wk_fma_tile_2x3, wk_fma_tile_2x4},
    {wk_fma_tile_3x1, wk_fma_tile_3x2, wk_fma_tile_3x3, wk_fma_tile_3x4},
};

/* wk_avx2_f32_buffered_T: the buffered tiles on the file's layout or (OCT) on octets
 * (octets.h; nc a multiple of 8). BS: elements per block; BB: bytes per block; wk_deq_T: a
 * block to BS floats; ELEM: one element, for the k % 32 tail of dense weights. */
#define WK_F32_GEMM(T, BS, BB, ELEM)                                                         \
    WK_INLINE void wk_avx2_f32_buffered_##T(const bool OCT, int64_t k, int64_t nr, int64_t nc,  \
                                               const void *w, size_t ws, const void *x, size_t xs, \
                                               float *y, size_t ldy)                               \
    {                                                                                              \
        float tmp[4][WK_KSEG] __attribute__((aligned(32)));                                        \
        __m256 acc[4 * nr];                                                                        \
        int64_t kfull = k / (BS) * (BS);                                                           \
        const size_t step = wk_octet_step((BB), OCT);                                              \
        for (int64_t c0 = 0; c0 < nc; c0 += 4) {                                                   \
            int cc = nc - c0 < 4 ? (int)(nc - c0) : 4;                                             \
            for (int64_t i = 0; i < 4 * nr; i++) acc[i] = _mm256_setzero_ps();                     \
            for (int64_t s0 = 0; s0 < kfull; s0 += WK_KSEG) {                                      \
                int64_t len = kfull - s0 < WK_KSEG ? kfull - s0 : WK_KSEG;                         \
                for (int c = 0; c < cc; c++) {                                                     \
                    const char *wr = wk_octet_col(w, c0 + c, ws, (BB), OCT) + (s0 / (BS)) * step;  \
                    for (int64_t bi = 0; bi < len / (BS); bi++) {                                  \
                        wk_prefetch(wr + bi * step, (BB));                                         \
                        wk_deq_##T(wr + bi * step, tmp[c] + bi * (BS), 8);                         \
                    }                                                                              \
                }                                                                                  \
                for (int64_t r0 = 0; r0 < nr; r0 += WK_FMA_ROWS) {                                 \
                    int rr = nr - r0 < WK_FMA_ROWS ? (int)(nr - r0) : WK_FMA_ROWS;                 \
                    wk_fma_tiles[rr - 1][cc - 1](len, (const float (*)[WK_KSEG])tmp,               \
                                                 (const char *)x + r0 * xs + s0 * sizeof(float),   \
                                                 xs, acc + 4 * r0);                                \
                }                                                                                  \
            }                                                                                      \
            for (int64_t r = 0; r < nr; r++)                                                       \
                for (int c = 0; c < cc; c++) {                                                     \
                    float s = wk_hsum(acc[4 * r + c]);                                             \
                    const char *wr = (const char *)w + (c0 + c) * ws;                              \
                    for (int64_t i = kfull; i < k; i++)                                            \
                        s = wk_fma1(ELEM(wr, i), ((const float *)((const char *)x + r * xs))[i], s);         \
                    y[r * ldy + c0 + c] = s;                                                       \
                }                                                                                  \
        }                                                                                          \
    }

/* wk_avx2_gemm_f32_T: the register path for up to 4 rows, the buffered tiles beyond (wk_deq_T
 * made from the type's 32-element pieces). C1: columns side by side at one row; PF: whether
 * the register path prefetches. A block type's wk_avx2_octets_T: the same on octets. */
#define WK_ROWS_GEMM(T, BS, BB, ELEM, C1, PF)                                                      \
    WK_BLOCK_DEQ(T, BS, BB)                                                                        \
    WK_FEW_ROWS(wk_few_rows_##T, wk_deq_state, wk_prep32_##T, wk_deq32_##T, BS, BB, ELEM, PF)       \
    WK_F32_GEMM(T, BS, BB, ELEM)                                                                   \
    WK_INLINE void wk_avx2_f32_##T(const bool OCT, int64_t k, int64_t nr, int64_t nc, const void *w, \
                                   size_t ws, const void *x, size_t xs, float *y, size_t ldy)      \
    {                                                                                              \
        if (nr <= 4) WK_FEW_ROWS_RUN(wk_few_rows_##T, C1, 2, OCT, nr, k, nc, w, ws, x, xs, y, ldy);   \
        else wk_avx2_f32_buffered_##T(OCT, k, nr, nc, w, ws, x, xs, y, ldy);                       \
    }                                                                                              \
    WK_LAYOUT_GEMM(wk_avx2_gemm_f32_##T, wk_avx2_f32_##T, false)
/* A block type: 4 columns side by side at one row (8 were no faster, in octets either), the
 * weights prefetched. */
#define WK_BLOCK_ROWS_GEMM(T, BS)                                                                  \
    WK_ROWS_GEMM(T, BS, sizeof(wk_block_##T), wk_elem_none, 4, 1)                                  \
    WK_LAYOUT_GEMM(wk_avx2_octets_##T, wk_avx2_f32_##T, true)

/* The dense types at one row: 8 columns side by side (8 chains of FMAs, 8 streams) and no
 * software prefetch. F16 8192 x 4096 from memory, 2 threads, Zen 5 (session 25): 4 columns
 * with prefetch 2.23-2.45 ms, without 1.92-2.20, 8 columns without 1.68-2.08. */
#define WK_DENSE_C 8
WK_BLOCK_ROWS_GEMM(q4_0, 32)
WK_BLOCK_ROWS_GEMM(q4_1, 32)
WK_BLOCK_ROWS_GEMM(q5_0, 32)
WK_BLOCK_ROWS_GEMM(q5_1, 32)
WK_BLOCK_ROWS_GEMM(q8_0, 32)
WK_BLOCK_ROWS_GEMM(q8_1, 32)
WK_BLOCK_ROWS_GEMM(q2_K, 256)
WK_BLOCK_ROWS_GEMM(q3_K, 256)
WK_BLOCK_ROWS_GEMM(q4_K, 256)
WK_BLOCK_ROWS_GEMM(q5_K, 256)
WK_BLOCK_ROWS_GEMM(q6_K, 256)
WK_BLOCK_ROWS_GEMM(q8_K, 256)
WK_ROWS_GEMM(f32, 32, 32 * sizeof(float), wk_elem_f32, WK_DENSE_C, 0)
WK_ROWS_GEMM(f16, 32, 32 * sizeof(uint16_t), wk_elem_f16, WK_DENSE_C, 0)
WK_ROWS_GEMM(bf16, 32, 32 * sizeof(uint16_t), wk_elem_bf16, WK_DENSE_C, 0)

/* ---- activation quantizers: Q8_0 and Q8_1 in quantize_avx2.c; Q8_K the reference one
 * (exact bits, cheap next to the dots) -------------------------------------------------- */
static void wk_avx2_quantize_q8_K(const float *x, void *y, int64_t k) { wk_traits(WK_TYPE_Q8_K)->from_f32(x, y, k); }

#define WK_QTABLE(T, ACT)                                                                          \
    static const wk_cpu_kernels wk_avx2_##T = {"avx2", wk_avx2_quantize_##ACT, wk_avx2_gemm_q_##T, \
                                               wk_avx2_gemm_f32_##T, wk_avx2_octets_##T};
WK_QTABLE(q4_0, q8_0)
WK_QTABLE(q4_1, q8_1)
WK_QTABLE(q5_0, q8_0)
WK_QTABLE(q5_1, q8_1)
WK_QTABLE(q8_0, q8_0)
WK_QTABLE(q8_1, q8_1)
WK_QTABLE(q2_K, q8_K)
WK_QTABLE(q3_K, q8_K)
WK_QTABLE(q4_K, q8_K)
WK_QTABLE(q5_K, q8_K)
WK_QTABLE(q6_K, q8_K)
WK_QTABLE(q8_K, q8_K)
static const wk_cpu_kernels wk_avx2_f32 = {"avx2", NULL, NULL, wk_avx2_gemm_f32_f32, NULL};
static const wk_cpu_kernels wk_avx2_f16 = {"avx2", NULL, NULL, wk_avx2_gemm_f32_f16, NULL};
static const wk_cpu_kernels wk_avx2_bf16 = {"avx2", NULL, NULL, wk_avx2_gemm_f32_bf16, NULL};

const wk_cpu_kernels *wk_cpu_kernels_avx2(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q4_0: return &wk_avx2_q4_0;
    case WK_TYPE_Q4_1: return &wk_avx2_q4_1;
    case WK_TYPE_Q5_0: return &wk_avx2_q5_0;
    case WK_TYPE_Q5_1: return &wk_avx2_q5_1;
    case WK_TYPE_Q8_0: return &wk_avx2_q8_0;
    case WK_TYPE_Q8_1: return &wk_avx2_q8_1;
    case WK_TYPE_Q2_K: return &wk_avx2_q2_K;
    case WK_TYPE_Q3_K: return &wk_avx2_q3_K;
    case WK_TYPE_Q4_K: return &wk_avx2_q4_K;
    case WK_TYPE_Q5_K: return &wk_avx2_q5_K;
    case WK_TYPE_Q6_K: return &wk_avx2_q6_K;
    case WK_TYPE_Q8_K: return &wk_avx2_q8_K;
    case WK_TYPE_F32: return &wk_avx2_f32;
    case WK_TYPE_F16: return &wk_avx2_f16;
    case WK_TYPE_BF16: return &wk_avx2_bf16;
    default: return NULL;
    }
}

wk_deq_fn wk_avx2_deq_for(wk_type t)
{
    switch (t) {
    case WK_TYPE_Q4_0: return wk_deq_blocks_q4_0;
    case WK_TYPE_Q4_1: return wk_deq_blocks_q4_1;
    case WK_TYPE_Q5_0: return wk_deq_blocks_q5_0;
    case WK_TYPE_Q5_1: return wk_deq_blocks_q5_1;
    case WK_TYPE_Q8_0: return wk_deq_blocks_q8_0;
    case WK_TYPE_Q8_1: return wk_deq_blocks_q8_1;
    case WK_TYPE_Q2_K: return wk_deq_blocks_q2_K;
    case WK_TYPE_Q3_K: return wk_deq_blocks_q3_K;
    case WK_TYPE_Q4_K: return wk_deq_blocks_q4_K;
    case WK_TYPE_Q5_K: return wk_deq_blocks_q5_K;
    case WK_TYPE_Q6_K: return wk_deq_blocks_q6_K;
    case WK_TYPE_Q8_K: return wk_deq_blocks_q8_K;
    case WK_TYPE_F32: return wk_deq_blocks_f32;
    case WK_TYPE_F16: return wk_deq_blocks_f16;
    case WK_TYPE_BF16: return wk_deq_blocks_bf16;
    default: return NULL;
    }
}
