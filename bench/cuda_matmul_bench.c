/* wick's GPU matmul benchmark (the documents' qmv on the H200), built by
 * scripts/device-bench.sh against libwick:
 *
 *   cuda_matmul_bench [--n 8192] [--k 4096] [--types LIST] [--m LIST] [--csv FILE]
 *
 * For each type and form it rotates enough copies of the weight that the working set is
 * at least 4x the GPU's L2 cache, times batches of calls with CUDA events (3 warm-ups,
 * then 7 batches, the best batch's mean per call), once launched one by one and once
 * replayed from a CUDA graph, and reports GB/s of weight bytes against the read
 * bandwidth of a plain 16-byte-load kernel measured in the same run (and that kernel's time
 * over the quantized weight's bytes, one launch a copy, graph-replayed: the ceiling of a
 * launch of that size). Each form's m = 1
 * result is checked against a float64 dot product of the dequantized weight first. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/half.h"
#include "cuda/kernels.h"
#include "wick/quant.h"
#include "wick/tensor.h"

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "cuda_matmul_bench: " __VA_ARGS__);                                        \
        fprintf(stderr, " (%s)\n", wk_last_error());                                              \
        exit(1);                                                                                   \
    } while (0)
#define OK(call)                                                                                   \
    do {                                                                                           \
        if ((call) != WK_OK) DIE("%s failed", #call);                                              \
    } while (0)

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}
static float rndf(void) { return (float)((double)rnd32() / 4294967296.0 * 2.0 - 1.0); }
static uint16_t rnd_scale(void) { return wk_float_to_half(0.001f + 0.01f * (float)(rnd32() % 1000) / 1000.f); }

/* Random blocks with finite, modest scales (random quantized values). */
static void fill_weight(wk_type t, void *buf, size_t nbytes, int64_t nelem)
{
    uint8_t *b = buf;
    if (t == WK_TYPE_F32) {
        for (int64_t i = 0; i < nelem; i++) ((float *)buf)[i] = rndf() * 0.05f;
        return;
    }
    if (t == WK_TYPE_F16) {
        for (int64_t i = 0; i < nelem; i++) ((uint16_t *)buf)[i] = wk_float_to_half(rndf() * 0.05f);
        return;
    }
    for (size_t i = 0; i < nbytes; i++) b[i] = (uint8_t)rnd32();
    size_t bb = wk_type_block_bytes(t);
    for (size_t off = 0; off < nbytes; off += bb) {
        uint8_t *blk = b + off;
        uint16_t h[2] = {rnd_scale(), rnd_scale()};
        switch (t) {
        case WK_TYPE_Q4_0: case WK_TYPE_Q5_0: case WK_TYPE_Q8_0: memcpy(blk, h, 2); break;
        case WK_TYPE_Q4_1: case WK_TYPE_Q5_1: case WK_TYPE_Q8_1: case WK_TYPE_Q4_K:
        case WK_TYPE_Q5_K: memcpy(blk, h, 4); break;
        case WK_TYPE_Q2_K: memcpy(blk + 80, h, 4); break;
        case WK_TYPE_Q3_K: memcpy(blk + 108, h, 2); break;
        case WK_TYPE_Q6_K: memcpy(blk + 208, h, 2); break;
        case WK_TYPE_Q8_K: {
            float d = 0.001f;
            memcpy(blk, &d, 4);
            break;
        }
        default: break;
        }
    }
}

typedef struct {
    wk_cuda_ctx *c;
    int form; /* 0 quantized (own kernels), 1 f16 form, 2 f32 form */
    wk_type wt; /* type the kernel reads */
    void **w;
    int copies;
    int64_t n, k, m;
    const float *x;
    float *y;
} job;

static wk_status call(const job *j, int i)
{
    const void *w = j->w[i % j->copies];
    if (j->form == 0) return wk_cuda_qmm(j->c, j->wt, w, j->n, j->k, j->x, WK_TYPE_F32, j->m, j->y);
    return wk_cuda_gemm(j->c, j->wt, w, j->n, j->k, j->x, WK_TYPE_F32, j->m, j->y);
}

/* Copies of `bytes` rotated so that the working set is at least 4x the L2, and the calls
 * a timed batch makes over them. */
static int rotation_copies(size_t bytes, int l2)
{
    int copies = (int)((4.0 * (double)l2) / (double)bytes) + 1;
    return copies < 2 ? 2 : copies;
}
static int batch_calls(int copies) { return 2 * copies > 20 ? 2 * copies : 20; }

