/* SPDX-License-Identifier: MIT */
/* lib/engine/os/lazyview.c - lazily filled views (os.h): anonymous memory registered with a
 * userfaultfd for missing pages and for asynchronous write-protect. While a view is armed, the
 * first access to a page that is not there stops the accessing thread until the view's handler
 * thread has filled it - through the caller's fill function, into a bounce buffer, installed
 * write-protected with UFFDIO_COPY; a write to an installed page is resolved by the kernel
 * itself (UFFD_FEATURE_WP_ASYNC, Linux 6.7) and only clears the page's uffd-wp bit, which
 * vmos_lazy_written() reads back with PAGEMAP_SCAN. Disarming drops every page, so the next
 * arming starts empty. Kernel accesses to the view (read(2) into it, write(2) from it) are
 * served by the handler thread like any other: the view needs the full userfaultfd, not
 * UFFD_USER_MODE_ONLY, and is refused without it. The view is MADV_DONTFORK: a child never
 * sees it (its range would fault for ever in the child, which has no handler).
 *
 * Faults come in address order when the CPU walks a surface: after a fault on the page right
 * after the previous chunk, the chunk doubles (up to LAZY_CHUNK_MAX), so a sequential read
 * costs one fault per chunk rather than one per page; a fault elsewhere starts again at one
 * page. Once the chunk has reached LAZY_CHUNK_MAX the walk is taken for a stream and the
 * handler reads ahead: while no fault waits, it fills the chunks after the last one, up to
 * LAZY_AHEAD bytes past the last fault, so the reader consumes one chunk while the next is
 * untiled (on another CPU) rather than stopping at each. A fault on a page the read-ahead is
 * filling is woken by that fill (UFFDIO_COPY wakes every fault in its range). Chunks stop at
 * the first page already present (UFFDIO_COPY fails with EEXIST on it: the pages before it are
 * installed, the rest are left to their own faults). Read-ahead stops at vmos_lazy_quiesce()
 * and vmos_lazy_disarm(): after them nothing reads the surface.
 *
 * Where the kernel moves pages (UFFDIO_MOVE, Linux 6.8) the view recycles its pages instead of
 * having the kernel allocate one for every page filled and free it at disarming: a stock, a
 * private mapping as long as the view (registered for write-protect only, so that pages can be
 * moved into it, and never protected), holds page i of the view while the view has none. A
 * chunk of LAZY_MOVE_MIN or more is untiled straight into the stock and its page-table entries
 * are moved into the view; disarming moves them back (smaller chunks are copied, and dropped at
 * disarming). 64 MiB on the 2-vCPU Intel VM (a /tmp program, medians of 9): UFFDIO_COPY 20-29 ms
 * and its MADV_DONTNEED 3-4 ms, against the moves in and the protection 2.9 ms and the moves
 * back 1.1-1.6 ms - what the kernel spends allocating and freeing pages. The view
 * itself keeps no page between locks; the stock keeps as many as were filled (at most the
 * view's size, as the eager view keeps its buffer).
 *
 * A moved entry is writable and not write-protected, so for an arming that wants the pages
 * written the move leaves the faulting threads asleep, the chunk is write-protected, and only
 * then are they woken. Another thread may still write a page in between, unseen by the
 * protection: each page moved is compared with a copy of its fill taken before the move (in
 * the bounce buffer), and one that differs counts as written ('raced'). An arming for a
 * READ_ONLY lock skips the copy, the protection and the comparison: nobody asks what it wrote.
 * VIDMM_LAZY=copy keeps UFFDIO_COPY (tests run both).
 *
 * Writable streams go in counted (issue 31). A page installed write-protected costs, when the
 * CPU then writes it, an asynchronous write-protect fault (1.6 us a page on the Zen 4,
 * bench_track_costs' f.async) on top of the copy, protection and comparison of its chunk, while
 * tiling a page back costs about 0.4 us (the whole re-tile of 64 MiB: 6 ms there). So once a
 * writable arming streams (a sequential fault filled a whole LAZY_CHUNK_MAX chunk), the chunks
 * from then on are installed unprotected - moved without the copy and the comparison, or copied
 * without UFFDIO_COPY_MODE_WP - and every page of them counts as written ('raced'): the caller
 * tiles them back, as an untracked eager lock tiles back everything. A fresh 64 MiB surface
 * written whole through a lazy view: 40.9-43.4 ms protected against 25.7-27.2 ms counted (the two
 * alternately in one process, 10 locks each, Zen 4 2 vCPUs, load 3-4). What it costs: pages the
 * read-ahead filled past the last write (at most LAZY_AHEAD) are tiled back too, and a stream
 * that reads much and writes little tiles back what it read (about the protection's own cost).
 * Scattered faults are left alone: a sweep of the rest of the view once they passed a predicted
 * break-even (measured, not kept) cost 28 ms against 24 ms page by page for every tenth page of
 * 64 MiB written - the moves into the view and back, about 4 ms each, eat what the faults save. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "common/internal.h"
#include "engine/os/os.h"
#include "engine/os/uffd_compat.h"

/* The largest chunk a fault installs (bytes): 64 pages. The probe found whole rows of
 * blocks per fault after sequential faults reach 0.45x of eager untiling for a full touch. */
