/* SPDX-License-Identifier: MIT */
/* tests/engine/test_narrow_locks.c - narrow range locks (vidmm_lock_region(), issue 16
 * deliverable 4): a swizzling-range lock of one mip level, one array layer, one subresource or
 * a box of one untiles that part only and tiles back only what the CPU wrote inside it.
 *
 * Checked: the pointer and pitches (the part's first element in the packed linear order), the
 * part's bytes against vidmm_deswizzle() of the same box, that the eager view untiled nothing
 * else (mincore on a fresh view), that writes inside the part reach the tiled surface and
 * writes outside it do not - with the view's write-watch, with the snapshot
 * (VIDMM_RANGE_DIRTY=snapshot) and with a lazy view where the kernel has one - for every
 * layout family, mip chains (an AMD mip tail), arrays and 3D; the paging log (a range lock
 * pages nothing; the unswizzling eviction when no range is free converts the whole allocation
 * in one UNSWIZZLE transfer); the relock rules; and every refusal with its exact code, nothing
 * changed. */
#include "t_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SEG_SIZE (32 * T_MiB)
#define PAGE 4096u

/* How the written bytes are found: the write-watch for every part (VIDMM_RANGE_DIRTY=watch),
 * the snapshot (=snapshot), a lazy view, or the default (parts up to 8 MiB by snapshot). */
enum dirty_mode { WATCH, SNAPSHOT, LAZY, AUTO };

static vidmm_device *ndev(uint32_t ranges, enum dirty_mode m, const struct vidmm_driver *drv)
{
    struct vidmm_segment_desc seg = t_mem_seg(0x10000000ull, SEG_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(&seg, 1);
    dd.swizzling_ranges = ranges;
    dd.driver = drv;
    if (m == LAZY)
        dd.flags |= VIDMM_DEVICE_LAZY_RANGES;
    if (m == SNAPSHOT || m == WATCH)
        cr_assert_eq(setenv("VIDMM_RANGE_DIRTY", m == SNAPSHOT ? "snapshot" : "watch", 1), 0);
    vidmm_device *dev = t_dev(&dd);
    unsetenv("VIDMM_RANGE_DIRTY");
    return dev;
}

static struct vidmm_subresource_info sub(const struct t_surf *s, uint32_t mip, uint32_t layer)
{
    struct vidmm_subresource_info si = { .size = sizeof si };
    cr_assert_eq(vidmm_surface_subresource(&s->layout, &s->desc, mip, layer, &si), 0);
    return si;
}

static struct vidmm_lock_region region(uint32_t mip, uint32_t layer, const struct vidmm_box *box)
{
    struct vidmm_lock_region r = VIDMM_LOCK_REGION_INIT;
    r.mip = mip;
    r.layer = layer;
    if (box) {
        r.flags = VIDMM_LOCK_REGION_BOX;
        r.box = *box;
    }
    return r;
}

static unsigned char *nlock(vidmm_device *dev, vidmm_handle h, uint32_t flags, struct vidmm_lock_region *r)
{
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | flags);
    int rc = vidmm_lock_region(dev, &a, r);
    cr_assert_eq(rc, 0, "narrow lock: %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_not_null(a.data);
    return a.data;
}

/* Transparent huge pages in 'always' mode (anonymous memory faults in 2 MiB at a time). */
static bool thp_always(void)
{
    char buf[128] = { 0 };
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strstr(buf, "[always]") != NULL;
}

/* Does the device give lazy views here? (A lazy view has no page in memory right after the
 * lock.) */
static bool lazy_available(void)
{
    vidmm_device *dev = ndev(2, LAZY, NULL);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 256, 1, 4, 1, 1);
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 1);
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | VIDMM_LOCK_READ_ONLY);
    T_OK(vidmm_lock(dev, &a));
    size_t res = t_resident_pages(a.data, (size_t)s.linear);
    t_unlock(dev, h);
    free(tiled);
    vidmm_device_destroy(dev);
    return res == 0;
}

