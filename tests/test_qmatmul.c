/* QMatMul on the CPU: every form and input dtype against a float64 reference made from
 * the dequantized weight; the precise form against "dequantize, then f32 matmul";
 * bitwise identity across thread counts; memory of the dense forms; rejections. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/kernels.h"
#include "cpu/repack.h"
#include "tensor/engine_impl.h"
#include "wick/quant.h"
#include "wick/tensor.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static bool wk_cpu_isa_has_repack(void)
{
    const char *off = getenv("WICK_NO_REPACK");
    return wk_cpu_isa() >= WK_ISA_AVX2 && !(off && off[0] && strcmp(off, "0"));
}

static const wk_type all_types[] = {
    WK_TYPE_Q4_0, WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q8_0,
    WK_TYPE_Q8_1, WK_TYPE_Q2_K, WK_TYPE_Q3_K, WK_TYPE_Q4_K, WK_TYPE_Q5_K,
    WK_TYPE_Q6_K, WK_TYPE_Q8_K, WK_TYPE_F32,  WK_TYPE_F16,  WK_TYPE_BF16,
};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

/* Relative error ||y - ref|| / ||ref||. */
static double rel_err(const float *y, const double *ref, int64_t len)
{
    double d = 0, r = 0;
    for (int64_t i = 0; i < len; i++) {
        d += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
        r += ref[i] * ref[i];
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

static void reference(const float *w, const float *x, int64_t m, int64_t n, int64_t k, double *ref)
{
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) {
            double s = 0;
            for (int64_t i = 0; i < k; i++) s += (double)w[c * k + i] * (double)x[r * k + i];
            ref[r * n + c] = s;
        }
}

/* One type, one form, both input dtypes, several m; results also kept for thread checks. */
static void check_type_form(wk_engine *e, wk_type t, wk_form form, int64_t n, int64_t k)
{
    const int64_t ms[] = {1, 3, 5, 70};
    int64_t max_m = 70;
    float *wf = malloc(sizeof(float) * n * k);
    for (int64_t i = 0; i < n * k; i++) wf[i] = rnd();
    int64_t dims[2] = {n, k};
    wk_qtensor *w = NULL;
    CHECK_OK(wk_qtensor_quantize(t, 2, dims, wf, &w));
    /* The reference uses the weight as stored (dequantized). */
    CHECK_OK(wk_qtensor_dequantize_f32(w, wf));
    if (form == WK_FORM_F16)
        for (int64_t i = 0; i < n * k; i++) wf[i] = wk_f16_to_f32(wk_f32_to_f16(wf[i]));
    wk_qmatmul *mm = NULL;
    CHECK_OK(wk_qmatmul_create(e, w, form, &mm));
    if (!mm) {
        free(wf);
        return;
    }
    float *x = malloc(sizeof(float) * max_m * k), *xr = malloc(sizeof(float) * max_m * k);
    uint16_t *xh = malloc(2 * max_m * k);
    float *y = malloc(sizeof(float) * max_m * n);
    double *ref = malloc(sizeof(double) * max_m * n);
    for (int64_t i = 0; i < max_m * k; i++) x[i] = rnd();
    wk_form got = wk_qmatmul_form(mm);
    bool quantized = got == WK_FORM_QUANTIZED;
    /* Tolerances (relative norm): activations quantized to 8 bits; f16 rounding of x;
     * float rounding over k terms otherwise. */
    double tol = quantized ? 2e-2 : got == WK_FORM_F16 ? 2e-3 : 2e-5;
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
        int64_t m = ms[mi];
        for (int dt = 0; dt < 2; dt++) {
            const void *xin = x;
            memcpy(xr, x, sizeof(float) * m * k);
            if (dt == 1) {
                for (int64_t i = 0; i < m * k; i++) {
                    xh[i] = wk_f32_to_f16(x[i]);
                    xr[i] = wk_f16_to_f32(xh[i]);
                }
                xin = xh;
            }
            if (got == WK_FORM_F16)
                for (int64_t i = 0; i < m * k; i++) xr[i] = wk_f16_to_f32(wk_f32_to_f16(xr[i]));
            reference(wf, xr, m, n, k, ref);
            memset(y, 0xff, sizeof(float) * m * n);
            CHECK_OK(wk_qmatmul_forward(mm, xin, dt ? WK_TYPE_F16 : WK_TYPE_F32, m, k, y));
            double err = rel_err(y, ref, m * n);
            CHECK_MSG(err <= tol, "%s form %s (asked %s) x %s m=%lld: relative error %.3g > %.3g",
                      wk_type_name(t), wk_form_name(got), wk_form_name(form), dt ? "f16" : "f32",
                      (long long)m, err, tol);
        }
    }
    wk_qmatmul_free(mm);
    free(wf), free(x), free(xr), free(xh), free(y), free(ref);
}

