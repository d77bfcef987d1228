/* SPDX-License-Identifier: MIT */
/* lib/engine/io/threads.c - the fallbacks behind the same interface as io_uring (uring.c): a pool
 * of worker threads doing blocking pread/pwrite, one I/O each at a time, where io_uring cannot
 * be used (kernel.io_uring_disabled, a seccomp profile, a kernel without it); and the
 * synchronous backend, which does the same in the caller's thread inside vmio_submit().
 *
 * Pool: one FIFO of requests under one mutex. A worker takes the next slot-sized chunk of the
 * request at the head (so the head is the only request ever partly handed out), moves it
 * straight from or into the caller's buffer or through its own slot as io_uring does
 * (io_impl.h: vmio_io_begin()), does the I/O
 * without the lock, and accounts for it under the lock again; the worker that ends a
 * request's last I/O runs its callback, without the lock. 'rings' x 'queue_depth' workers give
 * the same number of I/Os in flight as the rings would. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "engine/io/io_impl.h"

struct th_pool {
    struct vmio *io;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct vmio_list queue;     /* requests not yet wholly handed out (under lock) */
    bool closing;               /* under lock */
    uint32_t nthreads;          /* started */
    pthread_t *threads;
    uint8_t *arena;             /* one slot per worker */
    size_t arena_size;
};

struct th_arg {
    struct th_pool *p;
    uint32_t index;
};

/* Fails every request of 'l' with VIDMM_E_IO (cancelled at close). Called without the lock. */
static void fail_all(struct vmio *io, struct vmio_list *l)
{
    struct vmio_req *r;
    while ((r = vmio_list_pop(l)) != NULL)
        vmio_finish(io, r, VIDMM_E_IO);
}

/* Under the lock: takes what is queued away at close. Requests with no I/O running are moved
 * to 'cancelled'; a partly handed-out head with I/O running stops being handed out and ends,
 * failed, with its last running I/O. */
static void cancel_queue(struct th_pool *p, struct vmio_list *cancelled)
{
    struct vmio_req *r;
    while ((r = vmio_list_pop(&p->queue)) != NULL) {
        struct vmio_rq *q = vmio_rq_of(r);
        if (q->outstanding == 0) {
            vmio_list_push(cancelled, r);
        } else {
            q->issued = r->len;
            if (q->err == 0)
                q->err = VIDMM_E_IO;
        }
    }
}

static void *th_worker(void *arg)
{
    struct th_pool *p = ((struct th_arg *)arg)->p;
    uint32_t index = ((struct th_arg *)arg)->index;
    free(arg);
    struct vmio *io = p->io;
    uint8_t *stage = p->arena + (size_t)index * io->slot_size;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->queue.head == NULL && !p->closing)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->closing) {
            struct vmio_list cancelled = { NULL, NULL };
            cancel_queue(p, &cancelled);
            pthread_mutex_unlock(&p->lock);
            fail_all(io, &cancelled);
            return NULL;
        }
        struct vmio_req *r = p->queue.head;
        struct vmio_rq *q = vmio_rq_of(r);
        uint64_t at = q->issued;
        uint32_t len = vmio_chunk(io, r, at);
        q->issued += len;
        q->outstanding++;
        if (q->issued == r->len)
            vmio_list_pop(&p->queue);
        pthread_mutex_unlock(&p->lock);

        int err = vmio_blocking_chunk(io, r, at, len, stage);

        pthread_mutex_lock(&p->lock);
        q->outstanding--;
        if (err != 0 && q->err == 0)
            q->err = err;
        if (q->err != 0 && q->issued < r->len) {
            /* Stop handing out the rest. A partly handed-out request is the head (above). */
            vmio_list_pop(&p->queue);
            q->issued = r->len;
        }
        if (q->issued == r->len && q->outstanding == 0) {
            int e = q->err;
            pthread_mutex_unlock(&p->lock);
            vmio_finish(io, r, e);
            pthread_mutex_lock(&p->lock);
        }
    }
}

static void th_stop(struct vmio *io)
{
    struct th_pool *p = io->be;
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->lock);
    p->closing = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    /* Every worker has cancelled what it saw queued; with no worker started, nobody did. */
    struct vmio_list cancelled = { NULL, NULL };
    cancel_queue(p, &cancelled);
    fail_all(io, &cancelled);
    vmio_unmap_stage(p->arena, p->arena_size);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->threads);
    free(p);
    io->be = NULL;
}

