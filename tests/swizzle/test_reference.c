/* SPDX-License-Identifier: MIT */
/* tests/swizzle/test_reference.c - the library against the independent reference model of
 * ref_model.c on random surfaces and boxes of every tiling, on every backend.
 *
 * Each case draws a surface (sizes that are not multiples of the tile, odd element sizes 3, 6
 * and 12 where the tiling takes them, mips, layers, 3D), one subresource and a box in it (boxes
 * that start and end mid-tile, 1x1 boxes, whole mips, row and slice pitches with slack), then:
 *   - the sizes and the subresource description agree with the model, and every byte of the
 *     box maps inside the span the library reports for the subresource;
 *   - swizzle: the tiled buffer starts with random bytes; afterwards exactly the box's bytes have
 *     changed, each to the linear byte the model maps there;
 *   - deswizzle: the linear buffer starts with random bytes; afterwards exactly the box's bytes
 *     (not the pitch gaps) have changed, each to the tiled byte the model maps there;
 *   - the round trip returns the box unchanged.
 * Every buffer lies flush against a guard page, on a side chosen at random. The cases come from
 * t_seed() (VIDMM_TEST_SEED replays one), the same for every backend.
 *
 * VIDMM_SWIZZLE_CASES=<n> sets the number of cases per test (for long runs).
 *
 * Suites: reference_<backend>/<family> force a backend through the _ex calls;
 * reference_default/<family> use the plain calls and also check vidmm_swizzle_surface() and
 * vidmm_deswizzle_surface() against the model; CTest re-runs the latter per VIDMM_BACKEND. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"
#include "vidmm/swizzle.h"
#include "ref_model.h"

#define T_TIMEOUT 300

/* Cases per family and test, and size caps: enough variety per run, small enough for the ASan
 * build on two cores. */
#if defined(__SANITIZE_ADDRESS__)
#  define T_SLOW_BUILD 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define T_SLOW_BUILD 1
#  endif
#endif
#ifdef T_SLOW_BUILD
#  define N_CASES 40
#else
#  define N_CASES 80
#endif
#define MAX_TILED ((uint64_t)3 << 20)
#define MAX_BOX_BYTES ((uint64_t)96 << 10)
#define MAX_SURFACE_CHECK ((uint64_t)1 << 20)
/* Stop a test after this many failing cases: the first ones say it all. */
#define MAX_FAILS 3

enum fam { F_LINEAR, F_BL, F_BL3D, F_INTEL, F_D3D, F_AMD, F_EQUATION, F_MORTON, F_UNMODELLED, F_EQ_LOWXOR };

static const char *fam_name(enum fam f)
{
    static const char *names[] = { "linear", "block_linear", "block_linear_3d", "intel", "d3d", "amd",
                                   "equation", "morton", "unmodelled", "equation_lowxor" };
    return names[f];
}

struct api {
    bool ex;
    enum vidmm_backend backend;
    bool plan;    /* through vidmm_swizzle_plan_* (made per copy, with the _ex options) */
};

struct tcase {
    unsigned idx;
    enum fam fam;
    struct ref_surf s;
    struct vidmm_equation eq;
    struct ref_layout L;
    uint32_t mip, layer;
    bool null_box;
    struct vidmm_box box;
    size_t row_pitch, slice_pitch;
    enum vidmm_strategy tile_strategy, untile_strategy; /* _ex calls only */
};

/* ---------------------------------------------------------------------------------------------
 * Random helpers.
 * ------------------------------------------------------------------------------------------- */
static uint32_t urand(struct t_rng *r, uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)t_rng_below(r, (size_t)hi - lo + 1);
}

static bool chance(struct t_rng *r, unsigned pct)
{
    return t_rng_below(r, 100) < pct;
}

#define PICK(r, arr) ((arr)[t_rng_below((r), sizeof(arr) / sizeof((arr)[0]))])

static const uint32_t elems_any[] = { 1, 2, 3, 4, 6, 8, 12, 16 };
static const uint32_t elems_pow2[] = { 1, 2, 4, 8, 16 };

/* An extent up to 'max': often 1, often a multiple of 'tile' give or take one, else spread
 * evenly over the orders of magnitude. */
static uint32_t extent(struct t_rng *r, uint32_t max, uint32_t tile)
{
    uint32_t v;
    unsigned k = (unsigned)t_rng_below(r, 100);
    if (k < 10) {
        v = 1;
    } else if (k < 35 && tile > 0 && tile <= max) {
        v = tile * urand(r, 1, max / tile);
        v = v + urand(r, 0, 2) - 1;
    } else {
        v = (uint32_t)t_rng_len(r, 1, max);
    }
    if (v < 1)
        v = 1;
    if (v > max)
        v = max;
    return v;
}

static uint32_t pow2_upto(struct t_rng *r, uint32_t max)
{
    uint32_t n = ref_ceil_log2(max);
    uint32_t v = 1u << urand(r, 0, n);
    return v > max ? max : v;
}

static void surf_base(struct ref_surf *s, enum vidmm_tiling t)
{
    memset(s, 0, sizeof(*s));
    s->tiling = t;
    s->width = s->height = s->depth = 1;
    s->elem = 1;
    s->bw = s->bh = 1;
    s->mips = s->layers = 1;
}

static uint32_t some_mips(struct t_rng *r, const struct ref_surf *s, unsigned pct)
{
    if (!chance(r, pct))
        return 1;
    return urand(r, 1, ref_max_mips(s->width, s->height, s->depth));
}

/* ---------------------------------------------------------------------------------------------
 * Surfaces per family. Each draw may be refused (by the model or the size caps) and is retried.
 * ------------------------------------------------------------------------------------------- */
static void gen_linear(struct t_rng *r, struct tcase *c)
{
    struct ref_surf *s = &c->s;
    surf_base(s, VIDMM_TILING_LINEAR);
    s->elem = PICK(r, elems_any);
    if (chance(r, 60)) {
        s->width = extent(r, 300, 16);
        s->height = extent(r, 200, 8);
        s->depth = chance(r, 20) ? urand(r, 2, 8) : 1;
        if (chance(r, 50))
            s->pitch = s->width * s->elem + urand(r, 0, 100);
    } else {
        s->width = extent(r, 128, 16);
        s->height = extent(r, 128, 8);
        if (chance(r, 20))
            s->depth = urand(r, 2, 16);
        else
            s->layers = urand(r, 1, 4);
        s->mips = some_mips(r, s, 100);
    }
}

static void gen_bl(struct t_rng *r, struct tcase *c, bool three_d)
{
    struct ref_surf *s = &c->s;
    surf_base(s, VIDMM_TILING_BLOCK_LINEAR);
    s->elem = chance(r, 80) ? PICK(r, elems_any) : urand(r, 1, 16);
    if (three_d) {
        s->width = extent(r, 80, 16);
        s->height = extent(r, 80, 8);
        s->depth = urand(r, 2, 40);
        s->mips = some_mips(r, s, 50);
    } else {
        if (chance(r, 20)) {
            s->bw = s->bh = 4;
            s->elem = chance(r, 50) ? 8 : 16;
            s->width = extent(r, 1024, 64);
            s->height = extent(r, 1024, 64);
        } else {
            s->width = extent(r, 400, 16);
            s->height = extent(r, 300, 8);
        }
        s->layers = chance(r, 65) ? 1 : urand(r, 2, 6);
        s->mips = some_mips(r, s, 50);
    }
    if (chance(r, 40)) {
        /* Any explicit value, including ones taller than mip 0 needs: swizzle.h makes it the
         * block height of mip 0 as given (as the golden bl_mip_64x64_bc7_bh4 does for a single
         * mip), while 3.5 step 2 could be read as shrinking it for mip 0 of a chain too. */
        s->block_height = 1u << urand(r, 0, 5);
    }
    if (three_d && s->mips == 1 && chance(r, 30)) {
        /* An explicit block depth only where the size rule of 3.3 (depth rounded to
         * depth_auto(D)) and the addressing agree. */
        uint32_t bd = 1u << urand(r, 0, 4);
        uint32_t da = ref_depth_auto(s->depth);
        if ((s->depth + bd - 1) / bd * bd == (s->depth + da - 1) / da * da)
            s->block_depth = bd;
    }
}

static void gen_intel(struct t_rng *r, struct tcase *c)
{
    static const enum vidmm_tiling tilings[] = { VIDMM_TILING_INTEL_X, VIDMM_TILING_INTEL_Y, VIDMM_TILING_INTEL_4 };
    struct ref_surf *s = &c->s;
    surf_base(s, PICK(r, tilings));
    uint32_t tw = s->tiling == VIDMM_TILING_INTEL_X ? 512 : 128, th = s->tiling == VIDMM_TILING_INTEL_X ? 8 : 32;
    s->elem = PICK(r, elems_any);
    s->width = extent(r, 2200 / s->elem, (tw + s->elem - 1) / s->elem);
    s->height = extent(r, 100, th);
    if (chance(r, 40))
        s->pitch = (s->width * s->elem + tw - 1) / tw * tw + tw * urand(r, 0, 2);
    if (s->tiling != VIDMM_TILING_INTEL_4 && chance(r, 50))
        s->flags = VIDMM_TILING_FLAG_BIT6;
}

static void gen_d3d(struct t_rng *r, struct tcase *c)
{
    struct ref_surf *s = &c->s;
    surf_base(s, chance(r, 50) ? VIDMM_TILING_D3D_STD_64K : VIDMM_TILING_D3D_STD_4K);
    s->elem = PICK(r, elems_pow2);
    if (chance(r, 20)) {
        s->width = extent(r, 48, 16);
        s->height = extent(r, 48, 16);
        s->depth = urand(r, 2, 40);
    } else {
        if (chance(r, 10)) {
            s->bw = s->bh = 4;
            s->elem = chance(r, 50) ? 8 : 16;
            s->width = extent(r, 1200, 64);
            s->height = extent(r, 1000, 64);
        } else {
            s->width = extent(r, 400, 64);
            s->height = extent(r, 300, 32);
        }
        s->layers = chance(r, 70) ? 1 : urand(r, 2, 3);
    }
}

