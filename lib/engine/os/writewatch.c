/* SPDX-License-Identifier: MIT */
/* lib/engine/os/writewatch.c - the public write-watch API (include/vidmm/writewatch.h) on three
 * backends: userfaultfd asynchronous write-protect read through PAGEMAP_SCAN, the soft-dirty
 * bits of the page tables, and read-only pages with a SIGSEGV handler. Linux only, like
 * everything in lib/engine/os/.
 *
 * Process-wide state, each piece with how it is synchronised:
 *   - the region table (slots[]): every watched region of every backend, for the overlap rule
 *     and for the signal handler. Changed under reg_lock; the handler reads it with atomics only
 *     (see "Region table");
 *   - the previous SIGSEGV action (prev_segv): written once under reg_lock before our handler is
 *     installed, read-only afterwards;
 *   - the soft-dirty list, its per-region records and the /proc/self file descriptors: under
 *     sd_lock;
 *   - the VIDMM_WRITEWATCH choice: pthread_once.
 *
 * Fork (pthread_atfork, registered with the first region): the three mutexes are taken around
 * fork(), so none is held in the child, and the child forgets what the parent's other threads
 * were doing at the fork (the handler's in-flight count, the mprotect regions' spin locks).
 * Every handle records the process that made it ('owner'): a uffd handle is that process's only,
 * because the userfaultfd it holds acts on the creator's memory from whichever process calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <ucontext.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>
#include "common/internal.h"
#include "engine/os/os.h"
#include "vidmm/writewatch.h"
#include "engine/os/uffd_compat.h"


/* Documentation/admin-guide/mm/soft-dirty.rst and pagemap.rst: bit 55 of a pagemap entry is
 * the page's soft-dirty bit; writing "4" to clear_refs clears it for every page of the process. */
#define PM_SOFT_DIRTY_BIT ((uint64_t)1 << 55)

/* The level of a backend's refusal: WARN, or DEBUG for a VIDMM_WRITEWATCH_QUIET probe. */
#define WW_WARN(ww) ((ww)->quiet ? VIDMM_LOG_DEBUG : VIDMM_LOG_WARN)

/* How many regions may be watched at once (all backends). The signal handler scans the table
 * up to its high-water mark, so the bound keeps a fault's lookup short (4096 compares). */
#define WW_MAX_REGIONS 4096

/* Entries read from /proc/self/pagemap per pread (8 bytes each). */
#define PM_CHUNK 4096

/* Regions of PAGEMAP_SCAN output per ioctl. */
#define SCAN_VEC 256

/* A soft-dirty region that keeps faulting while no clear is in progress is not ours to retry
 * forever (its owner made it read-only against the rule of writewatch.h): after this many
 * such faults in a row, the handler passes them on. */
#define SD_STRAY_LIMIT 100000

enum ww_slot_state { SLOT_FREE = 0, SLOT_RESERVED = 1, SLOT_LIVE = 2, SLOT_DEAD = 3 };

/* uffd_scan()'s answer when the kernel backed out of a huge page the output array could not take
 * whole (see uffd_get()); never returned to the caller. */
#define SCAN_BACKOUT 2

struct vidmm_writewatch {
    uint8_t *base;
    size_t size;
    size_t pages;
    size_t words;               /* (pages + 63) / 64 */
    int backend;                /* enum vidmm_writewatch_backend, never AUTO */
    bool quiet;                 /* VIDMM_WRITEWATCH_QUIET: a backend refused is logged at DEBUG */
    int slot;                   /* index in slots[] */
    pid_t owner;                /* the process that created it (getpid()) */
    /* uffd */
    int uffd;
    /* uffd: pages the kernel already protected again that no call has reported yet (a huge page
     * only part of which fitted the caller's array, a scan that failed half-way); they read as
     * written until reported or reset. Under carry_lock; carry_n, their number, is read without
     * it to skip the lock when there are none. */
    uint64_t *carry;
    atomic_size_t carry_n;
    pthread_mutex_t carry_lock;
    /* soft-dirty: pages seen dirty since this region's last reset, under sd_lock */
    uint64_t *acc;
    struct vidmm_writewatch *sd_next;
    /* mprotect: written pages; set by the signal handler under 'spin', cleared under it too */
    _Atomic uint64_t *bits;
    atomic_flag spin;
};

struct ww_slot {
    atomic_int state;            /* enum ww_slot_state */
    atomic_uintptr_t start, end; /* the region, [start, end) */
    _Atomic uint64_t gen;        /* a number no other registration of this slot had */
    _Atomic(struct vidmm_writewatch *) ww;
};

/* ---------------------------------------------------------------------------------------------
 * Region table
 *
 * A slot is published LIVE after its fields are written (release store of 'state'), and the
 * handler reads the fields after an acquire load of it. Destroy marks the slot DEAD and waits
 * until no handler is in flight (seq_cst on both sides: the handler increments 'inflight'
 * before loading a state, destroy stores DEAD before loading 'inflight', so either the handler
 * sees DEAD or destroy sees the handler), and only then frees the region. A DEAD slot keeps its
 * range until a new region needs the slot or the range: a fault that was raised before destroy
 * made the pages writable but reaches the handler after (a "straggler") is retried instead of
 * going to the previous handler as a stranger's fault - which, with SIG_DFL before us, would put
 * the default action back for the whole process while other regions still need the handler.
 * Any number of threads may straggle at once; each retries once per faulting address and
 * registration ('gen'), so a write that faults again on a page that really is read-only (its
 * owner protected it after destroy) still goes to the previous handler.
 * ------------------------------------------------------------------------------------------- */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ww_slot slots[WW_MAX_REGIONS];
static atomic_int slots_used;   /* high-water mark of slots ever used */
static atomic_int inflight;     /* handlers between their lookup and their return */
static bool segv_installed;     /* under reg_lock */
static struct sigaction prev_segv;
static uint64_t slot_gen;       /* under reg_lock */
/* The straggler this thread retried last (initial-exec: no allocation on first use, in a
 * signal handler). */
static __attribute__((tls_model("initial-exec"))) _Thread_local uintptr_t straggle_addr;
static __attribute__((tls_model("initial-exec"))) _Thread_local uint64_t straggle_gen;

/* ---------------------------------------------------------------------------------------------
 * Soft-dirty state, under sd_lock
 * ------------------------------------------------------------------------------------------- */
static pthread_mutex_t sd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vidmm_writewatch *sd_list;
static int sd_pagemap_fd = -1, sd_clear_fd = -1;
static pid_t sd_fds_pid;        /* the process the two fds were opened by (fork: reopen) */
static int sd_probed;           /* 0 not yet, 1 works, -1 refused */
static uint64_t sd_buf[PM_CHUNK];
/* Set while every soft-dirty region is read-only around a clear; the handler waits for 0.
 * Stores are seq_cst, paired with the handler's loads. */
static atomic_int sd_frozen;
static atomic_int sd_stray;

/* The uffd backend's pagemap fd, shared by all uffd regions (PAGEMAP_SCAN is safe from several
 * threads on one fd); opened once per process, reopened in a forked child. */
static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static int pm_fd = -1;
static pid_t pm_fd_pid;

static const char *const backend_names[] = { "auto", "uffd", "softdirty", "mprotect" };

const char *vidmm_writewatch_backend_name(int backend)
{
    if (backend < 0 || backend > VIDMM_WRITEWATCH_MPROTECT)
        return NULL;
    return backend_names[backend];
}

/* ---------------------------------------------------------------------------------------------
 * VIDMM_WRITEWATCH
 * ------------------------------------------------------------------------------------------- */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int env_backend;         /* VIDMM_WRITEWATCH_AUTO unless the environment names one */

static void env_init(void)
{
    const char *env = getenv("VIDMM_WRITEWATCH");
    env_backend = VIDMM_WRITEWATCH_AUTO;
    if (env == NULL || *env == '\0')
        return;
    for (int b = 0; b <= VIDMM_WRITEWATCH_MPROTECT; b++)
        if (strcasecmp(env, backend_names[b]) == 0) {
            env_backend = b;
            return;
        }
    vidmm_log(VIDMM_LOG_WARN, "VIDMM_WRITEWATCH=%s: not uffd, softdirty, mprotect or auto; ignored", env);
}

