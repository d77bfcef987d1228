/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_lock.c - conformance: CPU locks. One test per validity rule of spec
 * 6.3 (suite lock_rules, r01..r13, plus the "neutralizing" paragraph, n1..n4), then the lock
 * items of spec 15: validation (15.11), relock (15.12), synchronisation (15.13), placement
 * (15.14), alternate VAs (15.16), rendering with locked allocations (15.17) and renaming
 * (15.18). Every refused call is checked for its exact error and for "nothing changed"
 * (t_snap / T_REFUSED: queries, content, statistics, paging log).
 *
 * Tests that would block (a lock or a submission waiting for a fence) have a thread signal the
 * fence later (t_signal_later) and a Criterion time limit. */
#include "t_engine.h"

#include <stdlib.h>
#include <string.h>

/* Aperture-capable, CPU-visible: placed in T_VIS by make-resident, may go to T_APE. */
#define SET_VA (T_SET(T_VIS) | T_SET(T_APE))

static vidmm_handle mk(vidmm_device *dev, uint32_t set, uint32_t flags, uint32_t kind)
{
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, set);
    d.flags |= flags;
    d.kind = kind;
    return t_alloc(dev, &d);
}

static int lk(vidmm_device *dev, vidmm_handle h, uint32_t flags, struct vidmm_lock_args *out)
{
    struct vidmm_lock_args a = t_largs(h, flags);
    int rc = vidmm_lock(dev, &a);
    if (out)
        *out = a;
    return rc;
}

/* A lock with 'flags' on 'h' is refused with 'err' and nothing changes; 'args' too. */
static void refused(vidmm_device *dev, vidmm_handle h, uint32_t flags, int err, const char *why)
{
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_lock_args a = t_largs(h, flags);
    int rc = vidmm_lock(dev, &a);
    cr_assert_eq(rc, err, "%s: vidmm_lock(flags 0x%x) returned %d (%s), expected %d (%s)", why, flags, rc,
                 vidmm_strerror(rc), err, vidmm_strerror(err));
    cr_assert_eq(a.allocation, h, "%s: refused lock changed args.allocation", why);
    t_unchanged(&s, why);
}

/* A lock with 'flags' succeeds; it is undone at once. */
static void accepted(vidmm_device *dev, vidmm_handle h, uint32_t flags, const char *why)
{
    struct vidmm_lock_args a = t_largs(h, flags);
    int rc = vidmm_lock(dev, &a);
    cr_assert_eq(rc, 0, "%s (positive control): vidmm_lock(flags 0x%x) returned %d (%s)", why, flags, rc,
                 vidmm_strerror(rc));
    t_unlock(dev, a.allocation);
}

static vidmm_device *swz_dev(void)
{
    return t_dev_std_ex(2, NULL, 0);
}

static vidmm_handle mk_swz(vidmm_device *dev, struct t_swz *z, uint32_t set)
{
    t_swz_init(z);
    struct vidmm_alloc_desc d = t_swz_desc(z, set);
    return t_alloc(dev, &d);
}

/* =============================================================================================
 * spec 6.3: validity rules.
 * =========================================================================================== */

/* spec 6.3 rule 1: "ReadOnly and WriteOnly together are invalid." */
Test(lock_rules, r01_readonly_and_writeonly)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    refused(dev, h, VIDMM_LOCK_READ_ONLY | VIDMM_LOCK_WRITE_ONLY, VIDMM_E_INVALID_ARG, "READ_ONLY | WRITE_ONLY");
    accepted(dev, h, VIDMM_LOCK_READ_ONLY, "READ_ONLY");
    accepted(dev, h, VIDMM_LOCK_WRITE_ONLY, "WRITE_ONLY");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 2: "IgnoreSync and AcquireAperture together are invalid." */
Test(lock_rules, r02_ignore_sync_and_acquire_aperture)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    refused(dev, h, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_ACQUIRE_APERTURE, VIDMM_E_INVALID_ARG,
            "IGNORE_SYNC | ACQUIRE_APERTURE");
    refused(dev, h, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_ACQUIRE_APERTURE | VIDMM_LOCK_DONOT_WAIT,
            VIDMM_E_INVALID_ARG, "IGNORE_SYNC | ACQUIRE_APERTURE | DONOT_WAIT");
    accepted(dev, h, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT, "IGNORE_SYNC | DONOT_WAIT");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 3: "UseAlternateVA requires AcquireAperture". */
Test(lock_rules, r03_alternate_va_needs_acquire_aperture)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, VIDMM_ALLOC_USE_ALTERNATE_VA, VIDMM_ALLOC_KIND_PRIMARY);
    t_resident(dev, h, NULL);
    refused(dev, h, VIDMM_LOCK_USE_ALTERNATE_VA, VIDMM_E_INVALID_ARG, "USE_ALTERNATE_VA without ACQUIRE_APERTURE");
    accepted(dev, h, VIDMM_LOCK_USE_ALTERNATE_VA | VIDMM_LOCK_ACQUIRE_APERTURE, "USE_ALTERNATE_VA | ACQUIRE_APERTURE");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 4: IgnoreSync / IgnoreReadSync "only for allocations that can be placed in an
 * aperture segment". */
Test(lock_rules, r04_ignore_sync_needs_aperture_capable)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle no = mk(dev, T_SET(T_VIS), 0, 0);
    vidmm_handle yes = mk(dev, SET_VA, 0, 0);
    t_resident(dev, no, NULL);
    t_resident(dev, yes, NULL);
    const uint32_t is = VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT;
    const uint32_t irs = VIDMM_LOCK_IGNORE_READ_SYNC | VIDMM_LOCK_DONOT_WAIT;
    refused(dev, no, is, VIDMM_E_INVALID_ARG, "IGNORE_SYNC, no aperture in the set");
    refused(dev, no, irs, VIDMM_E_INVALID_ARG, "IGNORE_READ_SYNC, no aperture in the set");
    accepted(dev, yes, is, "IGNORE_SYNC, aperture in the set");
    accepted(dev, yes, irs, "IGNORE_READ_SYNC, aperture in the set");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 4: "never on a swizzled allocation". */