#define LAZY_CHUNK_MAX ((size_t)256 << 10)
/* How far the read-ahead of a stream runs past the last fault (bytes). A reader that catches
 * up with the read-ahead is woken by the fill it waits on, without a fault the handler sees, so
 * the read-ahead also stops there when the reader keeps pace and starts again at its next
 * fault; a reader that stops leaves at most this much untiled for nothing. */
#define LAZY_AHEAD ((size_t)4 << 20)
/* The smallest chunk installed through the stock (bytes): below it UFFDIO_COPY is cheaper. A
 * move costs three calls (move, protect, wake) and a TLB flush whatever its size, about 11 us
 * more than a copy for one page (lock + write one page + unlock in a warm loop of 3000: 28 us
 * copying, 39 us moving), against about 1.2 us a page the kernel allocates for a copy. */
#define LAZY_MOVE_MIN ((size_t)64 << 10)
/* Runs of installed pages closer than this (pages) are scanned and dropped as one: one page
 * table's worth of empty entries walks in about the time of one more call. Writing every
 * tenth page of 64 MiB is 1638 runs. */
#define LAZY_RUN_GAP 512
/* PAGEMAP_SCAN output regions per ioctl. */
#define LAZY_SCAN_VEC 256

/* The comparison after a move reads the view while other threads may write it: a race the
 * comparison is there to catch (a page that differs counts as written), which ThreadSanitizer
 * is not to report. */
#if defined(__SANITIZE_THREAD__)
#  define LAZY_NO_TSAN __attribute__((no_sanitize_thread))
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define LAZY_NO_TSAN __attribute__((no_sanitize("thread")))
#  endif
#endif
#ifndef LAZY_NO_TSAN
#  define LAZY_NO_TSAN
#endif

typedef uint64_t __attribute__((may_alias)) lazy_word;

struct vmos_lazy {
    uint8_t *base;
    size_t len, page;
    int uffd, stop_fd, pm_fd;
    pthread_t thread;
    pthread_mutex_t mu;               /* fill/ctx/armed, and a fill in progress */
    vmos_lazy_fill fill;
    void *ctx;
    bool armed;
    bool writes;                      /* the arming wants the pages written (vmos_lazy_arm()) */
    uint8_t *bounce;                  /* LAZY_CHUNK_MAX bytes, the handler's */
    uint8_t *stock;                   /* pages recycled through UFFDIO_MOVE; NULL: UFFDIO_COPY */
    uint64_t *raced;                  /* pages written between their move and protection, and
                                       * a counted stream's pages */
    uint64_t *stocked;                /* pages the stock has had (it gets them back at disarming) */
    uint64_t *moved;                  /* pages moved in since arming (moved back at disarming) */
    uint64_t *copied;                 /* pages copied in since arming (dropped at disarming) */
    size_t next;                      /* the page after the last chunk filled */
    size_t chunk;                     /* bytes the next sequential fault fills */
    size_t ahead_end;                 /* read-ahead fills up to here (0: none) */
    int hold;                         /* threads waiting for 'mu' (atomic): read-ahead pauses */
    bool quiet;                       /* quiesced: no read-ahead until the next arming */
    bool count_streams;               /* vmos_lazy_arm()'s: a writable stream may go in counted */
    bool counted;                     /* installs go in unprotected and count as written */
    uint64_t faults;                  /* statistics: faults served, bytes filled */
    uint64_t filled;
};

