/* The CPU implementation of the model's operation table (src/model/backend.h).
 * Device memory is host memory; every operation runs on the calling thread except
 * attention, which spreads (row, head) pairs over the engine's threads when it pays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/backend.h"
#include "cpu/cpu_engine.h"
#include "quant/traits.h"

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
                v[2 * i] = a * cs[i] - b * sn[i];
                v[2 * i + 1] = a * sn[i] + b * cs[i];
            }
        }
    }
    return WK_OK;
}

typedef struct {
    float *out;
    const float *q, *k, *v;
    int64_t rows, pos0, n_heads, n_kv_heads, head_dim;
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

static void attention_task(void *arg, int ith, int nth)
{
    const attention_job *j = arg;
    int64_t total = j->rows * j->n_heads;
    for (int64_t i = ith; i < total; i += nth) attention_one(j, i / j->n_heads, i % j->n_heads);
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
    attention_job j = {out, q, k_cache, v_cache, rows, pos0, n_heads, n_kv_heads, head_dim};
    ops_parallel(e, attention_task, &j);
    return WK_OK;
}

static wk_status cpu_silu_mul(wk_engine *e, float *gate, const float *up, int64_t n)
{
    (void)e;
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

static wk_status cpu_copy(wk_engine *e, float *dst, const float *src, int64_t n)
{
    (void)e;
    memcpy(dst, src, (size_t)n * sizeof(float));
    return WK_OK;
}

static wk_status cpu_matmul(wk_engine *e, wk_qmatmul *mm, const float *x, int64_t m, float *y)
{
    (void)e;
    return wk_qmatmul_forward(mm, x, WK_TYPE_F32, m, wk_qmatmul_k(mm), y);
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
    .matmul = cpu_matmul,
};
