/* SPDX-License-Identifier: MIT */
/* lib/kernels/copy.c - the public copy entry points: argument checks, the store policy of each
 * memory kind, the copy-to-WC calibration, and the fences. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "arch/arch.h"
#include "common/internal.h"
#include "kernels/kernel_ops.h"

/* ---------------------------------------------------------------------------------------------
 * Shared checks.
 * ------------------------------------------------------------------------------------------- */

/* The first published struct vidmm_kernel_opts has these three fields. */
#define OPTS_V0_SIZE (offsetof(struct vidmm_kernel_opts, strategy) + sizeof(enum vidmm_strategy))

int vidmm_read_kernel_opts(const struct vidmm_kernel_opts *opts, enum vidmm_backend *backend,
                     enum vidmm_strategy *strategy)
{
    *backend = VIDMM_BACKEND_AUTO;
    *strategy = VIDMM_STRATEGY_AUTO;
    if (opts == NULL)
        return 0;
    if (opts->size < OPTS_V0_SIZE)
        return vidmm_refuse("vidmm_kernel_opts", "size", "smaller than the first published struct", "kernels.h");
    if ((unsigned)opts->backend >= VIDMM_BACKEND_COUNT_)
        return vidmm_refuse("vidmm_kernel_opts", "backend", "unknown backend", "kernels.h");
    if ((unsigned)opts->strategy >= VIDMM_STRATEGY_COUNT_)
        return vidmm_refuse("vidmm_kernel_opts", "strategy", "unknown strategy", "kernels.h");
    *backend = opts->backend;
    *strategy = opts->strategy;
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The non-temporal threshold for cached destinations.
 * ------------------------------------------------------------------------------------------- */

static _Atomic size_t nt_threshold_cache; /* 0 = not resolved */

/* Below the last-level cache, ordinary stores win on write-back memory: the destination stays
 * cached for whoever reads it next, and streaming stores lose to memcpy at every size up to the
 * LLC (shared/perf-notes.md: NT loops at 35% of memcpy at 256 KiB, parity around 4 MiB). Above
 * it, the destination would be evicted anyway and streaming stores save the read-for-ownership.
 * Without a known LLC size, 8 MiB: a common LLC slice size.
 *
 * At most NT_THRESHOLD_MAX, whatever the LLC: one thread does not get a server's whole LLC. On
 * a 16-core Intel Xeon (Sapphire Rapids, 300 MiB L3, 2 MiB L2 a core; 2026-11-28,
 * ../shared/peers/peers isl tegra --sizes=4M,64M, one thread) the LLC as threshold left every
 * 64 MiB copy on ordinary stores: a streaming copy of 64 MiB took 7.0 ms against memcpy's
 * 10.5; Intel Y 64 MiB swizzles ran at 0.79-0.88x Mesa ISL and Tile4 at 0.84-0.88x, the
 * block-linear deswizzle took 13.7 ms (tegra_swizzle 11.1). With VIDMM_NT_THRESHOLD=32 MiB
 * they ran at 1.87-1.98x ISL, 2.0-2.3x ISL and 5.1 ms; the 4 MiB and 16 MiB rows were
 * unchanged, while an 8 MiB threshold made the 16 MiB swizzles 1.5x slower. 32 MiB is also
 * about the LLC of every smaller machine measured (Cascade Lake VM 33 MiB, Zen 3 / Zen 4
 * 32 MiB a CCX), where nothing changes. */
#define NT_THRESHOLD_MAX ((size_t)32 << 20)
static size_t nt_threshold_slow(void);

size_t vidmm_nt_threshold(void)
{
    size_t t = atomic_load_explicit(&nt_threshold_cache, memory_order_relaxed);
    return VIDMM_LIKELY(t != 0) ? t : nt_threshold_slow();
}

static size_t nt_threshold_slow(void)
{
    size_t t = atomic_load_explicit(&nt_threshold_cache, memory_order_relaxed);
    if (VIDMM_LIKELY(t != 0))
        return t;
    long long opt = vidmm_option_get(VIDMM_OPT_NT_THRESHOLD);
    if (opt > 0) {
        t = (size_t)opt;
    } else {
        struct vidmm_cpu_info info = { .size = sizeof(info) };
        vidmm_arch_cpu_describe(&info);
        t = info.llc_bytes ? (size_t)info.llc_bytes : (size_t)8 << 20;
        if (t > NT_THRESHOLD_MAX)
            t = NT_THRESHOLD_MAX;
    }
    atomic_store_explicit(&nt_threshold_cache, t, memory_order_relaxed);
    return t;
}

/* ---------------------------------------------------------------------------------------------
 * Copy to write-combined memory: which variant, chosen by measurement.
 * ------------------------------------------------------------------------------------------- */

/* The candidates: the streaming-store copy of each usable backend, and MOVDIR64B. */
enum wc_variant { WC_UNSET = 0, WC_NT_SSE2, WC_NT_AVX2, WC_NT_AVX512, WC_MOVDIR64B, WC_ORDINARY, WC_COUNT };

static const char *const wc_names[WC_COUNT] = {
    "unset", "nt-sse2", "nt-avx2", "nt-avx512", "movdir64b", "ordinary",
};

static const enum vidmm_backend wc_backend[WC_COUNT] = {
    VIDMM_BACKEND_AUTO, VIDMM_BACKEND_SSE2, VIDMM_BACKEND_AVX2, VIDMM_BACKEND_AVX512,
    VIDMM_BACKEND_AUTO, VIDMM_BACKEND_AUTO,
};

static atomic_int wc_choice;      /* enum wc_variant; WC_UNSET until chosen */
static atomic_flag wc_measuring = ATOMIC_FLAG_INIT;

void vidmm_wc_reset(void)
{
    atomic_store_explicit(&nt_threshold_cache, 0, memory_order_relaxed);
    atomic_store_explicit(&wc_choice, WC_UNSET, memory_order_relaxed);
}

static bool movdir64b_usable(void)
{
    return (vidmm_cpu_usable() & VIDMM_CPU_MOVDIR64B) != 0;
}

/* run_wc() performs variant 'v' without the final fence. Returns false if 'v' is unavailable. */
static bool run_wc(enum wc_variant v, void *dst, const void *src, size_t n)
{
    const struct vidmm_kernel_ops *ops;

    if (v == WC_MOVDIR64B)
        return movdir64b_usable() && vidmm_arch_copy_movdir64b(dst, src, n);
    if (v == WC_ORDINARY) {
        vidmm_ops_active()->copy(dst, src, n);
        return true;
    }
    ops = vidmm_ops_get(wc_backend[v]);
    if (ops == NULL)
        return false;
    ops->copy_nt(dst, src, n);
    return true;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static enum wc_variant nt_variant_of(const struct vidmm_kernel_ops *ops);

/* static_wc_choice() is the choice without measuring: MOVDIR64B where the CPU has it (it beat
 * the AVX-512 streaming loop by 13% at 4 MiB and 14% at 64 MiB on Sapphire Rapids,
 * shared/perf-notes.md), else the widest streaming-store table, else ordinary stores. */
static enum wc_variant static_wc_choice(void)
{
    const struct vidmm_kernel_ops *ops = vidmm_ops_active();
    if (movdir64b_usable() && ops->streaming)
        return WC_MOVDIR64B;
    return nt_variant_of(ops);
}

/* measure_wc_choice() times each candidate copying 8 MiB and returns the fastest. Before every
 * timed run both buffers are evicted from the caches (write-back-and-invalidate, about 0.4 ms
 * for 8 MiB), so that the source comes from DRAM as it does for the large copies where the
 * choice matters: with the source in the LLC the candidates tie, from DRAM they do not. On the
 * Zen 3 machine the project is measured on (2026-11-22), SSE2 and AVX2 streaming copies both ran
 * at 22 GB/s with a warm 4 MiB source, but cold the AVX2 loop led by 3-12% at 4-64 MiB
 * (8 MiB: 17.1 vs 15.8 GB/s) - and a warm 4 MiB calibration had picked SSE2 on noise.
 * Ordinary write-back memory stands in for WC memory: streaming stores bypass the caches either
 * way. Cost: 16 MiB of memory for the duration, about 3 candidates x 5 runs x 1 ms, once. */
static enum wc_variant measure_wc_choice(void)
{
    const size_t len = (size_t)8 << 20;
    unsigned char *buf = malloc(2 * len + 128);
    enum wc_variant best = static_wc_choice();
    uint64_t best_ns = UINT64_MAX;

    if (buf == NULL)
        return best;
    /* Both 64-byte aligned, as the sources of large uploads usually are: malloc() gives 16-byte
     * alignment, which splits every other 32-byte load across two lines and handicaps the wider
     * loops in a way that real, aligned sources would not see. */
    unsigned char *src = (unsigned char *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
    unsigned char *dst = src + len;
    memset(src, 0x5a, len);
    memset(dst, 0, len);     /* fault the pages in before timing */
    /* The static choice (the widest loop, or MOVDIR64B) is the incumbent: another candidate
     * must beat it by 6%. On the shared machine the project is measured on, repeated
     * calibrations of the same two loops swung by up to 5%, while long benchmark runs ranked
     * them consistently; a smaller margin let noise flip the choice from run to run. */
    enum wc_variant order[WC_COUNT];
    int count = 0;
    order[count++] = best;
    for (int v = WC_NT_SSE2; v <= WC_MOVDIR64B; v++)
        if ((enum wc_variant)v != best)
            order[count++] = (enum wc_variant)v;
    /* Round robin over the candidates, best of five each, so that drift in the machine's
     * speed (other tenants, frequency) hits every candidate alike. */
    uint64_t t_best[WC_COUNT];
    for (int i = 0; i < count; i++)
        t_best[i] = UINT64_MAX;
    for (int rep = 0; rep < 5; rep++) {
        for (int i = 0; i < count; i++) {
            /* Unsupported where the CPU has no flush instruction: then the runs are warm. */
            (void)vidmm_flush(src, len, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
            (void)vidmm_flush(dst, len, VIDMM_FLUSH_WRITEBACK_INVALIDATE);
            uint64_t t0 = now_ns();
            if (!run_wc(order[i], dst, src, len))
                continue;
            vidmm_arch_store_fence();
            uint64_t t = now_ns() - t0;
            if (t < t_best[i])
                t_best[i] = t;
        }
    }
    for (int i = 0; i < count; i++) {
        if (t_best[i] == UINT64_MAX)
            continue;
        vidmm_log(VIDMM_LOG_DEBUG, "copy-to-WC calibration: %s %.2f GB/s", wc_names[order[i]],
                  (double)len / (double)t_best[i]);
        if (best_ns == UINT64_MAX || t_best[i] * 106 < best_ns * 100) {
            best_ns = t_best[i];
            best = order[i];
        }
    }
    free(buf);
    return best;
}

/* nt_variant_of() is the streaming copy of table 'ops' (ordinary stores when it has none). */
static enum wc_variant nt_variant_of(const struct vidmm_kernel_ops *ops)
{
    switch (ops->backend) {
    case VIDMM_BACKEND_AVX512: return WC_NT_AVX512;
    case VIDMM_BACKEND_AVX2: return WC_NT_AVX2;
    case VIDMM_BACKEND_SSE2: return WC_NT_SSE2;
    default: return WC_ORDINARY;
    }
}

/* wc_variant() resolves the copy-to-WC choice: VIDMM_WC_COPY, else a forced backend's own
 * streaming copy (a forced backend means "run this table", so nothing is measured across
 * tables), else the measurement (VIDMM_CALIBRATE=0: the static choice). While one thread
 * measures, others use the static choice rather than wait. */
static enum wc_variant wc_variant(void)
{
    int v = atomic_load_explicit(&wc_choice, memory_order_relaxed);
    if (VIDMM_LIKELY(v != WC_UNSET))
        return (enum wc_variant)v;

    const char *forced = vidmm_option_get_string(VIDMM_OPT_WC_COPY);
    const char *forced_backend = vidmm_option_get_string(VIDMM_OPT_BACKEND);
    const struct vidmm_kernel_ops *active = vidmm_ops_active();
    enum wc_variant choice;

    if (forced != NULL && strcmp(forced, "auto") != 0) {
        if (strcmp(forced, "movdir64b") == 0 && movdir64b_usable()) {
            choice = WC_MOVDIR64B;
        } else {
            if (strcmp(forced, "nt") != 0)
                vidmm_log(VIDMM_LOG_WARN, "VIDMM_WC_COPY='%s' is not available here (auto|nt|movdir64b); using nt",
                          forced);
            choice = nt_variant_of(active);
        }
    } else if (forced_backend != NULL && strcmp(forced_backend, "auto") != 0) {
        choice = nt_variant_of(active);
    } else if (!vidmm_option_get(VIDMM_OPT_CALIBRATE)) {
        choice = static_wc_choice();
    } else {
        if (atomic_flag_test_and_set_explicit(&wc_measuring, memory_order_acquire))
            return static_wc_choice();
        choice = measure_wc_choice();
        atomic_flag_clear_explicit(&wc_measuring, memory_order_release);
        vidmm_log(VIDMM_LOG_INFO, "copy to write-combined memory: %s (measured)", wc_names[choice]);
    }
    atomic_store_explicit(&wc_choice, (int)choice, memory_order_relaxed);
    return choice;
}

const char *vidmm_wc_copy_variant(void)
{
    return wc_names[wc_variant()];
}

/* ---------------------------------------------------------------------------------------------
 * The entry points.
 * ------------------------------------------------------------------------------------------- */

static bool overlaps(const void *a, const void *b, size_t n)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y ? y - x < n : x - y < n;
}

/* writeback_edges() writes back the partial first and last lines of [dst, dst + n), which a
 * streaming copy wrote with ordinary stores, so that a non-coherent device sees them too. */
static void writeback_edges(void *dst, size_t n)
{
    uintptr_t d = (uintptr_t)dst, end = d + n;
    uintptr_t first_full = (d + 63) & ~(uintptr_t)63, last_full = end & ~(uintptr_t)63;

    if (first_full >= last_full) { /* no whole line: the range is all edges */
        vidmm_flush(dst, n, VIDMM_FLUSH_WRITEBACK);
        return;
    }
    if (first_full != d)
        vidmm_flush(dst, first_full - d, VIDMM_FLUSH_WRITEBACK);
    if (last_full != end)
        vidmm_flush((void *)last_full, end - last_full, VIDMM_FLUSH_WRITEBACK);
}

void vidmm_finish_stores(void *dst, size_t n, enum vidmm_mem_kind kind, bool streamed)
{
    if (kind == VIDMM_MEM_NONCOHERENT) {
        /* vidmm_flush() fences before and after; nothing more to order. */
        if (streamed)
            writeback_edges(dst, n);
        else
            vidmm_flush(dst, n, VIDMM_FLUSH_WRITEBACK);
        return;
    }
    /* Streaming stores are weakly ordered and stores to WC memory sit in fill buffers: one store
     * fence makes them visible before whatever the caller stores next (a doorbell, a fence). */
    if (streamed || kind == VIDMM_MEM_WRITE_COMBINED)
        vidmm_arch_store_fence();
}

int vidmm_copy_ex(void *dst, const void *src, size_t n, enum vidmm_mem_kind kind,
                  const struct vidmm_kernel_opts *opts)
{
    enum vidmm_backend backend;
    enum vidmm_strategy strategy;
    const struct vidmm_kernel_ops *ops;
    bool streamed = false;
    int err;

    if ((err = vidmm_read_kernel_opts(opts, &backend, &strategy)) < 0)
        return err;
    if ((unsigned)kind >= VIDMM_MEM_KIND_COUNT_)
        return vidmm_refuse("vidmm_copy", "kind", "unknown memory kind", "kernels.h");
    if (!vidmm_range_ok(dst, n) || !vidmm_range_ok(src, n))
        return vidmm_refuse("vidmm_copy", !vidmm_range_ok(dst, n) ? "dst" : "src", "NULL or wrapping range", "kernels.h");
    ops = backend == VIDMM_BACKEND_AUTO ? vidmm_ops_active() : vidmm_ops_get(backend);
    if (ops == NULL)
        return VIDMM_E_UNSUPPORTED;
    if (strategy == VIDMM_STRATEGY_MOVDIR64B && !movdir64b_usable())
        return VIDMM_E_UNSUPPORTED;
    if (n == 0)
        return 0;
    if (overlaps(dst, src, n))
        return VIDMM_E_OVERLAP;

    if (strategy == VIDMM_STRATEGY_AUTO) {
        /* Cached memory takes streaming stores from the threshold up; a non-coherent
         * destination always does (one pass puts the data in memory, instead of a copy and then
         * a write-back of every line); write-combined memory must. */
        bool nt = kind != VIDMM_MEM_CACHED || n >= vidmm_nt_threshold();
        if (nt && backend == VIDMM_BACKEND_AUTO) {
            /* The streaming copy measured fastest on this CPU, whatever table it belongs to.
             * Its availability was checked when it was chosen; fall back to the table's own
             * rather than trust that blindly. */
            enum wc_variant v = wc_variant();
            if (run_wc(v, dst, src, n)) {
                streamed = v != WC_ORDINARY;
            } else {
                ops->copy_nt(dst, src, n);
                streamed = ops->streaming;
            }
            vidmm_finish_stores(dst, n, kind, streamed);
            return 0;
        }
        strategy = nt ? VIDMM_STRATEGY_NONTEMPORAL : VIDMM_STRATEGY_TEMPORAL;
    }

    switch (strategy) {
    case VIDMM_STRATEGY_NONTEMPORAL:
        ops->copy_nt(dst, src, n);
        streamed = ops->streaming;
        break;
    case VIDMM_STRATEGY_MOVDIR64B:
        if (!vidmm_arch_copy_movdir64b(dst, src, n))
            return VIDMM_E_UNSUPPORTED;
        streamed = true;
        break;
    case VIDMM_STRATEGY_STREAM_LOAD:
        ops->copy_stream(dst, src, n);
        break;
    case VIDMM_STRATEGY_LIBC:
        memcpy(dst, src, n);
        break;
    case VIDMM_STRATEGY_TEMPORAL:
    default:
        ops->copy(dst, src, n);
        break;
    }

    if (streamed || kind != VIDMM_MEM_CACHED)
        vidmm_finish_stores(dst, n, kind, streamed);
    return 0;
}

int vidmm_copy(void *dst, const void *src, size_t n, enum vidmm_mem_kind dst_kind)
{
    return vidmm_copy_ex(dst, src, n, dst_kind, NULL);
}

int vidmm_copy_to_wc(void *dst, const void *src, size_t n)
{
    return vidmm_copy_ex(dst, src, n, VIDMM_MEM_WRITE_COMBINED, NULL);
}

int vidmm_copy_from_wc(void *dst, const void *src, size_t n)
{
    static const struct vidmm_kernel_opts stream = {
        sizeof(struct vidmm_kernel_opts), VIDMM_BACKEND_AUTO, VIDMM_STRATEGY_STREAM_LOAD, 0
    };
    return vidmm_copy_ex(dst, src, n, VIDMM_MEM_CACHED, &stream);
}
