/* SPDX-License-Identifier: MIT */
/* tests/fuzz/fuzz_swizzle.c - fuzz target for the swizzle API. Bytes become a layout (random
 * caller equations included), a surface, a subresource, a box, pitches, buffer sizes and a
 * store strategy; the size queries run, then a swizzle and a deswizzle of the box, and of the
 * whole surface, on EVERY backend this machine runs. Each buffer is mapped so that it ends
 * exactly at a PROT_NONE guard page (or, on request, starts right after one), so a kernel that
 * touches one byte outside crashes the run. Whatever the input:
 *   - every backend returns the scalar backend's code (the scalar backend is the reference
 *     walk: the address function per run) and, on success, its bytes exactly;
 *   - a refused call changes neither buffer; the source of a copy is never written;
 *   - where the layout is a bijection, the box comes back exactly and the linear bytes between
 *     rows and slices are never written;
 *   - where the independent model of tests/swizzle/ref_model.c covers the surface, the tiled
 *     sizes agree and the scalar swizzle puts each byte of a small box where the model says;
 *   - the same call through a swizzle plan gives the same code and bytes, and so does the plan
 *     on threads (the pool or a caller's job system; every copy cut, or the measured threshold).
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
 *   30 row pitch slack   31 slice pitch slack   32 strategy (mod 8: 0-1 AUTO, 2 TEMPORAL,
 *   3 NONTEMPORAL, 4 STREAM_LOAD, 5 MOVDIR64B, 6 LIBC, 7 out of range)
 *   33 operations (bit 0: the whole-surface calls too)   34 equation bits (mod 24)
 *   35 bit 0: thick equation; bit 1: a built equation (below) instead of raw terms
 *   36..115 equation terms, 2 per address bit, 2 bytes each (channel mod 5, bit mod 34); for a
 *           built equation the same bytes drive build_equation()
 *   116 tiled buffer size: 0-191 exact, else that many bytes short (192-223) or over (224-255)
 *   117 linear buffer size, the same way     118 bit 0: buffers start at their guard page;
 *   bit 1: the plan's copy on threads too, bits 2-3 how many (2 + n % 3), bit 4 the measured
 *   threshold (min_bytes 0, else 1), bit 5 a caller's job system (else the pool)
 *   the rest seeds the data. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "vidmm/vidmm.h"
#include "vidmm/swizzle.h"
#include "ref_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Surfaces and boxes larger than this are not copied: every input runs each call on every
 * backend into fresh guarded mappings, and 4 MiB still reaches every walk (the streaming ones
 * through the NONTEMPORAL strategy). */
#define FUZZ_MAX_BYTES ((uint64_t)4 << 20)
/* Boxes the model checks byte by byte (it computes one address per byte). */
#define MODEL_MAX_BYTES ((uint64_t)64 << 10)
/* Contiguous runs one copy may move (see max_bytes below). */
#define FUZZ_MAX_RUNS ((uint64_t)1 << 15)

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

/* A caller's job system: every band on this thread, the last first. */
static void reverse_for(void *ctx, uint32_t count, void (*job)(void *arg, uint32_t index), void *arg)
{
    (void)ctx;
    for (uint32_t i = count; i-- > 0;)
        job(arg, i);
}

#define FUZZ_CHECK(cond, ...)                                           \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "fuzz_swizzle: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            abort();                                                    \
        }                                                               \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Guarded buffers: 'n' usable bytes with a PROT_NONE page right after them (at_end) or right
 * before them (!at_end), and one more on the far side.
 * ------------------------------------------------------------------------------------------- */
struct gbuf {
    unsigned char *p;
    size_t n;
    void *map;
    size_t map_len;
};

static void gbuf_init(struct gbuf *g, size_t n, bool at_end)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (n + page - 1) / page * page;
    g->map_len = body + 2 * page;
    g->map = mmap(NULL, g->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FUZZ_CHECK(g->map != MAP_FAILED, "mmap of %zu bytes failed", g->map_len);
    unsigned char *lo = (unsigned char *)g->map + page;
    if (body != 0)
        FUZZ_CHECK(mprotect(lo, body, PROT_READ | PROT_WRITE) == 0, "mprotect failed");
    g->p = at_end ? lo + body - n : lo;
    g->n = n;
}

