/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_power.c - conformance: simulated standby and hibernate (spec 2.3,
 * 10, 15.26) on WDDM1 and WDDM2 devices - which segments each state purges (the
 * PreservedDuringStandby / PreservedDuringHibernate / PartiallyPreservedDuringHibernate table,
 * hybrid sleep as hibernate), that purged memory really loses its bytes while every content
 * the spec keeps survives (checksums), that offered content is dropped and reclaim says so,
 * that pinned and locked allocations are restored in place, that the next use pages evicted
 * ones back, and that a WDDM2 device's residency list is resident again after the resume; a
 * partially preserved segment's SystemMemoryEndAddress (spec 2.2): offsets up to it kept, the
 * rest purged, its validation, and the segment table's stride (older descriptors). The spec
 * text each test checks is quoted above it. */
#include "t_wddm2.h"
#include "t_helpers.h"

#include <stddef.h>
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

/* p_segs(): the power device's segment table; 'end' is the partial segment's
 * system_memory_end (spec 2.2 SystemMemoryEndAddress; 0: not given). */
static void p_segs(struct vidmm_segment_desc segs[5], uint64_t end)
{
    const uint32_t v = VIDMM_SEGMENT_CPU_VISIBLE;
    segs[0] = t_mem_seg(0x10000000ull, P_SEG, v);
    segs[1] = t_mem_seg(0x20000000ull, P_SEG, v | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY);
    segs[2] = t_mem_seg(0x30000000ull, P_SEG,
                        v | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE);
    segs[3] = t_mem_seg(0x40000000ull, P_SEG, v | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY |
                                                  VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE);
    segs[3].system_memory_end = end;
    segs[4] = t_aper_seg(0x50000000ull, 2 * T_MiB, 0);
}

/* p_dev_end(): the device below, its partial segment's system_memory_end 'end', with a wait
 * timeout and a backing-store reserve (0: defaults). */
static vidmm_device *p_dev_end(bool wddm2, uint64_t end, uint64_t wait_timeout_ns, uint64_t sysmem_reserve)
{
    static struct vidmm_segment_desc segs[5];
    p_segs(segs, end);
    struct vidmm_device_desc d = t_ddesc(segs, 5);
    if (wddm2)
        d.flags |= VIDMM_DEVICE_WDDM2;
    d.wait_timeout_ns = wait_timeout_ns;
    d.sysmem_reserve = sysmem_reserve;
    return t_dev(&d);
}

