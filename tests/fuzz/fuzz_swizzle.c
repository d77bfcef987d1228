/* SPDX-License-Identifier: MIT */
/* tests/fuzz/fuzz_swizzle.c - fuzz target for the swizzle API: bytes become a layout, a surface,
 * a subresource, a box, pitches and a backend (bounded sizes); the size queries run, then a
 * swizzle and a deswizzle into buffers sized from what the library reported. Whatever the
 * input, nothing may crash, a refused call must leave both buffers untouched, and a copy that
 * succeeds must round-trip: the box comes back exactly and the bytes between rows and slices
 * of the linear buffer are never written. The same checks run on the whole-surface calls.
 *
 * Input layout (missing bytes read as 0; see corpus/swizzle/ for examples):
 *    0 tiling (mod 11: 10 is out of range)     1 flags            2 block height selector
 *    3 block depth selector                    4-5 pitch (LE)     6 swizzle unit
 *    7 AMD mode selector                       8-9 width (LE, mod 601)
 *   10-11 height (LE, mod 601)                 12 depth (mod 50)  13 element bytes (mod 18)
 *   14 compressed block selector               15 mips (mod 12)   16 layers (mod 8)
 *   17 mip   18 layer   19 box: 0 = NULL (whole mip), else the fields below
 *   20-21 x  22-23 y  24 z  25-26 width  27-28 height  29 depth   (LE; taken modulo the mip
 *   extent plus 2, so boxes just outside the mip come up too)
 *   30 row pitch slack   31 slice pitch slack   32 backend   33 operations (bit 0: the
 *   whole-surface calls too)   34 equation bits   35 equation thick
 *   36.. equation terms, 2 per address bit, 2 bytes each (channel, bit); the rest seeds the data. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vidmm/vidmm.h"
#include "vidmm/swizzle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Buffers larger than this are not allocated (the call is still made with the sizes). */
#define FUZZ_MAX_BYTES ((uint64_t)24 << 20)

struct producer {
    const uint8_t *p;
    size_t n;
};

static uint32_t take8(struct producer *d)
{
    if (d->n == 0)
        return 0;
    d->n--;
    return *d->p++;
}

static uint32_t take16(struct producer *d)
{
    uint32_t lo = take8(d);
    return lo | take8(d) << 8;
}

#define FUZZ_CHECK(cond, ...)                                     \
    do {                                                          \
        if (!(cond)) {                                            \
            fprintf(stderr, "fuzz_swizzle: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                         \
            fputc('\n', stderr);                                  \
            abort();                                              \
        }                                                         \
    } while (0)

static bool all_equal(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return false;
    return true;
}

/* A pattern from the input's tail, so that copies move recognisable bytes. */
static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = (unsigned char)s;
    }
}

static size_t box_bytes_needed(const struct vidmm_box *b, uint32_t elem, size_t row_pitch, size_t slice_pitch)
{
    return (b->depth - 1) * slice_pitch + (b->height - 1) * row_pitch + (size_t)b->width * elem;
}

static void box_copies(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surf, uint32_t mip,
                       uint32_t layer, const struct vidmm_box *box, const struct vidmm_box *resolved,
                       size_t row_pitch, size_t slice_pitch, size_t tiled_size, const struct vidmm_kernel_opts *o,
                       uint64_t seed, bool check_roundtrip)
{
    size_t row = (size_t)resolved->width * surf->element_bytes;
    size_t lin_size = box_bytes_needed(resolved, surf->element_bytes, row_pitch, slice_pitch);
    if (lin_size > FUZZ_MAX_BYTES)
        return;
    unsigned char *tiled = malloc(tiled_size ? tiled_size : 1);
    unsigned char *lin = malloc(lin_size ? lin_size : 1);
    unsigned char *back = malloc(lin_size ? lin_size : 1);
    FUZZ_CHECK(tiled && lin && back, "out of memory");
    memset(tiled, 0, tiled_size);
    fill(lin, lin_size, seed);
    int rc = vidmm_swizzle_ex(layout, surf, mip, layer, box, tiled, tiled_size, lin, lin_size, row_pitch,
                              slice_pitch, o);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0, "swizzle returned %d", rc);
        FUZZ_CHECK(all_equal(tiled, tiled_size, 0), "a refused swizzle (%d) wrote the tiled buffer", rc);
    }
    memset(back, 0xA5, lin_size);
    int rc2 = vidmm_deswizzle_ex(layout, surf, mip, layer, box, tiled, tiled_size, back, lin_size, row_pitch,
                                 slice_pitch, o);
    FUZZ_CHECK(rc2 == rc, "swizzle returned %d but deswizzle of the same arguments %d", rc, rc2);
    if (rc2 != 0) {
        FUZZ_CHECK(all_equal(back, lin_size, 0xA5), "a refused deswizzle (%d) wrote the linear buffer", rc2);
    } else {
        /* Rows of the box come back; the pitch gaps keep 0xA5. */
        for (uint32_t z = 0; z < resolved->depth; z++)
            for (uint32_t y = 0; y < resolved->height; y++) {
                size_t at = z * slice_pitch + y * row_pitch;
                if (check_roundtrip)
                    FUZZ_CHECK(memcmp(back + at, lin + at, row) == 0, "round trip differs in row %u of slice %u", y,
                               z);
                size_t gap_end = y + 1 < resolved->height ? at + row_pitch
                               : z + 1 < resolved->depth ? (z + 1) * slice_pitch : lin_size;
                FUZZ_CHECK(all_equal(back + at + row, gap_end - at - row, 0xA5),
                           "deswizzle wrote between rows (row %u of slice %u)", y, z);
            }
    }
    free(tiled);
    free(lin);
    free(back);
}

