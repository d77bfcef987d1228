/* SPDX-License-Identifier: MIT */
/* tests/kernels/test_dispatch.c - the backend choice and its overrides, run-time options, the
 * log hook, error strings and their NTSTATUS/HRESULT twins, CPU information and the version.
 *
 * Several tests change options, or set environment variables before the library's first call.
 * That is sound because Criterion runs every test in a fresh process of its own (its default
 * and only mode in 2.4), so no test sees another's options or a library already initialised. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"

/* ---------------------------------------------------------------------------------------------
 * Small helpers.
 * ------------------------------------------------------------------------------------------- */

/* The backend kernels.h says the dispatcher takes on this CPU: the widest supported, where
 * AVX-512 may be passed over for AVX2 on CPUs that slow down with it (supported != preferred). */
static bool acceptable_default(enum vidmm_backend got)
{
    if (vidmm_backend_supported(VIDMM_BACKEND_AVX512))
        return got == VIDMM_BACKEND_AVX512 || got == VIDMM_BACKEND_AVX2;
    if (vidmm_backend_supported(VIDMM_BACKEND_AVX2))
        return got == VIDMM_BACKEND_AVX2;
    if (vidmm_backend_supported(VIDMM_BACKEND_NEON))
        return got == VIDMM_BACKEND_NEON;
    if (vidmm_backend_supported(VIDMM_BACKEND_SSE2))
        return got == VIDMM_BACKEND_SSE2;
    return got == VIDMM_BACKEND_SCALAR;
}

/* Saves VIDMM_OPT_BACKEND so a test can put it back as it found it. */
struct saved_backend {
    char value[64];
    bool set;
};

static void save_backend(struct saved_backend *s)
{
    const char *v = vidmm_option_get_string(VIDMM_OPT_BACKEND);
    s->set = v != NULL;
    snprintf(s->value, sizeof(s->value), "%s", v ? v : "");
}

static void restore_backend(const struct saved_backend *s)
{
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, s->set ? s->value : NULL), 0);
    vidmm_kernels_reset();
}

static void force_backend(const char *name)
{
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, name), 0, "VIDMM_OPT_BACKEND='%s' refused",
                 name ? name : "(null)");
    vidmm_kernels_reset();
}

/* A copy and a fill through the default entry points, checked: the chosen table works. */
static void quick_kernel_check(void)
{
    unsigned char src[300], dst[300];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (unsigned char)(i * 7 + 1);
    memset(dst, T_SENTINEL, sizeof(dst));
    cr_assert_eq(vidmm_copy(dst + 3, src + 1, 257, VIDMM_MEM_CACHED), 0);
    cr_assert_eq(memcmp(dst + 3, src + 1, 257), 0, "copy through backend %s is wrong", vidmm_backend_name());
    cr_assert_eq(t_find_not(dst, 3, T_SENTINEL), -1);
    cr_assert_eq(t_find_not(dst + 260, 40, T_SENTINEL), -1);
    cr_assert_eq(vidmm_fill32(dst + 1, 0x04030201u, 200, VIDMM_MEM_WRITE_COMBINED), 0);
    for (size_t i = 0; i < 200; i++)
        cr_assert_eq(dst[1 + i], (unsigned char)(1 + i % 4), "fill through backend %s is wrong at byte %zu",
                     vidmm_backend_name(), i);
}

/* ---------------------------------------------------------------------------------------------
 * Backends.
 * ------------------------------------------------------------------------------------------- */

Test(dispatch, name_matches_active)
{
    enum vidmm_backend b = vidmm_backend_active();
    const char *name = vidmm_backend_name();
    cr_assert_not_null(name);
    cr_assert_neq(b, VIDMM_BACKEND_AUTO, "vidmm_backend_active() returned AUTO");
    cr_assert_not_null(vidmm_backend_to_string(b));
    cr_assert_str_eq(name, vidmm_backend_to_string(b));
    cr_assert(vidmm_backend_supported(b), "the active backend %s is not supported", name);
    /* The same answer every time. */
    cr_assert_eq(vidmm_backend_active(), b);
    cr_assert_str_eq(vidmm_backend_name(), name);
}

Test(dispatch, supported_basics)
{
    cr_assert(vidmm_backend_supported(VIDMM_BACKEND_SCALAR));
    cr_assert_not(vidmm_backend_supported(VIDMM_BACKEND_AUTO));
    cr_assert_not(vidmm_backend_supported(VIDMM_BACKEND_COUNT_));
    cr_assert_not(vidmm_backend_supported((enum vidmm_backend)42));
    cr_assert_not(vidmm_backend_supported((enum vidmm_backend)-1));
}

/* Supported exactly when built and the CPU has the instructions (after VIDMM_DISABLE_CPU_FEATURES). */
Test(dispatch, supported_matches_cpu)
{
    uint64_t usable = t_cpu_usable();
    for (int b = VIDMM_BACKEND_SCALAR; b < VIDMM_BACKEND_COUNT_; b++) {
        uint64_t need = t_backend_cpu_bits((enum vidmm_backend)b);
        bool want = t_backend_built((enum vidmm_backend)b) && (usable & need) == need;
        cr_assert_eq(vidmm_backend_supported((enum vidmm_backend)b), want,
                     "vidmm_backend_supported(%s) = %d, but built = %d and CPU features present = %d",
                     t_backend_label((enum vidmm_backend)b), !want, t_backend_built((enum vidmm_backend)b),
                     (usable & need) == need);
    }
}

Test(dispatch, default_choice)
{
    struct saved_backend saved;
    save_backend(&saved);
    force_backend(NULL);
    enum vidmm_backend got = vidmm_backend_active();
    cr_assert(acceptable_default(got), "the dispatcher chose %s, not the widest supported backend",
              vidmm_backend_to_string(got));
    quick_kernel_check();
    restore_backend(&saved);
}

Test(dispatch, string_round_trip)
{
    static const char *const names[VIDMM_BACKEND_COUNT_] = { "auto", "scalar", "sse2", "avx2", "avx512", "neon" };
    for (int b = 0; b < VIDMM_BACKEND_COUNT_; b++) {
        const char *s = vidmm_backend_to_string((enum vidmm_backend)b);
        cr_assert_not_null(s, "backend %d has no name", b);
        cr_assert_str_eq(s, names[b]);
        cr_assert_eq(vidmm_backend_from_string(s), b, "from_string(to_string(%d)) = %d", b,
                     vidmm_backend_from_string(s));
    }
    cr_assert_null(vidmm_backend_to_string(VIDMM_BACKEND_COUNT_));
    cr_assert_null(vidmm_backend_to_string((enum vidmm_backend)-1));
    cr_assert_eq(vidmm_backend_from_string("bogus"), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_backend_from_string(""), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_backend_from_string("avx2 "), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_backend_from_string(NULL), VIDMM_E_INVALID_ARG);
}

