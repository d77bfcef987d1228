/* SPDX-License-Identifier: MIT */
/* lib/engine/lock2.c - WDDM2 CPU access (include/vidmm/wddm2.h): Lock2 / Unlock2 (spec 6.6,
 * 15.23) and UpdateAllocationProperty (spec 12).
 *
 * Lock2 reuses the WDDM1 lock state of the allocation (vm_alloc.lock_count, lock_ptr, and
 * lock_mode VM_LOCK_LOCK2), so that everything that already keeps a locked allocation in place
 * keeps a Lock2'd one in place too: place.c evictable() never picks it as a victim, the
 * residency calls and vidmm_evict() leave it where it is, offer refuses it, power transitions
 * save and restore it in place, device removal and destroy end it (vm_locks_drop()). What is
 * new is decided here, before anything changes: the flags (none defined), the placement rules
 * of spec 15.23 - the one move they allow (a memory segment to an aperture of the supported
 * set) is made by vm_make_resident() with VM_USE_APERTURE_ONLY - and the refcount. What Lock2
 * does not do: look at submission fences (spec 6.6: VidMm no longer tracks GPU usage for
 * locks, the UMD waits on its own fences), rename, or use swizzling ranges. It waits for the
 * allocation's own paging operations (its page-in, its move), which the pointer's bytes depend
 * on, and for a disk read-back.
 *
 * The rule that a locked allocation is not committed to a memory segment (spec 6.6) is kept by
 * place.c vm_make_resident() (its WDDM2 hook: locked and not placed, apertures only; locked and
 * placed, no move) and checked up front by vidmm_wddm2_make_resident() through
 * vm_lock2_refuse_commit(). */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

static uint32_t aperture_set(const vidmm_device *dev)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < dev->nseg; i++)
        if (dev->seg[i].aperture)
            m |= 1u << i;
    return m;
}

static bool sysmem_backed(const struct vm_group *g)
{
    return (g->desc.flags & (VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_EXISTING_SYSMEM |
                             VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM)) != 0;
}

static bool is_placed(const struct vm_alloc *a)
{
    return (a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE) && a->seg;
}

int vm_lock2_refuse_commit(const vidmm_device *dev, const struct vm_alloc *a, const char *call)
{
    if (!a->lock_count || is_placed(a) || (a->g->supported & aperture_set(dev)))
        return 0;
    vidmm_log(VIDMM_LOG_DEBUG, "%s: allocation 0x%x is locked outside the segments and only memory segments may hold "
                               "it: not committed to one until unlocked (spec 6.6)",
              call, (unsigned)a->handle);
    return VIDMM_E_NOT_AVAILABLE;
}

/* ---------------------------------------------------------------------------------------------
 * Lock2 (spec 6.6, 15.23).
 * ------------------------------------------------------------------------------------------- */
#define REFUSE2(field, rule, spec) vidmm_refuse("vidmm_wddm2_lock2", field, rule, spec)

/* placement_rule(): may 'a' (not sysmem-backed, in memory segment a->seg) be locked there?
 * 0: yes; 1: only once moved to an aperture of its set; VIDMM_E_INVALID_ARG: no (logged). */
static int placement_rule(const vidmm_device *dev, const struct vm_alloc *a)
{
    const uint32_t af = a->g->desc.flags;
    const bool has_aperture = (a->g->supported & aperture_set(dev)) != 0;
    const char *why = NULL;
    if (af & VIDMM_ALLOC_CACHED)
        why = "a CACHED allocation in a memory segment (no CPU / memory-segment coherency) and no aperture segment in "
              "its supported set";
    else if (!(af & VIDMM_ALLOC_CPU_VISIBLE))
        why = "not CPU_VISIBLE, in a memory segment, and no aperture segment in its supported set";
    else if (!(a->seg->flags & VIDMM_SEGMENT_CPU_VISIBLE))
        why = "CPU_VISIBLE in a memory segment that is not CPU-visible, and no aperture segment in its supported set";
    else
        return 0; /* CPU_VISIBLE in a CPU-visible memory segment: always locks */
    if (has_aperture)
        return 1;
    return REFUSE2("allocation", why, "6.6, 15.23");
}

