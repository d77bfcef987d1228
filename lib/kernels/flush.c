/* SPDX-License-Identifier: MIT */
/* lib/kernels/flush.c - cache maintenance over a range: argument checks and the choice of
 * instruction; the instructions and fences themselves are in lib/arch. */
#include "arch/arch.h"
#include "common/internal.h"
#include "kernels/kernel_ops.h"

static bool insn_usable(enum vidmm_flush_insn insn)
{
    uint64_t f = vidmm_cpu_usable();
    switch (insn) {
    case VIDMM_FLUSH_INSN_CLWB:
        return (f & VIDMM_CPU_CLWB) != 0;
    case VIDMM_FLUSH_INSN_CLFLUSHOPT:
        return (f & VIDMM_CPU_CLFLUSHOPT) != 0;
    case VIDMM_FLUSH_INSN_CLFLUSH:
        return (f & VIDMM_CPU_CLFLUSH) != 0;
    default:
        return false; /* DC CVAC/CIVAC: no Arm backend yet */
    }
}

/* can_do() tells whether 'insn' performs 'op': CLWB may leave the line cached, so it only
 * writes back; the others write back and invalidate, which also serves a plain write-back. */
static bool can_do(enum vidmm_flush_insn insn, enum vidmm_flush_op op)
{
    if (insn == VIDMM_FLUSH_INSN_CLWB || insn == VIDMM_FLUSH_INSN_DC_CVAC)
        return op == VIDMM_FLUSH_WRITEBACK;
    return true;
}

static bool op_valid(enum vidmm_flush_op op)
{
    return op == VIDMM_FLUSH_WRITEBACK || op == VIDMM_FLUSH_WRITEBACK_INVALIDATE || op == VIDMM_FLUSH_INVALIDATE;
}

/* The fastest instruction that performs 'op': CLWB and CLFLUSHOPT cost about 3.3 ns a line,
 * CLFLUSH about 150 ns because it serialises (shared/perf-notes.md). CLWB is preferred for a
 * write-back because the line stays cached for the CPU's next read. */
enum vidmm_flush_insn vidmm_flush_insn(enum vidmm_flush_op op)
{
    if (!op_valid(op))
        return VIDMM_FLUSH_INSN_AUTO;
    if (op == VIDMM_FLUSH_WRITEBACK && !vidmm_option_get(VIDMM_OPT_NO_CLWB) && insn_usable(VIDMM_FLUSH_INSN_CLWB))
        return VIDMM_FLUSH_INSN_CLWB;
    if (!vidmm_option_get(VIDMM_OPT_NO_CLFLUSHOPT) && insn_usable(VIDMM_FLUSH_INSN_CLFLUSHOPT))
        return VIDMM_FLUSH_INSN_CLFLUSHOPT;
    if (insn_usable(VIDMM_FLUSH_INSN_CLFLUSH))
        return VIDMM_FLUSH_INSN_CLFLUSH;
    return VIDMM_FLUSH_INSN_AUTO;
}

const char *vidmm_flush_insn_name(enum vidmm_flush_insn insn)
{
    static const char *const names[VIDMM_FLUSH_INSN_COUNT_] = {
        "none", "clwb", "clflushopt", "clflush", "dc cvac", "dc civac",
    };
    if ((unsigned)insn >= VIDMM_FLUSH_INSN_COUNT_)
        return NULL;
    return names[insn];
}

int vidmm_flush_ex(void *p, size_t n, enum vidmm_flush_op op, enum vidmm_flush_insn insn)
{
    if (!op_valid(op) || (unsigned)insn >= VIDMM_FLUSH_INSN_COUNT_ || !vidmm_range_ok(p, n))
        return vidmm_refuse("vidmm_flush", !op_valid(op) ? "op" : !vidmm_range_ok(p, n) ? "p" : "insn",
                            "unknown operation or instruction, or a NULL or wrapping range", "kernels.h");
    if (insn == VIDMM_FLUSH_INSN_AUTO) {
        insn = vidmm_flush_insn(op);
        if (insn == VIDMM_FLUSH_INSN_AUTO)
            return VIDMM_E_UNSUPPORTED;
    } else if (!insn_usable(insn) || !can_do(insn, op)) {
        return VIDMM_E_UNSUPPORTED;
    }
    if (n == 0)
        return 0;
    vidmm_arch_flush(p, n, op, insn);
    return 0;
}

int vidmm_flush(void *p, size_t n, enum vidmm_flush_op op)
{
    return vidmm_flush_ex(p, n, op, VIDMM_FLUSH_INSN_AUTO);
}
