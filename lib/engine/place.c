/* SPDX-License-Identifier: MIT */
/* lib/engine/place.c - placement (spec 15.3), eviction (15.4, 15.5), dirty tracking (15.6):
 * the decisions, and the paging operations that carry them out. Everything here runs under the
 * device mutex; the bytes move later, on the paging threads, in the order emitted. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

/* ---------------------------------------------------------------------------------------------
 * Where things are.
 * ------------------------------------------------------------------------------------------- */
static inline bool is_sysmem_backed(const struct vm_alloc *a)
{
    /* PermanentSysMem and Existing*SysMem keep their system-memory copy for life. */
    return (a->g->desc.flags & (VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_EXISTING_SYSMEM |
                                VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM)) != 0;
}

uint8_t *vm_content_ptr(vidmm_device *dev, struct vm_alloc *a)
{
    (void)dev;
    switch (a->where) {
    case VIDMM_WHERE_SEGMENT: return a->seg->cpu + a->offset;
    case VIDMM_WHERE_APERTURE:
    case VIDMM_WHERE_SYSMEM: return a->backing;
    default: return NULL;
    }
}

static struct vidmm_location seg_loc(const struct vm_segment *s, uint64_t off)
{
    struct vidmm_location l = { s->id, s->base_address + off };
    return l;
}

static const struct vidmm_location sys_loc = { 0, 0 };

static void pop_init(struct vm_pop *p, uint32_t type, struct vm_alloc *a)
{
    memset(p, 0, sizeof *p);
    p->op.type = type;
    p->a = a;
    if (a) {
        p->op.allocation = a->handle;
        p->op.driver_data = a->g->desc.driver_data;
        p->sync = (a->g->desc.flags & VIDMM_ALLOC_SYNCHRONOUS_PAGING) != 0;
    }
}

static void emit(vidmm_device *dev, struct vm_pop *p)
{
    uint64_t f = vm_emit(dev, p);
    if (p->a)
        p->a->paging_fence = f;
}

static void emit_transfer(vidmm_device *dev, struct vm_alloc *a, uint32_t type, struct vidmm_location src,
                          const void *sp, struct vidmm_location dst, void *dp, uint32_t flags)
{
    struct vm_pop p;
    pop_init(&p, type, a);
    /* One transfer for the whole allocation: TransferStart and TransferEnd together, offset 0
     * (spec 15.7: every known reading of TransferOffset / MdlOffset agrees then). */
    p.op.flags = flags | VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
    p.op.size = a->g->size;
    p.op.src = src;
    p.op.dst = dst;
    p.op.src_ptr = sp;
    p.op.dst_ptr = dp;
    p.swizzled_geometry = (flags & (VIDMM_TRANSFER_SWIZZLE | VIDMM_TRANSFER_UNSWIZZLE)) != 0;
    if (type == VIDMM_PAGING_SPECIAL_LOCK_TRANSFER) {
        p.op.swizzling_range_id = a->altva_range;
        p.op.swizzling_range_data = a->lock_flags;
    }
    emit(dev, &p);
    dev->st.bytes_paged_in += dst.segment_id ? a->g->size : 0;
    dev->st.bytes_paged_out += src.segment_id ? a->g->size : 0;
}

/* emit_map() maps or unmaps 'a''s backing pages at 'off' in aperture 's'. An unmap that
 * evicts or moves it runs only once the GPU is done with what was mapped there (the fences it
 * has now): until then the GPU may still read and write through those pages, and the next
 * allocation mapped at the same offset must not be seen in their place. A destroyed
 * allocation's unmap does not wait: the caller stopped using it (vidmm_alloc_destroy()). */
static void emit_map_ex(vidmm_device *dev, struct vm_alloc *a, struct vm_segment *s, uint64_t off, bool map,
                        bool wait_gpu);

static void emit_map(vidmm_device *dev, struct vm_alloc *a, struct vm_segment *s, uint64_t off, bool map)
{
    emit_map_ex(dev, a, s, off, map, !map);
}

