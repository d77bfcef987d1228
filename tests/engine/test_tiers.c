/* SPDX-License-Identifier: MIT */
/* tests/engine/test_tiers.c - the video memory manager on every memory tier (issue: "everything
 * works on every tier"): a device whose memory segments come from libhugetlbfs, explicit huge
 * pages, transparent huge pages and base pages in turn, each reporting the tier it obtained in
 * its statistics, and the same content round trip on each: fill, GPU writes, eviction to system
 * memory and to an aperture, page-in, CPU locks - every byte checked. A tier the host cannot give
 * is a skip that says why. As root, the runner raises the 2 MiB huge page pool for the suite and
 * restores it afterwards (t_hugepool.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"
#include "t_hugepool.h"

#define SEG (8u << 20)
#define N 6
#define ASZ (3u << 20)

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    /* Two devices of two memory segments each may run at once (Criterion runs tests in
     * parallel), plus slack. */
    t_pool_raise("test_tiers", 2 * (2 * SEG / (2u << 20)) + 4);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    t_pool_restore("test_tiers");
}

static const char *const tier_name[] = { "libhugetlbfs", "hugetlb", "thp", "base" };

static void round_trip(uint32_t tier)
{
    struct vidmm_segment_desc segs[3] = {
        { 0x10000000ull, SEG, SEG, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 },
        { 0x20000000ull, SEG, SEG, 0, 0, NULL, 0 },
        { 0x40000000ull, SEG, SEG, VIDMM_SEGMENT_APERTURE, 0, NULL, 0 },
    };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = segs;
    dd.segment_count = 3;
    dd.memory_tier = tier;
    vidmm_device *dev;
    int err = vidmm_device_create(&dd, &dev);
    cr_assert_eq(err, 0, "device_create on tier %s: %s", tier_name[tier], vidmm_strerror(err));
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(dev, &st), 0);
    for (int s = 0; s < 2; s++) {
        if (st.segments[s].memory_tier != tier) {
            cr_assert_gt(st.segments[s].memory_tier, tier, "a better tier than asked for");
            vidmm_device_destroy(dev);
            cr_skip("tier %s not available here (segment %d got %s)", tier_name[tier], s + 1,
                    tier_name[st.segments[s].memory_tier]);
        }
    }
    cr_assert_eq(st.segments[2].memory_tier, (uint32_t)VIDMM_TIER_BASE, "an aperture has no memory tier");

    /* Six 3 MiB allocations for 2 x 8 MiB of memory segments: every submission evicts. */
    vidmm_handle h[N];
    unsigned char *want[N];
    struct t_rng rng;
    t_rng_init(&rng, tier);
    for (int i = 0; i < N; i++) {
        struct vidmm_alloc_desc d = { .size_of = sizeof d };
        d.size = ASZ;
        d.flags = VIDMM_ALLOC_CPU_VISIBLE;
        d.priority = VIDMM_PRIORITY_NORMAL;
        d.supported_read_set = d.supported_write_set = 0x3;
        d.eviction_set = i % 2 ? 0x4 : 0; /* half of them evict through the aperture */
        d.fill_pattern = 0x01020304u * (uint32_t)(i + 1);
        cr_assert_eq(vidmm_alloc_create(dev, &d, &h[i]), 0);
        want[i] = malloc(ASZ);
        cr_assert_not_null(want[i]);
        for (size_t k = 0; k < ASZ; k += 4)
            memcpy(want[i] + k, &d.fill_pattern, 4);
    }
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            struct vidmm_alloc_ref r = { h[i], VIDMM_REF_WRITE };
            struct vidmm_residency w;
            uint64_t f;
            cr_assert_eq(vidmm_submit(dev, &r, 1, 0, &w, &f), 0);
            cr_assert(t_find_diff(w.cpu, want[i], ASZ) < 0, "tier %s round %d: allocation %d lost content",
                      tier_name[tier], round, i);
            size_t off = t_rng_below(&rng, ASZ - 8192);
            t_rng_bytes(&rng, want[i] + off, 8192);
            memcpy((unsigned char *)w.cpu + off, want[i] + off, 8192);
            cr_assert_eq(vidmm_fence_signal(dev, f), 0);
        }
        for (int i = 0; i < N; i++) {
            struct vidmm_lock_args la = { h[i], 0, 0, NULL, 0, 0, NULL };
            cr_assert_eq(vidmm_lock(dev, &la), 0);
            cr_assert(t_find_diff(la.data, want[i], ASZ) < 0, "tier %s round %d: lock of %d shows wrong bytes",
                      tier_name[tier], round, i);
            size_t off = t_rng_below(&rng, ASZ - 100);
            t_rng_bytes(&rng, want[i] + off, 100);
            memcpy((unsigned char *)la.data + off, want[i] + off, 100);
            cr_assert_eq(vidmm_unlock(dev, 1, &h[i]), 0);
        }
    }
    cr_assert_eq(vidmm_get_stats(dev, &st), 0);
    cr_assert_gt(st.evictions, (uint64_t)N, "the round trip did not evict");
    cr_assert_gt(st.paging_ops[VIDMM_PAGING_MAP_APERTURE_SEGMENT], 0, "nothing went through the aperture");
    for (int i = 0; i < N; i++) {
        cr_assert_eq(vidmm_alloc_destroy(dev, h[i]), 0);
        free(want[i]);
    }
    vidmm_device_destroy(dev);
}

Test(tiers, libhugetlbfs, .timeout = 120)
{
    round_trip(VIDMM_TIER_LIBHUGETLBFS);
}

Test(tiers, hugetlb, .timeout = 120)
{
    round_trip(VIDMM_TIER_HUGETLB);
}

Test(tiers, thp, .timeout = 120)
{
    round_trip(VIDMM_TIER_THP);
}

Test(tiers, base_pages, .timeout = 120)
{
    round_trip(VIDMM_TIER_BASE);
}
