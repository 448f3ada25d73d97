/* Internal: the CPU engine's persistent thread pool. The calling thread is worker 0;
 * n-1 threads wait for work, spinning briefly and then sleeping. */
#ifndef WICK_CPU_POOL_H
#define WICK_CPU_POOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "wick/common.h"

typedef struct wk_pool wk_pool;
/* fn(ctx, ith, nth) runs once on each of the nth workers. */
typedef void (*wk_pool_fn)(void *ctx, int ith, int nth);

wk_status wk_pool_create(int n_threads, wk_pool **out);
void wk_pool_free(wk_pool *p);
int wk_pool_threads(const wk_pool *p);
/* Run fn on every worker and return when all have finished. Not reentrant. */
void wk_pool_run(wk_pool *p, wk_pool_fn fn, void *ctx);
/* Inside fn: wait until every worker has reached this barrier. */
void wk_pool_barrier(wk_pool *p);
/* Run fn on the calling thread and on the workers that are ready to start it before the
 * caller has finished its own call; return when those have finished. fn must share its
 * work dynamically (counters), since some workers may never run it, and must not call
 * wk_pool_barrier. On a busy machine this keeps a descheduled worker from stalling every
 * call. */
void wk_pool_run_flexible(wk_pool *p, wk_pool_fn fn, void *ctx);

/* Rows shared out inside a flexible run: each worker takes the next row with
 * wk_rows_next (-1: none left), reports it with wk_rows_finished, and, before it uses
 * the rows, waits in wk_rows_wait until all m are finished, whoever took them. */
typedef struct wk_rows {
    atomic_llong next, finished;
} wk_rows;
void wk_rows_init(wk_rows *r);
int64_t wk_rows_next(wk_rows *r, int64_t m);
void wk_rows_finished(wk_rows *r);
void wk_rows_wait(wk_rows *r, int64_t m);

/* WICK_NUM_THREADS if set and positive, else the number of online cores. */
int wk_default_threads(void);

#endif