/* The box 'b' of subresource (mip, layer) as the pointer 'p' with pitches 'r' shows it, against
 * vidmm_deswizzle() of the same box from 'tiled'. */
static void expect_box(const struct t_surf *s, const unsigned char *tiled, const unsigned char *p,
                       const struct vidmm_lock_region *r, uint32_t mip, uint32_t layer, const struct vidmm_box *b,
                       const char *what)
{
    const size_t e = s->desc.element_bytes, bw = (size_t)b->width * e;
    const size_t n = (size_t)b->depth * b->height * bw;
    unsigned char *want = malloc(n);
    cr_assert_not_null(want);
    T_OK(vidmm_deswizzle(&s->layout, &s->desc, mip, layer, b, tiled, (size_t)s->tiled, want, n, bw,
                         bw * b->height));
    for (uint32_t z = 0; z < b->depth; z++)
        for (uint32_t y = 0; y < b->height; y++)
            cr_assert_eq(memcmp(p + z * r->slice_pitch + y * r->row_pitch, want + (z * b->height + y) * bw, bw), 0,
                         "%s: row %u of slice %u of the box differs", what, y, z);
    free(want);
}

/* =============================================================================================
 * What a narrow lock shows.
 * =========================================================================================== */

/* The pointer and pitches of a box lock: its first element in the packed linear order, the
 * subresource's row and slice pitches; the box shows the surface's bytes. */
Test(narrow, box_pointer_pitches_and_bytes)
{
    vidmm_device *dev = ndev(2, WATCH, NULL);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 128, 1, 4, 5, 3);
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 11);
    struct vidmm_box b = { 5, 7, 0, 20, 9, 1 };
    struct vidmm_lock_region r = region(1, 2, &b);
    unsigned char *p = nlock(dev, h, VIDMM_LOCK_READ_ONLY, &r);
    struct vidmm_subresource_info si = sub(&s, 1, 2);
    cr_assert_eq(r.row_pitch, (uint64_t)si.width * 4);
    cr_assert_eq(r.slice_pitch, r.row_pitch * si.height);
    cr_assert_eq(r.offset, si.linear_offset + 7 * r.row_pitch + 5 * 4);
    cr_assert_eq(r.layer_pitch, s.linear / 3);
    expect_box(&s, tiled, p, &r, 1, 2, &b, "mip 1 layer 2 box");
    t_unlock(dev, h);
    free(tiled);
    vidmm_device_destroy(dev);
}

/* An eager narrow lock untiles the box only: of a fresh 16 MiB view, the pages of the box's
 * rows (and of nothing else) are in memory after the lock. */
Test(narrow, eager_box_untiles_only_the_box)
{
    vidmm_device *dev = ndev(1, SNAPSHOT, NULL);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 4096, 1024, 1, 4, 1, 1); /* 16 MiB */
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 12);
    struct vidmm_box b = { 1000, 500, 0, 16, 16, 1 };
    struct vidmm_lock_region r = region(0, 0, &b);
    unsigned char *p = nlock(dev, h, VIDMM_LOCK_READ_ONLY, &r);
    unsigned char *view = p - r.offset;
    const size_t res = t_resident_pages(view, (size_t)s.linear);
    if (res > 32 && thp_always())
        cr_skip_test("transparent huge pages are 'always' here: a touched view page brings 2 MiB in");
    cr_assert(res >= 16 && res <= 32, "a 16-row box lock left %zu pages of the view in memory", res);
    expect_box(&s, tiled, p, &r, 0, 0, &b, "box");
    t_unlock(dev, h);
    free(tiled);
    vidmm_device_destroy(dev);
}

/* One mip level of every layer (mip 2, VIDMM_LOCK_REGION_ALL layers): each layer's mip 2 at
 * data + layer * layer_pitch; one array layer (VIDMM_LOCK_REGION_ALL mips): its chain from data. */
