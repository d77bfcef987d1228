/* SPDX-License-Identifier: MIT */
/* tests/kernels/test_fill.c - vidmm_fill32 and vidmm_fill32_ex on every backend and strategy:
 * byte i of the range is byte i % 4 of the little-endian pattern whatever the alignment, bytes
 * outside are untouched, lengths that are not a multiple of 4 are refused without writing.
 *
 * As in test_copy.c, fill_<backend>/... force one backend each (skipped when the CPU lacks it)
 * and fill_default/... use the dispatcher's choice, which CTest varies with VIDMM_BACKEND. The
 * expected bytes come from the definition above (RtlFillMemoryUlong), which is also what the
 * scalar backend must produce. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"

#define MARGIN 256
#define SHORT_MAX 4096
#define LONG_MAX_LEN ((size_t)6 << 20)
#define LONG_ITERS 32
#define GUARD_REGION ((size_t)80 << 10)
#define T_TIMEOUT 120

/* No byte of this pattern equals the sentinel or another of its bytes, so a byte written from
 * the wrong phase of the pattern, or not written at all, never matches by chance. */
#define PATTERN 0xA1B2C3D4u

struct cfg {
    bool ex;                    /* vidmm_fill32_ex, else vidmm_fill32 */
    enum vidmm_backend backend; /* ex only */
    enum vidmm_mem_kind kind;
    enum vidmm_strategy strategy; /* ex only */
};

static int do_fill(const struct cfg *c, void *dst, uint32_t pattern, size_t n)
{
    if (!c->ex)
        return vidmm_fill32(dst, pattern, n, c->kind);
    struct vidmm_kernel_opts o = t_opts(c->backend, c->strategy);
    return vidmm_fill32_ex(dst, pattern, n, c->kind, &o);
}

static const char *cfg_label(const struct cfg *c)
{
    static char buf[128];
    if (c->ex)
        snprintf(buf, sizeof(buf), "vidmm_fill32_ex(backend=%s, kind=%s, strategy=%s)", t_backend_label(c->backend),
                 t_kind_label(c->kind), t_strategy_label(c->strategy));
    else
        snprintf(buf, sizeof(buf), "vidmm_fill32(kind=%s) [active backend %s]", t_kind_label(c->kind),
                 vidmm_backend_name());
    return buf;
}

static struct cfg ex_cfg(enum vidmm_backend b, enum vidmm_mem_kind k, enum vidmm_strategy s)
{
    struct cfg c = { true, b, k, s };
    return c;
}

static struct cfg plain_cfg(enum vidmm_mem_kind k)
{
    struct cfg c = { false, VIDMM_BACKEND_AUTO, k, VIDMM_STRATEGY_AUTO };
    return c;
}

/* expand() writes the reference: the little-endian bytes of 'pattern', repeated. */
static void expand(unsigned char *out, uint32_t pattern, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(pattern >> ((i % 4) * 8));
}

/* A random pattern whose bytes avoid the sentinel (see PATTERN). */
static uint32_t random_pattern(struct t_rng *r)
{
    uint32_t p = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char b;
        do
            b = (unsigned char)t_rng_next(r);
        while (b == T_SENTINEL);
        p |= (uint32_t)b << (8 * i);
    }
    return p;
}

/* ---------------------------------------------------------------------------------------------
 * Heap scratch: a 64-byte-aligned, sentinel-filled destination with MARGIN on both sides, and
 * the expected bytes for the current pattern.
 * ------------------------------------------------------------------------------------------- */
struct scratch {
    unsigned char *dst, *want;
    size_t cap;
    uint32_t pattern;
};

static void scratch_init(struct scratch *s, size_t cap, uint32_t pattern)
{
    void *a = NULL, *b = NULL;
    cr_assert(posix_memalign(&a, 64, MARGIN + 64 + cap + MARGIN) == 0, "out of memory (%zu bytes)", cap);
    cr_assert(posix_memalign(&b, 64, cap) == 0, "out of memory (%zu bytes)", cap);
    s->dst = a;
    s->want = b;
    s->cap = cap;
    memset(s->dst, T_SENTINEL, MARGIN + 64 + cap + MARGIN);
    s->pattern = pattern;
    expand(s->want, pattern, cap);
}

