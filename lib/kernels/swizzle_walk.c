/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_walk.c - the walks that move a box's bytes between a tiled surface and a
 * linear buffer: the reference walk, row by row and run by run through the family's address
 * function (tiling.md section 8), and the tile-table walks that hand whole runs, pairs, quads,
 * lines and strips to the backend's kernels (kernel_ops.h), with the choice between them and
 * of the store policy. */
#include <string.h>
#include "arch/arch.h"
#include "common/internal.h"
#include "kernels/kernel_ops.h"
#include "kernels/swizzle_internal.h"

enum dir { TILE, UNTILE };

/* copy_box() is the reference walk: every row of the box, split at multiples of the family's
 * run size, each run mapped through addr(). Arguments are valid (checked by the callers). */
static void copy_box(const struct vidmm_swz_mip *m, const struct vidmm_box *b, unsigned char *tiled,
                     unsigned char *linear, size_t row_pitch, size_t slice_pitch, enum dir dir)
{
    const uint64_t run = 1ull << m->run_log2;
    const uint64_t x0 = (uint64_t)b->x * m->elem, x1 = x0 + (uint64_t)b->width * m->elem;

    if (((x0 ^ (x1 - 1)) >> m->run_log2) == 0) {
        /* The box's rows each lie inside one run (pitch-linear, Intel X boxes within 512 bytes):
         * one address and one move per row. */
        const size_t n = (size_t)(x1 - x0);
        for (uint32_t k = 0; k < b->depth; k++)
            for (uint32_t r = 0; r < b->height; r++) {
                unsigned char *lrow = linear + k * slice_pitch + r * row_pitch;
                unsigned char *t = tiled + m->addr(m, x0, b->y + r, b->z + k);
                if (dir == TILE)
                    memcpy(t, lrow, n);
                else
                    memcpy(lrow, t, n);
            }
        return;
    }
    for (uint32_t k = 0; k < b->depth; k++) {
        for (uint32_t r = 0; r < b->height; r++) {
            unsigned char *lrow = linear + k * slice_pitch + r * row_pitch;
            uint32_t y = b->y + r, z = b->z + k;
            for (uint64_t xb = x0; xb < x1;) {
                uint64_t end = (xb | (run - 1)) + 1;
                if (end > x1)
                    end = x1;
                unsigned char *t = tiled + m->addr(m, xb, y, z);
                if (dir == TILE)
                    memcpy(t, lrow + (xb - x0), end - xb);
                else
                    memcpy(lrow + (xb - x0), t, end - xb);
                xb = end;
            }
        }
    }
}

/* tile_runs() moves rows [0, nrows) x runs [0, ncols) of 'run' bytes of one tile between 'tb'
 * (the tile) and 'lin' (the linear byte of the first run). Forced inline and called with a
 * constant 'run' (and, for the common whole-tile shapes, constant ncols and nrows), so that the
 * compiler turns each run into one fixed-size move whose offset is one table load and one XOR,
 * and unrolls the run loop; a variable-length memcpy() per run cost several times more. */
static inline __attribute__((always_inline)) void tile_runs(unsigned char *tb, unsigned char *lin, size_t row_pitch,
                                                            const uint32_t *xo, const uint32_t *yo, uint32_t zoff,
                                                            unsigned ncols, unsigned nrows, unsigned run,
                                                            enum dir dir)
{
    for (unsigned r = 0; r < nrows; r++) {
        const uint32_t yoff = yo[r] ^ zoff;
        unsigned char *lrow = lin + r * row_pitch;
        for (unsigned c = 0; c < ncols; c++) {
            unsigned char *tp = tb + (xo[c] ^ yoff);
            if (dir == TILE)
                memcpy(tp, lrow + run * c, run);
            else
                memcpy(lrow + run * c, tp, run);
        }
    }
}

/* pair_runs() serves layouts whose address bit right above an 8-byte run is y0 (Morton with
 * 4-byte units: x0 is inside the run, then y0, then x1...): runs c of rows r and r + 1 (r even)
 * form one contiguous 16-byte granule, so two rows move together in 16-byte stores instead of
 * 8-byte ones. Needs yo[r + 1] == yo[r] ^ 8 and bit 3 clear in yo[r] for each pair, and no x
 * entry touching bit 3 (runs_aligned() checks them). */
static inline __attribute__((always_inline)) void pair_runs(unsigned char *tb, unsigned char *lin,
                                                            size_t row_pitch, const uint32_t *xo,
                                                            const uint32_t *yo, uint32_t zoff, unsigned ncols,
                                                            unsigned nrows, enum dir dir)
{
    for (unsigned r = 0; r < nrows; r += 2) {
        const uint32_t yoff = yo[r] ^ zoff;
        unsigned char *l0 = lin + r * row_pitch, *l1 = l0 + row_pitch;
        for (unsigned c = 0; c < ncols; c++) {
            unsigned char *tp = tb + (xo[c] ^ yoff);
            unsigned char g[16];
            if (dir == TILE) {
                memcpy(g, l0 + 8 * c, 8);
                memcpy(g + 8, l1 + 8 * c, 8);
                memcpy(tp, g, 16);
            } else {
                memcpy(g, tp, 16);
                memcpy(l0 + 8 * c, g, 8);
                memcpy(l1 + 8 * c, g + 8, 8);
            }
        }
    }
}

/* long_runs() is runs_aligned() for runs of 64 bytes to 4 KiB (Intel X's 512-byte tile rows,
 * 64 bytes with the bit-6 swizzle, an equation's long runs): one call of the backend's
 * whole-vector mover (kernel_ops.h swz_runs64). A C library memcpy() call per 512-byte row held
 * Intel X whole surfaces at 0.85-0.92x memcpy (issue 14); fixed 64-byte moves inlined here
 * (16-byte vectors) reached 1.04-1.08x at 4 MiB but cost 14% more instructions than the
 * library's 32-byte loop (Callgrind). Out of line: inside runs_aligned() it cost the other
 * layouts' small boxes 1% more instructions. */
static __attribute__((noinline)) void long_runs(const struct vidmm_swz_tiles *t, unsigned char *tb,
                                                unsigned char *lin, size_t row_pitch, uint32_t zoff,
                                                const uint32_t *xo, unsigned ncols, const uint32_t *yo,
                                                unsigned nrows, enum dir dir, const struct vidmm_kernel_ops *ops)
{
    const unsigned run = 1u << t->run_log2;
    if (ops != NULL && ops->swz_runs64 != NULL) {
        if (dir == TILE)
            ops->swz_runs64(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, run);
        else
            ops->unswz_runs64(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, run);
        return;
    }
    for (unsigned r = 0; r < nrows; r++) {
        const uint32_t yoff = yo[r] ^ zoff;
        unsigned char *lrow = lin + r * row_pitch;
        for (unsigned c = 0; c < ncols; c++) {
            unsigned char *tp = tb + (xo[c] ^ yoff), *lp = lrow + (size_t)run * c;
            for (unsigned k = 0; k < run; k += 64) {
                if (dir == TILE)
                    memcpy(tp + k, lp + k, 64);
                else
                    memcpy(lp + k, tp + k, 64);
            }
        }
    }
}

/* runs_aligned() copies a run-aligned part of a tile: columns [0, ncols) from table index
 * 'col0', rows [0, nrows) from tile row 'row0'. Constant run sizes for 4, 8 and 16 bytes; the
 * common whole-tile shapes (listed in the switch) with constant trip counts as well. */
static void runs_aligned(const struct vidmm_swz_tiles *t, unsigned char *tb, unsigned char *lin, size_t row_pitch,
                         uint32_t zoff, const uint32_t *xo, unsigned col0, unsigned ncols, unsigned row0,
                         unsigned nrows, enum dir dir, const struct vidmm_kernel_ops *ops)
{
    const uint32_t *yo = t->yo + row0;
    const bool whole = xo == t->xo && row0 == 0 && ncols == 1u << (t->tw_log2 - t->run_log2) &&
                       nrows == 1u << t->th_log2;
    if (t->pair16 && ops != NULL && ops->swz_pairs16 != NULL && (zoff & 16) == 0 && nrows >= 2) {
        /* The backend's row-pair kernel; an odd first row (a box starting on an odd row) and an
         * odd last row move alone. */
        unsigned skip = row0 % 2, pairs = (nrows - skip) / 2;
        if (skip)
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, 1, 16, dir);
        unsigned char *l2 = lin + skip * row_pitch;
        if (dir == TILE)
            ops->swz_pairs16(tb, l2, row_pitch, xo, yo + skip, zoff, ncols, pairs);
        else
            ops->unswz_pairs16(tb, l2, row_pitch, xo, yo + skip, zoff, ncols, pairs);
        if (skip + 2 * pairs < nrows)
            tile_runs(tb, lin + (nrows - 1) * row_pitch, row_pitch, xo, yo + nrows - 1, zoff, ncols, 1, 16, dir);
        return;
    }
    if (t->quad8 && ops != NULL && ops->swz_quads8 != NULL && (zoff & 24) == 0 && nrows >= 2) {
        /* The backend's quad kernel on the even-aligned row pairs and column pairs; an odd first
         * row or last row moves alone, an odd first column as 16-byte granules. */
        unsigned skip = row0 % 2, pairs = (nrows - skip) / 2, cskip = col0 % 2;
        unsigned char *l2 = lin + skip * row_pitch;
        if (skip)
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, 1, 8, dir);
        if (cskip)
            pair_runs(tb, l2, row_pitch, xo, yo + skip, zoff, 1, 2 * pairs, dir);
        if (ncols > cskip) {
            if (dir == TILE)
                ops->swz_quads8(tb, l2 + 8 * cskip, row_pitch, xo + cskip, yo + skip, zoff, ncols - cskip, pairs);
            else
                ops->unswz_quads8(tb, l2 + 8 * cskip, row_pitch, xo + cskip, yo + skip, zoff, ncols - cskip, pairs);
        }
        if (skip + 2 * pairs < nrows)
            tile_runs(tb, lin + (nrows - 1) * row_pitch, row_pitch, xo, yo + nrows - 1, zoff, ncols, 1, 8, dir);
        return;
    }
    if (t->run_log2 == 4) {
        if (whole) {
            const unsigned shape = t->tw_log2 * 16 + t->th_log2;
#define SHAPE(tw, th)                                                                                              \
            case tw * 16 + th:                                                                                     \
                if (dir == TILE)                                                                                   \
                    tile_runs(tb, lin, row_pitch, xo, yo, zoff, 1u << (tw - 4), 1u << th, 16, TILE);               \
                else                                                                                               \
                    tile_runs(tb, lin, row_pitch, xo, yo, zoff, 1u << (tw - 4), 1u << th, 16, UNTILE);             \
                return;
            switch (shape) {
            SHAPE(6, 3) /* block-linear blocks, 64 B x 8 * block height (1..32 GOBs) */
            SHAPE(6, 4)
            SHAPE(6, 5)
            SHAPE(6, 6)
            SHAPE(6, 7)
            SHAPE(6, 8)
            SHAPE(7, 5) /* Intel Y / Tile4, D3D 4 KB at 4 bytes */
            SHAPE(8, 8) /* D3D 64 KB at 1 byte */
            SHAPE(9, 7) /* D3D 64 KB at 2 and 4 bytes, AMD SW_64KB_R_X */
            SHAPE(10, 6) /* D3D 64 KB at 8 and 16 bytes */
            default: break;
            }
#undef SHAPE
        }
        if (dir == TILE)
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 16, TILE);
        else
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 16, UNTILE);
    } else if (t->run_log2 == 3) {
        if (t->yo[1] == 8 && (t->yo[0] & 8) == 0 && zoff % 16 == 0 && t->th_log2 >= 1 && nrows >= 2) {
            bool x_clear = true;
            for (unsigned c = 0; c < ncols; c++)
                x_clear &= (xo[c] & 8) == 0;
            /* Every pair, not only the first: a caller's equation may XOR another y bit into
             * address bit 3. */
            for (unsigned r = row0 % 2; x_clear && r + 1 < nrows; r += 2)
                x_clear = (yo[r] & 8) == 0 && yo[r + 1] == (yo[r] ^ 8);
            if (x_clear) {
                /* An odd first row (a box starting on an odd row) and an odd last row move
                 * alone; the pairs in between together. */
                unsigned skip = row0 % 2, pairs = (nrows - skip) / 2;
                if (skip)
                    tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, 1, 8, dir);
                unsigned char *l2 = lin + skip * row_pitch;
                if (dir == TILE)
                    pair_runs(tb, l2, row_pitch, xo, yo + skip, zoff, ncols, 2 * pairs, TILE);
                else
                    pair_runs(tb, l2, row_pitch, xo, yo + skip, zoff, ncols, 2 * pairs, UNTILE);
                if (skip + 2 * pairs < nrows)
                    tile_runs(tb, lin + (nrows - 1) * row_pitch, row_pitch, xo, yo + nrows - 1, zoff, ncols, 1, 8,
                              dir);
                return;
            }
        }
        if (dir == TILE)
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 8, TILE);
        else
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 8, UNTILE);
    } else if (t->run_log2 == 2) {
        if (dir == TILE)
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 4, TILE);
        else
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 4, UNTILE);
    } else if (t->run_log2 == 5) {
        /* 32-byte runs (merge_runs(): Morton with 16-byte units); the whole 2D tile of that
         * Morton (1 KiB x 64 rows) with constant trip counts. */
        if (whole && t->tw_log2 == 10 && t->th_log2 == 6) {
            if (dir == TILE)
                tile_runs(tb, lin, row_pitch, xo, yo, zoff, 32, 64, 32, TILE);
            else
                tile_runs(tb, lin, row_pitch, xo, yo, zoff, 32, 64, 32, UNTILE);
        } else if (dir == TILE) {
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 32, TILE);
        } else {
            tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 32, UNTILE);
        }
    } else if (t->run_log2 >= 6 && t->run_log2 <= 12) {
        long_runs(t, tb, lin, row_pitch, zoff, xo, ncols, yo, nrows, dir, ops);
    } else {
        tile_runs(tb, lin, row_pitch, xo, yo, zoff, ncols, nrows, 1u << t->run_log2, dir);
    }
}