Test(lock_rules, r04_ignore_sync_not_swizzled)
{
    vidmm_device *dev = swz_dev();
    struct t_swz z;
    vidmm_handle h = mk_swz(dev, &z, SET_VA);
    t_resident(dev, h, NULL);
    refused(dev, h, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT, VIDMM_E_INVALID_ARG, "IGNORE_SYNC on swizzled");
    refused(dev, h, VIDMM_LOCK_IGNORE_READ_SYNC | VIDMM_LOCK_DONOT_WAIT, VIDMM_E_INVALID_ARG,
            "IGNORE_READ_SYNC on swizzled");
    accepted(dev, h, VIDMM_LOCK_DONOT_WAIT, "DONOT_WAIT on swizzled");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 4: "never on a Cached allocation when the adapter has no cache coherency"
 * (device.h: VIDMM_DEVICE_CACHE_COHERENT allows it). */
Test(lock_rules, r04_ignore_sync_cached_needs_coherency)
{
    const uint32_t is = VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT;
    const uint32_t irs = VIDMM_LOCK_IGNORE_READ_SYNC | VIDMM_LOCK_DONOT_WAIT;
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, VIDMM_ALLOC_CACHED, 0);
    t_resident(dev, h, NULL);
    refused(dev, h, is, VIDMM_E_INVALID_ARG, "IGNORE_SYNC on Cached, no coherency");
    refused(dev, h, irs, VIDMM_E_INVALID_ARG, "IGNORE_READ_SYNC on Cached, no coherency");
    vidmm_device_destroy(dev);
    dev = t_dev_std_ex(0, NULL, VIDMM_DEVICE_CACHE_COHERENT);
    h = mk(dev, SET_VA, VIDMM_ALLOC_CACHED, 0);
    t_resident(dev, h, NULL);
    accepted(dev, h, is, "IGNORE_SYNC on Cached, coherent adapter");
    accepted(dev, h, irs, "IGNORE_READ_SYNC on Cached, coherent adapter");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 5: "AcquireAperture is not allowed if the allocation can only be located in
 * aperture segments". The control (ACQUIRE_APERTURE on a non-swizzled allocation that may be in
 * a memory segment) assumes such a lock is an ordinary lock. */
Test(lock_rules, r05_acquire_aperture_not_aperture_only)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle ap = mk(dev, T_SET(T_APE), 0, 0);
    t_resident(dev, ap, NULL);
    refused(dev, ap, VIDMM_LOCK_ACQUIRE_APERTURE, VIDMM_E_INVALID_ARG, "ACQUIRE_APERTURE, aperture-only allocation");
    accepted(dev, ap, 0, "plain lock, aperture-only allocation");
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    accepted(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE, "ACQUIRE_APERTURE, memory-capable allocation");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 6: "An allocation locked without AcquireAperture cannot be locked again with
 * AcquireAperture." */
Test(lock_rules, r06_no_acquire_after_plain_lock)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    t_lock(dev, h, 0);
    refused(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE, VIDMM_E_INVALID_ARG, "ACQUIRE_APERTURE after a plain lock");
    cr_assert_eq(t_query(dev, h).lock_count, 1);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 7: "An allocation locked with UseAlternateVA cannot be locked again". */
Test(lock_rules, r07_alternate_va_no_relock)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, VIDMM_ALLOC_USE_ALTERNATE_VA, VIDMM_ALLOC_KIND_PRIMARY);
    t_resident(dev, h, NULL);
    const uint32_t alt = VIDMM_LOCK_USE_ALTERNATE_VA | VIDMM_LOCK_ACQUIRE_APERTURE;
    t_lock(dev, h, alt);
    refused(dev, h, alt, VIDMM_E_INVALID_ARG, "second USE_ALTERNATE_VA lock");
    t_unlock(dev, h);
    accepted(dev, h, alt, "USE_ALTERNATE_VA lock after the unlock");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 7: "UseAlternateVA is not allowed on shared allocations". */
