/* SPDX-License-Identifier: MIT */
/* bench/bench_swizzle.c - tiling (swizzle: linear -> tiled) and untiling (deswizzle: tiled ->
 * linear) per layout family, element size and backend: whole surfaces of 256 KiB, 4 MiB and
 * 64 MiB, and a 64x64-element box inside the 64 MiB surface. The AUTO cases are timed in the same
 * rounds as references doing the same work (swz_rounds()): a whole surface against the
 * library's ordinary-store copy and its streaming copy of the same bytes, a box against its
 * rows copied to or from a pitch-linear surface of the same pitch.
 *
 * Names: swizzle/<family>_e<E>/<backend>/<bytes> and deswizzle/..., with _box64 after the
 * element size for the box; <bytes> is what one call moves (the box's bytes for the box).
 * AUTO ("auto") calls the public entry a caller would use: vidmm_swizzle_surface() for a
 * whole surface, vidmm_swizzle() for a box; a named backend goes through vidmm_swizzle_ex().
 *
 * The surfaces are square and single-mip: 1024x1024 / 4096x4096 of 4-byte elements, 512x512 /
 * 2048x2048 of 16-byte ones. The Intel layouts are defined on bytes (tiling.md 4.3), so their
 * surfaces have 1-byte elements and rows of W * E bytes: the same bytes as the others.
 *
 * Every case is checked the first time it runs, before it can report a speed: the case's call
 * in one direction, the scalar backend in the other, and the linear data must come back
 * (swz_check(), which also catches writes outside a box or past the linear data). The
 * EQUATION cases describe the D3D 64 KB table of their element size (tiling.md 5.2), and
 * their check goes through the built-in D3D 64 KB layout, so the generic equation path is held
 * to the family it must agree with. */
#include "b_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The three surface sizes (the L2, the LLC, DRAM), and the box: 64 x 64 elements starting at the
 * middle of the surface plus (33, 17) elements, so that it starts and ends inside tiles and, for
 * 4-byte elements, inside 16-byte runs, as an update of part of a texture usually does. */
#define SWZ_TINY (256 * B_KiB)
#define SWZ_SMALL (4 * B_MiB)
#define SWZ_LARGE (64 * B_MiB)
#define SWZ_BOX 64u
#define SWZ_BOX_DX 33u
#define SWZ_BOX_DY 17u
/* Bytes after the box in the linear destination that a box deswizzle must leave alone. */
#define SWZ_GUARD 4096u
#define SWZ_GUARD_BYTE 0xa5
/* Rounds against the references (swz_rounds()): how many, and the least time one side lasts. */
#define SWZ_ROUNDS_QUICK 15
#define SWZ_ROUNDS_FULL 31
#define SWZ_MAX_ROUNDS SWZ_ROUNDS_FULL
#define SWZ_ROUND_MIN_S 250e-6

/* The references a case's rounds time beside it (swz_rounds()): a whole surface against the
 * ordinary-store copy and the streaming copy of the same bytes, a box against the same box's
 * rows copied to or from a pitch-linear surface of the surface's pitch. */
enum swz_ref { SWZ_REF_ORDINARY, SWZ_REF_STREAMING, SWZ_REF_ROWS, SWZ_NREFS };
static const char *const swz_ref_names[SWZ_NREFS] = { "ordinary", "streaming", "rows" };

struct swz_family {
    const char *name;
    enum vidmm_tiling tiling;
    bool byte_columns;        /* Intel: element_bytes 1, x and widths in bytes */
    bool e4_only;             /* AMD SW_64KB_R_X is defined for 32 bpp only (tiling.md 5.4) */
    uint32_t amd_mode;
};

static const struct swz_family families[] = {
    { "bl", VIDMM_TILING_BLOCK_LINEAR, false, false, 0 },  /* automatic block height */
    { "intel_y", VIDMM_TILING_INTEL_Y, true, false, 0 },
    { "intel_4", VIDMM_TILING_INTEL_4, true, false, 0 },
    { "intel_x", VIDMM_TILING_INTEL_X, true, false, 0 },
    { "d3d64k", VIDMM_TILING_D3D_STD_64K, false, false, 0 },
    { "d3d4k", VIDMM_TILING_D3D_STD_4K, false, false, 0 },
    { "amd_rx", VIDMM_TILING_AMD_GFX10, false, true, 27 },  /* SW_64KB_R_X, Navi10 */
    { "eq", VIDMM_TILING_EQUATION, false, false, 0 },
    { "morton", VIDMM_TILING_MORTON, false, false, 0 },
    { "linear", VIDMM_TILING_LINEAR, false, false, 0 },
};
#define SWZ_NFAMILIES (sizeof(families) / sizeof(families[0]))

