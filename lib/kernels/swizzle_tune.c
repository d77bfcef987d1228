/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_tune.c - measured swizzle plans (issue 26, include/vidmm/swizzle.h
 * "Measured plans"): timing the walks a copy can take (swizzle_walk.c lists them as overrides of
 * its rules, vidmm_swz_tune_candidates()) on scratch buffers of a plan's kind of copy, and the
 * per-process table of winners, saved to and loaded from a text file. swizzle_plan.c asks for
 * both when a plan is made with VIDMM_PLAN_MEASURE or measured by vidmm_swizzle_plan_measure(). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "arch/arch.h"
#include "common/internal.h"
#include "kernels/kernel_ops.h"
#include "kernels/swizzle_internal.h"

/* ---------------------------------------------------------------------------------------------
 * The table.
 * ------------------------------------------------------------------------------------------- */

/* Winners kept; a full table replaces its oldest entry (vidmm-info's common kinds are at most
 * 10 layouts x 2 element sizes x 2 sizes x 2 directions x a few backends). */
#define TUNE_MAX 512
#define TUNE_FORMAT "vidmm-swizzle-tune 2"
/* The first format: winner lines only (no threshold lines); still read. */
#define TUNE_FORMAT_1 "vidmm-swizzle-tune 1"
/* Threshold verdicts a file may hold (swizzle_plan.c keeps 64 kinds). */
#define TUNE_PAR_MAX 256
#define TUNE_LINE_MAX 256

struct tune_entry {
    struct vidmm_swz_tune_key key;
    struct vidmm_swz_tune tune;
    double gain;
};

static pthread_mutex_t tune_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tune_entry tune_table[TUNE_MAX];
static uint32_t tune_count, tune_next;   /* entries; the slot a full table replaces next */
static bool tune_file_tried;             /* the option's file was read (or tried) since the last clear */
static uint64_t tune_measured, tune_hits;

static char cpu_model_buf[64];
static pthread_once_t cpu_model_once = PTHREAD_ONCE_INIT;

/* read_cpu_model() fills cpu_model_buf with the CPU's brand string (its vendor when it has
 * none): what a table file is for (pthread_once callback; the CPU does not change under a
 * process). */
static void read_cpu_model(void)
{
    struct vidmm_cpu_info info = { .size = sizeof(info) };
    if (vidmm_cpu_info(&info) == 0)
        snprintf(cpu_model_buf, sizeof(cpu_model_buf), "%s", info.model[0] != '\0' ? info.model : info.vendor);
    if (cpu_model_buf[0] == '\0')
        snprintf(cpu_model_buf, sizeof(cpu_model_buf), "unknown");
}

static const char *cpu_model(void)
{
    pthread_once(&cpu_model_once, read_cpu_model);
    return cpu_model_buf;
}

/* put_locked() records the winner of 'k' (replacing the entry of that kind, else appending,
 * else replacing the oldest). Caller holds tune_lock. */
static void put_locked(const struct vidmm_swz_tune_key *k, const struct vidmm_swz_tune *t, double gain)
{
    for (uint32_t i = 0; i < tune_count; i++)
        if (memcmp(&tune_table[i].key, k, sizeof(*k)) == 0) {
            tune_table[i].tune = *t;
            tune_table[i].gain = gain;
            return;
        }
    uint32_t i = tune_count < TUNE_MAX ? tune_count++ : tune_next;
    if (tune_count == TUNE_MAX && i == tune_next)
        tune_next = (tune_next + 1) % TUNE_MAX;
    tune_table[i] = (struct tune_entry){ *k, *t, gain };
}

void vidmm_swz_tune_key_of(const struct vidmm_swz_surface *s, const struct vidmm_swz_mip *m, uint64_t moved,
                           enum vidmm_swz_dir dir, enum vidmm_backend backend, enum vidmm_strategy strategy,
                           struct vidmm_swz_tune_key *k)
{
    uint32_t param = 0, cls = 0;
    switch (s->layout.tiling) {
    case VIDMM_TILING_BLOCK_LINEAR: param = m->block_height | m->block_depth << 8; break;
    case VIDMM_TILING_AMD_GFX10: param = s->layout.amd_swizzle_mode; break;
    case VIDMM_TILING_MORTON: param = s->layout.swizzle_unit != 0 ? s->layout.swizzle_unit : s->elem; break;
    case VIDMM_TILING_INTEL_X:
    case VIDMM_TILING_INTEL_Y:
    case VIDMM_TILING_INTEL_4: param = s->layout.flags; break;
    case VIDMM_TILING_EQUATION: param = s->eq.bits; break;
    default: break;
    }
    while (cls < 63 && (moved >> (cls + 1)) != 0)
        cls++;
    /* Every field set (memcmp() compares keys: no padding, all uint32_t). */
    *k = (struct vidmm_swz_tune_key){
        .tiling = (uint32_t)s->layout.tiling,
        .param = param,
        .dims = s->depth > 1 ? 3 : 2,
        .elem = m->elem,
        .size_class = cls,
        .dir = (uint32_t)dir,
        .backend = (uint32_t)(backend == VIDMM_BACKEND_AUTO ? vidmm_backend_active() : backend),
        .strategy = (uint32_t)strategy,
    };
}

void vidmm_swz_tune_load_once(void)
{
    pthread_mutex_lock(&tune_lock);
    const bool load = !tune_file_tried;
    tune_file_tried = true;
    pthread_mutex_unlock(&tune_lock);
    if (load && vidmm_option_get_string(VIDMM_OPT_SWIZZLE_TUNE_FILE) != NULL) {
        /* The option's file, once: a missing, malformed or foreign file is logged and ignored
         * (the plan measures instead). */
        int err = vidmm_swizzle_tune_load(NULL);
        if (err < 0)
            vidmm_log(VIDMM_LOG_INFO, "VIDMM_SWIZZLE_TUNE_FILE %s not loaded: %s",
                      vidmm_option_get_string(VIDMM_OPT_SWIZZLE_TUNE_FILE), vidmm_strerror(err));
    }
}

bool vidmm_swz_tune_lookup(const struct vidmm_swz_tune_key *k, struct vidmm_swz_tune *t)
{
    vidmm_swz_tune_load_once();
    bool found = false;
    pthread_mutex_lock(&tune_lock);
    for (uint32_t i = 0; i < tune_count && !found; i++)
        if (memcmp(&tune_table[i].key, k, sizeof(*k)) == 0) {
            *t = tune_table[i].tune;
            found = true;
        }
    if (found)
        tune_hits++;
    pthread_mutex_unlock(&tune_lock);
    return found;
}

