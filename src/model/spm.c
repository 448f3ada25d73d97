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
    wk_status st = wk_merge_symbols(t, text, len, s, queue_pair, &sym, &n_sym);
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
