/* The CPU model operations (src/cpu/ops.c and src/cpu/x86/ops*_avx2.c) against float64
 * references written here, on random inputs:
 * - the activation quantizers: codes round(x * 127 / amax) to nearest even, d = amax / 127
 *   as a half, s = d * sum(codes) as a half;
 * - the quantized form's matmuls of every 32-element format and of Q4_K and Q6_K, through
 *   repacked groups and the rows after the last group, for 1, 5 and 9 activation rows
 *   (the one-row and four-row orders), 1 and 2 threads (equal bit for bit);
 * - SiLU-gated products, RoPE, and attention over 1..70 keys for one and several rows;
 *   the attention's scores of all keys in one call equal the per-key dot products, and its
 *   value sums slot by slot equal them key by key, bit for bit.
 * Each result is within a few float roundings of its float64 reference. Skipped (passes)
 * without AVX2, where these paths are not taken. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/half.h"
#include "cpu/kernels.h"
#include "cpu/ops_internal.h"
#include "model/backend.h"
#include "quant/blocks.h"
#include "quant/traits.h"
#include "wick.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void fill(float *a, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++) a[i] = scale * frand();
}

/* ---- activation quantizers ---------------------------------------------------------- */
static void test_act_quantizers(void)
{
    enum { K = 256 };
    float x[K];
    fill(x, K, 3.0f);
    /* ties and exact values: x*127/amax lands on .5 for some elements */
    x[0] = 127.0f / 16.0f; /* amax of block 0 */
    x[1] = 0.5f / 16.0f;
    x[2] = -2.5f / 16.0f;
    for (int i = 3; i < 32; i++) x[i] = (float)(i % 7) / 16.0f;
    memset(x + 64, 0, 32 * sizeof(float)); /* an all-zero block */
    wk_block_q8_0 q0[K / 32];
    wk_block_q8_1 q1[K / 32];
    wk_avx2_act_q8_0(x, q0, K);
    wk_avx2_act_q8_1(x, q1, K);
    for (int b = 0; b < K / 32; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        float id = amax != 0.0f ? 127.0f / amax : 0.0f, d = amax / 127.0f;
        int sum = 0, bad = 0;
        for (int j = 0; j < 32; j++) {
            int want = (int)nearbyintf(x[32 * b + j] * id);
            bad += q0[b].qs[j] != want || q1[b].qs[j] != want;
            sum += want;
        }
        CHECK_MSG(bad == 0, "block %d: %d codes differ from round-to-even(x * 127 / amax)", b, bad);
        CHECK_EQ_INT(q0[b].d, wk_float_to_half(d));
        CHECK_EQ_INT(q1[b].d, wk_float_to_half(d));
        CHECK_EQ_INT(q1[b].s, wk_float_to_half(d * (float)sum));
    }
    CHECK_EQ_INT(q0[0].qs[1], 0);  /* 0.5 rounds to even 0 */
    CHECK_EQ_INT(q0[0].qs[2], -2); /* -2.5 rounds to even -2 */

    /* Q8_K: the reference quantizer's bytes, on random rows, ties, a zero block, a negative
     * largest value and two of the largest magnitude with opposite signs (the first counts). */
    enum { KK = 256 * 6 };
    static float xk[KK];
    fill(xk, KK, 5.0f);
    xk[3] = -9.0f; /* block 0: a negative max */
    xk[256 + 10] = 8.0f, xk[256 + 200] = -8.0f; /* block 1: +8 first */
    xk[512 + 7] = -8.0f, xk[512 + 100] = 8.0f;  /* block 2: -8 first */
    memset(xk + 768, 0, 256 * sizeof(float));     /* block 3: zeros */
    xk[1024] = -127.0f; /* block 4: scale 1, halves that round to even */
    for (int i = 1; i < 256; i++) xk[1024 + i] = (float)(i % 200 - 100) + 0.5f;
    static wk_block_q8_K got[KK / 256], want[KK / 256];
    wk_avx2_act_q8_K(xk, got, KK);
    wk_traits(WK_TYPE_Q8_K)->from_f32(xk, want, KK);
    for (int b = 0; b < KK / 256; b++)
        CHECK_MSG(memcmp(&got[b], &want[b], sizeof got[b]) == 0, "Q8_K block %d differs from the reference quantizer", b);
    CHECK(got[1].d < 0.0f && got[2].d > 0.0f);
}

/* ---- matmuls ------------------------------------------------------------------------ */
/* The activation row as the kernels see it, dequantized, plus for Q8_1 the correction
 * (s as stored) - dx * sum(codes) per block, which the min formats add times m. */
