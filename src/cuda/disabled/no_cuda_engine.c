/* Built without CUDA: the CUDA engine hooks report that clearly. */
#include "core/error.h"
#include "tensor/cuda_hooks.h"

static wk_status wk_no_cuda(void) { return wk_fail(WK_ERR_DEVICE, "wick was built without CUDA"); }

wk_status wk_cuda_engine_create(int n_threads, wk_engine **out)
{
    (void)n_threads;
    *out = NULL;
    return wk_no_cuda();
}

wk_status wk_cuda_buffer_alloc(size_t nbytes, void **out)
{
    (void)nbytes;
    *out = NULL;
    return wk_no_cuda();
}

void wk_cuda_buffer_free(void *p) { (void)p; }

wk_status wk_cuda_copy_to_device(void *dst, const void *src, size_t nbytes)
{
    (void)dst, (void)src, (void)nbytes;
    return wk_no_cuda();
}

wk_status wk_cuda_copy_to_host(void *dst, const void *src, size_t nbytes)
{
    (void)dst, (void)src, (void)nbytes;
    return wk_no_cuda();
}
