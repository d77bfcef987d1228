/* SPDX-License-Identifier: MIT */
/* include/vidmm/swizzle.h - tiled surface layouts: sizes, subresource offsets, and copies of any
 * box of any mip and layer between a linear buffer and the tiled surface. The layouts are
 * exactly those of shared/spec/tiling.md (section numbers below refer to it). */
#ifndef VIDMM_SWIZZLE_H
#define VIDMM_SWIZZLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "api.h"
#include "common.h"
#include "kernels.h"

VIDMM_BEGIN_DECLS

/* ---------------------------------------------------------------------------------------------
 * Layouts.
 * ------------------------------------------------------------------------------------------- */
enum vidmm_tiling {
    VIDMM_TILING_LINEAR = 0,        /* pitch-linear: row after row, 'pitch' bytes apart */
    VIDMM_TILING_BLOCK_LINEAR = 1,  /* NVIDIA / Tegra GOBs and blocks (section 3) */
    VIDMM_TILING_INTEL_X = 2,       /* Intel X tiles, 512 B x 8 rows (section 4) */
    VIDMM_TILING_INTEL_Y = 3,       /* Intel legacy Y (Y0), 128 B x 32 rows */
    VIDMM_TILING_INTEL_4 = 4,       /* Intel Tile4, 128 B x 32 rows */
    VIDMM_TILING_D3D_STD_4K = 5,    /* D3D standard swizzle, 4 KB pages (section 5.2; 3D: D3D/GFX9 order) */
    VIDMM_TILING_D3D_STD_64K = 6,   /* D3D standard swizzle, 64 KB pages */
    VIDMM_TILING_AMD_GFX10 = 7,     /* AMD addrlib GFX10 swizzle mode 'amd_swizzle_mode' (5.3-5.6) */
    VIDMM_TILING_EQUATION = 8,      /* the caller's address equation, blocks row-major (5.5) */
    VIDMM_TILING_MORTON = 9,        /* Morton / Z order, 2D and 3D (section 6) */
    VIDMM_TILING_COUNT_ = 10
};

/* A generic address equation (section 2.1): address bit i of a block of 2^bits bytes is the XOR
 * of the coordinate bits term[i][0..4] (x in BYTES, y in rows, z in slices). This is the form
 * AMD's addrlib exports (ADDR_EQUATION). Terms may name bits above the block: they are fed the
 * full coordinates. Any term may name any coordinate bit, address bits 0..3 included (the runs
 * the kernels copy whole shrink to what the equation leaves contiguous, down to one byte).
 * The block's shape - how many x (byte), y and z bits vary inside it - is the split for which
 * the equation is one to one on the block; where several splits are, the channels of each
 * address bit's first term decide (addrlib's ADDR_EQUATION keeps the block bit in addr[] and
 * the modifiers in xor1[] / xor2[]). No such split: VIDMM_E_INVALID_ARG. */
#define VIDMM_EQ_MAX_BITS 20
#define VIDMM_EQ_MAX_TERMS 5
enum vidmm_eq_channel {
    VIDMM_EQ_NONE = 0, /* unused term */
    VIDMM_EQ_X = 1,    /* byte column */
    VIDMM_EQ_Y = 2,    /* row */
    VIDMM_EQ_Z = 3     /* slice (3D) or array layer (2D) */
};
struct vidmm_eq_term {
    uint8_t channel;   /* enum vidmm_eq_channel */
    uint8_t bit;       /* 0..31 */
};
struct vidmm_equation {
    uint32_t bits;     /* the block is 2^bits bytes; 4..VIDMM_EQ_MAX_BITS */
    bool thick;        /* true: z bits select slices inside a slab of blocks (3D);
                          false: z terms are XOR modifiers from the array layer (2D) */
    struct vidmm_eq_term term[VIDMM_EQ_MAX_BITS][VIDMM_EQ_MAX_TERMS];
};

/* Layout flags. */
#define VIDMM_TILING_FLAG_BIT6 (1u << 0) /* Intel X / Y: the bit-6 address swizzle (section 4.4) */

/* How a surface is tiled. Initialise with VIDMM_TILE_LAYOUT_INIT(tiling) and set what the
 * tiling uses; fields a tiling does not use must be 0. */
