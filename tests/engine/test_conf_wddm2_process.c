/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_process.c - conformance: processes own their allocations, and a
 * GPU page fault removes the device of one process only (issue 27 items 4 and 5; wddm2.h
 * "Processes").
 *
 * Doc MAKERESIDENT: "All allocations must be created on the device hPagingQueue is created
 * for" - a process lists only its own allocations (or shared ones it opened). Doc NONRES: a
 * GPU access to a non-resident allocation removes the device "for the application that
 * generated the error". Before issue 27, evict, offer, reclaim, UpdateAllocationProperty and
 * the residency query named no process, Lock2 of another process's non-shared allocation
 * succeeded (lock2_of_another_process_is_refused failed), and a fault removed every process
 * (fault_removes_the_faulting_process_only failed: the other process's make-resident, submit,
 * Lock2 and allocation creation all said VIDMM_E_DEVICE_REMOVED).
 *
 * Every refusal here is checked to change nothing: statistics, paging, placement, content and
 * reference counts (t_snap / T_REFUSED, and the counts read back). */
#include "t_wddm2.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define A T_PROC       /* the owner */
#define B T_OTHER_PROC /* another process */
#define K64 (64 * T_KiB)

static vidmm_handle alloc_of(vidmm_device *dev, uint32_t process, uint32_t kind, uint32_t flags)
{
    struct vidmm_alloc_desc d = t_adesc(K64, T_SET(T_VIS) | T_SET(T_APE));
    d.process = process;
    d.kind |= kind;
    d.flags |= flags;
    return t_alloc(dev, &d);
}

static int mr(vidmm_device *dev, uint32_t process, vidmm_paging_queue *q, vidmm_handle h)
{
    struct vidmm_make_resident_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = &h;
    a.count = 1;
    a.queue = q;
    a.process = process;
    int rc = vidmm_wddm2_make_resident(dev, &a);
    if (rc == VIDMM_PENDING)
        rc = q ? vidmm_paging_queue_wait(q, a.paging_fence, UINT64_MAX)
               : vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX);
    return rc;
}

static int ev(vidmm_device *dev, uint32_t process, vidmm_handle h, uint32_t flags)
{
    struct vidmm_evict_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = &h;
    a.count = 1;
    a.flags = flags;
    a.process = process;
    return vidmm_wddm2_evict(dev, &a);
}

static int offer(vidmm_device *dev, uint32_t process, vidmm_handle h)
{
    struct vidmm_offer_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = &h;
    a.count = 1;
    a.priority = VIDMM_OFFER_PRIORITY_LOW;
    a.process = process;
    return vidmm_offer(dev, &a);
}

static int reclaim(vidmm_device *dev, uint32_t process, vidmm_paging_queue *q, vidmm_handle h, uint32_t *result)
{
    struct vidmm_reclaim_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = &h;
    a.count = 1;
    a.results = result;
    a.queue = q;
    a.process = process;
    int rc = vidmm_reclaim(dev, &a);
    if (rc == VIDMM_PENDING)
        rc = vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX);
    return rc;
}

static int update(vidmm_device *dev, uint32_t process, vidmm_handle h, uint32_t set)
{
    struct vidmm_update_alloc_property_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocation = h;
    a.supported_segment_set = set;
    a.property_mask = VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET;
    a.process = process;
    int rc = vidmm_wddm2_update_alloc_property(dev, &a);
    if (rc == VIDMM_PENDING)
        rc = vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX);
    return rc;
}

/* CurrentUsage of 'process' over both budget groups. */
static uint64_t usage_of(vidmm_device *dev, uint32_t process)
{
    uint64_t sum = 0;
    const uint32_t groups[2] = { VIDMM_SEGMENT_GROUP_LOCAL, VIDMM_SEGMENT_GROUP_NON_LOCAL };
    for (int g = 0; g < 2; g++) {
        struct vidmm_video_memory_info vm = { .size_of = sizeof vm };
        T_OK(vidmm_wddm2_query_video_memory(dev, process, groups[g], &vm));
        sum += vm.current_usage;
    }
    return sum;
}

