/* SPDX-License-Identifier: MIT */
/* tests/kernels/test_flush.c - vidmm_flush, vidmm_flush_ex and vidmm_flush_insn: every operation
 * with every instruction the CPU has, contents never change, no fault on ranges flush against
 * guard pages, any alignment, empty ranges, and the refusals.
 *
 * Whether a line really left the cache is not observable from a test without timing, and timing
 * is never asserted (STYLE.md section 10); what is checked is that the call is accepted exactly
 * when the CPU can do it, touches every byte of the range without faulting and changes nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"

#define T_TIMEOUT 60
#define REGION ((size_t)64 << 10)

static const enum vidmm_flush_op all_ops[] = { VIDMM_FLUSH_WRITEBACK, VIDMM_FLUSH_WRITEBACK_INVALIDATE,
                                               VIDMM_FLUSH_INVALIDATE };

static const char *op_label(enum vidmm_flush_op op)
{
    switch (op) {
    case VIDMM_FLUSH_WRITEBACK: return "writeback";
    case VIDMM_FLUSH_WRITEBACK_INVALIDATE: return "writeback_invalidate";
    case VIDMM_FLUSH_INVALIDATE: return "invalidate";
    default: return "?";
    }
}

static uint64_t insn_cpu_bit(enum vidmm_flush_insn insn)
{
    switch (insn) {
    case VIDMM_FLUSH_INSN_CLWB: return VIDMM_CPU_CLWB;
    case VIDMM_FLUSH_INSN_CLFLUSHOPT: return VIDMM_CPU_CLFLUSHOPT;
    case VIDMM_FLUSH_INSN_CLFLUSH: return VIDMM_CPU_CLFLUSH;
    default: return 0;
    }
}

/* CLWB may leave the line cached, so it performs a write-back only. */
static bool insn_does(enum vidmm_flush_insn insn, enum vidmm_flush_op op)
{
    return insn != VIDMM_FLUSH_INSN_CLWB || op == VIDMM_FLUSH_WRITEBACK;
}

/* A flush function under test: vidmm_flush_ex with a forced instruction, or vidmm_flush. */
struct cfg {
    bool ex;
    enum vidmm_flush_insn insn;
};

static int do_flush(const struct cfg *c, void *p, size_t n, enum vidmm_flush_op op)
{
    return c->ex ? vidmm_flush_ex(p, n, op, c->insn) : vidmm_flush(p, n, op);
}

static const char *cfg_label(const struct cfg *c)
{
    static char buf[64];
    if (c->ex)
        snprintf(buf, sizeof(buf), "vidmm_flush_ex(insn=%s)", vidmm_flush_insn_name(c->insn));
    else
        snprintf(buf, sizeof(buf), "vidmm_flush()");
    return buf;
}

/* require_insn() returns when 'insn' can run here; otherwise it checks that the library refuses
 * it with VIDMM_E_UNSUPPORTED, touching nothing, and skips. When the CPU has the instruction,
 * VIDMM_E_UNSUPPORTED fails the test. */
static void require_insn(enum vidmm_flush_insn insn)
{
    bool cpu_has = (t_cpu_usable() & insn_cpu_bit(insn)) != 0;
    unsigned char buf[256];
    memset(buf, 0x6b, sizeof(buf));
    uint64_t sum = t_checksum(buf, sizeof(buf));

    int rc = vidmm_flush_ex(buf, sizeof(buf), VIDMM_FLUSH_WRITEBACK, insn);
    cr_assert_eq(t_checksum(buf, sizeof(buf)), sum, "a flush changed the contents of its range");
    if (!cpu_has) {
        cr_assert_eq(rc, VIDMM_E_UNSUPPORTED, "the CPU lacks %s but vidmm_flush_ex(%s) returned %d",
                     vidmm_flush_insn_name(insn), vidmm_flush_insn_name(insn), rc);
        struct vidmm_cpu_info info;
        memset(&info, 0, sizeof(info));
        info.size = sizeof(info);
        if (vidmm_cpu_info(&info) == 0 && (info.features & insn_cpu_bit(insn)))
            cr_skip_test("%s masked by VIDMM_DISABLE_CPU_FEATURES", vidmm_flush_insn_name(insn));
        cr_skip_test("CPU lacks %s", vidmm_flush_insn_name(insn));
    }
    cr_assert_eq(rc, 0, "the CPU has %s but vidmm_flush_ex(%s, writeback) returned %d (%s)",
                 vidmm_flush_insn_name(insn), vidmm_flush_insn_name(insn), rc, vidmm_strerror(rc));
}

