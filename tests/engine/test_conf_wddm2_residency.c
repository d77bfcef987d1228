/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_residency.c - conformance: residency on a WDDM2 device (spec 12,
 * 15.21) - the residency list with per-allocation references, MakeResident's atomicity, budget
 * failures with NumBytesToTrim, CantTrimFurther and MustSucceed, the pending status with its
 * paging fence, Evict with EvictOnlyIfNecessary and NotWrittenTo, residency queries - and the
 * budgets that MakeResident checks (15.22). The spec text each test checks is quoted above it. */
#include "t_wddm2.h"

#include <stdlib.h>

#define Q (256 * T_KiB)

static vidmm_handle mk(vidmm_device *dev, uint64_t size, uint32_t set, uint32_t process)
{
    struct vidmm_alloc_desc d = t_adesc(size, set);
    d.process = process;
    return t_alloc(dev, &d);
}

/* =============================================================================================
 * MakeResident.
 * =========================================================================================== */

/* spec 12 (Linux dxgkrnl): "MakeResident requires 1..10240 allocations"; unknown flags and
 * handles refused; nothing changes. */
Test(wddm2_residency, make_resident_rules)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    struct t_snap s;
    t_snap1(&s, dev, h);
    vidmm_handle *many = calloc(VIDMM_RESIDENCY_MAX + 1, sizeof *many);
    cr_assert_not_null(many);
    for (uint32_t i = 0; i <= VIDMM_RESIDENCY_MAX; i++)
        many[i] = h;
    vidmm_handle mixed[2] = { h, T_BAD_HANDLE };
    T_REFUSED(&s, w2_mr_rc(dev, &h, 0, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_mr_rc(dev, many, VIDMM_RESIDENCY_MAX + 1, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_mr_rc(dev, NULL, 1, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_mr_rc(dev, &h, 1, 0x4, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_mr_rc(dev, mixed, 2, 0, NULL), VIDMM_E_INVALID_ARG);
    struct vidmm_make_resident_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a - 1;
    a.allocations = &h;
    a.count = 1;
    T_REFUSED(&s, vidmm_wddm2_make_resident(dev, &a), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_make_resident(dev, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_make_resident(NULL, &a), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, h), 0, "a refused make-resident added a reference");
    /* The upper bound itself is accepted (10240 listings of one allocation). */
    struct vidmm_make_resident_args out;
    int rc = w2_mr_rc(dev, many, VIDMM_RESIDENCY_MAX, 0, &out);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "10240 listings: %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_eq(w2_refs(dev, h), VIDMM_RESIDENCY_MAX);
    free(many);
    vidmm_device_destroy(dev);
}

/* spec 12: "E_PENDING / STATUS_PENDING (added to the list, paging still in flight: wait for
 * PagingFenceValue ...)"; "S_OK (resident now)". */
Test(wddm2_residency, pending_then_resident)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    struct vidmm_make_resident_args a;
    T_RC(w2_mr_rc(dev, &h, 1, 0, &a), VIDMM_PENDING);
    cr_assert_eq(a.made_resident, 1);
    cr_assert_gt(a.paging_fence, vidmm_wddm2_paging_fence_completed(dev), "a pending fence already passed");
    cr_assert_eq(w2_refs(dev, h), 1, "the reference is taken even while paging is pending");
    T_OK(vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX));
    cr_assert_geq(vidmm_wddm2_paging_fence_completed(dev), a.paging_fence);
    t_log_clear(dev);
    const uint64_t before = t_paging_total(dev);
    struct vidmm_make_resident_args b;
    T_RC(w2_mr_rc(dev, &h, 1, 0, &b), 0); /* resident now: nothing to page */
    cr_assert_eq(t_paging_total(dev), before, "making a resident allocation resident paged");
    cr_assert_leq(b.paging_fence, vidmm_wddm2_paging_fence_completed(dev));
    cr_assert_eq(w2_refs(dev, h), 2);
    vidmm_device_destroy(dev);
}

/* spec 12: "MakeResident adds allocations and increments a per-allocation residency refcount;
 * Evict decrements; the allocation leaves the list when the count reaches 0 (N MakeResident
 * need N Evict)". */
Test(wddm2_residency, n_make_resident_need_n_evict)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    w2_resident(dev, h);
    cr_assert_eq(w2_refs(dev, h), 2);
    w2_evict(dev, h, 0);
    cr_assert_eq(w2_refs(dev, h), 1);
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY, "evicted with a reference left");
    w2_evict(dev, h, 0);
    cr_assert_eq(w2_refs(dev, h), 0);
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    vidmm_device_destroy(dev);
}

