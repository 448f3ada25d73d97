/* Internal: the C-callable side of the CUDA engine. Everything here works on device
 * pointers and runs on the context's stream; the engine, the model's device operations,
 * the tests and the device benchmark call it. Built only with WICK_CUDA. */
#ifndef WICK_CUDA_KERNELS_H
#define WICK_CUDA_KERNELS_H

#include "wick/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device address that may move with the position of a decode step: the address used
 * is base + stride * (*pos) when the kernel is given a position pointer (graph replay),
 * else base. */
typedef struct wk_dptr {
    void *base;
    int64_t stride; /* bytes per position */
} wk_dptr;
static inline wk_dptr wk_dp(const void *p) { wk_dptr d = {(void *)p, 0}; return d; }

/* A stream, a cuBLAS handle and a scratch area reused across calls. */
typedef struct wk_cuda_ctx wk_cuda_ctx;

bool wk_cuda_device_present(void);
wk_status wk_cuda_ctx_create(wk_cuda_ctx **out);
void wk_cuda_ctx_free(wk_cuda_ctx *c);
void *wk_cuda_ctx_stream(wk_cuda_ctx *c); /* the cudaStream_t */
wk_status wk_cuda_ctx_sync(wk_cuda_ctx *c);
/* A slot for the model backend's state, freed with the context by user_free. */
void **wk_cuda_ctx_user(wk_cuda_ctx *c, void (*user_free)(void *));
/* Graphs: capture the context's stream, instantiate, replay. set_pos writes *dpos in
 * stream order (a one-thread kernel) so the replayed kernels read the step's position. */
wk_status wk_cuda_set_pos(wk_cuda_ctx *c, int64_t *dpos, int64_t value);
wk_status wk_cuda_capture_begin(wk_cuda_ctx *c);
wk_status wk_cuda_capture_end(wk_cuda_ctx *c, void **exec_out);
void wk_cuda_capture_abort(wk_cuda_ctx *c);
wk_status wk_cuda_graph_launch(wk_cuda_ctx *c, void *exec);
void wk_cuda_graph_free(void *exec);
/* Make sure the scratch area holds at least bytes (grows it; never during capture). */
wk_status wk_cuda_scratch_reserve(wk_cuda_ctx *c, size_t bytes);
/* Scratch bytes a matmul of m rows of k needs. */
size_t wk_cuda_qmm_scratch_bytes(int64_t m, int64_t k);

wk_status wk_cuda_malloc(size_t bytes, void **out);
void wk_cuda_free(void *p);
wk_status wk_cuda_copy_h2d(wk_cuda_ctx *c, void *dst, const void *src, size_t bytes);
wk_status wk_cuda_copy_d2h(wk_cuda_ctx *c, void *dst, const void *src, size_t bytes);
wk_status wk_cuda_copy_d2d(wk_cuda_ctx *c, void *dst, const void *src, size_t bytes);
/* Synchronous copy outside any stream (QTensor storage). */
wk_status wk_cuda_copy_sync(void *dst, const void *src, size_t bytes, bool to_device);
wk_status wk_cuda_memset(wk_cuda_ctx *c, void *dst, int byte, size_t bytes);
/* The last launch's error, if any, as a wick status naming what. */
wk_status wk_cuda_check_launch(const char *what);

/* Weight types the tensor-core matmul reads directly: the 12 quantized types and F16. */
bool wk_cuda_qmm_supports(wk_type t);
/* y[m, n] = x[m, k] · W[n, k]ᵀ with W in its own format (row-major blocks), x f32 or
 * f16, y f32; W may be packed (wk_cuda_packed). Below wk_cuda_qmm_gemm_rows() rows: the
 * tensor-core kernels (a packed weight: the matrix-vector kernel) with exact weights and
 * activations split into two halves (f32-like precision). From there on
 * (prefill), as long as the addresses are fixed, the f16 form's precision: a packed
 * weight on an sm_90a GPU through wk_cuda_gemm_packed (wgmma), any other dequantized to
 * f16 in scratch and multiplied by cuBLAS. */
