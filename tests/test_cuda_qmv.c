/* CUDA matrix-vector launches (wk_cuda_qmv): the input prepared in the same launch as it
 * is, as an RMSNorm or as silu(gate) * up, three weights of one input, a residual add, RoPE
 * (its position also read from the device, as in a graph's decode step), an RMSNorm of the
 * residual plus the heads' shares of an output projection (their sum stored, the residual
 * output taken from another array), with outputs of 17-40 rows and of 1200, against
 * float64 references on fresh random inputs with the outputs poisoned; rows that start on
 * 2-byte boundaries; the input prepared inside the kernel and in scratch; and the
 * rejections. Skips (exit 0) when no CUDA device is present. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WICK_HAVE_CUDA
#include "check.h"
#include "core/fnv.h"
#include "cuda_check.h"
#include "cuda/kernels.h"
#include "wick/quant.h"
#include "quant/traits.h"

/* One weight [n, k] of type t on the device and its dequantized values. */
static void *make_weight(wk_type t, int64_t n, int64_t k, double *ref)
{
    const wk_type_traits *tr = wk_traits(t);
    int64_t qk = tr->block_size;
    size_t bytes = (size_t)(n * k / qk) * tr->block_bytes;
    float *src = malloc(sizeof(float) * (size_t)(n * k));
    void *q = malloc(bytes);
    for (int64_t i = 0; i < n * k; i++) src[i] = (float)(urand() * (1.0 + (i % 5 == 0)));
    tr->from_f32(src, q, n * k);
    tr->to_f32(q, src, n * k);
    for (int64_t i = 0; i < n * k; i++) ref[i] = src[i];
    void *d = dev_copy(q, bytes);
    free(src);
    free(q);
    return d;
}

static const char *src_name(wk_qmv_src s)
{
    return s == WK_QMV_INPUT ? "input" : s == WK_QMV_RMSNORM ? "rmsnorm" : "silu_mul";
}

/* FNV-1a over every output's bits, printed at the end: a run under another kernel setting
 * (a WICK_CUDA_QMV_* switch) that prints the same digest gave the same bits, since the
 * inputs come from a fixed seed. */
static uint64_t out_digest = WK_FNV1A_SEED;
static void digest(const void *p, size_t bytes) { out_digest = wk_fnv1a(out_digest, p, bytes); }

/* from: the residual output takes its value from another array (add_from: add = from + y),
 * as in a decode step whose attention launch left residual + projection in a sum. */