/* spec 12: a listing is a reference - an allocation listed twice in one call takes two. */
Test(wddm2_residency, duplicate_listing_counts_twice)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    vidmm_handle two[2] = { h, h };
    struct vidmm_make_resident_args a;
    int rc = w2_mr_rc(dev, two, 2, 0, &a);
    cr_assert(rc == VIDMM_PENDING, "%d", rc);
    cr_assert_eq(a.made_resident, 2);
    cr_assert_eq(w2_refs(dev, h), 2);
    T_OK(w2_evict_rc(dev, two, 2, 0, NULL));
    cr_assert_eq(w2_refs(dev, h), 0);
    vidmm_device_destroy(dev);
}

/* spec 15.21: "MakeResident is atomic - over budget -> STATUS_NO_MEMORY/E_OUTOFMEMORY with
 * NumBytesToTrim and no refcount change". */
Test(wddm2_residency, over_budget_is_atomic)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    vidmm_handle c = t_alloc_simple(dev, Q, T_SET(T_LOC));
    w2_resident(dev, a);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 2 * Q));
    vidmm_handle list[3] = { a, b, c }; /* a is resident already: +b +c = 3 Q > 2 Q */
    struct t_snap s;
    vidmm_handle snap[3] = { a, b, c };
    t_snap(&s, dev, snap, 3);
    struct vidmm_make_resident_args r;
    T_REFUSED(&s, w2_mr_rc(dev, list, 3, 0, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, Q, "NumBytesToTrim %llu, expected %llu", (unsigned long long)r.bytes_to_trim,
                 (unsigned long long)Q);
    cr_assert_eq(r.made_resident, 0);
    cr_assert_eq(w2_refs(dev, a), 1, "a refused make-resident changed a reference count");
    cr_assert_eq(w2_refs(dev, b), 0);
    cr_assert_eq(w2_refs(dev, c), 0);
    /* After trimming NumBytesToTrim the retry succeeds (spec 12: "retry in a loop"). */
    w2_evict(dev, a, 0);
    int rc = w2_mr_rc(dev, list + 1, 2, 0, &r);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "%d (%s)", rc, vidmm_strerror(rc));
    vidmm_device_destroy(dev);
}

/* spec 12: "CantTrimFurther bit 0 (succeed even if over the current budget, still fail above
 * the maximum budget)". */
Test(wddm2_residency, cant_trim_further)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    vidmm_handle a = t_alloc_simple(dev, 2 * Q, T_SET(T_VIS));
    T_RC(w2_mr_rc(dev, &a, 1, 0, NULL), VIDMM_E_NO_MEMORY);
    int rc = w2_mr_rc(dev, &a, 1, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, NULL);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "over the budget, under the maximum: %d (%s)", rc, vidmm_strerror(rc));
    /* The maximum budget of LOCAL is 2 MiB (both memory segments): 2 MiB more is above it. */
    vidmm_handle big[2] = { t_alloc_simple(dev, T_MiB, T_SET(T_VIS) | T_SET(T_LOC)),
                            t_alloc_simple(dev, T_MiB, T_SET(T_VIS) | T_SET(T_LOC)) };
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, big, 2, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, &r), VIDMM_E_NO_MEMORY);
    /* What to evict before retrying: over the maximum it failed against, not over the budget
     * (issue 27; this read 2Q + 2 MiB - Q before). */
    cr_assert_eq(r.bytes_to_trim, 2 * Q + 2 * T_MiB - W2_LOCAL_MAX, "NumBytesToTrim %llu",
                 (unsigned long long)r.bytes_to_trim);
    cr_assert_eq(w2_refs(dev, big[0]), 0);
    vidmm_device_destroy(dev);
}

/* spec 12: "MustSucceed bit 1 (put the device in error if residency cannot be achieved)";
 * 15.21: "MustSucceed failure -> device error". */
