/* wick quantize IN OUT TYPE: rewrite a GGUF model with its weight matrices in TYPE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "quant/quantize_file.h"
#include "wick.h"

static void quantize_usage(FILE *f)
{
    fputs("usage: wick quantize [-t THREADS] [-v] IN OUT TYPE\n"
          "\n"
          "Writes OUT, a copy of the GGUF model IN with every weight matrix in TYPE:\n"
          "  f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q8_1 q2_k q3_k q4_k q5_k q6_k q8_k\n"
          "  (every weight matrix in that type), or the mixes q4_k_m, q5_k_m\n"
          "  (llama.cpp's per-tensor choices). Rows a type cannot hold fall back as\n"
          "  llama.cpp does (q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0, q2_k/q3_k -> q4_0).\n"
          "  Norms and other vectors are copied unchanged; all metadata is copied.\n"
          "\n"
          "options:\n"
          "  -t THREADS   threads converting rows (default: the processor count)\n"
          "  -v           print each tensor's conversion to stderr\n",
          f);
}

static void print_tensor(const wk_quant_tensor *t, int64_t i, int64_t n, void *user)
{
    (void)user;
    char shape[96];
    int len = 0;
    for (int d = 0; d < t->n_dims && len < (int)sizeof shape - 24; d++)
        len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%lld", d ? " x " : "",
                        (long long)t->ne[d]);
    fprintf(stderr, "[%4lld/%4lld] %-32s %-16s %5s -> %-5s", (long long)i + 1, (long long)n,
            t->name, shape, wk_type_name(t->type), wk_type_name(t->target));
    if (t->target != t->preferred)
        fprintf(stderr, " (row of %lld does not fit %s)", (long long)t->ne[0],
                wk_type_name(t->preferred));
    fputc('\n', stderr);
}

int cmd_quantize(int argc, char **argv)
{
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bool verbose = false;
    const char *pos[3];
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            quantize_usage(stdout);
            return 0;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            verbose = true;
        } else if (strcmp(a, "-t") == 0 || strcmp(a, "--threads") == 0) {
            if (i + 1 >= argc) return cli_usage_error("quantize: %s needs a value", a);
            char *end = NULL;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > 64)
                return cli_usage_error("quantize: threads must be 1..64, got '%s'", argv[i]);
            threads = (int)v;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error("quantize: unknown option '%s'", a);
        } else if (n_pos < 3) {
            pos[n_pos++] = a;
        } else {
            return cli_usage_error("quantize: too many arguments ('%s')", a);
        }
    }
    if (n_pos != 3) return cli_usage_error("quantize: expected IN OUT TYPE");
    wk_quant_request req;
    if (wk_quant_request_parse(pos[2], &req) != WK_OK)
        return cli_usage_error("quantize: %s", wk_last_error());
    if (threads < 1) threads = 1;

    wk_quantize_stats s;
    wk_status st = wk_quantize_file(pos[0], pos[1], pos[2], threads,
                                    verbose ? print_tensor : NULL, NULL, &s);
    if (st) return cli_error("%s", wk_last_error());

    printf("wrote %s: %lld tensors, %lld converted to %s (%lld fell back), %.2f MB -> %.2f MB\n",
           pos[1], (long long)s.n_tensors, (long long)s.n_quantized, req.name,
           (long long)s.n_fallback, s.bytes_in / 1e6, s.bytes_out / 1e6);
    printf("types:");
    for (int t = 0; t < WK_TYPE_COUNT; t++)
        if (s.count_by_type[t]) printf(" %s %lld", wk_type_name((wk_type)t), (long long)s.count_by_type[t]);
    printf("\n");
    return 0;
}
