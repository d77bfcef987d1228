/* SPDX-License-Identifier: MIT */
/* tests/swizzle/test_args.c - the swizzle API's refusals: invalid descriptors, boxes, pitches,
 * buffers and options return VIDMM_E_INVALID_ARG, combinations the spec does not define return
 * VIDMM_E_UNSUPPORTED, overlapping buffers VIDMM_E_OVERLAP; and a refused call writes nothing
 * (not the size, not the info, not a byte of either buffer). Each check starts from a valid
 * call and changes one thing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"
#include "vidmm/swizzle.h"

/* Every check here takes microseconds; a library stuck in a loop fails fast instead of holding
 * CTest until its own limit. */
#define T_TIMEOUT 10
#define SIZE_SENTINEL 0x5A5A5A5A5A5A5A5Aull
#define TILED_FILL 0x3C
#define LINEAR_FILL 0xC3

/* ---------------------------------------------------------------------------------------------
 * Descriptors.
 * ------------------------------------------------------------------------------------------- */
struct desc {
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    struct vidmm_equation eq;
};

static void desc_init(struct desc *d, enum vidmm_tiling t, uint32_t w, uint32_t h, uint32_t depth, uint32_t e)
{
    memset(d, 0, sizeof(*d));
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(t);
    d->layout = l;
    d->surf.size = sizeof(d->surf);
    d->surf.width = w;
    d->surf.height = h;
    d->surf.depth = depth;
    d->surf.element_bytes = e;
    d->surf.block_width = d->surf.block_height = 1;
    d->surf.mip_levels = d->surf.array_layers = 1;
}

/* A 2D 64 KB-style equation: x0..x7 then y0..y7 (256 B x 256 rows). */
static void eq_simple(struct vidmm_equation *eq)
{
    memset(eq, 0, sizeof(*eq));
    eq->bits = 16;
    for (int i = 0; i < 8; i++) {
        eq->term[i][0] = (struct vidmm_eq_term){ VIDMM_EQ_X, (uint8_t)i };
        eq->term[8 + i][0] = (struct vidmm_eq_term){ VIDMM_EQ_Y, (uint8_t)i };
    }
}

static const char *rc_name(int rc)
{
    switch (rc) {
    case 0: return "0";
    case VIDMM_E_INVALID_ARG: return "VIDMM_E_INVALID_ARG";
    case VIDMM_E_UNSUPPORTED: return "VIDMM_E_UNSUPPORTED";
    case VIDMM_E_OVERLAP: return "VIDMM_E_OVERLAP";
    default: return vidmm_strerror(rc);
    }
}

/* The size queries and the subresource query on 'd' must all return one of want[0..nwant) and
 * leave their outputs alone. */
static void size_queries_fail(const struct desc *d, const int *want, int nwant, const char *what)
{
    uint64_t bytes = SIZE_SENTINEL;
    int rc = vidmm_surface_tiled_size(&d->layout, &d->surf, &bytes);
    bool ok = false;
    for (int i = 0; i < nwant; i++)
        ok |= rc == want[i];
    cr_expect(ok, "%s: vidmm_surface_tiled_size() returned %s, want %s%s%s", what, rc_name(rc), rc_name(want[0]),
              nwant > 1 ? " or " : "", nwant > 1 ? rc_name(want[1]) : "");
    cr_expect_eq(bytes, SIZE_SENTINEL, "%s: vidmm_surface_tiled_size() failed but wrote its result", what);
    bytes = SIZE_SENTINEL;
    rc = vidmm_surface_linear_size(&d->layout, &d->surf, &bytes);
    ok = false;
    for (int i = 0; i < nwant; i++)
        ok |= rc == want[i];
    cr_expect(ok, "%s: vidmm_surface_linear_size() returned %s, want %s", what, rc_name(rc), rc_name(want[0]));
    cr_expect_eq(bytes, SIZE_SENTINEL, "%s: vidmm_surface_linear_size() failed but wrote its result", what);
    struct vidmm_subresource_info info, before;
    memset(&info, 0x77, sizeof(info));
    info.size = sizeof(info);
    before = info;
    rc = vidmm_surface_subresource(&d->layout, &d->surf, 0, 0, &info);
    ok = false;
    for (int i = 0; i < nwant; i++)
        ok |= rc == want[i];
    cr_expect(ok, "%s: vidmm_surface_subresource() returned %s, want %s", what, rc_name(rc), rc_name(want[0]));
    cr_expect(memcmp(&info, &before, sizeof(info)) == 0, "%s: vidmm_surface_subresource() failed but wrote 'info'",
              what);
}

static void invalid(const struct desc *d, const char *what)
{
    const int want[] = { VIDMM_E_INVALID_ARG };
    size_queries_fail(d, want, 1, what);
}

static void unsupported(const struct desc *d, const char *what)
{
    const int want[] = { VIDMM_E_UNSUPPORTED };
    size_queries_fail(d, want, 1, what);
}

/* A refusal the spec leaves open between the two codes (a combination it does not define). */
static void refused(const struct desc *d, const char *what)
{
    const int want[] = { VIDMM_E_INVALID_ARG, VIDMM_E_UNSUPPORTED };
    size_queries_fail(d, want, 2, what);
}

