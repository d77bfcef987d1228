/* SPDX-License-Identifier: MIT */
/* lib/engine/io/uring.c - the io_uring backend (liburing 2.3, the Debian 12 version).
 *
 * Each ring has a thread of its own that creates the ring, is its only submitter and reaps its
 * completions; vmio_submit() only appends requests to the ring's queue under a mutex and, when
 * the thread is asleep in io_uring_enter(), wakes it through an eventfd whose read is always
 * pending on the ring. So the ring can be set up with the flags a single submitter that also
 * reaps allows (ring_setup()), and every callback runs on that thread.
 *
 * Per ring: 'queue_depth' staging slots of 'slot_size' bytes, registered as fixed buffers (one
 * per slot, read_fixed/write_fixed with the slot's index); the file registered as fixed file 0.
 * A request is cut into slot-sized I/Os handed out in order, as slots come free (a slot stands
 * for one I/O in flight, whether its bytes go through the slot or not). An I/O on an aligned
 * buffer moves straight from or into it with a plain read/write SQE (the buffer is not
 * registered): a write is checksummed before its SQE is prepared, a read checked when its CQE
 * arrives. A staged write is copied into its slot (and checksummed) before its SQE is prepared,
 * a staged read checked and copied out when its CQE arrives. A slot goes back on the free list
 * only when the CQE of its last I/O has been handled - never before - so no buffer is reused
 * while the kernel may still use it. All SQEs prepared in one pass of the loop go to the kernel in one io_uring_enter(),
 * which also waits; CQEs are reaped in batches with io_uring_peek_batch_cqe(). */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "engine/io/io_impl.h"

/* user_data of the two SQEs that are not data I/O; a data I/O carries its slot index. */
#define UD_EVENT UINT64_MAX
#define UD_CANCEL (UINT64_MAX - 1)

#define REAP_BATCH 64u
/* The thread copies and checksums every byte (into a slot before a write, out of it after a
 * read). Once it has done this much of that work since its last io_uring_enter(), it hands the
 * SQEs prepared meanwhile to the kernel instead of waiting for the end of its pass, so the
 * device is not left idle behind the copying: 32 completed 1 MiB reads take ~3 ms to check and
 * copy out at ~10 GB/s, an io_uring_enter() ~2 us. Smaller I/Os still go in batches. */
#define EARLY_SUBMIT_BYTES (1u << 20)

struct ur_slot {
    uint8_t *mem;               /* the slot's staging memory */
    uint8_t *data;              /* where the running I/O moves its bytes: 'mem', or the caller's
                                   buffer (unstaged: io_impl.h) */
    struct vmio_req *req;       /* NULL when free */
    uint64_t at;                /* offset of this I/O in the request */
    uint32_t len, io_len;       /* request bytes, bytes of the I/O (aligned up) */
    uint32_t done;              /* bytes of the I/O transferred so far (short transfers) */
    uint32_t retries;
};

struct ur_ring {
    struct vmio *io;
    pthread_t thread;
    bool started;

    /* Shared with submitters and vmio_close(), under 'lock'. */
    pthread_mutex_t lock;
    pthread_cond_t init_cond;
    int init_state;             /* 0 starting, 1 running, -1 failed */
    int init_err;
    struct vmio_list queue;     /* submitted, not yet taken by the thread */
    bool sleeping;              /* the thread waits in the kernel: wake it through the eventfd */
    bool closing;
    int efd;                    /* set before init_state is published, read-only afterwards */

    /* The ring thread's own. */
    struct io_uring ring;
    bool ring_ok;
    unsigned flags;             /* IORING_SETUP_* the kernel took */
    bool fixed_bufs, fixed_file;
    bool closing_seen, cancel_sent;
    uint64_t efd_val;
    bool efd_armed;
    uint32_t cancels;           /* cancel SQEs without their CQE yet */
    uint8_t *arena;
    size_t arena_size;
    struct ur_slot *slots;
    uint32_t nslots;
    uint32_t *free_idx;
    uint32_t nfree;
    struct vmio_list pend;      /* taken from the queue, not yet wholly handed out */
    uint32_t ios;               /* data I/Os in the kernel */
    uint32_t staged;            /* bytes copied in or out, or checksummed in place (unstaged
                                   writes), since the last submission */
};