static void gen_amd(struct t_rng *r, struct tcase *c)
{
    static const uint32_t modes[] = { 5, 9, 27 };
    struct ref_surf *s = &c->s;
    surf_base(s, VIDMM_TILING_AMD_GFX10);
    s->amd_mode = PICK(r, modes);
    s->elem = s->amd_mode == 27 ? 4 : PICK(r, elems_pow2);
    if (s->amd_mode != 27 && chance(r, 25)) {
        s->width = extent(r, 48, 16);
        s->height = extent(r, 48, 16);
        s->depth = urand(r, 2, 40);
        return;
    }
    if (chance(r, 60)) {
        /* A mip chain (5.6): power-of-two extents, where addrlib's rounded-up mip extents and the
         * copied rounded-down ones agree; any extents (multiples of the block give or take one
         * often), where they differ in padding and in which mips go to the tail; BCn chains, laid
         * out on the base rounded up to whole 4x4 blocks. */
        unsigned k = (unsigned)t_rng_below(r, 100);
        if (k < 30) {
            s->width = pow2_upto(r, 512);
            s->height = pow2_upto(r, 512);
        } else if (k < 80 || s->amd_mode == 27) {
            s->width = extent(r, 520, 64);
            s->height = extent(r, 520, 32);
        } else {
            s->bw = s->bh = 4;
            s->elem = chance(r, 50) ? 8 : 16;
            s->width = extent(r, 1100, 256);
            s->height = extent(r, 700, 128);
        }
        s->mips = some_mips(r, s, 100);
    } else {
        s->width = extent(r, 400, 64);
        s->height = extent(r, 300, 64);
    }
    s->layers = chance(r, 60) ? 1 : urand(r, 2, 5);
}

/* A caller equation: every coordinate bit of the block once (a permutation, often with x0..x3
 * kept as the low bits as real layouts do), plus a few XOR terms that keep it a bijection (a
 * term only names a coordinate bit placed below the address bit it modifies) and, for 2D
 * arrays, XOR terms from the layer index.
 *
 * 'low_xor' (issue 12, defect 1): the XOR terms go on address bits 0..3 instead - inside what
 * would otherwise be the 16-byte run - and name a coordinate bit placed above the address bit
 * they modify (the block stays a bijection: the matrix is triangular the other way) or a
 * coordinate bit above the block (an _X-style equation reading the full coordinates). */