/* p_dev_ex(): the device below with a wait timeout and a backing-store reserve (0: defaults). */
static vidmm_device *p_dev_ex(bool wddm2, uint64_t wait_timeout_ns, uint64_t sysmem_reserve)
{
    return p_dev_end(wddm2, 0, wait_timeout_ns, sysmem_reserve);
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

/* =============================================================================================
 * SystemMemoryEndAddress (spec 2.2): the partially preserved part, by segment offset.
 * =========================================================================================== */

/* The partial segment's system_memory_end in the tests below: offsets 0..512 KiB - 1 are
 * driver-reserved system memory (kept), 512 KiB..1 MiB BIOS-reserved (lost on hibernate). */
#define E_END (512 * T_KiB - 1)
#define E_LOST (P_SEG - (E_END + 1))

/* Records of the paging log that name 'h'. */
static size_t records_of(const struct t_log_buf *b, vidmm_handle h)
{
    size_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        n += b->op[i].allocation == h;
    return n;
}

/* spec 2.2: "driver-reserved memory spans segment offsets 0..SystemMemoryEndAddress inclusive,
 * BIOS-reserved memory the rest; allocations beyond it are purged on hibernate"; spec 2.3:
 * "Hybrid sleep behaves as hibernate". An allocation lying wholly at or below the end keeps its
 * place and bytes (no paging at all); one reaching beyond it - straddling the end or wholly
 * above - is purged as in a purged segment: paged out with its content, paged back in by its
 * next use, nothing lost (checksums). The free bytes at or below the end keep theirs (the
 * stale bytes of a destroyed allocation, the part of the straddling allocation's old place
 * below the end); every byte above it reads VIDMM_POWER_PURGE_PATTERN. */
Test(power, system_memory_end_keeps_below_purges_beyond)
{
    const uint32_t states[2] = { VIDMM_POWER_HIBERNATE, VIDMM_POWER_HYBRID_SLEEP };
    for (int k = 0; k < 2; k++) {
        vidmm_device *dev = p_dev_end(false, E_END, 0, 0);
        uint8_t *bh, *bb, *bs, *be, *seg = NULL, *cpu_b = NULL, *cpu_s = NULL, *cpu_e = NULL;
        vidmm_handle hole = placed(dev, false, 64 * T_KiB, P_PART, 0, &bh, 101, &seg);
        vidmm_handle below = placed(dev, false, 192 * T_KiB, P_PART, 0, &bb, 102, &cpu_b);
        vidmm_handle strad = placed(dev, false, 384 * T_KiB, P_PART, 0, &bs, 103, &cpu_s);
        vidmm_handle beyond =
            placed(dev, false, 128 * T_KiB, P_PART, VIDMM_ALLOC_FROM_END_OF_SEGMENT, &be, 104, &cpu_e);
        /* The layout: [0, 64K) free after the destroy below, [64K, 256K) below, [256K, 640K)
         * straddling the end, [640K, 896K) free, [896K, 1M) beyond. */
        cr_assert_eq(t_query(dev, hole).offset, 0);
        cr_assert_eq(t_query(dev, below).offset, 64 * T_KiB);
        cr_assert_eq(t_query(dev, strad).offset, 256 * T_KiB);
        cr_assert_eq(t_query(dev, beyond).offset, P_SEG - 128 * T_KiB);
        cr_assert_eq(cpu_b, seg + 64 * T_KiB);
        cr_assert_eq(cpu_s, seg + 256 * T_KiB);
        cr_assert_eq(cpu_e, seg + P_SEG - 128 * T_KiB);
        T_OK(vidmm_alloc_destroy(dev, hole));
        t_bytes(bh, 64 * T_KiB, 105);
        memcpy(seg, bh, 64 * T_KiB); /* free bytes below the end, as a stale pointer wrote them */
        const struct vidmm_alloc_info ib = t_query(dev, below);
        t_log_clear(dev);
        struct vidmm_power_args r = power(dev, states[k]);
        static struct t_log_buf b;
        t_log_take(dev, &b);
        cr_assert_eq(r.evicted, 2, "state %u: the straddling and the beyond allocations are purged", states[k]);
        cr_assert_eq(r.discarded, 0);
        cr_assert_eq(r.restored, 0);
        cr_assert_eq(r.purged_bytes, 2 * P_SEG + E_LOST, "000 and 100 whole, 101 above the end only");
        /* Below: not paged, not moved, bytes kept. */
        cr_assert_eq(records_of(&b, below), 0, "the allocation below the end was paged");
        const struct vidmm_alloc_info ib2 = t_query(dev, below);
        cr_assert_eq(ib2.where, VIDMM_WHERE_SEGMENT);
        cr_assert_eq(ib2.offset, ib.offset);
        cr_assert(memcmp(cpu_b, bb, 192 * T_KiB) == 0, "the allocation below the end lost bytes");
        same(dev, below, bb, 192 * T_KiB, "below the end");
        /* Beyond and straddling: paged out of the segment before the purge. */
        const vidmm_handle out[2] = { strad, beyond };
        for (int i = 0; i < 2; i++) {
            const ptrdiff_t t = t_log_find(&b, VIDMM_PAGING_TRANSFER, out[i], 0);
            cr_assert_geq(t, 0, "allocation %d reaching beyond the end was not paged out", i);
            cr_assert_eq(b.op[t].src.segment_id, P_PART);
            cr_assert_eq(t_query(dev, out[i]).where, VIDMM_WHERE_SYSMEM);
        }
        /* The segment's memory: kept at or below the end, lost above. */
        cr_assert(memcmp(seg, bh, 64 * T_KiB) == 0, "free bytes below the end were overwritten");
        cr_assert(memcmp(seg + 256 * T_KiB, bs, E_END + 1 - 256 * T_KiB) == 0,
                  "the straddling allocation's old bytes below the end were overwritten");
        cr_assert(t_is_fill(seg + E_END + 1, E_LOST, VIDMM_POWER_PURGE_PATTERN),
                  "bytes above the end survived the hibernate");
        /* The next use pages them back in; nothing was lost. */
        t_use(dev, strad, 0);
        t_use(dev, beyond, 0);
        cr_assert_eq(t_query(dev, strad).where, VIDMM_WHERE_SEGMENT);
        cr_assert_eq(t_query(dev, beyond).where, VIDMM_WHERE_SEGMENT);
        same(dev, strad, bs, 384 * T_KiB, "straddling the end, paged back in");
        same(dev, beyond, be, 128 * T_KiB, "beyond the end, paged back in");
        free(bh), free(bb), free(bs), free(be);
        vidmm_device_destroy(dev);
    }
}

/* spec 2.2 with 15.26, 6.4 and 11: beyond the end the purge is that of a purged segment - a
 * pinned allocation (an overlay: pinned ones live in the last 20 % of a segment, beyond this
 * end) is saved and restored in place (TRANSFER out, TRANSFER back to the same address), an
 * offered one is discarded (reclaim says DISCARDED); at or below the end a locked allocation is
 * not paged and its lock's pointer keeps its bytes, and an offered one keeps its content
 * (reclaim says OK). */
Test(power, system_memory_end_kept_in_place_and_offered)
{
    vidmm_device *dev = p_dev_end(false, E_END, 0, 0);
    uint8_t *bl, *bf1, *bk, *bf2, *bo, *seg = NULL, *cpu_o = NULL;
    vidmm_handle l = placed(dev, false, 128 * T_KiB, P_PART, 0, &bl, 111, &seg);
    vidmm_handle f1 = placed(dev, false, 128 * T_KiB, P_PART, 0, &bf1, 112, NULL);
    vidmm_handle k = placed(dev, false, 256 * T_KiB, P_PART, 0, &bk, 113, NULL);
    vidmm_handle f2 = placed(dev, false, 128 * T_KiB, P_PART, 0, &bf2, 114, NULL);
    vidmm_handle o = placed(dev, false, 128 * T_KiB, P_PART, VIDMM_ALLOC_OVERLAY, &bo, 115, &cpu_o);
    cr_assert_eq(t_query(dev, l).offset, 0);
    cr_assert_eq(t_query(dev, f1).offset, 128 * T_KiB);
    cr_assert_eq(t_query(dev, k).offset, 256 * T_KiB);
    cr_assert_eq(t_query(dev, f2).offset, E_END + 1);
    const uint64_t o_off = t_query(dev, o).offset;
    cr_assert_gt(o_off, E_END, "the pinned allocation lies beyond the end");
    cr_assert(t_query(dev, o).pinned);
    uint8_t *p = t_lock(dev, l, 0);
    cr_assert_eq(p, seg, "locked in place in its CPU-visible segment");
    struct vidmm_offer_args oa;
    memset(&oa, 0, sizeof oa);
    oa.size_of = sizeof oa;
    vidmm_handle offered[2] = { f1, f2 };
    oa.allocations = offered;
    oa.count = 2;
    oa.priority = VIDMM_OFFER_PRIORITY_HIGH;
    T_OK(vidmm_offer(dev, &oa));
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_HIBERNATE);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(r.restored, 1, "the pinned allocation beyond the end is saved and restored");
    cr_assert_eq(r.discarded, 1, "the offered allocation beyond the end is discarded");
    cr_assert_eq(r.evicted, 0);
    cr_assert_eq(r.purged_bytes, 2 * P_SEG + E_LOST);
    cr_assert_eq(records_of(&b, l), 0, "the locked allocation below the end was paged");
    cr_assert_eq(records_of(&b, f1), 0, "the offered allocation below the end was paged");
    cr_assert_eq(records_of(&b, k), 0, "the allocation below the end was paged");
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, f2, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, f2), 0, "offered content was paged out");
    const ptrdiff_t out = t_log_find(&b, VIDMM_PAGING_TRANSFER, o, 0);
    cr_assert_geq(out, 0, "the pinned allocation beyond the end was not saved");
    cr_assert_eq(b.op[out].src.segment_id, P_PART);
    const ptrdiff_t back = t_log_find(&b, VIDMM_PAGING_TRANSFER, o, (size_t)out + 1);
    cr_assert_gt(back, out, "not restored");
    cr_assert_eq(b.op[back].dst.segment_id, P_PART);
    cr_assert_eq(b.op[back].dst.segment_address, b.op[out].src.segment_address);
    cr_assert_eq(t_query(dev, o).offset, o_off, "a pinned allocation moved");
    cr_assert(memcmp(p, bl, 128 * T_KiB) == 0, "the lock's pointer below the end lost its content");
    cr_assert(memcmp(cpu_o, bo, 128 * T_KiB) == 0, "the pinned allocation beyond the end was not restored");
    /* The discarded [512K, 640K) and the free bytes up to the pinned allocation lost theirs. */
    cr_assert(t_is_fill(seg + E_END + 1, (size_t)(o_off - (E_END + 1)), VIDMM_POWER_PURGE_PATTERN));
    t_unlock(dev, l);
    same(dev, l, bl, 128 * T_KiB, "locked below the end");
    struct vidmm_reclaim_args ra;
    memset(&ra, 0, sizeof ra);
    ra.size_of = sizeof ra;
    ra.allocations = offered;
    ra.count = 2;
    uint32_t res[2] = { 9, 9 };
    ra.results = res;
    T_OK(vidmm_reclaim(dev, &ra));
    cr_assert_eq(res[0], VIDMM_RECLAIM_OK, "offered below the end");
    cr_assert_eq(res[1], VIDMM_RECLAIM_DISCARDED, "offered beyond the end");
    same(dev, f1, bf1, 128 * T_KiB, "offered below the end");
    same(dev, k, bk, 256 * T_KiB, "below the end");
    free(bl), free(bf1), free(bk), free(bf2), free(bo);
    vidmm_device_destroy(dev);
}

