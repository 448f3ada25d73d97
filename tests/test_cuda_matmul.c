/* CUDA QMatMul: every type x form x input dtype x row count against a float64 reference
 * of the dequantized weights, on fresh random inputs, the output poisoned before each run;
 * the rejections; and the layout Q8_0 weights are kept in. Skips (exit 0) when no CUDA
 * device is present. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_check.h"
#include "quant/traits.h"
#include "wick/quant.h"
#include "wick/tensor.h"

static const wk_type all_types[] = {WK_TYPE_F32,  WK_TYPE_F16,  WK_TYPE_BF16, WK_TYPE_Q4_0,
                                    WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q8_0,
                                    WK_TYPE_Q8_1, WK_TYPE_Q2_K, WK_TYPE_Q3_K, WK_TYPE_Q4_K,
                                    WK_TYPE_Q5_K, WK_TYPE_Q6_K, WK_TYPE_Q8_K};
/* 34: a prompt of the tile kernel; 139: a prefill prompt, a partial tile of the many-row kernel */
static const int64_t row_counts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 34, 64, 139, 256};
/* The formats the GPU keeps in its packed layout (wk_cuda_pack_supports). */
static const wk_type packable[] = {WK_TYPE_Q4_0, WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q8_0,
                                   WK_TYPE_Q2_K, WK_TYPE_Q3_K, WK_TYPE_Q4_K, WK_TYPE_Q5_K, WK_TYPE_Q6_K};
#define N_PACKABLE (sizeof packable / sizeof packable[0])

/* The row count from which the matmuls run at the f16 form's precision. */
static int64_t gemm_rows(void)
{
#ifdef WICK_HAVE_CUDA
    return wk_cuda_qmm_gemm_rows();
#else
    return WK_CUDA_QMM_GEMM_ROWS; /* (a build without CUDA skips the test) */
#endif
}

/* One weight of type t, [n, k], and its dequantized values (the reference). */
static wk_qtensor *make_weight(wk_type t, int64_t n, int64_t k, double *ref)
{
    float *src = malloc(sizeof(float) * (size_t)(n * k));
    for (int64_t i = 0; i < n * k; i++) src[i] = (float)(urand() * (1.0 + (i % 7 == 0)));
    int64_t dims[2] = {n, k};
    wk_qtensor *w = NULL;
    if (wk_qtensor_quantize(t, 2, dims, src, &w) != WK_OK) {
        fprintf(stderr, "quantize %s: %s\n", wk_type_name(t), wk_last_error());
        free(src);
        return NULL;
    }
    CHECK_OK(wk_qtensor_dequantize_f32(w, src));
    for (int64_t i = 0; i < n * k; i++) ref[i] = src[i];
    free(src);
    return w;
}

/* Run one matmul and compare each output with sum |w x| scaled tolerance. */
static double run_case(wk_engine *e, wk_qmatmul *mm, const double *wref, int64_t n, int64_t k,
                       int64_t m, wk_type xt, double tol, const char *label)
{
    size_t xbytes = (size_t)(m * k) * (xt == WK_TYPE_F32 ? 4 : 2);
    float *xf = malloc(sizeof(float) * (size_t)(m * k));
    uint16_t *xh = malloc(2 * (size_t)(m * k));
    double *xd = malloc(sizeof(double) * (size_t)(m * k));
    for (int64_t r = 0; r < m; r++) {
        double mag = r % 3 == 0 ? 1.0 : (r % 3 == 1 ? 0.01 : 40.0); /* rows of different size */
        for (int64_t i = 0; i < k; i++) {
            float v = (float)(urand() * mag);
            if (xt == WK_TYPE_F16) {
                xh[r * k + i] = wk_f32_to_f16(v);
                v = wk_f16_to_f32(xh[r * k + i]);
            }
            xf[r * k + i] = v;
            xd[r * k + i] = v;
        }
    }
    float *y = malloc(sizeof(float) * (size_t)(m * n));
    for (int64_t i = 0; i < m * n; i++) y[i] = NAN;
    void *dx = NULL, *dy = NULL;
    double worst = 0;
    CHECK_OK(wk_engine_alloc(e, xbytes, &dx));
    CHECK_OK(wk_engine_alloc(e, sizeof(float) * (size_t)(m * n), &dy));
    if (!dx || !dy) goto done;
    CHECK_OK(wk_engine_upload(e, dx, xt == WK_TYPE_F32 ? (void *)xf : (void *)xh, xbytes));
    CHECK_OK(wk_engine_upload(e, dy, y, sizeof(float) * (size_t)(m * n))); /* NaN poison */
    CHECK_OK(wk_qmatmul_forward(mm, dx, xt, m, k, dy));
    CHECK_OK(wk_engine_download(e, y, dy, sizeof(float) * (size_t)(m * n)));
    int bad = 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < k; i++) {
                ref += wref[c * k + i] * xd[r * k + i];
                mag += fabs(wref[c * k + i] * xd[r * k + i]);
            }
            double got = y[r * n + c];
            double err = fabs(got - ref) / (mag > 0 ? mag : 1.0);
            if (!(err <= tol)) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s m=%lld row %lld col %lld: got %.9g want %.9g (rel %.3g > %.3g)\n",
                            label, (long long)m, (long long)r, (long long)c, got, ref, err, tol);
                err = isnan(err) ? 1e30 : err;
            }
            if (err > worst) worst = err;
        }
    CHECK_MSG(bad == 0, "%s m=%lld: %d of %lld outputs out of tolerance", label, (long long)m, bad,
              (long long)(m * n));
