/* SPDX-License-Identifier: MIT */
/* tests/concurrency/test_lock2_concurrency.c - Lock2 / Unlock2 (include/vidmm/wddm2.h, spec
 * 6.6, 15.23) from several threads on a WDDM2 device: a Lock2 that waits for the allocation's
 * paging while another thread pages it in. Run under ThreadSanitizer by the tsan build and in
 * the ordinary builds. */
#ifdef T_LITE_HARNESS
#  include "t_lite.h" /* the ThreadSanitizer build: see t_lite.h */
#else
#  include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "t_helpers.h"

#define SSIZE (64u << 10)
#define PROCESS 1u

/* ---------------------------------------------------------------------------------------------
 * A Lock2 waiting for the allocation's paging while another thread pages it in.
 * ------------------------------------------------------------------------------------------- */
struct race {
    vidmm_device *dev;
    vidmm_handle h;
    int err;
};

static void *race_lock2(void *arg)
{
    struct race *r = arg;
    void *p = NULL;
    r->err = vidmm_wddm2_lock2(r->dev, PROCESS, r->h, 0, &p);
    if (r->err == 0) {
        memset(p, 0x5A, SSIZE); /* the CPU's write, through the pointer Lock2 gave */
        r->err = vidmm_wddm2_unlock2(r->dev, r->h);
    }
    return NULL;
}

static void *race_make_resident(void *arg)
{
    struct race *r = arg;
    struct vidmm_make_resident_args a = { .size_of = sizeof a, .allocations = &r->h, .count = 1 };
    r->err = vidmm_wddm2_make_resident(r->dev, &a);
    if (r->err == VIDMM_PENDING)
        r->err = vidmm_wddm2_paging_fence_wait(r->dev, a.paging_fence, UINT64_MAX);
    return NULL;
}

/* Lock2 waits for the allocation's own paging with the device mutex released (wddm2.h): here
 * its eviction, which waits for the GPU. Meanwhile another thread makes it resident: it is
 * paged back into its segment behind the eviction. The pointer Lock2 returns must be where the
 * allocation is when the lock begins - a pointer to the backing store it was evicted to would
 * take the CPU's writes where the content no longer lives, and the next eviction would copy
 * the segment's older bytes over them. */
Test(lock2_concurrency, pointer_after_a_page_in_during_the_wait, .timeout = 60)
{
    struct vidmm_segment_desc segs[2] = {
        { 0x10000000ull, 512u << 10, 512u << 10, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL },
        { 0x40000000ull, 1u << 20, 1u << 20, VIDMM_SEGMENT_APERTURE, 0, NULL },
    };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = segs;
    dd.segment_count = 2;
    dd.paging_threads = 1;
    dd.wait_timeout_ns = 30ull * 1000000000u;
    dd.flags = VIDMM_DEVICE_WDDM2;
    vidmm_device *dev;
    cr_assert_eq(vidmm_device_create(&dd, &dev), 0);
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    d.size = SSIZE;
    d.flags = VIDMM_ALLOC_CPU_VISIBLE;
    d.priority = VIDMM_PRIORITY_NORMAL;
    d.supported_read_set = d.supported_write_set = 0x1; /* no aperture: Lock2 locks it in place */
    d.fill_pattern = 0x11111111u;
    d.process = PROCESS;
    vidmm_handle h;
    cr_assert_eq(vidmm_alloc_create(dev, &d, &h), 0);
    struct vidmm_make_resident_args mr = { .size_of = sizeof mr, .allocations = &h, .count = 1 };
    int err = vidmm_wddm2_make_resident(dev, &mr);
    cr_assert(err == 0 || err == VIDMM_PENDING, "make_resident: %s", vidmm_strerror(err));
    cr_assert_eq(vidmm_wddm2_paging_fence_wait(dev, mr.paging_fence, UINT64_MAX), 0);
    /* GPU work reading it, not finished: its eviction's transfer waits for it. */
    vidmm_va_space *sp;
    uint64_t va, fence = 0;
    cr_assert_eq(vidmm_va_space_create(dev, PROCESS, &sp), 0);
    cr_assert_eq(vidmm_va_reserve(sp, 0, SSIZE, &va), 0);
    cr_assert_eq(vidmm_va_map(sp, va, h, 0, SSIZE), 0);
    struct vidmm_va_ref ref = { va, SSIZE, 0, 0 };
    cr_assert_eq(vidmm_va_submit(sp, &ref, 1, 0, &fence), 0);
    struct vidmm_evict_args ea = { .size_of = sizeof ea, .allocations = &h, .count = 1 };
    cr_assert_eq(vidmm_wddm2_evict(dev, &ea), 0);
    struct race lock = { dev, h, -1 }, res = { dev, h, -1 };
    pthread_t lt, mt;
    cr_assert_eq(pthread_create(&lt, NULL, race_lock2, &lock), 0);
    struct timespec pause = { 0, 200 * 1000000 };
    nanosleep(&pause, NULL); /* the Lock2 waits for the eviction, which waits for the GPU */
    cr_assert_eq(pthread_create(&mt, NULL, race_make_resident, &res), 0);
    nanosleep(&pause, NULL);
    cr_assert_eq(vidmm_fence_signal(dev, fence), 0);
    pthread_join(lt, NULL);
    pthread_join(mt, NULL);
    cr_assert_eq(lock.err, 0, "Lock2 / Unlock2: %s", vidmm_strerror(lock.err));
    cr_assert_eq(res.err, 0, "make_resident: %s", vidmm_strerror(res.err));
    unsigned char *got = malloc(SSIZE), *want = malloc(SSIZE);
    cr_assert(got && want);
    memset(want, 0x5A, SSIZE);
    cr_assert_eq(vidmm_gpu_access(dev, h, 0, got, SSIZE, false), 0);
    ptrdiff_t diff = t_find_diff(got, want, SSIZE);
    cr_assert_eq(diff, -1, "the write through Lock2 was lost (byte %td is 0x%02x)", diff, got[diff < 0 ? 0 : diff]);
    /* And it stays through an eviction and a page-in. */
    cr_assert_eq(vidmm_wddm2_evict(dev, &ea), 0);
    mr.paging_fence = 0;
    err = vidmm_wddm2_make_resident(dev, &mr);
    cr_assert(err == 0 || err == VIDMM_PENDING, "make_resident: %s", vidmm_strerror(err));
    cr_assert_eq(vidmm_wddm2_paging_fence_wait(dev, mr.paging_fence, UINT64_MAX), 0);
    cr_assert_eq(vidmm_gpu_access(dev, h, 0, got, SSIZE, false), 0);
    cr_assert_eq(t_find_diff(got, want, SSIZE), -1, "the write through Lock2 was lost after a page-in");
    free(got);
    free(want);
    vidmm_va_space_destroy(sp);
    vidmm_device_destroy(dev);
}