Test(lock_rules, r07_alternate_va_not_shared)
{
    vidmm_device *dev = t_dev_std();
    const uint32_t alt = VIDMM_LOCK_USE_ALTERNATE_VA | VIDMM_LOCK_ACQUIRE_APERTURE;
    vidmm_handle sh = mk(dev, SET_VA, VIDMM_ALLOC_USE_ALTERNATE_VA, VIDMM_ALLOC_KIND_PRIMARY | VIDMM_ALLOC_KIND_SHARED);
    t_resident(dev, sh, NULL);
    refused(dev, sh, alt, VIDMM_E_INVALID_ARG, "USE_ALTERNATE_VA on a shared primary");
    vidmm_handle pr = mk(dev, SET_VA, VIDMM_ALLOC_USE_ALTERNATE_VA, VIDMM_ALLOC_KIND_PRIMARY);
    t_resident(dev, pr, NULL);
    accepted(dev, pr, alt, "USE_ALTERNATE_VA on an unshared primary");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 7: UseAlternateVA "on the primary only if it was created with the UseAlternateVA
 * allocation flag". */
Test(lock_rules, r07_alternate_va_needs_creation_flag)
{
    vidmm_device *dev = t_dev_std();
    const uint32_t alt = VIDMM_LOCK_USE_ALTERNATE_VA | VIDMM_LOCK_ACQUIRE_APERTURE;
    vidmm_handle pr = mk(dev, SET_VA, 0, VIDMM_ALLOC_KIND_PRIMARY);
    vidmm_handle plain = mk(dev, SET_VA, 0, 0);
    t_resident(dev, pr, NULL);
    t_resident(dev, plain, NULL);
    refused(dev, pr, alt, VIDMM_E_INVALID_ARG, "USE_ALTERNATE_VA on a primary created without it");
    refused(dev, plain, alt, VIDMM_E_INVALID_ARG, "USE_ALTERNATE_VA on a non-primary");
    accepted(dev, pr, 0, "plain lock of a primary created without USE_ALTERNATE_VA");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 7: "such a primary can only be locked with UseAlternateVA". */
Test(lock_rules, r07_alternate_va_primary_only_with_it)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, VIDMM_ALLOC_USE_ALTERNATE_VA, VIDMM_ALLOC_KIND_PRIMARY);
    t_resident(dev, h, NULL);
    refused(dev, h, 0, VIDMM_E_INVALID_ARG, "plain lock of a USE_ALTERNATE_VA primary");
    refused(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE, VIDMM_E_INVALID_ARG, "ACQUIRE_APERTURE lock of a USE_ALTERNATE_VA primary");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 8: "An allocation locked with a swizzling range must be unlocked before it can
 * be locked again. A pointer to swizzled bits (no range) cannot be requested while a lock
 * holding a range is outstanding". */
Test(lock_rules, r08_range_lock_then_any_lock)
{
    vidmm_device *dev = swz_dev();
    struct t_swz z;
    vidmm_handle h = mk_swz(dev, &z, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    t_lock(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SEGMENT, "range lock did not keep it in the segment");
    refused(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE, VIDMM_E_INVALID_ARG, "second range lock");
    refused(dev, h, 0, VIDMM_E_INVALID_ARG, "raw lock while a range lock is held");
    t_unlock(dev, h);
    accepted(dev, h, 0, "raw lock after the unlock");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 8: "... and vice versa" - no range lock while a raw lock is outstanding. */
Test(lock_rules, r08_raw_lock_then_range_lock)
{
    vidmm_device *dev = swz_dev();
    struct t_swz z;
    vidmm_handle h = mk_swz(dev, &z, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    t_lock(dev, h, 0);
    refused(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE, VIDMM_E_INVALID_ARG, "range lock while a raw lock is held");
    t_unlock(dev, h);
    accepted(dev, h, VIDMM_LOCK_ACQUIRE_APERTURE, "range lock after the unlock");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 9: "Retired or offered allocations cannot be locked." The API has no offers; a
 * destroyed allocation (every instance retired) is the case it can express. */
Test(lock_rules, r09_destroyed_allocation)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle keep = mk(dev, SET_VA, 0, 0);
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    T_OK(vidmm_alloc_destroy(dev, h));
    struct t_snap s;
    t_snap1(&s, dev, keep);
    struct vidmm_lock_args a = t_largs(h, 0);
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 10: "Only allocations created CpuVisible can be locked". */
Test(lock_rules, r10_cpu_visible_only)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, SET_VA);
    d.flags = 0;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    refused(dev, h, 0, VIDMM_E_INVALID_ARG, "lock of a non-CPU-visible allocation");
    refused(dev, h, VIDMM_LOCK_READ_ONLY, VIDMM_E_INVALID_ARG, "READ_ONLY lock of a non-CPU-visible allocation");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 10: "only the creator of a shared allocation can lock it". */
Test(lock_rules, r10_shared_creator_only)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, VIDMM_ALLOC_KIND_SHARED);
    t_resident(dev, h, NULL);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_lock_args a = t_largs(h, 0);
    a.process = T_OTHER_PROC;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    accepted(dev, h, 0, "lock of a shared allocation by its creator");
    /* An unshared allocation may be locked by anyone. */
    vidmm_handle u = mk(dev, SET_VA, 0, 0);
    a = t_largs(u, 0);
    a.process = T_OTHER_PROC;
    T_OK(vidmm_lock(dev, &a));
    t_unlock(dev, u);
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 11: "LockEntire requires NumPages = 0 and pPages = NULL." */
Test(lock_rules, r11_lock_entire_without_pages)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    static const uint32_t pages[1] = { 0 };
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ENTIRE);
    a.page_count = 1;
    a.pages = pages;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    a = t_largs(h, VIDMM_LOCK_ENTIRE);
    a.pages = pages;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    a = t_largs(h, VIDMM_LOCK_ENTIRE);
    a.page_count = 1;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    accepted(dev, h, VIDMM_LOCK_ENTIRE, "LOCK_ENTIRE alone");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 12: "No-overwrite locks (IgnoreSync) are not allowed on swizzled allocations". */
Test(lock_rules, r12_no_overwrite_not_on_swizzled)
{
    vidmm_device *dev = swz_dev();
    struct t_swz z;
    vidmm_handle h = mk_swz(dev, &z, SET_VA);
    t_resident(dev, h, NULL);
    refused(dev, h, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT, VIDMM_E_INVALID_ARG,
            "no-overwrite lock of a swizzled allocation");
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 13: "Every pfnLockCb must be paired with pfnUnlockCb" - nested locks need as
 * many unlocks; one more is refused; destroying a locked allocation ends its locks (device.h). */
Test(lock_rules, r13_lock_unlock_pairs)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    t_lock(dev, h, 0);
    t_lock(dev, h, 0);
    t_unlock(dev, h);
    t_unlock(dev, h);
    cr_assert_eq(t_query(dev, h).lock_count, 0);
    struct t_snap s;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_unlock(dev, 1, &h), VIDMM_E_INVALID_ARG);
    uint64_t n = t_stats(dev).allocations;
    t_lock(dev, h, 0);
    T_OK(vidmm_alloc_destroy(dev, h));
    cr_assert_eq(t_stats(dev).allocations, n - 1);
    vidmm_device_destroy(dev);
}

/* spec 6.3 neutralizing: "DonotWait has no effect with Discard" - a busy allocation is renamed,
 * not refused with BUSY. */
Test(lock_rules, n1_discard_neutralises_donot_wait, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, 0, NULL);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h, VIDMM_LOCK_DISCARD | VIDMM_LOCK_DONOT_WAIT, &a));
    cr_assert_neq(a.allocation, h, "busy allocation not renamed");
    t_unlock(dev, a.allocation);
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* spec 6.3 neutralizing: "IgnoreSync has no effect with Discard" - still renamed. */
Test(lock_rules, n2_discard_neutralises_ignore_sync, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, 0, NULL);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h, VIDMM_LOCK_DISCARD | VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT, &a));
    cr_assert_neq(a.allocation, h, "DISCARD | IGNORE_SYNC locked the busy instance instead of renaming");
    t_unlock(dev, a.allocation);
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* spec 6.3 neutralizing: "IgnoreSync is ignored unless DonotWait is also set" - IgnoreSync alone
 * on a busy allocation waits for the fence. */
