/* SPDX-License-Identifier: MIT */
/* bench/bench_swizzle_tune.c - measured swizzle plans (issue 26 deliverable 1: "a measured plan
 * is never slower than the default plan"; "a measured plan within 3 % of the best forced
 * strategy").
 *
 * Rows: per layout x element size (4 and 16 bytes; the Intel tilings, laid out in bytes, once)
 * x direction x size (4 MiB and 64 MiB), whole-surface copies through
 *   default   a plan without VIDMM_PLAN_MEASURE (the library's rules),
 *   measured  a plan made with VIDMM_PLAN_MEASURE (its measurement's wall time is printed too),
 *   w0..wN    a plan forced to each walk the measurement chooses from
 *             (vidmm_swizzle_plan_force_walk(); w0 is the default's walk),
 * then measured/default and measured/best forced (below 1: faster). Each figure is the median
 * over rounds that time every plan once (after an untimed copy of its own) back to back, in a
 * shuffled order each round
 * (this machine's bandwidth drifts from minute to minute: only ratios measured in one round mean
 * anything, bench_swizzle.c "Paired rounds"). A standalone program (not a Google Benchmark
 * case); figures are never asserted.
 *
 * usage: bench_swizzle_tune [rounds] [size-filter: 4|64] [layout-filter]   (default 7 rounds) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vidmm/vidmm.h"

#define MAX_WALKS 24

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct lay {
    const char *name;
    enum vidmm_tiling tiling;
    uint32_t amd_mode;
    bool bytes;        /* Intel: element size 1, widths in bytes */
};

static const struct lay lays[] = {
    { "block_linear", VIDMM_TILING_BLOCK_LINEAR, 0, false },
    { "intel_x", VIDMM_TILING_INTEL_X, 0, true },
    { "intel_y", VIDMM_TILING_INTEL_Y, 0, true },
    { "intel_4", VIDMM_TILING_INTEL_4, 0, true },
    { "d3d_4k", VIDMM_TILING_D3D_STD_4K, 0, false },
    { "d3d_64k", VIDMM_TILING_D3D_STD_64K, 0, false },
    { "amd_64k_s", VIDMM_TILING_AMD_GFX10, 9, false },
    { "morton", VIDMM_TILING_MORTON, 0, false },
};

