/* SPDX-License-Identifier: MIT */
/* lib/arch/x86/flush_x86.c - CLWB / CLFLUSHOPT / CLFLUSH over a range, with the fences a device
 * hand-off needs (see the table in include/vidmm/kernels.h). */
#include <immintrin.h>
#include "arch/arch.h"

/* Intel SDM vol. 2 (CLFLUSHOPT, CLWB): both are ordered with older stores to the same line but
 * not with other lines or with each other, and SFENCE/MFENCE order them. CLFLUSH is ordered with
 * stores and other CLFLUSHes but not with loads. Hence: a fence before (so streaming stores and
 * the caller's writes are globally visible and ordered before the flushes), the flushes, and a
 * fence after (so the caller's next store - a doorbell - or load comes after every flush). */

__attribute__((target("clwb"))) static void range_clwb(const char *p, const char *end, size_t line)
{
    for (; p < end; p += line)
        _mm_clwb((void *)p);
}

__attribute__((target("clflushopt"))) static void range_clflushopt(const char *p, const char *end, size_t line)
{
    for (; p < end; p += line)
        _mm_clflushopt((void *)p);
}

static void range_clflush(const char *p, const char *end, size_t line)
{
    for (; p < end; p += line)
        _mm_clflush(p);
}

void vidmm_arch_flush(void *p, size_t n, enum vidmm_flush_op op, enum vidmm_flush_insn insn)
{
    size_t line = vidmm_arch_cache_line();
    const char *start = (const char *)((uintptr_t)p & ~(uintptr_t)(line - 1));
    const char *end = (const char *)p + n; /* the loop covers every line that starts before end */

    if (op == VIDMM_FLUSH_INVALIDATE)
        _mm_mfence(); /* the caller's load of the device's completion comes first */
    else
        _mm_sfence();
    switch (insn) {
    case VIDMM_FLUSH_INSN_CLWB:
        range_clwb(start, end, line);
        break;
    case VIDMM_FLUSH_INSN_CLFLUSHOPT:
        range_clflushopt(start, end, line);
        break;
    default:
        range_clflush(start, end, line);
        break;
    }
    if (op == VIDMM_FLUSH_WRITEBACK)
        _mm_sfence();
    else
        _mm_mfence(); /* no later load may be served from a line that is being dropped */
}

void vidmm_arch_store_fence(void)
{
    _mm_sfence();
}

#ifndef VIDMM_HAVE_MOVDIR64B_BACKEND
bool vidmm_arch_copy_movdir64b(void *restrict dst, const void *restrict src, size_t n)
{
    (void)dst; (void)src; (void)n;
    return false;
}
#endif
