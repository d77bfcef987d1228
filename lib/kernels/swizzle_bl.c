/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_bl.c - NVIDIA / Tegra X1 block-linear layout: GOBs stacked into blocks,
 * per-mip block sizes, mip chains and array layers (shared/spec/tiling.md section 3). */
#include "common/internal.h"
#include "kernels/swizzle_internal.h"

/* A GOB is 64 bytes x 8 rows = 512 bytes (3.1); a block is bh x bd GOBs (3.2). */
#define GOB_BYTES 512u
#define GOB_WIDTH_LOG2 6
#define GOB_ROWS_LOG2 3
#define GOB_BYTES_LOG2 9

/* In the GOB equation x5 y2 y1 x4 y0 x3 x2 x1 x0, address bits 0..3 are x0..x3 and nothing
 * else reads them, so every aligned 16-byte run of a row is contiguous (2.1); x4 lands on bit 5,
 * so 32-byte runs are not. */
#define BL_RUN_LOG2 4

/* Slots of struct vidmm_swz_mip p[] and q[] used by bl_addr(). */
enum {
    P_BASE,        /* tiled offset of the subresource */
    P_SLAB,        /* bytes of one slab of 'bd' slices (3.3 slab_bytes) */
    P_BLOCK_ROW,   /* bytes of one row of blocks (3.3 block_row_bytes) */
};
enum {
    Q_BH_LOG2,     /* log2 of the block height in GOBs used by this mip */
    Q_BD_LOG2,     /* log2 of the block depth in slices used by this mip */
};

/* ---------------------------------------------------------------------------------------------
 * Block height and depth (3.4).
 * ------------------------------------------------------------------------------------------- */

static unsigned log2_pow2(uint32_t v)
{
    unsigned n = 0;

    while ((1u << n) < v)
        n++;
    return n;
}

/* height_auto() is the heuristic for formats that do not store the block height: from the
 * mip-0 height 'h' in rows of elements (blocks for BCn). 32 is never chosen (3.4). */
static uint32_t height_auto(uint32_t h)
{
    uint64_t t = (uint64_t)h + h / 2;

    if (t >= 128)
        return 16;
    if (t >= 64)
        return 8;
    if (t >= 32)
        return 4;
    if (t >= 16)
        return 2;
    return 1;
}

/* depth_auto() is the block depth chosen from a depth 'd' in slices (3.4). It also sizes the
 * depth padding of every mip (3.3 mip_size), whatever block depth addresses it. */
static uint32_t depth_auto(uint32_t d)
{
    uint64_t t = (uint64_t)d + d / 2;

    if (t >= 16)
        return 16;
    if (t >= 8)
        return 8;
    if (t >= 4)
        return 4;
    if (t >= 2)
        return 2;
    return 1;
}

/* The mip-0 block height. 0 asks for the automatic value: height_auto() of the mip-0 height in
 * elements for 2D surfaces, 1 for 3D ones (3.5 step 1, which the Ryujinx dump of a 16^3 texture
 * confirms, 3.6). A nonzero value is what a texture header stores and is honoured as given, 3D
 * included: the spec's surface rule ignores it for 3D, but the single-mip golden
 * bl_mip_16x16x16_rg32 (3.3, 3.6) uses block height 2 on a 3D mip, which a caller reproduces
 * only by passing it explicitly. */
static uint32_t bl_bh0(const struct vidmm_swz_surface *s)
{
    if (s->layout.block_height != 0)
        return s->layout.block_height;
    if (s->depth > 1)
        return 1;
    return height_auto(vidmm_swz_mip_dim(s->height, s->bh, 0));
}

/* The mip-0 block depth: the given one, or depth_auto() of the depth (3.5 step 1). */
static uint32_t bl_bd0(const struct vidmm_swz_surface *s)
{
    return s->layout.block_depth != 0 ? s->layout.block_depth : depth_auto(s->depth);
}

/* shrink() halves a block dimension 'b' (GOBs or slices) while half of it still covers 'n'
 * rows or slices, 'unit' each (3.4 mip_bh with unit 8, mip_bd with unit 1, and the layer
 * alignment of 3.5 step 4 with unit 8). */
static uint32_t shrink(uint32_t n, uint32_t b, uint32_t unit)
{
    while (b > 1 && (uint64_t)n <= (uint64_t)(b / 2) * unit)
        b /= 2;
    return b;
}

/* ---------------------------------------------------------------------------------------------
 * Sizes (3.3, 3.5).
 * ------------------------------------------------------------------------------------------- */

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

static bool add_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (b > UINT64_MAX - a)
        return false;
    *out = a + b;
    return true;
}

/* One mip, resolved: its dimensions in elements, block size and tiled geometry. */
struct bl_mip {
    uint32_t w, h, d;
    uint32_t bh, bd;          /* GOBs per block vertically, slices per block */
    uint64_t width_gobs;      /* = width in blocks */
    uint64_t block_rows;      /* ceil(h / (8 * bh)) */
    uint64_t size;            /* 3.3 mip_size */
};

