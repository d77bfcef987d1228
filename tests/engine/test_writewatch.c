/* SPDX-License-Identifier: MIT */
/* tests/engine/test_writewatch.c - the write-watch API (include/vidmm/writewatch.h) on each of
 * its backends, forced through the descriptor: exact dirty sets against a model (the set of
 * pages written) for random write patterns, reset semantics, array capacity, writes from several
 * threads racing get-with-reset (none may be lost), writes by the kernel (read(2) from a pipe
 * into the region), refused registrations, fork (the parent's tracking, what a child may do with
 * its inherited handles, a fork while other threads are inside the library), many regions, a
 * 1 GiB region, the application's own signal handlers writing regions, regions destroyed while
 * threads fault on them, hugetlb memory with any output array, the VIDMM_WRITEWATCH variable,
 * and the SIGSEGV chaining of the handler.
 *
 * A backend the kernel refuses (vidmm_writewatch_create() returns VIDMM_E_UNSUPPORTED) is a
 * skip that quotes the library's warning, never a pass.
 *
 * Every region is mapped with a PROT_NONE guard page on each side and MADV_NOHUGEPAGE: the
 * guards keep the kernel from merging a neighbouring mapping into the region's VMA (which marks
 * a whole VMA soft-dirty), and base pages keep soft-dirty exact (a transparent huge page is one
 * soft-dirty unit). Both are documented limits of the soft-dirty backend, not of the tests.
 *
 * Each Criterion test runs in a process of its own, so VIDMM_WRITEWATCH (read once per process)
 * can be set at the start of a test. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/options.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "t_helpers.h"
#include "t_hugepool.h"
#include "vidmm/writewatch.h"

#define T_TIMEOUT 120

static size_t pg(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* ---------------------------------------------------------------------------------------------
 * Guarded mappings and handles
 * ------------------------------------------------------------------------------------------- */
struct t_map {
    uint8_t *p;         /* first page of the region */
    size_t len;         /* region bytes */
    void *map;
    size_t map_len;
};

static void t_map_init(struct t_map *m, size_t pages, bool noreserve)
{
    m->len = pages * pg();
    m->map_len = m->len + 2 * pg();
    m->map = mmap(NULL, m->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0),
                  -1, 0);
    cr_assert_neq(m->map, MAP_FAILED, "mmap %zu bytes: %s", m->map_len, strerror(errno));
    m->p = (uint8_t *)m->map + pg();
    cr_assert_eq(mprotect(m->p, m->len, PROT_READ | PROT_WRITE), 0);
    (void)madvise(m->p, m->len, MADV_NOHUGEPAGE);
}

static void t_map_fini(struct t_map *m)
{
    munmap(m->map, m->map_len);
}

static struct t_log wlog;

/* t_ww() registers [p, p + len) on 'backend' and checks it runs there; a refusal skips. */
static vidmm_writewatch *t_ww(int backend, void *p, size_t len)
{
    t_log_reset(&wlog);
    vidmm_set_log_fn(t_log_record, &wlog, VIDMM_LOG_WARN);
    struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
    d.base = p;
    d.size = len;
    d.backend = (uint32_t)backend;
    vidmm_writewatch *ww = NULL;
    int rc = vidmm_writewatch_create(&d, &ww);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_ERROR);
    if (rc == VIDMM_E_UNSUPPORTED)
        cr_skip_test("backend %s refused by this kernel or process: %s", vidmm_writewatch_backend_name(backend),
                     wlog.first_warn[0] ? wlog.first_warn : "(no reason logged)");
    cr_assert_eq(rc, 0, "vidmm_writewatch_create(%s): %s", vidmm_writewatch_backend_name(backend),
                 vidmm_strerror(rc));
    cr_assert_eq(vidmm_writewatch_backend(ww), backend);
    cr_assert_eq(vidmm_writewatch_pages(ww), len / pg());
    return ww;
}

/* t_get_all() returns the written pages (ascending) in a malloc'd array and their number. */
static uint64_t *t_get_all(vidmm_writewatch *ww, bool reset, size_t *n)
{
    size_t cap = vidmm_writewatch_pages(ww);
    uint64_t *v = malloc((cap + 1) * sizeof *v);
    cr_assert_not_null(v);
    int rc = vidmm_writewatch_get(ww, reset, v, cap, n);
    cr_assert_eq(rc, 0, "vidmm_writewatch_get: %d (%s)", rc, vidmm_strerror(rc));
    for (size_t i = 1; i < *n; i++)
        cr_assert_lt(v[i - 1], v[i], "pages not strictly ascending at %zu", i);
    return v;
}

/* t_expect() checks that the written pages are exactly the set bits of 'model' (npages). */
static void t_expect(vidmm_writewatch *ww, bool reset, const uint8_t *model, size_t npages, const char *what)
{
    size_t n;
    uint64_t *v = t_get_all(ww, reset, &n);
    size_t k = 0;
    for (size_t i = 0; i < npages; i++) {
        if (!model[i])
            continue;
        cr_assert_lt(k, n, "%s: page %zu written but not reported (%zu reported)" T_CTX_FMT, what, i, n, T_CTX_ARGS);
        cr_assert_eq(v[k], i, "%s: reported page %llu, expected %zu" T_CTX_FMT, what, (unsigned long long)v[k], i,
                     T_CTX_ARGS);
        k++;
    }
    cr_assert_eq(k, n, "%s: %zu pages reported, %zu written (first extra: %llu)" T_CTX_FMT, what, n, k,
                 k < n ? (unsigned long long)v[k] : 0ull, T_CTX_ARGS);
    free(v);
}

#define BACKENDS(X) X(uffd, VIDMM_WRITEWATCH_UFFD) X(softdirty, VIDMM_WRITEWATCH_SOFTDIRTY) \
                    X(mprotect, VIDMM_WRITEWATCH_MPROTECT)

/* ---------------------------------------------------------------------------------------------
 * Exact dirty sets for random write patterns, with get, get-with-reset and reset
 * ------------------------------------------------------------------------------------------- */
