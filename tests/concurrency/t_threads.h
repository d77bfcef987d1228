/* SPDX-License-Identifier: MIT */
/* tests/concurrency/t_threads.h - what the engine's multi-threaded stress tests
 * (tests/concurrency/test_*.c) share: a thread's first failure, recorded for the main thread
 * (threads never call the assertions: they abort from the wrong thread), and owned allocations
 * whose content a thread keeps a copy of and checks. */
#ifndef VIDMM_TESTS_T_THREADS_H
#define VIDMM_TESTS_T_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vidmm/vidmm.h"

#define T_FAILURE_MAX 1024

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

/* The GPU the threads share. vidmm_fence_signal() says every fence up to the one given has
 * executed (fences complete in order), so a thread that plays the GPU for its own submission -
 * writes through the residency's pointer, then signals - may not signal while a thread with an
 * earlier fence is still writing: that signal would declare the other write done, its
 * allocation idle, and the engine may then evict it and copy its bytes out before the write
 * lands (the write lost: what the three stress tests showed about once in 100 runs under load,
 * until they signalled through this). t_gpu_done() records that the work of 'fence' is over
 * and signals the longest run of issued fences whose work is all over. Every fence issued
 * while a t_gpu is in use must reach t_gpu_done() - a failing thread's too - or the fences after
 * it never complete. */
#define T_GPU_WINDOW 4096u /* fences issued and not yet done at once, at most */

struct t_gpu {
    pthread_mutex_t mu;
    uint64_t signalled;                  /* the last fence signalled */
    uint64_t done[T_GPU_WINDOW / 64];    /* fences signalled + 1 ... done, by f % T_GPU_WINDOW */
};

/* t_gpu_init() starts at what 'dev' has completed. */
void t_gpu_init(struct t_gpu *gpu, vidmm_device *dev);
void t_gpu_destroy(struct t_gpu *gpu);
/* t_gpu_done(): 0, or vidmm_fence_signal()'s error; VIDMM_E_INVALID_ARG for a fence already
 * done or T_GPU_WINDOW beyond the last signalled. */
int t_gpu_done(struct t_gpu *gpu, vidmm_device *dev, uint64_t fence);

#endif /* VIDMM_TESTS_T_THREADS_H */
