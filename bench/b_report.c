/* SPDX-License-Identifier: MIT */
/* bench/b_report.c - after the run: the table of every case (GB/s, time per call, ratio to the
 * same-run memcpy or memset, ratio to the ceiling), the table of the targets with
 * "met" / "NOT met", and the summary JSON the gate (bench/bench_gate.c) compares.
 *
 * Every figure is the best repetition (shared/perf-notes.md measures "best of several runs":
 * on a shared machine noise only ever slows a run down); the median is kept beside it. */
#include "b_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* bench_io.c: fio's figures, which are no case of this table (declared here, as bench_main.c
 * declares the case builders: b_common.h is shared). */
double b_io_ref_gbps(const char *name, const char **why);
double b_io_paired_ratio(const char *name, const char *ref, int *rounds, const char **why);
void b_io_report_print(void);
void b_io_write_json(FILE *f);

/* ---------------------------------------------------------------------------------------------
 * Figures of one case.
 * ------------------------------------------------------------------------------------------- */

struct b_fig {
    enum vbench_status status;
    const char *reason;
    int reps;
    double best_s, median_s;   /* seconds per call */
    double gbps, gbps_median;  /* 1e9 bytes per second; NAN unless status is OK */
};

static struct b_fig fig(int idx)
{
    struct b_fig f = { VBENCH_NOT_RUN, "not run", 0, NAN, NAN, NAN, NAN };
    const struct b_case *c = b_case_at(idx < 0 ? (size_t)-1 : (size_t)idx);
    struct vbench_result r;
    if (c == NULL || c->id < 0 || vbench_result(c->id, &r) != 0)
        return f;
    f.status = r.status;
    f.reason = r.status == VBENCH_NOT_RUN ? "not run" : r.reason;
    if (r.status != VBENCH_OK || !(r.best_s > 0))
        return f;
    f.reps = r.reps;
    f.best_s = r.best_s;
    f.median_s = r.median_s;
    /* Cases that move no bytes (bytes 0: the engine's lock and create cases) have no GB/s. */
    f.gbps = c->bytes ? (double)c->bytes / r.best_s / 1e9 : NAN;
    f.gbps_median = c->bytes ? (double)c->bytes / r.median_s / 1e9 : NAN;
    return f;
}

static double ratio(int a, int b)
{
    if (a < 0 || b < 0)
        return NAN;
    /* --vbench_mode=wall: a case and its reference timed in interleaved bursts (b_wall.c). */
    const struct b_case *c = b_case_at((size_t)a);
    if (c->wall_quads > 0 && b == c->ref_case)
        return c->wall_ref_s / c->wall_case_s;
    return fig(a).gbps / fig(b).gbps;
}

static const char *size_label(size_t bytes, char *buf, size_t cap)
{
    if (bytes >= B_MiB && bytes % B_MiB == 0)
        snprintf(buf, cap, "%zu MiB", bytes / B_MiB);
    else if (bytes >= B_KiB && bytes % B_KiB == 0)
        snprintf(buf, cap, "%zu KiB", bytes / B_KiB);
    else
        snprintf(buf, cap, "%zu B", bytes);
    return buf;
}

/* ---------------------------------------------------------------------------------------------
 * The targets.
 * ------------------------------------------------------------------------------------------- */

enum b_tkind {
    B_T_RATIO,      /* gbps(case) / gbps(ref1) >= goal */
    B_T_RATIO_MAX,  /* gbps(case) / max(gbps(ref1), gbps(ref2)) >= goal */
    B_T_NS,         /* ns per call of case < goal */
    B_T_NS_MEDIAN,  /* ns per call of case's median repetition <= goal */
    B_T_MPS,        /* millions of calls per second of case >= goal */
    B_T_COST,       /* time per call of case / time per call of ref1 <= goal */
    B_T_INFO_MS,    /* ms per call of case, no goal */
    B_T_INFO_GBPS,  /* GB/s of case, no goal */
    B_T_EXT_RATIO,  /* gbps(case) / the outside tool's GB/s named ref1 (bench_io.c: fio) >= goal */
    B_T_EXT_GBPS,   /* the outside tool's GB/s named 'name', no goal */
    B_T_EXT_TIME,   /* median time per call of case / the time the outside tool named ref1 takes to
                       move the case's bytes (= its GB/s / the case's median GB/s) <= goal */
    B_T_EXT_MS,     /* ms the outside tool named 'name' takes to move 'bytes', no goal */
    B_T_MS_MEDIAN,  /* ms per call of case's median repetition <= goal */
    B_T_PAIRED,     /* median over paired rounds of case's GB/s / ref1's ("fio" or "threads"), each
                       measured back to back in one round (bench_io.c, io_pairs()), or
                       ("ordinary", "streaming", "rows") of that reference's time / the case's
                       (bench_swizzle.c, swz_rounds()) >= goal */
    B_T_PAIRED_TIME /* median over paired rounds of case's time / the time fio takes to move the
                       case's bytes in the same round (bench_io.c, sw_rounds()) <= goal */
};

struct b_target {
    char label[112];
    char name[B_NAME_MAX];
    char ref1[B_NAME_MAX];
    char ref2[B_NAME_MAX];
    enum b_tkind kind;
    double goal;
    bool info;             /* shown without a goal (a kind that has one, for scale) */
    size_t bytes;          /* B_T_EXT_MS: the bytes */
    const char *section;   /* printed above the first target of a section; NULL: none */
};

#define B_MAX_TARGETS 224
static struct b_target targets[B_MAX_TARGETS];
static int ntargets = -1;

static struct b_target *target_add(enum b_tkind kind, double goal)
{
    if (ntargets >= B_MAX_TARGETS)
        return NULL;
    struct b_target *t = &targets[ntargets++];
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    t->goal = goal;
    return t;
}

