/* SPDX-License-Identifier: MIT */
/* lib/engine/submit.c - submissions with allocation lists (spec 4.5, 15.13, 15.17, 15.18,
 * 15.24, 15.25), explicit make-resident, the GPU's view of an allocation, cache maintenance. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

#define VM_MAX_REFS 65536u

static bool has_aperture(const vidmm_device *dev, uint32_t set)
{
    for (uint32_t i = 0; i < dev->nseg; i++)
        if ((set & (1u << i)) && dev->seg[i].aperture)
            return true;
    return false;
}

static bool noncoherent(const struct vm_alloc *a)
{
    /* Memory segments and AGP do not snoop CPU caches; CacheCoherent apertures do. */
    return a->seg && !(a->seg->flags & VIDMM_SEGMENT_CACHE_COHERENT);
}

static void cache_flush(vidmm_device *dev, void *p, size_t n)
{
    const uint64_t t0 = n >= VM_MOVE_TIMED_MIN ? vm_now_ns() : 0;
    if (dev->drv.flush_cpu_cache)
        dev->drv.flush_cpu_cache(dev->drv.arg, p, n);
    else
        vidmm_flush(p, n, VIDMM_FLUSH_WRITEBACK);
    if (t0)
        vm_note_move(dev, 1, vm_now_ns() - t0, n); /* what tracking would save (lock.c) */
    dev->st.cache_flushes++;
}

/* flush_pages() flushes the pages set in 'bits' of the 'npages' at 'p', a run of pages per
 * call, counted as one flush. */
static void flush_pages(vidmm_device *dev, uint8_t *p, const uint64_t *bits, size_t npages)
{
    const uint64_t t0 = npages * VIDMM_PAGE_SIZE >= VM_MOVE_TIMED_MIN ? vm_now_ns() : 0;
    size_t flushed = 0;
    for (size_t i = 0; i < npages;) {
        if (!(bits[i / 64] >> (i % 64) & 1)) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < npages && (bits[j / 64] >> (j % 64) & 1))
            j++;
        if (dev->drv.flush_cpu_cache)
            dev->drv.flush_cpu_cache(dev->drv.arg, p + i * VIDMM_PAGE_SIZE, (j - i) * VIDMM_PAGE_SIZE);
        else
            vidmm_flush(p + i * VIDMM_PAGE_SIZE, (j - i) * VIDMM_PAGE_SIZE, VIDMM_FLUSH_WRITEBACK);
        flushed += j - i;
        i = j;
    }
    if (t0)
        vm_note_move(dev, 1, vm_now_ns() - t0, (uint64_t)flushed * VIDMM_PAGE_SIZE);
    dev->st.cache_flushes++;
}

void vm_cache_gpu_use(vidmm_device *dev, struct vm_alloc *a, bool write)
{
    if (!(a->g->desc.flags & VIDMM_ALLOC_CACHED) || !noncoherent(a))
        return;
    if (write && a->wt_left != NULL) {
        /* The GPU writes it: pages its locks left armed (lock.c: only Cached allocations in
         * memory that does not snoop are tracked so) would take a fault each. Lifted - but
         * not under a tracked lock still open (vidmm_submit() refuses a write of a locked
         * allocation; the WDDM2 path, gpuva.c, is not checked here): its tracking would lose
         * what the CPU writes after; its end lifts instead - and from now on its locks' ends
         * lift (lock.c watch_end()). */
        if (a->wt == NULL)
            vm_watch_leave(dev, a);
        a->wt_lift = true;
    }
    if (a->cpu_wrote || a->wt != NULL) {
        /* CPU writes reach the GPU: the pages watched locks found written, or all of it - also
         * when a watched lock is still open (rendering with a locked allocation, spec 15.17):
         * what it wrote is not known until it ends. */
        if (a->cpu_partial && a->wt == NULL)
            flush_pages(dev, vm_content_ptr(dev, a), a->cpu_dirty, (size_t)(a->g->size / VIDMM_PAGE_SIZE));
        else
            cache_flush(dev, vm_content_ptr(dev, a), (size_t)a->g->size);
        a->cpu_wrote = false;
        a->cpu_partial = false;
    }
    if (write)
        a->gpu_wrote = true; /* invalidated before the CPU next reads it (lock.c, lock2.c) */
}

