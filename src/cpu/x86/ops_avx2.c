/* AVX2 pieces of the CPU model operations (src/cpu/ops.c): the exponential, the SiLU-gated
 * product and the dot-product orders of the attention.
 *
 * Why these shapes: the quantized form rounds activations to 8 bits before every matmul,
 * and a last-bit difference anywhere upstream can move a value across a rounding boundary;
 * 30 layers amplify that into different text. So these routines evaluate in the same order
 * of float operations as llama.cpp's CPU backend on an AVX2 machine (checked bit for bit
 * against its intermediate tensors, see docs/model.md):
 *  - e^x: a range reduction x = n·ln2 + b (n rounded with the 1.5·2^23 shifter, ln2 split
 *    in two), a degree-5 polynomial in b, and 2^n put into the exponent bits;
 *  - dot products of length n: either four accumulators of 8 lanes over steps of 32
 *    ("vec" order: its one-row path) or one accumulator of 8 lanes ("tile" order: its
 *    multi-row path), each ending in a fixed tree of lane additions. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "core/half.h"
#include "cpu/ops_internal.h"

/* e^x for 8 lanes. Lanes with |n| > 126 (|x| > ~87), where the exponent bits would
 * overflow, are computed with expf (0 for -inf, inf for large x). */
static inline __m256 wk_exp8(__m256 x)
{
    const __m256 shifter = _mm256_set1_ps(0x1.8p23f);
    __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), shifter);
    __m256 n = _mm256_sub_ps(z, shifter);
    __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1.0f))));
    __m256 big = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), _mm256_set1_ps(126.0f),
                               _CMP_GT_OQ);
    __m256 u = _mm256_mul_ps(b, b);
    __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    __m256 r = _mm256_fmadd_ps(j, k, k);
    if (_mm256_movemask_ps(big)) {
        float xs[8], rs[8];
        _mm256_storeu_ps(xs, x);
        _mm256_storeu_ps(rs, r);
        int mask = _mm256_movemask_ps(big);
        for (int i = 0; i < 8; i++)
            if (mask & (1 << i)) rs[i] = expf(xs[i]);
        r = _mm256_loadu_ps(rs);
    }
    return r;
}

/* ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) */
static inline float wk_hsum8(__m256 v)
{
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* Four accumulators folded (0+2, 1+3, then 0+1), then the halves, then two pairwise adds. */
static inline float wk_reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    a0 = _mm256_add_ps(a0, a2);
    a1 = _mm256_add_ps(a1, a3);
    a0 = _mm256_add_ps(a0, a1);
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
    t = _mm_hadd_ps(t, t);
    t = _mm_hadd_ps(t, t);
    return _mm_cvtss_f32(t);
}

void wk_avx2_swiglu(float *g, const float *u, int64_t n)
{
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 e = wk_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        __m256 s = _mm256_div_ps(x, _mm256_add_ps(one, e));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* y[i] = e^(x[i] - max) for i < n (n a multiple of 8); returns the sum of the 8-lane
 * chunk sums, added in double. */
double wk_avx2_softmax_exp(float *y, const float *x, int64_t n, float max)
{
    double sum = 0.0;
    __m256 m = _mm256_set1_ps(max);
    for (int64_t i = 0; i < n; i += 8) {
        __m256 v = wk_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(y + i, v);
        sum += (double)wk_hsum8(v);
    }
    return sum;
}

static inline __m256 wk_load_kv(const void *p, int64_t i, bool f16)
{
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_loadu_ps((const float *)p + i);
}

/* q · k over n (a multiple of 32) in the vec order; k is f32 or f16 (then q is too). */
float wk_avx2_dot_vec(const void *q, const void *k, int64_t n, bool f16)
{
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n; i += 32)
        for (int j = 0; j < 4; j++)
            a[j] = _mm256_fmadd_ps(wk_load_kv(q, i + 8 * j, f16), wk_load_kv(k, i + 8 * j, f16), a[j]);
    return wk_reduce4(a[0], a[1], a[2], a[3]);
}

/* s[t] = (q · k_t) * scale for t < n_keys, k_t at k + t * k_stride floats (all f32), each
 * product exactly as wk_avx2_dot_vec computes it (hd a multiple of 32); returns the largest
 * s[t]. One call for all keys of a head: at hd = 64 q stays in registers instead of being
 * loaded again for every key. */
