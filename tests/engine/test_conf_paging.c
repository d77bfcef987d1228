/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_paging.c - conformance: paging operations toward the driver (spec
 * 15.7), fills (15.8), aperture mapping (15.9), the reference executor (15.10), cache
 * maintenance (15.24), SynchronousPaging (15.25), device removal (15.27) and determinism with
 * the paging log (15.28). Suites are named item15_NN after the item. */
#include "t_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The operation fields that must be identical when an operation is passed again (spec 15.7:
 * "repeat the identical arguments"); multipass_offset and the flags are checked apart. */
static void same_op(const struct vidmm_paging_op *a, const struct vidmm_paging_op *b, const char *what)
{
    cr_assert_eq(a->type, b->type, "%s: type", what);
    cr_assert_eq(a->allocation, b->allocation, "%s: allocation", what);
    cr_assert_eq(a->driver_data, b->driver_data, "%s: driver_data", what);
    cr_assert_eq(a->size, b->size, "%s: size", what);
    cr_assert_eq(a->transfer_offset, b->transfer_offset, "%s: transfer_offset", what);
    cr_assert_eq(a->mdl_offset, b->mdl_offset, "%s: mdl_offset", what);
    cr_assert_eq(a->src.segment_id, b->src.segment_id, "%s: src.segment_id", what);
    cr_assert_eq(a->src.segment_address, b->src.segment_address, "%s: src.segment_address", what);
    cr_assert_eq(a->dst.segment_id, b->dst.segment_id, "%s: dst.segment_id", what);
    cr_assert_eq(a->dst.segment_address, b->dst.segment_address, "%s: dst.segment_address", what);
    cr_assert_eq(a->offset_in_pages, b->offset_in_pages, "%s: offset_in_pages", what);
    cr_assert_eq(a->fill_pattern, b->fill_pattern, "%s: fill_pattern", what);
    cr_assert_eq(a->fence, b->fence, "%s: fence", what);
}

/* Index of the first recorded driver call of 'type' for 'h' from 'from', or -1. */
static int rec_find(struct t_rec *r, uint32_t type, vidmm_handle h, uint32_t from)
{
    uint32_t n = t_rec_ops(r);
    for (uint32_t i = from; i < n && i < T_REC_MAX; i++)
        if (r->ops[i].type == type && r->ops[i].allocation == h)
            return (int)i;
    return -1;
}

/* =============================================================================================
 * spec 15.7: paging-operation sequencing toward the driver.
 * =========================================================================================== */

/* spec 9.3 / 15.7: a FILL carries the allocation, its driver data (hAllocation), the rounded
 * size, the pattern, the destination, MultipassOffset 0; the log holds the same record. */