static void fill_residency(const struct vm_alloc *a, struct vidmm_residency *r)
{
    memset(r, 0, sizeof *r);
    if (!a->seg)
        return;
    r->segment_id = a->seg->id;
    r->offset = a->offset;
    r->gpu_address = a->seg->base_address + a->offset;
    r->cpu = a->seg->cpu + a->offset;
}

/* Check a list: handles, flags, instance order (spec 15.18). Nothing changes. */
static int check_refs(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count)
{
    uint32_t tag = ++dev->tag;
    for (uint32_t i = 0; i < count; i++) {
        if (refs[i].flags & ~(VIDMM_REF_WRITE | VIDMM_REF_DO_NOT_RETIRE | VIDMM_REF_OFFER_PRIORITY_MASK))
            return vidmm_refuse("vidmm_submit", "refs[].flags", "unknown bits", "4.5");
        const struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        if (!a)
            return vm_refuse_handle("vidmm_submit", refs[i].allocation);
        /* Offer hook: an offered allocation is reclaimed before use (spec 15.20, offer.c). */
        if (a->offer_prio && vm_offer_refuse_use(a, "vidmm_submit"))
            return VIDMM_E_INVALID_ARG;
        /* Offer hook: OfferPriority, an offer after this submission (spec 11, offer.c). */
        if ((refs[i].flags & VIDMM_REF_OFFER_PRIORITY_MASK) &&
            vm_offer_check_list(dev, a, refs[i].flags >> VIDMM_REF_OFFER_PRIORITY_SHIFT, "vidmm_submit"))
            return VIDMM_E_INVALID_ARG;
    }
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        struct vm_group *g = a->g;
        if (g->tag != tag) {
            g->tag = tag;
            g->seen_seq = a->seq;
        } else if (a->seq < g->seen_seq) {
            return VIDMM_E_INVALID_INSTANCE; /* an older instance after a newer one */
        } else {
            g->seen_seq = a->seq;
        }
    }
    return 0;
}

/* Bring back from the disk tier every listed allocation that is there; with 'donot_wait'
 * start the reads and say BUSY. The mutex is released while waiting: the caller checks the
 * list again afterwards. Returns 0 when nothing had to be read. */
static int swap_in_refs(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count, bool donot_wait,
                        bool *waited)
{
    struct vm_alloc *as[VM_SWAP_BATCH];
    uint32_t n = 0;
    *waited = false;
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        if (a->where != VIDMM_WHERE_DISK && a->swap == VM_SWAP_NONE)
            continue;
        as[n++] = a;
        if (n == VM_SWAP_BATCH || i + 1 == count) {
            int err = vm_swap_in(dev, as, n, !donot_wait, NULL);
            *waited = true;
            if (err)
                return err;
            n = 0;
        }
    }
    if (n) {
        *waited = true;
        return vm_swap_in(dev, as, n, !donot_wait, NULL);
    }
    return 0;
}

/* hold()/release(): the listed allocations are no victims while a call places them, waits for
 * their paging and issues its fence - neither for each other nor for other threads. */
static void hold(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count, int d)
{
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        if (a)
            a->hold += (uint32_t)d;
    }
    if (d < 0 && dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* a destroy is waiting for them */
}

/* wait_paged() waits until the paging of every listed (held) allocation is done. Waiting
 * releases the mutex, and another thread's submission may move one of them meanwhile (held, so
 * never evicted, but a write reference moves it into its write set): it waits again then. */
static int wait_paged(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count, bool donot_wait)
{
    for (;;) {
        uint64_t last = 0;
        for (uint32_t i = 0; i < count; i++) {
            const struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
            if (a->paging_fence > last)
                last = a->paging_fence;
        }
        if (last <= dev->paging_done)
            return 0;
        int err = donot_wait ? vm_wait_paging_nowait(dev, last) : vm_wait_paging_locked(dev, last);
        if (err)
            return err;
    }
}

/* Place one listed allocation (held by the caller). */
static int place_ref(vidmm_device *dev, struct vm_alloc *a, bool donot_wait, bool any_set)
{
    const bool write = a->sub_write;
    /* A submission's reference reads or writes; a make-resident may use either set. */
    unsigned use = any_set ? VM_USE_ANY : write ? VM_USE_WRITE : VM_USE_READ;
    if (a->lock_count) {
        /* Rendering with a locked allocation (spec 6.4, 15.17). Its CPU pointer must stay
         * valid: content in the backing store may only be used through an aperture; content
         * in a CPU-visible memory segment stays where the pointer is, if the allocation could
         * have gone to an aperture (see the note in README). */
        uint32_t set = any_set ? a->g->supported : write ? a->g->desc.supported_write_set
                                                         : a->g->desc.supported_read_set;
        if (!has_aperture(dev, set))
            return VIDMM_E_CANT_RENDER_LOCKED;
        if (a->where == VIDMM_WHERE_SEGMENT) {
            vm_touch(dev, a);
            return 0;
        }
        use |= VM_USE_APERTURE_ONLY;
    }
    return vm_make_resident(dev, a, use, donot_wait);
}

