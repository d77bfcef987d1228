/* SPDX-License-Identifier: MIT */
/* lib/engine/residency.c - the WDDM2 mode (include/vidmm/wddm2.h): what it refuses (spec 6.6,
 * 7, 8, 12, 15.1), the residency list with per-allocation references (MakeResident, Evict,
 * residency queries: spec 12, 15.21) and the per-process budgets per segment group (15.22).
 *
 * The residency list is not a list: an allocation is on it while its reference count
 * (vm_alloc.w2_res_count) is above 0. Such an allocation is never an eviction victim
 * (place.c evictable()), so the residency the application asked for holds until it evicts; it
 * can still leave its segment by a WDDM1-style call that moves it by itself (vidmm_evict(), a
 * lock of a non-CPU-visible one), and vidmm_va_submit() brings it back before work using it.
 *
 * Budgets charge an allocation's rounded size to (its process, one group) when its count
 * leaves 0 and uncharge exactly that when it returns to 0 (or the allocation is destroyed): the
 * group is that of the segment it is in then, or, not placed, of the first segment of its
 * placement order. MakeResident checks the budget before anything changes, so an over-budget
 * call changes nothing at all. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

#define MAX_LIST VIDMM_RESIDENCY_MAX

/* ---------------------------------------------------------------------------------------------
 * The mode and its refusals.
 * ------------------------------------------------------------------------------------------- */
int vm_w2_check_desc(const struct vidmm_device_desc *d)
{
    if (!(d->flags & VIDMM_DEVICE_WDDM2))
        return 0;
    if (d->swizzling_ranges)
        return vidmm_refuse("vidmm_device_create", "swizzling_ranges", "swizzling ranges on a WDDM2 device", "6.6");
    if (d->flags & VIDMM_DEVICE_LAZY_RANGES)
        return vidmm_refuse("vidmm_device_create", "flags", "LAZY_RANGES (swizzling ranges) on a WDDM2 device", "6.6");
    if (d->segment_count > VIDMM_MAX_SEGMENTS - 1)
        return vidmm_refuse("vidmm_device_create", "segment_count", "above 30 on a WDDM2 device (ID 31 is system memory)",
                            "15.1");
    for (uint32_t i = 0; i < d->segment_count; i++) {
        const uint32_t both = VIDMM_SEGMENT_LOCAL_BUDGET_GROUP | VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP;
        /* Engine policy: a segment counts in one budget group (spec 15.22 names two disjoint
         * groups). */
        if ((d->segments[i].flags & both) == both)
            return vidmm_refuse("vidmm_device_create", "segments[].flags",
                                "LOCAL_BUDGET_GROUP with NONLOCAL_BUDGET_GROUP", "15.22");
    }
    return 0;
}

static int seg_group(const struct vm_segment *s)
{
    if (s->flags & VIDMM_SEGMENT_LOCAL_BUDGET_GROUP)
        return (int)VIDMM_SEGMENT_GROUP_LOCAL;
    if (s->flags & VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP)
        return (int)VIDMM_SEGMENT_GROUP_NON_LOCAL;
    return -1;
}

void vm_w2_init(vidmm_device *dev, const struct vidmm_device_desc *d)
{
    dev->w2.on = (d->flags & VIDMM_DEVICE_WDDM2) != 0;
    for (uint32_t i = 0; i < d->segment_count; i++) {
        const uint32_t f = d->segments[i].flags;
        if (f & VIDMM_SEGMENT_LOCAL_BUDGET_GROUP)
            dev->w2.group_max[VIDMM_SEGMENT_GROUP_LOCAL] += d->segments[i].size;
        else if (f & VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP)
            dev->w2.group_max[VIDMM_SEGMENT_GROUP_NON_LOCAL] += d->segments[i].size;
    }
}

void vm_w2_fini(vidmm_device *dev)
{
    vm_va_spaces_free(dev);
    vm_pq_free_all(dev);
    free(dev->w2.bcbs);
    dev->w2.bcbs = NULL;
    dev->w2.nbcbs = dev->w2.cap_bcbs = 0;
    free(dev->w2.procs);
    dev->w2.procs = NULL;
    dev->w2.nprocs = dev->w2.cap_procs = 0;
}

int vm_w2_check_alloc(const vidmm_device *dev, const struct vidmm_alloc_desc *d)
{
    if (!dev->w2.on)
        return 0;
    if (d->max_renaming)
        return vidmm_refuse("vidmm_alloc_create", "max_renaming", "renaming on a WDDM2 device", "6.6, 7");
    return 0;
}

int vm_w2_check_flags(uint32_t f)
{
    if (f & VIDMM_W2_ALLOC_RESERVED_MASK)
        return vidmm_refuse("vidmm_alloc_create", "flags",
                            "reserved bits of the WDDM2 layout set (11, 12: WDDM1's SynchronousPaging and "
                            "LinkMirrored, 19-31)", "4.2");
    /* HistoryBuffer: every other flag 0 but CpuVisible and Cached - the WDDM2 ones too. */
    if ((f & VIDMM_ALLOC_HISTORY_BUFFER) && (f & VM_W2_ALLOC_OWN))
        return vidmm_refuse("vidmm_alloc_create", "flags", "HISTORY_BUFFER with a WDDM2 flag", "4.1, 4.2");
    return 0;
}

int vm_w2_check_lock(const vidmm_device *dev, uint32_t lock_flags)
{
    if (!dev->w2.on)
        return 0;
    if (lock_flags & (VIDMM_LOCK_DISCARD | VIDMM_LOCK_NO_EXISTING_REFERENCE))
        return vidmm_refuse("vidmm_lock", "flags", "DISCARD or NO_EXISTING_REFERENCE (renaming) on a WDDM2 device",
                            "6.6, 7");
    if (lock_flags & (VIDMM_LOCK_ACQUIRE_APERTURE | VIDMM_LOCK_USE_ALTERNATE_VA))
        return vidmm_refuse("vidmm_lock", "flags",
                            "ACQUIRE_APERTURE or USE_ALTERNATE_VA (swizzling ranges) on a WDDM2 device", "6.6, 8");
    return 0;
}

