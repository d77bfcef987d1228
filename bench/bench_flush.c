/* SPDX-License-Identifier: MIT */
/* bench/bench_flush.c - cache maintenance: WRITEBACK, WRITEBACK_INVALIDATE and INVALIDATE per
 * instruction (CLWB, CLFLUSHOPT, CLFLUSH) and as vidmm_flush() chooses, over dirty lines, next
 * to the bare flush loops of bench_ceiling.c measured the same way.
 *
 * Every timed flush meets freshly dirtied lines: the range is re-dirtied before each flush with
 * the clock paused (the shim's own clock, two reads, not Google Benchmark's PauseTiming()). A
 * flush of clean lines would measure something else: CLWB of a clean line has nothing to write.
 * Below B_FLUSH_GROUP_BYTES several blocks are dirtied at once and then flushed one call each,
 * so the clock reads are spread over several ~200 ns calls; the figure is still per call. */
#include "b_common.h"

#include <stdio.h>
#include <string.h>

static int flush_once(const struct b_case *c, void *p, size_t n)
{
    switch (c->call) {
    case B_CALL_FLUSH_EX: return vidmm_flush_ex(p, n, c->op, c->insn);
    case B_CALL_FLUSH: return vidmm_flush(p, n, c->op);
    case B_CALL_CEIL_CLWB: b_ceil_clwb(p, n); return 0;
    case B_CALL_CEIL_CLFLUSHOPT: b_ceil_clflushopt(p, n); return 0;
    case B_CALL_CEIL_CLFLUSH: b_ceil_clflush(p, n); return 0;
    default: return VIDMM_E_INVALID_ARG;
    }
}

static const char *unsupported_reason(const struct b_case *c)
{
    const struct b_machine *m = &b_env.m;
    switch (c->insn) {
    case VIDMM_FLUSH_INSN_CLWB: if (!m->has_clwb) return "cpu lacks clwb"; break;
    case VIDMM_FLUSH_INSN_CLFLUSHOPT: if (!m->has_clflushopt) return "cpu lacks clflushopt"; break;
    case VIDMM_FLUSH_INSN_CLFLUSH: if (!m->has_clflush) return "cpu lacks clflush"; break;
    case VIDMM_FLUSH_INSN_AUTO: return "no cache-maintenance instruction here";
    default: break;
    }
    return "instruction refused for this operation (VIDMM_E_UNSUPPORTED)";
}

void b_flush_body(vbench_state *st, const void *arg)
{
    const struct b_case *c = arg;
    unsigned char *p = b_env.dst;
    size_t n = c->bytes;
    const char *why = c->pre_skip ? c->pre_skip : b_ceiling_skip_reason(c->call);
    if (why != NULL) {
        vbench_skip(st, why);
        return;
    }
    size_t blocks = n < B_FLUSH_GROUP_BYTES ? B_FLUSH_GROUP_BYTES / n : 1;
    if (blocks > B_FLUSH_MAX_BLOCKS)
        blocks = B_FLUSH_MAX_BLOCKS;

    uint64_t seq = 1;
    b_dirty(p, blocks * n, seq++);
    int rc = flush_once(c, p, n);
    if (rc == VIDMM_E_UNSUPPORTED) {
        vbench_skip(st, unsupported_reason(c));
        return;
    }
    if (rc < 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "returned %d (%s)", rc, vidmm_strerror(rc));
        vbench_fail(st, msg);
        return;
    }
    uint64_t word;
    memcpy(&word, p, sizeof(word));
    if (word != seq - 1) {
        vbench_fail(st, "a flush changed the contents of the range");
        return;
    }

    vbench_set_bytes_per_iteration(st, n);
    vbench_counter(st, "lines", (double)(n / b_env.m.line), VBENCH_COUNTER_PLAIN);
    vbench_counter(st, "blocks", (double)blocks, VBENCH_COUNTER_PLAIN);
    rc = 0;
    uint64_t k, i, j;
    while (vbench_keep_running_batch(st, &k)) {
        for (i = 0; i < k;) {
            uint64_t g = k - i < blocks ? k - i : blocks;
            vbench_pause(st);
            for (j = 0; j < g; j++)
                b_dirty(p + j * n, n, seq);
            seq++;
            vbench_resume(st);
            for (j = 0; j < g; j++)
                rc |= flush_once(c, p + j * n, n);
            i += g;
        }
    }
    if (rc != 0)
        vbench_fail(st, "a timed call returned an error");
}

static const char *op_name(enum vidmm_flush_op op)
{
    switch (op) {
    case VIDMM_FLUSH_WRITEBACK: return "writeback";
    case VIDMM_FLUSH_WRITEBACK_INVALIDATE: return "writeback_invalidate";
    case VIDMM_FLUSH_INVALIDATE: return "invalidate";
    default: return "?";
    }
}

/* The bare loop a flush with instruction 'insn' is compared with; "" when there is none. */
static void flush_ceiling_name(char *out, size_t cap, enum vidmm_flush_insn insn, size_t bytes)
{
    out[0] = '\0';
    if (!b_env.m.x86)
        return;
    if (insn == VIDMM_FLUSH_INSN_CLWB || insn == VIDMM_FLUSH_INSN_CLFLUSHOPT || insn == VIDMM_FLUSH_INSN_CLFLUSH)
        snprintf(out, cap, "ceiling/flush/%s/%zu", vidmm_flush_insn_name(insn), bytes);
}

void b_flush_cases(size_t bytes)
{
    static const enum vidmm_flush_op ops[] = { VIDMM_FLUSH_WRITEBACK, VIDMM_FLUSH_WRITEBACK_INVALIDATE,
                                               VIDMM_FLUSH_INVALIDATE };
    static const enum vidmm_flush_insn insns[] = { VIDMM_FLUSH_INSN_CLWB, VIDMM_FLUSH_INSN_CLFLUSHOPT,
                                                   VIDMM_FLUSH_INSN_CLFLUSH };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        /* Forced instructions exist on x86 only; CLWB only writes back, so only WRITEBACK. */
        for (size_t j = 0; b_env.m.x86 && j < sizeof(insns) / sizeof(insns[0]); j++) {
            if (insns[j] == VIDMM_FLUSH_INSN_CLWB && ops[i] != VIDMM_FLUSH_WRITEBACK)
                continue;
            struct b_case *c = b_case_add("flush", op_name(ops[i]), vidmm_flush_insn_name(insns[j]), bytes,
                                          b_flush_body);
            c->call = B_CALL_FLUSH_EX;
            c->op = ops[i];
            c->insn = insns[j];
            if (insns[j] == VIDMM_FLUSH_INSN_CLFLUSH)
                c->pre_skip = b_clflush_quick_skip(bytes);
            flush_ceiling_name(c->ceil_name, sizeof(c->ceil_name), insns[j], bytes);
        }
        struct b_case *c = b_case_add("flush", op_name(ops[i]), "auto", bytes, b_flush_body);
        c->call = B_CALL_FLUSH;
        c->op = ops[i];
        c->insn = VIDMM_FLUSH_INSN_AUTO;
        enum vidmm_flush_insn chosen = vidmm_flush_insn(ops[i]);
        if (chosen == VIDMM_FLUSH_INSN_CLFLUSH)
            c->pre_skip = b_clflush_quick_skip(bytes);
        flush_ceiling_name(c->ceil_name, sizeof(c->ceil_name), chosen, bytes);
    }
}