/* bl_mip_geom() resolves mip 'mip' of 's' into '*g'. The mip-0 block size is used exactly as
 * chosen by bl_bh0() / bl_bd0(); later mips shrink it from there (3.4). (For automatic values
 * shrinking mip 0 would change nothing: height_auto(h) * 4 < h and depth_auto(d) / 2 < d.)
 * Returns 0, or VIDMM_E_INVALID_ARG when the size does not fit in 64 bits. */
static int bl_mip_geom(const struct vidmm_swz_surface *s, uint32_t mip, struct bl_mip *g)
{
    uint32_t bh0 = bl_bh0(s), bd0 = bl_bd0(s);
    uint64_t gob_rows, depth_pad, v;
    uint32_t da;

    g->w = vidmm_swz_mip_dim(s->width, s->bw, mip);
    g->h = vidmm_swz_mip_dim(s->height, s->bh, mip);
    g->d = vidmm_swz_mip_dim(s->depth, 1, mip);
    g->bh = mip == 0 ? bh0 : shrink(g->h, bh0, 8);
    g->bd = mip == 0 ? bd0 : shrink(g->d, bd0, 1);
    g->width_gobs = ((uint64_t)g->w * s->elem + 63) >> GOB_WIDTH_LOG2;
    gob_rows = (uint64_t)8 * g->bh;
    g->block_rows = (g->h + gob_rows - 1) / gob_rows;
    /* 3.3 pads the depth to depth_auto(d); the rules of 3.4-3.5 never address past that. An
     * explicit block depth above depth_auto(d) would (slab z / bd spans 'bd' slices), so the
     * padding takes the larger of the two: identical to the spec whenever it defines the case. */
    da = depth_auto(g->d);
    if (g->bd > da)
        da = g->bd;
    depth_pad = ((uint64_t)g->d + da - 1) / da * da;
    if (!mul_ok(g->width_gobs, g->block_rows * g->bh, &v) || !mul_ok(v, depth_pad, &v) ||
        !mul_ok(v, GOB_BYTES, &v))
        return VIDMM_E_INVALID_ARG;
    g->size = v;
    return 0;
}

/* bl_layer() walks the mip chain of one layer: '*mip_off' receives the offset of mip 'mip'
 * inside the layer, '*stride' the distance between layers. Mips follow each other with no
 * padding (each size is a multiple of 512); with more than one layer, each layer is padded to
 * 512 * g bytes, g shrunk from the mip-0 block height by the surface height in *pixels* (3.5
 * step 4: tegra_swizzle passes the pixel height even for BCn, and the goldens follow it).
 * Returns 0, or VIDMM_E_INVALID_ARG when a size does not fit in 64 bits. */
static int bl_layer(const struct vidmm_swz_surface *s, uint32_t mip, uint64_t *mip_off, uint64_t *stride)
{
    uint64_t sum = 0, align;
    struct bl_mip g;
    uint32_t m;
    int err;

    *mip_off = 0;
    for (m = 0; m < s->mips; m++) {
        if (m == mip)
            *mip_off = sum;
        if ((err = bl_mip_geom(s, m, &g)) < 0)
            return err;
        if (!add_ok(sum, g.size, &sum))
            return VIDMM_E_INVALID_ARG;
    }
    if (s->layers > 1) {
        align = (uint64_t)GOB_BYTES * shrink(s->height, bl_bh0(s), 8);
        if (!add_ok(sum, align - 1, &sum))
            return VIDMM_E_INVALID_ARG;
        sum = sum / align * align;
    }
    *stride = sum;
    return 0;
}

