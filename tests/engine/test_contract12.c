/* SPDX-License-Identifier: MIT */
/* tests/engine/test_contract12.c - contract tests for the engine defects of issue 12 (items 2-17
 * and 19), one test per defect, named dNN_<what the contract says>. Each one is written from the
 * issue's text, the public header (include/vidmm/device.h) and shared/spec/wddm-vidmm.md - not
 * from the engine's code - and checks what the contract promises: exact codes, contents byte for
 * byte, "nothing changed" after a refusal (t_snap / T_REFUSED), and calls that must not block
 * measured against a watchdog that would unblock them (so a blocking call fails the test instead
 * of hanging it).
 *
 * A second suite beside test_defects12.c, written independently of it and of the fixes, so
 * that a misreading shared by a fix and its own test still shows up here.
 *
 * Issue 12's items 1, 18, 20 and 21 are not engine defects (the swizzle kernels, the swap file,
 * tools/test.sh, valgrind) and have tests elsewhere. */
#include "t_engine.h"
#include "t_helpers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* =============================================================================================
 * Helpers local to this suite.
 * =========================================================================================== */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* A watchdog: signals 'fence' after 'ms' unless stopped first. A call that must not wait for
 * the GPU is made with one running: if the call blocks, the watchdog unblocks it, and the test
 * sees that it fired (and how long the call took) instead of hanging. */
struct wd {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vidmm_device *dev;
    uint64_t fence;
    unsigned ms;
    bool stop;
    bool fired;
    int rc;
};

static void *wd_main(void *arg)
{
    struct wd *w = arg;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += (time_t)(w->ms / 1000);
    dl.tv_nsec += (long)(w->ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &dl) == ETIMEDOUT)
            break;
    }
    bool fire = !w->stop;
    w->fired = fire;
    pthread_mutex_unlock(&w->mu);
    if (fire)
        w->rc = vidmm_fence_signal(w->dev, w->fence);
    return NULL;
}

static void wd_start(struct wd *w, vidmm_device *dev, uint64_t fence, unsigned ms)
{
    memset(w, 0, sizeof(*w));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->mu, NULL);
    w->dev = dev;
    w->fence = fence;
    w->ms = ms;
    cr_assert_eq(pthread_create(&w->th, NULL, wd_main, w), 0);
}

/* Stops the watchdog; returns whether it had fired (signalled its fence). */
static bool wd_stop(struct wd *w)
{
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return w->fired;
}

/* A last resort against a deadlock the watchdogs cannot undo (a paging thread stuck in a
 * callback): the process is aborted after 'sec' seconds, which fails the test. */
static void *deadman_main(void *arg)
{
    unsigned sec = (unsigned)(uintptr_t)arg;
    sleep_ms(sec * 1000u);
    fprintf(stderr, "test_defects: deadman: the test did not finish within %u s (a call blocked)\n", sec);
    fflush(stderr);
    abort();
    return NULL;
}

static void deadman(unsigned sec)
{
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, deadman_main, (void *)(uintptr_t)sec), 0);
    pthread_detach(th);
}

/* The standard segment table of t_engine.h (T_VIS, T_LOC, T_APE), for devices that need a
 * descriptor field t_dev_std_ex() does not set. */
static void std_segs(struct vidmm_segment_desc segs[3])
{
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, 0);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, 0);
}

/* Guarded buffers: 'pages' pages with an inaccessible page right before and right after, so
 * that any access outside the buffer faults (and fails the test). */
struct guarded {
    unsigned char *map;
    unsigned char *buf;
    size_t pages;
};

static void guarded_alloc(struct guarded *g, size_t pages)
{
    size_t pg = (size_t)T_PG;
    g->pages = pages;
    g->map = mmap(NULL, (pages + 2) * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(g->map, MAP_FAILED, "mmap: %s", strerror(errno));
    cr_assert_eq(mprotect(g->map, pg, PROT_NONE), 0);
    cr_assert_eq(mprotect(g->map + (pages + 1) * pg, pg, PROT_NONE), 0);
    g->buf = g->map + pg;
}

static void guarded_free(struct guarded *g)
{
    munmap(g->map, (g->pages + 2) * (size_t)T_PG);
}

static void expect_bytes(const void *got, const void *want, size_t n, const char *what)
{
    ptrdiff_t d = t_find_diff(got, want, n);
    cr_assert_eq(d, -1, "%s: byte %td is 0x%02x, expected 0x%02x (of %zu)", what, d,
                 d >= 0 ? ((const unsigned char *)got)[d] : 0, d >= 0 ? ((const unsigned char *)want)[d] : 0, n);
}

static void expect_content(vidmm_device *dev, vidmm_handle h, const void *want, size_t n, const char *what)
{
    unsigned char *buf = malloc(n);
    cr_assert_not_null(buf);
    t_read(dev, h, 0, buf, n);
    expect_bytes(buf, want, n, what);
    free(buf);
}

static int lock_rc(vidmm_device *dev, vidmm_handle h, uint32_t flags, struct vidmm_lock_args *out)
{
    struct vidmm_lock_args a = t_largs(h, flags);
    int rc = vidmm_lock(dev, &a);
    if (out)
        *out = a;
    return rc;
}

static int submit_rc(vidmm_device *dev, vidmm_handle h, uint32_t ref_flags, uint32_t submit_flags,
                     struct vidmm_residency *where, uint64_t *fence)
{
    struct vidmm_alloc_ref ref = { h, ref_flags };
    return vidmm_submit(dev, &ref, 1, submit_flags, where, fence);
}

/* =============================================================================================
 * Item 2 (memory safety): ExistingSysMem. Spec 4.1: the existing range is "page-aligned,
 * page-multiple size"; spec 15.2: "ExistingSysMem pointer and size page-aligned ... Violation ->
 * STATUS_INVALID_PARAMETER". And the audit of every other caller buffer: a range outside the
 * allocation, a page index >= the page count (15.11), a NULL page list with a count.
 * =========================================================================================== */
Test(contract12, d02_existing_sysmem_unaligned_size_refused)
{
    vidmm_device *dev = t_dev_std();
    const size_t pg = (size_t)T_PG;
    struct guarded g;
    guarded_alloc(&g, 3);
    memset(g.buf, 0x6B, 3 * pg);

    const uint32_t kinds[2] = { VIDMM_ALLOC_EXISTING_SYSMEM, VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM };
    for (int k = 0; k < 2; k++) {
        char why[160];
        struct vidmm_alloc_desc d = t_adesc(3 * pg, T_SET(T_VIS));
        d.flags |= kinds[k];
        const uint64_t bad_sizes[] = { 2 * pg + 100, 3 * pg - 1, 100, pg + 1 };
        for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
            d.existing_memory = g.buf;
            d.size = bad_sizes[i];
            snprintf(why, sizeof(why), "flags 0x%x, size %llu (not a page multiple)", d.flags,
                     (unsigned long long)d.size);
            t_alloc_refused(dev, &d, why);
        }
        const size_t bad_offsets[] = { 16, 2048, 1 };
        for (size_t i = 0; i < sizeof(bad_offsets) / sizeof(bad_offsets[0]); i++) {
            d.existing_memory = g.buf + bad_offsets[i];
            d.size = 2 * pg;
            snprintf(why, sizeof(why), "flags 0x%x, pointer page + %zu (not page-aligned)", d.flags, bad_offsets[i]);
            t_alloc_refused(dev, &d, why);
        }
        d.existing_memory = NULL;
        d.size = 2 * pg;
        snprintf(why, sizeof(why), "flags 0x%x, NULL existing memory", d.flags);
        t_alloc_refused(dev, &d, why);
    }

    /* Positive control, which is also the overrun check: a valid ExistingSysMem allocation over
     * exactly the guarded 3 pages, paged in (TRANSFER from the caller's pages), written by the
     * GPU, evicted (TRANSFER back), locked. Any byte touched outside the 3 pages faults. */
    struct vidmm_alloc_desc d = t_adesc(3 * pg, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_EXISTING_SYSMEM;
    d.existing_memory = g.buf;
    vidmm_handle h = t_alloc(dev, &d);

    unsigned char *p1 = malloc(3 * pg), *p2 = malloc(3 * pg), *p3 = malloc(3 * pg);
    cr_assert(p1 && p2 && p3);
    t_bytes(p1, 3 * pg, 21);
    t_bytes(p2, 3 * pg, 22);
    t_bytes(p3, 3 * pg, 23);

    /* spec 4.1: ExistingSysMem has PermanentSysMem's lock semantics - the lock returns the
     * backing store, here the caller's own pages. */
    void *p = t_lock(dev, h, 0);
    cr_assert_eq(p, (void *)g.buf, "lock of an ExistingSysMem allocation returned %p, not the caller's buffer %p", p,
                 (void *)g.buf);
    memcpy(p, p1, 3 * pg);
    t_unlock(dev, h);

    struct vidmm_residency w;
    t_resident(dev, h, &w);
    cr_assert_eq(w.segment_id, T_VIS);
    expect_content(dev, h, p1, 3 * pg, "ExistingSysMem paged in");
    t_write(dev, h, 0, p2, 3 * pg);
    t_evict(dev, h);
    expect_bytes(g.buf, p2, 3 * pg, "caller's buffer after evicting the GPU-written ExistingSysMem allocation");
    t_resident(dev, h, NULL);
    t_evict(dev, h); /* clean this time: discarded, the caller's bytes stay */
    expect_bytes(g.buf, p2, 3 * pg, "caller's buffer after a clean eviction");

    /* A page-list lock points at the first listed page of the caller's buffer. */
    uint32_t page2 = 2;
    struct vidmm_lock_args la = t_largs(h, 0);
    la.page_count = 1;
    la.pages = &page2;
    T_OK(vidmm_lock(dev, &la));
    cr_assert_eq(la.data, (void *)(g.buf + 2 * pg), "page-list lock of page 2 returned %p, expected %p", la.data,
                 (void *)(g.buf + 2 * pg));
    memcpy(la.data, p3 + 2 * pg, pg);
    t_unlock(dev, h);
    memcpy(p2 + 2 * pg, p3 + 2 * pg, pg);
    t_resident(dev, h, NULL);
    expect_content(dev, h, p2, 3 * pg, "ExistingSysMem after a page-list lock, paged in again");

    /* The audit: other caller-provided ranges, each refused with nothing changed. */
    unsigned char tmp[64];
    struct t_snap s;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, 3 * pg - 8, tmp, 16, false), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, 3 * pg - 8, tmp, 16, true), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, 3 * pg, tmp, 1, false), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, UINT64_MAX - 7, tmp, 16, false), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, UINT64_MAX - 7, tmp, 16, true), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, 8, tmp, SIZE_MAX - 4, false), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, 0, NULL, 16, false), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_gpu_access(dev, h, 0, NULL, 16, true), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_invalidate_cache(dev, h, 3 * pg - 8, 16), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_invalidate_cache(dev, h, UINT64_MAX - 7, 16), VIDMM_E_INVALID_ARG);

    /* spec 15.11: "page index >= page count" is invalid; a NULL page list with a count too. */
    const uint32_t huge[] = { 0xFFFFFFFFu, 0x80000000u, 3u, 0x00100000u };
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        struct vidmm_lock_args a = t_largs(h, 0);
        a.page_count = 1;
        a.pages = &huge[i];
        T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
        cr_assert_eq(a.allocation, h);
    }
    uint32_t mixed[3] = { 0, 1, 0xFFFFFFF0u };
    struct vidmm_lock_args a = t_largs(h, 0);
    a.page_count = 3;
    a.pages = mixed;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    a = t_largs(h, 0);
    a.page_count = 2;
    a.pages = NULL;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);

    free(p1);
    free(p2);
    free(p3);
    T_OK(vidmm_alloc_destroy(dev, h));
    vidmm_device_destroy(dev);
    guarded_free(&g);
}

