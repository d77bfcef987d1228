/* SPDX-License-Identifier: MIT */
/* lib/engine/alloc.c - allocations: validation (spec 4.1, 15.2), creation, destruction,
 * backing stores, priorities (15.19), queries. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

/* ---------------------------------------------------------------------------------------------
 * Validation (spec 15.2).
 * ------------------------------------------------------------------------------------------- */
static uint32_t all_segments(const vidmm_device *dev)
{
    return dev->nseg >= 32 ? 0xFFFFFFFFu : (1u << dev->nseg) - 1u;
}

static uint32_t segments_with(const vidmm_device *dev, uint32_t flags)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < dev->nseg; i++)
        if (dev->seg[i].flags & flags)
            m |= 1u << i;
    return m;
}

#define REFUSE(field, rule, spec) vidmm_refuse("vidmm_alloc_create", field, rule, spec)

static inline __attribute__((always_inline)) int check_flags(const vidmm_device *dev, uint32_t f, uint32_t kind)
{
    const uint32_t existing = VIDMM_ALLOC_EXISTING_SYSMEM | VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM;
    if (f & VIDMM_ALLOC_RESERVED_MASK)
        return REFUSE("flags", "reserved bits set", "4.1");
    if (kind & ~(VIDMM_ALLOC_KIND_PRIMARY | VIDMM_ALLOC_KIND_SHARED))
        return REFUSE("kind", "unknown bits", "device.h");
    /* Cached, PermanentSysMem and HistoryBuffer require CpuVisible. */
    if ((f & (VIDMM_ALLOC_CACHED | VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_HISTORY_BUFFER)) &&
        !(f & VIDMM_ALLOC_CPU_VISIBLE))
        return REFUSE("flags", "CACHED, PERMANENT_SYSMEM or HISTORY_BUFFER without CPU_VISIBLE", "4.1");
    /* Protected, PermanentSysMem, ExistingSysMem, ExistingKernelSysMem: at most one. */
    const uint32_t excl = VIDMM_ALLOC_PROTECTED | VIDMM_ALLOC_PERMANENT_SYSMEM | existing;
    if (__builtin_popcount(f & excl) > 1)
        return REFUSE("flags", "more than one of PROTECTED, PERMANENT_SYSMEM, EXISTING_SYSMEM, "
                               "EXISTING_KERNEL_SYSMEM", "4.1");
    /* HistoryBuffer: every other flag 0 but CpuVisible (required) and Cached - which it must
     * carry when the adapter has cache-coherent aperture segments. */
    if ((f & VIDMM_ALLOC_HISTORY_BUFFER) &&
        (f & ~(VIDMM_ALLOC_HISTORY_BUFFER | VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_CACHED)))
        return REFUSE("flags", "HISTORY_BUFFER with flags other than CPU_VISIBLE and CACHED", "4.1");
    if ((f & VIDMM_ALLOC_HISTORY_BUFFER) && !(f & VIDMM_ALLOC_CACHED)) {
        for (uint32_t i = 0; i < dev->nseg; i++)
            if (dev->seg[i].aperture && (dev->seg[i].flags & VIDMM_SEGMENT_CACHE_COHERENT))
                return REFUSE("flags", "HISTORY_BUFFER without CACHED on an adapter with a cache-coherent "
                                       "aperture segment", "4.1");
    }
    if ((f & VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION) && !(f & VIDMM_ALLOC_ACCESSED_PHYSICALLY))
        return REFUSE("flags", "EXPLICIT_RESIDENCY_NOTIFICATION without ACCESSED_PHYSICALLY", "4.1");
    /* UseAlternateVA only on the primary ("any other allocation with it is not created"). */
    if ((f & VIDMM_ALLOC_USE_ALTERNATE_VA) && !(kind & VIDMM_ALLOC_KIND_PRIMARY))
        return REFUSE("flags", "USE_ALTERNATE_VA on an allocation that is not the primary", "4.1");
    /* Not on the primary: PermanentSysMem, Cached, Protected, Existing*. */
    if ((kind & VIDMM_ALLOC_KIND_PRIMARY) &&
        (f & (VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_CACHED | VIDMM_ALLOC_PROTECTED | existing)))
        return REFUSE("flags", "PERMANENT_SYSMEM, CACHED, PROTECTED or EXISTING_* on the primary", "4.1");
    return 0;
}