static uint32_t refs_of(vidmm_device *dev, vidmm_handle h)
{
    return w2_refs(dev, h);
}

/* =============================================================================================
 * Ownership (item 4).
 * =========================================================================================== */

/* Doc MAKERESIDENT: another process's allocation cannot be made resident, evicted, offered,
 * reclaimed, queried or changed by a call that names a process; the owner's calls work. */
Test(wddm2_process, residency_calls_refuse_another_process)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_of(dev, A, 0, 0);
    struct t_snap s;

    t_snap1(&s, dev, h);
    T_REFUSED(&s, mr(dev, B, NULL, h), VIDMM_E_INVALID_ARG);
    cr_assert_eq(refs_of(dev, h), 0);
    T_OK(mr(dev, A, NULL, h));
    cr_assert_eq(refs_of(dev, h), 1);

    t_snap1(&s, dev, h);
    T_REFUSED(&s, ev(dev, B, h, 0), VIDMM_E_INVALID_ARG);
    cr_assert_eq(refs_of(dev, h), 1, "a foreign evict dropped a reference");

    uint32_t st = 77, r = 77;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_wddm2_query_residency_process(dev, B, &h, 1, &st, &r), VIDMM_E_INVALID_ARG);
    cr_assert(st == 77 && r == 77, "a refused query wrote its outputs");
    T_OK(vidmm_wddm2_query_residency_process(dev, A, &h, 1, &st, &r));
    cr_assert(st == VIDMM_RESIDENCY_IN_GPU_MEMORY && r == 1);
    T_RC(vidmm_wddm2_query_residency_process(dev, 0, &h, 1, &st, &r), VIDMM_E_INVALID_ARG);

    t_snap1(&s, dev, h);
    T_REFUSED(&s, update(dev, B, h, T_SET(T_APE)), VIDMM_E_INVALID_ARG);

    t_snap1(&s, dev, h);
    T_REFUSED(&s, offer(dev, B, h), VIDMM_E_INVALID_ARG);
    T_OK(offer(dev, A, h));
    uint32_t res = 99;
    T_RC(reclaim(dev, B, NULL, h, &res), VIDMM_E_INVALID_ARG);
    cr_assert_eq(res, 99, "a refused reclaim wrote its results");
    T_RC(vidmm_wddm2_lock2(dev, A, h, 0, &(void *){ NULL }), VIDMM_E_INVALID_ARG); /* still offered */
    T_OK(reclaim(dev, A, NULL, h, &res));
    cr_assert_eq(res, VIDMM_RECLAIM_OK);

    T_OK(update(dev, A, h, T_SET(T_VIS) | T_SET(T_LOC) | T_SET(T_APE)));
    T_OK(ev(dev, A, h, 0));
    cr_assert_eq(refs_of(dev, h), 0);
    vidmm_device_destroy(dev);
}

/* A paging queue names its process: a 'process' that is not the queue's is refused, and so is
 * another process's allocation listed through the queue (make-resident and reclaim). */
Test(wddm2_process, queue_and_process_must_agree)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_of(dev, A, 0, 0);
    vidmm_paging_queue *qa = NULL, *qb = NULL;
    T_OK(vidmm_paging_queue_create(dev, A, VIDMM_PAGING_QUEUE_PRIORITY_NORMAL, &qa));
    T_OK(vidmm_paging_queue_create(dev, B, VIDMM_PAGING_QUEUE_PRIORITY_NORMAL, &qb));
    struct t_snap s;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, mr(dev, B, qa, h), VIDMM_E_INVALID_ARG); /* process B, queue of A */
    T_REFUSED(&s, mr(dev, A, qb, h), VIDMM_E_INVALID_ARG); /* queue of B: a foreign allocation */
    T_REFUSED(&s, mr(dev, 0, qb, h), VIDMM_E_INVALID_ARG);
    cr_assert_eq(refs_of(dev, h), 0);
    T_OK(mr(dev, A, qa, h));
    T_OK(mr(dev, 0, qa, h)); /* 0: the queue's process */
    cr_assert_eq(refs_of(dev, h), 2);
    T_OK(offer(dev, A, h));
    uint32_t res = 99;
    T_RC(reclaim(dev, A, qb, h, &res), VIDMM_E_INVALID_ARG);
    T_RC(reclaim(dev, B, qa, h, &res), VIDMM_E_INVALID_ARG);
    cr_assert_eq(res, 99);
    T_OK(reclaim(dev, A, qa, h, &res));
    T_OK(vidmm_paging_queue_destroy(qa));
    T_OK(vidmm_paging_queue_destroy(qb));
    vidmm_device_destroy(dev);
}

