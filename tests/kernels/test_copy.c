/* SPDX-License-Identifier: MIT */
/* tests/kernels/test_copy.c - vidmm_copy, vidmm_copy_ex, vidmm_copy_to_wc and vidmm_copy_from_wc
 * on every backend and strategy, against the reference result (dst == src, nothing else
 * written): exhaustive short lengths, random long ones, every misalignment, guard pages,
 * bad arguments.
 *
 * Each backend has its own Criterion tests (copy_<backend>/...), so that a backend the CPU lacks
 * shows up as skipped. The copy_default suite goes through the dispatcher's own choice; CTest
 * runs it again once per VIDMM_BACKEND value. The reference is the definition of a copy
 * itself, which is also what the scalar backend must produce: comparing each backend with it
 * is comparing it with the scalar reference, without trusting the scalar code. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"

/* Sentinel bytes checked on each side of the destination in the heap-buffer tests: more than
 * one 64-byte line plus the widest vector, so a kernel that rounds to a line or a vector in
 * either direction is caught. */
#define MARGIN 256
/* The exhaustive range of lengths (issue: 0..4096). */
#define SHORT_MAX 4096
/* The largest random length and how many random copies a test makes: enough to cross every
 * cache level, few enough that the ASan build on two cores stays within its time budget. */
#define LONG_MAX_LEN ((size_t)6 << 20)
#define LONG_ITERS 32
/* Usable bytes of each guarded region; the guard tests copy up to this much. */
#define GUARD_REGION ((size_t)80 << 10)

/* ---------------------------------------------------------------------------------------------
 * One way of calling the library.
 * ------------------------------------------------------------------------------------------- */
enum api { API_EX, API_PLAIN, API_TO_WC, API_FROM_WC };

struct cfg {
    enum api api;
    enum vidmm_backend backend; /* API_EX only */
    enum vidmm_mem_kind kind;   /* API_EX and API_PLAIN */
    enum vidmm_strategy strategy;
};

static int do_copy(const struct cfg *c, void *dst, const void *src, size_t n)
{
    struct vidmm_kernel_opts o;
    switch (c->api) {
    case API_EX:
        o = t_opts(c->backend, c->strategy);
        return vidmm_copy_ex(dst, src, n, c->kind, &o);
    case API_PLAIN:
        return vidmm_copy(dst, src, n, c->kind);
    case API_TO_WC:
        return vidmm_copy_to_wc(dst, src, n);
    case API_FROM_WC:
        return vidmm_copy_from_wc(dst, src, n);
    }
    return VIDMM_E_INVALID_ARG;
}

static const char *cfg_label(const struct cfg *c)
{
    static char buf[128];
    switch (c->api) {
    case API_EX:
        snprintf(buf, sizeof(buf), "vidmm_copy_ex(backend=%s, kind=%s, strategy=%s)", t_backend_label(c->backend),
                 t_kind_label(c->kind), t_strategy_label(c->strategy));
        break;
    case API_PLAIN:
        snprintf(buf, sizeof(buf), "vidmm_copy(kind=%s) [active backend %s]", t_kind_label(c->kind),
                 vidmm_backend_name());
        break;
    case API_TO_WC:
        snprintf(buf, sizeof(buf), "vidmm_copy_to_wc() [active backend %s]", vidmm_backend_name());
        break;
    case API_FROM_WC:
        snprintf(buf, sizeof(buf), "vidmm_copy_from_wc() [active backend %s]", vidmm_backend_name());
        break;
    }
    return buf;
}

/* ---------------------------------------------------------------------------------------------
 * Heap scratch: a source of random bytes (none equal to the sentinel, so a byte the kernel
 * skipped can never look copied) and a sentinel-filled destination with MARGIN on both sides.
 * Both start 64-byte aligned, so an offset k means "k bytes past a line boundary".
 * ------------------------------------------------------------------------------------------- */
struct scratch {
    unsigned char *src, *dst;
    size_t cap;
};

static void fill_source(struct t_rng *r, unsigned char *p, size_t n)
{
    t_rng_bytes(r, p, n);
    for (size_t i = 0; i < n; i++)
        if (p[i] == T_SENTINEL)
            p[i] = (unsigned char)~T_SENTINEL;
}

static void scratch_init(struct scratch *s, size_t cap, uint64_t stream)
{
    struct t_rng r;
    void *a = NULL, *b = NULL;
    cr_assert(posix_memalign(&a, 64, cap + 64) == 0, "out of memory (%zu bytes)", cap);
    cr_assert(posix_memalign(&b, 64, MARGIN + 64 + cap + MARGIN) == 0, "out of memory (%zu bytes)", cap);
    s->src = a;
    s->dst = b;
    s->cap = cap;
    t_rng_init(&r, stream);
    fill_source(&r, s->src, cap + 64);
    memset(s->dst, T_SENTINEL, MARGIN + 64 + cap + MARGIN);
}

