/* SPDX-License-Identifier: MIT */
/* tests/concurrency/test_lock_concurrency.c - range locks converting bytes with the device
 * mutex released (issue 16 deliverable 5), beside everything else the engine does.
 *
 * One thread locks and unlocks a large swizzled allocation over and over through a swizzling
 * range - whole, narrow boxes, one mip - writing through the view and checking what the view
 * shows against its own copy of the surface's packed linear bytes; between locks it submits it
 * (the GPU reads it) and, at the end, reads the tiled bytes back and compares them all. Other
 * threads meanwhile create, submit, lock, evict and destroy their own allocations under memory
 * pressure (the segment is too small for all of them, so the large allocation itself is evicted
 * between its locks and paged back in for the next one) and check their content after each
 * operation; one thread also tries to evict, submit and read the large allocation while it may
 * be converting. Run under ThreadSanitizer by the tsan build (any data race is a failure) and in
 * the ordinary builds.
 *
 * Threads never call the assertions: each records its first failure, the main thread asserts
 * after joining. */
#ifdef T_LITE_HARNESS
#  include "t_lite.h" /* the ThreadSanitizer build: see t_lite.h */
#else
#  include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"
#include "t_threads.h"

#define N_OTHERS 4
#define OWN 3
#define ASIZE (256u << 10)
#define SURF_W 1024u
#define SURF_H 512u
#define SURF_MIPS 3u
#define LOCKS 60
#define OTHER_ITERS 150

struct shared {
    vidmm_device *dev;
    vidmm_handle big;
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surface;
    uint64_t tiled_size, linear_size;
    pthread_barrier_t start;
    atomic_int locker_done;
    struct t_gpu gpu;           /* the fences, signalled in order (t_threads.h) */
};

struct thread {
    pthread_t tid;
    int index;
    struct shared *sh;
    struct t_rng rng;
    char failure[T_FAILURE_MAX];
    unsigned long ops;
    /* the locker */
    unsigned char *lin;         /* what the big allocation's packed linear bytes must be */
    /* the others */
    vidmm_handle h[OWN];
    unsigned char *want[OWN];
    unsigned long big_busy;     /* evictions of the big allocation refused as busy; the locker:
                                   locks that found no room */
    /* The last operations on each owned allocation, for a failure's message. */
    struct { char op; uint32_t off, seg, seg_off; } hist[OWN][8];
    unsigned nhist[OWN];
};

static void note_op(struct thread *t, int k, char op, size_t off, uint32_t seg, uint64_t seg_off)
{
    unsigned i = t->nhist[k]++ % 8;
    t->hist[k][i].op = op;
    t->hist[k][i].off = (uint32_t)off;
    t->hist[k][i].seg = seg;
    t->hist[k][i].seg_off = (uint32_t)seg_off;
}

/* ---------------------------------------------------------------------------------------------
 * The locker.
 * ------------------------------------------------------------------------------------------- */
/* One lock of the big allocation; '*done' false when it could not be placed for the lock (the
 * others' locked allocations in the way: VIDMM_E_NO_VIDEO_MEMORY or CANT_EVICT_PINNED, which
 * are legitimate under this pressure): the caller tries again. */
