/* The CPU matmul driver: builds each form's weight once, then per call converts or
 * quantizes the activations into scratch (rows split across threads), meets at a
 * barrier, and computes output columns (column chunks claimed by the threads).
 * Only columns are split, never the k sum, so results do not depend on the thread count. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cpu/cpu_engine.h"
#include "cpu/octets.h"
#include "cpu/repack.h"
#include "quant/traits.h"

#if defined(WICK_HAVE_OPENBLAS)
#include <cblas.h>
#endif

#define WK_ROW_BLOCK 64      /* x rows kept hot in cache while a column chunk is done */
#define WK_BATCH_ALIGN 64    /* columns of a many-row kernel batch (repack_rows_avx2.c) */
#define WK_CHUNK_BYTES (192u * 1024u) /* weight bytes of one chunk, for m > 1 */

typedef struct wk_cpu_mm {
    wk_type type;                /* type of the bytes the kernels read */
    const wk_cpu_kernels *kern;  /* kernels of that type */
    wk_gemm_fn gemm;             /* the form's kernel */
    const void *w;               /* weight bytes (the tensor's or `dense`) */
    size_t w_stride;             /* bytes per weight row */
    void *dense;                 /* owned f32/f16 weight of the dense forms */
    size_t dense_bytes;
    wk_type act_type;            /* quantized form: the vec-dot type */
    size_t act_row_bytes;
    wk_gemm_fn gemm_packed;      /* kernel of the rearranged rows: repacked (quantized form) or
                                    octets (precise form); NULL: none */
    wk_gemm_fn gemm_streamed;    /* the same for weights read from memory (NULL: gemm_packed) */
    int64_t n_packed;            /* leading rows rearranged (whole units: wk_repack_unit_rows, octets
                                    8; the quantized form's in repacked_bytes) */
    bool blas;                   /* f32 form through OpenBLAS */
    bool round_f16;              /* f16 form: x goes through half precision */
} wk_cpu_mm;

static size_t wk_row_bytes_of(wk_type t, int64_t k)
{
    const wk_type_traits *tr = wk_traits(t);
    return (size_t)(k / tr->block_size) * tr->block_bytes;
}

/* ---- building ---------------------------------------------------------------------- */
typedef struct {
    const wk_qmatmul *mm;
    void *dst;
    wk_type to; /* F32 or F16 */
} wk_dequant_job;

static void wk_dequant_rows(void *arg, int ith, int nth)
{
    wk_dequant_job *j = arg;
    const wk_qtensor *w = j->mm->w;
    const wk_type_traits *tr = wk_traits(w->type);
    int64_t n = j->mm->n, k = j->mm->k;
    size_t rb = wk_row_bytes_of(w->type, k);
    for (int64_t r = ith; r < n; r += nth) {
        const char *src = (const char *)w->data + (size_t)r * rb;
        if (j->to == WK_TYPE_F32) tr->to_f32(src, (float *)j->dst + r * k, k);
        else tr->to_f16(src, (uint16_t *)j->dst + r * k, k);
    }
}

/* Replace the weight by a dense copy of type `to`, dropping the original. */
static wk_status wk_make_dense(wk_cpu_engine *ce, wk_qmatmul *mm, wk_cpu_mm *c, wk_type to)
{
    size_t elem = to == WK_TYPE_F32 ? 4 : 2;
    if ((uint64_t)mm->n * (uint64_t)mm->k > SIZE_MAX / elem)
        return wk_fail(WK_ERR_NOMEM, "qmatmul: dense weight [%lld, %lld] too large",
                       (long long)mm->n, (long long)mm->k);
    c->dense_bytes = (size_t)mm->n * (size_t)mm->k * elem;
    c->dense = wk_host_alloc(c->dense_bytes);
    if (!c->dense)
        return wk_fail(WK_ERR_NOMEM, "qmatmul: cannot allocate %zu bytes for the %s weight",
                       c->dense_bytes, to == WK_TYPE_F32 ? "f32" : "f16");
    wk_dequant_job j = {mm, c->dense, to};
    wk_pool_run(ce->pool, wk_dequant_rows, &j);
    c->type = to;
    c->w = c->dense;
    c->w_stride = (size_t)mm->k * elem;
    return WK_OK;
}

