/* SPDX-License-Identifier: MIT */
/* lib/engine/lock.c - CPU locks: validation (spec 6.3, 15.11), relock rules (15.12),
 * synchronisation (15.13), placement (15.14), swizzled locks through swizzling ranges (8.2,
 * 15.15), alternate VAs (8.4, 15.16), renaming (7, 15.18), cache maintenance (15.24).
 *
 * The driver's range and cache callbacks are called with the device mutex held: they must not
 * call back into the device.
 *
 * Bytes are not converted under the device mutex (issue 16): a range lock decides everything
 * under it - validation, placement, the range - then marks the allocation locked and
 * 'converting' (with 'hold' raised), releases the mutex, untiles into the view (or arms the
 * lazy view), takes the mutex back and clears the mark; an unlock that ends a range lock marks
 * every allocation it lists the same way, tiles back what was written and drops the lazy
 * view's pages with the mutex released, then ends the locks. Meanwhile nothing evicts, moves or destroys the
 * allocation (locked and held), another lock of it is refused by the relock rules (spec 6.3
 * rule 8) and another unlock, a submission or vidmm_gpu_access() of it waits until the mark is
 * cleared (paging_cv); other allocations are not held up at all. Copy-backs (PermanentSysMem)
 * are paging operations, which run without the mutex already. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* ---------------------------------------------------------------------------------------------
 * Validation (spec 6.3 rules 1-12, 15.11) and relock rules (15.12). Nothing changes here.
 * ------------------------------------------------------------------------------------------- */
#define REFUSE(field, rule, spec) vidmm_refuse("vidmm_lock", field, rule, spec)

/* Discard is ignored for pinned, primary and shared allocations (spec 6.3) - and here for
 * caller memory (EXISTING_*), which has no second instance to rename to. */
static bool discard_applies(const struct vm_alloc *a, uint32_t f)
{
    const struct vm_group *g = a->g;
    return (f & VIDMM_LOCK_DISCARD) && !a->pinned &&
           !(g->desc.kind & (VIDMM_ALLOC_KIND_PRIMARY | VIDMM_ALLOC_KIND_SHARED)) && !g->desc.existing_memory;
}

/* The flags as they act (spec 6.3, "Neutralizing"): Discard takes away IgnoreSync and DonotWait
 * before any rule about them is checked. */
static uint32_t effective_flags(const struct vm_alloc *a, uint32_t f)
{
    return discard_applies(a, f) ? f & ~(VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT) : f;
}

/* May the CPU touch a Cached allocation while the GPU uses it (IgnoreSync / IgnoreReadSync,
 * spec 6.3 rule 4)? Yes when the adapter snoops CPU caches everywhere (VIDMM_DEVICE_CACHE_COHERENT),
 * or when a segment of its set is a cache-coherent aperture (spec 2.3: CacheCoherent apertures
 * snoop; MapApertureSegment then carries CacheCoherent, spec 15.9). */
