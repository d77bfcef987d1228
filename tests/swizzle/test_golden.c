/* SPDX-License-Identifier: MIT */
/* tests/swizzle/test_golden.c - the golden vectors of shared/golden (tiling.md 1.6) on every
 * backend: sizes, tiling into a filled buffer compared byte for byte with the tiled file,
 * untiling into a 0xA5-filled buffer compared with the linear file (bytes outside an Intel
 * rectangle must keep 0xA5), guard bytes and guard pages around every buffer, and the files'
 * FNV-1a 64 against the manifest.
 *
 * Suites: golden_<backend>/<family> force a backend through the _ex calls, one subresource at a
 * time (box NULL; the Intel rectangle as a box); golden_default/<family> goes through the
 * dispatcher with vidmm_swizzle_surface() / vidmm_deswizzle_surface() (and the plain box calls
 * for Intel), and is what CTest re-runs once per VIDMM_BACKEND. golden_files checks the files
 * themselves and that the test's own reference model (ref_model.c) reproduces every case. A
 * missing golden directory or manifest is a skip, never a pass. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"
#include "vidmm/swizzle.h"
#include "ref_model.h"
#include "swz_golden.h"

#define T_TIMEOUT 300
/* Guard bytes checked next to each buffer (the other side is a guard page). */
#define GUARD 256
#define LINEAR_FILL 0xA5

enum api_kind { API_EX, API_DEFAULT };

struct api {
    enum api_kind kind;
    enum vidmm_backend backend; /* API_EX */
};

static const char *api_label(const struct api *a, int placement)
{
    static char buf[128];
    if (a->kind == API_EX)
        snprintf(buf, sizeof(buf), "backend %s, _ex calls per subresource, %s", t_backend_label(a->backend),
                 placement == 0 ? "strategy auto, buffers end at a guard page"
                                : "nontemporal tiling / stream-load untiling, buffers start at a guard page");
    else
        snprintf(buf, sizeof(buf), "dispatcher (%s), whole-surface calls, buffers %s a guard page",
                 vidmm_backend_name(), placement == 0 ? "end at" : "start at");
    return buf;
}

static const char *family_name(enum golden_family f)
{
    switch (f) {
    case GF_BLOCK_LINEAR: return "block-linear (bl_)";
    case GF_INTEL: return "Intel (intel_)";
    case GF_EQUATION: return "D3D / AMD (d3d_, amd_)";
    case GF_MORTON: return "Morton (morton_)";
    }
    return "?";
}

/* ---------------------------------------------------------------------------------------------
 * Loading, with the skip rule.
 * ------------------------------------------------------------------------------------------- */
static void load_or_skip(struct golden_set *set)
{
    char err[512];
    int rc = golden_load(set, err, sizeof(err));
    if (rc == 1) {
        /* Also on stderr, which CTest reads (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt). */
        fprintf(stderr, "golden vectors unavailable: %s\n", err);
        cr_skip_test("golden vectors unavailable: %s", err);
    }
    cr_assert_eq(rc, 0, "golden manifest unreadable: %s", err);
    cr_assert_gt(set->n, 0, "golden manifest %s/manifest.json lists no case", set->dir);
}

