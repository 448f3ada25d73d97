/* Every SIMD kernel of the CPU engine equals its scalar reference (within float
 * rounding) on random inputs, over tile shapes that leave every remainder: rows not a
 * multiple of the row tile, columns not a multiple of the column group, k of a single
 * block. Runs the AVX2 kernels, and the AVX-512 ones where the processor has them. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/kernels.h"
#include "cpu/octets.h"
#include "cpu/ops_internal.h"
#include "cpu/repack.h"
#include "quant/blocks.h"
#include "quant/traits.h"
#include "wick/quant.h"

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static float rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static const wk_type all_types[] = {
    WK_TYPE_Q4_0, WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q8_0,
    WK_TYPE_Q8_1, WK_TYPE_Q2_K, WK_TYPE_Q3_K, WK_TYPE_Q4_K, WK_TYPE_Q5_K,
    WK_TYPE_Q6_K, WK_TYPE_Q8_K, WK_TYPE_F32,  WK_TYPE_F16,  WK_TYPE_BF16,
};

#define MAXR 9
#define MAXC 19

/* One kernel pair on one shape: y_simd vs y_ref, tolerance scaled by sum |w||x|. */
static void compare(const char *what, wk_type t, wk_gemm_fn simd, wk_gemm_fn ref, int64_t k,
                    int64_t nr, int64_t nc, const void *w, size_t ws, const void *x, size_t xs,
                    const float *wf, const float *xf)
{
    float ys[MAXR * MAXC], yr[MAXR * MAXC];
    memset(ys, 0, sizeof ys);
    memset(yr, 0, sizeof yr);
    simd(k, nr, nc, w, ws, x, xs, ys, MAXC);
    ref(k, nr, nc, w, ws, x, xs, yr, MAXC);
    for (int64_t r = 0; r < nr; r++)
        for (int64_t c = 0; c < nc; c++) {
            double mag = 0;
            for (int64_t i = 0; i < k; i++) mag += fabs((double)wf[c * k + i] * xf[r * k + i]);
            double tol = 2e-6 * mag + 1e-6;
            float a = ys[r * MAXC + c], b = yr[r * MAXC + c];
            CHECK_MSG(fabs((double)a - b) <= tol,
                      "%s %s k=%lld tile %lldx%lld at (%lld,%lld): simd %.9g ref %.9g tol %.3g",
                      what, wk_type_name(t), (long long)k, (long long)nr, (long long)nc,
                      (long long)r, (long long)c, a, b, tol);
        }
}

/* A kernel gives each row the same bits alone as together with the other rows, whatever
 * path or tile the row count picks (few-row and many-row kernels, the precise form's
 * register path and buffered tiles add the same products in the same order). */
static void same_bits_per_row(const char *what, wk_type t, wk_gemm_fn f, int64_t k, int64_t nr,
                              int64_t nc, const void *w, size_t ws, const void *x, size_t xs)
{
    float *all = malloc(sizeof(float) * nr * nc), *one = malloc(sizeof(float) * nc);
    f(k, nr, nc, w, ws, x, xs, all, nc);
    for (int64_t r = 0; r < nr; r++) {
        f(k, 1, nc, w, ws, (const char *)x + r * xs, xs, one, nc);
        CHECK_MSG(memcmp(one, all + r * nc, sizeof(float) * nc) == 0,
                  "%s %s k=%lld: row %lld of %lld rows differs from the row alone", what,
                  wk_type_name(t), (long long)k, (long long)r, (long long)nr);
    }
    free(all), free(one);
}

static void test_isa(wk_isa isa)
{
    for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++) {
        wk_type t = all_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        const wk_cpu_kernels *s = wk_cpu_kernels_scalar(t);
        /* Every entry from the best table up to isa (AVX-512: the precise form's kernel, the
         * rest AVX2's); the AVX2 table alone has them all. */
        const wk_cpu_kernels *v = wk_cpu_kernels_for(t, isa);
        CHECK_MSG(wk_cpu_kernels_avx2(t) && strcmp(v->isa, wk_isa_name(isa)) == 0,
                  "%s has no %s kernels", tr->name, wk_isa_name(isa));
        int64_t bs = tr->block_size == 1 ? 32 : tr->block_size;
        const int64_t ks[] = {bs, 3 * bs, tr->block_size == 1 ? 37 : 2 * bs};
        for (size_t ki = 0; ki < 3; ki++) {
            int64_t k = ks[ki];
            size_t ws = 0, xs = 0;
            CHECK_OK(wk_type_row_bytes(t, k, &ws));
            float *wf = malloc(sizeof(float) * MAXC * k), *xf = malloc(sizeof(float) * MAXR * k);
            char *w = malloc(ws * MAXC);
            for (int64_t i = 0; i < MAXC * k; i++) wf[i] = rnd();
            for (int64_t i = 0; i < MAXR * k; i++) xf[i] = rnd();
            for (int c = 0; c < MAXC; c++) {
                tr->from_f32(wf + c * k, w + c * ws, k);
                tr->to_f32(w + c * ws, wf + c * k, k); /* the weight as stored */
            }
            /* Precise form: f32 activations. */
            for (int64_t nr = 1; nr <= MAXR; nr += (nr < 5 ? 1 : 4))
                for (int64_t nc = 1; nc <= MAXC; nc += (nc < 9 ? 1 : 10))
                    compare("precise", t, v->gemm_f32, s->gemm_f32, k, nr, nc, w, ws, xf,
                            sizeof(float) * k, wf, xf);
            for (int64_t nr = 2; nr <= MAXR; nr++)
                same_bits_per_row("precise", t, v->gemm_f32, k, nr, 7, w, ws, xf, sizeof(float) * k);
            if (tr->quantized) {
                wk_type at = tr->vec_dot_type;
                CHECK_OK(wk_type_row_bytes(at, k, &xs));
                char *xq = malloc(xs * MAXR), *xq_ref = malloc(xs * MAXR);
                float *xd = malloc(sizeof(float) * MAXR * k);
                for (int r = 0; r < MAXR; r++) {
                    v->quantize(xf + r * k, xq + r * xs, k);
                    wk_traits(at)->from_f32(xf + r * k, xq_ref + r * xs, k);
                    wk_traits(at)->to_f32(xq + r * xs, xd + r * k, k);
                }
                CHECK_MSG(memcmp(xq, xq_ref, xs * MAXR) == 0, "%s: %s activation quantizer differs",
                          tr->name, wk_isa_name(isa));
                for (int64_t nr = 1; nr <= MAXR; nr += (nr < 5 ? 1 : 4))
                    for (int64_t nc = 1; nc <= MAXC; nc += (nc < 9 ? 1 : 10))
                        compare("quantized", t, v->gemm_q, s->gemm_q, k, nr, nc, w, ws, xq, xs,
                                wf, xd);
                free(xq), free(xq_ref), free(xd);
            }
            free(wf), free(xf), free(w);
        }
    }
}

/* The activation quantizers on the inputs where rounding and scale handling differ:
 * exact halves (amax 127 makes x * id = x), zeros, NaN, infinities, subnormals and a
 * scale so small that its inverse overflows. Bytes must equal the reference's. */