static void valid(const struct desc *d, const char *what)
{
    uint64_t bytes = 0;
    int rc = vidmm_surface_tiled_size(&d->layout, &d->surf, &bytes);
    cr_assert_eq(rc, 0, "%s (the valid baseline): vidmm_surface_tiled_size() returned %s", what, rc_name(rc));
    cr_assert_gt(bytes, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Descriptor checks.
 * ------------------------------------------------------------------------------------------- */
TestSuite(swizzle_args, .timeout = T_TIMEOUT);

Test(swizzle_args, null_pointers)
{
    struct desc d;
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4);
    valid(&d, "BLOCK_LINEAR 64x64");
    uint64_t bytes = SIZE_SENTINEL;
    cr_expect_eq(vidmm_surface_tiled_size(NULL, &d.surf, &bytes), VIDMM_E_INVALID_ARG, "layout NULL");
    cr_expect_eq(vidmm_surface_tiled_size(&d.layout, NULL, &bytes), VIDMM_E_INVALID_ARG, "surface NULL");
    cr_expect_eq(vidmm_surface_tiled_size(&d.layout, &d.surf, NULL), VIDMM_E_INVALID_ARG, "bytes NULL");
    cr_expect_eq(vidmm_surface_linear_size(NULL, &d.surf, &bytes), VIDMM_E_INVALID_ARG, "layout NULL");
    cr_expect_eq(vidmm_surface_linear_size(&d.layout, NULL, &bytes), VIDMM_E_INVALID_ARG, "surface NULL");
    cr_expect_eq(vidmm_surface_linear_size(&d.layout, &d.surf, NULL), VIDMM_E_INVALID_ARG, "bytes NULL");
    cr_expect_eq(bytes, SIZE_SENTINEL, "a refused size query wrote its result");
    struct vidmm_subresource_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_expect_eq(vidmm_surface_subresource(NULL, &d.surf, 0, 0, &info), VIDMM_E_INVALID_ARG, "layout NULL");
    cr_expect_eq(vidmm_surface_subresource(&d.layout, NULL, 0, 0, &info), VIDMM_E_INVALID_ARG, "surface NULL");
    cr_expect_eq(vidmm_surface_subresource(&d.layout, &d.surf, 0, 0, NULL), VIDMM_E_INVALID_ARG, "info NULL");
}

Test(swizzle_args, size_fields)
{
    struct desc d, b;
    desc_init(&b, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4);
    valid(&b, "BLOCK_LINEAR 64x64");
    d = b;
    d.layout.size = 0;
    invalid(&d, "layout.size = 0");
    d = b;
    d.layout.size = 4;
    invalid(&d, "layout.size = 4");
    d = b;
    d.surf.size = 0;
    invalid(&d, "surface.size = 0");
    d = b;
    d.surf.size = 8;
    invalid(&d, "surface.size = 8");

    struct vidmm_subresource_info info, before;
    memset(&info, 0x77, sizeof(info));
    info.size = 0;
    before = info;
    cr_expect_eq(vidmm_surface_subresource(&b.layout, &b.surf, 0, 0, &info), VIDMM_E_INVALID_ARG, "info.size = 0");
    cr_expect(memcmp(&info, &before, sizeof(info)) == 0, "info.size = 0: 'info' was written");
    info.size = 8;
    before = info;
    cr_expect_eq(vidmm_surface_subresource(&b.layout, &b.surf, 0, 0, &info), VIDMM_E_INVALID_ARG, "info.size = 8");
    cr_expect(memcmp(&info, &before, sizeof(info)) == 0, "info.size = 8: 'info' was written");
}

Test(swizzle_args, zero_and_out_of_range_surface_fields)
{
    struct desc d, b;
    desc_init(&b, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4);
    valid(&b, "BLOCK_LINEAR 64x64");
    static const struct {
        size_t off;
        uint32_t v;
        const char *what;
    } bad[] = {
        { offsetof(struct vidmm_surface_desc, width), 0, "width 0" },
        { offsetof(struct vidmm_surface_desc, height), 0, "height 0" },
        { offsetof(struct vidmm_surface_desc, depth), 0, "depth 0" },
        { offsetof(struct vidmm_surface_desc, element_bytes), 0, "element_bytes 0" },
        { offsetof(struct vidmm_surface_desc, element_bytes), 17, "element_bytes 17" },
        { offsetof(struct vidmm_surface_desc, element_bytes), 0x80000000u, "element_bytes 2^31" },
        { offsetof(struct vidmm_surface_desc, block_width), 0, "block_width 0" },
        { offsetof(struct vidmm_surface_desc, block_height), 0, "block_height 0" },
        { offsetof(struct vidmm_surface_desc, block_width), 17, "block_width 17" },
        { offsetof(struct vidmm_surface_desc, mip_levels), 0, "mip_levels 0" },
        { offsetof(struct vidmm_surface_desc, mip_levels), 8, "mip_levels 8 for 64x64 (chain has 7)" },
        { offsetof(struct vidmm_surface_desc, mip_levels), 0xFFFFFFFFu, "mip_levels 2^32-1" },
        { offsetof(struct vidmm_surface_desc, array_layers), 0, "array_layers 0" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        d = b;
        memcpy((char *)&d.surf + bad[i].off, &bad[i].v, sizeof(uint32_t));
        invalid(&d, bad[i].what);
    }
}

Test(swizzle_args, unknown_tiling_and_flags)
{
    struct desc d, b;
    desc_init(&b, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4);
    valid(&b, "BLOCK_LINEAR 64x64");
    d = b;
    d.layout.tiling = VIDMM_TILING_COUNT_;
    invalid(&d, "tiling VIDMM_TILING_COUNT_");
    d = b;
    d.layout.tiling = (enum vidmm_tiling)0x7FFF;
    invalid(&d, "tiling 0x7FFF");
    d = b;
    d.layout.tiling = (enum vidmm_tiling)-1;
    invalid(&d, "tiling -1");
    d = b;
    d.layout.flags = 1u << 7;
    invalid(&d, "an unknown flag bit");
    d = b;
    d.layout.flags = VIDMM_TILING_FLAG_BIT6;
    invalid(&d, "BIT6 on BLOCK_LINEAR (a field the tiling does not use)");
}

Test(swizzle_args, fields_the_tiling_does_not_use)
{
    struct desc d, b;
    struct vidmm_equation eq;
    eq_simple(&eq);
    desc_init(&b, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4);
    valid(&b, "BLOCK_LINEAR 64x64");
    d = b;
    d.layout.swizzle_unit = 4;
    invalid(&d, "BLOCK_LINEAR with swizzle_unit");
    d = b;
    d.layout.amd_swizzle_mode = 9;
    invalid(&d, "BLOCK_LINEAR with amd_swizzle_mode");
    d = b;
    d.layout.equation = &eq;
    invalid(&d, "BLOCK_LINEAR with an equation");
    d = b;
    d.layout.pitch = 256;
    invalid(&d, "BLOCK_LINEAR with a pitch");

    desc_init(&b, VIDMM_TILING_INTEL_Y, 256, 64, 1, 4);
    valid(&b, "INTEL_Y 256x64");
    d = b;
    d.layout.block_height = 2;
    invalid(&d, "INTEL_Y with block_height");
    d = b;
    d.layout.swizzle_unit = 4;
    invalid(&d, "INTEL_Y with swizzle_unit");

    desc_init(&b, VIDMM_TILING_D3D_STD_64K, 300, 200, 1, 4);
    valid(&b, "D3D_STD_64K 300x200");
    d = b;
    d.layout.amd_swizzle_mode = 9;
    invalid(&d, "D3D_STD_64K with amd_swizzle_mode");
    d = b;
    d.layout.block_depth = 2;
    invalid(&d, "D3D_STD_64K with block_depth");

    desc_init(&b, VIDMM_TILING_MORTON, 64, 64, 1, 4);
    valid(&b, "MORTON 64x64");
    d = b;
    d.layout.block_height = 4;
    invalid(&d, "MORTON with block_height");
    d = b;
    d.layout.equation = &eq;
    invalid(&d, "MORTON with an equation");
}

Test(swizzle_args, block_linear_block_sizes)
{
    struct desc d, b;
    desc_init(&b, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4);
    valid(&b, "BLOCK_LINEAR 64x64");
    static const uint32_t bad_bh[] = { 3, 6, 64, 128, 0x80000000u };
    for (size_t i = 0; i < sizeof(bad_bh) / sizeof(bad_bh[0]); i++) {
        char what[64];
        d = b;
        d.layout.block_height = bad_bh[i];
        snprintf(what, sizeof(what), "block_height %u", bad_bh[i]);
        invalid(&d, what);
    }
    static const uint32_t bad_bd[] = { 3, 32, 0x80000000u };
    desc_init(&b, VIDMM_TILING_BLOCK_LINEAR, 16, 16, 16, 4);
    valid(&b, "BLOCK_LINEAR 16x16x16");
    for (size_t i = 0; i < sizeof(bad_bd) / sizeof(bad_bd[0]); i++) {
        char what[64];
        d = b;
        d.layout.block_depth = bad_bd[i];
        snprintf(what, sizeof(what), "block_depth %u", bad_bd[i]);
        invalid(&d, what);
    }
    d = b;
    d.surf.array_layers = 2;
    refused(&d, "a 3D surface with 2 array layers");
}

Test(swizzle_args, pitches)
{
    struct desc d, b;
    desc_init(&b, VIDMM_TILING_INTEL_X, 1000, 70, 1, 1);
    valid(&b, "INTEL_X 1000x70");
    d = b;
    d.layout.pitch = 1000;
    invalid(&d, "INTEL_X pitch 1000 (not a multiple of the 512-byte tile width)");
    d = b;
    d.layout.pitch = 512;
    invalid(&d, "INTEL_X pitch 512 < row of 1000 bytes");
    d = b;
    d.layout.pitch = 1024;
    valid(&d, "INTEL_X pitch 1024");

    desc_init(&b, VIDMM_TILING_INTEL_Y, 100, 40, 1, 4);
    d = b;
    d.layout.pitch = 384;
    invalid(&d, "INTEL_Y pitch 384 < row of 400 bytes");
    d = b;
    d.layout.pitch = 400;
    invalid(&d, "INTEL_Y pitch 400 (not a multiple of 128)");

    desc_init(&b, VIDMM_TILING_LINEAR, 100, 40, 1, 4);
    valid(&b, "LINEAR 100x40");
    d = b;
    d.layout.pitch = 399;
    invalid(&d, "LINEAR pitch 399 < row of 400 bytes");
    d = b;
    d.layout.pitch = 401;
    valid(&d, "LINEAR pitch 401");
}

Test(swizzle_args, element_sizes_a_tiling_cannot_take)
{
    static const enum vidmm_tiling d3d[] = { VIDMM_TILING_D3D_STD_4K, VIDMM_TILING_D3D_STD_64K };
    static const uint32_t odd[] = { 3, 5, 6, 12 };
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
            struct desc d;
            char what[96];
            desc_init(&d, d3d[t], 64, 64, 1, odd[i]);
            snprintf(what, sizeof(what), "%s with %u-byte elements", t ? "D3D_STD_64K" : "D3D_STD_4K", odd[i]);
            invalid(&d, what);
        }
    struct desc d;
    desc_init(&d, VIDMM_TILING_AMD_GFX10, 64, 64, 1, 8);
    d.layout.amd_swizzle_mode = 27;
    /* 64 bpp _X equations exist in addrlib; the spec pins only the 32 bpp one (5.4). */
    refused(&d, "AMD_GFX10 mode 27 (32 bpp only) with 8-byte elements");
    d.surf.element_bytes = 4;
    valid(&d, "AMD_GFX10 mode 27, 4-byte elements");
    desc_init(&d, VIDMM_TILING_AMD_GFX10, 64, 64, 1, 3);
    d.layout.amd_swizzle_mode = 9;
    invalid(&d, "AMD_GFX10 mode 9 with 3-byte elements");

    desc_init(&d, VIDMM_TILING_MORTON, 64, 64, 1, 6);
    d.layout.swizzle_unit = 4;
    invalid(&d, "MORTON unit 4 does not divide 6-byte elements");
    d.layout.swizzle_unit = 12;
    invalid(&d, "MORTON unit 12 larger than 6-byte elements");
    d.layout.swizzle_unit = 3;
    valid(&d, "MORTON unit 3 of 6-byte elements");
}

Test(swizzle_args, amd_modes)
{
    /* 0 is "unset" (fields a tiling does not use must be 0, and AMD_GFX10 uses it); values past
     * addrlib's enumeration are out of range. Other addrlib modes exist but the spec defines
     * none of them, so either refusal is right for those. */
    static const uint32_t out_of_range[] = { 0, 0xFFFFFFFFu };
    static const uint32_t undefined[] = { 1, 6, 26, 28 };
    for (size_t i = 0; i < sizeof(out_of_range) / sizeof(out_of_range[0]); i++) {
        struct desc d;
        char what[64];
        desc_init(&d, VIDMM_TILING_AMD_GFX10, 64, 64, 1, 4);
        d.layout.amd_swizzle_mode = out_of_range[i];
        snprintf(what, sizeof(what), "AMD_GFX10 swizzle mode %u", out_of_range[i]);
        invalid(&d, what);
    }
    for (size_t i = 0; i < sizeof(undefined) / sizeof(undefined[0]); i++) {
        struct desc d;
        char what[64];
        desc_init(&d, VIDMM_TILING_AMD_GFX10, 64, 64, 1, 4);
        d.layout.amd_swizzle_mode = undefined[i];
        snprintf(what, sizeof(what), "AMD_GFX10 swizzle mode %u (not in the spec)", undefined[i]);
        refused(&d, what);
    }
}

Test(swizzle_args, equations)
{
    struct desc d, b;
    desc_init(&b, VIDMM_TILING_EQUATION, 300, 200, 1, 4);
    eq_simple(&b.eq);
    b.layout.equation = &b.eq;
    valid(&b, "EQUATION x0..x7 y0..y7");
    d = b;
    d.layout.equation = NULL;
    invalid(&d, "EQUATION without an equation");
    d = b;
    d.eq.bits = 3;
    d.layout.equation = &d.eq;
    invalid(&d, "equation of 3 bits");
    d = b;
    d.eq.bits = VIDMM_EQ_MAX_BITS + 1;
    d.layout.equation = &d.eq;
    invalid(&d, "equation of 21 bits");
    d = b;
    d.eq.term[3][0].channel = 4;
    d.layout.equation = &d.eq;
    invalid(&d, "equation term with channel 4");
    d = b;
    d.eq.term[3][0].bit = 32;
    d.layout.equation = &d.eq;
    invalid(&d, "equation term with bit 32");
}

/* Sizes past 2^64 bytes, from extents below 2^31. */
Test(swizzle_args, overflowing_sizes)
{
    struct desc d;
    const uint32_t big = 0x7FFFFFFFu;
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, big, big, 1, 16);
    invalid(&d, "BLOCK_LINEAR (2^31-1)^2 x 16 B");
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, big, big, big, 16);
    invalid(&d, "BLOCK_LINEAR (2^31-1)^3 x 16 B");
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, 65536, 65536, 1, 16);
    d.surf.array_layers = 0xFFFFFFFFu;
    invalid(&d, "BLOCK_LINEAR 65536^2 x 16 B x (2^32-1) layers");
    desc_init(&d, VIDMM_TILING_LINEAR, big, big, 2, 16);
    invalid(&d, "LINEAR (2^31-1)^2 x 2 x 16 B");
    desc_init(&d, VIDMM_TILING_INTEL_Y, big, big, 1, 16);
    invalid(&d, "INTEL_Y (2^31-1)^2 x 16 B");
    desc_init(&d, VIDMM_TILING_MORTON, 0x40000000u, 0x40000000u, 1, 16);
    invalid(&d, "MORTON 2^30 x 2^30 x 16 B (2^64 bytes)");
    desc_init(&d, VIDMM_TILING_D3D_STD_64K, big, big, 1, 16);
    invalid(&d, "D3D_STD_64K (2^31-1)^2 x 16 B");
    desc_init(&d, VIDMM_TILING_AMD_GFX10, big, big, big, 16);
    d.layout.amd_swizzle_mode = 9;
    invalid(&d, "AMD_GFX10 3D (2^31-1)^3 x 16 B");
}

