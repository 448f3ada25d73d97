/* The options `wick run`, `wick bench gen` and `wick logits` share: the model, the prompt
 * and how it is wrapped, sampling, threads, device and matmul form. */
#ifndef WICK_TOOLS_RUN_OPTIONS_H
#define WICK_TOOLS_RUN_OPTIONS_H

#include "wick.h"

typedef struct run_options {
    const char *model;
    const char *prompt;
    int64_t n_predict;  /* -n: tokens to generate */
    int chat;           /* 1: --chat, 0: --raw, -1: chat when the file has a template */
    wk_sampler_options sampling;
    int threads;        /* 0: WICK_NUM_THREADS, else the number of cores */
    wk_device device;
    wk_form form;
    int64_t n_ctx;      /* 0: the file's context */
} run_options;

void run_options_init(run_options *o);
/* Consume the run option at argv[*i] (and its value), advancing *i. Returns 1 when it was
 * one, 0 when argv[*i] is not a run option, or 2 after printing a usage error. */
int run_options_parse(run_options *o, int argc, char **argv, int *i);
/* The help lines of the shared options. */
extern const char run_options_help[];

/* Load the model the options name; prints the error and returns 1 on failure. */
int run_options_load(const run_options *o, wk_model **m, double *load_ms);
/* The prompt's token ids: the chat template applied (--chat) or the text as is (--raw).
 * *ids is malloc'd. Prints the error and returns 1 on failure. */
int run_options_tokens(const run_options *o, wk_model *m, int32_t **ids, int64_t *n);
/* Generate from the prompt with the options' token limit and sampling, each piece of text
 * passed to cb. Prints the error and returns 1 on failure (the model stays the caller's). */
int run_options_generate(const run_options *o, wk_model *m, wk_token_callback cb, void *user,
                         wk_generate_stats *s);

double run_now_ms(void);

#endif
