/* SPDX-License-Identifier: MIT */
/* lib/common/pool.c - the library's small thread pool: a "parallel for" over job indices,
 * created on first use, grown to the largest thread count asked for, torn down by
 * vidmm_thread_pool_shutdown() and by a destructor at exit (include/vidmm/swizzle.h).
 *
 * One batch at a time. The caller of vidmm_i_pool_run() takes part in its own batch, so a
 * batch of N jobs on T threads wakes T - 1 workers. A second caller arriving while a batch runs
 * does not queue behind it: it runs its jobs on its own thread (pool_run() returns after the
 * same work, only without help), which also keeps a job that itself asks for the pool from
 * waiting for itself.
 *
 * Synchronisation: 'mu' guards every field but 'next'. A batch is published under 'mu' (fields,
 * then 'gen' bumped, then a broadcast); a worker that wakes for it enters it under 'mu'
 * ('inside' + 1) only while it is open, copies its fields, and claims indices from 'next'
 * (relaxed fetch_add: the indices only partition the work, the job's data were published by
 * 'mu'); it leaves under 'mu' ('inside' - 1, 'done' + what it ran). The caller closes the
 * batch once every job ran and nobody is inside, so the next batch may overwrite the fields:
 * a worker that wakes late sees it closed and goes back to sleep. The jobs' writes reach the
 * caller through 'mu' too (the worker's unlock after its last job, the caller's lock).
 *
 * After fork(): the child has none of the workers. The child handler of pthread_atfork()
 * forgets them (their memory is leaked, a few KiB) and re-initialises the locks, so the child's
 * first threaded copy starts a fresh pool; the prepare handler holds 'mu' across fork() so the
 * child never inherits it locked by a thread that does not exist there. A batch that another
 * parent thread was running at the fork is not the child's: the child starts with none. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "common/internal.h"
#include "vidmm/swizzle.h"

#define POOL_MAX_WORKERS 255

struct pool {
    pthread_mutex_t run_mu;      /* one batch at a time (trylock: others run alone) */
    pthread_mutex_t mu;
    pthread_cond_t wake;         /* workers: a new batch, or stop */
    pthread_cond_t idle;         /* the caller: the batch's jobs are done and nobody is inside */
    pthread_t tid[POOL_MAX_WORKERS];
    uint32_t workers;            /* started */
    bool stop;
    /* The batch. */
    uint64_t gen;
    bool open;
    uint32_t active;             /* workers with an id below this take part */
    uint32_t count, done, inside;
    void (*job)(void *arg, uint32_t index);
    void *arg;
    _Atomic uint32_t next;
};

static struct pool pool = {
    .run_mu = PTHREAD_MUTEX_INITIALIZER,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .idle = PTHREAD_COND_INITIALIZER,
};

/* The atfork handlers are registered once, at the first batch. */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void *worker_main(void *p)
{
    const uint32_t id = (uint32_t)(uintptr_t)p;
    uint64_t seen;

    pthread_mutex_lock(&pool.mu);
    seen = pool.gen;
    for (;;) {
        while (!pool.stop && pool.gen == seen)
            pthread_cond_wait(&pool.wake, &pool.mu);
        if (pool.stop)
            break;
        seen = pool.gen;
        if (!pool.open || id >= pool.active)
            continue;
        pool.inside++;
        void (*job)(void *, uint32_t) = pool.job;
        void *arg = pool.arg;
        const uint32_t count = pool.count;
        pthread_mutex_unlock(&pool.mu);
        uint32_t ran = 0;
        for (uint32_t i; (i = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed)) < count; ran++)
            job(arg, i);
        pthread_mutex_lock(&pool.mu);
        pool.inside--;
        pool.done += ran;
        if (pool.inside == 0 && pool.done == pool.count)
            pthread_cond_signal(&pool.idle);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&pool.mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&pool.mu);
}

static void atfork_child(void)
{
    /* The workers are not here: forget them, and start the locks afresh (the prepare handler
     * held 'mu'; 'run_mu' may be held by a parent thread that does not exist here). */
    pthread_mutex_init(&pool.run_mu, NULL);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.idle, NULL);
    pool.workers = 0;
    pool.stop = false;
    pool.open = false;
    pool.inside = pool.done = pool.count = 0;
}

static void register_atfork(void)
{
    /* Without the handlers (ENOMEM) a child that forks mid-batch could inherit 'mu' held. */
    (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* grow() starts workers until 'want' run (called with 'mu' held); a thread that cannot be
 * started leaves the pool smaller, which only means less help. */
static void grow(uint32_t want)
{
    if (want > POOL_MAX_WORKERS)
        want = POOL_MAX_WORKERS;
    while (pool.workers < want) {
        if (pthread_create(&pool.tid[pool.workers], NULL, worker_main, (void *)(uintptr_t)pool.workers) != 0)
            break;
        pool.workers++;
    }
}

static void run_alone(uint32_t count, void (*job)(void *arg, uint32_t index), void *arg)
{
    for (uint32_t i = 0; i < count; i++)
        job(arg, i);
}

void vidmm_i_pool_run(uint32_t threads, uint32_t count, void (*job)(void *arg, uint32_t index), void *arg)
{
    if (threads > count)
        threads = count;
    if (threads <= 1 || pthread_mutex_trylock(&pool.run_mu) != 0) {
        run_alone(count, job, arg);
        return;
    }
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&pool.mu);
    grow(threads - 1);
    if (pool.workers == 0) {
        pthread_mutex_unlock(&pool.mu);
        pthread_mutex_unlock(&pool.run_mu);
        run_alone(count, job, arg);
        return;
    }
    pool.job = job;
    pool.arg = arg;
    pool.count = count;
    pool.done = 0;
    pool.inside = 0;
    pool.active = threads - 1;
    atomic_store_explicit(&pool.next, 0, memory_order_relaxed);
    pool.open = true;
    pool.gen++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);

    uint32_t ran = 0;
    for (uint32_t i; (i = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed)) < count; ran++)
        job(arg, i);

    pthread_mutex_lock(&pool.mu);
    pool.done += ran;
    while (pool.done != pool.count || pool.inside != 0)
        pthread_cond_wait(&pool.idle, &pool.mu);
    pool.open = false;
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.run_mu);
}

/* shutdown() stops and joins the workers; 'wait' false (at exit) gives up rather than wait for
 * a batch another thread is running. */
static void shutdown_pool(bool wait)
{
    if (wait ? pthread_mutex_lock(&pool.run_mu) != 0 : pthread_mutex_trylock(&pool.run_mu) != 0)
        return;
    pthread_mutex_lock(&pool.mu);
    const uint32_t n = pool.workers;
    pool.stop = true;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    for (uint32_t i = 0; i < n; i++) {
        if (pthread_equal(pool.tid[i], pthread_self()))
            pthread_detach(pool.tid[i]); /* exit() called from a job: it cannot join itself */
        else
            pthread_join(pool.tid[i], NULL);
    }
    pthread_mutex_lock(&pool.mu);
    pool.workers = 0;
    pool.stop = false;
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.run_mu);
}

void vidmm_thread_pool_shutdown(void)
{
    shutdown_pool(true);
}

__attribute__((destructor)) static void pool_at_exit(void)
{
    shutdown_pool(false);
}
