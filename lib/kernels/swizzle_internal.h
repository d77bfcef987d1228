/* SPDX-License-Identifier: MIT */
/* lib/kernels/swizzle_internal.h - what the swizzle copy engine (swizzle.c) asks of each layout
 * family (swizzle_bl.c, swizzle_intel.c, swizzle_morton.c, swizzle_eq.c, and LINEAR in
 * swizzle.c): validation, sizes, and the address of any byte of any subresource.
 *
 * The model (shared/spec/tiling.md section 8): every layout is an address function of
 * (mip, layer, xb, y, z) with xb in bytes, and every layout stores aligned runs of 2^run_log2
 * bytes of a row contiguously. The reference copy walks each row of a box run by run and maps
 * each run through the address function; fast paths specialise per family on top. */
#ifndef VIDMM_LIB_KERNELS_SWIZZLE_INTERNAL_H
#define VIDMM_LIB_KERNELS_SWIZZLE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "vidmm/kernels.h"
#include "vidmm/swizzle.h"

/* A validated copy of the public descriptors (read once, so a caller changing them mid-call
 * cannot make the library disagree with itself). */
struct vidmm_swz_surface {
    struct vidmm_tile_layout layout;     /* 'equation' copied into 'eq' when EQUATION */
    struct vidmm_equation eq;
    uint32_t width, height, depth;       /* pixels */
    uint32_t elem;                       /* element bytes */
    uint32_t bw, bh;                     /* compressed block in pixels */
    uint32_t mips, layers;
    const char *call;                    /* the public call that opened it, for refusal lines */
    bool refused;                        /* a family's check() logged its refusal's line itself */
    /* Family-private results of check(), read by total() and resolve() of the same call, so that
     * work such as analysing an equation happens once per call rather than three times. */
    bool priv_valid;
    _Alignas(16) unsigned char priv[1024];
};

/* The fast path's description of a layout (optional, filled by a family's resolve()):
 * the subresource is cut into tiles of 2^tw_log2 bytes x 2^th_log2 rows x 2^td_log2 slices;
 * inside a tile, the byte at (u, v, w) (tile-relative byte column, row, slice) is at
 *     tile_base(tx, ty, tz) + (xo[u >> run_log2] ^ yo[v] ^ zo[w]) + (u & (2^run_log2 - 1))
 * (tiling.md 2.1: the equations are separable, so one table per axis suffices; for layouts
 * whose bits do not overlap, XOR is the sum). Every aligned run of 2^run_log2 bytes is
 * contiguous. A family leaves 'tile_base' NULL when its layout does not fit this form (terms
 * reading coordinate bits outside the tile); the engine then walks with addr(). */
struct vidmm_swz_mip;
#define VIDMM_SWZ_MAX_XRUNS 64
#define VIDMM_SWZ_MAX_ROWS 256
#define VIDMM_SWZ_MAX_SLICES 32
struct vidmm_swz_tiles {
    uint32_t tw_log2, th_log2, td_log2, run_log2;   /* run_log2 <= tw_log2 */
    uint64_t (*tile_base)(const struct vidmm_swz_mip *m, uint64_t tx, uint32_t ty, uint32_t tz);
    uint32_t xo[VIDMM_SWZ_MAX_XRUNS];   /* 2^(tw_log2 - run_log2) entries */
    uint32_t yo[VIDMM_SWZ_MAX_ROWS];    /* 2^th_log2 entries */
    uint32_t zo[VIDMM_SWZ_MAX_SLICES];  /* 2^td_log2 entries */
    bool pair16;                        /* set by the engine: 16-byte runs whose rows pair into
                                           32-byte granules (kernel_ops.h swz_pairs16) */
    bool quad8;                         /* set by the engine: 8-byte runs in 2x2 quads of 32 bytes
                                           (kernel_ops.h swz_quads8) */
    bool lines;                         /* set by the engine: pair16 or quad8 with four rows to
                                           each 64-byte line (kernel_ops.h swz_lines16_nt) */
    uint32_t span_mask;                 /* set by the engine: every bit an in-tile offset can have
                                           (xo, yo, zo entries and the run), as low ones */
};