/* Extents of 2^31 and more are valid numbers: the answer is a size when it fits in 64 bits and
 * VIDMM_E_INVALID_ARG when it does not, never a hang. */
Test(swizzle_args, extents_from_2_31)
{
    struct desc d;
    uint64_t bytes = 0;
    desc_init(&d, VIDMM_TILING_LINEAR, 0xFFFFFFFFu, 1, 1, 1);
    cr_expect_eq(vidmm_surface_tiled_size(&d.layout, &d.surf, &bytes), 0, "LINEAR (2^32-1) x 1 x 1 B");
    cr_expect_eq(bytes, 0xFFFFFFFFull, "LINEAR (2^32-1) x 1 x 1 B: %llu bytes", (unsigned long long)bytes);
    desc_init(&d, VIDMM_TILING_MORTON, 0x80000000u, 1, 1, 1);
    bytes = 0;
    cr_expect_eq(vidmm_surface_tiled_size(&d.layout, &d.surf, &bytes), 0, "MORTON 2^31 x 1 x 1 B");
    cr_expect_eq(bytes, 0x80000000ull, "MORTON 2^31 x 1 x 1 B: %llu bytes", (unsigned long long)bytes);
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, 0xFFFFFFFFu, 0xFFFFFFFFu, 1, 16);
    invalid(&d, "BLOCK_LINEAR (2^32-1)^2 x 16 B");
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 16);
    invalid(&d, "BLOCK_LINEAR (2^32-1)^3 x 16 B");
    desc_init(&d, VIDMM_TILING_INTEL_Y, 0xFFFFFFFFu, 0xFFFFFFFFu, 1, 16);
    invalid(&d, "INTEL_Y (2^32-1)^2 x 16 B");
    desc_init(&d, VIDMM_TILING_MORTON, 0x80000000u, 0x80000000u, 1, 16);
    invalid(&d, "MORTON 2^31 x 2^31 x 16 B (2^66 bytes)");
}