struct vidmm_tile_layout {
    size_t size;                  /* sizeof(struct vidmm_tile_layout) */
    enum vidmm_tiling tiling;
    uint32_t flags;               /* VIDMM_TILING_FLAG_* */
    uint32_t block_height;        /* BLOCK_LINEAR: GOBs per block for mip 0, 1..32 (power of 2);
                                     0 = automatic (3.4; 1 for 3D surfaces) */
    uint32_t block_depth;         /* BLOCK_LINEAR: 1..16 (power of 2); 0 = automatic */
    uint32_t pitch;               /* LINEAR, INTEL_*: row pitch in bytes of mip 0; 0 = minimal (Intel:
                                     the row rounded up to the tile width) */
    uint32_t swizzle_unit;        /* MORTON: bytes reordered as one unit, dividing the element
                                     size (6.3); 0 = the element size */
    uint32_t amd_swizzle_mode;    /* AMD_GFX10: addrlib AddrSwizzleMode, 5 (SW_4KB_S), 9 (SW_64KB_S)
                                     or 27 (SW_64KB_R_X, 32 bpp, Navi10 configuration) */
    const struct vidmm_equation *equation; /* EQUATION: read during each call only */
};
#define VIDMM_TILE_LAYOUT_INIT(t) { sizeof(struct vidmm_tile_layout), (t), 0, 0, 0, 0, 0, 0, NULL }

/* ---------------------------------------------------------------------------------------------
 * Surfaces.
 * ------------------------------------------------------------------------------------------- */

/* A surface: width x height x depth pixels (depth > 1: a 3D texture), in elements of
 * element_bytes (1..16, including 3, 6 and 12); a block-compressed format is described by its
 * block size in pixels (4 x 4 for BCn) and its block bytes as the element size. Mip m has
 * max(1, W >> m) x max(1, H >> m) x max(1, D >> m) pixels, rounded up to whole blocks.
 * The packed linear order of a whole surface is layer 0 mips 0..M-1, layer 1 ..., each mip
 * its slices of rows of elements, tightly packed.
 *
 * AMD_GFX10 mip chains of any base size (section 5.6): those are the extents copied, but each
 * mip is laid out - its pitch and height padded to whole blocks, and whether it goes to the mip
 * tail - with the extent AMD's addrlib gives it, ceil(ceil(W / block_width) / 2^m) x
 * ceil(ceil(H / block_height) / 2^m) elements (Mesa src/amd/addrlib: Lib::ComputeSurfaceInfo
 * in src/core/addrlib2.cpp converts the base to elements rounding up through
 * ElemLib::AdjustSurfaceInfo; Gfx10Lib::ComputeSurfaceInfoMacroTiled sizes mip m with
 * Gfx10Lib::GetMipSize, ShiftCeil, in src/gfx10/gfx10addrlib.{cpp,h}). The copied extent never
 * exceeds it, and the two agree for power-of-two bases. addrlib's own comment in
 * HwlComputeNonBlockCompressedView gives the same pair: API mip width max(1, W >> m) in
 * compressed blocks rounded up, pitch from the rounded-up GetMipSize extent. No golden vector
 * covers an NPOT chain: the rule is read from addrlib's source [unverified against hardware or
 * an addrlib run]. */
struct vidmm_surface_desc {
    size_t size;                  /* sizeof(struct vidmm_surface_desc) */
    uint32_t width, height, depth;
    uint32_t element_bytes;
    uint32_t block_width, block_height; /* compressed block in pixels; 1 x 1 when uncompressed */
    uint32_t mip_levels;          /* >= 1 */
    uint32_t array_layers;        /* >= 1 (6 for a cube) */
};

/* What one mip of one layer is. */
struct vidmm_subresource_info {
    size_t size;                  /* sizeof(struct vidmm_subresource_info), set by the caller */
    uint32_t width, height, depth;   /* in elements (blocks) */
    uint64_t tiled_offset;        /* where it starts in the tiled surface (for an AMD mip-tail mip:
                                     the tail block it lives in) */
    uint64_t tiled_size;          /* bytes it spans in the tiled surface (AMD chains: its addrlib
                                     extent padded to blocks (struct vidmm_surface_desc), or the
                                     tail block) */
    uint64_t linear_offset;       /* where it starts in the packed linear order */
    uint64_t linear_size;         /* width * height * depth * element_bytes */
    uint32_t block_height;        /* BLOCK_LINEAR: GOBs per block used for this mip */
    uint32_t block_depth;         /* BLOCK_LINEAR: slices per block used for this mip */
};