struct ur_state {
    struct ur_ring *rings;
    uint32_t n;
    atomic_uint next;           /* the ring a multi-ring batch starts at (round robin) */
};

/* ---------------------------------------------------------------------------------------------
 * Setup (on the ring's own thread).
 * ------------------------------------------------------------------------------------------- */

/* ring_setup() creates the ring with the best flags the kernel takes. Wanted, for a ring whose
 * one thread both submits and reaps (io_uring_setup(2), io_uring_setup_flags(7)):
 *   SINGLE_ISSUER (6.0): only this thread submits, so the kernel may skip its locking;
 *   DEFER_TASKRUN (6.1, needs SINGLE_ISSUER): completion work runs only when this thread asks
 *     for completions (io_uring_enter with GETEVENTS), not by interrupting it mid-copy;
 *   COOP_TASKRUN (5.19): no IPI to interrupt the thread for completion work;
 *   TASKRUN_FLAG (5.19): the kernel flags pending completion work in the SQ ring, so
 *     io_uring_peek_batch_cqe() knows to enter the kernel to run it (with DEFER_TASKRUN, CQEs
 *     would otherwise wait for the next io_uring_enter);
 *   SUBMIT_ALL (5.18): an SQE refused at submission does not stop the ones behind it.
 * Not wanted: SQPOLL (a kernel thread spinning for each ring, on a shared 2-core machine) and
 * IOPOLL (only for polled block devices; a file system file refuses it).
 * A kernel refuses flags it does not know with EINVAL: they are dropped one at a time, newest
 * first (each was added after the ones after it in 'drop'), until the kernel takes the rest. */
/* vmio_test_refuse_setup_flags(): flags to treat as refused (tests). Relaxed: it is set before
 * vmio_open(), which publishes it to the ring threads it creates. */
static atomic_uint refused_flags;

void vmio_test_refuse_setup_flags(uint32_t mask)
{
    atomic_store_explicit(&refused_flags, mask, memory_order_relaxed);
}

static int ring_setup(struct ur_ring *r, unsigned entries)
{
    unsigned refused = atomic_load_explicit(&refused_flags, memory_order_relaxed);
    static const unsigned drop[] = { IORING_SETUP_DEFER_TASKRUN, IORING_SETUP_SINGLE_ISSUER,
                                     IORING_SETUP_TASKRUN_FLAG, IORING_SETUP_COOP_TASKRUN,
                                     IORING_SETUP_SUBMIT_ALL };
    unsigned flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
                     IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    for (size_t i = 0;;) {
        struct io_uring_params p;
        memset(&p, 0, sizeof(p));
        p.flags = flags;
        int rc = flags & refused ? -EINVAL : io_uring_queue_init_params(entries, &r->ring, &p);
        if (rc == 0) {
            r->flags = flags;
            r->ring_ok = true;
            return 0;
        }
        if (rc == -EINVAL && i < sizeof(drop) / sizeof(drop[0])) {
            flags &= ~drop[i++];
            continue;
        }
        return rc;
    }
}

/* The setup error as the layer reports it: resource shortages stay errors (io.h); anything
 * else (EPERM from kernel.io_uring_disabled or seccomp, ENOSYS, EINVAL from a kernel that
 * knows none of it) means io_uring cannot be used here. */
static int setup_err(int neg_errno)
{
    if (neg_errno == -ENOMEM || neg_errno == -EMFILE || neg_errno == -ENFILE)
        return VIDMM_E_NO_MEMORY;
    return VIDMM_E_UNSUPPORTED;
}

