/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_power.c - conformance: simulated standby and hibernate (spec 2.3,
 * 10, 15.26) on WDDM1 and WDDM2 devices - which segments each state purges (the
 * PreservedDuringStandby / PreservedDuringHibernate / PartiallyPreservedDuringHibernate table,
 * hybrid sleep as hibernate), that purged memory really loses its bytes while every content
 * the spec keeps survives (checksums), that offered content is dropped and reclaim says so,
 * that pinned and locked allocations are restored in place, that the next use pages evicted
 * ones back, and that a WDDM2 device's residency list is resident again after the resume. The
 * spec text each test checks is quoted above it. */
#include "t_wddm2.h"

#include <stdlib.h>

#define Q (256 * T_KiB)

/* The power device: four CPU-visible memory segments of 1 MiB, one per power combination of
 * spec 2.3 (Standby, Hibernate, Partial), and an aperture. */
#define P_VOL 1u   /* 000: purged / purged */
#define P_SBY 2u   /* 100: not purged / purged */
#define P_ALL 3u   /* 110: not purged / not purged */
#define P_PART 4u  /* 101: not purged / partially purged */
#define P_APE 5u
#define P_SEG (1 * T_MiB)

/* p_dev_ex(): the device below with a wait timeout and a backing-store reserve (0: defaults). */
static vidmm_device *p_dev_ex(bool wddm2, uint64_t wait_timeout_ns, uint64_t sysmem_reserve)
{
    static struct vidmm_segment_desc segs[5];
    const uint32_t v = VIDMM_SEGMENT_CPU_VISIBLE;
    segs[0] = t_mem_seg(0x10000000ull, P_SEG, v);
    segs[1] = t_mem_seg(0x20000000ull, P_SEG, v | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY);
    segs[2] = t_mem_seg(0x30000000ull, P_SEG,
                        v | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE);
    segs[3] = t_mem_seg(0x40000000ull, P_SEG, v | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY |
                                                  VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE);
    segs[4] = t_aper_seg(0x50000000ull, 2 * T_MiB, 0);
    struct vidmm_device_desc d = t_ddesc(segs, 5);
    if (wddm2)
        d.flags |= VIDMM_DEVICE_WDDM2;
    d.wait_timeout_ns = wait_timeout_ns;
    d.sysmem_reserve = sysmem_reserve;
    return t_dev(&d);
}

static vidmm_device *p_dev(bool wddm2)
{
    return p_dev_ex(wddm2, 0, 0);
}

static int power_rc(vidmm_device *dev, uint32_t state, struct vidmm_power_args *out)
{
    struct vidmm_power_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.state = state;
    int rc = vidmm_power_transition(dev, &a);
    if (out)
        *out = a;
    return rc;
}

static struct vidmm_power_args power(vidmm_device *dev, uint32_t state)
{
    struct vidmm_power_args a;
    int rc = power_rc(dev, state, &a);
    cr_assert_eq(rc, 0, "vidmm_power_transition(%u) returned %d (%s)", state, rc, vidmm_strerror(rc));
    return a;
}

/* An allocation of 'size' bytes that only segment 'seg' may hold, placed there (WDDM1: used
 * once; WDDM2: on the residency list), with random content kept in '*buf' (malloc'ed), and in
 * '*cpu' (may be NULL) the host view of its bytes in the segment. */
static vidmm_handle placed(vidmm_device *dev, bool wddm2, uint64_t size, uint32_t seg, uint32_t flags, uint8_t **buf,
                           uint32_t seed, uint8_t **cpu)
{
    struct vidmm_alloc_desc d = t_adesc(size, T_SET(seg));
    d.flags |= flags;
    vidmm_handle h = t_alloc(dev, &d);
    *buf = malloc(size);
    cr_assert_not_null(*buf);
    t_bytes(*buf, size, seed);
    if (wddm2) {
        w2_resident(dev, h);
    } else {
        struct vidmm_residency where;
        t_signal(dev, t_submit1(dev, h, VIDMM_REF_WRITE, &where));
        if (cpu)
            *cpu = where.cpu;
    }
    t_write(dev, h, 0, *buf, size);
    struct vidmm_alloc_info info = t_query(dev, h);
    cr_assert_eq(info.segment_id, seg);
    if (wddm2 && cpu)
        *cpu = NULL; /* WDDM2: the caller translates a VA instead */
    return h;
}

