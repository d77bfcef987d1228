/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_morton.c - Morton (Z-order) layout, 2D and 3D, in the RPCS3 style: a
 * full interleave up to the shortest axis, the longer axes alone beyond it, over power-of-two
 * rounded extents, with a swizzle unit apart from the element size
 * (shared/spec/tiling.md section 6).
 *
 * Whole surfaces are this library's definition (the spec and RPCS3 describe one image): each
 * subresource (one mip of one layer, all its slices) occupies its own power-of-two rounded
 * Morton block of U * 2^(lw + lh + ld) bytes (6.2), and the subresources follow each other
 * back to back in the packed order, layers then mips (layer 0 mip 0, layer 0 mip 1, ...,
 * layer 1 mip 0, ...), with no alignment beyond their own sizes. */
#include "common/internal.h"
#include "kernels/swizzle_internal.h"

/* Slots of struct vidmm_swz_mip p[] and q[] used by morton_addr(). */
enum {
    P_BASE,          /* tiled offset of the subresource */
};
enum {
    Q_UNIT,          /* U, bytes per swizzle unit */
    Q_UNIT_LOG2,     /* log2(U) when U is a power of two, else Q_UNIT_NPOT */
    Q_S0,            /* passes where all three axes still have bits (0 in 2D) */
    Q_S1,            /* passes where at least two axes still have bits */
    Q_OC,            /* index bit of the first pass with one axis left */
    Q_RB_X,          /* per axis x, y, z: index bit of its first bit in the two-axis passes */
    Q_RB_Y,
    Q_RB_Z,
    Q_KX,            /* the fast walk's tile: 2^kx units x 2^ky rows x 2^kz slices */
    Q_KY,
    Q_KZ,
};
#define Q_UNIT_NPOT 0xffffffffu

/* ceil_log2(v) is the smallest n with 2^n >= v, 0 for v <= 1 (spec conventions). */
static unsigned ceil_log2(uint64_t v)
{
    unsigned n = 0;

    while (n < 64 && ((uint64_t)1 << n) < v)
        n++;
    return n;
}

/* The swizzle unit U: the layout's, or the element size (6.3). */
static uint32_t morton_unit(const struct vidmm_swz_surface *s)
{
    return s->layout.swizzle_unit != 0 ? s->layout.swizzle_unit : s->elem;
}

/* The index bits of each axis of mip 'mip': lw over units of a row, lh over rows, ld over
 * slices (6.1), and the mip's size in bytes, U * 2^(lw + lh + ld) (6.2).
 * Returns 0, or VIDMM_E_INVALID_ARG when the size does not fit in 64 bits. */
static int morton_mip(const struct vidmm_swz_surface *s, uint32_t mip, unsigned l[3], uint64_t *size)
{
    uint32_t u = morton_unit(s);
    uint64_t wu = (uint64_t)vidmm_swz_mip_dim(s->width, s->bw, mip) * (s->elem / u);
    unsigned bits;

    l[0] = ceil_log2(wu);
    l[1] = ceil_log2(vidmm_swz_mip_dim(s->height, s->bh, mip));
    l[2] = ceil_log2(vidmm_swz_mip_dim(s->depth, 1, mip));
    bits = l[0] + l[1] + l[2];
    if (bits >= 64 || u > (UINT64_MAX >> bits))
        return VIDMM_E_INVALID_ARG;
    *size = (uint64_t)u << bits;
    return 0;
}

/* morton_layer() sums the mips of one layer: '*mip_off' receives the offset of mip 'mip' in the
 * layer, '*stride' the layer's size. Returns 0 or VIDMM_E_INVALID_ARG (64-bit overflow). */
static int morton_layer(const struct vidmm_swz_surface *s, uint32_t mip, uint64_t *mip_off,
                        uint64_t *stride)
{
    uint64_t sum = 0, size;
    unsigned l[3];
    uint32_t m;
    int err;

    *mip_off = 0;
    for (m = 0; m < s->mips; m++) {
        if (m == mip)
            *mip_off = sum;
        if ((err = morton_mip(s, m, l, &size)) < 0)
            return err;
        if (size > UINT64_MAX - sum)
            return VIDMM_E_INVALID_ARG;
        sum += size;
    }
    *stride = sum;
    return 0;
}