static void gen_equation(struct t_rng *r, struct tcase *c, bool low_xor)
{
    struct ref_surf *s = &c->s;
    struct vidmm_equation *eq = &c->eq;
    surf_base(s, VIDMM_TILING_EQUATION);
    memset(eq, 0, sizeof(*eq));
    bool thick = chance(r, 30);
    s->elem = PICK(r, elems_pow2);
    uint32_t e2 = ref_ceil_log2(s->elem);
    uint32_t n = urand(r, 4 > e2 + 2 ? 4 : e2 + 2, 16);
    uint32_t a_lo = e2 > 1 ? e2 : 1;
    uint32_t a_hi = n - 1 - (thick ? 1 : 0);
    if (a_hi > 10)
        a_hi = 10;
    if (a_hi < a_lo)
        a_hi = a_lo;
    uint32_t a = urand(r, a_lo, a_hi);
    uint32_t cz = 0;
    if (thick) {
        uint32_t cmax = n - a;
        if (cmax > 5)
            cmax = 5;
        cz = cmax >= 1 ? urand(r, 1, cmax) : 0;
    }
    if (a + cz > n)
        a = n - cz;
    uint32_t b = n - a - cz;
    /* The coordinate bits, in address order. */
    struct vidmm_eq_term order[VIDMM_EQ_MAX_BITS];
    uint32_t k = 0;
    for (uint32_t i = 0; i < a; i++)
        order[k++] = (struct vidmm_eq_term){ VIDMM_EQ_X, (uint8_t)i };
    for (uint32_t i = 0; i < b; i++)
        order[k++] = (struct vidmm_eq_term){ VIDMM_EQ_Y, (uint8_t)i };
    for (uint32_t i = 0; i < cz; i++)
        order[k++] = (struct vidmm_eq_term){ VIDMM_EQ_Z, (uint8_t)i };
    uint32_t fixed = chance(r, low_xor ? 80 : 50) ? (a < 4 ? a : 4) : 0;
    for (uint32_t i = n - 1; i > fixed; i--) {
        uint32_t j = urand(r, fixed, i);
        struct vidmm_eq_term t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    eq->bits = n;
    eq->thick = thick;
    for (uint32_t i = 0; i < n; i++)
        eq->term[i][0] = order[i];
    uint32_t extras = low_xor ? urand(r, 1, 3) : chance(r, 40) ? urand(r, 1, 3) : 0;
    for (uint32_t x = 0; x < extras; x++) {
        uint32_t i, j;
        struct vidmm_eq_term term;
        if (!low_xor) {
            i = urand(r, 1, n - 1);
            j = urand(r, 0, i - 1);
            term = order[j];
        } else {
            i = urand(r, 0, (n < 5 ? n : 5) - 2);
            j = urand(r, i + 1, n - 1);
            term = order[j];
            if (chance(r, 35)) {
                /* A bit above the block: x from a, y from b (z of a thick block is left alone:
                 * a thick surface has no coordinate above its slab bits in the model). */
                if (chance(r, 50))
                    term = (struct vidmm_eq_term){ VIDMM_EQ_X, (uint8_t)(a + urand(r, 0, 3)) };
                else
                    term = (struct vidmm_eq_term){ VIDMM_EQ_Y, (uint8_t)(b + urand(r, 0, 3)) };
            }
        }
        for (uint32_t t = 1; t < VIDMM_EQ_MAX_TERMS; t++)
            if (eq->term[i][t].channel == VIDMM_EQ_NONE) {
                eq->term[i][t] = term;
                break;
            }
    }
    s->width = extent(r, 200, 16);
    s->height = extent(r, 150, 16);
    if (thick) {
        s->depth = urand(r, 2, 20);
    } else if (chance(r, 40)) {
        s->layers = urand(r, 2, 4);
        uint32_t zx = urand(r, 1, 2);
        for (uint32_t x = 0; x < zx; x++) {
            uint32_t i = urand(r, 0, n - 1);
            for (uint32_t t = 1; t < VIDMM_EQ_MAX_TERMS; t++)
                if (eq->term[i][t].channel == VIDMM_EQ_NONE) {
                    eq->term[i][t] = (struct vidmm_eq_term){ VIDMM_EQ_Z, (uint8_t)urand(r, 0, 1) };
                    break;
                }
        }
    }
    s->eq = eq;
}

static void gen_morton(struct t_rng *r, struct tcase *c)
{
    struct ref_surf *s = &c->s;
    surf_base(s, VIDMM_TILING_MORTON);
    s->elem = PICK(r, elems_any);
    if (chance(r, 30)) {
        s->width = extent(r, 40, 8);
        s->height = extent(r, 40, 8);
        s->depth = urand(r, 2, 40);
    } else {
        s->width = extent(r, 300, 16);
        s->height = extent(r, 300, 16);
    }
    if (chance(r, 30)) {
        uint32_t divs[8], nd = 0;
        for (uint32_t u = 1; u <= s->elem; u++)
            if (s->elem % u == 0)
                divs[nd++] = u;
        s->unit = divs[t_rng_below(r, nd)];
    }
}

/* Draw the surface, the subresource and the box of case 'idx' of family 'f'. */
static void gen_case(struct t_rng *r, enum fam f, unsigned idx, struct tcase *c)
{
    memset(c, 0, sizeof(*c));
    c->idx = idx;
    c->fam = f;
    for (int tries = 0;; tries++) {
        cr_assert_lt(tries, 1000, "could not draw a %s surface the model covers", fam_name(f));
        switch (f) {
        case F_LINEAR: gen_linear(r, c); break;
        case F_BL: gen_bl(r, c, false); break;
        case F_BL3D: gen_bl(r, c, true); break;
        case F_INTEL: gen_intel(r, c); break;
        case F_D3D: gen_d3d(r, c); break;
        case F_AMD: gen_amd(r, c); break;
        case F_EQUATION: gen_equation(r, c, false); break;
        case F_EQ_LOWXOR: gen_equation(r, c, true); break;
        case F_MORTON: gen_morton(r, c); break;
        case F_UNMODELLED: cr_assert_fail("gen_case() does not draw unmodelled surfaces"); break;
        }
        if (ref_prepare(&c->L, &c->s) && c->L.tiled_size <= MAX_TILED && c->L.tiled_size > 0)
            break;
    }
    c->mip = urand(r, 0, c->s.mips - 1);
    c->layer = urand(r, 0, c->s.layers - 1);
    const struct ref_mip *m = &c->L.mip[c->mip];
    struct vidmm_box *b = &c->box;
    unsigned k = (unsigned)t_rng_below(r, 100);
    if (k < 12) {
        c->null_box = true;
        *b = (struct vidmm_box){ 0, 0, 0, m->w, m->h, m->d };
    } else if (k < 22) {
        *b = (struct vidmm_box){ urand(r, 0, m->w - 1), urand(r, 0, m->h - 1), urand(r, 0, m->d - 1), 1, 1, 1 };
    } else {
        b->x = chance(r, 20) ? 0 : urand(r, 0, m->w - 1);
        b->width = chance(r, 25) ? m->w - b->x : urand(r, 1, m->w - b->x);
        b->y = chance(r, 20) ? 0 : urand(r, 0, m->h - 1);
        b->height = chance(r, 25) ? m->h - b->y : urand(r, 1, m->h - b->y);
        b->z = urand(r, 0, m->d - 1);
        b->depth = urand(r, 1, m->d - b->z);
    }
    if (!c->null_box) {
        uint64_t row = (uint64_t)b->width * c->s.elem;
        while (row * b->height * b->depth > MAX_BOX_BYTES && b->depth > 1)
            b->depth = (b->depth + 1) / 2;
        while (row * b->height * b->depth > MAX_BOX_BYTES && b->height > 1)
            b->height = (b->height + 1) / 2;
    }
    size_t row = (size_t)b->width * c->s.elem;
    c->row_pitch = row + (chance(r, 50) ? 0 : urand(r, 1, 77));
    /* The strategies the header offers the copies: streaming stores in either direction,
     * streaming loads from a (write-combined) tiled source. The result must not change. */
    static const enum vidmm_strategy st_tile[] = { VIDMM_STRATEGY_AUTO, VIDMM_STRATEGY_AUTO,
                                                   VIDMM_STRATEGY_NONTEMPORAL };
    static const enum vidmm_strategy st_untile[] = { VIDMM_STRATEGY_AUTO, VIDMM_STRATEGY_NONTEMPORAL,
                                                     VIDMM_STRATEGY_STREAM_LOAD };
    c->tile_strategy = PICK(r, st_tile);
    c->untile_strategy = PICK(r, st_untile);
    c->slice_pitch = (b->height - 1) * c->row_pitch + row + (chance(r, 50) ? 0 : urand(r, 0, 300));
    /* Now and then a box of whole Intel Y / Tile4 tile columns, rows in fours: what the
     * four-row strip walks (swizzle.c, strips()) need, so that they run against the model on
     * every backend - the cached one both ways (AUTO, any row pitch), the streaming deswizzle
     * (NONTEMPORAL, a 64-byte row pitch). */
    if (f == F_INTEL && c->s.tiling != VIDMM_TILING_INTEL_X && !c->null_box && 128 % c->s.elem == 0 &&
        chance(r, 30)) {
        const uint32_t tw = 128 / c->s.elem;
        if (m->w >= tw && m->h >= 4) {
            b->x = b->x / tw * tw;
            if (b->x + tw > m->w)
                b->x = (m->w / tw - 1) * tw;
            uint32_t cols = (m->w - b->x) / tw, want = (b->width + tw - 1) / tw;
            b->width = (want < cols ? want : cols) * tw;
            b->y = b->y / 4 * 4;
            uint32_t rows = (m->h - b->y) / 4 * 4, h4 = (b->height + 3) / 4 * 4;
            b->height = h4 < rows ? h4 : rows;
            if (b->height == 0) {
                b->y = 0;
                b->height = 4;
            }
            row = (size_t)b->width * c->s.elem;
            while (row * b->height * b->depth > MAX_BOX_BYTES && b->height > 4)
                b->height -= 4;
            c->untile_strategy = chance(r, 50) ? VIDMM_STRATEGY_NONTEMPORAL : VIDMM_STRATEGY_AUTO;
            c->tile_strategy = VIDMM_STRATEGY_AUTO;
            c->row_pitch = c->untile_strategy == VIDMM_STRATEGY_NONTEMPORAL ? (row + 63) / 64 * 64
                                                                            : row + (chance(r, 50) ? 0 : urand(r, 1, 77));
            c->slice_pitch = (size_t)b->height * c->row_pitch;
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * Running one case.
 * ------------------------------------------------------------------------------------------- */
static const char *case_text(const struct tcase *c, const struct api *api)
{
    static char buf[512];
    char sd[256];
    int n = snprintf(buf, sizeof(buf),
                     "%s case %u [%s%s%s%s%s%s]: %s; mip %u layer %u box %s(%u,%u,%u)+(%ux%ux%u) row_pitch %zu "
                     "slice_pitch %zu",
                     fam_name(c->fam), c->idx, api->plan ? "plan, " : "",
                     api->ex ? t_backend_label(api->backend) : "default",
                     api->ex ? ", tile " : "", api->ex ? t_strategy_label(c->tile_strategy) : "",
                     api->ex ? ", untile " : "", api->ex ? t_strategy_label(c->untile_strategy) : "",
                     ref_describe(&c->s, sd, sizeof(sd)), c->mip, c->layer, c->null_box ? "NULL=" : "", c->box.x,
                     c->box.y, c->box.z, c->box.width, c->box.height, c->box.depth, c->row_pitch, c->slice_pitch);
    if (c->s.tiling == VIDMM_TILING_EQUATION && n > 0 && (size_t)n < sizeof(buf)) {
        /* The equation, MSB first, so a failure can be replayed by hand. */
        size_t len = (size_t)n;
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "; eq%s", c->eq.thick ? " thick" : "");
        for (uint32_t i = c->eq.bits; i-- > 0 && len < sizeof(buf);) {
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, " ");
            for (int t = 0; t < VIDMM_EQ_MAX_TERMS && len < sizeof(buf); t++) {
                const struct vidmm_eq_term *e = &c->eq.term[i][t];
                if (e->channel == VIDMM_EQ_NONE)
                    continue;
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%c%u", t ? "^" : "",
                                        "-xyz"[e->channel], e->bit);
            }
        }
    }
    return buf;
}

#define FAILF(c, api, fmt, ...) \
    cr_expect(0, "%s: " fmt T_CTX_FMT, case_text((c), (api)), ##__VA_ARGS__, T_CTX_ARGS)

/* A buffer of 'len' bytes flush against the leading or the trailing guard page. */
struct gbuf {
    struct t_region r;
    unsigned char *p;
};

static void gbuf_init(struct gbuf *g, size_t len, bool at_end)
{
    t_region_init(&g->r, len ? len : 1);
    g->p = at_end ? g->r.hi - len : g->r.lo;
}

static int lib_copy(const struct api *api, const struct vidmm_tile_layout *layout,
                    const struct vidmm_surface_desc *surf, const struct tcase *c, bool tile, unsigned char *tiled,
                    size_t tiled_size, unsigned char *lin, size_t lin_size)
{
    const struct vidmm_box *box = c->null_box ? NULL : &c->box;
    t_fault_context("%s %s", tile ? "swizzle" : "deswizzle", case_text(c, api));
    if (api->plan) {
        /* A plan made for this copy: its options are the _ex call's, its copy the same bytes. */
        struct vidmm_kernel_opts o = t_opts(api->backend, tile ? c->tile_strategy : c->untile_strategy);
        vidmm_swizzle_plan *plan = NULL;
        int rc = vidmm_swizzle_plan_create(layout, surf, c->mip, c->layer, &o, &plan);
        if (rc != 0)
            return rc;
        rc = tile ? vidmm_swizzle_plan_swizzle(plan, box, tiled, tiled_size, lin, lin_size, c->row_pitch,
                                               c->slice_pitch)
                  : vidmm_swizzle_plan_deswizzle(plan, box, tiled, tiled_size, lin, lin_size, c->row_pitch,
                                                 c->slice_pitch);
        vidmm_swizzle_plan_destroy(plan);
        return rc;
    }
    if (api->ex) {
        struct vidmm_kernel_opts o = t_opts(api->backend, tile ? c->tile_strategy : c->untile_strategy);
        if (tile)
            return vidmm_swizzle_ex(layout, surf, c->mip, c->layer, box, tiled, tiled_size, lin, lin_size,
                                    c->row_pitch, c->slice_pitch, &o);
        return vidmm_deswizzle_ex(layout, surf, c->mip, c->layer, box, tiled, tiled_size, lin, lin_size,
                                  c->row_pitch, c->slice_pitch, &o);
    }
    if (tile)
        return vidmm_swizzle(layout, surf, c->mip, c->layer, box, tiled, tiled_size, lin, lin_size, c->row_pitch,
                             c->slice_pitch);
    return vidmm_deswizzle(layout, surf, c->mip, c->layer, box, tiled, tiled_size, lin, lin_size, c->row_pitch,
                           c->slice_pitch);
}

/* Where a byte of the box is, for messages: the box byte whose tiled address or linear offset
 * is 'pos', or none. */
static void locate(const struct tcase *c, const uint64_t *addr, const size_t *loff, size_t nbytes, bool tiled_side,
                   size_t pos, char *out, size_t cap)
{
    size_t row = (size_t)c->box.width * c->s.elem;
    for (size_t i = 0; i < nbytes; i++)
        if ((tiled_side ? addr[i] : loff[i]) == pos) {
            size_t xb = i % row, y = (i / row) % c->box.height, z = i / row / c->box.height;
            snprintf(out, cap, "box byte x=%zu (element %zu, byte %zu) y=%zu z=%zu of the mip",
                     c->box.x * (size_t)c->s.elem + xb, c->box.x + xb / c->s.elem, xb % c->s.elem,
                     c->box.y + y, c->box.z + z);
            return;
        }
    snprintf(out, cap, "not a byte of the box: it must not change");
}

static bool check_buffer(const struct tcase *c, const struct api *api, const char *what, const unsigned char *got,
                         const unsigned char *want, size_t n, const uint64_t *addr, const size_t *loff,
                         size_t nbytes, bool tiled_side)
{
    ptrdiff_t k = t_find_diff(got, want, n);
    if (k < 0)
        return true;
    size_t count = 0;
    for (size_t i = (size_t)k; i < n; i++)
        count += got[i] != want[i];
    char where[160];
    locate(c, addr, loff, nbytes, tiled_side, (size_t)k, where, sizeof(where));
    FAILF(c, api, "%s: byte %td is 0x%02x, want 0x%02x (%s); %zu bytes wrong", what, k, got[k], want[k], where,
          count);
    return false;
}

static bool check_sizes(const struct tcase *c, const struct api *api, const struct vidmm_tile_layout *layout,
                        const struct vidmm_surface_desc *surf)
{
    uint64_t tiled = 0, linear = 0;
    int rc = vidmm_surface_tiled_size(layout, surf, &tiled);
    if (rc != 0 || tiled != c->L.tiled_size) {
        FAILF(c, api, "vidmm_surface_tiled_size() = %d, %llu bytes; the model says %llu", rc,
              (unsigned long long)tiled, (unsigned long long)c->L.tiled_size);
        return false;
    }
    rc = vidmm_surface_linear_size(layout, surf, &linear);
    if (rc != 0 || linear != c->L.linear_size) {
        FAILF(c, api, "vidmm_surface_linear_size() = %d, %llu bytes; the model says %llu", rc,
              (unsigned long long)linear, (unsigned long long)c->L.linear_size);
        return false;
    }
    struct vidmm_subresource_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    rc = vidmm_surface_subresource(layout, surf, c->mip, c->layer, &info);
    const struct ref_mip *m = &c->L.mip[c->mip];
    if (rc != 0 || info.width != m->w || info.height != m->h || info.depth != m->d ||
        info.linear_offset != ref_linear_offset(&c->L, c->mip, c->layer) ||
        info.linear_size != (uint64_t)m->w * m->h * m->d * c->s.elem) {
        FAILF(c, api,
              "vidmm_surface_subresource() = %d: %ux%ux%u elements, linear offset %llu size %llu; the model says "
              "%ux%ux%u, %llu, %llu",
              rc, info.width, info.height, info.depth, (unsigned long long)info.linear_offset,
              (unsigned long long)info.linear_size, m->w, m->h, m->d,
              (unsigned long long)ref_linear_offset(&c->L, c->mip, c->layer),
              (unsigned long long)((uint64_t)m->w * m->h * m->d * c->s.elem));
        return false;
    }
    if (c->s.tiling == VIDMM_TILING_BLOCK_LINEAR &&
        (info.block_height != m->gob_bh || info.block_depth != m->gob_bd)) {
        FAILF(c, api, "mip block height/depth %u/%u; the model says %u/%u", info.block_height, info.block_depth,
              m->gob_bh, m->gob_bd);
        return false;
    }
    if (info.tiled_offset > tiled || info.tiled_size > tiled - info.tiled_offset) {
        FAILF(c, api, "subresource span [%llu, +%llu) exceeds the %llu-byte surface",
              (unsigned long long)info.tiled_offset, (unsigned long long)info.tiled_size,
              (unsigned long long)tiled);
        return false;
    }
    return true;
}

/* The whole-surface calls against the model (reference_default only). */
static bool check_surface_calls(const struct tcase *c, const struct api *api, struct t_rng *r,
                                const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surf)
{
    size_t tl = (size_t)c->L.tiled_size, ll = (size_t)c->L.linear_size;
    if (tl > MAX_SURFACE_CHECK || ll > MAX_SURFACE_CHECK)
        return true;
    bool ok = true;
    struct gbuf t, l;
    gbuf_init(&t, tl, chance(r, 50));
    gbuf_init(&l, ll, chance(r, 50));
    unsigned char *want = malloc(tl > ll ? tl : ll);
    cr_assert(want != NULL);

    t_rng_bytes(r, t.p, tl);
    t_rng_bytes(r, l.p, ll);
    memcpy(want, t.p, tl);
    ref_tile_surface(&c->L, want, l.p);
    t_fault_context("vidmm_swizzle_surface %s", case_text(c, api));
    vidmm_swizzle_plan *plan = NULL;
    if (api->plan) {
        struct vidmm_kernel_opts o = t_opts(api->backend, VIDMM_STRATEGY_AUTO);
        cr_assert_eq(vidmm_swizzle_plan_create(layout, surf, VIDMM_SWIZZLE_PLAN_SURFACE, 0, &o, &plan), 0,
                     "whole-surface plan of %s", case_text(c, api));
    }
    int rc = plan ? vidmm_swizzle_plan_swizzle(plan, NULL, t.p, tl, l.p, ll, 0, 0)
                  : vidmm_swizzle_surface(layout, surf, t.p, tl, l.p, ll);
    if (rc != 0) {
        FAILF(c, api, "vidmm_swizzle_surface() returned %d (%s)", rc, vidmm_strerror(rc));
        ok = false;
    } else {
        ok = check_buffer(c, api, "vidmm_swizzle_surface() (padding must keep its old bytes)", t.p, want, tl, NULL,
                          NULL, 0, true) && ok;
    }

    t_rng_bytes(r, t.p, tl);
    t_rng_bytes(r, l.p, ll);
    memcpy(want, l.p, ll);
    ref_untile_surface(&c->L, t.p, want);
    t_fault_context("vidmm_deswizzle_surface %s", case_text(c, api));
    rc = plan ? vidmm_swizzle_plan_deswizzle(plan, NULL, t.p, tl, l.p, ll, 0, 0)
              : vidmm_deswizzle_surface(layout, surf, t.p, tl, l.p, ll);
    vidmm_swizzle_plan_destroy(plan);
    if (rc != 0) {
        FAILF(c, api, "vidmm_deswizzle_surface() returned %d (%s)", rc, vidmm_strerror(rc));
        ok = false;
    } else {
        ok = check_buffer(c, api, "vidmm_deswizzle_surface()", l.p, want, ll, NULL, NULL, 0, false) && ok;
    }
    free(want);
    t_region_fini(&t.r);
    t_region_fini(&l.r);
    return ok;
}

static bool run_case(const struct api *api, struct tcase *c, struct t_rng *r)
{
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    ref_to_public(&c->s, &layout, &surf);
    if (!check_sizes(c, api, &layout, &surf))
        return false;

    /* The box, byte by byte: its tiled address and its offset in the linear buffer. */
    const struct vidmm_box *b = &c->box;
    size_t row = (size_t)b->width * c->s.elem;
    size_t nbytes = row * b->height * b->depth;
    size_t lin_size = (b->depth - 1) * c->slice_pitch + (b->height - 1) * c->row_pitch + row;
    size_t tiled_size = (size_t)c->L.tiled_size;
    uint64_t *addr = malloc(nbytes * sizeof(*addr));
    size_t *loff = malloc(nbytes * sizeof(*loff));
    cr_assert(addr != NULL && loff != NULL, "out of memory");
    struct vidmm_subresource_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    vidmm_surface_subresource(&layout, &surf, c->mip, c->layer, &info);
    bool ok = true;
    size_t i = 0;
    for (uint32_t z = 0; z < b->depth; z++)
        for (uint32_t y = 0; y < b->height; y++)
            for (size_t xb = 0; xb < row; xb++, i++) {
                addr[i] = ref_addr(&c->L, c->mip, c->layer, (uint64_t)b->x * c->s.elem + xb, b->y + y, b->z + z);
                loff[i] = z * c->slice_pitch + y * c->row_pitch + xb;
                if (ok && (addr[i] < info.tiled_offset || addr[i] >= info.tiled_offset + info.tiled_size)) {
                    FAILF(c, api, "box byte %zu maps to tiled byte %llu, outside the subresource span [%llu, +%llu)",
                          i, (unsigned long long)addr[i], (unsigned long long)info.tiled_offset,
                          (unsigned long long)info.tiled_size);
                    ok = false;
                }
            }

    struct gbuf t, l, l2;
    gbuf_init(&t, tiled_size, chance(r, 50));
    gbuf_init(&l, lin_size, chance(r, 50));
    gbuf_init(&l2, lin_size, chance(r, 50));
    unsigned char *want = malloc(tiled_size > lin_size ? tiled_size : lin_size);
    cr_assert(want != NULL, "out of memory");

    /* Swizzle: only the box's bytes of the tiled buffer change. */
    t_rng_bytes(r, t.p, tiled_size);
    t_rng_bytes(r, l.p, lin_size);
    memcpy(want, t.p, tiled_size);
    for (i = 0; i < nbytes; i++)
        want[addr[i]] = l.p[loff[i]];
    int rc = lib_copy(api, &layout, &surf, c, true, t.p, tiled_size, l.p, lin_size);
    bool tiled_ok = false;
    if (rc != 0) {
        FAILF(c, api, "swizzle returned %d (%s)", rc, vidmm_strerror(rc));
        ok = false;
    } else {
        tiled_ok = check_buffer(c, api, "swizzle", t.p, want, tiled_size, addr, loff, nbytes, true);
        ok = tiled_ok && ok;
    }

    /* Round trip: untile what was just tiled into a fresh buffer; the box comes back. */
    if (tiled_ok) {
        t_rng_bytes(r, l2.p, lin_size);
        memcpy(want, l2.p, lin_size);
        for (i = 0; i < nbytes; i++)
            want[loff[i]] = l.p[loff[i]];
        rc = lib_copy(api, &layout, &surf, c, false, t.p, tiled_size, l2.p, lin_size);
        if (rc != 0) {
            FAILF(c, api, "deswizzle (round trip) returned %d (%s)", rc, vidmm_strerror(rc));
            ok = false;
        } else {
            ok = check_buffer(c, api, "round trip", l2.p, want, lin_size, addr, loff, nbytes, false) && ok;
        }
    }

    /* Deswizzle from random tiled bytes: only the box's bytes of the linear buffer change. */
    t_rng_bytes(r, t.p, tiled_size);
    t_rng_bytes(r, l.p, lin_size);
    memcpy(want, l.p, lin_size);
    for (i = 0; i < nbytes; i++)
        want[loff[i]] = t.p[addr[i]];
    rc = lib_copy(api, &layout, &surf, c, false, t.p, tiled_size, l.p, lin_size);
    if (rc != 0) {
        FAILF(c, api, "deswizzle returned %d (%s)", rc, vidmm_strerror(rc));
        ok = false;
    } else {
        ok = check_buffer(c, api, "deswizzle", l.p, want, lin_size, addr, loff, nbytes, false) && ok;
    }

    free(want);
    free(addr);
    free(loff);
    t_region_fini(&t.r);
    t_region_fini(&l.r);
    t_region_fini(&l2.r);

    if (!api->ex || api->plan)
        ok = check_surface_calls(c, api, r, &layout, &surf) && ok;
    return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Surfaces the model does not cover: combinations the spec leaves open or marks [not covered]
 * that the library still accepts (Morton mip chains and arrays, pitch-linear chains,
 * block-linear 3D chains with an explicit block depth, D3D/AMD block-compressed arrays; AMD mip
 * chains of any extent, which the model now covers, stay drawn here too). No oracle says where
 * their bytes go, but any layout must keep these properties, which are checked:
 *   - tiling one subresource changes only bytes inside the span vidmm_surface_subresource()
 *     reports for it;
 *   - tiling every subresource, then untiling every subresource, returns the packed linear image
 *     exactly (so no two bytes of the surface share a tiled byte);
 *   - the whole-surface calls agree with the per-subresource ones (reference_default only).
 * ------------------------------------------------------------------------------------------- */
static bool gen_unmodelled(struct t_rng *r, struct tcase *c)
{
    struct ref_surf *s = &c->s;
    switch (t_rng_below(r, 5)) {
    case 0:
        surf_base(s, VIDMM_TILING_MORTON);
        s->elem = PICK(r, elems_any);
        s->width = extent(r, 200, 16);
        s->height = extent(r, 200, 16);
        if (chance(r, 30))
            s->depth = urand(r, 2, 20);
        else
            s->layers = urand(r, 1, 4);
        s->mips = some_mips(r, s, 80);
        if (chance(r, 30) && s->elem % 2 == 0)
            s->unit = s->elem / 2;
        break;
    case 1:
        surf_base(s, VIDMM_TILING_AMD_GFX10);
        s->amd_mode = (uint32_t[]){ 5, 9, 27 }[t_rng_below(r, 3)];
        s->elem = s->amd_mode == 27 ? 4 : PICK(r, elems_pow2);
        s->width = extent(r, 300, 64);
        s->height = extent(r, 300, 64);
        s->layers = chance(r, 70) ? 1 : urand(r, 2, 3);
        s->mips = urand(r, 2 <= ref_max_mips(s->width, s->height, 1) ? 2 : 1, ref_max_mips(s->width, s->height, 1));
        break;
    case 2:
        surf_base(s, VIDMM_TILING_LINEAR);
        s->elem = PICK(r, elems_any);
        s->width = extent(r, 200, 16);
        s->height = extent(r, 200, 16);
        s->layers = urand(r, 1, 3);
        s->mips = some_mips(r, s, 100);
        s->pitch = chance(r, 50) ? s->width * s->elem + urand(r, 0, 64) : 0;
        break;
    case 3:
        surf_base(s, VIDMM_TILING_BLOCK_LINEAR);
        s->elem = PICK(r, elems_any);
        s->width = extent(r, 64, 16);
        s->height = extent(r, 64, 8);
        s->depth = urand(r, 2, 40);
        s->mips = urand(r, 1, ref_max_mips(s->width, s->height, s->depth));
        s->block_depth = 1u << urand(r, 0, 4);
        if (chance(r, 40))
            s->block_height = 1u << urand(r, 0, 5);
        break;
    default:
        surf_base(s, chance(r, 50) ? VIDMM_TILING_D3D_STD_64K : VIDMM_TILING_D3D_STD_4K);
        if (chance(r, 50)) {
            s->tiling = VIDMM_TILING_AMD_GFX10;
            s->amd_mode = chance(r, 50) ? 5 : 9;
        }
        s->bw = s->bh = 4;
        s->elem = chance(r, 50) ? 8 : 16;
        s->width = extent(r, 1000, 64);
        s->height = extent(r, 600, 64);
        s->layers = urand(r, 1, 3);
        break;
    }
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    ref_to_public(s, &layout, &surf);
    uint64_t tiled = 0, linear = 0;
    return vidmm_surface_tiled_size(&layout, &surf, &tiled) == 0 &&
           vidmm_surface_linear_size(&layout, &surf, &linear) == 0 && tiled > 0 && tiled <= MAX_SURFACE_CHECK &&
           linear <= MAX_SURFACE_CHECK;
}

static int sub_copy(const struct api *api, const struct vidmm_tile_layout *layout,
                    const struct vidmm_surface_desc *surf, uint32_t mip, uint32_t layer,
                    const struct vidmm_subresource_info *info, bool tile, unsigned char *tiled, size_t tl,
                    unsigned char *lin, uint32_t elem)
{
    size_t row = (size_t)info->width * elem;
    struct vidmm_kernel_opts o = t_opts(api->ex ? api->backend : VIDMM_BACKEND_AUTO, VIDMM_STRATEGY_AUTO);
    if (tile)
        return vidmm_swizzle_ex(layout, surf, mip, layer, NULL, tiled, tl, lin + info->linear_offset,
                                (size_t)info->linear_size, row, row * info->height, &o);
    return vidmm_deswizzle_ex(layout, surf, mip, layer, NULL, tiled, tl, lin + info->linear_offset,
                              (size_t)info->linear_size, row, row * info->height, &o);
}

static bool run_unmodelled(const struct api *api, struct tcase *c, struct t_rng *r)
{
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    ref_to_public(&c->s, &layout, &surf);
    uint64_t t64 = 0, l64 = 0;
    vidmm_surface_tiled_size(&layout, &surf, &t64);
    vidmm_surface_linear_size(&layout, &surf, &l64);
    size_t tl = (size_t)t64, ll = (size_t)l64;
    struct gbuf t, l, back;
    gbuf_init(&t, tl, chance(r, 50));
    gbuf_init(&l, ll, chance(r, 50));
    gbuf_init(&back, ll, chance(r, 50));
    unsigned char *before = malloc(tl);
    cr_assert(before != NULL);
    t_rng_bytes(r, t.p, tl);
    t_rng_bytes(r, l.p, ll);
    bool ok = true;
    char sd[256];
    ref_describe(&c->s, sd, sizeof(sd));
    const char *who = api->ex ? t_backend_label(api->backend) : "default";
    for (uint32_t ly = 0; ly < c->s.layers && ok; ly++)
        for (uint32_t m = 0; m < c->s.mips && ok; m++) {
            struct vidmm_subresource_info info;
            memset(&info, 0, sizeof(info));
            info.size = sizeof(info);
            int rc = vidmm_surface_subresource(&layout, &surf, m, ly, &info);
            if (rc != 0 || info.linear_offset + info.linear_size > ll || info.tiled_offset > tl ||
                info.tiled_size > tl - info.tiled_offset) {
                cr_expect(0, "unmodelled case %u [%s]: %s: subresource mip %u layer %u: rc %d, linear [%llu, +%llu), "
                          "tiled [%llu, +%llu) in a %zu / %zu-byte surface" T_CTX_FMT, c->idx, who, sd, m, ly, rc,
                          (unsigned long long)info.linear_offset, (unsigned long long)info.linear_size,
                          (unsigned long long)info.tiled_offset, (unsigned long long)info.tiled_size, tl, ll,
                          T_CTX_ARGS);
                ok = false;
                break;
            }
            memcpy(before, t.p, tl);
            t_fault_context("unmodelled tile mip %u layer %u: %s", m, ly, sd);
            rc = sub_copy(api, &layout, &surf, m, ly, &info, true, t.p, tl, l.p, c->s.elem);
            if (rc != 0) {
                cr_expect(0, "unmodelled case %u [%s]: %s: swizzle of mip %u layer %u returned %d" T_CTX_FMT, c->idx,
                          who, sd, m, ly, rc, T_CTX_ARGS);
                ok = false;
                break;
            }
            for (size_t i = 0; i < tl; i++)
                if (t.p[i] != before[i] && (i < info.tiled_offset || i >= info.tiled_offset + info.tiled_size)) {
                    cr_expect(0, "unmodelled case %u [%s]: %s: tiling mip %u layer %u wrote byte %zu, outside its "
                              "span [%llu, +%llu)" T_CTX_FMT, c->idx, who, sd, m, ly, i,
                              (unsigned long long)info.tiled_offset, (unsigned long long)info.tiled_size, T_CTX_ARGS);
                    ok = false;
                    break;
                }
        }
    if (ok) {
        t_rng_bytes(r, back.p, ll);
        for (uint32_t ly = 0; ly < c->s.layers && ok; ly++)
            for (uint32_t m = 0; m < c->s.mips && ok; m++) {
                struct vidmm_subresource_info info;
                memset(&info, 0, sizeof(info));
                info.size = sizeof(info);
                vidmm_surface_subresource(&layout, &surf, m, ly, &info);
                t_fault_context("unmodelled untile mip %u layer %u: %s", m, ly, sd);
                int rc = sub_copy(api, &layout, &surf, m, ly, &info, false, t.p, tl, back.p, c->s.elem);
                if (rc != 0) {
                    cr_expect(0, "unmodelled case %u [%s]: %s: deswizzle of mip %u layer %u returned %d" T_CTX_FMT,
                              c->idx, who, sd, m, ly, rc, T_CTX_ARGS);
                    ok = false;
                }
            }
        ptrdiff_t k = ok ? t_find_diff(back.p, l.p, ll) : -1;
        if (k >= 0) {
            cr_expect(0, "unmodelled case %u [%s]: %s: tiling then untiling every subresource changed linear byte "
                      "%td (two bytes share a tiled byte, or a copy misses one)" T_CTX_FMT, c->idx, who, sd, k,
                      T_CTX_ARGS);
            ok = false;
        }
    }
    if (ok && !api->ex) {
        /* The whole-surface calls: the same tiled bytes inside the subresources, the same image. */
        memcpy(before, t.p, tl);
        int rc = vidmm_swizzle_surface(&layout, &surf, t.p, tl, l.p, ll);
        ptrdiff_t k = rc == 0 ? t_find_diff(t.p, before, tl) : -1;
        cr_expect(rc == 0 && k < 0, "unmodelled case %u: %s: vidmm_swizzle_surface() returned %d%s" T_CTX_FMT,
                  c->idx, sd, rc, k >= 0 ? " and differs from the per-subresource calls" : "", T_CTX_ARGS);
        memset(back.p, 0, ll);
        rc = vidmm_deswizzle_surface(&layout, &surf, t.p, tl, back.p, ll);
        k = rc == 0 ? t_find_diff(back.p, l.p, ll) : -1;
        cr_expect(rc == 0 && k < 0, "unmodelled case %u: %s: vidmm_deswizzle_surface() returned %d%s" T_CTX_FMT,
                  c->idx, sd, rc, k >= 0 ? " and differs from the linear image" : "", T_CTX_ARGS);
        ok = rc == 0 && k < 0;
    }
    free(before);
    t_region_fini(&t.r);
    t_region_fini(&l.r);
    t_region_fini(&back.r);
    return ok;
}

static void run_family(const struct api *api, enum fam f)
{
    if (api->ex)
        t_require_backend(api->backend);
    /* The same cases for every backend: the stream depends on the family only. */
    struct t_rng gen, data;
    t_rng_init(&gen, 0x5157 + (uint64_t)f);
    t_rng_init(&data, 0xDA7A + (uint64_t)f);
    unsigned fails = 0, n = api->plan ? N_CASES / 4 : api->ex ? N_CASES : N_CASES / 2;
    const char *env = getenv("VIDMM_SWIZZLE_CASES");
    if (env != NULL && atoi(env) > 0)
        n = (unsigned)atoi(env);
    struct tcase *c = malloc(sizeof(*c));
    cr_assert(c != NULL);
    for (unsigned idx = 0; idx < n && fails < MAX_FAILS; idx++) {
        if (f == F_UNMODELLED) {
            memset(c, 0, sizeof(*c));
            c->idx = idx;
            c->fam = f;
            int tries = 0;
            while (!gen_unmodelled(&gen, c))
                cr_assert_lt(++tries, 1000, "no surface of the unmodelled kinds is accepted by the library");
            if (!run_unmodelled(api, c, &data))
                fails++;
            continue;
        }
        gen_case(&gen, f, idx, c);
        if (!run_case(api, c, &data))
            fails++;
    }
    free(c);
}

#define REF_FAMILY_TEST(suite, name, F, EX, B, PLAN)                     \
    Test(suite, name, .timeout = T_TIMEOUT)                        \
    {                                                              \
        struct api a = { EX, B, PLAN };                            \
        run_family(&a, F);                                         \
    }

#define REF_SUITE(suite, EX, B, PLAN)                                         \
    REF_FAMILY_TEST(suite, linear, F_LINEAR, EX, B, PLAN)                     \
    REF_FAMILY_TEST(suite, block_linear, F_BL, EX, B, PLAN)                   \
    REF_FAMILY_TEST(suite, block_linear_3d, F_BL3D, EX, B, PLAN)              \
    REF_FAMILY_TEST(suite, intel, F_INTEL, EX, B, PLAN)                       \
    REF_FAMILY_TEST(suite, d3d, F_D3D, EX, B, PLAN)                           \
    REF_FAMILY_TEST(suite, amd, F_AMD, EX, B, PLAN)                           \
    REF_FAMILY_TEST(suite, equation, F_EQUATION, EX, B, PLAN)                 \
    REF_FAMILY_TEST(suite, d01_equation_xor_on_run_bits, F_EQ_LOWXOR, EX, B, PLAN) \
    REF_FAMILY_TEST(suite, morton, F_MORTON, EX, B, PLAN)                     \
    REF_FAMILY_TEST(suite, unmodelled, F_UNMODELLED, EX, B, PLAN)

#define REF_BACKEND_TESTS(tag, B) REF_SUITE(reference_##tag, true, B, false)
/* The same cases through plans (fewer of them: the walks are the ones above), the whole-surface
 * plans too, on every backend. */
#define REF_PLAN_TESTS(tag, B) REF_SUITE(reference_plan_##tag, true, B, true)

T_FOR_EACH_BACKEND(REF_BACKEND_TESTS)
T_FOR_EACH_BACKEND(REF_PLAN_TESTS)
REF_SUITE(reference_default, false, VIDMM_BACKEND_AUTO, false)

/* ---------------------------------------------------------------------------------------------
 * AMD mip chains of NPOT bases (5.6), pinned by hand rather than through the model: addrlib lays
 * each mip out with its rounded-up extent (Gfx10Lib::GetMipSize, ShiftCeil) while the bytes
 * copied are the API's max(1, W >> m). A library or model that took the rounded-down extent for
 * the layout fails both cases.
 * ------------------------------------------------------------------------------------------- */

static void npot_sub(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surf, uint32_t mip,
                     uint32_t w, uint32_t h, uint64_t off, uint64_t size)
{
    struct vidmm_subresource_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    int rc = vidmm_surface_subresource(layout, surf, mip, 0, &info);
    cr_expect(rc == 0 && info.width == w && info.height == h && info.tiled_offset == off && info.tiled_size == size,
              "mip %u: rc %d, %ux%u elements at [%llu, +%llu); expected %ux%u at [%llu, +%llu)", mip, rc, info.width,
              info.height, (unsigned long long)info.tiled_offset, (unsigned long long)info.tiled_size, w, h,
              (unsigned long long)off, (unsigned long long)size);
}

Test(swizzle_amd_npot, addrlib_examples)
{
    struct ref_surf s;
    struct ref_layout L;
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    uint64_t bytes = 0;

    /* The example in the comment of Gfx10Lib / Gfx11Lib::HwlComputeNonBlockCompressedView: 64 KB
     * block, 8-byte elements (block 0x80 x 0x40), API mip 0 width 0x401 pixels of BC1 = 0x101
     * blocks, mip 1 0x200 pixels = 0x80 blocks; "the pitch for mip level 1 would be 0x100 ... due
     * to rounding up logic in GetMipSize()". With 256 rows: mip 1 is 256 x 64 padded elements
     * (ceil(0x101 / 2) = 0x81), 131072 B at offset 0 (smallest first, no tail: 0x81 > 64); mip 0
     * is 384 x 64, 196608 B after it. The rounded-down extent would pad mip 1 to 128 x 64. */
    surf_base(&s, VIDMM_TILING_AMD_GFX10);
    s.amd_mode = 9;
    s.bw = s.bh = 4;
    s.elem = 8;
    s.width = 0x401;
    s.height = 256;
    s.mips = 2;
    ref_to_public(&s, &layout, &surf);
    cr_expect_eq(vidmm_surface_tiled_size(&layout, &surf, &bytes), 0);
    cr_expect_eq(bytes, 327680, "BC1 0x401 x 256, 2 mips: %llu tiled bytes, expected 327680", (unsigned long long)bytes);
    npot_sub(&layout, &surf, 1, 0x80, 32, 0, 131072);
    npot_sub(&layout, &surf, 0, 0x101, 64, 131072, 196608);
    cr_expect(ref_prepare(&L, &s) && L.tiled_size == 327680, "the model: %llu tiled bytes",
              (unsigned long long)L.tiled_size);

    /* Which mips go to the tail [derived from ComputeSurfaceInfoMacroTiled]: 129 x 129, 4-byte
     * elements, 64 KB block 128 x 128, tail mips at most 64 x 128. Mip 1 is 65 x 65 for addrlib,
     * so not in the tail: an ordinary mip at offset 0 (128 x 128 padded, 65536 B), its element
     * (0, 0) at byte 0. Its copied extent, 64 x 64, would fit the tail, where (0, 0) would lie at
     * the origin (64, 0) of slot 11, not at byte 0. */
    surf_base(&s, VIDMM_TILING_AMD_GFX10);
    s.amd_mode = 9;
    s.elem = 4;
    s.width = s.height = 129;
    s.mips = 2;
    ref_to_public(&s, &layout, &surf);
    cr_expect_eq(vidmm_surface_tiled_size(&layout, &surf, &bytes), 0);
    cr_expect_eq(bytes, 327680, "129 x 129, 2 mips: %llu tiled bytes, expected 327680", (unsigned long long)bytes);
    npot_sub(&layout, &surf, 1, 64, 64, 0, 65536);
    npot_sub(&layout, &surf, 0, 129, 129, 65536, 262144);
    unsigned char *tiled = calloc(1, (size_t)bytes);
    cr_assert(tiled != NULL);
    const unsigned char texel[4] = { 1, 2, 3, 4 };
    struct vidmm_box box = { 0, 0, 0, 1, 1, 1 };
    cr_expect_eq(vidmm_swizzle(&layout, &surf, 1, 0, &box, tiled, (size_t)bytes, texel, 4, 4, 4), 0);
    cr_expect(memcmp(tiled, texel, 4) == 0, "mip 1 element (0, 0) is not at byte 0");
    free(tiled);
    cr_expect(ref_prepare(&L, &s) && !L.mip[1].in_tail && L.mip[1].off == 0 && ref_addr(&L, 1, 0, 0, 0, 0) == 0,
              "the model puts mip 1 in the tail or elsewhere than byte 0");
}

/* ---------------------------------------------------------------------------------------------
 * The per-thread cache of resolved subresources (swizzle.c) is keyed on what the descriptors
 * hold, not where they are: rewriting an equation or a layout field in place between calls,
 * through the same pointers, must give the new layout, and rewriting it back the old one. Each
 * vidmm_swizzle() (box NULL, so one cached subresource) is checked against the model.
 * ------------------------------------------------------------------------------------------- */

/* Swizzles 'lin' with the library through 'layout' / 'surf' and with the model through 's',
 * both into buffers cleared first, and compares them. */
static void cache_step(const char *what, const struct ref_surf *s, const struct vidmm_tile_layout *layout,
                       const struct vidmm_surface_desc *surf, const unsigned char *lin, size_t lin_size)
{
    struct ref_layout L;
    cr_assert(ref_prepare(&L, s), "%s: the model refuses the surface", what);
    size_t n = (size_t)L.tiled_size;
    unsigned char *want = calloc(1, n), *got = calloc(1, n);
    cr_assert(want != NULL && got != NULL);
    ref_tile_surface(&L, want, lin);
    size_t row = (size_t)s->width * s->elem;
    int rc = vidmm_swizzle(layout, surf, 0, 0, NULL, got, n, lin, lin_size, row, row * s->height);
    cr_assert_eq(rc, 0, "%s: vidmm_swizzle() returned %d", what, rc);
    size_t i = 0;
    while (i < n && got[i] == want[i])
        i++;
    cr_expect_eq(i, n, "%s: tiled byte %zu is 0x%02x, the model has 0x%02x", what, i, i < n ? got[i] : 0,
                 i < n ? want[i] : 0);
    free(want);
    free(got);
}

Test(swizzle_cache, descriptors_rewritten_in_place, .timeout = T_TIMEOUT)
{
    struct t_rng r;
    t_rng_init(&r, 0xCAC4E);
    unsigned char lin[64 * 4 * 64];
    for (size_t i = 0; i < sizeof(lin); i++)
        lin[i] = (unsigned char)urand(&r, 0, 255);

    /* An equation of 4 KiB blocks, 256 B x 16 rows: x0..x3, then y0..y3 (A) or y3..y0 (B) on
     * address bits 4..7, then x4..x7. */
    struct vidmm_equation eq;
    struct ref_surf s;
    surf_base(&s, VIDMM_TILING_EQUATION);
    s.eq = &eq;
    s.width = 64;
    s.height = 64;
    s.elem = 4;
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    ref_to_public(&s, &layout, &surf);
    for (int pass = 0; pass < 3; pass++) {
        bool reversed = pass == 1;
        memset(&eq, 0, sizeof(eq));
        eq.bits = 12;
        for (uint8_t i = 0; i < 4; i++) {
            eq.term[i][0] = (struct vidmm_eq_term){ VIDMM_EQ_X, i };
            eq.term[4 + i][0] = (struct vidmm_eq_term){ VIDMM_EQ_Y, (uint8_t)(reversed ? 3 - i : i) };
            eq.term[8 + i][0] = (struct vidmm_eq_term){ VIDMM_EQ_X, (uint8_t)(4 + i) };
        }
        cache_step(reversed ? "equation B (rewritten in place)" : "equation A", &s, &layout, &surf, lin,
                   sizeof(lin));
    }

    /* Block-linear: the block height, then the surface's height, changed in the same structs. */
    surf_base(&s, VIDMM_TILING_BLOCK_LINEAR);
    s.width = 64;
    s.height = 64;
    s.elem = 4;
    ref_to_public(&s, &layout, &surf);
    static const uint32_t bh[] = { 1, 4, 1 };
    for (int pass = 0; pass < 3; pass++) {
        s.block_height = layout.block_height = bh[pass];
        cache_step("block-linear, block height rewritten", &s, &layout, &surf, lin, sizeof(lin));
    }
    s.height = surf.height = 40;
    cache_step("block-linear, height rewritten", &s, &layout, &surf, lin, sizeof(lin));
}

/* ---------------------------------------------------------------------------------------------
 * The four-row strip walks (swizzle.c, strips()) on whole surfaces of every lines16 layout:
 * Intel Y and Tile4 (8 runs a tile), the D3D 4 KB table (8), the D3D 64 KB table and AMD
 * SW_64KB_R_X (32), at 4 bytes an element; Morton with 4-byte units (32 quad runs a tile,
 * tiles in Z order, three across); a band of 300 tiles (several strip calls); 3D tiles. Each backend's whole-surface swizzle must give the
 * scalar backend's bytes, and its deswizzle the linear source back, with ordinary stores (AUTO:
 * the surface fits the cache) and streaming ones (NONTEMPORAL), from a row pitch with slack.
 * ------------------------------------------------------------------------------------------- */
struct strip_case {
    const char *name;
    enum vidmm_tiling tiling;
    uint32_t amd_mode, width, height, depth, elem;
};

static void strips_on(enum vidmm_backend backend)
{
    t_require_backend(backend);
    static const struct strip_case cases[] = {
        { "intel_y", VIDMM_TILING_INTEL_Y, 0, 1024, 96, 1, 1 },
        { "intel_4", VIDMM_TILING_INTEL_4, 0, 1024, 96, 1, 1 },
        { "d3d4k", VIDMM_TILING_D3D_STD_4K, 0, 256, 96, 1, 4 },
        { "d3d64k", VIDMM_TILING_D3D_STD_64K, 0, 384, 256, 1, 4 },
        { "amd_rx", VIDMM_TILING_AMD_GFX10, 27, 256, 256, 1, 4 },
        { "morton", VIDMM_TILING_MORTON, 0, 192, 128, 1, 4 },
        /* 300 tiles a band: more than one strip call (STRIP_TILES) per band. */
        { "intel_y_wide", VIDMM_TILING_INTEL_Y, 0, 300 * 128, 32, 1, 1 },
        /* 3D tiles: each slice's z term (zoff) in every line offset. */
        { "d3d64k_3d", VIDMM_TILING_D3D_STD_64K, 0, 64, 64, 8, 4 },
    };
    static const enum vidmm_strategy strategies[] = { VIDMM_STRATEGY_AUTO, VIDMM_STRATEGY_NONTEMPORAL };
    struct t_rng r;
    t_rng_init(&r, 0x57219);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct strip_case *sc = &cases[k];
        struct vidmm_tile_layout layout = VIDMM_TILE_LAYOUT_INIT(sc->tiling);
        layout.amd_swizzle_mode = sc->amd_mode;
        struct vidmm_surface_desc surf;
        memset(&surf, 0, sizeof(surf));
        surf.size = sizeof(surf);
        surf.width = sc->width;
        surf.height = sc->height;
        surf.depth = sc->depth;
        surf.element_bytes = sc->elem;
        surf.block_width = surf.block_height = 1;
        surf.mip_levels = 1;
        surf.array_layers = 1;
        size_t tn;
        uint64_t tsz = 0;
        cr_assert_eq(vidmm_surface_tiled_size(&layout, &surf, &tsz), 0, "%s", sc->name);
        tn = (size_t)tsz;
        const size_t row = (size_t)sc->width * sc->elem;
        for (size_t si = 0; si < 2; si++) {
            /* NONTEMPORAL deswizzles take the strip walk only from 32-byte aligned rows. */
            const size_t pitch = strategies[si] == VIDMM_STRATEGY_NONTEMPORAL ? row + 64 : row + 20;
            const size_t slice = pitch * sc->height, ln = slice * sc->depth;
            unsigned char *back = NULL, *want = malloc(tn), *got = NULL;
            void *lbase = NULL, *bbase = NULL, *gbase = NULL;
            cr_assert(want != NULL);
            /* A 64-byte aligned tiled side, so that the streaming walks (whole lines) run. */
            cr_assert_eq(posix_memalign(&gbase, 64, tn), 0);
            got = gbase;
            cr_assert_eq(posix_memalign(&lbase, 64, ln), 0);
            cr_assert_eq(posix_memalign(&bbase, 64, ln), 0);
            unsigned char *lin64 = lbase;
            back = bbase;
            t_rng_bytes(&r, lin64, ln);
            memset(want, 0x3C, tn);
            memset(got, 0x3C, tn);
            memset(back, 0xA5, ln);
            struct vidmm_kernel_opts ref = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
            struct vidmm_kernel_opts o = t_opts(backend, strategies[si]);
            cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, NULL, want, tn, lin64, ln, pitch, slice, &ref), 0, "%s",
                         sc->name);
            cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, NULL, got, tn, lin64, ln, pitch, slice, &o), 0, "%s",
                         sc->name);
            ptrdiff_t d = t_find_diff(want, got, tn);
            cr_assert_eq(d, -1, "%s %s %s: tiled byte %td differs from the scalar backend's", sc->name,
                         t_backend_label(backend), t_strategy_label(strategies[si]), d);
            cr_assert_eq(vidmm_deswizzle_ex(&layout, &surf, 0, 0, NULL, got, tn, back, ln, pitch, slice, &o), 0);
            for (uint32_t y = 0; y < sc->height * sc->depth; y++) {
                d = t_find_diff(lin64 + y * pitch, back + y * pitch, row);
                cr_assert_eq(d, -1, "%s %s %s: row %u byte %td did not come back", sc->name, t_backend_label(backend),
                             t_strategy_label(strategies[si]), y, d);
                if (y + 1 < sc->height * sc->depth)
                    cr_assert_eq(t_find_not(back + y * pitch + row, pitch - row, 0xA5), -1,
                                 "%s %s: the slack after row %u was written", sc->name, t_backend_label(backend), y);
            }
            free(want);
            free(got);
            free(lbase);
            free(bbase);
        }
    }
}

