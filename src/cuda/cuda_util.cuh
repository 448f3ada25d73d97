/* Internal (CUDA): the context struct and error helpers shared by the .cu files. */
#ifndef WICK_CUDA_UTIL_CUH
#define WICK_CUDA_UTIL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdlib.h>
#include <utility>

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

/* Programmatic dependent launch (compute capability 9.0): a kernel launched by
 * wk_launch_pdl may start while the kernel before it in the stream is still running, so
 * that its launch and its prologue (copying weights, which nothing writes) overlap that
 * kernel's work. Such a kernel calls pdl_wait() before it reads anything an earlier
 * kernel writes and before it writes anything (pdl_wait returns once the earlier kernels
 * have finished and their writes are visible), and pdl_release() once the next kernel may
 * start its own prologue. Without the launch attribute both are no-ops.
 * WICK_CUDA_PDL=0 launches normally (read once). */
__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_release()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

bool wk_cuda_pdl_enabled(void);

/* RoPE, as on the CPU: the angle of pair p (dims 2p, 2p + 1) at position pos is
 * pos * base^(-2p / n_rot), in double (lb = log(base) / n_rot); rope_rotate gives the new
 * value of a pair's element v (odd: the second) from its partner's. Every kernel that
 * rotates uses these, so that their results agree bit for bit. */
__device__ __forceinline__ void rope_angle(int64_t pos, int p, double lb, float &c, float &s)
{
    const double theta = (double)pos * exp(-2.0 * (double)p * lb);
    double sn, cs;
    sincos(theta, &sn, &cs);
    c = (float)cs, s = (float)sn;
}
__device__ __forceinline__ float rope_rotate(float v, float other, bool odd, float c, float s)
{
    return odd ? other * s + v * c : v * c - other * s;
}

/* Attribute a of the current GPU, or fallback when it cannot be asked. */
static inline int wk_cuda_attr_or(cudaDeviceAttr a, int fallback)
{
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess || v < 1) v = fallback;
    return v;
}
/* The current GPU's SM count (1 when it cannot be asked), asked once per file that uses it. */
static inline int wk_cuda_sm_count(void)
{
    static int sms = 0;
    if (!sms) sms = wk_cuda_attr_or(cudaDevAttrMultiProcessorCount, 1);
    return sms;
}
/* The shared memory an SM has, in bytes (48 KiB when it cannot be asked), asked once. */
static inline int wk_cuda_smem_per_sm(void)
{
    static int bytes = 0;
    if (!bytes) bytes = wk_cuda_attr_or(cudaDevAttrMaxSharedMemoryPerMultiprocessor, 48 << 10);
    return bytes;
}

/* A measuring switch from the environment: its value as a number, dflt when unset or
 * empty, 0 for a negative one. Callers read it once (a static). */
static inline long wk_env_long(const char *name, long dflt)
{
    const char *e = getenv(name);
    const long v = e && *e ? atol(e) : dflt;
    return v < 0 ? 0 : v;
}

/* As wk_launch_pdl, with the grid's blocks in thread-block clusters of `cluster` along x
 * (0: no clusters). */
template <typename... Params, typename... Args>
static inline wk_status wk_launch_pdl_cluster(const char *what, void (*kernel)(Params...), dim3 grid, dim3 block,
                                              size_t smem, cudaStream_t stream, unsigned cluster, Args &&...args)
{
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = wk_cuda_pdl_enabled() ? 1 : 0;
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = cluster;
    attr[1].val.clusterDim.y = 1;
    attr[1].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = cluster ? 2 : 1;
    cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
    if (e == cudaSuccess) return WK_OK;
    cudaGetLastError();
    return wk_fail(WK_ERR_DEVICE, "CUDA: launching %s: %s", what, cudaGetErrorString(e));
}

template <typename... Params, typename... Args>
static inline wk_status wk_launch_pdl(const char *what, void (*kernel)(Params...), dim3 grid, dim3 block,
                                      size_t smem, cudaStream_t stream, Args &&...args)
{
    return wk_launch_pdl_cluster(what, kernel, grid, block, smem, stream, 0u, std::forward<Args>(args)...);
}

#endif
