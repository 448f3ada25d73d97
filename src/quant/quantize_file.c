/* Rewrite a GGUF model with its weight matrices in another type: read with the GGUF
 * reader, choose types with the plan, convert row by row through f32 with the
 * reference (de)quantizers of the traits table, write with the GGUF writer. */
#include "quant/quantize_file.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "quant/traits.h"
#include "wick/gguf.h"
#include "wick/quant.h"

/* Keys llama.cpp drops (split files are written whole) or rewrites. */
static bool wk_key_is_replaced(const char *key, bool has_file_type)
{
    return strcmp(key, "split.no") == 0 || strcmp(key, "split.count") == 0 ||
           strcmp(key, "split.tensors.count") == 0 ||
           (!has_file_type && strcmp(key, "general.file_type") == 0);
}

/* The model's block count ("<arch>.block_count"), 0 when absent. */
static int64_t wk_block_count(const wk_gguf *g)
{
    const char *arch = NULL;
    char key[256];
    uint32_t n = 0;
    if (wk_gguf_find_key(g, "general.architecture") < 0 ||
        wk_gguf_get_str(g, "general.architecture", &arch, NULL) != WK_OK)
        return 0;
    snprintf(key, sizeof key, "%s.block_count", arch);
    if (wk_gguf_find_key(g, key) < 0 || wk_gguf_get_u32(g, key, &n) != WK_OK) return 0;
    return n;
}

/* Convert rows [row0, row1) of one tensor. */
typedef struct wk_convert_job {
    const wk_type_traits *from, *to;
    const uint8_t *src;
    uint8_t *dst;
    size_t src_row_bytes, dst_row_bytes;
    int64_t ne0, row0, row1;
    float *buf; /* ne0 floats */
} wk_convert_job;

static void *wk_convert_rows(void *arg)
{
    wk_convert_job *j = arg;
    for (int64_t r = j->row0; r < j->row1; r++) {
        j->from->to_f32(j->src + (size_t)r * j->src_row_bytes, j->buf, j->ne0);
        j->to->from_f32(j->buf, j->dst + (size_t)r * j->dst_row_bytes, j->ne0);
    }
    return NULL;
}

/* Convert a whole tensor into dst, spreading its rows over up to `threads` threads. */
static wk_status wk_convert_tensor(const wk_gguf_tensor *gt, wk_type target, uint8_t *dst,
                                   int threads)
{
    const int64_t ne0 = gt->ne[0];
    const int64_t nrows = gt->ne[1] * gt->ne[2] * gt->ne[3];
    size_t src_rb = 0, dst_rb = 0;
    wk_status st = wk_type_row_bytes(gt->type, ne0, &src_rb);
    if (!st) st = wk_type_row_bytes(target, ne0, &dst_rb);
    if (st) return st;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    if (threads > nrows) threads = nrows > 0 ? (int)nrows : 1;

    wk_convert_job jobs[64];
    pthread_t tids[64];
    float *bufs = malloc(((size_t)threads * (size_t)ne0 + 1) * sizeof(float));
    if (!bufs)
        return wk_fail(WK_ERR_NOMEM, "quantize: no memory for rows of %lld floats of tensor '%s'",
                       (long long)ne0, gt->name);
    for (int t = 0; t < threads; t++)
        jobs[t] = (wk_convert_job){
            .from = wk_traits(gt->type), .to = wk_traits(target), .src = gt->data, .dst = dst,
            .src_row_bytes = src_rb, .dst_row_bytes = dst_rb, .ne0 = ne0,
            .row0 = nrows * t / threads, .row1 = nrows * (t + 1) / threads,
            .buf = bufs + (size_t)t * (size_t)ne0,
        };
    /* the calling thread takes the first share, and the share of any thread that
     * could not be started */
    bool started[64] = {false};
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&tids[t], NULL, wk_convert_rows, &jobs[t]) == 0;
    wk_convert_rows(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tids[t], NULL);
        else wk_convert_rows(&jobs[t]);
    }
    free(bufs);
    return WK_OK;
}