/* wait_sync_paging(): no submission is issued before the last paging operation of a
 * SynchronousPaging allocation has completed (spec 4.1, 15.25: "waits for that paging op to
 * complete before letting the driver submit a non-paging DMA buffer"). That operation first
 * waits for its allocation to be idle: with DONOT_WAIT and that allocation busy, VIDMM_E_BUSY. */
static int wait_sync_paging(vidmm_device *dev, bool donot_wait)
{
    while (dev->sync_paging_fence > dev->paging_done) {
        const struct vm_alloc *s = vm_lookup(dev, dev->sync_paging_handle);
        if (donot_wait && s && vm_busy(dev, s, false))
            return VIDMM_E_BUSY;
        int err = donot_wait ? vm_wait_paging_nowait(dev, dev->sync_paging_fence)
                             : vm_wait_paging_locked(dev, dev->sync_paging_fence);
        if (err)
            return err;
    }
    return 0;
}

/* Larger allocations first (then list order): the order the retry of place_all() uses. */
static int by_size_desc(const void *x, const void *y)
{
    const struct vm_alloc *a = *(struct vm_alloc *const *)x, *b = *(struct vm_alloc *const *)y;
    if (a->g->size != b->g->size)
        return a->g->size > b->g->size ? -1 : 1;
    return a->sub_count < b->sub_count ? -1 : a->sub_count > b->sub_count;
}

/* Place every listed allocation (held by the caller). When that fails for want of room, the
 * list's own placements may be what fragments the segments (alignment, top-down preferences,
 * the order of the list): every listed allocation that can move without waiting (placed,
 * idle, unlocked, unpinned) is evicted and the list placed again, largest first, before the
 * submission gives up (spec 15.4: "if nothing can make room"). */