#define WK_CUDA_QMM_GEMM_ROWS 64
/* The row count from which the f16-precision kernels take over: WK_CUDA_QMM_GEMM_ROWS, or
 * WICK_CUDA_GEMM_ROWS (read once; 9 or more), for measurements. */
int64_t wk_cuda_qmm_gemm_rows(void);
wk_status wk_cuda_qmm(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n, int64_t k,
                      const void *x, wk_type xtype, int64_t m, float *y);
/* The same with addresses that may follow the step position *dpos (NULL: fixed). */
wk_status wk_cuda_qmm_dyn(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n, int64_t k,
                          wk_dptr x, wk_type xtype, int64_t m, wk_dptr y, const int64_t *dpos);
/* The next wk_cuda_qmm[_dyn] call has the same input (address, rows, k, type) as the
 * previous one and nothing wrote it since: its preparation is skipped. */
void wk_cuda_qmm_reuse_input(wk_cuda_ctx *c);
/* The next wk_cuda_qmm[_dyn] call also adds its result y into acc (rows x n floats, the
 * residual stream), in the same kernel when it can. */
void wk_cuda_qmm_add_to(wk_cuda_ctx *c, wk_dptr acc);
/* Fused operations that also prepare their output as the next quantized matmul's input
 * (which then skips its preparation; rows < wk_cuda_qmm_gemm_rows() or a graph step, dim a
 * multiple of 16, rows on 16-byte boundaries):
 *   y = x / rms(x) * w per row (y may be x);   gate = silu(gate) * up. */
wk_status wk_cuda_qmm_prepare_rmsnorm(wk_cuda_ctx *c, wk_dptr y, wk_dptr x, const float *w,
                                      int64_t rows, int64_t dim, float eps, const int64_t *dpos);
wk_status wk_cuda_qmm_prepare_silu_mul(wk_cuda_ctx *c, wk_dptr gate, wk_dptr up, int64_t rows,
                                       int64_t dim, const int64_t *dpos);

/* Matrix-vector products: 1 to WK_CUDA_QMV_ROWS input rows (a packed weight, wk_cuda_packed,
 * or F16 rows that wk_cuda_f16_rows_fit: any number, WK_CUDA_QMV_ROWS or more a grid slice,
 * the input then prepared once in scratch), the
 * input prepared in the same launch from one of three sources: the input as it is (f32 or
 * f16), x / rms(x) * norm_w (an RMSNorm, whose result is also stored at norm_out when its
 * base is not NULL), or silu(x) * x2 (x2 f32, nothing stored). Up to three weights of
 * one type and k share the input (q, k, v; gate, up), each with its output y[m, n] and,
 * when add.base is not NULL, a residual that the result is also added to, or a RoPE
 * applied to it. Precision as wk_cuda_qmm below 64 rows. */
#define WK_CUDA_QMV_ROWS 8
typedef enum { WK_QMV_INPUT, WK_QMV_RMSNORM, WK_QMV_SILU_MUL } wk_qmv_src;
typedef struct wk_cuda_qmv_out {
    const void *w;
    int64_t n;
    wk_dptr y, add;
    /* RoPE of the result (rope_head_dim 0: none), as wk_cuda_rope: heads of rope_head_dim,
     * pairs (2p, 2p + 1) below rope_n_rot rotated, input row r at rope_pos + r (+ *dpos). */
    int64_t rope_head_dim, rope_n_rot, rope_pos;
    float rope_base;
} wk_cuda_qmv_out;
typedef struct wk_cuda_qmv_job {
    wk_type wtype;
    int64_t k, m;
    wk_qmv_src src;
    wk_dptr x;
    wk_type xtype; /* WK_QMV_INPUT only; the other sources read f32 */
    wk_dptr x2;
    const float *norm_w;
    float eps;
    wk_dptr norm_out;
    /* Outputs with a residual: add = add_from + y instead of add += y (NULL: add itself). */
    const float *add_from;
    int nout;
    wk_cuda_qmv_out out[3];
    const int64_t *dpos;
} wk_cuda_qmv_job;
wk_status wk_cuda_qmv(wk_cuda_ctx *c, const wk_cuda_qmv_job *j);
size_t wk_cuda_qmv_scratch_bytes(int64_t m, int64_t k);