static bool locker_one(struct thread *t, int i, bool *done)
{
    *done = false;
    struct shared *sh = t->sh;
    vidmm_device *dev = sh->dev;
    const size_t e = sh->surface.element_bytes;
    struct vidmm_lock_args la = { sh->big, 0, 0, NULL, VIDMM_LOCK_ACQUIRE_APERTURE, 0, NULL };
    struct vidmm_lock_region rg;
    memset(&rg, 0, sizeof rg);
    rg.size_of = sizeof rg;
    const int kind = i % 3; /* 0 whole, 1 a box of mip 0, 2 mip 1 */
    int err;
    if (kind == 0) {
        err = vidmm_lock(dev, &la);
        rg.row_pitch = (uint64_t)SURF_W * e;
    } else if (kind == 1) {
        rg.mip = 0;
        rg.layer = 0;
        rg.flags = VIDMM_LOCK_REGION_BOX;
        rg.box.x = (uint32_t)t_rng_below(&t->rng, SURF_W / 2);
        rg.box.y = (uint32_t)t_rng_below(&t->rng, SURF_H / 2);
        rg.box.width = 1 + (uint32_t)t_rng_below(&t->rng, SURF_W / 2);
        rg.box.height = 1 + (uint32_t)t_rng_below(&t->rng, SURF_H / 2);
        rg.box.depth = 1;
        err = vidmm_lock_region(dev, &la, &rg);
    } else {
        rg.mip = 1;
        rg.layer = VIDMM_LOCK_REGION_ALL;
        err = vidmm_lock_region(dev, &la, &rg);
    }
    if (err == VIDMM_E_NO_VIDEO_MEMORY || err == VIDMM_E_CANT_EVICT_PINNED) {
        t->big_busy++;
        return true;
    }
    if (err)
        T_FAIL(t, "lock %d (kind %d): %s", i, kind, vidmm_strerror(err));
    *done = true;
    unsigned char *p = la.data;
    /* What the part shows: its rows against the model. */
    if (kind == 0) {
        ptrdiff_t d = t_find_diff(p, t->lin, (size_t)sh->linear_size);
        if (d >= 0)
            T_FAIL(t, "lock %d: the whole view differs at byte %td", i, d);
    } else if (kind == 1) {
        for (uint32_t y = 0; y < rg.box.height; y++)
            if (t_find_diff(p + y * rg.row_pitch, t->lin + rg.offset + y * rg.row_pitch, rg.box.width * e) >= 0)
                T_FAIL(t, "lock %d: row %u of the box differs", i, y);
    } else {
        if (t_find_diff(p, t->lin + rg.offset, (size_t)rg.slice_pitch) >= 0)
            T_FAIL(t, "lock %d: mip 1 differs", i);
    }
    /* Writes: a few rows of the part (for a box, within its columns). */
    const uint32_t rows = kind == 1 ? rg.box.height : (uint32_t)(kind == 0 ? SURF_H : SURF_H / 2);
    const size_t cols = kind == 1 ? rg.box.width * e : (size_t)rg.row_pitch;
    for (int k = 0; k < 4; k++) {
        const uint32_t y = (uint32_t)t_rng_below(&t->rng, rows);
        const size_t off = (size_t)y * rg.row_pitch;
        const size_t n = 1 + t_rng_below(&t->rng, cols);
        const size_t x = t_rng_below(&t->rng, cols - n + 1);
        t_rng_bytes(&t->rng, t->lin + rg.offset + off + x, n);
        memcpy(p + off + x, t->lin + rg.offset + off + x, n);
    }
    if ((err = vidmm_unlock(dev, 1, &sh->big)) != 0)
        T_FAIL(t, "unlock %d: %s", i, vidmm_strerror(err));
    if (i % 4 == 3) {
        /* The GPU reads it between locks. */
        struct vidmm_alloc_ref ref = { sh->big, 0 };
        uint64_t fence;
        err = vidmm_submit(dev, &ref, 1, 0, NULL, &fence);
        if (err == VIDMM_E_NO_VIDEO_MEMORY || err == VIDMM_E_CANT_EVICT_PINNED)
            return true; /* the others hold the segment: legitimate */
        if (err)
            T_FAIL(t, "submit %d: %s", i, vidmm_strerror(err));
        if ((err = t_gpu_done(&sh->gpu, dev, fence)) != 0)
            T_FAIL(t, "signal: %s", vidmm_strerror(err));
    }
    return true;
}

