/* The K formats against ggml's reference code (fixtures from scripts/gen-kquant-fixtures.py):
 *  - quantize gives ggml's bytes exactly, on every fixture row;
 *  - dequantize gives ggml's floats exactly (bit for bit), and dequantize_f16 is that
 *    rounded to nearest even;
 *  - round-trip RMSE on fresh N(0,1) rows stays under stated bounds;
 *  - vec_dot with Q8_K equals the float64 dot of the dequantized operands within
 *    1e-5 of sum |x_i y_i| (the integer sums are exact; only the per-block scaling and
 *    the final float accumulation round). */
#include <stdint.h>

#include "check.h"
#include "wick.h"

enum { MAX_ROWS = 64, MAX_N = 1536 };

typedef struct {
    int n_rows;
    uint32_t kind[MAX_ROWS], n[MAX_ROWS];
    float *x[MAX_ROWS];
} inputs;

static const char *kind_names[] = {"normal", "uniform", "outliers", "zeros",
                                   "weights", "positive", "mixed"};

static uint32_t rd_u32(FILE *f)
{
    uint8_t b[4] = {0};
    if (fread(b, 1, 4, f) != 4) return 0xffffffffu;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static FILE *open_fixture(const char *name, const char *magic)
{
    char rel[256], path[1024];
    snprintf(rel, sizeof rel, "tests/fixtures/quant/%s", name);
    test_source_path(rel, path, sizeof path);
    FILE *f = fopen(path, "rb");
    char m[4];
    if (!f || fread(m, 1, 4, f) != 4 || memcmp(m, magic, 4) != 0 || rd_u32(f) != 1) {
        fprintf(stderr, "cannot read fixture %s\n", path);
        if (f) fclose(f);
        return NULL;
    }
    return f;
}

static int load_inputs(inputs *in)
{
    FILE *f = open_fixture("k_inputs.dat", "WKKI");
    if (!f) return 0;
    in->n_rows = (int)rd_u32(f);
    if (in->n_rows <= 0 || in->n_rows > MAX_ROWS) return fclose(f), 0;
    for (int r = 0; r < in->n_rows; r++) {
        in->kind[r] = rd_u32(f);
        in->n[r] = rd_u32(f);
        if (in->n[r] == 0 || in->n[r] > MAX_N || in->n[r] % 256) return fclose(f), 0;
        in->x[r] = malloc(in->n[r] * sizeof(float));
        if (fread(in->x[r], sizeof(float), in->n[r], f) != in->n[r]) return fclose(f), 0;
    }
    fclose(f);
    return 1;
}

/* Bytes and floats of one type's fixture against wick's quantizer and dequantizer. */
static void check_against_ggml(const inputs *in, wk_type t, const char *file)
{
    FILE *f = open_fixture(file, "WKKQ");
    CHECK_MSG(f != NULL, "fixture %s", file);
    if (!f) return;
    CHECK_EQ_INT(rd_u32(f), t);
    CHECK_EQ_INT(rd_u32(f), in->n_rows);
    CHECK_EQ_INT(rd_u32(f), wk_type_block_bytes(t));
    int identical_rows = 0;
    for (int r = 0; r < in->n_rows; r++) {
        const int64_t n = in->n[r];
        size_t nbytes = 0;
        CHECK_OK(wk_type_row_bytes(t, n, &nbytes));
        uint8_t *want = malloc(nbytes), *got = calloc(1, nbytes);
        float *want_y = malloc((size_t)n * 4), *got_y = malloc((size_t)n * 4);
        uint16_t *got_h = malloc((size_t)n * 2);
        CHECK(fread(want, 1, nbytes, f) == nbytes);
        CHECK(fread(want_y, 4, (size_t)n, f) == (size_t)n);

        CHECK_OK(wk_quantize_row(t, in->x[r], got, n));
        size_t diff = 0;
        while (diff < nbytes && got[diff] == want[diff]) diff++;
        CHECK_MSG(diff == nbytes, "%s row %d (%s, n=%lld): first differing byte %zu (block %zu, "
                  "offset %zu): wick 0x%02x, ggml 0x%02x", wk_type_name(t), r,
                  kind_names[in->kind[r] % 7], (long long)n, diff, diff / wk_type_block_bytes(t),
                  diff % wk_type_block_bytes(t), diff < nbytes ? got[diff] : 0,
                  diff < nbytes ? want[diff] : 0);
        identical_rows += diff == nbytes;

        /* dequantize ggml's bytes: the floats must be ggml's, bit for bit */
        CHECK_OK(wk_dequantize_row(t, want, got_y, n));
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (memcmp(&got_y[i], &want_y[i], 4) != 0) bad = i;
        CHECK_MSG(bad < 0, "%s row %d dequantize differs at %lld: wick %.9g, ggml %.9g",
                  wk_type_name(t), r, (long long)bad, bad >= 0 ? got_y[bad] : 0.0,
                  bad >= 0 ? want_y[bad] : 0.0);

        CHECK_OK(wk_dequantize_row_f16(t, want, got_h, n));
        bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (got_h[i] != wk_f32_to_f16(want_y[i])) bad = i;
        CHECK_MSG(bad < 0, "%s row %d dequantize_f16 differs at %lld", wk_type_name(t), r,
                  (long long)bad);
        free(want), free(got), free(want_y), free(got_y), free(got_h);
    }
    fprintf(stderr, "%s: %d/%d fixture rows byte-identical to ggml\n", wk_type_name(t),
            identical_rows, in->n_rows);
    fclose(f);
}

/* xorshift64* and Box-Muller: fresh N(0,1) rows, independent of the fixtures. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rng_uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return ((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}
static float rng_normal(void)
{
    double u = rng_uniform(), v = rng_uniform();
    return (float)(sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v));
}

static void check_round_trip(wk_type t, double max_rmse)
{
    enum { N = 256 * 64 };
    float *x = malloc(N * 4), *y = malloc(N * 4);
    size_t nbytes = 0;
    CHECK_OK(wk_type_row_bytes(t, N, &nbytes));
    void *q = malloc(nbytes);
    for (int i = 0; i < N; i++) x[i] = rng_normal();
    CHECK_OK(wk_quantize_row(t, x, q, N));
    CHECK_OK(wk_dequantize_row(t, q, y, N));
    double se = 0;
    for (int i = 0; i < N; i++) se += (double)(x[i] - y[i]) * (x[i] - y[i]);
    double rmse = sqrt(se / N);
    fprintf(stderr, "%s: round-trip RMSE on N(0,1) %.5f (bound %.4f)\n", wk_type_name(t), rmse,
            max_rmse);
    CHECK_MSG(rmse <= max_rmse, "%s RMSE %.5f > %.4f", wk_type_name(t), rmse, max_rmse);
    free(x), free(y), free(q);
}

/* vec_dot(x of type t, y of Q8_K) against the float64 dot of both dequantized rows. */
static void check_vec_dot(wk_type t, const inputs *in)
{
    double worst = 0;
    for (int r = 0; r < in->n_rows; r++) {
        const int64_t n = in->n[r];
        size_t xb = 0, yb = 0;
        CHECK_OK(wk_type_row_bytes(t, n, &xb));
        CHECK_OK(wk_type_row_bytes(WK_TYPE_Q8_K, n, &yb));
        void *qx = malloc(xb), *qy = malloc(yb);
        float *a = malloc((size_t)n * 4), *dx = malloc((size_t)n * 4), *dy = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) a[i] = rng_normal();
        CHECK_OK(wk_quantize_row(t, in->x[r], qx, n));
        CHECK_OK(wk_quantize_row(WK_TYPE_Q8_K, a, qy, n));
        CHECK_OK(wk_dequantize_row(t, qx, dx, n));
        CHECK_OK(wk_dequantize_row(WK_TYPE_Q8_K, qy, dy, n));
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            ref += (double)dx[i] * dy[i];
            mag += fabs((double)dx[i] * dy[i]);
        }
        float got = NAN;
        CHECK_OK(wk_vec_dot(t, n, qx, qy, &got));
        double tol = 1e-5 * mag + 1e-30;
        CHECK_MSG(fabs(got - ref) <= tol, "%s row %d: vec_dot %.9g, float64 %.9g, tol %.3g",
                  wk_type_name(t), r, got, ref, tol);
        if (mag > 0) worst = fmax(worst, fabs(got - ref) / mag);
        free(qx), free(qy), free(a), free(dx), free(dy);
    }
    fprintf(stderr, "%s: vec_dot worst |err| / sum|xy| = %.3g\n", wk_type_name(t), worst);
}