/* ---------------------------------------------------------------------------------------------
 * Measuring.
 *
 * The candidates (vidmm_swz_tune_candidates(): the default first) each copy a scratch surface of
 * the plan's layout, element size and row length, in a shuffled order each round (this machine
 * is shared: another process's time slice stalls a copy for 4-5 ms every few milliseconds, and a
 * fixed rotation let that stall land on the same candidate round after round - a 0.4 ms copy's
 * median read 4.7-5.1 ms in 1 row of 2 on a loaded 2-vCPU Cascade Lake, 2026-11-28), until the
 * budget is spent (at least TUNE_MIN_ROUNDS rounds, at most TUNE_MAX_ROUNDS); each keeps its
 * median. The walks are chosen as for the plan's real size ('moved': the streaming threshold
 * decides on it), whatever the scratch's. The scratch is a band of whole tile rows (tile slabs
 * for 3D) of at most TUNE_BAND bytes a side, or the L2's size where that is larger - the whole
 * subresource when smaller:
 *  - copies below the streaming threshold are timed warm, as a program copying the same surface
 *    again and again sees them. The band must then be where the plan's copy is: out of the L2
 *    when the plan's is. A band shrunk into the L2 to fit the budget measured another machine:
 *    on a 2-vCPU Xeon (Emerald Rapids, 2 MiB L2; 2026-12-02) the 4 MiB Intel Y swizzle's nine
 *    walks were timed on a 128 KiB band, where the ordinary-store strips won, while through the
 *    4 MiB surface the streaming tile walk took 0.31-0.35 ms against their 0.45-0.51
 *    (bench_swizzle_tune 21 4 intel_y). A warm band is therefore never shrunk below the L2's
 *    size (or the subresource's);
 *  - copies at or above it are timed cold, both sides of the band flushed from the caches before
 *    each copy (vidmm_flush()), so that the loads miss and the stores need their lines read for
 *    ownership as they do through a surface larger than the cache, without faulting in that much
 *    scratch memory; a cold band may shrink to TUNE_MIN_BAND.
 * The budget goes to the candidates that may win: a candidate TUNE_DROP_FIRST times slower than
 * the fastest in the first round, or whose median is TUNE_DROP times the fastest median after
 * any later one, is timed no more (the default always is: each round's candidates are compared
 * with it). Of the nine walks of that swizzle, two drop after the first round and all but two
 * or three after the second. The band shrinks (as far as it may) only when the first rounds
 * would not fit the budget.
 * ------------------------------------------------------------------------------------------- */
#define TUNE_MIN_ROUNDS 5
#define TUNE_MAX_ROUNDS 15
#define TUNE_DROP_FIRST 1.5
#define TUNE_DROP 1.25
#define TUNE_BAND (2u << 20)
#define TUNE_MIN_BAND (64u << 10)
/* A walk replaces the default only when its median is this much faster (and it was faster in 3
 * rounds of 4 of those it ran in): rounds on a shared machine scatter by several percent, and a
 * tie must keep the rules. Cold bands ask for more: on them (0.5-2 MiB, flushed) walks that
 * differ by 1.4x through a whole 64 MiB surface measured within 6% of each other - the D3D 4 KB
 * swizzle of 4096^2 x 4 bytes, four-row strips with streaming stores 13.9 ms against the
 * streaming tile walk's 20.0 ms, 105-113 us each on the band, the latter kept once in 4
 * measurements at a 2% margin - and a measured plan must never lose to the default (Cascade
 * Lake, load average 5, 2026-11-28). */
#define TUNE_MIN_GAIN 1.05
#define TUNE_MIN_GAIN_COLD 1.10

uint64_t vidmm_swz_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#define now_ns vidmm_swz_now_ns

struct scratch {
    struct vidmm_swz_surface s;
    struct vidmm_swz_mip m;
    unsigned char *tiled, *linear;
    size_t tiled_cap, linear_cap;      /* allocated */
    size_t tiled_bytes, linear_bytes;  /* the band's */
    size_t row, slice;
};

/* band_open() resolves into sc->s / sc->m a surface of one subresource like 'pm' (a mip of 's')
 * but of about 'target' bytes - whole tile rows (or slabs) - and sizes its buffers. Returns 0,
 * or the family's refusal of the band. */
static int band_open(const struct vidmm_swz_surface *s, const struct vidmm_swz_mip *pm, uint64_t target,
                     struct scratch *sc)
{
    const struct vidmm_swz_family *fam;
    uint64_t lin, total;
    struct vidmm_tile_layout l = s->layout;
    int err;

    if (l.tiling == VIDMM_TILING_EQUATION)
        l.equation = &s->eq;
    if (l.tiling == VIDMM_TILING_BLOCK_LINEAR) {
        l.block_height = pm->block_height; /* this mip's: the band of a smaller mip-0 surface */
        l.block_depth = pm->block_depth;   /* would choose its own */
    }
    const uint64_t sub = (uint64_t)pm->w * pm->h * pm->d * pm->elem;
    uint32_t h = pm->h, d = pm->d;
    if (target < sub && pm->tiles.tile_base != NULL) {
        if (d > 1) {
            const uint32_t g = 1u << pm->tiles.td_log2;
            const uint64_t want = (uint64_t)d * target / sub / g * g;
            d = want < g ? g : want < d ? (uint32_t)want : d;
        } else {
            const uint32_t g = 1u << pm->tiles.th_log2;
            const uint64_t want = (uint64_t)h * target / sub / g * g;
            h = want < g ? g : want < h ? (uint32_t)want : h;
        }
        if (h > pm->h)
            h = pm->h;
        if (d > pm->d)
            d = pm->d;
    }
    const struct vidmm_surface_desc desc = {
        .size = sizeof(desc), .width = pm->w * s->bw, .height = h * s->bh, .depth = d,
        .element_bytes = s->elem, .block_width = s->bw, .block_height = s->bh, .mip_levels = 1, .array_layers = 1,
    };
    if ((err = vidmm_swz_open("vidmm_swizzle_plan_measure", &l, &desc, &sc->s, &fam, &lin, &total)) < 0 ||
        (err = vidmm_swz_prepare(&sc->s, fam, 0, 0, &sc->m)) < 0)
        return err;
    sc->tiled_bytes = (size_t)total;
    sc->linear_bytes = (size_t)lin;
    sc->row = (size_t)sc->m.w * sc->m.elem;
    sc->slice = sc->row * sc->m.h;
    return 0;
}

/* scratch_alloc() allocates the buffers of the band band_open() resolved, the linear side
 * filled with a pattern (every page touched before any copy is timed). */