static int morton_total(const struct vidmm_swz_surface *s, uint64_t *bytes)
{
    uint64_t off, stride;
    int err;

    if ((err = morton_layer(s, 0, &off, &stride)) < 0)
        return err;
    if (stride != 0 && s->layers > UINT64_MAX / stride)
        return VIDMM_E_INVALID_ARG;
    *bytes = stride * s->layers;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The index (6.1).
 *
 * The pass-by-pass interleave has three phases, from the sorted axis lengths s0 <= s1 <= s2:
 * passes [0, s0) take one bit of each of the three axes (x, y, z at index bits 3i, 3i + 1,
 * 3i + 2), passes [s0, s1) one bit of each of the two longer axes (in x, y, z order), passes
 * [s1, s2) one bit of the longest axis alone. So an axis's bits deposit as: its low s0 bits
 * spread 3 apart, its next s1 - s0 bits spread 2 apart, the rest in a straight line. For an
 * in-range coordinate the bits of a phase the axis is not part of are zero, so the same three
 * terms serve every axis. In 2D s0 = 0 and this is the closed form of 6.1.
 * ------------------------------------------------------------------------------------------- */

/* spread2() moves bit i of a 32-bit value to bit 2i. */
static inline uint64_t spread2(uint64_t v)
{
    v &= 0xffffffffu;
    v = (v | v << 16) & 0x0000ffff0000ffffu;
    v = (v | v << 8) & 0x00ff00ff00ff00ffu;
    v = (v | v << 4) & 0x0f0f0f0f0f0f0f0fu;
    v = (v | v << 2) & 0x3333333333333333u;
    v = (v | v << 1) & 0x5555555555555555u;
    return v;
}

/* spread3() moves bit i of a 21-bit value to bit 3i. Each step moves the upper half of every
 * group of bits up by the step's shift (32, 16, 8, 4, 2) and the mask keeps both halves, so the
 * groups end as single bits three apart. */
static inline uint64_t spread3(uint64_t v)
{
    v &= 0x1fffffu;
    v = (v | v << 32) & 0x001f00000000ffffu;
    v = (v | v << 16) & 0x001f0000ff0000ffu;
    v = (v | v << 8) & 0x100f00f00f00f00fu;
    v = (v | v << 4) & 0x10c30c30c30c30c3u;
    v = (v | v << 2) & 0x1249249249249249u;
    return v;
}

/* deposit() places coordinate 'v' of the axis whose first two-axis bit is 'rb' and whose
 * three-axis rank is 'ra' (0, 1, 2 for x, y, z). */
static inline uint64_t deposit(const struct vidmm_swz_mip *m, uint64_t v, unsigned ra, unsigned rb)
{
    unsigned s0 = m->q[Q_S0], s1 = m->q[Q_S1];
    uint64_t a = v & (((uint64_t)1 << s0) - 1);
    uint64_t b = (v >> s0) & (((uint64_t)1 << (s1 - s0)) - 1);

    return spread3(a) << ra | spread2(b) << rb | (v >> s1) << m->q[Q_OC];
}

/* morton_addr(): the unit holding byte column 'xb' is unit xb / U of the row (6.3); it is
 * stored at byte index * U of the subresource, its bytes in order. */
static uint64_t morton_addr(const struct vidmm_swz_mip *m, uint64_t xb, uint32_t y, uint32_t z)
{
    uint32_t u = m->q[Q_UNIT], ul = m->q[Q_UNIT_LOG2];
    uint64_t ux = ul != Q_UNIT_NPOT ? xb >> ul : xb / u;
    uint64_t idx = deposit(m, ux, 0, m->q[Q_RB_X]) | deposit(m, y, 1, m->q[Q_RB_Y]) |
                   deposit(m, z, 2, m->q[Q_RB_Z]);

    return m->p[P_BASE] + idx * u + (xb - ux * u);
}

/* morton_tile_base() locates tile (tx, ty, tz) for the engine's tile walk: the deposit of the
 * coordinate bits above the tile, which land above the tile's index bits (see morton_resolve). */
static uint64_t morton_tile_base(const struct vidmm_swz_mip *m, uint64_t tx, uint32_t ty, uint32_t tz)
{
    uint64_t idx = deposit(m, tx << m->q[Q_KX], 0, m->q[Q_RB_X]) |
                   deposit(m, (uint64_t)ty << m->q[Q_KY], 1, m->q[Q_RB_Y]) |
                   deposit(m, (uint64_t)tz << m->q[Q_KZ], 2, m->q[Q_RB_Z]);

    return m->p[P_BASE] + (idx << m->q[Q_UNIT_LOG2]);
}

/* ---------------------------------------------------------------------------------------------
 * The family.
 * ------------------------------------------------------------------------------------------- */

/* morton_check() accepts a swizzle unit that divides the element size (6.3: E is a multiple
 * of U; 0 = E), powers of two or not, and rejects the layout fields Morton does not use and
 * sizes beyond 64 bits: all VIDMM_E_INVALID_ARG. */
static int morton_check(struct vidmm_swz_surface *s)
{
    const struct vidmm_tile_layout *l = &s->layout;
    uint64_t total;

    if (l->swizzle_unit != 0 && s->elem % l->swizzle_unit != 0)
        return VIDMM_E_INVALID_ARG;
    if (l->flags != 0 || l->block_height != 0 || l->block_depth != 0 || l->pitch != 0 ||
        l->amd_swizzle_mode != 0 || l->equation != NULL)
        return VIDMM_E_INVALID_ARG;
    return morton_total(s, &total);
}

/* morton_resolve() places the subresource (see the top of the file) and precomputes the phases
 * of its index. Runs: only a unit is contiguous (its right neighbour is contiguous only across
 * x bit 0), so runs are the largest power of two dividing U: aligned runs of that size never
 * straddle two units. */
static int morton_resolve(const struct vidmm_swz_surface *s, uint32_t mip, uint32_t layer,
                          struct vidmm_swz_mip *m)
{
    uint64_t off, stride, size;
    uint32_t u = morton_unit(s);
    unsigned l[3], s0, s1, smax, a, rb, i;
    int err;

    if ((err = morton_layer(s, mip, &off, &stride)) < 0 || (err = morton_mip(s, mip, l, &size)) < 0)
        return err;
    for (i = 0; i < 16; i++) {
        m->p[i] = 0;
        m->q[i] = 0;
    }
    m->base = (uint64_t)layer * stride + off;
    m->span = size;
    m->addr = morton_addr;
    m->block_height = 0;
    m->block_depth = 0;
    m->run_log2 = 0;
    while ((u >> m->run_log2 & 1u) == 0)
        m->run_log2++;
    m->p[P_BASE] = m->base;
    m->q[Q_UNIT] = u;
    m->q[Q_UNIT_LOG2] = (u & (u - 1)) == 0 ? m->run_log2 : Q_UNIT_NPOT;

    /* s0 the shortest length, s1 the middle one (the sum less the shortest and the longest). */
    s0 = l[0];
    smax = l[0];
    for (a = 1; a < 3; a++) {
        s0 = l[a] < s0 ? l[a] : s0;
        smax = l[a] > smax ? l[a] : smax;
    }
    s1 = l[0] + l[1] + l[2] - s0 - smax;
    m->q[Q_S0] = s0;
    m->q[Q_S1] = s1;
    /* In the two-axis passes the axes longer than s0 take turns in x, y, z order. */
    rb = 3 * s0;
    for (a = 0; a < 3; a++) {
        m->q[Q_RB_X + a] = rb;
        if (l[a] > s0)
            rb++;
    }
    m->q[Q_OC] = 3 * s0 + 2 * (s1 - s0);

    /* The engine's fast walk (struct vidmm_swz_tiles), for power-of-two units only (the tables
     * index runs by byte column >> run_log2). The tile is the first n passes of 6.1: min(n, l)
     * low bits of each axis, which fill the low index bits and nothing else, so the index is
     * the in-tile deposit (x, y, z tables, disjoint bits) plus the deposit of the bits above.
     * n = 6 in 2D (64 columns of units, the table limit), 5 in 3D (32 slices). */
    if (m->q[Q_UNIT_LOG2] != Q_UNIT_NPOT) {
        struct vidmm_swz_tiles *t = &m->tiles;
        unsigned n = l[2] > 0 ? 5 : 6, ul = m->q[Q_UNIT_LOG2];

        m->q[Q_KX] = l[0] < n ? l[0] : n;
        m->q[Q_KY] = l[1] < n ? l[1] : n;
        m->q[Q_KZ] = l[2] < n ? l[2] : n;
        t->tw_log2 = m->q[Q_KX] + ul;
        t->th_log2 = m->q[Q_KY];
        t->td_log2 = m->q[Q_KZ];
        t->run_log2 = ul;
        t->tile_base = morton_tile_base;
        for (i = 0; i < 1u << m->q[Q_KX]; i++)
            t->xo[i] = (uint32_t)(deposit(m, i, 0, m->q[Q_RB_X]) << ul);
        for (i = 0; i < 1u << m->q[Q_KY]; i++)
            t->yo[i] = (uint32_t)(deposit(m, i, 1, m->q[Q_RB_Y]) << ul);
        for (i = 0; i < 1u << m->q[Q_KZ]; i++)
            t->zo[i] = (uint32_t)(deposit(m, i, 2, m->q[Q_RB_Z]) << ul);
    }
    return 0;
}

const struct vidmm_swz_family vidmm_swz_morton = {
    morton_check,
    morton_total,
    morton_resolve,
};