/* vidmm_surface_tiled_size() stores in '*bytes' the size of the whole tiled surface (every
 * layer, mip and padding byte); vidmm_surface_linear_size() the size of the packed linear
 * order. Returns: 0, or VIDMM_E_INVALID_ARG (a descriptor field out of range, zero sizes, a
 * size that overflows 64 bits, an element size the tiling cannot take), VIDMM_E_UNSUPPORTED
 * (a combination the spec does not define: mip chains or arrays for Intel tilings, mip chains
 * for D3D standard swizzle (D3D's own mip packing) and EQUATION, AMD 3D mip chains). */
VIDMM_API int vidmm_surface_tiled_size(const struct vidmm_tile_layout *layout,
                                       const struct vidmm_surface_desc *surface, uint64_t *bytes);
VIDMM_API int vidmm_surface_linear_size(const struct vidmm_tile_layout *layout,
                                        const struct vidmm_surface_desc *surface, uint64_t *bytes);

/* vidmm_surface_subresource() describes mip 'mip' of layer 'layer' in '*info'.
 * Returns: as vidmm_surface_tiled_size(), and VIDMM_E_INVALID_ARG for a mip or layer out of
 * range or info->size too small. */
VIDMM_API int vidmm_surface_subresource(const struct vidmm_tile_layout *layout,
                                        const struct vidmm_surface_desc *surface, uint32_t mip,
                                        uint32_t layer, struct vidmm_subresource_info *info);

/* ---------------------------------------------------------------------------------------------
 * Copies.
 * ------------------------------------------------------------------------------------------- */

/* A box of elements (blocks for compressed formats) of one mip: [x, x + width) x
 * [y, y + height) x [z, z + depth). For the Intel tilings, whose layouts are defined on bytes,
 * use element_bytes 1 and give x and width in bytes. */
struct vidmm_box {
    uint32_t x, y, z;
    uint32_t width, height, depth;
};

/* vidmm_swizzle() copies box 'box' (NULL: the whole mip) of mip 'mip', layer 'layer' from the
 * linear buffer into the tiled surface 'tiled'. 'linear' points at the box's first element;
 * row 'r' of slice 's' of the box starts at linear + s * slice_pitch + r * row_pitch; the
 * pitches must hold a row (a slice) of the box. Only the box's bytes of 'tiled' are written.
 * vidmm_deswizzle() copies the other way; only the box's bytes of 'linear' are written.
 * 'tiled_size' must be at least vidmm_surface_tiled_size(); 'linear_size' must hold the box.
 * Returns: 0, or VIDMM_E_INVALID_ARG (bad descriptor, box empty or outside the mip, NULL
 * buffer, pitch too small, a buffer too small), VIDMM_E_OVERLAP (the buffers overlap),
 * VIDMM_E_UNSUPPORTED (as vidmm_surface_tiled_size()). On error nothing is written.
 * Thread safety: safe from any thread; concurrent copies into the same bytes race. Each thread
 * keeps the last four subresources it resolved (about 13 KiB of thread-local memory), keyed
 * on the contents of the descriptors (the equation's too), so repeated box copies skip the
 * checks and tables; a descriptor may be changed freely between calls. */
VIDMM_API int vidmm_swizzle(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                            uint32_t mip, uint32_t layer, const struct vidmm_box *box,
                            void *tiled, size_t tiled_size,
                            const void *linear, size_t linear_size, size_t row_pitch, size_t slice_pitch);
VIDMM_API int vidmm_deswizzle(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                              uint32_t mip, uint32_t layer, const struct vidmm_box *box,
                              const void *tiled, size_t tiled_size,
                              void *linear, size_t linear_size, size_t row_pitch, size_t slice_pitch);

/* vidmm_swizzle_surface() tiles every layer and mip from the packed linear order into 'tiled';
 * padding bytes of 'tiled' are not written. vidmm_deswizzle_surface() untiles every layer and
 * mip into the packed linear order. Returns as vidmm_swizzle(). */
VIDMM_API int vidmm_swizzle_surface(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                                    void *tiled, size_t tiled_size, const void *linear, size_t linear_size);
VIDMM_API int vidmm_deswizzle_surface(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                                      const void *tiled, size_t tiled_size, void *linear, size_t linear_size);

