/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_place.c - conformance: placement (spec 15.3), eviction victims (15.4),
 * eviction destinations (15.5), dirty tracking (15.6) and priorities (15.19). Suites are named
 * item15_NN after the item they check; the spec text each test checks is quoted above it. */
#include "t_engine.h"

#include <stdlib.h>
#include <string.h>

/* One CPU-visible memory segment of 1 MiB: four 256 KiB allocations fill it. */
#define ONE (1 * T_MiB)
#define Q (256 * T_KiB)

static vidmm_handle mk(vidmm_device *dev, uint64_t size, uint32_t set, uint32_t prio)
{
    struct vidmm_alloc_desc d = t_adesc(size, set);
    d.priority = prio;
    return t_alloc(dev, &d);
}

/* Four 256 KiB allocations filling the one-segment device, made resident in order a[0]..a[3]
 * (so a[0] is the least recently used). */
static void fill4(vidmm_device *dev, vidmm_handle a[4], const uint32_t prio[4])
{
    for (int i = 0; i < 4; i++) {
        a[i] = mk(dev, Q, T_SET(1), prio ? prio[i] : VIDMM_PRIORITY_NORMAL);
        t_use(dev, a[i], 0);
        struct vidmm_alloc_info in = t_query(dev, a[i]);
        cr_assert_eq(in.offset, (uint64_t)i * Q, "fill4: allocation %d at %llu", i, (unsigned long long)in.offset);
    }
}

/* Only a[victim] left the segment (it is in system memory); the others stay where they were. */
static void only_evicted(vidmm_device *dev, const vidmm_handle *a, int n, int victim)
{
    for (int i = 0; i < n; i++) {
        struct vidmm_alloc_info in = t_query(dev, a[i]);
        if (i == victim)
            cr_assert_eq(in.where, VIDMM_WHERE_SYSMEM, "allocation %d (the expected victim) is at where=%u", i,
                         in.where);
        else
            cr_assert_eq(in.where, VIDMM_WHERE_SEGMENT, "allocation %d was evicted instead of allocation %d", i,
                         victim);
    }
}

/* =============================================================================================
 * spec 15.3: placement search.
 * =========================================================================================== */

/* spec 15.3: "candidates = PreferredSegment.SegmentId0..4 in order". */
Test(item15_03, preferred_segment_first)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC) | T_SET(T_APE));
    d.preferred_segment = T_PREF(0, T_LOC);
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_LOC);
    d.preferred_segment = T_PREF(0, T_APE) | T_PREF(1, T_VIS);
    h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_APE);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "then the remaining supported segments by ascending ID". */
Test(item15_03, remaining_by_ascending_id)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_LOC) | T_SET(T_APE));
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_LOC);
    h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC) | T_SET(T_APE));
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_VIS);
    vidmm_device_destroy(dev);
}

/* spec 15.3: candidates in order - when SegmentId0 has no room the next preference is used.
 * Assumption (brief: "within a segment the lowest free address that fits"; spec 15.4 evicts
 * only "when space is missing"): a later candidate with free space is taken before anything
 * is evicted. */
Test(item15_03, next_preference_when_full)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle full = t_alloc_simple(dev, T_LOC_SIZE, T_SET(T_LOC));
    t_use(dev, full, 0);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC) | T_SET(T_APE));
    d.preferred_segment = T_PREF(0, T_LOC) | T_PREF(1, T_APE);
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_APE, "placed in %u, expected the second preference",
                 t_query(dev, h).segment_id);
    cr_assert_eq(t_query(dev, full).where, VIDMM_WHERE_SEGMENT, "the occupant of SegmentId0 was evicted");
    vidmm_device_destroy(dev);
}

/* spec 15.3: "(stop at the first 0)" - after SegmentId0 = LOC, SegmentId1 = 0, SegmentId2 = APE
 * is not a candidate; the remaining segments follow by ascending ID (VIS before APE). */
Test(item15_03, preferences_stop_at_first_zero)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle full = t_alloc_simple(dev, T_LOC_SIZE, T_SET(T_LOC));
    t_use(dev, full, 0);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC) | T_SET(T_APE));
    d.preferred_segment = T_PREF(0, T_LOC) | T_PREF(1, 0) | T_PREF(2, T_APE);
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_VIS, "placed in %u: a preference after the 0 was used",
                 t_query(dev, h).segment_id);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "In a segment, scan bottom-up" - the lowest free address that fits. */
Test(item15_03, bottom_up_lowest_free_address)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle c = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, a, NULL);
    t_resident(dev, b, NULL);
    t_resident(dev, c, NULL);
    cr_assert_eq(t_query(dev, a).offset, 0);
    cr_assert_eq(t_query(dev, b).offset, 64 * T_KiB);
    cr_assert_eq(t_query(dev, c).offset, 128 * T_KiB);
    t_evict(dev, b);
    vidmm_handle d = t_alloc_simple(dev, 32 * T_KiB, T_SET(T_VIS));
    t_resident(dev, d, NULL);
    cr_assert_eq(t_query(dev, d).offset, 64 * T_KiB, "32 KiB placed at %llu, the lowest hole is at 64 KiB",
                 (unsigned long long)t_query(dev, d).offset);
    vidmm_handle e = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, e, NULL);
    cr_assert_eq(t_query(dev, e).offset, 192 * T_KiB, "64 KiB placed at %llu; the 32 KiB hole cannot hold it",
                 (unsigned long long)t_query(dev, e).offset);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "scan ... top-down" for FromEndOfSegment. */
