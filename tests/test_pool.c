/* The CPU engine's thread pool: every worker runs each job once, the barrier separates
 * phases (no worker sees a phase-1 slot unwritten), the thread count comes from the
 * argument, else WICK_NUM_THREADS, and many short runs in a row complete. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cpu/pool.h"
#include "wick/tensor.h"

typedef struct {
    wk_pool *pool;
    atomic_int ran[64];
    int slots[64];
    atomic_int bad;
    int round;
} job;

static void two_phases(void *arg, int ith, int nth)
{
    job *j = arg;
    atomic_fetch_add(&j->ran[ith], 1);
    j->slots[ith] = j->round * 100 + ith;
    wk_pool_barrier(j->pool);
    /* after the barrier every slot of this round is written */
    for (int i = 0; i < nth; i++)
        if (j->slots[i] != j->round * 100 + i) atomic_fetch_add(&j->bad, 1);
    wk_pool_barrier(j->pool);
}

static void test_runs_and_barrier(int n)
{
    wk_pool *p = NULL;
    CHECK_OK(wk_pool_create(n, &p));
    if (!p) return;
    CHECK_EQ_INT(wk_pool_threads(p), n);
    job *j = calloc(1, sizeof *j);
    j->pool = p;
    for (int round = 1; round <= 300; round++) {
        j->round = round;
        wk_pool_run(p, two_phases, j);
    }
    for (int i = 0; i < n; i++) CHECK_EQ_INT(atomic_load(&j->ran[i]), 300);
    CHECK_EQ_INT(atomic_load(&j->bad), 0);
    free(j);
    wk_pool_free(p);
}

/* Flexible runs: the items are shared through a counter; every item is done exactly once
 * whichever workers joined, and a static run after flexible ones still runs everywhere. */
typedef struct {
    atomic_int next;
    atomic_int hits[1000];
} flex_job;

static void flex_task(void *arg, int ith, int nth)
{
    (void)ith, (void)nth;
    flex_job *j = arg;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < 1000;) atomic_fetch_add(&j->hits[i], 1);
}

static void test_flexible(int n)
{
    wk_pool *p = NULL;
    CHECK_OK(wk_pool_create(n, &p));
    if (!p) return;
    flex_job *j = calloc(1, sizeof *j);
    int bad = 0;
    for (int round = 0; round < 300; round++) {
        atomic_store(&j->next, 0);
        for (int i = 0; i < 1000; i++) atomic_store(&j->hits[i], 0);
        wk_pool_run_flexible(p, flex_task, j);
        for (int i = 0; i < 1000; i++) bad += atomic_load(&j->hits[i]) != 1;
        if (round % 50 == 0) { /* a static run in between: every worker exactly once */
            job *s = calloc(1, sizeof *s);
            s->pool = p;
            s->round = 1;
            wk_pool_run(p, two_phases, s);
            for (int i = 0; i < n; i++) bad += atomic_load(&s->ran[i]) != 1;
            bad += atomic_load(&s->bad);
            free(s);
        }
    }
    CHECK_EQ_INT(bad, 0);
    free(j);
    wk_pool_free(p);
}

/* Runs separated by pauses around the time idle workers spin before they sleep: each run
 * must wake the workers that went to sleep. A lost wake-up leaves wk_pool_run waiting for a
 * worker that sleeps, so a watchdog ends the test with a message instead of a hang. */
static void on_watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "test_pool: a run did not finish in 120 s (a worker missed its wake-up)\n";
    ssize_t written = write(2, msg, sizeof msg - 1); /* nothing else is safe in a handler */
    (void)written;
    _exit(1);
}

static void test_wake_after_pauses(int n)
{
    wk_pool *p = NULL;
    CHECK_OK(wk_pool_create(n, &p));
    if (!p) return;
    job *j = calloc(1, sizeof *j);
    j->pool = p;
    unsigned seed = 12345u + (unsigned)n;
    int rounds = 1500;
    for (int round = 1; round <= rounds; round++) {
        j->round = round;
        wk_pool_run(p, two_phases, j);
        seed = seed * 1103515245u + 12345u;
        struct timespec pause = {0, (long)(seed >> 8) % 400000}; /* 0 to 0.4 ms */
        nanosleep(&pause, NULL);
    }
    for (int i = 0; i < n; i++) CHECK_EQ_INT(atomic_load(&j->ran[i]), rounds);
    CHECK_EQ_INT(atomic_load(&j->bad), 0);
    free(j);
    wk_pool_free(p);
}

int main(void)
{
    signal(SIGALRM, on_watchdog);
    alarm(120);
    for (int n = 2; n <= 4; n++) test_wake_after_pauses(n);
    alarm(0);

    for (int n = 1; n <= 4; n++) test_flexible(n);
    for (int n = 1; n <= 5; n++) test_runs_and_barrier(n);

    setenv("WICK_NUM_THREADS", "3", 1);
    CHECK_EQ_INT(wk_default_threads(), 3);
    wk_engine *e = NULL;
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 0, &e));
    if (e) CHECK_EQ_INT(wk_engine_threads(e), 3);
    wk_engine_free(e);
    CHECK_OK(wk_engine_create(WK_DEVICE_CPU, 2, &e)); /* the argument wins */
    if (e) CHECK_EQ_INT(wk_engine_threads(e), 2);
    wk_engine_free(e);
    setenv("WICK_NUM_THREADS", "zero", 1);
    CHECK(wk_default_threads() >= 1); /* not a number: the core count */
    CHECK_FAILS(wk_engine_create(WK_DEVICE_CPU, -1, &e), WK_ERR_INVALID, "thread count -1 is negative");
    if (!wk_cuda_available()) {
        /* No CUDA device (or a build without CUDA): a clear device error, no engine. */
        e = (wk_engine *)1;
        wk_status st = wk_engine_create(WK_DEVICE_CUDA, 1, &e);
        CHECK_EQ_INT(st, WK_ERR_DEVICE);
        CHECK(e == NULL);
        CHECK_MSG(strlen(wk_last_error()) > 0, "no message for the missing CUDA device");
    }
    TEST_MAIN_END();
}
