/* SPDX-License-Identifier: MIT */
/* lib/kernels/kernel_ops.h - the table of kernels each backend provides, and the dispatcher. */
#ifndef VIDMM_LIB_KERNELS_KERNEL_OPS_H
#define VIDMM_LIB_KERNELS_KERNEL_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "vidmm/kernels.h"

/* One table per backend. The kernels are the bare loops: arguments are valid (the public entry
 * points check them), ranges do not overlap, and no kernel issues a fence - the caller
 * (lib/kernels/copy.c, fill.c) fences once at the end, as the memory kind requires.
 *
 * copy        n bytes with ordinary (temporal) stores.
 * copy_nt     every whole, 64-byte-aligned line of the destination range is written with
 *             streaming (non-temporal) stores; the partial first and last lines (< 64 bytes each)
 *             with ordinary stores. The destination is never read. When 'streaming' is false
 *             the backend has no streaming stores and copy_nt is an ordinary copy.
 * copy_stream n bytes read with streaming loads (MOVNTDQA) from every aligned vector of the
 *             source, ordinary loads for the unaligned head and tail; ordinary stores.
 * fill        n bytes (any n; byte i = byte i % 4 of the little-endian pattern), ordinary stores.
 * fill_nt     as fill, whole lines with streaming stores, like copy_nt. */
/* The strip kernels' signatures (swz_strip16 and the others below). */
typedef void (*vidmm_swz_strip_fn)(unsigned char *tiled, const unsigned char *lin, size_t row_pitch,
                                   const uint32_t *tbase, unsigned ntile, const uint32_t *xo, unsigned cols,
                                   const uint32_t *yo, uint32_t zoff, unsigned nquads);
typedef void (*vidmm_unswz_strip_fn)(const unsigned char *tiled, unsigned char *lin, size_t row_pitch,
                                     const uint32_t *tbase, unsigned ntile, const uint32_t *xo, unsigned cols,
                                     const uint32_t *yo, uint32_t zoff, unsigned nquads, const unsigned char *pf,
                                     unsigned pf_lines);

