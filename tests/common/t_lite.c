/* SPDX-License-Identifier: MIT */
/* tests/common/t_lite.c - the runner behind t_lite.h: one forked process per test, a time
 * limit, PASS/FAIL/SKIP lines and a summary; exit status 0, 1 (a failure) or 77 (all skipped, or
 * VIDMM_BACKEND names a backend this CPU or build cannot run). */
#define _GNU_SOURCE
#include "t_lite.h"

#include <fnmatch.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "vidmm/vidmm.h"
#include "t_backend.h"

#define T_LITE_SKIP 77
#define T_LITE_DEFAULT_TIMEOUT 60

static struct t_lite_test *tests_head, **tests_tail = &tests_head;

void t_lite_register(struct t_lite_test *t)
{
    /* Constructors run in file order, so appending keeps the source order. */
    t->next = NULL;
    *tests_tail = t;
    tests_tail = &t->next;
}

/* report(): the failure line and the message. */
static void report(const char *what, const char *file, int line, const char *expr, const char *fmt, va_list ap)
{
    fprintf(stderr, "[----] %s:%d: %s: %s\n", file, line, what, expr);
    if (fmt != NULL && *fmt != '\0') {
        fputs("[----]   ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    fflush(stderr);
}

void t_lite_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("Assertion failed", file, line, expr, fmt, ap);
    va_end(ap);
    /* exit(), not _exit(): the sanitizer's exit-time checks still run. */
    exit(1);
}

void t_lite_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    report("Assertion failed", file, line, expr, fmt, ap);
    va_end(ap);
    exit(1);
}

void t_lite_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("[SKIP] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    exit(T_LITE_SKIP);
}

void t_lite_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("[INFO] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The runner also stands in for Criterion in the valgrind preset (VIDMM_TEST_LITE; see
 * tests/common/lite/criterion/criterion.h): there each test is a fork() of a runner already
 * under memcheck, where Criterion re-executes the program for every test, so that memcheck
 * starts afresh, with the program's shared libraries and their debug information, each time.
 * What a test sees is the same: a fresh process whose library state nothing has touched (the
 * runner never calls the library, but for the VIDMM_BACKEND check below, which only asks what
 * the CPU has), and memcheck checks each child to its exit (leaks included) as it did each
 * re-executed worker. Options, Criterion's spelling: --filter=GLOB (over "suite/name"), -jN or
 * --jobs=N (tests at once), --list ("suite: N tests" and the names), --short-filename and
 * --verbose (accepted, no effect here). The default time limit of a test without .timeout is
 * T_LITE_DEFAULT_TIMEOUT, or VIDMM_TEST_LITE_TIMEOUT seconds (0: none; Criterion has none). */
static int expect_failed;

void t_lite_expect_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("Expectation failed", file, line, expr, fmt, ap);
    va_end(ap);
    expect_failed = 1;
}

/* Defined by a suite with ReportHook(PRE_ALL) / ReportHook(POST_ALL), else NULL. */
extern void t_lite_hook_PRE_ALL(struct criterion_test_set *set) __attribute__((weak));
extern void t_lite_hook_POST_ALL(struct criterion_global_stats *stats) __attribute__((weak));

static unsigned default_timeout = T_LITE_DEFAULT_TIMEOUT;

/* start_one() forks and runs the test body in the child under an alarm; finish_one() classifies
 * how the child ended: 0 pass, 1 fail, 2 skip. The parent never calls the library and starts no
 * thread, so fork() is safe and each test starts from the library's pristine state. */
static pid_t start_one(const struct t_lite_test *t)
{
    unsigned timeout = t->timeout > 0 ? (unsigned)t->timeout : default_timeout;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL);
        alarm(timeout);
        t->fn();
        exit(expect_failed ? 1 : 0);
    }
    return pid;
}

static int finish_one(const struct t_lite_test *t, int status)
{
    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 0)
            return 0;
        if (WEXITSTATUS(status) == T_LITE_SKIP)
            return 2;
        fprintf(stderr, "[FAIL] %s::%s: exit status %d\n", t->suite, t->name, WEXITSTATUS(status));
        return 1;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fprintf(stderr, "[FAIL] %s::%s: %s\n", t->suite, t->name,
                sig == SIGALRM ? "timed out" : strsignal(sig));
    }
    return 1;
}

