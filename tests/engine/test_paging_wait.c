/* SPDX-License-Identifier: MIT */
/* tests/engine/test_paging_wait.c - wait_timeout_ns bounds waits for the GPU, not for the CPU
 * (device.h). A call waiting for paging that waits for a GPU fence is bounded by it; once that
 * fence has passed, the paging thread only has to get a CPU again, and a loaded machine may
 * take longer than the timeout to give it one: that must not be VIDMM_E_TIMEOUT. (Seen as a
 * rare failure of fuzz_engine_replay on a loaded CI machine: "gpu_access read: wait timed
 * out", its wait_timeout_ns being 2 ms.)
 *
 * Made to happen: everything runs on one CPU; the device (and so its paging thread) is created
 * by a SCHED_IDLE thread, so the paging thread runs only when nothing else wants the CPU. Its
 * copy-back waits for a submission's fence; the test signals the fence, starts a thread that
 * keeps the CPU busy for 100 ms, and reads the allocation: the read waits for the copy-back,
 * whose thread gets the CPU only after the busy thread is done - 50 times the 2 ms timeout. */
#define _GNU_SOURCE
#include "t_engine.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ASIZE (64 * T_KiB)

struct maker {
    struct vidmm_device_desc dd;
    vidmm_device *dev;
    int rc, sched_err;
};

static void *make_device_idle(void *arg)
{
    struct maker *m = arg;
    struct sched_param sp = { 0 };
    if (sched_setscheduler(0, SCHED_IDLE, &sp) != 0) {
        m->sched_err = errno;
        return NULL;
    }
    m->rc = vidmm_device_create(&m->dd, &m->dev); /* its paging thread inherits SCHED_IDLE */
    return NULL;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static atomic_bool spin_go;

static void *busy(void *arg)
{
    (void)arg;
    while (!atomic_load(&spin_go))
        ;
    const double end = now_ms() + 100;
    while (now_ms() < end)
        ;
    return NULL;
}

Test(paging_wait, a_passed_fence_is_not_a_gpu_wait, .timeout = 60)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0); /* threads made from here inherit it */
    static struct vidmm_segment_desc segs[2];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_aper_seg(T_APE_BASE, T_APE_SIZE, 0); /* an aperture in its set: IGNORE_READ_SYNC is allowed */
    struct maker m = { .dd = t_ddesc(segs, 2), .rc = -1 };
    m.dd.paging_threads = 1;
    m.dd.wait_timeout_ns = 2000000; /* 2 ms, as the fuzzer's */
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, make_device_idle, &m), 0);
    pthread_join(th, NULL);
    if (m.sched_err)
        cr_skip_test("no SCHED_IDLE here (%s): the paging thread cannot be kept off the CPU", strerror(m.sched_err));
    cr_assert_eq(m.rc, 0, "vidmm_device_create: %s", vidmm_strerror(m.rc));
    vidmm_device *dev = m.dev;
    struct vidmm_alloc_desc d = t_adesc(ASIZE, T_SET(1) | T_SET(2));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    cr_assert_eq(where.segment_id, 1u);
    /* The GPU reads it, not done: the copy-back of a write waits for that. */
    const uint64_t fence = t_submit1(dev, h, 0, NULL);
    struct vidmm_lock_args la = t_largs(h, VIDMM_LOCK_IGNORE_READ_SYNC);
    T_OK(vidmm_lock(dev, &la));
    memset(la.data, 0x6B, ASIZE);
    t_unlock(dev, h); /* the copy-back is queued; the paging thread waits for the fence */
    struct timespec pause = { 0, 50 * 1000000 };
    nanosleep(&pause, NULL); /* the CPU is free: the paging thread reaches its wait */
    pthread_t bt;
    atomic_store(&spin_go, false);
    cr_assert_eq(pthread_create(&bt, NULL, busy, NULL), 0);
    T_OK(vidmm_fence_signal(dev, fence));
    atomic_store(&spin_go, true); /* from now on the paging thread gets no CPU for 100 ms */
    unsigned char buf[256];
    const int rc = vidmm_gpu_access(dev, h, 0, buf, sizeof buf, false);
    pthread_join(bt, NULL);
    cr_assert_eq(rc, 0, "the read after the fence passed: %s (the paging thread was only waiting for a CPU)",
                 vidmm_strerror(rc));
    cr_assert(t_is_fill(buf, sizeof buf, 0x6B6B6B6Bu), "the copy-back's bytes are not there");
    vidmm_device_destroy(dev);
}