/* One mip of one layer, resolved: what the engine needs to copy any box of it. */
struct vidmm_swz_mip {
    const struct vidmm_swz_surface *s;
    uint32_t mip, layer;
    uint32_t w, h, d;                    /* elements */
    uint32_t elem;
    uint32_t run_log2;                   /* aligned 2^run_log2-byte runs of a row are contiguous
                                            (and 2^run_log2 divides nothing beyond: the engine
                                            splits a row's byte range at multiples of it) */
    uint64_t base;                       /* tiled offset of the subresource (informative) */
    uint64_t span;                       /* bytes of the tiled surface it spans */
    uint64_t linear_offset;              /* in the packed linear order */
    /* Byte offset in the whole tiled surface of byte column 'xb' of row 'y' of slice 'z' of
     * this subresource (coordinates inside the mip; the family adds base, tail origins, etc.).
     * Pre: xb < w * elem, y < h, z < d. */
    uint64_t (*addr)(const struct vidmm_swz_mip *m, uint64_t xb, uint32_t y, uint32_t z);
    /* Family parameters, filled by the family's resolve() and read only by its addr(). */
    uint64_t p[16];
    uint32_t q[16];
    uint32_t block_height, block_depth;  /* BLOCK_LINEAR: the values used for this mip */
    struct vidmm_swz_tiles tiles;        /* optional fast-path description (tiles.tile_base) */
};

/* Each family implements these three, for the tilings it owns:
 *   check(s)            validates the family-specific fields and the surface for this
 *                       tiling: 0, VIDMM_E_INVALID_ARG or VIDMM_E_UNSUPPORTED; may leave
 *                       results for total() and resolve() in s->priv (and set priv_valid).
 *   total(s, &bytes)    the whole tiled surface size (all layers, mips, padding).
 *   resolve(s, mip, layer, &m)  fills every field of 'm' (s, mip, layer and the linear side
 *                       are already set by the caller: w, h, d, elem, linear_offset).
 * All three may assume vidmm_swz_surface fields common to every tiling were validated:
 * sizes non-zero, elem 1..16, bw/bh 1..16, mips within the chain, layers >= 1, and that every
 * 64-bit product fits (the engine checks the linear sizes; families check their own sums). */
struct vidmm_swz_family {
    int (*check)(struct vidmm_swz_surface *s);
    int (*total)(const struct vidmm_swz_surface *s, uint64_t *bytes);
    int (*resolve)(const struct vidmm_swz_surface *s, uint32_t mip, uint32_t layer, struct vidmm_swz_mip *m);
};

extern const struct vidmm_swz_family vidmm_swz_linear;        /* swizzle.c */
extern const struct vidmm_swz_family vidmm_swz_block_linear;  /* swizzle_bl.c */
extern const struct vidmm_swz_family vidmm_swz_intel;         /* swizzle_intel.c: X, Y, 4 */
extern const struct vidmm_swz_family vidmm_swz_morton;        /* swizzle_morton.c */
extern const struct vidmm_swz_family vidmm_swz_equation;      /* swizzle_eq.c: D3D_STD_4K/64K,
                                                                 AMD_GFX10, EQUATION */

/* ---------------------------------------------------------------------------------------------
 * The three parts of the engine, one file each:
 *   swizzle.c       descriptors: loading and checking them, sizes, subresources, and the
 *                   pitch-linear family;
 *   swizzle_walk.c  the walks that move a box's bytes: the reference walk through addr() and
 *                   the tile-table walks with the backends' kernels, and the choice between them;
 *   swizzle_plan.c  plans (vidmm_swizzle_plan_*), the per-thread cache behind the one-shot
 *                   calls, and the public copy calls, which are thin wrappers over plans.
 * ------------------------------------------------------------------------------------------- */

/* The first published versions of the public structs end after these fields. */
#define VIDMM_SWZ_LAYOUT_V0_SIZE \
    (offsetof(struct vidmm_tile_layout, equation) + sizeof(const struct vidmm_equation *))
#define VIDMM_SWZ_SURFACE_V0_SIZE (offsetof(struct vidmm_surface_desc, array_layers) + sizeof(uint32_t))

