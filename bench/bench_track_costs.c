/* SPDX-License-Identifier: MIT */
/* bench/bench_track_costs.c - where the cost of a plain lock's write tracking goes (issue 31),
 * measured with the raw system calls the engine uses (lib/engine/os/writewatch.c vmos_wtrack_*),
 * on anonymous private memory and on a memfd mapped shared (the engine's arena is the latter),
 * alternating the sides in one process:
 *
 *   arm      UFFDIO_WRITEPROTECT over the whole range (populated pages), per page;
 *   fault    the first write to a write-protected page, asynchronous mode (UFFD_FEATURE_WP_ASYNC:
 *            the kernel resolves it) and synchronous mode (a handler thread reads the fault and
 *            lifts the page's protection, which wakes the writer), per page, less the same
 *            write to an unprotected page;
 *   scan     PAGEMAP_SCAN of the range for written pages (nothing written / every page);
 *   lift     UFFDIO_WRITEPROTECT mode 0 over the range (the collect's disarm);
 *   touch    one byte written to each page, before any registration;
 *   relift   the same after an arm and a lift (on shared memory the lift leaves every page
 *            read-only: each write faults again, tracked or not);
 *   copy     memcpy of the range to another buffer (the PermanentSysMem copy-back), per page;
 *   flush    vidmm_flush() write-back + invalidate of clean lines (the engine's own flush of a
 *            64 MiB Cached allocation costs far more per page: bench_lock_paths' untracked rows).
 *
 * Printed: the medians in us (per page where it says so) and the break-even written fraction
 * of each mode against the whole copy-back and the whole flush: the fraction f where
 * arm + scan + lift + f * pages * (fault + copy or flush) = pages * (copy or flush). The
 * engine's policy (lib/engine/lock.c, "What a plain lock's CPU writes touch") cites these.
 *
 * usage: bench_track_costs [rounds] [MiB]   (default 7 rounds, 64 MiB) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include "engine/os/uffd_compat.h"
#include "vidmm/vidmm.h"

#define PAGE 4096u
#define MAX_ROUNDS 64

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_track_costs: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint8_t *map_kind(bool shared, size_t n)
{
    void *p;
    if (shared) {
        int fd = memfd_create("track-costs", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)n) != 0)
            die("memfd");
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    } else {
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (p == MAP_FAILED)
        die("mmap");
    memset(p, 1, n);
    return p;
}

/* A userfaultfd in asynchronous (async) or synchronous write-protect mode, registered over
 * [p, p + n); -1 where the kernel refuses. */