static const uint32_t elem_sizes[] = { 4, 16 };

/* The D3D 64 KB standard swizzle as generic equations (tiling.md 5.2): 32 bpp for 4-byte
 * elements, 128 bpp for 16-byte ones. Built once, before any case runs; the layouts point at
 * them, and the library reads them during each call. */
static struct vidmm_equation eq_e4, eq_e16;

/* Every address bit has one term: the x bits, lowest first, go to the set bits of 'xmask'
 * from the lowest up, and likewise the y bits to 'ymask'. */
static void eq_from_masks(struct vidmm_equation *eq, uint32_t bits, uint32_t xmask, uint32_t ymask)
{
    memset(eq, 0, sizeof(*eq));
    eq->bits = bits;
    eq->thick = false;
    uint8_t xi = 0, yi = 0;
    for (uint32_t b = 0; b < bits; b++) {
        if ((xmask >> b) & 1) {
            eq->term[b][0].channel = VIDMM_EQ_X;
            eq->term[b][0].bit = xi++;
        } else if ((ymask >> b) & 1) {
            eq->term[b][0].channel = VIDMM_EQ_Y;
            eq->term[b][0].bit = yi++;
        }
    }
}

/* What one case copies. */
struct swz_case {
    struct vidmm_tile_layout layout;   /* the case's layout */
    struct vidmm_tile_layout partner;  /* the layout the check's other direction uses */
    struct vidmm_surface_desc surf;
    struct vidmm_box box;              /* the box, or the whole mip */
    bool whole;                        /* the whole surface (box == the mip) */
    bool tile;                         /* swizzle (true) or deswizzle */
    size_t pitch;                      /* row pitch of the case's linear side */
    size_t lin_bytes;                  /* bytes of the case's linear side */
    uint64_t tiled_bytes;              /* vidmm_surface_tiled_size(), the larger of the layout's
                                          and the partner's */
    int size_err;                      /* what vidmm_surface_tiled_size() returned */
    int nrounds;                       /* rounds run (swz_rounds()), 0 before */
    double ratio[SWZ_NREFS][SWZ_MAX_ROUNDS]; /* each round's reference time / the case's time */
    vidmm_swizzle_plan *plan;          /* a plan case's plan, made at its first call */
};

static const char *backend_label(enum vidmm_backend b)
{
    const char *s = b == VIDMM_BACKEND_AUTO ? "auto" : vidmm_backend_to_string(b);
    return s ? s : "?";
}

/* ---------------------------------------------------------------------------------------------
 * One call, and the first-run check.
 * ------------------------------------------------------------------------------------------- */

/* Call 'call' of case 'z' once. A plan case makes its plan at its first call (the case
 * description is the case's own calloc()ed memory, so the plan is stored there). */
static int swz_call(const struct b_case *c, const struct swz_case *zc, enum b_call call)
{
    struct swz_case *z = (struct swz_case *)zc;
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = c->backend_id;
    const struct vidmm_box *box = z->whole ? NULL : &z->box;
    size_t slice = z->pitch * z->box.height;
    int rc;
    if ((call == B_CALL_PLAN_SWIZZLE || call == B_CALL_PLAN_DESWIZZLE) && z->plan == NULL &&
        (rc = vidmm_swizzle_plan_create(&z->layout, &z->surf, 0, 0, &o, &z->plan)) < 0)
        return rc;
    switch (call) {
    case B_CALL_PLAN_SWIZZLE:
        return vidmm_swizzle_plan_swizzle(z->plan, box, b_env.tiled, z->tiled_bytes, b_env.src, z->lin_bytes,
                                          z->pitch, slice);
    case B_CALL_PLAN_DESWIZZLE:
        return vidmm_swizzle_plan_deswizzle(z->plan, box, b_env.tiled, z->tiled_bytes, b_env.dst, z->lin_bytes,
                                            z->pitch, slice);
    case B_CALL_SWIZZLE_EX:
        return vidmm_swizzle_ex(&z->layout, &z->surf, 0, 0, box, b_env.tiled, z->tiled_bytes, b_env.src,
                                z->lin_bytes, z->pitch, slice, &o);
    case B_CALL_SWIZZLE:
        return vidmm_swizzle(&z->layout, &z->surf, 0, 0, box, b_env.tiled, z->tiled_bytes, b_env.src, z->lin_bytes,
                             z->pitch, slice);
    case B_CALL_SWIZZLE_SURFACE:
        return vidmm_swizzle_surface(&z->layout, &z->surf, b_env.tiled, z->tiled_bytes, b_env.src, z->lin_bytes);
    case B_CALL_DESWIZZLE_EX:
        return vidmm_deswizzle_ex(&z->layout, &z->surf, 0, 0, box, b_env.tiled, z->tiled_bytes, b_env.dst,
                                  z->lin_bytes, z->pitch, slice, &o);
    case B_CALL_DESWIZZLE:
        return vidmm_deswizzle(&z->layout, &z->surf, 0, 0, box, b_env.tiled, z->tiled_bytes, b_env.dst,
                               z->lin_bytes, z->pitch, slice);
    case B_CALL_DESWIZZLE_SURFACE:
        return vidmm_deswizzle_surface(&z->layout, &z->surf, b_env.tiled, z->tiled_bytes, b_env.dst, z->lin_bytes);
    default:
        return VIDMM_E_INVALID_ARG;
    }
}