Test(item15_03, top_down_from_end_of_segment)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_FROM_END_OF_SEGMENT;
    vidmm_handle a = t_alloc(dev, &d);
    d.size = 32 * T_KiB;
    vidmm_handle b = t_alloc(dev, &d);
    t_resident(dev, a, NULL);
    t_resident(dev, b, NULL);
    cr_assert_eq(t_query(dev, a).offset, T_VIS_SIZE - 64 * T_KiB);
    cr_assert_eq(t_query(dev, b).offset, T_VIS_SIZE - 96 * T_KiB);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "top-down" when "DirectionN = 1" (spec 3.1 [ambiguous]: treat 1 as "from the
 * end"), for the preference that is used: Direction0 for SegmentId0, Direction1 for SegmentId1. */
Test(item15_03, top_down_direction_bit)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC));
    d.preferred_segment = T_PREF(0, T_VIS) | T_PREF_DOWN(0);
    vidmm_handle a = t_alloc(dev, &d);
    t_resident(dev, a, NULL);
    cr_assert_eq(t_query(dev, a).segment_id, T_VIS);
    cr_assert_eq(t_query(dev, a).offset, T_VIS_SIZE - 64 * T_KiB);
    vidmm_handle full = t_alloc_simple(dev, T_LOC_SIZE, T_SET(T_LOC));
    t_use(dev, full, 0);
    d.preferred_segment = T_PREF(0, T_LOC) | T_PREF(1, T_VIS) | T_PREF_DOWN(1);
    vidmm_handle b = t_alloc(dev, &d);
    t_resident(dev, b, NULL);
    cr_assert_eq(t_query(dev, b).segment_id, T_VIS);
    cr_assert_eq(t_query(dev, b).offset, T_VIS_SIZE - 128 * T_KiB, "Direction1 ignored: offset %llu",
                 (unsigned long long)t_query(dev, b).offset);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "honour Alignment", bottom-up and top-down. */
Test(item15_03, alignment_honoured)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, 4 * T_KiB, T_SET(T_VIS));
    t_resident(dev, a, NULL);
    struct vidmm_alloc_desc d = t_adesc(4 * T_KiB, T_SET(T_VIS));
    d.alignment = 64 * T_KiB;
    vidmm_handle b = t_alloc(dev, &d);
    t_resident(dev, b, NULL);
    cr_assert_eq(t_query(dev, b).offset, 64 * T_KiB, "aligned allocation at %llu", (unsigned long long)t_query(dev, b).offset);
    d.flags |= VIDMM_ALLOC_FROM_END_OF_SEGMENT;
    vidmm_handle c = t_alloc(dev, &d);
    t_resident(dev, c, NULL);
    cr_assert_eq(t_query(dev, c).offset, T_VIS_SIZE - 64 * T_KiB, "top-down aligned allocation at %llu",
                 (unsigned long long)t_query(dev, c).offset);
    cr_assert_eq(t_query(dev, c).gpu_address % (64 * T_KiB), 0);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "with UseBanking, try HintedBank Bank0..3 (own direction bits) in the SegmentId0
 * segment before the whole segment". Banks of 256 KiB: [0,256K) [256K,512K) [512K,768K) [768K,1M). */
