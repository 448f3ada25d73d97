/* Internal: the greedy choice, one definition for the sampler and the backends. */
#ifndef WICK_CORE_ARGMAX_H
#define WICK_CORE_ARGMAX_H

#include <stdint.h>

/* The index of the largest x[i], i < n (n >= 1): a scan that keeps the first strictly larger
 * value, so the first of equal values wins, NaNs are passed over, and a NaN at x[0] gives 0.
 * The CUDA argmax kernel (src/cuda/ops.cu) reproduces exactly this. */
static inline int32_t wk_argmax_f32(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

#endif