Test(wddm2_residency, must_succeed_failure_removes_device)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    vidmm_handle a = t_alloc_simple(dev, 2 * Q, T_SET(T_VIS));
    T_RC(w2_mr_rc(dev, &a, 1, VIDMM_MAKE_RESIDENT_MUST_SUCCEED, NULL), VIDMM_E_DEVICE_REMOVED);
    T_RC(w2_mr_rc(dev, &a, 1, 0, NULL), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_device_remove(dev), VIDMM_E_DEVICE_REMOVED); /* already removed */
    vidmm_device_destroy(dev);
}

/* spec 12: MustSucceed that succeeds changes nothing about the device. */
Test(wddm2_residency, must_succeed_success)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS));
    int rc = w2_mr_rc(dev, &a, 1, VIDMM_MAKE_RESIDENT_MUST_SUCCEED, NULL);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "%d", rc);
    t_alloc_simple(dev, Q, T_SET(T_VIS)); /* the device still works */
    vidmm_device_destroy(dev);
}

/* spec 12: allocations on the residency list are resident until evicted: a make-resident that
 * does not fit the segments does not evict them; it fails (E_OUTOFMEMORY) with NumBytesToTrim
 * and no reference taken. */
Test(wddm2_residency, listed_allocations_are_never_victims)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = t_alloc_simple(dev, Q, T_SET(T_VIS));
        w2_resident(dev, a[i]);
    }
    vidmm_handle e = t_alloc_simple(dev, Q, T_SET(T_VIS));
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, &e, 1, 0, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, Q);
    cr_assert_eq(w2_refs(dev, e), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(w2_status(dev, a[i], NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY, "listed allocation %d evicted", i);
    /* Once one leaves the list, its space serves. */
    w2_evict(dev, a[2], VIDMM_EVICT_ONLY_IF_NECESSARY);
    w2_resident(dev, e);
    cr_assert_eq(w2_status(dev, a[2], NULL), VIDMM_RESIDENCY_NOT_RESIDENT, "the unlisted one was not the victim");
    cr_assert_eq(w2_status(dev, e, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * MakeResident of allocations already resident (issue 15: residency.c takes a shorter path when
 * every listed allocation is placed and already has references - these check it keeps the rules).
 * =========================================================================================== */

/* spec 12: each listing adds a reference; "S_OK (resident now)" with nothing paged. */
Test(wddm2_residency, resident_again_adds_references)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    w2_resident(dev, b);
    const uint64_t before = t_paging_total(dev);
    vidmm_handle list[3] = { a, b, a };
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, list, 3, 0, &r), 0);
    cr_assert_eq(r.made_resident, 3);
    cr_assert_eq(r.bytes_to_trim, 0);
    cr_assert_leq(r.paging_fence, vidmm_wddm2_paging_fence_completed(dev));
    cr_assert_eq(t_paging_total(dev), before, "making resident allocations resident paged");
    cr_assert_eq(w2_refs(dev, a), 3);
    cr_assert_eq(w2_refs(dev, b), 2);
    vidmm_device_destroy(dev);
}

/* spec 12: "E_PENDING ... wait for PagingFenceValue" - also when the page-in an allocation
 * waits for was queued by an earlier call. */
Test(wddm2_residency, resident_again_while_paging_pending)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    struct vidmm_make_resident_args r1, r2;
    T_RC(w2_mr_rc(dev, &h, 1, 0, &r1), VIDMM_PENDING);
    T_RC(w2_mr_rc(dev, &h, 1, 0, &r2), VIDMM_PENDING);
    cr_assert_eq(r2.paging_fence, r1.paging_fence, "the second call's fence is not the page-in's");
    cr_assert_eq(w2_refs(dev, h), 2);
    T_OK(vidmm_wddm2_paging_fence_wait(dev, r2.paging_fence, UINT64_MAX));
    T_RC(w2_mr_rc(dev, &h, 1, 0, &r2), 0);
    cr_assert_eq(w2_refs(dev, h), 3);
    vidmm_device_destroy(dev);
}

/* spec 15.11: handles naming nothing are refused - also a long list of them on a device that
 * never had an allocation (no handle table yet), and handles of index 0. */
