/* Building a Llama model from a GGUF file: hyperparameters from the metadata, every
 * tensor checked for presence, type and shape, each projection made a QMatMul, and the
 * KV cache sized and checked against memory before it is allocated. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "model/llama.h"
#include "quant/traits.h"

enum { MAX_BATCH = 256, MAX_HEAD_DIM = 512, MAX_LAYERS = 4096 };

void wk_model_options_init(wk_model_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->device = WK_DEVICE_CPU;
    opt->form = WK_FORM_AUTO;
}

/* ---- hyperparameters ------------------------------------------------------------- */

/* "<arch>.<suffix>" */
static const char *arch_key(char *buf, size_t cap, const char *arch, const char *suffix)
{
    snprintf(buf, cap, "%s.%s", arch, suffix);
    return buf;
}

static wk_status get_count(const wk_gguf *g, const char *arch, const char *suffix, bool required,
                           int64_t dflt, int64_t max, int64_t *out)
{
    char key[160];
    arch_key(key, sizeof key, arch, suffix);
    if (wk_gguf_find_key(g, key) < 0) {
        if (required)
            return wk_fail(WK_ERR_FORMAT, "%s: missing metadata key '%s'", wk_gguf_path(g), key);
        *out = dflt;
        return WK_OK;
    }
    uint64_t v;
    wk_status st = wk_gguf_get_u64(g, key, &v);
    if (st != WK_OK) return st;
    if (v == 0 || v > (uint64_t)max)
        return wk_fail(WK_ERR_FORMAT, "%s: '%s' is %llu, expected 1 to %lld", wk_gguf_path(g), key,
                       (unsigned long long)v, (long long)max);
    *out = (int64_t)v;
    return WK_OK;
}

static wk_status get_positive_f32(const wk_gguf *g, const char *arch, const char *suffix,
                                  float dflt, float *out)
{
    char key[160];
    arch_key(key, sizeof key, arch, suffix);
    if (wk_gguf_find_key(g, key) < 0) {
        *out = dflt;
        return WK_OK;
    }
    wk_status st = wk_gguf_get_f32(g, key, out);
    if (st != WK_OK) return st;
    if (!(*out > 0.0f) || !isfinite(*out))
        return wk_fail(WK_ERR_FORMAT, "%s: '%s' is %g, expected a positive number",
                       wk_gguf_path(g), key, (double)*out);
    return WK_OK;
}

static wk_status read_hparams(wk_model *m)
{
    const wk_gguf *g = m->gguf;
    const char *path = wk_gguf_path(g);
    const char *arch;
    wk_status st = wk_gguf_get_str(g, "general.architecture", &arch, NULL);
    if (st != WK_OK) return st;
    if (strcmp(arch, "llama") != 0)
        return wk_fail(WK_ERR_UNSUPPORTED,
                       "%s: architecture '%s' is not supported (wick runs 'llama' models)", path,
                       arch);
    wk_model_info *h = &m->info;
    const int64_t big = (int64_t)1 << 24;
    if ((st = get_count(g, arch, "block_count", true, 0, MAX_LAYERS, &h->n_layers)) ||
        (st = get_count(g, arch, "embedding_length", true, 0, big, &h->dim)) ||
        (st = get_count(g, arch, "feed_forward_length", true, 0, big, &h->ff_dim)) ||
        (st = get_count(g, arch, "attention.head_count", true, 0, big, &h->n_heads)) ||
        (st = get_count(g, arch, "attention.head_count_kv", false, h->n_heads, big,
                        &h->n_kv_heads)) ||
        (st = get_count(g, arch, "context_length", true, 0, (int64_t)1 << 30, &h->n_ctx_train)))
        return st;
    if (h->dim % h->n_heads != 0)
        return wk_fail(WK_ERR_FORMAT, "%s: embedding_length %lld is not divisible by head_count %lld",
                       path, (long long)h->dim, (long long)h->n_heads);
    if (h->n_heads % h->n_kv_heads != 0)
        return wk_fail(WK_ERR_FORMAT, "%s: head_count %lld is not divisible by head_count_kv %lld",
                       path, (long long)h->n_heads, (long long)h->n_kv_heads);
    h->head_dim = h->dim / h->n_heads;
    if (h->head_dim % 2 != 0 || h->head_dim > MAX_HEAD_DIM)
        return wk_fail(WK_ERR_UNSUPPORTED, "%s: head dimension %lld (embedding_length / head_count) "
                       "must be even and at most %d", path, (long long)h->head_dim, MAX_HEAD_DIM);
    if ((st = get_count(g, arch, "rope.dimension_count", false, h->head_dim, big, &h->n_rot)))
        return st;
    if (h->n_rot % 2 != 0 || h->n_rot > h->head_dim)
        return wk_fail(WK_ERR_FORMAT, "%s: rope.dimension_count %lld must be even and at most the "
                       "head dimension %lld", path, (long long)h->n_rot, (long long)h->head_dim);
    if ((st = get_positive_f32(g, arch, "rope.freq_base", 10000.0f, &h->rope_base)) ||
        (st = get_positive_f32(g, arch, "attention.layer_norm_rms_epsilon", 1e-5f, &h->rms_eps)))
        return st;
    m->kv_dim = h->n_kv_heads * h->head_dim;
    return WK_OK;
}