static void test_forms_against_reference(void)
{
    wk_engine *e = NULL;
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 2, &e));
    const wk_form forms[] = {WK_FORM_QUANTIZED, WK_FORM_PRECISE, WK_FORM_F32, WK_FORM_F16};
    for (size_t i = 0; i < N_TYPES; i++)
        for (size_t f = 0; f < 4; f++) check_type_form(e, all_types[i], forms[f], 37, 512);
    /* one repacked unit of groups (27 rows: a pair; Q2_K 75: an octet), then a group of 8 and
     * 3 rows in the file's layout */
    for (size_t i = 0; i < N_TYPES; i++)
        check_type_form(e, all_types[i], WK_FORM_QUANTIZED, wk_repack_unit_rows(all_types[i]) + 11, 256);
    wk_engine_free(e);
}

/* Same inputs, 1..4 threads: the outputs must be the same bits. The second shape is wide
 * enough for the column chunks of whole 64-column batches that many rows get (and leaves
 * a partial chunk and rows after the last repacked group). */
static void test_threads_bitwise_shape(int64_t n, int64_t k, int64_t m)
{
    const wk_type types[] = {WK_TYPE_Q8_0, WK_TYPE_Q4_0, WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1,
                             WK_TYPE_Q4_K, WK_TYPE_Q6_K, WK_TYPE_Q2_K, WK_TYPE_F16};
    const wk_form forms[] = {WK_FORM_QUANTIZED, WK_FORM_PRECISE, WK_FORM_F16};
    float *wf = malloc(sizeof(float) * n * k), *x = malloc(sizeof(float) * m * k);
    for (int64_t i = 0; i < n * k; i++) wf[i] = rnd();
    for (int64_t i = 0; i < m * k; i++) x[i] = rnd();
    /* 1 row (at n, then m rows after it: one row reads several column groups side by side,
     * and the thread count moves the chunks' boundaries between them) */
    float *y1 = malloc(sizeof(float) * (m + 1) * n), *yt = malloc(sizeof(float) * (m + 1) * n);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        for (size_t f = 0; f < 3; f++) {
            for (int th = 1; th <= 4; th++) {
                wk_engine *e = NULL;
                CHECK_OK(wk_engine_create(WK_DEVICE_CPU, th, &e));
                CHECK_EQ_INT(wk_engine_threads(e), th);
                int64_t dims[2] = {n, k};
                wk_qtensor *w = NULL;
                wk_qmatmul *mm = NULL;
                CHECK_OK(wk_qtensor_quantize(types[ti], 2, dims, wf, &w));
                CHECK_OK(wk_qmatmul_create(e, w, forms[f], &mm));
                float *out = th == 1 ? y1 : yt;
                for (int64_t mm_rows = 1; mm_rows <= m; mm_rows += m - 1)
                    CHECK_OK(wk_qmatmul_forward(mm, x, WK_TYPE_F32, mm_rows, k, out + (mm_rows > 1) * n));
                if (th > 1)
                    CHECK_MSG(memcmp(y1, yt, sizeof(float) * (m + 1) * n) == 0,
                              "%s %s: %d threads differ from 1 thread", wk_type_name(types[ti]),
                              wk_form_name(forms[f]), th);
                wk_qmatmul_free(mm);
                wk_engine_free(e);
            }
        }
    }
    free(wf), free(x), free(y1), free(yt);
}

