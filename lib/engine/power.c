/* SPDX-License-Identifier: MIT */
/* lib/engine/power.c - simulated standby and hibernate (include/vidmm/wddm2.h, spec 2.3,
 * 15.26): the segments the DXGK_SEGMENTFLAGS power bits do not preserve are purged - what can
 * be re-created (offered content) is dropped, what must survive is paged out or saved and
 * restored in place - and their memory is then overwritten, as the hardware losing power would.
 *
 * The purge is planned under the device mutex like any eviction; its paging runs in queue
 * order, and the bytes are overwritten only once the queue has drained (the mutex held from
 * that check to the overwrite, so nothing queued by another call can be overtaken). Only bytes
 * no placed allocation holds are overwritten, plus the ranges of the allocations saved for
 * restoring: an allocation another call placed there meanwhile keeps its content.
 *
 * A partially purged segment (PARTIALLY_PRESERVED_DURING_HIBERNATE, in hibernate) with a
 * system_memory_end (spec 2.2 SystemMemoryEndAddress) keeps offsets 0..system_memory_end: an
 * allocation lying wholly there is left alone (no paging at all), one reaching beyond it is
 * purged as in a purged segment, and only the bytes above the end are overwritten. Without an
 * end, the allocations kept in place are the preserved part and the rest is purged. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

enum { ACT_NONE = 0, ACT_DISCARD, ACT_SAVE, ACT_EVICT };

struct item {
    struct vm_alloc *a;
    uint8_t act;
    bool committed;             /* its backing store was committed by this call */
    uint8_t *save;              /* ACT_SAVE: where its bytes wait for the power to return */
};

/* drain(): every paging operation queued so far has run (mutex held; released meanwhile). */
static int drain(vidmm_device *dev)
{
    while (!dev->removed && dev->paging_done < dev->paging_issued) {
        int e = vm_wait_paging_locked(dev, dev->paging_issued);
        if (e == VIDMM_E_ALLOCATION_INVALID)
            return VIDMM_E_DEVICE_REMOVED; /* a paging operation failed: the device is removed */
        if (e)
            return e;
    }
    return dev->removed ? VIDMM_E_DEVICE_REMOVED : 0;
}

/* gpu_idle(): 0, or VIDMM_E_BUSY while a submission fence is not signalled (mutex held). */
static int gpu_idle(const vidmm_device *dev, const char *call)
{
    if (dev->removed)
        return VIDMM_E_DEVICE_REMOVED;
    if (dev->fence_done >= dev->fence_issued)
        return 0;
    vidmm_log(VIDMM_LOG_DEBUG, "%s: the GPU is not idle (fence %llu of %llu signalled)", call,
              (unsigned long long)dev->fence_done, (unsigned long long)dev->fence_issued);
    return VIDMM_E_BUSY;
}

/* purged(): what 'state' does to segment 's': 0 preserved, 1 purged, 2 partially purged. */
static int purged(const struct vm_segment *s, uint32_t state)
{
    if (s->aperture)
        return 0; /* its content is system memory: kept by standby, saved by hibernate */
    if (state == VIDMM_POWER_STANDBY)
        return (s->flags & VIDMM_SEGMENT_PRESERVED_DURING_STANDBY) ? 0 : 1;
    if (s->flags & VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE)
        return 0;
    return (s->flags & VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE) ? 2 : 1;
}

/* lost_from(): the first offset of 's' whose bytes 'state' loses when it purges 's' - past
 * system_memory_end in a partially purged segment that has one, else 0. */
static uint64_t lost_from(const struct vm_segment *s, uint32_t state)
{
    return purged(s, state) == 2 && s->system_memory_end ? s->system_memory_end + 1 : 0;
}

static bool kept_in_place(const vidmm_device *dev, const struct vm_alloc *a)
{
    return a->pinned || a->lock_count || a->hold || a->converting || (a->range >= 0 && dev->ranges[a->range].active);
}

/* copy(): a whole-allocation TRANSFER between 'a''s place in its segment and system memory at
 * 'mem', 'out' toward system memory. The save area is host memory of this call rather than the
 * allocation's backing store, so that nothing the engine knows of that store (valid, tiled,
 * dirty pages) changes for an allocation that does not move. */
static void copy(vidmm_device *dev, struct vm_alloc *a, uint8_t *mem, bool out)
{
    struct vm_pop p;
    memset(&p, 0, sizeof p);
    p.op.type = VIDMM_PAGING_TRANSFER;
    p.op.allocation = a->handle;
    p.op.driver_data = a->g->desc.driver_data;
    p.op.flags = VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
    p.op.size = a->g->size;
    const struct vidmm_location seg = { a->seg->id, a->seg->base_address + a->offset };
    const struct vidmm_location sys = { 0, 0 };
    p.op.src = out ? seg : sys;
    p.op.dst = out ? sys : seg;
    p.op.src_ptr = out ? (const void *)(a->seg->cpu + a->offset) : (const void *)mem;
    p.op.dst_ptr = out ? (void *)mem : (void *)(a->seg->cpu + a->offset);
    p.a = a;
    p.sync = (a->g->desc.flags & VIDMM_ALLOC_SYNCHRONOUS_PAGING) != 0;
    a->paging_fence = vm_emit(dev, &p);
    if (out)
        dev->st.bytes_paged_out += a->g->size;
    else
        dev->st.bytes_paged_in += a->g->size;
}