/* ---- tensors ----------------------------------------------------------------------- */

/* The tensor `name` with GGUF shape (ne0[, ne1]) (innermost first), or an error. */
static wk_status find_tensor(const wk_model *m, const char *name, int64_t ne0, int64_t ne1,
                             const wk_gguf_tensor **out)
{
    const char *path = wk_gguf_path(m->gguf);
    const wk_gguf_tensor *t = wk_gguf_find_tensor(m->gguf, name);
    if (!t) return wk_fail(WK_ERR_FORMAT, "%s: missing tensor '%s'", path, name);
    int want_dims = ne1 > 0 ? 2 : 1;
    bool ok = t->ne[0] == ne0 && t->ne[1] == (ne1 > 0 ? ne1 : 1) && t->ne[2] == 1 && t->ne[3] == 1;
    if (!ok) {
        if (want_dims == 2)
            return wk_fail(WK_ERR_FORMAT,
                           "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                           path, name, (long long)t->ne[0], (long long)t->ne[1],
                           (long long)t->ne[2], (long long)t->ne[3], (long long)ne0, (long long)ne1);
        return wk_fail(WK_ERR_FORMAT, "%s: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld]",
                       path, name, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                       (long long)t->ne[3], (long long)ne0);
    }
    if (!wk_traits(t->type))
        return wk_fail(WK_ERR_FORMAT, "%s: tensor '%s' has unknown type %d", path, name, (int)t->type);
    *out = t;
    return WK_OK;
}

/* A norm weight of dim elements, dequantized to f32 and placed in device memory. */
static wk_status load_norm(wk_model *m, const char *name, float **out)
{
    const wk_gguf_tensor *t = NULL;
    int64_t dim = m->info.dim;
    wk_status st = find_tensor(m, name, dim, 0, &t);
    if (st != WK_OK) return st;
    const wk_type_traits *tr = wk_traits(t->type);
    if (dim % tr->block_size != 0)
        return wk_fail(WK_ERR_FORMAT, "%s: tensor '%s': %lld elements are not whole %s blocks",
                       wk_gguf_path(m->gguf), name, (long long)dim, tr->name);
    float *host = malloc((size_t)dim * sizeof(float));
    if (!host) return wk_fail(WK_ERR_NOMEM, "cannot allocate a norm weight of %lld floats", (long long)dim);
    tr->to_f32(t->data, host, dim);
    st = m->be->alloc(m->engine, (size_t)dim * sizeof(float), (void **)out);
    if (st == WK_OK) st = m->be->upload(m->engine, *out, host, (size_t)dim * sizeof(float));
    free(host);
    return st;
}

/* Wrap a [rows, cols] tensor of the file as a QTensor over the mapped bytes (the mapping is
 * private and writable, so a matmul may rearrange them). copy: over a fresh copy instead. */
static wk_status wrap_matrix(wk_model *m, const wk_gguf_tensor *t, void *copy, wk_qtensor **out)
{
    int64_t dims[2] = {t->ne[1], t->ne[0]};
    void *data = copy ? copy : (void *)t->data;
    wk_status st = wk_qtensor_wrap(t->type, 2, dims, data, t->nbytes, out);
    if (st != WK_OK)
        return wk_fail_context(st, "%s: tensor '%s'", wk_gguf_path(m->gguf), t->name);
    return WK_OK;
}

