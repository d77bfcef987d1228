/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle.c - the swizzle engine's descriptors: checks common to every tiling,
 * surface sizes and subresources, and the pitch-linear family. The walks that move bytes are in
 * swizzle_walk.c, plans and the public copy calls in swizzle_plan.c (swizzle_internal.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "common/internal.h"
#include "kernels/swizzle_internal.h"

/* The first published version of struct vidmm_subresource_info ends after this field. */
#define SUBRES_V0_SIZE (offsetof(struct vidmm_subresource_info, block_depth) + sizeof(uint32_t))

static const struct vidmm_swz_family *family_of(enum vidmm_tiling t)
{
    switch (t) {
    case VIDMM_TILING_LINEAR: return &vidmm_swz_linear;
    case VIDMM_TILING_BLOCK_LINEAR: return &vidmm_swz_block_linear;
    case VIDMM_TILING_INTEL_X:
    case VIDMM_TILING_INTEL_Y:
    case VIDMM_TILING_INTEL_4: return &vidmm_swz_intel;
    case VIDMM_TILING_D3D_STD_4K:
    case VIDMM_TILING_D3D_STD_64K:
    case VIDMM_TILING_AMD_GFX10:
    case VIDMM_TILING_EQUATION: return &vidmm_swz_equation;
    case VIDMM_TILING_MORTON: return &vidmm_swz_morton;
    default: return NULL;
    }
}

/* refuse_surface() is the line of a surface a family refuses (its check(), total() or
 * resolve()): the layout's fields and the surface's, and what broke - 'what' - as INVALID_ARG
 * (a field out of the tiling's range, or a size beyond 64 bits) or UNSUPPORTED (a combination
 * tiling.md does not define). The families' rules are listed where each family's check() is. */
static int refuse_surface(const struct vidmm_swz_surface *s, int err, const char *what)
{
    const struct vidmm_tile_layout *l = &s->layout;
    return vidmm_swz_refuse(err, s->call, "layout, surface", "tiling %u (flags 0x%x, block_height %u, block_depth %u, "
                            "pitch %u, swizzle_unit %u, amd_swizzle_mode %u) of %ux%ux%u, %u-byte elements in "
                            "%ux%u blocks, %u mips, %u layers: %s (spec tiling.md)",
                            (unsigned)l->tiling, l->flags, l->block_height, l->block_depth, l->pitch,
                            l->swizzle_unit, l->amd_swizzle_mode, s->width, s->height, s->depth, s->elem, s->bw,
                            s->bh, s->mips, s->layers,
                            err == VIDMM_E_UNSUPPORTED ? "a combination the spec does not define"
                                                       : what);
}

/* load() validates what every tiling shares and copies the descriptors into '*s'. The limits:
 * elements of 1..16 bytes (tiling.md conventions), compressed blocks of 1..16 pixels a side,
 * no more mips than the largest extent allows, and 3D textures without array layers (no API
 * the layouts come from has 3D arrays). */
int vidmm_swz_refuse(int err, const char *call, const char *field, const char *fmt, ...)
{
    char rule[384];
    va_list ap;

    if (!vidmm_log_enabled(VIDMM_LOG_DEBUG))
        return err;
    va_start(ap, fmt);
    vsnprintf(rule, sizeof(rule), fmt, ap);
    va_end(ap);
    vidmm_log(VIDMM_LOG_DEBUG, "%s: %s: %s", call, field, rule);
    return err;
}

/* vidmm_swz_check_desc() (swizzle_internal.h) refuses NULL or short descriptors. */
int vidmm_swz_check_desc(const char *call, const struct vidmm_tile_layout *layout,
                         const struct vidmm_surface_desc *surface)
{
    if (layout == NULL || surface == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, layout == NULL ? "layout" : "surface", "NULL (spec swizzle.h)");
    if (layout->size < VIDMM_SWZ_LAYOUT_V0_SIZE)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "layout->size", "%zu, below the first version's %zu: "
                                "use VIDMM_TILE_LAYOUT_INIT() (spec swizzle.h)", layout->size,
                                (size_t)VIDMM_SWZ_LAYOUT_V0_SIZE);
    if (surface->size < VIDMM_SWZ_SURFACE_V0_SIZE)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "surface->size", "%zu, below the first version's %zu "
                                "(spec swizzle.h)", surface->size, (size_t)VIDMM_SWZ_SURFACE_V0_SIZE);
    return 0;
}

