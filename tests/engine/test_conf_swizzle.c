/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_swizzle.c - conformance: locks of swizzled allocations. The state
 * machine of spec 8.2 (suite swz_lock: s1_* state (1) resident in a memory segment, s2_* state
 * (2) evicted swizzled or in an aperture, s3_* state (3) evicted unswizzled, gpu_* the
 * "GPU use after CPU access" rules) and the swizzling-range pool of spec 15.15 (suite
 * item15_15). The surface is t_swz's 64 x 64 x 4-byte Morton surface (16 KiB), so the linear
 * view is a real permutation of the tiled bytes. Ranges go through a recording driver; paging
 * stays with the built-in executor, which carries out the (un)swizzling transfers. */
#include "t_engine.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SZ (16 * T_KiB)

struct fx {
    struct t_rec rec;
    struct vidmm_driver drv;
    vidmm_device *dev;
    struct t_swz z;
    unsigned char tiled[SZ], linear[SZ], buf[SZ];
};

/* A standard device with 'ranges' swizzling ranges and the recording range callbacks. */
static struct fx *fx_new_ex(uint32_t ranges, uint32_t dev_flags)
{
    struct fx *f = calloc(1, sizeof(*f));
    cr_assert_not_null(f);
    t_rec_init(&f->rec);
    f->drv = t_rec_driver(&f->rec, false, true, false);
    f->dev = t_dev_std_ex(ranges, &f->drv, dev_flags);
    t_swz_init(&f->z);
    cr_assert_eq(f->z.tiled_size, SZ);
    cr_assert_eq(f->z.linear_size, SZ);
    return f;
}

static struct fx *fx_new(uint32_t ranges)
{
    return fx_new_ex(ranges, 0);
}

static void fx_free(struct fx *f)
{
    vidmm_device_destroy(f->dev);
    free(f);
}

/* A swizzled allocation with 'flags' in 'set', made resident, holding random tiled bytes
 * (seed 'seed'); f->tiled / f->linear are its tiled content and its packed linear view. */
static vidmm_handle swz_alloc(struct fx *f, uint32_t set, uint32_t pref, uint32_t flags, uint32_t seed)
{
    struct vidmm_alloc_desc d = t_swz_desc(&f->z, set);
    d.preferred_segment = pref;
    d.flags |= flags;
    vidmm_handle h = t_alloc(f->dev, &d);
    t_resident(f->dev, h, NULL);
    t_bytes(f->tiled, SZ, seed);
    t_write(f->dev, h, 0, f->tiled, SZ);
    t_deswz(&f->z, f->tiled, f->linear);
    return h;
}

static void *range_lock(struct fx *f, vidmm_handle h, uint32_t flags, uint32_t pd)
{
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | flags);
    a.private_data = pd;
    int rc = vidmm_lock(f->dev, &a);
    cr_assert_eq(rc, 0, "ACQUIRE_APERTURE lock of %u returned %d (%s)", h, rc, vidmm_strerror(rc));
    cr_assert_not_null(a.data);
    return a.data;
}

/* The allocation was evicted unswizzled: one TRANSFER with UNSWIZZLE from its memory segment to
 * system memory in 'log', and the query says SYSMEM, not evicted_swizzled. */
static void expect_unswizzling_eviction(struct fx *f, const struct t_log_buf *log, vidmm_handle h)
{
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    if (t < 0)
        t_log_dump(log, "lock");
    cr_assert_geq(t, 0, "no eviction TRANSFER");
    cr_assert(log->op[t].flags & VIDMM_TRANSFER_UNSWIZZLE, "eviction TRANSFER without UNSWIZZLE (flags 0x%x)",
              log->op[t].flags);
    cr_assert_eq(log->op[t].flags & VIDMM_TRANSFER_SWIZZLE, 0);
    cr_assert_eq(log->op[t].src.segment_id, T_VIS);
    cr_assert_eq(log->op[t].dst.segment_id, 0);
    struct vidmm_alloc_info in = t_query(f->dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_SYSMEM);
    cr_assert_not(in.evicted_swizzled, "evicted_swizzled after an unswizzling eviction");
}

/* =============================================================================================
 * spec 8.2: the lock state machine.
 * =========================================================================================== */

/* spec 8.2 state (1): "Resident in a memory segment: try to acquire a CPU aperture (swizzling
 * range) giving linear access" - the driver is asked once with the allocation, its driver data,
 * the lock's PrivateDriverData, the segment and RangeSize = allocation size (spec 8.3); the
 * pointer shows the packed linear surface; nothing is paged. */