/* The recipe for testing VIDMM_BACKEND in-process: set the option, reset, check. */
Test(dispatch, force_scalar)
{
    struct saved_backend saved;
    save_backend(&saved);
    force_backend("scalar");
    cr_assert_eq(vidmm_backend_active(), VIDMM_BACKEND_SCALAR);
    cr_assert_str_eq(vidmm_backend_name(), "scalar");
    quick_kernel_check();
    restore_backend(&saved);
    if (!saved.set) {
        cr_assert(acceptable_default(vidmm_backend_active()), "after restoring, the backend is %s",
                  vidmm_backend_name());
    }
}

Test(dispatch, force_each_supported)
{
    struct saved_backend saved;
    save_backend(&saved);
    for (int b = VIDMM_BACKEND_SCALAR; b < VIDMM_BACKEND_COUNT_; b++) {
        if (!vidmm_backend_supported((enum vidmm_backend)b))
            continue;
        force_backend(vidmm_backend_to_string((enum vidmm_backend)b));
        cr_assert_eq((int)vidmm_backend_active(), b, "forcing %s gave %s", vidmm_backend_to_string((enum vidmm_backend)b),
                     vidmm_backend_name());
        quick_kernel_check();
    }
    force_backend("auto");
    cr_assert(acceptable_default(vidmm_backend_active()), "VIDMM_BACKEND=auto chose %s", vidmm_backend_name());
    restore_backend(&saved);
}

/* A request the dispatcher cannot honour: exactly one warning through the log hook, and the
 * automatic choice - not a crash, not the scalar table by default. */
static void check_fallback(const char *request)
{
    struct t_log log;
    struct saved_backend saved;
    save_backend(&saved);

    force_backend(NULL);
    enum vidmm_backend automatic = vidmm_backend_active();

    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_DEBUG);
    force_backend(request);
    enum vidmm_backend got = vidmm_backend_active();
    cr_assert_eq(got, automatic, "VIDMM_BACKEND='%s' fell back to %s, want the automatic choice %s", request,
                 vidmm_backend_to_string(got), vidmm_backend_to_string(automatic));
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "VIDMM_BACKEND='%s' logged %d warnings, want 1", request,
                 atomic_load(&log.count[VIDMM_LOG_WARN]));
    cr_assert(strstr(log.first_warn, request) != NULL, "the warning does not name the value '%s': \"%s\"", request,
              log.first_warn);
    /* Later calls use the choice already made: no more warnings. */
    quick_kernel_check();
    (void)vidmm_backend_name();
    (void)vidmm_backend_active();
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "the warning for '%s' was repeated", request);
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_ERROR]), 0);

    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    restore_backend(&saved);
}

/* An unknown name: vidmm_option_set_string() refuses it (options.string_words_refused); from the
 * environment - read on first use, in this fresh process - it is warned about once and the
 * choice is automatic. */
Test(dispatch, unknown_name_warns_and_falls_back)
{
    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_WARN);
    cr_assert_eq(setenv("VIDMM_BACKEND", "bogus", 1), 0);
    enum vidmm_backend got = vidmm_backend_active();
    cr_assert(acceptable_default(got), "VIDMM_BACKEND=bogus chose %s", vidmm_backend_name());
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "VIDMM_BACKEND=bogus logged %d warnings, want 1",
                 atomic_load(&log.count[VIDMM_LOG_WARN]));
    cr_assert(strstr(log.first_warn, "bogus") != NULL, "the warning does not name the value: \"%s\"", log.first_warn);
    quick_kernel_check();
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "the warning was repeated");
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
}

Test(dispatch, foreign_backend_warns_and_falls_back)
{
#if defined(__x86_64__) || defined(__i386__)
    check_fallback("neon");
#elif defined(__aarch64__)
    check_fallback("avx2");
#else
    cr_skip_test("no foreign backend defined for this architecture");
#endif
}

/* Every backend this machine cannot run (avx512 on a CPU without it, for one). */
Test(dispatch, unsupported_backend_warns_and_falls_back)
{
    int tried = 0;
    for (int b = VIDMM_BACKEND_SSE2; b < VIDMM_BACKEND_COUNT_; b++) {
        if (vidmm_backend_supported((enum vidmm_backend)b))
            continue;
        check_fallback(vidmm_backend_to_string((enum vidmm_backend)b));
        tried++;
    }
    cr_assert_gt(tried, 0, "every backend is supported here (NEON and x86 at once?)");
}

/* In the CTest runs with VIDMM_BACKEND=<b> (a supported b; others exit 77 before this), the
 * environment must have chosen the table. In the plain run, the same is checked by setting the
 * variable before the first call of this fresh test process. */
Test(dispatch, env_backend_honoured)
{
    const char *env = getenv("VIDMM_BACKEND");
    if (env == NULL || *env == '\0') {
        cr_assert_eq(setenv("VIDMM_BACKEND", "scalar", 1), 0);
        env = "scalar";
    }
    int want = vidmm_backend_from_string(env);
    cr_assert_geq(want, VIDMM_BACKEND_SCALAR, "VIDMM_BACKEND='%s' is not a backend name", env);
    cr_assert(vidmm_backend_supported((enum vidmm_backend)want));
    cr_assert_str_eq(vidmm_option_get_string(VIDMM_OPT_BACKEND), env);
    cr_assert_eq((int)vidmm_backend_active(), want, "VIDMM_BACKEND=%s but the active backend is %s", env,
                 vidmm_backend_name());
    quick_kernel_check();
}

/* VIDMM_DISABLE_CPU_FEATURES masks features: the backends built on them go, the CPU's own
 * feature list stays. */
Test(dispatch, disable_cpu_features)
{
    struct vidmm_cpu_info info;
    struct saved_backend saved;
    save_backend(&saved);
    if (!vidmm_backend_supported(VIDMM_BACKEND_AVX2))
        cr_skip_test("CPU lacks avx2: nothing to mask");

    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_DISABLE_CPU_FEATURES, "avx2"), 0);
    force_backend(NULL);
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    cr_assert(info.features & VIDMM_CPU_AVX2, "masking changed the CPU's own feature list");
    cr_assert_not(info.usable & VIDMM_CPU_AVX2, "avx2 still usable after masking it");
    cr_assert_not(vidmm_backend_supported(VIDMM_BACKEND_AVX2));
    cr_assert_not(vidmm_backend_supported(VIDMM_BACKEND_AVX512), "AVX-512 backend supported without AVX2");
    enum vidmm_backend got = vidmm_backend_active();
    cr_assert(got != VIDMM_BACKEND_AVX2 && got != VIDMM_BACKEND_AVX512, "masked avx2, got %s", vidmm_backend_name());
    cr_assert(acceptable_default(got), "with avx2 masked the dispatcher chose %s", vidmm_backend_name());
    quick_kernel_check();

    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_DISABLE_CPU_FEATURES, NULL), 0);
    restore_backend(&saved);
    cr_assert(vidmm_backend_supported(VIDMM_BACKEND_AVX2), "unmasking did not bring avx2 back");
}