/* Dequantize nelem elements of W (any of the 15 types) into f32 or f16 on the device. */
wk_status wk_cuda_dequantize(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t nelem,
                             void *dst, wk_type dst_type);
/* The type the GPU keeps a quantized [n, k] weight of type t in: the packed layout below
 * where the type and shape allow it, else Q8_0 as Q8_1 (the same scale and codes in
 * 36-byte blocks, each on a 4-byte boundary, so that rows are copied in whole words: the
 * output head of the default model 26 -> 17 us), else t. wk_cuda_relayout writes a GGUF
 * weight of type t in that layout (device memory; dst holding the kept type's bytes); an
 * error for a type kept as it is. */
wk_type wk_cuda_kept_type(wk_type t, int64_t n, int64_t k);
wk_status wk_cuda_relayout(wk_cuda_ctx *c, wk_type t, const void *src, int64_t n, int64_t k, void *dst);
/* The packed GPU layout (qpack.cuh, pack.cu) of Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 weights
 * with n % 16 == 0 and k % 64 == 0, and of Q2_K to Q6_K weights with k % 256 == 0:
 * every 16 rows x 64 (256) elements rearranged so that each lane of the matrix-vector
 * kernel reads its part with 16-byte loads and decodes it with a few bit operations; the
 * same bytes as the GGUF blocks, so the weight does not grow. A weight kept packed is
 * named by wk_cuda_packed(t): t with the flag WK_CUDA_PACKED, which lies above every type
 * id (WK_TYPE_COUNT), so no type reads as packed. wk_cuda_pack writes a GGUF weight of
 * type t in the packed layout; wk_cuda_unpack writes a packed one back in its GGUF rows;
 * wk_cuda_dequantize_packed makes f32 or f16 rows of it. WICK_CUDA_PACK=0 keeps every
 * weight in rows (read once). */
#define WK_CUDA_PACKED 64
static inline wk_type wk_cuda_packed(wk_type t) { return (wk_type)((int)t | WK_CUDA_PACKED); }
static inline bool wk_cuda_is_packed(wk_type t) { return ((int)t & WK_CUDA_PACKED) != 0; }
static inline wk_type wk_cuda_unpacked(wk_type t) { return (wk_type)((int)t & ~WK_CUDA_PACKED); }
bool wk_cuda_pack_supports(wk_type t, int64_t n, int64_t k);
/* Whether an F16 [n, k] weight at w is read by the packed layout's kernel straight from its
 * rows (whole groups of 16 rows, k a multiple of 64, on 16 bytes; WICK_CUDA_F16_ROWS=0:
 * never, the rows' staged kernel instead; read once). */
bool wk_cuda_f16_rows_fit(int64_t n, int64_t k, const void *w);
bool wk_cuda_pack_enabled(void);
wk_status wk_cuda_pack(wk_cuda_ctx *c, wk_type t, const void *src, int64_t n, int64_t k, void *dst);
wk_status wk_cuda_unpack(wk_cuda_ctx *c, wk_type t, const void *src, int64_t n, int64_t k, void *dst);
wk_status wk_cuda_dequantize_packed(wk_cuda_ctx *c, wk_type t, const void *w, int64_t n, int64_t k, void *dst,
                                    wk_type dst_type);
/* Many input rows against a packed weight t (wk_cuda_packed) on a GPU that runs the
 * sm_90a kernels (compute capability 9.0): the weight dequantized to f16 in registers and
 * multiplied on the tensor cores by wgmma, the f16 form's precision, no f16 copy of the
 * weight written (sm90a/gemm_packed.cu). x f32 or f16, m rows of k, contiguous; y [m, n]
 * f32. supports: whether this GPU and shape take it (else dequantize + cuBLAS). */
bool wk_cuda_gemm_packed_supports(wk_type t, int64_t n, int64_t k);
wk_status wk_cuda_gemm_packed(wk_cuda_ctx *c, wk_type t, const void *w, int64_t n, int64_t k, const void *x,
                              wk_type xtype, int64_t m, float *y);