/* ---------------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------------- */
static int open_proc(const char *path, int flags)
{
    int fd;
    do
        fd = open(path, flags | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    return fd;
}

/* block_all() blocks every signal of the calling thread ('old' receives its mask). */
static void block_all(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
}

/* Signals are blocked while a thread holds a region's spin lock, so that a handler of any
 * signal that writes the region cannot run on the holder and wait for it forever. */
static void spin_lock_blocking(struct vidmm_writewatch *ww, sigset_t *old)
{
    block_all(old);
    while (atomic_flag_test_and_set_explicit(&ww->spin, memory_order_acquire))
        sched_yield();
}

static void spin_unlock_blocking(struct vidmm_writewatch *ww, const sigset_t *old)
{
    atomic_flag_clear_explicit(&ww->spin, memory_order_release);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* An output: either an array of page indices with a capacity, or a bitmap of every page. */
struct sink {
    uint64_t *pages;
    size_t cap;
    uint64_t *bitmap;
    size_t n;           /* pages stored (array) or set (bitmap) */
    bool full;          /* the array is full */
};

/* sink_run() stores pages [first, first + count) and returns how many it took. */
static size_t sink_run(struct sink *s, size_t first, size_t count)
{
    if (s->bitmap != NULL) {
        for (size_t i = first; i < first + count; i++)
            s->bitmap[i / 64] |= (uint64_t)1 << (i % 64);
        s->n += count;
        return count;
    }
    size_t room = s->cap - s->n;
    size_t take = count < room ? count : room;
    for (size_t i = 0; i < take; i++)
        s->pages[s->n + i] = first + i;
    s->n += take;
    if (s->n == s->cap)
        s->full = true;
    return take;
}

/* ---------------------------------------------------------------------------------------------
 * SIGSEGV handler (soft-dirty freeze and mprotect regions)
 * ------------------------------------------------------------------------------------------- */

/* pass_on() gives a fault that is not ours to the handler that was there before. With SIG_DFL
 * or SIG_IGN the default action is put back: a fault raised by the CPU then happens again on
 * return and ends the process as it would have without us; a SIGSEGV sent by kill() is raised
 * again (it is blocked until this handler returns). */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
    /* The earlier handler runs with the mask the kernel would have given it - the interrupted
     * thread's, plus its own sa_mask, plus SIGSEGV unless SA_NODEFER - not with ours, which
     * blocks every signal: one that leaves by longjmp() or waits for another signal must not
     * keep them all blocked. */
    if (prev_segv.sa_handler != SIG_DFL && prev_segv.sa_handler != SIG_IGN && uc != NULL) {
        sigset_t m = ((const ucontext_t *)uc)->uc_sigmask;
        for (int s = 1; s < NSIG; s++)
            if (sigismember(&prev_segv.sa_mask, s) == 1)
                sigaddset(&m, s);
        if (!(prev_segv.sa_flags & SA_NODEFER))
            sigaddset(&m, sig);
        pthread_sigmask(SIG_SETMASK, &m, NULL);
    }
    if (prev_segv.sa_flags & SA_SIGINFO) {
        if (prev_segv.sa_sigaction != NULL)
            prev_segv.sa_sigaction(sig, si, uc);
        return;
    }
    if (prev_segv.sa_handler == SIG_IGN && si->si_code <= 0)
        return;
    if (prev_segv.sa_handler == SIG_DFL || prev_segv.sa_handler == SIG_IGN) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        if (si->si_code <= 0)
            raise(sig);
        return;
    }
    prev_segv.sa_handler(sig);
}

/* mp_span_protect() sets the protection of pages [first, first + count) of a mprotect region.
 * hugetlb memory changes protection by whole huge pages only (EINVAL otherwise): then the
 * enclosing 2 MiB, else 1 GiB, span is changed instead, when it lies inside the region. Returns
 * true with [*lo, *hi) the pages changed, false when the kernel refused. */
static bool mp_span_protect(struct vidmm_writewatch *ww, size_t first, size_t count, int prot, size_t *lo, size_t *hi)
{
    size_t pg = vmos_page_size();
    *lo = first;
    *hi = first + count;
    if (mprotect(ww->base + first * pg, count * pg, prot) == 0)
        return true;
    if (errno != EINVAL)
        return false;
    const uintptr_t b = (uintptr_t)ww->base, e = b + ww->size;
    for (uintptr_t huge = (uintptr_t)2 << 20; huge <= (uintptr_t)1 << 30; huge <<= 9) {
        uintptr_t s0 = (b + first * pg) & ~(huge - 1), s1 = (b + (first + count) * pg + huge - 1) & ~(huge - 1);
        if (s0 < b || s1 > e)
            break;
        if (mprotect((void *)s0, s1 - s0, prot) == 0) {
            *lo = (s0 - b) / pg;
            *hi = (s1 - b) / pg;
            return true;
        }
        if (errno != EINVAL)
            return false;
    }
    return false;
}

/* mp_fault() records a write to page 'page' of a mprotect region and makes the page writable (on
 * hugetlb memory its whole huge page, every page of which is then marked written). When the
 * kernel cannot split the mapping further (ENOMEM: vm.max_map_count), every page is marked
 * written and the whole region made writable: reports stay supersets until the next reset.
 * Returns false when even that failed (the fault is then passed on). */
static bool mp_fault(struct vidmm_writewatch *ww, uintptr_t addr)
{
    size_t pg = vmos_page_size();
    size_t page = (addr - (uintptr_t)ww->base) / pg, lo, hi;
    bool ok = true;
    while (atomic_flag_test_and_set_explicit(&ww->spin, memory_order_acquire))
        sched_yield();
    atomic_fetch_or_explicit(&ww->bits[page / 64], (uint64_t)1 << (page % 64), memory_order_relaxed);
    if (mp_span_protect(ww, page, 1, PROT_READ | PROT_WRITE, &lo, &hi)) {
        for (size_t i = lo; i < hi; i++)
            atomic_fetch_or_explicit(&ww->bits[i / 64], (uint64_t)1 << (i % 64), memory_order_relaxed);
    } else {
        for (size_t w = 0; w < ww->words; w++)
            atomic_store_explicit(&ww->bits[w], ~(uint64_t)0, memory_order_relaxed);
        ok = mprotect(ww->base, ww->size, PROT_READ | PROT_WRITE) == 0;
    }
    atomic_flag_clear_explicit(&ww->spin, memory_order_release);
    return ok;
}

static void ww_segv(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    bool handled = false;
    uintptr_t a = (uintptr_t)si->si_addr;

    atomic_fetch_add(&inflight, 1);
    if (si->si_code == SEGV_ACCERR) {
        int n = atomic_load(&slots_used);
        int dead = -1;
        for (int i = 0; i < n; i++) {
            struct ww_slot *s = &slots[i];
            int st = atomic_load(&s->state);
            if (st != SLOT_LIVE && st != SLOT_DEAD)
                continue;
            if (a < atomic_load(&s->start) || a >= atomic_load(&s->end))
                continue;
            if (st == SLOT_DEAD) {
                dead = i;
                continue;
            }
            struct vidmm_writewatch *ww = atomic_load(&s->ww);
            if (ww->backend == VIDMM_WRITEWATCH_MPROTECT) {
                handled = mp_fault(ww, a);
            } else if (ww->backend == VIDMM_WRITEWATCH_SOFTDIRTY) {
                /* Frozen for a clear: wait until the pages are writable again, then retry. */
                if (atomic_load(&sd_frozen)) {
                    while (atomic_load(&sd_frozen))
                        sched_yield();
                    handled = true;
                } else {
                    handled = atomic_fetch_add(&sd_stray, 1) < SD_STRAY_LIMIT;
                }
            }
            dead = -1;
            break;
        }
        if (!handled && dead >= 0) {
            /* A straggler of a region destroyed meanwhile: its pages are writable now. Retried
             * once per thread, address and registration (see "Region table"). */
            uint64_t gen = atomic_load(&slots[dead].gen);
            if (straggle_addr != a || straggle_gen != gen) {
                straggle_addr = a;
                straggle_gen = gen;
                handled = true;
            }
        }
    }
    atomic_fetch_sub(&inflight, 1);
    errno = saved_errno;
    if (!handled)
        pass_on(sig, si, uc);
}

/* install_segv() puts ww_segv in place, once; under reg_lock. Every signal is blocked while it
 * runs: a handler of the application's that wrote a watched page while this thread is inside
 * ours would fault with SIGSEGV blocked (the kernel then kills the process), or wait for the
 * spin lock this thread holds. Such signals are delivered when ww_segv returns. */
static int install_segv(void)
{
    if (segv_installed)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ww_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &prev_segv) != 0) {
        vidmm_log(VIDMM_LOG_WARN, "vidmm_writewatch: sigaction(SIGSEGV): %s", strerror(errno));
        return VIDMM_E_UNSUPPORTED;
    }
    segv_installed = true;
    return 0;
}

static void wait_no_handler(void)
{
    while (atomic_load(&inflight) != 0)
        sched_yield();
}

/* ---------------------------------------------------------------------------------------------
 * Region table operations, under reg_lock
 * ------------------------------------------------------------------------------------------- */

/* table_reserve() checks [start, end) against every live region and reserves a slot. Dead
 * slots inside the range are freed (a fault there now belongs to the new region, which the
 * handler prefers anyway); one that overlaps it only in part stays, for the stragglers of its
 * part outside. */