static int load(const char *call, const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                struct vidmm_swz_surface *s, const struct vidmm_swz_family **fam)
{
    int err;
    if ((err = vidmm_swz_check_desc(call, layout, surface)) < 0)
        return err;
    memset(s, 0, sizeof(*s));
    s->call = call;
    memcpy(&s->layout, layout, VIDMM_SWZ_LAYOUT_V0_SIZE);
    s->layout.size = sizeof(s->layout);
    *fam = family_of(s->layout.tiling);
    if (*fam == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "layout->tiling", "%u is not a VIDMM_TILING_* value "
                                "(spec swizzle.h)", (unsigned)s->layout.tiling);
    if (s->layout.tiling == VIDMM_TILING_EQUATION) {
        if (s->layout.equation == NULL)
            return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "layout->equation", "NULL with VIDMM_TILING_EQUATION "
                                    "(spec swizzle.h)");
        s->eq = *s->layout.equation;
        s->layout.equation = &s->eq;
    } else if (s->layout.equation != NULL) {
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "layout->equation", "set for tiling %u, which takes none: "
                                "fields a tiling does not use must be 0 (spec swizzle.h)", (unsigned)s->layout.tiling);
    }

    s->width = surface->width;
    s->height = surface->height;
    s->depth = surface->depth;
    s->elem = surface->element_bytes;
    s->bw = surface->block_width;
    s->bh = surface->block_height;
    s->mips = surface->mip_levels;
    s->layers = surface->array_layers;
    if (s->width == 0 || s->height == 0 || s->depth == 0)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "surface->width, height, depth", "%ux%ux%u: each must be "
                                "1 or more (spec swizzle.h)", s->width, s->height, s->depth);
    if (s->elem == 0 || s->elem > 16)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "surface->element_bytes", "%u, not in 1..16 "
                                "(spec swizzle.h)", s->elem);
    if (s->bw == 0 || s->bw > 16 || s->bh == 0 || s->bh > 16)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "surface->block_width, block_height", "%ux%u, not in "
                                "1..16 a side (1 x 1 when uncompressed) (spec swizzle.h)", s->bw, s->bh);
    if (s->mips == 0 || s->layers == 0)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, s->mips == 0 ? "surface->mip_levels" : "surface->array_layers",
                                "0, not 1 or more (spec swizzle.h)");
    if (s->depth > 1 && s->layers > 1)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "surface->array_layers", "%u with depth %u: a 3D texture "
                                "has no array layers (spec swizzle.h)", s->layers, s->depth);
    uint32_t largest = s->width > s->height ? s->width : s->height;
    if (s->depth > largest)
        largest = s->depth;
    /* Mips in a full chain: 1 + floor(log2(largest)). 64-bit shift: a 32-bit one by 32 is
     * undefined (and on x86 shifts by 0, which looped forever on 2^32 - 1 extents). */
    uint32_t chain = 1;
    while (((uint64_t)largest >> chain) != 0)
        chain++;
    if (s->mips > chain)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "surface->mip_levels", "%u, above the %u of a full chain "
                                "from %ux%ux%u (spec swizzle.h)", s->mips, chain, s->width, s->height, s->depth);
    if ((err = (*fam)->check(s)) < 0)
        return s->refused ? err : refuse_surface(s, err, "a field out of its tiling's range");
    return 0;
}

/* linear_layout() computes the packed linear offset of (mip, layer) and, with mip == mips and
 * layer == layers - 1, the total. Layers, then mips; every product checked. */
static int linear_offset(const struct vidmm_swz_surface *s, uint32_t mip, uint32_t layer, uint64_t *offset)
{
    uint64_t per_layer = 0, before = 0;
    for (uint32_t m = 0; m < s->mips; m++) {
        uint64_t sz;
        uint32_t w = vidmm_swz_mip_dim(s->width, s->bw, m), h = vidmm_swz_mip_dim(s->height, s->bh, m);
        uint32_t d = vidmm_swz_mip_dim(s->depth, 1, m);
        if (!vidmm_swz_mul_ok((uint64_t)w * h, (uint64_t)d * s->elem, &sz) ||
            !vidmm_swz_add_ok(per_layer, sz, &per_layer))
            return VIDMM_E_INVALID_ARG;
        if (m < mip)
            before += sz;
    }
    uint64_t base;
    if (!vidmm_swz_mul_ok(per_layer, layer, &base) || !vidmm_swz_add_ok(base, before, offset))
        return VIDMM_E_INVALID_ARG;
    /* The total must fit as well, so that every offset inside it does. */
    uint64_t total;
    if (!vidmm_swz_mul_ok(per_layer, s->layers, &total))
        return VIDMM_E_INVALID_ARG;
    return 0;
}

