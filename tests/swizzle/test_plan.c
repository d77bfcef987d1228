/* SPDX-License-Identifier: MIT */
/* tests/swizzle/test_plan.c - the contract of swizzle plans (include/vidmm/swizzle.h) beyond the
 * bytes they move, which test_reference.c's reference_plan_* suites check against the model on
 * every backend: refusals that change nothing, a plan independent of the descriptors it was made
 * from, the whole-surface form, the description a plan gives of itself, and one plan shared by
 * many threads at once (the same check runs under ThreadSanitizer in test_threads.c). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"

#define T_TIMEOUT 60

/* A block-linear 256x128 surface of 4-byte elements with 3 mips and 2 layers. */
static void bl_surface(struct vidmm_tile_layout *l, struct vidmm_surface_desc *s)
{
    *l = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    memset(s, 0, sizeof(*s));
    s->size = sizeof(*s);
    s->width = 256;
    s->height = 128;
    s->depth = 1;
    s->element_bytes = 4;
    s->block_width = s->block_height = 1;
    s->mip_levels = 3;
    s->array_layers = 2;
}

/* The D3D 64 KB 32 bpp table as a caller equation (tiling.md 5.2, MSB first
 * x7 y7 x6 y6 x5 y5 x4 y4 y3 y2 y1 y0 x3 x2 x1 x0, x in bytes). */
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

Test(plan, refusals_write_nothing, .timeout = T_TIMEOUT)
{
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    bl_surface(&l, &s);
    vidmm_swizzle_plan *p = (vidmm_swizzle_plan *)(uintptr_t)0x1234;

    cr_expect_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, NULL), VIDMM_E_INVALID_ARG);
    cr_expect_eq(vidmm_swizzle_plan_create(&l, &s, 3, 0, NULL, &p), VIDMM_E_INVALID_ARG, "mip past the chain");
    cr_expect_eq(vidmm_swizzle_plan_create(&l, &s, 0, 2, NULL, &p), VIDMM_E_INVALID_ARG, "layer past the array");
    cr_expect_eq(vidmm_swizzle_plan_create(&l, &s, VIDMM_SWIZZLE_PLAN_SURFACE, 1, NULL, &p), VIDMM_E_INVALID_ARG,
                 "a whole-surface plan names no layer");
    struct vidmm_surface_desc bad = s;
    bad.element_bytes = 0;
    cr_expect_eq(vidmm_swizzle_plan_create(&l, &bad, 0, 0, NULL, &p), VIDMM_E_INVALID_ARG);
    struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_NEON, VIDMM_STRATEGY_AUTO);
    if (!vidmm_backend_supported(VIDMM_BACKEND_NEON))
        cr_expect_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), VIDMM_E_UNSUPPORTED);
    o = t_opts(VIDMM_BACKEND_AUTO, VIDMM_STRATEGY_MOVDIR64B);
    cr_expect_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), VIDMM_E_UNSUPPORTED);
    o.size = 3;
    cr_expect_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), VIDMM_E_INVALID_ARG, "options too small");
    cr_expect_eq(p, (vidmm_swizzle_plan *)(uintptr_t)0x1234, "a refused create wrote '*plan'");

    /* Copies through a good plan that break a rule: nothing written. */
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 1, 1, NULL, &p), 0);
    uint64_t tsz;
    cr_assert_eq(vidmm_surface_tiled_size(&l, &s, &tsz), 0);
    unsigned char *tiled = malloc(tsz), *lin = malloc(128 * 64 * 4);
    cr_assert(tiled && lin);
    memset(tiled, T_SENTINEL, tsz);
    memset(lin, 0x5A, 128 * 64 * 4);
    const uint64_t sum = t_checksum(tiled, tsz);
    struct vidmm_box outside = { 100, 0, 0, 29, 1, 1 }; /* mip 1 is 128 wide */
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, &outside, tiled, tsz, lin, 128 * 64 * 4, 512, 0), VIDMM_E_INVALID_ARG);
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, NULL, tiled, tsz - 1, lin, 128 * 64 * 4, 512, 0), VIDMM_E_INVALID_ARG,
                 "tiled buffer one byte short");
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, NULL, tiled, tsz, lin, 128 * 64 * 4 - 1, 512, 0), VIDMM_E_INVALID_ARG,
                 "linear buffer one byte short");
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, NULL, tiled, tsz, lin, 128 * 64 * 4, 511, 0), VIDMM_E_INVALID_ARG,
                 "row pitch below a row");
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, NULL, tiled, tsz, tiled + 8, 128 * 64 * 4, 512, 0), VIDMM_E_OVERLAP);
    cr_expect_eq(vidmm_swizzle_plan_swizzle(NULL, NULL, tiled, tsz, lin, 128 * 64 * 4, 512, 0), VIDMM_E_INVALID_ARG);
    cr_expect_eq(t_checksum(tiled, tsz), sum, "a refused plan copy wrote the tiled buffer");
    cr_expect_eq(vidmm_swizzle_plan_deswizzle(p, &outside, tiled, tsz, lin, 128 * 64 * 4, 512, 0),
                 VIDMM_E_INVALID_ARG);
    cr_expect_eq(t_find_not(lin, 128 * 64 * 4, 0x5A), -1, "a refused plan deswizzle wrote the linear buffer");
    vidmm_swizzle_plan_destroy(p);
    vidmm_swizzle_plan_destroy(NULL);

    /* A whole-surface plan takes no box and no pitches. */
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &p), 0);
    uint64_t lsz;
    cr_assert_eq(vidmm_surface_linear_size(&l, &s, &lsz), 0);
    unsigned char *all = malloc(lsz);
    cr_assert(all);
    struct vidmm_box box = { 0, 0, 0, 1, 1, 1 };
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, &box, tiled, tsz, all, lsz, 0, 0), VIDMM_E_INVALID_ARG);
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, NULL, tiled, tsz, all, lsz, 1024, 0), VIDMM_E_INVALID_ARG);
    cr_expect_eq(vidmm_swizzle_plan_swizzle(p, NULL, tiled, tsz, all, lsz - 1, 0, 0), VIDMM_E_INVALID_ARG);
    cr_expect_eq(t_checksum(tiled, tsz), sum, "a refused whole-surface plan copy wrote the tiled buffer");
    vidmm_swizzle_plan_destroy(p);
    free(all);
    free(tiled);
    free(lin);
}

