/* SPDX-License-Identifier: MIT */
/* bench/b_common.h - what the benchmark files share: the case table, the buffers, the machine
 * description, and the helpers (b_*) every body uses. */
#ifndef VIDMM_BENCH_B_COMMON_H
#define VIDMM_BENCH_B_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "shim/vbench.h"
#include "vidmm/vidmm.h"

#define B_KiB ((size_t)1024)
#define B_MiB ((size_t)1024 * 1024)

/* The sizes every path is measured at: one L1-resident, one L2-resident, one inside the L3 of
 * most machines, and two well beyond any LLC (DRAM bandwidth). The 256 MiB copies need a
 * 256 MiB source and a 256 MiB destination. */
#define B_NSIZES 5
extern const size_t b_sizes[B_NSIZES];

/* Flush cases below this size flush several blocks of that size per timed group, so that the
 * two clock reads around a group (~40 ns) stay small beside a flush of 4 KiB (~0.2 us on
 * Sapphire Rapids, shared/perf-notes.md; ~0.4 us on the Zen 3 machine); 256 KiB of dirty blocks
 * still fits in the L2 of every x86 core of the last decade. */
#define B_FLUSH_GROUP_BYTES (256 * B_KiB)
#define B_FLUSH_MAX_BLOCKS 64

/* CLFLUSH costs ~150 ns per 64-byte line on Sapphire Rapids (shared/perf-notes.md, "Cache
 * maintenance"): a 256 MiB flush would be ~0.6 s per iteration, so quick runs stop CLFLUSH at
 * this size. (On the Zen 3 machine it measured ~7 ns per dirty line, not a problem there.) */
#define B_QUICK_CLFLUSH_MAX (4 * B_MiB)

/* B_MODE_SMOKE: every case of quick mode once, as briefly as it runs (ctest's bench_smoke), so that a
 * case that cannot run fails a test before it fails the main job; its figures mean nothing. */
enum b_mode { B_MODE_QUICK = 0, B_MODE_FULL = 1, B_MODE_TARGETS = 2, B_MODE_SMOKE = 3 };

/* What a case calls in its timed loop. */
enum b_call {
    B_CALL_COPY_EX,        /* vidmm_copy_ex(kind, {backend, strategy}) */
    B_CALL_COPY,           /* vidmm_copy(kind) */
    B_CALL_COPY_TO_WC,     /* vidmm_copy_to_wc() */
    B_CALL_COPY_FROM_WC,   /* vidmm_copy_from_wc() */
    B_CALL_MEMCPY,         /* the C library's memcpy */
    B_CALL_FILL_EX,        /* vidmm_fill32_ex(kind, {backend, strategy}) */
    B_CALL_FILL,           /* vidmm_fill32(kind) */
    B_CALL_MEMSET,         /* the C library's memset */
    B_CALL_FLUSH_EX,       /* vidmm_flush_ex(op, insn) */
    B_CALL_FLUSH,          /* vidmm_flush(op) */
    B_CALL_CEIL_NT_SSE2,   /* bare loops, bench_ceiling.c */
    B_CALL_CEIL_NT_AVX2,
    B_CALL_CEIL_NT_AVX512,
    B_CALL_CEIL_MOVDIR64B,
    B_CALL_CEIL_CLWB,
    B_CALL_CEIL_CLFLUSHOPT,
    B_CALL_CEIL_CLFLUSH,
    B_CALL_SWIZZLE_EX,         /* vidmm_swizzle_ex({backend}), bench_swizzle.c */
    B_CALL_SWIZZLE,            /* vidmm_swizzle() of a box */
    B_CALL_SWIZZLE_SURFACE,    /* vidmm_swizzle_surface() */
    B_CALL_DESWIZZLE_EX,       /* vidmm_deswizzle_ex({backend}) */
    B_CALL_DESWIZZLE,          /* vidmm_deswizzle() of a box */
    B_CALL_DESWIZZLE_SURFACE,  /* vidmm_deswizzle_surface() */
    B_CALL_PLAN_SWIZZLE,       /* vidmm_swizzle_plan_swizzle() of a box through a plan made once */
    B_CALL_PLAN_DESWIZZLE      /* vidmm_swizzle_plan_deswizzle() of a box */
};

