/* wick: the tokenizer: vocabulary tables built from a spec, special-token
 * splitting, encoding (BPE or SentencePiece per fragment) and decoding. */
#include "model/tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fnv.h"
#include "model/unicode.h"

/* ---- small containers ---- */

wk_status wk_idvec_push(wk_idvec *a, int32_t id) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        int32_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu tokens", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = id;
    return WK_OK;
}

void wk_merge_scratch_free(wk_merge_scratch *s) {
    free(s->symbols);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

/* A growable byte buffer. */
typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static wk_status buf_put(buf *b, const void *src, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", cap);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
    b->p[b->n] = 0;
    return WK_OK;
}

/* Append a NUL-terminated copy to the arena. */
static wk_status arena_add(wk_tokenizer *t, const char *s, size_t n, wk_str *out) {
    if (n > UINT32_MAX || t->arena_len + n + 1 > UINT32_MAX)
        return wk_fail(WK_ERR_NOMEM, "tokenizer: vocabulary strings exceed 4 GiB");
    if (t->arena_len + n + 1 > t->arena_cap) {
        size_t cap = t->arena_cap ? t->arena_cap : 1 << 16;
        while (cap < t->arena_len + n + 1)
            cap *= 2;
        char *p = realloc(t->arena, cap);
        if (!p) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu bytes", cap);
        t->arena = p;
        t->arena_cap = cap;
    }
    if (n) memcpy(t->arena + t->arena_len, s, n);
    t->arena[t->arena_len + n] = 0;
    out->off = (uint32_t)t->arena_len;
    out->len = (uint32_t)n;
    t->arena_len += n + 1;
    return WK_OK;
}

/* ---- hash tables ---- */

static uint64_t pair_hash(const char *l, size_t ln, const char *r, size_t rn) {
    uint64_t h = wk_fnv1a(WK_FNV1A_SEED, l, ln);
    h = (h ^ 0x1F) * WK_FNV1A_PRIME ^ ln; /* keep "a"+"bc" apart from "ab"+"c" */
    return wk_fnv1a(h * WK_FNV1A_PRIME, r, rn);
}

static wk_status strmap_init(wk_strmap *m, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots)
        return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for a %zu-slot table", cap);
    m->mask = cap - 1;
    return WK_OK;
}

int32_t wk_tokenizer_find(const wk_tokenizer *t, const char *s, size_t n) {
    if (!t->vocab.slots) return -1;
    for (size_t i = wk_fnv1a(WK_FNV1A_SEED, s, n) & t->vocab.mask;; i = (i + 1) & t->vocab.mask) {
        uint32_t e = t->vocab.slots[i];
        if (!e) return -1;
        wk_str k = t->text[e - 1];
        if (k.len == n && memcmp(t->arena + k.off, s, n) == 0) return (int32_t)(e - 1);
    }
}

/* Insert id under its text unless the text is there already (first wins). */
static void vocab_insert(wk_tokenizer *t, int32_t id) {
    wk_str k = t->text[id];
    const char *s = t->arena + k.off;
    for (size_t i = wk_fnv1a(WK_FNV1A_SEED, s, k.len) & t->vocab.mask;; i = (i + 1) & t->vocab.mask) {
        uint32_t e = t->vocab.slots[i];
        if (!e) {
            t->vocab.slots[i] = (uint32_t)id + 1;
            return;
        }
        wk_str o = t->text[e - 1];
        if (o.len == k.len && memcmp(t->arena + o.off, s, k.len) == 0) return;
    }
}

int32_t wk_tokenizer_merge_rank(const wk_tokenizer *t, const char *l, size_t ln, const char *r,
                                size_t rn) {
    if (!t->merges_map.slots) return -1;
    const wk_strmap *m = &t->merges_map;
    for (size_t i = pair_hash(l, ln, r, rn) & m->mask;; i = (i + 1) & m->mask) {
        uint32_t e = m->slots[i];
        if (!e) return -1;
        wk_str a = t->merge_left[e - 1], b = t->merge_right[e - 1];
        if (a.len == ln && b.len == rn && memcmp(t->arena + a.off, l, ln) == 0 &&
            memcmp(t->arena + b.off, r, rn) == 0)
            return (int32_t)(e - 1);
    }
}