/* ---------------------------------------------------------------------------------------------
 * Can a thread block in io_uring_enter() while the others run? The ring threads spend their
 * lives there, woken by a submitter's write to their eventfd. Under valgrind 3.19 they cannot:
 * it does not know io_uring_enter() may block and keeps its one big lock across the call, so
 * no other thread of the process runs until the wait ends - the submitter that would wake the
 * ring never gets to, and the engine deadlocks. The probe is a real round trip of that kind: a
 * read of an eventfd is armed on a scratch ring (a POLL_ADD) and this thread waits for its
 * completion, with a timeout, while a second thread writes the eventfd. The write must come
 * while the wait is under way, not before it (a completion already there would prove
 * nothing): the writer waits until this thread says it is about to enter the kernel, naps
 * PROBE_NAP_US more so that it has, then writes. Where threads run during the wait the
 * completion arrives after the nap (a few ms, once per process); where they do not, the write
 * cannot happen before the timeout, the wait times out, io_uring is reported unusable and the
 * layer takes the thread pool (io.c) with a warning. The timeout is generous so a loaded
 * machine is not taken for valgrind: it is only waited in full where io_uring cannot be used.
 * ------------------------------------------------------------------------------------------- */
#define PROBE_TIMEOUT_MS 500
#define PROBE_NAP_US 2000

struct probe {
    int efd;
    atomic_bool waiting;        /* the prober is about to enter io_uring_enter() */
};

static void *probe_writer(void *arg)
{
    struct probe *p = arg;
    const struct timespec tick = { 0, 100000 }, nap = { 0, PROBE_NAP_US * 1000l };
    while (!atomic_load(&p->waiting))
        nanosleep(&tick, NULL);
    nanosleep(&nap, NULL);
    const uint64_t one = 1;
    ssize_t w = write(p->efd, &one, sizeof(one));
    (void)w; /* a failed write shows as the probe's timeout */
    return NULL;
}

/* 1: a thread blocked in io_uring_enter() lets the others run; 0: it does not; a negative
 * VIDMM_E_* when the probe cannot be made (no ring, no eventfd, no thread). */
static int probe_blocking_wait(void)
{
    struct io_uring ring;
    int e = io_uring_queue_init(4, &ring, 0);
    if (e != 0)
        return setup_err(e);
    struct probe p = { .efd = eventfd(0, EFD_CLOEXEC) };
    if (p.efd < 0) {
        io_uring_queue_exit(&ring);
        return VIDMM_E_NO_MEMORY; /* EMFILE, ENFILE, ENOMEM */
    }
    int rc;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring); /* an empty ring of 4 has room */
    io_uring_prep_poll_add(sqe, p.efd, POLLIN);
    io_uring_sqe_set_data64(sqe, UD_EVENT);
    if ((e = io_uring_submit(&ring)) != 1) {
        rc = e < 0 ? setup_err(e) : VIDMM_E_UNSUPPORTED;
    } else {
        pthread_t th;
        if ((e = pthread_create(&th, NULL, probe_writer, &p)) != 0) {
            rc = e == EAGAIN || e == ENOMEM ? VIDMM_E_NO_MEMORY : VIDMM_E_IO;
        } else {
            struct __kernel_timespec ts = { PROBE_TIMEOUT_MS / 1000, (PROBE_TIMEOUT_MS % 1000) * 1000000ll };
            struct io_uring_cqe *cqe = NULL;
            atomic_store(&p.waiting, true);
            /* A signal handled meanwhile ends the wait early (EINTR): wait again, a few
             * times at most. */
            for (int tries = 0; (e = io_uring_wait_cqe_timeout(&ring, &cqe, &ts)) == -EINTR && tries < 4; tries++)
                ;
            rc = e == 0 && cqe != NULL && io_uring_cqe_get_data64(cqe) == UD_EVENT && cqe->res > 0;
            pthread_join(th, NULL);
        }
    }
    /* Exiting the ring cancels a poll still armed (the timed-out case). */
    io_uring_queue_exit(&ring);
    close(p.efd);
    return rc;
}