/* Which same-run reference a case's "ratio_memcpy" / "ratio_memset" uses. */
enum b_ref { B_REF_NONE = 0, B_REF_MEMCPY = 1, B_REF_MEMSET = 2 };

#define B_NAME_MAX 96

/* One case: "path/variant/backend/bytes". */
struct b_case {
    char name[B_NAME_MAX];
    char path[24];
    char variant[24];
    char backend[16];
    size_t bytes;
    vbench_fn body;
    enum b_call call;
    enum vidmm_mem_kind kind;
    enum vidmm_backend backend_id;
    enum vidmm_strategy strategy;
    enum vidmm_flush_op op;
    enum vidmm_flush_insn insn;
    const char *pre_skip;          /* non-NULL: skip with this reason, never run */
    const char *skipped_here;      /* set by bench_main.c: known before the run not to run here
                                      (pre_skip, a backend or instruction the CPU lacks); the
                                      case is not registered, and the report lists it once */
    const void *spec;              /* what the body needs beyond these fields (bench_swizzle.c:
                                      the surface, layout and box), NULL otherwise */
    size_t buf_bytes;              /* bytes of src and dst the body uses, when more than 'bytes' */
    enum b_ref ref;
    char ref_name[B_NAME_MAX];     /* the memcpy/memset case of the same size, "" if none */
    char ceil_name[B_NAME_MAX];    /* the ceiling case, "" if none */
    int ref_case, ceil_case;       /* indexes of the above in the table, -1 if absent */
    double wall_case_s, wall_ref_s; /* --vbench_mode=wall (b_wall.c): the fastest burst of the
                                      case and of its reference, seconds a call; valid when
                                      wall_quads is not 0 */
    int wall_quads;                /* quads behind them, 0 outside wall mode */
    bool selected;                 /* registered with the shim */
    int id;                        /* shim id, -1 when not registered */
};

/* The machine and the library's choices, read once before any case runs. */
struct b_machine {
    struct vidmm_cpu_info cpu;       /* as the library describes it */
    bool x86;
    /* Our own CPUID reading (x86), for the bare loops, which must not depend on the library. */
    bool has_sse2, has_avx2, has_avx512f, has_movdir64b, has_clwb, has_clflushopt, has_clflush;
    unsigned line;                   /* cache line size for the bare flush loops */
    const char *active_backend;      /* vidmm_backend_name() */
    const char *wc_variant;          /* vidmm_wc_copy_variant() */
    const char *best_nt;             /* widest bare NT copy loop the CPU has: "avx512", ... */
    char feature_mismatch[160];      /* our CPUID vs the library's, "" when they agree */
};

struct b_env {
    enum b_mode mode;
    unsigned char *src, *dst;        /* prefaulted, page-aligned, 'cap' bytes each */
    size_t cap;
    unsigned char *tiled;            /* the swizzle cases' tiled surface, 'tiled_cap' bytes,
                                        prefaulted; NULL when no swizzle case runs */
    size_t tiled_cap;
    struct b_machine m;
};
extern struct b_env b_env;

/* ---------------------------------------------------------------------------------------------
 * The case table (b_common.c).
 * ------------------------------------------------------------------------------------------- */

/* b_case_add() appends a case named path/variant/backend/bytes running 'body' and returns it
 * for the caller to fill in. Aborts the program when the table is full (a bench bug). */
struct b_case *b_case_add(const char *path, const char *variant, const char *backend, size_t bytes,
                          vbench_fn body);
size_t b_case_count(void);
struct b_case *b_case_at(size_t i);
/* b_case_find() returns the index of the case called 'name', or -1. */
int b_case_find(const char *name);

/* b_mkdir_p() creates 'dir' and its missing parents (mode 0755), as mkdir -p. Returns 0, or -1
 * with errno. */
int b_mkdir_p(const char *dir);