static void emit_map_ex(vidmm_device *dev, struct vm_alloc *a, struct vm_segment *s, uint64_t off, bool map,
                        bool wait_gpu)
{
    struct vm_pop p;
    pop_init(&p, map ? VIDMM_PAGING_MAP_APERTURE_SEGMENT : VIDMM_PAGING_UNMAP_APERTURE_SEGMENT, a);
    p.op.size = a->g->size; /* the backing store's pages: what is mapped (pitch padding stays dummy) */
    p.op.dst = seg_loc(s, off);
    p.op.offset_in_pages = off / VIDMM_PAGE_SIZE;
    p.op.mdl_offset = 0;
    /* CacheCoherent only for cached pages mapped into a cache-coherent aperture (spec 15.9). */
    if (map && (a->g->desc.flags & VIDMM_ALLOC_CACHED) && (s->flags & VIDMM_SEGMENT_CACHE_COHERENT))
        p.op.flags = VIDMM_MAP_CACHE_COHERENT;
    p.seg = s;
    p.arena_off = a->backing_off;
    if (wait_gpu)
        p.gpu_fence = a->read_fence > a->write_fence ? a->read_fence : a->write_fence;
    /* Mapping needs no allocation state when it runs, and an UNMAP may be the last thing a
     * destroyed allocation leaves in the queue: the operation keeps only the handle. */
    p.a = NULL;
    p.sync = false;
    a->paging_fence = vm_emit(dev, &p);
}

/* ---------------------------------------------------------------------------------------------
 * Taking and giving back segment space.
 * ------------------------------------------------------------------------------------------- */
static uint64_t space_in(const struct vm_segment *s, const struct vm_alloc *a)
{
    if (s->flags & VIDMM_SEGMENT_PITCH_ALIGNMENT)
        return vm_round_up(a->g->desc.pitch_aligned_size, VIDMM_PAGE_SIZE);
    return a->g->size;
}

static void take_space(vidmm_device *dev, struct vm_alloc *a, struct vm_segment *s, uint64_t off, uint64_t len)
{
    vm_sysmem_unlist(dev, a); /* the list links serve the segment's list now */
    vmr_take(&s->space, off, len); /* found free by vmr_find, nodes reserved: cannot fail here */
    a->seg = s;
    a->offset = off;
    a->space = len;
    s->used += len;
    s->count++;
    if (s->aperture)
        dev->aperture_committed += len;
    a->lru = ++dev->clock; /* placing is a use: it joins its list at the tail */
    vm_res_link(s, a);     /* without memory for it: never a victim, still correct */
}

static void give_space(vidmm_device *dev, struct vm_alloc *a)
{
    struct vm_segment *s = a->seg;
    vm_watch_leave(dev, a); /* pages its locks left armed there (lock.c) */
    vmr_give(&s->space, a->offset, a->space);
    s->used -= a->space;
    s->count--;
    if (s->aperture)
        dev->aperture_committed -= a->space;
    vm_res_unlink(s, a);
    a->seg = NULL;
    a->offset = 0;
    a->space = 0;
}

void vm_unplace(vidmm_device *dev, struct vm_alloc *a)
{
    if (!a->seg)
        return;
    vm_w2_leaving(dev, a, true); /* WDDM2 hook: entries invalid before the place empties (gpuva.c) */
    if (a->where == VIDMM_WHERE_APERTURE)
        emit_map_ex(dev, a, a->seg, a->offset, false, false);
    give_space(dev, a);
    vm_set_where(dev, a, a->has_backing && a->backing_valid ? VIDMM_WHERE_SYSMEM : VIDMM_WHERE_NONE);
}

/* ---------------------------------------------------------------------------------------------
 * Eviction (spec 15.5).
 * ------------------------------------------------------------------------------------------- */

/* An eviction-set aperture with room for 'a', or NULL. */
static struct vm_segment *eviction_aperture(vidmm_device *dev, struct vm_alloc *a, uint64_t *off)
{
    uint32_t set = a->g->desc.eviction_set;
    for (uint32_t i = 0; i < dev->nseg; i++) {
        struct vm_segment *s = &dev->seg[i];
        if (!(set & (1u << i)) || !s->aperture)
            continue;
        uint64_t len = space_in(s, a);
        if (s->used + len > s->commit_limit ||
            (dev->aperture_commit_limit && dev->aperture_committed + len > dev->aperture_commit_limit))
            continue;
        /* The allocation's own alignment holds in an aperture too (a multiple of 64 KB when
         * the aperture has USE_64KB_PAGES: validated at creation). */
        const uint64_t align = a->g->desc.alignment > VIDMM_PAGE_SIZE ? a->g->desc.alignment : VIDMM_PAGE_SIZE;
        if (vmr_find(&s->space, 0, s->size, len, align, false, off))
            return s;
    }
    return NULL;
}