/* The case's own call, once. */
static int swz_once(const struct b_case *c, const struct swz_case *z)
{
    return swz_call(c, z, c->call);
}

/* The other direction of the check: the scalar backend, the partner layout, the case's box (or
 * whole surface) and linear pitch, between the tiled buffer and 'linear'. */
static int swz_reference(const struct swz_case *z, bool tile, unsigned char *linear)
{
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = VIDMM_BACKEND_SCALAR;
    const struct vidmm_box *box = z->whole ? NULL : &z->box;
    size_t slice = z->pitch * z->box.height;
    if (tile)
        return vidmm_swizzle_ex(&z->partner, &z->surf, 0, 0, box, b_env.tiled, z->tiled_bytes, linear,
                                z->lin_bytes, z->pitch, slice, &o);
    return vidmm_deswizzle_ex(&z->partner, &z->surf, 0, 0, box, b_env.tiled, z->tiled_bytes, linear, z->lin_bytes,
                              z->pitch, slice, &o);
}

/* The number of nonzero bytes in [p, p + n); fast over mostly-zero memory. */
static size_t nonzero_bytes(const unsigned char *p, size_t n)
{
    size_t count = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        if (w == 0)
            continue;
        for (int k = 0; k < 8; k++)
            count += ((w >> (8 * k)) & 0xff) != 0;
    }
    for (; i < n; i++)
        count += p[i] != 0;
    return count;
}

