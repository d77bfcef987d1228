/* SPDX-License-Identifier: MIT */
/* tests/engine/bench_wddm2_translate.c - how long vidmm_va_translate() takes per lookup (issue
 * 15: "fast enough for an emulator's GPU to use per memory access", target <= 10 ns median for
 * a hit), next to the WDDM1 way a GPU model finds the same bytes (deliverable 8). Not a test
 * and not registered with CTest: run it by hand.
 *
 * WDDM2: a device with one 64 MiB memory segment (b_wddm2.h); 256 allocations of 256 KiB
 * mapped back to back in one VA space (64 MiB of VA over four page-table leaves) and made
 * resident. A lookup is one vidmm_va_translate() of a GPU VA: segment, offset and host pointer.
 * WDDM1: a device without VIDMM_DEVICE_WDDM2 with the same segment and allocations, made
 * resident by vidmm_make_resident(). There is no VA: a WDDM1 command stream names an
 * allocation (its allocation-list entry) and an offset in it, and the engine's cheapest call
 * from a handle to where its bytes are is vidmm_alloc_query() (segment ID and offset; the host
 * view of the segment comes once from vidmm_submit()'s or vidmm_make_resident()'s 'where').
 * A lookup is that call on the allocation the same address falls in (index and offset by a
 * shift and a mask, the allocations being equal and back to back), plus the offset.
 * Pre-computed addresses, three patterns: sequential 4-byte steps (an emulator streaming a
 * buffer), random in the whole 64 MiB (cache-missing page-table walks), random inside one
 * 256 KiB allocation (a hot texture). Each pattern runs 'rounds' rounds of 'n' lookups on each
 * side, the two sides alternating within a round (WDDM2 first in even rounds); the median round
 * is printed as ns per lookup, with the ratio WDDM2 / WDDM1 (below 1: WDDM2 is faster). Every
 * lookup must succeed (a resident allocation): a failure ends the program with status 1. No
 * figure is checked against anything.
 *
 * usage: bench_wddm2_translate [rounds (default 11)] [lookups per round (default 4M)] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "b_wddm2.h"

#define NALLOC 256u
#define ASIZE (B_SEG_SIZE / NALLOC)

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* What both sides look up: the addresses, as GPU VAs from 'base'. */
struct lookups {
    const uint64_t *vas;
    size_t n;
    uint64_t base;
    uint64_t sink;              /* the offsets found, summed: the loops' results are used */
    size_t failures;            /* lookups that did not give a resident allocation's bytes */
};

/* One round of WDDM2 lookups, in ns per lookup. */
static double round_wddm2(const vidmm_va_space *sp, struct lookups *l)
{
    uint64_t acc = 0;
    size_t bad = 0;
    const uint64_t t0 = b_now_ns();
    for (size_t i = 0; i < l->n; i++) {
        struct vidmm_va_translation t;
        if (vidmm_va_translate(sp, l->vas[i], &t) == 0)
            acc += t.offset;
        else
            bad++;
    }
    const uint64_t t1 = b_now_ns();
    l->sink += acc;
    l->failures += bad;
    return (double)(t1 - t0) / (double)l->n;
}

/* One round of WDDM1 lookups of the same addresses, in ns per lookup. */
static double round_wddm1(vidmm_device *dev, const vidmm_handle *h, struct lookups *l)
{
    uint64_t acc = 0;
    size_t bad = 0;
    const uint64_t t0 = b_now_ns();
    for (size_t i = 0; i < l->n; i++) {
        const uint64_t rel = l->vas[i] - l->base;
        struct vidmm_alloc_info info;
        info.size_of = sizeof info;
        if (vidmm_alloc_query(dev, h[rel / ASIZE], &info) == 0 && info.where == VIDMM_WHERE_SEGMENT)
            acc += info.offset + rel % ASIZE;
        else
            bad++;
    }
    const uint64_t t1 = b_now_ns();
    l->sink += acc;
    l->failures += bad;
    return (double)(t1 - t0) / (double)l->n;
}

int main(int argc, char **argv)
{
    const unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 11;
    const size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 0) : (size_t)4 << 20;
    if (rounds == 0 || n == 0)
        return 2;
    vidmm_device *dev2 = NULL, *dev1 = NULL;
    vidmm_va_space *sp = NULL;
    vidmm_handle h2[NALLOC], h1[NALLOC];
    uint64_t base = 0;
    /* WDDM2: mapped before the page-in, so that the page-in's paging sets the entries. */
    int rc = b_setup(true, NALLOC, ASIZE, false, &dev2, h2);
    if (!rc)
        rc = vidmm_va_space_create(dev2, 1, &sp);
    if (!rc)
        rc = vidmm_va_reserve(sp, 0, B_SEG_SIZE, &base);
    for (unsigned i = 0; !rc && i < NALLOC; i++)
        rc = vidmm_va_map(sp, base + i * ASIZE, h2[i], 0, ASIZE);
    if (!rc)
        rc = b_resident(dev2, true, h2, NALLOC);
    if (!rc)
        rc = b_setup(false, NALLOC, ASIZE, true, &dev1, h1);
    if (rc) {
        fprintf(stderr, "bench_wddm2_translate: setup failed: %s\n", vidmm_strerror(rc));
        return 1;
    }
    uint64_t *vas = malloc(sizeof *vas * n);
    double *t2 = malloc(sizeof *t2 * rounds), *t1 = malloc(sizeof *t1 * rounds);
    if (!vas || !t2 || !t1)
        return 1;
    struct lookups l = { vas, n, base, 0, 0 };
    printf("vidmm_va_translate, %u rounds of %zu lookups, median ns per lookup (backend %s)\n", rounds, n,
           vidmm_backend_name());
    printf("  next to it WDDM1: vidmm_alloc_query() of the handle the address falls in (segment ID + offset), the\n"
           "  sides alternating in each round; ratio = WDDM2 / WDDM1\n");
    static const char *const pattern[3] = {
        "sequential 4-byte steps over 64 MiB",
        "random over 64 MiB (256 mappings)",
        "random inside one 256 KiB mapping",
    };
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (unsigned p = 0; p < 3; p++) {
        for (size_t i = 0; i < n; i++)
            vas[i] = p == 0 ? base + (i * 4) % B_SEG_SIZE
                   : p == 1 ? base + xs(&s) % B_SEG_SIZE
                            : base + 17 * ASIZE + xs(&s) % ASIZE;
        for (unsigned k = 0; k < rounds; k++) {
            if (k & 1) {
                t1[k] = round_wddm1(dev1, h1, &l);
                t2[k] = round_wddm2(sp, &l);
            } else {
                t2[k] = round_wddm2(sp, &l);
                t1[k] = round_wddm1(dev1, h1, &l);
            }
        }
        if (l.failures) {
            fprintf(stderr, "bench_wddm2_translate: %zu lookups failed (%s)\n", l.failures, pattern[p]);
            return 1;
        }
        const double m2 = b_median(t2, rounds), m1 = b_median(t1, rounds);
        printf("  %-35s : %.2f ns | WDDM1 %.2f ns | ratio %.2f\n", pattern[p], m2, m1, m2 / m1);
    }
    printf("  (checksum %llu)\n", (unsigned long long)l.sink);
    free(vas);
    free(t2);
    free(t1);
    vidmm_device_destroy(dev1);
    vidmm_device_destroy(dev2);
    return 0;
}
