/* SPDX-License-Identifier: MIT */
/* lib/kernels/dispatch.c - choose the backend table once, honour VIDMM_BACKEND and
 * VIDMM_DISABLE_CPU_FEATURES, and answer what runs. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include "arch/arch.h"
#include "common/internal.h"
#include "kernels/kernel_ops.h"

/* One {bit, name} table serves the feature mask parser, logs and the tools. "avx512" in the
 * mask also removes every AVX-512 sub-feature (see parse_mask()). */
static const struct {
    uint64_t bit;
    const char *name;
} feature_names[] = {
    { VIDMM_CPU_SSE2, "sse2" },           { VIDMM_CPU_SSE41, "sse4.1" },
    { VIDMM_CPU_AVX, "avx" },             { VIDMM_CPU_AVX2, "avx2" },
    { VIDMM_CPU_AVX512F, "avx512f" },     { VIDMM_CPU_AVX512BW, "avx512bw" },
    { VIDMM_CPU_AVX512VL, "avx512vl" },   { VIDMM_CPU_AVX512VBMI2, "avx512vbmi2" },
    { VIDMM_CPU_BMI2, "bmi2" },           { VIDMM_CPU_ERMS, "erms" },
    { VIDMM_CPU_FSRM, "fsrm" },           { VIDMM_CPU_CLFLUSH, "clflush" },
    { VIDMM_CPU_CLFLUSHOPT, "clflushopt" }, { VIDMM_CPU_CLWB, "clwb" },
    { VIDMM_CPU_MOVDIR64B, "movdir64b" }, { VIDMM_CPU_NEON, "neon" },
};
#define N_FEATURES (sizeof(feature_names) / sizeof(feature_names[0]))

#define CPU_AVX512_ALL (VIDMM_CPU_AVX512F | VIDMM_CPU_AVX512BW | VIDMM_CPU_AVX512VL | VIDMM_CPU_AVX512VBMI2)

const char *vidmm_cpu_feature_name(uint64_t bit)
{
    for (size_t i = 0; i < N_FEATURES; i++)
        if (feature_names[i].bit == bit)
            return feature_names[i].name;
    return NULL;
}

/* parse_mask() turns "avx512,avx2" into feature bits. Masking a feature also masks what is
 * built on it (no AVX2 without AVX, no AVX without SSE4.1 here), so that a mask always leaves a
 * consistent set. Unknown names are warned about and ignored. */