int vm_evict_one(vidmm_device *dev, struct vm_alloc *a, bool unswizzle, bool special)
{
    const bool swizzled = (a->g->desc.flags & VIDMM_ALLOC_SWIZZLED) != 0;
    if (a->where == VIDMM_WHERE_APERTURE) {
        /* The content already is the backing store: unmapping is the whole eviction. An
         * aperture copy of a swizzled allocation is tiled (state 2 of spec 8.2). */
        vm_w2_leaving(dev, a, true); /* WDDM2 hook: entries invalid before the unmap */
        emit_map(dev, a, a->seg, a->offset, false);
        give_space(dev, a);
        vm_set_where(dev, a, VIDMM_WHERE_SYSMEM);
        a->backing_valid = true;
        a->evicted_swizzled = swizzled; /* the pages the GPU used through the aperture: tiled */
        dev->st.evictions++;
        return 0;
    }
    if (a->where != VIDMM_WHERE_SEGMENT)
        return 0;
    vm_range_release_alloc(dev, a); /* ranges are released on eviction (spec 8.3) */
    int err = vm_backing_ensure(dev, a);
    if (err)
        return err;
    vm_w2_leaving(dev, a, true); /* WDDM2 hook: entries invalid before the transfer or discard */
    struct vm_segment *from = a->seg;
    const uint64_t from_off = a->offset;
    uint8_t *src = from->cpu + from_off;
    if (is_sysmem_backed(a) && !unswizzle && !special) {
        if (!a->dirty) {
            /* Clean: the system-memory copy is current; the segment copy is dropped. */
            struct vm_pop p;
            pop_init(&p, VIDMM_PAGING_DISCARD_CONTENT, a);
            p.op.size = a->g->size;
            p.op.dst = seg_loc(from, from_off);
            emit(dev, &p);
        } else {
            emit_transfer(dev, a, VIDMM_PAGING_TRANSFER, seg_loc(from, from_off), src, sys_loc, a->backing, 0);
        }
        give_space(dev, a);
        vm_set_where(dev, a, VIDMM_WHERE_SYSMEM);
        a->backing_valid = true;
        a->dirty = false;
        dev->st.evictions++;
        return 0;
    }
    uint64_t aoff = 0;
    struct vm_segment *ap = (unswizzle || special || a->g->desc.existing_memory) ? NULL
                                                                                  : eviction_aperture(dev, a, &aoff);
    uint32_t type = special ? VIDMM_PAGING_SPECIAL_LOCK_TRANSFER : VIDMM_PAGING_TRANSFER;
    uint32_t flags = (swizzled && unswizzle) ? VIDMM_TRANSFER_UNSWIZZLE : 0;
    give_space(dev, a);
    if (ap) {
        /* Through the eviction aperture: map the backing pages there, then copy into them. */
        take_space(dev, a, ap, aoff, space_in(ap, a));
        emit_map(dev, a, ap, aoff, true);
        emit_transfer(dev, a, type, seg_loc(from, from_off), src, seg_loc(ap, aoff), ap->cpu + aoff, flags);
        vm_set_where(dev, a, VIDMM_WHERE_APERTURE);
    } else {
        emit_transfer(dev, a, type, seg_loc(from, from_off), src, sys_loc, a->backing, flags);
        vm_set_where(dev, a, VIDMM_WHERE_SYSMEM);
    }
    a->evicted_swizzled = swizzled && !unswizzle;
    a->backing_valid = true;
    a->dirty = false;
    dev->st.evictions++;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Placement (spec 15.3) and making room (15.4).
 * ------------------------------------------------------------------------------------------- */
struct want {
    uint64_t len, align;
    uint64_t lo, hi;            /* window (Overlay / Capture: the top 20 %) */
    bool top_down;
};

static bool find_in(const struct vm_segment *s, const struct want *w, uint64_t lo, uint64_t hi, bool down,
                    uint64_t *off)
{
    if (lo < w->lo)
        lo = w->lo;
    if (hi > w->hi)
        hi = w->hi;
    return lo < hi && vmr_find(&s->space, lo, hi, w->len, w->align, down, off);
}

/* Banks first when this is the most preferred segment (spec 3.2), then the whole segment. */
static bool find_space(const struct vm_segment *s, const struct vm_alloc *a, const struct want *w, bool first_pref,
                       uint64_t *off)
{
    if (s->bank_count && first_pref) {
        uint32_t hb = a->g->desc.hinted_bank;
        for (int k = 0; k < 4; k++) {
            uint32_t bank = (hb >> (8 * k)) & 0x7F;
            bool down = (hb >> (8 * k + 7)) & 1;
            if (bank == 0)
                break;
            if (bank > s->bank_count)
                continue; /* a hint naming no bank of this segment is no hint */
            if (find_in(s, w, s->bank_start[bank - 1], s->bank_end[bank - 1], down, off))
                return true;
        }
    }
    return find_in(s, w, 0, s->size, w->top_down, off);
}

static bool aperture_commit_ok(const vidmm_device *dev, const struct vm_segment *s, uint64_t len)
{
    if (s->used + len > s->commit_limit)
        return false;
    return !dev->aperture_commit_limit || dev->aperture_committed + len <= dev->aperture_commit_limit;
}

/* Room for 'w' in 's': free space, and for an aperture the commit it would take. */
static bool fits(const vidmm_device *dev, const struct vm_segment *s, const struct vm_alloc *a, const struct want *w,
                 bool first_pref, uint64_t *off)
{
    if (s->aperture && !aperture_commit_ok(dev, s, w->len))
        return false;
    return find_space(s, a, w, first_pref, off);
}

static bool evictable(const vidmm_device *dev, const struct vm_alloc *a, const struct vm_alloc *placing)
{
    if (a == placing || a->pinned || a->lock_count || a->hold || a->converting)
        return false; /* converting (issue 16): a lock converts its bytes, mutex released */
    if (a->range >= 0 && dev->ranges[a->range].active)
        return false;
    if (a->w2_res_count && !vm_offer_discardable(dev, a))
        return false; /* WDDM2 hook: on the residency list, never a victim (spec 12, residency.c) -
                         unless offered: then it is discarded (offer hook, spec 15.20, offer.c) */
    return true;
}

static int by_offset(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* room_possible(): could evicting every allocation of 's' that may go make a hole for 'w'?
 * Those that may not - pinned, locked, held by a call, in a range lock, and with 'donot_wait'
 * the busy ones - stay where they are; a hole between them must hold the aligned length. Lets
 * make_room() refuse at once, before evicting anything, when no eviction could ever help
 * (issue 17: evicting everything first, then failing, moved content and queued paging for
 * nothing). '*pinned_block' says whether a pinned or locked allocation is among the blockers.
 * Without memory for the list it answers yes (the eviction loop then decides, as before). */
static bool room_possible(const vidmm_device *dev, const struct vm_segment *s, const struct vm_alloc *a,
                          const struct want *w, bool donot_wait, bool *pinned_block)
{
    *pinned_block = false;
    uint64_t (*r)[2] = malloc(sizeof *r * (s->count + 1u));
    if (!r)
        return true;
    size_t n = 0;
    for (uint32_t bi = 0; bi < s->nbuckets; bi++) {
        for (const struct vm_alloc *v = s->buckets[bi].head; v; v = v->res_next) {
            if (n == s->count)
                break;
            if (evictable(dev, v, a) && !(donot_wait && vm_busy(dev, v, false)))
                continue;
            *pinned_block |= v->pinned || v->lock_count;
            r[n][0] = v->offset;
            r[n][1] = v->offset + v->space;
            n++;
        }
    }
    qsort(r, n, sizeof *r, by_offset);
    bool ok = false;
    uint64_t at = w->lo;
    for (size_t i = 0; i <= n && !ok; i++) {
        const uint64_t end = i < n ? (r[i][0] < w->hi ? r[i][0] : w->hi) : w->hi;
        const uint64_t start = vm_round_up(at, w->align);
        ok = start <= end && end - start >= w->len;
        if (i < n && r[i][1] > at)
            at = r[i][1];
    }
    free(r);
    return ok;
}

/* make_room() evicts from 's' until 'w' fits, in the order of spec 15.4: lowest priority
 * first, least recently used first; allocations the GPU still uses (busy) only after every
 * idle one of priority below MAXIMUM, and MAXIMUM ("soft-pinned") last of all. Returns 0 with
 * '*off', or NO_VIDEO_MEMORY, CANT_EVICT_PINNED (pinned or locked allocations stand in the
 * way), BUSY (donot_wait and a busy one would have to go), NO_MEMORY. */
static int make_room(vidmm_device *dev, struct vm_segment *s, struct vm_alloc *a, const struct want *w,
                     bool first_pref, bool donot_wait, uint64_t *off)
{
    const uint64_t freeb = s->size - s->used;
    /* Hopeless requests evict nothing: larger than the window, or than what an aperture may
     * ever map (its CommitLimit, the adapter's ApertureSegmentCommitLimit). */
    if (w->hi - w->lo < w->len)
        return VIDMM_E_NO_VIDEO_MEMORY;
    if (s->aperture && (w->len > s->commit_limit ||
                        (dev->aperture_commit_limit && w->len > dev->aperture_commit_limit)))
        return VIDMM_E_NO_VIDEO_MEMORY;
    /* Bytes other apertures map count against the adapter's limit whatever leaves 's'. */
    if (s->aperture && dev->aperture_commit_limit &&
        dev->aperture_committed - s->used + s->pinned_bytes + w->len > dev->aperture_commit_limit)
        return VIDMM_E_NO_VIDEO_MEMORY;
    if (freeb + (s->used - s->pinned_bytes) < w->len)
        return s->pinned_bytes && freeb + s->used >= w->len ? VIDMM_E_CANT_EVICT_PINNED : VIDMM_E_NO_VIDEO_MEMORY;
    bool blocked = false;
    if (!room_possible(dev, s, a, w, false, &blocked))
        return blocked ? VIDMM_E_CANT_EVICT_PINNED : VIDMM_E_NO_VIDEO_MEMORY;
    if (donot_wait && !room_possible(dev, s, a, w, true, &blocked))
        return VIDMM_E_BUSY; /* only evicting allocations the GPU still uses would make room */
    /* Offer hook: offered allocations go first, LOW before NORMAL before HIGH, by
     * DISCARD_CONTENT rather than transfer (spec 15.20, offer.c). */
    for (struct vm_alloc *v; (v = vm_offer_victim(dev, s, a, donot_wait)) != NULL;) {
        vm_offer_discard(dev, v);
        if (fits(dev, s, a, w, first_pref, off))
            return 0;
    }
    blocked = false;
    for (int pass = 0; pass < 3; pass++) {
        for (uint32_t bi = 0; bi < s->nbuckets;) {
            const uint32_t prio = s->buckets[bi].prio;
            if ((prio >= VIDMM_PRIORITY_MAXIMUM) != (pass == 2)) {
                bi++;
                continue;
            }
            bool bucket_gone = false;
            for (struct vm_alloc *v = s->buckets[bi].head, *next; v; v = next) {
                next = v->res_next;
                if (!evictable(dev, v, a)) {
                    blocked |= v->pinned || v->lock_count; /* not the caller's own list */
                    continue;
                }
                const bool busy = vm_busy(dev, v, false);
                if ((pass == 0 && busy) || (pass == 1 && !busy))
                    continue;
                if (donot_wait && busy)
                    return VIDMM_E_BUSY;
                const uint32_t nb = s->nbuckets;
                int err = vm_evict_one(dev, v, false, false);
                if (err)
                    return err;
                if (fits(dev, s, a, w, first_pref, off))
                    return 0;
                if (s->nbuckets != nb) { /* v was the last of its bucket, which went */
                    bucket_gone = true;
                    break;
                }
            }
            if (!bucket_gone)
                bi++;
        }
    }
    return blocked ? VIDMM_E_CANT_EVICT_PINNED : VIDMM_E_NO_VIDEO_MEMORY;
}

/* Candidate segments in order: SegmentId0..4 (to the first 0), then the rest by ID. */
static uint32_t candidates(const vidmm_device *dev, const struct vm_alloc *a, uint32_t allowed, uint32_t *ids,
                           bool *down)
{
    uint32_t n = 0, seen = 0, pref = a->g->desc.preferred_segment;
    for (int k = 0; k < 5; k++) {
        uint32_t id = (pref >> (6 * k)) & 0x1F;
        if (id == 0)
            break;
        if (!(allowed & (1u << (id - 1))) || (seen & (1u << (id - 1))))
            continue;
        seen |= 1u << (id - 1);
        down[n] = (pref >> (6 * k + 5)) & 1;
        ids[n++] = id;
    }
    for (uint32_t id = 1; id <= dev->nseg; id++) {
        if ((allowed & (1u << (id - 1))) && !(seen & (1u << (id - 1)))) {
            down[n] = false;
            ids[n++] = id;
        }
    }
    return n;
}

/* Bring the content into memory segment 's' at 'off' from wherever it is. */
static void page_into_memory(vidmm_device *dev, struct vm_alloc *a, struct vm_segment *s, uint64_t off, uint64_t len)
{
    const bool swizzled = (a->g->desc.flags & VIDMM_ALLOC_SWIZZLED) != 0;
    uint32_t from = a->where;
    struct vm_segment *old = a->seg;
    uint64_t old_off = a->offset;
    if (old) {
        vm_w2_leaving(dev, a, false); /* WDDM2 hook: a move - entries invalid before the copy out */
        /* A move is an eviction and a page-in: its swizzling ranges (programmed for the old
         * segment) are released (spec 8.3). Not while a lock uses one: such an allocation
         * does not move (15.14). */
        if (!(a->range >= 0 && dev->ranges[a->range].active))
            vm_range_release_alloc(dev, a);
        give_space(dev, a);
    }
    take_space(dev, a, s, off, len);
    uint8_t *dst = s->cpu + off;
    if (from == VIDMM_WHERE_NONE && is_sysmem_backed(a) && a->has_backing) {
        /* PermanentSysMem's system-memory copy is committed now, at its first use (its space was
         * reserved by vm_make_resident()): it holds the pattern as the segment copy will. */
        if (a->g->desc.fill_pattern)
            vidmm_fill32(a->backing, a->g->desc.fill_pattern, (size_t)a->g->size, VIDMM_MEM_CACHED);
        a->backing_valid = true;
    }
    if (from == VIDMM_WHERE_NONE) {
        /* First page-in of content that does not exist yet: FILL (spec 15.8). */
        struct vm_pop p;
        pop_init(&p, VIDMM_PAGING_FILL, a);
        p.op.size = a->g->size;
        p.op.fill_pattern = a->g->desc.fill_pattern;
        p.op.dst = seg_loc(s, off);
        p.op.dst_ptr = dst;
        emit(dev, &p);
        dev->st.bytes_paged_in += a->g->size;
    } else if (from == VIDMM_WHERE_SYSMEM) {
        /* An unswizzled copy of a swizzled allocation is tiled on the way in (spec 8.2). */
        uint32_t flags = (swizzled && !a->evicted_swizzled) ? VIDMM_TRANSFER_SWIZZLE : 0;
        uint32_t type = a->altva ? VIDMM_PAGING_SPECIAL_LOCK_TRANSFER : VIDMM_PAGING_TRANSFER;
        emit_transfer(dev, a, type, sys_loc, a->backing, seg_loc(s, off), dst, flags);
        if (a->altva && a->lock_count == 0) {
            /* Paged in after being evicted while alternately mapped: the VA goes (spec 8.4). */
            vmos_view_unmap(a->altva, a->altva_len);
            a->altva = NULL;
        }
    } else {
        /* From another segment (an aperture: then unmap it afterwards). */
        emit_transfer(dev, a, VIDMM_PAGING_TRANSFER, seg_loc(old, old_off), old->cpu + old_off, seg_loc(s, off), dst, 0);
        if (from == VIDMM_WHERE_APERTURE)
            emit_map(dev, a, old, old_off, false);
    }
    vm_set_where(dev, a, VIDMM_WHERE_SEGMENT);
    a->evicted_swizzled = false;
    a->dirty = false; /* a fresh copy */
    if (!is_sysmem_backed(a))
        a->backing_valid = false;
}

/* Map the backing store into aperture 's' at 'off'. */
static int page_into_aperture(vidmm_device *dev, struct vm_alloc *a, struct vm_segment *s, uint64_t off, uint64_t len)
{
    int err = vm_backing_ensure(dev, a);
    if (err)
        return err;
    uint32_t from = a->where;
    struct vm_segment *old = a->seg;
    uint64_t old_off = a->offset;
    if (from == VIDMM_WHERE_NONE && a->g->desc.fill_pattern) {
        /* Fill never targets an aperture (spec 9.3): the engine sets the pages itself. */
        vidmm_fill32(a->backing, a->g->desc.fill_pattern, (size_t)a->g->size, VIDMM_MEM_CACHED);
    }
    if (old) {
        vm_w2_leaving(dev, a, false); /* WDDM2 hook: a move - entries invalid before the copy out */
        if (!(a->range >= 0 && dev->ranges[a->range].active))
            vm_range_release_alloc(dev, a); /* as page_into_memory() */
        give_space(dev, a);
    }
    take_space(dev, a, s, off, len);
    emit_map(dev, a, s, off, true);
    if (from == VIDMM_WHERE_SEGMENT) {
        emit_transfer(dev, a, VIDMM_PAGING_TRANSFER, seg_loc(old, old_off), old->cpu + old_off, seg_loc(s, off),
                      s->cpu + off, 0);
        a->dirty = false;
    } else if (from == VIDMM_WHERE_APERTURE) {
        emit_map(dev, a, old, old_off, false);
    }
    vm_set_where(dev, a, VIDMM_WHERE_APERTURE);
    a->backing_valid = true;
    /* What the GPU sees through the aperture is the backing store's pages, in the tiled order
     * (placeable_in() keeps unswizzled copies out): evicting it later only unmaps them, and the
     * copy left behind is a swizzled one (spec 8.2). */
    a->evicted_swizzled = (a->g->desc.flags & VIDMM_ALLOC_SWIZZLED) != 0;
    return 0;
}

static bool placeable_in(const struct vm_alloc *a, const struct vm_segment *s)
{
    if (!s->aperture)
        return true;
    /* Caller memory cannot be mapped into an aperture window; an unswizzled copy of a swizzled
     * allocation cannot be used through one (spec 8.2: it goes to a memory segment). */
    if (a->g->desc.existing_memory)
        return false;
    if ((a->g->desc.flags & VIDMM_ALLOC_SWIZZLED) && a->where == VIDMM_WHERE_SYSMEM && !a->evicted_swizzled)
        return false;
    return true;
}

static void want_for(const struct vm_segment *s, const struct vm_alloc *a, bool down, struct want *w)
{
    w->len = space_in(s, a);
    w->align = a->g->desc.alignment > VIDMM_PAGE_SIZE ? a->g->desc.alignment : VIDMM_PAGE_SIZE;
    w->lo = 0;
    w->hi = s->size;
    if (a->g->desc.flags & (VIDMM_ALLOC_OVERLAY | VIDMM_ALLOC_CAPTURE)) {
        /* Pinned overlays and captures live in the last 20 % of a segment (spec 4.1). */
        w->lo = vm_round_up(s->size - s->size / 5, VIDMM_PAGE_SIZE);
    }
    w->top_down = down || (a->g->desc.flags & VIDMM_ALLOC_FROM_END_OF_SEGMENT);
}

static uint32_t allowed_set(const vidmm_device *dev, const struct vm_alloc *a, unsigned use)
{
    const struct vidmm_alloc_desc *d = &a->g->desc;
    uint32_t set = 0;
    if ((use & VM_USE_ANY) == VM_USE_ANY)
        set = d->supported_read_set | d->supported_write_set;
    else if (use & VM_USE_WRITE)
        set = d->supported_write_set;
    else
        set = d->supported_read_set;
    /* A pinned allocation never moves once placed (spec 10, 15.4): it goes where both reads and
     * writes may use it, if such a segment exists, so that no later reference must move it. */
    const uint32_t both = d->supported_read_set & d->supported_write_set;
    if (a->pinned && a->where != VIDMM_WHERE_SEGMENT && a->where != VIDMM_WHERE_APERTURE && (set & both))
        set &= both;
    uint32_t mem = 0, vis = 0;
    for (uint32_t i = 0; i < dev->nseg; i++) {
        if (!dev->seg[i].aperture)
            mem |= 1u << i;
        if (!dev->seg[i].aperture && (dev->seg[i].flags & VIDMM_SEGMENT_CPU_VISIBLE))
            vis |= 1u << i;
    }
    if (use & VM_USE_MEMORY_ONLY)
        set &= mem;
    if (use & VM_USE_APERTURE_ONLY)
        set &= ~mem;
    if ((use & VM_USE_CPU_VISIBLE) && (set & vis))
        set &= vis; /* a preference: CPU-visible memory segments when the set has one */
    return set;
}

static int place(vidmm_device *dev, struct vm_alloc *a, const uint32_t *ids, const bool *down, uint32_t n,
                 bool donot_wait);

int vm_make_resident(vidmm_device *dev, struct vm_alloc *a, unsigned use, bool donot_wait)
{
    if (a->where == VIDMM_WHERE_DISK)
        return VIDMM_E_BUSY; /* callers read it back from the disk tier first (vm_swap_in) */
    uint32_t allowed = allowed_set(dev, a, use);
    const bool placed = a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE;
    if (placed && (allowed & (1u << (a->seg->id - 1)))) {
        vm_touch(dev, a);
        return 0; /* already where it may be used */
    }
    if (placed && a->pinned)
        return VIDMM_E_CANT_EVICT_PINNED; /* pinned never moves (spec 10, 15.4) */
    if (dev->w2.on && a->lock_count) {
        /* WDDM2 hook (spec 6.6, 15.23, lock2.c): a locked allocation's CPU pointer stays valid.
         * Placed, it does not move; not placed, its pointer is the backing store, so only an
         * aperture segment may take it (mapping, not copying, those pages): it is never
         * committed to a memory segment while the lock lasts. */
        if (placed)
            return VIDMM_E_BUSY;
        uint32_t apertures = 0;
        for (uint32_t i = 0; i < dev->nseg; i++)
            apertures |= dev->seg[i].aperture ? 1u << i : 0u;
        allowed &= apertures;
    }
    /* Anything from here on pages it, and paging a busy allocation waits for the GPU first
     * (ALLOCATION_BUSY, or SynchronousPaging): a caller that asked not to wait is told so now,
     * before anything changed. */
    if (donot_wait && vm_busy(dev, a, false))
        return VIDMM_E_BUSY;
    uint32_t ids[VIDMM_MAX_SEGMENTS];
    bool down[VIDMM_MAX_SEGMENTS];
    uint32_t n = candidates(dev, a, allowed, ids, down);
    if (n == 0)
        return VIDMM_E_NO_VIDEO_MEMORY;
    bool reserved = false;
    if (a->where == VIDMM_WHERE_NONE && is_sysmem_backed(a) && !a->has_backing) {
        /* Its system-memory copy is needed from the first placement on: reserve it before any
         * decision (and give it back if the placement fails). */
        int e = vm_backing_ensure(dev, a);
        if (e)
            return e;
        reserved = true;
    }
    int err = place(dev, a, ids, down, n, donot_wait);
    if (err && reserved && a->where == VIDMM_WHERE_NONE)
        vm_backing_release(dev, a);
    return err;
}

/* place(): the placement itself, in the candidates' order (vm_make_resident()). */
static int place(vidmm_device *dev, struct vm_alloc *a, const uint32_t *ids, const bool *down, uint32_t n,
                 bool donot_wait)
{
    const uint32_t first_pref = a->g->desc.preferred_segment & 0x1F;
    int err = VIDMM_E_NO_VIDEO_MEMORY;
    /* Two passes: free space in any candidate first, then room made by eviction, in the
     * candidates' order. */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < n; i++) {
            struct vm_segment *s = &dev->seg[ids[i] - 1];
            if (!placeable_in(a, s))
                continue;
            struct want w;
            want_for(s, a, down[i], &w);
            bool first = ids[i] == first_pref;
            uint64_t off;
            if (s->aperture) {
                if (pass == 0 && !fits(dev, s, a, &w, first, &off))
                    continue;
                if (pass == 1) {
                    int e = make_room(dev, s, a, &w, first, donot_wait, &off);
                    if (e) {
                        if (e != VIDMM_E_NO_VIDEO_MEMORY)
                            err = e;
                        continue;
                    }
                }
                err = page_into_aperture(dev, a, s, off, w.len);
            } else {
                if (pass == 0 && !find_space(s, a, &w, first, &off))
                    continue;
                if (pass == 1) {
                    int e = make_room(dev, s, a, &w, first, donot_wait, &off);
                    if (e) {
                        if (e != VIDMM_E_NO_VIDEO_MEMORY)
                            err = e;
                        continue;
                    }
                }
                page_into_memory(dev, a, s, off, w.len);
                err = 0;
            }
            if (err == 0)
                vm_touch(dev, a);
            return err;
        }
    }
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Public: explicit make-resident and eviction.
 * ------------------------------------------------------------------------------------------- */
int vidmm_evict(vidmm_device *dev, const vidmm_handle *handles, uint32_t count)
{
    VM_DEV_CHECK(dev);
    if (!dev || !handles || count == 0)
        return vidmm_refuse(__func__, !dev ? "dev" : !handles ? "handles" : "count", "NULL, or count 0", "device.h");
#ifdef VIDMM_BENCH_SELFTEST_SLOWDOWN
    /* tools/bench_gate.sh --selftest only (bench/gate/CMakeLists.txt): ~3% more instructions. */
    for (volatile unsigned spin = 0; spin < 800; spin++) {
    }
#endif
    pthread_mutex_lock(&dev->mu);
    int err = vm_check_handles(dev, handles, count);
    uint64_t last = 0;
    for (uint32_t i = 0; !err && i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, handles[i]);
        if (a->pinned)
            err = VIDMM_E_CANT_EVICT_PINNED;
        else if (a->lock_count || a->hold || (a->range >= 0 && dev->ranges[a->range].active) ||
                 vm_busy(dev, a, false))
            err = VIDMM_E_BUSY; /* locked, being placed or locked by another call, or GPU-busy */
        else if (vm_offer_discardable(dev, a))
            vm_offer_discard(dev, a); /* offer hook: offered content is discarded, not paged out (offer.c) */
        else
            err = vm_evict_one(dev, a, false, false);
        if (a->paging_fence > last)
            last = a->paging_fence;
    }
    vm_unlock_and_page(dev);
    if (last) {
        int e = vm_wait_paging(dev, last);
        if (!err)
            err = e;
    }
    return err;
}
