/* The host side of the launch timeline (trace.cuh): measuring builds only. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda/kernels.h"
#include "cuda/trace.cuh"

#ifdef WICK_CUDA_TRACE
extern "C" int qmv_ring_take(wk_trace_rec *out);
extern "C" int ops_ring_take(wk_trace_rec *out);

static wk_trace_rec recs[WK_TRACE_MAX];

/* One line per recorded launch: ring, kind, blocks, the five marks and the last block's
 * end (global timer, ns; 0: not reached). */
static int trace_dump(FILE *f)
{
    int (*take[2])(wk_trace_rec *) = {qmv_ring_take, ops_ring_take};
    fprintf(f, "ring,kind,blocks,t0,t1,t2,t3,t4,end_max\n");
    for (int r = 0; r < 2; r++) {
        const int n = take[r](recs);
        if (n < 0) return -1;
        for (int i = 0; i < n; i++)
            if (recs[i].t[0])
                fprintf(f, "%d,%u,%u,%llu,%llu,%llu,%llu,%llu,%llu\n", r, recs[i].kind, recs[i].blocks, recs[i].t[0],
                        recs[i].t[1], recs[i].t[2], recs[i].t[3], recs[i].t[4], recs[i].end_max);
    }
    return 0;
}

extern "C" int wk_cuda_trace_save(void)
{
    const char *path = getenv("WICK_CUDA_TRACE_OUT");
    if (!path) return 0;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const int rc = trace_dump(f);
    return fclose(f) != 0 ? -1 : rc;
}
#endif
