/* SPDX-License-Identifier: MIT */
/* tests/engine/b_wddm2.h - what the hand-run WDDM2 programs (bench_wddm2_residency.c,
 * bench_wddm2_translate.c) share: the clock and the median, the device both of them measure -
 * one CPU-visible memory segment of 64 MiB at 0x10000000 in the local budget group, no paging
 * thread, created with or without VIDMM_DEVICE_WDDM2 - with its allocations, and the WDDM2
 * residency calls with their arguments filled in. Nothing here asserts or exits: every function
 * that can fail returns the library's code and the program decides. */
#ifndef VIDMM_TESTS_B_WDDM2_H
#define VIDMM_TESTS_B_WDDM2_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vidmm/vidmm.h"

#define B_SEG_BASE 0x10000000ull
#define B_SEG_SIZE (64ull << 20)

static inline uint64_t b_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline double b_us(uint64_t from, uint64_t to)
{
    return (double)(to - from) / 1e3;
}

static inline int b_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* b_median() sorts the 'n' values of 'v' (n > 0) and returns the middle one. */
static inline double b_median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, b_cmp_double);
    return v[n / 2];
}

/* b_device() creates the measured device: a WDDM2 device when 'wddm2', else a WDDM1 device
 * with the same segment. Paging runs on the thread that waits for it, so a program measures
 * the copies on its own thread. Returns as vidmm_device_create(). */
static inline int b_device(bool wddm2, vidmm_device **out)
{
    struct vidmm_segment_desc seg;
    memset(&seg, 0, sizeof seg);
    seg.base_address = B_SEG_BASE;
    seg.size = B_SEG_SIZE;
    seg.commit_limit = B_SEG_SIZE;
    seg.flags = VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP;
    struct vidmm_device_desc d = VIDMM_DEVICE_DESC_INIT;
    d.segments = &seg;
    d.segment_count = 1;
    d.flags = wddm2 ? VIDMM_DEVICE_WDDM2 : 0;
    d.paging_threads = 0;
    return vidmm_device_create(&d, out);
}

/* b_allocs() creates 'n' CPU-visible allocations of 'size' bytes of process 1, of normal
 * priority, that the segment can hold, into 'h'. Returns 0 or the first failure's code (the
 * allocations made before it stay, freed with the device). */
static inline int b_allocs(vidmm_device *dev, uint32_t n, uint64_t size, vidmm_handle *h)
{
    int rc = 0;
    for (uint32_t i = 0; !rc && i < n; i++) {
        struct vidmm_alloc_desc a;
        memset(&a, 0, sizeof a);
        a.size_of = sizeof a;
        a.size = size;
        a.supported_read_set = a.supported_write_set = 1;
        a.flags = VIDMM_ALLOC_CPU_VISIBLE;
        a.priority = VIDMM_PRIORITY_NORMAL;
        a.process = 1;
        rc = vidmm_alloc_create(dev, &a, &h[i]);
    }
    return rc;
}

/* b_w2_make_resident() is one vidmm_wddm2_make_resident() call of 'n' handles; '*fence' gets
 * its paging fence. VIDMM_PENDING counts as success (0): the caller waits for '*fence' when
 * the copies are to be done. */
static inline int b_w2_make_resident(vidmm_device *dev, const vidmm_handle *h, uint32_t n, uint64_t *fence)
{
    struct vidmm_make_resident_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = h;
    a.count = n;
    const int rc = vidmm_wddm2_make_resident(dev, &a);
    *fence = a.paging_fence;
    return rc == VIDMM_PENDING ? 0 : rc;
}

/* b_w2_evict() is one vidmm_wddm2_evict() call of 'n' handles (one reference each). */
static inline int b_w2_evict(vidmm_device *dev, const vidmm_handle *h, uint32_t n)
{
    struct vidmm_evict_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = h;
    a.count = n;
    return vidmm_wddm2_evict(dev, &a);
}

/* b_w2_drain() returns once every paging operation queued on the WDDM2 device has run. The
 * last issued fence is not public, and a wait for a fence never issued is refused
 * (VIDMM_E_INVALID_ARG) without waiting: it is found by waiting for fences further and further
 * past the completed one (1, 2, 4, ...) until one is refused, then halving the step back. An
 * Evict issues one fence per allocation, so this is a few waits where a walk one fence at a
 * time (t_wddm2.h w2_drain()) makes 4096, which the figure of the paging would include.
 * Returns 0 or the code of a wait that failed otherwise. */
static inline int b_w2_drain(vidmm_device *dev)
{
    uint64_t f = vidmm_wddm2_paging_fence_completed(dev), step = 1;
    int rc;
    while ((rc = vidmm_wddm2_paging_fence_wait(dev, f + step, UINT64_MAX)) == 0) {
        f += step;
        step *= 2;
    }
    if (rc != VIDMM_E_INVALID_ARG)
        return rc;
    /* f has passed and f + step was never issued: the last issued fence lies between. */
    while (step > 1) {
        step /= 2;
        rc = vidmm_wddm2_paging_fence_wait(dev, f + step, UINT64_MAX);
        if (rc == 0)
            f += step;
        else if (rc != VIDMM_E_INVALID_ARG)
            return rc;
    }
    return 0;
}

/* b_resident() makes 'n' handles resident with their paging done, the way the device's model
 * does it: on a WDDM2 device one MakeResident (one reference each) and a wait for its paging
 * fence, on a WDDM1 device one vidmm_make_resident() (which waits for its own paging). */
static inline int b_resident(vidmm_device *dev, bool wddm2, const vidmm_handle *h, uint32_t n)
{
    if (!wddm2)
        return vidmm_make_resident(dev, h, n, NULL);
    uint64_t fence = 0;
    int rc = b_w2_make_resident(dev, h, n, &fence);
    return rc ? rc : vidmm_wddm2_paging_fence_wait(dev, fence, UINT64_MAX);
}

/* b_setup() is the whole setup: the device ('wddm2' or not) with 'n' allocations of 'size'
 * bytes in 'h', made resident when 'resident'. On failure '*out' is NULL (the device, if
 * made, destroyed) and the code returned. */
static inline int b_setup(bool wddm2, uint32_t n, uint64_t size, bool resident, vidmm_device **out,
                          vidmm_handle *h)
{
    vidmm_device *dev = NULL;
    int rc = b_device(wddm2, &dev);
    if (!rc)
        rc = b_allocs(dev, n, size, h);
    if (!rc && resident)
        rc = b_resident(dev, wddm2, h, n);
    if (rc) {
        vidmm_device_destroy(dev);
        dev = NULL;
    }
    *out = dev;
    return rc;
}

#endif /* VIDMM_TESTS_B_WDDM2_H */
