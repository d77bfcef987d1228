/* SPDX-License-Identifier: MIT */
/* include/vidmm/kernels.h - stateless data-movement kernels: copy, fill, cache maintenance,
 * with the SIMD backend chosen at run time. */
#ifndef VIDMM_KERNELS_H
#define VIDMM_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "api.h"
#include "common.h"

VIDMM_BEGIN_DECLS

/* ---------------------------------------------------------------------------------------------
 * Backends. One table of kernels per backend; the best one the CPU and OS support is chosen on
 * the first kernel call (VIDMM_BACKEND and VIDMM_DISABLE_CPU_FEATURES override it).
 * ------------------------------------------------------------------------------------------- */
enum vidmm_backend {
    VIDMM_BACKEND_AUTO = 0,   /* in an options struct: whatever the dispatcher chose */
    VIDMM_BACKEND_SCALAR = 1, /* portable C, the reference every other backend is tested against */
    VIDMM_BACKEND_SSE2 = 2,
    VIDMM_BACKEND_AVX2 = 3,
    VIDMM_BACKEND_AVX512 = 4, /* AVX-512 F + BW + VL */
    VIDMM_BACKEND_NEON = 5,
    VIDMM_BACKEND_COUNT_ = 6
};

/* vidmm_backend_active() returns the backend the dispatcher chose (never AUTO); the first call
 * makes the choice. vidmm_backend_name() returns its name ("avx2").
 * Thread safety: safe from any thread; every thread sees the same choice. Can't fail. */
VIDMM_API enum vidmm_backend vidmm_backend_active(void);
VIDMM_API const char *vidmm_backend_name(void);

/* vidmm_backend_supported() tells whether backend 'b' is compiled in and its instructions are
 * supported by the CPU and the OS (and not masked by VIDMM_DISABLE_CPU_FEATURES). SCALAR is
 * always supported; AUTO and unknown values are not. Can't fail. */
VIDMM_API bool vidmm_backend_supported(enum vidmm_backend b);

/* vidmm_backend_to_string() names 'b' ("scalar", ..., "auto"); NULL for unknown values.
 * vidmm_backend_from_string() parses such a name; returns the backend or VIDMM_E_INVALID_ARG. */
VIDMM_API const char *vidmm_backend_to_string(enum vidmm_backend b);
VIDMM_API int vidmm_backend_from_string(const char *name);

/* vidmm_kernels_reset() forgets the backend choice, the copy-to-WC calibration and the
 * non-temporal threshold, so the next kernel call chooses again from the current options (tests
 * and benchmarks that change options with vidmm_option_set() use it).
 * Thread safety: no kernel call may run concurrently. Can't fail. */
VIDMM_API void vidmm_kernels_reset(void);

/* ---------------------------------------------------------------------------------------------
 * Copy and fill.
 * ------------------------------------------------------------------------------------------- */

/* What kind of memory a destination is. The kind decides the stores, never the result. */
enum vidmm_mem_kind {
    /* Ordinary write-back memory the CPU and the device see coherently. Temporal stores below
     * the non-temporal threshold (the last-level cache size, at most 32 MiB, by default;
     * VIDMM_NT_THRESHOLD),
     * non-temporal stores at or above it. */
    VIDMM_MEM_CACHED = 0,
    /* Write-back memory a device reads without snooping the CPU caches (a non-coherent
     * segment). On return every byte written has reached memory: non-temporal stores, then the
     * partial first and last lines written back, then a store fence. */
    VIDMM_MEM_NONCOHERENT = 1,
    /* Write-combined memory (a device mapping). Whole 64-byte lines of non-temporal stores (or
     * MOVDIR64B where measured faster), the destination never read, one store fence at the end. */
    VIDMM_MEM_WRITE_COMBINED = 2,
    VIDMM_MEM_KIND_COUNT_ = 3
};