static void scratch_pattern(struct scratch *s, uint32_t pattern, size_t n)
{
    s->pattern = pattern;
    expand(s->want, pattern, n);
}

static void scratch_fini(struct scratch *s)
{
    free(s->dst);
    free(s->want);
}

static void fill_check(const struct cfg *c, struct scratch *s, size_t off, size_t n)
{
    unsigned char *dst = s->dst + MARGIN + off;
    ptrdiff_t bad;
    int rc = do_fill(c, dst, s->pattern, n);

    if (rc != 0)
        cr_assert_fail("%s: pattern 0x%08x n=%zu dst+%zu returned %d (%s)" T_CTX_FMT, cfg_label(c), s->pattern, n, off,
                       rc, vidmm_strerror(rc), T_CTX_ARGS);
    bad = t_find_diff(dst, s->want, n);
    if (bad >= 0)
        cr_assert_fail("%s: pattern 0x%08x n=%zu dst+%zu: byte %td is 0x%02x, want 0x%02x (byte %td of the "
                       "little-endian pattern)" T_CTX_FMT,
                       cfg_label(c), s->pattern, n, off, bad, dst[bad], s->want[bad], bad % 4, T_CTX_ARGS);
    bad = t_find_not(s->dst, MARGIN + off, T_SENTINEL);
    if (bad >= 0)
        cr_assert_fail("%s: n=%zu dst+%zu: wrote %td bytes before dst" T_CTX_FMT, cfg_label(c), n, off,
                       (ptrdiff_t)(MARGIN + off) - bad, T_CTX_ARGS);
    bad = t_find_not(dst + n, MARGIN, T_SENTINEL);
    if (bad >= 0)
        cr_assert_fail("%s: n=%zu dst+%zu: wrote byte dst+n+%td past the end" T_CTX_FMT, cfg_label(c), n, off, bad,
                       T_CTX_ARGS);
    memset(dst, T_SENTINEL, n);
}

/* Every alignment 0..63 x every length that is a multiple of 4 in 0..SHORT_MAX. */
static void run_align_len(const struct cfg *c)
{
    struct scratch s;
    scratch_init(&s, SHORT_MAX, PATTERN);
    for (size_t off = 0; off < 64; off++)
        for (size_t n = 0; n <= SHORT_MAX; n += 4)
            fill_check(c, &s, off, n);
    scratch_fini(&s);
}

/* A lighter sweep for the default entry points: every alignment, lengths up to 1 KiB. */
static void run_align_len_light(const struct cfg *c)
{
    struct scratch s;
    scratch_init(&s, 1024, PATTERN);
    for (size_t off = 0; off < 64; off++)
        for (size_t n = 0; n <= 1024; n += 4)
            fill_check(c, &s, off, n);
    scratch_fini(&s);
}

static void run_random(const struct cfg *base, const enum vidmm_strategy *pick, size_t npick, bool any_kind,
                       uint64_t stream)
{
    struct scratch s;
    struct t_rng r;
    t_rng_init(&r, stream);
    scratch_init(&s, LONG_MAX_LEN, PATTERN);
    for (int it = 0; it < LONG_ITERS; it++) {
        struct cfg c = *base;
        size_t n = t_rng_len(&r, SHORT_MAX + 1, LONG_MAX_LEN) & ~(size_t)3;
        if (it % 5 == 0)
            n = LONG_MAX_LEN;
        if (npick)
            c.strategy = pick[t_rng_below(&r, npick)];
        if (any_kind)
            c.kind = (enum vidmm_mem_kind)t_rng_below(&r, VIDMM_MEM_KIND_COUNT_);
        scratch_pattern(&s, random_pattern(&r), n);
        fill_check(&c, &s, t_rng_below(&r, 64), n);
    }
    scratch_fini(&s);
}

/* ---------------------------------------------------------------------------------------------
 * Guard pages: the range starts at the first byte after an unmapped page, or ends at the last
 * byte before one.
 * ------------------------------------------------------------------------------------------- */
static const size_t guard_big_lengths[] = { 1028, 2044, 2048, 2052, 4092, 4096, 4100, 8188, 8192, 8196,
                                            12344, 65532, 65536, 65540, GUARD_REGION };