Test(item15_03, hinted_banks)
{
    static const uint64_t ends[3] = { 256 * T_KiB, 512 * T_KiB, 768 * T_KiB };
    struct vidmm_segment_desc s = t_mem_seg(T_VIS_BASE, ONE, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_USE_BANKING);
    s.bank_count = 4;
    s.bank_ends = ends;
    struct vidmm_device_desc dd = t_ddesc(&s, 1);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc d = t_adesc(Q, T_SET(1));
    d.preferred_segment = T_PREF(0, 1);
    d.hinted_bank = T_BANK(0, 2);
    vidmm_handle a = t_alloc(dev, &d);
    t_resident(dev, a, NULL);
    cr_assert_eq(t_query(dev, a).offset, 256 * T_KiB, "Bank0 = 2: placed at %llu", (unsigned long long)t_query(dev, a).offset);
    d.size = 64 * T_KiB;
    d.hinted_bank = T_BANK(0, 2) | T_BANK(1, 4);
    vidmm_handle b = t_alloc(dev, &d);
    t_resident(dev, b, NULL);
    cr_assert_eq(t_query(dev, b).offset, 768 * T_KiB, "bank 2 full, Bank1 = 4: placed at %llu",
                 (unsigned long long)t_query(dev, b).offset);
    d.hinted_bank = T_BANK(0, 3) | T_BANK_DOWN(0);
    vidmm_handle c = t_alloc(dev, &d);
    t_resident(dev, c, NULL);
    cr_assert_eq(t_query(dev, c).offset, 768 * T_KiB - 64 * T_KiB, "Bank0 = 3 top-down: placed at %llu",
                 (unsigned long long)t_query(dev, c).offset);
    d.hinted_bank = 0;
    vidmm_handle e = t_alloc(dev, &d);
    t_resident(dev, e, NULL);
    cr_assert_eq(t_query(dev, e).offset, 0, "no bank hint: placed at %llu", (unsigned long long)t_query(dev, e).offset);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "Overlay/Capture may only be placed in the top 20 % of the segment" (two of them,
 * not overlapping). */
Test(item15_03, overlay_capture_top_20_percent)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_OVERLAY;
    vidmm_handle o = t_alloc(dev, &d);
    d.flags = VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_CAPTURE;
    vidmm_handle c = t_alloc(dev, &d);
    t_resident(dev, o, NULL);
    t_resident(dev, c, NULL);
    struct vidmm_alloc_info io = t_query(dev, o), ic = t_query(dev, c);
    cr_assert_geq(io.offset * 5, T_VIS_SIZE * 4, "overlay at %llu", (unsigned long long)io.offset);
    cr_assert_geq(ic.offset * 5, T_VIS_SIZE * 4, "capture at %llu", (unsigned long long)ic.offset);
    cr_assert_leq(io.offset + 64 * T_KiB, T_VIS_SIZE);
    cr_assert_leq(ic.offset + 64 * T_KiB, T_VIS_SIZE);
    cr_assert(io.offset + 64 * T_KiB <= ic.offset || ic.offset + 64 * T_KiB <= io.offset, "overlap");
    vidmm_device_destroy(dev);
}

/* spec 15.3: "Aperture segments consume commit (<= CommitLimit ...) instead of storage". */
Test(item15_03, aperture_commit_limit)
{
    struct vidmm_segment_desc s[2] = { t_mem_seg(T_VIS_BASE, ONE, VIDMM_SEGMENT_CPU_VISIBLE),
                                       t_aper_seg(T_APE_BASE, 2 * T_MiB, 0) };
    s[1].commit_limit = 256 * T_KiB;
    struct vidmm_device_desc dd = t_ddesc(s, 2);
    vidmm_device *dev = t_dev(&dd);
    vidmm_handle a = t_alloc_simple(dev, 192 * T_KiB, T_SET(2));
    vidmm_handle b = t_alloc_simple(dev, 192 * T_KiB, T_SET(2));
    t_use(dev, a, 0);
    cr_assert_eq(t_query(dev, a).where, VIDMM_WHERE_APERTURE);
    t_log_clear(dev);
    t_use(dev, b, 0);
    cr_assert_eq(t_query(dev, b).where, VIDMM_WHERE_APERTURE);
    cr_assert_eq(t_query(dev, a).where, VIDMM_WHERE_SYSMEM, "384 KiB mapped in an aperture whose commit limit is 256 KiB");
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_UNMAP_APERTURE_SEGMENT, a), 1);
    cr_assert_eq(t_stats(dev).segments[1].used, 192 * T_KiB);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.3: "... and <= ApertureSegmentCommitLimit" (the device-wide cap). */
Test(item15_03, aperture_device_commit_limit)
{
    struct vidmm_segment_desc s[2] = { t_mem_seg(T_VIS_BASE, ONE, VIDMM_SEGMENT_CPU_VISIBLE),
                                       t_aper_seg(T_APE_BASE, 2 * T_MiB, 0) };
    struct vidmm_device_desc dd = t_ddesc(s, 2);
    dd.aperture_commit_limit = 256 * T_KiB;
    vidmm_device *dev = t_dev(&dd);
    vidmm_handle a = t_alloc_simple(dev, 192 * T_KiB, T_SET(2));
    vidmm_handle b = t_alloc_simple(dev, 192 * T_KiB, T_SET(2));
    t_use(dev, a, 0);
    t_use(dev, b, 0);
    cr_assert_eq(t_query(dev, b).where, VIDMM_WHERE_APERTURE);
    cr_assert_eq(t_query(dev, a).where, VIDMM_WHERE_SYSMEM, "384 KiB mapped beyond ApertureSegmentCommitLimit 256 KiB");
    vidmm_device_destroy(dev);
}

/* Brief (spec 15.3 with 3.3): "A submission reference with VIDMM_REF_WRITE considers only
 * segments in write_set; a read reference only read_set; make_resident / lock use
 * read_set|write_set." */