static void surface_copies(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surf,
                           uint64_t tiled_size, uint64_t lin_size, uint64_t seed, bool check_roundtrip)
{
    if (tiled_size > FUZZ_MAX_BYTES / 2 || lin_size > FUZZ_MAX_BYTES / 2)
        return;
    unsigned char *tiled = malloc(tiled_size ? tiled_size : 1);
    unsigned char *lin = malloc(lin_size ? lin_size : 1);
    unsigned char *back = malloc(lin_size ? lin_size : 1);
    FUZZ_CHECK(tiled && lin && back, "out of memory");
    memset(tiled, 0, tiled_size);
    fill(lin, lin_size, seed);
    int rc = vidmm_swizzle_surface(layout, surf, tiled, tiled_size, lin, lin_size);
    if (rc != 0)
        FUZZ_CHECK(all_equal(tiled, tiled_size, 0), "a refused vidmm_swizzle_surface (%d) wrote", rc);
    memset(back, 0xA5, lin_size);
    int rc2 = vidmm_deswizzle_surface(layout, surf, tiled, tiled_size, back, lin_size);
    FUZZ_CHECK(rc == rc2, "vidmm_swizzle_surface returned %d, vidmm_deswizzle_surface %d", rc, rc2);
    if (rc2 != 0)
        FUZZ_CHECK(all_equal(back, lin_size, 0xA5), "a refused vidmm_deswizzle_surface (%d) wrote", rc2);
    else if (check_roundtrip)
        FUZZ_CHECK(memcmp(back, lin, lin_size) == 0, "whole-surface round trip differs");
    free(tiled);
    free(lin);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t bh_sel[] = { 0, 1, 2, 4, 8, 16, 32, 3, 64 };
    static const uint32_t bd_sel[] = { 0, 1, 2, 4, 8, 16, 3, 32 };
    static const uint32_t amd_sel[] = { 0, 5, 9, 27, 6 };
    static const uint32_t blk_sel[] = { 1, 4, 2, 0, 17 };
    struct producer d = { data, size };

    struct vidmm_tile_layout layout = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_LINEAR);
    struct vidmm_surface_desc surf;
    struct vidmm_equation eq;
    memset(&surf, 0, sizeof(surf));
    memset(&eq, 0, sizeof(eq));
    surf.size = sizeof(surf);

    layout.tiling = (enum vidmm_tiling)(take8(&d) % 11);
    layout.flags = take8(&d) & 3;
    layout.block_height = bh_sel[take8(&d) % 9];
    layout.block_depth = bd_sel[take8(&d) % 8];
    layout.pitch = take16(&d);
    layout.swizzle_unit = take8(&d) % 18;
    layout.amd_swizzle_mode = amd_sel[take8(&d) % 5];
    surf.width = take16(&d) % 601;
    surf.height = take16(&d) % 601;
    surf.depth = take8(&d) % 50;
    surf.element_bytes = take8(&d) % 18;
    uint32_t b = take8(&d);
    surf.block_width = blk_sel[b % 5];
    surf.block_height = blk_sel[(b / 5) % 5];
    surf.mip_levels = take8(&d) % 12;
    surf.array_layers = take8(&d) % 8;
    uint32_t mip = take8(&d), layer = take8(&d);
    bool null_box = take8(&d) == 0;
    uint32_t bx = take16(&d), by = take16(&d), bz = take8(&d);
    uint32_t bw = take16(&d), bhh = take16(&d), bdd = take8(&d);
    uint32_t row_slack = take8(&d), slice_slack = take8(&d);
    uint32_t backend = take8(&d) % VIDMM_BACKEND_COUNT_;
    uint32_t ops = take8(&d);
    eq.bits = take8(&d) % 24;
    eq.thick = take8(&d) & 1;
    for (uint32_t i = 0; i < VIDMM_EQ_MAX_BITS; i++)
        for (uint32_t t = 0; t < 2; t++) {
            eq.term[i][t].channel = (uint8_t)(take8(&d) % 5);
            eq.term[i][t].bit = (uint8_t)(take8(&d) % 34);
        }
    if (layout.tiling == VIDMM_TILING_EQUATION)
        layout.equation = &eq;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    while (d.n)
        seed = (seed ^ take8(&d)) * 0x100000001B3ull;

    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = vidmm_backend_supported((enum vidmm_backend)backend) ? (enum vidmm_backend)backend
                                                                      : VIDMM_BACKEND_AUTO;

    uint64_t tiled_size = 0, lin_size = 0;
    int rt = vidmm_surface_tiled_size(&layout, &surf, &tiled_size);
    int rl = vidmm_surface_linear_size(&layout, &surf, &lin_size);
    FUZZ_CHECK(rt <= 0 && rl <= 0, "size queries returned %d / %d", rt, rl);
    struct vidmm_subresource_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    int rs = vidmm_surface_subresource(&layout, &surf, mip % 13, layer % 9, &info);
    FUZZ_CHECK(rs <= 0, "vidmm_surface_subresource returned %d", rs);
    if (rt != 0 || rl != 0 || tiled_size > FUZZ_MAX_BYTES)
        return 0;
    if (rs == 0) {
        FUZZ_CHECK(info.tiled_offset <= tiled_size && info.tiled_size <= tiled_size - info.tiled_offset,
                   "subresource span beyond the surface");
        FUZZ_CHECK(info.linear_offset + info.linear_size <= lin_size, "subresource beyond the linear size");
    }

    /* A caller equation need not be a bijection, so only its safety is checked. */
    bool roundtrip = layout.tiling != VIDMM_TILING_EQUATION;

    if (rs == 0 && surf.element_bytes > 0) {
        struct vidmm_box box;
        if (null_box) {
            box = (struct vidmm_box){ 0, 0, 0, info.width, info.height, info.depth };
        } else {
            box.x = bx % (info.width + 2);
            box.y = by % (info.height + 2);
            box.z = bz % (info.depth + 2);
            box.width = bw % (info.width + 2);
            box.height = bhh % (info.height + 2);
            box.depth = bdd % (info.depth + 2);
        }
        if (box.width > 0 && box.height > 0 && box.depth > 0) {
            size_t row = (size_t)box.width * surf.element_bytes;
            size_t row_pitch = row + row_slack;
            size_t slice_pitch = (box.height - 1) * row_pitch + row + slice_slack;
            box_copies(&layout, &surf, mip % 13, layer % 9, null_box ? NULL : &box, &box, row_pitch, slice_pitch,
                       (size_t)tiled_size, &o, seed, roundtrip);
        }
    }
    if (ops & 1)
        surface_copies(&layout, &surf, tiled_size, lin_size, seed, roundtrip);
    return 0;
}
