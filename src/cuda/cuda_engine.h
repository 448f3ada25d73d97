/* Internal: the CUDA engine's context, for the model's device operations. */
#ifndef WICK_CUDA_ENGINE_H
#define WICK_CUDA_ENGINE_H

#include "cuda/kernels.h"
#include "tensor/engine_impl.h"

wk_cuda_ctx *wk_cuda_engine_ctx(wk_engine *e);


/* The matmul's forward with addresses that may follow the step position (graphs). */
wk_status wk_cuda_mm_forward_dyn(wk_engine *e, wk_qmatmul *mm, wk_dptr x, int64_t m, wk_dptr y,
                                 const int64_t *dpos);
/* Can this matmul run inside a captured graph with moving addresses (the tensor-core path)? */
bool wk_cuda_mm_graphable(const wk_qmatmul *mm);
/* The weight's format and device bytes when the matmul reads it in its own format. */
bool wk_cuda_mm_quant_weight(const wk_qmatmul *mm, wk_type *type, const void **w);

/* Counters of the model backend: step lists replayed as graphs, captured, run eagerly;
 * with WICK_CUDA_STEP_TIMES=1 the mean GPU time of a replayed step in us (else 0). */
void wk_cuda_backend_stats(wk_engine *e, long *replays, long *captures, long *eager, double *step_us);

#endif