Test(narrow, mip_level_and_array_layer)
{
    vidmm_device *dev = ndev(2, WATCH, NULL);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 128, 1, 4, 5, 3);
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 13);
    struct vidmm_lock_region r = region(2, VIDMM_LOCK_REGION_ALL, NULL);
    unsigned char *p = nlock(dev, h, VIDMM_LOCK_READ_ONLY, &r);
    struct vidmm_subresource_info si = sub(&s, 2, 0);
    cr_assert_eq(r.offset, si.linear_offset);
    for (uint32_t l = 0; l < 3; l++) {
        struct vidmm_box whole = { 0, 0, 0, si.width, si.height, 1 };
        expect_box(&s, tiled, p + l * r.layer_pitch, &r, 2, l, &whole, "mip 2 of a layer");
    }
    t_unlock(dev, h);
    r = region(VIDMM_LOCK_REGION_ALL, 1, NULL);
    p = nlock(dev, h, VIDMM_LOCK_READ_ONLY, &r);
    cr_assert_eq(r.offset, sub(&s, 0, 1).linear_offset);
    for (uint32_t m = 0; m < 5; m++) {
        struct vidmm_subresource_info sm = sub(&s, m, 1);
        struct vidmm_box whole = { 0, 0, 0, sm.width, sm.height, 1 };
        struct vidmm_lock_region rm = r;
        rm.row_pitch = (uint64_t)sm.width * 4;
        rm.slice_pitch = rm.row_pitch * sm.height;
        expect_box(&s, tiled, p + (sm.linear_offset - r.offset), &rm, m, 1, &whole, "a mip of layer 1");
    }
    t_unlock(dev, h);
    free(tiled);
    vidmm_device_destroy(dev);
}

/* Writes through a narrow view: those inside the part reach the tiled surface on unlock, those
 * outside it (same rows, other rows, other subresources) do not. 'm' says how the written
 * bytes are found. The expected surface: the box's bytes replaced in the surface's packed
 * linear order, tiled again. */
