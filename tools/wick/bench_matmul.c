/* wick bench matmul: the documents' matmul benchmark. One random [n, k] weight per type,
 * every form, m input rows; each result is checked against a float64 reference (of the
 * dequantized weight) before it is timed; 3 warm-ups, then 7 batches, the best batch's
 * mean per call. It also measures the machine's read bandwidth with the same threads
 * (once at the start, and again before each m = 1 batch) and reports each m = 1 result as
 * a share of the bandwidth read beside it. With two input dtypes (--x f32,f16)
 * each configuration is timed with both in turn, twice, so that their ratio is measured
 * side by side rather than across invocations of a machine whose bandwidth moves. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "core/error.h"
#include "cpu/bandwidth.h"
#include "wick/quant.h"
#include "wick/tensor.h"

#define MAX_LIST 32

static const char *const usage =
    "usage: wick bench matmul [--n N] [--k K] [--types LIST] [--m LIST] [--forms LIST]\n"
    "                         [--device cpu|cuda] [-t THREADS] [--csv FILE] [--x f32|f16|f32,f16] [--no-rotate]\n"
    "  --n, --k     weight shape [n, k] (default 8192 x 4096)\n"
    "  --types      comma-separated weight types (default q8_0,q4_k,q4_0,q5_0,q6_k,q4_1,q2_k,f16)\n"
    "  --m          comma-separated input row counts (default 1,2,4,8,16,64,256)\n"
    "  --forms      comma-separated forms: quantized,f32,f16,precise (default all)\n"
    "  --device     cpu (default) or cuda\n"
    "  -t           threads (default WICK_NUM_THREADS, else the number of cores)\n"
    "  --csv        also write rows type,m,form,device,threads,ms,gbps,x to FILE\n"
    "  --x          input dtype: f32 (default) or f16, or both (timed in turn; the second's\n"
    "               times printed under the first's with their ratio)\n"
    "  --no-rotate  time one copy of each weight (by default calls rotate over enough copies\n"
    "               to make 384 MiB on the GPU, 4x the last-level cache on the CPU, so that\n"
    "               weights come from memory, not the cache)\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x853c49e6748fea9bull;
static float rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* Split "a,b,c" into at most MAX_LIST items (the string is modified). */
static int split_list(char *s, char **items)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < MAX_LIST; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

static bool parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!s[0] || *end || v <= 0) return false;
    *out = v;
    return true;
}

typedef struct {
    wk_engine *e;
    int64_t n, k;
    const char *csv_path;
    FILE *csv;
    double bw; /* GB/s, or <= 0 when not measured */
    wk_bw_reader *beside; /* CPU: bandwidth reads interleaved with the m = 1 timings */
    bool rotate; /* several copies of each weight (off with --no-rotate) */
    wk_type x_types[2]; /* input dtypes: F32 (default) and/or F16 (--x) */
    int n_x;
} bench_ctx;