static void scratch_fini(struct scratch *s)
{
    free(s->src);
    free(s->dst);
}

/* copy_check() copies n bytes from src + soff to dst + doff and checks the result, the
 * sentinels on both sides, and then restores the sentinel. */
static void copy_check(const struct cfg *c, struct scratch *s, size_t soff, size_t doff, size_t n)
{
    const unsigned char *src = s->src + soff;
    unsigned char *dst = s->dst + MARGIN + doff;
    ptrdiff_t bad;
    int rc;

    rc = do_copy(c, dst, src, n);
    if (rc != 0)
        cr_assert_fail("%s: n=%zu src+%zu dst+%zu returned %d (%s)" T_CTX_FMT, cfg_label(c), n, soff, doff, rc,
                vidmm_strerror(rc), T_CTX_ARGS);
    bad = t_find_diff(dst, src, n);
    if (bad >= 0)
        cr_assert_fail("%s: n=%zu src+%zu dst+%zu: byte %td is 0x%02x, source has 0x%02x" T_CTX_FMT, cfg_label(c), n, soff,
                doff, bad, dst[bad], src[bad], T_CTX_ARGS);
    bad = t_find_not(s->dst, MARGIN + doff, T_SENTINEL);
    if (bad >= 0)
        cr_assert_fail("%s: n=%zu src+%zu dst+%zu: wrote %td bytes before dst" T_CTX_FMT, cfg_label(c), n, soff, doff,
                (ptrdiff_t)(MARGIN + doff) - bad, T_CTX_ARGS);
    bad = t_find_not(dst + n, MARGIN, T_SENTINEL);
    if (bad >= 0)
        cr_assert_fail("%s: n=%zu src+%zu dst+%zu: wrote byte dst+n+%td past the end" T_CTX_FMT, cfg_label(c), n, soff,
                doff, bad, T_CTX_ARGS);
    memset(dst, T_SENTINEL, n);
}

/* Every length 0..SHORT_MAX, with both buffers line-aligned, with both skewed by offsets that
 * change with the length (so every alignment pair comes up across the range), and with one
 * side aligned and the other not. */
static void run_all_lengths(const struct cfg *c)
{
    struct scratch s;
    scratch_init(&s, SHORT_MAX, 1);
    uint64_t before = t_checksum(s.src, s.cap + 64);
    for (size_t n = 0; n <= SHORT_MAX; n++) {
        copy_check(c, &s, 0, 0, n);
        copy_check(c, &s, (n * 7 + 3) % 64, (n * 13 + 1) % 64, n);
        copy_check(c, &s, (n * 29 + 17) % 64, 0, n);
        copy_check(c, &s, 0, (n * 31 + 5) % 64, n);
    }
    cr_assert_eq(t_checksum(s.src, s.cap + 64), before, "%s wrote to its source", cfg_label(c));
    scratch_fini(&s);
}

/* Lengths around vector widths, lines and pages, each at all 64 x 64 alignment pairs. */
static const size_t misalign_lengths[] = { 1,   2,   3,   4,   5,   7,   8,   9,   15,  16,  17,  31,  32,
                                           33,  47,  48,  49,  63,  64,  65,  95,  96,  97,  127, 128, 129,
                                           191, 192, 193, 255, 256, 257, 511, 512, 513, 1000, 2049, 4096 };
#define N_MISALIGN (sizeof(misalign_lengths) / sizeof(misalign_lengths[0]))

static void run_misalign(const struct cfg *c)
{
    struct scratch s;
    scratch_init(&s, 4096 + 64, 2);
    for (size_t i = 0; i < N_MISALIGN; i++)
        for (size_t so = 0; so < 64; so++)
            for (size_t d = 0; d < 64; d++)
                copy_check(c, &s, so, d, misalign_lengths[i]);
    scratch_fini(&s);
}

/* A lighter misalignment sweep for the single-path tests (stream loads, MOVDIR64B, the
 * default entry points): every pair for a few lengths that end mid-line and mid-vector. */
static void run_misalign_light(const struct cfg *c)
{
    static const size_t lens[] = { 1, 33, 64, 129, 1000 };
    struct scratch s;
    scratch_init(&s, 2048, 3);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (size_t so = 0; so < 64; so++)
            for (size_t d = 0; d < 64; d++)
                copy_check(c, &s, so, d, lens[i]);
    scratch_fini(&s);
}