done:
    wk_engine_free_buffer(e, dx);
    wk_engine_free_buffer(e, dy);
    free(xf);
    free(xh);
    free(xd);
    free(y);
    return worst;
}

static void test_type(wk_engine *e, wk_type t, int64_t n, int64_t k)
{
    double *wref = malloc(sizeof(double) * (size_t)(n * k));
    wk_qtensor *w = make_weight(t, n, k, wref);
    CHECK(w != NULL);
    if (!w) {
        free(wref);
        return;
    }
    const wk_form forms[] = {WK_FORM_QUANTIZED, WK_FORM_PRECISE, WK_FORM_F32, WK_FORM_F16};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        wk_qtensor *copy = NULL;
        CHECK_OK(wk_qtensor_to_device(w, WK_DEVICE_CPU, &copy));
        wk_qmatmul *mm = NULL;
        CHECK_OK(wk_qmatmul_create(e, copy, forms[f], &mm));
        if (!mm) {
            wk_qtensor_free(copy);
            continue;
        }
        wk_form got = wk_qmatmul_form(mm);
        /* f16 form: x and w rounded to f16; every other GPU form keeps f32-like precision. */
        double tol = got == WK_FORM_F16 ? 3e-3 : 2e-5;
        for (int xi = 0; xi < 2; xi++) {
            wk_type xt = xi ? WK_TYPE_F16 : WK_TYPE_F32;
            double worst = 0;
            char label[96];
            snprintf(label, sizeof label, "%s %s x=%s", wk_type_name(t), wk_form_name(got),
                     wk_type_name(xt));
            for (size_t mi = 0; mi < sizeof row_counts / sizeof row_counts[0]; mi++) {
                /* From wk_cuda_qmm_gemm_rows() rows quantized weights go through f16
                 * (prefill: the wgmma kernel or cuBLAS). */
                const bool many = row_counts[mi] >= gemm_rows();
                double tm = many && wk_type_is_quantized(t) && got != WK_FORM_F32 ? 3e-3 : tol;
                if (t == WK_TYPE_F16 && got == WK_FORM_PRECISE && many && k % 16 == 0) tm = 3e-3;
                double w1 = run_case(e, mm, wref, n, k, row_counts[mi], xt, tm, label);
                if (w1 > worst) worst = w1;
            }
            printf("%-28s n=%lld k=%lld: worst relative error %.3g\n", label, (long long)n,
                   (long long)k, worst);
        }
        wk_qmatmul_free(mm);
    }
    wk_qtensor_free(w);
    free(wref);
}

static void test_rejections(wk_engine *e)
{
    int64_t dims[2] = {32, 256};
    float *src = calloc(32 * 256, sizeof(float));
    for (int i = 0; i < 32 * 256; i++) src[i] = (float)urand();
    wk_qtensor *w = NULL;
    CHECK_OK(wk_qtensor_quantize(WK_TYPE_Q4_K, 2, dims, src, &w));
    wk_qmatmul *mm = NULL;
    CHECK_OK(wk_qmatmul_create(e, w, WK_FORM_QUANTIZED, &mm));
    void *dx = NULL, *dy = NULL;
    CHECK_OK(wk_engine_alloc(e, 4 * 256 * 2, &dx));
    CHECK_OK(wk_engine_alloc(e, 4 * 32 * 2, &dy));
    if (mm && dx && dy) {
        CHECK_FAILS(wk_qmatmul_forward(mm, dx, WK_TYPE_Q8_0, 1, 256, dy), WK_ERR_INVALID, "q8_0");
        CHECK_FAILS(wk_qmatmul_forward(mm, dx, WK_TYPE_F32, 1, 128, dy), WK_ERR_INVALID, "k = 256");
    }
    wk_engine_free_buffer(e, dx);
    wk_engine_free_buffer(e, dy);
    wk_qmatmul_free(mm);
    free(src);
}