Test(item15_07, fill_op_fields)
{
    struct t_rec rec;
    t_rec_init(&rec);
    struct vidmm_driver drv = t_rec_driver(&rec, true, false, false);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    vidmm_handle h = t_alloc_simple(dev, 60 * T_KiB + 8, T_SET(T_VIS));
    t_log_clear(dev);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    int i = rec_find(&rec, VIDMM_PAGING_FILL, h, 0);
    cr_assert_geq(i, 0, "the driver saw no FILL");
    const struct vidmm_paging_op *o = &rec.ops[i];
    cr_assert_eq(o->driver_data, T_DRV_DATA);
    cr_assert_eq(o->size, 64 * T_KiB, "FILL size %llu, the rounded size is 64 KiB", (unsigned long long)o->size);
    cr_assert_eq(o->size % 4, 0);
    cr_assert_eq(o->fill_pattern, T_FILL);
    cr_assert_eq(o->dst.segment_id, T_VIS);
    cr_assert_eq(o->dst.segment_address, where.gpu_address);
    cr_assert_eq(o->multipass_offset, 0);
    cr_assert_not_null(o->dst_ptr);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t j = t_log_find(log, VIDMM_PAGING_FILL, h, 0);
    cr_assert_geq(j, 0, "the paging log has no FILL");
    same_op(&log->op[j], o, "log record vs driver call");
    t_expect_fill(dev, h, 0, 60 * T_KiB + 8, T_FILL);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.7: "Split transfers carry TransferStart on the first sub-transfer, TransferEnd on the
 * last ... The engine issues TransferOffset = 0 unless it splits" - a 64 KiB eviction is one
 * TRANSFER with both flags. */
Test(item15_07, unsplit_transfer_flags)
{
    struct t_rec rec;
    t_rec_init(&rec);
    struct vidmm_driver drv = t_rec_driver(&rec, true, false, false);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    uint32_t from = t_rec_ops(&rec);
    t_evict(dev, h);
    int i = rec_find(&rec, VIDMM_PAGING_TRANSFER, h, from);
    cr_assert_geq(i, 0);
    const struct vidmm_paging_op *o = &rec.ops[i];
    cr_assert_eq(o->flags & (VIDMM_TRANSFER_START | VIDMM_TRANSFER_END), VIDMM_TRANSFER_START | VIDMM_TRANSFER_END,
                 "unsplit TRANSFER flags 0x%x", o->flags);
    cr_assert_eq(o->transfer_offset, 0);
    cr_assert_eq(o->mdl_offset, 0);
    cr_assert_eq(o->size, 64 * T_KiB);
    cr_assert_eq(o->src.segment_id, T_VIS);
    cr_assert_eq(o->src.segment_address, where.gpu_address);
    cr_assert_eq(o->dst.segment_id, 0);
    cr_assert_eq(o->driver_data, T_DRV_DATA);
    cr_assert_eq(o->multipass_offset, 0);
    cr_assert_not_null(o->src_ptr);
    cr_assert_not_null(o->dst_ptr);
    vidmm_device_destroy(dev);
}

/* spec 15.7: "on INSUFFICIENT_DMA_BUFFER ... repeat the identical arguments", "MultipassOffset =
 * 0 at the start of each operation and preserved across retries". */
Test(item15_07, insufficient_dma_buffer_repeats)
{
    struct t_rec rec;
    t_rec_init(&rec);
    rec.mode = T_REC_DMA_ONCE;
    rec.mode_type = VIDMM_PAGING_FILL;
    struct vidmm_driver drv = t_rec_driver(&rec, true, false, false);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    int i = rec_find(&rec, VIDMM_PAGING_FILL, h, 0);
    cr_assert_geq(i, 0);
    cr_assert_eq(rec.status_ret[i], VIDMM_STATUS_INSUFFICIENT_DMA_BUFFER);
    cr_assert_eq(rec.ops[i].multipass_offset, 0, "first call's MultipassOffset %u", rec.ops[i].multipass_offset);
    cr_assert_gt(t_rec_ops(&rec), (uint32_t)i + 1, "the operation was not passed again");
    const struct vidmm_paging_op *again = &rec.ops[i + 1];
    same_op(again, &rec.ops[i], "the retry");
    cr_assert_eq(again->flags, rec.ops[i].flags);
    cr_assert_eq(again->multipass_offset, 7, "the retry's MultipassOffset is %u, the driver left 7",
                 again->multipass_offset);
    cr_assert_eq(rec.status_ret[i + 1], VIDMM_STATUS_SUCCESS);
    t_expect_fill(dev, h, 0, 64 * T_KiB, T_FILL);
    /* The next operation starts again at 0. */
    uint32_t from = t_rec_ops(&rec);
    t_evict(dev, h);
    int k = rec_find(&rec, VIDMM_PAGING_TRANSFER, h, from);
    cr_assert_geq(k, 0);
    cr_assert_eq(rec.ops[k].multipass_offset, 0);
    vidmm_device_destroy(dev);
}

/* spec 15.7: "on ALLOCATION_BUSY (Transfer/Discard/SpecialLockTransfer only) wait for the
 * allocation's fences, then repeat with AllocationIsIdle = 1". Idle allocation: the retry comes
 * at once. */
Test(item15_07, allocation_busy_retried_with_idle_flag)
{
    struct t_rec rec;
    t_rec_init(&rec);
    rec.mode = T_REC_BUSY_ONCE;
    struct vidmm_driver drv = t_rec_driver(&rec, true, false, false);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    unsigned char buf[1024], back[1024];
    t_bytes(buf, sizeof(buf), 21);
    t_write(dev, h, 0, buf, sizeof(buf));
    uint32_t from = t_rec_ops(&rec);
    t_evict(dev, h);
    int i = rec_find(&rec, VIDMM_PAGING_TRANSFER, h, from);
    cr_assert_geq(i, 0);
    cr_assert_eq(rec.status_ret[i], VIDMM_STATUS_ALLOCATION_BUSY);
    cr_assert_gt(t_rec_ops(&rec), (uint32_t)i + 1, "the TRANSFER was not passed again");
    const struct vidmm_paging_op *again = &rec.ops[i + 1];
    same_op(again, &rec.ops[i], "the retry after ALLOCATION_BUSY");
    cr_assert(again->flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE, "retry without ALLOCATION_IS_IDLE (flags 0x%x)",
              again->flags);
    cr_assert_eq(again->flags & ~VIDMM_TRANSFER_ALLOCATION_IS_IDLE, rec.ops[i].flags & ~VIDMM_TRANSFER_ALLOCATION_IS_IDLE);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    t_read(dev, h, 0, back, sizeof(back));
    cr_assert_eq(memcmp(buf, back, sizeof(buf)), 0);
    vidmm_device_destroy(dev);
}

/* spec 15.7: the ALLOCATION_BUSY retry comes only once the allocation is idle: a busy victim's
 * eviction is passed again after its fence is signalled. */
Test(item15_07, allocation_busy_waits_for_idle, .timeout = 30)
{
    struct t_rec rec;
    t_rec_init(&rec);
    rec.mode = T_REC_BUSY_ONCE;
    struct vidmm_driver drv = t_rec_driver(&rec, true, false, false);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    vidmm_handle a = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    uint64_t f = t_submit1(dev, a, 0, NULL);
    uint32_t from = t_rec_ops(&rec);
    struct t_later l;
    t_signal_later(&l, dev, f, 300, &rec.flag);
    struct vidmm_alloc_ref ref = { b, 0 };
    uint64_t fb = 0;
    int rc = vidmm_submit(dev, &ref, 1, 0, NULL, &fb);
    t_later_join(&l);
    cr_assert_eq(rc, 0, "vidmm_submit() returned %d (%s)", rc, vidmm_strerror(rc));
    int i = rec_find(&rec, VIDMM_PAGING_TRANSFER, a, from);
    cr_assert_geq(i, 0, "the busy victim was not transferred");
    for (uint32_t k = (uint32_t)i; k < t_rec_ops(&rec) && k < T_REC_MAX; k++) {
        const struct vidmm_paging_op *o = &rec.ops[k];
        if (o->allocation != a || o->type != VIDMM_PAGING_TRANSFER)
            continue;
        if (o->flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE)
            cr_assert(rec.flag_at[k], "call %u has ALLOCATION_IS_IDLE before the fence was signalled", k);
    }
    if (rec.status_ret[i] == VIDMM_STATUS_ALLOCATION_BUSY) {
        cr_assert(rec.ops[i + 1].flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE);
        cr_assert(rec.flag_at[i + 1], "the retry came before the allocation was idle");
    }
    t_signal(dev, fb);
    vidmm_device_destroy(dev);
}

/* spec 15.7: "any other non-success -> fatal (return STATUS_GRAPHICS_ALLOCATION_INVALID to the
 * caller and mark the device removed)". */
Test(item15_07, fatal_status_removes_device)
{
    struct t_rec rec;
    t_rec_init(&rec);
    rec.mode = T_REC_FATAL_ONCE;
    rec.mode_type = VIDMM_PAGING_FILL;
    struct vidmm_driver drv = t_rec_driver(&rec, true, false, false);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    T_RC(vidmm_make_resident(dev, &h, 1, NULL), VIDMM_E_ALLOCATION_INVALID);
    struct vidmm_alloc_desc d = t_adesc(4096, T_SET(T_VIS));
    vidmm_handle out = T_OUT_SENTINEL;
    T_RC(vidmm_alloc_create(dev, &d, &out), VIDMM_E_DEVICE_REMOVED);
    cr_assert_eq(out, T_OUT_SENTINEL);
    T_RC(vidmm_make_resident(dev, &h, 1, NULL), VIDMM_E_DEVICE_REMOVED);
    T_RC(vidmm_device_remove(dev), VIDMM_E_DEVICE_REMOVED);
    struct vidmm_stats st = t_stats(dev);
    (void)st;
    vidmm_device_destroy(dev);
}

/* spec 15.28 / device.h: "Records come in the order operations were issued." */
Test(item15_07, log_in_issue_order)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_log_clear(dev);
    t_resident(dev, a, NULL);
    t_resident(dev, b, NULL);
    t_evict(dev, a);
    t_use(dev, a, 0);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t fa = t_log_find(log, VIDMM_PAGING_FILL, a, 0);
    ptrdiff_t fb = t_log_find(log, VIDMM_PAGING_FILL, b, 0);
    ptrdiff_t out = t_log_find(log, VIDMM_PAGING_TRANSFER, a, 0);
    ptrdiff_t in = out >= 0 ? t_log_find(log, VIDMM_PAGING_TRANSFER, a, (size_t)out + 1) : -1;
    if (fa < 0 || fb < 0 || out < 0 || in < 0)
        t_log_dump(log, "sequence");
    cr_assert(fa >= 0 && fb > fa && out > fb && in > out, "log order %td %td %td %td", fa, fb, out, in);
    cr_assert_eq(log->op[out].dst.segment_id, 0);
    cr_assert_eq(log->op[in].src.segment_id, 0);
    /* Drained: a second read is empty. */
    struct vidmm_paging_op op;
    cr_assert_eq(vidmm_paging_log_read(dev, &op, 1), 0);
    free(log);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.8: Fill.
 * =========================================================================================== */

/* spec 15.8: "only for first page-in of an allocation without content" - a later page-in of the
 * same allocation is a TRANSFER. */
Test(item15_08, first_page_in_only)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_log_clear(dev);
    t_resident(dev, h, NULL);
    t_evict(dev, h);
    t_resident(dev, h, NULL);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, h), 1, "%zu FILLs", t_log_count(log, VIDMM_PAGING_FILL, h));
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_TRANSFER, h), 2);
    cr_assert_lt(t_log_find(log, VIDMM_PAGING_FILL, h, 0), t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0));
    struct vidmm_stats st = t_stats(dev);
    cr_assert_eq(st.paging_ops[VIDMM_PAGING_FILL], 1);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.8: "only into memory segments" - never into an aperture, and the content there is
 * the fill pattern anyway (brief: the engine initialises the backing store itself). */
