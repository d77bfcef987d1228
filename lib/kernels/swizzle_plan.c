/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_plan.c - plans (include/vidmm/swizzle.h): descriptors checked and a
 * subresource resolved once, then copied through many times; the per-thread cache of plans that
 * serves the one-shot box copies; and the public copy calls, thin wrappers over plans. The
 * walks themselves are in swizzle_walk.c, the descriptors in swizzle.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "common/internal.h"
#include "kernels/kernel_ops.h"
#include "kernels/swizzle_internal.h"

/* A plan: the opened surface, the resolved subresource and the options of its copies. 'm.s'
 * points at 's', so a plan is never copied by value once resolved (the cache resolves in place). */
struct vidmm_swizzle_plan {
    struct vidmm_swz_surface s;
    const struct vidmm_swz_family *fam;
    uint64_t lin, total;            /* packed linear bytes of the surface; tiled bytes */
    bool whole;                     /* every layer and mip (vidmm_swizzle_surface()) */
    uint32_t mip, layer;
    struct vidmm_swz_mip m;         /* the subresource; whole: mip 0 of layer 0, for the info */
    enum vidmm_backend backend;
    enum vidmm_strategy strategy;
    /* Threads (vidmm_swizzle_plan_set_threads()): 0 or 1 off. */
    uint32_t threads;
    vidmm_parallel_for_fn pfor;
    void *pctx;
    uint64_t min_bytes;
    bool min_auto;                  /* min_bytes 0 asked for: the measured threshold (par_way()) */
    /* Measured walks (vidmm_swizzle_plan_measure(), VIDMM_PLAN_MEASURE): bit 1 << dir set when
     * whole copies in direction 'dir' take tune[dir]; 0 for every other plan. */
    uint8_t tuned;
    uint8_t tune_source;            /* enum vidmm_swizzle_tune_source */
    struct vidmm_swz_tune tune[2];
};

/* The least a copy moves before the measured threshold (par_way()) considers threads for it; its
 * bands then move at least half this. */
#define PAR_AUTO_FLOOR (256u << 10)

static bool ranges_overlap(const void *a, uint64_t na, const void *b, uint64_t nb)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y ? y - x < na : x - y < nb;
}

/* plan_build() opens the surface and resolves subresource (mip, layer) - or, for a whole-surface
 * plan, mip 0 of layer 0 - into 'p', in place. */
static int plan_build(const char *call, struct vidmm_swizzle_plan *p, const struct vidmm_tile_layout *layout,
                      const struct vidmm_surface_desc *surface, uint32_t mip, uint32_t layer, bool whole)
{
    int err;
    if ((err = vidmm_swz_open(call, layout, surface, &p->s, &p->fam, &p->lin, &p->total)) < 0 ||
        (err = vidmm_swz_prepare(&p->s, p->fam, whole ? 0 : mip, whole ? 0 : layer, &p->m)) < 0)
        return err;
    p->whole = whole;
    p->mip = mip;
    p->layer = layer;
    p->threads = 0;
    p->pfor = NULL;
    p->pctx = NULL;
    p->min_bytes = 0;
    p->min_auto = false;
    p->tuned = 0;
    p->tune_source = VIDMM_SWIZZLE_TUNE_DEFAULT;
    return 0;
}

/* check_opts() refuses what no copy offers: a backend this machine cannot run, and the
 * strategies of plain copies only. */
static int check_opts(const char *call, enum vidmm_backend backend, enum vidmm_strategy strategy)
{
    if (backend != VIDMM_BACKEND_AUTO && !vidmm_backend_supported(backend))
        return vidmm_swz_refuse(VIDMM_E_UNSUPPORTED, call, "opts->backend", "%s cannot run on this CPU or build "
                                "(spec kernels.h)", vidmm_backend_to_string(backend));
    if (strategy == VIDMM_STRATEGY_MOVDIR64B || strategy == VIDMM_STRATEGY_LIBC)
        return vidmm_swz_refuse(VIDMM_E_UNSUPPORTED, call, "opts->strategy", "%s is a strategy of plain copies "
                                "only (spec swizzle.h)", strategy == VIDMM_STRATEGY_LIBC ? "LIBC" : "MOVDIR64B");
    return 0;
}

/* refuse_buffers() is the line of a copy's buffers refused: NULL, too small, or wrapping the
 * address space. */
static int refuse_buffers(const char *call, const unsigned char *tiled, size_t tiled_size, uint64_t need_tiled,
                          const unsigned char *linear, size_t linear_size, uint64_t need_linear)
{
    if (tiled == NULL || linear == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, tiled == NULL ? "tiled" : "linear", "NULL (spec swizzle.h)");
    if (tiled_size < need_tiled)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "tiled_size", "%zu, below the surface's %llu bytes "
                                "(vidmm_surface_tiled_size()) (spec swizzle.h)", tiled_size,
                                (unsigned long long)need_tiled);
    if (linear_size < need_linear)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "linear_size", "%zu, below the %llu bytes the copy "
                                "reaches (spec swizzle.h)", linear_size, (unsigned long long)need_linear);
    return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "tiled, linear", "a buffer of %zu / %llu bytes at %p / %p "
                            "wraps the address space (spec swizzle.h)", tiled_size, (unsigned long long)need_linear,
                            (const void *)tiled, (const void *)linear);
}

/* ---------------------------------------------------------------------------------------------
 * Copies on several threads (vidmm_swizzle_plan_set_threads()).
 *
 * A copy is cut into jobs, each a box of one subresource whose writes share no 64-byte line
 * with another job's: boxes are cut at tile rows (or slabs of slices) of the tiled side, and a
 * cut is kept only where the written side starts a line there - on the tiled side each tile is
 * whole lines (2^(tw+th+td) >= 64 bytes, its base aligned), on the linear side the row (slice)
 * that starts the band starts a line. Each job runs the same walk the one-thread copy would
 * (same backend, strategy and 'stream_bytes'), so every byte is the same.
 * ------------------------------------------------------------------------------------------- */

#define PAR_MAX_JOBS 256
/* Bands per thread: the threads claim them one at a time, so a thread the host descheduled
 * leaves the rest of its share to the others. */
#define PAR_BANDS_PER_THREAD 4

struct par_job {
    uint32_t mip, layer;
    bool rest;                     /* the subresources no other job takes, in order */
    struct vidmm_box b;
    size_t lin_off;                /* the box's first byte in 'linear' */
};

struct par_ctx {
    const struct vidmm_swizzle_plan *p;
    unsigned char *tiled, *linear;
    size_t row_pitch, slice_pitch; /* subresource copies; whole: each subresource's own */
    enum vidmm_swz_dir dir;
    uint64_t stream_bytes;
    uint32_t indep_end;            /* whole: subresources below this index may have own jobs */
    bool tuned;                    /* a whole copy of a measured plan: the plan's tune[dir] */
    uint64_t band_min;             /* a band moves at least half this (bands_for()), decided once a
                                      copy: the "rest" job of a whole copy must cut as par_whole() did */
    uint32_t njobs;
    struct par_job job[PAR_MAX_JOBS];
};

/* cut_ok() tells whether a band may start at row (axis 0) or slice (axis 1) 'k' of box 'b':
 * the bytes the bands on either side write lie in different lines. */
static bool cut_ok(const struct vidmm_swz_mip *m, const struct vidmm_box *b, int axis, uint32_t k,
                   uintptr_t tiled, uintptr_t lin, size_t rp, size_t sp, enum vidmm_swz_dir dir)
{
    const struct vidmm_swz_tiles *t = &m->tiles;
    if (dir == VIDMM_SWZ_TILE) {
        if (t->tile_base != NULL) {
            const uint32_t g = axis == 0 ? t->th_log2 : t->td_log2;
            if ((k & ((1u << g) - 1)) != 0 || t->tw_log2 + t->th_log2 + t->td_log2 < 6)
                return false;
            const uint64_t tx = ((uint64_t)b->x * m->elem) >> t->tw_log2;
            const uint64_t base = axis == 0 ? t->tile_base(m, tx, k >> t->th_log2, b->z >> t->td_log2)
                                            : t->tile_base(m, tx, b->y >> t->th_log2, k >> t->td_log2);
            return ((tiled + base) & 63) == 0;
        }
        if (m->s->layout.tiling != VIDMM_TILING_LINEAR)
            return false;
        /* Pitch-linear tiled side: the band's first row (slice) starts a line in every slice. */
        const uint64_t xb = (uint64_t)b->x * m->elem;
        if (axis == 1)
            return ((tiled + m->addr(m, xb, b->y, k)) & 63) == 0;
        for (uint32_t z = b->z; z < b->z + b->depth; z++)
            if (((tiled + m->addr(m, xb, k, z)) & 63) != 0)
                return false;
        return true;
    }
    /* A deswizzle writes the linear side; tile rows (slabs) stay whole for the reads. */
    if (t->tile_base != NULL && (k & ((1u << (axis == 0 ? t->th_log2 : t->td_log2)) - 1)) != 0)
        return false;
    if (axis == 1)
        return ((lin + (uint64_t)(k - b->z) * sp) & 63) == 0;
    const uint64_t off = (uint64_t)(k - b->y) * rp;
    if (b->depth == 1)
        return ((lin + off) & 63) == 0;
    return (lin & 63) == 0 && (sp & 63) == 0 && (off & 63) == 0;
}