static int linear_total(const struct vidmm_swz_surface *s, uint64_t *bytes)
{
    uint64_t layer0;
    int err = linear_offset(s, s->mips, 0, &layer0); /* mip == mips: the whole of layer 0 */
    if (err < 0)
        return err;
    return vidmm_swz_mul_ok(layer0, s->layers, bytes) ? 0 : VIDMM_E_INVALID_ARG;
}

/* merge_runs() doubles the tile tables' run while every pair of neighbouring runs is adjacent
 * in memory (xo[2i + 1] == xo[2i] + run), up to 32 bytes: Morton with 4-byte units describes
 * 4-byte runs, but x0 is the lowest index bit, so unit pairs are contiguous - and then y0 comes
 * next, which lets pair_runs() move two rows at once. With 16-byte units (BCn blocks, 16-byte
 * texels) the pairs make 32-byte runs, one vector move each instead of two (runs_aligned()).
 *
 * The doubled run must also be untouched by the rows and slices: a yo[] or zo[] entry with the
 * address bit 'run' set XORs into the middle of the doubled run, and the walk - which adds the
 * in-run offset to xo ^ yo ^ zo - would then write past the run and past the block (an
 * equation with x2 ^ y0 on address bit 2 has 4-byte runs whose pairs are adjacent in row 0
 * only; issue 12, defect 1). */
static bool bit_clear_in_all(const uint32_t *v, unsigned n, uint32_t bit)
{
    for (unsigned i = 0; i < n; i++)
        if ((v[i] & bit) != 0)
            return false;
    return true;
}

static void merge_runs(struct vidmm_swz_tiles *t)
{
    while (t->run_log2 < 5 && t->tw_log2 > t->run_log2) {
        unsigned cols = 1u << (t->tw_log2 - t->run_log2);
        uint32_t run = 1u << t->run_log2;
        bool ok = cols >= 2 && bit_clear_in_all(t->yo, 1u << t->th_log2, run) &&
                  bit_clear_in_all(t->zo, 1u << t->td_log2, run);
        for (unsigned i = 0; ok && i < cols; i += 2)
            ok = t->xo[i + 1] == t->xo[i] + run && (t->xo[i] & (2 * run - 1)) == 0;
        if (!ok)
            return;
        for (unsigned i = 0; i < cols / 2; i++)
            t->xo[i] = t->xo[2 * i];
        t->run_log2++;
    }
}

/* pairs16_ok() tells whether the tables describe 16-byte runs whose address bit right above the
 * run is y0 alone, so that run c of rows r and r + 1 (r even) is one 32-byte granule (the pair
 * kernels of kernel_ops.h): yo[r + 1] == yo[r] ^ 16 with bit 4 clear in yo[r] for every pair, and
 * bit 4 clear in every column entry. True for the GOB, Intel Y and Tile4 and the D3D / AMD 2D
 * tables (tiling.md 2.2, 5.2, 5.4: b4 = y0 in each); a caller's equation may differ. */
static bool pairs16_ok(const struct vidmm_swz_tiles *t)
{
    if (t->run_log2 != 4 || t->th_log2 < 1)
        return false;
    for (unsigned c = 0; c < 1u << (t->tw_log2 - 4); c++)
        if ((t->xo[c] & 16) != 0)
            return false;
    for (unsigned r = 0; r < 1u << t->th_log2; r += 2)
        if ((t->yo[r] & 16) != 0 || t->yo[r + 1] != (t->yo[r] ^ 16))
            return false;
    return true;
}

/* quads8_ok() tells whether the tables describe 8-byte runs grouped in 2x2 quads (the quad
 * kernels of kernel_ops.h): for even r and c, yo[r + 1] == yo[r] ^ 8, xo[c + 1] == xo[c] ^ 16, and
 * bits 3 and 4 clear in yo[r] and xo[c]. True for Morton with 4-byte units (x0 y0 x1 at byte
 * bits 2, 3, 4; tiling.md 6.1) once merge_runs() has joined the unit pairs. */