/* Random lengths up to LONG_MAX_LEN at random offsets, with the strategy drawn from 'pick'. */
static void run_random(const struct cfg *base, const enum vidmm_strategy *pick, size_t npick, bool any_kind,
                       uint64_t stream)
{
    struct scratch s;
    struct t_rng r;
    scratch_init(&s, LONG_MAX_LEN, stream);
    t_rng_init(&r, stream + 1000);
    for (int it = 0; it < LONG_ITERS; it++) {
        struct cfg c = *base;
        size_t n = t_rng_len(&r, SHORT_MAX + 1, LONG_MAX_LEN);
        /* Every few iterations, the maximum: the longest non-temporal run. */
        if (it % 5 == 0)
            n = LONG_MAX_LEN;
        if (npick)
            c.strategy = pick[t_rng_below(&r, npick)];
        if (any_kind)
            c.kind = (enum vidmm_mem_kind)t_rng_below(&r, VIDMM_MEM_KIND_COUNT_);
        copy_check(&c, &s, t_rng_below(&r, 64), t_rng_below(&r, 64), n);
    }
    scratch_fini(&s);
}

/* ---------------------------------------------------------------------------------------------
 * Guard pages: the source and destination sit flush against an unmapped page, so any read or
 * write beyond the range (a vector load rounded up, a line-sized store) crashes the test.
 * ------------------------------------------------------------------------------------------- */
static const size_t guard_big_lengths[] = { 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096,
                                            4097, 8191, 8192, 8193, 12345, 65535, 65536, 65537, GUARD_REGION };

static void guard_check(const struct cfg *c, struct t_region *sr, struct t_region *dr, bool src_tail,
                        bool dst_tail, size_t n)
{
    const unsigned char *src = src_tail ? sr->hi - n : sr->lo;
    unsigned char *dst = dst_tail ? dr->hi - n : dr->lo;
    const char *where = src_tail ? (dst_tail ? "both at the trailing guard" : "src at the trailing guard, dst at "
                                                                              "the leading guard")
                                 : (dst_tail ? "src at the leading guard, dst at the trailing guard"
                                             : "both at the leading guard");
    t_fault_context("%s: n=%zu, %s", cfg_label(c), n, where);
    int rc = do_copy(c, dst, src, n);
    if (rc != 0)
        cr_assert_fail("%s: n=%zu (%s) returned %d (%s)", cfg_label(c), n, where, rc, vidmm_strerror(rc));
    ptrdiff_t bad = t_find_diff(dst, src, n);
    if (bad >= 0)
        cr_assert_fail("%s: n=%zu (%s): byte %td is 0x%02x, source has 0x%02x", cfg_label(c), n, where, bad, dst[bad],
                src[bad]);
    /* The accessible bytes on the other side of the destination must be untouched. */
    if (dst_tail) {
        size_t before = (size_t)(dst - dr->lo) < MARGIN ? (size_t)(dst - dr->lo) : MARGIN;
        bad = t_find_not(dst - before, before, T_SENTINEL);
        if (bad >= 0)
            cr_assert_fail("%s: n=%zu (%s): wrote %td bytes before dst", cfg_label(c), n, where, (ptrdiff_t)before - bad);
    } else {
        size_t after = (size_t)(dr->hi - (dst + n)) < MARGIN ? (size_t)(dr->hi - (dst + n)) : MARGIN;
        bad = t_find_not(dst + n, after, T_SENTINEL);
        if (bad >= 0)
            cr_assert_fail("%s: n=%zu (%s): wrote byte dst+n+%td", cfg_label(c), n, where, bad);
    }
    memset(dst, T_SENTINEL, n);
}

static void run_guard(const struct cfg *c, bool src_tail, bool dst_tail)
{
    struct t_region sr, dr;
    struct t_rng r;
    t_region_init(&sr, GUARD_REGION);
    t_region_init(&dr, GUARD_REGION);
    t_rng_init(&r, 4);
    fill_source(&r, sr.lo, (size_t)(sr.hi - sr.lo));
    memset(dr.lo, T_SENTINEL, (size_t)(dr.hi - dr.lo));
    for (size_t n = 0; n <= 600; n++)
        guard_check(c, &sr, &dr, src_tail, dst_tail, n);
    for (size_t i = 0; i < sizeof(guard_big_lengths) / sizeof(guard_big_lengths[0]); i++)
        guard_check(c, &sr, &dr, src_tail, dst_tail, guard_big_lengths[i]);
    t_region_fini(&sr);
    t_region_fini(&dr);
}