Test(item15_08, never_into_aperture)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_APE));
    d.fill_pattern = 0x01020304u;
    vidmm_handle h = t_alloc(dev, &d);
    t_log_clear(dev);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, 0), 0, "FILL emitted for an aperture placement");
    cr_assert_eq(t_stats(dev).paging_ops[VIDMM_PAGING_FILL], 0, "FILL issued for an aperture placement");
    cr_assert(t_is_fill(where.cpu, 64 * T_KiB, 0x01020304u));
    t_expect_fill(dev, h, 0, 64 * T_KiB, 0x01020304u);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.8: "FillSize a multiple of 4, 32-bit FillPattern replicated" over the rounded size; each
 * allocation its own pattern. */
Test(item15_08, fill_fields_and_content)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(5000, T_SET(T_VIS));
    d.fill_pattern = 0xA1B2C3D4u;
    vidmm_handle a = t_alloc(dev, &d);
    d.fill_pattern = 0x0F1E2D3Cu;
    vidmm_handle b = t_alloc(dev, &d);
    t_log_clear(dev);
    struct vidmm_residency wa, wb;
    t_resident(dev, a, &wa);
    t_resident(dev, b, &wb);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t i = t_log_find(log, VIDMM_PAGING_FILL, a, 0);
    cr_assert_geq(i, 0);
    cr_assert_eq(log->op[i].size, 8192);
    cr_assert_eq(log->op[i].fill_pattern, 0xA1B2C3D4u);
    cr_assert_eq(log->op[i].dst.segment_id, T_VIS);
    cr_assert_eq(log->op[i].dst.segment_address, wa.gpu_address);
    cr_assert(t_is_fill(wa.cpu, 8192, 0xA1B2C3D4u));
    cr_assert(t_is_fill(wb.cpu, 8192, 0x0F1E2D3Cu));
    t_expect_fill(dev, a, 0, 5000, 0xA1B2C3D4u);
    t_expect_fill(dev, b, 0, 5000, 0x0F1E2D3Cu);
    free(log);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.9: aperture mapping.
 * =========================================================================================== */

