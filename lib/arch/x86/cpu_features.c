/* SPDX-License-Identifier: MIT */
/* lib/arch/x86/cpu_features.c - x86 feature detection (CPUID + XGETBV), cache geometry, and the
 * policy on top of support. */
#include <cpuid.h>
#include <stdatomic.h>
#include <string.h>
#include "arch/arch.h"

static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

static uint32_t max_leaf(uint32_t base)
{
    uint32_t r[4];
    cpuid(base, 0, r);
    return r[0];
}

/* XGETBV(0) reads XCR0, which says which register states the OS saves on a context switch.
 * Only valid once CPUID.1:ECX.OSXSAVE says the OS enabled XSAVE. Encoded as bytes so the file
 * builds without -mxsave. */
static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

#define XCR0_SSE_AVX   0x06u  /* XMM and upper YMM halves */
#define XCR0_AVX512    0xe0u  /* opmask, upper ZMM halves of 0-15, ZMM 16-31 */

static uint64_t detect(void)
{
    uint32_t r[4];
    uint64_t f = 0, xcr0 = 0;
    uint32_t top = max_leaf(0);

    if (top < 1)
        return 0;
    cpuid(1, 0, r);
    if (r[3] & (1u << 26)) f |= VIDMM_CPU_SSE2;
    if (r[3] & (1u << 19)) f |= VIDMM_CPU_CLFLUSH;
    if (r[2] & (1u << 19)) f |= VIDMM_CPU_SSE41;
    bool osxsave = (r[2] & (1u << 27)) != 0;
    bool avx = (r[2] & (1u << 28)) != 0;
    if (osxsave)
        xcr0 = xgetbv0();
    bool ymm = osxsave && (xcr0 & XCR0_SSE_AVX) == XCR0_SSE_AVX;
    bool zmm = ymm && (xcr0 & XCR0_AVX512) == XCR0_AVX512;
    if (avx && ymm) f |= VIDMM_CPU_AVX;

    if (top >= 7) {
        cpuid(7, 0, r);
        if ((r[1] & (1u << 5)) && (f & VIDMM_CPU_AVX)) f |= VIDMM_CPU_AVX2;
        if (r[1] & (1u << 8)) f |= VIDMM_CPU_BMI2;
        if (r[1] & (1u << 9)) f |= VIDMM_CPU_ERMS;
        if (r[1] & (1u << 23)) f |= VIDMM_CPU_CLFLUSHOPT;
        if (r[1] & (1u << 24)) f |= VIDMM_CPU_CLWB;
        if (zmm && (f & VIDMM_CPU_AVX2)) {
            if (r[1] & (1u << 16)) f |= VIDMM_CPU_AVX512F;
            if (r[1] & (1u << 30)) f |= VIDMM_CPU_AVX512BW;
            if (r[1] & (1u << 31)) f |= VIDMM_CPU_AVX512VL;
            if (r[2] & (1u << 6)) f |= VIDMM_CPU_AVX512VBMI2;
            if (!(f & VIDMM_CPU_AVX512F))
                f &= ~(uint64_t)(VIDMM_CPU_AVX512BW | VIDMM_CPU_AVX512VL | VIDMM_CPU_AVX512VBMI2);
        }
        if (r[2] & (1u << 28)) f |= VIDMM_CPU_MOVDIR64B;
        if (r[3] & (1u << 4)) f |= VIDMM_CPU_FSRM;
    }
    return f;
}

/* Computed once. Every thread computes the same value from CPUID, so the race on the first
 * call is benign; bit 63 marks the cache as filled. */
static _Atomic uint64_t features_cache;

uint64_t vidmm_arch_cpu_features(void)
{
    uint64_t f = atomic_load_explicit(&features_cache, memory_order_relaxed);
    if (f & (1ull << 63))
        return f & ~(1ull << 63);
    f = detect();
    atomic_store_explicit(&features_cache, f | (1ull << 63), memory_order_relaxed);
    return f;
}

size_t vidmm_arch_cache_line(void)
{
    static _Atomic size_t line_cache;
    size_t line = atomic_load_explicit(&line_cache, memory_order_relaxed);
    if (line)
        return line;
    uint32_t r[4];
    cpuid(1, 0, r);
    /* CPUID.1:EBX[15:8] is the CLFLUSH line size in 8-byte units. */
    line = ((r[1] >> 8) & 0xffu) * 8u;
    if (line < 16 || (line & (line - 1)) != 0)
        line = 64;
    atomic_store_explicit(&line_cache, line, memory_order_relaxed);
    return line;
}

/* llc_from_leaf() walks a deterministic cache parameters leaf (Intel 4, AMD 0x8000001D: the
 * same layout) and returns the size of the highest-level data or unified cache; '*l2' gets the
 * level-2 one (0 when the leaf lists none). */
static uint64_t llc_from_leaf(uint32_t leaf, uint64_t *l2)
{
    *l2 = 0;
    uint64_t best = 0;
    unsigned best_level = 0;
    for (uint32_t sub = 0; sub < 16; sub++) {
        uint32_t r[4];
        cpuid(leaf, sub, r);
        unsigned type = r[0] & 0x1fu; /* 0 none, 1 data, 2 instruction, 3 unified */
        if (type == 0)
            break;
        if (type == 2)
            continue;
        unsigned level = (r[0] >> 5) & 0x7u;
        uint64_t ways = ((r[1] >> 22) & 0x3ffu) + 1, parts = ((r[1] >> 12) & 0x3ffu) + 1;
        uint64_t line = (r[1] & 0xfffu) + 1, sets = (uint64_t)r[2] + 1;
        uint64_t size = ways * parts * line * sets;
        if (level == 2)
            *l2 = size;
        if (level > best_level || (level == best_level && size > best)) {
            best_level = level;
            best = size;
        }
    }
    return best;
}