/* ---------------------------------------------------------------------------------------------
 * The log hook.
 * ------------------------------------------------------------------------------------------- */

/* A backend name vidmm_option_set_string() takes but no CPU of this architecture runs: its
 * fallback warning is the log hook tests' message (an unknown name is refused when set). */
static const char *foreign_backend(void)
{
#if defined(__aarch64__)
    return "avx2";
#else
    return "neon";
#endif
}

Test(log_hook, level_filter_and_removal)
{
    struct t_log log;
    struct saved_backend saved;
    save_backend(&saved);

    /* A hook that takes errors only does not see the fallback warning. */
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_ERROR);
    force_backend(foreign_backend());
    (void)vidmm_backend_active();
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 0, "a warning reached a hook limited to errors");

    /* The same request with warnings allowed: seen once. */
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_WARN);
    force_backend(foreign_backend());
    (void)vidmm_backend_active();
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1);
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_INFO]), 0, "an info message passed a WARN-level hook");
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_DEBUG]), 0, "a debug message passed a WARN-level hook");

    /* Removed: the old hook hears nothing more. */
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_DEBUG);
    force_backend(foreign_backend());
    (void)vidmm_backend_active();
    cr_assert_eq(atomic_load(&log.seen), 1, "a removed hook was called");

    /* The argument given with the hook is the one passed back. */
    struct t_log other;
    t_log_reset(&other);
    vidmm_set_log_fn(t_log_record, &other, VIDMM_LOG_WARN);
    force_backend(foreign_backend());
    (void)vidmm_backend_active();
    cr_assert_eq(atomic_load(&other.count[VIDMM_LOG_WARN]), 1);
    cr_assert_eq(atomic_load(&log.seen), 1);

    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    restore_backend(&saved);
}

/* ---------------------------------------------------------------------------------------------
 * Options.
 * ------------------------------------------------------------------------------------------- */

Test(options, names)
{
    static const char *const names[VIDMM_OPT_COUNT_] = {
        [VIDMM_OPT_BACKEND] = "VIDMM_BACKEND",
        [VIDMM_OPT_DISABLE_CPU_FEATURES] = "VIDMM_DISABLE_CPU_FEATURES",
        [VIDMM_OPT_LOG_LEVEL] = "VIDMM_LOG_LEVEL",
        [VIDMM_OPT_NT_THRESHOLD] = "VIDMM_NT_THRESHOLD",
        [VIDMM_OPT_WC_COPY] = "VIDMM_WC_COPY",
        [VIDMM_OPT_NO_CLWB] = "VIDMM_NO_CLWB",
        [VIDMM_OPT_NO_CLFLUSHOPT] = "VIDMM_NO_CLFLUSHOPT",
        [VIDMM_OPT_CALIBRATE] = "VIDMM_CALIBRATE",
        [VIDMM_OPT_SWIZZLE_TUNE_FILE] = "VIDMM_SWIZZLE_TUNE_FILE",
        [VIDMM_OPT_STREAM_LINEAR_ROWS] = "VIDMM_STREAM_LINEAR_ROWS",
    };
    for (int o = 0; o < VIDMM_OPT_COUNT_; o++) {
        const char *n = vidmm_option_name((enum vidmm_option)o);
        cr_assert_not_null(n, "option %d has no name", o);
        cr_assert_str_eq(n, names[o]);
    }
    cr_assert_null(vidmm_option_name(VIDMM_OPT_COUNT_));
    cr_assert_null(vidmm_option_name((enum vidmm_option)-1));
}

Test(options, sizes_with_suffixes)
{
    static const struct {
        const char *text;
        long long value;
    } good[] = {
        { "0", 0 },
        { "4096", 4096 },
        { "4K", 4096 },
        { "64K", 64 << 10 },
        { "3M", 3ll << 20 },
        { "1G", 1ll << 30 },
        { "2G", 2ll << 30 },
    };
    static const char *const bad[] = { "", "K", "12Q", "-5", "4KX", "four", "1.5M", "4 K" };

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NT_THRESHOLD, good[i].text), 0, "'%s' refused", good[i].text);
        cr_assert_eq(vidmm_option_get(VIDMM_OPT_NT_THRESHOLD), good[i].value, "'%s' parsed as %lld", good[i].text,
                     vidmm_option_get(VIDMM_OPT_NT_THRESHOLD));
    }
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NT_THRESHOLD, "8M"), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NT_THRESHOLD, bad[i]), VIDMM_E_INVALID_ARG, "'%s' accepted",
                     bad[i]);
        cr_assert_eq(vidmm_option_get(VIDMM_OPT_NT_THRESHOLD), 8ll << 20, "refusing '%s' changed the value", bad[i]);
    }
    /* The integer form takes bytes. */
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 12345), 0);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NT_THRESHOLD), 12345);
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, -1), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NT_THRESHOLD), 12345);
    /* NULL: back to the default (0 = the last-level cache size). */
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_NT_THRESHOLD, NULL), 0);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NT_THRESHOLD), 0);
}

Test(options, booleans)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    static const char *const bad[] = { "", "maybe", "2", "-1", "yess", "onn" };
    static const enum vidmm_option bools[] = { VIDMM_OPT_NO_CLWB, VIDMM_OPT_NO_CLFLUSHOPT, VIDMM_OPT_CALIBRATE };

    for (size_t o = 0; o < 3; o++) {
        const char *name = vidmm_option_name(bools[o]);
        for (size_t i = 0; i < 4; i++) {
            cr_assert_eq(vidmm_option_set_string(bools[o], yes[i]), 0, "%s='%s' refused", name, yes[i]);
            cr_assert_eq(vidmm_option_get(bools[o]), 1, "%s='%s' is not true", name, yes[i]);
            cr_assert_eq(vidmm_option_set_string(bools[o], no[i]), 0, "%s='%s' refused", name, no[i]);
            cr_assert_eq(vidmm_option_get(bools[o]), 0, "%s='%s' is not false", name, no[i]);
        }
        cr_assert_eq(vidmm_option_set_string(bools[o], "on"), 0);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            cr_assert_eq(vidmm_option_set_string(bools[o], bad[i]), VIDMM_E_INVALID_ARG, "%s='%s' accepted", name,
                         bad[i]);
            cr_assert_eq(vidmm_option_get(bools[o]), 1, "refusing %s='%s' changed the value", name, bad[i]);
        }
        cr_assert_eq(vidmm_option_set(bools[o], 0), 0);
        cr_assert_eq(vidmm_option_get(bools[o]), 0);
        cr_assert_eq(vidmm_option_set(bools[o], 2), VIDMM_E_INVALID_ARG);
        cr_assert_eq(vidmm_option_set_string(bools[o], NULL), 0);
    }
    /* The defaults: CLWB and CLFLUSHOPT allowed, calibration on. */
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NO_CLWB), 0);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NO_CLFLUSHOPT), 0);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_CALIBRATE), 1);
}

