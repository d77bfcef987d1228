/* SPDX-License-Identifier: MIT */
/* tests/concurrency/t_threads.c - see t_threads.h. */
#include "t_threads.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "t_helpers.h"

bool t_fail(char *failure, const char *fmt, ...)
{
    if (failure[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(failure, T_FAILURE_MAX, fmt, ap);
        va_end(ap);
    }
    return false;
}

bool t_own_create(vidmm_device *dev, size_t size, uint8_t fill, vidmm_handle *h, unsigned char *want, char *failure)
{
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    d.size = size;
    d.flags = VIDMM_ALLOC_CPU_VISIBLE;
    d.priority = VIDMM_PRIORITY_NORMAL;
    d.supported_read_set = d.supported_write_set = 0x3;
    d.preferred_segment = 1;
    d.fill_pattern = 0x01010101u * fill;
    int err = vidmm_alloc_create(dev, &d, h);
    if (err)
        return t_fail(failure, "create: %s", vidmm_strerror(err));
    memset(want, fill, size);
    return true;
}

bool t_own_check(vidmm_device *dev, vidmm_handle h, const unsigned char *want, size_t size, int index, int k,
                 char *failure)
{
    struct vidmm_lock_args la = { h, 0, 0, NULL, VIDMM_LOCK_READ_ONLY, 0, NULL };
    int err = vidmm_lock(dev, &la);
    if (err)
        return t_fail(failure, "check lock: %s", vidmm_strerror(err));
    ptrdiff_t d = t_find_diff(la.data, want, size);
    if (d >= 0) {
        /* Where the loss ends and what is there instead (read before the unlock): which write
         * it was, and what the bytes went back to - the fill, or an older write's. */
        const unsigned char *got = la.data;
        size_t e = (size_t)d, diffs = 0;
        for (size_t i = (size_t)d; i < size; i++)
            if (got[i] != want[i]) {
                e = i + 1;
                diffs++;
            }
        t_fail(failure, "thread %d allocation %d: content lost at byte %td (to %zu, %zu bytes differ; 0x%02x where "
               "0x%02x was written)", index, k, d, e, diffs, got[d], want[d]);
        (void)vidmm_unlock(dev, 1, &h);
        return false;
    }
    err = vidmm_unlock(dev, 1, &h);
    if (err)
        return t_fail(failure, "check unlock: %s", vidmm_strerror(err));
    return true;
}

void t_gpu_init(struct t_gpu *gpu, vidmm_device *dev)
{
    memset(gpu, 0, sizeof *gpu);
    pthread_mutex_init(&gpu->mu, NULL);
    gpu->signalled = vidmm_fence_completed(dev);
}

void t_gpu_destroy(struct t_gpu *gpu)
{
    pthread_mutex_destroy(&gpu->mu);
}

int t_gpu_done(struct t_gpu *gpu, vidmm_device *dev, uint64_t fence)
{
    pthread_mutex_lock(&gpu->mu);
    const uint64_t bit = fence % T_GPU_WINDOW;
    if (fence <= gpu->signalled || fence - gpu->signalled > T_GPU_WINDOW || (gpu->done[bit / 64] >> (bit % 64) & 1)) {
        pthread_mutex_unlock(&gpu->mu);
        return VIDMM_E_INVALID_ARG;
    }
    gpu->done[bit / 64] |= 1ull << (bit % 64);
    const uint64_t before = gpu->signalled;
    for (;;) {
        const uint64_t next = (gpu->signalled + 1) % T_GPU_WINDOW;
        if (!(gpu->done[next / 64] >> (next % 64) & 1))
            break;
        gpu->done[next / 64] &= ~(1ull << (next % 64));
        gpu->signalled++;
    }
    /* Signalled under the mutex: the device sees the values in increasing order. */
    const int err = gpu->signalled != before ? vidmm_fence_signal(dev, gpu->signalled) : 0;
    pthread_mutex_unlock(&gpu->mu);
    return err;
}
