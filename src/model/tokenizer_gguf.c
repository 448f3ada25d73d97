/* wick: a tokenizer from the tokenizer.* keys of a GGUF file. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/tokenizer_internal.h"

static bool has(const wk_gguf *g, const char *key) {
    return wk_gguf_find_key(g, key) >= 0;
}

/* An array key's element type and count, checked. */
static wk_status get_array(const wk_gguf *g, const char *key, wk_gguf_vtype want, uint64_t min_n,
                           uint64_t *n) {
    wk_gguf_vtype et;
    wk_status st = wk_gguf_get_arr(g, key, &et, n);
    if (st != WK_OK) return st;
    if (et != want)
        return wk_fail(WK_ERR_FORMAT, "%s: %s holds elements of type %d, expected %d",
                       wk_gguf_path(g), key, (int)et, (int)want);
    if (*n < min_n)
        return wk_fail(WK_ERR_FORMAT, "%s: %s has %llu elements, fewer than the %llu tokens",
                       wk_gguf_path(g), key, (unsigned long long)*n, (unsigned long long)min_n);
    return WK_OK;
}

static wk_status get_strings(const wk_gguf *g, const char *key, uint64_t n, const char ***strs,
                             size_t **lens) {
    *strs = malloc((n ? n : 1) * sizeof **strs);
    *lens = malloc((n ? n : 1) * sizeof **lens);
    if (!*strs || !*lens) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %s", key);
    for (uint64_t i = 0; i < n; i++) {
        wk_status st = wk_gguf_get_arr_str(g, key, i, &(*strs)[i], &(*lens)[i]);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

/* A special token id: absent is fine; present, it must name a token of the vocabulary. */
static wk_status get_id(const wk_gguf *g, const char *key, uint64_t n_vocab, int64_t *out) {
    uint32_t v;
    if (!has(g, key)) return WK_OK;
    wk_status st = wk_gguf_get_u32(g, key, &v);
    if (st != WK_OK) return st;
    if (v >= n_vocab)
        return wk_fail(WK_ERR_FORMAT, "%s = %u is out of range for a vocabulary of %llu tokens",
                       key, v, (unsigned long long)n_vocab);
    *out = v;
    return WK_OK;
}

static wk_status get_flag(const wk_gguf *g, const char *key, int *out) {
    bool v;
    if (!has(g, key)) return WK_OK;
    wk_status st = wk_gguf_get_bool(g, key, &v);
    if (st == WK_OK) *out = v;
    return st;
}

wk_status wk_tokenizer_create(const wk_gguf *g, wk_tokenizer **out) {
    return wk_tokenizer_create_pre(g, NULL, out);
}

wk_status wk_tokenizer_create_pre(const wk_gguf *g, const char *pre_override, wk_tokenizer **out) {
    *out = NULL;
    if (!g) return wk_fail(WK_ERR_INVALID, "tokenizer: NULL GGUF handle");
    wk_tokenizer_spec spec;
    wk_tokenizer_spec_init(&spec);
    const char **tokens = NULL, **merges = NULL;
    size_t *token_lens = NULL, *merge_lens = NULL;
    float *scores = NULL;
    wk_status st = wk_gguf_get_str(g, "tokenizer.ggml.model", &spec.model, NULL);
    if (st == WK_OK && has(g, "tokenizer.ggml.pre"))
        st = wk_gguf_get_str(g, "tokenizer.ggml.pre", &spec.pre, NULL);
    if (pre_override) spec.pre = pre_override;
    uint64_t n = 0;
    if (st == WK_OK) st = get_array(g, "tokenizer.ggml.tokens", WK_GGUF_STRING, 1, &n);
    if (st == WK_OK) st = get_strings(g, "tokenizer.ggml.tokens", n, &tokens, &token_lens);
    spec.n_tokens = (size_t)n;
    spec.tokens = tokens;
    spec.token_lens = token_lens;
    if (st == WK_OK && has(g, "tokenizer.ggml.scores")) {
        wk_gguf_vtype et;
        uint64_t ns;
        const void *data;
        st = wk_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &ns);
        if (st == WK_OK && et != WK_GGUF_FLOAT32 && et != WK_GGUF_INT32)
            st = wk_fail(WK_ERR_FORMAT,
                         "%s: tokenizer.ggml.scores holds elements of type %d, "
                         "expected float32 or int32",
                         wk_gguf_path(g), (int)et);
        if (st == WK_OK && ns < n)
            st = wk_fail(WK_ERR_FORMAT,
                         "%s: tokenizer.ggml.scores has %llu elements, fewer than "
                         "the %llu tokens",
                         wk_gguf_path(g), (unsigned long long)ns, (unsigned long long)n);
        if (st == WK_OK) st = wk_gguf_get_arr_data(g, "tokenizer.ggml.scores", &data);
        if (st == WK_OK) {
            scores = malloc(n * sizeof *scores);
            if (!scores) st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for scores");
        }
        /* Unaligned little-endian elements: copy them out. */
        for (uint64_t i = 0; st == WK_OK && i < n; i++) {
            if (et == WK_GGUF_FLOAT32) {
                memcpy(&scores[i], (const char *)data + 4 * i, 4);
            } else {
                int32_t v;
                memcpy(&v, (const char *)data + 4 * i, 4);
                scores[i] = (float)v;
            }
        }
        spec.scores = scores;
    }
    int32_t *types = NULL;
    if (st == WK_OK && has(g, "tokenizer.ggml.token_type")) {
        uint64_t nt;
        const void *data;
        st = get_array(g, "tokenizer.ggml.token_type", WK_GGUF_INT32, n, &nt);
        if (st == WK_OK) st = wk_gguf_get_arr_data(g, "tokenizer.ggml.token_type", &data);
        if (st == WK_OK) {
            types = malloc(n * sizeof *types);
            if (!types)
                st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for token types");
            else
                memcpy(types, data, n * sizeof *types);
        }
        for (uint64_t i = 0; st == WK_OK && i < n; i++)
            if (types[i] < 0 || types[i] > WK_TOKEN_BYTE)
                st = wk_fail(WK_ERR_FORMAT,
                             "tokenizer.ggml.token_type[%llu] = %d is not a token type (0 to %d)",
                             (unsigned long long)i, (int)types[i], (int)WK_TOKEN_BYTE);
        spec.types = types;
    }
    if (st == WK_OK && spec.model && strcmp(spec.model, "gpt2") == 0) {
        uint64_t nm;
        st = get_array(g, "tokenizer.ggml.merges", WK_GGUF_STRING, 0, &nm);
        if (st == WK_OK) st = get_strings(g, "tokenizer.ggml.merges", nm, &merges, &merge_lens);
        spec.n_merges = (size_t)nm;
        spec.merges = merges;
        spec.merge_lens = merge_lens;
    }
    if (st == WK_OK) {
        static const char *const keys[] = {
            "tokenizer.ggml.bos_token_id",     "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.eot_token_id",     "tokenizer.ggml.eom_token_id",
            "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
            "tokenizer.ggml.fim_pad_token_id", "tokenizer.ggml.fim_rep_token_id",
            "tokenizer.ggml.fim_sep_token_id"};
        int64_t *const ids[] = {&spec.bos, &spec.eos, &spec.eot, &spec.eom, &spec.unk,
                                &spec.pad, &spec.fim_pad, &spec.fim_rep, &spec.fim_sep};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0] && st == WK_OK; i++)
            st = get_id(g, keys[i], n, ids[i]);
    }
    if (st == WK_OK) {
        st = get_flag(g, "tokenizer.ggml.add_bos_token", &spec.add_bos);
    }
    if (st == WK_OK) st = get_flag(g, "tokenizer.ggml.add_eos_token", &spec.add_eos);
    if (st == WK_OK) st = get_flag(g, "tokenizer.ggml.add_space_prefix", &spec.add_space_prefix);
    if (st == WK_OK && has(g, "tokenizer.chat_template"))
        st = wk_gguf_get_str(g, "tokenizer.chat_template", &spec.chat_template, NULL);
    if (st == WK_OK) st = wk_tokenizer_build(&spec, out);
    if (st != WK_OK) st = wk_fail_context(st, "%s: tokenizer", wk_gguf_path(g));
    free(tokens);
    free(token_lens);
    free(merges);
    free(merge_lens);
    free(scores);
    free(types);
    return st;
}