/* vidmm_swz_refuse() is how a swizzle call refuses, as vidmm_refuse() (common/internal.h) is
 * the engine's: one VIDMM_LOG_DEBUG line "<call>: <field>: <rule, with the values> (spec
 * <where>)" - 'fmt' formats the rule and its citation - and 'err' returned. Only refusals call
 * it: the copies' path pays nothing for it. */
int vidmm_swz_refuse(int err, const char *call, const char *field, const char *fmt, ...) VIDMM_PRINTF(4, 5);

/* vidmm_swz_check_desc() refuses NULL descriptors and ones shorter than their first version. */
int vidmm_swz_check_desc(const char *call, const struct vidmm_tile_layout *layout,
                         const struct vidmm_surface_desc *surface);

/* vidmm_swz_open() is the start of every public call ('call', named in refusal lines): load and
 * check the descriptors into '*s', then the packed linear size ('*lin') and the tiled size
 * ('*total'), each checked for overflow. */
int vidmm_swz_open(const char *call, const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                   struct vidmm_swz_surface *s, const struct vidmm_swz_family **fam, uint64_t *lin, uint64_t *total);

/* vidmm_swz_prepare() resolves subresource (mip, layer) of an opened surface into '*m' (which
 * points at 's' afterwards, so 's' must outlive it): INVALID_ARG for a subresource outside the
 * surface, UNSUPPORTED where the family cannot address it. */
int vidmm_swz_prepare(const struct vidmm_swz_surface *s, const struct vidmm_swz_family *fam, uint32_t mip,
                      uint32_t layer, struct vidmm_swz_mip *m);

enum vidmm_swz_dir { VIDMM_SWZ_TILE, VIDMM_SWZ_UNTILE };

/* The walk a copy takes (swizzle_walk.c), for vidmm_swizzle_plan_info() and the tests. */
enum vidmm_swz_walk {
    VIDMM_SWZ_WALK_REFERENCE,     /* addr() per run: the scalar backend, or no tile tables */
    VIDMM_SWZ_WALK_TILES,         /* the tile tables, ordinary stores */
    VIDMM_SWZ_WALK_TILES_NT,      /* the tile tables, streaming stores (rows, lines or gathered) */
    VIDMM_SWZ_WALK_STRIPS,        /* four-row strips, ordinary stores */
    VIDMM_SWZ_WALK_STRIPS_NT,     /* four-row strips, streaming stores */
    VIDMM_SWZ_WALK_STREAM_LOAD,   /* whole tiles read with streaming loads */
    VIDMM_SWZ_WALK_TILES_NT_LINEAR /* the tile tables, streaming stores to the linear rows */
};

/* vidmm_swz_run() copies box 'b' of subresource 'm' in direction 'dir' (arguments checked by
 * the caller): the walk and store policy are chosen from the backend, the strategy, the bytes
 * the call moves ('stream_bytes') and the buffers' alignment. Thread-safe: 'm' is only read. */
void vidmm_swz_run(const struct vidmm_swz_mip *m, const struct vidmm_box *b, unsigned char *tiled,
                   unsigned char *linear, size_t row_pitch, size_t slice_pitch, enum vidmm_swz_dir dir,
                   enum vidmm_backend backend, enum vidmm_strategy strategy, uint64_t stream_bytes);

/* vidmm_swz_walk_of() is the walk vidmm_swz_run() would take for those arguments, with a tiled
 * buffer aligned to 64 bytes. */
enum vidmm_swz_walk vidmm_swz_walk_of(const struct vidmm_swz_mip *m, enum vidmm_swz_dir dir,
                                      enum vidmm_backend backend, enum vidmm_strategy strategy,
                                      uint64_t stream_bytes);

/* A measured override of the walk choose_walk() picks (issue 26, measured plans): each knob
 * VIDMM_SWZ_TUNE_AS keeps the default's choice. All zero: the default walk. Only copies through
 * a tuned plan read it (vidmm_swz_run_tuned()); vidmm_swz_run() never does. */
