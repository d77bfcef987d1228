/* SPDX-License-Identifier: MIT */
/* tests/common/t_helpers.h - what the Criterion suites share: the seed, a small PRNG, buffers
 * flush against guard pages, sentinel checks, the per-backend skip rule and a log recorder. */
#ifndef VIDMM_TESTS_T_HELPERS_H
#define VIDMM_TESTS_T_HELPERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "vidmm/vidmm.h"

/* ---------------------------------------------------------------------------------------------
 * Seed and PRNG. Every random test starts from t_seed(), which is VIDMM_TEST_SEED when set (any
 * base strtoull accepts) and a fixed value otherwise, so a failure replays exactly; the seed is
 * part of every failure message (T_CTX).
 * ------------------------------------------------------------------------------------------- */
unsigned long long t_seed(void);

struct t_rng {
    uint64_t state;
};

/* t_rng_init() seeds 'r' from t_seed() mixed with 'stream', so that two tests (or two backends
 * of one test) draw different but reproducible sequences. */
void t_rng_init(struct t_rng *r, uint64_t stream);
uint64_t t_rng_next(struct t_rng *r);
/* t_rng_below() is uniform in [0, bound); bound > 0. */
size_t t_rng_below(struct t_rng *r, size_t bound);
/* t_rng_len() draws a length in [lo, hi] whose logarithm is uniform, so small, medium and large
 * sizes all come up in a handful of draws. */
size_t t_rng_len(struct t_rng *r, size_t lo, size_t hi);
void t_rng_bytes(struct t_rng *r, void *p, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Guarded regions: [lo, hi) is readable and writable, the page before 'lo' and the page at
 * 'hi' are PROT_NONE, so a kernel that reads or writes one byte outside crashes the test.
 * Put a buffer at 'lo' to test its start against the leading guard, end it at 'hi' for the
 * trailing guard.
 * ------------------------------------------------------------------------------------------- */
struct t_region {
    unsigned char *lo, *hi;
    void *map;
    size_t map_len;
};

/* t_region_init() maps at least 'len' usable bytes (rounded up to pages). Fails the test when
 * the mapping fails. It also installs (once) a SIGSEGV/SIGBUS handler that prints the fault
 * address and the text of the last t_fault_context() before the test dies, so that a crash in
 * a guard-page run says which call crossed the guard. */
void t_region_init(struct t_region *g, size_t len);
void t_region_fini(struct t_region *g);
void t_fault_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---------------------------------------------------------------------------------------------
 * Byte checks. Each returns the index of the first offending byte, or -1.
 * ------------------------------------------------------------------------------------------- */
#define T_SENTINEL 0xE5u
ptrdiff_t t_find_not(const void *p, size_t n, unsigned char v);
ptrdiff_t t_find_diff(const void *a, const void *b, size_t n);
/* t_checksum() is a 64-bit FNV-1a hash: a cheap "did anything change" check. */
uint64_t t_checksum(const void *p, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Backends. t_require_backend() is called first by every per-backend test: it returns when
 * backend 'b' can run here and otherwise skips the test ("CPU lacks avx512", or "not built"),
 * never passes it. Before skipping it checks that the library agrees: vidmm_backend_supported()
 * must say no and a forced call must return VIDMM_E_UNSUPPORTED without writing. When the CPU
 * has the features and the backend is built, an unsupported answer fails the test.
 * ------------------------------------------------------------------------------------------- */
const char *t_backend_label(enum vidmm_backend b);
uint64_t t_backend_cpu_bits(enum vidmm_backend b);
bool t_backend_built(enum vidmm_backend b);
/* t_movdir64b_built() tells whether the library has its MOVDIR64B copy (VIDMM_SIMD=auto, x86). */
bool t_movdir64b_built(void);
/* t_arch_x86() tells whether the library detects the CPU with its x86 layer (lib/arch/x86): an
 * x86 build, not VIDMM_ARCH=generic, whose layer knows no CPU feature whatever the processor. */
bool t_arch_x86(void);
uint64_t t_cpu_usable(void);
void t_require_backend(enum vidmm_backend b);

struct vidmm_kernel_opts t_opts(enum vidmm_backend b, enum vidmm_strategy s);
const char *t_strategy_label(enum vidmm_strategy s);
const char *t_kind_label(enum vidmm_mem_kind k);

/* The four backends every kernel suite covers, one Criterion test each, so a missing one shows
 * as a skip. X(tag, enum) is expanded once per backend. */
#define T_FOR_EACH_BACKEND(X)          \
    X(scalar, VIDMM_BACKEND_SCALAR)    \
    X(sse2, VIDMM_BACKEND_SSE2)        \
    X(avx2, VIDMM_BACKEND_AVX2)        \
    X(avx512, VIDMM_BACKEND_AVX512)

/* ---------------------------------------------------------------------------------------------
 * Log recorder, for vidmm_set_log_fn(t_log_record, &log, level).
 * ------------------------------------------------------------------------------------------- */
struct t_log {
    atomic_int count[4]; /* per enum vidmm_log_level */
    atomic_int delay_ms; /* when > 0, the first message sleeps this long inside the hook */
    char first_warn[256];
    char first_debug[512]; /* the first VIDMM_LOG_DEBUG line: a refusal's field-and-rule line */
    atomic_int seen;
};

void t_log_reset(struct t_log *log);
void t_log_record(void *arg, enum vidmm_log_level level, const char *msg);

/* T_CTX is the tail of every failure message of a randomised or parameterised check. */
#define T_CTX_FMT " (seed=%llu; replay with VIDMM_TEST_SEED=%llu)"
#define T_CTX_ARGS t_seed(), t_seed()

#endif /* VIDMM_TESTS_T_HELPERS_H */