/* Lock2 names its process: another process's allocation that is not shared is refused (it
 * succeeded before issue 27); Unlock2 with a process must be the owner's. */
Test(wddm2_process, lock2_of_another_process_is_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_of(dev, A, 0, 0);
    struct t_snap s;
    void *p = (void *)(uintptr_t)0x77;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_wddm2_lock2(dev, B, h, 0, &p), VIDMM_E_INVALID_ARG);
    cr_assert_eq(p, (void *)(uintptr_t)0x77, "a refused Lock2 wrote the pointer");
    T_OK(vidmm_wddm2_lock2(dev, A, h, 0, &p));
    T_RC(vidmm_wddm2_unlock2_process(dev, B, h), VIDMM_E_INVALID_ARG);
    T_OK(vidmm_wddm2_unlock2_process(dev, A, h));
    T_RC(vidmm_wddm2_unlock2_process(dev, A, h), VIDMM_E_INVALID_ARG); /* not locked any more */
    vidmm_device_destroy(dev);
}

/* A shared allocation may be listed by every process (it opened the shared handle); only its
 * creator may lock it (spec 6.3 rule 10). */
Test(wddm2_process, shared_allocations_are_every_process_s)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_of(dev, A, VIDMM_ALLOC_KIND_SHARED, 0);
    T_OK(mr(dev, B, NULL, h));
    T_OK(mr(dev, A, NULL, h));
    cr_assert_eq(refs_of(dev, h), 2);
    uint32_t st = 0;
    T_OK(vidmm_wddm2_query_residency_process(dev, B, &h, 1, &st, NULL));
    T_OK(ev(dev, B, h, 0));
    T_OK(offer(dev, B, h));
    T_OK(reclaim(dev, B, NULL, h, NULL));
    void *p = NULL;
    T_RC(vidmm_wddm2_lock2(dev, B, h, 0, &p), VIDMM_E_INVALID_ARG);
    T_OK(vidmm_wddm2_lock2(dev, A, h, 0, &p));
    T_OK(vidmm_wddm2_unlock2_process(dev, A, h));
    vidmm_device_destroy(dev);
}

/* Compatibility: a caller built before the 'process' fields (their size_of ends before them)
 * names no process and is checked as before; 0 in the field names none either. Any other size
 * is refused. */