static size_t first_difference(const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* Compares the case's linear data that came back in dst with the source, and the guard bytes
 * after it. Returns 0, or 1 with 'msg' filled. */
static int swz_compare(const struct swz_case *z, const char *what, char *msg, size_t cap)
{
    const unsigned char *src = b_env.src, *dst = b_env.dst;
    if (memcmp(dst, src, z->lin_bytes) != 0) {
        size_t at = first_difference(dst, src, z->lin_bytes);
        snprintf(msg, cap, "%s differs from the source at byte %zu (row %zu%s)", what, at, at / z->pitch,
                 z->whole ? "" : " of the box");
        return 1;
    }
    for (size_t i = 0; i < SWZ_GUARD; i++) {
        if (dst[z->lin_bytes + i] != SWZ_GUARD_BYTE) {
            snprintf(msg, cap, "%s wrote byte %zu past the end of the linear data", what, i);
            return 1;
        }
    }
    return 0;
}

/* Runs the case's call once and checks it against the scalar backend going the other way
 * (see the top of the file). Returns 0 when the data came back; a VIDMM_E_* code from a call
 * (with 'msg' filled when it was the reference's); or 1 with the mismatch in 'msg'.
 *
 * Swizzle: the tiled buffer is cleared, the case writes it, and the scalar deswizzle must give
 * the source back. For a box, the tiled buffer must also hold exactly as many nonzero bytes as
 * the box's source: a byte written outside the box shows up there without a scalar pass over
 * the whole 64 MiB surface (a stray zero byte would not, and would change nothing).
 * Deswizzle: the scalar swizzle writes the tiled buffer, the case reads it back.
 * Either way the linear destination starts as guard bytes, and those after the data must stay. */
static int swz_check(const struct b_case *c, const struct swz_case *z, char *msg, size_t cap)
{
    unsigned char *dst = b_env.dst, *tiled = b_env.tiled;
    int rc;

    msg[0] = '\0';
    memset(dst, SWZ_GUARD_BYTE, z->lin_bytes + SWZ_GUARD);
    if (z->tile) {
        /* Cleared first, so that a call which writes nothing can't pass on what an earlier case
         * left behind. */
        memset(tiled, 0, (size_t)z->tiled_bytes);
        if ((rc = swz_once(c, z)) < 0)
            return rc;
        if (!z->whole) {
            size_t want = nonzero_bytes(b_env.src, z->lin_bytes), got = nonzero_bytes(tiled, (size_t)z->tiled_bytes);
            if (got != want) {
                snprintf(msg, cap, "swizzling the box left %zu nonzero bytes in the cleared surface, not %zu: "
                         "it wrote outside the box", got, want);
                return 1;
            }
        }
        if ((rc = swz_reference(z, false, dst)) < 0) {
            snprintf(msg, cap, "the scalar deswizzle of the check returned %d (%s)", rc, vidmm_strerror(rc));
            return rc;
        }
        return swz_compare(z, "the scalar deswizzle of what the case swizzled", msg, cap);
    }
    if ((rc = swz_reference(z, true, b_env.src)) < 0) {
        snprintf(msg, cap, "the scalar swizzle of the check returned %d (%s)", rc, vidmm_strerror(rc));
        return rc;
    }
    if ((rc = swz_once(c, z)) < 0)
        return rc;
    return swz_compare(z, "the deswizzle of what the scalar backend swizzled", msg, cap);
}

/* ---------------------------------------------------------------------------------------------
 * Rounds against fair references (issue 26).
 *
 * This machine's memcpy of the same 4 MiB measures anywhere from 113 to 240 us from one minute
 * to the next (other guests share the host's caches and memory), so a ratio between two cases
 * timed a minute apart says as much about the host as about the code. The targets therefore
 * read medians over rounds that time the case and its references in turn, the order rotating
 * from round to round, each round's ratio a reference's time over the case's.
 *
 * The references do the same work as the case:
 *   - a whole surface: the same bytes between the case's own buffers (source -> tiled surface
 *     for a swizzle, tiled surface -> destination for a deswizzle), with the library's
 *     ordinary-store copy (vidmm_copy_ex(), VIDMM_STRATEGY_TEMPORAL: vector loads and stores,
 *     no REP MOVSB) and with its streaming copy (VIDMM_STRATEGY_NONTEMPORAL: streaming stores
 *     and a store fence), the latter the machine's memory speed - the physical limit at 64 MiB;
 *   - a box: the box's rows between the case's linear buffer (the box's own pitch, as the case)
 *     and a pitch-linear surface of the tiled surface's pitch at the box's place (the tiled
 *     buffer, read as pitch-linear): the same rows with the same strides, where a contiguous
 *     memcpy of the box's 16 KiB is not the same work.
 * Each side is timed after itself: one untimed call of the side, then its timed batch (at least
 * SWZ_ROUND_MIN_S), so that no timed call follows the other side's stores. A side right after
 * streaming stores to the same memory pays for them (the issue measured +100-285% on the next
 * writer), and the earlier paired rounds, timed right after each other, charged a swizzle with
 * what memcpy left behind.
 * ------------------------------------------------------------------------------------------- */

/* One call of reference 'ref' of case 'z' ('n' bytes for a whole surface). */
static int swz_ref_once(const struct swz_case *z, enum swz_ref ref, size_t n)
{
    if (ref == SWZ_REF_ROWS) {
        /* The surface's pitch and the box's first byte in it (Intel: x and widths in bytes). */
        const size_t ebytes = z->surf.element_bytes, spitch = (size_t)z->surf.width * ebytes;
        const size_t rowb = (size_t)z->box.width * ebytes;
        unsigned char *pl = b_env.tiled + (size_t)z->box.y * spitch + (size_t)z->box.x * ebytes;
        for (uint32_t r = 0; r < z->box.height; r++) {
            if (z->tile)
                memcpy(pl + r * spitch, b_env.src + r * z->pitch, rowb);
            else
                memcpy(b_env.dst + r * z->pitch, pl + r * spitch, rowb);
        }
        return 0;
    }
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.strategy = ref == SWZ_REF_STREAMING ? VIDMM_STRATEGY_NONTEMPORAL : VIDMM_STRATEGY_TEMPORAL;
    if (z->tile)
        return vidmm_copy_ex(b_env.tiled, b_env.src, n, VIDMM_MEM_CACHED, &o);
    return vidmm_copy_ex(b_env.dst, b_env.tiled, n, VIDMM_MEM_CACHED, &o);
}

static void swz_rounds(const struct b_case *c, struct swz_case *z)
{
    const int want = b_env.mode == B_MODE_FULL    ? SWZ_ROUNDS_FULL
                     : b_env.mode == B_MODE_SMOKE ? 1
                                                  : SWZ_ROUNDS_QUICK;
    const size_t n = c->bytes;
    /* sides[0] is the case (-1), the others its references. */
    int sides[3] = { -1, SWZ_REF_ROWS, -1 }, nsides = 2;
    if (z->whole) {
        sides[1] = SWZ_REF_ORDINARY;
        sides[2] = SWZ_REF_STREAMING;
        nsides = 3;
    }
    if (z->whole && (n > b_env.tiled_cap || n > b_env.cap))
        return;
    if (z->nrounds > 0)
        return;
    double t0 = b_now_s();
    if (swz_once(c, z) != 0)
        return;
    double one = b_now_s() - t0;
    unsigned k = one >= SWZ_ROUND_MIN_S ? 1u : (unsigned)(SWZ_ROUND_MIN_S / (one > 1e-9 ? one : 1e-9)) + 1;
    for (int r = 0; r < want; r++) {
        double t[3] = { 0, 0, 0 };
        int rc = 0;
        for (int side = 0; side < nsides; side++) {
            const int which = (side + r) % nsides;
            const int ref = sides[which];
            for (unsigned i = 0; i <= k; i++) {
                if (i == 1)
                    t0 = b_now_s(); /* call 0 is the untimed one after the other side */
                rc |= ref < 0 ? swz_once(c, z) : swz_ref_once(z, (enum swz_ref)ref, n);
                b_clobber();
            }
            t[which] = b_now_s() - t0;
        }
        if (rc != 0 || !(t[0] > 0)) {
            z->nrounds = 0; /* no figure rather than a partial one */
            return;
        }
        for (int w = 1; w < nsides; w++)
            z->ratio[sides[w]][z->nrounds] = t[w] / t[0];
        z->nrounds++;
    }
}

/* The median over case 'name''s rounds of reference 'ref''s time over the case's ("ordinary",
 * "streaming" or "rows"), or NAN with '*why'; '*rounds' says how many (b_report.c). */
double b_swz_ref_ratio(const char *name, const char *ref, int *rounds, const char **why)
{
    int idx = b_case_find(name);
    const struct b_case *c = idx < 0 ? NULL : b_case_at((size_t)idx);
    *rounds = 0;
    *why = "no rounds (the case did not run or failed)";
    if (c == NULL || c->body != b_swizzle_body)
        return NAN;
    const struct swz_case *z = c->spec;
    int which = -1;
    for (int i = 0; i < SWZ_NREFS; i++)
        if (strcmp(ref, swz_ref_names[i]) == 0)
            which = i;
    if (which < 0 || (which == SWZ_REF_ROWS) == z->whole) {
        *why = "not a reference of this case";
        return NAN;
    }
    if (z->nrounds == 0)
        return NAN;
    double v[SWZ_MAX_ROUNDS];
    memcpy(v, z->ratio[which], sizeof(double) * (size_t)z->nrounds);
    *rounds = z->nrounds;
    *why = NULL;
    return b_median(v, z->nrounds);
}

/* ---------------------------------------------------------------------------------------------
 * The body.
 * ------------------------------------------------------------------------------------------- */

void b_swizzle_body(vbench_state *st, const void *arg)
{
    const struct b_case *c = arg;
    const struct swz_case *z = c->spec;
    char msg[192];
    const char *why = c->pre_skip ? c->pre_skip : b_backend_skip_reason(c->backend_id);
    if (why != NULL) {
        vbench_skip(st, why);
        return;
    }
    if (z->size_err != 0) {
        snprintf(msg, sizeof(msg), "vidmm_surface_tiled_size() returned %d (%s)", z->size_err,
                 vidmm_strerror(z->size_err));
        vbench_fail(st, msg);
        return;
    }
    if (b_env.tiled == NULL || z->tiled_bytes > b_env.tiled_cap || z->lin_bytes + SWZ_GUARD > b_env.cap) {
        vbench_fail(st, "the buffers are smaller than the surface (a bench bug)");
        return;
    }

    /* As in bench_copy.c: prefaulted buffers and one untimed call before the clock starts; the
     * first time, the check runs first (it makes one call of its own). */
    int rc = 0;
    if (b_first_run(c)) {
        rc = swz_check(c, z, msg, sizeof(msg));
        if (rc == 1) {
            vbench_fail(st, msg);
            return;
        }
        if (rc < 0 && msg[0] != '\0') {
            vbench_fail(st, msg);
            return;
        }
    }
    if (rc == 0)
        rc = swz_once(c, z);
    if (rc == VIDMM_E_UNSUPPORTED) {
        vbench_skip(st, "layout or backend refused (VIDMM_E_UNSUPPORTED)");
        return;
    }
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "returned %d (%s)", rc, vidmm_strerror(rc));
        vbench_fail(st, msg);
        return;
    }

    vbench_set_bytes_per_iteration(st, c->bytes);
    rc = 0;
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = c->backend_id;
    const struct vidmm_tile_layout *L = &z->layout;
    const struct vidmm_surface_desc *S = &z->surf;
    const struct vidmm_box *box = z->whole ? NULL : &z->box;
    unsigned char *t = b_env.tiled, *d = b_env.dst;
    const unsigned char *s = b_env.src;
    size_t tn = (size_t)z->tiled_bytes, ln = z->lin_bytes, pitch = z->pitch, slice = z->pitch * z->box.height;
    switch (c->call) {
    case B_CALL_SWIZZLE_EX: B_TIMED(st, rc, vidmm_swizzle_ex(L, S, 0, 0, box, t, tn, s, ln, pitch, slice, &o)); break;
    case B_CALL_SWIZZLE: B_TIMED(st, rc, vidmm_swizzle(L, S, 0, 0, box, t, tn, s, ln, pitch, slice)); break;
    case B_CALL_SWIZZLE_SURFACE: B_TIMED(st, rc, vidmm_swizzle_surface(L, S, t, tn, s, ln)); break;
    case B_CALL_DESWIZZLE_EX:
        B_TIMED(st, rc, vidmm_deswizzle_ex(L, S, 0, 0, box, t, tn, d, ln, pitch, slice, &o));
        break;
    case B_CALL_DESWIZZLE: B_TIMED(st, rc, vidmm_deswizzle(L, S, 0, 0, box, t, tn, d, ln, pitch, slice)); break;
    case B_CALL_DESWIZZLE_SURFACE: B_TIMED(st, rc, vidmm_deswizzle_surface(L, S, t, tn, d, ln)); break;
    case B_CALL_PLAN_SWIZZLE:
        B_TIMED(st, rc, vidmm_swizzle_plan_swizzle(z->plan, box, t, tn, s, ln, pitch, slice));
        break;
    case B_CALL_PLAN_DESWIZZLE:
        B_TIMED(st, rc, vidmm_swizzle_plan_deswizzle(z->plan, box, t, tn, d, ln, pitch, slice));
        break;
    default: vbench_fail(st, "not a swizzle case"); return;
    }
    if (rc != 0) {
        vbench_fail(st, "a timed call returned an error");
        return;
    }
    if (c->backend_id == VIDMM_BACKEND_AUTO)
        swz_rounds(c, (struct swz_case *)z); /* c->spec is the case's own calloc()ed description */
}

