/* Internal: the Llama model's weights, run state and the forward. */
#ifndef WICK_MODEL_LLAMA_H
#define WICK_MODEL_LLAMA_H

#include "wick/model.h"
#include "model/backend.h"

/* One transformer block's weights. Norm weights are f32 in device memory. */
typedef struct wk_llama_layer {
    float *attn_norm, *ffn_norm;
    wk_qmatmul *wq, *wk, *wv, *wo;
    wk_qmatmul *w_gate, *w_up, *w_down;
} wk_llama_layer;

/* Device buffers of the forward, sized for max_batch tokens at a time. */
typedef struct wk_llama_state {
    int64_t max_batch;
    int32_t *ids;           /* max_batch token ids */
    int32_t *best;          /* the greedy choice of the last row (one id) */
    float *x;               /* residual stream: max_batch × dim */
    float *xb;              /* normed input / projection output: max_batch × dim */
    float *q;               /* queries: max_batch × dim */
    float *att;             /* attention output: max_batch × dim */
    float *hb, *hb2;        /* MLP gate and up: max_batch × ff_dim */
    float *logits;          /* logits_rows × n_vocab */
    int64_t logits_rows;
    float *k_cache, *v_cache; /* n_layers × n_ctx × kv_dim each */
} wk_llama_state;

struct wk_model {
    wk_model_info info;
    int64_t kv_dim;         /* n_kv_heads × head_dim */
    wk_gguf *gguf;
    wk_tokenizer *tokenizer;
    wk_engine *engine;
    const wk_backend *be;

    wk_qtensor *tok_embd;   /* [n_vocab, dim], for embedding rows */
    wk_llama_layer *layers;
    float *output_norm;
    wk_qmatmul *output;     /* [n_vocab, dim]; token_embd when the file ties them */
    void *output_copy;      /* host bytes of a tied output (the matmul may repack them) */

    wk_llama_state st;
    int64_t n_past;         /* tokens in the KV cache */
};

/* Greedy decoding one step ahead (generate.c), where the backend can copy back later:
 * queue the step at position n_past of the id the last greedy choice leaves on the device
 * (that of the prompt's forward_greedy, or of the step queued before) and advance n_past;
 * its choice is in *out once wk_model_greedy_collect, which takes the oldest queued step,
 * has returned. At most two steps queued. */
bool wk_model_greedy_can_queue(const wk_model *m);
wk_status wk_model_greedy_queue(wk_model *m, int32_t *out);
wk_status wk_model_greedy_collect(wk_model *m);

/* Allocate the forward's device buffers (load calls it once). */
wk_status wk_llama_state_init(wk_model *m, int64_t max_batch);
void wk_llama_state_free(wk_model *m);

#endif