/* split_box() cuts box 'b' of 'm' into up to 'want' bands appended to 'c' (one when no cut is
 * allowed), 'lin_off' being where the box starts in c->linear. */
static void split_box(struct par_ctx *c, const struct vidmm_swz_mip *m, uint32_t mip, uint32_t layer,
                      const struct vidmm_box *b, size_t lin_off, size_t rp, size_t sp, uint32_t want)
{
    const struct vidmm_swz_tiles *t = &m->tiles;
    const uint32_t thl = t->tile_base != NULL ? t->th_log2 : 0, tdl = t->tile_base != NULL ? t->td_log2 : 0;
    const uint32_t ny = ((b->y + b->height - 1) >> thl) - (b->y >> thl) + 1;
    const uint32_t nz = ((b->z + b->depth - 1) >> tdl) - (b->z >> tdl) + 1;
    const uintptr_t tiled = (uintptr_t)c->tiled, lin = (uintptr_t)c->linear + lin_off;
    int axis = ny >= want || (ny >= 2 && nz < 2) ? 0 : nz >= 2 ? 1 : -1;
    if (axis == 0 && ny > 1 && want > ny)
        want = ny;
    if (axis == 1 && want > nz)
        want = nz;
    if (want > PAR_MAX_JOBS - 1 - c->njobs) /* one entry kept for par_whole()'s rest */
        want = PAR_MAX_JOBS - 1 - c->njobs;
    if (axis < 0 || want <= 1) {
        c->job[c->njobs++] = (struct par_job){ mip, layer, false, *b, lin_off };
        return;
    }
    const uint32_t start = axis == 0 ? b->y : b->z, len = axis == 0 ? b->height : b->depth;
    const uint32_t g = 1u << (axis == 0 ? thl : tdl);
    uint32_t prev = start;
    for (uint32_t i = 1; i <= want; i++) {
        uint32_t cut = start + len;
        if (i < want) {
            /* The nominal cut rounded down to the tile grid, then the first allowed one before
             * the next band's nominal cut. */
            const uint32_t nominal = start + (uint32_t)((uint64_t)len * i / want);
            const uint32_t limit = start + (uint32_t)((uint64_t)len * (i + 1) / want);
            uint32_t k = nominal / g * g;
            while (k <= prev)
                k += g;
            for (; k < limit; k += g)
                if (cut_ok(m, b, axis, k, tiled, lin, rp, sp, c->dir))
                    break;
            if (k >= limit)
                continue; /* no cut here: the band runs on */
            cut = k;
        }
        struct vidmm_box part = *b;
        size_t off = lin_off;
        if (axis == 0) {
            part.y = prev;
            part.height = cut - prev;
            off += (size_t)(prev - b->y) * rp;
        } else {
            part.z = prev;
            part.depth = cut - prev;
            off += (size_t)(prev - b->z) * sp;
        }
        c->job[c->njobs++] = (struct par_job){ mip, layer, false, part, off };
        prev = cut;
    }
}

/* bands_for() is how many bands a copy of 'bytes' gets: at least half 'band_min' each - the
 * plan's min_bytes, or PAR_AUTO_FLOOR for a copy the measured threshold sent (par_way()).
 *
 * The threshold (VIDMM_SWIZZLE_MIN_PARALLEL_BYTES, 1 MiB; a plan's min_bytes overrides it): the
 * pool's hand-off - waking a worker, and the caller waiting for the band it took - measured
 * 3.4-11.9 us per copy on 8 KiB copies of two bands (Intel Y and block-linear, both
 * directions), and the cut alone (no second band: 64 KiB of one tile row) 1.0-1.8 us, against
 * 100-350 us for a 1 MiB copy at this machine's 3-10 GB/s: at most ~10% at the threshold, and
 * bands of 512 KiB and more. Measured with build/release/bench/bench_swizzle_threads 9 (its
 * "dispatch" rows) on the 2-vCPU Intel Xeon (Cascade Lake) KVM guest, 2026-11-28, with other
 * guests' builds loading both vCPUs (load average 4.5-7): no size up to 4 MiB ran faster on
 * two threads there (nor did memcpy: 1.01x at 64 MiB in the same process), so the figure
 * bounds the cost rather than marking a crossover. */
static uint32_t bands_for(const struct vidmm_swizzle_plan *p, uint64_t band_min, uint64_t bytes)
{
    const uint64_t per = band_min / 2 > 0 ? band_min / 2 : 1;
    const uint64_t n = bytes / per, most = (uint64_t)p->threads * PAR_BANDS_PER_THREAD;
    return n < 1 ? 1 : n > most ? (uint32_t)most : (uint32_t)n;
}

/* sub_alone() tells whether subresource 'm' of a whole-surface copy may have jobs of its own:
 * the range it writes starts and ends a line and no neighbour's overlaps it (AMD's mip tail
 * puts several mips in one block). */
static bool sub_alone(const struct par_ctx *c, const struct vidmm_swz_mip *m, const uint64_t *base,
                      const uint64_t *end, uint32_t mip, uint32_t mips)
{
    const uint64_t bytes = (uint64_t)m->w * m->h * m->d * m->elem;
    if (c->dir == VIDMM_SWZ_TILE) {
        if ((((uintptr_t)c->tiled + base[mip]) & 63) != 0 || (((uintptr_t)c->tiled + end[mip]) & 63) != 0)
            return false;
        for (uint32_t j = 0; j < mips; j++)
            if (j != mip && base[j] < end[mip] && base[mip] < end[j])
                return false;
        return true;
    }
    /* The packed linear order: the ends next to another subresource start and end a line. */
    const uintptr_t l = (uintptr_t)c->linear + m->linear_offset;
    return (m->linear_offset == 0 || (l & 63) == 0) && (m->linear_offset + bytes == c->p->lin || ((l + bytes) & 63) == 0);
}

static void par_job_run(void *arg, uint32_t index)
{
    const struct par_ctx *c = arg;
    const struct par_job *j = &c->job[index];
    const struct vidmm_swizzle_plan *p = c->p;
    struct vidmm_swz_mip m;

    if (!p->whole) {
        if (c->tuned)
            vidmm_swz_run_tuned(&p->m, &j->b, c->tiled, c->linear + j->lin_off, c->row_pitch, c->slice_pitch,
                                c->dir, p->backend, p->strategy, c->stream_bytes, &p->tune[c->dir]);
        else
            vidmm_swz_run(&p->m, &j->b, c->tiled, c->linear + j->lin_off, c->row_pitch, c->slice_pitch, c->dir,
                          p->backend, p->strategy, c->stream_bytes);
        return;
    }
    if (!j->rest) {
        if (vidmm_swz_prepare(&p->s, p->fam, j->mip, j->layer, &m) == 0) {
            const size_t row = (size_t)m.w * m.elem;
            if (c->tuned)
                vidmm_swz_run_tuned(&m, &j->b, c->tiled, c->linear + j->lin_off, row, row * m.h, c->dir, p->backend,
                                    p->strategy, c->stream_bytes, &p->tune[c->dir]);
            else
                vidmm_swz_run(&m, &j->b, c->tiled, c->linear + j->lin_off, row, row * m.h, c->dir, p->backend,
                              p->strategy, c->stream_bytes);
        }
        return;
    }
    /* The rest: every subresource without jobs of its own, decided as par_whole() did. */
    uint64_t base[64], end[64];
    for (uint32_t layer = 0; layer < p->s.layers; layer++) {
        for (uint32_t mip = 0; mip < p->s.mips; mip++) {
            if (vidmm_swz_prepare(&p->s, p->fam, mip, layer, &m) < 0)
                return;
            base[mip] = m.base;
            end[mip] = m.base + m.span;
        }
        for (uint32_t mip = 0; mip < p->s.mips; mip++) {
            if (vidmm_swz_prepare(&p->s, p->fam, mip, layer, &m) < 0)
                return;
            const uint64_t bytes = (uint64_t)m.w * m.h * m.d * m.elem;
            if (layer * p->s.mips + mip < c->indep_end && bands_for(p, c->band_min, bytes) > 1 &&
                sub_alone(c, &m, base, end, mip, p->s.mips))
                continue;
            struct vidmm_box b = { 0, 0, 0, m.w, m.h, m.d };
            const size_t row = (size_t)m.w * m.elem;
            if (c->tuned)
                vidmm_swz_run_tuned(&m, &b, c->tiled, c->linear + m.linear_offset, row, row * m.h, c->dir,
                                    p->backend, p->strategy, c->stream_bytes, &p->tune[c->dir]);
            else
                vidmm_swz_run(&m, &b, c->tiled, c->linear + m.linear_offset, row, row * m.h, c->dir, p->backend,
                              p->strategy, c->stream_bytes);
        }
    }
}