/* The bytes 'd' takes in segment 's' (PitchAlignment segments: PitchAlignedSize, spec 10). */
static uint64_t space_of(const struct vm_segment *s, const struct vidmm_alloc_desc *d, uint64_t size)
{
    return (s->flags & VIDMM_SEGMENT_PITCH_ALIGNMENT) ? vm_round_up(d->pitch_aligned_size, VIDMM_PAGE_SIZE) : size;
}

/* could_ever_fit(): some segment of 'set' could hold 'd' were it empty: its size (the top 20 %
 * for Overlay / Capture), and for an aperture its CommitLimit and the adapter's
 * ApertureSegmentCommitLimit (spec 15.3). Caller memory never goes to an aperture here. */
static inline __attribute__((always_inline)) bool could_ever_fit(const vidmm_device *dev, const struct vidmm_alloc_desc *d, uint64_t size, uint32_t set)
{
    const bool pinned = (d->flags & (VIDMM_ALLOC_OVERLAY | VIDMM_ALLOC_CAPTURE)) != 0;
    for (uint32_t i = 0; i < dev->nseg; i++) {
        const struct vm_segment *s = &dev->seg[i];
        if (!(set & (1u << i)))
            continue;
        const uint64_t len = space_of(s, d, size);
        uint64_t room = s->size;
        if (pinned)
            room = s->size - vm_round_up(s->size - s->size / 5, VIDMM_PAGE_SIZE);
        if (s->aperture) {
            if (d->existing_memory)
                continue;
            if (s->commit_limit < room)
                room = s->commit_limit;
            if (dev->aperture_commit_limit && dev->aperture_commit_limit < room)
                room = dev->aperture_commit_limit;
        }
        if (len <= room)
            return true;
    }
    return false;
}

