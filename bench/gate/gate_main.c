/* SPDX-License-Identifier: MIT */
/* bench/gate/gate_main.c - vidmm_gate: the deterministic regression gate's workload. Every gated
 * path runs a fixed amount of work (never Google Benchmark's adaptive iteration count), once,
 * under Valgrind's Callgrind; tools/bench_gate.sh compares the instructions of each row between
 * two builds.
 *
 * Each row is bracketed by Callgrind client requests: its counters are zeroed, collection is
 * switched on for the row's calls only (setup, the warm-up call and the checks are not counted),
 * and the counts are dumped under the row's name ("desc: Trigger: Client Request: <row>").
 * tools/bench_gate.sh runs it as
 *
 *   valgrind --tool=callgrind --collect-atstart=no vidmm_gate [--swap-dir DIR]
 *
 * Collection is per thread in Callgrind and only this thread switches it on, so the devices run
 * their paging in the calling thread (paging_threads 0) and the disk tier with the synchronous
 * I/O backend: every instruction of the work is counted, and none of a thread's waiting, whose
 * length depends on the scheduler. Everything else that could differ from run to run is fixed
 * here too: the kernel backend (--backend, default the widest Valgrind runs), the non-temporal
 * threshold, the copy-to-WC variant (no calibration: it times the variants), base pages for the
 * segments (the huge page pool is shared with the tests), and the address-space reservation
 * (Valgrind refuses the default 64 GiB).
 *
 * Outside Valgrind the client requests do nothing: the program runs every row and prints its
 * wall time, which checks the rows work (tools/bench_gate.sh --list, ctest's gate smoke test).
 *
 * Exit status: 0, 1 when a call failed (the row is named), 2 on bad usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vidmm/vidmm.h"

#if defined(__has_include)
#  if __has_include(<valgrind/callgrind.h>)
#    include <valgrind/callgrind.h>
#    define GATE_HAVE_CALLGRIND 1
#  endif
#endif
#ifndef GATE_HAVE_CALLGRIND
/* Built without Valgrind's headers (Debian: package valgrind): the rows still run. */
#  define CALLGRIND_ZERO_STATS do { } while (0)
#  define CALLGRIND_TOGGLE_COLLECT do { } while (0)
#  define CALLGRIND_DUMP_STATS_AT(s) do { (void)(s); } while (0)
#  define RUNNING_ON_VALGRIND 0
#endif

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)

/* The non-temporal threshold the kernels use here: the 1 MiB copies and fills take the
 * streaming-store path, the smaller ones the temporal one, on every machine (the default is
 * the machine's LLC size, which Valgrind reports as its simulated CPU's). */
#define GATE_NT_THRESHOLD (1 * MiB)

/* The linear buffers: the largest surface (1024 x 1024 x 4 bytes) and the largest copy. */
#define GATE_BUF (4 * MiB)

static unsigned char *g_src, *g_dst, *g_tiled;
static size_t g_tiled_cap;
static const char *g_filter;     /* --filter: rows whose name contains it */
static const char *g_swap_dir = ".";
static bool g_list;              /* --list: names only */
static int g_rows, g_failed;
static double g_row_t0;
static bool g_in_row;            /* between row_begin() and row_end() */

/* ---------------------------------------------------------------------------------------------
 * Rows.
 * ------------------------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Whether row 'name' runs (it is printed instead with --list). */
static bool row_wanted(const char *name)
{
    if (g_filter != NULL && strstr(name, g_filter) == NULL)
        return false;
    if (g_list) {
        printf("%s\n", name);
        return false;
    }
    return true;
}

/* The measured region: counters zeroed, collection on. Nothing else may run between
 * row_begin() and row_end() but the row's own calls. */
static void row_begin(void)
{
    g_in_row = true;
    g_row_t0 = now_s();
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
}

/* Collection off, and the row's counts dumped under its name. 'rc' is what the row's calls
 * returned (OR-ed): a failed call fails the program, so no row is ever compared on a count of
 * work that was refused. A row that failed before row_begin() dumps nothing (the tool then
 * reports it missing). */
static void row_end(const char *name, unsigned reps, int rc)
{
    double t = 0;
    if (g_in_row) {
        CALLGRIND_TOGGLE_COLLECT;
        CALLGRIND_DUMP_STATS_AT(name);
        t = now_s() - g_row_t0;
        g_in_row = false;
    } else if (rc == 0) {
        rc = VIDMM_E_INVALID_ARG; /* never started: a bug of this file */
    }
    g_rows++;
    if (rc != 0) {
        g_failed++;
        fprintf(stderr, "vidmm_gate: %s: a call returned %d (%s)\n", name, rc, vidmm_strerror(rc));
    }
    if (!RUNNING_ON_VALGRIND)
        printf("%-44s %6u reps %10.3f ms%s\n", name, reps, t * 1e3, rc != 0 ? "  FAILED" : "");
}

/* A setup step that failed: the row cannot run, which fails the program. */
static void row_setup_failed(const char *name, const char *what, int rc)
{
    g_failed++;
    fprintf(stderr, "vidmm_gate: %s: setup: %s returned %d (%s)\n", name, what, rc, vidmm_strerror(rc));
}

static void *map_buffer(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "vidmm_gate: cannot map %zu MiB: %s\n", n / MiB, strerror(errno));
        exit(2);
    }
    memset(p, 0, n); /* faulted in before any row: page faults are the kernel's, but tidy */
    return p;
}

/* A non-repeating source (xorshift64), as bench/b_common.c's: the data a kernel moves never
 * changes the instructions it runs, but a copy of zeros could hide a kernel that skips. */
static void fill_source(unsigned char *p, size_t n)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t off = 0; off + 8 <= n; off += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + off, &x, 8);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Copy, fill, flush. The reps give each row at least 2 MiB of work, so the per-call overhead
 * (argument checks, dispatch) weighs as it does in a caller's loop of small calls.
 * ------------------------------------------------------------------------------------------- */

static const size_t kernel_sizes[] = { 4 * KiB, 64 * KiB, 1 * MiB };
#define NKSIZES (sizeof(kernel_sizes) / sizeof(kernel_sizes[0]))

static unsigned kernel_reps(size_t n)
{
    return n >= 2 * MiB ? 1u : (unsigned)(2 * MiB / n);
}

enum copy_kind { COPY_CACHED, COPY_TO_WC, COPY_FROM_WC };

static void rows_copy(void)
{
    static const char *const names[] = { "cached", "to_wc", "from_wc" };
    for (int k = COPY_CACHED; k <= COPY_FROM_WC; k++) {
        for (size_t i = 0; i < NKSIZES; i++) {
            size_t n = kernel_sizes[i];
            char name[64];
            snprintf(name, sizeof(name), "copy/%s/%zu", names[k], n);
            if (!row_wanted(name))
                continue;
            unsigned reps = kernel_reps(n);
            int rc = 0;
            /* One untimed call first: the dispatcher's choice and the first touch of the lines. */
            for (unsigned r = 0; r <= reps; r++) {
                if (r == 1)
                    row_begin();
                switch (k) {
                case COPY_CACHED: rc |= vidmm_copy(g_dst, g_src, n, VIDMM_MEM_CACHED); break;
                case COPY_TO_WC: rc |= vidmm_copy_to_wc(g_dst, g_src, n); break;
                default: rc |= vidmm_copy_from_wc(g_dst, g_src, n); break;
                }
            }
            row_end(name, reps, rc);
        }
    }
}

static void rows_fill(void)
{
    for (size_t i = 0; i < NKSIZES; i++) {
        size_t n = kernel_sizes[i];
        char name[64];
        snprintf(name, sizeof(name), "fill/cached/%zu", n);
        if (!row_wanted(name))
            continue;
        unsigned reps = kernel_reps(n);
        int rc = 0;
        for (unsigned r = 0; r <= reps; r++) {
            if (r == 1)
                row_begin();
            rc |= vidmm_fill32(g_dst, 0xdeadbeefu, n, VIDMM_MEM_CACHED);
        }
        row_end(name, reps, rc);
    }
}