static int bl_total(const struct vidmm_swz_surface *s, uint64_t *bytes)
{
    uint64_t off, stride;
    int err;

    if ((err = bl_layer(s, 0, &off, &stride)) < 0)
        return err;
    if (!mul_ok(stride, s->layers, bytes))
        return VIDMM_E_INVALID_ARG;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Addressing (3.1, 3.3).
 * ------------------------------------------------------------------------------------------- */

/* gob() is the offset of byte column 'u' (0..63) of row 'v' (0..7) inside a GOB: the equation
 * x5 y2 y1 x4 y0 x3 x2 x1 x0 (3.1). */
static inline uint32_t gob(uint32_t u, uint32_t v)
{
    return (u & 15u) | (v & 1u) << 4 | (u >> 4 & 1u) << 5 | (v >> 1 & 3u) << 6 | (u >> 5) << 8;
}

/* bl_addr() is 3.3 offset(xb, y, z) plus the subresource base. Block height and depth are powers
 * of two, so the divisions of 3.3 are shifts; only the block-row and slab strides multiply. */
static uint64_t bl_addr(const struct vidmm_swz_mip *m, uint64_t xb, uint32_t y, uint32_t z)
{
    unsigned lbh = m->q[Q_BH_LOG2], lbd = m->q[Q_BD_LOG2];
    uint32_t gy = y >> GOB_ROWS_LOG2;

    return m->p[P_BASE]
         + (uint64_t)(z >> lbd) * m->p[P_SLAB]
         + (uint64_t)(gy >> lbh) * m->p[P_BLOCK_ROW]
         + ((xb >> GOB_WIDTH_LOG2) << (GOB_BYTES_LOG2 + lbh + lbd))
         + ((uint64_t)(z & ((1u << lbd) - 1)) << (GOB_BYTES_LOG2 + lbh))
         + ((uint64_t)(gy & ((1u << lbh) - 1)) << GOB_BYTES_LOG2)
         + gob((uint32_t)xb & 63u, y & 7u);
}

/* bl_tile_base() locates block (tx, ty, tz) of the subresource for the engine's tile walk
 * (struct vidmm_swz_tiles): the block terms of 3.3. */
static uint64_t bl_tile_base(const struct vidmm_swz_mip *m, uint64_t tx, uint32_t ty, uint32_t tz)
{
    return m->p[P_BASE] + (uint64_t)tz * m->p[P_SLAB] + (uint64_t)ty * m->p[P_BLOCK_ROW] +
           (tx << (GOB_BYTES_LOG2 + m->q[Q_BH_LOG2] + m->q[Q_BD_LOG2]));
}

/* ---------------------------------------------------------------------------------------------
 * The family.
 * ------------------------------------------------------------------------------------------- */

/* bl_check() accepts block heights 1..32 and depths 1..16 (powers of two, 0 = automatic, 3.2)
 * and rejects every layout field block-linear does not use, so that a descriptor meant for
 * another tiling is not silently accepted. Sparse layouts (blocks several GOBs wide) are not
 * covered by the spec (3.6) and cannot be expressed. Returns 0 or VIDMM_E_INVALID_ARG. */
static int bl_check(struct vidmm_swz_surface *s)
{
    const struct vidmm_tile_layout *l = &s->layout;
    uint64_t total;

    if (l->block_height > 32 || (l->block_height & (l->block_height - 1)) != 0 ||
        l->block_depth > 16 || (l->block_depth & (l->block_depth - 1)) != 0)
        return VIDMM_E_INVALID_ARG;
    if (l->flags != 0 || l->pitch != 0 || l->swizzle_unit != 0 || l->amd_swizzle_mode != 0 ||
        l->equation != NULL)
        return VIDMM_E_INVALID_ARG;
    return bl_total(s, &total); /* sizes beyond 64 bits */
}

/* bl_resolve() places mip 'mip' of layer 'layer' (layers, then mips: 3.5 step 3) and stores
 * its strides for bl_addr(). */
static int bl_resolve(const struct vidmm_swz_surface *s, uint32_t mip, uint32_t layer,
                      struct vidmm_swz_mip *m)
{
    uint64_t off, stride;
    struct vidmm_swz_tiles *t = &m->tiles;
    struct bl_mip g;
    unsigned i;
    int err;

    if ((err = bl_layer(s, mip, &off, &stride)) < 0 || (err = bl_mip_geom(s, mip, &g)) < 0)
        return err;
    for (i = 0; i < 16; i++) {
        m->p[i] = 0;
        m->q[i] = 0;
    }
    m->run_log2 = BL_RUN_LOG2;
    m->base = (uint64_t)layer * stride + off;
    m->span = g.size;
    m->addr = bl_addr;
    m->block_height = g.bh;
    m->block_depth = g.bd;
    m->p[P_BASE] = m->base;
    m->p[P_BLOCK_ROW] = g.width_gobs * ((uint64_t)GOB_BYTES * g.bh * g.bd);
    m->p[P_SLAB] = g.block_rows * m->p[P_BLOCK_ROW];
    m->q[Q_BH_LOG2] = log2_pow2(g.bh);
    m->q[Q_BD_LOG2] = log2_pow2(g.bd);

    /* The tile of the engine's fast walk is one block, 64 B x 8 bh rows x bd slices (at most
     * 256 rows and 16 slices, within the table sizes). Inside it the GOB equation and the GOB
     * index (y / 8 + bh * z) use disjoint bits, so the sum of 3.3 is an XOR of a column term,
     * a row term and a slice term. */
    t->tw_log2 = GOB_WIDTH_LOG2;
    t->th_log2 = GOB_ROWS_LOG2 + m->q[Q_BH_LOG2];
    t->td_log2 = m->q[Q_BD_LOG2];
    t->run_log2 = BL_RUN_LOG2;
    t->tile_base = bl_tile_base;
    for (i = 0; i < 1u << (GOB_WIDTH_LOG2 - BL_RUN_LOG2); i++)
        t->xo[i] = gob(i << BL_RUN_LOG2, 0);
    for (i = 0; i < 8 * g.bh; i++)
        t->yo[i] = (i >> GOB_ROWS_LOG2) << GOB_BYTES_LOG2 | gob(0, i & 7u);
    for (i = 0; i < g.bd; i++)
        t->zo[i] = i << (GOB_BYTES_LOG2 + m->q[Q_BH_LOG2]);
    return 0;
}

const struct vidmm_swz_family vidmm_swz_block_linear = {
    bl_check,
    bl_total,
    bl_resolve,
};