/* spec 15.9: "page-in to an aperture = MAP_APERTURE_SEGMENT(OffsetInPages, NumberOfPages,
 * MdlOffset)". */
Test(item15_09, map_fields)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle pad = t_alloc_simple(dev, 128 * T_KiB, T_SET(T_APE));
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_APE));
    t_resident(dev, pad, NULL);
    t_log_clear(dev);
    t_resident(dev, h, NULL);
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_APERTURE);
    cr_assert_eq(in.offset, 128 * T_KiB);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t i = t_log_find(log, VIDMM_PAGING_MAP_APERTURE_SEGMENT, h, 0);
    cr_assert_geq(i, 0);
    const struct vidmm_paging_op *o = &log->op[i];
    cr_assert_eq(o->dst.segment_id, T_APE);
    cr_assert_eq(o->offset_in_pages, in.offset / T_PG);
    cr_assert_eq(o->size, 64 * T_KiB);
    cr_assert_eq(o->mdl_offset, 0);
    cr_assert_eq(o->flags & VIDMM_MAP_CACHE_COHERENT, 0);
    cr_assert_eq(o->driver_data, T_DRV_DATA);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 15.9: "page-out = UNMAP_APERTURE_SEGMENT" - the same pages, no transfer (the backing
 * store already holds the content), content intact. */
