/* SPDX-License-Identifier: MIT */
/* tests/swizzle/test_plan_tune.c - measured swizzle plans (issue 26, include/vidmm/swizzle.h
 * "Measured plans"): every walk the measurement can pick, forced one at a time, and every
 * measured plan copy the bytes of the scalar reference, on every backend the CPU has, every
 * layout kind, element sizes 1 to 16, both directions, subresource and whole-surface plans, one
 * thread and several, with canaries past both buffers; unmeasured plans keep today's walk and
 * measure nothing; a second plan of a kind measures nothing; the table's file round-trips, a
 * malformed file or one from another CPU model is refused with its code and changes nothing;
 * the option's file is loaded by the first measured plan; refusals change nothing; plans made
 * on several threads at once share the table. No timing is asserted. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "t_helpers.h"
#include "vidmm/swizzle.h"

#define T_TIMEOUT 300
#define CANARY 64
#define CANARY_BYTE 0xC5
/* A short budget: the tests check what is chosen and copied, never how fast. */
#define T_BUDGET (2u * 1000 * 1000)

struct tcase {
    const char *name;
    enum vidmm_tiling tiling;
    uint32_t flags, amd_mode, unit;
    uint32_t w, h, d, elem, mips, layers;
    bool equation;
};

static const struct tcase cases[] = {
    { "linear", VIDMM_TILING_LINEAR, 0, 0, 0, 300, 70, 1, 4, 3, 2, false },
    { "block_linear", VIDMM_TILING_BLOCK_LINEAR, 0, 0, 0, 256, 200, 1, 4, 4, 2, false },
    { "block_linear_16", VIDMM_TILING_BLOCK_LINEAR, 0, 0, 0, 128, 96, 1, 16, 2, 1, false },
    { "block_linear_3d", VIDMM_TILING_BLOCK_LINEAR, 0, 0, 0, 64, 40, 24, 4, 1, 1, false },
    { "intel_x", VIDMM_TILING_INTEL_X, 0, 0, 0, 1000, 70, 1, 1, 1, 1, false },
    { "intel_y", VIDMM_TILING_INTEL_Y, 0, 0, 0, 1024, 96, 1, 1, 1, 1, false },
    { "intel_y_bit6", VIDMM_TILING_INTEL_Y, VIDMM_TILING_FLAG_BIT6, 0, 0, 1024, 100, 1, 1, 1, 1, false },
    { "intel_4", VIDMM_TILING_INTEL_4, 0, 0, 0, 896, 128, 1, 1, 1, 1, false },
    { "d3d_4k", VIDMM_TILING_D3D_STD_4K, 0, 0, 0, 256, 96, 1, 4, 1, 2, false },
    { "d3d_64k", VIDMM_TILING_D3D_STD_64K, 0, 0, 0, 384, 256, 1, 4, 1, 1, false },
    { "d3d_64k_16", VIDMM_TILING_D3D_STD_64K, 0, 0, 0, 128, 128, 1, 16, 1, 1, false },
    { "d3d_64k_3d", VIDMM_TILING_D3D_STD_64K, 0, 0, 0, 64, 64, 8, 4, 1, 1, false },
    { "amd_64k_s_chain", VIDMM_TILING_AMD_GFX10, 0, 9, 0, 300, 200, 1, 4, 6, 2, false },
    { "amd_64k_r_x", VIDMM_TILING_AMD_GFX10, 0, 27, 0, 256, 256, 1, 4, 1, 1, false },
    { "equation", VIDMM_TILING_EQUATION, 0, 0, 0, 512, 256, 1, 4, 1, 1, true },
    { "morton", VIDMM_TILING_MORTON, 0, 0, 0, 192, 128, 1, 4, 3, 1, false },
    { "morton_8", VIDMM_TILING_MORTON, 0, 0, 0, 128, 128, 1, 8, 1, 1, false },
    { "morton_16", VIDMM_TILING_MORTON, 0, 0, 0, 128, 64, 1, 16, 1, 1, false },
    { "morton_3d", VIDMM_TILING_MORTON, 0, 0, 0, 32, 32, 16, 4, 1, 1, false },
    { "morton_npot_unit", VIDMM_TILING_MORTON, 0, 0, 0, 64, 64, 1, 12, 1, 1, false },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static const enum vidmm_backend backends[] = { VIDMM_BACKEND_SCALAR, VIDMM_BACKEND_SSE2, VIDMM_BACKEND_AVX2,
                                               VIDMM_BACKEND_AVX512, VIDMM_BACKEND_NEON };

/* The D3D 64 KB 32 bpp table as a caller equation (tiling.md 5.2). */
static void d3d_equation(struct vidmm_equation *eq)
{
    static const char order[16][2] = { { 'x', 0 }, { 'x', 1 }, { 'x', 2 }, { 'x', 3 }, { 'y', 0 }, { 'y', 1 },
                                       { 'y', 2 }, { 'y', 3 }, { 'y', 4 }, { 'x', 4 }, { 'y', 5 }, { 'x', 5 },
                                       { 'y', 6 }, { 'x', 6 }, { 'y', 7 }, { 'x', 7 } };
    memset(eq, 0, sizeof(*eq));
    eq->bits = 16;
    for (int i = 0; i < 16; i++)
        eq->term[i][0] = (struct vidmm_eq_term){ order[i][0] == 'x' ? VIDMM_EQ_X : VIDMM_EQ_Y,
                                                 (uint8_t)order[i][1] };
}

static struct vidmm_equation the_eq;

static void describe(const struct tcase *c, struct vidmm_tile_layout *l, struct vidmm_surface_desc *s)
{
    *l = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT(c->tiling);
    l->flags = c->flags;
    l->amd_swizzle_mode = c->amd_mode;
    l->swizzle_unit = c->unit;
    if (c->equation) {
        d3d_equation(&the_eq);
        l->equation = &the_eq;
    }
    memset(s, 0, sizeof(*s));
    s->size = sizeof(*s);
    s->width = c->w;
    s->height = c->h;
    s->depth = c->d;
    s->element_bytes = c->elem;
    s->block_width = s->block_height = 1;
    s->mip_levels = c->mips;
    s->array_layers = c->layers;
}

static struct vidmm_kernel_opts measure_opts(enum vidmm_backend b)
{
    struct vidmm_kernel_opts o = t_opts(b, VIDMM_STRATEGY_AUTO);
    o.flags = VIDMM_PLAN_MEASURE;
    return o;
}

static struct vidmm_swizzle_tune_stats stats(void)
{
    struct vidmm_swizzle_tune_stats st = { .size = sizeof(st) };
    cr_assert_eq(vidmm_swizzle_tune_stats(&st), 0);
    return st;
}

static struct vidmm_swizzle_plan_info info_of(const vidmm_swizzle_plan *p)
{
    struct vidmm_swizzle_plan_info i = { .size = sizeof(i) };
    cr_assert_eq(vidmm_swizzle_plan_info(p, &i), 0);
    return i;
}

/* ---------------------------------------------------------------------------------------------
 * Buffers with canaries: 'off' bytes into a 64-byte aligned allocation, CANARY bytes of
 * CANARY_BYTE after the end (and before the start when off > 0).
 * ------------------------------------------------------------------------------------------- */
struct buf {
    unsigned char *base, *p;
    size_t n, off;
};

static void buf_init(struct buf *b, size_t n, size_t off)
{
    b->n = n;
    b->off = off;
    b->base = aligned_alloc(64, (off + n + CANARY + 63) / 64 * 64);
    cr_assert_not_null(b->base);
    memset(b->base, CANARY_BYTE, off + n + CANARY);
    b->p = b->base + off;
}

static void buf_check(const struct buf *b, const char *what)
{
    cr_assert_eq(t_find_not(b->base, b->off, CANARY_BYTE), -1, "%s: a byte before the buffer changed", what);
    cr_assert_eq(t_find_not(b->p + b->n, CANARY, CANARY_BYTE), -1, "%s: a byte past the buffer changed", what);
}

/* The reference bytes of case 'c' (subresource mip 0 / layer 0, or the whole surface): the
 * scalar backend's default walk, both directions. */
struct ref {
    uint64_t tsz, lsz;
    unsigned char *lin;    /* the source of the swizzle */
    unsigned char *tiled;  /* the swizzle's result over a tiled buffer of T_SENTINEL */
    unsigned char *back;   /* the deswizzle of 'tiled' over a linear buffer of 0x3C */
};

static void ref_make(const struct tcase *c, bool whole, struct ref *r)
{
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    struct vidmm_swizzle_plan_info in = { .size = sizeof(in) };
    vidmm_swizzle_plan *p;
    describe(c, &l, &s);
    struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, whole ? VIDMM_SWIZZLE_PLAN_SURFACE : 0, 0, &o, &p), 0, "%s",
                 c->name);
    cr_assert_eq(vidmm_swizzle_plan_info(p, &in), 0);
    r->tsz = in.tiled_size;
    r->lsz = in.linear_size;
    r->lin = malloc(r->lsz);
    r->tiled = malloc(r->tsz);
    r->back = malloc(r->lsz);
    cr_assert(r->lin && r->tiled && r->back);
    struct t_rng rng;
    t_rng_init(&rng, 26);
    t_rng_bytes(&rng, r->lin, r->lsz);
    memset(r->tiled, T_SENTINEL, r->tsz);
    memset(r->back, 0x3C, r->lsz);
    const size_t row = whole ? 0 : (size_t)in.width * c->elem, slice = whole ? 0 : row * in.height;
    cr_assert_eq(vidmm_swizzle_plan_swizzle(p, NULL, r->tiled, r->tsz, r->lin, r->lsz, row, slice), 0);
    cr_assert_eq(vidmm_swizzle_plan_deswizzle(p, NULL, r->tiled, r->tsz, r->back, r->lsz, row, slice), 0);
    vidmm_swizzle_plan_destroy(p);
}