Test(options, log_level_range)
{
    for (int l = 0; l <= 3; l++) {
        char text[4];
        snprintf(text, sizeof(text), "%d", l);
        cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_LOG_LEVEL, text), 0);
        cr_assert_eq(vidmm_option_get(VIDMM_OPT_LOG_LEVEL), l);
        cr_assert_eq(vidmm_option_set(VIDMM_OPT_LOG_LEVEL, l), 0);
    }
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_LOG_LEVEL, 4), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_LOG_LEVEL, "4"), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_LOG_LEVEL, "debug"), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_LOG_LEVEL), 3);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_LOG_LEVEL, NULL), 0);
}

Test(options, strings_and_kinds)
{
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_WC_COPY, "nt"), 0);
    cr_assert_str_eq(vidmm_option_get_string(VIDMM_OPT_WC_COPY), "nt");
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_WC_COPY), 1, "a set string option reads as 1");
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_WC_COPY, NULL), 0);
    cr_assert_null(vidmm_option_get_string(VIDMM_OPT_WC_COPY));
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_WC_COPY), 0, "an unset string option reads as 0");

    /* A string option takes no integer. */
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_BACKEND, 1), VIDMM_E_INVALID_ARG);
    /* Unknown options. */
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_COUNT_, 1), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_COUNT_, "1"), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_option_set((enum vidmm_option)-1, 1), VIDMM_E_INVALID_ARG);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_COUNT_), 0);
    cr_assert_null(vidmm_option_get_string(VIDMM_OPT_COUNT_));
}

/* A string option takes only the words common.h lists: anything else is VIDMM_E_INVALID_ARG,
 * with one DEBUG line naming the option, the value and the words it takes, and the option keeps
 * its value (issue 25: "quantum" was taken for a backend and returned 0). */
static void string_refused(enum vidmm_option opt, const char *keep, const char *bad, const char *words)
{
    struct t_log log;
    const char *name = vidmm_option_name(opt);
    cr_assert_eq(vidmm_option_set_string(opt, keep), 0, "%s='%s' refused", name, keep);
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_DEBUG);
    int rc = vidmm_option_set_string(opt, bad);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    cr_assert_eq(rc, VIDMM_E_INVALID_ARG, "%s='%s' returned %d, want INVALID_ARG", name, bad, rc);
    cr_assert_str_eq(vidmm_option_get_string(opt), keep, "refusing %s='%s' changed the value", name, bad);
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_DEBUG]), 1, "%s='%s': %d DEBUG lines, want 1", name, bad,
                 atomic_load(&log.count[VIDMM_LOG_DEBUG]));
    cr_assert(strstr(log.first_debug, "vidmm_option_set_string") && strstr(log.first_debug, name) &&
                  strstr(log.first_debug, bad) && strstr(log.first_debug, words),
              "the line does not name the call, %s, '%s' and the words (%s): \"%s\"", name, bad, words,
              log.first_debug);
    cr_assert_eq(vidmm_option_set_string(opt, NULL), 0);
}

Test(options, string_words_refused)
{
    string_refused(VIDMM_OPT_BACKEND, "scalar", "quantum", "scalar|sse2|avx2|avx512|neon");
    string_refused(VIDMM_OPT_BACKEND, "auto", "", "auto");
    string_refused(VIDMM_OPT_WC_COPY, "nt", "quantum", "auto|nt|movdir64b");
    string_refused(VIDMM_OPT_STREAM_LINEAR_ROWS, "on", "sometimes", "auto|on|off");
    string_refused(VIDMM_OPT_DISABLE_CPU_FEATURES, "avx2", "avx2,quantum", "quantum");
    /* What they take: every backend name (one the CPU lacks too: that is warned about when the
     * backend is chosen), any case, as vidmm_backend_from_string(); every feature name. */
    for (int b = VIDMM_BACKEND_AUTO; b < VIDMM_BACKEND_COUNT_; b++)
        cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, vidmm_backend_to_string((enum vidmm_backend)b)), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, "AVX2"), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, NULL), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_WC_COPY, "movdir64b"), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_WC_COPY, "auto"), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_WC_COPY, NULL), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_DISABLE_CPU_FEATURES, "avx512, sse4.1,clwb"), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_DISABLE_CPU_FEATURES, ""), 0, "an empty list masks nothing");
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_DISABLE_CPU_FEATURES, NULL), 0);
}

/* The environment is read on first use; a bad value logs one warning and keeps the default.
 * (This test process is fresh, so these options have not been read yet.) */
Test(options, environment)
{
    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_WARN);

    cr_assert_eq(setenv("VIDMM_NT_THRESHOLD", "64K", 1), 0);
    cr_assert_eq(setenv("VIDMM_NO_CLWB", "yes", 1), 0);
    cr_assert_eq(setenv("VIDMM_CALIBRATE", "maybe", 1), 0);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NT_THRESHOLD), 64 << 10);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NO_CLWB), 1);
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 0, "a good value was warned about: %s", log.first_warn);

    cr_assert_eq(vidmm_option_get(VIDMM_OPT_CALIBRATE), 1, "VIDMM_CALIBRATE=maybe did not keep the default (on)");
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "VIDMM_CALIBRATE=maybe: %d warnings, want 1",
                 atomic_load(&log.count[VIDMM_LOG_WARN]));
    cr_assert(strstr(log.first_warn, "VIDMM_CALIBRATE") != NULL, "the warning does not name the variable: \"%s\"",
              log.first_warn);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_CALIBRATE), 1);
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "the warning was repeated on the next read");

    /* vidmm_option_set() beats the environment. */
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NO_CLWB, 0), 0);
    cr_assert_eq(vidmm_option_get(VIDMM_OPT_NO_CLWB), 0);

    /* The threshold from the environment reaches the kernels. */
    struct vidmm_cpu_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    cr_assert_eq(info.nt_threshold, 64 << 10);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
}

/* ---------------------------------------------------------------------------------------------
 * Errors.
 * ------------------------------------------------------------------------------------------- */

static const int all_codes[] = { VIDMM_OK,
                                 VIDMM_E_INVALID_ARG,
                                 VIDMM_E_NO_MEMORY,
                                 VIDMM_E_NO_VIDEO_MEMORY,
                                 VIDMM_E_BUSY,
                                 VIDMM_E_NOT_AVAILABLE,
                                 VIDMM_E_CANT_EVICT_PINNED,
                                 VIDMM_E_IO,
                                 VIDMM_E_UNSUPPORTED,
                                 VIDMM_E_DEVICE_REMOVED,
                                 VIDMM_E_OVERLAP,
                                 VIDMM_E_CANT_RENDER_LOCKED,
                                 VIDMM_E_INVALID_INSTANCE,
                                 VIDMM_E_ALLOCATION_INVALID,
                                 VIDMM_E_TIMEOUT };