/* A guarded region of random bytes and a snapshot of it: after every flush the region must
 * still equal the snapshot (a full compare, stronger than a checksum and as fast). */
struct region {
    struct t_region g;
    unsigned char *snap;
    size_t len;
};

static void region_init(struct region *r)
{
    struct t_rng rng;
    t_region_init(&r->g, REGION);
    r->len = (size_t)(r->g.hi - r->g.lo);
    t_rng_init(&rng, 77);
    t_rng_bytes(&rng, r->g.lo, r->len);
    r->snap = malloc(r->len);
    cr_assert(r->snap != NULL);
    memcpy(r->snap, r->g.lo, r->len);
}

static void region_fini(struct region *r)
{
    free(r->snap);
    t_region_fini(&r->g);
}

/* flush_check() flushes [p, p + n) and checks the result and the contents of the region. */
static void flush_check(const struct cfg *c, struct region *r, unsigned char *p, size_t n, enum vidmm_flush_op op,
                        const char *where)
{
    t_fault_context("%s %s: [lo+%td, +%zu) (%s)", cfg_label(c), op_label(op), p - r->g.lo, n, where);
    int rc = do_flush(c, p, n, op);
    if (rc != 0)
        cr_assert_fail("%s %s: [lo+%td, +%zu) (%s) returned %d (%s)", cfg_label(c), op_label(op), p - r->g.lo, n,
                       where, rc, vidmm_strerror(rc));
    ptrdiff_t bad = t_find_diff(r->g.lo, r->snap, r->len);
    if (bad >= 0)
        cr_assert_fail("%s %s: [lo+%td, +%zu) (%s) changed byte lo+%td", cfg_label(c), op_label(op), p - r->g.lo, n,
                       where, bad);
}

/* Every start offset in a line x lengths from one byte to many lines, at an offset from a
 * page start, then flush against both guards, then ranges crossing line boundaries. */
static void run_ranges(const struct cfg *c, enum vidmm_flush_op op)
{
    static const size_t lens[] = { 1, 2, 3, 31, 32, 63, 64, 65, 127, 128, 129, 4095, 4096, 4097, 40000 };
    struct region r;
    region_init(&r);
    unsigned char *lo = r.g.lo, *hi = r.g.hi;

    for (size_t off = 0; off < 64; off++)
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
            flush_check(c, &r, lo + 4096 + off, lens[i], op, "inside");

    /* Flush against the guards: the first byte after the leading one, the last bytes before
     * the trailing one, and the whole region. A flush instruction needs the line mapped; a
     * kernel that rounds the end up to a whole extra line would fault here. */
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        flush_check(c, &r, lo, lens[i], op, "at the leading guard");
        flush_check(c, &r, hi - lens[i], lens[i], op, "at the trailing guard");
    }
    flush_check(c, &r, lo, r.len, op, "whole region");
    flush_check(c, &r, hi - 1, 1, op, "last byte");

    /* Two bytes straddling each line boundary of a page, and a line-sized range starting in
     * the middle of a line (covers two lines). */
    for (size_t line = 64; line < 4096; line += 64) {
        flush_check(c, &r, lo + line - 1, 2, op, "straddling a line boundary");
        flush_check(c, &r, lo + line - 32, 64, op, "half a line on each side");
    }
    region_fini(&r);
}

static void run_empty(const struct cfg *c, enum vidmm_flush_op op)
{
    unsigned char buf[64];
    memset(buf, 0x19, sizeof(buf));
    int rc = do_flush(c, NULL, 0, op);
    cr_assert_eq(rc, 0, "%s %s(NULL, 0) returned %d, want 0", cfg_label(c), op_label(op), rc);
    rc = do_flush(c, buf, 0, op);
    cr_assert_eq(rc, 0, "%s %s(buf, 0) returned %d, want 0", cfg_label(c), op_label(op), rc);
    rc = do_flush(c, buf + 63, 0, op);
    cr_assert_eq(rc, 0);
    cr_assert_eq(t_find_not(buf, sizeof(buf), 0x19), -1, "an empty flush changed memory");
}

/* Memory just written by the CPU, flushed, then read back: what a device hand-off does. */
static void run_write_flush_read(const struct cfg *c, enum vidmm_flush_op op)
{
    unsigned char *buf = NULL;
    cr_assert(posix_memalign((void **)&buf, 64, 8192) == 0);
    for (int round = 0; round < 8; round++) {
        memset(buf, 0x30 + round, 8192);
        int rc = do_flush(c, buf + round, 8192 - 2 * (size_t)round, op);
        cr_assert_eq(rc, 0, "%s %s returned %d", cfg_label(c), op_label(op), rc);
        cr_assert_eq(t_find_not(buf, 8192, (unsigned char)(0x30 + round)), -1,
                     "%s %s: data written before the flush was lost", cfg_label(c), op_label(op));
    }
    free(buf);
}