/* A projection: the tensor `name` of GGUF shape [in, out], as a QMatMul of the model's form. */
static wk_status load_matmul(wk_model *m, const char *name, int64_t in, int64_t out_dim,
                             wk_qmatmul **out)
{
    const wk_gguf_tensor *t = NULL;
    wk_qtensor *w;
    wk_status st = find_tensor(m, name, in, out_dim, &t);
    if (st != WK_OK) return st;
    if ((st = wrap_matrix(m, t, NULL, &w)) != WK_OK) return st;
    st = wk_qmatmul_create(m->engine, w, m->info.form, out);
    if (st != WK_OK) return wk_fail_context(st, "%s: tensor '%s'", wk_gguf_path(m->gguf), name);
    return WK_OK;
}

static wk_status load_layer(wk_model *m, int64_t i, wk_llama_layer *l)
{
    const wk_model_info *h = &m->info;
    char name[96];
    wk_status st;
#define NAME(s) (snprintf(name, sizeof name, "blk.%lld." s, (long long)i), name)
    if ((st = load_norm(m, NAME("attn_norm.weight"), &l->attn_norm)) ||
        (st = load_norm(m, NAME("ffn_norm.weight"), &l->ffn_norm)) ||
        (st = load_matmul(m, NAME("attn_q.weight"), h->dim, h->dim, &l->wq)) ||
        (st = load_matmul(m, NAME("attn_k.weight"), h->dim, m->kv_dim, &l->wk)) ||
        (st = load_matmul(m, NAME("attn_v.weight"), h->dim, m->kv_dim, &l->wv)) ||
        (st = load_matmul(m, NAME("attn_output.weight"), h->dim, h->dim, &l->wo)) ||
        (st = load_matmul(m, NAME("ffn_gate.weight"), h->dim, h->ff_dim, &l->w_gate)) ||
        (st = load_matmul(m, NAME("ffn_up.weight"), h->dim, h->ff_dim, &l->w_up)) ||
        (st = load_matmul(m, NAME("ffn_down.weight"), h->ff_dim, h->dim, &l->w_down)))
        return st;
#undef NAME
    return WK_OK;
}

/* The embedding table, and the output projection (a copy of the table when tied). */
static wk_status load_embeddings(wk_model *m)
{
    const char *path = wk_gguf_path(m->gguf);
    const wk_gguf_tensor *emb = wk_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!emb) return wk_fail(WK_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", path);
    m->info.n_vocab = emb->ne[1];
    wk_status st = find_tensor(m, "token_embd.weight", m->info.dim, m->info.n_vocab, &emb);
    if (st != WK_OK) return st;

    /* vocab_size, when the file states it, must agree with the table. */
    char key[160];
    const char *arch = "llama";
    arch_key(key, sizeof key, arch, "vocab_size");
    if (wk_gguf_find_key(m->gguf, key) >= 0) {
        uint64_t v;
        if ((st = wk_gguf_get_u64(m->gguf, key, &v)) != WK_OK) return st;
        if ((int64_t)v != m->info.n_vocab)
            return wk_fail(WK_ERR_FORMAT, "%s: '%s' is %llu but token_embd.weight has %lld rows",
                           path, key, (unsigned long long)v, (long long)m->info.n_vocab);
    }

    wk_qtensor *table;
    if ((st = wrap_matrix(m, emb, NULL, &table)) != WK_OK) return st;
    if (m->info.device == WK_DEVICE_CPU) {
        m->tok_embd = table;
    } else {
        st = wk_qtensor_to_device(table, m->info.device, &m->tok_embd);
        wk_qtensor_free(table);
        if (st != WK_OK) return st;
    }

    if (wk_gguf_find_tensor(m->gguf, "output.weight"))
        return load_matmul(m, "output.weight", m->info.dim, m->info.n_vocab, &m->output);
    /* Tied: the matmul may repack its weight in place, so it gets its own copy. */
    m->output_copy = malloc(emb->nbytes);
    if (!m->output_copy)
        return wk_fail(WK_ERR_NOMEM, "cannot allocate %zu bytes for the tied output weight",
                       emb->nbytes);
    memcpy(m->output_copy, emb->data, emb->nbytes);
    wk_qtensor *w;
    if ((st = wrap_matrix(m, emb, m->output_copy, &w)) != WK_OK) return st;
    st = wk_qmatmul_create(m->engine, w, m->info.form, &m->output);
    if (st != WK_OK) return wk_fail_context(st, "%s: tied output (token_embd.weight)", path);
    return WK_OK;
}

