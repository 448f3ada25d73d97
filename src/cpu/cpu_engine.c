/* The CPU engine: a thread pool, scratch memory and host buffers behind the engine ops. */
#include "cpu/cpu_engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cpu/bandwidth.h"

#if defined(WICK_HAVE_OPENBLAS)
#include <cblas.h>
#endif

static void wk_cpu_free(wk_engine *e)
{
    wk_cpu_engine *ce = (wk_cpu_engine *)e;
    wk_pool_free(ce->pool);
    free(ce->scratch);
    free(ce);
}

void *wk_cpu_scratch(wk_cpu_engine *ce, size_t nbytes)
{
    if (nbytes <= ce->scratch_bytes) return ce->scratch;
    size_t want = nbytes + nbytes / 4 + 4096;
    void *p = NULL;
    if (posix_memalign(&p, 64, want) != 0) return NULL;
    free(ce->scratch);
    ce->scratch = p;
    ce->scratch_bytes = want;
    return p;
}

static wk_status wk_cpu_buffer_alloc(wk_engine *e, size_t nbytes, void **out)
{
    (void)e;
    void *p = NULL;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 1) != 0)
        return wk_fail(WK_ERR_NOMEM, "cpu engine: cannot allocate a buffer of %zu bytes", nbytes);
    *out = p;
    return WK_OK;
}

static void wk_cpu_buffer_free(wk_engine *e, void *p)
{
    (void)e;
    free(p);
}

static wk_status wk_cpu_buffer_copy(wk_engine *e, void *dst, const void *src, size_t nbytes,
                                    wk_copy_kind kind)
{
    (void)e, (void)kind;
    memmove(dst, src, nbytes);
    return WK_OK;
}

static wk_status wk_cpu_synchronize(wk_engine *e)
{
    (void)e;
    return WK_OK;
}

static const wk_engine_ops wk_cpu_ops = {
    .free = wk_cpu_free,
    .qmatmul_create = wk_cpu_qmatmul_create,
    .qmatmul_forward = wk_cpu_qmatmul_forward,
    .qmatmul_free = wk_cpu_qmatmul_free,
    .buffer_alloc = wk_cpu_buffer_alloc,
    .buffer_free = wk_cpu_buffer_free,
    .buffer_copy = wk_cpu_buffer_copy,
    .synchronize = wk_cpu_synchronize,
};

wk_status wk_cpu_engine_create(int n_threads, wk_engine **out)
{
    wk_cpu_engine *ce = calloc(1, sizeof *ce);
    if (!ce) return wk_fail(WK_ERR_NOMEM, "cpu engine: out of memory");
    wk_status st = wk_pool_create(n_threads, &ce->pool);
    if (st) {
        free(ce);
        return st;
    }
    ce->isa = wk_cpu_isa();
    atomic_init(&ce->repacked_bytes, 0);
    ce->llc_bytes = wk_cpu_llc_bytes();
    ce->base.ops = &wk_cpu_ops;
    ce->base.device = WK_DEVICE_CPU;
    ce->base.n_threads = wk_pool_threads(ce->pool);
    ce->base.impl = ce;
#if defined(WICK_HAVE_OPENBLAS)
    /* OpenBLAS keeps its own threads; give it the same count as the engine. */
    openblas_set_num_threads(ce->base.n_threads);
#endif
    *out = &ce->base;
    return WK_OK;
}
