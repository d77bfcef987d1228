/* SPDX-License-Identifier: MIT */
/* lib/engine/os/uffd_compat.h - userfaultfd and pagemap interfaces newer than Debian 12's kernel
 * headers, for the write-watch (writewatch.c) and the lazy swizzling-range views (lazyview.c). */
#ifndef VIDMM_LIB_ENGINE_OS_UFFD_COMPAT_H
#define VIDMM_LIB_ENGINE_OS_UFFD_COMPAT_H

#include <linux/fs.h>
#include <linux/types.h>
#include <linux/userfaultfd.h>

/* Valgrind 3.19 does not know the PAGEMAP_SCAN ioctl: memory the kernel wrote through it is
 * defined, which memcheck is told where its header is installed (a client request: a few
 * instructions outside Valgrind). */
#if defined(__has_include)
#  if __has_include(<valgrind/memcheck.h>)
#    include <valgrind/memcheck.h>
#    define VMOS_MEM_DEFINED(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#  endif
#endif
#ifndef VMOS_MEM_DEFINED
#  define VMOS_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

/* ---------------------------------------------------------------------------------------------
 * Kernel interfaces newer than Debian 12's headers (linux-libc-dev 6.1). Values are those of
 * the kernel's uAPI; the layouts are documented in ioctl_pagemap_scan(2) (man-pages 6.7) and in
 * Documentation/admin-guide/mm/pagemap.rst and userfaultfd.rst.
 * ------------------------------------------------------------------------------------------- */
/* include/uapi/linux/userfaultfd.h: WP_UNPOPULATED (Linux 6.4) write-protects pages that are not
 * populated yet, so the first write to them is recorded too; WP_ASYNC (Linux 6.7) has the kernel
 * resolve write-protect faults itself, clearing the page's uffd-wp bit, instead of queueing a
 * message for a handler thread. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#  define UFFD_FEATURE_WP_UNPOPULATED (1u << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#  define UFFD_FEATURE_WP_ASYNC (1u << 15)
#endif

/* include/uapi/linux/userfaultfd.h, Linux 6.8: UFFDIO_MOVE moves anonymous pages from one
 * address of the process to another (page-table entries, not bytes), the destination inside a
 * registered range. The moved entry is writable and not write-protected, whatever the source's
 * was; a page pinned or shared (fork) does not move (EBUSY). */
#ifndef UFFD_FEATURE_MOVE
#  define UFFD_FEATURE_MOVE (1u << 16)
#endif
#ifndef UFFDIO_MOVE
struct uffdio_move {
    __u64 dst;
    __u64 src;
    __u64 len;
    __u64 mode;         /* UFFDIO_MOVE_MODE_* */
    __s64 move;         /* out: bytes moved, or -errno */
};
#  define _UFFDIO_MOVE (0x05)
#  define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#  define UFFDIO_MOVE_MODE_DONTWAKE ((__u64)1 << 0)
#  define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
#endif

/* include/uapi/linux/fs.h, Linux 6.7: the PAGEMAP_SCAN ioctl on /proc/<pid>/pagemap. */
#ifndef PAGEMAP_SCAN
struct page_region {
    __u64 start;        /* first byte of a run of pages with the same categories */
    __u64 end;          /* one past the last byte */
    __u64 categories;   /* PAGE_IS_* of the run, masked with return_mask */
};
struct pm_scan_arg {
    __u64 size;                 /* sizeof(struct pm_scan_arg) */
    __u64 flags;                /* PM_SCAN_* */
    __u64 start, end;           /* the range, page-aligned */
    __u64 walk_end;             /* out: where the walk stopped (end when it completed) */
    __u64 vec, vec_len;         /* array of struct page_region for the output */
    __u64 max_pages;            /* stop after this many matching pages; 0: no limit */
    __u64 category_inverted;    /* categories that match when clear */
    __u64 category_mask;        /* a page matches when all of these match */
    __u64 category_anyof_mask;  /* ... and at least one of these, when non-zero */
    __u64 return_mask;          /* categories reported in page_region.categories */
};
#  define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif
#ifndef PAGE_IS_WRITTEN
#  define PAGE_IS_WRITTEN (1u << 1)     /* written since it was (async) write-protected */
#  define PAGE_IS_PRESENT (1u << 3)     /* in memory */
#  define PAGE_IS_SWAPPED (1u << 4)     /* swapped out */
#endif
#ifndef PM_SCAN_WP_MATCHING
#  define PM_SCAN_WP_MATCHING (1u << 0)   /* write-protect the pages reported */
#  define PM_SCAN_CHECK_WPASYNC (1u << 1) /* fail (EPERM) where async write-protect is not on */
#endif

#endif /* VIDMM_LIB_ENGINE_OS_UFFD_COMPAT_H */
