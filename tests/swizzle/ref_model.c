/* SPDX-License-Identifier: MIT */
/* tests/swizzle/ref_model.c - the layout model of ref_model.h: every formula transcribed from
 * shared/spec/tiling.md (section numbers in the comments), one byte address at a time. Speed
 * is not a goal; being obviously the spec is. */
#include "ref_model.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Small arithmetic helpers (conventions at the top of tiling.md).
 * ------------------------------------------------------------------------------------------- */
static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

static uint64_t round_up(uint64_t a, uint64_t b)
{
    return ceil_div(a, b) * b;
}

uint32_t ref_ceil_log2(uint64_t v)
{
    uint32_t n = 0;
    while (((uint64_t)1 << n) < v)
        n++;
    return n;
}

uint32_t ref_mip_dim(uint32_t pixels, uint32_t block, uint32_t mip)
{
    /* Header and 3.5 step 2: the shift is on pixels, max 1, then whole blocks. */
    uint32_t p = mip < 32 ? pixels >> mip : 0;
    if (p == 0)
        p = 1;
    return (uint32_t)ceil_div(p, block);
}

uint32_t ref_max_mips(uint32_t w, uint32_t h, uint32_t d)
{
    uint32_t big = w;
    if (h > big)
        big = h;
    if (d > big)
        big = d;
    uint32_t n = 1;
    while (big > 1) {
        big >>= 1;
        n++;
    }
    return n;
}

/* 3.4 */
uint32_t ref_height_auto(uint32_t h)
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

uint32_t ref_depth_auto(uint32_t d)
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

static uint32_t mip_bh(uint32_t h, uint32_t bh0)
{
    uint32_t bh = bh0;
    while (bh > 1 && h <= (bh / 2) * 8)
        bh /= 2;
    return bh;
}

static uint32_t mip_bd(uint32_t d, uint32_t bd0)
{
    uint32_t bd = bd0;
    while (bd > 1 && d <= bd / 2)
        bd /= 2;
    return bd;
}

/* ---------------------------------------------------------------------------------------------
 * Equations (2.1): text as in the spec, most significant bit first.
 * ------------------------------------------------------------------------------------------- */
static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static bool parse_term(const char **pp, char *ch, uint8_t *bit)
{
    const char *p = *pp;
    if (*p != 'x' && *p != 'y' && *p != 'z')
        return false;
    *ch = *p++;
    if (*p < '0' || *p > '9')
        return false;
    unsigned v = 0;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (unsigned)(*p++ - '0');
    if (v > 31)
        return false;
    *bit = (uint8_t)v;
    *pp = p;
    return true;
}

bool ref_eq_parse(struct ref_eq *eq, const char *text)
{
    /* Collect the address bits MSB first, then reverse them into eq->..[i] = b_i. */
    struct ref_eq tmp;
    memset(&tmp, 0, sizeof(tmp));
    memset(eq, 0, sizeof(*eq));
    const char *p = skip_space(text);
    uint32_t n = 0;
    while (*p) {
        if (n >= VIDMM_EQ_MAX_BITS)
            return false;
        if (*p == '(') {
            p++;
            for (;;) {
                p = skip_space(p);
                if (tmp.nterm[n] >= VIDMM_EQ_MAX_TERMS)
                    return false;
                if (!parse_term(&p, &tmp.ch[n][tmp.nterm[n]], &tmp.bit[n][tmp.nterm[n]]))
                    return false;
                tmp.nterm[n]++;
                p = skip_space(p);
                if (*p == '^') {
                    p++;
                    continue;
                }
                if (*p == ')') {
                    p++;
                    break;
                }
                return false;
            }
        } else {
            if (!parse_term(&p, &tmp.ch[n][0], &tmp.bit[n][0]))
                return false;
            tmp.nterm[n] = 1;
        }
        n++;
        p = skip_space(p);
    }
    eq->nbits = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t src = n - 1 - i;
        eq->nterm[i] = tmp.nterm[src];
        memcpy(eq->ch[i], tmp.ch[src], sizeof(eq->ch[i]));
        memcpy(eq->bit[i], tmp.bit[src], sizeof(eq->bit[i]));
    }
    return n > 0;
}

uint64_t ref_eq_eval(const struct ref_eq *eq, uint64_t xb, uint64_t y, uint64_t z)
{
    uint64_t a = 0;
    for (uint32_t i = 0; i < eq->nbits; i++) {
        uint64_t b = 0;
        for (uint32_t t = 0; t < eq->nterm[i]; t++) {
            uint64_t c = eq->ch[i][t] == 'x' ? xb : eq->ch[i][t] == 'y' ? y : z;
            b ^= (c >> eq->bit[i][t]) & 1;
        }
        a |= b << i;
    }
    return a;
}