static bool cached_coherent(const vidmm_device *dev, const struct vm_group *g)
{
    if (dev->flags & VIDMM_DEVICE_CACHE_COHERENT)
        return true;
    for (uint32_t i = 0; i < dev->nseg; i++)
        if ((g->supported & (1u << i)) && dev->seg[i].aperture && (dev->seg[i].flags & VIDMM_SEGMENT_CACHE_COHERENT))
            return true;
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * Validation (spec 6.3 rules 1-12, 15.11) and relock rules (15.12). Nothing changes here.
 * ------------------------------------------------------------------------------------------- */
static int check_lock(const vidmm_device *dev, const struct vm_alloc *a, const struct vidmm_lock_args *args)
{
    const struct vm_group *g = a->g;
    const uint32_t af = g->desc.flags;
    const bool swizzled = (af & VIDMM_ALLOC_SWIZZLED) != 0;
    const bool primary = (g->desc.kind & VIDMM_ALLOC_KIND_PRIMARY) != 0;
    const bool shared = (g->desc.kind & VIDMM_ALLOC_KIND_SHARED) != 0;
    const uint32_t apertures = aperture_set(dev);
    if (args->flags & VIDMM_LOCK_RESERVED_MASK)
        return REFUSE("flags", "reserved bits set", "6.2");
    const uint32_t f = effective_flags(a, args->flags);
    if ((f & VIDMM_LOCK_READ_ONLY) && (f & VIDMM_LOCK_WRITE_ONLY))
        return REFUSE("flags", "READ_ONLY with WRITE_ONLY", "6.3 rule 1");
    if ((f & VIDMM_LOCK_IGNORE_SYNC) && (f & VIDMM_LOCK_ACQUIRE_APERTURE))
        return REFUSE("flags", "IGNORE_SYNC with ACQUIRE_APERTURE", "6.3 rule 2");
    if ((f & VIDMM_LOCK_USE_ALTERNATE_VA) && !(f & VIDMM_LOCK_ACQUIRE_APERTURE))
        return REFUSE("flags", "USE_ALTERNATE_VA without ACQUIRE_APERTURE", "6.3 rule 3");
    if ((f & VIDMM_LOCK_ENTIRE) && (args->page_count || args->pages))
        return REFUSE("pages", "a page list with LOCK_ENTIRE", "6.3 rule 11");
    if ((args->page_count != 0) != (args->pages != NULL))
        return REFUSE("pages", "page_count and pages disagree (one is 0 / NULL)", "6.1");
    const uint64_t npages = g->size / VIDMM_PAGE_SIZE;
    for (uint32_t i = 0; i < args->page_count; i++)
        if (args->pages[i] >= npages)
            return REFUSE("pages[]", "a page index beyond the allocation", "15.11");
    if (!(af & VIDMM_ALLOC_CPU_VISIBLE))
        return REFUSE("allocation", "not created CPU_VISIBLE", "6.3 rule 10");
    if (shared && args->process != g->desc.process)
        return REFUSE("process", "not the creator of the shared allocation", "6.3 rule 10");
    if (a->offer_prio && vm_offer_refuse_use(a, "vidmm_lock")) /* offer hook: spec 6.3 rule 9 (offer.c) */
        return VIDMM_E_INVALID_ARG;
    if (f & (VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_IGNORE_READ_SYNC)) {
        if (swizzled)
            return REFUSE("flags", "IGNORE_SYNC or IGNORE_READ_SYNC on a swizzled allocation", "6.3 rules 4, 12");
        if ((af & VIDMM_ALLOC_CACHED) && !cached_coherent(dev, g))
            return REFUSE("flags", "IGNORE_SYNC or IGNORE_READ_SYNC on a Cached allocation without cache coherency",
                          "6.3 rule 4");
        if (!(g->supported & apertures))
            return REFUSE("flags", "IGNORE_SYNC or IGNORE_READ_SYNC on an allocation no aperture segment may hold",
                          "6.3 rule 4");
    }
    if ((f & VIDMM_LOCK_ACQUIRE_APERTURE) && !(g->supported & ~apertures))
        return REFUSE("flags", "ACQUIRE_APERTURE on an allocation only aperture segments may hold", "6.3 rule 5");
    if ((f & VIDMM_LOCK_ACQUIRE_APERTURE) && swizzled && (f & VIDMM_LOCK_DONOT_WAIT))
        return REFUSE("flags", "DONOT_WAIT while acquiring a swizzling range", "6.3 rule 12");
    if (f & VIDMM_LOCK_USE_ALTERNATE_VA) {
        if (shared)
            return REFUSE("flags", "USE_ALTERNATE_VA on a shared allocation", "6.3 rule 7");
        if (!primary || !(af & VIDMM_ALLOC_USE_ALTERNATE_VA))
            return REFUSE("flags", "USE_ALTERNATE_VA on an allocation not created with it", "6.3 rule 7");
    } else if (primary && (af & VIDMM_ALLOC_USE_ALTERNATE_VA)) {
        return REFUSE("flags", "a primary created USE_ALTERNATE_VA locked without it", "6.3 rule 7");
    }
    if (a->lock_count) { /* relock rules (15.12) */
        if (a->lock_mode == VM_LOCK_RANGE)
            return REFUSE("allocation", "locked through a swizzling range: unlock it first", "6.3 rule 8");
        if (a->lock_mode == VM_LOCK_ALTVA)
            return REFUSE("allocation", "locked with USE_ALTERNATE_VA: unlock it first", "6.3 rule 7");
        if (a->lock_mode == VM_LOCK_LOCK2) /* WDDM2 hook: the two lock kinds do not mix (lock2.c) */
            return REFUSE("allocation", "locked by vidmm_wddm2_lock2(): unlock it with vidmm_wddm2_unlock2() first",
                          "6.6");
        if ((f & VIDMM_LOCK_ACQUIRE_APERTURE) && !(a->lock_flags & VIDMM_LOCK_ACQUIRE_APERTURE))
            return REFUSE("flags", "ACQUIRE_APERTURE on an allocation locked without it", "6.3 rule 6");
    }
    return 0;
}

/* part_offset(): where element (box.x, box.y, box.z) of subresource 'si' is in the packed
 * linear order. */
static size_t part_offset(const struct vm_group *g, const struct vidmm_subresource_info *si,
                          const struct vidmm_box *box)
{
    const size_t e = g->surface.element_bytes, row = (size_t)si->width * e, slice = row * si->height;
    return (size_t)si->linear_offset + box->z * slice + box->y * row + box->x * e;
}

/* check_region() checks the part a narrow lock (vidmm_lock_region()) names, for allocation 'a'
 * locked with 'args' (spec 15.11 style: every refusal VIDMM_E_INVALID_ARG, logged with its
 * rule), and describes it in '*part' and the out fields in '*out' (the caller writes them back
 * only on success). NULL 'rg': the whole-allocation lock. Nothing changes here. */
#define REFUSE_RG(field, rule) vidmm_refuse("vidmm_lock_region", field, rule, "device.h")
static int check_region(const struct vm_alloc *a, const struct vidmm_lock_args *args,
                        const struct vidmm_lock_region *rg, struct vm_part *part, struct vidmm_lock_region *out)
{
    memset(part, 0, sizeof *part);
    part->whole = true;
    if (rg == NULL)
        return 0;
    const struct vm_group *g = a->g;
    if (rg->flags & ~VIDMM_LOCK_REGION_BOX)
        return REFUSE_RG("region->flags", "unknown bits");
    if (!(g->desc.flags & VIDMM_ALLOC_SWIZZLED))
        return REFUSE_RG("allocation", "not SWIZZLED: no tiling layout to lock a part of");
    if (!(args->flags & VIDMM_LOCK_ACQUIRE_APERTURE))
        return REFUSE_RG("args->flags", "a narrow lock without ACQUIRE_APERTURE (it is a swizzling-range lock)");
    if (args->flags & VIDMM_LOCK_USE_ALTERNATE_VA)
        return REFUSE_RG("args->flags", "a narrow lock with USE_ALTERNATE_VA (a view of the whole backing store)");
    if ((args->flags & VIDMM_LOCK_ENTIRE) || args->page_count || args->pages)
        return REFUSE_RG("args->pages", "a narrow lock with LOCK_ENTIRE or a page list");
    const uint32_t mips = g->surface.mip_levels, layers = g->surface.array_layers;
    if (rg->mip != VIDMM_LOCK_REGION_ALL && rg->mip >= mips)
        return REFUSE_RG("region->mip", "beyond the surface's mip levels");
    if (rg->layer != VIDMM_LOCK_REGION_ALL && rg->layer >= layers)
        return REFUSE_RG("region->layer", "beyond the surface's array layers");
    const bool has_box = (rg->flags & VIDMM_LOCK_REGION_BOX) != 0;
    part->mip0 = rg->mip == VIDMM_LOCK_REGION_ALL ? 0 : rg->mip;
    part->nmip = rg->mip == VIDMM_LOCK_REGION_ALL ? mips : 1;
    part->layer0 = rg->layer == VIDMM_LOCK_REGION_ALL ? 0 : rg->layer;
    part->nlayer = rg->layer == VIDMM_LOCK_REGION_ALL ? layers : 1;
    struct vidmm_subresource_info si = { .size = sizeof si };
    if (vidmm_surface_subresource(&g->layout, &g->surface, part->mip0, part->layer0, &si) != 0)
        return REFUSE_RG("region", "the subresource cannot be resolved");
    if (has_box) {
        const struct vidmm_box *b = &rg->box;
        if (rg->mip == VIDMM_LOCK_REGION_ALL || rg->layer == VIDMM_LOCK_REGION_ALL)
            return REFUSE_RG("region->box", "a box of every mip or layer (a box is of one subresource)");
        if (b->width == 0 || b->height == 0 || b->depth == 0)
            return REFUSE_RG("region->box", "empty (a width, height or depth of 0)");
        if (b->x >= si.width || b->width > si.width - b->x || b->y >= si.height || b->height > si.height - b->y ||
            b->z >= si.depth || b->depth > si.depth - b->z)
            return REFUSE_RG("region->box", "outside the subresource");
        part->has_box = true;
        part->box = *b;
    }
    part->whole = !has_box && part->nmip == mips && part->nlayer == layers;
    const size_t e = g->surface.element_bytes;
    struct vidmm_box first = has_box ? rg->box : (struct vidmm_box){ 0, 0, 0, si.width, si.height, si.depth };
    out->offset = part_offset(g, &si, &first);
    out->row_pitch = (uint64_t)si.width * e;
    out->slice_pitch = out->row_pitch * si.height;
    out->layer_pitch = g->linear_size;
    struct vidmm_subresource_info s1 = { .size = sizeof s1 };
    if (layers > 1 && vidmm_surface_subresource(&g->layout, &g->surface, part->mip0, 1, &s1) == 0) {
        struct vidmm_subresource_info s0 = { .size = sizeof s0 };
        if (vidmm_surface_subresource(&g->layout, &g->surface, part->mip0, 0, &s0) == 0)
            out->layer_pitch = s1.linear_offset - s0.linear_offset;
    }
    return 0;
}

/* range_watch_arm() starts recording which pages of range 'r''s view the CPU writes from now
 * on (the eager untiling has just written all of them): the view's write tracker (os.h
 * vmos_wtrack_*, userfaultfd's asynchronous write-protect: no signal handler) is made on its
 * first use, and armed. The unlock collects the pages written and lifts the protection, so
 * that the next lock's untiling does not fault on every page of the view. False when there is
 * none (off, or refused by the kernel: the snapshot is compared instead). */
#define VM_TRACK_PROBE_SPANS 8u /* runs of pages an untracked probe watches (range_want_track()) */

static bool range_watch_get(vidmm_device *dev, struct vm_range *r)
{
    if (!dev->range_watch || r->ww_failed)
        return false;
    if (r->ww == NULL) {
        if (vmos_wtrack_create(r->view, r->view_len, &r->ww) != 0) {
            r->ww = NULL;
            r->ww_failed = true;
            vidmm_log(VIDMM_LOG_DEBUG, "swizzling range views: no userfaultfd write-protect here; rows written are "
                                       "found by comparing with a snapshot");
            return false;
        }
        vidmm_log(VIDMM_LOG_DEBUG, "swizzling range view of %zu bytes: rows written found by a userfaultfd "
                                   "write-watch", r->view_len);
    }
    return true;
}

static bool range_watch_arm(vidmm_device *dev, struct vm_range *r)
{
    return range_watch_get(dev, r) && vmos_wtrack_arm(r->ww, r->view, r->view_len) == 0;
}

/* range_probe_arm() write-watches the runs of pages an untracked probe looks at (r->tr_lo,
 * r->tr_n: range_want_track()). False when it cannot (the lock is then untracked alone). */
static bool range_probe_arm(vidmm_device *dev, struct vm_range *r)
{
    if (!range_watch_get(dev, r))
        return false;
    const size_t stride = r->tr_stride;
    for (uint32_t k = 0; k < VM_TRACK_PROBE_SPANS; k++)
        if (vmos_wtrack_arm(r->ww, r->view + (r->tr_lo + k * stride) * VIDMM_PAGE_SIZE,
                            (size_t)r->tr_n * VIDMM_PAGE_SIZE) != 0) {
            while (k-- > 0)
                (void)vmos_wtrack_disarm(r->ww, r->view + (r->tr_lo + k * stride) * VIDMM_PAGE_SIZE,
                                         (size_t)r->tr_n * VIDMM_PAGE_SIZE);
            return false;
        }
    r->ww_protected = true; /* until the unlock's collect lifts them (a lock that never ends) */
    return true;
}

static void range_note_eager(struct vm_range *r, uint64_t written);
static void range_note_track(struct vm_range *r, uint64_t written);

/* range_probe_end(): the unlock of a probing lock - the pages written in its runs counted and
 * their protection lifted, the count extrapolated to the view as the lock's verdict. */
static void range_probe_end(struct vm_range *r)
{
    const size_t stride = r->tr_stride, words = ((size_t)r->tr_n + 63) / 64;
    const uint64_t npages = (uint64_t)stride * VM_TRACK_PROBE_SPANS;
    uint64_t *bits = malloc(words * sizeof *bits);
    uint64_t written = 0;
    bool ok = bits != NULL;
    for (uint32_t k = 0; k < VM_TRACK_PROBE_SPANS; k++) {
        uint8_t *p = r->view + (r->tr_lo + k * stride) * VIDMM_PAGE_SIZE;
        const size_t len = (size_t)r->tr_n * VIDMM_PAGE_SIZE;
        if (bits != NULL)
            memset(bits, 0, words * sizeof *bits);
        if (bits == NULL || vmos_wtrack_collect(r->ww, p, len, bits, true) != 0) {
            (void)vmos_wtrack_disarm(r->ww, p, len);
            ok = false;
            continue;
        }
        for (size_t w = 0; w < words; w++)
            written += (uint64_t)__builtin_popcountll(bits[w]);
    }
    free(bits);
    r->ww_protected = false;
    r->tr_probe = false;
    if (!ok)
        return; /* no verdict: the next lock probes again */
    const uint64_t est = written * npages / ((uint64_t)r->tr_n * VM_TRACK_PROBE_SPANS);
    range_note_eager(r, est);
    range_note_track(r, est);
}

/* ---------------------------------------------------------------------------------------------
 * Swizzling ranges (spec 8.3, 15.15).
 * ------------------------------------------------------------------------------------------- */
static void range_args(const vidmm_device *dev, const struct vm_range *r, uint32_t id,
                       struct vidmm_swizzling_range_args *x)
{
    (void)dev;
    memset(x, 0, sizeof *x);
    x->allocation = r->a->handle;
    x->driver_data = r->a->g->desc.driver_data;
    x->private_data = r->private_data;
    x->range_id = id;
    x->segment_id = r->segment_id;
    x->range_size = r->a->g->size;
}

/* ---------------------------------------------------------------------------------------------
 * Lazy or eager, per lock. A lazy view pays a fault for every run of pages first touched (the
 * trap, the handler's wake-up, the install) and untiles what it fills at about 1.5x the eager
 * rate (chunks of at most 256 KiB, moves, and for writable locks a copy and a compare of each
 * chunk); an eager view untiles the whole part at once. Nothing says before the bytes move what
 * a lock will touch, so the choice is the last lock's: its faults and filled bytes (the lazy
 * view's statistics), or the pages an eager lock's write-watch saw written (a lower bound on
 * what it touched). A lock whose predicted lazy cost reaches the eager untiling goes eager; a
 * lazy lock probes again after 2, 4, ... 16 eager ones (its reads are never seen), or at once
 * after an eager lock that wrote little. Nothing known (the allocation's first lock through
 * the range): lazy, whose wins are the large ones (one page: 1000x).
 *
 * The break-even, 64 MiB block-linear surface (4096 x 4096 x 4), lock + write N% of the pages
 * spread evenly + unlock (build/release/bench/bench_lock_paths 5 range, 2-vCPU Intel Cascade
 * Lake VM, loaded, 2026-11-28): 1% lazy 3.2 ms against eager 19.3 ms, 10% lazy 28.2 against
 * 26.5 - each of the 1638 faults of the 10% row about 14 us, the eager untiling of 64 MiB
 * 14-17 ms, so one fault costs what untiling about 64 KiB does and the lines cross near 9%;
 * lock + read all + unlock 33.2 ms lazy against 22.3 eager (1.5x a byte); 100% written 73.4
 * against 59.3. On the AMD Zen 4 the issue measured, a fault costs about 4x as much (10%
 * spread: 99.5-127 ms lazy against 15.5-17.5 eager), so 64 KiB is the low side: a lock this
 * prices lazy there costs at most the eager untiling plus its faults' excess.
 * VIDMM_LAZY_HISTORY=off keeps every lock lazy (tests of the lazy view itself).
 *
 * Tried and dropped: taking a strided walk for a stream in the lazy view (a fault at most 9
 * pages after the previous chunk counted as the next page, so that its chunks double and the
 * read-ahead follows): writing 10% of the 64 MiB spread evenly went from 1644 faults to about
 * 245 a lock, but lock + write took 52 ms and the unlock 9-11 against 31 and 6.5-7 with a fault
 * a page (VIDMM_LAZY_HISTORY=off, the two builds run alternately, 3 times each, this VM): a
 * writable chunk's fill (untile, copy, move, protect, compare) costs more per byte here than
 * the faults it saves. On a CPU where faults cost 4x (the Zen 4) it may pay; measure there.
 * ------------------------------------------------------------------------------------------- */
#define VM_LAZY_FAULT_BYTES ((uint64_t)64 << 10)
#define VM_LAZY_BACKOFF_MAX 16u

/* lazy_cost(): the predicted cost, in bytes of eager untiling, of 'faults' faults filling
 * 'filled' bytes through a lazy view. */
static uint64_t lazy_cost(uint64_t faults, uint64_t filled)
{
    return faults * VM_LAZY_FAULT_BYTES + filled + filled / 2;
}

static void range_note_dense(struct vm_range *r);

/* range_note_lazy() keeps what the lazy lock ending on range 'r' cost. A writable one whose
 * stream went in counted (os.h vmos_lazy_arm(): every page of its chunks counts as written)
 * tiled back what it streamed, which says nothing of what it wrote but that it may have written
 * all of it: taken for a dense writer, as a tracked eager lock that wrote past its break-even
 * is - the next eager locks go untracked (range_want_track()), exactly the untracked cost,
 * until a tracked one probes. */
static void range_note_lazy(struct vm_range *r, const struct vmos_lazy_stats *st)
{
    r->hist_a = r->a;
    r->hist_cost = lazy_cost(st->faults, st->filled);
    r->hist_guess = false;
    r->hist_eager = false;
    if (st->counted && r->lazy_writable) {
        if (r->tr_a != r->a) {
            r->tr_a = r->a;
            r->tr_backoff = 0;
        }
        range_note_dense(r);
    }
}

/* range_note_eager(): the eager lock ending on range 'r' saw 'written' pages written (its
 * write-watch's count; a lock without one leaves no evidence). */
static void range_note_eager(struct vm_range *r, uint64_t written)
{
    if (!r->hist_eager)
        return;
    /* Each written page at worst its own fault. */
    const uint64_t cost = lazy_cost(written, written * VIDMM_PAGE_SIZE);
    if (r->hist_cost == UINT64_MAX || r->hist_probe) {
        /* The first lock's probe, or the one ending a wait (range_want_lazy()): its verdict is
         * all that is known - of the writes: a guess at what the lazy lock costs. */
        r->hist_cost = cost;
        r->hist_guess = r->hist_probe;
        r->hist_probe = false;
        return;
    }
    if (cost < r->view_len) {
        r->hist_skip = 0; /* wrote little: the next lock tries lazy (its reads are not known) */
        r->hist_sparse = true;
    }
}

/* Tracked or untracked, per eager lock (issue 31): the write-watch of an eager view costs an
 * arm of the whole view and a fault for every page written (os.h vmos_wtrack_measure(); 1.5-3.3
 * us a page here, "The policy" below), while untracked the unlock tiles back the whole part,
 * about what a copy of it costs. 64 MiB block-linear surface written whole through a whole-range
 * lock (bench_lock_paths 5 range, 2-vCPU Cascade Lake VM, 2026-11-28): 60 ms tracked against 32
 * untracked; one page written: 0.1 ms tracked against 17. So, as for the plain locks: a lock is
 * tracked unless the last tracked lock of the same allocation through this range wrote more
 * than the break-even - tracked cost fixed + N * arm + written * (fault + move) against N *
 * move untracked - and then the next 2, 4, ... 16 locks go untracked before one probes again.
 * VIDMM_RANGE_DIRTY=off: never tracked.
 *
 * The lock nothing is known of - an allocation's first through the range - and the one after a
 * back-off are untracked probes: the whole part is tiled back as by an untracked lock, and
 * VM_TRACK_PROBE_SPANS runs of pages spread over the view are write-watched meanwhile (one arm
 * and one collect each), sized so that the probe costs at most 1/VM_WATCH_BUDGET_DIV of the
 * untracked tile-back if every page of them is written; their written fraction, extrapolated to
 * the view, is the lock's verdict. The first lock of a fresh allocation used to be tracked whole
 * (a dense one paid the tracking once): 64 MiB written whole on the Zen 4 (2 vCPUs, loaded;
 * bench_lock_paths 5 fresh) 29.6-35.8 ms tracked against 11.0-11.5 untracked, 2.6-3.1x; every
 * tenth page 1.4-1.6x; one page 0.9-1.0x (the untiling of the whole view, which both do,
 * dwarfs the tile-back tracking saves). A sparse verdict makes the next lock tracked whole. */
#define VM_TRACK_BACKOFF_MAX 16u
#define VM_MOVE_COPY_NS 400u      /* defaults before the device measured its own ("The policy") */
#define VM_MOVE_FLUSH_NS 200u

enum { VM_TRACK_NONE, VM_TRACK_WHOLE, VM_TRACK_PROBE };
#define VM_WATCH_BUDGET_DIV 40u   /* a probe costs at most 1/40 of the move it stands for */
#define VM_WATCH_MIN_WINDOW 16u   /* pages: fewer say too little about a lock */

/* range_want_track(): how the eager writable lock of a whole part of 'npages' pages through
 * range 'r' is tracked - not at all, whole, or as a probe (untracked, r->tr_lo, r->tr_n). */
static int range_want_track(const vidmm_device *dev, struct vm_range *r, size_t npages)
{
    if (dev->range_untracked)
        return VM_TRACK_NONE;
    bool probe = false;
    if (r->tr_a != r->a) { /* another allocation's history, or none: a probe */
        r->tr_a = r->a;
        r->tr_dense = false;
        r->tr_skip = r->tr_backoff = 0;
        probe = true;
    }
    if (r->tr_dense && r->tr_skip > 0 && !r->hist_probe) {
        r->tr_skip--;
        return VM_TRACK_NONE;
    }
    /* The back-off is over - or the lazy history's wait is (r->hist_probe): the probe then,
     * unless the tracking's history is sparse, whose whole tracking counts exactly for less. */
    probe |= r->tr_dense;
    /* The break-even for this lock, from the costs measured on this machine. */
    struct vmos_wtrack_costs c;
    r->tr_limit = UINT64_MAX;
    if (vmos_wtrack_measure(false, &c) != 0)
        return VM_TRACK_WHOLE; /* nothing measured (no write-watch here, likely: a snapshot) */
    /* Read with the device mutex released (range_open()): vm_note_move() stores atomically. */
    const uint32_t mv = __atomic_load_n(&dev->move_ns[0], __ATOMIC_RELAXED);
    const double move = mv ? mv : VM_MOVE_COPY_NS;
    const double n = (double)npages;
    const double w = (n * move - (double)c.fixed_ns - n * (double)c.arm_ns) / ((double)c.fault_ns + move);
    r->tr_limit = w <= 0 ? 0 : (uint64_t)w;
    if (!probe)
        return VM_TRACK_WHOLE;
    const double budget = n * move / VM_WATCH_BUDGET_DIV - (double)c.fixed_ns * VM_TRACK_PROBE_SPANS;
    const double per = ((double)c.arm_ns + (double)c.fault_ns) * VM_TRACK_PROBE_SPANS;
    double span = per > 0 ? budget / per : n;
    if (span < VM_WATCH_MIN_WINDOW)
        span = VM_WATCH_MIN_WINDOW; /* a little over the budget rather than no verdict ever */
    if (span * VM_TRACK_PROBE_SPANS >= n)
        return VM_TRACK_WHOLE; /* a small view: the probe would be all of it */
    r->tr_n = (uint32_t)span;
    const uint32_t stride = (uint32_t)(npages / VM_TRACK_PROBE_SPANS);
    /* From probe to probe the runs move along their stride (a pattern that misses one set of
     * them may not miss the next). */
    r->tr_stride = stride;
    r->tr_lo = (uint32_t)(((uint64_t)r->tr_probes++ * r->tr_n) % (stride - r->tr_n + 1));
    return VM_TRACK_PROBE;
}

/* range_note_dense(): the lock ending on range 'r' wrote past the break-even: the next 2, 4 ...
 * 16 eager locks go untracked. */
static void range_note_dense(struct vm_range *r)
{
    r->tr_backoff = r->tr_backoff == 0 ? 2 : r->tr_backoff * 2;
    if (r->tr_backoff > VM_TRACK_BACKOFF_MAX)
        r->tr_backoff = VM_TRACK_BACKOFF_MAX;
    r->tr_skip = r->tr_backoff;
    r->tr_dense = true;
}

/* range_note_track(): the tracked eager lock ending on range 'r' saw 'written' pages written. */
static void range_note_track(struct vm_range *r, uint64_t written)
{
    if (written > r->tr_limit) {
        range_note_dense(r);
    } else {
        r->tr_dense = false;
        r->tr_backoff = 0;
    }
}

/* range_want_lazy(): whether the lock opening range 'r' for a 'need' bytes view ('writable')
 * goes lazy.
 *
 * The first writable lock of an allocation (nothing known) goes eager where its write-watch can
 * probe it (range_want_track(): untracked, the whole part tiled back), so that it costs what
 * the eager untracked lock does whatever it writes; the probe's verdict stands for its cost
 * (range_note_eager()): a sparse one makes the next lock lazy, a dense one eager. Lazy, that
 * first lock cost on the Zen 4 (2 vCPUs, loaded; bench_lock_paths 5 fresh, medians, against the
 * eager untracked lock) 0.01x for one page written and 0.2-0.3x for 1% spread, but 1.9-2.7x
 * for every page (its stream counted) and 2.1-2.5x for every tenth page (a fault each): a
 * lazy view's faults cost more than they save once a lock writes a few percent of the pages,
 * and a first lock cannot be told from its history. A READ_ONLY first lock stays lazy: it
 * tiles nothing back, and what it reads is never known to a write-watch. */
static bool range_want_lazy(const vidmm_device *dev, struct vm_range *r, size_t need, bool writable)
{
    const bool unresolved = r->hist_probe; /* the last lock's eager probe gave no verdict */
    r->hist_eager = false;
    r->hist_probe = false;
    if (!dev->lazy_ranges || r->lazy_failed || dev->lazy_always)
        return true; /* no lazy view to choose, or no choice */
    if (r->hist_a != r->a) { /* another allocation's history, or none */
        r->hist_a = r->a;
        r->hist_cost = UINT64_MAX;
        r->hist_skip = r->hist_backoff = 0;
        r->hist_waiting = r->hist_sparse = r->hist_guess = false;
        if (writable && r->part.whole && dev->range_watch && !r->ww_failed && !dev->range_untracked) {
            r->hist_eager = true; /* a probe: range_note_eager() gives the cost */
            return false;
        }
        return true;
    }
    if (r->hist_cost == UINT64_MAX)
        return true;
    if (r->hist_cost < need) {
        /* Lazy paid: a dense lock from here waits 2 locks again - unless the cost is an eager
         * probe's guess (its writes only): a writer that reads everything and writes little
         * keeps its wait growing. */
        if (!r->hist_guess)
            r->hist_backoff = 0;
        r->hist_sparse = false;
        return true;
    }
    if (unresolved)
        return true; /* a lazy probe instead, as where no write-watch could probe */
    /* The last lazy lock cost more than the eager untiling: eager, 2, 4, ... 16 locks, then a
     * probe (its own cost replaces this one at its end). A writable lock probes eager where its
     * write-watch can: the untracked lock with a few runs of pages watched (range_want_track(),
     * at most 1/40 of the tile-back), the pages it wrote, extrapolated, its lazy cost - a sparse
     * verdict makes the next lock lazy, a dense one waits on. A lazy probe costs what the lazy
     * lock does: for a writer of every tenth page of a 64 MiB surface 68-71 ms against 19-22 ms
     * eager, every 2-16 locks (Zen 3, bench_lock_paths 21 range: its means 1.6x the eager
     * ones). What a writable lock reads is not seen so: the lazy lock after a sparse verdict
     * measures it, as before. A READ_ONLY lock probes lazy, and so does the lock after an eager
     * one whose write-watch saw little written (range_note_eager(): a verdict already). */
    if (!r->hist_waiting) {
        r->hist_sparse = false; /* a verdict of the wait's own locks, from here */
        r->hist_backoff = r->hist_backoff == 0 ? 2 : r->hist_backoff * 2;
        if (r->hist_backoff > VM_LAZY_BACKOFF_MAX)
            r->hist_backoff = VM_LAZY_BACKOFF_MAX;
        r->hist_skip = r->hist_backoff;
        r->hist_waiting = true;
    }
    if (r->hist_skip > 0) {
        r->hist_skip--;
        r->hist_eager = true;
        return false;
    }
    r->hist_waiting = false;
    const bool sparse = r->hist_sparse;
    r->hist_sparse = false;
    if (!sparse && writable && r->part.whole && dev->range_watch && !r->ww_failed && !dev->range_untracked) {
        r->hist_eager = true;
        r->hist_probe = true; /* range_want_track() probes; range_note_eager() gives the cost */
        return false;
    }
    return true;
}

/* range_lazy_drop() ends the lock's use of a lazy view: no more fills, its pages dropped. */
static void range_lazy_drop(struct vm_range *r)
{
    if (!r->lazy_armed)
        return;
    struct vmos_lazy_stats st = { 0, 0, false };
    vmos_lazy_disarm(r->lazy, &st);
    range_note_lazy(r, &st);
    r->lazy_armed = false;
    vm_lazy_fill_free(r->fill);
    r->fill = NULL;
}

static void range_release(vidmm_device *dev, uint32_t id)
{
    struct vm_range *r = &dev->ranges[id];
    range_lazy_drop(r); /* the allocation goes, or its lock ended without an unlock */
    r->hist_a = NULL;   /* its history with it (a new allocation may get the same address) */
    r->tr_a = NULL;
    if (!r->acquired)
        return;
    if (dev->drv.release_swizzling_range) {
        struct vidmm_swizzling_range_args x;
        range_args(dev, r, id, &x);
        pthread_mutex_lock(&dev->range_cb_mu);
        dev->drv.release_swizzling_range(dev->drv.arg, &x); /* released per RangeId (spec 8.3) */
        pthread_mutex_unlock(&dev->range_cb_mu);
    }
    if (r->a->range == (int)id)
        r->a->range = -1;
    r->acquired = false;
    r->active = false;
    r->a = NULL;
    dev->st.ranges_released++;
}

void vm_range_release_alloc(vidmm_device *dev, struct vm_alloc *a)
{
    for (uint32_t i = 0; i < dev->nranges; i++)
        if (dev->ranges[i].acquired && dev->ranges[i].a == a)
            range_release(dev, i);
    a->range = -1;
}

/* The least recently used acquired range outside any lock, or -1. */
static int range_lru(const vidmm_device *dev)
{
    int best = -1;
    for (uint32_t i = 0; i < dev->nranges; i++) {
        const struct vm_range *r = &dev->ranges[i];
        if (r->acquired && !r->active && (best < 0 || r->lru < dev->ranges[best].lru))
            best = (int)i;
    }
    return best;
}

/* range_acquire(): a range for (a, private_data): the cached one, or a free one programmed by
 * the driver, releasing unused ones while the driver says UNAVAILABLE. Returns the range ID or
 * -1 when none can be had (UNSUPPORTED, or every range released and still UNAVAILABLE). */
static int range_acquire(vidmm_device *dev, struct vm_alloc *a, uint32_t private_data, uint64_t *addr)
{
    for (uint32_t i = 0; i < dev->nranges; i++) {
        struct vm_range *r = &dev->ranges[i];
        if (r->acquired && r->a == a && r->private_data == private_data) {
            r->lru = ++dev->clock;
            return (int)i; /* cached: the driver is not called again (spec 8.3) */
        }
    }
    for (;;) {
        int id = -1;
        for (uint32_t i = 0; i < dev->nranges && id < 0; i++)
            if (!dev->ranges[i].acquired)
                id = (int)i;
        if (id < 0) {
            id = range_lru(dev);
            if (id < 0)
                return -1;
            range_release(dev, (uint32_t)id); /* another allocation needs the range */
        }
        struct vm_range *r = &dev->ranges[id];
        r->a = a;
        r->private_data = private_data;
        r->segment_id = a->seg ? a->seg->id : 0;
        uint32_t st = VIDMM_STATUS_SUCCESS;
        struct vidmm_swizzling_range_args x;
        range_args(dev, r, (uint32_t)id, &x);
        if (dev->drv.acquire_swizzling_range) {
            pthread_mutex_lock(&dev->range_cb_mu);
            st = dev->drv.acquire_swizzling_range(dev->drv.arg, &x);
            pthread_mutex_unlock(&dev->range_cb_mu);
        }
        if (st == VIDMM_STATUS_SUCCESS) {
            r->acquired = true;
            r->lru = ++dev->clock;
            if (addr)
                *addr = x.cpu_translated_address;
            dev->st.ranges_acquired++;
            return id;
        }
        r->a = NULL;
        if (st != VIDMM_STATUS_UNSWIZZLING_APERTURE_UNAVAILABLE)
            return -1; /* UNSUPPORTED (or an error): no retry */
        /* UNAVAILABLE: release an unused range and retry; none left to release: fail. */
        int victim = range_lru(dev);
        if (victim < 0)
            return -1;
        range_release(dev, (uint32_t)victim);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Renaming (spec 7, 15.18).
 * ------------------------------------------------------------------------------------------- */
/* rename_for_discard(): the instance a Discard lock gets (spec 7, 15.18): the current one when
 * idle, else another idle one (the next in the ring), else a new one. Never an instance a
 * submitted, unsignalled operation still references - with NoExistingReference too: the
 * caller's promise covers its own references, not the GPU's - and never one that is locked (its
 * lock count and pointer belong to another lock). */
static int rename_for_discard(vidmm_device *dev, struct vm_alloc **pa)
{
    struct vm_group *g = (*pa)->g;
    for (uint32_t k = 0; k < g->ninst; k++) {
        struct vm_alloc *c = g->inst[(g->current + k) % g->ninst];
        if (vm_busy(dev, c, false) || c->lock_count || c->hold)
            continue;
        if (k) {
            g->current = c->index;
            c->seq = ++dev->clock;
            dev->st.renames++;
        }
        *pa = c;
        return 0;
    }
    if (g->desc.max_renaming && g->ninst >= g->desc.max_renaming)
        return VIDMM_E_BUSY; /* cannot create or reuse an instance */
    struct vm_alloc *n = vm_instance_new(dev, g);
    if (!n)
        return VIDMM_E_BUSY;
    g->current = n->index;
    *pa = n;
    dev->st.renames++;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Locking.
 * ------------------------------------------------------------------------------------------- */
static void cache_invalidate(vidmm_device *dev, void *p, size_t n)
{
    if (dev->drv.invalidate_cpu_cache)
        dev->drv.invalidate_cpu_cache(dev->drv.arg, p, n);
    else
        vidmm_flush(p, n, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
    dev->st.cache_invalidates++;
}

static void note_dirty_pages(struct vm_alloc *a, const struct vidmm_lock_args *args)
{
    if (!args->page_count) {
        if (a->wt == NULL)
            a->dirty_all_pages = true; /* else the tracker says which, at the end */
        return;
    }
    if (a->ndirty_pages + args->page_count > a->cap_dirty_pages) {
        uint32_t cap = a->ndirty_pages + args->page_count;
        uint32_t *p = realloc(a->dirty_pages, sizeof *p * cap);
        if (!p) {
            a->dirty_all_pages = true; /* cannot list them: treat every page as written */
            return;
        }
        a->dirty_pages = p;
        a->cap_dirty_pages = cap;
    }
    memcpy(a->dirty_pages + a->ndirty_pages, args->pages, sizeof(uint32_t) * args->page_count);
    a->ndirty_pages += args->page_count;
}

/* ---------------------------------------------------------------------------------------------
 * What a plain lock's CPU writes touch (issue 16). A writable plain lock without a page list
 * says nothing about what the CPU will write, so its end used to copy back (PermanentSysMem
 * resident in a segment) or its next submission flush (Cached, non-coherent) the whole
 * allocation. Where it pays, the lock instead arms a write tracker (os.h vmos_wtrack_*) over
 * what it hands out - the arena for backing stores, a memory segment's memory - and its end
 * collects the pages written: the copy-back and the flush cover those pages only.
 * ------------------------------------------------------------------------------------------- */

/* Below this size a whole copy-back or flush costs less than arming and collecting (about
 * 10 us of system calls; a 64 KiB copy or flush takes 3-6 us). */
#define VM_WATCH_MIN_BYTES VM_MOVE_TIMED_MIN

/* The policy (issue 31): tracking that never costs more than it saves. What tracking a lock
 * costs, per 4 KiB page, measured on the project's Intel machine kind (Xeon Cascade Lake KVM, 2
 * vCPUs, Linux 6.18; `build/release/bench/bench_track_costs 5 64`, medians, us):
 *
 *   memory     arm        lift       scan    async fault  sync fault  write after lift  memcpy    vidmm_flush
 *   anonymous  0.11-0.34  0.09-0.13  0.003   1.5-3.3      10-23       0.03              0.8-1.5   0.15-0.37
 *   memfd      0.07-0.14  0.07-0.13  0.003   1.5-2.0      7.7-19      1.5-2.3           0.8-1.2   0.13-0.17
 *
 * (three runs, load 2-8; 'arm' there was UFFDIO_WRITEPROTECT, which rewrites every entry: arming
 * now goes through PAGEMAP_SCAN and touches only the pages not protected already - writewatch.c
 * uffd_protect(): a repeated lock of a populated 64 MiB store that wrote one page last time arms
 * in 20-40 us, not 1.2-2.9 ms), and the engine's own whole flush of a 64 MiB Cached allocation at the
 * submission took 28-48 ms, 1.7-3 us a page (`bench_lock_paths 9 plain`, VIDMM_LOCK_DIRTY=off).
 * A page written under the tracking takes a fault that costs about twice what copying it back
 * does, so a lock that writes most of its pages cost up to 3x the untracked one (52 against 17
 * ms for 64 MiB written whole, before this policy), while one page written is 20x (copy-back)
 * to 300x (flush) cheaper. A synchronous fault (a handler thread that could count the faults
 * and stop the tracking after a budget) costs 8-23 us here: a budget of 5% of the move allows
 * one fault in 10-25 pages, so counting faults live would give up every lock past 1-4% written,
 * where the asynchronous faults still win 5-10x. Hence:
 *
 *   - The break-even written fraction of a lock of N pages, f* = (N * move - fixed - N * arm) /
 *     (N * (fault + move)), comes from the figures measured on this machine: 'fault', 'arm' and
 *     'fixed' once per process on a scratch mapping (os.h vmos_wtrack_measure()), 'move' from
 *     the device's own large copies and flushes (vm_note_move(); before the first one, 400 ns a
 *     page for a copy and 200 ns for a flush - perf-notes' Sapphire Rapids memcpy at 64 MiB and
 *     CLFLUSHOPT: low on purpose, the side that tracks less).
 *   - A lock of an allocation whose last tracked lock wrote less than f* is tracked whole.
 *   - The first lock with nothing known (not a hole, see below) goes untracked.
 *   - Otherwise (no history yet: the second lock; or the last one was dense, and the back-off of
 *     2, 4 ... 64 untracked locks is over) the lock is a probe: it arms one
 *     window of the pages, in one call, sized so that it costs at most 1/40 of the move if every
 *     page of it is written; the pages outside count as written (moved as untracked). The
 *     written fraction inside says how the next locks go. The window moves along the
 *     allocation from probe to probe (a write pattern packed at one end misleads one probe only).
 *     Where even the smallest useful window (16 pages) does not fit the budget, or arming alone
 *     costs the whole move, the lock goes untracked.
 *   - Cheap evidence during the lock: a writable relock of a tracked lock counts the pages
 *     written so far (a PAGEMAP_SCAN that changes nothing); past f* the tracking of the rest is
 *     lifted in one call and the whole lock counts as written ("dense").
 *   - Known before the bytes move: a backing store that is a hole in the arena's memfd (a fresh
 *     PermanentSysMem allocation: never written, or released since) needs no write-protection
 *     at all - a write to a hole allocates a page, so the pages that hold data at the end of the
 *     lock (os.h vmos_arena_data(): SEEK_DATA, swapped-out pages included) are the ones written,
 *     or read (a superset: a read of a hole allocates too). No fault beyond the one the write
 *     takes anyway, where arming a hole would add one a page. The untracked copy-back of such a
 *     store reads every hole, which allocates a page each: 80-250 ms for 64 MiB here, against
 *     15-35 ms for a populated one (bench_lock_paths 9 plain, "fresh" rows).
 *   - Shared memory's own costs: the arena is registered with its tracker backing store by
 *     backing store, at the first armed lock, until the store's release (a registration makes
 *     every first write into a hole of the mapping 1-2.5 us slower: a whole-arena registration
 *     taxed every new backing store, 1.19-1.27x on fresh 100% rows); and its pages are not lifted
 *     at the end of a lock (watch_end()).
 *   - Private memory (a segment's: the flushes of Cached allocations) is not lifted at the end
 *     of a lock either, since arming goes through PAGEMAP_SCAN: the lift of 64 MiB cost 2.1-3.4
 *     ms on the Zen 3, more than the whole flush it saves (1.3 ms there), and the next lock's
 *     arm protects only the pages written since. The pages left armed are lifted when another
 *     writer comes (vm_watch_leave()): the allocation leaving its place (the next occupant),
 *     an untracked writable lock (mark_written()), a submission letting the GPU write it
 *     (submit.c vm_cache_gpu_use(); its locks lift at their end from then on, a->wt_lift).
 *     watch_arm_cost() prices each case.
 *
 * VIDMM_LOCK_DIRTY (read at the device's first lock that could track): off - never; always -
 * every lock tracked whole, no back-off, the relock switch at half the pages (tests); probe -
 * every lock a probe over an eighth of the pages, the same switch (tests); data - a store with
 * holes by its data, nothing armed or measured (below). */
#define VM_FRAC_ONE 4096u         /* fractions are kept in 1/4096 */
#define VM_FRAC_NEVER 0xFFFFu     /* a break-even no lock reaches */


uint64_t vm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void vm_note_move(vidmm_device *dev, int kind, uint64_t ns, uint64_t bytes)
{
    if (bytes < VM_WATCH_MIN_BYTES)
        return;
    uint64_t per = ns * VIDMM_PAGE_SIZE / bytes;
    per = per ? (per < UINT32_MAX / 4 ? per : UINT32_MAX / 4) : 1;
    uint32_t *m = &dev->move_ns[kind];
    const uint32_t old = *m; /* written under the device mutex only; range_want_track() reads it without */
    __atomic_store_n(m, old ? (uint32_t)((3u * (uint64_t)old + per) / 4u) : (uint32_t)per, /* a running average */
                     __ATOMIC_RELAXED);
}

/* What 'wt' points at in a lock of a hole (wt_hole): no tracker, but a lock that is tracked. */
static _Alignas(16) char vm_wt_hole_mark; /* never read: its address is the mark */
#define VM_WT_HOLE ((struct vmos_wtrack *)(void *)&vm_wt_hole_mark)

/* watch_tracker() is the tracker of the pool holding [p, p + n), made on first need; NULL
 * when there is none (the caller's own memory, a window, a kernel without WP_ASYNC). */
static struct vmos_wtrack *watch_tracker(vidmm_device *dev, const struct vm_alloc *a, const uint8_t *p, size_t n)
{
    if (dev->wtracks == NULL && (dev->wtracks = calloc(1, sizeof *dev->wtracks)) == NULL)
        return NULL;
    struct vm_wtracks *w = dev->wtracks;
    if (dev->arena.base && p >= dev->arena.base && n <= dev->arena.reserve &&
        (size_t)(p - dev->arena.base) <= dev->arena.reserve - n) {
        /* Registered allocation by allocation (vmos_wtrack_register(), watch_arm()): a
         * registration of the whole arena would slow every first write into its holes - every
         * new backing store's - by 1-2.5 us a page. */
        if (w->arena == NULL && !w->arena_failed &&
            vmos_wtrack_create_lazy(dev->arena.base, dev->arena.reserve, &w->arena) != 0) {
            w->arena_failed = true;
            vidmm_log(VIDMM_LOG_DEBUG, "plain locks: no userfaultfd write-protect for the backing stores here; "
                                       "a writable lock without a page list counts every page as written");
        }
        return w->arena_failed ? NULL : w->arena;
    }
    const struct vm_segment *s = a->seg;
    if (a->where != VIDMM_WHERE_SEGMENT || s->aperture || s->mem.base == NULL || p < s->cpu ||
        n > s->mem.map_size || (size_t)(p - (const uint8_t *)s->mem.base) > s->mem.map_size - n)
        return NULL;
    const uint32_t i = s->id - 1;
    if (w->seg[i] == NULL && !w->seg_failed[i] && vmos_wtrack_create(s->mem.base, s->mem.map_size, &w->seg[i]) != 0) {
        w->seg_failed[i] = true;
        vidmm_log(VIDMM_LOG_DEBUG, "plain locks: no userfaultfd write-protect for segment %u's memory here", s->id);
    }
    return w->seg[i];
}

/* What one lock arms: pages [lo, lo + n) (n == 0: nothing), and its break-even fraction. */
struct watch_plan {
    uint32_t lo, n;
    uint16_t fstar;
};

/* watch_arm_cost() is what arming and collecting a lock of 'a' costs a page ('c' measured on
 * memory of kind 'shared'). Shared memory is never lifted (watch_end()) but keeps the measured
 * arm + scan + lift; private memory (a segment's, for the flushes of Cached allocations) is left
 * armed at the end of a lock too unless the GPU writes the allocation (a->wt_lift), and lifted
 * once when it leaves its place (vm_watch_leave()): a lock of memory left armed costs the arm's
 * walk, which protects only the pages written since (the last lock's share of them), and the
 * collect's, both past protected pages (scan_ns); a first one the protection of every page, the
 * scan and a quarter of that last lift (charged to the first 4 locks of a residency, which it
 * then pays off - a guess: one lock and an eviction pay the lift whole). */
#define VM_LIFT_SHARE 4.0
/* A scan's walk past a page, at least: the scratch mapping's 64 pages scan in about the time of
 * one (scan_ns reads 0 there); vmos_wtrack_count() measured about 2 ns a page over 64 MiB with few
 * written (the Cascade Lake KVM machine, bench_track_costs). */
#define VM_SCAN_MIN_NS 2.0
static double watch_arm_cost(const struct vm_alloc *a, bool shared, const struct vmos_wtrack_costs *c)
{
    if (shared || a->wt_lift)
        return (double)c->arm_ns;
    const double frac = a->wt_seen ? (double)a->wt_frac / VM_FRAC_ONE : 1.0;
    const double scan = c->scan_ns > VM_SCAN_MIN_NS ? (double)c->scan_ns : VM_SCAN_MIN_NS;
    if (a->wt_left != NULL) /* two walks past protected pages (arm, collect), the written re-armed */
        return 2.0 * scan + frac * c->protect_ns;
    return (double)c->protect_ns + scan + c->lift_ns / VM_LIFT_SHARE;
}

/* private_trackable() tells whether the policy may track a lock of 'a' in its segment's own
 * memory (the flush of a Cached allocation): not on huge pages - write-protecting them splits
 * them, and every later access pays the base-page walks (bench_lock_paths plain, Cached, Zen 3:
 * fresh rows 1.15-1.26x tracked on the THP tier against 0.96-1.01x on base pages). The scratch
 * mapping that measures the costs is on base pages and cannot see it: such memory is flushed
 * whole (and no tracker is made for it: watch_arm()). Nor memory that snoops: nothing is
 * flushed there (submit.c vm_cache_gpu_use()), and its locks' pages are never left armed
 * (watch_end()). */
static bool private_trackable(const struct vm_alloc *a)
{
    return a->seg != NULL && !(a->seg->flags & VIDMM_SEGMENT_CACHE_COHERENT) && a->seg->mem.tier == VMOS_TIER_BASE;
}

/* watch_plan() decides how lock 'a' (a PermanentSysMem copy-back, or a flush when 'flush') on
 * memory of kind 'shared' is tracked: see "The policy" above. False: not at all. */
static bool watch_plan(vidmm_device *dev, struct vm_alloc *a, bool shared, bool flush, struct watch_plan *pl)
{
    const uint64_t npages = a->g->size / VIDMM_PAGE_SIZE;
    if (npages == 0 || npages > UINT32_MAX)
        return false;
    pl->lo = 0;
    pl->n = (uint32_t)npages;
    if (dev->lock_watch == VM_WATCH_ALWAYS || dev->lock_watch == VM_WATCH_PROBE) {
        pl->fstar = VM_FRAC_ONE / 2;
        if (dev->lock_watch == VM_WATCH_PROBE) {
            pl->n = (uint32_t)(npages / 8 ? npages / 8 : 1);
            pl->lo = (uint32_t)(((uint64_t)a->wt_probes++ * pl->n) % npages);
            if (pl->lo > npages - pl->n)
                pl->lo = (uint32_t)(npages - pl->n);
        }
        return true;
    }
    if (!shared && !private_trackable(a))
        return false;
    struct vmos_wtrack_costs c;
    if (vmos_wtrack_measure(shared, &c) != 0)
        return false;
    const double arm = watch_arm_cost(a, shared, &c);
    const double move = dev->move_ns[flush] ? dev->move_ns[flush] : (flush ? VM_MOVE_FLUSH_NS : VM_MOVE_COPY_NS);
    const double whole = move * (double)npages, fixed = (double)c.fixed_ns + arm * (double)npages;
    /* Private memory's break-even at half the model's: "10%, populated repeated" on base pages
     * ran 1.66-1.86x tracked where the model put the break-even at 12-16% (Zen 3 KVM guest; the
     * segment's first-write faults cost more there than on the scratch mapping). */
    const double margin = shared ? 1.0 : 0.5;
    const double f = margin * (whole - fixed) / ((double)npages * ((double)c.fault_ns + move));
    if (f <= 0)
        return false; /* arming and collecting alone cost the whole move */
    pl->fstar = f >= 1 ? VM_FRAC_NEVER : (uint16_t)(f * VM_FRAC_ONE > 1 ? f * VM_FRAC_ONE : 1);
    if (a->wt_seen && a->wt_frac < pl->fstar)
        return true; /* the last tracked lock was sparse: all of it */
    if (!a->wt_met) {
        /* The first lock with nothing known: untracked, exactly the untracked cost. Probing it
         * measured 1.07-1.19x on fresh 64 MiB Cached allocations (bench_lock_paths plain),
         * above the probe's 2.5% budget: a window's faults there cost more than the scratch
         * mapping's calibration says (the segment's huge pages split by the write-protection,
         * perhaps: not verified). */
        a->wt_met = true;
        return false;
    }
    /* A probe: the window whose every page written costs 1/40 of the move (half the 10% the
     * target allows: the figures are estimates, and the machine is noisy). */
    const double budget = whole / VM_WATCH_BUDGET_DIV - (double)c.fixed_ns;
    const double per = arm + (double)c.fault_ns;
    const double w = per > 0 ? budget / per : (double)npages;
    if (w < VM_WATCH_MIN_WINDOW)
        return false;
    if (w < (double)npages) {
        pl->n = (uint32_t)w;
        pl->lo = (uint32_t)(((uint64_t)a->wt_probes++ * pl->n) % npages);
        if (pl->lo > npages - pl->n)
            pl->lo = (uint32_t)(npages - pl->n);
    }
    return true;
}

void vm_watch_forget(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->wt_reg == NULL)
        return;
    if (dev->wtracks != NULL && dev->wtracks->arena != NULL)
        (void)vmos_wtrack_unregister(dev->wtracks->arena, a->wt_reg, (size_t)a->g->size);
    a->wt_reg = NULL;
}

void vm_watch_leave(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->wt_left == NULL)
        return;
    struct vmos_wtrack *t = dev->wtracks != NULL && a->seg != NULL ? dev->wtracks->seg[a->seg->id - 1] : NULL;
    if (t != NULL && vmos_wtrack_disarm(t, a->wt_left, (size_t)a->g->size) != 0)
        vidmm_log(VIDMM_LOG_DEBUG, "plain locks: lifting the write-protection a lock left on allocation 0x%llx failed: "
                                   "later writes there take a fault a page", (unsigned long long)a->handle);
    a->wt_left = NULL;
}

/* watch_lock() arms the write tracking of a plain writable lock of 'a' at 'p' (its whole
 * content) when an unlock or a submission would otherwise move or flush all of it. The test
 * every lock pays is inline; the rest is not (lock_unlock in the gate). */
static __attribute__((noinline)) void watch_arm(vidmm_device *dev, struct vm_alloc *a, uint8_t *p);

static VIDMM_FORCEINLINE void watch_lock(vidmm_device *dev, struct vm_alloc *a, const struct vidmm_lock_args *args,
                                         uint8_t *p)
{
    if (a->g->size >= VM_WATCH_MIN_BYTES && a->wt == NULL && !args->page_count && dev->lock_watch != VM_WATCH_OFF)
        watch_arm(dev, a, p);
}

static void watch_arm(vidmm_device *dev, struct vm_alloc *a, uint8_t *p)
{
    const struct vm_group *g = a->g;
    if (dev->lock_watch == VM_WATCH_UNKNOWN) {
        const char *env = getenv("VIDMM_LOCK_DIRTY"); /* here, not at creation: devices that never
                                                         lock a large allocation do not pay it */
        dev->lock_watch = VM_WATCH_AUTO;
        if (env != NULL && strcmp(env, "off") == 0)
            dev->lock_watch = VM_WATCH_OFF;
        else if (env != NULL && strcmp(env, "always") == 0)
            dev->lock_watch = VM_WATCH_ALWAYS;
        else if (env != NULL && strcmp(env, "probe") == 0)
            dev->lock_watch = VM_WATCH_PROBE;
        else if (env != NULL && strcmp(env, "data") == 0)
            dev->lock_watch = VM_WATCH_DATA;
        if (dev->lock_watch == VM_WATCH_OFF)
            return;
    }
    const bool copy_back = sysmem_backed(g) && a->where == VIDMM_WHERE_SEGMENT;
    if (!copy_back && !(g->desc.flags & VIDMM_ALLOC_CACHED))
        return;
    struct watch_plan pl;
    size_t data = 1;
    const uint32_t npages = (uint32_t)(g->size / VIDMM_PAGE_SIZE);
    bool have_plan = false; /* a store with holes whose lock is tracked whole: 'pl' */
    const bool by_data = dev->lock_watch == VM_WATCH_DATA;
    const bool arena_store = copy_back && (dev->lock_watch == VM_WATCH_AUTO || by_data) && dev->arena.base &&
                             p >= dev->arena.base && (size_t)(p - dev->arena.base) <= dev->arena.reserve - (size_t)g->size;
    if (arena_store &&
        vmos_arena_data(&dev->arena, (size_t)(p - dev->arena.base), (size_t)g->size, NULL, &data) == 0 &&
        (data == 0 || a->wt_holey)) {
        /* A hole: tracked by what holds data at the end, whatever the back-off says, with no
         * tracker (none is made for it: a userfaultfd registration of the arena makes every
         * later first write to a hole of it slower, 1-2 us a page measured).
         * A store with holes left (a->wt_holey): the same, unless the lock is tracked whole -
         * the pages holding data at the end are the ones written or holding data before (a
         * superset: a write to a hole fills it). A probe's pages outside its window, or an
         * untracked lock's, would otherwise be copied back whole, every hole read - which
         * allocates a page each: the second lock of a fresh 64 MiB store with 1% written took
         * 63 ms so, against 4 for a populated one (bench_lock_paths plain, Zen 3). */
        const bool planned = !by_data && watch_plan(dev, a, true, false, &pl);
        const bool whole = planned && data != 0 && a->wt_skip == 0 && pl.lo == 0 && pl.n == npages;
        if (!whole) {
            if (a->wt_skip > 0 && data != 0)
                a->wt_skip--; /* the back-off runs on (watch_done()) */
            a->wt = VM_WT_HOLE;
            a->wt_ptr = p;
            a->wt_lo = 0;
            a->wt_n = npages;
            a->wt_fstar = planned ? pl.fstar : VM_FRAC_NEVER;
            a->wt_dense = false;
            a->wt_hole = true;
            return;
        }
        have_plan = true;
    }
    if (by_data)
        return; /* no holes (or not a store): untracked */
    if (!copy_back && dev->lock_watch == VM_WATCH_AUTO && !private_trackable(a))
        return; /* a flush of huge pages: whole (watch_plan()) */
    struct vmos_wtrack *t = watch_tracker(dev, a, p, (size_t)g->size);
    if (t == NULL)
        return;
    const bool shared = t == dev->wtracks->arena;
    if (have_plan) {
        /* planned above: tracked whole */
    } else if (a->wt_skip > 0) {
        a->wt_skip--; /* recent locks wrote much of it: not watched for a while (watch_done()) */
        return;
    } else if (!watch_plan(dev, a, shared, !copy_back, &pl)) {
        return;
    }
    if (shared && a->wt_reg != p) {
        if (a->wt_reg != NULL) { /* cannot happen: a backing store does not move while it lives */
            (void)vmos_wtrack_unregister(t, a->wt_reg, (size_t)g->size);
            a->wt_reg = NULL;
        }
        const int rc = vmos_wtrack_register(t, p, (size_t)g->size);
        if (rc == VIDMM_E_UNSUPPORTED) {
            dev->wtracks->arena_failed = true; /* as if it could not be made: nothing is tracked */
            vidmm_log(VIDMM_LOG_DEBUG, "plain locks: the kernel refused a userfaultfd write-protect registration of "
                                       "a backing store: a writable lock without a page list counts every page as written");
        }
        if (rc != 0)
            return;
        a->wt_reg = p;
    }
    /* A window (a probe) of memory a whole lock left armed: the pages outside it would take a
     * fault each, untracked (a probe's outside counts as written): lifted first. The windows
     * lift at their end (watch_end()), so what is left armed is always a whole lock's. */
    if (a->wt_left != NULL && (pl.lo != 0 || (uint64_t)pl.n * VIDMM_PAGE_SIZE != g->size))
        vm_watch_leave(dev, a);
    if (vmos_wtrack_arm(t, p + (size_t)pl.lo * VIDMM_PAGE_SIZE, (size_t)pl.n * VIDMM_PAGE_SIZE) == 0) {
        a->wt = t;
        a->wt_ptr = p;
        a->wt_lo = pl.lo;
        a->wt_n = pl.n;
        a->wt_fstar = pl.fstar;
        a->wt_dense = false;
        a->wt_hole = false;
    }
}

/* watch_recheck(): a writable relock inside a tracked lock - the evidence so far. Past the
 * break-even, the tracking of the rest is lifted in one call and the lock counts as dense: its
 * end moves or flushes every page, and the pages it has not written yet take no fault. */
static __attribute__((noinline)) void watch_recheck(struct vm_alloc *a)
{
    if (a->wt == NULL || a->wt_dense || a->wt_hole || a->wt_fstar == VM_FRAC_NEVER)
        return; /* (a hole's lock has nothing armed to lift) */
    uint8_t *w = a->wt_ptr + (size_t)a->wt_lo * VIDMM_PAGE_SIZE;
    const size_t len = (size_t)a->wt_n * VIDMM_PAGE_SIZE;
    size_t seen = 0;
    if (vmos_wtrack_count(a->wt, w, len, &seen) != 0 || (uint64_t)seen * VM_FRAC_ONE < (uint64_t)a->wt_fstar * a->wt_n)
        return;
    /* Failing, the pages stay armed: the end collects them as usual, nothing is lost. */
    if (vmos_wtrack_disarm(a->wt, w, len) == 0) {
        a->wt_dense = true;
        if (a->wt_left == a->wt_ptr && a->wt_lo == 0 && a->wt_n == a->g->size / VIDMM_PAGE_SIZE)
            a->wt_left = NULL; /* what was left armed is lifted with it */
    }
}

/* watch_end() ends the write tracking of a lock: returns the pages written under it (a bitmap
 * of the allocation's pages, to free; the pages outside a probe's window set), or NULL when
 * every page counts as written (the copy-back, the flush): the lock went dense, or the pages
 * could not be known. '*seen' receives the pages written inside the armed window, '*known'
 * whether that count means anything.
 *
 * The lift: on shared memory (the arena's memfd) lifting the protection leaves every page of
 * the range read-only - the next write to each, tracked or not, takes a fault (1.5 us a page
 * measured: bench_track_costs' "touch" after a lift, Linux 6.18) - while the written pages are
 * writable already. So the arena's unwritten pages stay armed: a write to one later takes that
 * fault instead, and the next lock arms them again anyway. On private memory the lift keeps
 * pages writable and costs 0.09 us a page, less than a fault later. */
static uint64_t *watch_end(vidmm_device *dev, struct vm_alloc *a, size_t *seen, bool *known)
{
    struct vmos_wtrack *t = a->wt;
    const size_t npages = (size_t)(a->g->size / VIDMM_PAGE_SIZE), words = (npages + 63) / 64;
    const size_t lo = a->wt_lo, n = a->wt_n;
    a->wt = NULL;
    *seen = n;
    *known = a->wt_dense;
    if (a->wt_dense)
        return NULL; /* lifted already (watch_recheck()) */
    if (a->wt_hole) {
        a->wt_hole = false;
        uint64_t *hb = calloc(words, sizeof *hb);
        if (hb == NULL ||
            vmos_arena_data(&dev->arena, (size_t)(a->wt_ptr - dev->arena.base), npages * VIDMM_PAGE_SIZE, hb, seen) != 0) {
            free(hb);
            *seen = n;
            return NULL; /* every page, as untracked */
        }
        a->wt_holey = *seen < npages; /* holes left: the next locks go by the data too */
        *known = true;
        return hb;
    }
    uint8_t *w = a->wt_ptr + lo * VIDMM_PAGE_SIZE;
    /* Shared memory is never lifted (above). Private memory is where the GPU writes the
     * allocation (a->wt_lift), where the lock was a window, and in memory that snoops (no
     * flush there: submit.c does not look); otherwise a whole lock's pages stay armed until a
     * write of another kind (an untracked lock, a GPU write) or the allocation's leaving its
     * place lifts them (vm_watch_leave()). */
    const bool lift = dev->wtracks == NULL ||
                      (t != dev->wtracks->arena && (a->wt_lift || lo != 0 || n != npages || a->seg == NULL ||
                                                    (a->seg->flags & VIDMM_SEGMENT_CACHE_COHERENT)));
    if (!lift && t != dev->wtracks->arena) {
        a->wt_left = a->wt_ptr;
    }
    uint64_t *bits = calloc(words, sizeof *bits);
    uint64_t *win = bits != NULL && lo != 0 ? calloc((n + 63) / 64, sizeof *win) : bits;
    if (win == NULL || vmos_wtrack_collect(t, w, n * VIDMM_PAGE_SIZE, win, lift) != 0) {
        (void)vmos_wtrack_disarm(t, w, n * VIDMM_PAGE_SIZE);
        if (win != bits)
            free(win);
        free(bits);
        return NULL;
    }
    size_t k = 0;
    if (win != bits) {
        for (size_t i = 0; i < (n + 63) / 64; i++)
            for (uint64_t m = win[i]; m; m &= m - 1) {
                const size_t pg = lo + i * 64 + (size_t)__builtin_ctzll(m);
                bits[pg / 64] |= (uint64_t)1 << (pg % 64);
                k++;
            }
        free(win);
    } else {
        for (size_t i = 0; i < words; i++)
            k += (size_t)__builtin_popcountll(bits[i]);
    }
    /* Outside a probe's window: not watched, so written as far as anyone knows. */
    for (size_t pg = 0; pg < npages; pg++)
        if (pg < lo || pg >= lo + n)
            bits[pg / 64] |= (uint64_t)1 << (pg % 64);
    *seen = k;
    *known = true;
    return bits;
}

/* watch_done() applies what a watched lock's end found: the pages it wrote join the
 * copy-back's list (PermanentSysMem) and the pages the next submission flushes (Cached); and
 * the written fraction decides how the next locks of the allocation go (watch_plan()). */
static __attribute__((noinline)) void watch_done(vidmm_device *dev, struct vm_alloc *a)
{
    const size_t npages = (size_t)(a->g->size / VIDMM_PAGE_SIZE), words = (npages + 63) / 64;
    const uint32_t n = a->wt_n;
    size_t seen = 0;
    bool known = false;
    uint64_t *bits = watch_end(dev, a, &seen, &known);
    if (known && n != 0) {
        /* One page written in a window says little of the rest: inconclusive - the next lock
         * is tracked whole (it counts exactly), and the back-off keeps its length, so that a
         * dense one doubles it as before. Counted, a probe of 26 pages that saw the one page a
         * lock writes read 3.8% written, over a 2% break-even, and backed off - again and
         * again - a writer whose locks tracked whole cost 0.08x of the flush (Cached, 64 MiB,
         * a Zen 3 guest whose write fault costs 1.7 us: bench_lock_paths plain "1 page,
         * repeated" 0.58x). A whole lock's count is exact. */
        const bool one = n < npages && seen == 1;
        const uint64_t frac = one ? 0 : (uint64_t)seen * VM_FRAC_ONE / n;
        a->wt_seen = true;
        a->wt_frac = (uint16_t)(frac < VM_FRAC_ONE ? frac : VM_FRAC_ONE);
        /* A dense lock: the next locks of the allocation go untracked, 2, 4, ... 64 of them
         * while that goes on, then one probes again. */
        if (frac >= a->wt_fstar && dev->lock_watch == VM_WATCH_AUTO) {
            a->wt_backoff = a->wt_backoff ? (a->wt_backoff < 64 ? 2 * a->wt_backoff : 64) : 2;
            a->wt_skip = a->wt_backoff;
        } else if (!one) {
            a->wt_backoff = 0;
        }
    }
    a->wt_dense = false;
    size_t written = 0;
    for (size_t w = 0; bits != NULL && w < words; w++)
        written += (size_t)__builtin_popcountll(bits[w]);
    if (bits == NULL) {
        a->dirty_all_pages = true;
        if (a->g->desc.flags & VIDMM_ALLOC_CACHED) {
            a->cpu_wrote = true;
            a->cpu_partial = false;
        }
        return;
    }
    if (written == 0) {
        free(bits);
        return;
    }
    if (sysmem_backed(a->g) && !a->dirty_all_pages) {
        uint32_t *list = malloc(sizeof *list * written);
        if (list == NULL) {
            a->dirty_all_pages = true;
        } else {
            struct vidmm_lock_args found = { .page_count = 0 };
            for (size_t w = 0; w < words; w++)
                for (uint64_t m = bits[w]; m; m &= m - 1)
                    list[found.page_count++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(m));
            found.pages = list;
            note_dirty_pages(a, &found); /* joins the pages any relock listed */
            free(list);
        }
    }
    if (a->g->desc.flags & VIDMM_ALLOC_CACHED) {
        if (!a->cpu_wrote) {
            free(a->cpu_dirty);
            a->cpu_dirty = bits; /* handed over */
            bits = NULL;
            a->cpu_wrote = true;
            a->cpu_partial = true;
        } else if (a->cpu_partial) {
            for (size_t w = 0; w < words; w++)
                a->cpu_dirty[w] |= bits[w];
        }
    }
    free(bits);
}

/* ---------------------------------------------------------------------------------------------
 * Lazy views (VIDMM_DEVICE_LAZY_RANGES): the linear view of a range lock is filled page by page
 * on first access by the view's handler thread (os.h vmos_lazy_*), from the tiled surface,
 * which cannot move while the lock holds it.
 * ------------------------------------------------------------------------------------------- */
struct vm_lazy_sub {
    uint32_t mip, layer, w, h, d;
    uint64_t lo, size;          /* packed linear offset and bytes */
};

struct vm_lazy_fill {
    const struct vidmm_tile_layout *layout;
    const struct vidmm_surface_desc *surface;
    const uint8_t *tiled;
    size_t tiled_size;
    uint32_t elem, nsub;
    size_t linear_end;          /* the end of the last subresource: zeros after it */
    struct vm_lazy_sub *sub;
    uint8_t *tmp;               /* one row of mip 0 plus an element: partial rows go through it */
};

void vm_lazy_fill_free(struct vm_lazy_fill *f)
{
    if (f == NULL)
        return;
    free(f->sub);
    free(f->tmp);
    free(f);
}

/* lazy_fill_new() describes surface 'g' (its tiled bytes at 'tiled') for the handler: every subresource's
 * place in the packed linear order, so that a fault finds the rows it covers without opening
 * the surface again. */
static struct vm_lazy_fill *lazy_fill_new(const struct vm_group *g, const uint8_t *tiled)
{
    struct vm_lazy_fill *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->layout = &g->layout;
    f->surface = &g->surface;
    f->tiled = tiled;
    f->tiled_size = (size_t)g->size;
    f->elem = g->surface.element_bytes;
    f->nsub = g->surface.mip_levels * g->surface.array_layers;
    f->sub = calloc(f->nsub, sizeof *f->sub);
    size_t widest = 0;
    uint32_t k = 0;
    for (uint32_t layer = 0; f->sub != NULL && layer < g->surface.array_layers; layer++)
        for (uint32_t mip = 0; mip < g->surface.mip_levels; mip++, k++) {
            struct vidmm_subresource_info si = { .size = sizeof si };
            if (vidmm_surface_subresource(&g->layout, &g->surface, mip, layer, &si) != 0) {
                vm_lazy_fill_free(f);
                return NULL;
            }
            f->sub[k] = (struct vm_lazy_sub){ mip, layer, si.width, si.height, si.depth, si.linear_offset,
                                              si.linear_size };
            if (si.linear_offset + si.linear_size > f->linear_end)
                f->linear_end = (size_t)(si.linear_offset + si.linear_size);
            if ((size_t)si.width * f->elem > widest)
                widest = (size_t)si.width * f->elem;
        }
    if (f->sub == NULL || (f->tmp = malloc(widest + 2 * f->elem)) == NULL) {
        vm_lazy_fill_free(f);
        return NULL;
    }
    return f;
}

/* lazy_fill() untiles bytes [off, off + len) of the packed linear surface into 'dst' (the
 * handler thread's fill; bytes past the surface, in the view's last page, are zero): runs of
 * whole rows of one slice straight into 'dst', a partial row through 'tmp', widened to whole
 * elements. The subresources are packed end to end from offset 0 (vidmm_surface_subresource()),
 * so every byte before 'linear_end' is some subresource's and only the tail is zeroed. */
static void lazy_fill(void *ctx, size_t off, size_t len, uint8_t *dst)
{
    const struct vm_lazy_fill *f = ctx;
    const size_t end = off + len, e = f->elem;
    if (end > f->linear_end) {
        const size_t z = off > f->linear_end ? off : f->linear_end;
        memset(dst + (z - off), 0, end - z);
    }
    for (uint32_t k = 0; k < f->nsub; k++) {
        const struct vm_lazy_sub *sb = &f->sub[k];
        if (sb->lo >= end || sb->lo + sb->size <= off)
            continue;
        const size_t row = (size_t)sb->w * e;
        size_t s0 = (off > sb->lo ? off : (size_t)sb->lo) - (size_t)sb->lo;
        const size_t s1 = (end < sb->lo + sb->size ? end : (size_t)(sb->lo + sb->size)) - (size_t)sb->lo;
        while (s0 < s1) {
            const size_t ri = s0 / row, rb = s0 - ri * row;
            const uint32_t y = (uint32_t)(ri % sb->h), z = (uint32_t)(ri / sb->h);
            uint8_t *out = dst + ((size_t)sb->lo + s0 - off);
            if (rb == 0 && s1 - s0 >= row) {
                /* Whole rows, up to the slice's end. */
                uint32_t rows = (uint32_t)((s1 - s0) / row);
                if (rows > sb->h - y)
                    rows = sb->h - y;
                struct vidmm_box box = { 0, y, z, sb->w, rows, 1 };
                if (vidmm_deswizzle(f->layout, f->surface, sb->mip, sb->layer, &box, f->tiled, f->tiled_size, out,
                                    (size_t)rows * row, row, (size_t)rows * row) != 0)
                    memset(out, 0, (size_t)rows * row); /* never the last fill's bytes */
                s0 += (size_t)rows * row;
                continue;
            }
            const size_t re = s1 - ri * row < row ? s1 - ri * row : row;
            const uint32_t x0 = (uint32_t)(rb / e), x1 = (uint32_t)((re + e - 1) / e);
            struct vidmm_box box = { x0, y, z, x1 - x0, 1, 1 };
            if (vidmm_deswizzle(f->layout, f->surface, sb->mip, sb->layer, &box, f->tiled, f->tiled_size, f->tmp,
                                (size_t)(x1 - x0) * e, (size_t)(x1 - x0) * e, 0) != 0)
                memset(f->tmp, 0, (size_t)(x1 - x0) * e);
            memcpy(out, f->tmp + (rb - (size_t)x0 * e), re - rb);
            s0 = ri * row + re;
        }
    }
}

/* lazy_lock() maps range 'r''s lazy view for surface 'g' at 'tiled' (made on first use, or
 * again when too small). False when there is none (the device did not ask, the kernel refused
 * one, no memory): the eager view serves. Called with the device mutex released. */
static bool lazy_lock(vidmm_device *dev, struct vm_range *r, const struct vm_group *g, const uint8_t *tiled,
                      size_t need, bool writable)
{
    if (!dev->lazy_ranges || r->lazy_failed)
        return false;
    if (r->lazy != NULL && vmos_lazy_len(r->lazy) < need) {
        vmos_lazy_destroy(r->lazy);
        r->lazy = NULL;
    }
    if (r->lazy == NULL && vmos_lazy_create(need, &r->lazy) != 0) {
        r->lazy = NULL;
        r->lazy_failed = true;
        vidmm_log(VIDMM_LOG_INFO, "swizzling ranges: lazy views unavailable here (no full userfaultfd with "
                                  "WP_ASYNC and PAGEMAP_SCAN, Linux 6.7); range locks untile eagerly");
        return false;
    }
    struct vm_lazy_fill *f = lazy_fill_new(g, tiled);
    if (f == NULL)
        return false;
    vm_lazy_fill_free(r->fill);
    r->fill = f;
    /* A writable stream's chunks go in counted as written (lazyview.c): tiled back for 0.4 us
     * a page rather than protected, then faulted on at 1.6 us a page when written. */
    vmos_lazy_arm(r->lazy, lazy_fill, f, writable, true);
    r->lazy_armed = true;
    r->lazy_writable = writable;
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Parts of a surface (narrow locks, issue 16) and the range views' conversions. These run with
 * the device mutex released: they touch the view of a range their lock alone holds (active),
 * and the tiled bytes of an allocation nothing may move meanwhile (locked and held).
 * ------------------------------------------------------------------------------------------- */

/* part_sub() gives subresource (mip, layer)'s description and the box of it part 'p' covers. */
static int part_sub(const struct vm_group *g, const struct vm_part *p, uint32_t mip, uint32_t layer,
                    struct vidmm_subresource_info *si, struct vidmm_box *box)
{
    si->size = sizeof *si;
    int err = vidmm_surface_subresource(&g->layout, &g->surface, mip, layer, si);
    if (err)
        return err;
    if (p->has_box)
        *box = p->box;
    else
        *box = (struct vidmm_box){ 0, 0, 0, si->width, si->height, si->depth };
    return 0;
}

/* part_copy() untiles ('to_linear') part 'p' of surface 'g' from 'tiled' into the view (packed
 * linear order, 'view_len' bytes), or tiles it back. The whole surface in one call; a narrow
 * part one box per subresource. */
static int part_copy(const struct vm_group *g, const struct vm_part *p, uint8_t *tiled, uint8_t *view,
                     size_t view_len, bool to_linear)
{
    if (p->whole)
        return to_linear ? vidmm_deswizzle_surface(&g->layout, &g->surface, tiled, (size_t)g->size, view,
                                                   (size_t)g->linear_size)
                         : vidmm_swizzle_surface(&g->layout, &g->surface, tiled, (size_t)g->size, view,
                                                 (size_t)g->linear_size);
    for (uint32_t layer = p->layer0; layer < p->layer0 + p->nlayer; layer++)
        for (uint32_t mip = p->mip0; mip < p->mip0 + p->nmip; mip++) {
            struct vidmm_subresource_info si;
            struct vidmm_box box;
            int err = part_sub(g, p, mip, layer, &si, &box);
            if (err)
                return err;
            const size_t row = (size_t)si.width * g->surface.element_bytes, slice = row * si.height;
            const size_t off = part_offset(g, &si, &box);
            err = to_linear ? vidmm_deswizzle(&g->layout, &g->surface, mip, layer, &box, tiled, (size_t)g->size,
                                              view + off, view_len - off, row, slice)
                            : vidmm_swizzle(&g->layout, &g->surface, mip, layer, &box, tiled, (size_t)g->size,
                                            view + off, view_len - off, row, slice);
            if (err)
                return err;
        }
    return 0;
}

/* part_snapshot() copies the view's bytes of part 'p' into the snapshot (what the view showed
 * when the lock began, to find what the CPU wrote when no write-watch does): row by row for a
 * box, whole subresources otherwise. */
static void part_snapshot(const struct vm_group *g, const struct vm_part *p, struct vm_range *r)
{
    if (p->whole) {
        memcpy(r->snap, r->view, (size_t)g->linear_size);
        return;
    }
    const size_t e = g->surface.element_bytes;
    for (uint32_t layer = p->layer0; layer < p->layer0 + p->nlayer; layer++)
        for (uint32_t mip = p->mip0; mip < p->mip0 + p->nmip; mip++) {
            struct vidmm_subresource_info si;
            struct vidmm_box box;
            if (part_sub(g, p, mip, layer, &si, &box) != 0)
                continue; /* cannot happen: the lock resolved it */
            if (!p->has_box) {
                memcpy(r->snap + si.linear_offset, r->view + si.linear_offset, (size_t)si.linear_size);
                continue;
            }
            const size_t row = (size_t)si.width * e, slice = row * si.height;
            for (uint32_t z = box.z; z < box.z + box.depth; z++)
                for (uint32_t y = box.y; y < box.y + box.height; y++) {
                    const size_t off = (size_t)si.linear_offset + z * slice + y * row + box.x * e;
                    memcpy(r->snap + off, r->view + off, (size_t)box.width * e);
                }
        }
}

/* A narrow part of at most this many bytes is compared with a snapshot of it at unlock rather
 * than watched: arming the view's write-watch write-protects the whole view - 1-2 ms for a
 * 64 MiB one, whatever the part - while the snapshot costs a copy and a compare of the part.
 * Writable box locks of a 64 MiB block-linear surface, one byte written, lock + unlock (issue
 * 16 session 7, loaded machine): 64 x 64 0.98 ms watched, 17 us with the snapshot; 1024 x 1024
 * (4 MiB) 5.3 vs 2.3 ms; 2048 x 2048 (16 MiB) 11.8 vs 11.8 ms; 3000 x 3000 22.8 vs 26.5 ms.
 * VIDMM_RANGE_DIRTY=watch watches every part (tests). */
#define VM_PART_SNAPSHOT_MAX ((size_t)8 << 20)

/* part_bytes(): the bytes of the view a narrow part covers. */
static size_t part_bytes(const struct vm_group *g, const struct vm_part *p)
{
    size_t n = 0;
    for (uint32_t layer = p->layer0; layer < p->layer0 + p->nlayer; layer++)
        for (uint32_t mip = p->mip0; mip < p->mip0 + p->nmip; mip++) {
            struct vidmm_subresource_info si;
            struct vidmm_box box;
            if (part_sub(g, p, mip, layer, &si, &box) == 0)
                n += (size_t)box.width * box.height * box.depth * g->surface.element_bytes;
        }
    return n;
}

/* range_open() makes range 'r''s view show part r->part of surface 'g' (tiled at 'tiled') for
 * the lock that holds the range: the lazy view armed, or the eager view untiled - the part
 * only - with its write-watch armed or, for a writable lock without one or of a small part, a
 * snapshot of the part taken. '*view' is the view's base. Device mutex released.
 *
 * A Discard lock ('discard': the flag, where it applies) is not untiled at all: its content is
 * undefined (spec 7: D3D9 Lock with Discard, D3D10+ MAP_WRITE_DISCARD), so the eager view shows
 * what it last showed, and only the pages the CPU writes are tiled back as usual. That is the
 * dynamic-texture pattern - a whole surface rewritten every frame - where a lazy view pays a
 * fault per chunk for bytes nobody reads and an eager one untiles them for nothing (issue 31).
 * A view whose bytes no untiling has written yet (new, or grown) is untiled all the same: the
 * CPU must not read memory nothing wrote. */
static int range_open(vidmm_device *dev, struct vm_range *r, const struct vm_group *g, uint8_t *tiled, bool writable,
                      bool discard, uint8_t **view)
{
    const size_t need = (size_t)vm_round_up(g->linear_size, VIDMM_PAGE_SIZE);
    /* No verdict from a Discard lock (range_note_eager()): its content is undefined, written
     * whole or not. An earlier probe's missing verdict (hist_probe left set) is still missing
     * after it - kept for the next lock's range_want_lazy(), not for range_want_track() here. */
    const bool unresolved = discard && r->hist_probe;
    if (discard)
        r->hist_eager = r->hist_probe = false;
    if (!discard && range_want_lazy(dev, r, need, writable) && lazy_lock(dev, r, g, tiled, need, writable)) {
        *view = vmos_lazy_base(r->lazy);
        return 0;
    }
    if (r->view_len < need) {
        void *v = aligned_alloc(VIDMM_PAGE_SIZE, need), *sn = aligned_alloc(VIDMM_PAGE_SIZE, need);
        if (!v || !sn) {
            free(v);
            free(sn);
            return VIDMM_E_NO_MEMORY;
        }
        /* The old view's write-watch goes with it - and so does what it recorded: its pages
         * lifted first (a protected page must not reach the allocator's next user), and the
         * armed / protected marks cleared, or the next step would lift them through the
         * destroyed watch (issue 25: SIGSEGV on the first view to grow after a written lock). */
        if (r->ww != NULL && (r->ww_armed || r->ww_protected))
            (void)vmos_wtrack_disarm(r->ww, r->view, r->view_len);
        vmos_wtrack_destroy(r->ww);
        r->ww = NULL;
        r->ww_failed = false;
        r->ww_armed = r->ww_protected = false;
        free(r->view);
        free(r->snap);
        r->view = v;
        r->snap = sn;
        r->view_len = need;
        r->view_defined = 0;
    }
    if (r->ww != NULL && (r->ww_armed || r->ww_protected)) {
        /* Protected pages left by the last lock (or by one that never ended: its allocation
         * went): lifted first, or the untiling below would take a fault on every page - about
         * 35 ms for 64 MiB, against 2 ms for the lift. */
        (void)vmos_wtrack_disarm(r->ww, r->view, r->view_len);
        r->ww_armed = r->ww_protected = false;
    }
    /* Eager untiling: the view shows the part as an unswizzling eviction would leave it. */
    if (!discard || r->view_defined < g->linear_size) {
        int err = part_copy(g, &r->part, tiled, r->view, r->view_len, true);
        if (err)
            return err;
        if (r->part.whole && r->view_defined < g->linear_size)
            r->view_defined = (size_t)g->linear_size;
    }
    const bool small = !r->part.whole && !dev->range_watch_small && part_bytes(g, &r->part) <= VM_PART_SNAPSHOT_MAX;
    r->untracked = false;
    r->tr_probe = false;
    if (writable && r->part.whole) {
        const int tr = range_want_track(dev, r, need / VIDMM_PAGE_SIZE);
        r->untracked = tr != VM_TRACK_WHOLE;
        r->tr_probe = tr == VM_TRACK_PROBE && range_probe_arm(dev, r);
    }
    r->hist_probe = r->hist_probe || unresolved;
    if (writable && !r->untracked && (small || !(r->ww_armed = range_watch_arm(dev, r))))
        part_snapshot(g, &r->part, r); /* to find what the CPU wrote */
    *view = r->view;
    return 0;
}

/* wait_converted() waits (mutex released) until a conversion ends; converted() wakes the calls
 * waiting for one, or for an allocation's holds to go (a destroy), when there are any: a
 * broadcast of paging_cv also wakes the paging threads, a cost every lock would pay. */
static void wait_converted(vidmm_device *dev)
{
    dev->convert_waiters++;
    pthread_cond_wait(&dev->paging_cv, &dev->mu);
    dev->convert_waiters--;
}

static void converted(vidmm_device *dev)
{
    if (dev->convert_waiters || dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* pairs with wait_converted() and destroys' waits */
}

void vm_convert_begin(vidmm_device *dev, struct vm_alloc *a)
{
    a->converting = true;
    dev->converting++;
    a->hold++;
    pthread_mutex_unlock(&dev->mu);
}

void vm_convert_end(vidmm_device *dev, struct vm_alloc *a)
{
    pthread_mutex_lock(&dev->mu);
    a->converting = false;
    dev->converting--;
    a->hold--;
    converted(dev);
}

/* range_lock_convert() opens range 'r' of 'a' for a lock with flags 'f': 'a' is marked locked
 * through the range and converting, the mutex released for range_open(), then taken back and
 * the mark cleared (waiters woken). On failure - or a removal meanwhile - the lock is undone
 * (the range stays acquired and cached, outside any lock) and nothing else has changed. */
static int range_lock_convert(vidmm_device *dev, struct vm_alloc *a, struct vm_range *r, uint32_t f, uint8_t **view)
{
    const struct vm_group *g = a->g;
    uint8_t *tiled = a->seg->cpu + a->offset;
    a->lock_count = 1; /* range-locked from here on: the relock rules refuse another lock */
    a->lock_mode = VM_LOCK_RANGE;
    a->lock_flags = f;
    a->converting = true;
    dev->converting++;
    pthread_mutex_unlock(&dev->mu);
    int err = range_open(dev, r, g, tiled, !(f & VIDMM_LOCK_READ_ONLY), discard_applies(a, f), view);
    pthread_mutex_lock(&dev->mu);
    a->converting = false;
    dev->converting--;
    converted(dev);
    if (!err && dev->removed)
        err = VIDMM_E_DEVICE_REMOVED;
    if (err) {
        range_lazy_drop(r);
        r->active = false;
        a->lock_count = 0;
        a->lock_mode = VM_LOCK_NONE;
        a->lock_flags = 0;
    }
    return err;
}

/* Lock through a swizzling range: the state machine of spec 8.2. On success '*ptr' is the
 * unswizzled backing store and '*mode' VM_LOCK_DIRECT, or '*conv' the range acquired (active,
 * its part set to 'part') whose view range_lock_convert() then opens with the mutex released,
 * and '*mode' VM_LOCK_RANGE. */
static int lock_swizzled(vidmm_device *dev, struct vm_alloc *a, const struct vidmm_lock_args *args,
                         const struct vm_part *part, uint8_t **ptr, uint32_t *mode, struct vm_range **conv)
{
    if (a->where == VIDMM_WHERE_SYSMEM && !a->evicted_swizzled) { /* (3) evicted unswizzled */
        *ptr = a->backing;
        *mode = VM_LOCK_DIRECT;
        return 0;
    }
    /* (2): first into a memory segment; then (1). Its paging finishes before a range is taken
     * (the mutex is released while waiting: no range is held across the wait); another thread's
     * submission may move it meanwhile, hence the loop. */
    int err;
    for (;;) {
        /* A CPU-visible memory segment when the set has one: only there can a range be had. */
        if (a->where != VIDMM_WHERE_SEGMENT &&
            (err = vm_make_resident(dev, a, VM_USE_ANY | VM_USE_MEMORY_ONLY | VM_USE_CPU_VISIBLE, false)) != 0)
            return err;
        if ((err = vm_wait_paging_locked(dev, a->paging_fence)) != 0)
            return err;
        if (a->where == VIDMM_WHERE_SEGMENT && a->paging_fence <= dev->paging_done)
            break;
    }
    /* A swizzling range is acquired only for an allocation in a CPU-accessible memory segment
     * (spec 8.3); elsewhere the unswizzling eviction of (1) is the way to linear bytes. */
    const bool visible = (a->seg->flags & VIDMM_SEGMENT_CPU_VISIBLE) != 0;
    int id = dev->nranges && visible ? range_acquire(dev, a, args->private_data, NULL) : -1;
    if (id < 0) {
        /* No range: an unswizzling eviction, unless forbidden (spec 8.2 / 15.15). It converts
         * the whole allocation, narrow lock or not: the evicted copy is linear as a whole. */
        if (args->flags & VIDMM_LOCK_DONOT_EVICT)
            return VIDMM_E_NOT_AVAILABLE;
        if (a->pinned)
            return VIDMM_E_CANT_EVICT_PINNED;
        if ((err = vm_evict_one(dev, a, true, false)) != 0)
            return err;
        *ptr = a->backing;
        *mode = VM_LOCK_DIRECT;
        return 0;
    }
    struct vm_range *r = &dev->ranges[id];
    r->part = *part;
    r->active = true;
    a->range = id;
    *conv = r;
    *mode = VM_LOCK_RANGE;
    return 0;
}

/* UseAlternateVA (spec 8.4, 15.16): the content in the backing store, seen through a VA of
 * its own. */
/* The alternate VA: a view of the backing store's pages of its own. */
static int altva_map(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->altva)
        return 0;
    int err = vm_backing_ensure(dev, a);
    if (err)
        return err;
    a->altva_len = (size_t)a->g->size;
    return vmos_view_map(&dev->arena, (size_t)a->backing_off, a->altva_len, &a->altva);
}

static int lock_altva(vidmm_device *dev, struct vm_alloc *a, const struct vidmm_lock_args *args, uint32_t f,
                      uint8_t **ptr)
{
    int err;
    if (a->where == VIDMM_WHERE_SEGMENT) {
        a->altva_range = 0;
        if (a->pinned)
            return VIDMM_E_CANT_EVICT_PINNED;
        if ((f & VIDMM_LOCK_DONOT_WAIT) && vm_busy(dev, a, false))
            return VIDMM_E_BUSY; /* the eviction would wait for the GPU */
        /* The eviction goes to the alternate VA's pages: SPECIAL_LOCK_TRANSFER. */
        if ((err = altva_map(dev, a)) != 0)
            return err;
        if ((err = vm_evict_one(dev, a, (a->g->desc.flags & VIDMM_ALLOC_SWIZZLED) != 0, true)) != 0)
            return err;
    } else if (a->where == VIDMM_WHERE_NONE) {
        if ((err = vm_materialize(dev, a)) != 0)
            return err;
    }
    if ((err = altva_map(dev, a)) != 0)
        return err;
    int id = dev->nranges ? range_acquire(dev, a, args->private_data, NULL) : -1;
    if (id >= 0) {
        a->altva_range = (uint32_t)id;
        dev->ranges[id].active = true;
        a->range = id;
    }
    *ptr = a->altva;
    return 0;
}

/* Plain locks (spec 15.14). */
static int lock_direct(vidmm_device *dev, struct vm_alloc *a, const struct vidmm_lock_args *args, uint32_t f,
                       uint8_t **ptr)
{
    int err;
    if (sysmem_backed(a->g)) {
        /* The backing store, always - committed now if this is its first use (a new rename
         * instance, or a PermanentSysMem allocation never placed); a copy the GPU wrote comes
         * back first. */
        if (a->where == VIDMM_WHERE_NONE) {
            if ((err = vm_materialize(dev, a)) != 0)
                return err;
            *ptr = a->backing;
            return 0;
        }
        if (a->where == VIDMM_WHERE_SEGMENT && a->dirty && (f & VIDMM_LOCK_DONOT_WAIT) && vm_busy(dev, a, false))
            return VIDMM_E_BUSY; /* the copy-back waits until the GPU is done with it */
        if (a->where == VIDMM_WHERE_SEGMENT && a->dirty) {
            struct vm_pop p;
            memset(&p, 0, sizeof p);
            p.op.type = VIDMM_PAGING_TRANSFER;
            p.op.flags = VIDMM_TRANSFER_START | VIDMM_TRANSFER_END;
            p.op.allocation = a->handle;
            p.op.driver_data = a->g->desc.driver_data;
            p.op.size = a->g->size;
            p.op.src.segment_id = a->seg->id;
            p.op.src.segment_address = a->seg->base_address + a->offset;
            p.op.src_ptr = a->seg->cpu + a->offset;
            p.op.dst_ptr = a->backing;
            p.a = a;
            p.sync = (a->g->desc.flags & VIDMM_ALLOC_SYNCHRONOUS_PAGING) != 0;
            a->paging_fence = vm_emit(dev, &p);
            dev->st.bytes_paged_out += a->g->size;
            a->dirty = false;
        }
        *ptr = a->backing;
        return 0;
    }
    switch (a->where) {
    case VIDMM_WHERE_NONE:
        if ((err = vm_materialize(dev, a)) != 0)
            return err;
        *ptr = a->backing;
        return 0;
    case VIDMM_WHERE_SEGMENT:
        if (a->seg->flags & VIDMM_SEGMENT_CPU_VISIBLE) {
            *ptr = a->seg->cpu + a->offset;
            return 0;
        }
        /* Not CPU-visible: WDDM1 evicts to system memory first (spec 15.14). */
        if (args->flags & VIDMM_LOCK_DONOT_EVICT)
            return VIDMM_E_NOT_AVAILABLE;
        if (a->pinned)
            return VIDMM_E_CANT_EVICT_PINNED;
        /* The eviction waits until the GPU is done with it - reads too, whatever IgnoreSync or
         * IgnoreReadSync allowed: a caller that said DonotWait hears so now. */
        if ((f & VIDMM_LOCK_DONOT_WAIT) && vm_busy(dev, a, false))
            return VIDMM_E_BUSY;
        if ((err = vm_evict_one(dev, a, false, false)) != 0)
            return err;
        *ptr = a->backing;
        return 0;
    default:
        *ptr = a->backing;
        return 0;
    }
}

/* mark_written(): what a writable lock means for the content (spec 15.6, 15.24), for a first
 * lock and for a writable relock inside a READ_ONLY one alike. */
static void mark_written(vidmm_device *dev, struct vm_alloc *a, const struct vidmm_lock_args *args, uint32_t mode)
{
    const struct vm_group *g = a->g;
    if (a->wt_left != NULL && a->wt == NULL)
        vm_watch_leave(dev, a); /* an untracked writer: no fault a page for it */
    if (a->where == VIDMM_WHERE_SEGMENT && mode == VM_LOCK_DIRECT && !sysmem_backed(g))
        a->dirty = true; /* a writable lock on its segment location */
    /* The CPU may write it wherever it is: flushed before the GPU next reads it from a segment
     * that does not snoop (submit.c). */
    if ((g->desc.flags & VIDMM_ALLOC_CACHED) && a->wt == NULL) {
        a->cpu_wrote = true;
        a->cpu_partial = false; /* watched: the end of the lock says which pages */
    }
    if (sysmem_backed(g))
        note_dirty_pages(a, args);
    a->gen++; /* a disk copy being written now is stale */
}

/* region_result() writes a successful narrow lock's out fields. */
static void region_result(struct vidmm_lock_region *rg, const struct vidmm_lock_region *r)
{
    rg->offset = r->offset;
    rg->row_pitch = r->row_pitch;
    rg->slice_pitch = r->slice_pitch;
    rg->layer_pitch = r->layer_pitch;
}

/* lock_impl(): vidmm_lock() and, with 'rg' (not NULL), vidmm_lock_region(). */
static int lock_impl(vidmm_device *dev, struct vidmm_lock_args *args, struct vidmm_lock_region *rg)
{
    const char *call = rg ? "vidmm_lock_region" : "vidmm_lock"; /* for the refusal's log line */
    struct timespec dl;
    const bool timed = vm_deadline_for(dev, &dl);
    pthread_mutex_lock(&dev->mu);
    int err = 0;
    struct vm_alloc *a;
retry:
    a = vm_lookup(dev, args->allocation);
    if (dev->removed)
        err = VIDMM_E_DEVICE_REMOVED;
    else if (!a)
        err = vm_refuse_handle(call, args->allocation);
    else
        err = check_lock(dev, a, args);
    if (!err && dev->w2.on)
        err = vm_w2_check_lock(dev, args->flags); /* WDDM2 hook: no renaming, no swizzling ranges (residency.c) */
    struct vm_part part;
    struct vidmm_lock_region rg_out = { 0 };
    if (!err)
        err = check_region(a, args, rg, &part, &rg_out);
    if (err)
        goto out;
    const uint32_t f = effective_flags(a, args->flags); /* Discard neutralises DonotWait, IgnoreSync */
    /* Where the pointer goes in what the lock shows: a page list's first page, or a narrow
     * lock's first element (the base is linear then: a range view or an unswizzled copy). */
    const size_t page_off = args->page_count ? (size_t)args->pages[0] * VIDMM_PAGE_SIZE : (size_t)rg_out.offset;
    const bool writable = !(f & VIDMM_LOCK_READ_ONLY);
    if (a->lock_count) {
        /* A plain relock nests and returns the same pointer (spec 15.12). A writable one inside
         * a READ_ONLY lock must not write while a write-out reads the backing store, and makes
         * the content changed from here on. */
        if (writable && a->swap == VM_SWAP_WRITING) {
            if ((err = vm_swap_in(dev, &a, 1, !(f & VIDMM_LOCK_DONOT_WAIT), NULL)) != 0)
                goto out;
            goto retry;
        }
        a->lock_count++;
        if (writable) {
            if ((a->lock_flags & VIDMM_LOCK_READ_ONLY) && a->lock_mode == VM_LOCK_DIRECT)
                watch_lock(dev, a, args, a->lock_ptr); /* the first writable lock of it */
            else if (a->wt != NULL)
                watch_recheck(a); /* evidence during the lock: dense so far? */
            mark_written(dev, a, args, a->lock_mode);
            a->lock_flags &= ~VIDMM_LOCK_READ_ONLY;
        }
        args->data = a->lock_ptr + page_off;
        if (rg)
            region_result(rg, &rg_out);
        dev->st.locks++;
        goto out;
    }
    if (a->where == VIDMM_WHERE_DISK || a->swap == VM_SWAP_READING || (a->swap == VM_SWAP_WRITING && writable)) {
        /* Written out to the disk tier: read it back first (DonotWait: start it, say busy). A
         * write-out in flight reads the backing store: a writable lock waits for it. */
        if ((err = vm_swap_in(dev, &a, 1, !(f & VIDMM_LOCK_DONOT_WAIT), NULL)) != 0)
            goto out;
        goto retry; /* the mutex was released: everything is checked again */
    }
    const struct vm_group *g = a->g;
    if (discard_applies(a, f)) {
        if ((err = rename_for_discard(dev, &a)) != 0)
            goto out;
        if (a->where == VIDMM_WHERE_DISK || a->swap != VM_SWAP_NONE) {
            /* An old instance the disk tier wrote out (or is moving): back first, then again
             * from the top - the renaming then finds it current and idle. */
            if ((err = vm_swap_in(dev, &a, 1, true, NULL)) != 0)
                goto out;
            goto retry;
        }
    } else if (!((f & VIDMM_LOCK_IGNORE_SYNC) && (f & VIDMM_LOCK_DONOT_WAIT))) {
        /* IgnoreSync counts only with DonotWait; IgnoreReadSync waits for writes only. */
        const bool writes_only = (f & VIDMM_LOCK_IGNORE_READ_SYNC) != 0;
        if (vm_busy(dev, a, writes_only)) {
            if (f & VIDMM_LOCK_DONOT_WAIT) {
                err = VIDMM_E_BUSY;
                goto out;
            }
            vidmm_handle h = a->handle;
            while (!dev->removed && (a = vm_lookup(dev, h)) != NULL && vm_busy(dev, a, writes_only)) {
                if ((err = vm_cond_wait(dev, &dev->fence_cv, timed ? &dl : NULL)) != 0 &&
                    (a = vm_lookup(dev, h)) != NULL && vm_busy(dev, a, writes_only))
                    goto out; /* VIDMM_E_TIMEOUT: nothing changed */
                err = 0;
            }
            /* The mutex was released: anything may have happened to it (written out to disk,
             * locked, destroyed). Everything is checked again. */
            goto retry;
        }
    }
    if (VIDMM_UNLIKELY(a->converting)) {
        /* vidmm_gpu_access() or vidmm_invalidate_cache() works on its bytes with the mutex
         * released, and the paths below may move them: wait, then everything again. */
        wait_converted(dev);
        goto retry;
    }
    uint8_t *ptr = NULL;
    uint32_t mode = VM_LOCK_DIRECT;
    struct vm_range *conv = NULL; /* a range whose view is opened below, with the mutex released */
    a->hold++; /* no victim while this lock places it, waits for its paging and converts it */
    if (f & VIDMM_LOCK_USE_ALTERNATE_VA) {
        err = lock_altva(dev, a, args, f, &ptr);
        mode = VM_LOCK_ALTVA;
    } else if ((g->desc.flags & VIDMM_ALLOC_SWIZZLED) && (f & VIDMM_LOCK_ACQUIRE_APERTURE)) {
        err = lock_swizzled(dev, a, args, &part, &ptr, &mode, &conv);
    } else {
        err = lock_direct(dev, a, args, f, &ptr);
    }
    /* Its paging must be done before the pointer is handed out; waiting releases the mutex, and
     * another thread's submission may have moved it meanwhile: wait until nothing is pending. */
    uint32_t where0 = VIDMM_WHERE_NONE;
    const struct vm_segment *seg0 = NULL;
    uint64_t off0 = 0;
    bool waited = false;
    while (!err && a->paging_fence > dev->paging_done) {
        if (!waited) { /* where 'ptr' points: the placement before the first wait */
            where0 = a->where, seg0 = a->seg, off0 = a->offset;
            waited = true;
        }
        err = (f & VIDMM_LOCK_DONOT_WAIT) ? vm_wait_paging_nowait(dev, a->paging_fence)
                                          : vm_wait_paging_locked(dev, a->paging_fence);
    }
    if (VIDMM_UNLIKELY(waited) && !err && conv == NULL &&
        (a->where != where0 ||
         ((where0 == VIDMM_WHERE_SEGMENT || where0 == VIDMM_WHERE_APERTURE) && (a->seg != seg0 || a->offset != off0)))) {
        /* Another thread paged it in (or moved it) while this one waited: 'ptr' is where its
         * content was, not where it is. From the top (a range lock's view is untiled below,
         * from where the surface is then). */
        if (--a->hold == 0 && dev->hold_waiters)
            pthread_cond_broadcast(&dev->paging_cv);
        goto retry;
    }
    if (conv != NULL) {
        /* The view is untiled (or the lazy view armed) with the mutex released (issue 16). */
        if (!err && !dev->removed)
            err = range_lock_convert(dev, a, conv, f, &ptr);
        else
            conv->active = false; /* not opened: the range stays cached, outside any lock */
    }
    if (--a->hold == 0 && dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* a destroy is waiting for it */
    if (err)
        goto out;
    if (dev->removed) {
        err = VIDMM_E_DEVICE_REMOVED;
        goto out;
    }
    if ((g->desc.flags & VIDMM_ALLOC_CACHED) && a->gpu_wrote) {
        /* before CPU reads after GPU writes; a range lock's view is the linear size */
        cache_invalidate(dev, ptr, (size_t)(mode == VM_LOCK_RANGE ? g->linear_size : g->size));
        a->gpu_wrote = false;
    }
    if (writable) {
        if (mode == VM_LOCK_DIRECT)
            watch_lock(dev, a, args, ptr);
        mark_written(dev, a, args, mode);
    }
    a->lock_count = 1;
    a->lock_mode = mode;
    a->lock_flags = f;
    a->lock_ptr = ptr;
    vm_touch(dev, a);
    args->allocation = a->handle;
    args->data = ptr + page_off;
    if (rg)
        region_result(rg, &rg_out);
    dev->st.locks++;
out:
    vm_unlock_and_page(dev);
    return err;
}

int vidmm_lock(vidmm_device *dev, struct vidmm_lock_args *args)
{
    VM_DEV_CHECK(dev);
    if (!dev || !args)
        return vidmm_refuse(__func__, !dev ? "dev" : "args", "NULL", "device.h");
    return lock_impl(dev, args, NULL);
}

int vidmm_lock_region(vidmm_device *dev, struct vidmm_lock_args *args, struct vidmm_lock_region *region)
{
    VM_DEV_CHECK(dev);
    if (!dev || !args || !region)
        return vidmm_refuse(__func__, !dev ? "dev" : !args ? "args" : "region", "NULL", "device.h");
    if (region->size_of < sizeof *region)
        return vidmm_refuse(__func__, "region->size_of", "smaller than struct vidmm_lock_region", "device.h");
    return lock_impl(dev, args, region);
}

/* ---------------------------------------------------------------------------------------------
 * Unlocking.
 * ------------------------------------------------------------------------------------------- */

/* row_written() tells whether the CPU wrote bytes [off, off + len) of the view: a page of
 * them in the write-watch's bitmap, or (no watch) any byte differing from the snapshot. */
static bool row_written(const struct vm_range *r, const uint64_t *pages, size_t off, size_t len)
{
    if (pages == NULL)
        return memcmp(r->view + off, r->snap + off, len) != 0;
    for (size_t p = off / VIDMM_PAGE_SIZE; p <= (off + len - 1) / VIDMM_PAGE_SIZE; p++)
        if (pages[p / 64] >> (p % 64) & 1u)
            return true;
    return false;
}

/* next_written() returns the first page >= 'p' and < 'end' set in 'pages', or 'end': whole
 * words of unwritten pages are skipped at once (a 64 MiB view has 16384 pages, a lock that
 * wrote one of them should not test them all). */
static size_t next_written(const uint64_t *pages, size_t p, size_t end)
{
    while (p < end) {
        uint64_t w = pages[p / 64] >> (p % 64);
        if (w != 0) {
            p += (size_t)__builtin_ctzll(w);
            return p < end ? p : end;
        }
        p = (p / 64 + 1) * 64;
    }
    return end;
}

/* retile_pages() tiles back the written pages of box 'bx' in slice 'z' of subresource (mip,
 * layer), whose packed linear bytes start at 'base' in the view: runs of rows whose box bytes
 * were written whole as one box each, and of the other rows the bytes on written pages, widened
 * to whole elements, as a box of one row (rows of a wide surface span several pages, and a page
 * written in one corner need not send the whole row back). The whole-subresource lock passes
 * the whole subresource as 'bx'. */
/* retile_box() tiles back box 'b' of subresource (mip, layer) from the view's bytes at 'src'
 * (row pitch 'row', slice pitch 'slice'). A box of RETILE_NT_MIN bytes or more takes streaming
 * stores: the surface's lines are rarely still in the cache when a lock ends, and ordinary
 * stores read each line before writing it. The unlock after writing the first 10% of the pages
 * of a 64 MiB block-linear surface (whole rows, one box): 2.4 ms -> 1.6-1.8 ms, against 16.4-16.7
 * ms for a whole re-tile (build/release/bench/bench_lock_paths 9 unlock, the previous build run
 * alternately, Intel Xeon 2026-11-26). */
#define RETILE_NT_MIN ((size_t)1 << 20)
static void retile_box(const struct vm_group *g, uint8_t *tiled, const struct vidmm_box *b, uint32_t mip,
                       uint32_t layer, const uint8_t *src, size_t row, size_t slice)
{
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    const size_t bytes = (size_t)b->width * b->height * g->surface.element_bytes;
    if (bytes >= RETILE_NT_MIN)
        o.strategy = VIDMM_STRATEGY_NONTEMPORAL;
    (void)vidmm_swizzle_ex(&g->layout, &g->surface, mip, layer, b, tiled, (size_t)g->size, src,
                           (size_t)(b->height - 1) * row + (size_t)b->width * g->surface.element_bytes, row, slice,
                           &o);
}

static void retile_pages(const struct vm_group *g, uint8_t *tiled, const uint8_t *view, const uint64_t *pages,
                         const struct vidmm_subresource_info *si, const struct vidmm_box *bx, uint32_t mip,
                         uint32_t layer, uint32_t z, size_t base)
{
    const size_t e = g->surface.element_bytes, row = (size_t)si->width * e, slice = row * si->height;
    const size_t c0 = (size_t)bx->x * e, c1 = c0 + (size_t)bx->width * e; /* the box's bytes of a row */
    const uint32_t yend = bx->y + bx->height;
    /* The pages the box's rows span: rows without a written page are skipped to the next row
     * that has one. */
    const size_t page_end = (base + (size_t)(yend - 1) * row + c1 + VIDMM_PAGE_SIZE - 1) / VIDMM_PAGE_SIZE;
    uint32_t full = 0, nfull = 0; /* a run of rows written whole, moved as one box */
    for (uint32_t y = bx->y; y <= yend; y++) {
        const size_t rs = base + (size_t)y * row, r0 = rs + c0, r1 = rs + c1;
        if (y < yend && nfull == 0) {
            const size_t q = next_written(pages, r0 / VIDMM_PAGE_SIZE, page_end);
            if (q == page_end)
                break; /* nothing written below: done (no run is pending) */
            if (q * VIDMM_PAGE_SIZE >= r1) {
                /* Row y has no written page: on to the first row that may (the row holding
                 * page q's first byte; if that byte lies past that row's box columns, the
                 * next loop pass finds so and moves on again). */
                const uint32_t yq = (uint32_t)((q * VIDMM_PAGE_SIZE - base) / row);
                y = (yq > y ? yq : y + 1) - 1;
                continue;
            }
        }
        bool whole = y < yend;
        for (size_t p = r0 / VIDMM_PAGE_SIZE; whole && p * VIDMM_PAGE_SIZE < r1; p++)
            whole = (pages[p / 64] >> (p % 64) & 1u) != 0;
        if (whole) {
            if (nfull++ == 0)
                full = y;
            continue;
        }
        if (nfull > 0) {
            struct vidmm_box box = { bx->x, full, z, bx->width, nfull, 1 };
            retile_box(g, tiled, &box, mip, layer, view + base + (size_t)full * row + c0, row, slice);
            nfull = 0;
        }
        if (y == yend)
            break;
        size_t p = r0 / VIDMM_PAGE_SIZE;
        while (p * VIDMM_PAGE_SIZE < r1) {
            if (!(pages[p / 64] >> (p % 64) & 1u)) {
                p++;
                continue;
            }
            size_t q = p + 1;
            while (q * VIDMM_PAGE_SIZE < r1 && (pages[q / 64] >> (q % 64) & 1u))
                q++;
            const size_t b0 = (p * VIDMM_PAGE_SIZE > r0 ? p * VIDMM_PAGE_SIZE : r0) - rs;
            const size_t b1 = (q * VIDMM_PAGE_SIZE < r1 ? q * VIDMM_PAGE_SIZE : r1) - rs;
            const uint32_t x0 = (uint32_t)(b0 / e), x1 = (uint32_t)((b1 + e - 1) / e);
            struct vidmm_box box = { x0, y, z, x1 - x0, 1, 1 };
            vidmm_swizzle(&g->layout, &g->surface, mip, layer, &box, tiled, (size_t)g->size,
                          view + rs + (size_t)x0 * e, (size_t)(x1 - x0) * e, row, slice);
            p = q;
        }
    }
}

/* retile_written(): after a writable lock through range 'r' of surface 'g' (tiled at 'tiled'),
 * tile back what the CPU wrote inside the lock's part: each run of written rows of each
 * subresource (of the box) is copied into the tiled surface as one box. The rows written are
 * those on pages the view's write-watch saw written (a row partly on a written page counts: the
 * watch works in pages), or without one those that differ from the snapshot taken as the lock
 * began. Device mutex released (the allocation is marked converting). */
static void retile_written(const struct vm_group *g, struct vm_range *r, uint8_t *tiled)
{
    const struct vm_part *part = &r->part;
    uint8_t *view = r->lazy_armed ? vmos_lazy_base(r->lazy) : r->view;
    const size_t view_len = r->lazy_armed ? vmos_lazy_len(r->lazy) : r->view_len;
    uint64_t *pages = NULL;
    if (r->untracked && !r->lazy_armed) {
        /* Untracked (range_want_track()): the whole part back; a probe's verdict first. */
        if (r->tr_probe)
            range_probe_end(r);
        (void)part_copy(g, part, tiled, view, view_len, false);
        r->untracked = false;
        return;
    }
    r->untracked = false;
    if (r->ww_armed || r->lazy_armed) {
        const size_t words = (view_len / VIDMM_PAGE_SIZE + 63) / 64;
        if ((pages = malloc(words * sizeof *pages)) == NULL) {
            /* No memory to read the watch into: all of the part back rather than miss a write (a
             * lazy view's untouched pages fault in with the surface's own bytes). */
            (void)part_copy(g, part, tiled, view, view_len, false);
            r->ww_protected |= r->ww_armed;
            r->ww_armed = false;
            return;
        }
        int rc;
        if (r->lazy_armed) {
            rc = vmos_lazy_written(r->lazy, pages, words);
        } else {
            memset(pages, 0, words * sizeof *pages);
            /* The protection stays on the pages not written: lifted by the view's next lock
             * before it untiles (range_open()), so an unlock costs what was written. */
            rc = vmos_wtrack_collect(r->ww, r->view, r->view_len, pages, false);
            r->ww_protected = true;
        }
        if (rc != 0)
            memset(pages, 0xFF, words * sizeof *pages); /* the kernel refused the scan: every row */
        else if (!r->lazy_armed) {
            uint64_t written = 0;
            for (size_t w = 0; w < words; w++)
                written += (uint64_t)__builtin_popcountll(pages[w]);
            range_note_eager(r, written);
            if (part->whole)
                range_note_track(r, written);
        }
        if (r->lazy_armed && VIDMM_PAGE_SIZE % g->surface.element_bytes != 0) {
            /* A written page's rows are widened to whole elements, which may reach into the
             * next or previous page. Fault those in now, while the handler can still untile
             * them from a surface nothing writes: once tiling back begins, a fill would read
             * the tiled bytes being written. Only elements of 3, 6 or 12 bytes straddle pages:
             * every row starts at a multiple of the element size, so a page end is an element
             * end whenever the element size divides the page size (two faults saved per unlock,
             * about 30 us). */
            const size_t npages = view_len / VIDMM_PAGE_SIZE;
            for (size_t q = next_written(pages, 0, npages); q < npages; q = next_written(pages, q + 1, npages)) {
                if (q > 0 && !(pages[(q - 1) / 64] >> ((q - 1) % 64) & 1u))
                    (void)*(volatile const uint8_t *)(view + q * VIDMM_PAGE_SIZE - 1);
                if (q + 1 < npages && !(pages[(q + 1) / 64] >> ((q + 1) % 64) & 1u))
                    (void)*(volatile const uint8_t *)(view + (q + 1) * VIDMM_PAGE_SIZE);
            }
        }
        if (r->lazy_armed)
            vmos_lazy_quiesce(r->lazy);
    }
    const uint32_t mip0 = part->whole ? 0 : part->mip0, layer0 = part->whole ? 0 : part->layer0;
    const uint32_t mip1 = part->whole ? g->surface.mip_levels : part->mip0 + part->nmip;
    const uint32_t layer1 = part->whole ? g->surface.array_layers : part->layer0 + part->nlayer;
    const size_t e = g->surface.element_bytes;
    for (uint32_t layer = layer0; layer < layer1; layer++) {
        for (uint32_t mip = mip0; mip < mip1; mip++) {
            struct vidmm_subresource_info si;
            struct vidmm_box bx;
            if (part_sub(g, part, mip, layer, &si, &bx) != 0)
                goto out;
            const size_t row = (size_t)si.width * e;
            const size_t slice = row * si.height;
            for (uint32_t z = bx.z; z < bx.z + bx.depth; z++) {
                const size_t base = (size_t)si.linear_offset + z * slice;
                if (pages != NULL) {
                    retile_pages(g, tiled, view, pages, &si, &bx, mip, layer, z, base);
                    continue;
                }
                const size_t c0 = (size_t)bx.x * e, len = (size_t)bx.width * e;
                uint32_t y = bx.y;
                const uint32_t yend = bx.y + bx.height;
                while (y < yend) {
                    if (!row_written(r, pages, base + y * row + c0, len)) {
                        y++;
                        continue;
                    }
                    uint32_t y1 = y + 1;
                    while (y1 < yend && row_written(r, pages, base + y1 * row + c0, len))
                        y1++;
                    struct vidmm_box box = { bx.x, y, z, bx.width, y1 - y, 1 };
                    retile_box(g, tiled, &box, mip, layer, r->view + base + y * row + c0, row, slice);
                    y = y1;
                }
            }
        }
    }
out:
    free(pages);
    r->ww_armed = false;
}

/* PermanentSysMem resident in a segment: the pages written under the lock go back to the
 * segment copy (spec 4.1, 15.14), as one split transfer (spec 15.7) of one chunk per run of
 * listed pages. */
static __attribute__((noinline)) void push_dirty_pages(vidmm_device *dev, struct vm_alloc *a)
{
    const uint64_t npages = a->g->size / VIDMM_PAGE_SIZE;
    uint8_t *mark = NULL;
    uint64_t *runs = NULL;
    size_t nruns = 0;
    if (!a->dirty_all_pages) {
        mark = calloc((size_t)npages, 1);
        /* at most one run per listed page, and a run has a gap after it: ndirty or npages/2 */
        const size_t cap = a->ndirty_pages < npages / 2 + 1 ? a->ndirty_pages : (size_t)(npages / 2 + 1);
        runs = mark ? malloc(2 * sizeof *runs * cap) : NULL;
        if (runs == NULL) {
            a->dirty_all_pages = true; /* no memory to sort them out: every page */
        } else {
            for (uint32_t i = 0; i < a->ndirty_pages; i++)
                mark[a->dirty_pages[i]] = 1;
            for (uint64_t p = 0; p < npages;) {
                if (!mark[p]) {
                    p++;
                    continue;
                }
                uint64_t q = p;
                while (q < npages && mark[q])
                    q++;
                runs[2 * nruns] = p;
                runs[2 * nruns + 1] = q - p;
                nruns++;
                p = q;
            }
        }
    }
    uint64_t whole[2] = { 0, npages };
    if (a->dirty_all_pages) {
        free(runs);
        runs = whole;
        nruns = 1;
    }
    for (size_t i = 0; i < nruns; i++) {
        struct vm_pop p;
        memset(&p, 0, sizeof p);
        uint64_t off = runs[2 * i] * VIDMM_PAGE_SIZE, len = runs[2 * i + 1] * VIDMM_PAGE_SIZE;
        p.op.type = VIDMM_PAGING_TRANSFER;
        p.op.flags = (i == 0 ? VIDMM_TRANSFER_START : 0) | (i + 1 == nruns ? VIDMM_TRANSFER_END : 0);
        p.op.allocation = a->handle;
        p.op.driver_data = a->g->desc.driver_data;
        p.op.size = len;
        /* Split: TransferOffset says where the chunk is; the segment address is the chunk's
         * start and MdlOffset its first page (spec 15.7). */
        p.op.transfer_offset = nruns > 1 || len != a->g->size ? (uint32_t)off : 0;
        p.op.mdl_offset = (uint32_t)runs[2 * i];
        p.op.dst.segment_id = a->seg->id;
        p.op.dst.segment_address = a->seg->base_address + a->offset + off;
        p.op.src_ptr = a->backing + off;
        p.op.dst_ptr = a->seg->cpu + a->offset + off;
        p.a = a;
        p.sync = (a->g->desc.flags & VIDMM_ALLOC_SYNCHRONOUS_PAGING) != 0;
        a->paging_fence = vm_emit(dev, &p);
        dev->st.bytes_paged_in += len;
    }
    if (runs != whole)
        free(runs);
    free(mark);
}

/* A range lock an unlock ends, and what ending it takes (unlock_convert()). */
struct vm_close {
    struct vm_alloc *a;
    struct vm_range *r;
    uint8_t *tiled;
    bool retile;                /* writable, in its segment: tile back what was written */
};

/* range_close() does a range lock's conversions at its end: what was written tiled back, the
 * lazy view's pages dropped (the next lock starts from the surface again). */
static void range_close(const struct vm_close *c)
{
    if (c->retile)
        retile_written(c->a->g, c->r, c->tiled);
    range_lazy_drop(c->r);
}

/* ends_range_lock(): unlocking 'a' once ends a lock through a swizzling range (mutex held). */
static bool ends_range_lock(const vidmm_device *dev, const struct vm_alloc *a)
{
    return a->lock_count == 1 && a->lock_mode == VM_LOCK_RANGE && a->range >= 0 && a->range < (int)dev->nranges;
}

/* unlock_convert() does the conversions of every range lock the (checked) list ends, with the
 * mutex released. Every listed allocation - not only those - is marked converting and held
 * meanwhile: the unlock is in progress for all of them, so that no other thread unlocks,
 * destroys or submits one under it (they wait), and the list checked before stays true. Without
 * memory for the list the conversions are done with the mutex held, as before. */
static void unlock_convert(vidmm_device *dev, uint32_t count, const vidmm_handle *handles)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < count; i++)
        n += ends_range_lock(dev, vm_lookup(dev, handles[i]));
    if (n == 0)
        return;
    struct vm_close small[8], *c = n <= 8 ? small : malloc(sizeof *c * n);
    n = 0;
    for (uint32_t i = 0; i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, handles[i]);
        if (!ends_range_lock(dev, a))
            continue; /* (a range lock is never listed twice: it does not nest) */
        struct vm_range *r = &dev->ranges[a->range];
        const bool retile = !(a->lock_flags & VIDMM_LOCK_READ_ONLY) && a->where == VIDMM_WHERE_SEGMENT;
        if (!retile && !r->lazy_armed)
            continue; /* a READ_ONLY eager view: nothing to convert */
        struct vm_close x = { a, r, retile ? a->seg->cpu + a->offset : NULL, retile };
        if (c == NULL)
            range_close(&x); /* no memory for the list: with the mutex held */
        else
            c[n++] = x;
    }
    if (n > 0) {
        for (uint32_t i = 0; i < count; i++) {
            struct vm_alloc *a = vm_lookup(dev, handles[i]);
            if (!a->converting) { /* once per allocation listed twice */
                a->converting = true;
                dev->converting++;
                a->hold++;
            }
        }
        pthread_mutex_unlock(&dev->mu);
        for (uint32_t k = 0; k < n; k++)
            range_close(&c[k]);
        pthread_mutex_lock(&dev->mu);
        for (uint32_t i = 0; i < count; i++) {
            struct vm_alloc *a = vm_lookup(dev, handles[i]); /* held: still there */
            if (a->converting) {
                a->converting = false;
                dev->converting--;
                a->hold--;
            }
        }
        converted(dev);
    }
    if (c != small)
        free(c);
}

static void unlock_one(vidmm_device *dev, struct vm_alloc *a)
{
    if (--a->lock_count)
        return;
    const bool writable = !(a->lock_flags & VIDMM_LOCK_READ_ONLY);
    if (a->lock_mode == VM_LOCK_RANGE && a->range >= 0) {
        struct vm_range *r = &dev->ranges[a->range];
        /* What was written is tiled back already (unlock_convert()). */
        if (writable && a->where == VIDMM_WHERE_SEGMENT)
            a->dirty = true;
        range_lazy_drop(r); /* done by unlock_convert(): nothing left here */
        r->active = false;
    } else if (a->lock_mode == VM_LOCK_ALTVA && a->range >= 0) {
        dev->ranges[a->range].active = false;
    } else if (a->lock_mode == VM_LOCK_DIRECT || a->lock_mode == VM_LOCK_LOCK2 /* WDDM2 hook (lock2.c) */) {
        if (a->wt != NULL)
            watch_done(dev, a);
        if (sysmem_backed(a->g) && a->where == VIDMM_WHERE_SEGMENT && (a->dirty_all_pages || a->ndirty_pages))
            push_dirty_pages(dev, a);
    }
    a->ndirty_pages = 0;
    a->dirty_all_pages = false;
    a->lock_mode = VM_LOCK_NONE;
    a->lock_ptr = NULL;
}

int vidmm_unlock(vidmm_device *dev, uint32_t count, const vidmm_handle *handles)
{
    VM_DEV_CHECK(dev);
    if (!dev || !handles || count == 0)
        return vidmm_refuse(__func__, !dev ? "dev" : !handles ? "handles" : "count", "NULL, or count 0", "15.12");
    pthread_mutex_lock(&dev->mu);
    int err;
again:
    err = dev->removed ? VIDMM_E_DEVICE_REMOVED : 0;
    for (uint32_t i = 0; !err && i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, handles[i]);
        if (a && a->converting) {
            /* Another thread's lock or unlock of it converts its bytes: wait for the outcome. */
            wait_converted(dev);
            goto again;
        }
        if (!a)
            err = vm_refuse_handle(__func__, handles[i]);
        else if (a->lock_count == 0)
            err = vidmm_refuse(__func__, "handles[]", "an allocation that is not locked", "15.12");
        else if (a->lock_mode == VM_LOCK_LOCK2) /* WDDM2 hook: ended by vidmm_wddm2_unlock2() only (lock2.c) */
            err = vidmm_refuse(__func__, "handles[]", "locked by vidmm_wddm2_lock2(): unlock it with vidmm_wddm2_unlock2()",
                               "6.6");
        else
            a->sub_count = 0;
    }
    /* The same handle listed more often than it is locked is also refused. */
    for (uint32_t i = 0; !err && i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, handles[i]);
        if (++a->sub_count > a->lock_count)
            err = vidmm_refuse(__func__, "handles[]", "listed more often than it is locked", "15.12");
    }
    if (!err)
        unlock_convert(dev, count, handles); /* may release the mutex; the list stays valid */
    uint64_t last = 0;
    bool gpu = false;
    for (uint32_t i = 0; !err && i < count; i++) {
        struct vm_alloc *a = vm_lookup(dev, handles[i]);
        const uint64_t before = a->paging_fence;
        unlock_one(dev, a);
        if (a->paging_fence != before) {
            last = a->paging_fence > last ? a->paging_fence : last;
            gpu |= vm_busy(dev, a, false);
        }
    }
    /* The copy-backs an unlock causes (PermanentSysMem) are done, and in the paging log, when
     * it returns (spec 15.28): the caller may read the log, or the segment copy, at once. Not
     * when the GPU still uses the allocation: the copy-back then waits for the GPU (the unlock
     * does not), and is logged once it ran. Nor when other paging waits for the GPU, queued
     * before it (another allocation's eviction, say) or running: on a device without paging
     * threads this thread would wait for a fence only its caller can signal, and with them for
     * a paging thread that waits for one (vm_wait_paging_nowait() stops at any paging that
     * waits for the GPU). The unlock itself has happened either way. */
    if (!err && !gpu && last > dev->paging_done)
        (void)vm_wait_paging_nowait(dev, last);
    vm_unlock_and_page(dev);
    return err;
}