static int scratch_alloc(struct scratch *sc)
{
    sc->tiled_cap = (sc->tiled_bytes + 4095) / 4096 * 4096;
    sc->linear_cap = (sc->linear_bytes + 4095) / 4096 * 4096;
    sc->tiled = aligned_alloc(4096, sc->tiled_cap);
    sc->linear = aligned_alloc(4096, sc->linear_cap);
    if (sc->tiled == NULL || sc->linear == NULL) {
        free(sc->tiled);
        free(sc->linear);
        return VIDMM_E_NO_MEMORY;
    }
    for (size_t i = 0; i < sc->linear_cap; i += 8) {
        const uint64_t v = i * 0x9E3779B97F4A7C15ull;
        memcpy(sc->linear + i, &v, 8);
    }
    memset(sc->tiled, 0, sc->tiled_cap);
    return 0;
}

/* flush_band() evicts both sides of the band from the caches (a cold copy's start). */
static void flush_band(struct scratch *sc)
{
    (void)vidmm_flush(sc->tiled, sc->tiled_bytes, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
    (void)vidmm_flush(sc->linear, sc->linear_bytes, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
}

/* time_one() is one copy of the band with walk 'c', in nanoseconds, after an untimed one:
 * 'cold' flushes both sides first instead. (Timed right after another walk, a warm copy paid for
 * that walk's cache state: after streaming stores its destination is not cached, and the same
 * walk's median moved by up to 1.7x with its neighbours in bench_swizzle_tune's rounds on the
 * Cascade Lake, 2026-11-28.) */
static uint64_t time_one(struct scratch *sc, const struct vidmm_swz_tune *c, enum vidmm_swz_dir dir,
                         enum vidmm_backend backend, enum vidmm_strategy strategy, uint64_t moved, bool cold)
{
    const struct vidmm_box b = { 0, 0, 0, sc->m.w, sc->m.h, sc->m.d };
    if (cold)
        flush_band(sc);
    else
        vidmm_swz_run_tuned(&sc->m, &b, sc->tiled, sc->linear, sc->row, sc->slice, dir, backend, strategy, moved, c);
    const uint64_t t0 = now_ns();
    vidmm_swz_run_tuned(&sc->m, &b, sc->tiled, sc->linear, sc->row, sc->slice, dir, backend, strategy, moved, c);
    return now_ns() - t0;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* l2_bytes() is the L2's size a core (vidmm_cpu_info), 0 when unknown. */
static uint64_t l2_bytes(void)
{
    static _Atomic uint64_t cached; /* the size + 1; 0 not read yet */
    uint64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v == 0) {
        struct vidmm_cpu_info info;
        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        vidmm_arch_cpu_describe(&info);
        v = info.l2_bytes + 1;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v - 1;
}

/* median_of() is the median of the first 'n' (> 0) of 'v', which it leaves unsorted. */
static uint64_t median_of(const uint64_t *v, unsigned n)
{
    uint64_t t[TUNE_MAX_ROUNDS];
    memcpy(t, v, n * sizeof(*v));
    qsort(t, n, sizeof(uint64_t), cmp_u64);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

int vidmm_swz_tune_measure(const struct vidmm_swz_surface *s, const struct vidmm_swz_mip *m, uint64_t moved,
                           enum vidmm_swz_dir dir, enum vidmm_backend backend, enum vidmm_strategy strategy,
                           uint64_t budget_ns, const struct vidmm_swz_tune_key *k, struct vidmm_swz_tune *best)
{
    struct vidmm_swz_tune cand[VIDMM_SWZ_MAX_CANDIDATES];
    uint64_t times[VIDMM_SWZ_MAX_CANDIDATES][TUNE_MAX_ROUNDS];
    unsigned order[VIDMM_SWZ_MAX_CANDIDATES], nr[VIDMM_SWZ_MAX_CANDIDATES];
    bool alive[VIDMM_SWZ_MAX_CANDIDATES];
    double gain = 1.0;
    int err;

    *best = (struct vidmm_swz_tune){ 0 };
    const unsigned n = vidmm_swz_tune_candidates(m, dir, backend, strategy, moved, cand, VIDMM_SWZ_MAX_CANDIDATES);
    if (n > 1) {
        const uint64_t start = now_ns();
        const bool cold = moved >= vidmm_nt_threshold();
        const uint64_t sub = (uint64_t)m->w * m->h * m->d * m->elem, l2 = l2_bytes();
        const uint64_t first = sub < TUNE_BAND ? sub : l2 > TUNE_BAND && sub > TUNE_BAND ? (sub < l2 ? sub : l2) : TUNE_BAND;
        /* The smallest band the race may shrink to: warm, the L2's size (see above). */
        const uint64_t floor_band = cold ? TUNE_MIN_BAND : l2 > TUNE_MIN_BAND ? (l2 < first ? l2 : first) : TUNE_MIN_BAND;
        struct scratch *sc = malloc(sizeof(*sc));
        if (sc == NULL)
            return VIDMM_E_NO_MEMORY;
        if ((err = band_open(s, m, first, sc)) < 0) {
            free(sc);
            return 0; /* a band the family refuses: keep the rules */
        }
        if ((err = scratch_alloc(sc)) < 0) {
            free(sc);
            return err;
        }
        /* The default once untimed (the code and the band warm), then once timed, with the flush
         * when cold: if the race's first rounds would not fit the budget, a smaller band in the
         * same buffers (not below floor_band). */
        (void)time_one(sc, &cand[0], dir, backend, strategy, moved, false);
        const uint64_t f0 = now_ns();
        (void)time_one(sc, &cand[0], dir, backend, strategy, moved, cold);
        const uint64_t one = now_ns() - f0 + 1;
        const unsigned later = n < 4 ? n : 4; /* candidates left after the race, about */
        const uint64_t need = one * ((uint64_t)n * 2 + (uint64_t)later * (TUNE_MIN_ROUNDS - 2));
        const uint64_t spent0 = now_ns() - start, left = budget_ns > spent0 ? budget_ns - spent0 : 0;
        const uint64_t bytes = (uint64_t)sc->m.w * sc->m.h * sc->m.d * sc->m.elem;
        if (need > left && bytes > floor_band) {
            uint64_t smaller = (uint64_t)((double)bytes * (double)left / (double)need);
            if (smaller < floor_band)
                smaller = floor_band;
            unsigned char *tb = sc->tiled, *lb = sc->linear;
            const size_t tc = sc->tiled_cap, lc = sc->linear_cap;
            if (band_open(s, m, smaller, sc) < 0 || sc->tiled_bytes > tc || sc->linear_bytes > lc)
                (void)band_open(s, m, first, sc); /* keep the first band */
            sc->tiled = tb;
            sc->linear = lb;
            sc->tiled_cap = tc;
            sc->linear_cap = lc;
        }
        for (unsigned c = 0; c < n; c++) {
            alive[c] = true;
            nr[c] = 0;
        }
        uint64_t rng = 0x9E3779B97F4A7C15ull ^ start;
        unsigned rounds = 0, nalive = n; /* rounds: the default's, every round */
        while (rounds < TUNE_MAX_ROUNDS) {
            unsigned na = 0;
            for (unsigned j = 0; j < n; j++)
                if (alive[j])
                    order[na++] = j;
            for (unsigned j = na - 1; j > 0; j--) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                const unsigned x = (unsigned)(rng % (j + 1)), tmp = order[j];
                order[j] = order[x];
                order[x] = tmp;
            }
            const uint64_t r0 = now_ns();
            for (unsigned j = 0; j < na; j++) {
                const unsigned c = order[j];
                times[c][nr[c]++] = time_one(sc, &cand[c], dir, backend, strategy, moved, cold);
            }
            rounds++;
            const uint64_t t = now_ns(), this_round = t - r0;
            {
                /* The race: the slow ones drop (never the default). */
                const double drop = rounds == 1 ? TUNE_DROP_FIRST : TUNE_DROP;
                uint64_t med[VIDMM_SWZ_MAX_CANDIDATES], lo = UINT64_MAX;
                for (unsigned c = 0; c < n; c++)
                    if (alive[c] && (med[c] = median_of(times[c], nr[c])) < lo)
                        lo = med[c];
                nalive = 0;
                for (unsigned c = 0; c < n; c++) {
                    if (alive[c] && c != 0 && (double)med[c] >= drop * (double)lo)
                        alive[c] = false;
                    nalive += alive[c];
                }
            }
            /* Stop before a round that would end past the budget, once TUNE_MIN_ROUNDS are in
             * (or 3, past half as much again: a loaded machine's rounds run long). */
            const uint64_t spent = t - start, next = this_round / na * nalive;
            if (nalive == 1) /* only the default left: it stays */
                break;
            if ((rounds >= TUNE_MIN_ROUNDS && spent + next > budget_ns) ||
                (rounds >= 3 && spent + next > budget_ns + budget_ns / 2))
                break;
        }
        const uint64_t band = (uint64_t)sc->m.w * sc->m.h * sc->m.d * sc->m.elem, spent = now_ns() - start;
        free(sc->tiled);
        free(sc->linear);
        free(sc);
        /* A winner must also beat the default in at least 3 of 4 of the rounds it ran in (the
         * same round, so the same state of the machine), not only by its median; only a
         * candidate still in the race may win. */
        uint64_t med[VIDMM_SWZ_MAX_CANDIDATES];
        unsigned win = 0;
        for (unsigned c = 0; c < n; c++) {
            if (!alive[c])
                continue;
            med[c] = median_of(times[c], nr[c]);
            if (med[c] < med[win])
                win = c;
        }
        unsigned beat = 0;
        for (unsigned r = 0; r < nr[win]; r++)
            beat += times[win][r] < times[0][r];
        if (win != 0 && (double)med[0] >= (cold ? TUNE_MIN_GAIN_COLD : TUNE_MIN_GAIN) * (double)med[win] &&
            4 * beat >= 3 * nr[win]) {
            *best = cand[win];
            gain = (double)med[0] / (double)(med[win] > 0 ? med[win] : 1);
        }
        if (vidmm_log_enabled(VIDMM_LOG_DEBUG))
            vidmm_log(VIDMM_LOG_DEBUG, "swizzle plan measured: tiling %u, %u-byte elements, 2^%u bytes, %s: %u walks "
                      "on a %s band of %llu bytes, %u rounds (%u walks in the last) in %.1f ms; walk %u (%.0f ns) "
                      "against the default's %.0f ns: %s", k->tiling, k->elem, k->size_class,
                      dir == VIDMM_SWZ_TILE ? "swizzle" : "deswizzle", n, cold ? "cold" : "warm",
                      (unsigned long long)band, rounds, nalive, (double)spent * 1e-6, win,
                      (double)med[win], (double)med[0], gain > 1.0 ? "kept" : "the default stays");
    }
    pthread_mutex_lock(&tune_lock);
    put_locked(k, best, gain);
    tune_measured++;
    pthread_mutex_unlock(&tune_lock);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The linear-row store policy (vidmm_swz_linear_policy(), kernel_ops.h vidmm_stream_linear_rows()).
 *
 * Whether a deswizzle larger than the cache writes its linear rows with streaming stores (whole
 * lines) or ordinary ones is a matter of the machine's memory and the layout's row pattern, and
 * the CPU kinds disagree:
 *  - the block-linear GOB (the streaming pair walk): streaming won 1.5x on a Cascade Lake
 *    (2026-11-26), lost 2x on a Zen 3 (2026-11-22) and won 1.9-2.3x on a Zen 4 (64 MiB, 4- and
 *    16-byte elements, 10.0-11.2 ms -> 4.9-5.6 ms, bench_swizzle_tune 5 64 block_linear,
 *    2026-12-01), where the vendor rule that had stood for it kept ordinary stores;
 *  - the line layouts' four-row strips: streaming lost 1.3x on the Cascade Lake and won
 *    1.4-1.8x on a Sapphire Rapids (bench_swizzle_tune, 2026-11-28) and 1.2-1.3x on the Zen 4
 *    (Intel Y, Tile4, D3D 4 KB, 64 MiB, best of 5: 5.17 -> 4.33, 4.32 -> 3.27, 4.82 -> 3.69 ms),
 *    but not for D3D and AMD tables of 16-byte elements there (0.91-1.0x); and the tile walk
 *    beat both for Morton's 64 MiB deswizzle there (8.3 ms against 11.1 for the strips), where a
 *    Zen 3 had measured the strips faster (swizzle_walk.c).
 * So each kind of copy (layout, its parameters, element size, backend) measures it once per
 * process, at the first large deswizzle of that kind: a band of its own layout and row length of
 * about 2 MiB, taken cold - both sides evicted before each copy, so that loads miss and ordinary
 * stores read their lines for ownership as through a surface larger than the cache - and each
 * copy timed with the write-back of the lines it dirtied (slr_time()) - the walk a large copy
 * takes against the same walk streaming its linear rows (and, for the strips, against the tile
 * walk), in rotation, best of 7 each (3 to 7: fewer on bands wider than 2 MiB).
 * The bands showed the 64 MiB copies' direction and most of their size on the Zen 4 (the GOB
 * 218-267 us against 95-117 us; whole 64 MiB 12.1 against 5.3 ms; Intel Y 145 against 114 us,
 * Tile4 125 against 103, D3D 4 KB 117 against 91). The guess (the GOB: the CPU kind's,
 * vidmm_arch_stream_linear_rows(); the strips: ordinary stores) stands unless the other side is
 * 10% faster. Cost: 4 MiB of memory and about 5 ms on a quiet machine, once per kind (rounds
 * stop at 3 past 10 ms: under a parallel build 7 rounds took 32-77 ms); a copy of that size takes
 * 3-10 ms.
 * ------------------------------------------------------------------------------------------- */
#define SLR_ROUNDS 7
#define SLR_BUDGET_NS (10u * 1000 * 1000)
#define SLR_MARGIN 1.10
#define SLR_KINDS 64

struct slr_kind {
    struct vidmm_swz_tune_key key;
    uint8_t which;  /* enum vidmm_swz_linear */
    uint8_t answer; /* enum vidmm_swz_linear_answer: measured (or forced, or guessed) */
};

static pthread_mutex_t slr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slr_kind slr_kinds[SLR_KINDS];
static unsigned slr_count, slr_next;
static atomic_flag slr_measuring = ATOMIC_FLAG_INIT;
static atomic_flag slr_warned = ATOMIC_FLAG_INIT; /* a bad VIDMM_STREAM_LINEAR_ROWS, once */
static _Atomic int slr_ref; /* vidmm_stream_linear_rows(): 0 unknown, 1 ordinary, 2 streaming */
static uint64_t slr_measured;

void vidmm_stream_linear_reset(void)
{
    pthread_mutex_lock(&slr_lock);
    slr_count = slr_next = 0;
    pthread_mutex_unlock(&slr_lock);
    atomic_store_explicit(&slr_ref, 0, memory_order_relaxed);
}

/* slr_time() is one cold deswizzle of the band with walk 'c', in nanoseconds, with the write-back
 * of its linear side: a copy larger than the cache pays for the lines its ordinary stores
 * dirtied when they are evicted, which a band that fits the cache would otherwise never show
 * (streaming stores leave nothing to write back). */
static uint64_t slr_time(struct scratch *sc, const struct vidmm_swz_tune *c, enum vidmm_backend backend,
                         uint64_t moved)
{
    const struct vidmm_box b = { 0, 0, 0, sc->m.w, sc->m.h, sc->m.d };
    flush_band(sc);
    const uint64_t t0 = now_ns();
    vidmm_swz_run_tuned(&sc->m, &b, sc->tiled, sc->linear, sc->row, sc->slice, VIDMM_SWZ_UNTILE, backend,
                        VIDMM_STRATEGY_AUTO, moved, c);
    (void)vidmm_flush(sc->linear, sc->linear_bytes, VIDMM_FLUSH_WRITEBACK);
    return now_ns() - t0;
}

/* slr_measure() returns the answer (enum vidmm_swz_linear_answer) measured on a cold band of the
 * kind of 'm' (a mip of 'm->s') for walk 'which', the guess 'guess' standing unless another
 * candidate is SLR_MARGIN faster; -1 where it cannot measure (no band, no memory, no flush
 * instruction). The candidates: the pair walk with ordinary or streaming stores; the strips
 * with ordinary or streaming stores ('strips_nt': the kernels have them) and the tile walk. */
static int slr_measure(const struct vidmm_swz_mip *m, enum vidmm_backend backend, enum vidmm_swz_linear which,
                       unsigned guess, bool strips_nt)
{
    struct scratch *sc = malloc(sizeof(*sc));
    if (sc == NULL)
        return -1;
    if (band_open(m->s, m, TUNE_BAND, sc) < 0 || scratch_alloc(sc) < 0) {
        free(sc);
        return -1;
    }
    int v = -1;
    if (vidmm_flush(sc->tiled, sc->tiled_bytes, VIDMM_FLUSH_WRITEBACK_INVALIDATE) != 0)
        goto out; /* no flush: every copy would be warm, which says nothing of large ones */
    /* The walks as a large copy takes them. The band is below the threshold, so 'big' is off
     * (choose_walk() never asks for this policy while it is measured) and the rest is set as
     * choose_walk() has it beyond the threshold: tile groups off. Indexed by the answer. */
    const struct vidmm_swz_tune plain = { .big = VIDMM_SWZ_TUNE_OFF, .grouped = VIDMM_SWZ_TUNE_OFF,
                                          .pairs_nt = VIDMM_SWZ_TUNE_OFF };
    struct vidmm_swz_tune walk[3] = { plain, plain, plain };
    bool cand[3] = { true, true, false };
    if (which != VIDMM_SWZ_LINEAR_STRIPS) {
        walk[VIDMM_SWZ_ANSWER_STREAM].pairs_nt = VIDMM_SWZ_TUNE_ON; /* the pair or long-row walk */
    } else {
        walk[VIDMM_SWZ_ANSWER_ORDINARY].strips = VIDMM_SWZ_STRIPS_CACHED;
        walk[VIDMM_SWZ_ANSWER_STREAM].strips = VIDMM_SWZ_STRIPS_NT;
        walk[VIDMM_SWZ_ANSWER_TILES].strips = VIDMM_SWZ_STRIPS_NONE;
        cand[VIDMM_SWZ_ANSWER_STREAM] = strips_nt;
        cand[VIDMM_SWZ_ANSWER_TILES] = true;
    }
    const uint64_t moved = sc->linear_bytes, start = now_ns();
    uint64_t best[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };
    for (unsigned c = 0; c < 3; c++)
        if (cand[c])
            (void)time_one(sc, &walk[c], VIDMM_SWZ_UNTILE, backend, VIDMM_STRATEGY_AUTO, moved, false);
    /* Fewer rounds for a band wider than 2 MiB (a block row of a wide surface of 16-byte
     * elements is 4 MiB: 7 rounds took 18.6 ms on a loaded Zen 4), never fewer than 3. */
    unsigned rounds = (unsigned)((uint64_t)SLR_ROUNDS * TUNE_BAND / (moved > 0 ? moved : 1));
    rounds = rounds < 3 ? 3 : rounds > SLR_ROUNDS ? SLR_ROUNDS : rounds;
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned j = 0; j < 3; j++) {
            const unsigned c = (j + r) % 3; /* a rotation: drift hits every candidate alike */
            if (!cand[c])
                continue;
            const uint64_t t = slr_time(sc, &walk[c], backend, moved);
            if (t < best[c])
                best[c] = t;
        }
        if (r >= 2 && now_ns() - start > SLR_BUDGET_NS)
            break; /* a loaded machine: 3 rounds are enough (32-77 ms for 7 under a parallel build) */
    }
    unsigned win = guess;
    for (unsigned c = 0; c < 3; c++)
        if (cand[c] && c != guess && SLR_MARGIN * (double)best[c] < (double)best[guess] &&
            (win == guess || best[c] < best[win]))
            win = c;
    v = (int)win;
    static const char *const answer_names[3] = { "ordinary stores", "streaming stores", "the tile walk" };
    char tiles[48] = "";
    if (cand[VIDMM_SWZ_ANSWER_TILES])
        snprintf(tiles, sizeof(tiles), ", tile walk %.0f us", (double)best[VIDMM_SWZ_ANSWER_TILES] * 1e-3);
    vidmm_log(VIDMM_LOG_INFO, "deswizzle linear rows beyond the cache, tiling %u, %u-byte elements, %s: %s (measured "
              "on a cold %zu KiB band in %.1f ms: ordinary stores %.0f us, streaming %.0f us%s; the guess: %s)",
              (unsigned)m->s->layout.tiling, m->elem, which == VIDMM_SWZ_LINEAR_PAIRS  ? "pair walk"
              : which == VIDMM_SWZ_LINEAR_LONG ? "long-row walk"
                                               : "strips",
              answer_names[win], sc->linear_bytes >> 10, (double)(now_ns() - start) * 1e-6,
              (double)best[VIDMM_SWZ_ANSWER_ORDINARY] * 1e-3,
              cand[VIDMM_SWZ_ANSWER_STREAM] ? (double)best[VIDMM_SWZ_ANSWER_STREAM] * 1e-3 : 0.0, tiles,
              answer_names[guess]);
out:
    free(sc->tiled);
    free(sc->linear);
    free(sc);
    return v;
}

/* slr_forced() is VIDMM_STREAM_LINEAR_ROWS: 2 on, 1 off, 0 auto (unset, or a bad word: warned
 * about once, and measured past). */
static int slr_forced(void)
{
    const char *forced = vidmm_option_get_string(VIDMM_OPT_STREAM_LINEAR_ROWS);
    if (forced == NULL || strcmp(forced, "auto") == 0)
        return 0;
    if (strcmp(forced, "on") == 0)
        return 2;
    if (strcmp(forced, "off") == 0)
        return 1;
    if (!atomic_flag_test_and_set_explicit(&slr_warned, memory_order_relaxed))
        vidmm_log(VIDMM_LOG_WARN, "VIDMM_STREAM_LINEAR_ROWS='%s' is not auto|on|off; measuring", forced);
    return 0;
}

unsigned vidmm_swz_linear_policy(const struct vidmm_swz_mip *m, enum vidmm_backend backend,
                                 enum vidmm_swz_linear which, bool strips_nt)
{
    const unsigned guess = which != VIDMM_SWZ_LINEAR_STRIPS && vidmm_arch_stream_linear_rows()
                               ? VIDMM_SWZ_ANSWER_STREAM : VIDMM_SWZ_ANSWER_ORDINARY;
    const int forced = slr_forced();
    if (forced != 0)
        return forced == 2 ? VIDMM_SWZ_ANSWER_STREAM : VIDMM_SWZ_ANSWER_ORDINARY;
    if (!vidmm_option_get(VIDMM_OPT_CALIBRATE))
        return guess;
    struct vidmm_swz_tune_key k;
    backend = backend == VIDMM_BACKEND_AUTO ? vidmm_backend_active() : backend;
    vidmm_swz_tune_key_of(m->s, m, 0, VIDMM_SWZ_UNTILE, backend, VIDMM_STRATEGY_AUTO, &k);
    pthread_mutex_lock(&slr_lock);
    for (unsigned i = 0; i < slr_count; i++)
        if (slr_kinds[i].which == which && memcmp(&slr_kinds[i].key, &k, sizeof(k)) == 0) {
            const unsigned v = slr_kinds[i].answer;
            pthread_mutex_unlock(&slr_lock);
            return v;
        }
    pthread_mutex_unlock(&slr_lock);
    /* One measurement at a time: another thread's copy takes the guess meanwhile. */
    if (atomic_flag_test_and_set_explicit(&slr_measuring, memory_order_acquire))
        return guess;
    const int v = slr_measure(m, backend, which, guess, strips_nt);
    atomic_flag_clear_explicit(&slr_measuring, memory_order_release);
    const unsigned answer = v < 0 ? guess : (unsigned)v;
    pthread_mutex_lock(&slr_lock);
    const unsigned i = slr_count < SLR_KINDS ? slr_count++ : slr_next;
    if (slr_count == SLR_KINDS && i == slr_next)
        slr_next = (slr_next + 1) % SLR_KINDS;
    slr_kinds[i] = (struct slr_kind){ .key = k, .which = (uint8_t)which, .answer = (uint8_t)answer };
    slr_measured += v >= 0;
    pthread_mutex_unlock(&slr_lock);
    return answer;
}

/* The policy vidmm_cpu_info() reports: the GOB's pair walk for 4096 x 128 elements of 4 bytes,
 * block height 16 (a 2 MiB band), with the active backend (the scalar one: the guess, though
 * its copies never stream). */
bool vidmm_stream_linear_rows(void)
{
    int v = atomic_load_explicit(&slr_ref, memory_order_relaxed);
    if (VIDMM_LIKELY(v != 0))
        return v == 2;
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    l.block_height = 16;
    const struct vidmm_surface_desc d = { .size = sizeof(d), .width = 4096, .height = 128, .depth = 1,
                                          .element_bytes = 4, .block_width = 1, .block_height = 1,
                                          .mip_levels = 1, .array_layers = 1 };
    const struct vidmm_swz_family *fam;
    struct vidmm_swz_surface s;
    struct vidmm_swz_mip m;
    uint64_t lin, total;
    bool stream;
    const struct vidmm_kernel_ops *ops = vidmm_ops_active();
    const int forced = slr_forced();
    if (forced != 0)
        stream = forced == 2;
    else if (ops->unswz_pairs16_nt == NULL || vidmm_swz_open("vidmm_cpu_info", &l, &d, &s, &fam, &lin, &total) < 0 ||
             vidmm_swz_prepare(&s, fam, 0, 0, &m) < 0)
        stream = vidmm_arch_stream_linear_rows(); /* no streaming pair kernel to measure: the guess */
    else
        stream = vidmm_swz_linear_policy(&m, ops->backend, VIDMM_SWZ_LINEAR_PAIRS, false) == VIDMM_SWZ_ANSWER_STREAM;
    atomic_store_explicit(&slr_ref, stream ? 2 : 1, memory_order_relaxed);
    return stream;
}

/* ---------------------------------------------------------------------------------------------
 * The file.
 * ------------------------------------------------------------------------------------------- */

static const char *const tiling_names[VIDMM_TILING_COUNT_] = {
    "linear", "block_linear", "intel_x", "intel_y", "intel_4", "d3d_4k", "d3d_64k", "amd_gfx10", "equation", "morton",
};
static const char *const dir_names[2] = { "swizzle", "deswizzle" };
static const char *const strategy_names[VIDMM_STRATEGY_COUNT_] = {
    "auto", "temporal", "nontemporal", "movdir64b", "stream_load", "libc",
};
static const char *const knob_names[3] = { "as", "off", "on" };
static const char *const strip_names[4] = { "as", "none", "cached", "nt" };

/* word_index() is the index of 'w' in names[0..n), or -1. */
static int word_index(const char *const *names, unsigned n, const char *w)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(names[i], w) == 0)
            return (int)i;
    return -1;
}