static int place_all(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count, bool donot_wait,
                     bool any_set, uint64_t *last_paging)
{
    /* An allocation listed twice is one reference, a write if either is. */
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        a->sub_write = false;
        a->sub_count = UINT32_MAX; /* first position in the list, set below */
    }
    uint32_t unique = 0;
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        a->sub_write |= (refs[i].flags & VIDMM_REF_WRITE) != 0;
        if (a->sub_count == UINT32_MAX)
            a->sub_count = unique++;
    }
    int err = 0;
    for (uint32_t i = 0; i < count && !err; i++)
        err = place_ref(dev, vm_lookup(dev, refs[i].allocation), donot_wait, any_set);
    if (err == VIDMM_E_NO_VIDEO_MEMORY && unique > 1) {
        struct vm_alloc **order = malloc(sizeof *order * unique);
        if (order) {
            bool moved = false;
            for (uint32_t i = 0; i < count; i++) {
                struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
                order[a->sub_count] = a; /* a duplicate writes the same entry again */
            }
            for (uint32_t k = 0; k < unique; k++) {
                struct vm_alloc *a = order[k];
                if ((a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE) && !a->pinned &&
                    !a->lock_count && !vm_busy(dev, a, false) &&
                    !(a->range >= 0 && dev->ranges[a->range].active) && vm_evict_one(dev, a, false, false) == 0)
                    moved = true;
            }
            if (moved) {
                qsort(order, unique, sizeof *order, by_size_desc);
                err = 0;
                for (uint32_t k = 0; k < unique && !err; k++)
                    err = place_ref(dev, order[k], donot_wait, any_set);
            }
            free(order);
        }
    }
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        if (a->paging_fence > *last_paging)
            *last_paging = a->paging_fence;
    }
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * The resident list: a submission or make-resident whose every listed allocation is already
 * where its reference may use it - an emulator's frame, submitted again and again.
 *
 * For such a list the general path below does nothing but bookkeeping, in nine walks of the
 * list that each look every handle up again and touch several lines of each allocation:
 * check_refs() (two), vm_wait_converting(), swap_in_refs(), hold() (two), place_all() (four:
 * the duplicates' scratch, then vm_make_resident() of each, which finds it placed and touches
 * it), wait_paged(), the check after the waits, and the fence walk. list_resident() proves in
 * one read-mostly walk that the list is such a list, with the allocations' lines prefetched
 * ahead, and the call then does the general path's bookkeeping in one more walk; any other
 * list - also one that fails a check - goes the general way from the start, so every error,
 * its precedence and "a refused call changes nothing" stay the general path's own (as
 * residency.c collect_resident() does for the WDDM2 MakeResident).
 * tests/engine/test_conf_resident_lists.c compares the two paths on twin devices.
 *
 * Callgrind, 4096 allocations of 4 KiB resident in one memory segment, per allocation:
 * vidmm_submit() 480 -> 140 instructions, vidmm_make_resident() 358 -> 123 (the WDDM2
 * MakeResident's fast path: 94). Wall time, build/tests/bench_wddm2_residency 21 (make-resident,
 * resident, warm; three runs alternating with the general path's build): 4096 allocations
 * 395-670 -> 122-221 us (the WDDM2 call 42-93 us in the same runs: 2.4-2.9 times it, from
 * 7-9 times), 64 allocations 2.5-5.4 -> 0.84-1.9 us, one 0.09-0.24 -> 0.05-0.13 us.
 * ------------------------------------------------------------------------------------------- */

/* entry_placed(): listed allocation 'a' is placed (memory segment or aperture), not on the disk
 * tier nor being written there, not offered, its paging done, not locked. For such an
 * allocation the general path's checks pass (check_refs(): known, not offered; swap_in_refs():
 * nothing to read back; wait_paged(): nothing to wait for); a locked one goes the general way,
 * as place_ref() checks its set for an aperture and may refuse it. */
static inline bool entry_placed(const vidmm_device *dev, const struct vm_alloc *a)
{
    return (a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE) && a->swap == VM_SWAP_NONE &&
           !a->offer_prio && a->paging_fence <= dev->paging_done && !a->lock_count;
}

/* entry_instance_ok(): check_refs()' rename-instance order (spec 15.18) for the next entry,
 * 'a', of the walk tagged 'tag': false when an older instance of its allocation follows a
 * newer one. Writes the same scratch as check_refs() (vm_group.tag, seen_seq). */
static inline bool entry_instance_ok(const struct vm_alloc *a, uint32_t tag)
{
    struct vm_group *g = a->g;
    if (g->tag != tag) {
        g->tag = tag;
    } else if (a->seq < g->seen_seq) {
        return false;
    }
    g->seen_seq = a->seq;
    return true;
}

/* lookup(): vm_lookup() with the handle table and its top passed in, so that a walk keeps them
 * in registers (the stores to the groups' scratch could alias the device, and the compiler
 * would load both again for every entry). */
static inline struct vm_alloc *lookup(struct vm_alloc *const *table, uint32_t top, vidmm_handle h)
{
    const uint32_t i = h & VM_HANDLE_INDEX_MASK;
    if (i == 0 || i > top)
        return NULL;
    struct vm_alloc *a = table[i];
    return a && a->handle == h ? a : NULL;
}

/* list_prefetch() asks for the lines list_resident() reads of the allocation 'h' names (if the
 * table holds one at its index) - its hot line and the next, where lock_count, g, seq and the
 * fences are (engine.h) - and with 'group' for those of its group: the segment sets and flags,
 * and the instance-order scratch (the group's address is in the allocation's second line,
 * asked for earlier). */
static inline void list_prefetch(struct vm_alloc *const *table, uint32_t top, vidmm_handle h, bool group)
{
    const uint32_t k = h & VM_HANDLE_INDEX_MASK;
    const struct vm_alloc *a = k != 0 && k <= top ? table[k] : NULL;
    if (!a)
        return;
    if (group) {
        VIDMM_PREFETCH_W(&a->g->desc.supported_read_set);
        VIDMM_PREFETCH_W(&a->g->seen_seq);
    } else {
        VIDMM_PREFETCH_W(a);
        VIDMM_PREFETCH_W(&a->hold);
    }
}

/* list_prefetch() asks for two lines of an allocation: everything list_resident() and the walk
 * after it read of it must be in them (engine.h). */
_Static_assert(offsetof(struct vm_alloc, hold) == 64 && offsetof(struct vm_alloc, lock_count) < 128 &&
                   offsetof(struct vm_alloc, g) < 128 && offsetof(struct vm_alloc, read_fence) < 128 &&
                   offsetof(struct vm_alloc, write_fence) < 128 && offsetof(struct vm_alloc, seq) < 128 &&
                   offsetof(struct vm_alloc, dirty) < 128,
               "struct vm_alloc: a resident list's fields are not in its first two lines");

/* How many entries ahead list_resident() prefetches an allocation's lines, and half that its
 * group's. */
#define LIST_PREFETCH_AHEAD 16u

/* list_resident() tells whether the list - 'refs', or with 'refs' NULL the make-resident list
 * 'handles' (no flags: the read and the write set both allowed) - is a resident list (see
 * above), and the device in a state in which the general path would neither wait nor fail:
 * not removed, no lock or unlock converting bytes with the mutex released
 * (vm_wait_converting()), for a submission no SynchronousPaging operation pending
 * (wait_sync_paging()). Every entry is placed (entry_placed()) in a segment of the set its use
 * allows (place.c allowed_set(): the read or the write set for a reference, both for a
 * make-resident; its pinned rule is for allocations not placed), so that place_ref() and
 * vm_make_resident() would only touch it, and rename instances come in order. An allocation
 * listed twice, read and written, is one write reference to place_all() (its write set): this
 * asks the read set of the read entry too, which can only send a list the general way that
 * need not go. Changes nothing but check_refs()' scratch (the device's tag and the groups').
 * Mutex held. Inlined into each caller, where 'refs' or 'handles' is NULL: one walk each. */
static VIDMM_FORCEINLINE bool list_resident(vidmm_device *dev, const struct vidmm_alloc_ref *refs,
                                            const vidmm_handle *handles, uint32_t count)
{
    if (dev->removed || dev->converting || (refs && dev->sync_paging_fence > dev->paging_done))
        return false;
    struct vm_alloc *const *const table = dev->table;
    const uint32_t top = dev->table_top;
    const uint32_t tag = ++dev->tag;
#define LIST_HANDLE(k) (refs ? refs[k].allocation : handles[k])
    for (uint32_t i = 0; i < count; i++) {
        if (i + LIST_PREFETCH_AHEAD < count)
            list_prefetch(table, top, LIST_HANDLE(i + LIST_PREFETCH_AHEAD), false);
        if (i + LIST_PREFETCH_AHEAD / 2 < count)
            list_prefetch(table, top, LIST_HANDLE(i + LIST_PREFETCH_AHEAD / 2), true);
        const uint32_t f = refs ? refs[i].flags : 0;
        /* An OfferPriority offers the allocation: the general way (vm_offer_check_list(),
         * vm_offer_after_submit()). Unknown bits are refused there. */
        if (f & ~(VIDMM_REF_WRITE | VIDMM_REF_DO_NOT_RETIRE))
            return false;
        const struct vm_alloc *a = lookup(table, top, LIST_HANDLE(i));
        if (!a || !entry_placed(dev, a))
            return false;
        const struct vidmm_alloc_desc *d = &a->g->desc;
        const uint32_t set = !refs ? d->supported_read_set | d->supported_write_set
                             : (f & VIDMM_REF_WRITE) ? d->supported_write_set
                                                     : d->supported_read_set;
        if (!(set & (1u << (a->seg->id - 1))) || !entry_instance_ok(a, tag))
            return false;
    }
#undef LIST_HANDLE
    return true;
}

/* touch_listed(): vm_touch() of the placed allocation 'a', the bucket looked up once per run of
 * entries in one segment and priority ('*bs', '*bprio', '*b' carry it from the entry before:
 * touches move no bucket, as residency.c make_resident_fast() has it). */
static inline void touch_listed(vidmm_device *dev, struct vm_alloc *a, struct vm_segment **bs, uint32_t *bprio,
                                struct vm_bucket **b)
{
    a->lru = ++dev->clock;
    if (!a->in_bucket)
        return; /* as vm_res_touch() */
    if (a->seg != *bs || a->bucket_prio != *bprio || !*b) {
        *bs = a->seg;
        *bprio = a->bucket_prio;
        *b = vm_res_bucket(*bs, *bprio);
    }
    if (*b)
        vm_bucket_touch(*b, a);
}

int vidmm_submit(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count, uint32_t flags,
                 struct vidmm_residency *where, uint64_t *fence)
{
    VM_DEV_CHECK(dev);
    if (!dev || !refs)
        return vidmm_refuse(__func__, !dev ? "dev" : "refs", "NULL", "device.h");
    if (!fence) /* its work would keep its allocations busy under a fence no caller could signal */
        return vidmm_refuse(__func__, "fence", "NULL: the submission's fence must be returned to be signalled",
                            "device.h");
    if (count == 0 || count > VM_MAX_REFS)
        return vidmm_refuse(__func__, "count", "0 or above 65536", "device.h");
    if (flags & ~VIDMM_SUBMIT_DONOT_WAIT)
        return vidmm_refuse(__func__, "flags", "unknown bits", "device.h");
    if (vm_w2_refuse_list(dev, __func__)) /* WDDM2 hook: no allocation-list residency (residency.c) */
        return VIDMM_E_INVALID_ARG;
    const bool donot_wait = (flags & VIDMM_SUBMIT_DONOT_WAIT) != 0;
    pthread_mutex_lock(&dev->mu);
    if (list_resident(dev, refs, NULL, count)) {
        /* What the general path does to such a list, in its order: place_all() touches every
         * entry, the fence walk below does its work on each entry and touches it again. The
         * second touches alone decide the LRU order, as every entry moves to its bucket's tail
         * in both walks; the first ones still advance the device clock (which also stamps new
         * rename instances: vm_alloc.seq), so that it ends where the general path leaves it.
         * Nothing waits, so nothing is held. */
        const uint64_t f = ++dev->fence_issued;
        dev->clock += count;
        struct vm_alloc *const *const table = dev->table;
        const uint32_t top = dev->table_top;
        struct vm_segment *bs = NULL;
        uint32_t bprio = 0;
        struct vm_bucket *b = NULL;
        for (uint32_t i = 0; i < count; i++) {
            struct vm_alloc *a = lookup(table, top, refs[i].allocation);
            const bool write = (refs[i].flags & VIDMM_REF_WRITE) != 0;
            vm_cache_gpu_use(dev, a, write);
            a->read_fence = f;
            if (write) {
                a->write_fence = f;
                a->dirty = true;
            }
            touch_listed(dev, a, &bs, &bprio, &b);
            if (where)
                fill_residency(a, &where[i]);
        }
        dev->st.submissions++;
        *fence = f;
        if (dev->hold_waiters)
            pthread_cond_broadcast(&dev->paging_cv); /* as hold(-1) */
        vm_unlock_and_page(dev);
        return 0;
    }
    int err;
    uint64_t last = 0;
    for (;;) {
        bool waited;
        err = dev->removed ? VIDMM_E_DEVICE_REMOVED : check_refs(dev, refs, count);
        if (!err && vm_wait_converting(dev, refs, count))
            continue; /* issue 16: a lock or unlock was converting one of them; look again */
        if (!err)
            err = swap_in_refs(dev, refs, count, donot_wait, &waited);
        if (err) {
            vm_unlock_and_page(dev);
            return err;
        }
        if (!waited)
            break; /* the list checked and every allocation in memory, without a wait between */
    }
    hold(dev, refs, count, 1);
    err = place_all(dev, refs, count, donot_wait, false, &last);
    if (!err)
        err = wait_paged(dev, refs, count, donot_wait);
    if (!err)
        err = wait_sync_paging(dev, donot_wait);
    if (!err && dev->removed)
        err = VIDMM_E_DEVICE_REMOVED;
    /* Every referenced allocation may have moved while this thread waited: check again. */
    for (uint32_t i = 0; !err && i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        if (!a)
            err = vm_refuse_handle(__func__, refs[i].allocation);
        else if (a->where != VIDMM_WHERE_SEGMENT && a->where != VIDMM_WHERE_APERTURE)
            err = VIDMM_E_NO_VIDEO_MEMORY;
    }
    if (err) {
        hold(dev, refs, count, -1);
        vm_unlock_and_page(dev);
        return err;
    }
    const uint64_t f = ++dev->fence_issued;
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        vm_cache_gpu_use(dev, a, (refs[i].flags & VIDMM_REF_WRITE) != 0);
        a->read_fence = f;
        if (refs[i].flags & VIDMM_REF_WRITE) {
            a->write_fence = f;
            a->dirty = true;
        }
        vm_touch(dev, a);
        if (where)
            fill_residency(a, &where[i]);
        if (refs[i].flags & VIDMM_REF_OFFER_PRIORITY_MASK) /* offer hook: OfferPriority (offer.c) */
            vm_offer_after_submit(dev, a, refs[i].flags >> VIDMM_REF_OFFER_PRIORITY_SHIFT);
    }
    dev->st.submissions++;
    *fence = f;
    hold(dev, refs, count, -1); /* after the fence: busy from here on */
    vm_unlock_and_page(dev);
    return 0;
}

