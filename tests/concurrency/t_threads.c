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
    err = vidmm_unlock(dev, 1, &h);
    if (d >= 0)
        return t_fail(failure, "thread %d allocation %d: content lost at byte %td", index, k, d);
    if (err)
        return t_fail(failure, "check unlock: %s", vidmm_strerror(err));
    return true;
}
