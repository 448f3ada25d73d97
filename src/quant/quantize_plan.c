/* Which type each tensor gets in `wick quantize`: llama.cpp's rules (llama-quant.cpp),
 * restated for the requests wick offers.
 *
 * Which tensors are quantized: those with at least 2 dimensions (trailing 1s not
 * counted) whose name ends in "weight", except norms ("_norm.weight"), MoE router
 * inputs, positional and token-type embeddings and a few tiny special tensors.
 * Everything else is copied unchanged, in its own type.
 *
 * Single types (q4_0 ... q8_k, f32, f16, bf16): every such tensor gets the type, as
 * `llama-quantize --pure` does.
 *
 * The mixes q4_k_m and q5_k_m start from Q4_K / Q5_K and change, in llama.cpp's
 * order of tensors (by layer number, then by name):
 *  - output.weight, and token_embd.weight when there is no output.weight (the
 *    embedding is tied to the output): Q6_K; Q8_0 when its row length is not a multiple
 *    of the base type's block (256);
 *  - attn_v (and fused attn_qkv / attn_kv_b): Q6_K in the "more bits" layers, counted
 *    over the attn_v tensors;
 *  - ffn_down: Q6_K in the "more bits" layers, counted over the model's block count;
 *  - everything else: the base type.
 * "More bits" layers: i < n/8, i >= 7n/8, or (i - n/8) % 3 == 2.
 *
 * Fallback (llama.cpp's tensor_type_fallback): when the row length (ne[0]) is not a
 * multiple of the type's block, Q2_K and Q3_K become Q4_0, Q4_K becomes Q5_0, Q5_K
 * becomes Q5_1, Q6_K becomes Q8_0; if even that cannot hold the row, F16. llama.cpp has
 * no fallback for Q8_K (it never writes Q8_K weights) nor for the 32-element types;
 * wick sends Q8_K to Q8_0 (the same 8 bits on 32-element blocks) and the 32-element
 * types to F16 (llama.cpp's last resort). */
#include "quant/quantize_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "wick/quant.h"

/* llama.cpp's LLAMA_FTYPE_* values (general.file_type). The single K types take the
 * value llama-quantize gives their plain names (Q3_K is Q3_K_M, Q4_K is Q4_K_M, ...). */
static const struct {
    const char *name;
    wk_quant_mix mix;
    wk_type base;
    int32_t file_type;
} wk_requests[] = {
    {"f32", WK_QUANT_SINGLE, WK_TYPE_F32, 0},      {"f16", WK_QUANT_SINGLE, WK_TYPE_F16, 1},
    {"bf16", WK_QUANT_SINGLE, WK_TYPE_BF16, 32},   {"q4_0", WK_QUANT_SINGLE, WK_TYPE_Q4_0, 2},
    {"q4_1", WK_QUANT_SINGLE, WK_TYPE_Q4_1, 3},    {"q5_0", WK_QUANT_SINGLE, WK_TYPE_Q5_0, 8},
    {"q5_1", WK_QUANT_SINGLE, WK_TYPE_Q5_1, 9},    {"q8_0", WK_QUANT_SINGLE, WK_TYPE_Q8_0, 7},
    {"q8_1", WK_QUANT_SINGLE, WK_TYPE_Q8_1, -1},   {"q2_k", WK_QUANT_SINGLE, WK_TYPE_Q2_K, 10},
    {"q3_k", WK_QUANT_SINGLE, WK_TYPE_Q3_K, 12},   {"q4_k", WK_QUANT_SINGLE, WK_TYPE_Q4_K, 15},
    {"q5_k", WK_QUANT_SINGLE, WK_TYPE_Q5_K, 17},   {"q6_k", WK_QUANT_SINGLE, WK_TYPE_Q6_K, 18},
    {"q8_k", WK_QUANT_SINGLE, WK_TYPE_Q8_K, -1},   {"q4_k_m", WK_QUANT_Q4_K_M, WK_TYPE_Q4_K, 15},
    {"q5_k_m", WK_QUANT_Q5_K_M, WK_TYPE_Q5_K, 17},
};

wk_status wk_quant_request_parse(const char *name, wk_quant_request *out)
{
    for (size_t i = 0; name && i < sizeof wk_requests / sizeof wk_requests[0]; i++) {
        if (strcasecmp(name, wk_requests[i].name) == 0) {
            out->mix = wk_requests[i].mix;
            out->base = wk_requests[i].base;
            out->file_type = wk_requests[i].file_type;
            out->name = wk_requests[i].name;
            return WK_OK;
        }
    }
    return wk_fail(WK_ERR_INVALID,
                   "unknown quantization type '%s' (expected one of f32 f16 bf16 q4_0 q4_1 q5_0 "
                   "q5_1 q8_0 q8_1 q2_k q3_k q4_k q5_k q6_k q8_k q4_k_m q5_k_m)",
                   name ? name : "");
}