int vidmm_make_resident(vidmm_device *dev, const vidmm_handle *handles, uint32_t count, struct vidmm_residency *where)
{
    VM_DEV_CHECK(dev);
    if (!dev || !handles || count == 0 || count > VM_MAX_REFS)
        return vidmm_refuse(__func__, !dev ? "dev" : !handles ? "handles" : "count", "NULL, or count not in 1..65536",
                            "device.h");
    if (vm_w2_refuse_list(dev, __func__)) /* WDDM2 hook: residency by the residency list only */
        return VIDMM_E_INVALID_ARG;
    pthread_mutex_lock(&dev->mu);
    if (list_resident(dev, NULL, handles, count)) {
        /* place_all() would touch each entry once, in list order; that is all (no fence). */
        struct vm_alloc *const *const table = dev->table;
        const uint32_t top = dev->table_top;
        struct vm_segment *bs = NULL;
        uint32_t bprio = 0;
        struct vm_bucket *b = NULL;
        for (uint32_t i = 0; i < count; i++) {
            struct vm_alloc *a = lookup(table, top, handles[i]);
            touch_listed(dev, a, &bs, &bprio, &b);
            if (where)
                fill_residency(a, &where[i]);
        }
        if (dev->hold_waiters)
            pthread_cond_broadcast(&dev->paging_cv); /* as hold(-1) */
        vm_unlock_and_page(dev);
        return 0;
    }
    /* The general path's list, made here rather than before the mutex is taken, as a resident
     * list needs none (so where this malloc() fails, a resident list's call now succeeds).
     * Without memory for it the call changes nothing, as before: list_resident() wrote only
     * scratch, and no paging was started (no vm_unlock_and_page()). */
    struct vidmm_alloc_ref small[16], *refs = count <= 16 ? small : malloc(sizeof *refs * count);
    if (!refs) {
        pthread_mutex_unlock(&dev->mu);
        return VIDMM_E_NO_MEMORY;
    }
    for (uint32_t i = 0; i < count; i++) {
        refs[i].allocation = handles[i];
        refs[i].flags = 0;
    }
    int err;
    uint64_t last = 0;
    for (;;) {
        bool waited = false;
        err = dev->removed ? VIDMM_E_DEVICE_REMOVED : check_refs(dev, refs, count);
        if (!err && vm_wait_converting(dev, refs, count))
            continue; /* issue 16: a lock or unlock was converting one of them; look again */
        if (!err)
            err = swap_in_refs(dev, refs, count, false, &waited);
        if (err || !waited)
            break;
    }
    if (!err) {
        hold(dev, refs, count, 1);
        err = place_all(dev, refs, count, false, true, &last);
        if (!err)
            err = wait_paged(dev, refs, count, false);
        for (uint32_t i = 0; !err && where && i < count; i++)
            fill_residency(vm_lookup(dev, handles[i]), &where[i]);
        hold(dev, refs, count, -1);
    }
    vm_unlock_and_page(dev);
    if (refs != small)
        free(refs);
    return err;
}