/* dispatch() runs the jobs on the plan's parallel_for or the pool. */
static void dispatch(const struct vidmm_swizzle_plan *p, struct par_ctx *c)
{
    if (p->pfor != NULL)
        p->pfor(p->pctx, c->njobs, par_job_run, c);
    else
        vidmm_i_pool_run(p->threads, c->njobs, par_job_run, c);
}

/* par_sub() copies box 'b' of a subresource plan on several threads: false (nothing done) when
 * it would be one band. */
static bool par_sub(const struct vidmm_swizzle_plan *p, const struct vidmm_box *b, unsigned char *tiled,
                    unsigned char *linear, size_t rp, size_t sp, enum vidmm_swz_dir dir, uint64_t moved, bool tuned,
                    uint64_t band_min)
{
    struct par_ctx *c = malloc(sizeof(*c));
    if (c == NULL)
        return false;
    *c = (struct par_ctx){ .p = p, .tiled = tiled, .linear = linear, .row_pitch = rp, .slice_pitch = sp,
                           .dir = dir, .stream_bytes = moved, .tuned = tuned, .band_min = band_min };
    split_box(c, &p->m, p->mip, p->layer, b, 0, rp, sp, bands_for(p, band_min, moved));
    const bool many = c->njobs > 1;
    if (many)
        dispatch(p, c);
    free(c);
    return many;
}

/* par_whole() copies every subresource of a whole-surface plan on several threads: false
 * (nothing done) when it would be one job. */
static bool par_whole(const struct vidmm_swizzle_plan *p, unsigned char *tiled, unsigned char *linear,
                      enum vidmm_swz_dir dir, uint64_t band_min)
{
    struct vidmm_swz_mip m;
    uint64_t base[64], end[64];
    bool rest = false;

