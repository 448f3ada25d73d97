/* Repacked weight layouts (none yet: every type runs its row-major kernels). */
#include "cpu/repack.h"

wk_status wk_cpu_repack(wk_cpu_engine *ce, wk_qtensor *w, wk_gemm_fn *gemm, size_t *w_stride)
{
    (void)ce, (void)w, (void)gemm, (void)w_stride;
    return WK_OK;
}
