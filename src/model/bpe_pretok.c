/* wick: byte-level BPE pre-tokenizers. Each expression llama.cpp applies is a
 * pass that refines a list of segments (lengths in code points); the passes
 * follow the same matching rules, written as scanners instead of regexes. */
#include "model/bpe_pretok.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/unicode.h"

wk_status wk_lenvec_push(wk_lenvec *a, size_t x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        size_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu words", cap);
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return WK_OK;
}

void wk_lenvec_free(wk_lenvec *a) {
    free(a->v);
    memset(a, 0, sizeof *a);
}

wk_status wk_pretok_from_name(const char *name, wk_pretok *out, bool *clean_spaces) {
    /* clean_spaces: whether llama.cpp tidies spaces when detokenizing. */
    static const struct {
        const char *name;
        wk_pretok kind;
        bool clean;
    } names[] = {
        {"default", WK_PRETOK_DEFAULT, true},   {"gpt-2", WK_PRETOK_GPT2, true},
        {"phi-2", WK_PRETOK_GPT2, true},        {"mpt", WK_PRETOK_GPT2, true},
        {"olmo", WK_PRETOK_GPT2, true},         {"jais", WK_PRETOK_GPT2, true},
        {"smollm", WK_PRETOK_SMOLLM, false},    {"starcoder", WK_PRETOK_SMOLLM, true},
        {"refact", WK_PRETOK_SMOLLM, true},     {"codeshell", WK_PRETOK_SMOLLM, true},
        {"exaone", WK_PRETOK_SMOLLM, true},     {"minerva-7b", WK_PRETOK_SMOLLM, true},
        {"command-r", WK_PRETOK_SMOLLM, false}, {"llama3", WK_PRETOK_LLAMA3, true},
        {"llama-v3", WK_PRETOK_LLAMA3, true},   {"llama-bpe", WK_PRETOK_LLAMA3, true},
        {"falcon3", WK_PRETOK_LLAMA3, true},    {"pixtral", WK_PRETOK_LLAMA3, true},
        {"qwen2", WK_PRETOK_QWEN2, false},      {"deepseek-r1-qwen", WK_PRETOK_QWEN2, false},
        {"stablelm2", WK_PRETOK_QWEN2, true},   {"megrez", WK_PRETOK_QWEN2, true},
    };
    if (!name || !*name) {
        *out = WK_PRETOK_DEFAULT;
        *clean_spaces = true;
        return WK_OK;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(names[i].name, name) == 0) {
            *out = names[i].kind;
            *clean_spaces = names[i].clean;
            return WK_OK;
        }
    }
    return wk_fail(WK_ERR_UNSUPPORTED,
                   "tokenizer.ggml.pre '%s' is not a pre-tokenizer wick knows (known: default, "
                   "gpt-2, smollm, starcoder, llama3, llama-bpe, qwen2, ...)",
                   name);
}

/* ---- code point classes, bounded to the segment [a, b) ---- */

typedef struct seg_view {
    const uint32_t *cps;
    size_t a, b;
} seg_view;

#define OOR 0xFFFFFFFFu

