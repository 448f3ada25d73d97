/* QMatMul: argument checks and form resolution, then the engine does the work. */
#include <stdlib.h>

#include "core/error.h"
#include "tensor/engine_impl.h"
#include "wick/quant.h"

wk_status wk_qmatmul_create(wk_engine *e, wk_qtensor *w, wk_form form, wk_qmatmul **out)
{
    if (!out) return wk_fail(WK_ERR_INVALID, "qmatmul: no output pointer");
    *out = NULL;
    if (!e || !w) return wk_fail(WK_ERR_INVALID, "qmatmul: no %s given", e ? "weight" : "engine");
    if (w->n_dims != 2)
        return wk_fail(WK_ERR_INVALID, "qmatmul: the weight has %d dimensions (expected 2: [n, k])",
                       w->n_dims);
    if ((int)form < WK_FORM_AUTO || (int)form > WK_FORM_F16)
        return wk_fail(WK_ERR_INVALID, "qmatmul: unknown form %d", (int)form);
    if (w->layout != WK_LAYOUT_GGUF)
        return wk_fail(WK_ERR_INVALID, "qmatmul: the weight already belongs to a matmul");
    wk_qmatmul *mm = calloc(1, sizeof *mm);
    if (!mm) return wk_fail(WK_ERR_NOMEM, "qmatmul: out of memory");
    mm->engine = e;
    mm->w_type = w->type;
    mm->form = wk_form_resolve(w->type, form);
    mm->n = w->dims[0];
    mm->k = w->dims[1];
    /* Weights on another device are brought to the engine's; the original is freed
     * only once the matmul exists (on failure the caller still owns w). */
    wk_qtensor *orig = w;
    if (w->device != e->device) {
        wk_status st = wk_qtensor_to_device(orig, e->device, &w);
        if (st) {
            free(mm);
            return wk_fail_context(st, "qmatmul: moving the weight to %s", wk_device_name(e->device));
        }
    }
    mm->w = w;
    /* An engine that fails leaves mm->w as it was. */
    wk_status st = e->ops->qmatmul_create(e, mm);
    if (st) {
        if (w != orig) wk_qtensor_free(w);
        free(mm);
        return st;
    }
    if (w != orig) wk_qtensor_free(orig);
    *out = mm;
    return WK_OK;
}

void wk_qmatmul_free(wk_qmatmul *mm)
{
    if (!mm) return;
    mm->engine->ops->qmatmul_free(mm->engine, mm);
    wk_qtensor_free(mm->w);
    free(mm);
}

wk_form wk_qmatmul_form(const wk_qmatmul *mm) { return mm->form; }
int64_t wk_qmatmul_n(const wk_qmatmul *mm) { return mm->n; }
int64_t wk_qmatmul_k(const wk_qmatmul *mm) { return mm->k; }
size_t wk_qmatmul_nbytes(const wk_qmatmul *mm) { return mm->nbytes; }

wk_status wk_qmatmul_forward(wk_qmatmul *mm, const void *x, wk_type x_type, int64_t m, int64_t k,
                             float *y)
{
    if (!mm) return wk_fail(WK_ERR_INVALID, "qmatmul: no matmul given");
    if (x_type != WK_TYPE_F32 && x_type != WK_TYPE_F16)
        return wk_fail(WK_ERR_INVALID, "qmatmul: input type %s is not supported (expected f32 or f16)",
                       wk_type_name(x_type));
    if (k != mm->k)
        return wk_fail(WK_ERR_INVALID,
                       "qmatmul: input rows have %lld values but the weight [%lld, %lld] needs k = %lld",
                       (long long)k, (long long)mm->n, (long long)mm->k, (long long)mm->k);
    if (m < 0) return wk_fail(WK_ERR_INVALID, "qmatmul: %lld input rows", (long long)m);
    if (m == 0) return WK_OK;
    if (!x || !y) return wk_fail(WK_ERR_INVALID, "qmatmul: no %s buffer", x ? "output" : "input");
    return mm->engine->ops->qmatmul_forward(mm->engine, mm, x, x_type, m, y);
}