Test(swizzle_args, unsupported_combinations)
{
    struct desc d;
    static const enum vidmm_tiling intel[] = { VIDMM_TILING_INTEL_X, VIDMM_TILING_INTEL_Y, VIDMM_TILING_INTEL_4 };
    for (size_t i = 0; i < 3; i++) {
        desc_init(&d, intel[i], 256, 64, 1, 4);
        valid(&d, "Intel 256x64");
        d.surf.mip_levels = 2;
        unsupported(&d, "Intel tiling with 2 mips");
        d.surf.mip_levels = 1;
        d.surf.array_layers = 2;
        unsupported(&d, "Intel tiling with 2 layers");
        d.surf.array_layers = 1;
        d.surf.depth = 2;
        refused(&d, "Intel tiling with depth 2");
    }
    desc_init(&d, VIDMM_TILING_INTEL_4, 256, 64, 1, 4);
    d.layout.flags = VIDMM_TILING_FLAG_BIT6;
    refused(&d, "INTEL_4 with the bit-6 swizzle (not defined, 4.4)");

    desc_init(&d, VIDMM_TILING_D3D_STD_64K, 256, 256, 1, 4);
    valid(&d, "D3D_STD_64K 256x256");
    d.surf.mip_levels = 2;
    unsupported(&d, "D3D_STD_64K with 2 mips");
    desc_init(&d, VIDMM_TILING_D3D_STD_4K, 256, 256, 1, 4);
    d.surf.mip_levels = 3;
    unsupported(&d, "D3D_STD_4K with 3 mips");

    desc_init(&d, VIDMM_TILING_EQUATION, 256, 256, 1, 4);
    eq_simple(&d.eq);
    d.layout.equation = &d.eq;
    valid(&d, "EQUATION 256x256");
    d.surf.mip_levels = 2;
    unsupported(&d, "EQUATION with 2 mips");
}

/* ---------------------------------------------------------------------------------------------
 * Copies: every call on sentinel-filled buffers; a refusal leaves both untouched.
 * ------------------------------------------------------------------------------------------- */
struct copy_args {
    const struct desc *d;
    uint32_t mip, layer;
    const struct vidmm_box *box;
    unsigned char *tiled;
    size_t tiled_size;
    unsigned char *linear;
    size_t linear_size, row_pitch, slice_pitch;
    const struct vidmm_kernel_opts *opts; /* NULL: the plain calls */
    unsigned char *region;                /* overlap tests: one buffer holding both, filled with */
    size_t region_len;                    /* TILED_FILL and checked whole */
};