static inline uint32_t cp_at(const seg_view *s, size_t i) {
    return (i >= s->a && i < s->b) ? s->cps[i] : OOR;
}
static inline bool in_seg(const seg_view *s, size_t i) {
    return i >= s->a && i < s->b;
}
static inline bool is_letter(const seg_view *s, size_t i) {
    return in_seg(s, i) && wk_unicode_cat(s->cps[i]) == WK_UCAT_LETTER;
}
static inline bool is_number(const seg_view *s, size_t i) {
    return in_seg(s, i) && wk_unicode_cat(s->cps[i]) == WK_UCAT_NUMBER;
}
static inline bool is_space(const seg_view *s, size_t i) {
    return in_seg(s, i) && wk_unicode_is_space(s->cps[i]);
}
/* [^\s\p{L}\p{N}] inside the segment. */
static inline bool is_other(const seg_view *s, size_t i) {
    if (!in_seg(s, i)) return false;
    uint32_t c = s->cps[i];
    wk_ucat k = wk_unicode_cat(c);
    return !wk_unicode_is_space(c) && k != WK_UCAT_LETTER && k != WK_UCAT_NUMBER;
}
static inline uint32_t ascii_lower(uint32_t c) {
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

/* 's 't 're 've 'm 'll 'd at pos (case-folded when fold): the match length or 0. */
static size_t contraction(const seg_view *s, size_t pos, bool fold) {
    if (s->cps[pos] != '\'' || pos + 1 >= s->b) return 0;
    uint32_t n1 = s->cps[pos + 1];
    if (fold) n1 = ascii_lower(n1);
    if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') return 2;
    if (pos + 2 < s->b) {
        uint32_t n2 = s->cps[pos + 2];
        if (fold) n2 = ascii_lower(n2);
        if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l'))
            return 3;
    }
    return 0;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static wk_status pass_gpt2(const seg_view *s, wk_lenvec *out) {
    size_t pos = s->a;
    wk_status st = WK_OK;
    while (pos < s->b && st == WK_OK) {
        size_t start = pos;
        uint32_t c = s->cps[pos];
        size_t n = contraction(s, pos, false);
        if (n) {
            pos += n;
        } else {
            size_t p2 = c == ' ' ? pos + 1 : pos; /* the optional leading space */
            if (is_letter(s, p2)) {
                pos = p2;
                while (is_letter(s, pos))
                    pos++;
            } else if (is_number(s, p2)) {
                pos = p2;
                while (is_number(s, pos))
                    pos++;
            } else if (is_other(s, p2)) {
                pos = p2;
                while (is_other(s, pos))
                    pos++;
            } else {
                size_t nws = 0;
                while (is_space(s, pos + nws))
                    nws++;
                if (nws > 1 && in_seg(s, pos + nws))
                    pos += nws - 1; /* leave the last space to the word after it */
                else if (nws > 0)
                    pos += nws;
                else
                    pos++;
            }
        }
        st = wk_lenvec_push(out, pos - start);
    }
    return st;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static wk_status pass_llama3(const seg_view *s, size_t max_digits, wk_lenvec *out) {
    size_t pos = s->a;
    wk_status st = WK_OK;
    while (pos < s->b && st == WK_OK) {
        size_t start = pos;
        uint32_t c = s->cps[pos];
        size_t n = contraction(s, pos, true);
        if (n) {
            st = wk_lenvec_push(out, n);
            pos += n;
            continue;
        }
        if (!(c == '\r' || c == '\n' || is_number(s, pos)) &&
            (is_letter(s, pos) || is_letter(s, pos + 1))) {
            pos++;
            while (is_letter(s, pos))
                pos++;
        } else if (is_number(s, pos)) {
            /* Numbers in groups of max_digits from the left. */
            while (is_number(s, pos) && st == WK_OK) {
                size_t g = 0;
                while (g < max_digits && is_number(s, pos)) {
                    pos++;
                    g++;
                }
                st = wk_lenvec_push(out, g);
            }
            continue;
        } else if (!in_seg(s, c == ' ' ? pos + 1 : pos) || is_other(s, c == ' ' ? pos + 1 : pos)) {
            pos += c == ' ';
            while (is_other(s, pos))
                pos++;
            while (cp_at(s, pos) == '\r' || cp_at(s, pos) == '\n')
                pos++;
        } else {
            size_t nws = 0, last_rn = 0;
            while (is_space(s, pos + nws)) {
                uint32_t w = s->cps[pos + nws];
                if (w == '\r' || w == '\n') last_rn = pos + nws + 1;
                nws++;
            }
            if (last_rn)
                pos = last_rn; /* \s*[\r\n]+ */
            else if (nws > 1 && in_seg(s, pos + nws))
                pos += nws - 1;
            else if (nws > 0)
                pos += nws;
            else
                pos++;
        }
        st = wk_lenvec_push(out, pos - start);
    }
    return st;
}

/* A regex that matches single code points of a class, alone (\p{N}) or in
 * runs ([...]+): matches and the gaps between them each become a segment. */
static wk_status pass_class(const seg_view *s, bool (*pred)(uint32_t), bool runs, wk_lenvec *out) {
    size_t pos = s->a;
    wk_status st = WK_OK;
    while (pos < s->b && st == WK_OK) {
        size_t start = pos;
        if (pred(s->cps[pos])) {
            pos++;
            if (runs)
                while (pos < s->b && pred(s->cps[pos]))
                    pos++;
        } else {
            while (pos < s->b && !pred(s->cps[pos]))
                pos++;
        }
        st = wk_lenvec_push(out, pos - start);
    }
    return st;
}

static bool pred_number(uint32_t c) {
    return wk_unicode_cat(c) == WK_UCAT_NUMBER;
}
/* [\p{P}\$\+<=>\^~\|] */
static bool pred_punct(uint32_t c) {
    if (c < 0x80 && c && strchr("$+<=>^~|", (int)c)) return true;
    return wk_unicode_cat(c) == WK_UCAT_PUNCT;
}
static bool is_digit(uint32_t c) {
    return c >= '0' && c <= '9';
}

/* [0-9][0-9][0-9]: leftmost non-overlapping triples of ASCII digits. */
static wk_status pass_digit_triples(const seg_view *s, wk_lenvec *out) {
    size_t gap = s->a, i = s->a;
    wk_status st = WK_OK;
    while (i + 3 <= s->b && st == WK_OK) {
        if (is_digit(s->cps[i]) && is_digit(s->cps[i + 1]) && is_digit(s->cps[i + 2])) {
            if (i > gap) st = wk_lenvec_push(out, i - gap);
            if (st == WK_OK) st = wk_lenvec_push(out, 3);
            i += 3;
            gap = i;
        } else {
            i++;
        }
    }
    if (st == WK_OK && s->b > gap) st = wk_lenvec_push(out, s->b - gap);
    return st;
}

typedef enum pass_kind {
    PASS_GPT2,
    PASS_LLAMA3,
    PASS_QWEN2,
    PASS_NUMBER_EACH,
    PASS_NUMBER_RUNS,
    PASS_PUNCT_RUNS,
    PASS_DIGIT_TRIPLES,
} pass_kind;

static wk_status run_pass(pass_kind kind, const uint32_t *cps, const wk_lenvec *in,
                          wk_lenvec *out) {
    out->n = 0;
    size_t a = 0;
    wk_status st = WK_OK;
    for (size_t i = 0; i < in->n && st == WK_OK; i++) {
        seg_view s = {cps, a, a + in->v[i]};
        a = s.b;
        switch (kind) {
        case PASS_GPT2:
            st = pass_gpt2(&s, out);
            break;
        case PASS_LLAMA3:
            st = pass_llama3(&s, 3, out);
            break;
        case PASS_QWEN2:
            st = pass_llama3(&s, 1, out);
            break;
        case PASS_NUMBER_EACH:
            st = pass_class(&s, pred_number, false, out);
            break;
        case PASS_NUMBER_RUNS:
            st = pass_class(&s, pred_number, true, out);
            break;
        case PASS_PUNCT_RUNS:
            st = pass_class(&s, pred_punct, true, out);
            break;
        case PASS_DIGIT_TRIPLES:
            st = pass_digit_triples(&s, out);
            break;
        }
    }
    return st;
}

wk_status wk_pretok_split(wk_pretok kind, const uint32_t *cps, size_t n, wk_lenvec *words,
                          wk_lenvec *scratch) {
    static const pass_kind p_default[] = {PASS_PUNCT_RUNS, PASS_GPT2, PASS_NUMBER_RUNS,
                                          PASS_DIGIT_TRIPLES};
    static const pass_kind p_gpt2[] = {PASS_GPT2};
    static const pass_kind p_smollm[] = {PASS_NUMBER_EACH, PASS_GPT2};
    static const pass_kind p_llama3[] = {PASS_LLAMA3};
    static const pass_kind p_qwen2[] = {PASS_QWEN2};
    const pass_kind *passes;
    size_t n_passes;
    switch (kind) {
    case WK_PRETOK_GPT2:
        passes = p_gpt2, n_passes = 1;
        break;
    case WK_PRETOK_SMOLLM:
        passes = p_smollm, n_passes = 2;
        break;
    case WK_PRETOK_LLAMA3:
        passes = p_llama3, n_passes = 1;
        break;
    case WK_PRETOK_QWEN2:
        passes = p_qwen2, n_passes = 1;
        break;
    default:
        passes = p_default, n_passes = 4;
        break;
    }
    words->n = 0;
    if (n == 0) return WK_OK;
    wk_status st = wk_lenvec_push(words, n);
    /* Alternate between the two buffers; the result ends in words. */
    wk_lenvec *cur = words, *next = scratch;
    for (size_t p = 0; p < n_passes && st == WK_OK; p++) {
        st = run_pass(passes[p], cps, cur, next);
        wk_lenvec *t = cur;
        cur = next;
        next = t;
    }
    if (st == WK_OK && cur != words) {
        wk_lenvec t = *words;
        *words = *scratch;
        *scratch = t;
    }
    return st;
}
