/* wick: SentencePiece-style merges of one fragment. Adjacent pairs whose
 * concatenation is a token are queued by that token's score; the best merges
 * first. Symbols left that are not tokens fall back to byte tokens <0xNN>
 * (or a token that is the byte itself), else the unknown token. */
#include "model/bpe_heap.h"

#include <stdio.h>

static wk_status queue_pair(const wk_tokenizer *t, const char *text, const wk_sym *sym,
                            int32_t left, int32_t right, wk_pairq *q) {
    if (left < 0 || right < 0) return WK_OK;
    const wk_sym *l = &sym[left], *r = &sym[right];
    /* The two symbols are adjacent in the text. */
    int32_t id = wk_tokenizer_find(t, text + l->off, (size_t)l->n + r->n);
    if (id < 0) return WK_OK;
    wk_pair p = {(double)t->score[id], left, right, l->n, r->n};
    return wk_pairq_push(q, p);
}

static wk_status push_byte(const wk_tokenizer *t, unsigned char b, wk_idvec *out) {
    char hex[8];
    snprintf(hex, sizeof hex, "<0x%02X>", b);
    int32_t id = wk_tokenizer_find(t, hex, 6);
    if (id < 0) id = wk_tokenizer_find(t, (const char *)&b, 1);
    if (id < 0) id = t->unk;
    return id >= 0 ? wk_idvec_push(out, id) : WK_OK;
}

wk_status wk_spm_fragment(const wk_tokenizer *t, const char *text, size_t len, wk_merge_scratch *s,
                          wk_idvec *out) {
    if (len == 0) return WK_OK;
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
        if (l->n == 0 || r->n == 0 || l->n != p.ln || r->n != p.rn) continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = p.left;
        st = queue_pair(t, text, sym, l->prev, p.left, &q);
        if (st == WK_OK) st = queue_pair(t, text, sym, p.left, l->next, &q);
    }
    s->heap = q.v;
    s->heap_cap = q.cap;
    for (size_t i = 0; i < n_sym && st == WK_OK; i++) {
        if (sym[i].n == 0) continue;
        int32_t id = wk_tokenizer_find(t, text + sym[i].off, sym[i].n);
        if (id >= 0) {
            st = wk_idvec_push(out, id);
            continue;
        }
        for (uint32_t j = 0; j < sym[i].n && st == WK_OK; j++)
            st = push_byte(t, (unsigned char)text[sym[i].off + j], out);
    }
    return st;
}
