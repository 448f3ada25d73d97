/* The precise form's octet layout (octets.h): each 8 rows' blocks taken in turn. */
#include "cpu/octets.h"

#include <string.h>

#include "cpu/repack.h"
#include "tensor/engine_impl.h"
#include "quant/traits.h"

/* One octet from src (the file's layout) to dst. */
static void wk_octet_unit(wk_type t, const uint8_t *src, uint8_t *dst, int64_t k)
{
    const wk_type_traits *tr = wk_traits(t);
    const size_t bb = tr->block_bytes;
    const int64_t nb = k / tr->block_size;
    for (int64_t b = 0; b < nb; b++)
        for (int c = 0; c < WK_OCTET_COLS; c++)
            memcpy(dst + ((size_t)b * WK_OCTET_COLS + (size_t)c) * bb, src + ((size_t)c * (size_t)nb + (size_t)b) * bb, bb);
}

void wk_cpu_octets_rows(wk_type t, const void *src, void *dst, int64_t n, int64_t k)
{
    const wk_type_traits *tr = wk_traits(t);
    const size_t os = (size_t)(k / tr->block_size) * tr->block_bytes * WK_OCTET_COLS;
    for (int64_t o = 0; o < n / WK_OCTET_COLS; o++)
        wk_octet_unit(t, (const uint8_t *)src + (size_t)o * os, (uint8_t *)dst + (size_t)o * os, k);
}

wk_status wk_cpu_octets(wk_qtensor *w, wk_pool *pool, int64_t *n_octets)
{
    *n_octets = 0;
    const int64_t octets = w->dims[0] / WK_OCTET_COLS;
    if (wk_cpu_rearrange_off() || octets == 0 || w->device != WK_DEVICE_CPU) return WK_OK;
    wk_status st = wk_cpu_rearrange_rows(w, pool, WK_OCTET_COLS, wk_octet_unit);
    if (st) return st;
    w->layout = WK_LAYOUT_OCTETS;
    *n_octets = octets * WK_OCTET_COLS;
    return WK_OK;
}
