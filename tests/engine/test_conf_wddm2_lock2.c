/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_lock2.c - conformance: WDDM2 CPU access (include/vidmm/wddm2.h)
 * - Lock2 / Unlock2 (spec 6.6, 15.23): flags all reserved, the placement rules (Cached, CPU-
 * visible and non-CPU-visible allocations in each kind of segment), the refcount, no waiting
 * for the GPU (nor, at the last Unlock2, for paging queued before its copy-back that waits for
 * the GPU), no move while locked (eviction, residency, the "not committed to a memory
 * segment" rule), offers, the refusal on WDDM1 devices and hostile inputs - and
 * UpdateAllocationProperty (spec 12): its refusals, the move it causes with its paging fence,
 * preference and Unmoveable. Every refusal has its exact code and changes nothing; content is
 * checked with checksums across lock, unlock, eviction and moves.
 *
 * The device (t_wddm2.h): ID 1 T_VIS CPU-visible memory, ID 2 T_LOC memory not CPU-visible,
 * ID 3 T_APE aperture. */
#include "t_wddm2.h"

#include <stdlib.h>
#include <time.h>

#define SZ (64 * T_KiB)

static vidmm_handle alloc_f(vidmm_device *dev, uint32_t set, uint32_t pref, uint32_t flags)
{
    struct vidmm_alloc_desc d = t_adesc(SZ, set);
    d.preferred_segment = pref;
    d.flags = flags;
    return t_alloc(dev, &d);
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The checksum of 'h''s content as the GPU sees it (vidmm_gpu_access). */
static uint64_t sum_of(vidmm_device *dev, vidmm_handle h)
{
    uint8_t *buf = malloc(SZ);
    cr_assert_not_null(buf);
    t_read(dev, h, 0, buf, SZ);
    uint64_t s = fnv(buf, SZ);
    free(buf);
    return s;
}

static void *lock2(vidmm_device *dev, vidmm_handle h)
{
    void *p = NULL;
    int rc = vidmm_wddm2_lock2(dev, T_PROC, h, 0, &p);
    cr_assert_eq(rc, 0, "vidmm_wddm2_lock2(%u) returned %d (%s)", h, rc, vidmm_strerror(rc));
    cr_assert_not_null(p);
    return p;
}

static void unlock2(vidmm_device *dev, vidmm_handle h)
{
    T_OK(vidmm_wddm2_unlock2(dev, h));
}

static struct vidmm_update_alloc_property_args upd(vidmm_handle h, uint32_t mask)
{
    struct vidmm_update_alloc_property_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocation = h;
    a.property_mask = mask;
    a.paging_fence = 0xFEFEFEFEu;
    return a;
}

static void expect_at(vidmm_device *dev, vidmm_handle h, uint32_t where, uint32_t seg)
{
    struct vidmm_alloc_info i = t_query(dev, h);
    cr_assert_eq(i.where, where, "allocation %u: where %u, expected %u", h, i.where, where);
    cr_assert_eq(i.segment_id, seg, "allocation %u: segment %u, expected %u", h, i.segment_id, seg);
}

/* ---------------------------------------------------------------------------------------------
 * Arguments.
 * ------------------------------------------------------------------------------------------- */

/* spec 6.6 / 15.23: "D3DDDICB_LOCK2FLAGS has no defined flag: all 32 bits reserved and must be
 * 0"; Flags.Value != 0 -> STATUS_INVALID_PARAMETER. Every bit alone, and all of them. */
Test(wddm2_lock2, flags_not_zero_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    w2_resident(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    for (int b = 0; b < 32; b++) {
        void *p = (void *)0x1234;
        T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, h, 1u << b, &p), VIDMM_E_INVALID_ARG);
        cr_assert_eq(p, (void *)0x1234, "bit %d: '*data' written on a refusal", b);
    }
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, h, 0xFFFFFFFFu, &p), VIDMM_E_INVALID_ARG);
    cr_assert_eq(t_query(dev, h).lock_count, 0);
    vidmm_device_destroy(dev);
}

/* wddm2.h: hostile inputs - NULL 'dev' or 'data', an unknown handle. */
Test(wddm2_lock2, hostile_arguments_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    struct t_snap s;
    t_snap1(&s, dev, h);
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(NULL, T_PROC, h, 0, &p), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, h, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, T_BAD_HANDLE, 0, &p), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, 0, 0, &p), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_unlock2(NULL, h), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_unlock2(dev, T_BAD_HANDLE), VIDMM_E_INVALID_ARG);
    cr_assert_null(p);
    vidmm_device_destroy(dev);
}

/* spec 6.6 (dxgkrnl): Unlock2 of an allocation with no CPU address fails ("Allocation is not
 * locked"): never locked, and one Unlock2 too many. */