static int blocking_wait_ok(void)
{
    static atomic_int cached; /* 0: not probed; 1 / -1: the answer (benign race: same answer) */
    int c = atomic_load(&cached);
    if (c == 0) {
        int r = probe_blocking_wait();
        if (r < 0)
            return r;
        c = r ? 1 : -1;
        if (c < 0)
            vidmm_log(VIDMM_LOG_WARN, "vmio: a thread blocked in io_uring_enter() stops every other thread of this "
                                      "process (valgrind?): io_uring is not used, the thread pool does the I/O");
        atomic_store(&cached, c);
    }
    return c > 0;
}

static struct io_uring_sqe *get_sqe(struct ur_ring *r)
{
    struct io_uring_sqe *sqe;
    /* The SQ has room for every slot, the eventfd read and the cancels (ring_init()); should it
     * ever be full, handing what is in it to the kernel makes room. */
    while ((sqe = io_uring_get_sqe(&r->ring)) == NULL)
        (void)io_uring_submit(&r->ring);
    return sqe;
}

static void arm_event(struct ur_ring *r)
{
    struct io_uring_sqe *sqe = get_sqe(r);
    io_uring_prep_read(sqe, r->efd, &r->efd_val, sizeof(r->efd_val), 0);
    io_uring_sqe_set_data64(sqe, UD_EVENT);
    r->efd_armed = true;
}

static void ring_free(struct ur_ring *r)
{
    if (r->ring_ok) {
        /* The kernel tears a ring down asynchronously after its fd is closed, and until then its
         * registered file keeps the swap file (and its file system: umount says EBUSY) in use.
         * Unregistering waits until nothing uses the registrations (io_uring_register(2)), so
         * once vmio_close() returns, the file is free. */
        if (r->fixed_file)
            (void)io_uring_unregister_files(&r->ring);
        if (r->fixed_bufs)
            (void)io_uring_unregister_buffers(&r->ring);
        io_uring_queue_exit(&r->ring);
    }
    r->ring_ok = false;
    /* After io_uring_queue_exit(): the kernel has no more use of the registered buffers. */
    vmio_unmap_stage(r->arena, r->arena_size);
    r->arena = NULL;
    free(r->slots);
    free(r->free_idx);
    r->slots = NULL;
    r->free_idx = NULL;
}

