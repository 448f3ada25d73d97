/* The persistent thread pool: a generation counter starts work, a counter of finished
 * workers ends it, and a sense-reversing barrier separates phases inside one run.
 * Workers spin for a short while (calls come in quick succession during decoding)
 * and then sleep on a condition variable, so an idle pool costs nothing. */
#include "cpu/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/error.h"

/* Idle workers spin this many pauses before sleeping (calls come back to back while
 * decoding); waits inside a run (barrier, join) spin less and then yield, so that more
 * threads than free cores still make progress. */
#define WK_SPIN_ROUNDS 10000
#define WK_WAIT_SPINS 1000

struct wk_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_uint generation; /* bumped to start a run */
    atomic_int done;        /* workers (other than 0) finished with the current run */
    /* Seats of the current run: generation << 32 | seats left. A worker runs fn only after
     * taking a seat of the generation it saw, so a late worker never runs a newer run's
     * fn by mistake, and a flexible run can close its remaining seats. */
    _Atomic uint64_t seats;
    atomic_int sleepers;
    atomic_bool quit;
    wk_pool_fn fn;
    void *ctx;
    /* barrier */
    atomic_int arrived;
    atomic_uint phase;
};

typedef struct {
    wk_pool *pool;
    int ith;
} wk_worker_arg;

static inline void wk_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* One step of a wait inside a run: pause while spins last, then yield (the count stops
 * at the limit, so a long wait cannot overflow it). */
static inline void wk_wait_step(int *spins)
{
    if (*spins < WK_WAIT_SPINS) {
        ++*spins;
        wk_cpu_relax();
    } else {
        sched_yield();
    }
}

static void *wk_worker_main(void *arg)
{
    wk_worker_arg a = *(wk_worker_arg *)arg;
    free(arg);
    wk_pool *p = a.pool;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load(&p->quit)) {
            if (++spins < WK_SPIN_ROUNDS) {
                wk_cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) return NULL;
        seen = g;
        uint64_t st = atomic_load(&p->seats);
        while ((unsigned)(st >> 32) == g && (st & 0xffffffffu) > 0) {
            if (atomic_compare_exchange_weak(&p->seats, &st, st - 1)) {
                p->fn(p->ctx, a.ith, p->n);
                atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
                break;
            }
        }
    }
}

int wk_default_threads(void)
{
    const char *v = getenv("WICK_NUM_THREADS");
    if (v && *v) {
        int n = atoi(v);
        if (n > 0) return n;
    }
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (int)c : 1;
}

wk_status wk_pool_create(int n_threads, wk_pool **out)
{
    if (n_threads <= 0) n_threads = wk_default_threads();
    if (n_threads > 1024) return wk_fail(WK_ERR_INVALID, "thread pool: %d threads is too many", n_threads);
    wk_pool *p = calloc(1, sizeof *p);
    if (!p) return wk_fail(WK_ERR_NOMEM, "thread pool: out of memory");
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) {
        wk_pool_free(p);
        return wk_fail(WK_ERR_NOMEM, "thread pool: out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        wk_worker_arg *a = malloc(sizeof *a);
        if (!a || (a->pool = p, a->ith = i, pthread_create(&p->threads[i], NULL, wk_worker_main, a))) {
            free(a);
            p->n = i; /* only the threads started so far are joined */
            wk_pool_free(p);
            return wk_fail(WK_ERR_NOMEM, "thread pool: cannot start thread %d of %d", i, n_threads);
        }
    }
    *out = p;
    return WK_OK;
}

void wk_pool_free(wk_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; p->threads && i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p->threads);
    free(p);
}

int wk_pool_threads(const wk_pool *p) { return p->n; }

static void wk_pool_start(wk_pool *p, wk_pool_fn fn, void *ctx)
{
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->done, 0);
    atomic_store(&p->arrived, 0);
    unsigned g = atomic_load(&p->generation) + 1;
    atomic_store(&p->seats, (uint64_t)g << 32 | (uint64_t)(p->n - 1));
    /* Both sequentially consistent: a worker going to sleep adds itself to sleepers and
     * then reads generation, we write generation and then read sleepers. With a weaker
     * store the read of sleepers may pass it (x86 lets a load pass an earlier store), both
     * sides read the old values, and the worker sleeps through the run we then wait for. */
    atomic_store(&p->generation, g);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
}

static void wk_pool_join(wk_pool *p, int joined)
{
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < joined) wk_wait_step(&spins);
}

void wk_pool_run(wk_pool *p, wk_pool_fn fn, void *ctx)
{
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    wk_pool_start(p, fn, ctx);
    fn(ctx, 0, p->n);
    wk_pool_join(p, p->n - 1);
}

void wk_pool_run_flexible(wk_pool *p, wk_pool_fn fn, void *ctx)
{
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    wk_pool_start(p, fn, ctx);
    fn(ctx, 0, p->n);
    /* Close the seats nobody took: those workers skip this run. */
    unsigned g = atomic_load(&p->generation);
    uint64_t st = atomic_exchange(&p->seats, (uint64_t)g << 32);
    int left = (unsigned)(st >> 32) == g ? (int)(st & 0xffffffffu) : 0;
    wk_pool_join(p, p->n - 1 - left);
}

void wk_rows_init(wk_rows *r)
{
    atomic_init(&r->next, 0);
    atomic_init(&r->finished, 0);
}

int64_t wk_rows_next(wk_rows *r, int64_t m)
{
    int64_t i = atomic_fetch_add(&r->next, 1);
    return i < m ? i : -1;
}

void wk_rows_finished(wk_rows *r) { atomic_fetch_add_explicit(&r->finished, 1, memory_order_release); }

void wk_rows_wait(wk_rows *r, int64_t m)
{
    int spins = 0;
    while (atomic_load_explicit(&r->finished, memory_order_acquire) < m) wk_wait_step(&spins);
}

void wk_pool_barrier(wk_pool *p)
{
    if (p->n == 1) return;
    unsigned phase = atomic_load_explicit(&p->phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->arrived, 1, memory_order_acq_rel) == p->n - 1) {
        atomic_store(&p->arrived, 0);
        atomic_fetch_add_explicit(&p->phase, 1, memory_order_release);
        return;
    }
    int spins = 0;
    while (atomic_load_explicit(&p->phase, memory_order_acquire) == phase) wk_wait_step(&spins);
}