static void test_threads_bitwise(void)
{
    test_threads_bitwise_shape(203, 512, 9);
    test_threads_bitwise_shape(2123, 256, 37);
}

/* Dequantized forms replace the quantized weight: memory in use is the dense copy only. */
static void test_dense_forms_memory(void)
{
    wk_engine *e = NULL;
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 2, &e));
    int64_t n = 64, k = 256, dims[2] = {n, k};
    float *wf = calloc((size_t)(n * k), sizeof(float));
    size_t before = wk_host_bytes_in_use();
    wk_qtensor *w = NULL;
    wk_qmatmul *mm = NULL;
    CHECK_OK(wk_qtensor_quantize(WK_TYPE_Q4_0, 2, dims, wf, &w));
    CHECK_OK(wk_qmatmul_create(e, w, WK_FORM_F32, &mm));
    CHECK_EQ_INT(wk_qmatmul_nbytes(mm), n * k * 4);
    CHECK_EQ_INT(wk_host_bytes_in_use() - before, n * k * 4);
    wk_qmatmul_free(mm);
    CHECK_EQ_INT(wk_host_bytes_in_use(), before);
    free(wf);
    wk_engine_free(e);
}

/* Repacking (quantized form) and octets (precise form) rearrange the weight in place: memory
 * in use does not grow, and the peak grows by at most one unit of the layout (the temporary of
 * the in-place rearrangement): 16 rows (Q2_K and Q3_K 64), an octet 8. */
static void test_repack_memory(void)
{
    wk_engine *e = NULL;
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 2, &e));
    const wk_type types[] = {WK_TYPE_Q8_0, WK_TYPE_Q4_0, WK_TYPE_Q4_K, WK_TYPE_Q4_1,
                             WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q6_K, WK_TYPE_Q2_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int precise = 0; precise < 2; precise++) {
            int64_t n = 131, k = 1024, dims[2] = {n, k};
            float *wf = malloc(sizeof(float) * n * k);
            for (int64_t j = 0; j < n * k; j++) wf[j] = rnd();
            wk_qtensor *w = NULL;
            wk_qmatmul *mm = NULL;
            CHECK_OK(wk_qtensor_quantize(types[i], 2, dims, wf, &w));
            size_t nbytes = wk_qtensor_nbytes(w), row = nbytes / (size_t)n;
            size_t before = wk_host_bytes_in_use();
            wk_host_reset_peak();
            CHECK_OK(wk_qmatmul_create(e, w, precise ? WK_FORM_PRECISE : WK_FORM_QUANTIZED, &mm));
            CHECK_EQ_INT(wk_host_bytes_in_use(), before);
            const size_t unit = precise ? 8 : (size_t)wk_repack_unit_rows(types[i]);
            CHECK_MSG(wk_host_bytes_peak() <= before + unit * row, "%s %s: peak %zu > %zu + %zu rows of %zu",
                      wk_type_name(types[i]), precise ? "precise" : "quantized", wk_host_bytes_peak(),
                      before, unit, row);
            CHECK_EQ_INT(wk_qmatmul_nbytes(mm), nbytes);
            if (wk_cpu_isa_has_repack()) {
                CHECK_EQ_INT(w->layout, precise ? WK_LAYOUT_OCTETS : WK_LAYOUT_REPACKED);
                /* A rearranged tensor cannot be read back as GGUF blocks: a clear error. */
                CHECK_FAILS(wk_qtensor_dequantize_f32(w, wf), WK_ERR_UNSUPPORTED, "repacked");
            }
            wk_qmatmul_free(mm);
            free(wf);
        }
    wk_engine_free(e);
}