static int ring_init(struct ur_ring *r)
{
    struct vmio *io = r->io;
    r->nslots = io->depth;
    /* Slots, the eventfd read and a cancel for each of them at close on old kernels
     * (cancel_all()); io_uring_queue_init_params() rounds up to a power of two. */
    int rc = ring_setup(r, 2 * r->nslots + 4);
    if (rc != 0)
        return setup_err(rc);
    (void)io_uring_register_ring_fd(&r->ring); /* 5.18+: saves a file lookup per enter; optional */

    r->arena_size = (size_t)r->nslots * io->slot_size;
    r->arena = vmio_map_stage(r->arena_size);
    r->slots = calloc(r->nslots, sizeof(*r->slots));
    r->free_idx = malloc(sizeof(*r->free_idx) * r->nslots);
    struct iovec *iov = malloc(sizeof(*iov) * r->nslots);
    if (r->arena == NULL || r->slots == NULL || r->free_idx == NULL || iov == NULL) {
        free(iov);
        return VIDMM_E_NO_MEMORY;
    }
    for (uint32_t i = 0; i < r->nslots; i++) {
        r->slots[i].mem = r->arena + (size_t)i * io->slot_size;
        iov[i].iov_base = r->slots[i].mem;
        iov[i].iov_len = io->slot_size;
        r->free_idx[i] = r->nslots - 1 - i; /* slot 0 first */
    }
    r->nfree = r->nslots;
    /* Registered buffers are pinned and charged to RLIMIT_MEMLOCK (8 MiB by default for an
     * unprivileged user; io_uring_register(2)). When that refuses, the same slots serve plain
     * read/write SQEs: slower by a page-pinning per I/O, but the same behaviour. */
    rc = io_uring_register_buffers(&r->ring, iov, r->nslots);
    free(iov);
    r->fixed_bufs = rc == 0;
    if (rc != 0)
        vidmm_log(VIDMM_LOG_WARN,
                  "vmio: registering %zu KiB of staging buffers failed (%s): using unregistered ones "
                  "(raise RLIMIT_MEMLOCK to register them)",
                  r->arena_size / 1024u, strerror(-rc));
    int fd = io->fd;
    rc = io_uring_register_files(&r->ring, &fd, 1);
    r->fixed_file = rc == 0;
    if (rc != 0)
        vidmm_log(VIDMM_LOG_INFO, "vmio: registering the swap file failed (%s): using its descriptor", strerror(-rc));
    arm_event(r);
    rc = io_uring_submit(&r->ring);
    if (rc < 0)
        return setup_err(rc);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * I/O.
 * ------------------------------------------------------------------------------------------- */

/* prep_io() prepares the SQE that moves what is left of slot 'si's I/O. */
static void prep_io(struct ur_ring *r, uint32_t si)
{
    struct ur_slot *s = &r->slots[si];
    struct io_uring_sqe *sqe = get_sqe(r);
    uint8_t *addr = s->data + s->done;
    unsigned n = s->io_len - s->done;
    uint64_t off = s->req->off + s->at + s->done;
    int fd = r->fixed_file ? 0 : r->io->fd;
    bool fixed = r->fixed_bufs && s->data == s->mem; /* only the slots are registered */
    if (s->req->op == VMIO_WRITE) {
        if (fixed)
            io_uring_prep_write_fixed(sqe, fd, addr, n, off, (int)si);
        else
            io_uring_prep_write(sqe, fd, addr, n, off);
    } else {
        if (fixed)
            io_uring_prep_read_fixed(sqe, fd, addr, n, off, (int)si);
        else
            io_uring_prep_read(sqe, fd, addr, n, off);
    }
    if (r->fixed_file)
        sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, si);
}

/* submit_early() hands the prepared SQEs to the kernel once EARLY_SUBMIT_BYTES have been
 * copied or checksummed since the last submission: either pass delays the disk alike. */
static void submit_early(struct ur_ring *r)
{
    if (r->staged >= EARLY_SUBMIT_BYTES && io_uring_sq_ready(&r->ring) > 0) {
        (void)io_uring_submit(&r->ring);
        r->staged = 0;
    }
}

/* issue() hands out I/Os of the pending requests, in order, while slots are free. */
static void issue(struct ur_ring *r)
{
    struct vmio *io = r->io;
    while (r->nfree > 0 && r->pend.head != NULL) {
        struct vmio_req *q = r->pend.head;
        struct vmio_rq *rq = vmio_rq_of(q);
        uint64_t at = rq->issued;
        uint32_t si = r->free_idx[--r->nfree];
        struct ur_slot *s = &r->slots[si];
        s->req = q;
        s->at = at;
        s->len = vmio_chunk(io, q, at);
        s->io_len = vmio_io_len(io, s->len);
        s->done = 0;
        s->retries = 0;
        rq->issued += s->len;
        rq->outstanding++;
        if (rq->issued == q->len)
            vmio_list_pop(&r->pend);
        s->data = vmio_io_begin(io, q, at, s->len, s->io_len, s->mem);
        if (q->op == VMIO_WRITE)
            r->staged += s->len;
        r->ios++;
        vmio_io_started(io);
        prep_io(r, si);
        submit_early(r);
    }
}

static void fail_list(struct vmio *io, struct vmio_list *l)
{
    struct vmio_req *q;
    while ((q = vmio_list_pop(l)) != NULL)
        vmio_finish(io, q, VIDMM_E_IO);
}