Test(swz_lock, s1_resident_acquires_range)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 1);
    uint64_t acquired = t_stats(f->dev).ranges_acquired;
    t_log_clear(f->dev);
    uint64_t issued = t_paging_total(f->dev);
    unsigned char *p = range_lock(f, h, 0, 5);
    struct vidmm_paging_op op;
    cr_assert_eq(vidmm_paging_log_read(f->dev, &op, 1), 0, "a range lock paged (%s)", t_op_name(op.type));
    cr_assert_eq(t_paging_total(f->dev), issued, "a range lock issued paging");
    cr_assert_eq(f->rec.n_acq, 1);
    const struct vidmm_swizzling_range_args *a = &f->rec.acq[0];
    cr_assert_eq(a->allocation, h);
    cr_assert_eq(a->driver_data, T_DRV_DATA);
    cr_assert_eq(a->private_data, 5);
    cr_assert_lt(a->range_id, 2);
    cr_assert_eq(a->segment_id, T_VIS);
    cr_assert_eq(a->range_size, SZ);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0, "range lock does not show the packed linear surface");
    cr_assert_eq(t_query(f->dev, h).where, VIDMM_WHERE_SEGMENT);
    cr_assert_eq(t_stats(f->dev).ranges_acquired, acquired + 1);
    t_unlock(f->dev, h);
    fx_free(f);
}

/* spec 8.3 "The KMD must make the allocation appear through the range exactly as it would in
 * memory after an unswizzling eviction" - writes through the range reach the tiled surface on
 * unlock (device.h: "a swizzled range's view is tiled back unless the lock was READ_ONLY"). */
Test(swz_lock, s1_range_writes_tiled_back)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 2);
    unsigned char *p = range_lock(f, h, 0, 0);
    t_bytes(f->buf, SZ, 99);
    memcpy(p, f->buf, SZ);
    t_unlock(f->dev, h);
    unsigned char *want = malloc(SZ), *got = malloc(SZ);
    t_swz(&f->z, f->buf, want);
    t_read(f->dev, h, 0, got, SZ);
    cr_assert_eq(memcmp(got, want, SZ), 0, "linear writes through the range not tiled back");
    cr_assert_eq(t_query(f->dev, h).where, VIDMM_WHERE_SEGMENT);
    free(want);
    free(got);
    fx_free(f);
}

/* device.h vidmm_unlock(): "... tiled back unless the lock was READ_ONLY". */
Test(swz_lock, s1_read_only_range_not_written_back)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 3);
    unsigned char *p = range_lock(f, h, VIDMM_LOCK_READ_ONLY, 0);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    memset(p, 0xEE, 256);
    t_unlock(f->dev, h);
    unsigned char *got = malloc(SZ);
    t_read(f->dev, h, 0, got, SZ);
    cr_assert_eq(memcmp(got, f->tiled, SZ), 0, "a READ_ONLY range lock was tiled back");
    free(got);
    fx_free(f);
}

/* What the CPU wrote through a range comes back, found either way the engine can find it: a
 * userfaultfd write-watch on the view (pages written) or a snapshot compared at unlock
 * (VIDMM_RANGE_DIRTY=snapshot). Several lock cycles on the same view (the watch re-armed each
 * time), partial rows, rows on page boundaries, a READ_ONLY cycle between (not tiled back). */
static atomic_int watch_msgs;
static void watch_hook(void *arg, enum vidmm_log_level level, const char *msg)
{
    (void)arg;
    (void)level;
    if (strstr(msg, "userfaultfd write-watch") != NULL && strstr(msg, "no userfaultfd") == NULL)
        atomic_fetch_add(&watch_msgs, 1);
}

enum range_mode { MODE_SNAPSHOT, MODE_WATCH, MODE_LAZY };
static const char *const mode_names[] = { "snapshot", "write-watch", "lazy" };

static void dirty_rows_cycles(enum range_mode mode)
{
    const bool snapshot = mode == MODE_SNAPSHOT;
    if (snapshot)
        cr_assert_eq(setenv("VIDMM_RANGE_DIRTY", "snapshot", 1), 0);
    else
        unsetenv("VIDMM_RANGE_DIRTY");
    atomic_store(&watch_msgs, 0);
    vidmm_set_log_fn(watch_hook, NULL, VIDMM_LOG_DEBUG);
    struct fx *f = fx_new_ex(2, mode == MODE_LAZY ? VIDMM_DEVICE_LAZY_RANGES : 0);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 11);
    unsigned char *want = malloc(SZ), *tiled = malloc(SZ), *got = malloc(SZ);
    memcpy(want, f->linear, SZ);
    uint32_t r = 1234;
#define NEXT() (r = r * 1103515245u + 12345u, r >> 8)
    for (int cycle = 0; cycle < 6; cycle++) {
        const bool ro = cycle == 3;
        unsigned char *p = range_lock(f, h, ro ? VIDMM_LOCK_READ_ONLY : 0, 0);
        cr_assert_eq(memcmp(p, want, SZ), 0, "cycle %d: the view does not show the content", cycle);
        for (int k = 0; k < 1 + cycle; k++) {
            size_t off = NEXT() % SZ, len = 1 + NEXT() % 600;
            if (off + len > SZ)
                len = SZ - off;
            for (size_t i = 0; i < len; i++)
                p[off + i] = (unsigned char)NEXT();
            if (!ro)
                memcpy(want + off, p + off, len);
        }
        if (cycle == 4)
            p[4095] ^= 0x80, want[4095] ^= 0x80; /* the last byte of a page: one row, one page */
        t_unlock(f->dev, h);
        t_swz(&f->z, want, tiled);
        t_read(f->dev, h, 0, got, SZ);
        cr_assert_eq(memcmp(got, tiled, SZ), 0, "cycle %d (%s): the tiled surface is not what the CPU wrote", cycle,
                     mode_names[mode]);
    }