Test(item15_09, unmap_on_page_out)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_APE));
    t_resident(dev, h, NULL);
    struct vidmm_alloc_info in = t_query(dev, h);
    unsigned char buf[4096], back[4096];
    t_bytes(buf, sizeof(buf), 31);
    t_write(dev, h, 12288, buf, sizeof(buf));
    t_log_clear(dev);
    t_evict(dev, h);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t i = t_log_find(log, VIDMM_PAGING_UNMAP_APERTURE_SEGMENT, h, 0);
    cr_assert_geq(i, 0, "no UNMAP");
    cr_assert_eq(log->op[i].dst.segment_id, T_APE);
    cr_assert_eq(log->op[i].offset_in_pages, in.offset / T_PG);
    cr_assert_eq(log->op[i].size, 64 * T_KiB);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_TRANSFER, h), 0, "page-out of an aperture transferred");
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    t_read(dev, h, 12288, back, sizeof(back));
    cr_assert_eq(memcmp(buf, back, sizeof(buf)), 0);
    cr_assert_eq(t_stats(dev).segments[T_APE - 1].used, 0);
    free(log);
    vidmm_device_destroy(dev);
}

static uint32_t map_flags(bool coherent_segment, bool cached)
{
    struct vidmm_segment_desc s[2] = { t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE),
                                       t_aper_seg(T_APE_BASE, T_APE_SIZE,
                                                  coherent_segment ? VIDMM_SEGMENT_CACHE_COHERENT : 0) };
    struct vidmm_device_desc dd = t_ddesc(s, 2);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(2));
    if (cached)
        d.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle h = t_alloc(dev, &d);
    t_log_clear(dev);
    t_resident(dev, h, NULL);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t i = t_log_find(log, VIDMM_PAGING_MAP_APERTURE_SEGMENT, h, 0);
    cr_assert_geq(i, 0);
    uint32_t f = log->op[i].flags;
    free(log);
    vidmm_device_destroy(dev);
    return f;
}

/* spec 15.9: "CacheCoherent = (allocation Cached and segment CacheCoherent)". */
Test(item15_09, map_cache_coherent_flag)
{
    cr_assert_eq(map_flags(true, true) & VIDMM_MAP_CACHE_COHERENT, VIDMM_MAP_CACHE_COHERENT,
                 "Cached into a coherent aperture: no CacheCoherent");
    cr_assert_eq(map_flags(true, false) & VIDMM_MAP_CACHE_COHERENT, 0, "write-combined into a coherent aperture");
    cr_assert_eq(map_flags(false, true) & VIDMM_MAP_CACHE_COHERENT, 0, "Cached into a non-coherent aperture");
}

/* =============================================================================================
 * spec 15.10: the reference executor.
 * =========================================================================================== */

/* spec 15.10: "Transfer = memcpy ... Map/Unmap = PFN table update" - bytes survive a trip
 * segment -> eviction aperture -> segment, visible through every host view. */
Test(item15_10, transfers_move_bytes)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(128 * T_KiB, T_SET(T_VIS));
    d.eviction_set = T_SET(T_APE);
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    unsigned char *buf = malloc(128 * T_KiB), *back = malloc(128 * T_KiB);
    t_bytes(buf, 128 * T_KiB, 41);
    memcpy(where.cpu, buf, 128 * T_KiB);
    t_evict(dev, h);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_APERTURE);
    unsigned char *p = t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert_eq(memcmp(p, buf, 128 * T_KiB), 0, "aperture copy differs");
    t_unlock(dev, h);
    t_resident(dev, h, &where);
    cr_assert_eq(where.segment_id, T_VIS);
    cr_assert_eq(memcmp(where.cpu, buf, 128 * T_KiB), 0, "segment copy after the round trip differs");
    t_read(dev, h, 0, back, 128 * T_KiB);
    cr_assert_eq(memcmp(back, buf, 128 * T_KiB), 0);
    free(buf);
    free(back);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.24: cache maintenance hooks.
 * =========================================================================================== */

/* spec 15.24: "call flush_cpu_cache(range) before any GPU read of a Cached allocation that the
 * CPU wrote while it was placed in a non-coherent segment". */