static void guard_check(const struct cfg *c, struct t_region *g, const unsigned char *want, bool tail, size_t n)
{
    unsigned char *dst = tail ? g->hi - n : g->lo;
    t_fault_context("%s: n=%zu at the %s guard", cfg_label(c), n, tail ? "trailing" : "leading");
    int rc = do_fill(c, dst, PATTERN, n);
    if (rc != 0)
        cr_assert_fail("%s: n=%zu at the %s guard returned %d (%s)", cfg_label(c), n, tail ? "trailing" : "leading", rc,
                       vidmm_strerror(rc));
    ptrdiff_t bad = t_find_diff(dst, want, n);
    if (bad >= 0)
        cr_assert_fail("%s: n=%zu at the %s guard: byte %td is 0x%02x, want 0x%02x", cfg_label(c), n,
                       tail ? "trailing" : "leading", bad, dst[bad], want[bad]);
    if (tail) {
        size_t before = (size_t)(dst - g->lo) < MARGIN ? (size_t)(dst - g->lo) : MARGIN;
        bad = t_find_not(dst - before, before, T_SENTINEL);
        if (bad >= 0)
            cr_assert_fail("%s: n=%zu at the trailing guard: wrote %td bytes before dst", cfg_label(c), n,
                           (ptrdiff_t)before - bad);
    } else {
        size_t after = (size_t)(g->hi - (dst + n)) < MARGIN ? (size_t)(g->hi - (dst + n)) : MARGIN;
        bad = t_find_not(dst + n, after, T_SENTINEL);
        if (bad >= 0)
            cr_assert_fail("%s: n=%zu at the leading guard: wrote byte dst+n+%td", cfg_label(c), n, bad);
    }
    memset(dst, T_SENTINEL, n);
}

static void run_guard(const struct cfg *c, bool tail)
{
    struct t_region g;
    unsigned char *want = malloc(GUARD_REGION);
    cr_assert(want != NULL);
    expand(want, PATTERN, GUARD_REGION);
    t_region_init(&g, GUARD_REGION);
    memset(g.lo, T_SENTINEL, (size_t)(g.hi - g.lo));
    for (size_t n = 0; n <= 1024; n += 4)
        guard_check(c, &g, want, tail, n);
    for (size_t i = 0; i < sizeof(guard_big_lengths) / sizeof(guard_big_lengths[0]); i++)
        guard_check(c, &g, want, tail, guard_big_lengths[i]);
    t_region_fini(&g);
    free(want);
}

/* ---------------------------------------------------------------------------------------------
 * Lengths that are not a multiple of 4 (FILL sizes are whole 32-bit words): refused, and not
 * one byte written - not even the whole words in front.
 * ------------------------------------------------------------------------------------------- */
static void run_bad_lengths(const struct cfg *c)
{
    static const size_t lens[] = { 1, 2, 3, 5, 6, 7, 63, 65, 4093, 4095, 4097, 65537, ((size_t)1 << 20) + 2 };
    struct scratch s;
    scratch_init(&s, ((size_t)1 << 20) + 64, PATTERN);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        for (size_t off = 0; off < 64; off += 21) {
            unsigned char *dst = s.dst + MARGIN + off;
            int rc = do_fill(c, dst, PATTERN, lens[i]);
            cr_assert_eq(rc, VIDMM_E_INVALID_ARG, "%s: n=%zu (not a multiple of 4) returned %d, want "
                         "VIDMM_E_INVALID_ARG", cfg_label(c), lens[i], rc);
            ptrdiff_t bad = t_find_not(s.dst, MARGIN + 64 + lens[i] + MARGIN, T_SENTINEL);
            cr_assert_eq(bad, -1, "%s: refused n=%zu but wrote byte %td of the buffer", cfg_label(c), lens[i], bad);
        }
    }
    scratch_fini(&s);
}

/* ---------------------------------------------------------------------------------------------
 * Per-backend tests.
 * ------------------------------------------------------------------------------------------- */

static void backend_align_len(enum vidmm_backend b, enum vidmm_mem_kind k, enum vidmm_strategy s)
{
    t_require_backend(b);
    struct cfg c = ex_cfg(b, k, s);
    run_align_len(&c);
}