#undef NEXT
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    if (snapshot)
        cr_assert_eq(atomic_load(&watch_msgs), 0, "VIDMM_RANGE_DIRTY=snapshot still made a write-watch");
    else if (mode == MODE_WATCH)
        cr_assert_gt(atomic_load(&watch_msgs), 0, "the kernel offers the write-watch, but the view had none");
    unsetenv("VIDMM_RANGE_DIRTY");
    free(want);
    free(tiled);
    free(got);
    fx_free(f);
}

Test(swz_lock, range_written_rows_by_snapshot)
{
    dirty_rows_cycles(MODE_SNAPSHOT);
}

Test(swz_lock, range_written_rows_by_write_watch)
{
    /* The userfaultfd backend, as the engine asks for it: skipped (not passed) where the kernel
     * or the privileges refuse it. */
    void *page = aligned_alloc(4096, 4096);
    cr_assert_not_null(page);
    struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
    d.base = page;
    d.size = 4096;
    d.backend = VIDMM_WRITEWATCH_UFFD;
    vidmm_writewatch *ww = NULL;
    int rc = vidmm_writewatch_create(&d, &ww);
    vidmm_writewatch_destroy(ww);
    free(page);
    if (rc != 0)
        cr_skip_test("no userfaultfd write-watch here (%s): ranges use the snapshot", vidmm_strerror(rc));
    dirty_rows_cycles(MODE_WATCH);
}

/* Rows wider than a page (2048 x 4 bytes: two pages a row, block-linear 2048 x 24): the
 * write-watch sends back only the written pages' part of a row, runs of wholly written rows as
 * one box, and a row whose two pages were written in separate places - every case against the
 * bytes the CPU left in the view, and with the snapshot alike. */
static void wide_rows(enum range_mode mode)
{
    const bool snapshot = mode == MODE_SNAPSHOT;
    if (snapshot)
        cr_assert_eq(setenv("VIDMM_RANGE_DIRTY", "snapshot", 1), 0);
    else
        unsetenv("VIDMM_RANGE_DIRTY");
    vidmm_device *dev = t_dev_std_ex(2, NULL, mode == MODE_LAZY ? VIDMM_DEVICE_LAZY_RANGES : 0);
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    struct vidmm_surface_desc sd;
    memset(&sd, 0, sizeof sd);
    sd.size = sizeof sd;
    sd.width = 2048;
    sd.height = 24;
    sd.depth = 1;
    sd.element_bytes = 4;
    sd.block_width = sd.block_height = 1;
    sd.mip_levels = 1;
    sd.array_layers = 1;
    uint64_t tsz;
    cr_assert_eq(vidmm_surface_tiled_size(&l, &sd, &tsz), 0);
    const size_t row = 2048 * 4, lsz = row * 24;
    struct vidmm_alloc_desc d = t_adesc(tsz, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_SWIZZLED;
    d.layout = &l;
    d.surface = &sd;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    unsigned char *tiled = malloc(tsz), *want = malloc(lsz), *exp = malloc(tsz), *got = malloc(tsz);
    t_bytes(tiled, (size_t)tsz, 21);
    t_write(dev, h, 0, tiled, (size_t)tsz);
    cr_assert_eq(vidmm_deswizzle_surface(&l, &sd, tiled, tsz, want, lsz), 0);
    for (int cycle = 0; cycle < 3; cycle++) {
        struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE);
        cr_assert_eq(vidmm_lock(dev, &a), 0);
        unsigned char *p = a.data;
        cr_assert_eq(memcmp(p, want, lsz), 0, "cycle %d: the view is not the content", cycle);
        size_t spots[][2] = { { 3 * row + 5000, 9 },               /* second page of row 3 only, */
                              { 3 * row + 8180, 12 },              /* up to the row's end */
                              { 5 * row + 100, 40 },               /* first page of row 5, */
                              { 5 * row + 4090, 6 },               /* up to the page's end */
                              { 7 * row + 10, 3 }, { 7 * row + 7000, 3 }, /* both pages, apart */
                              { 9 * row, 3 * row },                /* rows 9-11 whole */
                              { 14 * row + 4094, 4 } };            /* across a page boundary */
        for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
            size_t off = spots[k][0], len = spots[k][1];
            for (size_t i = 0; i < len; i++)
                p[off + i] = want[off + i] = (unsigned char)(0x40 + cycle * 16 + i);
        }
        t_unlock(dev, h);
        memcpy(exp, tiled, (size_t)tsz); /* the padding keeps its bytes */
        cr_assert_eq(vidmm_swizzle_surface(&l, &sd, exp, tsz, want, lsz), 0);
        t_read(dev, h, 0, got, (size_t)tsz);
        cr_assert_eq(memcmp(got, exp, tsz), 0, "cycle %d (%s): the tiled surface is not what the CPU wrote", cycle,
                     mode_names[mode]);
    }
    unsetenv("VIDMM_RANGE_DIRTY");
    free(tiled);
    free(want);
    free(exp);
    free(got);
    vidmm_device_destroy(dev);
}