int vm_w2_refuse_list(const vidmm_device *dev, const char *call)
{
    if (!dev->w2.on)
        return 0;
    return vidmm_refuse(call, "dev",
                        "allocation-list residency on a WDDM2 device (vidmm_wddm2_make_resident, vidmm_va_submit)", "12");
}

/* ---------------------------------------------------------------------------------------------
 * Processes and charges.
 * ------------------------------------------------------------------------------------------- */

/* Index of the state of 'process', made when 'create' (budgets at the groups' maximum);
 * -1 when absent, or no memory to make it. */
static ptrdiff_t proc_index(vidmm_device *dev, uint32_t process, bool create)
{
    for (uint32_t i = 0; i < dev->w2.nprocs; i++)
        if (dev->w2.procs[i].process == process)
            return (ptrdiff_t)i;
    if (!create)
        return -1;
    if (dev->w2.nprocs == dev->w2.cap_procs) {
        uint32_t cap = dev->w2.cap_procs ? dev->w2.cap_procs * 2 : 8;
        struct vm_w2_proc *p = realloc(dev->w2.procs, sizeof *p * cap);
        if (!p)
            return -1;
        dev->w2.procs = p;
        dev->w2.cap_procs = cap;
    }
    struct vm_w2_proc *p = &dev->w2.procs[dev->w2.nprocs];
    memset(p, 0, sizeof *p);
    p->process = process;
    p->budget[0] = dev->w2.group_max[0];
    p->budget[1] = dev->w2.group_max[1];
    return (ptrdiff_t)dev->w2.nprocs++;
}

/* ---------------------------------------------------------------------------------------------
 * Processes: ownership and removal (wddm2.h "Processes", issue 27 items 4 and 5).
 * ------------------------------------------------------------------------------------------- */
bool vm_w2_proc_removed(const vidmm_device *dev, uint32_t process)
{
    for (uint32_t i = 0; dev->w2.nremoved && i < dev->w2.nprocs; i++)
        if (dev->w2.procs[i].process == process)
            return dev->w2.procs[i].removed;
    return false;
}

int vm_w2_named(const vidmm_device *dev, uint32_t process)
{
    return process && vm_w2_proc_removed(dev, process) ? VIDMM_E_DEVICE_REMOVED : 0;
}

int vm_w2_owned(const struct vm_alloc *a, uint32_t process, const char *call)
{
    if (process == 0 || a->g->desc.process == process || (a->g->desc.kind & VIDMM_ALLOC_KIND_SHARED))
        return 0;
    vidmm_log(VIDMM_LOG_WARN, "%s: allocation 0x%x belongs to process %u, not to the calling process %u, and is not "
              "shared (Doc MAKERESIDENT: every allocation must be created on the caller's device)",
              call, a->handle, a->g->desc.process, process);
    return VIDMM_E_INVALID_ARG;
}

int vm_w2_owned_list(struct vm_alloc *const *u, size_t n, uint32_t process, const char *call)
{
    int err = 0;
    for (size_t i = 0; process && !err && i < n; i++)
        err = vm_w2_owned(u[i], process, call);
    return err;
}

static void uncharge(vidmm_device *dev, struct vm_alloc *a);

int vm_w2_remove_process(vidmm_device *dev, uint32_t process)
{
    ptrdiff_t pi = proc_index(dev, process, true);
    if (pi < 0)
        return VIDMM_E_NO_MEMORY;
    if (!dev->w2.procs[pi].removed) {
        dev->w2.procs[pi].removed = true;
        dev->w2.nremoved++;
    }
    /* What its device held goes with it: the Lock2 locks of its allocations (only the creator
     * locks one, shared or not: spec 6.3 rule 10), and the residency list's references and the
     * Unmoveable pins of its own allocations - a shared one's may be another process's. */
    for (uint32_t i = 1; i <= dev->table_top; i++) {
        struct vm_alloc *a = dev->table[i];
        if (!a || a->g->desc.process != process)
            continue;
        const bool shared = (a->g->desc.kind & VIDMM_ALLOC_KIND_SHARED) != 0;
        vm_lock2_process_gone(dev, a, !shared);
        if (!shared && a->w2_res_count) {
            a->w2_res_count = 0;
            uncharge(dev, a);
        }
    }
    pthread_cond_broadcast(&dev->paging_cv); /* waiters of its queues look again */
    return 0;
}

void vm_w2_object_gone(vidmm_device *dev, uint32_t process)
{
    ptrdiff_t pi = proc_index(dev, process, false);
    if (pi < 0 || !dev->w2.procs[pi].removed)
        return;
    if (vm_va_has_space(dev, process) || vm_pq_any(dev, process))
        return;
    dev->w2.procs[pi].removed = false; /* a new device of the process may be made */
    dev->w2.nremoved--;
}

/* The group 'a' is charged to if its count leaves 0 now (see the file comment). */
static int charge_group(const vidmm_device *dev, const struct vm_alloc *a)
{
    if (a->seg && (a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE))
        return seg_group(a->seg);
    const uint32_t set = a->g->supported, pref = a->g->desc.preferred_segment;
    for (int k = 0; k < 5; k++) {
        uint32_t id = (pref >> (6 * k)) & 0x1F;
        if (id == 0)
            break;
        if (id <= dev->nseg && (set & (1u << (id - 1))))
            return seg_group(&dev->seg[id - 1]);
    }
    for (uint32_t id = 1; id <= dev->nseg; id++)
        if (set & (1u << (id - 1)))
            return seg_group(&dev->seg[id - 1]);
    return -1;
}

static void uncharge(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->w2.group >= 0) {
        ptrdiff_t pi = proc_index(dev, a->w2.process, false);
        if (pi >= 0)
            dev->w2.procs[pi].usage[a->w2.group] -= a->w2.charged;
    }
    a->w2.group = -1;
    a->w2.charged = 0;
}