static void test_act_quantizers(wk_isa isa)
{
    enum { K = 8 * 32 };
    float x[K];
    for (int i = 0; i < K; i++) x[i] = rnd();
    for (int j = 1; j < 32; j++) x[j] = (float)(j - 16) + 0.5f; /* block 0: ties */
    x[0] = 127.0f;
    for (int j = 1; j < 32; j += 2) x[32 + j] = -((float)j + 0.5f); /* block 1: ties and noise */
    x[32] = -127.0f;
    for (int j = 0; j < 32; j++) x[64 + j] = 0.0f;            /* block 2: zeros (and -0) */
    x[64 + 5] = -0.0f;
    x[96 + 3] = NAN;                                           /* block 3: a NaN */
    x[128 + 7] = INFINITY;                                     /* block 4: +inf, -inf */
    x[128 + 9] = -INFINITY;
    for (int j = 0; j < 32; j++) x[160 + j] = 1e-40f * (float)(j - 10); /* block 5: subnormal */
    x[192 + 1] = 1.4e-45f;                                     /* block 6: 1/d overflows */
    for (int j = 0; j < 32; j++) x[224 + j] = (j & 1) ? 0.5f : -0.5f; /* block 7: all halves */
    const wk_type types[] = {WK_TYPE_Q8_0, WK_TYPE_Q4_1};
    for (int ti = 0; ti < 2; ti++) {
        const wk_cpu_kernels *v = wk_cpu_kernels_for(types[ti], isa);
        wk_type at = wk_traits(types[ti])->vec_dot_type;
        size_t xs = 0;
        CHECK_OK(wk_type_row_bytes(at, K, &xs));
        char *a = malloc(xs), *b = malloc(xs);
        memset(a, 0x55, xs), memset(b, 0xaa, xs);
        v->quantize(x, a, K);
        wk_traits(at)->from_f32(x, b, K);
        CHECK_MSG(memcmp(a, b, xs) == 0, "%s: %s activation quantizer differs on special inputs",
                  wk_type_name(at), wk_isa_name(isa));
        free(a), free(b);
    }
}

/* The repacked types, the kernels' input for the tests below. */
static const wk_type repacked_types[] = {WK_TYPE_Q8_0, WK_TYPE_Q8_1, WK_TYPE_Q8_K, WK_TYPE_Q4_0, WK_TYPE_Q4_K, WK_TYPE_Q5_K, WK_TYPE_Q3_K, WK_TYPE_Q4_1,
                                         WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q6_K, WK_TYPE_Q2_K};

/* A repacked-kernel case: nc random weight columns of type t (quantized: w, repacked in
 * groups of 8: wp, dequantized: wd) and nr random activation rows (quantized to the
 * vec-dot type: xq, dequantized: xd); mag[r * nc + c] = sum |w| |x|, the scale of the
 * error bound against the scalar kernel. */
typedef struct {
    const wk_type_traits *tr;
    int64_t k;
    int nr, nc;
    size_t ws, xs;
    char *w, *wp, *xq;
    float *wd, *xd;
    double *mag;
} repacked_case;

static void repacked_case_make(repacked_case *c, wk_type t, int64_t k, int nr, int nc)
{
    const wk_type_traits *tr = wk_traits(t), *xt = wk_traits(tr->vec_dot_type);
    *c = (repacked_case){.tr = tr, .k = k, .nr = nr, .nc = nc};
    CHECK_OK(wk_type_row_bytes(t, k, &c->ws));
    CHECK_OK(wk_type_row_bytes(tr->vec_dot_type, k, &c->xs));
    float *f = malloc(sizeof(float) * k);
    c->w = malloc(c->ws * nc), c->wp = malloc(c->ws * nc), c->xq = malloc(c->xs * nr);
    c->wd = malloc(sizeof(float) * nc * k), c->xd = malloc(sizeof(float) * nr * k);
    c->mag = malloc(sizeof(double) * nr * nc);
    for (int j = 0; j < nc; j++) {
        for (int64_t i = 0; i < k; i++) f[i] = rnd();
        tr->from_f32(f, c->w + j * c->ws, k);
        tr->to_f32(c->w + j * c->ws, c->wd + j * k, k);
    }
    wk_cpu_repack_rows(t, c->w, c->wp, nc, k);
    for (int r = 0; r < nr; r++) {
        for (int64_t i = 0; i < k; i++) f[i] = rnd();
        xt->from_f32(f, c->xq + r * c->xs, k);
        xt->to_f32(c->xq + r * c->xs, c->xd + r * k, k);
    }
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < nc; j++) {
            double m = 0;
            for (int64_t i = 0; i < k; i++) m += fabs((double)c->wd[j * k + i] * c->xd[r * k + i]);
            c->mag[r * nc + j] = m;
        }
    free(f);
}

static void repacked_case_free(repacked_case *c)
{
    free(c->w), free(c->wp), free(c->xq), free(c->wd), free(c->xd), free(c->mag);
}

/* Repacked layouts: the repacked kernel on rearranged rows equals the scalar kernel on
 * the rows as in the file; and a tile of rows gives the same bits as the rows one at a
 * time (few rows and many rows take different kernels, which must agree exactly). k of
 * 11 blocks leaves a partial unit of 8 blocks for the many-row kernels. */
static void test_repacked(wk_isa isa)
{
    for (size_t ti = 0; ti < sizeof repacked_types / sizeof repacked_types[0]; ti++) {
        wk_type t = repacked_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        wk_gemm_fn packed = wk_cpu_repacked_gemm(t, isa), streamed = wk_cpu_repacked_gemm_streamed(t, isa);
        CHECK_MSG(packed != NULL, "%s has no repacked kernel for %s", tr->name, wk_isa_name(isa));
        if (!packed) continue;
        const int64_t ks[] = {tr->block_size, 4 * tr->block_size, 11 * tr->block_size};
        for (int ki = 0; ki < 3; ki++) {
            int64_t k = ks[ki];
            repacked_case cs;
            const int unit = (int)wk_repack_unit_rows(t); /* one unit of groups (a pair; Q2_K and Q3_K an octet) */
            repacked_case_make(&cs, t, k, MAXR, unit);
            const size_t ws = cs.ws, xs = cs.xs;
            const wk_cpu_kernels *s = wk_cpu_kernels_scalar(t);
            float *ys = malloc(sizeof(float) * MAXR * unit), *yr = malloc(sizeof(float) * MAXR * unit);
            float *yt = malloc(sizeof(float) * MAXR * unit); /* the kernel for weights from memory */
            for (int64_t nr = 1; nr <= MAXR; nr++) {
                packed(k, nr, unit, cs.wp, ws, cs.xq, xs, ys, unit);
                s->gemm_q(k, nr, unit, cs.w, ws, cs.xq, xs, yr, unit);
                same_bits_per_row("repacked", t, packed, k, nr, unit, cs.wp, ws, cs.xq, xs);
                /* the kernel for weights from memory (its own one-row block in Q4_K, Q5_K) */
                if (streamed) {
                    memset(yt, 0xff, sizeof(float) * MAXR * unit);
                    streamed(k, nr, unit, cs.wp, ws, cs.xq, xs, yt, unit);
                    CHECK_MSG(memcmp(yt, ys, sizeof(float) * (size_t)(nr * unit)) == 0,
                              "repacked %s (%s) k=%lld, %lld rows: the kernel for weights from memory differs",
                              tr->name, wk_isa_name(isa), (long long)k, (long long)nr);
                }
                for (int64_t r = 0; r < nr; r++)
                    for (int64_t c = 0; c < unit; c++) {
                        const double mag = cs.mag[r * unit + c];
                        CHECK_MSG(fabs((double)ys[r * unit + c] - yr[r * unit + c]) <= 2e-6 * mag + 1e-6,
                                  "repacked %s k=%lld %lldx%d at (%lld,%lld): %.9g vs %.9g", tr->name,
                                  (long long)k, (long long)nr, unit, (long long)r, (long long)c,
                                  ys[r * unit + c], yr[r * unit + c]);
                    }
            }
            free(ys), free(yr), free(yt);
            repacked_case_free(&cs);
        }
    }
}