Test(lock_rules, n3_ignore_sync_needs_donot_wait, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, VIDMM_REF_WRITE, NULL);
    atomic_bool signalled;
    atomic_init(&signalled, false);
    struct t_later l;
    t_signal_later(&l, dev, f, 300, &signalled);
    struct vidmm_lock_args a;
    int rc = lk(dev, h, VIDMM_LOCK_IGNORE_SYNC, &a);
    bool waited = atomic_load(&signalled);
    t_later_join(&l);
    cr_assert_eq(rc, 0, "IGNORE_SYNC lock returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert(waited, "IGNORE_SYNC without DONOT_WAIT did not wait for the busy allocation");
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 6.3 neutralizing: "Discard is ignored for pinned, primary or shared allocations" - the
 * lock is an ordinary one: same handle, no rename, it waits for the fence. */
static void discard_ignored(uint32_t flags, uint32_t kind)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, flags, kind);
    uint64_t f = t_submit1(dev, h, 0, NULL);
    uint64_t renames = t_stats(dev).renames;
    atomic_bool signalled;
    atomic_init(&signalled, false);
    struct t_later l;
    t_signal_later(&l, dev, f, 300, &signalled);
    struct vidmm_lock_args a;
    int rc = lk(dev, h, VIDMM_LOCK_DISCARD, &a);
    bool waited = atomic_load(&signalled);
    t_later_join(&l);
    cr_assert_eq(rc, 0, "DISCARD lock returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_eq(a.allocation, h, "DISCARD renamed an allocation it must ignore Discard for");
    cr_assert_eq(t_stats(dev).renames, renames);
    cr_assert(waited, "the lock did not wait for the busy allocation");
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

Test(lock_rules, n4_discard_ignored_pinned, .timeout = 30)
{
    discard_ignored(VIDMM_ALLOC_OVERLAY, 0);
}

Test(lock_rules, n4_discard_ignored_primary, .timeout = 30)
{
    discard_ignored(0, VIDMM_ALLOC_KIND_PRIMARY);
}

Test(lock_rules, n4_discard_ignored_shared, .timeout = 30)
{
    discard_ignored(0, VIDMM_ALLOC_KIND_SHARED);
}

/* =============================================================================================
 * spec 15.11: lock argument validation (beyond the rules above).
 * =========================================================================================== */

/* spec 15.11: "unknown handle -> STATUS_INVALID_PARAMETER"; a NULL argument block too. */
Test(item15_11, unknown_handle_and_null)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle keep = mk(dev, SET_VA, 0, 0);
    struct t_snap s;
    t_snap1(&s, dev, keep);
    struct vidmm_lock_args a = t_largs(T_BAD_HANDLE, 0);
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    a = t_largs(0, 0);
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_lock(dev, NULL), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* spec 15.11: "reserved bits" (D3DDDICB_LOCKFLAGS bits 11-31, spec 6.2). */
Test(item15_11, reserved_lock_flags)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    for (unsigned bit = 11; bit < 32; bit++)
        refused(dev, h, 1u << bit, VIDMM_E_INVALID_ARG, "a reserved lock flag");
    vidmm_device_destroy(dev);
}

/* spec 15.11: "page index >= page count" (and a page count without a page array); a valid page
 * list returns a pointer to the first listed page (spec 6.1 pData). */
Test(item15_11, page_list)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    unsigned char *base = t_lock(dev, h, 0);
    t_unlock(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    static const uint32_t out[2] = { 3, 16 };
    struct vidmm_lock_args a = t_largs(h, 0);
    a.page_count = 2;
    a.pages = out;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    a = t_largs(h, 0);
    a.page_count = 1;
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    static const uint32_t in[2] = { 15, 2 };
    a = t_largs(h, 0);
    a.page_count = 2;
    a.pages = in;
    T_OK(vidmm_lock(dev, &a));
    cr_assert_eq((unsigned char *)a.data, base + 15 * T_PG, "page-list lock returned %p, page 15 is at %p", a.data,
                 (void *)(base + 15 * T_PG));
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.12: relock rules.
 * =========================================================================================== */

/* spec 15.12: "plain locks nest with a per-allocation refcount (same pointer returned)". */
Test(item15_12, plain_locks_nest)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_resident(dev, h, NULL);
    void *p1 = t_lock(dev, h, 0);
    void *p2 = t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert_eq(p1, p2, "nested lock returned another pointer");
    cr_assert_eq(t_query(dev, h).lock_count, 2);
    t_unlock(dev, h);
    cr_assert_eq(t_query(dev, h).lock_count, 1);
    t_unlock(dev, h);
    cr_assert_eq(t_query(dev, h).lock_count, 0);
    vidmm_device_destroy(dev);
}

/* spec 15.12: "Unlock of an allocation that is not locked, NumAllocations = 0 or NULL array ->
 * STATUS_INVALID_PARAMETER" - and device.h: "nothing unlocked". */
Test(item15_12, unlock_refusals)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = mk(dev, SET_VA, 0, 0), b = mk(dev, SET_VA, 0, 0);
    t_resident(dev, a, NULL);
    t_resident(dev, b, NULL);
    t_lock(dev, a, 0);
    vidmm_handle hs[2] = { a, b };
    struct t_snap s;
    t_snap(&s, dev, hs, 2);
    T_REFUSED(&s, vidmm_unlock(dev, 2, hs), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_unlock(dev, 0, hs), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_unlock(dev, 1, NULL), VIDMM_E_INVALID_ARG);
    vidmm_handle bad = T_BAD_HANDLE;
    T_REFUSED(&s, vidmm_unlock(dev, 1, &bad), VIDMM_E_INVALID_ARG);
    cr_assert_eq(t_query(dev, a).lock_count, 1, "a refused unlock unlocked the locked allocation");
    t_unlock(dev, a);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.13: lock synchronisation.
 * =========================================================================================== */

