/* Internal: the symbol chain and pair queue shared by the BPE and
 * SentencePiece merge loops. Pairs pop by the highest key, then the leftmost
 * position, the order llama.cpp's priority queues give. */
#ifndef WICK_MODEL_BPE_HEAP_H
#define WICK_MODEL_BPE_HEAP_H

#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "model/tokenizer_internal.h"
#include "model/unicode.h"

typedef struct wk_sym {
    int32_t prev, next;
    uint32_t off, n; /* bytes of the word; n == 0 once merged away */
} wk_sym;

typedef struct wk_pair {
    double key; /* BPE: -rank; SentencePiece: the merged token's score */
    int32_t left, right;
    uint32_t ln, rn; /* the symbols' lengths when queued: stale if they changed */
} wk_pair;

static inline int wk_pair_before(const wk_pair *a, const wk_pair *b) {
    return a->key > b->key || (a->key == b->key && a->left < b->left);
}

typedef struct wk_pairq {
    wk_pair *v;
    size_t n, cap;
} wk_pairq;

static inline wk_status wk_pairq_push(wk_pairq *q, wk_pair p) {
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        wk_pair *v = realloc(q->v, cap * sizeof *v);
        if (!v) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu merge pairs", cap);
        q->v = v;
        q->cap = cap;
    }
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!wk_pair_before(&p, &q->v[parent])) break;
        q->v[i] = q->v[parent];
        i = parent;
    }
    q->v[i] = p;
    return WK_OK;
}

static inline wk_pair wk_pairq_pop(wk_pairq *q) {
    wk_pair top = q->v[0];
    wk_pair last = q->v[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n) break;
        if (c + 1 < q->n && wk_pair_before(&q->v[c + 1], &q->v[c])) c++;
        if (!wk_pair_before(&q->v[c], &last)) break;
        q->v[i] = q->v[c];
        i = c;
    }
    if (q->n) q->v[i] = last;
    return top;
}

/* Split a word into one symbol per UTF-8 sequence (by lead byte, clipped to
 * the end), linked in order; the array comes from the scratch. */
static inline wk_status wk_syms_init(wk_merge_scratch *s, const char *word, size_t len,
                                     wk_sym **out, size_t *n_out) {
    if (s->symbols_cap < len) {
        wk_sym *v = realloc(s->symbols, len * sizeof *v);
        if (!v) return wk_fail(WK_ERR_NOMEM, "tokenizer: out of memory for %zu symbols", len);
        s->symbols = v;
        s->symbols_cap = len;
    }
    wk_sym *sym = s->symbols;
    size_t n = 0, off = 0;
    while (off < len) {
        size_t l = wk_utf8_lead_len((unsigned char)word[off]);
        if (l > len - off) l = len - off;
        sym[n].prev = (int32_t)n - 1;
        sym[n].off = (uint32_t)off;
        sym[n].n = (uint32_t)l;
        off += l;
        sym[n].next = off == len ? -1 : (int32_t)n + 1;
        n++;
    }
    *out = sym;
    *n_out = n;
    return WK_OK;
}

#endif