/* An unlock waits for the copy-back it queues (vidmm_unlock(): done, and logged, when the call
 * returns) - but not for the GPU. On a device without paging threads the caller's thread runs
 * the queue, and an operation queued before the copy-back may have to wait for a submission's
 * fence: the eviction of an allocation the GPU still reads, queued by a lock that asked to
 * ignore the GPU's reads and gave up waiting for it (VIDMM_E_TIMEOUT: the eviction stays queued).
 * Waiting for that fence with no deadline is waiting for the caller itself (nothing else
 * signals it): the unlock never returned (found by fuzz_engine's libFuzzer run: vidmm_unlock ->
 * run_one -> wait_idle). The
 * unlock runs in a thread here; the test signals the fence after 5 s whatever happened, so a
 * stuck unlock fails the test instead of hanging it. */
struct unlocker {
    vidmm_device *dev;
    vidmm_handle h;
    int rc;
    atomic_bool done;
};

static void *unlock_thread(void *arg)
{
    struct unlocker *u = arg;
    u->rc = vidmm_unlock(u->dev, 1, &u->h);
    atomic_store(&u->done, true);
    return NULL;
}

static void unlock_behind_gpu_paging(uint32_t paging_threads)
{
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, 0);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, 0);
    struct vidmm_device_desc dd = t_ddesc(segs, 3);
    dd.paging_threads = paging_threads;
    dd.wait_timeout_ns = 2000000;
    vidmm_device *dev = t_dev(&dd);
    /* A: PermanentSysMem, resident, idle; its unlock queues a copy-back (after B's eviction). */
    struct vidmm_alloc_desc d = t_adesc(ASIZE, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle a = t_alloc(dev, &d);
    struct vidmm_residency where_a;
    t_resident(dev, a, &where_a);
    cr_assert_eq(where_a.segment_id, T_VIS);
    /* B: in local memory (not CPU-visible), read by a submission not done. */
    vidmm_handle b = t_alloc_simple(dev, ASIZE, T_SET(T_LOC) | T_SET(T_APE));
    unsigned char *want_b = malloc(ASIZE), *got = malloc(ASIZE);
    cr_assert(want_b && got);
    t_bytes(want_b, ASIZE, 0xB0B);
    t_write(dev, b, 0, want_b, ASIZE);
    struct vidmm_residency where_b;
    const uint64_t fence = t_submit1(dev, b, 0, &where_b);
    cr_assert_eq(where_b.segment_id, T_LOC);
    /* A lock of B evicts it to system memory first; the eviction waits for the GPU's reads,
     * which the lock ignores but the eviction does not: the lock times out, the eviction queued. */
    struct vidmm_lock_args lb = t_largs(b, VIDMM_LOCK_IGNORE_READ_SYNC);
    cr_assert_eq(vidmm_lock(dev, &lb), VIDMM_E_TIMEOUT, "the lock of B did not wait for its eviction");
    struct vidmm_lock_args la = t_largs(a, 0);
    T_OK(vidmm_lock(dev, &la));
    memset(la.data, 0x6B, ASIZE);
    struct unlocker u = { .dev = dev, .h = a, .rc = -1 };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, unlock_thread, &u), 0);
    const double end = now_ms() + 5000;
    while (!atomic_load(&u.done) && now_ms() < end) {
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
    const bool returned = atomic_load(&u.done);
    /* Nor was the copy-back run out of order: it waits behind B's eviction. */
    struct t_log_buf *log = malloc(sizeof *log);
    cr_assert_not_null(log);
    t_log_take(dev, log);
    const ptrdiff_t early = t_log_find(log, VIDMM_PAGING_TRANSFER, a, 0);
    T_OK(vidmm_fence_signal(dev, fence)); /* lets a stuck unlock go */
    pthread_join(th, NULL);
    cr_assert(returned, "vidmm_unlock() of an idle allocation waited for a fence only its caller could signal "
                        "(%u paging threads)", paging_threads);
    cr_assert_eq(u.rc, 0, "vidmm_unlock: %s", vidmm_strerror(u.rc));
    cr_assert_eq(early, -1, "A's copy-back ran before B's eviction, queued before it");
    free(log);
    /* Nothing lost either way: A's segment copy holds the CPU's bytes once the GPU uses it, B's
     * content survived its eviction. */
    t_use(dev, a, 0);
    cr_assert(t_is_fill(where_a.cpu, ASIZE, 0x6B6B6B6Bu), "A's copy-back is not in its segment");
    t_read(dev, b, 0, got, ASIZE);
    cr_assert(memcmp(got, want_b, ASIZE) == 0, "B's content changed across its eviction");
    free(want_b);
    free(got);
    vidmm_device_destroy(dev);
}

/* No paging threads: the caller's thread would wait for the fence itself. */
Test(paging_wait, an_unlock_behind_paging_that_waits_for_the_gpu_returns, .timeout = 60)
{
    unlock_behind_gpu_paging(0);
}

/* A paging thread: it waits for the fence, and the unlock waited for it without a deadline. */
Test(paging_wait, an_unlock_behind_a_paging_thread_waiting_for_the_gpu_returns, .timeout = 60)
{
    unlock_behind_gpu_paging(1);
}