/* spec 15.13: "Busy and DonotWait -> STATUS_GRAPHICS_ALLOCATION_BUSY", nothing changed; once the
 * fence is signalled the same lock succeeds. */
Test(item15_13, busy_donot_wait)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, 0, NULL);
    cr_assert(t_query(dev, h).busy);
    refused(dev, h, VIDMM_LOCK_DONOT_WAIT, VIDMM_E_BUSY, "DONOT_WAIT lock of a busy allocation");
    refused(dev, h, VIDMM_LOCK_DONOT_WAIT | VIDMM_LOCK_READ_ONLY, VIDMM_E_BUSY, "READ_ONLY | DONOT_WAIT, busy");
    t_signal(dev, f);
    cr_assert_not(t_query(dev, h).busy);
    accepted(dev, h, VIDMM_LOCK_DONOT_WAIT, "DONOT_WAIT lock once idle");
    vidmm_device_destroy(dev);
}

/* spec 15.13: "IgnoreSync and DonotWait and not Discard -> skip the check". */
Test(item15_13, ignore_sync_skips_check)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, VIDMM_REF_WRITE, NULL);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h, VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT, &a));
    cr_assert_eq(a.allocation, h);
    cr_assert(t_query(dev, h).busy);
    t_unlock(dev, h);
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* spec 15.13: "(for IgnoreReadSync: any unretired *write* reference)" - read-busy locks at once
 * with IgnoreReadSync, but not without it. */
Test(item15_13, ignore_read_sync_read_busy)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, 0, NULL);
    refused(dev, h, VIDMM_LOCK_DONOT_WAIT, VIDMM_E_BUSY, "read-busy, DONOT_WAIT without IGNORE_READ_SYNC");
    accepted(dev, h, VIDMM_LOCK_IGNORE_READ_SYNC | VIDMM_LOCK_DONOT_WAIT, "read-busy, IGNORE_READ_SYNC | DONOT_WAIT");
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* spec 15.13: IgnoreReadSync still waits for pending GPU writes (spec 6.4). */
Test(item15_13, ignore_read_sync_write_busy)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, VIDMM_REF_WRITE, NULL);
    refused(dev, h, VIDMM_LOCK_IGNORE_READ_SYNC | VIDMM_LOCK_DONOT_WAIT, VIDMM_E_BUSY,
            "write-busy, IGNORE_READ_SYNC | DONOT_WAIT");
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* spec 15.13: "busy and not DonotWait -> block" until the fence is signalled. */
Test(item15_13, blocks_until_idle, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    uint64_t f = t_submit1(dev, h, 0, NULL);
    atomic_bool signalled;
    atomic_init(&signalled, false);
    struct t_later l;
    t_signal_later(&l, dev, f, 300, &signalled);
    struct vidmm_lock_args a;
    int rc = lk(dev, h, 0, &a);
    bool waited = atomic_load(&signalled);
    t_later_join(&l);
    cr_assert_eq(rc, 0);
    cr_assert(waited, "the lock returned while the allocation was busy");
    cr_assert_not(t_query(dev, h).busy);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.14: lock placement.
 * =========================================================================================== */

/* spec 15.14: "CpuVisible memory segment -> pointer = segment CPU mapping + offset", no paging,
 * and the bytes are the allocation's. */
Test(item15_14, cpu_visible_segment_pointer)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, T_SET(T_VIS), 0, 0);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    t_log_clear(dev);
    uint64_t issued = t_paging_total(dev);
    unsigned char *p = t_lock(dev, h, 0);
    cr_assert_eq((void *)p, where.cpu);
    struct vidmm_paging_op op;
    cr_assert_eq(vidmm_paging_log_read(dev, &op, 1), 0, "lock in a CPU-visible segment paged");
    cr_assert_eq(t_paging_total(dev), issued, "lock in a CPU-visible segment issued paging");
    cr_assert(t_is_fill(p, 64 * T_KiB, T_FILL));
    memset(p + 100, 0x42, 10);
    t_unlock(dev, h);
    unsigned char b[10];
    t_read(dev, h, 100, b, 10);
    cr_assert(t_is_fill(b, 10, 0x42424242u));
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SEGMENT);
    vidmm_device_destroy(dev);
}

/* spec 15.14: "non-CpuVisible memory segment -> evict to system memory first (WDDM1)". */
Test(item15_14, non_cpu_visible_evicts_first)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, T_SET(T_LOC), 0, 0);
    t_resident(dev, h, NULL);
    t_log_clear(dev);
    unsigned char *p = t_lock(dev, h, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert_geq(t, 0, "no eviction TRANSFER before the lock");
    cr_assert_eq(log->op[t].src.segment_id, T_LOC);
    cr_assert_eq(log->op[t].dst.segment_id, 0);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    cr_assert(t_is_fill(p, 64 * T_KiB, T_FILL));
    t_unlock(dev, h);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.14: "... unless DonotEvict (-> ... D3DERR_NOTAVAILABLE)", nothing changed. */
Test(item15_14, donot_evict_not_available)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, T_SET(T_LOC), 0, 0);
    t_resident(dev, h, NULL);
    refused(dev, h, VIDMM_LOCK_DONOT_EVICT, VIDMM_E_NOT_AVAILABLE, "DONOT_EVICT lock in a non-CPU-visible segment");
    vidmm_device_destroy(dev);
}

/* spec 15.14: "aperture/system memory -> backing store" - no paging, the allocation stays where
 * it is, and writes through the pointer are its content. */