/* The quantized form of a fresh random weight of type t [n, k], its float64 values in
 * *wref (the caller frees both); NULL, with the failure checked, if either could not be
 * made. */
static wk_qmatmul *fresh_quantized(wk_engine *e, wk_type t, int64_t n, int64_t k, double **wref)
{
    *wref = malloc(sizeof(double) * (size_t)(n * k));
    wk_qtensor *w = *wref ? make_weight(t, n, k, *wref) : NULL;
    wk_qmatmul *mm = NULL;
    CHECK(w != NULL);
    if (w) CHECK_OK(wk_qmatmul_create(e, w, WK_FORM_QUANTIZED, &mm));
    if (!mm) wk_qtensor_free(w);
    return mm;
}

/* A weight the size of the default model's output head (30 MB as Q8_0), used right
 * after its upload: every row of the first product checked (the last rows of a large
 * upload could be read before they reached the device). */
static void test_large_upload(wk_engine *e)
{
    const int64_t n = 49152, k = 576;
    double *wref = NULL;
    wk_qmatmul *mm = fresh_quantized(e, WK_TYPE_Q8_0, n, k, &wref);
    if (mm) run_case(e, mm, wref, n, k, 1, WK_TYPE_F32, 2e-5, "q8_0 49152 x 576 just uploaded");
    wk_qmatmul_free(mm);
    free(wref);
}

/* Many rows on a weight with enough rows that the many-row packed kernel takes its wide
 * tiles (on the H200: 128, 160, 192, 224 or 256 input rows a tile, Q6_K also 96 with two
 * warpgroups, Q8_0, Q2_K and Q6_K 128 with two), which the small weights above never
 * reach: 100 rows (a tile of 128 for the 32-element formats), partial tiles (139, 180 and 210 rows: 160, 192 and 224) and a
 * whole one (256), through the f16-rounded precision of that path. k = 704 gives the
 * 32-element formats 11 chunks of 64, which the kernel's stages of 4 or 2 chunks do not
 * divide (a short last stage). Some K formats' wide tiles (Q4_K and Q5_K at 192 rows,
 * Q6_K at 256) split a chunk's x over two stages and keep its weights in two buffers of
 * their own: k = 1280 (5 chunks) refills each buffer twice, and n = 6416 leaves the last
 * block one live row group of its four or eight (the others' weights zero). */
static void test_wide_tiles_k(wk_engine *e, wk_type t, int64_t n, int64_t k, const int64_t *rows, size_t nrows)
{
    double *wref = NULL;
    wk_qmatmul *mm = fresh_quantized(e, t, n, k, &wref);
    if (mm) {
        char label[64];
        snprintf(label, sizeof label, "%s %lld x %lld wide tiles", wk_type_name(t), (long long)n, (long long)k);
        double worst = 0;
        for (size_t r = 0; r < nrows; r++) {
            double w1 = run_case(e, mm, wref, n, k, rows[r], WK_TYPE_F32, 3e-3, label);
            if (w1 > worst) worst = w1;
        }
        printf("%-28s: worst relative error %.3g\n", label, worst);
    }
    wk_qmatmul_free(mm);
    free(wref);
}
static void test_wide_tiles(wk_engine *e)
{
    const int64_t all[] = {100, 139, 180, 210, 256}, few[] = {139, 192, 256}; /* few: the long weight's references cost */
    const size_t n_all = sizeof all / sizeof all[0], n_few = sizeof few / sizeof few[0];
    for (size_t i = 0; i < N_PACKABLE; i++) {
        test_wide_tiles_k(e, packable[i], 6400, 512, all, n_all);
        if (wk_traits(packable[i])->block_size == 32) test_wide_tiles_k(e, packable[i], 6400, 704, all, n_all);
        else test_wide_tiles_k(e, packable[i], 6416, 1280, few, n_few);
    }
}

