/* The 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1):
 *  - quantize then dequantize of N(0,1) rows stays within a stated RMSE and, element by
 *    element, within one step of the block's stored scale;
 *  - dequantize to f16 is dequantize to f32 rounded to nearest even, bit for bit;
 *  - vec_dot equals the float64 dot of the dequantized operands within a stated tolerance;
 *  - a few hand-computed blocks (exact codes and scales, zeros, ties);
 *  - rows that are not whole blocks are rejected with a message.
 * Row lengths 32 (one block), 256, 768, 1536. Byte identity with the references is checked
 * by tests/py/test_quant_legacy.py (gguf) and test_quant_legacy_ggml.c (ggml fixtures). */
#include <stdint.h>

#include "check.h"
#include "rng.h"
#include "core/half.h"
#include "quant/blocks.h"
#include "wick.h"

static void fill_normal(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = (float)rng_normal();
}

/* ---- per-type facts ------------------------------------------------------------------ */

typedef struct {
    wk_type t;
    double rmse_bound; /* quantize->dequantize RMSE on N(0,1), stated bound */
    bool has_min;      /* affine: the dot's min term goes through the Q8_1 s field */
} legacy_case;

/* Bounds: a block of 32 N(0,1) values has |max| about 2.0-2.5, so the step is about
 * 2.2/8 = 0.28 (Q4_0), 4.4/15 = 0.29 (Q4_1), 0.14 (Q5_0, Q5_1), 0.017 (Q8_0, Q8_1), and
 * the RMSE of uniform rounding error is step/sqrt(12): about 0.08, 0.08, 0.04, 0.04,
 * 0.005. Measured (this seed): see the printed values; the bounds allow ~25% above. */
static const legacy_case cases[] = {
    {WK_TYPE_Q4_0, 0.110, false}, {WK_TYPE_Q4_1, 0.100, true},  {WK_TYPE_Q5_0, 0.055, false},
    {WK_TYPE_Q5_1, 0.050, true},  {WK_TYPE_Q8_0, 0.0065, false}, {WK_TYPE_Q8_1, 0.0065, false},
};

/* The scale d of block b of a row of type t (every legacy block starts with it). */
static float block_scale(wk_type t, const uint8_t *row, int64_t b)
{
    uint16_t d;
    memcpy(&d, row + b * wk_type_block_bytes(t), 2);
    return wk_half_to_float(d);
}

static uint8_t qbuf[2][1536 / 32 * 36];

static void check_round_trip(const legacy_case *c, int64_t n)
{
    float x[1536], y[1536];
    uint16_t h[1536];
    fill_normal(x, n);
    CHECK_OK(wk_quantize_row(c->t, x, qbuf[0], n));
    CHECK_OK(wk_dequantize_row(c->t, qbuf[0], y, n));
    CHECK_OK(wk_dequantize_row_f16(c->t, qbuf[0], h, n));
    double se = 0.0;
    int over = 0, f16_bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)x[i] - (double)y[i];
        se += e * e;
        /* one step of the stored scale, plus the rounding of d itself to half (16 * 2^-11
         * relative): the symmetric formats clip the extreme opposite to the signed max */
        float d = fabsf(block_scale(c->t, qbuf[0], i / 32));
        if (fabs(e) > d * (1.0 + 1.0 / 64)) over++;
        if (h[i] != wk_float_to_half(y[i])) f16_bad++;
    }
    double rmse = sqrt(se / (double)n);
    /* one block is a small sample: its RMSE may stray further from the mean */
    double bound = n == 32 ? 1.5 * c->rmse_bound : c->rmse_bound;
    CHECK_MSG(rmse <= bound, "%s n=%lld: RMSE %.5f > bound %.5f", wk_type_name(c->t),
              (long long)n, rmse, bound);
    CHECK_MSG(over == 0, "%s n=%lld: %d elements off by more than one step", wk_type_name(c->t),
              (long long)n, over);
    CHECK_MSG(f16_bad == 0, "%s n=%lld: %d f16 values differ from rounded f32",
              wk_type_name(c->t), (long long)n, f16_bad);
    if (n == 1536) fprintf(stderr, "%s: round-trip RMSE %.5f (bound %.4f)\n", wk_type_name(c->t), rmse, c->rmse_bound);
}