static inline __attribute__((always_inline)) int check_alloc(const vidmm_device *dev, const struct vidmm_alloc_desc *d, uint64_t *rounded)
{
    if (d->size == 0 || d->size > (UINT64_MAX >> 1))
        return REFUSE("size", "0 or beyond 2^63", "15.2");
    const uint64_t size = vm_round_up(d->size, VIDMM_PAGE_SIZE);
    if (d->priority == 0)
        return REFUSE("priority", "0", "15.2");
    int err = check_flags(dev, d->flags, d->kind);
    if (!err)
        err = vm_w2_check_alloc(dev, d); /* WDDM2 hook: renaming, USE_ALTERNATE_VA (residency.c) */
    if (err)
        return err;
    const uint32_t supported = d->supported_read_set | d->supported_write_set;
    /* (A WDDM2 device's read set is its write set here: vidmm_alloc_create().) */
    const char *set_name = dev->w2.on ? "supported_write_set" : "supported_read_set";
    if (supported == 0)
        return REFUSE(set_name, dev->w2.on ? "empty" : "read and write sets both empty", "15.2");
    if (supported & ~all_segments(dev))
        return REFUSE(set_name, "names a segment the device does not have", "15.2");
    if (d->eviction_set & ~all_segments(dev))
        return REFUSE("eviction_set", "names a segment the device does not have", "15.2");
    if (d->alignment & (d->alignment - 1))
        return REFUSE("alignment", "not 0 or a power of two", "15.2");
    if ((supported & segments_with(dev, VIDMM_SEGMENT_USE_64KB_PAGES)) && (d->alignment == 0 || d->alignment % 65536))
        return REFUSE("alignment", "not a multiple of 64 KB with a USE_64KB_PAGES segment supported", "15.2");
    if (d->pitch_aligned_size != 0 && d->pitch_aligned_size < d->size)
        return REFUSE("pitch_aligned_size", "below size", "15.2");
    if (d->pitch_aligned_size > (UINT64_MAX >> 1))
        return REFUSE("pitch_aligned_size", "beyond 2^63 (would wrap when rounded to the page)", "15.2");
    if ((supported & segments_with(dev, VIDMM_SEGMENT_PITCH_ALIGNMENT)) && d->pitch_aligned_size == 0)
        return REFUSE("pitch_aligned_size", "0 with a PITCH_ALIGNMENT segment supported", "15.2");
    /* PreferredSegment: IDs in the supported set, 0 ends the list, reserved bits 0. */
    if (d->preferred_segment & 0xC0000000u)
        return REFUSE("preferred_segment", "reserved bits set", "3.1");
    for (int k = 0; k < 5; k++) {
        uint32_t id = (d->preferred_segment >> (6 * k)) & 0x1F;
        if (id == 0)
            break;
        if (!(supported & (1u << (id - 1))))
            return REFUSE("preferred_segment", "a SegmentId outside the supported set", "15.2");
    }
    /* EvictionSegmentSet: aperture segments only, never PitchAlignment ones. */
    const uint32_t apertures = segments_with(dev, VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP);
    if ((d->eviction_set & ~apertures) || (d->eviction_set & segments_with(dev, VIDMM_SEGMENT_PITCH_ALIGNMENT)))
        return REFUSE("eviction_set", "a segment that is not an aperture, or a PITCH_ALIGNMENT one", "15.2");
    /* Existing memory: with its flag only; pointer and size page-aligned (spec 4.1: "page-aligned,
     * page-multiple size"), so that no page of it is shared with memory the caller did not give. */
    const bool existing = (d->flags & (VIDMM_ALLOC_EXISTING_SYSMEM | VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM)) != 0;
    if (existing != (d->existing_memory != NULL))
        return REFUSE("existing_memory", existing ? "NULL with EXISTING_*" : "set without EXISTING_*", "15.2");
    if (existing && (uintptr_t)d->existing_memory % VIDMM_PAGE_SIZE)
        return REFUSE("existing_memory", "not page-aligned", "15.2");
    if (existing && d->size % VIDMM_PAGE_SIZE)
        return REFUSE("size", "not a multiple of the page size with EXISTING_*", "15.2");
    if (existing && (uintptr_t)d->existing_memory + size < (uintptr_t)d->existing_memory)
        return REFUSE("existing_memory", "pointer + size wraps", "15.2");
    /* Swizzled: a layout and a surface that fit; neither without the flag. */
    const bool swz = (d->flags & VIDMM_ALLOC_SWIZZLED) != 0;
    if (swz != (d->layout != NULL) || swz != (d->surface != NULL))
        return REFUSE("layout", swz ? "SWIZZLED without a layout and a surface" : "a layout or surface without SWIZZLED",
                      "device.h");
    if (swz) {
        uint64_t tiled, linear;
        if (vidmm_surface_tiled_size(d->layout, d->surface, &tiled) != 0 ||
            vidmm_surface_linear_size(d->layout, d->surface, &linear) != 0)
            return REFUSE("layout", "the layout or surface is invalid", "tiling.md");
        if (tiled > size)
            return REFUSE("size", "smaller than the tiled surface", "device.h");
    }
    /* Caller memory cannot be mapped into an aperture window here (it is not the engine's
     * memfd): a set of apertures only could never hold it. Refused now rather than failing
     * every placement later. */
    const uint32_t mem = all_segments(dev) & ~apertures;
    if (existing && (!(supported & mem) || (d->supported_read_set && !(d->supported_read_set & mem)) ||
                     (d->supported_write_set && !(d->supported_write_set & mem)))) {
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_alloc_create: supported sets: EXISTING_* memory needs a memory segment in "
                                   "each set: caller memory cannot be mapped into an aperture (README)");
        return VIDMM_E_UNSUPPORTED;
    }
    /* Sizes that could never be placed, or never get a backing store, fail now (and fast). */
    if (!could_ever_fit(dev, d, size, supported)) {
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_alloc_create: size: %llu bytes exceed every supported segment",
                  (unsigned long long)size);
        return VIDMM_E_NO_VIDEO_MEMORY;
    }
    if (!existing && size > dev->arena_space.size) {
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_alloc_create: size: %llu bytes exceed the system-memory reservation",
                  (unsigned long long)size);
        return VIDMM_E_NO_MEMORY;
    }
    *rounded = size;
    return 0;
}

/* WDDM2 hook (lock2.c, UpdateAllocationProperty): the creation rules (spec 15.2) applied to an
 * allocation's descriptor with changed segment sets, preference or flags. */
int vm_check_alloc_desc(const vidmm_device *dev, const struct vidmm_alloc_desc *d)
{
    uint64_t size;
    return check_alloc(dev, d, &size);
}

/* ---------------------------------------------------------------------------------------------
 * Instances.
 * ------------------------------------------------------------------------------------------- */
