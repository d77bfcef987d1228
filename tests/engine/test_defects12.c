/* SPDX-License-Identifier: MIT */
/* tests/engine/test_defects12.c - regression tests of issue 12 ("a trustworthy engine"): one
 * test per engine defect, named after its number in the issue, each written to fail on the
 * engine before its fix (main at d5bad37) and to pass after. What each holds the engine to is
 * said above it, with the rule of shared/spec/wddm-vidmm.md it comes from. (Defect 1 is the
 * swizzle kernels': tests/swizzle; 18, 20, 21 are the disk tier's and the scripts'.) No test
 * carries a Criterion .timeout: with two long ones running at once its timer leaks (a 48-byte
 * LeakSanitizer report at exit, libcriterion 2.4); CTest's TIMEOUT bounds them instead. */
#include "t_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* 'n' bytes followed by a PROT_NONE guard page: any access past them faults. */
static unsigned char *guarded(size_t n, size_t *map_len)
{
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (n + pg - 1) / pg * pg;
    *map_len = body + pg;
    unsigned char *m = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(m, MAP_FAILED);
    cr_assert_eq(mprotect(m + body, pg, PROT_NONE), 0);
    return m + body - n;
}

/* 2. ExistingSysMem: pointer and size page-aligned (spec 4.1, 15.2) - an odd size or pointer is
 * refused; a valid one is paged in and out without a byte touched past the caller's buffer
 * (a guard page follows it). */
Test(defects12, d02_existing_sysmem_unaligned_refused_and_no_overrun)
{
    vidmm_device *dev = t_dev_std();
    size_t ml;
    unsigned char *buf = guarded(64 * T_KiB, &ml);
    const uint32_t flags[2] = { VIDMM_ALLOC_EXISTING_SYSMEM, VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM };
    for (int k = 0; k < 2; k++) {
        struct vidmm_alloc_desc d = t_adesc(64 * T_KiB - 100, T_SET(T_VIS));
        d.flags |= flags[k];
        d.existing_memory = buf;
        t_alloc_refused(dev, &d, "existing memory with a size that is not a page multiple");
        d.size = 60 * T_KiB;
        d.existing_memory = buf + 100;
        t_alloc_refused(dev, &d, "existing memory at a pointer that is not page-aligned");
    }
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC));
    d.flags |= VIDMM_ALLOC_EXISTING_SYSMEM;
    d.existing_memory = buf;
    t_bytes(buf, 64 * T_KiB, 7);
    vidmm_handle h = t_alloc(dev, &d);
    t_use(dev, h, VIDMM_REF_WRITE);
    t_evict(dev, h);
    t_use(dev, h, 0);
    unsigned char want[64 * 1024];
    t_bytes(want, sizeof want, 7);
    unsigned char *p = t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert(memcmp(p, want, sizeof want) == 0);
    t_unlock(dev, h);
    T_OK(vidmm_alloc_destroy(dev, h));
    vidmm_device_destroy(dev);
    munmap(buf + 64 * T_KiB - ml + (size_t)sysconf(_SC_PAGESIZE), ml);
}

/* 3. A Discard lock of a busy PermanentSysMem allocation renames it (spec 7): the new instance
 * has a backing store of its own - a non-NULL, writable pointer - and the busy instance the
 * GPU reads keeps its bytes. */
Test(defects12, d03_discard_of_busy_permanent_sysmem_gives_memory)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h0 = t_alloc(dev, &d);
    unsigned char old[4096];
    t_bytes(old, sizeof old, 3);
    t_write(dev, h0, 0, old, sizeof old);
    uint64_t f = t_submit1(dev, h0, 0, NULL);
    struct vidmm_lock_args la = t_largs(h0, VIDMM_LOCK_DISCARD);
    T_OK(vidmm_lock(dev, &la));
    cr_assert_not_null(la.data, "a Discard lock of a busy PermanentSysMem allocation returned NULL");
    cr_assert_neq(la.allocation, h0, "not renamed while busy");
    memset(la.data, 0xEE, 64 * T_KiB); /* must not fault, must not reach h0 */
    t_unlock(dev, la.allocation);
    unsigned char got[4096];
    t_read(dev, h0, 0, got, sizeof got);
    cr_assert(memcmp(got, old, sizeof old) == 0, "the busy instance's bytes changed");
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* 4. Sizes that can never be placed fail fast at creation (nothing written, nothing evicted):
 * 1 GiB of PermanentSysMem against 16 MiB segments - VIDMM_E_NO_VIDEO_MEMORY; beyond the
 * device's system-memory reservation - VIDMM_E_NO_MEMORY. And a PermanentSysMem copy is
 * committed lazily: creating one does not grow sysmem_used, yet it reads as its pattern. */