Test(wddm2_process, older_argument_sizes_name_no_process)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = alloc_of(dev, A, 0, 0);
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.size_of = VIDMM_MAKE_RESIDENT_ARGS_V2_SIZE;
    m.allocations = &h;
    m.count = 1;
    m.process = B; /* not read at this size */
    int rc = vidmm_wddm2_make_resident(dev, &m);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "V2-size make-resident: %s", vidmm_strerror(rc));
    w2_drain(dev);
    struct vidmm_evict_args e;
    memset(&e, 0, sizeof e);
    e.size_of = VIDMM_EVICT_ARGS_V1_SIZE;
    e.allocations = &h;
    e.count = 1;
    e.process = B;
    T_OK(vidmm_wddm2_evict(dev, &e));
    e.size_of = VIDMM_EVICT_ARGS_V1_SIZE + 4;
    T_RC(vidmm_wddm2_evict(dev, &e), VIDMM_E_INVALID_ARG);
    struct vidmm_offer_args o;
    memset(&o, 0, sizeof o);
    o.size_of = VIDMM_OFFER_ARGS_V1_SIZE;
    o.allocations = &h;
    o.count = 1;
    o.priority = VIDMM_OFFER_PRIORITY_NORMAL;
    o.process = B;
    T_OK(vidmm_offer(dev, &o));
    struct vidmm_reclaim_args r;
    memset(&r, 0, sizeof r);
    r.size_of = VIDMM_RECLAIM_ARGS_V2_SIZE;
    r.allocations = &h;
    r.count = 1;
    r.process = B;
    T_OK(vidmm_reclaim(dev, &r));
    struct vidmm_update_alloc_property_args u;
    memset(&u, 0, sizeof u);
    u.size_of = VIDMM_UPDATE_ALLOC_PROPERTY_ARGS_V1_SIZE;
    u.allocation = h;
    u.preferred_segment = T_VIS;
    u.property_mask = VIDMM_UPDATE_SET_PREFERRED_SEGMENT;
    u.process = B;
    T_OK(vidmm_wddm2_update_alloc_property(dev, &u));
    u.size_of = VIDMM_UPDATE_ALLOC_PROPERTY_ARGS_V1_SIZE - 8;
    T_RC(vidmm_wddm2_update_alloc_property(dev, &u), VIDMM_E_INVALID_ARG);
    /* The whole struct, process 0: no process named. */
    T_OK(mr(dev, 0, NULL, h));
    T_OK(ev(dev, 0, h, 0));
    T_RC(vidmm_wddm2_unlock2(dev, h), VIDMM_E_INVALID_ARG); /* not locked */
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Removal by a GPU fault (item 5).
 * =========================================================================================== */

struct two {
    vidmm_device *dev;
    vidmm_va_space *sa, *sb;
    uint64_t va_a, va_b;
    vidmm_handle ha, hb;
};

/* Two processes, each with a space, a 64 KiB allocation mapped and resident. */
static struct two two_make(void)
{
    struct two t;
    t.dev = w2_dev();
    t.sa = w2_space(t.dev, A);
    t.sb = w2_space(t.dev, B);
    t.va_a = w2_reserve(t.sa, 0, T_MiB);
    t.va_b = w2_reserve(t.sb, 0, T_MiB);
    t.ha = alloc_of(t.dev, A, 0, 0);
    t.hb = alloc_of(t.dev, B, 0, 0);
    w2_map(t.sa, t.va_a, t.ha, 0, K64);
    w2_map(t.sb, t.va_b, t.hb, 0, K64);
    T_OK(mr(t.dev, A, NULL, t.ha));
    T_OK(mr(t.dev, B, NULL, t.hb));
    return t;
}

static int submit(vidmm_va_space *sp, uint64_t va, uint64_t size)
{
    struct vidmm_va_ref ref = { va, size, VIDMM_REF_WRITE, 0 };
    uint64_t fence = 0;
    return vidmm_va_submit(sp, &ref, 1, 0, &fence);
}

/* Doc NONRES: a fault in A's work removes A's device: A's calls say VIDMM_E_DEVICE_REMOVED;
 * B goes on as if nothing happened (before issue 27 every call of B failed too). */