static void ref_free(struct ref *r)
{
    free(r->lin);
    free(r->tiled);
    free(r->back);
}

/* check_plan() copies the whole of 'p' both ways (the tiled buffer 'toff' bytes off a line) and
 * compares with the reference. */
static void check_plan(const vidmm_swizzle_plan *p, const struct tcase *c, bool whole, const struct ref *r,
                       size_t toff, const char *what)
{
    struct buf t, lb;
    const struct vidmm_swizzle_plan_info in = info_of(p);
    const size_t row = whole ? 0 : (size_t)in.width * c->elem, slice = whole ? 0 : row * in.height;
    buf_init(&t, r->tsz, toff);
    buf_init(&lb, r->lsz, 0);
    memset(t.p, T_SENTINEL, r->tsz);
    memset(lb.p, 0x3C, r->lsz);
    cr_assert_eq(vidmm_swizzle_plan_swizzle(p, NULL, t.p, r->tsz, r->lin, r->lsz, row, slice), 0, "%s", what);
    ptrdiff_t d = t_find_diff(t.p, r->tiled, r->tsz);
    cr_assert_eq(d, -1, "%s: swizzle: tiled byte %td differs from the scalar reference", what, d);
    cr_assert_eq(vidmm_swizzle_plan_deswizzle(p, NULL, t.p, r->tsz, lb.p, r->lsz, row, slice), 0, "%s", what);
    d = t_find_diff(lb.p, r->back, r->lsz);
    cr_assert_eq(d, -1, "%s: deswizzle: linear byte %td differs from the scalar reference", what, d);
    buf_check(&t, what);
    buf_check(&lb, what);
    free(t.base);
    free(lb.base);
}