Test(defects12, d04_impossible_sizes_fail_fast_and_commit_is_lazy)
{
    struct vidmm_segment_desc segs[2] = { t_mem_seg(T_VIS_BASE, 16 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                          t_aper_seg(T_APE_BASE, 16 * T_MiB, 0) };
    struct vidmm_device_desc dd = t_ddesc(segs, 2);
    dd.sysmem_reserve = 256 * T_MiB;
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_stats s0 = t_stats(dev);
    struct vidmm_alloc_desc d = t_adesc(1024 * T_MiB, T_SET(1) | T_SET(2));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    d.fill_pattern = 0x12345678u;
    vidmm_handle h = T_OUT_SENTINEL;
    const uint64_t t0 = now_ms();
    T_RC(vidmm_alloc_create(dev, &d, &h), VIDMM_E_NO_VIDEO_MEMORY);
    cr_assert_lt(now_ms() - t0, 200, "refusing it took %llu ms", (unsigned long long)(now_ms() - t0));
    cr_assert_eq(h, T_OUT_SENTINEL);
    cr_assert_eq(t_stats(dev).sysmem_used, s0.sysmem_used);
    /* Placeable in a segment, but larger than the system-memory reservation. */
    struct vidmm_segment_desc big = t_mem_seg(T_VIS_BASE, 512 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc bd = t_ddesc(&big, 1);
    bd.sysmem_reserve = 64 * T_MiB;
    vidmm_device *dev2 = t_dev(&bd);
    struct vidmm_alloc_desc d2 = t_adesc(128 * T_MiB, T_SET(1));
    T_RC(vidmm_alloc_create(dev2, &d2, &h), VIDMM_E_NO_MEMORY);
    vidmm_device_destroy(dev2);
    /* Lazy commit. */
    d.size = 8 * T_MiB;
    h = t_alloc(dev, &d);
    cr_assert_eq(t_stats(dev).sysmem_used, s0.sysmem_used, "a PermanentSysMem store was committed at creation");
    uint32_t *p = t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert(t_is_fill(p, 8 * T_MiB, d.fill_pattern), "its content is not the fill pattern");
    t_unlock(dev, h);
    t_use(dev, h, 0);
    t_expect_fill(dev, h, 0, 8 * T_MiB, d.fill_pattern);
    vidmm_device_destroy(dev);
}

/* 5. A swizzled allocation moved from a memory segment into an aperture (its write set holds
 * only the aperture), then evicted, is a tiled copy (spec 8.1, 8.2 state 2): a range lock shows
 * the linear surface the tiled bytes mean, and the GPU sees the tiled bytes. */
Test(defects12, d05_swizzled_via_aperture_then_evicted_keeps_content)
{
    vidmm_device *dev = t_dev_std_ex(1, NULL, 0);
    struct t_swz z;
    t_swz_init(&z);
    struct vidmm_alloc_desc d = t_swz_desc(&z, T_SET(T_VIS));
    d.supported_read_set = T_SET(T_VIS) | T_SET(T_APE);
    d.supported_write_set = T_SET(T_APE);
    d.preferred_segment = T_PREF(0, T_VIS);
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_residency w;
    uint64_t f = t_submit1(dev, h, 0, &w);
    cr_assert_eq(w.segment_id, T_VIS);
    t_signal(dev, f);
    unsigned char *tiled = malloc(z.tiled_size), *lin = malloc(z.linear_size), *got = malloc(z.tiled_size);
    t_bytes(tiled, z.tiled_size, 55);
    t_write(dev, h, 0, tiled, z.tiled_size);
    f = t_submit1(dev, h, VIDMM_REF_WRITE, &w); /* into the aperture */
    cr_assert_eq(w.segment_id, T_APE);
    t_signal(dev, f);
    t_evict(dev, h);
    t_read(dev, h, 0, got, z.tiled_size);
    cr_assert(memcmp(got, tiled, z.tiled_size) == 0, "the evicted copy is not the tiled bytes");
    t_deswz(&z, tiled, lin);
    unsigned char *p = t_lock(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE | VIDMM_LOCK_READ_ONLY);
    cr_assert(memcmp(p, lin, z.linear_size) == 0, "the CPU's linear view is scrambled");
    t_unlock(dev, h);
    f = t_submit1(dev, h, 0, &w);
    t_signal(dev, f);
    t_read(dev, h, 0, got, z.tiled_size);
    cr_assert(memcmp(got, tiled, z.tiled_size) == 0, "the GPU's tiled view is scrambled");
    free(tiled);
    free(lin);
    free(got);
    vidmm_device_destroy(dev);
}

/* 6. No swizzling ranges: a range lock unswizzles by eviction; the next page-in tiles the
 * content into segment memory another allocation filled before. Every byte of the allocation
 * beyond the tiled surface reads as zero or its fill pattern - never the other one's bytes. */
Test(defects12, d06_tiled_page_in_padding_never_holds_stale_bytes)
{
    vidmm_device *dev = t_dev_std();
    struct t_swz z;
    t_swz_init(&z);
    struct vidmm_alloc_desc d = t_swz_desc(&z, T_SET(T_VIS));
    d.size = z.tiled_size + 16 * T_KiB; /* room after the surface */
    d.fill_pattern = 0;
    vidmm_handle a = t_alloc(dev, &d);
    unsigned char *lin = t_lock(dev, a, VIDMM_LOCK_ACQUIRE_APERTURE); /* evicted unswizzled */
    t_bytes(lin, z.linear_size, 9);
    unsigned char *want_lin = malloc(z.linear_size);
    memcpy(want_lin, lin, z.linear_size);
    t_unlock(dev, a);
    cr_assert_neq(t_query(dev, a).where, VIDMM_WHERE_SEGMENT);
    /* Another allocation fills the whole segment with 0xAB, then goes. */
    vidmm_handle b = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    t_use(dev, b, 0);
    unsigned char *ab = malloc(T_VIS_SIZE);
    memset(ab, 0xAB, T_VIS_SIZE);
    t_write(dev, b, 0, ab, T_VIS_SIZE);
    T_OK(vidmm_alloc_destroy(dev, b));
    t_use(dev, a, 0); /* SWIZZLE transfer into the segment */
    cr_assert_eq(t_query(dev, a).where, VIDMM_WHERE_SEGMENT);
    const size_t n = (size_t)t_round(d.size);
    unsigned char *got = malloc(n), *want_tiled = malloc(z.tiled_size);
    t_read(dev, a, 0, got, n);
    t_swz(&z, want_lin, want_tiled);
    cr_assert(memcmp(got, want_tiled, z.tiled_size) == 0, "the tiled surface is wrong");
    for (size_t i = z.tiled_size; i < n; i++)
        cr_assert_eq(got[i], 0, "byte %zu after the surface is 0x%02x: another allocation's", i, got[i]);
    free(ab);
    free(got);
    free(want_lin);
    free(want_tiled);
    vidmm_device_destroy(dev);
}

/* 7. Discard | NoExistingReference may reuse an idle instance, never one a submitted,
 * unsignalled operation still references (spec 7: the GPU would read what the CPU writes). */
Test(defects12, d07_discard_no_existing_reference_never_busy)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    vidmm_handle h0 = t_alloc(dev, &d);
    uint64_t f = t_submit1(dev, h0, 0, NULL);
    struct vidmm_lock_args la = t_largs(h0, VIDMM_LOCK_DISCARD | VIDMM_LOCK_NO_EXISTING_REFERENCE);
    T_OK(vidmm_lock(dev, &la));
    cr_assert_neq(la.allocation, h0, "Discard | NoExistingReference returned the instance the GPU still reads");
    cr_assert(!t_query(dev, la.allocation).busy);
    t_unlock(dev, la.allocation);
    t_signal(dev, f);
    la = t_largs(la.allocation, VIDMM_LOCK_DISCARD | VIDMM_LOCK_NO_EXISTING_REFERENCE);
    T_OK(vidmm_lock(dev, &la)); /* everything idle: an existing instance is reused */
    t_unlock(dev, la.allocation);
    vidmm_device_destroy(dev);
}

/* 8. A pinned (Overlay) allocation whose read and write sets differ never moves (spec 10,
 * 15.4): a writing submission leaves it where it is, or fails with CANT_EVICT_PINNED. */
Test(defects12, d08_pinned_with_different_sets_never_moves)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_OVERLAY;
    d.supported_read_set = T_SET(T_VIS) | T_SET(T_LOC);
    d.supported_write_set = T_SET(T_LOC);
    d.preferred_segment = T_PREF(0, T_VIS);
    vidmm_handle h = t_alloc(dev, &d);
    t_use(dev, h, 0);
    struct vidmm_alloc_info i0 = t_query(dev, h);
    struct vidmm_alloc_ref ref = { h, VIDMM_REF_WRITE };
    uint64_t f = 0;
    int rc = vidmm_submit(dev, &ref, 1, 0, NULL, &f);
    cr_assert(rc == 0 || rc == VIDMM_E_CANT_EVICT_PINNED, "returned %d (%s)", rc, vidmm_strerror(rc));
    if (rc == 0)
        t_signal(dev, f);
    struct vidmm_alloc_info i1 = t_query(dev, h);
    cr_assert_eq(i1.segment_id, i0.segment_id, "the pinned allocation moved from segment %u to %u", i0.segment_id,
                 i1.segment_id);
    cr_assert_eq(i1.offset, i0.offset);
    /* No segment in both sets: placed for reading, a write reference cannot move it. */
    d.supported_write_set = T_SET(T_APE);
    d.supported_read_set = T_SET(T_VIS);
    d.preferred_segment = 0;
    vidmm_handle g = t_alloc(dev, &d);
    t_use(dev, g, 0);
    i0 = t_query(dev, g);
    ref.allocation = g;
    T_RC(vidmm_submit(dev, &ref, 1, 0, NULL, &f), VIDMM_E_CANT_EVICT_PINNED);
    i1 = t_query(dev, g);
    cr_assert_eq(i1.segment_id, i0.segment_id);
    cr_assert_eq(i1.offset, i0.offset);
    vidmm_device_destroy(dev);
}