void vm_locks_drop(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->converting) {
        /* A lock or unlock converts its bytes with the mutex released: its view stays in use
         * until it is done. Held meanwhile, so that no destroy frees it under this wait. */
        a->hold++;
        while (a->converting)
            wait_converted(dev);
        if (--a->hold == 0 && dev->hold_waiters)
            pthread_cond_broadcast(&dev->paging_cv);
    }
    if (a->range >= 0 && a->range < (int)dev->nranges) {
        range_lazy_drop(&dev->ranges[a->range]);
        dev->ranges[a->range].active = false;
    }
    if (a->wt != NULL) {
        if (!a->wt_hole)
            (void)vmos_wtrack_disarm(a->wt, a->wt_ptr, (size_t)a->g->size);
        a->wt = NULL;
        a->wt_dense = false;
        a->wt_hole = false;
    }
    a->lock_count = 0;
    a->lock_mode = VM_LOCK_NONE;
    a->lock_ptr = NULL;
    a->ndirty_pages = 0;
    a->dirty_all_pages = false;
}

bool vm_wait_converting(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count)
{
    if (dev->converting == 0)
        return false;
    for (uint32_t i = 0; i < count; i++) {
        const struct vm_alloc *a = vm_lookup(dev, refs[i].allocation);
        if (a != NULL && a->converting) {
            wait_converted(dev); /* woken when a conversion ends */
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * WDDM2 hooks (lock2.c): Lock2 takes its pointer as a plain lock without flags does, once
 * lock2.c has decided that the allocation may be locked where it is (spec 15.23) - the
 * segment's CPU view of a CPU-visible memory segment, else the system-memory backing store
 * (committed now if the content exists nowhere yet; for PermanentSysMem / Existing*SysMem
 * always, a copy the GPU wrote fetched back first). Unlock2 ends it as vidmm_unlock() ends a
 * plain lock (a PermanentSysMem copy-back at the last unlock).
 * ------------------------------------------------------------------------------------------- */
int vm_lock_plain(vidmm_device *dev, struct vm_alloc *a, uint8_t **ptr)
{
    struct vidmm_lock_args args;
    memset(&args, 0, sizeof args);
    args.allocation = a->handle;
    return lock_direct(dev, a, &args, 0, ptr);
}

void vm_unlock_one(vidmm_device *dev, struct vm_alloc *a)
{
    unlock_one(dev, a);
}