    if (p->s.mips > 64)
        return false;
    struct par_ctx *c = malloc(sizeof(*c));
    if (c == NULL)
        return false;
    *c = (struct par_ctx){ .p = p, .tiled = tiled, .linear = linear, .dir = dir, .stream_bytes = p->lin,
                           .indep_end = UINT32_MAX, .tuned = (p->tuned >> dir & 1) != 0, .band_min = band_min };
    for (uint32_t layer = 0; layer < p->s.layers; layer++) {
        for (uint32_t mip = 0; mip < p->s.mips; mip++) {
            if (vidmm_swz_prepare(&p->s, p->fam, mip, layer, &m) < 0)
                goto one;
            base[mip] = m.base;
            end[mip] = m.base + m.span;
        }
        for (uint32_t mip = 0; mip < p->s.mips; mip++) {
            if (vidmm_swz_prepare(&p->s, p->fam, mip, layer, &m) < 0)
                goto one;
            const uint64_t bytes = (uint64_t)m.w * m.h * m.d * m.elem;
            const uint32_t want = bands_for(p, c->band_min, bytes);
            if (want <= 1 || !sub_alone(c, &m, base, end, mip, p->s.mips)) {
                rest = true;
                continue;
            }
            if (c->indep_end != UINT32_MAX || c->njobs >= PAR_MAX_JOBS - 1) {
                /* Full (one entry kept for the rest): this and every later subresource go there. */
                if (c->indep_end == UINT32_MAX)
                    c->indep_end = layer * p->s.mips + mip;
                rest = true;
                continue;
            }
            const struct vidmm_box b = { 0, 0, 0, m.w, m.h, m.d };
            const size_t row = (size_t)m.w * m.elem;
            split_box(c, &m, mip, layer, &b, m.linear_offset, row, row * m.h, want);
        }
    }
    if (rest)
        c->job[c->njobs++] = (struct par_job){ .rest = true };
    if (c->njobs > 1) {
        dispatch(p, c);
        free(c);
        return true;
    }
one:
    free(c);
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * The measured threshold: whether a copy goes on several threads, learnt from the copies
 * themselves.
 *
 * A plan asked for threads with min_bytes 0 (the library's threshold) does not trust a fixed
 * size: the crossover depends on the machine, the layout and the direction. On this project's
 * 2-vCPU Zen 3 guest (bench_swizzle_threads 5, "dispatch" rows, 2026-12-08) two threads ran
 * copies of 1 MiB at 0.63-0.94x the calling thread alone, 2 MiB at 0.70-0.99x and 4 MiB at
 * 0.84-1.25x, while 64 MiB ran 1.69-1.78x; the fixed 1 MiB (VIDMM_SWIZZLE_MIN_PARALLEL_BYTES)
 * came from a Cascade Lake guest where nothing up to 4 MiB won. So for each kind of copy - the
 * layout, element size, direction, backend and strategy, and the size class (floor(log2) of
 * the bytes moved: struct vidmm_swz_tune_key), with the thread count and job system - the first
 * 4 x PAR_SAMPLES copies of PAR_AUTO_FLOOR bytes or more take the calling thread alone and the
 * threads in turn, two copies a side, the second of each two timed; then the kind keeps the
 * faster side: the threads only when the median of the pairs' ratios says they are PAR_MIN_GAIN
 * faster (they cost CPUs others could use), the samples compared per byte moved (a size class
 * spans 2x). Timing every copy and alternating one by one (each sample right after the other
 * side's copy) missed the threads' win at 2 MiB of block-linear swizzle in 3 runs of 3
 * (1.18-1.23x forced, bench_swizzle_threads). Nothing is copied for the measurement, and both
 * sides write the same bytes. A copy the threads cannot cut (one band: its rows, its buffers'
 * alignment) is no sample. A verdict serves PAR_RELEARN copies, then the kind learns again; a
 * round whose samples did not all come back (copies still running on other threads) is
 * started again after 4 x PAR_SAMPLES more copies. Process-wide (every plan of a kind learns
 * from the others' copies), PAR_KINDS kinds, the oldest replaced; the verdicts go into the
 * table file (swizzle_tune.c). A copy that finds the table busy takes the fixed threshold, as
 * VIDMM_CALIBRATE=0 does for every copy (and as a plan with min_bytes set always does).
 * ------------------------------------------------------------------------------------------- */
#define PAR_SAMPLES 5
#define PAR_MIN_GAIN 1.05
#define PAR_KINDS 64
/* Copies a verdict serves before its kind learns again (a verdict taken under a passing load
 * does not last the process): 20 learning copies in 4096, under 0.5%. */
#define PAR_RELEARN 4096u

enum par_way { PAR_ONE, PAR_MANY, PAR_TIME_ONE, PAR_TIME_MANY };

struct par_kind {
    struct vidmm_swz_tune_key key;
    uint32_t threads;
    bool pfor;                       /* the caller's job system (else the pool) */
    uint8_t phase;                   /* learning copies handed out (par_way()) */
    uint8_t n[2];                    /* samples taken: alone, on the threads */
    uint8_t verdict;                 /* 0 measuring, 1 alone, 2 the threads */
    uint32_t served;                 /* copies the verdict has decided (PAR_RELEARN) */
    uint32_t gen;                    /* which occupant of the slot the samples belong to */
    double t[2][PAR_SAMPLES];        /* the samples of each side (ns a byte: a size class spans
                                        2x in bytes), in the order taken */
};

static struct {
    pthread_mutex_t lock;
    struct par_kind kind[PAR_KINDS];
    unsigned count, next;
    uint32_t gen;
} par_table = { .lock = PTHREAD_MUTEX_INITIALIZER };

static atomic_bool par_file_tried;

/* par_slot() is the slot of kind ('k', 'threads', 'jobs'), made (the oldest replaced) when
 * missing. Under the lock. */
static struct par_kind *par_slot(const struct vidmm_swz_tune_key *k, uint32_t threads, bool jobs)
{
    unsigned i = 0;
    for (; i < par_table.count; i++) {
        const struct par_kind *e = &par_table.kind[i];
        if (e->threads == threads && e->pfor == jobs && memcmp(&e->key, k, sizeof(*k)) == 0)
            return &par_table.kind[i];
    }
    if (par_table.count < PAR_KINDS) {
        i = par_table.count++;
    } else {
        i = par_table.next;
        par_table.next = (par_table.next + 1) % PAR_KINDS;
    }
    par_table.kind[i] = (struct par_kind){ .key = *k, .threads = threads, .pfor = jobs, .gen = ++par_table.gen };
    return &par_table.kind[i];
}

unsigned vidmm_swz_par_export(struct vidmm_swz_par_verdict *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&par_table.lock);
    for (unsigned i = 0; i < par_table.count && n < max; i++) {
        const struct par_kind *e = &par_table.kind[i];
        if (e->verdict != 0)
            out[n++] = (struct vidmm_swz_par_verdict){ e->key, e->threads, e->pfor, e->verdict == 2 };
    }
    pthread_mutex_unlock(&par_table.lock);
    return n;
}

void vidmm_swz_par_import(const struct vidmm_swz_par_verdict *v, unsigned n)
{
    pthread_mutex_lock(&par_table.lock);
    for (unsigned i = 0; i < n; i++) {
        struct par_kind *e = par_slot(&v[i].key, v[i].threads, v[i].jobs);
        e->verdict = v[i].many ? 2 : 1;
    }
    pthread_mutex_unlock(&par_table.lock);
}

void vidmm_swz_par_clear(void)
{
    pthread_mutex_lock(&par_table.lock);
    par_table.count = 0;
    par_table.next = 0;
    pthread_mutex_unlock(&par_table.lock);
    atomic_store_explicit(&par_file_tried, false, memory_order_release);
}

/* A sample to report: the slot, its occupant, the side. */
struct par_ticket {
    unsigned slot;
    uint32_t gen;
    unsigned side, index;
    uint64_t bytes;                  /* what the timed copy moves */
};

/* par_way() decides how a copy of 'moved' bytes of subresource 'm' in direction 'dir' through
 * plan 'p' (threads > 1) runs, stores in '*band_min' what its bands move at least (bands_for()),
 * and for a sample fills '*tk'. */
static enum par_way par_way(const struct vidmm_swizzle_plan *p, const struct vidmm_swz_mip *m, enum vidmm_swz_dir dir,
                            enum vidmm_backend backend, enum vidmm_strategy strategy, uint64_t moved,
                            uint64_t *band_min, struct par_ticket *tk)
{
    *band_min = p->min_bytes;
    if (!p->min_auto || !vidmm_option_get(VIDMM_OPT_CALIBRATE))
        return moved >= p->min_bytes ? PAR_MANY : PAR_ONE;
    if (moved < PAR_AUTO_FLOOR)
        return PAR_ONE;
    /* The table file's verdicts first (VIDMM_SWIZZLE_TUNE_FILE): a program that tuned once on
     * this machine learns nothing again. */
    if (VIDMM_UNLIKELY(!atomic_load_explicit(&par_file_tried, memory_order_acquire))) {
        atomic_store_explicit(&par_file_tried, true, memory_order_release);
        vidmm_swz_tune_load_once();
    }
    struct vidmm_swz_tune_key k;
    vidmm_swz_tune_key_of(&p->s, m, moved, dir, backend, strategy, &k);
    /* Never waited for: a copy that finds the table busy (another thread's copy deciding, or a
     * fork() child whose parent held it) takes the fixed threshold, with its bands. */
    if (pthread_mutex_trylock(&par_table.lock) != 0)
        return moved >= p->min_bytes ? PAR_MANY : PAR_ONE;
    *band_min = PAR_AUTO_FLOOR;
    struct par_kind *e = par_slot(&k, p->threads, p->pfor != NULL);
    const unsigned i = (unsigned)(e - par_table.kind);
    if (e->verdict != 0 && ++e->served >= PAR_RELEARN)
        e->verdict = 0; /* learn again, as below */
    if (e->verdict == 0 && (e->served != 0 || e->phase >= 8 * PAR_SAMPLES)) {
        /* A fresh round: the verdict has served its time, or every sample was handed out 20
         * copies ago and some never came back (a copy that could not be cut, or one still
         * running on another thread - which has had time to finish). The samples still out no
         * longer count. */
        e->phase = 0;
        e->n[0] = e->n[1] = 0;
        e->served = 0;
        e->gen = ++par_table.gen;
    }
    enum par_way way;
    if (e->verdict != 0) {
        way = e->verdict == 2 ? PAR_MANY : PAR_ONE;
    } else if (e->phase >= 4 * PAR_SAMPLES) {
        e->phase++;
        way = PAR_ONE; /* samples still out: wait for them */
    } else {
        /* Two copies a side in turn, the second timed: each sample follows a copy of its own
         * side (as the benchmarks time a side after itself), not the other side's stores. */
        const unsigned c = e->phase++, side = (c >> 1) & 1;
        if ((c & 1) == 0) {
            way = side ? PAR_MANY : PAR_ONE;
        } else {
            tk->slot = i;
            tk->gen = e->gen;
            tk->side = side;
            tk->index = c >> 2;
            tk->bytes = moved;
            way = side ? PAR_TIME_MANY : PAR_TIME_ONE;
        }
    }
    pthread_mutex_unlock(&par_table.lock);
    return way;
}

/* par_report() records the sample of ticket 'tk': the copy took 'ns'. Waits for the table (a
 * report follows a copy, and the lock is only ever held for a few instructions): the samples of
 * several threads copying one kind all arrive. */
static void par_report(const struct par_ticket *tk, uint64_t ns)
{
    pthread_mutex_lock(&par_table.lock);
    struct par_kind *e = &par_table.kind[tk->slot];
    if (e->gen == tk->gen && e->verdict == 0 && e->n[tk->side] < PAR_SAMPLES) {
        e->t[tk->side][tk->index] = (double)(ns > 0 ? ns : 1) / (double)tk->bytes;
        e->n[tk->side]++;
        if (e->n[0] == PAR_SAMPLES && e->n[1] == PAR_SAMPLES) {
            /* Sample i of each side were taken one after the other: the median of their
             * ratios (a copy slowed by something else spoils one pair, not the verdict). */
            double r[PAR_SAMPLES];
            for (unsigned i = 0; i < PAR_SAMPLES; i++) {
                const double v = e->t[0][i] / e->t[1][i];
                unsigned j = i;
                for (; j > 0 && r[j - 1] > v; j--)
                    r[j] = r[j - 1];
                r[j] = v;
            }
            e->verdict = r[PAR_SAMPLES / 2] > PAR_MIN_GAIN ? 2 : 1;
            e->served = 0;
        }
    }
    pthread_mutex_unlock(&par_table.lock);
}

/* sub_run() copies box 'b' of a subresource plan on the calling thread. */
static void sub_run(const struct vidmm_swizzle_plan *p, const struct vidmm_box *b, unsigned char *tiled,
                    unsigned char *linear, size_t rp, size_t sp, enum vidmm_backend backend,
                    enum vidmm_strategy strategy, enum vidmm_swz_dir dir, uint64_t moved, bool tuned)
{
    if (tuned)
        vidmm_swz_run_tuned(&p->m, b, tiled, linear, rp, sp, dir, backend, strategy, moved, &p->tune[dir]);
    else
        vidmm_swz_run(&p->m, b, tiled, linear, rp, sp, dir, backend, strategy, moved);
}

/* sub_copy() copies box 'b' of a subresource plan, on its threads where par_way() says so. */
static void sub_copy(const struct vidmm_swizzle_plan *p, const struct vidmm_box *b, unsigned char *tiled,
                     unsigned char *linear, size_t rp, size_t sp, enum vidmm_backend backend,
                     enum vidmm_strategy strategy, enum vidmm_swz_dir dir, uint64_t moved, bool tuned)
{
    if (p->threads > 1) {
        struct par_ticket tk = { 0 };
        uint64_t band_min;
        const enum par_way way = par_way(p, &p->m, dir, backend, strategy, moved, &band_min, &tk);
        if (way == PAR_MANY && par_sub(p, b, tiled, linear, rp, sp, dir, moved, tuned, band_min))
            return;
        if (way == PAR_TIME_MANY) {
            /* A copy that cannot be cut (one band: the box's rows, the buffers' alignment) is no
             * sample, and decides nothing: the kind's other copies may be cut. */
            const uint64_t t0 = vidmm_swz_now_ns();
            if (par_sub(p, b, tiled, linear, rp, sp, dir, moved, tuned, band_min)) {
                par_report(&tk, vidmm_swz_now_ns() - t0);
                return;
            }
        } else if (way == PAR_TIME_ONE) {
            const uint64_t t0 = vidmm_swz_now_ns();
            sub_run(p, b, tiled, linear, rp, sp, backend, strategy, dir, moved, tuned);
            par_report(&tk, vidmm_swz_now_ns() - t0);
            return;
        }
    }
    sub_run(p, b, tiled, linear, rp, sp, backend, strategy, dir, moved, tuned);
}

/* copy_sub_tuned() runs a checked subresource copy of a measured plan (copy_sub()): its walk
 * for whole-subresource copies in a measured direction, the default walk otherwise. */
static __attribute__((noinline)) int copy_sub_tuned(const struct vidmm_swizzle_plan *p, const struct vidmm_box *b,
                                                    unsigned char *tiled, unsigned char *linear, size_t rp,
                                                    size_t sp, enum vidmm_backend backend,
                                                    enum vidmm_strategy strategy, enum vidmm_swz_dir dir,
                                                    uint64_t moved)
{
    const struct vidmm_swz_mip *mp = &p->m;
    const bool tuned = (p->tuned >> dir & 1) != 0 && (b->x | b->y | b->z) == 0 && b->width == mp->w &&
                       b->height == mp->h && b->depth == mp->d;
    sub_copy(p, b, tiled, linear, rp, sp, backend, strategy, dir, moved, tuned);
    return 0;
}

/* copy_sub() checks the box and buffers of one subresource copy and runs it. */
static int copy_sub(const char *call, const struct vidmm_swizzle_plan *p, const struct vidmm_box *box,
                    unsigned char *tiled,
                    size_t tiled_size, unsigned char *linear, size_t linear_size, size_t row_pitch,
                    size_t slice_pitch, enum vidmm_backend backend, enum vidmm_strategy strategy,
                    enum vidmm_swz_dir dir)
{
    const struct vidmm_swz_mip *mp = &p->m;
    const uint64_t total = p->total;
    uint64_t need, t;

    struct vidmm_box b = { 0, 0, 0, mp->w, mp->h, mp->d };
    if (box != NULL)
        b = *box;
    if (b.width == 0 || b.height == 0 || b.depth == 0 || b.x >= mp->w || b.width > mp->w - b.x || b.y >= mp->h ||
        b.height > mp->h - b.y || b.z >= mp->d || b.depth > mp->d - b.z)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "box", "(%u, %u, %u) + %ux%ux%u: empty, or outside mip "
                                "%u's %ux%ux%u elements (spec swizzle.h)", b.x, b.y, b.z, b.width, b.height, b.depth,
                                mp->mip, mp->w, mp->h, mp->d);
    if (tiled == NULL || linear == NULL || tiled_size < total)
        return refuse_buffers(call, tiled, tiled_size, total, linear, linear_size, 0);
    uint64_t row_bytes = (uint64_t)b.width * mp->elem;
    if (row_pitch < row_bytes)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "row_pitch", "%zu, below the box's row of %llu bytes "
                                "(spec swizzle.h)", row_pitch, (unsigned long long)row_bytes);
    if (b.depth > 1 && slice_pitch < (uint64_t)(b.height - 1) * row_pitch + row_bytes)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "slice_pitch", "%zu, below the box's slice of %llu bytes "
                                "(spec swizzle.h)", slice_pitch,
                                (unsigned long long)((uint64_t)(b.height - 1) * row_pitch + row_bytes));
    /* Bytes of 'linear' the box reaches: the last row of the last slice ends it. */
    if (!vidmm_swz_mul_ok(b.depth - 1, b.depth > 1 ? slice_pitch : 0, &need) ||
        !vidmm_swz_mul_ok(b.height - 1, row_pitch, &t) || !vidmm_swz_add_ok(need, t, &need) ||
        !vidmm_swz_add_ok(need, row_bytes, &need))
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "row_pitch, slice_pitch", "%zu, %zu: the bytes the box "
                                "reaches overflow 64 bits (spec swizzle.h)", row_pitch, slice_pitch);
    if (need > linear_size || !vidmm_range_ok(tiled, tiled_size) || !vidmm_range_ok(linear, (size_t)need))
        return refuse_buffers(call, tiled, tiled_size, total, linear, linear_size, need);
    if (ranges_overlap(tiled, total, linear, need))
        return vidmm_swz_refuse(VIDMM_E_OVERLAP, call, "tiled, linear", "%p + %llu and %p + %llu overlap "
                                "(spec swizzle.h)", (void *)tiled, (unsigned long long)total, (void *)linear,
                                (unsigned long long)need);
    const uint64_t moved = (uint64_t)b.width * mp->elem * b.height * b.depth;
    /* A measured plan's walk serves its whole-subresource copies: the one plan field the default
     * path tests, the rest out of line (inline, the test cost every small box copy 17-33
     * instructions more: tools/bench_gate.sh, 2026-11-28). */
    if (VIDMM_UNLIKELY(p->tuned != 0))
        return copy_sub_tuned(p, &b, tiled, linear, row_pitch, b.depth > 1 ? slice_pitch : 0, backend, strategy, dir,
                              moved);
    if (p->threads > 1) {
        sub_copy(p, &b, tiled, linear, row_pitch, b.depth > 1 ? slice_pitch : 0, backend, strategy, dir, moved,
                 false);
        return 0;
    }
    vidmm_swz_run(mp, &b, tiled, linear, row_pitch, b.depth > 1 ? slice_pitch : 0, dir, backend, strategy, moved);
    return 0;
}