/* packed: the weights in the packed layout (wk_cuda_pack) instead of rows. */
static void run_n(wk_cuda_ctx *c, wk_type t, int64_t k, int64_t m, wk_qmv_src src, bool from_sum,
                  const int64_t ns[3], bool packed)
{
    const float eps = 1e-5f;
    double *wref[3];
    void *w[3];
    for (int o = 0; o < 3; o++) {
        wref[o] = malloc(sizeof(double) * (size_t)(ns[o] * k));
        w[o] = make_weight(t, ns[o], k, wref[o]);
        if (packed) {
            const size_t bytes = (size_t)(ns[o] * k / wk_traits(t)->block_size) * wk_traits(t)->block_bytes;
            void *pw = NULL;
            CHECK_OK(wk_cuda_malloc(bytes, &pw));
            CHECK_OK(wk_cuda_pack(c, t, w[o], ns[o], k, pw));
            CHECK_OK(wk_cuda_ctx_sync(c));
            wk_cuda_free(w[o]);
            w[o] = pw;
        }
    }
    float *x = malloc(sizeof(float) * (size_t)(m * k)), *x2 = malloc(sizeof(float) * (size_t)(m * k));
    float *nw = malloc(sizeof(float) * (size_t)k);
    double *v = malloc(sizeof(double) * (size_t)(m * k));
    for (int64_t r = 0; r < m; r++) {
        double mag = r % 3 == 0 ? 1.0 : (r % 3 == 1 ? 0.01 : 40.0);
        for (int64_t i = 0; i < k; i++) {
            x[r * k + i] = (float)(urand() * mag);
            x2[r * k + i] = (float)urand();
        }
    }
    for (int64_t i = 0; i < k; i++) nw[i] = (float)(1.0 + 0.5 * urand());
    const float *xin = x; /* what the RMSNorm normalizes */
    /* The prepared input in float64. */
    for (int64_t r = 0; r < m; r++) {
        double ss = 0;
        for (int64_t i = 0; i < k; i++) ss += (double)xin[r * k + i] * xin[r * k + i];
        double rr = 1.0 / sqrt(ss / (double)k + eps);
        for (int64_t i = 0; i < k; i++) {
            double a = src == WK_QMV_RMSNORM ? xin[r * k + i] : x[r * k + i];
            v[r * k + i] = src == WK_QMV_INPUT     ? a
                           : src == WK_QMV_RMSNORM ? a * rr * nw[i]
                                                   : a / (1.0 + exp(-a)) * x2[r * k + i];
        }
    }
    float *acc0 = malloc(sizeof(float) * (size_t)(m * ns[2]));
    for (int64_t i = 0; i < m * ns[2]; i++) acc0[i] = (float)urand();
    int64_t most = k; /* the longest of the input rows and outputs */
    for (int o = 0; o < 3; o++) most = ns[o] > most ? ns[o] : most;
    float *poison = malloc(sizeof(float) * (size_t)(m * most));
    for (int64_t i = 0; i < m * most; i++) poison[i] = NAN;

    float *from = malloc(sizeof(float) * (size_t)(m * ns[2]));
    for (int64_t i = 0; i < m * ns[2]; i++) from[i] = from_sum ? (float)urand() : 0.f; /* no draws without */
    void *dfrom = from_sum ? dev_copy(from, sizeof(float) * (size_t)(m * ns[2])) : NULL;
    void *dx = dev_copy(x, sizeof(float) * (size_t)(m * k));
    void *dx2 = dev_copy(x2, sizeof(float) * (size_t)(m * k));
    void *dnw = dev_copy(nw, sizeof(float) * (size_t)k);
    void *dnorm = dev_copy(poison, sizeof(float) * (size_t)(m * k));
    void *dacc = dev_copy(acc0, sizeof(float) * (size_t)(m * ns[2]));
    void *dy[3];
    for (int o = 0; o < 3; o++) dy[o] = dev_copy(poison, sizeof(float) * (size_t)(m * ns[o]));

    wk_cuda_qmv_job j;
    memset(&j, 0, sizeof j);
    j.wtype = packed ? wk_cuda_packed(t) : t;
    j.k = k;
    j.m = m;
    j.src = src;
    j.x = wk_dp(dx);
    j.xtype = WK_TYPE_F32;
    j.x2 = wk_dp(dx2);
    j.norm_w = dnw;
    j.eps = eps;
    j.norm_out = wk_dp(src == WK_QMV_RMSNORM ? dnorm : NULL);
    j.nout = 3;
    for (int o = 0; o < 3; o++) {
        j.out[o].w = w[o];
        j.out[o].n = ns[o];
        j.out[o].y = wk_dp(dy[o]);
    }
    j.out[2].add = wk_dp(dacc);
    if (from_sum) j.add_from = dfrom;
    /* With the RMSNorm, as in attention: RoPE on the first two outputs (heads of 8; all
     * dims rotated in one, 6 of 8 in the other), at position 7 + row. For odd m the
     * position comes partly from the device, as in a graph's decode step: 2 + 5 there. */
    const int64_t rope_rot[2] = {8, 6};
    const bool rope = src == WK_QMV_RMSNORM, dev_pos = rope && m % 2 == 1;
    int64_t *dpos = NULL;
    if (dev_pos) {
        CHECK_OK(wk_cuda_malloc(sizeof(int64_t), (void **)&dpos));
        CHECK_OK(wk_cuda_set_pos(c, dpos, 5));
        j.dpos = dpos;
    }
    if (rope)
        for (int o = 0; o < 2; o++) {
            j.out[o].rope_head_dim = 8;
            j.out[o].rope_n_rot = rope_rot[o];
            j.out[o].rope_pos = dev_pos ? 2 : 7;
            j.out[o].rope_base = 10000.f;
        }
    CHECK_OK(wk_cuda_qmv(c, &j));
    CHECK_OK(wk_cuda_ctx_sync(c));
    wk_cuda_free(dpos);

    char label[96];
    snprintf(label, sizeof label, "%s%s k=%lld m=%lld %s%s", wk_type_name(t), packed ? " packed" : "",
             (long long)k, (long long)m, src_name(src), from_sum ? " + add_from" : "");
    double worst = 0;
    int bad = 0;
    float *y = malloc(sizeof(float) * (size_t)(m * most));
    for (int o = 0; o < 3; o++) {
        CHECK_OK(wk_cuda_copy_sync(y, dy[o], sizeof(float) * (size_t)(m * ns[o]), false));
        digest(y, sizeof(float) * (size_t)(m * ns[o]));
        float *acc = o == 2 ? malloc(sizeof(float) * (size_t)(m * ns[2])) : NULL;
        if (acc) {
            CHECK_OK(wk_cuda_copy_sync(acc, dacc, sizeof(float) * (size_t)(m * ns[2]), false));
            digest(acc, sizeof(float) * (size_t)(m * ns[2]));
        }
        double *refs = malloc(sizeof(double) * (size_t)(m * ns[o]));
        double *mags = malloc(sizeof(double) * (size_t)(m * ns[o]));
        for (int64_t r = 0; r < m; r++)
            for (int64_t col = 0; col < ns[o]; col++) {
                double ref = 0, mag = 0;
                for (int64_t i = 0; i < k; i++) {
                    ref += wref[o][col * k + i] * v[r * k + i];
                    mag += fabs(wref[o][col * k + i] * v[r * k + i]);
                }
                refs[r * ns[o] + col] = ref;
                mags[r * ns[o] + col] = mag;
            }
        if (rope && o < 2)
            for (int64_t r = 0; r < m; r++)
                for (int64_t col = 0; col < ns[o]; col += 2) {
                    int64_t d = col % 8;
                    if (d >= rope_rot[o]) continue;
                    double th = (double)(7 + r) * pow(10000.0, -(double)d / (double)rope_rot[o]);
                    double *a = &refs[r * ns[o] + col], *ma = &mags[r * ns[o] + col];
                    double a0 = a[0], a1 = a[1], mm = ma[0] + ma[1];
                    a[0] = a0 * cos(th) - a1 * sin(th);
                    a[1] = a0 * sin(th) + a1 * cos(th);
                    ma[0] = ma[1] = mm;
                }
        for (int64_t r = 0; r < m; r++)
            for (int64_t col = 0; col < ns[o]; col++) {
                double ref = refs[r * ns[o] + col], mag = mags[r * ns[o] + col];
                double got = y[r * ns[o] + col];
                double err = fabs(got - ref) / (mag > 0 ? mag : 1.0);
                if (acc) { /* the residual got the same value added */
                    double want = (double)(from_sum ? from : acc0)[r * ns[2] + col] + got;
                    if (!(fabs(acc[r * ns[2] + col] - want) <= 1e-6 * (1 + fabs(want)))) err = 1e30;
                }
                if (!(err <= 2e-5)) {
                    if (bad++ < 3)
                        fprintf(stderr, "  %s output %d row %lld col %lld: got %.9g want %.9g\n", label, o,
                                (long long)r, (long long)col, got, ref);
                    if (isnan(err)) err = 1e30;
                }
                if (err > worst) worst = err;
            }
        free(refs);
        free(mags);
        free(acc);
    }
    if (src == WK_QMV_RMSNORM) { /* the norm's own output was stored */
        float *nh = malloc(sizeof(float) * (size_t)(m * k));
        CHECK_OK(wk_cuda_copy_sync(nh, dnorm, sizeof(float) * (size_t)(m * k), false));
        digest(nh, sizeof(float) * (size_t)(m * k));
        for (int64_t i = 0; i < m * k; i++)
            if (!(fabs(nh[i] - v[i]) <= 1e-5 * (1 + fabs(v[i])))) {
                if (bad++ < 3) fprintf(stderr, "  %s norm output %lld: %g want %g\n", label, (long long)i, nh[i], v[i]);
            }
        free(nh);
    }
    CHECK_MSG(bad == 0, "%s: %d values out of tolerance", label, bad);
    printf("%-34s worst relative error %.3g\n", label, worst);

    free(y);
    for (int o = 0; o < 3; o++) {
        wk_cuda_free(dy[o]);
        wk_cuda_free(w[o]);
        free(wref[o]);
    }
    wk_cuda_free(dx);
    wk_cuda_free(dx2);
    wk_cuda_free(dnw);
    wk_cuda_free(dnorm);
    wk_cuda_free(dacc);
    wk_cuda_free(dfrom);
    free(from);
    free(x);
    free(x2);
    free(nw);
    free(v);
    free(acc0);
    free(poison);
}

