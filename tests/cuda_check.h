/* Helpers of the CUDA tests (include after check.h): a seeded random source and copies of
 * host arrays to the device. */
#ifndef WICK_TESTS_CUDA_CHECK_H
#define WICK_TESTS_CUDA_CHECK_H

#include <stdint.h>

#include "cuda/kernels.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline double urand(void) /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

/* A device copy of bytes at h (NULL, with the failure counted, if it could not be made). */
static inline void *dev_copy(const void *h, size_t bytes)
{
    void *d = NULL;
    CHECK_OK(wk_cuda_malloc(bytes, &d));
    if (d) CHECK_OK(wk_cuda_copy_sync(d, h, bytes, true));
    return d;
}

#endif