/* Runs swizzle and deswizzle (plain, or _ex with 'opts') with 'a' and expects 'want' from both
 * (or either code of 'want2' when nonzero); the buffers must keep their fills. The buffers are
 * refilled first. 'tiled_fill_len' / 'linear_fill_len' say how many bytes the test owns. */
static void copy_expect(const struct copy_args *a, int want, int want2, size_t tiled_len, size_t linear_len,
                        const char *what)
{
    for (int dir = 0; dir < 2; dir++) {
        if (a->region) {
            memset(a->region, TILED_FILL, a->region_len);
        } else {
            if (a->tiled)
                memset(a->tiled, TILED_FILL, tiled_len);
            if (a->linear)
                memset(a->linear, LINEAR_FILL, linear_len);
        }
        int rc;
        if (dir == 0)
            rc = a->opts ? vidmm_swizzle_ex(&a->d->layout, &a->d->surf, a->mip, a->layer, a->box, a->tiled,
                                            a->tiled_size, a->linear, a->linear_size, a->row_pitch, a->slice_pitch,
                                            a->opts)
                         : vidmm_swizzle(&a->d->layout, &a->d->surf, a->mip, a->layer, a->box, a->tiled,
                                         a->tiled_size, a->linear, a->linear_size, a->row_pitch, a->slice_pitch);
        else
            rc = a->opts ? vidmm_deswizzle_ex(&a->d->layout, &a->d->surf, a->mip, a->layer, a->box, a->tiled,
                                              a->tiled_size, a->linear, a->linear_size, a->row_pitch,
                                              a->slice_pitch, a->opts)
                         : vidmm_deswizzle(&a->d->layout, &a->d->surf, a->mip, a->layer, a->box, a->tiled,
                                           a->tiled_size, a->linear, a->linear_size, a->row_pitch, a->slice_pitch);
        const char *fn = dir == 0 ? (a->opts ? "vidmm_swizzle_ex" : "vidmm_swizzle")
                                  : (a->opts ? "vidmm_deswizzle_ex" : "vidmm_deswizzle");
        cr_expect(rc == want || (want2 && rc == want2), "%s: %s() returned %s, want %s%s%s", what, fn, rc_name(rc),
                  rc_name(want), want2 ? " or " : "", want2 ? rc_name(want2) : "");
        if (want == 0)
            continue;
        if (a->region) {
            cr_expect(t_find_not(a->region, a->region_len, TILED_FILL) < 0, "%s: %s() failed but wrote", what, fn);
            continue;
        }
        if (a->tiled)
            cr_expect(t_find_not(a->tiled, tiled_len, TILED_FILL) < 0, "%s: %s() failed but wrote the tiled buffer",
                      what, fn);
        if (a->linear)
            cr_expect(t_find_not(a->linear, linear_len, LINEAR_FILL) < 0,
                      "%s: %s() failed but wrote the linear buffer", what, fn);
    }
}

/* A 2D block-linear 64x48 surface of 4-byte elements, one mip, and a 3D 16x16x8 one. */
struct copy_fixture {
    struct desc d2, d3;
    unsigned char *tiled, *linear;
    size_t tiled2, tiled3, cap;
};

static void fixture_init(struct copy_fixture *f)
{
    desc_init(&f->d2, VIDMM_TILING_BLOCK_LINEAR, 64, 48, 1, 4);
    desc_init(&f->d3, VIDMM_TILING_BLOCK_LINEAR, 16, 16, 8, 4);
    uint64_t t2 = 0, t3 = 0;
    cr_assert_eq(vidmm_surface_tiled_size(&f->d2.layout, &f->d2.surf, &t2), 0);
    cr_assert_eq(vidmm_surface_tiled_size(&f->d3.layout, &f->d3.surf, &t3), 0);
    f->tiled2 = (size_t)t2;
    f->tiled3 = (size_t)t3;
    f->cap = (f->tiled2 > f->tiled3 ? f->tiled2 : f->tiled3) + 64 * 48 * 4 + 16 * 16 * 8 * 4 + 4096;
    f->tiled = malloc(f->cap);
    f->linear = malloc(f->cap);
    cr_assert(f->tiled && f->linear);
}

static void fixture_fini(struct copy_fixture *f)
{
    free(f->tiled);
    free(f->linear);
}