/* Forcing a particular variant, for tests, benchmarks and users who want to compare. */
enum vidmm_strategy {
    VIDMM_STRATEGY_AUTO = 0,         /* the policy of the memory kind (the normal case) */
    VIDMM_STRATEGY_TEMPORAL = 1,     /* ordinary stores */
    VIDMM_STRATEGY_NONTEMPORAL = 2,  /* streaming stores + store fence */
    VIDMM_STRATEGY_MOVDIR64B = 3,    /* 64-byte direct stores (x86 MOVDIR64B) + store fence */
    VIDMM_STRATEGY_STREAM_LOAD = 4,  /* streaming loads (MOVNTDQA) from a write-combined source */
    VIDMM_STRATEGY_LIBC = 5,         /* the C library's memcpy/memset (a baseline) */
    VIDMM_STRATEGY_COUNT_ = 6
};

/* Options of the _ex calls. Initialise with VIDMM_KERNEL_OPTS_INIT or set 'size' to
 * sizeof(struct vidmm_kernel_opts); fields may be appended in later versions. */
struct vidmm_kernel_opts {
    size_t size;                  /* sizeof(struct vidmm_kernel_opts) */
    enum vidmm_backend backend;   /* AUTO, or one for which vidmm_backend_supported() is true */
    enum vidmm_strategy strategy; /* AUTO, or a variant this call and backend offer */
    /* Since 0.6 (a caller built against 0.5 passes the smaller size: flags 0). */
    uint32_t flags;               /* VIDMM_PLAN_*: options of vidmm_swizzle_plan_create(); the
                                     copy, fill and one-shot swizzle calls ignore them */
};
#define VIDMM_KERNEL_OPTS_INIT { sizeof(struct vidmm_kernel_opts), VIDMM_BACKEND_AUTO, VIDMM_STRATEGY_AUTO, 0 }

/* vidmm_kernel_opts.flags: a measured swizzle plan (include/vidmm/swizzle.h, "Measured plans"). */
#define VIDMM_PLAN_MEASURE (1u << 0)

/* vidmm_copy() copies 'n' bytes from 'src' to 'dst', whose memory is of kind 'dst_kind'.
 * Returns: 0, or VIDMM_E_INVALID_ARG (NULL pointer with n > 0, unknown kind, range wrapping the
 * address space), VIDMM_E_OVERLAP (the ranges overlap). On error nothing is written.
 * Thread safety: safe from any thread. pre: 'src' is readable and 'dst' writable for 'n' bytes. */
VIDMM_API int vidmm_copy(void *dst, const void *src, size_t n, enum vidmm_mem_kind dst_kind);

/* vidmm_copy_to_wc() is vidmm_copy(dst, src, n, VIDMM_MEM_WRITE_COMBINED). */
VIDMM_API int vidmm_copy_to_wc(void *dst, const void *src, size_t n);

/* vidmm_copy_from_wc() copies 'n' bytes out of write-combined memory 'src' into cached memory
 * 'dst', reading 'src' with streaming loads (MOVNTDQA) where the backend has them (SSE4.1 and
 * later; the SSE2 and scalar backends use ordinary loads). Returns as vidmm_copy(). A chosen
 * backend's version: vidmm_copy_ex(dst, src, n, VIDMM_MEM_CACHED, {backend, STREAM_LOAD}). */
VIDMM_API int vidmm_copy_from_wc(void *dst, const void *src, size_t n);

/* vidmm_copy_ex() is vidmm_copy() with a forced backend and/or variant.
 * Returns: as vidmm_copy(), and VIDMM_E_INVALID_ARG (bad 'opts'), VIDMM_E_UNSUPPORTED (the
 * backend is not supported here, or the strategy is not available: MOVDIR64B without the
 * instruction). 'opts' may be NULL (all AUTO). Strategy TEMPORAL or NONTEMPORAL overrides the
 * stores of the kind; NONCOHERENT still writes back what temporal stores left in the cache. */
VIDMM_API int vidmm_copy_ex(void *dst, const void *src, size_t n, enum vidmm_mem_kind dst_kind,
                            const struct vidmm_kernel_opts *opts);

/* vidmm_fill32() stores the 32-bit 'pattern' repeatedly over 'n' bytes at 'dst' (a paging FILL:
 * RtlFillMemoryUlong semantics, byte i of the range is byte i % 4 of the little-endian pattern),
 * with the stores 'dst_kind' calls for. 'dst' may have any alignment.
 * Returns: 0, or VIDMM_E_INVALID_ARG (NULL with n > 0, n not a multiple of 4, unknown kind,
 * range wrapping the address space). On error nothing is written. */