/* ---------------------------------------------------------------------------------------------
 * The cases.
 * ------------------------------------------------------------------------------------------- */

/* Quick mode: the project's 2-core machine has ~90 s for the swizzle cases on top of the
 * ~130 s of the rest, and a case costs ~0.45 s there however fast its call is (5 repetitions
 * of 0.05 s, Google Benchmark sizing the iteration count, the untimed calls; ~0.6 s at
 * 64 MiB). Measured there: the named backends at 4 MiB plus AUTO for the rest took ~105 s;
 * with 16-byte elements at AUTO only, ~87 s. So outside --full:
 *   - the named backends (scalar, sse2, avx2, avx512) run on the 4 MiB surfaces of 4-byte
 *     elements only;
 *   - 64 MiB surfaces, boxes and 16-byte elements run at AUTO only;
 *   - boxes of 16-byte elements don't run;
 *   - 256 KiB surfaces run at AUTO with 4-byte elements only (22 cases, ~10 s).
 * That leaves ~156 cases, ~77 s, plus the 256 KiB surfaces and the plan boxes (10 cases). AUTO is
 * what the targets are read on (4-byte elements).
 * --full runs everything; --vbench_mode=targets runs the target cases, all AUTO; --vbench_mode=smoke
 * quick mode's cases, once each. */