/* b_now_s() reads CLOCK_MONOTONIC in seconds. */
double b_now_s(void);

/* b_median() sorts v[0..n) in place and returns its median (NAN when n is 0). */
double b_median(double *v, int n);

/* b_first_run() returns true the first time it is called for case 'c', false afterwards.
 * Google Benchmark calls a body several times per case (while it sizes the iteration count,
 * then once per repetition); the result check runs on the first call only. */
bool b_first_run(const struct b_case *c);

/* b_ref_name() writes the name of the memcpy or memset baseline case of 'bytes'. */
void b_ref_name(char *out, size_t cap, enum b_ref ref, size_t bytes);

/* The backends the cases sweep on this architecture (SCALAR first). */
extern const enum vidmm_backend b_backends[];
extern const size_t b_nbackends;

/* The bodies: bench_copy.c (copies, memcpy, bare copy loops), bench_fill.c (fills, memset),
 * bench_flush.c (flushes, bare flush loops). 'arg' is the struct b_case. */
void b_copy_body(vbench_state *st, const void *arg);
void b_fill_body(vbench_state *st, const void *arg);
void b_flush_body(vbench_state *st, const void *arg);
void b_swizzle_body(vbench_state *st, const void *arg);   /* bench_swizzle.c */
/* b_swz_ref_ratio() (bench_swizzle.c, swz_rounds()): the median over the rounds of swizzle case
 * 'name' of reference 'ref''s time over the case's - "ordinary" (the library's ordinary-store
 * copy of the same bytes) or "streaming" (its streaming copy) for a whole surface, "rows" (the
 * box's rows to or from a pitch-linear surface of the same pitch) for a box - or NAN with
 * '*why'; '*rounds' says how many. */
double b_swz_ref_ratio(const char *name, const char *ref, int *rounds, const char **why);

/* b_clflush_quick_skip() returns the skip reason of a CLFLUSH case of 'bytes' outside --full
 * mode (see B_QUICK_CLFLUSH_MAX), or NULL. */
const char *b_clflush_quick_skip(size_t bytes);

/* b_ceiling_skip_reason() returns why bare loop 'call' can't run here, or NULL.
 * b_nt_ceiling_name() writes the name of the bare NT copy loop to compare backend 'b' with: the
 * loop of the same ISA, else (scalar, AUTO) the widest the CPU has; "" when there is none. */
const char *b_ceiling_skip_reason(enum b_call call);
void b_nt_ceiling_name(char *out, size_t cap, enum vidmm_backend b, size_t bytes);

/* The case builders of each file; each adds its cases of size 'bytes'. */
void b_copy_cases(size_t bytes);
void b_fill_cases(size_t bytes);
void b_flush_cases(size_t bytes);
void b_ceiling_cases(size_t bytes);
/* Swizzle cases exist for 4 MiB and 64 MiB only (the latter adds the 64x64 boxes and their
 * memcpy baselines); other sizes add nothing. */
void b_swizzle_cases(size_t bytes);

/* ---------------------------------------------------------------------------------------------
 * Machine, buffers and small helpers (b_common.c, bench_ceiling.c).
 * ------------------------------------------------------------------------------------------- */

/* b_machine_init() fills b_env.m: the library's description and choices (this runs the
 * copy-to-WC calibration, so that it never runs inside a timed loop) and our own CPUID. */
void b_machine_init(void);
/* b_cpuid_probe() fills the has_* fields and 'line' of 'm' from CPUID (bench_ceiling.c). */
void b_cpuid_probe(struct b_machine *m);

/* b_buffers_alloc() maps the source and destination buffers, 'cap' bytes each, faults every
 * page in and writes a pattern into the source. Returns 0 or -1 (message printed). */
int b_buffers_alloc(size_t cap);
/* b_swizzle_alloc() maps b_env.tiled, as large as the largest tiled surface of the selected
 * swizzle cases (none: nothing is mapped). Returns 0 or -1 (message printed). */
int b_swizzle_alloc(void);
/* b_map_prefaulted() maps 'n' bytes of anonymous memory with every page written once, or
 * returns NULL. */
