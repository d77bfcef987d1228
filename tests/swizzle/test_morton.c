/* SPDX-License-Identifier: MIT */
/* tests/swizzle/test_morton.c - the Morton self-tests of tiling.md 6.4: the index definitions
 * agree with each other (pass by pass, 2D closed form, incremental walk) and with the examples
 * of 6.1; the library is a bijection onto [0, 2^(lw+lh+ld)) for power-of-two extents, equals
 * the definitions on power-of-two and other extents (padding untouched), round-trips, and keeps
 * an 8-byte texel swizzled in 4-byte units contiguous (6.3), on every backend. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"
#include "vidmm/swizzle.h"
#include "ref_model.h"

#define T_TIMEOUT 120

/* ---------------------------------------------------------------------------------------------
 * The definitions among themselves (no library call).
 * ------------------------------------------------------------------------------------------- */

Test(morton_model, definitions_agree_2d, .timeout = T_TIMEOUT)
{
    uint64_t *walk = malloc(sizeof(uint64_t) * 130 * 130);
    cr_assert(walk != NULL);
    for (uint32_t w = 1; w <= 130; w += (w < 40 ? 1 : 9))
        for (uint32_t h = 1; h <= 130; h += (h < 40 ? 1 : 9)) {
            uint32_t lw = ref_ceil_log2(w), lh = ref_ceil_log2(h);
            ref_morton_walk(w, h, walk);
            for (uint32_t y = 0; y < h; y++)
                for (uint32_t x = 0; x < w; x++) {
                    uint64_t p = ref_morton_passes(x, y, 0, lw, lh, 0);
                    uint64_t cf = ref_morton_closed2d(x, y, lw, lh);
                    uint64_t wk = walk[(size_t)y * w + x];
                    cr_assert(p == cf && p == wk,
                              "%ux%u unit (%u,%u): pass by pass %llu, closed form %llu, incremental walk %llu", w,
                              h, x, y, (unsigned long long)p, (unsigned long long)cf, (unsigned long long)wk);
                    cr_assert(p < ((uint64_t)1 << (lw + lh)), "%ux%u unit (%u,%u): index %llu beyond the POT box",
                              w, h, x, y, (unsigned long long)p);
                }
        }
    free(walk);
}

/* A POT 2D/3D index is a bijection onto [0, 2^(lw+lh+ld)); 3D with D = 1 equals 2D. */
Test(morton_model, bijection_pot, .timeout = T_TIMEOUT)
{
    for (uint32_t lw = 0; lw <= 5; lw++)
        for (uint32_t lh = 0; lh <= 5; lh++)
            for (uint32_t ld = 0; ld <= 3; ld++) {
                size_t n = (size_t)1 << (lw + lh + ld);
                unsigned char *seen = calloc(n, 1);
                cr_assert(seen != NULL);
                for (uint64_t z = 0; z < (1u << ld); z++)
                    for (uint64_t y = 0; y < (1u << lh); y++)
                        for (uint64_t x = 0; x < (1u << lw); x++) {
                            uint64_t i = ref_morton_passes(x, y, z, lw, lh, ld);
                            cr_assert(i < n && !seen[i], "lw %u lh %u ld %u: (%llu,%llu,%llu) -> %llu repeats or "
                                      "escapes", lw, lh, ld, (unsigned long long)x, (unsigned long long)y,
                                      (unsigned long long)z, (unsigned long long)i);
                            seen[i] = 1;
                            if (ld == 0)
                                cr_assert_eq(i, ref_morton_closed2d(x, y, lw, lh));
                        }
                free(seen);
            }
}