/* A data I/O's CQE: resume a short transfer, retry EAGAIN/EINTR, else end the I/O. */
static void io_done(struct ur_ring *r, uint32_t si, int res)
{
    struct vmio *io = r->io;
    struct ur_slot *s = &r->slots[si];
    struct vmio_req *q = s->req;
    struct vmio_rq *rq = vmio_rq_of(q);
    uint32_t want = s->io_len - s->done;
    int op = q->op, err = 0;

    res = vmio_fault_apply(io, op, res, want, s->data + s->done);
    if (res < 0) {
        if ((res == -EAGAIN || res == -EINTR) && s->retries < VMIO_MAX_RETRIES && !r->closing_seen) {
            s->retries++;
            atomic_fetch_add_explicit(&io->retries, 1, memory_order_relaxed);
            prep_io(r, si);
            return;
        }
        err = vmio_errno_to_err(op, res); /* -ECANCELED (closing) too: VIDMM_E_IO */
    } else if (res == 0) {
        err = VIDMM_E_IO; /* no progress: past the end of the file */
    } else if ((uint32_t)res < want) {
        atomic_fetch_add_explicit(&io->short_transfers, 1, memory_order_relaxed);
        s->done += (uint32_t)res;
        if (!r->closing_seen) {
            prep_io(r, si);
            return;
        }
        err = VIDMM_E_IO;
    } else if (op == VMIO_READ) {
        err = vmio_read_end(io, q, s->at, s->len, s->data);
        r->staged += s->len;
    }

    /* The I/O is over: its slot may be used again. */
    s->req = NULL;
    r->free_idx[r->nfree++] = si;
    r->ios--;
    vmio_io_ended(io);
    rq->outstanding--;
    if (err != 0 && rq->err == 0)
        rq->err = err;
    if (rq->err != 0 && rq->issued < q->len) {
        /* Stop handing out the rest; a partly handed-out request is the head of 'pend'. */
        vmio_list_pop(&r->pend);
        rq->issued = q->len;
    }
    if (rq->issued == q->len && rq->outstanding == 0)
        vmio_finish(io, q, rq->err);
}

/* cancel_all() runs once, when the thread first sees 'closing': requests with no I/O in the
 * kernel fail at once; the others stop being handed out and fail when their last I/O ends; the
 * kernel is asked to cancel everything of this ring that has not started (IORING_ASYNC_CANCEL_ANY,
 * 5.19; a file read or write already running completes normally). */
static void cancel_all(struct ur_ring *r)
{
    struct vmio_list cancelled = { NULL, NULL };
    struct vmio_req *q;
    while ((q = vmio_list_pop(&r->pend)) != NULL) {
        struct vmio_rq *rq = vmio_rq_of(q);
        if (rq->outstanding == 0) {
            vmio_list_push(&cancelled, q);
        } else {
            rq->issued = q->len;
            if (rq->err == 0)
                rq->err = VIDMM_E_IO;
        }
    }
    if (r->ios > 0 || r->efd_armed) {
        struct io_uring_sqe *sqe = get_sqe(r);
        io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
        io_uring_sqe_set_data64(sqe, UD_CANCEL);
        r->cancels++;
    }
    r->cancel_sent = true;
    fail_list(r->io, &cancelled);
}

/* A kernel without IORING_ASYNC_CANCEL_ANY (before 5.19) refuses it with EINVAL: cancel each
 * I/O by its user_data instead. */
static void cancel_each(struct ur_ring *r)
{
    for (uint32_t i = 0; i < r->nslots; i++) {
        if (r->slots[i].req == NULL)
            continue;
        struct io_uring_sqe *sqe = get_sqe(r);
        io_uring_prep_cancel64(sqe, i, 0);
        io_uring_sqe_set_data64(sqe, UD_CANCEL);
        r->cancels++;
    }
    if (r->efd_armed) {
        struct io_uring_sqe *sqe = get_sqe(r);
        io_uring_prep_cancel64(sqe, UD_EVENT, 0);
        io_uring_sqe_set_data64(sqe, UD_CANCEL);
        r->cancels++;
    }
}