Test(item15_03, reference_kind_selects_set)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC));
    d.supported_write_set = T_SET(T_LOC);
    vidmm_handle w = t_alloc(dev, &d);
    struct vidmm_residency where;
    t_signal(dev, t_submit1(dev, w, VIDMM_REF_WRITE, &where));
    cr_assert_eq(where.segment_id, T_LOC, "write reference placed in %u, outside the write set", where.segment_id);
    vidmm_handle r = t_alloc(dev, &d);
    t_signal(dev, t_submit1(dev, r, 0, &where));
    cr_assert_eq(where.segment_id, T_VIS, "read reference placed in %u", where.segment_id);
    d.supported_read_set = T_SET(T_LOC);
    d.supported_write_set = T_SET(T_VIS);
    vidmm_handle r2 = t_alloc(dev, &d);
    t_signal(dev, t_submit1(dev, r2, 0, &where));
    cr_assert_eq(where.segment_id, T_LOC, "read reference placed in %u, outside the read set", where.segment_id);
    vidmm_handle m = t_alloc(dev, &d);
    t_resident(dev, m, &where);
    cr_assert_eq(where.segment_id, T_VIS, "make-resident placed in %u; read|write set lowest is VIS", where.segment_id);
    vidmm_device_destroy(dev);
}

/* Brief (spec 15.3): a write reference to an allocation resident outside its write set moves it
 * into the write set, content intact. */
Test(item15_03, write_reference_moves_into_write_set)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC));
    d.supported_write_set = T_SET(T_LOC);
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_VIS);
    unsigned char buf[4096], back[4096];
    t_bytes(buf, sizeof(buf), 3);
    t_write(dev, h, 8192, buf, sizeof(buf));
    struct vidmm_residency where;
    t_signal(dev, t_submit1(dev, h, VIDMM_REF_WRITE, &where));
    cr_assert_eq(where.segment_id, T_LOC);
    cr_assert_eq(t_query(dev, h).segment_id, T_LOC);
    t_read(dev, h, 8192, back, sizeof(back));
    cr_assert_eq(memcmp(buf, back, sizeof(buf)), 0, "content lost moving into the write set");
    vidmm_device_destroy(dev);
}

/* spec 15.3 / device.h: 'where' receives one entry per reference: segment, offset, GPU address
 * and a host view of the bytes (the content, here the fill pattern). */
Test(item15_03, residency_entries)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h[2] = { t_alloc_simple(dev, 64 * T_KiB, T_SET(T_APE)), t_alloc_simple(dev, 32 * T_KiB, T_SET(T_VIS)) };
    struct vidmm_residency where[2];
    uint64_t f = t_submit(dev, h, NULL, 2, where);
    for (int i = 0; i < 2; i++) {
        struct vidmm_alloc_info in = t_query(dev, h[i]);
        cr_assert_eq(where[i].segment_id, in.segment_id);
        cr_assert_eq(where[i].offset, in.offset);
        cr_assert_eq(where[i].gpu_address, in.gpu_address);
        cr_assert_not_null(where[i].cpu);
        cr_assert(t_is_fill(where[i].cpu, i ? 32 * T_KiB : 64 * T_KiB, T_FILL), "entry %d: host view not the content", i);
    }
    cr_assert_eq(where[0].segment_id, T_APE);
    cr_assert_eq(where[1].segment_id, T_VIS);
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.4: eviction policy.
 * =========================================================================================== */

/* spec 15.4: "victims chosen by ascending priority value". */
Test(item15_04, victims_by_ascending_priority)
{
    vidmm_device *dev = t_dev_one(ONE);
    static const uint32_t prio[4] = { VIDMM_PRIORITY_NORMAL, VIDMM_PRIORITY_LOW, VIDMM_PRIORITY_HIGH,
                                      VIDMM_PRIORITY_NORMAL };
    vidmm_handle a[5];
    fill4(dev, a, prio);
    a[4] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a[4], 0);
    only_evicted(dev, a, 4, 1);
    cr_assert_eq(t_query(dev, a[4]).offset, Q, "new allocation not in the victim's place");
    t_expect_fill(dev, a[1], 0, Q, T_FILL);
    vidmm_device_destroy(dev);
}

/* spec 15.4: "(ties: least recently used)". */
Test(item15_04, ties_least_recently_used)
{
    vidmm_device *dev = t_dev_one(ONE);
    vidmm_handle a[5];
    fill4(dev, a, NULL);
    t_use(dev, a[0], 0);
    a[4] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a[4], 0);
    only_evicted(dev, a, 4, 1);
    vidmm_device_destroy(dev);
}

/* Brief: "LRU = last submission/lock/make_resident that touched it" - a lock counts. */
Test(item15_04, lru_touched_by_lock)
{
    vidmm_device *dev = t_dev_one(ONE);
    vidmm_handle a[5];
    fill4(dev, a, NULL);
    t_lock(dev, a[0], VIDMM_LOCK_READ_ONLY);
    t_unlock(dev, a[0]);
    a[4] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a[4], 0);
    only_evicted(dev, a, 4, 1);
    vidmm_device_destroy(dev);
}

/* Brief: "LRU = last submission/lock/make_resident that touched it" - make-resident counts. */
Test(item15_04, lru_touched_by_make_resident)
{
    vidmm_device *dev = t_dev_one(ONE);
    vidmm_handle a[5];
    fill4(dev, a, NULL);
    t_resident(dev, a[0], NULL);
    t_resident(dev, a[1], NULL);
    a[4] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a[4], 0);
    only_evicted(dev, a, 4, 2);
    vidmm_device_destroy(dev);
}

