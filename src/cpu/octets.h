/* Internal: the precise form's weight layout, "octets": each 8 weight rows (output columns)
 * take turns block by block: row 0's block 0, row 1's block 0, ... row 7's block 0, row 0's
 * block 1, ... Every block stays whole, so the precise form's decoders read it unchanged;
 * only where a block lies moves. A kernel that reads 8 columns side by side then reads one
 * memory stream instead of 8 (Q4_0 [8192, 4096] one row from memory, 2 threads, Zen 4:
 * 1.25-1.27 ms with 8 streams against 0.89 with one, which is its time in cache).
 *
 * An octet takes exactly the bytes of its 8 rows, so the rows are rearranged in place; rows
 * past the last whole octet keep the file's layout. */
#ifndef WICK_CPU_OCTETS_H
#define WICK_CPU_OCTETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/pool.h"
#include "wick/tensor.h"

#define WK_OCTET_COLS 8

/* Column c's first block, for columns whose rows are ws bytes long and whose blocks bb
 * (octets: in the octet layout, w the start of an octet; else the file's). */
static inline const char *wk_octet_col(const void *w, int64_t c, size_t ws, size_t bb, bool octets)
{
    return octets ? (const char *)w + (size_t)(c & ~(int64_t)(WK_OCTET_COLS - 1)) * ws +
                        (size_t)(c & (WK_OCTET_COLS - 1)) * bb
                  : (const char *)w + (size_t)c * ws;
}

/* The bytes from one of a column's blocks to its next. */
static inline size_t wk_octet_step(size_t bb, bool octets) { return octets ? WK_OCTET_COLS * bb : bb; }

/* Rearrange w's leading whole octets of rows in place into the octet layout (w->layout
 * becomes WK_LAYOUT_OCTETS) and give the number of rows rearranged (a multiple of 8, 0 when
 * w has fewer than 8 rows). The work is shared by pool's threads (NULL: the calling thread).
 * WICK_NO_REPACK (set, not "0") leaves the weight as it is. */
wk_status wk_cpu_octets(wk_qtensor *w, wk_pool *pool, int64_t *n_octets);

/* The leading whole octets of n rows of k elements of type t (src, the file's layout) into
 * dst (as many bytes, distinct) in the octet layout; rows past them are not written. */
void wk_cpu_octets_rows(wk_type t, const void *src, void *dst, int64_t n, int64_t k);

#endif
