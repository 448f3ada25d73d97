/* wick: byte-level BPE merges of one word. Adjacent pairs that the merge list
 * knows are queued by rank; the best pair merges, its neighbours are queued
 * anew, and pairs whose symbols have changed since are skipped. */
#include "model/bpe_heap.h"

#include <string.h>

static wk_status queue_pair(const wk_tokenizer *t, const char *word, const wk_sym *sym,
                            int32_t left, int32_t right, wk_pairq *q) {
    if (left < 0 || right < 0) return WK_OK;
    const wk_sym *l = &sym[left], *r = &sym[right];
    int32_t rank = wk_tokenizer_merge_rank(t, word + l->off, l->n, word + r->off, r->n);
    if (rank < 0) return WK_OK;
    wk_pair p = {-(double)rank, left, right, l->n, r->n};
    return wk_pairq_push(q, p);
}

wk_status wk_bpe_word(const wk_tokenizer *t, const char *word, size_t len, wk_merge_scratch *s,
                      wk_idvec *out) {
    if (len == 0) return WK_OK;
    /* Llama 3's pre-tokenizers take a word that is a token as it is. */
    if (t->ignore_merges) {
        int32_t id = wk_tokenizer_find(t, word, len);
        if (id >= 0) return wk_idvec_push(out, id);
    }
    wk_sym *sym = NULL;
    size_t n_sym = 0;
    wk_status st = wk_merge_symbols(t, word, len, s, queue_pair, &sym, &n_sym);
    for (size_t i = 0; i < n_sym && st == WK_OK; i++) {
        if (sym[i].n == 0) continue;
        int32_t id = wk_tokenizer_find(t, word + sym[i].off, sym[i].n);
        if (id >= 0) {
            st = wk_idvec_push(out, id);
            continue;
        }
        /* No token for the symbol: its bytes one by one, where they are tokens. */
        for (uint32_t j = 0; j < sym[i].n && st == WK_OK; j++) {
            int32_t b = wk_tokenizer_find(t, word + sym[i].off + j, 1);
            if (b >= 0) st = wk_idvec_push(out, b);
        }
    }
    return st;
}