Test(swz_lock, range_wide_rows_by_snapshot)
{
    wide_rows(MODE_SNAPSHOT);
}

Test(swz_lock, range_wide_rows_by_write_watch)
{
    wide_rows(MODE_WATCH); /* the watch where the kernel offers it, else the snapshot once more */
}

/* spec 8.3: "VidMm caches acquired ranges per (allocation, PrivateDriverData): only the first
 * matching request calls the DDI". */
Test(swz_lock, s1_ranges_cached_per_private_data)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 4);
    range_lock(f, h, 0, 1);
    t_unlock(f->dev, h);
    range_lock(f, h, 0, 1);
    t_unlock(f->dev, h);
    cr_assert_eq(f->rec.n_acq, 1, "a cached range was acquired again (%u calls)", f->rec.n_acq);
    range_lock(f, h, 0, 2);
    t_unlock(f->dev, h);
    cr_assert_eq(f->rec.n_acq, 2, "another PrivateDriverData did not acquire a range");
    cr_assert_eq(f->rec.acq[1].private_data, 2);
    cr_assert_neq(f->rec.acq[1].range_id, f->rec.acq[0].range_id);
    cr_assert_eq(f->rec.n_rel, 0);
    fx_free(f);
}

/* spec 8.2 state (1): "If none can be acquired: evict to system memory, asking the KMD to
 * unswizzle during that transfer" - no ranges at all (NumberOfSwizzlingRanges 0); the lock
 * returns the linear backing store. */
Test(swz_lock, s1_no_ranges_unswizzling_eviction)
{
    struct fx *f = fx_new(0);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 5);
    t_log_clear(f->dev);
    unsigned char *p = range_lock(f, h, 0, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    expect_unswizzling_eviction(f, log, h);
    cr_assert_eq(f->rec.n_acq, 0, "acquire called with no ranges");
    cr_assert_eq(memcmp(p, f->linear, SZ), 0, "the backing store is not the linear surface");
    t_unlock(f->dev, h);
    free(log);
    fx_free(f);
}

/* spec 8.3: "STATUS_GRAPHICS_UNSWIZZLING_APERTURE_UNSUPPORTED -> VidMm fails the acquisition
 * without retrying"; spec 15.15 "UNSUPPORTED ... -> fall back to unswizzling eviction". */
Test(swz_lock, s1_unsupported_unswizzling_eviction)
{
    struct fx *f = fx_new(2);
    f->rec.acq_default = VIDMM_STATUS_UNSWIZZLING_APERTURE_UNSUPPORTED;
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 6);
    t_log_clear(f->dev);
    unsigned char *p = range_lock(f, h, 0, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    cr_assert_eq(f->rec.n_acq, 1, "UNSUPPORTED was retried (%u calls)", f->rec.n_acq);
    expect_unswizzling_eviction(f, log, h);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    t_unlock(f->dev, h);
    free(log);
    fx_free(f);
}

/* spec 8.2 state (1): "unless DonotEvict is set (then fail with D3DERR_NOTAVAILABLE)". */
Test(swz_lock, s1_donot_evict_not_available)
{
    struct fx *f = fx_new(0);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 7);
    struct t_snap s;
    t_snap1(&s, f->dev, h);
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | VIDMM_LOCK_DONOT_EVICT);
    T_REFUSED(&s, vidmm_lock(f->dev, &a), VIDMM_E_NOT_AVAILABLE);
    fx_free(f);
}

/* spec 8.2 state (1): "if the allocation is pinned it cannot be evicted
 * (D3DDDIERR_CANTEVICTPINNEDALLOCATION)". */
Test(swz_lock, s1_pinned_cant_evict)
{
    struct fx *f = fx_new(0);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, VIDMM_ALLOC_OVERLAY, 8);
    struct t_snap s;
    t_snap1(&s, f->dev, h);
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE);
    T_REFUSED(&s, vidmm_lock(f->dev, &a), VIDMM_E_CANT_EVICT_PINNED);
    fx_free(f);
}

/* spec 8.2 state (2): "Evicted swizzled ... first page it into a memory segment, then proceed as
 * (1)" - the page-in copies the tiled bytes (no conversion), then a range is acquired. */