static void merge_insert(wk_tokenizer *t, size_t rank) {
    wk_str a = t->merge_left[rank], b = t->merge_right[rank];
    const char *l = t->arena + a.off, *r = t->arena + b.off;
    wk_strmap *m = &t->merges_map;
    for (size_t i = pair_hash(l, a.len, r, b.len) & m->mask;; i = (i + 1) & m->mask) {
        uint32_t e = m->slots[i];
        if (!e) {
            m->slots[i] = (uint32_t)rank + 1;
            return;
        }
        wk_str a2 = t->merge_left[e - 1], b2 = t->merge_right[e - 1];
        if (a2.len == a.len && b2.len == b.len && memcmp(t->arena + a2.off, l, a.len) == 0 &&
            memcmp(t->arena + b2.off, r, b.len) == 0)
            return; /* the first (best) rank of a repeated pair wins */
    }
}

/* ---- building ---- */

void wk_tokenizer_spec_init(wk_tokenizer_spec *spec) {
    memset(spec, 0, sizeof *spec);
    spec->bos = spec->eos = spec->eot = spec->eom = spec->unk = spec->pad = -1;
    spec->fim_pad = spec->fim_rep = spec->fim_sep = -1;
    spec->add_bos = spec->add_eos = spec->add_space_prefix = -1;
}

void wk_tokenizer_free(wk_tokenizer *t) {
    if (!t) return;
    free(t->pre_name);
    free(t->arena);
    free(t->text);
    free(t->piece);
    free(t->score);
    free(t->attr);
    free(t->type);
    free(t->vocab.slots);
    free(t->merge_left);
    free(t->merge_right);
    free(t->merges_map.slots);
    free(t->special);
    free(t->chat_template);
    free(t);
}

static uint8_t attr_from_type(int32_t type) {
    switch (type) {
    case WK_TOKEN_NORMAL:
        return WK_ATTR_NORMAL;
    case WK_TOKEN_UNKNOWN:
        return WK_ATTR_UNKNOWN;
    case WK_TOKEN_CONTROL:
        return WK_ATTR_CONTROL;
    case WK_TOKEN_USER_DEFINED:
        return WK_ATTR_USER_DEFINED;
    case WK_TOKEN_UNUSED:
        return WK_ATTR_UNUSED;
    case WK_TOKEN_BYTE:
        return WK_ATTR_BYTE;
    default:
        return WK_ATTR_UNDEFINED;
    }
}

static bool text_in(const char *s, const char *const *list) {
    if (s[0] != '<' && s[0] != '[' && s[0] != '_') return false; /* every name starts so */
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return true;
    return false;
}

/* Texts that end a turn or generation, as llama.cpp recognises them. */
static const char *const k_eot_names[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "<|end_of_text|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "<\xef\xbd\x9c"
                                          "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                          "<end_of_utterance>",
                                          NULL};
static const char *const k_eog_names[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "<|flush|>",
                                          "<|calls|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "[EOS]",
                                          "<|end_of_text|>",
                                          "<end_of_utterance>",
                                          "<eos>",
                                          "<turn|>",
                                          "<|tool_response>",
                                          "<\xef\xbd\x9c"
                                          "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                          NULL};
/* Fill-in-the-middle padding, repository and file separators also end
 * generation: the first token of each kind. */
static const char *const k_fim_pad_names[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>",
                                              "<PAD>",       "[PAD]",     NULL};
static const char *const k_fim_rep_names[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                              "<REPO>",       "<reponame>",    NULL};
static const char *const k_fim_sep_names[] = {"<|file_sep|>", NULL};

/* The bytes a token stands for when decoding (the llama.cpp piece with
 * special tokens rendered). */
static wk_status make_piece(wk_tokenizer *t, int32_t id, buf *b) {
    b->n = 0;
    uint8_t a = t->attr[id];
    const char *s = wk_tok_str(t, t->text[id]);
    size_t n = t->text[id].len;
    if (a & (WK_ATTR_CONTROL | WK_ATTR_UNKNOWN | WK_ATTR_USER_DEFINED)) return buf_put(b, s, n);
    if (a & WK_ATTR_NORMAL) {
        if (t->kind == WK_TOK_SPM) {
            /* U+2581 back to spaces. */
            wk_status st = WK_OK;
            for (size_t i = 0; i < n && st == WK_OK;) {
                if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
                    st = buf_put(b, " ", 1);
                    i += 3;
                } else {
                    st = buf_put(b, s + i++, 1);
                }
            }
            return st;
        }
        /* Byte-level characters back to bytes. */
        wk_status st = WK_OK;
        for (size_t i = 0; i < n && st == WK_OK;) {
            size_t adv;
            uint32_t cp = wk_utf8_decode((const unsigned char *)s + i, n - i, &adv);
            int byte = wk_cp_to_byte(cp);
            if (byte >= 0) {
                unsigned char c = (unsigned char)byte;
                st = buf_put(b, &c, 1);
            } else {
                /* Not a byte-level character: llama.cpp's marker, kept for parity. */
                char tmp[32];
                st = buf_put(b, "[UNK_BYTE_0x", 12);
                for (size_t j = 0; j < adv && st == WK_OK; j++) {
                    snprintf(tmp, sizeof tmp, "%02x", (unsigned char)s[i + j]);
                    st = buf_put(b, tmp, 2);
                }
                if (st == WK_OK) st = buf_put(b, s, n);
                if (st == WK_OK) st = buf_put(b, "]", 1);
            }
            i += adv;
        }
        return st;
    }
    if (a & WK_ATTR_BYTE) {
        unsigned v = 0;
        if (n == 6 && sscanf(s, "<0x%2x>", &v) == 1) {
            unsigned char c = (unsigned char)v;
            return buf_put(b, &c, 1);
        }
        return buf_put(b, "", 0);
    }
    return WK_OK; /* unused and undefined tokens decode to nothing */
}

