/* SPDX-License-Identifier: MIT */
/* tests/common/t_lite.h - a stand-in for the part of Criterion the concurrency suite uses, for
 * the ThreadSanitizer build only.
 *
 * Why: Criterion 2.4's runner shares an arena with its workers, mapped with MAP_FIXED at a
 * random address between 0x2000'0000'0000 and 0x7f00'0000'0000 (BoxFort src/arena.c). Under
 * TSan most of that range is shadow memory the runtime has reserved, so the mapping fails
 * ("Could not initialize inheritable arena") and the runner crashes, in most runs with gcc and
 * in some with clang. This header keeps the suite's source unchanged: the same Test() and
 * cr_assert*() spellings, each test run in its own forked process (fresh library state, as
 * under Criterion), exit status 77 for a skip, a time limit per test.
 *
 * Only what tests/concurrency, tests/common and the engine suites (tests/engine: conformance,
 * model) use is provided, and what the programs tools/test.sh runs under valgrind memcheck use
 * (cr_expect*, ReportHook(PRE_ALL/POST_ALL), Criterion's --filter, -j, --list): the valgrind
 * preset builds those against this runner too (VIDMM_TEST_LITE; tests/common/lite/ says why). */
#ifndef VIDMM_TESTS_T_LITE_H
#define VIDMM_TESTS_T_LITE_H

#include <stdbool.h>
#include <string.h>

struct t_lite_test {
    const char *suite;
    const char *name;
    void (*fn)(void);
    double timeout; /* seconds; 0 = the default */
    struct t_lite_test *next;
};

void t_lite_register(struct t_lite_test *t);
/* No format attribute: an assertion without a message passes "" as its format, which
 * -Wformat-zero-length would flag at every call. */
void t_lite_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...);
/* A failed cr_assert*(): reported, and the test ends (as Criterion's, it does not return, which
 * the compiler knows: code after a check may rely on it). */
_Noreturn void t_lite_fail(const char *file, int line, const char *expr, const char *fmt, ...);
_Noreturn void t_lite_skip(const char *fmt, ...);
void t_lite_info(const char *fmt, ...);
/* cr_expect*(): a failure is reported and the test goes on; it fails at its end. */
void t_lite_expect_fail(const char *file, int line, const char *expr, const char *fmt, ...);

/* ReportHook(PRE_ALL) / ReportHook(POST_ALL): run in the runner before the first test and after
 * the last (t_lite.c calls them where a suite defines them; their argument is NULL). */
struct criterion_test_set;
struct criterion_global_stats;
#define ReportHook(K) void t_lite_hook_##K
void t_lite_hook_PRE_ALL(struct criterion_test_set *set);
void t_lite_hook_POST_ALL(struct criterion_global_stats *stats);

/* Test(suite, name, .timeout = seconds): defines the body and registers it before main(). */
#define Test(S, N, ...)                                                                            \
    static void S##_##N##_body(void);                                                              \
    static struct t_lite_test S##_##N##_desc = { .suite = #S, .name = #N, .fn = S##_##N##_body,     \
                                                 __VA_ARGS__ };                                    \
    __attribute__((constructor)) static void S##_##N##_register(void) { t_lite_register(&S##_##N##_desc); } \
    static void S##_##N##_body(void)

/* The message is optional, as in Criterion: "" glues onto a format literal or stands alone. As
 * in Criterion, the message's arguments are evaluated only when the check fails: a message that
 * reads what exists only on failure (an operation a call should not have emitted) must not be
 * read on success, where memcheck would flag it as uninitialised (the valgrind preset). */
#define T_LITE_CHECK_(fn, cond, expr, ...)                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fn(__FILE__, __LINE__, expr, "" __VA_ARGS__);                                          \
    } while (0)
#define cr_assert(cond, ...) T_LITE_CHECK_(t_lite_fail, (cond), #cond, __VA_ARGS__)
#define cr_assert_not(cond, ...) T_LITE_CHECK_(t_lite_fail, !(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) T_LITE_CHECK_(t_lite_fail, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) T_LITE_CHECK_(t_lite_fail, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) T_LITE_CHECK_(t_lite_fail, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) T_LITE_CHECK_(t_lite_fail, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) T_LITE_CHECK_(t_lite_fail, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) T_LITE_CHECK_(t_lite_fail, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) T_LITE_CHECK_(t_lite_fail, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) T_LITE_CHECK_(t_lite_fail, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)                                                                   \
    T_LITE_CHECK_(t_lite_fail, (a) != NULL && (b) != NULL && strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...)                                                                  \
    T_LITE_CHECK_(t_lite_fail, (a) != NULL && (b) != NULL && strcmp((a), (b)) != 0, #a " differs from " #b, \
                  __VA_ARGS__)
#define cr_expect(cond, ...) T_LITE_CHECK_(t_lite_expect_fail, (cond), #cond, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) T_LITE_CHECK_(t_lite_expect_fail, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_fail(...) t_lite_fail(__FILE__, __LINE__, "failure", "" __VA_ARGS__)
#define cr_skip_test(...) t_lite_skip("" __VA_ARGS__)
#define cr_skip(...) t_lite_skip("" __VA_ARGS__)
#define cr_log_info(...) t_lite_info("" __VA_ARGS__)

#endif /* VIDMM_TESTS_T_LITE_H */
