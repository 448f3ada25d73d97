/* Internal: the operations the Llama forward runs on a device.
 *
 * One forward, two devices: src/model/llama_forward.c calls only this table, so the model
 * never branches on the device. src/cpu/ops*.c implements it for the CPU (wk_cpu_backend);
 * src/cuda/ implements it for CUDA (wk_cuda_backend).
 *
 * Conventions for every operation:
 * - e is an engine of the table's device; every float/int pointer is in that engine's
 *   memory (from alloc); sizes and positions are host integers.
 * - Activations are row-major f32: "rows × dim" means rows consecutive rows of dim floats.
 * - Arguments were validated by the model (shapes, positions < context, ids < vocabulary);
 *   an operation returns WK_OK or a device failure (wk_fail with the reason), never aborts.
 * - Operations may be queued (CUDA stream); download and sync wait for them.
 */
#ifndef WICK_MODEL_BACKEND_H
#define WICK_MODEL_BACKEND_H

#include "wick/common.h"
#include "wick/tensor.h"

typedef struct wk_backend {
    wk_device device;

    /* ---- device memory ---- */
    /* nbytes of device memory (contents undefined); WK_ERR_NOMEM when it cannot be had. */
    wk_status (*alloc)(wk_engine *e, size_t nbytes, void **out);
    void (*free)(wk_engine *e, void *p);
    /* Host -> device, device -> host (download waits for queued work). */
    wk_status (*upload)(wk_engine *e, void *dst, const void *src, size_t nbytes);
    wk_status (*download)(wk_engine *e, void *dst, const void *src, size_t nbytes);
    /* Wait until every queued operation has finished. */
    wk_status (*sync)(wk_engine *e);

    /* ---- the operations of the forward ---- */

    /* x[r, :] = table[ids[r], :] dequantized to f32, for r < rows.
     * table: a 2-D [n_vocab, dim] QTensor on this device (any type); ids: rows int32. */
    wk_status (*embed_rows)(wk_engine *e, const wk_qtensor *table, const int32_t *ids,
                            int64_t rows, float *x);

    /* y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, for rows × dim; y may be x. */
    wk_status (*rmsnorm)(wk_engine *e, float *y, const float *x, const float *w, int64_t rows,
                         int64_t dim, float eps);

    /* RoPE in place, "normal" mode (GGUF llama: adjacent pairs, since conversion permuted
     * q and k). x: rows × (n_heads * head_dim), row r at position pos0 + r. In each head,
     * for i < n_rot / 2: the pair (x[2i], x[2i+1]) turns by the angle
     * pos * freq_base^(-2i / n_rot); dims from n_rot on are left as they are. */
    wk_status (*rope)(wk_engine *e, float *x, int64_t rows, int64_t n_heads, int64_t head_dim,
                      int64_t n_rot, int64_t pos0, float freq_base);

    /* Causal grouped-query attention over a KV cache.
     * q: rows × (n_heads * head_dim), row r is the token at position pos0 + r.
     * k_cache, v_cache: rows of (n_kv_heads * head_dim) indexed by position, holding
     * positions 0 .. pos0 + rows - 1 (this batch's keys and values already written).
     * out[r, head h] = softmax_j<=pos0+r (q_h · k_j / sqrt(head_dim)) · v_j, with kv head
     * h / (n_heads / n_kv_heads). out: rows × (n_heads * head_dim), not aliasing q. */
    wk_status (*attention)(wk_engine *e, float *out, const float *q, const float *k_cache,
                           const float *v_cache, int64_t rows, int64_t pos0, int64_t n_heads,
                           int64_t n_kv_heads, int64_t head_dim);

    /* gate[i] = silu(gate[i]) * up[i] for i < n (the SiLU-gated MLP product). */
    wk_status (*silu_mul)(wk_engine *e, float *gate, const float *up, int64_t n);

    /* y[i] += x[i] for i < n (the residual connections). */
    wk_status (*add)(wk_engine *e, float *y, const float *x, int64_t n);

    /* dst[i] = src[i] for i < n floats (device to device; regions do not overlap). */
    wk_status (*copy)(wk_engine *e, float *dst, const float *src, int64_t n);

    /* *out = wk_argmax_f32(x, n) (core/argmax.h: the first of equal values, NaNs passed
     * over). out is one int32 in this engine's memory: greedy decoding copies back one id
     * instead of the vocabulary's logits. */
    wk_status (*argmax)(wk_engine *e, const float *x, int64_t n, int32_t *out);

    /* y = x · Wᵀ: x is m × k f32, y is m × n (wk_qmatmul_forward on this engine). */
    wk_status (*matmul)(wk_engine *e, wk_qmatmul *mm, const float *x, int64_t m, float *y);

    /* Optional (NULL: the forward calls matmul for each): y[i] = x · W[i]ᵀ for i < count
     * (2 or 3) matmuls of the same input, all with the same k, as one piece of work (the
     * CPU quantizes x once and runs them in one parallel dispatch). Results equal those of
     * matmul. */
    wk_status (*matmuls)(wk_engine *e, int count, wk_qmatmul *const *mm, const float *x,
                         int64_t m, float *const *y);

    /* Optional (NULL: greedy decoding waits for each choice): download_later queues a copy
     * of nbytes (at most 64) device -> host after everything queued so far and returns; its
     * bytes are in dst once collect has returned, which takes the oldest queued copy. At
     * most 2 queued at a time. Greedy decoding then runs one step ahead of the host. */
    wk_status (*download_later)(wk_engine *e, void *dst, const void *src, size_t nbytes);
    wk_status (*collect)(wk_engine *e);
} wk_backend;

/* The CPU table (src/cpu/ops.c). */
extern const wk_backend wk_cpu_backend;
/* The CUDA table (src/cuda/backend.c); present only in builds with WICK_HAVE_CUDA. */
extern const wk_backend wk_cuda_backend;

/* The table for a device, or NULL (with a message) when this build has none for it. */
const wk_backend *wk_backend_for(wk_device dev);

#endif
