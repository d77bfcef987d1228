/* SPDX-License-Identifier: MIT */
/* bench/bench_writewatch.c - figures of the write-watch API (include/vidmm/writewatch.h) for
 * each backend this machine offers: the cost of the first write to a page after a reset, and
 * get-with-reset of a 1 GiB region with 1 % of its pages written. A standalone program (not a
 * Google Benchmark case): each figure is the median of several runs, printed as a table.
 *
 * usage: bench_writewatch [runs]   (default 7; exits 1 when a backend this machine offers fails a
 *        call; ctest runs it once with 1) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "vidmm/vidmm.h"

#define FIRST_WRITE_PAGES 16384          /* 64 MiB of 4 KiB pages */
#define HUGE_BYTES ((size_t)1 << 30)

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static uint8_t *map_region(size_t len, int noreserve)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0), -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, len, MADV_NOHUGEPAGE);
    return p;
}

static void touch_pages(uint8_t *p, size_t pages, size_t pg, uint8_t v)
{
    for (size_t i = 0; i < pages; i++)
        ((volatile uint8_t *)p)[i * pg] = v;
}

/* The first write to each of FIRST_WRITE_PAGES populated pages after a reset, in ns per page;
 * backend 0 measures the same loop on an unwatched region (the floor). */
static int first_write(int backend, int runs, double *out)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = FIRST_WRITE_PAGES * pg;
    uint8_t *p = map_region(len, 0);
    if (p == NULL)
        return -1;
    touch_pages(p, FIRST_WRITE_PAGES, pg, 1);
    vidmm_writewatch *ww = NULL;
    if (backend != 0) {
        struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
        d.base = p;
        d.size = len;
        d.backend = (uint32_t)backend;
        if (vidmm_writewatch_create(&d, &ww) != 0) {
            munmap(p, len);
            return -1;
        }
    }
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = 0; r < runs; r++) {
        if (ww != NULL)
            vidmm_writewatch_reset(ww);
        double t0 = now_ns();
        touch_pages(p, FIRST_WRITE_PAGES, pg, (uint8_t)(r + 2));
        t[r] = (now_ns() - t0) / FIRST_WRITE_PAGES;
    }
    *out = median(t, runs);
    free(t);
    vidmm_writewatch_destroy(ww);
    munmap(p, len);
    return 0;
}

/* get-with-reset of 1 GiB with 'permille' / 1000 of its pages written since the last reset, in
 * ms; the pages are rewritten before each run (not timed). Returns 0, or -1 when the region
 * cannot be watched or a get failed (its runs so far are then the figure). */
static int huge_get_reset(int backend, int runs, int permille, double *out, size_t *reported)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), pages = HUGE_BYTES / pg;
    uint8_t *p = map_region(HUGE_BYTES, 1);
    if (p == NULL)
        return -1;
    struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
    d.base = p;
    d.size = HUGE_BYTES;
    d.backend = (uint32_t)backend;
    vidmm_writewatch *ww;
    if (vidmm_writewatch_create(&d, &ww) != 0) {
        munmap(p, HUGE_BYTES);
        return -1;
    }
    size_t ndirty = pages * (size_t)permille / 1000;
    size_t *which = malloc((ndirty + 1) * sizeof *which);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < ndirty; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        which[i] = (size_t)(rng % pages);
    }
    uint64_t *out_pages = malloc(pages * sizeof *out_pages);
    double *t = calloc((size_t)runs, sizeof *t);
    int rc = 0, done = 0;
    for (int r = 0; r < runs; r++) {
        for (size_t i = 0; i < ndirty; i++)
            ((volatile uint8_t *)p)[which[i] * pg] = (uint8_t)r;
        size_t n = 0;
        double t0 = now_ns();
        rc = vidmm_writewatch_get(ww, true, out_pages, pages, &n);
        t[r] = (now_ns() - t0) / 1e6;
        if (rc != 0) {
            fprintf(stderr, "%s: get: %s\n", vidmm_writewatch_backend_name(backend), vidmm_strerror(rc));
            break;
        }
        done++;
        *reported = n;
    }
    *out = done > 0 ? median(t, done) : 0;
    free(t);
    free(out_pages);
    free(which);
    vidmm_writewatch_destroy(ww);
    munmap(p, HUGE_BYTES);
    return rc == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 7;
    if (runs < 1)
        runs = 1;
    double floor_ns = 0;
    if (first_write(0, runs, &floor_ns) == 0)
        printf("unwatched first write loop: %.1f ns/page (the floor)\n", floor_ns);
    printf("%-10s %22s %26s %26s\n", "backend", "first write (ns/page)", "1 GiB get+reset 1% (ms)",
           "1 GiB get+reset 0% (ms)");
    int failed = 0;
    for (int b = VIDMM_WRITEWATCH_UFFD; b <= VIDMM_WRITEWATCH_MPROTECT; b++) {
        double fw = 0, g1 = 0, g0 = 0;
        size_t n1 = 0, n0 = 0;
        if (first_write(b, runs, &fw) != 0) {
            printf("%-10s %22s\n", vidmm_writewatch_backend_name(b), "unavailable here");
            continue;
        }
        int ok1 = huge_get_reset(b, runs, 10, &g1, &n1) == 0;
        int ok0 = huge_get_reset(b, runs, 0, &g0, &n0) == 0;
        failed |= !ok1 || !ok0; /* the backend watched 64 MiB, then could not do 1 GiB */
        printf("%-10s %22.1f %19.3f (%6zu) %19.3f (%6zu)\n", vidmm_writewatch_backend_name(b), fw,
               ok1 ? g1 : -1.0, n1, ok0 ? g0 : -1.0, n0);
    }
    printf("(median of %d runs; 4 KiB pages; 1%% = 2621 random page draws, duplicates counted once)\n", runs);
    if (failed)
        fprintf(stderr, "bench_writewatch: a backend that watched 64 MiB failed on 1 GiB (-1 above)\n");
    return failed ? 1 : 0;
}