/* What the process of each allocation in 'u' is over its budgets (summed over processes and
 * groups): NumBytesToTrim. When no process is over, 0 without reading the list: each
 * allocation's process is in its group, two cache lines away from the hot one, and an Evict of
 * 4096 that read them left a MakeResident after it missing the L2 on half the processes' page
 * layouts (~100 us against ~45, bench_wddm2_residency). */
static uint64_t over_budget(vidmm_device *dev, struct vm_alloc *const *u, size_t n)
{
    bool any = false;
    for (uint32_t i = 0; i < dev->w2.nprocs && !any; i++)
        for (int g = 0; g < 2; g++)
            any |= dev->w2.procs[i].usage[g] > dev->w2.procs[i].budget[g];
    if (!any)
        return 0;
    const uint32_t tag = ++dev->w2.tag;
    uint64_t over = 0;
    for (size_t i = 0; i < n; i++) {
        ptrdiff_t pi = proc_index(dev, u[i]->g->desc.process, false);
        if (pi < 0 || dev->w2.procs[pi].tag == tag)
            continue;
        struct vm_w2_proc *p = &dev->w2.procs[pi];
        p->tag = tag;
        for (int g = 0; g < 2; g++)
            if (p->usage[g] > p->budget[g])
                over += p->usage[g] - p->budget[g];
    }
    return over;
}

void vm_w2_alloc_free(vidmm_device *dev, struct vm_alloc *a)
{
    if (!dev->w2.on)
        return;
    vm_va_alloc_unmap_all(dev, a);
    if (a->w2_res_count)
        uncharge(dev, a);
    a->w2_res_count = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Lists: validated, deduplicated (an allocation listed k times: w2_n = k).
 * ------------------------------------------------------------------------------------------- */

/* collect() fills 'u' with the distinct allocations of 'h' (mutex held, handles checked). */
static size_t collect(vidmm_device *dev, const vidmm_handle *h, uint32_t count, struct vm_alloc **u)
{
    const uint32_t tag = ++dev->w2.tag;
    size_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, h[i]);
        if (a->w2_tag != tag) {
            a->w2_tag = tag;
            a->w2_n = 0;
            u[n++] = a;
        }
        a->w2_n++;
    }
    return n;
}

/* begin(): the checks every residency call makes once the mutex is taken. */
static int begin(vidmm_device *dev, const vidmm_handle *h, uint32_t count, const char *call)
{
    if (dev->removed)
        return VIDMM_E_DEVICE_REMOVED;
    if (!dev->w2.on)
        return vidmm_refuse(call, "dev", "not created with VIDMM_DEVICE_WDDM2", "wddm2.h");
    return vm_check_handles_(dev, h, count, call);
}

int vm_w2_enter(vidmm_device *dev, const char *call)
{
    pthread_mutex_lock(&dev->mu);
    if (dev->removed)
        return VIDMM_E_DEVICE_REMOVED;
    if (!dev->w2.on)
        return vidmm_refuse(call, "dev", "not created with VIDMM_DEVICE_WDDM2", "wddm2.h");
    return 0;
}

static bool is_placed(const struct vm_alloc *a)
{
    return a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE;
}

static void release(vidmm_device *dev, struct vm_alloc **u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        u[i]->hold--;
    if (dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* a destroy may wait for them */
}

/* ---------------------------------------------------------------------------------------------
 * MakeResident (spec 12, 15.21).
 * ------------------------------------------------------------------------------------------- */

/* made_resident(): the end of a MakeResident that made every listed allocation resident: the
 * count, and the paging fence - the latest paging of the list 'last', or with a paging queue
 * the queue's value issued for it. VIDMM_PENDING while that paging has not run, else 0. */
static int made_resident(vidmm_device *dev, struct vidmm_make_resident_args *args, struct vidmm_paging_queue *q,
                         struct vm_alloc **u, size_t n, uint64_t last)
{
    args->made_resident = args->count;
    if (q) {
        bool pending;
        args->paging_fence = vm_pq_issue(dev, q, u, n, &pending);
        return pending ? VIDMM_PENDING : 0;
    }
    args->paging_fence = last;
    return last > dev->paging_done ? VIDMM_PENDING : 0;
}

/* vm_w2_named_list(): the checks of the process a residency call names (wddm2.h Processes) - by its
 * paging 'queue' (a live queue of 'dev', whose room for a fence value is reserved: '*q') or
 * by 'process' (0: none; with a queue, the queue's) - over the 'n' allocations of 'u':
 * VIDMM_E_DEVICE_REMOVED for a removed process, VIDMM_E_INVALID_ARG for a foreign allocation. */
int vm_w2_named_list(vidmm_device *dev, vidmm_paging_queue *queue, uint32_t process, struct vm_alloc *const *u,
                     size_t n, struct vidmm_paging_queue **q, const char *call)
{
    *q = NULL;
    if (queue) {
        if ((*q = vm_pq_lookup(dev, queue)) == NULL)
            return vidmm_refuse(call, "queue", "not a paging queue of this device", "12");
        if (process && process != vm_pq_process(*q))
            return vidmm_refuse(call, "process", "not the paging queue's process", "wddm2.h Processes");
        if (vm_w2_proc_removed(dev, vm_pq_process(*q)))
            return VIDMM_E_DEVICE_REMOVED;
        int err = vm_pq_check(*q, u, n, call);
        return err ? err : vm_pq_reserve(*q);
    }
    int err = vm_w2_named(dev, process);
    return err ? err : vm_w2_owned_list(u, n, process, call);
}

/* How many handles ahead collect_resident() prefetches the allocation of: when its lines are
 * not cached, the stores to its scratch tag stall the loop (a call after 32 MiB went through
 * the caches took 3.5x as long as the general path's without it, 0.7x with it). */
#define PREFETCH_AHEAD 16u

/* collect_resident(): collect() of a list whose every allocation is placed, already on the
 * residency list, not offered and not on the disk tier - the common call, which only adds
 * references (issue 15). In one pass it looks each handle up once and reads the hot cache
 * line of each allocation (engine.h struct vm_alloc). 0 when a handle names nothing or an
 * allocation is not such: the general path then checks the list from the start (only the
 * scratch tags have changed). For such a list every check of the general path passes: the
 * offer hook refuses only an offered allocation, the WDDM2 lock hook only one not placed, the
 * disk tier reads back only one on it, and the budgets charge only an allocation whose count
 * leaves 0. */
static size_t collect_resident(vidmm_device *dev, const vidmm_handle *h, uint32_t count, struct vm_alloc **u)
{
    const uint32_t tag = ++dev->w2.tag;
    size_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (i + PREFETCH_AHEAD < count) {
            const uint32_t k = h[i + PREFETCH_AHEAD] & VM_HANDLE_INDEX_MASK;
            if (k != 0 && k <= dev->table_top && dev->table[k]) { /* as vm_lookup() */
                VIDMM_PREFETCH_W(dev->table[k]);
            }
        }
        struct vm_alloc *a = vm_lookup(dev, h[i]);
        if (!a)
            return 0;
        if (a->w2_tag != tag) {
            if (!a->w2_res_count || !is_placed(a) || a->offer_prio || a->swap != VM_SWAP_NONE)
                return 0;
            a->w2_tag = tag;
            a->w2_n = 0;
            u[n++] = a;
        }
        a->w2_n++;
    }
    return n;
}