bool vm_busy(const vidmm_device *dev, const struct vm_alloc *a, bool writes_only)
{
    if (a->write_fence > dev->fence_done)
        return true;
    return !writes_only && a->read_fence > dev->fence_done;
}

void vm_touch(vidmm_device *dev, struct vm_alloc *a)
{
    a->lru = ++dev->clock;
    if (a->seg)
        vm_res_touch(a->seg, a);
    else if (a->in_sysmem)
        vm_res_touch(&dev->sysmem, a);
}

/* The hot fields fill the first cache line exactly (engine.h struct vm_alloc). */
_Static_assert(offsetof(struct vm_alloc, hold) == 64, "struct vm_alloc: the hot fields are not one cache line");

/* Instances are 64-byte aligned (the hot fields share one cache line), and aligned_alloc()
 * costs glibc several hundred instructions more than malloc(): create + destroy with 1000 live
 * allocations took 41% more instructions (tools/bench_gate.sh, engine/alloc_create_destroy).
 * So a device keeps up to VM_INST_CACHE freed instances for its next ones. Not under
 * AddressSanitizer, whose use-after-free reports need every instance freed. */
#if defined(__SANITIZE_ADDRESS__)
#define VM_INST_CACHE 0u
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VM_INST_CACHE 0u
#endif
#endif
#ifndef VM_INST_CACHE
#define VM_INST_CACHE 256u
#endif

static struct vm_alloc *instance_get(vidmm_device *dev)
{
    struct vm_alloc *a = dev->inst_cache;
    if (a) {
        dev->inst_cache = a->res_next;
        dev->inst_cached--;
    } else if ((a = aligned_alloc(64, vm_round_up(sizeof *a, 64))) == NULL) {
        return NULL;
    }
    memset(a, 0, sizeof *a);
    return a;
}

static void instance_put(vidmm_device *dev, struct vm_alloc *a)
{
    if (dev->inst_cached + 1u > VM_INST_CACHE) { /* not '>=': a cache of 0 under ASan (-Wtype-limits) */
        free(a);
        return;
    }
    a->res_next = dev->inst_cache;
    dev->inst_cache = a;
    dev->inst_cached++;
}

void vm_instance_cache_free(vidmm_device *dev)
{
    while (dev->inst_cache) {
        struct vm_alloc *a = dev->inst_cache;
        dev->inst_cache = a->res_next;
        free(a);
    }
    dev->inst_cached = 0;
}

struct vm_alloc *vm_instance_new(vidmm_device *dev, struct vm_group *g)
{
    if (g->ninst == g->cap) {
        uint32_t cap = g->cap ? g->cap * 2 : 1;
        struct vm_alloc **p = realloc(g->inst, sizeof *p * cap);
        if (!p)
            return NULL;
        g->inst = p;
        g->cap = cap;
    }
    /* 64-byte aligned: the hot fields share one cache line (engine.h struct vm_alloc). */
    struct vm_alloc *a = instance_get(dev);
    if (!a)
        return NULL;
    a->dev = dev;
    a->g = g;
    a->range = -1;
    a->index = g->ninst;
    a->seq = ++dev->clock;
    if (vm_handle_new(dev, a) != 0) {
        instance_put(dev, a);
        return NULL;
    }
    if (g->desc.existing_memory) {
        /* The caller's memory is the backing store and holds the content from the start. */
        a->has_backing = true;
        a->backing_valid = true;
        a->backing = g->desc.existing_memory;
        vm_set_where(dev, a, VIDMM_WHERE_SYSMEM);
    }
    g->inst[g->ninst++] = a;
    return a;
}

/* vm_set_where() records where the content is now. Allocations whose content sits in system
 * memory are kept in eviction order too (dev->sysmem: priority, then least recently there), for
 * the disk tier to pick the coldest. A placement takes an allocation off that list before it
 * joins a segment's (take_space), as both use the same links. */
void vm_set_where(vidmm_device *dev, struct vm_alloc *a, uint32_t where)
{
    /* Content that moves is content a disk copy in the making no longer matches: a write-out
     * completing after any move keeps the memory (swap.c). */
    if (a->where != where)
        a->gen++;
    if (a->where == VIDMM_WHERE_SYSMEM && where != VIDMM_WHERE_SYSMEM && a->in_sysmem)
        vm_sysmem_unlist(dev, a);
    if (where == VIDMM_WHERE_SYSMEM && !a->in_sysmem && !a->seg) {
        a->lru = ++dev->clock;
        if (vm_res_link(&dev->sysmem, a) == 0)
            a->in_sysmem = true;
    }
    a->where = where;
    vm_w2_placed(dev, a); /* WDDM2 hook: page-table entries follow the placement (gpuva.c) */
}