/* ---- the KV cache and buffers ------------------------------------------------------ */

/* Bytes of memory the system could still give (MemAvailable), or 0 if unknown. */
static uint64_t available_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (uint64_t)kb * 1024;
            }
        fclose(f);
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

static wk_status check_kv_fits(const wk_model *m)
{
    const wk_model_info *h = &m->info;
    /* n_layers <= 4096, n_ctx <= 2^30, kv_dim <= 2^24: the product fits in 2^64 only as
     * a double; compare in double first so nothing overflows. */
    double bytes = 2.0 * (double)h->n_layers * (double)h->n_ctx * (double)m->kv_dim * sizeof(float);
    if (bytes > (double)SIZE_MAX / 2)
        return wk_fail(WK_ERR_NOMEM, "a KV cache of %lld tokens needs %.0f bytes, more than this "
                       "machine can address", (long long)h->n_ctx, bytes);
    if (h->device == WK_DEVICE_CPU) {
        uint64_t avail = available_memory();
        if (avail && bytes > (double)avail)
            return wk_fail(WK_ERR_NOMEM,
                           "a KV cache of %lld tokens needs %.1f MiB but only %.1f MiB of memory "
                           "is available; choose a smaller context",
                           (long long)h->n_ctx, bytes / 1048576.0, (double)avail / 1048576.0);
    }
    return WK_OK;
}

wk_status wk_llama_state_init(wk_model *m, int64_t max_batch)
{
    const wk_model_info *h = &m->info;
    wk_llama_state *s = &m->st;
    size_t f = sizeof(float);
    size_t kv = (size_t)h->n_layers * (size_t)h->n_ctx * (size_t)m->kv_dim * f;
    s->max_batch = max_batch;
    s->logits_rows = 1;
    wk_status st;
    if ((st = m->be->alloc(m->engine, (size_t)max_batch * sizeof(int32_t), (void **)&s->ids)) ||
        (st = m->be->alloc(m->engine, sizeof(int32_t), (void **)&s->best)) ||
        (st = m->be->alloc(m->engine, (size_t)max_batch * h->dim * f, (void **)&s->x)) ||
        (st = m->be->alloc(m->engine, (size_t)max_batch * h->dim * f, (void **)&s->xb)) ||
        (st = m->be->alloc(m->engine, (size_t)max_batch * h->dim * f, (void **)&s->q)) ||
        (st = m->be->alloc(m->engine, (size_t)max_batch * h->dim * f, (void **)&s->att)) ||
        (st = m->be->alloc(m->engine, (size_t)max_batch * h->ff_dim * f, (void **)&s->hb)) ||
        (st = m->be->alloc(m->engine, (size_t)max_batch * h->ff_dim * f, (void **)&s->hb2)) ||
        (st = m->be->alloc(m->engine, (size_t)h->n_vocab * f, (void **)&s->logits)) ||
        (st = m->be->alloc(m->engine, kv, (void **)&s->k_cache)) ||
        (st = m->be->alloc(m->engine, kv, (void **)&s->v_cache)))
        return wk_fail_context(st, "model buffers");
    return WK_OK;
}

void wk_llama_state_free(wk_model *m)
{
    wk_llama_state *s = &m->st;
    void *bufs[] = {s->ids, s->best, s->x, s->xb, s->q, s->att, s->hb, s->hb2, s->logits, s->k_cache, s->v_cache};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) m->be->free(m->engine, bufs[i]);
    memset(s, 0, sizeof *s);
}

/* ---- load and free --------------------------------------------------------------------- */

