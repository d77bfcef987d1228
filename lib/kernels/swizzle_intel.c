/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_intel.c - Intel X, legacy Y (Y0) and Tile4 layouts, with the optional
 * bit-6 address swizzle: validation, sizes and the address of any byte
 * (shared/spec/tiling.md section 4). */
#include "common/internal.h"
#include "kernels/swizzle_internal.h"

/* Every Intel tile is 4 KiB (4.1): X is 512 B x 8 rows, Y0 and Tile4 are 128 B x 32 rows. */
#define TILE_BYTES_LOG2 12

/* Slots of struct vidmm_swz_mip p[] used by the address functions. */
enum {
    P_TILE_ROW,    /* bytes of one row of tiles: pitch * tile height (4.2) */
};

/* The tile geometry of 'tiling' as log2 of the width in bytes and of the height in rows. */
static void tile_dims(enum vidmm_tiling tiling, unsigned *tw_log2, unsigned *th_log2)
{
    if (tiling == VIDMM_TILING_INTEL_X) {
        *tw_log2 = 9;
        *th_log2 = 3;
    } else {
        *tw_log2 = 7;
        *th_log2 = 5;
    }
}

/* intel_pitch() is the row pitch of the tiled surface: the caller's, or the row rounded up to
 * whole tiles (4.2). A caller's pitch must hold the row and be whole tiles, the assumption
 * Mesa's callers guarantee and the tile-row stride of 4.2 relies on.
 * Returns 0 or VIDMM_E_INVALID_ARG. */
static int intel_pitch(const struct vidmm_swz_surface *s, uint64_t *pitch)
{
    unsigned twl, thl;
    uint64_t row = (uint64_t)s->width * s->elem, tw;

    tile_dims(s->layout.tiling, &twl, &thl);
    tw = (uint64_t)1 << twl;
    if (s->layout.pitch != 0) {
        if (s->layout.pitch < row || (s->layout.pitch & (tw - 1)) != 0)
            return VIDMM_E_INVALID_ARG;
        *pitch = s->layout.pitch;
    } else {
        *pitch = (row + tw - 1) & ~(tw - 1);
    }
    return 0;
}