void vm_sysmem_unlist(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->in_sysmem) {
        vm_res_unlink(&dev->sysmem, a);
        a->in_sysmem = false;
    }
}

/* vm_materialize() gives content that exists nowhere yet (the fill pattern) a home in the
 * system-memory backing store. */
int vm_materialize(vidmm_device *dev, struct vm_alloc *a)
{
    int err = vm_backing_ensure(dev, a);
    if (err)
        return err;
    if (a->g->desc.fill_pattern)
        vidmm_fill32(a->backing, a->g->desc.fill_pattern, (size_t)a->g->size, VIDMM_MEM_CACHED);
    a->backing_valid = true;
    vm_set_where(dev, a, VIDMM_WHERE_SYSMEM);
    return 0;
}

int vm_backing_ensure(vidmm_device *dev, struct vm_alloc *a)
{
    if (a->has_backing)
        return 0;
    uint64_t off;
    if (!vmr_find(&dev->arena_space, 0, dev->arena_space.size, a->g->size, VIDMM_PAGE_SIZE, false, &off))
        return VIDMM_E_NO_MEMORY;
    int err = vmr_take(&dev->arena_space, off, a->g->size);
    if (err)
        return err;
    a->has_backing = true;
    a->backing_valid = false;
    a->backing_off = off;
    a->backing = dev->arena.base + off;
    dev->sysmem_used += a->g->size;
    return 0;
}

void vm_backing_release(vidmm_device *dev, struct vm_alloc *a)
{
    if (!a->has_backing || a->g->desc.existing_memory)
        return;
    vm_watch_forget(dev, a); /* its write-tracking registration, if any (lock.c) */
    /* The pages go back to the system and read as zeros for the next owner. */
    vmos_arena_release(&dev->arena, (size_t)a->backing_off, (size_t)a->g->size);
    vmr_give(&dev->arena_space, a->backing_off, a->g->size);
    dev->sysmem_used -= a->g->size;
    a->has_backing = false;
    a->backing = NULL;
}

/* A backing store is stale when the content lives in a memory segment and the store is only an
 * old copy (page_into_memory() marks it so): nothing reads it until the next eviction, which
 * rewrites it whole, so its memory can go back at once - cheaper than any write-out. Not while
 * paging still reads it, a disk write-out holds it, an alternate VA maps it, or a call holds it. */
void vm_release_stale_backing(vidmm_device *dev)
{
    for (uint32_t i = 0; i < dev->nseg && dev->sysmem_used > dev->budget; i++) {
        struct vm_segment *s = &dev->seg[i];
        if (s->aperture)
            continue;
        for (uint32_t bi = 0; bi < s->nbuckets && dev->sysmem_used > dev->budget; bi++) {
            for (struct vm_alloc *a = s->buckets[bi].head; a && dev->sysmem_used > dev->budget; a = a->res_next) {
                if (a->where == VIDMM_WHERE_SEGMENT && a->has_backing && !a->backing_valid &&
                    !a->g->desc.existing_memory && a->swap == VM_SWAP_NONE && !a->altva && !a->hold &&
                    a->paging_fence <= dev->paging_done)
                    vm_backing_release(dev, a);
            }
        }
    }
}

void vm_instance_free(vidmm_device *dev, struct vm_alloc *a)
{
    vm_swap_forget(dev, a);
    vm_locks_drop(dev, a);
    vm_range_release_alloc(dev, a);
    vm_w2_alloc_free(dev, a); /* WDDM2 hook: its VA mappings and residency references go first */
    vm_offer_forget(dev, a);  /* offer hook: off the offered lists (offer.c) */
    vm_unplace(dev, a);
    vm_sysmem_unlist(dev, a); /* after vm_unplace(), which may list it */
    vm_backing_release(dev, a);
    if (a->altva)
        vmos_view_unmap(a->altva, a->altva_len);
    free(a->dirty_pages);
    free(a->cpu_dirty);
    vm_handle_free(dev, a->handle);
    instance_put(dev, a);
}