VIDMM_API int vidmm_fill32(void *dst, uint32_t pattern, size_t n, enum vidmm_mem_kind dst_kind);

/* vidmm_fill32_ex() is vidmm_fill32() with a forced backend and/or variant (TEMPORAL,
 * NONTEMPORAL or LIBC - the latter only for byte-uniform patterns). Returns as vidmm_copy_ex(). */
VIDMM_API int vidmm_fill32_ex(void *dst, uint32_t pattern, size_t n, enum vidmm_mem_kind dst_kind,
                              const struct vidmm_kernel_opts *opts);

/* ---------------------------------------------------------------------------------------------
 * Cache maintenance, for handing memory between the CPU and a device that does not snoop.
 *
 * WRITEBACK (CPU wrote, device will read): store fence, write back every line of the range
 *   (CLWB, else CLFLUSHOPT, else CLFLUSH), store fence. On return the data is in memory and
 *   the lines may stay cached (CLWB) or not. Ring the device's doorbell after the call.
 * WRITEBACK_INVALIDATE (both sides may touch it next): store fence, CLFLUSHOPT (else CLFLUSH)
 *   every line, full fence. On return the data is in memory and no line is cached.
 * INVALIDATE (device wrote, CPU will read): full fence (orders the caller's read of the
 *   device's completion signal before the flush), CLFLUSHOPT (else CLFLUSH) every line, full
 *   fence (no later load is served from a stale line). x86 has no user-mode discard, so a line
 *   the CPU dirtied is written back, not dropped: callers must not rely on losing CPU writes.
 * Every line overlapping [p, p + n) is maintained, whatever the alignment of 'p' and 'n'; the
 * line size is read from the CPU.
 * ------------------------------------------------------------------------------------------- */
enum vidmm_flush_op {
    VIDMM_FLUSH_WRITEBACK = 1,
    VIDMM_FLUSH_WRITEBACK_INVALIDATE = 2,
    VIDMM_FLUSH_INVALIDATE = 3
};

/* The instruction a flush uses, for vidmm_flush_ex() and vidmm_flush_insn(). */
enum vidmm_flush_insn {
    VIDMM_FLUSH_INSN_AUTO = 0,
    VIDMM_FLUSH_INSN_CLWB = 1,       /* write back, the line may stay (WRITEBACK only) */
    VIDMM_FLUSH_INSN_CLFLUSHOPT = 2, /* write back and invalidate, weakly ordered */
    VIDMM_FLUSH_INSN_CLFLUSH = 3,    /* write back and invalidate, serialising (slow) */
    VIDMM_FLUSH_INSN_DC_CVAC = 4,    /* Arm: clean to the point of coherency */
    VIDMM_FLUSH_INSN_DC_CIVAC = 5,   /* Arm: clean and invalidate */
    VIDMM_FLUSH_INSN_COUNT_ = 6
};

/* vidmm_flush() maintains the cache lines of [p, p + n) with operation 'op'. n == 0 does nothing
 * (and accepts p == NULL). The contents of the range never change.
 * Returns: 0, or VIDMM_E_INVALID_ARG (NULL with n > 0, unknown op, range wrapping the address
 * space), VIDMM_E_UNSUPPORTED (no cache-maintenance instruction on this CPU or architecture).
 * Thread safety: safe from any thread. pre: the range is mapped (readable). */
VIDMM_API int vidmm_flush(void *p, size_t n, enum vidmm_flush_op op);

/* vidmm_flush_ex() is vidmm_flush() with the instruction forced ('insn'; AUTO = as vidmm_flush).
 * Returns as vidmm_flush(), and VIDMM_E_UNSUPPORTED when the CPU lacks 'insn' or 'insn' cannot
 * perform 'op' (CLWB does not invalidate). */
VIDMM_API int vidmm_flush_ex(void *p, size_t n, enum vidmm_flush_op op, enum vidmm_flush_insn insn);

/* vidmm_flush_insn() returns the instruction vidmm_flush() uses for 'op' on this CPU
 * (honouring VIDMM_NO_CLWB / VIDMM_NO_CLFLUSHOPT), or AUTO when none is available or 'op' is
 * unknown. vidmm_flush_insn_name() names an instruction ("clwb"). Can't fail. */