static int by_offset(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* lose(): segment offsets [from, to) of 's' read VIDMM_POWER_PURGE_PATTERN, in the phase of
 * their offsets (byte o is byte o % 4 of the pattern, as a FILL of the whole segment would leave
 * it), whatever the alignment of 'from' and 'to' (system_memory_end + 1 may be any offset). */
static void lose(struct vm_segment *s, uint64_t from, uint64_t to)
{
    while (from < to && from % 4) {
        s->cpu[from] = (uint8_t)(VIDMM_POWER_PURGE_PATTERN >> (8 * (from % 4)));
        from++;
    }
    const uint64_t mid = from + (to - from) / 4 * 4;
    if (mid > from)
        vidmm_fill32(s->cpu + from, VIDMM_POWER_PURGE_PATTERN, (size_t)(mid - from), VIDMM_MEM_CACHED);
    for (uint64_t o = mid; o < to; o++)
        s->cpu[o] = (uint8_t)(VIDMM_POWER_PURGE_PATTERN >> (8 * (o % 4)));
}

/* overwrite(): the bytes of 's' from offset 'from' on that no placed allocation holds, and
 * those of the allocations saved for restoring, lose their content. Returns the bytes
 * overwritten. Without memory for the list of held ranges the whole segment but those ranges
 * cannot be told apart: nothing is overwritten (the loss is then simply not visible). */
static uint64_t overwrite(vidmm_device *dev, struct vm_segment *s, uint64_t from, const struct item *it, size_t n)
{
    uint64_t (*r)[2] = malloc(sizeof *r * (s->count + 1u));
    if (!r)
        return 0;
    size_t k = 0;
    for (uint32_t i = 1; i <= dev->table_top && k < s->count; i++) {
        const struct vm_alloc *a = dev->table[i];
        if (!a || a->seg != s || a->where != VIDMM_WHERE_SEGMENT)
            continue;
        bool saved = false;
        for (size_t j = 0; j < n && !saved; j++)
            saved = it[j].a == a && it[j].act == ACT_SAVE;
        if (saved)
            continue;
        r[k][0] = a->offset;
        r[k][1] = a->offset + a->space;
        k++;
    }
    qsort(r, k, sizeof *r, by_offset);
    uint64_t at = from, total = 0;
    for (size_t i = 0; i <= k; i++) {
        const uint64_t end = i < k ? r[i][0] : s->size;
        if (end > at) {
            lose(s, at, end);
            total += end - at;
        }
        if (i < k && r[i][1] > at)
            at = r[i][1];
    }
    free(r);
    return total;
}

int vidmm_power_transition(vidmm_device *dev, struct vidmm_power_args *args)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_power_transition";
    if (!dev || !args || args->size_of < sizeof *args)
        return vidmm_refuse(call, !dev ? "dev" : "args", "NULL, or size_of too small", "wddm2.h");
    if (args->state < VIDMM_POWER_STANDBY || args->state > VIDMM_POWER_HYBRID_SLEEP)
        return vidmm_refuse(call, "state", "not STANDBY, HIBERNATE or HYBRID_SLEEP", "2.3");
    if (args->reserved)
        return vidmm_refuse(call, "reserved", "not 0", "wddm2.h");
    /* Hybrid sleep behaves as hibernate (spec 2.3). */
    const uint32_t state = args->state == VIDMM_POWER_STANDBY ? VIDMM_POWER_STANDBY : VIDMM_POWER_HIBERNATE;
    struct item *it = NULL;
    size_t n = 0;
    pthread_mutex_lock(&dev->mu);
    /* The GPU idle first, without waiting for it: paging queued for an allocation it still
     * uses would wait for a fence that the caller acting as the GPU cannot signal during the
     * call. Then the paging queued before the call (it no longer waits for the GPU, unless
     * another thread submitted meanwhile: then the check again says BUSY, or the drain times
     * out). Nothing has changed on either failure. */
    int err = gpu_idle(dev, call);
    if (!err)
        err = drain(dev);
    if (!err)
        err = gpu_idle(dev, call);
    /* What is in the segments to purge, and what becomes of it. */
    size_t cap = 0;
    for (uint32_t i = 0; !err && i < dev->nseg; i++)
        if (purged(&dev->seg[i], state))
            cap += dev->seg[i].count;
    if (!err && cap && (it = calloc(cap, sizeof *it)) == NULL)
        err = VIDMM_E_NO_MEMORY;
    for (uint32_t i = 1; !err && i <= dev->table_top && n < cap; i++) {
        struct vm_alloc *a = dev->table[i];
        if (!a || !a->seg || a->where != VIDMM_WHERE_SEGMENT)
            continue;
        const int how = purged(a->seg, state);
        if (!how)
            continue;
        const uint64_t lost = lost_from(a->seg, state);
        if (lost && a->offset + a->space <= lost)
            continue; /* wholly in the kept part (spec 2.2): its place and bytes stay, no paging */
        const bool kept = kept_in_place(dev, a);
        struct item *x = &it[n++];
        x->a = a;
        if (kept)
            /* Partially purged without an end: its bytes are the preserved part. With one, it
             * reaches beyond the end and is purged as in a purged segment. */
            x->act = how == 2 && !lost ? ACT_NONE : ACT_SAVE;
        else if (vm_offer_discardable(dev, a))
            x->act = ACT_DISCARD;
        else
            x->act = ACT_EVICT;
        /* Every store that will receive content is had before anything changes. */
        if (x->act == ACT_SAVE && (x->save = malloc((size_t)a->g->size)) == NULL) {
            err = VIDMM_E_NO_MEMORY;
            break;
        }
        if (x->act == ACT_EVICT && !a->has_backing) {
            if (vm_backing_ensure(dev, a) != 0) {
                err = VIDMM_E_NO_MEMORY;
                break;
            }
            x->committed = true;
        }
    }
    if (err) {
        for (size_t i = 0; i < n; i++) {
            if (it[i].committed)
                vm_backing_release(dev, it[i].a);
            free(it[i].save);
        }
        free(it);
        vm_unlock_and_page(dev);
        return err;
    }
    uint32_t evicted = 0, discarded = 0, restored = 0, repaged = 0;
    for (size_t i = 0; i < n; i++) {
        struct item *x = &it[i];
        struct vm_alloc *a = x->a;
        switch (x->act) {
        case ACT_DISCARD:
            vm_offer_discard(dev, a);
            discarded++;
            break;
        case ACT_SAVE:
            vm_w2_leaving(dev, a, false); /* WDDM2 hook: its place is about to lose its bytes */
            copy(dev, a, x->save, true);
            a->hold++; /* stays where it is until restored */
            break;
        case ACT_EVICT:
            if (vm_evict_one(dev, a, false, false) == 0) /* committed above: cannot fail */
                evicted++;
            a->hold++; /* looked at again after the drains: no destroy meanwhile */
            break;
        default:
            break;
        }
    }
    /* The power goes: once the queue has drained, the purged memory loses its bytes. */
    err = drain(dev);
    uint64_t bytes = 0;
    for (uint32_t i = 0; !err && i < dev->nseg; i++)
        if (purged(&dev->seg[i], state))
            bytes += overwrite(dev, &dev->seg[i], lost_from(&dev->seg[i], state), it, n);
    /* The power is back: what was kept in place is restored there. */
    for (size_t i = 0; i < n; i++) {
        struct item *x = &it[i];
        if (x->act != ACT_SAVE)
            continue;
        struct vm_alloc *a = x->a;
        if (!err) {
            copy(dev, a, x->save, false);
            restored++;
        }
        vm_w2_placed(dev, a); /* WDDM2 hook: entries valid again, after the restore (or as they were) */
        a->hold--;
    }
    /* WDDM2: the residency list is made resident before the device's work runs (spec 12). */
    for (size_t i = 0; i < n; i++) {
        struct vm_alloc *a = it[i].a;
        if (it[i].act != ACT_EVICT)
            continue;
        if (!err && dev->w2.on && a->w2_res_count && a->where != VIDMM_WHERE_SEGMENT &&
            a->where != VIDMM_WHERE_APERTURE && a->where != VIDMM_WHERE_DISK && a->swap == VM_SWAP_NONE &&
            vm_make_resident(dev, a, VM_USE_ANY | (a->lock_count ? VM_USE_APERTURE_ONLY : 0), false) == 0)
            repaged++;
        a->hold--;
    }
    if (dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* a destroy may wait for them */
    /* The save areas are read by the restores: freed once those have run (or, after a failure,
     * once nothing queued can still use them). */
    const int derr = drain(dev);
    if (!err)
        err = derr;
    for (size_t i = 0; i < n; i++)
        if (it[i].save && (dev->paging_done >= dev->paging_issued || dev->removed))
            free(it[i].save);
    if (!err) {
        args->evicted = evicted;
        args->discarded = discarded;
        args->restored = restored;
        args->repaged = repaged;
        args->purged_bytes = bytes;
        args->paging_fence = dev->paging_done;
        vidmm_log(VIDMM_LOG_DEBUG, "%s: %s: %u evicted, %u discarded, %u restored, %u paged back, %llu bytes purged",
                  call, args->state == VIDMM_POWER_STANDBY ? "standby" : "hibernate", evicted, discarded, restored,
                  repaged, (unsigned long long)bytes);
    }
    free(it);
    vm_unlock_and_page(dev);
    return err;
}