struct vidmm_kernel_ops {
    const char *name;
    enum vidmm_backend backend;
    bool streaming;       /* copy_nt/fill_nt really use streaming stores */
    bool stream_loads;    /* copy_stream really uses streaming loads */
    void (*copy)(void *restrict dst, const void *restrict src, size_t n);
    void (*copy_nt)(void *restrict dst, const void *restrict src, size_t n);
    void (*copy_stream)(void *restrict dst, const void *restrict src, size_t n);
    void (*fill)(void *dst, uint32_t pattern, size_t n);
    void (*fill_nt)(void *dst, uint32_t pattern, size_t n);
    /* Swizzle: writes one whole tile of 'granules' 16-byte granules in address order with
     * streaming stores: granule g (at tile + 16 g) comes from linear row e >> 6, run e & 63,
     * where e = inv[g ^ gxor] (the inverse of the tile's offset tables, swizzle.c). 'tile' is
     * 16-byte aligned. NULL in a table without streaming stores. */
    void (*swz_tile16_nt)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint16_t *inv,
                          unsigned granules, unsigned gxor);
    /* Deswizzle: reads one whole tile in address order with streaming loads (MOVNTDQA, for a
     * write-combined tiled source: whole lines, back to back) and scatters its granules to the
     * linear rows through the same inverse table. Ordinary loads where the backend has no
     * streaming loads ('stream_loads' false). NULL in the scalar table. */
    void (*swz_untile16_stream)(const unsigned char *tile, unsigned char *lin, size_t row_pitch,
                                const uint16_t *inv, unsigned granules, unsigned gxor);
    /* The same tile written row by row instead (run c of row r to tile + (xo[c] ^ yo[r] ^ zoff)),
     * for layouts where one row of a tile touches few lines, so few lines are open at once. */
    void (*swz_rows16_nt)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                          const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows);
    /* Row pairs, for layouts whose address bit right above the 16-byte run is y0 (the GOB, Intel Y
     * and Tile4, the D3D / AMD 2D tables; tiling.md 2.2): run c of rows r and r + 1 (r even) is
     * one 32-byte granule at tile + (xo[c] ^ yo[r] ^ zoff), row r's 16 bytes first. swz_pairs16
     * moves rows [0, 2 npairs) x runs [0, ncols) from the linear rows (row r at lin +
     * r * row_pitch, run c at + 16 c) into the tile with ordinary stores; unswz_pairs16 the other
     * way. Only yo[0], yo[2], ... are read. NULL in the scalar table (the reference walk). */
    void (*swz_pairs16)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                        const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs);
    void (*unswz_pairs16)(const unsigned char *tile, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                          const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs);
    /* The same with streaming stores. swz_pairs16_nt: for the pair-line layout (the GOB: bit 5
     * above y0 is x4, so runs c, c + 1 (c even) of rows r, r + 1 are one 64-byte line, xo[c + 1]
     * == xo[c] ^ 32 with bits 4 and 5 clear in xo[c] and yo[r]), each line written whole and back
     * to back; 'tile' + every line 64-byte aligned, ncols even. unswz_pairs16_nt: each linear
     * row's 16 * ncols bytes written in order; 'lin' and 'row_pitch' multiples of 64. Runs left
     * over from groups of four take ordinary stores. No fence. NULL in the scalar table. */
    void (*swz_pairs16_nt)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                           const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs);
    void (*unswz_pairs16_nt)(const unsigned char *tile, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                             const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs);
    /* Long runs: rows [0, nrows) x runs [0, ncols) of 'run' bytes (64 <= run, a multiple of 64)
     * between the tile (run c of row r at tile + (xo[c] ^ yo[r] ^ zoff)) and the linear rows (at
     * lin + r * row_pitch + run * c), whole vectors, ordinary stores: Intel X's 512-byte tile rows
     * (64 bytes with the bit-6 swizzle). NULL in the scalar table. */
    void (*swz_runs64)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                       const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run);
    void (*unswz_runs64)(const unsigned char *tile, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                         const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run);
    /* The same with streaming stores to the destination (the tile for swz_, the linear rows for
     * unswz_), which must be aligned to the backend's vector: for large copies (swizzle_walk.c
     * long_rows_nt()). NULL in the scalar table. */
    void (*swz_runs64_nt)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                          const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run);
    void (*unswz_runs64_nt)(const unsigned char *tile, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                            const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nrows, unsigned run);
    /* Quads, for 8-byte runs whose next address bits are y0, then x at the run's scale (Morton with
     * 4-byte units, tiling.md 6.1: x0 y0 x1 y1 ...): runs c, c + 1 (c even) of rows r, r + 1
     * (r even) are one 32-byte block at tile + (xo[c] ^ yo[r] ^ zoff): row r run c, row r + 1
     * run c, row r run c + 1, row r + 1 run c + 1. Moves rows [0, 2 npairs) x runs [0, ncols)
     * (run c at lin + 8 c); ncols may be odd (the last run of each row pair then moves as a
     * 16-byte granule). NULL in the scalar table. */
    void (*swz_quads8)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                       const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs);
    void (*unswz_quads8)(const unsigned char *tile, unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                         const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned npairs);
    /* Whole 64-byte lines of a swizzle with streaming stores, for layouts whose line is four rows:
     * swz_lines16_nt when the pair layout above also has y1 right above y0 (yo[r + 2] ==
     * yo[r] ^ 32 for r % 4 == 0, bit 5 clear in yo[r] and in every xo[c]: Intel Y and Tile4, the
     * D3D / AMD tables of 4-byte elements): the line at tile + (xo[c] ^ yo[r] ^ zoff) holds run c
     * of rows r, r + 1, r + 2, r + 3. swz_qlines8_nt the same for the quad layout (Morton with
     * 4-byte units): the quads of rows r, r + 1 and r + 2, r + 3 at xo[c] (c even) are one line.
     * Rows [0, 4 nquads) x runs [0, ncols) (ncols even for qlines8); every line offset 64-byte
     * aligned and 'tile' 32-byte aligned. No fence. NULL in the scalar table. */
    void (*swz_lines16_nt)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                           const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nquads);
    /* swz_lines16: the same lines with ordinary stores, for a swizzle that fits the cache: four
     * runs of the four rows at a time, each linear line read once (no alignment asked; runs left
     * over from groups of four move 16 bytes at a time). NULL in the scalar table. */
    void (*swz_lines16)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                        const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nquads);
    void (*swz_qlines8_nt)(unsigned char *tile, const unsigned char *lin, size_t row_pitch, const uint32_t *xo,
                           const uint32_t *yo, uint32_t zoff, unsigned ncols, unsigned nquads);
    /* Strips of four rows across 'ntile' tiles of a lines16 layout (swz_lines16_nt above), the
     * tiles at tiled + tbase[g] (each a multiple of the tables' span apart), each of 'cols' runs
     * (xo[0 .. cols), at most 64) and 16 * cols linear bytes: rows [0, 4 nquads), quads outer,
     * tiles inner, each line built from or split into its four rows whole. The deswizzle takes
     * cols a multiple of 4. unswz_strip16_nt writes the linear rows with streaming stores ('lin'
     * and 'row_pitch' 32-byte aligned; no fence). Every line 64-byte aligned. The deswizzles also
     * prefetch 'pf_lines' 64-byte lines from 'pf' into L2 (the source of the strip that follows,
     * which the walk passes beyond the cache), a line for each line read, in address order; with
     * pf_lines 0 the streaming one prefetches the next quad's lines instead. NULL in the scalar
     * table. */
    vidmm_swz_strip_fn swz_strip16, swz_strip16_nt;
    vidmm_unswz_strip_fn unswz_strip16, unswz_strip16_nt;
    /* The same strips for the Morton quad layout (swz_qlines8_nt above): 'cols' 8-byte runs a
     * tile, a multiple of 4, 8 * cols linear bytes each. unswz_qstrip8_nt writes the linear rows
     * with streaming stores (as unswz_strip16_nt). NULL in the scalar table. */
    vidmm_swz_strip_fn swz_qstrip8, swz_qstrip8_nt;
    vidmm_unswz_strip_fn unswz_qstrip8, unswz_qstrip8_nt;
};

