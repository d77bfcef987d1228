/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_eq.c - the address-equation layouts: D3D standard swizzle (4 KB and 64 KB
 * pages), AMD addrlib GFX10 swizzle modes with their mip tail, and the caller's own equation
 * (shared/spec/tiling.md sections 2 and 5). */
#include <string.h>
#include "common/internal.h"
#include "kernels/swizzle_internal.h"

/* One engine serves every tiling of this file: an XOR bit equation inside a block of 2^n bytes,
 * evaluated on the full coordinates (2.1), blocks placed row-major (5.5), and for AMD mip
 * chains the tail block of 5.6, at any base size (layout_dim(): mips are laid out with addrlib's
 * rounded-up extents and copied with the API's rounded-down ones). The equation is "compiled"
 * into the contribution of every coordinate bit (2.1 "Separable"): EQ(xb, y, z) = fx(xb) ^
 * fy(y) ^ fz(z), where fc(v) is the XOR of contrib[c][j] over the set bits j of v. */

#define CH_X VIDMM_EQ_X
#define CH_Y VIDMM_EQ_Y
#define CH_Z VIDMM_EQ_Z
#define COORD_BITS 32   /* struct vidmm_eq_term: bit 0..31 */

/* ---------------------------------------------------------------------------------------------
 * Built-in equations (5.2, 5.3, 5.4), written most significant address bit first as in the
 * spec, one row per address bit with up to three XORed terms. x is in bytes.
 * ------------------------------------------------------------------------------------------- */

#define X(b) ((uint8_t)(CH_X << 5 | (b)))
#define Y(b) ((uint8_t)(CH_Y << 5 | (b)))
#define Z(b) ((uint8_t)(CH_Z << 5 | (b)))

struct eq_table {
    uint8_t bits;          /* log2 of the block in bytes: 12 or 16 */
    bool thick;            /* z bits select slices in a slab (3D) */
    uint8_t t[16][3];      /* t[0] is address bit bits - 1; 0 = no term */
};

