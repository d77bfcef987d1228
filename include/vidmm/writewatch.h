/* SPDX-License-Identifier: MIT */
/* include/vidmm/writewatch.h - write-watch for the caller's own memory: register a region, ask
 * which of its pages were written since the last reset, reset, unregister (what Windows offers
 * as MEM_WRITE_WATCH with GetWriteWatch / ResetWriteWatch). An emulator uses it to find the
 * guest pages a CPU thread wrote (texture caches, shader caches, dirty video memory).
 *
 * Three backends, tried in this order unless one is forced:
 *   - VIDMM_WRITEWATCH_UFFD: userfaultfd asynchronous write-protect (UFFD_FEATURE_WP_ASYNC,
 *     Linux 6.7) with the PAGEMAP_SCAN ioctl of /proc/self/pagemap (Linux 6.7), which reads the
 *     written pages and write-protects them again in one pass. The kernel resolves the first
 *     write to each page itself: no signal, no handler thread. Writes made by the kernel on the
 *     process's behalf (read(2) into the region) are seen. bench/bench_writewatch.c measures
 *     the first-write and get+reset costs of each backend.
 *   - VIDMM_WRITEWATCH_SOFTDIRTY: the soft-dirty bits of the page tables (CONFIG_MEM_SOFT_DIRTY):
 *     /proc/self/pagemap bit 55 read, "4" written to /proc/self/clear_refs to clear. Kernel
 *     writes are seen. Clearing is process-wide: it clears the bits of every page of the
 *     process, so the library folds the bits of every soft-dirty region into a per-region
 *     record before each clear, and no region loses a write to another region's reset. During
 *     that clear every soft-dirty region is briefly made read-only: a thread writing one then
 *     waits in the library's SIGSEGV handler until the clear is over (see "Signals"), and a
 *     kernel write into one in that window fails with EFAULT. Soft-dirty may report more
 *     pages than were written (never fewer): a transparent huge page is tracked as a whole, and
 *     a mapping the kernel merges into the region's VMA marks the whole VMA once. Each clear
 *     also write-protects every page of the process, so the first later write to any page,
 *     watched or not, takes a minor fault.
 *   - VIDMM_WRITEWATCH_MPROTECT: the region is kept read-only and a SIGSEGV handler records
 *     the first write to each page and makes that page writable. Works everywhere; costs a
 *     signal per first write. A kernel write into a protected page fails with EFAULT (the
 *     system call returns it; no signal is raised). Each written page becomes a mapping of its
 *     own until the next reset: when the kernel refuses to split further (vm.max_map_count),
 *     the whole region is made writable and reported written until the next reset.
 *
 * Signals. The soft-dirty and mprotect backends install one process-wide SIGSEGV handler (on
 * the first region that needs it; it stays installed, also while regions are destroyed as
 * other threads fault on them). A fault outside every watched region goes to the handler that
 * was installed before (SA_SIGINFO or not); when that was SIG_DFL or SIG_IGN the default action
 * is restored and the fault happens again, so the process dies as it would have. Clash risk: a
 * handler the application installs later for SIGSEGV replaces ours, and writes to mprotect
 * regions then reach the application's handler instead (it must chain to the one it replaced);
 * sigaltstack, if the application wants one, stays its own. The uffd backend uses no signal.
 * The application's own handlers of other signals may write watched regions at any time, on any
 * thread: such writes are tracked like any other. The library's SIGSEGV handler runs with every
 * signal blocked, and a thread inside a library call that holds a region's lock or keeps the
 * soft-dirty regions read-only blocks every signal meanwhile; a signal that arrives then is
 * delivered when the handler or that step returns, never in the middle of it.
 *
 * Granularity: the host's base page (4096 bytes on x86-64); page index i of a region covers
 * bytes [i * page, (i + 1) * page) from its base.
 *
 * Huge pages. A transparent huge page is split on its first write by the uffd backend (exact
 * base pages), tracked whole by soft-dirty (see above) and split by mprotect. hugetlb memory
 * (MAP_HUGETLB, hugetlbfs) is never split: the region must start and end on its huge page
 * boundaries (else create fails), and the unit is the huge page - a write to any byte of one
 * reports all of its base pages (uffd, mprotect), and soft-dirty may keep reporting a hugetlb
 * page written after resets (reports are supersets, never fewer). Every call works with any
 * array: a get with reset whose array cannot take all the pages of a written huge page returns
 * the ones that fit (1: more remain) and keeps the others written for the next call, although
 * the kernel can protect a huge page again only whole. Tested on 2 MiB hugetlb pages only; with
 * the uffd backend on 1 GiB pages, a kernel whose PAGEMAP_SCAN takes every 1 GiB page for a
 * partial one would make a get with reset fail with VIDMM_E_IO (nothing lost: the pages stay
 * reported as written) - use the mprotect backend there.
 *
 * Fork (fork()): the child's writes are never reported to the parent, and nothing the child
 * does with the handles it inherited changes the parent's tracking. A handle belongs to the
 * process that created it, and in the child:
 *   - uffd: the kernel drops the child's registration (the library asks for no fork events), and
 *     the userfaultfd both processes share still acts on the parent's memory. So the child's
 *     vidmm_writewatch_get(), _get_bitmap() and _reset() on an inherited uffd handle fail with
 *     VIDMM_E_NOT_AVAILABLE, and its vidmm_writewatch_destroy() only frees the child's copy (it
 *     closes the child's fd without unregistering; the child's memory is plain writable memory
 *     already). The child may register the range anew after destroying its copy.
 *   - softdirty and mprotect: the handle goes on tracking the child's own copy of the memory in
 *     the child (its written set starts as the parent's at the fork), and destroy works as usual.
 * The library's locks are taken around fork() (pthread_atfork), so a fork while other threads
 * are inside library calls or fault on watched pages still leaves the child free to use and
 * destroy every handle it inherited.
 *
 * Thread safety: any thread may write the regions at any time. vidmm_writewatch_get(),
 * _get_bitmap() and _reset() may be called from any thread, also on one region at once; a write
 * racing a get-with-reset or a reset is reported by that call or by the next one, never lost.
 * vidmm_writewatch_destroy() must not race other calls on the same handle (writes to the memory
 * may go on). Different regions are independent, apart from soft-dirty resets (see above).
 * The output arrays of the get calls must not lie in a softdirty or mprotect region.
 *
 * Environment: VIDMM_WRITEWATCH=uffd|softdirty|mprotect|auto picks the backend of regions whose
 * descriptor says VIDMM_WRITEWATCH_AUTO (read once per process); when that backend cannot be had,
 * one warning is logged and the automatic order is used. A backend named in the descriptor wins
 * over the environment and is never replaced by another. */