Test(wddm2_process, fault_removes_the_faulting_process_only)
{
    struct two t = two_make();
    T_RC(submit(t.sa, t.va_a + T_MiB / 2, T_PG), VIDMM_E_DEVICE_REMOVED); /* reserved, unmapped */
    struct vidmm_gpu_fault gf = { .size_of = sizeof gf };
    T_OK(vidmm_wddm2_last_fault(t.dev, &gf));
    cr_assert(gf.process == A && gf.va == t.va_a + T_MiB / 2 && gf.allocation == 0);

    /* B: every call works. */
    T_OK(submit(t.sb, t.va_b, K64));
    vidmm_handle hb2 = alloc_of(t.dev, B, 0, 0);
    T_OK(mr(t.dev, B, NULL, hb2));
    void *p = NULL;
    T_OK(vidmm_wddm2_lock2(t.dev, B, t.hb, 0, &p));
    T_OK(vidmm_wddm2_unlock2_process(t.dev, B, t.hb));
    vidmm_paging_queue *q = NULL;
    T_OK(vidmm_paging_queue_create(t.dev, B, 0, &q));
    T_OK(vidmm_paging_queue_destroy(q));
    T_OK(ev(t.dev, B, hb2, 0));

    /* A: every call naming it fails. */
    T_RC(submit(t.sa, t.va_a, K64), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_va_map(t.sa, t.va_a + K64, t.ha, 0, K64), VIDMM_E_DEVICE_REMOVED);
    uint64_t va = 0;
    T_RC(vidmm_va_reserve(t.sa, 0, T_MiB, &va), VIDMM_E_DEVICE_REMOVED);
    T_RC(mr(t.dev, A, NULL, t.ha), VIDMM_E_DEVICE_REMOVED);
    T_RC(ev(t.dev, A, t.ha, 0), VIDMM_E_DEVICE_REMOVED);
    T_RC(offer(t.dev, A, t.ha), VIDMM_E_DEVICE_REMOVED);
    T_RC(update(t.dev, A, t.ha, T_SET(T_APE)), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_wddm2_lock2(t.dev, A, t.ha, 0, &p), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_paging_queue_create(t.dev, A, 0, &q), VIDMM_E_DEVICE_REMOVED);
    vidmm_handle x = T_OUT_SENTINEL;
    struct vidmm_alloc_desc d = t_adesc(K64, T_SET(T_VIS));
    d.process = A;
    T_RC(vidmm_alloc_create(t.dev, &d, &x), VIDMM_E_DEVICE_REMOVED);
    cr_assert_eq(x, T_OUT_SENTINEL);
    uint32_t st;
    T_RC(vidmm_wddm2_query_residency_process(t.dev, A, &t.ha, 1, &st, NULL), VIDMM_E_DEVICE_REMOVED);
    vidmm_device_destroy(t.dev);
}

/* What A's removed device held goes: its allocations' residency references (and their budget
 * charge), Lock2 locks (the PermanentSysMem copy goes back, as at the last Unlock2) and
 * Unmoveable pins; its shared allocation keeps its references (B holds one). */
Test(wddm2_process, removal_drops_what_the_device_held)
{
    struct two t = two_make();
    vidmm_handle pinned = alloc_of(t.dev, A, 0, 0);
    struct vidmm_update_alloc_property_args u;
    memset(&u, 0, sizeof u);
    u.size_of = sizeof u;
    u.allocation = pinned;
    u.flags = VIDMM_UPDATE_UNMOVEABLE;
    u.property_mask = VIDMM_UPDATE_SET_UNMOVEABLE;
    u.process = A;
    T_OK(mr(t.dev, A, NULL, pinned));
    T_OK(vidmm_wddm2_update_alloc_property(t.dev, &u));
    cr_assert(t_query(t.dev, pinned).pinned);
    vidmm_handle shared = alloc_of(t.dev, A, VIDMM_ALLOC_KIND_SHARED, 0);
    T_OK(mr(t.dev, A, NULL, shared));
    T_OK(mr(t.dev, B, NULL, shared));
    vidmm_handle sysmem = alloc_of(t.dev, A, 0, VIDMM_ALLOC_PERMANENT_SYSMEM);
    T_OK(mr(t.dev, A, NULL, sysmem));
    void *p = NULL;
    T_OK(vidmm_wddm2_lock2(t.dev, A, sysmem, 0, &p));
    unsigned char *want = malloc(K64);
    t_bytes(want, K64, 27);
    memcpy(p, want, K64);
    T_OK(vidmm_wddm2_lock2(t.dev, A, t.ha, 0, &p)); /* a second lock, nested below */
    T_OK(vidmm_wddm2_lock2(t.dev, A, t.ha, 0, &p));
    cr_assert_eq(usage_of(t.dev, A), 4 * t_round(K64));

    T_RC(submit(t.sa, t.va_a + K64, T_PG), VIDMM_E_DEVICE_REMOVED);
    w2_drain(t.dev);

    cr_assert_eq(refs_of(t.dev, t.ha), 0, "the removed process's allocation is still resident-listed");
    cr_assert_eq(refs_of(t.dev, pinned), 0);
    cr_assert_eq(refs_of(t.dev, sysmem), 0);
    cr_assert_eq(refs_of(t.dev, shared), 2, "a shared allocation lost another process's reference");
    cr_assert_eq(refs_of(t.dev, t.hb), 1, "the other process's allocation lost its reference");
    cr_assert_not(t_query(t.dev, pinned).pinned, "the removed process's pin stayed");
    cr_assert_eq(usage_of(t.dev, A), t_round(K64), "usage %llu: only the shared one stays charged",
                 (unsigned long long)usage_of(t.dev, A));
    /* Locks ended: the old Unlock2 finds them unlocked; the written bytes reached the GPU's copy. */
    T_RC(vidmm_wddm2_unlock2(t.dev, t.ha), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_unlock2(t.dev, sysmem), VIDMM_E_INVALID_ARG);
    unsigned char *got = malloc(K64);
    t_read(t.dev, sysmem, 0, got, K64);
    cr_assert(memcmp(got, want, K64) == 0, "the Lock2 writes of the removed process were lost");
    /* Its allocations are victims like any other now, and can be destroyed. */
    T_OK(vidmm_alloc_destroy(t.dev, pinned));
    T_OK(vidmm_alloc_destroy(t.dev, sysmem));
    free(want);
    free(got);
    vidmm_device_destroy(t.dev);
}