/* spec 15.4: "never pinned (Overlay/Capture ...)" - even with the lowest priority and LRU. */
Test(item15_04, pinned_never_victim)
{
    vidmm_device *dev = t_dev_one(ONE);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(1));
    d.flags |= VIDMM_ALLOC_OVERLAY;
    d.priority = VIDMM_PRIORITY_MINIMUM;
    vidmm_handle o = t_alloc(dev, &d);
    t_use(dev, o, 0);
    vidmm_handle a[3];
    for (int i = 0; i < 3; i++) {
        a[i] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
        t_use(dev, a[i], 0);
    }
    vidmm_handle e = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, e, 0);
    cr_assert_eq(t_query(dev, o).where, VIDMM_WHERE_SEGMENT, "the pinned overlay was evicted");
    only_evicted(dev, a, 3, 0);
    vidmm_device_destroy(dev);
}

/* spec 15.4 / brief: "locked ... never victims" - even with the lowest priority. */
Test(item15_04, locked_never_victim)
{
    vidmm_device *dev = t_dev_one(ONE);
    static const uint32_t prio[4] = { VIDMM_PRIORITY_LOW, VIDMM_PRIORITY_NORMAL, VIDMM_PRIORITY_NORMAL,
                                      VIDMM_PRIORITY_NORMAL };
    vidmm_handle a[5];
    fill4(dev, a, prio);
    t_lock(dev, a[0], 0);
    t_use(dev, a[2], 0);
    t_use(dev, a[3], 0);
    a[4] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a[4], 0);
    only_evicted(dev, a, 4, 1);
    cr_assert_eq(t_query(dev, a[0]).lock_count, 1);
    t_unlock(dev, a[0]);
    vidmm_device_destroy(dev);
}

/* spec 15.4 / brief: "allocations in the same submission are never victims": three allocations
 * that cannot share the segment fail the submission with NO_VIDEO_MEMORY and no fence.
 * device.h: "the allocations already paged in for it stay where they are", so only the one
 * fence, the submission count and "not all three placed" are checked. */
Test(item15_04, same_submission_never_victim)
{
    vidmm_device *dev = t_dev_one(ONE);
    vidmm_handle h[3] = { mk(dev, 512 * T_KiB, T_SET(1), VIDMM_PRIORITY_LOW),
                          mk(dev, 512 * T_KiB, T_SET(1), VIDMM_PRIORITY_LOW),
                          mk(dev, Q, T_SET(1), VIDMM_PRIORITY_HIGH) };
    struct vidmm_alloc_ref refs[3] = { { h[0], 0 }, { h[1], 0 }, { h[2], 0 } };
    uint64_t before = t_stats(dev).submissions;
    uint64_t fence = 0xF00Du;
    T_RC(vidmm_submit(dev, refs, 3, 0, NULL, &fence), VIDMM_E_NO_VIDEO_MEMORY);
    cr_assert_eq(fence, 0xF00Du, "a failed submission wrote a fence");
    cr_assert_eq(t_stats(dev).submissions, before);
    int in_seg = 0;
    for (int i = 0; i < 3; i++)
        in_seg += t_query(dev, h[i]).where == VIDMM_WHERE_SEGMENT;
    cr_assert_leq(in_seg, 2);
    vidmm_device_destroy(dev);
}

/* spec 15.4: "MAXIMUM priority only after all others" (spec 5: soft-pinned). */
Test(item15_04, maximum_priority_last)
{
    vidmm_device *dev = t_dev_one(ONE);
    static const uint32_t prio[4] = { VIDMM_PRIORITY_MAXIMUM, VIDMM_PRIORITY_HIGH, VIDMM_PRIORITY_HIGH + 1,
                                      VIDMM_PRIORITY_HIGH };
    vidmm_handle a[5];
    fill4(dev, a, prio);
    a[4] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a[4], 0);
    only_evicted(dev, a, 4, 1);
    vidmm_device_destroy(dev);
}

/* spec 15.4: "If nothing can make room -> STATUS_GRAPHICS_NO_VIDEO_MEMORY", and nothing changed. */
Test(item15_04, no_video_memory)
{
    vidmm_device *dev = t_dev_one(ONE);
    vidmm_handle a = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a, 0);
    /* Larger than every segment of its set: no eviction could ever make room, so it is refused
     * when created (issue 12, defect 4: fail fast, nothing evicted). */
    struct vidmm_alloc_desc d = t_adesc(2 * T_MiB, T_SET(1));
    d.priority = VIDMM_PRIORITY_MAXIMUM;
    vidmm_handle big = T_OUT_SENTINEL;
    struct t_snap s;
    t_snap(&s, dev, &a, 1);
    T_REFUSED(&s, vidmm_alloc_create(dev, &d, &big), VIDMM_E_NO_VIDEO_MEMORY);
    cr_assert_eq(big, T_OUT_SENTINEL, "a refused create wrote *out");
    /* One that fits an empty segment but not beside a locked allocation it may not evict:
     * the placement reports it, and nothing moved. */
    vidmm_handle fit = mk(dev, ONE, T_SET(1), VIDMM_PRIORITY_MAXIMUM);
    struct vidmm_lock_args la = t_largs(a, 0);
    T_OK(vidmm_lock(dev, &la));
    vidmm_handle hs[2] = { a, fit };
    t_snap(&s, dev, hs, 2);
    T_REFUSED(&s, vidmm_make_resident(dev, &fit, 1, NULL), VIDMM_E_CANT_EVICT_PINNED);
    struct vidmm_alloc_ref ref = { fit, 0 };
    uint64_t fence = 0;
    T_REFUSED(&s, vidmm_submit(dev, &ref, 1, 0, NULL, &fence), VIDMM_E_CANT_EVICT_PINNED);
    cr_assert_eq(fence, 0);
    t_unlock(dev, a);
    vidmm_device_destroy(dev);
}