/* 5.2: D3D standard swizzle, 2D (= AMD SW_*_S 2D), by element size. */
static const char *eq_std2d(bool k64, uint32_t e)
{
    if (k64) {
        switch (e) {
        case 1: return "x7 y7 x6 y6 x5 y5 x4 y4 y3 y2 y1 y0 x3 x2 x1 x0";
        case 2:
        case 4: return "x8 y6 x7 y5 x6 y4 x5 y3 x4 y2 y1 y0 x3 x2 x1 x0";
        case 8:
        case 16: return "x9 y5 x8 y4 x7 y3 x6 y2 x5 x4 y1 y0 x3 x2 x1 x0";
        }
    } else {
        switch (e) {
        case 1: return "x5 y5 x4 y4 y3 y2 y1 y0 x3 x2 x1 x0";
        case 2:
        case 4: return "x6 y4 x5 y3 x4 y2 y1 y0 x3 x2 x1 x0";
        case 8:
        case 16: return "x7 y3 x6 y2 x5 x4 y1 y0 x3 x2 x1 x0";
        }
    }
    return NULL;
}

/* 5.2: the D3D / GFX9 3D tables. */
static const char *eq_d3d3d(bool k64, uint32_t e)
{
    if (k64) {
        switch (e) {
        case 1:
        case 2: return "x5 y4 z4 x4 y3 z3 y2 z2 z1 z0 y1 y0 x3 x2 x1 x0";
        case 4: return "x6 y4 z3 x5 y3 z2 x4 y2 z1 z0 y1 y0 x3 x2 x1 x0";
        case 8:
        case 16: return "x7 y3 z3 x6 y2 z2 x5 x4 z1 z0 y1 y0 x3 x2 x1 x0";
        }
    } else {
        switch (e) {
        case 1:
        case 2: return "y3 z3 y2 z2 z1 z0 y1 y0 x3 x2 x1 x0";
        case 4: return "y3 z2 x4 y2 z1 z0 y1 y0 x3 x2 x1 x0";
        case 8:
        case 16: return "y2 z2 x5 x4 z1 z0 y1 y0 x3 x2 x1 x0";
        }
    }
    return NULL;
}

/* 5.3: the GFX10 3D tables. */
static const char *eq_gfx10_3d(bool k64, uint32_t e)
{
    if (k64) {
        switch (e) {
        case 1:
        case 2: return "x5 y4 z4 x4 y3 z3 x3 y2 z2 x2 y1 z1 y0 z0 x1 x0";
        case 4: return "x6 y4 z3 x5 y3 z2 x4 y2 z1 x3 y1 z0 y0 x2 x1 x0";
        case 8:
        case 16: return "x7 y3 z3 x6 y2 z2 x5 y1 z1 x4 y0 z0 x3 x2 x1 x0";
        }
    } else {
        switch (e) {
        case 1:
        case 2: return "y3 z3 x3 y2 z2 x2 y1 z1 y0 z0 x1 x0";
        case 4: return "y3 z2 x4 y2 z1 x3 y1 z0 y0 x2 x1 x0";
        case 8:
        case 16: return "y2 z2 x5 y1 z1 x4 y0 z0 x3 x2 x1 x0";
        }
    }
    return NULL;
}

/* 5.4: SW_64KB_R_X, Navi10, 32 bpp. */
static const char eq_rx_32[] = "x8 y6 x6 y3 (x7^y6^z0) (y5^x8^z1) (y4^x6^z2) (x5^y3^z3) x4 y2 y1 y0 x3 x2 x1 x0";

/* ---------------------------------------------------------------------------------------------
 * Morton (6.1, 6.2).
 * ------------------------------------------------------------------------------------------- */
uint64_t ref_morton_passes(uint64_t x, uint64_t y, uint64_t z, uint32_t lw, uint32_t lh, uint32_t ld)
{
    uint64_t idx = 0;
    uint32_t pos = 0, tx = 0, ty = 0, tz = 0;
    while (tx < lw || ty < lh || tz < ld) {
        if (tx < lw)
            idx |= ((x >> tx++) & 1) << pos++;
        if (ty < lh)
            idx |= ((y >> ty++) & 1) << pos++;
        if (tz < ld)
            idx |= ((z >> tz++) & 1) << pos++;
    }
    return idx;
}