static int table_reserve(uintptr_t start, uintptr_t end, int *out)
{
    int n = atomic_load(&slots_used);
    int free_slot = -1, dead_slot = -1;
    for (int i = 0; i < n; i++) {
        struct ww_slot *s = &slots[i];
        int st = atomic_load(&s->state);
        bool over = st != SLOT_FREE && start < atomic_load(&s->end) && atomic_load(&s->start) < end;
        if (st == SLOT_LIVE && over)
            return VIDMM_E_OVERLAP;
        if (st == SLOT_DEAD && over && start <= atomic_load(&s->start) && atomic_load(&s->end) <= end) {
            atomic_store(&s->state, SLOT_FREE);
            st = SLOT_FREE;
        }
        if (st == SLOT_FREE && free_slot < 0)
            free_slot = i;
        if (st == SLOT_DEAD && dead_slot < 0)
            dead_slot = i;
    }
    int i = free_slot;
    if (i < 0 && n < WW_MAX_REGIONS)
        i = n;
    if (i < 0)
        i = dead_slot;
    if (i < 0)
        return VIDMM_E_NO_MEMORY;
    int expect = slots[i].state;
    if (!atomic_compare_exchange_strong(&slots[i].state, &expect, SLOT_RESERVED))
        return VIDMM_E_NO_MEMORY; /* a handler freed a dead slot meanwhile: rare, refuse */
    if (i == n)
        atomic_store(&slots_used, n + 1);
    /* A handler that loaded the old state may still read the old fields: let it finish. */
    wait_no_handler();
    atomic_store(&slots[i].start, start);
    atomic_store(&slots[i].end, end);
    atomic_store(&slots[i].gen, ++slot_gen);
    *out = i;
    return 0;
}

static void table_publish(int i, struct vidmm_writewatch *ww)
{
    atomic_store(&slots[i].ww, ww);
    atomic_store_explicit(&slots[i].state, SLOT_LIVE, memory_order_release);
}

static void table_release(int i)
{
    atomic_store(&slots[i].state, SLOT_FREE);
}

/* ---------------------------------------------------------------------------------------------
 * uffd backend: userfaultfd WP_ASYNC + PAGEMAP_SCAN
 *
 * Registration write-protects the whole range (UFFDIO_WRITEPROTECT); with WP_UNPOPULATED the
 * kernel marks unpopulated pages too, so a page first touched after registration is reported
 * only when written. The first write to a protected page takes a minor fault that the kernel
 * resolves itself (WP_ASYNC), clearing the page's uffd-wp bit: PAGEMAP_SCAN reports such pages
 * as PAGE_IS_WRITTEN and, with PM_SCAN_WP_MATCHING, protects them again in the same page-table
 * walk, under the page-table lock: a write is either before (reported now) or after (faults
 * again, reported next time). Transparent huge pages are split on their first write (the kernel
 * resolves async write-protect faults at the base-page level).
 *
 * hugetlb pages are not split: a written huge page reads as all its base pages written, and the
 * kernel protects one again only whole. When an array's room ends inside a written huge page,
 * PAGEMAP_SCAN backs out of that huge page (it reports none of it and leaves it written), and may
 * go on walking past it. uffd_get() then takes the slow way: under the region's carry_lock it
 * scans the region into the 'carry' bitmap with no page limit (every written page, huge ones
 * whole, protected again and kept there), and hands out the carry's pages in order, as many as
 * the array takes; the rest wait in the carry for the next call. A scan that fails after it
 * protected pages again keeps them in the carry the same way, so a failed call loses nothing.
 *
 * After fork() the userfaultfd a child inherits still acts on the parent's memory (the kernel
 * drops the child's registration, UFFD_FEATURE_EVENT_FORK not being asked for): in a process
 * other than the creator a handle's calls fail and its destroy only closes this process's fd.
 * ------------------------------------------------------------------------------------------- */
static int uffd_open(int *why)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == EPERM)   /* vm.unprivileged_userfaultfd=0 without CAP_SYS_PTRACE */
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0) {
        int e = errno;
        /* /dev/userfaultfd (Linux 6.1) is the other door, governed by its file permissions. */
        int dev = open_proc("/dev/userfaultfd", O_RDWR);
        if (dev >= 0) {
            fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
            close(dev);
        }
        if (fd < 0)
            *why = e;
    }
    return fd;
}

static int pm_fd_get(void)
{
    pthread_mutex_lock(&pm_lock);
    if (pm_fd < 0 || pm_fd_pid != getpid()) {
        /* In a forked child the inherited fd still reads the parent's page tables. */
        if (pm_fd >= 0)
            close(pm_fd);
        pm_fd = open_proc("/proc/self/pagemap", O_RDONLY);
        pm_fd_pid = getpid();
    }
    int fd = pm_fd;
    pthread_mutex_unlock(&pm_lock);
    return fd;
}

/* uffd_handshake() opens a userfaultfd and agrees on asynchronous write-protect with it, with
 * WP_UNPOPULATED where the kernel has it (without, unpopulated pages over-report). Returns the
 * fd, or -1 with '*why' the errno of the open that failed, 0 when the kernel has no WP_ASYNC. */
static int uffd_handshake(int *why)
{
    uint64_t want = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED;
    struct uffdio_api api;
    *why = 0;
    /* A failed UFFDIO_API leaves the context unusable, so each attempt takes a fresh fd. */
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = uffd_open(why);
        if (fd < 0)
            return -1;
        memset(&api, 0, sizeof api);
        api.api = UFFD_API;
        api.features = want;
        if (ioctl(fd, UFFDIO_API, &api) == 0) {
            if (api.features & UFFD_FEATURE_WP_ASYNC)
                return fd;
            close(fd);
            return -1;
        }
        close(fd);
        want = UFFD_FEATURE_WP_ASYNC;
    }
    return -1;
}

/* wp_async_probe() checks that PAGEMAP_SCAN (Linux 6.7) sees the asynchronous write-protect of
 * the registered page at 'start'. Returns 0 or an errno. */
static int wp_async_probe(uintptr_t start)
{
    int pfd = pm_fd_get();
    if (pfd < 0)
        return errno ? errno : EIO;
    struct pm_scan_arg probe;
    memset(&probe, 0, sizeof probe);
    probe.size = sizeof probe;
    probe.flags = PM_SCAN_CHECK_WPASYNC;
    probe.start = start;
    probe.end = start + vmos_page_size();
    probe.category_mask = PAGE_IS_WRITTEN;
    probe.return_mask = PAGE_IS_WRITTEN;
    return ioctl(pfd, PAGEMAP_SCAN, &probe) < 0 ? errno : 0;
}

static int uffd_create(struct vidmm_writewatch *ww)
{
    int why;
    ww->carry = calloc(ww->words, sizeof *ww->carry);
    if (ww->carry == NULL)
        return VIDMM_E_NO_MEMORY;
    int fd = uffd_handshake(&why);
    if (fd < 0) {
        if (why != 0)
            vidmm_log(WW_WARN(ww), "vidmm_writewatch: uffd: userfaultfd: %s", strerror(why));
        else
            vidmm_log(WW_WARN(ww), "vidmm_writewatch: uffd: the kernel has no UFFD_FEATURE_WP_ASYNC (Linux 6.7)");
        free(ww->carry);
        ww->carry = NULL;
        return VIDMM_E_UNSUPPORTED;
    }
    struct uffdio_register reg;
    memset(&reg, 0, sizeof reg);
    reg.range.start = (uintptr_t)ww->base;
    reg.range.len = ww->size;
    reg.mode = UFFDIO_REGISTER_MODE_WP;
    if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
        int e = errno;
        close(fd);
        free(ww->carry);
        ww->carry = NULL;
        vidmm_log(WW_WARN(ww), "vidmm_writewatch: uffd: UFFDIO_REGISTER: %s", strerror(e));
        return e == ENOMEM ? VIDMM_E_NO_MEMORY : VIDMM_E_UNSUPPORTED;
    }
    struct uffdio_writeprotect wp;
    memset(&wp, 0, sizeof wp);
    wp.range = reg.range;
    wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
    int e = ioctl(fd, UFFDIO_WRITEPROTECT, &wp) != 0 ? errno : wp_async_probe((uintptr_t)ww->base);
    if (e != 0) {
        (void)ioctl(fd, UFFDIO_UNREGISTER, &reg.range);
        close(fd);
        free(ww->carry);
        ww->carry = NULL;
        vidmm_log(WW_WARN(ww), "vidmm_writewatch: uffd: write-protect or PAGEMAP_SCAN (Linux 6.7): %s",
                  strerror(e));
        return e == ENOMEM ? VIDMM_E_NO_MEMORY : VIDMM_E_UNSUPPORTED;
    }
    ww->uffd = fd;
    atomic_store(&ww->carry_n, 0);
    pthread_mutex_init(&ww->carry_lock, NULL);
    return 0;
}

/* uffd_destroy() unregisters the region - in the process that created it only: elsewhere (a
 * forked child) the fd's context is the creator's and the unregistration would end the
 * creator's tracking, so only this process's copy of the fd is closed. (The carry_lock of a
 * copy in a child may be held by a thread the child does not have: left alone.) */
static void uffd_destroy(struct vidmm_writewatch *ww)
{
    if (ww->owner == getpid()) {
        struct uffdio_range r = { (uintptr_t)ww->base, ww->size };
        (void)ioctl(ww->uffd, UFFDIO_UNREGISTER, &r);
        pthread_mutex_destroy(&ww->carry_lock);
    }
    close(ww->uffd);
    free(ww->carry);
}

static int scan_errno(int e)
{
    return e == ENOMEM ? VIDMM_E_NO_MEMORY : e == EPERM ? VIDMM_E_UNSUPPORTED : VIDMM_E_IO;
}