/* 9. DONOT_WAIT never waits for the GPU (spec 6.4, 15.13): a submission that must move a busy
 * allocation, and a DONOT_WAIT | IGNORE_READ_SYNC lock that must evict a busy allocation from a
 * segment the CPU cannot see, return VIDMM_E_BUSY at once - a watchdog signals the fence
 * after 2 s, and both calls must have returned before it. */
Test(defects12, d09_donot_wait_never_blocks)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.supported_read_set = T_SET(T_VIS) | T_SET(T_LOC);
    d.supported_write_set = T_SET(T_LOC);
    d.preferred_segment = T_PREF(0, T_VIS);
    vidmm_handle x = t_alloc(dev, &d);
    struct vidmm_residency w;
    uint64_t f = t_submit1(dev, x, 0, &w);
    cr_assert_eq(w.segment_id, T_VIS);
    struct vidmm_alloc_desc e = t_adesc(64 * T_KiB, T_SET(T_LOC) | T_SET(T_APE));
    e.preferred_segment = T_PREF(0, T_LOC);
    vidmm_handle y = t_alloc(dev, &e);
    uint64_t fy = t_submit1(dev, y, 0, &w);
    cr_assert_eq(w.segment_id, T_LOC);
    vidmm_handle hs[2] = { x, y };
    struct t_snap s;
    t_snap(&s, dev, hs, 2);
    atomic_bool signalled = false;
    struct t_later later;
    t_signal_later(&later, dev, fy > f ? fy : f, 2000, &signalled);
    struct vidmm_alloc_ref ref = { x, VIDMM_REF_WRITE };
    uint64_t fence = 0;
    int rc1 = vidmm_submit(dev, &ref, 1, VIDMM_SUBMIT_DONOT_WAIT, NULL, &fence);
    bool early1 = !atomic_load(&signalled);
    struct vidmm_lock_args la = t_largs(y, VIDMM_LOCK_DONOT_WAIT | VIDMM_LOCK_IGNORE_READ_SYNC);
    int rc2 = vidmm_lock(dev, &la);
    bool early2 = !atomic_load(&signalled);
    if (rc2 == 0)
        t_unlock(dev, y);
    if (early1 && early2 && rc1 == VIDMM_E_BUSY && rc2 == VIDMM_E_BUSY)
        t_unchanged(&s, "DONOT_WAIT calls that said busy");
    t_later_join(&later);
    cr_assert(early1, "vidmm_submit(DONOT_WAIT) waited for the GPU");
    cr_assert_eq(rc1, VIDMM_E_BUSY, "submit returned %d (%s)", rc1, vidmm_strerror(rc1));
    cr_assert(early2, "vidmm_lock(DONOT_WAIT | IGNORE_READ_SYNC) waited for the GPU");
    cr_assert_eq(rc2, VIDMM_E_BUSY, "lock returned %d (%s)", rc2, vidmm_strerror(rc2));
    vidmm_device_destroy(dev);
}

