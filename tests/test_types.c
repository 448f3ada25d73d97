/* The traits table: sizes and names of the 15 types, and rejections of bad rows. */
#include "check.h"
#include "wick.h"

int main(void)
{
    static const struct { wk_type t; const char *name; long bs, bytes; } rows[] = {
        {WK_TYPE_F32, "f32", 1, 4},       {WK_TYPE_F16, "f16", 1, 2},
        {WK_TYPE_BF16, "bf16", 1, 2},     {WK_TYPE_Q4_0, "q4_0", 32, 18},
        {WK_TYPE_Q4_1, "q4_1", 32, 20},   {WK_TYPE_Q5_0, "q5_0", 32, 22},
        {WK_TYPE_Q5_1, "q5_1", 32, 24},   {WK_TYPE_Q8_0, "q8_0", 32, 34},
        {WK_TYPE_Q8_1, "q8_1", 32, 36},   {WK_TYPE_Q2_K, "q2_k", 256, 84},
        {WK_TYPE_Q3_K, "q3_k", 256, 110}, {WK_TYPE_Q4_K, "q4_k", 256, 144},
        {WK_TYPE_Q5_K, "q5_k", 256, 176}, {WK_TYPE_Q6_K, "q6_k", 256, 210},
        {WK_TYPE_Q8_K, "q8_k", 256, 292},
    };
    int known = 0;
    for (int id = 0; id < 64; id++) known += wk_type_known(id);
    CHECK_EQ_INT(known, 15);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK(strcmp(wk_type_name(rows[i].t), rows[i].name) == 0);
        CHECK_EQ_INT(wk_type_block_size(rows[i].t), rows[i].bs);
        CHECK_EQ_INT(wk_type_block_bytes(rows[i].t), rows[i].bytes);
        wk_type back;
        CHECK_OK(wk_type_from_name(rows[i].name, &back));
        CHECK_EQ_INT(back, rows[i].t);
    }
    CHECK(!wk_type_known(4) && !wk_type_known(5) && !wk_type_known(16) && !wk_type_known(-1));
    size_t bytes;
    CHECK_FAILS(wk_type_row_bytes(WK_TYPE_Q4_K, 576, &bytes), WK_ERR_INVALID,
                "576 elements is not a multiple of q4_k's block size 256");
    CHECK_FAILS(wk_type_from_name("q9_9", &(wk_type){0}), WK_ERR_INVALID, "unknown type 'q9_9'");
    TEST_MAIN_END();
}
