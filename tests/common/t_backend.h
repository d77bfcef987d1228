/* SPDX-License-Identifier: MIT */
/* tests/common/t_backend.h - the runners' check of VIDMM_BACKEND (t_main.c for Criterion, t_lite.c
 * for the forking runner). */
#ifndef VIDMM_TESTS_T_BACKEND_H
#define VIDMM_TESTS_T_BACKEND_H
#include <stdio.h>
#include <stdlib.h>
#include "vidmm/vidmm.h"

/* Without the check, a run forced to a backend the CPU lacks would quietly test the fallback
 * backend and pass; CTest must show it as skipped instead. Only a known backend name skips:
 * an unknown one is the library's fallback case, which test_dispatch.c checks on purpose. The
 * library is not called at all when VIDMM_BACKEND is unset, so that the concurrency suite's
 * first kernel call really is the first one (Criterion runs each test in a fresh process
 * anyway, but this keeps the runner itself clean too). */
static inline int forced_backend_missing(void)
{
    const char *forced = getenv("VIDMM_BACKEND");
    if (forced == NULL || *forced == '\0')
        return 0;
    int b = vidmm_backend_from_string(forced);
    if (b <= VIDMM_BACKEND_AUTO)
        return 0;
    if (vidmm_backend_supported((enum vidmm_backend)b))
        return 0;
    fprintf(stderr, "VIDMM_BACKEND=%s: this CPU or build cannot run that backend; skipping\n", forced);
    return 1;
}

#endif