/* ---------------------------------------------------------------------------------------------
 * Per-backend tests.
 * ------------------------------------------------------------------------------------------- */

static const enum vidmm_strategy cached_strategies[] = { VIDMM_STRATEGY_AUTO, VIDMM_STRATEGY_TEMPORAL,
                                                         VIDMM_STRATEGY_NONTEMPORAL };
#define N_CACHED_STRATEGIES (sizeof(cached_strategies) / sizeof(cached_strategies[0]))

static struct cfg ex_cfg(enum vidmm_backend b, enum vidmm_mem_kind k, enum vidmm_strategy s)
{
    struct cfg c = { API_EX, b, k, s };
    return c;
}

static void backend_all_lengths(enum vidmm_backend b, enum vidmm_mem_kind kind)
{
    t_require_backend(b);
    for (size_t i = 0; i < N_CACHED_STRATEGIES; i++) {
        struct cfg c = ex_cfg(b, kind, cached_strategies[i]);
        run_all_lengths(&c);
    }
}

static void backend_misalign_cached(enum vidmm_backend b)
{
    t_require_backend(b);
    struct cfg t = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_TEMPORAL);
    struct cfg nt = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_NONTEMPORAL);
    run_misalign(&t);
    run_misalign(&nt);
}

static void backend_misalign_device(enum vidmm_backend b)
{
    t_require_backend(b);
    struct cfg nc = ex_cfg(b, VIDMM_MEM_NONCOHERENT, VIDMM_STRATEGY_AUTO);
    struct cfg wc = ex_cfg(b, VIDMM_MEM_WRITE_COMBINED, VIDMM_STRATEGY_AUTO);
    run_misalign(&nc);
    run_misalign(&wc);
}

static void backend_random(enum vidmm_backend b)
{
    t_require_backend(b);
    struct cfg c = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_AUTO);
    run_random(&c, cached_strategies, N_CACHED_STRATEGIES, true, 100 + (uint64_t)b);
}

/* The guard tests run every store policy: temporal and non-temporal on cached memory, and the
 * default policy of the two device kinds. */
static void backend_guard(enum vidmm_backend b, bool src_tail, bool dst_tail)
{
    t_require_backend(b);
    const struct cfg cs[] = {
        ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_TEMPORAL),
        ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_NONTEMPORAL),
        ex_cfg(b, VIDMM_MEM_NONCOHERENT, VIDMM_STRATEGY_AUTO),
        ex_cfg(b, VIDMM_MEM_WRITE_COMBINED, VIDMM_STRATEGY_AUTO),
    };
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
        run_guard(&cs[i], src_tail, dst_tail);
}

/* With the threshold forced down to 4 KiB, a cached destination takes the non-temporal path
 * from 4096 bytes on, so the lengths around it cross from one policy to the other. */
static void set_small_nt_threshold(void)
{
    struct vidmm_cpu_info info;
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 4096), 0);
    vidmm_kernels_reset();
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    cr_assert_eq(info.nt_threshold, 4096, "vidmm_cpu_info().nt_threshold is %llu after setting VIDMM_NT_THRESHOLD "
                 "to 4096 and vidmm_kernels_reset()", (unsigned long long)info.nt_threshold);
}

static void restore_nt_threshold(void)
{
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NT_THRESHOLD, NULL), 0);
    vidmm_kernels_reset();
}

static void run_around_threshold(const struct cfg *c)
{
    struct scratch s;
    scratch_init(&s, 80 << 10, 5);
    for (size_t n = 3968; n <= 4224; n++)
        copy_check(c, &s, n % 64, (n * 5) % 64, n);
    static const size_t lens[] = { 4095, 4096, 4097, 4159, 4160, 8191, 8192, 65536, 65536 + 17, 80 << 10 };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (size_t d = 0; d < 64; d += 7)
            copy_check(c, &s, (d * 3) % 64, d, lens[i]);
    scratch_fini(&s);
}

static void backend_nt_threshold(enum vidmm_backend b)
{
    t_require_backend(b);
    set_small_nt_threshold();
    struct cfg c = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_AUTO);
    run_around_threshold(&c);
    run_guard(&c, true, true);
    run_guard(&c, false, false);
    restore_nt_threshold();
}

/* Streaming loads (MOVNTDQA) read whole aligned vectors: the guard runs catch a kernel that
 * reads one past the source. */
static void backend_stream_load(enum vidmm_backend b)
{
    t_require_backend(b);
    struct cfg c = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_STREAM_LOAD);
    run_all_lengths(&c);
    run_misalign_light(&c);
    run_guard(&c, true, true);
    run_guard(&c, false, false);
    run_guard(&c, true, false);
    run_random(&c, NULL, 0, false, 200 + (uint64_t)b);
}