/* The two files of a case, checked against the manifest's sizes and hashes. */
static bool load_files(const struct golden_set *set, const struct golden_case *c, unsigned char **lin, size_t *ll,
                       unsigned char **til, size_t *tl)
{
    char err[512], h[17];
    *lin = *til = NULL;
    if (!golden_read(set, c->linear_file, lin, ll, err, sizeof(err)) ||
        !golden_read(set, c->tiled_file, til, tl, err, sizeof(err))) {
        cr_expect(0, "golden %s: %s", c->id, err);
        free(*lin);
        *lin = NULL;
        return false;
    }
    bool ok = true;
    if (*ll != c->linear_bytes || *tl != c->tiled_bytes) {
        cr_expect(0, "golden %s: file sizes linear %zu / tiled %zu, manifest says %llu / %llu (corrupted golden?)",
                  c->id, *ll, *tl, (unsigned long long)c->linear_bytes, (unsigned long long)c->tiled_bytes);
        ok = false;
    }
    golden_fnv_hex(*lin, *ll, h);
    if (strcmp(h, c->fnv_linear) != 0) {
        cr_expect(0, "golden %s: FNV-1a 64 of %s is %s, manifest says %s (corrupted golden)", c->id, c->linear_file,
                  h, c->fnv_linear);
        ok = false;
    }
    golden_fnv_hex(*til, *tl, h);
    if (strcmp(h, c->fnv_tiled) != 0) {
        cr_expect(0, "golden %s: FNV-1a 64 of %s is %s, manifest says %s (corrupted golden)", c->id, c->tiled_file,
                  h, c->fnv_tiled);
        ok = false;
    }
    if (!ok) {
        free(*lin);
        free(*til);
        *lin = *til = NULL;
    }
    return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Guarded buffers: 'len' bytes flush against one guard page, GUARD sentinel bytes on the other
 * side (placement 0: the buffer ends at the trailing guard page; 1: it starts at the leading
 * one).
 * ------------------------------------------------------------------------------------------- */
struct gbuf {
    struct t_region r;
    unsigned char *p, *guard;
    size_t len;
};

static void gbuf_init(struct gbuf *g, size_t len, int placement, unsigned char fill)
{
    t_region_init(&g->r, len + GUARD);
    g->len = len;
    if (placement == 0) {
        g->p = g->r.hi - len;
        g->guard = g->p - GUARD;
    } else {
        g->p = g->r.lo;
        g->guard = g->p + len;
    }
    memset(g->guard, T_SENTINEL, GUARD);
    memset(g->p, fill, len);
}

static bool gbuf_guard_ok(const struct gbuf *g)
{
    return t_find_not(g->guard, GUARD, T_SENTINEL) < 0;
}

/* ---------------------------------------------------------------------------------------------
 * One case, one api, one placement.
 * ------------------------------------------------------------------------------------------- */
struct ctx {
    const struct golden_case *c;
    const struct golden_desc *d;
    const struct api *api;
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surf;
    const unsigned char *lin, *til;
    size_t ll, tl;
    int placement;
};

#define CASE_FMT "golden %s ('%s') [%s]: "
#define CASE_ARGS(x) (x)->c->id, (x)->c->args, api_label((x)->api, (x)->placement)

static int copy_sub(const struct ctx *x, bool tile, uint32_t mip, uint32_t layer, const struct vidmm_box *box,
                    unsigned char *tiled, unsigned char *lin, size_t lin_size, size_t row_pitch, size_t slice_pitch)
{
    /* Placement 0 runs the automatic strategy, placement 1 forces streaming stores (tiling) or
     * streaming loads (untiling from what could be write-combined memory). */
    enum vidmm_strategy st = x->placement == 0 ? VIDMM_STRATEGY_AUTO
                           : tile             ? VIDMM_STRATEGY_NONTEMPORAL
                                              : VIDMM_STRATEGY_STREAM_LOAD;
    struct vidmm_kernel_opts o = t_opts(x->api->backend, st);
    t_fault_context("%s %s mip %u layer %u (%s)", tile ? "tile" : "untile", x->c->id, mip, layer,
                    api_label(x->api, x->placement));
    if (x->api->kind == API_EX) {
        if (tile)
            return vidmm_swizzle_ex(&x->layout, &x->surf, mip, layer, box, tiled, x->tl, lin, lin_size, row_pitch,
                                    slice_pitch, &o);
        return vidmm_deswizzle_ex(&x->layout, &x->surf, mip, layer, box, tiled, x->tl, lin, lin_size, row_pitch,
                                  slice_pitch, &o);
    }
    if (tile)
        return vidmm_swizzle(&x->layout, &x->surf, mip, layer, box, tiled, x->tl, lin, lin_size, row_pitch,
                             slice_pitch);
    return vidmm_deswizzle(&x->layout, &x->surf, mip, layer, box, tiled, x->tl, lin, lin_size, row_pitch,
                           slice_pitch);
}

/* Tile or untile the whole surface (every layer and mip), the way the api says. */
static bool copy_whole(const struct ctx *x, bool tile, unsigned char *tiled, unsigned char *lin)
{
    const struct ref_surf *s = &x->d->s;
    if (x->api->kind == API_DEFAULT) {
        t_fault_context("%s_surface %s", tile ? "swizzle" : "deswizzle", x->c->id);
        int rc = tile ? vidmm_swizzle_surface(&x->layout, &x->surf, tiled, x->tl, lin, x->ll)
                      : vidmm_deswizzle_surface(&x->layout, &x->surf, tiled, x->tl, lin, x->ll);
        cr_expect_eq(rc, 0, CASE_FMT "vidmm_%sswizzle_surface() returned %d (%s)", CASE_ARGS(x), tile ? "" : "de",
                     rc, vidmm_strerror(rc));
        return rc == 0;
    }
    for (uint32_t l = 0; l < s->layers; l++)
        for (uint32_t m = 0; m < s->mips; m++) {
            struct vidmm_subresource_info info;
            memset(&info, 0, sizeof(info));
            info.size = sizeof(info);
            int rc = vidmm_surface_subresource(&x->layout, &x->surf, m, l, &info);
            if (rc != 0) {
                cr_expect(0, CASE_FMT "vidmm_surface_subresource(mip %u, layer %u) returned %d", CASE_ARGS(x), m, l,
                          rc);
                return false;
            }
            size_t row = (size_t)info.width * s->elem;
            if (info.linear_offset + info.linear_size > x->ll) {
                cr_expect(0, CASE_FMT "mip %u layer %u: linear offset %llu + size %llu beyond the %zu-byte file",
                          CASE_ARGS(x), m, l, (unsigned long long)info.linear_offset,
                          (unsigned long long)info.linear_size, x->ll);
                return false;
            }
            rc = copy_sub(x, tile, m, l, NULL, tiled, lin + info.linear_offset, (size_t)info.linear_size, row,
                          row * info.height);
            if (rc != 0) {
                cr_expect(0, CASE_FMT "%s of mip %u layer %u returned %d (%s)", CASE_ARGS(x),
                          tile ? "vidmm_swizzle_ex" : "vidmm_deswizzle_ex", m, l, rc, vidmm_strerror(rc));
                return false;
            }
        }
    return true;
}

/* Intel: the rectangle only, linear pointer at (x1, y1) of the pitch x rows file. */
static bool copy_rect(const struct ctx *x, bool tile, unsigned char *tiled, unsigned char *lin)
{
    const struct golden_desc *d = x->d;
    struct vidmm_box box = { d->x1, d->y1, 0, d->x2 - d->x1, d->y2 - d->y1, 1 };
    size_t start = (size_t)d->y1 * d->pitch + d->x1;
    int rc = copy_sub(x, tile, 0, 0, &box, tiled, lin + start, x->ll - start, (size_t)d->pitch,
                      (size_t)d->pitch * box.height);
    cr_expect_eq(rc, 0, CASE_FMT "%s of the rectangle returned %d (%s)", CASE_ARGS(x),
                 tile ? "swizzle" : "deswizzle", rc, vidmm_strerror(rc));
    return rc == 0;
}

static void report_diff(const struct ctx *x, const char *what, const unsigned char *got, const unsigned char *want,
                        size_t n)
{
    ptrdiff_t k = t_find_diff(got, want, n);
    if (k < 0)
        return;
    size_t count = 0;
    for (size_t i = (size_t)k; i < n; i++)
        count += got[i] != want[i];
    cr_expect(0, CASE_FMT "%s differs from the golden at byte %td (got 0x%02x, want 0x%02x; %zu bytes differ)",
              CASE_ARGS(x), what, k, got[k], want[k], count);
}

static void run_tile(const struct ctx *x, int placement)
{
    struct gbuf t;
    gbuf_init(&t, x->tl, placement, x->d->fill);
    /* The source is read-only for the library; copying it into a guarded buffer too catches reads
     * past its ends. */
    struct gbuf l;
    gbuf_init(&l, x->ll, placement, 0);
    memcpy(l.p, x->lin, x->ll);
    bool ok = x->d->family == GF_INTEL ? copy_rect(x, true, t.p, l.p) : copy_whole(x, true, t.p, l.p);
    if (ok)
        report_diff(x, "tiled output", t.p, x->til, x->tl);
    cr_expect(gbuf_guard_ok(&t), CASE_FMT "tiling wrote into the guard bytes %s the tiled buffer", CASE_ARGS(x),
              placement == 0 ? "before" : "after");
    cr_expect(t_find_diff(l.p, x->lin, x->ll) < 0, CASE_FMT "tiling modified its linear source", CASE_ARGS(x));
    t_region_fini(&t.r);
    t_region_fini(&l.r);
}

static void run_untile(const struct ctx *x, int placement)
{
    struct gbuf l;
    gbuf_init(&l, x->ll, placement, LINEAR_FILL);
    struct gbuf t;
    gbuf_init(&t, x->tl, placement, 0);
    memcpy(t.p, x->til, x->tl);
    bool ok = x->d->family == GF_INTEL ? copy_rect(x, false, t.p, l.p) : copy_whole(x, false, t.p, l.p);
    if (ok && x->d->family == GF_INTEL) {
        const struct golden_desc *d = x->d;
        size_t bad_in = 0, bad_out = 0, first = SIZE_MAX;
        for (size_t y = 0; y < d->rows; y++)
            for (size_t xb = 0; xb < d->pitch; xb++) {
                size_t i = y * d->pitch + xb;
                bool in = y >= d->y1 && y < d->y2 && xb >= d->x1 && xb < d->x2;
                unsigned char want = in ? x->lin[i] : LINEAR_FILL;
                if (l.p[i] != want) {
                    if (first == SIZE_MAX)
                        first = i;
                    if (in)
                        bad_in++;
                    else
                        bad_out++;
                }
            }
        cr_expect(bad_in == 0 && bad_out == 0,
                  CASE_FMT "untiled rectangle wrong: %zu bytes inside differ from the linear file, %zu bytes outside "
                  "lost their 0x%02x fill (first at byte %zu: row %zu, column %zu)",
                  CASE_ARGS(x), bad_in, bad_out, LINEAR_FILL, first, first / d->pitch, first % d->pitch);
    } else if (ok) {
        report_diff(x, "untiled output", l.p, x->lin, x->ll);
    }
    cr_expect(gbuf_guard_ok(&l), CASE_FMT "untiling wrote into the guard bytes %s the linear buffer", CASE_ARGS(x),
              placement == 0 ? "before" : "after");
    cr_expect(t_find_diff(t.p, x->til, x->tl) < 0, CASE_FMT "untiling modified its tiled source", CASE_ARGS(x));
    t_region_fini(&t.r);
    t_region_fini(&l.r);
}

static void check_sizes(const struct ctx *x)
{
    const struct ref_surf *s = &x->d->s;
    uint64_t tiled = 0, linear = 0;
    int rc = vidmm_surface_tiled_size(&x->layout, &x->surf, &tiled);
    cr_expect_eq(rc, 0, CASE_FMT "vidmm_surface_tiled_size() returned %d (%s)", CASE_ARGS(x), rc,
                 vidmm_strerror(rc));
    cr_expect(rc != 0 || tiled == x->tl, CASE_FMT "vidmm_surface_tiled_size() = %llu, tiled file has %zu bytes",
              CASE_ARGS(x), (unsigned long long)tiled, x->tl);
    rc = vidmm_surface_linear_size(&x->layout, &x->surf, &linear);
    cr_expect_eq(rc, 0, CASE_FMT "vidmm_surface_linear_size() returned %d (%s)", CASE_ARGS(x), rc,
                 vidmm_strerror(rc));
    if (x->d->family == GF_INTEL) {
        /* The linear file is the whole rounded surface (1.4); the library's packed order is the
         * surface's own width x height bytes. */
        cr_expect(x->ll == x->d->pitch * x->d->rows,
                  CASE_FMT "linear file has %zu bytes, pitch %llu x rows %llu (tiling.md 4.2) = %llu", CASE_ARGS(x),
                  x->ll, (unsigned long long)x->d->pitch, (unsigned long long)x->d->rows,
                  (unsigned long long)(x->d->pitch * x->d->rows));
        cr_expect(rc != 0 || linear == (uint64_t)s->width * s->height,
                  CASE_FMT "vidmm_surface_linear_size() = %llu, want width x height = %llu", CASE_ARGS(x),
                  (unsigned long long)linear, (unsigned long long)s->width * s->height);
    } else {
        cr_expect(rc != 0 || linear == x->ll, CASE_FMT "vidmm_surface_linear_size() = %llu, linear file has %zu",
                  CASE_ARGS(x), (unsigned long long)linear, x->ll);
    }
    /* The block height the generator reports for "mip" commands (1.3) is the one mip 0 uses. */
    if (x->d->result_block_height) {
        struct vidmm_subresource_info info;
        memset(&info, 0, sizeof(info));
        info.size = sizeof(info);
        rc = vidmm_surface_subresource(&x->layout, &x->surf, 0, 0, &info);
        cr_expect(rc == 0 && info.block_height == x->d->result_block_height,
                  CASE_FMT "mip 0 block height %u (rc %d), the generator used %u", CASE_ARGS(x), info.block_height,
                  rc, x->d->result_block_height);
    }
}

static void run_family(const struct api *api, enum golden_family fam)
{
    struct golden_set set;
    load_or_skip(&set);
    if (api->kind == API_EX)
        t_require_backend(api->backend);
    size_t ran = 0;
    for (size_t i = 0; i < set.n; i++) {
        const struct golden_case *c = &set.cases[i];
        struct golden_desc d;
        char err[512];
        if (!golden_describe(c, &d, err, sizeof(err))) {
            cr_expect(0, "%s", err);
            continue;
        }
        if (d.family != fam)
            continue;
        ran++;
        struct ctx x;
        memset(&x, 0, sizeof(x));
        x.c = c;
        x.d = &d;
        x.api = api;
        ref_to_public(&d.s, &x.layout, &x.surf);
        unsigned char *lin, *til;
        if (!load_files(&set, c, &lin, &x.ll, &til, &x.tl))
            continue;
        x.lin = lin;
        x.til = til;
        check_sizes(&x);
        for (x.placement = 0; x.placement < 2; x.placement++) {
            run_tile(&x, x.placement);
            run_untile(&x, x.placement);
        }
        free(lin);
        free(til);
    }
    cr_expect_gt(ran, 0, "the manifest in %s has no %s case", set.dir, family_name(fam));
    golden_free(&set);
}

#define GOLDEN_BACKEND_TESTS(tag, B)                                                                   \
    Test(golden_##tag, block_linear, .timeout = T_TIMEOUT)                                             \
    {                                                                                                  \
        struct api a = { API_EX, B };                                                                  \
        run_family(&a, GF_BLOCK_LINEAR);                                                               \
    }                                                                                                  \
    Test(golden_##tag, intel, .timeout = T_TIMEOUT)                                                    \
    {                                                                                                  \
        struct api a = { API_EX, B };                                                                  \
        run_family(&a, GF_INTEL);                                                                      \
    }                                                                                                  \
    Test(golden_##tag, d3d_amd, .timeout = T_TIMEOUT)                                                  \
    {                                                                                                  \
        struct api a = { API_EX, B };                                                                  \
        run_family(&a, GF_EQUATION);                                                                   \
    }                                                                                                  \
    Test(golden_##tag, morton, .timeout = T_TIMEOUT)                                                   \
    {                                                                                                  \
        struct api a = { API_EX, B };                                                                  \
        run_family(&a, GF_MORTON);                                                                     \
    }

T_FOR_EACH_BACKEND(GOLDEN_BACKEND_TESTS)

Test(golden_default, block_linear, .timeout = T_TIMEOUT)
{
    struct api a = { API_DEFAULT, VIDMM_BACKEND_AUTO };
    run_family(&a, GF_BLOCK_LINEAR);
}

Test(golden_default, intel, .timeout = T_TIMEOUT)
{
    struct api a = { API_DEFAULT, VIDMM_BACKEND_AUTO };
    run_family(&a, GF_INTEL);
}

Test(golden_default, d3d_amd, .timeout = T_TIMEOUT)
{
    struct api a = { API_DEFAULT, VIDMM_BACKEND_AUTO };
    run_family(&a, GF_EQUATION);
}

Test(golden_default, morton, .timeout = T_TIMEOUT)
{
    struct api a = { API_DEFAULT, VIDMM_BACKEND_AUTO };
    run_family(&a, GF_MORTON);
}

/* ---------------------------------------------------------------------------------------------
 * The files themselves, and the test's own oracle.
 * ------------------------------------------------------------------------------------------- */

/* Every case parses, both files exist with the manifest's sizes and hashes, and the linear
 * inputs follow the fill rules of 1.4 (so a regenerated golden with another input is noticed). */
Test(golden_files, manifest_and_hashes, .timeout = T_TIMEOUT)
{
    struct golden_set set;
    load_or_skip(&set);
    for (size_t i = 0; i < set.n; i++) {
        const struct golden_case *c = &set.cases[i];
        struct golden_desc d;
        char err[512];
        cr_expect(golden_describe(c, &d, err, sizeof(err)), "%s", err);
        unsigned char *lin, *til;
        size_t ll, tl;
        if (!load_files(&set, c, &lin, &ll, &til, &tl))
            continue;
        bool bl = strncmp(c->id, "bl_", 3) == 0;
        size_t bad = SIZE_MAX;
        for (size_t k = 0; k < ll && bad == SIZE_MAX; k++) {
            unsigned char want = bl ? (unsigned char)(((k / 4) >> (8 * (k % 4))) & 0xFF)
                                    : (unsigned char)((((uint64_t)k * 2654435761ull) >> 13) & 0xFF);
            if (lin[k] != want)
                bad = k;
        }
        cr_expect(bad == SIZE_MAX, "golden %s: linear byte %zu does not follow the fill rule of tiling.md 1.4", c->id,
                  bad);
        free(lin);
        free(til);
    }
    golden_free(&set);
}

/* The reference model of test_reference.c must reproduce every golden, or it is no oracle. */
Test(golden_files, model_reproduces_goldens, .timeout = T_TIMEOUT)
{
    struct golden_set set;
    load_or_skip(&set);
    for (size_t i = 0; i < set.n; i++) {
        const struct golden_case *c = &set.cases[i];
        struct golden_desc d;
        char err[512];
        if (!golden_describe(c, &d, err, sizeof(err))) {
            cr_expect(0, "%s", err);
            continue;
        }
        struct ref_layout L;
        if (!ref_prepare(&L, &d.s)) {
            cr_expect(0, "golden %s: the reference model does not cover '%s'", c->id, c->args);
            continue;
        }
        unsigned char *lin, *til;
        size_t ll, tl;
        if (!load_files(&set, c, &lin, &ll, &til, &tl))
            continue;
        cr_expect(L.tiled_size == tl, "golden %s: model tiled size %llu, file %zu", c->id,
                  (unsigned long long)L.tiled_size, tl);
        unsigned char *out = malloc(tl);
        cr_assert(out != NULL);
        memset(out, d.fill, tl);
        if (d.family == GF_INTEL) {
            for (uint32_t y = d.y1; y < d.y2; y++)
                for (uint32_t xb = d.x1; xb < d.x2; xb++) {
                    uint64_t a = ref_addr(&L, 0, 0, xb, y, 0);
                    if (a < tl)
                        out[a] = lin[(size_t)y * d.pitch + xb];
                }
        } else if (L.tiled_size == tl && L.linear_size == ll) {
            ref_tile_surface(&L, out, lin);
        } else {
            cr_expect(0, "golden %s: model linear size %llu, file %zu", c->id, (unsigned long long)L.linear_size, ll);
        }
        ptrdiff_t k = t_find_diff(out, til, tl);
        cr_expect(k < 0, "golden %s: the reference model differs from the golden at byte %td", c->id, k);
        free(out);
        free(lin);
        free(til);
    }
    golden_free(&set);
}
