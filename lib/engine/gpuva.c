/* SPDX-License-Identifier: MIT */
/* lib/engine/gpuva.c - GPU virtual-address spaces of WDDM2 devices (include/vidmm/wddm2.h):
 * reservations, mappings of allocations, the page tables the engine keeps for them, the
 * UPDATE_PAGE_TABLE paging operations that keep those tables on the allocations' placements,
 * the lock-free translation, and submissions naming VA ranges (spec 12, 15.21).
 *
 * Page tables. A space covers 2^48 bytes in 4 KiB pages: three levels of 4096 entries (root ->
 * directory -> leaf of page-table entries), 32 KiB each, a directory or leaf allocated when a
 * mapping first needs it and never freed before the space (so a reader holding a pointer to
 * one never sees it go). An entry is one 64-bit word:
 *   bit 0      VALID   the allocation is resident and the entry points at it
 *   bit 1      MAPPED  something is mapped here (VALID clear: not resident - a page fault)
 *   bits 2-6   the segment ID
 *   bits 12-63 the byte offset of the page in the segment (page-aligned)
 * Writers: only the paging queue, when an UPDATE_PAGE_TABLE operation runs (vm_va_apply(),
 * device mutex held), so that entries change in order with the transfers around them - a
 * page-in's transfer has run before the entries point at its destination. Every store is a
 * release store; vidmm_va_translate() reads with acquire loads and takes no lock: a reader
 * sees a directory or leaf only after its zeroed contents, and an entry value whole.
 *
 * Planning (the mapping lists, which allocation a VA maps) happens under the device mutex, in
 * call order; the entries lag the plan by the paging operations still queued. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

#define PT_BITS 12u
#define PT_ENTRIES (1u << PT_BITS)
#define PT_MASK (PT_ENTRIES - 1u)
#define VA_LIMIT (1ull << VIDMM_VA_BITS)
#define PG ((uint64_t)VIDMM_PAGE_SIZE)

#define PTE_VALID 0x1ull
#define PTE_MAPPED 0x2ull
#define PTE_SEG_SHIFT 2u
#define PTE_SEG_MASK 0x1Full
#define PTE_OFF_MASK (~(PG - 1))

typedef _Atomic uint64_t vm_pte;

struct vm_pt_dir {
    _Atomic(vm_pte *) leaf[PT_ENTRIES];
};

struct vm_va_res {
    uint64_t base, size;
};

struct vm_va_map {
    struct vidmm_va_space *sp;
    struct vm_alloc *a;
    uint64_t va, size;          /* the VA range */
    uint64_t off;               /* offset in the allocation */
    struct vm_va_map *a_next, *a_prev; /* in a->w2.maps */
};

struct vidmm_va_space {
    vidmm_device *dev;
    uint32_t process;
    bool dead;                  /* destroyed, waiting for paging to pass 'last_fence' */
    uint64_t last_fence;        /* the last paging operation writing its entries */
    struct vidmm_va_space *next;
    uint8_t *segcpu[VIDMM_MAX_SEGMENTS + 1]; /* host view of segment ID i (read by translate) */
    struct vmr_set free;        /* unreserved VA */
    struct vm_va_res *res;      /* reservations by base */
    size_t nres, cap_res;
    struct vm_va_map **maps;    /* mappings by VA */
    size_t nmaps, cap_maps;
    _Atomic(struct vm_pt_dir *) root[PT_ENTRIES];
};

#define REFUSE(call, field, rule, spec) vidmm_refuse(call, field, rule, spec)

/* ---------------------------------------------------------------------------------------------
 * Page tables.
 * ------------------------------------------------------------------------------------------- */

/* The entry of 'va' (writers, mutex held; the directory and leaf exist: pt_ensure()). */
static vm_pte *pt_slot(struct vidmm_va_space *sp, uint64_t va)
{
    const uint64_t pn = va >> PT_BITS;
    struct vm_pt_dir *d = atomic_load_explicit(&sp->root[pn >> (2 * PT_BITS)], memory_order_relaxed);
    vm_pte *leaf = atomic_load_explicit(&d->leaf[(pn >> PT_BITS) & PT_MASK], memory_order_relaxed);
    return &leaf[pn & PT_MASK];
}