/* ---------------------------------------------------------------------------------------------
 * Bytes.
 * ------------------------------------------------------------------------------------------- */

/* Every walk of every plan, forced one at a time, and the measured plan: the reference's bytes. */
static void every_walk(bool whole)
{
    char what[160];
    unsigned tested = 0, walks = 0, simd = 0;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        const struct tcase *c = &cases[ci];
        if (whole && c->mips == 1 && c->layers == 1)
            continue;
        struct ref r;
        ref_make(c, whole, &r);
        for (size_t bi = 0; bi < sizeof(backends) / sizeof(backends[0]); bi++) {
            const enum vidmm_backend b = backends[bi];
            if (!vidmm_backend_supported(b))
                continue; /* reported by the per-backend tests below */
            struct vidmm_tile_layout l;
            struct vidmm_surface_desc s;
            vidmm_swizzle_plan *p;
            describe(c, &l, &s);
            struct vidmm_kernel_opts o = t_opts(b, VIDMM_STRATEGY_AUTO);
            cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, whole ? VIDMM_SWIZZLE_PLAN_SURFACE : 0, 0, &o, &p), 0);
            for (int dir = 0; dir < 2; dir++) {
                uint32_t n = 0;
                cr_assert_eq(vidmm_swizzle_plan_walk_candidates(p, dir == 1, &n), 0);
                cr_assert_geq(n, 1u);
                if (b == VIDMM_BACKEND_SCALAR)
                    cr_assert_eq(n, 1u, "%s: the reference walk has no alternatives", c->name);
                else
                    simd++;
                walks += n;
                for (uint32_t k = 0; k < n; k++) {
                    cr_assert_eq(vidmm_swizzle_plan_force_walk(p, dir == 1, k), 0);
                    for (size_t toff = 0; toff <= 16; toff += 16) {
                        snprintf(what, sizeof(what), "%s %s %s walk %u of %u, tiled +%zu", c->name,
                                 vidmm_backend_to_string(b), dir ? "deswizzle" : "swizzle", k, n, toff);
                        check_plan(p, c, whole, &r, toff, what);
                    }
                    /* On several threads (bands of the forced walk). */
                    struct vidmm_swizzle_threads th = VIDMM_SWIZZLE_THREADS_INIT;
                    th.threads = 3;
                    th.min_bytes = 1;
                    cr_assert_eq(vidmm_swizzle_plan_set_threads(p, &th), 0);
                    snprintf(what, sizeof(what), "%s %s %s walk %u of %u, 3 threads", c->name,
                             vidmm_backend_to_string(b), dir ? "deswizzle" : "swizzle", k, n);
                    check_plan(p, c, whole, &r, 0, what);
                    cr_assert_eq(vidmm_swizzle_plan_set_threads(p, NULL), 0);
                }
                cr_assert_eq(vidmm_swizzle_plan_force_walk(p, dir == 1, 0), 0);
                cr_assert_eq(vidmm_swizzle_plan_force_walk(p, dir == 1, n), VIDMM_E_INVALID_ARG);
            }
            vidmm_swizzle_plan_destroy(p);
            /* The measured plan. */
            struct vidmm_kernel_opts mo = measure_opts(b);
            cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, whole ? VIDMM_SWIZZLE_PLAN_SURFACE : 0, 0, &mo, &p), 0);
            const struct vidmm_swizzle_plan_info in = info_of(p);
            cr_assert(in.tune_source == VIDMM_SWIZZLE_TUNE_MEASURED || in.tune_source == VIDMM_SWIZZLE_TUNE_TABLE,
                      "%s: tune_source %d", c->name, (int)in.tune_source);
            snprintf(what, sizeof(what), "%s %s measured", c->name, vidmm_backend_to_string(b));
            check_plan(p, c, whole, &r, 0, what);
            check_plan(p, c, whole, &r, 16, what);
            vidmm_swizzle_plan_destroy(p);
            tested++;
        }
        ref_free(&r);
    }
    cr_assert_gt(tested, 0u);
    /* The scalar backend has one walk (the reference): alternatives come with a SIMD backend,
     * which a scalar-only build (VIDMM_SCALAR_ONLY) does not have. */
    if (simd > 0)
        cr_assert_gt(walks, tested * 2, "no case had a walk besides the default");
}

Test(tune, every_walk_exact_subresource, .timeout = T_TIMEOUT)
{
    every_walk(false);
}

Test(tune, every_walk_exact_whole_surface, .timeout = T_TIMEOUT)
{
    every_walk(true);
}

/* One test per SIMD backend, so a backend this CPU lacks is reported as skipped rather than
 * passing silently: its measured plans of a few layouts against the reference. */
static void backend_measured(enum vidmm_backend b)
{
    t_require_backend(b);
    static const char *const names[] = { "block_linear", "intel_y", "d3d_64k_16", "morton" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct tcase *c = NULL;
        for (size_t ci = 0; ci < N_CASES; ci++)
            if (strcmp(cases[ci].name, names[i]) == 0)
                c = &cases[ci];
        cr_assert_not_null(c);
        struct ref r;
        ref_make(c, false, &r);
        struct vidmm_tile_layout l;
        struct vidmm_surface_desc s;
        vidmm_swizzle_plan *p;
        describe(c, &l, &s);
        struct vidmm_kernel_opts mo = measure_opts(b);
        cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &mo, &p), 0);
        cr_assert_eq(info_of(p).backend, b);
        check_plan(p, c, false, &r, 0, c->name);
        vidmm_swizzle_plan_destroy(p);
        ref_free(&r);
    }
}