Test(wddm2_lock2, unlock_not_locked_and_double_unlock_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    w2_resident(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_wddm2_unlock2(dev, h), VIDMM_E_INVALID_ARG);
    lock2(dev, h);
    unlock2(dev, h);
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_wddm2_unlock2(dev, h), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* wddm2.h: a destroyed allocation's handle names nothing; its lock ended with it. */
Test(wddm2_lock2, destroyed_allocation_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    lock2(dev, h);
    T_OK(vidmm_alloc_destroy(dev, h));
    void *p = NULL;
    T_RC(vidmm_wddm2_unlock2(dev, h), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_lock2(dev, T_PROC, h, 0, &p), VIDMM_E_INVALID_ARG);
    cr_assert_null(p);
    vidmm_device_destroy(dev);
}

/* spec 15.27: after removal every call returns DEVICE_REMOVED; outstanding locks are gone. */
Test(wddm2_lock2, removed_device)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle h2 = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    lock2(dev, h);
    T_OK(vidmm_device_remove(dev));
    void *p = NULL;
    T_RC(vidmm_wddm2_unlock2(dev, h), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_wddm2_lock2(dev, T_PROC, h2, 0, &p), VIDMM_E_DEVICE_REMOVED);
    cr_assert_null(p);
    struct vidmm_update_alloc_property_args u = upd(h2, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    T_RC(vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_DEVICE_REMOVED);
    vidmm_device_destroy(dev);
}

/* wddm2.h: "Every function here returns VIDMM_E_INVALID_ARG on a device not created in WDDM2
 * mode" - and WDDM1's vidmm_lock() keeps working there. */
Test(wddm2_lock2, refused_on_wddm1_device)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    struct t_snap s;
    t_snap1(&s, dev, h);
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, h, 0, &p), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_unlock2(dev, h), VIDMM_E_INVALID_ARG);
    struct vidmm_update_alloc_property_args u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    cr_assert_null(p);
    uint8_t *q = t_lock(dev, h, 0);
    cr_assert(t_is_fill(q, SZ, T_FILL));
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 10 (Lock2 is a lock): only the creator of a shared allocation may lock it. */
Test(wddm2_lock2, shared_other_process_refused)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_alloc_desc d = t_adesc(SZ, T_SET(T_VIS));
    d.kind = VIDMM_ALLOC_KIND_SHARED;
    vidmm_handle h = t_alloc(dev, &d);
    struct t_snap s;
    t_snap1(&s, dev, h);
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_OTHER_PROC, h, 0, &p), VIDMM_E_INVALID_ARG);
    lock2(dev, h);
    unlock2(dev, h);
    vidmm_device_destroy(dev);
}

/* ---------------------------------------------------------------------------------------------
 * Placement rules (spec 6.6, 15.23).
 * ------------------------------------------------------------------------------------------- */

/* spec 6.6: "Allocations in system memory ... always lock" - never placed: its backing store,
 * with the fill pattern. */
Test(wddm2_lock2, not_resident_always_locks)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_LOC), 0, VIDMM_ALLOC_CPU_VISIBLE);
    uint8_t *p = lock2(dev, h);
    cr_assert(t_is_fill(p, SZ, T_FILL), "a new allocation's lock shows its fill pattern");
    expect_at(dev, h, VIDMM_WHERE_SYSMEM, 0);
    unlock2(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 6.6: "CpuVisible allocations in a CpuVisible memory segment always lock" - in place, and
 * what the CPU writes is what the GPU reads there. */
Test(wddm2_lock2, cpu_visible_in_cpu_visible_segment_locks_in_place)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_APE), T_PREF(0, T_VIS), VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    const struct vidmm_alloc_info before = t_query(dev, h);
    cr_assert_eq(before.segment_id, T_VIS);
    uint8_t *p = lock2(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    cr_assert_eq(t_query(dev, h).offset, before.offset, "moved by the lock");
    t_bytes(p, SZ, 7);
    const uint64_t want = fnv(p, SZ);
    unlock2(dev, h);
    cr_assert_eq(sum_of(dev, h), want, "the GPU does not see what the CPU wrote");
    cr_assert(t_query(dev, h).dirty, "spec 15.6: a writable CPU lock on its segment location dirties it");
    vidmm_device_destroy(dev);
}

/* spec 6.6: Cached CpuVisible allocations "must be in an aperture segment or not resident";
 * 15.23: listing an aperture, it is "first moved there" - content kept. */
Test(wddm2_lock2, cached_in_memory_segment_moves_to_aperture)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_APE), T_PREF(0, T_VIS),
                             VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_CACHED);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    uint8_t buf[256];
    t_bytes(buf, sizeof buf, 3);
    t_write(dev, h, 4096, buf, sizeof buf);
    const uint64_t want = sum_of(dev, h);
    uint8_t *p = lock2(dev, h);
    expect_at(dev, h, VIDMM_WHERE_APERTURE, T_APE);
    cr_assert_eq(fnv(p, SZ), want, "the move lost content");
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_IN_SHARED_MEMORY);
    unlock2(dev, h);
    cr_assert_eq(sum_of(dev, h), want);
    vidmm_device_destroy(dev);
}