static void box_and_buffer_checks(const struct vidmm_kernel_opts *opts)
{
    struct copy_fixture f;
    fixture_init(&f);
    const size_t row = 64 * 4;
    struct vidmm_box whole = { 0, 0, 0, 64, 48, 1 };
    struct copy_args base = { &f.d2, 0, 0, &whole, f.tiled, f.tiled2, f.linear, row * 48, row, row * 48,
                              opts, NULL, 0 };
    copy_expect(&base, 0, 0, f.tiled2, row * 48, "the valid baseline (whole 64x48 mip)");
    struct copy_args a = base;
    a.box = NULL;
    copy_expect(&a, 0, 0, f.tiled2, row * 48, "box NULL (the whole mip)");

    static const struct {
        struct vidmm_box box;
        const char *what;
    } boxes[] = {
        { { 0, 0, 0, 0, 48, 1 }, "empty box (width 0)" },
        { { 0, 0, 0, 64, 0, 1 }, "empty box (height 0)" },
        { { 0, 0, 0, 64, 48, 0 }, "empty box (depth 0)" },
        { { 60, 0, 0, 5, 1, 1 }, "box past the right edge (x 60 + 5 > 64)" },
        { { 0, 40, 0, 1, 9, 1 }, "box past the bottom (y 40 + 9 > 48)" },
        { { 0, 0, 1, 1, 1, 1 }, "box at slice 1 of a 2D mip" },
        { { 64, 0, 0, 1, 1, 1 }, "box starting at x = width" },
        { { 0xFFFFFFFFu, 0, 0, 2, 1, 1 }, "box x + width wrapping 32 bits" },
        { { 1, 0, 0, 0xFFFFFFFFu, 1, 1 }, "box width 2^32-1" },
        { { 0, 0xFFFFFFF0u, 0, 1, 0x20, 1 }, "box y + height wrapping 32 bits" },
        { { 0, 0, 0xFFFFFFFFu, 1, 1, 2 }, "box z + depth wrapping 32 bits" },
    };
    for (size_t i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++) {
        a = base;
        a.box = &boxes[i].box;
        copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, boxes[i].what);
    }

    a = base;
    a.mip = 1;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "mip 1 of a 1-mip surface");
    a = base;
    a.layer = 1;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "layer 1 of a 1-layer surface");
    a = base;
    a.tiled = NULL;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, 0, row * 48, "tiled NULL");
    a = base;
    a.linear = NULL;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, 0, "linear NULL");
    a = base;
    a.tiled_size = f.tiled2 - 1;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "tiled_size one byte short of the surface");
    a = base;
    a.tiled_size = 0;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "tiled_size 0");
    a = base;
    a.linear_size = row * 48 - 1;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "linear_size one byte short of the box");
    a = base;
    a.row_pitch = row - 1;
    a.linear_size = f.cap;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, f.cap, "row_pitch one byte short of a box row");
    a = base;
    a.row_pitch = 0;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "row_pitch 0");

    /* A box that is not the whole mip: linear_size must hold exactly that box. */
    struct vidmm_box part = { 3, 5, 0, 7, 9, 1 };
    a = base;
    a.box = &part;
    a.row_pitch = 7 * 4 + 5;
    a.linear_size = 8 * a.row_pitch + 7 * 4;
    copy_expect(&a, 0, 0, f.tiled2, a.linear_size, "a 7x9 box with pitch 33 in exactly its bytes");
    a.linear_size--;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, a.linear_size + 1, "the same box, one byte short");

    /* 3D: slice pitches. */
    const size_t row3 = 16 * 4;
    struct vidmm_box box3 = { 0, 0, 0, 16, 16, 8 };
    struct copy_args b3 = { &f.d3, 0, 0, &box3, f.tiled, f.tiled3, f.linear, row3 * 16 * 8, row3, row3 * 16,
                            opts, NULL, 0 };
    copy_expect(&b3, 0, 0, f.tiled3, row3 * 16 * 8, "the valid 3D baseline (16x16x8)");
    a = b3;
    a.slice_pitch = row3 * 16 - 1;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled3, row3 * 16 * 8, "slice_pitch one byte short of a slice");
    a = b3;
    a.slice_pitch = 0;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled3, row3 * 16 * 8, "slice_pitch 0 with a 8-slice box");
    struct vidmm_box over = { 0, 0, 4, 16, 16, 5 };
    a = b3;
    a.box = &over;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled3, row3 * 16 * 8, "box slices 4..8 of an 8-slice mip");

    /* Invalid descriptors reach the copies too. */
    struct desc bad = f.d2;
    bad.surf.element_bytes = 0;
    a = base;
    a.d = &bad;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "copy with element_bytes 0");
    bad = f.d2;
    bad.layout.tiling = VIDMM_TILING_COUNT_;
    a.d = &bad;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, row * 48, "copy with an unknown tiling");
    a.d = NULL;
    fixture_fini(&f);
}

Test(swizzle_args, boxes_buffers_pitches_plain)
{
    box_and_buffer_checks(NULL);
}

Test(swizzle_args, boxes_buffers_pitches_ex_scalar)
{
    struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
    box_and_buffer_checks(&o);
}

Test(swizzle_args, overlap)
{
    struct copy_fixture f;
    fixture_init(&f);
    const size_t row = 64 * 4, lin = row * 48;
    size_t len = f.tiled2 + lin;
    unsigned char *buf = malloc(len);
    cr_assert(buf != NULL);
    struct copy_args a = { &f.d2, 0, 0, NULL, buf, f.tiled2, buf + f.tiled2, lin, row, lin, NULL, NULL, 0 };
    /* Adjacent is not overlapping. */
    copy_expect(&a, 0, 0, f.tiled2, lin, "linear right after the tiled surface");
    a.region = buf;
    a.region_len = len;
    a.linear = buf + f.tiled2 - 1;
    copy_expect(&a, VIDMM_E_OVERLAP, 0, 0, 0, "linear overlapping the last tiled byte");
    a.linear = buf + 100;
    copy_expect(&a, VIDMM_E_OVERLAP, 0, 0, 0, "linear inside the tiled surface");
    a.linear = buf;
    copy_expect(&a, VIDMM_E_OVERLAP, 0, 0, 0, "linear == tiled");
    /* Linear first, tiled after it. */
    a.linear = buf;
    a.tiled = buf + lin - 1;
    a.tiled_size = f.tiled2;
    copy_expect(&a, VIDMM_E_OVERLAP, 0, 0, 0, "tiled overlapping the last linear byte");
    a.tiled = buf + lin;
    copy_expect(&a, 0, 0, 0, 0, "tiled right after the linear box");

    struct vidmm_tile_layout *l = &f.d2.layout;
    struct vidmm_surface_desc *s = &f.d2.surf;
    memset(buf, TILED_FILL, f.tiled2 + lin);
    cr_expect_eq(vidmm_swizzle_surface(l, s, buf, f.tiled2, buf + 64, lin), VIDMM_E_OVERLAP,
                 "vidmm_swizzle_surface() with overlapping buffers");
    cr_expect_eq(vidmm_deswizzle_surface(l, s, buf, f.tiled2, buf + 64, lin), VIDMM_E_OVERLAP,
                 "vidmm_deswizzle_surface() with overlapping buffers");
    cr_expect(t_find_not(buf, f.tiled2 + lin, TILED_FILL) < 0, "a refused overlapping call wrote");
    free(buf);
    fixture_fini(&f);
}