wk_status wk_model_load(const char *path, const wk_model_options *opt, wk_model **out)
{
    *out = NULL;
    wk_model_options defaults;
    if (!opt) {
        wk_model_options_init(&defaults);
        opt = &defaults;
    }
    if (opt->n_ctx < 0)
        return wk_fail(WK_ERR_INVALID, "context length %lld is negative", (long long)opt->n_ctx);
    if (opt->n_threads < 0)
        return wk_fail(WK_ERR_INVALID, "thread count %d is negative", opt->n_threads);
    wk_model *m = calloc(1, sizeof *m);
    if (!m) return wk_fail(WK_ERR_NOMEM, "cannot allocate a model");
    m->info.device = opt->device;
    m->info.form = opt->form == WK_FORM_AUTO ? wk_form_from_env() : opt->form;
    wk_status st;
    if (!(m->be = wk_backend_for(opt->device))) {
        st = WK_ERR_DEVICE;
        goto fail;
    }
    if ((st = wk_gguf_open(path, &m->gguf)) != WK_OK) goto fail;
    if ((st = read_hparams(m)) != WK_OK) goto fail;
    m->info.n_ctx = opt->n_ctx ? opt->n_ctx : m->info.n_ctx_train;
    if ((st = check_kv_fits(m)) != WK_OK) goto fail;
    if ((st = wk_tokenizer_create(m->gguf, &m->tokenizer)) != WK_OK) goto fail;
    if ((st = wk_engine_create(opt->device, opt->n_threads, &m->engine)) != WK_OK) goto fail;
    m->info.n_threads = wk_engine_threads(m->engine);
    if ((st = load_embeddings(m)) != WK_OK) goto fail;
    if (wk_tokenizer_n_vocab(m->tokenizer) > m->info.n_vocab) {
        st = wk_fail(WK_ERR_FORMAT, "%s: the tokenizer has %lld tokens but token_embd.weight only %lld rows",
                     path, (long long)wk_tokenizer_n_vocab(m->tokenizer), (long long)m->info.n_vocab);
        goto fail;
    }
    if (!(m->layers = calloc((size_t)m->info.n_layers, sizeof *m->layers))) {
        st = wk_fail(WK_ERR_NOMEM, "cannot allocate %lld layers", (long long)m->info.n_layers);
        goto fail;
    }
    for (int64_t i = 0; i < m->info.n_layers; i++)
        if ((st = load_layer(m, i, &m->layers[i])) != WK_OK) goto fail;
    if ((st = load_norm(m, "output_norm.weight", &m->output_norm)) != WK_OK) goto fail;
    if ((st = wk_llama_state_init(m, MAX_BATCH)) != WK_OK) goto fail;

    /* What the weights occupy, and the form actually used (dense types keep their own). */
    m->info.weight_bytes = wk_qmatmul_nbytes(m->output);
    for (int64_t i = 0; i < m->info.n_layers; i++) {
        wk_llama_layer *l = &m->layers[i];
        wk_qmatmul *mms[] = {l->wq, l->wk, l->wv, l->wo, l->w_gate, l->w_up, l->w_down};
        for (size_t j = 0; j < 7; j++) m->info.weight_bytes += wk_qmatmul_nbytes(mms[j]);
    }
    *out = m;
    return WK_OK;
fail:
    wk_model_free(m);
    return st;
}

void wk_model_free(wk_model *m)
{
    if (!m) return;
    if (m->be && m->engine) {
        wk_llama_state_free(m);
        for (int64_t i = 0; m->layers && i < m->info.n_layers; i++) {
            wk_llama_layer *l = &m->layers[i];
            if (l->attn_norm) m->be->free(m->engine, l->attn_norm);
            if (l->ffn_norm) m->be->free(m->engine, l->ffn_norm);
            wk_qmatmul *mms[] = {l->wq, l->wk, l->wv, l->wo, l->w_gate, l->w_up, l->w_down};
            for (size_t j = 0; j < 7; j++)
                if (mms[j]) wk_qmatmul_free(mms[j]);
        }
        if (m->output_norm) m->be->free(m->engine, m->output_norm);
    }
    free(m->layers);
    if (m->output) wk_qmatmul_free(m->output);
    free(m->output_copy);
    if (m->tok_embd) wk_qtensor_free(m->tok_embd);
    if (m->engine) wk_engine_free(m->engine);
    if (m->tokenizer) wk_tokenizer_free(m->tokenizer);
    if (m->gguf) wk_gguf_close(m->gguf);
    free(m);
}

const wk_model_info *wk_model_get_info(const wk_model *m) { return &m->info; }
wk_tokenizer *wk_model_tokenizer(const wk_model *m) { return m->tokenizer; }
const wk_gguf *wk_model_gguf(const wk_model *m) { return m->gguf; }