static int cmp_u64(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static int32_t pick_id(int64_t given, int32_t dflt, int32_t n_vocab) {
    if (dflt >= n_vocab) dflt = -1;
    if (given >= 0 && given < n_vocab) return (int32_t)given;
    return dflt;
}

wk_status wk_tokenizer_build(const wk_tokenizer_spec *spec, wk_tokenizer **out) {
    *out = NULL;
    wk_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory");
    wk_status st = WK_OK;
    const char *model = spec->model ? spec->model : "";
    if (strcmp(model, "gpt2") == 0) {
        t->kind = WK_TOK_BPE;
    } else if (strcmp(model, "llama") == 0) {
        t->kind = WK_TOK_SPM;
    } else {
        st = wk_fail(WK_ERR_UNSUPPORTED,
                     "tokenizer.ggml.model '%s' is not supported (wick reads 'gpt2' and 'llama')",
                     model);
        goto fail;
    }
    snprintf(t->model_name, sizeof t->model_name, "%s", model);
    t->pre_name = strdup(spec->pre ? spec->pre : "");
    if (!t->pre_name) {
        st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory");
        goto fail;
    }
    bool dflt_add_bos = false;
    if (t->kind == WK_TOK_BPE) {
        st = wk_pretok_from_name(spec->pre, &t->pretok, &t->clean_spaces);
        if (st != WK_OK) goto fail;
        t->ignore_merges = dflt_add_bos = t->pretok == WK_PRETOK_LLAMA3;
    } else {
        dflt_add_bos = true;
        t->clean_spaces = false;
    }
    t->add_bos = spec->add_bos >= 0 ? spec->add_bos != 0 : dflt_add_bos;
    t->add_eos = spec->add_eos >= 0 ? spec->add_eos != 0 : false;
    t->add_space_prefix =
        spec->add_space_prefix >= 0 ? spec->add_space_prefix != 0 : t->kind == WK_TOK_SPM;

    if (spec->n_tokens == 0 || spec->n_tokens > INT32_MAX / 2) {
        st = wk_fail(WK_ERR_FORMAT, "tokenizer.ggml.tokens: %zu tokens (need 1 to %d)",
                     spec->n_tokens, INT32_MAX / 2);
        goto fail;
    }
    int32_t nv = t->n_vocab = (int32_t)spec->n_tokens;
    t->text = calloc((size_t)nv, sizeof *t->text);
    t->piece = calloc((size_t)nv, sizeof *t->piece);
    t->score = calloc((size_t)nv, sizeof *t->score);
    t->attr = calloc((size_t)nv, sizeof *t->attr);
    t->type = calloc((size_t)nv, sizeof *t->type);
    if (!t->text || !t->piece || !t->score || !t->attr || !t->type) {
        st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %d tokens", nv);
        goto fail;
    }
    for (int32_t i = 0; i < nv && st == WK_OK; i++) {
        const char *s = spec->tokens[i];
        size_t n = spec->token_lens ? spec->token_lens[i] : strlen(s);
        char empty[32];
        if (n == 0) { /* as llama.cpp names empty tokens */
            n = (size_t)snprintf(empty, sizeof empty, "[EMPTY_%d]", i);
            s = empty;
        }
        st = arena_add(t, s, n, &t->text[i]);
        t->score[i] = spec->scores ? spec->scores[i] : 0.0f;
        t->type[i] = spec->types ? spec->types[i] : WK_TOKEN_NORMAL;
        t->attr[i] = spec->types ? attr_from_type(spec->types[i]) : WK_ATTR_NORMAL;
    }
    if (st == WK_OK) st = strmap_init(&t->vocab, (size_t)nv);
    if (st != WK_OK) goto fail;
    for (int32_t i = 0; i < nv; i++)
        vocab_insert(t, i);

    if (t->kind == WK_TOK_BPE) {
        t->n_merges = spec->n_merges;
        t->merge_left = calloc(spec->n_merges + 1, sizeof *t->merge_left);
        t->merge_right = calloc(spec->n_merges + 1, sizeof *t->merge_right);
        if (!t->merge_left || !t->merge_right) {
            st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu merges", spec->n_merges);
            goto fail;
        }
        st = strmap_init(&t->merges_map, spec->n_merges);
        for (size_t i = 0; i < spec->n_merges && st == WK_OK; i++) {
            const char *s = spec->merges[i];
            size_t n = spec->merge_lens ? spec->merge_lens[i] : strlen(s);
            /* Split at the first space after the first byte; a merge without
             * one pairs two empty strings, which never match. */
            const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
            size_t ln = sp ? (size_t)(sp - s) : 0;
            size_t rn = sp ? n - ln - 1 : 0;
            st = arena_add(t, s, ln, &t->merge_left[i]);
            if (st == WK_OK) st = arena_add(t, sp ? sp + 1 : s, rn, &t->merge_right[i]);
        }
        if (st != WK_OK) goto fail;
        for (size_t i = 0; i < spec->n_merges; i++)
            merge_insert(t, i);
        for (int b = 0; b < 256; b++)
            t->byte_char_len[b] =
                (uint8_t)wk_utf8_encode(wk_byte_to_cp((unsigned char)b), t->byte_char[b]);
    }

    /* Special ids: the file's, else llama.cpp's defaults for the model type. */
    bool spm = t->kind == WK_TOK_SPM;
    t->bos = pick_id(spec->bos, spm ? 1 : 11, nv);
    t->eos = pick_id(spec->eos, spm ? 2 : 11, nv);
    t->unk = pick_id(spec->unk, spm ? 0 : -1, nv);
    t->pad = pick_id(spec->pad, -1, nv);
    t->eot = pick_id(spec->eot, -1, nv);
    t->eom = pick_id(spec->eom, -1, nv);
    int32_t fim[3] = {pick_id(spec->fim_pad, -1, nv), pick_id(spec->fim_rep, -1, nv),
                      pick_id(spec->fim_sep, -1, nv)};
    const char *const *fim_names[3] = {k_fim_pad_names, k_fim_rep_names, k_fim_sep_names};
    for (int32_t i = 0; i < nv; i++) {
        for (int k = 0; k < 3; k++) {
            if (fim[k] < 0 && text_in(wk_tok_str(t, t->text[i]), fim_names[k])) {
                fim[k] = i;
                t->attr[i] |= WK_ATTR_CONTROL;
            }
        }
    }
    for (int k = 0; k < 3; k++)
        if (fim[k] >= 0) t->attr[fim[k]] |= WK_ATTR_EOG;
    for (int32_t i = 0; i < nv; i++) {
        const char *s = wk_tok_str(t, t->text[i]);
        if (t->eot < 0 && text_in(s, k_eot_names)) {
            t->eot = i;
            t->attr[i] |= WK_ATTR_CONTROL;
        }
        if (t->eom < 0 && strcmp(s, "<|eom_id|>") == 0) {
            t->eom = i;
            t->attr[i] |= WK_ATTR_CONTROL;
        }
        if (text_in(s, k_eog_names)) t->attr[i] |= WK_ATTR_EOG | WK_ATTR_CONTROL;
    }
    if (t->eos >= 0) t->attr[t->eos] |= WK_ATTR_EOG;
    if (t->eot >= 0) t->attr[t->eot] |= WK_ATTR_EOG;
    if (t->eom >= 0) t->attr[t->eom] |= WK_ATTR_EOG;

    /* Tokens recognised in text, longest first (ties by id). */
    t->special = malloc((size_t)nv * sizeof *t->special);
    if (!t->special) {
        st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory");
        goto fail;
    }
    for (int32_t i = 0; i < nv; i++)
        if (t->attr[i] & (WK_ATTR_CONTROL | WK_ATTR_USER_DEFINED | WK_ATTR_UNKNOWN))
            t->special[t->n_special++] = i;
    /* Keys (longer first, then lower id) sort as plain integers. */
    uint64_t *keys = malloc((t->n_special ? t->n_special : 1) * sizeof *keys);
    if (!keys) {
        st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < t->n_special; i++)
        keys[i] =
            ((uint64_t)(UINT32_MAX - t->text[t->special[i]].len) << 32) | (uint32_t)t->special[i];
    qsort(keys, t->n_special, sizeof *keys, cmp_u64);
    for (size_t i = 0; i < t->n_special; i++)
        t->special[i] = (int32_t)(keys[i] & UINT32_MAX);
    free(keys);

    /* Pieces for decoding. */
    buf b = {0};
    for (int32_t i = 0; i < nv && st == WK_OK; i++) {
        st = make_piece(t, i, &b);
        if (st == WK_OK) st = arena_add(t, b.p ? b.p : "", b.n, &t->piece[i]);
        if (b.n > t->max_piece) t->max_piece = b.n;
    }
    free(b.p);
    if (st == WK_OK && spec->chat_template) {
        t->chat_template = strdup(spec->chat_template);
        if (!t->chat_template) st = wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory");
    }
    if (st != WK_OK) goto fail;
    *out = t;
    return WK_OK;
fail:
    wk_tokenizer_free(t);
    return st;
}

/* ---- queries ---- */

static bool id_ok(const wk_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_vocab;
}

int64_t wk_tokenizer_n_vocab(const wk_tokenizer *t) {
    return t->n_vocab;
}
int32_t wk_tokenizer_bos(const wk_tokenizer *t) {
    return t->bos;
}
int32_t wk_tokenizer_eos(const wk_tokenizer *t) {
    return t->eos;
}
int32_t wk_tokenizer_eot(const wk_tokenizer *t) {
    return t->eot;
}
bool wk_tokenizer_adds_bos(const wk_tokenizer *t) {
    return t->add_bos;
}
bool wk_tokenizer_adds_eos(const wk_tokenizer *t) {
    return t->add_eos;
}
const char *wk_tokenizer_model_name(const wk_tokenizer *t) {
    return t->model_name;
}
const char *wk_tokenizer_pre_name(const wk_tokenizer *t) {
    return t->pre_name;
}
const char *wk_tokenizer_chat_template(const wk_tokenizer *t) {
    return t->chat_template;
}
size_t wk_tokenizer_max_piece(const wk_tokenizer *t) {
    return t->max_piece;
}

wk_token_type wk_tokenizer_token_type(const wk_tokenizer *t, int32_t id) {
    return id_ok(t, id) ? (wk_token_type)t->type[id] : (wk_token_type)0;
}
bool wk_tokenizer_is_control(const wk_tokenizer *t, int32_t id) {
    return id_ok(t, id) && (t->attr[id] & WK_ATTR_CONTROL);
}
bool wk_tokenizer_is_special(const wk_tokenizer *t, int32_t id) {
    return id_ok(t, id) &&
           (t->attr[id] & (WK_ATTR_CONTROL | WK_ATTR_USER_DEFINED | WK_ATTR_UNKNOWN));
}
bool wk_tokenizer_is_eog(const wk_tokenizer *t, int32_t id) {
    return id_ok(t, id) && (t->attr[id] & WK_ATTR_EOG);
}
const char *wk_tokenizer_token_text(const wk_tokenizer *t, int32_t id) {
    return id_ok(t, id) ? wk_tok_str(t, t->text[id]) : NULL;
}

/* ---- encoding ---- */

/* A piece of the input: raw text, or a special token found in it. */
typedef struct fragment {
    size_t off, len;
    int32_t id; /* -1: text */
} fragment;

typedef struct fragvec {
    fragment *v;
    size_t n, cap;
} fragvec;

static wk_status frag_push(fragvec *a, size_t off, size_t len, int32_t id) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        fragment *v = realloc(a->v, cap * sizeof *v);
        if (!v) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu fragments", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = (fragment){off, len, id};
    return WK_OK;
}

