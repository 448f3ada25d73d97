/* Internal: interleaved ("repacked") weight layouts for the CPU's quantized form. */
#ifndef WICK_CPU_REPACK_H
#define WICK_CPU_REPACK_H

#include "cpu/cpu_engine.h"

/* If the weight's type has a repacked layout for this processor, rearrange w's bytes in
 * place (w->layout becomes WK_LAYOUT_REPACKED; no second copy is kept) and replace *gemm
 * and *w_stride by the repacked kernel and its stride. Otherwise leave everything as is. */
wk_status wk_cpu_repack(wk_cpu_engine *ce, wk_qtensor *w, wk_gemm_fn *gemm, size_t *w_stride);

#endif