/* WDDM2, spec 2.2 with 12 and wddm2.h (page-table entries never point at emptied memory): a
 * residency-listed allocation below the end causes no paging record at all - not even an
 * UPDATE_PAGE_TABLE - and its VA still translates to its bytes in place; one beyond the end has
 * its entries invalidated before the TRANSFER that empties its place, and is paged back by the
 * resume with its content. */
Test(power, wddm2_system_memory_end)
{
    vidmm_device *dev = p_dev_end(true, E_END, 0, 0);
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    uint8_t *bb, *be;
    vidmm_handle below = placed(dev, true, Q, P_PART, 0, &bb, 121, NULL);
    vidmm_handle beyond = placed(dev, true, Q, P_PART, VIDMM_ALLOC_FROM_END_OF_SEGMENT, &be, 122, NULL);
    cr_assert_eq(t_query(dev, below).offset, 0);
    cr_assert_eq(t_query(dev, beyond).offset, P_SEG - Q);
    const uint64_t va_b = w2_reserve(sp, 0, Q), va_e = w2_reserve(sp, 0, Q);
    w2_map(sp, va_b, below, 0, Q);
    w2_map(sp, va_e, beyond, 0, Q);
    w2_drain(dev);
    struct vidmm_va_translation tb0;
    T_OK(vidmm_va_translate(sp, va_b, &tb0));
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_HIBERNATE);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(r.evicted, 1);
    cr_assert_eq(r.repaged, 1);
    cr_assert_eq(r.restored, 0);
    cr_assert_eq(records_of(&b, below), 0, "the allocation below the end has paging records");
    const ptrdiff_t t = t_log_find(&b, VIDMM_PAGING_TRANSFER, beyond, 0);
    const ptrdiff_t u = w2_log_upt(&b, beyond, 0);
    cr_assert_geq(t, 0, "the allocation beyond the end was not paged out");
    cr_assert_eq(b.op[t].src.segment_id, P_PART);
    cr_assert_geq(u, 0, "the entries of the allocation beyond the end were not invalidated");
    cr_assert_lt(u, t, "its entries were invalidated after the TRANSFER that emptied its place");
    cr_assert_eq(w2_status(dev, below, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    cr_assert_eq(w2_status(dev, beyond, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    struct vidmm_va_translation tb, te;
    T_OK(vidmm_va_translate(sp, va_b, &tb));
    T_OK(vidmm_va_translate(sp, va_e, &te));
    cr_assert_eq(tb.cpu, tb0.cpu, "the allocation below the end moved");
    cr_assert(memcmp(tb.cpu, bb, Q) == 0, "the VA below the end does not show its bytes");
    cr_assert(memcmp(te.cpu, be, Q) == 0, "the VA beyond the end does not show the paged-back content");
    free(bb), free(be);
    vidmm_va_space_destroy(sp);
    vidmm_device_destroy(dev);
}

/* spec 2.2: SystemMemoryEndAddress is a byte offset, not a page: with an end that is not the
 * last byte of a page the bytes up to it are kept and those after it lost, each lost byte
 * reading the pattern in the phase of its segment offset (as a whole-segment purge leaves it).
 * The page-granular allocation holding the end reaches beyond it and is purged. */
Test(power, system_memory_end_unaligned)
{
    const uint64_t end = 512 * T_KiB + 1; /* offsets 0..512K+1 kept */
    vidmm_device *dev = p_dev_end(false, end, 0, 0);
    uint8_t *bl, *bs, *seg = NULL;
    vidmm_handle low = placed(dev, false, 512 * T_KiB, P_PART, 0, &bl, 151, &seg);
    vidmm_handle strad = placed(dev, false, 64 * T_KiB, P_PART, 0, &bs, 152, NULL);
    cr_assert_eq(t_query(dev, strad).offset, 512 * T_KiB);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_HIBERNATE);
    cr_assert_eq(r.evicted, 1, "the page holding the end reaches beyond it");
    cr_assert_eq(r.purged_bytes, 2 * P_SEG + P_SEG - (end + 1));
    cr_assert(memcmp(seg, bl, 512 * T_KiB) == 0);
    cr_assert(memcmp(seg + 512 * T_KiB, bs, 2) == 0, "the bytes at or below the end were overwritten");
    for (uint64_t o = end + 1; o < P_SEG; o++)
        cr_assert_eq(seg[o], (uint8_t)(VIDMM_POWER_PURGE_PATTERN >> (8 * (o % 4))), "offset %llu",
                     (unsigned long long)o);
    same(dev, low, bl, 512 * T_KiB, "below the end");
    same(dev, strad, bs, 64 * T_KiB, "holding the end");
    free(bl), free(bs);
    vidmm_device_destroy(dev);
}

/* spec 2.3: 101 is "not purged" in standby - the end does not matter there: nothing in the
 * partial segment is paged or overwritten, beyond the end included. */
Test(power, system_memory_end_standby_unaffected)
{
    vidmm_device *dev = p_dev_end(false, E_END, 0, 0);
    uint8_t *be, *cpu_e = NULL;
    vidmm_handle beyond = placed(dev, false, Q, P_PART, VIDMM_ALLOC_FROM_END_OF_SEGMENT, &be, 131, &cpu_e);
    uint8_t *seg = cpu_e - (P_SEG - Q);
    static uint8_t free_bytes[P_SEG - Q];
    t_bytes(free_bytes, sizeof free_bytes, 132);
    memcpy(seg, free_bytes, sizeof free_bytes);
    t_log_clear(dev);
    struct vidmm_power_args r = power(dev, VIDMM_POWER_STANDBY);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(r.purged_bytes, P_SEG, "only 000 is purged in standby");
    cr_assert_eq(records_of(&b, beyond), 0);
    cr_assert_eq(t_query(dev, beyond).where, VIDMM_WHERE_SEGMENT);
    cr_assert(memcmp(cpu_e, be, Q) == 0);
    cr_assert(memcmp(seg, free_bytes, sizeof free_bytes) == 0, "standby overwrote the partial segment");
    free(be);
    vidmm_device_destroy(dev);
}

/* The refusal line vidmm_device_create() logs for 'd': exactly one, naming 'field'. */
static void refused_naming(const struct vidmm_device_desc *d, const char *field, const char *why)
{
    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_DEBUG);
    t_create_refused(d, why);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_DEBUG]), 1, "%s: %d refusal lines", why,
                 atomic_load(&log.count[VIDMM_LOG_DEBUG]));
    cr_assert_not_null(strstr(log.first_debug, "vidmm_device_create"), "%s: \"%s\"", why, log.first_debug);
    cr_assert_not_null(strstr(log.first_debug, field), "%s: the line does not name %s: \"%s\"", why, field,
                       log.first_debug);
}

