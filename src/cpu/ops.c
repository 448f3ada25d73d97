/* The CPU implementation of the model's operation table (src/model/backend.h).
 * Device memory is host memory; every operation runs on the calling thread except the
 * matmuls and attention, which spread their work over the engine's threads.
 *
 * On an AVX2 machine the quantized form's matmuls, the attention, RoPE and the SiLU-gated
 * product follow llama.cpp's CPU order of float operations (docs/model.md, "Rounding like
 * llama.cpp"), so that the quantized form gives its numbers; elsewhere the generic
 * kernels and the plain formulas below run. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/argmax.h"
#include "core/error.h"
#include "model/backend.h"
#include "cpu/cpu_engine.h"
#include "cpu/ops_internal.h"
#include "cpu/repack.h"
#include "quant/traits.h"
#include "tensor/engine_impl.h"

static wk_status cpu_alloc(wk_engine *e, size_t nbytes, void **out)
{
    (void)e;
    /* 64-byte alignment so SIMD kernels may use aligned loads. */
    size_t rounded = (nbytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) return wk_fail(WK_ERR_NOMEM, "cannot allocate %zu bytes of CPU memory", nbytes);
    *out = p;
    return WK_OK;
}

static void cpu_free(wk_engine *e, void *p)
{
    (void)e;
    free(p);
}

static wk_status cpu_copy_bytes(wk_engine *e, void *dst, const void *src, size_t nbytes)
{
    (void)e;
    if (nbytes) memmove(dst, src, nbytes);
    return WK_OK;
}

/* The CPU's forward has finished when it returns: a copy "later" is done at once. */
static wk_status cpu_collect(wk_engine *e)
{
    (void)e;
    return WK_OK;
}

static wk_status cpu_sync(wk_engine *e)
{
    (void)e;
    return WK_OK;
}

static wk_status cpu_embed_rows(wk_engine *e, const wk_qtensor *table, const int32_t *ids,
                                int64_t rows, float *x)
{
    (void)e;
    const wk_type_traits *tr = wk_traits(wk_qtensor_type(table));
    if (!tr || !tr->to_f32)
        return wk_fail(WK_ERR_UNSUPPORTED, "embedding table of type %d cannot be dequantized",
                       (int)wk_qtensor_type(table));
    int64_t n_vocab = wk_qtensor_dim(table, 0), dim = wk_qtensor_dim(table, 1);
    size_t row_bytes = (size_t)(dim / tr->block_size) * tr->block_bytes;
    const uint8_t *base = wk_qtensor_data(table);
    for (int64_t r = 0; r < rows; r++) {
        if (ids[r] < 0 || ids[r] >= n_vocab)
            return wk_fail(WK_ERR_INVALID, "token id %d outside the vocabulary of %lld",
                           (int)ids[r], (long long)n_vocab);
        tr->to_f32(base + (size_t)ids[r] * row_bytes, x + r * dim, dim);
    }
    return WK_OK;
}

static wk_status cpu_rmsnorm(wk_engine *e, float *y, const float *x, const float *w, int64_t rows,
                             int64_t dim, float eps)
{
    (void)e;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * dim;
        float *yr = y + r * dim;
        /* Float squares summed in double, the mean and root in float: llama.cpp's order,
         * so that the two round alike. */
        double ss = 0.0;
        for (int64_t i = 0; i < dim; i++) ss += (double)(xr[i] * xr[i]);
        float mean = (float)(ss / (double)dim);
        float scale = 1.0f / sqrtf(mean + eps);
        for (int64_t i = 0; i < dim; i++) yr[i] = xr[i] * scale * w[i];
    }
    return WK_OK;
}

