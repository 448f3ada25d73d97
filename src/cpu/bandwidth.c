/* Read bandwidth: every thread sums its slice of a large buffer (the sum is kept so the
 * reads cannot be optimised away). The slices are contiguous, as the weight rows that
 * a matmul's threads read. The buffer is several times the last-level cache (processors
 * with hundreds of MiB of it exist), and the rate is the best of three reads: one stream
 * a thread, the same prefetching ahead as the kernels do, and 8 streams a thread side by
 * side (on some machines one stream a core reaches only half of what several do). */
#include "cpu/bandwidth.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu_engine.h"

typedef struct {
    const uint64_t *buf;
    size_t words;
    int mode; /* 0: plain, 1: prefetch ahead, 2: 8 streams (AVX2 only) */
    uint64_t sums[256];
} wk_bw_job;

#if defined(WICK_HAVE_X86)
uint64_t wk_avx2_stream_sum(const void *p, size_t bytes, int prefetch);
uint64_t wk_avx2_stream_sum_multi(const void *p, size_t bytes, int streams);
#endif

static void wk_bw_worker(void *arg, int ith, int nth)
{
    wk_bw_job *j = arg;
    size_t per = j->words / (size_t)nth / 32 * 32; /* whole 256-byte steps */
    const uint64_t *p = j->buf + per * (size_t)ith;
#if defined(WICK_HAVE_X86)
    if (wk_cpu_isa() >= WK_ISA_AVX2) {
        j->sums[ith % 256] = j->mode == 2 ? wk_avx2_stream_sum_multi(p, per * 8, 8)
                                          : wk_avx2_stream_sum(p, per * 8, j->mode);
        return;
    }
#endif
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= per; i += 4) {
        a += p[i];
        b ^= p[i + 1];
        c += p[i + 2];
        d ^= p[i + 3];
    }
    j->sums[ith % 256] = a + b + c + d;
}

static double wk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t wk_cpu_llc_bytes(void)
{
    long llc = 0;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return llc > 0 ? (size_t)llc : (size_t)32 << 20;
}

size_t wk_cpu_uncached_bytes(void)
{
    size_t least = (size_t)384 << 20, want = 4 * wk_cpu_llc_bytes();
    return want > least ? want : least;
}

struct wk_bw_reader {
    wk_pool *pool;
    wk_bw_job job;
    void *buf;
};

wk_bw_reader *wk_cpu_bw_reader_new(wk_engine *e, size_t bytes)
{
    if (wk_engine_device(e) != WK_DEVICE_CPU) return NULL;
    if (!bytes) {
        bytes = wk_cpu_uncached_bytes();
        if (bytes < ((size_t)512 << 20)) bytes = (size_t)512 << 20;
    }
    wk_bw_reader *r = calloc(1, sizeof *r);
    if (!r || posix_memalign(&r->buf, 64, bytes) != 0) {
        free(r);
        return NULL;
    }
    memset(r->buf, 1, bytes); /* touch every page before timing */
    r->pool = ((wk_cpu_engine *)e)->pool;
    r->job.buf = r->buf;
    r->job.words = bytes / 8;
    wk_pool_run(r->pool, wk_bw_worker, &r->job); /* warm-up */
    return r;
}

double wk_cpu_bw_read(wk_bw_reader *r)
{
    double best = 0;
    int nth = wk_pool_threads(r->pool);
    size_t read = r->job.words / (size_t)nth / 32 * 32 * 8 * (size_t)nth;
    for (int mode = 0; mode < 3; mode++) {
        r->job.mode = mode;
        double t0 = wk_now();
        wk_pool_run(r->pool, wk_bw_worker, &r->job);
        double gbps = (double)read / (wk_now() - t0) / 1e9;
        if (gbps > best) best = gbps;
    }
    return best;
}

void wk_cpu_bw_reader_free(wk_bw_reader *r)
{
    if (!r) return;
    free(r->buf);
    free(r);
}

double wk_cpu_read_bandwidth(wk_engine *e, size_t bytes, int reps)
{
    wk_bw_reader *r = wk_cpu_bw_reader_new(e, bytes);
    if (!r) return -1.0;
    double best = 0;
    for (int i = 0; i < reps; i++) {
        double g = wk_cpu_bw_read(r);
        if (g > best) best = g;
    }
    wk_cpu_bw_reader_free(r);
    return best;
}