static unsigned char *big_alloc(size_t n)
{
    unsigned char *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (p == NULL) {
        fprintf(stderr, "bench_swizzle_tune: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131 + 7);
    return p;
}

/* plan_make() makes a plan of the surface, measured or not; a failure ends the program. */
static vidmm_swizzle_plan *plan_make(const struct lay *ly, uint32_t w, uint32_t h, uint32_t elem, bool measure)
{
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(ly->tiling);
    struct vidmm_surface_desc d = { sizeof(d), w, h, 1, elem, 1, 1, 1, 1 };
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    vidmm_swizzle_plan *p;
    l.amd_swizzle_mode = ly->amd_mode;
    o.flags = measure ? VIDMM_PLAN_MEASURE : 0;
    int rc = vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, &o, &p);
    if (rc != 0) {
        fprintf(stderr, "bench_swizzle_tune: %s %ux%u x %u: plan_create returned %d (%s)\n", ly->name, w, h, elem, rc,
                vidmm_strerror(rc));
        exit(1);
    }
    return p;
}

static void plan_copy(vidmm_swizzle_plan *p, bool tile, unsigned char *tiled, size_t tn, unsigned char *lin,
                      size_t ln)
{
    int rc = tile ? vidmm_swizzle_plan_swizzle(p, NULL, tiled, tn, lin, ln, 0, 0)
                  : vidmm_swizzle_plan_deswizzle(p, NULL, tiled, tn, lin, ln, 0, 0);
    if (rc != 0) {
        fprintf(stderr, "bench_swizzle_tune: a copy returned %d (%s)\n", rc, vidmm_strerror(rc));
        exit(1);
    }
}

static const char *walk_name(enum vidmm_swizzle_walk w)
{
    static const char *const n[] = { "ref", "tiles", "tiles_nt", "strips", "strips_nt", "stream", "tiles_ntl" };
    return (unsigned)w < sizeof(n) / sizeof(n[0]) ? n[w] : "?";
}

/* row() prints one layout, element size, size and direction. */
static void row(const struct lay *ly, uint32_t elem, uint64_t bytes, bool tile, int rounds, unsigned char *tiled,
                size_t tn, unsigned char *lin)
{
    uint32_t e = ly->bytes ? 1 : elem;
    uint64_t px = bytes / e;
    uint32_t w = 1;
    while ((uint64_t)w * w < px)
        w <<= 1;
    uint32_t h = (uint32_t)(px / w);
    struct vidmm_swizzle_plan_info in = { .size = sizeof(in) };
    vidmm_swizzle_plan *def = plan_make(ly, w, h, e, false);
    vidmm_swizzle_plan_info(def, &in);
    if (in.tiled_size > tn) {
        fprintf(stderr, "bench_swizzle_tune: %s needs %llu tiled bytes\n", ly->name, (unsigned long long)in.tiled_size);
        exit(1);
    }
    const size_t ln = (size_t)in.linear_size;
    const double m0 = now_s();
    vidmm_swizzle_plan *mea = plan_make(ly, w, h, e, true);
    const double mtime = now_s() - m0;
    struct vidmm_swizzle_plan_info mi = { .size = sizeof(mi) };
    vidmm_swizzle_plan_info(mea, &mi);
    uint32_t nw = 0;
    vidmm_swizzle_plan_walk_candidates(def, !tile, &nw);
    if (nw > MAX_WALKS)
        nw = MAX_WALKS;
    vidmm_swizzle_plan *forced[MAX_WALKS];
    for (uint32_t k = 0; k < nw; k++) {
        forced[k] = plan_make(ly, w, h, e, false);
        vidmm_swizzle_plan_force_walk(forced[k], !tile, k);
    }
    /* Plans: 0 default, 1 measured, 2.. forced. */
    const unsigned np = 2 + nw;
    vidmm_swizzle_plan *all[2 + MAX_WALKS] = { def, mea };
    for (uint32_t k = 0; k < nw; k++)
        all[2 + k] = forced[k];
    double *t = calloc((size_t)np * (size_t)rounds, sizeof(double));
    if (t == NULL)
        exit(1);
    for (unsigned i = 0; i < np; i++) /* warm-up */
        plan_copy(all[i], tile, tiled, tn, lin, ln);
    unsigned order[2 + MAX_WALKS];
    for (int r = 0; r < rounds; r++) {
        /* A shuffled order each round: a rotation let another process's periodic time slice (a
         * 4-5 ms stall) land on the same plan round after round on this shared machine. */
        for (unsigned j = 0; j < np; j++)
            order[j] = j;
        for (unsigned j = np - 1; j > 0; j--) {
            const unsigned x = (unsigned)rand() % (j + 1), tmp = order[j];
            order[j] = order[x];
            order[x] = tmp;
        }
        for (unsigned j = 0; j < np; j++) {
            const unsigned i = order[j];
            /* Each plan's timed copy right after an untimed one of its own: timed right after
             * another walk, it paid for that walk's cache state (streaming stores leave their
             * destination uncached), which moved one walk's median by up to 1.7x at 4 MiB. */
            plan_copy(all[i], tile, tiled, tn, lin, ln);
            const double a = now_s();
            plan_copy(all[i], tile, tiled, tn, lin, ln);
            t[i * (unsigned)rounds + (unsigned)r] = now_s() - a;
        }
    }
    double med[2 + MAX_WALKS];
    unsigned best = 2;
    for (unsigned i = 0; i < np; i++) {
        med[i] = median(t + i * (unsigned)rounds, rounds);
        if (i >= 2 && med[i] < med[best])
            best = i;
    }
    const enum vidmm_swizzle_walk mw = tile ? mi.swizzle_walk : mi.deswizzle_walk;
    const enum vidmm_swizzle_walk dw = tile ? in.swizzle_walk : in.deswizzle_walk;
    printf("%-12s %2u B %5u x %-5u %2llu MiB %-9s default %7.3f ms (%-9s) measured %7.3f ms (%-9s, %5.1f ms to measure)"
           "  best w%u %7.3f ms   measured/default %.3f  measured/best %.3f %s\n",
           ly->name, e, w, h, (unsigned long long)(bytes >> 20), tile ? "swizzle" : "deswizzle", med[0] * 1e3,
           walk_name(dw), med[1] * 1e3, walk_name(mw), mtime * 1e3, best - 2, med[best] * 1e3, med[1] / med[0],
           med[1] / med[best], med[1] / med[best] > 1.03 ? "  [>3%]" : "");
    printf("    walks:");
    for (uint32_t k = 0; k < nw; k++) {
        struct vidmm_swizzle_plan_info fi = { .size = sizeof(fi) };
        vidmm_swizzle_plan_info(forced[k], &fi);
        printf(" w%u %s %.3f", k, walk_name(tile ? fi.swizzle_walk : fi.deswizzle_walk), med[2 + k] * 1e3);
    }
    printf("\n");
    fflush(stdout);
    free(t);
    for (unsigned i = 0; i < np; i++)
        vidmm_swizzle_plan_destroy(all[i]);
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 7;
    const int only_size = argc > 2 ? atoi(argv[2]) : 0;
    const char *only_lay = argc > 3 ? argv[3] : NULL;
    if (rounds < 1) {
        fprintf(stderr, "usage: bench_swizzle_tune [rounds] [4|64] [layout]\n");
        return 2;
    }
    const size_t cap = (size_t)80 << 20; /* 64 MiB and the layouts' padding */
    unsigned char *tiled = big_alloc(cap), *lin = big_alloc(cap);
    printf("bench_swizzle_tune: backend %s, %d rounds, medians; whole-surface plans, one thread\n",
           vidmm_backend_name(), rounds);
    static const uint64_t sizes[] = { 4u << 20, 64u << 20 };
    for (size_t si = 0; si < 2; si++) {
        if (only_size != 0 && (uint64_t)only_size != sizes[si] >> 20)
            continue;
        for (size_t li = 0; li < sizeof(lays) / sizeof(lays[0]); li++) {
            if (only_lay != NULL && strcmp(only_lay, lays[li].name) != 0)
                continue;
            for (uint32_t elem = 4; elem <= 16; elem *= 4) {
                if (lays[li].bytes && elem != 4)
                    continue;
                row(&lays[li], elem, sizes[si], true, rounds, tiled, cap, lin);
                row(&lays[li], elem, sizes[si], false, rounds, tiled, cap, lin);
            }
        }
    }
    struct vidmm_swizzle_tune_stats st = { .size = sizeof(st) };
    vidmm_swizzle_tune_stats(&st);
    printf("table: %u winners, %llu measurements, %llu plans served from it\n", st.entries,
           (unsigned long long)st.measurements, (unsigned long long)st.table_hits);
    free(tiled);
    free(lin);
    return 0;
}