/* The groups a one-row tile reads side by side (1, 2, 4 or 8, wk_cpu_streams_log2) change
 * the order of the loads, never a column's operations: 7 units of groups (14 groups: 8 + 4 +
 * 2 at the most; Q2_K 56, always 8) give the same bits at every cap, for one and two rows. */
static void test_repacked_streams(wk_isa isa)
{
    enum { NR = 2, MAXNC = 7 * 64 };
    const int saved = wk_cpu_streams_log2();
    for (size_t ti = 0; ti < sizeof repacked_types / sizeof repacked_types[0]; ti++) {
        wk_type t = repacked_types[ti];
        wk_gemm_fn packed = wk_cpu_repacked_gemm(t, isa);
        if (!packed) continue;
        const int NC = 7 * (int)wk_repack_unit_rows(t);
        const int64_t k = 2 * wk_traits(t)->block_size;
        repacked_case cs;
        repacked_case_make(&cs, t, k, NR, NC);
        float ref[NR * MAXNC], y[NR * MAXNC];
        for (int nr = 1; nr <= NR; nr++) {
            wk_cpu_set_streams_log2(3);
            packed(k, nr, NC, cs.wp, cs.ws, cs.xq, cs.xs, ref, NC);
            for (int l = 0; l < 3; l++) {
                wk_cpu_set_streams_log2(l);
                packed(k, nr, NC, cs.wp, cs.ws, cs.xq, cs.xs, y, NC);
                CHECK_MSG(memcmp(y, ref, sizeof(float) * nr * NC) == 0,
                          "repacked %s (%s), %d rows: %d groups side by side differ from 8",
                          wk_type_name(t), wk_isa_name(isa), nr, 1 << l);
            }
            /* the kernel for weights read from memory (one group at a time at one row) */
            wk_gemm_fn streamed = wk_cpu_repacked_gemm_streamed(t, isa);
            if (streamed) {
                memset(y, 0xff, sizeof y);
                streamed(k, nr, NC, cs.wp, cs.ws, cs.xq, cs.xs, y, NC);
                CHECK_MSG(memcmp(y, ref, sizeof(float) * nr * NC) == 0,
                          "repacked %s (%s), %d rows: the kernel for weights from memory differs", wk_type_name(t),
                          wk_isa_name(isa), nr);
            }
        }
        repacked_case_free(&cs);
    }
    wk_cpu_set_streams_log2(saved);
}

/* ys, nr rows of nc outputs ld floats apart, within the scalar kernel's tolerance of yr
 * (the case's magnitudes); `what` names the case in a failure. */
static void near_scalar(const repacked_case *cs, const char *what, const float *ys, const float *yr, int nr,
                        int nc, int ld)
{
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++)
            CHECK_MSG(fabs((double)ys[r * ld + c] - yr[r * ld + c]) <= 2e-6 * cs->mag[r * ld + c] + 1e-6,
                      "%s at (%d,%d): %.9g vs scalar %.9g", what, r, c, ys[r * ld + c], yr[r * ld + c]);
}

/* Are the first nc outputs of nr rows ld floats apart the same bits in a and b? */
static bool same_rows(const float *a, const float *b, int nr, int nc, int ld)
{
    bool same = true;
    for (int r = 0; r < nr; r++) same = same && memcmp(a + r * ld, b + r * ld, sizeof(float) * (size_t)nc) == 0;
    return same;
}

/* The many-row kernels work on blocks of 32 rows (AVX-512 Q2_K and Q3_K 64) in tiles of 4: 69 rows
 * leave a last block of 5 (a tile and a remainder); two units of 8-column groups (pairs;
 * Q2_K and Q3_K octets), each served together. Against the scalar kernel, and bitwise against the
 * rows one at a time. */
static void test_repacked_many_rows(wk_isa isa)
{
    enum { NR = 69 };
    for (size_t ti = 0; ti < sizeof repacked_types / sizeof repacked_types[0]; ti++) {
        wk_type t = repacked_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        wk_gemm_fn packed = wk_cpu_repacked_gemm(t, isa);
        if (!packed) continue;
        const int NC = 2 * (int)wk_repack_unit_rows(t);
        int64_t k = tr->block_size == 32 ? 9 * 32 : 2 * 256;
        repacked_case cs;
        repacked_case_make(&cs, t, k, NR, NC);
        const size_t ws = cs.ws, xs = cs.xs;
        float *ys = malloc(sizeof(float) * NR * NC), *yr = malloc(sizeof(float) * NR * NC);
        packed(k, NR, NC, cs.wp, ws, cs.xq, xs, ys, NC);
        wk_cpu_kernels_scalar(t)->gemm_q(k, NR, NC, cs.w, ws, cs.xq, xs, yr, NC);
        char what[96];
        snprintf(what, sizeof what, "repacked %s, %d rows", tr->name, NR);
        near_scalar(&cs, what, ys, yr, NR, NC, NC);
        same_bits_per_row("repacked", t, packed, k, NR, NC, cs.wp, ws, cs.xq, xs);
        free(ys), free(yr);
        repacked_case_free(&cs);
    }
}

/* A long k: 37 super-blocks (K types) or 75 blocks cross the Q6_K tiles' span of 32
 * super-blocks whose lane offsets are made at once (a second, partial span), and the
 * AVX-512 many-row kernel's chunks of 32 decoded blocks (32, 32, 11). Rows 1 to 37 take the
 * tiles of 1 to 4 rows, 4-row tiles and a remainder, and the many-row kernels (from 5 rows
 * for Q6_K, 17 for Q2_K, 32 for the AVX-512 32-element one, in passes of 8 and single
 * rows); against the scalar kernel and bitwise against the rows one at a time. */
