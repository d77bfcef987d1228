/* SPDX-License-Identifier: MIT */
/* include/vidmm/common.h - error codes, the log hook and run-time options. */
#ifndef VIDMM_COMMON_H
#define VIDMM_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "api.h"

VIDMM_BEGIN_DECLS

/* ---------------------------------------------------------------------------------------------
 * Errors. A function that can fail returns int: >= 0 on success (a count where useful), a
 * negative VIDMM_E_* code on failure, after which nothing has changed unless its comment says
 * what did. Published values never change; new codes are appended.
 * ------------------------------------------------------------------------------------------- */
enum vidmm_error {
    VIDMM_OK = 0,
    VIDMM_E_INVALID_ARG = -1,       /* a NULL pointer, an unknown enum value, a bad size or range */
    VIDMM_E_NO_MEMORY = -2,         /* host memory could not be obtained */
    VIDMM_E_NO_VIDEO_MEMORY = -3,   /* no segment can hold the allocation, even after eviction */
    VIDMM_E_BUSY = -4,              /* the GPU still uses it and the caller asked not to wait (WASSTILLDRAWING) */
    VIDMM_E_NOT_AVAILABLE = -5,     /* the resource exists but cannot be had now (NOTAVAILABLE) */
    VIDMM_E_CANT_EVICT_PINNED = -6, /* the operation would evict a pinned allocation */
    VIDMM_E_IO = -7,                /* the disk tier failed to read or write */
    VIDMM_E_UNSUPPORTED = -8,       /* this CPU, OS or build cannot do it */
    VIDMM_E_DEVICE_REMOVED = -9,    /* the device was removed; every later call fails with this */
    VIDMM_E_OVERLAP = -10,          /* source and destination ranges overlap */
    VIDMM_E_CANT_RENDER_LOCKED = -11, /* a submission lists a locked allocation that cannot
                                         leave its memory segment (CANTRENDERLOCKEDALLOCATION) */
    VIDMM_E_INVALID_INSTANCE = -12, /* a rename instance used out of order (INVALID_ALLOCATION_INSTANCE) */
    VIDMM_E_ALLOCATION_INVALID = -13, /* the driver failed a paging operation (ALLOCATION_INVALID) */
    VIDMM_E_TIMEOUT = -14           /* a wait ended before its fence was signalled */
};

/* vidmm_strerror() returns a short English description of 'err' (a VIDMM_E_* value or 0).
 * Lifetime: a static string. This function can't fail: unknown values give "unknown error". */
VIDMM_API const char *vidmm_strerror(int err);

/* vidmm_error_to_ntstatus() and vidmm_error_to_hresult() return the NTSTATUS a kernel thunk or
 * the HRESULT a user-mode callback of Windows would have returned for 'err'
 * (spec/wddm-vidmm.md section 13), so a driver simulator can compare. 0 maps to
 * STATUS_SUCCESS / S_OK. These functions can't fail: unknown codes map to
 * STATUS_INVALID_PARAMETER / E_INVALIDARG. */
VIDMM_API uint32_t vidmm_error_to_ntstatus(int err);
VIDMM_API uint32_t vidmm_error_to_hresult(int err);

/* ---------------------------------------------------------------------------------------------
 * Log hook. The library never prints on its own: warnings and notes go to the hook. When no
 * hook is set, messages at or below VIDMM_LOG_LEVEL (environment, default -1: none) go to stderr.
 * ------------------------------------------------------------------------------------------- */
enum vidmm_log_level {
    VIDMM_LOG_ERROR = 0,
    VIDMM_LOG_WARN = 1,
    VIDMM_LOG_INFO = 2,
    VIDMM_LOG_DEBUG = 3
};

typedef void (*vidmm_log_fn)(void *arg, enum vidmm_log_level level, const char *msg);

