/* SPDX-License-Identifier: MIT */
/* lib/engine/os/os.h - the only door from the engine to the operating system's memory calls:
 * segment memory on the best huge-page tier available, the memfd arena that holds backing
 * stores, and aperture windows that map arena pages without copying (as a GART maps system
 * pages). Every function returns 0 or a negative VIDMM_E_* code and never aborts. */
#ifndef VIDMM_LIB_ENGINE_OS_H
#define VIDMM_LIB_ENGINE_OS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "vidmm/common.h"

/* Page size of the host (4096 on x86-64), read once. */
size_t vmos_page_size(void);

/* Tiers of memory behind a memory segment, best first. The values are public
 * (enum vidmm_memory_tier in vidmm/device.h uses the same numbers). */
enum vmos_tier {
    VMOS_TIER_LIBHUGETLBFS = 0, /* get_huge_pages() from libhugetlbfs (hugetlbfs mount + free pages) */
    VMOS_TIER_HUGETLB = 1,      /* mmap(MAP_HUGETLB) from the kernel's huge page pool */
    VMOS_TIER_THP = 2,          /* anonymous memory with madvise(MADV_HUGEPAGE) */
    VMOS_TIER_BASE = 3          /* anonymous memory on base pages */
};

/* A block of host memory for a memory segment. */
struct vmos_region {
    void *base;         /* page-aligned start, 'size' bytes usable, zero-filled on creation */
    size_t size;        /* the size asked for */
    size_t map_size;    /* what was mapped (rounded up to the tier's page size) */
    size_t page_size;   /* the page size of the tier obtained (2 MiB for huge tiers) */
    int tier;           /* enum vmos_tier obtained */
};

/* vmos_region_alloc() maps 'size' bytes (a multiple of the base page size, > 0), trying the
 * tiers from 'first_tier' down to VMOS_TIER_BASE and taking the first that succeeds.
 * VIDMM_HUGE_TIER in the environment (libhugetlbfs|hugetlb|thp|base) caps the first tier tried
 * (tests use it to run every tier). Returns 0, VIDMM_E_INVALID_ARG or VIDMM_E_NO_MEMORY. */
int vmos_region_alloc(size_t size, int first_tier, struct vmos_region *out);
void vmos_region_free(struct vmos_region *r);

/* The backing-store arena: one memfd of 'reserve' bytes (sparse: nothing is committed until
 * touched), mapped once MAP_SHARED at 'base'. Backing stores are page-aligned ranges of it
 * (the engine places them); vmos_arena_release() gives a range's memory back to the system
 * (the range reads as zeros afterwards). */
struct vmos_arena {
    int fd;
    uint8_t *base;
    size_t reserve;
};

int vmos_arena_init(struct vmos_arena *a, size_t reserve);
void vmos_arena_destroy(struct vmos_arena *a);
int vmos_arena_release(struct vmos_arena *a, size_t off, size_t len);
void vmos_arena_populate(struct vmos_arena *a, size_t off, size_t len);
int vmos_arena_data(struct vmos_arena *a, size_t off, size_t len, uint64_t *bitmap, size_t *pages);

/* An aperture window: 'size' bytes of address space. Unmapped pages read as zeros and take
 * writes without effect on any allocation (the "dummy page" of UNMAP_APERTURE_SEGMENT).
 * vmos_aperture_map() maps arena pages [arena_off, arena_off + len) at window offset 'off'
 * (all page-aligned), so the window and the backing store are the same memory;
 * vmos_aperture_unmap() puts the dummy back. */
struct vmos_aperture {
    uint8_t *base;
    size_t size;
};

int vmos_aperture_init(struct vmos_aperture *ap, size_t size);
void vmos_aperture_destroy(struct vmos_aperture *ap);
int vmos_aperture_map(struct vmos_aperture *ap, size_t off, const struct vmos_arena *a,
                      size_t arena_off, size_t len);
int vmos_aperture_unmap(struct vmos_aperture *ap, size_t off, size_t len);

/* A fresh CPU view of arena pages at an address of its own (UseAlternateVA locks).
 * vmos_view_unmap() takes the pointer and length vmos_view_map() was given/returned. */
int vmos_view_map(const struct vmos_arena *a, size_t arena_off, size_t len, void **out);
void vmos_view_unmap(void *p, size_t len);

/* Lazily filled views (lazyview.c): anonymous memory whose pages are filled on first access,
 * on a handler thread, by 'fill' (bytes [off, off + len) of the view into 'dst'), while armed;
 * writes are recorded per page (userfaultfd asynchronous write-protect). Creation fails with
 * VIDMM_E_UNSUPPORTED where the kernel or the privileges give no full userfaultfd with
 * WP_ASYNC and PAGEMAP_SCAN (Linux 6.7). vmos_lazy_written() sets the bit of every page written
 * since arming; vmos_lazy_disarm() stops filling (a later access reads zeros), drops every
 * page, and reports the faults served and bytes filled since arming. Where the kernel moves
 * pages (Linux 6.8) the view's pages are recycled through a stock of its own rather than freed,
 * which keeps up to 'len' bytes committed between armings (VIDMM_LAZY=copy: never). */