/* The Q8_1 s field, as the dot product uses it in place of d * sum(qs). */
static float q8_1_s(const uint8_t *row, int64_t b)
{
    const wk_block_q8_1 *blk = (const wk_block_q8_1 *)row + b;
    return wk_half_to_float(blk->s);
}

static void check_vec_dot(const legacy_case *c, int64_t n)
{
    float w[1536], a[1536], wd[1536], ad[1536];
    wk_type vt = wk_type_vec_dot_type(c->t);
    fill_normal(w, n);
    fill_normal(a, n);
    CHECK_OK(wk_quantize_row(c->t, w, qbuf[0], n));
    CHECK_OK(wk_quantize_row(vt, a, qbuf[1], n));
    CHECK_OK(wk_dequantize_row(c->t, qbuf[0], wd, n));
    CHECK_OK(wk_dequantize_row(vt, qbuf[1], ad, n));
    float got = NAN;
    CHECK_OK(wk_vec_dot(c->t, n, qbuf[0], qbuf[1], &got));

    double ref = 0.0, mag = 0.0, s_dev = 0.0;
    for (int64_t i = 0; i < n; i++) {
        ref += (double)wd[i] * (double)ad[i];
        mag += fabs((double)wd[i] * (double)ad[i]);
    }
    if (c->has_min) {
        /* The min term uses s = half(d * sum(qs)) rather than half(d) * sum(qs): bound the
         * difference block by block from the stored fields. */
        for (int64_t b = 0; b < n / 32; b++) {
            double sum_q = 0.0;
            for (int j = 0; j < 32; j++) sum_q += ((const wk_block_q8_1 *)qbuf[1])[b].qs[j];
            double m = wk_half_to_float(((const uint16_t *)(qbuf[0] + b * wk_type_block_bytes(c->t)))[1]);
            double exact = (double)block_scale(vt, qbuf[1], b) * sum_q;
            s_dev += fabs(m) * fabs((double)q8_1_s(qbuf[1], b) - exact);
        }
    }
    /* Float accumulation: per block a few roundings of relative 2^-24 on |block| <= mag,
     * and the running sum of n/32 terms: 2^-24 * (n/32 + 4) * mag bounds them all. */
    double tol = 0x1p-24 * ((double)n / 32 + 4) * mag + s_dev * 1.0001;
    double err = fabs((double)got - ref);
    CHECK_MSG(err <= tol, "%s.%s n=%lld: vec_dot %.9g vs float64 %.9g: |diff| %.3g > tol %.3g",
              wk_type_name(c->t), wk_type_name(vt), (long long)n, got, ref, err, tol);
    if (n == 1536)
        fprintf(stderr, "%s.%s: vec_dot rel. diff %.2e of sum|w*a| (tol %.2e)\n",
                wk_type_name(c->t), wk_type_name(vt), err / mag, tol / mag);
}