/* The _ex forms take kernel options: a forced backend (SCALAR runs the reference walk, which
 * maps every run through the layout's address function; the others the tile-table walk), and a
 * strategy:
 *   STREAM_LOAD  the tiled source of a deswizzle is write-combined memory: whole tiles of the
 *                16-byte-run layouts (block-linear, Intel Y/Tile4, D3D, AMD) are read line by
 *                line with MOVNTDQA (backends with SSE4.1); edge tiles and other layouts use
 *                ordinary loads. 'tiled' must be 16-byte aligned for the streaming path.
 *   NONTEMPORAL  force streaming stores when tiling (same layouts, whole tiles);
 *   AUTO         streaming stores when tiling more than the non-temporal threshold, for the
 *                layouts where they measured faster (block-linear, 64 KB D3D/AMD blocks).
 * 'opts' may be NULL. Returns as the plain forms, and VIDMM_E_UNSUPPORTED for an unusable
 * backend or a strategy copies do not have (MOVDIR64B, LIBC). */
VIDMM_API int vidmm_swizzle_ex(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                               uint32_t mip, uint32_t layer, const struct vidmm_box *box,
                               void *tiled, size_t tiled_size,
                               const void *linear, size_t linear_size, size_t row_pitch, size_t slice_pitch,
                               const struct vidmm_kernel_opts *opts);
VIDMM_API int vidmm_deswizzle_ex(const struct vidmm_tile_layout *layout, const struct vidmm_surface_desc *surface,
                                 uint32_t mip, uint32_t layer, const struct vidmm_box *box,
                                 const void *tiled, size_t tiled_size,
                                 void *linear, size_t linear_size, size_t row_pitch, size_t slice_pitch,
                                 const struct vidmm_kernel_opts *opts);

VIDMM_API int vidmm_swizzle_surface_ex(const struct vidmm_tile_layout *layout,
                                       const struct vidmm_surface_desc *surface, void *tiled, size_t tiled_size,
                                       const void *linear, size_t linear_size, const struct vidmm_kernel_opts *opts);
VIDMM_API int vidmm_deswizzle_surface_ex(const struct vidmm_tile_layout *layout,
                                         const struct vidmm_surface_desc *surface, const void *tiled,
                                         size_t tiled_size, void *linear, size_t linear_size,
                                         const struct vidmm_kernel_opts *opts);

/* ---------------------------------------------------------------------------------------------
 * Plans: the descriptors checked and resolved once, copies made many times.
 *
 * A plan holds a validated copy of the layout and surface (an equation's terms included: the
 * caller may free or change its descriptors afterwards), the subresource's address tables and
 * the kernel options. Copies through it skip the descriptor checks, the table building and the
 * per-thread cache lookup of the one-shot calls, which are themselves thin wrappers over plans.
 * A plan is immutable once made (but for its threads, vidmm_swizzle_plan_set_threads()): any
 * number of threads may copy through one plan at once
 * (concurrent copies into the same bytes race, as with the one-shot calls).
 * ------------------------------------------------------------------------------------------- */
typedef struct vidmm_swizzle_plan vidmm_swizzle_plan;

/* As the 'mip' of vidmm_swizzle_plan_create(): a plan of the whole surface (every layer and
 * mip, the packed linear order of vidmm_swizzle_surface()); 'layer' must then be 0. */
#define VIDMM_SWIZZLE_PLAN_SURFACE UINT32_MAX

/* vidmm_swizzle_plan_create() checks the descriptors and resolves subresource (mip, layer), or
 * the whole surface, into a new plan; 'opts' (may be NULL) fixes the backend and strategy of
 * every copy through it. Returns: 0 and '*plan'; VIDMM_E_INVALID_ARG (as vidmm_swizzle(), a
 * subresource out of range, NULL 'plan'), VIDMM_E_UNSUPPORTED (as vidmm_swizzle_ex()),
 * VIDMM_E_NO_MEMORY. On error '*plan' is not written. */
VIDMM_API int vidmm_swizzle_plan_create(const struct vidmm_tile_layout *layout,
                                        const struct vidmm_surface_desc *surface, uint32_t mip, uint32_t layer,
                                        const struct vidmm_kernel_opts *opts, vidmm_swizzle_plan **plan);

/* vidmm_swizzle_plan_destroy() frees a plan (NULL is ignored). No copy may be running through it. */
VIDMM_API void vidmm_swizzle_plan_destroy(vidmm_swizzle_plan *plan);