/* ---------------------------------------------------------------------------------------------
 * Public calls.
 * ------------------------------------------------------------------------------------------- */
int vidmm_alloc_create(vidmm_device *dev, const struct vidmm_alloc_desc *desc, vidmm_handle *out)
{
    VM_DEV_CHECK(dev);
    if (!dev || !desc || !out || desc->size_of < sizeof *desc)
        return REFUSE(!dev ? "dev" : !desc ? "desc" : !out ? "out" : "desc->size_of", "NULL, or size_of too small",
                      "device.h");
    pthread_mutex_lock(&dev->mu);
    int err;
    uint64_t size = 0;
    struct vm_group *g = NULL;
    /* nremoved tested here, not only inside the call: the create path is gated in instructions
     * (engine/alloc_create_destroy/live1000 +1.8% with the out-of-line call, issue 27). */
    if (dev->removed || (dev->w2.nremoved && vm_w2_proc_removed(dev, desc->process))) {
        err = VIDMM_E_DEVICE_REMOVED; /* the device, or its process's (a GPU fault, wddm2.h Processes) */
        goto out;
    }
    /* A WDDM2 device reads the WDDM2 flag layout (spec 4.2, wddm2.h): its reserved bits and its
     * own flags' rules are checked here, and its own flags, which mean nothing to the WDDM1
     * rules below, are cleared. Spec 3.3, 15.2: it ignores SupportedReadSegmentSet and uses
     * only the write set - neither validated nor used: reads are allowed wherever writes are. */
    struct vidmm_alloc_desc w2d;
    if (dev->w2.on) {
        if ((err = vm_w2_check_flags(desc->flags)) != 0)
            goto out;
        w2d = *desc;
        w2d.supported_read_set = w2d.supported_write_set;
        w2d.flags &= ~VM_W2_ALLOC_OWN; /* no WDDM1 meaning, no effect here (wddm2.h) */
        desc = &w2d;
    }
    if ((err = check_alloc(dev, desc, &size)) != 0)
        goto out;
    g = calloc(1, sizeof *g);
    if (!g) {
        err = VIDMM_E_NO_MEMORY;
        goto out;
    }
    g->desc = *desc;
    g->desc.layout = NULL;
    g->desc.surface = NULL;
    g->size = size;
    g->supported = desc->supported_read_set | desc->supported_write_set;
    g->priority = desc->priority;
    if (desc->flags & VIDMM_ALLOC_SWIZZLED) {
        g->layout = *desc->layout;
        g->surface = *desc->surface;
        if (desc->layout->equation) {
            g->equation = *desc->layout->equation;
            g->layout.equation = &g->equation;
        }
        uint64_t lin = 0, tiled = 0;
        vidmm_surface_linear_size(&g->layout, &g->surface, &lin);
        vidmm_surface_tiled_size(&g->layout, &g->surface, &tiled);
        g->linear_size = lin;
        g->tiled_size = tiled;
        /* Every tiled byte belongs to one element exactly when both forms have the same size:
         * otherwise tiling a page-in leaves padding bytes to be cleared (paging.c). */
        g->swz_padded = tiled != lin;
    }
    struct vm_alloc *a = vm_instance_new(dev, g);
    if (!a) {
        free(g->inst);
        free(g);
        err = VIDMM_E_NO_MEMORY;
        goto out;
    }
    a->pinned = (desc->flags & (VIDMM_ALLOC_OVERLAY | VIDMM_ALLOC_CAPTURE)) != 0;
    /* PermanentSysMem keeps its system-memory copy for life, but that copy is committed (and
     * filled with the pattern) only when first needed - a lock, a placement or a GPU write
     * (vm_materialize()) - not here, under the device mutex, for bytes nobody may ever touch. */
    *out = a->handle;
out:
    vm_unlock_and_page(dev);
    return err;
}