Test(swz_lock, s2_evicted_swizzled_paged_in_first)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 9);
    t_evict(f->dev, h);
    cr_assert(t_query(f->dev, h).evicted_swizzled);
    t_log_clear(f->dev);
    unsigned char *p = range_lock(f, h, 0, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert_geq(t, 0, "no page-in before the range lock");
    cr_assert_eq(log->op[t].src.segment_id, 0);
    cr_assert_eq(log->op[t].dst.segment_id, T_VIS);
    cr_assert_eq(log->op[t].flags & (VIDMM_TRANSFER_SWIZZLE | VIDMM_TRANSFER_UNSWIZZLE), 0,
                 "page-in of a swizzled copy converted it");
    cr_assert_eq(t_query(f->dev, h).where, VIDMM_WHERE_SEGMENT);
    cr_assert_eq(f->rec.n_acq, 1);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    t_unlock(f->dev, h);
    free(log);
    fx_free(f);
}

/* spec 8.2 state (2): "... or located in an aperture segment: ... first page it into a memory
 * segment, then proceed as (1)". */
Test(swz_lock, s2_aperture_paged_into_memory_first)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS) | T_SET(T_APE), T_PREF(0, T_APE), 0, 10);
    cr_assert_eq(t_query(f->dev, h).where, VIDMM_WHERE_APERTURE);
    unsigned char *p = range_lock(f, h, 0, 0);
    struct vidmm_alloc_info in = t_query(f->dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_SEGMENT, "range lock of an aperture-resident swizzled allocation: where=%u",
                 in.where);
    cr_assert_eq(in.segment_id, T_VIS);
    cr_assert_eq(f->rec.n_acq, 1);
    cr_assert_eq(f->rec.acq[0].segment_id, T_VIS);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    t_unlock(f->dev, h);
    fx_free(f);
}

/* spec 8.2 state (3): "Evicted unswizzled: Return the existing pointer, no work." */
Test(swz_lock, s3_evicted_unswizzled_no_work)
{
    struct fx *f = fx_new(0);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 11);
    unsigned char *p1 = range_lock(f, h, 0, 0);
    t_unlock(f->dev, h);
    t_log_clear(f->dev);
    uint64_t issued = t_paging_total(f->dev);
    unsigned char *p2 = range_lock(f, h, 0, 0);
    struct vidmm_paging_op op;
    cr_assert_eq(vidmm_paging_log_read(f->dev, &op, 1), 0, "state (3) lock paged (%s)", t_op_name(op.type));
    cr_assert_eq(t_paging_total(f->dev), issued, "state (3) lock issued paging");
    cr_assert_eq(p2, p1, "state (3) lock returned another pointer");
    cr_assert_eq(memcmp(p2, f->linear, SZ), 0);
    cr_assert_eq(t_query(f->dev, h).where, VIDMM_WHERE_SYSMEM);
    t_unlock(f->dev, h);
    fx_free(f);
}

/* spec 8.2 "GPU use after CPU access": "Evicted to system memory in unswizzled form -> pages
 * cannot be mapped into an aperture segment; VidMm pages it into a memory segment with the
 * Swizzle transfer flag" (its set has the aperture too). */
Test(swz_lock, gpu_unswizzled_swizzles_into_memory)
{
    struct fx *f = fx_new(0);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS) | T_SET(T_APE), T_PREF(0, T_VIS), 0, 12);
    unsigned char *p = range_lock(f, h, 0, 0);
    t_bytes(f->buf, SZ, 55);
    memcpy(p, f->buf, SZ);
    t_unlock(f->dev, h);
    t_log_clear(f->dev);
    struct vidmm_residency where;
    t_signal(f->dev, t_submit1(f->dev, h, 0, &where));
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    if (t < 0)
        t_log_dump(log, "submission");
    cr_assert_geq(t, 0, "no page-in TRANSFER");
    cr_assert(log->op[t].flags & VIDMM_TRANSFER_SWIZZLE, "page-in without SWIZZLE (flags 0x%x)", log->op[t].flags);
    cr_assert_eq(log->op[t].src.segment_id, 0);
    cr_assert_eq(log->op[t].dst.segment_id, T_VIS);
    cr_assert_eq(where.segment_id, T_VIS);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_MAP_APERTURE_SEGMENT, h), 0, "an unswizzled copy mapped into an aperture");
    unsigned char *want = malloc(SZ);
    t_swz(&f->z, f->buf, want);
    cr_assert_eq(memcmp(where.cpu, want, SZ), 0, "the segment copy is not the swizzled CPU writes");
    free(want);
    free(log);
    fx_free(f);
}