static void same(vidmm_device *dev, vidmm_handle h, const uint8_t *want, size_t n, const char *what)
{
    uint8_t *got = malloc(n);
    cr_assert_not_null(got);
    t_read(dev, h, 0, got, n);
    cr_assert(memcmp(got, want, n) == 0, "%s: the content did not survive", what);
    free(got);
}

/* =============================================================================================
 * Arguments and preconditions.
 * =========================================================================================== */

/* wddm2.h: NULL, size_of, an unknown state, reserved bits - VIDMM_E_INVALID_ARG, nothing
 * changed; the GPU not idle (a fence unsignalled) - VIDMM_E_BUSY, nothing changed; a removed
 * device - VIDMM_E_DEVICE_REMOVED. */
Test(power, rules)
{
    vidmm_device *dev = p_dev(false);
    uint8_t *buf;
    vidmm_handle h = placed(dev, false, Q, P_VOL, 0, &buf, 1, NULL);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_power_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.state = VIDMM_POWER_STANDBY;
    struct vidmm_power_args b = a;
    b.state = 0;
    T_REFUSED(&s, vidmm_power_transition(dev, &b), VIDMM_E_INVALID_ARG);
    b.state = VIDMM_POWER_HYBRID_SLEEP + 1;
    T_REFUSED(&s, vidmm_power_transition(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.reserved = 1;
    T_REFUSED(&s, vidmm_power_transition(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.size_of = sizeof b - 1;
    T_REFUSED(&s, vidmm_power_transition(dev, &b), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_power_transition(dev, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_power_transition(NULL, &a), VIDMM_E_INVALID_ARG);
    /* The OS drains the GPU before a power transition: work outstanding is refused. */
    const uint64_t f = t_submit1(dev, h, 0, NULL);
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_power_transition(dev, &a), VIDMM_E_BUSY);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SEGMENT);
    t_signal(dev, f);
    T_OK(vidmm_power_transition(dev, &a));
    T_OK(vidmm_device_remove(dev));
    T_RC(vidmm_power_transition(dev, &a), VIDMM_E_DEVICE_REMOVED);
    free(buf);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * What each state purges.
 * =========================================================================================== */

/* spec 2.3: Standby column - 000 purged; 100, 110, 101 not purged. 15.26: "purge ... the
 * segments not preserved"; Display docs: "the only data that is discarded is data that can be
 * re-created" - an ordinary allocation is paged out (TRANSFER) and keeps its content; its next
 * use pages it back in (15.26 "next use refills"). The purged memory loses its bytes. */
Test(power, standby_purges_only_unpreserved_content_survives)
{
    vidmm_device *dev = p_dev(false);
    uint8_t *bv, *bs, *ba, *bp, *cpu_v = NULL, *cpu_s = NULL;
    vidmm_handle v = placed(dev, false, Q, P_VOL, 0, &bv, 1, &cpu_v);
    vidmm_handle sb = placed(dev, false, Q, P_SBY, 0, &bs, 2, &cpu_s);
    vidmm_handle al = placed(dev, false, Q, P_ALL, 0, &ba, 3, NULL);
    vidmm_handle pa = placed(dev, false, Q, P_PART, 0, &bp, 4, NULL);
    const struct vidmm_alloc_info before_s = t_query(dev, sb);
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_STANDBY);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(r.evicted, 1);
    cr_assert_eq(r.discarded, 0);
    cr_assert_eq(r.restored, 0);
    cr_assert_eq(r.purged_bytes, P_SEG, "the whole emptied segment is purged");
    const ptrdiff_t t = t_log_find(&b, VIDMM_PAGING_TRANSFER, v, 0);
    cr_assert_geq(t, 0, "the purged allocation was not paged out");
    cr_assert_eq(b.op[t].src.segment_id, P_VOL);
    cr_assert_eq(t_query(dev, v).where, VIDMM_WHERE_SYSMEM);
    cr_assert(t_is_fill(cpu_v, Q, VIDMM_POWER_PURGE_PATTERN), "the purged segment kept its bytes");
    same(dev, v, bv, Q, "paged out before the purge");
    /* Preserved in standby: untouched, not even paged. */
    const vidmm_handle kept[3] = { sb, al, pa };
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(t_query(dev, kept[i]).where, VIDMM_WHERE_SEGMENT);
        cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, kept[i]), 0);
    }
    cr_assert_eq(t_query(dev, sb).offset, before_s.offset);
    cr_assert(memcmp(cpu_s, bs, Q) == 0, "a segment preserved in standby lost bytes");
    same(dev, al, ba, Q, "110 in standby");
    same(dev, pa, bp, Q, "101 in standby");
    /* The next use refills it from its backing store. */
    t_log_clear(dev);
    t_use(dev, v, 0);
    t_log_take(dev, &b);
    const ptrdiff_t in = t_log_find(&b, VIDMM_PAGING_TRANSFER, v, 0);
    cr_assert_geq(in, 0);
    cr_assert_eq(b.op[in].dst.segment_id, P_VOL);
    same(dev, v, bv, Q, "paged back in after the standby");
    free(bv), free(bs), free(ba), free(bp);
    vidmm_device_destroy(dev);
}