/* Convert between f32 and f16 on the device. */
wk_status wk_cuda_convert(wk_cuda_ctx *c, const void *src, wk_type src_type, void *dst,
                          wk_type dst_type, int64_t count);
/* Dense forms through cuBLAS: W f32 or f16 [n, k], x f32 or f16, y f32. The f16 form
 * rounds x to f16 (in scratch); the f32 form widens f16 x to f32. */
wk_status wk_cuda_gemm(wk_cuda_ctx *c, wk_type wtype, const void *w, int64_t n, int64_t k,
                       const void *x, wk_type xtype, int64_t m, float *y);

/* Read bandwidth: sum bytes of a buffer (16-byte loads), for the benchmark's ceiling. */
wk_status wk_cuda_read_kernel(wk_cuda_ctx *c, const void *buf, size_t bytes, float *sink);

/* A copy device -> host that the stream runs when it gets there and the host collects
 * later (greedy decoding one step ahead): start queues it (into page-locked staging of
 * cap bytes) and returns; finish waits for it and hands the bytes over. */
typedef struct wk_cuda_later wk_cuda_later;
wk_status wk_cuda_later_create(size_t cap, wk_cuda_later **out);
void wk_cuda_later_free(wk_cuda_later *l);
wk_status wk_cuda_later_start(wk_cuda_ctx *c, wk_cuda_later *l, const void *src, size_t bytes);
wk_status wk_cuda_later_finish(wk_cuda_later *l, void *dst, size_t bytes);

/* Events for timing on the context's stream. */
typedef struct wk_cuda_timer wk_cuda_timer;
wk_status wk_cuda_timer_create(wk_cuda_timer **out);
void wk_cuda_timer_free(wk_cuda_timer *t);
wk_status wk_cuda_timer_start(wk_cuda_ctx *c, wk_cuda_timer *t);
wk_status wk_cuda_timer_stop(wk_cuda_ctx *c, wk_cuda_timer *t, float *ms);

#ifdef __cplusplus
}
#endif

/* ---- the Llama forward's operations (ops.cu, dense.cu) ----------------------------
 * Row-major f32 activations on the device. Every position-dependent argument is
 * pos_off + (*dpos when dpos is given), so that a captured graph follows the step. */