/* spec 15.23: "Cached allocation resident in a memory segment -> STATUS_INVALID_PARAMETER"
 * without an aperture segment; not resident it locks (spec 6.6). */
Test(wddm2_lock2, cached_in_memory_segment_without_aperture_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_CACHED);
    vidmm_handle n = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_CACHED);
    w2_resident(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, h, 0, &p), VIDMM_E_INVALID_ARG);
    cr_assert_null(p);
    lock2(dev, n); /* not resident: locks */
    unlock2(dev, n);
    vidmm_device_destroy(dev);
}

/* spec 6.6: CpuVisible allocations in a non-CpuVisible memory segment "must include an aperture
 * segment in their supported set" - with one, moved there (15.23) ... */
Test(wddm2_lock2, cpu_visible_in_hidden_segment_moves_to_aperture)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_LOC) | T_SET(T_APE), T_PREF(0, T_LOC), VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_LOC);
    uint8_t buf[512];
    t_bytes(buf, sizeof buf, 11);
    t_write(dev, h, 0, buf, sizeof buf);
    const uint64_t want = sum_of(dev, h);
    uint8_t *p = lock2(dev, h);
    expect_at(dev, h, VIDMM_WHERE_APERTURE, T_APE);
    cr_assert_eq(fnv(p, SZ), want);
    unlock2(dev, h);
    vidmm_device_destroy(dev);
}

/* ... without one, refused (15.23: STATUS_INVALID_PARAMETER). */
Test(wddm2_lock2, cpu_visible_in_hidden_segment_without_aperture_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_LOC), 0, VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, h, 0, &p), VIDMM_E_INVALID_ARG);
    cr_assert_null(p);
    vidmm_device_destroy(dev);
}

/* spec 6.6: "Allocations ... mapped through an aperture always lock" - in place. */
Test(wddm2_lock2, aperture_always_locks)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_APE), 0, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_CACHED);
    w2_resident(dev, h);
    const struct vidmm_alloc_info before = t_query(dev, h);
    cr_assert_eq(before.where, VIDMM_WHERE_APERTURE);
    uint8_t *p = lock2(dev, h);
    const struct vidmm_alloc_info after = t_query(dev, h);
    cr_assert_eq(after.where, VIDMM_WHERE_APERTURE);
    cr_assert_eq(after.offset, before.offset);
    t_bytes(p, SZ, 5);
    const uint64_t want = fnv(p, SZ);
    unlock2(dev, h);
    cr_assert_eq(sum_of(dev, h), want);
    vidmm_device_destroy(dev);
}

/* spec 6.6: "A non-CpuVisible allocation can only be locked if it supports an aperture segment
 * or is already in system memory (not resident)"; 15.23: resident in a memory segment without
 * an aperture -> STATUS_INVALID_PARAMETER; with one, moved there. */
Test(wddm2_lock2, non_cpu_visible_rules)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle no_ap = alloc_f(dev, T_SET(T_VIS), 0, 0);
    vidmm_handle with_ap = alloc_f(dev, T_SET(T_VIS) | T_SET(T_APE), T_PREF(0, T_VIS), 0);
    w2_resident(dev, no_ap);
    w2_resident(dev, with_ap);
    struct t_snap s;
    t_snap(&s, dev, (vidmm_handle[]){ no_ap, with_ap }, 2);
    void *p = NULL;
    /* even in a CPU-visible memory segment */
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, no_ap, 0, &p), VIDMM_E_INVALID_ARG);
    cr_assert_null(p);
    lock2(dev, with_ap);
    expect_at(dev, with_ap, VIDMM_WHERE_APERTURE, T_APE);
    unlock2(dev, with_ap);
    /* not resident: locks, whatever its set */
    w2_evict(dev, no_ap, 0);
    expect_at(dev, no_ap, VIDMM_WHERE_SYSMEM, 0);
    lock2(dev, no_ap);
    unlock2(dev, no_ap);
    vidmm_device_destroy(dev);
}

/* spec 6.6: "if it is locked while non-resident and has no aperture segment, VidMm must not
 * commit it to a memory segment for the duration of the lock" - MakeResident is refused
 * (VIDMM_E_NOT_AVAILABLE, nothing changed) and succeeds after Unlock2, content intact. */
Test(wddm2_lock2, locked_not_resident_not_committed_to_memory_segment)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_LOC), 0, 0);
    uint8_t *p = lock2(dev, h);
    t_bytes(p, SZ, 21);
    const uint64_t want = fnv(p, SZ);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_make_resident_args mr;
    T_REFUSED(&s, w2_mr_rc(dev, &h, 1, 0, &mr), VIDMM_E_NOT_AVAILABLE);
    cr_assert_eq(w2_refs(dev, h), 0, "a refused make-resident changed the reference count");
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    unlock2(dev, h);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_LOC);
    cr_assert_eq(sum_of(dev, h), want, "content lost on the way into the segment");
    vidmm_device_destroy(dev);
}