/* Cut the text at special tokens: each token in turn (longest first) is
 * found left to right in the text fragments that are left. */
static wk_status split_special(const wk_tokenizer *t, const char *text, size_t len,
                               bool parse_special, fragvec *frags, fragvec *tmp) {
    frags->n = 0;
    if (len == 0) return WK_OK;
    wk_status st = frag_push(frags, 0, len, -1);
    for (size_t k = 0; k < t->n_special && st == WK_OK; k++) {
        int32_t id = t->special[k];
        if (!parse_special && (t->attr[id] & (WK_ATTR_CONTROL | WK_ATTR_UNKNOWN))) continue;
        const char *tt = wk_tok_str(t, t->text[id]);
        size_t tl = t->text[id].len;
        if (!memmem(text, len, tt, tl)) continue;
        tmp->n = 0;
        for (size_t f = 0; f < frags->n && st == WK_OK; f++) {
            fragment fr = frags->v[f];
            if (fr.id >= 0) {
                st = frag_push(tmp, fr.off, fr.len, fr.id);
                continue;
            }
            size_t off = fr.off, end = fr.off + fr.len;
            while (off < end && st == WK_OK) {
                const char *m = memmem(text + off, end - off, tt, tl);
                if (!m) {
                    st = frag_push(tmp, off, end - off, -1);
                    break;
                }
                size_t at = (size_t)(m - text);
                if (at > off) st = frag_push(tmp, off, at - off, -1);
                if (st == WK_OK) st = frag_push(tmp, at, tl, id);
                off = at + tl;
            }
        }
        fragvec sw = *frags;
        *frags = *tmp;
        *tmp = sw;
    }
    return st;
}