static bool quads8_ok(const struct vidmm_swz_tiles *t)
{
    if (t->run_log2 != 3 || t->th_log2 < 1 || t->tw_log2 < 4)
        return false;
    for (unsigned c = 0; c < 1u << (t->tw_log2 - 3); c += 2)
        if ((t->xo[c] & 24) != 0 || t->xo[c + 1] != (t->xo[c] ^ 16))
            return false;
    for (unsigned r = 0; r < 1u << t->th_log2; r += 2)
        if ((t->yo[r] & 24) != 0 || t->yo[r + 1] != (t->yo[r] ^ 8))
            return false;
    return true;
}

/* lines16_ok() tells whether a pair layout (pairs16_ok()) also has y1 right above y0, so that
 * run c of four rows r .. r + 3 (r % 4 == 0) is one aligned 64-byte line, rows in order (the
 * line kernels of kernel_ops.h): Intel Y and Tile4 (tiling.md 4.1: y1 y0 above x3..x0), the D3D
 * and AMD tables of 4-byte elements (5.2: y2 y1 y0 x3..x0); not the GOB (x4 above y0). */
static bool lines16_ok(const struct vidmm_swz_tiles *t)
{
    if (!t->pair16 || t->th_log2 < 2)
        return false;
    for (unsigned c = 0; c < 1u << (t->tw_log2 - 4); c++)
        if ((t->xo[c] & 63) != 0)
            return false;
    for (unsigned r = 0; r < 1u << t->th_log2; r += 4)
        if ((t->yo[r] & 63) != 0 || t->yo[r + 1] != (t->yo[r] ^ 16) || t->yo[r + 2] != (t->yo[r] ^ 32) ||
            t->yo[r + 3] != (t->yo[r] ^ 48))
            return false;
    return true;
}

/* qlines8_ok() is the same for the quad layout (quads8_ok()): y1 right above x1, so that the
 * quads of rows r, r + 1 and r + 2, r + 3 at run c (c even) are one aligned 64-byte line:
 * Morton with 4-byte units (tiling.md 6.1: y1 x1 y0 x0 at byte bits 5..2). */
static bool qlines8_ok(const struct vidmm_swz_tiles *t)
{
    if (!t->quad8 || t->th_log2 < 2)
        return false;
    for (unsigned c = 0; c < 1u << (t->tw_log2 - 3); c += 2)
        if ((t->xo[c] & 63) != 0)
            return false;
    for (unsigned r = 0; r < 1u << t->th_log2; r += 4)
        if ((t->yo[r] & 63) != 0 || t->yo[r + 1] != (t->yo[r] ^ 8) || t->yo[r + 2] != (t->yo[r] ^ 32) ||
            t->yo[r + 3] != (t->yo[r] ^ 40))
            return false;
    return true;
}

/* span_mask() is every bit an in-tile offset can have: the OR of all table entries and of the
 * run's bytes, rounded up to a run of low ones. */
static uint32_t span_mask(const struct vidmm_swz_tiles *t)
{
    uint32_t v = (1u << t->run_log2) - 1;
    for (unsigned c = 0; c < 1u << (t->tw_log2 - t->run_log2); c++)
        v |= t->xo[c];
    for (unsigned r = 0; r < 1u << t->th_log2; r++)
        v |= t->yo[r];
    for (unsigned k = 0; k < 1u << t->td_log2; k++)
        v |= t->zo[k];
    for (unsigned sh = 1; sh < 32; sh *= 2)
        v |= v >> sh;
    return v;
}

