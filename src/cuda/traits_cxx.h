/* Internal (CUDA): the type-traits table seen from C++ (C's restrict, C linkage). */
#ifndef WICK_CUDA_TRAITS_CXX_H
#define WICK_CUDA_TRAITS_CXX_H
#define restrict __restrict__
extern "C" {
#include "quant/traits.h"
}
#undef restrict
#endif
