/* SPDX-License-Identifier: MIT */
/* tests/engine/t_wddm2.h - what the WDDM2 conformance suites (tests/engine/test_conf_wddm2_*.c)
 * share, on top of t_engine.h: the standard WDDM2 device, residency calls that fail the test
 * unless they succeed, VA spaces, and paging-log lookups of UPDATE_PAGE_TABLE records.
 *
 * The standard WDDM2 device has the standard device's three segments, in budget groups:
 *   ID 1 T_VIS: memory, CPU_VISIBLE,      1 MiB at 0x10000000, LOCAL_BUDGET_GROUP
 *   ID 2 T_LOC: memory, not CPU-visible,  1 MiB at 0x20000000, LOCAL_BUDGET_GROUP
 *   ID 3 T_APE: aperture,                 2 MiB at 0x40000000, NONLOCAL_BUDGET_GROUP
 * so each process's LOCAL budget starts at 2 MiB and its NON_LOCAL budget at 2 MiB. Paging
 * runs on the calling thread (no paging thread): a page-in stays queued - its make-resident
 * says VIDMM_PENDING - until someone waits for its paging fence. */
#ifndef VIDMM_TESTS_T_WDDM2_H
#define VIDMM_TESTS_T_WDDM2_H

#include "t_engine.h"
#include <string.h>

#define W2_LOCAL_MAX (T_VIS_SIZE + T_LOC_SIZE)
#define W2_NONLOCAL_MAX T_APE_SIZE

static inline vidmm_device *w2_dev_ex(const struct vidmm_driver *drv, uint32_t extra_flags)
{
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP);
    struct vidmm_device_desc d = t_ddesc(segs, 3);
    d.flags |= VIDMM_DEVICE_WDDM2 | extra_flags;
    d.driver = drv;
    return t_dev(&d);
}

static inline vidmm_device *w2_dev(void)
{
    return w2_dev_ex(NULL, 0);
}

/* w2_mr_rc() calls vidmm_wddm2_make_resident() on 'n' handles; '*out' (may be NULL) gets the
 * arguments back. */
static inline int w2_mr_rc(vidmm_device *dev, const vidmm_handle *h, uint32_t n, uint32_t flags,
                           struct vidmm_make_resident_args *out)
{
    struct vidmm_make_resident_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = h;
    a.count = n;
    a.flags = flags;
    a.paging_fence = 0xFEFEFEFEu;
    int rc = vidmm_wddm2_make_resident(dev, &a);
    if (out)
        *out = a;
    return rc;
}

/* w2_resident() makes 'h' resident (one more reference) and waits for its paging. */
static inline void w2_resident(vidmm_device *dev, vidmm_handle h)
{
    struct vidmm_make_resident_args a;
    int rc = w2_mr_rc(dev, &h, 1, 0, &a);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "vidmm_wddm2_make_resident() returned %d (%s)", rc, vidmm_strerror(rc));
    rc = vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX);
    cr_assert_eq(rc, 0, "vidmm_wddm2_paging_fence_wait() returned %d (%s)", rc, vidmm_strerror(rc));
}

static inline int w2_evict_rc(vidmm_device *dev, const vidmm_handle *h, uint32_t n, uint32_t flags,
                              uint64_t *bytes_to_trim)
{
    struct vidmm_evict_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = h;
    a.count = n;
    a.flags = flags;
    a.bytes_to_trim = 0xFEFEFEFEu;
    int rc = vidmm_wddm2_evict(dev, &a);
    if (bytes_to_trim)
        *bytes_to_trim = a.bytes_to_trim;
    return rc;
}

static inline void w2_evict(vidmm_device *dev, vidmm_handle h, uint32_t flags)
{
    int rc = w2_evict_rc(dev, &h, 1, flags, NULL);
    cr_assert_eq(rc, 0, "vidmm_wddm2_evict() returned %d (%s)", rc, vidmm_strerror(rc));
}

/* w2_status() returns the residency status of 'h'; '*refs' (may be NULL) its references. */
static inline uint32_t w2_status(vidmm_device *dev, vidmm_handle h, uint32_t *refs)
{
    uint32_t st = 0, r = 0;
    int rc = vidmm_wddm2_query_residency(dev, &h, 1, &st, &r);
    cr_assert_eq(rc, 0, "vidmm_wddm2_query_residency() returned %d (%s)", rc, vidmm_strerror(rc));
    if (refs)
        *refs = r;
    return st;
}

static inline uint32_t w2_refs(vidmm_device *dev, vidmm_handle h)
{
    uint32_t r;
    w2_status(dev, h, &r);
    return r;
}

/* Wait until every paging operation issued so far has run. */
static inline void w2_drain(vidmm_device *dev)
{
    /* The last issued fence is not public, and waiting for one never issued is refused: walk
     * up from the completed fence until a wait is refused. */
    uint64_t f = vidmm_wddm2_paging_fence_completed(dev);
    while (vidmm_wddm2_paging_fence_wait(dev, f + 1, UINT64_MAX) == 0)
        f++;
}

static inline vidmm_va_space *w2_space(vidmm_device *dev, uint32_t process)
{
    vidmm_va_space *sp = NULL;
    int rc = vidmm_va_space_create(dev, process, &sp);
    cr_assert_eq(rc, 0, "vidmm_va_space_create() returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_not_null(sp);
    return sp;
}

static inline uint64_t w2_reserve(vidmm_va_space *sp, uint64_t base, uint64_t size)
{
    uint64_t va = 0;
    int rc = vidmm_va_reserve(sp, base, size, &va);
    cr_assert_eq(rc, 0, "vidmm_va_reserve() returned %d (%s)", rc, vidmm_strerror(rc));
    return va;
}

static inline void w2_map(vidmm_va_space *sp, uint64_t va, vidmm_handle h, uint64_t off, uint64_t size)
{
    int rc = vidmm_va_map(sp, va, h, off, size);
    cr_assert_eq(rc, 0, "vidmm_va_map() returned %d (%s)", rc, vidmm_strerror(rc));
}

/* Index of the first UPDATE_PAGE_TABLE record of 'h' from 'from', or -1. */
static inline ptrdiff_t w2_log_upt(const struct t_log_buf *b, vidmm_handle h, size_t from)
{
    return t_log_find(b, VIDMM_PAGING_UPDATE_PAGE_TABLE, h, from);
}

#endif /* VIDMM_TESTS_T_WDDM2_H */