/* The plan keeps its own copy of the descriptors: freeing and rewriting them (the equation too)
 * after create changes nothing, and its copies equal the one-shot calls' with the originals. */
Test(plan, independent_of_its_descriptors, .timeout = T_TIMEOUT)
{
    struct vidmm_equation *eq = malloc(sizeof(*eq));
    struct vidmm_tile_layout *l = malloc(sizeof(*l));
    struct vidmm_surface_desc *s = malloc(sizeof(*s));
    cr_assert(eq && l && s);
    d3d_equation(eq);
    *l = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_EQUATION);
    l->equation = eq;
    memset(s, 0, sizeof(*s));
    s->size = sizeof(*s);
    s->width = 300;
    s->height = 200;
    s->depth = 1;
    s->element_bytes = 4;
    s->block_width = s->block_height = 1;
    s->mip_levels = 1;
    s->array_layers = 1;
    struct vidmm_tile_layout l0 = *l;
    struct vidmm_surface_desc s0 = *s;
    struct vidmm_equation eq0 = *eq;
    l0.equation = &eq0;

    vidmm_swizzle_plan *p;
    cr_assert_eq(vidmm_swizzle_plan_create(l, s, 0, 0, NULL, &p), 0);
    memset(eq, 0xFF, sizeof(*eq));
    memset(l, 0xFF, sizeof(*l));
    memset(s, 0xFF, sizeof(*s));
    free(eq);
    free(l);
    free(s);

    uint64_t tsz;
    cr_assert_eq(vidmm_surface_tiled_size(&l0, &s0, &tsz), 0);
    const size_t pitch = 300 * 4, lsz = pitch * 200;
    struct t_rng r;
    t_rng_init(&r, 77);
    unsigned char *lin = malloc(lsz), *a = calloc(1, tsz), *b = calloc(1, tsz), *back = malloc(lsz);
    cr_assert(lin && a && b && back);
    t_rng_bytes(&r, lin, lsz);
    struct vidmm_box box = { 33, 17, 0, 200, 150, 1 };
    cr_assert_eq(vidmm_swizzle_plan_swizzle(p, &box, a, tsz, lin, lsz, pitch, 0), 0);
    cr_assert_eq(vidmm_swizzle(&l0, &s0, 0, 0, &box, b, tsz, lin, lsz, pitch, 0), 0);
    cr_expect_eq(t_find_diff(a, b, tsz), -1, "the plan's swizzle differs from the one-shot call's");
    memset(back, 0, lsz);
    cr_assert_eq(vidmm_swizzle_plan_deswizzle(p, &box, a, tsz, back, lsz, pitch, 0), 0);
    for (uint32_t y = 0; y < box.height; y++)
        cr_expect_eq(memcmp(back + y * pitch, lin + y * pitch, box.width * 4), 0, "row %u did not come back", y);

    struct vidmm_swizzle_plan_info info = { .size = sizeof(info) };
    cr_assert_eq(vidmm_swizzle_plan_info(p, &info), 0);
    cr_expect_eq(info.width, 300);
    cr_expect_eq(info.height, 200);
    cr_expect_eq(info.depth, 1);
    cr_expect_eq(info.tiled_size, tsz);
    cr_expect_eq(info.linear_size, lsz);
    cr_expect_eq(info.run_bytes, 16, "x0..x3 are the low address bits: 16-byte runs");
    cr_expect_eq(info.backend, vidmm_backend_active());
    struct vidmm_swizzle_plan_info small = { .size = 8 };
    cr_expect_eq(vidmm_swizzle_plan_info(p, &small), VIDMM_E_INVALID_ARG);
    cr_expect_eq(vidmm_swizzle_plan_info(NULL, &info), VIDMM_E_INVALID_ARG);
    vidmm_swizzle_plan_destroy(p);
    free(lin);
    free(a);
    free(b);
    free(back);
}