/* uffd_protect() sets (wp) or lifts the write-protection of [start, end) for userfaultfd 'fd'.
 * Setting it goes through PAGEMAP_SCAN with PM_SCAN_WP_MATCHING and no output: the kernel walks
 * the range and protects only the pages that are not protected already (written since, or never
 * protected; holes included, as UFFDIO_WRITEPROTECT does with WP_UNPOPULATED), where
 * UFFDIO_WRITEPROTECT rewrites every entry and flushes the TLB for all of them. 64 MiB of memfd or
 * anonymous memory, populated, Linux 6.18, AMD EPYC Zen 3 KVM (a /tmp program, medians of 5):
 * UFFDIO_WRITEPROTECT 2.0-2.9 ms whether 1 page or every page was written since; the scan 0.5-0.67
 * ms with every page written, 75-112 us with every tenth, 20-37 us with one. The end state is the
 * same: every page of the range protected, a write that races the walk either before its page's
 * entry is protected (the page stays written: it faults again) or after (it faults). A walk that
 * stops short - a hugetlb page only part of which lies in the range, which the scan cannot protect
 * - or a kernel without PAGEMAP_SCAN leaves the rest to UFFDIO_WRITEPROTECT. */
static int uffd_protect(int fd, uintptr_t start, uintptr_t end, bool wp)
{
    int pfd = wp ? pm_fd_get() : -1;
    while (pfd >= 0 && start < end) {
        struct pm_scan_arg a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.flags = PM_SCAN_CHECK_WPASYNC | PM_SCAN_WP_MATCHING;
        a.start = start;
        a.end = end;
        a.category_mask = PAGE_IS_WRITTEN; /* vec_len 0: nothing reported, the whole range walked */
        if (ioctl(pfd, PAGEMAP_SCAN, &a) < 0) {
            if (errno == EINTR)
                continue;
            break; /* the kernel's own call below says what is wrong, if anything */
        }
        VMOS_MEM_DEFINED(&a, sizeof a);
        if (a.walk_end <= start || a.walk_end > end)
            break;
        start = a.walk_end;
    }
    if (start >= end)
        return 0;
    struct uffdio_writeprotect w;
    memset(&w, 0, sizeof w);
    w.range.start = start;
    w.range.len = end - start;
    w.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
    while (ioctl(fd, UFFDIO_WRITEPROTECT, &w) != 0)
        if (errno != EINTR && errno != EAGAIN)
            return scan_errno(errno);
    return 0;
}

/* uffd_scan() reports the pages of [start, end) written since their protection into 's', as
 * page indices from 'base' (all of them for a bitmap, up to its capacity for an array),
 * protecting the reported ones again with 'reset'. Returns 0, 1 (array full and more written
 * pages remain), SCAN_BACKOUT (reset into an array whose room ended inside a written huge page:
 * the kernel reported less than the room without reaching 'end'; what 's' holds was protected
 * again) or an error (with 'reset', what 's' holds was protected again). */
static int uffd_scan(uintptr_t base, uintptr_t start, uintptr_t end, bool reset, struct sink *s)
{
    int pfd = pm_fd_get();
    if (pfd < 0)
        return VIDMM_E_IO;
    struct page_region vec[SCAN_VEC];
    size_t pg = vmos_page_size();
    while (start < end) {
        uint64_t want = 0; /* the page limit of this ioctl, 0 for none */
        struct pm_scan_arg a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.flags = PM_SCAN_CHECK_WPASYNC | (reset ? PM_SCAN_WP_MATCHING : 0);
        a.start = start;
        a.end = end;
        a.vec = (uintptr_t)vec;
        a.vec_len = SCAN_VEC;
        a.category_mask = PAGE_IS_WRITTEN;
        a.return_mask = PAGE_IS_WRITTEN;
        if (s->bitmap == NULL) {
            if (s->n == s->cap) {
                /* Full: anything left? A look without protecting. */
                a.flags = PM_SCAN_CHECK_WPASYNC;
                a.max_pages = 1;
                a.vec_len = 1;
                int r = ioctl(pfd, PAGEMAP_SCAN, &a);
                if (r < 0)
                    return scan_errno(errno);
                VMOS_MEM_DEFINED(&a, sizeof a);
                return r > 0 ? 1 : 0;
            }
            a.max_pages = want = s->cap - s->n;
        }
        int r = ioctl(pfd, PAGEMAP_SCAN, &a);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return scan_errno(errno);
        }
        VMOS_MEM_DEFINED(&a, sizeof a);
        VMOS_MEM_DEFINED(vec, (size_t)r * sizeof vec[0]);
        uint64_t got = 0;
        for (int i = 0; i < r; i++) {
            size_t n = (size_t)(vec[i].end - vec[i].start) / pg;
            sink_run(s, (size_t)(vec[i].start - base) / pg, n);
            got += n;
        }
        if (a.walk_end >= end)
            break;
        /* The walk stopped short with room left in both the array and 'vec': only a huge page
         * backed out of stops it so (pagemap_scan_hugetlb_entry(): a partial hugetlb page
         * cannot be write-protected). Its walk_end is not where to go on from. */
        if (reset && want != 0 && got < want && r < SCAN_VEC)
            return SCAN_BACKOUT;
        if (a.walk_end <= start)
            return VIDMM_E_IO; /* no progress: should not happen */
        start = a.walk_end;
    }
    return 0;
}

static size_t popcount_words(const uint64_t *w, size_t words)
{
    size_t n = 0;
    for (size_t i = 0; i < words; i++)
        n += (size_t)__builtin_popcountll(w[i]);
    return n;
}

/* carry_keep() adds the pages 's' holds (protected again by a call that cannot report them) to
 * the carry. Under carry_lock. */
static void carry_keep(struct vidmm_writewatch *ww, const struct sink *s)
{
    if (s->bitmap != NULL) {
        for (size_t w = 0; w < ww->words; w++)
            ww->carry[w] |= s->bitmap[w];
    } else {
        for (size_t i = 0; i < s->n; i++)
            ww->carry[s->pages[i] / 64] |= (uint64_t)1 << (s->pages[i] % 64);
    }
    atomic_store(&ww->carry_n, popcount_words(ww->carry, ww->words));
}

static int emit_bitmap(uint64_t *bm, size_t pages, struct sink *s, bool clear);

/* uffd_get_carry() is uffd_get() through the carry (see the top of this section); under
 * carry_lock. With 'reset' every written page moves into the carry (the kernel protects it
 * again) and the carry's first pages go to 's'; without, 's' receives the carry's pages and
 * the kernel's written ones together. */
static int uffd_get_carry(struct vidmm_writewatch *ww, bool reset, struct sink *s)
{
    const uintptr_t base = (uintptr_t)ww->base;
    if (reset) {
        struct sink c = { NULL, 0, ww->carry, 0, false };
        int rc = uffd_scan(base, base, base + ww->size, true, &c);
        size_t have = popcount_words(ww->carry, ww->words);
        if (rc < 0) {
            atomic_store(&ww->carry_n, have);
            return rc;
        }
        size_t before = s->n;
        rc = emit_bitmap(ww->carry, ww->pages, s, true);
        atomic_store(&ww->carry_n, have - (s->n - before));
        return rc;
    }
    uint64_t *all = malloc(ww->words * sizeof *all);
    if (all == NULL)
        return VIDMM_E_NO_MEMORY;
    memcpy(all, ww->carry, ww->words * sizeof *all);
    struct sink c = { NULL, 0, all, 0, false };
    int rc = uffd_scan(base, base, base + ww->size, false, &c);
    if (rc >= 0)
        rc = emit_bitmap(all, ww->pages, s, false);
    free(all);
    return rc;
}

/* uffd_get() reports the region's written pages into 's': one uffd_scan() while the carry is
 * empty, which is the rule; the carry's way after a backed-out huge page, or while the carry
 * holds pages. A failed scan's pages protected again go to the carry. */
static int uffd_get(struct vidmm_writewatch *ww, bool reset, struct sink *s)
{
    if (ww->owner != getpid())
        return VIDMM_E_NOT_AVAILABLE;
    const uintptr_t base = (uintptr_t)ww->base;
    if (atomic_load(&ww->carry_n) == 0) {
        int rc = uffd_scan(base, base, base + ww->size, reset, s);
        if (rc != SCAN_BACKOUT && (rc >= 0 || !reset || s->n == 0))
            return rc;
        pthread_mutex_lock(&ww->carry_lock);
        carry_keep(ww, s);
        if (rc != SCAN_BACKOUT) {
            pthread_mutex_unlock(&ww->carry_lock);
            return rc;
        }
        s->n = 0; /* an array (SCAN_BACKOUT never comes with a bitmap): start it again */
        s->full = s->cap == 0;
    } else {
        pthread_mutex_lock(&ww->carry_lock);
    }
    int rc = uffd_get_carry(ww, reset, s);
    pthread_mutex_unlock(&ww->carry_lock);
    return rc;
}

