/* SPDX-License-Identifier: MIT */
/* lib/arch/arch.h - what the portable code asks of the architecture layer. Each architecture
 * (lib/arch/x86, lib/arch/generic) implements every function here; architecture #ifdefs stay
 * in lib/arch. */
#ifndef VIDMM_LIB_ARCH_ARCH_H
#define VIDMM_LIB_ARCH_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include "vidmm/kernels.h"

/* vidmm_arch_cpu_features() returns the VIDMM_CPU_* features the CPU implements *and* the OS
 * enables (AVX state saved per XGETBV), before any user masking. Computed once. */
uint64_t vidmm_arch_cpu_features(void);

/* vidmm_arch_cpu_describe() fills vendor, model, cache_line and llc_bytes of '*info'. */
void vidmm_arch_cpu_describe(struct vidmm_cpu_info *info);

/* vidmm_arch_cache_line() is the line size cache maintenance works on (bytes, a power of 2). */
size_t vidmm_arch_cache_line(void);

/* vidmm_arch_prefer_avx512() is the policy on top of support: whether an AVX-512-capable CPU
 * should get the AVX-512 table by default. */
bool vidmm_arch_prefer_avx512(void);

/* vidmm_arch_stream_linear_rows() is the CPU kind's guess at a store policy the kernels measure
 * (kernel_ops.h vidmm_stream_linear_rows(); this guess where they do not): whether a deswizzle
 * larger than the cache should write its linear rows with streaming stores (whole lines, a few
 * rows at a time). True on Intel (a Cascade Lake gained 1.5x), false elsewhere (Zen 3 lost 2x,
 * though a Zen 4 gained 2x: lib/kernels/swizzle_walk.c has the figures). Computed once. */
bool vidmm_arch_stream_linear_rows(void);

/* vidmm_arch_gob_tile_walk_max() is another store policy measured per CPU kind: the largest
 * block-linear swizzle (bytes moved) that walks its GOB-wide tiles one at a time instead of in
 * groups of 512 bytes of each row. Half the second-level cache on Intel (a Cascade Lake gained
 * 7-49% from 64 to 512 KiB and lost 2% at 1 and 4 MiB: lib/kernels/swizzle_walk.c has the
 * figures), 0 elsewhere (not measured). Computed once. */
uint64_t vidmm_arch_gob_tile_walk_max(void);

/* vidmm_arch_lines_tile_walk() is another: whether a swizzle of a lines16 layout (Intel Y, Tile4,
 * the D3D / AMD tables of 4-byte elements) that fits the cache walks whole tiles a line at a
 * time (swz_lines16) instead of four-row strips across the surface. True on Intel (an Emerald
 * Rapids Xeon: 4 MiB Intel Y 0.40 ms against 0.52; lib/arch/x86/kernels_template.h), false
 * elsewhere (the strips were measured best on a Zen 3, against the row-pair tile walk; the
 * line walk not measured there). Computed once. */
bool vidmm_arch_lines_tile_walk(void);

/* vidmm_arch_flush() maintains every line overlapping [p, p + n) with 'insn' (never AUTO; the
 * caller checked the CPU has it and that it can do 'op'), with the fences of kernels.h. n > 0. */
void vidmm_arch_flush(void *p, size_t n, enum vidmm_flush_op op, enum vidmm_flush_insn insn);

/* vidmm_arch_store_fence() orders every earlier store, streaming ones included (SFENCE). */
void vidmm_arch_store_fence(void);

/* vidmm_arch_copy_movdir64b() copies with MOVDIR64B for the whole aligned lines and ordinary
 * stores for the partial first and last lines; no fence. NULL-safe only after checking
 * VIDMM_CPU_MOVDIR64B. Returns false when the build has no MOVDIR64B support. */
bool vidmm_arch_copy_movdir64b(void *restrict dst, const void *restrict src, size_t n);

#endif /* VIDMM_LIB_ARCH_ARCH_H */
