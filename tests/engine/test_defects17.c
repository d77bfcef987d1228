/* SPDX-License-Identifier: MIT */
/* tests/engine/test_defects17.c - regression tests of issue 17 ("six more engine defects"):
 * one test per defect, named after it, each written to fail on the engine before its fix
 * (main at d5bad37) and to pass after. The rules they hold the engine to:
 *   1. an aperture's pages are not unmapped (or given to another allocation) while the GPU may
 *      still use what was mapped there (spec 10: the aperture is what the GPU reads through);
 *   2. a writable relock inside a READ_ONLY lock neither races a disk write-out nor lets a
 *      stale disk copy replace what the CPU wrote (spec 15.6: a writable lock makes it changed);
 *   3. a Discard lock never takes over an instance another lock holds (spec 15.12, 15.18);
 *   4. eviction into an aperture honours the allocation's Alignment (spec 15.3, 10: 64 KB pages);
 *   5. a placement that can never fit evicts nothing (spec 15.4: victims only to make room);
 *   6. a PitchAlignedSize that would wrap when rounded is refused (spec 15.2);
 * and the "also" of the issue: DONOT_WAIT | IGNORE_SYNC never blocks (spec 6.4, 15.13). The tests
 * carry no Criterion .timeout: with two long ones running at once its timer leaks (a 48-byte
 * LeakSanitizer report at exit, libcriterion 2.4); CTest's TIMEOUT bounds them instead. */
#include "t_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* 1. Allocation A is mapped in the aperture and referenced by an unsignalled submission. B
 * needs the whole aperture, so A is evicted: A's pages may be unmapped (and B's mapped at the
 * same offset) only once A's fence has passed - before that the GPU may still read or write A
 * there. The fence is signalled 300 ms later by another thread: B's make-resident must not
 * complete before it. */
Test(defects17, d01_aperture_unmap_waits_for_gpu)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, T_APE_SIZE / 2, T_SET(T_APE));
    vidmm_handle b = t_alloc_simple(dev, T_APE_SIZE, T_SET(T_APE));
    struct vidmm_residency wa;
    uint64_t fa = t_submit1(dev, a, VIDMM_REF_WRITE, &wa);
    cr_assert_eq(wa.segment_id, T_APE);
    atomic_bool signalled = false;
    struct t_later later;
    t_signal_later(&later, dev, fa, 300, &signalled);
    struct vidmm_residency wb;
    T_OK(vidmm_make_resident(dev, &b, 1, &wb));
    cr_assert(atomic_load(&signalled),
              "B was mapped over A's aperture pages while A's submission had not completed");
    t_later_join(&later);
    struct vidmm_alloc_info ia = t_query(dev, a), ib = t_query(dev, b);
    cr_assert_neq(ia.where, VIDMM_WHERE_APERTURE);
    cr_assert_eq(ib.where, VIDMM_WHERE_APERTURE);
    vidmm_device_destroy(dev);
}

/* 2. A disk write-out of X is in flight; the CPU takes a READ_ONLY lock (allowed: nothing is
 * written), then a writable relock and writes new bytes. Those bytes are the content from then
 * on: the write-out, whenever it completes, must not make its (older, possibly torn) disk copy
 * the content. The race window is the write-out's duration, so the scenario runs many times on
 * a 4 MiB allocation with the thread-pool backend (its writes run beside the caller), and the
 * CPU changes only 256 bytes: both unlocks come long before a 4 MiB write completes. */