typedef struct encoder {
    const wk_tokenizer *t;
    wk_idvec ids;
    fragvec frags, tmp;
    uint32_t *cps;
    size_t cps_cap;
    wk_lenvec words, scratch;
    buf word, text;
    wk_merge_scratch merge;
} encoder;

static void encoder_free(encoder *e) {
    free(e->ids.v);
    free(e->frags.v);
    free(e->tmp.v);
    free(e->cps);
    wk_lenvec_free(&e->words);
    wk_lenvec_free(&e->scratch);
    free(e->word.p);
    free(e->text.p);
    wk_merge_scratch_free(&e->merge);
}

/* BPE of a text fragment: decode to code points, pre-split into words, map
 * each word's bytes to byte-level characters and merge. */
static wk_status bpe_fragment(encoder *e, const char *s, size_t n) {
    if (e->cps_cap < n) {
        uint32_t *c = realloc(e->cps, n * sizeof *c);
        if (!c) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu characters", n);
        e->cps = c;
        e->cps_cap = n;
    }
    size_t ncp = 0;
    for (size_t i = 0; i < n;) {
        size_t adv;
        e->cps[ncp++] = wk_utf8_decode((const unsigned char *)s + i, n - i, &adv);
        i += adv;
    }
    wk_status st = wk_pretok_split(e->t->pretok, e->cps, ncp, &e->words, &e->scratch);
    size_t at = 0;
    for (size_t w = 0; w < e->words.n && st == WK_OK; w++) {
        e->word.n = 0;
        for (size_t i = at; i < at + e->words.v[w] && st == WK_OK; i++) {
            char u[4];
            size_t ul = wk_utf8_encode(e->cps[i], u);
            for (size_t j = 0; j < ul && st == WK_OK; j++) {
                unsigned char b = (unsigned char)u[j];
                st = buf_put(&e->word, e->t->byte_char[b], e->t->byte_char_len[b]);
            }
        }
        at += e->words.v[w];
        if (st == WK_OK) st = wk_bpe_word(e->t, e->word.p, e->word.n, &e->merge, &e->ids);
    }
    return st;
}

