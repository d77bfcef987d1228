/* SPDX-License-Identifier: MIT */
/* bench/bench_fill.c - the 32-bit pattern fill (a paging FILL) per backend, temporal and
 * non-temporal, and the public entry point, next to the C library's memset of the same bytes. */
#include "b_common.h"

#include <stdio.h>
#include <string.h>

/* A pattern whose four bytes differ, so no fill can take a byte-wise (memset) shortcut that a
 * FILL of an arbitrary 32-bit value could not. memset writes the same number of bytes. */
#define B_FILL_PATTERN 0x3cc3a55au
#define B_MEMSET_BYTE 0x5a

static int fill_once(const struct b_case *c, void *d, size_t n)
{
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = c->backend_id;
    o.strategy = c->strategy;
    switch (c->call) {
    case B_CALL_FILL_EX: return vidmm_fill32_ex(d, B_FILL_PATTERN, n, c->kind, &o);
    case B_CALL_FILL: return vidmm_fill32(d, B_FILL_PATTERN, n, c->kind);
    case B_CALL_MEMSET: memset(d, B_MEMSET_BYTE, n); return 0;
    default: return VIDMM_E_INVALID_ARG;
    }
}

/* Checks that [d, d + n) holds the little-endian pattern (or the memset byte). */
static bool fill_ok(const struct b_case *c, const unsigned char *d, size_t n)
{
    unsigned char block[256];
    if (c->call == B_CALL_MEMSET) {
        memset(block, B_MEMSET_BYTE, sizeof(block));
    } else {
        for (size_t i = 0; i < sizeof(block); i++)
            block[i] = (unsigned char)(B_FILL_PATTERN >> (8 * (i % 4)));
    }
    for (size_t off = 0; off < n; off += sizeof(block)) {
        size_t len = n - off < sizeof(block) ? n - off : sizeof(block);
        if (memcmp(d + off, block, len) != 0)
            return false;
    }
    return true;
}

void b_fill_body(vbench_state *st, const void *arg)
{
    const struct b_case *c = arg;
    unsigned char *d = b_env.dst;
    size_t n = c->bytes;
    const char *why = c->pre_skip ? c->pre_skip : b_backend_skip_reason(c->backend_id);
    if (why != NULL) {
        vbench_skip(st, why);
        return;
    }
    /* As in bench_copy.c: prefaulted buffers, one untimed call; cleared and checked the
     * first time. */
    bool first = b_first_run(c);
    if (first)
        memset(d, 0, n);
    int rc = fill_once(c, d, n);
    if (rc == VIDMM_E_UNSUPPORTED) {
        vbench_skip(st, "variant not offered by this backend (VIDMM_E_UNSUPPORTED)");
        return;
    }
    char msg[128];
    if (rc < 0) {
        snprintf(msg, sizeof(msg), "returned %d (%s)", rc, vidmm_strerror(rc));
        vbench_fail(st, msg);
        return;
    }
    if (first && !fill_ok(c, d, n)) {
        vbench_fail(st, "the destination does not hold the pattern after a fill");
        return;
    }

    vbench_set_bytes_per_iteration(st, n);
    rc = 0;
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = c->backend_id;
    o.strategy = c->strategy;
    enum vidmm_mem_kind kind = c->kind;
    switch (c->call) {
    case B_CALL_FILL_EX: B_TIMED(st, rc, vidmm_fill32_ex(d, B_FILL_PATTERN, n, kind, &o)); break;
    case B_CALL_FILL: B_TIMED(st, rc, vidmm_fill32(d, B_FILL_PATTERN, n, kind)); break;
    case B_CALL_MEMSET: B_TIMED(st, rc, (memset(d, B_MEMSET_BYTE, n), 0)); break;
    default: vbench_fail(st, "not a fill case"); return;
    }
    if (rc != 0)
        vbench_fail(st, "a timed call returned an error");
}

void b_fill_cases(size_t bytes)
{
    struct b_case *c = b_case_add("baseline", "memset", "libc", bytes, b_fill_body);
    c->call = B_CALL_MEMSET;

    static const struct { const char *name; enum vidmm_strategy s; } kinds[] = {
        { "temporal", VIDMM_STRATEGY_TEMPORAL },
        { "nontemporal", VIDMM_STRATEGY_NONTEMPORAL },
    };
    for (size_t i = 0; i < b_nbackends; i++)
        for (size_t j = 0; j < sizeof(kinds) / sizeof(kinds[0]); j++) {
            const char *bname = vidmm_backend_to_string(b_backends[i]);
            c = b_case_add("fill", kinds[j].name, bname ? bname : "?", bytes, b_fill_body);
            c->call = B_CALL_FILL_EX;
            c->kind = VIDMM_MEM_CACHED;
            c->backend_id = b_backends[i];
            c->strategy = kinds[j].s;
            c->ref = B_REF_MEMSET;
            b_ref_name(c->ref_name, sizeof(c->ref_name), c->ref, bytes);
        }
    /* The public entry to cached memory: temporal below the NT threshold, streaming above. */
    c = b_case_add("fill", "auto", "auto", bytes, b_fill_body);
    c->call = B_CALL_FILL;
    c->kind = VIDMM_MEM_CACHED;
    c->ref = B_REF_MEMSET;
    b_ref_name(c->ref_name, sizeof(c->ref_name), c->ref, bytes);
}