Test(swizzle_args, surface_calls)
{
    struct copy_fixture f;
    fixture_init(&f);
    const size_t lin = 64 * 4 * 48;
    struct vidmm_tile_layout *l = &f.d2.layout;
    struct vidmm_surface_desc *s = &f.d2.surf;
    memset(f.tiled, TILED_FILL, f.tiled2);
    memset(f.linear, LINEAR_FILL, lin);
    cr_expect_eq(vidmm_swizzle_surface(l, s, f.tiled, f.tiled2, f.linear, lin), 0, "valid baseline");
    memset(f.tiled, TILED_FILL, f.tiled2);
    cr_expect_eq(vidmm_swizzle_surface(l, s, NULL, f.tiled2, f.linear, lin), VIDMM_E_INVALID_ARG, "tiled NULL");
    cr_expect_eq(vidmm_swizzle_surface(l, s, f.tiled, f.tiled2, NULL, lin), VIDMM_E_INVALID_ARG, "linear NULL");
    cr_expect_eq(vidmm_swizzle_surface(l, s, f.tiled, f.tiled2 - 1, f.linear, lin), VIDMM_E_INVALID_ARG,
                 "tiled_size one byte short");
    cr_expect_eq(vidmm_swizzle_surface(l, s, f.tiled, f.tiled2, f.linear, lin - 1), VIDMM_E_INVALID_ARG,
                 "linear_size one byte short");
    cr_expect_eq(vidmm_swizzle_surface(NULL, s, f.tiled, f.tiled2, f.linear, lin), VIDMM_E_INVALID_ARG,
                 "layout NULL");
    cr_expect_eq(vidmm_swizzle_surface(l, NULL, f.tiled, f.tiled2, f.linear, lin), VIDMM_E_INVALID_ARG,
                 "surface NULL");
    cr_expect(t_find_not(f.tiled, f.tiled2, TILED_FILL) < 0, "a refused vidmm_swizzle_surface() wrote");
    cr_expect_eq(vidmm_deswizzle_surface(l, s, NULL, f.tiled2, f.linear, lin), VIDMM_E_INVALID_ARG, "tiled NULL");
    cr_expect_eq(vidmm_deswizzle_surface(l, s, f.tiled, f.tiled2, NULL, lin), VIDMM_E_INVALID_ARG, "linear NULL");
    cr_expect_eq(vidmm_deswizzle_surface(l, s, f.tiled, f.tiled2 - 1, f.linear, lin), VIDMM_E_INVALID_ARG,
                 "tiled_size one byte short");
    cr_expect_eq(vidmm_deswizzle_surface(l, s, f.tiled, f.tiled2, f.linear, lin - 1), VIDMM_E_INVALID_ARG,
                 "linear_size one byte short");
    cr_expect(t_find_not(f.linear, lin, LINEAR_FILL) < 0, "a refused vidmm_deswizzle_surface() wrote");

    /* A multi-mip surface refused mid-way must not have written its first mips. */
    struct desc m;
    desc_init(&m, VIDMM_TILING_INTEL_X, 256, 64, 1, 4);
    m.surf.mip_levels = 2;
    memset(f.tiled, TILED_FILL, f.tiled2);
    cr_expect_eq(vidmm_swizzle_surface(&m.layout, &m.surf, f.tiled, f.tiled2, f.linear, lin), VIDMM_E_UNSUPPORTED,
                 "vidmm_swizzle_surface() of an Intel mip chain");
    cr_expect(t_find_not(f.tiled, f.tiled2, TILED_FILL) < 0, "a refused vidmm_swizzle_surface() wrote");
    fixture_fini(&f);
}

Test(swizzle_args, subresource_range)
{
    struct desc d;
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4);
    d.surf.mip_levels = 7;
    d.surf.array_layers = 6;
    struct vidmm_subresource_info info, before;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_expect_eq(vidmm_surface_subresource(&d.layout, &d.surf, 6, 5, &info), 0, "the last mip of the last layer");
    memset(&info, 0x77, sizeof(info));
    info.size = sizeof(info);
    before = info;
    cr_expect_eq(vidmm_surface_subresource(&d.layout, &d.surf, 7, 0, &info), VIDMM_E_INVALID_ARG, "mip 7 of 7");
    cr_expect_eq(vidmm_surface_subresource(&d.layout, &d.surf, 0, 6, &info), VIDMM_E_INVALID_ARG, "layer 6 of 6");
    cr_expect_eq(vidmm_surface_subresource(&d.layout, &d.surf, 0xFFFFFFFFu, 0, &info), VIDMM_E_INVALID_ARG,
                 "mip 2^32-1");
    cr_expect(memcmp(&info, &before, sizeof(info)) == 0, "a refused vidmm_surface_subresource() wrote 'info'");
}

Test(swizzle_args, kernel_options)
{
    struct copy_fixture f;
    fixture_init(&f);
    const size_t row = 64 * 4, lin = row * 48;
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    struct copy_args a = { &f.d2, 0, 0, NULL, f.tiled, f.tiled2, f.linear, lin, row, lin, &o, NULL, 0 };
    copy_expect(&a, 0, 0, f.tiled2, lin, "opts all AUTO");
    a.opts = NULL;
    copy_expect(&a, 0, 0, f.tiled2, lin, "_ex with opts NULL is the plain call");
    a.opts = &o;
    o.size = 0;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, lin, "opts.size 0");
    o = (struct vidmm_kernel_opts)VIDMM_KERNEL_OPTS_INIT;
    o.backend = (enum vidmm_backend)99;
    copy_expect(&a, VIDMM_E_INVALID_ARG, VIDMM_E_UNSUPPORTED, f.tiled2, lin, "opts.backend 99");
    o = (struct vidmm_kernel_opts)VIDMM_KERNEL_OPTS_INIT;
    o.strategy = (enum vidmm_strategy)99;
    copy_expect(&a, VIDMM_E_INVALID_ARG, 0, f.tiled2, lin, "opts.strategy 99");
    fixture_fini(&f);
}

/* ---------------------------------------------------------------------------------------------
 * Issue 25: every refusal explains itself - one VIDMM_LOG_DEBUG line naming the call, the field
 * and the value and rule it broke (the engine's "field-and-rule" form), and the same code as
 * before. A representative refusal of each kind: NULL, a short buffer, a zero width, an
 * overflowing size, a box off the edge, a bad pitch, an unknown tiling, a subresource out of
 * range, overlapping buffers, a whole-surface plan given a box, an unusable backend.
 * ------------------------------------------------------------------------------------------- */
static struct t_log refusal_log;

/* 'rc' is 'want' and exactly one DEBUG line was logged, naming every string of 'names'. */
static void explained(int rc, int want, const char *expr, const char *const *names)
{
    cr_assert_eq(rc, want, "%s returned %s, want %s", expr, rc_name(rc), rc_name(want));
    const char *line = refusal_log.first_debug;
    cr_assert_eq(atomic_load(&refusal_log.count[VIDMM_LOG_DEBUG]), 1, "%s: %d DEBUG lines, want 1 (first: \"%s\")",
                 expr, atomic_load(&refusal_log.count[VIDMM_LOG_DEBUG]), line);
    for (size_t i = 0; names[i] != NULL; i++)
        cr_assert_not_null(strstr(line, names[i]), "%s: the line does not name '%s': \"%s\"", expr, names[i], line);
    cr_assert_not_null(strstr(line, "(spec "), "%s: the line cites no rule: \"%s\"", expr, line);
}