static bool selected(const struct t_lite_test *t, const char *filter)
{
    char full[512];
    if (filter == NULL)
        return true;
    snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
    return fnmatch(filter, full, 0) == 0;
}

static void list_tests(const char *filter)
{
    for (struct t_lite_test *t = tests_head; t != NULL; t = t->next) {
        bool seen = false;
        int n = 0;
        for (struct t_lite_test *u = tests_head; u != t; u = u->next)
            if (strcmp(u->suite, t->suite) == 0)
                seen = true;
        if (seen)
            continue;
        for (struct t_lite_test *u = t; u != NULL; u = u->next)
            if (strcmp(u->suite, t->suite) == 0 && selected(u, filter))
                n++;
        if (n == 0)
            continue;
        printf("%s: %d test%s\n", t->suite, n, n == 1 ? "" : "s");
        for (struct t_lite_test *u = t; u != NULL; u = u->next)
            if (strcmp(u->suite, t->suite) == 0 && selected(u, filter))
                printf("|-- %s\n", u->name);
    }
}

int main(int argc, char *argv[])
{
    int passed = 0, failed = 0, skipped = 0, jobs = 1, running = 0;
    const char *filter = NULL, *env;
    bool list = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--filter=", 9) == 0)
            filter = a + 9;
        else if (strcmp(a, "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else if (strncmp(a, "--jobs=", 7) == 0)
            jobs = atoi(a + 7);
        else if ((strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0) && i + 1 < argc)
            jobs = atoi(argv[++i]);
        else if (strncmp(a, "-j", 2) == 0)
            jobs = atoi(a + 2);
        else if (strcmp(a, "--list") == 0 || strcmp(a, "-l") == 0)
            list = true;
        else if (strcmp(a, "--short-filename") == 0 || strcmp(a, "-S") == 0 || strncmp(a, "--verbose", 9) == 0)
            ;
        else {
            fprintf(stderr, "t_lite: unknown option %s (--filter=GLOB, -jN, --list)\n", a);
            return 2;
        }
    }
    if (jobs < 1)
        jobs = 1;
    if (list) {
        list_tests(filter);
        return 0;
    }
    env = getenv("VIDMM_TEST_LITE_TIMEOUT");
    if (env != NULL && *env != '\0')
        default_timeout = (unsigned)strtoul(env, NULL, 10);
    if (forced_backend_missing())
        return T_LITE_SKIP;
    if (t_lite_hook_PRE_ALL != NULL)
        t_lite_hook_PRE_ALL(NULL);

    struct {
        pid_t pid;
        const struct t_lite_test *t;
    } run[64];
    if (jobs > (int)(sizeof run / sizeof run[0]))
        jobs = (int)(sizeof run / sizeof run[0]);
    struct t_lite_test *next = tests_head;
    for (;;) {
        while (running < jobs && next != NULL) {
            struct t_lite_test *t = next;
            next = next->next;
            if (!selected(t, filter))
                continue;
            pid_t pid = start_one(t);
            if (pid < 0) {
                failed++;
                continue;
            }
            run[running].pid = pid;
            run[running].t = t;
            running++;
        }
        if (running == 0)
            break;
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0)
            continue;
        int k;
        for (k = 0; k < running && run[k].pid != pid; k++)
            ;
        if (k == running)
            continue; /* not a test of ours */
        const struct t_lite_test *t = run[k].t;
        run[k] = run[--running];
        int r = finish_one(t, status);
        if (r == 0) {
            fprintf(stderr, "[PASS] %s::%s\n", t->suite, t->name);
            passed++;
        } else if (r == 2) {
            fprintf(stderr, "[SKIP] %s::%s\n", t->suite, t->name);
            skipped++;
        } else {
            failed++;
        }
    }
    if (t_lite_hook_POST_ALL != NULL)
        t_lite_hook_POST_ALL(NULL);
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Skipped: %d\n",
            passed + failed, passed, failed, skipped);
    if (skipped > 0)
        fprintf(stderr, "[====] Skipped: %d of %d tests\n", skipped, passed + failed + skipped);
    if (failed)
        return 1;
    return passed == 0 && skipped > 0 ? T_LITE_SKIP : 0;
}
