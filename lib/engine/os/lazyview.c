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
 * and vmos_lazy_disarm(): after them nothing reads the surface. */
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
/* PAGEMAP_SCAN output regions per ioctl. */
#define LAZY_SCAN_VEC 256

struct vmos_lazy {
    uint8_t *base;
    size_t len, page;
    int uffd, stop_fd, pm_fd;
    pthread_t thread;
    pthread_mutex_t mu;               /* fill/ctx/armed, and a fill in progress */
    vmos_lazy_fill fill;
    void *ctx;
    bool armed;
    uint8_t *bounce;                  /* LAZY_CHUNK_MAX bytes, the handler's */
    size_t next;                      /* the page after the last chunk filled */
    size_t chunk;                     /* bytes the next sequential fault fills */
    size_t ahead_end;                 /* read-ahead fills up to here (0: none) */
    int hold;                         /* threads waiting for 'mu' (atomic): read-ahead pauses */
    bool quiet;                       /* quiesced: no read-ahead until the next arming */
    uint64_t faults;                  /* statistics: faults served, bytes filled */
    uint64_t filled;
};

/* install() fills and installs [off, off + n) (page multiples), write-protected; on EEXIST the
 * pages before the present one are in. Returns what was installed, 0 when nothing could be. */
static size_t install(struct vmos_lazy *v, size_t off, size_t n)
{
    if (v->armed)
        v->fill(v->ctx, off, n, v->bounce);
    else
        memset(v->bounce, 0, n); /* not locked: a stray access reads zeros rather than hang */
    struct uffdio_copy c;
    memset(&c, 0, sizeof c);
    c.dst = (uintptr_t)v->base + off;
    c.src = (uintptr_t)v->bounce;
    c.len = n;
    c.mode = UFFDIO_COPY_MODE_WP;
    if (ioctl(v->uffd, UFFDIO_COPY, &c) == 0)
        return n;
    if (c.copy > 0)
        return (size_t)c.copy; /* partly: stopped at a present page */
    return 0;
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
    /* The full userfaultfd: kernel accesses must be served too (no UFFD_USER_MODE_ONLY). */
    v->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (v->uffd < 0)
        goto fail;
    struct uffdio_api api;
    memset(&api, 0, sizeof api);
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_WP_ASYNC;
    if (ioctl(v->uffd, UFFDIO_API, &api) != 0 || !(api.features & UFFD_FEATURE_WP_ASYNC))
        goto fail;
    struct uffdio_register reg;
    memset(&reg, 0, sizeof reg);
    reg.range.start = (uintptr_t)v->base;
    reg.range.len = v->len;
    reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
    if (ioctl(v->uffd, UFFDIO_REGISTER, &reg) != 0 || !(reg.ioctls & ((uint64_t)1 << _UFFDIO_COPY)))
        goto fail;
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

void vmos_lazy_arm(struct vmos_lazy *v, vmos_lazy_fill fill, void *ctx)
{
    pthread_mutex_lock(&v->mu);
    v->fill = fill;
    v->ctx = ctx;
    v->armed = true;
    v->next = SIZE_MAX;
    v->chunk = v->page;
    __atomic_store_n(&v->ahead_end, 0, __ATOMIC_RELAXED);
    v->quiet = false;
    pthread_mutex_unlock(&v->mu);
}

int vmos_lazy_written(struct vmos_lazy *v, uint64_t *bitmap, size_t words)
{
    const size_t pages = v->len / v->page;
    if (words * 64 < pages)
        return VIDMM_E_INVALID_ARG;
    memset(bitmap, 0, words * sizeof *bitmap);
    struct page_region vec[LAZY_SCAN_VEC];
    uint64_t start = (uintptr_t)v->base, end = start + v->len;
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

void vmos_lazy_quiesce(struct vmos_lazy *v)
{
    /* Every fill finished so far released the mutex after reading the surface: taking it
     * orders them before what the caller does next (the kernel's wake-up of a faulting thread
     * orders them too, but no tool sees that), and waits for a fill in progress. */
    hold_lock(v); /* and the read-ahead stops: the caller may write the surface next */
    v->quiet = true;
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
    }
    v->faults = v->filled = 0;
    /* Every page goes: the next arming starts empty (and its pages fault in again). */
    (void)madvise(v->base, v->len, MADV_DONTNEED);
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
    free(v->bounce);
    pthread_mutex_destroy(&v->mu);
    free(v);
}