/* spec 2.2: SystemMemoryEndAddress is "set non-zero only with PartiallyPreservedDuringHibernate"
 * and is an inclusive offset in the segment; 15.1: a broken rule fails the creation
 * (VIDMM_E_INVALID_ARG, nothing created). The segment table's stride (device.h, as
 * SegmentDescriptorStride) is sizeof(struct vidmm_segment_desc), the first layout's size, or 0
 * (this version's); any other is refused. Each refusal logs its line. */
Test(power, system_memory_end_and_stride_rules)
{
    struct vidmm_segment_desc segs[5];
    p_segs(segs, P_SEG - 1);
    t_segs_ok(segs, 5, "system_memory_end = size - 1");
    p_segs(segs, VIDMM_PAGE_SIZE - 1);
    t_segs_ok(segs, 5, "system_memory_end = one page - 1");
    p_segs(segs, 1);
    t_segs_ok(segs, 5, "system_memory_end = 1");
    const uint64_t too_far[3] = { P_SEG, P_SEG + 1, UINT64_MAX };
    for (int i = 0; i < 3; i++) {
        p_segs(segs, too_far[i]);
        struct vidmm_device_desc d = t_ddesc(segs, 5);
        refused_naming(&d, "system_memory_end", "system_memory_end at or beyond the size");
    }
    /* Non-zero without PARTIALLY_PRESERVED_DURING_HIBERNATE: 000, 100, 110, the aperture. */
    const int others[4] = { 0, 1, 2, 4 };
    for (int i = 0; i < 4; i++) {
        p_segs(segs, 0);
        segs[others[i]].system_memory_end = VIDMM_PAGE_SIZE - 1;
        struct vidmm_device_desc d = t_ddesc(segs, 5);
        refused_naming(&d, "system_memory_end", "system_memory_end without PARTIALLY_PRESERVED_DURING_HIBERNATE");
    }
    /* An aperture never purged: an end there would mean nothing (review of issue 27). */
    p_segs(segs, 0);
    segs[4].flags |= VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE;
    segs[4].system_memory_end = VIDMM_PAGE_SIZE - 1;
    {
        struct vidmm_device_desc ad = t_ddesc(segs, 5);
        refused_naming(&ad, "system_memory_end", "system_memory_end on an aperture segment");
    }
    /* The stride. */
    p_segs(segs, E_END);
    struct vidmm_device_desc d = t_ddesc(segs, 5);
    /* A descriptor size holding every field but not the struct's tail padding is no version's:
     * refused, as every size other than sizeof or an earlier version's exact one (device.h). */
    d.size = offsetof(struct vidmm_device_desc, segment_desc_size) + sizeof d.segment_desc_size;
    if (d.size != sizeof d)
        refused_naming(&d, "desc->size", "a size that is no version's (no tail padding)");
    d.size = sizeof d;
    cr_assert_eq(d.segment_desc_size, sizeof(struct vidmm_segment_desc), "VIDMM_DEVICE_DESC_INIT's stride");
    const uint32_t bad[5] = { 1, (uint32_t)VIDMM_SEGMENT_DESC_SIZE_0 + 4, (uint32_t)sizeof(struct vidmm_segment_desc) + 8,
                              2 * (uint32_t)sizeof(struct vidmm_segment_desc), UINT32_MAX };
    for (int i = 0; i < 5; i++) {
        d.segment_desc_size = bad[i];
        refused_naming(&d, "segment_desc_size", "a stride of no layout");
    }
    d.segment_desc_size = 0;
    t_create_ok(&d, "stride 0: this version's layout");
    d.segment_desc_size = (uint32_t)sizeof(struct vidmm_segment_desc);
    t_create_ok(&d, "stride sizeof(struct vidmm_segment_desc)");
    /* The first layout through its stride: system_memory_end cannot be given, so a table that
     * has one is not seen (the partial segment's end reads 0). */
    void *old = malloc(5 * VIDMM_SEGMENT_DESC_SIZE_0); /* exactly: a read past it is caught by ASan */
    cr_assert_not_null(old);
    p_segs(segs, 0);
    t_segs_pack_v0(old, segs, 5);
    d.segments = old;
    d.segment_desc_size = (uint32_t)VIDMM_SEGMENT_DESC_SIZE_0;
    t_create_ok(&d, "stride VIDMM_SEGMENT_DESC_SIZE_0 over a table of the first layout");
    /* The neighbours' rules still hold through the stride: the second segment's size broken. */
    segs[1].size = P_SEG + 1;
    t_segs_pack_v0(old, segs, 5);
    refused_naming(&d, "segments[].size", "a broken segment read through the first layout's stride");
    free(old);
}

