/* SPDX-License-Identifier: MIT */
/* lib/engine/os/mem.c - the memfd arena that holds backing stores, aperture windows that map
 * arena pages in place (a GART in software) and alternate CPU views of arena pages. Segment
 * regions and huge pages are in hugepages.c. Linux only, like everything in lib/engine/os/. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common/internal.h"
#include "engine/os/os.h"

/* Linux 4.17 (MAP_FIXED_NOREPLACE) and 6.3 (MFD_NOEXEC_SEAL); older C libraries lack the names,
 * older kernels reject or ignore the flags, which the code below handles. */
#ifndef MAP_FIXED_NOREPLACE
#  define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MFD_NOEXEC_SEAL
#  define MFD_NOEXEC_SEAL 0x0008U
#endif

/* mincore() takes one status byte per page; the gap scan below looks at this many at a time. */
#define GAP_SCAN_PAGES 64

size_t vmos_page_size(void)
{
    /* Every thread computes the same value, so the race between two first calls is benign and
     * relaxed order is enough: nothing else is published with it. */
    static atomic_size_t cached;
    size_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (VIDMM_UNLIKELY(v == 0)) {
        long s = sysconf(_SC_PAGESIZE);
        v = s > 0 ? (size_t)s : 4096;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v;
}

/* range_ok() tells whether [off, off + len) is a page-aligned range inside 'limit' bytes. */
static bool range_ok(size_t off, size_t len, size_t limit)
{
    size_t mask = vmos_page_size() - 1;
    return ((off | len) & mask) == 0 && off <= limit && len <= limit - off;
}

/* ---------------------------------------------------------------------------------------------
 * Arena
 * ------------------------------------------------------------------------------------------- */

/* vmos_arena_init() creates the memfd and maps all of it. The file is sparse (ftruncate only
 * sets its size) and an internal memfd is not charged against overcommit until pages are
 * touched, so a 64 GiB reserve costs address space only; MAP_NORESERVE says the same for the
 * mapping. MFD_NOEXEC_SEAL keeps kernels with vm.memfd_noexec=2 (6.3+) from refusing the memfd
 * and from logging about it; older kernels reject the flag with EINVAL and get the plain call. */
int vmos_arena_init(struct vmos_arena *a, size_t reserve)
{
    if (a == NULL || reserve == 0 || (reserve & (vmos_page_size() - 1)) != 0 ||
        reserve > (size_t)INT64_MAX)
        return VIDMM_E_INVALID_ARG;

    int fd = memfd_create("vidmm-backing", MFD_CLOEXEC | MFD_NOEXEC_SEAL);
    if (fd < 0 && errno == EINVAL)
        fd = memfd_create("vidmm-backing", MFD_CLOEXEC);
    if (fd < 0)
        return errno == ENOSYS ? VIDMM_E_UNSUPPORTED : VIDMM_E_NO_MEMORY;
    int rc;
    do
        rc = ftruncate(fd, (off_t)reserve);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        close(fd);
        return VIDMM_E_NO_MEMORY;
    }
    void *p = mmap(NULL, reserve, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return VIDMM_E_NO_MEMORY;
    }
    a->fd = fd;
    a->base = p;
    a->reserve = reserve;
    return 0;
}

void vmos_arena_destroy(struct vmos_arena *a)
{
    if (a == NULL)
        return;
    /* Only an initialised arena owns its fd: a zeroed struct has fd 0, which is not ours. */
    if (a->base != NULL) {
        munmap(a->base, a->reserve);
        if (a->fd >= 0)
            close(a->fd);
    }
    a->fd = -1;
    a->base = NULL;
    a->reserve = 0;
}

/* vmos_arena_release() punches a hole: the pages go back to the system and every mapping of
 * them (the arena, aperture windows, views) reads zeros afterwards. Should a kernel refuse the
 * punch (it has worked on memfds since Linux 3.17, which added memfd_create), MADV_REMOVE does
 * the same through the mapping, and plain zeroing keeps the "reads as zeros" promise last. */
