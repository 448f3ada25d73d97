/* The CUDA context: stream, cuBLAS handle, scratch; memory and copies; timers. */
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_util.cuh"

extern "C" bool wk_cuda_device_present(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return n > 0;
}

extern "C" wk_status wk_cuda_ctx_create(wk_cuda_ctx **out)
{
    *out = NULL;
    if (!wk_cuda_device_present())
        return wk_fail(WK_ERR_DEVICE, "no CUDA device is present (cudaGetDeviceCount found none)");
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (major < 8)
        return wk_fail(WK_ERR_DEVICE, "the CUDA device has compute capability %d.%d; wick's kernels "
                                      "need 8.0 or newer (tensor-core mma.m16n8k16)", major, minor);
    wk_cuda_ctx *c = (wk_cuda_ctx *)calloc(1, sizeof *c);
    if (!c) return wk_fail(WK_ERR_NOMEM, "CUDA context: out of host memory");
    wk_status st = wk_cuda_err(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
                               "cudaStreamCreate");
    if (!st) st = wk_blas_err(cublasCreate(&c->blas), "cublasCreate");
    if (!st) st = wk_blas_err(cublasSetStream(c->blas, c->stream), "cublasSetStream");
    if (!st) st = wk_blas_err(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    if (!st) st = wk_cuda_err(cudaMalloc(&c->blas_ws, (size_t)32 << 20), "cudaMalloc (cuBLAS workspace)");
    if (!st) st = wk_blas_err(cublasSetWorkspace(c->blas, c->blas_ws, (size_t)32 << 20), "cublasSetWorkspace");
    if (st) {
        wk_cuda_ctx_free(c);
        return st;
    }
    *out = c;
    return WK_OK;
}

extern "C" void wk_cuda_ctx_free(wk_cuda_ctx *c)
{
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
    if (c->user && c->user_free) c->user_free(c->user);
    if (c->scratch) cudaFree(c->scratch);
    if (c->blas) cublasDestroy(c->blas);
    if (c->blas_ws) cudaFree(c->blas_ws);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" void *wk_cuda_ctx_stream(wk_cuda_ctx *c) { return (void *)c->stream; }

extern "C" wk_status wk_cuda_ctx_sync(wk_cuda_ctx *c)
{
    return wk_cuda_err(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
}

extern "C" wk_status wk_cuda_scratch_reserve(wk_cuda_ctx *c, size_t bytes)
{
    if (bytes <= c->scratch_bytes) return WK_OK;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(c->stream, &cs);
    if (cs != cudaStreamCaptureStatusNone)
        return wk_fail(WK_ERR_DEVICE, "CUDA scratch of %zu bytes needed while capturing a graph "
                                      "(only %zu reserved)", bytes, c->scratch_bytes);
    WK_CU(cudaStreamSynchronize(c->stream));
    if (c->scratch) cudaFree(c->scratch);
    c->scratch = NULL;
    c->scratch_bytes = 0;
    size_t want = bytes + bytes / 4;
    WK_CU(cudaMalloc(&c->scratch, want));
    c->scratch_bytes = want;
    return WK_OK;
}

extern "C" wk_status wk_cuda_malloc(size_t bytes, void **out)
{
    *out = NULL;
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return wk_fail(WK_ERR_NOMEM, "CUDA: cannot allocate %zu bytes of device memory: %s", bytes,
                       cudaGetErrorString(e));
    }
    return WK_OK;
}

extern "C" void wk_cuda_free(void *p)
{
    if (p) cudaFree(p);
}

extern "C" wk_status wk_cuda_copy_h2d(wk_cuda_ctx *c, void *dst, const void *src, size_t bytes)
{
    WK_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream));
    return wk_cuda_ctx_sync(c);
}

extern "C" wk_status wk_cuda_copy_d2h(wk_cuda_ctx *c, void *dst, const void *src, size_t bytes)
{
    WK_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    return wk_cuda_ctx_sync(c);
}

extern "C" wk_status wk_cuda_copy_d2d(wk_cuda_ctx *c, void *dst, const void *src, size_t bytes)
{
    WK_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
    return WK_OK;
}

extern "C" wk_status wk_cuda_memset(wk_cuda_ctx *c, void *dst, int byte, size_t bytes)
{
    WK_CU(cudaMemsetAsync(dst, byte, bytes, c->stream));
    return WK_OK;
}

extern "C" wk_status wk_cuda_check_launch(const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return WK_OK;
    return wk_fail(WK_ERR_DEVICE, "CUDA: launching %s: %s", what, cudaGetErrorString(e));
}

bool wk_cuda_pdl_enabled(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("WICK_CUDA_PDL");
        on = !(e && strcmp(e, "0") == 0);
    }
    return on != 0;
}

struct wk_cuda_timer {
    cudaEvent_t a, b;
};

extern "C" wk_status wk_cuda_timer_create(wk_cuda_timer **out)
{
    wk_cuda_timer *t = (wk_cuda_timer *)calloc(1, sizeof *t);
    if (!t) return wk_fail(WK_ERR_NOMEM, "CUDA timer: out of host memory");
    if (cudaEventCreate(&t->a) != cudaSuccess || cudaEventCreate(&t->b) != cudaSuccess) {
        free(t);
        return wk_fail(WK_ERR_DEVICE, "CUDA: cudaEventCreate failed");
    }
    *out = t;
    return WK_OK;
}