/* MOVDIR64B: an unsupported answer is a skip only when the CPU really lacks the instruction
 * (or the build left the MOVDIR64B copy out). */
static void backend_movdir64b(enum vidmm_backend b)
{
    t_require_backend(b);
    bool cpu_has = (t_cpu_usable() & VIDMM_CPU_MOVDIR64B) != 0 && t_movdir64b_built();
    unsigned char src[256], dst[256];
    memset(src, 0x3c, sizeof(src));
    memset(dst, T_SENTINEL, sizeof(dst));
    struct vidmm_kernel_opts o = t_opts(b, VIDMM_STRATEGY_MOVDIR64B);
    int rc = vidmm_copy_ex(dst, src, 128, VIDMM_MEM_WRITE_COMBINED, &o);
    if (rc == VIDMM_E_UNSUPPORTED) {
        cr_assert(!cpu_has, "the CPU has MOVDIR64B but vidmm_copy_ex(backend=%s, MOVDIR64B) is unsupported",
                  t_backend_label(b));
        cr_assert_eq(t_find_not(dst, sizeof(dst), T_SENTINEL), -1, "a refused MOVDIR64B copy wrote");
        if (!t_movdir64b_built())
            cr_skip_test("the MOVDIR64B copy is not built (VIDMM_SIMD=scalar)");
        cr_skip_test("CPU lacks movdir64b");
    }
    cr_assert(cpu_has, "vidmm_copy_ex(MOVDIR64B) returned %d on a CPU (or build) without MOVDIR64B", rc);
    cr_assert_eq(rc, 0, "vidmm_copy_ex(backend=%s, MOVDIR64B) returned %d (%s)", t_backend_label(b), rc,
                 vidmm_strerror(rc));
    cr_assert_eq(t_find_diff(dst, src, 128), -1);
    cr_assert_eq(t_find_not(dst + 128, 128, T_SENTINEL), -1);

    static const enum vidmm_mem_kind kinds[] = { VIDMM_MEM_WRITE_COMBINED, VIDMM_MEM_NONCOHERENT, VIDMM_MEM_CACHED };
    for (size_t i = 0; i < 3; i++) {
        struct cfg c = ex_cfg(b, kinds[i], VIDMM_STRATEGY_MOVDIR64B);
        run_all_lengths(&c);
        run_guard(&c, true, true);
        run_guard(&c, false, false);
    }
    struct cfg wc = ex_cfg(b, VIDMM_MEM_WRITE_COMBINED, VIDMM_STRATEGY_MOVDIR64B);
    run_misalign_light(&wc);
    run_random(&wc, NULL, 0, false, 300 + (uint64_t)b);
}

/* The C library baseline is offered on every backend; it must copy like the rest. */
static void backend_libc(enum vidmm_backend b)
{
    t_require_backend(b);
    struct cfg c = ex_cfg(b, VIDMM_MEM_CACHED, VIDMM_STRATEGY_LIBC);
    struct scratch s;
    scratch_init(&s, 4096, 6);
    for (size_t n = 0; n <= 1024; n++)
        copy_check(&c, &s, n % 64, (n * 3) % 64, n);
    scratch_fini(&s);
}

#define T_TIMEOUT 120