/* whole_run() copies every layer and mip of a whole-surface plan on the calling thread. */
static int whole_run(const struct vidmm_swizzle_plan *p, unsigned char *tiled, unsigned char *linear,
                     enum vidmm_backend backend, enum vidmm_strategy strategy, enum vidmm_swz_dir dir)
{
    struct vidmm_swz_mip m;
    int err;

    for (uint32_t layer = 0; layer < p->s.layers; layer++) {
        for (uint32_t mip = 0; mip < p->s.mips; mip++) {
            if ((err = vidmm_swz_prepare(&p->s, p->fam, mip, layer, &m)) < 0)
                return err; /* only possible on the first subresource: the rest resolve alike */
            struct vidmm_box b = { 0, 0, 0, m.w, m.h, m.d };
            size_t row = (size_t)m.w * m.elem;
            if (VIDMM_UNLIKELY(p->tuned >> dir & 1))
                vidmm_swz_run_tuned(&m, &b, tiled, linear + m.linear_offset, row, row * m.h, dir, backend, strategy,
                                    p->lin, &p->tune[dir]);
            else
                vidmm_swz_run(&m, &b, tiled, linear + m.linear_offset, row, row * m.h, dir, backend, strategy, p->lin);
        }
    }
    return 0;
}

/* copy_whole() tiles or untiles every layer and mip. Everything is checked before the first
 * byte moves, so that an error leaves both buffers as they were. */
static int copy_whole(const char *call, const struct vidmm_swizzle_plan *p, unsigned char *tiled, size_t tiled_size,
                      unsigned char *linear, size_t linear_size, enum vidmm_backend backend,
                      enum vidmm_strategy strategy, enum vidmm_swz_dir dir)
{
    int err;

    if (tiled == NULL || linear == NULL || tiled_size < p->total || linear_size < p->lin ||
        !vidmm_range_ok(tiled, tiled_size) || !vidmm_range_ok(linear, linear_size))
        return refuse_buffers(call, tiled, tiled_size, p->total, linear, linear_size, p->lin);
    if (ranges_overlap(tiled, p->total, linear, p->lin))
        return vidmm_swz_refuse(VIDMM_E_OVERLAP, call, "tiled, linear", "%p + %llu and %p + %llu overlap "
                                "(spec swizzle.h)", (void *)tiled, (unsigned long long)p->total, (void *)linear,
                                (unsigned long long)p->lin);
    if (p->threads > 1) {
        struct par_ticket tk = { 0 };
        uint64_t band_min;
        const enum par_way way = par_way(p, &p->m, dir, backend, strategy, p->lin, &band_min, &tk);
        if (way == PAR_MANY && par_whole(p, tiled, linear, dir, band_min))
            return 0;
        if (way == PAR_TIME_MANY) {
            const uint64_t t0 = vidmm_swz_now_ns();
            if (par_whole(p, tiled, linear, dir, band_min)) { /* else no sample (sub_copy()) */
                par_report(&tk, vidmm_swz_now_ns() - t0);
                return 0;
            }
        } else if (way == PAR_TIME_ONE) {
            const uint64_t t0 = vidmm_swz_now_ns();
            err = whole_run(p, tiled, linear, backend, strategy, dir);
            if (err == 0)
                par_report(&tk, vidmm_swz_now_ns() - t0);
            return err;
        }
    }
    return whole_run(p, tiled, linear, backend, strategy, dir);
}