/* Best of 7 replays of a captured batch of `batch` calls: mean ms a call. */
static double best_graph_ms(wk_cuda_ctx *c, wk_cuda_timer *t, void *exec, int batch)
{
    double best = 1e30;
    for (int b = 0; b < 7; b++) {
        float ms = 0;
        OK(wk_cuda_timer_start(c, t));
        OK(wk_cuda_graph_launch(c, exec));
        OK(wk_cuda_timer_stop(c, t, &ms));
        if (ms / batch < best) best = ms / batch;
    }
    return best;
}

/* Best batch's mean ms per call; graph = replay the batch from a captured graph. */
static double time_job(const job *j, bool graph)
{
    const int batch = batch_calls(j->copies);
    wk_cuda_timer *t = NULL;
    OK(wk_cuda_timer_create(&t));
    for (int i = 0; i < 3; i++) OK(call(j, i));
    OK(wk_cuda_ctx_sync(j->c));
    void *exec = NULL;
    if (graph) {
        OK(wk_cuda_capture_begin(j->c));
        for (int i = 0; i < batch; i++)
            if (call(j, i) != WK_OK) {
                wk_cuda_capture_abort(j->c);
                wk_cuda_timer_free(t);
                return NAN;
            }
        OK(wk_cuda_capture_end(j->c, &exec));
        OK(wk_cuda_graph_launch(j->c, exec));
        OK(wk_cuda_ctx_sync(j->c));
    }
    double best = 1e30;
    if (graph)
        best = best_graph_ms(j->c, t, exec, batch);
    else
        for (int b = 0; b < 7; b++) {
            float ms = 0;
            OK(wk_cuda_timer_start(j->c, t));
            for (int i = 0; i < batch; i++) OK(call(j, i));
            OK(wk_cuda_timer_stop(j->c, t, &ms));
            if (ms / batch < best) best = ms / batch;
        }
    wk_cuda_graph_free(exec);
    wk_cuda_timer_free(t);
    return best;
}

static double read_bandwidth(wk_cuda_ctx *c)
{
    size_t bytes = (size_t)2 << 30;
    void *buf = NULL;
    float *sink = NULL;
    OK(wk_cuda_malloc(bytes, &buf));
    OK(wk_cuda_malloc(4, (void **)&sink));
    OK(wk_cuda_memset(c, buf, 1, bytes));
    wk_cuda_timer *t = NULL;
    OK(wk_cuda_timer_create(&t));
    double best = 0;
    for (int i = 0; i < 10; i++) {
        float ms = 0;
        OK(wk_cuda_timer_start(c, t));
        OK(wk_cuda_read_kernel(c, buf, bytes, sink));
        OK(wk_cuda_timer_stop(c, t, &ms));
        double gbs = (double)bytes / (ms * 1e6);
        if (i >= 2 && gbs > best) best = gbs;
    }
    wk_cuda_timer_free(t);
    wk_cuda_free(buf);
    wk_cuda_free(sink);
    return best;
}

/* The plain read kernel over bytes, one launch a copy of enough rotated copies that they
 * exceed 4x the L2, replayed from a CUDA graph as the matmuls are: the best mean ms a
 * launch. What a kernel of this size reaches when it only reads: the launch's fixed cost
 * and ramp, which the 2 GiB read above does not pay per byte. */
static double read_launch_ms(wk_cuda_ctx *c, size_t bytes, int l2)
{
    const int copies = rotation_copies(bytes, l2), batch = batch_calls(copies);
    void **buf = calloc((size_t)copies, sizeof(void *));
    float *sink = NULL;
    OK(wk_cuda_malloc(4, (void **)&sink));
    for (int i = 0; i < copies; i++) {
        OK(wk_cuda_malloc(bytes, &buf[i]));
        OK(wk_cuda_memset(c, buf[i], 1, bytes));
    }
    void *exec = NULL;
    OK(wk_cuda_capture_begin(c));
    for (int i = 0; i < batch; i++) OK(wk_cuda_read_kernel(c, buf[i % copies], bytes, sink));
    OK(wk_cuda_capture_end(c, &exec));
    OK(wk_cuda_graph_launch(c, exec)); /* warm-up */
    wk_cuda_timer *t = NULL;
    OK(wk_cuda_timer_create(&t));
    const double best = best_graph_ms(c, t, exec, batch);
    wk_cuda_timer_free(t);
    wk_cuda_graph_free(exec);
    for (int i = 0; i < copies; i++) wk_cuda_free(buf[i]);
    free(buf);
    wk_cuda_free(sink);
    return best;
}