float wk_avx2_scores_vec(float *s, const float *q, const float *k, int64_t k_stride, int64_t n_keys, int64_t hd,
                         float scale)
{
    float max = -INFINITY;
    if (hd == 64) {
        __m256 qv[8];
        for (int j = 0; j < 8; j++) qv[j] = _mm256_loadu_ps(q + 8 * j);
        for (int64_t t = 0; t < n_keys; t++) {
            const float *kt = k + t * k_stride;
            __m256 a[4];
            for (int j = 0; j < 4; j++) a[j] = _mm256_fmadd_ps(qv[j], _mm256_loadu_ps(kt + 8 * j), _mm256_setzero_ps());
            for (int j = 0; j < 4; j++) a[j] = _mm256_fmadd_ps(qv[4 + j], _mm256_loadu_ps(kt + 32 + 8 * j), a[j]);
            s[t] = wk_reduce4(a[0], a[1], a[2], a[3]) * scale;
            if (s[t] > max) max = s[t];
        }
        return max;
    }
    for (int64_t t = 0; t < n_keys; t++) {
        s[t] = wk_avx2_dot_vec(q, k + t * k_stride, hd, false) * scale;
        if (s[t] > max) max = s[t];
    }
    return max;
}

/* q · k over n (a multiple of 8) in the tile order. */
float wk_avx2_dot_tile(const void *q, const void *k, int64_t n, bool f16)
{
    __m256 a = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8)
        a = _mm256_fmadd_ps(wk_load_kv(q, i, f16), wk_load_kv(k, i, f16), a);
    return wk_hsum8(a);
}

/* out[d] = sum_j p[j] * v_j[d] for d < hd (a multiple of 8), j < n_keys, with v_j at
 * v + j*v_stride elements: the sum over positions runs in lanes (slot j % slots of
 * `slots` = 32 accumulators for the vec order, 8 for the tile order), vectorized over d,
 * then reduced like the dot products. acc: slots * hd floats of scratch. */
void wk_avx2_weighted_sum(float *out, const float *p, const void *v, int64_t v_stride, int64_t n_keys,
                          int64_t hd, bool f16, bool vec_order, float *acc)
{
    int slots = vec_order ? 32 : 8;
    /* Slot by slot (keys s, s + slots, ... in order: each slot's sums see the same fused
     * multiply-adds as walking the keys in order), 64 dims at a time in registers. */
    for (int64_t d0 = 0; d0 < hd; d0 += 64) {
        const int nv = (int)((hd - d0 < 64 ? hd - d0 : 64) / 8);
        for (int sl = 0; sl < slots; sl++) {
            __m256 a[8];
            for (int q = 0; q < 8; q++) a[q] = _mm256_setzero_ps();
            for (int64_t j = sl; j < n_keys; j += slots) {
                const __m256 pj = _mm256_set1_ps(p[j]);
                for (int q = 0; q < 8; q++)
                    if (q < nv) a[q] = _mm256_fmadd_ps(pj, wk_load_kv(v, j * v_stride + d0 + 8 * q, f16), a[q]);
            }
            for (int q = 0; q < 8; q++)
                if (q < nv) _mm256_storeu_ps(acc + sl * hd + d0 + 8 * q, a[q]);
        }
    }
    /* Lane l of accumulator r is slot 8r + l. */
#define A(s) _mm256_loadu_ps(acc + (s) * hd + d)
    for (int64_t d = 0; d < hd; d += 8) {
        __m256 l[8];
        for (int s = 0; s < 8; s++) {
            if (vec_order) /* fold the four accumulators: (0+2) + (1+3) */
                l[s] = _mm256_add_ps(_mm256_add_ps(A(s), A(16 + s)), _mm256_add_ps(A(8 + s), A(24 + s)));
            else
                l[s] = A(s);
        }
        __m256 r;
        if (vec_order) { /* halves, then (h0+h1) + (h2+h3) */
            __m256 h0 = _mm256_add_ps(l[0], l[4]), h1 = _mm256_add_ps(l[1], l[5]);
            __m256 h2 = _mm256_add_ps(l[2], l[6]), h3 = _mm256_add_ps(l[3], l[7]);
            r = _mm256_add_ps(_mm256_add_ps(h0, h1), _mm256_add_ps(h2, h3));
        } else { /* ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) */
            __m256 h0 = _mm256_add_ps(l[0], l[4]), h1 = _mm256_add_ps(l[1], l[5]);
            __m256 h2 = _mm256_add_ps(l[2], l[6]), h3 = _mm256_add_ps(l[3], l[7]);
            r = _mm256_add_ps(_mm256_add_ps(h0, h2), _mm256_add_ps(h1, h3));
        }
        _mm256_storeu_ps(out + d, r);
    }
#undef A
}
