/* SPDX-License-Identifier: MIT */
/* bench/bench_swizzle_threads.c - swizzle plans on several threads (issue 26 deliverable 2:
 * "64 MiB on both cores >= 1.6x one thread here"; "N threads >= 0.9x N-thread memcpy of the
 * same bytes").
 *
 * Rows: the 64 MiB swizzle and deswizzle of Intel Y (8192 x 8192 bytes) and of block-linear
 * (4096 x 4096 x 4 bytes, block height 16) through one plan with T threads (the library's pool),
 * T = 2 and nproc (and any counts given), each as
 *   x1T     the plan on one thread over the same plan on T threads (speed-up),
 *   xmemcpy memcpy of the same bytes on T threads (the same buffers, cut in T equal parts, on
 *           threads of this program's own) over the plan on T threads.
 * Each figure is the median over rounds that time the three sides in turn, the order rotating
 * from round to round (this machine's bandwidth drifts from minute to minute; only ratios
 * measured in one round mean anything), each side timed after itself: one untimed call, then
 * three timed ones, so that no timed call follows the other side's stores (issue 26 deliverable
 * 3; bench_swizzle.c, swz_rounds()).
 *
 * First, memcpy on T threads over memcpy on one: what the machine itself gives.
 * Then the dispatch: the cost of handing a copy to the pool (two threads, a box of 4 KiB) over
 * the same copy on the calling thread, and the sizes where two threads start to win; and the
 * same copies through a plan with the library's measured threshold (min_bytes 0,
 * lib/kernels/swizzle_plan.c par_way()), which should lose at no size. A standalone
 * program (not a Google Benchmark case); figures are never asserted.
 *
 * usage: bench_swizzle_threads [rounds] [extra thread counts...]   (default 11 rounds) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "vidmm/vidmm.h"

#define MAX_T 64

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

/* ---------------------------------------------------------------------------------------------
 * The memcpy side: T - 1 threads of ours, woken by a generation counter, each copying its part.
 * ------------------------------------------------------------------------------------------- */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;
    unsigned busy, threads;
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
    bool stop;
    pthread_t tid[MAX_T];
    unsigned started;
} mc = { .mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

static void mc_part(unsigned i, unsigned threads, unsigned char *dst, const unsigned char *src, size_t n)
{
    const size_t per = (n / threads + 63) / 64 * 64;
    const size_t a = (size_t)i * per < n ? (size_t)i * per : n, b = a + per < n ? a + per : n;
    memcpy(dst + a, src + a, b - a);
}

static void *mc_main(void *p)
{
    const unsigned id = (unsigned)(uintptr_t)p; /* 1.. */
    uint64_t seen = 0;
    pthread_mutex_lock(&mc.mu);
    for (;;) {
        while (!mc.stop && mc.gen == seen)
            pthread_cond_wait(&mc.go, &mc.mu);
        if (mc.stop)
            break;
        seen = mc.gen;
        if (id >= mc.threads)
            continue;
        unsigned char *dst = mc.dst;
        const unsigned char *src = mc.src;
        const size_t n = mc.n;
        const unsigned threads = mc.threads;
        pthread_mutex_unlock(&mc.mu);
        mc_part(id, threads, dst, src, n);
        pthread_mutex_lock(&mc.mu);
        if (--mc.busy == 0)
            pthread_cond_signal(&mc.done);
    }
    pthread_mutex_unlock(&mc.mu);
    return NULL;
}

static void mc_copy(unsigned threads, unsigned char *dst, const unsigned char *src, size_t n)
{
    if (threads <= 1) {
        memcpy(dst, src, n);
        return;
    }
    pthread_mutex_lock(&mc.mu);
    while (mc.started < threads - 1) {
        if (pthread_create(&mc.tid[mc.started], NULL, mc_main, (void *)(uintptr_t)(mc.started + 1)) != 0)
            abort();
        mc.started++;
    }
    mc.dst = dst;
    mc.src = src;
    mc.n = n;
    mc.threads = threads;
    mc.busy = threads - 1;
    mc.gen++;
    pthread_cond_broadcast(&mc.go);
    pthread_mutex_unlock(&mc.mu);
    mc_part(0, threads, dst, src, n);
    pthread_mutex_lock(&mc.mu);
    while (mc.busy != 0)
        pthread_cond_wait(&mc.done, &mc.mu);
    pthread_mutex_unlock(&mc.mu);
}

/* ---------------------------------------------------------------------------------------------
 * The rows.
 * ------------------------------------------------------------------------------------------- */
struct surf {
    const char *name;
    enum vidmm_tiling tiling;
    uint32_t w, h, elem;
};

static const struct surf surfs[] = {
    { "intel_y", VIDMM_TILING_INTEL_Y, 8192, 8192, 1 },
    { "block_linear", VIDMM_TILING_BLOCK_LINEAR, 4096, 4096, 4 },
};

static unsigned char *big_alloc(size_t n)
{
    unsigned char *p = aligned_alloc(4096, (n + 4095) / 4096 * 4096);
    if (p == NULL) {
        fprintf(stderr, "bench_swizzle_threads: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131 + 7);
    return p;
}

static void describe(const struct surf *s, uint32_t w, uint32_t h, struct vidmm_tile_layout *l,
                     struct vidmm_surface_desc *d)
{
    *l = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT(s->tiling);
    memset(d, 0, sizeof(*d));
    d->size = sizeof(*d);
    d->width = w;
    d->height = h;
    d->depth = 1;
    d->element_bytes = s->elem;
    d->block_width = d->block_height = 1;
    d->mip_levels = 1;
    d->array_layers = 1;
}

/* plan_copy() copies the whole surface through 'p'; a failure ends the program (no figure
 * rather than a wrong one). */
static void plan_copy(vidmm_swizzle_plan *p, bool tile, unsigned char *tiled, size_t tn, unsigned char *lin,
                      size_t ln)
{
    int rc = tile ? vidmm_swizzle_plan_swizzle(p, NULL, tiled, tn, lin, ln, 0, 0)
                  : vidmm_swizzle_plan_deswizzle(p, NULL, tiled, tn, lin, ln, 0, 0);
    if (rc != 0) {
        fprintf(stderr, "bench_swizzle_threads: a copy returned %d (%s)\n", rc, vidmm_strerror(rc));
        exit(1);
    }
}

static void set_threads(vidmm_swizzle_plan *p, uint32_t threads, uint64_t min_bytes)
{
    struct vidmm_swizzle_threads t = VIDMM_SWIZZLE_THREADS_INIT;
    t.threads = threads;
    t.min_bytes = min_bytes;
    if (vidmm_swizzle_plan_set_threads(p, &t) != 0)
        abort();
}

/* row() prints one surface, direction and thread count. */
static void row(const struct surf *s, bool tile, unsigned threads, int rounds, unsigned char *tiled,
                unsigned char *lin)
{
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc d;
    describe(s, s->w, s->h, &l, &d);
    vidmm_swizzle_plan *one, *many;
    if (vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &one) != 0 ||
        vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &many) != 0)
        abort();
    set_threads(many, threads, 1); /* always on the threads: not the measured threshold (dispatch_row()) */
    struct vidmm_swizzle_plan_info info = { .size = sizeof(info) };
    vidmm_swizzle_plan_info(one, &info);
    const size_t tn = info.tiled_size, ln = info.linear_size;
    double speed[64], vs_mc[64], t1s[64];
    int n = 0;
    plan_copy(many, tile, tiled, tn, lin, ln); /* the pool started, pages touched */
    for (int r = 0; r < rounds && n < 64; r++) {
        double t[3] = { 0, 0, 0 };
        for (int side = 0; side < 3; side++) {
            const int which = (side + r) % 3;
            double t0 = now_s();
            for (int k = 0; k <= 3; k++) {
                if (k == 1)
                    t0 = now_s(); /* call 0, after the other side, is not timed */
                if (which == 0)
                    plan_copy(many, tile, tiled, tn, lin, ln);
                else if (which == 1)
                    plan_copy(one, tile, tiled, tn, lin, ln);
                else if (tile)
                    mc_copy(threads, tiled, lin, ln);
                else
                    mc_copy(threads, lin, tiled, ln);
            }
            t[which] = now_s() - t0;
        }
        speed[n] = t[1] / t[0];
        vs_mc[n] = t[2] / t[0];
        t1s[n] = 3 * ln / t[0] / 1e9;
        n++;
    }
    printf("%-13s %-9s %2u threads  x1T %5.2f  xmemcpy(%uT) %5.2f  (%5.2f GB/s, %d rounds, medians)\n", s->name,
           tile ? "swizzle" : "deswizzle", threads, median(speed, n), threads, median(vs_mc, n), median(t1s, n), n);
    fflush(stdout);
    vidmm_swizzle_plan_destroy(one);
    vidmm_swizzle_plan_destroy(many);
}

/* memcpy_row() is the machine's own scaling: memcpy of 64 MiB on T threads against one, in the
 * same paired rounds. A plan cannot scale further than this. */
static void memcpy_row(unsigned threads, int rounds, unsigned char *dst, const unsigned char *src, size_t n)
{
    double speed[64];
    int k = 0;
    mc_copy(threads, dst, src, n);
    for (int r = 0; r < rounds && k < 64; r++) {
        double t[2];
        for (int side = 0; side < 2; side++) {
            const int which = (side + r) % 2;
            double t0 = now_s();
            for (int i = 0; i <= 3; i++) {
                if (i == 1)
                    t0 = now_s(); /* call 0, after the other side, is not timed */
                mc_copy(which ? threads : 1, dst, src, n);
            }
            t[which] = now_s() - t0;
        }
        speed[k++] = t[0] / t[1];
    }
    printf("%-13s %-9s %2u threads  x1T %5.2f  (%d rounds, median)\n", "memcpy", "", threads, median(speed, k), k);
    fflush(stdout);
}

/* dispatch_row() times a copy of 'wb' bytes x 'h' rows of layout 's' on two threads of the pool
 * (min_bytes 1: always), on a plan of two threads with the library's measured threshold
 * (min_bytes 0: it learns from its first copies which side is faster; those copies run
 * untimed first), and on the calling thread: the median per-call difference of the forced
 * plan, and each plan's speed-up over the calling thread. The measured plan's speed-up is what
 * the threshold is for: at least about 1 at every size (it never loses much), and the forced
 * plan's where the threads win. */
static void dispatch_row(const struct surf *s, uint32_t wb, uint32_t h, bool tile, int rounds, unsigned char *tiled,
                         unsigned char *lin)
{
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc d;
    describe(s, wb / s->elem, h, &l, &d);
    vidmm_swizzle_plan *one, *two, *meas;
    if (vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &one) != 0 ||
        vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &two) != 0 ||
        vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &meas) != 0)
        abort();
    set_threads(two, 2, 1);
    set_threads(meas, 2, 0);
    struct vidmm_swizzle_plan_info info = { .size = sizeof(info) };
    vidmm_swizzle_plan_info(one, &info);
    const size_t tn = info.tiled_size, ln = info.linear_size;
    /* The measured plan's learning copies (20 in the library), untimed. */
    for (int i = 0; i < 22; i++)
        plan_copy(meas, tile, tiled, tn, lin, ln);
    /* Enough calls for ~5 ms a side. */
    double t0 = now_s();
    plan_copy(one, tile, tiled, tn, lin, ln);
    double once = now_s() - t0;
    unsigned k = (unsigned)(0.005 / (once > 1e-7 ? once : 1e-7)) + 1;
    double diff[64], ratio[64], mratio[64];
    int n = 0;
    vidmm_swizzle_plan *const plans[3] = { one, two, meas };
    for (int r = 0; r < rounds && n < 64; r++) {
        double t[3];
        for (int side = 0; side < 3; side++) {
            const int which = (side + r) % 3;
            t0 = now_s();
            for (unsigned i = 0; i < k; i++)
                plan_copy(plans[which], tile, tiled, tn, lin, ln);
            t[which] = (now_s() - t0) / k;
        }
        diff[n] = (t[1] - t[0]) * 1e6;
        ratio[n] = t[0] / t[1];
        mratio[n] = t[0] / t[2];
        n++;
    }
    printf("%-13s %-9s %8zu bytes  2 threads - 1: %+8.2f us/call  x1T %5.2f  measured threshold x1T %5.2f\n", s->name,
           tile ? "swizzle" : "deswizzle", ln, median(diff, n), median(ratio, n), median(mratio, n));
    fflush(stdout);
    vidmm_swizzle_plan_destroy(one);
    vidmm_swizzle_plan_destroy(two);
    vidmm_swizzle_plan_destroy(meas);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 11;
    if (rounds < 1 || rounds > 64)
        rounds = 11;
    unsigned counts[8], nc = 0;
    const long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    counts[nc++] = 2;
    if (nproc > 2 && nproc <= MAX_T)
        counts[nc++] = (unsigned)nproc;
    for (int i = 2; i < argc && nc < 8; i++) {
        unsigned t = (unsigned)atoi(argv[i]);
        if (t >= 2 && t <= MAX_T)
            counts[nc++] = t;
    }
    const size_t bytes = (size_t)64 << 20;
    unsigned char *lin = big_alloc(bytes), *tiled = big_alloc(bytes + (1u << 20));
    printf("bench_swizzle_threads: %ld CPUs online, backend %s, %d rounds of 1 + 3 calls a side (the first untimed)\n",
           nproc, vidmm_backend_name(), rounds);
    for (unsigned c = 0; c < nc; c++)
        memcpy_row(counts[c], rounds, tiled, lin, bytes);
    for (size_t s = 0; s < sizeof(surfs) / sizeof(surfs[0]); s++)
        for (int tile = 1; tile >= 0; tile--)
            for (unsigned c = 0; c < nc; c++)
                row(&surfs[s], tile, counts[c], rounds, tiled, lin);
    printf("dispatch: a copy on 2 threads of the pool (min_bytes 1), and with the measured threshold (min_bytes 0), against "
           "the calling thread alone\n");
    /* 8 KiB: two tiles (Intel Y 128 x 64 bytes; block-linear 64 x 256 bytes, two blocks of 16
     * GOBs), one a thread, where the copy costs next to nothing and what is left is the pool's
     * hand-off; then 64 KiB .. 4 MiB. */
    static const uint32_t rows[] = { 32, 64, 128, 256, 512, 1024, 2048 };
    for (size_t s = 0; s < sizeof(surfs) / sizeof(surfs[0]); s++)
        for (int tile = 1; tile >= 0; tile--) {
            dispatch_row(&surfs[s], s == 0 ? 128 : 32, s == 0 ? 64 : 256, tile, rounds, tiled, lin);
            for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
                dispatch_row(&surfs[s], 2048, rows[i], tile, rounds, tiled, lin);
        }
    vidmm_thread_pool_shutdown();
    free(lin);
    free(tiled);
    return 0;
}