#define N_CODES (sizeof(all_codes) / sizeof(all_codes[0]))

Test(errors, published_values)
{
    /* common.h: published values never change. */
    cr_assert_eq(VIDMM_OK, 0);
    cr_assert_eq(VIDMM_E_INVALID_ARG, -1);
    cr_assert_eq(VIDMM_E_NO_MEMORY, -2);
    cr_assert_eq(VIDMM_E_NO_VIDEO_MEMORY, -3);
    cr_assert_eq(VIDMM_E_BUSY, -4);
    cr_assert_eq(VIDMM_E_NOT_AVAILABLE, -5);
    cr_assert_eq(VIDMM_E_CANT_EVICT_PINNED, -6);
    cr_assert_eq(VIDMM_E_IO, -7);
    cr_assert_eq(VIDMM_E_UNSUPPORTED, -8);
    cr_assert_eq(VIDMM_E_DEVICE_REMOVED, -9);
    cr_assert_eq(VIDMM_E_OVERLAP, -10);
    cr_assert_eq(VIDMM_E_CANT_RENDER_LOCKED, -11);
    cr_assert_eq(VIDMM_E_INVALID_INSTANCE, -12);
    cr_assert_eq(VIDMM_E_ALLOCATION_INVALID, -13);
    cr_assert_eq(VIDMM_E_TIMEOUT, -14);
}

Test(errors, strerror_distinct)
{
    const char *unknown = vidmm_strerror(-9999);
    cr_assert_str_eq(unknown, "unknown error");
    for (size_t i = 0; i < N_CODES; i++) {
        const char *s = vidmm_strerror(all_codes[i]);
        cr_assert(s != NULL && *s != '\0', "vidmm_strerror(%d) is empty", all_codes[i]);
        cr_assert_str_neq(s, unknown, "vidmm_strerror(%d) is \"unknown error\"", all_codes[i]);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(s, vidmm_strerror(all_codes[j]), "codes %d and %d share the message \"%s\"",
                              all_codes[i], all_codes[j], s);
    }
    /* 1 is VIDMM_PENDING (wddm2.h), a success status with a name of its own. */
    static const int unknown_codes[] = { 2, 42, -15, -100, INT_MIN, INT_MAX };
    for (size_t i = 0; i < sizeof(unknown_codes) / sizeof(unknown_codes[0]); i++)
        cr_assert_str_eq(vidmm_strerror(unknown_codes[i]), "unknown error", "vidmm_strerror(%d)", unknown_codes[i]);
}

/* Values: spec/wddm-vidmm.md section 13; which code maps to which: the same, and the
 * NTSTATUS -> HRESULT pairs of section 15 (ALLOCATION_BUSY -> WASSTILLDRAWING,
 * NO_VIDEO_MEMORY -> E_OUTOFMEMORY, UNSWIZZLING_APERTURE_UNAVAILABLE -> NOTAVAILABLE). */
Test(errors, ntstatus_hresult)
{
    static const struct {
        int err;
        uint32_t ntstatus; /* 0 = not fixed by the spec: checked for severity only */
        uint32_t hresult;
    } rows[] = {
        { VIDMM_OK, 0x00000000u, 0x00000000u },
        { VIDMM_E_INVALID_ARG, 0xC000000Du, 0x80070057u },
        { VIDMM_E_NO_MEMORY, 0xC0000017u, 0x8007000Eu },
        { VIDMM_E_NO_VIDEO_MEMORY, 0xC01E0100u, 0x8007000Eu },
        { VIDMM_E_BUSY, 0xC01E0102u, 0x8876021Cu },
        { VIDMM_E_NOT_AVAILABLE, 0xC01E0107u, 0x8876086Au },
        { VIDMM_E_CANT_EVICT_PINNED, 0xC01E0109u, 0xC0262109u },
        { VIDMM_E_IO, 0, 0 },
        { VIDMM_E_UNSUPPORTED, 0, 0 },
        { VIDMM_E_DEVICE_REMOVED, 0xC00002B6u, 0x88760870u },
        { VIDMM_E_OVERLAP, 0, 0 },
        { VIDMM_E_CANT_RENDER_LOCKED, 0xC01E0111u, 0xC0262111u },
        { VIDMM_E_INVALID_INSTANCE, 0xC01E0113u, 0 },
        { VIDMM_E_ALLOCATION_INVALID, 0xC01E0106u, 0 },
        { VIDMM_E_TIMEOUT, 0xC00000B5u, 0 }, /* STATUS_IO_TIMEOUT: a failure (0x102 is a success code) */
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        uint32_t nt = vidmm_error_to_ntstatus(rows[i].err), hr = vidmm_error_to_hresult(rows[i].err);
        if (rows[i].err == VIDMM_OK) {
            cr_assert_eq(nt, 0u);
            cr_assert_eq(hr, 0u);
            continue;
        }
        if (rows[i].ntstatus)
            cr_assert_eq(nt, rows[i].ntstatus, "NTSTATUS of %d (%s) is 0x%08X, want 0x%08X", rows[i].err,
                         vidmm_strerror(rows[i].err), nt, rows[i].ntstatus);
        if (rows[i].hresult)
            cr_assert_eq(hr, rows[i].hresult, "HRESULT of %d (%s) is 0x%08X, want 0x%08X", rows[i].err,
                         vidmm_strerror(rows[i].err), hr, rows[i].hresult);
        /* Every failure is an error-severity NTSTATUS (top two bits 11) and a failing HRESULT
         * (top bit set) - but STATUS_TIMEOUT, which Windows defines as a success status. */
        if (rows[i].err != VIDMM_E_TIMEOUT)
            cr_assert_eq(nt >> 30, 3u, "NTSTATUS 0x%08X of %d is not an error status", nt, rows[i].err);
        cr_assert(hr & 0x80000000u, "HRESULT 0x%08X of %d is not a failure", hr, rows[i].err);
        /* An ERROR_GRAPHICS_* HRESULT is its STATUS_GRAPHICS_* twin with facility 0x026 for
         * 0x01E and 0x2000 added to the code: 0xC01E0109 <-> 0xC0262109 in the spec's own
         * table (its prose says "the same low 16 bits", which the table contradicts). */
        if ((hr & 0xFFFF0000u) == 0xC0260000u)
            cr_assert_eq(hr, 0xC0262000u | (nt & 0x0FFFu), "HRESULT 0x%08X and NTSTATUS 0x%08X of %d are not twins",
                         hr, nt, rows[i].err);
    }
    static const int unknown_codes[] = { 2, -15, -1000, INT_MIN }; /* 1: VIDMM_PENDING (wddm2.h) */
    for (size_t i = 0; i < sizeof(unknown_codes) / sizeof(unknown_codes[0]); i++) {
        cr_assert_eq(vidmm_error_to_ntstatus(unknown_codes[i]), 0xC000000Du);
        cr_assert_eq(vidmm_error_to_hresult(unknown_codes[i]), 0x80070057u);
    }
}