Test(item15_24, flush_before_gpu_read)
{
    struct t_rec rec;
    t_rec_init(&rec);
    struct vidmm_driver drv = t_rec_driver(&rec, false, false, true);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    unsigned char *p = t_lock(dev, h, 0);
    memset(p, 0x66, 4096);
    t_unlock(dev, h);
    t_use(dev, h, 0);
    cr_assert_geq(rec.n_flush, 1, "no flush_cpu_cache before the GPU read");
    cr_assert_eq(rec.flush_p, (void *)p, "flushed %p, the CPU wrote at %p", rec.flush_p, (void *)p);
    cr_assert_eq(rec.flush_n, 64 * T_KiB);
    cr_assert_geq(t_stats(dev).cache_flushes, 1, "statistics count no cache flush");
    vidmm_device_destroy(dev);
}

/* spec 15.24: "invalidate_cpu_cache(range) before CPU reads after GPU writes". */
Test(item15_24, invalidate_before_cpu_read)
{
    struct t_rec rec;
    t_rec_init(&rec);
    struct vidmm_driver drv = t_rec_driver(&rec, false, false, true);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle h = t_alloc(dev, &d);
    t_use(dev, h, VIDMM_REF_WRITE);
    uint32_t before = rec.n_inval;
    void *p = t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert_gt(rec.n_inval, before, "no invalidate_cpu_cache before the CPU lock after a GPU write");
    cr_assert_eq(rec.inval_p, p);
    cr_assert_eq(rec.inval_n, 64 * T_KiB);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 15.24 applies to Cached allocations: a write-combined one gets no callbacks. */
Test(item15_24, uncached_no_maintenance)
{
    struct t_rec rec;
    t_rec_init(&rec);
    struct vidmm_driver drv = t_rec_driver(&rec, false, false, true);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_resident(dev, h, NULL);
    unsigned char *p = t_lock(dev, h, 0);
    memset(p, 1, 64);
    t_unlock(dev, h);
    t_use(dev, h, VIDMM_REF_WRITE);
    t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    t_unlock(dev, h);
    cr_assert_eq(rec.n_flush, 0);
    cr_assert_eq(rec.n_inval, 0);
    vidmm_device_destroy(dev);
}

/* spec 15.24: "expose InvalidateCache" - device.h: 0 for a range of the allocation,
 * VIDMM_E_INVALID_ARG outside it or for an unknown handle, nothing changed. */
Test(item15_24, invalidate_cache_api)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_CACHED;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    T_OK(vidmm_invalidate_cache(dev, h, 0, 4096));
    T_OK(vidmm_invalidate_cache(dev, h, 60 * T_KiB, 4 * T_KiB));
    struct t_snap s;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_invalidate_cache(dev, h, 60 * T_KiB, 8 * T_KiB), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_invalidate_cache(dev, h, 64 * T_KiB + 4096, 1), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_invalidate_cache(dev, T_BAD_HANDLE, 0, 4096), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.25: SynchronousPaging.
 * =========================================================================================== */

/* spec 15.25: "before emitting a paging op for such an allocation wait for it to be idle" - a
 * busy SynchronousPaging victim is transferred only after its fence, and the driver sees
 * ALLOCATION_IS_IDLE. */
Test(item15_25, paging_waits_for_idle, .timeout = 30)
{
    struct t_rec rec;
    t_rec_init(&rec);
    struct vidmm_driver drv = t_rec_driver(&rec, true, false, false);
    vidmm_device *dev = t_dev_std_ex(0, &drv, 0);
    struct vidmm_alloc_desc d = t_adesc(T_VIS_SIZE, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_SYNCHRONOUS_PAGING;
    vidmm_handle a = t_alloc(dev, &d);
    vidmm_handle b = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    uint64_t f = t_submit1(dev, a, VIDMM_REF_WRITE, NULL);
    uint32_t from = t_rec_ops(&rec);
    struct t_later l;
    t_signal_later(&l, dev, f, 300, &rec.flag);
    struct vidmm_alloc_ref ref = { b, 0 };
    uint64_t fb = 0;
    int rc = vidmm_submit(dev, &ref, 1, 0, NULL, &fb);
    bool signalled = atomic_load(&rec.flag);
    t_later_join(&l);
    cr_assert_eq(rc, 0, "vidmm_submit() returned %d (%s)", rc, vidmm_strerror(rc));
    cr_assert(signalled, "the submission that evicts a busy SynchronousPaging allocation returned before its fence");
    int n = 0;
    for (uint32_t k = from; k < t_rec_ops(&rec) && k < T_REC_MAX; k++) {
        const struct vidmm_paging_op *o = &rec.ops[k];
        if (o->allocation != a)
            continue;
        n++;
        cr_assert(rec.flag_at[k], "%s of the SynchronousPaging allocation issued while it was busy",
                  t_op_name(o->type));
        if (o->type == VIDMM_PAGING_TRANSFER)
            cr_assert(o->flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE, "TRANSFER without ALLOCATION_IS_IDLE");
    }
    cr_assert_gt(n, 0, "the SynchronousPaging victim saw no paging operation");
    cr_assert_eq(t_query(dev, a).where, VIDMM_WHERE_SYSMEM);
    t_signal(dev, fb);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.27: device removal.
 * =========================================================================================== */

/* spec 15.27: "subsequent calls return STATUS_DEVICE_REMOVED" - every call but destroy,
 * get_stats and fence_completed (brief); locks are invalidated. */
Test(item15_27, every_call_device_removed)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    vidmm_handle l = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
    uint64_t f = t_submit1(dev, h, 0, NULL);
    t_signal(dev, f);
    uint64_t f2 = t_submit1(dev, h, 0, NULL);
    t_lock(dev, l, 0);
    T_OK(vidmm_device_remove(dev));
    const int R = VIDMM_E_DEVICE_REMOVED;
    struct vidmm_alloc_desc d = t_adesc(4096, T_SET(T_VIS));
    vidmm_handle out = T_OUT_SENTINEL;
    T_RC(vidmm_alloc_create(dev, &d, &out), R);
    cr_assert_eq(out, T_OUT_SENTINEL);
    struct vidmm_alloc_info in;
    memset(&in, 0, sizeof(in));
    in.size_of = sizeof(in);
    T_RC(vidmm_alloc_query(dev, h, &in), R);
    uint32_t p = VIDMM_PRIORITY_LOW;
    T_RC(vidmm_set_priority(dev, &h, &p, 1), R);
    T_RC(vidmm_make_resident(dev, &h, 1, NULL), R);
    T_RC(vidmm_evict(dev, &h, 1), R);
    struct vidmm_alloc_ref ref = { h, 0 };
    uint64_t fence = 0;
    T_RC(vidmm_submit(dev, &ref, 1, 0, NULL, &fence), R);
    T_RC(vidmm_fence_signal(dev, f2), R);
    T_RC(vidmm_fence_wait(dev, f2, 1000000), R);
    unsigned char b[16];
    T_RC(vidmm_gpu_access(dev, h, 0, b, 16, false), R);
    T_RC(vidmm_gpu_access(dev, h, 0, b, 16, true), R);
    struct vidmm_lock_args a = t_largs(h, 0);
    T_RC(vidmm_lock(dev, &a), R);
    T_RC(vidmm_unlock(dev, 1, &l), R);
    T_RC(vidmm_invalidate_cache(dev, h, 0, 16), R);
    T_RC(vidmm_device_remove(dev), R);
    T_RC(vidmm_alloc_destroy(dev, h), R);
    cr_assert_eq(vidmm_fence_completed(dev), f, "fence_completed after removal: %llu, last signalled %llu",
                 (unsigned long long)vidmm_fence_completed(dev), (unsigned long long)f);
    struct vidmm_stats st;
    memset(&st, 0, sizeof(st));
    st.size_of = sizeof(st);
    T_OK(vidmm_get_stats(dev, &st));
    cr_assert_eq(st.segment_count, 3);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 15.28: determinism.
 * =========================================================================================== */

#define SCRIPT_N 8

/* A call sequence touching placement, eviction, locks, renaming and priorities. */
static void script(vidmm_device *dev, vidmm_handle h[SCRIPT_N])
{
    static const uint64_t size[SCRIPT_N] = { 256 * T_KiB, 320 * T_KiB, 192 * T_KiB, 128 * T_KiB,
                                             512 * T_KiB, 64 * T_KiB,  300 * T_KiB, 200 * T_KiB };
    static const uint32_t set[SCRIPT_N] = {
        T_SET(T_VIS), T_SET(T_VIS) | T_SET(T_APE), T_SET(T_LOC), T_SET(T_APE),
        T_SET(T_VIS) | T_SET(T_LOC), T_SET(T_VIS), T_SET(T_LOC) | T_SET(T_APE), T_SET(T_VIS) | T_SET(T_LOC)
    };
    for (int i = 0; i < SCRIPT_N; i++) {
        struct vidmm_alloc_desc d = t_adesc(size[i], set[i]);
        d.priority = VIDMM_PRIORITY_LOW + (uint32_t)(i % 3) * 0x100;
        d.fill_pattern = 0x11111111u * (uint32_t)(i + 1);
        if (i == 0)
            d.eviction_set = T_SET(T_APE);
        if (i == 5)
            d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
        if (i == 7)
            d.flags |= VIDMM_ALLOC_FROM_END_OF_SEGMENT;
        h[i] = t_alloc(dev, &d);
    }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < SCRIPT_N; i++) {
            uint32_t fl = (i + round) % 2 ? VIDMM_REF_WRITE : 0;
            t_use(dev, h[(i * 3 + round) % SCRIPT_N], fl);
        }
        vidmm_handle pair[2] = { h[round], h[round + 4] };
        t_signal(dev, t_submit(dev, pair, NULL, 2, NULL));
        uint32_t p = VIDMM_PRIORITY_HIGH - (uint32_t)round;
        T_OK(vidmm_set_priority(dev, &h[round + 1], &p, 1));
        vidmm_handle v = h[(round + 2) % SCRIPT_N];
        uint32_t w = t_query(dev, v).where;
        if (w == VIDMM_WHERE_SEGMENT || w == VIDMM_WHERE_APERTURE)
            t_evict(dev, v);
        unsigned char *q = t_lock(dev, h[2], 0);
        q[round] = (unsigned char)round;
        t_unlock(dev, h[2]);
    }
    uint64_t f = t_submit1(dev, h[6], 0, NULL);
    struct vidmm_lock_args a = t_largs(h[6], VIDMM_LOCK_DISCARD);
    T_OK(vidmm_lock(dev, &a));
    t_unlock(dev, a.allocation);
    t_signal(dev, f);
    t_use(dev, a.allocation, VIDMM_REF_WRITE);
}

static void run_script(uint32_t threads, struct t_log_buf *log, vidmm_handle h[SCRIPT_N],
                       struct vidmm_alloc_info info[SCRIPT_N])
{
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, 0);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, 0);
    struct vidmm_device_desc d = t_ddesc(segs, 3);
    d.paging_threads = threads;
    vidmm_device *dev = t_dev(&d);
    script(dev, h);
    t_log_take(dev, log);
    for (int i = 0; i < SCRIPT_N; i++)
        info[i] = t_query(dev, h[i]);
    vidmm_device_destroy(dev);
}