/* 7-8 input rows of a wide, long weight: the matrix-vector kernel copies the 136 KB input
 * for one block an SM of 16 warps (two row groups of 8), not for two blocks of 8. One row:
 * the 32-element formats prepare it inside 132 blocks of 24 warps (264 blocks of 8 would
 * repeat it past the inline bound). */
static void test_one_block_an_sm(wk_engine *e)
{
    const wk_type types[] = {WK_TYPE_Q4_0, WK_TYPE_Q4_1, WK_TYPE_Q4_K};
    const int64_t n = 4224, k = 4096;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        double *wref = NULL;
        wk_qmatmul *mm = fresh_quantized(e, types[i], n, k, &wref);
        if (mm) {
            char label[64];
            snprintf(label, sizeof label, "%s %lld x %lld, 1, 7-8 rows", wk_type_name(types[i]), (long long)n,
                     (long long)k);
            double worst = 0;
            const int rows[] = {1, 7, 8};
            for (int r = 0; r < 3; r++) {
                const int m = rows[r];
                double w1 = run_case(e, mm, wref, n, k, m, m == 7 ? WK_TYPE_F16 : WK_TYPE_F32, 2e-5, label);
                if (w1 > worst) worst = w1;
            }
            printf("%-28s: worst relative error %.3g\n", label, worst);
        }
        wk_qmatmul_free(mm);
        free(wref);
    }
}

/* Q8_0 weights as the GPU keeps them (Q8_1 blocks): scale and codes byte for byte, the
 * second half the f16 of scale * sum of codes; random codes over the whole int8 range and
 * an odd block count (the source's last block ends mid-word); and the rejections. */
#ifdef WICK_HAVE_CUDA /* the CUDA engine's own calls (the rest of the test uses the library's) */
static void test_relayout(void)
{
    CHECK(wk_cuda_kept_type(WK_TYPE_Q8_0, 1, 32) == WK_TYPE_Q8_1); /* one row: not packed */
    CHECK(wk_cuda_kept_type(WK_TYPE_Q4_0, 1, 32) == WK_TYPE_Q4_0);
    wk_cuda_ctx *c = NULL;
    CHECK_OK(wk_cuda_ctx_create(&c));
    if (!c) return;
    enum { NB = 1001 };
    uint8_t *src = malloc(NB * 34), *got = malloc(NB * 36);
    for (int b = 0; b < NB; b++) {
        const uint16_t d = wk_f32_to_f16((float)(urand() * 0.01 * (1 + b % 5)));
        memcpy(src + b * 34, &d, 2);
        for (int i = 0; i < 32; i++) src[b * 34 + 2 + i] = (uint8_t)(urand() * 128.0 + 128.0);
    }
    memset(got, 0xAB, NB * 36);
    void *ds = dev_copy(src, NB * 34), *dd = dev_copy(got, NB * 36);
    if (ds && dd) {
        CHECK_OK(wk_cuda_relayout(c, WK_TYPE_Q8_0, ds, 1, NB * 32, dd));
        CHECK_OK(wk_cuda_ctx_sync(c));
        CHECK_OK(wk_cuda_copy_sync(got, dd, NB * 36, false));
        int bad = 0;
        for (int b = 0; b < NB; b++) {
            const uint8_t *s = src + b * 34, *g = got + b * 36;
            uint16_t d, sum_h;
            memcpy(&d, s, 2);
            int sum = 0;
            for (int i = 0; i < 32; i++) sum += (int8_t)s[2 + i];
            const uint16_t want_sum = wk_f32_to_f16(wk_f16_to_f32(d) * (float)sum);
            memcpy(&sum_h, g + 2, 2);
            if (memcmp(g, s, 2) || sum_h != want_sum || memcmp(g + 4, s + 2, 32)) bad++;
        }
        CHECK_MSG(bad == 0, "q8_0 -> q8_1 relayout: %d of %d blocks differ", bad, NB);
        CHECK_FAILS(wk_cuda_relayout(c, WK_TYPE_Q4_0, ds, 1, 32, dd), WK_ERR_INVALID, "kept as they are");
        CHECK_FAILS(wk_cuda_relayout(c, WK_TYPE_Q8_0, ds, 1, 48, dd), WK_ERR_INVALID, "multiple of");
    }
    wk_cuda_free(ds);
    wk_cuda_free(dd);
    free(src);
    free(got);
    wk_cuda_ctx_free(c);
}