/* Issue 3's tiling targets, measured against fair references since issue 26: the AUTO backend
 * with 4-byte elements (bench_swizzle.c, swz_rounds()), each a median of rounds that time the
 * case and its references in turn, each side after itself.
 *   - whole surfaces of the main families (issue 14 names Intel X among them): >= 0.9x the
 *     library's ordinary-store copy of the same bytes at 4 MiB and >= 0.85x at 64 MiB, and
 *     >= 0.7x its streaming copy at 64 MiB (the machine's memory speed; shown without a goal at
 *     4 MiB, where it is not the limit);
 *   - the generic equation path (the D3D 64 KB 32 bpp table as an EQUATION) >= 0.5x the
 *     ordinary-store copy at 4 MiB;
 *   - a 64x64-element box of the 64 MiB surface >= 0.9x the same box's rows copied to or from a
 *     pitch-linear surface of the same pitch;
 *   - whole 256 KiB surfaces (L2-sized), against the ordinary-store copy, no goal.
 * The memcpy case of the same size, timed apart, stays the case table's "x libc" (ref2). The
 * one-shot / plan row (>= 1.5x) is retired: the one-shot call runs a cached plan itself. */
static void swizzle_targets(void)
{
    static const char *fams[] = { "bl", "intel_x", "intel_y", "intel_4", "d3d64k", "morton" };
    static const char *dirs[] = { "swizzle", "deswizzle" };
    static const struct {
        size_t bytes;
        const char *ref;
        const char *what;
        double goal;
        bool info;
    } whole[] = {
        { 4 * B_MiB, "ordinary", "ordinary copy", 0.9, false },
        { 4 * B_MiB, "streaming", "streaming copy", 0.7, true },
        { 64 * B_MiB, "ordinary", "ordinary copy", 0.85, false },
        { 64 * B_MiB, "streaming", "streaming copy", 0.7, false },
    };
    const size_t box = 64 * 64 * 4;
    static const char *section = "issue 3/26: tiling (bench/bench_swizzle.c), medians of rounds against the "
                                 "same work (each side timed after itself)";
    char sz[32];
    struct b_target *t;

    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
        for (size_t d = 0; d < 2; d++)
            for (size_t w = 0; w < sizeof(whole) / sizeof(whole[0]); w++) {
                if ((t = target_add(B_T_PAIRED, whole[w].goal)) == NULL)
                    return;
                if (f == 0 && d == 0 && w == 0)
                    t->section = section;
                t->info = whole[w].info;
                snprintf(t->label, sizeof(t->label), "%s %s e4 %s / %s", dirs[d], fams[f],
                         size_label(whole[w].bytes, sz, sizeof(sz)), whole[w].what);
                snprintf(t->name, sizeof(t->name), "%s/%s_e4/auto/%zu", dirs[d], fams[f], whole[w].bytes);
                snprintf(t->ref1, sizeof(t->ref1), "%s", whole[w].ref);
                b_ref_name(t->ref2, sizeof(t->ref2), B_REF_MEMCPY, whole[w].bytes);
            }
    for (size_t d = 0; d < 2; d++) {
        if ((t = target_add(B_T_PAIRED, 0.5)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "%s equation (d3d64k) e4 4 MiB / ordinary copy", dirs[d]);
        snprintf(t->name, sizeof(t->name), "%s/eq_e4/auto/%zu", dirs[d], 4 * B_MiB);
        snprintf(t->ref1, sizeof(t->ref1), "ordinary");
        b_ref_name(t->ref2, sizeof(t->ref2), B_REF_MEMCPY, 4 * B_MiB);
    }
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
        for (size_t d = 0; d < 2; d++) {
            if ((t = target_add(B_T_PAIRED, 0.9)) == NULL)
                return;
            snprintf(t->label, sizeof(t->label), "%s %s e4 64x64 box / pitch-linear rows", dirs[d], fams[f]);
            snprintf(t->name, sizeof(t->name), "%s/%s_e4_box64/auto/%zu", dirs[d], fams[f], box);
            snprintf(t->ref1, sizeof(t->ref1), "rows");
            b_ref_name(t->ref2, sizeof(t->ref2), B_REF_MEMCPY, box);
        }
    for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
        for (size_t d = 0; d < 2; d++) {
            if ((t = target_add(B_T_PAIRED, 0.9)) == NULL)
                return;
            t->info = true;
            if (f == 0 && d == 0)
                t->section = "L2-sized surfaces (bench/bench_swizzle.c), no goal";
            snprintf(t->label, sizeof(t->label), "%s %s e4 256 KiB / ordinary copy", dirs[d], fams[f]);
            snprintf(t->name, sizeof(t->name), "%s/%s_e4/auto/%zu", dirs[d], fams[f], 256 * B_KiB);
            snprintf(t->ref1, sizeof(t->ref1), "ordinary");
            b_ref_name(t->ref2, sizeof(t->ref2), B_REF_MEMCPY, 256 * B_KiB);
        }
}

/* Issue 4: the video memory manager (bench_engine.c). Lock+unlock of a resident CPU-visible
 * allocation <= 150 ns at the median; create+destroy >= 1 M pairs/s with 10k live allocations
 * and at most 1.5x the cost with 100k live as with 1k (unplaced, and placed: placement must not
 * scan); evict + page-in of 64 MiB through the built-in executor >= 0.8x two memcpys of 64 MiB.
 * The submission under memory pressure has no goal: its rows say what it costs. */
static void engine_targets(void)
{
    static const char *section = "issue 4: video memory manager (bench/bench_engine.c)";
    struct b_target *t;
    if ((t = target_add(B_T_NS_MEDIAN, 150)) == NULL)
        return;
    t->section = section;
    snprintf(t->label, sizeof(t->label), "lock+unlock resident CPU-visible, median ns/pair");
    snprintf(t->name, sizeof(t->name), "engine/lock_unlock/resident/%zu", 64 * B_KiB);
    if ((t = target_add(B_T_MPS, 1.0)) == NULL)
        return;
    snprintf(t->label, sizeof(t->label), "create+destroy 64 KiB, 10k live, M pairs/s");
    snprintf(t->name, sizeof(t->name), "engine/create_destroy/live/10000");
    static const char *variants[] = { "create_destroy", "create_place_destroy" };
    static const char *labels[] = { "create+destroy 64 KiB", "create+place+destroy 4 KiB" };
    for (size_t i = 0; i < 2; i++) {
        if ((t = target_add(B_T_COST, 1.5)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "%s, cost 100k live / 1k live", labels[i]);
        snprintf(t->name, sizeof(t->name), "engine/%s/live/100000", variants[i]);
        snprintf(t->ref1, sizeof(t->ref1), "engine/%s/live/1000", variants[i]);
    }
    if ((t = target_add(B_T_INFO_MS, 0)) == NULL)
        return;
    snprintf(t->label, sizeof(t->label), "submit 64 x 1 MiB under pressure, ms/submission");
    snprintf(t->name, sizeof(t->name), "engine/submit_pressure/64x1MiB/%zu", 128 * B_MiB);
    if ((t = target_add(B_T_INFO_GBPS, 0)) == NULL)
        return;
    snprintf(t->label, sizeof(t->label), "submit 64 x 1 MiB under pressure, GB/s moved");
    snprintf(t->name, sizeof(t->name), "engine/submit_pressure/64x1MiB/%zu", 128 * B_MiB);
    if ((t = target_add(B_T_RATIO, 0.8)) == NULL)
        return;
    snprintf(t->label, sizeof(t->label), "evict+page-in 64 MiB (builtin) / 2x memcpy 64 MiB");
    snprintf(t->name, sizeof(t->name), "engine/evict_pagein/builtin/%zu", 128 * B_MiB);
    b_ref_name(t->ref1, sizeof(t->ref1), B_REF_MEMCPY, 64 * B_MiB);
}

/* Issue 5: the disk tier's I/O layer (bench_io.c). The io_uring backend at 1 MiB blocks and
 * queue depth 32 (the issue says 16-32) >= 0.9x fio's io_uring engine on the same file system,
 * block size and depth, both directions, and >= 1.0x the thread-pool backend: each the median
 * of rounds that measure the three back to back (bench_io.c, io_pairs()). fio's own GB/s and
 * ours are shown beside them. */
static void io_targets(void)
{
    static const char *section = "issue 5: disk tier I/O (bench/bench_io.c)";
    static const char *dirs[] = { "write", "read" };
    const size_t bs = B_MiB;
    const unsigned qd = 32;
    struct b_target *t;
    for (size_t d = 0; d < 2; d++) {
        if ((t = target_add(B_T_PAIRED, 0.9)) == NULL)
            return;
        if (d == 0)
            t->section = section;
        snprintf(t->label, sizeof(t->label), "io_uring %s 1 MiB qd%u / fio, paired median", dirs[d], qd);
        snprintf(t->name, sizeof(t->name), "io/%s_qd%u/uring/%zu", dirs[d], qd, bs);
        snprintf(t->ref1, sizeof(t->ref1), "fio");
        if ((t = target_add(B_T_PAIRED, 1.0)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "io_uring %s 1 MiB qd%u / thread pool, paired median", dirs[d], qd);
        snprintf(t->name, sizeof(t->name), "io/%s_qd%u/uring/%zu", dirs[d], qd, bs);
        snprintf(t->ref1, sizeof(t->ref1), "threads");
        /* The same two ratios from each case's best repetition and fio's best run, measured at
         * different moments: for scale. */
        if ((t = target_add(B_T_EXT_RATIO, 0.9)) == NULL)
            return;
        t->info = true;
        snprintf(t->label, sizeof(t->label), "io_uring %s 1 MiB qd%u / fio, best / best", dirs[d], qd);
        snprintf(t->name, sizeof(t->name), "io/%s_qd%u/uring/%zu", dirs[d], qd, bs);
        snprintf(t->ref1, sizeof(t->ref1), "fio/%s/%zu/%u", dirs[d], bs, qd);
        if ((t = target_add(B_T_RATIO, 1.0)) == NULL)
            return;
        t->info = true;
        snprintf(t->label, sizeof(t->label), "io_uring %s 1 MiB qd%u / thread pool, best / best", dirs[d], qd);
        snprintf(t->name, sizeof(t->name), "io/%s_qd%u/uring/%zu", dirs[d], qd, bs);
        snprintf(t->ref1, sizeof(t->ref1), "io/%s_qd%u/threads/%zu", dirs[d], qd, bs);
        if ((t = target_add(B_T_INFO_GBPS, 0)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "io_uring %s 1 MiB qd%u, GB/s", dirs[d], qd);
        snprintf(t->name, sizeof(t->name), "io/%s_qd%u/uring/%zu", dirs[d], qd, bs);
        if ((t = target_add(B_T_INFO_GBPS, 0)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "io_uring %s 1 MiB qd%u unstaged, GB/s", dirs[d], qd);
        snprintf(t->name, sizeof(t->name), "io/%s_qd%u/uring_unstaged/%zu", dirs[d], qd, bs);
        if ((t = target_add(B_T_EXT_GBPS, 0)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "fio io_uring %s 1 MiB qd%u, GB/s", dirs[d], qd);
        snprintf(t->name, sizeof(t->name), "fio/%s/%zu/%u", dirs[d], bs, qd);
    }

    /* The engine (bench_io.c, io/lock_*): a lock of a swapped-out 4 MiB allocation within 2x the
     * time to read 4 MiB at the measured disk bandwidth - fio's io_uring read of 4 MiB blocks at
     * queue depth 1 (one 4 MiB read in flight, as a lock has), on the same file system, O_DIRECT
     * as the swap file is: the median over rounds that run fio and seven locks back to back
     * (bench_io.c, sw_rounds()) of the round's median lock over fio's time for 4 MiB. The same
     * from the case's median repetition and fio's best run apart, the thread-pool backend's
     * ratio, the lock times and the lock of the same allocation in memory are shown for scale. */
    const size_t sz = 4 * B_MiB;
    static const char *backends[] = { "uring", "threads" };
    for (size_t b = 0; b < 2; b++) {
        if ((t = target_add(B_T_PAIRED_TIME, 2.0)) == NULL)
            return;
        t->info = b != 0;
        snprintf(t->label, sizeof(t->label), "lock swapped 4 MiB (%s) / fio 4 MiB qd1, paired median", backends[b]);
        snprintf(t->name, sizeof(t->name), "io/lock_swapped/%s/%zu", backends[b], sz);
        snprintf(t->ref1, sizeof(t->ref1), "fio");
    }
    for (size_t b = 0; b < 2; b++) {
        if ((t = target_add(B_T_EXT_TIME, 2.0)) == NULL)
            return;
        t->info = true;
        snprintf(t->label, sizeof(t->label), "lock swapped 4 MiB (%s) / fio 4 MiB qd1, apart", backends[b]);
        snprintf(t->name, sizeof(t->name), "io/lock_swapped/%s/%zu", backends[b], sz);
        snprintf(t->ref1, sizeof(t->ref1), "fio/read/%zu/1", sz);
    }
    for (size_t b = 0; b < 2; b++) {
        if ((t = target_add(B_T_MS_MEDIAN, 0)) == NULL)
            return;
        t->info = true;
        snprintf(t->label, sizeof(t->label), "lock+unlock swapped 4 MiB (%s), median ms", backends[b]);
        snprintf(t->name, sizeof(t->name), "io/lock_swapped/%s/%zu", backends[b], sz);
    }
    if ((t = target_add(B_T_EXT_MS, 0)) == NULL)
        return;
    t->bytes = sz;
    snprintf(t->label, sizeof(t->label), "4 MiB at fio io_uring read 4 MiB qd1 bw, ms");
    snprintf(t->name, sizeof(t->name), "fio/read/%zu/1", sz);
    if ((t = target_add(B_T_NS_MEDIAN, 0)) == NULL)
        return;
    t->info = true;
    snprintf(t->label, sizeof(t->label), "lock+unlock 4 MiB in system memory, median ns");
    snprintf(t->name, sizeof(t->name), "io/lock_sysmem/uring/%zu", sz);
}

static void build_targets(void)
{
    if (ntargets >= 0)
        return;
    ntargets = 0;
    const char *nt = b_env.m.best_nt ? b_env.m.best_nt : "none";
    const char *act = b_env.m.active_backend ? b_env.m.active_backend : "?";
    static const size_t big[] = { 64 * B_MiB, 256 * B_MiB }, small[] = { 4 * B_KiB, 256 * B_KiB };
    char sz[32];
    struct b_target *t;

    for (size_t i = 0; i < 2; i++) {
        /* The hardware's limit is the faster bare loop: on Zen 3 the SSE2 one is sometimes
         * ahead of the wider one at some sizes, so both are references. */
        if ((t = target_add(B_T_RATIO_MAX, 0.95)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "copy to WC %s / best bare NT loop (%s, sse2)",
                 size_label(big[i], sz, sizeof(sz)), nt);
        snprintf(t->name, sizeof(t->name), "copy_wc/auto/auto/%zu", big[i]);
        b_nt_ceiling_name(t->ref1, sizeof(t->ref1), VIDMM_BACKEND_AUTO, big[i]);
        b_nt_ceiling_name(t->ref2, sizeof(t->ref2), VIDMM_BACKEND_SSE2, big[i]);
    }
    for (size_t i = 0; i < 2; i++) {
        if ((t = target_add(B_T_RATIO, 0.95)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "copy to cached %s / memcpy", size_label(small[i], sz, sizeof(sz)));
        snprintf(t->name, sizeof(t->name), "copy/auto/auto/%zu", small[i]);
        b_ref_name(t->ref1, sizeof(t->ref1), B_REF_MEMCPY, small[i]);
    }
    for (size_t i = 0; i < 2; i++) {
        if ((t = target_add(B_T_RATIO_MAX, 0.97)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "copy to cached %s / max(memcpy, NT loop)",
                 size_label(big[i], sz, sizeof(sz)));
        snprintf(t->name, sizeof(t->name), "copy/auto/auto/%zu", big[i]);
        b_ref_name(t->ref1, sizeof(t->ref1), B_REF_MEMCPY, big[i]);
        b_nt_ceiling_name(t->ref2, sizeof(t->ref2), VIDMM_BACKEND_AUTO, big[i]);
    }
    /* The fill target is for the fill users call (AUTO) at every size. The temporal kernel is
     * also held to it where AUTO picks it, below the non-temporal threshold; above it, glibc's
     * memset itself switches to streaming stores and the temporal kernel is not the policy. */
    struct vidmm_cpu_info ci = { .size = sizeof(ci) };
    size_t nt_threshold = vidmm_cpu_info(&ci) == 0 ? (size_t)ci.nt_threshold : 0;
    for (size_t i = 0; i < B_NSIZES; i++) {
        if (b_sizes[i] < nt_threshold) {
            if ((t = target_add(B_T_RATIO, 0.95)) == NULL)
                return;
            snprintf(t->label, sizeof(t->label), "fill temporal (%s) %s / memset", act,
                     size_label(b_sizes[i], sz, sizeof(sz)));
            snprintf(t->name, sizeof(t->name), "fill/temporal/%s/%zu", act, b_sizes[i]);
            b_ref_name(t->ref1, sizeof(t->ref1), B_REF_MEMSET, b_sizes[i]);
        }
        if ((t = target_add(B_T_RATIO, 0.95)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "fill auto %s / memset", size_label(b_sizes[i], sz, sizeof(sz)));
        snprintf(t->name, sizeof(t->name), "fill/auto/auto/%zu", b_sizes[i]);
        b_ref_name(t->ref1, sizeof(t->ref1), B_REF_MEMSET, b_sizes[i]);
    }
    if ((t = target_add(B_T_RATIO, 0.95)) != NULL) {
        snprintf(t->label, sizeof(t->label), "writeback 64 MiB dirty / bare CLWB loop");
        snprintf(t->name, sizeof(t->name), "flush/writeback/auto/%zu", 64 * B_MiB);
        snprintf(t->ref1, sizeof(t->ref1), "ceiling/flush/clwb/%zu", 64 * B_MiB);
    }
    static const char *ops[] = { "writeback", "writeback_invalidate", "invalidate" };
    for (size_t i = 0; i < 3; i++) {
        if ((t = target_add(B_T_NS, 500)) == NULL)
            return;
        snprintf(t->label, sizeof(t->label), "4 KiB %s flush, ns per call", ops[i]);
        snprintf(t->name, sizeof(t->name), "flush/%s/auto/%zu", ops[i], 4 * B_KiB);
    }
    swizzle_targets();
    engine_targets();
    io_targets();
}

void b_target_cases(void)
{
    build_targets();
    for (int i = 0; i < ntargets; i++) {
        const char *names[3] = { targets[i].name, targets[i].ref1, targets[i].ref2 };
        for (int j = 0; j < 3; j++) {
            int idx = b_case_find(names[j]);
            if (idx >= 0)
                b_case_at((size_t)idx)->selected = true;
        }
    }
}

/* The measured value of target 't' (NAN when it can't be computed; '*why' says why). */
static double target_value(const struct b_target *t, const char **why)
{
    int a = b_case_find(t->name), r1 = b_case_find(t->ref1), r2 = b_case_find(t->ref2);
    *why = NULL;
    if (t->kind == B_T_EXT_GBPS)
        return b_io_ref_gbps(t->name, why);
    if (t->kind == B_T_EXT_MS)
        return (double)t->bytes / (b_io_ref_gbps(t->name, why) * 1e9) * 1e3;
    if (t->kind == B_T_PAIRED || t->kind == B_T_PAIRED_TIME) {
        int rounds;
        if (strcmp(t->ref1, "ordinary") == 0 || strcmp(t->ref1, "streaming") == 0 || strcmp(t->ref1, "rows") == 0)
            return b_swz_ref_ratio(t->name, t->ref1, &rounds, why);
        return b_io_paired_ratio(t->name, t->ref1, &rounds, why);
    }
    struct b_fig fa = fig(a);
    if (fa.status != VBENCH_OK) {
        *why = fa.reason;
        return NAN;
    }
    switch (t->kind) {
    case B_T_NS: return fa.best_s * 1e9;
    case B_T_NS_MEDIAN: return fa.median_s * 1e9;
    case B_T_MPS: return 1 / fa.best_s / 1e6;
    case B_T_INFO_MS: return fa.best_s * 1e3;
    case B_T_MS_MEDIAN: return fa.median_s * 1e3;
    case B_T_INFO_GBPS:
        if (isnan(fa.gbps))
            *why = "case moves no bytes";
        return fa.gbps;
    case B_T_EXT_RATIO: {
        double ext = b_io_ref_gbps(t->ref1, why);
        if (isnan(ext))
            return NAN; /* fio missing or failed: n/a, never a pass */
        return fa.gbps / ext;
    }
    case B_T_EXT_TIME: {
        double ext = b_io_ref_gbps(t->ref1, why);
        if (isnan(ext))
            return NAN;
        if (isnan(fa.gbps_median)) {
            *why = "case moves no bytes";
            return NAN;
        }
        return ext / fa.gbps_median;
    }
    case B_T_COST: {
        struct b_fig fr = fig(r1);
        if (fr.status != VBENCH_OK) {
            *why = "reference not measured";
            return NAN;
        }
        return fa.best_s / fr.best_s;
    }
    default: break;
    }
    struct b_fig f1 = fig(r1), f2 = fig(r2);
    double den = f1.gbps;
    if (t->kind == B_T_RATIO_MAX && f2.status == VBENCH_OK && !(f2.gbps <= den))
        den = f2.gbps;
    if (!(den > 0)) {
        *why = "reference not measured";
        return NAN;
    }
    return fa.gbps / den;
}

static bool target_info(const struct b_target *t)
{
    return t->info || t->kind == B_T_INFO_MS || t->kind == B_T_INFO_GBPS || t->kind == B_T_EXT_GBPS ||
           t->kind == B_T_EXT_MS;
}

static bool target_met(const struct b_target *t, double v)
{
    switch (t->kind) {
    case B_T_NS: return v < t->goal;
    case B_T_NS_MEDIAN:
    case B_T_MS_MEDIAN:
    case B_T_EXT_TIME:
    case B_T_PAIRED_TIME:
    case B_T_COST: return v <= t->goal;
    default: return v >= t->goal;
    }
}

static void goal_text(const struct b_target *t, char *buf, size_t cap)
{
    if (target_info(t))
        snprintf(buf, cap, "-");
    else if (t->kind == B_T_NS)
        snprintf(buf, cap, "< %.0f", t->goal);
    else if (t->kind == B_T_NS_MEDIAN)
        snprintf(buf, cap, "<= %.0f", t->goal);
    else if (t->kind == B_T_COST || t->kind == B_T_EXT_TIME || t->kind == B_T_MS_MEDIAN || t->kind == B_T_PAIRED_TIME)
        snprintf(buf, cap, "<= %.2f", t->goal);
    else
        snprintf(buf, cap, ">= %.2f", t->goal);
}

static const char *target_unit(const struct b_target *t)
{
    switch (t->kind) {
    case B_T_NS: return "ns";
    case B_T_NS_MEDIAN: return "ns_median";
    case B_T_MPS: return "M/s";
    case B_T_COST: return "cost_ratio";
    case B_T_EXT_TIME: return "time_ratio";
    case B_T_INFO_MS:
    case B_T_EXT_MS: return "ms";
    case B_T_MS_MEDIAN: return "ms_median";
    case B_T_INFO_GBPS:
    case B_T_EXT_GBPS: return "gbps";
    case B_T_PAIRED: return "paired_median_ratio";
    case B_T_PAIRED_TIME: return "paired_median_time_ratio";
    default: return "ratio";
    }
}

/* ---------------------------------------------------------------------------------------------
 * The tables.
 * ------------------------------------------------------------------------------------------- */

static int path_rank(const char *path)
{
    static const char *order[] = { "baseline", "ceiling", "copy_wc", "copy_from_wc", "copy", "copy_nc", "fill", "flush",
                                   "swizzle", "deswizzle", "engine", "io" };
    for (int i = 0; i < (int)(sizeof(order) / sizeof(order[0])); i++)
        if (strcmp(path, order[i]) == 0)
            return i;
    return 99;
}

/* Sort keys: path family (path_rank()), then the name: variant and backend alphabetically, then
 * the size as a number (so 4096 comes before 65536). */
struct b_row { int idx, rank; };

static int row_cmp(const void *pa, const void *pb)
{
    const struct b_row *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    const struct b_case *ca = b_case_at((size_t)a->idx), *cb = b_case_at((size_t)b->idx);
    int d = strcmp(ca->path, cb->path);
    if (d == 0)
        d = strcmp(ca->variant, cb->variant);
    if (d == 0)
        d = strcmp(ca->backend, cb->backend);
    if (d == 0 && ca->bytes != cb->bytes)
        d = ca->bytes < cb->bytes ? -1 : 1;
    if (d == 0)
        d = strcmp(ca->name, cb->name);
    return d;
}

static struct b_row *sorted_rows(size_t *nrows)
{
    size_t n = b_case_count(), k = 0;
    struct b_row *rows = calloc(n ? n : 1, sizeof(*rows));
    if (rows == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct b_case *c = b_case_at(i);
        if (c->id < 0)
            continue;
        rows[k].idx = (int)i;
        rows[k].rank = path_rank(c->path);
        k++;
    }
    qsort(rows, k, sizeof(*rows), row_cmp);
    *nrows = k;
    return rows;
}

static void print_num(double v, const char *fmt, int width)
{
    if (isnan(v))
        printf("%*s", width, "-");
    else
        printf(fmt, width, v);
}

static const char *insn_of(enum vidmm_flush_op op)
{
    return vidmm_flush_insn_name(vidmm_flush_insn(op));
}

/* The cases that did not run here, once per reason: "cpu lacks avx512: 160 cases (copy_wc,
 * fill, swizzle)". Both the ones known before the run (never registered) and the ones a body
 * skipped while running (a variant the library refused, a disk tier without io_uring). */
static void print_skipped(void)
{
    enum { MAX_REASONS = 48 };
    struct { const char *reason; int count; char paths[96]; } r[MAX_REASONS];
    int nr = 0, other = 0;
    for (size_t i = 0; i < b_case_count(); i++) {
        const struct b_case *c = b_case_at(i);
        const char *why = NULL;
        if (c->skipped_here != NULL) {
            why = c->skipped_here;
        } else if (c->id >= 0) {
            struct b_fig f = fig((int)i);
            if (f.status == VBENCH_SKIPPED)
                why = f.reason;
        }
        if (why == NULL)
            continue;
        int k = 0;
        while (k < nr && strcmp(r[k].reason, why) != 0)
            k++;
        if (k == nr) {
            if (nr == MAX_REASONS) {
                other++;
                continue;
            }
            r[nr].reason = why;
            r[nr].count = 0;
            r[nr].paths[0] = '\0';
            nr++;
        }
        r[k].count++;
        /* The families, each once, in the order met. */
        char hay[104], key[32];
        snprintf(hay, sizeof(hay), ", %s,", r[k].paths);
        snprintf(key, sizeof(key), ", %s,", c->path);
        if (strstr(hay, key) == NULL) {
            size_t len = strlen(r[k].paths);
            snprintf(r[k].paths + len, sizeof(r[k].paths) - len, "%s%s", len ? ", " : "", c->path);
        }
    }
    if (nr == 0)
        return;
    printf("\n---- not run here ----\n");
    for (int k = 0; k < nr; k++)
        printf("%-64s %4d case%s (%s)\n", r[k].reason, r[k].count, r[k].count == 1 ? "" : "s", r[k].paths);
    if (other > 0)
        printf("%-64s %4d case%s\n", "(other reasons)", other, other == 1 ? "" : "s");
}

void b_report_print(const struct b_run_info *run)
{
    const struct b_machine *m = &b_env.m;
    printf("\n==== vidmm bench (%s) ====\n", run->mode);
    printf("vidmm %s, commit %s, %s\n", vidmm_version_string(), run->commit, run->date);
    printf("cpu: %s (%s), line %u B, llc %llu KiB, nt threshold %llu KiB\n", m->cpu.model, m->cpu.vendor,
           (unsigned)m->cpu.cache_line, (unsigned long long)(m->cpu.llc_bytes / 1024),
           (unsigned long long)(m->cpu.nt_threshold / 1024));
    printf("backend %s; copy-to-WC %s; flush writeback=%s writeback_invalidate=%s invalidate=%s\n",
           m->active_backend, m->wc_variant, insn_of(VIDMM_FLUSH_WRITEBACK),
           insn_of(VIDMM_FLUSH_WRITEBACK_INVALIDATE), insn_of(VIDMM_FLUSH_INVALIDATE));
    if (m->feature_mismatch[0])
        printf("WARNING: the library's CPU features differ from CPUID: %s\n", m->feature_mismatch);
    printf("run: %.1f s; figures are the best repetition; x libc = / same-run memcpy (memset for fills)\n\n",
           run->wall_s);

    size_t n;
    struct b_row *rows = sorted_rows(&n);
    if (rows == NULL)
        return;
    /* One table per family (path), its cases by name. Cases that could not run here are not
     * rows: they are counted once per reason below the tables. */
    const char *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct b_case *c = b_case_at((size_t)rows[i].idx);
        struct b_fig f = fig(rows[i].idx);
        if (f.status == VBENCH_SKIPPED || f.status == VBENCH_NOT_RUN)
            continue;
        if (prev == NULL || strcmp(prev, c->path) != 0) {
            printf("%s---- %s ----\n", prev == NULL ? "" : "\n", c->path);
            printf("%-50s %9s %12s %8s %9s\n", "case", "GB/s", "ns/call", "x libc", "x ceiling");
        }
        prev = c->path;
        printf("%-50s ", c->name);
        if (f.status != VBENCH_OK) {
            printf("FAILED: %s\n", f.reason);
            continue;
        }
        print_num(f.gbps, "%*.2f", 9);
        printf(" ");
        print_num(f.best_s * 1e9, "%*.0f", 12);
        printf(" ");
        print_num(ratio(rows[i].idx, c->ref_case), "%*.3f", 8);
        printf(" ");
        print_num(ratio(rows[i].idx, c->ceil_case), "%*.3f", 9);
        printf("\n");
    }
    print_skipped();
    free(rows);
    b_io_report_print();

    build_targets();
    printf("\n---- targets (issue) ----\n");
    printf("%-52s %10s %8s  %s\n", "target", "measured", "goal", "status");
    for (int i = 0; i < ntargets; i++) {
        const struct b_target *t = &targets[i];
        const char *why;
        double v = target_value(t, &why);
        char goal[32];
        goal_text(t, goal, sizeof(goal));
        if (t->section != NULL && (i == 0 || targets[i - 1].section != t->section))
            printf("-- %s\n", t->section);
        printf("%-52s ", t->label);
        if (isnan(v))
            printf("%10s %8s  n/a (%s)\n", "-", goal, why ? why : "?");
        else
            printf(t->kind == B_T_NS || t->kind == B_T_NS_MEDIAN ? "%10.0f %8s  %s\n" : "%10.3f %8s  %s\n", v, goal,
                   target_info(t) ? "info" : target_met(t, v) ? "met" : "NOT met");
    }
}

int b_report_failed(void)
{
    int failed = 0;
    for (size_t i = 0; i < b_case_count(); i++)
        if (b_case_at(i)->id >= 0 && fig((int)i).status == VBENCH_FAILED)
            failed++;
    return failed;
}

/* ---------------------------------------------------------------------------------------------
 * The summary JSON.
 * ------------------------------------------------------------------------------------------- */

static void jstr(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void jnum(FILE *f, double v)
{
    if (isnan(v) || isinf(v))
        fputs("null", f);
    else
        fprintf(f, "%.6g", v);
}

static void jkey(FILE *f, const char *indent, const char *key)
{
    fprintf(f, "%s", indent);
    jstr(f, key);
    fputs(": ", f);
}

static void write_context(FILE *f, const struct b_run_info *run)
{
    const struct b_machine *m = &b_env.m;
    const char *in = "    ";
    fputs("  \"context\": {\n", f);
    jkey(f, in, "date"); jstr(f, run->date); fputs(",\n", f);
    jkey(f, in, "commit"); jstr(f, run->commit); fputs(",\n", f);
    jkey(f, in, "mode"); jstr(f, run->mode); fputs(",\n", f);
    jkey(f, in, "library_version"); jstr(f, vidmm_version_string()); fputs(",\n", f);
    jkey(f, in, "cpu_vendor"); jstr(f, m->cpu.vendor); fputs(",\n", f);
    jkey(f, in, "cpu_model"); jstr(f, m->cpu.model); fputs(",\n", f);
    for (int pass = 0; pass < 2; pass++) {
        uint64_t bits = pass == 0 ? m->cpu.features : m->cpu.usable;
        jkey(f, in, pass == 0 ? "cpu_features" : "cpu_features_usable");
        fputc('[', f);
        int first = 1;
        for (int b = 0; b < 64; b++) {
            const char *name = (bits >> b) & 1 ? vidmm_cpu_feature_name(1ull << b) : NULL;
            if (name == NULL)
                continue;
            if (!first)
                fputs(", ", f);
            jstr(f, name);
            first = 0;
        }
        fputs("],\n", f);
    }
    jkey(f, in, "cpu_feature_mismatch"); jstr(f, m->feature_mismatch[0] ? m->feature_mismatch : NULL); fputs(",\n", f);
    jkey(f, in, "cache_line"); fprintf(f, "%u,\n", (unsigned)m->cpu.cache_line);
    jkey(f, in, "llc_bytes"); fprintf(f, "%llu,\n", (unsigned long long)m->cpu.llc_bytes);
    jkey(f, in, "nt_threshold"); fprintf(f, "%llu,\n", (unsigned long long)m->cpu.nt_threshold);
    jkey(f, in, "backend"); jstr(f, m->active_backend); fputs(",\n", f);
    jkey(f, in, "backends"); fputs("[", f);
    for (int b = 1; b < VIDMM_BACKEND_COUNT_; b++) {
        fprintf(f, "%s{\"name\": ", b > 1 ? ", " : "");
        jstr(f, vidmm_backend_to_string((enum vidmm_backend)b));
        fprintf(f, ", \"supported\": %s}", vidmm_backend_supported((enum vidmm_backend)b) ? "true" : "false");
    }
    fputs("],\n", f);
    jkey(f, in, "wc_copy_variant"); jstr(f, m->wc_variant); fputs(",\n", f);
    jkey(f, in, "flush_insn");
    fputs("{\"writeback\": ", f); jstr(f, insn_of(VIDMM_FLUSH_WRITEBACK));
    fputs(", \"writeback_invalidate\": ", f); jstr(f, insn_of(VIDMM_FLUSH_WRITEBACK_INVALIDATE));
    fputs(", \"invalidate\": ", f); jstr(f, insn_of(VIDMM_FLUSH_INVALIDATE));
    fputs("},\n", f);
    jkey(f, in, "bare_nt_loop"); jstr(f, m->best_nt); fputs(",\n", f);
    if (strcmp(run->mode, "wall") == 0) {
        char fb[200];
        snprintf(fb, sizeof(fb), "fastest burst; gbps = 1e9 bytes/s; ratios: the fastest reference burst over the "
                 "fastest case burst, quads of bursts of %.0f us and 10 calls or more for %.0f ms a case (bench/b_wall.c)",
                 b_wall_burst_s() * 1e6, b_wall_case_s() * 1e3);
        jkey(f, in, "figure"); jstr(f, fb); fputs(",\n", f);
    } else {
        jkey(f, in, "figure"); jstr(f, "best repetition; gbps = 1e9 bytes/s; ratios divide same-run figures"); fputs(",\n", f);
    }
    jkey(f, in, "gbench_json"); jstr(f, run->gbench_json); fputs(",\n", f);
    jkey(f, in, "gbench_args"); jstr(f, run->gbench_args); fputs(",\n", f);
    jkey(f, in, "wall_seconds"); jnum(f, run->wall_s); fputs("\n", f);
    fputs("  },\n", f);
}

static void write_case(FILE *f, int idx, bool last)
{
    const struct b_case *c = b_case_at((size_t)idx);
    struct b_fig fg = fig(idx);
    bool ok = fg.status == VBENCH_OK;
    double rref = ratio(idx, c->ref_case), rceil = ratio(idx, c->ceil_case);
    fputs("    {\"name\": ", f); jstr(f, c->name);
    fputs(", \"path\": ", f); jstr(f, c->path);
    fputs(", \"variant\": ", f); jstr(f, c->variant);
    fputs(", \"backend\": ", f); jstr(f, c->backend);
    fprintf(f, ", \"bytes\": %zu", c->bytes);
    fputs(", \"gbps\": ", f); jnum(f, fg.gbps);
    fputs(", \"gbps_median\": ", f); jnum(f, fg.gbps_median);
    fputs(", \"ns_per_call\": ", f); jnum(f, ok ? fg.best_s * 1e9 : NAN);
    fprintf(f, ", \"reps\": %d", fg.reps);
    fputs(", \"ratio_memcpy\": ", f); jnum(f, c->ref == B_REF_MEMCPY ? rref : NAN);
    fputs(", \"ratio_memset\": ", f); jnum(f, c->ref == B_REF_MEMSET ? rref : NAN);
    fputs(", \"ratio_ceiling\": ", f); jnum(f, rceil);
    if (c->wall_quads > 0) {
        fputs(", \"wall_case_ns\": ", f); jnum(f, c->wall_case_s * 1e9);
        fputs(", \"wall_ref_ns\": ", f); jnum(f, c->wall_ref_s * 1e9);
        fprintf(f, ", \"wall_quads\": %d", c->wall_quads);
    }
    fputs(", \"baseline\": ", f); jstr(f, c->ref_name[0] ? c->ref_name : NULL);
    fputs(", \"ceiling\": ", f); jstr(f, c->ceil_name[0] ? c->ceil_name : NULL);
    fputs(", \"status\": ", f);
    jstr(f, ok ? "ok" : fg.status == VBENCH_SKIPPED ? "skipped" : fg.status == VBENCH_FAILED ? "failed" : "not_run");
    fprintf(f, ", \"skipped\": %s", ok ? "false" : "true");
    fputs(", \"reason\": ", f); jstr(f, ok ? NULL : fg.reason);
    fprintf(f, "}%s\n", last ? "" : ",");
}

int b_report_write_summary(const char *path, const struct b_run_info *run)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    fputs("{\n  \"schema\": \"vidmm-bench-summary/1\",\n", f);
    write_context(f, run);
    b_io_write_json(f);

    size_t n;
    struct b_row *rows = sorted_rows(&n);
    fputs("  \"cases\": [\n", f);
    for (size_t i = 0; rows != NULL && i < n; i++)
        write_case(f, rows[i].idx, i + 1 == n);
    fputs("  ],\n", f);
    free(rows);

    build_targets();
    fputs("  \"targets\": [\n", f);
    for (int i = 0; i < ntargets; i++) {
        const struct b_target *t = &targets[i];
        const char *why;
        double v = target_value(t, &why);
        char goal[32];
        goal_text(t, goal, sizeof(goal));
        fputs("    {\"target\": ", f); jstr(f, t->label);
        fputs(", \"case\": ", f); jstr(f, t->name);
        fputs(", \"reference\": ", f); jstr(f, t->ref1[0] ? t->ref1 : NULL);
        fputs(", \"reference2\": ", f); jstr(f, t->ref2[0] ? t->ref2 : NULL);
        fputs(", \"unit\": ", f); jstr(f, target_unit(t));
        fputs(", \"measured\": ", f); jnum(f, v);
        fputs(", \"goal\": ", f); jstr(f, goal);
        fputs(", \"met\": ", f);
        fputs(isnan(v) || target_info(t) ? "null" : target_met(t, v) ? "true" : "false", f);
        fputs(", \"reason\": ", f); jstr(f, isnan(v) ? why : NULL);
        fprintf(f, "}%s\n", i + 1 == ntargets ? "" : ",");
    }
    fputs("  ]\n}\n", f);
    if (fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}