static void compare_runs(uint32_t threads_a, uint32_t threads_b)
{
    struct t_log_buf *la = malloc(sizeof(*la)), *lb = malloc(sizeof(*lb));
    vidmm_handle ha[SCRIPT_N], hb[SCRIPT_N];
    struct vidmm_alloc_info ia[SCRIPT_N], ib[SCRIPT_N];
    run_script(threads_a, la, ha, ia);
    run_script(threads_b, lb, hb, ib);
    cr_assert_gt(la->n, 10, "the script paged too little to compare (%zu records)", la->n);
    cr_assert_eq(la->n, lb->n, "paging logs of %zu and %zu records", la->n, lb->n);
    for (size_t i = 0; i < la->n; i++) {
        char what[64];
        snprintf(what, sizeof(what), "paging log record %zu", i);
        same_op(&la->op[i], &lb->op[i], what);
        cr_assert_eq(la->op[i].flags, lb->op[i].flags, "%s: flags", what);
        cr_assert_eq(la->op[i].multipass_offset, lb->op[i].multipass_offset, "%s: multipass_offset", what);
    }
    for (int i = 0; i < SCRIPT_N; i++) {
        cr_assert_eq(ha[i], hb[i], "allocation %d has handle %u and %u", i, ha[i], hb[i]);
        cr_assert_eq(ia[i].where, ib[i].where, "allocation %d: where", i);
        cr_assert_eq(ia[i].segment_id, ib[i].segment_id, "allocation %d: segment", i);
        cr_assert_eq(ia[i].offset, ib[i].offset, "allocation %d: offset", i);
        cr_assert_eq(ia[i].dirty, ib[i].dirty, "allocation %d: dirty", i);
    }
    free(la);
    free(lb);
}

/* spec 15.28: "every decision (placement, victim choice, range acquisition) is deterministic for
 * a given call sequence" - two devices, same calls, same paging log and placements. */
Test(item15_28, same_calls_same_log)
{
    compare_runs(0, 0);
}

/* spec 15.28: the paging threads change who runs the operations, not which ones. */
Test(item15_28, same_log_with_paging_thread, .timeout = 60)
{
    compare_runs(0, 1);
}