static int th_start(struct vmio *io)
{
    uint64_t want = (uint64_t)io->rings * io->depth;
    uint32_t n = want > VMIO_MAX_WORKERS ? VMIO_MAX_WORKERS : (uint32_t)want;
    struct th_pool *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return VIDMM_E_NO_MEMORY;
    p->io = io;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->threads = calloc(n, sizeof(*p->threads));
    p->arena_size = (size_t)n * io->slot_size;
    p->arena = vmio_map_stage(p->arena_size);
    io->be = p;
    if (p->threads == NULL || p->arena == NULL) {
        th_stop(io);
        return VIDMM_E_NO_MEMORY;
    }
    /* The workers take no signals: a program's handlers run on its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        struct th_arg *a = malloc(sizeof(*a));
        if (a == NULL) {
            rc = VIDMM_E_NO_MEMORY;
            break;
        }
        a->p = p;
        a->index = i;
        int e = pthread_create(&p->threads[i], NULL, th_worker, a);
        if (e != 0) {
            free(a);
            rc = e == EAGAIN || e == ENOMEM ? VIDMM_E_NO_MEMORY : VIDMM_E_IO;
            break;
        }
        pthread_setname_np(p->threads[i], "vidmm-io-pool");
        p->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        th_stop(io);
        return rc;
    }
    io->threads = n;
    io->staging_bytes = p->arena_size;
    return 0;
}

static void th_submit(struct vmio *io, struct vmio_req *const *reqs, unsigned n)
{
    struct th_pool *p = io->be;
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < n; i++)
        vmio_list_push(&p->queue, reqs[i]);
    /* One chunk per worker woken; a request of several slots wakes several. */
    if (n == 1 && reqs[0]->len <= io->slot_size)
        pthread_cond_signal(&p->wake);
    else
        pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
}

const struct vmio_backend_ops vmio_threads_ops = { th_start, th_submit, th_stop };

/* ---------------------------------------------------------------------------------------------
 * Synchronous: in the caller's thread. Staging slots are kept on a free list so that callers
 * on several threads each get one without a map per call.
 * ------------------------------------------------------------------------------------------- */

struct sy_stage {
    struct sy_stage *next;
};

struct sy_state {
    pthread_mutex_t lock;
    struct sy_stage *free;      /* slot_size bytes each, mapped; the link lives in the slot */
};

static uint8_t *sy_get(struct vmio *io)
{
    struct sy_state *s = io->be;
    pthread_mutex_lock(&s->lock);
    struct sy_stage *st = s->free;
    if (st != NULL)
        s->free = st->next;
    pthread_mutex_unlock(&s->lock);
    return st != NULL ? (uint8_t *)st : vmio_map_stage(io->slot_size);
}

static void sy_put(struct vmio *io, uint8_t *stage)
{
    struct sy_state *s = io->be;
    struct sy_stage *st = (struct sy_stage *)(void *)stage;
    pthread_mutex_lock(&s->lock);
    st->next = s->free;
    s->free = st;
    pthread_mutex_unlock(&s->lock);
}

static int sy_start(struct vmio *io)
{
    struct sy_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return VIDMM_E_NO_MEMORY;
    pthread_mutex_init(&s->lock, NULL);
    io->be = s;
    io->threads = 0;
    io->staging_bytes = io->slot_size; /* per concurrent caller */
    return 0;
}

static void sy_stop(struct vmio *io)
{
    struct sy_state *s = io->be;
    if (s == NULL)
        return;
    while (s->free != NULL) {
        struct sy_stage *st = s->free;
        s->free = st->next;
        vmio_unmap_stage((uint8_t *)st, io->slot_size);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
    io->be = NULL;
}

static void sy_submit(struct vmio *io, struct vmio_req *const *reqs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct vmio_req *r = reqs[i];
        uint8_t *stage = NULL; /* taken when an I/O needs staging */
        int err = 0;
        for (uint64_t at = 0; err == 0 && at < r->len;) {
            uint32_t len = vmio_chunk(io, r, at);
            if (!vmio_unstaged(io, r, at, len) && stage == NULL && (stage = sy_get(io)) == NULL) {
                err = VIDMM_E_NO_MEMORY;
                break;
            }
            err = vmio_blocking_chunk(io, r, at, len, stage);
            at += len;
        }
        if (stage != NULL)
            sy_put(io, stage);
        vmio_finish(io, r, err);
    }
}

const struct vmio_backend_ops vmio_sync_ops = { sy_start, sy_submit, sy_stop };