/* spec 6.6 / 15.23: while locked, a non-resident allocation with an aperture in its set is
 * made resident through the aperture only (its pointer stays valid), never in a memory
 * segment - even its preferred one. */
Test(wddm2_lock2, locked_not_resident_made_resident_through_aperture)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_APE), T_PREF(0, T_VIS), VIDMM_ALLOC_CPU_VISIBLE);
    uint8_t *p = lock2(dev, h);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_APERTURE, T_APE);
    t_bytes(p, SZ, 9); /* the pointer still shows the content */
    const uint64_t want = fnv(p, SZ);
    cr_assert_eq(sum_of(dev, h), want, "the pointer and the aperture disagree");
    unlock2(dev, h);
    vidmm_device_destroy(dev);
}

/* ---------------------------------------------------------------------------------------------
 * Refcount, GPU, eviction, offers, the two lock kinds.
 * ------------------------------------------------------------------------------------------- */

/* spec 6.6 (dxgkrnl): an allocation with a CPU address - Lock2 returns it and increments a
 * per-allocation refcount; Unlock2 decrements, the mapping ends at 0. */
Test(wddm2_lock2, nested_lock_same_pointer_refcount)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    void *p1 = lock2(dev, h), *p2 = lock2(dev, h), *p3 = lock2(dev, h);
    cr_assert_eq(p1, p2);
    cr_assert_eq(p1, p3);
    cr_assert_eq(t_query(dev, h).lock_count, 3);
    unlock2(dev, h);
    unlock2(dev, h);
    cr_assert_eq(t_query(dev, h).lock_count, 1);
    T_RC(vidmm_evict(dev, &h, 1), VIDMM_E_BUSY); /* still locked */
    unlock2(dev, h);
    cr_assert_eq(t_query(dev, h).lock_count, 0);
    T_RC(vidmm_wddm2_unlock2(dev, h), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* spec 6.6: "VidMm no longer ... tracks GPU usage" for locks, 15.23: "no busy waiting in the
 * engine (UMD's job)": a Lock2 of an allocation an unsignalled submission uses returns at once. */
Test(wddm2_lock2, no_wait_for_gpu)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    const uint64_t va = w2_reserve(sp, 0, SZ);
    w2_map(sp, va, h, 0, SZ);
    w2_drain(dev);
    struct vidmm_va_ref ref = { va, SZ, VIDMM_REF_WRITE, 0 };
    uint64_t fence = 0;
    T_OK(vidmm_va_submit(sp, &ref, 1, 0, &fence));
    cr_assert(t_query(dev, h).busy);
    lock2(dev, h); /* would hang here if it waited for the fence */
    cr_assert(t_query(dev, h).busy, "the lock waited for the GPU");
    unlock2(dev, h);
    T_OK(vidmm_fence_signal(dev, fence));
    vidmm_va_space_destroy(sp);
    vidmm_device_destroy(dev);
}

/* wddm2.h (as WDDM1 locks, spec 15.14): a locked allocation is not moved - Evict to a count of 0
 * leaves it where it is, it is no victim of a placement needing its space, vidmm_evict() says
 * BUSY. After Unlock2 it goes, and its content survives eviction and page-in. */
Test(wddm2_lock2, not_moved_while_locked_content_across_eviction)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    const struct vidmm_alloc_info before = t_query(dev, h);
    uint8_t *p = lock2(dev, h);
    t_bytes(p, SZ, 33);
    const uint64_t want = fnv(p, SZ);
    w2_evict(dev, h, 0); /* its count reaches 0: evicted now - unless locked */
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    /* Fill T_VIS with resident-listed allocations: the locked one is never a victim. */
    struct vidmm_alloc_desc d = t_adesc(T_VIS_SIZE - SZ, T_SET(T_VIS));
    vidmm_handle big = t_alloc(dev, &d);
    w2_resident(dev, big);
    vidmm_handle more = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    struct vidmm_make_resident_args mr;
    T_RC(w2_mr_rc(dev, &more, 1, 0, &mr), VIDMM_E_NO_MEMORY);
    const struct vidmm_alloc_info during = t_query(dev, h);
    cr_assert_eq(during.where, VIDMM_WHERE_SEGMENT);
    cr_assert_eq(during.offset, before.offset, "moved while locked");
    T_RC(vidmm_evict(dev, &h, 1), VIDMM_E_BUSY);
    cr_assert_eq(fnv(p, SZ), want);
    unlock2(dev, h);
    T_OK(vidmm_evict(dev, &h, 1));
    expect_at(dev, h, VIDMM_WHERE_SYSMEM, 0);
    cr_assert_eq(sum_of(dev, h), want, "content lost by the eviction");
    w2_evict(dev, big, 0);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    cr_assert_eq(sum_of(dev, h), want, "content lost by the page-in");
    p = lock2(dev, h);
    cr_assert_eq(fnv(p, SZ), want, "the relock shows other bytes");
    unlock2(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 9, 11, 15.20: an offered allocation cannot be locked until reclaimed. */
Test(wddm2_lock2, offered_refused_until_reclaimed)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    struct vidmm_offer_args o;
    memset(&o, 0, sizeof o);
    o.size_of = sizeof o;
    o.allocations = &h;
    o.count = 1;
    o.priority = VIDMM_OFFER_PRIORITY_HIGH;
    T_OK(vidmm_offer(dev, &o));
    struct t_snap s;
    t_snap1(&s, dev, h);
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, h, 0, &p), VIDMM_E_INVALID_ARG);
    cr_assert_null(p);
    struct vidmm_reclaim_args r;
    memset(&r, 0, sizeof r);
    r.size_of = sizeof r;
    r.allocations = &h;
    r.count = 1;
    int rc = vidmm_reclaim(dev, &r);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "vidmm_reclaim() returned %d", rc);
    lock2(dev, h);
    /* and a locked allocation cannot be offered (wddm2.h vidmm_offer) */
    T_RC(vidmm_offer(dev, &o), VIDMM_E_INVALID_ARG);
    unlock2(dev, h);
    vidmm_device_destroy(dev);
}