struct vmos_lazy;
typedef void (*vmos_lazy_fill)(void *ctx, size_t off, size_t len, uint8_t *dst);
struct vmos_lazy_stats {
    uint64_t faults, filled;
    bool counted;               /* a writable stream went in counted (vmos_lazy_arm()) */
};
int vmos_lazy_create(size_t len, struct vmos_lazy **out);
uint8_t *vmos_lazy_base(const struct vmos_lazy *v);
size_t vmos_lazy_len(const struct vmos_lazy *v);
/* 'writes': the caller will ask vmos_lazy_written() for the pages written; without it the set
 * may miss a page another thread wrote while its chunk was being installed (a READ_ONLY lock's
 * view: nobody tiles back what it wrote), and installing costs less. 'count_streams' (with
 * 'writes'): once the accesses stream, the chunks after go in unprotected and every page of
 * them counts as written (lazyview.c "Writable streams go in counted"). */
void vmos_lazy_arm(struct vmos_lazy *v, vmos_lazy_fill fill, void *ctx, bool writes, bool count_streams);
int vmos_lazy_written(struct vmos_lazy *v, uint64_t *bitmap, size_t words);
/* vmos_lazy_quiesce() returns once no fill is in progress, every fill so far ordered before
 * the caller's next steps (it then writes what fills read). */
void vmos_lazy_quiesce(struct vmos_lazy *v);
/* vmos_lazy_hold() waits for a fill in progress and keeps every other off (a faulting thread
 * waits) until vmos_lazy_release(): the caller may write what fills read meanwhile (the GPU's
 * write of a locked surface, vidmm_gpu_access()). The read-ahead stops. */
void vmos_lazy_hold(struct vmos_lazy *v);
void vmos_lazy_release(struct vmos_lazy *v);
void vmos_lazy_disarm(struct vmos_lazy *v, struct vmos_lazy_stats *st);
void vmos_lazy_destroy(struct vmos_lazy *v);

/* Write tracking of ranges of one pool mapping (issue 16: what the CPU wrote under a plain
 * lock). vmos_wtrack_create() registers the whole mapping [base, base + size) with a
 * userfaultfd in asynchronous write-protect mode, protecting nothing yet, so nothing outside an
 * armed range ever faults. vmos_wtrack_arm() write-protects [p, p + len): each page's first
 * write from then on (from user or kernel mode) is resolved by the kernel at once and leaves
 * the page marked written. vmos_wtrack_collect() sets in 'bitmap' (bit i = page i of the
 * range; not cleared first) every page of [p, p + len) written since the arm, then lifts the
 * protection when 'lift' (else the pages not written stay protected: a later write to one,
 * from anything, takes a minor fault, about 2 us a page, where lifting them costs a page-table
 * walk, about 0.15 us a page). Pages never populated may be reported as written where the kernel lacks
 * WP_UNPOPULATED: the set is never short. Creation fails with VIDMM_E_UNSUPPORTED where the
 * kernel or the privileges give no WP_ASYNC + PAGEMAP_SCAN (Linux 6.7), or the mapping's kind
 * refuses the registration; arm and collect fail with VIDMM_E_IO / VIDMM_E_NO_MEMORY, the
 * caller then treating every page as written. Ranges are page-aligned and inside the mapping.
 * Calls on disjoint ranges may run from several threads at once. A tracker belongs to the
 * process that created it: in a forked child (whose userfaultfd copy still acts on the parent's
 * memory) arm, collect and disarm fail with VIDMM_E_NOT_AVAILABLE and destroy only closes the
 * child's fd, leaving the parent's registration alone. */
struct vmos_wtrack;
int vmos_wtrack_create(void *base, size_t size, struct vmos_wtrack **out);
void vmos_wtrack_destroy(struct vmos_wtrack *t);
int vmos_wtrack_arm(struct vmos_wtrack *t, void *p, size_t len);
int vmos_wtrack_collect(struct vmos_wtrack *t, void *p, size_t len, uint64_t *bitmap, bool lift);
int vmos_wtrack_disarm(struct vmos_wtrack *t, void *p, size_t len); /* lift, collect nothing */
int vmos_wtrack_count(struct vmos_wtrack *t, void *p, size_t len, size_t *written); /* scan only */
/* A tracker of 'base' that registers nothing at creation: vmos_wtrack_register() registers
 * [p, p + len) (before any arm there; the first one also checks PAGEMAP_SCAN), and
 * vmos_wtrack_unregister() ends it (on shared memory that leaves every page read-only). For a
 * pool of shared memory: a registration of a shared mapping makes every first write into a hole
 * of it slower (1-2.5 us a page measured, Linux 6.18), so only what is tracked is registered.
 * Returns 0, VIDMM_E_UNSUPPORTED (refused: nothing registered), VIDMM_E_NO_MEMORY, or for
 * unregister VIDMM_E_IO. */