/* Q8_K's bsums are the sums of its quants in groups of 16. */
static void check_q8_K_bsums(const inputs *in)
{
    for (int r = 0; r < in->n_rows; r++) {
        const int64_t n = in->n[r];
        size_t nb = 0;
        CHECK_OK(wk_type_row_bytes(WK_TYPE_Q8_K, n, &nb));
        uint8_t *q = malloc(nb);
        CHECK_OK(wk_quantize_row(WK_TYPE_Q8_K, in->x[r], q, n));
        for (int64_t b = 0; b < n / 256; b++) {
            const uint8_t *blk = q + b * 292;
            for (int g = 0; g < 16; g++) {
                int sum = 0;
                for (int l = 0; l < 16; l++) sum += (int8_t)blk[4 + 16 * g + l];
                int16_t bs;
                memcpy(&bs, blk + 4 + 256 + 2 * g, 2);
                CHECK_EQ_INT(bs, sum);
            }
        }
        free(q);
    }
}

/* Inputs that are not finite, or huge, or subnormal: quantizing and dequantizing must
 * not crash or invoke undefined behaviour (the sanitizer build runs this). The values
 * are garbage, as ggml's would be. */
static void check_hostile_inputs(void)
{
    static float x[512], y[512];
    static uint8_t q[512 / 256 * 292];
    const wk_type ts[] = {WK_TYPE_Q2_K, WK_TYPE_Q3_K, WK_TYPE_Q4_K,
                          WK_TYPE_Q5_K, WK_TYPE_Q6_K, WK_TYPE_Q8_K};
    const float specials[] = {NAN, INFINITY, -INFINITY, 3e38f, -3e38f, 1e-40f, 1e-20f};
    for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++)
        for (size_t t = 0; t < sizeof ts / sizeof ts[0]; t++)
            for (int all = 0; all < 2; all++) {
                for (int i = 0; i < 512; i++)
                    x[i] = (all || i % 7 == 0) ? specials[s] : (float)(i % 13) - 6.0f;
                CHECK_OK(wk_quantize_row(ts[t], x, q, 512));
                CHECK_OK(wk_dequantize_row(ts[t], q, y, 512));
            }
}

