/* Internal: the CPU engine's state and its matmul driver. */
#ifndef WICK_CPU_ENGINE_H
#define WICK_CPU_ENGINE_H

#include <stdatomic.h>

#include "cpu/kernels.h"
#include "cpu/pool.h"
#include "tensor/engine_impl.h"

typedef struct wk_cpu_engine {
    wk_engine base;
    wk_pool *pool;
    wk_isa isa;
    /* Bytes of the repacked weights of the live quantized matmuls, and the last-level cache's:
     * more of them than it holds, and each call's weights come from memory (matmul.c). */
    atomic_size_t repacked_bytes;
    size_t llc_bytes;
    /* Scratch reused across calls: converted and quantized activations. Grows only. */
    void *scratch;
    size_t scratch_bytes;
} wk_cpu_engine;

/* Scratch of at least nbytes (64-byte aligned); NULL when out of memory. */
void *wk_cpu_scratch(wk_cpu_engine *ce, size_t nbytes);

wk_status wk_cpu_qmatmul_create(wk_engine *e, wk_qmatmul *mm);
wk_status wk_cpu_qmatmul_forward(wk_engine *e, wk_qmatmul *mm, const void *x, wk_type x_type,
                                 int64_t m, float *y);
void wk_cpu_qmatmul_free(wk_engine *e, wk_qmatmul *mm);

#endif