Test(tune, measured_sse2, .timeout = T_TIMEOUT) { backend_measured(VIDMM_BACKEND_SSE2); }
Test(tune, measured_avx2, .timeout = T_TIMEOUT) { backend_measured(VIDMM_BACKEND_AVX2); }
Test(tune, measured_avx512, .timeout = T_TIMEOUT) { backend_measured(VIDMM_BACKEND_AVX512); }
Test(tune, measured_neon, .timeout = T_TIMEOUT) { backend_measured(VIDMM_BACKEND_NEON); }

/* A plan larger than the streaming threshold (a cold band is measured) and its bytes. */
Test(tune, measured_beyond_the_threshold, .timeout = T_TIMEOUT)
{
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 256 * 1024), 0);
    vidmm_kernels_reset();
    const struct tcase c = { "block_linear_1m", VIDMM_TILING_BLOCK_LINEAR, 0, 0, 0, 512, 512, 1, 4, 1, 1, false };
    struct ref r;
    ref_make(&c, false, &r);
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    vidmm_swizzle_plan *p;
    describe(&c, &l, &s);
    struct vidmm_kernel_opts mo = measure_opts(VIDMM_BACKEND_AUTO);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &mo, &p), 0);
    cr_assert_eq(info_of(p).tune_source, VIDMM_SWIZZLE_TUNE_MEASURED);
    check_plan(p, &c, false, &r, 0, c.name);
    vidmm_swizzle_plan_destroy(p);
    ref_free(&r);
}

/* ---------------------------------------------------------------------------------------------
 * What is measured, and when.
 * ------------------------------------------------------------------------------------------- */

/* Plans without the flag: today's walk, nothing measured, forcing walk 0 changes nothing. */
Test(tune, default_plans_keep_todays_walk, .timeout = T_TIMEOUT)
{
    const struct vidmm_swizzle_tune_stats before = stats();
    for (size_t ci = 0; ci < N_CASES; ci++) {
        struct vidmm_tile_layout l;
        struct vidmm_surface_desc s;
        vidmm_swizzle_plan *p;
        describe(&cases[ci], &l, &s);
        cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &p), 0);
        const struct vidmm_swizzle_plan_info a = info_of(p);
        cr_assert_eq(a.tune_source, VIDMM_SWIZZLE_TUNE_DEFAULT, "%s", cases[ci].name);
        cr_assert_eq(vidmm_swizzle_plan_force_walk(p, false, 0), 0);
        cr_assert_eq(vidmm_swizzle_plan_force_walk(p, true, 0), 0);
        const struct vidmm_swizzle_plan_info b = info_of(p);
        cr_assert_eq(b.swizzle_walk, a.swizzle_walk, "%s", cases[ci].name);
        cr_assert_eq(b.deswizzle_walk, a.deswizzle_walk, "%s", cases[ci].name);
        cr_assert_eq(b.tune_source, VIDMM_SWIZZLE_TUNE_DEFAULT);
        vidmm_swizzle_plan_destroy(p);
    }
    /* The walks the rules give for known kinds (swizzle_walk.c choose_walk()): a block-linear
     * surface within the cache walks its tiles with ordinary stores; the scalar backend walks by
     * reference. */
    const struct tcase bl = { "bl", VIDMM_TILING_BLOCK_LINEAR, 0, 0, 0, 256, 256, 1, 4, 1, 1, false };
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    vidmm_swizzle_plan *p;
    describe(&bl, &l, &s);
    struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), 0);
    cr_assert_eq(info_of(p).swizzle_walk, VIDMM_SWIZZLE_WALK_REFERENCE);
    cr_assert_eq(info_of(p).deswizzle_walk, VIDMM_SWIZZLE_WALK_REFERENCE);
    vidmm_swizzle_plan_destroy(p);
    if (vidmm_backend_active() != VIDMM_BACKEND_SCALAR) {
        cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &p), 0);
        cr_assert_eq(info_of(p).swizzle_walk, VIDMM_SWIZZLE_WALK_TILES);
        cr_assert_eq(info_of(p).deswizzle_walk, VIDMM_SWIZZLE_WALK_TILES);
        vidmm_swizzle_plan_destroy(p);
    }
    const struct vidmm_swizzle_tune_stats after = stats();
    cr_assert_eq(after.measurements, before.measurements, "an unmeasured plan measured");
    cr_assert_eq(after.entries, before.entries);
}