/* make_resident_fast(): the rest of a MakeResident of a list collect_resident() took: the
 * paging queue's checks, then what the general path does to a placed allocation with
 * references - a use (LRU), the references added - in one pass. Nothing is paged, so no
 * allocation needs holding. */
static int make_resident_fast(vidmm_device *dev, struct vidmm_make_resident_args *args, vidmm_paging_queue *queue,
                              uint32_t process, struct vm_alloc **u, size_t n, const char *call)
{
    struct vidmm_paging_queue *q = NULL;
    int err = vm_w2_named_list(dev, queue, process, u, n, &q, call);
    if (err)
        return err;
    uint64_t last = 0;
    struct vm_segment *bs = NULL; /* the bucket of the allocation before, and its key */
    uint32_t bprio = 0;
    struct vm_bucket *b = NULL;
    for (size_t i = 0; i < n; i++) {
        struct vm_alloc *a = u[i];
        if (!a->seg || !a->in_bucket) {
            vm_touch(dev, a);
        } else {
            /* vm_touch(), the bucket looked up once per run of one segment and priority
             * (touches move no bucket). */
            if (a->seg != bs || a->bucket_prio != bprio || !b) {
                bs = a->seg;
                bprio = a->bucket_prio;
                b = vm_res_bucket(bs, bprio);
            }
            a->lru = ++dev->clock;
            if (b)
                vm_bucket_touch(b, a);
        }
        a->w2_res_count += a->w2_n;
        if (a->paging_fence > last)
            last = a->paging_fence;
    }
    args->bytes_to_trim = 0;
    return made_resident(dev, args, q, u, n, last);
}

int vidmm_wddm2_make_resident(vidmm_device *dev, struct vidmm_make_resident_args *args)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_make_resident";
    if (!dev || !args ||
        (args->size_of != VIDMM_MAKE_RESIDENT_ARGS_V1_SIZE && args->size_of != VIDMM_MAKE_RESIDENT_ARGS_V2_SIZE &&
         args->size_of < sizeof *args))
        return vidmm_refuse(call, !dev ? "dev" : "args", "NULL, or size_of not V1, V2 or the whole struct", "wddm2.h");
    /* 0.2: the paging queue, 0.4: the calling process, when the caller's struct has them. */
    vidmm_paging_queue *const queue = args->size_of >= VIDMM_MAKE_RESIDENT_ARGS_V2_SIZE ? args->queue : NULL;
    const uint32_t process = args->size_of >= sizeof *args ? args->process : 0;
    struct vidmm_paging_queue *q = NULL;
    if (!args->allocations || args->count == 0 || args->count > MAX_LIST)
        return vidmm_refuse(call, "count", "no list, or count not in 1..10240", "12");
    if (args->flags & ~(VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER | VIDMM_MAKE_RESIDENT_MUST_SUCCEED))
        return vidmm_refuse(call, "flags", "unknown bits", "12");
    const bool must = (args->flags & VIDMM_MAKE_RESIDENT_MUST_SUCCEED) != 0;
    struct vm_alloc **u = malloc(sizeof *u * args->count);
    if (!u)
        return VIDMM_E_NO_MEMORY;
    pthread_mutex_lock(&dev->mu);
    int err;
    size_t n;
    if (!dev->removed && dev->w2.on && (n = collect_resident(dev, args->allocations, args->count, u)) != 0) {
        err = make_resident_fast(dev, args, queue, process, u, n, call);
        goto out;
    }