/* vidmm_swz_prepare() (swizzle_internal.h). */
int vidmm_swz_prepare(const struct vidmm_swz_surface *s, const struct vidmm_swz_family *fam, uint32_t mip,
                      uint32_t layer, struct vidmm_swz_mip *m)
{
    if (mip >= s->mips || layer >= s->layers)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, s->call, mip >= s->mips ? "mip" : "layer", "mip %u, layer %u: "
                                "outside the surface's %u mips and %u layers (spec swizzle.h)", mip, layer, s->mips,
                                s->layers);
    memset(m, 0, sizeof(*m));
    m->s = s;
    m->mip = mip;
    m->layer = layer;
    m->w = vidmm_swz_mip_dim(s->width, s->bw, mip);
    m->h = vidmm_swz_mip_dim(s->height, s->bh, mip);
    m->d = vidmm_swz_mip_dim(s->depth, 1, mip);
    m->elem = s->elem;
    int err = linear_offset(s, mip, layer, &m->linear_offset);
    if (err < 0)
        return refuse_surface(s, err, "a packed linear offset beyond 64 bits");
    err = fam->resolve(s, mip, layer, m);
    if (err < 0)
        return refuse_surface(s, err, "the subresource cannot be addressed");
    /* A tile description outside the tables' bounds would index past them: walk with addr()
     * instead (a family bug, caught by the tests that compare the two walks). */
    const struct vidmm_swz_tiles *t = &m->tiles;
    if (t->tile_base != NULL &&
        (t->run_log2 > t->tw_log2 || t->tw_log2 > 24 || (1u << (t->tw_log2 - t->run_log2)) > VIDMM_SWZ_MAX_XRUNS ||
         (1u << t->th_log2) > VIDMM_SWZ_MAX_ROWS || (1u << t->td_log2) > VIDMM_SWZ_MAX_SLICES)) {
        VIDMM_ASSERT(!"tile description out of bounds");
        m->tiles.tile_base = NULL;
    }
    if (m->tiles.tile_base != NULL) {
        merge_runs(&m->tiles);
        m->tiles.pair16 = pairs16_ok(&m->tiles);
        m->tiles.quad8 = quads8_ok(&m->tiles);
        m->tiles.lines = lines16_ok(&m->tiles) || qlines8_ok(&m->tiles);
        m->tiles.span_mask = span_mask(&m->tiles);
    }
    return m->addr != NULL && m->run_log2 <= 40 ? 0 : refuse_surface(s, VIDMM_E_UNSUPPORTED, "");
}

/* vidmm_swz_open() (swizzle_internal.h). */
int vidmm_swz_open(const char *call, const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                   struct vidmm_swz_surface *s, const struct vidmm_swz_family **fam, uint64_t *lin, uint64_t *total)
{
    int err;
    if ((err = load(call, layout, surface, s, fam)) < 0)
        return err;
    if ((err = linear_total(s, lin)) < 0)
        return refuse_surface(s, err, "its packed linear size overflows 64 bits");
    if ((err = (*fam)->total(s, total)) < 0)
        return refuse_surface(s, err, "its tiled size overflows 64 bits");
    return 0;
}

/* surface_size() answers both size queries; the tiled size is always computed, because a surface
 * the tiling cannot hold has no linear size either. */
static int surface_size(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                        uint64_t *bytes, bool tiled)
{
    const char *call = tiled ? "vidmm_surface_tiled_size" : "vidmm_surface_linear_size";
    struct vidmm_swz_surface s;
    const struct vidmm_swz_family *fam;
    uint64_t lin, total;
    int err;

    if (bytes == NULL)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, call, "bytes", "NULL (spec swizzle.h)");
    if ((err = vidmm_swz_open(call, layout, surface, &s, &fam, &lin, &total)) < 0)
        return err;
    *bytes = tiled ? total : lin;
    return 0;
}

int vidmm_surface_tiled_size(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                             uint64_t *bytes)
{
    return surface_size(layout, surface, bytes, true);
}

int vidmm_surface_linear_size(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                              uint64_t *bytes)
{
    return surface_size(layout, surface, bytes, false);
}

int vidmm_surface_subresource(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                              uint32_t mip, uint32_t layer, struct vidmm_subresource_info *info)
{
    struct vidmm_swz_surface s;
    const struct vidmm_swz_family *fam;
    struct vidmm_swz_mip m;
    uint64_t lin, total;
    int err;

    if (info == NULL || info->size < SUBRES_V0_SIZE)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, __func__, info == NULL ? "info" : "info->size",
                                "NULL, or below the first version's %zu bytes (spec swizzle.h)",
                                (size_t)SUBRES_V0_SIZE);
    if ((err = vidmm_swz_open(__func__, layout, surface, &s, &fam, &lin, &total)) < 0 ||
        (err = vidmm_swz_prepare(&s, fam, mip, layer, &m)) < 0)
        return err;
    size_t size = info->size;
    memset(info, 0, SUBRES_V0_SIZE);
    info->size = size;
    info->width = m.w;
    info->height = m.h;
    info->depth = m.d;
    info->tiled_offset = m.base;
    info->tiled_size = m.span;
    info->linear_offset = m.linear_offset;
    info->linear_size = (uint64_t)m.w * m.h * m.d * m.elem;
    info->block_height = m.block_height;
    info->block_depth = m.block_depth;
    return 0;
}
/* ---------------------------------------------------------------------------------------------
 * LINEAR: pitch-linear, the identity layout. Subresources back to back (layers, then mips),
 * rows 'pitch' bytes apart (mip 0 of a single-subresource surface may have a larger pitch than
 * its row), slices pitch * height apart.
 * ------------------------------------------------------------------------------------------- */