/* vidmm_set_log_fn() installs 'fn' (NULL removes it) with its 'arg'; messages at or below
 * 'max_level' reach it. Thread safety: safe to call at any time; a message being delivered
 * concurrently may still reach the previous hook. This function can't fail. */
VIDMM_API void vidmm_set_log_fn(vidmm_log_fn fn, void *arg, enum vidmm_log_level max_level);

/* ---------------------------------------------------------------------------------------------
 * Options. Debugging, test and benchmark knobs, each read once from VIDMM_<NAME> in the
 * environment on first use. Boolean options take 1/true/yes/on and 0/false/no/off; size options
 * take K/M/G suffixes (powers of 1024). A bad value logs one warning and keeps the default.
 * ------------------------------------------------------------------------------------------- */
enum vidmm_option {
    VIDMM_OPT_BACKEND = 0,               /* string: auto|scalar|sse2|avx2|avx512|neon */
    VIDMM_OPT_DISABLE_CPU_FEATURES = 1,  /* string: comma list, e.g. "avx512,avx2" */
    VIDMM_OPT_LOG_LEVEL = 2,             /* integer -1..3 (default -1: silent); routes messages
                                            at or below it to stderr when no hook is set */
    VIDMM_OPT_NT_THRESHOLD = 3,          /* size: copies/fills to cached memory at least this long use
                                            non-temporal stores; 0 = the last-level cache size */
    VIDMM_OPT_WC_COPY = 4,               /* string: auto|nt|movdir64b - the copy-to-WC variant */
    VIDMM_OPT_NO_CLWB = 5,               /* bool: never use CLWB */
    VIDMM_OPT_NO_CLFLUSHOPT = 6,         /* bool: never use CLFLUSHOPT (CLFLUSH only) */
    VIDMM_OPT_CALIBRATE = 7,             /* bool, default on: measure the copy-to-WC variants and the
                                            linear-row store policy once, and learn the swizzle
                                            plans' parallel threshold (swizzle.h; off: fixed guesses) */
    VIDMM_OPT_SWIZZLE_TUNE_FILE = 8,     /* string: the measured swizzle plans' table file (swizzle.h) */
    VIDMM_OPT_STREAM_LINEAR_ROWS = 9,    /* string: auto|on|off - streaming stores to the linear rows
                                            of a block-linear deswizzle beyond the cache (kernels.h
                                            VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS); auto measures */
    VIDMM_OPT_COUNT_ = 10
};

/* vidmm_option_get() returns the integer value of option 'opt' (booleans are 0/1, sizes in
 * bytes, string options return 1 when set and 0 when not); vidmm_option_get_string() returns the
 * string value or NULL when unset. Unknown 'opt' returns 0 / NULL. These functions can't fail.
 * Lifetime: the string stays valid until the next vidmm_option_set_string() of that option. */
VIDMM_API long long vidmm_option_get(enum vidmm_option opt);
VIDMM_API const char *vidmm_option_get_string(enum vidmm_option opt);

/* vidmm_option_set() / vidmm_option_set_string() override the environment for 'opt'.
 * Returns: 0, or VIDMM_E_INVALID_ARG (unknown option, wrong kind, value out of range, a string
 * option's value not one of the words listed above - a backend name the CPU cannot run is a
 * word: it is warned about when the backend is chosen), with one VIDMM_LOG_DEBUG line; the
 * option keeps its value.
 * Thread safety: set options before other threads use the library; choices already made from
 * an option (the kernel backend) are not remade, except by vidmm_kernels_reset(). */
VIDMM_API int vidmm_option_set(enum vidmm_option opt, long long value);
VIDMM_API int vidmm_option_set_string(enum vidmm_option opt, const char *value);

/* vidmm_option_name() returns the environment name of 'opt' ("VIDMM_BACKEND"), NULL if unknown. */
VIDMM_API const char *vidmm_option_name(enum vidmm_option opt);

VIDMM_END_DECLS

#endif /* VIDMM_COMMON_H */