/* The removal ends when the process has destroyed its VA space and paging queues, as an
 * application recreates its removed device: it may then make new ones and work again. */
Test(wddm2_process, removal_ends_when_the_device_objects_are_gone)
{
    struct two t = two_make();
    vidmm_paging_queue *q = NULL;
    T_OK(vidmm_paging_queue_create(t.dev, A, 0, &q));
    T_RC(submit(t.sa, t.va_a + T_MiB / 2, T_PG), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_paging_queue_wait(q, 0, 0), VIDMM_E_DEVICE_REMOVED);
    vidmm_va_space_destroy(t.sa);
    vidmm_va_space *s2 = (vidmm_va_space *)(uintptr_t)0x55;
    T_RC(vidmm_va_space_create(t.dev, A, &s2), VIDMM_E_DEVICE_REMOVED); /* its queue still lives */
    cr_assert_eq(s2, (vidmm_va_space *)(uintptr_t)0x55);
    T_OK(vidmm_paging_queue_destroy(q));
    s2 = w2_space(t.dev, A);
    uint64_t va = w2_reserve(s2, 0, T_MiB);
    w2_map(s2, va, t.ha, 0, K64);
    T_OK(mr(t.dev, A, NULL, t.ha));
    T_OK(submit(s2, va, K64));
    vidmm_handle x = 0;
    struct vidmm_alloc_desc d = t_adesc(K64, T_SET(T_VIS));
    d.process = A;
    T_OK(vidmm_alloc_create(t.dev, &d, &x));
    /* A second fault of B now: B alone is removed, and last_fault says so. */
    T_RC(submit(t.sb, t.va_b + T_MiB / 2, T_PG), VIDMM_E_DEVICE_REMOVED);
    struct vidmm_gpu_fault gf = { .size_of = sizeof gf };
    T_OK(vidmm_wddm2_last_fault(t.dev, &gf));
    cr_assert_eq(gf.process, B);
    T_OK(submit(s2, va, K64));
    vidmm_device_destroy(t.dev);
}

/* Only the creator locks a shared allocation (spec 6.3 rule 10), so its Lock2 locks are the
 * removed process's and end with its device; its references stay (review of issue 27: the
 * lock survived, and only the process-less Unlock2 could end it). */