static void insn_all(enum vidmm_flush_insn insn)
{
    require_insn(insn);
    struct cfg c = { true, insn };
    for (size_t i = 0; i < 3; i++) {
        if (!insn_does(insn, all_ops[i]))
            continue;
        run_ranges(&c, all_ops[i]);
        run_empty(&c, all_ops[i]);
        run_write_flush_read(&c, all_ops[i]);
    }
}

Test(flush_clwb, writeback, .timeout = T_TIMEOUT) { insn_all(VIDMM_FLUSH_INSN_CLWB); }
Test(flush_clflushopt, every_op, .timeout = T_TIMEOUT) { insn_all(VIDMM_FLUSH_INSN_CLFLUSHOPT); }
Test(flush_clflush, every_op, .timeout = T_TIMEOUT) { insn_all(VIDMM_FLUSH_INSN_CLFLUSH); }

/* Each instruction is accepted for an operation exactly when the CPU has it and it can do that
 * operation: CLWB with an invalidating operation is VIDMM_E_UNSUPPORTED on every CPU. */
Test(flush_ex, accepted_iff_cpu_has_it)
{
    static const enum vidmm_flush_insn insns[] = { VIDMM_FLUSH_INSN_CLWB, VIDMM_FLUSH_INSN_CLFLUSHOPT,
                                                   VIDMM_FLUSH_INSN_CLFLUSH };
    uint64_t usable = t_cpu_usable();
    unsigned char buf[128];
    memset(buf, 0x77, sizeof(buf));
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++) {
            bool ok = (usable & insn_cpu_bit(insns[i])) && insn_does(insns[i], all_ops[j]);
            int rc = vidmm_flush_ex(buf, sizeof(buf), all_ops[j], insns[i]);
            cr_assert_eq(rc, ok ? 0 : VIDMM_E_UNSUPPORTED, "vidmm_flush_ex(%s, %s) returned %d, want %d",
                         vidmm_flush_insn_name(insns[i]), op_label(all_ops[j]), rc, ok ? 0 : VIDMM_E_UNSUPPORTED);
        }
    cr_assert_eq(t_find_not(buf, sizeof(buf), 0x77), -1);
}

Test(flush_ex, clwb_refuses_invalidation)
{
    unsigned char buf[128];
    memset(buf, 0x21, sizeof(buf));
    cr_assert_eq(vidmm_flush_ex(buf, sizeof(buf), VIDMM_FLUSH_WRITEBACK_INVALIDATE, VIDMM_FLUSH_INSN_CLWB),
                 VIDMM_E_UNSUPPORTED);
    cr_assert_eq(vidmm_flush_ex(buf, sizeof(buf), VIDMM_FLUSH_INVALIDATE, VIDMM_FLUSH_INSN_CLWB), VIDMM_E_UNSUPPORTED);
    cr_assert_eq(t_find_not(buf, sizeof(buf), 0x21), -1);
}

/* Arm's data-cache instructions do not exist on x86 (and this build has no Arm flush yet). */
Test(flush_ex, foreign_insn_unsupported)
{
    unsigned char buf[64];
    if (t_cpu_usable() & VIDMM_CPU_NEON)
        cr_skip_test("an Arm CPU: DC CVAC/CIVAC may be available");
    cr_assert_eq(vidmm_flush_ex(buf, sizeof(buf), VIDMM_FLUSH_WRITEBACK, VIDMM_FLUSH_INSN_DC_CVAC), VIDMM_E_UNSUPPORTED);
    cr_assert_eq(vidmm_flush_ex(buf, sizeof(buf), VIDMM_FLUSH_INVALIDATE, VIDMM_FLUSH_INSN_DC_CIVAC),
                 VIDMM_E_UNSUPPORTED);
}

/* ---------------------------------------------------------------------------------------------
 * vidmm_flush() and the instruction it picks.
 * ------------------------------------------------------------------------------------------- */

/* What kernels.h promises: CLWB for a write-back where the CPU has it, else CLFLUSHOPT, else
 * CLFLUSH; the invalidating operations never get CLWB; options can rule CLWB and CLFLUSHOPT out. */