Test(item15_14, aperture_and_sysmem_backing_store)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = mk(dev, T_SET(T_APE), 0, 0);
    vidmm_handle s = mk(dev, T_SET(T_VIS), 0, 0);
    t_resident(dev, a, NULL);
    t_resident(dev, s, NULL);
    t_evict(dev, s);
    vidmm_handle hs[2] = { a, s };
    for (int i = 0; i < 2; i++) {
        uint32_t where = t_query(dev, hs[i]).where;
        t_log_clear(dev);
        uint64_t issued = t_paging_total(dev);
        unsigned char *p = t_lock(dev, hs[i], 0);
        struct vidmm_paging_op op;
        cr_assert_eq(vidmm_paging_log_read(dev, &op, 1), 0, "lock of allocation %d paged", i);
        cr_assert_eq(t_paging_total(dev), issued, "lock of allocation %d issued paging", i);
        cr_assert(t_is_fill(p, 64 * T_KiB, T_FILL));
        memset(p + 4096, 0x77, 16);
        t_unlock(dev, hs[i]);
        cr_assert_eq(t_query(dev, hs[i]).where, where);
        unsigned char b[16];
        t_read(dev, hs[i], 4096, b, 16);
        cr_assert(t_is_fill(b, 16, 0x77777777u), "write through the lock of allocation %d lost", i);
    }
    vidmm_device_destroy(dev);
}

/* device.h: a lock before the first submission or make-resident gives the backing store, as
 * WDDM locks a non-resident allocation (spec 6.4: "system-memory allocations are also
 * locked"): no paging, the content is the fill pattern, and the first submission then pages
 * what the CPU wrote into a segment. */
Test(item15_14, lock_before_placement_gives_backing_store)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, T_SET(T_VIS), 0, 0);
    uint64_t issued = t_paging_total(dev);
    unsigned char *p = t_lock(dev, h, 0);
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert(t_is_fill(p, 64 * T_KiB, T_FILL));
    cr_assert_eq(in.where, VIDMM_WHERE_SYSMEM, "lock of a never-placed allocation: where=%u", in.where);
    cr_assert_eq(t_paging_total(dev), issued, "the lock issued paging");
    memset(p + 100, 0x3C, 64);
    t_unlock(dev, h);
    struct vidmm_residency where;
    t_signal(dev, t_submit1(dev, h, 0, &where));
    cr_assert_eq(where.segment_id, T_VIS);
    unsigned char b[64];
    t_read(dev, h, 100, b, 64);
    cr_assert(t_is_fill(b, 64, 0x3C3C3C3Cu), "what the CPU wrote before placement was lost");
    vidmm_device_destroy(dev);
}

/* spec 15.14: "on unlock of a resident PermanentSysMem allocation emit a Transfer of the dirty
 * (listed) pages backing store -> segment" (spec 15.6: "Page-list locks mark only the listed
 * pages"). */
Test(item15_14, permanent_sysmem_unlock_transfers_listed_pages)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, T_SET(T_VIS), VIDMM_ALLOC_PERMANENT_SYSMEM, 0);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    static const uint32_t pg[1] = { 2 };
    struct vidmm_lock_args a = t_largs(h, 0);
    a.page_count = 1;
    a.pages = pg;
    T_OK(vidmm_lock(dev, &a));
    memset(a.data, 0x3C, 64);
    t_log_clear(dev);
    t_unlock(dev, h);
    /* The transfer is issued by the unlock; the engine may run it later, but before the next
     * submission that uses the allocation returns, which is where it is looked for. */
    t_use(dev, h, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    uint64_t bytes = 0;
    bool covers = false;
    for (size_t i = 0; i < log->n; i++) {
        const struct vidmm_paging_op *o = &log->op[i];
        if (o->type != VIDMM_PAGING_TRANSFER || o->allocation != h)
            continue;
        cr_assert_eq(o->src.segment_id, 0);
        cr_assert_eq(o->dst.segment_id, T_VIS);
        bytes += o->size;
        if (o->mdl_offset <= 2 && 2 < o->mdl_offset + o->size / T_PG)
            covers = true;
    }
    if (!covers || bytes != T_PG)
        t_log_dump(log, "unlock");
    cr_assert(covers, "no TRANSFER of page 2 on unlock");
    cr_assert_eq(bytes, T_PG, "unlock transferred %llu bytes for one listed page", (unsigned long long)bytes);
    cr_assert(t_is_fill((unsigned char *)where.cpu + 2 * T_PG, 64, 0x3C3C3C3Cu), "segment copy not refreshed");
    free(log);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.16: UseAlternateVA.
 * =========================================================================================== */

/* spec 8.4 / 15.16: the content of an allocation locked through an alternate VA moves to and
 * from that VA's pages with SPECIAL_LOCK_TRANSFER instead of TRANSFER: out of the memory
 * segment when the lock takes it (the VA shows system pages), back in when the GPU next uses
 * it after the unlock - content intact both ways. */
Test(item15_16, special_lock_transfer_both_ways)
{
    vidmm_device *dev = t_dev_std_ex(2, NULL, VIDMM_DEVICE_LOG_PAGING);
    vidmm_handle h = mk(dev, SET_VA, VIDMM_ALLOC_USE_ALTERNATE_VA, VIDMM_ALLOC_KIND_PRIMARY);
    struct vidmm_residency was;
    t_resident(dev, h, &was);
    memset(was.cpu, 0x4B, 4096); /* the GPU's content */
    t_log_clear(dev);
    unsigned char *p = t_lock(dev, h, VIDMM_LOCK_USE_ALTERNATE_VA | VIDMM_LOCK_ACQUIRE_APERTURE);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_SPECIAL_LOCK_TRANSFER, h, 0);
    cr_assert_geq(t, 0, "no SPECIAL_LOCK_TRANSFER out of the segment");
    cr_assert_eq(log->op[t].src.segment_id, was.segment_id);
    cr_assert_eq(log->op[t].dst.segment_id, 0);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_TRANSFER, h), 0, "a plain TRANSFER as well");
    cr_assert(t_is_fill(p, 4096, 0x4B4B4B4Bu), "the alternate VA does not show the content");
    memset(p + 4096, 0x71, 64);
    t_unlock(dev, h);
    struct vidmm_residency now;
    t_signal(dev, t_submit1(dev, h, 0, &now));
    t_log_take(dev, log);
    t = t_log_find(log, VIDMM_PAGING_SPECIAL_LOCK_TRANSFER, h, 0);
    cr_assert_geq(t, 0, "no SPECIAL_LOCK_TRANSFER back into a segment");
    cr_assert_eq(log->op[t].src.segment_id, 0);
    cr_assert_eq(log->op[t].dst.segment_id, now.segment_id);
    cr_assert(t_is_fill((unsigned char *)now.cpu + 4096, 64, 0x71717171u), "CPU writes through the VA lost");
    cr_assert(t_is_fill(now.cpu, 4096, 0x4B4B4B4Bu));
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.16: "allocate a fresh CPU VA per lock" - the lock works: it shows the content, and
 * what is written through it is the allocation's content after the unlock. */
