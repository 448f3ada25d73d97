/* Built without CUDA: the CUDA entry points report that clearly. */
#include "core/error.h"
#include "tensor/cuda_hooks.h"
#include "wick/tensor.h"

#define WK_NO_CUDA "wick was built without CUDA (configure with -DWICK_CUDA=ON where nvcc exists)"

bool wk_cuda_available(void) { return false; }

wk_status wk_cuda_engine_create(int n_threads, wk_engine **out)
{
    (void)n_threads;
    if (out) *out = NULL;
    return wk_fail(WK_ERR_DEVICE, WK_NO_CUDA);
}

wk_status wk_cuda_buffer_alloc(size_t nbytes, void **out)
{
    (void)nbytes;
    if (out) *out = NULL;
    return wk_fail(WK_ERR_DEVICE, WK_NO_CUDA);
}

void wk_cuda_buffer_free(void *p) { (void)p; }

wk_status wk_cuda_copy_to_device(void *dst, const void *src, size_t nbytes)
{
    (void)dst, (void)src, (void)nbytes;
    return wk_fail(WK_ERR_DEVICE, WK_NO_CUDA);
}

wk_status wk_cuda_copy_to_host(void *dst, const void *src, size_t nbytes)
{
    (void)dst, (void)src, (void)nbytes;
    return wk_fail(WK_ERR_DEVICE, WK_NO_CUDA);
}
