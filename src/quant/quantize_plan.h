/* Internal: which type each tensor of a model gets when `wick quantize` writes it.
 *
 * A request is one of the 15 types (every weight matrix in that type, as llama.cpp's
 * `llama-quantize --pure`) or one of llama.cpp's mixes q4_k_m / q5_k_m (its per-tensor
 * rules). Either way a row length the chosen type cannot hold falls back to a type that
 * can, by llama.cpp's table. Tensors that are not weight matrices are copied as they are. */
#ifndef WICK_QUANT_QUANTIZE_PLAN_H
#define WICK_QUANT_QUANTIZE_PLAN_H

#include "wick/common.h"

typedef enum wk_quant_mix {
    WK_QUANT_SINGLE = 0, /* every weight matrix in one type */
    WK_QUANT_Q4_K_M,
    WK_QUANT_Q5_K_M,
} wk_quant_mix;

typedef struct wk_quant_request {
    wk_quant_mix mix;
    wk_type base;      /* the single type; Q4_K or Q5_K for the mixes */
    int32_t file_type; /* llama.cpp's general.file_type for it; -1 where none exists */
    const char *name;  /* as the user spells it, lower case */
} wk_quant_request;

/* "q4_0" ... "q8_k", "f32", "f16", "bf16", "q4_k_m", "q5_k_m" (any case). */
wk_status wk_quant_request_parse(const char *name, wk_quant_request *out);

/* One tensor: the caller fills the first four fields, wk_quant_plan the rest. */
typedef struct wk_quant_tensor {
    const char *name;
    int n_dims;
    int64_t ne[4];
    wk_type type;      /* its type in the input */
    wk_type target;    /* its type in the output */
    bool is_weight;    /* a weight matrix (else copied unchanged) */
    wk_type preferred; /* the type the rules chose before the row-length fallback */
} wk_quant_tensor;

/* Choose the target of every tensor. n_layer is the model's block count (used by the
 * mixes' layer rules; 0 when unknown: then the number of ffn_down tensors is used). */
wk_status wk_quant_plan(const wk_quant_request *req, wk_quant_tensor *tensors, int64_t n,
                        int64_t n_layer);

/* llama.cpp's choice of "more bits" layers for attn_v and ffn_down in the mixes: the
 * first and last eighth of the layers, and every third layer in between. */
bool wk_quant_use_more_bits(int64_t i_layer, int64_t n_layers);

/* The type a row of ne0 elements falls back to when `t` cannot hold it (t itself when
 * it can). */
wk_type wk_quant_fallback(wk_type t, int64_t ne0);

#endif