bool wk_quant_use_more_bits(int64_t i, int64_t n)
{
    /* (i - n/8) % 3 is C's remainder, negative below n/8, as in llama.cpp */
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

wk_type wk_quant_fallback(wk_type t, int64_t ne0)
{
    if (ne0 % wk_type_block_size(t) == 0) return t;
    wk_type f;
    switch (t) {
    case WK_TYPE_Q2_K:
    case WK_TYPE_Q3_K: f = WK_TYPE_Q4_0; break;
    case WK_TYPE_Q4_K: f = WK_TYPE_Q5_0; break;
    case WK_TYPE_Q5_K: f = WK_TYPE_Q5_1; break;
    case WK_TYPE_Q6_K: f = WK_TYPE_Q8_0; break;
    case WK_TYPE_Q8_K: f = WK_TYPE_Q8_0; break;
    default: f = WK_TYPE_F16; break;
    }
    return ne0 % wk_type_block_size(f) == 0 ? f : WK_TYPE_F16;
}

/* Dimensions that count: trailing 1s are not dimensions (ggml_n_dims). */
static int wk_effective_dims(const wk_quant_tensor *t)
{
    for (int i = t->n_dims - 1; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

static bool wk_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static bool wk_is_weight_matrix(const wk_quant_tensor *t)
{
    static const char *const excluded[] = {
        "_norm.weight",        "ffn_gate_inp.weight", "position_embd.weight", "token_types.weight",
        "ssm_conv1d",          "attn_rel_b.weight",   "altup",                "laurel",
        "time_mix_first.weight",
    };
    if (wk_effective_dims(t) < 2 || !wk_ends_with(t->name, "weight")) return false;
    for (size_t i = 0; i < sizeof excluded / sizeof excluded[0]; i++)
        if (strstr(t->name, excluded[i])) return false;
    return true;
}

typedef enum { CAT_OTHER, CAT_OUTPUT, CAT_TOKEN_EMBD, CAT_ATTN_V, CAT_FFN_DOWN } wk_category;

static wk_category wk_category_of(const char *name)
{
    if (strcmp(name, "output.weight") == 0) return CAT_OUTPUT;
    if (strcmp(name, "token_embd.weight") == 0) return CAT_TOKEN_EMBD;
    if (strstr(name, "attn_qkv.weight") || strstr(name, "attn_kv_b.weight") ||
        strstr(name, "attn_v.weight"))
        return CAT_ATTN_V;
    if (strstr(name, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

/* llama.cpp visits tensors ordered by layer ("blk.N.", -1 for none), then by name. */
static int wk_layer_of(const char *name)
{
    int layer = -1;
    if (sscanf(name, "blk.%d.", &layer) != 1) layer = -1;
    return layer;
}

static const wk_quant_tensor *wk_sort_base;
static int wk_visit_order(const void *a, const void *b)
{
    const wk_quant_tensor *ta = &wk_sort_base[*(const int64_t *)a];
    const wk_quant_tensor *tb = &wk_sort_base[*(const int64_t *)b];
    int la = wk_layer_of(ta->name), lb = wk_layer_of(tb->name);
    if (la != lb) return la < lb ? -1 : 1;
    return strcmp(ta->name, tb->name);
}

wk_status wk_quant_plan(const wk_quant_request *req, wk_quant_tensor *t, int64_t n,
                        int64_t n_layer)
{
    if (!wk_type_known((int)req->base))
        return wk_fail(WK_ERR_INVALID, "quantize: unknown base type %d", (int)req->base);
    int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order) return wk_fail(WK_ERR_NOMEM, "quantize: no memory for a plan of %lld tensors",
                               (long long)n);
    bool tied = true;
    int64_t n_attn_v = 0, n_ffn_down = 0;
    for (int64_t i = 0; i < n; i++) {
        order[i] = i;
        wk_category c = wk_category_of(t[i].name);
        if (c == CAT_OUTPUT) tied = false;
        if (c == CAT_ATTN_V) n_attn_v++;
        if (c == CAT_FFN_DOWN) n_ffn_down++;
    }
    if (n_layer <= 0) n_layer = n_ffn_down;
    wk_sort_base = t;
    qsort(order, (size_t)n, sizeof *order, wk_visit_order);

    const bool mix = req->mix != WK_QUANT_SINGLE && wk_type_is_quantized(req->base);
    int64_t i_attn_v = 0, i_ffn_down = 0;
    for (int64_t k = 0; k < n; k++) {
        wk_quant_tensor *x = &t[order[k]];
        x->is_weight = wk_is_weight_matrix(x);
        if (!x->is_weight) {
            x->preferred = x->target = x->type;
            continue;
        }
        wk_type want = req->base;
        if (mix) {
            wk_category c = wk_category_of(x->name);
            if (c == CAT_OUTPUT || (tied && c == CAT_TOKEN_EMBD)) {
                if (x->ne[0] % wk_type_block_size(req->base) != 0) want = WK_TYPE_Q8_0;
                else if (req->base != WK_TYPE_Q8_0) want = WK_TYPE_Q6_K;
            } else if (c == CAT_ATTN_V) {
                if (wk_quant_use_more_bits(i_attn_v, n_attn_v)) want = WK_TYPE_Q6_K;
                i_attn_v++;
            } else if (c == CAT_FFN_DOWN) {
                if (wk_quant_use_more_bits(i_ffn_down, n_layer)) want = WK_TYPE_Q6_K;
                i_ffn_down++;
            }
        }
        x->preferred = want;
        x->target = wk_type_is_quantized(want) ? wk_quant_fallback(want, x->ne[0]) : want;
    }
    free(order);
    return WK_OK;
}