/* The second measured plan of a kind measures nothing: the table serves it. */
Test(tune, second_plan_measures_nothing, .timeout = T_TIMEOUT)
{
    const struct tcase *c = &cases[1]; /* block-linear */
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    vidmm_swizzle_plan *p, *q;
    describe(c, &l, &s);
    struct vidmm_kernel_opts mo = measure_opts(VIDMM_BACKEND_AUTO);
    const struct vidmm_swizzle_tune_stats s0 = stats();
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &mo, &p), 0);
    const struct vidmm_swizzle_tune_stats s1 = stats();
    cr_assert_eq(info_of(p).tune_source, VIDMM_SWIZZLE_TUNE_MEASURED);
    cr_assert_eq(s1.measurements, s0.measurements + 2, "one measurement per direction");
    cr_assert_eq(s1.entries, s0.entries + 2);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 1, &mo, &q), 0); /* same kind, another layer */
    const struct vidmm_swizzle_tune_stats s2 = stats();
    cr_assert_eq(s2.measurements, s1.measurements, "the second plan of the kind measured");
    cr_assert_eq(s2.table_hits, s1.table_hits + 2);
    const struct vidmm_swizzle_plan_info a = info_of(p), b = info_of(q);
    cr_assert_eq(b.tune_source, VIDMM_SWIZZLE_TUNE_TABLE);
    cr_assert_eq(a.swizzle_walk, b.swizzle_walk);
    cr_assert_eq(a.deswizzle_walk, b.deswizzle_walk);
    /* Another kind (another element size) measures again. */
    vidmm_swizzle_plan_destroy(q);
    s.element_bytes = 8;
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &mo, &q), 0);
    cr_assert_eq(stats().measurements, s2.measurements + 2);
    /* An explicit measurement measures even a kind in the table. */
    cr_assert_eq(vidmm_swizzle_plan_measure(p, T_BUDGET), 0);
    cr_assert_eq(stats().measurements, s2.measurements + 4);
    cr_assert_eq(info_of(p).tune_source, VIDMM_SWIZZLE_TUNE_MEASURED);
    vidmm_swizzle_plan_destroy(p);
    vidmm_swizzle_plan_destroy(q);
}

/* ---------------------------------------------------------------------------------------------
 * The file.
 * ------------------------------------------------------------------------------------------- */

static void tmp_path(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/vidmm_tune_%ld_%s.txt", (long)getpid(), tag);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, true);
    cr_assert_eq(fclose(f), 0);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char *buf = calloc(1, 1 << 16);
    cr_assert_not_null(buf);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const char *this_cpu(void)
{
    static struct vidmm_cpu_info info = { .size = sizeof(info) };
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    return info.model[0] != '\0' ? info.model : info.vendor[0] != '\0' ? info.vendor : "unknown";
}

/* Measures two kinds (block-linear, Morton) so the table holds four winners. */
static void fill_table(void)
{
    for (int i = 0; i < 2; i++) {
        struct vidmm_tile_layout l;
        struct vidmm_surface_desc s;
        vidmm_swizzle_plan *p;
        describe(&cases[i == 0 ? 1 : 15], &l, &s);
        cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &p), 0);
        cr_assert_eq(vidmm_swizzle_plan_measure(p, T_BUDGET), 0);
        vidmm_swizzle_plan_destroy(p);
    }
}

Test(tune, save_load_round_trip, .timeout = T_TIMEOUT)
{
    char path[128];
    tmp_path(path, sizeof(path), "rt");
    fill_table();
    cr_assert_eq(stats().entries, 4u);
    cr_assert_eq(vidmm_swizzle_tune_save(path), 0);
    char *text = read_file(path);
    cr_assert_eq(strncmp(text, "vidmm-swizzle-tune 2\ncpu ", 25), 0, "header: %s", text);
    cr_assert_eq(strncmp(text + 25, this_cpu(), strlen(this_cpu())), 0);
    cr_assert_not_null(strstr(text, "\nblock_linear "));
    cr_assert_not_null(strstr(text, "\nmorton "));

    /* Plans of the two kinds as measured, then from the reloaded table. */
    struct vidmm_swizzle_plan_info before[2];
    struct vidmm_kernel_opts mo = measure_opts(VIDMM_BACKEND_AUTO);
    for (int i = 0; i < 2; i++) {
        struct vidmm_tile_layout l;
        struct vidmm_surface_desc s;
        vidmm_swizzle_plan *p;
        describe(&cases[i == 0 ? 1 : 15], &l, &s);
        cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &mo, &p), 0);
        before[i] = info_of(p);
        cr_assert_eq(before[i].tune_source, VIDMM_SWIZZLE_TUNE_TABLE);
        vidmm_swizzle_plan_destroy(p);
    }
    vidmm_swizzle_tune_clear();
    cr_assert_eq(stats().entries, 0u);
    cr_assert_eq(vidmm_swizzle_tune_load(path), 0);
    cr_assert_eq(stats().entries, 4u);
    const uint64_t measured = stats().measurements;
    for (int i = 0; i < 2; i++) {
        struct vidmm_tile_layout l;
        struct vidmm_surface_desc s;
        vidmm_swizzle_plan *p;
        describe(&cases[i == 0 ? 1 : 15], &l, &s);
        cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &mo, &p), 0);
        const struct vidmm_swizzle_plan_info in = info_of(p);
        cr_assert_eq(in.tune_source, VIDMM_SWIZZLE_TUNE_TABLE);
        cr_assert_eq(in.swizzle_walk, before[i].swizzle_walk);
        cr_assert_eq(in.deswizzle_walk, before[i].deswizzle_walk);
        vidmm_swizzle_plan_destroy(p);
    }
    cr_assert_eq(stats().measurements, measured, "a plan measured with its kind loaded");
    /* Saved again: the same text. */
    char path2[128];
    tmp_path(path2, sizeof(path2), "rt2");
    cr_assert_eq(vidmm_swizzle_tune_save(path2), 0);
    char *text2 = read_file(path2);
    cr_assert_str_eq(text2, text);
    /* Loading twice replaces, never duplicates. */
    cr_assert_eq(vidmm_swizzle_tune_load(path), 0);
    cr_assert_eq(stats().entries, 4u);
    free(text);
    free(text2);
    remove(path);
    remove(path2);
}