static void rows_flush(void)
{
    static const struct {
        const char *name;
        enum vidmm_flush_op op;
        size_t n;
    } fl[] = {
        { "writeback", VIDMM_FLUSH_WRITEBACK, 4 * KiB },
        { "writeback", VIDMM_FLUSH_WRITEBACK, 1 * MiB },
        { "writeback_invalidate", VIDMM_FLUSH_WRITEBACK_INVALIDATE, 64 * KiB },
        { "invalidate", VIDMM_FLUSH_INVALIDATE, 64 * KiB },
    };
    for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
        char name[64];
        snprintf(name, sizeof(name), "flush/%s/%zu", fl[i].name, fl[i].n);
        if (!row_wanted(name))
            continue;
        unsigned reps = kernel_reps(fl[i].n);
        int rc = 0;
        for (unsigned r = 0; r <= reps; r++) {
            if (r == 1)
                row_begin();
            rc |= vidmm_flush(g_dst, fl[i].n, fl[i].op);
        }
        row_end(name, reps, rc);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Swizzle: every layout family of bench/bench_swizzle.c, both directions, whole surfaces of
 * 4-byte elements at three sizes (64 KiB, 1 MiB, 4 MiB) and a 64x64 box inside the largest,
 * starting and ending inside tiles as bench_swizzle.c's does. The Intel layouts are defined on
 * bytes: their surfaces have 1-byte elements and rows of W * 4 bytes, the same bytes.
 * ------------------------------------------------------------------------------------------- */

struct swz_family {
    const char *name;
    enum vidmm_tiling tiling;
    bool byte_columns;
    uint32_t amd_mode;
    uint32_t elem;      /* element bytes (0: 4, or 1 with byte columns) */
};

static const struct swz_family families[] = {
    { "bl", VIDMM_TILING_BLOCK_LINEAR, false, 0, 0 },
    { "intel_y", VIDMM_TILING_INTEL_Y, true, 0, 0 },
    { "intel_4", VIDMM_TILING_INTEL_4, true, 0, 0 },
    { "intel_x", VIDMM_TILING_INTEL_X, true, 0, 0 },
    { "d3d64k", VIDMM_TILING_D3D_STD_64K, false, 0, 0 },
    { "d3d4k", VIDMM_TILING_D3D_STD_4K, false, 0, 0 },
    { "amd_rx", VIDMM_TILING_AMD_GFX10, false, 27, 0 },   /* SW_64KB_R_X, 32 bpp */
    { "eq", VIDMM_TILING_EQUATION, false, 0, 0 },
    { "morton", VIDMM_TILING_MORTON, false, 0, 0 },
    /* 16-byte units (BCn blocks): the 32-byte runs of merge_runs() (lib/kernels/swizzle.c); a
     * quarter as many columns, so a row moves the bytes of the 4-byte rows. */
    { "morton16", VIDMM_TILING_MORTON, false, 0, 16 },
    { "linear", VIDMM_TILING_LINEAR, false, 0, 0 },
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

static const uint32_t swz_sides[] = { 128, 512, 1024 };
#define NSIDES (sizeof(swz_sides) / sizeof(swz_sides[0]))
#define SWZ_BOX 64u
#define SWZ_BOX_DX 33u
#define SWZ_BOX_DY 17u

/* The D3D 64 KB standard swizzle of 32 bpp as a generic equation (tiling.md 5.2), as
 * bench_swizzle.c builds it: x bits to the set bits of 0xAA8F, y bits to those of 0x5570. */
static struct vidmm_equation eq_e4;

static void eq_build(void)
{
    const uint32_t xmask = 0xAA8Fu, ymask = 0x5570u;
    uint8_t xi = 0, yi = 0;
    memset(&eq_e4, 0, sizeof(eq_e4));
    eq_e4.bits = 16;
    for (uint32_t b = 0; b < 16; b++) {
        if ((xmask >> b) & 1) {
            eq_e4.term[b][0].channel = VIDMM_EQ_X;
            eq_e4.term[b][0].bit = xi++;
        } else if ((ymask >> b) & 1) {
            eq_e4.term[b][0].channel = VIDMM_EQ_Y;
            eq_e4.term[b][0].bit = yi++;
        }
    }
}

static void swz_describe(const struct swz_family *f, uint32_t side, struct vidmm_tile_layout *L,
                         struct vidmm_surface_desc *S)
{
    struct vidmm_tile_layout init = VIDMM_TILE_LAYOUT_INIT(f->tiling);
    *L = init;
    L->amd_swizzle_mode = f->amd_mode;
    if (f->tiling == VIDMM_TILING_EQUATION)
        L->equation = &eq_e4;
    memset(S, 0, sizeof(*S));
    S->size = sizeof(*S);
    S->width = f->byte_columns ? side * 4 : f->elem == 16 ? side / 4 : side;
    S->height = side;
    S->depth = 1;
    S->element_bytes = f->byte_columns ? 1 : f->elem ? f->elem : 4;
    S->block_width = S->block_height = 1;
    S->mip_levels = 1;
    S->array_layers = 1;
}

/* The tiled buffer: the largest tiled size of any layout's largest surface. */
static size_t swz_tiled_need(void)
{
    size_t need = 0;
    for (size_t fi = 0; fi < NFAMILIES; fi++) {
        struct vidmm_tile_layout L;
        struct vidmm_surface_desc S;
        uint64_t t = 0;
        swz_describe(&families[fi], swz_sides[NSIDES - 1], &L, &S);
        if (vidmm_surface_tiled_size(&L, &S, &t) == 0 && t > need)
            need = (size_t)t;
    }
    return need;
}

static int swz_call(bool tile, const struct vidmm_tile_layout *L, const struct vidmm_surface_desc *S,
                    const struct vidmm_box *box, size_t tiled_bytes, size_t lin_bytes, size_t pitch)
{
    if (box == NULL)
        return tile ? vidmm_swizzle_surface(L, S, g_tiled, tiled_bytes, g_src, lin_bytes)
                    : vidmm_deswizzle_surface(L, S, g_tiled, tiled_bytes, g_dst, lin_bytes);
    size_t slice = pitch * box->height;
    return tile ? vidmm_swizzle(L, S, 0, 0, box, g_tiled, tiled_bytes, g_src, lin_bytes, pitch, slice)
                : vidmm_deswizzle(L, S, 0, 0, box, g_tiled, tiled_bytes, g_dst, lin_bytes, pitch, slice);
}

static void rows_swizzle(void)
{
    eq_build();
    for (size_t fi = 0; fi < NFAMILIES; fi++) {
        const struct swz_family *f = &families[fi];
        for (size_t si = 0; si <= NSIDES; si++) {
            bool is_box = si == NSIDES;
            if (is_box && f->elem == 16)
                continue; /* its box: the 4-byte Morton's walk, already a row */
            uint32_t side = is_box ? swz_sides[NSIDES - 1] : swz_sides[si];
            struct vidmm_tile_layout L;
            struct vidmm_surface_desc S;
            swz_describe(f, side, &L, &S);
            struct vidmm_box box = { 0, 0, 0, S.width, S.height, 1 };
            if (is_box) {
                uint32_t bx = side / 2 + SWZ_BOX_DX;
                box.x = f->byte_columns ? bx * 4 : bx;
                box.y = side / 2 + SWZ_BOX_DY;
                box.width = f->byte_columns ? SWZ_BOX * 4 : SWZ_BOX;
                box.height = SWZ_BOX;
            }
            size_t pitch = (size_t)box.width * S.element_bytes;
            size_t lin_bytes = pitch * box.height;
            /* Whole surfaces: 4 MiB of work per row at least; boxes: 16 of them. */
            unsigned reps = is_box ? 16u : (unsigned)(lin_bytes >= 4 * MiB ? 1 : 4 * MiB / lin_bytes);
            for (int dir = 0; dir < 2; dir++) {
                bool tile = dir == 0;
                char name[64];
                if (is_box)
                    snprintf(name, sizeof(name), "%s/%s/box64", tile ? "swizzle" : "deswizzle", f->name);
                else
                    snprintf(name, sizeof(name), "%s/%s/%ux%u", tile ? "swizzle" : "deswizzle", f->name, side,
                             side);
                if (!row_wanted(name))
                    continue;
                uint64_t tiled_bytes = 0;
                int rc = vidmm_surface_tiled_size(&L, &S, &tiled_bytes);
                if (rc != 0 || tiled_bytes > g_tiled_cap) {
                    row_setup_failed(name, "vidmm_surface_tiled_size", rc != 0 ? rc : VIDMM_E_NO_MEMORY);
                    continue;
                }
                /* The untimed first call builds the thread's cached tables, as a caller's first
                 * call would; a deswizzle reads what the swizzle row just wrote. */
                for (unsigned r = 0; r <= reps; r++) {
                    if (r == 1)
                        row_begin();
                    rc |= swz_call(tile, &L, &S, is_box ? &box : NULL, (size_t)tiled_bytes, lin_bytes, pitch);
                }
                row_end(name, reps, rc);
            }
        }
    }
}

/* tile_runs() alone (lib/kernels/swizzle_walk.c): an equation of 4 KiB blocks 16 bytes wide and
 * 256 rows tall (x0..x3 at address bits 0-3, then y1, y0, y2..y7: y0 not right above the run, so
 * rows do not pair into 32-byte granules and no backend kernel takes them). Every tile row is
 * one 16-byte run, and the tile walk moves it in tile_runs()' row loop: what a row of that loop
 * costs is most of this row's count. In the layout rows above, the backends' pair and quad
 * kernels move most rows and tile_runs() only the odd ones: a volatile load per row of it moved
 * them by at most 0.33%. A 256x256 surface of 4-byte elements, whole, 4 times each way. */
static struct vidmm_equation eq_rows;

static void rows_tile_runs(void)
{
    memset(&eq_rows, 0, sizeof(eq_rows));
    eq_rows.bits = 12;
    for (uint32_t b = 0; b < 12; b++) {
        eq_rows.term[b][0].channel = b < 4 ? VIDMM_EQ_X : VIDMM_EQ_Y;
        eq_rows.term[b][0].bit = (uint8_t)(b < 4 ? b : b == 4 ? 1 : b == 5 ? 0 : b - 4);
    }
    const struct swz_family f = { "eq_rows", VIDMM_TILING_EQUATION, false, 0, 0 };
    const uint32_t side = 256;
    const unsigned reps = 4;
    for (int dir = 0; dir < 2; dir++) {
        char name[64];
        snprintf(name, sizeof(name), "%s/eq_rows/%ux%u", dir == 0 ? "swizzle" : "deswizzle", side, side);
        if (!row_wanted(name))
            continue;
        struct vidmm_tile_layout L;
        struct vidmm_surface_desc S;
        swz_describe(&f, side, &L, &S);
        L.equation = &eq_rows;
        uint64_t tiled = 0;
        const size_t lin = (size_t)side * side * 4;
        int rc = vidmm_surface_tiled_size(&L, &S, &tiled);
        if (rc != 0 || tiled > g_tiled_cap) {
            row_setup_failed(name, "vidmm_surface_tiled_size", rc != 0 ? rc : VIDMM_E_NO_MEMORY);
            continue;
        }
        for (unsigned r = 0; r <= reps; r++) {
            if (r == 1)
                row_begin();
            rc |= swz_call(dir == 0, &L, &S, NULL, (size_t)tiled, lin, 0);
        }
        row_end(name, reps, rc);
    }
}

/* ---------------------------------------------------------------------------------------------
 * The video memory manager (include/vidmm/device.h), through the public API.
 * ------------------------------------------------------------------------------------------- */

#define SEG_BASE 0x100000000ull

/* A device with one memory segment of 'size' bytes (flags 'seg_flags') and, with 'aperture', a
 * 16 MiB aperture segment too; the caller's thread pages; base pages; a small reservation. */
static int gate_device(uint64_t size, uint32_t seg_flags, bool aperture, const char *swap_path, uint64_t budget,
                       vidmm_device **out)
{
    struct vidmm_segment_desc s[2];
    memset(s, 0, sizeof(s));
    s[0].base_address = SEG_BASE;
    s[0].size = size;
    s[0].commit_limit = size;
    s[0].flags = seg_flags;
    s[1].base_address = SEG_BASE * 2;
    s[1].size = 16 * MiB;
    s[1].commit_limit = 16 * MiB;
    s[1].flags = VIDMM_SEGMENT_APERTURE;
    struct vidmm_device_desc d = VIDMM_DEVICE_DESC_INIT;
    d.segments = s;
    d.segment_count = aperture ? 2 : 1;
    d.paging_threads = 0;
    d.sysmem_reserve = 256 * MiB;
    d.memory_tier = VIDMM_TIER_BASE;
    d.swap_path = swap_path;
    d.sysmem_budget = budget;
    d.io_backend = VIDMM_IO_SYNC;
    return vidmm_device_create(&d, out);
}

static struct vidmm_alloc_desc alloc_desc(uint64_t size, uint32_t flags)
{
    struct vidmm_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.size_of = sizeof(d);
    d.size = size;
    d.preferred_segment = 1;
    d.supported_read_set = 1;
    d.supported_write_set = 1;
    d.flags = flags;
    d.priority = VIDMM_PRIORITY_NORMAL;
    return d;
}

static void row_device_create_destroy(void)
{
    const char *name = "engine/device_create_destroy";
    if (!row_wanted(name))
        return;
    const unsigned reps = 8;
    int rc = 0;
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        vidmm_device *dev = NULL;
        int e = gate_device(16 * MiB, VIDMM_SEGMENT_CPU_VISIBLE, true, NULL, 0, &dev);
        rc |= e;
        if (e == 0)
            vidmm_device_destroy(dev);
    }
    row_end(name, reps, rc);
}

/* Create + destroy of a 64 KiB allocation (never placed), 'live' others alive; with 'place',
 * 4 KiB allocations made resident in between, the 'live' others placed with a 4 KiB hole after
 * each (as bench_engine.c's create_place_destroy: placement searches N free blocks). */
static void row_create_destroy(uint32_t live, bool place)
{
    char name[64];
    snprintf(name, sizeof(name), "engine/%s/live%u", place ? "create_place_destroy" : "alloc_create_destroy",
             (unsigned)live);
    if (!row_wanted(name))
        return;
    const unsigned reps = place ? 200 : 1000;
    const uint64_t size = place ? 4 * KiB : 64 * KiB;
    vidmm_device *dev = NULL;
    uint64_t seg = place ? (uint64_t)(2 * live + 64) * size : (uint64_t)(live + 1) * size;
    int rc = gate_device(seg, 0, false, NULL, 0, &dev);
    if (rc != 0) {
        row_setup_failed(name, "vidmm_device_create", rc);
        return;
    }
    struct vidmm_alloc_desc d = alloc_desc(size, 0);
    uint32_t n = place ? 2 * live : live;
    vidmm_handle *all = malloc(sizeof(*all) * n);
    if (all == NULL) {
        row_setup_failed(name, "malloc", VIDMM_E_NO_MEMORY);
        vidmm_device_destroy(dev);
        return;
    }
    for (uint32_t i = 0; i < n && rc == 0; i++)
        rc = vidmm_alloc_create(dev, &d, &all[i]);
    /* Placed in order, bottom-up, in small batches (place_all() compares every pair of a list),
     * then every other one destroyed. */
    for (uint32_t i = 0; place && i < n && rc == 0; i += 256)
        rc = vidmm_make_resident(dev, all + i, n - i < 256 ? n - i : 256, NULL);
    for (uint32_t i = 1; place && i < n && rc == 0; i += 2)
        rc = vidmm_alloc_destroy(dev, all[i]);
    free(all);
    if (rc != 0) {
        row_setup_failed(name, "building the live allocations", rc);
        vidmm_device_destroy(dev);
        return;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        vidmm_handle h;
        int e = vidmm_alloc_create(dev, &d, &h);
        if (e == 0 && place)
            e = vidmm_make_resident(dev, &h, 1, NULL);
        if (e == 0)
            e = vidmm_alloc_destroy(dev, h);
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
}

/* vidmm_lock() (flags 0) + vidmm_unlock() of a 64 KiB allocation resident in a CPU-visible
 * memory segment (bench_engine.c's engine/lock_unlock/resident). */
static void row_lock_unlock(void)
{
    const char *name = "engine/lock_unlock/65536";
    if (!row_wanted(name))
        return;
    const unsigned reps = 1000;
    vidmm_device *dev = NULL;
    vidmm_handle h = 0;
    int rc = gate_device(16 * MiB, VIDMM_SEGMENT_CPU_VISIBLE, false, NULL, 0, &dev);
    struct vidmm_alloc_desc d = alloc_desc(64 * KiB, VIDMM_ALLOC_CPU_VISIBLE);
    if (rc == 0 && (rc = vidmm_alloc_create(dev, &d, &h)) == 0)
        rc = vidmm_make_resident(dev, &h, 1, NULL);
    if (rc != 0) {
        row_setup_failed(name, "building the device", rc);
        vidmm_device_destroy(dev);
        return;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        struct vidmm_lock_args la;
        memset(&la, 0, sizeof(la));
        la.allocation = h;
        int e = vidmm_lock(dev, &la);
        if (e == 0)
            e = vidmm_unlock(dev, 1, &h);
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
}

/* plain_lock_row(): row 'name', 40 plain writable locks of a 1 MiB allocation with 'flags'
 * (and 'fill', its fill pattern) resident in a CPU-visible memory segment, one page written in
 * each, under VIDMM_LOCK_DIRTY='dirty' (read at the device's first large lock; the caller's
 * value restored after); with 'submit', a submission that reads it after each unlock. */
static void plain_lock_row(const char *name, uint32_t flags, uint32_t fill, const char *dirty, bool submit)
{
    if (!row_wanted(name))
        return;
    const unsigned reps = 40;
    vidmm_device *dev = NULL;
    vidmm_handle h = 0;
    const char *was = getenv("VIDMM_LOCK_DIRTY");
    char *saved = was != NULL ? strdup(was) : NULL;
    setenv("VIDMM_LOCK_DIRTY", dirty, 1);
    int rc = gate_device(16 * MiB, VIDMM_SEGMENT_CPU_VISIBLE, false, NULL, 0, &dev);
    struct vidmm_alloc_desc d = alloc_desc(MiB, VIDMM_ALLOC_CPU_VISIBLE | flags);
    d.fill_pattern = fill;
    if (rc == 0 && (rc = vidmm_alloc_create(dev, &d, &h)) == 0)
        rc = vidmm_make_resident(dev, &h, 1, NULL);
    const bool built = rc == 0;
    if (!built)
        row_setup_failed(name, "building the device", rc);
    struct vidmm_alloc_ref ref = { .allocation = h, .flags = 0 };
    for (unsigned r = 0; built && r <= reps; r++) {
        if (r == 1)
            row_begin();
        struct vidmm_lock_args la;
        memset(&la, 0, sizeof(la));
        la.allocation = h;
        int e = vidmm_lock(dev, &la);
        if (e == 0) {
            ((volatile unsigned char *)la.data)[(size_t)(r * 5 % 256) * 4096 + 64] = (unsigned char)(r | 1);
            e = vidmm_unlock(dev, 1, &h);
        }
        uint64_t fence = 0;
        if (e == 0 && submit)
            e = vidmm_submit(dev, &ref, 1, 0, NULL, &fence);
        if (e == 0 && submit)
            e = vidmm_fence_signal(dev, fence);
        rc |= e;
    }
    if (built)
        row_end(name, reps, rc);
    vidmm_device_destroy(dev);
    if (saved != NULL)
        setenv("VIDMM_LOCK_DIRTY", saved, 1);
    else
        unsetenv("VIDMM_LOCK_DIRTY");
    free(saved);
}

/* Plain writable locks of a 1 MiB PermanentSysMem allocation of zeros resident in a memory
 * segment, one page written in each: its backing store is a hole until written and keeps holes
 * through these rounds, so each lock goes by the store's data (lib/engine/lock.c watch_arm(),
 * vm_alloc.wt_holey: the SEEK_DATA walk at the end and the copy-back of the pages holding data),
 * with nothing armed.
 *
 * The default policy (auto) picks between that and a userfaultfd tracking of the whole store
 * from measured costs (vmos_wtrack_measure(), the moves' running average): under Callgrind,
 * where userfaultfd works through /dev/userfaultfd, the pick flipped from run to run (1.12 M or
 * 0.27 M instructions, the same build) and failed CI's self-test. VIDMM_LOCK_DIRTY=data, read
 * at the device's first large lock, goes by the data alone: it measures and arms nothing. */
static void row_lock_holes(void)
{
    plain_lock_row("engine/lock_holes/1048576", VIDMM_ALLOC_PERMANENT_SYSMEM, 0, "data", false);
}

/* Plain writable locks of a 1 MiB Cached allocation resident in a CPU-visible memory segment
 * that does not snoop, one page written in each, then a submission that reads it: the path of
 * a tracked Cached lock (lib/engine/lock.c watch_arm(), watch_end(): its pages left armed, so
 * each arm protects only what the last lock wrote; the flush before the GPU reads it covers the
 * page written, submit.c vm_cache_gpu_use()). Under the policy (auto) the choice to track
 * comes from measured costs and could flip from run to run, as lock_holes' did:
 * VIDMM_LOCK_DIRTY=always tracks every lock whole. Where the kernel has no userfaultfd
 * write-protect the locks go untracked, the same way in both builds the gate compares. */
static void row_lock_cached(void)
{
    plain_lock_row("engine/lock_cached_tracked/1048576", VIDMM_ALLOC_CACHED, 0, "always", true);
}

/* Plain writable locks of a 1 MiB PermanentSysMem allocation resident in a memory segment, its
 * backing store populated (filled with a pattern at creation: no holes), one page written in
 * each: the write-tracked copy-back (lib/engine/lock.c watch_arm(), watch_done(): the arena's
 * userfaultfd write-protect, PAGEMAP_SCAN at the end, the TRANSFER of the page written).
 * VIDMM_LOCK_DIRTY=always for the reason of lock_cached_tracked above. */
static void row_lock_psm_tracked(void)
{
    plain_lock_row("engine/lock_psm_tracked/1048576", VIDMM_ALLOC_PERMANENT_SYSMEM, 0x5a5a5a5au, "always", false);
}

/* Submissions: 'nrefs' allocations of 'size' bytes referenced per submission (written), the
 * fence signalled at once (the "GPU" is done). With 'alternate', two such lists in turn into a
 * segment that holds one: every submission evicts the other list and pages its own in
 * (bench_engine.c's submit_pressure); without, the list stays resident and the row counts the
 * submission's own bookkeeping. */
static void row_submit(uint32_t nrefs, uint64_t size, bool alternate)
{
    char name[64];
    snprintf(name, sizeof(name), "engine/%s/%ux%llu", alternate ? "submit_pressure" : "submit_resident",
             (unsigned)nrefs, (unsigned long long)size);
    if (!row_wanted(name))
        return;
    const unsigned reps = alternate ? 10 : 200;
    const uint32_t n = alternate ? 2 * nrefs : nrefs;
    vidmm_device *dev = NULL;
    int rc = gate_device((uint64_t)nrefs * size, 0, false, NULL, 0, &dev);
    struct vidmm_alloc_ref *refs = calloc(n, sizeof(*refs));
    if (rc != 0 || refs == NULL) {
        row_setup_failed(name, "building the device", rc != 0 ? rc : VIDMM_E_NO_MEMORY);
        vidmm_device_destroy(dev);
        free(refs);
        return;
    }
    struct vidmm_alloc_desc d = alloc_desc(size, 0);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        rc = vidmm_alloc_create(dev, &d, &refs[i].allocation);
        refs[i].flags = VIDMM_REF_WRITE;
    }
    /* Untimed rounds first: every list placed (filled) and, alternating, evicted once, so the
     * measured ones find their backing stores in place. */
    unsigned half = 0;
    for (unsigned r = 0; r <= reps + 3 && rc == 0; r++) {
        if (r == 4)
            row_begin();
        uint64_t fence = 0;
        int e = vidmm_submit(dev, refs + half * nrefs, nrefs, 0, NULL, &fence);
        if (e == 0)
            e = vidmm_fence_signal(dev, fence);
        if (alternate)
            half ^= 1u;
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
    free(refs);
}

/* vidmm_evict() + vidmm_make_resident() of one allocation of 'size' bytes written by the "GPU":
 * its content copied out to the backing store and back (bench_engine.c's evict_pagein). */
static void row_evict_pagein(uint64_t size)
{
    char name[64];
    snprintf(name, sizeof(name), "engine/evict_pagein/%llu", (unsigned long long)size);
    if (!row_wanted(name))
        return;
    const unsigned reps = 10;
    vidmm_device *dev = NULL;
    vidmm_handle h = 0;
    int rc = gate_device(size, 0, false, NULL, 0, &dev);
    struct vidmm_alloc_desc d = alloc_desc(size, 0);
    if (rc == 0 && (rc = vidmm_alloc_create(dev, &d, &h)) == 0 && (rc = vidmm_make_resident(dev, &h, 1, NULL)) == 0)
        rc = vidmm_gpu_access(dev, h, 0, g_src, (size_t)size, true);
    if (rc != 0) {
        row_setup_failed(name, "building the device", rc);
        vidmm_device_destroy(dev);
        return;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        int e = vidmm_evict(dev, &h, 1);
        if (e == 0)
            e = vidmm_make_resident(dev, &h, 1, NULL);
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
}

/* The disk tier through the synchronous I/O backend: two allocations of 'size' bytes in system
 * memory (never placed) under a budget that holds one. Reading one back (make-resident-async,
 * then its paging fence) leaves two in memory, so the same call writes the colder one out:
 * each rep is one read-back and one write-out of 'size' bytes, CRC32C computed and checked. */
static void row_swap(uint64_t size)
{
    char name[64];
    snprintf(name, sizeof(name), "swap/readback_writeout/%llu", (unsigned long long)size);
    if (!row_wanted(name))
        return;
    const unsigned reps = 8;
    char path[512];
    snprintf(path, sizeof(path), "%s/vidmm-gate-swap", g_swap_dir);
    unlink(path); /* a leftover of a killed run: the device creates its own, nameless */
    vidmm_device *dev = NULL;
    vidmm_handle h[2] = { 0, 0 };
    int rc = gate_device(16 * MiB, 0, false, path, size, &dev);
    struct vidmm_alloc_desc d = alloc_desc(size, 0);
    for (int i = 0; i < 2 && rc == 0; i++)
        if ((rc = vidmm_alloc_create(dev, &d, &h[i])) == 0)
            rc = vidmm_gpu_access(dev, h[i], 0, g_src, (size_t)size, true);
    if (rc == 0)
        rc = vidmm_trim_to_budget(dev, true);
    if (rc != 0) {
        row_setup_failed(name, "building the device", rc);
        vidmm_device_destroy(dev);
        return;
    }
    /* Which one went out: the other is read back first. */
    struct vidmm_alloc_info info = { .size_of = sizeof(info) };
    unsigned next = 0;
    if ((rc = vidmm_alloc_query(dev, h[1], &info)) == 0 && info.where == VIDMM_WHERE_DISK)
        next = 1;
    struct vidmm_stats a = { .size_of = sizeof(a) }, b = { .size_of = sizeof(b) };
    (void)vidmm_get_stats(dev, &a);
    for (unsigned r = 0; r <= reps && rc == 0; r++) {
        if (r == 1)
            row_begin();
        uint64_t fence = 0;
        int e = vidmm_make_resident_async(dev, &h[next], 1, &fence);
        if (e == 0)
            e = vidmm_paging_fence_wait(dev, fence, UINT64_MAX);
        rc |= e;
        next ^= 1u;
    }
    row_end(name, reps, rc);
    /* The row must have moved what it says: one read and one write per call. */
    (void)vidmm_get_stats(dev, &b);
    uint64_t reads = b.swap_reads - a.swap_reads, writes = b.swap_writes - a.swap_writes;
    if (rc == 0 && (reads != reps + 1 || writes != reps + 1 || b.io_backend != VIDMM_IO_SYNC)) {
        g_failed++;
        fprintf(stderr, "vidmm_gate: %s: %llu reads and %llu writes for %u calls (I/O backend %u): the disk tier "
                "did not do what the row measures\n", name, (unsigned long long)reads, (unsigned long long)writes,
                reps + 1, (unsigned)b.io_backend);
    }
    vidmm_device_destroy(dev);
}

static void rows_engine(void)
{
    row_device_create_destroy();
    row_create_destroy(1000, false);
    row_create_destroy(1000, true);
    row_lock_unlock();
    row_lock_holes();
    row_lock_cached();
    row_lock_psm_tracked();
    row_submit(64, 64 * KiB, false);
    row_submit(32, 64 * KiB, true);
    row_evict_pagein(1 * MiB);
    row_swap(1 * MiB);
}

/* ---------------------------------------------------------------------------------------------
 * The paths users run that the rows above miss (issue 25): one-reference submissions, lists of
 * allocations of distinct priorities, swizzling-range locks, write-watch, swizzle plans, WDDM2
 * residency, translation and offer/reclaim.
 *
 * Rows named ".../n<N>" form a scaling family: the same work per element at two list lengths,
 * the reps chosen so that each row handles SCALE_ELEMS elements. tools/bench_gate.sh compares
 * each row and also the ratio of the longest list's count to the shortest's: a step whose cost
 * grows with the list (a linear search where a binary one was, a walk of the whole list per
 * element) moves that ratio, even where a saving elsewhere keeps each row under the threshold.
 * ------------------------------------------------------------------------------------------- */

#define SCALE_ELEMS 16384u
static const uint32_t scale_lengths[] = { 256, 1024 };
#define NSCALE (sizeof(scale_lengths) / sizeof(scale_lengths[0]))

/* The priority of list element 'i': every element its own, so the eviction order keeps one
 * bucket per element (lib/engine/victims.c) and each touch looks its bucket up - where every
 * other row's allocations share VIDMM_PRIORITY_NORMAL, one bucket. A linear bucket search made
 * a submit of 4096 such allocations 22x slower and the rows of one priority 1.3% faster. */
static uint32_t prio_of(uint32_t i)
{
    return VIDMM_PRIORITY_LOW + i * 0x1000u;
}

/* A device of one segment as gate_device() makes it, with device flags 'dev_flags' and
 * 'ranges' swizzling ranges. */
static int gate_device_ex(uint64_t size, uint32_t seg_flags, uint32_t dev_flags, uint32_t ranges,
                          vidmm_device **out)
{
    struct vidmm_segment_desc s;
    memset(&s, 0, sizeof(s));
    s.base_address = SEG_BASE;
    s.size = size;
    s.commit_limit = size;
    s.flags = seg_flags;
    struct vidmm_device_desc d = VIDMM_DEVICE_DESC_INIT;
    d.segments = &s;
    d.segment_count = 1;
    d.flags = dev_flags;
    d.swizzling_ranges = ranges;
    d.paging_threads = 0;
    d.sysmem_reserve = 256 * MiB;
    d.memory_tier = VIDMM_TIER_BASE;
    d.io_backend = VIDMM_IO_SYNC;
    return vidmm_device_create(&d, out);
}

/* 'n' allocations of 'size' bytes, element i of priority prio_of(i) (of process 'process'),
 * made resident (WDDM1) or put on the residency list (WDDM2). */
static int prio_list(vidmm_device *dev, uint32_t n, uint64_t size, uint32_t process, bool wddm2, vidmm_handle *h)
{
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        struct vidmm_alloc_desc d = alloc_desc(size, 0);
        d.priority = prio_of(i);
        d.process = process;
        rc = vidmm_alloc_create(dev, &d, &h[i]);
    }
    for (uint32_t i = 0; i < n && rc == 0; i += 256) {
        uint32_t k = n - i < 256 ? n - i : 256;
        if (!wddm2) {
            rc = vidmm_make_resident(dev, h + i, k, NULL);
            continue;
        }
        struct vidmm_make_resident_args a = { .size_of = sizeof(a), .allocations = h + i, .count = k };
        rc = vidmm_wddm2_make_resident(dev, &a);
        if (rc == VIDMM_PENDING)
            rc = vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX);
    }
    return rc;
}

/* vidmm_submit() of one allocation, resident and written by each submission, the fence
 * signalled at once: the call an emulator makes per draw that names one buffer. A slowdown of
 * the one-reference path hid in the 64-reference row's per-list work. */
static void row_submit_one(void)
{
    const char *name = "engine/submit_one/65536";
    if (!row_wanted(name))
        return;
    const unsigned reps = 1000;
    vidmm_device *dev = NULL;
    struct vidmm_alloc_ref ref = { 0, VIDMM_REF_WRITE };
    int rc = gate_device(16 * MiB, 0, false, NULL, 0, &dev);
    struct vidmm_alloc_desc d = alloc_desc(64 * KiB, 0);
    if (rc == 0 && (rc = vidmm_alloc_create(dev, &d, &ref.allocation)) == 0)
        rc = vidmm_make_resident(dev, &ref.allocation, 1, NULL);
    if (rc != 0) {
        row_setup_failed(name, "building the device", rc);
        vidmm_device_destroy(dev);
        return;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        uint64_t fence = 0;
        int e = vidmm_submit(dev, &ref, 1, 0, NULL, &fence);
        if (e == 0)
            e = vidmm_fence_signal(dev, fence);
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
}

/* A resident list of 'n' 4 KiB allocations of distinct priorities submitted (written, the
 * fence signalled at once) or made resident again, SCALE_ELEMS elements per row. */
static void row_prio_list(uint32_t n, bool submit)
{
    char name[64];
    snprintf(name, sizeof(name), "engine/%s_prio/n%u", submit ? "submit" : "make_resident", (unsigned)n);
    if (!row_wanted(name))
        return;
    const unsigned reps = SCALE_ELEMS / n;
    vidmm_device *dev = NULL;
    vidmm_handle *h = calloc(n, sizeof(*h));
    struct vidmm_alloc_ref *refs = calloc(n, sizeof(*refs));
    int rc = h != NULL && refs != NULL ? gate_device((uint64_t)n * 4 * KiB, 0, false, NULL, 0, &dev)
                                       : VIDMM_E_NO_MEMORY;
    if (rc == 0)
        rc = prio_list(dev, n, 4 * KiB, 0, false, h);
    if (rc != 0) {
        row_setup_failed(name, "building the list", rc);
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        refs[i].allocation = h[i];
        refs[i].flags = VIDMM_REF_WRITE;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        int e;
        if (submit) {
            uint64_t fence = 0;
            e = vidmm_submit(dev, refs, n, 0, NULL, &fence);
            if (e == 0)
                e = vidmm_fence_signal(dev, fence);
        } else {
            e = vidmm_make_resident(dev, h, n, NULL);
        }
        rc |= e;
    }
    row_end(name, reps, rc);
out:
    vidmm_device_destroy(dev);
    free(h);
    free(refs);
}

/* row_submit()'s pressure case with distinct priorities: two lists of 'n' 4 KiB allocations
 * in turn into a segment that holds one, so each submission takes its victims out of n
 * buckets and puts n allocations into buckets of their own. */
static void row_pressure_prio(uint32_t n)
{
    char name[64];
    snprintf(name, sizeof(name), "engine/submit_pressure_prio/%ux4096", (unsigned)n);
    if (!row_wanted(name))
        return;
    const unsigned reps = 10;
    vidmm_device *dev = NULL;
    struct vidmm_alloc_ref *refs = calloc(2 * n, sizeof(*refs));
    int rc = refs != NULL ? gate_device((uint64_t)n * 4 * KiB, 0, false, NULL, 0, &dev) : VIDMM_E_NO_MEMORY;
    for (uint32_t i = 0; i < 2 * n && rc == 0; i++) {
        struct vidmm_alloc_desc d = alloc_desc(4 * KiB, 0);
        d.priority = prio_of(i);
        rc = vidmm_alloc_create(dev, &d, &refs[i].allocation);
        refs[i].flags = VIDMM_REF_WRITE;
    }
    if (rc != 0) {
        row_setup_failed(name, "building the lists", rc);
        vidmm_device_destroy(dev);
        free(refs);
        return;
    }
    unsigned half = 0;
    for (unsigned r = 0; r <= reps + 3 && rc == 0; r++) {
        if (r == 4)
            row_begin();
        uint64_t fence = 0;
        int e = vidmm_submit(dev, refs + half * n, n, 0, NULL, &fence);
        if (e == 0)
            e = vidmm_fence_signal(dev, fence);
        half ^= 1u;
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
    free(refs);
}

/* Swizzling-range locks (spec 8.3): a SWIZZLED block-linear surface of 256 x 256 4-byte elements
 * resident in a CPU-visible segment of a device with two ranges; each rep locks it through a
 * range (the engine untiles it into the view), writes one byte in every 16th page of the view,
 * and unlocks (what was written is tiled back: the pages a write-watch saw, or the whole view
 * where there is none). 'mode': 0 the whole surface, 1 READ_ONLY (nothing goes back), 2 a
 * narrow lock of a 64 x 64 box off the tile grid (vidmm_lock_region(): that box only), 3 the
 * whole surface with write tracking off (VIDMM_RANGE_DIRTY=off: each unlock tiles the whole view
 * back, with neither write-watch nor snapshot - lock.c range_want_track(), issue 31). Every
 * row's allocation has the same size and a device of its own: a range view that grows between
 * two allocations of different sizes crashed in range_open() (lib/engine/lock.c, issue 25), and
 * these rows measure the lock, not that case. */
#define RANGE_SIDE 256u

/* The range rows' device; 'untracked': made with VIDMM_RANGE_DIRTY=off, which the device reads
 * once, when it is created (lib/engine/device.c), the variable then put back as it was (unset,
 * or the caller's value) so that no other row's device sees it. */
static int range_device(bool untracked, vidmm_device **out)
{
    if (!untracked)
        return gate_device_ex(16 * MiB, VIDMM_SEGMENT_CPU_VISIBLE, 0, 2, out);
    const char *was = getenv("VIDMM_RANGE_DIRTY");
    char *keep = was != NULL ? strdup(was) : NULL;
    if ((was != NULL && keep == NULL) || setenv("VIDMM_RANGE_DIRTY", "off", 1) != 0) {
        free(keep);
        return VIDMM_E_NO_MEMORY;
    }
    int rc = gate_device_ex(16 * MiB, VIDMM_SEGMENT_CPU_VISIBLE, 0, 2, out);
    if (keep != NULL)
        setenv("VIDMM_RANGE_DIRTY", keep, 1);
    else
        unsetenv("VIDMM_RANGE_DIRTY");
    free(keep);
    return rc;
}

static void row_lock_range(int mode)
{
    static const char *const names[] = { "engine/lock_range/bl256x256", "engine/lock_range_read/bl256x256",
                                         "engine/lock_region/bl256x256/box64",
                                         "engine/lock_range_untracked/bl256x256" };
    const char *name = names[mode];
    if (!row_wanted(name))
        return;
    const unsigned reps = 16;
    struct vidmm_tile_layout L = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    struct vidmm_surface_desc S;
    swz_describe(&families[0], RANGE_SIDE, &L, &S);
    uint64_t tiled = 0, linear = (uint64_t)RANGE_SIDE * RANGE_SIDE * 4;
    vidmm_device *dev = NULL;
    vidmm_handle h = 0;
    int rc = vidmm_surface_tiled_size(&L, &S, &tiled);
    if (rc == 0)
        rc = range_device(mode == 3, &dev);
    if (rc == 0) {
        struct vidmm_alloc_desc d = alloc_desc(tiled, VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_SWIZZLED);
        d.layout = &L;
        d.surface = &S;
        if ((rc = vidmm_alloc_create(dev, &d, &h)) == 0 && (rc = vidmm_make_resident(dev, &h, 1, NULL)) == 0)
            rc = vidmm_gpu_access(dev, h, 0, g_src, (size_t)tiled, true);
    }
    if (rc != 0) {
        row_setup_failed(name, "building the surface", rc);
        vidmm_device_destroy(dev);
        return;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        struct vidmm_lock_args la;
        memset(&la, 0, sizeof(la));
        la.allocation = h;
        la.flags = VIDMM_LOCK_ACQUIRE_APERTURE | (mode == 1 ? VIDMM_LOCK_READ_ONLY : 0);
        int e;
        if (mode == 2) {
            struct vidmm_lock_region reg = VIDMM_LOCK_REGION_INIT;
            reg.flags = VIDMM_LOCK_REGION_BOX;
            reg.mip = reg.layer = 0;
            reg.box = (struct vidmm_box){ RANGE_SIDE / 2 + SWZ_BOX_DX, RANGE_SIDE / 4 + SWZ_BOX_DY, 0, SWZ_BOX, SWZ_BOX, 1 };
            e = vidmm_lock_region(dev, &la, &reg);
            /* One element of every 8th row of the box. */
            for (uint32_t y = 0; e == 0 && y < SWZ_BOX; y += 8)
                ((unsigned char *)la.data)[y * reg.row_pitch] = (unsigned char)(r + y);
        } else {
            e = vidmm_lock(dev, &la);
            for (uint64_t off = 0; e == 0 && (mode == 0 || mode == 3) && off < linear; off += 16 * 4096)
                ((unsigned char *)la.data)[off + r * 64] = (unsigned char)(r + off);
        }
        if (e == 0)
            e = vidmm_unlock(dev, 1, &h);
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
}

/* Write-watch (include/vidmm/writewatch.h) of a 1 MiB region: each rep writes one byte in 32 of
 * its 256 pages and gets and resets the written pages (GetWriteWatch with WRITE_WATCH_FLAG_RESET),
 * once per backend this machine gives. The mprotect backend's count includes its SIGSEGV
 * handler (32 signals a rep). A backend the kernel refuses has no row: --list then leaves it
 * out as well, and tools/bench_gate.sh takes the list it expects from a run under Valgrind. */
#define WW_PAGES 256u
static void row_writewatch(enum vidmm_writewatch_backend be)
{
    char name[64];
    snprintf(name, sizeof(name), "writewatch/%s/get_reset/%u", vidmm_writewatch_backend_name(be), WW_PAGES);
    /* Whether the backend is there: a region created and destroyed, quietly. */
    unsigned char *mem = mmap(NULL, WW_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return;
    memset(mem, 0, WW_PAGES * 4096);
    struct vidmm_writewatch_desc d = VIDMM_WRITEWATCH_DESC_INIT;
    d.base = mem;
    d.size = WW_PAGES * 4096;
    d.backend = be;
    d.flags = VIDMM_WRITEWATCH_QUIET;
    vidmm_writewatch *ww = NULL;
    if (vidmm_writewatch_create(&d, &ww) != 0 || !row_wanted(name)) {
        vidmm_writewatch_destroy(ww);
        munmap(mem, WW_PAGES * 4096);
        return;
    }
    const unsigned reps = 50;
    uint64_t pages[WW_PAGES];
    size_t count = 0;
    int rc = vidmm_writewatch_reset(ww);
    bool wrong = false;
    for (unsigned r = 0; r <= reps && rc == 0; r++) {
        if (r == 1)
            row_begin();
        for (uint32_t p = r % 8; p < WW_PAGES; p += 8)
            mem[p * 4096 + r] = (unsigned char)r;
        rc |= vidmm_writewatch_get(ww, true, pages, WW_PAGES, &count);
        wrong |= count != WW_PAGES / 8;
    }
    row_end(name, reps, rc);
    if (rc == 0 && wrong) {
        g_failed++;
        fprintf(stderr, "vidmm_gate: %s: the write-watch did not report the 32 pages written\n", name);
    }
    vidmm_writewatch_destroy(ww);
    munmap(mem, WW_PAGES * 4096);
}

/* Swizzle plans (include/vidmm/swizzle.h): a plan of mip 0 of a 1024x1024 surface made once,
 * then 16 boxes of 64x64 through it (the one-shot box rows' work without the per-call
 * descriptor checks and cache lookup); and the plan's making and freeing itself. */
static void row_swizzle_plan(const struct swz_family *f, int what)
{
    char name[64];
    static const char *const what_names[] = { "swizzle_plan", "deswizzle_plan", "swizzle_plan_create" };
    snprintf(name, sizeof(name), "%s/%s/%s", what_names[what], f->name, what == 2 ? "1024x1024" : "box64");
    if (!row_wanted(name))
        return;
    const unsigned reps = 16;
    const uint32_t side = swz_sides[NSIDES - 1];
    struct vidmm_tile_layout L;
    struct vidmm_surface_desc S;
    swz_describe(f, side, &L, &S);
    vidmm_swizzle_plan *plan = NULL;
    int rc = vidmm_swizzle_plan_create(&L, &S, 0, 0, NULL, &plan);
    struct vidmm_swizzle_plan_info info = { .size = sizeof(info) };
    if (rc == 0)
        rc = vidmm_swizzle_plan_info(plan, &info);
    if (rc == 0 && info.tiled_size > g_tiled_cap)
        rc = VIDMM_E_NO_MEMORY;
    if (rc != 0) {
        row_setup_failed(name, "vidmm_swizzle_plan_create", rc);
        vidmm_swizzle_plan_destroy(plan);
        return;
    }
    uint32_t bx = side / 2 + SWZ_BOX_DX;
    struct vidmm_box box = { f->byte_columns ? bx * 4 : bx, side / 2 + SWZ_BOX_DY, 0,
                             f->byte_columns ? SWZ_BOX * 4 : SWZ_BOX, SWZ_BOX, 1 };
    const size_t pitch = (size_t)box.width * S.element_bytes, lin = pitch * box.height;
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        if (what == 0) {
            rc |= vidmm_swizzle_plan_swizzle(plan, &box, g_tiled, (size_t)info.tiled_size, g_src, lin, pitch,
                                             lin);
        } else if (what == 1) {
            rc |= vidmm_swizzle_plan_deswizzle(plan, &box, g_tiled, (size_t)info.tiled_size, g_dst, lin, pitch,
                                               lin);
        } else {
            vidmm_swizzle_plan *p = NULL;
            rc |= vidmm_swizzle_plan_create(&L, &S, 0, 0, NULL, &p);
            vidmm_swizzle_plan_destroy(p);
        }
    }
    row_end(name, reps, rc);
    vidmm_swizzle_plan_destroy(plan);
}

#ifdef VIDMM_SWIZZLE_TUNE_BUDGET_NS /* the measured plans (0.6): trees before them have no such row */
/* A swizzle plan with a forced walk (vidmm_swizzle_plan_force_walk()): the plan of mip 0 of a
 * 1024x1024 surface, walk 1 of its candidates - the first besides the default, a fixed choice
 * per backend - forced in the row's direction, and one whole-subresource copy through it: the
 * out-of-line path a measured plan's whole copies take (swizzle_plan.c copy_sub_tuned(); box
 * copies keep the default walk, so the box rows above never reach it). A backend with one walk
 * only (scalar: the reference walk) has no row, as a write-watch backend the kernel refuses. */
static void row_swizzle_plan_forced(const struct swz_family *f, bool deswizzle)
{
    char name[64];
    const uint32_t side = swz_sides[NSIDES - 1];
    snprintf(name, sizeof(name), "%s_forced/%s/%ux%u", deswizzle ? "deswizzle_plan" : "swizzle_plan", f->name, side,
             side);
    struct vidmm_tile_layout L;
    struct vidmm_surface_desc S;
    swz_describe(f, side, &L, &S);
    vidmm_swizzle_plan *plan = NULL;
    uint32_t walks = 0;
    if (vidmm_swizzle_plan_create(&L, &S, 0, 0, NULL, &plan) != 0 ||
        vidmm_swizzle_plan_walk_candidates(plan, deswizzle, &walks) != 0 || walks < 2 || !row_wanted(name)) {
        vidmm_swizzle_plan_destroy(plan);
        return;
    }
    const unsigned reps = 1; /* 4 MiB, as the whole-surface rows */
    struct vidmm_swizzle_plan_info info = { .size = sizeof(info) };
    int rc = vidmm_swizzle_plan_force_walk(plan, deswizzle, 1);
    if (rc == 0)
        rc = vidmm_swizzle_plan_info(plan, &info);
    if (rc == 0 && (info.tune_source != VIDMM_SWIZZLE_TUNE_FORCED || info.tiled_size > g_tiled_cap))
        rc = VIDMM_E_INVALID_ARG;
    if (rc != 0) {
        row_setup_failed(name, "vidmm_swizzle_plan_force_walk", rc);
        vidmm_swizzle_plan_destroy(plan);
        return;
    }
    const size_t lin = (size_t)info.linear_size, pitch = (size_t)S.width * S.element_bytes;
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        if (deswizzle)
            rc |= vidmm_swizzle_plan_deswizzle(plan, NULL, g_tiled, (size_t)info.tiled_size, g_dst, lin, pitch, lin);
        else
            rc |= vidmm_swizzle_plan_swizzle(plan, NULL, g_tiled, (size_t)info.tiled_size, g_src, lin, pitch, lin);
    }
    row_end(name, reps, rc);
    vidmm_swizzle_plan_destroy(plan);
}
#endif

/* WDDM2 (include/vidmm/wddm2.h): MakeResident + Evict of a resident list of 'n' 4 KiB
 * allocations of distinct priorities (the reference count goes 1 -> 2 -> 1: nothing is paged),
 * SCALE_ELEMS elements per row. */
#define W2_PROCESS 7u
/* WDDM2 MakeResident + Evict of a list of n. 'named': each call names its process (issue 27
 * item 4: every allocation's owner is checked), else none (process 0). */
static void row_w2_residency(uint32_t n, bool named)
{
    char name[64];
    /* The named row is one length, not a scaling family (no "/n"). */
    snprintf(name, sizeof(name), named ? "wddm2/make_resident_evict_named/%u" : "wddm2/make_resident_evict_prio/n%u",
             (unsigned)n);
    if (!row_wanted(name))
        return;
    const unsigned reps = SCALE_ELEMS / n;
    vidmm_device *dev = NULL;
    vidmm_handle *h = calloc(n, sizeof(*h));
    int rc = h != NULL ? gate_device_ex((uint64_t)n * 4 * KiB, 0, VIDMM_DEVICE_WDDM2, 0, &dev) : VIDMM_E_NO_MEMORY;
    if (rc == 0)
        rc = prio_list(dev, n, 4 * KiB, W2_PROCESS, true, h);
    if (rc != 0) {
        row_setup_failed(name, "building the residency list", rc);
        vidmm_device_destroy(dev);
        free(h);
        return;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        struct vidmm_make_resident_args mr = { .size_of = sizeof(mr), .allocations = h, .count = n };
        struct vidmm_evict_args ev = { .size_of = sizeof(ev), .allocations = h, .count = n };
#ifdef VIDMM_EVICT_ARGS_V1_SIZE /* 0.4: the 'process' fields (this harness also builds older trees) */
        mr.process = ev.process = named ? W2_PROCESS : 0;
#endif
        int e = vidmm_wddm2_make_resident(dev, &mr);
        if (e == 0)
            e = vidmm_wddm2_evict(dev, &ev);
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
    free(h);
}

/* vidmm_alloc_create() + vidmm_alloc_destroy() of a 64 KiB allocation on a WDDM2 device (its
 * flags read in the WDDM2 layout, the descriptor normalized: read set = write set), with 64
 * live allocations of its process. */
static void row_w2_create_destroy(void)
{
    static const char name[] = "wddm2/alloc_create_destroy/live64";
    if (!row_wanted(name))
        return;
    const unsigned reps = 1000;
    vidmm_device *dev = NULL;
    int rc = gate_device_ex(65 * 64 * KiB, 0, VIDMM_DEVICE_WDDM2, 0, &dev);
    struct vidmm_alloc_desc d = alloc_desc(64 * KiB, 0);
    d.process = W2_PROCESS;
    vidmm_handle live[64];
    for (uint32_t i = 0; i < 64 && rc == 0; i++)
        rc = vidmm_alloc_create(dev, &d, &live[i]);
    if (rc != 0) {
        row_setup_failed(name, "building the live allocations", rc);
        vidmm_device_destroy(dev);
        return;
    }
    for (unsigned r = 0; r <= reps; r++) {
        if (r == 1)
            row_begin();
        vidmm_handle h;
        int e = vidmm_alloc_create(dev, &d, &h);
        if (e == 0)
            e = vidmm_alloc_destroy(dev, h);
        rc |= e;
    }
    row_end(name, reps, rc);
    vidmm_device_destroy(dev);
}

/* WDDM2 GPU virtual addresses: 64 allocations of 64 KiB on the residency list, mapped one after
 * the other in one reservation. Rows: 4096 translations spread over the 4 MiB (what the
 * emulator's GPU does per access), vidmm_va_submit() of the 64 ranges (written; the fence
 * signalled at once), and offer + reclaim of the 64 (nothing discarded: no memory pressure). */
#define W2_ALLOCS 64u
static void rows_w2_va(void)
{
    static const char *const names[] = { "wddm2/va_translate/4096", "wddm2/va_submit/64x65536",
                                         "wddm2/offer_reclaim/64x65536" };
    bool want[3];
    bool any = false;
    for (int i = 0; i < 3; i++)
        any |= want[i] = row_wanted(names[i]);
    if (!any)
        return;
    const uint64_t size = 64 * KiB;
    vidmm_device *dev = NULL;
    vidmm_va_space *sp = NULL;
    vidmm_handle h[W2_ALLOCS];
    struct vidmm_va_ref refs[W2_ALLOCS];
    uint64_t va = 0;
    int rc = gate_device_ex(W2_ALLOCS * size + 16 * MiB, 0, VIDMM_DEVICE_WDDM2, 0, &dev);
    for (uint32_t i = 0; i < W2_ALLOCS && rc == 0; i++) {
        struct vidmm_alloc_desc d = alloc_desc(size, 0);
        d.process = W2_PROCESS;
        rc = vidmm_alloc_create(dev, &d, &h[i]);
    }
    if (rc == 0) {
        struct vidmm_make_resident_args mr = { .size_of = sizeof(mr), .allocations = h, .count = W2_ALLOCS };
        rc = vidmm_wddm2_make_resident(dev, &mr);
        if (rc == VIDMM_PENDING)
            rc = vidmm_wddm2_paging_fence_wait(dev, mr.paging_fence, UINT64_MAX);
    }
    if (rc == 0)
        rc = vidmm_va_space_create(dev, W2_PROCESS, &sp);
    if (rc == 0)
        rc = vidmm_va_reserve(sp, 0, W2_ALLOCS * size, &va);
    for (uint32_t i = 0; i < W2_ALLOCS && rc == 0; i++) {
        rc = vidmm_va_map(sp, va + i * size, h[i], 0, size);
        refs[i] = (struct vidmm_va_ref){ va + i * size, size, VIDMM_REF_WRITE, 0 };
    }
    /* The mappings' page-table updates run with the first submission's paging. */
    uint64_t fence = 0;
    if (rc == 0 && (rc = vidmm_va_submit(sp, refs, W2_ALLOCS, 0, &fence)) == 0)
        rc = vidmm_fence_signal(dev, fence);
    if (rc != 0) {
        for (int i = 0; i < 3; i++)
            if (want[i])
                row_setup_failed(names[i], "building the VA space", rc);
        vidmm_va_space_destroy(sp);
        vidmm_device_destroy(dev);
        return;
    }
    if (want[0]) {
        const unsigned reps = 4096;
        rc = 0;
        uint64_t sum = 0;
        for (unsigned r = 0; r <= reps; r++) {
            if (r == 1)
                row_begin();
            struct vidmm_va_translation t;
            /* A prime stride: every allocation, every page, offsets within pages. */
            int e = vidmm_va_translate(sp, va + ((uint64_t)r * 40961u) % (W2_ALLOCS * size), &t);
            sum += t.offset;
            rc |= e;
        }
        row_end(names[0], reps, rc);
        if (rc == 0 && sum == 0) {
            g_failed++;
            fprintf(stderr, "vidmm_gate: %s: every translation gave offset 0\n", names[0]);
        }
    }
    if (want[1]) {
        const unsigned reps = 100;
        rc = 0;
        for (unsigned r = 0; r <= reps; r++) {
            if (r == 1)
                row_begin();
            int e = vidmm_va_submit(sp, refs, W2_ALLOCS, 0, &fence);
            if (e == 0)
                e = vidmm_fence_signal(dev, fence);
            rc |= e;
        }
        row_end(names[1], reps, rc);
    }
    if (want[2]) {
        const unsigned reps = 20;
        rc = 0;
        uint32_t results[W2_ALLOCS];
        bool lost = false;
        for (unsigned r = 0; r <= reps; r++) {
            if (r == 1)
                row_begin();
            struct vidmm_offer_args of = { .size_of = sizeof(of), .allocations = h, .count = W2_ALLOCS,
                                           .priority = VIDMM_OFFER_PRIORITY_NORMAL };
            struct vidmm_reclaim_args rec = { .size_of = sizeof(rec), .allocations = h, .count = W2_ALLOCS,
                                              .results = results };
            int e = vidmm_offer(dev, &of);
            if (e == 0)
                e = vidmm_reclaim(dev, &rec);
            for (uint32_t i = 0; e == 0 && i < W2_ALLOCS; i++)
                lost |= results[i] != VIDMM_RECLAIM_OK;
            rc |= e;
        }
        row_end(names[2], reps, rc);
        if (rc == 0 && lost) {
            g_failed++;
            fprintf(stderr, "vidmm_gate: %s: content discarded without memory pressure\n", names[2]);
        }
    }
    vidmm_va_space_destroy(sp);
    vidmm_device_destroy(dev);
}

static void rows_users(void)
{
    row_submit_one();
    for (size_t i = 0; i < NSCALE; i++)
        row_prio_list(scale_lengths[i], true);
    for (size_t i = 0; i < NSCALE; i++)
        row_prio_list(scale_lengths[i], false);
    row_pressure_prio(64);
    for (int mode = 0; mode < 4; mode++)
        row_lock_range(mode);
    row_writewatch(VIDMM_WRITEWATCH_UFFD);
    row_writewatch(VIDMM_WRITEWATCH_SOFTDIRTY);
    row_writewatch(VIDMM_WRITEWATCH_MPROTECT);
    for (int what = 0; what < 3; what++)
        row_swizzle_plan(&families[0], what);
    for (int what = 0; what < 2; what++)
        row_swizzle_plan(&families[1], what);
#ifdef VIDMM_SWIZZLE_TUNE_BUDGET_NS
    row_swizzle_plan_forced(&families[0], false);
    row_swizzle_plan_forced(&families[0], true);
#endif
    for (size_t i = 0; i < NSCALE; i++)
        row_w2_residency(scale_lengths[i], false);
#ifdef VIDMM_EVICT_ARGS_V1_SIZE
    row_w2_residency(1024, true);
#endif
    row_w2_create_destroy();
    rows_w2_va();
}

/* ---------------------------------------------------------------------------------------------
 * main.
 * ------------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: vidmm_gate [--backend scalar|sse2|avx2] [--filter SUBSTRING] [--swap-dir DIR] [--list]\n"
               "Runs every gated row once with a fixed amount of work; under valgrind --tool=callgrind\n"
               "--collect-atstart=no each row's instructions are dumped under its name.\n");
}

int main(int argc, char **argv)
{
    const char *backend = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--backend") == 0 && i + 1 < argc)
            backend = argv[++i];
        else if (strcmp(a, "--filter") == 0 && i + 1 < argc)
            g_filter = argv[++i];
        else if (strcmp(a, "--swap-dir") == 0 && i + 1 < argc)
            g_swap_dir = argv[++i];
        else if (strcmp(a, "--list") == 0)
            g_list = true;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }

    /* Fixed choices (see the top of the file). A backend the CPU (or Valgrind's CPU) lacks is
     * an error here, not a silent fallback: two runs must measure the same code. */
    if (backend != NULL) {
        int b = vidmm_backend_from_string(backend);
        if (b < 0 || !vidmm_backend_supported((enum vidmm_backend)b)) {
            fprintf(stderr, "vidmm_gate: backend '%s' is not supported here\n", backend);
            return 2;
        }
        vidmm_option_set_string(VIDMM_OPT_BACKEND, backend);
    }
    vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, (long long)GATE_NT_THRESHOLD);
    vidmm_option_set(VIDMM_OPT_CALIBRATE, 0);
    vidmm_option_set_string(VIDMM_OPT_WC_COPY, "nt");
    vidmm_kernels_reset();

    if (!g_list) {
        g_src = map_buffer(GATE_BUF);
        g_dst = map_buffer(GATE_BUF);
        fill_source(g_src, GATE_BUF);
        g_tiled_cap = swz_tiled_need();
        g_tiled = map_buffer(g_tiled_cap);
        /* The first lines the tool parses: what ran. */
        printf("# vidmm_gate: backend %s, vidmm %s, %s\n", vidmm_backend_name(), vidmm_version_string(),
               RUNNING_ON_VALGRIND ? "under valgrind" : "native (no counts)");
        fflush(stdout);
    }

    double t0 = now_s();
    rows_copy();
    rows_fill();
    rows_flush();
    rows_swizzle();
    rows_tile_runs();
    rows_engine();
    rows_users();
    if (!g_list && !RUNNING_ON_VALGRIND)
        printf("# %d rows in %.2f s, %d failed\n", g_rows, now_s() - t0, g_failed);
    return g_failed ? 1 : 0;
}
