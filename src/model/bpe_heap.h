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

/* Queues the pair (left, right) of adjacent symbols if it may merge, keyed by its
 * priority; a side of -1 queues nothing. BPE keys by merge rank, SentencePiece by
 * the merged token's score. */
typedef wk_status (*wk_queue_pair_fn)(const wk_tokenizer *t, const char *text, const wk_sym *sym,
                                      int32_t left, int32_t right, wk_pairq *q);

/* Split text into symbols and merge the best queued pair until none is left;
 * merged-away symbols keep n == 0. The heap stays in the scratch for the next call. */
static inline wk_status wk_merge_symbols(const wk_tokenizer *t, const char *text, size_t len,
                                         wk_merge_scratch *s, wk_queue_pair_fn queue_pair,
                                         wk_sym **out, size_t *n_out) {
    wk_sym *sym = NULL;
    size_t n_sym = 0;
    wk_status st = wk_syms_init(s, text, len, &sym, &n_sym);
    if (st != WK_OK) return st;
    wk_pairq q = {s->heap, 0, s->heap_cap};
    for (size_t i = 1; i < n_sym && st == WK_OK; i++)
        st = queue_pair(t, text, sym, (int32_t)i - 1, (int32_t)i, &q);
    while (q.n && st == WK_OK) {
        wk_pair p = wk_pairq_pop(&q);
        wk_sym *l = &sym[p.left], *r = &sym[p.right];
        if (l->n == 0 || r->n == 0 || l->n != p.ln || r->n != p.rn) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = p.left;
        st = queue_pair(t, text, sym, l->prev, p.left, &q);
        if (st == WK_OK) st = queue_pair(t, text, sym, p.left, l->next, &q);
    }
    s->heap = q.v;
    s->heap_cap = q.cap;
    *out = sym;
    *n_out = n_sym;
    return st;
}

#endif