#ifndef MADV_POPULATE_WRITE
#  define MADV_POPULATE_WRITE 23 /* uapi asm-generic/mman-common.h, Linux 5.14 */
#endif

/* same_page() compares one page of the view with the bytes it was filled with. */
LAZY_NO_TSAN static bool same_page(const uint8_t *view, const uint8_t *want, size_t page)
{
    const lazy_word *a = (const lazy_word *)(const void *)view, *b = (const lazy_word *)(const void *)want;
    lazy_word diff = 0;
    for (size_t i = 0; i < page / sizeof *a; i++)
        diff |= a[i] ^ b[i];
    return diff == 0;
}

/* stock_prepare() makes sure the stock has the pages of [off, off + n): those it never had in
 * one call rather than a fault a page (best effort: the fill faults in what this leaves). The
 * others are there: every page moved out comes back at disarming, before the next fill of its
 * place (one that cannot is faulted in again). */
static void stock_prepare(struct vmos_lazy *v, size_t off, size_t n)
{
    const size_t p0 = off / v->page, p1 = (off + n) / v->page;
    bool all = true;
    for (size_t pg = p0; pg < p1 && all; pg++)
        all = (v->stocked[pg / 64] >> (pg % 64)) & 1u;
    if (all)
        return;
    (void)madvise(v->stock + off, n, MADV_POPULATE_WRITE);
    for (size_t pg = p0; pg < p1; pg++)
        v->stocked[pg / 64] |= (uint64_t)1 << (pg % 64);
}

/* move_in() installs [off, off + n), filled in the stock: moved into the view; when 'exact'
 * (the arming wants the pages written) write-protected, compared with the bounce buffer's copy,
 * then the threads waiting on it woken. Returns the bytes moved (a move stops at a page
 * present in the view), 0 when none was. */
static size_t move_in(struct vmos_lazy *v, size_t off, size_t n, bool exact)
{
    struct uffdio_move m;
    memset(&m, 0, sizeof m);
    m.dst = (uintptr_t)v->base + off;
    m.src = (uintptr_t)v->stock + off;
    m.len = n;
    m.mode = exact ? UFFDIO_MOVE_MODE_DONTWAKE : 0; /* not before the protection */
    size_t done = n;
    if (ioctl(v->uffd, UFFDIO_MOVE, &m) != 0)
        done = m.move > 0 ? (size_t)m.move : 0;
    if (done == 0 || !exact)
        return done; /* what a READ_ONLY lock writes is nobody's concern: no protection */
    struct uffdio_writeprotect wp;
    memset(&wp, 0, sizeof wp);
    wp.range.start = (uintptr_t)v->base + off;
    wp.range.len = done;
    wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
    const bool prot = ioctl(v->uffd, UFFDIO_WRITEPROTECT, &wp) == 0;
    /* A write before the protection left no trace but the bytes (without the protection every
     * page counts as written: the set is never short). Compared before the waiting threads
     * are woken: woken first, the faulting thread took the CPU from the comparison on a
     * loaded machine (read all of 64 MiB: 53 ms against 35 ms). */
    for (size_t q = 0; q < done; q += v->page)
        if (!prot || !same_page(v->base + off + q, v->bounce + q, v->page)) {
            const size_t pg = (off + q) / v->page;
            v->raced[pg / 64] |= (uint64_t)1 << (pg % 64);
        }
    struct uffdio_range r = { (uintptr_t)v->base + off, done };
    (void)ioctl(v->uffd, UFFDIO_WAKE, &r);
    return done;
}

static uint64_t word_of(const uint64_t *a, const uint64_t *b, size_t w)
{
    return a[w] | (b != NULL ? b[w] : 0);
}

/* find() returns the first page from 'p' whose bit in (a | b) is 'set', or 'pages'. */
static size_t find(const uint64_t *a, const uint64_t *b, size_t pages, size_t p, bool set)
{
    while (p < pages) {
        uint64_t w = word_of(a, b, p / 64);
        if (!set)
            w = ~w;
        w >>= p % 64;
        if (w != 0)
            return p + (size_t)__builtin_ctzll(w) < pages ? p + (size_t)__builtin_ctzll(w) : pages;
        p = (p / 64 + 1) * 64;
    }
    return pages;
}