/* wddm2.h (engine policy): vidmm_lock() and Lock2 locks do not mix, either way. */
Test(wddm2_lock2, lock_kinds_do_not_mix)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    vidmm_handle b = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, a);
    w2_resident(dev, b);
    t_lock(dev, a, 0); /* WDDM1-style lock, still available on a WDDM2 device */
    lock2(dev, b);
    struct t_snap s;
    t_snap(&s, dev, (vidmm_handle[]){ a, b }, 2);
    void *p = NULL;
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, T_PROC, a, 0, &p), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_unlock2(dev, a), VIDMM_E_INVALID_ARG);
    struct vidmm_lock_args la = t_largs(b, 0);
    T_REFUSED(&s, vidmm_lock(dev, &la), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_unlock(dev, 1, &b), VIDMM_E_INVALID_ARG);
    cr_assert_eq(t_query(dev, a).lock_count, 1);
    cr_assert_eq(t_query(dev, b).lock_count, 1);
    t_unlock(dev, a);
    unlock2(dev, b);
    vidmm_device_destroy(dev);
}

/* spec 4.1, 15.14 (PermanentSysMem locks its system-memory copy) on Lock2: the copy, and at
 * the last Unlock2 it goes back to the segment copy (a TRANSFER to the segment). */
Test(wddm2_lock2, permanent_sysmem_copy_back)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_PERMANENT_SYSMEM);
    w2_resident(dev, h);
    uint8_t *p = lock2(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    t_bytes(p, SZ, 44);
    const uint64_t want = fnv(p, SZ);
    t_log_clear(dev);
    unlock2(dev, h);
    static struct t_log_buf lb;
    t_log_take(dev, &lb);
    ptrdiff_t i = t_log_find(&lb, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert(i >= 0, "no copy-back TRANSFER at the last Unlock2");
    cr_assert_eq(lb.op[i].dst.segment_id, T_VIS);
    cr_assert_eq(sum_of(dev, h), want, "the segment copy is not what the CPU wrote");
    vidmm_device_destroy(dev);
}

/* wddm2.h (as vidmm_unlock(), device.h): the copy-back the last Unlock2 of a PermanentSysMem
 * allocation queues is done when the call returns - but Unlock2 waits for the GPU no more than
 * Lock2 does (spec 6.6, 15.23). On a device without paging threads the caller's thread runs the
 * queue, and an operation queued before the copy-back may have to wait for a submission's
 * fence: the eviction of an allocation the GPU still reads, queued by the Evict that dropped its
 * last residency reference (queued, not run: the Evict returns at once). Waiting for that fence
 * with no deadline is waiting for the caller itself (nothing else signals it): Unlock2 never
 * returned (as vidmm_unlock() did: test_paging_wait.c). The Unlock2 runs in a thread here; the
 * test signals the fence after 5 s whatever happened, so a stuck Unlock2 fails the test instead
 * of hanging it. Nothing is lost either way: the copy-back reaches the segment once the GPU
 * uses the allocation, and the evicted one's content survives. */
struct unlocker2 {
    vidmm_device *dev;
    vidmm_handle h;
    int rc;
    atomic_bool done;
};

static void *unlock2_thread(void *arg)
{
    struct unlocker2 *u = arg;
    u->rc = vidmm_wddm2_unlock2(u->dev, u->h);
    atomic_store(&u->done, true);
    return NULL;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

Test(wddm2_lock2, unlock2_behind_paging_that_waits_for_the_gpu_returns, .timeout = 60)
{
    /* The standard WDDM2 device (t_wddm2.h: no paging threads), with a short wait timeout. */
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP);
    struct vidmm_device_desc dd = t_ddesc(segs, 3);
    dd.flags |= VIDMM_DEVICE_WDDM2;
    dd.wait_timeout_ns = 2000000; /* 2 ms, as the fuzzer's */
    vidmm_device *dev = t_dev(&dd);
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    /* A: PermanentSysMem, resident, idle; its last Unlock2 queues a copy-back (after B's eviction). */
    vidmm_handle a = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_PERMANENT_SYSMEM);
    w2_resident(dev, a);
    const uint64_t va_a = w2_reserve(sp, 0, SZ);
    w2_map(sp, va_a, a, 0, SZ);
    /* B: resident in local memory (not CPU-visible), its content known, read by work not done. */
    vidmm_handle b = alloc_f(dev, T_SET(T_LOC), 0, 0);
    w2_resident(dev, b);
    uint8_t *want_b = malloc(SZ), *got = malloc(SZ);
    cr_assert(want_b && got);
    t_bytes(want_b, SZ, 0xB0B);
    t_write(dev, b, 0, want_b, SZ);
    const uint64_t va_b = w2_reserve(sp, 0, SZ);
    w2_map(sp, va_b, b, 0, SZ);
    w2_drain(dev);
    struct vidmm_va_ref ref = { va_b, SZ, 0, 0 };
    uint64_t fence = 0;
    T_OK(vidmm_va_submit(sp, &ref, 1, 0, &fence));
    cr_assert(t_query(dev, b).busy);
    /* Its last residency reference dropped: evicted now - a TRANSFER queued that waits for the
     * GPU's reads, not run (nobody waits for paging yet). */
    t_log_clear(dev);
    w2_evict(dev, b, 0);
    static struct t_log_buf lb;
    t_log_take(dev, &lb);
    cr_assert_eq(t_log_find(&lb, VIDMM_PAGING_TRANSFER, b, 0), -1, "B's eviction ran: nothing waits for the GPU");
    uint8_t *p = lock2(dev, a);
    memset(p, 0x6B, SZ);
    struct unlocker2 u = { .dev = dev, .h = a, .rc = -1 };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, unlock2_thread, &u), 0);
    const double end = now_ms() + 5000;
    while (!atomic_load(&u.done) && now_ms() < end) {
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
    const bool returned = atomic_load(&u.done);
    T_OK(vidmm_fence_signal(dev, fence)); /* lets a stuck Unlock2 go */
    pthread_join(th, NULL);
    cr_assert(returned, "vidmm_wddm2_unlock2() of an idle allocation waited for a fence only its caller could signal");
    cr_assert_eq(u.rc, 0, "vidmm_wddm2_unlock2: %s", vidmm_strerror(u.rc));
    cr_assert_eq(t_query(dev, a).lock_count, 0);
    /* Nothing lost either way: once the GPU uses A (its paging waited for first), its segment
     * copy holds the CPU's bytes; B's content survived its eviction. */
    struct vidmm_va_ref ref_a = { va_a, SZ, 0, 0 };
    uint64_t fence_a = 0;
    T_OK(vidmm_va_submit(sp, &ref_a, 1, 0, &fence_a));
    T_OK(vidmm_fence_signal(dev, fence_a));
    struct vidmm_va_translation tr;
    T_OK(vidmm_va_translate(sp, va_a, &tr));
    cr_assert_eq(tr.segment_id, T_VIS);
    cr_assert(t_is_fill(tr.cpu, SZ, 0x6B6B6B6Bu), "A's copy-back is not in its segment");
    cr_assert_neq((void *)tr.cpu, (void *)p, "A's segment copy is its lock pointer");
    expect_at(dev, b, VIDMM_WHERE_SYSMEM, 0);
    t_read(dev, b, 0, got, SZ);
    cr_assert(memcmp(got, want_b, SZ) == 0, "B's content changed across its eviction");
    free(want_b);
    free(got);
    vidmm_va_space_destroy(sp);
    vidmm_device_destroy(dev);
}