static void check_writes(enum dirty_mode m, const struct t_surf *s0, uint32_t mip, uint32_t layer,
                         const struct vidmm_box *b, const char *what)
{
    struct t_surf s = *s0;
    t_surf_sizes(&s);
    vidmm_device *dev = ndev(2, m, NULL);
    const size_t tn = (size_t)s.tiled, ln = (size_t)s.linear, e = s.desc.element_bytes;
    unsigned char *tiled = malloc(tn), *lin = malloc(ln), *exp = malloc(tn), *got = malloc(tn);
    cr_assert(tiled && lin && exp && got);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 21);
    T_OK(vidmm_deswizzle_surface(&s.layout, &s.desc, tiled, tn, lin, ln));
    uint32_t rnd = 5;
    for (int cycle = 0; cycle < 2; cycle++) {
        struct vidmm_lock_region r = region(mip, layer, b);
        unsigned char *p = nlock(dev, h, 0, &r);
        unsigned char *view = p - r.offset;
        struct vidmm_subresource_info si = sub(&s, mip, layer);
        const size_t bw = (size_t)b->width * e;
        /* Inside: cycle 0 the whole box, cycle 1 a few scattered elements. */
        for (uint32_t z = 0; z < b->depth; z++)
            for (uint32_t y = 0; y < b->height; y++)
                for (size_t i = 0; i < bw; i++) {
                    rnd = rnd * 1103515245u + 12345u;
                    if (cycle == 1 && (rnd >> 16) % 7 != 0)
                        continue;
                    const size_t off = (size_t)r.offset + z * r.slice_pitch + y * r.row_pitch + i;
                    view[off] = lin[off] = (unsigned char)(rnd >> 24);
                }
        /* Outside: the byte before the box's first element and after its last of each row
         * (when the row has them), a row above, and the first byte of another subresource. */
        for (uint32_t z = 0; z < b->depth; z++)
            for (uint32_t y = 0; y < b->height; y++) {
                const size_t row = (size_t)si.linear_offset + (b->z + z) * r.slice_pitch + (b->y + y) * r.row_pitch;
                if (b->x > 0)
                    view[row + b->x * e - 1] ^= 0x5A;
                if (b->x + b->width < si.width)
                    view[row + (b->x + b->width) * e] ^= 0xA5;
            }
        if (b->y > 0)
            view[r.offset - r.row_pitch] ^= 0x33;
        if (s.desc.mip_levels * s.desc.array_layers > 1)
            view[si.linear_offset == 0 ? si.linear_size : 0] ^= 0x77;
        t_unlock(dev, h);
        memcpy(exp, tiled, tn);
        T_OK(vidmm_swizzle_surface(&s.layout, &s.desc, exp, tn, lin, ln));
        t_read(dev, h, 0, got, tn);
        ptrdiff_t d = -1;
        for (size_t i = 0; i < tn && d < 0; i++)
            if (got[i] != exp[i])
                d = (ptrdiff_t)i;
        cr_assert_eq(d, -1, "%s (%s): cycle %d: tiled byte %td is not what the CPU wrote inside the part", what,
                     m == WATCH ? "write-watch" : m == SNAPSHOT ? "snapshot" : m == LAZY ? "lazy" : "default",
                     cycle, d);
        memcpy(tiled, got, tn);
        /* The next narrow lock shows the part as written. */
        r = region(mip, layer, b);
        p = nlock(dev, h, VIDMM_LOCK_READ_ONLY, &r);
        expect_box(&s, tiled, p, &r, mip, layer, b, what);
        t_unlock(dev, h);
    }
    free(tiled);
    free(lin);
    free(exp);
    free(got);
    vidmm_device_destroy(dev);
}

static void check_writes_all(enum dirty_mode m)
{
    struct t_surf s;
    struct vidmm_box b;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 1000, 300, 1, 4, 1, 1);
    b = (struct vidmm_box){ 100, 40, 0, 700, 200, 1 };
    check_writes(m, &s, 0, 0, &b, "block-linear 1000x300x4, a wide box");
    b = (struct vidmm_box){ 3, 1, 0, 5, 3, 1 };
    check_writes(m, &s, 0, 0, &b, "block-linear 1000x300x4, a small box");
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 517, 129, 1, 12, 1, 1);
    b = (struct vidmm_box){ 300, 10, 0, 217, 100, 1 };
    check_writes(m, &s, 0, 0, &b, "block-linear 517x129, 12-byte elements");
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 128, 1, 4, 5, 3);
    b = (struct vidmm_box){ 2, 3, 0, 50, 20, 1 };
    check_writes(m, &s, 2, 1, &b, "block-linear 256x128, 5 mips, 3 layers: mip 2 layer 1");
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 96, 80, 20, 8, 1, 1);
    b = (struct vidmm_box){ 10, 5, 3, 40, 30, 9 };
    check_writes(m, &s, 0, 0, &b, "block-linear 3D 96x80x20x8");
    t_surf_init(&s, VIDMM_TILING_INTEL_Y, 3000, 200, 1, 1, 1, 1);
    b = (struct vidmm_box){ 129, 33, 0, 2000, 100, 1 };
    check_writes(m, &s, 0, 0, &b, "Intel Y 3000 bytes x 200");
    t_surf_init(&s, VIDMM_TILING_INTEL_X, 5000, 40, 1, 1, 1, 1);
    b = (struct vidmm_box){ 511, 8, 0, 3000, 30, 1 };
    check_writes(m, &s, 0, 0, &b, "Intel X 5000 x 40");
    t_surf_init(&s, VIDMM_TILING_D3D_STD_64K, 600, 300, 1, 4, 1, 2);
    b = (struct vidmm_box){ 77, 51, 0, 300, 200, 1 };
    check_writes(m, &s, 0, 1, &b, "D3D 64 KB 600x300x4, layer 1");
    t_surf_init(&s, VIDMM_TILING_D3D_STD_4K, 333, 222, 1, 16, 1, 1);
    b = (struct vidmm_box){ 100, 100, 0, 200, 100, 1 };
    check_writes(m, &s, 0, 0, &b, "D3D 4 KB 333x222x16");
    t_surf_init(&s, VIDMM_TILING_AMD_GFX10, 256, 256, 1, 4, 9, 1);
    s.layout.amd_swizzle_mode = 27;
    b = (struct vidmm_box){ 1, 2, 0, 3, 5, 1 };
    check_writes(m, &s, 5, 0, &b, "AMD SW_64KB_R_X 256x256, 9 mips: mip 5 (in the mip tail)");
    b = (struct vidmm_box){ 17, 9, 0, 200, 150, 1 };
    check_writes(m, &s, 0, 0, &b, "AMD SW_64KB_R_X 256x256, 9 mips: mip 0");
    t_surf_init(&s, VIDMM_TILING_MORTON, 300, 200, 1, 4, 1, 1);
    b = (struct vidmm_box){ 31, 17, 0, 100, 64, 1 };
    check_writes(m, &s, 0, 0, &b, "Morton 300x200x4");
    t_surf_init(&s, VIDMM_TILING_LINEAR, 777, 55, 1, 3, 1, 1);
    b = (struct vidmm_box){ 1, 1, 0, 775, 53, 1 };
    check_writes(m, &s, 0, 0, &b, "pitch-linear 777x55x3");
}