/* SentencePiece of a text fragment: optional leading space, spaces to U+2581. */
static wk_status spm_fragment(encoder *e, const char *s, size_t n, bool prefix_space) {
    e->text.n = 0;
    wk_status st = prefix_space ? buf_put(&e->text, "\xe2\x96\x81", 3) : WK_OK;
    size_t run = 0;
    for (size_t i = 0; i <= n && st == WK_OK; i++) {
        if (i == n || s[i] == ' ') {
            st = buf_put(&e->text, s + run, i - run);
            if (i < n && st == WK_OK) st = buf_put(&e->text, "\xe2\x96\x81", 3);
            run = i + 1;
        }
    }
    if (st != WK_OK) return st;
    return wk_spm_fragment(e->t, e->text.p, e->text.n, &e->merge, &e->ids);
}

static wk_status encode(encoder *e, const char *text, size_t len, bool add_special,
                        bool parse_special) {
    const wk_tokenizer *t = e->t;
    wk_status st = split_special(t, text, len, parse_special, &e->frags, &e->tmp);
    if (st == WK_OK && add_special && t->add_bos && t->bos >= 0)
        st = wk_idvec_push(&e->ids, t->bos);
    bool prev_special = true; /* SentencePiece: a space before the first text */
    for (size_t f = 0; f < e->frags.n && st == WK_OK; f++) {
        fragment fr = e->frags.v[f];
        if (fr.id >= 0) {
            st = wk_idvec_push(&e->ids, fr.id);
            prev_special = true;
        } else if (t->kind == WK_TOK_BPE) {
            st = bpe_fragment(e, text + fr.off, fr.len);
        } else {
            st = spm_fragment(e, text + fr.off, fr.len, t->add_space_prefix && prev_special);
            prev_special = false;
        }
    }
    if (st == WK_OK && add_special && t->add_eos && t->eos >= 0)
        st = wk_idvec_push(&e->ids, t->eos);
    return st;
}