#define COPY_BACKEND_TESTS(tag, B)                                                                       \
    Test(copy_##tag, all_lengths_cached, .timeout = T_TIMEOUT) { backend_all_lengths(B, VIDMM_MEM_CACHED); } \
    Test(copy_##tag, all_lengths_noncoherent, .timeout = T_TIMEOUT)                                      \
    {                                                                                                    \
        backend_all_lengths(B, VIDMM_MEM_NONCOHERENT);                                                   \
    }                                                                                                    \
    Test(copy_##tag, all_lengths_write_combined, .timeout = T_TIMEOUT)                                   \
    {                                                                                                    \
        backend_all_lengths(B, VIDMM_MEM_WRITE_COMBINED);                                                \
    }                                                                                                    \
    Test(copy_##tag, misalign_cached, .timeout = T_TIMEOUT) { backend_misalign_cached(B); }              \
    Test(copy_##tag, misalign_device, .timeout = T_TIMEOUT) { backend_misalign_device(B); }              \
    Test(copy_##tag, random_lengths, .timeout = T_TIMEOUT) { backend_random(B); }                        \
    Test(copy_##tag, guard_head, .timeout = T_TIMEOUT) { backend_guard(B, false, false); }               \
    Test(copy_##tag, guard_tail, .timeout = T_TIMEOUT) { backend_guard(B, true, true); }                 \
    Test(copy_##tag, guard_mixed, .timeout = T_TIMEOUT)                                                  \
    {                                                                                                    \
        backend_guard(B, true, false);                                                                   \
        backend_guard(B, false, true);                                                                   \
    }                                                                                                    \
    Test(copy_##tag, nt_threshold, .timeout = T_TIMEOUT) { backend_nt_threshold(B); }                    \
    Test(copy_##tag, stream_load, .timeout = T_TIMEOUT) { backend_stream_load(B); }                      \
    Test(copy_##tag, movdir64b, .timeout = T_TIMEOUT) { backend_movdir64b(B); }                          \
    Test(copy_##tag, libc, .timeout = T_TIMEOUT) { backend_libc(B); }

T_FOR_EACH_BACKEND(COPY_BACKEND_TESTS)

/* ---------------------------------------------------------------------------------------------
 * The default entry points, through whatever the dispatcher chose (CTest forces each backend
 * in turn with VIDMM_BACKEND).
 * ------------------------------------------------------------------------------------------- */

static struct cfg plain_cfg(enum vidmm_mem_kind k)
{
    struct cfg c = { API_PLAIN, VIDMM_BACKEND_AUTO, k, VIDMM_STRATEGY_AUTO };
    return c;
}

Test(copy_default, all_lengths_every_kind, .timeout = T_TIMEOUT)
{
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        struct cfg c = plain_cfg((enum vidmm_mem_kind)k);
        run_all_lengths(&c);
    }
}

Test(copy_default, misalign_every_kind, .timeout = T_TIMEOUT)
{
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        struct cfg c = plain_cfg((enum vidmm_mem_kind)k);
        run_misalign_light(&c);
    }
}

Test(copy_default, guard_every_kind, .timeout = T_TIMEOUT)
{
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        struct cfg c = plain_cfg((enum vidmm_mem_kind)k);
        run_guard(&c, true, true);
        run_guard(&c, false, false);
    }
}

Test(copy_default, random_every_kind, .timeout = T_TIMEOUT)
{
    struct cfg c = plain_cfg(VIDMM_MEM_CACHED);
    run_random(&c, NULL, 0, true, 400);
}

static void run_everything(const struct cfg *c, uint64_t stream)
{
    run_all_lengths(c);
    run_misalign_light(c);
    run_guard(c, true, true);
    run_guard(c, false, false);
    run_guard(c, true, false);
    run_random(c, NULL, 0, false, stream);
}

Test(copy_default, to_wc, .timeout = T_TIMEOUT)
{
    struct cfg c = { API_TO_WC, VIDMM_BACKEND_AUTO, VIDMM_MEM_WRITE_COMBINED, VIDMM_STRATEGY_AUTO };
    run_everything(&c, 500);
    const char *v = vidmm_wc_copy_variant();
    cr_assert(v != NULL && *v != '\0', "vidmm_wc_copy_variant() is empty");
    cr_assert_str_eq(vidmm_wc_copy_variant(), v, "the copy-to-WC variant changed between calls");
}

Test(copy_default, from_wc, .timeout = T_TIMEOUT)
{
    struct cfg c = { API_FROM_WC, VIDMM_BACKEND_AUTO, VIDMM_MEM_CACHED, VIDMM_STRATEGY_AUTO };
    run_everything(&c, 600);
}

/* The NT-threshold case for the default path: 4 KiB + vidmm_kernels_reset(), then
 * copies around it, then the default restored (0 = the last-level cache size). */
Test(copy_default, nt_threshold_small, .timeout = T_TIMEOUT)
{
    set_small_nt_threshold();
    struct cfg c = plain_cfg(VIDMM_MEM_CACHED);
    run_around_threshold(&c);
    run_guard(&c, true, true);
    restore_nt_threshold();

    struct vidmm_cpu_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    cr_assert_neq(info.nt_threshold, 4096, "the threshold stayed at 4096 after restoring the default");
    /* The LLC, capped at 32 MiB (copy.c NT_THRESHOLD_MAX: one thread does not get a server's LLC). */
    const uint64_t want = info.llc_bytes < (32ull << 20) ? info.llc_bytes : 32ull << 20;
    if (info.llc_bytes != 0)
        cr_assert_eq(info.nt_threshold, want, "default NT threshold %llu is not min(LLC %llu, 32 MiB)",
                     (unsigned long long)info.nt_threshold, (unsigned long long)info.llc_bytes);
}

/* ---------------------------------------------------------------------------------------------
 * Bad arguments: an error code, and the destination untouched.
 * ------------------------------------------------------------------------------------------- */

#define ARG_LEN 256

struct arg_bufs {
    unsigned char src[ARG_LEN];
    unsigned char dst[ARG_LEN];
};

static void arg_init(struct arg_bufs *a)
{
    memset(a->src, 0x42, sizeof(a->src));
    memset(a->dst, T_SENTINEL, sizeof(a->dst));
}

#define EXPECT_REFUSED(call, want, a)                                                                     \
    do {                                                                                                  \
        int rc_ = (call);                                                                                 \
        cr_assert_eq(rc_, (want), "%s returned %d (%s), want %d (%s)", #call, rc_, vidmm_strerror(rc_), (want), \
                     vidmm_strerror(want));                                                               \
        cr_assert_eq(t_find_not((a)->dst, ARG_LEN, T_SENTINEL), -1, "%s failed but wrote to dst", #call);  \
    } while (0)

Test(copy_args, null_pointers)
{
    struct arg_bufs a;
    arg_init(&a);
    for (int k = 0; k < VIDMM_MEM_KIND_COUNT_; k++) {
        EXPECT_REFUSED(vidmm_copy(a.dst, NULL, 16, (enum vidmm_mem_kind)k), VIDMM_E_INVALID_ARG, &a);
        EXPECT_REFUSED(vidmm_copy(NULL, a.src, 16, (enum vidmm_mem_kind)k), VIDMM_E_INVALID_ARG, &a);
        EXPECT_REFUSED(vidmm_copy_ex(a.dst, NULL, 1, (enum vidmm_mem_kind)k, NULL), VIDMM_E_INVALID_ARG, &a);
    }
    EXPECT_REFUSED(vidmm_copy_to_wc(a.dst, NULL, 64), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy_to_wc(NULL, a.src, 64), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy_from_wc(a.dst, NULL, 64), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy_from_wc(NULL, a.src, 64), VIDMM_E_INVALID_ARG, &a);
    /* n == 0 needs no memory: NULL is fine there. */
    cr_assert_eq(vidmm_copy(NULL, NULL, 0, VIDMM_MEM_CACHED), 0);
    cr_assert_eq(vidmm_copy_to_wc(NULL, NULL, 0), 0);
    cr_assert_eq(vidmm_copy_from_wc(NULL, NULL, 0), 0);
}

Test(copy_args, unknown_kind)
{
    struct arg_bufs a;
    arg_init(&a);
    EXPECT_REFUSED(vidmm_copy(a.dst, a.src, 64, (enum vidmm_mem_kind)7), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy(a.dst, a.src, 64, VIDMM_MEM_KIND_COUNT_), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy(a.dst, a.src, 64, (enum vidmm_mem_kind)-1), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy_ex(a.dst, a.src, 64, (enum vidmm_mem_kind)7, NULL), VIDMM_E_INVALID_ARG, &a);
}

Test(copy_args, bad_opts)
{
    struct arg_bufs a;
    struct vidmm_kernel_opts o;
    arg_init(&a);

    o = t_opts((enum vidmm_backend)42, VIDMM_STRATEGY_AUTO);
    EXPECT_REFUSED(vidmm_copy_ex(a.dst, a.src, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, &a);
    o = t_opts(VIDMM_BACKEND_COUNT_, VIDMM_STRATEGY_AUTO);
    EXPECT_REFUSED(vidmm_copy_ex(a.dst, a.src, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, &a);
    o = t_opts(VIDMM_BACKEND_SCALAR, (enum vidmm_strategy)42);
    EXPECT_REFUSED(vidmm_copy_ex(a.dst, a.src, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, &a);
    o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_COUNT_);
    EXPECT_REFUSED(vidmm_copy_ex(a.dst, a.src, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_INVALID_ARG, &a);

    /* A 'size' that does not cover the fields of the first version. */
    static const size_t small[] = { 0, 1, sizeof(size_t), offsetof(struct vidmm_kernel_opts, strategy) };
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
        o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_TEMPORAL);
        o.size = small[i];
        int rc = vidmm_copy_ex(a.dst, a.src, 64, VIDMM_MEM_CACHED, &o);
        cr_assert_eq(rc, VIDMM_E_INVALID_ARG, "opts.size=%zu accepted (rc %d)", small[i], rc);
        cr_assert_eq(t_find_not(a.dst, ARG_LEN, T_SENTINEL), -1, "opts.size=%zu: refused call wrote", small[i]);
    }

    /* A backend that exists but is not supported here is VIDMM_E_UNSUPPORTED. */
    for (int b = VIDMM_BACKEND_SCALAR; b < VIDMM_BACKEND_COUNT_; b++) {
        if (vidmm_backend_supported((enum vidmm_backend)b))
            continue;
        o = t_opts((enum vidmm_backend)b, VIDMM_STRATEGY_AUTO);
        EXPECT_REFUSED(vidmm_copy_ex(a.dst, a.src, 64, VIDMM_MEM_CACHED, &o), VIDMM_E_UNSUPPORTED, &a);
    }

    /* opts == NULL is all AUTO, and a struct from VIDMM_KERNEL_OPTS_INIT is accepted. */
    cr_assert_eq(vidmm_copy_ex(a.dst, a.src, 64, VIDMM_MEM_CACHED, NULL), 0);
    cr_assert_eq(memcmp(a.dst, a.src, 64), 0);
    struct vidmm_kernel_opts init = VIDMM_KERNEL_OPTS_INIT;
    cr_assert_eq(vidmm_copy_ex(a.dst + 64, a.src, 64, VIDMM_MEM_CACHED, &init), 0);
    cr_assert_eq(memcmp(a.dst + 64, a.src, 64), 0);
}

/* Every overlap of two n-byte ranges is refused; ranges that merely touch are copied. */
Test(copy_args, overlap)
{
    enum { N = 64 };
    unsigned char buf[4 * N], ref[4 * N];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 37 + 1);
    memcpy(ref, buf, sizeof(buf));
    unsigned char *mid = buf + N + N / 2;

    for (int k = -(N - 1); k <= N - 1; k++) {
        for (int kind = 0; kind < VIDMM_MEM_KIND_COUNT_; kind++) {
            int rc = vidmm_copy(mid + k, mid, N, (enum vidmm_mem_kind)kind);
            cr_assert_eq(rc, VIDMM_E_OVERLAP, "dst = src %+d, n = %d, kind %s: rc %d, want VIDMM_E_OVERLAP", k, N,
                         t_kind_label((enum vidmm_mem_kind)kind), rc);
            cr_assert_eq(memcmp(buf, ref, sizeof(buf)), 0, "a refused overlapping copy (dst = src %+d) wrote", k);
        }
        struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_TEMPORAL);
        cr_assert_eq(vidmm_copy_ex(mid + k, mid, N, VIDMM_MEM_CACHED, &o), VIDMM_E_OVERLAP);
        cr_assert_eq(vidmm_copy_to_wc(mid + k, mid, N), VIDMM_E_OVERLAP);
        cr_assert_eq(vidmm_copy_from_wc(mid + k, mid, N), VIDMM_E_OVERLAP);
        cr_assert_eq(memcmp(buf, ref, sizeof(buf)), 0, "a refused overlapping copy (dst = src %+d) wrote", k);
    }
    /* An empty range overlaps nothing. */
    cr_assert_eq(vidmm_copy(mid, mid, 0, VIDMM_MEM_CACHED), 0);

    /* Adjacent ranges, both ways round. */
    cr_assert_eq(vidmm_copy(mid + N, mid, N, VIDMM_MEM_CACHED), 0);
    cr_assert_eq(memcmp(mid + N, ref + (mid - buf), N), 0);
    memcpy(buf, ref, sizeof(buf));
    cr_assert_eq(vidmm_copy(mid - N, mid, N, VIDMM_MEM_CACHED), 0);
    cr_assert_eq(memcmp(mid - N, ref + (mid - buf), N), 0);
}

/* A range that wraps around the end of the address space is refused before anything is read
 * or written (the pointers here are not mapped: touching them would crash the test). */
Test(copy_args, wrapping_range)
{
    struct arg_bufs a;
    arg_init(&a);
    void *top = (void *)(UINTPTR_MAX - 15);
    EXPECT_REFUSED(vidmm_copy(a.dst, top, 32, VIDMM_MEM_CACHED), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy(top, a.src, 32, VIDMM_MEM_CACHED), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy(a.dst, a.src, SIZE_MAX, VIDMM_MEM_CACHED), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy_to_wc(top, a.src, 32), VIDMM_E_INVALID_ARG, &a);
    EXPECT_REFUSED(vidmm_copy_from_wc(a.dst, top, 32), VIDMM_E_INVALID_ARG, &a);
}

/* The baseline strategy through the dispatcher's backend. */
Test(copy_default, libc_strategy)
{
    struct scratch s;
    struct cfg c = { API_EX, VIDMM_BACKEND_AUTO, VIDMM_MEM_CACHED, VIDMM_STRATEGY_LIBC };
    scratch_init(&s, 4096, 7);
    for (size_t n = 0; n <= 600; n++)
        copy_check(&c, &s, (n * 11) % 64, n % 64, n);
    scratch_fini(&s);
}