static void backend_random(enum vidmm_backend b)
{
    static const enum vidmm_strategy pick[] = { VIDMM_STRATEGY_AUTO, VIDMM_STRATEGY_TEMPORAL,
                                                VIDMM_STRATEGY_NONTEMPORAL };
    t_require_backend(b);
    struct cfg c = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_AUTO);
    run_random(&c, pick, 3, true, 10 + (uint64_t)b);
}

static void backend_guard(enum vidmm_backend b, bool tail)
{
    t_require_backend(b);
    const struct cfg cs[] = {
        ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_TEMPORAL),
        ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_NONTEMPORAL),
        ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_AUTO),
        ex_cfg(b, VIDMM_MEM_NONCOHERENT, VIDMM_STRATEGY_AUTO),
        ex_cfg(b, VIDMM_MEM_WRITE_COMBINED, VIDMM_STRATEGY_AUTO),
    };
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
        run_guard(&cs[i], tail);
}

static void backend_bad_lengths(enum vidmm_backend b)
{
    t_require_backend(b);
    static const enum vidmm_strategy ss[] = { VIDMM_STRATEGY_AUTO, VIDMM_STRATEGY_TEMPORAL,
                                              VIDMM_STRATEGY_NONTEMPORAL, VIDMM_STRATEGY_LIBC };
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++)
        for (size_t i = 0; i < sizeof(ss) / sizeof(ss[0]); i++) {
            struct cfg c = ex_cfg(b, (enum vidmm_mem_kind)k, ss[i]);
            run_bad_lengths(&c);
        }
}

static void set_small_nt_threshold(void)
{
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 4096), 0);
    vidmm_kernels_reset();
}

static void run_around_threshold(const struct cfg *c)
{
    struct scratch s;
    scratch_init(&s, 80 << 10, PATTERN);
    for (size_t n = 3968; n <= 4224; n += 4)
        for (size_t off = 0; off < 64; off += 5)
            fill_check(c, &s, off, n);
    static const size_t lens[] = { 8188, 8192, 65536, 65540, 80 << 10 };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (size_t off = 0; off < 64; off += 9)
            fill_check(c, &s, off, lens[i]);
    scratch_fini(&s);
}

static void backend_nt_threshold(enum vidmm_backend b)
{
    t_require_backend(b);
    set_small_nt_threshold();
    struct cfg c = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_AUTO);
    run_around_threshold(&c);
    run_guard(&c, true);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NT_THRESHOLD, NULL), 0);
    vidmm_kernels_reset();
}

/* Strategies: LIBC fills byte-uniform patterns only; MOVDIR64B and STREAM_LOAD are copy
 * variants. Refusals write nothing. */
static void backend_strategies(enum vidmm_backend b)
{
    t_require_backend(b);
    struct scratch s;
    scratch_init(&s, 1024, 0x5A5A5A5Au);
    struct cfg libc = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_LIBC);
    for (size_t off = 0; off < 64; off += 3)
        for (size_t n = 0; n <= 1024; n += 4)
            fill_check(&libc, &s, off, n);

    static const struct {
        enum vidmm_strategy s;
        uint32_t pattern;
    } refused[] = {
        { VIDMM_STRATEGY_LIBC, PATTERN },
        { VIDMM_STRATEGY_LIBC, 0x5A5A5A5Bu },
        { VIDMM_STRATEGY_MOVDIR64B, PATTERN },
        { VIDMM_STRATEGY_STREAM_LOAD, PATTERN },
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        struct cfg c = ex_cfg(b, VIDMM_MEM_CACHED, refused[i].s);
        int rc = do_fill(&c, s.dst + MARGIN, refused[i].pattern, 256);
        cr_assert_eq(rc, VIDMM_E_UNSUPPORTED, "%s with pattern 0x%08x returned %d, want VIDMM_E_UNSUPPORTED",
                     cfg_label(&c), refused[i].pattern, rc);
        cr_assert_eq(t_find_not(s.dst, MARGIN + 64 + 1024 + MARGIN, T_SENTINEL), -1, "%s: refused but wrote",
                     cfg_label(&c));
    }
    scratch_fini(&s);
}