int main(void)
{
    static const struct { wk_type t; const char *file; double rmse; } types[] = {
        {WK_TYPE_Q2_K, "k_q2_k.dat", 0.33},  {WK_TYPE_Q3_K, "k_q3_k.dat", 0.17},
        {WK_TYPE_Q4_K, "k_q4_k.dat", 0.08},  {WK_TYPE_Q5_K, "k_q5_k.dat", 0.041},
        {WK_TYPE_Q6_K, "k_q6_k.dat", 0.020}, {WK_TYPE_Q8_K, "k_q8_k.dat", 0.0078},
    };
    inputs in = {0};
    CHECK_MSG(load_inputs(&in), "fixture k_inputs.dat unreadable");
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (in.n_rows) check_against_ggml(&in, types[i].t, types[i].file);
        check_round_trip(types[i].t, types[i].rmse);
        if (in.n_rows) check_vec_dot(types[i].t, &in);
    }
    check_q8_K_bsums(&in);
    check_hostile_inputs();

    /* rows that are not whole super-blocks are refused with the numbers */
    float x[300] = {0};
    uint8_t buf[2048];
    CHECK_FAILS(wk_quantize_row(WK_TYPE_Q4_K, x, buf, 300), WK_ERR_INVALID,
                "row of 300 elements is not a multiple of q4_k's block size 256");
    for (int r = 0; r < in.n_rows; r++) free(in.x[r]);
    TEST_MAIN_END();
}
