/* SPDX-License-Identifier: MIT */
/* bench/bench_lock_contention.c - what one thread's range locks of a large swizzled surface
 * cost another thread (issue 16 deliverable 5: "an unrelated thread's submit latency while
 * another thread locks a 64 MiB surface: <= 2x its latency on an idle device").
 *
 * Thread B submits a small unrelated allocation (and signals the fence), then locks and unlocks
 * it, over and over, timing each vidmm_submit() and each vidmm_lock() + vidmm_unlock(). First
 * alone (the idle device), then while thread A locks the 64 MiB block-linear surface through a
 * swizzling range, writes one byte and unlocks it, over and over (each eager lock untiles the
 * whole surface; the unlock tiles back the page written). Printed: B's median, 99th percentile
 * and mean for each phase and their ratios, and A's lock + unlock time. A standalone program
 * (not a Google Benchmark case); figures are never asserted.
 *
 * usage: bench_lock_contention [seconds per phase] [lazy]   (default 3; 'lazy': the device
 *        asks for lazy ranges, VIDMM_DEVICE_LAZY_RANGES) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vidmm/vidmm.h"

#define MAX_SAMPLES (1u << 21)

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

/* Samples: every operation counts in 'count', 'sum' and 'max'; the first MAX_SAMPLES are kept
 * for the percentiles. */
struct series {
    double *v;
    size_t n, count;
    double sum, max;
};

static void add(struct series *s, double x)
{
    if (s->n < MAX_SAMPLES)
        s->v[s->n++] = x;
    s->count++;
    s->sum += x;
    if (x > s->max)
        s->max = x;
}

static void reset(struct series *s)
{
    s->n = s->count = 0;
    s->sum = s->max = 0;
}

struct stats {
    double p50, p99, p999, mean, max;
    size_t count;
};

static struct stats summarize(struct series *s)
{
    struct stats st = { 0, 0, 0, 0, 0, s->count };
    if (s->n == 0)
        return st;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    st.p50 = s->v[s->n / 2];
    st.p99 = s->v[(size_t)((double)s->n * 0.99)];
    st.p999 = s->v[(size_t)((double)s->n * 0.999)];
    st.mean = s->sum / (double)s->count;
    st.max = s->max;
    return st;
}

static void row(const char *what, const struct stats *st, double seconds)
{
    printf("%-30s %9.2f %9.2f %9.2f %9.2f %11.1f %11.0f\n", what, st->p50 / 1e3, st->p99 / 1e3, st->p999 / 1e3,
           st->mean / 1e3, st->max / 1e3, (double)st->count / seconds);
}

static void ratio(const struct stats *b, const struct stats *i)
{
    printf("%-30s %9.2f %9.2f %9.2f %9.2f %11.1f %11.2f\n", "  ratio (A locking / idle)", b->p50 / i->p50,
           b->p99 / i->p99, b->p999 / i->p999, b->mean / i->mean, b->max / i->max,
           (double)b->count / (double)i->count);
}

struct ctx {
    vidmm_device *dev;
    vidmm_handle big, small;
    double seconds;
    atomic_int stop;
    struct series submit, lock;
    struct series big_lock;
    int err;
};

static void *locker(void *arg)
{
    struct ctx *c = arg;
    while (!atomic_load(&c->stop)) {
        double t0 = now_ns();
        struct vidmm_lock_args la = { c->big, 0, 0, NULL, VIDMM_LOCK_ACQUIRE_APERTURE, 0, NULL };
        int err = vidmm_lock(c->dev, &la);
        if (err) {
            c->err = err;
            break;
        }
        ((volatile unsigned char *)la.data)[12345] ^= 1;
        if ((err = vidmm_unlock(c->dev, 1, &c->big)) != 0) {
            c->err = err;
            break;
        }
        add(&c->big_lock, now_ns() - t0);
    }
    return NULL;
}

