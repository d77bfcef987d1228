/* SPDX-License-Identifier: MIT */
/* tests/engine/test_rangeset.c - the free-space tree behind placement (lib/engine/rangeset.h)
 * against a page bitmap: every vmr_find() answer - lowest or highest fitting address in a
 * window, at an alignment - must be the one a scan of the bitmap gives; takes and gives must
 * keep the free byte count, the block count (neighbours merge) and the largest block right;
 * misuse is refused without a change. Then the shape of the cost: a search among 100 000 free
 * blocks visits few nodes (timed against 1 000: the ratio, not an absolute time, and only as a
 * generous bound that a linear scan would break). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"
#include "engine/rangeset.h"

#define PAGE 4096ull

struct bitmap {
    uint64_t pages;
    unsigned char *used;
};

/* The reference answer: scan every aligned start. */
static bool ref_find(const struct bitmap *b, uint64_t lo, uint64_t hi, uint64_t len, uint64_t align, bool down,
                     uint64_t *out)
{
    uint64_t np = len / PAGE;
    uint64_t first = (lo + align - 1) / align * align;
    if (hi < len)
        return false;
    bool found = false;
    for (uint64_t s = first; s + len <= hi; s += align) {
        bool ok = true;
        for (uint64_t p = s / PAGE; p < s / PAGE + np; p++)
            if (b->used[p]) {
                ok = false;
                break;
            }
        if (ok) {
            *out = s;
            found = true;
            if (!down)
                return true;
        }
    }
    return found;
}

static uint64_t ref_blocks(const struct bitmap *b, uint64_t *largest, uint64_t *free_bytes)
{
    uint64_t n = 0, run = 0;
    *largest = 0;
    *free_bytes = 0;
    for (uint64_t p = 0; p <= b->pages; p++) {
        if (p < b->pages && !b->used[p]) {
            run++;
            continue;
        }
        if (run) {
            n++;
            *free_bytes += run * PAGE;
            if (run * PAGE > *largest)
                *largest = run * PAGE;
        }
        run = 0;
    }
    return n;
}

Test(rangeset, matches_bitmap)
{
    struct t_rng rng;
    t_rng_init(&rng, 11);
    const uint64_t pages = 512;
    struct bitmap b = { pages, calloc(pages, 1) };
    struct vmr_set s;
    cr_assert_eq(vmr_init(&s, pages * PAGE), 0);
    for (int it = 0; it < 20000; it++) {
        uint64_t len = (1 + t_rng_below(&rng, 24)) * PAGE;
        uint64_t align = PAGE << t_rng_below(&rng, 4);
        uint64_t lo = t_rng_below(&rng, (size_t)pages) * PAGE;
        uint64_t hi = lo + (1 + t_rng_below(&rng, (size_t)(pages - lo / PAGE))) * PAGE;
        if (t_rng_below(&rng, 4) == 0) {
            lo = 0;
            hi = pages * PAGE;
        }
        bool down = t_rng_below(&rng, 2);
        uint64_t got = 0, want = 0;
        bool g = vmr_find(&s, lo, hi, len, align, down, &got);
        bool w = ref_find(&b, lo, hi, len, align, down, &want);
        cr_assert_eq(g, w, "it %d: find(lo %llu hi %llu len %llu align %llu down %d): %d, reference %d", it,
                     (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)len,
                     (unsigned long long)align, down, g, w);
        if (g)
            cr_assert_eq(got, want, "it %d: found %llu, reference %llu", it, (unsigned long long)got,
                         (unsigned long long)want);
        if (g && t_rng_below(&rng, 3)) {
            cr_assert_eq(vmr_take(&s, got, len), 0);
            memset(b.used + got / PAGE, 1, (size_t)(len / PAGE));
        } else {
            /* Give back a random used run (as big as is used from a random page). */
            uint64_t p = t_rng_below(&rng, (size_t)pages), q = p;
            while (q < pages && b.used[q] && q - p < 20)
                q++;
            if (q > p) {
                cr_assert_eq(vmr_give(&s, p * PAGE, (q - p) * PAGE), 0);
                memset(b.used + p, 0, (size_t)(q - p));
            }
        }
        uint64_t largest, free_bytes;
        uint64_t blocks = ref_blocks(&b, &largest, &free_bytes);
        cr_assert_eq(s.blocks, blocks, "it %d: %zu blocks, reference %llu", it, s.blocks, (unsigned long long)blocks);
        cr_assert_eq(s.free_bytes, free_bytes);
        cr_assert_eq(vmr_largest(&s), largest);
    }
    vmr_destroy(&s);
    free(b.used);
}

