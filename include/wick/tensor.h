/* wick: QTensor (quantized tensor on a device), engines and QMatMul. */
#ifndef WICK_TENSOR_H
#define WICK_TENSOR_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- QTensor ----------------------------------------------------------------
 * Type, shape (1 to 4 dims) and storage on a device. No strides: the data are
 * contiguous blocks along the last dimension, never crossing a row. In this API
 * shapes are given outermost first (PyTorch order): dims[n_dims-1] is the row
 * length, which must be a multiple of the type's block size. */
typedef struct wk_qtensor wk_qtensor;

/* Zero-filled CPU storage. */
wk_status wk_qtensor_create(wk_type type, int n_dims, const int64_t *dims, wk_qtensor **out);
/* Borrow CPU bytes (nbytes checked against type and shape); data must outlive it. */
wk_status wk_qtensor_wrap(wk_type type, int n_dims, const int64_t *dims, void *data,
                          size_t nbytes, wk_qtensor **out);
/* Quantize f32 values (all elements, row-major) into a new CPU tensor. */
wk_status wk_qtensor_quantize(wk_type type, int n_dims, const int64_t *dims, const float *src,
                              wk_qtensor **out);
void wk_qtensor_free(wk_qtensor *t);

wk_type wk_qtensor_type(const wk_qtensor *t);
int wk_qtensor_n_dims(const wk_qtensor *t);
int64_t wk_qtensor_dim(const wk_qtensor *t, int i); /* outermost first */
int64_t wk_qtensor_nelements(const wk_qtensor *t);
size_t wk_qtensor_nbytes(const wk_qtensor *t);
wk_device wk_qtensor_device(const wk_qtensor *t);
/* Host bytes of a CPU tensor (NULL for a device tensor). */
const void *wk_qtensor_data(const wk_qtensor *t);

/* Dequantize every element into host memory (any device). */
wk_status wk_qtensor_dequantize_f32(const wk_qtensor *t, float *dst);
wk_status wk_qtensor_dequantize_f16(const wk_qtensor *t, uint16_t *dst);
/* A copy of t on another device. */
wk_status wk_qtensor_to_device(const wk_qtensor *t, wk_device dev, wk_qtensor **out);

/* ---- engines -------------------------------------------------------------------
 * An engine is what runs work on a device: on the CPU a persistent thread pool and
 * scratch memory reused across calls; on CUDA a stream and library handles. */
typedef struct wk_engine wk_engine;

/* n_threads = 0: WICK_NUM_THREADS, else the number of cores (CPU only). */
wk_status wk_engine_create(wk_device dev, int n_threads, wk_engine **out);
void wk_engine_free(wk_engine *e);
wk_device wk_engine_device(const wk_engine *e);
int wk_engine_threads(const wk_engine *e);
/* Is a CUDA device present (false when built without CUDA)? */
bool wk_cuda_available(void);
/* Wait until the engine's queued work is done (a no-op on the CPU). */
wk_status wk_engine_synchronize(wk_engine *e);
/* Activation buffers in the engine's device memory (host memory for the CPU engine). */
wk_status wk_engine_alloc(wk_engine *e, size_t nbytes, void **out);
void wk_engine_free_buffer(wk_engine *e, void *p);
wk_status wk_engine_upload(wk_engine *e, void *dst_device, const void *src_host, size_t nbytes);
wk_status wk_engine_download(wk_engine *e, void *dst_host, const void *src_device, size_t nbytes);

/* ---- QMatMul -------------------------------------------------------------------
 * y = x · Wᵀ. W is [n, k]; x is [m, k] (leading dims flattened); y is [m, n]. */
typedef enum wk_form {
    WK_FORM_AUTO = 0,  /* the environment's choice, else quantized */
    WK_FORM_QUANTIZED, /* weights stay quantized, activations quantized (CPU) */
    WK_FORM_PRECISE,   /* weights stay quantized, activations stay f32 */
    WK_FORM_F32,       /* weights dequantized once to f32, dense matmul */
    WK_FORM_F16,       /* weights dequantized once to f16, dense matmul */
} wk_form;

const char *wk_form_name(wk_form f);
wk_status wk_form_from_name(const char *name, wk_form *out);
/* WICK_DEQUANTIZE_ALL (set, non-empty, not "0") -> f32; else WICK_DEQUANTIZE_ALL_F16
 * -> f16; else quantized. Read once per process. */
wk_form wk_form_from_env(void);

typedef struct wk_qmatmul wk_qmatmul;

/* Build a matmul on e's device from w (a 2-D [n, k] tensor). The matmul takes
 * ownership of w: it may rearrange its bytes (repacking) or replace its storage,
 * and frees it in wk_qmatmul_free. F32/F16/BF16 weights always use a dense form. */
wk_status wk_qmatmul_create(wk_engine *e, wk_qtensor *w, wk_form form, wk_qmatmul **out);
void wk_qmatmul_free(wk_qmatmul *mm);
wk_form wk_qmatmul_form(const wk_qmatmul *mm);
int64_t wk_qmatmul_n(const wk_qmatmul *mm);
int64_t wk_qmatmul_k(const wk_qmatmul *mm);
size_t wk_qmatmul_nbytes(const wk_qmatmul *mm); /* weight memory in use */

/* x: m rows of k values of x_type (WK_TYPE_F32 or WK_TYPE_F16); y: m rows of n f32.
 * Pointers are in the engine's device memory. */
wk_status wk_qmatmul_forward(wk_qmatmul *mm, const void *x, wk_type x_type, int64_t m, int64_t k,
                             float *y);

#ifdef __cplusplus
}
#endif
#endif