/* Check y (rows 0 and m-1, every 4th column) against float64 of the dequantized weight. */
static double check_error(const float *wf, const float *x, const float *y, int64_t m, int64_t n,
                          int64_t k)
{
    double d = 0, r = 0;
    int64_t rows[2] = {0, m - 1};
    for (int ri = 0; ri < (m > 1 ? 2 : 1); ri++) {
        int64_t row = rows[ri];
        for (int64_t c = 0; c < n; c += 4) {
            double s = 0;
            for (int64_t i = 0; i < k; i++) s += (double)wf[c * k + i] * (double)x[row * k + i];
            double e = (double)y[row * n + c] - s;
            d += e * e;
            r += s * s;
        }
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* Time forward calls: 3 warm-ups, 7 batches, best batch's mean per call in ms. Calls
 * rotate over the copies of the weight, so that the weights come from memory, not from
 * a cache that holds one copy: 384 MiB on the GPU (L2 of tens of MiB), four times the
 * last-level cache on the CPU (wk_cpu_uncached_bytes; some hold hundreds of MiB). With
 * `beside`, a bandwidth read precedes each batch and *bw is raised to the best of them:
 * the bandwidth of the same seconds as the calls. */
#define MAX_COPIES 128
static double time_forward(wk_engine *e, wk_qmatmul **mm, int copies, const void *x, wk_type xt,
                           int64_t m, int64_t k, float *y, wk_bw_reader *beside, double *bw)
{
    double t0 = now_s();
    int next = 0;
    for (int i = 0; i < 3; i++) wk_qmatmul_forward(mm[next++ % copies], x, xt, m, k, y);
    wk_engine_synchronize(e);
    double per = (now_s() - t0) / 3;
    int batch = per > 0 ? (int)(0.04 / per) : 200;
    if (batch < 1) batch = 1;
    if (batch > 200) batch = 200;
    double best = 1e30;
    for (int b = 0; b < 7; b++) {
        if (beside) {
            double g = wk_cpu_bw_read(beside);
            if (g > *bw) *bw = g;
        }
        double s = now_s();
        for (int i = 0; i < batch; i++) wk_qmatmul_forward(mm[next++ % copies], x, xt, m, k, y);
        wk_engine_synchronize(e);
        double t = (now_s() - s) / batch;
        if (t < best) best = t;
    }
    return best * 1e3;
}

/* x in each input dtype on the device, dx[i] for x_types[i]. With an f16 input the values
 * are rounded to f16 in place first, so that the reference and both dtypes see the same
 * numbers. */
static wk_status upload_x(bench_ctx *b, void **dx, float *x, int64_t count)
{
    uint16_t *h = NULL;
    for (int i = 0; i < b->n_x; i++)
        if (b->x_types[i] == WK_TYPE_F16 && !h) {
            h = malloc(sizeof(uint16_t) * (size_t)count);
            if (!h) return wk_fail(WK_ERR_NOMEM, "no memory for the f16 input");
            for (int64_t j = 0; j < count; j++) {
                h[j] = wk_f32_to_f16(x[j]);
                x[j] = wk_f16_to_f32(h[j]);
            }
        }
    wk_status st = WK_OK;
    for (int i = 0; i < b->n_x && !st; i++)
        st = b->x_types[i] == WK_TYPE_F16 ? wk_engine_upload(b->e, dx[i], h, sizeof(uint16_t) * (size_t)count)
                                          : wk_engine_upload(b->e, dx[i], x, sizeof(float) * (size_t)count);
    free(h);
    return st;
}

static int bench_type(bench_ctx *b, wk_type t, char **forms, int n_forms, const int64_t *ms, int n_ms)
{
    int64_t n = b->n, k = b->k, dims[2] = {n, k};
    int64_t max_m = 1;
    for (int i = 0; i < n_ms; i++)
        if (ms[i] > max_m) max_m = ms[i];
    float *wf = malloc(sizeof(float) * (size_t)(n * k));
    float *x = malloc(sizeof(float) * (size_t)(max_m * k));
    float *y = malloc(sizeof(float) * (size_t)(max_m * n));
    if (!wf || !x || !y) {
        free(wf), free(x), free(y);
        return cli_error("bench matmul: out of memory for [%lld, %lld]", (long long)n, (long long)k);
    }
    for (int64_t i = 0; i < n * k; i++) wf[i] = rnd();
    for (int64_t i = 0; i < max_m * k; i++) x[i] = rnd();
    wk_qtensor *w0 = NULL;
    if (wk_qtensor_quantize(t, 2, dims, wf, &w0) || wk_qtensor_dequantize_f32(w0, wf)) {
        free(wf), free(x), free(y);
        return cli_error("bench matmul: %s: %s", wk_type_name(t), wk_last_error());
    }
    /* Device buffers for x and y (host memory for the CPU engine). */
    void *dx[2] = {NULL, NULL}, *dy = NULL;
    if (wk_engine_alloc(b->e, sizeof(float) * (size_t)(max_m * k), &dx[0]) ||
        (b->n_x > 1 && wk_engine_alloc(b->e, sizeof(float) * (size_t)(max_m * k), &dx[1])) ||
        wk_engine_alloc(b->e, sizeof(float) * (size_t)(max_m * n), &dy) || upload_x(b, dx, x, max_m * k)) {
        for (int i = 0; i < 2; i++) wk_engine_free_buffer(b->e, dx[i]);
        wk_engine_free_buffer(b->e, dy);
        wk_qtensor_free(w0);
        free(wf), free(x), free(y);
        return cli_error("bench matmul: %s", wk_last_error());
    }

    double ms_table[MAX_LIST][MAX_LIST][2];
    double bw_beside[MAX_LIST] = {0}; /* per form: the bandwidth read beside its m = 1, x[0] timings */
    wk_form resolved[MAX_LIST];
    bool done[MAX_LIST] = {false};
    size_t wbytes[MAX_LIST] = {0};
    int rc = 0;
    for (int fi = 0; fi < n_forms && !rc; fi++) {
        wk_form f;
        wk_form_from_name(forms[fi], &f);
        wk_qmatmul *mm[MAX_COPIES] = {NULL};
        int copies = 1;
        for (int ci = 0; ci < copies && !rc; ci++) {
            wk_qtensor *w = NULL;
            if (wk_qtensor_create(t, 2, dims, &w)) {
                rc = cli_error("bench matmul: %s", wk_last_error());
                break;
            }
            memcpy((void *)wk_qtensor_data(w), wk_qtensor_data(w0), wk_qtensor_nbytes(w0));
            if (wk_qmatmul_create(b->e, w, f, &mm[ci])) {
                rc = cli_error("bench matmul: %s %s form: %s", wk_type_name(t), forms[fi], wk_last_error());
                wk_qtensor_free(w);
                break;
            }
            if (ci == 0) {
                resolved[fi] = wk_qmatmul_form(mm[0]);
                wbytes[fi] = wk_qmatmul_nbytes(mm[0]);
                /* A dense weight maps several requests onto one form: measure it once. */
                bool dup = false;
                for (int j = 0; j < fi; j++) dup |= done[j] && resolved[j] == resolved[fi];
                if (dup) break;
                if (b->rotate) {
                    size_t set = wk_engine_device(b->e) == WK_DEVICE_CPU ? wk_cpu_uncached_bytes()
                                                                         : (size_t)384 << 20;
                    size_t want = (set + wbytes[fi] - 1) / wbytes[fi];
                    copies = want > MAX_COPIES ? MAX_COPIES : (int)want;
                }
            }
        }
        bool dup = false;
        for (int j = 0; j < fi; j++) dup |= done[j] && resolved[j] == resolved[fi];
        if (rc || dup) {
            for (int ci = 0; ci < MAX_COPIES; ci++) wk_qmatmul_free(mm[ci]);
            continue;
        }
        double tol = resolved[fi] == WK_FORM_QUANTIZED ? 3e-2 : resolved[fi] == WK_FORM_F16 ? 3e-3 : 1e-4;
        for (int mi = 0; mi < n_ms && !rc; mi++) {
            int64_t m = ms[mi];
            for (int xi = 0; xi < b->n_x && !rc; xi++) {
                const char *xn = wk_type_name(b->x_types[xi]);
                if (wk_qmatmul_forward(mm[0], dx[xi], b->x_types[xi], m, k, dy) || wk_engine_synchronize(b->e) ||
                    wk_engine_download(b->e, y, dy, sizeof(float) * (size_t)(m * n))) {
                    rc = cli_error("bench matmul: %s %s m=%lld x %s: %s", wk_type_name(t),
                                   wk_form_name(resolved[fi]), (long long)m, xn, wk_last_error());
                    break;
                }
                double err = check_error(wf, x, y, m, n, k);
                if (!(err <= tol))
                    rc = cli_error("bench matmul: %s %s m=%lld x %s: relative error %.3g against the float64 "
                                   "reference exceeds %.3g", wk_type_name(t), wk_form_name(resolved[fi]),
                                   (long long)m, xn, err, tol);
            }
            /* One dtype: one timing. Two: each in turn, twice, the best of each. */
            for (int xi = 0; xi < b->n_x; xi++) ms_table[fi][mi][xi] = 1e30;
            for (int r = 0; r < (b->n_x > 1 ? 2 : 1) && !rc; r++)
                for (int xi = 0; xi < b->n_x; xi++) {
                    wk_bw_reader *beside = m == 1 && xi == 0 ? b->beside : NULL;
                    double t_ms = time_forward(b->e, mm, copies, dx[xi], b->x_types[xi], m, k, dy, beside,
                                               &bw_beside[fi]);
                    if (t_ms < ms_table[fi][mi][xi]) ms_table[fi][mi][xi] = t_ms;
                }
        }
        done[fi] = !rc;
        for (int ci = 0; ci < MAX_COPIES; ci++) wk_qmatmul_free(mm[ci]);
    }

    for (int mi = 0; mi < n_ms && !rc; mi++) {
        char name[16];
        snprintf(name, sizeof name, "%s", wk_type_name(t));
        for (char *p = name; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        printf("%-5s m=%-4lld", name, (long long)ms[mi]);
        for (int fi = 0; fi < n_forms; fi++) {
            if (!done[fi]) continue;
            printf("  %s %.3f ms", wk_form_name(resolved[fi]), ms_table[fi][mi][0]);
        }
        if (ms[mi] == 1 && b->bw > 0) {
            for (int fi = 0; fi < n_forms; fi++) {
                if (!done[fi]) continue;
                double gbps = (double)wbytes[fi] / (ms_table[fi][mi][0] * 1e-3) / 1e9;
                double bw = bw_beside[fi] > 0 ? bw_beside[fi] : b->bw;
                printf("%s%s %.0f%% of %.1f GB/s", fi == 0 ? "  | share of the read bandwidth beside it:" : ",",
                       wk_form_name(resolved[fi]), 100.0 * gbps / bw, bw);
            }
        }
        printf("\n");
        if (b->n_x > 1) { /* the second dtype's times and their ratio to the first's */
            printf("      x %-5s", wk_type_name(b->x_types[1]));
            for (int fi = 0; fi < n_forms; fi++) {
                if (!done[fi]) continue;
                printf("  %s %.3f ms (%.2f)", wk_form_name(resolved[fi]), ms_table[fi][mi][1],
                       ms_table[fi][mi][1] / ms_table[fi][mi][0]);
            }
            printf("\n");
        }
        if (b->csv)
            for (int xi = 0; xi < b->n_x; xi++)
                for (int fi = 0; fi < n_forms; fi++) {
                    if (!done[fi]) continue;
                    double gbps = (double)wbytes[fi] / (ms_table[fi][mi][xi] * 1e-3) / 1e9;
                    fprintf(b->csv, "%s,%lld,%s,%s,%d,%.4f,%.2f,%s\n", wk_type_name(t), (long long)ms[mi],
                            wk_form_name(resolved[fi]), wk_device_name(wk_engine_device(b->e)),
                            wk_engine_threads(b->e), ms_table[fi][mi][xi], gbps, wk_type_name(b->x_types[xi]));
                }
    }
    fflush(stdout);
    for (int i = 0; i < 2; i++) wk_engine_free_buffer(b->e, dx[i]);
    wk_engine_free_buffer(b->e, dy);
    wk_qtensor_free(w0);
    free(wf), free(x), free(y);
    return rc;
}

int cmd_bench_matmul(int argc, char **argv)
{
    bench_ctx b = {.n = 8192, .k = 4096, .rotate = true, .x_types = {WK_TYPE_F32}, .n_x = 1};
    char types_buf[512] = "q8_0,q4_k,q4_0,q5_0,q6_k,q4_1,q2_k,f16";
    char ms_buf[256] = "1,2,4,8,16,64,256";
    char forms_buf[256] = "quantized,f32,f16,precise";
    wk_device dev = WK_DEVICE_CPU;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--no-rotate")) {
            b.rotate = false;
            continue;
        }
        if (i + 1 >= argc) return cli_usage_error("bench matmul: %s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--n")) {
            if (!parse_i64(v, &b.n)) return cli_usage_error("bench matmul: bad --n '%s'", v);
        } else if (!strcmp(a, "--k")) {
            if (!parse_i64(v, &b.k)) return cli_usage_error("bench matmul: bad --k '%s'", v);
        } else if (!strcmp(a, "--types")) {
            snprintf(types_buf, sizeof types_buf, "%s", v);
        } else if (!strcmp(a, "--m")) {
            snprintf(ms_buf, sizeof ms_buf, "%s", v);
        } else if (!strcmp(a, "--forms")) {
            snprintf(forms_buf, sizeof forms_buf, "%s", v);
        } else if (!strcmp(a, "--device")) {
            if (wk_device_from_name(v, &dev)) return cli_usage_error("bench matmul: unknown device '%s'", v);
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            int64_t t;
            if (!parse_i64(v, &t) || t > 1024) return cli_usage_error("bench matmul: bad -t '%s'", v);
            threads = (int)t;
        } else if (!strcmp(a, "--x")) {
            if (!strcmp(v, "f32") || !strcmp(v, "f16")) {
                b.x_types[0] = v[1] == '3' ? WK_TYPE_F32 : WK_TYPE_F16, b.n_x = 1;
            } else if (!strcmp(v, "f32,f16") || !strcmp(v, "f16,f32")) {
                b.x_types[0] = v[1] == '3' ? WK_TYPE_F32 : WK_TYPE_F16;
                b.x_types[1] = b.x_types[0] == WK_TYPE_F32 ? WK_TYPE_F16 : WK_TYPE_F32, b.n_x = 2;
            } else {
                return cli_usage_error("bench matmul: --x must be f32, f16 or f32,f16, not '%s'", v);
            }
        } else if (!strcmp(a, "--csv")) {
            b.csv_path = v;
        } else {
            return cli_usage_error("bench matmul: unknown option '%s'", a);
        }
    }
    char *type_items[MAX_LIST], *m_items[MAX_LIST], *form_items[MAX_LIST];
    int n_types = split_list(types_buf, type_items);
    int n_ms = split_list(ms_buf, m_items);
    int n_forms = split_list(forms_buf, form_items);
    wk_type types[MAX_LIST];
    int64_t ms[MAX_LIST];
    for (int i = 0; i < n_types; i++)
        if (wk_type_from_name(type_items[i], &types[i]))
            return cli_usage_error("bench matmul: unknown type '%s'", type_items[i]);
    for (int i = 0; i < n_ms; i++)
        if (!parse_i64(m_items[i], &ms[i]))
            return cli_usage_error("bench matmul: bad row count '%s'", m_items[i]);
    for (int i = 0; i < n_forms; i++) {
        wk_form f;
        if (wk_form_from_name(form_items[i], &f) || f == WK_FORM_AUTO)
            return cli_usage_error("bench matmul: unknown form '%s'", form_items[i]);
    }
    if (!n_types || !n_ms || !n_forms) return cli_usage_error("bench matmul: empty list");
    for (int i = 0; i < n_types; i++)
        if (b.k % wk_type_block_size(types[i]))
            return cli_usage_error("bench matmul: k = %lld is not a multiple of %s's block size %lld",
                                   (long long)b.k, wk_type_name(types[i]),
                                   (long long)wk_type_block_size(types[i]));

    if (wk_engine_create(dev, threads, &b.e))
        return cli_error("bench matmul: %s", wk_last_error());
    if (b.csv_path) {
        b.csv = fopen(b.csv_path, "w");
        if (!b.csv) {
            wk_engine_free(b.e);
            return cli_error("bench matmul: cannot write '%s'", b.csv_path);
        }
        fprintf(b.csv, "type,m,form,device,threads,ms,gbps,x\n");
    }
    if (dev == WK_DEVICE_CPU) {
        b.bw = wk_cpu_read_bandwidth(b.e, 0, 5);
        bool m1 = false;
        for (int i = 0; i < n_ms; i++) m1 |= ms[i] == 1;
        if (m1) b.beside = wk_cpu_bw_reader_new(b.e, 0);
    }
    printf("matmul [n, k] = [%lld, %lld], x %s%s%s, device %s, %d threads", (long long)b.n, (long long)b.k,
           wk_type_name(b.x_types[0]), b.n_x > 1 ? ", " : "", b.n_x > 1 ? wk_type_name(b.x_types[1]) : "",
           wk_device_name(dev), wk_engine_threads(b.e));
    if (b.bw > 0) printf(", read bandwidth %.1f GB/s", b.bw);
    printf("\n");
    int rc = 0;
    for (int i = 0; i < n_types && !rc; i++) rc = bench_type(&b, types[i], form_items, n_forms, ms, n_ms);
    if (b.csv && fclose(b.csv) != 0 && !rc) rc = cli_error("bench matmul: writing '%s' failed", b.csv_path);
    wk_cpu_bw_reader_free(b.beside);
    wk_engine_free(b.e);
    return rc;
}
