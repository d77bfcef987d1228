/* SPDX-License-Identifier: MIT */
/* lib/arch/generic/cpu_generic.c - the architecture layer where vidmm has no port yet: no SIMD
 * features, no cache-maintenance instruction (vidmm_flush() says VIDMM_E_UNSUPPORTED), a full
 * fence for ordering. An AArch64 port (NEON, DC CVAC/CIVAC) goes in lib/arch/arm. */
#include <stdatomic.h>
#include "arch/arch.h"

uint64_t vidmm_arch_cpu_features(void) { return 0; }
void vidmm_arch_cpu_describe(struct vidmm_cpu_info *info) { (void)info; }
size_t vidmm_arch_cache_line(void) { return 64; }
bool vidmm_arch_prefer_avx512(void) { return false; }

bool vidmm_arch_stream_linear_rows(void) { return false; }
uint64_t vidmm_arch_gob_tile_walk_max(void) { return 0; }
bool vidmm_arch_lines_tile_walk(void) { return false; }

void vidmm_arch_flush(void *p, size_t n, enum vidmm_flush_op op, enum vidmm_flush_insn insn)
{
    (void)p; (void)n; (void)op; (void)insn;
}

void vidmm_arch_store_fence(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}

bool vidmm_arch_copy_movdir64b(void *restrict dst, const void *restrict src, size_t n)
{
    (void)dst; (void)src; (void)n;
    return false;
}