/* pt_ensure() makes the directories and leaves covering [va, va + size) exist. Each is zeroed
 * before it is published (release: pairs with the acquire loads of vidmm_va_translate()). An
 * empty table made before a failure stays: it maps nothing. */
static int pt_ensure(struct vidmm_va_space *sp, uint64_t va, uint64_t size)
{
    const uint64_t span = PG << PT_BITS; /* bytes one leaf covers: 16 MiB */
    for (uint64_t x = va & ~(span - 1); x < va + size; x += span) {
        const uint64_t pn = x >> PT_BITS;
        _Atomic(struct vm_pt_dir *) *rs = &sp->root[pn >> (2 * PT_BITS)];
        struct vm_pt_dir *d = atomic_load_explicit(rs, memory_order_relaxed);
        if (!d) {
            d = calloc(1, sizeof *d);
            if (!d)
                return VIDMM_E_NO_MEMORY;
            atomic_store_explicit(rs, d, memory_order_release);
        }
        _Atomic(vm_pte *) *ls = &d->leaf[(pn >> PT_BITS) & PT_MASK];
        if (!atomic_load_explicit(ls, memory_order_relaxed)) {
            vm_pte *leaf = calloc(PT_ENTRIES, sizeof *leaf);
            if (!leaf)
                return VIDMM_E_NO_MEMORY;
            atomic_store_explicit(ls, leaf, memory_order_release);
        }
    }
    return 0;
}

static void pt_free(struct vidmm_va_space *sp)
{
    for (uint32_t i = 0; i < PT_ENTRIES; i++) {
        struct vm_pt_dir *d = atomic_load_explicit(&sp->root[i], memory_order_relaxed);
        if (!d)
            continue;
        for (uint32_t k = 0; k < PT_ENTRIES; k++)
            free((void *)atomic_load_explicit(&d->leaf[k], memory_order_relaxed));
        free(d);
    }
}

void vm_va_apply(const struct vm_pop *p)
{
    struct vidmm_va_space *sp = p->va_space;
    const uint64_t n = p->op.size / PG, va = p->op.src.segment_address;
    uint64_t pte = p->pte;
    for (uint64_t i = 0; i < n; i++) {
        /* Release: a translation that reads the new entry also sees whatever the paging queue
         * wrote before it (the page-in's bytes, when this thread ran them). */
        atomic_store_explicit(pt_slot(sp, va + i * PG), pte, memory_order_release);
        if (pte & PTE_VALID)
            pte += PG;
    }
}