static wk_status check_args(const wk_tokenizer *t, const char *text, size_t len) {
    if (!t) return wk_fail(WK_ERR_INVALID, "tokenizer: NULL tokenizer");
    if (!text && len) return wk_fail(WK_ERR_INVALID, "tokenizer: NULL text of %zu bytes", len);
    /* Symbol offsets are 32-bit and byte-level words take up to twice the bytes. */
    if (len > WK_TOKENIZER_MAX_TEXT)
        return wk_fail(WK_ERR_INVALID, "tokenizer: text of %zu bytes exceeds the limit of %zu", len,
                       (size_t)WK_TOKENIZER_MAX_TEXT);
    return WK_OK;
}

wk_status wk_tokenizer_encode(const wk_tokenizer *t, const char *text, size_t len, bool add_special,
                              bool parse_special, int32_t *out, size_t cap, size_t *n) {
    *n = 0;
    wk_status st = check_args(t, text, len);
    if (st != WK_OK) return st;
    encoder e = {.t = t};
    st = encode(&e, text ? text : "", len, add_special, parse_special);
    if (st == WK_OK) {
        *n = e.ids.n;
        size_t k = e.ids.n < cap ? e.ids.n : cap;
        if (k) memcpy(out, e.ids.v, k * sizeof *out);
        if (e.ids.n > cap)
            st = wk_fail(WK_ERR_INVALID, "tokenizer: %zu tokens do not fit in %zu", e.ids.n, cap);
    }
    encoder_free(&e);
    return st;
}

wk_status wk_tokenizer_encode_alloc(const wk_tokenizer *t, const char *text, size_t len,
                                    bool add_special, bool parse_special, int32_t **out,
                                    size_t *n) {
    *out = NULL;
    *n = 0;
    wk_status st = check_args(t, text, len);
    if (st != WK_OK) return st;
    encoder e = {.t = t};
    st = encode(&e, text ? text : "", len, add_special, parse_special);
    if (st == WK_OK && !e.ids.v) st = wk_idvec_push(&e.ids, 0), e.ids.n = 0; /* never NULL */
    if (st == WK_OK) {
        *out = e.ids.v;
        *n = e.ids.n;
        e.ids.v = NULL;
    }
    encoder_free(&e);
    return st;
}

/* ---- decoding ---- */

wk_status wk_tokenizer_piece(const wk_tokenizer *t, int32_t id, bool render_special,
                             const char **bytes, size_t *len) {
    if (!id_ok(t, id)) {
        *bytes = "";
        *len = 0;
        return wk_fail(WK_ERR_INVALID, "tokenizer: token id %d is outside the vocabulary [0, %d)",
                       (int)id, t ? (int)t->n_vocab : 0);
    }
    if (!render_special && (t->attr[id] & (WK_ATTR_CONTROL | WK_ATTR_UNKNOWN))) {
        *bytes = "";
        *len = 0;
        return WK_OK;
    }
    *bytes = wk_tok_str(t, t->piece[id]);
    *len = t->piece[id].len;
    return WK_OK;
}

wk_status wk_tokenizer_token_to_piece(const wk_tokenizer *t, int32_t id, const char **piece,
                                      size_t *len) {
    return wk_tokenizer_piece(t, id, false, piece, len);
}

/* llama.cpp's space tidying after detokenizing, for BPE models that ask. */
static size_t clean_spaces(char *s, size_t n) {
    /* " ?", " !", " .", " ," lose the space. */
    size_t m = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) m--;
        s[m++] = x;
    }
    n = m;
    /* " ' " becomes "'". */
    m = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
            m--;
            s[++i] = 0;
        }
        s[m++] = x;
    }
    n = m;
    /* " 's", " 'm", " 're", " 've" lose the space. */
    m = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            char x1 = s[i + 1];
            if (x1 == 's' || x1 == 'm')
                m--;
            else if (i + 2 < n &&
                     ((x1 == 'r' && s[i + 2] == 'e') || (x1 == 'v' && s[i + 2] == 'e')))
                m--;
        }
        s[m++] = x;
    }
    return m;
}