/* 10. A wait nobody ends: with wait_timeout_ns set, a lock of a busy allocation gives up with
 * VIDMM_E_TIMEOUT (a failure NTSTATUS, not STATUS_TIMEOUT's success code) and changed
 * nothing; without it (the default, 0) it waits as WDDM does. */
Test(defects12, d10_wait_timeout)
{
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, 0);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, 0);
    struct vidmm_device_desc dd = t_ddesc(segs, 3);
    dd.wait_timeout_ns = 200000000ull;
    vidmm_device *dev = t_dev(&dd);
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    uint64_t f = t_submit1(dev, h, VIDMM_REF_WRITE, NULL);
    struct t_snap s;
    t_snap1(&s, dev, h);
    const uint64_t t0 = now_ms();
    struct vidmm_lock_args la = t_largs(h, 0);
    T_REFUSED(&s, vidmm_lock(dev, &la), VIDMM_E_TIMEOUT);
    const uint64_t took = now_ms() - t0;
    cr_assert(took >= 150 && took < 5000, "timed out after %llu ms, asked 200", (unsigned long long)took);
    cr_assert_geq(vidmm_error_to_ntstatus(VIDMM_E_TIMEOUT), 0xC0000000u, "VIDMM_E_TIMEOUT maps to a success NTSTATUS");
    /* An evicting make-resident that waits for the GPU times out as well. */
    vidmm_handle big = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    T_RC(vidmm_make_resident(dev, &big, 1, NULL), VIDMM_E_TIMEOUT);
    t_signal(dev, f);
    T_OK(vidmm_make_resident(dev, &big, 1, NULL));
    T_OK(vidmm_lock(dev, &la));
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* 11. Spec 15.24: a Cached allocation the CPU wrote is flushed (the driver's flush hook) over
 * the bytes the GPU reads, before the submission returns, when it reads them from a segment
 * that does not snoop - wherever the CPU wrote (here: its backing store, before placement);
 * not when it reads them through a CacheCoherent aperture. */
Test(defects12, d11_cached_cpu_writes_flushed_before_gpu_reads)
{
    struct t_rec r;
    t_rec_init(&r);
    struct vidmm_driver drv = t_rec_driver(&r, false, false, true);
    struct vidmm_segment_desc segs[2] = { t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                          t_aper_seg(T_APE_BASE, 2 * T_MiB, VIDMM_SEGMENT_CACHE_COHERENT) };
    struct vidmm_device_desc dd = t_ddesc(segs, 2);
    dd.driver = &drv;
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(1));
    d.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle h = t_alloc(dev, &d);
    unsigned char *p = t_lock(dev, h, 0);
    memset(p + 1000, 0x5C, 100);
    t_unlock(dev, h);
    struct vidmm_residency w;
    uint64_t f = t_submit1(dev, h, 0, &w);
    pthread_mutex_lock(&r.mu);
    uint32_t nf = r.n_flush;
    unsigned char *fp = r.flush_p;
    size_t fn = r.flush_n;
    pthread_mutex_unlock(&r.mu);
    cr_assert_geq(nf, 1, "no flush before the GPU read what the CPU wrote");
    unsigned char *gpu = w.cpu;
    cr_assert(fp <= gpu + 1000 && fp + fn >= gpu + 1100, "the flush [%p, +%zu) misses the written bytes at %p", fp, fn,
              gpu + 1000);
    t_signal(dev, f);
    /* The same through the CacheCoherent aperture: nothing to flush. */
    struct vidmm_alloc_desc c = t_adesc(64 * T_KiB, T_SET(2));
    c.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle k = t_alloc(dev, &c);
    p = t_lock(dev, k, 0);
    memset(p, 1, 64);
    t_unlock(dev, k);
    pthread_mutex_lock(&r.mu);
    nf = r.n_flush;
    pthread_mutex_unlock(&r.mu);
    f = t_submit1(dev, k, 0, &w);
    cr_assert_eq(w.segment_id, 2);
    pthread_mutex_lock(&r.mu);
    cr_assert_eq(r.n_flush, nf, "flushed for a cache-coherent aperture");
    pthread_mutex_unlock(&r.mu);
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

struct resident_call {
    vidmm_device *dev;
    vidmm_handle h;
    int rc;
};

static void *resident_main(void *arg)
{
    struct resident_call *c = arg;
    c->rc = vidmm_make_resident(c->dev, &c->h, 1, NULL);
    return NULL;
}

/* 12. Spec 4.1 / 15.25, SynchronousPaging: VidMm "waits for that paging op to complete before
 * letting the driver submit a non-paging DMA buffer". S is busy and must be evicted (its paging
 * operation waits for S to be idle); meanwhile a submission of Y, which needs no paging, must
 * not return before S's operation has completed - i.e. before S's fence is signalled. */
Test(defects12, d12_synchronous_paging_holds_later_submissions)
{
    struct vidmm_segment_desc seg[2] = { t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                         t_mem_seg(T_LOC_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE) };
    struct vidmm_device_desc dd = t_ddesc(seg, 2);
    dd.paging_threads = 1;
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc sd = t_adesc(512 * T_KiB, T_SET(1));
    sd.flags |= VIDMM_ALLOC_SYNCHRONOUS_PAGING;
    sd.priority = VIDMM_PRIORITY_MINIMUM;
    vidmm_handle s = t_alloc(dev, &sd);
    vidmm_handle y = t_alloc_simple(dev, 64 * T_KiB, T_SET(2)); /* needs no paging of segment 1 */
    t_use(dev, y, 0);
    uint64_t fs = t_submit1(dev, s, 0, NULL);
    vidmm_handle z = t_alloc_simple(dev, 768 * T_KiB, T_SET(1));
    struct resident_call c = { dev, z, -100 };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, resident_main, &c), 0); /* evicts S: waits for S idle */
    for (int i = 0; i < 2000 && t_query(dev, s).where == VIDMM_WHERE_SEGMENT; i++)
        usleep(1000);
    cr_assert_neq(t_query(dev, s).where, VIDMM_WHERE_SEGMENT, "S's eviction was never planned");
    atomic_bool signalled = false;
    struct t_later later;
    t_signal_later(&later, dev, fs, 400, &signalled);
    uint64_t fy = t_submit1(dev, y, 0, NULL);
    bool held = atomic_load(&signalled);
    t_later_join(&later);
    pthread_join(th, NULL);
    cr_assert(held, "a submission was issued while a SynchronousPaging operation was pending");
    T_OK(c.rc);
    t_signal(dev, fy);
    vidmm_device_destroy(dev);
}