/* next_run() finds the next run of pages from 'p' set in 'a' or 'b' (b may be NULL), runs
 * less than 'gap' pages apart counted as one: [*p0, *p1). False when there is none. */
static bool next_run(const uint64_t *a, const uint64_t *b, size_t pages, size_t p, size_t gap, size_t *p0,
                     size_t *p1)
{
    if ((p = find(a, b, pages, p, true)) >= pages)
        return false;
    *p0 = p;
    size_t end = find(a, b, pages, p, false);
    for (;;) {
        const size_t q = find(a, b, pages, end, true);
        if (q >= pages || q - end > gap)
            break;
        end = find(a, b, pages, q, false);
    }
    *p1 = end;
    return true;
}

/* move_back() moves the view's pages of [off, end) back into the stock. A page that cannot
 * move (the stock has one there: it was copied in, not moved; or it is pinned) is dropped. */
static void move_back(struct vmos_lazy *v, size_t off, size_t end)
{
    int again = 0;
    while (off < end) {
        struct uffdio_move m;
        memset(&m, 0, sizeof m);
        m.dst = (uintptr_t)v->stock + off;
        m.src = (uintptr_t)v->base + off;
        m.len = end - off;
        m.mode = UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES | UFFDIO_MOVE_MODE_DONTWAKE;
        if (ioctl(v->uffd, UFFDIO_MOVE, &m) == 0)
            return;
        const int e = errno;
        if (m.move > 0)
            off += (size_t)m.move;
        if (off >= end)
            return;
        if (e == EAGAIN && again++ < 8)
            continue;
        (void)madvise(v->base + off, v->page, MADV_DONTNEED);
        off += v->page;
        again = 0;
    }
}

/* drop_pages() empties the view: the runs of pages moved in since arming moved back into the
 * stock, the pages copied in dropped (a move over the whole view would stop at every hole of
 * the view whose page the stock has: 1.3-2.4 ms for a lock that touched one page). */
static void drop_pages(struct vmos_lazy *v)
{
    if (v->stock == NULL) {
        (void)madvise(v->base, v->len, MADV_DONTNEED);
        return;
    }
    const size_t pages = v->len / v->page, words = (pages + 63) / 64;
    size_t p0, p1;
    /* The moved pages back first, run by run; then the copies dropped, runs close together
     * in one call (nothing else is left in the view between them). */
    for (size_t p = 0; next_run(v->moved, NULL, pages, p, 0, &p0, &p1); p = p1)
        move_back(v, p0 * v->page, p1 * v->page);
    for (size_t p = 0; next_run(v->copied, NULL, pages, p, LAZY_RUN_GAP, &p0, &p1); p = p1)
        (void)madvise(v->base + p0 * v->page, (p1 - p0) * v->page, MADV_DONTNEED);
    memset(v->moved, 0, words * sizeof *v->moved);
    memset(v->copied, 0, words * sizeof *v->copied);
}

/* note() marks pages [off, off + n) in 'map'. */
static void note(struct vmos_lazy *v, uint64_t *map, size_t off, size_t n)
{
    for (size_t q = off / v->page; q < (off + n) / v->page; q++)
        map[q / 64] |= (uint64_t)1 << (q % 64);
}

/* install() fills and installs [off, off + n) (page multiples), write-protected; on EEXIST the
 * pages before the present one are in. Returns what was installed, 0 when nothing could be. */