static wk_status cpu_rope(wk_engine *e, float *x, int64_t rows, int64_t n_heads, int64_t head_dim,
                          int64_t n_rot, int64_t pos0, float freq_base)
{
    (void)e;
    int64_t half = n_rot / 2;
    float cs[512], sn[512]; /* half <= 256 pairs is checked at load (head_dim <= 512) */
    for (int64_t r = 0; r < rows; r++) {
        /* theta_i = pos * base^(-2i/n_rot), formed by repeated products in float as
         * llama.cpp does, so the two round alike. */
        float theta = (float)(pos0 + r), theta_scale = powf(freq_base, -2.0f / (float)n_rot);
        for (int64_t i = 0; i < half; i++) {
            cs[i] = cosf(theta);
            sn[i] = sinf(theta);
            theta *= theta_scale;
        }
        for (int64_t h = 0; h < n_heads; h++) {
            float *v = x + (r * n_heads + h) * head_dim;
            for (int64_t i = 0; i < half; i++) {
                float a = v[2 * i], b = v[2 * i + 1];
                /* One fused multiply-add each, as llama.cpp's compiled loop rounds. */
                v[2 * i] = fmaf(a, cs[i], -(b * sn[i]));
                v[2 * i + 1] = fmaf(a, sn[i], b * cs[i]);
            }
        }
    }
    return WK_OK;
}

/* The llama.cpp-order paths on an AVX2 machine, unless WICK_LLAMA_ORDER=0 (then the
 * generic kernels and formulas run: for measuring what the order costs). Read once. */
static bool llama_order(const wk_cpu_engine *ce)
{
    static atomic_int cached = -1;
    int v = atomic_load(&cached);
    if (v < 0) {
        const char *env = getenv("WICK_LLAMA_ORDER");
        v = !(env && strcmp(env, "0") == 0);
        atomic_store(&cached, v);
    }
    return v && ce->isa >= WK_ISA_AVX2;
}

typedef struct {
    float *out;
    const float *q, *k, *v;
    int64_t rows, pos0, n_heads, n_kv_heads, head_dim;
    float *work;             /* llama.cpp order: per-thread scratch (NULL: online softmax) */
    size_t work_per_thread;  /* floats */
    int64_t scores_cap;      /* floats of scores at the start of each thread's scratch */
} attention_job;

/* One (row, head): scores in chunks with a running maximum (online softmax), so no
 * buffer sized by the context is needed. */
static void attention_one(const attention_job *j, int64_t r, int64_t h)
{
    enum { CHUNK = 64 };
    int64_t hd = j->head_dim, kv_dim = j->n_kv_heads * hd;
    int64_t kvh = h / (j->n_heads / j->n_kv_heads);
    const float *q = j->q + (r * j->n_heads + h) * hd;
    float *o = j->out + (r * j->n_heads + h) * hd;
    float scale = 1.0f / sqrtf((float)hd);
    int64_t n_keys = j->pos0 + r + 1;
    float m = -INFINITY, l = 0.0f, s[CHUNK];
    for (int64_t d = 0; d < hd; d++) o[d] = 0.0f;
    for (int64_t c0 = 0; c0 < n_keys; c0 += CHUNK) {
        int64_t cn = n_keys - c0 < CHUNK ? n_keys - c0 : CHUNK;
        float cmax = -INFINITY;
        for (int64_t t = 0; t < cn; t++) {
            const float *k = j->k + (c0 + t) * kv_dim + kvh * hd;
            float dot = 0.0f;
            for (int64_t d = 0; d < hd; d++) dot += q[d] * k[d];
            s[t] = dot * scale;
            if (s[t] > cmax) cmax = s[t];
        }
        if (cmax > m) { /* a new maximum: rescale what was summed so far */
            float f = expf(m - cmax);
            for (int64_t d = 0; d < hd; d++) o[d] *= f;
            l *= f;
            m = cmax;
        }
        for (int64_t t = 0; t < cn; t++) {
            float p = expf(s[t] - m);
            const float *v = j->v + (c0 + t) * kv_dim + kvh * hd;
            for (int64_t d = 0; d < hd; d++) o[d] += p * v[d];
            l += p;
        }
    }
    float inv = 1.0f / l;
    for (int64_t d = 0; d < hd; d++) o[d] *= inv;
}