/* parse_u32() parses a decimal number in [lo, hi]; false when 'w' is anything else. */
static bool parse_u32(const char *w, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    if (*w < '0' || *w > '9')
        return false;
    errno = 0;
    unsigned long v = strtoul(w, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* split_words() cuts 'line' at blanks into at most 'max' words: their count, or max + 1 when
 * there are more. */
static unsigned split_words(char *line, char **w, unsigned max)
{
    unsigned n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t", &save); t != NULL; t = strtok_r(NULL, " \t", &save)) {
        if (n == max)
            return max + 1;
        w[n++] = t;
    }
    return n;
}

/* parse_key() reads the eight words of a kind of copy, as winner and threshold lines begin:
 * tiling, param, 2d|3d, element bytes, size class, direction, backend, strategy. */
static bool parse_key(char *const *w, struct vidmm_swz_tune_key *k)
{
    int tiling = word_index(tiling_names, VIDMM_TILING_COUNT_, w[0]);
    int dims = strcmp(w[2], "2d") == 0 ? 2 : strcmp(w[2], "3d") == 0 ? 3 : -1;
    int dir = word_index(dir_names, 2, w[5]);
    int backend = vidmm_backend_from_string(w[6]);
    int strategy = word_index(strategy_names, VIDMM_STRATEGY_COUNT_, w[7]);
    uint32_t param, elem, cls;
    if (tiling < 0 || dims < 0 || dir < 0 || backend < 0 || backend == VIDMM_BACKEND_AUTO || strategy < 0 ||
        strategy == VIDMM_STRATEGY_MOVDIR64B || strategy == VIDMM_STRATEGY_LIBC ||
        !parse_u32(w[1], 0, UINT32_MAX, &param) || !parse_u32(w[3], 1, 16, &elem) || !parse_u32(w[4], 0, 63, &cls))
        return false;
    *k = (struct vidmm_swz_tune_key){ (uint32_t)tiling, param, (uint32_t)dims, elem, cls, (uint32_t)dir,
                                      (uint32_t)backend, (uint32_t)strategy };
    return true;
}

/* parse_entry() reads one winner line (its 13 words) into '*e'; false when malformed. */
static bool parse_entry(char *line, struct tune_entry *e)
{
    char *w[13];
    struct vidmm_swz_tune_key k;
    if (split_words(line, w, 13) != 13 || !parse_key(w, &k))
        return false;
    int big = word_index(knob_names, 3, w[8]), strips = word_index(strip_names, 4, w[9]);
    int grouped = word_index(knob_names, 3, w[10]), pairs = word_index(knob_names, 3, w[11]);
    char *end;
    errno = 0;
    double gain = strtod(w[12], &end);
    if (big < 0 || strips < 0 || grouped < 0 || pairs < 0 || errno != 0 || *end != '\0' || !isfinite(gain) ||
        gain <= 0)
        return false;
    *e = (struct tune_entry){
        .key = k,
        .tune = { (uint8_t)big, (uint8_t)strips, (uint8_t)grouped, (uint8_t)pairs },
        .gain = gain,
    };
    return true;
}

/* parse_threads() reads a threshold line (after its "threads " word): the kind's key as a
 * winner line's first eight words, the thread count, "pool" or "jobs", and "alone" or
 * "threads". */
static bool parse_threads(char *line, struct vidmm_swz_par_verdict *v)
{
    char *w[11];
    struct vidmm_swz_tune_key k;
    if (split_words(line, w, 11) != 11 || !parse_key(w, &k))
        return false;
    int jobs = strcmp(w[9], "pool") == 0 ? 0 : strcmp(w[9], "jobs") == 0 ? 1 : -1;
    int many = strcmp(w[10], "alone") == 0 ? 0 : strcmp(w[10], "threads") == 0 ? 1 : -1;
    uint32_t threads;
    if (jobs < 0 || many < 0 || !parse_u32(w[8], 2, VIDMM_SWIZZLE_MAX_THREADS, &threads))
        return false;
    *v = (struct vidmm_swz_par_verdict){ .key = k, .threads = threads, .jobs = jobs == 1, .many = many == 1 };
    return true;
}

/* read_line() reads the next line of 'f' into 'buf' without its end: 1, 0 at the end of the
 * file, -1 for a line longer than the buffer. */
static int read_line(FILE *f, char *buf, size_t size)
{
    if (fgets(buf, (int)size, f) == NULL)
        return 0;
    size_t len = strlen(buf);
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
    else if (!feof(f))
        return -1;
    while (len > 0 && (buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        buf[--len] = '\0';
    return 1;
}

/* tune_path() is 'path', or the option's file when NULL (NULL when neither). */
static const char *tune_path(const char *path)
{
    return path != NULL ? path : vidmm_option_get_string(VIDMM_OPT_SWIZZLE_TUNE_FILE);
}

int vidmm_swizzle_tune_load(const char *path)
{
    const char *p = tune_path(path);
    char line[TUNE_LINE_MAX];
    int err = 0, r;
    unsigned lineno = 0, n = 0;

    if (p == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "path", "NULL and VIDMM_SWIZZLE_TUNE_FILE unset "
                                "(spec swizzle.h)");
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return vidmm_swz_refuse(VIDMM_E_IO, __func__, "path", "%s: %s", p, strerror(errno));
    struct tune_entry *e = malloc(TUNE_MAX * sizeof(*e));
    struct vidmm_swz_par_verdict *par = malloc(TUNE_PAR_MAX * sizeof(*par));
    unsigned npar = 0;
    bool v1 = false;
    if (e == NULL || par == NULL) {
        free(e);
        free(par);
        fclose(f);
        return VIDMM_E_NO_MEMORY;
    }
    /* Everything is read and checked before the table changes. */
    while ((r = read_line(f, line, sizeof(line))) != 0) {
        lineno++;
        if (r < 0) {
            err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "line %u longer than %d bytes (spec swizzle.h)",
                                   lineno, TUNE_LINE_MAX - 2);
            break;
        }
        if (lineno == 1) {
            if (strcmp(line, TUNE_FORMAT) != 0 && strcmp(line, TUNE_FORMAT_1) != 0) {
                err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "line 1 is not \"%s\" (spec swizzle.h)",
                                       TUNE_FORMAT);
                break;
            }
            v1 = strcmp(line, TUNE_FORMAT_1) == 0;
            continue;
        }
        if (lineno == 2) {
            if (strncmp(line, "cpu ", 4) != 0) {
                err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "line 2 is not \"cpu <model>\" "
                                       "(spec swizzle.h)");
                break;
            }
            if (strcmp(line + 4, cpu_model()) != 0) {
                err = vidmm_swz_refuse(VIDMM_E_UNSUPPORTED, __func__, p, "written on \"%s\", this CPU is \"%s\" "
                                       "(spec swizzle.h)", line + 4, cpu_model());
                break;
            }
            continue;
        }
        if (line[0] == '\0' || line[0] == '#')
            continue;
        if (!v1 && strncmp(line, "threads ", 8) == 0) {
            if (npar == TUNE_PAR_MAX) {
                err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "more than %d threshold lines "
                                       "(spec swizzle.h)", TUNE_PAR_MAX);
                break;
            }
            if (!parse_threads(line + 8, &par[npar])) {
                err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "line %u is not a threshold line "
                                       "(spec swizzle.h)", lineno);
                break;
            }
            npar++;
            continue;
        }
        if (n == TUNE_MAX) {
            err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "more than %d winners (spec swizzle.h)", TUNE_MAX);
            break;
        }
        if (!parse_entry(line, &e[n])) {
            err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "line %u is not a winner line "
                                   "(spec swizzle.h)", lineno);
            break;
        }
        n++;
    }
    if (err == 0 && ferror(f))
        err = vidmm_swz_refuse(VIDMM_E_IO, __func__, p, "read error");
    if (err == 0 && lineno < 2)
        err = vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, p, "no \"%s\" and \"cpu\" header (spec swizzle.h)",
                               TUNE_FORMAT);
    fclose(f);
    if (err == 0) {
        pthread_mutex_lock(&tune_lock);
        for (unsigned i = 0; i < n; i++)
            put_locked(&e[i].key, &e[i].tune, e[i].gain);
        pthread_mutex_unlock(&tune_lock);
        vidmm_swz_par_import(par, npar);
    }
    free(e);
    free(par);
    return err;
}

