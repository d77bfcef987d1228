/* SPDX-License-Identifier: MIT */
/* tests/common/t_lite.c - the runner behind t_lite.h: one forked process per test, a time
 * limit, PASS/FAIL/SKIP lines and a summary; exit status 0, 1 (a failure) or 77 (all skipped). */
#define _GNU_SOURCE
#include "t_lite.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

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

void t_lite_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (ok)
        return;
    fprintf(stderr, "[----] %s:%d: Assertion failed: %s\n", file, line, expr);
    if (fmt != NULL && *fmt != '\0') {
        va_list ap;
        va_start(ap, fmt);
        fputs("[----]   ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    fflush(stderr);
    /* exit(), not _exit(): the sanitizer's exit-time checks still run. */
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

/* run_one() forks, runs the test body in the child under an alarm, and classifies how the
 * child ended: 0 pass, 1 fail, 2 skip. The parent never calls the library and starts no
 * thread, so fork() is safe and each test starts from the library's pristine state. */
static int run_one(const struct t_lite_test *t)
{
    unsigned timeout = t->timeout > 0 ? (unsigned)t->timeout : T_LITE_DEFAULT_TIMEOUT;
    int status;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL);
        alarm(timeout);
        t->fn();
        exit(0);
    }
    while (waitpid(pid, &status, 0) < 0)
        ;
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

int main(int argc, char *argv[])
{
    int passed = 0, failed = 0, skipped = 0;
    (void)argc;
    (void)argv;

    for (struct t_lite_test *t = tests_head; t != NULL; t = t->next) {
        int r = run_one(t);
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
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Skipped: %d\n",
            passed + failed, passed, failed, skipped);
    if (failed)
        return 1;
    return passed == 0 && skipped > 0 ? T_LITE_SKIP : 0;
}