static size_t install(struct vmos_lazy *v, size_t off, size_t n)
{
    /* Through the stock the fill goes straight into the pages to move, the bounce buffer
     * getting a copy to compare with (from the cache: 64 MiB read through a lazy view, the
     * handler's copies took 11 ms into the stock against about 3 out of it). */
    uint8_t *dst = v->bounce;
    const bool through_stock = v->stock != NULL && n >= LAZY_MOVE_MIN;
    if (through_stock) {
        stock_prepare(v, off, n);
        dst = v->stock + off;
    }
    if (v->armed)
        v->fill(v->ctx, off, n, dst);
    else
        memset(dst, 0, n); /* not locked: a stray access reads zeros rather than hang */
    /* A writable stream's chunks ("Writable streams go in counted"): no protection, every page
     * counted as written. */
    const bool counted = v->armed && v->writes && v->counted;
    if (through_stock) {
        const bool exact = v->armed && v->writes && !counted;
        if (exact)
            memcpy(v->bounce, dst, n); /* to compare with after the move */
        const size_t done = move_in(v, off, n, exact);
        if (done > 0) {
            note(v, v->moved, off, done);
            if (counted)
                note(v, v->raced, off, done);
            return done;
        }
        /* Nothing moved: a page present at 'off' (the copy fails the same way), or one of the
         * stock's that would not move - copied instead. */
        if (!exact)
            memcpy(v->bounce, dst, n);
    }
    struct uffdio_copy c;
    memset(&c, 0, sizeof c);
    c.dst = (uintptr_t)v->base + off;
    c.src = (uintptr_t)v->bounce;
    c.len = n;
    c.mode = counted ? 0 : UFFDIO_COPY_MODE_WP;
    size_t done = n;
    if (ioctl(v->uffd, UFFDIO_COPY, &c) != 0)
        done = c.copy > 0 ? (size_t)c.copy : 0; /* partly: stopped at a present page */
    if (v->stock != NULL)
        note(v, v->copied, off, done);
    if (counted)
        note(v, v->raced, off, done);
    return done;
}

static void serve(struct vmos_lazy *v, uintptr_t addr)
{
    const size_t off = (addr - (uintptr_t)v->base) / v->page * v->page;
    pthread_mutex_lock(&v->mu);
    const bool seq = off == v->next;
    size_t n = seq ? (v->chunk < LAZY_CHUNK_MAX ? v->chunk * 2 : LAZY_CHUNK_MAX) : v->page;
    if (n > v->len - off)
        n = v->len - off;
    size_t done = install(v, off, n);
    if (done == 0 && n > v->page)
        done = install(v, off, v->page); /* the chunk ran into present pages: this one alone */
    if (done == 0) {
        /* Present already (another thread's fault, or the read-ahead, won): wake whoever waits
         * on it. The stream, if any, goes on where it was. */
        struct uffdio_range r = { (uintptr_t)v->base + off, v->page };
        (void)ioctl(v->uffd, UFFDIO_WAKE, &r);
    } else {
        v->next = off + done;
        v->chunk = done;
        if (seq && done == LAZY_CHUNK_MAX && v->armed && v->writes && v->count_streams && v->raced != NULL)
            v->counted = true; /* a writable stream: its next chunks go in counted */
        /* A stream: read ahead from here. Anything else ends the read-ahead. */
        size_t end = v->armed && !v->quiet && seq && done == LAZY_CHUNK_MAX ? off + LAZY_AHEAD : 0;
        __atomic_store_n(&v->ahead_end, end < v->len ? end : v->len, __ATOMIC_RELAXED);
    }
    v->faults++;
    v->filled += done;
    pthread_mutex_unlock(&v->mu);
}

static bool ahead_pending(struct vmos_lazy *v)
{
    return __atomic_load_n(&v->ahead_end, __ATOMIC_RELAXED) != 0;
}

/* read_ahead() fills the next chunk of the stream, when there is one to fill and nobody waits
 * for the mutex (a thread quiescing or disarming the view comes first: the handler would
 * otherwise take the mutex back at once, chunk after chunk). */