int vidmm_swizzle_tune_save(const char *path)
{
    const char *p = tune_path(path);
    char tmp[4096];

    if (p == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "path", "NULL and VIDMM_SWIZZLE_TUNE_FILE unset "
                                "(spec swizzle.h)");
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p, (long)getpid()) >= sizeof(tmp))
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "path", "longer than %zu bytes", sizeof(tmp) - 32);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return vidmm_swz_refuse(VIDMM_E_IO, __func__, "path", "%s: %s", tmp, strerror(errno));
    fprintf(f, "%s\ncpu %s\n", TUNE_FORMAT, cpu_model());
    fprintf(f, "# tiling param dims elem size-class direction backend strategy big strips grouped pairs_nt gain\n");
    pthread_mutex_lock(&tune_lock);
    for (uint32_t i = 0; i < tune_count; i++) {
        const struct tune_entry *e = &tune_table[i];
        const struct vidmm_swz_tune *t = &e->tune;
        fprintf(f, "%s %u %ud %u %u %s %s %s %s %s %s %s %.3f\n", tiling_names[e->key.tiling], e->key.param,
                e->key.dims, e->key.elem, e->key.size_class, dir_names[e->key.dir],
                vidmm_backend_to_string((enum vidmm_backend)e->key.backend), strategy_names[e->key.strategy],
                knob_names[t->big], strip_names[t->strips], knob_names[t->grouped], knob_names[t->pairs_nt], e->gain);
    }
    pthread_mutex_unlock(&tune_lock);
    struct vidmm_swz_par_verdict *par = malloc(TUNE_PAR_MAX * sizeof(*par));
    if (par != NULL) {
        const unsigned npar = vidmm_swz_par_export(par, TUNE_PAR_MAX);
        if (npar > 0)
            fprintf(f, "# threads tiling param dims elem size-class direction backend strategy threads pool|jobs "
                       "alone|threads\n");
        for (unsigned i = 0; i < npar; i++) {
            const struct vidmm_swz_tune_key *k = &par[i].key;
            fprintf(f, "threads %s %u %ud %u %u %s %s %s %u %s %s\n", tiling_names[k->tiling], k->param, k->dims,
                    k->elem, k->size_class, dir_names[k->dir], vidmm_backend_to_string((enum vidmm_backend)k->backend),
                    strategy_names[k->strategy], par[i].threads, par[i].jobs ? "jobs" : "pool",
                    par[i].many ? "threads" : "alone");
        }
    }
    const bool bad = ferror(f) != 0 || par == NULL;
    free(par);
    if (fclose(f) != 0 || bad || rename(tmp, p) != 0) {
        const int e = errno;
        remove(tmp);
        return vidmm_swz_refuse(VIDMM_E_IO, __func__, "path", "%s: %s", p, strerror(e));
    }
    return 0;
}

void vidmm_swizzle_tune_clear(void)
{
    pthread_mutex_lock(&tune_lock);
    tune_count = 0;
    tune_next = 0;
    tune_file_tried = false;
    pthread_mutex_unlock(&tune_lock);
    vidmm_swz_par_clear();
}

#define STATS_V0_SIZE (offsetof(struct vidmm_swizzle_tune_stats, table_hits) + sizeof(uint64_t))

int vidmm_swizzle_tune_stats(struct vidmm_swizzle_tune_stats *st)
{
    if (st == NULL || st->size < STATS_V0_SIZE)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, "st", "NULL, or size below %zu (spec swizzle.h)",
                                (size_t)STATS_V0_SIZE);
    pthread_mutex_lock(&tune_lock);
    st->entries = tune_count;
    st->measurements = tune_measured;
    st->table_hits = tune_hits;
    pthread_mutex_unlock(&tune_lock);
    return 0;
}