/* ---------------------------------------------------------------------------------------------
 * CPU information and the version.
 * ------------------------------------------------------------------------------------------- */

/* A caller built against 0.1 passes the first version's size (through nt_threshold): it gets
 * those fields and nothing past them is written; the current size adds the L2 size and the
 * store policy (measured: its own tests below). */
Test(cpu_info, sizes_and_store_policy)
{
    const size_t v1 = offsetof(struct vidmm_cpu_info, nt_threshold) + sizeof(uint64_t);
    unsigned char buf[sizeof(struct vidmm_cpu_info) + 32];
    struct vidmm_cpu_info *old = (struct vidmm_cpu_info *)(void *)buf;
    memset(buf, 0xAB, sizeof(buf));
    old->size = v1 - 1;
    cr_assert_eq(vidmm_cpu_info(old), VIDMM_E_INVALID_ARG);
    old->size = v1;
    cr_assert_eq(vidmm_cpu_info(old), 0);
    cr_assert_eq(old->size, v1);
    cr_assert_gt(old->nt_threshold, 0);
    for (size_t i = v1; i < sizeof(buf); i++)
        cr_assert_eq(buf[i], 0xAB, "byte %zu past a 0.1-sized struct was written", i);

    struct vidmm_cpu_info info;
    memset(&info, 0xAB, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    cr_assert_eq(info.nt_threshold, old->nt_threshold);
    cr_assert_eq(info.store_policy & ~VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS, 0, "unknown policy bits 0x%x",
                 info.store_policy);
#if defined(__x86_64__)
    if (info.llc_bytes != 0 && info.l2_bytes != 0)
        cr_assert_leq(info.l2_bytes, info.llc_bytes, "L2 %llu above the last level %llu",
                      (unsigned long long)info.l2_bytes, (unsigned long long)info.llc_bytes);
#endif
}

/* ---------------------------------------------------------------------------------------------
 * The linear-row store policy (VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS): forced by
 * VIDMM_STREAM_LINEAR_ROWS, the CPU kind's guess with VIDMM_CALIBRATE=0, else measured once; in
 * every case what vidmm_cpu_info() reports is what a large block-linear deswizzle does.
 * ------------------------------------------------------------------------------------------- */

/* The walk a whole-surface deswizzle (or swizzle: big_walk()) of a 4 MiB surface (above a 1 MiB
 * streaming threshold) takes with 'backend': 1024^2 x 4-byte block-linear, or 2048^2 bytes of
 * Intel Y or Intel X. */
static enum vidmm_swizzle_walk big_walk(enum vidmm_tiling tiling, enum vidmm_backend backend, bool swizzle)
{
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(tiling);
    struct vidmm_surface_desc d = { sizeof(d), 1024, 1024, 1, 4, 1, 1, 1, 1 };
    if (tiling == VIDMM_TILING_INTEL_Y || tiling == VIDMM_TILING_INTEL_X) {
        d.width = d.height = 2048;
        d.element_bytes = 1;
    }
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    struct vidmm_swizzle_plan_info in = { .size = sizeof(in) };
    vidmm_swizzle_plan *p;
    o.backend = backend;
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, &o, &p), 0);
    cr_assert_eq(vidmm_swizzle_plan_info(p, &in), 0);
    vidmm_swizzle_plan_destroy(p);
    return swizzle ? in.swizzle_walk : in.deswizzle_walk;
}

static enum vidmm_swizzle_walk big_deswizzle_walk(enum vidmm_tiling tiling, enum vidmm_backend backend)
{
    return big_walk(tiling, backend, false);
}

static bool policy_streams(void)
{
    struct vidmm_cpu_info info = { .size = sizeof(info) };
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    cr_assert_eq(info.store_policy & ~VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS, 0, "unknown policy bits 0x%x",
                 info.store_policy);
    return (info.store_policy & VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS) != 0;
}

/* A SIMD backend with the streaming pair kernel, or a skip. */
static enum vidmm_backend simd_backend_or_skip(void)
{
    if (!vidmm_backend_supported(VIDMM_BACKEND_SSE2))
        cr_skip_test("this CPU or build has no SIMD backend: every walk is the reference");
    return vidmm_backend_active() == VIDMM_BACKEND_SCALAR ? VIDMM_BACKEND_SSE2 : vidmm_backend_active();
}

Test(store_policy, forced_on_and_off)
{
    const enum vidmm_backend b = simd_backend_or_skip();
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 1 << 20), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_STREAM_LINEAR_ROWS, "on"), 0);
    vidmm_kernels_reset();
    cr_expect(policy_streams(), "VIDMM_STREAM_LINEAR_ROWS=on: policy clear");
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_BLOCK_LINEAR, b), VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR);
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_INTEL_Y, b), VIDMM_SWIZZLE_WALK_STRIPS_NT);
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_INTEL_X, b), VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR);
    /* A large Intel X swizzle streams its tile rows whatever the linear-row policy says. */
    cr_expect_eq(big_walk(VIDMM_TILING_INTEL_X, b, true), VIDMM_SWIZZLE_WALK_TILES_NT);
    /* Below the threshold the policy does not apply. */
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 64 << 20), 0);
    vidmm_kernels_reset();
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_BLOCK_LINEAR, b), VIDMM_SWIZZLE_WALK_TILES, "a copy below the threshold streamed");
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_INTEL_X, b), VIDMM_SWIZZLE_WALK_TILES, "Intel X below the threshold streamed");
    cr_expect_eq(big_walk(VIDMM_TILING_INTEL_X, b, true), VIDMM_SWIZZLE_WALK_TILES, "Intel X below the threshold streamed");

    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 1 << 20), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_STREAM_LINEAR_ROWS, "off"), 0);
    vidmm_kernels_reset();
    cr_expect(!policy_streams(), "VIDMM_STREAM_LINEAR_ROWS=off: policy set");
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_BLOCK_LINEAR, b), VIDMM_SWIZZLE_WALK_TILES);
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_INTEL_Y, b), VIDMM_SWIZZLE_WALK_STRIPS);
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_INTEL_X, b), VIDMM_SWIZZLE_WALK_TILES);
    cr_expect_eq(big_walk(VIDMM_TILING_INTEL_X, b, true), VIDMM_SWIZZLE_WALK_TILES_NT);
}