/* Outputs of 40, 24 and 17 rows (tails of 8, 8 and 1). */
static void run(wk_cuda_ctx *c, wk_type t, int64_t k, int64_t m, wk_qmv_src src, bool from_sum)
{
    static const int64_t ns[3] = {40, 24, 17};
    run_n(c, t, k, m, src, from_sum, ns, false);
}
/* Outputs of 48, 32 and 16 rows (whole groups of 16): the packed layout, or F16 rows, which
 * the packed layout's kernel reads as they are. */
static void run_packed(wk_cuda_ctx *c, wk_type t, int64_t k, int64_t m, wk_qmv_src src, bool from_sum)
{
    static const int64_t ns[3] = {48, 32, 16};
    run_n(c, t, k, m, src, from_sum, ns, t != WK_TYPE_F16);
}

static void test_rejections(wk_cuda_ctx *c)
{
    double ref[16 * 64];
    void *w = make_weight(WK_TYPE_Q8_0, 16, 64, ref);
    void *x = NULL, *y = NULL;
    CHECK_OK(wk_cuda_malloc(4096, &x));
    CHECK_OK(wk_cuda_malloc(4096, &y));
    wk_cuda_qmv_job j;
    memset(&j, 0, sizeof j);
    j.wtype = WK_TYPE_Q8_0;
    j.k = 64;
    j.m = 9;
    j.x = wk_dp(x);
    j.xtype = WK_TYPE_F32;
    j.nout = 1;
    j.out[0].w = w;
    j.out[0].n = 16;
    j.out[0].y = wk_dp(y);
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "9 input rows");
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "1..8 rows for a row-major weight");
    j.m = 1;
    j.nout = 4;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "4 outputs");
    j.nout = 1;
    j.k = 48;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "k = 48");
    j.k = 64;
    j.xtype = WK_TYPE_Q8_0;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "input type q8_0");
    j.xtype = WK_TYPE_F32;
    j.x = wk_dp((char *)x + 4);
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "16-byte");
    j.x = wk_dp(x);
    j.add_from = y; /* a sum to add from needs a residual */
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "no residual");
    j.add_from = NULL;
    j.wtype = WK_TYPE_F32;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_UNSUPPORTED, "f32");
    /* Packed weights: only the packable formats, whole row groups, k of 64, on 16 bytes. */
    j.wtype = wk_cuda_packed(WK_TYPE_Q8_K);
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_UNSUPPORTED, "(packed)");
    j.wtype = wk_cuda_packed(WK_TYPE_Q8_0);
    j.out[0].n = 8;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "rows a multiple of 16");
    j.out[0].n = 16;
    j.out[0].w = (char *)w + 2;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "on 16 bytes");
    j.out[0].w = w; /* a packed weight takes up to 65535 slices of 8 input rows */
    j.m = 65535L * 8 + 1;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "1..524280 rows for a packed weight");
    /* F16 rows: more than 8 input rows only for whole row groups of a k of 64. */
    void *wh = make_weight(WK_TYPE_F16, 16, 64, ref);
    j.wtype = WK_TYPE_F16;
    j.out[0].w = wh;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "1..524280 rows for a f16 (whole row groups) weight");
    j.m = 9;
    j.out[0].n = 8;
    CHECK_FAILS(wk_cuda_qmv(c, &j), WK_ERR_INVALID, "1..8 rows for a row-major weight");
    wk_cuda_free(wh);
    wk_cuda_free(w);
    wk_cuda_free(x);
    wk_cuda_free(y);
}