Test(morton_model, examples_6_1)
{
    /* 4x4: row 0 -> 0, 1, 4, 5; row 1 -> 2, 3, 6, 7. */
    static const uint64_t row0[] = { 0, 1, 4, 5 }, row1[] = { 2, 3, 6, 7 };
    for (uint32_t x = 0; x < 4; x++) {
        cr_expect_eq(ref_morton_passes(x, 0, 0, 2, 2, 0), row0[x]);
        cr_expect_eq(ref_morton_passes(x, 1, 0, 2, 2, 0), row1[x]);
    }
    for (uint32_t x = 0; x < 8; x++)
        for (uint32_t y = 0; y < 8; y++) {
            /* 8x2: x2 x1 y0 x0 */
            if (y < 2)
                cr_expect_eq(ref_morton_passes(x, y, 0, 3, 1, 0), (x & 1) | (y << 1) | ((x >> 1) << 2));
            /* 2x8: y2 y1 y0 x0 */
            if (x < 2)
                cr_expect_eq(ref_morton_passes(x, y, 0, 1, 3, 0), x | (y << 1));
        }
    /* 2x2x2: z0 y0 x0 */
    for (uint32_t i = 0; i < 8; i++)
        cr_expect_eq(ref_morton_passes(i & 1, (i >> 1) & 1, i >> 2, 1, 1, 1), i);
}

/* ---------------------------------------------------------------------------------------------
 * The library.
 * ------------------------------------------------------------------------------------------- */
struct msurf {
    uint32_t w, h, d, e, unit;
};

static void descriptors(const struct msurf *m, struct vidmm_tile_layout *layout, struct vidmm_surface_desc *surf)
{
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_MORTON);
    l.swizzle_unit = m->unit;
    *layout = l;
    memset(surf, 0, sizeof(*surf));
    surf->size = sizeof(*surf);
    surf->width = m->w;
    surf->height = m->h;
    surf->depth = m->d;
    surf->element_bytes = m->e;
    surf->block_width = surf->block_height = 1;
    surf->mip_levels = surf->array_layers = 1;
}

/* Tile 'lin' (tightly packed) with backend 'b' into 'tiled' (prefilled by the caller). */
static void lib_tile(enum vidmm_backend b, const struct msurf *m, unsigned char *tiled, size_t tiled_size,
                     const unsigned char *lin)
{
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    descriptors(m, &layout, &surf);
    uint64_t size = 0;
    int rc = vidmm_surface_tiled_size(&layout, &surf, &size);
    uint32_t unit = m->unit ? m->unit : m->e;
    uint64_t wu = (uint64_t)m->w * m->e / unit;
    uint64_t want = ((uint64_t)1 << (ref_ceil_log2(wu) + ref_ceil_log2(m->h) + ref_ceil_log2(m->d))) * unit;
    cr_assert(rc == 0 && size == want && size == tiled_size,
              "Morton %ux%ux%u E=%u U=%u: vidmm_surface_tiled_size() = %d, %llu bytes; want %llu (6.2)", m->w, m->h,
              m->d, m->e, unit, rc, (unsigned long long)size, (unsigned long long)want);
    struct vidmm_kernel_opts o = t_opts(b, VIDMM_STRATEGY_AUTO);
    size_t row = (size_t)m->w * m->e;
    rc = vidmm_swizzle_ex(&layout, &surf, 0, 0, NULL, tiled, tiled_size, lin, row * m->h * m->d, row, row * m->h,
                          &o);
    cr_assert_eq(rc, 0, "Morton %ux%ux%u E=%u U=%u [%s]: vidmm_swizzle_ex() returned %d", m->w, m->h, m->d, m->e,
                 unit, t_backend_label(b), rc);
}

static void lib_untile(enum vidmm_backend b, const struct msurf *m, const unsigned char *tiled, size_t tiled_size,
                       unsigned char *lin)
{
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    descriptors(m, &layout, &surf);
    struct vidmm_kernel_opts o = t_opts(b, VIDMM_STRATEGY_AUTO);
    size_t row = (size_t)m->w * m->e;
    int rc = vidmm_deswizzle_ex(&layout, &surf, 0, 0, NULL, tiled, tiled_size, lin, row * m->h * m->d, row,
                                row * m->h, &o);
    cr_assert_eq(rc, 0, "Morton %ux%ux%u E=%u [%s]: vidmm_deswizzle_ex() returned %d", m->w, m->h, m->d, m->e,
                 t_backend_label(b), rc);
}

