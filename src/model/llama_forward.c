/* The Llama forward: a batch of tokens at a position, through every block, to logits.
 * It calls only the device's operation table (backend.h), so it reads the same on every
 * device. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/llama.h"

/* Several matmuls of one input: as one piece of work where the device offers it. */
static wk_status matmuls(const wk_backend *be, wk_engine *e, int count, wk_qmatmul *const *mm,
                         const float *x, int64_t n, float *const *y)
{
    if (be->matmuls) return be->matmuls(e, count, mm, x, n, y);
    for (int i = 0; i < count; i++) {
        wk_status st = be->matmul(e, mm[i], x, n, y[i]);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

/* One batch of at most max_batch tokens at positions pos .. pos+n-1; the logits of the
 * rows that want them end up in logits_host, or (token_host, last row only) just the id of
 * the largest, chosen on the device. tokens NULL (one row): the id the device chose last.
 * later: token_host is filled by the backend's collect, not before this returns. */
static wk_status forward_batch(wk_model *m, const int32_t *tokens, int64_t n, int64_t pos,
                               bool all_logits, float *logits_host, int32_t *token_host, bool later)
{
    const wk_model_info *h = &m->info;
    const wk_backend *be = m->be;
    wk_engine *e = m->engine;
    wk_llama_state *s = &m->st;
    int64_t dim = h->dim, kv_dim = m->kv_dim, ff = h->ff_dim;
    size_t layer_kv = (size_t)h->n_ctx * (size_t)kv_dim;
    wk_status st;
#define RUN(call)                                                                                  \
    do {                                                                                           \
        if ((st = (call)) != WK_OK) return st;                                                     \
    } while (0)

    /* Token embeddings: rows of the (quantized) table. The id the device chose last is
     * read where the choice left it (on the GPU a copy there would be a round trip). */
    if (tokens) RUN(be->upload(e, s->ids, tokens, (size_t)n * sizeof(int32_t)));
    RUN(be->embed_rows(e, m->tok_embd, tokens ? s->ids : s->best, n, s->x));

    for (int64_t li = 0; li < h->n_layers; li++) {
        const wk_llama_layer *l = &m->layers[li];
        float *k_cache = s->k_cache + (size_t)li * layer_kv;
        float *v_cache = s->v_cache + (size_t)li * layer_kv;
        float *k_new = k_cache + (size_t)pos * kv_dim, *v_new = v_cache + (size_t)pos * kv_dim;

        /* Attention: normalize, project to q and to this batch's cache rows of k and v. */
        RUN(be->rmsnorm(e, s->xb, s->x, l->attn_norm, n, dim, h->rms_eps));
        {
            wk_qmatmul *const mm[3] = {l->wq, l->wk, l->wv};
            float *const y[3] = {s->q, k_new, v_new};
            RUN(matmuls(be, e, 3, mm, s->xb, n, y));
        }
        /* Rotate queries and keys by their positions. */
        RUN(be->rope(e, s->q, n, h->n_heads, h->head_dim, h->n_rot, pos, h->rope_base));
        RUN(be->rope(e, k_new, n, h->n_kv_heads, h->head_dim, h->n_rot, pos, h->rope_base));
        /* Each query attends to every earlier position, its kv head shared by a group. */
        RUN(be->attention(e, s->att, s->q, k_cache, v_cache, n, pos, h->n_heads, h->n_kv_heads,
                          h->head_dim));
        /* Output projection, added to the residual stream. */
        RUN(be->matmul(e, l->wo, s->att, n, s->xb));
        RUN(be->add(e, s->x, s->xb, n * dim));

        /* MLP: normalize, down(silu(gate(x)) * up(x)), added to the residual stream. */
        RUN(be->rmsnorm(e, s->xb, s->x, l->ffn_norm, n, dim, h->rms_eps));
        {
            wk_qmatmul *const mm[2] = {l->w_gate, l->w_up};
            float *const y[2] = {s->hb, s->hb2};
            RUN(matmuls(be, e, 2, mm, s->xb, n, y));
        }
        RUN(be->silu_mul(e, s->hb, s->hb2, n * ff));
        RUN(be->matmul(e, l->w_down, s->hb, n, s->xb));
        RUN(be->add(e, s->x, s->xb, n * dim));
    }

    if (!logits_host && !token_host) return WK_OK;
    /* Final norm and the output projection, for the last row or every row. */
    int64_t first = all_logits ? 0 : n - 1, rows = n - first;
    RUN(be->rmsnorm(e, s->xb, s->x + first * dim, m->output_norm, rows, dim, h->rms_eps));
    if (rows > s->logits_rows) {
        be->free(e, s->logits);
        s->logits = NULL;
        RUN(be->alloc(e, (size_t)s->max_batch * h->n_vocab * sizeof(float), (void **)&s->logits));
        s->logits_rows = s->max_batch;
    }
    RUN(be->matmul(e, m->output, s->xb, rows, s->logits));
    if (token_host) {
        RUN(be->argmax(e, s->logits, h->n_vocab, s->best));
        RUN((later ? be->download_later : be->download)(e, token_host, s->best, sizeof(int32_t)));
    } else {
        RUN(be->download(e, logits_host, s->logits, (size_t)rows * h->n_vocab * sizeof(float)));
    }
#undef RUN
    return WK_OK;
}

/* The checks and the batches of both entry points below. */
static wk_status forward(wk_model *m, const int32_t *tokens, int64_t n, int64_t pos, bool all_logits,
                         float *logits, int32_t *token)
{
    const wk_model_info *h = &m->info;
    if (n <= 0) return wk_fail(WK_ERR_INVALID, "forward of %lld tokens", (long long)n);
    if (pos < 0 || pos > m->n_past)
        return wk_fail(WK_ERR_INVALID, "position %lld is not within the %lld tokens in the cache",
                       (long long)pos, (long long)m->n_past);
    if (n > h->n_ctx - pos)
        return wk_fail(WK_ERR_INVALID,
                       "%lld tokens at position %lld do not fit the context of %lld tokens",
                       (long long)n, (long long)pos, (long long)h->n_ctx);
    for (int64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= h->n_vocab)
            return wk_fail(WK_ERR_INVALID, "token %lld is id %d, outside the vocabulary of %lld",
                           (long long)i, (int)tokens[i], (long long)h->n_vocab);
    /* Long inputs go through in batches; each batch's keys and values stay in the cache. */
    m->n_past = pos;
    for (int64_t done = 0; done < n;) {
        int64_t b = n - done < m->st.max_batch ? n - done : m->st.max_batch;
        bool last = done + b == n;
        float *out = all_logits ? logits + done * h->n_vocab : (last ? logits : NULL);
        wk_status st = forward_batch(m, tokens + done, b, pos + done, all_logits, out, last ? token : NULL, false);
        if (st != WK_OK) return st;
        done += b;
        m->n_past = pos + done;
    }
    return WK_OK;
}

wk_status wk_model_forward(wk_model *m, const int32_t *tokens, int64_t n, int64_t pos,
                           bool all_logits, float *logits)
{
    return forward(m, tokens, n, pos, all_logits, logits, NULL);
}

wk_status wk_model_forward_greedy(wk_model *m, const int32_t *tokens, int64_t n, int64_t pos,
                                  int32_t *token)
{
    return forward(m, tokens, n, pos, false, NULL, token);
}

void wk_model_reset(wk_model *m) { m->n_past = 0; }

/* Worth it where the device runs apart from the host (on the CPU the step queued past a
 * stop is a whole forward for nothing); WICK_DECODE_AHEAD=1 takes it on the CPU too (the
 * tests compare the two loops there), =0 nowhere (for measuring). */
bool wk_model_greedy_can_queue(const wk_model *m)
{
    if (!m->be->download_later || !m->be->collect) return false;
    const char *e = getenv("WICK_DECODE_AHEAD");
    if (e && strcmp(e, "0") == 0) return false;
    return m->be->device != WK_DEVICE_CPU || (e && strcmp(e, "1") == 0);
}

wk_status wk_model_greedy_queue(wk_model *m, int32_t *out)
{
    const int64_t pos = m->n_past;
    if (pos >= m->info.n_ctx)
        return wk_fail(WK_ERR_INVALID, "no room for a token at position %lld in the context of %lld",
                       (long long)pos, (long long)m->info.n_ctx);
    wk_status st = forward_batch(m, NULL, 1, pos, false, NULL, out, true);
    if (st == WK_OK) m->n_past = pos + 1;
    return st;
}

wk_status wk_model_greedy_collect(wk_model *m) { return m->be->collect(m->engine); }