static void test_rejections(void)
{
    wk_engine *e = NULL;
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 1, &e));
    int64_t dims[2] = {8, 64}, bad[2] = {8, 48}, three[3] = {2, 4, 64};
    wk_qtensor *w = NULL, *w3 = NULL;
    CHECK_FAILS(wk_qtensor_create(WK_TYPE_Q4_0, 2, bad, &w), WK_ERR_INVALID,
                "last dimension 48 is not divisible by the block size 32 of q4_0");
    CHECK_FAILS(wk_qtensor_create(WK_TYPE_Q4_K, 2, dims, &w), WK_ERR_INVALID,
                "block size 256 of q4_k");
    CHECK_FAILS(wk_qtensor_create(WK_TYPE_Q8_0, 5, dims, &w), WK_ERR_INVALID, "5 dimensions");
    CHECK_OK(wk_qtensor_create(WK_TYPE_Q8_0, 3, three, &w3));
    wk_qmatmul *mm = NULL;
    CHECK_FAILS(wk_qmatmul_create(e, w3, WK_FORM_AUTO, &mm), WK_ERR_INVALID,
                "the weight has 3 dimensions");
    wk_qtensor_free(w3);
    CHECK_OK(wk_qtensor_create(WK_TYPE_Q8_0, 2, dims, &w));
    CHECK_OK(wk_qmatmul_create(e, w, WK_FORM_QUANTIZED, &mm));
    float x[2 * 64] = {0}, y[16];
    CHECK_FAILS(wk_qmatmul_forward(mm, x, WK_TYPE_F32, 1, 32, y), WK_ERR_INVALID,
                "input rows have 32 values but the weight [8, 64] needs k = 64");
    CHECK_FAILS(wk_qmatmul_forward(mm, x, WK_TYPE_Q8_0, 1, 64, y), WK_ERR_INVALID,
                "input type q8_0 is not supported (expected f32 or f16)");
    CHECK_FAILS(wk_qmatmul_forward(mm, x, WK_TYPE_BF16, 1, 64, y), WK_ERR_INVALID,
                "input type bf16");
    CHECK_OK(wk_qmatmul_forward(mm, x, WK_TYPE_F32, 2, 64, y));
    wk_qmatmul_free(mm);
    wk_form f;
    CHECK_FAILS(wk_form_from_name("fast", &f), WK_ERR_INVALID, "unknown matmul form 'fast'");
    CHECK_OK(wk_form_from_name("precise", &f));
    CHECK_EQ_INT(f, WK_FORM_PRECISE);
    wk_engine_free(e);
}

static void test_form_policy(void)
{
    /* Dense weights are always dense; quantized weights take what is asked. */
    CHECK_EQ_INT(wk_form_resolve(WK_TYPE_F32, WK_FORM_QUANTIZED), WK_FORM_F32);
    CHECK_EQ_INT(wk_form_resolve(WK_TYPE_F16, WK_FORM_QUANTIZED), WK_FORM_PRECISE);
    CHECK_EQ_INT(wk_form_resolve(WK_TYPE_BF16, WK_FORM_F16), WK_FORM_F16);
    CHECK_EQ_INT(wk_form_resolve(WK_TYPE_Q4_0, WK_FORM_PRECISE), WK_FORM_PRECISE);
    CHECK_EQ_INT(wk_form_resolve(WK_TYPE_Q4_0, WK_FORM_F16), WK_FORM_F16);
    /* The environment is read once: later changes do not count. */
    unsetenv("WICK_DEQUANTIZE_ALL");
    setenv("WICK_DEQUANTIZE_ALL_F16", "1", 1);
    CHECK_EQ_INT(wk_form_from_env(), WK_FORM_F16);
    CHECK_EQ_INT(wk_form_resolve(WK_TYPE_Q8_0, WK_FORM_AUTO), WK_FORM_F16);
    CHECK_EQ_INT(wk_form_resolve(WK_TYPE_Q8_0, WK_FORM_QUANTIZED), WK_FORM_QUANTIZED);
    setenv("WICK_DEQUANTIZE_ALL", "1", 1);
    CHECK_EQ_INT(wk_form_from_env(), WK_FORM_F16);
}

int main(void)
{
    test_forms_against_reference();
    test_threads_bitwise();
    test_dense_forms_memory();
    test_repack_memory();
    test_rejections();
    test_form_policy();
    TEST_MAIN_END();
}