int vidmm_wddm2_lock2(vidmm_device *dev, uint32_t process, vidmm_handle h, uint32_t flags, void **data)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_lock2";
    if (!dev || !data)
        return vidmm_refuse(call, !dev ? "dev" : "data", "NULL", "wddm2.h");
    if (flags != 0)
        return REFUSE2("flags", "not 0 (D3DDDICB_LOCK2FLAGS: every bit reserved)", "6.6, 15.23");
    pthread_mutex_lock(&dev->mu);
    int err = 0;
    struct vm_alloc *a;
retry:
    a = vm_lookup(dev, h);
    if (dev->removed || vm_w2_proc_removed(dev, process))
        err = VIDMM_E_DEVICE_REMOVED;
    else if (!dev->w2.on)
        err = vidmm_refuse(call, "dev", "not created with VIDMM_DEVICE_WDDM2", "wddm2.h");
    else if (!a)
        err = vm_refuse_handle(call, h);
    else if ((a->g->desc.kind & VIDMM_ALLOC_KIND_SHARED) && process != a->g->desc.process)
        err = REFUSE2("process", "not the creator of the shared allocation", "6.3 rule 10");
    else if (process != a->g->desc.process && !(a->g->desc.kind & VIDMM_ALLOC_KIND_SHARED))
        err = REFUSE2("process", "an allocation of another process, not shared", "Doc MAKERESIDENT, wddm2.h Processes");
    else if (a->offer_prio)
        err = vm_offer_refuse_use(a, call); /* offer hook: reclaim it first (spec 6.3 rule 9, 15.20) */
    else if (a->lock_count && a->lock_mode != VM_LOCK_LOCK2)
        err = REFUSE2("allocation", "locked by vidmm_lock(): the two lock kinds do not mix (engine policy)", "6.6");
    else if (a->lock_count == UINT32_MAX)
        err = REFUSE2("allocation", "lock count at its maximum", "6.6");
    if (err)
        goto out;
    if (a->lock_count) {
        /* Locked already: one more reference, the same pointer (spec 6.6, dxgkrnl). */
        a->lock_count++;
        *data = a->lock_ptr;
        dev->st.locks++;
        goto out;
    }
    if (a->where == VIDMM_WHERE_DISK || a->swap != VM_SWAP_NONE) {
        /* On the disk tier, or moving to or from it (a write-out reads the backing store the
         * CPU is about to write): back first. The wait releases the mutex: check again. */
        if ((err = vm_swap_in(dev, &a, 1, true, NULL)) != 0)
            goto out;
        goto retry;
    }
    a->hold++; /* no victim while this lock moves it and waits for its paging */
    if (!sysmem_backed(a->g) && a->where == VIDMM_WHERE_SEGMENT) {
        const int rule = placement_rule(dev, a);
        if (rule < 0)
            err = rule;
        else if (rule == 1) /* to an aperture of its set: the pointer is then its backing store */
            err = vm_make_resident(dev, a, VM_USE_ANY | VM_USE_APERTURE_ONLY, false);
    }
    uint8_t *ptr = NULL;
    if (!err)
        err = vm_lock_plain(dev, a, &ptr);
    const uint32_t where = a->where;
    const struct vm_segment *seg = a->seg;
    const uint64_t offset = a->offset;
    /* The bytes behind the pointer must be there: wait for its paging (never for the GPU).
     * Waiting releases the mutex; being held, it is neither a victim nor destroyed meanwhile. */
    while (!err && a->paging_fence > dev->paging_done)
        err = vm_wait_paging_locked(dev, a->paging_fence);
    if (--a->hold == 0 && dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* a destroy is waiting for it */
    if (!err && (dev->removed || vm_w2_proc_removed(dev, process)))
        err = VIDMM_E_DEVICE_REMOVED; /* removed while it waited: its locks ended, this one too */
    if (err)
        goto out;
    if (a->lock_count) {
        /* Another thread's Lock2 of it finished while this one waited: nest in it. */
        goto retry;
    }
    if (a->where != where ||
        ((where == VIDMM_WHERE_SEGMENT || where == VIDMM_WHERE_APERTURE) && (a->seg != seg || a->offset != offset))) {
        /* Another thread moved it while this one waited (paged it in): 'ptr' is where its
         * content was, not where it is. */
        goto retry;
    }
    const struct vm_group *g = a->g;
    if ((g->desc.flags & VIDMM_ALLOC_CACHED) && a->gpu_wrote) {
        /* Before CPU reads after GPU writes (spec 15.24). */
        if (dev->drv.invalidate_cpu_cache)
            dev->drv.invalidate_cpu_cache(dev->drv.arg, ptr, (size_t)g->size);
        else
            vidmm_flush(ptr, (size_t)g->size, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
        dev->st.cache_invalidates++;
        a->gpu_wrote = false;
    }
    /* Lock2 has no ReadOnly: every lock may write (spec 15.6: a writable CPU lock on its segment
     * location makes it dirty; 15.24: a CACHED one is flushed before the GPU reads it). */
    if (a->where == VIDMM_WHERE_SEGMENT && !sysmem_backed(g))
        a->dirty = true;
    if (g->desc.flags & VIDMM_ALLOC_CACHED) {
        a->cpu_wrote = true;
        a->cpu_partial = false; /* every page: no write tracking under Lock2 */
    }
    if (sysmem_backed(g))
        a->dirty_all_pages = true; /* copied back to its segment at the last Unlock2 */
    a->gen++;                      /* a disk copy being written now is stale */
    a->lock_count = 1;
    a->lock_mode = VM_LOCK_LOCK2;
    a->lock_flags = 0;
    a->lock_ptr = ptr;
    vm_touch(dev, a);
    dev->st.locks++;
    *data = ptr;
out:
    vm_unlock_and_page(dev);
    return err;
}

/* unlock2(): Unlock2 by 'process' (named: vidmm_wddm2_unlock2_process()). */
static int unlock2(vidmm_device *dev, bool named, uint32_t process, vidmm_handle h, const char *call)
{
    if (!dev)
        return vidmm_refuse(call, "dev", "NULL", "wddm2.h");
    pthread_mutex_lock(&dev->mu);
    int err = 0;
    struct vm_alloc *a = vm_lookup(dev, h);
    if (dev->removed || (named && vm_w2_proc_removed(dev, process)))
        err = VIDMM_E_DEVICE_REMOVED;
    else if (!dev->w2.on)
        err = vidmm_refuse(call, "dev", "not created with VIDMM_DEVICE_WDDM2", "wddm2.h");
    else if (!a)
        err = vm_refuse_handle(call, h);
    else if (named && process != a->g->desc.process)
        err = vidmm_refuse(call, "process", "not the allocation's: only its creator may have locked it",
                           "6.3 rule 10, wddm2.h Processes");
    else if (a->lock_count == 0)
        err = vidmm_refuse(call, "h", "an allocation that is not locked", "6.6");
    else if (a->lock_mode != VM_LOCK_LOCK2)
        err = vidmm_refuse(call, "h", "locked by vidmm_lock(): unlock it with vidmm_unlock()", "6.6");
    if (!err) {
        const uint64_t before = a->paging_fence;
        vm_unlock_one(dev, a); /* at 0: the lock ends (a PermanentSysMem copy-back queued) */
        /* A copy-back is done when the call returns, as vidmm_unlock()'s (unless the GPU still
         * uses the allocation, or paging queued before it waits for the GPU: that waits in the
         * queue, not here). */
        if (a->paging_fence != before && !vm_busy(dev, a, false) && a->paging_fence > dev->paging_done)
            (void)vm_wait_paging_nowait(dev, a->paging_fence);
    }
    vm_unlock_and_page(dev);
    return err;
}

int vidmm_wddm2_unlock2(vidmm_device *dev, vidmm_handle h)
{
    VM_DEV_CHECK(dev);
    return unlock2(dev, false, 0, h, "vidmm_wddm2_unlock2");
}

int vidmm_wddm2_unlock2_process(vidmm_device *dev, uint32_t process, vidmm_handle h)
{
    VM_DEV_CHECK(dev);
    if (process == 0) /* as vidmm_wddm2_query_residency_process() */
        return vidmm_refuse("vidmm_wddm2_unlock2_process", "process", "0 names no process (vidmm_wddm2_unlock2())",
                            "wddm2.h Processes");
    return unlock2(dev, true, process, h, "vidmm_wddm2_unlock2_process");
}

/* ---------------------------------------------------------------------------------------------
 * UpdateAllocationProperty (spec 12).
 * ------------------------------------------------------------------------------------------- */
#define UPDATE_MASK_ALL                                                                                  \
    (VIDMM_UPDATE_SET_ACCESSED_PHYSICALLY | VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET |                     \
     VIDMM_UPDATE_SET_PREFERRED_SEGMENT | VIDMM_UPDATE_SET_UNMOVEABLE)
#define UPDATE_FLAGS_ALL (VIDMM_UPDATE_ACCESSED_PHYSICALLY | VIDMM_UPDATE_UNMOVEABLE)
#define REFUSE_U(field, rule, spec) vidmm_refuse("vidmm_wddm2_update_alloc_property", field, rule, spec)

/* set_pinned(): 'a' pinned or not, its segment's pinned bytes kept right (victims.c). */
static void set_pinned(struct vm_alloc *a, bool pinned)
{
    if (a->pinned == pinned)
        return;
    if (a->seg && a->in_bucket)
        a->seg->pinned_bytes = pinned ? a->seg->pinned_bytes + a->space : a->seg->pinned_bytes - a->space;
    a->pinned = pinned;
}

void vm_lock2_process_gone(vidmm_device *dev, struct vm_alloc *a, bool unpin)
{
    while (a->lock_count && a->lock_mode == VM_LOCK_LOCK2)
        vm_unlock_one(dev, a); /* the last one queues a PermanentSysMem copy-back */
    const bool fixed = (a->g->desc.flags & (VIDMM_ALLOC_OVERLAY | VIDMM_ALLOC_CAPTURE)) != 0;
    if (unpin)
        set_pinned(a, fixed);
}

int vidmm_wddm2_update_alloc_property(vidmm_device *dev, struct vidmm_update_alloc_property_args *args)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_wddm2_update_alloc_property";
    if (!dev || !args || (args->size_of != VIDMM_UPDATE_ALLOC_PROPERTY_ARGS_V1_SIZE && args->size_of < sizeof *args))
        return vidmm_refuse(call, !dev ? "dev" : "args", "NULL, or size_of neither V1 nor the whole struct", "wddm2.h");
    /* 0.4: the calling process, when the caller's struct has it (wddm2.h Processes). */
    const uint32_t process = args->size_of >= sizeof *args ? args->process : 0;
    if (args->property_mask == 0 || (args->property_mask & ~UPDATE_MASK_ALL))
        return REFUSE_U("property_mask", "0 (nothing to update) or unknown bits", "12");
    if ((args->flags & ~UPDATE_FLAGS_ALL) || args->reserved)
        return REFUSE_U(args->reserved ? "reserved" : "flags", "unknown bits, or reserved not 0", "12");
    pthread_mutex_lock(&dev->mu);
    int err = 0;
    struct vm_alloc *a = vm_lookup(dev, args->allocation);
    if (dev->removed || vm_w2_named(dev, process))
        err = VIDMM_E_DEVICE_REMOVED;
    else if (!dev->w2.on)
        err = vidmm_refuse(call, "dev", "not created with VIDMM_DEVICE_WDDM2", "wddm2.h");
    else if (!a)
        err = vm_refuse_handle(call, args->allocation);
    else
        err = vm_w2_owned(a, process, call);
    if (err)
        goto out;
    struct vm_group *g = a->g;
    const uint32_t mask = args->property_mask;
    /* The descriptor as it would be, checked by the creation rules (spec 15.2). */
    struct vidmm_alloc_desc d = g->desc;
    if (mask & VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET)
        d.supported_read_set = d.supported_write_set = args->supported_segment_set;
    if (mask & VIDMM_UPDATE_SET_PREFERRED_SEGMENT)
        d.preferred_segment = args->preferred_segment;
    if (mask & VIDMM_UPDATE_SET_ACCESSED_PHYSICALLY)
        d.flags = (args->flags & VIDMM_UPDATE_ACCESSED_PHYSICALLY) ? d.flags | VIDMM_ALLOC_ACCESSED_PHYSICALLY
                                                                   : d.flags & ~VIDMM_ALLOC_ACCESSED_PHYSICALLY;
    d.layout = (g->desc.flags & VIDMM_ALLOC_SWIZZLED) ? &g->layout : NULL;
    d.surface = (g->desc.flags & VIDMM_ALLOC_SWIZZLED) ? &g->surface : NULL;
    if ((err = vm_check_alloc_desc(dev, &d)) != 0)
        goto out;
    const uint32_t new_set = d.supported_read_set | d.supported_write_set;
    const bool must_move = is_placed(a) && !(new_set & (1u << (a->seg->id - 1)));
    if (must_move && a->pinned) {
        err = VIDMM_E_CANT_EVICT_PINNED; /* pinned never moves (spec 10, 15.4) */
        goto out;
    }
    if (must_move && (a->lock_count || a->hold || a->converting)) {
        err = VIDMM_E_BUSY; /* locked (its pointer must stay valid), or being placed by another call */
        goto out;
    }
    const struct vidmm_alloc_desc old = g->desc;
    const uint32_t old_supported = g->supported;
    g->desc.supported_read_set = d.supported_read_set;
    g->desc.supported_write_set = d.supported_write_set;
    g->desc.preferred_segment = d.preferred_segment;
    g->desc.flags = d.flags;
    g->supported = new_set;
    uint64_t fence = 0;
    if (must_move) {
        a->hold++;
        if (a->w2_res_count) {
            /* On the residency list: placed again in the new set at once (spec 12: the list
             * stays resident). */
            err = vm_make_resident(dev, a, VM_USE_ANY, false);
        } else if (vm_offer_discardable(dev, a)) {
            vm_offer_discard(dev, a); /* offer hook: offered content is discarded, not paged out */
        } else {
            err = vm_evict_one(dev, a, false, false); /* the next make-resident places it */
        }
        if (--a->hold == 0 && dev->hold_waiters)
            pthread_cond_broadcast(&dev->paging_cv);
        if (err) {
            g->desc = old; /* it stayed where it was: its properties too */
            g->supported = old_supported;
            goto out;
        }
        fence = a->paging_fence;
    }
    if (mask & VIDMM_UPDATE_SET_UNMOVEABLE) {
        const bool fixed = (g->desc.flags & (VIDMM_ALLOC_OVERLAY | VIDMM_ALLOC_CAPTURE)) != 0;
        set_pinned(a, fixed || (args->flags & VIDMM_UPDATE_UNMOVEABLE));
    }
    args->paging_fence = fence;
    err = fence > dev->paging_done ? VIDMM_PENDING : 0;
out:
    vm_unlock_and_page(dev);
    return err;
}