/* One (row, head) in llama.cpp's order of float operations (see src/cpu/x86/ops_avx2.c):
 * every score, the maximum, e^(s - max) in chunks of 8 whose sums add in double, the
 * probabilities scaled by the inverse sum, then the weighted sum of the values. A batch of
 * one row takes its one-row orders (vec), a larger batch its multi-row ones (tile).
 * work: the worker's scratch, scores then accumulators. */
static void attention_one_exact(const attention_job *j, int64_t r, int64_t h, float *work)
{
    int64_t hd = j->head_dim, kv_dim = j->n_kv_heads * hd;
    int64_t kvh = h / (j->n_heads / j->n_kv_heads);
    const float *q = j->q + (r * j->n_heads + h) * hd;
    float *o = j->out + (r * j->n_heads + h) * hd;
    float scale = 1.0f / sqrtf((float)hd);
    int64_t n_keys = j->pos0 + r + 1, n8 = (n_keys + 7) & ~(int64_t)7;
    bool one_row = j->rows == 1;
    float *s = work, *acc = work + j->scores_cap;
    float max = wk_avx2_scores_vec(s, q, j->k + kvh * hd, kv_dim, n_keys, hd, scale);
    for (int64_t t = n_keys; t < n8; t++) s[t] = -INFINITY;
    double sum = wk_avx2_softmax_exp(s, s, n8, max);
    float inv = (float)(1.0 / sum);
    for (int64_t t = 0; t < n_keys; t++) s[t] *= inv;
    wk_avx2_weighted_sum(o, s, j->v + kvh * hd, kv_dim, n_keys, hd, false, one_row, acc);
}

static void attention_task(void *arg, int ith, int nth)
{
    const attention_job *j = arg;
    int64_t total = j->rows * j->n_heads;
    float *work = j->work ? j->work + (size_t)ith * j->work_per_thread : NULL;
    for (int64_t i = ith; i < total; i += nth) {
        if (work) attention_one_exact(j, i / j->n_heads, i % j->n_heads, work);
        else attention_one(j, i / j->n_heads, i % j->n_heads);
    }
}

/* Run task(arg, i, n) on each of the engine's n workers. */
static void ops_parallel(wk_engine *e, wk_pool_fn task, void *arg)
{
    wk_cpu_engine *ce = (wk_cpu_engine *)e;
    if (ce->pool && wk_pool_threads(ce->pool) > 1)
        wk_pool_run(ce->pool, task, arg);
    else
        task(arg, 0, 1);
}

static wk_status cpu_attention(wk_engine *e, float *out, const float *q, const float *k_cache,
                               const float *v_cache, int64_t rows, int64_t pos0, int64_t n_heads,
                               int64_t n_kv_heads, int64_t head_dim)
{
    attention_job j = {out, q, k_cache, v_cache, rows, pos0, n_heads, n_kv_heads, head_dim,
                       NULL, 0, 0};
    wk_cpu_engine *ce = (wk_cpu_engine *)e;
    /* llama.cpp's order where its dot products have no scalar tail (head_dim % 32 == 0,
     * which every Llama-family model has); the online softmax otherwise. */
    if (llama_order(ce) && head_dim % 32 == 0) {
        int nth = ce->pool ? wk_pool_threads(ce->pool) : 1;
        j.scores_cap = (pos0 + rows + 7 + 15) & ~(int64_t)15;
        j.work_per_thread = (size_t)j.scores_cap + 32 * (size_t)head_dim;
        j.work = wk_cpu_scratch(ce, (size_t)nth * j.work_per_thread * sizeof(float));
        if (!j.work)
            return wk_fail(WK_ERR_NOMEM, "attention: cannot allocate %zu bytes of scratch",
                           (size_t)nth * j.work_per_thread * sizeof(float));
    }
    ops_parallel(e, attention_task, &j);
    return WK_OK;
}

