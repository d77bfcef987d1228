/* SPDX-License-Identifier: MIT */
/* tests/engine/bench_wddm2_translate.c - how long vidmm_va_translate() takes per lookup (issue
 * 15: "fast enough for an emulator's GPU to use per memory access", target <= 10 ns median for
 * a hit). Not a test and not registered with CTest: run it by hand.
 *
 * A WDDM2 device with one 64 MiB memory segment; 256 allocations of 256 KiB made resident and
 * mapped back to back in one VA space (64 MiB of VA over four page-table leaves). Lookups of
 * pre-computed addresses, three patterns: sequential 4-byte steps (an emulator streaming a
 * buffer), random in the whole 64 MiB (cache-missing page-table walks), random inside one
 * 256 KiB allocation (a hot texture). Each pattern runs 'rounds' rounds of 'n' lookups; the
 * median round is printed as ns per lookup.
 *
 * usage: bench_wddm2_translate [rounds (default 11)] [lookups per round (default 4M)] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vidmm/vidmm.h"

#define SEG (64ull << 20)
#define NALLOC 256u
#define ASIZE (SEG / NALLOC)

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double run(const vidmm_va_space *sp, const uint64_t *vas, size_t n, unsigned rounds, uint64_t *sink)
{
    double *r = malloc(sizeof *r * rounds);
    if (!r)
        return -1;
    for (unsigned k = 0; k < rounds; k++) {
        uint64_t acc = 0;
        const uint64_t t0 = now_ns();
        for (size_t i = 0; i < n; i++) {
            struct vidmm_va_translation t;
            if (vidmm_va_translate(sp, vas[i], &t) == 0)
                acc += t.offset;
        }
        const uint64_t t1 = now_ns();
        *sink += acc;
        r[k] = (double)(t1 - t0) / (double)n;
    }
    qsort(r, rounds, sizeof *r, cmp_d);
    double med = r[rounds / 2];
    free(r);
    return med;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 11;
    size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 0) : (size_t)4 << 20;
    if (rounds == 0 || n == 0)
        return 2;
    struct vidmm_segment_desc seg;
    memset(&seg, 0, sizeof seg);
    seg.base_address = 0x10000000ull;
    seg.size = SEG;
    seg.commit_limit = SEG;
    seg.flags = VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP;
    struct vidmm_device_desc d = VIDMM_DEVICE_DESC_INIT;
    d.segments = &seg;
    d.segment_count = 1;
    d.flags = VIDMM_DEVICE_WDDM2;
    d.paging_threads = 0;
    vidmm_device *dev = NULL;
    vidmm_va_space *sp = NULL;
    int rc = vidmm_device_create(&d, &dev);
    if (!rc)
        rc = vidmm_va_space_create(dev, 1, &sp);
    uint64_t base = 0;
    if (!rc)
        rc = vidmm_va_reserve(sp, 0, SEG, &base);
    vidmm_handle h[NALLOC];
    for (unsigned i = 0; !rc && i < NALLOC; i++) {
        struct vidmm_alloc_desc a;
        memset(&a, 0, sizeof a);
        a.size_of = sizeof a;
        a.size = ASIZE;
        a.supported_read_set = a.supported_write_set = 1;
        a.flags = VIDMM_ALLOC_CPU_VISIBLE;
        a.priority = VIDMM_PRIORITY_NORMAL;
        a.process = 1;
        rc = vidmm_alloc_create(dev, &a, &h[i]);
        if (!rc)
            rc = vidmm_va_map(sp, base + i * ASIZE, h[i], 0, ASIZE);
    }
    struct vidmm_make_resident_args mr;
    memset(&mr, 0, sizeof mr);
    mr.size_of = sizeof mr;
    mr.allocations = h;
    mr.count = NALLOC;
    if (!rc) {
        rc = vidmm_wddm2_make_resident(dev, &mr);
        if (rc == VIDMM_PENDING)
            rc = vidmm_wddm2_paging_fence_wait(dev, mr.paging_fence, UINT64_MAX);
    }
    if (rc) {
        fprintf(stderr, "bench_wddm2_translate: setup failed: %s\n", vidmm_strerror(rc));
        return 1;
    }
    uint64_t *vas = malloc(sizeof *vas * n);
    if (!vas)
        return 1;
    uint64_t sink = 0, s = 0x9E3779B97F4A7C15ull;
    printf("vidmm_va_translate, %u rounds of %zu lookups, median ns per lookup (backend %s)\n", rounds, n,
           vidmm_backend_name());
    for (size_t i = 0; i < n; i++)
        vas[i] = base + (i * 4) % SEG;
    printf("  sequential 4-byte steps over 64 MiB : %.2f ns\n", run(sp, vas, n, rounds, &sink));
    for (size_t i = 0; i < n; i++)
        vas[i] = base + xs(&s) % SEG;
    printf("  random over 64 MiB (256 mappings)   : %.2f ns\n", run(sp, vas, n, rounds, &sink));
    for (size_t i = 0; i < n; i++)
        vas[i] = base + 17 * ASIZE + xs(&s) % ASIZE;
    printf("  random inside one 256 KiB mapping   : %.2f ns\n", run(sp, vas, n, rounds, &sink));
    printf("  (checksum %llu)\n", (unsigned long long)sink);
    free(vas);
    vidmm_device_destroy(dev);
    return 0;
}