void vidmm_arch_cpu_describe(struct vidmm_cpu_info *info)
{
    uint32_t r[4];
    cpuid(0, 0, r);
    memcpy(info->vendor + 0, &r[1], 4);
    memcpy(info->vendor + 4, &r[3], 4);
    memcpy(info->vendor + 8, &r[2], 4);
    info->vendor[12] = '\0';

    if (max_leaf(0x80000000u) >= 0x80000004u) {
        char brand[49];
        for (uint32_t i = 0; i < 3; i++) {
            cpuid(0x80000002u + i, 0, r);
            memcpy(brand + 16 * i, r, 16);
        }
        brand[48] = '\0';
        const char *b = brand;
        while (*b == ' ')
            b++;
        size_t len = strlen(b);
        while (len > 0 && b[len - 1] == ' ')
            len--;
        if (len >= sizeof(info->model))
            len = sizeof(info->model) - 1;
        memcpy(info->model, b, len);
        info->model[len] = '\0';
    }
    info->cache_line = (uint32_t)vidmm_arch_cache_line();

    uint64_t llc = 0, l2 = 0;
    if (strcmp(info->vendor, "GenuineIntel") == 0 && max_leaf(0) >= 4)
        llc = llc_from_leaf(4, &l2);
    else if (max_leaf(0x80000000u) >= 0x8000001Du)
        llc = llc_from_leaf(0x8000001Du, &l2);
    if (l2 == 0 && max_leaf(0x80000000u) >= 0x80000006u) {
        cpuid(0x80000006u, 0, r);
        l2 = (uint64_t)(r[2] >> 16) * 1024; /* ECX[31:16]: L2 size in KiB */
    }
    info->l2_bytes = l2;
    if (llc == 0 && max_leaf(0x80000000u) >= 0x80000006u) {
        cpuid(0x80000006u, 0, r);
        llc = (uint64_t)(r[3] >> 18) * 512 * 1024; /* AMD: L3 size in 512 KiB units */
        if (llc == 0)
            llc = (uint64_t)(r[2] >> 16) * 1024;    /* L2 size in KiB */
    }
    info->llc_bytes = llc;
}

/* vidmm_arch_stream_linear_rows() (arch.h): Intel's. Cached: choose_walk() asks on every large
 * deswizzle. */
bool vidmm_arch_stream_linear_rows(void)
{
    static _Atomic int cached; /* 0 unknown, 1 no, 2 yes */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v == 0) {
        uint32_t r[4];
        cpuid(0, 0, r);
        /* "GenuineIntel": EBX "Genu", EDX "ineI", ECX "ntel". */
        v = memcmp(&r[1], "Genu", 4) == 0 && memcmp(&r[3], "ineI", 4) == 0 && memcmp(&r[2], "ntel", 4) == 0 ? 2 : 1;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v == 2;
}

/* vidmm_arch_gob_tile_walk_max() (arch.h): half of Intel's L2, 0 elsewhere. Cached: choose_walk()
 * asks on every swizzle of a pair-line layout. */
uint64_t vidmm_arch_gob_tile_walk_max(void)
{
    static _Atomic uint64_t cached; /* the value + 1; 0 unknown */
    uint64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v == 0) {
        struct vidmm_cpu_info info;
        memset(&info, 0, sizeof info);
        vidmm_arch_cpu_describe(&info);
        v = (strcmp(info.vendor, "GenuineIntel") == 0 ? info.l2_bytes / 2 : 0) + 1;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v - 1;
}

/* vidmm_arch_lines_tile_walk() (arch.h): Intel's. Cached: choose_walk() asks before every
 * swizzle of a lines16 layout in the cache. */
bool vidmm_arch_lines_tile_walk(void)
{
    static _Atomic int cached; /* 0 unknown, 1 no, 2 yes */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v == 0) {
        struct vidmm_cpu_info info;
        memset(&info, 0, sizeof info);
        vidmm_arch_cpu_describe(&info);
        v = strcmp(info.vendor, "GenuineIntel") == 0 ? 2 : 1;
        atomic_store_explicit(&cached, v, memory_order_relaxed);
    }
    return v == 2;
}

/* Skylake-SP and Cascade Lake (family 6, model 0x55) drop their clock when 512-bit registers are
 * busy, which costs more than the wider stores gain in a memory-bound kernel; libdeflate
 * withholds ZMM there for the same reason. Everywhere else AVX-512 is preferred where supported. */
bool vidmm_arch_prefer_avx512(void)
{
    uint32_t r[4];
    char vendor[13];
    cpuid(0, 0, r);
    memcpy(vendor, &r[1], 4);
    memcpy(vendor + 4, &r[3], 4);
    memcpy(vendor + 8, &r[2], 4);
    vendor[12] = '\0';
    if (strcmp(vendor, "GenuineIntel") != 0)
        return true;
    cpuid(1, 0, r);
    unsigned family = (r[0] >> 8) & 0xfu;
    unsigned model = ((r[0] >> 4) & 0xfu) | (((r[0] >> 16) & 0xfu) << 4);
    return !(family == 6 && model == 0x55);
}