/* ---------------------------------------------------------------------------------------------
 * UpdateAllocationProperty (spec 12).
 * ------------------------------------------------------------------------------------------- */

/* wddm2.h: argument refusals, and every creation rule of spec 15.2 on the changed descriptor. */
Test(wddm2_update, refusals_change_nothing)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_alloc_desc d = t_adesc(SZ, T_SET(T_VIS) | T_SET(T_LOC));
    d.preferred_segment = T_PREF(0, T_VIS);
    d.flags |= VIDMM_ALLOC_ACCESSED_PHYSICALLY | VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION;
    vidmm_handle h = t_alloc(dev, &d);
    w2_resident(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_update_alloc_property_args u;
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(NULL, &u), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, NULL), VIDMM_E_INVALID_ARG);
    u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.size_of = sizeof u - 1;
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    u = upd(h, 0); /* nothing to update */
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    u = upd(h, 0x10u); /* unknown mask bit */
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.flags = 0x4u; /* D3DDDI_UPDATEALLOCPROPERTY_FLAGS.Reserved */
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.reserved = 1;
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    u = upd(T_BAD_HANDLE, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    /* spec 15.2 on the new set: empty, a segment the device lacks */
    u = upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET);
    u.supported_segment_set = 0;
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    u.supported_segment_set = T_SET(T_VIS) | T_SET(5);
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    /* the current preference (T_VIS) outside the new set */
    u.supported_segment_set = T_SET(T_LOC);
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    /* a new preference outside the set; reserved preference bits (spec 3.1) */
    u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.preferred_segment = T_PREF(0, T_APE);
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    u.preferred_segment = T_PREF(0, T_VIS) | 0x40000000u;
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    /* spec 15.2: ExplicitResidencyNotification requires AccessedPhysically */
    u = upd(h, VIDMM_UPDATE_SET_ACCESSED_PHYSICALLY);
    u.flags = 0;
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    cr_assert_eq(u.paging_fence, 0xFEFEFEFEu, "paging_fence written on a refusal");
    /* the properties did not change: a valid preference change naming T_LOC still passes only
     * because T_LOC is still in the set, and T_VIS is still allowed */
    u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.preferred_segment = T_PREF(0, T_LOC) | T_PREF(1, T_VIS);
    T_OK(vidmm_wddm2_update_alloc_property(dev, &u));
    cr_assert_eq(u.paging_fence, 0, "a preference change moves nothing");
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    vidmm_device_destroy(dev);
}

