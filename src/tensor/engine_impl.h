/* Internal: what an engine is made of, so that a device (CPU, CUDA) plugs in behind
 * the public QTensor / engine / QMatMul calls without their callers knowing.
 *
 * The generic code in src/tensor/ validates arguments, resolves the form and then calls
 * the engine's table of operations; an engine never sees a bad argument. */
#ifndef WICK_TENSOR_ENGINE_IMPL_H
#define WICK_TENSOR_ENGINE_IMPL_H

#include "wick/tensor.h"

/* ---- QTensor storage ----------------------------------------------------------- */
typedef enum wk_storage_kind {
    WK_STORAGE_OWNED,    /* host bytes allocated by wick (malloc), freed with the tensor */
    WK_STORAGE_BORROWED, /* host bytes owned by someone else (a file mapping) */
    WK_STORAGE_DEVICE,   /* a device buffer (CUDA), freed through wk_cuda_buffer_free */
} wk_storage_kind;

/* Host layouts of the blocks. A repacked tensor holds the same blocks rearranged
 * (several rows interleaved) for the CPU kernels; only the CPU engine reads it. */
typedef enum wk_layout {
    WK_LAYOUT_GGUF = 0, /* rows of blocks, as in the file */
    WK_LAYOUT_REPACKED, /* rearranged by src/cpu/repack.c; see there */
    WK_LAYOUT_OCTETS,   /* the precise form's: 8 rows' blocks in turn (src/cpu/octets.h) */
} wk_layout;

struct wk_qtensor {
    wk_type type;
    int n_dims;
    int64_t dims[4]; /* outermost first; dims[n_dims-1] is the row length */
    size_t nbytes;   /* bytes of the blocks (the same in every layout) */
    wk_device device;
    wk_storage_kind kind;
    wk_layout layout;
    void *data; /* host bytes, or the device pointer for WK_STORAGE_DEVICE */
};

/* Make a tensor header around storage (no checks beyond the shape; no copy). */
wk_status wk_qtensor_new(wk_type type, int n_dims, const int64_t *dims, wk_device dev,
                         wk_storage_kind kind, void *data, wk_qtensor **out);
/* Check a shape for type t: 1-4 dims, positive, row length divisible by the block size,
 * no overflow. Fills *nbytes. `what` names the tensor in the message. */
wk_status wk_qtensor_check_shape(wk_type t, int n_dims, const int64_t *dims, const char *what,
                                 size_t *nbytes);
/* Host-memory accounting of tensor and matmul storage made by wick (bytes now held and
 * the peak), so tests can show that repacking or dequantizing does not keep two copies. */
void *wk_host_alloc(size_t nbytes);
void wk_host_free(void *p, size_t nbytes);
size_t wk_host_bytes_in_use(void);
size_t wk_host_bytes_peak(void);
void wk_host_reset_peak(void);

/* ---- engines --------------------------------------------------------------------- */
typedef enum wk_copy_kind {
    WK_COPY_HOST_TO_DEVICE,
    WK_COPY_DEVICE_TO_HOST,
    WK_COPY_DEVICE_TO_DEVICE,
} wk_copy_kind;

typedef struct wk_engine_ops {
    /* Release everything the engine holds, e itself included. */
    void (*free)(wk_engine *e);
    /* Prepare mm (fields below filled, mm->form resolved, mm->w on e's device and owned by
     * mm): upload, repack or dequantize the weight; set mm->impl and mm->nbytes. The engine
     * may replace mm->w or free it (setting it to NULL) when it keeps another copy. */
    wk_status (*qmatmul_create)(wk_engine *e, wk_qmatmul *mm);
    /* y = x · Wᵀ for m rows; x (F32 or F16) and y are in the engine's device memory;
     * k already checked. */
    wk_status (*qmatmul_forward)(wk_engine *e, wk_qmatmul *mm, const void *x, wk_type x_type,
                                 int64_t m, float *y);
    /* Release mm->impl (the generic code frees mm->w and mm). */
    void (*qmatmul_free)(wk_engine *e, wk_qmatmul *mm);
    /* Activation buffers in the engine's device memory. */
    wk_status (*buffer_alloc)(wk_engine *e, size_t nbytes, void **out);
    void (*buffer_free)(wk_engine *e, void *p);
    wk_status (*buffer_copy)(wk_engine *e, void *dst, const void *src, size_t nbytes,
                             wk_copy_kind kind);
    /* Wait until all queued work is done. */
    wk_status (*synchronize)(wk_engine *e);
} wk_engine_ops;

struct wk_engine {
    const wk_engine_ops *ops;
    wk_device device;
    int n_threads; /* CPU worker threads (the CUDA engine records what it was given) */
    void *impl;    /* the engine's own state */
};

struct wk_qmatmul {
    wk_engine *engine;
    wk_qtensor *w;    /* the weight [n, k], owned; may be NULL once the engine dropped it */
    wk_type w_type;   /* the weight's type as given */
    wk_form form;     /* resolved: never WK_FORM_AUTO */
    int64_t n, k;
    size_t nbytes;    /* weight memory in use, set by the engine */
    void *impl;       /* the engine's state for this matmul */
};

/* The form that a weight of type t gets when `asked` is requested (AUTO: environment). */
wk_form wk_form_resolve(wk_type t, wk_form asked);

/* The CPU engine (src/cpu/). */
wk_status wk_cpu_engine_create(int n_threads, wk_engine **out);

#endif