/* One device's run for the comparison below: a pinned and a plain allocation in the partial
 * segment, a plain one in the volatile segment, then a hibernate. Its log, result and
 * statistics are compared with another device's. */
struct p_run {
    struct vidmm_power_args r;
    struct vidmm_stats st;
    struct t_log_buf log;
    uint64_t offsets[3];
};

static void p_run(const struct vidmm_device_desc *d, struct p_run *out)
{
    vidmm_device *dev = t_dev(d);
    uint8_t *b[3];
    vidmm_handle h[3];
    h[0] = placed(dev, false, 128 * T_KiB, P_PART, VIDMM_ALLOC_OVERLAY, &b[0], 141, NULL);
    h[1] = placed(dev, false, Q, P_PART, 0, &b[1], 142, NULL);
    h[2] = placed(dev, false, Q, P_VOL, 0, &b[2], 143, NULL);
    t_log_clear(dev);
    out->r = power(dev, VIDMM_POWER_HIBERNATE);
    t_log_take(dev, &out->log);
    for (int i = 0; i < 3; i++) {
        out->offsets[i] = t_query(dev, h[i]).offset;
        same(dev, h[i], b[i], i ? Q : 128 * T_KiB, "after the hibernate");
        free(b[i]);
    }
    out->st = t_stats(dev);
    vidmm_device_destroy(dev);
}