Test(item15_16, alternate_va_lock)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, VIDMM_ALLOC_USE_ALTERNATE_VA, VIDMM_ALLOC_KIND_PRIMARY);
    t_resident(dev, h, NULL);
    unsigned char *p = t_lock(dev, h, VIDMM_LOCK_USE_ALTERNATE_VA | VIDMM_LOCK_ACQUIRE_APERTURE);
    cr_assert(t_is_fill(p, 64 * T_KiB, T_FILL));
    memset(p + 8192, 0x19, 32);
    t_unlock(dev, h);
    unsigned char b[32];
    t_read(dev, h, 8192, b, 32);
    cr_assert(t_is_fill(b, 32, 0x19191919u), "write through the alternate VA lost");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.17: rendering with locked allocations.
 * =========================================================================================== */

/* spec 15.17 as this engine implements it (device.h, vidmm_submit): an allocation locked in
 * place in a CPU-visible memory segment, that could go to an aperture, stays where the lock's
 * pointer is - the pointer must stay valid and segment memory cannot be remapped under it
 * (a deviation from "forces it to an aperture", listed in the README). GPU and CPU then share
 * the same bytes. */
Test(item15_17, locked_in_segment_stays_for_the_pointer)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    struct vidmm_residency was;
    t_resident(dev, h, &was);
    unsigned char *p = t_lock(dev, h, 0);
    memset(p, 0x5E, 256);
    struct vidmm_residency where;
    uint64_t f = t_submit1(dev, h, 0, &where);
    cr_assert_eq(where.segment_id, T_VIS, "locked allocation rendered from segment %u", where.segment_id);
    cr_assert_eq(where.offset, was.offset);
    cr_assert_eq((unsigned char *)where.cpu, p, "GPU view and lock pointer differ");
    unsigned char b[256];
    t_read(dev, h, 0, b, 256);
    cr_assert(t_is_fill(b, 256, 0x5E5E5E5Eu), "content written under the lock lost");
    t_signal(dev, f);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 15.17: a locked allocation whose content is in its backing store (locked before any
 * placement) is used through an aperture of its set: the pages are mapped, not moved, so the
 * lock's pointer and the GPU see the same bytes. */
Test(item15_17, locked_in_backing_store_goes_through_aperture)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    unsigned char *p = t_lock(dev, h, 0);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    memset(p, 0x6D, 512);
    struct vidmm_residency where;
    uint64_t f = t_submit1(dev, h, 0, &where);
    cr_assert_eq(where.segment_id, T_APE, "locked allocation rendered from segment %u", where.segment_id);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_APERTURE);
    cr_assert(t_is_fill(where.cpu, 512, 0x6D6D6D6Du), "the aperture does not show the locked pages");
    memset(where.cpu, 0x2A, 16); /* the GPU writes through the aperture ... */
    cr_assert(t_is_fill(p, 16, 0x2A2A2A2Au), "... and the CPU sees it through its lock");
    t_signal(dev, f);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 15.17: "if it has none -> STATUS_GRAPHICS_CANT_RENDER_LOCKED_ALLOCATION", nothing changed. */
Test(item15_17, locked_without_aperture_refused)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, T_SET(T_VIS), 0, 0);
    t_resident(dev, h, NULL);
    t_lock(dev, h, 0);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_alloc_ref ref = { h, 0 };
    uint64_t fence = 0xABCu;
    T_REFUSED(&s, vidmm_submit(dev, &ref, 1, 0, NULL, &fence), VIDMM_E_CANT_RENDER_LOCKED);
    cr_assert_eq(fence, 0xABCu, "failed submission wrote a fence");
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 15.17 applies to "a CPU-locked allocation that is in a memory segment" only: locked in
 * an aperture, it is submitted where it is. */
Test(item15_17, locked_in_aperture_submits)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, T_SET(T_APE), 0, 0);
    t_resident(dev, h, NULL);
    struct vidmm_alloc_info was = t_query(dev, h);
    t_lock(dev, h, 0);
    struct vidmm_residency where;
    t_signal(dev, t_submit1(dev, h, 0, &where));
    cr_assert_eq(where.segment_id, T_APE);
    cr_assert_eq(where.offset, was.offset);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.18: renaming.
 * =========================================================================================== */

/* spec 15.18: "Discard lock on a busy allocation returns a new instance handle"; the old
 * instance stays valid (brief) with its content; statistics count the rename. */
