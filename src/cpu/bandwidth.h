/* Internal: the machine's read bandwidth, measured with the CPU engine's threads. */
#ifndef WICK_CPU_BANDWIDTH_H
#define WICK_CPU_BANDWIDTH_H

#include "wick/tensor.h"

/* Stream-read a buffer much larger than the caches (bytes, 0: 512 MiB) with e's threads,
 * `reps` times after one warm-up; the best rate in GB/s (1e9 bytes/s), or a negative
 * value when the buffer cannot be allocated. */
double wk_cpu_read_bandwidth(wk_engine *e, size_t bytes, int reps);

#endif