static const char *quick_skip(enum vidmm_backend b, uint32_t e, size_t surface_bytes, bool whole)
{
    if (b_env.mode != B_MODE_QUICK && b_env.mode != B_MODE_SMOKE)
        return NULL;
    if (!whole && e != 4)
        return "outside --full: boxes of 4-byte elements only";
    if (surface_bytes == SWZ_TINY && e != 4)
        return "outside --full: 256 KiB surfaces of 4-byte elements only";
    if (b == VIDMM_BACKEND_AUTO || (whole && surface_bytes == SWZ_SMALL && e == 4))
        return NULL;
    return "outside --full: named backends on 4 MiB surfaces of 4-byte elements only";
}

static uint32_t side_of(size_t elements)
{
    uint32_t s = 1;
    while ((uint64_t)s * s < elements)
        s *= 2;
    return s;
}

/* Adds a memcpy baseline of 'bytes' unless one exists (bench_copy.c adds those of b_sizes). */
static void memcpy_baseline(size_t bytes)
{
    char name[B_NAME_MAX];
    b_ref_name(name, sizeof(name), B_REF_MEMCPY, bytes);
    if (b_case_find(name) >= 0)
        return;
    struct b_case *c = b_case_add("baseline", "memcpy", "libc", bytes, b_copy_body);
    c->call = B_CALL_MEMCPY;
}

