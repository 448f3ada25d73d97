/* The type-traits table and the public functions that read it. */
#include "quant/traits.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "core/half.h"
#include "quant/blocks.h"
#include "quant/formats.h"
#include "wick/quant.h"

/* The four functions of a format, in table order. */
#define WK_FNS(t)                                                                               \
    wk_##t##_dequantize, wk_##t##_dequantize_f16, wk_##t##_quantize, wk_##t##_vec_dot

static const wk_type_traits wk_type_table[WK_TYPE_COUNT] = {
    [WK_TYPE_F32] = {"f32", 1, 4, false, WK_TYPE_F32, WK_FNS(f32)},
    [WK_TYPE_F16] = {"f16", 1, 2, false, WK_TYPE_F16, WK_FNS(f16)},
    [WK_TYPE_BF16] = {"bf16", 1, 2, false, WK_TYPE_BF16, WK_FNS(bf16)},
    [WK_TYPE_Q4_0] = {"q4_0", WK_QK32, sizeof(wk_block_q4_0), true, WK_TYPE_Q8_0, WK_FNS(q4_0)},
    [WK_TYPE_Q4_1] = {"q4_1", WK_QK32, sizeof(wk_block_q4_1), true, WK_TYPE_Q8_1, WK_FNS(q4_1)},
    [WK_TYPE_Q5_0] = {"q5_0", WK_QK32, sizeof(wk_block_q5_0), true, WK_TYPE_Q8_0, WK_FNS(q5_0)},
    [WK_TYPE_Q5_1] = {"q5_1", WK_QK32, sizeof(wk_block_q5_1), true, WK_TYPE_Q8_1, WK_FNS(q5_1)},
    [WK_TYPE_Q8_0] = {"q8_0", WK_QK32, sizeof(wk_block_q8_0), true, WK_TYPE_Q8_0, WK_FNS(q8_0)},
    [WK_TYPE_Q8_1] = {"q8_1", WK_QK32, sizeof(wk_block_q8_1), true, WK_TYPE_Q8_1, WK_FNS(q8_1)},
    [WK_TYPE_Q2_K] = {"q2_k", WK_QK_K, sizeof(wk_block_q2_K), true, WK_TYPE_Q8_K, WK_FNS(q2_K)},
    [WK_TYPE_Q3_K] = {"q3_k", WK_QK_K, sizeof(wk_block_q3_K), true, WK_TYPE_Q8_K, WK_FNS(q3_K)},
    [WK_TYPE_Q4_K] = {"q4_k", WK_QK_K, sizeof(wk_block_q4_K), true, WK_TYPE_Q8_K, WK_FNS(q4_K)},
    [WK_TYPE_Q5_K] = {"q5_k", WK_QK_K, sizeof(wk_block_q5_K), true, WK_TYPE_Q8_K, WK_FNS(q5_K)},
    [WK_TYPE_Q6_K] = {"q6_k", WK_QK_K, sizeof(wk_block_q6_K), true, WK_TYPE_Q8_K, WK_FNS(q6_K)},
    [WK_TYPE_Q8_K] = {"q8_k", WK_QK_K, sizeof(wk_block_q8_K), true, WK_TYPE_Q8_K, WK_FNS(q8_K)},
};

const wk_type_traits *wk_traits(wk_type t)
{
    if ((int)t < 0 || (int)t >= WK_TYPE_COUNT || !wk_type_table[t].name) return NULL;
    return &wk_type_table[t];
}

bool wk_type_known(int id) { return id >= 0 && id < WK_TYPE_COUNT && wk_type_table[id].name; }

const char *wk_type_name(wk_type t)
{
    const wk_type_traits *tr = wk_traits(t);
    return tr ? tr->name : "?";
}

wk_status wk_type_from_name(const char *name, wk_type *out)
{
    for (int i = 0; name && i < WK_TYPE_COUNT; i++) {
        if (wk_type_table[i].name && strcasecmp(wk_type_table[i].name, name) == 0) {
            *out = (wk_type)i;
            return WK_OK;
        }
    }
    return wk_fail(WK_ERR_INVALID, "unknown type '%s'", name ? name : "");
}

int64_t wk_type_block_size(wk_type t)
{
    const wk_type_traits *tr = wk_traits(t);
    return tr ? tr->block_size : 0;
}

size_t wk_type_block_bytes(wk_type t)
{
    const wk_type_traits *tr = wk_traits(t);
    return tr ? tr->block_bytes : 0;
}

bool wk_type_is_quantized(wk_type t)
{
    const wk_type_traits *tr = wk_traits(t);
    return tr && tr->quantized;
}

wk_type wk_type_vec_dot_type(wk_type t)
{
    const wk_type_traits *tr = wk_traits(t);
    return tr ? tr->vec_dot_type : t;
}

static wk_status wk_check_row(wk_type t, int64_t n, const wk_type_traits **out)
{
    const wk_type_traits *tr = wk_traits(t);
    if (!tr) return wk_fail(WK_ERR_INVALID, "unknown type id %d", (int)t);
    if (n < 0 || n % tr->block_size != 0)
        return wk_fail(WK_ERR_INVALID, "row of %lld elements is not a multiple of %s's block size %lld",
                       (long long)n, tr->name, (long long)tr->block_size);
    *out = tr;
    return WK_OK;
}

wk_status wk_type_row_bytes(wk_type t, int64_t n, size_t *out)
{
    const wk_type_traits *tr = NULL;
    wk_status st = wk_check_row(t, n, &tr);
    if (st) return st;
    if ((uint64_t)(n / tr->block_size) > SIZE_MAX / tr->block_bytes)
        return wk_fail(WK_ERR_INVALID, "a row of %lld %s elements overflows its byte size",
                       (long long)n, tr->name);
    *out = (size_t)(n / tr->block_size) * tr->block_bytes;
    return WK_OK;
}

wk_status wk_quantize_row(wk_type t, const float *x, void *y, int64_t n)
{
    const wk_type_traits *tr = NULL;
    wk_status st = wk_check_row(t, n, &tr);
    if (st) return st;
    tr->from_f32(x, y, n);
    return WK_OK;
}

wk_status wk_dequantize_row(wk_type t, const void *x, float *y, int64_t n)
{
    const wk_type_traits *tr = NULL;
    wk_status st = wk_check_row(t, n, &tr);
    if (st) return st;
    tr->to_f32(x, y, n);
    return WK_OK;
}

wk_status wk_dequantize_row_f16(wk_type t, const void *x, uint16_t *y, int64_t n)
{
    const wk_type_traits *tr = NULL;
    wk_status st = wk_check_row(t, n, &tr);
    if (st) return st;
    tr->to_f16(x, y, n);
    return WK_OK;
}

wk_status wk_vec_dot(wk_type t, int64_t n, const void *x, const void *y, float *out)
{
    const wk_type_traits *tr = NULL;
    wk_status st = wk_check_row(t, n, &tr);
    if (st) return st;
    tr->vec_dot(n, out, x, y);
    return WK_OK;
}

float wk_f16_to_f32(uint16_t h) { return wk_half_to_float(h); }
uint16_t wk_f32_to_f16(float f) { return wk_float_to_half(f); }
float wk_bf16_to_f32(uint16_t h) { return wk_bf16_to_float(h); }
uint16_t wk_f32_to_bf16(float f) { return wk_float_to_bf16(f); }