static int intel_total(const struct vidmm_swz_surface *s, uint64_t *bytes)
{
    unsigned twl, thl;
    uint64_t pitch, rows;
    int err;

    if ((err = intel_pitch(s, &pitch)) < 0)
        return err;
    tile_dims(s->layout.tiling, &twl, &thl);
    rows = ((uint64_t)s->height + ((1u << thl) - 1)) >> thl << thl;
    if (pitch != 0 && rows > UINT64_MAX / pitch)
        return VIDMM_E_INVALID_ARG;
    *bytes = pitch * rows;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Addressing (4.1, 4.2, 4.4). Tiles are row-major, 4 KiB each, 'pitch * th' bytes per row of
 * tiles; every tile starts 4 KiB aligned in the surface, so the tile-internal bits 9 and 10 the
 * bit-6 swizzle reads are the surface's (and, for a 4 KiB-aligned surface, the physical) ones.
 * One address function per tiling and swizzle, so that the per-run call branches on neither.
 * ------------------------------------------------------------------------------------------- */

/* The *_in_tile() functions give the offset of byte column 'u' of row 'v' inside one tile
 * (u < tw, v < th). The address functions call them directly, so they are inlined there.
 *
 * X: the rows of a tile follow each other. */
static uint32_t x_in_tile(uint32_t u, uint32_t v)
{
    return v << 9 | u;
}

/* X with bit-6 swizzle: b6 ^= b9 ^ b10 (4.4). */
static uint32_t x6_in_tile(uint32_t u, uint32_t v)
{
    uint32_t t = x_in_tile(u, v);

    return t ^ ((t >> 3 ^ t >> 4) & 64u);
}

/* Y0: 16-byte columns, each 32 rows tall. */
static uint32_t y_in_tile(uint32_t u, uint32_t v)
{
    return (u & 15u) | v << 4 | (u >> 4) << 9;
}

/* Y0 with bit-6 swizzle: b6 ^= b9 (4.4). */
static uint32_t y6_in_tile(uint32_t u, uint32_t v)
{
    uint32_t t = y_in_tile(u, v);

    return t ^ (t >> 3 & 64u);
}

/* Tile4: the equation y4 y3 x6 y2 x5 x4 y1 y0 x3 x2 x1 x0 (4.1; the bit table, not the picture
 * in Mesa's tiling.rst, which the goldens contradict). */
static uint32_t t4_in_tile(uint32_t u, uint32_t v)
{
    return (u & 15u) | (v & 3u) << 4 | (u >> 4 & 3u) << 6 | (v >> 2 & 1u) << 8 |
           (u >> 6) << 9 | (v >> 3) << 10;
}

/* INTEL_ADDR() defines the address function of one variant: the start of the tile holding
 * (xb, y) (4.2) plus the in-tile offset. X tiles are 2^9 bytes x 2^3 rows, the others 2^7 x 2^5. */
#define INTEL_ADDR(name, in_tile, twl, thl)                                                      \
    static uint64_t name(const struct vidmm_swz_mip *m, uint64_t xb, uint32_t y, uint32_t z)     \
    {                                                                                            \
        (void)z;                                                                                 \
        return (uint64_t)(y >> (thl)) * m->p[P_TILE_ROW] + (xb >> (twl) << TILE_BYTES_LOG2) +    \
               in_tile((uint32_t)xb & ((1u << (twl)) - 1), y & ((1u << (thl)) - 1));             \
    }
INTEL_ADDR(x_addr, x_in_tile, 9, 3)
INTEL_ADDR(x6_addr, x6_in_tile, 9, 3)
INTEL_ADDR(y_addr, y_in_tile, 7, 5)
INTEL_ADDR(y6_addr, y6_in_tile, 7, 5)
INTEL_ADDR(t4_addr, t4_in_tile, 7, 5)

/* intel_tile_base() locates a whole tile for the engine's tile walk (struct vidmm_swz_tiles). */
static uint64_t intel_tile_base(const struct vidmm_swz_mip *m, uint64_t tx, uint32_t ty, uint32_t tz)
{
    (void)tz;
    return (uint64_t)ty * m->p[P_TILE_ROW] + (tx << TILE_BYTES_LOG2);
}

/* One variant of the family: its address function and its contiguous runs (2.1): X keeps a
 * tile row of 512 B together, 64 B once bit 6 also reads y0 and y1; Y0 and Tile4 keep 16 B
 * columns together (the Y0 bit-6 term reads x4, above the run). */
struct intel_variant {
    uint64_t (*addr)(const struct vidmm_swz_mip *m, uint64_t xb, uint32_t y, uint32_t z);
    uint32_t (*in_tile)(uint32_t u, uint32_t v);
    uint32_t run_log2;
};

static const struct intel_variant variants[5] = {
    { x_addr, x_in_tile, 9 },
    { x6_addr, x6_in_tile, 6 },
    { y_addr, y_in_tile, 4 },
    { y6_addr, y6_in_tile, 4 },
    { t4_addr, t4_in_tile, 4 },
};

/* ---------------------------------------------------------------------------------------------
 * The family.
 * ------------------------------------------------------------------------------------------- */

/* intel_check() rejects layout fields these tilings do not use, an unusable pitch, sizes beyond
 * 64 bits and the bit-6 swizzle on Tile4, which has none (4.4: Mesa asserts it off): all
 * VIDMM_E_INVALID_ARG. Mip chains, arrays, 3D and compressed blocks are VIDMM_E_UNSUPPORTED:
 * the spec defines only one 2D surface of bytes (4.2, 4.5). */
static int intel_check(struct vidmm_swz_surface *s)
{
    const struct vidmm_tile_layout *l = &s->layout;
    uint64_t total;

    if ((l->flags & ~VIDMM_TILING_FLAG_BIT6) != 0 ||
        ((l->flags & VIDMM_TILING_FLAG_BIT6) != 0 && l->tiling == VIDMM_TILING_INTEL_4))
        return VIDMM_E_INVALID_ARG;
    if (l->block_height != 0 || l->block_depth != 0 || l->swizzle_unit != 0 ||
        l->amd_swizzle_mode != 0 || l->equation != NULL)
        return VIDMM_E_INVALID_ARG;
    if (s->mips != 1 || s->layers != 1 || s->depth != 1 || s->bw != 1 || s->bh != 1)
        return VIDMM_E_UNSUPPORTED;
    return intel_total(s, &total);
}

/* intel_resolve() describes the only subresource: the whole surface at offset 0. It also
 * describes the layout as tiles for the engine's fast walk: the in-tile equations of 4.1 and
 * 4.4 read only in-tile coordinate bits and are XORs, so the offset of (u, v) in a tile is
 * in_tile(u, 0) ^ in_tile(0, v) (2.1, separable), and a column table per run plus a row table
 * per tile row hold it. */
static int intel_resolve(const struct vidmm_swz_surface *s, uint32_t mip, uint32_t layer,
                         struct vidmm_swz_mip *m)
{
    bool bit6 = (s->layout.flags & VIDMM_TILING_FLAG_BIT6) != 0;
    const struct intel_variant *var;
    struct vidmm_swz_tiles *t = &m->tiles;
    unsigned twl, thl, i;
    uint64_t pitch;
    int err;

    (void)mip;
    (void)layer;
    if ((err = intel_pitch(s, &pitch)) < 0 || (err = intel_total(s, &m->span)) < 0)
        return err;
    tile_dims(s->layout.tiling, &twl, &thl);
    if (s->layout.tiling == VIDMM_TILING_INTEL_X)
        var = &variants[bit6 ? 1 : 0];
    else if (s->layout.tiling == VIDMM_TILING_INTEL_Y)
        var = &variants[bit6 ? 3 : 2];
    else
        var = &variants[4];
    for (i = 0; i < 16; i++) {
        m->p[i] = 0;
        m->q[i] = 0;
    }
    m->base = 0;
    m->block_height = 0;
    m->block_depth = 0;
    m->p[P_TILE_ROW] = pitch << thl;
    m->addr = var->addr;
    m->run_log2 = var->run_log2;

    t->tw_log2 = twl;
    t->th_log2 = thl;
    t->td_log2 = 0;
    t->run_log2 = var->run_log2;
    t->tile_base = intel_tile_base;
    for (i = 0; i < 1u << (twl - var->run_log2); i++)
        t->xo[i] = var->in_tile(i << var->run_log2, 0);
    for (i = 0; i < 1u << thl; i++)
        t->yo[i] = var->in_tile(0, i);
    t->zo[0] = 0;
    return 0;
}

const struct vidmm_swz_family vidmm_swz_intel = {
    intel_check,
    intel_total,
    intel_resolve,
};