/* VIDMM_CALIBRATE=0: the CPU kind's guess (Intel streams), nothing measured (no log line). */
Test(store_policy, uncalibrated_is_the_guess)
{
    const enum vidmm_backend b = simd_backend_or_skip();
    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_INFO);
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 1 << 20), 0);
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_CALIBRATE, 0), 0);
    vidmm_kernels_reset();
    struct vidmm_cpu_info info = { .size = sizeof(info) };
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    const bool intel = strcmp(info.vendor, "GenuineIntel") == 0;
    cr_expect_eq(policy_streams(), intel, "vendor %s", info.vendor);
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_BLOCK_LINEAR, b), intel ? VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR : VIDMM_SWIZZLE_WALK_TILES);
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_INTEL_Y, b), VIDMM_SWIZZLE_WALK_STRIPS, "the strips' guess is ordinary stores");
    cr_expect_eq(big_deswizzle_walk(VIDMM_TILING_INTEL_X, b), intel ? VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR : VIDMM_SWIZZLE_WALK_TILES,
                 "the long-row walk's guess is the CPU kind's");
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
}

/* The measurements' INFO lines, captured. */
struct policy_log {
    int lines;
    char text[4][512];
};

static void policy_log_fn(void *arg, enum vidmm_log_level level, const char *msg)
{
    struct policy_log *pl = arg;
    if (level == VIDMM_LOG_INFO && strstr(msg, "deswizzle linear rows beyond the cache") != NULL) {
        if (pl->lines < 4)
            snprintf(pl->text[pl->lines], sizeof(pl->text[0]), "%s", msg);
        pl->lines++;
    }
}

/* check_rule() recomputes the decision of one measurement line from its figures: the guess
 * stands unless another candidate is 10% faster, the fastest of those winning (figures rounded
 * to 1 us in the line: within that of an edge it cannot be recomputed). Returns the line's
 * decision: 0 ordinary stores, 1 streaming stores, 2 the tile walk. */
static int check_rule(const char *line)
{
    double t[3] = { 0, 0, -1 };
    char guess[16] = "";
    const char *f = strstr(line, " ms: ordinary stores "); /* the figures, not the decision */
    cr_assert_not_null(f, "no figures in \"%s\"", line);
    cr_assert_eq(sscanf(f, " ms: ordinary stores %lf us, streaming %lf us", &t[0], &t[1]), 2, "unreadable: \"%s\"",
                 line);
    const char *tw = strstr(f, ", tile walk ");
    if (tw != NULL)
        cr_assert_eq(sscanf(tw, ", tile walk %lf us", &t[2]), 1, "unreadable: \"%s\"", line);
    const char *g = strstr(f, "; the guess: ");
    cr_assert_not_null(g, "no guess in \"%s\"", line);
    cr_assert_eq(sscanf(g, "; the guess: %15[a-z]", guess), 1, "unreadable: \"%s\"", line);
    cr_assert_gt(t[0], 0);
    const int gi = strcmp(guess, "streaming") == 0 ? 1 : strcmp(guess, "ordinary") == 0 ? 0 : 2;
    int said = -1;
    if (strstr(line, ": ordinary stores (") != NULL)
        said = 0;
    else if (strstr(line, ": streaming stores (") != NULL)
        said = 1;
    else if (strstr(line, ": the tile walk (") != NULL)
        said = 2;
    cr_assert_geq(said, 0, "no decision in \"%s\"", line);
    int want = gi;
    bool edge = false;
    for (int c = 0; c < 3; c++) {
        if (c == gi || t[c] <= 0)
            continue;
        if (fabs(1.10 * t[c] - t[gi]) <= 2.2)
            edge = true;
        if (1.10 * t[c] < t[gi] && (want == gi || t[c] < t[want]))
            want = c;
    }
    if (!edge)
        cr_expect_eq(said, want, "\"%s\"", line);
    return said;
}

/* Measured (the default): once per kind and process, whatever asks first; each decision follows
 * the rule from its line's figures; copies take what was decided, and vidmm_cpu_info() reports
 * the block-linear kind's; vidmm_kernels_reset() measures again. */
Test(store_policy, measured_once_per_kind_and_followed)
{
    const enum vidmm_backend b = simd_backend_or_skip();
    struct policy_log pl = { 0 };
    vidmm_set_log_fn(policy_log_fn, &pl, VIDMM_LOG_INFO);
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_NT_THRESHOLD, 1 << 20), 0);
    vidmm_kernels_reset();
    const enum vidmm_swizzle_walk w = big_deswizzle_walk(VIDMM_TILING_BLOCK_LINEAR, b);
    if (pl.lines == 0)
        cr_skip_test("nothing was measured here (no flush instruction, or the backend has no streaming pair "
                     "kernel): the guess stands, as store_policy.uncalibrated_is_the_guess checks");
    cr_assert_eq(pl.lines, 1, "measured %d times", pl.lines);
    cr_assert(strstr(pl.text[0], "pair walk") != NULL, "\"%s\"", pl.text[0]);
    const int ga = check_rule(pl.text[0]);
    cr_assert_neq(ga, 2, "the pair walk has no tile-walk answer: \"%s\"", pl.text[0]);
    const bool gob = ga == 1;
    cr_expect_eq(w, gob ? VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR : VIDMM_SWIZZLE_WALK_TILES,
                 "the copy took walk %d against the measured %d", w, gob);
    if (b == vidmm_backend_active()) /* else vidmm_cpu_info() reports the active (scalar) backend's guess */
        cr_expect_eq(policy_streams(), gob, "vidmm_cpu_info() reports another answer than the copy's kind");
    (void)big_deswizzle_walk(VIDMM_TILING_BLOCK_LINEAR, b);
    cr_expect_eq(pl.lines, 1, "measured again without a reset");

    const enum vidmm_swizzle_walk wy = big_deswizzle_walk(VIDMM_TILING_INTEL_Y, b);
    cr_assert_eq(pl.lines, 2, "Intel Y: %d measurements in all", pl.lines);
    cr_assert(strstr(pl.text[1], "strips") != NULL, "\"%s\"", pl.text[1]);
    const int sa = check_rule(pl.text[1]);
    static const enum vidmm_swizzle_walk by_answer[3] = { VIDMM_SWIZZLE_WALK_STRIPS, VIDMM_SWIZZLE_WALK_STRIPS_NT,
                                                          VIDMM_SWIZZLE_WALK_TILES };
    cr_expect_eq(wy, by_answer[sa], "Intel Y took walk %d against the measured answer %d", wy, sa);
    (void)big_deswizzle_walk(VIDMM_TILING_INTEL_Y, b);
    cr_expect_eq(pl.lines, 2, "Intel Y measured again without a reset");

    const enum vidmm_swizzle_walk wx = big_deswizzle_walk(VIDMM_TILING_INTEL_X, b);
    cr_assert_eq(pl.lines, 3, "Intel X: %d measurements in all", pl.lines);
    cr_assert(strstr(pl.text[2], "long-row walk") != NULL, "\"%s\"", pl.text[2]);
    const int xa = check_rule(pl.text[2]);
    cr_assert_neq(xa, 2, "the long-row walk has no tile-walk answer: \"%s\"", pl.text[2]);
    cr_expect_eq(wx, xa == 1 ? VIDMM_SWIZZLE_WALK_TILES_NT_LINEAR : VIDMM_SWIZZLE_WALK_TILES,
                 "Intel X took walk %d against the measured answer %d", wx, xa);

    vidmm_kernels_reset();
    (void)big_deswizzle_walk(VIDMM_TILING_BLOCK_LINEAR, b);
    cr_expect_eq(pl.lines, 4, "vidmm_kernels_reset() did not forget the measurements");
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
}