static wk_status cpu_silu_mul(wk_engine *e, float *gate, const float *up, int64_t n)
{
    if (llama_order((wk_cpu_engine *)e)) {
        wk_avx2_swiglu(gate, up, n);
        return WK_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
    return WK_OK;
}

static wk_status cpu_add(wk_engine *e, float *y, const float *x, int64_t n)
{
    (void)e;
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
    return WK_OK;
}

static wk_status cpu_argmax(wk_engine *e, const float *x, int64_t n, int32_t *out)
{
    (void)e;
    *out = wk_argmax_f32(x, n);
    return WK_OK;
}

static wk_status cpu_copy(wk_engine *e, float *dst, const float *src, int64_t n)
{
    (void)e;
    memcpy(dst, src, (size_t)n * sizeof(float));
    return WK_OK;
}

/* ---- the quantized form's matmuls in llama.cpp's rounding ---------------------------
 * For the 32-element formats on an AVX2 machine the model runs its quantized matmuls here
 * rather than through wk_qmatmul_forward: activations are quantized as llama.cpp does at
 * run time, and the kernels of src/cpu/x86/ops_matmul_avx2.c add in its order, so that
 * wick's quantized form gives llama.cpp's numbers. Several matmuls of the same input (q, k
 * and v; gate and up) share one quantization of it and one parallel dispatch. */
enum { MM_MAX = 3 };

typedef struct {
    int count;
    wk_qmatmul *mm[MM_MAX];
    float *y[MM_MAX];
    int64_t n_groups[MM_MAX];   /* repacked groups of 8 rows */
    int64_t group_chunks[MM_MAX];
    int64_t first_chunk[MM_MAX + 1];
    const float *x; /* rows to quantize in the run (NULL: quantized before it) */
    void *xq;
    size_t xs;
    int64_t k, m, chunk;
    wk_type act;
    /* The AVX-512 kernels (the same bits) for several rows, and what the one of the
     * 32-element formats needs of each activation block. */
    bool avx512;
    wk_exact_xprep *prep;
    atomic_llong next;
    wk_rows rows;
} exact_job;

static bool exact_type(wk_type t)
{
    return t == WK_TYPE_Q4_0 || t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_0 || t == WK_TYPE_Q5_1 ||
           t == WK_TYPE_Q8_0 || t == WK_TYPE_Q4_K || t == WK_TYPE_Q6_K;
}

static bool exact_ok(const wk_cpu_engine *ce, const wk_qmatmul *mm)
{
    return llama_order(ce) && mm->form == WK_FORM_QUANTIZED && mm->w &&
           mm->w->device == WK_DEVICE_CPU && exact_type(mm->w->type);
}

static wk_type exact_act_type(wk_type t)
{
    if (t == WK_TYPE_Q4_K || t == WK_TYPE_Q6_K) return WK_TYPE_Q8_K;
    return t == WK_TYPE_Q4_1 || t == WK_TYPE_Q5_1 ? WK_TYPE_Q8_1 : WK_TYPE_Q8_0;
}

/* Row r of x quantized as llama.cpp does, and the AVX-512 kernel's data of it. */
static void exact_quantize_row(const exact_job *j, int64_t r)
{
    const float *x = j->x + r * j->k;
    char *row = (char *)j->xq + (size_t)r * j->xs;
    if (j->act == WK_TYPE_Q8_1) wk_avx2_act_q8_1(x, row, j->k);
    else if (j->act == WK_TYPE_Q8_0) wk_avx2_act_q8_0(x, row, j->k);
    else wk_avx2_act_q8_K(x, row, j->k); /* llama.cpp rounds Q8_K as the reference quantizer does */
    if (j->prep) wk_avx512_exact_prep(j->act == WK_TYPE_Q8_1, j->k, row, j->xs, 1, j->prep + r * (j->k / 32));
}

static void exact_task(void *arg, int ith, int nth)
{
    exact_job *j = arg;
    (void)ith, (void)nth;
    if (j->x) { /* rows claimed one at a time; the columns wait for the rows, not the threads */
        for (int64_t r; (r = wk_rows_next(&j->rows, j->m)) >= 0; wk_rows_finished(&j->rows)) exact_quantize_row(j, r);
        wk_rows_wait(&j->rows, j->m);
    }
    for (;;) {
        int64_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->first_chunk[j->count]) break;
        int i = 0;
        while (c >= j->first_chunk[i + 1]) i++;
        int64_t local = c - j->first_chunk[i];
        wk_qmatmul *mm = j->mm[i];
        const wk_qtensor *w = mm->w;
        if (local < j->group_chunks[i]) {
            int64_t g0 = local * j->chunk;
            int64_t g1 = g0 + j->chunk < j->n_groups[i] ? g0 + j->chunk : j->n_groups[i];
            if ((w->type == WK_TYPE_Q4_K || w->type == WK_TYPE_Q6_K) && j->avx512)
                wk_avx512_exact_groups_k(w->type, mm->k, w->data, g0, g1, j->xq, j->xs, j->m,
                                         j->y[i], (size_t)mm->n);
            else if (w->type == WK_TYPE_Q4_K || w->type == WK_TYPE_Q6_K)
                wk_avx2_exact_groups_k(w->type, mm->k, w->data, g0, g1, j->xq, j->xs, j->m,
                                       j->y[i], (size_t)mm->n);
            else if (j->avx512)
                wk_avx512_exact_groups(w->type, mm->k, w->data, g0, g1, j->xq, j->xs, j->prep, j->m, j->y[i],
                                       (size_t)mm->n);
            else
                wk_avx2_exact_groups(w->type, mm->k, w->data, g0, g1, j->xq, j->xs, j->m, j->y[i],
                                     (size_t)mm->n);
        } else { /* rows after the last pair keep the file's layout: the generic kernel
                  * (llama.cpp's order too for the 32-element formats, not for Q4_K/Q6_K) */
            const wk_type_traits *tr = wk_traits(w->type);
            size_t row_bytes = (size_t)(mm->k / tr->block_size) * tr->block_bytes;
            int64_t r0 = j->n_groups[i] * 8;
            const wk_cpu_kernels *kern = wk_cpu_kernels_for(w->type, WK_ISA_AVX2);
            kern->gemm_q(mm->k, j->m, mm->n - r0, (const char *)w->data + (size_t)r0 * row_bytes,
                         row_bytes, j->xq, j->xs, j->y[i] + r0, (size_t)mm->n);
        }
    }
}