#define STRIP_TEST(tag, B) \
    Test(strips, tag, .timeout = T_TIMEOUT) { strips_on(B); }
T_FOR_EACH_BACKEND(STRIP_TEST)
#undef STRIP_TEST

/* ---------------------------------------------------------------------------------------------
 * The streaming pair walks (swizzle_walk.c: swz_pairs16_nt into the GOB's whole lines, 4 KiB of
 * each row per group; unswz_pairs16_nt into the linear rows): block-linear surfaces asked
 * NONTEMPORAL, on every backend, against the scalar backend's bytes and back. Widths of exactly
 * one group (64 blocks), a group and a remainder, fewer blocks than a group, one block; block
 * heights from 1 to 16 GOBs, a 3D surface, 16-byte elements; the linear rows 64-byte aligned (the
 * streaming deswizzle) and 16 bytes off (ordinary stores instead), a box inside the surface.
 * The same for the long-row walk's streaming stores (swizzle_walk.c copy_long_rows(): swz_runs64_nt
 * into Intel X's 512-byte tile rows, unswz_runs64_nt into the linear rows): Intel X surfaces of 32
 * tiles a row and more (one kernel call per 32), fewer, not a whole number of tiles, the bit-6
 * swizzle (64-byte runs), rows aligned and not, a box with partial tile columns at both sides.
 * ------------------------------------------------------------------------------------------- */