/* ---------------------------------------------------------------------------------------------
 * The per-thread cache of plans behind the one-shot box copies.
 *
 * Loading, checking, sizing and resolving a subresource cost 0.25 us (block-linear) to 2.3 us
 * (a D3D equation: its analysis and tables) per call, against 0.2-0.45 us for the memcpy of the
 * 16 KiB of a 64x64 box (Zen 3, boxprof and bench_swizzle.c). Callers updating boxes of a
 * texture call with the same descriptors again and again, so each thread keeps the last few
 * resolved subresources, keyed on the full contents of the descriptors (every field a family
 * reads, and the equation's terms, not its address: a caller may rewrite the equation it points
 * to between calls). Only successes are cached; a miss runs the same code as before, so every
 * error comes from the same checks in the same order. Per thread, so no locking: an entry is
 * written and read only by its thread, and is not used after the call returns (no pointer into
 * it escapes). Not async-signal-safe (no swizzle call is).
 * ------------------------------------------------------------------------------------------- */

/* Every field the engine and the families read (all 32-bit, so no padding: memcmp() compares
 * them); an equation's terms are kept beside the key and compared only for EQUATION layouts. */
struct swz_key {
    uint32_t tiling, flags, block_height, block_depth, pitch, swizzle_unit, amd_swizzle_mode, has_eq;
    uint32_t width, height, depth, element_bytes, block_width, block_height_px, mip_levels, array_layers;
    uint32_t mip, layer;
    uint32_t eq_bits, eq_thick;   /* EQUATION only, else 0 */
};

struct swz_cached {
    bool valid;
    struct swz_key key;
    struct vidmm_eq_term eq_term[VIDMM_EQ_MAX_BITS][VIDMM_EQ_MAX_TERMS];   /* EQUATION only */
    struct vidmm_swizzle_plan p;  /* its backend and strategy unused: each call brings its own */
};

/* Four entries (about 13 KiB of TLS per thread that copies boxes): the mips of a texture being
 * updated, or a few textures in turn. Replaced round-robin; looked up from the last one hit, so
 * a caller updating one texture finds it first. Building the whole key (with the equation's 200
 * bytes) and comparing it with each entry cost 40% of a 1x1 box, ~50 ns (perf, Zen 3). */
#define SWZ_CACHE_ENTRIES 4
static _Thread_local struct {
    unsigned next, last;
    struct swz_cached e[SWZ_CACHE_ENTRIES];
} swz_cache;

/* make_key() fills '*k' from the public descriptors; callers checked both are non-NULL and
 * large enough (the V0 fields are what vidmm_swz_open() reads). */
static void make_key(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface, uint32_t mip,
                     uint32_t layer, struct swz_key *k)
{
    const bool eq = layout->tiling == VIDMM_TILING_EQUATION && layout->equation != NULL;
    *k = (struct swz_key){
        .tiling = (uint32_t)layout->tiling,
        .flags = layout->flags,
        .block_height = layout->block_height,
        .block_depth = layout->block_depth,
        .pitch = layout->pitch,
        .swizzle_unit = layout->swizzle_unit,
        .amd_swizzle_mode = layout->amd_swizzle_mode,
        .has_eq = layout->equation != NULL,
        .width = surface->width,
        .height = surface->height,
        .depth = surface->depth,
        .element_bytes = surface->element_bytes,
        .block_width = surface->block_width,
        .block_height_px = surface->block_height,
        .mip_levels = surface->mip_levels,
        .array_layers = surface->array_layers,
        .mip = mip,
        .layer = layer,
        .eq_bits = eq ? layout->equation->bits : 0,
        .eq_thick = eq ? layout->equation->thick : 0,
    };
}

/* resolve_cached() finds (or builds, in place) this thread's plan of (layout, surface, mip,
 * layer): '*out' stays valid until this thread's next call. */
static int resolve_cached(const char *call, const struct vidmm_tile_layout *layout,
                          const struct vidmm_surface_desc *surface, uint32_t mip, uint32_t layer,
                          const struct vidmm_swizzle_plan **out)
{
    struct swz_key k;
    int err;

    if (VIDMM_UNLIKELY(layout == NULL || surface == NULL || layout->size < VIDMM_SWZ_LAYOUT_V0_SIZE ||
                       surface->size < VIDMM_SWZ_SURFACE_V0_SIZE))
    {
        err = vidmm_swz_check_desc(call, layout, surface);
        return err < 0 ? err : VIDMM_E_INVALID_ARG;
    }
    make_key(layout, surface, mip, layer, &k);
    const bool eq = layout->tiling == VIDMM_TILING_EQUATION && layout->equation != NULL;
    for (unsigned j = 0; j < SWZ_CACHE_ENTRIES; j++) {
        const unsigned i = (swz_cache.last + j) % SWZ_CACHE_ENTRIES;
        const struct swz_cached *c = &swz_cache.e[i];
        if (c->valid && memcmp(&c->key, &k, sizeof(k)) == 0 &&
            (!eq || memcmp(c->eq_term, layout->equation->term, sizeof(c->eq_term)) == 0)) {
            swz_cache.last = i;
            *out = &c->p;
            return 0;
        }
    }
    const unsigned i = swz_cache.next;
    struct swz_cached *c = &swz_cache.e[i];
    swz_cache.next = (i + 1) % SWZ_CACHE_ENTRIES;
    c->valid = false;
    if ((err = plan_build(call, &c->p, layout, surface, mip, layer, false)) < 0)
        return err;
    c->key = k;
    if (eq)
        memcpy(c->eq_term, layout->equation->term, sizeof(c->eq_term));
    c->valid = true;
    swz_cache.last = i;
    *out = &c->p;
    return 0;
}

/* copy_one() is a one-shot box copy: the options, this thread's plan, then the copy. */
static int copy_one(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                    uint32_t mip, uint32_t layer, const struct vidmm_box *box, unsigned char *tiled,
                    size_t tiled_size, unsigned char *linear, size_t linear_size, size_t row_pitch,
                    size_t slice_pitch, const struct vidmm_kernel_opts *opts, enum vidmm_swz_dir dir)
{
    const char *call = dir == VIDMM_SWZ_TILE ? "vidmm_swizzle" : "vidmm_deswizzle";
    const struct vidmm_swizzle_plan *p;
    enum vidmm_backend backend;
    enum vidmm_strategy strategy;
    int err;

    if ((err = vidmm_read_kernel_opts(opts, &backend, &strategy)) < 0 ||
        (err = resolve_cached(call, layout, surface, mip, layer, &p)) < 0 ||
        (err = check_opts(call, backend, strategy)) < 0)
        return err;
    return copy_sub(call, p, box, tiled, tiled_size, linear, linear_size, row_pitch, slice_pitch, backend, strategy, dir);
}

int vidmm_swizzle_ex(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                     uint32_t mip, uint32_t layer, const struct vidmm_box *box, void *tiled, size_t tiled_size,
                     const void *linear, size_t linear_size, size_t row_pitch, size_t slice_pitch,
                     const struct vidmm_kernel_opts *opts)
{
    /* The linear side is only read in this direction; the cast serves the shared walk. */
    return copy_one(layout, surface, mip, layer, box, tiled, tiled_size, (unsigned char *)(uintptr_t)linear,
                    linear_size, row_pitch, slice_pitch, opts, VIDMM_SWZ_TILE);
}

int vidmm_deswizzle_ex(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                       uint32_t mip, uint32_t layer, const struct vidmm_box *box, const void *tiled,
                       size_t tiled_size, void *linear, size_t linear_size, size_t row_pitch, size_t slice_pitch,
                       const struct vidmm_kernel_opts *opts)
{
    /* The tiled side is only read in this direction. */
    return copy_one(layout, surface, mip, layer, box, (unsigned char *)(uintptr_t)tiled, tiled_size, linear,
                    linear_size, row_pitch, slice_pitch, opts, VIDMM_SWZ_UNTILE);
}

int vidmm_swizzle(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface, uint32_t mip,
                  uint32_t layer, const struct vidmm_box *box, void *tiled, size_t tiled_size, const void *linear,
                  size_t linear_size, size_t row_pitch, size_t slice_pitch)
{
    return vidmm_swizzle_ex(layout, surface, mip, layer, box, tiled, tiled_size, linear, linear_size, row_pitch,
                            slice_pitch, NULL);
}

