/* wick logits: write the first-step logits (after the prompt's prefill) as float32
 * little-endian values in vocabulary order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "run_options.h"

static void usage(FILE *f)
{
    fputs("usage: wick logits [options] -o FILE\n\n"
          "Prefill the prompt and write the logits of the next token to FILE\n"
          "(float32 little-endian, vocabulary order).\n\n"
          "options:\n"
          "  -o FILE           where to write (required)\n",
          f);
    fputs(run_options_help, f);
}

int cmd_logits(int argc, char **argv)
{
    run_options o;
    run_options_init(&o);
    const char *out_path = NULL;
    for (int i = 1; i < argc;) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "-o") == 0) {
            if (i + 1 >= argc) return cli_usage_error("-o needs a value");
            out_path = argv[i + 1];
            i += 2;
            continue;
        }
        int r = run_options_parse(&o, argc, argv, &i);
        if (r == 2) return 2;
        if (r == 0) return cli_usage_error("logits: unknown option '%s'", argv[i]);
    }
    if (!out_path) return cli_usage_error("logits: -o FILE is required");

    wk_model *m;
    if (run_options_load(&o, &m, NULL)) return 1;
    int32_t *ids;
    int64_t n_ids;
    if (run_options_tokens(&o, m, &ids, &n_ids)) {
        wk_model_free(m);
        return 1;
    }
    int64_t n_vocab = wk_model_get_info(m)->n_vocab;
    float *logits = malloc((size_t)n_vocab * sizeof(float));
    int rc = 0;
    if (!logits) {
        rc = cli_error("cannot allocate %lld logits", (long long)n_vocab);
    } else if (n_ids > wk_model_get_info(m)->n_ctx) {
        rc = cli_error("the prompt has %lld tokens, more than the context of %lld",
                       (long long)n_ids, (long long)wk_model_get_info(m)->n_ctx);
    } else if (wk_model_forward(m, ids, n_ids, 0, false, logits) != WK_OK) {
        rc = cli_error("%s", wk_last_error());
    } else {
        FILE *f = fopen(out_path, "wb");
        /* x86-64 and aarch64 are little-endian: the floats go out as they are in memory. */
        if (!f || fwrite(logits, sizeof(float), (size_t)n_vocab, f) != (size_t)n_vocab) {
            rc = cli_error("cannot write %s", out_path);
        }
        if (f && fclose(f) != 0 && rc == 0) rc = cli_error("cannot write %s", out_path);
        if (rc == 0)
            printf("wrote %lld logits (prompt of %lld tokens) to %s\n", (long long)n_vocab,
                   (long long)n_ids, out_path);
    }
    free(logits);
    free(ids);
    wk_model_free(m);
    return rc;
}