#ifdef __cplusplus
extern "C" {
#endif
wk_status wk_cuda_embed_rows(wk_cuda_ctx *c, wk_type wtype, const void *table, int64_t dim,
                             wk_dptr ids, int64_t rows, wk_dptr x, const int64_t *dpos);
/* y = x / rms(x) * w per row (y may be x). */
wk_status wk_cuda_rmsnorm(wk_cuda_ctx *c, wk_dptr y, wk_dptr x, const float *w, int64_t rows,
                          int64_t dim, float eps, const int64_t *dpos);
wk_status wk_cuda_rope(wk_cuda_ctx *c, wk_dptr x, int64_t rows, int64_t n_heads, int64_t head_dim,
                       int64_t n_rot, int64_t pos_off, float freq_base, const int64_t *dpos);
wk_status wk_cuda_attention(wk_cuda_ctx *c, wk_dptr out, wk_dptr q, const float *k_cache,
                            const float *v_cache, int64_t rows, int64_t pos_off, int64_t n_heads,
                            int64_t n_kv_heads, int64_t head_dim, const int64_t *dpos);
/* A decode step's attention (one row, as wk_cuda_attention: out is written) and the output
 * projection W (n_out x n_heads head_dim, in its format) split by heads: parts[h n_out + i]
 * = W[i, h head_dim .. (h + 1) head_dim) · out_h, so that W · out is the sum of the parts
 * over h (added to the residual in the launch: wk_cuda_o_sum). fits: whether the weight
 * type (any the matmul kernels read), head size (32, 64, 128), head count (at most 16),
 * alignments and the head's slices of the n_out rows (in shared memory: up to 160 KiB)
 * allow it. */
bool wk_cuda_attention_o_fits(wk_type wtype, const void *w, int64_t n_out, int64_t n_heads, wk_dptr q,
                              const float *k_cache, const float *v_cache, int64_t n_kv_heads, int64_t head_dim);
/* With sum.out: the launch also writes sum.out[i] = resid[i] + share_0[i] + share_1[i] +
 * ... (heads in order) for i < n_out, the residual with the projection added, so that the
 * next launch reads one row instead of n_heads + 1. parts may be NULL (the shares are then
 * not stored). The heads' blocks form one thread-block cluster: at most 16 heads. */
typedef struct wk_cuda_o_sum {
    wk_dptr resid;
    float *out;
} wk_cuda_o_sum;
wk_status wk_cuda_attention_o(wk_cuda_ctx *c, wk_dptr out, wk_dptr q, const float *k_cache,
                              const float *v_cache, int64_t pos_off, int64_t n_heads, int64_t n_kv_heads,
                              int64_t head_dim, const int64_t *dpos, wk_type wtype, const void *w,
                              int64_t n_out, float *parts, wk_cuda_o_sum sum);
/* The same launch also making its input: a decode step's RMSNorm and q, k, v projections
 * with the RoPE of q and k. Its cluster has n_heads + 2 n_kv_heads blocks (at most 16):
 * block b computes rows [b hd, b hd + hd) of [Wq; Wk; Wv] · (x / rms(x) * norm_w) (the
 * three weights in wtype, the output projection's type, n_out inputs a row), each block's
 * rows copied into shared memory before the dependency wait; q and k rotated as
 * wk_cuda_rope (pairs (2p, 2p + 1) below n_rot, position rope_pos + *dpos); q written to
 * q and kept in shared memory, k and v to the cache rows k_new and v_new, the normalized
 * row to norm_out when its base is not NULL. After one cluster barrier the heads' blocks
 * attend over the cache as wk_cuda_attention_o, with sum.resid = x. The products are in
 * f32 of the exact weights and the f32 normalized row. fits: whether wtype, the sizes,
 * the alignments (weights and norm_w on 16 bytes) and shared memory allow it. */
typedef struct wk_cuda_att_qkv {
    const void *wq, *wk, *wv;
    wk_dptr x, norm_out, k_new, v_new;
    const float *norm_w;
    float eps;
    int64_t n_rot, rope_pos;
    float rope_base;
} wk_cuda_att_qkv;
bool wk_cuda_attention_qkv_o_fits(wk_type wtype, const void *wo, int64_t n_out, int64_t n_heads, wk_dptr q,
                                  const float *k_cache, const float *v_cache, int64_t n_kv_heads,
                                  int64_t head_dim, const wk_cuda_att_qkv *qkv);
wk_status wk_cuda_attention_qkv_o(wk_cuda_ctx *c, wk_dptr out, wk_dptr q, const float *k_cache,
                                  const float *v_cache, int64_t pos_off, int64_t n_heads, int64_t n_kv_heads,
                                  int64_t head_dim, const int64_t *dpos, wk_type wtype, const void *wo,
                                  int64_t n_out, wk_cuda_o_sum sum, const wk_cuda_att_qkv *qkv);
wk_status wk_cuda_silu_mul(wk_cuda_ctx *c, wk_dptr gate, wk_dptr up, int64_t n, const int64_t *dpos);
wk_status wk_cuda_add(wk_cuda_ctx *c, wk_dptr y, wk_dptr x, int64_t n, const int64_t *dpos);
wk_status wk_cuda_copy_f32(wk_cuda_ctx *c, wk_dptr dst, wk_dptr src, int64_t n, const int64_t *dpos);
/* *out (an int32) = the first index of the largest x[i], i < n, as wk_backend.argmax says. */
wk_status wk_cuda_argmax(wk_cuda_ctx *c, wk_dptr x, int64_t n, wk_dptr out, const int64_t *dpos);
#ifdef WICK_CUDA_TRACE
/* Measuring builds (trace.cuh): where WICK_CUDA_TRACE_OUT names a file, the launch timeline
 * written there as CSV (ring, kind, blocks, t0..t4, end_max; global timer in ns). 0: done
 * or not asked for; -1: the file or the device could not be written or read. */
int wk_cuda_trace_save(void);
#endif
#ifdef __cplusplus
}
#endif

#endif