Test(wddm2_process, removal_ends_lock2_of_its_shared_allocation)
{
    struct two t = two_make();
    vidmm_handle shared = alloc_of(t.dev, A, VIDMM_ALLOC_KIND_SHARED, 0);
    T_OK(mr(t.dev, B, NULL, shared));
    void *p = NULL;
    T_OK(vidmm_wddm2_lock2(t.dev, A, shared, 0, &p));
    T_RC(submit(t.sa, t.va_a + T_MiB / 2, T_PG), VIDMM_E_DEVICE_REMOVED);
    w2_drain(t.dev);
    T_RC(vidmm_wddm2_unlock2_process(t.dev, A, shared), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_wddm2_unlock2(t.dev, shared), VIDMM_E_INVALID_ARG); /* not locked any more */
    cr_assert_eq(refs_of(t.dev, shared), 1, "B's reference of the shared allocation went");
    vidmm_device_destroy(t.dev);
}

/* Every call naming the removed process, by field, queue or argument, and the ones that still
 * work: calls naming no process (an older caller's sizes), and B's. A MUST_SUCCEED
 * make-resident of the removed process is refused without removing the whole device. */
Test(wddm2_process, removed_process_every_call)
{
    struct two t = two_make();
    vidmm_paging_queue *qa = NULL;
    T_OK(vidmm_paging_queue_create(t.dev, A, 0, &qa));
    T_RC(submit(t.sa, t.va_a + T_MiB / 2, T_PG), VIDMM_E_DEVICE_REMOVED);
    T_RC(mr(t.dev, 0, qa, t.ha), VIDMM_E_DEVICE_REMOVED); /* named by its queue */
    T_RC(mr(t.dev, B, qa, t.hb), VIDMM_E_INVALID_ARG);    /* B with A's queue: not the queue's */
    T_RC(reclaim(t.dev, A, NULL, t.ha, NULL), VIDMM_E_DEVICE_REMOVED);
    T_RC(reclaim(t.dev, 0, qa, t.ha, NULL), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_wddm2_unlock2_process(t.dev, A, t.ha), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_wddm2_unlock2_process(t.dev, 0, t.ha), VIDMM_E_INVALID_ARG); /* 0 names no process */
    struct vidmm_make_resident_args m;
    memset(&m, 0, sizeof m);
    m.size_of = sizeof m;
    m.allocations = &t.ha;
    m.count = 1;
    m.flags = VIDMM_MAKE_RESIDENT_MUST_SUCCEED;
    m.process = A;
    T_RC(vidmm_wddm2_make_resident(t.dev, &m), VIDMM_E_DEVICE_REMOVED);
    T_OK(submit(t.sb, t.va_b, K64)); /* the vidmm device is not removed */
    /* Naming no process (an older caller): A's allocations are usable, as documented. */
    struct vidmm_evict_args e;
    memset(&e, 0, sizeof e);
    e.size_of = VIDMM_EVICT_ARGS_V1_SIZE;
    e.allocations = &t.ha;
    e.count = 1;
    T_OK(mr(t.dev, 0, NULL, t.ha));
    cr_assert_eq(refs_of(t.dev, t.ha), 1);
    T_OK(vidmm_wddm2_evict(t.dev, &e));
    T_OK(offer(t.dev, 0, t.ha));
    T_OK(reclaim(t.dev, 0, NULL, t.ha, NULL));
    T_OK(vidmm_paging_queue_destroy(qa));
    vidmm_device_destroy(t.dev);
}

/* Process 0 cannot be named by a 'process' field: a fault in its VA space removes the whole
 * vidmm device, as before issue 27 (review: it used to mark 0 removed, after which every
 * creation with the default process 0 failed while calls naming "no process" went on). */
Test(wddm2_process, fault_of_process_zero_removes_the_device)
{
    vidmm_device *dev = w2_dev();
    vidmm_va_space *s0 = w2_space(dev, 0);
    uint64_t va = w2_reserve(s0, 0, T_MiB);
    T_RC(submit(s0, va, T_PG), VIDMM_E_DEVICE_REMOVED);
    vidmm_handle x = T_OUT_SENTINEL;
    struct vidmm_alloc_desc d = t_adesc(K64, T_SET(T_VIS));
    d.process = B;
    T_RC(vidmm_alloc_create(dev, &d, &x), VIDMM_E_DEVICE_REMOVED);
    vidmm_device_destroy(dev);
}