VIDMM_API enum vidmm_flush_insn vidmm_flush_insn(enum vidmm_flush_op op);
VIDMM_API const char *vidmm_flush_insn_name(enum vidmm_flush_insn insn);

/* ---------------------------------------------------------------------------------------------
 * What the machine offers, for tools and bug reports.
 * ------------------------------------------------------------------------------------------- */
struct vidmm_cpu_info {
    size_t size;                 /* sizeof(struct vidmm_cpu_info), set by the caller */
    char vendor[16];             /* "GenuineIntel", "AuthenticAMD", ... ("" when unknown) */
    char model[64];              /* brand string, trimmed */
    uint64_t features;           /* VIDMM_CPU_* bits the CPU and OS support (before masking) */
    uint64_t usable;             /* the same after VIDMM_DISABLE_CPU_FEATURES */
    uint32_t cache_line;         /* bytes flushed per line (CPUID), 64 when unknown */
    uint64_t llc_bytes;          /* last-level cache size, 0 when unknown */
    uint64_t nt_threshold;       /* the copy/fill temporal -> non-temporal switch in use */
    /* Since 0.2 (a caller built against 0.1 passes the smaller size and gets the fields above). */
    uint64_t l2_bytes;           /* the second-level cache (per core), 0 when unknown */
    uint32_t store_policy;       /* VIDMM_STORE_POLICY_* the swizzle walks follow on this CPU */
};

/* vidmm_cpu_info().store_policy: choices the swizzle walks make from what this machine measured.
 * Set: a deswizzle larger than nt_threshold writes the block-linear GOB's linear rows with
 * streaming stores, whole lines; clear: ordinary stores. Measured once per process, on a cold
 * 2 MiB band, at the first call that needs it (about 5 ms; the CPU kinds disagree: streaming won
 * on a Cascade Lake and a Zen 4, lost on a Zen 3, lib/kernels/swizzle_tune.c), unless
 * VIDMM_STREAM_LINEAR_ROWS=on|off forces it; VIDMM_CALIBRATE=0 takes a fixed guess instead
 * (streaming on Intel). VIDMM_STRATEGY_NONTEMPORAL asks for streaming stores on any CPU. */
#define VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS (1u << 0)

#define VIDMM_CPU_SSE2        (1ull << 0)
#define VIDMM_CPU_SSE41       (1ull << 1)
#define VIDMM_CPU_AVX         (1ull << 2)
#define VIDMM_CPU_AVX2        (1ull << 3)
#define VIDMM_CPU_AVX512F     (1ull << 4)
#define VIDMM_CPU_AVX512BW    (1ull << 5)
#define VIDMM_CPU_AVX512VL    (1ull << 6)
#define VIDMM_CPU_AVX512VBMI2 (1ull << 7)
#define VIDMM_CPU_BMI2        (1ull << 8)
#define VIDMM_CPU_ERMS        (1ull << 9)
#define VIDMM_CPU_FSRM        (1ull << 10)
#define VIDMM_CPU_CLFLUSH     (1ull << 11)
#define VIDMM_CPU_CLFLUSHOPT  (1ull << 12)
#define VIDMM_CPU_CLWB        (1ull << 13)
#define VIDMM_CPU_MOVDIR64B   (1ull << 14)
#define VIDMM_CPU_NEON        (1ull << 15)

/* vidmm_cpu_info() fills '*info' (whose 'size' the caller set).
 * Returns: 0, or VIDMM_E_INVALID_ARG (NULL, or 'size' smaller than the first version). */
VIDMM_API int vidmm_cpu_info(struct vidmm_cpu_info *info);

/* vidmm_cpu_feature_name() names feature bit 'bit' ("avx2"); NULL for bits without a name. */
VIDMM_API const char *vidmm_cpu_feature_name(uint64_t bit);

/* vidmm_wc_copy_variant() names the copy-to-WC variant in use ("nt-avx2", "movdir64b"); the
 * first call may run the calibration (a few milliseconds). Can't fail. */
VIDMM_API const char *vidmm_wc_copy_variant(void);

VIDMM_END_DECLS

#endif /* VIDMM_KERNELS_H */