wk_status wk_cpu_qmatmul_create(wk_engine *e, wk_qmatmul *mm)
{
    wk_cpu_engine *ce = (wk_cpu_engine *)e;
    wk_cpu_mm *c = calloc(1, sizeof *c);
    if (!c) return wk_fail(WK_ERR_NOMEM, "qmatmul: out of memory");
    wk_type t = mm->w->type;
    c->type = t;
    c->w = mm->w->data;
    c->w_stride = wk_row_bytes_of(t, mm->k);
    wk_status st = WK_OK;
    switch (mm->form) {
    case WK_FORM_QUANTIZED:
        c->act_type = wk_traits(t)->vec_dot_type;
        c->act_row_bytes = wk_row_bytes_of(c->act_type, mm->k);
        break;
    case WK_FORM_PRECISE: break;
    case WK_FORM_F32:
        if (t != WK_TYPE_F32) st = wk_make_dense(ce, mm, c, WK_TYPE_F32);
#if defined(WICK_HAVE_OPENBLAS)
        c->blas = true;
#endif
        break;
    case WK_FORM_F16:
        if (t != WK_TYPE_F16) st = wk_make_dense(ce, mm, c, WK_TYPE_F16);
        c->round_f16 = true;
        break;
    default: st = wk_fail(WK_ERR_INVALID, "qmatmul: form %d", (int)mm->form);
    }
    if (st) {
        free(c);
        return st;
    }
    c->kern = wk_cpu_kernels_for(c->type, ce->isa);
    c->gemm = mm->form == WK_FORM_QUANTIZED ? c->kern->gemm_q : c->kern->gemm_f32;
    if (c->dense) {
        /* The dense copy replaces the original weight: one copy in memory. */
        wk_qtensor_free(mm->w);
        mm->w = NULL;
        mm->nbytes = c->dense_bytes;
    } else {
        if (mm->form == WK_FORM_QUANTIZED) {
            st = wk_cpu_repack(mm->w, ce->isa, ce->pool, &c->gemm_packed, &c->n_packed);
            if (st) {
                free(c);
                return st;
            }
            c->gemm_streamed = c->gemm_packed ? wk_cpu_repacked_gemm_streamed(mm->w->type, ce->isa) : NULL;
            atomic_fetch_add(&ce->repacked_bytes, (size_t)c->n_packed * c->w_stride);
        } else if (c->kern->precise_octets) { /* the precise form of a block type */
            st = wk_cpu_octets(mm->w, ce->pool, &c->n_packed);
            if (st) {
                free(c);
                return st;
            }
            c->gemm_packed = c->n_packed ? c->kern->precise_octets : NULL;
        }
        mm->nbytes = mm->w->nbytes;
    }
    mm->impl = c;
    return WK_OK;
}

void wk_cpu_qmatmul_free(wk_engine *e, wk_qmatmul *mm)
{
    wk_cpu_mm *c = mm->impl;
    if (!c) return;
    if (mm->form == WK_FORM_QUANTIZED)
        atomic_fetch_sub(&((wk_cpu_engine *)e)->repacked_bytes, (size_t)c->n_packed * c->w_stride);
    wk_host_free(c->dense, c->dense_bytes);
    free(c);
    mm->impl = NULL;
}

/* ---- running ----------------------------------------------------------------------- */
typedef struct {
    const wk_qmatmul *mm;
    const wk_cpu_mm *c;
    wk_pool *pool;
    const void *x;
    wk_type x_type;
    int64_t m;
    float *y;
    float *xf;       /* f32 rows (converted / rounded), or NULL when x is used as is */
    void *xq;        /* quantized rows, quantized form */
    bool columns;    /* run the column phase (false: only prepare rows, BLAS does the rest) */
    wk_gemm_fn gemm_packed; /* c's gemm_packed, or gemm_streamed for weights read from memory */
    int64_t chunk;   /* columns per chunk */
    wk_rows rows;
    atomic_llong next_chunk;
} wk_fwd_job;

static void wk_forward_worker(void *arg, int ith, int nth)
{
    wk_fwd_job *j = arg;
    const wk_cpu_mm *c = j->c;
    int64_t k = j->mm->k, n = j->mm->n, m = j->m;

    /* Phase 1: rows of x into the form's input, each row claimed by one thread. Work is
     * claimed from counters and phase 2 waits for the rows, not for the threads, so a
     * worker that starts late (or never: wk_pool_run_flexible) holds nobody up. */
    bool prep = j->xf || j->xq;
    (void)ith, (void)nth;
    if (prep) {
        for (int64_t r; (r = wk_rows_next(&j->rows, m)) >= 0; wk_rows_finished(&j->rows)) {
            const float *row;
            if (j->x_type == WK_TYPE_F16) {
                wk_cpu_f16_to_f32((const uint16_t *)j->x + r * k, j->xf + r * k, k);
                row = j->xf + r * k;
            } else {
                row = (const float *)j->x + r * k;
                if (c->round_f16) {
                    wk_cpu_round_f16(row, j->xf + r * k, k);
                    row = j->xf + r * k;
                }
            }
            if (j->xq) c->kern->quantize(row, (char *)j->xq + (size_t)r * c->act_row_bytes, k);
        }
        if (!j->columns) return;
        wk_rows_wait(&j->rows, m);
    }

    /* Phase 2: column chunks, each for all rows (row blocks kept in cache). */
    const void *xin = j->xq ? j->xq : (j->xf ? (const void *)j->xf : j->x);
    size_t x_stride = j->xq ? c->act_row_bytes : (size_t)k * sizeof(float);
    int64_t n_chunks = (n + j->chunk - 1) / j->chunk;
    for (;;) {
        int64_t ci = atomic_fetch_add(&j->next_chunk, 1);
        if (ci >= n_chunks) break;
        int64_t c0 = ci * j->chunk;
        int64_t nc = n - c0 < j->chunk ? n - c0 : j->chunk;
        /* Repacked leading rows (chunks start on a unit of the layout: align), then the rest. */
        int64_t np = c->n_packed > c0 ? (c->n_packed - c0 < nc ? c->n_packed - c0 : nc) : 0;
        const char *w = (const char *)c->w + (size_t)c0 * c->w_stride;
        for (int64_t r0 = 0; r0 < m; r0 += WK_ROW_BLOCK) {
            int64_t nr = m - r0 < WK_ROW_BLOCK ? m - r0 : WK_ROW_BLOCK;
            const char *xr = (const char *)xin + (size_t)r0 * x_stride;
            float *yr = j->y + r0 * n + c0;
            if (np) j->gemm_packed(k, nr, np, w, c->w_stride, xr, x_stride, yr, (size_t)n);
            if (nc > np)
                c->gemm(k, nr, nc - np, w + (size_t)np * c->w_stride, c->w_stride, xr, x_stride,
                        yr + np, (size_t)n);
        }
    }
}