int vmos_wtrack_create_lazy(void *base, size_t size, struct vmos_wtrack **out);
int vmos_wtrack_register(struct vmos_wtrack *t, void *p, size_t len);
int vmos_wtrack_unregister(struct vmos_wtrack *t, void *p, size_t len);

/* What tracking costs on this machine (issue 31), measured once per process for each kind of
 * memory ('shared': a memfd mapped shared, like the arena; else private anonymous, like the
 * segments) on a scratch mapping of its own: 'fixed_ns' the system calls of an arm and a lift
 * of one page, and per page 'arm_ns' (arm + scan + lift) and 'fault_ns' (a first write to an
 * armed page, less the write itself); the parts of 'arm_ns' apart: 'protect_ns' (an arm of
 * pages not protected), 'scan_ns' (a scan that changes nothing, of pages not written: what a
 * scan walks past) and 'lift_ns'. Returns 0, or VIDMM_E_UNSUPPORTED / VIDMM_E_NO_MEMORY / VIDMM_E_IO where
 * tracking cannot be had (the answer is kept: asking again costs nothing). */
struct vmos_wtrack_costs {
    uint32_t fixed_ns, arm_ns, fault_ns;
    uint32_t protect_ns, scan_ns, lift_ns;
};
int vmos_wtrack_measure(bool shared, struct vmos_wtrack_costs *out);

/* Which tiers this process could obtain right now (bit n = tier n), for vidmm-info and tests. */
unsigned vmos_tiers_available(void);

/* ---------------------------------------------------------------------------------------------
 * Additions (lib/engine/os/mem.c, hugepages.c) and the details of the contracts above.
 *
 * Arguments: offsets and lengths are multiples of vmos_page_size(); a range must lie inside its
 * arena or window (no wrap-around); len == 0 is VIDMM_E_INVALID_ARG for the map calls and a
 * no-op for vmos_arena_release(). A bad argument returns VIDMM_E_INVALID_ARG and changes nothing.
 * The *_destroy/_free/_unmap calls accept NULL (or a zeroed struct) and leave the struct zeroed
 * (fd -1), so a second call is harmless.
 *
 * Released arena pages: reading them back through any mapping (arena, window, view) allocates
 * zero pages again (tmpfs has no shared zero page), so released memory stays released only
 * while nobody touches it.
 *
 * Failures: mmap/memfd failures return VIDMM_E_NO_MEMORY (VIDMM_E_UNSUPPORTED when the kernel
 * has no memfd_create). A failed vmos_aperture_map()/unmap() leaves each page of the range either
 * as it was or unmapped (the dummy), never a hole in the window: see vmos_aperture_repair().
 *
 * Huge pages: the huge tiers round map_size up to their page size for any 'size'. page_size is
 * 2 MiB for VMOS_TIER_HUGETLB, libhugetlbfs's gethugepagesize() for VMOS_TIER_LIBHUGETLBFS (2 MiB
 * unless HUGETLB_DEFAULT_PAGE_SIZE or the mounts say otherwise) and the PMD size for
 * VMOS_TIER_THP (2 MiB on x86-64). The library never prints, libhugetlbfs included (hugepages.c
 * says how).
 *
 * Thread safety: every function may be called from any thread at once; concurrent map/unmap
 * calls on disjoint ranges of one window are safe. The only process-wide state is the page
 * size, the VIDMM_HUGE_TIER cap and libhugetlbfs's page size (each resolved once) and one mutex
 * that serialises taking pages from the huge page pool.
 * ------------------------------------------------------------------------------------------- */

/* vmos_aperture_repair() maps the dummy over every page of window range [off, off + len) that is
 * not mapped at all, so the window never keeps a hole where another mapping of the process could
 * land (and be clobbered by a later MAP_FIXED). vmos_aperture_map() and vmos_aperture_unmap()
 * call it themselves when the kernel fails them; it is exposed for tests and for callers that
 * want to check a window.
 * Returns: 0, VIDMM_E_INVALID_ARG, or VIDMM_E_NO_MEMORY (a gap could not be filled: no memory
 * for the mapping, or a foreign mapping already sits in it). */
int vmos_aperture_repair(struct vmos_aperture *ap, size_t off, size_t len);

/* vmos_huge_tier_cap() returns the first tier VIDMM_HUGE_TIER allows (VMOS_TIER_LIBHUGETLBFS when
 * unset or invalid; an invalid value logs one warning), parsed once per process. */
int vmos_huge_tier_cap(void);

/* vmos_tiers_available() (above) reports what the host offers, whatever VIDMM_HUGE_TIER says:
 * base always; THP when transparent_hugepage/enabled is not [never] and the process has not
 * disabled it (prctl PR_SET_THP_DISABLE); HUGETLB when one 2 MiB page can be reserved now;
 * LIBHUGETLBFS when libhugetlbfs has a huge page size it can serve and one such page can be
 * reserved now. The probes reserve and release pages; they never fault any in. */

#endif /* VIDMM_LIB_ENGINE_OS_H */