/* spec 2.3: Hibernate column - 000 and 100 purged, 110 not purged, 101 partially purged;
 * "Hybrid sleep behaves as hibernate". Every content survives through its backing store. */
Test(power, hibernate_and_hybrid_sleep_purge_per_table)
{
    const uint32_t states[2] = { VIDMM_POWER_HIBERNATE, VIDMM_POWER_HYBRID_SLEEP };
    for (int k = 0; k < 2; k++) {
        vidmm_device *dev = p_dev(false);
        uint8_t *bv, *bs, *ba, *bp;
        vidmm_handle v = placed(dev, false, Q, P_VOL, 0, &bv, 11, NULL);
        vidmm_handle sb = placed(dev, false, Q, P_SBY, 0, &bs, 12, NULL);
        vidmm_handle al = placed(dev, false, Q, P_ALL, 0, &ba, 13, NULL);
        vidmm_handle pa = placed(dev, false, Q, P_PART, 0, &bp, 14, NULL);
        struct vidmm_power_args r = power(dev, states[k]);
        cr_assert_eq(r.evicted, 3, "state %u: 000, 100 and 101 (not kept in place) are purged", states[k]);
        cr_assert_eq(r.purged_bytes, 3 * P_SEG);
        cr_assert_eq(t_query(dev, v).where, VIDMM_WHERE_SYSMEM);
        cr_assert_eq(t_query(dev, sb).where, VIDMM_WHERE_SYSMEM);
        cr_assert_eq(t_query(dev, pa).where, VIDMM_WHERE_SYSMEM);
        cr_assert_eq(t_query(dev, al).where, VIDMM_WHERE_SEGMENT, "110 is not purged in hibernate");
        same(dev, v, bv, Q, "000");
        same(dev, sb, bs, Q, "100");
        same(dev, al, ba, Q, "110");
        same(dev, pa, bp, Q, "101");
        free(bv), free(bs), free(ba), free(bp);
        vidmm_device_destroy(dev);
    }
}

/* spec 10 / 15.9: an aperture segment has no storage - its content is system memory, which
 * standby keeps and hibernate saves: nothing mapped there is touched. */
Test(power, aperture_content_untouched)
{
    vidmm_device *dev = p_dev(false);
    uint8_t *buf;
    vidmm_handle h = placed(dev, false, T_MiB, P_APE, 0, &buf, 21, NULL);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_APERTURE);
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_HIBERNATE);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_UNMAP_APERTURE_SEGMENT, h), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, h), 0);
    cr_assert_eq(r.evicted, 0);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_APERTURE);
    same(dev, h, buf, T_MiB, "aperture");
    free(buf);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Offered content, pinned and locked allocations.
 * =========================================================================================== */

/* spec 15.26: "purge (mark content lost -> reclaim reports DISCARDED ...)"; Display docs:
 * offered allocations are discarded rather than evicted. An offered allocation in a preserved
 * segment keeps its content (OK). */