#define EXPLAINED(expr, want, ...)                                                                 \
    do {                                                                                           \
        t_log_reset(&refusal_log);                                                                 \
        int rc_ = (expr);                                                                          \
        const char *const names_[] = { __VA_ARGS__, NULL };                                        \
        explained(rc_, (want), #expr, names_);                                                     \
    } while (0)

Test(swizzle_args, refusals_are_explained)
{
    enum { W = 64, H = 64 };
    struct desc d;
    uint64_t total = 0;
    desc_init(&d, VIDMM_TILING_BLOCK_LINEAR, W, H, 1, 4);
    cr_assert_eq(vidmm_surface_tiled_size(&d.layout, &d.surf, &total), 0);
    unsigned char *tiled = calloc(1, (size_t)total), *linear = calloc(1, (size_t)W * H * 4);
    cr_assert(tiled && linear);
    const size_t lin_size = (size_t)W * H * 4, row = (size_t)W * 4;
    struct vidmm_box box = { 0, 0, 0, 16, 16, 1 };
    uint64_t bytes;

    /* The good call first (the backend's choice logs once, at INFO), then again: no DEBUG line. */
    cr_assert_eq(vidmm_swizzle(&d.layout, &d.surf, 0, 0, &box, tiled, (size_t)total, linear, lin_size, row, 0), 0);
    t_log_reset(&refusal_log);
    vidmm_set_log_fn(t_log_record, &refusal_log, VIDMM_LOG_DEBUG);
    cr_assert_eq(vidmm_swizzle(&d.layout, &d.surf, 0, 0, &box, tiled, (size_t)total, linear, lin_size, row, 0), 0);
    cr_assert_eq(atomic_load(&refusal_log.count[VIDMM_LOG_DEBUG]), 0, "a good copy logged \"%s\"",
                 refusal_log.first_debug);

    EXPLAINED(vidmm_surface_tiled_size(&d.layout, &d.surf, NULL), VIDMM_E_INVALID_ARG, "vidmm_surface_tiled_size",
              "bytes", "NULL");
    EXPLAINED(vidmm_swizzle(NULL, &d.surf, 0, 0, &box, tiled, (size_t)total, linear, lin_size, row, 0),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle", "layout", "NULL");
    EXPLAINED(vidmm_deswizzle(&d.layout, &d.surf, 0, 0, &box, NULL, (size_t)total, linear, lin_size, row, 0),
              VIDMM_E_INVALID_ARG, "vidmm_deswizzle", "tiled", "NULL");
    char want[64];
    snprintf(want, sizeof(want), "%llu", (unsigned long long)total);
    EXPLAINED(vidmm_swizzle(&d.layout, &d.surf, 0, 0, &box, tiled, (size_t)total - 1, linear, lin_size, row, 0),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle", "tiled_size", want);
    EXPLAINED(vidmm_swizzle(&d.layout, &d.surf, 0, 0, &box, tiled, (size_t)total, linear, 100, row, 0),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle", "linear_size", "100");
    struct vidmm_box off = { 60, 0, 0, 8, 8, 1 };
    EXPLAINED(vidmm_swizzle(&d.layout, &d.surf, 0, 0, &off, tiled, (size_t)total, linear, lin_size, row, 0),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle", "box", "(60, 0, 0) + 8x8x1", "64x64x1");
    EXPLAINED(vidmm_swizzle(&d.layout, &d.surf, 0, 0, &box, tiled, (size_t)total, linear, lin_size, 63, 0),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle", "row_pitch", "63", "64 bytes");
    EXPLAINED(vidmm_swizzle(&d.layout, &d.surf, 0, 0, &box, tiled, (size_t)total, tiled + 64, lin_size, row, 0),
              VIDMM_E_OVERLAP, "vidmm_swizzle", "tiled, linear", "overlap");
    EXPLAINED(vidmm_swizzle(&d.layout, &d.surf, 1, 0, &box, tiled, (size_t)total, linear, lin_size, row, 0),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle", "mip", "mip 1");

    struct desc z = d;
    z.surf.width = 0;
    EXPLAINED(vidmm_surface_linear_size(&z.layout, &z.surf, &bytes), VIDMM_E_INVALID_ARG, "vidmm_surface_linear_size",
              "surface->width", "0x64x1");
    z = d;
    z.layout.tiling = (enum vidmm_tiling)42;
    EXPLAINED(vidmm_surface_tiled_size(&z.layout, &z.surf, &bytes), VIDMM_E_INVALID_ARG, "layout->tiling", "42");
    desc_init(&z, VIDMM_TILING_LINEAR, UINT32_MAX, UINT32_MAX, UINT32_MAX, 16);
    EXPLAINED(vidmm_surface_tiled_size(&z.layout, &z.surf, &bytes), VIDMM_E_INVALID_ARG, "vidmm_surface_tiled_size",
              "overflows 64 bits");
    desc_init(&z, VIDMM_TILING_LINEAR, W, H, 1, 4);
    z.layout.pitch = 100;
    EXPLAINED(vidmm_surface_tiled_size(&z.layout, &z.surf, &bytes), VIDMM_E_INVALID_ARG, "layout->pitch", "100",
              "256 bytes");

    vidmm_swizzle_plan *plan = NULL;
    EXPLAINED(vidmm_swizzle_plan_create(&d.layout, &d.surf, 0, 0, NULL, NULL), VIDMM_E_INVALID_ARG,
              "vidmm_swizzle_plan_create", "plan", "NULL");
    EXPLAINED(vidmm_swizzle_plan_create(&d.layout, &d.surf, VIDMM_SWIZZLE_PLAN_SURFACE, 3, NULL, &plan),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle_plan_create", "layer", "3");
    cr_assert_null(plan);
    cr_assert_eq(vidmm_swizzle_plan_create(&d.layout, &d.surf, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &plan), 0);
    EXPLAINED(vidmm_swizzle_plan_swizzle(plan, &box, tiled, (size_t)total, linear, lin_size, 0, 0),
              VIDMM_E_INVALID_ARG, "vidmm_swizzle_plan_swizzle", "box", "whole-surface");
    EXPLAINED(vidmm_swizzle_plan_deswizzle(plan, NULL, tiled, 16, linear, lin_size, 0, 0), VIDMM_E_INVALID_ARG,
              "vidmm_swizzle_plan_deswizzle", "tiled_size", "16");
    vidmm_swizzle_plan_destroy(plan);
    for (int b = VIDMM_BACKEND_SCALAR; b < VIDMM_BACKEND_COUNT_; b++) {
        if (vidmm_backend_supported((enum vidmm_backend)b))
            continue;
        struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
        o.backend = (enum vidmm_backend)b;
        EXPLAINED(vidmm_swizzle_ex(&d.layout, &d.surf, 0, 0, &box, tiled, (size_t)total, linear, lin_size, row, 0, &o),
                  VIDMM_E_UNSUPPORTED, "vidmm_swizzle", "opts->backend", vidmm_backend_to_string((enum vidmm_backend)b));
        break;
    }
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    free(tiled);
    free(linear);
}