/* 13. Spec 8.3: DxgkDdiAcquireSwizzlingRange is called only for an allocation in a
 * CPU-accessible memory segment. A swizzled allocation that can live only in a segment the CPU
 * cannot see is locked linear through the unswizzling eviction, without a range. */
Test(defects12, d13_no_swizzling_range_outside_cpu_visible_segments)
{
    struct t_rec r;
    t_rec_init(&r);
    struct vidmm_driver drv = t_rec_driver(&r, false, true, false);
    vidmm_device *dev = t_dev_std_ex(2, &drv, 0);
    struct t_swz z;
    t_swz_init(&z);
    struct vidmm_alloc_desc d = t_swz_desc(&z, T_SET(T_LOC));
    vidmm_handle h = t_alloc(dev, &d);
    unsigned char *tiled = malloc(z.tiled_size), *lin = malloc(z.linear_size);
    t_use(dev, h, 0);
    cr_assert_eq(t_query(dev, h).segment_id, T_LOC);
    t_bytes(tiled, z.tiled_size, 77);
    t_write(dev, h, 0, tiled, z.tiled_size);
    t_deswz(&z, tiled, lin);
    unsigned char *p = t_lock(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE | VIDMM_LOCK_READ_ONLY);
    cr_assert(memcmp(p, lin, z.linear_size) == 0, "the linear view is wrong");
    t_unlock(dev, h);
    pthread_mutex_lock(&r.mu);
    uint32_t n = r.n_acq;
    pthread_mutex_unlock(&r.mu);
    cr_assert_eq(n, 0, "a swizzling range was acquired for an allocation in a segment the CPU cannot see");
    free(tiled);
    free(lin);
    vidmm_device_destroy(dev);
}