extern "C" void wk_cuda_timer_free(wk_cuda_timer *t)
{
    if (!t) return;
    cudaEventDestroy(t->a);
    cudaEventDestroy(t->b);
    free(t);
}

extern "C" wk_status wk_cuda_timer_start(wk_cuda_ctx *c, wk_cuda_timer *t)
{
    WK_CU(cudaEventRecord(t->a, c->stream));
    return WK_OK;
}

extern "C" wk_status wk_cuda_timer_stop(wk_cuda_ctx *c, wk_cuda_timer *t, float *ms)
{
    WK_CU(cudaEventRecord(t->b, c->stream));
    WK_CU(cudaEventSynchronize(t->b));
    WK_CU(cudaEventElapsedTime(ms, t->a, t->b));
    return WK_OK;
}

extern "C" wk_status wk_cuda_copy_sync(void *dst, const void *src, size_t bytes, bool to_device)
{
    WK_CU(cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
    /* From pageable memory cudaMemcpy may return before the last bytes reach the device,
     * and the engines' streams do not wait for the legacy stream: a kernel reading the
     * weight right away (Q8_0's relayout, the f32 form's dequantization) could see the end
     * of it unwritten. */
    if (to_device) WK_CU(cudaDeviceSynchronize());
    return WK_OK;
}

extern "C" void **wk_cuda_ctx_user(wk_cuda_ctx *c, void (*user_free)(void *))
{
    c->user_free = user_free;
    return &c->user;
}

/* ---- graphs -------------------------------------------------------------------- */
__global__ void set_pos_kernel(int64_t *d, int64_t v) { *d = v; }

extern "C" wk_status wk_cuda_set_pos(wk_cuda_ctx *c, int64_t *dpos, int64_t value)
{
    set_pos_kernel<<<1, 1, 0, c->stream>>>(dpos, value);
    return wk_cuda_check_launch("set_pos");
}

extern "C" wk_status wk_cuda_capture_begin(wk_cuda_ctx *c)
{
    WK_CU(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    return WK_OK;
}

extern "C" wk_status wk_cuda_capture_end(wk_cuda_ctx *c, void **exec_out)
{
    *exec_out = NULL;
    cudaGraph_t g = NULL;
    WK_CU(cudaStreamEndCapture(c->stream, &g));
    cudaGraphExec_t ex = NULL;
    cudaError_t e = cudaGraphInstantiate(&ex, g, 0);
    cudaGraphDestroy(g);
    WK_CU(e);
    *exec_out = (void *)ex;
    return WK_OK;
}

/* After a failed capture: end it and drop what was recorded. */
extern "C" void wk_cuda_capture_abort(wk_cuda_ctx *c)
{
    cudaGraph_t g = NULL;
    cudaStreamEndCapture(c->stream, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
}

extern "C" wk_status wk_cuda_graph_launch(wk_cuda_ctx *c, void *exec)
{
    WK_CU(cudaGraphLaunch((cudaGraphExec_t)exec, c->stream));
    return WK_OK;
}

extern "C" void wk_cuda_graph_free(void *exec)
{
    if (exec) cudaGraphExecDestroy((cudaGraphExec_t)exec);
}

/* ---- copies back that the host collects later ----------------------------------------- */
struct wk_cuda_later {
    void *pinned; /* page-locked staging: the copy runs without the host */
    size_t cap;
    cudaEvent_t done;
};

extern "C" wk_status wk_cuda_later_create(size_t cap, wk_cuda_later **out)
{
    *out = NULL;
    wk_cuda_later *l = (wk_cuda_later *)calloc(1, sizeof *l);
    if (!l) return wk_fail(WK_ERR_NOMEM, "CUDA: out of host memory");
    if (cudaHostAlloc(&l->pinned, cap, cudaHostAllocDefault) != cudaSuccess) {
        cudaGetLastError();
        free(l);
        return wk_fail(WK_ERR_NOMEM, "CUDA: cannot allocate %zu bytes of page-locked memory", cap);
    }
    if (cudaEventCreateWithFlags(&l->done, cudaEventDisableTiming) != cudaSuccess) {
        cudaFreeHost(l->pinned);
        free(l);
        return wk_fail(WK_ERR_DEVICE, "CUDA: cudaEventCreate failed");
    }
    l->cap = cap;
    *out = l;
    return WK_OK;
}

extern "C" void wk_cuda_later_free(wk_cuda_later *l)
{
    if (!l) return;
    cudaEventSynchronize(l->done);
    cudaEventDestroy(l->done);
    cudaFreeHost(l->pinned);
    free(l);
}

extern "C" wk_status wk_cuda_later_start(wk_cuda_ctx *c, wk_cuda_later *l, const void *src, size_t bytes)
{
    if (bytes > l->cap)
        return wk_fail(WK_ERR_INVALID, "CUDA: a later copy of %zu bytes (at most %zu)", bytes, l->cap);
    WK_CU(cudaMemcpyAsync(l->pinned, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    WK_CU(cudaEventRecord(l->done, c->stream));
    return WK_OK;
}

extern "C" wk_status wk_cuda_later_finish(wk_cuda_later *l, void *dst, size_t bytes)
{
    WK_CU(cudaEventSynchronize(l->done));
    memcpy(dst, l->pinned, bytes);
    return WK_OK;
}