/* move_part() moves the n bytes of a partial run (n < the run size) between the tiled byte 't'
 * and the linear byte 'l'. Up to 16 bytes with two overlapping fixed-size moves (both ranges
 * are exactly n bytes, so the overlap rewrites bytes of the range only), beyond that memcpy(). */
static inline __attribute__((always_inline)) void move_part(unsigned char *t, unsigned char *l, size_t n, enum dir dir)
{
    unsigned char *d = dir == TILE ? t : l;
    const unsigned char *s = dir == TILE ? l : t;
    if (n >= 8 && n <= 16) {
        uint64_t a, z;
        memcpy(&a, s, 8);
        memcpy(&z, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &z, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t a, z;
        memcpy(&a, s, 4);
        memcpy(&z, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &z, 4);
    } else if (n > 16) {
        memcpy(d, s, n);
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

/* part_rows() moves the same partial run of 'nrows' rows: row r's n bytes at linear 'lin' +
 * r * row_pitch and at tiled 'tb' + (key ^ yo[r]). The row loop is written once per size class
 * of move_part(), inside a test of n, so that each copy is a few instructions with the size test
 * folded out; written as part of the row loop of copy_tiles() it spilled its counters and cost
 * 6-8 ns per row (perf, Zen 3). */
static void part_rows(unsigned char *tb, uint32_t key, unsigned char *lin, size_t row_pitch, const uint32_t *yo,
                      unsigned nrows, size_t n, enum dir dir)
{
#define PART_ROWS(nn)                                                                                              \
    do {                                                                                                           \
        if (dir == TILE)                                                                                           \
            for (unsigned r = 0; r < nrows; r++, lin += row_pitch)                                                 \
                move_part(tb + (key ^ yo[r]), lin, (nn), TILE);                                                    \
        else                                                                                                       \
            for (unsigned r = 0; r < nrows; r++, lin += row_pitch)                                                 \
                move_part(tb + (key ^ yo[r]), lin, (nn), UNTILE);                                                  \
    } while (0)
    if (n >= 8 && n <= 16)
        PART_ROWS(n);
    else if (n >= 4 && n < 8)
        PART_ROWS(n);
    else
        PART_ROWS(n);
#undef PART_ROWS
}

/* How copy_tiles() writes whole tiles of a swizzle with streaming stores (choose_walk() chooses):
 * not at all, gathered in address order (swz_tile16_nt), row by row (swz_rows16_nt), or a line
 * of four rows at a time (swz_lines16_nt, swz_qlines8_nt). */
enum nt_walk { NT_NONE, NT_GATHER, NT_ROWS, NT_LINES16, NT_QLINES8 };

/* group_tiles() moves rows [row0, row0 + nrows) of 'n' whole-width tiles tx, tx + 1, ... (the
 * first at 'tb', its row row0 at 'lin') with one call of the pair or quad kernel, through a
 * column table spanning the tiles: each tile's base relative to the first plus its xo[] entries.
 * Walking 64-byte-wide block-linear tiles one at a time, every row of a tile was one 64-byte line
 * 4 KiB or more from the last, and the swizzle of a 4 MiB surface ran at 0.64-0.72x memcpy; two
 * to eight tiles per call (128-512 bytes of each row) measured 0.70-0.91x, best from 256 bytes
 * on; for Intel Y / Tile4 (128-byte tiles) 256-512 bytes gained 0.05-0.1x and 1 KiB lost (Zen 3,
 * 2026-11-22, surfaces of 1024 x 1024 x 4 bytes). Returns false, having moved nothing, when a
 * base is not a multiple of the tables' span from the first (an XOR with the row's offset would
 * carry into it) or lies beyond 2^31 of it; the caller then walks tile by tile. */
#define GROUP_ROW_BYTES 512u
/* Streaming pair walks (choose_walk()): a swizzle moves 4 KiB of each row per group, a deswizzle
 * GROUP_ROW_BYTES. Swizzling block-linear 4096^2 x 4 bytes (64 MiB) with streaming stores, whole
 * lines each, ran at 0.45-0.59x memcpy with 512 bytes of each row per group, 0.74 with 1 KiB,
 * 0.85 with 2 KiB, 0.89-0.97 from 4 KiB on (longer runs of each linear row read in turn); the
 * deswizzle's streamed linear rows at 0.93-0.99x up to 1 KiB and 0.47-0.55x from 4 KiB (64 tiles'
 * lines read at once) (Intel Xeon, Cascade Lake, 2026-11-26, /tmp experiment, 7-9 paired rounds). */
#define PAIRS_NT_TILE_ROW_BYTES 4096u
#define PAIRS_NT_MAX_RUNS (PAIRS_NT_TILE_ROW_BYTES / 16u)
static bool group_tiles(const struct vidmm_swz_tiles *t, unsigned char *tb, const unsigned char *tiled,
                        const struct vidmm_swz_mip *m, uint64_t tx, uint32_t ty, uint32_t tz, unsigned n,
                        unsigned char *lin, size_t row_pitch, uint32_t zoff, unsigned row0, unsigned nrows,
                        enum dir dir, const struct vidmm_kernel_ops *ops, bool nt)
{
    const unsigned cols = 1u << (t->tw_log2 - t->run_log2);
    uint32_t off[PAIRS_NT_MAX_RUNS];
    const uint64_t first = (uint64_t)(tb - tiled);

    if (n * cols > (nt ? PAIRS_NT_MAX_RUNS : VIDMM_SWZ_MAX_XRUNS))
        return false;
    for (unsigned g = 0; g < n; g++) {
        const uint64_t d = g == 0 ? 0 : t->tile_base(m, tx + g, ty, tz) - first;
        if (d >= (1ull << 31) || (d & t->span_mask) != 0)
            return false;
        for (unsigned c = 0; c < cols; c++)
            off[g * cols + c] = (uint32_t)d + t->xo[c];
    }
    if (nt && row0 % 2 == 0 && nrows % 2 == 0 && (zoff & 63) == 0) {
        /* Streaming stores (copy_tiles() checked the alignment of the side they go to). */
        if (n * cols <= VIDMM_SWZ_MAX_XRUNS) {
            if (dir == TILE)
                ops->swz_pairs16_nt(tb, lin, row_pitch, off, t->yo + row0, zoff, n * cols, nrows / 2);
            else
                ops->unswz_pairs16_nt(tb, lin, row_pitch, off, t->yo + row0, zoff, n * cols, nrows / 2);
            return true;
        }
        /* Wider than the kernels' tables: each row pair in chunks, so that the linear rows are
         * still read (or written) one whole group at a time. */
        for (unsigned r = 0; r < nrows; r += 2) {
            unsigned char *l = lin + r * row_pitch;
            for (unsigned c = 0; c < n * cols; c += VIDMM_SWZ_MAX_XRUNS) {
                unsigned k = n * cols - c < VIDMM_SWZ_MAX_XRUNS ? n * cols - c : VIDMM_SWZ_MAX_XRUNS;
                if (dir == TILE)
                    ops->swz_pairs16_nt(tb, l + 16 * c, row_pitch, off + c, t->yo + row0 + r, zoff, k, 1);
                else
                    ops->unswz_pairs16_nt(tb, l + 16 * c, row_pitch, off + c, t->yo + row0 + r, zoff, k, 1);
            }
        }
        return true;
    }
    runs_aligned(t, tb, lin, row_pitch, zoff, off, 0, n * cols, row0, nrows, dir, ops);
    return true;
}

/* band_runs() moves the rows [row0, row0 + nrows) of a box's band whose left or right edge is
 * not on a tile: the whole runs [h, e) of every tile it crosses through one column table (each
 * run's tile base relative to the first tile's plus its xo[] entry) and one runs_aligned() call,
 * then the partial runs at the edges, once each. Walked tile by tile (the loop in copy_tiles()),
 * each partial tile of a 64x64 box of 4-byte elements four bytes off the tiles took its own
 * walk, table and kernel call, and the kernel's leftover runs of each tile moved alone: 8,054
 * instructions a box of Intel Y against 3,950 for the same box on the tiles (Callgrind, Zen 3).
 * 'lband' is the linear byte of the band's first row at x0. Returns false, having moved nothing,
 * where the runs do not fit one table or a tile base could carry into the tables' bits (as
 * group_tiles()). */
static __attribute__((noinline)) bool band_runs(const struct vidmm_swz_tiles *t, const struct vidmm_swz_mip *m, unsigned char *tiled,
                      uint64_t x0, uint64_t x1, uint32_t ty, uint32_t tz, unsigned char *lband, size_t row_pitch,
                      uint32_t zoff, unsigned row0, unsigned nrows, enum dir dir, const struct vidmm_kernel_ops *ops)
{
    const uint64_t tw_mask = (1ull << t->tw_log2) - 1, run_mask = (1ull << t->run_log2) - 1;
    const uint64_t h = (x0 + run_mask) & ~run_mask, e = x1 & ~run_mask;
    if (e <= h || ((e - h) >> t->run_log2) > VIDMM_SWZ_MAX_XRUNS)
        return false;
    const uint64_t tx0 = h >> t->tw_log2, tx1 = (e - 1) >> t->tw_log2;
    const unsigned last = (unsigned)(tw_mask >> t->run_log2);
    const uint64_t first = t->tile_base(m, tx0, ty, tz);
    uint32_t off[VIDMM_SWZ_MAX_XRUNS];
    unsigned n = 0;
    for (uint64_t tx = tx0; tx <= tx1; tx++) {
        const uint64_t d = tx == tx0 ? 0 : t->tile_base(m, tx, ty, tz) - first;
        if (d >= (1ull << 31) || (d & t->span_mask) != 0)
            return false;
        const unsigned c0 = tx == tx0 ? (unsigned)((h & tw_mask) >> t->run_log2) : 0;
        const unsigned c1 = tx == tx1 ? (unsigned)(((e - 1) & tw_mask) >> t->run_log2) : last;
        for (unsigned c = c0; c <= c1; c++)
            off[n++] = (uint32_t)d + t->xo[c];
    }
    const unsigned col0 = (unsigned)((h & tw_mask) >> t->run_log2);
    unsigned char *lh = lband + (h - x0);
    runs_aligned(t, tiled + first, lh, row_pitch, zoff, off, col0, n, row0, nrows, dir, ops);
    const uint32_t *yo = t->yo + row0;
    if (x0 < h)
        part_rows(tiled + t->tile_base(m, x0 >> t->tw_log2, ty, tz) + (x0 & run_mask),
                  t->xo[(x0 & tw_mask) >> t->run_log2] ^ zoff, lband, row_pitch, yo, nrows, (size_t)(h - x0), dir);
    if (e < x1)
        part_rows(tiled + t->tile_base(m, e >> t->tw_log2, ty, tz), t->xo[(e & tw_mask) >> t->run_log2] ^ zoff,
                  lband + (e - x0), row_pitch, yo, nrows, (size_t)(x1 - e), dir);
    return true;
}

/* How copy_tiles() walks a tile-row band in strips of four rows (choose_walk() chooses): not at
 * all, with ordinary stores, or with streaming stores. */
enum strip_walk { STRIPS_NONE, STRIPS_CACHED, STRIPS_NT };

/* strips() moves the rows [row0, row0 + nrows) of a band (whole tiles across [x0, x1), rows in
 * fours) four rows at a time across up to STRIP_TILES tiles, with the strip kernels (kernel_ops.h:
 * swz_strip16, unswz_strip16, unswz_strip16_nt): each 64-byte tile line (one run of four rows)
 * built from or split into the four rows, which the strip walks as four sequential streams.
 * Walking tile by tile instead reads or writes each run of 32 rows 4 KiB apart (the pitch of a
 * 1024-pixel row of 4 bytes), every row on its own page and in the same L1 set. choose_walk()
 * chooses when (and its figures).
 * Returns false when the band does not fit (edges not on tiles, alignment, a tile base the
 * tables could carry into, a column count the kernels cannot take); rows already moved are then
 * moved again tile by tile, which is harmless for a copy between buffers that do not overlap. */
#define STRIP_TILES 256u
/* A deswizzle beyond the cache walks strips of at most UNTILE_STRIP_BYTES of tiles side by side,
 * each asking for the next strip's source into L2 while it works (strip16_body() in
 * lib/arch/x86/kernels_template.h): its quads read a line in every 512 bytes to 4 KiB of each
 * tile, an order the hardware prefetchers do not follow, and a strip and the next fit any L2.
 * 64 MiB deswizzles, one process alternating (Zen 3 EPYC, 512 KiB L2, AVX2, 2026-12-02, medians
 * of 15-31; before: a strip of up to 256 tiles prefetching each next quad's lines):
 *   Intel Y 8192 x 8192 bytes 15.3-15.4 -> 10.8-11.6 ms (strips of 1 MiB: 12.0-12.3);
 *   Tile4 15.1 -> 11.7 (1 MiB: 15.5); D3D 4 KB 4096^2 x 4 B 15.7 -> 12.1; D3D 64 KB 18.5 -> 13.2;
 *   Morton 4096^2 x 4 B 19.6 -> 14.3-14.7 (its tiles side by side in pairs).
 * The target table (vidmm_bench --vbench_mode=targets, 64 MiB deswizzle / streaming copy, two
 * runs of each build alternating): Intel Y 0.56 -> 0.75-0.79, Tile4 0.59 -> 0.71-0.74, D3D 64 KB
 * 0.47-0.53 -> 0.68-0.73, Morton 0.41-0.46 -> 0.47-0.52; / the ordinary copy 0.81-0.91 -> 1.10-1.20,
 * 0.86-0.91 -> 1.12-1.18, 0.74-0.78 -> 0.96-1.08, 0.67 -> 0.79-0.80.
 * 32 KiB and 128 KiB strips were within 5% of 64 KiB; the ordinary-store strips of a deswizzle in
 * the cache gained nothing from the prefetch (4 MiB: D3D 64 KB 173 -> 215 us, Tile4 194 -> 204) and
 * keep their walk. */
#define UNTILE_STRIP_BYTES (64ull << 10)
static bool strips(const struct vidmm_swz_tiles *t, const struct vidmm_swz_mip *m, unsigned char *tiled,
                   unsigned char *lband, size_t row_pitch, uint64_t x0, uint64_t x1, uint32_t ty, uint32_t tz,
                   uint32_t zoff, unsigned row0, unsigned nrows, enum dir dir, bool nt,
                   const struct vidmm_kernel_ops *ops, bool far, uint64_t next_band)
{
    const unsigned cols = 1u << (t->tw_log2 - t->run_log2);
    uint32_t tbase[STRIP_TILES];
    /* A deswizzle's strips of flat tiles side by side in memory prefetch the source of the strip
     * after them (strip16_body() in the kernels): the next strip of this band, or the first of
     * the next band ('next_band', the offset of its first tile; UINT64_MAX: none). */
    const uint64_t tile_bytes = 1ull << (t->tw_log2 + t->th_log2);
    bool prefetch = far && dir == UNTILE && t->td_log2 == 0 && x1 - x0 >= (2ull << t->tw_log2);
    if (prefetch)
        prefetch = t->tile_base(m, (x0 >> t->tw_log2) + 1, ty, tz) - t->tile_base(m, x0 >> t->tw_log2, ty, tz) ==
                   tile_bytes;
    uint64_t strip_tiles = STRIP_TILES;
    if (prefetch && (UNTILE_STRIP_BYTES / tile_bytes) < strip_tiles)
        strip_tiles = UNTILE_STRIP_BYTES / tile_bytes > 0 ? UNTILE_STRIP_BYTES / tile_bytes : 1;

    const bool quads = t->quad8; /* Morton's 8-byte runs (else the 16-byte runs of a pair layout) */
    if (((x0 | x1) & ((1ull << t->tw_log2) - 1)) != 0 || (zoff & 63) != 0 || ((uintptr_t)tiled & 63) != 0 ||
        cols > VIDMM_SWZ_MAX_XRUNS || ((dir == UNTILE || quads) && cols % 4 != 0) ||
        (nt && quads && dir == UNTILE && ops->unswz_qstrip8_nt == NULL) ||
        (nt && dir == UNTILE && (((uintptr_t)lband | row_pitch) & 31) != 0))
        return false;
    for (uint64_t cx = x0; cx < x1;) {
        const uint64_t tx0 = cx >> t->tw_log2;
        uint64_t ntile = (x1 - cx) >> t->tw_log2;
        if (ntile > strip_tiles)
            ntile = strip_tiles;
        const uint64_t first = t->tile_base(m, tx0, ty, tz);
        if ((first & 63) != 0)
            return false;
        for (unsigned g = 0; g < ntile; g++) {
            /* The kernels add tbase[g] (no XOR to carry into), but a base off the tables' span
             * would leave that tile's lines unaligned for the aligned loads of the untiling
             * kernels: refused. */
            const uint64_t d = g == 0 ? 0 : t->tile_base(m, tx0 + g, ty, tz) - first;
            if (prefetch && d != g * tile_bytes) {
                ntile = g; /* a prefetching strip is tiles side by side (Morton's come in pairs) */
                break;
            }
            if (d >= (1ull << 31) || (d & t->span_mask) != 0)
                return false;
            tbase[g] = (uint32_t)d;
        }
        /* The next strip's source: as many tiles as this one has, at most what is left of the
         * band or, at its end, as many as the next band's first strip may take (its tiles are
         * side by side or fewer: the lines past them are only asked for, never read). */
        const unsigned char *pf = NULL;
        unsigned pf_lines = 0;
        if (prefetch) {
            const uint64_t next_x = cx + (ntile << t->tw_log2);
            const uint64_t left = next_x < x1 ? (x1 - next_x) >> t->tw_log2 : (x1 - x0) >> t->tw_log2;
            const uint64_t nf = next_x < x1 ? t->tile_base(m, next_x >> t->tw_log2, ty, tz) : next_band;
            if (nf != UINT64_MAX) {
                pf = tiled + nf;
                pf_lines = (unsigned)(((ntile < left ? ntile : left) * tile_bytes) >> 6);
            }
        }
        unsigned char *lin = lband + (cx - x0), *tb = tiled + first;
        if (quads && dir == TILE)
            (nt ? ops->swz_qstrip8_nt : ops->swz_qstrip8)(tb, lin, row_pitch, tbase, (unsigned)ntile, t->xo, cols,
                                                          t->yo + row0, zoff, nrows / 4);
        else if (quads)
            (nt ? ops->unswz_qstrip8_nt : ops->unswz_qstrip8)(tb, lin, row_pitch, tbase, (unsigned)ntile, t->xo, cols,
                                                             t->yo + row0, zoff, nrows / 4, pf, pf_lines);
        else if (dir == TILE)
            (nt ? ops->swz_strip16_nt : ops->swz_strip16)(tb, lin, row_pitch, tbase, (unsigned)ntile, t->xo, cols,
                                                          t->yo + row0, zoff, nrows / 4);
        else
            (nt ? ops->unswz_strip16_nt : ops->unswz_strip16)(tb, lin, row_pitch, tbase, (unsigned)ntile, t->xo, cols,
                                                             t->yo + row0, zoff, nrows / 4, pf, pf_lines);
        cx += ntile << t->tw_log2;
    }
    return true;
}

/* row_runs16() moves one row of 16-byte runs, bytes [x0, x1) of the subresource's row (run
 * aligned) between 'lrow' and the tiles of band (ty, tz) it crosses, 'yoff' being the row's
 * offset in a tile (with the z term): a box one row tall (run_copy()). No kernel pairs a lone
 * row, and the per-tile work of copy_tiles() is about 200 instructions, for the four runs of a
 * GOB row: a range unlock tiles back each written page of a row this way, 14,200 instructions
 * a page of a 64 MiB block-linear surface through copy_tiles(), 5,600 here (Callgrind). The
 * tiles ROW_AHEAD bytes further along the row are prefetched (for writing when tiling): a
 * written page's runs land on 64 GOBs 8 KiB apart, every line a miss the hardware prefetchers
 * cannot foresee, and unlocking 10% of the pages of that surface, spread evenly (a page a row),
 * took 7.2-7.6 ms without, 4.2-5.4 ms with the GOBs 4 or 8 ahead, 5.5 with 12 (Cascade Lake,
 * 2026-11-26). */
#define ROW_AHEAD 512u
static __attribute__((noinline)) void row_runs16(const struct vidmm_swz_tiles *t, const struct vidmm_swz_mip *m,
                                                 unsigned char *tiled, unsigned char *lrow, uint64_t x0, uint64_t x1,
                                                 uint32_t ty, uint32_t tz, uint32_t yoff, enum dir dir)
{
    const uint64_t tw_mask = (1ull << t->tw_log2) - 1;
    const unsigned cols = 1u << (t->tw_log2 - 4);
    const uint64_t ahead = t->tw_log2 >= 9 ? 1 : ROW_AHEAD >> t->tw_log2;
    for (uint64_t x = x0; x < x1;) {
        const uint64_t tx = x >> t->tw_log2;
        unsigned char *tb = tiled + t->tile_base(m, tx, ty, tz);
        const uint64_t e = ((tx + 1) << t->tw_log2) < x1 ? (tx + 1) << t->tw_log2 : x1;
        if (((tx + ahead) << t->tw_log2) < x1) {
            const unsigned char *pb = tiled + t->tile_base(m, tx + ahead, ty, tz);
            for (unsigned c = 0; c < cols; c++) {
                if (dir == TILE)
                    VIDMM_PREFETCH_W(pb + (t->xo[c] ^ yoff));
                else
                    VIDMM_PREFETCH_R(pb + (t->xo[c] ^ yoff));
            }
        }
        for (; x < e; x += 16) {
            unsigned char *tp = tb + (t->xo[(x & tw_mask) >> 4] ^ yoff);
            if (dir == TILE)
                memcpy(tp, lrow + (x - x0), 16);
            else
                memcpy(lrow + (x - x0), tp, 16);
        }
    }
}

/* copy_tiles() is the fast walk for layouts that describe themselves as tiles (see struct
 * vidmm_swz_tiles): each tile the box touches is located once, and inside it every run's
 * offset is two table loads and an XOR, instead of a call of the address function. The linear
 * side is walked a tile-row band at a time (th rows), which reads or writes each tile whole
 * while it is hot. Arguments are valid. */
static inline __attribute__((always_inline)) void
copy_tiles(const struct vidmm_swz_mip *m, const struct vidmm_box *b, unsigned char *tiled, unsigned char *linear,
           size_t row_pitch, size_t slice_pitch, enum dir dir, enum nt_walk nt_walk, const uint16_t *inv,
           const struct vidmm_kernel_ops *stream_ops, const struct vidmm_kernel_ops *ops, bool grouped,
           enum strip_walk strip_walk, bool pairs_nt, bool lines, bool far)
{
    const struct vidmm_swz_tiles *t = &m->tiles;
    const uint64_t tw_mask = (1ull << t->tw_log2) - 1, run_mask = (1ull << t->run_log2) - 1;
    const uint32_t th_mask = (1u << t->th_log2) - 1, td_mask = (1u << t->td_log2) - 1;
    const uint64_t x0 = (uint64_t)b->x * m->elem, x1 = x0 + (uint64_t)b->width * m->elem;
    const uint32_t y1 = b->y + b->height;
    /* The line kernels write 32-byte vectors to whole lines, the others 16-byte ones. */
    const uintptr_t nt_align = nt_walk == NT_LINES16 || nt_walk == NT_QLINES8 ? 63 : 15;
    /* Tiles per call of the pair and quad kernels (group_tiles()): GROUP_ROW_BYTES of each row. */
    uint32_t group = 1;
    if (pairs_nt && t->tw_log2 < 12)
        group = (dir == TILE ? PAIRS_NT_TILE_ROW_BYTES : GROUP_ROW_BYTES) >> t->tw_log2;
    else if (grouped && !lines && nt_walk == NT_NONE && stream_ops == NULL &&
             ((t->pair16 && ops->swz_pairs16 != NULL) || (t->quad8 && ops->swz_quads8 != NULL)) &&
             t->tw_log2 < 31 && (GROUP_ROW_BYTES >> t->tw_log2) > 1)
        group = GROUP_ROW_BYTES >> t->tw_log2;
    /* A box off the tiles at an edge, across tiles, on the cached pair kernels: a band at a time
     * (band_runs()). Not Morton's quads: its 64x64 boxes took 10-12% more instructions so (the
     * gate's morton/box64, both directions; the quad kernel's odd first column moves alone). */
    const bool band = ((x0 | x1) & tw_mask) != 0 && (x0 >> t->tw_log2) != ((x1 - 1) >> t->tw_log2) &&
                      nt_walk == NT_NONE && !lines && stream_ops == NULL && !pairs_nt && ops != NULL &&
                      t->pair16 && ops->swz_pairs16 != NULL;

    for (uint32_t z = b->z; z < b->z + b->depth; z++) {
        const uint32_t zoff = t->zo[z & td_mask], tz = z >> t->td_log2;
        unsigned char *lslice = linear + (size_t)(z - b->z) * slice_pitch;
        for (uint32_t ty = b->y >> t->th_log2; ty <= (y1 - 1) >> t->th_log2; ty++) {
            uint32_t r0 = ty << t->th_log2, r1 = r0 + th_mask + 1;
            if (r0 < b->y)
                r0 = b->y;
            if (r1 > y1)
                r1 = y1;
            if (strip_walk != STRIPS_NONE && r0 % 4 == 0 && r1 % 4 == 0 &&
                strips(t, m, tiled, lslice + (size_t)(r0 - b->y) * row_pitch, row_pitch, x0, x1, ty, tz, zoff,
                       r0 & th_mask, r1 - r0, dir, strip_walk == STRIPS_NT, ops, far,
                       far && ty < (y1 - 1) >> t->th_log2 ? t->tile_base(m, x0 >> t->tw_log2, ty + 1, tz) : UINT64_MAX))
                continue;
            if (band && band_runs(t, m, tiled, x0, x1, ty, tz, lslice + (size_t)(r0 - b->y) * row_pitch, row_pitch,
                                  zoff, r0 & th_mask, r1 - r0, dir, ops))
                continue;
            for (uint64_t tx = x0 >> t->tw_log2; tx <= (x1 - 1) >> t->tw_log2; tx++) {
                unsigned char *tb = tiled + t->tile_base(m, tx, ty, tz);
                /* Whole groups only, so that the column count is one the pair kernel unrolls (32
                 * runs for the GOB and Intel tiles); a 64x64 box grouping three block-linear tiles
                 * (12 runs, the generic loop) measured slower than tile by tile. */
                uint32_t n = group;
                if (group > 1 && (tx << t->tw_log2) >= x0 && (x1 >> t->tw_log2) < tx + n && pairs_nt &&
                    (x1 >> t->tw_log2) > tx)
                    n = (uint32_t)((x1 >> t->tw_log2) - tx); /* the streaming walk takes what is left */
                if (group > 1 && (tx << t->tw_log2) >= x0 && (x1 >> t->tw_log2) >= tx + n) {
                    unsigned char *lin = lslice + (size_t)(r0 - b->y) * row_pitch + ((tx << t->tw_log2) - x0);
                    /* Streaming stores where the side they go to is aligned for them. */
                    const bool nt = pairs_nt && (dir == TILE ? ((uintptr_t)tb & 63) == 0
                                                             : (((uintptr_t)lin | row_pitch) & 63) == 0);
                    if (group_tiles(t, tb, tiled, m, tx, ty, tz, n, lin, row_pitch, zoff, r0 & th_mask, r1 - r0,
                                    dir, ops, nt)) {
                        tx += n - 1;
                        continue;
                    }
                }
                uint64_t c0 = tx << t->tw_log2, c1 = c0 + tw_mask + 1;
                if (c0 < x0)
                    c0 = x0;
                if (c1 > x1)
                    c1 = x1;
                const bool whole = ((c0 | c1) & tw_mask) == 0 && c1 - c0 == tw_mask + 1 && r1 - r0 == th_mask + 1;
                if (whole && nt_walk != NT_NONE && (zoff & nt_align) == 0 && ((uintptr_t)tb & nt_align) == 0) {
                    /* A whole tile of a large swizzle: streaming stores, each line whole. (The
                     * tile's own alignment is checked: mips in a packed tail may start anywhere
                     * a family puts them.) */
                    unsigned char *lin = lslice + (size_t)(r0 - b->y) * row_pitch + (c0 - x0);
                    const unsigned cols = (unsigned)((tw_mask + 1) >> t->run_log2);
                    switch (nt_walk) {
                    case NT_ROWS:
                        ops->swz_rows16_nt(tb, lin, row_pitch, t->xo, t->yo, zoff, cols, th_mask + 1);
                        break;
                    case NT_LINES16:
                        ops->swz_lines16_nt(tb, lin, row_pitch, t->xo, t->yo, zoff, cols, (th_mask + 1) / 4);
                        break;
                    case NT_QLINES8:
                        ops->swz_qlines8_nt(tb, lin, row_pitch, t->xo, t->yo, zoff, cols, (th_mask + 1) / 4);
                        break;
                    default:
                        ops->swz_tile16_nt(tb, lin, row_pitch, inv, (unsigned)(((tw_mask + 1) << t->th_log2) >> 4),
                                           zoff >> 4);
                        break;
                    }
                    continue;
                }
                if (whole && lines && (zoff & 48) == 0) {
                    /* A whole tile of a swizzle in the cache, a line at a time (choose_walk()). */
                    ops->swz_lines16(tb, lslice + (size_t)(r0 - b->y) * row_pitch + (c0 - x0), row_pitch, t->xo,
                                     t->yo, zoff, (unsigned)((tw_mask + 1) >> t->run_log2), (th_mask + 1) / 4);
                    continue;
                }
                if (whole && stream_ops != NULL && zoff % 16 == 0) {
                    /* A whole tile from write-combined memory: streaming loads in address order. */
                    stream_ops->swz_untile16_stream(tb, lslice + (size_t)(r0 - b->y) * row_pitch + (c0 - x0),
                                                    row_pitch, inv, (unsigned)(((tw_mask + 1) << t->th_log2) >> 4),
                                                    zoff >> 4);
                    continue;
                }
                /* Head / middle / tail: the partial run where the box's left edge falls
                 * inside a run, the whole runs (fixed-size moves), the partial run at the right
                 * edge. Moving the edges run by run with a variable-length memcpy() was 40% of
                 * a 64x64 box (perf, Zen 3, the box starting 4 bytes into a run). */
                uint64_t h = (c0 + run_mask) & ~run_mask, e = c1 & ~run_mask;
                if (h > c1)
                    h = c1;
                if (e < h)
                    e = h;
                unsigned char *lband = lslice + (size_t)(r0 - b->y) * row_pitch;
                if (e > h)
                    runs_aligned(t, tb, lband + (h - x0), row_pitch, zoff, t->xo + ((h & tw_mask) >> t->run_log2),
                                 (unsigned)((h & tw_mask) >> t->run_log2), (unsigned)((e - h) >> t->run_log2),
                                 r0 & th_mask, r1 - r0, dir, ops);
                if (c0 == h && e == c1)
                    continue;
                if (c0 < h)
                    part_rows(tb + (c0 & run_mask), t->xo[(c0 & tw_mask) >> t->run_log2] ^ zoff, lband + (c0 - x0),
                              row_pitch, t->yo + (r0 & th_mask), r1 - r0, (size_t)(h - c0), dir);
                if (e < c1)
                    part_rows(tb, t->xo[(e & tw_mask) >> t->run_log2] ^ zoff, lband + (e - x0), row_pitch,
                              t->yo + (r0 & th_mask), r1 - r0, (size_t)(c1 - e), dir);
            }
        }
    }
}

/* copy_long_rows() is copy_tiles() for layouts whose run is a whole tile row (Intel X's 512-byte
 * rows, t->run_log2 == tw_log2): where a box spans whole tile columns, the tiles of a tile row
 * side by side in memory move as one wide tile, LONG_ROW_TILES at a time, in one call
 * of the backend's runs64 kernel through a table of tile offsets; narrower boxes and the partial
 * tile columns at a wide box's left and right go through narrow_cols(). One kernel call per 4 KiB tile had left 12% of a
 * 4 MiB Intel X deswizzle in the walk around the kernel (perf: run_copy 4.5%, runs_aligned 3.5%,
 * long_runs 2.0%, tile_base 0.8%; 87-88 us against 76-77 us for the same loop inline over the
 * same tiles, Zen 4, 2026-12-01); after, 97% in the kernel, 1.04-1.05x the inline loop. Out of
 * line, tried before run_copy() (long_rows_try()): inside copy_tiles() its table and branch cost
 * the other layouts' 64x64 boxes 0.3-0.6% more instructions and Intel X's 1.6-1.9% (Callgrind).
 * Returns false (nothing copied) where the layout does not qualify (no runs64 kernel, thick
 * tiles). */
#define LONG_ROW_TILES 32u

/* narrow_cols() moves box 'b' of such a layout (run = tile row, no thick tiles) a tile column at
 * a time, each row's part of the column one memcpy(): the boxes narrower than two whole tile
 * columns and the partial columns at a wide box's edges. Through copy_tiles() each tile of such
 * a column took its walk (about 150 instructions a tile) and part_rows() its loop around the
 * same memcpy() (21 a row): a 64x64 box of 4-byte elements of Intel X, 256 bytes of one tile
 * column, was 5,000 instructions against 2,200 for the same rows copied pitch-linear (Callgrind,
 * the gate's intel_x/box64). */
static inline __attribute__((always_inline)) void narrow_body(const struct vidmm_swz_mip *m,
                                                               const struct vidmm_box *b, unsigned char *tiled,
                                                               unsigned char *linear, size_t row_pitch,
                                                               size_t slice_pitch, enum dir dir)
{
    const struct vidmm_swz_tiles *t = &m->tiles;
    const unsigned tw = t->tw_log2, th = t->th_log2;
    const uint64_t tw_mask = (1ull << tw) - 1;
    const uint32_t th_mask = (1u << th) - 1, y1 = b->y + b->height;
    const uint64_t x0 = (uint64_t)b->x * m->elem, x1 = x0 + (uint64_t)b->width * m->elem;
    const uint32_t key = t->xo[0] ^ t->zo[0];
    for (uint32_t z = b->z; z < b->z + b->depth; z++) {
        unsigned char *lslice = linear + (size_t)(z - b->z) * slice_pitch;
        for (uint64_t tx = x0 >> tw; tx <= (x1 - 1) >> tw; tx++) {
            const uint64_t c0 = tx << tw > x0 ? tx << tw : x0, c1 = (tx + 1) << tw < x1 ? (tx + 1) << tw : x1;
            const size_t n = (size_t)(c1 - c0);
            unsigned char *l = lslice + (c0 - x0);
            for (uint32_t ty = b->y >> th; ty <= (y1 - 1) >> th; ty++) {
                const uint32_t r0 = ty << th > b->y ? ty << th : b->y;
                const uint32_t r1 = (ty << th) + th_mask + 1 < y1 ? (ty << th) + th_mask + 1 : y1;
                unsigned char *tb = tiled + t->tile_base(m, tx, ty, z) + (c0 & tw_mask);
                for (uint32_t r = r0; r < r1; r++, l += row_pitch) {
                    unsigned char *p = tb + (key ^ t->yo[r & th_mask]);
                    if (dir == TILE)
                        memcpy(p, l, n);
                    else
                        memcpy(l, p, n);
                }
            }
        }
    }
}

static __attribute__((noinline)) void narrow_cols_tile(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                       unsigned char *tiled, unsigned char *linear, size_t row_pitch,
                                                       size_t slice_pitch)
{
    narrow_body(m, b, tiled, linear, row_pitch, slice_pitch, TILE);
}

static __attribute__((noinline)) void narrow_cols_untile(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                         unsigned char *tiled, unsigned char *linear,
                                                         size_t row_pitch, size_t slice_pitch)
{
    narrow_body(m, b, tiled, linear, row_pitch, slice_pitch, UNTILE);
}

static inline __attribute__((always_inline)) void narrow_cols(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                              unsigned char *tiled, unsigned char *linear,
                                                              size_t row_pitch, size_t slice_pitch, enum dir dir)
{
    if (dir == TILE)
        narrow_cols_tile(m, b, tiled, linear, row_pitch, slice_pitch);
    else
        narrow_cols_untile(m, b, tiled, linear, row_pitch, slice_pitch);
}
static inline __attribute__((always_inline)) bool long_rows_body(const struct vidmm_swz_mip *m,
                                                                  const struct vidmm_box *b, unsigned char *tiled,
                                                                  unsigned char *linear, size_t row_pitch,
                                                                  size_t slice_pitch, enum dir dir,
                                                                  const struct vidmm_kernel_ops *ops,
                                                                  bool nt)
{
    const struct vidmm_swz_tiles *t = &m->tiles;
    const unsigned tw = t->tw_log2;
    const uint64_t x0 = (uint64_t)b->x * m->elem, x1 = x0 + (uint64_t)b->width * m->elem;
    const uint64_t a0 = (x0 + (1ull << tw) - 1) >> tw, a1 = x1 >> tw; /* whole tile columns [a0, a1) */
    if (ops->swz_runs64 == NULL || t->td_log2 != 0 || tw + t->th_log2 >= 26)
        return false;
    if (a1 <= a0 || ((a0 << tw) - x0) % m->elem != 0 || (x1 - (a1 << tw)) % m->elem != 0) {
        narrow_cols(m, b, tiled, linear, row_pitch, slice_pitch, dir); /* no whole column */
        return true;
    }
    const uint64_t tbytes = 1ull << (tw + t->th_log2);
    uint32_t xo[LONG_ROW_TILES];
    for (unsigned c = 0; c < LONG_ROW_TILES; c++)
        xo[c] = (uint32_t)(c * tbytes);
    /* The partial columns at the edges, as any box. */
    if ((a0 << tw) > x0) {
        const struct vidmm_box lb = { b->x, b->y, b->z, (uint32_t)(((a0 << tw) - x0) / m->elem), b->height, b->depth };
        narrow_cols(m, &lb, tiled, linear, row_pitch, slice_pitch, dir);
    }
    if (x1 > (a1 << tw)) {
        const struct vidmm_box rb = { (uint32_t)((a1 << tw) / m->elem), b->y, b->z,
                                      (uint32_t)((x1 - (a1 << tw)) / m->elem), b->height, b->depth };
        narrow_cols(m, &rb, tiled, linear + ((a1 << tw) - x0), row_pitch, slice_pitch, dir);
    }
    const uint32_t th_mask = (1u << t->th_log2) - 1, y1 = b->y + b->height;
    for (uint32_t z = b->z; z < b->z + b->depth; z++) {
        const uint32_t zoff = t->zo[0];
        unsigned char *lslice = linear + (size_t)(z - b->z) * slice_pitch + ((a0 << tw) - x0);
        for (uint32_t ty = b->y >> t->th_log2; ty <= (y1 - 1) >> t->th_log2; ty++) {
            uint32_t r0 = ty << t->th_log2, r1 = r0 + th_mask + 1;
            if (r0 < b->y)
                r0 = b->y;
            if (r1 > y1)
                r1 = y1;
            unsigned char *lband = lslice + (size_t)(r0 - b->y) * row_pitch;
            /* Streaming stores where the destination's lines are whole and aligned: the tile
             * side always is (tiles are 4 KiB, the buffer's alignment was checked); the linear
             * rows when the band and the pitch are. */
            const bool snt = nt && (dir == TILE || (((uintptr_t)lband | row_pitch) & 63) == 0);
            for (uint64_t tx = a0; tx < a1;) {
                const uint64_t base = t->tile_base(m, tx, ty, z);
                uint64_t n = a1 - tx < LONG_ROW_TILES ? a1 - tx : LONG_ROW_TILES;
                if (n > 1 && t->tile_base(m, tx + n - 1, ty, z) - base != (n - 1) * tbytes)
                    n = 1; /* not side by side: a tile at a time */
                unsigned char *tb = tiled + base, *lb = lband + ((tx - a0) << tw);
                if (snt && dir == TILE)
                    ops->swz_runs64_nt(tb, lb, row_pitch, xo, t->yo + (r0 & th_mask), zoff, (unsigned)n, r1 - r0,
                                       1u << t->run_log2);
                else if (snt)
                    ops->unswz_runs64_nt(tb, lb, row_pitch, xo, t->yo + (r0 & th_mask), zoff, (unsigned)n, r1 - r0,
                                         1u << t->run_log2);
                else
                    long_runs(t, tb, lb, row_pitch, zoff, xo, (unsigned)n, t->yo + (r0 & th_mask), r1 - r0, dir, ops);
                tx += n;
            }
        }
    }
    return true;
}

/* One instance per direction (a constant): with the direction a variable, the compiler kept
 * second copies of the helpers copy_tiles() calls (runs_aligned(), part_rows(), group_tiles())
 * and stopped inlining them into the walks of every layout (+0.4% instructions for a 64x64
 * D3D box, Callgrind). */
static __attribute__((noinline)) bool copy_long_rows_tile(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                          unsigned char *tiled, unsigned char *linear,
                                                          size_t row_pitch, size_t slice_pitch,
                                                          const struct vidmm_kernel_ops *ops, bool nt)
{
    return long_rows_body(m, b, tiled, linear, row_pitch, slice_pitch, TILE, ops, nt);
}

static __attribute__((noinline)) bool copy_long_rows_untile(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                            unsigned char *tiled, unsigned char *linear,
                                                            size_t row_pitch, size_t slice_pitch,
                                                            const struct vidmm_kernel_ops *ops, bool nt)
{
    return long_rows_body(m, b, tiled, linear, row_pitch, slice_pitch, UNTILE, ops, nt);
}

static inline __attribute__((always_inline)) bool copy_long_rows(const struct vidmm_swz_mip *m,
                                                                  const struct vidmm_box *b, unsigned char *tiled,
                                                                  unsigned char *linear, size_t row_pitch,
                                                                  size_t slice_pitch, enum dir dir,
                                                                  const struct vidmm_kernel_ops *ops,
                                                                  bool nt)
{
    const bool done = dir == TILE ? copy_long_rows_tile(m, b, tiled, linear, row_pitch, slice_pitch, ops, nt)
                                  : copy_long_rows_untile(m, b, tiled, linear, row_pitch, slice_pitch, ops, nt);
    if (nt && done)
        vidmm_arch_store_fence(); /* streaming stores are weakly ordered: visible before return */
    return done;
}

/* build_inverse() fills inv[g] = (row << 6) | run for every 16-byte granule g of a whole tile,
 * the inverse of the offset tables (offsets relative to a zero z term). Returns false when the
 * tile does not qualify - not 16-byte runs, thick (3D) tiles, more than 4096 granules (64 KiB),
 * or tables that are not a bijection onto the tile - and the caller then uses ordinary stores. */
#define INV_MAX 4096
static bool build_inverse(const struct vidmm_swz_tiles *t, uint16_t *inv)
{
    /* 16-byte runs, or 32-byte ones (merge_runs()) as two granules each. */
    if ((t->run_log2 != 4 && t->run_log2 != 5) || t->td_log2 != 0 || t->th_log2 > 8 || t->tw_log2 - 4 > 6)
        return false;
    const unsigned per = 1u << (t->run_log2 - 4);
    unsigned cols = 1u << (t->tw_log2 - t->run_log2), rows = 1u << t->th_log2, granules = cols * per * rows;
    if (granules > INV_MAX || granules % 4 != 0)
        return false;
    memset(inv, 0xff, granules * sizeof(*inv));
    for (unsigned r = 0; r < rows; r++) {
        for (unsigned c = 0; c < cols; c++) {
            for (unsigned k = 0; k < per; k++) {
                uint32_t off = (t->xo[c] ^ t->yo[r]) + 16 * k;
                if (off % 16 != 0 || off / 16 >= granules || inv[off / 16] != 0xffff)
                    return false;
                inv[off / 16] = (uint16_t)(r << 6 | (c * per + k));
            }
        }
    }
    return true;
}

/* plines16() tells whether a pair layout (t->pair16) has x4 right above y0, so that runs c, c + 1
 * (c even) of rows r, r + 1 (r even) are one aligned 64-byte line, row pairs in order
 * (kernel_ops.h swz_pairs16_nt): the GOB (tiling.md 2.2: x5 y2 y1 x4 y0 x3..x0). Asked only by
 * copies large enough for streaming stores: as a field set by vidmm_swz_prepare() its loop cost
 * every small one-shot copy 1% more instructions (Callgrind). */
static bool plines16(const struct vidmm_swz_tiles *t)
{
    if (!t->pair16 || t->tw_log2 < 5)
        return false;
    for (unsigned c = 0; c < 1u << (t->tw_log2 - 4); c += 2)
        if ((t->xo[c] & 63) != 0 || t->xo[c + 1] != (t->xo[c] ^ 32))
            return false;
    for (unsigned r = 0; r < 1u << t->th_log2; r += 2)
        if ((t->yo[r] & 63) != 0)
            return false;
    return true;
}

/* copy_tiles() with the streaming pair walk (choose_walk()), out of line. */
static __attribute__((noinline)) void copy_tiles_pairs_nt(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                          unsigned char *tiled, unsigned char *linear,
                                                          size_t row_pitch, size_t slice_pitch, enum dir dir,
                                                          const struct vidmm_kernel_ops *ops)
{
    copy_tiles(m, b, tiled, linear, row_pitch, slice_pitch, dir, NT_NONE, NULL, NULL, ops, false, STRIPS_NONE, true,
               false, false);
}

/* The walk chosen for one copy: run_copy() takes it, vidmm_swz_walk_of() reports it. */
struct walk_choice {
    bool reference;                     /* copy_box() */
    enum nt_walk nt_walk;
    enum strip_walk strip_walk;
    bool stream;                        /* streaming loads of whole tiles */
    bool grouped;                       /* tiles grouped per kernel call (no streaming stores) */
    bool pairs_nt;                      /* grouped, with the streaming pair kernels */
    bool long_nt;                       /* the long-row walk with streaming stores (long_rows_nt()) */
    bool lines;                         /* whole tiles of a swizzle in the cache through swz_lines16 */
    bool far;                           /* a deswizzle beyond the cache: its strips prefetch */
    const struct vidmm_kernel_ops *ops;
};

/* big_untile_strips() is the strip walk of a deswizzle larger than the streaming threshold (AUTO
 * strategy) of a layout the strips take: ordinary or streaming stores, or the tile walk instead,
 * as this kind of copy measured (vidmm_swz_linear_policy(): streaming strips won on a Sapphire
 * Rapids and a Zen 4, lost on a Cascade Lake; the tile walk beat the strips 1.3x for Morton's
 * 64 MiB deswizzle on the Zen 4 and lost to them on a Zen 3, choose_walk() has the figures). Out
 * of line, to keep choose_walk() (inlined before every copy) short. */
static __attribute__((noinline)) enum strip_walk big_untile_strips(const struct vidmm_swz_mip *m,
                                                                   const struct vidmm_kernel_ops *ops, bool strip16)
{
    const bool nt = strip16 ? ops->unswz_strip16_nt != NULL : ops->unswz_qstrip8_nt != NULL;
    switch (vidmm_swz_linear_policy(m, ops->backend, VIDMM_SWZ_LINEAR_STRIPS, nt)) {
    case VIDMM_SWZ_ANSWER_STREAM: return nt ? STRIPS_NT : STRIPS_CACHED;
    case VIDMM_SWZ_ANSWER_TILES: return STRIPS_NONE;
    default: return STRIPS_CACHED;
    }
}

/* choose_walk() picks the walk: the scalar backend is the reference (the address function per
 * run), every other backend takes the tile tables when the family provides them. 'tiled_addr'
 * is the tiled buffer's address (its alignment decides the streaming walks); 'inv' receives
 * the inverse tile table where a walk needs it. */
static inline __attribute__((always_inline)) void choose_walk(const struct vidmm_swz_mip *m, enum dir dir,
                                                              enum vidmm_backend backend,
                                                              enum vidmm_strategy strategy, uint64_t stream_bytes,
                                                              uintptr_t tiled_addr, uint16_t *inv,
                                                              struct walk_choice *w)
{
    const struct vidmm_kernel_ops *ops = vidmm_ops_get(backend);

    /* Inlined into both users, and no memset: this runs before every copy, and a small box's
     * whole copy is a few hundred instructions (Callgrind, tools/bench_gate.sh). */
    *w = (struct walk_choice){ .ops = ops };
    if (ops == NULL || m->tiles.tile_base == NULL || ops->backend == VIDMM_BACKEND_SCALAR) {
        w->reference = true;
        return;
    }
    /* Streaming stores when the destination is larger than the cache would keep (the copy
     * policy of copy.c), or when asked. */
    const bool big = strategy == VIDMM_STRATEGY_NONTEMPORAL ||
                     (strategy == VIDMM_STRATEGY_AUTO && stream_bytes >= vidmm_nt_threshold());
    const struct vidmm_swz_tiles *t = &m->tiles;
    enum nt_walk nt_walk = NT_NONE;
    /* The GOB's lines are two rows each (plines16()): the streaming pair walk builds each line
     * from a row pair and writes it whole, rows 4 KiB at a time. It replaced the row walk of
     * swz_rows16_nt, which leaves each line half-written until the next row: block-linear 64 MiB
     * swizzles ran at 0.31-0.47x memcpy that way against 0.60-0.68x with ordinary stores, and at
     * 0.89-0.97x with this walk (Intel Xeon, Cascade Lake, 2026-11-26). */
    bool pairs_nt = false;
    if (dir == TILE && big && ops->swz_pairs16_nt != NULL && (tiled_addr & 63) == 0 && plines16(t)) {
        pairs_nt = true;
    } else if (dir == TILE && big && (tiled_addr & 15) == 0) {
        if (t->lines && t->pair16 && ops->swz_lines16_nt != NULL && (tiled_addr & 63) == 0) {
            /* Four rows to a line (Intel Y / Tile4, D3D and AMD at 4 bytes): each line built
             * from four rows and written whole. */
            nt_walk = NT_LINES16;
        } else if (t->lines && t->quad8 && ops->swz_qlines8_nt != NULL && (tiled_addr & 63) == 0) {
            nt_walk = NT_QLINES8;
        } else if (ops->swz_tile16_nt != NULL && build_inverse(t, inv)) {
            /* Row order while one tile row touches at most four 64-byte lines (the GOB: two
             * rows complete them), so few write-combining buffers are open at once; address
             * order (the gather) otherwise: a D3D 64 KB row touches 16 lines and row order ran
             * 4x slower than ordinary stores there (Zen 3, 2026-11-22). */
            unsigned cols = 1u << (t->tw_log2 - t->run_log2), lines = 0;
            uint32_t seen[VIDMM_SWZ_MAX_XRUNS];
            for (unsigned c = 0; c < cols; c++) {
                uint32_t line = (t->xo[c] ^ t->yo[0]) >> 6;
                unsigned k = 0;
                while (k < lines && seen[k] != line)
                    k++;
                if (k == lines)
                    seen[lines++] = line;
            }
            nt_walk = lines <= 4 && t->run_log2 == 4 ? NT_ROWS : NT_GATHER; /* swz_rows16_nt: 16-byte runs */
            /* Intel's 4 KiB tiles (8 lines a row) gained nothing from either order over ordinary
             * stores (0.43-0.57x vs 0.64-0.81x memcpy at 64 MiB): streaming stores only where
             * they measured a win, the GOB in row order and tiles of 16 KiB and more gathered. */
            if (nt_walk == NT_GATHER && (1ull << (t->tw_log2 + t->th_log2)) < 16384)
                nt_walk = NT_NONE;
        }
    }
    /* Not to the linear side of a deswizzle: the pair and quad kernels write each row's 64 bytes
     * whole, but with streaming stores the deswizzle at 64 MiB fell from 1.13-1.33x to
     * 0.61-0.70x memcpy (block-linear) and from 0.72-0.83x to 0.55-0.71x (Intel Y), in the same
     * runs as the gains below (Zen 3, 2026-11-22): a tile's rows are 4-16 KiB apart, so the
     * streamed lines land scattered over 32+ pages instead of in one stream. */
    /* Streaming loads for a deswizzle from write-combined memory (asked for, never guessed):
     * whole tiles read line by line in address order; partial tiles at the box's edges take
     * ordinary loads. */
    bool stream = dir == UNTILE && strategy == VIDMM_STRATEGY_STREAM_LOAD && ops->swz_untile16_stream != NULL &&
                  (tiled_addr & 15) == 0 && build_inverse(t, inv);
    /* Tiles grouped per kernel call (group_tiles()) while the destination fits the cache: beyond,
     * the block-linear deswizzle of 64 MiB fell from 0.94-1.46x to 0.61-0.82x memcpy with them
     * (Zen 3, 2026-11-22). */
    /* Four-row strips (strips()), with ordinary stores: a deswizzle of every lines16 layout and
     * of Morton with 4-byte units at any size, a swizzle of them while the surface fits the
     * cache (beyond, the tile walk's streaming lines win); with
     * streaming stores a deswizzle of a lines16 layout asked for NONTEMPORAL. Against the tile
     * walk (Zen 3, 2026-11-22, 1024^2 / 4096^2 x 4 bytes, x memcpy, 2-3 runs each):
     *   4 MiB swizzle / deswizzle: Intel Y 0.72-0.76 / 0.63-0.73 -> 0.81-0.85 / 0.88; Tile4
     *   0.78-0.80 / 0.78-0.81 -> 0.98 / 1.01-1.04; D3D 4 KB 0.76 / 0.75-0.79 -> 0.87-0.89 / 0.92;
     *   D3D 64 KB 0.77-0.83 / 0.78-0.84 -> 0.89 / 0.91; AMD 64 KB R_X 0.80-0.89 / 0.76-0.87 ->
     *   0.93-0.95 / 0.95; Morton 0.63-0.72 / 0.65-0.68 -> 0.79-0.87 / 0.73-0.89.
     *   64 MiB deswizzle: Tile4 0.90-0.99 -> 1.10-1.12; D3D 64 KB 0.81-0.91 -> 0.90-1.07; D3D
     *   4 KB 0.73-0.79 -> 1.07-1.20; AMD 0.76-0.85 -> 0.79-0.96; Intel Y the same as with
     *   streaming strips (0.98-1.02 / 0.91-1.04), which had beaten the tile walk (0.72-0.89 against
     *   0.52-0.71); Morton 0.76-0.89 -> 0.81-0.92 in 7 of 7 paired runs of a quiet hour (7 earlier
     *   ones on a loaded machine were undecided, 0.54-0.83 against 0.59-0.87); streaming stores to
     *   its linear rows lost (0.70-0.73). */
    enum strip_walk strip_walk = STRIPS_NONE;
    const bool strip16 = t->lines && t->pair16 && ops->swz_strip16 != NULL && ops->unswz_strip16 != NULL;
    const bool qstrip8 = t->lines && t->quad8 && ops->swz_qstrip8 != NULL && ops->unswz_qstrip8 != NULL;
    if (!stream && dir == UNTILE && strategy == VIDMM_STRATEGY_NONTEMPORAL &&
        ((strip16 && ops->unswz_strip16_nt != NULL) || (qstrip8 && ops->unswz_qstrip8_nt != NULL)))
        strip_walk = STRIPS_NT;
    else if (dir == TILE && (nt_walk == NT_LINES16 || nt_walk == NT_QLINES8) && (strip16 || qstrip8) &&
             ops->swz_strip16_nt != NULL && ops->swz_qstrip8_nt != NULL)
        /* A large swizzle of a line layout: the strips with streaming stores, each line whole,
         * four rows across up to STRIP_TILES tiles at a time (the tile-by-tile line walk stays for
         * the tiles a strip cannot take). Against that walk, which reads 4 rows x one tile's width
         * at a time, 64 MiB swizzles went from 0.54-0.85x memcpy to 0.91-1.05x (Intel Y 0.54 ->
         * 0.91, Tile4 0.64-0.85 -> 0.96, D3D 64 KB 0.58 -> 0.93, Morton 0.56-0.61 -> 1.00; ordinary
         * stores 0.66-0.87) (Intel Xeon Cascade Lake, 2026-11-26, 11 paired rounds each). */
        strip_walk = STRIPS_NT;
    else if (!stream && (strip16 || qstrip8) && (!big || dir == UNTILE))
        strip_walk = VIDMM_UNLIKELY(dir == UNTILE && big && strategy == VIDMM_STRATEGY_AUTO)
                         ? big_untile_strips(m, ops, strip16)
                         : STRIPS_CACHED;
    /* Streaming stores to the linear rows of a deswizzle of a pair layout the strips do not take
     * (the GOB; D3D / AMD tables of 8- and 16-byte elements), each row's lines whole: when asked,
     * and by default for the GOB beyond the cache where the machine measured them faster
     * (vidmm_stream_linear_rows(), once per process: 0.55-0.72x -> 0.93-0.99x memcpy for
     * block-linear 64 MiB on a Cascade Lake, 2026-11-26; 10.0-11.2 -> 4.9-5.6 ms on a Zen 4,
     * 2026-12-01; on Zen 3 the same stores lost, 1.13-1.33x -> 0.61-0.70x, see above). Asked
     * last: a copy below the threshold never measures. */
    if (dir == UNTILE && !stream && strip_walk == STRIPS_NONE && t->pair16 && ops->unswz_pairs16_nt != NULL &&
        (strategy == VIDMM_STRATEGY_NONTEMPORAL ||
         (strategy == VIDMM_STRATEGY_AUTO && big && plines16(t) &&
          vidmm_swz_linear_policy(m, ops->backend, VIDMM_SWZ_LINEAR_PAIRS, false) == VIDMM_SWZ_ANSWER_STREAM)))
        pairs_nt = true;
    w->nt_walk = nt_walk;
    w->strip_walk = strip_walk;
    w->stream = stream;
    w->far = big && dir == UNTILE;
    /* A block-linear swizzle that fits half the L2 walks its GOB-wide tiles one at a time (where
     * the CPU kind's policy says so, vidmm_arch_gob_tile_walk_max()): against 512-byte groups,
     * same-process A/B rounds of whole surfaces of 4-byte elements on a Cascade Lake (2026-11-26,
     * 151-301 rounds, medians, quartiles within 3%): 128x128 1.11x faster, 256x256 1.30x, 512x128
     * 1.49x, 128x512 1.06x, 512x256 1.16x, 256x512 1.07x, 1024x128 1.15x, 4096x32 1.00x; beyond,
     * 512x512 0.98x, 2048x128 1.05x, 1024x1024 0.98x. The deswizzle keeps its groups (tile by tile
     * 0.65x at 256x256), and so do the strip layouts (2 or 8 tiles a strip instead of 256: 0.81-1.01x). */
    w->grouped = !big && !(dir == TILE && t->pair16 && !t->lines && t->tw_log2 == 6 &&
                           stream_bytes <= vidmm_arch_gob_tile_walk_max());
    w->pairs_nt = pairs_nt;
    /* A swizzle of a lines16 layout in the cache walks whole tiles a line at a time instead of
     * the four-row strips where the CPU kind's policy says so (vidmm_arch_lines_tile_walk()):
     * 4 MiB Intel Y 0.40 ms against 0.52 for the strips on an Emerald Rapids Xeon (the kernel,
     * kernels_template.h lines16_body(), has the figures; Mesa ISL's 0.81-0.88 -> 0.99-1.01).
     * Only where a run's next quad is the next line (y2 right above y1: Intel Y), so that the
     * four lines of a quad are four sequential streams: Tile4 (x4 there) lost, 0.99-1.05 ->
     * 0.90-0.93 of ISL at 4 MiB. On the Zen 3 the strips were chosen on, they beat the row-pair
     * tile walk this replaces (the figures above); the line walk was not measured there. And
     * only beyond half the L2 (the GOB's size policy, vidmm_arch_gob_tile_walk_max()): in it
     * the strips keep their edge, 64 KiB Intel Y 2.1-2.6 us against 2.3-2.7 (AVX2, forced walks
     * in one process) and 7% fewer instructions (the gate's swizzle/intel_y/128x128). */
    if (strip_walk == STRIPS_CACHED && dir == TILE && strip16 && ops->swz_lines16 != NULL && t->th_log2 >= 3 &&
        (t->yo[4] ^ t->yo[0]) == 64 && stream_bytes > vidmm_arch_gob_tile_walk_max() &&
        vidmm_arch_lines_tile_walk()) {
        w->strip_walk = STRIPS_NONE;
        w->lines = true;
    }
}

/* tuned_stream_bytes() is the size a copy of 'stream_bytes' is walked as under override 'tune'
 * (its side of the streaming threshold). */
static uint64_t tuned_stream_bytes(const struct vidmm_swz_tune *tune, enum vidmm_strategy strategy,
                                   uint64_t stream_bytes)
{
    if (tune != NULL && tune->big != VIDMM_SWZ_TUNE_AS && strategy == VIDMM_STRATEGY_AUTO) {
        const uint64_t thr = vidmm_nt_threshold() > 0 ? vidmm_nt_threshold() : 1;
        if (tune->big == VIDMM_SWZ_TUNE_ON && stream_bytes < thr)
            return thr;
        if (tune->big == VIDMM_SWZ_TUNE_OFF && stream_bytes >= thr)
            return thr - 1;
    }
    return stream_bytes;
}

/* apply_tune() is choose_walk() under a measured override (struct vidmm_swz_tune, chosen by
 * lib/kernels/swizzle_tune.c): the store side of the streaming threshold, then the strip walk,
 * the tile groups and the streaming pair walk each as asked, but only where the kernels and the
 * tiled buffer's alignment allow what choose_walk() itself would allow for them; an override
 * that does not apply leaves that part of the default. Every walk is an exact copy, so any
 * override gives the default's bytes. Only tuned plans come here (run_copy_tuned()); the
 * default path never tests the override. */
static inline __attribute__((always_inline)) void apply_tune(const struct vidmm_swz_mip *m, enum dir dir,
                                                             enum vidmm_backend backend,
                                                             enum vidmm_strategy strategy, uint64_t stream_bytes,
                                                             uintptr_t tiled_addr, uint16_t *inv,
                                                             const struct vidmm_swz_tune *tune,
                                                             struct walk_choice *w)
{
    stream_bytes = tuned_stream_bytes(tune, strategy, stream_bytes);
    choose_walk(m, dir, backend, strategy, stream_bytes, tiled_addr, inv, w);
    const struct vidmm_kernel_ops *ops = w->ops;
    if (w->reference)
        return;
    const struct vidmm_swz_tiles *t = &m->tiles;
    const bool strip16 = t->lines && t->pair16 && ops->swz_strip16 != NULL && ops->unswz_strip16 != NULL;
    const bool qstrip8 = t->lines && t->quad8 && ops->swz_qstrip8 != NULL && ops->unswz_qstrip8 != NULL;
    switch (tune->strips) {
    case VIDMM_SWZ_STRIPS_NONE:
        w->strip_walk = STRIPS_NONE;
        /* The tile walk of a lines16 swizzle in the cache: a line at a time (choose_walk()). */
        if (dir == TILE && strip16 && ops->swz_lines16 != NULL && w->nt_walk == NT_NONE && !w->stream &&
            !w->pairs_nt)
            w->lines = true;
        break;
    case VIDMM_SWZ_STRIPS_CACHED:
        if (!w->stream && (strip16 || qstrip8))
            w->strip_walk = STRIPS_CACHED;
        break;
    case VIDMM_SWZ_STRIPS_NT:
        if (dir == TILE ? (strip16 || qstrip8) && ops->swz_strip16_nt != NULL && ops->swz_qstrip8_nt != NULL
                        : !w->stream && ((strip16 && ops->unswz_strip16_nt != NULL) ||
                                         (qstrip8 && ops->unswz_qstrip8_nt != NULL)))
            w->strip_walk = STRIPS_NT;
        break;
    default:
        break;
    }
    if (tune->grouped != VIDMM_SWZ_TUNE_AS)
        w->grouped = tune->grouped == VIDMM_SWZ_TUNE_ON;
    if (tune->pairs_nt == VIDMM_SWZ_TUNE_OFF) {
        w->pairs_nt = false;
    } else if (tune->pairs_nt == VIDMM_SWZ_TUNE_ON && !w->stream) {
        if (dir == TILE ? ops->swz_pairs16_nt != NULL && (tiled_addr & 63) == 0 && plines16(t)
                        : t->pair16 && ops->unswz_pairs16_nt != NULL)
            w->pairs_nt = true;
    }
    if (w->pairs_nt) {
        /* The pair walk runs alone (copy_tiles_pairs_nt()): what else was chosen is moot. */
        w->nt_walk = NT_NONE;
        w->strip_walk = STRIPS_NONE;
        w->grouped = false;
    }
    if (w->nt_walk != NT_NONE || w->strip_walk != STRIPS_NONE)
        w->lines = false; /* whole tiles stream, or the strips take them */
}

/* run_walk() moves box 'b' with the walk 'w' (choose_walk() or apply_tune()). Forced inline
 * into both run_copy() and run_copy_tuned(), so that the default path compiles as it did when
 * this was run_copy()'s own body. */
static inline __attribute__((always_inline)) void run_walk(const struct walk_choice *w,
                                                           const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                           unsigned char *tiled, unsigned char *linear,
                                                           size_t row_pitch, size_t slice_pitch, enum dir dir,
                                                           const uint16_t *inv)
{
    if (w->reference) {
        copy_box(m, b, tiled, linear, row_pitch, slice_pitch, dir);
        return;
    }
    const struct vidmm_swz_tiles *t = &m->tiles;
    const uint64_t x0 = (uint64_t)b->x * m->elem, x1 = x0 + (uint64_t)b->width * m->elem;
    if (b->height == 1 && b->depth == 1 && t->run_log2 == 4 && ((x0 | x1) & 15) == 0 && w->nt_walk == NT_NONE &&
        !w->stream && !w->pairs_nt && w->strip_walk != STRIPS_NT) {
        /* A box one row tall (row_runs16(); here rather than in copy_tiles(), whose other walks
         * then keep their register allocation: inside, small boxes of other layouts took up to
         * 1.4% more instructions). */
        const uint32_t zoff = t->zo[b->z & ((1u << t->td_log2) - 1)];
        row_runs16(t, m, tiled, linear, x0, x1, b->y >> t->th_log2, b->z >> t->td_log2,
                   t->yo[b->y & ((1u << t->th_log2) - 1)] ^ zoff, dir);
        return;
    }
    /* copy_tiles() instantiated twice: the streaming pair walk's remainder groups cost the
     * other walks' small boxes 1-2% more instructions when it was one function (Callgrind). */
    if (w->pairs_nt)
        copy_tiles_pairs_nt(m, b, tiled, linear, row_pitch, slice_pitch, dir, w->ops);
    else
        copy_tiles(m, b, tiled, linear, row_pitch, slice_pitch, dir, w->nt_walk, inv, w->stream ? w->ops : NULL,
                   w->ops, w->grouped, w->strip_walk, false, w->lines, w->far);
    if (w->strip_walk == STRIPS_NT || w->nt_walk != NT_NONE || w->pairs_nt)
        vidmm_arch_store_fence(); /* streaming stores are weakly ordered: visible before return */
}

/* long_rows_walk() tells whether copy_long_rows() may take a box with walk 'w' (long_rows_try()
 * and run_copy_tuned(); not in run_walk() or run_copy(), whose inlined walks the test and call
 * cost other layouts' 64x64 boxes 0.3-0.4% more instructions, Callgrind). */
static inline __attribute__((always_inline)) bool long_rows_walk(const struct walk_choice *w,
                                                                 const struct vidmm_swz_mip *m)
{
    const struct vidmm_swz_tiles *t = &m->tiles;
    return !w->reference && t->tile_base != NULL && t->run_log2 >= 6 && t->run_log2 == t->tw_log2 &&
           t->tw_log2 <= 12 && w->nt_walk == NT_NONE && !w->stream && !w->pairs_nt && w->strip_walk == STRIPS_NONE;
}


/* long_rows_nt() tells whether the long-row walk (a layout whose run is a whole tile row, Intel
 * X) writes its destination with streaming stores: under 'tune' (its pairs_nt, the streaming
 * walk of the layout) when it says, else for a copy beyond the streaming threshold (AUTO) or
 * asked NONTEMPORAL - a swizzle's tile rows always (each 512-byte row is 8 whole lines written
 * in order, where the 16-byte gather of swz_tile16_nt had gained nothing), a deswizzle's linear
 * rows as this kind of copy measured (vidmm_swz_linear_policy(), VIDMM_SWZ_LINEAR_LONG).
 * 8192 x 8192 bytes (64 MiB), ordinary stores -> streaming (Zen 4, 2026-12-02, bench_swizzle_tune
 * 5 64 intel_x, medians of 5, quiet): swizzle 7.4-8.9 -> 3.5-3.7 ms, deswizzle 7.4-8.5 -> 4.9-5.9.
 * 'tiled_addr' is the tiled buffer's address: a swizzle streams only into an aligned one. */
static __attribute__((noinline)) bool long_rows_nt(const struct vidmm_swz_mip *m, enum dir dir,
                                                   const struct vidmm_kernel_ops *ops, enum vidmm_strategy strategy,
                                                   uint64_t stream_bytes, uintptr_t tiled_addr,
                                                   const struct vidmm_swz_tune *tune)
{
    if (dir == TILE ? ops->swz_runs64_nt == NULL || (tiled_addr & 63) != 0 : ops->unswz_runs64_nt == NULL)
        return false;
    if (tune != NULL && tune->pairs_nt != VIDMM_SWZ_TUNE_AS)
        return tune->pairs_nt == VIDMM_SWZ_TUNE_ON;
    if (strategy == VIDMM_STRATEGY_NONTEMPORAL)
        return true;
    if (strategy != VIDMM_STRATEGY_AUTO || tuned_stream_bytes(tune, strategy, stream_bytes) < vidmm_nt_threshold())
        return false;
    return dir == TILE ||
           vidmm_swz_linear_policy(m, ops->backend, VIDMM_SWZ_LINEAR_LONG, false) == VIDMM_SWZ_ANSWER_STREAM;
}

/* run_copy() copies with the walk choose_walk() picks. */
static void run_copy(const struct vidmm_swz_mip *m, const struct vidmm_box *b, unsigned char *tiled,
                     unsigned char *linear, size_t row_pitch, size_t slice_pitch, enum dir dir,
                     enum vidmm_backend backend, enum vidmm_strategy strategy, uint64_t stream_bytes)
{
    uint16_t inv[INV_MAX];
    struct walk_choice w;

    choose_walk(m, dir, backend, strategy, stream_bytes, (uintptr_t)tiled, inv, &w);
    run_walk(&w, m, b, tiled, linear, row_pitch, slice_pitch, dir, inv);
}

/* run_copy_tuned() copies with the walk of a measured override (apply_tune()). Out of line and
 * separate from run_copy(), so that the default path carries none of it. */
static __attribute__((noinline)) void run_copy_tuned(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                     unsigned char *tiled, unsigned char *linear, size_t row_pitch,
                                                     size_t slice_pitch, enum dir dir, enum vidmm_backend backend,
                                                     enum vidmm_strategy strategy, uint64_t stream_bytes,
                                                     const struct vidmm_swz_tune *tune)
{
    uint16_t inv[INV_MAX];
    struct walk_choice w;

    apply_tune(m, dir, backend, strategy, stream_bytes, (uintptr_t)tiled, inv, tune, &w);
    if (long_rows_walk(&w, m) &&
        copy_long_rows(m, b, tiled, linear, row_pitch, slice_pitch, dir, w.ops,
                       long_rows_nt(m, dir, w.ops, strategy, stream_bytes, (uintptr_t)tiled, tune)))
        return;
    run_walk(&w, m, b, tiled, linear, row_pitch, slice_pitch, dir, inv);
}

/* long_rows_try() copies box 'b' with copy_long_rows() where the walk choose_walk() picks
 * allows it (ordinary stores, no strips, no streaming loads) and returns true; false (nothing
 * copied) otherwise. Called by vidmm_swz_run() before run_copy(), out of line: a call inside
 * run_copy() cost every layout's 64x64 boxes 0.4% more instructions (its inlined walks
 * allocated their registers around it). */
static __attribute__((noinline)) bool long_rows_try(const struct vidmm_swz_mip *m, const struct vidmm_box *b,
                                                    unsigned char *tiled, unsigned char *linear, size_t row_pitch,
                                                    size_t slice_pitch, enum vidmm_swz_dir dir,
                                                    enum vidmm_backend backend, enum vidmm_strategy strategy,
                                                    uint64_t stream_bytes)
{
    uint16_t inv[INV_MAX];
    struct walk_choice w;
    const enum dir d = dir == VIDMM_SWZ_TILE ? TILE : UNTILE;
    choose_walk(m, d, backend, strategy, stream_bytes, (uintptr_t)tiled, inv, &w);
    return long_rows_walk(&w, m) &&
           copy_long_rows(m, b, tiled, linear, row_pitch, slice_pitch, d, w.ops,
                          long_rows_nt(m, d, w.ops, strategy, stream_bytes, (uintptr_t)tiled, NULL));
}

void vidmm_swz_run(const struct vidmm_swz_mip *m, const struct vidmm_box *b, unsigned char *tiled,
                   unsigned char *linear, size_t row_pitch, size_t slice_pitch, enum vidmm_swz_dir dir,
                   enum vidmm_backend backend, enum vidmm_strategy strategy, uint64_t stream_bytes)
{
    if (VIDMM_UNLIKELY(m->tiles.run_log2 == m->tiles.tw_log2) && m->tiles.tw_log2 <= 12 &&
        m->tiles.tile_base != NULL &&
        long_rows_try(m, b, tiled, linear, row_pitch, slice_pitch, dir, backend, strategy, stream_bytes))
        return;
    /* One call per direction, each with a constant: the compiler specialises run_copy() and the
     * walks it inlines per direction, as it did while the callers lived in this file. Passing
     * the direction through made every run test it, 3-9% more instructions for a small copy
     * (Callgrind, tools/bench_gate.sh). */
    if (dir == VIDMM_SWZ_TILE)
        run_copy(m, b, tiled, linear, row_pitch, slice_pitch, TILE, backend, strategy, stream_bytes);
    else
        run_copy(m, b, tiled, linear, row_pitch, slice_pitch, UNTILE, backend, strategy, stream_bytes);
}

/* walk_name() is the public name of walk 'w' for a copy in direction 'dir'. */
static enum vidmm_swz_walk walk_name(const struct walk_choice *w, enum dir dir)
{
    if (w->reference)
        return VIDMM_SWZ_WALK_REFERENCE;
    if (w->stream)
        return VIDMM_SWZ_WALK_STREAM_LOAD;
    if (w->strip_walk == STRIPS_NT)
        return VIDMM_SWZ_WALK_STRIPS_NT;
    if (w->strip_walk == STRIPS_CACHED)
        return VIDMM_SWZ_WALK_STRIPS;
    if (w->pairs_nt || w->long_nt)
        return dir == TILE ? VIDMM_SWZ_WALK_TILES_NT : VIDMM_SWZ_WALK_TILES_NT_LINEAR;
    return w->nt_walk != NT_NONE ? VIDMM_SWZ_WALK_TILES_NT : VIDMM_SWZ_WALK_TILES;
}

enum vidmm_swz_walk vidmm_swz_walk_of(const struct vidmm_swz_mip *m, enum vidmm_swz_dir dir,
                                      enum vidmm_backend backend, enum vidmm_strategy strategy,
                                      uint64_t stream_bytes)
{
    uint16_t inv[INV_MAX];
    struct walk_choice w;

    const enum dir d = dir == VIDMM_SWZ_TILE ? TILE : UNTILE;
    choose_walk(m, d, backend, strategy, stream_bytes, 0, inv, &w);
    w.long_nt = long_rows_walk(&w, m) && long_rows_nt(m, d, w.ops, strategy, stream_bytes, 0, NULL);
    return walk_name(&w, d);
}

/* ---------------------------------------------------------------------------------------------
 * Measured overrides (issue 26, measured plans; the measuring is lib/kernels/swizzle_tune.c).
 * ------------------------------------------------------------------------------------------- */

void vidmm_swz_run_tuned(const struct vidmm_swz_mip *m, const struct vidmm_box *b, unsigned char *tiled,
                         unsigned char *linear, size_t row_pitch, size_t slice_pitch, enum vidmm_swz_dir dir,
                         enum vidmm_backend backend, enum vidmm_strategy strategy, uint64_t stream_bytes,
                         const struct vidmm_swz_tune *tune)
{
    if (dir == VIDMM_SWZ_TILE)
        run_copy_tuned(m, b, tiled, linear, row_pitch, slice_pitch, TILE, backend, strategy, stream_bytes, tune);
    else
        run_copy_tuned(m, b, tiled, linear, row_pitch, slice_pitch, UNTILE, backend, strategy, stream_bytes, tune);
}

enum vidmm_swz_walk vidmm_swz_walk_of_tuned(const struct vidmm_swz_mip *m, enum vidmm_swz_dir dir,
                                            enum vidmm_backend backend, enum vidmm_strategy strategy,
                                            uint64_t stream_bytes, const struct vidmm_swz_tune *tune)
{
    uint16_t inv[INV_MAX];
    struct walk_choice w;
    const enum dir d = dir == VIDMM_SWZ_TILE ? TILE : UNTILE;

    apply_tune(m, d, backend, strategy, stream_bytes, 0, inv, tune, &w);
    w.long_nt = long_rows_walk(&w, m) && long_rows_nt(m, d, w.ops, strategy, stream_bytes, 0, tune);
    return walk_name(&w, d);
}

/* same_walk() tells whether two walks move the bytes the same way: the fields copy_tiles()
 * reads, with those a walk ignores left out ('grouped' without a pair or quad kernel to group
 * with, or under streaming stores of the tile walk). */
static bool same_walk(const struct vidmm_swz_mip *m, const struct walk_choice *a, const struct walk_choice *b)
{
    const struct vidmm_swz_tiles *t = &m->tiles;
    const struct vidmm_kernel_ops *ops = a->ops;
    const bool groups = ops != NULL && ((t->pair16 && ops->swz_pairs16 != NULL) || (t->quad8 && ops->swz_quads8 != NULL)) &&
                        t->tw_log2 < 31 && (GROUP_ROW_BYTES >> t->tw_log2) > 1;
    const bool ga = groups && a->grouped && a->nt_walk == NT_NONE && !a->stream && !a->lines;
    const bool gb = groups && b->grouped && b->nt_walk == NT_NONE && !b->stream && !b->lines;
    return a->reference == b->reference && a->nt_walk == b->nt_walk && a->strip_walk == b->strip_walk &&
           a->stream == b->stream && a->pairs_nt == b->pairs_nt && a->long_nt == b->long_nt && ga == gb &&
           a->lines == b->lines;
}

unsigned vidmm_swz_tune_candidates(const struct vidmm_swz_mip *m, enum vidmm_swz_dir dir, enum vidmm_backend backend,
                                   enum vidmm_strategy strategy, uint64_t stream_bytes, struct vidmm_swz_tune *out,
                                   unsigned max)
{
    static const uint8_t bigs[] = { VIDMM_SWZ_TUNE_AS, VIDMM_SWZ_TUNE_OFF, VIDMM_SWZ_TUNE_ON };
    static const uint8_t strips[] = { VIDMM_SWZ_TUNE_AS, VIDMM_SWZ_STRIPS_NONE, VIDMM_SWZ_STRIPS_CACHED,
                                      VIDMM_SWZ_STRIPS_NT };
    static const uint8_t tri[] = { VIDMM_SWZ_TUNE_AS, VIDMM_SWZ_TUNE_OFF, VIDMM_SWZ_TUNE_ON };
    struct walk_choice seen[VIDMM_SWZ_MAX_CANDIDATES];
    uint16_t inv[INV_MAX];
    const enum dir d = dir == VIDMM_SWZ_TILE ? TILE : UNTILE;
    unsigned n = 0;

    if (max > VIDMM_SWZ_MAX_CANDIDATES)
        max = VIDMM_SWZ_MAX_CANDIDATES;
    /* The all-"as chosen" override comes first: it is the default walk. */
    for (unsigned i = 0; i < sizeof(bigs); i++)
        for (unsigned j = 0; j < sizeof(strips); j++)
            for (unsigned k = 0; k < sizeof(tri); k++)
                for (unsigned q = 0; q < sizeof(tri); q++) {
                    const struct vidmm_swz_tune c = { bigs[i], strips[j], tri[k], tri[q] };
                    struct walk_choice w;
                    apply_tune(m, d, backend, strategy, stream_bytes, 0, inv, &c, &w);
                    w.long_nt = long_rows_walk(&w, m) && long_rows_nt(m, d, w.ops, strategy, stream_bytes, 0, &c);
                    unsigned s = 0;
                    while (s < n && !same_walk(m, &seen[s], &w))
                        s++;
                    if (s < n || n >= max)
                        continue;
                    seen[n] = w;
                    out[n++] = c;
                }
    return n;
}
