/* SPDX-License-Identifier: MIT */
/* lib/arch/x86/movdir64b.c - copy to write-combined memory with MOVDIR64B (64-byte direct
 * stores). Compiled with -mmovdir64b; called only when CPUID reports the instruction. */
#include <immintrin.h>
#include <string.h>
#include "arch/arch.h"

/* MOVDIR64B writes one whole 64-byte line with a single non-temporal write; the destination
 * must be 64-byte aligned, the source need not be. The partial first and last lines take
 * ordinary stores (to WC memory they combine anyway). Like copy_nt, no fence here. */
bool vidmm_arch_copy_movdir64b(void *restrict dst, const void *restrict src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    uintptr_t a = ((uintptr_t)d + 63) & ~(uintptr_t)63;
    uintptr_t e = ((uintptr_t)d + n) & ~(uintptr_t)63;

    if (n < 64 || a >= e) {
        memcpy(d, s, n);
        return true;
    }
    size_t head = a - (uintptr_t)d;
    memcpy(d, s, head);
    unsigned char *dd = (unsigned char *)a;
    const unsigned char *ss = s + head;
    for (; (uintptr_t)dd < e; dd += 64, ss += 64)
        _movdir64b(dd, ss);
    memcpy(dd, ss, (size_t)((uintptr_t)d + n - e));
    return true;
}