static void *locker_main(void *arg)
{
    struct thread *t = arg;
    pthread_barrier_wait(&t->sh->start);
    for (int i = 0, tries = 0; i < LOCKS && tries < 100000; tries++) {
        bool done;
        if (!locker_one(t, i, &done))
            break;
        if (done) {
            i++;
            t->ops++;
        }
    }
    atomic_store(&t->sh->locker_done, 1);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The others.
 * ------------------------------------------------------------------------------------------- */
static bool create_own(struct thread *t, int k)
{
    return t_own_create(t->sh->dev, ASIZE, (uint8_t)(t->index * OWN + k + 1), &t->h[k], t->want[k],
                        t->failure);
}

static bool check_own(struct thread *t, int k)
{
    if (t_own_check(t->sh->dev, t->h[k], t->want[k], ASIZE, t->index, k, t->failure))
        return true;
    /* What happened to it last (oldest first: S submit write at off in seg:seg_off, L lock
     * write, E evict, C recreate) and where it is now. */
    size_t n = strlen(t->failure);
    struct vidmm_alloc_info info = { .size_of = sizeof info };
    if (vidmm_alloc_query(t->sh->dev, t->h[k], &info) == 0)
        n += (size_t)snprintf(t->failure + n, T_FAILURE_MAX - n, "; now where %u seg %u:%llx dirty %d lost %d; ops",
                              info.where, info.segment_id, (unsigned long long)info.offset, info.dirty,
                              info.content_lost);
    const unsigned first = t->nhist[k] > 8 ? t->nhist[k] - 8 : 0;
    for (unsigned i = first; i < t->nhist[k] && n < T_FAILURE_MAX; i++) {
        const unsigned j = i % 8;
        n += (size_t)snprintf(t->failure + n, T_FAILURE_MAX - n, " %c%x@%u:%x", t->hist[k][j].op, t->hist[k][j].off,
                              t->hist[k][j].seg, t->hist[k][j].seg_off);
    }
    return false;
}

static bool other_one(struct thread *t)
{
    vidmm_device *dev = t->sh->dev;
    int k = (int)t_rng_below(&t->rng, OWN);
    size_t r = t_rng_below(&t->rng, 100);
    int err;
    if (r < 35) {
        struct vidmm_alloc_ref ref = { t->h[k], VIDMM_REF_WRITE };
        struct vidmm_residency where;
        uint64_t fence;
        err = vidmm_submit(dev, &ref, 1, 0, &where, &fence);
        if (err == VIDMM_E_NO_VIDEO_MEMORY || err == VIDMM_E_CANT_EVICT_PINNED)
            return true; /* locked allocations (the big one among them) fill the segments */
        if (err)
            T_FAIL(t, "submit: %s", vidmm_strerror(err));
        size_t off = t_rng_below(&t->rng, ASIZE - 4096);
        t_rng_bytes(&t->rng, t->want[k] + off, 4096);
        memcpy((unsigned char *)where.cpu + off, t->want[k] + off, 4096);
        note_op(t, k, 'S', off, where.segment_id, where.offset);
        if ((err = t_gpu_done(&t->sh->gpu, dev, fence)) != 0)
            T_FAIL(t, "signal: %s", vidmm_strerror(err));
    } else if (r < 55) {
        struct vidmm_lock_args la = { t->h[k], 0, 0, NULL, 0, 0, NULL };
        if ((err = vidmm_lock(dev, &la)) != 0)
            T_FAIL(t, "lock: %s", vidmm_strerror(err));
        size_t off = t_rng_below(&t->rng, ASIZE - 512);
        t_rng_bytes(&t->rng, t->want[k] + off, 512);
        memcpy((unsigned char *)la.data + off, t->want[k] + off, 512);
        note_op(t, k, 'L', off, 0, (uint64_t)(uintptr_t)la.data & 0xffffffffu);
        if ((err = vidmm_unlock(dev, 1, &t->h[k])) != 0)
            T_FAIL(t, "unlock: %s", vidmm_strerror(err));
    } else if (r < 67) {
        err = vidmm_evict(dev, &t->h[k], 1);
        if (err && err != VIDMM_E_BUSY)
            T_FAIL(t, "evict: %s", vidmm_strerror(err));
        note_op(t, k, err ? 'e' : 'E', 0, 0, 0);
    } else if (r < 75) {
        if ((err = vidmm_alloc_destroy(dev, t->h[k])) != 0)
            T_FAIL(t, "destroy: %s", vidmm_strerror(err));
        note_op(t, k, 'C', 0, 0, 0);
        return create_own(t, k);
    } else if (r < 85 && t->index == 0) {
        /* The big allocation, from outside its locks: evicting it is refused while it is locked
         * (VIDMM_E_BUSY), and otherwise pushes it out for the locker's next lock to page in. */
        err = vidmm_evict(dev, &t->sh->big, 1);
        if (err == VIDMM_E_BUSY)
            t->big_busy++;
        else if (err)
            T_FAIL(t, "evict of the big allocation: %s", vidmm_strerror(err));
    } else if (r < 92 && t->index == 1) {
        /* A read of a few tiled bytes of the big allocation (the caller acting as the GPU): it
         * waits for a conversion in progress; the bytes are not checked (the locker owns them). */
        unsigned char buf[256];
        if ((err = vidmm_gpu_access(dev, t->sh->big, 4096, buf, sizeof buf, false)) != 0)
            T_FAIL(t, "gpu_access of the big allocation: %s", vidmm_strerror(err));
    } else {
        struct vidmm_alloc_info info = { .size_of = sizeof info };
        if ((err = vidmm_alloc_query(dev, t->sh->big, &info)) != 0)
            T_FAIL(t, "query: %s", vidmm_strerror(err));
    }
    return check_own(t, k);
}

static void *other_main(void *arg)
{
    struct thread *t = arg;
    pthread_barrier_wait(&t->sh->start);
    for (int k = 0; k < OWN; k++)
        if (!create_own(t, k))
            return NULL;
    /* At least OTHER_ITERS operations, and on until the locker is done. */
    for (int i = 0; i < OTHER_ITERS || !atomic_load(&t->sh->locker_done); i++) {
        if (!other_one(t))
            return NULL;
        t->ops++;
    }
    for (int k = 0; k < OWN; k++)
        vidmm_alloc_destroy(t->sh->dev, t->h[k]);
    return NULL;
}

static void run(uint32_t paging_threads, uint32_t dev_flags)
{
    /* The big surface (1024 x 512 x 4, 3 mips: about 2.7 MiB) and 4 x 3 x 256 KiB of owned
     * allocations for a 5 MiB CPU-visible segment: constant eviction, the big one included
     * between its locks; the second segment (not CPU-visible) takes overflow of the small ones. */
    struct vidmm_segment_desc segs[2] = {
        { 0x10000000ull, 5u << 20, 5u << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 },
        { 0x20000000ull, 2u << 20, 2u << 20, 0, 0, NULL, 0 },
    };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = segs;
    dd.segment_count = 2;
    dd.paging_threads = paging_threads;
    dd.swizzling_ranges = 2;
    dd.flags = dev_flags;
    struct shared sh;
    memset(&sh, 0, sizeof sh);
    int err = vidmm_device_create(&dd, &sh.dev);
    cr_assert_eq(err, 0, "device_create: %s", vidmm_strerror(err));
    t_gpu_init(&sh.gpu, sh.dev);
    sh.layout = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    sh.surface = (struct vidmm_surface_desc){ sizeof sh.surface, SURF_W, SURF_H, 1, 4, 1, 1, SURF_MIPS, 1 };
    cr_assert_eq(vidmm_surface_tiled_size(&sh.layout, &sh.surface, &sh.tiled_size), 0);
    cr_assert_eq(vidmm_surface_linear_size(&sh.layout, &sh.surface, &sh.linear_size), 0);
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    d.size = sh.tiled_size;
    d.flags = VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_SWIZZLED;
    d.priority = VIDMM_PRIORITY_NORMAL;
    d.supported_read_set = d.supported_write_set = 0x1;
    d.layout = &sh.layout;
    d.surface = &sh.surface;
    cr_assert_eq(vidmm_alloc_create(sh.dev, &d, &sh.big), 0);
    /* Its starting content: random tiled bytes, written as the GPU would. */
    unsigned char *tiled = malloc((size_t)sh.tiled_size), *lin = malloc((size_t)sh.linear_size);
    cr_assert(tiled && lin);
    struct t_rng seed;
    t_rng_init(&seed, 77);
    t_rng_bytes(&seed, tiled, (size_t)sh.tiled_size);
    cr_assert_eq(vidmm_make_resident(sh.dev, &sh.big, 1, NULL), 0);
    cr_assert_eq(vidmm_gpu_access(sh.dev, sh.big, 0, tiled, (size_t)sh.tiled_size, true), 0);
    cr_assert_eq(vidmm_deswizzle_surface(&sh.layout, &sh.surface, tiled, sh.tiled_size, lin, sh.linear_size), 0);

    pthread_barrier_init(&sh.start, NULL, N_OTHERS + 1);
    struct thread *t = calloc(N_OTHERS + 1, sizeof *t);
    cr_assert_not_null(t);
    for (int i = 0; i <= N_OTHERS; i++) {
        t[i].index = i;
        t[i].sh = &sh;
        t_rng_init(&t[i].rng, 2000u + (uint64_t)i);
        if (i == N_OTHERS) {
            t[i].lin = lin;
            cr_assert_eq(pthread_create(&t[i].tid, NULL, locker_main, &t[i]), 0);
            continue;
        }
        for (int k = 0; k < OWN; k++) {
            t[i].want[k] = malloc(ASIZE);
            cr_assert_not_null(t[i].want[k]);
        }
        cr_assert_eq(pthread_create(&t[i].tid, NULL, other_main, &t[i]), 0);
    }
    for (int i = 0; i <= N_OTHERS; i++)
        pthread_join(t[i].tid, NULL);
    for (int i = 0; i <= N_OTHERS; i++) {
        cr_assert_eq(t[i].failure[0], '\0', "thread %d: %s", i, t[i].failure);
        if (i == N_OTHERS)
            cr_assert_eq(t[i].ops, (unsigned long)LOCKS);
        else
            cr_assert_geq(t[i].ops, (unsigned long)OTHER_ITERS);
        for (int k = 0; k < OWN && i < N_OTHERS; k++)
            free(t[i].want[k]);
    }
    /* The big allocation's bytes, wherever they are now: every write made through its views. */
    unsigned char *got = malloc((size_t)sh.tiled_size), *back = malloc((size_t)sh.linear_size);
    cr_assert(got && back);
    cr_assert_eq(vidmm_make_resident(sh.dev, &sh.big, 1, NULL), 0);
    cr_assert_eq(vidmm_gpu_access(sh.dev, sh.big, 0, got, (size_t)sh.tiled_size, false), 0);
    cr_assert_eq(vidmm_deswizzle_surface(&sh.layout, &sh.surface, got, sh.tiled_size, back, sh.linear_size), 0);
    ptrdiff_t diff = t_find_diff(back, lin, (size_t)sh.linear_size);
    cr_assert_eq(diff, -1, "the big allocation lost a write through a range view (linear byte %td)", diff);
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(sh.dev, &st), 0);
    cr_assert_gt(st.evictions, 0, "the stress never evicted");
    cr_assert_eq(st.allocations, 1u, "allocations leaked: %llu live", (unsigned long long)st.allocations);
    free(got);
    free(back);
    free(tiled);
    free(lin);
    free(t);
    pthread_barrier_destroy(&sh.start);
    t_gpu_destroy(&sh.gpu);
    vidmm_device_destroy(sh.dev);
}

Test(lock_concurrency, eager_two_paging_threads, .timeout = 600)
{
    run(2, 0);
}

Test(lock_concurrency, eager_callers_run_paging, .timeout = 600)
{
    run(0, 0);
}

Test(lock_concurrency, lazy_two_paging_threads, .timeout = 600)
{
    run(2, VIDMM_DEVICE_LAZY_RANGES); /* the eager view where the kernel has no lazy one */
}
