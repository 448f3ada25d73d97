/* wick bench gen: the documents' generation timing. Each round loads the model afresh,
 * prefills the prompt and decodes; prints
 *   [L round R] load A ms, prefill (N tokens) B ms, D decode steps C ms (mean E ms)
 * per round and [L] text: "..." once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#ifdef WICK_CUDA_TRACE
#include "cuda/kernels.h"
#endif
#include "run_options.h"

static void usage(FILE *f)
{
    fputs("usage: wick bench gen [options]\n\n"
          "Time model loading, prefill and decoding over several rounds.\n\n"
          "options:\n"
          "  --rounds R        rounds, each loading the model afresh (default 3)\n"
          "  --label L         the label of the lines (default: the model file's name)\n",
          f);
    fputs(run_options_help, f);
}

typedef struct {
    char *buf;
    size_t len, cap;
} text_buf;

static int collect(void *user, int32_t token, const char *text, size_t len)
{
    (void)token;
    text_buf *t = user;
    if (t->len + len + 1 > t->cap) {
        size_t cap = (t->len + len + 1) * 2;
        char *p = realloc(t->buf, cap);
        if (!p) return 1;
        t->buf = p;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, text, len);
    t->len += len;
    t->buf[t->len] = '\0';
    return 0;
}

/* The text as a C-style quoted string body. */
static void print_escaped(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c < 0x20) printf("\\x%02x", c);
        else putchar(c);
    }
}

int cmd_bench_gen(int argc, char **argv)
{
    run_options o;
    run_options_init(&o);
    o.n_predict = 20;
    int64_t rounds = 3;
    const char *label = NULL;
    for (int i = 1; i < argc;) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--rounds") == 0 || strcmp(a, "--label") == 0) {
            if (i + 1 >= argc) return cli_usage_error("%s needs a value", a);
            if (a[2] == 'r') {
                char *end;
                rounds = strtoll(argv[i + 1], &end, 10);
                if (*end || end == argv[i + 1] || rounds < 1 || rounds > 1000)
                    return cli_usage_error("--rounds expects 1 to 1000, got '%s'", argv[i + 1]);
            } else {
                label = argv[i + 1];
            }
            i += 2;
            continue;
        }
        int r = run_options_parse(&o, argc, argv, &i);
        if (r == 2) return 2;
        if (r == 0) return cli_usage_error("bench gen: unknown option '%s'", a);
    }
    if (!label) {
        const char *slash = strrchr(o.model, '/');
        label = slash ? slash + 1 : o.model;
    }

    for (int64_t r = 1; r <= rounds; r++) {
        wk_model *m;
        double load_ms;
        if (run_options_load(&o, &m, &load_ms)) return 1;
        wk_generate_stats s;
        text_buf text = {NULL, 0, 0};
        int failed = run_options_generate(&o, m, collect, &text, &s);
#ifdef WICK_CUDA_TRACE
        /* The last round's launch timeline (measuring builds). */
        if (r == rounds && wk_cuda_trace_save()) fprintf(stderr, "wick: the launch timeline could not be saved\n");
#endif
        wk_model_free(m);
        if (failed) {
            free(text.buf);
            return 1;
        }
        printf("[%s round %lld] load %.1f ms, prefill (%lld tokens) %.1f ms, %lld decode steps "
               "%.1f ms (mean %.2f ms)\n",
               label, (long long)r, load_ms, (long long)s.n_prompt, s.prefill_ms,
               (long long)s.n_decode, s.decode_ms, s.n_decode ? s.decode_ms / (double)s.n_decode : 0.0);
        if (r == 1) {
            printf("[%s] text: \"", label);
            print_escaped(text.buf ? text.buf : "", text.len);
            printf("\"\n");
        }
        fflush(stdout);
        free(text.buf);
    }
    return 0;
}