Test(item15_18, discard_busy_renames, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    unsigned char buf[512], back[512];
    t_bytes(buf, sizeof(buf), 77);
    t_resident(dev, h, NULL);
    t_write(dev, h, 0, buf, sizeof(buf));
    uint64_t f = t_submit1(dev, h, 0, NULL);
    struct vidmm_stats st = t_stats(dev);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h, VIDMM_LOCK_DISCARD, &a));
    vidmm_handle n = a.allocation;
    cr_assert_neq(n, h, "no new instance");
    cr_assert_neq(n, 0);
    cr_assert_not_null(a.data);
    struct vidmm_alloc_info in = t_query(dev, n), io = t_query(dev, h);
    cr_assert_eq(in.current, n);
    cr_assert_eq(io.current, n, "old instance's query does not name the new current instance");
    cr_assert_neq(in.instance, io.instance);
    cr_assert_eq(in.lock_count, 1);
    cr_assert_eq(io.lock_count, 0);
    cr_assert(io.busy);
    struct vidmm_stats st2 = t_stats(dev);
    cr_assert_eq(st2.renames, st.renames + 1);
    cr_assert_eq(st2.allocations, st.allocations + 1, "a new instance is a live allocation (instance)");
    t_read(dev, h, 0, back, sizeof(back));
    cr_assert_eq(memcmp(buf, back, sizeof(buf)), 0, "the busy instance's content changed");
    t_unlock(dev, n);
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* spec 15.18: "idle -> reuse current instance". */
Test(item15_18, discard_idle_same_handle)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = mk(dev, SET_VA, 0, 0);
    t_use(dev, h, 0);
    uint64_t renames = t_stats(dev).renames;
    struct vidmm_lock_args a;
    T_OK(lk(dev, h, VIDMM_LOCK_DISCARD, &a));
    cr_assert_eq(a.allocation, h);
    cr_assert_eq(t_stats(dev).renames, renames);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 15.18: "<= MaximumRenamingListLength if non-zero"; "cannot create or reuse ->
 * STATUS_GRAPHICS_ALLOCATION_BUSY", nothing changed; then "Discard|NoExistingReference -> may
 * reuse any instance including the current one". Assumption: the cap counts every instance,
 * the original included. */
Test(item15_18, max_renaming_cap, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, SET_VA);
    d.max_renaming = 2;
    vidmm_handle h0 = t_alloc(dev, &d);
    uint64_t f0 = t_submit1(dev, h0, 0, NULL);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h0, VIDMM_LOCK_DISCARD, &a));
    vidmm_handle h1 = a.allocation;
    cr_assert_neq(h1, h0);
    t_unlock(dev, h1);
    uint64_t f1 = t_submit1(dev, h1, 0, NULL);
    vidmm_handle hs[2] = { h0, h1 };
    struct t_snap s;
    t_snap(&s, dev, hs, 2);
    a = t_largs(h1, VIDMM_LOCK_DISCARD);
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_BUSY);
    cr_assert_eq(a.allocation, h1, "refused DISCARD changed args.allocation");
    /* NoExistingReference may reuse any instance - but never one the GPU still uses (issue 12,
     * defect 7): both are busy, the cap is reached, so it is refused like a plain Discard. */
    a = t_largs(h1, VIDMM_LOCK_DISCARD | VIDMM_LOCK_NO_EXISTING_REFERENCE);
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_BUSY);
    /* Once the first instance is idle it is the one reused, and no third is made. */
    t_signal(dev, f0);
    T_OK(lk(dev, h1, VIDMM_LOCK_DISCARD | VIDMM_LOCK_NO_EXISTING_REFERENCE, &a));
    cr_assert_eq(a.allocation, h0, "DISCARD | NO_EXISTING_REFERENCE did not reuse the idle instance");
    t_unlock(dev, a.allocation);
    t_signal(dev, f1 > f0 ? f1 : f0);
    vidmm_device_destroy(dev);
}

/* spec 15.18: "a per-allocation ring" - an idle older instance is reused before the cap refuses. */
Test(item15_18, idle_instance_reused, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, SET_VA);
    d.max_renaming = 2;
    vidmm_handle h0 = t_alloc(dev, &d);
    uint64_t f0 = t_submit1(dev, h0, 0, NULL);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h0, VIDMM_LOCK_DISCARD, &a));
    vidmm_handle h1 = a.allocation;
    t_unlock(dev, h1);
    t_signal(dev, f0);
    uint64_t f1 = t_submit1(dev, h1, 0, NULL);
    T_OK(lk(dev, h1, VIDMM_LOCK_DISCARD, &a));
    cr_assert_eq(a.allocation, h0, "busy instance with an idle older one: got %u, expected the idle %u",
                 a.allocation, h0);
    t_unlock(dev, a.allocation);
    t_signal(dev, f1);
    vidmm_device_destroy(dev);
}

/* spec 15.18: "Submissions referencing an older instance after a newer one ->
 * STATUS_GRAPHICS_INVALID_ALLOCATION_INSTANCE", nothing changed, no fence. */
Test(item15_18, older_instance_after_newer, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h0 = mk(dev, SET_VA, 0, 0);
    uint64_t f0 = t_submit1(dev, h0, 0, NULL);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h0, VIDMM_LOCK_DISCARD, &a));
    vidmm_handle h1 = a.allocation;
    cr_assert_neq(h1, h0);
    t_unlock(dev, h1);
    vidmm_handle hs[2] = { h0, h1 };
    struct t_snap s;
    t_snap(&s, dev, hs, 2);
    struct vidmm_alloc_ref refs[2] = { { h1, 0 }, { h0, 0 } };
    uint64_t fence = 0x123u;
    T_REFUSED(&s, vidmm_submit(dev, refs, 2, 0, NULL, &fence), VIDMM_E_INVALID_INSTANCE);
    cr_assert_eq(fence, 0x123u);
    t_signal(dev, f0);
    vidmm_device_destroy(dev);
}

/* device.h vidmm_alloc_destroy(): "destroys an allocation and all its rename instances ('h' may
 * name any instance)". */
Test(item15_18, destroy_any_instance, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    uint64_t n0 = t_stats(dev).allocations;
    vidmm_handle h0 = mk(dev, SET_VA, 0, 0);
    uint64_t f0 = t_submit1(dev, h0, 0, NULL);
    struct vidmm_lock_args a;
    T_OK(lk(dev, h0, VIDMM_LOCK_DISCARD, &a));
    vidmm_handle h1 = a.allocation;
    t_unlock(dev, h1);
    t_signal(dev, f0);
    T_OK(vidmm_alloc_destroy(dev, h1));
    struct vidmm_alloc_info in;
    memset(&in, 0, sizeof(in));
    in.size_of = sizeof(in);
    T_RC(vidmm_alloc_query(dev, h0, &in), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_alloc_query(dev, h1, &in), VIDMM_E_INVALID_ARG);
    cr_assert_eq(t_stats(dev).allocations, n0);
    vidmm_device_destroy(dev);
}