static uint64_t parse_mask(const char *list)
{
    uint64_t mask = 0;
    const char *p = list;

    while (*p) {
        size_t len = strcspn(p, ", ");
        if (len > 0) {
            bool known = false;
            if (len == 6 && strncasecmp(p, "avx512", 6) == 0) {
                mask |= CPU_AVX512_ALL;
                known = true;
            }
            for (size_t i = 0; i < N_FEATURES && !known; i++) {
                if (strlen(feature_names[i].name) == len && strncasecmp(p, feature_names[i].name, len) == 0) {
                    mask |= feature_names[i].bit;
                    known = true;
                }
            }
            if (!known)
                vidmm_log(VIDMM_LOG_WARN, "VIDMM_DISABLE_CPU_FEATURES: unknown feature '%.*s' ignored", (int)len, p);
        }
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    if (mask & VIDMM_CPU_SSE2)
        mask |= VIDMM_CPU_SSE41;
    if (mask & VIDMM_CPU_SSE41)
        mask |= VIDMM_CPU_AVX;
    if (mask & VIDMM_CPU_AVX)
        mask |= VIDMM_CPU_AVX2;
    if (mask & (VIDMM_CPU_AVX2 | VIDMM_CPU_AVX512F))
        mask |= CPU_AVX512_ALL;
    return mask;
}

/* The usable feature set and the chosen table are resolved once and cached in atomics. Two
 * threads racing on the first call compute the same values from the same CPU and options, so
 * the race is benign; relaxed/acquire-release order suffices (the table is a constant object). */
static _Atomic uint64_t usable_cache;   /* bit 63 set = resolved */
#define USABLE_RESOLVED (1ull << 63)
_Atomic(const struct vidmm_kernel_ops *) vidmm_active_ops;

uint64_t vidmm_cpu_usable(void)
{
    uint64_t u = atomic_load_explicit(&usable_cache, memory_order_relaxed);
    if (VIDMM_LIKELY(u & USABLE_RESOLVED))
        return u & ~USABLE_RESOLVED;
    u = vidmm_arch_cpu_features();
    const char *mask = vidmm_option_get_string(VIDMM_OPT_DISABLE_CPU_FEATURES);
    if (mask != NULL)
        u &= ~parse_mask(mask);
    atomic_store_explicit(&usable_cache, u | USABLE_RESOLVED, memory_order_relaxed);
    return u;
}

/* backend_table() is the compiled-in table of 'b', or NULL. */
static const struct vidmm_kernel_ops *backend_table(enum vidmm_backend b)
{
    switch (b) {
    case VIDMM_BACKEND_SCALAR:
        return &vidmm_ops_scalar;
#ifdef VIDMM_HAVE_SSE2_BACKEND
    case VIDMM_BACKEND_SSE2:
        return &vidmm_ops_sse2;
#endif
#ifdef VIDMM_HAVE_AVX2_BACKEND
    case VIDMM_BACKEND_AVX2:
        return &vidmm_ops_avx2;
#endif
#ifdef VIDMM_HAVE_AVX512_BACKEND
    case VIDMM_BACKEND_AVX512:
        return &vidmm_ops_avx512;
#endif
    default:
        return NULL;
    }
}

/* The features each table's code was compiled for. The AVX2 table also uses SSE4.1 streaming
 * loads; the AVX-512 table uses AVX2 and SSE4.1 for its short edges. */
static uint64_t backend_needs(enum vidmm_backend b)
{
    switch (b) {
    case VIDMM_BACKEND_SCALAR: return 0;
    case VIDMM_BACKEND_SSE2: return VIDMM_CPU_SSE2;
    case VIDMM_BACKEND_AVX2: return VIDMM_CPU_SSE2 | VIDMM_CPU_SSE41 | VIDMM_CPU_AVX | VIDMM_CPU_AVX2;
    case VIDMM_BACKEND_AVX512:
        return VIDMM_CPU_SSE2 | VIDMM_CPU_SSE41 | VIDMM_CPU_AVX | VIDMM_CPU_AVX2 | VIDMM_CPU_AVX512F |
               VIDMM_CPU_AVX512BW | VIDMM_CPU_AVX512VL;
    case VIDMM_BACKEND_NEON: return VIDMM_CPU_NEON;
    default: return ~0ull;
    }
}

bool vidmm_backend_supported(enum vidmm_backend b)
{
    if (b <= VIDMM_BACKEND_AUTO || b >= VIDMM_BACKEND_COUNT_ || backend_table(b) == NULL)
        return false;
    uint64_t need = backend_needs(b);
    return (vidmm_cpu_usable() & need) == need;
}

static const char *const backend_names[VIDMM_BACKEND_COUNT_] = {
    "auto", "scalar", "sse2", "avx2", "avx512", "neon",
};

const char *vidmm_backend_to_string(enum vidmm_backend b)
{
    if ((unsigned)b >= VIDMM_BACKEND_COUNT_)
        return NULL;
    return backend_names[b];
}

int vidmm_backend_from_string(const char *name)
{
    if (name == NULL)
        return VIDMM_E_INVALID_ARG;
    for (int b = 0; b < VIDMM_BACKEND_COUNT_; b++)
        if (strcasecmp(name, backend_names[b]) == 0)
            return b;
    return VIDMM_E_INVALID_ARG;
}

/* best_backend() walks the tables from the widest down. Supported and preferred are kept
 * apart: AVX-512 is supported wherever the CPU has it, preferred where the arch layer says the
 * wide registers do not cost a frequency drop (vidmm_arch_prefer_avx512()). */
static const struct vidmm_kernel_ops *best_backend(void)
{
    if (vidmm_backend_supported(VIDMM_BACKEND_AVX512) && vidmm_arch_prefer_avx512())
        return backend_table(VIDMM_BACKEND_AVX512);
    if (vidmm_backend_supported(VIDMM_BACKEND_AVX2))
        return backend_table(VIDMM_BACKEND_AVX2);
    if (vidmm_backend_supported(VIDMM_BACKEND_NEON))
        return backend_table(VIDMM_BACKEND_NEON);
    if (vidmm_backend_supported(VIDMM_BACKEND_SSE2))
        return backend_table(VIDMM_BACKEND_SSE2);
    return &vidmm_ops_scalar;
}

/* log_options() prints every option as resolved, once per choice of backend, so that a bug
 * report made with VIDMM_LOG_LEVEL=2 says how the library was configured. */
static void log_options(void)
{
    if (!vidmm_log_enabled(VIDMM_LOG_INFO))
        return;
    for (int o = 0; o < VIDMM_OPT_COUNT_; o++) {
        const char *str = vidmm_option_get_string((enum vidmm_option)o);
        bool is_string = o == VIDMM_OPT_BACKEND || o == VIDMM_OPT_DISABLE_CPU_FEATURES || o == VIDMM_OPT_WC_COPY ||
                         o == VIDMM_OPT_STREAM_LINEAR_ROWS;
        if (is_string)
            vidmm_log(VIDMM_LOG_INFO, "option %s=%s", vidmm_option_name((enum vidmm_option)o), str ? str : "(unset)");
        else if (str != NULL)
            vidmm_log(VIDMM_LOG_INFO, "option %s=%s", vidmm_option_name((enum vidmm_option)o), str);
        else
            vidmm_log(VIDMM_LOG_INFO, "option %s=%lld", vidmm_option_name((enum vidmm_option)o),
                      vidmm_option_get((enum vidmm_option)o));
    }
}

static const struct vidmm_kernel_ops *select_ops(void)
{
    const char *forced = vidmm_option_get_string(VIDMM_OPT_BACKEND);
    const struct vidmm_kernel_ops *ops;

    log_options();
    if (forced != NULL && strcasecmp(forced, "auto") != 0) {
        int b = vidmm_backend_from_string(forced);
        if (b < 0) {
            vidmm_log(VIDMM_LOG_WARN, "VIDMM_BACKEND='%s' is not a backend name; choosing automatically", forced);
        } else if (!vidmm_backend_supported((enum vidmm_backend)b)) {
            vidmm_log(VIDMM_LOG_WARN, "VIDMM_BACKEND='%s' is not supported by this CPU or build; choosing automatically",
                      forced);
        } else {
            ops = backend_table((enum vidmm_backend)b);
            vidmm_log(VIDMM_LOG_INFO, "backend %s (forced by VIDMM_BACKEND)", ops->name);
            return ops;
        }
    }
    ops = best_backend();
    vidmm_log(VIDMM_LOG_INFO, "backend %s", ops->name);
    return ops;
}

/* The choice is made under 'select_lock' so that it happens once: racing first callers would
 * otherwise each log the same warning. After that, the atomic pointer (read inline by
 * vidmm_ops_active() in kernel_ops.h) is the whole fast path. */
static pthread_mutex_t select_lock = PTHREAD_MUTEX_INITIALIZER;

const struct vidmm_kernel_ops *vidmm_ops_select(void)
{
    const struct vidmm_kernel_ops *ops;
    pthread_mutex_lock(&select_lock);
    ops = atomic_load_explicit(&vidmm_active_ops, memory_order_acquire);
    if (ops == NULL) {
        ops = select_ops();
        /* Pairs with the acquire load in vidmm_ops_active(); the tables are constants, so this
         * only orders the pointer itself, but keeps TSan's view exact. */
        atomic_store_explicit(&vidmm_active_ops, ops, memory_order_release);
    }
    pthread_mutex_unlock(&select_lock);
    return ops;
}

const struct vidmm_kernel_ops *vidmm_ops_get(enum vidmm_backend b)
{
    if (b == VIDMM_BACKEND_AUTO)
        return vidmm_ops_active();
    if (!vidmm_backend_supported(b))
        return NULL;
    return backend_table(b);
}

enum vidmm_backend vidmm_backend_active(void)
{
    return vidmm_ops_active()->backend;
}

const char *vidmm_backend_name(void)
{
    return vidmm_ops_active()->name;
}

void vidmm_kernels_reset(void)
{
    atomic_store_explicit(&usable_cache, 0, memory_order_relaxed);
    atomic_store_explicit(&vidmm_active_ops, NULL, memory_order_release);
    vidmm_wc_reset();
    vidmm_stream_linear_reset();
}

int vidmm_cpu_info(struct vidmm_cpu_info *info)
{
    /* The first published version of the struct ends after nt_threshold; a caller's smaller
     * (older) struct gets the fields it has, a larger (newer) one zeros past ours. */
    const size_t v1 = offsetof(struct vidmm_cpu_info, nt_threshold) + sizeof(info->nt_threshold);
    if (info == NULL || info->size < v1)
        return vidmm_refuse("vidmm_cpu_info", "info", "NULL, or size too small", "kernels.h");
    size_t size = info->size;
    struct vidmm_cpu_info full;
    memset(&full, 0, sizeof(full));
    full.cache_line = 64;
    vidmm_arch_cpu_describe(&full);
    full.features = vidmm_arch_cpu_features();
    full.usable = vidmm_cpu_usable();
    full.nt_threshold = vidmm_nt_threshold();
    if (vidmm_stream_linear_rows())
        full.store_policy |= VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS;
    memset(info, 0, size);
    memcpy(info, &full, size < sizeof(full) ? size : sizeof(full));
    info->size = size;
    return 0;
}
