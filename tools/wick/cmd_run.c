/* wick run: generate text from a model, streamed to stdout, then one timing line to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "run_options.h"

static void usage(FILE *f)
{
    fputs("usage: wick run [options]\n\n"
          "Generate text and stream it to stdout; then print to stderr\n"
          "  load A ms, prefill (N tokens) B ms, D decode steps C ms (mean E ms)\n\n"
          "options:\n",
          f);
    fputs(run_options_help, f);
}

static int print_token(void *user, int32_t token, const char *text, size_t len)
{
    (void)user;
    (void)token;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_options o;
    run_options_init(&o);
    for (int i = 1; i < argc;) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        int r = run_options_parse(&o, argc, argv, &i);
        if (r == 2) return 2;
        if (r == 0) return cli_usage_error("run: unknown option '%s'", argv[i]);
    }

    wk_model *m;
    double load_ms;
    if (run_options_load(&o, &m, &load_ms)) return 1;
    wk_generate_stats s;
    if (run_options_generate(&o, m, print_token, NULL, &s)) {
        fputc('\n', stdout);
        wk_model_free(m);
        return 1;
    }
    fputc('\n', stdout);
    fflush(stdout);
    if (s.hit_context)
        fprintf(stderr, "(stopped: the context of %lld tokens is full)\n",
                (long long)wk_model_get_info(m)->n_ctx);
    fprintf(stderr, "load %.1f ms, prefill (%lld tokens) %.1f ms, %lld decode steps %.1f ms (mean %.2f ms)\n",
            load_ms, (long long)s.n_prompt, s.prefill_ms, (long long)s.n_decode, s.decode_ms,
            s.n_decode ? s.decode_ms / (double)s.n_decode : 0.0);
    wk_model_free(m);
    return 0;
}