enum { VIDMM_SWZ_TUNE_AS = 0, VIDMM_SWZ_TUNE_OFF = 1, VIDMM_SWZ_TUNE_ON = 2 };
enum { VIDMM_SWZ_STRIPS_NONE = 1, VIDMM_SWZ_STRIPS_CACHED = 2, VIDMM_SWZ_STRIPS_NT = 3 };
struct vidmm_swz_tune {
    uint8_t big;       /* the side of the streaming threshold the walk is chosen for (ON: at or
                          above it, as a copy larger than the cache; OFF: below); AUTO strategy only */
    uint8_t strips;    /* four-row strips: VIDMM_SWZ_STRIPS_* or AS */
    uint8_t grouped;   /* tiles grouped per kernel call (else the GOB tile-by-tile walk) */
    uint8_t pairs_nt;  /* the streaming pair walk (GOB lines whole; a deswizzle's linear rows), or
                          for layouts whose run is a whole tile row (Intel X) the long-row walk
                          with streaming stores to its destination */
};
#define VIDMM_SWZ_MAX_CANDIDATES 24

/* vidmm_swz_run_tuned() is vidmm_swz_run() with the walk of 'tune' (apply_tune() in
 * swizzle_walk.c): the same bytes, another walk. */
void vidmm_swz_run_tuned(const struct vidmm_swz_mip *m, const struct vidmm_box *b, unsigned char *tiled,
                         unsigned char *linear, size_t row_pitch, size_t slice_pitch, enum vidmm_swz_dir dir,
                         enum vidmm_backend backend, enum vidmm_strategy strategy, uint64_t stream_bytes,
                         const struct vidmm_swz_tune *tune);

/* vidmm_swz_walk_of_tuned() is vidmm_swz_walk_of() under 'tune'. */
enum vidmm_swz_walk vidmm_swz_walk_of_tuned(const struct vidmm_swz_mip *m, enum vidmm_swz_dir dir,
                                            enum vidmm_backend backend, enum vidmm_strategy strategy,
                                            uint64_t stream_bytes, const struct vidmm_swz_tune *tune);

/* vidmm_swz_tune_candidates() lists in 'out' (up to 'max') overrides giving distinct walks for
 * a copy of 'm' in direction 'dir' with a 64-byte aligned tiled buffer, the default (all AS)
 * first; returns how many. One (the default) when the backend walks by reference. */
unsigned vidmm_swz_tune_candidates(const struct vidmm_swz_mip *m, enum vidmm_swz_dir dir, enum vidmm_backend backend,
                                   enum vidmm_strategy strategy, uint64_t stream_bytes, struct vidmm_swz_tune *out,
                                   unsigned max);

/* The kind of copy a measured winner is for (swizzle_tune.c; the CPU model is the table's). */
struct vidmm_swz_tune_key {
    uint32_t tiling;      /* enum vidmm_tiling */
    uint32_t param;       /* block height | block depth << 8 (BLOCK_LINEAR), the swizzle mode
                             (AMD_GFX10), the unit (MORTON), the flags (INTEL_*), the equation's
                             bits (EQUATION); else 0 */
    uint32_t dims;        /* 2 or 3 */
    uint32_t elem;        /* element bytes */
    uint32_t size_class;  /* floor(log2(bytes a copy moves)) */
    uint32_t dir;         /* enum vidmm_swz_dir */
    uint32_t backend;     /* never AUTO */
    uint32_t strategy;
};

/* The measured parallel threshold's verdicts (swizzle_plan.c par_way()), as the table file
 * holds them (swizzle_tune.c): a kind of copy, the thread count and whether the caller's job
 * system runs the bands, and the side that won. vidmm_swz_par_export() copies up to 'max' known
 * verdicts out (returns how many); vidmm_swz_par_import() sets verdicts (a kind already known
 * is replaced); vidmm_swz_par_clear() forgets every kind. vidmm_swz_tune_load_once() loads the
 * file VIDMM_SWIZZLE_TUNE_FILE names if no copy has tried yet since the last clear. */