/* vidmm_swizzle_plan_swizzle() / _deswizzle() copy box 'box' (NULL: the whole subresource) as
 * vidmm_swizzle_ex() / vidmm_deswizzle_ex() would with the plan's descriptors and options. A
 * whole-surface plan copies the whole surface: 'box' must be NULL and the pitches 0, and
 * 'linear' holds the packed linear order. Returns as vidmm_swizzle(); VIDMM_E_INVALID_ARG for
 * a NULL plan. On error nothing is written. */
VIDMM_API int vidmm_swizzle_plan_swizzle(const vidmm_swizzle_plan *plan, const struct vidmm_box *box, void *tiled,
                                         size_t tiled_size, const void *linear, size_t linear_size,
                                         size_t row_pitch, size_t slice_pitch);
VIDMM_API int vidmm_swizzle_plan_deswizzle(const vidmm_swizzle_plan *plan, const struct vidmm_box *box,
                                           const void *tiled, size_t tiled_size, void *linear,
                                           size_t linear_size, size_t row_pitch, size_t slice_pitch);

/* How a plan's copies run (vidmm_swizzle_plan_info()). */
enum vidmm_swizzle_walk {
    VIDMM_SWIZZLE_WALK_REFERENCE = 0,    /* the layout's address function per contiguous run */
    VIDMM_SWIZZLE_WALK_TILES = 1,        /* tile tables, ordinary stores */
    VIDMM_SWIZZLE_WALK_TILES_NT = 2,     /* tile tables, streaming stores to the tiled side */
    VIDMM_SWIZZLE_WALK_STRIPS = 3,       /* four-row strips, ordinary stores */
    VIDMM_SWIZZLE_WALK_STRIPS_NT = 4,    /* four-row strips, streaming stores (a swizzle's tiled
                                            side, a deswizzle's linear side) */
    VIDMM_SWIZZLE_WALK_STREAM_LOAD = 5,  /* whole tiles read with streaming loads */
    VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR = 6 /* tile tables, streaming stores to the linear side */
};

/* How a plan's walks were chosen (vidmm_swizzle_plan_info(), "Measured plans" below). */
enum vidmm_swizzle_tune_source {
    VIDMM_SWIZZLE_TUNE_DEFAULT = 0,  /* the library's rules (every plan not measured) */
    VIDMM_SWIZZLE_TUNE_MEASURED = 1, /* measured when this plan was made (or by _plan_measure()) */
    VIDMM_SWIZZLE_TUNE_TABLE = 2,    /* the process's table had a winner for this kind of copy */
    VIDMM_SWIZZLE_TUNE_FORCED = 3    /* vidmm_swizzle_plan_force_walk() */
};

struct vidmm_swizzle_plan_info {
    size_t size;                    /* sizeof(struct vidmm_swizzle_plan_info), set by the caller */
    uint32_t mip, layer;            /* as created (mip VIDMM_SWIZZLE_PLAN_SURFACE: whole surface) */
    uint32_t width, height, depth;  /* the subresource in elements (whole surface: mip 0) */
    uint32_t run_bytes;             /* bytes of a row the layout stores contiguously (whole
                                       surface: of mip 0, layer 0); UINT32_MAX for LINEAR */
    uint64_t tiled_size;            /* bytes of the whole tiled surface a copy needs */
    uint64_t linear_size;           /* packed linear bytes of the subresource (or the surface) */
    enum vidmm_backend backend;     /* the backend the copies run on (never AUTO) */
    enum vidmm_strategy strategy;   /* as asked */
    enum vidmm_swizzle_walk swizzle_walk;    /* a whole-subresource swizzle with 64-byte aligned */
    enum vidmm_swizzle_walk deswizzle_walk;  /* buffers (whole surface: of mip 0, layer 0) */
    /* Since 0.6 (a caller passing the 0.5 size gets the fields above). */
    enum vidmm_swizzle_tune_source tune_source; /* how the two walks above were chosen */
};

/* vidmm_swizzle_plan_info() describes a plan. Returns 0, VIDMM_E_INVALID_ARG (NULL, or
 * info->size too small). */
VIDMM_API int vidmm_swizzle_plan_info(const vidmm_swizzle_plan *plan, struct vidmm_swizzle_plan_info *info);