uint64_t ref_morton_closed2d(uint64_t x, uint64_t y, uint32_t lw, uint32_t lh)
{
    uint32_t m = lw < lh ? lw : lh;
    uint64_t il = 0;
    for (uint32_t i = 0; i < m; i++) {
        il |= ((x >> i) & 1) << (2 * i);
        il |= ((y >> i) & 1) << (2 * i + 1);
    }
    return il | (((x >> m) | (y >> m)) << (2 * m));
}

void ref_morton_walk(uint32_t wu, uint32_t h, uint64_t *out)
{
    uint32_t lw = ref_ceil_log2(wu), lh = ref_ceil_log2(h);
    uint32_t m = lw < lh ? lw : lh;
    uint64_t low = ((uint64_t)1 << (2 * m)) - 1;
    uint64_t xm = (0x5555555555555555ull & low) | ~low; /* x bits of the interleave, and above */
    uint64_t ym = 0xAAAAAAAAAAAAAAAAull & low;
    uint64_t row_base = 0, yoff = 0;
    for (uint32_t y = 0; y < h; y++) {
        uint64_t xoff = 0;
        for (uint32_t x = 0; x < wu; x++) {
            out[(size_t)y * wu + x] = row_base | yoff | xoff;
            xoff = (xoff - xm) & xm;
        }
        yoff = (yoff - ym) & ym;
        if (yoff == 0)
            row_base += (uint64_t)1 << (2 * m);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Preparation per family.
 * ------------------------------------------------------------------------------------------- */
static void linear_side(struct ref_layout *L)
{
    const struct ref_surf *s = &L->s;
    uint64_t off = 0;
    for (uint32_t m = 0; m < s->mips; m++) {
        struct ref_mip *mp = &L->mip[m];
        mp->w = ref_mip_dim(s->width, s->bw, m);
        mp->h = ref_mip_dim(s->height, s->bh, m);
        mp->d = ref_mip_dim(s->depth, 1, m);
        mp->lin_off = off;
        mp->lin_size = (uint64_t)mp->w * mp->h * mp->d * s->elem;
        off += mp->lin_size;
    }
    L->layer_linear = off;
    L->linear_size = off * s->layers;
}

static bool prep_linear(struct ref_layout *L)
{
    const struct ref_surf *s = &L->s;
    if (s->mips == 1 && s->layers == 1) {
        struct ref_mip *m = &L->mip[0];
        uint64_t row = (uint64_t)m->w * s->elem;
        m->row_pitch = s->pitch ? s->pitch : row;
        if (m->row_pitch < row)
            return false;
        m->off = 0;
        L->layer_tiled = m->row_pitch * m->h * m->d;
        L->tiled_size = L->layer_tiled;
        return true;
    }
    if (s->pitch != 0)
        return false;
    for (uint32_t i = 0; i < s->mips; i++) {
        L->mip[i].row_pitch = (uint64_t)L->mip[i].w * s->elem;
        L->mip[i].off = L->mip[i].lin_off;
    }
    L->layer_tiled = L->layer_linear;
    L->tiled_size = L->linear_size;
    return true;
}

static bool prep_block_linear(struct ref_layout *L)
{
    const struct ref_surf *s = &L->s;
    if (s->unit || s->amd_mode || s->pitch || s->flags || s->eq)
        return false;
    if (s->depth > 1 && s->layers > 1)
        return false;
    /* 3.5 step 1; an explicit value is honoured for mip 0 as given (header: "GOBs per block for
     * mip 0"; the golden bl_mip_64x64_bc7_bh4 keeps 4 on a 16-row mip). */
    uint32_t h0 = ref_mip_dim(s->height, s->bh, 0);
    L->bh0 = s->block_height ? s->block_height : (s->depth == 1 ? ref_height_auto(h0) : 1);
    L->bd0 = s->block_depth ? s->block_depth : ref_depth_auto(s->depth);
    uint64_t off = 0;
    for (uint32_t m = 0; m < s->mips; m++) {
        struct ref_mip *mp = &L->mip[m];
        mp->gob_bh = m == 0 ? L->bh0 : mip_bh(mp->h, L->bh0);
        mp->gob_bd = m == 0 ? L->bd0 : mip_bd(mp->d, L->bd0);
        /* 3.3 mip_size: the depth term rounds to depth_auto(d). An explicit block depth is the
         * library's extension (3.5 always takes depth_auto(D)); one above depth_auto(d) is used
         * as given at mip 0, and then addresses whole slabs of it (3.3 offset: block_bytes =
         * 512 * bh * bd), so the depth pads to it - as the spec's "the two never disagree"
         * holds wherever the spec defines bd. (Found by fuzz_swizzle: a 2D surface with
         * block_depth 2 addressed past the model's size.) */
        uint64_t wg = ceil_div((uint64_t)mp->w * s->elem, 64);
        uint32_t dpad = ref_depth_auto(mp->d) > mp->gob_bd ? ref_depth_auto(mp->d) : mp->gob_bd;
        mp->size = wg * ceil_div(mp->h, 8ull * mp->gob_bh) * mp->gob_bh * round_up(mp->d, dpad) * 512;
        mp->off = off;
        off += mp->size;
    }
    if (s->layers > 1) {
        /* 3.5 step 4: the pixel height, not the height in blocks. */
        uint32_t g = L->bh0;
        while (g > 1 && s->height <= (g / 2) * 8)
            g /= 2;
        L->layer_tiled = round_up(off, 512ull * g);
    } else {
        L->layer_tiled = off;
    }
    L->tiled_size = L->layer_tiled * s->layers;
    return true;
}

static bool prep_intel(struct ref_layout *L)
{
    const struct ref_surf *s = &L->s;
    if (s->mips != 1 || s->layers != 1 || s->depth != 1 || s->bw != 1 || s->bh != 1)
        return false;
    if (s->block_height || s->block_depth || s->unit || s->amd_mode || s->eq)
        return false;
    if (s->flags & ~VIDMM_TILING_FLAG_BIT6)
        return false;
    switch (s->tiling) {
    case VIDMM_TILING_INTEL_X: L->tw = 512; L->th = 8; break;
    case VIDMM_TILING_INTEL_Y: L->tw = 128; L->th = 32; break;
    default:
        L->tw = 128;
        L->th = 32;
        if (s->flags & VIDMM_TILING_FLAG_BIT6)
            return false; /* 4.4: not defined for Tile4 */
        break;
    }
    uint64_t row = (uint64_t)s->width * s->elem;
    L->pitch = s->pitch ? s->pitch : round_up(row, L->tw);
    if (L->pitch < row || L->pitch % L->tw)
        return false;
    L->tiled_size = L->pitch * round_up(s->height, L->th); /* 4.2 */
    L->layer_tiled = L->tiled_size;
    return true;
}

/* The block of an equation: 2^(top bit + 1) per channel (5.1) for the built-in tables. For a
 * caller's equation ('first_terms'), whose XOR terms may name any coordinate bit, even above the
 * block (2.1 "Full coordinates"), the block bits are the first term of each address bit, as in
 * addrlib's ADDR_EQUATION (addr[] holds the block bit, xor1[] / xor2[] the modifiers; the
 * public header documents the same rule): the first terms of each channel must be exactly its
 * bits 0, 1, ... once each, and a 2D equation has no z first term. The model does not check
 * that the block is one to one: the tests draw only equations that are. */
static bool eq_block(struct ref_layout *L, bool first_terms)
{
    const struct ref_eq *eq = &L->eq;
    int top[3] = { -1, -1, -1 };
    uint32_t first[3] = { 0, 0, 0 };
    for (uint32_t i = 0; i < eq->nbits; i++)
        for (uint32_t t = 0; t < eq->nterm[i]; t++) {
            int c = eq->ch[i][t] - 'x';
            if (first_terms && t > 0)
                continue;
            if (first_terms) {
                if (first[c] >> eq->bit[i][t] & 1u)
                    return false;   /* the same block bit twice */
                first[c] |= 1u << eq->bit[i][t];
            }
            if (eq->bit[i][t] > top[c])
                top[c] = eq->bit[i][t];
        }
    for (int c = 0; c < 3; c++)
        if (top[c] >= VIDMM_EQ_MAX_BITS)
            return false;
    if (first_terms) {
        if (!L->thick && top[2] >= 0)
            return false;
        for (int c = 0; c < 3; c++)
            if (top[c] >= 0 && first[c] != ((1u << (top[c] + 1)) - 1))
                return false;
    }
    uint64_t wbytes = (uint64_t)1 << (top[0] + 1);
    if (top[0] < 0 || wbytes % L->s.elem)
        return false;
    L->blk_w = (uint32_t)(wbytes / L->s.elem);
    L->blk_h = top[1] >= 0 ? 1u << (top[1] + 1) : 1;
    L->blk_d = (L->thick && top[2] >= 0) ? 1u << (top[2] + 1) : 1;
    return (uint64_t)L->blk_w * L->s.elem * L->blk_h * L->blk_d == (uint64_t)1 << eq->nbits;
}

/* 5.6 step 4: the 256-byte micro-block shape. */
static bool micro_block(uint32_t e, uint32_t *w, uint32_t *h)
{
    switch (e) {
    case 1: *w = 16; *h = 16; return true;
    case 2: *w = 16; *h = 8; return true;
    case 4: *w = 8; *h = 8; return true;
    case 8: *w = 8; *h = 4; return true;
    case 16: *w = 4; *h = 4; return true;
    }
    return false;
}

static bool prep_equation(struct ref_layout *L)
{
    const struct ref_surf *s = &L->s;
    const char *text = NULL;
    bool amd = s->tiling == VIDMM_TILING_AMD_GFX10;
    if (s->block_height || s->block_depth || s->unit || s->flags || s->pitch)
        return false;
    if (s->depth > 1 && s->layers > 1)
        return false;
    L->thick = s->depth > 1;
    switch (s->tiling) {
    case VIDMM_TILING_D3D_STD_4K:
    case VIDMM_TILING_D3D_STD_64K: {
        bool k64 = s->tiling == VIDMM_TILING_D3D_STD_64K;
        if (s->amd_mode || s->eq || s->mips != 1)
            return false;
        text = L->thick ? eq_d3d3d(k64, s->elem) : eq_std2d(k64, s->elem);
        break;
    }
    case VIDMM_TILING_AMD_GFX10:
        if (s->eq)
            return false;
        if (s->amd_mode == 5 || s->amd_mode == 9) {
            bool k64 = s->amd_mode == 9;
            if (L->thick && s->mips != 1)
                return false;
            text = L->thick ? eq_gfx10_3d(k64, s->elem) : eq_std2d(k64, s->elem);
        } else if (s->amd_mode == 27) {
            if (s->elem != 4 || L->thick)
                return false;
            text = eq_rx_32;
        }
        break;
    case VIDMM_TILING_EQUATION: {
        if (s->amd_mode || s->eq == NULL || s->mips != 1)
            return false;
        const struct vidmm_equation *e = s->eq;
        if (e->bits < 4 || e->bits > VIDMM_EQ_MAX_BITS || e->thick != L->thick)
            return false;
        memset(&L->eq, 0, sizeof(L->eq));
        L->eq.nbits = e->bits;
        for (uint32_t i = 0; i < e->bits; i++)
            for (uint32_t t = 0; t < VIDMM_EQ_MAX_TERMS; t++) {
                uint8_t c = e->term[i][t].channel;
                if (c == VIDMM_EQ_NONE)
                    continue;
                if (c > VIDMM_EQ_Z || e->term[i][t].bit > 31)
                    return false;
                L->eq.ch[i][L->eq.nterm[i]] = (char)('x' + c - 1);
                L->eq.bit[i][L->eq.nterm[i]] = e->term[i][t].bit;
                L->eq.nterm[i]++;
            }
        if (!eq_block(L, true))
            return false;
        break;
    }
    default:
        return false;
    }
    if (s->tiling != VIDMM_TILING_EQUATION) {
        if (text == NULL || !ref_eq_parse(&L->eq, text) || !eq_block(L, false))
            return false;
    }
    uint64_t blk_bytes = (uint64_t)1 << L->eq.nbits;

    if (s->mips == 1) {
        /* 5.5 */
        struct ref_mip *m = &L->mip[0];
        m->pitch_el = (uint32_t)round_up(m->w, L->blk_w);
        uint64_t slice_bytes = (uint64_t)m->pitch_el * round_up(m->h, L->blk_h) * s->elem;
        m->off = 0;
        if (L->thick) {
            L->layer_tiled = slice_bytes * round_up(m->d, L->blk_d);
        } else {
            L->layer_tiled = slice_bytes;
        }
        L->tiled_size = L->layer_tiled * s->layers;
        return true;
    }

    /* 5.6, thin 2D mip chains, AMD only, any base size. addrlib lays mip m out with an extent of
     * its own, not the one copied: the base in elements, rounded up (src/core/addrlib2.cpp
     * Lib::ComputeSurfaceInfo -> ElemLib::AdjustSurfaceInfo: BCn width (w + 3) / 4), then
     * divided by 2^m rounding up (src/gfx10/gfx10addrlib.h Gfx10Lib::GetMipSize, ShiftCeil).
     * ComputeSurfaceInfoMacroTiled tests that extent against the tail and pads it to whole
     * blocks. The bytes copied are the linear side's mips (linear_side(): max(1, W >> m)
     * pixels, then whole compressed blocks), which are never wider or taller. */
    if (!amd || L->thick)
        return false;
    uint32_t bw256, bh256;
    if (!micro_block(s->elem, &bw256, &bh256))
        return false;
    uint64_t base_w = ceil_div(s->width, s->bw), base_h = ceil_div(s->height, s->bh);
    for (uint32_t m = 0; m < s->mips; m++) {
        struct ref_mip *mp = &L->mip[m];
        mp->lay_w = (uint32_t)ceil_div(base_w, (uint64_t)1 << m);
        mp->lay_h = (uint32_t)ceil_div(base_h, (uint64_t)1 << m);
    }
    uint32_t n = L->eq.nbits;
    uint32_t tail_w = L->blk_w / 2, tail_h = L->blk_h, max_in_tail = n - 4;
    uint32_t first = s->mips;
    for (uint32_t m = 0; m < s->mips; m++) {
        if (L->mip[m].lay_w <= tail_w && L->mip[m].lay_h <= tail_h && s->mips - m <= max_in_tail) {
            first = m;
            break;
        }
    }
    bool tail = first < s->mips;
    uint64_t chain = tail ? blk_bytes : 0;
    for (uint32_t m = 0; m < first; m++) {
        struct ref_mip *mp = &L->mip[m];
        mp->pitch_el = (uint32_t)round_up(mp->lay_w, L->blk_w);
        mp->size = (uint64_t)mp->pitch_el * round_up(mp->lay_h, L->blk_h) * s->elem;
        chain += mp->size;
    }
    /* Smallest first: the tail block, then mip first-1, ..., mip 0 last. */
    uint64_t off = tail ? blk_bytes : 0;
    for (uint32_t m = first; m-- > 0;) {
        L->mip[m].off = off;
        off += L->mip[m].size;
    }
    for (uint32_t m = first; m < s->mips; m++) {
        struct ref_mip *mp = &L->mip[m];
        uint32_t j = max_in_tail - 1 - (m - first);
        uint64_t t = j <= 6 ? 256ull * j : 16ull << j;
        uint32_t mx = 0, my = 0;
        for (uint32_t k = 0; k < 6; k++) {
            mx |= (uint32_t)((t >> (9 + 2 * k)) & 1) << k;
            my |= (uint32_t)((t >> (8 + 2 * k)) & 1) << k;
        }
        mp->in_tail = true;
        mp->ox = mx * bw256;
        mp->oy = my * bh256;
        mp->off = 0;
        mp->size = blk_bytes;
    }
    L->layer_tiled = chain;
    L->tiled_size = chain * s->layers;
    return true;
}

static bool prep_morton(struct ref_layout *L)
{
    const struct ref_surf *s = &L->s;
    if (s->mips != 1 || s->layers != 1 || s->bw != 1 || s->bh != 1)
        return false;
    if (s->block_height || s->block_depth || s->pitch || s->amd_mode || s->flags || s->eq)
        return false;
    L->unit = s->unit ? s->unit : s->elem;
    if (s->elem % L->unit)
        return false;
    uint64_t wu = (uint64_t)s->width * s->elem / L->unit;
    L->lw = ref_ceil_log2(wu);
    L->lh = ref_ceil_log2(s->height);
    L->ld = ref_ceil_log2(s->depth);
    if (L->lw + L->lh + L->ld > 40)
        return false;
    L->tiled_size = ((uint64_t)1 << (L->lw + L->lh + L->ld)) * L->unit; /* 6.2 */
    L->layer_tiled = L->tiled_size;
    return true;
}

bool ref_prepare(struct ref_layout *L, const struct ref_surf *s)
{
    memset(L, 0, sizeof(*L));
    L->s = *s;
    if (s->width == 0 || s->height == 0 || s->depth == 0 || s->elem == 0 || s->elem > 16 || s->bw == 0 ||
        s->bh == 0 || s->mips == 0 || s->layers == 0 || s->mips > REF_MAX_MIPS ||
        s->mips > ref_max_mips(s->width, s->height, s->depth))
        return false;
    linear_side(L);
    switch (s->tiling) {
    case VIDMM_TILING_LINEAR:
        if (s->block_height || s->block_depth || s->unit || s->amd_mode || s->flags || s->eq)
            return false;
        return prep_linear(L);
    case VIDMM_TILING_BLOCK_LINEAR: return prep_block_linear(L);
    case VIDMM_TILING_INTEL_X:
    case VIDMM_TILING_INTEL_Y:
    case VIDMM_TILING_INTEL_4: return prep_intel(L);
    case VIDMM_TILING_D3D_STD_4K:
    case VIDMM_TILING_D3D_STD_64K:
    case VIDMM_TILING_AMD_GFX10:
    case VIDMM_TILING_EQUATION: return prep_equation(L);
    case VIDMM_TILING_MORTON: return prep_morton(L);
    default: return false;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Addresses.
 * ------------------------------------------------------------------------------------------- */

/* 3.1 */
static uint64_t gob(uint64_t u, uint64_t v)
{
    return (u % 16) + 16 * (v % 2) + 32 * ((u / 16) % 2) + 64 * ((v / 2) % 4) + 256 * (u / 32);
}

/* 3.3 */
static uint64_t addr_block_linear(const struct ref_layout *L, const struct ref_mip *m, uint64_t xb, uint64_t y,
                                  uint64_t z)
{
    uint64_t bh = m->gob_bh, bd = m->gob_bd;
    uint64_t wg = ceil_div((uint64_t)m->w * L->s.elem, 64);
    uint64_t block_bytes = 512 * bh * bd;
    uint64_t block_row = wg * block_bytes;
    uint64_t slab = ceil_div(m->h, 8 * bh) * block_row;
    return m->off + (z / bd) * slab + (y / (8 * bh)) * block_row + (xb / 64) * block_bytes + (z % bd) * 512 * bh +
           ((y / 8) % bh) * 512 + gob(xb % 64, y % 8);
}

/* 4.1, 4.2, 4.4 */
static uint64_t addr_intel(const struct ref_layout *L, uint64_t xb, uint64_t y)
{
    uint64_t u = xb % L->tw, v = y % L->th, t;
    switch (L->s.tiling) {
    case VIDMM_TILING_INTEL_X: t = 512 * v + u; break;
    case VIDMM_TILING_INTEL_Y: t = (u % 16) + 16 * v + 512 * (u / 16); break;
    default:
        t = (u % 16) + 16 * (v % 4) + 64 * ((u / 16) % 4) + 256 * ((v / 4) % 2) + 512 * (u / 64) + 1024 * (v / 8);
        break;
    }
    if (L->s.flags & VIDMM_TILING_FLAG_BIT6) {
        uint64_t b6 = L->s.tiling == VIDMM_TILING_INTEL_X ? ((t >> 9) ^ (t >> 10)) & 1 : (t >> 9) & 1;
        t ^= b6 << 6;
    }
    return (y / L->th) * (L->pitch * L->th) + (xb / L->tw) * 4096 + t;
}

/* 5.5, 5.6 */
static uint64_t addr_equation(const struct ref_layout *L, const struct ref_mip *m, uint32_t layer, uint64_t xb,
                              uint64_t y, uint64_t z)
{
    uint32_t e = L->s.elem;
    uint64_t blk_bytes = (uint64_t)1 << L->eq.nbits;
    if (m->in_tail)
        return (uint64_t)layer * L->layer_tiled + ref_eq_eval(&L->eq, xb + (uint64_t)m->ox * e, y + m->oy, layer);
    uint64_t x = xb / e;
    uint64_t bi = (y / L->blk_h) * (m->pitch_el / L->blk_w) + x / L->blk_w;
    if (L->thick) {
        uint64_t slice_bytes = (uint64_t)m->pitch_el * round_up(m->h, L->blk_h) * e;
        return (z / L->blk_d) * (slice_bytes * L->blk_d) + bi * blk_bytes + ref_eq_eval(&L->eq, xb, y, z);
    }
    return (uint64_t)layer * L->layer_tiled + m->off + bi * blk_bytes + ref_eq_eval(&L->eq, xb, y, layer);
}

uint64_t ref_addr(const struct ref_layout *L, uint32_t mip, uint32_t layer, uint64_t xb, uint32_t y, uint32_t z)
{
    const struct ref_mip *m = &L->mip[mip];
    switch (L->s.tiling) {
    case VIDMM_TILING_LINEAR:
        return (uint64_t)layer * L->layer_tiled + m->off + ((uint64_t)z * m->h + y) * m->row_pitch + xb;
    case VIDMM_TILING_BLOCK_LINEAR:
        return (uint64_t)layer * L->layer_tiled + addr_block_linear(L, m, xb, y, z);
    case VIDMM_TILING_INTEL_X:
    case VIDMM_TILING_INTEL_Y:
    case VIDMM_TILING_INTEL_4: return addr_intel(L, xb, y);
    case VIDMM_TILING_MORTON:
        return ref_morton_passes(xb / L->unit, y, z, L->lw, L->lh, L->ld) * L->unit + xb % L->unit;
    default: return addr_equation(L, m, layer, xb, y, z);
    }
}

uint64_t ref_linear_offset(const struct ref_layout *L, uint32_t mip, uint32_t layer)
{
    return (uint64_t)layer * L->layer_linear + L->mip[mip].lin_off;
}

static void walk_surface(const struct ref_layout *L, unsigned char *tiled, unsigned char *linear, bool to_tiled)
{
    for (uint32_t l = 0; l < L->s.layers; l++)
        for (uint32_t m = 0; m < L->s.mips; m++) {
            const struct ref_mip *mp = &L->mip[m];
            uint64_t row = (uint64_t)mp->w * L->s.elem;
            unsigned char *lin = linear + ref_linear_offset(L, m, l);
            for (uint32_t z = 0; z < mp->d; z++)
                for (uint32_t y = 0; y < mp->h; y++)
                    for (uint64_t xb = 0; xb < row; xb++) {
                        uint64_t a = ref_addr(L, m, l, xb, y, z);
                        uint64_t li = ((uint64_t)z * mp->h + y) * row + xb;
                        if (to_tiled)
                            tiled[a] = lin[li];
                        else
                            lin[li] = tiled[a];
                    }
        }
}

void ref_tile_surface(const struct ref_layout *L, unsigned char *tiled, const unsigned char *linear)
{
    walk_surface(L, tiled, (unsigned char *)(uintptr_t)linear, true);
}

void ref_untile_surface(const struct ref_layout *L, const unsigned char *tiled, unsigned char *linear)
{
    walk_surface(L, (unsigned char *)(uintptr_t)tiled, linear, false);
}

/* ---------------------------------------------------------------------------------------------
 * Descriptions and descriptors.
 * ------------------------------------------------------------------------------------------- */
const char *ref_tiling_name(enum vidmm_tiling t)
{
    switch (t) {
    case VIDMM_TILING_LINEAR: return "LINEAR";
    case VIDMM_TILING_BLOCK_LINEAR: return "BLOCK_LINEAR";
    case VIDMM_TILING_INTEL_X: return "INTEL_X";
    case VIDMM_TILING_INTEL_Y: return "INTEL_Y";
    case VIDMM_TILING_INTEL_4: return "INTEL_4";
    case VIDMM_TILING_D3D_STD_4K: return "D3D_STD_4K";
    case VIDMM_TILING_D3D_STD_64K: return "D3D_STD_64K";
    case VIDMM_TILING_AMD_GFX10: return "AMD_GFX10";
    case VIDMM_TILING_EQUATION: return "EQUATION";
    case VIDMM_TILING_MORTON: return "MORTON";
    default: return "?";
    }
}

const char *ref_describe(const struct ref_surf *s, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "%s %ux%ux%u E=%u block=%ux%u mips=%u layers=%u bh=%u bd=%u pitch=%u unit=%u amd_mode=%u flags=%#x",
             ref_tiling_name(s->tiling), s->width, s->height, s->depth, s->elem, s->bw, s->bh, s->mips, s->layers,
             s->block_height, s->block_depth, s->pitch, s->unit, s->amd_mode, s->flags);
    return buf;
}

void ref_to_public(const struct ref_surf *s, struct vidmm_tile_layout *layout, struct vidmm_surface_desc *surface)
{
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(s->tiling);
    l.flags = s->flags;
    l.block_height = s->block_height;
    l.block_depth = s->block_depth;
    l.pitch = s->pitch;
    l.swizzle_unit = s->unit;
    l.amd_swizzle_mode = s->amd_mode;
    l.equation = s->eq;
    *layout = l;
    memset(surface, 0, sizeof(*surface));
    surface->size = sizeof(*surface);
    surface->width = s->width;
    surface->height = s->height;
    surface->depth = s->depth;
    surface->element_bytes = s->elem;
    surface->block_width = s->bw;
    surface->block_height = s->bh;
    surface->mip_levels = s->mips;
    surface->array_layers = s->layers;
}
