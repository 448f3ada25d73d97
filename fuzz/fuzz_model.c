/* Fuzz target: building a Llama model from a GGUF file, and running it.
 *
 * The input is a whole GGUF file (the seeds are tiny, complete Llama models), so
 * mutations reach the model loader with hyperparameters that are zero, huge or
 * inconsistent, tensors that are missing or of the wrong shape or type, and
 * tokenizer metadata that is out of range. wk_model_load must refuse such a file
 * with a message, or build a model that then runs: a short prompt through the
 * forward and two sampled tokens, on one thread with a small context. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "wick.h"

static int fuzz_fd = -1;

static int stop_after(void *user, int32_t token, const char *text, size_t len)
{
    (void)token;
    (void)text;
    (void)len;
    return ++*(int *)user >= 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The loader takes a path: the input goes to an in-memory file. */
    if (fuzz_fd < 0 && (fuzz_fd = memfd_create("fuzz-model", 0)) < 0) abort();
    if (ftruncate(fuzz_fd, 0) != 0 || pwrite(fuzz_fd, data, size, 0) != (ssize_t)size) abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fuzz_fd);

    static const wk_form forms[] = {WK_FORM_QUANTIZED, WK_FORM_PRECISE, WK_FORM_F32, WK_FORM_F16};
    wk_model_options opt;
    wk_model_options_init(&opt);
    opt.n_threads = 1;
    opt.n_ctx = 24;
    opt.form = forms[size ? data[size - 1] % 4 : 0];
    wk_model *m = NULL;
    wk_status st = wk_model_load(path, &opt, &m);
    if (st != WK_OK) {
        if (m || !*wk_last_error()) abort();
        return 0;
    }
    const wk_model_info *info = wk_model_get_info(m);
    if (info->n_vocab < 1 || info->n_ctx != 24 || info->dim < 1) abort();

    /* A prompt of ids taken from the file's last bytes. */
    int32_t prompt[6];
    for (int i = 0; i < 6; i++)
        prompt[i] = (int32_t)((size > (size_t)i ? data[size - 1 - i] : 0) % info->n_vocab);
    float *logits = malloc((size_t)info->n_vocab * sizeof *logits);
    if (!logits) abort();
    if (wk_model_forward(m, prompt, 6, 0, false, logits) != WK_OK) abort();
    /* past the context is refused */
    if (wk_model_forward(m, prompt, 6, 20, false, logits) == WK_OK) abort();
    /* an id outside the vocabulary is refused */
    int32_t bad = (int32_t)info->n_vocab;
    if (wk_model_forward(m, &bad, 1, 0, false, logits) == WK_OK) abort();
    free(logits);

    wk_generate_options g;
    wk_generate_options_init(&g);
    g.max_tokens = 2;
    g.sampling.temperature = 0.7f;
    g.sampling.top_k = 5;
    g.sampling.top_p = 0.9f;
    int calls = 0;
    wk_generate_stats stats;
    if (wk_model_generate(m, prompt, 3, &g, stop_after, &calls, &stats) != WK_OK) abort();
    wk_model_free(m);
    return 0;
}