struct pair_nt_case {
    const char *name;
    uint32_t width, height, depth, elem;
    size_t pitch_slack, lin_offset;
    enum vidmm_tiling tiling;
    uint32_t flags;
};

static void pair_streams_on(enum vidmm_backend backend)
{
    t_require_backend(backend);
    static const struct pair_nt_case cases[] = {
        { "one_group", 1024, 128, 1, 4, 0, 0, VIDMM_TILING_BLOCK_LINEAR, 0 },
        { "group_and_rest", 1024 + 16 * 5, 64, 1, 4, 64, 0, VIDMM_TILING_BLOCK_LINEAR, 0 },
        { "few_blocks", 16 * 3, 40, 1, 4, 0, 0, VIDMM_TILING_BLOCK_LINEAR, 0 },
        { "one_block", 16, 16, 1, 4, 128, 0, VIDMM_TILING_BLOCK_LINEAR, 0 },
        { "elem16", 256, 32, 1, 16, 0, 0, VIDMM_TILING_BLOCK_LINEAR, 0 },
        { "deep", 256, 32, 12, 4, 0, 0, VIDMM_TILING_BLOCK_LINEAR, 0 },
        { "unaligned_rows", 1024, 64, 1, 4, 16, 0, VIDMM_TILING_BLOCK_LINEAR, 0 },
        { "unaligned_base", 512, 64, 1, 4, 0, 16, VIDMM_TILING_BLOCK_LINEAR, 0 },
        /* Intel X, widths in bytes (1-byte elements) and in 4-byte elements. */
        { "x_wide", 512 * 40, 24, 1, 1, 0, 0, VIDMM_TILING_INTEL_X, 0 },
        { "x_32", 512 * 32 / 4, 16, 1, 4, 0, 0, VIDMM_TILING_INTEL_X, 0 },
        { "x_few", 512 * 3, 40, 1, 1, 64, 0, VIDMM_TILING_INTEL_X, 0 },
        { "x_ragged", 512 * 5 + 96, 20, 1, 1, 0, 0, VIDMM_TILING_INTEL_X, 0 },
        { "x_bit6", 512 * 36 / 4, 16, 1, 4, 0, 0, VIDMM_TILING_INTEL_X, VIDMM_TILING_FLAG_BIT6 },
        { "x_unaligned_rows", 512 * 8, 16, 1, 1, 16, 0, VIDMM_TILING_INTEL_X, 0 },
        { "x_unaligned_base", 512 * 8, 16, 1, 1, 0, 16, VIDMM_TILING_INTEL_X, 0 },
        { "x_elem16", 512 * 34 / 16, 8, 1, 16, 0, 0, VIDMM_TILING_INTEL_X, 0 },
    };
    struct t_rng r;
    t_rng_init(&r, 0x9a17);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const struct pair_nt_case *pc = &cases[k];
        struct vidmm_tile_layout layout =
            VIDMM_TILE_LAYOUT_INIT(pc->tiling);
        layout.flags = pc->flags;
        struct vidmm_surface_desc surf;
        memset(&surf, 0, sizeof(surf));
        surf.size = sizeof(surf);
        surf.width = pc->width;
        surf.height = pc->height;
        surf.depth = pc->depth;
        surf.element_bytes = pc->elem;
        surf.block_width = surf.block_height = 1;
        surf.mip_levels = 1;
        surf.array_layers = 1;
        uint64_t tsz = 0;
        cr_assert_eq(vidmm_surface_tiled_size(&layout, &surf, &tsz), 0, "%s", pc->name);
        const size_t tn = (size_t)tsz, row = (size_t)pc->width * pc->elem, pitch = row + pc->pitch_slack;
        const size_t slice = pitch * pc->height, ln = slice * pc->depth;
        void *tbase = NULL, *lbase = NULL, *bbase = NULL;
        unsigned char *want = malloc(tn);
        cr_assert(want != NULL);
        cr_assert_eq(posix_memalign(&tbase, 64, tn), 0);
        cr_assert_eq(posix_memalign(&lbase, 64, ln + pc->lin_offset), 0);
        cr_assert_eq(posix_memalign(&bbase, 64, ln + pc->lin_offset), 0);
        unsigned char *got = tbase, *lin = (unsigned char *)lbase + pc->lin_offset;
        unsigned char *back = (unsigned char *)bbase + pc->lin_offset;
        t_rng_bytes(&r, lin, ln);
        memset(want, 0x3C, tn);
        memset(got, 0x3C, tn);
        memset(back, 0xA5, ln);
        struct vidmm_kernel_opts ref = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
        struct vidmm_kernel_opts o = t_opts(backend, VIDMM_STRATEGY_NONTEMPORAL);
        cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, NULL, want, tn, lin, ln, pitch, slice, &ref), 0, "%s",
                     pc->name);
        cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, NULL, got, tn, lin, ln, pitch, slice, &o), 0, "%s",
                     pc->name);
        ptrdiff_t d = t_find_diff(want, got, tn);
        cr_assert_eq(d, -1, "%s %s: tiled byte %td differs from the scalar backend's", pc->name,
                     t_backend_label(backend), d);
        cr_assert_eq(vidmm_deswizzle_ex(&layout, &surf, 0, 0, NULL, got, tn, back, ln, pitch, slice, &o), 0);
        for (uint32_t y = 0; y < pc->height * pc->depth; y++) {
            d = t_find_diff(lin + y * pitch, back + y * pitch, row);
            cr_assert_eq(d, -1, "%s %s: row %u byte %td did not come back", pc->name, t_backend_label(backend), y, d);
            if (y + 1 < pc->height * pc->depth && pitch > row)
                cr_assert_eq(t_find_not(back + y * pitch + row, pitch - row, 0xA5), -1,
                             "%s %s: the slack after row %u was written", pc->name, t_backend_label(backend), y);
        }
        /* A box off the tile grid on both sides: the streaming walks take its whole tiles. */
        if (pc->width >= 64 && pc->height >= 16 && pc->depth == 1) {
            const struct vidmm_box box = { 3, 5, 0, pc->width - 7, pc->height - 9, 1 };
            const size_t bpitch = (size_t)box.width * pc->elem;
            unsigned char *bl = malloc(bpitch * box.height), *bb = malloc(bpitch * box.height);
            cr_assert(bl && bb);
            t_rng_bytes(&r, bl, bpitch * box.height);
            cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, &box, want, tn, bl, bpitch * box.height, bpitch, 0, &ref), 0);
            cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, &box, got, tn, bl, bpitch * box.height, bpitch, 0, &o), 0);
            d = t_find_diff(want, got, tn);
            cr_assert_eq(d, -1, "%s %s box: tiled byte %td differs from the scalar backend's", pc->name,
                         t_backend_label(backend), d);
            cr_assert_eq(vidmm_deswizzle_ex(&layout, &surf, 0, 0, &box, got, tn, bb, bpitch * box.height, bpitch, 0, &o), 0);
            d = t_find_diff(bl, bb, bpitch * box.height);
            cr_assert_eq(d, -1, "%s %s box: linear byte %td did not come back", pc->name, t_backend_label(backend), d);
            free(bl);
            free(bb);
        }
        free(want);
        free(tbase);
        free(lbase);
        free(bbase);
    }
}