/* spec 12: SetSupportedSegmentSet on a resident-listed allocation placed outside the new set
 * moves it, and the call returns the paging fence to wait for; content survives. */
Test(wddm2_update, new_set_moves_resident_with_paging_fence)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_LOC), T_PREF(0, T_VIS), VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    uint8_t buf[1024];
    t_bytes(buf, sizeof buf, 77);
    t_write(dev, h, 8192, buf, sizeof buf);
    const uint64_t want = sum_of(dev, h);
    t_log_clear(dev);
    struct vidmm_update_alloc_property_args u =
        upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET | VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.supported_segment_set = T_SET(T_LOC);
    u.preferred_segment = T_PREF(0, T_LOC); /* the old one (T_VIS) would be outside the set */
    T_RC(vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_PENDING);
    cr_assert_neq(u.paging_fence, 0);
    cr_assert_gt(u.paging_fence, vidmm_wddm2_paging_fence_completed(dev));
    T_OK(vidmm_wddm2_paging_fence_wait(dev, u.paging_fence, UINT64_MAX));
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_LOC);
    cr_assert_eq(w2_refs(dev, h), 1, "the residency reference changed");
    static struct t_log_buf lb;
    t_log_take(dev, &lb);
    ptrdiff_t i = t_log_find(&lb, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert(i >= 0, "no TRANSFER for the move");
    cr_assert_eq(lb.op[i].src.segment_id, T_VIS);
    cr_assert_eq(lb.op[i].dst.segment_id, T_LOC);
    cr_assert_leq(lb.op[i].fence, u.paging_fence);
    cr_assert_eq(sum_of(dev, h), want, "content lost by the move");
    /* the old segment is no longer allowed: a later make-resident keeps it in T_LOC */
    w2_evict(dev, h, 0);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_LOC);
    cr_assert_eq(sum_of(dev, h), want);
    vidmm_device_destroy(dev);
}

/* wddm2.h: not on the residency list, it is evicted instead (the next make-resident places it
 * in the new set); a set that still holds it moves nothing. */
Test(wddm2_update, new_set_evicts_unlisted_or_keeps_in_place)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_LOC) | T_SET(T_APE), T_PREF(0, T_VIS),
                             VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    struct vidmm_update_alloc_property_args u = upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET);
    u.supported_segment_set = T_SET(T_VIS) | T_SET(T_LOC);
    T_OK(vidmm_wddm2_update_alloc_property(dev, &u));
    cr_assert_eq(u.paging_fence, 0);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    uint8_t buf[64];
    t_bytes(buf, sizeof buf, 2);
    t_write(dev, h, 0, buf, sizeof buf);
    const uint64_t want = sum_of(dev, h);
    w2_evict(dev, h, VIDMM_EVICT_ONLY_IF_NECESSARY); /* off the list, still in T_VIS */
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_VIS);
    u = upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET | VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.supported_segment_set = T_SET(T_LOC);
    u.preferred_segment = T_PREF(0, T_LOC);
    int rc = vidmm_wddm2_update_alloc_property(dev, &u);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "returned %d", rc);
    cr_assert_neq(u.paging_fence, 0);
    expect_at(dev, h, VIDMM_WHERE_SYSMEM, 0);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_LOC);
    cr_assert_eq(sum_of(dev, h), want);
    vidmm_device_destroy(dev);
}

