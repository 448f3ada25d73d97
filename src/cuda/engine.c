/* The CUDA engine: QTensor storage on the GPU and QMatMul in its forms.
 *
 * Forms on the GPU (activations are never quantized here, as on the documents' GPU):
 * - quantized and precise: the weight stays in its format, rearranged once into the
 *   packed GPU layout where the format and shape allow (qpack.cuh), else in rows (Q8_0
 *   rewritten as Q8_1: the same values, blocks on words); the tensor-core kernels (F16
 *   weights too);
 * - f32: the weight dequantized once to f32 on the device, cuBLAS;
 * - f16: the weight dequantized once to f16 on the device, cuBLAS (x rounded to f16).
 * F32 and BF16 weights use the f32 form unless the f16 form is asked for (BF16 widened to
 * f32 once: exact). */
#include <stdlib.h>

#include "core/error.h"
#include "cuda/cuda_engine.h"
#include "cuda/kernels.h"
#include "tensor/cuda_hooks.h"
#include "wick/quant.h"

typedef struct wk_cuda_mm {
    enum { WK_CUDA_MM_QUANT, WK_CUDA_MM_DENSE } path;
    wk_type type;  /* the weight format the kernel reads (F32/F16 for the dense path) */
    const void *w; /* device bytes: mm->w's, or `owned` */
    void *owned;   /* a dequantized copy this matmul allocated */
} wk_cuda_mm;

bool wk_cuda_available(void) { return wk_cuda_device_present(); }

wk_cuda_ctx *wk_cuda_engine_ctx(wk_engine *e) { return (wk_cuda_ctx *)e->impl; }

static void wk_cuda_engine_free(wk_engine *e)
{
    if (!e) return;
    wk_cuda_ctx_free((wk_cuda_ctx *)e->impl);
    free(e);
}

static wk_status wk_cuda_mm_create(wk_engine *e, wk_qmatmul *mm)
{
    wk_cuda_ctx *c = wk_cuda_engine_ctx(e);
    wk_cuda_mm *d = calloc(1, sizeof *d);
    if (!d) return wk_fail(WK_ERR_NOMEM, "CUDA qmatmul: out of host memory");
    wk_type t = mm->w_type;
    int64_t nelem = mm->n * mm->k;
    bool dense_form = mm->form == WK_FORM_F32 || mm->form == WK_FORM_F16;
    if (!dense_form && wk_cuda_qmm_supports(t) && (t != WK_TYPE_F16 || mm->k % 16 == 0)) {
        d->path = WK_CUDA_MM_QUANT;
        d->type = wk_cuda_kept_type(t, mm->n, mm->k); /* the layout the kernels read fastest */
    } else {
        /* F16 weights whose k is no multiple of 16 take the exact f32 copy in the precise
         * form (cuBLAS in f16 would round the activations). */
        if (!dense_form && wk_type_is_quantized(t)) {
            free(d);
            return wk_fail(WK_ERR_UNSUPPORTED, "CUDA qmatmul: no kernel for %s weights",
                           wk_type_name(t));
        }
        d->path = WK_CUDA_MM_DENSE;
        d->type = mm->form == WK_FORM_F16 ? WK_TYPE_F16 : WK_TYPE_F32;
    }
    d->w = mm->w->data;
    mm->nbytes = mm->w->nbytes;
    if (d->type != t) {
        /* Rewritten once on the device (relaid out, or dequantized for cuBLAS); the
         * original is then no longer needed: one copy of the weight. */
        size_t row = 0;
        wk_status st = wk_type_row_bytes(wk_cuda_unpacked(d->type), mm->k, &row);
        const size_t bytes = row * (size_t)mm->n;
        if (!st) st = wk_cuda_malloc(bytes, &d->owned);
        if (!st)
            st = d->path == WK_CUDA_MM_QUANT ? wk_cuda_relayout(c, t, mm->w->data, mm->n, mm->k, d->owned)
                                             : wk_cuda_dequantize(c, t, mm->w->data, nelem, d->owned, d->type);
        if (!st) st = wk_cuda_ctx_sync(c);
        if (st) {
            const wk_type dt = d->type;
            wk_cuda_free(d->owned);
            free(d);
            return wk_fail_context(st, "CUDA qmatmul: %s form of a %s [%lld, %lld] weight as %s%s",
                                   wk_form_name(mm->form), wk_type_name(t), (long long)mm->n,
                                   (long long)mm->k, wk_type_name(wk_cuda_unpacked(dt)),
                                   wk_cuda_is_packed(dt) ? " (packed)" : "");
        }
        d->w = d->owned;
        mm->nbytes = bytes;
        wk_qtensor_free(mm->w);
        mm->w = NULL;
    }
    mm->impl = d;
    return WK_OK;
}

static wk_status wk_cuda_mm_forward(wk_engine *e, wk_qmatmul *mm, const void *x, wk_type x_type,
                                    int64_t m, float *y)
{
    wk_cuda_ctx *c = wk_cuda_engine_ctx(e);
    wk_cuda_mm *d = mm->impl;
    if (d->path == WK_CUDA_MM_QUANT) return wk_cuda_qmm(c, d->type, d->w, mm->n, mm->k, x, x_type, m, y);
    return wk_cuda_gemm(c, d->type, d->w, mm->n, mm->k, x, x_type, m, y);
}