Test(narrow, writes_tiled_back_inside_only_write_watch, .timeout = 300)
{
    check_writes_all(WATCH);
}

Test(narrow, writes_tiled_back_inside_only_snapshot, .timeout = 300)
{
    check_writes_all(SNAPSHOT);
}

Test(narrow, writes_tiled_back_inside_only_default, .timeout = 300)
{
    check_writes_all(AUTO);
}

Test(narrow, writes_tiled_back_inside_only_lazy, .timeout = 300)
{
    if (!lazy_available())
        cr_skip_test("lazy views unavailable here (no full userfaultfd with WP_ASYNC and PAGEMAP_SCAN, Linux "
                     "6.7, no privilege, or valgrind)");
    check_writes_all(LAZY);
}

/* A whole mip level and a whole layer written through narrow views: all of it comes back, and
 * the other subresources keep their bytes. */
Test(narrow, subresource_writes)
{
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 128, 1, 4, 5, 3);
    t_surf_sizes(&s);
    vidmm_device *dev = ndev(2, WATCH, NULL);
    const size_t tn = (size_t)s.tiled, ln = (size_t)s.linear;
    unsigned char *tiled = malloc(tn), *lin = malloc(ln), *exp = malloc(tn), *got = malloc(tn);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 31);
    T_OK(vidmm_deswizzle_surface(&s.layout, &s.desc, tiled, tn, lin, ln));
    /* mip 1 of every layer */
    struct vidmm_lock_region r = region(1, VIDMM_LOCK_REGION_ALL, NULL);
    unsigned char *p = nlock(dev, h, 0, &r);
    struct vidmm_subresource_info si = sub(&s, 1, 0);
    for (uint32_t l = 0; l < 3; l++) {
        t_bytes(p + l * r.layer_pitch, (size_t)si.linear_size, 40 + l);
        memcpy(lin + r.offset + l * r.layer_pitch, p + l * r.layer_pitch, (size_t)si.linear_size);
    }
    p[-1] ^= 0xFF; /* the last byte of mip 0 of layer 0: outside */
    t_unlock(dev, h);
    /* layer 2, every mip */
    r = region(VIDMM_LOCK_REGION_ALL, 2, NULL);
    p = nlock(dev, h, 0, &r);
    t_bytes(p, (size_t)r.layer_pitch, 50);
    memcpy(lin + r.offset, p, (size_t)r.layer_pitch);
    p[-1] ^= 0xFF; /* the last byte of layer 1: outside */
    t_unlock(dev, h);
    memcpy(exp, tiled, tn);
    T_OK(vidmm_swizzle_surface(&s.layout, &s.desc, exp, tn, lin, ln));
    t_read(dev, h, 0, got, tn);
    cr_assert_eq(memcmp(got, exp, tn), 0, "subresource writes did not come back exactly");
    free(tiled);
    free(lin);
    free(exp);
    free(got);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Paging and ranges.
 * =========================================================================================== */

