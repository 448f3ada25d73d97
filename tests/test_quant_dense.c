/* The dense formats (F32, F16, BF16):
 *  - F32 quantize and dequantize copy every bit (NaN payloads, -0.0 included);
 *  - F16 and BF16 quantize round to nearest, ties to even: checked against the two
 *    neighbouring codes in double precision, on random and hand-picked values;
 *  - round trip RMSE on N(0,1) within stated bounds;
 *  - dequantize_f16 is dequantize then rounded to half;
 *  - vec_dot equals the float64 dot of the dequantized operands to within the final
 *    rounding to float (the reference accumulates in double).
 * Byte identity with numpy/gguf is checked by tests/py/test_quant_legacy.py. */
#include <stdint.h>

#include "check.h"
#define WK_TEST_RNG_SEED 0x243f6a8885a308d3ull /* this test's own sequence */
#include "rng.h"
#include "core/half.h"
#include "wick.h"

/* Value of a code of the type; codes are 16-bit for F16 and BF16. */
static double code_value(wk_type t, uint16_t c)
{
    return t == WK_TYPE_F16 ? (double)wk_half_to_float(c) : (double)wk_bf16_to_float(c);
}

/* Is c the nearest code to x, ties to the even code? (x finite, c finite or the inf that
 * x rounds to.) Neighbours are c +- 1 in the sign-magnitude encoding. */
static bool is_nearest_even(wk_type t, float x, uint16_t c)
{
    uint16_t inf = t == WK_TYPE_F16 ? 0x7c00 : 0x7f80;
    uint16_t mag = c & 0x7fff, sign = c & 0x8000;
    double v = (double)x;
    if (mag == inf) {
        /* overflow: x must be at least halfway between the largest finite and 2^(emax+1) */
        double big = code_value(t, (uint16_t)(inf - 1));
        double limit = t == WK_TYPE_F16 ? 65536.0 : 0x1p128;
        return (sign ? -v : v) >= (big + limit) / 2;
    }
    double here = fabs(v - code_value(t, c));
    if (here == 0.0) return true;
    if ((v < 0) != (sign != 0) && mag != 0) return false;
    double up = fabs(v - code_value(t, (uint16_t)(sign | (mag + 1))));
    double down = mag ? fabs(v - code_value(t, (uint16_t)(sign | (mag - 1)))) : here + 1;
    if (here < up && here < down) return true;
    if (here == up || here == down) return (c & 1) == 0; /* a tie: the even code wins */
    return false;
}

static void check_rounding(wk_type t)
{
    int bad = 0, ties = 0;
    for (int i = 0; i < 200000; i++) {
        float x;
        uint16_t c;
        if (i % 4 == 0) {
            /* exactly halfway between two neighbouring codes */
            uint16_t a = (uint16_t)(rng_next() & 0x7ffe);
            if ((a & 0x7fff) >= (t == WK_TYPE_F16 ? 0x7bff : 0x7f7f)) continue;
            x = (float)((code_value(t, a) + code_value(t, (uint16_t)(a + 1))) / 2);
            if (rng_next() & 1) x = -x;
            ties++;
        } else {
            uint32_t bits = (uint32_t)rng_next();
            memcpy(&x, &bits, 4);
            if (!isfinite(x)) continue;
            if (t == WK_TYPE_F16 && i % 4 == 1) x = (float)(rng_normal() * 1e-5); /* subnormals */
        }
        CHECK_OK(wk_quantize_row(t, &x, &c, 1));
        if (!is_nearest_even(t, x, c) && bad++ < 5)
            fprintf(stderr, "%s: %.9g -> 0x%04x is not the nearest (ties even)\n",
                    wk_type_name(t), x, c);
    }
    CHECK_MSG(bad == 0, "%s: %d values not rounded to nearest even", wk_type_name(t), bad);
    CHECK(ties > 10000);
}