/* vidmm_gpu_access() and vidmm_invalidate_cache() work on ranges from this size on with the
 * device mutex released (below it, releasing and taking it back costs more than the work). */
#define VM_ACCESS_UNLOCKED_MIN (64u * 1024u)

int vidmm_gpu_access(vidmm_device *dev, vidmm_handle h, uint64_t offset, void *buf, size_t n, bool write)
{
    VM_DEV_CHECK(dev);
    if (!dev || !vidmm_range_ok(buf, n))
        return vidmm_refuse(__func__, !dev ? "dev" : "buf", "NULL, or a range that wraps", "device.h");
    int err;
    struct vm_alloc *a = vm_enter(dev, h, &err);
    if (!err && (offset > a->g->size || a->g->size - offset < n))
        err = vidmm_refuse(__func__, "offset", "the range is outside the allocation", "device.h");
    /* Issue 16: not while a lock or unlock converts its bytes with the mutex released. */
    const struct vidmm_alloc_ref one = { h, 0 };
    while (!err && vm_wait_converting(dev, &one, 1))
        if ((a = vm_lookup(dev, h)) == NULL)
            err = vm_refuse_handle(__func__, h);
    /* Back from disk; a write waits for a write-out in flight. Each wait releases the mutex:
     * look again until it is in memory. */
    while (!err && (a->where == VIDMM_WHERE_DISK || (write && a->swap != VM_SWAP_NONE))) {
        err = vm_swap_in(dev, &a, 1, true, NULL);
        if (!err && (a = vm_lookup(dev, h)) == NULL)
            err = vm_refuse_handle(__func__, h);
    }
    if (!err) {
        /* Held across the wait: no write-out may take its memory meanwhile. */
        a->hold++;
        while (!err && a->paging_fence > dev->paging_done)
            err = vm_wait_paging_locked(dev, a->paging_fence);
        if (--a->hold == 0 && dev->hold_waiters)
            pthread_cond_broadcast(&dev->paging_cv);
    }
    if (err || n == 0)
        goto out;
    if (a->where == VIDMM_WHERE_NONE) {
        if (!write) {
            /* No content yet: it is the fill pattern. */
            uint32_t pat = a->g->desc.fill_pattern;
            uint8_t *b = buf;
            for (size_t i = 0; i < n; i++)
                b[i] = (uint8_t)(pat >> (8 * ((offset + i) & 3)));
            goto out;
        }
        if ((err = vm_materialize(dev, a)) != 0)
            goto out;
    }
    uint8_t *p = vm_content_ptr(dev, a) + offset;
    /* A range lock's lazy view fills from these bytes on its handler thread: a write holds its
     * fills off (a fault meanwhile waits), so that the two never touch them at once - the
     * content the lock shows is undefined then (the GPU wrote a locked surface), the access
     * is not a race. (Lock order: the device mutex, then the view's - never the device's while
     * the view's is held; no fill takes the device's.) */
    struct vmos_lazy *lz = NULL;
    if (write) {
        a->gen++;
        if (a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE)
            a->dirty = true;
        if (a->range >= 0 && dev->ranges[a->range].a == a && dev->ranges[a->range].lazy_armed)
            lz = dev->ranges[a->range].lazy;
    }
    if (lz)
        vmos_lazy_hold(lz);
    if (n >= VM_ACCESS_UNLOCKED_MIN) {
        /* Issue 16: a large copy with the mutex released (nothing moves 'a' meanwhile), so that
         * it does not stall other threads' calls on unrelated allocations. The view's mutex
         * goes before the device's is taken again. */
        vm_convert_begin(dev, a);
        memcpy(write ? p : buf, write ? buf : p, n);
        if (lz)
            vmos_lazy_release(lz);
        vm_convert_end(dev, a);
    } else {
        memcpy(write ? p : buf, write ? buf : p, n);
        if (lz)
            vmos_lazy_release(lz);
    }
out:
    vm_unlock_and_page(dev);
    return err;
}