/* Blocks whose codes are worked out by hand. */
static void check_known_blocks(void)
{
    float x[32], y[32];
    /* Q4_0: signed max -4 gives d = 0.5, id = 2: x = -4 -> code 0, x = 3.5 -> 15,
     * x = 0.25 -> trunc(0.5 + 8.5) = 9 (a tie, rounded up), x = -0.25 -> 8. */
    for (int j = 0; j < 32; j++) x[j] = 0.0f;
    x[0] = -4.0f, x[1] = 3.5f, x[2] = 0.25f, x[3] = -0.25f, x[16] = 3.75f;
    wk_block_q4_0 b40;
    CHECK_OK(wk_quantize_row(WK_TYPE_Q4_0, x, &b40, 32));
    CHECK_EQ_INT(b40.d, 0x3800); /* 0.5 */
    CHECK_EQ_INT(b40.qs[0] & 0xf, 0);
    CHECK_EQ_INT(b40.qs[1] & 0xf, 15);
    CHECK_EQ_INT(b40.qs[2] & 0xf, 9);
    CHECK_EQ_INT(b40.qs[3] & 0xf, 8);
    CHECK_EQ_INT(b40.qs[0] >> 4, 15); /* 3.75*2 + 8.5 = 16 clipped to 15 */
    CHECK_OK(wk_dequantize_row(WK_TYPE_Q4_0, &b40, y, 32));
    CHECK(y[0] == -4.0f && y[1] == 3.5f && y[2] == 0.5f && y[3] == 0.0f && y[16] == 3.5f);

    /* An all-zero block: d = 0/-8 = -0 (sign kept, as both references store it), codes 8,
     * values +-0. */
    for (int j = 0; j < 32; j++) x[j] = 0.0f;
    CHECK_OK(wk_quantize_row(WK_TYPE_Q4_0, x, &b40, 32));
    CHECK_EQ_INT(b40.d, 0x8000);
    CHECK_EQ_INT(b40.qs[5], 0x88);
    CHECK_OK(wk_dequantize_row(WK_TYPE_Q4_0, &b40, y, 32));
    CHECK(y[7] == 0.0f);

    /* Q4_1: min 1, max 16 gives d = 1, m = 1; x = 2.5 is a tie -> trunc(1.5 + 0.5) = 2. */
    for (int j = 0; j < 32; j++) x[j] = 1.0f + (float)(j % 16);
    x[31] = 2.5f;
    wk_block_q4_1 b41;
    CHECK_OK(wk_quantize_row(WK_TYPE_Q4_1, x, &b41, 32));
    CHECK_EQ_INT(b41.d, 0x3c00);
    CHECK_EQ_INT(b41.m, 0x3c00);
    CHECK_EQ_INT(b41.qs[15], 0x2f); /* element 15 = 16 -> 15; element 31 = 2.5 -> 2 */
    CHECK_OK(wk_dequantize_row(WK_TYPE_Q4_1, &b41, y, 32));
    CHECK(y[15] == 16.0f && y[31] == 3.0f && y[0] == 1.0f);

    /* Q5_0: bit 4 of each code lands in qh. Signed max 16 gives d = -1: x = 16 -> 0,
     * x = -15 -> trunc(15 + 16.5) = 31, x = 0 -> 16 (bit 4 set). */
    for (int j = 0; j < 32; j++) x[j] = 0.0f;
    x[0] = 16.0f, x[1] = -15.0f, x[17] = -15.0f;
    wk_block_q5_0 b50;
    CHECK_OK(wk_quantize_row(WK_TYPE_Q5_0, x, &b50, 32));
    CHECK_EQ_INT(b50.d, 0xbc00); /* -1 */
    CHECK_EQ_INT(b50.qs[0], 0x00);
    CHECK_EQ_INT(b50.qs[1], 0xff);
    CHECK_EQ_INT(b50.qh[0], 0xfe); /* code 0 at element 0, 16 or 31 elsewhere */
    CHECK_OK(wk_dequantize_row(WK_TYPE_Q5_0, &b50, y, 32));
    CHECK(y[0] == 16.0f && y[1] == -15.0f && y[17] == -15.0f && y[5] == 0.0f);

    /* Q8_0 / Q8_1: amax 127 gives d = 1; 2.5 rounds away from zero to 3, -2.5 to -3. */
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16);
    x[0] = 127.0f, x[1] = 2.5f, x[2] = -2.5f;
    wk_block_q8_1 b81;
    CHECK_OK(wk_quantize_row(WK_TYPE_Q8_1, x, &b81, 32));
    CHECK_EQ_INT(b81.d, 0x3c00);
    CHECK_EQ_INT(b81.qs[1], 3);
    CHECK_EQ_INT(b81.qs[2], -3);
    int sum = 0;
    for (int j = 0; j < 32; j++) sum += b81.qs[j];
    CHECK_EQ_INT(b81.s, wk_float_to_half((float)sum));
}

int main(void)
{
    static const int64_t lengths[] = {32, 256, 768, 1536};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t l = 0; l < 4; l++) {
            check_round_trip(&cases[c], lengths[l]);
            check_vec_dot(&cases[c], lengths[l]);
        }
    }
    check_known_blocks();

    float x[64] = {0};
    uint8_t out[64 * 2];
    CHECK_FAILS(wk_quantize_row(WK_TYPE_Q4_0, x, out, 48), WK_ERR_INVALID,
                "row of 48 elements is not a multiple of q4_0's block size 32");
    CHECK_FAILS(wk_dequantize_row(WK_TYPE_Q8_1, out, x, 33), WK_ERR_INVALID,
                "row of 33 elements is not a multiple of q8_1's block size 32");
    float s;
    CHECK_FAILS(wk_vec_dot(WK_TYPE_Q5_1, 40, out, out, &s), WK_ERR_INVALID,
                "row of 40 elements is not a multiple of q5_1's block size 32");
    TEST_MAIN_END();
}