wk_status wk_tokenizer_decode(const wk_tokenizer *t, const int32_t *ids, size_t n,
                              bool render_special, char *out, size_t cap, size_t *len) {
    *len = 0;
    buf b = {0};
    wk_status st = WK_OK;
    for (size_t i = 0; i < n && st == WK_OK; i++) {
        const char *p;
        size_t pl;
        st = wk_tokenizer_piece(t, ids[i], render_special, &p, &pl);
        if (st != WK_OK) {
            st = wk_fail_context(st, "decoding token %zu of %zu", i, n);
            break;
        }
        /* The space SentencePiece put in front of the text goes. */
        if (i == 0 && t->add_space_prefix && pl && p[0] == ' ') p++, pl--;
        st = buf_put(&b, p, pl);
    }
    if (st == WK_OK) {
        size_t m = b.n;
        if (t->clean_spaces && m) m = clean_spaces(b.p, m);
        *len = m;
        if (m > cap)
            st = wk_fail(WK_ERR_INVALID, "tokenizer: %zu bytes of text do not fit in %zu", m, cap);
        else {
            if (m) memcpy(out, b.p, m);
            if (cap > m) out[m] = 0;
        }
    }
    free(b.p);
    return st;
}

/* ---- streaming ---- */

void wk_detok_init(wk_detok_stream *s, const wk_tokenizer *tok, bool render_special) {
    memset(s, 0, sizeof *s);
    s->tok = tok;
    s->render_special = render_special;
}

size_t wk_detok_out_cap(const wk_tokenizer *tok) {
    return 3 * (tok->max_piece + 4) + 4;
}

/* Bytes a lead byte needs, 0 if it can never start a character. */
static size_t utf8_need(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) return 3;
    if (c >= 0xF0 && c <= 0xF4) return 4;
    return 0;
}

/* Whether byte k (>= 1) of a sequence led by c is acceptable (no overlong
 * forms, surrogates or values past U+10FFFF). */
static bool utf8_cont_ok(unsigned char c, size_t k, unsigned char b) {
    if ((b & 0xC0) != 0x80) return false;
    if (k != 1) return true;
    if (c == 0xE0) return b >= 0xA0;
    if (c == 0xED) return b <= 0x9F;
    if (c == 0xF0) return b >= 0x90;
    if (c == 0xF4) return b <= 0x8F;
    return true;
}

wk_status wk_detok_push(wk_detok_stream *s, int32_t id, char *out, size_t cap, size_t *len) {
    *len = 0;
    const char *p;
    size_t pl;
    wk_status st = wk_tokenizer_piece(s->tok, id, s->render_special, &p, &pl);
    if (st != WK_OK) return st;
    size_t need = 3 * (pl + s->n_held);
    if (cap < need)
        return wk_fail(WK_ERR_INVALID, "detokenizer: output of %zu bytes is too small (need %zu)",
                       cap, need);
    /* The held bytes, then the piece. */
    size_t o = 0, i = 0;
    size_t total = s->n_held + pl;
    const unsigned char *pp = (const unsigned char *)p;
#define AT(k) ((k) < s->n_held ? s->held[(k)] : pp[(k)-s->n_held])
    while (i < total) {
        unsigned char c = AT(i);
        size_t n = utf8_need(c);
        if (n == 1) {
            out[o++] = (char)c;
            i++;
            continue;
        }
        size_t k = 1;
        while (n && k < n && i + k < total && utf8_cont_ok(c, k, AT(i + k)))
            k++;
        if (n && k == n) {
            for (size_t j = 0; j < n; j++)
                out[o++] = (char)AT(i + j);
            i += n;
        } else if (n && i + k == total) {
            /* A valid start that the next tokens may complete: hold it. */
            unsigned char keep[4];
            for (size_t j = 0; j < k; j++)
                keep[j] = AT(i + j);
            memcpy(s->held, keep, k);
            s->n_held = k;
            *len = o;
            return WK_OK;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
#undef AT
    s->n_held = 0;
    *len = o;
    return WK_OK;
}

size_t wk_detok_flush(wk_detok_stream *s, char *out) {
    if (!s->n_held) return 0;
    s->n_held = 0;
    memcpy(out, "\xef\xbf\xbd", 3);
    return 3;
}