/* y[i] = x · W[i]ᵀ for `count` matmuls that exact_ok accepts, with the same k and the same
 * activation type. */
static wk_status exact_matmuls(wk_cpu_engine *ce, int count, wk_qmatmul *const *mm, const float *x,
                               int64_t m, float *const *y)
{
    int64_t k = mm[0]->k;
    wk_type act = exact_act_type(mm[0]->w->type);
    const wk_type_traits *at = wk_traits(act);
    size_t xs = (size_t)(k / at->block_size) * at->block_bytes;
    /* the AVX-512 kernel for the 32-element formats: its per-row data after the codes */
    const bool avx512 = ce->isa >= WK_ISA_AVX512 && m > 1;
    const size_t xq_bytes = ((size_t)m * xs + 63) & ~(size_t)63;
    const size_t prep_bytes =
        avx512 && act != WK_TYPE_Q8_K ? (size_t)m * (size_t)(k / 32) * sizeof(wk_exact_xprep) : 0;
    void *xq = wk_cpu_scratch(ce, xq_bytes + prep_bytes);
    if (!xq) return wk_fail(WK_ERR_NOMEM, "matmul: cannot allocate %zu bytes of scratch", xq_bytes + prep_bytes);
    int nth = ce->pool ? wk_pool_threads(ce->pool) : 1;
    exact_job j = {.count = count, .x = x, .xq = xq, .xs = xs, .k = k, .m = m, .act = act, .avx512 = avx512,
                   .prep = prep_bytes ? (wk_exact_xprep *)((char *)xq + xq_bytes) : NULL};
    if (m == 1 || nth == 1) { /* one row: quantized here, before the run */
        for (int64_t r = 0; r < m; r++) exact_quantize_row(&j, r);
        j.x = NULL;
    }
    int64_t total_groups = 0;
    for (int i = 0; i < count; i++) {
        j.mm[i] = mm[i];
        j.y[i] = y[i];
        const int64_t unit = wk_repack_unit_rows(mm[i]->w->type); /* 16 rows: these types' pairs */
        j.n_groups[i] = mm[i]->w->layout == WK_LAYOUT_REPACKED ? mm[i]->n / unit * unit / WK_REPACK_COLS : 0;
        total_groups += j.n_groups[i];
    }
    /* Several chunks per thread for balance; an even number of groups, at least 2 (the
     * layout's pairs, repack.h). */
    j.chunk = total_groups / ((int64_t)nth * 8) & ~(int64_t)1;
    if (j.chunk < 2) j.chunk = 2;
    j.first_chunk[0] = 0;
    for (int i = 0; i < count; i++) {
        j.group_chunks[i] = (j.n_groups[i] + j.chunk - 1) / j.chunk;
        bool tail = j.n_groups[i] * 8 < mm[i]->n;
        j.first_chunk[i + 1] = j.first_chunk[i] + j.group_chunks[i] + (tail ? 1 : 0);
    }
    atomic_init(&j.next, 0);
    wk_rows_init(&j.rows);
    if (ce->pool && nth > 1) wk_pool_run_flexible(ce->pool, exact_task, &j);
    else exact_task(&j, 0, 1);
    return WK_OK;
}