static void test_repacked_long_k(wk_isa isa)
{
    enum { NR = 37, MAXNC = 64 };
    for (size_t ti = 0; ti < sizeof repacked_types / sizeof repacked_types[0]; ti++) {
        wk_type t = repacked_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        wk_gemm_fn packed = wk_cpu_repacked_gemm(t, isa);
        if (!packed) continue;
        const int NC = (int)wk_repack_unit_rows(t); /* one unit of groups */
        int64_t k = tr->block_size == 32 ? 75 * 32 : 37 * 256;
        repacked_case cs;
        repacked_case_make(&cs, t, k, NR, NC);
        const size_t ws = cs.ws, xs = cs.xs;
        float yr[NR * MAXNC], y1[NR * MAXNC];
        wk_cpu_kernels_scalar(t)->gemm_q(k, NR, NC, cs.w, ws, cs.xq, xs, yr, NC);
        for (int r = 0; r < NR; r++) packed(k, 1, NC, cs.wp, ws, cs.xq + r * xs, xs, y1 + r * NC, NC);
        for (int nr = 1; nr <= NR; nr++) {
            float ys[NR * MAXNC];
            packed(k, nr, NC, cs.wp, ws, cs.xq, xs, ys, NC);
            CHECK_MSG(memcmp(ys, y1, sizeof(float) * (size_t)(nr * NC)) == 0,
                      "repacked %s k=%lld: %d rows at once differ from one row at a time", tr->name,
                      (long long)k, nr);
            char what[96];
            snprintf(what, sizeof what, "repacked %s k=%lld, %d rows", tr->name, (long long)k, nr);
            near_scalar(&cs, what, ys, yr, nr, NC, NC);
        }
        repacked_case_free(&cs);
    }
}

/* Few rows read up to 8 column groups side by side (wk_tile_groups: 8, then 4 and 2 for
 * the rest; 1 where a row count has no wider tile; Q2_K and Q3_K always an octet's 8). 1 to 12 units
 * (pairs: 2 to 24 groups) leave every remainder after one or two runs of 8; the result of
 * one call must equal, bit for bit, the units one call each, and the scalar kernel within its
 * tolerance. The K types' k of 33 super-blocks crosses the Q6_K span of lane offsets (a
 * later span adds to y). */
static void test_repacked_groups(wk_isa isa)
{
    enum { NR = 4, NG = 12 }; /* NG units of groups */
    for (size_t ti = 0; ti < sizeof repacked_types / sizeof repacked_types[0]; ti++) {
        wk_type t = repacked_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        wk_gemm_fn packed = wk_cpu_repacked_gemm(t, isa);
        if (!packed) continue;
        const int U = (int)wk_repack_unit_rows(t), NC = U * NG;
        int64_t k = tr->block_size == 32 ? 5 * 32 : 33 * 256;
        repacked_case cs;
        repacked_case_make(&cs, t, k, NR, NC);
        const size_t ws = cs.ws, xs = cs.xs;
        float *yr = malloc(sizeof(float) * NR * NC), *ys = malloc(sizeof(float) * NR * NC);
        float *y1 = malloc(sizeof(float) * NR * NC);
        wk_cpu_kernels_scalar(t)->gemm_q(k, NR, NC, cs.w, ws, cs.xq, xs, yr, NC);
        for (int nr = 1; nr <= NR; nr++) {
            for (int g = 0; g < NG; g++) packed(k, nr, U, cs.wp + (size_t)U * g * ws, ws, cs.xq, xs, y1 + U * g, NC);
            for (int ng = 1; ng <= NG; ng++) {
                memset(ys, 0, sizeof(float) * NR * NC);
                packed(k, nr, U * ng, cs.wp, ws, cs.xq, xs, ys, NC);
                CHECK_MSG(same_rows(ys, y1, nr, U * ng, NC),
                          "repacked %s (%s) k=%lld, %d rows x %d units differ from one unit at a time",
                          tr->name, wk_isa_name(isa), (long long)k, nr, ng);
                char what[96];
                snprintf(what, sizeof what, "repacked %s (%s), %d rows x %d units", tr->name, wk_isa_name(isa),
                         nr, ng);
                near_scalar(&cs, what, ys, yr, nr, U * ng, NC);
            }
        }
        free(yr), free(ys), free(y1);
        repacked_case_free(&cs);
    }
}

/* Q5_0 codes at their extremes (0 and 31) against activations at +-127: the many-row
 * kernel sums (code - 16) * x in 16-bit lanes that start from the activations' offset,
 * and the lane sums reach -32512 and +30480 here. Every product is an integer times 1.0,
 * so the kernel must equal the scalar reference exactly. */
static void test_q5_0_extremes(wk_isa isa)
{
    enum { NC = 32, NR = 6, NB = 2 }; /* 2 pairs of groups */
    const int64_t k = NB * 32;
    wk_block_q5_0 w[NC * NB], wp[NC * NB];
    wk_block_q8_0 x[NR * NB];
    for (int c = 0; c < NC; c++)
        for (int b = 0; b < NB; b++) {
            wk_block_q5_0 *blk = &w[c * NB + b];
            uint8_t v = (c + b) % 2 ? 0xff : 0x00; /* every code 31, or every code 0 */
            blk->d = 0x3c00;                       /* 1.0 */
            memset(blk->qh, v, sizeof blk->qh);
            memset(blk->qs, v, sizeof blk->qs);
        }
    for (int r = 0; r < NR; r++)
        for (int b = 0; b < NB; b++) {
            wk_block_q8_0 *blk = &x[r * NB + b];
            blk->d = 0x3c00;
            for (int i = 0; i < 32; i++)
                blk->qs[i] = (int8_t)(r % 3 == 0 ? 127 : r % 3 == 1 ? -127 : (i % 2 ? 127 : -127));
        }
    size_t ws = sizeof(wk_block_q5_0) * NB, xs = sizeof(wk_block_q8_0) * NB;
    wk_cpu_repack_rows(WK_TYPE_Q5_0, w, wp, NC, k);
    float ys[NR * NC], yr[NR * NC];
    wk_cpu_kernels_scalar(WK_TYPE_Q5_0)->gemm_q(k, NR, NC, w, ws, x, xs, yr, NC);
    for (int nr = 1; nr <= NR; nr++) { /* the tiles (1, 2 rows) and the many-row kernel */
        wk_cpu_repacked_gemm(WK_TYPE_Q5_0, isa)(k, nr, NC, wp, ws, x, xs, ys, NC);
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < NC; c++)
                CHECK_MSG(ys[r * NC + c] == yr[r * NC + c], "q5_0 extremes (%s) %d rows at (%d,%d): %.9g vs scalar %.9g",
                          wk_isa_name(isa), nr, r, c, ys[r * NC + c], yr[r * NC + c]);
    }
}

/* Q6_K codes at their extremes (stored 0 and 63, values -32 and 31) against activations at
 * +-127 and scales at +-127: the many-row kernel's 16-bit lanes reach -32512 and the
 * sums must still equal the scalar reference exactly (integers times 1.0). */