/* spec 15.4: "If the only blocker is pinned -> STATUS_GRAPHICS_CANT_EVICT_PINNED_ALLOCATION",
 * and nothing changed. */
Test(item15_04, only_pinned_blocks)
{
    vidmm_device *dev = t_dev_one(ONE);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(1));
    d.flags |= VIDMM_ALLOC_CAPTURE;
    vidmm_handle o = t_alloc(dev, &d);
    t_use(dev, o, 0);
    vidmm_handle x = mk(dev, ONE, T_SET(1), VIDMM_PRIORITY_NORMAL);
    vidmm_handle hs[2] = { o, x };
    struct t_snap s;
    t_snap(&s, dev, hs, 2);
    T_REFUSED(&s, vidmm_make_resident(dev, &x, 1, NULL), VIDMM_E_CANT_EVICT_PINNED);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.5: eviction destination.
 * =========================================================================================== */

/* spec 15.5: "first free space in an EvictionSegmentSet aperture (MAP_APERTURE_SEGMENT then
 * TRANSFER segment->aperture)". */
Test(item15_05, to_eviction_aperture)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.eviction_set = T_SET(T_APE);
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    unsigned char buf[8192], back[8192];
    t_bytes(buf, sizeof(buf), 11);
    t_write(dev, h, 4096, buf, sizeof(buf));
    struct vidmm_alloc_info was = t_query(dev, h);
    t_log_clear(dev);
    t_evict(dev, h);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t m = t_log_find(log, VIDMM_PAGING_MAP_APERTURE_SEGMENT, h, 0);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    if (m < 0 || t < 0)
        t_log_dump(log, "eviction");
    cr_assert_geq(m, 0, "no MAP_APERTURE_SEGMENT");
    cr_assert_geq(t, 0, "no TRANSFER");
    cr_assert_lt(m, t, "TRANSFER before MAP");
    cr_assert_eq(log->op[t].src.segment_id, T_VIS);
    cr_assert_eq(log->op[t].src.segment_address, was.gpu_address);
    cr_assert_eq(log->op[t].dst.segment_id, T_APE);
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_APERTURE);
    cr_assert_eq(in.segment_id, T_APE);
    cr_assert_eq(log->op[t].dst.segment_address, in.gpu_address);
    t_read(dev, h, 4096, back, sizeof(back));
    cr_assert_eq(memcmp(buf, back, sizeof(buf)), 0);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.5: "else TRANSFER to the system-memory backing store (SegmentId 0, MDL)". */
Test(item15_05, to_system_memory)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    struct vidmm_alloc_info was = t_query(dev, h);
    t_log_clear(dev);
    t_evict(dev, h);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert_geq(t, 0);
    cr_assert_eq(log->op[t].src.segment_id, T_VIS);
    cr_assert_eq(log->op[t].src.segment_address, was.gpu_address);
    cr_assert_eq(log->op[t].dst.segment_id, 0);
    cr_assert_eq(log->op[t].dst.segment_address, 0);
    cr_assert_eq(log->op[t].size, 64 * T_KiB);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    cr_assert_eq(t_query(dev, h).segment_id, 0);
    t_expect_fill(dev, h, 0, 64 * T_KiB, T_FILL);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.5: the eviction aperture must have free space (commit) - else system memory. */
Test(item15_05, eviction_aperture_full)
{
    struct vidmm_segment_desc s[2] = { t_mem_seg(T_VIS_BASE, ONE, VIDMM_SEGMENT_CPU_VISIBLE),
                                       t_aper_seg(T_APE_BASE, 2 * T_MiB, 0) };
    s[1].commit_limit = 128 * T_KiB;
    struct vidmm_device_desc dd = t_ddesc(s, 2);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc d = t_adesc(Q, T_SET(1));
    d.eviction_set = T_SET(2);
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    t_log_clear(dev);
    t_evict(dev, h);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_MAP_APERTURE_SEGMENT, h), 0, "mapped beyond the commit limit");
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert_geq(t, 0);
    cr_assert_eq(log->op[t].dst.segment_id, 0);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    free(log);
    vidmm_device_destroy(dev);
}