int vmos_arena_release(struct vmos_arena *a, size_t off, size_t len)
{
    if (a == NULL || a->base == NULL || a->fd < 0 || !range_ok(off, len, a->reserve))
        return VIDMM_E_INVALID_ARG;
    if (len == 0)
        return 0;
    int rc;
    do
        rc = fallocate(a->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
    while (rc != 0 && errno == EINTR);
    if (rc == 0)
        return 0;
    if (madvise(a->base + off, len, MADV_REMOVE) == 0)
        return 0;
    memset(a->base + off, 0, len);
    return 0;
}

/* vmos_arena_data() finds the pages of [off, off + len) that hold data in the memfd - written
 * (or read: a read of a hole through a shared mapping allocates a page) since they were last
 * released, swapped out or not - with SEEK_DATA / SEEK_HOLE (tmpfs since Linux 3.8), which read
 * the file's own page index, not the page tables. With 'bitmap' (bit i = page i of the range,
 * cleared first) every such page is set and counted in '*pages'; without, '*pages' is 0 when
 * the whole range is a hole, else 1 (one SEEK_DATA: a few us). The file position moves;
 * nothing in the engine uses it (every access goes through mappings or fallocate()).
 * Returns 0, VIDMM_E_INVALID_ARG or VIDMM_E_IO (the kernel refused: the caller counts every
 * page as holding data). */
int vmos_arena_data(struct vmos_arena *a, size_t off, size_t len, uint64_t *bitmap, size_t *pages)
{
    if (a == NULL || a->base == NULL || a->fd < 0 || !range_ok(off, len, a->reserve) || pages == NULL)
        return VIDMM_E_INVALID_ARG;
    const size_t pg = vmos_page_size(), end = off + len;
    if (bitmap != NULL)
        memset(bitmap, 0, sizeof *bitmap * ((len / pg + 63) / 64));
    *pages = 0;
    size_t at = off;
    while (at < end) {
        off_t d = lseek(a->fd, (off_t)at, SEEK_DATA);
        if (d < 0 && errno == ENXIO)
            break; /* no data from 'at' to the end of the file */
        if (d < 0)
            return VIDMM_E_IO;
        if ((size_t)d >= end)
            break;
        if (bitmap == NULL) {
            *pages = 1; /* data: the question is answered (SEEK_HOLE would walk the page index
                           to the next hole, 1 ms past a populated 64 MiB) */
            return 0;
        }
        off_t h = lseek(a->fd, d, SEEK_HOLE); /* the end of the file at worst */
        if (h < 0)
            return VIDMM_E_IO;
        const size_t first = ((size_t)d - off) / pg;
        const size_t last = (((size_t)h < end ? (size_t)h : end) - off + pg - 1) / pg;
        for (size_t i = first; i < last; i++)
            bitmap[i / 64] |= (uint64_t)1 << (i % 64);
        *pages += last - first;
        at = off + last * pg;
    }
    return 0;
}

/* vmos_arena_populate() faults [off, off + len) in for writing in one call
 * (MADV_POPULATE_WRITE, Linux 5.14), so that a copy into released pages does not take one page
 * fault per 4 KiB. Best effort: where the kernel lacks it, the copy faults the pages itself. */
#ifndef MADV_POPULATE_WRITE
#  define MADV_POPULATE_WRITE 23 /* uapi asm-generic/mman-common.h */
#endif
void vmos_arena_populate(struct vmos_arena *a, size_t off, size_t len)
{
    if (a == NULL || a->base == NULL || !range_ok(off, len, a->reserve) || len == 0)
        return;
    (void)madvise(a->base + off, len, MADV_POPULATE_WRITE);
}

/* ---------------------------------------------------------------------------------------------
 * Aperture windows
 *
 * The window is one private anonymous NORESERVE mapping: pages nobody mapped read as zeros, and
 * a write to one only dirties a private page of the window (the "dummy page" of an unmapped
 * aperture range; it is dropped at the next map or unmap of that page). Mapping replaces a range
 * with a MAP_FIXED MAP_SHARED mapping of the memfd, unmapping replaces it with fresh dummy.
 *
 * The one hazard is a MAP_FIXED call that fails after the kernel has already removed what was
 * there. Kernels before 6.12 unmap the old range first and can then fail (vma allocation, the
 * file's mmap hook); later ones restore the old mappings in most, not all, of those cases. A
 * hole in the window is worse than a failed call: a mapping made elsewhere in the process can
 * land in it, and the next MAP_FIXED of the window would silently destroy that. So every failed
 * MAP_FIXED is followed by fill_gaps(), which finds unmapped pages with mincore() (ENOMEM means
 * "part of the range is not mapped") and maps dummy into each gap with MAP_FIXED_NOREPLACE,
 * which never replaces anything: a foreign mapping already in a gap is left alone and reported.
 * ------------------------------------------------------------------------------------------- */

static void *map_dummy(void *addr, size_t len, int fixed)
{
    return mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed,
                -1, 0);
}