static void test_q6_K_extremes(wk_isa isa)
{
    enum { NC = 32, NR = 6 }; /* 2 pairs of groups */
    const int64_t k = 256;
    static wk_block_q6_K w[NC], wp[NC];
    static wk_block_q8_K x[NR];
    for (int c = 0; c < NC; c++) {
        uint8_t v = c % 2 ? 0xff : 0x00;
        memset(w[c].ql, v, sizeof w[c].ql);
        memset(w[c].qh, v, sizeof w[c].qh);
        for (int g = 0; g < 16; g++) w[c].scales[g] = (int8_t)((c / 2 + g) % 3 == 0 ? -127 : (c / 2 + g) % 3 == 1 ? 127 : 1);
        w[c].d = 0x3c00;
    }
    for (int r = 0; r < NR; r++) {
        x[r].d = 1.0f;
        for (int i = 0; i < 256; i++) x[r].qs[i] = (int8_t)(r % 3 == 0 ? 127 : r % 3 == 1 ? -127 : (i % 2 ? 127 : -127));
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += x[r].qs[16 * g + i];
            x[r].bsums[g] = (int16_t)sum;
        }
    }
    wk_cpu_repack_rows(WK_TYPE_Q6_K, w, wp, NC, k);
    float ys[NR * NC], yr[NR * NC];
    wk_cpu_kernels_scalar(WK_TYPE_Q6_K)->gemm_q(k, NR, NC, w, sizeof(wk_block_q6_K), x, sizeof(wk_block_q8_K), yr, NC);
    for (int nr = 1; nr <= NR; nr++) { /* the tiles (1-4 rows) and the many-row kernel */
        wk_cpu_repacked_gemm(WK_TYPE_Q6_K, isa)(k, nr, NC, wp, sizeof(wk_block_q6_K), x, sizeof(wk_block_q8_K), ys, NC);
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < NC; c++)
                CHECK_MSG(ys[r * NC + c] == yr[r * NC + c], "q6_K extremes (%s) %d rows at (%d,%d): %.9g vs scalar %.9g",
                          wk_isa_name(isa), nr, r, c, ys[r * NC + c], yr[r * NC + c]);
    }
}

/* Q8_K activation rows (nr rows of nb super-blocks) of lo and 127 in patterns that vary with the
 * row and block, with their block sums: lo = -127 is the end of what the Q8_K quantizers give
 * (they round x / (max / 127)); -128 is what a kernel without a sign trick must also take. */
static void extreme_q8_K_rows(wk_block_q8_K *x, int nr, int nb, int lo)
{
    for (int r = 0; r < nr; r++)
        for (int b = 0; b < nb; b++) {
            wk_block_q8_K *xb = &x[r * nb + b];
            xb->d = 1.0f;
            for (int i = 0; i < 256; i++)
                xb->qs[i] = (int8_t)((r + b) % 3 == 0 ? lo : (r + b) % 3 == 1 ? 127 : (i % 2 ? 127 : lo));
            for (int g = 0; g < 16; g++) {
                int sum = 0;
                for (int i = 0; i < 16; i++) sum += xb->qs[16 * g + i];
                xb->bsums[g] = (int16_t)sum;
            }
        }
}

/* Q2_K codes at their extreme (3) with scales 15 against activations of -128 and 127: the
 * 512-bit kernels sum the products of one group of 16 in 32-bit lanes whose low 16 bits meet
 * the scale, the codes of every other group times 4 (up to 4 x 3 x 128 x 16 = 24576 here).
 * Every product is an integer times 1.0, so the kernels must equal the scalar reference
 * exactly: at 1-9 rows (the one-row tiles, the tiles of 2-4 rows and the many-row kernels). */
static void test_q2_K_extremes(wk_isa isa)
{
    enum { NC = 128, NR = 9, NB = 2 }; /* 2 octets of groups */
    const int64_t k = NB * 256;
    static wk_block_q2_K w[NC * NB], wp[NC * NB];
    static wk_block_q8_K x[NR * NB];
    for (int c = 0; c < NC; c++)
        for (int b = 0; b < NB; b++) {
            wk_block_q2_K *blk = &w[c * NB + b];
            memset(blk->qs, (c + b) % 3 == 2 ? 0x00 : 0xff, sizeof blk->qs); /* every code 3, or 0 */
            for (int g = 0; g < 16; g++) /* scale 15, min 15, 0 or 1 */
                blk->scales[g] = (uint8_t)((c / 3 + g) % 3 == 0 ? 0xff : (c / 3 + g) % 3 == 1 ? 0x0f : 0x1f);
            blk->d = 0x3c00, blk->dmin = 0x3c00; /* 1.0 */
        }
    extreme_q8_K_rows(x, NR, NB, -128);
    const size_t ws = NB * sizeof(wk_block_q2_K), xs = NB * sizeof(wk_block_q8_K);
    wk_cpu_repack_rows(WK_TYPE_Q2_K, w, wp, NC, k);
    static float ys[NR * NC], yr[NR * NC];
    wk_cpu_kernels_scalar(WK_TYPE_Q2_K)->gemm_q(k, NR, NC, w, ws, x, xs, yr, NC);
    for (int nr = 1; nr <= NR; nr++) {
        wk_cpu_repacked_gemm(WK_TYPE_Q2_K, isa)(k, nr, NC, wp, ws, x, xs, ys, NC);
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < NC; c++)
                CHECK_MSG(ys[r * NC + c] == yr[r * NC + c], "q2_K extremes (%s) %d rows at (%d,%d): %.9g vs scalar %.9g",
                          wk_isa_name(isa), nr, r, c, ys[r * NC + c], yr[r * NC + c]);
    }
}

/* The repacked kernel of K type t at 1 to nr rows on the weight w (nc rows of nb super-blocks
 * in the file's layout, codes at their extremes), and the row-major kernel (the rows past the
 * last repacked unit), against the scalar kernel, within 1e-6 of the sum of |products|: a
 * 16-bit sum that wrapped would be off by 65536 x a scale. */
static void check_k_extremes(wk_isa isa, wk_type t, const void *w, int nc, int nb, const wk_block_q8_K *x, int nr)
{
    const wk_type_traits *tr = wk_traits(t);
    const int64_t k = 256 * nb;
    const size_t ws = (size_t)nb * tr->block_bytes, xs = (size_t)nb * sizeof(wk_block_q8_K);
    void *wp = malloc(ws * nc);
    float *ys = malloc(sizeof(float) * nr * nc), *yr = malloc(sizeof(float) * nr * nc);
    float *wd = malloc(sizeof(float) * k * nc), *xd = malloc(sizeof(float) * k);
    double *mag = malloc(sizeof(double) * nr * nc);
    for (int c = 0; c < nc; c++) tr->to_f32((const char *)w + c * ws, wd + c * k, k);
    for (int r = 0; r < nr; r++) {
        wk_traits(WK_TYPE_Q8_K)->to_f32((const char *)x + r * xs, xd, k);
        for (int c = 0; c < nc; c++) {
            double m = 0;
            for (int64_t i = 0; i < k; i++) m += fabs((double)wd[c * k + i] * xd[i]);
            mag[r * nc + c] = m;
        }
    }
    wk_cpu_repack_rows(t, w, wp, nc, k);
    wk_cpu_kernels_scalar(t)->gemm_q(k, nr, nc, w, ws, x, xs, yr, nc);
    for (int m = 0; m <= nr; m++) { /* m = 0: the row-major kernel at nr rows */
        const int rows = m ? m : nr;
        if (m) wk_cpu_repacked_gemm(t, isa)(k, m, nc, wp, ws, x, xs, ys, nc);
        else wk_cpu_kernels_for(t, WK_ISA_AVX2)->gemm_q(k, nr, nc, w, ws, x, xs, ys, nc);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < nc; c++)
                CHECK_MSG(fabs((double)ys[r * nc + c] - yr[r * nc + c]) <= 1e-6 * mag[r * nc + c] + 1e-6,
                          "%s extremes (%s) %d rows at (%d,%d): %.9g vs scalar %.9g", tr->name,
                          m ? wk_isa_name(isa) : "row-major avx2", rows, r, c, ys[r * nc + c], yr[r * nc + c]);
    }
    free(wp), free(ys), free(yr), free(wd), free(xd), free(mag);
}