/* Fills the description of one surface of 'surface_bytes' of linear data with elements of 'e'
 * bytes in family 'f', and the box or whole-surface copy of it. */
static struct swz_case *swz_describe(const struct swz_family *f, uint32_t e, size_t surface_bytes, bool whole,
                                     bool tile)
{
    struct swz_case *z = calloc(1, sizeof(*z));
    if (z == NULL) {
        fprintf(stderr, "vidmm_bench: out of memory\n");
        exit(2);
    }
    uint32_t side = side_of(surface_bytes / e);
    uint32_t ebytes = f->byte_columns ? 1 : e;   /* Intel: 1-byte elements, W * E per row */
    uint32_t width = f->byte_columns ? side * e : side;

    struct vidmm_tile_layout init = VIDMM_TILE_LAYOUT_INIT(f->tiling);
    z->layout = init;
    z->layout.amd_swizzle_mode = f->amd_mode;
    z->partner = z->layout;
    if (f->tiling == VIDMM_TILING_EQUATION) {
        z->layout.equation = e == 4 ? &eq_e4 : &eq_e16;
        struct vidmm_tile_layout d3d = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_D3D_STD_64K);
        z->partner = d3d;
    }
    z->surf.size = sizeof(z->surf);
    z->surf.width = width;
    z->surf.height = side;
    z->surf.depth = 1;
    z->surf.element_bytes = ebytes;
    z->surf.block_width = z->surf.block_height = 1;
    z->surf.mip_levels = 1;
    z->surf.array_layers = 1;
    z->whole = whole;
    z->tile = tile;
    if (whole) {
        struct vidmm_box b = { 0, 0, 0, width, side, 1 };
        z->box = b;
    } else {
        uint32_t w = f->byte_columns ? SWZ_BOX * e : SWZ_BOX;
        uint32_t x = f->byte_columns ? (side / 2 + SWZ_BOX_DX) * e : side / 2 + SWZ_BOX_DX;
        struct vidmm_box b = { x, side / 2 + SWZ_BOX_DY, 0, w, SWZ_BOX, 1 };
        z->box = b;
    }
    z->pitch = (size_t)z->box.width * ebytes;
    z->lin_bytes = z->pitch * z->box.height;
    z->size_err = vidmm_surface_tiled_size(&z->layout, &z->surf, &z->tiled_bytes);
    if (z->size_err == 0) {
        /* The check's partner layout must take the same tiled buffer. */
        uint64_t other = 0;
        int err = vidmm_surface_tiled_size(&z->partner, &z->surf, &other);
        if (err != 0)
            z->size_err = err;
        else if (other > z->tiled_bytes)
            z->tiled_bytes = other;
    }
    return z;
}

