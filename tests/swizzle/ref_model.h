/* SPDX-License-Identifier: MIT */
/* tests/swizzle/ref_model.h - an independent, deliberately slow model of the tiled layouts of
 * shared/spec/tiling.md: one address per byte, computed straight from the spec's formulas, to
 * check the library's sizes and copies against. It shares no code with lib/.
 *
 * What it models (anything else makes ref_prepare() fail, and the tests do not draw it):
 *   LINEAR        one subresource with any pitch; several subresources packed back to back
 *                 (layers, then mips), rows tight, slices pitch * height apart. The spec leaves
 *                 LINEAR surfaces open; this is the reading swizzle.h's LINEAR comment gives.
 *   BLOCK_LINEAR  sections 3.1-3.5: mips, layers with their alignment, 3D, BCn blocks.
 *   INTEL_X/Y/4   sections 4.1-4.4, one mip, one layer, one slice, bit-6 on X and Y.
 *   D3D_STD_4K/64K  section 5.2 (2D and the GFX9 3D tables), one mip, arrays.
 *   AMD_GFX10     modes 5 and 9 (2D: the standard tables; 3D: the GFX10 tables of 5.3, one
 *                 mip), 27 (32 bpp, 2D); 2D mip chains with the mip tail of 5.6 at any base
 *                 size, BCn too: each mip laid out with addrlib's rounded-up extent (lay_w x
 *                 lay_h), the linear side's rounded-down extent (w x h) copied into it.
 *   EQUATION      the caller's equation (5.5), when every coordinate bit below the block's top
 *                 bit of its channel is used: the block is 2^(top x bit + 1) bytes wide, etc.
 *   MORTON        section 6.1-6.3, 2D and 3D, any unit dividing the element, one mip, one
 *                 layer. Three ways of computing the index are exposed for the 6.4 self-tests. */
#ifndef VIDMM_TESTS_REF_MODEL_H
#define VIDMM_TESTS_REF_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vidmm/swizzle.h"

#define REF_MAX_MIPS 17

/* Everything that defines a surface: the two public descriptors, flattened. */
struct ref_surf {
    enum vidmm_tiling tiling;
    uint32_t flags, block_height, block_depth, pitch, unit, amd_mode;
    const struct vidmm_equation *eq;
    uint32_t width, height, depth;  /* pixels */
    uint32_t elem, bw, bh;          /* element bytes, compressed block in pixels */
    uint32_t mips, layers;
};

struct ref_mip {
    uint32_t w, h, d;               /* elements */
    uint64_t lin_off;               /* packed linear offset in layer 0 */
    uint64_t lin_size;
    uint64_t off;                   /* tiled offset inside one layer (or one AMD mip chain) */
    uint64_t size;                  /* tiled bytes of the mip (BLOCK_LINEAR, AMD non-tail mips) */
    uint32_t gob_bh, gob_bd;        /* BLOCK_LINEAR: block height and depth used */
    uint64_t row_pitch;             /* LINEAR: bytes between rows */
    uint32_t pitch_el;              /* equation families: width rounded to blocks, elements */
    uint32_t lay_w, lay_h;          /* AMD chains: the extent addrlib lays the mip out with,
                                       ceil(ceil(W / bw) / 2^m) (5.6), elements */
    bool in_tail;                   /* AMD: lives in the mip tail */
    uint32_t ox, oy;                /* AMD tail origin, elements */
};

/* One term of a parsed equation: channel 'x', 'y' or 'z' and a bit number. */
struct ref_eq {
    uint32_t nbits;
    uint8_t nterm[VIDMM_EQ_MAX_BITS];
    char ch[VIDMM_EQ_MAX_BITS][VIDMM_EQ_MAX_TERMS];
    uint8_t bit[VIDMM_EQ_MAX_BITS][VIDMM_EQ_MAX_TERMS];
};

struct ref_layout {
    struct ref_surf s;
    uint64_t tiled_size, linear_size;
    uint64_t layer_tiled;           /* tiled stride between layers */
    uint64_t layer_linear;          /* linear stride between layers */
    struct ref_mip mip[REF_MAX_MIPS];
    /* Intel */
    uint32_t tw, th;
    uint64_t pitch;
    /* equation families */
    struct ref_eq eq;
    bool thick;
    uint32_t blk_w, blk_h, blk_d;   /* elements */
    /* block-linear */
    uint32_t bh0, bd0;
    /* Morton */
    uint32_t unit, lw, lh, ld;
};

/* ref_prepare() fills '*L' for surface 's'; returns false when the model does not cover it. */
bool ref_prepare(struct ref_layout *L, const struct ref_surf *s);

/* ref_addr() is the byte of the tiled surface that holds byte column 'xb' of row 'y' of slice
 * 'z' of mip 'mip' of layer 'layer' (coordinates inside the mip, xb in bytes). */
uint64_t ref_addr(const struct ref_layout *L, uint32_t mip, uint32_t layer, uint64_t xb, uint32_t y, uint32_t z);

/* Where subresource (mip, layer) starts in the packed linear order. */
uint64_t ref_linear_offset(const struct ref_layout *L, uint32_t mip, uint32_t layer);

/* Copy the surface to and from its packed linear order through ref_addr() (whole surface). */
void ref_tile_surface(const struct ref_layout *L, unsigned char *tiled, const unsigned char *linear);
void ref_untile_surface(const struct ref_layout *L, const unsigned char *tiled, unsigned char *linear);

/* Spec helpers, exposed for tests that build descriptors. */
uint32_t ref_height_auto(uint32_t h);     /* 3.4 */
uint32_t ref_depth_auto(uint32_t d);      /* 3.4 */
uint32_t ref_ceil_log2(uint64_t v);
uint32_t ref_mip_dim(uint32_t pixels, uint32_t block, uint32_t mip);
/* The number of mips a chain of these extents can have (the largest extent down to 1). */
uint32_t ref_max_mips(uint32_t w, uint32_t h, uint32_t d);

/* Parse an equation written as in the spec, most significant bit first ("x5 y2 (x7^y6^z0)").
 * Returns false on a syntax error. */
bool ref_eq_parse(struct ref_eq *eq, const char *text);
uint64_t ref_eq_eval(const struct ref_eq *eq, uint64_t xb, uint64_t y, uint64_t z);

/* Morton indices of section 6.1, three ways: the pass-by-pass definition, the 2D closed form,
 * and (ref_morton_walk) the incremental walk of 6.2, which writes the index of every unit
 * (x, y) of a Wu x H surface to out[y * Wu + x]. */
uint64_t ref_morton_passes(uint64_t x, uint64_t y, uint64_t z, uint32_t lw, uint32_t lh, uint32_t ld);
uint64_t ref_morton_closed2d(uint64_t x, uint64_t y, uint32_t lw, uint32_t lh);
void ref_morton_walk(uint32_t wu, uint32_t h, uint64_t *out);

/* A one-line description of a surface for failure messages. */
const char *ref_describe(const struct ref_surf *s, char *buf, size_t cap);
const char *ref_tiling_name(enum vidmm_tiling t);

/* Fill the public descriptors from 's'. */
void ref_to_public(const struct ref_surf *s, struct vidmm_tile_layout *layout, struct vidmm_surface_desc *surface);

#endif /* VIDMM_TESTS_REF_MODEL_H */