static bool page_mapped(uint8_t *p, size_t pg)
{
    unsigned char v;
    return mincore(p, pg, &v) == 0 || errno != ENOMEM;
}

/* fill_gap() maps dummy into the unmapped run [p, p + len). A kernel older than 4.17 takes
 * MAP_FIXED_NOREPLACE as a hint only and may map elsewhere: that mapping is undone. */
static int fill_gap(uint8_t *p, size_t len)
{
    void *q = map_dummy(p, len, MAP_FIXED_NOREPLACE);
    if (q == (void *)p)
        return 0;
    if (q != MAP_FAILED)
        munmap(q, len);
    return VIDMM_E_NO_MEMORY;
}

static int fill_gaps(uint8_t *p, size_t len)
{
    size_t pg = vmos_page_size();
    unsigned char vec[GAP_SCAN_PAGES];
    int rc = 0;

    for (size_t off = 0; off < len;) {
        size_t n = len - off < GAP_SCAN_PAGES * pg ? len - off : GAP_SCAN_PAGES * pg;
        if (mincore(p + off, n, vec) == 0 || errno != ENOMEM) {
            off += n;
            continue;
        }
        /* Somewhere in this chunk: find each run of unmapped pages and fill it. */
        size_t end = off + n;
        while (off < end) {
            if (page_mapped(p + off, pg)) {
                off += pg;
                continue;
            }
            size_t run = off + pg;
            while (run < end && !page_mapped(p + run, pg))
                run += pg;
            if (fill_gap(p + off, run - off) != 0)
                rc = VIDMM_E_NO_MEMORY;
            off = run;
        }
    }
    return rc;
}

int vmos_aperture_init(struct vmos_aperture *ap, size_t size)
{
    if (ap == NULL || size == 0 || (size & (vmos_page_size() - 1)) != 0)
        return VIDMM_E_INVALID_ARG;
    void *p = map_dummy(NULL, size, 0);
    if (p == MAP_FAILED)
        return VIDMM_E_NO_MEMORY;
    ap->base = p;
    ap->size = size;
    return 0;
}

void vmos_aperture_destroy(struct vmos_aperture *ap)
{
    if (ap == NULL)
        return;
    if (ap->base != NULL)
        munmap(ap->base, ap->size);
    ap->base = NULL;
    ap->size = 0;
}

int vmos_aperture_map(struct vmos_aperture *ap, size_t off, const struct vmos_arena *a,
                      size_t arena_off, size_t len)
{
    if (ap == NULL || ap->base == NULL || a == NULL || a->base == NULL || a->fd < 0 || len == 0 ||
        !range_ok(off, len, ap->size) || !range_ok(arena_off, len, a->reserve))
        return VIDMM_E_INVALID_ARG;
    uint8_t *want = ap->base + off;
    void *p = mmap(want, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->fd, (off_t)arena_off);
    if (p == MAP_FAILED) {
        fill_gaps(want, len);
        return VIDMM_E_NO_MEMORY;
    }
    return 0;
}

int vmos_aperture_unmap(struct vmos_aperture *ap, size_t off, size_t len)
{
    if (ap == NULL || ap->base == NULL || len == 0 || !range_ok(off, len, ap->size))
        return VIDMM_E_INVALID_ARG;
    uint8_t *want = ap->base + off;
    if (map_dummy(want, len, MAP_FIXED) == MAP_FAILED) {
        fill_gaps(want, len);
        return VIDMM_E_NO_MEMORY;
    }
    return 0;
}

int vmos_aperture_repair(struct vmos_aperture *ap, size_t off, size_t len)
{
    if (ap == NULL || ap->base == NULL || !range_ok(off, len, ap->size))
        return VIDMM_E_INVALID_ARG;
    return fill_gaps(ap->base + off, len);
}

/* ---------------------------------------------------------------------------------------------
 * Views
 * ------------------------------------------------------------------------------------------- */

int vmos_view_map(const struct vmos_arena *a, size_t arena_off, size_t len, void **out)
{
    if (a == NULL || a->base == NULL || a->fd < 0 || out == NULL || len == 0 ||
        !range_ok(arena_off, len, a->reserve))
        return VIDMM_E_INVALID_ARG;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, (off_t)arena_off);
    if (p == MAP_FAILED)
        return VIDMM_E_NO_MEMORY;
    *out = p;
    return 0;
}

void vmos_view_unmap(void *p, size_t len)
{
    if (p != NULL && len != 0)
        munmap(p, len);
}