static void t_random_exact(int backend)
{
    enum { PAGES = 300, ROUNDS = 30 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    /* Half the pages populated before registration, half not: both must start unwritten. */
    for (size_t i = 0; i < PAGES; i += 2)
        m.p[i * pg()] = 1;
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    uint8_t model[PAGES] = { 0 };
    struct t_rng r;
    t_rng_init(&r, 0x1000 + (uint64_t)backend);
    t_expect(ww, false, model, PAGES, "fresh region");
    volatile uint8_t sink = 0;
    for (int round = 0; round < ROUNDS; round++) {
        size_t writes = t_rng_below(&r, round % 5 == 0 ? PAGES : 20);
        for (size_t w = 0; w < writes; w++) {
            size_t page = t_rng_below(&r, PAGES);
            size_t off = t_rng_below(&r, pg());
            m.p[page * pg() + off] = (uint8_t)(round + 1);
            model[page] = 1;
        }
        /* Reads never count. */
        for (size_t i = 0; i < 10; i++)
            sink += m.p[t_rng_below(&r, PAGES) * pg()];
        t_expect(ww, false, model, PAGES, "get without reset");
        t_expect(ww, false, model, PAGES, "get without reset, again");
        switch (round % 3) {
        case 0:
            t_expect(ww, true, model, PAGES, "get with reset");
            break;
        case 1: {
            int rc = vidmm_writewatch_reset(ww);
            cr_assert_eq(rc, 0, "reset: %s", vidmm_strerror(rc));
            break;
        }
        default: {
            uint64_t bm[(PAGES + 63) / 64];
            size_t n = 0, want = 0;
            cr_assert_eq(vidmm_writewatch_get_bitmap(ww, true, bm, sizeof bm / sizeof bm[0], &n), 0);
            for (size_t i = 0; i < PAGES; i++) {
                bool set = (bm[i / 64] >> (i % 64)) & 1;
                cr_assert_eq(set, model[i] != 0, "bitmap page %zu: %d, model %d" T_CTX_FMT, i, set, model[i],
                             T_CTX_ARGS);
                want += model[i];
            }
            cr_assert_eq(n, want);
            cr_assert_eq(bm[PAGES / 64] >> (PAGES % 64), 0, "bits past the last page");
            break;
        }
        }
        memset(model, 0, sizeof model);
        t_expect(ww, false, model, PAGES, "after reset");
    }
    (void)sink;
    vidmm_writewatch_destroy(ww);
    /* The memory is writable and intact after destroy. */
    m.p[0] = 7;
    cr_assert_eq(m.p[0], 7);
    t_map_fini(&m);
}

/* A full array returns 1 and keeps the rest for the next call; with reset, only what was
 * returned is reset. */
static void t_capacity(int backend)
{
    enum { PAGES = 64 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    const size_t written[] = { 3, 4, 5, 17, 40, 41, 63 };
    for (size_t i = 0; i < sizeof written / sizeof written[0]; i++)
        m.p[written[i] * pg() + 100] = 1;
    size_t n = 99;
    cr_assert_eq(vidmm_writewatch_get(ww, false, NULL, 0, &n), 1, "capacity 0: something written");
    cr_assert_eq(n, 0);
    uint64_t v[8];
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, 3, &n), 1);
    cr_assert_eq(n, 3);
    cr_assert(v[0] == 3 && v[1] == 4 && v[2] == 5, "first three: %llu %llu %llu", (unsigned long long)v[0],
              (unsigned long long)v[1], (unsigned long long)v[2]);
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, 3, &n), 1);
    cr_assert(n == 3 && v[0] == 17 && v[1] == 40 && v[2] == 41);
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, 3, &n), 0);
    cr_assert(n == 1 && v[0] == 63);
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, 8, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(vidmm_writewatch_get(ww, false, NULL, 0, &n), 0, "capacity 0: nothing written");
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * Several threads write while one thread gets with reset. The model: before each write a
 * writer reads the number of get-with-reset calls completed so far ('epoch'); the write then
 * happened after that call returned, so some later call must report the page. The writer
 * records, per page, the largest epoch it saw before writing it; the getter records, per page,
 * the last call that reported it. At the end every written page must have been reported by a
 * call later than its recorded epoch, and nothing unwritten may be reported.
 * ------------------------------------------------------------------------------------------- */
enum { TH_PAGES = 512, TH_WRITERS = 3 };
struct th_ctx {
    uint8_t *p;
    atomic_int stop;
    atomic_long epoch;
    atomic_long max_epoch[TH_PAGES];   /* -1: never written */
    int id;
};
struct th_arg {
    struct th_ctx *c;
    int id;
};

static void *th_writer(void *arg)
{
    struct th_arg *a = arg;
    struct th_ctx *c = a->c;
    struct t_rng r;
    t_rng_init(&r, 0x2000 + (uint64_t)a->id);
    while (!atomic_load(&c->stop)) {
        size_t page = t_rng_below(&r, TH_PAGES);
        long e = atomic_load(&c->epoch);
        ((volatile uint8_t *)c->p)[page * pg() + t_rng_below(&r, pg())] = (uint8_t)e;
        long cur = atomic_load(&c->max_epoch[page]);
        while (cur < e && !atomic_compare_exchange_weak(&c->max_epoch[page], &cur, e)) {
        }
        if (t_rng_below(&r, 64) == 0)
            sched_yield();
    }
    return NULL;
}