static int uffd_reset(struct vidmm_writewatch *ww)
{
    if (ww->owner != getpid())
        return VIDMM_E_NOT_AVAILABLE;
    pthread_mutex_lock(&ww->carry_lock);
    const int rc = uffd_protect(ww->uffd, (uintptr_t)ww->base, (uintptr_t)ww->base + ww->size, true);
    if (rc == 0) {
        memset(ww->carry, 0, ww->words * sizeof *ww->carry);
        atomic_store(&ww->carry_n, 0);
    }
    pthread_mutex_unlock(&ww->carry_lock);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * soft-dirty backend
 *
 * The kernel sets a page's soft-dirty bit on every write (the first write after a clear takes a
 * minor fault) and clears every bit of the process at once when "4" is written to clear_refs.
 * So each region keeps 'acc', the pages seen dirty since its own last reset, and a clear is
 * always preceded by folding the bits of every soft-dirty region into its 'acc'. Between that
 * fold and the clear a write would be lost, so every soft-dirty region is read-only during the
 * two steps (sd_frozen): a thread writing one waits in ww_segv() until the pages are writable
 * again, and its write lands after the clear, where the next fold sees it.
 * ------------------------------------------------------------------------------------------- */

/* sd_fds() opens /proc/self/pagemap and clear_refs for this process; under sd_lock. */
static int sd_fds(void)
{
    if (sd_pagemap_fd >= 0 && sd_fds_pid == getpid())
        return 0;
    if (sd_pagemap_fd >= 0)
        close(sd_pagemap_fd);
    if (sd_clear_fd >= 0)
        close(sd_clear_fd);
    sd_pagemap_fd = open_proc("/proc/self/pagemap", O_RDONLY);
    sd_clear_fd = open_proc("/proc/self/clear_refs", O_WRONLY);
    sd_fds_pid = getpid();
    if (sd_pagemap_fd < 0 || sd_clear_fd < 0) {
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_writewatch: softdirty: cannot open /proc/self/pagemap or clear_refs: %s",
                  strerror(errno));
        return VIDMM_E_UNSUPPORTED;
    }
    return 0;
}

static int sd_clear_all(void)
{
    ssize_t n;
    do
        n = pwrite(sd_clear_fd, "4", 1, 0);
    while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : VIDMM_E_IO;
}

/* sd_fold() ORs the soft-dirty bits of [first, first + count) of region 'ww' into its 'acc'. */
static int sd_fold(struct vidmm_writewatch *ww)
{
    size_t pg = vmos_page_size();
    off_t base_off = (off_t)((uintptr_t)ww->base / pg) * 8;
    for (size_t i = 0; i < ww->pages;) {
        size_t n = ww->pages - i < PM_CHUNK ? ww->pages - i : PM_CHUNK;
        ssize_t got;
        do
            got = pread(sd_pagemap_fd, sd_buf, n * 8, base_off + (off_t)i * 8);
        while (got < 0 && errno == EINTR);
        if (got <= 0 || got % 8 != 0)
            return VIDMM_E_IO;
        size_t m = (size_t)got / 8;
        for (size_t k = 0; k < m; k++)
            if (sd_buf[k] & PM_SOFT_DIRTY_BIT)
                ww->acc[(i + k) / 64] |= (uint64_t)1 << ((i + k) % 64);
        i += m;
    }
    return 0;
}

/* sd_cycle() folds every soft-dirty region and clears the bits of the process, with the
 * regions read-only meanwhile. On failure nothing is cleared (what was folded is real writes).
 * Under sd_lock. Every signal of this thread is blocked while the regions are frozen: a handler
 * of the application's that wrote one here would wait in ww_segv() for this very thread to thaw
 * it, forever. A region whose mprotect() failed gets PROT_READ | PROT_WRITE back too: the call
 * may have changed part of it (a region over several mappings) before it failed. */
