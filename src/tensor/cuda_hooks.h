/* Internal: the entry points the CUDA engine (src/cuda/) provides to the generic tensor
 * code. A build without CUDA links src/cuda/disabled/ instead, where every one of them
 * reports WK_ERR_DEVICE ("wick was built without CUDA") and wk_cuda_available() is false. */
#ifndef WICK_TENSOR_CUDA_HOOKS_H
#define WICK_TENSOR_CUDA_HOOKS_H

#include "tensor/engine_impl.h"

/* bool wk_cuda_available(void) is public (wick/tensor.h). */

/* A CUDA engine (struct wk_engine with device WK_DEVICE_CUDA and its ops table). */
wk_status wk_cuda_engine_create(int n_threads, wk_engine **out);

/* Device memory for QTensor storage, independent of any engine (wk_qtensor_to_device
 * has no engine). Copies are synchronous. */
wk_status wk_cuda_buffer_alloc(size_t nbytes, void **out);
void wk_cuda_buffer_free(void *p);
wk_status wk_cuda_copy_to_device(void *dst, const void *src, size_t nbytes);
wk_status wk_cuda_copy_to_host(void *dst, const void *src, size_t nbytes);

#endif