static void act_reference(wk_type wt, const float *x, int64_t k, double *xd, double *s_err)
{
    if (wt == WK_TYPE_Q4_K || wt == WK_TYPE_Q6_K) {
        wk_qtensor *t;
        int64_t dims[1] = {k};
        CHECK_OK(wk_qtensor_quantize(WK_TYPE_Q8_K, 1, dims, x, &t));
        float *f = malloc((size_t)k * sizeof(float));
        CHECK_OK(wk_qtensor_dequantize_f32(t, f));
        for (int64_t i = 0; i < k; i++) xd[i] = f[i];
        for (int64_t b = 0; b < k / 32; b++) s_err[b] = 0.0;
        free(f);
        wk_qtensor_free(t);
        return;
    }
    wk_block_q8_1 *q = malloc((size_t)(k / 32) * sizeof *q);
    wk_avx2_act_q8_1(x, q, k);
    for (int64_t b = 0; b < k / 32; b++) {
        double dx = wk_half_to_float(q[b].d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            xd[32 * b + j] = dx * q[b].qs[j];
            sum += q[b].qs[j];
        }
        s_err[b] = (double)wk_half_to_float(q[b].s) - dx * sum;
    }
    free(q);
}

static double block_min(wk_type t, const void *row, int64_t b)
{
    if (t == WK_TYPE_Q4_1) return wk_half_to_float(((const wk_block_q4_1 *)row)[b].m);
    if (t == WK_TYPE_Q5_1) return wk_half_to_float(((const wk_block_q5_1 *)row)[b].m);
    return 0.0;
}

static void test_matmul_type(wk_engine *e1, wk_engine *e2, wk_type t, const char *name)
{
    enum { N = 76, K = 512, MMAX = 9 }; /* 9 groups of 8 rows and 4 rows after them */
    float *w = malloc(sizeof(float) * N * K), *wd = malloc(sizeof(float) * N * K);
    float *x = malloc(sizeof(float) * MMAX * K);
    fill(w, (int64_t)N * K, 0.5f);
    fill(x, (int64_t)MMAX * K, 2.0f);
    for (int i = 0; i < K; i += 37) x[i] *= 8.0f; /* a few outliers per row */
    int64_t dims[2] = {N, K};
    wk_qtensor *ref_t, *t1, *t2;
    CHECK_OK(wk_qtensor_quantize(t, 2, dims, w, &ref_t));
    CHECK_OK(wk_qtensor_quantize(t, 2, dims, w, &t1));
    CHECK_OK(wk_qtensor_quantize(t, 2, dims, w, &t2));
    CHECK_OK(wk_qtensor_dequantize_f32(ref_t, wd));
    const uint8_t *wbytes = wk_qtensor_data(ref_t);
    size_t row_bytes = wk_qtensor_nbytes(ref_t) / N;
    wk_qmatmul *m1, *m2;
    CHECK_OK(wk_qmatmul_create(e1, t1, WK_FORM_QUANTIZED, &m1));
    CHECK_OK(wk_qmatmul_create(e2, t2, WK_FORM_QUANTIZED, &m2));
    float y1[MMAX * N], y2[MMAX * N];
    double xd[K], s_err[K / 32];
    const int64_t ms[3] = {1, 5, 9};
    for (int mi = 0; mi < 3; mi++) {
        int64_t m = ms[mi];
        CHECK_OK(wk_cpu_backend.matmul(e1, m1, x, m, y1));
        CHECK_OK(wk_cpu_backend.matmul(e2, m2, x, m, y2));
        CHECK_MSG(memcmp(y1, y2, sizeof(float) * (size_t)(m * N)) == 0,
                  "%s m=%lld: 1 and 2 threads differ", name, (long long)m);
        double worst = 0.0;
        for (int64_t r = 0; r < m; r++) {
            act_reference(t, x + r * K, K, xd, s_err);
            for (int64_t c = 0; c < N; c++) {
                double ref = 0.0, mag = 0.0;
                for (int64_t i = 0; i < K; i++) {
                    ref += (double)wd[c * K + i] * xd[i];
                    mag += fabs((double)wd[c * K + i] * xd[i]);
                }
                for (int64_t b = 0; b < K / 32; b++) {
                    double mb = block_min(t, wbytes + (size_t)c * row_bytes, b);
                    ref += mb * s_err[b];
                    mag += fabs(mb * s_err[b]);
                }
                double err = fabs(y1[r * N + c] - ref) / (mag + 1e-6);
                if (err > worst) worst = err;
            }
        }
        CHECK_MSG(worst < 1e-5, "%s m=%lld: relative error %.3g", name, (long long)m, worst);
    }
    wk_qmatmul_free(m1);
    wk_qmatmul_free(m2);
    wk_qtensor_free(ref_t);
    free(w);
    free(wd);
    free(x);
}