retry:
    if ((err = begin(dev, args->allocations, args->count, call)) != 0)
        goto out;
    n = collect(dev, args->allocations, args->count, u);
    if ((err = vm_w2_named_list(dev, queue, process, u, n, &q, call)) != 0)
        goto out;
    for (size_t i = 0; i < n; i++) /* offer hook: reclaim before use (spec 15.20, offer.c) */
        if ((err = vm_offer_refuse_use(u[i], call)) != 0)
            goto out;
    for (size_t i = 0; i < n; i++) /* WDDM2 hook: locked outside every segment it may use (lock2.c) */
        if ((err = vm_lock2_refuse_commit(dev, u[i], call)) != 0)
            goto out;
    /* Written out to the disk tier: read back first; the wait releases the mutex, so the list
     * is checked again from the start. */
    for (size_t i = 0; i < n; i++) {
        if (u[i]->where == VIDMM_WHERE_DISK || u[i]->swap != VM_SWAP_NONE) {
            if ((err = vm_swap_in(dev, &u[i], 1, true, NULL)) != 0)
                goto out;
            goto retry;
        }
    }
    /* The budgets, before anything changes (spec 15.21: atomic). */
    const uint32_t tag = ++dev->w2.tag;
    for (size_t i = 0; i < n; i++) {
        struct vm_alloc *a = u[i];
        a->w2.group = a->w2_res_count ? a->w2.group : charge_group(dev, a);
        if (a->w2_res_count || a->w2.group < 0)
            continue;
        ptrdiff_t pi = proc_index(dev, a->g->desc.process, true);
        if (pi < 0) {
            err = VIDMM_E_NO_MEMORY;
            goto out;
        }
        struct vm_w2_proc *p = &dev->w2.procs[pi];
        if (p->tag != tag) {
            p->tag = tag;
            p->need[0] = p->need[1] = 0;
        }
        p->need[a->w2.group] += a->g->size;
    }
    uint64_t trim = 0;
    for (uint32_t k = 0; k < dev->w2.nprocs; k++) {
        const struct vm_w2_proc *p = &dev->w2.procs[k];
        for (int g = 0; p->tag == tag && g < 2; g++) {
            if (!p->need[g] || p->usage[g] + p->need[g] <= p->budget[g])
                continue;
            /* CantTrimFurther: over the current budget is allowed, over the maximum not. */
            const uint64_t limit = (args->flags & VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER) ? dev->w2.group_max[g]
                                                                                       : p->budget[g];
            if (p->usage[g] + p->need[g] > limit)
                trim += p->usage[g] + p->need[g] - limit; /* what to evict before retrying (issue 27) */
        }
    }
    args->made_resident = 0;
    args->bytes_to_trim = trim;
    if (trim) {
        err = VIDMM_E_NO_MEMORY;
        goto out;
    }
    /* Page in what is not resident, every listed allocation held: none is another's victim.
     * The paging has the queue's priority (paging.c). */
    for (size_t i = 0; i < n; i++)
        u[i]->hold++;
    if (q)
        dev->emit_cls = vm_pq_class(q);
    for (size_t i = 0; i < n && !err; i++) {
        struct vm_alloc *a = u[i];
        if (is_placed(a)) {
            vm_touch(dev, a);
            continue;
        }
        const uint32_t from = a->where;
        const bool had_backing = a->has_backing && a->backing_valid;
        /* Locked: its CPU pointer must stay valid, so only an aperture may take it (spec 6.6:
         * not committed to a memory segment for the lock's duration). */
        unsigned use = VM_USE_ANY | (a->lock_count ? VM_USE_APERTURE_ONLY : 0);
        err = vm_make_resident(dev, a, use, false);
        if (err) {
            if (err != VIDMM_E_DEVICE_REMOVED && err != VIDMM_E_ALLOCATION_INVALID) {
                /* No room even after evicting everything off the residency list. */
                args->bytes_to_trim = a->g->size;
                err = VIDMM_E_NO_MEMORY;
            }
            break;
        }
        if (a->where == VIDMM_WHERE_SEGMENT)
            a->w2.origin = from == VIDMM_WHERE_NONE ? VM_W2_ORIGIN_FILL
                         : from == VIDMM_WHERE_SYSMEM && had_backing ? VM_W2_ORIGIN_BACKING
                                                                    : VM_W2_ORIGIN_UNKNOWN;
    }
    dev->emit_cls = VM_CLS_NORMAL;
    release(dev, u, n);
    if (err)
        goto out;
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        struct vm_alloc *a = u[i];
        if (a->w2_res_count == 0 && a->w2.group >= 0) {
            ptrdiff_t pi = proc_index(dev, a->g->desc.process, false); /* made above */
            dev->w2.procs[pi].usage[a->w2.group] += a->g->size;
            a->w2.process = a->g->desc.process;
            a->w2.charged = a->g->size;
        }
        a->w2_res_count += a->w2_n;
        if (a->paging_fence > last)
            last = a->paging_fence;
    }
    err = made_resident(dev, args, q, u, n, last);
out:
    free(u);
    vm_unlock_and_page(dev);
    if (err < 0 && must && err != VIDMM_E_INVALID_ARG && err != VIDMM_E_DEVICE_REMOVED) {
        /* MustSucceed: residency could not be had - the device is in error (spec 12). */
        vidmm_log(VIDMM_LOG_WARN, "%s: MUST_SUCCEED failed (%s): device removed (spec 12)", call, vidmm_strerror(err));
        vidmm_device_remove(dev);
        err = VIDMM_E_DEVICE_REMOVED;
    }
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Evict (spec 12, 15.21).
 * ------------------------------------------------------------------------------------------- */

/* evict_now(): 'a' left the residency list without EVICT_ONLY_IF_NECESSARY. Pinned, locked or
 * held allocations stay where they are. */
static void evict_now(vidmm_device *dev, struct vm_alloc *a, bool not_written)
{
    if (!is_placed(a) || a->pinned || a->lock_count || a->hold)
        return;
    if (vm_offer_discardable(dev, a)) {
        vm_offer_discard(dev, a); /* offer hook: offered content is discarded, not paged out (offer.c) */
        return;
    }
    const bool sysmem_backed = (a->g->desc.flags & (VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_EXISTING_SYSMEM |
                                                   VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM)) != 0;
    const bool rebuildable = a->w2.origin == VM_W2_ORIGIN_FILL ||
                             (a->w2.origin == VM_W2_ORIGIN_BACKING && a->has_backing);
    if (not_written && a->where == VIDMM_WHERE_SEGMENT && !sysmem_backed && !a->dirty && rebuildable) {
        /* NotWrittenTo, and the engine knows the content unchanged since its page-in: dropped
         * (DISCARD_CONTENT, spec 15.5, 15.21); the backing store still holds it, or it was the
         * fill pattern and the next page-in fills again. */
        vm_w2_leaving(dev, a, true); /* entries invalid before the discard (gpuva.c) */
        struct vm_pop p;
        memset(&p, 0, sizeof p);
        p.op.type = VIDMM_PAGING_DISCARD_CONTENT;
        p.op.allocation = a->handle;
        p.op.driver_data = a->g->desc.driver_data;
        p.op.size = a->g->size;
        p.op.dst.segment_id = a->seg->id;
        p.op.dst.segment_address = a->seg->base_address + a->offset;
        p.a = a;
        p.sync = (a->g->desc.flags & VIDMM_ALLOC_SYNCHRONOUS_PAGING) != 0;
        a->paging_fence = vm_emit(dev, &p);
        if (a->w2.origin == VM_W2_ORIGIN_BACKING)
            a->backing_valid = true;
        vm_unplace(dev, a); /* SYSMEM with a valid backing store, else NONE */
        dev->st.evictions++;
        return;
    }
    /* A written one goes out by transfer anyway; no host memory for its backing store: it
     * stays (an eviction is a request, spec 12). */
    (void)vm_evict_one(dev, a, false, false);
}