static bool wk_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

wk_status wk_quantize_file(const char *in_path, const char *out_path, const char *type_name,
                           int threads, wk_quantize_progress_fn progress, void *user,
                           wk_quantize_stats *stats)
{
    wk_quant_request req;
    wk_status st = wk_quant_request_parse(type_name, &req);
    if (st) return st;
    if (wk_same_file(in_path, out_path))
        return wk_fail(WK_ERR_INVALID, "quantize: output '%s' is the input file", out_path);

    wk_gguf *g = NULL;
    st = wk_gguf_open(in_path, &g);
    if (st) return st;

    wk_gguf_writer *w = NULL;
    const int64_t n = wk_gguf_n_tensors(g);
    wk_quant_tensor *plan = calloc((size_t)(n > 0 ? n : 1), sizeof *plan);
    wk_quantize_stats s;
    memset(&s, 0, sizeof s);
    s.n_tensors = n;
    if (!plan) {
        st = wk_fail(WK_ERR_NOMEM, "quantize: no memory for %lld tensors of '%s'", (long long)n,
                     in_path);
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        const wk_gguf_tensor *gt = wk_gguf_tensor_at(g, i);
        plan[i].name = gt->name;
        plan[i].n_dims = gt->n_dims;
        memcpy(plan[i].ne, gt->ne, sizeof plan[i].ne);
        plan[i].type = gt->type;
    }
    st = wk_quant_plan(&req, plan, n, wk_block_count(g));
    if (st) goto done;

    /* metadata: everything, in order; then llama.cpp's two keys (replaced in place) */
    st = wk_gguf_writer_create(&w);
    for (int64_t i = 0; !st && i < wk_gguf_n_kv(g); i++)
        if (!wk_key_is_replaced(wk_gguf_key(g, i), req.file_type >= 0))
            st = wk_gguf_writer_copy_kv(w, g, i);
    if (!st) st = wk_gguf_writer_set_u32(w, "general.quantization_version", 2);
    if (!st && req.file_type >= 0)
        st = wk_gguf_writer_set_u32(w, "general.file_type", (uint32_t)req.file_type);

    for (int64_t i = 0; !st && i < n; i++) {
        const wk_gguf_tensor *gt = wk_gguf_tensor_at(g, i);
        const wk_quant_tensor *p = &plan[i];
        s.bytes_in += gt->nbytes;
        s.count_by_type[p->target]++;
        if (p->target != p->preferred) s.n_fallback++;
        if (p->target == gt->type) {
            st = wk_gguf_writer_add_tensor(w, gt->name, gt->type, gt->n_dims, gt->ne, gt->data,
                                           gt->nbytes);
            s.bytes_out += gt->nbytes;
        } else {
            size_t row_bytes = 0;
            st = wk_type_row_bytes(p->target, gt->ne[0], &row_bytes);
            if (st) break;
            const size_t nbytes = row_bytes * (size_t)(gt->ne[1] * gt->ne[2] * gt->ne[3]);
            uint8_t *out = malloc(nbytes ? nbytes : 1);
            if (!out) {
                st = wk_fail(WK_ERR_NOMEM, "quantize: no memory for %zu bytes of tensor '%s'",
                             nbytes, gt->name);
                break;
            }
            st = wk_convert_tensor(gt, p->target, out, threads);
            if (!st)
                st = wk_gguf_writer_add_tensor(w, gt->name, p->target, gt->n_dims, gt->ne, out,
                                               nbytes);
            free(out);
            s.n_quantized++;
            s.bytes_out += nbytes;
        }
        if (!st && progress) progress(p, i, n, user);
    }
    if (!st) st = wk_gguf_writer_write(w, out_path);

done:
    if (stats) *stats = s;
    wk_gguf_writer_free(w);
    free(plan);
    wk_gguf_close(g);
    return st;
}
