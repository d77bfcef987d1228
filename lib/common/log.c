/* SPDX-License-Identifier: MIT */
/* lib/common/log.c - the log hook: the one way the library says anything. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include "common/internal.h"

/* The hook, its argument and its level are three separate atomics. set_log_fn() stores the
 * argument and level before the function (release) and vidmm_log() loads the function first
 * (acquire), so a hook never sees another hook's argument once the swap is complete; a message
 * racing with the swap may reach the old hook, as common.h says. */
static _Atomic(vidmm_log_fn) log_fn;
static _Atomic(void *) log_arg;
static atomic_int log_max = VIDMM_LOG_WARN;

void vidmm_set_log_fn(vidmm_log_fn fn, void *arg, enum vidmm_log_level max_level)
{
    atomic_store_explicit(&log_arg, arg, memory_order_relaxed);
    atomic_store_explicit(&log_max, (int)max_level, memory_order_relaxed);
    atomic_store_explicit(&log_fn, fn, memory_order_release);
}

bool vidmm_log_enabled(enum vidmm_log_level level)
{
    if (atomic_load_explicit(&log_fn, memory_order_acquire) != NULL)
        return (int)level <= atomic_load_explicit(&log_max, memory_order_relaxed);
    /* Without a hook, VIDMM_LOG_LEVEL (default -1: silent) routes messages to stderr. */
    return (long long)level <= vidmm_option_get(VIDMM_OPT_LOG_LEVEL);
}

void vidmm_log(enum vidmm_log_level level, const char *fmt, ...)
{
    vidmm_log_fn fn = atomic_load_explicit(&log_fn, memory_order_acquire);
    char buf[512];
    va_list ap;

    if (!vidmm_log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (fn != NULL) {
        fn(atomic_load_explicit(&log_arg, memory_order_relaxed), level, buf);
        return;
    }
    static const char *const names[] = { "error", "warning", "info", "debug" };
    fprintf(stderr, "vidmm: %s: %s\n", names[(unsigned)level & 3u], buf);
}