static void t_threads(int backend)
{
    struct t_map m;
    t_map_init(&m, TH_PAGES, false);
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    static struct th_ctx c;
    c.p = m.p;
    atomic_store(&c.stop, 0);
    atomic_store(&c.epoch, 0);
    for (size_t i = 0; i < TH_PAGES; i++)
        atomic_store(&c.max_epoch[i], -1);
    long *last_rep = malloc(TH_PAGES * sizeof *last_rep);
    for (size_t i = 0; i < TH_PAGES; i++)
        last_rep[i] = -1;
    pthread_t th[TH_WRITERS];
    struct th_arg args[TH_WRITERS];
    for (int i = 0; i < TH_WRITERS; i++) {
        args[i] = (struct th_arg){ &c, i };
        cr_assert_eq(pthread_create(&th[i], NULL, th_writer, &args[i]), 0);
    }
    uint64_t *v = malloc(TH_PAGES * sizeof *v);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long calls = 0;
    for (;;) {
        size_t n;
        /* Small capacities now and then: partial resets must not lose anything either. */
        size_t cap = calls % 4 == 3 ? 7 : TH_PAGES;
        int rc = vidmm_writewatch_get(ww, true, v, cap, &n);
        cr_assert_geq(rc, 0, "get: %s", vidmm_strerror(rc));
        long k = atomic_load(&c.epoch) + 1; /* this call's number */
        for (size_t i = 0; i < n; i++)
            last_rep[v[i]] = k;
        atomic_store(&c.epoch, k);
        calls++;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) > 400000000L)
            break;
    }
    atomic_store(&c.stop, 1);
    for (int i = 0; i < TH_WRITERS; i++)
        pthread_join(th[i], NULL);
    /* Final calls, after every writer is done, until nothing is left. */
    for (;;) {
        size_t n;
        int rc = vidmm_writewatch_get(ww, true, v, TH_PAGES, &n);
        cr_assert_eq(rc, 0);
        long k = atomic_load(&c.epoch) + 1;
        for (size_t i = 0; i < n; i++)
            last_rep[v[i]] = k;
        atomic_store(&c.epoch, k);
        if (n == 0)
            break;
    }
    size_t written = 0;
    for (size_t i = 0; i < TH_PAGES; i++) {
        long e = atomic_load(&c.max_epoch[i]);
        if (e < 0) {
            cr_assert_eq(last_rep[i], -1, "page %zu never written but reported by call %ld", i, last_rep[i]);
            continue;
        }
        written++;
        cr_assert_gt(last_rep[i], e, "page %zu written after call %ld returned, last reported by call %ld: a lost "
                     "write" T_CTX_FMT, i, e, last_rep[i], T_CTX_ARGS);
    }
    cr_log_info("%s: %ld get-with-reset calls, %zu pages written", vidmm_writewatch_backend_name(backend), calls,
                written);
    cr_assert_gt(calls, 2);
    free(v);
    free(last_rep);
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * Writes by the kernel: read(2) from a pipe into the region. uffd (WP_ASYNC: the kernel resolves
 * the write-protect fault itself) and soft-dirty (the kernel's write sets the bit) see them; the
 * mprotect backend's read-only page makes the system call fail with EFAULT, and nothing is
 * reported (no signal is raised for a kernel access).
 * ------------------------------------------------------------------------------------------- */
static void t_kernel_write(int backend)
{
    enum { PAGES = 16 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    m.p[5 * pg()] = 1; /* one populated target, one not (page 9) */
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    const size_t targets[] = { 5, 9 };
    uint8_t model[PAGES] = { 0 };
    for (size_t t = 0; t < 2; t++) {
        cr_assert_eq(write(fds[1], "kernel", 6), 6);
        ssize_t got = read(fds[0], m.p + targets[t] * pg() + 10, 6);
        if (backend == VIDMM_WRITEWATCH_MPROTECT) {
            cr_assert_eq(got, -1, "read(2) into a protected page should fail");
            cr_assert_eq(errno, EFAULT, "read(2): %s, expected EFAULT", strerror(errno));
            char drain[6];
            cr_assert_eq(read(fds[0], drain, 6), 6);
        } else {
            cr_assert_eq(got, 6, "read(2) into the region: %s", got < 0 ? strerror(errno) : "short");
            cr_assert_eq(memcmp(m.p + targets[t] * pg() + 10, "kernel", 6), 0);
            model[targets[t]] = 1;
        }
    }
    t_expect(ww, true, model, PAGES, "kernel writes");
    close(fds[0]);
    close(fds[1]);
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * Refused registrations: nothing created, the memory untouched and writable
 * ------------------------------------------------------------------------------------------- */
static void t_refused(int backend)
{
    enum { PAGES = 32 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
    d.backend = (uint32_t)backend;
    vidmm_writewatch *ww = (vidmm_writewatch *)0x1;
    struct { void *base; size_t size; const char *what; } bad[] = {
        { m.p + 1, 4 * pg(), "unaligned base" },
        { m.p, 4 * pg() + 1, "unaligned size" },
        { m.p, 100, "size below a page" },
        { m.p, 0, "zero size" },
        { NULL, 4 * pg(), "NULL base" },
        { (void *)(uintptr_t)(-(intptr_t)(2 * pg())), 4 * pg(), "wraps the address space" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d.base = bad[i].base;
        d.size = bad[i].size;
        cr_assert_eq(vidmm_writewatch_create(&d, &ww), VIDMM_E_INVALID_ARG, "%s", bad[i].what);
        cr_assert_eq(ww, (vidmm_writewatch *)0x1, "%s: *out changed", bad[i].what);
    }
    d.base = m.p;
    d.size = 4 * pg();
    d.size_of = sizeof d - 1;
    cr_assert_eq(vidmm_writewatch_create(&d, &ww), VIDMM_E_INVALID_ARG, "size_of too small");
    d.size_of = sizeof d;
    d.flags = 0x80000000u;
    cr_assert_eq(vidmm_writewatch_create(&d, &ww), VIDMM_E_INVALID_ARG, "flags");
    d.flags = 0;
    d.backend = 4;
    cr_assert_eq(vidmm_writewatch_create(&d, &ww), VIDMM_E_INVALID_ARG, "backend 4");
    cr_assert_eq(vidmm_writewatch_create(NULL, &ww), VIDMM_E_INVALID_ARG);
    d.backend = (uint32_t)backend;
    cr_assert_eq(vidmm_writewatch_create(&d, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(ww, (vidmm_writewatch *)0x1);

    /* Overlaps: with a region of this backend, and with one of every other backend. */
    vidmm_writewatch *a = t_ww(backend, m.p + 8 * pg(), 8 * pg());
    struct { size_t first, pages; } over[] = { { 8, 8 }, { 0, 9 }, { 15, 4 }, { 10, 1 }, { 0, PAGES } };
    for (int b = VIDMM_WRITEWATCH_AUTO; b <= VIDMM_WRITEWATCH_MPROTECT; b++)
        for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
            d.backend = (uint32_t)b;
            d.base = m.p + over[i].first * pg();
            d.size = over[i].pages * pg();
            ww = (vidmm_writewatch *)0x1;
            cr_assert_eq(vidmm_writewatch_create(&d, &ww), VIDMM_E_OVERLAP, "overlap [%zu, +%zu) backend %d",
                         over[i].first, over[i].pages, b);
            cr_assert_eq(ww, (vidmm_writewatch *)0x1);
        }
    /* Adjacent on both sides is fine. */
    vidmm_writewatch *l = t_ww(backend, m.p, 8 * pg());
    vidmm_writewatch *r = t_ww(backend, m.p + 16 * pg(), 8 * pg());
    m.p[7 * pg()] = 1;
    m.p[16 * pg()] = 1;
    size_t n;
    uint64_t v[8];
    cr_assert_eq(vidmm_writewatch_get(l, true, v, 8, &n), 0);
    cr_assert(n == 1 && v[0] == 7);
    cr_assert_eq(vidmm_writewatch_get(a, true, v, 8, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(vidmm_writewatch_get(r, true, v, 8, &n), 0);
    cr_assert(n == 1 && v[0] == 0);
    /* Bad calls on a handle change nothing. */
    m.p[17 * pg()] = 1;
    cr_assert_eq(vidmm_writewatch_get(r, true, NULL, 4, &n), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_writewatch_get(r, true, v, 4, NULL), VIDMM_E_INVALID_ARG);
    uint64_t bm[1];
    cr_assert_eq(vidmm_writewatch_get_bitmap(r, true, bm, 0, &n), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_writewatch_get(NULL, true, v, 4, &n), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_writewatch_reset(NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_writewatch_backend(NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_writewatch_get(r, true, v, 8, &n), 0);
    cr_assert(n == 1 && v[0] == 1, "the write before the bad calls is still there");
    vidmm_writewatch_destroy(NULL);
    vidmm_writewatch_destroy(l);
    vidmm_writewatch_destroy(a);
    vidmm_writewatch_destroy(r);
    /* Destroyed: the range can be registered again. */
    vidmm_writewatch *all = t_ww(backend, m.p, m.len);
    vidmm_writewatch_destroy(all);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * Fork: the child's writes are not the parent's
 * ------------------------------------------------------------------------------------------- */
static void t_fork(int backend)
{
    enum { PAGES = 32 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    for (size_t i = 0; i < PAGES; i++)
        m.p[i * pg()] = 1;
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    m.p[1 * pg()] = 2;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        for (size_t i = 10; i < 20; i++)
            m.p[i * pg() + 5] = 3;
        _exit(m.p[10 * pg() + 5] == 3 ? 0 : 1);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
    m.p[2 * pg()] = 2;
    m.p[25 * pg()] = 2;
    uint8_t model[PAGES] = { 0 };
    model[1] = model[2] = model[25] = 1;
    t_expect(ww, true, model, PAGES, "after a child wrote pages 10-19");
    cr_assert_eq(m.p[10 * pg() + 5], 0, "the child's write reached the parent");
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * Many regions, each with its own dirty set
 * ------------------------------------------------------------------------------------------- */
static void t_many(int backend)
{
    enum { REGIONS = 200, PAGES = 6, ROUNDS = 4 };
    /* One mapping: regions of PAGES pages, each followed by a PROT_NONE guard page. */
    size_t stride = (PAGES + 1) * pg();
    uint8_t *base = mmap(NULL, REGIONS * stride + pg(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(base, MAP_FAILED);
    vidmm_writewatch **ww = calloc(REGIONS, sizeof *ww);
    uint8_t (*model)[PAGES] = calloc(REGIONS, sizeof *model);
    for (size_t i = 0; i < REGIONS; i++) {
        uint8_t *p = base + pg() + i * stride;
        cr_assert_eq(mprotect(p, PAGES * pg(), PROT_READ | PROT_WRITE), 0);
        (void)madvise(p, PAGES * pg(), MADV_NOHUGEPAGE);
        ww[i] = t_ww(backend, p, PAGES * pg());
    }
    struct t_rng r;
    t_rng_init(&r, 0x3000 + (uint64_t)backend);
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t w = 0; w < 300; w++) {
            size_t i = t_rng_below(&r, REGIONS), page = t_rng_below(&r, PAGES);
            base[pg() + i * stride + page * pg() + t_rng_below(&r, pg())] = 1;
            model[i][page] = 1;
        }
        /* Reset the regions in a random order, checking each: a soft-dirty reset of one must
         * not take anything from the others. */
        size_t start = t_rng_below(&r, REGIONS);
        for (size_t k = 0; k < REGIONS; k++) {
            size_t i = (start + k * 7) % REGIONS;
            t_expect(ww[i], true, model[i], PAGES, "one of many regions");
            memset(model[i], 0, PAGES);
        }
    }
    for (size_t i = 0; i < REGIONS; i++)
        vidmm_writewatch_destroy(ww[i]);
    free(ww);
    free(model);
    munmap(base, REGIONS * stride + pg());
}

/* ---------------------------------------------------------------------------------------------
 * A 1 GiB NORESERVE region with a few pages touched
 * ------------------------------------------------------------------------------------------- */
static void t_huge(int backend)
{
    size_t pages = ((size_t)1 << 30) / pg();
    struct t_map m;
    t_map_init(&m, pages, true);
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    const size_t touched[] = { 0, 1, 4097, 100000, 131072, pages - 1 };
    uint8_t *model = calloc(pages, 1);
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < sizeof touched / sizeof touched[0]; i++) {
            size_t page = (touched[i] + (size_t)round * 3) % pages;
            m.p[page * pg() + 8] = 1;
            model[page] = 1;
        }
        volatile uint8_t s = m.p[200000 * pg()]; /* a read of an untouched page */
        (void)s;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        t_expect(ww, true, model, pages, "1 GiB region");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        cr_log_info("%s: 1 GiB get+reset (%s round %d): %.3f ms", vidmm_writewatch_backend_name(backend),
                    round ? "again" : "first", round,
                    ((t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e6);
        memset(model, 0, pages);
    }
    free(model);
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * Fork: what a child may do with the handles it inherited (writewatch.h "Fork"). A uffd handle
 * belongs to the process that made it: in the child its calls answer VIDMM_E_NOT_AVAILABLE and
 * its destroy releases only the child's copy - it must not unregister or write-protect the
 * parent's memory through the userfaultfd both processes share. A softdirty or mprotect handle
 * keeps tracking the child's own copy. Either way the parent's tracking goes on unchanged.
 * ------------------------------------------------------------------------------------------- */
enum { FC_GET = 1, FC_BITMAP = 2, FC_RESET = 4, FC_OWN = 8 };

/* t_fork_child() is the child's side; it returns a mask of the FC_* checks that failed (no
 * Criterion assertion in a forked child). */
static int t_fork_child(int backend, vidmm_writewatch *ww, uint8_t *p, size_t pages)
{
    int bad = 0;
    size_t n = 0;
    uint64_t v[64], bm[1];
    if (backend == VIDMM_WRITEWATCH_UFFD) {
        if (vidmm_writewatch_get(ww, false, v, 64, &n) != VIDMM_E_NOT_AVAILABLE)
            bad |= FC_GET;
        if (vidmm_writewatch_get_bitmap(ww, true, bm, 1, &n) != VIDMM_E_NOT_AVAILABLE)
            bad |= FC_BITMAP;
        if (vidmm_writewatch_reset(ww) != VIDMM_E_NOT_AVAILABLE)
            bad |= FC_RESET;
        for (size_t i = 10; i < 20; i++)
            p[i * pg() + 5] = 3;
    } else {
        if (vidmm_writewatch_reset(ww) != 0)
            bad |= FC_RESET;
        for (size_t i = 10; i < 20; i++)
            p[i * pg() + 5] = 3;
        int rc = vidmm_writewatch_get(ww, true, v, 64, &n);
        bool exact = rc == 0 && n == 10;
        for (size_t k = 0; exact && k < n; k++)
            exact = v[k] == 10 + k;
        if (!exact)
            bad |= FC_OWN;
    }
    vidmm_writewatch_destroy(ww);
    p[0] = 9; /* writable after destroy: a fault here ends the child */
    p[(pages - 1) * pg()] = 9;
    return bad;
}

static void t_fork_child_handle(int backend)
{
    enum { PAGES = 32 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    for (size_t i = 0; i < PAGES; i++)
        m.p[i * pg()] = 1;
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    m.p[1 * pg()] = 2;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        alarm(30);
        _exit(t_fork_child(backend, ww, m.p, PAGES));
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    m.p[2 * pg()] = 2;
    m.p[25 * pg()] = 2;
    uint8_t model[PAGES] = { 0 };
    model[1] = model[2] = model[25] = 1;
    t_expect(ww, true, model, PAGES, "parent, after its child used and destroyed its copy of the handle");
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "child status %#x (exit bits: 1 get, 2 get_bitmap, 4 reset, 8 its own writes)", st);
    cr_assert_eq(m.p[10 * pg() + 5], 0, "the child's write reached the parent");
    memset(model, 0, sizeof model);
    m.p[3 * pg()] = 2;
    model[3] = 1;
    t_expect(ww, true, model, PAGES, "parent, later");
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* A fork while another thread is inside the library or faulting on a region (its lock, the
 * handler's count of threads in flight, a soft-dirty clear) must leave the child able to use and
 * destroy the handles it inherited: another thread of the parent writes the region and gets with
 * reset without pause while the main thread forks; each child writes, gets, destroys and exits
 * within an alarm. */
struct fb_ctx {
    vidmm_writewatch *ww;
    uint8_t *p;
    size_t pages;
    atomic_int stop;
};

static void *fb_busy(void *arg)
{
    struct fb_ctx *c = arg;
    uint64_t *v = malloc(c->pages * sizeof *v);
    for (unsigned round = 0; !atomic_load(&c->stop); round++) {
        size_t n;
        (void)vidmm_writewatch_get(c->ww, true, v, c->pages, &n);
        for (size_t i = 0; i < c->pages && !atomic_load(&c->stop); i++)
            ((volatile uint8_t *)c->p)[i * pg()] = (uint8_t)round;
    }
    free(v);
    return NULL;
}

static int t_fork_busy_child(int backend, struct fb_ctx *c)
{
    static uint64_t v[4096];
    size_t n = 0;
    for (size_t i = 0; i < c->pages; i += 17)
        c->p[i * pg() + 3] = 5;
    int rc = vidmm_writewatch_get(c->ww, true, v, c->pages, &n);
    int bad = 0;
    if (backend == VIDMM_WRITEWATCH_UFFD) {
        bad = rc == VIDMM_E_NOT_AVAILABLE ? 0 : 1;
    } else if (rc != 0) {
        bad = 2;
    } else {
        /* Every page the child wrote is reported (pages the parent's thread wrote may be too). */
        size_t k = 0;
        for (size_t i = 0; i < c->pages && !bad; i += 17) {
            while (k < n && v[k] < i)
                k++;
            if (k == n || v[k] != i)
                bad = 4;
        }
    }
    vidmm_writewatch_destroy(c->ww);
    c->p[0] = 1;
    return bad;
}

static void t_fork_busy(int backend)
{
    enum { PAGES = 1024, FORKS = 60 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    static struct fb_ctx c;
    c.ww = t_ww(backend, m.p, m.len);
    c.p = m.p;
    c.pages = PAGES;
    atomic_store(&c.stop, 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fb_busy, &c), 0);
    int failed = 0, hung = 0, first_st = 0, forks = 0;
    for (int f = 0; f < FORKS; f++) {
        usleep(1000 + (unsigned)(f % 7) * 300);
        forks++;
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            alarm(10);
            _exit(t_fork_busy_child(backend, &c));
        }
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            if (failed++ == 0)
                first_st = st;
            if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
                hung++;
            if (hung > 0)
                break; /* one is enough, and each costs its alarm */
        }
    }
    atomic_store(&c.stop, 1);
    pthread_join(th, NULL);
    cr_assert_eq(failed, 0, "%d of %d children failed, %d of them hung (killed by their alarm); first status %#x",
                 failed, forks, hung, first_st);
    vidmm_writewatch_destroy(c.ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * The caller's own signal handlers write the regions: a SIGUSR1 handler writes a page of the
 * region at each delivery, and another thread sends SIGUSR1 to the main thread without pause
 * while the main thread gets with reset and writes every page (mprotect: each write faults into
 * the library's SIGSEGV handler; softdirty: each reset freezes the regions). A signal delivered
 * while the thread is inside the library's handler or inside a soft-dirty clear must neither kill
 * the process (a fault with SIGSEGV blocked) nor hang it (a clear waiting for itself).
 * ------------------------------------------------------------------------------------------- */
static uint8_t *sw_p;
static size_t sw_pages, sw_pg;
static atomic_ulong sw_delivered;
static atomic_int sw_stop;
static pthread_t sw_target;

static void sw_handler(int sig)
{
    (void)sig;
    unsigned long k = atomic_fetch_add(&sw_delivered, 1);
    ((volatile uint8_t *)sw_p)[(k * 7 % sw_pages) * sw_pg + 1] = (uint8_t)k;
}

static void *sw_sender(void *arg)
{
    (void)arg;
    while (!atomic_load(&sw_stop)) {
        pthread_kill(sw_target, SIGUSR1);
        for (volatile int i = 0; i < 200; i++) {
        }
    }
    return NULL;
}

static void t_signal_writes(int backend)
{
    enum { PAGES = 1024 };
    struct t_map m;
    t_map_init(&m, PAGES, false);
    vidmm_writewatch *ww = t_ww(backend, m.p, m.len);
    sw_p = m.p;
    sw_pages = PAGES;
    sw_pg = pg();
    atomic_store(&sw_delivered, 0);
    atomic_store(&sw_stop, 0);
    sw_target = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sw_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, sw_sender, NULL), 0);
    uint64_t *v = malloc(PAGES * sizeof *v);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long rounds = 0;
    for (;; rounds++) {
        size_t n;
        int rc = vidmm_writewatch_get(ww, true, v, PAGES, &n);
        cr_assert_eq(rc, 0, "get with reset: %s", vidmm_strerror(rc));
        for (size_t i = 0; i < PAGES; i++)
            ((volatile uint8_t *)m.p)[i * pg()] = (uint8_t)rounds;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) > 1500000000L)
            break;
    }
    atomic_store(&sw_stop, 1);
    pthread_join(th, NULL);
    cr_log_info("%s: %ld rounds, %lu SIGUSR1 handled", vidmm_writewatch_backend_name(backend), rounds,
                atomic_load(&sw_delivered));
    /* Still exact once the signals stop. */
    size_t n;
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, PAGES, &n), 0);
    uint8_t model[PAGES] = { 0 };
    const size_t w[] = { 3, 100, PAGES - 1 };
    for (size_t i = 0; i < 3; i++) {
        m.p[w[i] * pg() + 9] = 1;
        model[w[i]] = 1;
    }
    t_expect(ww, true, model, PAGES, "after the signals");
    cr_assert_gt(atomic_load(&sw_delivered), 0);
    sa.sa_handler = SIG_IGN;
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    free(v);
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * mprotect: threads fault on a region while it is destroyed. A thread whose write fault was
 * raised before destroy made the pages writable, and that reaches the library's handler after,
 * must be let retry its write - however many threads do so at once - and no such fault may put
 * back the default SIGSEGV action: other regions still need the handler. Thousands of one-page
 * regions registered first make each fault's lookup long, so that several writers are between
 * their fault and their lookup when destroy runs.
 * ------------------------------------------------------------------------------------------- */
enum { DF_PAGES = 1024, DF_WRITERS = 3, DF_FILLERS = 3000 };
struct df_ctx {
    uint8_t *p;
    atomic_int stop;
};
struct df_arg {
    struct df_ctx *c;
    size_t id;
};

static void *df_writer(void *arg)
{
    struct df_arg *a = arg;
    for (size_t i = a->id; !atomic_load(&a->c->stop); i = (i + DF_WRITERS) % DF_PAGES)
        ((volatile uint8_t *)a->c->p)[i * pg() + 1] = 1;
    return NULL;
}

Test(ww_mprotect, destroy_while_threads_fault, .timeout = T_TIMEOUT)
{
    size_t stride = 2 * pg();
    uint8_t *fill = mmap(NULL, DF_FILLERS * stride + pg(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(fill, MAP_FAILED);
    vidmm_writewatch **fw = calloc(DF_FILLERS, sizeof *fw);
    for (size_t i = 0; i < DF_FILLERS; i++) {
        uint8_t *p = fill + pg() + i * stride;
        cr_assert_eq(mprotect(p, pg(), PROT_READ | PROT_WRITE), 0);
        fw[i] = t_ww(VIDMM_WRITEWATCH_MPROTECT, p, pg());
    }
    struct t_map keep;
    t_map_init(&keep, 4, false);
    vidmm_writewatch *kw = t_ww(VIDMM_WRITEWATCH_MPROTECT, keep.p, keep.len);
    struct sigaction ours;
    cr_assert_eq(sigaction(SIGSEGV, NULL, &ours), 0);
    static struct df_ctx c;
    for (int iter = 0; iter < 150; iter++) {
        struct t_map m;
        t_map_init(&m, DF_PAGES, false);
        vidmm_writewatch *ww = t_ww(VIDMM_WRITEWATCH_MPROTECT, m.p, m.len);
        c.p = m.p;
        atomic_store(&c.stop, 0);
        pthread_t th[DF_WRITERS];
        struct df_arg args[DF_WRITERS];
        for (size_t i = 0; i < DF_WRITERS; i++) {
            args[i] = (struct df_arg){ &c, i };
            cr_assert_eq(pthread_create(&th[i], NULL, df_writer, &args[i]), 0);
        }
        usleep(200 + (unsigned)(iter % 5) * 100);
        vidmm_writewatch_destroy(ww);
        atomic_store(&c.stop, 1);
        for (size_t i = 0; i < DF_WRITERS; i++)
            pthread_join(th[i], NULL);
        struct sigaction now;
        cr_assert_eq(sigaction(SIGSEGV, NULL, &now), 0);
        cr_assert((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == ours.sa_sigaction,
                  "iteration %d: destroying a region while %d threads faulted on it replaced the library's SIGSEGV "
                  "handler (now %s)", iter, DF_WRITERS,
                  !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL ? "SIG_DFL" : "another");
        t_map_fini(&m);
    }
    keep.p[2 * pg()] = 1;
    uint8_t model[4] = { 0, 0, 1, 0 };
    t_expect(kw, true, model, 4, "the region that stayed");
    vidmm_writewatch_destroy(kw);
    t_map_fini(&keep);
    for (size_t i = 0; i < DF_FILLERS; i++)
        vidmm_writewatch_destroy(fw[i]);
    free(fw);
    munmap(fill, DF_FILLERS * stride + pg());
}

#define T_DEFINE(tag, b)                                                                        \
    Test(ww_##tag, random_exact, .timeout = T_TIMEOUT) { t_random_exact(b); }                   \
    Test(ww_##tag, capacity, .timeout = T_TIMEOUT) { t_capacity(b); }                           \
    Test(ww_##tag, threads, .timeout = T_TIMEOUT) { t_threads(b); }                             \
    Test(ww_##tag, kernel_write, .timeout = T_TIMEOUT) { t_kernel_write(b); }                   \
    Test(ww_##tag, refused, .timeout = T_TIMEOUT) { t_refused(b); }                             \
    Test(ww_##tag, fork, .timeout = T_TIMEOUT) { t_fork(b); }                                   \
    Test(ww_##tag, many_regions, .timeout = T_TIMEOUT) { t_many(b); }                           \
    Test(ww_##tag, huge_1g, .timeout = T_TIMEOUT) { t_huge(b); }                               \
    Test(ww_##tag, fork_child_uses_handle, .timeout = T_TIMEOUT) { t_fork_child_handle(b); }    \
    Test(ww_##tag, fork_while_busy, .timeout = T_TIMEOUT) { t_fork_busy(b); }                   \
    Test(ww_##tag, signal_handler_writes, .timeout = T_TIMEOUT) { t_signal_writes(b); }
BACKENDS(T_DEFINE)

/* ---------------------------------------------------------------------------------------------
 * Backend choice: the environment, the automatic order, names
 * ------------------------------------------------------------------------------------------- */
static int t_auto_backend(void)
{
    struct t_map m;
    t_map_init(&m, 4, false);
    struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
    d.base = m.p;
    d.size = m.len;
    vidmm_writewatch *ww;
    cr_assert_eq(vidmm_writewatch_create(&d, &ww), 0);
    int b = vidmm_writewatch_backend(ww);
    m.p[pg()] = 1;
    uint8_t model[4] = { 0, 1, 0, 0 };
    t_expect(ww, true, model, 4, "auto");
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
    return b;
}

Test(ww_choice, env_forces_backend, .timeout = T_TIMEOUT)
{
    setenv("VIDMM_WRITEWATCH", "mprotect", 1);
    cr_assert_eq(t_auto_backend(), VIDMM_WRITEWATCH_MPROTECT);
}

Test(ww_choice, env_softdirty, .timeout = T_TIMEOUT)
{
    setenv("VIDMM_WRITEWATCH", "SoftDirty", 1);
    int b = t_auto_backend();
    cr_assert(b == VIDMM_WRITEWATCH_SOFTDIRTY || b == VIDMM_WRITEWATCH_UFFD || b == VIDMM_WRITEWATCH_MPROTECT);
    if (b != VIDMM_WRITEWATCH_SOFTDIRTY)
        cr_skip_test("soft-dirty unavailable here; auto fell back to %s", vidmm_writewatch_backend_name(b));
}

Test(ww_choice, env_bad_value_warns, .timeout = T_TIMEOUT)
{
    setenv("VIDMM_WRITEWATCH", "bogus", 1);
    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_WARN);
    int b = t_auto_backend();
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_ERROR);
    cr_assert_geq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "no warning for VIDMM_WRITEWATCH=bogus");
    cr_assert(strstr(log.first_warn, "VIDMM_WRITEWATCH") != NULL, "warning: %s", log.first_warn);
    cr_assert(b >= VIDMM_WRITEWATCH_UFFD && b <= VIDMM_WRITEWATCH_MPROTECT);
}

/* VIDMM_WRITEWATCH_QUIET: a backend the kernel refuses gives the same code, and no warning. */
Test(ww_choice, quiet_refusal_logs_no_warning, .timeout = T_TIMEOUT)
{
    struct t_map m;
    t_map_init(&m, 4, false);
    int refused = -1;
    for (int b = VIDMM_WRITEWATCH_UFFD; b <= VIDMM_WRITEWATCH_MPROTECT && refused < 0; b++) {
        struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
        d.base = m.p;
        d.size = 4 * pg();
        d.backend = (uint32_t)b;
        struct t_log loud, quiet;
        t_log_reset(&loud);
        t_log_reset(&quiet);
        vidmm_writewatch *ww = NULL;
        vidmm_set_log_fn(t_log_record, &loud, VIDMM_LOG_WARN);
        int rc = vidmm_writewatch_create(&d, &ww);
        vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_ERROR);
        vidmm_writewatch_destroy(ww);
        if (rc != VIDMM_E_UNSUPPORTED)
            continue;
        refused = b;
        cr_assert_geq(atomic_load(&loud.count[VIDMM_LOG_WARN]), 1, "%s refused without a warning",
                      vidmm_writewatch_backend_name(b));
        d.flags = VIDMM_WRITEWATCH_QUIET;
        ww = NULL;
        vidmm_set_log_fn(t_log_record, &quiet, VIDMM_LOG_WARN);
        rc = vidmm_writewatch_create(&d, &ww);
        vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_ERROR);
        cr_assert_eq(rc, VIDMM_E_UNSUPPORTED, "QUIET changed the answer for %s", vidmm_writewatch_backend_name(b));
        cr_assert_null(ww);
        cr_assert_eq(atomic_load(&quiet.count[VIDMM_LOG_WARN]), 0, "QUIET still warned: %s", quiet.first_warn);
    }
    t_map_fini(&m);
    if (refused < 0)
        cr_skip_test("every backend is available here: no refusal to keep quiet");
}

Test(ww_choice, auto_order, .timeout = T_TIMEOUT)
{
    unsetenv("VIDMM_WRITEWATCH");
    int b = t_auto_backend();
    cr_log_info("auto picks %s here", vidmm_writewatch_backend_name(b));
    cr_assert(b >= VIDMM_WRITEWATCH_UFFD && b <= VIDMM_WRITEWATCH_MPROTECT);
}

Test(ww_choice, names)
{
    cr_assert_str_eq(vidmm_writewatch_backend_name(VIDMM_WRITEWATCH_AUTO), "auto");
    cr_assert_str_eq(vidmm_writewatch_backend_name(VIDMM_WRITEWATCH_UFFD), "uffd");
    cr_assert_str_eq(vidmm_writewatch_backend_name(VIDMM_WRITEWATCH_SOFTDIRTY), "softdirty");
    cr_assert_str_eq(vidmm_writewatch_backend_name(VIDMM_WRITEWATCH_MPROTECT), "mprotect");
    cr_assert_null(vidmm_writewatch_backend_name(4));
    cr_assert_null(vidmm_writewatch_backend_name(-1));
    cr_assert_eq(vidmm_writewatch_pages(NULL), 0);
}

/* ---------------------------------------------------------------------------------------------
 * Signal chaining: a fault outside every watched region reaches the handler installed before
 * ------------------------------------------------------------------------------------------- */
static uint8_t *chain_page;
static atomic_int chain_calls;

static void chain_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if ((uint8_t *)si->si_addr >= chain_page && (uint8_t *)si->si_addr < chain_page + pg()) {
        atomic_fetch_add(&chain_calls, 1);
        mprotect(chain_page, pg(), PROT_READ | PROT_WRITE);
        return;
    }
    _exit(99);
}

Test(ww_choice, segv_chains_to_previous_handler, .timeout = T_TIMEOUT)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = chain_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
    chain_page = mmap(NULL, pg(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(chain_page, MAP_FAILED);
    struct t_map m;
    t_map_init(&m, 8, false);
    vidmm_writewatch *ww = t_ww(VIDMM_WRITEWATCH_MPROTECT, m.p, m.len);
    ((volatile uint8_t *)chain_page)[10] = 1;     /* not ours: the previous handler fixes it */
    cr_assert_eq(atomic_load(&chain_calls), 1);
    m.p[3 * pg()] = 1;                            /* ours: the previous handler never sees it */
    cr_assert_eq(atomic_load(&chain_calls), 1);
    uint8_t model[8] = { 0, 0, 0, 1, 0, 0, 0, 0 };
    t_expect(ww, true, model, 8, "chaining");
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
    munmap(chain_page, pg());
}

/* The handler before ours runs with the mask the kernel would have given it (review of issue 25's
 * change, which made ours block every signal): the interrupted thread's mask, plus its own
 * sa_mask, plus SIGSEGV - not every signal, which a handler leaving by longjmp() or waiting for
 * another signal would keep. */
static atomic_int chain_mask_usr1, chain_mask_usr2, chain_mask_segv;

static void chain_mask_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    atomic_store(&chain_mask_usr1, sigismember(&cur, SIGUSR1));
    atomic_store(&chain_mask_usr2, sigismember(&cur, SIGUSR2));
    atomic_store(&chain_mask_segv, sigismember(&cur, SIGSEGV));
    if ((uint8_t *)si->si_addr >= chain_page && (uint8_t *)si->si_addr < chain_page + pg()) {
        mprotect(chain_page, pg(), PROT_READ | PROT_WRITE);
        return;
    }
    _exit(99);
}

Test(ww_choice, segv_previous_handler_gets_its_own_mask, .timeout = T_TIMEOUT)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = chain_mask_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
    chain_page = mmap(NULL, pg(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(chain_page, MAP_FAILED);
    struct t_map m;
    t_map_init(&m, 4, false);
    vidmm_writewatch *ww = t_ww(VIDMM_WRITEWATCH_MPROTECT, m.p, m.len);
    atomic_store(&chain_mask_usr1, -1);
    ((volatile uint8_t *)chain_page)[10] = 1; /* not ours: passed on */
    cr_assert_eq(atomic_load(&chain_mask_usr1), 0, "SIGUSR1 blocked in the previous handler (it did not block it)");
    cr_assert_eq(atomic_load(&chain_mask_usr2), 1, "its own sa_mask (SIGUSR2) not applied");
    cr_assert_eq(atomic_load(&chain_mask_segv), 1, "SIGSEGV not blocked in it (no SA_NODEFER)");
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
    munmap(chain_page, pg());
}

/* A stray fault (outside every region) is not swallowed: with SIG_DFL before us it still ends the
 * process with SIGSEGV; with another handler before us (AddressSanitizer's, in a sanitizer build)
 * that handler gets it and, here, ends the process its own way. */
Test(ww_choice, segv_stray_fault_not_swallowed, .timeout = T_TIMEOUT)
{
    struct sigaction before;
    cr_assert_eq(sigaction(SIGSEGV, NULL, &before), 0);
    bool was_default = !(before.sa_flags & SA_SIGINFO) && before.sa_handler == SIG_DFL;
    struct t_map m;
    t_map_init(&m, 4, false);
    vidmm_writewatch *ww = t_ww(VIDMM_WRITEWATCH_MPROTECT, m.p, m.len);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        ((volatile uint8_t *)m.map)[0] = 1; /* the guard page before the region */
        _exit(0);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    if (was_default)
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "child status %#x: not killed by SIGSEGV", st);
    else
        cr_assert(!(WIFEXITED(st) && WEXITSTATUS(st) == 0), "child status %#x: the stray fault was swallowed", st);
    vidmm_writewatch_destroy(ww);
    t_map_fini(&m);
}

/* ---------------------------------------------------------------------------------------------
 * hugetlb memory (MAP_HUGETLB, 2 MiB pages): the unit the kernel tracks is the huge page, so a
 * write to any byte of one reports its 512 base pages. A get with reset must work with any
 * output array - the kernel cannot write-protect part of a huge page, so an array with room for
 * fewer than 512 more pages must not make the call fail, nor make it lose the pages it already
 * protected again - and it must return each written page exactly once.
 *
 * The pool: when this suite is selected (ctest's test_writewatch.hugetlb) and runs as root, the
 * runner raises the 2 MiB nr_hugepages before the first test and puts it back after the last
 * (t_hugepool.h); without pages the tests skip and say why.
 * ------------------------------------------------------------------------------------------- */
#define HUGE_2M ((size_t)2 << 20)
#define HT_HUGE 4 /* huge pages per test region */

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    const char *pat = criterion_options.pattern;
    if (pat == NULL || strstr(pat, "hugetlb") != NULL)
        t_pool_raise("test_writewatch", 3 * HT_HUGE); /* the suite's tests run in parallel */
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    (void)stats;
    t_pool_restore("test_writewatch");
}

/* t_hugetlb_map() maps HT_HUGE huge pages (reserved by the mmap itself, so a pool too small
 * fails here, not at a fault) or skips. */
static uint8_t *t_hugetlb_map(void)
{
    void *p = mmap(NULL, HT_HUGE * HUGE_2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    if (p == MAP_FAILED)
        cr_skip_test("huge pages unavailable: mmap(MAP_HUGETLB, %d MiB): %s; %ld free 2 MiB huge pages (run as root: "
                     "the suite then raises " T_POOL_DIR "nr_hugepages and restores it)", HT_HUGE * 2,
                     strerror(errno), t_pool_avail(HUGE_2M));
    return p;
}

/* t_hp_write() writes one byte of huge page 'hp' and marks its base pages in 'model'. */
static void t_hp_write(uint8_t *p, size_t hp, uint8_t *model, struct t_rng *r)
{
    size_t per = HUGE_2M / pg();
    p[hp * HUGE_2M + t_rng_below(r, HUGE_2M)] = 1;
    memset(model + hp * per, 1, per);
}

/* t_drain() gets with reset, 'cap' pages a call, until a call returns 0: every page of 'model'
 * must come exactly once, ascending (nothing is written meanwhile), and nothing else; then
 * nothing reads written. 'model' is cleared. Returns the number of calls. */
static int t_drain(vidmm_writewatch *ww, size_t cap, uint8_t *model, const char *what)
{
    size_t pages = vidmm_writewatch_pages(ww);
    uint8_t *seen = calloc(pages, 1);
    uint64_t *v = malloc(cap * sizeof *v);
    cr_assert(seen != NULL && v != NULL);
    int calls = 0;
    uint64_t last = 0;
    bool any = false;
    for (;;) {
        size_t n = 0;
        int rc = vidmm_writewatch_get(ww, true, v, cap, &n);
        cr_assert(rc == 0 || rc == 1, "%s: get with reset into %zu pages, call %d: %d (%s)", what, cap, calls + 1, rc,
                  rc < 0 ? vidmm_strerror(rc) : "?");
        cr_assert_leq(n, cap);
        if (rc == 1)
            cr_assert_eq(n, cap, "%s: call %d returned 1 with %zu of %zu slots used", what, calls + 1, n, cap);
        for (size_t i = 0; i < n; i++) {
            cr_assert_lt(v[i], pages, "%s: page %llu out of the region", what, (unsigned long long)v[i]);
            cr_assert(!any || v[i] > last, "%s: call %d: page %llu after %llu (repeated or not ascending)", what,
                      calls + 1, (unsigned long long)v[i], (unsigned long long)last);
            cr_assert(model[v[i]], "%s: page %llu reported, never written", what, (unsigned long long)v[i]);
            seen[v[i]] = 1;
            last = v[i];
            any = true;
        }
        calls++;
        if (rc == 0)
            break;
        cr_assert_lt(calls, 100000, "%s: no end", what);
    }
    for (size_t i = 0; i < pages; i++)
        cr_assert(!model[i] || seen[i], "%s: page %zu written, never reported", what, i);
    size_t n = 99;
    cr_assert_eq(vidmm_writewatch_get(ww, false, NULL, 0, &n), 0, "%s: pages still read written after the drain", what);
    memset(model, 0, pages);
    free(seen);
    free(v);
    return calls;
}

static void t_hugetlb_arrays(int backend)
{
    uint8_t *p = t_hugetlb_map();
    vidmm_writewatch *ww = t_ww(backend, p, HT_HUGE * HUGE_2M);
    size_t pages = vidmm_writewatch_pages(ww), per = HUGE_2M / pg();
    uint8_t *model = calloc(pages, 1);
    struct t_rng r;
    t_rng_init(&r, 0x5000 + (uint64_t)backend);
    size_t n;
    cr_assert_eq(vidmm_writewatch_get(ww, false, NULL, 0, &n), 0, "fresh region reads written");

    /* Arrays smaller than a huge page, one that fits one and a part, exactly one, one page. */
    t_hp_write(p, 0, model, &r);
    t_hp_write(p, 2, model, &r);
    cr_assert_eq(t_drain(ww, 100, model, "2 huge pages into 100"), 11);
    t_hp_write(p, 0, model, &r);
    t_hp_write(p, 1, model, &r);
    cr_assert_eq(t_drain(ww, 600, model, "2 huge pages into 600"), 2);
    t_hp_write(p, 1, model, &r);
    t_hp_write(p, 2, model, &r);
    t_hp_write(p, 3, model, &r);
    cr_assert_eq(t_drain(ww, per, model, "3 huge pages into 512"), 3);
    t_hp_write(p, 3, model, &r);
    cr_assert_eq(t_drain(ww, 1, model, "1 huge page into 1"), (int)per);

    /* The bitmap: one call, every page of the huge page. */
    t_hp_write(p, 1, model, &r);
    uint64_t *bm = calloc((pages + 63) / 64, sizeof *bm);
    cr_assert_eq(vidmm_writewatch_get_bitmap(ww, true, bm, (pages + 63) / 64, &n), 0);
    cr_assert_eq(n, per);
    for (size_t i = 0; i < pages; i++)
        cr_assert_eq((bm[i / 64] >> (i % 64)) & 1, model[i], "bitmap page %zu", i);
    memset(model, 0, pages);
    cr_assert_eq(vidmm_writewatch_get(ww, false, NULL, 0, &n), 0);

    /* Without reset a small array shows the first pages, and shows them again. */
    t_hp_write(p, 2, model, &r);
    uint64_t v[100];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(vidmm_writewatch_get(ww, false, v, 100, &n), 1);
        cr_assert_eq(n, 100);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(v[i], 2 * per + i);
    }
    t_drain(ww, 100, model, "after gets without reset");

    /* Part of a huge page taken by a small array: the rest still reads written, to a get without
     * reset, to a bitmap and after new writes; a reset forgets it. */
    t_hp_write(p, 0, model, &r);
    t_hp_write(p, 2, model, &r);
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, 100, &n), 1);
    cr_assert(n == 100 && v[0] == 0 && v[99] == 99);
    memset(model, 0, 100);
    uint64_t *all = malloc(pages * sizeof *all);
    cr_assert_eq(vidmm_writewatch_get(ww, false, all, pages, &n), 0);
    cr_assert_eq(n, 2 * per - 100);
    t_hp_write(p, 1, model, &r);
    cr_assert_eq(vidmm_writewatch_get_bitmap(ww, false, bm, (pages + 63) / 64, &n), 0);
    cr_assert_eq(n, 3 * per - 100);
    for (size_t i = 0; i < pages; i++)
        cr_assert_eq((bm[i / 64] >> (i % 64)) & 1, model[i], "bitmap without reset, page %zu", i);
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, 100, &n), 1);
    cr_assert(n == 100 && v[0] == 100 && v[99] == 199, "first page %llu", (unsigned long long)v[0]);
    memset(model + 100, 0, 100);
    t_drain(ww, 300, model, "the rest, with a huge page written meanwhile");
    t_hp_write(p, 3, model, &r);
    cr_assert_eq(vidmm_writewatch_get(ww, true, v, 100, &n), 1);
    cr_assert_eq(vidmm_writewatch_reset(ww), 0);
    cr_assert_eq(vidmm_writewatch_get(ww, false, NULL, 0, &n), 0, "written after a reset");
    memset(model, 0, pages);

    /* A write after all that is seen. */
    t_hp_write(p, 1, model, &r);
    t_drain(ww, 64, model, "a last write");
    free(all);
    free(bm);
    free(model);
    vidmm_writewatch_destroy(ww);
    p[5] = 1;
    munmap(p, HT_HUGE * HUGE_2M);
}

/* The soft-dirty backend is not held to this: the kernel may keep a hugetlb page soft-dirty
 * across clears (writewatch.h: reports are supersets there). */
Test(ww_hugetlb, uffd_any_array, .timeout = T_TIMEOUT) { t_hugetlb_arrays(VIDMM_WRITEWATCH_UFFD); }
Test(ww_hugetlb, mprotect_any_array, .timeout = T_TIMEOUT) { t_hugetlb_arrays(VIDMM_WRITEWATCH_MPROTECT); }