static void handle(struct ur_ring *r, uint64_t ud, int res)
{
    if (ud == UD_EVENT) {
        r->efd_armed = false;
        if (!r->closing_seen)
            arm_event(r);
    } else if (ud == UD_CANCEL) {
        r->cancels--;
        if (res == -EINVAL)
            cancel_each(r);
    } else if (ud < r->nslots && r->slots[ud].req != NULL) {
        io_done(r, (uint32_t)ud, res);
    }
}

/* reap() handles every CQE there is, in batches. The CQEs are copied out and the CQ advanced
 * before any is handled, so a callback that takes its time holds no CQ entries. */
static void reap(struct ur_ring *r)
{
    struct io_uring_cqe *cqes[REAP_BATCH];
    struct {
        uint64_t ud;
        int res;
    } ev[REAP_BATCH];
    for (;;) {
        unsigned n = io_uring_peek_batch_cqe(&r->ring, cqes, REAP_BATCH);
        if (n == 0)
            return;
        for (unsigned i = 0; i < n; i++) {
            ev[i].ud = io_uring_cqe_get_data64(cqes[i]);
            ev[i].res = cqes[i]->res;
        }
        io_uring_cq_advance(&r->ring, n);
        for (unsigned i = 0; i < n; i++) {
            handle(r, ev[i].ud, ev[i].res);
            /* A slot may have come free: start the next I/O in it now, not after the batch. */
            if (!r->closing_seen) {
                issue(r);
                submit_early(r);
            }
        }
    }
}

static void *ring_main(void *arg)
{
    struct ur_ring *r = arg;
    int rc = ring_init(r);
    pthread_mutex_lock(&r->lock);
    r->init_state = rc == 0 ? 1 : -1;
    r->init_err = rc;
    pthread_cond_broadcast(&r->init_cond);
    pthread_mutex_unlock(&r->lock);
    if (rc != 0) {
        ring_free(r);
        return NULL;
    }

    for (;;) {
        pthread_mutex_lock(&r->lock);
        vmio_list_splice(&r->pend, &r->queue);
        r->sleeping = false;
        bool closing = r->closing;
        pthread_mutex_unlock(&r->lock);

        if (closing && !r->cancel_sent) {
            r->closing_seen = true;
            cancel_all(r);
        }
        if (!closing)
            issue(r);

        unsigned wait_nr = 1;
        if (closing) {
            if (r->ios == 0 && !r->efd_armed && r->cancels == 0)
                break;
        } else {
            /* Sleep only with nothing queued; a submitter that finds 'sleeping' wakes us. */
            pthread_mutex_lock(&r->lock);
            if (r->queue.head != NULL)
                wait_nr = 0;
            else
                r->sleeping = true;
            pthread_mutex_unlock(&r->lock);
        }
        r->staged = 0;
        rc = io_uring_submit_and_wait(&r->ring, wait_nr);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && rc != -ETIME)
            vidmm_log(VIDMM_LOG_ERROR, "vmio: io_uring_enter failed: %s", strerror(-rc));
        reap(r);
    }
    ring_free(r);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The backend.
 * ------------------------------------------------------------------------------------------- */

static void ur_stop(struct vmio *io)
{
    struct ur_state *st = io->be;
    if (st == NULL)
        return;
    for (uint32_t i = 0; i < st->n; i++) {
        struct ur_ring *r = &st->rings[i];
        if (!r->started)
            continue;
        pthread_mutex_lock(&r->lock);
        r->closing = true;
        pthread_mutex_unlock(&r->lock);
        uint64_t one = 1;
        ssize_t w = write(r->efd, &one, sizeof(one));
        (void)w; /* cannot fail short of a counter overflow; the thread also sees 'closing' at
                    its next wake-up */
    }
    for (uint32_t i = 0; i < st->n; i++) {
        struct ur_ring *r = &st->rings[i];
        if (r->started)
            pthread_join(r->thread, NULL);
        if (r->efd >= 0)
            close(r->efd);
        pthread_cond_destroy(&r->init_cond);
        pthread_mutex_destroy(&r->lock);
    }
    free(st->rings);
    free(st);
    io->be = NULL;
}