/* What a plan says it runs: the scalar backend always the reference walk, the others a tile
 * walk for a layout with tile tables, and NONTEMPORAL asks for streaming stores. */
Test(plan, info_reports_the_walk, .timeout = T_TIMEOUT)
{
    struct vidmm_tile_layout l;
    struct vidmm_surface_desc s;
    bl_surface(&l, &s);
    vidmm_swizzle_plan *p;
    struct vidmm_swizzle_plan_info info = { .size = sizeof(info) };

    struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), 0);
    cr_assert_eq(vidmm_swizzle_plan_info(p, &info), 0);
    cr_expect_eq(info.backend, VIDMM_BACKEND_SCALAR);
    cr_expect_eq(info.swizzle_walk, VIDMM_SWIZZLE_WALK_REFERENCE);
    cr_expect_eq(info.deswizzle_walk, VIDMM_SWIZZLE_WALK_REFERENCE);
    vidmm_swizzle_plan_destroy(p);

    if (!vidmm_backend_supported(VIDMM_BACKEND_SSE2))
        cr_skip_test("this CPU or build has no SSE2 backend");
    o = t_opts(VIDMM_BACKEND_SSE2, VIDMM_STRATEGY_NONTEMPORAL);
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, &o, &p), 0);
    cr_assert_eq(vidmm_swizzle_plan_info(p, &info), 0);
    cr_expect_eq(info.backend, VIDMM_BACKEND_SSE2);
    cr_expect_eq(info.strategy, VIDMM_STRATEGY_NONTEMPORAL);
    cr_expect_eq(info.swizzle_walk, VIDMM_SWIZZLE_WALK_TILES_NT, "block-linear swizzle asked NONTEMPORAL: %d",
                 info.swizzle_walk);
    /* The GOB's deswizzle asked NONTEMPORAL streams its linear rows (the pair walk). */
    cr_expect_eq(info.deswizzle_walk, VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR,
                 "block-linear deswizzle asked NONTEMPORAL: %d", info.deswizzle_walk);
    vidmm_swizzle_plan_destroy(p);
}