static void read_ahead(struct vmos_lazy *v)
{
    if (__atomic_load_n(&v->hold, __ATOMIC_ACQUIRE) != 0) {
        sched_yield();
        return;
    }
    pthread_mutex_lock(&v->mu);
    if (v->ahead_end != 0 && v->next < v->ahead_end) {
        size_t n = v->ahead_end - v->next < v->chunk ? v->ahead_end - v->next : v->chunk;
        size_t done = install(v, v->next, n);
        v->filled += done;
        v->next += done;
        if (done == 0 || v->next >= v->ahead_end)
            __atomic_store_n(&v->ahead_end, 0, __ATOMIC_RELAXED); /* a present page or the end: done */
    } else {
        __atomic_store_n(&v->ahead_end, 0, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&v->mu);
}

/* hold_lock() takes the mutex ahead of the read-ahead and stops it. */
static void hold_lock(struct vmos_lazy *v)
{
    __atomic_add_fetch(&v->hold, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&v->mu);
    __atomic_sub_fetch(&v->hold, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&v->ahead_end, 0, __ATOMIC_RELAXED);
}

static void *handler(void *arg)
{
    struct vmos_lazy *v = arg;
    struct pollfd p[2] = { { v->uffd, POLLIN, 0 }, { v->stop_fd, POLLIN, 0 } };
    for (;;) {
        /* With read-ahead to do, only look for a fault (or the stop) before each chunk. */
        const bool ahead = ahead_pending(v);
        int r = poll(p, 2, ahead ? 0 : -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        if (r > 0 && (p[0].revents & POLLIN)) {
            struct uffd_msg m;
            if (read(v->uffd, &m, sizeof m) == (ssize_t)sizeof m && m.event == UFFD_EVENT_PAGEFAULT)
                serve(v, (uintptr_t)m.arg.pagefault.address);
            continue; /* EAGAIN: another wakeup took it */
        }
        if (ahead)
            read_ahead(v);
    }
    return NULL;
}

/* free_stock() unmaps the stock and frees its maps (each may be missing). */
static void free_stock(struct vmos_lazy *v)
{
    if (v->stock != NULL)
        munmap(v->stock, v->len);
    v->stock = NULL;
    free(v->raced);
    free(v->stocked);
    free(v->moved);
    free(v->copied);
}

int vmos_lazy_create(size_t len, struct vmos_lazy **out)
{
    struct vmos_lazy *v = calloc(1, sizeof *v);
    if (v == NULL)
        return VIDMM_E_NO_MEMORY;
    v->page = vmos_page_size();
    v->len = (len + v->page - 1) / v->page * v->page;
    v->uffd = v->stop_fd = v->pm_fd = -1;
    pthread_mutex_init(&v->mu, NULL);
    int err = VIDMM_E_UNSUPPORTED;
    void *m = mmap(NULL, v->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        err = VIDMM_E_NO_MEMORY;
        goto fail;
    }
    v->base = m;
    (void)madvise(v->base, v->len, MADV_DONTFORK);
    v->bounce = aligned_alloc(v->page, LAZY_CHUNK_MAX);
    if (v->bounce == NULL) {
        err = VIDMM_E_NO_MEMORY;
        goto fail;
    }
    (void)madvise(v->base, v->len, MADV_NOHUGEPAGE); /* uffd fills base pages; so do moves */
    /* The pages counted as written without a protection: a move's race, a counted stream's
     * chunks (without this map no stream goes in counted). */
    v->raced = calloc((v->len / v->page + 63) / 64, sizeof *v->raced);
    const char *lz = getenv("VIDMM_LAZY");
    uint64_t want = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_MOVE;
    if (lz != NULL && strcmp(lz, "copy") == 0)
        want = UFFD_FEATURE_WP_ASYNC;
    struct uffdio_api api;
    /* A failed UFFDIO_API leaves the context unusable, so each attempt takes a fresh fd. */
    for (int attempt = 0; attempt < 2 && v->uffd < 0; attempt++) {
        /* The full userfaultfd: kernel accesses must be served too (no UFFD_USER_MODE_ONLY). */
        v->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
        if (v->uffd < 0)
            goto fail;
        memset(&api, 0, sizeof api);
        api.api = UFFD_API;
        api.features = want;
        if (ioctl(v->uffd, UFFDIO_API, &api) != 0) {
            close(v->uffd);
            v->uffd = -1;
            want = UFFD_FEATURE_WP_ASYNC; /* no UFFDIO_MOVE (Linux < 6.8): copies */
        }
    }
    if (v->uffd < 0 || !(api.features & UFFD_FEATURE_WP_ASYNC))
        goto fail;
    struct uffdio_register reg;
    memset(&reg, 0, sizeof reg);
    reg.range.start = (uintptr_t)v->base;
    reg.range.len = v->len;
    reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
    if (ioctl(v->uffd, UFFDIO_REGISTER, &reg) != 0 || !(reg.ioctls & ((uint64_t)1 << _UFFDIO_COPY)))
        goto fail;
    if (want & api.features & UFFD_FEATURE_MOVE) { /* the kernel reports every feature it has */
        /* The stock: a failure here only leaves the copies. */
        void *st = mmap(NULL, v->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        v->stocked = calloc((v->len / v->page + 63) / 64, sizeof *v->stocked);
        v->moved = calloc((v->len / v->page + 63) / 64, sizeof *v->moved);
        v->copied = calloc((v->len / v->page + 63) / 64, sizeof *v->copied);
        if (st != MAP_FAILED) {
            (void)madvise(st, v->len, MADV_DONTFORK); /* a child's copy could not move */
            (void)madvise(st, v->len, MADV_NOHUGEPAGE);
            memset(&reg, 0, sizeof reg);
            reg.range.start = (uintptr_t)st;
            reg.range.len = v->len;
            reg.mode = UFFDIO_REGISTER_MODE_WP;
            if (v->raced != NULL && v->stocked != NULL && v->moved != NULL && v->copied != NULL &&
                ioctl(v->uffd, UFFDIO_REGISTER, &reg) == 0)
                v->stock = st;
            else
                munmap(st, v->len);
        }
    }
    v->pm_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (v->pm_fd < 0)
        goto fail;
    struct pm_scan_arg probe;
    memset(&probe, 0, sizeof probe);
    probe.size = sizeof probe;
    probe.flags = PM_SCAN_CHECK_WPASYNC;
    probe.start = (uintptr_t)v->base;
    probe.end = probe.start + v->page;
    probe.category_mask = PAGE_IS_WRITTEN;
    probe.return_mask = PAGE_IS_WRITTEN;
    if (ioctl(v->pm_fd, PAGEMAP_SCAN, &probe) < 0)
        goto fail;
    v->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (v->stop_fd < 0 || pthread_create(&v->thread, NULL, handler, v) != 0) {
        if (v->stop_fd >= 0)
            close(v->stop_fd);
        v->stop_fd = -1;
        goto fail;
    }
    *out = v;
    return 0;
fail:
    vidmm_log(VIDMM_LOG_DEBUG, "lazy view of %zu bytes: %s", len,
              err == VIDMM_E_NO_MEMORY ? "out of memory" : "no full userfaultfd with WP_ASYNC + PAGEMAP_SCAN here");
    if (v->pm_fd >= 0)
        close(v->pm_fd);
    if (v->uffd >= 0)
        close(v->uffd);
    free(v->bounce);
    free_stock(v);
    if (v->base != NULL)
        munmap(v->base, v->len);
    pthread_mutex_destroy(&v->mu);
    free(v);
    return err;
}

uint8_t *vmos_lazy_base(const struct vmos_lazy *v)
{
    return v->base;
}

size_t vmos_lazy_len(const struct vmos_lazy *v)
{
    return v->len;
}

void vmos_lazy_arm(struct vmos_lazy *v, vmos_lazy_fill fill, void *ctx, bool writes, bool count_streams)
{
    pthread_mutex_lock(&v->mu);
    v->count_streams = count_streams;
    v->counted = false;
    v->fill = fill;
    v->ctx = ctx;
    v->writes = writes;
    v->armed = true;
    v->next = SIZE_MAX;
    v->chunk = v->page;
    __atomic_store_n(&v->ahead_end, 0, __ATOMIC_RELAXED);
    v->quiet = false;
    pthread_mutex_unlock(&v->mu);
}

/* scan_written() sets in 'bitmap' the pages of [start, end) (view offsets) written since
 * they were installed. */
static int scan_written(struct vmos_lazy *v, size_t from, size_t to, uint64_t *bitmap)
{
    struct page_region vec[LAZY_SCAN_VEC];
    uint64_t start = (uintptr_t)v->base + from, end = (uintptr_t)v->base + to;
    while (start < end) {
        struct pm_scan_arg a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.flags = PM_SCAN_CHECK_WPASYNC;
        a.start = start;
        a.end = end;
        a.vec = (uintptr_t)vec;
        a.vec_len = LAZY_SCAN_VEC;
        /* Written, and there: a page never touched has no uffd-wp bit either, and would count
         * as written (it reads as the surface's bytes, which are already tiled). */
        a.category_mask = PAGE_IS_WRITTEN;
        a.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
        a.return_mask = PAGE_IS_WRITTEN;
        int r = ioctl(v->pm_fd, PAGEMAP_SCAN, &a);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return VIDMM_E_IO;
        }
        VMOS_MEM_DEFINED(&a, sizeof a);
        VMOS_MEM_DEFINED(vec, (size_t)r * sizeof vec[0]);
        for (int i = 0; i < r; i++)
            for (uint64_t p = (vec[i].start - (uintptr_t)v->base) / v->page;
                 p < (vec[i].end - (uintptr_t)v->base) / v->page; p++)
                bitmap[p / 64] |= (uint64_t)1 << (p % 64);
        if (a.walk_end <= start)
            return VIDMM_E_IO;
        start = a.walk_end;
    }
    return 0;
}

int vmos_lazy_written(struct vmos_lazy *v, uint64_t *bitmap, size_t words)
{
    const size_t pages = v->len / v->page;
    if (words * 64 < pages)
        return VIDMM_E_INVALID_ARG;
    memset(bitmap, 0, words * sizeof *bitmap);
    if (v->stock == NULL) {
        const int rc = scan_written(v, 0, v->len, bitmap);
        hold_lock(v); /* the handler sets 'raced' (a counted stream's pages) */
        for (size_t w = 0; v->raced != NULL && w < (pages + 63) / 64; w++)
            bitmap[w] |= v->raced[w];
        pthread_mutex_unlock(&v->mu);
        return rc;
    }
    /* Only the runs installed since arming can have been written: the scan of a whole view
     * walks every page-table entry its last full read left (the moves back leave the tables,
     * the MADV_DONTNEED of the copies freed them): lock + write one page + unlock after a
     * read of all 64 MiB took 62 us that way, 22 us before the read. */
    hold_lock(v); /* the handler sets the maps */
    int rc = 0;
    size_t p0, p1;
    for (size_t p = 0; rc == 0 && next_run(v->moved, v->copied, pages, p, LAZY_RUN_GAP, &p0, &p1); p = p1)
        rc = scan_written(v, p0 * v->page, p1 * v->page, bitmap);
    for (size_t w = 0; w < (pages + 63) / 64; w++)
        bitmap[w] |= v->raced[w];
    pthread_mutex_unlock(&v->mu);
    return rc;
}

void vmos_lazy_quiesce(struct vmos_lazy *v)
{
    /* Every fill finished so far released the mutex after reading the surface: taking it
     * orders them before what the caller does next (the kernel's wake-up of a faulting thread
     * orders them too, but no tool sees that), and waits for a fill in progress. */
    hold_lock(v); /* and the read-ahead stops: the caller may write the surface next */
    v->quiet = true;
    pthread_mutex_unlock(&v->mu);
}

void vmos_lazy_hold(struct vmos_lazy *v)
{
    hold_lock(v);
}

void vmos_lazy_release(struct vmos_lazy *v)
{
    pthread_mutex_unlock(&v->mu);
}

void vmos_lazy_disarm(struct vmos_lazy *v, struct vmos_lazy_stats *st)
{
    hold_lock(v); /* waits for a fill in progress, stops the read-ahead */
    v->armed = false;
    v->fill = NULL;
    v->ctx = NULL;
    if (st != NULL) {
        st->faults = v->faults;
        st->filled = v->filled;
        st->counted = v->counted;
    }
    v->counted = false;
    v->faults = v->filled = 0;
    /* Every page goes: the next arming starts empty (and its pages fault in again). */
    drop_pages(v);
    if (v->raced != NULL)
        memset(v->raced, 0, (v->len / v->page + 63) / 64 * sizeof *v->raced);
    pthread_mutex_unlock(&v->mu);
}

void vmos_lazy_destroy(struct vmos_lazy *v)
{
    if (v == NULL)
        return;
    uint64_t one = 1;
    if (write(v->stop_fd, &one, sizeof one) == (ssize_t)sizeof one)
        pthread_join(v->thread, NULL);
    close(v->stop_fd);
    struct uffdio_range r = { (uintptr_t)v->base, v->len };
    (void)ioctl(v->uffd, UFFDIO_UNREGISTER, &r);
    close(v->uffd);
    close(v->pm_fd);
    munmap(v->base, v->len);
    free_stock(v);
    free(v->bounce);
    pthread_mutex_destroy(&v->mu);
    free(v);
}