extern const struct vidmm_kernel_ops vidmm_ops_scalar;
#ifdef VIDMM_HAVE_SSE2_BACKEND
extern const struct vidmm_kernel_ops vidmm_ops_sse2;
#endif
#ifdef VIDMM_HAVE_AVX2_BACKEND
extern const struct vidmm_kernel_ops vidmm_ops_avx2;
#endif
#ifdef VIDMM_HAVE_AVX512_BACKEND
extern const struct vidmm_kernel_ops vidmm_ops_avx512;
#endif

/* vidmm_ops_active() returns the dispatcher's table, choosing it on the first call. The fast
 * path is inline (one acquire load, pairing with the release store in vidmm_ops_select()), since
 * every kernel call goes through it; vidmm_ops_select() makes the choice. */
extern _Atomic(const struct vidmm_kernel_ops *) vidmm_active_ops;
const struct vidmm_kernel_ops *vidmm_ops_select(void);

static inline const struct vidmm_kernel_ops *vidmm_ops_active(void)
{
    const struct vidmm_kernel_ops *ops = atomic_load_explicit(&vidmm_active_ops, memory_order_acquire);
    return ops != NULL ? ops : vidmm_ops_select();
}

/* vidmm_ops_get() returns the table of backend 'b' (AUTO = the active one), or NULL when it is
 * not compiled in or not usable on this CPU. */
const struct vidmm_kernel_ops *vidmm_ops_get(enum vidmm_backend b);

/* vidmm_cpu_usable() returns the VIDMM_CPU_* features the CPU and OS support, minus those masked
 * by VIDMM_DISABLE_CPU_FEATURES. Resolved once (see dispatch.c). */
uint64_t vidmm_cpu_usable(void);

/* vidmm_nt_threshold() is the size at which copies and fills to cached memory switch to
 * streaming stores: VIDMM_NT_THRESHOLD, else the last-level cache size. */
size_t vidmm_nt_threshold(void);

/* vidmm_read_kernel_opts() validates 'opts' (NULL = all AUTO) into 'backend' and 'strategy'.
 * Returns 0 or VIDMM_E_INVALID_ARG. */
int vidmm_read_kernel_opts(const struct vidmm_kernel_opts *opts, enum vidmm_backend *backend,
                           enum vidmm_strategy *strategy);

/* vidmm_finish_stores() completes a copy or fill of [dst, dst + n) for memory kind 'kind':
 * NONCOHERENT writes back what ordinary stores left in the cache (all of it, or only the partial
 * edge lines when 'streamed'), and streaming or WC stores get their store fence. */
void vidmm_finish_stores(void *dst, size_t n, enum vidmm_mem_kind kind, bool streamed);

/* vidmm_wc_reset() forgets the copy-to-WC calibration (copy.c). */
void vidmm_wc_reset(void);

/* vidmm_stream_linear_rows() is the store policy vidmm_cpu_info() reports
 * (VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS): swizzle_internal.h vidmm_swz_linear_policy() for a
 * block-linear band of 4-byte elements and the active backend, resolved once.
 * vidmm_stream_linear_reset() forgets it and every kind's measurement (swizzle_tune.c). */
bool vidmm_stream_linear_rows(void);
void vidmm_stream_linear_reset(void);

/* Little helpers shared by the portable kernels. */
static inline uint32_t vidmm_rotr32(uint32_t v, unsigned r)
{
    r &= 31u;
    return r ? (v >> r) | (v << (32u - r)) : v;
}

/* The pattern as seen from a byte that is 'phase' bytes into the fill (phase taken mod 4). */
static inline uint32_t vidmm_pattern_at(uint32_t pattern, size_t phase)
{
    return vidmm_rotr32(pattern, (unsigned)(phase & 3u) * 8u);
}

#endif /* VIDMM_LIB_KERNELS_KERNEL_OPS_H */