int main(void)
{
    if (!wk_cuda_device_present()) {
        printf("SKIP: no CUDA device here (test_cuda_qmv needs a GPU; nothing was checked)\n");
        return 0;
    }
    rng = 0x2545f4914f6cdd1dull; /* this test's inputs since it was written */
    wk_cuda_ctx *c = NULL;
    CHECK_OK(wk_cuda_ctx_create(&c));
    if (!c) return 1;
    /* k with an odd block count makes 2-byte aligned rows (Q4_0, Q8_0, Q6_K); m * k above
     * 8192 prepares the input in scratch instead of inside the kernel. */
    const struct { wk_type t; int64_t k; } cases[] = {
        {WK_TYPE_Q4_0, 1056}, {WK_TYPE_Q4_1, 576}, {WK_TYPE_Q5_0, 1056}, {WK_TYPE_Q8_0, 1056},
        {WK_TYPE_Q4_K, 1024}, {WK_TYPE_Q6_K, 768},  {WK_TYPE_Q3_K, 768},  {WK_TYPE_F16, 80},
        {WK_TYPE_Q8_1, 576},  {WK_TYPE_Q8_1, 1536}, /* small and big chunks, 4-byte aligned blocks */
    };
    const int64_t ms[] = {1, 3, 5, 8};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
            for (int s = 0; s < 3; s++) run(c, cases[i].t, cases[i].k, ms[mi], (wk_qmv_src)s, false);
    /* One row's RMSNorm whose residual output is taken from another array (add_from). */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run(c, cases[i].t, cases[i].k, 1, WK_QMV_RMSNORM, true);
    run(c, WK_TYPE_Q4_1, 576, 1, WK_QMV_RMSNORM, true);
    /* A longer output (75 row groups). */
    static const int64_t wide[3] = {1200, 24, 17};
    for (int s = 0; s < 3; s++) run_n(c, WK_TYPE_Q4_1, 576, 1, (wk_qmv_src)s, false, wide, false);
    run_n(c, WK_TYPE_Q8_0, 1056, 5, WK_QMV_RMSNORM, false, wide, false);
    run_n(c, WK_TYPE_Q4_K, 1024, 8, WK_QMV_SILU_MUL, false, wide, false);
    /* The packed layout: every packable format and F16 rows, 1-8 rows and more in slices (13: one
     * slice of 13 for the formats cut in 12 or 16 rows, 8 + 5 for the others; 20: 12 + 8,
     * or 8 + 8 + 4), the three preparations, the input inside and in scratch (k = 1536 at
     * 8 rows, every count above 8), a residual taken from elsewhere, and a longer output. */
    const struct { wk_type t; int64_t k; } packs[] = {
        {WK_TYPE_Q4_0, 1024}, {WK_TYPE_Q4_1, 576}, {WK_TYPE_Q5_0, 1536},
        {WK_TYPE_Q5_1, 576}, {WK_TYPE_Q8_0, 576}, {WK_TYPE_Q8_0, 1536}, {WK_TYPE_Q4_K, 1024},
        {WK_TYPE_Q4_K, 256}, {WK_TYPE_Q6_K, 768}, {WK_TYPE_Q5_K, 512}, {WK_TYPE_Q2_K, 768},
        {WK_TYPE_Q3_K, 512}, {WK_TYPE_F16, 576}, {WK_TYPE_F16, 1536},
    };
    const int64_t pms[] = {1, 2, 4, 5, 8, 13, 20};
    for (size_t i = 0; i < sizeof packs / sizeof packs[0]; i++) {
        for (size_t mi = 0; mi < sizeof pms / sizeof pms[0]; mi++)
            for (int s = 0; s < 3; s++) run_packed(c, packs[i].t, packs[i].k, pms[mi], (wk_qmv_src)s, false);
        run_packed(c, packs[i].t, packs[i].k, 1, WK_QMV_RMSNORM, true);
    }
    static const int64_t wide16[3] = {1200, 32, 16};
    run_n(c, WK_TYPE_Q4_1, 576, 1, WK_QMV_RMSNORM, false, wide16, true);
    run_n(c, WK_TYPE_Q5_0, 1536, 8, WK_QMV_SILU_MUL, false, wide16, true);
    test_rejections(c);
    wk_cuda_ctx_free(c);
    printf("output digest %016llx\n", (unsigned long long)out_digest);
    TEST_MAIN_END();
}
#else
int main(void)
{
    printf("SKIP: this build has no CUDA support (test_cuda_qmv checks the CUDA kernels)\n");
    return 0;
}
#endif
