/* Internal: the machine's read bandwidth, measured with the CPU engine's threads. */
#ifndef WICK_CPU_BANDWIDTH_H
#define WICK_CPU_BANDWIDTH_H

#include <stddef.h>

#include "wick/tensor.h"

/* Bytes that a benchmark's working set needs so that its reads come from memory: four
 * times the last-level cache, at least 384 MiB. */
size_t wk_cpu_uncached_bytes(void);

/* Stream-read a buffer much larger than the caches (bytes, 0: wk_cpu_uncached_bytes(), at
 * least 512 MiB) with e's threads, `reps` times each of three ways (one stream a thread,
 * the same prefetching ahead, 8 streams a thread) after one warm-up; the best rate in GB/s (1e9 bytes/s), or a negative value when the
 * buffer cannot be allocated. */
double wk_cpu_read_bandwidth(wk_engine *e, size_t bytes, int reps);

#endif