/* spec 12 (SetPreferredSegment): the next placement follows the new preference. */
Test(wddm2_update, preference_used_by_next_placement)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_LOC), T_PREF(0, T_VIS), VIDMM_ALLOC_CPU_VISIBLE);
    struct vidmm_update_alloc_property_args u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.preferred_segment = T_PREF(0, T_LOC);
    T_OK(vidmm_wddm2_update_alloc_property(dev, &u));
    cr_assert_eq(u.paging_fence, 0);
    w2_resident(dev, h);
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_LOC);
    vidmm_device_destroy(dev);
}

/* wddm2.h: a move of a locked allocation is refused (BUSY: its pointer must stay valid), of a
 * pinned one CANT_EVICT_PINNED (spec 15.4); nothing changes, and Unmoveable pins / unpins. */
Test(wddm2_update, locked_or_unmoveable_not_moved)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_LOC), T_PREF(0, T_VIS), VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    lock2(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_update_alloc_property_args u =
        upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET | VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.supported_segment_set = T_SET(T_LOC);
    u.preferred_segment = T_PREF(0, T_LOC); /* the old one (T_VIS) would be outside the set */
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_BUSY);
    unlock2(dev, h);
    struct vidmm_update_alloc_property_args pin = upd(h, VIDMM_UPDATE_SET_UNMOVEABLE);
    pin.flags = VIDMM_UPDATE_UNMOVEABLE;
    T_OK(vidmm_wddm2_update_alloc_property(dev, &pin));
    cr_assert(t_query(dev, h).pinned);
    T_RC(vidmm_evict(dev, &h, 1), VIDMM_E_CANT_EVICT_PINNED);
    t_snap1(&s, dev, h);
    u = upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET | VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.supported_segment_set = T_SET(T_LOC);
    u.preferred_segment = T_PREF(0, T_LOC);
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_CANT_EVICT_PINNED);
    pin.flags = 0;
    T_OK(vidmm_wddm2_update_alloc_property(dev, &pin));
    cr_assert_not(t_query(dev, h).pinned);
    u = upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET | VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.supported_segment_set = T_SET(T_LOC);
    u.preferred_segment = T_PREF(0, T_LOC);
    int rc = vidmm_wddm2_update_alloc_property(dev, &u);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "returned %d", rc);
    T_OK(vidmm_wddm2_paging_fence_wait(dev, u.paging_fence, UINT64_MAX));
    expect_at(dev, h, VIDMM_WHERE_SEGMENT, T_LOC);
    vidmm_device_destroy(dev);
}

/* wddm2.h: no room for the move (the new set's segment full of resident-listed allocations) ->
 * NO_VIDEO_MEMORY, and the properties are unchanged: it stays, and the old set still holds. */
Test(wddm2_update, no_room_for_move_changes_nothing)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_alloc_desc d = t_adesc(T_LOC_SIZE, T_SET(T_LOC));
    vidmm_handle full = t_alloc(dev, &d);
    w2_resident(dev, full);
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS) | T_SET(T_LOC), T_PREF(0, T_VIS), VIDMM_ALLOC_CPU_VISIBLE);
    w2_resident(dev, h);
    struct t_snap s;
    t_snap(&s, dev, (vidmm_handle[]){ full, h }, 2);
    struct vidmm_update_alloc_property_args u =
        upd(h, VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET | VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.supported_segment_set = T_SET(T_LOC);
    u.preferred_segment = T_PREF(0, T_LOC); /* the old one (T_VIS) would be outside the set */
    T_REFUSED(&s, vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_NO_VIDEO_MEMORY);
    /* unchanged: the preference T_VIS is still in its set (it would be refused otherwise) */
    u = upd(h, VIDMM_UPDATE_SET_PREFERRED_SEGMENT);
    u.preferred_segment = T_PREF(0, T_VIS);
    T_OK(vidmm_wddm2_update_alloc_property(dev, &u));
    vidmm_device_destroy(dev);
}

/* spec 12 (SetAccessedPhysically): the flag follows flags' value. */
Test(wddm2_update, accessed_physically)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_f(dev, T_SET(T_VIS), 0, VIDMM_ALLOC_CPU_VISIBLE);
    struct vidmm_update_alloc_property_args u = upd(h, VIDMM_UPDATE_SET_ACCESSED_PHYSICALLY);
    u.flags = VIDMM_UPDATE_ACCESSED_PHYSICALLY;
    T_OK(vidmm_wddm2_update_alloc_property(dev, &u));
    u.flags = 0;
    T_OK(vidmm_wddm2_update_alloc_property(dev, &u));
    vidmm_device_destroy(dev);
}