/* 5.2, 2D, 64 KB: rows for E = 1, 2 and 4 (one equation, shapes differ), 8 and 16. */
static const struct eq_table d3d_2d_64k[3] = {
    { 16, false, { {X(7)}, {Y(7)}, {X(6)}, {Y(6)}, {X(5)}, {Y(5)}, {X(4)}, {Y(4)},
                   {Y(3)}, {Y(2)}, {Y(1)}, {Y(0)}, {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 16, false, { {X(8)}, {Y(6)}, {X(7)}, {Y(5)}, {X(6)}, {Y(4)}, {X(5)}, {Y(3)},
                   {X(4)}, {Y(2)}, {Y(1)}, {Y(0)}, {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 16, false, { {X(9)}, {Y(5)}, {X(8)}, {Y(4)}, {X(7)}, {Y(3)}, {X(6)}, {Y(2)},
                   {X(5)}, {X(4)}, {Y(1)}, {Y(0)}, {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
};

/* 5.2, 2D, 4 KB (only the 32 bpp row is pinned by a golden; the others are [not covered]). */
static const struct eq_table d3d_2d_4k[3] = {
    { 12, false, { {X(5)}, {Y(5)}, {X(4)}, {Y(4)}, {Y(3)}, {Y(2)}, {Y(1)}, {Y(0)},
                   {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 12, false, { {X(6)}, {Y(4)}, {X(5)}, {Y(3)}, {X(4)}, {Y(2)}, {Y(1)}, {Y(0)},
                   {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 12, false, { {X(7)}, {Y(3)}, {X(6)}, {Y(2)}, {X(5)}, {X(4)}, {Y(1)}, {Y(0)},
                   {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
};

/* 5.2, D3D / GFX9 3D, 64 KB: rows for E = 1 and 2, 4, 8 and 16. That D3D uses this bit order is
 * [unverified] (Microsoft publishes the shapes only); no golden covers the D3D 3D tables. */
static const struct eq_table d3d_3d_64k[3] = {
    { 16, true, { {X(5)}, {Y(4)}, {Z(4)}, {X(4)}, {Y(3)}, {Z(3)}, {Y(2)}, {Z(2)},
                  {Z(1)}, {Z(0)}, {Y(1)}, {Y(0)}, {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 16, true, { {X(6)}, {Y(4)}, {Z(3)}, {X(5)}, {Y(3)}, {Z(2)}, {X(4)}, {Y(2)},
                  {Z(1)}, {Z(0)}, {Y(1)}, {Y(0)}, {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 16, true, { {X(7)}, {Y(3)}, {Z(3)}, {X(6)}, {Y(2)}, {Z(2)}, {X(5)}, {X(4)},
                  {Z(1)}, {Z(0)}, {Y(1)}, {Y(0)}, {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
};

/* 5.2, D3D / GFX9 3D, 4 KB. */
static const struct eq_table d3d_3d_4k[3] = {
    { 12, true, { {Y(3)}, {Z(3)}, {Y(2)}, {Z(2)}, {Z(1)}, {Z(0)}, {Y(1)}, {Y(0)},
                  {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 12, true, { {Y(3)}, {Z(2)}, {X(4)}, {Y(2)}, {Z(1)}, {Z(0)}, {Y(1)}, {Y(0)},
                  {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
    { 12, true, { {Y(2)}, {Z(2)}, {X(5)}, {X(4)}, {Z(1)}, {Z(0)}, {Y(1)}, {Y(0)},
                  {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
};

/* 5.3, GFX10 3D, 64 KB (a different order from D3D / GFX9, same shapes); the golden pins the
 * 32 bpp row. */
static const struct eq_table gfx10_3d_64k[3] = {
    { 16, true, { {X(5)}, {Y(4)}, {Z(4)}, {X(4)}, {Y(3)}, {Z(3)}, {X(3)}, {Y(2)},
                  {Z(2)}, {X(2)}, {Y(1)}, {Z(1)}, {Y(0)}, {Z(0)}, {X(1)}, {X(0)} } },
    { 16, true, { {X(6)}, {Y(4)}, {Z(3)}, {X(5)}, {Y(3)}, {Z(2)}, {X(4)}, {Y(2)},
                  {Z(1)}, {X(3)}, {Y(1)}, {Z(0)}, {Y(0)}, {X(2)}, {X(1)}, {X(0)} } },
    { 16, true, { {X(7)}, {Y(3)}, {Z(3)}, {X(6)}, {Y(2)}, {Z(2)}, {X(5)}, {Y(1)},
                  {Z(1)}, {X(4)}, {Y(0)}, {Z(0)}, {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
};

/* 5.3, GFX10 3D, 4 KB. */
static const struct eq_table gfx10_3d_4k[3] = {
    { 12, true, { {Y(3)}, {Z(3)}, {X(3)}, {Y(2)}, {Z(2)}, {X(2)}, {Y(1)}, {Z(1)},
                  {Y(0)}, {Z(0)}, {X(1)}, {X(0)} } },
    { 12, true, { {Y(3)}, {Z(2)}, {X(4)}, {Y(2)}, {Z(1)}, {X(3)}, {Y(1)}, {Z(0)},
                  {Y(0)}, {X(2)}, {X(1)}, {X(0)} } },
    { 12, true, { {Y(2)}, {Z(2)}, {X(5)}, {Y(1)}, {Z(1)}, {X(4)}, {Y(0)}, {Z(0)},
                  {X(3)}, {X(2)}, {X(1)}, {X(0)} } },
};

/* 5.4, GFX10 SW_64KB_R_X, 32 bpp, Navi10 (GB_ADDR_CONFIG 0x00100044), pipe/bank XOR 0; z is
 * the array layer. */
static const struct eq_table gfx10_64k_r_x_32bpp = {
    16, false, { {X(8)}, {Y(6)}, {X(6)}, {Y(3)}, {X(7), Y(6), Z(0)}, {Y(5), X(8), Z(1)},
                 {Y(4), X(6), Z(2)}, {X(5), Y(3), Z(3)}, {X(4)}, {Y(2)}, {Y(1)}, {Y(0)},
                 {X(3)}, {X(2)}, {X(1)}, {X(0)} }
};

#undef X
#undef Y
#undef Z

/* addrlib AddrSwizzleMode numbers (inc/addrtypes.h) this file implements (1.2). */
#define AMD_SW_4KB_S 5u
#define AMD_SW_64KB_S 9u
#define AMD_SW_64KB_R_X 27u
#define AMD_SW_MODE_LIMIT 32u  /* the hardware SW_MODE field has 5 bits: modes 0..31 */

/* ---------------------------------------------------------------------------------------------
 * Small helpers.
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
    if (a > UINT64_MAX - b)
        return false;
    *out = a + b;
    return true;
}

/* log2_u32() is the index of the highest set bit of 'v' (0 for 0). */
static uint32_t log2_u32(uint32_t v)
{
    uint32_t r = 0;
    while (v >>= 1)
        r++;
    return r;
}

/* ctz64() is the number of trailing zero bits of 'v' (64 for 0). */
static uint32_t ctz64(uint64_t v)
{
    uint32_t r = 0;
    while (r < 64 && (v >> r & 1u) == 0)
        r++;
    return r;
}

static bool is_pow2(uint32_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

/* ---------------------------------------------------------------------------------------------
 * Compiled equations.
 * ------------------------------------------------------------------------------------------- */

struct eqc {
    uint32_t n;                             /* the block is 2^n bytes */
    bool thick;                             /* z bits are block bits (3D slabs) */
    uint32_t main[4];                       /* address bits whose first term is each channel */
    uint32_t k[4];                          /* block bits per channel: x (bytes), y, z */
    uint32_t run_log2;                      /* 2.1 "Contiguous runs" */
    bool outside;                           /* some term reads a bit above the block */
    uint32_t contrib[4][COORD_BITS];        /* address bits each coordinate bit flips */
};

/* add_term() records that coordinate bit 'bit' of channel 'ch' flips address bit 'addr_bit';
 * '*first' marks the first term of the address bit (see analyse()). */
static void add_term(struct eqc *c, uint32_t addr_bit, uint32_t ch, uint32_t bit, bool *first)
{
    c->contrib[ch][bit] ^= 1u << addr_bit;
    if (*first) {
        c->main[ch]++;
        *first = false;
    }
}

static void load_table(const struct eq_table *t, struct eqc *c)
{
    memset(c, 0, sizeof(*c));
    c->n = t->bits;
    c->thick = t->thick;
    for (uint32_t r = 0; r < t->bits; r++) {
        bool first = true;
        for (uint32_t k = 0; k < 3 && t->t[r][k] != 0; k++)
            add_term(c, t->bits - 1 - r, t->t[r][k] >> 5, t->t[r][k] & 31u, &first);
    }
}

/* load_user() validates the caller's equation (struct vidmm_equation): 4..20 address bits,
 * terms of a known channel reading bits 0..31. Terms of VIDMM_EQ_NONE are skipped wherever
 * they are, and rows above 'bits' are not read. A term repeated in one row cancels (XOR). */
static int load_user(const struct vidmm_equation *e, struct eqc *c)
{
    memset(c, 0, sizeof(*c));
    if (e->bits < 4 || e->bits > VIDMM_EQ_MAX_BITS)
        return VIDMM_E_INVALID_ARG;
    c->n = e->bits;
    c->thick = e->thick;
    for (uint32_t i = 0; i < e->bits; i++) {
        bool first = true;
        for (uint32_t k = 0; k < VIDMM_EQ_MAX_TERMS; k++) {
            const struct vidmm_eq_term *t = &e->term[i][k];
            if (t->channel == VIDMM_EQ_NONE)
                continue;
            if (t->channel > VIDMM_EQ_Z || t->bit >= COORD_BITS)
                return VIDMM_E_INVALID_ARG;
            add_term(c, i, t->channel, t->bit, &first);
        }
    }
    return 0;
}

/* full_rank() tells whether the contributions of the block bits (x0..x(kx-1), y0..y(ky-1),
 * z0..z(kz-1); kx + ky + kz == n) are linearly independent over GF(2), i.e. whether the
 * equation maps the coordinates inside a block one to one onto its 2^n bytes. */
static bool full_rank(const struct eqc *c, const uint32_t k[4])
{
    uint32_t basis[VIDMM_EQ_MAX_BITS] = {0};

    for (uint32_t ch = CH_X; ch <= CH_Z; ch++) {
        for (uint32_t j = 0; j < k[ch]; j++) {
            uint32_t v = c->contrib[ch][j];
            while (v != 0) {
                uint32_t top = log2_u32(v);
                if (basis[top] == 0) {
                    basis[top] = v;
                    break;
                }
                v ^= basis[top];
            }
            if (v == 0)
                return false;
        }
    }
    return true;
}

/* analyse() finds the block shape (5.1) and the run length (2.1) of a loaded equation.
 *
 * A block holds coordinates whose low k[c] bits vary, k[x] + k[y] (+ k[z] when thick) = n,
 * and the equation restricted to those bits must be one to one. 5.1 counts "the x bits"; for
 * XOR equations the bits that belong to the block are not the single-term ones (SW_64KB_R_X
 * reads x5 and x7 only through XOR rows, 5.4), and _X equations of other configurations read
 * bits above the block too (2.1 "Full coordinates"). So every split (k[x], k[y], k[z]) with
 * each k[c] at most the length of the run x0, x1, ... of bits the equation reads, and with a
 * one-to-one block, is a candidate. Exactly one candidate: that is the block. Several (bits
 * above the block extending that run): the one whose counts equal the channels of each
 * address bit's first term, which is addrlib's convention (ADDR_EQUATION keeps the block bit
 * in addr[] and the modifiers in xor1[] / xor2[]). None, or no such tie-break: INVALID_ARG.
 *
 * Then the element size must divide the block's width in bytes (blk_w = 2^k[x] / E). */
static int analyse(struct eqc *c, uint32_t elem)
{
    uint32_t reach[4] = {0}, k[4] = {0}, found = 0, pick[4] = {0};

    for (uint32_t ch = CH_X; ch <= CH_Z; ch++)
        while (reach[ch] < COORD_BITS && c->contrib[ch][reach[ch]] != 0)
            reach[ch]++;
    if (!c->thick)
        reach[CH_Z] = 0;
    for (k[CH_X] = 0; k[CH_X] <= reach[CH_X] && k[CH_X] <= c->n; k[CH_X]++) {
        for (k[CH_Z] = 0; k[CH_Z] <= reach[CH_Z] && k[CH_X] + k[CH_Z] <= c->n; k[CH_Z]++) {
            k[CH_Y] = c->n - k[CH_X] - k[CH_Z];
            if (k[CH_Y] > reach[CH_Y] || !full_rank(c, k))
                continue;
            if (found == 0 || (k[CH_X] == c->main[CH_X] && k[CH_Y] == c->main[CH_Y] &&
                               k[CH_Z] == c->main[CH_Z]))
                memcpy(pick, k, sizeof(pick));
            found++;
        }
    }
    if (found == 0)
        return VIDMM_E_INVALID_ARG;
    if (found > 1 && (pick[CH_X] != c->main[CH_X] || pick[CH_Y] != c->main[CH_Y] ||
                      pick[CH_Z] != c->main[CH_Z]))
        return VIDMM_E_INVALID_ARG;
    memcpy(c->k, pick, sizeof(c->k));
    if ((elem & (elem - 1)) != 0 || elem > (1u << c->k[CH_X]))
        return VIDMM_E_INVALID_ARG;

    /* Does any term read a coordinate bit outside the block? (z of a 2D equation is the layer,
     * constant over a subresource, so it does not count.) */
    c->outside = false;
    for (uint32_t ch = CH_X; ch <= (c->thick ? CH_Z : CH_Y); ch++)
        for (uint32_t j = c->k[ch]; j < COORD_BITS; j++)
            if (c->contrib[ch][j] != 0)
                c->outside = true;

    /* 2.1: address bits 0..r-1 are exactly x0..x(r-1), and nothing else touches them. */
    c->run_log2 = 0;
    while (c->run_log2 < c->n && c->contrib[CH_X][c->run_log2] == 1u << c->run_log2) {
        uint32_t r = c->run_log2;
        bool alone = true;
        for (uint32_t ch = CH_X; ch <= CH_Z && alone; ch++)
            for (uint32_t j = 0; j < COORD_BITS && alone; j++)
                if (!(ch == CH_X && j == r) && (c->contrib[ch][j] >> r & 1u) != 0)
                    alone = false;
        if (!alone)
            break;
        c->run_log2++;
    }
    return 0;
}

/* eval_axis() is one axis' share of the equation: the XOR of the contributions of the set bits
 * of 'v' (2.1 "Separable"). */
static uint32_t eval_axis(const uint32_t contrib[COORD_BITS], uint64_t v)
{
    /* Only the set bits of v matter: visiting them alone made resolve() (which fills up to
     * 64 + 256 + 32 table entries) several times cheaper than testing all 32 bits each. */
    uint32_t r = 0;
    v &= ((uint64_t)1 << COORD_BITS) - 1;
    while (v != 0) {
        r ^= contrib[ctz64(v)];
        v &= v - 1;
    }
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Surface geometry (5.5, 5.6).
 * ------------------------------------------------------------------------------------------- */

struct geo {
    struct eqc eq;
    uint32_t e_log2;                /* log2 of the element size */
    uint32_t blk_w, blk_h, blk_d;   /* block in elements, rows, slices */
    uint32_t first;                 /* first mip in the tail; s->mips when there is none */
    uint32_t max_in_tail;
    uint64_t chain;                 /* 2D: bytes per layer, every mip; 3D: the surface */
};

/* Index into the three-row tables by element size: sizes sharing an equation share a row. */
static uint32_t row_2d(uint32_t e_log2)
{
    return e_log2 == 0 ? 0 : e_log2 <= 2 ? 1 : 2;
}

static uint32_t row_3d(uint32_t e_log2)
{
    return e_log2 <= 1 ? 0 : e_log2 == 2 ? 1 : 2;
}

/* layout_dim() is the extent, in elements, that addrlib lays mip m out with (5.6): the base
 * converted to elements rounding up (ElemLib::AdjustSurfaceInfo, called from Lib::ComputeSurfaceInfo
 * in src/core/addrlib2.cpp: ceil(pixels / block) for BCn), then halved per level rounding up
 * (Gfx10Lib::GetMipSize in src/gfx10/gfx10addrlib.h: ShiftCeil(max(n, 1), m) = ceil(n / 2^m)).
 * It is never less than the extent copied, vidmm_swz_mip_dim() = ceil(max(1, pixels >> m) /
 * block) (swizzle.h), and equals it at mip 0 and for power-of-two bases [derived]. addrlib's
 * HwlComputeNonBlockCompressedView (gfx10addrlib.cpp, gfx11addrlib.cpp) states the same pair
 * in a comment: API mip width max(1, W >> m) in blocks rounded up, the pitch from the
 * rounded-up GetMipSize extent (its 0x401-pixel BC example is a test in test_reference.c).
 * Read from Mesa's addrlib source; no golden vector pins an NPOT chain [unverified]. */
static uint64_t layout_dim(uint32_t pixels, uint32_t block, uint32_t m)
{
    uint64_t e = ((uint64_t)pixels + block - 1) / block;
    return m < 40 ? (e + ((uint64_t)1 << m) - 1) >> m : 1;
}

/* mip_extent() is mip m's size in the tiled surface: addrlib's extent (layout_dim()) with pitch
 * and height rounded to whole blocks (5.5, 5.6 step 2, Gfx10Lib::ComputeSurfaceInfoMacroTiled:
 * PowTwoAlign(mipWidth, blockWidth)), and its bytes for one slice. */
static bool mip_extent(const struct vidmm_swz_surface *s, const struct geo *g, uint32_t m,
                       uint64_t *pitch, uint64_t *height, uint64_t *bytes)
{
    uint64_t w = layout_dim(s->width, s->bw, m), h = layout_dim(s->height, s->bh, m);
    uint64_t row;

    *pitch = (w + g->blk_w - 1) / g->blk_w * g->blk_w;
    *height = (h + g->blk_h - 1) / g->blk_h * g->blk_h;
    return mul_ok(*pitch, (uint64_t)1 << g->e_log2, &row) && mul_ok(row, *height, bytes);
}

/* unused_fields_clear() is the rule of struct vidmm_tile_layout: fields the tiling does not
 * use are 0. ('equation' is checked by the engine, which copies it.) */
static bool unused_fields_clear(const struct vidmm_swz_surface *s)
{
    const struct vidmm_tile_layout *l = &s->layout;
    return l->flags == 0 && l->block_height == 0 && l->block_depth == 0 && l->pitch == 0 &&
           l->swizzle_unit == 0 && (l->tiling == VIDMM_TILING_AMD_GFX10 || l->amd_swizzle_mode == 0);
}

/* pick_table() chooses the built-in equation of a D3D or AMD surface. */
static int pick_table(const struct vidmm_swz_surface *s, uint32_t e_log2, const struct eq_table **t)
{
    const bool is3d = s->depth > 1;

    switch (s->layout.tiling) {
    case VIDMM_TILING_D3D_STD_4K:
        *t = is3d ? &d3d_3d_4k[row_3d(e_log2)] : &d3d_2d_4k[row_2d(e_log2)];
        return 0;
    case VIDMM_TILING_D3D_STD_64K:
        *t = is3d ? &d3d_3d_64k[row_3d(e_log2)] : &d3d_2d_64k[row_2d(e_log2)];
        return 0;
    case VIDMM_TILING_AMD_GFX10:
        switch (s->layout.amd_swizzle_mode) {
        case AMD_SW_4KB_S:
            *t = is3d ? &gfx10_3d_4k[row_3d(e_log2)] : &d3d_2d_4k[row_2d(e_log2)];
            return 0;
        case AMD_SW_64KB_S:
            *t = is3d ? &gfx10_3d_64k[row_3d(e_log2)] : &d3d_2d_64k[row_2d(e_log2)];
            return 0;
        case AMD_SW_64KB_R_X:
            /* 5.4 pins the 2D 32 bpp equation of one configuration only. */
            if (e_log2 != 2 || is3d)
                return VIDMM_E_UNSUPPORTED;
            *t = &gfx10_64k_r_x_32bpp;
            return 0;
        default:
            break;
        }
        break;
    default:
        break;
    }
    return VIDMM_E_INVALID_ARG;
}

/* setup() validates 's' for its tiling and computes the geometry. The rules, beyond the
 * engine's common ones:
 *   - fields the tiling does not use are 0 (INVALID_ARG);
 *   - D3D and AMD: elements of 1, 2, 4, 8 or 16 bytes (the table rows of 5.2; INVALID_ARG);
 *     depth > 1 is a 3D texture (D3D / GFX9 tables for D3D, GFX10 tables for AMD);
 *   - AMD: amd_swizzle_mode 5, 9 or 27; 0 or >= 32 is not an addrlib mode (INVALID_ARG), any
 *     other addrlib mode is not implemented (UNSUPPORTED); 27 only for 2D 32 bpp (UNSUPPORTED);
 *   - mip chains only for AMD 2D (5.6), at any base size: each mip is laid out (pitch, height,
 *     which mips go to the tail) with addrlib's rounded-up extent (layout_dim()), while the
 *     bytes copied are the API's max(1, W >> m) extent (swizzle.h, 1.4), which fits inside it.
 *     D3D mip packing and 3D mip chains are not covered (UNSUPPORTED);
 *   - EQUATION: a single mip (UNSUPPORTED otherwise); depth > 1 needs a thick equation
 *     (INVALID_ARG); a thick equation with array layers is not a layout 5.5 defines
 *     (UNSUPPORTED); the equation must map each block one to one (analyse()).
 * Every size of the surface fits in 64 bits (INVALID_ARG otherwise). */
static int setup(const struct vidmm_swz_surface *s, struct geo *g)
{
    const enum vidmm_tiling tiling = s->layout.tiling;
    int err;

    memset(g, 0, sizeof(*g));
    if (!unused_fields_clear(s))
        return VIDMM_E_INVALID_ARG;

    if (tiling == VIDMM_TILING_EQUATION) {
        if ((err = load_user(&s->eq, &g->eq)) < 0)
            return err;
        if (s->depth > 1 && !g->eq.thick)
            return VIDMM_E_INVALID_ARG;
        if (g->eq.thick && s->layers > 1)
            return VIDMM_E_UNSUPPORTED;
        if (s->mips > 1)
            return VIDMM_E_UNSUPPORTED;
    } else if (tiling == VIDMM_TILING_D3D_STD_4K || tiling == VIDMM_TILING_D3D_STD_64K ||
               tiling == VIDMM_TILING_AMD_GFX10) {
        const struct eq_table *t;
        if (tiling == VIDMM_TILING_AMD_GFX10) {
            uint32_t mode = s->layout.amd_swizzle_mode;
            if (mode == 0 || mode >= AMD_SW_MODE_LIMIT)
                return VIDMM_E_INVALID_ARG;
            if (mode != AMD_SW_4KB_S && mode != AMD_SW_64KB_S && mode != AMD_SW_64KB_R_X)
                return VIDMM_E_UNSUPPORTED;
        }
        if (!is_pow2(s->elem))
            return VIDMM_E_INVALID_ARG;
        if ((err = pick_table(s, log2_u32(s->elem), &t)) < 0)
            return err;
        if (s->mips > 1) {
            if (tiling != VIDMM_TILING_AMD_GFX10 || s->depth > 1)
                return VIDMM_E_UNSUPPORTED;
        }
        load_table(t, &g->eq);
    } else {
        return VIDMM_E_INVALID_ARG;
    }
    if ((err = analyse(&g->eq, s->elem)) < 0)
        return err;

    g->e_log2 = log2_u32(s->elem);
    g->blk_w = 1u << (g->eq.k[CH_X] - g->e_log2);
    g->blk_h = 1u << g->eq.k[CH_Y];
    g->blk_d = 1u << g->eq.k[CH_Z];
    g->first = s->mips;

    if (g->eq.thick) {
        /* 5.5, 3D: slabs of blk_d slices, each slab pitch * height * blk_d elements. */
        uint64_t pitch, height, slice, slices = ((uint64_t)s->depth + g->blk_d - 1) / g->blk_d * g->blk_d;
        if (!mip_extent(s, g, 0, &pitch, &height, &slice) || !mul_ok(slice, slices, &g->chain))
            return VIDMM_E_INVALID_ARG;
        return 0;
    }

    /* 5.6 step 1: which mips go to the tail (mip chains only: a single-mip surface has none,
     * as addrlib reports firstMipInTail = 1 for it, 1.3). addrlib tests its own extents
     * (Gfx10Lib::ComputeSurfaceInfoMacroTiled: GetMipSize, then IsInMipTail), so an NPOT mip
     * whose copied extent would fit may still lie outside the tail. */
    const uint64_t block = (uint64_t)1 << g->eq.n;
    if (s->mips > 1) {
        g->max_in_tail = g->eq.n - 4;
        for (uint32_t m = 0; m < s->mips; m++) {
            if (layout_dim(s->width, s->bw, m) <= g->blk_w / 2 && layout_dim(s->height, s->bh, m) <= g->blk_h &&
                s->mips - m <= g->max_in_tail) {
                g->first = m;
                break;
            }
        }
    }
    /* 5.6 step 2: the chain of one layer. */
    g->chain = g->first < s->mips ? block : 0;
    for (uint32_t m = 0; m < g->first; m++) {
        uint64_t pitch, height, bytes;
        if (!mip_extent(s, g, m, &pitch, &height, &bytes) || !add_ok(g->chain, bytes, &g->chain))
            return VIDMM_E_INVALID_ARG;
    }
    uint64_t total;
    return mul_ok(g->chain, s->layers, &total) ? 0 : VIDMM_E_INVALID_ARG;
}

/* ---------------------------------------------------------------------------------------------
 * Addressing. resolve() stores the compiled equation in the mip's p[] / q[]:
 *   p[P_BASE]    byte offset of the subresource: layer * chain + mip offset (2D), 0 (3D); for
 *                a tail mip, the tail block
 *   p[P_SLAB]    bytes per slab of blk_d slices (3D)
 *   p[P_BROW]    bytes per row of blocks: pitch / blk_w blocks of 2^n bytes
 *   p[P_OX]      the tail origin's x, in bytes (5.6 step 4); 0 outside the tail
 *   p[P_ENT..]   the nonzero contributions of x, then y, then (3D) z coordinate bits, two per
 *                word: contribution in bits 0..19, coordinate bit number in bits 24..28
 *   q[]          see Q_*
 * ------------------------------------------------------------------------------------------- */

enum { P_BASE, P_SLAB, P_BROW, P_OX, P_ENT };
#define MAX_ENT ((16 - P_ENT) * 2)
enum {
    Q_N,        /* log2 block bytes */
    Q_KX,       /* block bits of x (bytes), y, z */
    Q_KY,
    Q_KZ,
    Q_NX,       /* number of x, y, z entries in p[P_ENT..] */
    Q_NY,
    Q_NZ,
    Q_OY,       /* the tail origin's y */
    Q_ZCONST,   /* 2D: the layer's contribution (its bits feed z, 5.5) */
    Q_WALK      /* 1: more bits than entries fit; addr() evaluates s->eq term by term */
};

static inline uint32_t ent(const struct vidmm_swz_mip *m, uint32_t i)
{
    return (uint32_t)(m->p[P_ENT + (i >> 1)] >> ((i & 1u) * 32));
}

/* walk_eq() evaluates the caller's equation term by term (EQUATION only; the rare equation
 * whose terms read more coordinate bits than p[] holds). */
static uint32_t walk_eq(const struct vidmm_equation *e, uint64_t xb, uint64_t y, uint64_t z)
{
    uint32_t r = 0;
    for (uint32_t i = 0; i < e->bits; i++) {
        uint32_t b = 0;
        for (uint32_t k = 0; k < VIDMM_EQ_MAX_TERMS; k++) {
            const struct vidmm_eq_term *t = &e->term[i][k];
            uint64_t v = t->channel == VIDMM_EQ_X ? xb : t->channel == VIDMM_EQ_Y ? y : z;
            if (t->channel != VIDMM_EQ_NONE)
                b ^= (uint32_t)(v >> t->bit) & 1u;
        }
        r |= b << i;
    }
    return r;
}

/* eq_addr() is 5.5 / 5.6 step 5 / 5.7 with pipeBankXor 0: the block's offset plus the equation
 * of the full coordinates, shifted by the tail origin. */
static uint64_t eq_addr(const struct vidmm_swz_mip *m, uint64_t xb, uint32_t y, uint32_t z)
{
    const uint64_t xe = xb + m->p[P_OX];
    const uint32_t ye = y + m->q[Q_OY];
    const uint32_t nx = m->q[Q_NX], nxy = nx + m->q[Q_NY], nall = nxy + m->q[Q_NZ];
    uint32_t eq = m->q[Q_ZCONST];

    if (VIDMM_UNLIKELY(m->q[Q_WALK] != 0)) {
        eq = walk_eq(&m->s->eq, xe, ye, m->s->eq.thick ? z : m->layer);
    } else {
        uint32_t i = 0;
        for (; i < nx; i++) {
            uint32_t e = ent(m, i);
            eq ^= (e & 0xfffffu) & (0u - ((uint32_t)(xe >> (e >> 24)) & 1u));
        }
        for (; i < nxy; i++) {
            uint32_t e = ent(m, i);
            eq ^= (e & 0xfffffu) & (0u - ((ye >> (e >> 24)) & 1u));
        }
        for (; i < nall; i++) {
            uint32_t e = ent(m, i);
            eq ^= (e & 0xfffffu) & (0u - ((z >> (e >> 24)) & 1u));
        }
    }
    return m->p[P_BASE] + (uint64_t)(z >> m->q[Q_KZ]) * m->p[P_SLAB] + (uint64_t)(ye >> m->q[Q_KY]) * m->p[P_BROW] +
           ((xe >> m->q[Q_KX]) << m->q[Q_N]) + eq;
}

/* eq_tile_base() is the block part of eq_addr() for the engine's tile walk (the tile is the
 * block; a tail mip lies inside one block, so its tx and ty are 0). */
static uint64_t eq_tile_base(const struct vidmm_swz_mip *m, uint64_t tx, uint32_t ty, uint32_t tz)
{
    return m->p[P_BASE] + (uint64_t)tz * m->p[P_SLAB] + (uint64_t)ty * m->p[P_BROW] + (tx << m->q[Q_N]);
}

/* fill_tiles() describes the subresource to the engine's tile walk (swizzle_internal.h) when
 * the equation reads only bits inside the block and the tables are large enough. The tables
 * hold the equation of the origin-shifted coordinates, so tail mips walk the same way. */
static void fill_tiles(struct vidmm_swz_mip *m, const struct geo *g, uint64_t ox_bytes, uint32_t oy,
                       uint32_t zconst)
{
    struct vidmm_swz_tiles *t = &m->tiles;
    const struct eqc *c = &g->eq;

    if (c->outside || c->k[CH_X] - m->run_log2 > 6 || c->k[CH_Y] > 8 || c->k[CH_Z] > 5)
        return;  /* VIDMM_SWZ_MAX_XRUNS 64, _ROWS 256, _SLICES 32 */
    t->tw_log2 = c->k[CH_X];
    t->th_log2 = c->k[CH_Y];
    t->td_log2 = c->k[CH_Z];
    t->run_log2 = m->run_log2;
    for (uint32_t u = 0; u < 1u << (t->tw_log2 - t->run_log2); u++)
        t->xo[u] = eval_axis(c->contrib[CH_X], ((uint64_t)u << t->run_log2) + ox_bytes);
    for (uint32_t v = 0; v < 1u << t->th_log2; v++)
        t->yo[v] = eval_axis(c->contrib[CH_Y], (uint64_t)v + oy);
    for (uint32_t w = 0; w < 1u << t->td_log2; w++)
        t->zo[w] = c->thick ? eval_axis(c->contrib[CH_Z], w) : zconst;
    t->tile_base = eq_tile_base;
}

/* Tail slot origin (5.6 step 4): slot j's nominal offset t_j, its bits 9, 11, ... and 8, 10, ...
 * packed into mipX and mipY, scaled by the 256-byte micro-block (16x16 elements for 1 byte,
 * 16x8, 8x8, 8x4, 4x4 for 16 bytes). */
static void tail_origin(uint32_t j, uint32_t e_log2, uint32_t *ox, uint32_t *oy)
{
    uint32_t tj = j <= 6 ? 256u * j : 16u << j, mx = 0, my = 0;
    for (uint32_t b = 0; b < 6; b++) {
        mx |= (tj >> (9 + 2 * b) & 1u) << b;
        my |= (tj >> (8 + 2 * b) & 1u) << b;
    }
    *ox = mx << ((9 - e_log2) / 2);
    *oy = my << ((8 - e_log2) / 2);
}

_Static_assert(sizeof(struct geo) <= sizeof(((struct vidmm_swz_surface *)0)->priv), "geo must fit in priv");

/* eq_check() runs setup() once per call and keeps the geometry in s->priv for eq_total() and
 * eq_resolve(): the equation analysis cost about 2 us and ran three times per call. */
static int eq_check(struct vidmm_swz_surface *s)
{
    struct geo g;
    int err = setup(s, &g);
    if (err == 0) {
        memcpy(s->priv, &g, sizeof(g));
        s->priv_valid = true;
    }
    return err;
}

/* geometry() returns the geometry check() computed (or computes it, should a caller skip
 * check(); the engine never does). */
static int geometry(const struct vidmm_swz_surface *s, struct geo *g)
{
    if (s->priv_valid) {
        memcpy(g, s->priv, sizeof(*g));
        return 0;
    }
    return setup(s, g);
}

static int eq_total(const struct vidmm_swz_surface *s, uint64_t *bytes)
{
    struct geo g;
    int err = geometry(s, &g);
    if (err < 0)
        return err;
    if (g.eq.thick)
        *bytes = g.chain;
    else
        *bytes = g.chain * s->layers;   /* checked in setup() */
    return 0;
}

static int eq_resolve(const struct vidmm_swz_surface *s, uint32_t mip, uint32_t layer, struct vidmm_swz_mip *m)
{
    struct geo g;
    uint64_t ox_bytes = 0, pitch, height, bytes;
    uint32_t ox = 0, oy = 0, zconst = 0;
    int err;

    if ((err = geometry(s, &g)) < 0)
        return err;
    if (mip >= s->mips || layer >= s->layers)
        return VIDMM_E_INVALID_ARG;
    const struct eqc *c = &g.eq;
    const uint64_t block = (uint64_t)1 << c->n;

    memset(m->p, 0, sizeof(m->p));
    memset(m->q, 0, sizeof(m->q));
    m->tiles.tile_base = NULL;
    m->block_height = 0;
    m->block_depth = 0;
    m->run_log2 = c->run_log2;

    if (!mip_extent(s, &g, mip < g.first ? mip : 0, &pitch, &height, &bytes))
        return VIDMM_E_INVALID_ARG;   /* setup() checked the same products */
    if (c->thick) {
        m->p[P_BASE] = 0;
        m->p[P_SLAB] = bytes * g.blk_d;
        m->span = g.chain;
    } else if (mip < g.first) {
        /* 5.6 step 3: the tail (if any) first, then the mips from the smallest up to mip 0. */
        uint64_t off = g.first < s->mips ? block : 0;
        for (uint32_t k = mip + 1; k < g.first; k++) {
            uint64_t pk, hk, bk;
            (void)mip_extent(s, &g, k, &pk, &hk, &bk);
            off += bk;
        }
        m->p[P_BASE] = g.chain * layer + off;
        m->span = bytes;
    } else {
        /* 5.6 steps 4-5: a tail mip lives at its slot's origin inside the tail block at the
         * start of the layer's chain. The largest tail mip takes the highest slot. m->w x m->h
         * is the copied extent, within addrlib's (layout_dim()), which fits its slot. */
        tail_origin(g.max_in_tail - 1 - (mip - g.first), g.e_log2, &ox, &oy);
        if (ox + m->w > g.blk_w || oy + m->h > g.blk_h)
            return VIDMM_E_UNSUPPORTED;   /* cannot happen for the modes above */
        ox_bytes = (uint64_t)ox << g.e_log2;
        m->p[P_BASE] = g.chain * layer;
        m->span = block;
        if (ctz64(ox_bytes) < m->run_log2)
            m->run_log2 = ctz64(ox_bytes);
    }
    m->base = m->p[P_BASE];
    m->p[P_BROW] = (pitch / g.blk_w) << c->n;
    m->p[P_OX] = ox_bytes;
    m->q[Q_N] = c->n;
    m->q[Q_KX] = c->k[CH_X];
    m->q[Q_KY] = c->k[CH_Y];
    m->q[Q_KZ] = c->k[CH_Z];   /* 0 in 2D: z is 0 there, the shift is harmless */
    m->q[Q_OY] = oy;
    if (!c->thick)
        zconst = eval_axis(c->contrib[CH_Z], layer);
    m->q[Q_ZCONST] = zconst;

    /* The entries: x, y, then (3D) z. */
    uint32_t n = 0;
    for (uint32_t ch = CH_X; ch <= (c->thick ? CH_Z : CH_Y); ch++) {
        uint32_t cnt = 0;
        for (uint32_t j = 0; j < COORD_BITS; j++) {
            if (c->contrib[ch][j] == 0)
                continue;
            if (n < MAX_ENT)
                m->p[P_ENT + n / 2] |= (uint64_t)(c->contrib[ch][j] | j << 24) << (n % 2 * 32);
            n++;
            cnt++;
        }
        m->q[Q_NX + ch - CH_X] = cnt;
    }
    if (n > MAX_ENT) {
        /* Only a caller's equation can read that many bits (the built-in ones read at most
         * 20); walk_eq() then reads it from the surface copy, which outlives 'm'. */
        if (s->layout.tiling != VIDMM_TILING_EQUATION)
            return VIDMM_E_UNSUPPORTED;
        m->q[Q_WALK] = 1;
    }
    m->addr = eq_addr;
    fill_tiles(m, &g, ox_bytes, oy, zconst);
    return 0;
}

const struct vidmm_swz_family vidmm_swz_equation = {
    .check = eq_check,
    .total = eq_total,
    .resolve = eq_resolve,
};