static void gbuf_fini(struct gbuf *g)
{
    munmap(g->map, g->map_len);
}

/* A pattern from the input's tail, so that copies move recognisable bytes. */
static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i += 8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        memcpy(p + i, &s, n - i < 8 ? n - i : 8);
    }
}

static bool all_equal(const unsigned char *p, size_t n, unsigned char v)
{
    return n == 0 || (p[0] == v && memcmp(p, p + 1, n - 1) == 0);
}

static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    if (memcmp(a, b, n) == 0)
        return n;
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* ---------------------------------------------------------------------------------------------
 * Equations.
 * ------------------------------------------------------------------------------------------- */

/* build_equation() makes a bijective equation from the input bytes (so that round trips and the
 * model apply): every coordinate bit of the block once, in an order the bytes shuffle (often
 * keeping x0..x3 as the low bits, as real layouts do), then up to four XOR terms on any address
 * bit - address bits 0..3 included - naming either a block bit placed on the same side of it
 * for all terms (the matrix stays triangular) or a coordinate bit above the block (2.1 "Full
 * coordinates"); 2D equations may also XOR bits of the array layer. The first term of each
 * address bit is its block bit, which is how the library picks the block where several fit. */
static void build_equation(struct producer *d, struct vidmm_equation *eq, uint32_t elem_log2, bool thick)
{
    uint32_t n = eq->bits;
    memset(eq->term, 0, sizeof(eq->term));
    eq->thick = thick;
    uint32_t cz = thick ? 1 + take8(d) % (n / 3 < 5 ? n / 3 : 5) : 0;
    uint32_t a_lo = elem_log2 > 1 ? elem_log2 : 1, a_hi = n - cz - 1;
    uint32_t a = a_hi >= a_lo ? a_lo + take8(d) % (a_hi - a_lo + 1) : a_lo;
    if (a + cz > n)
        a = n - cz;
    uint32_t b = n - a - cz;
    struct vidmm_eq_term order[VIDMM_EQ_MAX_BITS];
    uint32_t k = 0;
    for (uint32_t i = 0; i < a; i++)
        order[k++] = (struct vidmm_eq_term){ VIDMM_EQ_X, (uint8_t)i };
    for (uint32_t i = 0; i < b; i++)
        order[k++] = (struct vidmm_eq_term){ VIDMM_EQ_Y, (uint8_t)i };
    for (uint32_t i = 0; i < cz; i++)
        order[k++] = (struct vidmm_eq_term){ VIDMM_EQ_Z, (uint8_t)i };
    uint32_t fixed = take8(d) & 1 ? (a < 4 ? a : 4) : 0;
    for (uint32_t i = n - 1; i > fixed; i--) {
        uint32_t j = fixed + take8(d) % (i - fixed + 1);
        struct vidmm_eq_term t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (uint32_t i = 0; i < n; i++)
        eq->term[i][0] = order[i];
    const bool upward = take8(d) & 1;
    uint32_t extras = take8(d) % 5;
    for (uint32_t x = 0; x < extras; x++) {
        uint32_t sel = take8(d), i = take8(d) % n;
        struct vidmm_eq_term t;
        if (sel % 4 == 0) {
            t = (sel / 4) & 1 ? (struct vidmm_eq_term){ VIDMM_EQ_X, (uint8_t)(a + sel / 8 % 4) }
                              : (struct vidmm_eq_term){ VIDMM_EQ_Y, (uint8_t)(b + sel / 8 % 4) };
        } else if (sel % 4 == 1 && !thick) {
            t = (struct vidmm_eq_term){ VIDMM_EQ_Z, (uint8_t)(sel / 4 % 3) };
        } else if (upward && i + 1 < n) {
            t = order[i + 1 + sel / 4 % (n - 1 - i)];
        } else if (!upward && i > 0) {
            t = order[sel / 4 % i];
        } else {
            continue;
        }
        for (uint32_t s = 1; s < VIDMM_EQ_MAX_TERMS; s++)
            if (eq->term[i][s].channel == VIDMM_EQ_NONE) {
                eq->term[i][s] = t;
                break;
            }
    }
}

/* ---------------------------------------------------------------------------------------------
 * One call on every backend.
 * ------------------------------------------------------------------------------------------- */
static const enum vidmm_backend backends[] = { VIDMM_BACKEND_SCALAR, VIDMM_BACKEND_SSE2, VIDMM_BACKEND_AVX2,
                                               VIDMM_BACKEND_AVX512, VIDMM_BACKEND_NEON };
#define N_BACKENDS (sizeof(backends) / sizeof(backends[0]))

struct call {
    const struct vidmm_tile_layout *layout;
    const struct vidmm_surface_desc *surf;
    uint32_t mip, layer;
    const struct vidmm_box *box;   /* NULL: whole mip */
    bool whole_surface;            /* vidmm_(de)swizzle_surface_ex */
    size_t tiled_size, lin_size;   /* buffer sizes passed */
    size_t lin_exact;              /* whole surface: the packed linear size (lin_size may exceed it) */
    size_t row_pitch, slice_pitch;
    enum vidmm_strategy strategy;
    bool at_end;
    uint64_t seed;
    uint32_t threads;              /* byte 118 bits 1-5: the plan's copy on threads (below) */
};

static int do_call(const struct call *c, bool tile, enum vidmm_backend b, unsigned char *tiled,
                   unsigned char *lin)
{
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = b;
    o.strategy = c->strategy;
    if (c->whole_surface)
        return tile ? vidmm_swizzle_surface_ex(c->layout, c->surf, tiled, c->tiled_size, lin, c->lin_size, &o)
                    : vidmm_deswizzle_surface_ex(c->layout, c->surf, tiled, c->tiled_size, lin, c->lin_size, &o);
    return tile ? vidmm_swizzle_ex(c->layout, c->surf, c->mip, c->layer, c->box, tiled, c->tiled_size, lin,
                                   c->lin_size, c->row_pitch, c->slice_pitch, &o)
                : vidmm_deswizzle_ex(c->layout, c->surf, c->mip, c->layer, c->box, tiled, c->tiled_size, lin,
                                     c->lin_size, c->row_pitch, c->slice_pitch, &o);
}

/* run_all() makes the call in direction 'tile' on every backend from the same starting bytes:
 * 'src' is the source side's content (linear when tiling, tiled when untiling) and 'dst0' the
 * destination's. The scalar backend's result goes to 'want' (size of the destination); returns
 * the scalar backend's code. */
static int run_all(const struct call *c, bool tile, const unsigned char *src, const unsigned char *dst0,
                   unsigned char *want)
{
    const size_t src_n = tile ? c->lin_size : c->tiled_size, dst_n = tile ? c->tiled_size : c->lin_size;
    const char *what = c->whole_surface ? (tile ? "swizzle_surface" : "deswizzle_surface")
                                        : (tile ? "swizzle" : "deswizzle");
    int want_rc = 0;
    for (size_t k = 0; k < N_BACKENDS; k++) {
        const enum vidmm_backend b = backends[k];
        if (b != VIDMM_BACKEND_AUTO && !vidmm_backend_supported(b))
            continue;
        struct gbuf s, dbuf;
        gbuf_init(&s, src_n, c->at_end);
        gbuf_init(&dbuf, dst_n, c->at_end);
        memcpy(s.p, src, src_n);
        memcpy(dbuf.p, dst0, dst_n);
        int rc = tile ? do_call(c, true, b, dbuf.p, s.p) : do_call(c, false, b, s.p, dbuf.p);
        FUZZ_CHECK(rc <= 0, "%s on %s returned %d", what, vidmm_backend_to_string(b), rc);
        FUZZ_CHECK(memcmp(s.p, src, src_n) == 0, "%s on %s wrote its source (byte %zu)", what,
                   vidmm_backend_to_string(b), first_diff(s.p, src, src_n));
        if (b == VIDMM_BACKEND_SCALAR) {
            want_rc = rc;
            memcpy(want, dbuf.p, dst_n);
            if (rc != 0)
                FUZZ_CHECK(memcmp(dbuf.p, dst0, dst_n) == 0, "a refused %s (%d) wrote byte %zu", what, rc,
                           first_diff(dbuf.p, dst0, dst_n));
        } else {
            FUZZ_CHECK(rc == want_rc, "%s returned %d on %s but %d on scalar", what, rc, vidmm_backend_to_string(b),
                       want_rc);
            size_t i = first_diff(dbuf.p, want, dst_n);
            FUZZ_CHECK(i == dst_n, "%s on %s: destination byte %zu is 0x%02x, scalar wrote 0x%02x", what,
                       vidmm_backend_to_string(b), i, dbuf.p[i], want[i]);
        }
        gbuf_fini(&s);
        gbuf_fini(&dbuf);
    }

    /* The same call through a plan made for it (AUTO backend, the call's strategy): the same
     * code - a descriptor the plan refuses is the one-shot call's refusal too - and bytes. */
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.strategy = c->strategy;
    vidmm_swizzle_plan *plan = NULL;
    int rc = vidmm_swizzle_plan_create(c->layout, c->surf, c->whole_surface ? VIDMM_SWIZZLE_PLAN_SURFACE : c->mip,
                                       c->whole_surface ? 0 : c->layer, &o, &plan);
    if (rc != 0) {
        FUZZ_CHECK(rc == want_rc, "%s: plan_create returned %d, the call %d", what, rc, want_rc);
        return want_rc;
    }
    /* Measured plans take one of the walks vidmm_swizzle_plan_walk_candidates() lists: one of
     * them, chosen from the input's sizes, forced on most inputs (timing would make the fuzzer
     * slow and its runs differ; every walk must give the scalar walk's bytes, whole copies or
     * boxes alike - boxes keep the default walk). */
    uint32_t nwalks = 0;
    const uint32_t pick = (uint32_t)(src_n * 2654435761u + dst_n);
    if (vidmm_swizzle_plan_walk_candidates(plan, !tile, &nwalks) == 0 && nwalks > 1 && pick % 4 != 0)
        FUZZ_CHECK(vidmm_swizzle_plan_force_walk(plan, !tile, pick % nwalks) == 0, "%s: force_walk refused", what);
    struct gbuf sb, db;
    gbuf_init(&sb, src_n, c->at_end);
    gbuf_init(&db, dst_n, c->at_end);
    memcpy(sb.p, src, src_n);
    memcpy(db.p, dst0, dst_n);
    const size_t rp = c->whole_surface ? 0 : c->row_pitch, sp = c->whole_surface ? 0 : c->slice_pitch;
    rc = tile ? vidmm_swizzle_plan_swizzle(plan, c->box, db.p, dst_n, sb.p, src_n, rp, sp)
              : vidmm_swizzle_plan_deswizzle(plan, c->box, sb.p, src_n, db.p, dst_n, rp, sp);
    FUZZ_CHECK(rc == want_rc, "%s through a plan returned %d, the call %d", what, rc, want_rc);
    size_t i = first_diff(db.p, want, dst_n);
    FUZZ_CHECK(i == dst_n, "%s through a plan: destination byte %zu differs", what, i);
    FUZZ_CHECK(memcmp(sb.p, src, src_n) == 0, "%s through a plan wrote its source", what);
    /* And on threads (byte 118 bit 1): 2-4 of them (bits 2-3), the library's pool or (bit 5) a job
     * system of the caller's that runs the bands in reverse order on this thread; min_bytes 1
     * (every copy cut into bands) or (bit 4) 0 (the measured threshold: a kind's copies of 256 KiB and
     * more learn which side is faster, the process-wide table carrying over from input to
     * input, so a run reaches both sides). The same code and bytes. */
    if (rc == 0 && (c->threads & 1) != 0) {
        struct vidmm_swizzle_threads t = VIDMM_SWIZZLE_THREADS_INIT;
        t.threads = 2 + (c->threads >> 1 & 3) % 3;
        t.min_bytes = (c->threads >> 3 & 1) ? 0 : 1;
        if ((c->threads >> 4) & 1)
            t.parallel_for = reverse_for;
        FUZZ_CHECK(vidmm_swizzle_plan_set_threads(plan, &t) == 0, "%s: set_threads refused", what);
        memcpy(db.p, dst0, dst_n);
        rc = tile ? vidmm_swizzle_plan_swizzle(plan, c->box, db.p, dst_n, sb.p, src_n, rp, sp)
                  : vidmm_swizzle_plan_deswizzle(plan, c->box, sb.p, src_n, db.p, dst_n, rp, sp);
        FUZZ_CHECK(rc == want_rc, "%s through a plan on %u threads returned %d, the call %d", what, t.threads, rc,
                   want_rc);
        i = first_diff(db.p, want, dst_n);
        FUZZ_CHECK(i == dst_n, "%s through a plan on %u threads (min_bytes %llu): destination byte %zu differs", what,
                   t.threads, (unsigned long long)t.min_bytes, i);
        FUZZ_CHECK(memcmp(sb.p, src, src_n) == 0, "%s through a plan on threads wrote its source", what);
    }
    gbuf_fini(&sb);
    gbuf_fini(&db);
    vidmm_swizzle_plan_destroy(plan);
    return want_rc;
}

/* Where the model covers the surface, the scalar swizzle of a box puts each byte where the
 * model's address function says, and leaves every other tiled byte alone. */
static void model_check(const struct ref_layout *L, const struct call *c, const struct vidmm_box *b,
                        const unsigned char *lin, const unsigned char *tiled0, const unsigned char *tiled)
{
    const uint32_t e = c->surf->element_bytes;
    const size_t row = (size_t)b->width * e;
    if ((uint64_t)row * b->height * b->depth > MODEL_MAX_BYTES)
        return;
    unsigned char *want = malloc(c->tiled_size ? c->tiled_size : 1);
    FUZZ_CHECK(want != NULL, "out of memory");
    memcpy(want, tiled0, c->tiled_size);
    for (uint32_t z = 0; z < b->depth; z++)
        for (uint32_t y = 0; y < b->height; y++)
            for (size_t xb = 0; xb < row; xb++) {
                uint64_t a = ref_addr(L, c->mip, c->layer, (uint64_t)b->x * e + xb, b->y + y, b->z + z);
                FUZZ_CHECK(a < c->tiled_size, "the model puts box byte (%zu, %u, %u) at %llu, beyond %zu", xb, y, z,
                           (unsigned long long)a, c->tiled_size);
                want[a] = lin[(size_t)z * c->slice_pitch + (size_t)y * c->row_pitch + xb];
            }
    size_t i = first_diff(tiled, want, c->tiled_size);
    FUZZ_CHECK(i == c->tiled_size, "swizzle differs from the model at tiled byte %zu (0x%02x, model 0x%02x)", i,
               tiled[i], want[i]);
    free(want);
}

static size_t perturb(uint64_t exact, uint32_t sel)
{
    if (sel < 192)
        return (size_t)exact;
    if (sel < 224)
        return (size_t)(exact > sel - 191 ? exact - (sel - 191) : 0);
    return (size_t)(exact + (sel - 223));
}

static void box_copies(const struct call *c, const struct vidmm_box *resolved, bool roundtrip,
                       const struct ref_layout *L)
{
    const size_t row = (size_t)resolved->width * c->surf->element_bytes;
    const size_t tn = c->tiled_size, ln = c->lin_size;
    unsigned char *lin = malloc(ln ? ln : 1), *tiled0 = malloc(tn ? tn : 1), *tiled = malloc(tn ? tn : 1);
    unsigned char *lin0 = malloc(ln ? ln : 1), *back = malloc(ln ? ln : 1);
    FUZZ_CHECK(lin && tiled0 && tiled && lin0 && back, "out of memory");
    fill(lin, ln, c->seed);
    fill(tiled0, tn, c->seed * 3 + 1);

    int rc = run_all(c, true, lin, tiled0, tiled);
    if (rc == 0 && L != NULL)
        model_check(L, c, resolved, lin, tiled0, tiled);

    /* Back: untile what the scalar backend tiled (or the untouched buffer). */
    memset(lin0, 0xA5, ln);
    int rc2 = run_all(c, false, tiled, lin0, back);
    FUZZ_CHECK(rc2 == rc, "swizzle returned %d but deswizzle of the same arguments %d", rc, rc2);
    if (rc2 == 0) {
        for (uint32_t z = 0; z < resolved->depth; z++)
            for (uint32_t y = 0; y < resolved->height; y++) {
                size_t at = (size_t)z * c->slice_pitch + (size_t)y * c->row_pitch;
                if (roundtrip)
                    FUZZ_CHECK(memcmp(back + at, lin + at, row) == 0, "round trip differs in row %u of slice %u",
                               y, z);
                size_t gap_end = y + 1 < resolved->height ? at + c->row_pitch
                               : z + 1 < resolved->depth  ? (size_t)(z + 1) * c->slice_pitch
                                                          : ln;
                FUZZ_CHECK(all_equal(back + at + row, gap_end - at - row, 0xA5),
                           "deswizzle wrote between rows (row %u of slice %u)", y, z);
            }
    }
    free(lin);
    free(tiled0);
    free(tiled);
    free(lin0);
    free(back);
}

static void surface_copies(const struct call *c, bool roundtrip)
{
    const size_t tn = c->tiled_size, ln = c->lin_size;
    unsigned char *lin = malloc(ln ? ln : 1), *tiled0 = malloc(tn ? tn : 1), *tiled = malloc(tn ? tn : 1);
    unsigned char *lin0 = malloc(ln ? ln : 1), *back = malloc(ln ? ln : 1);
    FUZZ_CHECK(lin && tiled0 && tiled && lin0 && back, "out of memory");
    fill(lin, ln, c->seed ^ 0x5555);
    fill(tiled0, tn, c->seed * 5 + 3);
    int rc = run_all(c, true, lin, tiled0, tiled);
    memset(lin0, 0xA5, ln);
    int rc2 = run_all(c, false, tiled, lin0, back);
    FUZZ_CHECK(rc == rc2, "vidmm_swizzle_surface returned %d, vidmm_deswizzle_surface %d", rc, rc2);
    if (rc2 == 0) {
        /* The packed surface comes back; a larger buffer's tail is never written. */
        const size_t n = c->lin_exact;
        if (roundtrip)
            FUZZ_CHECK(memcmp(back, lin, n) == 0, "whole-surface round trip differs at byte %zu",
                       first_diff(back, lin, n));
        FUZZ_CHECK(all_equal(back + n, ln - n, 0xA5), "deswizzle_surface wrote past the packed surface");
    }
    free(lin);
    free(tiled0);
    free(tiled);
    free(lin0);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t bh_sel[] = { 0, 1, 2, 4, 8, 16, 32, 3, 64 };
    static const uint32_t bd_sel[] = { 0, 1, 2, 4, 8, 16, 3, 32 };
    static const uint32_t amd_sel[] = { 0, 5, 9, 27, 6 };
    static const uint32_t blk_sel[] = { 1, 4, 2, 0, 17 };
    static const enum vidmm_strategy strat_sel[] = {
        VIDMM_STRATEGY_AUTO,        VIDMM_STRATEGY_AUTO,      VIDMM_STRATEGY_TEMPORAL,
        VIDMM_STRATEGY_NONTEMPORAL, VIDMM_STRATEGY_STREAM_LOAD, VIDMM_STRATEGY_MOVDIR64B,
        VIDMM_STRATEGY_LIBC,        VIDMM_STRATEGY_COUNT_ };
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
    uint32_t mip = take8(&d) % 13, layer = take8(&d) % 9;
    bool null_box = take8(&d) == 0;
    uint32_t bx = take16(&d), by = take16(&d), bz = take8(&d);
    uint32_t bw = take16(&d), bhh = take16(&d), bdd = take8(&d);
    uint32_t row_slack = take8(&d), slice_slack = take8(&d);
    enum vidmm_strategy strategy = strat_sel[take8(&d) % 8];
    uint32_t ops = take8(&d);
    eq.bits = take8(&d) % 24;
    uint32_t eqmode = take8(&d);
    eq.thick = eqmode & 1;
    bool built = (eqmode & 2) != 0 && eq.bits >= 4 && eq.bits <= VIDMM_EQ_MAX_BITS && surf.element_bytes != 0 &&
                 (surf.element_bytes & (surf.element_bytes - 1)) == 0 && surf.element_bytes <= 16;
    struct producer terms = { d.p, d.n < 80 ? d.n : 80 };
    if (built) {
        uint32_t e2 = 0;
        while ((1u << e2) < surf.element_bytes)
            e2++;
        if (eq.bits < e2 + 2)
            eq.bits = e2 + 2;
        build_equation(&terms, &eq, e2, eq.thick);
    } else {
        for (uint32_t i = 0; i < VIDMM_EQ_MAX_BITS; i++)
            for (uint32_t t = 0; t < 2; t++) {
                eq.term[i][t].channel = (uint8_t)(take8(&terms) % 5);
                eq.term[i][t].bit = (uint8_t)(take8(&terms) % 34);
            }
    }
    for (uint32_t i = 0; i < 80; i++)
        (void)take8(&d);
    if (layout.tiling == VIDMM_TILING_EQUATION)
        layout.equation = &eq;
    if (getenv("VIDMM_FUZZ_TRACE") != NULL) { /* what the input means, to minimise a finding */
        fprintf(stderr, "tiling %u %ux%ux%u E=%u mips %u layers %u mip %u layer %u box %s strategy %u\n",
                layout.tiling, surf.width, surf.height, surf.depth, surf.element_bytes, surf.mip_levels,
                surf.array_layers, mip, layer, null_box ? "NULL" : "set", strategy);
        if (layout.tiling == VIDMM_TILING_EQUATION) {
            fprintf(stderr, "equation (%s%s), MSB first:", built ? "built" : "raw", eq.thick ? ", thick" : "");
            for (uint32_t i = eq.bits; i-- > 0;) {
                fputc(' ', stderr);
                for (uint32_t t = 0, n = 0; t < VIDMM_EQ_MAX_TERMS; t++)
                    if (eq.term[i][t].channel != VIDMM_EQ_NONE)
                        fprintf(stderr, "%s%c%u", n++ ? "^" : "", "?xyz"[eq.term[i][t].channel % 4],
                                eq.term[i][t].bit);
            }
            fputc('\n', stderr);
        }
    }
    uint32_t tsel = take8(&d), lsel = take8(&d), place = take8(&d);
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    while (d.n)
        seed = (seed ^ take8(&d)) * 0x100000001B3ull;

    uint64_t tiled_size = 0, lin_size = 0;
    int rt = vidmm_surface_tiled_size(&layout, &surf, &tiled_size);
    int rl = vidmm_surface_linear_size(&layout, &surf, &lin_size);
    FUZZ_CHECK(rt <= 0 && rl <= 0, "size queries returned %d / %d", rt, rl);
    struct vidmm_subresource_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    int rs = vidmm_surface_subresource(&layout, &surf, mip, layer, &info);
    FUZZ_CHECK(rs <= 0, "vidmm_surface_subresource returned %d", rs);
    if (rt != 0 || rl != 0 || tiled_size > FUZZ_MAX_BYTES || lin_size > FUZZ_MAX_BYTES)
        return 0;
    if (rs == 0) {
        FUZZ_CHECK(info.tiled_offset <= tiled_size && info.tiled_size <= tiled_size - info.tiled_offset,
                   "subresource span beyond the surface");
        FUZZ_CHECK(info.linear_offset + info.linear_size <= lin_size, "subresource beyond the linear size");
    }

    /* The independent model, where it covers the surface: the sizes must agree. A raw caller
     * equation need not be a bijection, and the model takes its block from the first terms
     * only, so it is consulted for built equations alone. */
    struct ref_surf rsurf = { layout.tiling, layout.flags, layout.block_height, layout.block_depth, layout.pitch,
                              layout.swizzle_unit, layout.amd_swizzle_mode, layout.equation, surf.width,
                              surf.height, surf.depth, surf.element_bytes, surf.block_width, surf.block_height,
                              surf.mip_levels, surf.array_layers };
    static struct ref_layout L;
    bool modelled = (layout.tiling != VIDMM_TILING_EQUATION || built) && ref_prepare(&L, &rsurf);
    if (modelled)
        FUZZ_CHECK(L.tiled_size == tiled_size, "tiled size %llu, the model says %llu", (unsigned long long)tiled_size,
                   (unsigned long long)L.tiled_size);

    /* Work per input is bounded by the number of contiguous runs a copy moves, not only by its
     * bytes: an equation with x0 above address bit 0 has 1-byte runs, and 700 KB of those on
     * five backends, both ways, took a minute under ASan. The plan says how long the runs are. */
    uint64_t max_bytes = FUZZ_MAX_BYTES;
    vidmm_swizzle_plan *plan = NULL;
    if ((rs == 0 && vidmm_swizzle_plan_create(&layout, &surf, mip, layer, NULL, &plan) == 0) ||
        vidmm_swizzle_plan_create(&layout, &surf, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &plan) == 0) {
        struct vidmm_swizzle_plan_info pi = { .size = sizeof(pi) };
        FUZZ_CHECK(vidmm_swizzle_plan_info(plan, &pi) == 0, "plan info");
        FUZZ_CHECK(pi.tiled_size == tiled_size, "the plan's tiled size %llu, the surface's %llu",
                   (unsigned long long)pi.tiled_size, (unsigned long long)tiled_size);
        if (pi.run_bytes != UINT32_MAX && (uint64_t)pi.run_bytes * FUZZ_MAX_RUNS < max_bytes)
            max_bytes = (uint64_t)pi.run_bytes * FUZZ_MAX_RUNS;
        vidmm_swizzle_plan_destroy(plan);
    }

    /* A caller's raw equation need not be a bijection, so only its safety is checked. */
    const bool roundtrip = layout.tiling != VIDMM_TILING_EQUATION || built;

    struct call c = { &layout, &surf, mip, layer, NULL, false, 0, 0, (size_t)lin_size, 0, 0, strategy,
                      !(place & 1), seed, place >> 1 };
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
            c.row_pitch = row + row_slack;
            c.slice_pitch = (box.height - 1) * c.row_pitch + row + slice_slack;
            uint64_t need = (uint64_t)(box.depth - 1) * c.slice_pitch + (uint64_t)(box.height - 1) * c.row_pitch + row;
            c.box = null_box ? NULL : &box;
            c.tiled_size = perturb(tiled_size, tsel);
            c.lin_size = perturb(need, lsel);
            if (need <= max_bytes)
                box_copies(&c, &box, roundtrip, modelled ? &L : NULL);
        }
    }
    if ((ops & 1) && lin_size <= max_bytes) {
        c.whole_surface = true;
        c.box = NULL;
        c.tiled_size = perturb(tiled_size, tsel);
        c.lin_size = perturb(lin_size, lsel);
        surface_copies(&c, roundtrip);
    }
    return 0;
}