/* A bad word in the environment is warned about once and measured past (as auto). */
Test(store_policy, environment_bad_word)
{
    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_WARN);
    cr_assert_eq(setenv("VIDMM_STREAM_LINEAR_ROWS", "sometimes", 1), 0);
    (void)policy_streams();
    cr_expect_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "%d warnings", atomic_load(&log.count[VIDMM_LOG_WARN]));
    cr_expect(strstr(log.first_warn, "VIDMM_STREAM_LINEAR_ROWS") != NULL, "\"%s\"", log.first_warn);
    (void)policy_streams();
    cr_expect_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1, "the warning was repeated");
    cr_assert_eq(setenv("VIDMM_STREAM_LINEAR_ROWS", "on", 1), 0);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
}


Test(cpu_info, fields)
{
    struct vidmm_cpu_info info;
    cr_assert_eq(vidmm_cpu_info(NULL), VIDMM_E_INVALID_ARG);
    memset(&info, 0xAB, sizeof(info));
    info.size = 0;
    cr_assert_eq(vidmm_cpu_info(&info), VIDMM_E_INVALID_ARG);
    info.size = sizeof(size_t);
    cr_assert_eq(vidmm_cpu_info(&info), VIDMM_E_INVALID_ARG);

    memset(&info, 0xAB, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0);
    cr_assert_eq(info.size, sizeof(info), "vidmm_cpu_info() changed 'size'");
    cr_assert_eq(info.usable & ~info.features, 0, "usable has features the CPU lacks: 0x%llx",
                 (unsigned long long)(info.usable & ~info.features));
    cr_assert(memchr(info.vendor, '\0', sizeof(info.vendor)) != NULL, "vendor is not NUL-terminated");
    cr_assert(memchr(info.model, '\0', sizeof(info.model)) != NULL, "model is not NUL-terminated");
    cr_assert(info.cache_line >= 16 && info.cache_line <= 1024 && (info.cache_line & (info.cache_line - 1)) == 0,
              "cache line size %u", info.cache_line);
    cr_assert_gt(info.nt_threshold, 0);
#if defined(__x86_64__)
    if (t_arch_x86()) {   /* the generic layer (VIDMM_ARCH=generic) reads no CPUID */
        cr_assert(info.features & VIDMM_CPU_SSE2, "an x86-64 CPU without SSE2");
        cr_assert(info.features & VIDMM_CPU_CLFLUSH, "an x86-64 CPU without CLFLUSH");
        cr_assert_neq(info.vendor[0], '\0', "CPUID vendor string is empty");
    }
#endif
    /* Feature implications the OS checks must keep consistent. */
    if (info.features & VIDMM_CPU_AVX2)
        cr_assert(info.features & VIDMM_CPU_AVX, "AVX2 without AVX");
    if (info.features & VIDMM_CPU_AVX512BW)
        cr_assert(info.features & VIDMM_CPU_AVX512F, "AVX512BW without AVX512F");
    /* The same answer twice. */
    struct vidmm_cpu_info again;
    memset(&again, 0, sizeof(again));
    again.size = sizeof(again);
    cr_assert_eq(vidmm_cpu_info(&again), 0);
    cr_assert_eq(again.features, info.features);
    cr_assert_eq(again.usable, info.usable);
    cr_assert_str_eq(again.vendor, info.vendor);
}

Test(cpu_info, feature_names)
{
    for (int bit = 0; bit <= 15; bit++) {
        const char *n = vidmm_cpu_feature_name(1ull << bit);
        cr_assert(n != NULL && *n != '\0', "feature bit %d has no name", bit);
        for (int j = 0; j < bit; j++)
            cr_assert_str_neq(n, vidmm_cpu_feature_name(1ull << j), "two features named '%s'", n);
    }
    cr_assert_str_eq(vidmm_cpu_feature_name(VIDMM_CPU_AVX2), "avx2");
    cr_assert_str_eq(vidmm_cpu_feature_name(VIDMM_CPU_CLWB), "clwb");
    cr_assert_str_eq(vidmm_cpu_feature_name(VIDMM_CPU_MOVDIR64B), "movdir64b");
    cr_assert_null(vidmm_cpu_feature_name(0));
    cr_assert_null(vidmm_cpu_feature_name(1ull << 40));
    cr_assert_null(vidmm_cpu_feature_name(VIDMM_CPU_AVX2 | VIDMM_CPU_SSE2), "two bits at once have a name");
}

Test(cpu_info, wc_copy_variant)
{
    const char *v = vidmm_wc_copy_variant();
    cr_assert(v != NULL && *v != '\0');
    cr_assert_str_eq(vidmm_wc_copy_variant(), v);
    /* Without calibration, the static choice; still a name. */
    cr_assert_eq(vidmm_option_set(VIDMM_OPT_CALIBRATE, 0), 0);
    vidmm_kernels_reset();
    v = vidmm_wc_copy_variant();
    cr_assert(v != NULL && *v != '\0');
    if (!(t_cpu_usable() & VIDMM_CPU_MOVDIR64B))
        cr_assert_str_neq(v, "movdir64b", "MOVDIR64B chosen on a CPU without it");
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_CALIBRATE, NULL), 0);
    vidmm_kernels_reset();
}

Test(version, matches_header)
{
    char text[32];
    cr_assert_eq(vidmm_version_number(), (unsigned)VIDMM_VERSION_NUMBER);
    cr_assert_eq(VIDMM_VERSION_NUMBER, VIDMM_VERSION_MAJOR * 10000 + VIDMM_VERSION_MINOR * 100 + VIDMM_VERSION_PATCH);
    cr_assert_not_null(vidmm_version_string());
    cr_assert_str_eq(vidmm_version_string(), VIDMM_VERSION_STRING);
    snprintf(text, sizeof(text), "%d.%d.%d", VIDMM_VERSION_MAJOR, VIDMM_VERSION_MINOR, VIDMM_VERSION_PATCH);
    cr_assert_str_eq(VIDMM_VERSION_STRING, text, "VIDMM_VERSION_STRING disagrees with the MAJOR/MINOR/PATCH macros");
}