wk_status wk_cuda_mm_forward_dyn(wk_engine *e, wk_qmatmul *mm, wk_dptr x, int64_t m, wk_dptr y,
                                 const int64_t *dpos)
{
    wk_cuda_mm *d = mm->impl;
    if (d->path == WK_CUDA_MM_QUANT)
        return wk_cuda_qmm_dyn(wk_cuda_engine_ctx(e), d->type, d->w, mm->n, mm->k, x, WK_TYPE_F32, m,
                               y, dpos);
    if (dpos && (x.stride || y.stride))
        return wk_fail(WK_ERR_UNSUPPORTED, "CUDA: a cuBLAS matmul cannot follow a moving address");
    return wk_cuda_gemm(wk_cuda_engine_ctx(e), d->type, d->w, mm->n, mm->k, x.base, WK_TYPE_F32, m,
                        (float *)y.base);
}

bool wk_cuda_mm_graphable(const wk_qmatmul *mm)
{
    const wk_cuda_mm *d = mm->impl;
    return d && d->path == WK_CUDA_MM_QUANT;
}

bool wk_cuda_mm_quant_weight(const wk_qmatmul *mm, wk_type *type, const void **w)
{
    const wk_cuda_mm *d = mm->impl;
    if (!d || d->path != WK_CUDA_MM_QUANT) return false;
    *type = d->type;
    *w = d->w;
    return true;
}

static void wk_cuda_mm_free(wk_engine *e, wk_qmatmul *mm)
{
    wk_cuda_mm *d = mm->impl;
    if (!d) return;
    wk_cuda_ctx_sync(wk_cuda_engine_ctx(e));
    wk_cuda_free(d->owned);
    free(d);
    mm->impl = NULL;
}

static wk_status wk_cuda_buf_alloc(wk_engine *e, size_t nbytes, void **out)
{
    (void)e;
    return wk_cuda_malloc(nbytes, out);
}

static void wk_cuda_buf_free(wk_engine *e, void *p)
{
    wk_cuda_ctx_sync(wk_cuda_engine_ctx(e));
    wk_cuda_free(p);
}

static wk_status wk_cuda_buf_copy(wk_engine *e, void *dst, const void *src, size_t nbytes,
                                  wk_copy_kind kind)
{
    wk_cuda_ctx *c = wk_cuda_engine_ctx(e);
    switch (kind) {
    case WK_COPY_HOST_TO_DEVICE: return wk_cuda_copy_h2d(c, dst, src, nbytes);
    case WK_COPY_DEVICE_TO_HOST: return wk_cuda_copy_d2h(c, dst, src, nbytes);
    case WK_COPY_DEVICE_TO_DEVICE: return wk_cuda_copy_d2d(c, dst, src, nbytes);
    }
    return wk_fail(WK_ERR_INVALID, "CUDA copy: unknown direction %d", (int)kind);
}

static wk_status wk_cuda_engine_sync(wk_engine *e) { return wk_cuda_ctx_sync(wk_cuda_engine_ctx(e)); }

static const wk_engine_ops wk_cuda_engine_ops = {
    .free = wk_cuda_engine_free,
    .qmatmul_create = wk_cuda_mm_create,
    .qmatmul_forward = wk_cuda_mm_forward,
    .qmatmul_free = wk_cuda_mm_free,
    .buffer_alloc = wk_cuda_buf_alloc,
    .buffer_free = wk_cuda_buf_free,
    .buffer_copy = wk_cuda_buf_copy,
    .synchronize = wk_cuda_engine_sync,
};

wk_status wk_cuda_engine_create(int n_threads, wk_engine **out)
{
    *out = NULL;
    wk_cuda_ctx *c = NULL;
    wk_status st = wk_cuda_ctx_create(&c);
    if (st) return st;
    wk_engine *e = calloc(1, sizeof *e);
    if (!e) {
        wk_cuda_ctx_free(c);
        return wk_fail(WK_ERR_NOMEM, "CUDA engine: out of host memory");
    }
    e->ops = &wk_cuda_engine_ops;
    e->device = WK_DEVICE_CUDA;
    e->n_threads = n_threads;
    e->impl = c;
    *out = e;
    return WK_OK;
}

/* ---- QTensor storage ------------------------------------------------------------- */
wk_status wk_cuda_buffer_alloc(size_t nbytes, void **out) { return wk_cuda_malloc(nbytes, out); }

void wk_cuda_buffer_free(void *p) { wk_cuda_free(p); }

wk_status wk_cuda_copy_to_device(void *dst, const void *src, size_t nbytes)
{
    return wk_cuda_copy_sync(dst, src, nbytes, true);
}

wk_status wk_cuda_copy_to_host(void *dst, const void *src, size_t nbytes)
{
    return wk_cuda_copy_sync(dst, src, nbytes, false);
}