/* ---------------------------------------------------------------------------------------------
 * Plans on several threads (issue 26).
 *
 * A plan's whole-surface and box copies may be cut into bands of whole tile rows (GOB / block
 * rows for block-linear; slabs of slices when a 3D box spans one tile row) and run on several
 * threads: the library's pool, or the caller's own job system through a parallel-for callback.
 * Bands never write the same 64-byte line: a band boundary is kept only where the written side
 * (the tiled surface of a swizzle, the linear rows of a deswizzle) starts a line there, and
 * dropped otherwise (an unaligned linear pitch gives fewer bands, at worst one). A whole
 * surface is cut per subresource (each large mip of each layer in bands; the small mips, and
 * those sharing lines with their neighbours such as an AMD mip tail, together in one more job).
 * The bytes written are those of the one-thread copy, on every backend.
 * ------------------------------------------------------------------------------------------- */

/* A parallel for: call job(arg, i) once for every i in [0, count), on any threads, in any order
 * or at once, and return only when every call has returned. 'ctx' is the caller's own. */
typedef void (*vidmm_parallel_for_fn)(void *ctx, uint32_t count, void (*job)(void *arg, uint32_t index),
                                      void *arg);

/* How a plan's copies use threads. Initialise with VIDMM_SWIZZLE_THREADS_INIT and set 'size' to
 * sizeof(struct vidmm_swizzle_threads); fields may be appended in later versions. */
struct vidmm_swizzle_threads {
    size_t size;                      /* sizeof(struct vidmm_swizzle_threads) */
    uint32_t threads;                 /* 0 or 1: the calling thread only; 2..VIDMM_SWIZZLE_MAX_THREADS:
                                         a copy runs on up to this many threads, cut into up to
                                         four bands a thread (claimed one at a time) */
    vidmm_parallel_for_fn parallel_for; /* NULL: the library's pool runs the bands (the calling
                                           thread takes part); else called once per copy with the
                                           bands, from the copying thread */
    void *parallel_ctx;               /* passed to 'parallel_for' */
    uint64_t min_bytes;               /* 0: the library's threshold, measured: the first twenty
                                         copies of 256 KiB or more of each kind (layout and its
                                         parameter, 2D/3D, element size, direction, backend,
                                         strategy, size class, thread count, pool or job system) -
                                         learnt from every plan's copies in the process - take the
                                         calling thread and the threads two by two, the second of
                                         each two timed, and the kind keeps the faster for its next
                                         4096 copies, then learns again; those bands move at least
                                         128 KiB. The verdicts go into the table file (below).
                                         VIDMM_CALIBRATE=0: VIDMM_SWIZZLE_MIN_PARALLEL_BYTES. Else a
                                         copy moving fewer bytes stays on the calling thread, and
                                         each band moves at least half this */
};
#define VIDMM_SWIZZLE_THREADS_INIT { sizeof(struct vidmm_swizzle_threads), 0, NULL, NULL, 0 }
#define VIDMM_SWIZZLE_MAX_THREADS 256
/* With VIDMM_CALIBRATE=0, copies through a plan of min_bytes 0 moving fewer bytes than this run
 * on the calling thread: the pool's hand-off costs 3-12 us a copy on a 2-vCPU Cascade Lake guest,
 * under 10% of a 1 MiB copy (the measurement: lib/kernels/swizzle_plan.c, bands_for()). The
 * measured threshold replaces it by default (struct vidmm_swizzle_threads, min_bytes). */
#define VIDMM_SWIZZLE_MIN_PARALLEL_BYTES (1024u * 1024u)

/* vidmm_swizzle_plan_set_threads() sets how the copies through 'plan' use threads ('t' NULL:
 * the calling thread only, as a new plan does).
 * Returns: 0, or VIDMM_E_INVALID_ARG (NULL plan, t->size below the first version, threads above
 * VIDMM_SWIZZLE_MAX_THREADS). On error the plan is unchanged. A parallel_for with threads 0 or 1 is
 * kept but never called.
 * Thread safety: not while a copy runs through the plan (the one call that changes a plan);
 * copies through a plan remain safe from any number of threads at once. A parallel_for is
 * called from those threads as they copy, possibly several at once.
 * Lifetime: the pool is created by the first copy that uses it, grown to the largest thread
 * count asked for (threads - 1 workers: the copying thread takes part), and shared by every plan.
 * While it runs one copy's bands, another thread's copy runs on that thread alone. */
VIDMM_API int vidmm_swizzle_plan_set_threads(vidmm_swizzle_plan *plan, const struct vidmm_swizzle_threads *t);

