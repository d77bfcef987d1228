/* SPDX-License-Identifier: MIT */
/* lib/common/log.c - the log hook: the one way the library says anything. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include "common/internal.h"

/* The hook, its argument and its level change together under 'hook_lock', and a message
 * takes a copy of all three under it before calling out, so a hook is never called with another
 * hook's argument. The hook itself runs outside the lock (it may log, or set a new hook). A
 * message racing a swap may still reach the old hook, as common.h says. 'hook_set' lets the
 * common no-hook case skip the lock. */
struct hook {
    vidmm_log_fn fn;
    void *arg;
    int max;
};
static struct hook hook = { NULL, NULL, VIDMM_LOG_WARN };
static atomic_bool hook_set;
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

void vidmm_set_log_fn(vidmm_log_fn fn, void *arg, enum vidmm_log_level max_level)
{
    pthread_mutex_lock(&hook_lock);
    hook.fn = fn;
    hook.arg = arg;
    hook.max = (int)max_level;
    atomic_store_explicit(&hook_set, fn != NULL, memory_order_relaxed);
    pthread_mutex_unlock(&hook_lock);
}

static struct hook hook_snapshot(void)
{
    struct hook h = { NULL, NULL, -1 };
    if (!atomic_load_explicit(&hook_set, memory_order_relaxed))
        return h;
    pthread_mutex_lock(&hook_lock);
    h = hook;
    pthread_mutex_unlock(&hook_lock);
    return h;
}

/* enabled_for() answers vidmm_log_enabled() for a given snapshot. */
static bool enabled_for(const struct hook *h, enum vidmm_log_level level)
{
    if (h->fn != NULL)
        return (int)level <= h->max;
    /* Without a hook, VIDMM_LOG_LEVEL (default -1: silent) routes messages to stderr. */
    return (long long)level <= vidmm_option_get(VIDMM_OPT_LOG_LEVEL);
}

bool vidmm_log_enabled(enum vidmm_log_level level)
{
    struct hook h = hook_snapshot();
    return enabled_for(&h, level);
}

void vidmm_log(enum vidmm_log_level level, const char *fmt, ...)
{
    struct hook h = hook_snapshot();
    char buf[512];
    va_list ap;

    if (!enabled_for(&h, level))
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (h.fn != NULL) {
        h.fn(h.arg, level, buf);
        return;
    }
    static const char *const names[] = { "error", "warning", "info", "debug" };
    fprintf(stderr, "vidmm: %s: %s\n", names[(unsigned)level & 3u], buf);
}

int vidmm_refuse(const char *call, const char *field, const char *rule, const char *spec)
{
    if (vidmm_log_enabled(VIDMM_LOG_DEBUG))
        vidmm_log(VIDMM_LOG_DEBUG, "%s: %s: %s (spec %s)", call, field, rule, spec);
    return VIDMM_E_INVALID_ARG;
}
