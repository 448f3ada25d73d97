/* Load a GGUF model and generate a greedy answer, streamed as it is produced.
 * Build: cc generate.c $(pkg-config --cflags --libs wick) -o generate */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wick.h>

static int print_text(void *user, int32_t token, const char *text, size_t len)
{
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0; /* keep going */
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "model.gguf";
    const char *prompt = argc > 2 ? argv[2] : "What is Rust?";
    wk_model *model;
    if (wk_model_load(path, NULL, &model) != WK_OK) { /* NULL: default options */
        fprintf(stderr, "error: %s\n", wk_last_error());
        return 1;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    wk_status st = wk_tokenizer_encode_alloc(wk_model_tokenizer(model), prompt, strlen(prompt),
                                             true, false, &ids, &n);
    wk_generate_options opt;
    wk_generate_options_init(&opt); /* greedy, 128 tokens, stop at end of text */
    opt.max_tokens = 32;
    if (st == WK_OK) st = wk_model_generate(model, ids, (int64_t)n, &opt, print_text, NULL, NULL);
    if (st != WK_OK) fprintf(stderr, "error: %s\n", wk_last_error());
    putchar('\n');
    free(ids);
    wk_model_free(model);
    return st == WK_OK ? 0 : 1;
}
