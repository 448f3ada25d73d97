/* Internal (CUDA): the context struct and error helpers shared by the .cu files. */
#ifndef WICK_CUDA_UTIL_CUH
#define WICK_CUDA_UTIL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "cuda/kernels.h"

struct wk_cuda_ctx {
    cudaStream_t stream;
    cublasHandle_t blas;
    void *scratch;
    size_t scratch_bytes;
    void *blas_ws; /* cuBLAS workspace, so cuBLAS allocates nothing inside a graph */
    bool reuse_x; /* the next quantized matmul takes the input prepared by the last one */
    wk_dptr add_to; /* the next quantized matmul also adds its result here (base NULL: no) */
    void *user; /* the model backend's state, released with user_free */
    void (*user_free)(void *);
};

/* A failed CUDA call as a wick error naming the call and CUDA's message. */
static inline wk_status wk_cuda_err(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return WK_OK;
    return wk_fail(WK_ERR_DEVICE, "CUDA: %s: %s", what, cudaGetErrorString(e));
}
static inline wk_status wk_blas_err(cublasStatus_t e, const char *what)
{
    if (e == CUBLAS_STATUS_SUCCESS) return WK_OK;
    return wk_fail(WK_ERR_DEVICE, "cuBLAS: %s: status %d", what, (int)e);
}

#define WK_CU(call)                                                                                \
    do {                                                                                           \
        wk_status st_ = wk_cuda_err((call), #call);                                                \
        if (st_) return st_;                                                                       \
    } while (0)

#define WK_LAUNCHED(what)                                                                          \
    do {                                                                                           \
        wk_status st_ = wk_cuda_check_launch(what);                                                \
        if (st_) return st_;                                                                       \
    } while (0)

#endif