int vidmm_wddm2_evict(vidmm_device *dev, struct vidmm_evict_args *args)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_evict";
    if (!dev || !args || (args->size_of != VIDMM_EVICT_ARGS_V1_SIZE && args->size_of < sizeof *args))
        return vidmm_refuse(call, !dev ? "dev" : "args", "NULL, or size_of neither V1 nor the whole struct", "wddm2.h");
    /* 0.4: the calling process, when the caller's struct has it (wddm2.h Processes). */
    const uint32_t process = args->size_of >= sizeof *args ? args->process : 0;
    if (!args->allocations || args->count == 0 || args->count > MAX_LIST)
        return vidmm_refuse(call, "count", "no list, or count not in 1..10240", "12");
    if (args->flags & ~(VIDMM_EVICT_ONLY_IF_NECESSARY | VIDMM_EVICT_NOT_WRITTEN_TO))
        return vidmm_refuse(call, "flags", "unknown bits", "12");
    struct vm_alloc **u = malloc(sizeof *u * args->count);
    if (!u)
        return VIDMM_E_NO_MEMORY;
    pthread_mutex_lock(&dev->mu);
    int err = begin(dev, args->allocations, args->count, call);
    if (!err)
        err = vm_w2_named(dev, process);
    size_t n = err ? 0 : collect(dev, args->allocations, args->count, u);
    if (!err)
        err = vm_w2_owned_list(u, n, process, call);
    for (size_t i = 0; !err && i < n; i++)
        if (u[i]->w2_n > u[i]->w2_res_count) /* engine policy (spec 15.21) */
            err = vidmm_refuse(call, "allocations", "more evictions than residency references", "15.21");
    for (size_t i = 0; !err && i < n; i++) {
        struct vm_alloc *a = u[i];
        a->w2_res_count -= a->w2_n;
        if (a->w2_res_count)
            continue;
        uncharge(dev, a);
        if (!(args->flags & VIDMM_EVICT_ONLY_IF_NECESSARY))
            evict_now(dev, a, (args->flags & VIDMM_EVICT_NOT_WRITTEN_TO) != 0);
    }
    if (!err)
        args->bytes_to_trim = over_budget(dev, u, n);
    free(u);
    vm_unlock_and_page(dev);
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Queries, paging fences, budgets.
 * ------------------------------------------------------------------------------------------- */
/* query_residency(): the query by 'process' (0: none). */
static int query_residency(vidmm_device *dev, uint32_t process, const vidmm_handle *handles, uint32_t count,
                           uint32_t *status, uint32_t *refs, const char *call)
{
    if (!dev || !handles || !status || count == 0 || count > MAX_LIST)
        return vidmm_refuse(call, !dev ? "dev" : !handles ? "handles" : !status ? "status" : "count",
                            "NULL, or count not in 1..10240", "12");
    pthread_mutex_lock(&dev->mu);
    int err = begin(dev, handles, count, call);
    if (!err)
        err = vm_w2_named(dev, process);
    for (uint32_t i = 0; !err && process && i < count; i++) /* every one checked before any is written */
        err = vm_w2_owned(vm_lookup(dev, handles[i]), process, call);
    for (uint32_t i = 0; !err && i < count; i++) {
        const struct vm_alloc *a = vm_lookup(dev, handles[i]);
        status[i] = a->where == VIDMM_WHERE_SEGMENT    ? VIDMM_RESIDENCY_IN_GPU_MEMORY
                    : a->where == VIDMM_WHERE_APERTURE ? VIDMM_RESIDENCY_IN_SHARED_MEMORY
                                                       : VIDMM_RESIDENCY_NOT_RESIDENT;
        if (refs)
            refs[i] = a->w2_res_count;
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

int vidmm_wddm2_query_residency(vidmm_device *dev, const vidmm_handle *handles, uint32_t count, uint32_t *status,
                                uint32_t *refs)
{
    VM_DEV_CHECK(dev);
    return query_residency(dev, 0, handles, count, status, refs, "vidmm_wddm2_query_residency");
}

int vidmm_wddm2_query_residency_process(vidmm_device *dev, uint32_t process, const vidmm_handle *handles,
                                        uint32_t count, uint32_t *status, uint32_t *refs)
{
    VM_DEV_CHECK(dev);
    if (process == 0)
        return vidmm_refuse("vidmm_wddm2_query_residency_process", "process", "0 names no process", "wddm2.h Processes");
    return query_residency(dev, process, handles, count, status, refs, "vidmm_wddm2_query_residency_process");
}

uint64_t vidmm_wddm2_paging_fence_completed(vidmm_device *dev)
{
    if (vm_dev_check(dev, __func__))
        return 0;
    if (!dev)
        return 0;
    pthread_mutex_lock(&dev->mu);
    uint64_t f = dev->paging_done;
    pthread_mutex_unlock(&dev->mu);
    return f;
}

int vidmm_wddm2_paging_fence_wait(vidmm_device *dev, uint64_t fence, uint64_t timeout_ns)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_paging_fence_wait";
    if (!dev)
        return vidmm_refuse(call, "dev", "NULL", "wddm2.h");
    struct timespec dl;
    if (timeout_ns != UINT64_MAX)
        vm_deadline(timeout_ns, &dl);
    pthread_mutex_lock(&dev->mu);
    int err = 0;
    if (!dev->w2.on)
        err = vidmm_refuse(call, "dev", "not created with VIDMM_DEVICE_WDDM2", "wddm2.h");
    else if (fence > dev->paging_issued)
        err = vidmm_refuse(call, "fence", "never issued", "wddm2.h");
    else if (dev->removed)
        err = VIDMM_E_DEVICE_REMOVED;
    else
        err = vm_wait_paging_until(dev, fence, timeout_ns == UINT64_MAX ? NULL : &dl);
    if (err == VIDMM_E_ALLOCATION_INVALID || (err == 0 && dev->removed))
        err = VIDMM_E_DEVICE_REMOVED; /* a paging operation failed: the device is removed */
    pthread_mutex_unlock(&dev->mu);
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Budget-change callbacks: the notes of a change are gathered under the mutex (each registration
 * counted busy meanwhile) and delivered once the call has released it.
 * ------------------------------------------------------------------------------------------- */
struct bnote {
    uint64_t cookie;
    vidmm_budget_callback cb;
    void *arg;
    struct vidmm_budget_change ch;
};

struct bnotes {
    uint32_t n;
    struct bnote *v;
    struct bnote local[4];
};

/* The registration whose callback this thread is running (0: none): its unregistration from
 * inside the callback does not wait for itself. */
static _Thread_local uint64_t tl_delivering;

static ptrdiff_t bcb_index(const vidmm_device *dev, uint64_t cookie)
{
    for (uint32_t k = 0; k < dev->w2.nbcbs; k++)
        if (dev->w2.bcbs[k].cookie == cookie)
            return (ptrdiff_t)k;
    return -1;
}

static void bcb_remove(vidmm_device *dev, ptrdiff_t k)
{
    memmove(&dev->w2.bcbs[k], &dev->w2.bcbs[k + 1], sizeof *dev->w2.bcbs * (dev->w2.nbcbs - (uint32_t)k - 1));
    dev->w2.nbcbs--;
}

/* notes_prepare(): room for the notes of one change of 'process' (mutex held). */
static int notes_prepare(const vidmm_device *dev, uint32_t process, struct bnotes *b)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < dev->w2.nbcbs; i++)
        k += dev->w2.bcbs[i].process == process && !dev->w2.bcbs[i].gone;
    b->n = 0;
    b->v = k <= 4 ? b->local : malloc(sizeof *b->v * k);
    return b->v ? 0 : VIDMM_E_NO_MEMORY;
}