/* Eviction of a PermanentSysMem-like allocation: DISCARD_CONTENT when clean, TRANSFER when dirty. */
static void permanent_like(uint32_t flag)
{
    vidmm_device *dev = t_dev_std();
    void *mem = NULL;
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= flag;
    if (flag != VIDMM_ALLOC_PERMANENT_SYSMEM) {
        cr_assert_eq(posix_memalign(&mem, 4096, 64 * T_KiB), 0);
        memset(mem, 0, 64 * T_KiB);
        d.existing_memory = mem;
    }
    vidmm_handle clean = t_alloc(dev, &d);
    vidmm_handle dirty = 0;
    void *mem2 = NULL;
    if (mem) {
        cr_assert_eq(posix_memalign(&mem2, 4096, 64 * T_KiB), 0);
        memset(mem2, 0, 64 * T_KiB);
        d.existing_memory = mem2;
    }
    dirty = t_alloc(dev, &d);
    t_use(dev, clean, 0);
    t_use(dev, dirty, VIDMM_REF_WRITE);
    unsigned char buf[4096], back[4096];
    t_bytes(buf, sizeof(buf), 5);
    t_write(dev, dirty, 0, buf, sizeof(buf));
    cr_assert(t_query(dev, dirty).dirty);
    cr_assert_not(t_query(dev, clean).dirty);
    t_log_clear(dev);
    t_evict(dev, clean);
    t_evict(dev, dirty);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_DISCARD_CONTENT, clean), 1, "clean: no DISCARD_CONTENT");
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_TRANSFER, clean), 0, "clean: transferred");
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_TRANSFER, dirty), 1, "dirty: no TRANSFER");
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_DISCARD_CONTENT, dirty), 0, "dirty: discarded");
    ptrdiff_t dc = t_log_find(log, VIDMM_PAGING_DISCARD_CONTENT, clean, 0);
    cr_assert_eq(log->op[dc].dst.segment_id, T_VIS);
    t_read(dev, dirty, 0, back, sizeof(back));
    cr_assert_eq(memcmp(buf, back, sizeof(buf)), 0, "dirty content lost");
    free(log);
    vidmm_device_destroy(dev);
    free(mem);
    free(mem2);
}

/* spec 15.5: "PermanentSysMem: DISCARD_CONTENT if not dirty, TRANSFER if dirty". */
Test(item15_05, permanent_sysmem_discard_or_transfer)
{
    permanent_like(VIDMM_ALLOC_PERMANENT_SYSMEM);
}

/* spec 15.5: "(Existing*SysMem treated the same way ...)". */
Test(item15_05, existing_sysmem_discard_or_transfer)
{
    permanent_like(VIDMM_ALLOC_EXISTING_SYSMEM);
}

/* spec 15.5 with 15.10: content survives eviction and page-in (TRANSFER back from the MDL). */
Test(item15_05, content_round_trip)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    unsigned char *buf = malloc(64 * T_KiB), *back = malloc(64 * T_KiB);
    t_bytes(buf, 64 * T_KiB, 9);
    t_write(dev, h, 0, buf, 64 * T_KiB);
    t_evict(dev, h);
    t_read(dev, h, 0, back, 64 * T_KiB);
    cr_assert_eq(memcmp(buf, back, 64 * T_KiB), 0, "content changed by the eviction");
    t_log_clear(dev);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert_geq(t, 0, "page-in without TRANSFER");
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, h), 0, "page-in of content refilled it");
    cr_assert_eq(log->op[t].src.segment_id, 0);
    cr_assert_eq(log->op[t].dst.segment_id, T_VIS);
    cr_assert_eq(log->op[t].dst.segment_address, where.gpu_address);
    cr_assert_eq(memcmp(where.cpu, buf, 64 * T_KiB), 0, "content changed by the page-in");
    free(log);
    free(buf);
    free(back);
    vidmm_device_destroy(dev);
}

/* device.h vidmm_evict(): "Locked, pinned and busy allocations are refused" - BUSY for locked and
 * busy, INVALID_ARG for unknown handles, count 0 or NULL; nothing changed. */
Test(item15_05, explicit_evict_refusals, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle l = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, l, NULL);
    t_lock(dev, l, 0);
    uint64_t f = t_submit1(dev, b, 0, NULL);
    vidmm_handle hs[2] = { l, b };
    struct t_snap s;
    t_snap(&s, dev, hs, 2);
    T_REFUSED(&s, vidmm_evict(dev, &l, 1), VIDMM_E_BUSY);
    T_REFUSED(&s, vidmm_evict(dev, &b, 1), VIDMM_E_BUSY);
    vidmm_handle bad = T_BAD_HANDLE;
    T_REFUSED(&s, vidmm_evict(dev, &bad, 1), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_evict(dev, hs, 0), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_evict(dev, NULL, 1), VIDMM_E_INVALID_ARG);
    t_signal(dev, f);
    t_unlock(dev, l);
    t_evict(dev, b);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.6: dirty tracking.
 * =========================================================================================== */

