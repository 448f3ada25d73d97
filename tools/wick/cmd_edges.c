/* wick edges: the edge probe (the documents' qedge). Every weight type x device (cpu,
 * cuda) x input dtype (f32, f16) x rows (1, 3) runs one matmul through the public API and
 * prints "ok" with its largest error against a float64 product of the dequantized
 * weight, or the error the library gave. Nothing may be silently wrong: an output that is
 * off is printed as WRONG and makes the exit status 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "wick.h"

static void edges_usage(FILE *f)
{
    fputs("usage: wick edges [--form quantized|precise|f32|f16] [--n N] [--k K]\n"
          "\n"
          "Runs y = x . W^T for every weight type on every device (cpu, cuda), with f32 and f16\n"
          "inputs and 1 and 3 input rows, and prints for each either ok with the largest error\n"
          "against a float64 reference of the dequantized weight, or the library's error.\n"
          "A result outside the form's tolerance is printed as WRONG (exit status 1).\n"
          "\n"
          "options:\n"
          "  --form F   matmul form (default: the environment's, else quantized)\n"
          "  --n N      output columns (default 64)\n"
          "  --k K      inner dimension, a multiple of 256 (default 512)\n"
          "  -h, --help this text\n",
          f);
}

static const wk_type edge_types[] = {WK_TYPE_F32,  WK_TYPE_F16,  WK_TYPE_BF16, WK_TYPE_Q4_0,
                                     WK_TYPE_Q4_1, WK_TYPE_Q5_0, WK_TYPE_Q5_1, WK_TYPE_Q8_0,
                                     WK_TYPE_Q8_1, WK_TYPE_Q2_K, WK_TYPE_Q3_K, WK_TYPE_Q4_K,
                                     WK_TYPE_Q5_K, WK_TYPE_Q6_K, WK_TYPE_Q8_K};

static uint64_t edge_rng = 0x2545f4914f6cdd1dull;
static float edge_rand(void)
{
    edge_rng ^= edge_rng << 13;
    edge_rng ^= edge_rng >> 7;
    edge_rng ^= edge_rng << 17;
    return (float)((double)(edge_rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

/* The tolerance a form promises, relative to sum |w x| of each output. */
static double edge_tolerance(wk_device dev, wk_form form, wk_type x_type)
{
    if (form == WK_FORM_F16) return 4e-3;
    if (dev == WK_DEVICE_CPU && form == WK_FORM_QUANTIZED) return 2e-2; /* activations in 8 bits */
    return x_type == WK_TYPE_F16 ? 1e-4 : 1e-4;
}

typedef struct {
    int64_t n, k, m;
    wk_type x_type;
    const float *x;     /* m x k, already rounded to f16 when x_type is f16 */
    const uint16_t *xh; /* the f16 bits */
    const double *wref; /* n x k dequantized */
} edge_case;

/* One probe; returns 0 ok, 1 wrong, 2 error (message in err). */
static int edge_run(wk_engine *e, wk_qtensor *w, wk_form form, const edge_case *c, double *max_err,
                    double *rel, char *err, size_t errcap, wk_form *used)
{
    wk_qmatmul *mm = NULL;
    void *dx = NULL, *dy = NULL;
    float *y = malloc(sizeof(float) * (size_t)(c->m * c->n));
    int rc = 2;
    size_t xbytes = (size_t)(c->m * c->k) * (c->x_type == WK_TYPE_F32 ? 4 : 2);
    wk_status st = wk_qmatmul_create(e, w, form, &mm);
    if (st) {
        wk_qtensor_free(w);
        goto fail;
    }
    *used = wk_qmatmul_form(mm);
    st = wk_engine_alloc(e, xbytes, &dx);
    if (!st) st = wk_engine_alloc(e, sizeof(float) * (size_t)(c->m * c->n), &dy);
    if (!st)
        st = wk_engine_upload(e, dx, c->x_type == WK_TYPE_F32 ? (const void *)c->x : (const void *)c->xh,
                              xbytes);
    if (!st) {
        for (int64_t i = 0; i < c->m * c->n; i++) y[i] = NAN;
        st = wk_engine_upload(e, dy, y, sizeof(float) * (size_t)(c->m * c->n));
    }
    if (!st) st = wk_qmatmul_forward(mm, dx, c->x_type, c->m, c->k, dy);
    if (!st) st = wk_engine_download(e, y, dy, sizeof(float) * (size_t)(c->m * c->n));
    if (st) goto fail;
    *max_err = 0;
    *rel = 0;
    for (int64_t r = 0; r < c->m; r++)
        for (int64_t j = 0; j < c->n; j++) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < c->k; i++) {
                double p = c->wref[j * c->k + i] * (double)c->x[r * c->k + i];
                ref += p;
                mag += fabs(p);
            }
            double d = fabs((double)y[r * c->n + j] - ref);
            if (!(d <= *max_err)) *max_err = isnan(d) ? INFINITY : d;
            double rl = d / (mag > 0 ? mag : 1);
            if (!(rl <= *rel)) *rel = isnan(rl) ? INFINITY : rl;
        }
    rc = *rel <= edge_tolerance(wk_engine_device(e), *used, c->x_type) ? 0 : 1;
    goto done;