/* device.h: a descriptor whose 'size' ends before segment_desc_size is an older caller's, with
 * a segment table of the first layout (VIDMM_SEGMENT_DESC_SIZE_0 bytes a segment, no
 * system_memory_end): it creates the same device as today's descriptor with system_memory_end
 * 0 - the same segments, and the same paging, purge and results for the same calls. Neither
 * the descriptor nor the table is read past its end (both allocated to their exact size: ASan
 * builds catch a read beyond); the stride field past the descriptor's end is not read. Both
 * older sizes (before wait_timeout_ns, before segment_desc_size) are checked. */
Test(power, old_descriptor_creates_the_same_device)
{
    static struct vidmm_segment_desc segs[5];
    p_segs(segs, 0);
    struct vidmm_device_desc dn = t_ddesc(segs, 5);
    static struct p_run want, got;
    p_run(&dn, &want);
    cr_assert_eq(want.r.restored, 0, "101 with no end: the pinned allocation keeps its bytes in place");
    cr_assert_eq(want.r.evicted, 2);
    const size_t old_sizes[2] = { offsetof(struct vidmm_device_desc, segment_desc_size),
                                  offsetof(struct vidmm_device_desc, wait_timeout_ns) };
    for (int k = 0; k < 2; k++) {
        void *table = malloc(5 * VIDMM_SEGMENT_DESC_SIZE_0);
        cr_assert_not_null(table);
        t_segs_pack_v0(table, segs, 5);
        struct vidmm_device_desc full = dn;
        full.segments = table;
        full.segment_desc_size = 77; /* past the old descriptor's end: must not be read */
        full.size = old_sizes[k];
        void *od = malloc(old_sizes[k]);
        cr_assert_not_null(od);
        memcpy(od, &full, old_sizes[k]);
        p_run(od, &got);
        cr_assert_eq(memcmp(&got.r, &want.r, sizeof got.r), 0, "old size %zu: another power result", old_sizes[k]);
        cr_assert_eq(memcmp(got.offsets, want.offsets, sizeof got.offsets), 0, "old size %zu: other places",
                     old_sizes[k]);
        cr_assert_eq(got.st.segment_count, want.st.segment_count);
        for (uint32_t i = 0; i < want.st.segment_count; i++) {
            const struct vidmm_segment_stats *g = &got.st.segments[i], *w = &want.st.segments[i];
            cr_assert(g->size == w->size && g->used == w->used && g->largest_free == w->largest_free &&
                          g->allocations == w->allocations,
                      "old size %zu: segment %u differs", old_sizes[k], i + 1);
        }
        cr_assert_eq(got.log.n, want.log.n, "old size %zu: %zu paging records, want %zu", old_sizes[k], got.log.n,
                     want.log.n);
        for (size_t i = 0; i < want.log.n; i++) {
            const struct vidmm_paging_op *g = &got.log.op[i], *w = &want.log.op[i];
            cr_assert(g->type == w->type && g->flags == w->flags && g->size == w->size &&
                          g->src.segment_id == w->src.segment_id && g->src.segment_address == w->src.segment_address &&
                          g->dst.segment_id == w->dst.segment_id && g->dst.segment_address == w->dst.segment_address,
                      "old size %zu: paging record %zu differs (%s, want %s)", old_sizes[k], i, t_op_name(g->type),
                      t_op_name(w->type));
        }
        free(od);
        free(table);
    }
}