wk_status wk_cpu_qmatmul_forward(wk_engine *e, wk_qmatmul *mm, const void *x, wk_type x_type,
                                 int64_t m, float *y)
{
    wk_cpu_engine *ce = (wk_cpu_engine *)e;
    const wk_cpu_mm *c = mm->impl;
    int64_t k = mm->k, n = mm->n;
    int nth = wk_pool_threads(ce->pool);

    bool need_f32 = x_type == WK_TYPE_F16 || c->round_f16;
    size_t f32_bytes = need_f32 ? (size_t)m * (size_t)k * sizeof(float) : 0;
    f32_bytes = (f32_bytes + 63) & ~(size_t)63;
    size_t q_bytes = c->act_row_bytes ? (size_t)m * c->act_row_bytes : 0;
    char *scratch = NULL;
    if (f32_bytes + q_bytes) {
        scratch = wk_cpu_scratch(ce, f32_bytes + q_bytes);
        if (!scratch)
            return wk_fail(WK_ERR_NOMEM, "qmatmul: cannot allocate %zu bytes of scratch",
                           f32_bytes + q_bytes);
    }

    wk_fwd_job j = {.mm = mm, .c = c, .pool = ce->pool, .x = x, .x_type = x_type, .m = m, .y = y};
    j.xf = need_f32 ? (float *)scratch : NULL;
    j.xq = q_bytes ? scratch + f32_bytes : NULL;
    j.columns = !c->blas;
    /* More repacked weight bytes live than the last-level cache holds: this call's come from
     * memory, where some kernels read best differently (wk_cpu_repacked_gemm_streamed). */
    const bool streamed = c->gemm_streamed && atomic_load(&ce->repacked_bytes) > ce->llc_bytes;
    j.gemm_packed = streamed ? c->gemm_streamed : c->gemm_packed;
    /* Chunks: a multiple of the repacked layout's unit (16 columns, Q2_K and Q3_K 64); several per
     * thread for balance; for many rows small enough that a chunk's weights stay in cache
     * across the row blocks. */
    const bool repacked = c->n_packed && mm->form == WK_FORM_QUANTIZED;
    const int64_t align = repacked ? wk_repack_unit_rows(mm->w->type) : 16;
    int64_t chunk = n / ((int64_t)nth * 8);
    if (m > 1) {
        int64_t by_cache = (int64_t)(WK_CHUNK_BYTES / (c->w_stride ? c->w_stride : 1));
        if (by_cache < chunk) chunk = by_cache;
    }
    chunk = (chunk + align - 1) / align * align;
    if (chunk < align) chunk = align;
    /* The many-row kernels prepare each activation unit once per batch of
     * WK_BATCH_ALIGN columns: a chunk of whole batches does that once per chunk. */
    if (m > 1 && repacked && chunk >= WK_BATCH_ALIGN) chunk = chunk / WK_BATCH_ALIGN * WK_BATCH_ALIGN;
    j.chunk = chunk;
    atomic_init(&j.next_chunk, 0);
    wk_rows_init(&j.rows);

    if (c->blas) {
#if defined(WICK_HAVE_OPENBLAS)
        /* The input's conversion on this thread: a pool run would leave its workers
         * spinning on the cores that OpenBLAS's own threads then need (an f16 input took
         * 2-5 times the f32 input's time at [1024, 512]; a row of k converts in microseconds). */
        if (j.xf) wk_forward_worker(&j, 0, 1);
        const float *xin = j.xf ? j.xf : (const float *)x;
        if (m == 1)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)n, (blasint)k, 1.0f, c->w, (blasint)k,
                        xin, 1, 0.0f, y, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)n, (blasint)k,
                        1.0f, xin, (blasint)k, c->w, (blasint)k, 0.0f, y, (blasint)n);
#endif
        return WK_OK;
    }
    wk_pool_run_flexible(ce->pool, wk_forward_worker, &j);
    return WK_OK;
}
