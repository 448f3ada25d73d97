/* Internal: the GGUF block layouts, byte for byte. Halves are stored as uint16_t bits. */
#ifndef WICK_QUANT_BLOCKS_H
#define WICK_QUANT_BLOCKS_H

#include <stdint.h>

#define WK_QK32 32  /* elements per block of the legacy formats */
#define WK_QK_K 256 /* elements per super-block of the K formats */
#define WK_K_SCALE_SIZE 12

typedef struct { uint16_t d; uint8_t qs[WK_QK32 / 2]; } wk_block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[WK_QK32 / 2]; } wk_block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[WK_QK32 / 2]; } wk_block_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[WK_QK32 / 2]; } wk_block_q5_1;
typedef struct { uint16_t d; int8_t qs[WK_QK32]; } wk_block_q8_0;
typedef struct { uint16_t d, s; int8_t qs[WK_QK32]; } wk_block_q8_1; /* s = d * sum(qs) */

typedef struct {
    uint8_t scales[WK_QK_K / 16]; /* 4-bit scale and 4-bit min per 16 */
    uint8_t qs[WK_QK_K / 4];
    uint16_t d, dmin;
} wk_block_q2_K;
typedef struct {
    uint8_t hmask[WK_QK_K / 8];
    uint8_t qs[WK_QK_K / 4];
    uint8_t scales[12]; /* 6-bit scales, packed */
    uint16_t d;
} wk_block_q3_K;
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[WK_K_SCALE_SIZE]; /* 6-bit scales and mins, packed */
    uint8_t qs[WK_QK_K / 2];
} wk_block_q4_K;
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[WK_K_SCALE_SIZE];
    uint8_t qh[WK_QK_K / 8];
    uint8_t qs[WK_QK_K / 2];
} wk_block_q5_K;
typedef struct {
    uint8_t ql[WK_QK_K / 2];
    uint8_t qh[WK_QK_K / 4];
    int8_t scales[WK_QK_K / 16];
    uint16_t d;
} wk_block_q6_K;
typedef struct {
    float d;
    int8_t qs[WK_QK_K];
    int16_t bsums[WK_QK_K / 16]; /* sums of qs in groups of 16 */
} wk_block_q8_K;

_Static_assert(sizeof(wk_block_q4_0) == 18, "q4_0 layout");
_Static_assert(sizeof(wk_block_q4_1) == 20, "q4_1 layout");
_Static_assert(sizeof(wk_block_q5_0) == 22, "q5_0 layout");
_Static_assert(sizeof(wk_block_q5_1) == 24, "q5_1 layout");
_Static_assert(sizeof(wk_block_q8_0) == 34, "q8_0 layout");
_Static_assert(sizeof(wk_block_q8_1) == 36, "q8_1 layout");
_Static_assert(sizeof(wk_block_q2_K) == 84, "q2_K layout");
_Static_assert(sizeof(wk_block_q3_K) == 110, "q3_K layout");
_Static_assert(sizeof(wk_block_q4_K) == 144, "q4_K layout");
_Static_assert(sizeof(wk_block_q5_K) == 176, "q5_K layout");
_Static_assert(sizeof(wk_block_q6_K) == 210, "q6_K layout");
_Static_assert(sizeof(wk_block_q8_K) == 292, "q8_K layout");

#endif