static wk_status cpu_matmul(wk_engine *e, wk_qmatmul *mm, const float *x, int64_t m, float *y)
{
    wk_cpu_engine *ce = (wk_cpu_engine *)e;
    if (exact_ok(ce, mm)) return exact_matmuls(ce, 1, &mm, x, m, &y);
    return wk_qmatmul_forward(mm, x, WK_TYPE_F32, m, wk_qmatmul_k(mm), y);
}

static wk_status cpu_matmuls(wk_engine *e, int count, wk_qmatmul *const *mm, const float *x,
                             int64_t m, float *const *y)
{
    wk_cpu_engine *ce = (wk_cpu_engine *)e;
    bool together = count <= MM_MAX;
    for (int i = 0; i < count && together; i++)
        together = exact_ok(ce, mm[i]) && mm[i]->k == mm[0]->k &&
                   exact_act_type(mm[i]->w->type) == exact_act_type(mm[0]->w->type);
    if (together) return exact_matmuls(ce, count, mm, x, m, y);
    for (int i = 0; i < count; i++) {
        wk_status st = cpu_matmul(e, mm[i], x, m, y[i]);
        if (st != WK_OK) return st;
    }
    return WK_OK;
}

const wk_backend wk_cpu_backend = {
    .device = WK_DEVICE_CPU,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy_bytes,
    .download = cpu_copy_bytes,
    .sync = cpu_sync,
    .embed_rows = cpu_embed_rows,
    .rmsnorm = cpu_rmsnorm,
    .rope = cpu_rope,
    .attention = cpu_attention,
    .silu_mul = cpu_silu_mul,
    .add = cpu_add,
    .copy = cpu_copy,
    .argmax = cpu_argmax,
    .matmul = cpu_matmul,
    .matmuls = cpu_matmuls,
    .download_later = cpu_copy_bytes,
    .collect = cpu_collect,
};
