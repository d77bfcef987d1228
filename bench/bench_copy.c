/* SPDX-License-Identifier: MIT */
/* bench/bench_copy.c - the copy paths: to write-combined memory, from write-combined memory, to
 * cached and to non-coherent memory, per backend and variant, next to the C library's memcpy
 * and the bare copy loops of bench_ceiling.c, all through one timed loop.
 *
 * The machine has no device mapping, so "write-combined" buffers are ordinary write-back
 * memory: the kernels issue the stores they would issue to a WC mapping (streaming stores,
 * whole lines, one fence) and the figures are those of the stores, not of a PCIe BAR. */
#include "b_common.h"

#include <stdio.h>
#include <string.h>

/* One untimed call, to see whether the variant exists here and to check what it wrote. */
static int copy_once(const struct b_case *c, void *d, const void *s, size_t n)
{
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = c->backend_id;
    o.strategy = c->strategy;
    switch (c->call) {
    case B_CALL_COPY_EX: return vidmm_copy_ex(d, s, n, c->kind, &o);
    case B_CALL_COPY: return vidmm_copy(d, s, n, c->kind);
    case B_CALL_COPY_TO_WC: return vidmm_copy_to_wc(d, s, n);
    case B_CALL_COPY_FROM_WC: return vidmm_copy_from_wc(d, s, n);
    case B_CALL_MEMCPY: memcpy(d, s, n); return 0;
    case B_CALL_CEIL_NT_SSE2: b_ceil_nt_copy_sse2(d, s, n); return 0;
    case B_CALL_CEIL_NT_AVX2: b_ceil_nt_copy_avx2(d, s, n); return 0;
    case B_CALL_CEIL_NT_AVX512: b_ceil_nt_copy_avx512(d, s, n); return 0;
    case B_CALL_CEIL_MOVDIR64B: b_ceil_movdir64b_copy(d, s, n); return 0;
    default: return VIDMM_E_INVALID_ARG;
    }
}

static const char *unsupported_reason(const struct b_case *c)
{
    const char *why = b_backend_skip_reason(c->backend_id);
    if (why != NULL)
        return why;
    if (c->strategy == VIDMM_STRATEGY_MOVDIR64B)
        return "cpu lacks movdir64b";
    return "variant not offered by this backend (VIDMM_E_UNSUPPORTED)";
}

void b_copy_body(vbench_state *st, const void *arg)
{
    const struct b_case *c = arg;
    unsigned char *d = b_env.dst;
    const unsigned char *s = b_env.src;
    size_t n = c->bytes;
    const char *why = c->pre_skip;
    if (why == NULL)
        why = b_backend_skip_reason(c->backend_id);
    if (why == NULL)
        why = b_ceiling_skip_reason(c->call);
    if (why != NULL) {
        vbench_skip(st, why);
        return;
    }

    /* The destination is warm before anything is timed: the buffers were prefaulted at
     * start-up, and one untimed call writes it (and settles the caches as the timed calls will
     * find them). The first time, it is cleared before that call and checked after it. */
    bool first = b_first_run(c);
    if (first)
        memset(d, 0, n);
    int rc = copy_once(c, d, s, n);
    if (rc == VIDMM_E_UNSUPPORTED) {
        vbench_skip(st, unsupported_reason(c));
        return;
    }
    char msg[128];
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "returned %d (%s)", rc, vidmm_strerror(rc));
        vbench_fail(st, msg);
        return;
    }
    if (first && memcmp(d, s, n) != 0) {
        vbench_fail(st, "the destination differs from the source after a copy");
        return;
    }

    vbench_set_bytes_per_iteration(st, n);
    rc = 0;
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = c->backend_id;
    o.strategy = c->strategy;
    enum vidmm_mem_kind kind = c->kind;
    switch (c->call) {
    case B_CALL_COPY_EX: B_TIMED(st, rc, vidmm_copy_ex(d, s, n, kind, &o)); break;
    case B_CALL_COPY: B_TIMED(st, rc, vidmm_copy(d, s, n, kind)); break;
    case B_CALL_COPY_TO_WC: B_TIMED(st, rc, vidmm_copy_to_wc(d, s, n)); break;
    case B_CALL_COPY_FROM_WC: B_TIMED(st, rc, vidmm_copy_from_wc(d, s, n)); break;
    case B_CALL_MEMCPY: B_TIMED(st, rc, (memcpy(d, s, n), 0)); break;
    case B_CALL_CEIL_NT_SSE2: B_TIMED(st, rc, (b_ceil_nt_copy_sse2(d, s, n), 0)); break;
    case B_CALL_CEIL_NT_AVX2: B_TIMED(st, rc, (b_ceil_nt_copy_avx2(d, s, n), 0)); break;
    case B_CALL_CEIL_NT_AVX512: B_TIMED(st, rc, (b_ceil_nt_copy_avx512(d, s, n), 0)); break;
    case B_CALL_CEIL_MOVDIR64B: B_TIMED(st, rc, (b_ceil_movdir64b_copy(d, s, n), 0)); break;
    default: vbench_fail(st, "not a copy case"); return;
    }
    if (rc != 0)
        vbench_fail(st, "a timed call returned an error");
}

