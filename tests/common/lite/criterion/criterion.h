/* SPDX-License-Identifier: MIT */
/* tests/common/lite/criterion/criterion.h - <criterion/criterion.h> in a build configured with
 * VIDMM_TEST_LITE=ON (the valgrind preset, tools/test.sh valgrind): the suites' own sources,
 * unchanged, compiled against the forking runner of tests/common/t_lite.h instead of Criterion.
 *
 * Why: Criterion 2.4 re-executes the test program for every test, and under valgrind
 * --trace-children each re-execution is a memcheck started afresh - the program, its shared
 * libraries and their debug information read again, the library's first calls translated
 * again - which took most of the valgrind mode's time (tools/test.sh, run_valgrind, has the
 * figures). t_lite forks each test from a runner already under memcheck: the same test bodies
 * and assertions, each in a fresh process of its own that memcheck checks to its exit, leaks
 * included. Only the suites tools/test.sh runs under valgrind need to compile this way. */
#ifndef VIDMM_TESTS_LITE_CRITERION_H
#define VIDMM_TESTS_LITE_CRITERION_H
#include "../../t_lite.h"
#endif
