/* SPDX-License-Identifier: MIT */
/* tests/concurrency/test_engine_threads.c - many threads creating, submitting, locking,
 * evicting and destroying allocations on one device at once, with paging on two worker
 * threads and memory pressure forcing evictions across threads. Each thread owns its
 * allocations' content and checks it after every operation (a checksum of what it wrote); a
 * few allocations are shared by all threads for reading. Run under ThreadSanitizer by the test
 * command (the tsan preset), where any data race in the engine is a failure, and in the
 * ordinary builds.
 *
 * Threads never call the assertions (they abort from the wrong thread): each records its first
 * failure, and the main thread asserts after joining. */
#ifdef T_LITE_HARNESS
#  include "t_lite.h" /* the ThreadSanitizer build: see t_lite.h */
#else
#  include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"
#include "t_threads.h"

#define N_THREADS 6
#define OWN 4
#define N_SHARED 3
#define ITERS 250
#define ASIZE (256u << 10)

struct shared {
    vidmm_device *dev;
    vidmm_handle shared[N_SHARED];
    pthread_barrier_t start;
    struct t_gpu gpu;           /* the fences, signalled in order (t_threads.h) */
};

struct worker {
    pthread_t tid;
    int index;
    struct shared *sh;
    vidmm_handle h[OWN];
    unsigned char *want[OWN];   /* what each owned allocation must hold */
    struct t_rng rng;
    char failure[T_FAILURE_MAX];
    unsigned long ops;
};

static bool create_own(struct worker *w, int k)
{
    return t_own_create(w->sh->dev, ASIZE, (uint8_t)(w->index * OWN + k + 1), &w->h[k], w->want[k],
                        w->failure);
}

static bool check_own(struct worker *w, int k)
{
    return t_own_check(w->sh->dev, w->h[k], w->want[k], ASIZE, w->index, k, w->failure);
}

static bool one_op(struct worker *w)
{
    vidmm_device *dev = w->sh->dev;
    int k = (int)t_rng_below(&w->rng, OWN);
    size_t r = t_rng_below(&w->rng, 100);
    int err;
    if (r < 40) {
        /* Submit: the own allocation written, a shared one read; the "GPU" writes, then signals. */
        struct vidmm_alloc_ref refs[2] = { { w->h[k], VIDMM_REF_WRITE },
                                           { w->sh->shared[t_rng_below(&w->rng, N_SHARED)], 0 } };
        struct vidmm_residency where[2];
        uint64_t fence;
        err = vidmm_submit(dev, refs, 2, 0, where, &fence);
        if (err == VIDMM_E_NO_VIDEO_MEMORY)
            return true; /* every other thread holds the segment busy: legitimate */
        if (err)
            T_FAIL(w, "submit: %s", vidmm_strerror(err));
        size_t off = t_rng_below(&w->rng, ASIZE - 4096);
        t_rng_bytes(&w->rng, w->want[k] + off, 4096);
        memcpy((unsigned char *)where[0].cpu + off, w->want[k] + off, 4096);
        if ((err = t_gpu_done(&w->sh->gpu, dev, fence)) != 0)
            T_FAIL(w, "signal: %s", vidmm_strerror(err));
    } else if (r < 60) {
        struct vidmm_lock_args la = { w->h[k], 0, 0, NULL, 0, 0, NULL };
        if ((err = vidmm_lock(dev, &la)) != 0)
            T_FAIL(w, "lock: %s", vidmm_strerror(err));
        size_t off = t_rng_below(&w->rng, ASIZE - 512);
        t_rng_bytes(&w->rng, w->want[k] + off, 512);
        memcpy((unsigned char *)la.data + off, w->want[k] + off, 512);
        if ((err = vidmm_unlock(dev, 1, &w->h[k])) != 0)
            T_FAIL(w, "unlock: %s", vidmm_strerror(err));
    } else if (r < 72) {
        err = vidmm_evict(dev, &w->h[k], 1);
        if (err && err != VIDMM_E_BUSY)
            T_FAIL(w, "evict: %s", vidmm_strerror(err));
    } else if (r < 80) {
        if ((err = vidmm_alloc_destroy(dev, w->h[k])) != 0)
            T_FAIL(w, "destroy: %s", vidmm_strerror(err));
        return create_own(w, k);
    } else if (r < 86) {
        uint32_t p = VIDMM_PRIORITY_LOW + (uint32_t)t_rng_below(&w->rng, 3) * 0x28000000u;
        if ((err = vidmm_set_priority(dev, &w->h[k], &p, 1)) != 0)
            T_FAIL(w, "priority: %s", vidmm_strerror(err));
    } else {
        struct vidmm_alloc_info info = { .size_of = sizeof info };
        if ((err = vidmm_alloc_query(dev, w->h[k], &info)) != 0)
            T_FAIL(w, "query: %s", vidmm_strerror(err));
    }
    return check_own(w, k);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(&w->sh->start);
    for (int k = 0; k < OWN; k++)
        if (!create_own(w, k))
            return NULL;
    for (int i = 0; i < ITERS; i++) {
        if (!one_op(w))
            return NULL;
        w->ops++;
    }
    for (int k = 0; k < OWN; k++)
        vidmm_alloc_destroy(w->sh->dev, w->h[k]);
    return NULL;
}

