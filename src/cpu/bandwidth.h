/* Internal: the machine's read bandwidth, measured with the CPU engine's threads. */
#ifndef WICK_CPU_BANDWIDTH_H
#define WICK_CPU_BANDWIDTH_H

#include <stddef.h>

#include "wick/tensor.h"

/* The last-level cache's bytes (the L3's, else the L2's; 32 MiB when the system does not say). */
size_t wk_cpu_llc_bytes(void);

/* Bytes that a benchmark's working set needs so that its reads come from memory: four
 * times the last-level cache, at least 384 MiB. */
size_t wk_cpu_uncached_bytes(void);

/* Stream-read a buffer much larger than the caches (bytes, 0: wk_cpu_uncached_bytes(), at
 * least 512 MiB) with e's threads, `reps` times each of three ways (one stream a thread,
 * the same prefetching ahead, 8 streams a thread) after one warm-up; the best rate in GB/s
 * (1e9 bytes/s), or a negative value when the buffer cannot be allocated. */
double wk_cpu_read_bandwidth(wk_engine *e, size_t bytes, int reps);

/* The same buffer kept for reads interleaved with other timings, so that a ratio to the
 * bandwidth is taken over the same seconds of a machine whose bandwidth moves: new (NULL
 * when e is not a CPU engine or the buffer cannot be allocated; one warm-up read), read
 * (one read each of the three ways, the best GB/s), free. */
typedef struct wk_bw_reader wk_bw_reader;
wk_bw_reader *wk_cpu_bw_reader_new(wk_engine *e, size_t bytes);
double wk_cpu_bw_read(wk_bw_reader *r);
void wk_cpu_bw_reader_free(wk_bw_reader *r);

#endif