/* vidmm_thread_pool_shutdown() stops and joins the pool's workers, after the copy running on it
 * (if any). A later threaded copy starts a new pool. A destructor does the same at exit (unless a
 * copy is running then; the workers are then left to the exit). After fork() the child has no
 * pool: its first threaded copy starts one (the parent's workers are forgotten, never joined).
 * Thread safety: safe from any thread but a pool worker (a parallel_for's job must not call it). */
VIDMM_API void vidmm_thread_pool_shutdown(void);

/* ---------------------------------------------------------------------------------------------
 * Measured plans (issue 26).
 *
 * The walk and store policy a copy takes are chosen by rules measured by hand on a few machines
 * (lib/kernels/swizzle_walk.c). A plan made with VIDMM_PLAN_MEASURE in its options' 'flags'
 * instead times the walks the library knows for its own kind of copy - the side of the streaming
 * threshold the stores are chosen for, the four-row strips (ordinary or streaming stores), tiles
 * grouped per kernel call or one at a time, the streaming pair walk - and keeps the fastest, in
 * each direction, within a budget of VIDMM_SWIZZLE_TUNE_BUDGET_NS (rounds stop at the budget;
 * at least three run, so a loaded machine may take somewhat longer): on scratch buffers of the
 * plan's layout, element size and row length, a band of whole tile rows of at most 2 MiB or the
 * L2's size (the whole subresource when smaller), the walks chosen as for the plan's real size;
 * timed warm after an untimed copy - on a band out of the L2 when the plan's copies are - or
 * cold - the band's lines flushed first - when the plan's copies exceed the streaming threshold
 * (they do not fit the cache either). Walks much slower than the fastest after the first rounds
 * are timed no more, so the budget goes to those that may win. The copy is timed alone: below
 * the threshold a walk with streaming stores may win it (a 4 MiB surface on an Emerald Rapids
 * Xeon), and a program that reads the destination right after pays for the lines it then finds
 * out of the cache (docs/emr-2026-12-02.md: 4 MiB copied and read, 619 us with ordinary stores
 * against 683). A walk is kept over the
 * default only when its median is at least 5% faster (10% on a cold band, which tells the walks
 * apart less well) and it beat the default in 3 rounds of 4.
 * Every walk copies the same bytes.
 *
 * Winners go into a per-process table keyed by the kind of copy - CPU model, tiling and its
 * parameter (block height, AMD swizzle mode, Morton unit, Intel bit-6), 2D or 3D, element size,
 * size class (log2 of the bytes a copy moves), direction, backend and strategy - so the next
 * measured plan of the same kind measures nothing. The table is saved to and loaded from a text
 * file; VIDMM_SWIZZLE_TUNE_FILE (vidmm_option_set_string(VIDMM_OPT_SWIZZLE_TUNE_FILE)) names a
 * file the first measured plan loads, and `vidmm-info --tune-write FILE` measures the common
 * kinds on this machine and writes one. The format, one winner a line:
 *   vidmm-swizzle-tune 2
 *   cpu <the CPU's brand string, vidmm_cpu_info().model>
 *   <tiling> <param> <2d|3d> <elem> <class> <swizzle|deswizzle> <backend> <strategy>
 *       <big: as|off|on> <strips: as|none|cached|nt> <grouped: as|off|on> <pairs_nt: as|off|on> <gain>
 * ('#' starts a comment line; 'gain' is the default's median time over the winner's, for
 * information), and one line a kind whose measured parallel threshold (struct
 * vidmm_swizzle_threads, min_bytes 0) has learnt its side:
 *   threads <tiling> <param> <2d|3d> <elem> <class> <swizzle|deswizzle> <backend> <strategy>
 *       <threads: 2..VIDMM_SWIZZLE_MAX_THREADS> <pool|jobs> <alone|threads>
 * A plan's first threaded copy loads the file VIDMM_SWIZZLE_TUNE_FILE names, so its kinds'
 * copies take their side without learning. Files of format 1 (no threshold lines) still load. Without the flag a plan keeps the library's rules (VIDMM_SWIZZLE_TUNE_DEFAULT):
 * deterministic, and what the tests of the walks check - unless VIDMM_SWIZZLE_TUNE_FILE names a
 * table file: then every plan takes the winners the table holds for its kinds (tune_source
 * VIDMM_SWIZZLE_TUNE_TABLE; nothing measured, other kinds keep the rules), so that a program tunes
 * once per machine and sets the variable. One-shot calls (vidmm_swizzle() ...) keep the rules. The measured walk serves whole-subresource
 * (and whole-surface) copies, on one thread or several; box copies keep the default walk.
 * ------------------------------------------------------------------------------------------- */