/* y[0, 0..3] against float64 dots of the dequantized weight (copy 0). */
static void check_result(const job *j, const float *xh, const float *wf)
{
    float y[4];
    OK(call(j, 0));
    OK(wk_cuda_copy_d2h(j->c, y, j->y, sizeof y));
    for (int c = 0; c < 4; c++) {
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < j->k; i++) {
            ref += (double)wf[c * j->k + i] * xh[i];
            mag += fabs((double)wf[c * j->k + i] * xh[i]);
        }
        double tol = (j->form == 1 ? 3e-3 : 2e-5) * mag + 1e-6;
        if (!(fabs(y[c] - ref) <= tol))
            DIE("wrong result: %s form %d row %d: got %.7g, want %.7g", wk_type_name(j->wt),
                j->form, c, y[c], ref);
    }
}

static int parse_list(const char *s, int64_t *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        out[n++] = strtoll(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

int main(int argc, char **argv)
{
    int64_t n = 8192, k = 4096;
    const char *types = "q4_0,q4_1,q5_0,q5_1,q8_0,q2_k,q3_k,q4_k,q5_k,q6_k,f16";
    int64_t ms[16] = {1, 2, 4, 8, 16, 64, 256};
    int nm = 7;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--k") && i + 1 < argc) k = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "--m") && i + 1 < argc) nm = parse_list(argv[++i], ms, 16);
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else {
            fprintf(stderr, "usage: cuda_matmul_bench [--n N] [--k K] [--types LIST] [--m LIST] [--csv FILE]\n");
            return 2;
        }
    }
    if (!wk_cuda_device_present()) {
        fprintf(stderr, "cuda_matmul_bench: no CUDA device\n");
        return 1;
    }
    wk_cuda_ctx *c = NULL;
    OK(wk_cuda_ctx_create(&c));
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    double bw = read_bandwidth(c);
    printf("read bandwidth (16-byte loads over 2 GiB): %.0f GB/s; L2 %d MB; n=%lld k=%lld\n", bw,
           l2 >> 20, (long long)n, (long long)k);
    FILE *csv = csv_path ? fopen(csv_path, "w") : NULL;
    if (csv) fprintf(csv, "type,m,form,device,threads,ms,gbps,ms_stream,pct_bw\n");

    int64_t mmax = 0;
    for (int i = 0; i < nm; i++) mmax = ms[i] > mmax ? ms[i] : mmax;
    float *xh = malloc(sizeof(float) * (size_t)(mmax * k));
    for (int64_t i = 0; i < mmax * k; i++) xh[i] = rndf();
    float *x = NULL, *y = NULL;
    OK(wk_cuda_malloc(sizeof(float) * (size_t)(mmax * k), (void **)&x));
    OK(wk_cuda_malloc(sizeof(float) * (size_t)(mmax * n), (void **)&y));
    OK(wk_cuda_copy_h2d(c, x, xh, sizeof(float) * (size_t)(mmax * k)));
    OK(wk_cuda_scratch_reserve(c, wk_cuda_qmm_scratch_bytes(mmax, k) + sizeof(float) * (size_t)(mmax * k)));

    printf("%-6s %4s | %-28s | %-28s | %-28s | q/f16\n", "type", "m", "quantized  us  GB/s  %bw",
           "f16 form  us  GB/s  %bw", "f32 form  us  GB/s  %bw");
    char tl[256];
    snprintf(tl, sizeof tl, "%s", types);
    for (char *tn = strtok(tl, ","); tn; tn = strtok(NULL, ",")) {
        wk_type t;
        OK(wk_type_from_name(tn, &t));
        size_t wbytes = 0;
        OK(wk_type_row_bytes(t, k, &wbytes));
        wbytes *= (size_t)n;
        void *host = malloc(wbytes);
        fill_weight(t, host, wbytes, n * k);
        /* The dequantized reference of the first rows, from the CPU's dequantizer. */
        float *wf = malloc(sizeof(float) * (size_t)(4 * k));
        OK(wk_dequantize_row(t, host, wf, 4 * k));
        /* forms: 0 quantized (F16 weights: own kernel), 1 f16 (cuBLAS), 2 f32 (cuBLAS) */
        double res[3][16];
        double res_stream[3][16];
        /* The quantized form reads the weight in the layout the GPU keeps it in, as the
         * engine does (packed where it can be, WICK_CUDA_PACK=0: rows; else Q8_0 as Q8_1):
         * its GB/s count those bytes. */
        const wk_type kept = wk_cuda_kept_type(t, n, k);
        const bool packed = wk_cuda_is_packed(kept);
        size_t kbytes = 0;
        OK(wk_type_row_bytes(wk_cuda_unpacked(kept), k, &kbytes));
        kbytes *= (size_t)n;
        if (kept != t)
            printf("%s weights are kept as %s%s on the GPU: %zu bytes (%zu in the file)\n", wk_type_name(t),
                   wk_type_name(wk_cuda_unpacked(kept)), packed ? ", packed" : "", kbytes, wbytes);
        for (int f = 0; f < 3; f++) {
            wk_type wt = f == 0 ? kept : (f == 1 ? WK_TYPE_F16 : WK_TYPE_F32);
            size_t fbytes = f == 0 ? kbytes : (size_t)(n * k) * (f == 1 ? 2 : 4);
            const int copies = rotation_copies(fbytes, l2);
            void **w = calloc((size_t)copies, sizeof(void *));
            void *q0 = NULL;
            if (wt != t) OK(wk_cuda_malloc(wbytes, &q0));
            if (wt != t) OK(wk_cuda_copy_h2d(c, q0, host, wbytes));
            for (int i = 0; i < copies; i++) {
                OK(wk_cuda_malloc(fbytes, &w[i]));
                if (wt == t)
                    OK(wk_cuda_copy_h2d(c, w[i], host, fbytes));
                else if (f == 0)
                    OK(wk_cuda_relayout(c, t, q0, n, k, w[i]));
                else
                    OK(wk_cuda_dequantize(c, t, q0, n * k, w[i], wt));
            }
            OK(wk_cuda_ctx_sync(c));
            wk_cuda_free(q0);
            job j = {c, f, wt, w, copies, n, k, 1, x, y};
            check_result(&j, xh, wf);
            for (int mi = 0; mi < nm; mi++) {
                j.m = ms[mi];
                res[f][mi] = time_job(&j, true);
                res_stream[f][mi] = time_job(&j, false);
                double gbs = (double)fbytes / (res[f][mi] * 1e6);
                if (csv)
                    fprintf(csv, "%s,%lld,%s,cuda,0,%.6f,%.1f,%.6f,%.1f\n", wk_type_name(t),
                            (long long)ms[mi], f == 0 ? "quantized" : (f == 1 ? "f16" : "f32"),
                            res[f][mi], gbs, res_stream[f][mi], 100.0 * gbs / bw);
            }
            for (int i = 0; i < copies; i++) wk_cuda_free(w[i]);
            free(w);
        }
        const double rd = read_launch_ms(c, kbytes, l2);
        printf("%-6s read of the same %zu bytes, one launch: %.1f us, %.0f GB/s, %.1f%% of the bandwidth; "
               "m = %lld quantized / that read %.2f\n", wk_type_name(t), kbytes, rd * 1e3,
               (double)kbytes / (rd * 1e6), 100.0 * (double)kbytes / (rd * 1e6) / bw, (long long)ms[0],
               res[0][0] / rd);
        for (int mi = 0; mi < nm; mi++) {
            printf("%-6s %4lld |", wk_type_name(t), (long long)ms[mi]);
            for (int f = 0; f < 3; f++) {
                size_t fbytes = f == 0 ? kbytes : (size_t)(n * k) * (f == 1 ? 2 : 4);
                double gbs = (double)fbytes / (res[f][mi] * 1e6);
                printf(" %8.1f %7.0f %5.1f%% %5.1f |", res[f][mi] * 1e3, gbs, 100.0 * gbs / bw,
                       res_stream[f][mi] * 1e3);
            }
            printf(" %.2f  (m/m1 %.2f)\n", res[0][mi] / res[1][mi], res[0][mi] / res[0][0]);
        }
        fflush(stdout);
        free(wf);
        free(host);
    }
    if (csv) fclose(csv);
#ifdef WICK_CUDA_TRACE
    /* Measuring builds: the last launches' timeline. */
    if (wk_cuda_trace_save()) fprintf(stderr, "cuda_matmul_bench: the launch timeline could not be saved\n");
#endif
    free(xh);
    wk_cuda_free(x);
    wk_cuda_free(y);
    wk_cuda_ctx_free(c);
    return 0;
}