Test(power, offered_content_discarded_reclaim_reports_it)
{
    vidmm_device *dev = p_dev(false);
    uint8_t *bv, *bs;
    vidmm_handle v = placed(dev, false, Q, P_VOL, 0, &bv, 31, NULL);
    vidmm_handle sb = placed(dev, false, Q, P_SBY, 0, &bs, 32, NULL);
    struct vidmm_offer_args oa;
    memset(&oa, 0, sizeof oa);
    oa.size_of = sizeof oa;
    vidmm_handle both[2] = { v, sb };
    oa.allocations = both;
    oa.count = 2;
    oa.priority = VIDMM_OFFER_PRIORITY_HIGH;
    T_OK(vidmm_offer(dev, &oa));
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_STANDBY);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(r.discarded, 1);
    cr_assert_eq(r.evicted, 0);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, v, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, v), 0, "offered content was paged out");
    struct vidmm_reclaim_args ra;
    memset(&ra, 0, sizeof ra);
    ra.size_of = sizeof ra;
    ra.allocations = both;
    ra.count = 2;
    uint32_t res[2] = { 9, 9 };
    bool disc[2] = { false, true };
    ra.results = res;
    ra.discarded = disc;
    T_OK(vidmm_reclaim(dev, &ra));
    cr_assert_eq(res[0], VIDMM_RECLAIM_DISCARDED);
    cr_assert_eq(res[1], VIDMM_RECLAIM_OK);
    cr_assert(disc[0] && !disc[1]);
    t_expect_fill(dev, v, 0, Q, VIDMM_DISCARDED_PATTERN);
    same(dev, sb, bs, Q, "offered in a segment standby preserves");
    free(bv), free(bs);
    vidmm_device_destroy(dev);
}

/* spec 15.26: "pinned allocations are restored by the engine"; spec 10: pinned allocations do
 * not move - restored at the same place, saved and brought back by TRANSFERs in that order. */
Test(power, pinned_restored_in_place)
{
    vidmm_device *dev = p_dev(false);
    uint8_t *bo, *bv, *cpu_o = NULL, *cpu_v = NULL;
    vidmm_handle o = placed(dev, false, 128 * T_KiB, P_VOL, VIDMM_ALLOC_OVERLAY, &bo, 41, &cpu_o);
    vidmm_handle v = placed(dev, false, Q, P_VOL, 0, &bv, 42, &cpu_v);
    const struct vidmm_alloc_info before = t_query(dev, o);
    cr_assert(before.pinned);
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_STANDBY);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(r.restored, 1);
    cr_assert_eq(r.evicted, 1);
    cr_assert_eq(r.purged_bytes, P_SEG, "the pinned range is purged too (it is restored after)");
    const struct vidmm_alloc_info after = t_query(dev, o);
    cr_assert_eq(after.where, VIDMM_WHERE_SEGMENT);
    cr_assert_eq(after.segment_id, before.segment_id);
    cr_assert_eq(after.offset, before.offset, "a pinned allocation moved");
    const ptrdiff_t out = t_log_find(&b, VIDMM_PAGING_TRANSFER, o, 0);
    cr_assert_geq(out, 0);
    cr_assert_eq(b.op[out].src.segment_id, P_VOL);
    const ptrdiff_t back = t_log_find(&b, VIDMM_PAGING_TRANSFER, o, (size_t)out + 1);
    cr_assert_gt(back, out, "not restored");
    cr_assert_eq(b.op[back].dst.segment_id, P_VOL);
    cr_assert_eq(b.op[back].dst.segment_address, b.op[out].src.segment_address);
    cr_assert(memcmp(cpu_o, bo, 128 * T_KiB) == 0, "the pinned allocation's bytes were not restored");
    cr_assert(t_is_fill(cpu_v, Q, VIDMM_POWER_PURGE_PATTERN), "the evicted one's old bytes survived the purge");
    same(dev, v, bv, Q, "evicted next to a pinned one");
    free(bo), free(bv);
    vidmm_device_destroy(dev);
}

/* spec 6.4: "A lock guarantees the returned VA stays valid/readable/writable until unlock": an
 * allocation locked in a purged segment is saved and restored in place like a pinned one; the
 * lock's pointer still shows its content after the transition. */