void b_swizzle_cases(size_t bytes)
{
    if (bytes != SWZ_TINY && bytes != SWZ_SMALL && bytes != SWZ_LARGE)
        return;
    eq_from_masks(&eq_e4, 16, 0xAA8Fu, 0x5570u);   /* D3D 64 KB, 32 bpp */
    eq_from_masks(&eq_e16, 16, 0xAACFu, 0x5530u);  /* D3D 64 KB, 128 bpp */

    /* Whole surfaces of 'bytes', then (64 MiB) the boxes. */
    for (int pass = 0; pass < (bytes == SWZ_LARGE ? 2 : 1); pass++) {
        bool whole = pass == 0;
        for (size_t fi = 0; fi < SWZ_NFAMILIES; fi++) {
            const struct swz_family *f = &families[fi];
            for (size_t ei = 0; ei < sizeof(elem_sizes) / sizeof(elem_sizes[0]); ei++) {
                uint32_t e = elem_sizes[ei];
                if (f->e4_only && e != 4)
                    continue;
                size_t moved = whole ? bytes : (size_t)SWZ_BOX * SWZ_BOX * e;
                if (!whole)
                    memcpy_baseline(moved);
                char variant[24];
                snprintf(variant, sizeof(variant), "%s_e%u%s", f->name, (unsigned)e, whole ? "" : "_box64");
                for (int dir = 0; dir < 2; dir++) {
                    bool tile = dir == 0;
                    for (size_t bi = 0; bi <= b_nbackends; bi++) {
                        enum vidmm_backend b = bi < b_nbackends ? b_backends[bi] : VIDMM_BACKEND_AUTO;
                        struct b_case *c = b_case_add(tile ? "swizzle" : "deswizzle", variant, backend_label(b),
                                                      moved, b_swizzle_body);
                        struct swz_case *z = swz_describe(f, e, bytes, whole, tile);
                        c->spec = z;
                        c->backend_id = b;
                        if (b != VIDMM_BACKEND_AUTO)
                            c->call = tile ? B_CALL_SWIZZLE_EX : B_CALL_DESWIZZLE_EX;
                        else if (whole)
                            c->call = tile ? B_CALL_SWIZZLE_SURFACE : B_CALL_DESWIZZLE_SURFACE;
                        else
                            c->call = tile ? B_CALL_SWIZZLE : B_CALL_DESWIZZLE;
                        c->buf_bytes = z->lin_bytes + SWZ_GUARD;   /* the check's guard */
                        c->pre_skip = quick_skip(b, e, bytes, whole);
                        c->ref = B_REF_MEMCPY;
                        b_ref_name(c->ref_name, sizeof(c->ref_name), c->ref, moved);
                    }
                    if (whole)
                        continue;
                    /* The same box through a plan made once (AUTO), for the case table; no
                     * target reads it (the one-shot call above already runs a cached plan). */
                    char pvariant[32];
                    snprintf(pvariant, sizeof(pvariant), "%s_plan", variant);
                    struct b_case *c = b_case_add(tile ? "swizzle" : "deswizzle", pvariant, "auto", moved,
                                                  b_swizzle_body);
                    struct swz_case *z = swz_describe(f, e, bytes, whole, tile);
                    c->spec = z;
                    c->backend_id = VIDMM_BACKEND_AUTO;
                    c->call = tile ? B_CALL_PLAN_SWIZZLE : B_CALL_PLAN_DESWIZZLE;
                    c->buf_bytes = z->lin_bytes + SWZ_GUARD;
                    c->pre_skip = quick_skip(VIDMM_BACKEND_AUTO, e, bytes, whole);
                    c->ref = B_REF_MEMCPY;
                    b_ref_name(c->ref_name, sizeof(c->ref_name), c->ref, moved);
                }
            }
        }
    }
}

int b_swizzle_alloc(void)
{
    size_t need = 0;
    for (size_t i = 0; i < b_case_count(); i++) {
        const struct b_case *c = b_case_at(i);
        if (!c->selected || c->body != b_swizzle_body || c->pre_skip != NULL)
            continue;
        const struct swz_case *z = c->spec;
        if (z->size_err == 0 && z->tiled_bytes > need)
            need = (size_t)z->tiled_bytes;
    }
    if (need == 0)
        return 0;
    b_env.tiled = b_map_prefaulted(need);
    if (b_env.tiled == NULL) {
        fprintf(stderr, "vidmm_bench: cannot map %zu MiB for the tiled surfaces\n", need / B_MiB);
        return -1;
    }
    b_env.tiled_cap = need;
    return 0;
}
