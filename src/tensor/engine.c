/* Engines: creation by device and the generic calls that go through an engine's ops. */
#include "core/error.h"
#include "tensor/cuda_hooks.h"
#include "tensor/engine_impl.h"

wk_status wk_engine_create(wk_device dev, int n_threads, wk_engine **out)
{
    if (!out) return wk_fail(WK_ERR_INVALID, "engine: no output pointer");
    *out = NULL;
    if (n_threads < 0)
        return wk_fail(WK_ERR_INVALID, "engine: thread count %d is negative", n_threads);
    switch (dev) {
    case WK_DEVICE_CPU: return wk_cpu_engine_create(n_threads, out);
    case WK_DEVICE_CUDA: return wk_cuda_engine_create(n_threads, out);
    }
    return wk_fail(WK_ERR_INVALID, "engine: unknown device %d", (int)dev);
}

void wk_engine_free(wk_engine *e)
{
    if (e) e->ops->free(e);
}

wk_device wk_engine_device(const wk_engine *e) { return e->device; }
int wk_engine_threads(const wk_engine *e) { return e->n_threads; }

wk_status wk_engine_synchronize(wk_engine *e) { return e->ops->synchronize(e); }

wk_status wk_engine_alloc(wk_engine *e, size_t nbytes, void **out)
{
    if (!out) return wk_fail(WK_ERR_INVALID, "engine: no output pointer");
    return e->ops->buffer_alloc(e, nbytes, out);
}

void wk_engine_free_buffer(wk_engine *e, void *p)
{
    if (p) e->ops->buffer_free(e, p);
}

wk_status wk_engine_upload(wk_engine *e, void *dst_device, const void *src_host, size_t nbytes)
{
    return e->ops->buffer_copy(e, dst_device, src_host, nbytes, WK_COPY_HOST_TO_DEVICE);
}

wk_status wk_engine_download(wk_engine *e, void *dst_host, const void *src_device, size_t nbytes)
{
    return e->ops->buffer_copy(e, dst_host, src_device, nbytes, WK_COPY_DEVICE_TO_HOST);
}
