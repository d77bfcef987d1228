/* SPDX-License-Identifier: MIT */
/* tests/engine/test_model.c - the randomized model-based test of the video memory manager.
 *
 * Long random sequences of operations (create, destroy, submit with GPU writes, signal, lock
 * with CPU writes, evict, make-resident, priorities, swizzled range locks) run against a small
 * reference model that knows only what every allocation's bytes must be. After every step the
 * invariants are checked:
 *   - no two placed allocations overlap, and each lies inside its segment;
 *   - every allocation's content equals the model's, byte for byte (a checksum per allocation,
 *     the bytes compared on mismatch) - across every eviction and page-in;
 *   - busy semantics: an allocation referenced by an unsignalled submission is busy, a lock
 *     with DONOT_WAIT says VIDMM_E_BUSY, and after the signal it is idle;
 *   - a pinned (Overlay) allocation never moves and stays in the top 20 % of its segment.
 * Variants: the built-in executor with 0, 1 and 2 paging threads; a driver paging callback
 * that injects INSUFFICIENT_DMA_BUFFER and ALLOCATION_BUSY answers at random (faults the
 * engine must retry through without losing a byte). VIDMM_TEST_SEED replays a failure. */
#ifdef T_LITE_HARNESS
#  include "t_lite.h" /* the ThreadSanitizer build: see tests/common/t_lite.h */
#else
#  include <criterion/criterion.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"

#define N_ALLOCS 20
#define STEPS 1500
#define SEG_VIS (6u << 20)
#define SEG_HID (3u << 20)
#define SEG_AP (8u << 20)

struct m_alloc {
    vidmm_handle h;             /* 0: not created */
    uint64_t size;              /* rounded */
    uint32_t flags;
    bool swizzled;
    unsigned char *bytes;       /* what the content must be (linear order for swizzled) */
    uint64_t linear;            /* swizzled: packed linear size */
};

struct model {
    vidmm_device *dev;
    struct t_rng rng;
    struct m_alloc a[N_ALLOCS];
    int pinned;                 /* index of the Overlay allocation */
    uint32_t pinned_seg;
    uint64_t pinned_off;
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surface;
    unsigned long long seed;
    int step;
};

/* ---------------------------------------------------------------------------------------------
 * A driver model that executes paging operations itself and sometimes answers
 * INSUFFICIENT_DMA_BUFFER (the engine must call again with the same operation) or
 * ALLOCATION_BUSY (it must call again once the allocation is idle, with ALLOCATION_IS_IDLE).
 * It cannot swizzle: the model gives it no swizzled allocation.
 * ------------------------------------------------------------------------------------------- */
struct faulty {
    struct t_rng rng;
    unsigned dma_faults, busy_faults, ops;
    char failure[200];
    struct vidmm_paging_op last;  /* the operation last refused, to check the retry */
    bool pending;
    /* The one swizzled allocation's geometry (the model's), for SWIZZLE / UNSWIZZLE transfers:
     * a lock without a swizzling range (its allocation in a segment that is not CPU-visible,
     * spec 8.3) unswizzles it through an eviction, which this driver carries out. */
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surface;
    uint64_t tiled, linear;
};