/* notes_add(): the budget of 'p' in 'group' was 'before' - a note per registration if it
 * changed. */
static void notes_add(vidmm_device *dev, const struct vm_w2_proc *p, uint32_t group, uint64_t before,
                      struct bnotes *b)
{
    if (p->budget[group] == before)
        return;
    for (uint32_t i = 0; i < dev->w2.nbcbs; i++) {
        struct vm_w2_bcb *r = &dev->w2.bcbs[i];
        if (r->process != p->process || r->gone)
            continue;
        struct bnote *nt = &b->v[b->n++];
        nt->cookie = r->cookie;
        nt->cb = r->cb;
        nt->arg = r->arg;
        memset(&nt->ch, 0, sizeof nt->ch);
        nt->ch.size_of = sizeof nt->ch;
        nt->ch.process = p->process;
        nt->ch.group = group;
        nt->ch.budget = p->budget[group];
        nt->ch.previous_budget = before;
        nt->ch.current_usage = p->usage[group];
        r->busy++;
    }
}

/* notes_deliver(): the callbacks, mutex not held; then the registrations are no longer busy. */
static void notes_deliver(vidmm_device *dev, struct bnotes *b)
{
    for (uint32_t i = 0; i < b->n; i++) {
        const uint64_t outer = tl_delivering;
        tl_delivering = b->v[i].cookie;
        b->v[i].cb(b->v[i].arg, &b->v[i].ch);
        tl_delivering = outer;
    }
    if (b->n) {
        pthread_mutex_lock(&dev->mu);
        for (uint32_t i = 0; i < b->n; i++) {
            ptrdiff_t k = bcb_index(dev, b->v[i].cookie);
            struct vm_w2_bcb *r = &dev->w2.bcbs[k]; /* busy: still there */
            if (--r->busy == 0 && r->gone)
                bcb_remove(dev, k); /* unregistered meanwhile */
        }
        pthread_cond_broadcast(&dev->paging_cv); /* an unregistration may wait */
        pthread_mutex_unlock(&dev->mu);
    }
    if (b->v != b->local)
        free(b->v);
}

int vidmm_wddm2_register_budget_callback(vidmm_device *dev, uint32_t process, vidmm_budget_callback cb, void *arg,
                                         uint64_t *cookie)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_register_budget_callback";
    if (!dev || !cb || !cookie)
        return vidmm_refuse(call, !dev ? "dev" : !cb ? "cb" : "cookie", "NULL", "wddm2.h");
    int err = vm_w2_enter(dev, call);
    if (!err && dev->w2.nbcbs == dev->w2.cap_bcbs) {
        uint32_t cap = dev->w2.cap_bcbs ? dev->w2.cap_bcbs * 2 : 4;
        struct vm_w2_bcb *v = realloc(dev->w2.bcbs, sizeof *v * cap);
        if (!v)
            err = VIDMM_E_NO_MEMORY;
        else {
            dev->w2.bcbs = v;
            dev->w2.cap_bcbs = cap;
        }
    }
    if (!err) {
        struct vm_w2_bcb *r = &dev->w2.bcbs[dev->w2.nbcbs++];
        memset(r, 0, sizeof *r);
        r->cookie = ++dev->w2.next_cookie;
        r->process = process;
        r->cb = cb;
        r->arg = arg;
        *cookie = r->cookie;
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

int vidmm_wddm2_unregister_budget_callback(vidmm_device *dev, uint64_t cookie)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_unregister_budget_callback";
    if (!dev)
        return vidmm_refuse(call, "dev", "NULL", "wddm2.h");
    pthread_mutex_lock(&dev->mu);
    ptrdiff_t k = bcb_index(dev, cookie);
    if (k < 0 || dev->w2.bcbs[k].gone) {
        pthread_mutex_unlock(&dev->mu);
        return vidmm_refuse(call, "cookie", "not a registration of this device", "wddm2.h");
    }
    dev->w2.bcbs[k].gone = true;
    /* Its calls on other threads end first; the last of them removes the entry. Called from
     * its own callback, that call is not waited for: it removes the entry when it ends. */
    const uint32_t self = tl_delivering == cookie ? 1u : 0u;
    while (k >= 0 && dev->w2.bcbs[k].busy > self) {
        pthread_cond_wait(&dev->paging_cv, &dev->mu);
        k = bcb_index(dev, cookie); /* the array may have moved, or the entry gone */
    }
    if (k >= 0 && dev->w2.bcbs[k].busy == 0)
        bcb_remove(dev, k);
    pthread_mutex_unlock(&dev->mu);
    return 0;
}

