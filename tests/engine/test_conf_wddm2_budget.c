/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_budget.c - conformance: per-process budgets per segment group on
 * a WDDM2 device (spec 12, 15.22): Budget / CurrentUsage / CurrentReservation /
 * AvailableForReservation for LOCAL and NON_LOCAL, counting only LocalBudgetGroup /
 * NonLocalBudgetGroup segments, ChangeVideoMemoryReservation within [0,
 * AvailableForReservation], and budget changes seen through NumBytesToTrim. */
#include "t_wddm2.h"

#define Q (256 * T_KiB)

static struct vidmm_video_memory_info qvm(vidmm_device *dev, uint32_t process, uint32_t group)
{
    struct vidmm_video_memory_info i;
    memset(&i, 0, sizeof i);
    i.size_of = sizeof i;
    int rc = vidmm_wddm2_query_video_memory(dev, process, group, &i);
    cr_assert_eq(rc, 0, "vidmm_wddm2_query_video_memory() returned %d (%s)", rc, vidmm_strerror(rc));
    return i;
}

/* spec 12: D3DKMT_QUERYVIDEOMEMORYINFO MemorySegmentGroup LOCAL = 0, NON_LOCAL = 1. */
Test(wddm2_budget, group_values)
{
    cr_assert_eq(VIDMM_SEGMENT_GROUP_LOCAL, 0);
    cr_assert_eq(VIDMM_SEGMENT_GROUP_NON_LOCAL, 1);
}

/* spec 15.22: "counting only LocalBudgetGroup (LOCAL) and NonLocalBudgetGroup (NON_LOCAL)
 * segments" - the budget of a fresh process is its group's segments' total; nothing used. */
Test(wddm2_budget, initial_values)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_video_memory_info l = qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL);
    struct vidmm_video_memory_info n = qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL);
    cr_assert_eq(l.budget, W2_LOCAL_MAX);
    cr_assert_eq(n.budget, W2_NONLOCAL_MAX);
    cr_assert(l.current_usage == 0 && l.current_reservation == 0 && n.current_usage == 0);
    cr_assert_eq(l.available_for_reservation, W2_LOCAL_MAX);
    cr_assert_eq(n.available_for_reservation, W2_NONLOCAL_MAX);
    vidmm_device_destroy(dev);
}

/* spec 15.22: segments outside both groups make no budget at all. */
Test(wddm2_budget, unflagged_segments_count_nowhere)
{
    struct vidmm_segment_desc segs[2];
    segs[0] = t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_aper_seg(T_APE_BASE, T_MiB, VIDMM_SEGMENT_APPLICATION_TARGET);
    struct vidmm_device_desc d = t_ddesc(segs, 2);
    d.flags |= VIDMM_DEVICE_WDDM2;
    vidmm_device *dev = t_dev(&d);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).budget, 0);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL).budget, 0);
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(1));
    w2_resident(dev, h); /* charged nowhere: a budget of 0 does not stop it */
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, 0);
    vidmm_device_destroy(dev);
}

/* spec 12: CurrentUsage follows MakeResident / Evict, per group, per process. */
Test(wddm2_budget, usage_follows_residency)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle l = t_alloc_simple(dev, Q, T_SET(T_LOC)), a = t_alloc_simple(dev, 2 * Q, T_SET(T_APE));
    struct vidmm_alloc_desc od = t_adesc(Q, T_SET(T_VIS));
    od.process = T_OTHER_PROC;
    vidmm_handle o = t_alloc(dev, &od);
    w2_resident(dev, l);
    w2_resident(dev, l); /* a second reference charges nothing more */
    w2_resident(dev, a);
    w2_resident(dev, o);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, Q);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL).current_usage, 2 * Q);
    cr_assert_eq(qvm(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, Q);
    w2_evict(dev, l, 0);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, Q);
    w2_evict(dev, l, VIDMM_EVICT_ONLY_IF_NECESSARY); /* off the list: uncharged though still there */
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, 0);
    T_OK(vidmm_alloc_destroy(dev, a));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL).current_usage, 0);
    vidmm_device_destroy(dev);
}

/* spec 12: "D3DKMT_CHANGEVIDEOMEMORYRESERVATION sets Reservation in [0,
 * AvailableForReservation]"; 15.22: outside it -> STATUS_INVALID_PARAMETER. */
Test(wddm2_budget, reservation_range)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 3 * Q));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_reservation, 3 * Q);
    /* Another process may reserve what is left, not more. */
    struct vidmm_video_memory_info o = qvm(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL);
    cr_assert_eq(o.available_for_reservation, W2_LOCAL_MAX - 3 * Q);
    T_RC(vidmm_wddm2_change_reservation(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL, W2_LOCAL_MAX - 3 * Q + T_PG),
         VIDMM_E_INVALID_ARG);
    cr_assert_eq(qvm(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_reservation, 0,
                 "a refused reservation changed it");
    T_OK(vidmm_wddm2_change_reservation(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL, W2_LOCAL_MAX - 3 * Q));
    /* A process's own reservation does not limit its next one. */
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 3 * Q));
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 0));
    T_RC(vidmm_wddm2_change_reservation(dev, T_PROC, 2, 0), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_change_reservation(NULL, T_PROC, 0, 0), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* wddm2.h: the budget never goes below the reservation (the host's shrink stops there). */
Test(wddm2_budget, budget_not_below_reservation)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 2 * Q));
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).budget, 2 * Q);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 3 * Q));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).budget, 3 * Q);
    vidmm_device_destroy(dev);
}

/* spec 15.22: "budget changes are observable through NumBytesToTrim": the host shrinks the
 * budget under what is resident; the next make-resident says by how much to trim. */
Test(wddm2_budget, shrink_seen_through_bytes_to_trim)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, 2 * Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    struct vidmm_video_memory_info i = qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL);
    cr_assert(i.current_usage > i.budget);
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, &b, 1, 0, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, 2 * Q, "usage 2Q + Q over a budget of Q");
    vidmm_device_destroy(dev);
}

/* wddm2.h: queries change nothing and refuse bad arguments, '*out' untouched. */
Test(wddm2_budget, query_rules)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_video_memory_info i;
    memset(&i, 0xAB, sizeof i);
    i.size_of = sizeof i;
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 2, &i), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 0, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_query_video_memory(NULL, T_PROC, 0, &i), VIDMM_E_INVALID_ARG);
    i.size_of = sizeof i - 1;
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 0, &i), VIDMM_E_INVALID_ARG);
    cr_assert_eq(i.budget, 0xABABABABABABABABull, "a refused query wrote its output");
    vidmm_device_destroy(dev);
    dev = t_dev_std();
    i.size_of = sizeof i;
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 0, &i), VIDMM_E_INVALID_ARG); /* WDDM1 device */
    T_RC(vidmm_wddm2_change_reservation(dev, T_PROC, 0, 0), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}
