/* wick: the quantized Llama model, sampling and generation.
 *
 * A model is built from a GGUF file whose general.architecture is "llama" (SmolLM2,
 * TinyLlama, Llama 2/3, Mistral-style): every projection is a QMatMul in the form the
 * options choose, the KV cache lives on the chosen device, and the tokenizer comes from
 * the file's metadata.
 *
 *     wk_model_options opt;
 *     wk_model_options_init(&opt);
 *     wk_model *m;
 *     if (wk_model_load("model.gguf", &opt, &m) != WK_OK) puts(wk_last_error());
 *     ...
 *     wk_model_free(m);
 */
#ifndef WICK_MODEL_H
#define WICK_MODEL_H

#include "common.h"
#include "gguf.h"
#include "tensor.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wk_model wk_model;

/* ---- loading ------------------------------------------------------------------ */

typedef struct wk_model_options {
    wk_device device; /* where the weights, the KV cache and the forward live (CPU) */
    wk_form form;     /* matmul form of every projection; WK_FORM_AUTO: wk_form_from_env() */
    int n_threads;    /* CPU threads; 0: WICK_NUM_THREADS, else the number of cores */
    int64_t n_ctx;    /* context (KV cache) length in tokens; 0: the file's context_length */
} wk_model_options;

/* The defaults above: CPU, WK_FORM_AUTO, 0 threads, the file's context. */
void wk_model_options_init(wk_model_options *opt);

/* Open, validate and build a model. opt may be NULL (defaults). Every inconsistency of
 * the file (unknown architecture, zero or non-dividing head counts, a missing or
 * mis-shaped tensor, a vocabulary that does not match the tokenizer) is an error naming
 * the key or tensor; a KV cache that would not fit in memory is refused before any is
 * allocated. */
wk_status wk_model_load(const char *path, const wk_model_options *opt, wk_model **out);
void wk_model_free(wk_model *m);

/* ---- what was loaded -------------------------------------------------------------- */

typedef struct wk_model_info {
    int64_t n_vocab;     /* rows of the logits */
    int64_t n_ctx;       /* the KV cache's length (tokens) */
    int64_t n_ctx_train; /* the file's context_length */
    int64_t dim;         /* embedding_length */
    int64_t n_layers;    /* block_count */
    int64_t n_heads, n_kv_heads, head_dim;
    int64_t ff_dim;      /* feed_forward_length */
    int64_t n_rot;       /* rope.dimension_count */
    float rope_base;     /* rope.freq_base */
    float rms_eps;       /* attention.layer_norm_rms_epsilon */
    wk_device device;
    wk_form form;        /* the form the projections were built with */
    int n_threads;       /* CPU threads of the engine */
    size_t weight_bytes; /* memory the projections' weights occupy */
} wk_model_info;

const wk_model_info *wk_model_get_info(const wk_model *m);
/* The tokenizer built from the file's metadata (owned by the model). */
wk_tokenizer *wk_model_tokenizer(const wk_model *m);
/* The open GGUF file (owned by the model). */
const wk_gguf *wk_model_gguf(const wk_model *m);

/* ---- the forward -------------------------------------------------------------------- */

/* Run n tokens at positions pos .. pos+n-1 and write logits (f32, vocabulary order):
 * those of the last token (n_vocab floats), or with all_logits those of every token
 * (n × n_vocab). pos may be at most the number of tokens already in the cache (a smaller
 * pos forgets what came after it); pos + n beyond the context is WK_ERR_INVALID. */
wk_status wk_model_forward(wk_model *m, const int32_t *tokens, int64_t n, int64_t pos,
                           bool all_logits, float *logits);
/* The same forward, but only the greedy choice for the last token comes back: the id of
 * its largest logit (the lowest id among equal ones), chosen on the model's device, so a
 * GPU copies back one id instead of n_vocab logits. */
wk_status wk_model_forward_greedy(wk_model *m, const int32_t *tokens, int64_t n, int64_t pos,
                                  int32_t *token);
/* Forget the KV cache (the next forward starts at position 0). */
void wk_model_reset(wk_model *m);

/* ---- sampling ------------------------------------------------------------------------ */

typedef struct wk_sampler_options {
    float temperature; /* 0: greedy (the top logit; lowest id on ties) */
    int top_k;         /* keep the k most likely tokens; 0: all */
    float top_p;       /* keep the smallest set whose probability reaches p; 1: all */
    uint64_t seed;     /* the generator's seed (same seed, same choices) */
} wk_sampler_options;

/* temperature 0.8, top_k 40, top_p 0.95, seed 42. */
void wk_sampler_options_init(wk_sampler_options *opt);

typedef struct wk_sampler wk_sampler;

/* A sampler for logits of n_vocab entries (its scratch is allocated here, once). */
wk_status wk_sampler_create(const wk_sampler_options *opt, int64_t n_vocab, wk_sampler **out);
void wk_sampler_free(wk_sampler *s);
/* Choose a token from logits (n_vocab floats; not modified). */
int32_t wk_sampler_sample(wk_sampler *s, const float *logits);

/* ---- generation ------------------------------------------------------------------------ */

/* Called once per generated token with the text it completes (NUL-terminated, len bytes):
 * whole UTF-8 characters only; a token that ends inside a character gives "" and its bytes
 * come with the next. The end-of-generation token is not passed. If generation ends inside
 * a character, one last call with token -1 passes the bytes left. Return non-zero to stop. */
typedef int (*wk_token_callback)(void *user, int32_t token, const char *text, size_t len);

typedef struct wk_generate_options {
    int64_t max_tokens;          /* stop after this many generated tokens */
    wk_sampler_options sampling; /* how each token is chosen */
    bool stop_at_eos;            /* stop at the tokenizer's end-of-generation tokens (true) */
} wk_generate_options;

/* max_tokens 128, greedy sampling (temperature 0), stop_at_eos. */
void wk_generate_options_init(wk_generate_options *opt);

typedef struct wk_generate_stats {
    int64_t n_prompt;   /* tokens in the prefill */
    double prefill_ms;  /* the prefill forward and the first choice */
    int64_t n_decode;   /* single-token forwards after the prefill */
    double decode_ms;   /* their total time */
    int64_t n_generated; /* tokens chosen (passed to the callback, plus a final EOS) */
    bool hit_eos;       /* stopped at an end-of-generation token */
    bool hit_context;   /* stopped because the context was full */
} wk_generate_stats;

/* Start a fresh sequence with the prompt's token ids and generate. Generation stops at
 * max_tokens, at an end-of-generation token, when the callback asks, or when the context
 * is full (a documented stop: stats->hit_context). A prompt that does not fit the context
 * is WK_ERR_INVALID. cb and stats may be NULL. */
wk_status wk_model_generate(wk_model *m, const int32_t *prompt, int64_t n_prompt,
                            const wk_generate_options *opt, wk_token_callback cb, void *user,
                            wk_generate_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