static uint32_t faulty_paging(void *arg, struct vidmm_paging_op *op)
{
    struct faulty *f = arg;
    if (f->pending) {
        /* A retry must carry the same operation (the driver's progress and the idle flag aside). */
        if (op->type != f->last.type || op->size != f->last.size || op->allocation != f->last.allocation ||
            op->src.segment_address != f->last.src.segment_address ||
            op->dst.segment_address != f->last.dst.segment_address || op->fence != f->last.fence ||
            op->multipass_offset != f->last.multipass_offset)
            snprintf(f->failure, sizeof f->failure, "retry of paging fence %llu changed the operation",
                     (unsigned long long)f->last.fence);
        f->pending = false;
    }
    uint64_t r = t_rng_below(&f->rng, 100);
    if (r < 10) {
        op->multipass_offset += 1; /* progress the engine must hand back */
        f->last = *op;
        f->pending = true;
        f->dma_faults++;
        return VIDMM_STATUS_INSUFFICIENT_DMA_BUFFER;
    }
    bool busy_able = op->type == VIDMM_PAGING_TRANSFER || op->type == VIDMM_PAGING_DISCARD_CONTENT;
    if (r < 20 && busy_able && !(op->flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE)) {
        f->last = *op;
        f->last.flags |= 0; /* the retry adds ALLOCATION_IS_IDLE; compared fields exclude flags */
        f->pending = true;
        f->busy_faults++;
        return VIDMM_STATUS_ALLOCATION_BUSY;
    }
    f->ops++;
    switch (op->type) {
    case VIDMM_PAGING_TRANSFER:
        if (op->flags & VIDMM_TRANSFER_SWIZZLE) {
            memset(op->dst_ptr, 0, (size_t)op->size);
            if (vidmm_swizzle_surface(&f->layout, &f->surface, op->dst_ptr, (size_t)f->tiled, op->src_ptr,
                                      (size_t)f->linear) != 0)
                snprintf(f->failure, sizeof f->failure, "SWIZZLE transfer of 0x%x failed", op->allocation);
        } else if (op->flags & VIDMM_TRANSFER_UNSWIZZLE) {
            if (vidmm_deswizzle_surface(&f->layout, &f->surface, op->src_ptr, (size_t)f->tiled, op->dst_ptr,
                                        (size_t)f->linear) != 0)
                snprintf(f->failure, sizeof f->failure, "UNSWIZZLE transfer of 0x%x failed", op->allocation);
        } else {
            memcpy(op->dst_ptr, op->src_ptr, (size_t)op->size);
        }
        break;
    case VIDMM_PAGING_FILL: {
        uint32_t *d = op->dst_ptr;
        for (size_t i = 0; i < op->size / 4; i++)
            d[i] = op->fill_pattern;
        break;
    }
    default:
        break;
    }
    return VIDMM_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------------------------------------
 * Model helpers.
 * ------------------------------------------------------------------------------------------- */
#define M_ASSERT(m, cond, fmt, ...) \
    cr_assert(cond, "[seed 0x%llx step %d] " fmt, (m)->seed, (m)->step, ##__VA_ARGS__)

static void fill_pattern_bytes(unsigned char *b, uint64_t n, uint32_t pat)
{
    for (uint64_t i = 0; i < n; i++)
        b[i] = (unsigned char)(pat >> (8 * (i & 3)));
}

static void m_create(struct model *m, int i)
{
    struct m_alloc *x = &m->a[i];
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    uint32_t pat = (uint32_t)t_rng_next(&m->rng);
    d.flags = VIDMM_ALLOC_CPU_VISIBLE;
    d.priority = VIDMM_PRIORITY_LOW + (uint32_t)t_rng_below(&m->rng, 4) * 0x10000000u;
    d.fill_pattern = pat;
    d.supported_read_set = 0x7;   /* visible memory, hidden memory, aperture */
    d.supported_write_set = 0x7;
    d.eviction_set = t_rng_below(&m->rng, 3) == 0 ? 0x4 : 0;
    d.preferred_segment = t_rng_below(&m->rng, 2) ? 1 : 2;
    x->swizzled = false;
    if (i == m->pinned) {
        d.flags |= VIDMM_ALLOC_OVERLAY;
        d.size = 256 << 10;
        d.supported_read_set = d.supported_write_set = 0x1;
        d.preferred_segment = 1;
        d.eviction_set = 0;
    } else if (i == 1) {
        /* A swizzled surface: block-linear 256 x 256 x 4 bytes. */
        d.flags |= VIDMM_ALLOC_SWIZZLED;
        d.layout = &m->layout;
        d.surface = &m->surface;
        uint64_t tiled;
        cr_assert_eq(vidmm_surface_tiled_size(&m->layout, &m->surface, &tiled), 0);
        d.size = tiled;
        d.supported_read_set = d.supported_write_set = 0x3; /* memory segments only */
        d.eviction_set = 0;
        x->swizzled = true;
    } else {
        d.size = t_rng_len(&m->rng, 4096, 1u << 20);
        if (t_rng_below(&m->rng, 5) == 0)
            d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
        if (t_rng_below(&m->rng, 5) == 0)
            d.flags |= VIDMM_ALLOC_CACHED;
    }
    int err = vidmm_alloc_create(m->dev, &d, &x->h);
    M_ASSERT(m, err == 0, "create %d: %s", i, vidmm_strerror(err));
    x->size = (d.size + 4095) & ~4095ull;
    x->flags = d.flags;
    if (x->swizzled) {
        cr_assert_eq(vidmm_surface_linear_size(&m->layout, &m->surface, &x->linear), 0);
        /* The content starts as the fill pattern in tiled order; the pattern repeats every 4
         * bytes and elements are 4 bytes, so the linear view holds the same pattern. */
        x->bytes = malloc((size_t)x->linear);
        fill_pattern_bytes(x->bytes, x->linear, pat);
    } else {
        x->bytes = malloc((size_t)x->size);
        fill_pattern_bytes(x->bytes, x->size, pat);
    }
    cr_assert_not_null(x->bytes);
}

static void m_destroy(struct model *m, int i)
{
    struct m_alloc *x = &m->a[i];
    int err = vidmm_alloc_destroy(m->dev, x->h);
    M_ASSERT(m, err == 0, "destroy %d: %s", i, vidmm_strerror(err));
    free(x->bytes);
    memset(x, 0, sizeof *x);
}

/* Random bytes at a random place of 'b' (n bytes). */
static void scribble(struct model *m, unsigned char *b, uint64_t n)
{
    uint64_t len = t_rng_len(&m->rng, 1, n < 65536 ? n : 65536);
    uint64_t off = t_rng_below(&m->rng, (size_t)(n - len + 1));
    t_rng_bytes(&m->rng, b + off, (size_t)len);
}

/* The content check: through a READ_ONLY lock (swizzled: through a swizzling range), which also
 * proves the lock path; the GPU view (vidmm_gpu_access) for the others half of the time. */
static void m_verify(struct model *m, int i)
{
    struct m_alloc *x = &m->a[i];
    if (!x->h)
        return;
    uint64_t n = x->swizzled ? x->linear : x->size;
    unsigned char *got = malloc((size_t)n);
    cr_assert_not_null(got);
    int err;
    if (!x->swizzled && t_rng_below(&m->rng, 2)) {
        err = vidmm_gpu_access(m->dev, x->h, 0, got, (size_t)n, false);
        M_ASSERT(m, err == 0, "gpu_access read %d: %s", i, vidmm_strerror(err));
    } else {
        struct vidmm_lock_args la = { x->h, 0, 0, NULL, VIDMM_LOCK_READ_ONLY, 0, NULL };
        if (x->swizzled)
            la.flags |= VIDMM_LOCK_ACQUIRE_APERTURE;
        err = vidmm_lock(m->dev, &la);
        M_ASSERT(m, err == 0, "verify lock %d: %s", i, vidmm_strerror(err));
        memcpy(got, la.data, (size_t)n);
        err = vidmm_unlock(m->dev, 1, &x->h);
        M_ASSERT(m, err == 0, "verify unlock %d: %s", i, vidmm_strerror(err));
    }
    ptrdiff_t d = t_find_diff(got, x->bytes, (size_t)n);
    M_ASSERT(m, d < 0, "allocation %d (0x%x) content differs at byte %td: 0x%02x, model 0x%02x", i, x->h, d,
             d >= 0 ? got[d] : 0, d >= 0 ? x->bytes[d] : 0);
    free(got);
}

static void m_check_layout(struct model *m)
{
    struct { uint32_t seg; uint64_t off, len; int i; } placed[N_ALLOCS];
    int n = 0;
    for (int i = 0; i < N_ALLOCS; i++) {
        if (!m->a[i].h)
            continue;
        struct vidmm_alloc_info info = { .size_of = sizeof info };
        int err = vidmm_alloc_query(m->dev, m->a[i].h, &info);
        M_ASSERT(m, err == 0, "query %d: %s", i, vidmm_strerror(err));
        M_ASSERT(m, !info.busy, "allocation %d busy with every fence signalled", i);
        if (info.where == VIDMM_WHERE_SEGMENT || info.where == VIDMM_WHERE_APERTURE) {
            uint64_t seg_size = info.segment_id == 1 ? SEG_VIS : info.segment_id == 2 ? SEG_HID : SEG_AP;
            M_ASSERT(m, info.offset + info.size <= seg_size, "allocation %d beyond segment %u", i, info.segment_id);
            placed[n].seg = info.segment_id;
            placed[n].off = info.offset;
            placed[n].len = info.size;
            placed[n].i = i;
            n++;
        }
        if (i == m->pinned && info.where == VIDMM_WHERE_SEGMENT) {
            if (m->pinned_seg == 0) {
                m->pinned_seg = info.segment_id;
                m->pinned_off = info.offset;
                M_ASSERT(m, info.offset >= SEG_VIS - SEG_VIS / 5, "overlay below the top 20 %%");
            }
            M_ASSERT(m, info.segment_id == m->pinned_seg && info.offset == m->pinned_off, "pinned allocation moved");
        }
    }
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n; q++)
            if (placed[p].seg == placed[q].seg)
                M_ASSERT(m, placed[p].off + placed[p].len <= placed[q].off || placed[q].off + placed[q].len <= placed[p].off,
                         "allocations %d and %d overlap in segment %u", placed[p].i, placed[q].i, placed[p].seg);
}

/* ---------------------------------------------------------------------------------------------
 * Steps.
 * ------------------------------------------------------------------------------------------- */
static int pick(struct model *m)
{
    for (;;) {
        int i = (int)t_rng_below(&m->rng, N_ALLOCS);
        if (m->a[i].h)
            return i;
    }
}

static void step_submit(struct model *m)
{
    struct vidmm_alloc_ref refs[6];
    int idx[6];
    int n = 1 + (int)t_rng_below(&m->rng, 6);
    for (int k = 0; k < n; k++) {
        idx[k] = pick(m);
        refs[k].allocation = m->a[idx[k]].h;
        refs[k].flags = t_rng_below(&m->rng, 2) ? VIDMM_REF_WRITE : 0;
    }
    struct vidmm_residency where[6];
    uint64_t fence = 0;
    int err = vidmm_submit(m->dev, refs, (uint32_t)n, 0, where, &fence);
    if (err == VIDMM_E_NO_VIDEO_MEMORY)
        return; /* a list that cannot fit at once: legitimate, and nothing must be lost */
    M_ASSERT(m, err == 0, "submit: %s", vidmm_strerror(err));
    /* Busy until signalled. */
    for (int k = 0; k < n; k++) {
        struct vidmm_alloc_info info = { .size_of = sizeof info };
        cr_assert_eq(vidmm_alloc_query(m->dev, refs[k].allocation, &info), 0);
        M_ASSERT(m, info.busy, "allocation %d not busy after submit", idx[k]);
        M_ASSERT(m, info.where == VIDMM_WHERE_SEGMENT || info.where == VIDMM_WHERE_APERTURE,
                 "submitted allocation %d not resident", idx[k]);
        M_ASSERT(m, where[k].segment_id == info.segment_id && where[k].offset == info.offset, "residency mismatch");
    }
    int probe = idx[0];
    struct vidmm_lock_args la = { m->a[probe].h, 0, 0, NULL, VIDMM_LOCK_DONOT_WAIT, 0, NULL };
    err = vidmm_lock(m->dev, &la);
    M_ASSERT(m, err == VIDMM_E_BUSY, "DONOT_WAIT lock of a busy allocation: %s", vidmm_strerror(err));
    /* The GPU writes where the submission said the allocations are. */
    for (int k = 0; k < n; k++) {
        if (!(refs[k].flags & VIDMM_REF_WRITE))
            continue;
        struct m_alloc *x = &m->a[idx[k]];
        if (x->swizzled) {
            scribble(m, x->bytes, x->linear);
            cr_assert_eq(vidmm_swizzle_surface(&m->layout, &m->surface, where[k].cpu, (size_t)x->size, x->bytes,
                                               (size_t)x->linear), 0);
        } else {
            scribble(m, x->bytes, x->size);
            memcpy(where[k].cpu, x->bytes, (size_t)x->size);
        }
    }
    err = vidmm_fence_signal(m->dev, fence);
    M_ASSERT(m, err == 0, "signal: %s", vidmm_strerror(err));
}

static void step_lock_write(struct model *m)
{
    int i = pick(m);
    struct m_alloc *x = &m->a[i];
    struct vidmm_lock_args la = { x->h, 0, 0, NULL, 0, 0, NULL };
    if (x->swizzled)
        la.flags |= VIDMM_LOCK_ACQUIRE_APERTURE;
    else if (t_rng_below(&m->rng, 3) == 0)
        la.flags |= VIDMM_LOCK_WRITE_ONLY;
    int err = vidmm_lock(m->dev, &la);
    M_ASSERT(m, err == 0, "lock %d: %s", i, vidmm_strerror(err));
    uint64_t n = x->swizzled ? x->linear : x->size;
    scribble(m, x->bytes, n);
    memcpy(la.data, x->bytes, (size_t)n);
    err = vidmm_unlock(m->dev, 1, &x->h);
    M_ASSERT(m, err == 0, "unlock %d: %s", i, vidmm_strerror(err));
}

static void step(struct model *m)
{
    size_t r = t_rng_below(&m->rng, 100);
    int err;
    if (r < 35) {
        step_submit(m);
    } else if (r < 50) {
        step_lock_write(m);
    } else if (r < 62) {
        vidmm_handle h = m->a[pick(m)].h;
        err = vidmm_evict(m->dev, &h, 1);
        M_ASSERT(m, err == 0 || err == VIDMM_E_CANT_EVICT_PINNED, "evict: %s", vidmm_strerror(err));
    } else if (r < 72) {
        vidmm_handle h[3] = { m->a[pick(m)].h, m->a[pick(m)].h, m->a[pick(m)].h };
        err = vidmm_make_resident(m->dev, h, 3, NULL);
        M_ASSERT(m, err == 0 || err == VIDMM_E_NO_VIDEO_MEMORY, "make_resident: %s", vidmm_strerror(err));
    } else if (r < 78) {
        vidmm_handle h = m->a[pick(m)].h;
        uint32_t p = (uint32_t)t_rng_next(&m->rng) | 1u;
        err = vidmm_set_priority(m->dev, &h, &p, 1);
        M_ASSERT(m, err == 0, "set_priority: %s", vidmm_strerror(err));
    } else if (r < 84) {
        int i = pick(m);
        if (i != m->pinned && i != 1) {
            m_destroy(m, i);
            m_create(m, i);
        }
    } else {
        m_verify(m, pick(m));
    }
}

/* Fold the paging log into a hash, host pointers left out (they differ between devices). */
static void drain_log(struct model *m, uint64_t *hash)
{
    struct vidmm_paging_op ops[64];
    size_t n;
    while ((n = vidmm_paging_log_read(m->dev, ops, 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            ops[i].src_ptr = NULL;
            ops[i].dst_ptr = NULL;
            *hash = *hash * 0x100000001b3ull ^ t_checksum(&ops[i], sizeof ops[i]);
        }
    }
}

static void run_model_ex(struct vidmm_driver *drv, uint32_t threads, uint64_t stream, uint64_t *log_hash, bool disk)
{
    struct model *m = calloc(1, sizeof *m);
    cr_assert_not_null(m);
    m->seed = t_seed();
    t_rng_init(&m->rng, stream);
    m->pinned = 0;
    struct vidmm_tile_layout lay = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    m->layout = lay;
    struct vidmm_surface_desc sd = { sizeof sd, 256, 256, 1, 4, 1, 1, 1, 1 };
    m->surface = sd;
    struct vidmm_segment_desc segs[3] = {
        { 0x10000000ull, SEG_VIS, SEG_VIS, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 },
        { 0x20000000ull, SEG_HID, SEG_HID, 0, 0, NULL, 0 },
        { 0x40000000ull, SEG_AP, SEG_AP, VIDMM_SEGMENT_APERTURE, 0, NULL, 0 },
    };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = segs;
    dd.segment_count = 3;
    dd.paging_threads = threads;
    dd.swizzling_ranges = 2;
    dd.driver = drv;
    if (log_hash)
        dd.flags |= VIDMM_DEVICE_LOG_PAGING;
    char dir[] = "/var/tmp/vidmm-model-XXXXXX", path[64] = "";
    if (disk) {
        /* The disk tier too: 1 MiB of system memory for the content that does not fit. */
        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/swap", dir);
        dd.swap_path = path;
        dd.sysmem_budget = 1u << 20;
    }
    int err = vidmm_device_create(&dd, &m->dev);
    cr_assert_eq(err, 0, "device_create: %s", vidmm_strerror(err));
    for (int i = 0; i < N_ALLOCS; i++)
        m_create(m, i);
    for (m->step = 0; m->step < STEPS; m->step++) {
        step(m);
        m_check_layout(m);
        if (log_hash)
            drain_log(m, log_hash);
        if (m->step % 100 == 99)
            for (int i = 0; i < N_ALLOCS; i++)
                m_verify(m, i);
    }
    for (int i = 0; i < N_ALLOCS; i++)
        m_verify(m, i);
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(m->dev, &st), 0);
    /* The sequence must have exercised the paths it claims to. */
    cr_assert_gt(st.evictions, 10, "only %llu evictions", (unsigned long long)st.evictions);
    cr_assert_gt(st.paging_ops[VIDMM_PAGING_TRANSFER], 10);
    cr_assert_gt(st.paging_ops[VIDMM_PAGING_FILL], 0);
    cr_assert_gt(st.paging_ops[VIDMM_PAGING_MAP_APERTURE_SEGMENT], 0);
    if (disk) {
        cr_assert_gt(st.swap_writes, 10, "only %llu write-outs", (unsigned long long)st.swap_writes);
        cr_assert_gt(st.swap_reads, 10, "only %llu read-backs", (unsigned long long)st.swap_reads);
    }
    for (int i = 0; i < N_ALLOCS; i++)
        if (m->a[i].h)
            m_destroy(m, i);
    vidmm_device_destroy(m->dev);
    free(m);
    if (disk) {
        unlink(path);
        rmdir(dir);
    }
}

static void run_model(struct vidmm_driver *drv, uint32_t threads, uint64_t stream, uint64_t *log_hash)
{
    run_model_ex(drv, threads, stream, log_hash, false);
}

Test(model, builtin_inline, .timeout = 300)
{
    run_model(NULL, 0, 1, NULL);
}

Test(model, builtin_one_thread, .timeout = 300)
{
    run_model(NULL, 1, 2, NULL);
}

Test(model, builtin_two_threads, .timeout = 300)
{
    run_model(NULL, 2, 3, NULL);
}

/* The driver model carries out every paging operation itself, the swizzled allocation's
 * conversions included, and injects faults the engine must retry through. */
Test(model, driver_with_injected_faults, .timeout = 300)
{
    struct faulty f;
    memset(&f, 0, sizeof f);
    t_rng_init(&f.rng, 99);
    struct vidmm_tile_layout lay = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    struct vidmm_surface_desc sd = { sizeof sd, 256, 256, 1, 4, 1, 1, 1, 1 }; /* as run_model_ex() */
    f.layout = lay;
    f.surface = sd;
    cr_assert_eq(vidmm_surface_tiled_size(&f.layout, &f.surface, &f.tiled), 0);
    cr_assert_eq(vidmm_surface_linear_size(&f.layout, &f.surface, &f.linear), 0);
    struct vidmm_driver drv;
    memset(&drv, 0, sizeof drv);
    drv.paging = faulty_paging;
    drv.arg = &f;
    run_model(&drv, 1, 4, NULL);
    cr_assert_eq(f.failure[0], '\0', "%s", f.failure);
    cr_assert_gt(f.dma_faults, 0);
    cr_assert_gt(f.busy_faults, 0);
}

/* Spec 15.28: every decision is deterministic for a given call sequence - whatever the number
 * of paging threads. The same random sequence on three devices must give the same paging log
 * (operations, allocations, segments, addresses, flags, fences). */
Test(model, deterministic_paging_log, .timeout = 300)
{
    uint64_t h0 = 1469598103934665603ull, h1 = h0, h2 = h0;
    run_model(NULL, 0, 5, &h0);
    run_model(NULL, 2, 5, &h1);
    run_model(NULL, 1, 5, &h2);
    cr_assert_eq(h0, h1, "paging logs differ between 0 and 2 paging threads");
    cr_assert_eq(h0, h2, "paging logs differ between two runs");
    cr_assert_neq(h0, 1469598103934665603ull, "empty paging log");
}

/* The disk tier under the same random sequences: backing stores beyond 1 MiB go to the swap
 * file and come back on use - every byte still checked after every step. */
Test(model, with_disk_tier, .timeout = 300)
{
    run_model_ex(NULL, 1, 6, NULL, true);
}