Test(defects17, d02_writable_relock_inside_read_only_keeps_cpu_writes)
{
    char dir[] = "/var/tmp/vidmm-d17-XXXXXX", path[80];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/swap", dir);
    struct vidmm_segment_desc seg = t_mem_seg(T_VIS_BASE, 8 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc d = t_ddesc(&seg, 1);
    d.swap_path = path;
    d.sysmem_budget = T_MiB;
    d.io_backend = VIDMM_IO_THREADS;
    vidmm_device *dev = t_dev(&d);
    const size_t n = 4 * T_MiB;
    unsigned char *want = malloc(n), *got = malloc(n);
    cr_assert(want && got);
    vidmm_handle x = t_alloc_simple(dev, n, T_SET(1));
    unsigned races = 0;
    for (unsigned round = 0; round < 40; round++) {
        /* X's content in system memory, then over budget: a write-out starts after the unlock. */
        void *p = t_lock(dev, x, 0);
        t_bytes(want, n, 1000 + round);
        memcpy(p, want, n);
        t_unlock(dev, x);
        T_OK(vidmm_trim_to_budget(dev, false));
        struct vidmm_lock_args ro = t_largs(x, VIDMM_LOCK_READ_ONLY);
        T_OK(vidmm_lock(dev, &ro));
        struct vidmm_stats st = t_stats(dev);
        races += st.swap_in_flight != 0;
        struct vidmm_lock_args rw = t_largs(x, 0);
        T_OK(vidmm_lock(dev, &rw));
        cr_assert_eq(rw.data, ro.data, "a relock returned another pointer");
        /* A few bytes only, so that both unlocks come while the 4 MiB write-out still runs. */
        t_bytes(want + 4096 * (round % 64), 256, 5000 + round);
        memcpy((unsigned char *)rw.data + 4096 * (round % 64), want + 4096 * (round % 64), 256);
        t_unlock(dev, x);
        t_unlock(dev, x);
        /* Whatever the write-out did, the content is what the CPU wrote last. */
        T_OK(vidmm_trim_to_budget(dev, true));
        p = t_lock(dev, x, VIDMM_LOCK_READ_ONLY);
        memcpy(got, p, n);
        t_unlock(dev, x);
        cr_assert(memcmp(got, want, n) == 0, "round %u: the CPU's writes under a writable relock were lost",
                  round);
    }
    cr_log_info("d02: a write-out was in flight at the READ_ONLY lock in %u of 40 rounds", races);
    free(want);
    free(got);
    vidmm_device_destroy(dev);
    unlink(path);
    rmdir(dir);
}

/* 3. h0 is an old instance, unlocked and idle; h1 is current, idle, and locked twice. A Discard
 * lock naming h0 must not return h1 with its lock count reset: h1's two locks stay, its two
 * unlocks work, and it cannot be evicted while they are held. */
Test(defects17, d03_discard_never_resets_another_locks_count)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    vidmm_handle h0 = t_alloc(dev, &d);
    uint64_t f0 = t_submit1(dev, h0, 0, NULL);
    struct vidmm_lock_args la = t_largs(h0, VIDMM_LOCK_DISCARD);
    T_OK(vidmm_lock(dev, &la));
    vidmm_handle h1 = la.allocation;
    cr_assert_neq(h1, h0, "a Discard lock of a busy allocation did not rename");
    t_unlock(dev, h1);
    t_signal(dev, f0); /* h0: old, idle, unlocked */
    t_lock(dev, h1, 0);
    t_lock(dev, h1, 0);
    cr_assert_eq(t_query(dev, h1).lock_count, 2);
    la = t_largs(h0, VIDMM_LOCK_DISCARD);
    T_OK(vidmm_lock(dev, &la));
    cr_assert_neq(la.allocation, h1, "Discard took over the instance two other locks hold");
    cr_assert_eq(t_query(dev, h1).lock_count, 2, "Discard changed another instance's lock count");
    T_RC(vidmm_evict(dev, &h1, 1), VIDMM_E_BUSY);
    t_unlock(dev, la.allocation);
    t_unlock(dev, h1);
    t_unlock(dev, h1);
    T_RC(vidmm_unlock(dev, 1, &h1), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* 4. A Use64KBPages aperture as eviction segment: X (Alignment 64 KB, as validation requires
 * with such a segment in its sets) is evicted into it while a 4 KiB allocation holds offset 0.
 * Its aperture offset must be a multiple of 64 KB. */
Test(defects17, d04_aperture_eviction_keeps_alignment)
{
    struct vidmm_segment_desc segs[2] = {
        t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE),
        t_aper_seg(T_APE_BASE, 2 * T_MiB, VIDMM_SEGMENT_USE_64KB_PAGES),
    };
    struct vidmm_device_desc dd = t_ddesc(segs, 2);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc s = t_adesc(4 * T_KiB, T_SET(2));
    s.alignment = 65536;
    vidmm_handle small = t_alloc(dev, &s);
    t_use(dev, small, 0);
    cr_assert_eq(t_query(dev, small).offset, 0);
    struct vidmm_alloc_desc d = t_adesc(128 * T_KiB, T_SET(1));
    d.alignment = 65536;
    d.eviction_set = T_SET(2);
    vidmm_handle x = t_alloc(dev, &d);
    t_use(dev, x, 0);
    cr_assert_eq(t_query(dev, x).segment_id, 1);
    T_OK(vidmm_evict(dev, &x, 1));
    struct vidmm_alloc_info i = t_query(dev, x);
    cr_assert_eq(i.where, VIDMM_WHERE_APERTURE, "not evicted through its eviction aperture");
    cr_assert_eq(i.offset % 65536, 0, "evicted into the 64 KB-page aperture at 0x%llx",
                 (unsigned long long)i.offset);
    vidmm_device_destroy(dev);
}

/* 5. Aperture 1 holds three idle allocations; the adapter may map 1 MiB at most
 * (ApertureSegmentCommitLimit). A locked 1.5 MiB allocation must be used through an aperture
 * (spec 15.17) - which can never hold it. The submission fails, and nothing was evicted. */
Test(defects17, d05_hopeless_aperture_placement_evicts_nothing)
{
    struct vidmm_segment_desc segs[2] = {
        t_aper_seg(T_APE_BASE, 4 * T_MiB, 0),
        t_mem_seg(T_VIS_BASE, 2 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE),
    };
    struct vidmm_device_desc dd = t_ddesc(segs, 2);
    dd.aperture_commit_limit = T_MiB;
    vidmm_device *dev = t_dev(&dd);
    vidmm_handle small[3];
    for (int i = 0; i < 3; i++) {
        small[i] = t_alloc_simple(dev, 256 * T_KiB, T_SET(1));
        t_use(dev, small[i], 0);
        cr_assert_eq(t_query(dev, small[i]).where, VIDMM_WHERE_APERTURE);
    }
    vidmm_handle big = t_alloc_simple(dev, 1536 * T_KiB, T_SET(1) | T_SET(2));
    t_lock(dev, big, 0); /* its content in the backing store: usable through an aperture only */
    struct t_snap s;
    t_snap(&s, dev, small, 3);
    struct vidmm_alloc_ref ref = { big, 0 };
    uint64_t fence = 0;
    int rc = vidmm_submit(dev, &ref, 1, 0, NULL, &fence);
    cr_assert_neq(rc, 0, "a 1.5 MiB placement succeeded under a 1 MiB aperture commit limit");
    cr_assert_eq(fence, 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(t_query(dev, small[i]).where, VIDMM_WHERE_APERTURE,
                     "allocation %d was evicted for a placement that could never succeed", i);
    t_unchanged(&s, "a hopeless placement");
    t_unlock(dev, big);
    vidmm_device_destroy(dev);
}

/* 6. PitchAlignedSize just below 2^64 rounds up to 0 bytes: it is refused, and a valid
 * neighbour in the PitchAlignment segment is untouched. */
Test(defects17, d06_huge_pitch_aligned_size_refused)
{
    struct vidmm_segment_desc segs[1] = { t_mem_seg(T_VIS_BASE, T_MiB,
                                                    VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_PITCH_ALIGNMENT) };
    struct vidmm_device_desc dd = t_ddesc(segs, 1);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc ok = t_adesc(64 * T_KiB, T_SET(1));
    ok.pitch_aligned_size = 128 * T_KiB;
    vidmm_handle n = t_alloc(dev, &ok);
    t_use(dev, n, 0);
    const uint64_t huge[] = { UINT64_MAX, UINT64_MAX - 4095, UINT64_MAX - 100, (UINT64_MAX >> 1) + 1 };
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(1));
        d.pitch_aligned_size = huge[i];
        t_alloc_refused(dev, &d, "PitchAlignedSize that wraps when rounded to the page");
    }
    cr_assert_eq(t_query(dev, n).where, VIDMM_WHERE_SEGMENT);
    vidmm_device_destroy(dev);
}