struct vidmm_swz_par_verdict {
    struct vidmm_swz_tune_key key;
    uint32_t threads;
    bool jobs;
    bool many;
};
unsigned vidmm_swz_par_export(struct vidmm_swz_par_verdict *out, unsigned max);
void vidmm_swz_par_import(const struct vidmm_swz_par_verdict *v, unsigned n);
void vidmm_swz_par_clear(void);
void vidmm_swz_tune_load_once(void);

/* vidmm_swz_now_ns() is CLOCK_MONOTONIC in nanoseconds (the measurements' clock). */
uint64_t vidmm_swz_now_ns(void);

/* vidmm_swz_tune_key_of() is the key of copies of subresource 'm' (of the surface 's') moving
 * 'moved' bytes each. */
void vidmm_swz_tune_key_of(const struct vidmm_swz_surface *s, const struct vidmm_swz_mip *m, uint64_t moved,
                           enum vidmm_swz_dir dir, enum vidmm_backend backend, enum vidmm_strategy strategy,
                           struct vidmm_swz_tune_key *k);

/* vidmm_swz_tune_lookup() finds the winner of 'k' in the table (loading the file the option
 * names first, once): true and '*t', or false. Counts a hit. */
bool vidmm_swz_tune_lookup(const struct vidmm_swz_tune_key *k, struct vidmm_swz_tune *t);

/* vidmm_swz_tune_measure() times the candidate walks of copies of subresource 'm' of 's' in
 * direction 'dir' within 'budget_ns' and stores the fastest in '*best' (all AS when the
 * default won or nothing else exists) and in the table under 'k'. 'moved' is the bytes a real
 * copy moves (the walks are chosen as for it). Returns 0 or VIDMM_E_NO_MEMORY (nothing stored). */
int vidmm_swz_tune_measure(const struct vidmm_swz_surface *s, const struct vidmm_swz_mip *m, uint64_t moved,
                           enum vidmm_swz_dir dir, enum vidmm_backend backend, enum vidmm_strategy strategy,
                           uint64_t budget_ns, const struct vidmm_swz_tune_key *k, struct vidmm_swz_tune *best);

/* vidmm_swz_linear_policy() is how a deswizzle of subresource 'm' larger than the streaming
 * threshold writes its linear rows in walk 'which' (the GOB pair walk, the line layouts'
 * four-row strips, or the long-row walk of whole tile rows, Intel X): ordinary or streaming stores, or - for the strips - the tile walk instead
 * ('strips_nt': the strip kernels have streaming stores). VIDMM_STREAM_LINEAR_ROWS=on|off forces
 * streaming or ordinary stores; else measured once per process for the kind of 'm' and 'backend'
 * (swizzle_tune.c "The linear-row store policy"); else (VIDMM_CALIBRATE=0, nothing to measure
 * with) a guess. The first call of a kind costs ~5 ms. */
enum vidmm_swz_linear { VIDMM_SWZ_LINEAR_PAIRS, VIDMM_SWZ_LINEAR_STRIPS, VIDMM_SWZ_LINEAR_LONG };
enum vidmm_swz_linear_answer { VIDMM_SWZ_ANSWER_ORDINARY, VIDMM_SWZ_ANSWER_STREAM, VIDMM_SWZ_ANSWER_TILES };
unsigned vidmm_swz_linear_policy(const struct vidmm_swz_mip *m, enum vidmm_backend backend,
                                 enum vidmm_swz_linear which, bool strips_nt);

/* Overflow-checked 64-bit arithmetic for the families' size sums. */
static inline bool vidmm_swz_mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

static inline bool vidmm_swz_add_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a > UINT64_MAX - b)
        return false;
    *out = a + b;
    return true;
}

/* Mip m's dimensions in elements (tiling.md 3.5 step 2 and 1.4): max(1, n >> m) pixels,
 * rounded up to whole blocks. */
static inline uint32_t vidmm_swz_mip_dim(uint32_t pixels, uint32_t block, uint32_t mip)
{
    uint32_t p = mip < 32 ? pixels >> mip : 0;
    if (p == 0)
        p = 1;
    return (p + block - 1) / block;
}

#endif /* VIDMM_LIB_KERNELS_SWIZZLE_INTERNAL_H */