int vidmm_deswizzle(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface, uint32_t mip,
                    uint32_t layer, const struct vidmm_box *box, const void *tiled, size_t tiled_size, void *linear,
                    size_t linear_size, size_t row_pitch, size_t slice_pitch)
{
    return vidmm_deswizzle_ex(layout, surface, mip, layer, box, tiled, tiled_size, linear, linear_size, row_pitch,
                              slice_pitch, NULL);
}

/* copy_surface() is a one-shot whole-surface copy through a plan on the stack (a whole surface
 * moves far more bytes than opening it costs, so it is not cached). */
static int copy_surface(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                        unsigned char *tiled, size_t tiled_size, unsigned char *linear, size_t linear_size,
                        enum vidmm_swz_dir dir, const struct vidmm_kernel_opts *opts)
{
    const char *call = dir == VIDMM_SWZ_TILE ? "vidmm_swizzle_surface" : "vidmm_deswizzle_surface";
    struct vidmm_swizzle_plan p;
    enum vidmm_backend backend;
    enum vidmm_strategy strategy;
    int err;

    p.threads = 0; /* the calling thread (not the whole struct zeroed: ~4 KiB a call) */
    p.tuned = 0;   /* the rules' walks */
    if ((err = vidmm_read_kernel_opts(opts, &backend, &strategy)) < 0 ||
        (err = vidmm_swz_open(call, layout, surface, &p.s, &p.fam, &p.lin, &p.total)) < 0 ||
        (err = check_opts(call, backend, strategy)) < 0)
        return err;
    return copy_whole(call, &p, tiled, tiled_size, linear, linear_size, backend, strategy, dir);
}

int vidmm_swizzle_surface_ex(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                             void *tiled, size_t tiled_size, const void *linear, size_t linear_size,
                             const struct vidmm_kernel_opts *opts)
{
    return copy_surface(layout, surface, tiled, tiled_size, (unsigned char *)(uintptr_t)linear, linear_size,
                        VIDMM_SWZ_TILE, opts);
}

int vidmm_deswizzle_surface_ex(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                               const void *tiled, size_t tiled_size, void *linear, size_t linear_size,
                               const struct vidmm_kernel_opts *opts)
{
    return copy_surface(layout, surface, (unsigned char *)(uintptr_t)tiled, tiled_size, linear, linear_size,
                        VIDMM_SWZ_UNTILE, opts);
}

int vidmm_swizzle_surface(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                          void *tiled, size_t tiled_size, const void *linear, size_t linear_size)
{
    return vidmm_swizzle_surface_ex(layout, surface, tiled, tiled_size, linear, linear_size, NULL);
}

int vidmm_deswizzle_surface(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                            const void *tiled, size_t tiled_size, void *linear, size_t linear_size)
{
    return vidmm_deswizzle_surface_ex(layout, surface, tiled, tiled_size, linear, linear_size, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * The plan API.
 * ------------------------------------------------------------------------------------------- */

/* struct vidmm_kernel_opts up to 'flags' (0.6). */
#define OPTS_FLAGS_SIZE (offsetof(struct vidmm_kernel_opts, flags) + sizeof(uint32_t))

/* plan_tune() chooses the walks of 'p''s whole copies in both directions (swizzle_tune.c):
 * from the table when 'use_table' and it has them, else measured within 'budget_ns' (half each
 * way) and recorded. The plan changes only on success: VIDMM_E_NO_MEMORY leaves it as it was. */
static int plan_tune(struct vidmm_swizzle_plan *p, uint64_t budget_ns, bool use_table)
{
    struct vidmm_swz_tune t[2];
    struct vidmm_swz_tune_key k;
    const struct vidmm_swz_mip *m = &p->m;
    const uint64_t moved = p->whole ? p->lin : (uint64_t)m->w * m->h * m->d * m->elem;
    bool measured = false;
    int err;

    for (unsigned dir = 0; dir < 2; dir++) {
        vidmm_swz_tune_key_of(&p->s, m, moved, (enum vidmm_swz_dir)dir, p->backend, p->strategy, &k);
        if (use_table && vidmm_swz_tune_lookup(&k, &t[dir]))
            continue;
        if ((err = vidmm_swz_tune_measure(&p->s, m, moved, (enum vidmm_swz_dir)dir, p->backend, p->strategy,
                                          budget_ns / 2, &k, &t[dir])) < 0)
            return err;
        measured = true;
    }
    p->tuned = 0;
    for (unsigned dir = 0; dir < 2; dir++) {
        p->tune[dir] = t[dir];
        const struct vidmm_swz_tune none = { 0 };
        if (memcmp(&t[dir], &none, sizeof(none)) != 0)
            p->tuned |= (uint8_t)(1u << dir);
    }
    p->tune_source = measured ? VIDMM_SWIZZLE_TUNE_MEASURED : VIDMM_SWIZZLE_TUNE_TABLE;
    return 0;
}

/* plan_from_table() gives a plan made without VIDMM_PLAN_MEASURE the winners the table holds
 * for its kinds, where VIDMM_SWIZZLE_TUNE_FILE names a table file (loaded by the first lookup):
 * an emulator tunes once per machine (vidmm-info --tune-write) and every plan of a kind the file
 * knows runs its winner. Nothing is measured; a kind the table lacks keeps the rules. */
static void plan_from_table(struct vidmm_swizzle_plan *p)
{
    const struct vidmm_swz_mip *m = &p->m;
    const uint64_t moved = p->whole ? p->lin : (uint64_t)m->w * m->h * m->d * m->elem;
    const struct vidmm_swz_tune none = { 0 };
    bool found = false;
    for (unsigned dir = 0; dir < 2; dir++) {
        struct vidmm_swz_tune_key k;
        struct vidmm_swz_tune t;
        vidmm_swz_tune_key_of(&p->s, m, moved, (enum vidmm_swz_dir)dir, p->backend, p->strategy, &k);
        if (!vidmm_swz_tune_lookup(&k, &t))
            continue;
        found = true;
        p->tune[dir] = t;
        if (memcmp(&t, &none, sizeof(none)) != 0)
            p->tuned |= (uint8_t)(1u << dir);
    }
    if (found)
        p->tune_source = VIDMM_SWIZZLE_TUNE_TABLE;
}

int vidmm_swizzle_plan_create(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                              uint32_t mip, uint32_t layer, const struct vidmm_kernel_opts *opts,
                              vidmm_swizzle_plan **plan)
{
    enum vidmm_backend backend;
    enum vidmm_strategy strategy;
    int err;

    if (plan == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "plan", "NULL (spec swizzle.h)");
    const bool whole = mip == VIDMM_SWIZZLE_PLAN_SURFACE;
    if (whole && layer != 0)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "layer", "%u with VIDMM_SWIZZLE_PLAN_SURFACE, not 0 "
                                "(spec swizzle.h)", layer);
    if ((err = vidmm_read_kernel_opts(opts, &backend, &strategy)) < 0)
        return err;
    const uint32_t flags = opts != NULL && opts->size >= OPTS_FLAGS_SIZE ? opts->flags : 0;
    if ((flags & ~(uint32_t)VIDMM_PLAN_MEASURE) != 0)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "opts->flags", "0x%x: unknown bits 0x%x "
                                "(spec kernels.h)", flags, flags & ~(uint32_t)VIDMM_PLAN_MEASURE);
    /* The surface copy holds _Alignas(16) state: aligned_alloc, not malloc's 16 by chance. */
    struct vidmm_swizzle_plan *p = aligned_alloc(64, (sizeof(*p) + 63) / 64 * 64);
    if (p == NULL)
        return VIDMM_E_NO_MEMORY;
    if ((err = plan_build(__func__, p, layout, surface, mip, layer, whole)) < 0 ||
        (err = check_opts(__func__, backend, strategy)) < 0) {
        free(p);
        return err;
    }
    p->backend = backend;
    p->strategy = strategy;
    if ((flags & VIDMM_PLAN_MEASURE) != 0 && (err = plan_tune(p, VIDMM_SWIZZLE_TUNE_BUDGET_NS, true)) < 0) {
        free(p);
        return err;
    }
    if ((flags & VIDMM_PLAN_MEASURE) == 0 && vidmm_option_get_string(VIDMM_OPT_SWIZZLE_TUNE_FILE) != NULL)
        plan_from_table(p);
    *plan = p;
    return 0;
}

