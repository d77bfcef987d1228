/* SPDX-License-Identifier: MIT */
/* lib/engine/offer.c - offer and reclaim (include/vidmm/wddm2.h, spec 11, 15.20): offered
 * allocations are the first to go when a segment needs room - LOW before NORMAL before HIGH,
 * in offer order within a priority - and go by DISCARD_CONTENT, never by transfer; locks and
 * submissions of them are refused until they are reclaimed; reclaim reports whether their
 * content survived and, on a WDDM2 device, pages the resident-listed ones back in.
 *
 * Offer exists since WDDM 1.2 (Windows 8), so both device models have it; the WDDM2-only parts
 * are the D3DKMT_OFFER_FLAGS (refused on a WDDM1 device) and the paging of resident-listed
 * allocations at reclaim (WDDM1 has no residency list).
 *
 * State. An offered allocation is on one of three lists of the device (dev->offer, by
 * priority, in offer order) with vm_alloc.offer_prio set. 'after' defers the offer until the
 * GPU has finished the work submitted before it (spec 11: dxgkrnl defers the offer, without
 * blocking, until the GPU is done); OFFER_IMMEDIATELY puts it in effect at once - a discard
 * of an allocation the GPU still uses then waits for it in the paging queue, like every
 * DISCARD_CONTENT (spec 15.7), so its space is not reused early. 'lost' records what a
 * reclaim will say: set when a discard loses the content (the segment copy was the only one),
 * NOT_COMMITTED when the backing store went too (ALLOW_DECOMMIT). */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

#define MAX_LIST VIDMM_OFFER_MAX

/* ---------------------------------------------------------------------------------------------
 * The lists.
 * ------------------------------------------------------------------------------------------- */
static void unlink_offer(vidmm_device *dev, struct vm_alloc *a)
{
    if (!a->offer_prio)
        return;
    const unsigned p = a->offer_prio - 1u;
    if (a->offer.prev)
        a->offer.prev->offer.next = a->offer.next;
    else
        dev->offer.head[p] = a->offer.next;
    if (a->offer.next)
        a->offer.next->offer.prev = a->offer.prev;
    else
        dev->offer.tail[p] = a->offer.prev;
    a->offer.prev = a->offer.next = NULL;
    a->offer_prio = 0;
    dev->offer.count--;
}

static void link_offer(vidmm_device *dev, struct vm_alloc *a, uint8_t prio)
{
    const unsigned p = prio - 1u;
    a->offer_prio = prio;
    a->offer.next = NULL;
    a->offer.prev = dev->offer.tail[p];
    if (a->offer.prev)
        a->offer.prev->offer.next = a;
    else
        dev->offer.head[p] = a;
    dev->offer.tail[p] = a;
    dev->offer.count++;
}