/* Thread B's loop for 'seconds'. */
static int other(struct ctx *c)
{
    reset(&c->submit);
    reset(&c->lock);
    const double end = now_ns() + c->seconds * 1e9;
    while (now_ns() < end) {
        struct vidmm_alloc_ref ref = { c->small, VIDMM_REF_WRITE };
        uint64_t fence;
        double t0 = now_ns();
        int err = vidmm_submit(c->dev, &ref, 1, 0, NULL, &fence);
        double t1 = now_ns();
        if (err)
            return err;
        add(&c->submit, t1 - t0);
        if ((err = vidmm_fence_signal(c->dev, fence)) != 0)
            return err;
        struct vidmm_lock_args la = { c->small, 0, 0, NULL, 0, 0, NULL };
        t0 = now_ns();
        if ((err = vidmm_lock(c->dev, &la)) != 0)
            return err;
        ((volatile unsigned char *)la.data)[0] ^= 1;
        if ((err = vidmm_unlock(c->dev, 1, &c->small)) != 0)
            return err;
        add(&c->lock, now_ns() - t0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    const bool lazy = argc > 2 && strcmp(argv[2], "lazy") == 0;
    if (seconds <= 0)
        seconds = 3.0;
    struct vidmm_segment_desc seg = { 0x10000000ull, 80ull << 20, 80ull << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = &seg;
    dd.segment_count = 1;
    dd.paging_threads = 1;
    dd.swizzling_ranges = 2;
    dd.flags = lazy ? VIDMM_DEVICE_LAZY_RANGES : 0;
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.seconds = seconds;
    int err = vidmm_device_create(&dd, &c.dev);
    if (err) {
        fprintf(stderr, "device_create: %s\n", vidmm_strerror(err));
        return 1;
    }
    struct vidmm_tile_layout layout = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    struct vidmm_surface_desc surface = { sizeof surface, 4096, 4096, 1, 4, 1, 1, 1, 1 }; /* 64 MiB */
    uint64_t tiled = 0;
    vidmm_surface_tiled_size(&layout, &surface, &tiled);
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    d.size = tiled;
    d.flags = VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_SWIZZLED;
    d.priority = VIDMM_PRIORITY_NORMAL;
    d.supported_read_set = d.supported_write_set = 1;
    d.layout = &layout;
    d.surface = &surface;
    if ((err = vidmm_alloc_create(c.dev, &d, &c.big)) != 0 ||
        (err = vidmm_make_resident(c.dev, &c.big, 1, NULL)) != 0) {
        fprintf(stderr, "big allocation: %s\n", vidmm_strerror(err));
        return 1;
    }
    struct vidmm_alloc_desc s = { .size_of = sizeof s };
    s.size = 64 << 10;
    s.flags = VIDMM_ALLOC_CPU_VISIBLE;
    s.priority = VIDMM_PRIORITY_NORMAL;
    s.supported_read_set = s.supported_write_set = 1;
    if ((err = vidmm_alloc_create(c.dev, &s, &c.small)) != 0 ||
        (err = vidmm_make_resident(c.dev, &c.small, 1, NULL)) != 0) {
        fprintf(stderr, "small allocation: %s\n", vidmm_strerror(err));
        return 1;
    }
    c.submit.v = malloc(sizeof(double) * MAX_SAMPLES);
    c.lock.v = malloc(sizeof(double) * MAX_SAMPLES);
    c.big_lock.v = malloc(sizeof(double) * MAX_SAMPLES);
    if (!c.submit.v || !c.lock.v || !c.big_lock.v)
        return 1;
    /* Warm both paths once (the range's view is made on the first lock). */
    struct vidmm_lock_args la = { c.big, 0, 0, NULL, VIDMM_LOCK_ACQUIRE_APERTURE, 0, NULL };
    if ((err = vidmm_lock(c.dev, &la)) != 0 || (err = vidmm_unlock(c.dev, 1, &c.big)) != 0) {
        fprintf(stderr, "warm-up lock: %s\n", vidmm_strerror(err));
        return 1;
    }

    if ((err = other(&c)) != 0) {
        fprintf(stderr, "idle phase: %s\n", vidmm_strerror(err));
        return 1;
    }
    struct stats idle_sub = summarize(&c.submit), idle_lock = summarize(&c.lock);

    /* Thread A alone: its lock + unlock time without B beside it. */
    pthread_t a;
    pthread_create(&a, NULL, locker, &c);
    struct timespec ts = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
    nanosleep(&ts, NULL);
    atomic_store(&c.stop, 1);
    pthread_join(a, NULL);
    struct stats alone = summarize(&c.big_lock);
    reset(&c.big_lock);
    atomic_store(&c.stop, 0);

    pthread_create(&a, NULL, locker, &c);
    err = other(&c);
    atomic_store(&c.stop, 1);
    pthread_join(a, NULL);
    if (err || c.err) {
        fprintf(stderr, "contended phase: %s\n", vidmm_strerror(err ? err : c.err));
        return 1;
    }
    struct stats busy_sub = summarize(&c.submit), busy_lock = summarize(&c.lock);
    struct stats big = summarize(&c.big_lock);

    printf("vidmm %s, backend %s, %s ranges, %.1f s per phase\n", vidmm_version_string(), vidmm_backend_name(),
           lazy ? "lazy" : "eager", seconds);
    printf("thread A, 64 MiB block-linear range lock + 1 byte + unlock: alone median %.2f ms (%zu), "
           "beside B median %.2f ms (%zu)\n", alone.p50 / 1e6, alone.count, big.p50 / 1e6, big.count);
    printf("%-30s %9s %9s %9s %9s %11s %11s\n", "thread B (unrelated alloc.)", "p50 us", "p99 us", "p99.9 us",
           "mean us", "max us", "ops/s");
    row("submit, idle device", &idle_sub, seconds);
    row("submit, A locking", &busy_sub, seconds);
    ratio(&busy_sub, &idle_sub);
    row("lock+unlock, idle device", &idle_lock, seconds);
    row("lock+unlock, A locking", &busy_lock, seconds);
    ratio(&busy_lock, &idle_lock);
    vidmm_device_destroy(c.dev);
    free(c.submit.v);
    free(c.lock.v);
    free(c.big_lock.v);
    return 0;
}