Test(wddm2_residency, unknown_handles_without_any_allocation)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle none[40];
    for (uint32_t i = 0; i < 40; i++)
        none[i] = i % 2 ? T_BAD_HANDLE : (vidmm_handle)(i << 24); /* index 0, generations */
    T_RC(w2_mr_rc(dev, none, 40, 0, NULL), VIDMM_E_INVALID_ARG);
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    for (uint32_t i = 0; i < 40; i++)
        none[i] = i % 2 ? h : (vidmm_handle)(i << 24);
    T_RC(w2_mr_rc(dev, none, 40, 0, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, h), 1);
    vidmm_device_destroy(dev);
}

/* spec 15.21 (atomic), 15.11, 15.20: a resident list with an unknown handle or an offered
 * allocation at its end is refused and no reference changes. */
Test(wddm2_residency, resident_again_refused_atomically)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    w2_resident(dev, b);
    vidmm_handle bad[3] = { a, b, T_BAD_HANDLE };
    T_RC(w2_mr_rc(dev, bad, 3, 0, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, a), 1);
    cr_assert_eq(w2_refs(dev, b), 1);
    struct vidmm_offer_args oa = { .size_of = sizeof oa, .allocations = &b, .count = 1,
                                   .priority = VIDMM_OFFER_PRIORITY_NORMAL };
    T_OK(vidmm_offer(dev, &oa));
    vidmm_handle offered[2] = { a, b };
    T_RC(w2_mr_rc(dev, offered, 2, 0, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, a), 1);
    cr_assert_eq(w2_refs(dev, b), 1);
    vidmm_device_destroy(dev);
}

/* wddm2.h "Paging queues": a queue takes only allocations of its process (or shared) - also
 * when all of them are resident; nothing changes, the queue's fence included. */
Test(wddm2_residency, resident_again_on_queue_of_other_process)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = mk(dev, Q, T_SET(T_VIS), 1), b = mk(dev, Q, T_SET(T_VIS), 2);
    w2_resident(dev, a);
    w2_resident(dev, b);
    vidmm_paging_queue *q = NULL;
    T_OK(vidmm_paging_queue_create(dev, 1, 0, &q));
    vidmm_handle list[2] = { a, b };
    struct vidmm_make_resident_args r;
    memset(&r, 0, sizeof r);
    r.size_of = sizeof r;
    r.allocations = list;
    r.count = 2;
    r.queue = q;
    T_RC(vidmm_wddm2_make_resident(dev, &r), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, a), 1);
    cr_assert_eq(w2_refs(dev, b), 1);
    r.count = 1; /* a alone: its process */
    int rc = vidmm_wddm2_make_resident(dev, &r);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "%d (%s)", rc, vidmm_strerror(rc));
    cr_assert_eq(r.paging_fence, 1, "the refused call took a value of the queue's fence");
    cr_assert_eq(w2_refs(dev, a), 2);
    T_OK(vidmm_paging_queue_destroy(q));
    vidmm_device_destroy(dev);
}

/* spec 15.4: victims by least recent use within a priority - a MakeResident of a resident
 * allocation is a use of it. */