/* plan_candidates() lists the walks of 'p''s whole copies in direction 'dir' (the default first). */
static unsigned plan_candidates(const struct vidmm_swizzle_plan *p, enum vidmm_swz_dir dir,
                                struct vidmm_swz_tune *out)
{
    const struct vidmm_swz_mip *m = &p->m;
    const uint64_t moved = p->whole ? p->lin : (uint64_t)m->w * m->h * m->d * m->elem;
    return vidmm_swz_tune_candidates(m, dir, p->backend, p->strategy, moved, out, VIDMM_SWZ_MAX_CANDIDATES);
}

int vidmm_swizzle_plan_walk_candidates(const vidmm_swizzle_plan *plan, bool deswizzle, uint32_t *count)
{
    struct vidmm_swz_tune c[VIDMM_SWZ_MAX_CANDIDATES];
    if (plan == NULL || count == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, plan == NULL ? "plan" : "count",
                                "NULL (spec swizzle.h)");
    *count = plan_candidates(plan, deswizzle ? VIDMM_SWZ_UNTILE : VIDMM_SWZ_TILE, c);
    return 0;
}

int vidmm_swizzle_plan_force_walk(vidmm_swizzle_plan *plan, bool deswizzle, uint32_t index)
{
    struct vidmm_swz_tune c[VIDMM_SWZ_MAX_CANDIDATES];
    if (plan == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "plan", "NULL (spec swizzle.h)");
    const enum vidmm_swz_dir dir = deswizzle ? VIDMM_SWZ_UNTILE : VIDMM_SWZ_TILE;
    const unsigned n = plan_candidates(plan, dir, c);
    if (index >= n)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "index", "%u, not below the plan's %u walks "
                                "(spec swizzle.h)", index, n);
    plan->tune[dir] = c[index];
    if (index == 0)
        plan->tuned &= (uint8_t)~(1u << dir);
    else
        plan->tuned |= (uint8_t)(1u << dir);
    plan->tune_source = plan->tuned != 0 ? VIDMM_SWIZZLE_TUNE_FORCED : VIDMM_SWIZZLE_TUNE_DEFAULT;
    return 0;
}

int vidmm_swizzle_plan_measure(vidmm_swizzle_plan *plan, uint64_t budget_ns)
{
    if (plan == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "plan", "NULL (spec swizzle.h)");
    return plan_tune(plan, budget_ns != 0 ? budget_ns : VIDMM_SWIZZLE_TUNE_BUDGET_NS, false);
}

void vidmm_swizzle_plan_destroy(vidmm_swizzle_plan *plan)
{
    free(plan);
}

/* refuse_whole_box() is the line of a whole-surface plan's copy given a box or pitches. */
static int refuse_whole_box(const char *call, const struct vidmm_box *box, size_t row_pitch, size_t slice_pitch)
{
    return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, box != NULL ? "box" : "row_pitch, slice_pitch",
                            "%s, %zu, %zu: a whole-surface plan takes a NULL box and pitches 0 (spec swizzle.h)",
                            box != NULL ? "a box" : "NULL", row_pitch, slice_pitch);
}

int vidmm_swizzle_plan_swizzle(const vidmm_swizzle_plan *plan, const struct vidmm_box *box, void *tiled,
                               size_t tiled_size, const void *linear, size_t linear_size, size_t row_pitch,
                               size_t slice_pitch)
{
    unsigned char *lin = (unsigned char *)(uintptr_t)linear; /* only read in this direction */
    if (plan == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "plan", "NULL (spec swizzle.h)");
    if (plan->whole)
        return box != NULL || row_pitch != 0 || slice_pitch != 0
                   ? refuse_whole_box(__func__, box, row_pitch, slice_pitch)
                   : copy_whole(__func__, plan, tiled, tiled_size, lin, linear_size, plan->backend, plan->strategy,
                                VIDMM_SWZ_TILE);
    return copy_sub(__func__, plan, box, tiled, tiled_size, lin, linear_size, row_pitch, slice_pitch, plan->backend,
                    plan->strategy, VIDMM_SWZ_TILE);
}

int vidmm_swizzle_plan_deswizzle(const vidmm_swizzle_plan *plan, const struct vidmm_box *box, const void *tiled,
                                 size_t tiled_size, void *linear, size_t linear_size, size_t row_pitch,
                                 size_t slice_pitch)
{
    unsigned char *t = (unsigned char *)(uintptr_t)tiled; /* only read in this direction */
    if (plan == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "plan", "NULL (spec swizzle.h)");
    if (plan->whole)
        return box != NULL || row_pitch != 0 || slice_pitch != 0
                   ? refuse_whole_box(__func__, box, row_pitch, slice_pitch)
                   : copy_whole(__func__, plan, t, tiled_size, linear, linear_size, plan->backend, plan->strategy,
                                VIDMM_SWZ_UNTILE);
    return copy_sub(__func__, plan, box, t, tiled_size, linear, linear_size, row_pitch, slice_pitch, plan->backend,
                    plan->strategy, VIDMM_SWZ_UNTILE);
}

#define THREADS_V0_SIZE (offsetof(struct vidmm_swizzle_threads, min_bytes) + sizeof(uint64_t))

int vidmm_swizzle_plan_set_threads(vidmm_swizzle_plan *plan, const struct vidmm_swizzle_threads *t)
{
    if (plan == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "plan", "NULL (spec swizzle.h)");
    if (t == NULL) {
        plan->threads = 0;
        plan->pfor = NULL;
        plan->pctx = NULL;
        plan->min_bytes = 0;
        plan->min_auto = false;
        return 0;
    }
    if (t->size < THREADS_V0_SIZE)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "t->size", "%zu, below the first version's %zu "
                                "bytes (spec swizzle.h)", t->size, (size_t)THREADS_V0_SIZE);
    if (t->threads > VIDMM_SWIZZLE_MAX_THREADS)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "t->threads", "%u, above %u (spec swizzle.h)",
                                t->threads, VIDMM_SWIZZLE_MAX_THREADS);
    plan->threads = t->threads;
    plan->pfor = t->parallel_for;
    plan->pctx = t->parallel_ctx;
    plan->min_bytes = t->min_bytes != 0 ? t->min_bytes : VIDMM_SWIZZLE_MIN_PARALLEL_BYTES;
    plan->min_auto = t->min_bytes == 0;
    return 0;
}

#define PLAN_INFO_V0_SIZE (offsetof(struct vidmm_swizzle_plan_info, deswizzle_walk) + sizeof(enum vidmm_swizzle_walk))

int vidmm_swizzle_plan_info(const vidmm_swizzle_plan *plan, struct vidmm_swizzle_plan_info *info)
{
    if (plan == NULL || info == NULL || info->size < PLAN_INFO_V0_SIZE)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, plan == NULL ? "plan" : info == NULL ? "info" : "info->size",
                                "NULL, or below the first version's %zu bytes (spec swizzle.h)",
                                (size_t)PLAN_INFO_V0_SIZE);
    const struct vidmm_swz_mip *m = &plan->m;
    const uint64_t moved = plan->whole ? plan->lin : (uint64_t)m->w * m->h * m->d * m->elem;
    const size_t size = info->size;
    memset(info, 0, PLAN_INFO_V0_SIZE);
    info->size = size;
    info->mip = plan->mip;
    info->layer = plan->layer;
    info->width = m->w;
    info->height = m->h;
    info->depth = m->d;
    info->run_bytes = m->run_log2 >= 32 ? UINT32_MAX : 1u << m->run_log2;
    info->tiled_size = plan->total;
    info->linear_size = moved;
    info->backend = plan->backend == VIDMM_BACKEND_AUTO ? vidmm_backend_active() : plan->backend;
    info->strategy = plan->strategy;
    info->swizzle_walk = (enum vidmm_swizzle_walk)(
        plan->tuned & 1 ? vidmm_swz_walk_of_tuned(m, VIDMM_SWZ_TILE, plan->backend, plan->strategy, moved, &plan->tune[0])
                        : vidmm_swz_walk_of(m, VIDMM_SWZ_TILE, plan->backend, plan->strategy, moved));
    info->deswizzle_walk = (enum vidmm_swizzle_walk)(
        plan->tuned & 2 ? vidmm_swz_walk_of_tuned(m, VIDMM_SWZ_UNTILE, plan->backend, plan->strategy, moved,
                                                  &plan->tune[1])
                        : vidmm_swz_walk_of(m, VIDMM_SWZ_UNTILE, plan->backend, plan->strategy, moved));
    if (size >= offsetof(struct vidmm_swizzle_plan_info, tune_source) + sizeof(info->tune_source))
        info->tune_source = (enum vidmm_swizzle_tune_source)plan->tune_source;
    return 0;
}
