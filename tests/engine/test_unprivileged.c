/* SPDX-License-Identifier: MIT */
/* tests/engine/test_unprivileged.c - issue 16's "no privilege" fallbacks, for real: each test
 * drops from root to nobody (setuid(65534): no capabilities left), where the kernel
 * (vm.unprivileged_userfaultfd = 0, the default) gives only UFFD_USER_MODE_ONLY userfaultfds,
 * under which a fault raised by the kernel itself is not delivered. Then:
 *   - a device asking for lazy range views gets eager views (a lazy view needs the kernel's
 *     own accesses served: write(2) from an untouched page would fail with EFAULT), byte for
 *     byte the surface, and the kernel can read from and write into them;
 *   - the range unlock's write-watch and the plain lock's write tracking (asynchronous
 *     write-protect, which the kernel resolves by itself, for its own writes too) still see
 *     every write, read(2) into the locked memory included: nothing written is lost.
 * Skips, saying why, when not run as root (nothing to drop), when the kernel lets nobody have
 * a full userfaultfd (nothing to test), or without a userfaultfd at all. */
#define _GNU_SOURCE
#include "t_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#define NOBODY 65534

static void become_nobody(void)
{
    if (geteuid() != 0)
        cr_skip_test("not root: there is no privilege to drop (run the suite as root to include this)");
    if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
        cr_skip_test("cannot become nobody: %s", strerror(errno));
    cr_assert_eq(geteuid(), (uid_t)NOBODY);
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        close(fd);
        cr_skip_test("this kernel gives nobody the full userfaultfd (vm.unprivileged_userfaultfd = 1): "
                     "the unprivileged case does not arise");
    }
    fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0)
        cr_skip_test("no userfaultfd at all for nobody here (%s)", strerror(errno));
    close(fd);
}

static vidmm_device *range_dev(uint32_t flags)
{
    static struct vidmm_segment_desc segs[1];
    segs[0] = t_mem_seg(T_VIS_BASE, 16 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(segs, 1);
    dd.swizzling_ranges = 2;
    dd.flags |= flags;
    return t_dev(&dd);
}

static unsigned char *range_lock(vidmm_device *dev, vidmm_handle h, uint32_t flags)
{
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | flags);
    int rc = vidmm_lock(dev, &a);
    cr_assert_eq(rc, 0, "range lock: %s", vidmm_strerror(rc));
    return a.data;
}

Test(unprivileged, lazy_ranges_fall_back_to_eager_views)
{
    become_nobody();
    vidmm_device *dev = range_dev(VIDMM_DEVICE_LAZY_RANGES);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 1024, 512, 1, 4, 1, 1); /* 2 MiB */
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled), *want = malloc((size_t)s.linear);
    cr_assert(tiled && want);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 21);
    cr_assert_eq(vidmm_deswizzle_surface(&s.layout, &s.desc, tiled, s.tiled, want, s.linear), 0);
    unsigned char *p = range_lock(dev, h, 0);
    /* Eager: every page of the view is there at once (a lazy view would have none). */
    const size_t pages = (size_t)((s.linear + T_PG - 1) / T_PG);
    cr_assert_eq(t_resident_pages(p, (size_t)s.linear), pages, "the view is not filled: a lazy view without "
                 "the privilege its kernel accesses need");
    cr_assert_eq(memcmp(p, want, (size_t)s.linear), 0, "the view does not show the surface");
    /* The kernel reads from the view and writes into it. */
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    const size_t off = 700000, n = 3 * T_PG;
    cr_assert_eq(write(fd[1], p + off, n), (ssize_t)n, "write(2) from the view: %s", strerror(errno));
    unsigned char back[3 * T_PG];
    cr_assert_eq(read(fd[0], back, n), (ssize_t)n);
    cr_assert_eq(memcmp(back, want + off, n), 0);
    memset(back, 0x3C, n);
    cr_assert_eq(write(fd[1], back, n), (ssize_t)n);
    cr_assert_eq(read(fd[0], p + 1500000, n), (ssize_t)n, "read(2) into the view: %s", strerror(errno));
    memset(want + 1500000, 0x3C, n);
    p[5] ^= 0xFF, want[5] ^= 0xFF; /* and the CPU's own write */
    close(fd[0]);
    close(fd[1]);
    t_unlock(dev, h);
    unsigned char *exp = malloc((size_t)s.tiled), *got = malloc((size_t)s.tiled);
    cr_assert(exp && got);
    memcpy(exp, tiled, (size_t)s.tiled);
    cr_assert_eq(vidmm_swizzle_surface(&s.layout, &s.desc, exp, s.tiled, want, s.linear), 0);
    t_read(dev, h, 0, got, (size_t)s.tiled);
    cr_assert_eq(memcmp(got, exp, (size_t)s.tiled), 0, "a write through the view (the kernel's or the CPU's) "
                 "was not tiled back");
    free(exp), free(got), free(tiled), free(want);
    vidmm_device_destroy(dev);
}

Test(unprivileged, plain_lock_tracking_sees_kernel_writes)
{
    become_nobody();
    static struct vidmm_segment_desc segs[1];
    segs[0] = t_mem_seg(T_VIS_BASE, 8 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(segs, 1);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc d = t_adesc(2 * T_MiB, T_SET(1));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    unsigned char *p = t_lock(dev, h, 0);
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    unsigned char msg[300];
    memset(msg, 0xAB, sizeof msg);
    cr_assert_eq(write(fd[1], msg, sizeof msg), (ssize_t)sizeof msg);
    cr_assert_eq(read(fd[0], p + 10 * T_PG - 150, sizeof msg), (ssize_t)sizeof msg, "read(2) into the locked "
                 "memory: %s", strerror(errno));
    p[300 * T_PG] = 0x77;
    close(fd[0]);
    close(fd[1]);
    t_log_clear(dev);
    t_unlock(dev, h);
    t_use(dev, h, 0);
    struct t_log_buf *log = malloc(sizeof *log);
    cr_assert_not_null(log);
    t_log_take(dev, log);
    uint64_t bytes = 0;
    for (size_t i = 0; i < log->n; i++)
        if (log->op[i].type == VIDMM_PAGING_TRANSFER && log->op[i].allocation == h)
            bytes += log->op[i].size;
    free(log);
    if (t_wp_async_shared() == 0) /* tracked: pages 9, 10 and 300 only */
        cr_assert_eq(bytes, 3 * T_PG, "the copy-back moved %llu bytes: the tracking missed or over-counted",
                     (unsigned long long)bytes);
    else
        cr_assert_eq(bytes, 2 * T_MiB, "no tracking here: the whole allocation goes back");
    const unsigned char *seg = where.cpu;
    cr_assert_eq(memcmp(seg + 10 * T_PG - 150, msg, sizeof msg), 0, "the kernel's write did not reach the segment");
    cr_assert_eq(seg[300 * T_PG], 0x77, "the CPU's write did not reach the segment");
    vidmm_device_destroy(dev);
}