Test(power, locked_pointer_stays_valid)
{
    vidmm_device *dev = p_dev(false);
    uint8_t *buf, *cpu = NULL;
    vidmm_handle h = placed(dev, false, Q, P_VOL, 0, &buf, 51, &cpu);
    uint8_t *p = t_lock(dev, h, 0);
    cr_assert_eq(p, cpu, "locked in place in its CPU-visible segment");
    struct vidmm_power_args r = power(dev, VIDMM_POWER_HIBERNATE);
    cr_assert_eq(r.restored, 1);
    cr_assert_eq(r.evicted, 0);
    cr_assert(memcmp(p, buf, Q) == 0, "the lock's pointer lost its content");
    t_unlock(dev, h);
    same(dev, h, buf, Q, "locked across hibernate");
    free(buf);
    vidmm_device_destroy(dev);
}

/* spec 2.3: 101 - "partially purged" in hibernate. Engine policy (wddm2.h): the allocations kept
 * in place keep their bytes there (the preserved part, no transfer), the rest is purged. */
Test(power, partially_preserved_keeps_pinned_in_place)
{
    vidmm_device *dev = p_dev(false);
    uint8_t *bo, *bv, *cpu_o = NULL, *cpu_v = NULL;
    vidmm_handle o = placed(dev, false, 128 * T_KiB, P_PART, VIDMM_ALLOC_OVERLAY, &bo, 61, &cpu_o);
    vidmm_handle v = placed(dev, false, Q, P_PART, 0, &bv, 62, &cpu_v);
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_HIBERNATE);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(r.restored, 0);
    cr_assert_eq(r.evicted, 1);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, o), 0, "the preserved part was paged");
    cr_assert_eq(r.purged_bytes, 3 * P_SEG - 128 * T_KiB, "000, 100 whole; 101 but the preserved part");
    cr_assert(memcmp(cpu_o, bo, 128 * T_KiB) == 0);
    cr_assert(t_is_fill(cpu_v, Q, VIDMM_POWER_PURGE_PATTERN));
    same(dev, v, bv, Q, "101 in hibernate");
    free(bo), free(bv);
    vidmm_device_destroy(dev);
}

/* spec 10 / 15.5: PermanentSysMem keeps its system-memory copy; a clean one is current, so
 * the purge drops the segment copy (DISCARD_CONTENT, no transfer) and loses nothing. */
Test(power, clean_permanent_sysmem_dropped_not_lost)
{
    vidmm_device *dev = p_dev(false);
    struct vidmm_alloc_desc d = t_adesc(Q, T_SET(P_VOL));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h = t_alloc(dev, &d);
    static uint8_t buf[Q];
    t_bytes(buf, sizeof buf, 71);
    t_write(dev, h, 0, buf, sizeof buf); /* into its system-memory copy */
    t_use(dev, h, 0);                     /* paged in, clean */
    t_log_clear(dev);
    (void)power(dev, VIDMM_POWER_STANDBY);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, h, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, h), 0);
    same(dev, h, buf, sizeof buf, "clean PermanentSysMem");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * WDDM2.
 * =========================================================================================== */

/* spec 12: "VidMm makes every allocation on a device's list resident before scheduling any of
 * that device's contexts": after the resume the residency list is resident again (paged back
 * by the transition), its GPU VAs translate to the restored bytes; an allocation not on the
 * list stays evicted. */