int vidmm_alloc_destroy(vidmm_device *dev, vidmm_handle h)
{
    VM_DEV_CHECK(dev);
    if (!dev)
        return vidmm_refuse(__func__, "dev", "NULL", "device.h");
    pthread_mutex_lock(&dev->mu);
    struct vm_alloc *a = vm_lookup(dev, h);
    if (!a) {
        pthread_mutex_unlock(&dev->mu);
        return vm_refuse_handle(__func__, h);
    }
    struct vm_group *g = a->g;
    /* Paging already queued for any instance must finish before its memory is reused. */
    for (;;) {
        uint64_t last = 0;
        bool held = false, io = false;
        for (uint32_t k = 0; k < g->ninst; k++) {
            struct vm_alloc *x = g->inst[k];
            if (x->paging_fence > last)
                last = x->paging_fence;
            held |= x->hold != 0;
            x->dying = true; /* a write-out completing now drops its copy */
            io |= x->swap == VM_SWAP_WRITING || x->swap == VM_SWAP_RELEASING || x->swap == VM_SWAP_READING;
        }
        if (last <= dev->paging_done && !held && !io)
            break;
        if (io) {
            pthread_cond_wait(&dev->io_cv, &dev->mu); /* disk I/O of it finishes first */
            if (vm_lookup(dev, h) != a) {
                pthread_mutex_unlock(&dev->mu);
                return vm_refuse_handle(__func__, h);
            }
            continue;
        }
        /* Another thread is in the middle of placing or locking it (misuse, but no crash). */
        if (last <= dev->paging_done) {
            dev->hold_waiters++;
            pthread_cond_wait(&dev->paging_cv, &dev->mu);
            dev->hold_waiters--;
        } else if (vm_wait_paging_locked(dev, last) == VIDMM_E_TIMEOUT) {
            /* Its paging waits behind the GPU beyond the device's wait timeout: nothing is
             * destroyed (the operations still use its memory). */
            pthread_mutex_unlock(&dev->mu);
            return VIDMM_E_TIMEOUT;
        }
        if (vm_lookup(dev, h) != a) { /* destroyed meanwhile by another thread */
            pthread_mutex_unlock(&dev->mu);
            return vm_refuse_handle(__func__, h);
        }
    }
    int err = dev->removed ? VIDMM_E_DEVICE_REMOVED : 0;
    for (uint32_t k = g->ninst; k-- > 0;)
        vm_instance_free(dev, g->inst[k]);
    free(g->inst);
    free(g);
    pthread_mutex_unlock(&dev->mu);
    return err;
}

int vidmm_alloc_query(vidmm_device *dev, vidmm_handle h, struct vidmm_alloc_info *info)
{
    VM_DEV_CHECK(dev);
    if (!dev || !info || info->size_of < sizeof *info)
        return vidmm_refuse(__func__, !dev ? "dev" : "info", "NULL, or size_of too small", "device.h");
    int err;
    struct vm_alloc *a = vm_enter(dev, h, &err);
    if (!err) {
        memset(info, 0, sizeof *info);
        info->size_of = sizeof *info;
        info->where = a->where;
        if (a->seg) {
            info->segment_id = a->seg->id;
            info->offset = a->offset;
            info->gpu_address = a->seg->base_address + a->offset;
            info->size = a->space;
        } else {
            info->size = a->g->size;
        }
        info->priority = a->g->priority;
        info->lock_count = a->lock_count;
        info->dirty = a->dirty;
        info->busy = vm_busy(dev, a, false);
        info->evicted_swizzled = a->where == VIDMM_WHERE_SYSMEM && a->evicted_swizzled;
        info->pinned = a->pinned;
        info->instance = a->index;
        info->current = a->g->inst[a->g->current]->handle;
        info->content_lost = a->content_lost;
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

int vidmm_set_priority(vidmm_device *dev, const vidmm_handle *handles, const uint32_t *priorities, uint32_t count)
{
    VM_DEV_CHECK(dev);
    if (!dev || !handles || !priorities || count == 0)
        return vidmm_refuse(__func__, !dev ? "dev" : !count ? "count" : "handles", "NULL, or count 0", "device.h");
    pthread_mutex_lock(&dev->mu);
    int err = vm_check_handles(dev, handles, count);
    /* Applied at once, to every instance (they share the group), spec 5 / 15.19. */
    for (uint32_t i = 0; !err && i < count; i++) {
        struct vm_group *g = vm_lookup(dev, handles[i])->g;
        g->priority = priorities[i];
        for (uint32_t k = 0; k < g->ninst; k++) {
            if (g->inst[k]->seg)
                vm_res_reprioritise(g->inst[k]->seg, g->inst[k]);
            else if (g->inst[k]->in_sysmem)
                vm_res_reprioritise(&dev->sysmem, g->inst[k]);
        }
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}
