/* SPDX-License-Identifier: MIT */
/* tests/concurrency/t_threads.h - what the engine's multi-threaded stress tests
 * (tests/concurrency/test_*.c) share: a thread's first failure, recorded for the main thread
 * (threads never call the assertions: they abort from the wrong thread), and owned allocations
 * whose content a thread keeps a copy of and checks. */
#ifndef VIDMM_TESTS_T_THREADS_H
#define VIDMM_TESTS_T_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vidmm/vidmm.h"

#define T_FAILURE_MAX 256

/* t_fail() records a failure in 'failure' (T_FAILURE_MAX bytes) unless one is recorded
 * already, and returns false. */
bool t_fail(char *failure, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* T_FAIL(t, ...) records the first failure of thread 't' (a struct with a 'failure' array of
 * T_FAILURE_MAX bytes) and returns false from the calling function. */
#define T_FAIL(t, ...) return t_fail((t)->failure, __VA_ARGS__)

/* t_own_create() creates an owned allocation of 'size' bytes in '*h': CPU_VISIBLE, NORMAL
 * priority, segments 1 and 2, preferring 1, filled with the byte 'fill' - which 'want' (size
 * bytes) is set to. Returns false with the failure recorded. */
bool t_own_create(vidmm_device *dev, size_t size, uint8_t fill, vidmm_handle *h, unsigned char *want, char *failure);

/* t_own_check() locks 'h' READ_ONLY and compares its 'size' bytes with 'want' (thread 'index',
 * allocation 'k' in the message). Returns false with the failure recorded. */
bool t_own_check(vidmm_device *dev, vidmm_handle h, const unsigned char *want, size_t size, int index, int k,
                 char *failure);

#endif /* VIDMM_TESTS_T_THREADS_H */
