/* Internal (AVX-512 VNNI): the quantized form's many-row kernel for the repacked 32-element
 * formats (repack_rows_avx512.c). */
#ifndef WICK_CPU_X86_REPACK_ROWS_AVX512_H
#define WICK_CPU_X86_REPACK_ROWS_AVX512_H

#include <stddef.h>
#include <stdint.h>

#include "wick/common.h"

/* y[r * ldy + c] for the nr rows of x (Q8_0 blocks, Q8_1 for Q4_1 and Q5_1) and the leading
 * columns of nc that fill pairs of 8-column groups (w: repacked groups of 8 rows of ws bytes);
 * returns how many columns it did (16 per pair; 0 for another type). */
int64_t wk_avx512_rows_gemm(wk_type t, int64_t k, int64_t nr, int64_t nc, const void *w, size_t ws, const void *x,
                            size_t xs, float *y, size_t ldy);

#endif