#define VIDMM_SWIZZLE_TUNE_BUDGET_NS (20ull * 1000 * 1000)

/* vidmm_swizzle_plan_measure() times the walks of 'plan' in both directions now (half of
 * 'budget_ns' each; 0: VIDMM_SWIZZLE_TUNE_BUDGET_NS), keeps the fastest for its whole copies and
 * records them in the table (replacing what it held for this kind), whether or not the plan was
 * made with VIDMM_PLAN_MEASURE. Allocates scratch buffers of at most about 2 MiB a side, freed
 * before it returns. Returns: 0, VIDMM_E_INVALID_ARG (NULL plan),
 * VIDMM_E_NO_MEMORY (the plan is then unchanged).
 * Thread safety: not while a copy runs through 'plan' (as vidmm_swizzle_plan_set_threads()). */
VIDMM_API int vidmm_swizzle_plan_measure(vidmm_swizzle_plan *plan, uint64_t budget_ns);

/* vidmm_swizzle_plan_walk_candidates() stores in '*count' how many distinct walks the measurement
 * of 'plan' would time for its whole copies in one direction ('deswizzle' false: swizzle), the
 * default first (1: only the default, e.g. the scalar backend's reference walk).
 * vidmm_swizzle_plan_force_walk() makes walk 'index' of that list the one the plan's whole copies
 * take in that direction (0: the default again), for benchmarks and tests comparing the walks;
 * vidmm_swizzle_plan_info() then reports it (tune_source VIDMM_SWIZZLE_TUNE_FORCED, or DEFAULT
 * for index 0). Every walk copies the same bytes. Returns: 0, VIDMM_E_INVALID_ARG (NULL plan or
 * count, index not below the count; the plan is then unchanged). force_walk's thread safety: as
 * vidmm_swizzle_plan_measure(). */
VIDMM_API int vidmm_swizzle_plan_walk_candidates(const vidmm_swizzle_plan *plan, bool deswizzle, uint32_t *count);
VIDMM_API int vidmm_swizzle_plan_force_walk(vidmm_swizzle_plan *plan, bool deswizzle, uint32_t index);

/* vidmm_swizzle_tune_save() writes the table to 'path' (NULL: the file VIDMM_SWIZZLE_TUNE_FILE
 * names), through a temporary file renamed over it. Returns: 0, VIDMM_E_INVALID_ARG (NULL path
 * and no option set), VIDMM_E_IO (the file could not be written; 'path' is unchanged). */
VIDMM_API int vidmm_swizzle_tune_save(const char *path);

/* vidmm_swizzle_tune_load() reads a table file into the table (entries of the same kind are
 * replaced, others kept). Returns: 0; VIDMM_E_INVALID_ARG (NULL path and no option set, or a
 * malformed file: not the header above, an unknown word, a number out of range, a line too long
 * or too many lines - a VIDMM_LOG_DEBUG line names the line); VIDMM_E_UNSUPPORTED (the file was
 * written on another CPU model: its winners do not apply here); VIDMM_E_IO (unreadable). On any
 * error the table is unchanged. */
VIDMM_API int vidmm_swizzle_tune_load(const char *path);

/* vidmm_swizzle_tune_clear() empties the table, the thresholds' verdicts with it (the file the
 * option names is loaded again by the next measured plan or threaded copy). Can't fail. */
VIDMM_API void vidmm_swizzle_tune_clear(void);

/* What the table holds and has done, since the process started. */
struct vidmm_swizzle_tune_stats {
    size_t size;                 /* sizeof(struct vidmm_swizzle_tune_stats), set by the caller */
    uint32_t entries;            /* winners in the table */
    uint64_t measurements;       /* plan directions measured (by creation or _plan_measure()) */
    uint64_t table_hits;         /* plan directions served from the table without measuring */
};

/* vidmm_swizzle_tune_stats() fills '*st'. Returns 0, VIDMM_E_INVALID_ARG (NULL, size too small).
 * Thread safety: everything above is safe from any thread (the table has a lock). */
VIDMM_API int vidmm_swizzle_tune_stats(struct vidmm_swizzle_tune_stats *st);

VIDMM_END_DECLS

#endif /* VIDMM_SWIZZLE_H */