/* 14. Lock and creation rules in the order the spec applies them. */
Test(defects12, d14_rule_order_and_coherency)
{
    /* (a) Discard neutralises IgnoreSync and DonotWait before rule 4 is checked: a Cached
     * allocation on a non-coherent adapter may be locked Discard | IgnoreSync | DonotWait. */
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    d.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_lock_args la = t_largs(h, VIDMM_LOCK_DISCARD | VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT);
    T_OK(vidmm_lock(dev, &la));
    t_unlock(dev, la.allocation);
    /* ... but where Discard is ignored (a pinned allocation) rule 4 applies. */
    struct vidmm_alloc_desc o = d;
    o.flags |= VIDMM_ALLOC_OVERLAY;
    vidmm_handle ov = t_alloc(dev, &o);
    struct t_snap s;
    t_snap1(&s, dev, ov);
    la = t_largs(ov, VIDMM_LOCK_DISCARD | VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT);
    T_REFUSED(&s, vidmm_lock(dev, &la), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
    /* (b) Coherency from the segments: with a CacheCoherent aperture in its set, IgnoreSync
     * on a Cached allocation is allowed on an adapter without VIDMM_DEVICE_CACHE_COHERENT. */
    struct vidmm_segment_desc segs[2] = { t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                          t_aper_seg(T_APE_BASE, 2 * T_MiB, VIDMM_SEGMENT_CACHE_COHERENT) };
    struct vidmm_device_desc dd = t_ddesc(segs, 2);
    dev = t_dev(&dd);
    d = t_adesc(64 * T_KiB, T_SET(1) | T_SET(2));
    d.flags |= VIDMM_ALLOC_CACHED;
    h = t_alloc(dev, &d);
    la = t_largs(h, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT);
    T_OK(vidmm_lock(dev, &la));
    t_unlock(dev, h);
    /* (c) HistoryBuffer must carry Cached when the adapter has cache-coherent apertures (4.1). */
    struct vidmm_alloc_desc hb = t_adesc(64 * T_KiB, T_SET(1));
    hb.flags = VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_HISTORY_BUFFER;
    t_alloc_refused(dev, &hb, "HistoryBuffer without Cached beside a cache-coherent aperture");
    hb.flags |= VIDMM_ALLOC_CACHED;
    t_alloc(dev, &hb);
    /* (d) ExistingSysMem that only apertures may hold: refused at creation, not accepted and
     * then never placeable. */
    size_t ml;
    unsigned char *buf = guarded(64 * T_KiB, &ml);
    struct vidmm_alloc_desc ex = t_adesc(64 * T_KiB, T_SET(2));
    ex.flags |= VIDMM_ALLOC_EXISTING_SYSMEM;
    ex.existing_memory = buf;
    vidmm_handle eh = T_OUT_SENTINEL;
    T_RC(vidmm_alloc_create(dev, &ex, &eh), VIDMM_E_UNSUPPORTED);
    cr_assert_eq(eh, T_OUT_SENTINEL);
    vidmm_device_destroy(dev);
    munmap(buf + 64 * T_KiB - ml + (size_t)sysconf(_SC_PAGESIZE), ml);
}

/* 15. Spec 15.28: the paging log is complete when each call returns - the PermanentSysMem
 * copy-back an unlock causes is in it when vidmm_unlock() returns, even with a paging thread
 * running the operations. */
Test(defects12, d15_unlock_copy_back_logged_on_return)
{
    static struct vidmm_segment_desc segs[1];
    segs[0] = t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(segs, 1);
    dd.paging_threads = 1;
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc d = t_adesc(256 * T_KiB, T_SET(1));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h = t_alloc(dev, &d);
    t_use(dev, h, 0);
    for (int round = 0; round < 50; round++) {
        t_log_clear(dev);
        unsigned char *p = t_lock(dev, h, 0);
        memset(p, round, 256 * T_KiB);
        t_unlock(dev, h);
        static struct t_log_buf b;
        t_log_take(dev, &b);
        cr_assert_geq(t_log_find(&b, VIDMM_PAGING_TRANSFER, h, 0), 0,
                      "round %d: the unlock's copy-back is not in the log when vidmm_unlock() returns", round);
    }
    vidmm_device_destroy(dev);
}

/* 16. A submission whose own placements fragment a segment: A (4 KiB, hinted to bank 2, the
 * segment's upper half) is placed first, in the middle; B (1.5 MiB) then finds no hole large
 * enough, though the two fit together. The engine evicts and places again before it gives up. */
Test(defects12, d16_submission_defragments_its_own_placements)
{
    static const uint64_t bank_ends[1] = { T_MiB };
    struct vidmm_segment_desc seg = t_mem_seg(T_VIS_BASE, 2 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE |
                                                                          VIDMM_SEGMENT_USE_BANKING);
    seg.bank_count = 2;
    seg.bank_ends = bank_ends;
    struct vidmm_device_desc dd = t_ddesc(&seg, 1);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc ad = t_adesc(4 * T_KiB, T_SET(1));
    ad.preferred_segment = T_PREF(0, 1);
    ad.hinted_bank = T_BANK(0, 2);
    vidmm_handle a = t_alloc(dev, &ad);
    vidmm_handle b = t_alloc_simple(dev, 1536 * T_KiB, T_SET(1));
    unsigned char pat[4096];
    t_bytes(pat, sizeof pat, 4);
    t_write(dev, a, 0, pat, sizeof pat);
    vidmm_handle hs[2] = { a, b };
    const uint32_t fl[2] = { 0, 0 };
    struct vidmm_residency w[2];
    uint64_t f = t_submit(dev, hs, fl, 2, w);
    struct vidmm_alloc_info ia = t_query(dev, a), ib = t_query(dev, b);
    cr_assert_eq(ia.where, VIDMM_WHERE_SEGMENT);
    cr_assert_eq(ib.where, VIDMM_WHERE_SEGMENT);
    cr_assert(ia.offset + ia.size <= ib.offset || ib.offset + ib.size <= ia.offset, "A and B overlap");
    unsigned char got[4096];
    t_read(dev, a, 0, got, sizeof got);
    cr_assert(memcmp(got, pat, sizeof pat) == 0, "A's content was lost in the re-placement");
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* 17. The system-memory budget holds: 30 allocations of 4 MiB whose content the CPU wrote in
 * their backing stores, then made resident in a 128 MiB segment, leave stale stores behind;
 * with a 48 MiB budget and a disk tier, trimming brings sysmem_used within it - and every
 * allocation's content is intact. */
Test(defects12, d17_sysmem_budget_holds)
{
    char dir[] = "/var/tmp/vidmm-d12-XXXXXX", path[80];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/swap", dir);
    struct vidmm_segment_desc seg = t_mem_seg(T_VIS_BASE, 128 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(&seg, 1);
    dd.swap_path = path;
    dd.sysmem_budget = 48 * T_MiB;
    dd.flags = 0;
    vidmm_device *dev = t_dev(&dd);
    enum { N = 30 };
    const size_t n = 4 * T_MiB;
    vidmm_handle h[N];
    for (int i = 0; i < N; i++) {
        h[i] = t_alloc_simple(dev, n, T_SET(1));
        unsigned char *p = t_lock(dev, h[i], 0);
        t_bytes(p, n, 100 + i);
        t_unlock(dev, h[i]);
        t_use(dev, h[i], 0);
    }
    T_OK(vidmm_trim_to_budget(dev, true));
    struct vidmm_stats st = t_stats(dev);
    cr_assert_leq(st.sysmem_used, dd.sysmem_budget, "%llu MiB of backing stores against a %llu MiB budget",
                  (unsigned long long)(st.sysmem_used >> 20), (unsigned long long)(dd.sysmem_budget >> 20));
    unsigned char *want = malloc(n), *got = malloc(n);
    for (int i = 0; i < N; i++) {
        t_bytes(want, n, 100 + i);
        t_read(dev, h[i], 0, got, n);
        cr_assert(memcmp(got, want, n) == 0, "allocation %d's content changed", i);
    }
    free(want);
    free(got);
    vidmm_device_destroy(dev);
    unlink(path);
    rmdir(dir);
}

/* 19. Every VIDMM_E_INVALID_ARG is explained at debug level: one line through the log hook
 * naming the field and the rule's spec section; nothing at warning level. */
struct logcap {
    int n;
    char last[512];
};

static void cap_log(void *arg, enum vidmm_log_level level, const char *msg)
{
    struct logcap *c = arg;
    (void)level;
    c->n++;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

Test(defects12, d19_refusals_logged_at_debug)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    struct logcap c = { 0, "" };
    struct {
        const char *field;
        int which;
    } cases[] = { { "alignment", 0 }, { "flags", 1 }, { "pages", 2 }, { "handles", 3 }, { "refs[].flags", 4 } };
    for (int level = VIDMM_LOG_WARN; level <= VIDMM_LOG_DEBUG; level += VIDMM_LOG_DEBUG - VIDMM_LOG_WARN) {
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            vidmm_set_log_fn(cap_log, &c, (enum vidmm_log_level)level);
            c.n = 0;
            int rc = 0;
            switch (cases[k].which) {
            case 0: {
                struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
                d.alignment = 3 * 4096;
                vidmm_handle o;
                rc = vidmm_alloc_create(dev, &d, &o);
                break;
            }
            case 1: {
                struct vidmm_lock_args la = t_largs(h, VIDMM_LOCK_READ_ONLY | VIDMM_LOCK_WRITE_ONLY);
                rc = vidmm_lock(dev, &la);
                break;
            }
            case 2: {
                uint32_t pg = 99;
                struct vidmm_lock_args la = t_largs(h, 0);
                la.pages = &pg;
                la.page_count = 1;
                rc = vidmm_lock(dev, &la);
                break;
            }
            case 3:
                rc = vidmm_unlock(dev, 1, &h); /* not locked */
                break;
            default: {
                struct vidmm_alloc_ref r = { h, 0x80 };
                uint64_t f;
                rc = vidmm_submit(dev, &r, 1, 0, NULL, &f);
                break;
            }
            }
            vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_ERROR);
            cr_assert_eq(rc, VIDMM_E_INVALID_ARG, "case %zu returned %d", k, rc);
            if (level == VIDMM_LOG_WARN) {
                cr_assert_eq(c.n, 0, "case %zu logged at warning level: %s", k, c.last);
                continue;
            }
            cr_assert_eq(c.n, 1, "case %zu: %d lines at debug level (last: %s)", k, c.n, c.last);
            cr_assert_not_null(strstr(c.last, cases[k].field), "case %zu: '%s' does not name %s", k, c.last,
                               cases[k].field);
            cr_assert_not_null(strstr(c.last, "spec "), "case %zu: '%s' names no rule", k, c.last);
        }
    }
    vidmm_device_destroy(dev);
}