static size_t tiled_bytes(const struct msurf *m)
{
    uint32_t unit = m->unit ? m->unit : m->e;
    uint64_t wu = (uint64_t)m->w * m->e / unit;
    return ((size_t)1 << (ref_ceil_log2(wu) + ref_ceil_log2(m->h) + ref_ceil_log2(m->d))) * unit;
}

/* AUTO is the dispatcher's own choice (the morton_default suite, which CTest re-runs once per
 * VIDMM_BACKEND); any other backend must be usable here or the test is skipped. */
static void require(enum vidmm_backend b)
{
    if (b != VIDMM_BACKEND_AUTO)
        t_require_backend(b);
}

/* POT extents, 4-byte elements holding their own linear number: every tiled slot holds exactly
 * one element, and slot i holds the element whose index (6.1) is i. */
static void backend_bijection(enum vidmm_backend b)
{
    require(b);
    static const uint32_t ext[][3] = { { 1, 1, 1 }, { 2, 2, 1 }, { 4, 4, 1 }, { 8, 2, 1 }, { 2, 8, 1 },
                                       { 64, 64, 1 }, { 256, 16, 1 }, { 8, 128, 1 }, { 1, 32, 1 }, { 32, 1, 1 },
                                       { 2, 2, 2 }, { 16, 16, 16 }, { 4, 8, 32 }, { 32, 4, 2 }, { 1, 1, 64 } };
    for (size_t k = 0; k < sizeof(ext) / sizeof(ext[0]); k++) {
        struct msurf m = { ext[k][0], ext[k][1], ext[k][2], 4, 0 };
        size_t n = (size_t)m.w * m.h * m.d;
        uint32_t *lin = malloc(n * 4), *tiled = malloc(tiled_bytes(&m));
        cr_assert(lin != NULL && tiled != NULL);
        cr_assert_eq(tiled_bytes(&m), n * 4, "POT extents need no padding");
        for (size_t i = 0; i < n; i++)
            lin[i] = (uint32_t)i;
        memset(tiled, 0xFF, n * 4);
        lib_tile(b, &m, (unsigned char *)tiled, n * 4, (unsigned char *)lin);
        unsigned char *seen = calloc(n, 1);
        cr_assert(seen != NULL);
        uint32_t lw = ref_ceil_log2(m.w), lh = ref_ceil_log2(m.h), ld = ref_ceil_log2(m.d);
        for (size_t slot = 0; slot < n; slot++) {
            uint32_t id = tiled[slot];
            cr_assert(id < n && !seen[id], "Morton %ux%ux%u [%s]: slot %zu holds %u (repeated or not an element)",
                      m.w, m.h, m.d, t_backend_label(b), slot, id);
            seen[id] = 1;
            uint64_t x = id % m.w, y = id / m.w % m.h, z = id / m.w / m.h;
            cr_assert_eq(ref_morton_passes(x, y, z, lw, lh, ld), slot,
                         "Morton %ux%ux%u [%s]: element (%llu,%llu,%llu) at slot %zu, 6.1 says %llu", m.w, m.h, m.d,
                         t_backend_label(b), (unsigned long long)x, (unsigned long long)y, (unsigned long long)z,
                         slot, (unsigned long long)ref_morton_passes(x, y, z, lw, lh, ld));
        }
        free(seen);
        free(lin);
        free(tiled);
    }
}