static int ur_start(struct vmio *io)
{
    int ok = blocking_wait_ok();
    if (ok <= 0)
        return ok < 0 ? ok : VIDMM_E_UNSUPPORTED;
    struct ur_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return VIDMM_E_NO_MEMORY;
    st->rings = calloc(io->rings, sizeof(*st->rings));
    if (st->rings == NULL) {
        free(st);
        return VIDMM_E_NO_MEMORY;
    }
    st->n = io->rings;
    io->be = st;
    for (uint32_t i = 0; i < st->n; i++) {
        struct ur_ring *r = &st->rings[i];
        r->io = io;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->init_cond, NULL);
        r->efd = -1;
    }

    /* The ring threads take no signals: a program's handlers run on its own threads, and no
     * io_uring_enter() of ours is cut short by them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (uint32_t i = 0; i < st->n && rc == 0; i++) {
        struct ur_ring *r = &st->rings[i];
        r->efd = eventfd(0, EFD_CLOEXEC);
        if (r->efd < 0) {
            rc = VIDMM_E_NO_MEMORY; /* EMFILE, ENFILE, ENOMEM */
            break;
        }
        int e = pthread_create(&r->thread, NULL, ring_main, r);
        if (e != 0) {
            rc = e == EAGAIN || e == ENOMEM ? VIDMM_E_NO_MEMORY : VIDMM_E_IO;
            break;
        }
        r->started = true;
        pthread_setname_np(r->thread, "vidmm-io-uring");
        pthread_mutex_lock(&r->lock);
        while (r->init_state == 0)
            pthread_cond_wait(&r->init_cond, &r->lock);
        if (r->init_state < 0)
            rc = r->init_err;
        pthread_mutex_unlock(&r->lock);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        ur_stop(io);
        return rc;
    }
    struct ur_ring *r0 = &st->rings[0];
    io->setup_flags = r0->flags;
    io->fixed_buffers = r0->fixed_bufs;
    io->fixed_file = r0->fixed_file;
    io->threads = st->n;
    io->staging_bytes = (uint64_t)st->n * r0->arena_size;
    return 0;
}

static void enqueue(struct ur_ring *r, struct vmio_req *const *reqs, unsigned n)
{
    pthread_mutex_lock(&r->lock);
    for (unsigned i = 0; i < n; i++)
        vmio_list_push(&r->queue, reqs[i]);
    bool wake = r->sleeping;
    r->sleeping = false;
    pthread_mutex_unlock(&r->lock);
    if (wake) {
        uint64_t one = 1;
        ssize_t w = write(r->efd, &one, sizeof(one));
        (void)w; /* an eventfd write fails only when its counter would overflow */
    }
}

static void ur_submit(struct vmio *io, struct vmio_req *const *reqs, unsigned n)
{
    struct ur_state *st = io->be;
    if (st->n == 1) {
        enqueue(&st->rings[0], reqs, n);
        return;
    }
    /* A batch is spread over the rings in contiguous shares, starting at a rotating ring, so a
     * stream of single requests reaches every ring too. */
    uint32_t first = atomic_fetch_add_explicit(&st->next, 1, memory_order_relaxed) % st->n;
    unsigned per = (n + st->n - 1) / st->n;
    for (unsigned k = 0, at = 0; at < n; k++, at += per)
        enqueue(&st->rings[(first + k) % st->n], reqs + at, n - at < per ? n - at : per);
}

const struct vmio_backend_ops vmio_uring_ops = { ur_start, ur_submit, ur_stop };