/* Q3_K, Q5_K and Q8_K at their extremes against activations of -127 and 127: Q5_K's codes 31
 * (the 512-bit tile sums 8 products in the low 16 bits that meet a scale), Q3_K's values 3 and
 * -4 with scales 31 and -32 (sums from -4 x the block sums), Q8_K's codes -128 (which a file
 * may hold) and 127. */
static void test_k_extremes(wk_isa isa)
{
    enum { NC = 64, NR = 9, NB = 2 }; /* 4 pairs of groups; Q3_K one octet; past 8 rows (Q3_K's many-row kernel) */
    static wk_block_q8_K x[NR * NB];
    extreme_q8_K_rows(x, NR, NB, -127);
    static wk_block_q5_K w5[NC * NB];
    static wk_block_q3_K w3[NC * NB];
    static wk_block_q8_K w8[NC * NB];
    for (int c = 0; c < NC; c++)
        for (int b = 0; b < NB; b++) {
            const int v = (c + b) % 3;
            wk_block_q5_K *a = &w5[c * NB + b];
            memset(a->qs, v == 2 ? 0x00 : 0xff, sizeof a->qs);
            memset(a->qh, v == 2 ? 0x00 : 0xff, sizeof a->qh);
            memset(a->scales, v == 1 ? 0x41 : 0xff, sizeof a->scales); /* scales and mins 63, or 1 */
            a->d = 0x3c00, a->dmin = 0x3c00;
            wk_block_q3_K *q = &w3[c * NB + b];
            memset(q->qs, v == 2 ? 0x00 : 0xff, sizeof q->qs);
            memset(q->hmask, v == 0 ? 0xff : 0x00, sizeof q->hmask); /* values 3, -1 or -4 */
            memset(q->scales, (c / 3 + b) % 2 ? 0xff : 0x00, sizeof q->scales); /* scales 31 or -32 */
            q->d = 0x3c00;
            wk_block_q8_K *e = &w8[c * NB + b];
            e->d = 1.0f;
            for (int i = 0; i < 256; i++) e->qs[i] = (int8_t)(v == 0 ? -128 : v == 1 ? 127 : (i % 3 ? -128 : 127));
            memset(e->bsums, 0, sizeof e->bsums);
        }
    check_k_extremes(isa, WK_TYPE_Q5_K, w5, NC, NB, x, NR);
    check_k_extremes(isa, WK_TYPE_Q3_K, w3, NC, NB, x, NR);
    check_k_extremes(isa, WK_TYPE_Q8_K, w8, NC, NB, x, NR);
}

/* The AVX-512 kernels against the AVX2 ones, bit for bit (same integer sums, same float
 * steps), and against the scalar kernel: k of one block (or super-block), a few, and, for
 * the K types, 33 super-blocks (across the Q6_K span); 1 to 12 units of groups (pairs; Q2_K
 * and Q3_K octets, 1 to 4) at 1 to 5 rows (every tile, every remainder of the groups), and 1, 2 and
 * the most units up to 18 rows (past every type's many-row threshold, 17 at most). */
static void test_repacked_avx512_vs_avx2(void)
{
    enum { NR = 18 };
    for (size_t ti = 0; ti < sizeof repacked_types / sizeof repacked_types[0]; ti++) {
        wk_type t = repacked_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        const int U = (int)wk_repack_unit_rows(t), NG = U > 16 ? 4 : 12, NC = U * NG; /* NG units */
        wk_gemm_fn f512 = wk_cpu_repacked_gemm(t, WK_ISA_AVX512), f2 = wk_cpu_repacked_gemm(t, WK_ISA_AVX2);
        CHECK_MSG(f512 && f2, "%s: no repacked kernel", tr->name);
        if (!f512 || !f2) continue;
        const int64_t ks[3] = {tr->block_size, 3 * tr->block_size, tr->block_size == 32 ? 75 * 32 : 33 * 256};
        for (int ki = 0; ki < 3; ki++) {
            const int64_t k = ks[ki];
            repacked_case cs;
            repacked_case_make(&cs, t, k, NR, NC);
            float *yr = malloc(sizeof(float) * NR * NC), *ya = malloc(sizeof(float) * NR * NC);
            float *yb = malloc(sizeof(float) * NR * NC);
            wk_cpu_kernels_scalar(t)->gemm_q(k, NR, NC, cs.w, cs.ws, cs.xq, cs.xs, yr, NC);
            for (int nr = 1; nr <= NR; nr++)
                for (int ng = 1; ng <= NG; ng++) {
                    if (nr > 5 && ng > 2 && ng < NG) continue;
                    f512(k, nr, U * ng, cs.wp, cs.ws, cs.xq, cs.xs, ya, NC);
                    f2(k, nr, U * ng, cs.wp, cs.ws, cs.xq, cs.xs, yb, NC);
                    CHECK_MSG(same_rows(ya, yb, nr, U * ng, NC),
                              "repacked %s k=%lld, %d rows x %d units: AVX-512 differs from AVX2", tr->name,
                              (long long)k, nr, ng);
                    char what[96];
                    snprintf(what, sizeof what, "repacked %s (AVX-512) k=%lld, %d rows x %d units", tr->name,
                             (long long)k, nr, ng);
                    near_scalar(&cs, what, ya, yr, nr, U * ng, NC);
                }
            free(yr), free(ya), free(yb);
            repacked_case_free(&cs);
        }
    }
}

/* The precise form's AVX-512 kernels give the AVX2 kernels' bits, for every type: up to 4 rows
 * (the dense weights in 512-bit registers, the others AVX2's), and 5 rows and more through the
 * buffered tiles of 6 rows x 8 columns (every row remainder, a second block of 64 rows), column
 * counts around the group of 8, k of one block, of several 512-element segments and a short
 * last one, and dense k with a tail past the last 32. */