/* The same, for an allocation whose first preference is the aperture. */
Test(swz_lock, gpu_unswizzled_never_to_aperture)
{
    struct fx *f = fx_new(0);
    struct vidmm_alloc_desc d = t_swz_desc(&f->z, T_SET(T_VIS) | T_SET(T_APE));
    d.preferred_segment = T_PREF(0, T_APE) | T_PREF(1, T_VIS);
    vidmm_handle h = t_alloc(f->dev, &d);
    /* Placed in the aperture first; the lock pages it into VIS (state 2), finds no range and
     * evicts it unswizzled (state 1). */
    t_resident(f->dev, h, NULL);
    range_lock(f, h, 0, 0);
    t_unlock(f->dev, h);
    cr_assert_eq(t_query(f->dev, h).where, VIDMM_WHERE_SYSMEM);
    cr_assert_not(t_query(f->dev, h).evicted_swizzled);
    struct vidmm_residency where;
    t_signal(f->dev, t_submit1(f->dev, h, 0, &where));
    cr_assert_eq(where.segment_id, T_VIS, "unswizzled copy placed in segment %u", where.segment_id);
    fx_free(f);
}

/* spec 8.2: "Locking without AcquireAperture yields a pointer to the raw swizzled bits". */
Test(swz_lock, raw_lock_tiled_bits)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 13);
    unsigned char *p = t_lock(f->dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert_eq(memcmp(p, f->tiled, SZ), 0, "raw lock does not show the tiled bits");
    cr_assert_eq(f->rec.n_acq, 0, "raw lock acquired a range");
    t_unlock(f->dev, h);
    fx_free(f);
}

/* spec 8.1: "Allocations marked Swizzled may stay swizzled when evicted" - a memory-pressure
 * eviction keeps the tiled bytes (no conversion flag) and says so. */