#define PAIR_NT_TEST(tag, B) \
    Test(pair_streams, tag, .timeout = T_TIMEOUT) { pair_streams_on(B); }
T_FOR_EACH_BACKEND(PAIR_NT_TEST)
#undef PAIR_NT_TEST

/* ---------------------------------------------------------------------------------------------
 * The ordinary-store walks of block-linear swizzles on both sides of the CPU kind's policy
 * (swizzle_walk.c choose_walk(), arch.h vidmm_arch_gob_tile_walk_max()): a surface of at most half
 * the L2 walks its GOB-wide tiles one at a time on Intel, a larger one in groups of 512 bytes of
 * each row. Whole surfaces (a width off the group size too) and a box off the tile grid, AUTO and
 * TEMPORAL, on every backend, against the scalar backend's bytes; the tiled buffer starts as a
 * pattern that the bytes outside the box must keep, and the deswizzle must give the rows back.
 * ------------------------------------------------------------------------------------------- */
static void gob_walks_on(enum vidmm_backend backend)
{
    t_require_backend(backend);
    struct vidmm_cpu_info ci;
    memset(&ci, 0, sizeof ci);
    ci.size = sizeof ci;
    cr_assert_eq(vidmm_cpu_info(&ci), 0);
    const uint64_t l2 = ci.l2_bytes ? ci.l2_bytes : 1024 * 1024;
    /* Widths in 4-byte elements: the small surface's bytes at most l2 / 4, the large one's at
     * least 2 * l2 (both below 8 MiB for any L2 up to 2 MiB). */
    uint32_t small_h = 64, large_h = 512;
    while ((uint64_t)256 * small_h * 4 > l2 / 4 && small_h > 8)
        small_h /= 2;
    while ((uint64_t)1040 * large_h * 4 < 2 * l2 && large_h < 2048)
        large_h *= 2;
    const struct { uint32_t width, height; } shapes[] = { { 256, small_h }, { 200, small_h }, { 1040, large_h } };
    const enum vidmm_strategy strategies[] = { VIDMM_STRATEGY_AUTO, VIDMM_STRATEGY_TEMPORAL };
    struct t_rng r;
    t_rng_init(&r, 0x60b5);
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        struct vidmm_tile_layout layout = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
        struct vidmm_surface_desc surf;
        memset(&surf, 0, sizeof(surf));
        surf.size = sizeof(surf);
        surf.width = shapes[k].width;
        surf.height = shapes[k].height;
        surf.depth = 1;
        surf.element_bytes = 4;
        surf.block_width = surf.block_height = 1;
        surf.mip_levels = 1;
        surf.array_layers = 1;
        uint64_t tsz = 0;
        cr_assert_eq(vidmm_surface_tiled_size(&layout, &surf, &tsz), 0);
        const size_t tn = (size_t)tsz, pitch = (size_t)surf.width * 4, ln = pitch * surf.height;
        unsigned char *want = malloc(tn), *got = malloc(tn), *lin = malloc(ln), *back = malloc(ln);
        cr_assert(want && got && lin && back);
        t_rng_bytes(&r, lin, ln);
        const struct vidmm_box box = { 3, 5, 0, surf.width - 7, surf.height - 9, 1 };
        const size_t bpitch = (size_t)box.width * 4, bn = bpitch * box.height;
        struct vidmm_kernel_opts ref = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
        for (size_t s = 0; s < sizeof(strategies) / sizeof(strategies[0]); s++) {
            struct vidmm_kernel_opts o = t_opts(backend, strategies[s]);
            for (int whole = 1; whole >= 0; whole--) {
                const struct vidmm_box *b = whole ? NULL : &box;
                const size_t p = whole ? pitch : bpitch, n = whole ? ln : bn;
                memset(want, 0x3C, tn);
                memset(got, 0x3C, tn);
                memset(back, 0xA5, n);
                cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, b, want, tn, lin, n, p, 0, &ref), 0);
                cr_assert_eq(vidmm_swizzle_ex(&layout, &surf, 0, 0, b, got, tn, lin, n, p, 0, &o), 0);
                ptrdiff_t d = t_find_diff(want, got, tn);
                cr_assert_eq(d, -1, "%ux%u %s strategy %d: tiled byte %td differs from the scalar backend's",
                             surf.width, surf.height, whole ? "whole" : "box", (int)strategies[s], d);
                cr_assert_eq(vidmm_deswizzle_ex(&layout, &surf, 0, 0, b, got, tn, back, n, p, 0, &o), 0);
                d = t_find_diff(lin, back, n);
                cr_assert_eq(d, -1, "%ux%u %s strategy %d: linear byte %td did not come back", surf.width,
                             surf.height, whole ? "whole" : "box", (int)strategies[s], d);
            }
        }
        free(want);
        free(got);
        free(lin);
        free(back);
    }
}

#define GOB_WALK_TEST(tag, B) \
    Test(gob_walks, tag, .timeout = T_TIMEOUT) { gob_walks_on(B); }
T_FOR_EACH_BACKEND(GOB_WALK_TEST)
#undef GOB_WALK_TEST