/* The packed layout of each packable format: GGUF rows packed and unpacked give the rows
 * back byte for byte; its dequantization
 * equals the rows' bit for bit, in f32 and f16; and the rejections. */
static void test_pack(void)
{
    wk_cuda_ctx *c = NULL;
    CHECK_OK(wk_cuda_ctx_create(&c));
    if (!c) return;
    const int64_t n = 48;
    for (size_t ti = 0; ti < N_PACKABLE; ti++) {
        const wk_type t = packable[ti];
        const int64_t k = wk_traits(t)->block_size == 256 ? 768 : 320;
        const wk_type_traits *tr = wk_traits(t);
        const size_t bytes = (size_t)(n * k / tr->block_size) * tr->block_bytes;
        float *f = malloc(sizeof(float) * (size_t)(n * k)), *a = malloc(sizeof(float) * (size_t)(n * k)),
              *b = malloc(sizeof(float) * (size_t)(n * k));
        uint8_t *q = malloc(bytes), *got = malloc(bytes);
        for (int64_t i = 0; i < n * k; i++) f[i] = (float)(urand() * (1.0 + (i % 9 == 0) * 3.0));
        tr->from_f32(f, q, n * k);
        void *dq = dev_copy(q, bytes), *dp = NULL, *du = NULL, *da = NULL, *db = NULL;
        CHECK_OK(wk_cuda_malloc(bytes, &dp));
        CHECK_OK(wk_cuda_malloc(bytes, &du));
        CHECK_OK(wk_cuda_malloc(sizeof(float) * (size_t)(n * k), &da));
        CHECK_OK(wk_cuda_malloc(sizeof(float) * (size_t)(n * k), &db));
        if (dq && dp && du && da && db) {
            CHECK_OK(wk_cuda_pack(c, t, dq, n, k, dp));
            CHECK_OK(wk_cuda_unpack(c, t, dp, n, k, du));
            CHECK_OK(wk_cuda_ctx_sync(c));
            CHECK_OK(wk_cuda_copy_sync(got, du, bytes, false));
            size_t at = 0;
            while (at < bytes && got[at] == q[at]) at++;
            CHECK_MSG(at == bytes, "%s packed and unpacked: the rows differ from byte %zu (block %zu, byte %zu)",
                      tr->name, at, at / tr->block_bytes, at % tr->block_bytes);
            CHECK_OK(wk_cuda_copy_sync(got, dp, bytes, false));
            CHECK_MSG(memcmp(got, q, bytes) != 0, "%s packed: the layout did not change", tr->name);
            for (int h = 0; h < 2; h++) {
                const wk_type dt = h ? WK_TYPE_F16 : WK_TYPE_F32;
                const size_t ob = (size_t)(n * k) * (h ? 2 : 4);
                CHECK_OK(wk_cuda_dequantize(c, t, dq, n * k, da, dt));
                CHECK_OK(wk_cuda_dequantize_packed(c, t, dp, n, k, db, dt));
                CHECK_OK(wk_cuda_ctx_sync(c));
                CHECK_OK(wk_cuda_copy_sync(a, da, ob, false));
                CHECK_OK(wk_cuda_copy_sync(b, db, ob, false));
                CHECK_MSG(memcmp(a, b, ob) == 0, "%s packed dequantized to %s: differs from the rows'", tr->name,
                          wk_type_name(dt));
            }
        }
        if (ti == 0 && dq && dp) {
            CHECK_FAILS(wk_cuda_pack(c, WK_TYPE_Q8_K, dq, n, 256, dp), WK_ERR_INVALID, "no packed layout");
            CHECK_FAILS(wk_cuda_pack(c, WK_TYPE_Q4_K, dq, n, 320, dp), WK_ERR_INVALID, "k of 256");
            CHECK_FAILS(wk_cuda_pack(c, t, dq, 40, k, dp), WK_ERR_INVALID, "[40, 320]");
            CHECK_FAILS(wk_cuda_pack(c, t, dq, n, 96, dp), WK_ERR_INVALID, "k of 64");
            CHECK_FAILS(wk_cuda_pack(c, t, dq, n, k, (char *)dp + 4), WK_ERR_INVALID, "16-byte");
            CHECK_FAILS(wk_cuda_unpack(c, WK_TYPE_F16, dp, n, k, du), WK_ERR_INVALID, "no packed layout");
            CHECK_FAILS(wk_cuda_dequantize_packed(c, t, dp, n, k, db, WK_TYPE_Q8_0), WK_ERR_INVALID, "f32 or f16");
        }
        wk_cuda_free(dq), wk_cuda_free(dp), wk_cuda_free(du), wk_cuda_free(da), wk_cuda_free(db);
        free(f), free(a), free(b), free(q), free(got);
    }
    for (int id = 0; id < WK_TYPE_COUNT; id++) /* the flag names no type */
        CHECK(!wk_cuda_is_packed((wk_type)id) && wk_cuda_unpacked(wk_cuda_packed((wk_type)id)) == (wk_type)id);
    CHECK(wk_cuda_pack_supports(WK_TYPE_Q4_1, 576, 576));
    CHECK(!wk_cuda_pack_supports(WK_TYPE_Q4_1, 40, 576));
    CHECK(!wk_cuda_pack_supports(WK_TYPE_Q6_K, 576, 576));
    CHECK(wk_cuda_pack_supports(WK_TYPE_Q6_K, 576, 768));
    CHECK(wk_cuda_pack_supports(WK_TYPE_Q5_K, 576, 768));
    CHECK(!wk_cuda_pack_supports(WK_TYPE_Q3_K, 576, 576));
    CHECK(!wk_cuda_pack_supports(WK_TYPE_Q8_K, 576, 768));
    CHECK(!wk_cuda_pack_supports(WK_TYPE_Q8_1, 576, 768));
    wk_cuda_ctx_free(c);
}
#endif