static int uffd_over(uint8_t *p, size_t n, bool async)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0)
        return -1;
    struct uffdio_api api = { .api = UFFD_API };
    api.features = UFFD_FEATURE_WP_UNPOPULATED | (async ? UFFD_FEATURE_WP_ASYNC : 0);
    struct uffdio_register reg = { .range = { (uintptr_t)p, n }, .mode = UFFDIO_REGISTER_MODE_WP };
    if (ioctl(fd, UFFDIO_API, &api) != 0 || ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void protect(int fd, uint8_t *p, size_t n, bool wp)
{
    struct uffdio_writeprotect w = { .range = { (uintptr_t)p, n }, .mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0 };
    if (ioctl(fd, UFFDIO_WRITEPROTECT, &w) != 0)
        die("UFFDIO_WRITEPROTECT");
}

/* The written pages of [p, p + n) (their count). */
static size_t scan(int pm, uint8_t *p, size_t n)
{
    struct page_region vec[256];
    size_t written = 0;
    uintptr_t start = (uintptr_t)p, end = start + n;
    while (start < end) {
        struct pm_scan_arg a = { .size = sizeof a, .start = start, .end = end, .vec = (uintptr_t)vec,
                                 .vec_len = 256, .category_mask = PAGE_IS_WRITTEN,
                                 .return_mask = PAGE_IS_WRITTEN };
        long r = ioctl(pm, PAGEMAP_SCAN, &a);
        if (r < 0)
            die("PAGEMAP_SCAN");
        for (long i = 0; i < r; i++)
            written += (size_t)(vec[i].end - vec[i].start) / PAGE;
        start = a.walk_end;
    }
    return written;
}

static void touch(volatile uint8_t *p, size_t pages, size_t step)
{
    for (size_t k = 0; k < pages; k += step)
        p[k * PAGE + 17] ^= 1;
}

/* The synchronous mode's handler: lifts the protection of each faulting page. */
struct handler {
    int fd;
    volatile bool stop;
    size_t faults;
};

static void *handle(void *arg)
{
    struct handler *h = arg;
    while (!h->stop) {
        struct pollfd pf = { h->fd, POLLIN, 0 };
        if (poll(&pf, 1, 10) <= 0)
            continue;
        struct uffd_msg m;
        if (read(h->fd, &m, sizeof m) != (ssize_t)sizeof m)
            continue;
        if (m.event != UFFD_EVENT_PAGEFAULT)
            continue;
        uintptr_t a = (uintptr_t)m.arg.pagefault.address & ~(uintptr_t)(PAGE - 1);
        struct uffdio_writeprotect w = { .range = { a, PAGE }, .mode = 0 };
        (void)ioctl(h->fd, UFFDIO_WRITEPROTECT, &w);
        h->faults++;
    }
    return NULL;
}

struct costs {
    double arm, lift, scan0, scanall, fault_async, fault_sync, touch, relift, copy, flush; /* us per page */
};

static void measure(bool shared, size_t bytes, int rounds, int pm, struct costs *c)
{
    const size_t pages = bytes / PAGE;
    uint8_t *p = map_kind(shared, bytes), *dst = map_kind(false, bytes);
    double arm[MAX_ROUNDS], lift[MAX_ROUNDS], s0[MAX_ROUNDS], sall[MAX_ROUNDS], fa[MAX_ROUNDS], fs[MAX_ROUNDS],
        to[MAX_ROUNDS], cp[MAX_ROUNDS], fl[MAX_ROUNDS], rl[MAX_ROUNDS];
    /* The writes, the copy and the flush alone: before any registration (on shared memory a
     * lift leaves the pages read-only, so writes after one fault: the 'relift' column). */
    for (int r = 0; r < rounds; r++) {
        double t = now_us();
        touch(p, pages, 1);
        to[r] = now_us() - t;
        t = now_us();
        memcpy(dst, p, bytes);
        cp[r] = now_us() - t;
        t = now_us();
        vidmm_flush(p, bytes, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
        fl[r] = now_us() - t;
    }
    int fd = uffd_over(p, bytes, true);
    if (fd < 0)
        die("userfaultfd WP_ASYNC");
    /* Synchronous faults cost far more: a sample of the pages (every 8th). */
    const size_t sstep = 8;
    for (int r = 0; r < rounds; r++) {
        double t = now_us();
        touch(p, pages, 1);
        rl[r] = now_us() - t;
        t = now_us();
        protect(fd, p, bytes, true);
        arm[r] = now_us() - t;
        t = now_us();
        (void)scan(pm, p, bytes);
        s0[r] = now_us() - t;
        t = now_us();
        touch(p, pages, 1);
        fa[r] = now_us() - t - to[r];
        t = now_us();
        if (scan(pm, p, bytes) != pages)
            fprintf(stderr, "bench_track_costs: the scan missed written pages\n");
        sall[r] = now_us() - t;
        protect(fd, p, bytes, true);
        t = now_us();
        protect(fd, p, bytes, false);
        lift[r] = now_us() - t;
    }
    struct uffdio_range all = { (uintptr_t)p, bytes };
    (void)ioctl(fd, UFFDIO_UNREGISTER, &all);
    close(fd);
    fd = uffd_over(p, bytes, false);
    if (fd < 0)
        die("userfaultfd WP (sync)");
    struct handler h = { fd, false, 0 };
    pthread_t th;
    if (pthread_create(&th, NULL, handle, &h) != 0)
        die("pthread_create");
    for (int r = 0; r < rounds; r++) {
        protect(fd, p, bytes, true);
        double t = now_us();
        touch(p, pages, sstep);
        fs[r] = (now_us() - t) * (double)sstep - to[r];
        protect(fd, p, bytes, false);
    }
    h.stop = true;
    pthread_join(th, NULL);
    (void)ioctl(fd, UFFDIO_UNREGISTER, &all);
    close(fd);
    const double np = (double)pages;
    c->arm = median(arm, rounds) / np;
    c->lift = median(lift, rounds) / np;
    c->scan0 = median(s0, rounds) / np;
    c->scanall = median(sall, rounds) / np;
    c->fault_async = median(fa, rounds) / np;
    c->fault_sync = median(fs, rounds) / np;
    c->touch = median(to, rounds) / np;
    c->relift = median(rl, rounds) / np;
    c->copy = median(cp, rounds) / np;
    c->flush = median(fl, rounds) / np;
    munmap(p, bytes);
    munmap(dst, bytes);
}

/* The written fraction where tracking (fixed + f * (fault + per)) costs what moving every page
 * (per) does. */
static double break_even(double fixed, double fault, double per)
{
    double f = (per - fixed) / (fault + per);
    return f < 0 ? 0 : f;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 7;
    size_t mib = argc > 2 ? (size_t)atoi(argv[2]) : 64;
    if (rounds < 1 || rounds > MAX_ROUNDS || mib < 1 || mib > 1024) {
        fprintf(stderr, "usage: bench_track_costs [rounds 1..%d] [MiB 1..1024]\n", MAX_ROUNDS);
        return 2;
    }
    int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (pm < 0)
        die("/proc/self/pagemap");
    printf("vidmm %s, %zu MiB, medians of %d, us per 4 KiB page\n", vidmm_version_string(), mib, rounds);
    printf("  %-10s %7s %7s %7s %7s %8s %8s %7s %7s %7s %7s | %s\n", "memory", "arm", "lift", "scan0", "scan1",
           "f.async", "f.sync", "touch", "relift", "copy", "flush", "break-even written fraction: copy / flush");
    for (int k = 0; k < 2; k++) {
        const bool shared = k == 1;
        struct costs c;
        measure(shared, mib << 20, rounds, pm, &c);
        /* Fixed cost per page of the range: arm, a scan finding what was written, lift. */
        const double fixed = c.arm + c.scan0 + c.lift;
        printf("  %-10s %7.3f %7.3f %7.3f %7.3f %8.3f %8.3f %7.3f %7.3f %7.3f %7.3f | async %.3f / %.3f, sync %.4f / "
               "%.4f\n",
               shared ? "memfd" : "anonymous", c.arm, c.lift, c.scan0, c.scanall, c.fault_async, c.fault_sync,
               c.touch, c.relift, c.copy, c.flush, break_even(fixed, c.fault_async, c.copy),
               break_even(fixed, c.fault_async, c.flush), break_even(fixed, c.fault_sync, c.copy),
               break_even(fixed, c.fault_sync, c.flush));
    }
    close(pm);
    return 0;
}
