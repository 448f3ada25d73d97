/* Built without CUDA: the CUDA entry points report that clearly. */
#include "wick/tensor.h"

bool wk_cuda_available(void) { return false; }