/* =============================================================================================
 * Item 3: spec 7 / 15.18 - a Discard lock of a busy allocation returns a new instance; spec
 * 4.1: the lock of a PermanentSysMem allocation returns its system-memory copy. So the new
 * instance must come with a backing store of its own: a non-NULL, writable pointer whose writes
 * do not touch what the GPU is reading from the busy instance.
 * =========================================================================================== */
Test(contract12, d03_discard_of_busy_permanent_sysmem_gives_writable_instance)
{
    deadman(30);
    vidmm_device *dev = t_dev_std();
    const size_t n = 64 * T_KiB;
    struct vidmm_alloc_desc d = t_adesc(n, T_SET(T_VIS) | T_SET(T_APE));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h = t_alloc(dev, &d);

    unsigned char *c1 = malloc(n), *gpu_before = malloc(n), *tmp = malloc(n);
    cr_assert(c1 && gpu_before && tmp);
    t_bytes(c1, n, 31);
    memcpy(t_lock(dev, h, 0), c1, n);
    t_unlock(dev, h);

    struct vidmm_residency w;
    uint64_t f = t_submit1(dev, h, 0, &w); /* the GPU reads it: busy until f */
    cr_assert_not_null(w.cpu);
    memcpy(gpu_before, w.cpu, n);
    expect_bytes(gpu_before, c1, n, "what the GPU reads (precondition)");

    struct wd wd;
    wd_start(&wd, dev, f, 3000);
    struct vidmm_lock_args a;
    int rc = lock_rc(dev, h, VIDMM_LOCK_DISCARD, &a);
    bool fired = wd_stop(&wd);
    cr_assert_eq(rc, 0, "Discard lock of a busy PermanentSysMem allocation returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_not(fired, "the Discard lock of a busy allocation waited for the GPU instead of renaming (15.18)");
    cr_assert_neq(a.allocation, h, "a Discard lock of a busy allocation must return a new instance (spec 7)");
    cr_assert_not_null(a.data, "the renamed PermanentSysMem instance has no backing store (NULL pointer)");
    cr_assert_neq(a.data, w.cpu, "the new instance's pointer is the busy instance's GPU view");

    memset(a.data, 0xE7, n); /* faults if the pointer is not writable memory of n bytes */
    cr_assert(t_is_fill(a.data, n, 0xE7E7E7E7u), "writes through the new instance's pointer did not stick");
    expect_bytes(w.cpu, gpu_before, n, "bytes the GPU is reading from the busy instance after writes to the new one");
    t_read(dev, h, 0, tmp, n);
    expect_bytes(tmp, c1, n, "the busy instance's content after writes to the new one");
    t_unlock(dev, a.allocation);
    t_signal(dev, f);

    /* The new instance's bytes reach the GPU. */
    struct vidmm_residency w2;
    t_signal(dev, t_submit1(dev, a.allocation, 0, &w2));
    t_expect_fill(dev, a.allocation, 0, n, 0xE7E7E7E7u);

    free(c1);
    free(gpu_before);
    free(tmp);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 4: sizes that can never be placed fail at creation, fast (README: "larger than every
 * segment of their set, or than an aperture's CommitLimit / ApertureSegmentCommitLimit ->
 * VIDMM_E_NO_VIDEO_MEMORY"; header: larger than the sysmem_reserve -> VIDMM_E_NO_MEMORY), and
 * PermanentSysMem copies are committed lazily (header: "no memory is committed for it here").
 * =========================================================================================== */
static void refused_fast(vidmm_device *dev, const struct vidmm_alloc_desc *d, int err, const char *why)
{
    struct t_snap s;
    t_snap(&s, dev, NULL, 0);
    vidmm_handle h = T_OUT_SENTINEL;
    long f0 = minor_faults();
    double t0 = now_s();
    int rc = vidmm_alloc_create(dev, d, &h);
    double dt = now_s() - t0;
    long faults = minor_faults() - f0;
    if (rc == 0)
        vidmm_alloc_destroy(dev, h);
    cr_assert_eq(rc, err, "%s: vidmm_alloc_create() returned %d (%s), expected %d (%s) (took %.3f s, %ld page faults)",
                 why, rc, vidmm_strerror(rc), err, vidmm_strerror(err), dt, faults);
    cr_assert_eq(h, T_OUT_SENTINEL, "%s: refused create wrote *out", why);
    /* Under 4096 faults (16 MiB of 4 KiB pages): filling a 1 GiB store first takes 262144. */
    cr_assert_lt(faults, 4096, "%s: the refusal took %ld page faults (memory written before refusing?)", why, faults);
    cr_assert_lt(dt, 1.0, "%s: the refusal took %.3f s (not fast)", why, dt);
    t_unchanged(&s, why);
}

Test(contract12, d04_impossible_sizes_fail_fast_and_sysmem_commit_is_lazy)
{
    const uint64_t MiB = T_MiB;
    /* Device A: a 16 MiB memory segment and a 16 MiB aperture. */
    struct vidmm_segment_desc sa[2] = { t_mem_seg(T_VIS_BASE, 16 * MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                        t_aper_seg(T_APE_BASE, 16 * MiB, 0) };
    struct vidmm_device_desc da = t_ddesc(sa, 2);
    vidmm_device *dev = t_dev(&da);

    struct vidmm_alloc_desc d = t_adesc(1024 * MiB, T_SET(1) | T_SET(2));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    refused_fast(dev, &d, VIDMM_E_NO_VIDEO_MEMORY, "PermanentSysMem 1 GiB against 16 MiB segments");
    d.flags &= ~VIDMM_ALLOC_PERMANENT_SYSMEM;
    refused_fast(dev, &d, VIDMM_E_NO_VIDEO_MEMORY, "plain 1 GiB against 16 MiB segments");
    d.size = 16 * MiB + T_PG;
    refused_fast(dev, &d, VIDMM_E_NO_VIDEO_MEMORY, "one page more than every segment of the set");
    d.size = 16 * MiB; /* positive control: exactly a segment */
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    T_OK(vidmm_alloc_destroy(dev, t_alloc(dev, &d)));

    /* Lazy commit: creating an 8 MiB PermanentSysMem allocation with a fill pattern commits
     * nothing (sysmem_used unchanged); its content is the pattern when first read. */
    struct vidmm_alloc_desc lz = t_adesc(8 * MiB, T_SET(1) | T_SET(2));
    lz.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    lz.fill_pattern = 0x11223344u;
    uint64_t used0 = t_stats(dev).sysmem_used;
    long f0 = minor_faults();
    vidmm_handle h1 = t_alloc(dev, &lz);
    vidmm_handle h2 = t_alloc(dev, &lz);
    long faults = minor_faults() - f0;
    uint64_t used1 = t_stats(dev).sysmem_used;
    cr_assert_eq(used1, used0, "creating two 8 MiB PermanentSysMem allocations grew sysmem_used %llu -> %llu",
                 (unsigned long long)used0, (unsigned long long)used1);
    cr_assert_lt(faults, 1024, "creating two 8 MiB PermanentSysMem allocations took %ld page faults", faults);
    void *p = t_lock(dev, h1, VIDMM_LOCK_READ_ONLY);
    cr_assert(t_is_fill(p, 8 * MiB, 0x11223344u), "first lock of a lazily committed copy is not the fill pattern");
    t_unlock(dev, h1);
    t_expect_fill(dev, h2, 0, 8 * MiB, 0x11223344u); /* first read through the GPU path */
    struct vidmm_residency w;
    t_signal(dev, t_submit1(dev, h2, 0, &w));
    cr_assert(t_is_fill(w.cpu, 8 * MiB, 0x11223344u), "paged-in lazily committed copy is not the fill pattern");
    vidmm_device_destroy(dev);

    /* Device B: an aperture whose CommitLimit (8 MiB) is below its size (64 MiB). */
    struct vidmm_segment_desc sb[2] = { t_mem_seg(T_VIS_BASE, 4 * MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                        t_aper_seg(T_APE_BASE, 64 * MiB, 0) };
    sb[1].commit_limit = 8 * MiB;
    struct vidmm_device_desc db = t_ddesc(sb, 2);
    dev = t_dev(&db);
    d = t_adesc(12 * MiB, T_SET(2));
    refused_fast(dev, &d, VIDMM_E_NO_VIDEO_MEMORY, "12 MiB in an aperture of CommitLimit 8 MiB");
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    refused_fast(dev, &d, VIDMM_E_NO_VIDEO_MEMORY, "PermanentSysMem 12 MiB in an aperture of CommitLimit 8 MiB");
    d.size = 8 * MiB;
    T_OK(vidmm_alloc_destroy(dev, t_alloc(dev, &d)));
    vidmm_device_destroy(dev);

    /* Device C: an aperture of 64 MiB under an adapter ApertureSegmentCommitLimit of 8 MiB. */
    struct vidmm_segment_desc sc[2] = { t_mem_seg(T_VIS_BASE, 4 * MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                        t_aper_seg(T_APE_BASE, 64 * MiB, 0) };
    struct vidmm_device_desc dc = t_ddesc(sc, 2);
    dc.aperture_commit_limit = 8 * MiB;
    dev = t_dev(&dc);
    d = t_adesc(12 * MiB, T_SET(2));
    refused_fast(dev, &d, VIDMM_E_NO_VIDEO_MEMORY, "12 MiB under an ApertureSegmentCommitLimit of 8 MiB");
    d.size = 8 * MiB;
    T_OK(vidmm_alloc_destroy(dev, t_alloc(dev, &d)));
    vidmm_device_destroy(dev);
    /* The same with a 16 MiB memory segment in the set: placeable there, so not refused. */
    struct vidmm_segment_desc sc2[2] = { t_mem_seg(T_VIS_BASE, 16 * MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                         t_aper_seg(T_APE_BASE, 64 * MiB, 0) };
    struct vidmm_device_desc dc2 = t_ddesc(sc2, 2);
    dc2.aperture_commit_limit = 8 * MiB;
    dev = t_dev(&dc2);
    d = t_adesc(12 * MiB, T_SET(1) | T_SET(2));
    T_OK(vidmm_alloc_destroy(dev, t_alloc(dev, &d)));
    vidmm_device_destroy(dev);

    /* Device D: a 256 MiB aperture but only 32 MiB of address space for backing stores. */
    struct vidmm_segment_desc sd[2] = { t_mem_seg(T_VIS_BASE, 4 * MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                        t_aper_seg(T_APE_BASE, 256 * MiB, 0) };
    struct vidmm_device_desc dd = t_ddesc(sd, 2);
    dd.sysmem_reserve = 32 * MiB;
    dev = t_dev(&dd);
    d = t_adesc(64 * MiB, T_SET(2));
    refused_fast(dev, &d, VIDMM_E_NO_MEMORY, "64 MiB against a sysmem_reserve of 32 MiB");
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    refused_fast(dev, &d, VIDMM_E_NO_MEMORY, "PermanentSysMem 64 MiB against a sysmem_reserve of 32 MiB");
    d.size = 16 * MiB;
    T_OK(vidmm_alloc_destroy(dev, t_alloc(dev, &d)));
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 5: spec 8.1 / 8.2 - a Swizzled allocation "may stay swizzled when evicted"; VidMm tracks
 * whether the evicted copy is swizzled. Moved from a memory segment into an aperture (its tiled
 * bytes mapped there) and then evicted, the copy is still tiled: a range lock must show the
 * linear surface exactly as written, and the GPU the tiled bytes.
 * =========================================================================================== */
Test(contract12, d05_swizzled_moved_to_aperture_then_evicted_keeps_content)
{
    for (uint32_t ranges = 0; ranges <= 2; ranges += 2) {
        vidmm_device *dev = t_dev_std_ex(ranges, NULL, 0);
        struct t_swz z;
        t_swz_init(&z);
        struct vidmm_alloc_desc d = t_swz_desc(&z, T_SET(T_VIS) | T_SET(T_APE));
        d.supported_write_set = T_SET(T_APE); /* a write reference needs the aperture */
        vidmm_handle h = t_alloc(dev, &d);

        unsigned char *lin = malloc(z.linear_size), *til = malloc(z.tiled_size), *tmp = malloc(z.tiled_size);
        cr_assert(lin && til && tmp);
        t_bytes(lin, z.linear_size, 50 + ranges);
        t_swz(&z, lin, til);

        struct vidmm_residency w;
        t_signal(dev, t_submit1(dev, h, 0, &w)); /* read: the memory segment (lowest ID) */
        cr_assert_eq(w.segment_id, T_VIS, "precondition: a read reference places it in the memory segment");
        t_write(dev, h, 0, til, z.tiled_size); /* the GPU writes the tiled surface there */

        uint64_t f = t_submit1(dev, h, VIDMM_REF_WRITE, &w);
        cr_assert_eq(w.segment_id, T_APE, "precondition: a write reference moves it to the aperture");
        expect_bytes(w.cpu, til, z.tiled_size, "GPU view through the aperture after the move");
        t_signal(dev, f);

        t_evict(dev, h);
        struct vidmm_alloc_info in = t_query(dev, h);
        cr_assert_eq(in.where, VIDMM_WHERE_SYSMEM);
        cr_assert(in.evicted_swizzled, "evicted from the aperture, the copy is tiled: evicted_swizzled must be set");
        t_read(dev, h, 0, tmp, z.tiled_size);
        expect_bytes(tmp, til, z.tiled_size, "GPU raw bytes after the eviction");

        void *p = t_lock(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE);
        expect_bytes(p, lin, z.linear_size, "range lock (ACQUIRE_APERTURE) after aperture + eviction");
        t_unlock(dev, h);

        t_signal(dev, t_submit1(dev, h, 0, &w));
        expect_bytes(w.cpu, til, z.tiled_size, "GPU view after the range lock, paged in again");
        t_read(dev, h, 0, tmp, z.tiled_size);
        expect_bytes(tmp, til, z.tiled_size, "GPU raw bytes after the range lock, paged in again");

        free(lin);
        free(til);
        free(tmp);
        vidmm_device_destroy(dev);
    }
}

/* =============================================================================================
 * Item 6: no allocation ever sees another's bytes. With no swizzling ranges a range lock evicts
 * the surface unswizzled (spec 8.2 (1)); the next submission pages it into a memory segment with
 * the Swizzle transfer (8.2 "surface fault"). The tiled form's padding - bytes no pixel maps to,
 * and the bytes of the allocation after the tiled surface - must then be zero or the fill
 * pattern, never what another allocation left in that segment space.
 * =========================================================================================== */
static void d06_case(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surf, const char *name)
{
    vidmm_device *dev = t_dev_std_ex(0, NULL, 0);
    uint64_t tiled_size = 0, linear_size = 0;
    T_OK(vidmm_surface_tiled_size(layout, surf, &tiled_size));
    T_OK(vidmm_surface_linear_size(layout, surf, &linear_size));
    const size_t asize = (size_t)t_round(tiled_size);

    struct vidmm_alloc_desc d = t_adesc(tiled_size, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_SWIZZLED;
    d.layout = layout;
    d.surface = surf;
    vidmm_handle s = t_alloc(dev, &d);

    unsigned char *lin = malloc(linear_size), *inv = malloc(linear_size);
    unsigned char *til = calloc(1, asize), *til_inv = calloc(1, asize), *got = malloc(asize);
    cr_assert(lin && inv && til && til_inv && got);
    t_bytes(lin, linear_size, 60);
    for (uint64_t i = 0; i < linear_size; i++)
        inv[i] = (unsigned char)~lin[i];
    /* Pixel bytes are where the tiled forms of L and ~L differ; padding where they agree. */
    T_OK(vidmm_swizzle_surface(layout, surf, til, tiled_size, lin, linear_size));
    T_OK(vidmm_swizzle_surface(layout, surf, til_inv, tiled_size, inv, linear_size));
    size_t padding = asize - (size_t)tiled_size;
    for (uint64_t i = 0; i < tiled_size; i++)
        padding += til[i] == til_inv[i];
    cr_assert_gt(padding, 0, "%s: the surface must have padding for this test", name);

    t_resident(dev, s, NULL);
    void *p = t_lock(dev, s, VIDMM_LOCK_ACQUIRE_APERTURE); /* no range: unswizzling eviction */
    struct vidmm_alloc_info in = t_query(dev, s);
    cr_assert_neq(in.where, VIDMM_WHERE_SEGMENT, "%s: precondition: the range lock evicted the surface", name);
    memcpy(p, lin, linear_size);
    t_unlock(dev, s);

    /* Another allocation covers the whole (now empty) memory segment with a distinctive byte,
     * and goes away. */
    vidmm_handle other = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    t_resident(dev, other, NULL);
    unsigned char *stale = malloc(T_VIS_SIZE);
    cr_assert_not_null(stale);
    memset(stale, 0xDB, T_VIS_SIZE);
    t_write(dev, other, 0, stale, T_VIS_SIZE);
    T_OK(vidmm_alloc_destroy(dev, other));

    struct vidmm_residency w;
    t_signal(dev, t_submit1(dev, s, 0, &w)); /* paged in with the Swizzle transfer */
    cr_assert_eq(w.segment_id, T_VIS);
    t_read(dev, s, 0, got, asize);
    for (size_t i = 0; i < asize; i++) {
        bool pixel = i < tiled_size && til[i] != til_inv[i];
        unsigned char fill = (unsigned char)(T_FILL >> (8 * (i % 4)));
        if (pixel)
            cr_assert_eq(got[i], til[i], "%s: pixel byte %zu is 0x%02x, expected 0x%02x", name, i, got[i], til[i]);
        else
            cr_assert(got[i] == 0 || got[i] == fill,
                      "%s: padding byte %zu of the tiled page-in is 0x%02x - neither 0 nor the fill pattern's 0x%02x "
                      "(0xDB: another allocation's stale bytes)",
                      name, i, got[i], fill);
        cr_assert_eq(((unsigned char *)w.cpu)[i], got[i], "%s: GPU view and gpu_access differ at %zu", name, i);
    }
    free(stale);
    free(lin);
    free(inv);
    free(til);
    free(til_inv);
    free(got);
    vidmm_device_destroy(dev);
}

Test(contract12, d06_tiled_page_in_padding_is_zero_or_fill)
{
    /* Morton 50 x 50 x 4 B: 16 KiB tiled, 10000 bytes of pixels (padding inside the tiles). */
    struct vidmm_tile_layout morton = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_MORTON);
    struct vidmm_surface_desc s1 = { sizeof(s1), 50, 50, 1, 4, 1, 1, 1, 1 };
    d06_case(&morton, &s1, "Morton 50x50");
    /* Block-linear 100 x 20 x 4 B: 14 KiB tiled in a 16 KiB allocation (padding after it). */
    struct vidmm_tile_layout bl = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    struct vidmm_surface_desc s2 = { sizeof(s2), 100, 20, 1, 4, 1, 1, 1, 1 };
    d06_case(&bl, &s2, "block-linear 100x20");
}

/* =============================================================================================
 * Item 7: spec 15.18 - Discard|NoExistingReference "may reuse any instance including the
 * current one": the caller promises it has no queued reference left, not that the GPU is done.
 * An instance a submitted, unsignalled operation still references must never be returned.
 * =========================================================================================== */
Test(contract12, d07_discard_no_existing_reference_never_returns_busy_instance)
{
    deadman(30);
    vidmm_device *dev = t_dev_std();
    const size_t n = 64 * T_KiB;
    vidmm_handle a0 = t_alloc_simple(dev, n, T_SET(T_VIS) | T_SET(T_APE));
    unsigned char *c = malloc(n), *g0 = malloc(n), *g1 = malloc(n);
    cr_assert(c && g0 && g1);
    t_bytes(c, n, 70);
    t_write(dev, a0, 0, c, n);

    struct vidmm_residency w0, w1;
    uint64_t f0 = t_submit1(dev, a0, 0, &w0); /* a0 busy */
    memcpy(g0, w0.cpu, n);

    struct vidmm_lock_args a;
    T_OK(lock_rc(dev, a0, VIDMM_LOCK_DISCARD, &a));
    vidmm_handle a1 = a.allocation;
    cr_assert_neq(a1, a0, "precondition: a Discard of a busy allocation renames");
    memset(a.data, 0x11, n);
    t_unlock(dev, a1);

    /* a0 busy, a1 idle: Discard|NoExistingReference on the current instance. */
    struct wd wd;
    wd_start(&wd, dev, f0, 3000);
    int rc = lock_rc(dev, a1, VIDMM_LOCK_DISCARD | VIDMM_LOCK_NO_EXISTING_REFERENCE, &a);
    bool fired = wd_stop(&wd);
    cr_assert_not(fired, "Discard|NoExistingReference waited for the GPU");
    cr_assert_eq(rc, 0, "Discard|NoExistingReference returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_neq(a.allocation, a0, "Discard|NoExistingReference returned instance %u, which fence %llu still reads",
                  a0, (unsigned long long)f0);
    cr_assert_not(t_query(dev, a.allocation).busy, "the returned instance %u is busy", a.allocation);
    vidmm_handle r1 = a.allocation;
    memset(a.data, 0x22, n);
    expect_bytes(w0.cpu, g0, n, "what the GPU reads from instance a0 after the CPU wrote the returned instance");
    t_unlock(dev, r1);

    /* Now every instance so far is busy: the returned one must be a fresh instance. */
    uint64_t f1 = t_submit1(dev, r1, 0, &w1);
    memcpy(g1, w1.cpu, n);
    wd_start(&wd, dev, f1, 3000);
    rc = lock_rc(dev, r1, VIDMM_LOCK_DISCARD | VIDMM_LOCK_NO_EXISTING_REFERENCE, &a);
    fired = wd_stop(&wd);
    cr_assert_not(fired, "Discard|NoExistingReference waited for the GPU");
    cr_assert_eq(rc, 0, "Discard|NoExistingReference (all instances busy, no renaming cap) returned %d (%s)", rc,
                 vidmm_strerror(rc));
    cr_assert(a.allocation != a0 && a.allocation != r1,
              "Discard|NoExistingReference returned instance %u, which an unsignalled submission still reads",
              a.allocation);
    cr_assert_not(t_query(dev, a.allocation).busy, "the returned instance %u is busy", a.allocation);
    memset(a.data, 0x33, n);
    expect_bytes(w0.cpu, g0, n, "GPU view of a0 after the second NoExistingReference discard");
    expect_bytes(w1.cpu, g1, n, "GPU view of the second instance after the NoExistingReference discard");
    t_unlock(dev, a.allocation);
    t_signal(dev, f1);

    free(c);
    free(g0);
    free(g1);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 8: spec 15.4 / 10 - pinned (Overlay, Capture) allocations are never evicted or moved;
 * "lock or eviction that would require moving a pinned allocation fails with
 * CANT_EVICT_PINNED". With different read and write sets, a writing submission must not move
 * one: it is placed where both sets allow when such a segment exists (and then the write works
 * in place), else the write is refused with VIDMM_E_CANT_EVICT_PINNED, nothing changed.
 * =========================================================================================== */
Test(contract12, d08_pinned_with_different_read_write_sets_never_moves)
{
    const uint32_t pins[2] = { VIDMM_ALLOC_OVERLAY, VIDMM_ALLOC_CAPTURE };
    for (int k = 0; k < 2; k++) {
        vidmm_device *dev = t_dev_std();
        const size_t n = 64 * T_KiB;
        unsigned char *c = malloc(n);
        cr_assert_not_null(c);
        t_bytes(c, n, 80 + k);

        /* (a) The sets share T_LOC: the write works where the pin is. */
        struct vidmm_alloc_desc d = t_adesc(n, T_SET(T_VIS) | T_SET(T_LOC));
        d.supported_write_set = T_SET(T_LOC);
        d.flags |= pins[k];
        vidmm_handle h = t_alloc(dev, &d);
        struct vidmm_residency r0, r1;
        t_signal(dev, t_submit1(dev, h, 0, &r0)); /* first placement by a read */
        t_write(dev, h, 0, c, n);
        uint64_t fw = 0;
        int rc = submit_rc(dev, h, VIDMM_REF_WRITE, 0, &r1, &fw);
        struct vidmm_alloc_info in = t_query(dev, h);
        cr_assert(in.segment_id == r0.segment_id && in.offset == r0.offset,
                  "pinned 0x%x moved from segment %u offset 0x%llx to segment %u offset 0x%llx "
                  "(write submission rc %d)",
                  pins[k], r0.segment_id, (unsigned long long)r0.offset, in.segment_id,
                  (unsigned long long)in.offset, rc);
        cr_assert(rc == 0 || rc == VIDMM_E_CANT_EVICT_PINNED,
                  "write submission of a pinned allocation returned %d (%s)", rc, vidmm_strerror(rc));
        cr_assert_eq(rc, 0,
                     "pinned 0x%x whose sets share segment %u was first placed in segment %u, outside its "
                     "write set, so it can never be written (expected: placed where both sets allow)",
                     pins[k], T_LOC, r0.segment_id);
        cr_assert_eq(r1.segment_id, r0.segment_id);
        cr_assert_eq(r1.offset, r0.offset);
        expect_content(dev, h, c, n, "pinned allocation after the write submission");
        t_signal(dev, fw);

        /* (b) Disjoint sets: read in T_VIS only, write in T_LOC only. The write needs a move:
         * refused, nothing changed. */
        struct vidmm_alloc_desc e = t_adesc(n, T_SET(T_VIS));
        e.supported_write_set = T_SET(T_LOC);
        e.flags |= pins[k];
        vidmm_handle h2 = t_alloc(dev, &e);
        t_signal(dev, t_submit1(dev, h2, 0, &r0));
        cr_assert_eq(r0.segment_id, T_VIS);
        t_write(dev, h2, 0, c, n);
        struct t_snap s;
        t_snap1(&s, dev, h2);
        uint64_t fence = 0xABCDu;
        T_REFUSED(&s, submit_rc(dev, h2, VIDMM_REF_WRITE, 0, &r1, &fence), VIDMM_E_CANT_EVICT_PINNED);
        cr_assert_eq(fence, 0xABCDu, "a refused submission wrote *fence");
        in = t_query(dev, h2);
        cr_assert(in.segment_id == T_VIS && in.offset == r0.offset, "pinned allocation moved by a refused write");
        free(c);
        vidmm_device_destroy(dev);
    }
}

/* =============================================================================================
 * Item 9: DONOT_WAIT never waits for the GPU. Header: VIDMM_SUBMIT_DONOT_WAIT fails with
 * VIDMM_E_BUSY "rather than wait for the GPU: a busy allocation the placement needs to move";
 * vidmm_lock with DONOT_WAIT returns VIDMM_E_BUSY when "the lock would wait for the GPU - ...
 * an eviction ... of a busy allocation". IgnoreReadSync lets a lock skip waiting for GPU reads
 * (6.4), but an allocation in a segment that is not CPU-visible must first be evicted (15.14),
 * and that eviction must wait for every GPU access.
 * =========================================================================================== */
Test(contract12, d09_donot_wait_returns_busy_at_once)
{
    deadman(30);
    const size_t n = 64 * T_KiB;
    unsigned char *c = malloc(n);
    cr_assert_not_null(c);
    t_bytes(c, n, 90);

    /* Submit: read-referenced in T_VIS (outside its write set), now referenced for write. */
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(n, T_SET(T_VIS) | T_SET(T_LOC));
    d.supported_write_set = T_SET(T_LOC);
    vidmm_handle h = t_alloc(dev, &d);
    t_write(dev, h, 0, c, n);
    struct vidmm_residency w;
    uint64_t f = t_submit1(dev, h, 0, &w);
    cr_assert_eq(w.segment_id, T_VIS, "precondition: the read reference placed it in T_VIS");
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct wd wd;
    wd_start(&wd, dev, f, 3000);
    uint64_t fence = 0xABCDu;
    double t0 = now_s();
    int rc = submit_rc(dev, h, VIDMM_REF_WRITE, VIDMM_SUBMIT_DONOT_WAIT, NULL, &fence);
    double dt = now_s() - t0;
    bool fired = wd_stop(&wd);
    cr_assert_not(fired, "vidmm_submit(DONOT_WAIT) blocked %.2f s, until the watchdog signalled the fence (rc %d)", dt,
                  rc);
    cr_assert_eq(rc, VIDMM_E_BUSY, "vidmm_submit(DONOT_WAIT) of a busy allocation that must move returned %d (%s)", rc,
                 vidmm_strerror(rc));
    cr_assert_lt(dt, 1.0, "vidmm_submit(DONOT_WAIT) took %.2f s", dt);
    cr_assert_eq(fence, 0xABCDu, "a refused submission wrote *fence");
    t_unchanged(&s, "vidmm_submit(DONOT_WAIT) refused");
    t_signal(dev, f);
    /* Control: once idle the same submission moves it. */
    t_signal(dev, t_submit1(dev, h, VIDMM_REF_WRITE, &w));
    cr_assert_eq(w.segment_id, T_LOC);
    expect_content(dev, h, c, n, "content after the move");
    vidmm_device_destroy(dev);

    /* Lock: read-referenced in T_LOC (not CPU-visible), locked DONOT_WAIT|IGNORE_READ_SYNC. */
    dev = t_dev_std();
    vidmm_handle g = t_alloc_simple(dev, n, T_SET(T_LOC) | T_SET(T_APE));
    t_write(dev, g, 0, c, n);
    f = t_submit1(dev, g, 0, &w);
    cr_assert_eq(w.segment_id, T_LOC, "precondition: placed in the segment that is not CPU-visible");
    t_snap1(&s, dev, g);
    wd_start(&wd, dev, f, 3000);
    struct vidmm_lock_args a;
    t0 = now_s();
    rc = lock_rc(dev, g, VIDMM_LOCK_DONOT_WAIT | VIDMM_LOCK_IGNORE_READ_SYNC, &a);
    dt = now_s() - t0;
    fired = wd_stop(&wd);
    if (rc == 0)
        vidmm_unlock(dev, 1, &a.allocation);
    cr_assert_not(fired, "vidmm_lock(DONOT_WAIT|IGNORE_READ_SYNC) blocked %.2f s, until the watchdog signalled (rc %d)",
                  dt, rc);
    cr_assert_eq(rc, VIDMM_E_BUSY,
                 "vidmm_lock(DONOT_WAIT|IGNORE_READ_SYNC) of a read-busy allocation in a hidden segment "
                 "returned %d (%s)",
                 rc, vidmm_strerror(rc));
    cr_assert_lt(dt, 1.0, "vidmm_lock(DONOT_WAIT|IGNORE_READ_SYNC) took %.2f s", dt);
    t_unchanged(&s, "vidmm_lock(DONOT_WAIT|IGNORE_READ_SYNC) refused");
    t_signal(dev, f);
    void *p = t_lock(dev, g, VIDMM_LOCK_DONOT_WAIT | VIDMM_LOCK_IGNORE_READ_SYNC); /* control: idle now */
    expect_bytes(p, c, n, "lock after the GPU finished");
    t_unlock(dev, g);
    vidmm_device_destroy(dev);
    free(c);
}

/* =============================================================================================
 * Item 10: the device's wait_timeout_ns (header): a call without DONOT_WAIT that waits for a
 * fence nobody signals gives up with VIDMM_E_TIMEOUT after about that time; a lock or
 * make-resident that times out changed nothing, a submission issued no fence. 0 (the default)
 * waits as long as it takes, and so does an older descriptor that ends before the field.
 * VIDMM_E_TIMEOUT is a failure: NTSTATUS STATUS_IO_TIMEOUT (0xC00000B5), not STATUS_TIMEOUT
 * (0x102, a success code).
 * =========================================================================================== */
static vidmm_device *timeout_dev(uint64_t ns, size_t desc_size)
{
    static struct vidmm_segment_desc segs[3];
    std_segs(segs);
    struct vidmm_device_desc d = t_ddesc(segs, 3);
    d.wait_timeout_ns = ns;
    d.size = desc_size;
    if (desc_size < offsetof(struct vidmm_device_desc, segment_desc_size) + sizeof d.segment_desc_size) {
        /* A caller that old built its segment table in the first layout (device.h). */
        static uint64_t old[3 * VIDMM_SEGMENT_DESC_SIZE_0 / sizeof(uint64_t)];
        t_segs_pack_v0(old, segs, 3);
        d.segments = (const struct vidmm_segment_desc *)(const void *)old;
    }
    return t_dev(&d);
}

static void expect_timed_out(int rc, double dt, bool fired, const char *what)
{
    cr_assert_not(fired, "%s: waited until the watchdog signalled the fence (%.2f s, rc %d)", what, dt, rc);
    cr_assert_eq(rc, VIDMM_E_TIMEOUT, "%s returned %d (%s) after %.3f s, expected VIDMM_E_TIMEOUT", what, rc,
                 vidmm_strerror(rc), dt);
    cr_assert(dt >= 0.15 && dt < 2.5, "%s timed out after %.3f s; the device's timeout is 0.2 s", what, dt);
}

Test(contract12, d10_wait_timeout_gives_timeout_and_changes_nothing)
{
    deadman(40);
    /* The code and its Windows mapping. */
    uint32_t nt = vidmm_error_to_ntstatus(VIDMM_E_TIMEOUT);
    cr_assert_eq(nt >> 30, 3u, "VIDMM_E_TIMEOUT maps to NTSTATUS 0x%08x, not a failure status", nt);
    cr_assert_eq(nt, 0xC00000B5u, "VIDMM_E_TIMEOUT maps to NTSTATUS 0x%08x, expected STATUS_IO_TIMEOUT", nt);
    uint32_t hr = vidmm_error_to_hresult(VIDMM_E_TIMEOUT);
    cr_assert(hr & 0x80000000u, "VIDMM_E_TIMEOUT maps to HRESULT 0x%08x, a success code", hr);
    struct vidmm_device_desc init = VIDMM_DEVICE_DESC_INIT;
    cr_assert_eq(init.wait_timeout_ns, 0, "the default wait timeout is not 0 (wait forever)");

    const size_t n = 64 * T_KiB;
    unsigned char *c = malloc(n);
    cr_assert_not_null(c);
    t_bytes(c, n, 100);
    const uint64_t ns = 200ull * 1000 * 1000;

    /* (a) A lock of a busy allocation. */
    vidmm_device *dev = timeout_dev(ns, sizeof(struct vidmm_device_desc));
    vidmm_handle h = t_alloc_simple(dev, n, T_SET(T_VIS) | T_SET(T_APE));
    t_write(dev, h, 0, c, n);
    uint64_t f = t_submit1(dev, h, VIDMM_REF_WRITE, NULL);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct wd wd;
    wd_start(&wd, dev, f, 5000);
    struct vidmm_lock_args a;
    double t0 = now_s();
    int rc = lock_rc(dev, h, 0, &a);
    double dt = now_s() - t0;
    bool fired = wd_stop(&wd);
    if (rc == 0)
        vidmm_unlock(dev, 1, &a.allocation);
    expect_timed_out(rc, dt, fired, "vidmm_lock of a busy allocation");
    t_unchanged(&s, "vidmm_lock timed out");
    t_signal(dev, f);
    expect_bytes(t_lock(dev, h, 0), c, n, "lock after the timeout, once idle");
    t_unlock(dev, h);
    vidmm_device_destroy(dev);

    /* (b) A submission that must move a busy allocation (as in d09, without DONOT_WAIT). */
    dev = timeout_dev(ns, sizeof(struct vidmm_device_desc));
    struct vidmm_alloc_desc d = t_adesc(n, T_SET(T_VIS) | T_SET(T_LOC));
    d.supported_write_set = T_SET(T_LOC);
    h = t_alloc(dev, &d);
    t_write(dev, h, 0, c, n);
    struct vidmm_residency w;
    f = t_submit1(dev, h, 0, &w);
    cr_assert_eq(w.segment_id, T_VIS, "precondition");
    uint64_t subs = t_stats(dev).submissions;
    wd_start(&wd, dev, f, 5000);
    uint64_t fence = 0xABCDu;
    t0 = now_s();
    rc = submit_rc(dev, h, VIDMM_REF_WRITE, 0, NULL, &fence);
    dt = now_s() - t0;
    fired = wd_stop(&wd);
    expect_timed_out(rc, dt, fired, "vidmm_submit that must move a busy allocation");
    cr_assert_eq(fence, 0xABCDu, "a timed-out submission wrote *fence");
    cr_assert_eq(t_stats(dev).submissions, subs, "a timed-out submission was counted as submitted");
    t_signal(dev, f);
    t_signal(dev, t_submit1(dev, h, VIDMM_REF_WRITE, &w));
    cr_assert_eq(w.segment_id, T_LOC);
    expect_content(dev, h, c, n, "content after the timed-out submission, moved later");
    vidmm_device_destroy(dev);

    /* (c) A make-resident that must evict a busy allocation to make room. The header: it
     * "changed nothing" - except that paging it queued which waits for the GPU (here the
     * eviction of the busy allocation) stays queued and completes once the GPU signals. So the
     * allocation asked for is untouched, and the busy one loses no byte either way. */
    dev = timeout_dev(ns, sizeof(struct vidmm_device_desc));
    vidmm_handle big = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    vidmm_handle small = t_alloc_simple(dev, n, T_SET(T_VIS));
    unsigned char *cb = malloc(T_VIS_SIZE);
    cr_assert_not_null(cb);
    t_bytes(cb, T_VIS_SIZE, 101);
    t_write(dev, big, 0, cb, T_VIS_SIZE);
    t_write(dev, small, 0, c, n);
    f = t_submit1(dev, big, 0, NULL); /* fills T_VIS, busy */
    const struct vidmm_alloc_info small0 = t_query(dev, small);
    subs = t_stats(dev).submissions;
    wd_start(&wd, dev, f, 5000);
    t0 = now_s();
    rc = vidmm_make_resident(dev, &small, 1, NULL);
    dt = now_s() - t0;
    fired = wd_stop(&wd);
    expect_timed_out(rc, dt, fired, "vidmm_make_resident that must evict a busy allocation");
    struct vidmm_alloc_info small1 = t_query(dev, small);
    if (small1.where != small0.where)
        cr_log_info("d10 (c): after the timed-out make-resident the allocation asked for went from where %u to %u "
                    "(its paging left queued)", small0.where, small1.where);
    cr_assert_eq(t_stats(dev).submissions, subs);
    t_signal(dev, f);
    expect_content(dev, big, cb, T_VIS_SIZE, "the busy allocation after the timed-out make-resident, GPU done");
    t_resident(dev, small, NULL);
    expect_content(dev, small, c, n, "content after make-resident, once idle");
    free(cb);
    vidmm_device_destroy(dev);

    /* (d) 0 waits as long as it takes; so does a descriptor that ends before the field, even
     * with bytes after its end. */
    for (int old = 0; old < 2; old++) {
        size_t sz = old ? offsetof(struct vidmm_device_desc, wait_timeout_ns) : sizeof(struct vidmm_device_desc);
        dev = timeout_dev(old ? 1 : 0, sz);
        h = t_alloc_simple(dev, n, T_SET(T_VIS) | T_SET(T_APE));
        f = t_submit1(dev, h, VIDMM_REF_WRITE, NULL);
        struct t_later later;
        t_signal_later(&later, dev, f, 400, NULL);
        t0 = now_s();
        rc = lock_rc(dev, h, 0, &a);
        dt = now_s() - t0;
        t_later_join(&later);
        cr_assert_eq(rc, 0, "%s: a lock waiting for a fence signalled after 0.4 s returned %d (%s) after %.3f s",
                     old ? "descriptor without wait_timeout_ns" : "wait_timeout_ns 0", rc, vidmm_strerror(rc), dt);
        cr_assert_geq(dt, 0.3, "the lock returned after %.3f s, before the fence was signalled", dt);
        t_unlock(dev, a.allocation);
        vidmm_device_destroy(dev);
    }
    free(c);
}

/* =============================================================================================
 * Item 11: spec 15.24 - "call flush_cpu_cache(range) before any GPU read of a Cached allocation
 * that the CPU wrote while it was placed in a non-coherent segment" (4.1: "When used in a
 * non-coherent segment (memory segment, AGP), VidMm flushes CPU caches"). Where the CPU wrote
 * (through a lock, into the segment or the backing store), the flushed range must cover the
 * written bytes where the GPU reads them, before vidmm_submit() returns; a CACHE_COHERENT
 * aperture needs no flush.
 * =========================================================================================== */
#define FL_MAX 512
struct flushlog {
    pthread_mutex_t mu;
    uint32_t n, n_inval;
    struct {
        uintptr_t p;
        size_t n;
    } r[FL_MAX];
};

static void fl_flush(void *arg, void *p, size_t n)
{
    struct flushlog *l = arg;
    pthread_mutex_lock(&l->mu);
    if (l->n < FL_MAX) {
        l->r[l->n].p = (uintptr_t)p;
        l->r[l->n].n = n;
    }
    l->n++;
    pthread_mutex_unlock(&l->mu);
}

static void fl_inval(void *arg, void *p, size_t n)
{
    struct flushlog *l = arg;
    (void)p;
    (void)n;
    pthread_mutex_lock(&l->mu);
    l->n_inval++;
    pthread_mutex_unlock(&l->mu);
}

static void fl_reset(struct flushlog *l)
{
    pthread_mutex_lock(&l->mu);
    l->n = 0;
    pthread_mutex_unlock(&l->mu);
}

/* Whether the recorded flushes together cover [p, p + n). */
static bool fl_covers(struct flushlog *l, const void *p, size_t n)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + n;
    pthread_mutex_lock(&l->mu);
    uint32_t cnt = l->n < FL_MAX ? l->n : FL_MAX;
    bool progress = true;
    while (lo < hi && progress) {
        progress = false;
        for (uint32_t i = 0; i < cnt; i++)
            if (l->r[i].p <= lo && lo < l->r[i].p + l->r[i].n) {
                lo = l->r[i].p + l->r[i].n;
                progress = true;
            }
    }
    pthread_mutex_unlock(&l->mu);
    return lo >= hi;
}

static uint32_t fl_count(struct flushlog *l)
{
    pthread_mutex_lock(&l->mu);
    uint32_t n = l->n;
    pthread_mutex_unlock(&l->mu);
    return n;
}

enum d11_where { D11_IN_SEGMENT, D11_FROM_BACKING_STORE };

/* One case: a Cached allocation of set 'set' on 'dev', written by the CPU at [off, off + len)
 * through a lock taken while it is resident (D11_IN_SEGMENT) or before it is placed, then read by
 * a submission. 'coherent': the segment it lands in is a CACHE_COHERENT aperture. */
static void d11_case(vidmm_device *dev, struct flushlog *fl, uint32_t set, uint32_t expect_seg, enum d11_where where,
                     bool coherent, const char *name)
{
    const size_t n = 64 * T_KiB, off = 1000, len = 3000;
    struct vidmm_alloc_desc d = t_adesc(n, set);
    d.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle h = t_alloc(dev, &d);
    if (where == D11_IN_SEGMENT)
        t_resident(dev, h, NULL);
    unsigned char data[3000];
    t_bytes(data, len, 110);

    fl_reset(fl);
    unsigned char *p = t_lock(dev, h, 0);
    memcpy(p + off, data, len);
    t_unlock(dev, h);
    struct vidmm_residency w;
    uint64_t f = t_submit1(dev, h, 0, &w);
    cr_assert_eq(w.segment_id, expect_seg, "%s: precondition: placed in segment %u", name, expect_seg);
    expect_bytes((unsigned char *)w.cpu + off, data, len, name);
    if (coherent) {
        cr_assert_eq(fl_count(fl), 0, "%s: %u flushes for a Cached allocation read from a CACHE_COHERENT aperture",
                     name, fl_count(fl));
    } else {
        /* In an aperture the GPU reads the backing-store pages the lock returned, mapped twice:
         * a flush through either mapping covers the same cache lines. */
        bool ok = fl_covers(fl, (unsigned char *)w.cpu + off, len) ||
                  (w.segment_id != T_VIS && fl_covers(fl, p + off, len));
        cr_assert(ok,
                  "%s: bytes [%zu, %zu) the CPU wrote were not flushed where the GPU reads them (%u flushes recorded, "
                  "GPU view %p)",
                  name, off, off + len, fl_count(fl), w.cpu);
    }
    t_signal(dev, f);
    T_OK(vidmm_alloc_destroy(dev, h));
}

Test(contract12, d11_cached_cpu_writes_flushed_before_gpu_reads)
{
    struct flushlog fl;
    memset(&fl, 0, sizeof(fl));
    pthread_mutex_init(&fl.mu, NULL);
    struct vidmm_driver drv;
    memset(&drv, 0, sizeof(drv));
    drv.flush_cpu_cache = fl_flush;
    drv.invalidate_cpu_cache = fl_inval;
    drv.arg = &fl;

    /* T_VIS (memory), T_APE (aperture, not coherent), 4: aperture CACHE_COHERENT. */
    struct vidmm_segment_desc segs[4];
    std_segs(segs);
    segs[3] = t_aper_seg(0x80000000ull, 2 * T_MiB, VIDMM_SEGMENT_CACHE_COHERENT);
    struct vidmm_device_desc dd = t_ddesc(segs, 4);
    dd.driver = &drv;
    vidmm_device *dev = t_dev(&dd);
    d11_case(dev, &fl, T_SET(T_VIS), T_VIS, D11_IN_SEGMENT, false, "memory segment, written in place");
    d11_case(dev, &fl, T_SET(T_VIS), T_VIS, D11_FROM_BACKING_STORE, false, "memory segment, written in backing store");
    d11_case(dev, &fl, T_SET(T_APE), T_APE, D11_FROM_BACKING_STORE, false, "aperture (not coherent)");
    d11_case(dev, &fl, T_SET(T_APE), T_APE, D11_IN_SEGMENT, false, "aperture (not coherent), locked while mapped");
    d11_case(dev, &fl, T_SET(4), 4, D11_FROM_BACKING_STORE, true, "CACHE_COHERENT aperture");
    d11_case(dev, &fl, T_SET(4), 4, D11_IN_SEGMENT, true, "CACHE_COHERENT aperture, locked while mapped");
    vidmm_device_destroy(dev);

    /* An AGP segment (spec 2.3: alone of its kind) is not coherent either. */
    struct vidmm_segment_desc agp[2] = { t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE),
                                         t_mem_seg(T_APE_BASE, T_APE_SIZE, VIDMM_SEGMENT_AGP) };
    struct vidmm_device_desc da = t_ddesc(agp, 2);
    da.driver = &drv;
    dev = t_dev(&da);
    d11_case(dev, &fl, T_SET(2), 2, D11_FROM_BACKING_STORE, false, "AGP segment");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 12: spec 4.1 / 10 / 15.25 - SynchronousPaging: VidMm "waits until the allocation is
 * idle before submitting a paging buffer referencing it, and waits for that paging op to
 * complete before letting the driver submit a non-paging DMA buffer". The paging operation here
 * is the copy-back of a PermanentSysMem|SynchronousPaging allocation unlocked while the GPU
 * reads it (it waits for idleness on the paging thread); a later submission of another,
 * resident allocation must not return before that operation has completed.
 * =========================================================================================== */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vidmm_handle h;
    bool armed, entered, released, done;
    bool entered_after_signal;
    atomic_bool signalled;
    uint32_t transfers;
};

static void gate_do(struct vidmm_paging_op *op)
{
    if ((op->type == VIDMM_PAGING_TRANSFER || op->type == VIDMM_PAGING_SPECIAL_LOCK_TRANSFER) && op->dst_ptr &&
        op->src_ptr && op->dst_ptr != op->src_ptr)
        memcpy(op->dst_ptr, op->src_ptr, op->size);
    if (op->type == VIDMM_PAGING_FILL && op->dst_ptr) {
        unsigned char *b = op->dst_ptr;
        for (uint64_t i = 0; i < op->size; i++)
            b[i] = (unsigned char)(op->fill_pattern >> (8 * (i % 4)));
    }
}

static uint32_t gate_paging(void *arg, struct vidmm_paging_op *op)
{
    struct gate *g = arg;
    pthread_mutex_lock(&g->mu);
    bool hold = g->armed && op->type == VIDMM_PAGING_TRANSFER && op->allocation == g->h;
    if (hold) {
        g->armed = false;
        g->entered = true;
        g->entered_after_signal = atomic_load(&g->signalled);
        pthread_cond_broadcast(&g->cv);
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_sec += 5;
        while (!g->released)
            if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) == ETIMEDOUT)
                break;
    }
    pthread_mutex_unlock(&g->mu);
    gate_do(op);
    if (hold) {
        pthread_mutex_lock(&g->mu);
        g->done = true;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
    }
    return VIDMM_STATUS_SUCCESS;
}

struct d12_helper {
    pthread_t th;
    struct gate *g;
    vidmm_device *dev;
    uint64_t fence;
    int rc;
};

/* Signals the fence after 200 ms, waits for the held transfer to start, holds it 300 ms more. */
static void *d12_helper_main(void *arg)
{
    struct d12_helper *hp = arg;
    struct gate *g = hp->g;
    sleep_ms(200);
    atomic_store(&g->signalled, true);
    hp->rc = vidmm_fence_signal(hp->dev, hp->fence);
    pthread_mutex_lock(&g->mu);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += 5;
    while (!g->entered)
        if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&g->mu);
    sleep_ms(300);
    pthread_mutex_lock(&g->mu);
    g->released = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

Test(contract12, d12_synchronous_paging_holds_later_submissions)
{
    deadman(40);
    struct gate g;
    memset(&g, 0, sizeof(g));
    pthread_mutex_init(&g.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g.cv, &ca);
    atomic_init(&g.signalled, false);
    struct vidmm_driver drv;
    memset(&drv, 0, sizeof(drv));
    drv.paging = gate_paging;
    drv.arg = &g;

    struct vidmm_segment_desc segs[3];
    std_segs(segs);
    struct vidmm_device_desc dd = t_ddesc(segs, 3);
    dd.paging_threads = 1;
    dd.driver = &drv;
    vidmm_device *dev = t_dev(&dd);

    const size_t n = 64 * T_KiB;
    struct vidmm_alloc_desc d = t_adesc(n, T_SET(T_VIS) | T_SET(T_APE));
    d.flags |= VIDMM_ALLOC_SYNCHRONOUS_PAGING | VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle s = t_alloc(dev, &d);
    vidmm_handle b = t_alloc_simple(dev, n, T_SET(T_VIS));
    struct vidmm_residency ws;
    t_resident(dev, s, &ws);
    cr_assert_eq(ws.segment_id, T_VIS, "precondition: the PermanentSysMem allocation is in a memory segment");
    t_resident(dev, b, NULL);

    uint64_t f = t_submit1(dev, s, 0, NULL); /* the GPU reads s */
    unsigned char data[256];
    t_bytes(data, sizeof(data), 120);
    pthread_mutex_lock(&g.mu);
    g.h = s;
    g.armed = true;
    pthread_mutex_unlock(&g.mu);
    /* A no-overwrite lock of the busy allocation: the copy-back its unlock causes waits for
     * idleness on the paging thread (15.25), the unlock does not (header). */
    unsigned char *p = t_lock(dev, s, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT);
    memcpy(p, data, sizeof(data));
    double t0 = now_s();
    t_unlock(dev, s);
    cr_assert_lt(now_s() - t0, 1.0, "the unlock of a busy allocation waited for the GPU");

    struct d12_helper hp = { .g = &g, .dev = dev, .fence = f, .rc = -100 };
    cr_assert_eq(pthread_create(&hp.th, NULL, d12_helper_main, &hp), 0);
    struct vidmm_residency wb;
    uint64_t fb = 0;
    int rc = submit_rc(dev, b, 0, 0, &wb, &fb); /* a non-paging submission of another allocation */
    pthread_mutex_lock(&g.mu);
    bool done_at_return = g.done, entered_at_return = g.entered;
    pthread_mutex_unlock(&g.mu);
    pthread_join(hp.th, NULL);
    pthread_mutex_lock(&g.mu);
    bool after_signal = g.entered_after_signal;
    pthread_mutex_unlock(&g.mu);
    cr_assert_eq(hp.rc, 0);
    cr_assert_eq(rc, 0, "vidmm_submit(b) returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert(done_at_return,
              "vidmm_submit of another allocation returned before the SynchronousPaging allocation's paging operation "
              "had completed (transfer %s)",
              entered_at_return ? "still held in the driver" : "not yet started");
    cr_assert(after_signal, "the SynchronousPaging transfer started before its allocation was idle");
    t_signal(dev, fb);
    expect_bytes(ws.cpu, data, sizeof(data), "the copy-back reached the segment");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 13: spec 8.3 - DxgkDdiAcquireSwizzlingRange is "called only when the lock has
 * AcquireAperture and the allocation is in a CPU-accessible memory segment" (or with
 * UseAlternateVA). Locks of swizzled allocations in a segment that is not CPU-visible, or in an
 * aperture, must never program a range there.
 * =========================================================================================== */
Test(contract12, d13_no_swizzling_range_outside_cpu_visible_segments)
{
    struct t_rec r;
    t_rec_init(&r);
    struct vidmm_driver drv = t_rec_driver(&r, false, true, false);
    vidmm_device *dev = t_dev_std_ex(2, &drv, 0);
    struct t_swz z;
    t_swz_init(&z);
    unsigned char *lin = malloc(z.linear_size), *til = malloc(z.tiled_size);
    cr_assert(lin && til);
    t_bytes(lin, z.linear_size, 130);
    t_swz(&z, lin, til);

    /* (1) Only in T_LOC (not CPU-visible). */
    struct vidmm_alloc_desc d = t_swz_desc(&z, T_SET(T_LOC));
    vidmm_handle s1 = t_alloc(dev, &d);
    struct vidmm_residency w;
    t_signal(dev, t_submit1(dev, s1, 0, &w));
    cr_assert_eq(w.segment_id, T_LOC);
    t_write(dev, s1, 0, til, z.tiled_size);
    void *p = t_lock(dev, s1, VIDMM_LOCK_ACQUIRE_APERTURE);
    expect_bytes(p, lin, z.linear_size, "linear view of the surface locked from T_LOC");
    t_unlock(dev, s1);

    /* (2) T_LOC preferred, T_VIS allowed: placed in T_LOC, locked there. */
    d = t_swz_desc(&z, T_SET(T_VIS) | T_SET(T_LOC));
    d.preferred_segment = T_PREF(0, T_LOC);
    vidmm_handle s2 = t_alloc(dev, &d);
    t_signal(dev, t_submit1(dev, s2, 0, &w));
    cr_assert_eq(w.segment_id, T_LOC);
    t_write(dev, s2, 0, til, z.tiled_size);
    p = t_lock(dev, s2, VIDMM_LOCK_ACQUIRE_APERTURE);
    expect_bytes(p, lin, z.linear_size, "linear view of the surface locked from T_LOC (T_VIS allowed)");
    t_unlock(dev, s2);

    /* (3) In the aperture (its write set has only the aperture). */
    d = t_swz_desc(&z, T_SET(T_VIS) | T_SET(T_APE));
    d.supported_write_set = T_SET(T_APE);
    vidmm_handle s3 = t_alloc(dev, &d);
    t_signal(dev, t_submit1(dev, s3, VIDMM_REF_WRITE, &w));
    cr_assert_eq(w.segment_id, T_APE);
    t_write(dev, s3, 0, til, z.tiled_size);
    p = t_lock(dev, s3, VIDMM_LOCK_ACQUIRE_APERTURE);
    expect_bytes(p, lin, z.linear_size, "linear view of the surface locked from the aperture");
    t_unlock(dev, s3);

    /* (4) Positive control: in T_VIS a range is acquired, with T_VIS as its segment. */
    d = t_swz_desc(&z, T_SET(T_VIS));
    vidmm_handle s4 = t_alloc(dev, &d);
    t_signal(dev, t_submit1(dev, s4, 0, &w));
    t_write(dev, s4, 0, til, z.tiled_size);
    pthread_mutex_lock(&r.mu);
    uint32_t before = r.n_acq;
    pthread_mutex_unlock(&r.mu);
    p = t_lock(dev, s4, VIDMM_LOCK_ACQUIRE_APERTURE);
    expect_bytes(p, lin, z.linear_size, "linear view of the surface in T_VIS");
    t_unlock(dev, s4);

    pthread_mutex_lock(&r.mu);
    uint32_t nacq = r.n_acq;
    struct vidmm_swizzling_range_args acq[64];
    memcpy(acq, r.acq, sizeof(acq));
    pthread_mutex_unlock(&r.mu);
    cr_assert_gt(nacq, before, "control: no swizzling range acquired for a surface in the CPU-visible segment");
    for (uint32_t i = 0; i < nacq && i < 64; i++) {
        cr_assert_eq(acq[i].segment_id, T_VIS,
                     "acquire_swizzling_range call %u: allocation %u in segment %u, which is not CPU-visible", i,
                     acq[i].allocation, acq[i].segment_id);
        cr_assert_neq(acq[i].allocation, s1, "a range was acquired for an allocation that can only be in T_LOC");
    }
    free(lin);
    free(til);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 14: the lock rules in the spec's order. 6.3 "Neutralizing": IgnoreSync and DonotWait
 * have no effect with Discard - so the IgnoreSync rules of 6.3 rule 4 do not apply to a
 * Discard lock - while "Discard is ignored for pinned, primary or shared allocations" (and
 * then they do). Rule 4's "adapter has no cache coherency": coherency comes from the segments
 * (2.3 CacheCoherent aperture). 4.1 HistoryBuffer: "if cache-coherent aperture segments are
 * supported must also set Cached". Existing*SysMem whose sets cannot hold it is refused at
 * creation (README: VIDMM_E_UNSUPPORTED), not accepted and then never placeable.
 * =========================================================================================== */
static void lock_refused(vidmm_device *dev, vidmm_handle h, uint32_t flags, int err, const char *why)
{
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_lock_args a = t_largs(h, flags);
    int rc = vidmm_lock(dev, &a);
    if (rc == 0)
        vidmm_unlock(dev, 1, &a.allocation);
    cr_assert_eq(rc, err, "%s: vidmm_lock(flags 0x%x) returned %d (%s), expected %d (%s)", why, flags, rc,
                 vidmm_strerror(rc), err, vidmm_strerror(err));
    cr_assert_eq(a.allocation, h, "%s: refused lock changed args.allocation", why);
    t_unchanged(&s, why);
}

static void lock_accepted(vidmm_device *dev, vidmm_handle h, uint32_t flags, const char *why)
{
    struct vidmm_lock_args a = t_largs(h, flags);
    int rc = vidmm_lock(dev, &a);
    cr_assert_eq(rc, 0, "%s: vidmm_lock(flags 0x%x) returned %d (%s), expected success", why, flags, rc,
                 vidmm_strerror(rc));
    cr_assert_not_null(a.data, "%s: no pointer", why);
    t_unlock(dev, a.allocation);
}

static vidmm_handle mk14(vidmm_device *dev, uint32_t set, uint32_t flags, uint32_t kind)
{
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, set);
    d.flags |= flags;
    d.kind = kind;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    return h;
}

Test(contract12, d14_lock_rule_order_and_segment_coherency)
{
    const uint32_t DIS = VIDMM_LOCK_DISCARD | VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT;
    const uint32_t IS = VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT;
    const uint32_t VA = T_SET(T_VIS) | T_SET(T_APE);

    /* A device without any coherency (standard segments, no device flag). */
    vidmm_device *dev = t_dev_std_ex(2, NULL, 0);
    vidmm_handle cached = mk14(dev, VA, VIDMM_ALLOC_CACHED, 0);
    lock_refused(dev, cached, IS, VIDMM_E_INVALID_ARG, "IgnoreSync on Cached, no coherency (control)");
    lock_accepted(dev, cached, DIS, "Discard|IgnoreSync|DonotWait on Cached: Discard neutralises IgnoreSync");
    vidmm_handle noap = mk14(dev, T_SET(T_VIS), 0, 0);
    lock_refused(dev, noap, IS, VIDMM_E_INVALID_ARG, "IgnoreSync without an aperture in the set (control)");
    lock_accepted(dev, noap, DIS, "Discard|IgnoreSync|DonotWait without an aperture in the set");
    struct t_swz z;
    t_swz_init(&z);
    struct vidmm_alloc_desc zd = t_swz_desc(&z, VA);
    vidmm_handle swz = t_alloc(dev, &zd);
    t_resident(dev, swz, NULL);
    lock_refused(dev, swz, IS, VIDMM_E_INVALID_ARG, "IgnoreSync on a swizzled allocation (control)");
    lock_accepted(dev, swz, DIS, "Discard|IgnoreSync|DonotWait on a swizzled allocation");
    /* Discard is ignored for shared, pinned and primary allocations: the IgnoreSync rules apply. */
    vidmm_handle shared = mk14(dev, VA, VIDMM_ALLOC_CACHED, VIDMM_ALLOC_KIND_SHARED);
    lock_refused(dev, shared, DIS, VIDMM_E_INVALID_ARG, "Discard|IgnoreSync on a shared Cached allocation");
    vidmm_handle pinned = mk14(dev, VA, VIDMM_ALLOC_CACHED | VIDMM_ALLOC_OVERLAY, 0);
    lock_refused(dev, pinned, DIS, VIDMM_E_INVALID_ARG, "Discard|IgnoreSync on a pinned Cached allocation");
    vidmm_handle primary = mk14(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_KIND_PRIMARY);
    lock_refused(dev, primary, DIS, VIDMM_E_INVALID_ARG, "Discard|IgnoreSync on a primary with no aperture in its set");

    /* HistoryBuffer without Cached is fine when no aperture is cache-coherent. */
    struct vidmm_alloc_desc hb = t_adesc(64 * T_KiB, T_SET(T_VIS));
    hb.flags = VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_HISTORY_BUFFER;
    T_OK(vidmm_alloc_destroy(dev, t_alloc(dev, &hb)));

    /* Existing*SysMem with a set holding no memory segment: refused at creation. */
    struct guarded g;
    guarded_alloc(&g, 4);
    const uint32_t ex[2] = { VIDMM_ALLOC_EXISTING_SYSMEM, VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM };
    for (int k = 0; k < 2; k++) {
        struct vidmm_alloc_desc ed = t_adesc(4 * T_PG, T_SET(T_APE));
        ed.flags |= ex[k];
        ed.existing_memory = g.buf;
        const uint32_t rsets[3] = { T_SET(T_APE), VA, T_SET(T_APE) };
        const uint32_t wsets[3] = { T_SET(T_APE), T_SET(T_APE), VA };
        for (int i = 0; i < 3; i++) {
            ed.supported_read_set = rsets[i];
            ed.supported_write_set = wsets[i];
            struct t_snap s;
            t_snap(&s, dev, NULL, 0);
            vidmm_handle out = T_OUT_SENTINEL;
            int rc = vidmm_alloc_create(dev, &ed, &out);
            cr_assert_eq(rc, VIDMM_E_UNSUPPORTED,
                         "Existing (0x%x) with read set 0x%x, write set 0x%x (no memory segment in one) "
                         "returned %d (%s)",
                         ex[k], rsets[i], wsets[i], rc, vidmm_strerror(rc));
            cr_assert_eq(out, T_OUT_SENTINEL);
            t_unchanged(&s, "Existing*SysMem refused");
        }
        ed.supported_read_set = ed.supported_write_set = VA; /* control */
        vidmm_handle ok = t_alloc(dev, &ed);
        t_signal(dev, t_submit1(dev, ok, VIDMM_REF_WRITE, NULL));
        T_OK(vidmm_alloc_destroy(dev, ok));
    }
    guarded_free(&g);
    vidmm_device_destroy(dev);

    /* A device with a CACHE_COHERENT aperture (segment 4), no device coherency flag. */
    struct vidmm_segment_desc segs[4];
    std_segs(segs);
    segs[3] = t_aper_seg(0x80000000ull, 2 * T_MiB, VIDMM_SEGMENT_CACHE_COHERENT);
    struct vidmm_device_desc dd = t_ddesc(segs, 4);
    dev = t_dev(&dd);
    vidmm_handle coh = mk14(dev, T_SET(T_VIS) | T_SET(4), VIDMM_ALLOC_CACHED, 0);
    lock_accepted(dev, coh, IS, "IgnoreSync on Cached whose set has a CACHE_COHERENT aperture");
    lock_accepted(dev, coh, VIDMM_LOCK_IGNORE_READ_SYNC | VIDMM_LOCK_DONOT_WAIT,
                  "IgnoreReadSync on Cached whose set has a CACHE_COHERENT aperture");
    vidmm_handle noncoh = mk14(dev, VA, VIDMM_ALLOC_CACHED, 0);
    lock_refused(dev, noncoh, IS, VIDMM_E_INVALID_ARG, "IgnoreSync on Cached whose set's aperture is not coherent");
    hb = t_adesc(64 * T_KiB, T_SET(T_VIS));
    hb.flags = VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_HISTORY_BUFFER;
    t_alloc_refused(dev, &hb, "HistoryBuffer without Cached on a device with a cache-coherent aperture");
    hb.flags |= VIDMM_ALLOC_CACHED;
    T_OK(vidmm_alloc_destroy(dev, t_alloc(dev, &hb)));
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 15: spec 15.28 - the paging log exposes the emitted records; spec 4.1 / 15.14 - "on
 * unlock of a resident PermanentSysMem allocation emit a Transfer" backing store -> segment.
 * With a paging thread, that TRANSFER must be in the log (and done) when vidmm_unlock returns.
 * =========================================================================================== */
Test(contract12, d15_unlock_copy_back_in_paging_log_on_return)
{
    deadman(30);
    struct vidmm_segment_desc segs[3];
    std_segs(segs);
    struct vidmm_device_desc dd = t_ddesc(segs, 3);
    dd.paging_threads = 1;
    vidmm_device *dev = t_dev(&dd);
    const size_t n = 256 * T_KiB;
    struct vidmm_alloc_desc d = t_adesc(n, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_residency w;
    t_resident(dev, h, &w);
    cr_assert_eq(w.segment_id, T_VIS);
    unsigned char *c = malloc(n), *got = malloc(n);
    cr_assert(c && got);
    static struct t_log_buf lb;
    for (int it = 0; it < 25; it++) {
        t_bytes(c, n, 150 + (uint32_t)it);
        t_log_clear(dev);
        unsigned char *p = t_lock(dev, h, 0);
        memcpy(p, c, n);
        t_unlock(dev, h);
        t_log_take(dev, &lb);
        ptrdiff_t i = t_log_find(&lb, VIDMM_PAGING_TRANSFER, h, 0);
        if (i < 0)
            t_log_dump(&lb, "paging log right after vidmm_unlock");
        cr_assert_geq(i, 0, "iteration %d: the copy-back TRANSFER was not in the paging log when vidmm_unlock returned",
                      it);
        cr_assert_eq(lb.op[i].src.segment_id, 0, "the copy-back's source is the backing store");
        cr_assert_eq(lb.op[i].dst.segment_id, T_VIS, "the copy-back's destination is the segment");
        t_read(dev, h, 0, got, n);
        expect_bytes(got, c, n, "segment copy right after vidmm_unlock");
    }
    free(c);
    free(got);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 16: spec 15.3 / 15.4 - a submission fails with NO_VIDEO_MEMORY only if "nothing can make
 * room". When the list's own placements fragment a segment (here an aligned top-down
 * allocation placed first leaves two holes too small for a later one) but the list fits placed
 * differently, its idle allocations are evicted and placed again (header) and it succeeds.
 * =========================================================================================== */
Test(contract12, d16_submission_replaces_its_own_fragmenting_placements)
{
    vidmm_device *dev = t_dev_one(T_MiB);
    const uint64_t K = T_KiB;
    /* b: 256 KiB, aligned to 512 KiB, from the end -> [512K, 768K) when placed first;
     * c: 256 KiB bottom-up -> [0, 256K); a: 512 KiB, then, has no hole. 1 MiB in total. */
    struct vidmm_alloc_desc db = t_adesc(256 * K, T_SET(1));
    db.alignment = 512 * K;
    db.flags |= VIDMM_ALLOC_FROM_END_OF_SEGMENT;
    vidmm_handle b = t_alloc(dev, &db);
    vidmm_handle c = t_alloc_simple(dev, 256 * K, T_SET(1));
    vidmm_handle a = t_alloc_simple(dev, 512 * K, T_SET(1));
    const vidmm_handle hs[3] = { b, c, a };
    const size_t sz[3] = { 256 * K, 256 * K, 512 * K };
    unsigned char *content[3];
    for (int i = 0; i < 3; i++) {
        content[i] = malloc(sz[i]);
        cr_assert_not_null(content[i]);
        t_bytes(content[i], sz[i], 160 + (uint32_t)i);
        t_write(dev, hs[i], 0, content[i], sz[i]);
    }
    struct vidmm_alloc_ref refs[3] = { { b, 0 }, { c, 0 }, { a, VIDMM_REF_WRITE } };
    struct vidmm_residency w[3];
    uint64_t f = 0;
    int rc = vidmm_submit(dev, refs, 3, 0, w, &f);
    cr_assert_eq(rc, 0, "a 1 MiB list that fits a 1 MiB segment was refused: %d (%s)", rc, vidmm_strerror(rc));
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(w[i].segment_id, 1);
        cr_assert_leq(w[i].offset + sz[i], T_MiB, "allocation %d placed past the segment's end", i);
        for (int j = 0; j < i; j++)
            cr_assert(w[i].offset + sz[i] <= w[j].offset || w[j].offset + sz[j] <= w[i].offset,
                      "placements %d [0x%llx, +0x%zx) and %d [0x%llx, +0x%zx) overlap", i,
                      (unsigned long long)w[i].offset, sz[i], j, (unsigned long long)w[j].offset, sz[j]);
        expect_bytes(w[i].cpu, content[i], sz[i], "content in the segment after the submission");
        expect_content(dev, hs[i], content[i], sz[i], "content through gpu_access after the submission");
    }
    cr_assert_eq(w[0].offset % (512 * K), 0, "the 512 KiB alignment was not honoured: offset 0x%llx",
                 (unsigned long long)w[0].offset);
    t_signal(dev, f);
    for (int i = 0; i < 3; i++)
        free(content[i]);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Item 17: the system-memory budget (header, sysmem_budget: it "counts every backing store the
 * engine holds in memory ... stale copies of allocations now in a memory segment"; after every
 * call the engine releases stale copies, then writes out the coldest stores). With a disk tier,
 * 120 MiB of allocations resident in a segment and a 48 MiB budget, vidmm_trim_to_budget(wait)
 * leaves sysmem_used within the budget, and every byte survives the round trips.
 * =========================================================================================== */
#define D17_N 30
Test(contract12, d17_sysmem_budget_holds_with_disk_tier)
{
    const uint64_t MiB = T_MiB, budget = 48 * MiB;
    const size_t each = (size_t)(4 * MiB);
    char dir[] = "/tmp/vidmm-d17-XXXXXX";
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char path[64];
    snprintf(path, sizeof(path), "%s/swap", dir);

    struct vidmm_segment_desc seg = t_mem_seg(T_VIS_BASE, 128 * MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(&seg, 1);
    dd.flags = 0; /* no paging log: thousands of records */
    dd.sysmem_budget = budget;
    dd.swap_path = path;
    vidmm_device *dev = t_dev(&dd);

    vidmm_handle h[D17_N];
    uint64_t sum[D17_N];
    unsigned char *buf = malloc(each);
    cr_assert_not_null(buf);
    for (int i = 0; i < D17_N; i++) {
        struct vidmm_alloc_desc d = t_adesc(each, T_SET(1));
        if (i % 5 == 4) /* 6 x 4 MiB PermanentSysMem: their copies count while resident */
            d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
        h[i] = t_alloc(dev, &d);
        t_bytes(buf, each, 170 + (uint32_t)i);
        sum[i] = t_checksum(buf, each);
        t_write(dev, h[i], 0, buf, each); /* content in the backing store first */
        t_resident(dev, h[i], NULL);      /* then in the segment */
    }
    T_OK(vidmm_trim_to_budget(dev, true));
    struct vidmm_stats st = t_stats(dev);
    cr_assert_leq(st.sysmem_used, budget,
                  "with %d x 4 MiB resident, sysmem_used is %llu MiB after trim_to_budget(wait), budget %llu MiB",
                  D17_N, (unsigned long long)(st.sysmem_used / MiB), (unsigned long long)(budget / MiB));
    for (int i = 0; i < D17_N; i++) {
        t_read(dev, h[i], 0, buf, each);
        cr_assert_eq(t_checksum(buf, each), sum[i], "allocation %d's content changed (resident, after the trim)", i);
    }

    /* Round trip: everything evicted (120 MiB of content to system memory and the disk). */
    T_OK(vidmm_evict(dev, h, D17_N));
    T_OK(vidmm_trim_to_budget(dev, true));
    st = t_stats(dev);
    cr_assert_leq(st.sysmem_used, budget, "after evicting everything, sysmem_used is %llu MiB, budget %llu MiB",
                  (unsigned long long)(st.sysmem_used / MiB), (unsigned long long)(budget / MiB));
    for (int i = 0; i < D17_N; i++) {
        struct vidmm_residency w;
        t_resident(dev, h[i], &w);
        cr_assert_eq(t_checksum(w.cpu, each), sum[i], "allocation %d's content changed (evicted and paged in again)", i);
    }
    T_OK(vidmm_trim_to_budget(dev, true));
    st = t_stats(dev);
    cr_assert_leq(st.sysmem_used, budget, "after paging everything in again, sysmem_used is %llu MiB",
                  (unsigned long long)(st.sysmem_used / MiB));
    for (int i = 0; i < D17_N; i++) {
        t_read(dev, h[i], 0, buf, each);
        cr_assert_eq(t_checksum(buf, each), sum[i], "allocation %d's content changed (second trim)", i);
    }
    free(buf);
    vidmm_device_destroy(dev);
    unlink(path); /* nameless when it did not exist; just in case */
    rmdir(dir);
}

/* =============================================================================================
 * Item 19: every VIDMM_E_INVALID_ARG refusal logs exactly one line at VIDMM_LOG_DEBUG naming the
 * field and the spec section (README: "vidmm_lock: flags: READ_ONLY with WRITE_ONLY (spec 6.3
 * rule 1)"); nothing reaches a hook whose level is WARN.
 * =========================================================================================== */
struct logcap {
    pthread_mutex_t mu;
    int n_debug, n_any;
    char last[512];
};
static struct logcap g_log = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void log_hook(void *arg, enum vidmm_log_level level, const char *msg)
{
    struct logcap *l = arg;
    pthread_mutex_lock(&l->mu);
    l->n_any++;
    if (level == VIDMM_LOG_DEBUG) {
        l->n_debug++;
        snprintf(l->last, sizeof(l->last), "%s", msg);
    }
    pthread_mutex_unlock(&l->mu);
}

static void log_reset(void)
{
    pthread_mutex_lock(&g_log.mu);
    g_log.n_debug = g_log.n_any = 0;
    g_log.last[0] = '\0';
    pthread_mutex_unlock(&g_log.mu);
}

/* Checks what the last refusal logged: one DEBUG line, naming 'fn', 'field' (one of a '|'
 * separated list) and "spec <section>" (section NULL: any number; "header": a rule the spec does
 * not have, whose citation may name its source instead of a section number). */
static void logged_one(int rc, const char *call, const char *fn, const char *fields, const char *section)
{
    cr_assert_eq(rc, VIDMM_E_INVALID_ARG, "%s returned %d (%s), expected INVALID_ARG", call, rc, vidmm_strerror(rc));
    pthread_mutex_lock(&g_log.mu);
    int nd = g_log.n_debug;
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", g_log.last);
    pthread_mutex_unlock(&g_log.mu);
    cr_assert_eq(nd, 1, "%s: %d DEBUG lines logged for one refusal (last: \"%s\")", call, nd, msg);
    size_t len = strlen(msg);
    const char *nl = strchr(msg, '\n');
    cr_assert(len > 0 && (nl == NULL || nl == msg + len - 1), "%s: the message is not one line: \"%s\"", call, msg);
    cr_assert_not_null(strstr(msg, fn), "%s: the message does not name %s: \"%s\"", call, fn, msg);
    bool named = false;
    char list[128];
    snprintf(list, sizeof(list), "%s", fields);
    for (char *save = NULL, *f = strtok_r(list, "|", &save); f; f = strtok_r(NULL, "|", &save))
        named |= strstr(msg, f) != NULL;
    cr_assert(named, "%s: the message names none of the fields %s: \"%s\"", call, fields, msg);
    const char *sp = strstr(msg, "spec ");
    if (section && strcmp(section, "header") == 0) {
        /* A rule of the header with no spec section: the citation names where it comes from. */
        cr_assert(sp != NULL && sp[5] != '\0' && sp[5] != ' ' && sp[5] != ')',
                  "%s: the message cites no rule (\"spec <where>\"): \"%s\"", call, msg);
        return;
    }
    cr_assert(sp != NULL && sp[5] >= '0' && sp[5] <= '9', "%s: the message cites no \"spec <section>\": \"%s\"", call,
              msg);
    if (section) {
        char want[32];
        snprintf(want, sizeof(want), "spec %s", section);
        const char *q = strstr(msg, want);
        cr_assert(q != NULL && !(q[strlen(want)] >= '0' && q[strlen(want)] <= '9'),
                  "%s: the message does not cite %s: \"%s\"", call, want, msg);
    }
}

#define LOGGED_ONE(expr, fn, fields, section)                                                       \
    do {                                                                                           \
        log_reset();                                                                               \
        int lrc_ = (expr);                                                                         \
        logged_one(lrc_, #expr, fn, fields, section);                                              \
    } while (0)

#define LOGGED_NONE(expr)                                                                          \
    do {                                                                                           \
        log_reset();                                                                               \
        int lrc_ = (expr);                                                                         \
        cr_assert_eq(lrc_, VIDMM_E_INVALID_ARG, "%s returned %d", #expr, lrc_);                    \
        pthread_mutex_lock(&g_log.mu);                                                             \
        int lany_ = g_log.n_any;                                                                   \
        pthread_mutex_unlock(&g_log.mu);                                                           \
        cr_assert_eq(lany_, 0, "%s logged %d messages to a WARN-level hook", #expr, lany_);        \
    } while (0)

Test(contract12, d19_invalid_arg_refusals_logged_once_at_debug)
{
    vidmm_set_log_fn(log_hook, &g_log, VIDMM_LOG_DEBUG);
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    t_use(dev, h, 0); /* warm-up: whatever is logged once per process is logged now */
    (void)t_lock(dev, h, 0);
    t_unlock(dev, h);

    vidmm_handle out;
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.alignment = 3 * 4096;
    LOGGED_ONE(vidmm_alloc_create(dev, &d, &out), "vidmm_alloc_create", "alignment", "15.2");
    d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.priority = 0;
    LOGGED_ONE(vidmm_alloc_create(dev, &d, &out), "vidmm_alloc_create", "priority", NULL);
    d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_EXISTING_SYSMEM;
    d.existing_memory = NULL;
    LOGGED_ONE(vidmm_alloc_create(dev, &d, &out), "vidmm_alloc_create", "flags|existing_memory", NULL);

    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_READ_ONLY | VIDMM_LOCK_WRITE_ONLY);
    LOGGED_ONE(vidmm_lock(dev, &a), "vidmm_lock", "flags", "6.3");
    uint32_t page = 1000;
    a = t_largs(h, 0);
    a.page_count = 1;
    a.pages = &page;
    LOGGED_ONE(vidmm_lock(dev, &a), "vidmm_lock", "pages|page", NULL);
    a = t_largs(h, VIDMM_LOCK_ENTIRE);
    a.page_count = 1;
    a.pages = &page;
    LOGGED_ONE(vidmm_lock(dev, &a), "vidmm_lock", "flags|pages|page_count", NULL);

    struct vidmm_alloc_ref ref = { h, 0x80u };
    uint64_t f;
    LOGGED_ONE(vidmm_submit(dev, &ref, 1, 0, NULL, &f), "vidmm_submit", "flags", NULL);
    /* count 0 is a rule of the header (WDDM has no such refusal): its citation may name it. */
    LOGGED_ONE(vidmm_submit(dev, &ref, 0, 0, NULL, &f), "vidmm_submit", "count", "header");
    ref.flags = 0;
    ref.allocation = T_BAD_HANDLE;
    LOGGED_ONE(vidmm_submit(dev, &ref, 1, 0, NULL, &f), "vidmm_submit", "allocation|handle", NULL);

    LOGGED_ONE(vidmm_unlock(dev, 1, &h), "vidmm_unlock", "handle", NULL); /* not locked */
    LOGGED_ONE(vidmm_unlock(dev, 0, &h), "vidmm_unlock", "count", NULL);

    /* At WARN nothing is logged for the same refusals. */
    vidmm_set_log_fn(log_hook, &g_log, VIDMM_LOG_WARN);
    d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.alignment = 3 * 4096;
    LOGGED_NONE(vidmm_alloc_create(dev, &d, &out));
    a = t_largs(h, VIDMM_LOCK_READ_ONLY | VIDMM_LOCK_WRITE_ONLY);
    LOGGED_NONE(vidmm_lock(dev, &a));
    LOGGED_NONE(vidmm_unlock(dev, 1, &h));
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_ERROR);
    vidmm_device_destroy(dev);
}