/* A Lock2 waiting for its allocation's paging when a fault removes its process returns
 * VIDMM_E_DEVICE_REMOVED and holds no lock (review of issue 27: it took the lock after the
 * wait, a live lock of a removed process). The wait: a PermanentSysMem allocation the GPU
 * wrote comes back to system memory first; the driver's paging callback holds that TRANSFER
 * until the fault has happened (paging runs with the device mutex released). */
struct blocker {
    struct t_rec rec;
    struct vidmm_driver inner;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    vidmm_handle target;
    bool armed, blocked, release;
};

static uint32_t blocking_paging(void *arg, struct vidmm_paging_op *op)
{
    struct blocker *b = arg;
    pthread_mutex_lock(&b->mu);
    if (b->armed && op->type == VIDMM_PAGING_TRANSFER && op->allocation == b->target) {
        b->armed = false;
        b->blocked = true;
        pthread_cond_broadcast(&b->cv);
        while (!b->release)
            pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return b->inner.paging(b->inner.arg, op);
}

struct lock2_job {
    vidmm_device *dev;
    vidmm_handle h;
    void *ptr;
    int rc;
};

static void *lock2_thread(void *arg)
{
    struct lock2_job *j = arg;
    j->rc = vidmm_wddm2_lock2(j->dev, A, j->h, 0, &j->ptr);
    return NULL;
}

Test(wddm2_process, lock2_waiting_when_its_process_is_removed)
{
    static struct blocker b;
    memset(&b, 0, sizeof b);
    t_rec_init(&b.rec);
    b.inner = t_rec_driver(&b.rec, true, false, false);
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    struct vidmm_driver drv = b.inner;
    drv.paging = blocking_paging;
    drv.arg = &b;
    vidmm_device *dev = w2_dev_ex(&drv, 0);
    vidmm_va_space *sp = w2_space(dev, A);
    uint64_t va = w2_reserve(sp, 0, T_MiB);
    vidmm_handle h = alloc_of(dev, A, 0, VIDMM_ALLOC_PERMANENT_SYSMEM);
    w2_map(sp, va, h, 0, K64);
    T_OK(mr(dev, A, NULL, h));
    struct vidmm_va_ref ref = { va, K64, VIDMM_REF_WRITE, 0 };
    uint64_t fence = 0;
    T_OK(vidmm_va_submit(sp, &ref, 1, 0, &fence)); /* the GPU writes it: its copy comes back at a lock */
    T_OK(vidmm_fence_signal(dev, fence));
    w2_drain(dev);
    pthread_mutex_lock(&b.mu);
    b.target = h;
    b.armed = true;
    pthread_mutex_unlock(&b.mu);
    struct lock2_job j = { dev, h, NULL, 12345 };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, lock2_thread, &j), 0);
    pthread_mutex_lock(&b.mu);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 10;
    while (!b.blocked && pthread_cond_timedwait(&b.cv, &b.mu, &dl) == 0)
        ;
    const bool blocked = b.blocked;
    pthread_mutex_unlock(&b.mu);
    if (blocked) /* the Lock2 waits for the copy-back: the fault comes now */
        T_RC(submit(sp, va + T_MiB / 2, T_PG), VIDMM_E_DEVICE_REMOVED);
    pthread_mutex_lock(&b.mu);
    b.release = true;
    pthread_cond_broadcast(&b.cv);
    pthread_mutex_unlock(&b.mu);
    pthread_join(th, NULL);
    cr_assert(blocked, "the Lock2 never paged the GPU's copy back: the scenario was not set up");
    cr_assert_eq(j.rc, VIDMM_E_DEVICE_REMOVED, "Lock2 of a process removed while it waited: %d (%s)", j.rc,
                 vidmm_strerror(j.rc));
    T_RC(vidmm_wddm2_unlock2(dev, h), VIDMM_E_INVALID_ARG); /* no lock was left behind */
    vidmm_device_destroy(dev);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
}