Test(swz_lock, pressure_eviction_keeps_tiled)
{
    struct fx *f = fx_new(2);
    vidmm_handle h = swz_alloc(f, T_SET(T_VIS), 0, 0, 14);
    t_use(f->dev, h, 0);
    vidmm_handle big = t_alloc_simple(f->dev, T_VIS_SIZE, T_SET(T_VIS));
    t_log_clear(f->dev);
    t_use(f->dev, big, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    ptrdiff_t t = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert_geq(t, 0, "the swizzled allocation was not evicted");
    cr_assert_eq(log->op[t].flags & (VIDMM_TRANSFER_SWIZZLE | VIDMM_TRANSFER_UNSWIZZLE), 0);
    struct vidmm_alloc_info in = t_query(f->dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_SYSMEM);
    cr_assert(in.evicted_swizzled);
    unsigned char *got = malloc(SZ);
    t_read(f->dev, h, 0, got, SZ);
    cr_assert_eq(memcmp(got, f->tiled, SZ), 0);
    free(got);
    free(log);
    fx_free(f);
}

/* =============================================================================================
 * spec 15.15: the swizzling-range pool.
 * =========================================================================================== */

/* spec 15.15: "UNAVAILABLE -> release the least-recently-used range that is not inside an active
 * lock and retry". */
Test(item15_15, unavailable_releases_lru_range)
{
    struct fx *f = fx_new(4);
    vidmm_handle a = swz_alloc(f, T_SET(T_VIS), 0, 0, 20);
    vidmm_handle b = swz_alloc(f, T_SET(T_VIS), 0, 0, 21);
    vidmm_handle d = swz_alloc(f, T_SET(T_VIS), 0, 0, 22);
    vidmm_handle c = swz_alloc(f, T_SET(T_VIS), 0, 0, 23);
    range_lock(f, d, 0, 0); /* held: in an active lock, never released */
    range_lock(f, a, 0, 0);
    t_unlock(f->dev, a);
    range_lock(f, b, 0, 0);
    t_unlock(f->dev, b);
    cr_assert_eq(f->rec.n_acq, 3);
    uint32_t range_a = f->rec.acq[1].range_id;
    f->rec.acq_status[3] = VIDMM_STATUS_UNSWIZZLING_APERTURE_UNAVAILABLE;
    unsigned char *p = range_lock(f, c, 0, 0);
    cr_assert_eq(f->rec.n_rel, 1, "%u ranges released, expected the least recently used one", f->rec.n_rel);
    cr_assert_eq(f->rec.rel[0].allocation, a, "released the range of %u, the LRU range is %u's", f->rec.rel[0].allocation, a);
    cr_assert_eq(f->rec.rel[0].range_id, range_a);
    cr_assert_eq(f->rec.n_acq, 5, "no retry after UNAVAILABLE");
    cr_assert_eq(f->rec.acq[4].allocation, c);
    cr_assert_eq(t_query(f->dev, c).where, VIDMM_WHERE_SEGMENT, "fell back to eviction though a retry succeeded");
    t_deswz(&f->z, f->tiled, f->linear);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    t_unlock(f->dev, c);
    /* b's range is still cached. */
    range_lock(f, b, 0, 0);
    t_unlock(f->dev, b);
    cr_assert_eq(f->rec.n_acq, 5, "b's cached range was released");
    t_unlock(f->dev, d);
    fx_free(f);
}

/* spec 15.15: "... and retry until none is left; UNSUPPORTED or exhausted -> fall back to
 * unswizzling eviction". */
Test(item15_15, unavailable_until_none_left)
{
    struct fx *f = fx_new(2);
    vidmm_handle a = swz_alloc(f, T_SET(T_VIS), 0, 0, 30);
    vidmm_handle c = swz_alloc(f, T_SET(T_VIS), 0, 0, 31);
    range_lock(f, a, 0, 0);
    t_unlock(f->dev, a);
    f->rec.acq_default = VIDMM_STATUS_UNSWIZZLING_APERTURE_UNAVAILABLE;
    t_log_clear(f->dev);
    unsigned char *p = range_lock(f, c, 0, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    bool released_a = false;
    for (uint32_t i = 0; i < f->rec.n_rel; i++)
        released_a |= f->rec.rel[i].allocation == a;
    cr_assert(released_a, "a's idle range was not released before giving up");
    cr_assert_geq(f->rec.n_acq, 3, "no retry after UNAVAILABLE");
    expect_unswizzling_eviction(f, log, c);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    t_unlock(f->dev, c);
    free(log);
    fx_free(f);
}

/* spec 15.15: ranges in an active lock are never taken: with the only range held, another
 * allocation falls back to unswizzling eviction. */
Test(item15_15, exhausted_falls_back)
{
    struct fx *f = fx_new(1);
    vidmm_handle a = swz_alloc(f, T_SET(T_VIS), 0, 0, 40);
    vidmm_handle c = swz_alloc(f, T_SET(T_VIS), 0, 0, 41);
    range_lock(f, a, 0, 0);
    t_log_clear(f->dev);
    unsigned char *p = range_lock(f, c, 0, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    cr_assert_eq(f->rec.n_rel, 0, "a range in an active lock was released");
    expect_unswizzling_eviction(f, log, c);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    cr_assert_eq(t_query(f->dev, a).where, VIDMM_WHERE_SEGMENT);
    t_unlock(f->dev, c);
    t_unlock(f->dev, a);
    free(log);
    fx_free(f);
}

/* spec 15.15: "Ranges are released on ... reuse" - the only range, idle, moves to the next
 * allocation: Release for the old owner, then Acquire with the same RangeId. */
Test(item15_15, range_reused)
{
    struct fx *f = fx_new(1);
    vidmm_handle a = swz_alloc(f, T_SET(T_VIS), 0, 0, 50);
    vidmm_handle c = swz_alloc(f, T_SET(T_VIS), 0, 0, 51);
    range_lock(f, a, 0, 0);
    t_unlock(f->dev, a);
    range_lock(f, c, 0, 0);
    cr_assert_eq(f->rec.n_rel, 1);
    cr_assert_eq(f->rec.rel[0].allocation, a);
    cr_assert_eq(f->rec.rel[0].range_id, 0);
    cr_assert_eq(f->rec.n_acq, 2);
    cr_assert_eq(f->rec.acq[1].allocation, c);
    cr_assert_eq(f->rec.acq[1].range_id, 0);
    cr_assert_eq(t_query(f->dev, c).where, VIDMM_WHERE_SEGMENT);
    t_unlock(f->dev, c);
    fx_free(f);
}

/* spec 15.15: "Ranges are released on evict, destroy ..., and Release is called per RangeId". */
Test(item15_15, released_on_evict_and_destroy)
{
    struct fx *f = fx_new(4);
    vidmm_handle a = swz_alloc(f, T_SET(T_VIS), 0, 0, 60);
    vidmm_handle b = swz_alloc(f, T_SET(T_VIS), 0, 0, 61);
    range_lock(f, a, 0, 0);
    t_unlock(f->dev, a);
    range_lock(f, a, 0, 1);
    t_unlock(f->dev, a);
    range_lock(f, b, 0, 0);
    t_unlock(f->dev, b);
    cr_assert_eq(f->rec.n_acq, 3);
    uint64_t released = t_stats(f->dev).ranges_released;
    t_evict(f->dev, a);
    cr_assert_eq(f->rec.n_rel, 2, "evicting an allocation with two ranges released %u", f->rec.n_rel);
    cr_assert_eq(f->rec.rel[0].allocation, a);
    cr_assert_eq(f->rec.rel[1].allocation, a);
    cr_assert_neq(f->rec.rel[0].range_id, f->rec.rel[1].range_id, "Release not called per RangeId");
    cr_assert_eq(t_stats(f->dev).ranges_released, released + 2);
    T_OK(vidmm_alloc_destroy(f->dev, b));
    cr_assert_eq(f->rec.n_rel, 3);
    cr_assert_eq(f->rec.rel[2].allocation, b);
    cr_assert_eq(f->rec.rel[2].range_id, f->rec.acq[2].range_id);
    fx_free(f);
}

/* spec 15.15: "Any MIP range failing evicts the whole allocation and releases all its ranges". */
Test(item15_15, one_range_failing_evicts_all)
{
    struct fx *f = fx_new(4);
    vidmm_handle a = swz_alloc(f, T_SET(T_VIS), 0, 0, 70);
    range_lock(f, a, 0, 0);
    t_unlock(f->dev, a);
    f->rec.acq_default = VIDMM_STATUS_UNSWIZZLING_APERTURE_UNSUPPORTED;
    t_log_clear(f->dev);
    unsigned char *p = range_lock(f, a, 0, 1);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(f->dev, log);
    expect_unswizzling_eviction(f, log, a);
    cr_assert_eq(f->rec.n_rel, 1, "the allocation's other range was not released");
    cr_assert_eq(f->rec.rel[0].allocation, a);
    cr_assert_eq(f->rec.rel[0].range_id, f->rec.acq[0].range_id);
    cr_assert_eq(memcmp(p, f->linear, SZ), 0);
    t_unlock(f->dev, a);
    free(log);
    fx_free(f);
}

/* Runs of written rows of 1 MiB or more go back with streaming stores (lock.c retile_box()):
 * a 2048 x 192 block-linear surface of 4-byte elements (1.5 MiB) in a 4 MiB segment, rows
 * 20-169 written whole (1.17 MiB, one box), a few bytes of two other rows, a READ_ONLY cycle
 * between; every cycle against the bytes the CPU left in the view, found by the write-watch
 * (where the kernel offers it) and by the snapshot. */
static void whole_rows_streamed(enum range_mode mode)
{
    if (mode == MODE_SNAPSHOT)
        cr_assert_eq(setenv("VIDMM_RANGE_DIRTY", "snapshot", 1), 0);
    else
        unsetenv("VIDMM_RANGE_DIRTY");
    static struct vidmm_segment_desc segs[1];
    segs[0] = t_mem_seg(T_VIS_BASE, 4 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(segs, 1);
    dd.swizzling_ranges = 2;
    vidmm_device *dev = t_dev(&dd);
    struct t_surf sf; /* t_surf_alloc() takes segment 1, the only one here */
    t_surf_init(&sf, VIDMM_TILING_BLOCK_LINEAR, 2048, 192, 1, 4, 1, 1);
    t_surf_sizes(&sf);
    const struct vidmm_tile_layout l = sf.layout;
    const struct vidmm_surface_desc sd = sf.desc;
    const uint64_t tsz = sf.tiled;
    const size_t row = 2048 * 4, lsz = (size_t)sf.linear;
    unsigned char *tiled = malloc(tsz), *want = malloc(lsz), *exp = malloc(tsz), *got = malloc(tsz);
    cr_assert(tiled && want && exp && got);
    vidmm_handle h = t_surf_alloc(dev, &sf, tiled, 33);
    cr_assert_eq(vidmm_deswizzle_surface(&l, &sd, tiled, tsz, want, lsz), 0);
    for (int cycle = 0; cycle < 3; cycle++) {
        const bool ro = cycle == 1;
        struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | (ro ? VIDMM_LOCK_READ_ONLY : 0));
        cr_assert_eq(vidmm_lock(dev, &a), 0);
        unsigned char *p = a.data;
        cr_assert_eq(memcmp(p, want, lsz), 0, "cycle %d: the view is not the content", cycle);
        for (size_t i = 20 * row; i < 170 * row; i++) {
            p[i] = (unsigned char)(i * 7 + cycle);
            if (!ro)
                want[i] = p[i];
        }
        for (size_t i = 0; i < 5; i++) {
            p[3 * row + 4000 + i] = p[180 * row + 12 + i] = (unsigned char)(0xC0 + cycle);
            if (!ro)
                want[3 * row + 4000 + i] = want[180 * row + 12 + i] = (unsigned char)(0xC0 + cycle);
        }
        t_unlock(dev, h);
        memcpy(exp, tiled, (size_t)tsz); /* the padding keeps its bytes */
        cr_assert_eq(vidmm_swizzle_surface(&l, &sd, exp, tsz, want, lsz), 0);
        t_read(dev, h, 0, got, (size_t)tsz);
        ptrdiff_t at = -1;
        for (size_t i = 0; i < (size_t)tsz && at < 0; i++)
            if (got[i] != exp[i])
                at = (ptrdiff_t)i;
        cr_assert_eq(at, -1, "cycle %d (%s): tiled byte %td is not what the CPU wrote (0x%02x, want 0x%02x, before 0x%02x)",
                     cycle, mode_names[mode], at, at >= 0 ? got[at] : 0, at >= 0 ? exp[at] : 0, at >= 0 ? tiled[at] : 0);
    }
    unsetenv("VIDMM_RANGE_DIRTY");
    free(tiled);
    free(want);
    free(exp);
    free(got);
    vidmm_device_destroy(dev);
}

Test(swz_lock, range_whole_rows_streamed_by_snapshot)
{
    whole_rows_streamed(MODE_SNAPSHOT);
}

Test(swz_lock, range_whole_rows_streamed_by_write_watch)
{
    whole_rows_streamed(MODE_WATCH); /* the watch where the kernel offers it, else the snapshot once more */
}