Test(wddm2_residency, resident_again_is_a_use)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = t_alloc_simple(dev, Q, T_SET(T_VIS));
        w2_resident(dev, a[i]);
    }
    w2_resident(dev, a[0]); /* a[0] now the most recently used, a[1] the least */
    T_OK(w2_evict_rc(dev, a, 4, VIDMM_EVICT_ONLY_IF_NECESSARY, NULL));
    T_OK(w2_evict_rc(dev, a, 1, VIDMM_EVICT_ONLY_IF_NECESSARY, NULL));
    vidmm_handle e = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, e);
    cr_assert_eq(w2_status(dev, a[1], NULL), VIDMM_RESIDENCY_NOT_RESIDENT, "the least recently used stayed");
    cr_assert_eq(w2_status(dev, a[0], NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY, "the one used again was the victim");
    cr_assert_eq(w2_status(dev, a[2], NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    cr_assert_eq(w2_status(dev, a[3], NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Evict.
 * =========================================================================================== */

/* spec 15.21: "Evict below refcount 0 or of an unknown handle -> STATUS_INVALID_PARAMETER";
 * the call is atomic. */
Test(wddm2_residency, evict_rules)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    w2_drain(dev);
    struct t_snap s;
    vidmm_handle hs[2] = { a, b };
    t_snap(&s, dev, hs, 2);
    vidmm_handle ab[2] = { a, b }, aa[2] = { a, a }, bad[2] = { a, T_BAD_HANDLE };
    T_REFUSED(&s, w2_evict_rc(dev, ab, 2, 0, NULL), VIDMM_E_INVALID_ARG); /* b has no reference */
    T_REFUSED(&s, w2_evict_rc(dev, aa, 2, 0, NULL), VIDMM_E_INVALID_ARG); /* a has one, not two */
    T_REFUSED(&s, w2_evict_rc(dev, bad, 2, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_evict_rc(dev, ab, 0, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_evict_rc(dev, ab, VIDMM_RESIDENCY_MAX + 1, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_evict_rc(dev, &a, 1, 0x4, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, w2_evict_rc(dev, NULL, 1, 0, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_wddm2_evict(dev, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, a), 1, "a refused evict changed a's count");
    vidmm_device_destroy(dev);
}

/* spec 15.21: an Evict without EvictOnlyIfNecessary evicts now (queued: the transfer out is in
 * the log after the call's paging). */
Test(wddm2_residency, evict_now)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    uint8_t x = 1;
    t_write(dev, h, 0, &x, 1);
    t_log_clear(dev);
    w2_evict(dev, h, 0);
    w2_drain(dev);
    struct t_log_buf b;
    t_log_take(dev, &b);
    ptrdiff_t i = t_log_find(&b, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert(i >= 0, "no transfer out");
    cr_assert_eq(b.op[i].src.segment_id, T_VIS);
    cr_assert_eq(b.op[i].dst.segment_id, 0);
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    vidmm_device_destroy(dev);
}

/* spec 15.21: "EvictOnlyIfNecessary keeps the copy until space is needed". */
Test(wddm2_residency, evict_only_if_necessary_keeps_copy)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    w2_drain(dev);
    const uint64_t before = t_paging_total(dev);
    w2_evict(dev, h, VIDMM_EVICT_ONLY_IF_NECESSARY);
    cr_assert_eq(t_paging_total(dev), before, "EVICT_ONLY_IF_NECESSARY paged");
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    /* Made resident again: nothing to page. */
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, &h, 1, 0, &r), 0);
    cr_assert_eq(t_paging_total(dev), before);
    vidmm_device_destroy(dev);
}

/* spec 15.21: "NotWrittenTo allows discard instead of transfer"; 15.5: a discardable eviction
 * emits DISCARD_CONTENT. Never written since its first page-in: its content is the fill
 * pattern, dropped, and filled again at the next page-in. */
Test(wddm2_residency, not_written_to_discards_fill)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    t_log_clear(dev);
    w2_evict(dev, h, VIDMM_EVICT_NOT_WRITTEN_TO);
    w2_drain(dev);
    struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, h), 0, "a NotWrittenTo eviction transferred");
    ptrdiff_t d = t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, h, 0);
    cr_assert(d >= 0, "no DISCARD_CONTENT");
    cr_assert_eq(b.op[d].dst.segment_id, T_VIS);
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    t_expect_fill(dev, h, 0, (size_t)Q, T_FILL);
    t_log_clear(dev);
    w2_resident(dev, h);
    t_log_take(dev, &b);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_FILL, h), 1, "the next page-in did not fill again");
    t_expect_fill(dev, h, 0, (size_t)Q, T_FILL);
    vidmm_device_destroy(dev);
}

/* spec 15.21 NotWrittenTo: content paged in from the backing store and not written since is
 * dropped too - the backing store still holds it. */
Test(wddm2_residency, not_written_to_discards_backed_copy)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    uint8_t buf[128];
    t_bytes(buf, sizeof buf, 9);
    t_write(dev, h, 4096, buf, sizeof buf);
    w2_evict(dev, h, 0); /* written: transferred out */
    w2_resident(dev, h); /* transferred in from the backing store */
    t_log_clear(dev);
    w2_evict(dev, h, VIDMM_EVICT_NOT_WRITTEN_TO);
    w2_drain(dev);
    struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, h), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_DISCARD_CONTENT, h), 1);
    uint8_t got[128];
    t_read(dev, h, 4096, got, sizeof got);
    cr_assert_eq(memcmp(got, buf, sizeof buf), 0, "content lost by the discard");
    vidmm_device_destroy(dev);
}