int main(void)
{
    if (!wk_cuda_available()) {
        printf("SKIP: no CUDA device here (test_cuda_matmul needs a GPU; nothing was checked)\n");
        return 0;
    }
    wk_engine *e = NULL;
    CHECK_OK(wk_engine_create(WK_DEVICE_CUDA, 0, &e));
    if (!e) return 1;
    for (size_t i = 0; i < sizeof all_types / sizeof all_types[0]; i++) {
        test_type(e, all_types[i], 40, 512);   /* n not a multiple of 16: the tail rows */
    }
    /* Larger k, and dense weights whose k is no multiple of 16 (cuBLAS path). */
    test_type(e, WK_TYPE_Q4_K, 64, 4096);
    test_type(e, WK_TYPE_Q8_0, 48, 4096);
    /* Odd block counts: rows that start on 2-byte boundaries. */
    test_type(e, WK_TYPE_Q4_0, 48, 544);
    test_type(e, WK_TYPE_Q8_0, 40, 544);
    /* The default model's shapes (k = 576: rows of 648 bytes as Q8_1; k = 1536). */
    test_type(e, WK_TYPE_Q8_0, 200, 576);
    test_type(e, WK_TYPE_Q8_0, 40, 1536);
    test_type(e, WK_TYPE_Q6_K, 40, 768);
    test_type(e, WK_TYPE_F16, 24, 40);
    test_type(e, WK_TYPE_BF16, 24, 40);
    test_type(e, WK_TYPE_F32, 24, 40);
    /* The packed layout (rows a multiple of 16, k of 64; above, 48 x 4096 Q8_0 is packed
     * too): each packable format at 1-256 rows, and the default model's k = 576. */
    for (size_t i = 0; i < N_PACKABLE; i++) test_type(e, packable[i], 48, 512);
    /* F16 rows the packed layout's kernel reads as they are (whole row groups, k of 64),
     * up to 63 input rows in slices. */
    test_type(e, WK_TYPE_F16, 48, 512);
    test_type(e, WK_TYPE_F16, 32, 4096);
    test_type(e, WK_TYPE_Q6_K, 32, 1536);
    test_type(e, WK_TYPE_Q4_1, 64, 576);
    /* 3-8 rows of k = 4096: the matrix-vector kernel copies the input (Q4_1: and its sums)
     * into shared memory, for one block an SM. */
    test_type(e, WK_TYPE_Q4_0, 48, 4096);
    test_type(e, WK_TYPE_Q4_1, 32, 4096);
    test_rejections(e);
#ifdef WICK_HAVE_CUDA
    test_relayout();
    test_pack();
#endif
    test_large_upload(e);
    test_wide_tiles(e);
    test_one_block_an_sm(e);
    wk_engine_free(e);
    TEST_MAIN_END();
}
