/* Internal (CUDA): the type-traits table seen from C++ (C's restrict, C linkage). */
#ifndef WICK_CUDA_TRAITS_CXX_H
#define WICK_CUDA_TRAITS_CXX_H
#define restrict __restrict__
extern "C" {
#include "quant/traits.h"
}
#undef restrict

/* The blocks the CUDA kernels read a weight type in (F16: "blocks" of 16 halves), for a
 * type the kernels take (wk_traits not NULL). */
static inline int64_t wk_cuda_block_elems(wk_type t) { return t == WK_TYPE_F16 ? 16 : wk_traits(t)->block_size; }
static inline int64_t wk_cuda_row_bytes(wk_type t, int64_t k)
{
    return t == WK_TYPE_F16 ? 2 * k : k / wk_traits(t)->block_size * (int64_t)wk_traits(t)->block_bytes;
}
#endif