static enum vidmm_flush_insn expected_insn(enum vidmm_flush_op op, uint64_t usable, bool no_clwb,
                                           bool no_clflushopt)
{
    if (op == VIDMM_FLUSH_WRITEBACK && !no_clwb && (usable & VIDMM_CPU_CLWB))
        return VIDMM_FLUSH_INSN_CLWB;
    if (!no_clflushopt && (usable & VIDMM_CPU_CLFLUSHOPT))
        return VIDMM_FLUSH_INSN_CLFLUSHOPT;
    if (usable & VIDMM_CPU_CLFLUSH)
        return VIDMM_FLUSH_INSN_CLFLUSH;
    return VIDMM_FLUSH_INSN_AUTO;
}

static void check_insn_choice(bool no_clwb, bool no_clflushopt)
{
    uint64_t usable = t_cpu_usable();
    for (size_t i = 0; i < 3; i++) {
        enum vidmm_flush_insn got = vidmm_flush_insn(all_ops[i]);
        enum vidmm_flush_insn want = expected_insn(all_ops[i], usable, no_clwb, no_clflushopt);
        cr_assert_eq(got, want, "vidmm_flush_insn(%s) = %s, want %s (no_clwb=%d no_clflushopt=%d)",
                     op_label(all_ops[i]), vidmm_flush_insn_name(got), vidmm_flush_insn_name(want), no_clwb,
                     no_clflushopt);
        cr_assert(got == VIDMM_FLUSH_INSN_AUTO || insn_does(got, all_ops[i]), "%s cannot do %s",
                  vidmm_flush_insn_name(got), op_label(all_ops[i]));
    }
}

/* vidmm_flush() needs one of the instructions; every x86-64 CPU has CLFLUSH (it came with
 * SSE2), so only VIDMM_DISABLE_CPU_FEATURES can take them all away there - or the generic
 * architecture layer (VIDMM_ARCH=generic), which has none. Then the call must say
 * VIDMM_E_UNSUPPORTED, and the test is skipped. */
static void require_some_flush(void)
{
    uint64_t usable = t_cpu_usable();
    struct vidmm_cpu_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0);
#if defined(__x86_64__)
    if (t_arch_x86())
        cr_assert(info.features & VIDMM_CPU_CLFLUSH, "an x86-64 CPU without CLFLUSH?");
#endif
    if (usable & (VIDMM_CPU_CLFLUSH | VIDMM_CPU_CLFLUSHOPT | VIDMM_CPU_CLWB))
        return;
    unsigned char buf[64];
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(vidmm_flush_insn(all_ops[i]), VIDMM_FLUSH_INSN_AUTO);
        cr_assert_eq(vidmm_flush(buf, sizeof(buf), all_ops[i]), VIDMM_E_UNSUPPORTED);
    }
    cr_skip_test("no cache-maintenance instruction usable (CPU, VIDMM_DISABLE_CPU_FEATURES, or the generic "
                 "architecture layer)");
}

Test(flush_default, insn_is_sane)
{
    /* Respect VIDMM_NO_CLWB / VIDMM_NO_CLFLUSHOPT if the environment sets them. */
    check_insn_choice(vidmm_option_get(VIDMM_OPT_NO_CLWB) != 0, vidmm_option_get(VIDMM_OPT_NO_CLFLUSHOPT) != 0);
    cr_assert_eq(vidmm_flush_insn((enum vidmm_flush_op)0), VIDMM_FLUSH_INSN_AUTO);
    cr_assert_eq(vidmm_flush_insn((enum vidmm_flush_op)4), VIDMM_FLUSH_INSN_AUTO);
    require_some_flush();
    for (size_t i = 0; i < 3; i++)
        cr_assert_neq(vidmm_flush_insn(all_ops[i]), VIDMM_FLUSH_INSN_AUTO);
}

Test(flush_default, insn_names)
{
    cr_assert_str_eq(vidmm_flush_insn_name(VIDMM_FLUSH_INSN_CLWB), "clwb");
    cr_assert_str_eq(vidmm_flush_insn_name(VIDMM_FLUSH_INSN_CLFLUSHOPT), "clflushopt");
    cr_assert_str_eq(vidmm_flush_insn_name(VIDMM_FLUSH_INSN_CLFLUSH), "clflush");
    for (int i = 0; i < VIDMM_FLUSH_INSN_COUNT_; i++) {
        const char *a = vidmm_flush_insn_name((enum vidmm_flush_insn)i);
        cr_assert(a != NULL && *a != '\0', "instruction %d has no name", i);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(a, vidmm_flush_insn_name((enum vidmm_flush_insn)j), "two instructions named '%s'", a);
    }
    cr_assert_null(vidmm_flush_insn_name(VIDMM_FLUSH_INSN_COUNT_));
    cr_assert_null(vidmm_flush_insn_name((enum vidmm_flush_insn)99));
}