/* spec 15.21: NotWrittenTo only allows the discard: content the engine knows written (by the
 * GPU, here vidmm_gpu_access) is transferred, and survives. */
Test(wddm2_residency, not_written_to_but_written_transfers)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    uint8_t buf[64];
    t_bytes(buf, sizeof buf, 4);
    t_write(dev, h, 0, buf, sizeof buf);
    t_log_clear(dev);
    w2_evict(dev, h, VIDMM_EVICT_NOT_WRITTEN_TO);
    w2_drain(dev);
    struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_DISCARD_CONTENT, h), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, h), 1);
    uint8_t got[64];
    t_read(dev, h, 0, got, sizeof got);
    cr_assert_eq(memcmp(got, buf, sizeof buf), 0);
    vidmm_device_destroy(dev);
}

/* spec 12: "TrimToBudget, Evict and failed MakeResident all report NumBytesToTrim": after the
 * host shrank the budget, an Evict says how much is still over it. */
Test(wddm2_residency, evict_reports_bytes_to_trim)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h[3];
    for (int i = 0; i < 3; i++) {
        h[i] = t_alloc_simple(dev, Q, T_SET(T_VIS));
        w2_resident(dev, h[i]);
    }
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    uint64_t trim = 0;
    T_OK(w2_evict_rc(dev, &h[0], 1, 0, &trim));
    cr_assert_eq(trim, Q, "NumBytesToTrim %llu after the evict, expected %llu", (unsigned long long)trim,
                 (unsigned long long)Q);
    T_OK(w2_evict_rc(dev, &h[1], 1, 0, &trim));
    cr_assert_eq(trim, 0);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Residency status, budgets.
 * =========================================================================================== */

/* spec 12: D3DKMT_ALLOCATIONRESIDENCYSTATUS RESIDENTINGPUMEMORY = 1, RESIDENTINSHAREDMEMORY = 2,
 * NOTRESIDENT = 3. */
Test(wddm2_residency, query_residency_status)
{
    cr_assert_eq(VIDMM_RESIDENCY_IN_GPU_MEMORY, 1);
    cr_assert_eq(VIDMM_RESIDENCY_IN_SHARED_MEMORY, 2);
    cr_assert_eq(VIDMM_RESIDENCY_NOT_RESIDENT, 3);
    vidmm_device *dev = w2_dev();
    vidmm_handle m = t_alloc_simple(dev, Q, T_SET(T_LOC)), ap = t_alloc_simple(dev, Q, T_SET(T_APE));
    vidmm_handle none = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, m);
    w2_resident(dev, ap);
    vidmm_handle hs[3] = { m, ap, none };
    uint32_t st[3] = { 0, 0, 0 }, refs[3] = { 9, 9, 9 };
    T_OK(vidmm_wddm2_query_residency(dev, hs, 3, st, refs));
    cr_assert_eq(st[0], VIDMM_RESIDENCY_IN_GPU_MEMORY);
    cr_assert_eq(st[1], VIDMM_RESIDENCY_IN_SHARED_MEMORY);
    cr_assert_eq(st[2], VIDMM_RESIDENCY_NOT_RESIDENT);
    cr_assert(refs[0] == 1 && refs[1] == 1 && refs[2] == 0);
    /* Rules: count 1..10240, handles known; nothing written on refusal. */
    uint32_t keep = 42;
    vidmm_handle bad[2] = { m, T_BAD_HANDLE };
    T_RC(vidmm_wddm2_query_residency(dev, hs, 0, &keep, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_query_residency(dev, hs, VIDMM_RESIDENCY_MAX + 1, &keep, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_query_residency(dev, NULL, 1, &keep, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_query_residency(dev, hs, 1, NULL, NULL), VIDMM_E_INVALID_ARG);
    uint32_t two[2] = { 42, 42 };
    T_RC(vidmm_wddm2_query_residency(dev, bad, 2, two, NULL), VIDMM_E_INVALID_ARG);
    cr_assert(keep == 42 && two[0] == 42 && two[1] == 42, "a refused query wrote its output");
    vidmm_device_destroy(dev);
}

/* spec 15.22: "counting only LocalBudgetGroup (LOCAL) and NonLocalBudgetGroup (NON_LOCAL)
 * segments" - an allocation whose segment is in no budget group is never over budget. */
Test(wddm2_residency, only_budget_group_segments_count)
{
    struct vidmm_segment_desc segs[2];
    segs[0] = t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[1] = t_mem_seg(T_LOC_BASE, T_MiB, 0); /* in no group */
    struct vidmm_device_desc d = t_ddesc(segs, 2);
    d.flags |= VIDMM_DEVICE_WDDM2;
    vidmm_device *dev = t_dev(&d);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 0));
    vidmm_handle free_of_budget = t_alloc_simple(dev, Q, T_SET(2));
    int rc = w2_mr_rc(dev, &free_of_budget, 1, 0, NULL);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "a segment in no group was charged: %d (%s)", rc, vidmm_strerror(rc));
    vidmm_handle local = t_alloc_simple(dev, Q, T_SET(1));
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, &local, 1, 0, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, Q);
    vidmm_device_destroy(dev);
}