void *b_map_prefaulted(size_t n);

/* b_backend_skip_reason() returns why backend 'b' can't run here ("cpu lacks avx512"), or
 * NULL when it can. */
const char *b_backend_skip_reason(enum vidmm_backend b);

/* b_dirty() writes one 8-byte word into every line of [p, p + n) with ordinary stores, so that
 * every line is dirty (and, up to the cache size, cached) before a flush is timed. 'seq'
 * changes the value each time. */
void b_dirty(void *p, size_t n, uint64_t seq);

/* b_clobber() tells the compiler that memory may have been read and written, so a repeated
 * copy or fill into the same buffer is never merged or dropped. */
static inline void b_clobber(void)
{
    __asm__ __volatile__("" ::: "memory");
}

/* B_TIMED() runs 'expr' (an int: 0 or a VIDMM_E_* code, OR-ed into 'rc') once per iteration
 * of the keep-running loop. Every call site gets its own loop, so every case - the library's
 * and the baselines alike - pays one call per iteration and nothing more: a 4 KiB copy is
 * ~50 ns, and a switch or an indirect call inside the loop would be a visible share of it. */
#define B_TIMED(st, rc, expr)                                  \
    do {                                                       \
        uint64_t n_, i_;                                       \
        while (vbench_keep_running_batch((st), &n_))           \
            for (i_ = 0; i_ < n_; i_++) {                      \
                (rc) |= (expr);                                \
                b_clobber();                                   \
            }                                                  \
    } while (0)

/* The bare loops of bench_ceiling.c. Each requires the CPU feature it is named after (checked by
 * the caller with b_env.m), 64-byte aligned pointers and n a multiple of 256. */
void b_ceil_nt_copy_sse2(void *dst, const void *src, size_t n);
void b_ceil_nt_copy_avx2(void *dst, const void *src, size_t n);
void b_ceil_nt_copy_avx512(void *dst, const void *src, size_t n);
void b_ceil_movdir64b_copy(void *dst, const void *src, size_t n);
void b_ceil_clwb(void *p, size_t n);
void b_ceil_clflushopt(void *p, size_t n);
void b_ceil_clflush(void *p, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Report (b_report.c).
 * ------------------------------------------------------------------------------------------- */

struct b_run_info {
    const char *commit;
    const char *date;            /* UTC, ISO 8601 */
    const char *mode;            /* "quick", "full", "targets", "wall" */
    const char *gbench_json;     /* path of Google Benchmark's JSON, "" if none */
    const char *gbench_args;     /* the flags handed to Google Benchmark */
    double wall_s;               /* wall time of vbench_run() (wall mode: of b_wall_run()) */
};

/* b_target_cases() marks 'selected' on the cases the target table needs (--vbench_mode=targets). */
void b_target_cases(void);
/* --vbench_mode=wall (b_wall.c): b_wall_config() sets the time per case and the least burst
 * length, in seconds (returns -1 when out of range); b_wall_run() times every registered case
 * that has a registered reference in bursts interleaved with it, sets its wall_* fields, writes
 * every burst to 'bursts_tsv', and returns how many cases it measured (-1: the file cannot be
 * written). */
int b_wall_config(double case_s, double burst_s);
double b_wall_case_s(void);
double b_wall_burst_s(void);
int b_wall_run(bool progress, const char *bursts_tsv);
/* b_wall_peer() makes the wall run take turns with another process (b_wall.c): 'spec' is
 * "IN:OUT", two FIFOs (the other's OUT and IN), 'lead' says which side this is. Returns 0, or
 * -1 (printed). */
int b_wall_peer(const char *spec, bool lead);

/* b_report_print() prints the table of every case and the target table to stdout. */
void b_report_print(const struct b_run_info *run);
/* b_report_write_summary() writes the summary JSON to 'path'. Returns 0 or -1 (printed). */
int b_report_write_summary(const char *path, const struct b_run_info *run);
/* b_report_failed() returns the number of cases that failed (not skipped). */
int b_report_failed(void);

#endif /* VIDMM_BENCH_B_COMMON_H */