/* spec 15.6: "dirty when a submission lists it with WriteOperation = 1" (and not for a read). */
Test(item15_06, write_reference_dirty)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle r = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle w = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle h[2] = { r, w };
    uint32_t fl[2] = { 0, VIDMM_REF_WRITE };
    uint64_t f = t_submit(dev, h, fl, 2, NULL);
    cr_assert_not(t_query(dev, r).dirty, "a read reference made it dirty");
    cr_assert(t_query(dev, w).dirty, "a write reference did not make it dirty");
    t_signal(dev, f);
    cr_assert(t_query(dev, w).dirty);
    vidmm_device_destroy(dev);
}

/* spec 15.6: "when a writable CPU lock is taken on its segment location". */
Test(item15_06, writable_lock_dirty)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle r = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle w = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, r, NULL);
    t_resident(dev, w, NULL);
    t_lock(dev, r, VIDMM_LOCK_READ_ONLY);
    t_lock(dev, w, 0);
    cr_assert_not(t_query(dev, r).dirty, "a READ_ONLY lock made it dirty");
    cr_assert(t_query(dev, w).dirty, "a writable lock on the segment location did not make it dirty");
    t_unlock(dev, r);
    t_unlock(dev, w);
    cr_assert(t_query(dev, w).dirty);
    vidmm_device_destroy(dev);
}

/* Brief (spec 15.6): a vidmm_gpu_access() write marks it dirty (device.h: "A write marks it dirty"). */
Test(item15_06, gpu_write_dirty)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    unsigned char b[16];
    t_read(dev, h, 0, b, sizeof(b));
    cr_assert_not(t_query(dev, h).dirty, "a GPU read made it dirty");
    t_write(dev, h, 100, b, sizeof(b));
    cr_assert(t_query(dev, h).dirty);
    vidmm_device_destroy(dev);
}

/* spec 15.6: "dirtiness resets when a fresh copy is paged in". */
Test(item15_06, page_in_resets_dirty)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_use(dev, h, VIDMM_REF_WRITE);
    cr_assert(t_query(dev, h).dirty);
    t_evict(dev, h);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SEGMENT);
    cr_assert_not(t_query(dev, h).dirty, "still dirty after a fresh page-in");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.19: priority.
 * =========================================================================================== */

/* spec 15.19 / device.h: "Any value is allowed" for SetPriority (only the initial value may not
 * be 0); the query shows the new value. */
Test(item15_19, any_value)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    static const uint32_t v[] = { 0, 1, VIDMM_PRIORITY_NORMAL + 1, 0xFFFFFFFFu };
    for (size_t i = 0; i < 4; i++) {
        T_OK(vidmm_set_priority(dev, &h, &v[i], 1));
        cr_assert_eq(t_query(dev, h).priority, v[i]);
    }
    vidmm_device_destroy(dev);
}

/* device.h: "VIDMM_E_INVALID_ARG (unknown handle, count 0, NULL arrays: nothing changed)" - a
 * batch with one unknown handle changes none of the others. */
Test(item15_19, refusals_change_nothing)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h[2] = { t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS)), T_BAD_HANDLE };
    uint32_t p[2] = { VIDMM_PRIORITY_LOW, VIDMM_PRIORITY_LOW };
    struct t_snap s;
    t_snap1(&s, dev, h[0]);
    T_REFUSED(&s, vidmm_set_priority(dev, h, p, 2), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_set_priority(dev, h, p, 0), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_set_priority(dev, NULL, p, 1), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_set_priority(dev, h, NULL, 1), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* spec 15.19: "SetPriority applies immediately (may trigger eviction on the next placement)" -
 * the allocation lowered becomes the next victim. */
Test(item15_19, lowest_priority_evicted_next)
{
    vidmm_device *dev = t_dev_one(ONE);
    vidmm_handle a[5];
    fill4(dev, a, NULL);
    uint32_t low = VIDMM_PRIORITY_LOW;
    T_OK(vidmm_set_priority(dev, &a[2], &low, 1));
    a[4] = mk(dev, Q, T_SET(1), VIDMM_PRIORITY_NORMAL);
    t_use(dev, a[4], 0);
    only_evicted(dev, a, 4, 2);
    vidmm_device_destroy(dev);
}

/* device.h: "sets the priority of 'count' allocations (all instances) at once"; spec 15.19
 * "resource-level set applies to all allocations". */
Test(item15_19, all_instances, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    uint64_t f = t_submit1(dev, h, 0, NULL);
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_DISCARD);
    T_OK(vidmm_lock(dev, &a));
    cr_assert_neq(a.allocation, h, "no renaming of a busy allocation");
    t_unlock(dev, a.allocation);
    uint32_t p = VIDMM_PRIORITY_HIGH + 7;
    T_OK(vidmm_set_priority(dev, &h, &p, 1));
    cr_assert_eq(t_query(dev, h).priority, p);
    cr_assert_eq(t_query(dev, a.allocation).priority, p, "the other instance kept its priority");
    t_signal(dev, f);
    vidmm_device_destroy(dev);
}