static int sd_cycle(void)
{
    int rc = 0;
    struct vidmm_writewatch *r, *stop = NULL;
    sigset_t old;
    block_all(&old);
    atomic_store(&sd_frozen, 1);
    for (r = sd_list; r != NULL; r = r->sd_next)
        if (mprotect(r->base, r->size, PROT_READ) != 0) {
            rc = VIDMM_E_NO_MEMORY; /* vm.max_map_count: the region's VMA could not be split */
            stop = r;
            break;
        }
    if (rc == 0)
        for (r = sd_list; r != NULL && rc == 0; r = r->sd_next)
            rc = sd_fold(r);
    if (rc == 0)
        rc = sd_clear_all();
    for (r = sd_list; r != NULL; r = r->sd_next) {
        (void)mprotect(r->base, r->size, PROT_READ | PROT_WRITE);
        if (r == stop)
            break;
    }
    atomic_store(&sd_stray, 0);
    atomic_store(&sd_frozen, 0);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* sd_probe() checks once that the kernel keeps soft-dirty bits (CONFIG_MEM_SOFT_DIRTY): a page
 * written after a clear must read dirty, and clean after the next clear. Under sd_lock with no
 * soft-dirty region registered, so the clears it makes take nothing from anyone. */
static int sd_probe(void)
{
    if (sd_probed != 0)
        return sd_probed > 0 ? 0 : VIDMM_E_UNSUPPORTED;
    size_t pg = vmos_page_size();
    volatile uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return VIDMM_E_NO_MEMORY;
    uint64_t e1 = 0, e2 = ~(uint64_t)0;
    off_t off = (off_t)((uintptr_t)p / pg) * 8;
    bool ok = sd_clear_all() == 0;
    p[0] = 1;
    ok = ok && pread(sd_pagemap_fd, &e1, 8, off) == 8;
    ok = ok && sd_clear_all() == 0 && pread(sd_pagemap_fd, &e2, 8, off) == 8;
    munmap((void *)p, pg);
    sd_probed = ok && (e1 & PM_SOFT_DIRTY_BIT) && !(e2 & PM_SOFT_DIRTY_BIT) ? 1 : -1;
    if (sd_probed < 0) {
        vidmm_log(VIDMM_LOG_DEBUG, "vidmm_writewatch: softdirty: the kernel keeps no soft-dirty bits "
                  "(CONFIG_MEM_SOFT_DIRTY off, or clear_refs refused)");
        return VIDMM_E_UNSUPPORTED;
    }
    return 0;
}

static int sd_create(struct vidmm_writewatch *ww)
{
    ww->acc = calloc(ww->words, sizeof *ww->acc);
    if (ww->acc == NULL)
        return VIDMM_E_NO_MEMORY;
    pthread_mutex_lock(&sd_lock);
    int rc = sd_fds();
    if (rc == 0)
        rc = sd_probe();
    if (rc == VIDMM_E_UNSUPPORTED)
        vidmm_log(WW_WARN(ww), "vidmm_writewatch: softdirty: unavailable (no /proc/self/pagemap or clear_refs, "
                               "or a kernel without CONFIG_MEM_SOFT_DIRTY; the debug log says which)");
    if (rc == 0) {
        ww->sd_next = sd_list;
        sd_list = ww;
        rc = sd_cycle();
        if (rc == 0) {
            memset(ww->acc, 0, ww->words * sizeof *ww->acc);
        } else {
            sd_list = ww->sd_next;
        }
    }
    pthread_mutex_unlock(&sd_lock);
    if (rc != 0) {
        free(ww->acc);
        ww->acc = NULL;
    }
    return rc;
}

static void sd_destroy(struct vidmm_writewatch *ww)
{
    pthread_mutex_lock(&sd_lock);
    for (struct vidmm_writewatch **pp = &sd_list; *pp != NULL; pp = &(*pp)->sd_next)
        if (*pp == ww) {
            *pp = ww->sd_next;
            break;
        }
    pthread_mutex_unlock(&sd_lock);
    free(ww->acc);
}

/* emit_bitmap() stores the set bits of 'bm' (for 'pages' pages) into 's'. With 'clear', the bits
 * stored are cleared in 'bm'. Returns 1 when the sink filled up with set bits left, else 0. */
static int emit_bitmap(uint64_t *bm, size_t pages, struct sink *s, bool clear)
{
    size_t words = (pages + 63) / 64;
    for (size_t w = 0; w < words; w++) {
        uint64_t v = bm[w];
        while (v != 0) {
            if (s->bitmap == NULL && s->full)
                return 1;
            unsigned b = (unsigned)__builtin_ctzll(v);
            size_t page = w * 64 + b;
            if (page >= pages)
                break;
            sink_run(s, page, 1);
            v &= v - 1;
            if (clear)
                bm[w] &= ~((uint64_t)1 << b);
        }
    }
    return 0;
}

static int sd_get(struct vidmm_writewatch *ww, bool reset, struct sink *s)
{
    pthread_mutex_lock(&sd_lock);
    int rc = sd_fds();
    if (rc == 0)
        rc = reset ? sd_cycle() : sd_fold(ww);
    if (rc == 0)
        rc = emit_bitmap(ww->acc, ww->pages, s, reset);
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

static int sd_reset(struct vidmm_writewatch *ww)
{
    pthread_mutex_lock(&sd_lock);
    int rc = sd_fds();
    if (rc == 0)
        rc = sd_cycle();
    if (rc == 0)
        memset(ww->acc, 0, ww->words * sizeof *ww->acc);
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * mprotect backend
 *
 * The region is read-only; the first write to a page raises SIGSEGV, mp_fault() sets the page's
 * bit and makes it writable, and the write is retried. Bits are set and cleared only under the
 * region's spin lock, with the protection change, so a get-with-reset sees a page either
 * written-and-writable (reports it, protects it again) or protected (its next write faults).
 * ------------------------------------------------------------------------------------------- */
static int mp_create(struct vidmm_writewatch *ww)
{
    ww->bits = calloc(ww->words, sizeof *ww->bits);
    if (ww->bits == NULL)
        return VIDMM_E_NO_MEMORY;
    atomic_flag_clear(&ww->spin);
    return 0;
}

/* mp_protect_run() protects pages [first, first + count) again and clears their bits; on failure
 * (ENOMEM) the bits stay set, so the pages are reported again. On hugetlb memory the whole huge
 * pages around the run are protected, and the bits of their pages outside the run stay as they
 * were (set: reported by a later call; a huge page is writable only with all its bits set).
 * Spin lock held. */
static void mp_protect_run(struct vidmm_writewatch *ww, size_t first, size_t count)
{
    size_t lo, hi;
    if (!mp_span_protect(ww, first, count, PROT_READ, &lo, &hi))
        return;
    for (size_t i = first; i < first + count; i++)
        atomic_fetch_and_explicit(&ww->bits[i / 64], ~((uint64_t)1 << (i % 64)), memory_order_relaxed);
}

static int mp_get(struct vidmm_writewatch *ww, bool reset, struct sink *s)
{
    uint64_t *snap = malloc(ww->words * sizeof *snap);
    if (snap == NULL)
        return VIDMM_E_NO_MEMORY;
    sigset_t old;
    if (reset)
        spin_lock_blocking(ww, &old);
    for (size_t w = 0; w < ww->words; w++)
        snap[w] = atomic_load_explicit(&ww->bits[w], memory_order_relaxed);
    if (!reset) {
        int rc = emit_bitmap(snap, ww->pages, s, false);
        free(snap);
        return rc;
    }
    /* Which pages this call takes: all written ones, or the first 'cap' of them. */
    size_t taken_end = ww->pages;   /* pages below this index that are set are taken */
    int more = 0;
    if (s->bitmap == NULL) {
        size_t n = 0;
        for (size_t w = 0; w < ww->words && taken_end == ww->pages; w++) {
            uint64_t v = snap[w];
            while (v != 0) {
                size_t page = w * 64 + (unsigned)__builtin_ctzll(v);
                if (page >= ww->pages)
                    break;
                if (n == s->cap) {
                    taken_end = page;
                    more = 1;
                    break;
                }
                n++;
                v &= v - 1;
            }
        }
    }
    if (taken_end == ww->pages) {
        /* Everything: one call protects the whole region (and merges its mappings back). */
        if (mprotect(ww->base, ww->size, PROT_READ) == 0) {
            for (size_t w = 0; w < ww->words; w++)
                atomic_store_explicit(&ww->bits[w], 0, memory_order_relaxed);
        }
    } else {
        for (size_t i = 0; i < taken_end;) {
            if (!(snap[i / 64] & ((uint64_t)1 << (i % 64)))) {
                i++;
                continue;
            }
            size_t j = i + 1;
            while (j < taken_end && (snap[j / 64] & ((uint64_t)1 << (j % 64))))
                j++;
            mp_protect_run(ww, i, j - i);
            i = j;
        }
    }
    spin_unlock_blocking(ww, &old);
    /* Report what was taken, outside the lock (the output may be anywhere but in the region). */
    if (taken_end < ww->pages) {
        for (size_t i = taken_end; i < ww->pages; i++)
            snap[i / 64] &= ~((uint64_t)1 << (i % 64));
    }
    (void)emit_bitmap(snap, ww->pages, s, false);
    free(snap);
    return more;
}

static int mp_reset(struct vidmm_writewatch *ww)
{
    sigset_t old;
    int rc = 0;
    spin_lock_blocking(ww, &old);
    if (mprotect(ww->base, ww->size, PROT_READ) == 0) {
        for (size_t w = 0; w < ww->words; w++)
            atomic_store_explicit(&ww->bits[w], 0, memory_order_relaxed);
    } else {
        rc = VIDMM_E_NO_MEMORY;
    }
    spin_unlock_blocking(ww, &old);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * fork() (see the top of this file). prepare takes the mutexes in the order the library takes
 * them (reg_lock before sd_lock, pm_lock last), so no soft-dirty clear and no region change is
 * under way in the child; the child then drops what threads it does not have were doing: their
 * places in the handler (a destroy would wait for them forever) and the spin locks of mprotect
 * regions (a write fault or get would spin forever). A region caught half-way through a get has
 * pages both protected and marked written: reported once more, never lost.
 * ------------------------------------------------------------------------------------------- */
static void fork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
    pthread_mutex_lock(&sd_lock);
    pthread_mutex_lock(&pm_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&pm_lock);
    pthread_mutex_unlock(&sd_lock);
    pthread_mutex_unlock(&reg_lock);
}

static void fork_child(void)
{
    atomic_store(&inflight, 0);
    int n = atomic_load(&slots_used);
    for (int i = 0; i < n; i++) {
        if (atomic_load(&slots[i].state) != SLOT_LIVE)
            continue;
        struct vidmm_writewatch *ww = atomic_load(&slots[i].ww);
        if (ww->backend == VIDMM_WRITEWATCH_MPROTECT)
            atomic_flag_clear(&ww->spin);
    }
    fork_parent();
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_init(void)
{
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---------------------------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------------------------- */
static int try_backend(struct vidmm_writewatch *ww, int b)
{
    switch (b) {
    case VIDMM_WRITEWATCH_UFFD:
        return uffd_create(ww);
    case VIDMM_WRITEWATCH_SOFTDIRTY:
        return sd_create(ww);
    case VIDMM_WRITEWATCH_MPROTECT:
        return mp_create(ww);
    default:
        return VIDMM_E_INVALID_ARG;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Range trackers for the engine (os.h vmos_wtrack_*): the uffd backend's mechanism without the
 * public region's bookkeeping - one registration for a whole pool mapping, and protection armed
 * and lifted per range, so the pages of the pool nobody locks never take a fault.
 * ------------------------------------------------------------------------------------------- */
struct vmos_wtrack {
    int uffd;
    uint8_t *base;
    size_t size;
    pid_t owner;    /* the creator: the fd acts on its memory from any process (uffd_destroy()) */
    bool lazy;      /* ranges are registered one by one (vmos_wtrack_register()) */
    bool probed;    /* PAGEMAP_SCAN answered for a registered page of it */
};

int vmos_wtrack_create(void *base, size_t size, struct vmos_wtrack **out)
{
    size_t pg = vmos_page_size();
    if (base == NULL || size == 0 || ((uintptr_t)base | size) % pg != 0 || out == NULL)
        return VIDMM_E_INVALID_ARG;
    int why, fd = uffd_handshake(&why);
    if (fd < 0)
        return VIDMM_E_UNSUPPORTED;
    struct uffdio_register reg;
    memset(&reg, 0, sizeof reg);
    reg.range.start = (uintptr_t)base;
    reg.range.len = size;
    reg.mode = UFFDIO_REGISTER_MODE_WP;
    if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
        close(fd);
        return VIDMM_E_UNSUPPORTED;
    }
    if (wp_async_probe((uintptr_t)base) != 0) {
        (void)ioctl(fd, UFFDIO_UNREGISTER, &reg.range);
        close(fd);
        return VIDMM_E_UNSUPPORTED;
    }
    struct vmos_wtrack *t = malloc(sizeof *t);
    if (t == NULL) {
        (void)ioctl(fd, UFFDIO_UNREGISTER, &reg.range);
        close(fd);
        return VIDMM_E_NO_MEMORY;
    }
    t->uffd = fd;
    t->base = base;
    t->size = size;
    t->owner = getpid();
    t->lazy = false;
    t->probed = true;
    *out = t;
    return 0;
}

int vmos_wtrack_create_lazy(void *base, size_t size, struct vmos_wtrack **out)
{
    size_t pg = vmos_page_size();
    if (base == NULL || size == 0 || ((uintptr_t)base | size) % pg != 0 || out == NULL)
        return VIDMM_E_INVALID_ARG;
    int why, fd = uffd_handshake(&why);
    if (fd < 0)
        return VIDMM_E_UNSUPPORTED;
    struct vmos_wtrack *t = malloc(sizeof *t);
    if (t == NULL) {
        close(fd);
        return VIDMM_E_NO_MEMORY;
    }
    t->uffd = fd;
    t->base = base;
    t->size = size;
    t->owner = getpid();
    t->lazy = true;
    t->probed = false;
    *out = t;
    return 0;
}

int vmos_wtrack_register(struct vmos_wtrack *t, void *p, size_t len)
{
    if ((uint8_t *)p < t->base || len > t->size || (size_t)((uint8_t *)p - t->base) > t->size - len)
        return VIDMM_E_INVALID_ARG;
    if (t->owner != getpid())
        return VIDMM_E_NOT_AVAILABLE;
    struct uffdio_register reg;
    memset(&reg, 0, sizeof reg);
    reg.range.start = (uintptr_t)p;
    reg.range.len = len;
    reg.mode = UFFDIO_REGISTER_MODE_WP;
    if (ioctl(t->uffd, UFFDIO_REGISTER, &reg) != 0)
        return errno == ENOMEM ? VIDMM_E_NO_MEMORY : VIDMM_E_UNSUPPORTED;
    if (!t->probed) {
        if (wp_async_probe((uintptr_t)p) != 0) {
            (void)ioctl(t->uffd, UFFDIO_UNREGISTER, &reg.range);
            return VIDMM_E_UNSUPPORTED;
        }
        t->probed = true;
    }
    return 0;
}

int vmos_wtrack_unregister(struct vmos_wtrack *t, void *p, size_t len)
{
    if ((uint8_t *)p < t->base || len > t->size || (size_t)((uint8_t *)p - t->base) > t->size - len)
        return VIDMM_E_INVALID_ARG;
    if (t->owner != getpid())
        return VIDMM_E_NOT_AVAILABLE;
    struct uffdio_range r = { (uintptr_t)p, len };
    while (ioctl(t->uffd, UFFDIO_UNREGISTER, &r) != 0)
        if (errno != EINTR && errno != EAGAIN)
            return scan_errno(errno);
    return 0;
}

void vmos_wtrack_destroy(struct vmos_wtrack *t)
{
    if (t == NULL)
        return;
    if (t->owner == getpid()) {
        struct uffdio_range r = { (uintptr_t)t->base, t->size };
        (void)ioctl(t->uffd, UFFDIO_UNREGISTER, &r);
    }
    close(t->uffd);
    free(t);
}

/* wtrack_protect() sets (wp) or lifts the write-protection of [p, p + len). */
static int wtrack_protect(struct vmos_wtrack *t, void *p, size_t len, bool wp)
{
    if ((uint8_t *)p < t->base || len > t->size || (size_t)((uint8_t *)p - t->base) > t->size - len)
        return VIDMM_E_INVALID_ARG;
    if (t->owner != getpid())
        return VIDMM_E_NOT_AVAILABLE;
    return uffd_protect(t->uffd, (uintptr_t)p, (uintptr_t)p + len, wp);
}

int vmos_wtrack_arm(struct vmos_wtrack *t, void *p, size_t len)
{
    return wtrack_protect(t, p, len, true);
}

int vmos_wtrack_disarm(struct vmos_wtrack *t, void *p, size_t len)
{
    return wtrack_protect(t, p, len, false);
}

int vmos_wtrack_collect(struct vmos_wtrack *t, void *p, size_t len, uint64_t *bitmap, bool lift)
{
    if ((uint8_t *)p < t->base || len > t->size || (size_t)((uint8_t *)p - t->base) > t->size - len)
        return VIDMM_E_INVALID_ARG;
    if (t->owner != getpid())
        return VIDMM_E_NOT_AVAILABLE;
    struct sink s = { NULL, 0, bitmap, 0, false };
    int rc = uffd_scan((uintptr_t)p, (uintptr_t)p, (uintptr_t)p + len, false, &s);
    if (rc != 0)
        return rc;
    return lift ? wtrack_protect(t, p, len, false) : 0;
}

/* vmos_wtrack_count() counts the pages of [p, p + len) written since the arm, changing nothing
 * (a PAGEMAP_SCAN without write-protecting: about 2 ns a page with few written, 10-20 ns with
 * every page written, on the Cascade Lake KVM machine of bench_track_costs). */
int vmos_wtrack_count(struct vmos_wtrack *t, void *p, size_t len, size_t *written)
{
    if ((uint8_t *)p < t->base || len > t->size || (size_t)((uint8_t *)p - t->base) > t->size - len)
        return VIDMM_E_INVALID_ARG;
    if (t->owner != getpid())
        return VIDMM_E_NOT_AVAILABLE;
    const size_t words = (len / vmos_page_size() + 63) / 64;
    uint64_t *bits = calloc(words, sizeof *bits);
    if (bits == NULL)
        return VIDMM_E_NO_MEMORY;
    struct sink s = { NULL, 0, bits, 0, false };
    int rc = uffd_scan((uintptr_t)p, (uintptr_t)p, (uintptr_t)p + len, false, &s);
    free(bits);
    if (rc == 0)
        *written = s.n;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * What tracking costs here (os.h vmos_wtrack_measure()): measured once per process and kind of
 * memory on a scratch mapping of its own, never on the caller's memory.
 * ------------------------------------------------------------------------------------------- */
#define COST_PAGES 64u   /* 256 KiB: a few hundred us once, and past the per-call noise */
#define COST_REPS 3      /* the best of three: a loaded machine only ever adds time */

static uint64_t cost_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cost_touch(volatile uint8_t *m, size_t pg)
{
    for (size_t i = 0; i < COST_PAGES; i++)
        m[i * pg + 17] ^= 1;
}

static int cost_measure(bool shared, struct vmos_wtrack_costs *out)
{
    const size_t pg = vmos_page_size(), len = COST_PAGES * pg;
    void *m;
    if (shared) {
        int mfd = memfd_create("vidmm-wtrack-cost", MFD_CLOEXEC);
        if (mfd < 0)
            return VIDMM_E_UNSUPPORTED;
        if (ftruncate(mfd, (off_t)len) != 0) {
            close(mfd);
            return VIDMM_E_NO_MEMORY;
        }
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
        close(mfd);
    } else {
        m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (m == MAP_FAILED)
        return VIDMM_E_NO_MEMORY;
    (void)madvise(m, len, MADV_NOHUGEPAGE); /* the pools' base pages: a huge page faults once */
    memset(m, 1, len);
    struct vmos_wtrack *t = NULL;
    int rc = vmos_wtrack_create(m, len, &t);
    uint64_t best_fixed = UINT64_MAX, best_arm = UINT64_MAX, best_fault = UINT64_MAX;
    uint64_t best_protect = UINT64_MAX, best_scan = UINT64_MAX, best_lift = UINT64_MAX;
    for (int r = 0; rc == 0 && r < COST_REPS; r++) {
        uint64_t t0 = cost_now_ns();
        rc = vmos_wtrack_arm(t, m, pg); /* one page: the calls' own cost */
        uint64_t t1 = cost_now_ns();
        if (rc == 0)
            rc = vmos_wtrack_disarm(t, m, pg);
        uint64_t t2 = cost_now_ns();
        if (rc == 0)
            rc = vmos_wtrack_arm(t, m, len);
        uint64_t t3 = cost_now_ns();
        size_t nc = 0; /* scans with nothing written: of one page (the call), of all of them */
        if (rc == 0)
            rc = vmos_wtrack_count(t, m, pg, &nc);
        uint64_t ta = cost_now_ns();
        if (rc == 0)
            rc = vmos_wtrack_count(t, m, len, &nc);
        uint64_t tb = cost_now_ns(); /* the faults below are timed from here */
        cost_touch(m, pg);  /* a first write to each page: the fault */
        uint64_t t4 = cost_now_ns();
        cost_touch(m, pg);  /* again: the writes alone */
        uint64_t t5 = cost_now_ns();
        size_t n = 0;
        if (rc == 0)
            rc = vmos_wtrack_count(t, m, len, &n);
        uint64_t t6 = cost_now_ns();
        if (rc == 0)
            rc = vmos_wtrack_disarm(t, m, len);
        uint64_t t7 = cost_now_ns();
        cost_touch(m, pg);  /* after the lift (on shared memory it leaves the pages read-only) */
        uint64_t fixed = (t1 - t0) + (t2 - t1), arm = (t3 - t2) + (t6 - t5) + (t7 - t6);
        uint64_t writes = t5 - t4, faults = t4 - tb;
        best_fixed = fixed < best_fixed ? fixed : best_fixed;
        best_arm = arm < best_arm ? arm : best_arm;
        /* The parts, each less its one-page call where it has one (the calls' own cost). */
        const uint64_t protect = t3 - t2 > t1 - t0 ? (t3 - t2) - (t1 - t0) : 0;
        const uint64_t lift = t7 - t6 > t2 - t1 ? (t7 - t6) - (t2 - t1) : 0;
        /* A scan's pages: all of them less one (the call itself), nothing written. */
        const uint64_t scan = tb - ta > ta - t3 ? (tb - ta) - (ta - t3) : 0;
        best_protect = protect < best_protect ? protect : best_protect;
        best_scan = scan < best_scan ? scan : best_scan;
        best_lift = lift < best_lift ? lift : best_lift;
        if (faults > writes && faults - writes < best_fault)
            best_fault = faults - writes;
    }
    vmos_wtrack_destroy(t);
    munmap(m, len);
    if (rc != 0)
        return rc;
    out->fixed_ns = (uint32_t)(best_fixed < UINT32_MAX ? best_fixed : UINT32_MAX);
    out->arm_ns = (uint32_t)((best_arm > best_fixed ? best_arm - best_fixed : 0) / COST_PAGES);
    out->fault_ns = (uint32_t)(best_fault == UINT64_MAX ? 0 : best_fault / COST_PAGES);
    out->protect_ns = (uint32_t)(best_protect / COST_PAGES);
    out->scan_ns = (uint32_t)(best_scan / (COST_PAGES - 1));
    out->lift_ns = (uint32_t)(best_lift / COST_PAGES);
    return 0;
}

/* The figures per kind (0 private, 1 shared), once per process; the race of two first callers
 * is benign: both store what they measured. */
static pthread_mutex_t cost_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmos_wtrack_costs cost_cache[2];
static int cost_state[2]; /* 0 unknown, 1 measured, < 0 the error */

int vmos_wtrack_measure(bool shared, struct vmos_wtrack_costs *out)
{
    const int k = shared ? 1 : 0;
    pthread_mutex_lock(&cost_lock);
    int st = cost_state[k];
    struct vmos_wtrack_costs c = cost_cache[k];
    pthread_mutex_unlock(&cost_lock);
    if (st == 0) {
        int rc = cost_measure(shared, &c);
        pthread_mutex_lock(&cost_lock);
        cost_state[k] = st = rc == 0 ? 1 : rc;
        cost_cache[k] = c;
        pthread_mutex_unlock(&cost_lock);
    }
    if (st < 0)
        return st;
    *out = c;
    return 0;
}

int vidmm_writewatch_create(const struct vidmm_writewatch_desc *desc, vidmm_writewatch **out)
{
    static const char call[] = "vidmm_writewatch_create";
    if (desc == NULL || out == NULL)
        return vidmm_refuse(call, desc == NULL ? "desc" : "out", "NULL", "writewatch.h");
    if (desc->size_of < sizeof(struct vidmm_writewatch_desc))
        return vidmm_refuse(call, "size_of", "smaller than the descriptor", "writewatch.h");
    size_t pg = vmos_page_size();
    uintptr_t start = (uintptr_t)desc->base;
    if (desc->base == NULL || (start & (pg - 1)) != 0)
        return vidmm_refuse(call, "base", "NULL or not page-aligned", "writewatch.h");
    if (desc->size == 0 || (desc->size & (pg - 1)) != 0 || !vidmm_range_ok(desc->base, desc->size) ||
        start + desc->size == 0)
        return vidmm_refuse(call, "size", "0, not a multiple of the page size, or wraps", "writewatch.h");
    if (desc->backend > VIDMM_WRITEWATCH_MPROTECT)
        return vidmm_refuse(call, "backend", "unknown", "writewatch.h");
    if ((desc->flags & ~VIDMM_WRITEWATCH_QUIET) != 0)
        return vidmm_refuse(call, "flags", "unknown bits", "writewatch.h");

    pthread_once(&env_once, env_init);
    pthread_once(&atfork_once, atfork_init);
    struct vidmm_writewatch *ww = calloc(1, sizeof *ww);
    if (ww == NULL)
        return VIDMM_E_NO_MEMORY;
    ww->owner = getpid();
    ww->base = desc->base;
    ww->size = desc->size;
    ww->pages = desc->size / pg;
    ww->words = (ww->pages + 63) / 64;
    ww->uffd = -1;
    ww->quiet = (desc->flags & VIDMM_WRITEWATCH_QUIET) != 0;

    pthread_mutex_lock(&reg_lock);
    int rc = table_reserve(start, start + desc->size, &ww->slot);
    if (rc != 0) {
        pthread_mutex_unlock(&reg_lock);
        free(ww);
        return rc;
    }
    /* Candidates in order: the descriptor's backend alone; else the environment's, then the
     * automatic order. */
    int order[4], n = 0;
    if (desc->backend != VIDMM_WRITEWATCH_AUTO) {
        order[n++] = (int)desc->backend;
    } else {
        if (env_backend != VIDMM_WRITEWATCH_AUTO)
            order[n++] = env_backend;
        for (int b = VIDMM_WRITEWATCH_UFFD; b <= VIDMM_WRITEWATCH_MPROTECT; b++)
            if (b != env_backend)
                order[n++] = b;
    }
    rc = VIDMM_E_UNSUPPORTED;
    for (int i = 0; i < n; i++) {
        int b = order[i];
        if (b != VIDMM_WRITEWATCH_UFFD) {
            rc = install_segv();
            if (rc != 0)
                continue;
        }
        /* A soft-dirty clear makes regions read-only and must find this one in the table (the
         * handler reads 'backend' once the slot is published). */
        ww->backend = b;
        if (b == VIDMM_WRITEWATCH_SOFTDIRTY)
            table_publish(ww->slot, ww);
        rc = try_backend(ww, b);
        if (rc == 0)
            break;
        if (b == VIDMM_WRITEWATCH_SOFTDIRTY) {
            atomic_store(&slots[ww->slot].state, SLOT_RESERVED);
            wait_no_handler();
        }
        if (i == 0 && desc->backend == VIDMM_WRITEWATCH_AUTO && env_backend != VIDMM_WRITEWATCH_AUTO)
            vidmm_log(VIDMM_LOG_WARN, "VIDMM_WRITEWATCH=%s: unavailable here; trying the others",
                      backend_names[env_backend]);
        if (rc == VIDMM_E_NO_MEMORY)
            break;
    }
    if (rc != 0) {
        table_release(ww->slot);
        pthread_mutex_unlock(&reg_lock);
        free(ww);
        return rc;
    }
    if (ww->backend == VIDMM_WRITEWATCH_MPROTECT) {
        table_publish(ww->slot, ww);
        if (mprotect(ww->base, ww->size, PROT_READ) != 0) {
            atomic_store(&slots[ww->slot].state, SLOT_FREE);
            wait_no_handler();
            pthread_mutex_unlock(&reg_lock);
            free((void *)ww->bits);
            free(ww);
            return VIDMM_E_NO_MEMORY;
        }
    } else if (ww->backend == VIDMM_WRITEWATCH_UFFD) {
        table_publish(ww->slot, ww);
    }
    pthread_mutex_unlock(&reg_lock);
    vidmm_log(VIDMM_LOG_DEBUG, "vidmm_writewatch: %zu pages at %p on %s", ww->pages, (void *)ww->base,
              backend_names[ww->backend]);
    *out = ww;
    return 0;
}

void vidmm_writewatch_destroy(vidmm_writewatch *ww)
{
    if (ww == NULL)
        return;
    switch (ww->backend) {
    case VIDMM_WRITEWATCH_UFFD:
        uffd_destroy(ww);
        break;
    case VIDMM_WRITEWATCH_SOFTDIRTY:
        sd_destroy(ww); /* out of the list first: no clear will make it read-only again */
        break;
    case VIDMM_WRITEWATCH_MPROTECT: {
        sigset_t old;
        spin_lock_blocking(ww, &old);
        (void)mprotect(ww->base, ww->size, PROT_READ | PROT_WRITE);
        spin_unlock_blocking(ww, &old);
        break;
    }
    default:
        break;
    }
    pthread_mutex_lock(&reg_lock);
    atomic_store(&slots[ww->slot].state, SLOT_DEAD);
    wait_no_handler();
    pthread_mutex_unlock(&reg_lock);
    free((void *)ww->bits);
    free(ww);
}

static int do_get(vidmm_writewatch *ww, bool reset, struct sink *s)
{
    switch (ww->backend) {
    case VIDMM_WRITEWATCH_UFFD:
        return uffd_get(ww, reset, s);
    case VIDMM_WRITEWATCH_SOFTDIRTY:
        return sd_get(ww, reset, s);
    default:
        return mp_get(ww, reset, s);
    }
}

int vidmm_writewatch_get(vidmm_writewatch *ww, bool reset, uint64_t *pages, size_t capacity, size_t *count)
{
    if (ww == NULL || count == NULL || (pages == NULL && capacity > 0))
        return vidmm_refuse(__func__, ww == NULL ? "ww" : count == NULL ? "count" : "pages", "NULL",
                            "writewatch.h");
    struct sink s = { pages, capacity, NULL, 0, capacity == 0 };
    int rc = do_get(ww, reset, &s);
    *count = rc >= 0 ? s.n : 0;
    return rc;
}

int vidmm_writewatch_get_bitmap(vidmm_writewatch *ww, bool reset, uint64_t *bitmap, size_t words, size_t *count)
{
    if (ww == NULL || bitmap == NULL || words < ww->words)
        return vidmm_refuse(__func__, ww == NULL ? "ww" : bitmap == NULL ? "bitmap" : "words",
                            "NULL, or fewer words than the region has pages / 64", "writewatch.h");
    memset(bitmap, 0, ww->words * sizeof *bitmap);
    struct sink s = { NULL, 0, bitmap, 0, false };
    int rc = do_get(ww, reset, &s);
    if (count != NULL)
        *count = rc >= 0 ? s.n : 0;
    return rc < 0 ? rc : 0;
}

int vidmm_writewatch_reset(vidmm_writewatch *ww)
{
    if (ww == NULL)
        return vidmm_refuse(__func__, "ww", "NULL", "writewatch.h");
    switch (ww->backend) {
    case VIDMM_WRITEWATCH_UFFD:
        return uffd_reset(ww);
    case VIDMM_WRITEWATCH_SOFTDIRTY:
        return sd_reset(ww);
    default:
        return mp_reset(ww);
    }
}

int vidmm_writewatch_backend(const vidmm_writewatch *ww)
{
    if (ww == NULL)
        return VIDMM_E_INVALID_ARG;
    return ww->backend;
}

size_t vidmm_writewatch_pages(const vidmm_writewatch *ww)
{
    return ww != NULL ? ww->pages : 0;
}