/* A narrow range lock pages nothing (the range converts, spec 8.3), asks the driver for a range
 * as a whole lock does (RangeSize = the allocation's size), and the range is cached per
 * (allocation, PrivateDriverData) for the next narrow lock. */
Test(narrow, range_lock_pages_nothing)
{
    struct t_rec rec;
    t_rec_init(&rec);
    struct vidmm_driver drv = t_rec_driver(&rec, false, true, false);
    vidmm_device *dev = ndev(2, WATCH, &drv);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 512, 256, 1, 4, 1, 1);
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 61);
    t_log_clear(dev);
    const uint64_t issued = t_paging_total(dev);
    struct vidmm_box b = { 8, 8, 0, 64, 64, 1 };
    struct vidmm_lock_region r = region(0, 0, &b);
    unsigned char *p = nlock(dev, h, 0, &r);
    p[0] ^= 1;
    t_unlock(dev, h);
    r = region(0, 0, &b);
    (void)nlock(dev, h, VIDMM_LOCK_READ_ONLY, &r);
    t_unlock(dev, h);
    struct vidmm_paging_op op;
    cr_assert_eq(vidmm_paging_log_read(dev, &op, 1), 0, "a narrow range lock paged (%s)", t_op_name(op.type));
    cr_assert_eq(t_paging_total(dev), issued);
    cr_assert_eq(rec.n_acq, 1, "the range was not cached across narrow locks");
    cr_assert_eq(rec.acq[0].allocation, h);
    cr_assert_eq(rec.acq[0].range_size, t_round(s.tiled));
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SEGMENT);
    free(tiled);
    vidmm_device_destroy(dev);
}

/* No range to be had: the unswizzling eviction of spec 8.2 converts the whole allocation (one
 * TRANSFER with UNSWIZZLE of its whole size; its system-memory copy is linear as a whole) and
 * the pointer is the part in that copy; what the CPU wrote there is tiled again (SWIZZLE) when
 * the GPU next uses it. */
Test(narrow, no_range_unswizzling_eviction)
{
    vidmm_device *dev = ndev(0, WATCH, NULL);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 128, 1, 4, 5, 3);
    t_surf_sizes(&s);
    const size_t tn = (size_t)s.tiled, ln = (size_t)s.linear;
    unsigned char *tiled = malloc(tn), *lin = malloc(ln), *exp = malloc(tn), *got = malloc(tn);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 71);
    T_OK(vidmm_deswizzle_surface(&s.layout, &s.desc, tiled, tn, lin, ln));
    t_log_clear(dev);
    struct vidmm_box b = { 4, 4, 0, 30, 10, 1 };
    struct vidmm_lock_region r = region(1, 2, &b);
    unsigned char *p = nlock(dev, h, 0, &r);
    struct t_log_buf *log = malloc(sizeof *log);
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_TRANSFER, h), 1);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert(log->op[t].flags & VIDMM_TRANSFER_UNSWIZZLE);
    cr_assert_eq(log->op[t].size, t_round(s.tiled), "the unswizzling eviction did not convert the whole allocation");
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    expect_box(&s, tiled, p, &r, 1, 2, &b, "box in the unswizzled copy");
    memset(p, 0xC3, 30 * 4);
    memset(lin + r.offset, 0xC3, 30 * 4);
    t_unlock(dev, h);
    t_use(dev, h, 0);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SEGMENT);
    /* Compared as linear bytes: the tiling's padding bytes read as zero after a SWIZZLE page-in. */
    t_read(dev, h, 0, got, tn);
    unsigned char *back = malloc(ln);
    T_OK(vidmm_deswizzle_surface(&s.layout, &s.desc, got, tn, back, ln));
    cr_assert_eq(memcmp(back, lin, ln), 0, "the write through the unswizzled copy was not tiled again");
    free(back);
    free(log);
    free(tiled);
    free(lin);
    free(exp);
    free(got);
    vidmm_device_destroy(dev);
}