static int linear_check(struct vidmm_swz_surface *s)
{
    const struct vidmm_tile_layout *l = &s->layout;
    s->refused = true; /* each refusal below logs its own line */
    if (l->flags || l->block_height || l->block_depth || l->swizzle_unit || l->amd_swizzle_mode)
        return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, s->call, "layout", "LINEAR with flags, block_height, "
                                "block_depth, swizzle_unit or amd_swizzle_mode not 0 (spec swizzle.h)");
    if (l->pitch != 0) {
        if (s->mips != 1 || s->layers != 1) /* a pitch for every mip is not a layout the spec defines */
            return vidmm_swz_refuse(VIDMM_E_UNSUPPORTED, s->call, "layout->pitch", "%u with %u mips and %u layers: "
                                    "a pitch is for one subresource (spec swizzle.h)", l->pitch, s->mips, s->layers);
        uint64_t row = (uint64_t)vidmm_swz_mip_dim(s->width, s->bw, 0) * s->elem;
        if ((uint64_t)l->pitch < row)
            return vidmm_swz_refuse(VIDMM_E_INVALID_ARG, s->call, "layout->pitch", "%u, below the row's %llu bytes "
                                    "(spec swizzle.h)", l->pitch, (unsigned long long)row);
    }
    return 0;
}

static uint64_t linear_pitch(const struct vidmm_swz_surface *s, uint32_t mip)
{
    if (s->layout.pitch != 0)
        return s->layout.pitch;
    return (uint64_t)vidmm_swz_mip_dim(s->width, s->bw, mip) * s->elem;
}

static int linear_total_tiled(const struct vidmm_swz_surface *s, uint64_t *bytes)
{
    uint64_t per_layer = 0;
    for (uint32_t mip = 0; mip < s->mips; mip++) {
        uint64_t sz;
        if (!vidmm_swz_mul_ok(linear_pitch(s, mip), (uint64_t)vidmm_swz_mip_dim(s->height, s->bh, mip) *
                                              vidmm_swz_mip_dim(s->depth, 1, mip), &sz) ||
            !vidmm_swz_add_ok(per_layer, sz, &per_layer))
            return VIDMM_E_INVALID_ARG;
    }
    return vidmm_swz_mul_ok(per_layer, s->layers, bytes) ? 0 : VIDMM_E_INVALID_ARG;
}

static uint64_t linear_addr(const struct vidmm_swz_mip *m, uint64_t xb, uint32_t y, uint32_t z)
{
    /* p[0] = base, p[1] = row pitch, p[2] = slice pitch */
    return m->p[0] + z * m->p[2] + y * m->p[1] + xb;
}

static int linear_resolve(const struct vidmm_swz_surface *s, uint32_t mip, uint32_t layer, struct vidmm_swz_mip *m)
{
    uint64_t base = 0, per_layer = 0;
    for (uint32_t k = 0; k < s->mips; k++) {
        uint64_t sz = linear_pitch(s, k) * vidmm_swz_mip_dim(s->height, s->bh, k) * vidmm_swz_mip_dim(s->depth, 1, k);
        if (k < mip)
            base += sz;
        per_layer += sz;
    }
    m->p[1] = linear_pitch(s, mip);
    m->p[2] = m->p[1] * m->h;
    m->p[0] = per_layer * layer + base;
    m->base = m->p[0];
    m->span = m->p[2] * m->d;
    m->run_log2 = 40; /* a whole row is contiguous */
    m->addr = linear_addr;
    return 0;
}

const struct vidmm_swz_family vidmm_swz_linear = {
    .check = linear_check,
    .total = linear_total_tiled,
    .resolve = linear_resolve,
};
