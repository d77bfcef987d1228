/* SPDX-License-Identifier: MIT */
/* lib/common/internal.h - what every library file may use: assertions, logging, options. */
#ifndef VIDMM_LIB_COMMON_INTERNAL_H
#define VIDMM_LIB_COMMON_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "vidmm/common.h"

#if defined(__GNUC__) || defined(__clang__)
#  define VIDMM_LIKELY(x)   __builtin_expect(!!(x), 1)
#  define VIDMM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#  define VIDMM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#  define VIDMM_FORCEINLINE inline __attribute__((always_inline))
/* A hint that the line at 'p' will be written soon; 'p' need not be valid (no fault). */
#  define VIDMM_PREFETCH_W(p) __builtin_prefetch((p), 1, 3)
/* The same for a line that will only be read. */
#  define VIDMM_PREFETCH_R(p) __builtin_prefetch((p), 0, 3)
#else
#  define VIDMM_LIKELY(x)   (x)
#  define VIDMM_UNLIKELY(x) (x)
#  define VIDMM_PRINTF(f, a)
#  define VIDMM_FORCEINLINE inline
#  define VIDMM_PREFETCH_W(p) ((void)(p))
#  define VIDMM_PREFETCH_R(p) ((void)(p))
#endif

/* VIDMM_ASSERT exists only in VIDMM_DEBUG builds: the library never aborts in a release build.
 * In a debug build a failed assertion is logged as an error and then traps, so a test catches it. */
#ifdef VIDMM_DEBUG
#  define VIDMM_ASSERT(c) \
     do { if (!(c)) { vidmm_log(VIDMM_LOG_ERROR, "assertion failed: %s (%s:%d)", #c, __FILE__, __LINE__); \
                      __builtin_trap(); } } while (0)
#else
#  define VIDMM_ASSERT(c) ((void)0)
#endif

/* vidmm_log() formats a message and hands it to the log hook (or stderr, see common.h). */
void vidmm_log(enum vidmm_log_level level, const char *fmt, ...) VIDMM_PRINTF(2, 3);

/* vidmm_log_enabled() tells whether a message at 'level' would go anywhere, so that callers can
 * skip building expensive messages. */
bool vidmm_log_enabled(enum vidmm_log_level level);

/* vidmm_refuse() is how a call refuses bad input: it logs one line at VIDMM_LOG_DEBUG naming
 * the call, the field and the rule broken, with the section of shared/spec/wddm-vidmm.md (or
 * another source) that states it - "vidmm_lock: flags: READ_ONLY with WRITE_ONLY (spec 6.3
 * rule 1)" - and returns VIDMM_E_INVALID_ARG. 'spec' is a section ("15.2") or a short source
 * ("device.h"). */
int vidmm_refuse(const char *call, const char *field, const char *rule, const char *spec);

/* vidmm_parse_size() parses "123", "64K", "4M", "1G" (powers of 1024) into '*out'.
 * Returns 0 or VIDMM_E_INVALID_ARG. */
int vidmm_parse_size(const char *s, unsigned long long *out);

/* vidmm_parse_bool() parses 1/true/yes/on and 0/false/no/off (any case).
 * Returns 0 or 1, or VIDMM_E_INVALID_ARG. */
int vidmm_parse_bool(const char *s);

/* vidmm_i_pool_run() runs job(arg, i) for every i in [0, count) on up to 'threads' threads of
 * the library's pool (lib/common/pool.c), the caller's included, and returns when all have
 * returned. A batch already running on the pool (another caller's) makes this one run on the
 * calling thread alone. */
void vidmm_i_pool_run(uint32_t threads, uint32_t count, void (*job)(void *arg, uint32_t index), void *arg);

/* vidmm_range_ok() tells whether [p, p + n) is a valid range argument: n == 0, or p != NULL and
 * the range does not wrap the address space. */
static inline bool vidmm_range_ok(const void *p, size_t n)
{
    if (n == 0)
        return true;
    return p != NULL && (uintptr_t)p + (n - 1) >= (uintptr_t)p;
}

#endif /* VIDMM_LIB_COMMON_INTERNAL_H */