int vidmm_invalidate_cache(vidmm_device *dev, vidmm_handle h, uint64_t offset, uint64_t n)
{
    VM_DEV_CHECK(dev);
    if (!dev)
        return vidmm_refuse(__func__, "dev", "NULL", "device.h");
    int err;
    struct vm_alloc *a = vm_enter(dev, h, &err);
    if (!err && (offset > a->g->size || a->g->size - offset < n))
        err = vidmm_refuse(__func__, "offset", "the range is outside the allocation", "device.h");
    const struct vidmm_alloc_ref one = { h, 0 };
    while (!err && vm_wait_converting(dev, &one, 1)) /* issue 16: another call works on its bytes */
        if ((a = vm_lookup(dev, h)) == NULL)
            err = vm_refuse_handle(__func__, h);
    if (!err && n) {
        uint8_t *p = vm_content_ptr(dev, a);
        if (p) {
            dev->st.cache_invalidates++;
            /* The engine's own flush of a large range with the mutex released (the driver's
             * callback is called with it held, as everywhere: device.h). */
            const bool unlocked = n >= VM_ACCESS_UNLOCKED_MIN && !dev->drv.invalidate_cpu_cache;
            if (unlocked)
                vm_convert_begin(dev, a);
            if (dev->drv.invalidate_cpu_cache)
                dev->drv.invalidate_cpu_cache(dev->drv.arg, p + offset, (size_t)n);
            else
                vidmm_flush(p + offset, (size_t)n, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
            if (unlocked)
                vm_convert_end(dev, a);
        }
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}