#ifndef VIDMM_WRITEWATCH_H
#define VIDMM_WRITEWATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "api.h"
#include "common.h"

VIDMM_BEGIN_DECLS

typedef struct vidmm_writewatch vidmm_writewatch;

/* How the written pages are found. */
enum vidmm_writewatch_backend {
    VIDMM_WRITEWATCH_AUTO = 0,       /* VIDMM_WRITEWATCH, else uffd, then softdirty, then mprotect */
    VIDMM_WRITEWATCH_UFFD = 1,       /* userfaultfd WP_ASYNC + PAGEMAP_SCAN (Linux 6.7+) */
    VIDMM_WRITEWATCH_SOFTDIRTY = 2,  /* soft-dirty bits: /proc/self/pagemap + clear_refs */
    VIDMM_WRITEWATCH_MPROTECT = 3    /* read-only pages and a SIGSEGV handler */
};

/* A region to watch. The memory must be a private or shared mapping of the caller's, readable
 * and writable (PROT_READ | PROT_WRITE) over all of [base, base + size), and must stay mapped
 * until vidmm_writewatch_destroy(). The softdirty and mprotect backends change its protection
 * and put PROT_READ | PROT_WRITE back at destroy. */
struct vidmm_writewatch_desc {
    size_t size_of;             /* sizeof(struct vidmm_writewatch_desc) */
    void *base;                 /* page-aligned, != NULL */
    size_t size;                /* bytes: > 0, a multiple of the page size */
    uint32_t backend;           /* enum vidmm_writewatch_backend */
    uint32_t flags;             /* VIDMM_WRITEWATCH_* flags below, or 0 */
};
/* Flags. QUIET: a backend the kernel refuses is reported by the return code alone (the reason
 * goes to the log at VIDMM_LOG_DEBUG, not WARN) - for callers that probe and fall back, as the
 * engine does for its swizzling-range views. */
#define VIDMM_WRITEWATCH_QUIET (1u << 0)
#define VIDMM_WRITEWATCH_DESC_INIT { sizeof(struct vidmm_writewatch_desc), NULL, 0, 0, 0 }