/* The examples of 6.1 through the library, 1-byte elements numbered in linear order. */
static void backend_examples(enum vidmm_backend b)
{
    require(b);
    static const unsigned char z4x4[16] = { 0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15 };
    /* 8x2, bits x2 x1 y0 x0: slot i holds x = (i & 1) | (i >> 2) << 1, y = (i >> 1) & 1. */
    unsigned char z8x2[16];
    for (unsigned i = 0; i < 16; i++)
        z8x2[i] = (unsigned char)(((i >> 1) & 1) * 8 + ((i & 1) | ((i >> 2) << 1)));
    /* 2x8 (y2 y1 y0 x0) and 2x2x2 (z0 y0 x0) are the linear order itself. */
    unsigned char ident[16];
    for (unsigned i = 0; i < 16; i++)
        ident[i] = (unsigned char)i;
    struct {
        struct msurf m;
        const unsigned char *want;
    } ex[] = { { { 4, 4, 1, 1, 0 }, z4x4 }, { { 8, 2, 1, 1, 0 }, z8x2 }, { { 2, 8, 1, 1, 0 }, ident },
               { { 2, 2, 2, 1, 0 }, ident } };
    for (size_t k = 0; k < sizeof(ex) / sizeof(ex[0]); k++) {
        unsigned char tiled[16];
        size_t n = (size_t)ex[k].m.w * ex[k].m.h * ex[k].m.d;
        memset(tiled, 0xEE, sizeof(tiled));
        lib_tile(b, &ex[k].m, tiled, n, ident);
        for (size_t i = 0; i < n; i++)
            cr_expect_eq(tiled[i], ex[k].want[i],
                         "Morton %ux%ux%u example of 6.1 [%s]: slot %zu holds element %u, want %u", ex[k].m.w,
                         ex[k].m.h, ex[k].m.d, t_backend_label(b), i, tiled[i], ex[k].want[i]);
    }
}

/* Power-of-two and other extents, several element and unit sizes: the library equals the pass
 * definition byte for byte, the padding of a non-power-of-two surface keeps its sentinel, and
 * the round trip is exact. */
static void backend_npot(enum vidmm_backend b)
{
    require(b);
    struct t_rng r;
    t_rng_init(&r, 0x6d6f72);
    static const uint32_t es[] = { 1, 2, 3, 4, 6, 8, 12, 16 };
    for (int iter = 0; iter < 60; iter++) {
        struct msurf m;
        bool three = iter % 3 == 2;
        m.w = (uint32_t)t_rng_len(&r, 1, three ? 24 : 200);
        m.h = (uint32_t)t_rng_len(&r, 1, three ? 24 : 200);
        m.d = three ? (uint32_t)t_rng_len(&r, 1, 24) : 1;
        m.e = es[t_rng_below(&r, 8)];
        m.unit = 0;
        if (iter % 4 == 3) {
            uint32_t u = (uint32_t)t_rng_below(&r, m.e) + 1;
            while (m.e % u)
                u--;
            m.unit = u;
        }
        uint32_t unit = m.unit ? m.unit : m.e;
        uint32_t wu = m.w * m.e / unit;
        uint32_t lw = ref_ceil_log2(wu), lh = ref_ceil_log2(m.h), ld = ref_ceil_log2(m.d);
        size_t tl = tiled_bytes(&m), ll = (size_t)m.w * m.h * m.d * m.e;
        unsigned char *lin = malloc(ll), *tiled = malloc(tl), *want = malloc(tl), *back = malloc(ll);
        cr_assert(lin && tiled && want && back);
        t_rng_bytes(&r, lin, ll);
        memset(tiled, T_SENTINEL, tl);
        memset(want, T_SENTINEL, tl);
        for (uint32_t z = 0; z < m.d; z++)
            for (uint32_t y = 0; y < m.h; y++)
                for (uint32_t xu = 0; xu < wu; xu++) {
                    uint64_t idx = ref_morton_passes(xu, y, z, lw, lh, ld);
                    if (m.d == 1)
                        cr_assert_eq(idx, ref_morton_closed2d(xu, y, lw, lh));
                    memcpy(want + idx * unit, lin + (((size_t)z * m.h + y) * wu + xu) * unit, unit);
                }
        lib_tile(b, &m, tiled, tl, lin);
        ptrdiff_t k = t_find_diff(tiled, want, tl);
        cr_assert(k < 0,
                  "Morton %ux%ux%u E=%u U=%u [%s]: tiled byte %td is 0x%02x, the definition of 6.1/6.2 wants "
                  "0x%02x (padding keeps 0x%02x)" T_CTX_FMT,
                  m.w, m.h, m.d, m.e, unit, t_backend_label(b), k, tiled[k], want[k], T_SENTINEL, T_CTX_ARGS);
        memset(back, 0, ll);
        lib_untile(b, &m, tiled, tl, back);
        cr_assert(t_find_diff(back, lin, ll) < 0, "Morton %ux%ux%u E=%u U=%u [%s]: round trip differs" T_CTX_FMT,
                  m.w, m.h, m.d, m.e, unit, t_backend_label(b), T_CTX_ARGS);
        free(lin);
        free(tiled);
        free(want);
        free(back);
    }
}