/* Relock rules (spec 6.3 rule 8): a narrow range lock is a range lock - no other lock until it
 * is unlocked, then locks as before. */
Test(narrow, relock_refused_until_unlock)
{
    vidmm_device *dev = ndev(2, WATCH, NULL);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 128, 1, 4, 1, 1);
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 81);
    struct vidmm_box b = { 0, 0, 0, 8, 8, 1 };
    struct vidmm_lock_region r = region(0, 0, &b);
    (void)nlock(dev, h, 0, &r);
    struct t_snap snap;
    t_snap1(&snap, dev, h);
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE);
    struct vidmm_lock_region r2 = region(0, 0, &b);
    T_REFUSED(&snap, vidmm_lock_region(dev, &a, &r2), VIDMM_E_INVALID_ARG);
    a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE);
    T_REFUSED(&snap, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    a = t_largs(h, 0);
    T_REFUSED(&snap, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    t_unlock(dev, h);
    a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | VIDMM_LOCK_READ_ONLY);
    T_OK(vidmm_lock(dev, &a));
    t_unlock(dev, h);
    free(tiled);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Refusals: VIDMM_E_INVALID_ARG, nothing changed, and the same lock with the argument fixed
 * succeeds.
 * =========================================================================================== */
Test(narrow, refusals)
{
    vidmm_device *dev = ndev(2, WATCH, NULL);
    struct t_surf s;
    t_surf_init(&s, VIDMM_TILING_BLOCK_LINEAR, 256, 128, 1, 4, 5, 3);
    t_surf_sizes(&s);
    unsigned char *tiled = malloc((size_t)s.tiled);
    vidmm_handle h = t_surf_alloc(dev, &s, tiled, 91);
    vidmm_handle plain = t_alloc_simple(dev, 64 * T_KiB, T_SET(1));
    t_resident(dev, plain, NULL);
    vidmm_handle hs[2] = { h, plain };
    struct t_snap snap;
    t_snap(&snap, dev, hs, 2);
    struct vidmm_subresource_info s2 = sub(&s, 2, 1); /* 64 x 32 */
    const uint32_t aa = VIDMM_LOCK_ACQUIRE_APERTURE;
    struct vidmm_lock_args a;
    struct vidmm_lock_region r;
    struct vidmm_box b;

#define REFUSED(flags, setup)                                                                      \
    do {                                                                                           \
        a = t_largs(h, (flags));                                                                   \
        r = region(2, 1, NULL);                                                                    \
        setup;                                                                                     \
        a.data = NULL;                                                                             \
        T_REFUSED(&snap, vidmm_lock_region(dev, &a, &r), VIDMM_E_INVALID_ARG);                     \
        cr_assert_null(a.data, "a refused lock handed out a pointer");                            \
    } while (0)

    a = t_largs(h, aa);
    T_REFUSED(&snap, vidmm_lock_region(dev, &a, NULL), VIDMM_E_INVALID_ARG);
    REFUSED(aa, r.size_of = sizeof r - 1);
    REFUSED(aa, r.size_of = 0);
    REFUSED(aa, r.flags = 0x2);
    REFUSED(aa, r.flags = 0x80000000u);
    REFUSED(aa, a.allocation = plain);                      /* not SWIZZLED: no tiling layout */
    REFUSED(0, (void)0);                                    /* no ACQUIRE_APERTURE */
    REFUSED(VIDMM_LOCK_READ_ONLY, (void)0);
    REFUSED(aa | VIDMM_LOCK_USE_ALTERNATE_VA, (void)0);
    REFUSED(aa | VIDMM_LOCK_ENTIRE, (void)0);
    static const uint32_t pages[1] = { 0 };
    REFUSED(aa, (a.pages = pages, a.page_count = 1));
    REFUSED(aa, r.mip = 5);                                 /* 5 mips: 0..4 */
    REFUSED(aa, r.mip = 0x7FFFFFFFu);
    REFUSED(aa, r.layer = 3);                               /* 3 layers: 0..2 */
    REFUSED(aa, (r.mip = VIDMM_LOCK_REGION_ALL, r.layer = 7));
    b = (struct vidmm_box){ 0, 0, 0, 4, 4, 1 };
    REFUSED(aa, (r = region(VIDMM_LOCK_REGION_ALL, 1, &b)));       /* a box of every mip */
    REFUSED(aa, (r = region(2, VIDMM_LOCK_REGION_ALL, &b)));       /* a box of every layer */
    b = (struct vidmm_box){ 0, 0, 0, 0, 4, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* empty: width 0 */
    b = (struct vidmm_box){ 0, 0, 0, 4, 0, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* empty: height 0 */
    b = (struct vidmm_box){ 0, 0, 0, 4, 4, 0 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* empty: depth 0 */
    b = (struct vidmm_box){ s2.width - 3, 0, 0, 4, 4, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* one column past the right edge */
    b = (struct vidmm_box){ 0, s2.height - 3, 0, 4, 4, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* one row past the bottom */
    b = (struct vidmm_box){ s2.width, 0, 0, 1, 1, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* starts past the right edge */
    b = (struct vidmm_box){ 0, 0, 1, 1, 1, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* slice 1 of a 2D surface */
    b = (struct vidmm_box){ 2, 0, 0, UINT32_MAX, 1, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* x + width wraps */
    b = (struct vidmm_box){ 0, 0, 0, s2.width + 1, 1, 1 };
    REFUSED(aa, (r = region(2, 1, &b)));                    /* wider than the mip (mip 0 is not) */
#undef REFUSED

    /* Positive controls: the largest box, and the corner element. */
    b = (struct vidmm_box){ 0, 0, 0, s2.width, s2.height, 1 };
    a = t_largs(h, aa);
    r = region(2, 1, &b);
    T_OK(vidmm_lock_region(dev, &a, &r));
    t_unlock(dev, h);
    b = (struct vidmm_box){ s2.width - 1, s2.height - 1, 0, 1, 1, 1 };
    a = t_largs(h, aa);
    r = region(2, 1, &b);
    T_OK(vidmm_lock_region(dev, &a, &r));
    t_unlock(dev, h);
    /* VIDMM_LOCK_REGION_INIT: every mip, every layer, no box - the whole allocation. */
    a = t_largs(h, aa | VIDMM_LOCK_READ_ONLY);
    struct vidmm_lock_region whole = VIDMM_LOCK_REGION_INIT;
    T_OK(vidmm_lock_region(dev, &a, &whole));
    cr_assert_eq(whole.offset, 0);
    unsigned char *lin = malloc((size_t)s.linear);
    T_OK(vidmm_deswizzle_surface(&s.layout, &s.desc, tiled, (size_t)s.tiled, lin, (size_t)s.linear));
    cr_assert_eq(memcmp(a.data, lin, (size_t)s.linear), 0, "VIDMM_LOCK_REGION_INIT did not show the whole surface");
    free(lin);
    t_unlock(dev, h);
    free(tiled);
    vidmm_device_destroy(dev);
}