/* spec 15.22: per-process budgets - one process over its budget does not stop another. */
Test(wddm2_residency, budgets_are_per_process)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 0));
    vidmm_handle mine = mk(dev, Q, T_SET(T_VIS), T_PROC), theirs = mk(dev, Q, T_SET(T_VIS), T_OTHER_PROC);
    T_RC(w2_mr_rc(dev, &mine, 1, 0, NULL), VIDMM_E_NO_MEMORY);
    int rc = w2_mr_rc(dev, &theirs, 1, 0, NULL);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "%d (%s)", rc, vidmm_strerror(rc));
    vidmm_device_destroy(dev);
}

/* spec 15.22: the charge follows the placement group - an aperture (NON_LOCAL) allocation does
 * not count against the LOCAL budget. */
Test(wddm2_residency, charged_to_its_group)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 0));
    vidmm_handle ap = t_alloc_simple(dev, Q, T_SET(T_APE));
    w2_resident(dev, ap);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL, 0));
    vidmm_handle ap2 = t_alloc_simple(dev, Q, T_SET(T_APE));
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, &ap2, 1, 0, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, 2 * Q, "NON_LOCAL usage Q + Q over a budget of 0");
    vidmm_device_destroy(dev);
}

/* spec 15.22: destroying a listed allocation gives its charge back. */
Test(wddm2_residency, destroy_uncharges)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    T_RC(w2_mr_rc(dev, &b, 1, 0, NULL), VIDMM_E_NO_MEMORY);
    T_OK(vidmm_alloc_destroy(dev, a));
    int rc = w2_mr_rc(dev, &b, 1, 0, NULL);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "%d (%s)", rc, vidmm_strerror(rc));
    vidmm_device_destroy(dev);
}

/* wddm2.h vidmm_wddm2_set_budget(): group LOCAL / NON_LOCAL only, at most the maximum. */
Test(wddm2_residency, set_budget_rules)
{
    vidmm_device *dev = w2_dev();
    T_RC(vidmm_wddm2_set_budget(dev, T_PROC, 2, 0), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, W2_LOCAL_MAX + 1), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_set_budget(NULL, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 0), VIDMM_E_INVALID_ARG);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, W2_LOCAL_MAX));
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL, W2_NONLOCAL_MAX));
    vidmm_device_destroy(dev);
}

/* wddm2.h: waiting for a paging fence never issued is refused. */
Test(wddm2_residency, paging_fence_rules)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_paging_fence_wait(dev, 0, 0));
    T_RC(vidmm_wddm2_paging_fence_wait(dev, 1, 0), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_paging_fence_wait(NULL, 0, 0), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_wddm2_paging_fence_completed(NULL), 0);
    vidmm_device_destroy(dev);
}

/* spec 6.6: "if it is locked while non-resident ..., VidMm must not commit it to a memory
 * segment for the duration of the lock": made resident while locked, it goes to an aperture of
 * its set. */
Test(wddm2_residency, locked_allocation_goes_to_aperture)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS) | T_SET(T_APE));
    t_lock(dev, h, 0);
    w2_resident(dev, h);
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_IN_SHARED_MEMORY);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}