int vidmm_va_translate(const vidmm_va_space *sp, uint64_t va, struct vidmm_va_translation *out)
{
    if (!sp || !out || va >= VA_LIMIT)
        return VIDMM_E_INVALID_ARG; /* not logged: this is the GPU's per-access path */
    const uint64_t pn = va >> PT_BITS;
    /* Acquire loads pair with the release stores of pt_ensure() and vm_va_apply(). */
    struct vm_pt_dir *d = atomic_load_explicit(&sp->root[pn >> (2 * PT_BITS)], memory_order_acquire);
    if (!d)
        return VIDMM_E_INVALID_ARG;
    vm_pte *leaf = atomic_load_explicit(&d->leaf[(pn >> PT_BITS) & PT_MASK], memory_order_acquire);
    if (!leaf)
        return VIDMM_E_INVALID_ARG;
    const uint64_t pte = atomic_load_explicit(&leaf[pn & PT_MASK], memory_order_acquire);
    if (!(pte & PTE_VALID))
        return (pte & PTE_MAPPED) ? VIDMM_E_NOT_AVAILABLE : VIDMM_E_INVALID_ARG;
    const uint32_t seg = (uint32_t)((pte >> PTE_SEG_SHIFT) & PTE_SEG_MASK);
    const uint64_t off = (pte & PTE_OFF_MASK) | (va & (PG - 1));
    out->segment_id = seg;
    out->reserved = 0;
    out->offset = off;
    out->cpu = sp->segcpu[seg] + off;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Page-table updates: one UPDATE_PAGE_TABLE operation per mapping and change.
 * ------------------------------------------------------------------------------------------- */
static bool placed(const struct vm_alloc *a)
{
    return (a->where == VIDMM_WHERE_SEGMENT || a->where == VIDMM_WHERE_APERTURE) && a->seg;
}

/* emit_update() queues the operation writing the entries of mapping 'm': pointing at the
 * allocation's placement recorded in a->w2 (pte_seg 0: invalid), or cleared when 'clear'. */
static void emit_update(vidmm_device *dev, struct vm_va_map *m, uint32_t flags, bool clear)
{
    struct vm_alloc *a = m->a;
    struct vm_pop p;
    memset(&p, 0, sizeof p);
    p.op.type = VIDMM_PAGING_UPDATE_PAGE_TABLE;
    p.op.allocation = a->handle;
    p.op.driver_data = a->g->desc.driver_data;
    p.op.size = m->size;
    p.op.src.segment_address = m->va;
    p.op.offset_in_pages = m->va / PG;
    p.op.mdl_offset = (uint32_t)(m->off / PG);
    p.op.swizzling_range_data = m->sp->process;
    if (clear) {
        p.pte = 0;
    } else if (a->w2.pte_seg) {
        const struct vm_segment *s = &dev->seg[a->w2.pte_seg - 1];
        const uint64_t off = a->w2.pte_off + m->off;
        p.op.dst.segment_id = s->id;
        p.op.dst.segment_address = s->base_address + off;
        p.op.dst_ptr = s->cpu + off;
        if (s->flags & VIDMM_SEGMENT_USE_64KB_PAGES)
            flags |= VIDMM_UPDATE_PAGE_TABLE_USE_64KB_PAGES;
        p.pte = off | ((uint64_t)s->id << PTE_SEG_SHIFT) | PTE_MAPPED | PTE_VALID;
    } else {
        p.pte = PTE_MAPPED;
    }
    p.op.flags = flags;
    p.va_space = m->sp;
    /* Running it needs no allocation state (vm_va_apply()): the operation keeps the handle
     * only, as aperture maps do, and may outlive the allocation. */
    p.a = NULL;
    const uint64_t f = vm_emit(dev, &p);
    a->paging_fence = f; /* whoever waits for its placement waits for its entries too */
    m->sp->last_fence = f;
}

void vm_w2_placed(vidmm_device *dev, struct vm_alloc *a)
{
    if (!dev->w2.on)
        return;
    const uint32_t seg = placed(a) ? a->seg->id : 0;
    const uint64_t off = seg ? a->offset : 0;
    if (seg == a->w2.pte_seg && off == a->w2.pte_off)
        return;
    const bool evicted = a->w2.pte_seg && !seg;
    a->w2.pte_seg = seg;
    a->w2.pte_off = off;
    /* The content moved: what it was at its page-in no longer says anything (residency.c sets
     * it again after a page-in it made). */
    a->w2.origin = VM_W2_ORIGIN_UNKNOWN;
    for (struct vm_va_map *m = a->w2.maps; m; m = m->a_next)
        emit_update(dev, m, evicted ? VIDMM_UPDATE_PAGE_TABLE_NOTIFY_EVICTION : 0, false);
}

/* vm_w2_leaving(): 'a''s content is about to leave its placement (an eviction, a discard, a
 * move, the save before a power loss): its entries are made invalid now, by records queued
 * before the TRANSFER / DISCARD_CONTENT / UNMAP that empties the old place, so that a GPU
 * running the paging log in order never reads the old place through a valid entry (issue 27).
 * The placement that follows - vm_w2_placed() from vm_set_where(), or vm_w2_restored() -
 * validates them again after the record that fills the new place. */
void vm_w2_leaving(vidmm_device *dev, struct vm_alloc *a, bool evicting)
{
    if (!dev->w2.on || !a->w2.pte_seg)
        return;
    /* (Its origin stays: an eviction still reads it; the next placement sets it.) */
    a->w2.pte_seg = 0;
    a->w2.pte_off = 0;
    for (struct vm_va_map *m = a->w2.maps; m; m = m->a_next)
        emit_update(dev, m, evicting ? VIDMM_UPDATE_PAGE_TABLE_NOTIFY_EVICTION : 0, false);
}

/* ---------------------------------------------------------------------------------------------
 * Reservations and mappings (sorted arrays; binary searches).
 * ------------------------------------------------------------------------------------------- */

/* Index of the first mapping ending after 'x' (nmaps when none). */
static size_t map_lower(const struct vidmm_va_space *sp, uint64_t x)
{
    size_t lo = 0, hi = sp->nmaps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp->maps[mid]->va + sp->maps[mid]->size <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct vm_va_map *map_at(const struct vidmm_va_space *sp, uint64_t x)
{
    size_t i = map_lower(sp, x);
    return i < sp->nmaps && sp->maps[i]->va <= x ? sp->maps[i] : NULL;
}

/* Index of the reservation holding 'x', or -1. */
static ptrdiff_t res_at(const struct vidmm_va_space *sp, uint64_t x)
{
    size_t lo = 0, hi = sp->nres;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp->res[mid].base + sp->res[mid].size <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sp->nres && sp->res[lo].base <= x ? (ptrdiff_t)lo : -1;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return VIDMM_E_NO_MEMORY;
    *arr = p;
    *cap = c;
    return 0;
}

/* remove_map() takes 'm' out of its space and its allocation and frees it; with 'emit' its
 * entries are cleared by an UPDATE_PAGE_TABLE operation. */
static void remove_map(vidmm_device *dev, struct vm_va_map *m, bool emit)
{
    struct vidmm_va_space *sp = m->sp;
    if (emit)
        emit_update(dev, m, 0, true);
    size_t i = map_lower(sp, m->va);
    memmove(&sp->maps[i], &sp->maps[i + 1], sizeof *sp->maps * (sp->nmaps - i - 1));
    sp->nmaps--;
    if (m->a_prev)
        m->a_prev->a_next = m->a_next;
    else
        m->a->w2.maps = m->a_next;
    if (m->a_next)
        m->a_next->a_prev = m->a_prev;
    free(m);
}

void vm_va_alloc_unmap_all(vidmm_device *dev, struct vm_alloc *a)
{
    while (a->w2.maps)
        remove_map(dev, a->w2.maps, !a->w2.maps->sp->dead);
}

/* Spaces destroyed whose last operation has run are freed. */
static void space_free(struct vidmm_va_space *sp)
{
    pt_free(sp);
    vmr_destroy(&sp->free);
    free(sp->res);
    free(sp->maps);
    free(sp);
}

static void reap(vidmm_device *dev)
{
    for (struct vidmm_va_space **pp = &dev->w2.dead; *pp;) {
        struct vidmm_va_space *sp = *pp;
        if (sp->last_fence <= dev->paging_done) {
            *pp = sp->next;
            space_free(sp);
        } else {
            pp = &sp->next;
        }
    }
}

void vm_va_spaces_free(vidmm_device *dev)
{
    for (int list = 0; list < 2; list++) {
        struct vidmm_va_space *sp = list ? dev->w2.dead : dev->w2.spaces;
        while (sp) {
            struct vidmm_va_space *next = sp->next;
            while (sp->nmaps) /* the device's allocations are gone first; defensive */
                remove_map(dev, sp->maps[sp->nmaps - 1], false);
            space_free(sp);
            sp = next;
        }
    }
    dev->w2.spaces = dev->w2.dead = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Public calls.
 * ------------------------------------------------------------------------------------------- */

/* enter(): the space's device mutex taken; VIDMM_E_DEVICE_REMOVED when the device, or the
 * space's process's device (a GPU fault, wddm2.h Processes), is removed. */
static int enter(vidmm_va_space *sp)
{
    pthread_mutex_lock(&sp->dev->mu);
    return sp->dev->removed || vm_w2_proc_removed(sp->dev, sp->process) ? VIDMM_E_DEVICE_REMOVED : 0;
}

bool vm_va_has_space(const vidmm_device *dev, uint32_t process)
{
    for (const struct vidmm_va_space *s = dev->w2.spaces; s; s = s->next)
        if (s->process == process)
            return true;
    return false;
}

int vidmm_va_space_create(vidmm_device *dev, uint32_t process, vidmm_va_space **out)
{
    VM_DEV_CHECK(dev);
    if (!dev || !out)
        return REFUSE(__func__, !dev ? "dev" : "out", "NULL", "wddm2.h");
    int err = vm_w2_enter(dev, __func__);
    if (!err && vm_w2_proc_removed(dev, process))
        err = VIDMM_E_DEVICE_REMOVED; /* its removed device's paging queues still live */
    for (struct vidmm_va_space *s = dev->w2.spaces; !err && s; s = s->next)
        if (s->process == process)
            err = REFUSE(__func__, "process", "already has a VA space on this device", "wddm2.h");
    struct vidmm_va_space *sp = NULL;
    if (!err) {
        reap(dev);
        sp = calloc(1, sizeof *sp);
        if (!sp)
            err = VIDMM_E_NO_MEMORY;
    }
    if (!err) {
        /* Page 0 is never handed out: VA 0 means "none". */
        if (vmr_init(&sp->free, VA_LIMIT) != 0 || vmr_take(&sp->free, 0, PG) != 0) {
            vmr_destroy(&sp->free);
            free(sp);
            err = VIDMM_E_NO_MEMORY;
        }
    }
    if (!err) {
        sp->dev = dev;
        sp->process = process;
        for (uint32_t i = 0; i < dev->nseg; i++)
            sp->segcpu[i + 1] = dev->seg[i].cpu;
        sp->next = dev->w2.spaces;
        dev->w2.spaces = sp;
        *out = sp;
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

void vidmm_va_space_destroy(vidmm_va_space *sp)
{
    if (!sp)
        return;
    vidmm_device *dev = sp->dev;
    pthread_mutex_lock(&dev->mu);
    /* Its entries are not cleared (nobody translates through it any more): the mappings just
     * go. Operations still queued write its tables: it is freed once they have run. */
    while (sp->nmaps)
        remove_map(dev, sp->maps[sp->nmaps - 1], false);
    for (struct vidmm_va_space **pp = &dev->w2.spaces; *pp; pp = &(*pp)->next) {
        if (*pp == sp) {
            *pp = sp->next;
            break;
        }
    }
    sp->dead = true;
    sp->next = dev->w2.dead;
    dev->w2.dead = sp;
    vm_w2_object_gone(dev, sp->process); /* its process's removal may end (wddm2.h Processes) */
    reap(dev);
    pthread_mutex_unlock(&dev->mu);
}

int vidmm_va_reserve(vidmm_va_space *sp, uint64_t base, uint64_t size, uint64_t *va)
{
    if (!sp || !va)
        return REFUSE(__func__, !sp ? "sp" : "va", "NULL", "wddm2.h");
    if (size == 0 || size % PG || size >= VA_LIMIT)
        return REFUSE(__func__, "size", "0, not a multiple of 4096, or beyond the space", "wddm2.h");
    if (base % PG || base >= VA_LIMIT || VA_LIMIT - base < size)
        return REFUSE(__func__, "base", "not page-aligned, or the range leaves the space", "wddm2.h");
    int err = enter(sp);
    if (!err && base && !vmr_is_free(&sp->free, base, size))
        err = REFUSE(__func__, "base", "overlaps a reservation (or page 0)", "wddm2.h");
    if (!err && !base && !vmr_find(&sp->free, 0, VA_LIMIT, size, VIDMM_VA_RESERVE_ALIGN, false, &base))
        err = VIDMM_E_NO_MEMORY; /* no room left in the space */
    if (!err)
        err = grow((void **)&sp->res, &sp->cap_res, sp->nres, sizeof *sp->res);
    if (!err)
        err = vmr_take(&sp->free, base, size);
    if (!err) {
        size_t i = sp->nres;
        while (i > 0 && sp->res[i - 1].base > base)
            i--;
        memmove(&sp->res[i + 1], &sp->res[i], sizeof *sp->res * (sp->nres - i));
        sp->res[i].base = base;
        sp->res[i].size = size;
        sp->nres++;
        *va = base;
    }
    pthread_mutex_unlock(&sp->dev->mu);
    return err;
}

int vidmm_va_free(vidmm_va_space *sp, uint64_t va)
{
    if (!sp)
        return REFUSE(__func__, "sp", "NULL", "wddm2.h");
    int err = enter(sp);
    ptrdiff_t r = err ? -1 : res_at(sp, va);
    if (!err && (r < 0 || sp->res[r].base != va))
        err = REFUSE(__func__, "va", "no reservation starts there", "wddm2.h");
    if (!err) {
        const uint64_t base = sp->res[r].base, size = sp->res[r].size;
        for (size_t i = map_lower(sp, base); i < sp->nmaps && sp->maps[i]->va < base + size;)
            remove_map(sp->dev, sp->maps[i], true); /* the next one slides into slot i */
        vmr_give(&sp->free, base, size);
        memmove(&sp->res[r], &sp->res[r + 1], sizeof *sp->res * (sp->nres - (size_t)r - 1));
        sp->nres--;
    }
    vm_unlock_and_page(sp->dev);
    return err;
}

int vidmm_va_map(vidmm_va_space *sp, uint64_t va, vidmm_handle h, uint64_t offset, uint64_t size)
{
    if (!sp)
        return REFUSE(__func__, "sp", "NULL", "wddm2.h");
    if (size == 0 || size % PG || va % PG || offset % PG)
        return REFUSE(__func__, "size", "va, offset or size not a multiple of 4096, or size 0", "wddm2.h");
    if (va >= VA_LIMIT || VA_LIMIT - va < size || offset + size < offset)
        return REFUSE(__func__, "va", "the range leaves the space or wraps", "wddm2.h");
    vidmm_device *dev = sp->dev;
    int err = enter(sp);
    struct vm_alloc *a = err ? NULL : vm_lookup(dev, h);
    if (!err && !a)
        err = vm_refuse_handle(__func__, h);
    if (!err && a->g->desc.process != sp->process && !(a->g->desc.kind & VIDMM_ALLOC_KIND_SHARED))
        err = REFUSE(__func__, "h", "an allocation of another process, not shared", "wddm2.h");
    if (!err && offset + size > a->g->size)
        err = REFUSE(__func__, "offset", "offset + size beyond the allocation", "wddm2.h");
    ptrdiff_t r = err ? -1 : res_at(sp, va);
    if (!err && (r < 0 || sp->res[r].base + sp->res[r].size - va < size))
        err = REFUSE(__func__, "va", "the range is not inside one reservation", "wddm2.h");
    size_t at = err ? 0 : map_lower(sp, va);
    if (!err && at < sp->nmaps && sp->maps[at]->va < va + size)
        err = REFUSE(__func__, "va", "the range overlaps a mapping", "wddm2.h");
    if (!err)
        err = pt_ensure(sp, va, size);
    if (!err)
        err = grow((void **)&sp->maps, &sp->cap_maps, sp->nmaps, sizeof *sp->maps);
    struct vm_va_map *m = NULL;
    if (!err && (m = calloc(1, sizeof *m)) == NULL)
        err = VIDMM_E_NO_MEMORY;
    if (!err) {
        m->sp = sp;
        m->a = a;
        m->va = va;
        m->size = size;
        m->off = offset;
        memmove(&sp->maps[at + 1], &sp->maps[at], sizeof *sp->maps * (sp->nmaps - at));
        sp->maps[at] = m;
        sp->nmaps++;
        m->a_next = a->w2.maps;
        if (m->a_next)
            m->a_next->a_prev = m;
        a->w2.maps = m;
        emit_update(dev, m, VIDMM_UPDATE_PAGE_TABLE_INITIAL_UPDATE, false);
    }
    vm_unlock_and_page(dev);
    return err;
}

int vidmm_va_unmap(vidmm_va_space *sp, uint64_t va, uint64_t size)
{
    if (!sp)
        return REFUSE(__func__, "sp", "NULL", "wddm2.h");
    if (size == 0 || va + size < va)
        return REFUSE(__func__, "size", "0, or the range wraps", "wddm2.h");
    int err = enter(sp);
    size_t first = err ? 0 : map_lower(sp, va), n = 0;
    for (size_t i = first; !err && i < sp->nmaps && sp->maps[i]->va < va + size; i++, n++)
        if (sp->maps[i]->va < va || sp->maps[i]->va + sp->maps[i]->size > va + size)
            err = REFUSE(__func__, "va", "a mapping straddles an end of the range", "wddm2.h");
    if (!err && n == 0)
        err = REFUSE(__func__, "va", "nothing is mapped in the range", "wddm2.h");
    for (size_t k = 0; !err && k < n; k++)
        remove_map(sp->dev, sp->maps[first], true);
    vm_unlock_and_page(sp->dev);
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Submissions.
 * ------------------------------------------------------------------------------------------- */
#define VA_MAX_REFS 65536u
#define SEEN 1u
#define WRITTEN 2u

static void release(vidmm_device *dev, struct vm_alloc **u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        u[i]->hold--;
    if (dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv); /* a destroy may wait for them */
}

/* fault(): the GPU touched 'va', which maps nothing resident: the device is in error (spec 12,
 * 15.21). Called with the mutex held; returns with it released. */
static int fault(vidmm_va_space *sp, uint64_t va, const struct vm_alloc *a)
{
    vidmm_device *dev = sp->dev;
    dev->w2.faulted = true; /* the latest fault */
    dev->w2.fault_va = va;
    dev->w2.fault_process = sp->process;
    dev->w2.fault_alloc = a ? a->handle : 0;
    vidmm_log(VIDMM_LOG_WARN, "GPU page fault at VA 0x%llx (process %u): %s - the process's device removed "
              "(spec 12, Doc NONRES)", (unsigned long long)va, sp->process,
              a ? "allocation not on the residency list" : "nothing mapped");
    /* Doc NONRES: the device is removed "for the application that generated the error" - its
     * process's calls fail from now on, its allocations lose their residency, Lock2 locks and
     * pins; the other processes go on. */
    const int err = sp->process ? vm_w2_remove_process(dev, sp->process) : VIDMM_E_INVALID_ARG;
    vm_unlock_and_page(dev);
    if (err) /* process 0, which no call can name, or no memory to remove the process alone */
        vidmm_device_remove(dev);
    return VIDMM_E_DEVICE_REMOVED;
}

int vidmm_va_submit(vidmm_va_space *sp, const struct vidmm_va_ref *refs, uint32_t count, uint32_t flags,
                    uint64_t *fence)
{
    if (!sp || !refs)
        return REFUSE(__func__, !sp ? "sp" : "refs", "NULL", "wddm2.h");
    if (!fence) /* as vidmm_submit(): the work's fence is the only way to end its use */
        return REFUSE(__func__, "fence", "NULL: the submission's fence must be returned to be signalled", "wddm2.h");
    if (count == 0 || count > VA_MAX_REFS)
        return REFUSE(__func__, "count", "0 or above 65536", "wddm2.h");
    if (flags)
        return REFUSE(__func__, "flags", "unknown bits", "wddm2.h");
    for (uint32_t i = 0; i < count; i++) {
        if (refs[i].size == 0 || refs[i].reserved || (refs[i].flags & ~VIDMM_REF_WRITE))
            return REFUSE(__func__, "refs[]", "size 0, reserved not 0 or unknown flags", "wddm2.h");
        if (refs[i].va >= VA_LIMIT || VA_LIMIT - refs[i].va < refs[i].size)
            return REFUSE(__func__, "refs[].va", "the range leaves the space", "wddm2.h");
    }
    vidmm_device *dev = sp->dev;
    struct vm_alloc **u = NULL;
    size_t nu = 0, cap = 0;
    int err = enter(sp);
    if (err)
        goto out;
retry:
    nu = 0;
    const uint32_t tag = ++dev->w2.tag;
    for (uint32_t i = 0; i < count; i++) {
        /* The pages of the range, mapping by mapping: a hole or an allocation off the
         * residency list is where the GPU faults. */
        const uint64_t end = refs[i].va + refs[i].size;
        for (uint64_t x = refs[i].va; x < end;) {
            struct vm_va_map *m = map_at(sp, x);
            if (m && (err = vm_offer_refuse_use(m->a, __func__)) != 0)
                goto out; /* offer hook: reclaim before use, refused before any fault (spec 15.20) */
            if (!m || !m->a->w2_res_count) {
                free(u);
                return fault(sp, x, m ? m->a : NULL);
            }
            struct vm_alloc *a = m->a;
            if (a->w2_tag != tag) {
                if (nu == cap) {
                    size_t c = cap ? cap * 2 : 16;
                    struct vm_alloc **p = realloc(u, sizeof *p * c);
                    if (!p) {
                        err = VIDMM_E_NO_MEMORY;
                        goto out;
                    }
                    u = p;
                    cap = c;
                }
                a->w2_tag = tag;
                a->w2_n = SEEN;
                u[nu++] = a;
            }
            if (refs[i].flags & VIDMM_REF_WRITE)
                a->w2_n |= WRITTEN;
            x = m->va + m->size;
        }
    }
    /* Written out to the disk tier (evicted while listed, by vidmm_evict()): back first. The
     * wait releases the mutex: everything is looked at again. */
    for (size_t i = 0; i < nu; i++) {
        if (u[i]->where == VIDMM_WHERE_DISK || u[i]->swap != VM_SWAP_NONE) {
            if ((err = vm_swap_in(dev, &u[i], 1, true, NULL)) != 0)
                goto out;
            if (dev->removed || vm_w2_proc_removed(dev, sp->process)) {
                err = VIDMM_E_DEVICE_REMOVED;
                goto out;
            }
            goto retry;
        }
    }
    for (size_t i = 0; i < nu; i++)
        u[i]->hold++;
    /* The residency list is made resident before the work runs (spec 12): a listed allocation
     * evicted meanwhile is paged in again; then its paging (and its entries' updates) must be
     * done. Waiting releases the mutex: look again until nothing is left to do. */
    for (;;) {
        uint64_t last = 0;
        for (size_t i = 0; i < nu && !err; i++) {
            struct vm_alloc *a = u[i];
            if (!placed(a)) {
                unsigned use = VM_USE_ANY | (a->lock_count ? VM_USE_APERTURE_ONLY : 0);
                err = vm_make_resident(dev, a, use, false);
                if (err && err != VIDMM_E_DEVICE_REMOVED && err != VIDMM_E_BUSY)
                    err = VIDMM_E_NO_MEMORY;
            }
            if (a->paging_fence > last)
                last = a->paging_fence;
        }
        if (err || last <= dev->paging_done)
            break;
        err = vm_wait_paging_locked(dev, last);
    }
    if (!err && (dev->removed || vm_w2_proc_removed(dev, sp->process)))
        err = VIDMM_E_DEVICE_REMOVED; /* removed while it waited */
    if (!err) {
        const uint64_t f = ++dev->fence_issued;
        for (size_t i = 0; i < nu; i++) {
            struct vm_alloc *a = u[i];
            vm_cache_gpu_use(dev, a, (a->w2_n & WRITTEN) != 0); /* spec 15.24, as vidmm_submit() */
            a->read_fence = f;
            if (a->w2_n & WRITTEN) {
                a->write_fence = f;
                a->dirty = true;
            }
            vm_touch(dev, a);
        }
        dev->st.submissions++;
        *fence = f;
    }
    release(dev, u, nu);
out:
    free(u);
    vm_unlock_and_page(dev);
    return err;
}