int vidmm_wddm2_set_budget(vidmm_device *dev, uint32_t process, uint32_t group, uint64_t bytes)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_set_budget";
    if (!dev || group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return vidmm_refuse(call, !dev ? "dev" : "group", "NULL, or not LOCAL / NON_LOCAL", "15.22");
    int err = vm_w2_enter(dev, call);
    if (!err && bytes > dev->w2.group_max[group])
        err = vidmm_refuse(call, "bytes", "above the group's maximum budget", "15.22");
    ptrdiff_t pi = err ? -1 : proc_index(dev, process, true);
    if (!err && pi < 0)
        err = VIDMM_E_NO_MEMORY;
    struct bnotes notes = { 0, NULL, { { 0 } } };
    if (!err)
        err = notes_prepare(dev, process, &notes);
    if (!err) {
        struct vm_w2_proc *p = &dev->w2.procs[pi];
        const uint64_t before = p->budget[group];
        p->budget[group] = bytes < p->reservation[group] ? p->reservation[group] : bytes;
        notes_add(dev, p, group, before, &notes);
    }
    pthread_mutex_unlock(&dev->mu);
    if (!err)
        notes_deliver(dev, &notes);
    return err;
}

int vidmm_wddm2_last_fault(vidmm_device *dev, struct vidmm_gpu_fault *out)
{
    VM_DEV_CHECK(dev);
    if (!dev || !out || out->size_of < sizeof *out)
        return vidmm_refuse("vidmm_wddm2_last_fault", !dev ? "dev" : "out", "NULL, or size_of too small", "wddm2.h");
    pthread_mutex_lock(&dev->mu);
    int err = dev->w2.faulted ? 0 : VIDMM_E_NOT_AVAILABLE;
    if (!err) {
        out->size_of = sizeof *out;
        out->va = dev->w2.fault_va;
        out->process = dev->w2.fault_process;
        out->allocation = dev->w2.fault_alloc;
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

/* AvailableForReservation of process index 'pi' (-1: a process not seen) in 'group': the
 * group's maximum less the other processes' reservations. */
static uint64_t available(const vidmm_device *dev, ptrdiff_t pi, uint32_t group)
{
    uint64_t others = 0;
    for (uint32_t k = 0; k < dev->w2.nprocs; k++)
        if ((ptrdiff_t)k != pi)
            others += dev->w2.procs[k].reservation[group];
    return others >= dev->w2.group_max[group] ? 0 : dev->w2.group_max[group] - others;
}

int vidmm_wddm2_query_video_memory(vidmm_device *dev, uint32_t process, uint32_t group,
                                   struct vidmm_video_memory_info *out)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_query_video_memory";
    if (!dev || !out || out->size_of < sizeof *out || group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return vidmm_refuse(call, !dev ? "dev" : !out ? "out" : out->size_of < sizeof *out ? "out->size_of" : "group",
                            "NULL, size_of too small, or not LOCAL / NON_LOCAL", "12");
    int err = vm_w2_enter(dev, call);
    if (!err) {
        ptrdiff_t pi = proc_index(dev, process, false); /* a query creates nothing */
        const struct vm_w2_proc *p = pi >= 0 ? &dev->w2.procs[pi] : NULL;
        out->size_of = sizeof *out;
        out->budget = p ? p->budget[group] : dev->w2.group_max[group];
        out->current_usage = p ? p->usage[group] : 0;
        out->current_reservation = p ? p->reservation[group] : 0;
        out->available_for_reservation = available(dev, pi, group);
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

int vidmm_wddm2_change_reservation(vidmm_device *dev, uint32_t process, uint32_t group, uint64_t bytes)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_change_reservation";
    if (!dev || group > VIDMM_SEGMENT_GROUP_NON_LOCAL)
        return vidmm_refuse(call, !dev ? "dev" : "group", "NULL, or not LOCAL / NON_LOCAL", "15.22");
    int err = vm_w2_enter(dev, call);
    ptrdiff_t pi = err ? -1 : proc_index(dev, process, false);
    if (!err && bytes > available(dev, pi, group))
        err = vidmm_refuse(call, "bytes", "outside [0, AvailableForReservation]", "15.22");
    if (!err && pi < 0 && (pi = proc_index(dev, process, true)) < 0)
        err = VIDMM_E_NO_MEMORY;
    struct bnotes notes = { 0, NULL, { { 0 } } };
    if (!err)
        err = notes_prepare(dev, process, &notes);
    if (!err) {
        struct vm_w2_proc *p = &dev->w2.procs[pi];
        const uint64_t before = p->budget[group];
        p->reservation[group] = bytes;
        if (p->budget[group] < bytes)
            p->budget[group] = bytes;
        notes_add(dev, p, group, before, &notes);
    }
    pthread_mutex_unlock(&dev->mu);
    if (!err)
        notes_deliver(dev, &notes);
    return err;
}