#define FILL_BACKEND_TESTS(tag, B)                                                                     \
    Test(fill_##tag, align_len_temporal, .timeout = T_TIMEOUT)                                         \
    {                                                                                                  \
        backend_align_len(B, VIDMM_MEM_CACHED, VIDMM_STRATEGY_TEMPORAL);                               \
    }                                                                                                  \
    Test(fill_##tag, align_len_nontemporal, .timeout = T_TIMEOUT)                                      \
    {                                                                                                  \
        backend_align_len(B, VIDMM_MEM_CACHED, VIDMM_STRATEGY_NONTEMPORAL);                            \
    }                                                                                                  \
    Test(fill_##tag, align_len_noncoherent, .timeout = T_TIMEOUT)                                      \
    {                                                                                                  \
        backend_align_len(B, VIDMM_MEM_NONCOHERENT, VIDMM_STRATEGY_AUTO);                              \
    }                                                                                                  \
    Test(fill_##tag, align_len_write_combined, .timeout = T_TIMEOUT)                                   \
    {                                                                                                  \
        backend_align_len(B, VIDMM_MEM_WRITE_COMBINED, VIDMM_STRATEGY_AUTO);                           \
    }                                                                                                  \
    Test(fill_##tag, random_large, .timeout = T_TIMEOUT) { backend_random(B); }                        \
    Test(fill_##tag, guard_head, .timeout = T_TIMEOUT) { backend_guard(B, false); }                    \
    Test(fill_##tag, guard_tail, .timeout = T_TIMEOUT) { backend_guard(B, true); }                     \
    Test(fill_##tag, bad_lengths, .timeout = T_TIMEOUT) { backend_bad_lengths(B); }                    \
    Test(fill_##tag, nt_threshold, .timeout = T_TIMEOUT) { backend_nt_threshold(B); }                  \
    Test(fill_##tag, strategies, .timeout = T_TIMEOUT) { backend_strategies(B); }

T_FOR_EACH_BACKEND(FILL_BACKEND_TESTS)

/* ---------------------------------------------------------------------------------------------
 * The default entry point.
 * ------------------------------------------------------------------------------------------- */

Test(fill_default, align_len_every_kind, .timeout = T_TIMEOUT)
{
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        struct cfg c = plain_cfg((enum vidmm_mem_kind)k);
        run_align_len_light(&c);
    }
}

Test(fill_default, guard_every_kind, .timeout = T_TIMEOUT)
{
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        struct cfg c = plain_cfg((enum vidmm_mem_kind)k);
        run_guard(&c, true);
        run_guard(&c, false);
    }
}

Test(fill_default, random_large, .timeout = T_TIMEOUT)
{
    struct cfg c = plain_cfg(VIDMM_MEM_CACHED);
    run_random(&c, NULL, 0, true, 20);
}

Test(fill_default, bad_lengths, .timeout = T_TIMEOUT)
{
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        struct cfg c = plain_cfg((enum vidmm_mem_kind)k);
        run_bad_lengths(&c);
    }
}

Test(fill_default, nt_threshold_small, .timeout = T_TIMEOUT)
{
    set_small_nt_threshold();
    struct cfg c = plain_cfg(VIDMM_MEM_CACHED);
    run_around_threshold(&c);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NT_THRESHOLD, NULL), 0);
    vidmm_kernels_reset();
}

/* Patterns that look alike in some bytes: 0, all ones, one byte set in each position. */
Test(fill_default, pattern_bytes)
{
    static const uint32_t pats[] = { 0x00000000u, 0xFFFFFFFFu, 0x000000FFu, 0x0000FF00u, 0x00FF0000u, 0xFF000000u,
                                     0x01020304u, 0x80000001u };
    struct scratch s;
    scratch_init(&s, 512, PATTERN);
    for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
        scratch_pattern(&s, pats[i], 512);
        for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
            struct cfg c = plain_cfg((enum vidmm_mem_kind)k);
            for (size_t off = 0; off < 8; off++)
                for (size_t n = 0; n <= 512; n += 4)
                    fill_check(&c, &s, off, n);
        }
    }
    scratch_fini(&s);
}

/* ---------------------------------------------------------------------------------------------
 * Bad arguments.
 * ------------------------------------------------------------------------------------------- */

#define ARG_LEN 256

#define EXPECT_REFUSED(call, want, buf)                                                                    \
    do {                                                                                                   \
        int rc_ = (call);                                                                                  \
        cr_assert_eq(rc_, (want), "%s returned %d (%s), want %d (%s)", #call, rc_, vidmm_strerror(rc_), (want), \
                     vidmm_strerror(want));                                                                \
        cr_assert_eq(t_find_not((buf), ARG_LEN, T_SENTINEL), -1, "%s failed but wrote to dst", #call);      \
    } while (0)

Test(fill_args, null_and_empty)
{
    unsigned char buf[ARG_LEN];
    memset(buf, T_SENTINEL, sizeof(buf));
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        EXPECT_REFUSED(vidmm_fill32(NULL, PATTERN, 16, (enum vidmm_mem_kind)k), VIDMM_E_INVALID_ARG, buf);
        EXPECT_REFUSED(vidmm_fill32_ex(NULL, PATTERN, 4, (enum vidmm_mem_kind)k, NULL), VIDMM_E_INVALID_ARG, buf);
        cr_assert_eq(vidmm_fill32(NULL, PATTERN, 0, (enum vidmm_mem_kind)k), 0, "n == 0 with NULL must succeed");
        cr_assert_eq(vidmm_fill32(buf, PATTERN, 0, (enum vidmm_mem_kind)k), 0);
        cr_assert_eq(t_find_not(buf, ARG_LEN, T_SENTINEL), -1, "an empty fill wrote");
    }
}

Test(fill_args, unknown_kind)
{
    unsigned char buf[ARG_LEN];
    memset(buf, T_SENTINEL, sizeof(buf));
    EXPECT_REFUSED(vidmm_fill32(buf, PATTERN, 64, (enum vidmm_mem_kind)7), VIDMM_E_INVALID_ARG, buf);
    EXPECT_REFUSED(vidmm_fill32(buf, PATTERN, 64, VIDMM_MEM_KIND_COUNT_), VIDMM_E_INVALID_ARG, buf);
    EXPECT_REFUSED(vidmm_fill32_ex(buf, PATTERN, 64, (enum vidmm_mem_kind)7, NULL), VIDMM_E_INVALID_ARG, buf);
}

Test(fill_args, bad_opts)
{
    unsigned char buf[ARG_LEN];
    struct vidmm_kernel_opts o;
    memset(buf, T_SENTINEL, sizeof(buf));

    o = t_opts((enum vidmm_backend)42, VIDMM_STRATEGY_AUTO);
    EXPECT_REFUSED(vidmm_fill32_ex(buf, PATTERN, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, buf);
    o = t_opts(VIDMM_BACKEND_SCALAR, (enum vidmm_strategy)42);
    EXPECT_REFUSED(vidmm_fill32_ex(buf, PATTERN, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, buf);
    o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_TEMPORAL);
    o.size = 0;
    EXPECT_REFUSED(vidmm_fill32_ex(buf, PATTERN, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, buf);
    o.size = sizeof(size_t);
    EXPECT_REFUSED(vidmm_fill32_ex(buf, PATTERN, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, buf);
    for (int b = VIDMM_BACKEND_SCALAR; b < VIDMM_BACKEND_COUNT_; b++) {
        if (vidmm_backend_supported((enum vidmm_backend)b))
            continue;
        o = t_opts((enum vidmm_backend)b, VIDMM_STRATEGY_AUTO);
        EXPECT_REFUSED(vidmm_fill32_ex(buf, PATTERN, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_UNSUPPORTED, buf);
    }
}

Test(fill_args, wrapping_range)
{
    unsigned char buf[ARG_LEN];
    memset(buf, T_SENTINEL, sizeof(buf));
    EXPECT_REFUSED(vidmm_fill32((void *)(UINTPTR_MAX - 15), PATTERN, 32, VIDMM_MEM_CACHED), VIDMM_E_INVALID_ARG, buf);
    EXPECT_REFUSED(vidmm_fill32(buf, PATTERN, SIZE_MAX & ~(size_t)3, VIDMM_MEM_CACHED), VIDMM_E_INVALID_ARG, buf);
}