Test(power, wddm2_residency_list_resident_after_resume)
{
    vidmm_device *dev = p_dev(true);
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    uint8_t *bl, *bu;
    vidmm_handle listed = placed(dev, true, Q, P_VOL, 0, &bl, 81, NULL);
    vidmm_handle loose = placed(dev, true, Q, P_VOL, 0, &bu, 82, NULL);
    w2_evict(dev, loose, VIDMM_EVICT_ONLY_IF_NECESSARY); /* off the list, still in place */
    const uint64_t va = w2_reserve(sp, 0, Q);
    w2_map(sp, va, listed, 0, Q);
    w2_drain(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_HIBERNATE);
    cr_assert_eq(r.evicted, 2);
    cr_assert_eq(r.repaged, 1);
    cr_assert_leq(r.paging_fence, vidmm_wddm2_paging_fence_completed(dev));
    cr_assert_eq(w2_status(dev, listed, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    cr_assert_eq(w2_status(dev, loose, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    cr_assert_eq(w2_refs(dev, listed), 1);
    struct vidmm_va_translation tr;
    T_OK(vidmm_va_translate(sp, va, &tr));
    cr_assert_eq(tr.segment_id, P_VOL);
    cr_assert(memcmp(tr.cpu, bl, Q) == 0, "the VA does not show the restored content");
    same(dev, listed, bl, Q, "listed");
    same(dev, loose, bu, Q, "not listed");
    struct vidmm_va_ref ref = { va, Q, 0, 0 };
    uint64_t fence = 0;
    T_OK(vidmm_va_submit(sp, &ref, 1, 0, &fence));
    T_OK(vidmm_fence_signal(dev, fence));
    free(bl), free(bu);
    vidmm_device_destroy(dev);
}

/* spec 11 + 15.26 on WDDM2: an offered resident-listed allocation in a purged segment is
 * discarded (not paged back by the resume: it is offered); reclaim reports DISCARDED and pages
 * it back in with a paging fence. */
Test(power, wddm2_offered_listed_discarded_then_reclaimed)
{
    vidmm_device *dev = p_dev(true);
    uint8_t *buf;
    vidmm_handle h = placed(dev, true, Q, P_VOL, 0, &buf, 91, NULL);
    struct vidmm_offer_args oa;
    memset(&oa, 0, sizeof oa);
    oa.size_of = sizeof oa;
    oa.allocations = &h;
    oa.count = 1;
    oa.priority = VIDMM_OFFER_PRIORITY_NORMAL;
    T_OK(vidmm_offer(dev, &oa));
    struct vidmm_power_args r = power(dev, VIDMM_POWER_STANDBY);
    cr_assert_eq(r.discarded, 1);
    cr_assert_eq(r.repaged, 0);
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    struct vidmm_reclaim_args ra;
    memset(&ra, 0, sizeof ra);
    ra.size_of = sizeof ra;
    ra.allocations = &h;
    ra.count = 1;
    uint32_t res = 9;
    ra.results = &res;
    T_RC(vidmm_reclaim(dev, &ra), VIDMM_PENDING);
    cr_assert_eq(res, VIDMM_RECLAIM_DISCARDED);
    T_OK(vidmm_wddm2_paging_fence_wait(dev, ra.paging_fence, UINT64_MAX));
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    t_expect_fill(dev, h, 0, Q, VIDMM_DISCARDED_PATTERN);
    free(buf);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Failure paths.
 * =========================================================================================== */

/* wddm2.h: the GPU not idle is VIDMM_E_BUSY at once, before the paging queued earlier is waited
 * for - here an eviction's transfer that waits for the GPU: waiting for it would never end (no
 * wait timeout) or end in VIDMM_E_TIMEOUT (50 ms), as the caller acting as the GPU cannot signal
 * during the call. Nothing changed: the transfer still queued, the content (a pinned allocation
 * in the purged segment, the evicted one) intact; once the fence is signalled the transition
 * runs and loses nothing. (The old order - drain, then the check - hangs here: timeout.) */
Test(power, busy_gpu_with_queued_paging_is_busy_at_once, .timeout = 30)
{
    for (int k = 0; k < 2; k++) {
        vidmm_device *dev = p_dev_ex(true, k ? 50ull * 1000 * 1000 : 0, 0);
        vidmm_va_space *sp = w2_space(dev, T_PROC);
        uint8_t *bl, *bo;
        vidmm_handle l = placed(dev, true, Q, P_VOL, 0, &bl, 91, NULL);
        vidmm_handle o = placed(dev, true, 128 * T_KiB, P_VOL, VIDMM_ALLOC_OVERLAY, &bo, 92, NULL);
        const uint64_t va = w2_reserve(sp, 0, Q);
        w2_map(sp, va, l, 0, Q);
        w2_drain(dev);
        struct vidmm_va_ref ref = { va, Q, VIDMM_REF_WRITE, 0 };
        uint64_t f = 0;
        T_OK(vidmm_va_submit(sp, &ref, 1, 0, &f));
        w2_evict(dev, l, 0); /* its transfer out waits for the GPU */
        const uint64_t done = vidmm_wddm2_paging_fence_completed(dev);
        struct t_snap s;
        t_snap1(&s, dev, o);
        struct vidmm_power_args r;
        T_REFUSED(&s, power_rc(dev, VIDMM_POWER_STANDBY, &r), VIDMM_E_BUSY);
        T_REFUSED(&s, power_rc(dev, VIDMM_POWER_HIBERNATE, &r), VIDMM_E_BUSY);
        cr_assert_eq(vidmm_wddm2_paging_fence_completed(dev), done, "the queued transfer ran");
        cr_assert_eq(t_query(dev, o).where, VIDMM_WHERE_SEGMENT);
        T_OK(vidmm_fence_signal(dev, f));
        r = power(dev, VIDMM_POWER_STANDBY);
        cr_assert_eq(r.restored, 1);
        same(dev, l, bl, Q, "evicted while the GPU used it");
        same(dev, o, bo, 128 * T_KiB, "pinned");
        free(bl), free(bo);
        vidmm_va_space_destroy(sp);
        vidmm_device_destroy(dev);
    }
}

/* wddm2.h: no backing store for an allocation that must be paged out (the backing-store reserve
 * taken by another allocation's content) is VIDMM_E_NO_MEMORY before anything changes: the save
 * area of the pinned allocation is given back, no paging, no byte overwritten, both contents
 * intact in place. With the reserve free again the transition runs and the pinned allocation is
 * restored (its restore needs no memory: it never left its place). */
Test(power, no_backing_store_nothing_changed)
{
    vidmm_device *dev = p_dev_ex(false, 0, Q);
    struct vidmm_alloc_desc fd = t_adesc(Q, T_SET(P_VOL));
    vidmm_handle filler = t_alloc(dev, &fd);
    uint8_t *bf = malloc(Q);
    cr_assert_not_null(bf);
    t_bytes(bf, Q, 93);
    t_write(dev, filler, 0, bf, Q); /* not placed: its content takes the whole reserve */
    uint8_t *bv, *bo, *cpu_v = NULL, *cpu_o = NULL;
    vidmm_handle v = placed(dev, false, 128 * T_KiB, P_VOL, 0, &bv, 94, &cpu_v);
    vidmm_handle o = placed(dev, false, 128 * T_KiB, P_VOL, VIDMM_ALLOC_OVERLAY, &bo, 95, &cpu_o);
    const struct vidmm_alloc_info iv = t_query(dev, v), io = t_query(dev, o);
    struct t_snap s;
    vidmm_handle both[2] = { v, o };
    t_snap(&s, dev, both, 2);
    struct vidmm_power_args r;
    T_REFUSED(&s, power_rc(dev, VIDMM_POWER_STANDBY, &r), VIDMM_E_NO_MEMORY);
    T_REFUSED(&s, power_rc(dev, VIDMM_POWER_HIBERNATE, &r), VIDMM_E_NO_MEMORY);
    cr_assert(memcmp(cpu_v, bv, 128 * T_KiB) == 0, "the segment's bytes were overwritten");
    cr_assert(memcmp(cpu_o, bo, 128 * T_KiB) == 0, "the pinned allocation's bytes were overwritten");
    cr_assert_eq(t_query(dev, v).offset, iv.offset);
    cr_assert_eq(t_query(dev, o).offset, io.offset);
    same(dev, filler, bf, Q, "the content in the reserve");
    T_OK(vidmm_alloc_destroy(dev, filler));
    r = power(dev, VIDMM_POWER_STANDBY);
    cr_assert_eq(r.evicted, 1);
    cr_assert_eq(r.restored, 1);
    cr_assert_eq(t_query(dev, o).offset, io.offset, "the pinned allocation moved");
    cr_assert(memcmp(cpu_o, bo, 128 * T_KiB) == 0, "the pinned allocation was not restored");
    same(dev, v, bv, 128 * T_KiB, "paged out");
    free(bf), free(bv), free(bo);
    vidmm_device_destroy(dev);
}