fail:
    snprintf(err, errcap, "%s", wk_last_error());
done:
    if (dx) wk_engine_free_buffer(e, dx);
    if (dy) wk_engine_free_buffer(e, dy);
    wk_qmatmul_free(mm);
    free(y);
    return rc;
}

int cmd_edges(int argc, char **argv)
{
    wk_form form = WK_FORM_AUTO;
    int64_t n = 64, k = 512;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            edges_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--form") && i + 1 < argc) {
            if (wk_form_from_name(argv[++i], &form) != WK_OK)
                return cli_usage_error("unknown form '%s'", argv[i]);
        } else if (!strcmp(argv[i], "--n") && i + 1 < argc) {
            n = atoll(argv[++i]);
        } else if (!strcmp(argv[i], "--k") && i + 1 < argc) {
            k = atoll(argv[++i]);
        } else {
            return cli_usage_error("edges: unexpected argument '%s'", argv[i]);
        }
    }
    if (n <= 0 || k <= 0 || k % 256 != 0 || n > 65536 || k > 65536)
        return cli_usage_error("edges: --n must be 1..65536 and --k a multiple of 256 up to 65536");

    const int64_t m_max = 3;
    float *src = malloc(sizeof(float) * (size_t)(n * k));
    float *deq = malloc(sizeof(float) * (size_t)(n * k));
    double *wref = malloc(sizeof(double) * (size_t)(n * k));
    float *x32 = malloc(sizeof(float) * (size_t)(m_max * k));
    float *x16f = malloc(sizeof(float) * (size_t)(m_max * k));
    uint16_t *x16 = malloc(2 * (size_t)(m_max * k));
    for (int64_t i = 0; i < m_max * k; i++) {
        x32[i] = edge_rand();
        x16[i] = wk_f32_to_f16(x32[i]);
        x16f[i] = wk_f16_to_f32(x16[i]);
    }
    int wrong = 0;
    const wk_device devs[2] = {WK_DEVICE_CPU, WK_DEVICE_CUDA};
    for (int d = 0; d < 2; d++) {
        wk_engine *e = NULL;
        char engine_err[512] = "";
        if (wk_engine_create(devs[d], 0, &e) != WK_OK)
            snprintf(engine_err, sizeof engine_err, "%s", wk_last_error());
        for (size_t ti = 0; ti < sizeof edge_types / sizeof edge_types[0]; ti++) {
            wk_type t = edge_types[ti];
            int64_t dims[2] = {n, k};
            for (int64_t i = 0; i < n * k; i++) src[i] = edge_rand();
            wk_qtensor *w = NULL;
            char qerr[512] = "";
            if (wk_qtensor_quantize(t, 2, dims, src, &w) != WK_OK ||
                wk_qtensor_dequantize_f32(w, deq) != WK_OK)
                snprintf(qerr, sizeof qerr, "%s", wk_last_error());
            for (int64_t i = 0; i < n * k; i++) wref[i] = deq[i];
            for (int xi = 0; xi < 2; xi++) {
                wk_type xt = xi ? WK_TYPE_F16 : WK_TYPE_F32;
                for (int64_t m = 1; m <= 3; m += 2) {
                    printf("[%s] %-5s x=%s m=%lld: ", wk_device_name(devs[d]), wk_type_name(t),
                           wk_type_name(xt), (long long)m);
                    if (!e) {
                        printf("error: %s\n", engine_err);
                        continue;
                    }
                    if (qerr[0] || !w) {
                        printf("error: %s\n", qerr);
                        continue;
                    }
                    wk_qtensor *copy = NULL;
                    if (wk_qtensor_to_device(w, WK_DEVICE_CPU, &copy) != WK_OK) {
                        printf("error: %s\n", wk_last_error());
                        continue;
                    }
                    edge_case c = {n, k, m, xt, xi ? x16f : x32, x16, wref};
                    double max_err = 0, rel = 0;
                    char err[512];
                    wk_form used = form;
                    int rc = edge_run(e, copy, form, &c, &max_err, &rel, err, sizeof err, &used);
                    if (rc == 2)
                        printf("error: %s\n", err);
                    else
                        printf("%s (%s form) max abs err %.3g, relative %.3g\n",
                               rc == 0 ? "ok" : "WRONG", wk_form_name(used), max_err, rel);
                    wrong += rc == 1;
                }
            }
            wk_qtensor_free(w);
        }
        wk_engine_free(e);
    }
    free(src);
    free(deq);
    free(wref);
    free(x32);
    free(x16f);
    free(x16);
    if (wrong) fprintf(stderr, "wick: error: %d probes gave wrong results\n", wrong);
    return wrong ? 1 : 0;
}