/* The "also" of issue 17: DONOT_WAIT | IGNORE_SYNC on a busy allocation in a segment that is
 * not CPU-visible. IgnoreSync skips the busy check, but the lock must evict it to system memory
 * first (spec 15.14), and that eviction waits for the GPU: the lock says VIDMM_E_BUSY at once
 * instead, and changes nothing. */
Test(defects17, d07_donot_wait_ignore_sync_in_hidden_segment_never_blocks)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_LOC) | T_SET(T_APE));
    d.preferred_segment = T_PREF(0, T_LOC);
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_residency w;
    uint64_t f = t_submit1(dev, h, VIDMM_REF_WRITE, &w);
    cr_assert_eq(w.segment_id, T_LOC);
    struct vidmm_alloc_info before = t_query(dev, h);
    atomic_bool signalled = false;
    struct t_later later;
    t_signal_later(&later, dev, f, 2000, &signalled);
    const uint64_t t0 = now_ms();
    struct vidmm_lock_args la = t_largs(h, VIDMM_LOCK_DONOT_WAIT | VIDMM_LOCK_IGNORE_SYNC);
    int rc = vidmm_lock(dev, &la);
    const uint64_t took = now_ms() - t0;
    bool early = !atomic_load(&signalled);
    if (rc == 0)
        t_unlock(dev, h);
    t_later_join(&later);
    cr_assert(early, "vidmm_lock(DONOT_WAIT | IGNORE_SYNC) waited %llu ms for the GPU", (unsigned long long)took);
    cr_assert_eq(rc, VIDMM_E_BUSY, "returned %d (%s)", rc, vidmm_strerror(rc));
    struct vidmm_alloc_info after = t_query(dev, h);
    cr_assert_eq(after.where, before.where);
    cr_assert_eq(after.segment_id, before.segment_id);
    cr_assert_eq(after.offset, before.offset);
    vidmm_device_destroy(dev);
}