Test(tune, malformed_files_change_nothing, .timeout = T_TIMEOUT)
{
    char path[128], head[160], body[1024];
    tmp_path(path, sizeof(path), "bad");
    fill_table();
    char saved[128];
    tmp_path(saved, sizeof(saved), "saved");
    cr_assert_eq(vidmm_swizzle_tune_save(saved), 0);
    char *want = read_file(saved);
    snprintf(head, sizeof(head), "vidmm-swizzle-tune 1\ncpu %s\n", this_cpu());
    const char *good = "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as off 1.100\n";
    static const char *const bad_lines[] = {
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as off\n",           /* a word short */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as off 1.1 x\n",     /* a word too many */
        "d3d_65k 0 2d 4 20 swizzle sse2 auto on none as off 1.1\n",       /* tiling */
        "d3d_64k -1 2d 4 20 swizzle sse2 auto on none as off 1.1\n",      /* param */
        "d3d_64k 0 4d 4 20 swizzle sse2 auto on none as off 1.1\n",       /* dims */
        "d3d_64k 0 2d 0 20 swizzle sse2 auto on none as off 1.1\n",       /* elem 0 */
        "d3d_64k 0 2d 17 20 swizzle sse2 auto on none as off 1.1\n",      /* elem 17 */
        "d3d_64k 0 2d 4 64 swizzle sse2 auto on none as off 1.1\n",       /* size class */
        "d3d_64k 0 2d 4 20 twizzle sse2 auto on none as off 1.1\n",       /* direction */
        "d3d_64k 0 2d 4 20 swizzle auto auto on none as off 1.1\n",       /* backend AUTO */
        "d3d_64k 0 2d 4 20 swizzle mmx auto on none as off 1.1\n",        /* backend */
        "d3d_64k 0 2d 4 20 swizzle sse2 libc on none as off 1.1\n",       /* strategy */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto yes none as off 1.1\n",      /* big */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on some as off 1.1\n",       /* strips */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on none maybe off 1.1\n",    /* grouped */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as offf 1.1\n",      /* pairs_nt */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as off -1\n",        /* gain */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as off 1.1x\n",      /* gain */
        "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as off nan\n",       /* gain */
        "d3d_64k 4294967296 2d 4 20 swizzle sse2 auto on none as off 1.1\n", /* param > 32 bits */
    };
    for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
        /* A good line first: it must not be taken either. */
        snprintf(body, sizeof(body), "%s%s%s", head, good, bad_lines[i]);
        write_file(path, body);
        cr_assert_eq(vidmm_swizzle_tune_load(path), VIDMM_E_INVALID_ARG, "line %zu: %s", i, bad_lines[i]);
    }
    /* Threshold lines (format 2 only). */
    char head2[160];
    snprintf(head2, sizeof(head2), "vidmm-swizzle-tune 2\ncpu %s\n", this_cpu());
    const char *good_thr = "threads block_linear 0 2d 4 19 swizzle avx2 auto 2 pool threads\n";
    static const char *const bad_thr[] = {
        "threads block_linear 0 2d 4 19 swizzle avx2 auto 2 pool\n",           /* a word short */
        "threads block_linear 0 2d 4 19 swizzle avx2 auto 2 pool threads x\n", /* a word too many */
        "threads block_linear 0 2d 4 19 swizzle avx2 auto 1 pool threads\n",   /* one thread */
        "threads block_linear 0 2d 4 19 swizzle avx2 auto 257 pool threads\n", /* too many threads */
        "threads block_linear 0 2d 4 19 swizzle avx2 auto 2 pools threads\n",  /* pool|jobs */
        "threads block_linear 0 2d 4 19 swizzle avx2 auto 2 pool many\n",      /* alone|threads */
        "threads block_linear 0 2d 4 19 swizzle auto auto 2 pool threads\n",   /* backend AUTO */
        "threads block_linear 0 5d 4 19 swizzle avx2 auto 2 pool threads\n",   /* dims */
    };
    for (size_t i = 0; i < sizeof(bad_thr) / sizeof(bad_thr[0]); i++) {
        snprintf(body, sizeof(body), "%s%s%s%s", head2, good, good_thr, bad_thr[i]);
        write_file(path, body);
        cr_assert_eq(vidmm_swizzle_tune_load(path), VIDMM_E_INVALID_ARG, "threshold line %zu: %s", i, bad_thr[i]);
    }
    /* A threshold line in a format-1 file is not one of its lines. */
    snprintf(body, sizeof(body), "%s%s%s", head, good, good_thr);
    write_file(path, body);
    cr_assert_eq(vidmm_swizzle_tune_load(path), VIDMM_E_INVALID_ARG, "a threshold line in a format-1 file");
    static const char *const bad_heads[] = {
        "",                                        /* empty */
        "vidmm-swizzle-tune 3\ncpu x\n",           /* another format version */
        "vidmm-swizzle-tune 1\n",                  /* no cpu line */
        "vidmm-swizzle-tune 1\nprocessor x\n",     /* not a cpu line */
        "vidmm swizzle tune 1\ncpu x\n",
    };
    for (size_t i = 0; i < sizeof(bad_heads) / sizeof(bad_heads[0]); i++) {
        write_file(path, bad_heads[i]);
        cr_assert_eq(vidmm_swizzle_tune_load(path), VIDMM_E_INVALID_ARG, "header %zu", i);
    }
    /* A line longer than the reader takes. */
    char longl[600];
    memset(longl, 'a', sizeof(longl) - 2);
    longl[sizeof(longl) - 2] = '\n';
    longl[sizeof(longl) - 1] = '\0';
    snprintf(body, sizeof(body), "%s%s", head, longl);
    write_file(path, body);
    cr_assert_eq(vidmm_swizzle_tune_load(path), VIDMM_E_INVALID_ARG);
    /* No file at all. */
    cr_assert_eq(vidmm_swizzle_tune_load("/nonexistent/vidmm/tune.txt"), VIDMM_E_IO);
    /* The table as it was. */
    cr_assert_eq(stats().entries, 4u);
    cr_assert_eq(vidmm_swizzle_tune_save(saved), 0);
    char *got = read_file(saved);
    cr_assert_str_eq(got, want);
    /* And a good file with comments and blank lines loads. */
    snprintf(body, sizeof(body), "%s# a comment\n\n%s", head, good);
    write_file(path, body);
    cr_assert_eq(vidmm_swizzle_tune_load(path), 0);
    cr_assert_eq(stats().entries, 5u);
    free(want);
    free(got);
    remove(path);
    remove(saved);
}