Test(flush_default, no_clwb_option)
{
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NO_CLWB, 1), 0);
    vidmm_kernels_reset();
    check_insn_choice(true, vidmm_option_get(VIDMM_OPT_NO_CLFLUSHOPT) != 0);
    cr_assert_neq(vidmm_flush_insn(VIDMM_FLUSH_WRITEBACK), VIDMM_FLUSH_INSN_CLWB);

    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NO_CLFLUSHOPT, 1), 0);
    vidmm_kernels_reset();
    check_insn_choice(true, true);

    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NO_CLWB, NULL), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NO_CLFLUSHOPT, NULL), 0);
    vidmm_kernels_reset();
    check_insn_choice(false, false);
}

Test(flush_default, every_op, .timeout = T_TIMEOUT)
{
    require_some_flush();
    struct cfg c = { false, VIDMM_FLUSH_INSN_AUTO };
    for (size_t i = 0; i < 3; i++) {
        run_ranges(&c, all_ops[i]);
        run_empty(&c, all_ops[i]);
        run_write_flush_read(&c, all_ops[i]);
    }
}

/* The forced-AUTO form of vidmm_flush_ex() is vidmm_flush(). */
Test(flush_default, ex_auto, .timeout = T_TIMEOUT)
{
    require_some_flush();
    struct cfg c = { true, VIDMM_FLUSH_INSN_AUTO };
    for (size_t i = 0; i < 3; i++) {
        run_ranges(&c, all_ops[i]);
        run_empty(&c, all_ops[i]);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Bad arguments.
 * ------------------------------------------------------------------------------------------- */

Test(flush_args, null_with_length)
{
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(vidmm_flush(NULL, 1, all_ops[i]), VIDMM_E_INVALID_ARG);
        cr_assert_eq(vidmm_flush(NULL, 4096, all_ops[i]), VIDMM_E_INVALID_ARG);
        cr_assert_eq(vidmm_flush_ex(NULL, 64, all_ops[i], VIDMM_FLUSH_INSN_CLFLUSH), VIDMM_E_INVALID_ARG);
    }
}

Test(flush_args, unknown_op)
{
    static const int bad_ops[] = { 0, 4, 99, -1 };
    unsigned char buf[128];
    memset(buf, 0x4d, sizeof(buf));
    for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
        enum vidmm_flush_op op = (enum vidmm_flush_op)bad_ops[i];
        cr_assert_eq(vidmm_flush(buf, sizeof(buf), op), VIDMM_E_INVALID_ARG, "op %d accepted", bad_ops[i]);
        cr_assert_eq(vidmm_flush_ex(buf, sizeof(buf), op, VIDMM_FLUSH_INSN_CLFLUSH), VIDMM_E_INVALID_ARG,
                     "op %d accepted by vidmm_flush_ex", bad_ops[i]);
        cr_assert_eq(vidmm_flush(NULL, 0, op), VIDMM_E_INVALID_ARG, "op %d accepted with an empty range", bad_ops[i]);
    }
    cr_assert_eq(t_find_not(buf, sizeof(buf), 0x4d), -1);
}

Test(flush_args, unknown_insn)
{
    unsigned char buf[128];
    memset(buf, 0x4d, sizeof(buf));
    cr_assert_eq(vidmm_flush_ex(buf, sizeof(buf), VIDMM_FLUSH_WRITEBACK, VIDMM_FLUSH_INSN_COUNT_),
                 VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_flush_ex(buf, sizeof(buf), VIDMM_FLUSH_WRITEBACK, (enum vidmm_flush_insn)99),
                 VIDMM_E_INVALID_ARG);
    cr_assert_eq(t_find_not(buf, sizeof(buf), 0x4d), -1);
}

/* Unmapped addresses: refused before any instruction touches them, or the test would crash. */
Test(flush_args, wrapping_range)
{
    void *top = (void *)(UINTPTR_MAX - 63);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(vidmm_flush(top, 128, all_ops[i]), VIDMM_E_INVALID_ARG);
        cr_assert_eq(vidmm_flush_ex(top, 65, all_ops[i], VIDMM_FLUSH_INSN_CLFLUSH), VIDMM_E_INVALID_ARG);
    }
}