void vm_offer_forget(vidmm_device *dev, struct vm_alloc *a)
{
    unlink_offer(dev, a);
    a->offer.lost = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Hooks.
 * ------------------------------------------------------------------------------------------- */
int vm_offer_refuse_use(const struct vm_alloc *a, const char *call)
{
    if (!a->offer_prio)
        return 0;
    return vidmm_refuse(call, "allocation", "offered: it must be reclaimed before it is locked or used",
                        "6.3 rule 9, 15.20");
}

bool vm_offer_discardable(const vidmm_device *dev, const struct vm_alloc *a)
{
    return a->offer_prio && a->offer.after <= dev->fence_done;
}

static bool placed(const struct vm_alloc *a)
{
    return (a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE) && a->seg;
}

/* held(): something keeps 'a' where it is (pinned, locked, placed or converted by a call). */
static bool held(const vidmm_device *dev, const struct vm_alloc *a)
{
    return a->pinned || a->lock_count || a->hold || a->converting || (a->range >= 0 && dev->ranges[a->range].active);
}

struct vm_alloc *vm_offer_victim(vidmm_device *dev, const struct vm_segment *s, const struct vm_alloc *placing,
                                 bool donot_wait)
{
    if (!dev->offer.count)
        return NULL;
    for (unsigned p = 0; p < 3; p++) {
        for (struct vm_alloc *a = dev->offer.head[p]; a; a = a->offer.next) {
            if (a == placing || a->seg != s || !placed(a) || !vm_offer_discardable(dev, a) || held(dev, a))
                continue;
            if (donot_wait && vm_busy(dev, a, false))
                continue; /* its discard would wait for the GPU */
            return a;
        }
    }
    return NULL;
}

static bool sysmem_backed(const struct vm_alloc *a)
{
    return (a->g->desc.flags & (VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_EXISTING_SYSMEM |
                                VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM)) != 0;
}

/* decommit(): the backing store of 'a' goes back to the system (ALLOW_DECOMMIT). Only when no
 * queued paging operation may still write it (a transfer out of a segment queued earlier
 * would land in memory that another allocation may own by then), no disk I/O holds it, and it
 * is the engine's memory. Returns whether it went. */
static bool decommit(vidmm_device *dev, struct vm_alloc *a, uint64_t paging_before)
{
    if (!a->has_backing || a->g->desc.existing_memory || a->swap != VM_SWAP_NONE || a->altva ||
        paging_before > dev->paging_done)
        return false;
    vm_backing_release(dev, a);
    return true;
}

void vm_offer_mark_lost(vidmm_device *dev, struct vm_alloc *a, bool decommitted)
{
    (void)dev;
    if (decommitted)
        a->offer.lost = VIDMM_RECLAIM_NOT_COMMITTED;
    else if (a->offer.lost != VIDMM_RECLAIM_NOT_COMMITTED)
        a->offer.lost = VIDMM_RECLAIM_DISCARDED;
}

void vm_offer_discard(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->where == VIDMM_WHERE_APERTURE) {
        /* Its content is its backing store: unmapping frees the aperture space and loses
         * nothing (the decommit, if allowed, comes under system-memory pressure). */
        (void)vm_evict_one(dev, a, false, false);
        return;
    }
    if (a->where != VIDMM_WHERE_SEGMENT)
        return;
    const uint64_t paging_before = a->paging_fence;
    /* A PermanentSysMem / Existing*SysMem copy that is clean still holds the content. */
    const bool survives = sysmem_backed(a) && a->has_backing && a->backing_valid && !a->dirty;
    vm_range_release_alloc(dev, a); /* ranges are released on eviction (spec 8.3) */
    vm_w2_leaving(dev, a, true); /* WDDM2 hook: entries invalid before the discard (gpuva.c) */
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
    dev->st.evictions++;
    if (survives) {
        vm_unplace(dev, a); /* to its system-memory copy */
        a->dirty = false;
        return;
    }
    a->backing_valid = false;
    vm_unplace(dev, a); /* content nowhere: WHERE_NONE */
    a->dirty = false;
    vm_offer_mark_lost(dev, a, a->offer.decommit && decommit(dev, a, paging_before));
}

/* Under system-memory pressure offered content in system memory is dropped, as the OS drops
 * offered pages instead of writing them to the page file: ALLOW_DECOMMIT ones lose their commit
 * too (the budget gains their size), the others keep it (their pages go, their range stays
 * charged). LOW first. */
