/* SPDX-License-Identifier: MIT */
/* tests/common/t_main.c - the main() of every suite: Criterion's own, plus exit status 77
 * (CTest's SKIP_RETURN_CODE) when VIDMM_BACKEND forces a backend this machine cannot run. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include "vidmm/vidmm.h"
#include "t_backend.h"

/* The exit status liburing, automake and CTest's SKIP_RETURN_CODE use for "skipped". */
#define T_EXIT_SKIP 77

/* Criterion's own synthesis line counts skipped tests nowhere (only --verbose lists them), so
 * say how many were skipped, so that a backend the CPU lacks never reads as a pass. */
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    if (stats->tests_skipped > 0)
        fprintf(stderr, "[====] Skipped: %zu of %zu tests (run with --verbose to see why)\n",
                stats->tests_skipped, stats->nb_tests);
}

int main(int argc, char *argv[])
{
    if (forced_backend_missing())
        return T_EXIT_SKIP;

    struct criterion_test_set *tests = criterion_initialize();
    int status = 0;
    /* criterion_handle_args() returns 0 when it already did the work (--help, --list). */
    if (criterion_handle_args(argc, argv, true))
        status = criterion_run_all_tests(tests) ? 0 : 1;
    criterion_finalize(tests);
    return status;
}