Test(rangeset, misuse_changes_nothing)
{
    struct vmr_set s;
    cr_assert_eq(vmr_init(&s, 64 * PAGE), 0);
    cr_assert_eq(vmr_take(&s, 8 * PAGE, 4 * PAGE), 0);
    uint64_t fb = s.free_bytes;
    size_t blocks = s.blocks;
    cr_assert_eq(vmr_take(&s, 9 * PAGE, PAGE), VIDMM_E_INVALID_ARG);      /* already used */
    cr_assert_eq(vmr_take(&s, 6 * PAGE, 4 * PAGE), VIDMM_E_INVALID_ARG);  /* straddles used */
    cr_assert_eq(vmr_take(&s, 62 * PAGE, 4 * PAGE), VIDMM_E_INVALID_ARG); /* past the end */
    cr_assert_eq(vmr_take(&s, 0, 0), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vmr_give(&s, 0, PAGE), VIDMM_E_INVALID_ARG);             /* already free */
    cr_assert_eq(vmr_give(&s, 10 * PAGE, 4 * PAGE), VIDMM_E_INVALID_ARG); /* half free */
    cr_assert_eq(vmr_give(&s, 63 * PAGE, 2 * PAGE), VIDMM_E_INVALID_ARG); /* past the end */
    cr_assert_eq(s.free_bytes, fb);
    cr_assert_eq(s.blocks, blocks);
    uint64_t off;
    cr_assert_not(vmr_find(&s, 0, 64 * PAGE, 0, PAGE, false, &off));
    cr_assert_not(vmr_find(&s, 0, 64 * PAGE, PAGE, 3, false, &off));     /* alignment not a power of 2 */
    cr_assert_not(vmr_find(&s, 0, 65 * PAGE, PAGE, PAGE, false, &off));  /* window past the end */
    cr_assert_not(vmr_find(&s, 0, 64 * PAGE, 61 * PAGE, PAGE, false, &off));
    cr_assert_eq(vmr_give(&s, 8 * PAGE, 4 * PAGE), 0);
    cr_assert_eq(s.blocks, 1u, "neighbours did not merge");
    cr_assert_eq(vmr_largest(&s), 64 * PAGE);
    vmr_destroy(&s);
}

/* Checkerboard of n free blocks; a request that fits only in the last one (top of memory) must
 * not scan them all: the subtree maxima lead straight there. Counted in visited nodes, not
 * timed. */
static size_t search_visits(uint64_t n, bool down, uint64_t *depth_bound)
{
    struct vmr_set s;
    uint64_t size = (2 * n + 16) * PAGE;
    cr_assert_eq(vmr_init(&s, size), 0);
    /* Taken in a shuffled order, so the tree is built as placement builds it. */
    uint64_t *order = malloc(sizeof *order * n);
    for (uint64_t i = 0; i < n; i++)
        order[i] = i;
    struct t_rng rng;
    t_rng_init(&rng, n);
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = t_rng_below(&rng, (size_t)i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (uint64_t i = 0; i < n; i++)
        cr_assert_eq(vmr_take(&s, (2 * order[i] + 1) * PAGE, PAGE), 0); /* one-page holes between */
    free(order);
    cr_assert_geq(s.blocks, n);
    uint64_t off = 0;
    /* Fits only at the top block (8 pages there, 1 everywhere else). */
    cr_assert(vmr_find(&s, 0, size, 8 * PAGE, PAGE, down, &off));
    cr_assert_eq(off, down ? size - 8 * PAGE : 2 * n * PAGE);
    size_t v = vmr_last_visits();
    uint64_t lg = 0;
    while ((1ull << lg) < n)
        lg++;
    *depth_bound = lg;
    vmr_destroy(&s);
    return v;
}

Test(rangeset, search_does_not_scan)
{
    /* A treap with hashed priorities has expected depth about 2 ln n = 1.39 log2 n; a search
     * walks one root-to-leaf path plus the sibling checks: allow 8 log2 n. A scan would visit
     * ~n nodes (100 000). */
    for (int down = 0; down < 2; down++) {
        for (uint64_t n = 1000; n <= 100000; n *= 10) {
            uint64_t lg;
            size_t v = search_visits(n, down, &lg);
            cr_assert(v <= 8 * lg, "%s search among %llu free blocks visited %zu nodes (bound %llu)",
                      down ? "top-down" : "bottom-up", (unsigned long long)n, v, (unsigned long long)(8 * lg));
        }
    }
}