Test(tune, file_from_another_cpu_is_refused, .timeout = T_TIMEOUT)
{
    char path[128];
    tmp_path(path, sizeof(path), "cpu");
    fill_table();
    write_file(path, "vidmm-swizzle-tune 1\ncpu Imaginary CPU 9000 @ 1.00GHz\n"
                     "d3d_64k 0 2d 4 20 swizzle sse2 auto on none as off 1.100\n");
    cr_assert_eq(vidmm_swizzle_tune_load(path), VIDMM_E_UNSUPPORTED);
    cr_assert_eq(stats().entries, 4u);
    remove(path);
}

/* VIDMM_SWIZZLE_TUNE_FILE: the first measured plan loads it (and measures nothing of its kinds);
 * save and load with NULL use it. */
Test(tune, option_names_the_file, .timeout = T_TIMEOUT)
{
    char path[128];
    tmp_path(path, sizeof(path), "opt");
    cr_assert_eq(vidmm_swizzle_tune_save(NULL), VIDMM_E_INVALID_ARG, "no path and no option");
    cr_assert_eq(vidmm_swizzle_tune_load(NULL), VIDMM_E_INVALID_ARG);
    fill_table();
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_SWIZZLE_TUNE_FILE, path), 0);
    cr_assert_eq(vidmm_swizzle_tune_save(NULL), 0);
    vidmm_swizzle_tune_clear();
    const uint64_t measured = stats().measurements;
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    vidmm_swizzle_plan *p;
    describe(&cases[1], &l, &s);
    struct vidmm_kernel_opts mo = measure_opts(VIDMM_BACKEND_AUTO);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &mo, &p), 0);
    cr_assert_eq(info_of(p).tune_source, VIDMM_SWIZZLE_TUNE_TABLE);
    cr_assert_eq(stats().measurements, measured);
    cr_assert_eq(stats().entries, 4u);
    vidmm_swizzle_plan_destroy(p);
    remove(path);
}

/* VIDMM_SWIZZLE_TUNE_FILE also serves plans made without VIDMM_PLAN_MEASURE: the file's winner
 * for their kind (here one rewritten to the streaming pair walk for the block-linear deswizzle, a
 * walk the rules never take for a surface this small), nothing measured, the reference's bytes;
 * a kind the file lacks keeps the rules, and without the option nothing is read. */
Test(tune, option_file_serves_default_plans, .timeout = T_TIMEOUT)
{
    if (vidmm_backend_active() == VIDMM_BACKEND_SCALAR)
        cr_skip_test("the scalar backend walks by reference: no winner to serve");
    char path[128];
    tmp_path(path, sizeof(path), "serve");
    fill_table();
    cr_assert_eq(vidmm_swizzle_tune_save(path), 0);
    vidmm_swizzle_tune_clear();
    /* The block-linear deswizzle's line, its knobs set to 'as as as on' (pairs_nt on). */
    char *text = read_file(path), out[1 << 14] = "";
    size_t used = 0;
    unsigned rewritten = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char tok[13][64];
        if (strncmp(line, "block_linear ", 13) == 0 && strstr(line, " deswizzle ") != NULL &&
            sscanf(line, "%63s %63s %63s %63s %63s %63s %63s %63s %63s %63s %63s %63s %63s", tok[0], tok[1], tok[2],
                   tok[3], tok[4], tok[5], tok[6], tok[7], tok[8], tok[9], tok[10], tok[11], tok[12]) == 13) {
            used += (size_t)snprintf(out + used, sizeof(out) - used, "%s %s %s %s %s %s %s %s as as as on %s\n",
                                     tok[0], tok[1], tok[2], tok[3], tok[4], tok[5], tok[6], tok[7], tok[12]);
            rewritten++;
        } else {
            used += (size_t)snprintf(out + used, sizeof(out) - used, "%s\n", line);
        }
        cr_assert_lt(used, sizeof(out));
    }
    free(text);
    cr_assert_eq(rewritten, 1u, "%u block-linear deswizzle lines in the saved table", rewritten);
    write_file(path, out);

    const struct tcase *c = &cases[1]; /* block-linear */
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    vidmm_swizzle_plan *p;
    describe(c, &l, &s);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &p), 0);
    cr_assert_eq(info_of(p).tune_source, VIDMM_SWIZZLE_TUNE_DEFAULT, "no option: the table was read");
    const enum vidmm_swizzle_walk rules = info_of(p).deswizzle_walk;
    vidmm_swizzle_plan_destroy(p);
    cr_assert_neq(rules, VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR, "the rules already stream here: nothing to tell apart");

    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_SWIZZLE_TUNE_FILE, path), 0);
    const uint64_t measured = stats().measurements;
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &p), 0);
    const struct vidmm_swizzle_plan_info in = info_of(p);
    cr_assert_eq(in.tune_source, VIDMM_SWIZZLE_TUNE_TABLE);
    cr_assert_eq(in.deswizzle_walk, VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR, "walk %d: not the file's", in.deswizzle_walk);
    struct ref r;
    ref_make(c, false, &r);
    check_plan(p, c, false, &r, 0, "block-linear, the file's walk");
    check_plan(p, c, false, &r, 16, "block-linear, the file's walk");
    ref_free(&r);
    vidmm_swizzle_plan_destroy(p);
    /* A kind the file does not hold: the rules. */
    describe(&cases[5], &l, &s); /* Intel Y */
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &p), 0);
    cr_assert_eq(info_of(p).tune_source, VIDMM_SWIZZLE_TUNE_DEFAULT);
    vidmm_swizzle_plan_destroy(p);
    cr_assert_eq(stats().measurements, measured, "a plan without the flag measured");
    remove(path);
}