static void test_precise_avx512_vs_avx2(void)
{
    enum { NC = 21 };
    const int64_t nrs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 64, 71};
    for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++) {
        const wk_type t = all_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        const wk_cpu_kernels *z = wk_cpu_kernels_avx512(t), *a = wk_cpu_kernels_avx2(t);
        CHECK_MSG(z && z->gemm_f32 && a, "%s: no AVX-512 precise kernel", tr->name);
        if (!z || !z->gemm_f32 || !a) continue;
        const int64_t bs = tr->block_size == 1 ? 32 : tr->block_size;
        /* 20 blocks: 640 elements of a 32-element format, a segment and a short one */
        const int64_t dense_ks[] = {32, 37, 96, 4096 + 31}, block_ks[] = {bs, 3 * bs, 6 * bs, 20 * bs};
        const int64_t *ks = tr->block_size == 1 ? dense_ks : block_ks;
        const size_t nk = 4;
        for (size_t ki = 0; ki < nk; ki++) {
            const int64_t k = ks[ki], NR = nrs[sizeof nrs / sizeof nrs[0] - 1];
            size_t ws = 0;
            CHECK_OK(wk_type_row_bytes(t, k, &ws));
            float *wf = malloc(sizeof(float) * NC * k), *xf = malloc(sizeof(float) * NR * k);
            char *w = malloc(ws * NC);
            float *yz = malloc(sizeof(float) * NR * NC), *ya = malloc(sizeof(float) * NR * NC);
            for (int64_t i = 0; i < NC * k; i++) wf[i] = rnd();
            for (int64_t i = 0; i < NR * k; i++) xf[i] = rnd();
            for (int c = 0; c < NC; c++) tr->from_f32(wf + c * k, w + c * ws, k);
            for (size_t ri = 0; ri < sizeof nrs / sizeof nrs[0]; ri++)
                for (int nc = 1; nc <= NC; nc += (nrs[ri] > 16 && nc < 15 ? 7 : 1)) {
                    const int nr = (int)nrs[ri];
                    z->gemm_f32(k, nr, nc, w, ws, xf, sizeof(float) * k, yz, NC);
                    a->gemm_f32(k, nr, nc, w, ws, xf, sizeof(float) * k, ya, NC);
                    CHECK_MSG(same_rows(yz, ya, nr, nc, NC), "%s k=%lld, %d rows x %d columns: AVX-512 differs from AVX2",
                              tr->name, (long long)k, nr, nc);
                }
            free(wf), free(xf), free(w), free(yz), free(ya);
        }
    }
}

/* The precise form on the octet layout (cpu/octets.h) gives the bits of the file's layout,
 * for every block type, 1-9 rows (the register paths), 16, 64 and 71 (the buffered tiles and
 * the AVX-512 many-row kernel, with its k segments), 1-3 octets. */
static void test_precise_octets(wk_isa isa)
{
    enum { NC = 24 };
    const int64_t nrs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64, 71};
    for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++) {
        const wk_type t = all_types[ti];
        const wk_type_traits *tr = wk_traits(t);
        if (!tr->quantized) continue;
        const wk_cpu_kernels *v = wk_cpu_kernels_for(t, isa);
        CHECK_MSG(v->precise_octets, "%s: no %s precise kernel for octets", tr->name, wk_isa_name(isa));
        if (!v->precise_octets) continue;
        const int64_t bs = tr->block_size, ks[] = {bs, 3 * bs, 20 * bs};
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki], NR = nrs[sizeof nrs / sizeof nrs[0] - 1];
            size_t ws = 0;
            CHECK_OK(wk_type_row_bytes(t, k, &ws));
            float *wf = malloc(sizeof(float) * NC * k), *xf = malloc(sizeof(float) * NR * k);
            char *w = malloc(ws * NC), *wo = malloc(ws * NC);
            float *yo = malloc(sizeof(float) * NR * NC), *yf = malloc(sizeof(float) * NR * NC);
            for (int64_t i = 0; i < NC * k; i++) wf[i] = rnd();
            for (int64_t i = 0; i < NR * k; i++) xf[i] = rnd();
            for (int c = 0; c < NC; c++) tr->from_f32(wf + c * k, w + c * ws, k);
            wk_cpu_octets_rows(t, w, wo, NC, k);
            CHECK_MSG(memcmp(w, wo, ws * NC) != 0 || k == bs, "%s k=%lld: octets equal the file's layout",
                      tr->name, (long long)k);
            for (size_t ri = 0; ri < sizeof nrs / sizeof nrs[0]; ri++)
                for (int nc = 8; nc <= NC; nc += 8) {
                    const int nr = (int)nrs[ri];
                    memset(yo, 0xff, sizeof(float) * NR * NC);
                    v->precise_octets(k, nr, nc, wo, ws, xf, sizeof(float) * k, yo, NC);
                    v->gemm_f32(k, nr, nc, w, ws, xf, sizeof(float) * k, yf, NC);
                    CHECK_MSG(same_rows(yo, yf, nr, nc, NC),
                              "%s %s k=%lld, %d rows x %d columns: octets differ from the file's layout",
                              wk_isa_name(isa), tr->name, (long long)k, nr, nc);
                }
            free(wf), free(xf), free(w), free(wo), free(yo), free(yf);
        }
    }
}

/* The llama.cpp-order kernels of the 32-element formats (the model's quantized form): the
 * AVX-512 one, 16 columns a register, gives the AVX2 one's bits for every row count (1-11:
 * pairs of rows and an odd last one; 37 rows for the k of several decoded chunks, whose
 * passes of 32 rows leave a remainder), for an odd number of pairs of groups, with
 * weights and codes at their extremes. */
static void test_exact_avx512_vs_avx2(void)
{
    const wk_type types[] = {WK_TYPE_Q4_0, WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q8_0};
    const int64_t ks[] = {32, 96, 576, 2080}, n = 48; /* 3 pairs; 2080: chunks of 32, 32, 1 blocks */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const wk_type t = types[ti];
            const wk_type_traits *tr = wk_traits(t);
            const bool q8_1 = t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1;
            const wk_type_traits *at = wk_traits(q8_1 ? WK_TYPE_Q8_1 : WK_TYPE_Q8_0);
            const int64_t k = ks[ki], m = k > 1024 ? 37 : 11;
            const size_t row_bytes = (size_t)(k / 32) * tr->block_bytes, xs = (size_t)(k / 32) * at->block_bytes;
            float *f = malloc(sizeof(float) * (size_t)(n * k)), *xf = malloc(sizeof(float) * (size_t)(m * k));
            uint8_t *rows = malloc(row_bytes * n), *packed = malloc(row_bytes * n), *xq = malloc(xs * m);
            wk_exact_xprep *prep = malloc(sizeof(wk_exact_xprep) * (size_t)(m * (k / 32)));
            float *y2 = malloc(sizeof(float) * (size_t)(m * n)), *y5 = malloc(sizeof(float) * (size_t)(m * n));
            for (int64_t i = 0; i < n * k; i++) f[i] = rnd() * (1 + i % 7);
            for (int64_t i = 0; i < m * k; i++) xf[i] = rnd() * (1 + i % 5);
            /* extremes: a block of one sign with its largest weight opposite (codes 0 and the
             * top code, Q8_0 -128), activation codes of +-127 */
            for (int64_t i = 0; i < 32; i++) f[i] = i == 5 ? -8.0f : 1.0f, f[k + i] = i == 9 ? 8.0f : -1.0f;
            for (int64_t i = 0; i < 32; i++) xf[i] = i % 2 ? 1.0f : -1.0f;
            for (int64_t r = 0; r < n; r++) tr->from_f32(f + r * k, rows + r * row_bytes, k);
            wk_cpu_repack_rows(t, rows, packed, n, k);
            for (int64_t r = 0; r < m; r++) {
                if (q8_1) wk_avx2_act_q8_1(xf + r * k, xq + r * xs, k);
                else wk_avx2_act_q8_0(xf + r * k, xq + r * xs, k);
            }
            wk_avx512_exact_prep(q8_1, k, xq, xs, m, prep);
            for (int64_t rows_m = 1; rows_m <= m; rows_m++) {
                if (rows_m > 11 && rows_m < m) continue;
                memset(y2, 0xff, sizeof(float) * (size_t)(m * n));
                memset(y5, 0xff, sizeof(float) * (size_t)(m * n));
                wk_avx2_exact_groups(t, k, packed, 0, n / 8, xq, xs, rows_m, y2, (size_t)n);
                wk_avx512_exact_groups(t, k, packed, 0, n / 8, xq, xs, prep, rows_m, y5, (size_t)n);
                CHECK_MSG(memcmp(y2, y5, sizeof(float) * (size_t)(rows_m * n)) == 0,
                          "%s k=%lld m=%lld: the AVX-512 llama-order kernel differs from the AVX2 one", tr->name,
                          (long long)k, (long long)rows_m);
                /* rows past m untouched */
                CHECK_MSG(memcmp(y5 + rows_m * n, y2 + rows_m * n, sizeof(float) * (size_t)((m - rows_m) * n)) == 0,
                          "%s k=%lld m=%lld: rows past m written", tr->name, (long long)k, (long long)rows_m);
            }
            free(f), free(xf), free(rows), free(packed), free(xq), free(y2), free(y5), free(prep);
        }
}