static void run(uint32_t paging_threads, bool disk)
{
    /* 6 threads x 4 x 256 KiB = 6 MiB of owned allocations for a 4 MiB first segment: constant
     * eviction between threads; the second (non-CPU-visible) segment takes the overflow. */
    struct vidmm_segment_desc segs[2] = {
        { 0x10000000ull, 4u << 20, 4u << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 },
        { 0x20000000ull, 2u << 20, 2u << 20, 0, 0, NULL, 0 },
    };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = segs;
    dd.segment_count = 2;
    dd.paging_threads = paging_threads;
    char dir[] = "/var/tmp/vidmm-stress-XXXXXX", path[64] = "";
    if (disk) {
        /* The disk tier under the same load: 256 KiB of system memory (one allocation's backing
         * store) for 6.2 MiB of content and 6 MiB of segments, so write-outs and read-backs run
         * beside everything else. (With 2 MiB, a run whose threads happened to take turns - a
         * loaded machine - could keep every evicted store within the budget: 1 run in 6 wrote
         * nothing.) */
        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/swap", dir);
        dd.swap_path = path;
        dd.sysmem_budget = 256u << 10;
    }
    struct shared sh;
    memset(&sh, 0, sizeof sh);
    int err = vidmm_device_create(&dd, &sh.dev);
    cr_assert_eq(err, 0, "device_create: %s", vidmm_strerror(err));
    t_gpu_init(&sh.gpu, sh.dev);
    for (int i = 0; i < N_SHARED; i++) {
        struct vidmm_alloc_desc d = { .size_of = sizeof d };
        d.size = 64 << 10;
        d.flags = VIDMM_ALLOC_CPU_VISIBLE;
        d.priority = VIDMM_PRIORITY_HIGH;
        d.supported_read_set = d.supported_write_set = 0x3;
        cr_assert_eq(vidmm_alloc_create(sh.dev, &d, &sh.shared[i]), 0);
    }
    pthread_barrier_init(&sh.start, NULL, N_THREADS);
    struct worker *w = calloc(N_THREADS, sizeof *w);
    cr_assert_not_null(w);
    for (int t = 0; t < N_THREADS; t++) {
        w[t].index = t;
        w[t].sh = &sh;
        t_rng_init(&w[t].rng, 1000u + (uint64_t)t);
        for (int k = 0; k < OWN; k++) {
            w[t].want[k] = malloc(ASIZE);
            cr_assert_not_null(w[t].want[k]);
        }
        cr_assert_eq(pthread_create(&w[t].tid, NULL, worker_main, &w[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++)
        pthread_join(w[t].tid, NULL);
    for (int t = 0; t < N_THREADS; t++) {
        cr_assert_eq(w[t].failure[0], '\0', "thread %d: %s", t, w[t].failure);
        cr_assert_eq(w[t].ops, (unsigned long)ITERS);
        for (int k = 0; k < OWN; k++)
            free(w[t].want[k]);
    }
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(sh.dev, &st), 0);
    cr_assert_gt(st.evictions, 0, "the stress never evicted");
    cr_assert_eq(st.allocations, (uint64_t)N_SHARED, "allocations leaked: %llu live", (unsigned long long)st.allocations);
    if (disk)
        cr_assert_gt(st.swap_writes, 0, "the disk tier never wrote");
    free(w);
    pthread_barrier_destroy(&sh.start);
    t_gpu_destroy(&sh.gpu);
    vidmm_device_destroy(sh.dev);
    if (disk) {
        unlink(path);
        rmdir(dir);
    }
}

Test(engine_threads, stress_two_paging_threads, .timeout = 300)
{
    run(2, false);
}

Test(engine_threads, stress_callers_run_paging, .timeout = 300)
{
    run(0, false);
}

Test(engine_threads, stress_with_disk_tier, .timeout = 300)
{
    run(2, true);
}