/* Adds one library copy case. */
static struct b_case *lib_copy(const char *path, const char *variant, enum vidmm_backend b, size_t bytes,
                               enum b_call call, enum vidmm_mem_kind kind, enum vidmm_strategy strategy)
{
    const char *bname = b == VIDMM_BACKEND_AUTO ? "auto" : vidmm_backend_to_string(b);
    struct b_case *c = b_case_add(path, variant, bname ? bname : "?", bytes, b_copy_body);
    c->call = call;
    c->kind = kind;
    c->backend_id = b;
    c->strategy = strategy;
    c->ref = B_REF_MEMCPY;
    b_ref_name(c->ref_name, sizeof(c->ref_name), c->ref, bytes);
    return c;
}

void b_copy_cases(size_t bytes)
{
    struct b_case *c = b_case_add("baseline", "memcpy", "libc", bytes, b_copy_body);
    c->call = B_CALL_MEMCPY;

    /* Copy to write-combined memory: each backend's streaming-store copy, MOVDIR64B, and what
     * the public entry point chose by calibration. Compared with the bare NT loop. */
    for (size_t i = 0; i < b_nbackends; i++) {
        c = lib_copy("copy_wc", "nt", b_backends[i], bytes, B_CALL_COPY_EX, VIDMM_MEM_WRITE_COMBINED,
                     VIDMM_STRATEGY_NONTEMPORAL);
        b_nt_ceiling_name(c->ceil_name, sizeof(c->ceil_name), b_backends[i], bytes);
    }
    c = lib_copy("copy_wc", "movdir64b", VIDMM_BACKEND_AUTO, bytes, B_CALL_COPY_EX, VIDMM_MEM_WRITE_COMBINED,
                 VIDMM_STRATEGY_MOVDIR64B);
    if (b_env.m.x86)
        snprintf(c->ceil_name, sizeof(c->ceil_name), "ceiling/direct_copy/movdir64b/%zu", bytes);
    c = lib_copy("copy_wc", "auto", VIDMM_BACKEND_AUTO, bytes, B_CALL_COPY_TO_WC, VIDMM_MEM_WRITE_COMBINED,
                 VIDMM_STRATEGY_AUTO);
    b_nt_ceiling_name(c->ceil_name, sizeof(c->ceil_name), VIDMM_BACKEND_AUTO, bytes);

    /* Copy from write-combined memory (streaming loads), per backend and the public entry. */
    for (size_t i = 0; i < b_nbackends; i++)
        lib_copy("copy_from_wc", "stream_load", b_backends[i], bytes, B_CALL_COPY_EX, VIDMM_MEM_CACHED,
                 VIDMM_STRATEGY_STREAM_LOAD);
    lib_copy("copy_from_wc", "auto", VIDMM_BACKEND_AUTO, bytes, B_CALL_COPY_FROM_WC, VIDMM_MEM_CACHED,
             VIDMM_STRATEGY_AUTO);

    /* General copy to cached memory: the policy (AUTO) and both store kinds forced, per backend;
     * the public entry; and the library's own LIBC strategy, whose ratio to the baseline shows
     * what the entry point's checks and dispatch cost. */
    static const struct { const char *name; enum vidmm_strategy s; } cached[] = {
        { "auto", VIDMM_STRATEGY_AUTO },
        { "temporal", VIDMM_STRATEGY_TEMPORAL },
        { "nontemporal", VIDMM_STRATEGY_NONTEMPORAL },
    };
    for (size_t i = 0; i < b_nbackends; i++)
        for (size_t j = 0; j < sizeof(cached) / sizeof(cached[0]); j++) {
            c = lib_copy("copy", cached[j].name, b_backends[i], bytes, B_CALL_COPY_EX, VIDMM_MEM_CACHED,
                         cached[j].s);
            if (cached[j].s == VIDMM_STRATEGY_NONTEMPORAL)
                b_nt_ceiling_name(c->ceil_name, sizeof(c->ceil_name), b_backends[i], bytes);
        }
    lib_copy("copy", "auto", VIDMM_BACKEND_AUTO, bytes, B_CALL_COPY, VIDMM_MEM_CACHED, VIDMM_STRATEGY_AUTO);
    lib_copy("copy", "libc", VIDMM_BACKEND_AUTO, bytes, B_CALL_COPY_EX, VIDMM_MEM_CACHED, VIDMM_STRATEGY_LIBC);

    /* Copy to non-coherent memory: the policy per backend and the public entry. */
    for (size_t i = 0; i < b_nbackends; i++) {
        c = lib_copy("copy_nc", "auto", b_backends[i], bytes, B_CALL_COPY_EX, VIDMM_MEM_NONCOHERENT,
                     VIDMM_STRATEGY_AUTO);
        b_nt_ceiling_name(c->ceil_name, sizeof(c->ceil_name), b_backends[i], bytes);
    }
    c = lib_copy("copy_nc", "auto", VIDMM_BACKEND_AUTO, bytes, B_CALL_COPY, VIDMM_MEM_NONCOHERENT,
                 VIDMM_STRATEGY_AUTO);
    b_nt_ceiling_name(c->ceil_name, sizeof(c->ceil_name), VIDMM_BACKEND_AUTO, bytes);
}