/* ---------------------------------------------------------------------------------------------
 * Refusals.
 * ------------------------------------------------------------------------------------------- */
Test(tune, refusals_change_nothing, .timeout = T_TIMEOUT)
{
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    vidmm_swizzle_plan *p = (vidmm_swizzle_plan *)(uintptr_t)0x1234;
    describe(&cases[1], &l, &s);
    struct vidmm_kernel_opts o = measure_opts(VIDMM_BACKEND_AUTO);
    o.flags |= 1u << 7;
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), VIDMM_E_INVALID_ARG, "unknown flag");
    cr_assert_eq(p, (vidmm_swizzle_plan *)(uintptr_t)0x1234);
    cr_assert_eq(stats().measurements, 0u);
    /* Options of the 0.5 size: no flags field read. */
    o.size = offsetof(struct vidmm_kernel_opts, flags);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), 0);
    cr_assert_eq(info_of(p).tune_source, VIDMM_SWIZZLE_TUNE_DEFAULT);
    cr_assert_eq(stats().measurements, 0u);
    cr_assert_eq(vidmm_swizzle_plan_measure(NULL, 0), VIDMM_E_INVALID_ARG);
    uint32_t n = 77;
    cr_assert_eq(vidmm_swizzle_plan_walk_candidates(NULL, false, &n), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_swizzle_plan_walk_candidates(p, false, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(n, 77u);
    cr_assert_eq(vidmm_swizzle_plan_force_walk(NULL, false, 0), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_swizzle_plan_walk_candidates(p, false, &n), 0);
    const struct vidmm_swizzle_plan_info a = info_of(p);
    cr_assert_eq(vidmm_swizzle_plan_force_walk(p, false, n), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_swizzle_plan_force_walk(p, true, UINT32_MAX), VIDMM_E_INVALID_ARG);
    const struct vidmm_swizzle_plan_info b = info_of(p);
    cr_assert_eq(b.swizzle_walk, a.swizzle_walk);
    cr_assert_eq(b.tune_source, VIDMM_SWIZZLE_TUNE_DEFAULT);
    vidmm_swizzle_plan_destroy(p);
    struct vidmm_swizzle_tune_stats st = { .size = 4 };
    cr_assert_eq(vidmm_swizzle_tune_stats(&st), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_swizzle_tune_stats(NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_swizzle_tune_save("/nonexistent/vidmm/dir/tune.txt"), VIDMM_E_IO);
    /* An info struct of the 0.5 size: tune_source not written. */
    describe(&cases[1], &l, &s);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &p), 0);
    struct vidmm_swizzle_plan_info old;
    memset(&old, 0xAB, sizeof(old));
    old.size = offsetof(struct vidmm_swizzle_plan_info, tune_source);
    cr_assert_eq(vidmm_swizzle_plan_info(p, &old), 0);
    cr_assert_eq((unsigned)old.tune_source, 0xABABABABu);
    vidmm_swizzle_plan_destroy(p);
}

/* ---------------------------------------------------------------------------------------------
 * Threads: measured plans made at once share the table.
 * ------------------------------------------------------------------------------------------- */
struct mt_arg {
    int id;
    int bad;
};

static void *mt_main(void *a)
{
    struct mt_arg *m = a;
    for (int i = 0; i < 6; i++) {
        const struct tcase *c = &cases[(i + m->id) % 2 == 0 ? 1 : 15];
        struct vidmm_tile_layout l;
        struct vidmm_surface_desc s;
        struct vidmm_swizzle_plan_info in = { .size = sizeof(in) };
        vidmm_swizzle_plan *p;
        describe(c, &l, &s);
        l.equation = NULL;
        struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_AUTO, VIDMM_STRATEGY_AUTO);
        o.flags = VIDMM_PLAN_MEASURE;
        if (vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p) != 0) {
            m->bad++;
            continue;
        }
        if (vidmm_swizzle_plan_info(p, &in) != 0 ||
            (in.tune_source != VIDMM_SWIZZLE_TUNE_MEASURED && in.tune_source != VIDMM_SWIZZLE_TUNE_TABLE))
            m->bad++;
        vidmm_swizzle_plan_destroy(p);
    }
    return NULL;
}

Test(tune, plans_measured_on_many_threads, .timeout = T_TIMEOUT)
{
    pthread_t t[4];
    struct mt_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct mt_arg){ i, 0 };
        cr_assert_eq(pthread_create(&t[i], NULL, mt_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pthread_join(t[i], NULL), 0);
        cr_assert_eq(a[i].bad, 0, "thread %d", i);
    }
    const struct vidmm_swizzle_tune_stats st = stats();
    cr_assert_eq(st.entries, 4u, "two kinds, two directions");
    cr_assert_eq(st.measurements + st.table_hits, 4u * 6 * 2);
    cr_assert_geq(st.table_hits, 1u);
}