/* ---- element-wise ops and attention ----------------------------------------------- */
static void test_swiglu_rope(wk_engine *e)
{
    enum { N = 1000 };
    float g[N], u[N];
    fill(g, N, 12.0f);
    fill(u, N, 1.0f);
    g[0] = 95.0f; /* beyond the polynomial's range: the slow lanes */
    g[1] = -100.0f;
    double ref[N];
    for (int i = 0; i < N; i++) ref[i] = (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i];
    CHECK_OK(wk_cpu_backend.silu_mul(e, g, u, N));
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        double err = fabs(g[i] - ref[i]) / (fabs(ref[i]) + 1e-30);
        if (err > worst) worst = err;
    }
    CHECK_MSG(worst < 1e-6, "silu_mul: relative error %.3g", worst);

    enum { ROWS = 3, HEADS = 2, HD = 64, ROT = 48 };
    float x[ROWS * HEADS * HD], x0[ROWS * HEADS * HD];
    fill(x, ROWS * HEADS * HD, 1.0f);
    memcpy(x0, x, sizeof x);
    CHECK_OK(wk_cpu_backend.rope(e, x, ROWS, HEADS, HD, ROT, 7, 10000.0f));
    double rw = 0.0;
    for (int r = 0; r < ROWS; r++)
        for (int h = 0; h < HEADS; h++)
            for (int i = 0; i < HD / 2; i++) {
                const float *a = x0 + (r * HEADS + h) * HD;
                const float *b = x + (r * HEADS + h) * HD;
                double th = (7 + r) * pow(10000.0, -2.0 * i / ROT);
                double y0 = 2 * i < ROT ? a[2 * i] * cos(th) - a[2 * i + 1] * sin(th) : a[2 * i];
                double y1 = 2 * i < ROT ? a[2 * i] * sin(th) + a[2 * i + 1] * cos(th) : a[2 * i + 1];
                double err = fmax(fabs(b[2 * i] - y0), fabs(b[2 * i + 1] - y1));
                if (err > rw) rw = err;
            }
    CHECK_MSG(rw < 1e-5, "rope: error %.3g", rw);
}

static void test_attention(wk_engine *e)
{
    enum { HEADS = 4, KVH = 2, HD = 64, CTX = 80 };
    int64_t kv_dim = KVH * HD;
    float *k = malloc(sizeof(float) * CTX * kv_dim), *v = malloc(sizeof(float) * CTX * kv_dim);
    fill(k, CTX * kv_dim, 2.0f);
    fill(v, CTX * kv_dim, 1.0f);
    const int64_t cases[][2] = {{0, 1}, {39, 1}, {69, 1}, {0, 9}, {30, 7}}; /* pos0, rows */
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int64_t pos0 = cases[ci][0], rows = cases[ci][1];
        float *q = malloc(sizeof(float) * rows * HEADS * HD), *out = malloc(sizeof(float) * rows * HEADS * HD);
        fill(q, rows * HEADS * HD, 2.0f);
        CHECK_OK(wk_cpu_backend.attention(e, out, q, k, v, rows, pos0, HEADS, KVH, HD));
        double worst = 0.0;
        for (int64_t r = 0; r < rows; r++)
            for (int h = 0; h < HEADS; h++) {
                int kvh = h / (HEADS / KVH);
                int64_t nk = pos0 + r + 1;
                double s[CTX], mx = -INFINITY, sum = 0.0;
                for (int64_t t = 0; t < nk; t++) {
                    double dot = 0.0;
                    for (int d = 0; d < HD; d++) dot += (double)q[(r * HEADS + h) * HD + d] * k[t * kv_dim + kvh * HD + d];
                    s[t] = dot / sqrt((double)HD);
                    mx = fmax(mx, s[t]);
                }
                for (int64_t t = 0; t < nk; t++) sum += (s[t] = exp(s[t] - mx));
                for (int d = 0; d < HD; d++) {
                    double o = 0.0;
                    for (int64_t t = 0; t < nk; t++) o += s[t] / sum * v[t * kv_dim + kvh * HD + d];
                    double err = fabs(out[(r * HEADS + h) * HD + d] - o);
                    if (err > worst) worst = err;
                }
            }
        CHECK_MSG(worst < 2e-6, "attention pos0 %lld rows %lld: error %.3g", (long long)pos0,
                  (long long)rows, worst);
        free(q);
        free(out);
    }
    free(k);
    free(v);
}

/* The scores of all keys in one call equal the per-key dot products bit for bit (hd 64:
 * q kept in registers; 32 and 128: the per-key calls), and the largest is theirs. */