void vm_offer_trim_sysmem(vidmm_device *dev)
{
    for (unsigned p = 0; p < 3 && dev->offer.count && dev->budget && dev->sysmem_used > dev->budget; p++) {
        for (struct vm_alloc *a = dev->offer.head[p]; a && dev->sysmem_used > dev->budget; a = a->offer.next) {
            if (a->where != VIDMM_WHERE_SYSMEM || !a->backing_valid || !vm_offer_discardable(dev, a) ||
                held(dev, a) || a->dying)
                continue;
            bool gone = a->offer.decommit && decommit(dev, a, a->paging_fence);
            if (!gone) {
                /* The pages only (the same conditions as a decommit). */
                if (!a->has_backing || a->g->desc.existing_memory || a->swap != VM_SWAP_NONE || a->altva ||
                    a->paging_fence > dev->paging_done)
                    continue;
                vmos_arena_release(&dev->arena, (size_t)a->backing_off, (size_t)a->g->size);
            }
            a->backing_valid = false;
            vm_set_where(dev, a, VIDMM_WHERE_NONE);
            vm_offer_mark_lost(dev, a, gone);
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * Lists of a call: exactly one of 'resources' / 'allocations', 1..10240 entries, every handle
 * known. A resource entry names every rename instance of the allocation (spec 11: pResources,
 * the runtime's resource; here the allocation as created), an allocation entry that instance.
 * ------------------------------------------------------------------------------------------- */
static int check_list(const vidmm_handle *resources, const vidmm_handle *allocations, uint32_t count,
                      const char *call)
{
    if ((resources != NULL) == (allocations != NULL))
        return vidmm_refuse(call, "resources", "not exactly one of resources / allocations", "11, 15.20");
    if (count == 0 || count > MAX_LIST)
        return vidmm_refuse(call, "count", "not in 1..10240", "11, 15.20");
    return 0;
}

/* begin(): the checks once the mutex is taken. */
static int begin(vidmm_device *dev, const vidmm_handle *list, uint32_t count, const char *call)
{
    if (dev->removed)
        return VIDMM_E_DEVICE_REMOVED;
    return vm_check_handles_(dev, list, count, call);
}

/* ---------------------------------------------------------------------------------------------
 * Offer.
 * ------------------------------------------------------------------------------------------- */
static uint8_t auto_priority(const struct vm_alloc *a)
{
    /* AUTO: derived from the eviction priority (spec 15.20, engine policy). */
    if (a->g->priority < VIDMM_PRIORITY_NORMAL)
        return VIDMM_OFFER_PRIORITY_LOW;
    if (a->g->priority < VIDMM_PRIORITY_HIGH)
        return VIDMM_OFFER_PRIORITY_NORMAL;
    return VIDMM_OFFER_PRIORITY_HIGH;
}

static int check_offerable(const vidmm_device *dev, const struct vm_alloc *a, const char *call)
{
    if (a->pinned)
        return vidmm_refuse(call, "allocations", "a pinned allocation (never discarded)", "10, wddm2.h");
    if (a->lock_count || a->converting || (a->range >= 0 && dev->ranges[a->range].active))
        return vidmm_refuse(call, "allocations", "a locked allocation: unlock it first", "6.3 rule 9, wddm2.h");
    return 0;
}

static void offer_one(vidmm_device *dev, struct vm_alloc *a, uint32_t prio, uint32_t flags)
{
    const uint8_t pr = prio == VIDMM_OFFER_PRIORITY_AUTO ? auto_priority(a) : (uint8_t)prio;
    unlink_offer(dev, a); /* offered again: its new priority, at the end of that list */
    a->offer.decommit = (flags & VIDMM_OFFER_ALLOW_DECOMMIT) != 0;
    const uint64_t last = a->read_fence > a->write_fence ? a->read_fence : a->write_fence;
    a->offer.after = (flags & VIDMM_OFFER_IMMEDIATELY) || last <= dev->fence_done ? 0 : last;
    link_offer(dev, a, pr);
}

int vm_offer_check_list(const vidmm_device *dev, const struct vm_alloc *a, uint32_t prio, const char *call)
{
    if (prio > VIDMM_OFFER_PRIORITY_AUTO)
        return vidmm_refuse(call, "refs[].flags", "OfferPriority not NONE, LOW, NORMAL, HIGH or AUTO", "11");
    return check_offerable(dev, a, call);
}

void vm_offer_after_submit(vidmm_device *dev, struct vm_alloc *a, uint32_t prio)
{
    /* Its read fence is the submission's: the offer waits for it (offer_one()). */
    offer_one(dev, a, prio, 0);
}

int vidmm_offer(vidmm_device *dev, const struct vidmm_offer_args *args)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_offer";
    if (!dev || !args || (args->size_of != VIDMM_OFFER_ARGS_V1_SIZE && args->size_of < sizeof *args))
        return vidmm_refuse(call, !dev ? "dev" : "args", "NULL, or size_of neither V1 nor the whole struct", "wddm2.h");
    /* 0.4: the calling process, when the caller's struct has it (wddm2.h Processes). */
    const uint32_t process = args->size_of >= sizeof *args ? args->process : 0;
    int err = check_list(args->resources, args->allocations, args->count, call);
    if (err)
        return err;
    if (args->priority < VIDMM_OFFER_PRIORITY_LOW || args->priority > VIDMM_OFFER_PRIORITY_AUTO)
        return vidmm_refuse(call, "priority", "not LOW, NORMAL, HIGH or AUTO (NONE is not for offers)", "11");
    if (args->flags & ~(VIDMM_OFFER_IMMEDIATELY | VIDMM_OFFER_ALLOW_DECOMMIT))
        return vidmm_refuse(call, "flags", "unknown bits", "11");
    if (args->reserved)
        return vidmm_refuse(call, "reserved", "not 0", "wddm2.h");
    const vidmm_handle *list = args->resources ? args->resources : args->allocations;
    pthread_mutex_lock(&dev->mu);
    err = begin(dev, list, args->count, call);
    if (!err)
        err = vm_w2_named(dev, process);
    for (uint32_t i = 0; !err && process && i < args->count; i++)
        err = vm_w2_owned(vm_lookup(dev, list[i]), process, call);
    if (!err && args->flags && !dev->w2.on)
        err = vidmm_refuse(call, "flags", "D3DKMT_OFFER_FLAGS on a WDDM1 device (they are WDDM2)", "11");
    /* Everything is checked before anything changes. */
    for (uint32_t i = 0; !err && i < args->count; i++) {
        const struct vm_group *g = vm_lookup(dev, list[i])->g;
        if (args->resources) {
            for (uint32_t k = 0; !err && k < g->ninst; k++)
                err = check_offerable(dev, g->inst[k], call);
        } else {
            err = check_offerable(dev, vm_lookup(dev, list[i]), call);
        }
    }
    for (uint32_t i = 0; !err && i < args->count; i++) {
        struct vm_alloc *a = vm_lookup(dev, list[i]);
        if (args->resources) {
            for (uint32_t k = 0; k < a->g->ninst; k++)
                offer_one(dev, a->g->inst[k], args->priority, args->flags);
        } else {
            offer_one(dev, a, args->priority, args->flags);
        }
    }
    if (!err)
        vm_offer_trim_sysmem(dev); /* decommittable copies may go at once when over budget */
    vm_unlock_and_page(dev);
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Reclaim.
 * ------------------------------------------------------------------------------------------- */

/* The result of entry 'h' now, before anything changes: the worst of its instances for a
 * resource (NOT_COMMITTED > DISCARDED > OK). */
static uint32_t entry_result(vidmm_device *dev, vidmm_handle h, bool resource)
{
    struct vm_alloc *a = vm_lookup(dev, h);
    if (!resource)
        return a->offer.lost;
    uint32_t r = VIDMM_RECLAIM_OK;
    for (uint32_t k = 0; k < a->g->ninst; k++)
        if (a->g->inst[k]->offer.lost > r)
            r = a->g->inst[k]->offer.lost;
    return r;
}

/* The instances an entry names, each once per call (tag). */
static size_t gather(vidmm_device *dev, const vidmm_handle *list, uint32_t count, bool resource, struct vm_alloc ***out,
                     int *err)
{
    size_t n = 0, cap = count;
    struct vm_alloc **u = malloc(sizeof *u * cap);
    if (!u) {
        *err = VIDMM_E_NO_MEMORY;
        return 0;
    }
    const uint32_t tag = ++dev->offer.tag;
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, list[i]);
        const uint32_t first = resource ? 0 : a->index, end = resource ? a->g->ninst : a->index + 1;
        for (uint32_t k = first; k < end; k++) {
            struct vm_alloc *x = a->g->inst[k];
            if (x->offer.tag == tag)
                continue;
            x->offer.tag = tag;
            if (n == cap) {
                cap *= 2;
                struct vm_alloc **p = realloc(u, sizeof *p * cap);
                if (!p) {
                    free(u);
                    *err = VIDMM_E_NO_MEMORY;
                    return 0;
                }
                u = p;
            }
            u[n++] = x;
        }
    }
    *out = u;
    return n;
}

/* refill(): 'a''s content was lost and is nowhere now, so the reclaim gives it the debug
 * pattern. (Lost content that something rewrote since - vidmm_gpu_access() of a discarded
 * allocation - is left as it is.) */
static bool refill(const struct vm_alloc *a)
{
    return a->offer.lost && a->where == VIDMM_WHERE_NONE && a->swap == VM_SWAP_NONE;
}

int vidmm_reclaim(vidmm_device *dev, struct vidmm_reclaim_args *args)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_reclaim";
    if (!dev || !args ||
        (args->size_of != VIDMM_RECLAIM_ARGS_V1_SIZE && args->size_of != VIDMM_RECLAIM_ARGS_V2_SIZE &&
         args->size_of < sizeof *args))
        return vidmm_refuse(call, !dev ? "dev" : "args", "NULL, or size_of not V1, V2 or the whole struct", "wddm2.h");
    /* 0.2: the paging queue (WDDM2 hook, pagingq.c), 0.4: the calling process (wddm2.h
     * Processes), when the caller's struct has them. */
    vidmm_paging_queue *const queue = args->size_of >= VIDMM_RECLAIM_ARGS_V2_SIZE ? args->queue : NULL;
    const uint32_t process = args->size_of >= sizeof *args ? args->process : 0;
    struct vidmm_paging_queue *q = NULL;
    int err = check_list(args->resources, args->allocations, args->count, call);
    if (err)
        return err;
    if (args->reserved)
        return vidmm_refuse(call, "reserved", "not 0", "wddm2.h");
    const bool resource = args->resources != NULL;
    const vidmm_handle *list = resource ? args->resources : args->allocations;
    struct vm_alloc **u = NULL;
    bool *mine = NULL;
    size_t n = 0;
    pthread_mutex_lock(&dev->mu);
    err = begin(dev, list, args->count, call);
    if (!err)
        n = gather(dev, list, args->count, resource, &u, &err);
    if (!err) /* the process it names, by its queue or its field (WDDM2 hook, residency.c) */
        err = vm_w2_named_list(dev, queue, process, u, n, &q, call);
    if (!err && (mine = calloc(n, sizeof *mine)) == NULL)
        err = VIDMM_E_NO_MEMORY;
    /* Allocations whose content is gone get a backing store for the debug pattern: committed
     * first, for all of them, so that a failure changes nothing (those committed here are
     * given back). Lost content is nowhere (WHERE_NONE), so nothing reads a fresh store. */
    for (size_t i = 0; !err && i < n; i++) {
        struct vm_alloc *a = u[i];
        if (!refill(a) || a->has_backing)
            continue;
        if (vm_backing_ensure(dev, a) != 0) {
            err = VIDMM_E_NO_MEMORY;
            for (size_t k = 0; k < i; k++)
                if (mine[k])
                    vm_backing_release(dev, u[k]);
            break;
        }
        mine[i] = true;
    }
    free(mine);
    if (err) {
        free(u);
        vm_unlock_and_page(dev);
        return err;
    }
    for (uint32_t i = 0; i < args->count; i++) {
        const uint32_t r = entry_result(dev, list[i], resource);
        if (args->results)
            args->results[i] = r;
        if (args->discarded)
            args->discarded[i] = r != VIDMM_RECLAIM_OK;
    }
    for (size_t i = 0; i < n; i++) {
        struct vm_alloc *a = u[i];
        if (refill(a)) {
            /* Discarded content is undefined: it reads as the debug pattern (spec 15.20). The
             * store is not in use by any queued operation (the content was nowhere). */
            vidmm_fill32(a->backing, VIDMM_DISCARDED_PATTERN, (size_t)a->g->size, VIDMM_MEM_CACHED);
            a->backing_valid = true;
            a->evicted_swizzled = (a->g->desc.flags & VIDMM_ALLOC_SWIZZLED) != 0; /* as bytes: tiled */
            vm_set_where(dev, a, VIDMM_WHERE_SYSMEM);
        }
        vm_offer_forget(dev, a);
    }
    /* WDDM2: reclaim pages back in what is on the residency list (spec 11), with a paging
     * fence to wait for before GPU use. A failure leaves those allocations reclaimed but
     * evicted; vidmm_va_submit() brings them back (or fails) like any evicted listed one. */
    uint64_t last = 0;
    for (size_t i = 0; dev->w2.on && i < n; i++)
        u[i]->hold++;
    if (q)
        dev->emit_cls = vm_pq_class(q);
    for (size_t i = 0; dev->w2.on && i < n; i++) {
        struct vm_alloc *a = u[i];
        if (a->w2_res_count && !placed(a) && a->where != VIDMM_WHERE_DISK && a->swap == VM_SWAP_NONE) {
            int e = vm_make_resident(dev, a, VM_USE_ANY | (a->lock_count ? VM_USE_APERTURE_ONLY : 0), false);
            if (e && !err)
                err = e == VIDMM_E_DEVICE_REMOVED ? e : VIDMM_E_NO_MEMORY;
        }
        if (a->w2_res_count && a->paging_fence > last)
            last = a->paging_fence;
    }
    dev->emit_cls = VM_CLS_NORMAL;
    for (size_t i = 0; dev->w2.on && i < n; i++)
        u[i]->hold--;
    if (dev->w2.on && dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* a destroy may wait for them */
    args->paging_fence = last;
    if (!err && last > dev->paging_done)
        err = VIDMM_PENDING;
    if (q) {
        /* The queue's fence waits for the resident-listed ones only, as 'last' does. */
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (u[i]->w2_res_count)
                u[k++] = u[i];
        bool pending;
        args->paging_fence = vm_pq_issue(dev, q, u, k, &pending);
        if (err == 0 || err == VIDMM_PENDING)
            err = pending ? VIDMM_PENDING : 0;
    }
    free(u);
    vm_unlock_and_page(dev);
    return err;
}