/* vidmm_writewatch_create() starts watching the region of 'desc'; every page starts unwritten.
 * Regions may not overlap one another (whatever their backends).
 * Returns: 0 with '*out' set, VIDMM_E_INVALID_ARG (NULL pointer, bad size_of, base or size not
 * page-aligned, size 0, range wrapping the address space, unknown backend, unknown flags),
 * VIDMM_E_OVERLAP (the range overlaps a watched region), VIDMM_E_UNSUPPORTED (the backend the
 * descriptor names cannot be had here, or none at all: the reason is logged at VIDMM_LOG_WARN),
 * VIDMM_E_NO_MEMORY. On failure nothing changed: the memory's protection is as it was.
 * Ownership: the handle is the caller's; release it with vidmm_writewatch_destroy(). */
VIDMM_API int vidmm_writewatch_create(const struct vidmm_writewatch_desc *desc, vidmm_writewatch **out);

/* vidmm_writewatch_destroy() stops watching and frees the handle. The memory stays mapped, with
 * PROT_READ | PROT_WRITE, its content untouched. NULL is ignored. Threads may go on writing the
 * region meanwhile. In a forked child, destroying an inherited uffd handle frees the child's
 * copy only: the parent's region stays watched (see "Fork"). */
VIDMM_API void vidmm_writewatch_destroy(vidmm_writewatch *ww);

/* vidmm_writewatch_get() stores in 'pages' (ascending) the index of each page written since the
 * last reset, at most 'capacity' of them, and their number in '*count'. With 'reset' the pages
 * stored are marked unwritten again, in the same step; pages that did not fit stay written and
 * come first in the next call. 'pages' may be NULL when capacity is 0 (a question: anything
 * written?).
 * Returns: 0 (every written page was stored), 1 (the array filled up and more written pages
 * remain), VIDMM_E_INVALID_ARG (NULL 'ww' or 'count', NULL 'pages' with capacity > 0),
 * VIDMM_E_NOT_AVAILABLE (a uffd handle in a process other than its creator: see "Fork"),
 * VIDMM_E_NO_MEMORY or VIDMM_E_IO (the kernel refused the scan: nothing was reset - every page
 * that read written before the call still does).
 * Thread safety: see the top of this file. */
VIDMM_API int vidmm_writewatch_get(vidmm_writewatch *ww, bool reset, uint64_t *pages, size_t capacity,
                                   size_t *count);

/* vidmm_writewatch_get_bitmap() is vidmm_writewatch_get() into a bitmap: bit (i % 64) of
 * 'bitmap[i / 64]' is set when page i was written; 'words' must cover every page of the region
 * (vidmm_writewatch_pages() + 63) / 64; bits past the last page are cleared. '*count' (may be
 * NULL) receives the number of written pages.
 * Returns: 0, VIDMM_E_INVALID_ARG (NULL 'ww' or 'bitmap', 'words' too small),
 * VIDMM_E_NOT_AVAILABLE (as vidmm_writewatch_get()), VIDMM_E_NO_MEMORY, VIDMM_E_IO (nothing was
 * reset). */
VIDMM_API int vidmm_writewatch_get_bitmap(vidmm_writewatch *ww, bool reset, uint64_t *bitmap, size_t words,
                                          size_t *count);

/* vidmm_writewatch_reset() marks every page of the region unwritten.
 * Returns: 0, VIDMM_E_INVALID_ARG (NULL), VIDMM_E_NOT_AVAILABLE (as vidmm_writewatch_get()),
 * VIDMM_E_NO_MEMORY or VIDMM_E_IO (the kernel refused: pages may still read as written, none is
 * lost). */
VIDMM_API int vidmm_writewatch_reset(vidmm_writewatch *ww);

/* vidmm_writewatch_backend() returns the enum vidmm_writewatch_backend the region runs on
 * (never AUTO), or VIDMM_E_INVALID_ARG for NULL. */
VIDMM_API int vidmm_writewatch_backend(const vidmm_writewatch *ww);

/* vidmm_writewatch_pages() returns the number of pages of the region (0 for NULL). */
VIDMM_API size_t vidmm_writewatch_pages(const vidmm_writewatch *ww);

/* vidmm_writewatch_backend_name() returns "auto", "uffd", "softdirty" or "mprotect", NULL for an
 * unknown value. Lifetime: a static string. */
VIDMM_API const char *vidmm_writewatch_backend_name(int backend);

VIDMM_END_DECLS

#endif /* VIDMM_WRITEWATCH_H */