static void check_known_values(void)
{
    static const struct { float x; uint16_t f16, bf16; } v[] = {
        {1.0f, 0x3c00, 0x3f80},
        {-2.0f, 0xc000, 0xc000},
        {0.0f, 0x0000, 0x0000},
        {-0.0f, 0x8000, 0x8000},
        {65504.0f, 0x7bff, 0x4780},         /* bf16 rounds up: dropped bits 0xe000 */
        {65520.0f, 0x7c00, 0x4780},         /* halfway to 2^16: f16 overflows */
        {0x1p-24f, 0x0001, 0x3380},         /* smallest half subnormal */
        {0x1p-25f, 0x0000, 0x3300},         /* tie between 0 and 2^-24: even is 0 */
        {0x1.8p-24f, 0x0002, 0x33c0},       /* tie between 1 and 2 ulps: even is 2 */
        {1.0f + 0x1p-11f, 0x3c00, 0x3f80},  /* f16 tie, rounds to even 0x3c00 */
        {1.0f + 0x3p-11f, 0x3c02, 0x3f80},  /* f16 tie, rounds to even 0x3c02 */
        {1.0f + 0x1p-8f, 0x3c04, 0x3f80},   /* bf16 tie, even is 0x3f80 */
        {1.0f + 0x3p-8f, 0x3c0c, 0x3f82},   /* bf16 tie, even is 0x3f82 */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint16_t h, b;
        CHECK_OK(wk_quantize_row(WK_TYPE_F16, &v[i].x, &h, 1));
        CHECK_OK(wk_quantize_row(WK_TYPE_BF16, &v[i].x, &b, 1));
        CHECK_MSG(h == v[i].f16, "f16(%a) = 0x%04x, want 0x%04x", v[i].x, h, v[i].f16);
        CHECK_MSG(b == v[i].bf16, "bf16(%a) = 0x%04x, want 0x%04x", v[i].x, b, v[i].bf16);
    }
    /* NaN stays NaN: quiet for BF16 (ggml), and F32 copies every bit */
    uint32_t snan_bits = 0x7f800001u, qb;
    float snan, back;
    memcpy(&snan, &snan_bits, 4);
    uint16_t b;
    CHECK_OK(wk_quantize_row(WK_TYPE_BF16, &snan, &b, 1));
    CHECK_EQ_INT(b, 0x7fc0);
    CHECK_OK(wk_quantize_row(WK_TYPE_F32, &snan, &qb, 1));
    CHECK_EQ_INT(qb, 0x7f800001u);
    CHECK_OK(wk_dequantize_row(WK_TYPE_F32, &qb, &back, 1));
    CHECK(memcmp(&back, &snan_bits, 4) == 0);
}

static void check_rows(wk_type t, int64_t n, double rmse_bound, double rel_bound)
{
    static float x[1536], y[1536], a[1536], xd[1536], ad[1536];
    static uint8_t qx[1536 * 4], qa[1536 * 4];
    static uint16_t h[1536];
    for (int64_t i = 0; i < n; i++) x[i] = (float)rng_normal(), a[i] = (float)rng_normal();
    CHECK_OK(wk_quantize_row(t, x, qx, n));
    CHECK_OK(wk_dequantize_row(t, qx, y, n));
    CHECK_OK(wk_dequantize_row_f16(t, qx, h, n));
    double se = 0.0;
    int f16_bad = 0, far = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)x[i] - (double)y[i];
        se += e * e;
        if (fabs(e) > rel_bound * fabs((double)x[i]) + 0x1p-25) far++;
        if (h[i] != wk_float_to_half(y[i])) f16_bad++;
    }
    double rmse = sqrt(se / (double)n);
    if (n >= 256) /* a mean over a few values says little; the element bound covers them */
        CHECK_MSG(rmse <= rmse_bound, "%s n=%lld: RMSE %.3g > %.3g", wk_type_name(t),
                  (long long)n, rmse, rmse_bound);
    CHECK_MSG(far == 0, "%s n=%lld: %d elements off by more than half an ulp", wk_type_name(t),
              (long long)n, far);
    CHECK_MSG(f16_bad == 0, "%s n=%lld: %d f16 values differ", wk_type_name(t), (long long)n,
              f16_bad);

    CHECK_OK(wk_quantize_row(t, a, qa, n));
    CHECK_OK(wk_dequantize_row(t, qx, xd, n));
    CHECK_OK(wk_dequantize_row(t, qa, ad, n));
    double ref = 0.0, mag = 0.0;
    for (int64_t i = 0; i < n; i++) {
        ref += (double)xd[i] * (double)ad[i];
        mag += fabs((double)xd[i] * (double)ad[i]);
    }
    float got = NAN;
    CHECK_OK(wk_vec_dot(t, n, qx, qa, &got));
    /* the final rounding to float, plus double accumulation (negligible) */
    double tol = 0x1p-24 * fabs(ref) + 0x1p-50 * mag;
    CHECK_MSG(fabs((double)got - ref) <= tol, "%s n=%lld: vec_dot %.9g vs %.9g (tol %.3g)",
              wk_type_name(t), (long long)n, got, ref, tol);
    if (n == 1536)
        fprintf(stderr, "%s: round-trip RMSE %.3g (bound %.3g), vec_dot |diff| %.3g\n",
                wk_type_name(t), rmse, rmse_bound, fabs((double)got - ref));
}

int main(void)
{
    check_known_values();
    check_rounding(WK_TYPE_F16);
    check_rounding(WK_TYPE_BF16);
    /* Each element is within half an ulp: 2^-11 |x| for F16 (2^-25 absolute among its
     * subnormals), 2^-8 |x| for BF16. On N(0,1) the RMSE measures about 2.0e-4 (F16) and
     * 1.7e-3 (BF16); the stated bounds are 3.5e-4 and 2.8e-3. F32 is exact. */
    static const int64_t lengths[] = {1, 7, 32, 256, 768, 1536};
    for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
        check_rows(WK_TYPE_F32, lengths[l], 0.0, 0.0);
        check_rows(WK_TYPE_F16, lengths[l], 3.5e-4, 0x1p-11);
        check_rows(WK_TYPE_BF16, lengths[l], 2.8e-3, 0x1p-8);
    }
    TEST_MAIN_END();
}