/* 6.3: E = 8 swizzled in 4-byte units. Both halves of a texel are neighbours along x (index bit
 * 0), so each texel is 8 contiguous bytes; but the next texel along x is not the next 8 bytes. */
static void backend_wide_texels(enum vidmm_backend b)
{
    require(b);
    struct msurf m = { 16, 8, 1, 8, 4 };
    size_t ll = (size_t)m.w * m.h * 8, tl = tiled_bytes(&m);
    cr_assert_eq(tl, ll, "16x8 texels of 8 bytes in 4-byte units: 32x8 units, no padding");
    unsigned char *lin = malloc(ll), *tiled = malloc(tl);
    cr_assert(lin && tiled);
    for (size_t i = 0; i < ll; i++)
        lin[i] = (unsigned char)(i * 7 + 3);
    memset(tiled, 0, tl);
    lib_tile(b, &m, tiled, tl, lin);
    uint32_t lw = ref_ceil_log2(32), lh = ref_ceil_log2(8);
    size_t neighbours_apart = 0;
    for (uint32_t y = 0; y < m.h; y++)
        for (uint32_t x = 0; x < m.w; x++) {
            uint64_t a = ref_morton_passes(2 * x, y, 0, lw, lh, 0) * 4;
            cr_assert_eq(ref_morton_passes(2 * x + 1, y, 0, lw, lh, 0) * 4, a + 4);
            cr_assert(memcmp(tiled + a, lin + ((size_t)y * m.w + x) * 8, 8) == 0,
                      "[%s] texel (%u,%u) is not the 8 contiguous bytes at %llu", t_backend_label(b), x, y,
                      (unsigned long long)a);
            if (x + 1 < m.w && ref_morton_passes(2 * x + 2, y, 0, lw, lh, 0) * 4 != a + 8)
                neighbours_apart++;
        }
    cr_assert_gt(neighbours_apart, 0, "some texel's right neighbour should not follow it in memory");
    free(lin);
    free(tiled);
}

#define MORTON_BACKEND_TESTS(tag, B)                                                             \
    Test(morton_##tag, bijection_pot, .timeout = T_TIMEOUT) { backend_bijection(B); }            \
    Test(morton_##tag, examples_6_1, .timeout = T_TIMEOUT) { backend_examples(B); }              \
    Test(morton_##tag, npot_and_round_trip, .timeout = T_TIMEOUT) { backend_npot(B); }           \
    Test(morton_##tag, wide_texels_e8_u4, .timeout = T_TIMEOUT) { backend_wide_texels(B); }

T_FOR_EACH_BACKEND(MORTON_BACKEND_TESTS)
MORTON_BACKEND_TESTS(default, VIDMM_BACKEND_AUTO)