static void test_scores(void)
{
    enum { STRIDE = 3 * 128, KEYS = 70 };
    float *q = malloc(sizeof(float) * 128), *k = malloc(sizeof(float) * KEYS * STRIDE);
    float s[KEYS];
    const int64_t hds[] = {32, 64, 128}, keys[] = {1, 7, 70};
    for (size_t hi = 0; hi < 3; hi++)
        for (size_t ki = 0; ki < 3; ki++) {
            fill(q, 128, 3.0f);
            fill(k, KEYS * STRIDE, 3.0f);
            const float scale = 1.0f / sqrtf((float)hds[hi]);
            float max = wk_avx2_scores_vec(s, q, k + 64, STRIDE, keys[ki], hds[hi], scale), want_max = -INFINITY;
            int bad = 0;
            for (int64_t t = 0; t < keys[ki]; t++) {
                float want = wk_avx2_dot_vec(q, k + 64 + t * STRIDE, hds[hi], false) * scale;
                if (memcmp(&want, &s[t], sizeof want)) bad++;
                if (want > want_max) want_max = want;
            }
            CHECK_MSG(bad == 0 && max == want_max, "scores hd %lld keys %lld: %d differ, max %g want %g",
                      (long long)hds[hi], (long long)keys[ki], bad, max, want_max);
        }
    free(q);
    free(k);
}

/* The value sums walk the keys slot by slot: each slot's sums (left in acc) equal those of
 * walking the keys in order, one fused multiply-add a key, bit for bit, for both orders,
 * f32 and f16 values and several head sizes. */
static void test_weighted_sum(void)
{
    enum { STRIDE = 3 * 128, KEYS = 70 };
    float *v = malloc(sizeof(float) * KEYS * STRIDE), p[KEYS], out[128];
    uint16_t *vh = malloc(sizeof(uint16_t) * KEYS * STRIDE);
    float *acc = malloc(sizeof(float) * 32 * 128), *ref = malloc(sizeof(float) * 32 * 128);
    const int64_t hds[] = {32, 64, 80, 128}, keys[] = {1, 7, 33, 70};
    for (size_t hi = 0; hi < 4; hi++)
        for (size_t ki = 0; ki < 4; ki++)
            for (int vo = 0; vo < 2; vo++)
                for (int f16 = 0; f16 < 2; f16++) {
                    const int64_t hd = hds[hi], nk = keys[ki];
                    const int slots = vo ? 32 : 8;
                    fill(v, KEYS * STRIDE, 2.0f);
                    for (int64_t i = 0; i < KEYS * STRIDE; i++) {
                        vh[i] = wk_f32_to_f16(v[i]);
                        if (f16) v[i] = wk_f16_to_f32(vh[i]);
                    }
                    for (int64_t t = 0; t < nk; t++) p[t] = 0.5f * (frand() + 1.0f);
                    const void *vv = f16 ? (const void *)(vh + 64) : (const void *)(v + 64);
                    wk_avx2_weighted_sum(out, p, vv, STRIDE, nk, hd, f16, vo, acc);
                    for (int64_t i = 0; i < slots * hd; i++) ref[i] = 0.0f;
                    for (int64_t t = 0; t < nk; t++)
                        for (int64_t d = 0; d < hd; d++) {
                            float *r = &ref[(t % slots) * hd + d];
                            *r = fmaf(p[t], v[64 + t * STRIDE + d], *r);
                        }
                    CHECK_MSG(!memcmp(acc, ref, sizeof(float) * (size_t)(slots * hd)),
                              "weighted sum hd %lld keys %lld order %s %s: slot sums differ", (long long)hd,
                              (long long)nk, vo ? "vec" : "tile", f16 ? "f16" : "f32");
                }
    free(v);
    free(vh);
    free(acc);
    free(ref);
}

int main(void)
{
    if (wk_cpu_isa() < WK_ISA_AVX2) {
        printf("skip: no AVX2 (the llama.cpp-order paths are not used)\n");
        return 0;
    }
    wk_engine *e1, *e2;
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 1, &e1));
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 2, &e2));
    test_act_quantizers();
    test_matmul_type(e1, e2, WK_TYPE_Q4_0, "Q4_0");
    test_matmul_type(e1, e2, WK_TYPE_Q4_1, "Q4_1");
    test_matmul_type(e1, e2, WK_TYPE_Q5_0, "Q5_0");
    test_matmul_type(e1, e2, WK_TYPE_Q5_1, "Q5_1");
    test_matmul_type(e1, e2, WK_TYPE_Q8_0, "Q8_0");
    test_matmul_type(e1, e2, WK_TYPE_Q4_K, "Q4_K");
    test_matmul_type(e1, e2, WK_TYPE_Q6_K, "Q6_K");
    test_swiglu_rope(e1);
    test_scores();
    test_weighted_sum();
    test_attention(e1);
    test_attention(e2);
    wk_engine_free(e1);
    wk_engine_free(e2);
    printf("%d checks, %d failures\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