/* The same for Q4_K and Q6_K (activations in Q8_K): rows 1-11 (the four-row order of Q4_K
 * and its remainder rows, Q6_K's pairs and an odd row), 37 rows for a k of several decoded
 * chunks (4, 4 and 1 super-blocks), an odd number of pairs of groups. */
static void test_exact_k_avx512_vs_avx2(void)
{
    const wk_type types[] = {WK_TYPE_Q4_K, WK_TYPE_Q6_K};
    const int64_t ks[] = {256, 1536, 2304}, n = 48; /* 3 pairs */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const wk_type t = types[ti];
            const wk_type_traits *tr = wk_traits(t), *at = wk_traits(WK_TYPE_Q8_K);
            const int64_t k = ks[ki], m = k > 1024 * 2 ? 37 : 11;
            const size_t row_bytes = (size_t)(k / 256) * tr->block_bytes, xs = (size_t)(k / 256) * at->block_bytes;
            float *f = malloc(sizeof(float) * (size_t)(n * k)), *xf = malloc(sizeof(float) * (size_t)(m * k));
            uint8_t *rows = malloc(row_bytes * n), *packed = malloc(row_bytes * n), *xq = malloc(xs * m);
            float *y2 = malloc(sizeof(float) * (size_t)(m * n)), *y5 = malloc(sizeof(float) * (size_t)(m * n));
            for (int64_t i = 0; i < n * k; i++) f[i] = rnd() * (1 + i % 7) + (i % 3 ? 0.5f : 0.0f);
            for (int64_t i = 0; i < m * k; i++) xf[i] = rnd() * (1 + i % 5);
            /* extremes: one sign with a single opposite weight (codes 0 and the top code),
             * activations of +-127 */
            for (int64_t i = 0; i < 256; i++) f[i] = i == 5 ? -8.0f : 1.0f, f[k + i] = i == 9 ? 8.0f : -1.0f;
            for (int64_t i = 0; i < 256; i++) xf[i] = i % 2 ? 1.0f : -1.0f;
            for (int64_t r = 0; r < n; r++) tr->from_f32(f + r * k, rows + r * row_bytes, k);
            wk_cpu_repack_rows(t, rows, packed, n, k);
            for (int64_t r = 0; r < m; r++) at->from_f32(xf + r * k, xq + r * xs, k);
            for (int64_t rows_m = 1; rows_m <= m; rows_m++) {
                if (rows_m > 11 && rows_m < m) continue;
                memset(y2, 0xff, sizeof(float) * (size_t)(m * n));
                memset(y5, 0xff, sizeof(float) * (size_t)(m * n));
                wk_avx2_exact_groups_k(t, k, packed, 0, n / 8, xq, xs, rows_m, y2, (size_t)n);
                wk_avx512_exact_groups_k(t, k, packed, 0, n / 8, xq, xs, rows_m, y5, (size_t)n);
                CHECK_MSG(memcmp(y2, y5, sizeof(float) * (size_t)(rows_m * n)) == 0,
                          "%s k=%lld m=%lld: the AVX-512 llama-order kernel differs from the AVX2 one", tr->name,
                          (long long)k, (long long)rows_m);
                CHECK_MSG(memcmp(y5 + rows_m * n, y2 + rows_m * n, sizeof(float) * (size_t)((m - rows_m) * n)) == 0,
                          "%s k=%lld m=%lld: rows past m written", tr->name, (long long)k, (long long)rows_m);
            }
            free(f), free(xf), free(rows), free(packed), free(xq), free(y2), free(y5);
        }
}

int main(void)
{
    wk_isa have = wk_cpu_isa();
    fprintf(stderr, "processor: %s\n", wk_isa_name(have));
    if (have >= WK_ISA_AVX2) {
        test_isa(WK_ISA_AVX2);
        test_act_quantizers(WK_ISA_AVX2);
        test_repacked(WK_ISA_AVX2);
        test_repacked_streams(WK_ISA_AVX2);
        test_repacked_many_rows(WK_ISA_AVX2);
        test_repacked_long_k(WK_ISA_AVX2);
        test_repacked_groups(WK_ISA_AVX2);
        test_q5_0_extremes(WK_ISA_AVX2);
        test_q6_K_extremes(WK_ISA_AVX2);
        test_q2_K_extremes(WK_ISA_AVX2);
        test_k_extremes(WK_ISA_AVX2);
        test_precise_octets(WK_ISA_AVX2);
    }
    else fprintf(stderr, "no AVX2: nothing to compare\n");
    if (have >= WK_ISA_AVX512) {
        test_isa(WK_ISA_AVX512);
        test_act_quantizers(WK_ISA_AVX512);
        test_repacked(WK_ISA_AVX512);
        test_repacked_streams(WK_ISA_AVX512);
        test_repacked_many_rows(WK_ISA_AVX512);
        test_repacked_long_k(WK_ISA_AVX512);
        test_repacked_groups(WK_ISA_AVX512);
        test_q5_0_extremes(WK_ISA_AVX512);
        test_q6_K_extremes(WK_ISA_AVX512);
        test_q2_K_extremes(WK_ISA_AVX512);
        test_k_extremes(WK_ISA_AVX512);
        test_precise_octets(WK_ISA_AVX512);
        test_repacked_avx512_vs_avx2();
        test_precise_avx512_vs_avx2();
        test_exact_avx512_vs_avx2();
        test_exact_k_avx512_vs_avx2();
    }
    else fprintf(stderr, "no AVX-512 (VNNI): its kernels are not run here\n");
    TEST_MAIN_END();
}
