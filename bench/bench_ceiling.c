/* SPDX-License-Identifier: MIT */
/* bench/bench_ceiling.c - the ceilings: bare non-temporal copy loops and bare cache-flush loops,
 * written here with intrinsics and target attributes and never through the library, so that
 * "x ceiling" says how close a kernel gets to what the instruction alone can do.
 *
 * They are the loops of shared/perf-notes.md ("Memory and copy ceilings", "Cache maintenance"):
 * aligned loads, streaming stores, one store fence at the end; one flush instruction per line
 * between two store fences. No prefetching, no unaligned head or tail handling - the cases only
 * hand them page-aligned buffers whose sizes are multiples of 4 KiB. */
#include "b_common.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define B_X86 1
#else
#define B_X86 0
#endif

#if B_X86

/* XGETBV(0): which register files the OS saves. Needs the xsave target for the intrinsic. */
__attribute__((target("xsave"))) static uint64_t xcr0(void)
{
    return _xgetbv(0);
}

/* CPUID with EBX named as an output. Not <cpuid.h>'s macros: clang 14's x86-64 ones save RBX in
 * a register of the compiler's choice ("=r"), which it gave the leaf's own RAX when the EAX result
 * was unused - CPUID then ran leaf 0x<low half of a pointer> and RBX, holding 'm', came back as a
 * result register (vidmm_bench crashed in the clang preset's bench_smoke). */
static void b_cpuid(unsigned leaf, unsigned sub, unsigned *a, unsigned *b, unsigned *c, unsigned *d)
{
    __asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(sub));
}

void b_cpuid_probe(struct b_machine *m)
{
    unsigned a, b, c, d;
    m->line = 64;
    b_cpuid(0, 0, &a, &b, &c, &d);
    if (a == 0)
        return;
    unsigned top = a;
    b_cpuid(1, 0, &a, &b, &c, &d);
    m->has_sse2 = (d >> 26) & 1;
    m->has_clflush = (d >> 19) & 1;
    /* CPUID.1:EBX[15:8]: the CLFLUSH line size in units of 8 bytes (SDM vol. 2A, CPUID). */
    unsigned line = ((b >> 8) & 0xffu) * 8u;
    if (line >= 16 && (line & (line - 1)) == 0)
        m->line = line;
    bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    uint64_t xcr = osxsave ? xcr0() : 0;
    bool ymm = (xcr & 0x6) == 0x6;            /* XMM + YMM upper halves */
    bool zmm = ymm && (xcr & 0xe0) == 0xe0;   /* opmask + ZMM upper halves + ZMM16-31 */
    if (top >= 7) {
        b_cpuid(7, 0, &a, &b, &c, &d);
        m->has_avx2 = avx && ymm && ((b >> 5) & 1);
        m->has_avx512f = zmm && ((b >> 16) & 1);
        m->has_clflushopt = (b >> 23) & 1;
        m->has_clwb = (b >> 24) & 1;
        m->has_movdir64b = (c >> 28) & 1;
    }
}

/* 4 vectors a step: enough independent stores to keep the write-combining buffers busy, and the
 * shape of the loops perf-notes measured. */
void b_ceil_nt_copy_sse2(void *dst, const void *src, size_t n)
{
    __m128i *d = dst;
    const __m128i *s = src;
    for (size_t i = 0; i < n / 16; i += 4) {
        __m128i x0 = _mm_load_si128(s + i), x1 = _mm_load_si128(s + i + 1);
        __m128i x2 = _mm_load_si128(s + i + 2), x3 = _mm_load_si128(s + i + 3);
        _mm_stream_si128(d + i, x0);
        _mm_stream_si128(d + i + 1, x1);
        _mm_stream_si128(d + i + 2, x2);
        _mm_stream_si128(d + i + 3, x3);
    }
    _mm_sfence();
}

__attribute__((target("avx2"))) void b_ceil_nt_copy_avx2(void *dst, const void *src, size_t n)
{
    __m256i *d = dst;
    const __m256i *s = src;
    for (size_t i = 0; i < n / 32; i += 4) {
        __m256i y0 = _mm256_load_si256(s + i), y1 = _mm256_load_si256(s + i + 1);
        __m256i y2 = _mm256_load_si256(s + i + 2), y3 = _mm256_load_si256(s + i + 3);
        _mm256_stream_si256(d + i, y0);
        _mm256_stream_si256(d + i + 1, y1);
        _mm256_stream_si256(d + i + 2, y2);
        _mm256_stream_si256(d + i + 3, y3);
    }
    _mm_sfence();
}

__attribute__((target("avx512f"))) void b_ceil_nt_copy_avx512(void *dst, const void *src, size_t n)
{
    __m512i *d = dst;
    const __m512i *s = src;
    for (size_t i = 0; i < n / 64; i += 4) {
        __m512i z0 = _mm512_load_si512(s + i), z1 = _mm512_load_si512(s + i + 1);
        __m512i z2 = _mm512_load_si512(s + i + 2), z3 = _mm512_load_si512(s + i + 3);
        _mm512_stream_si512(d + i, z0);
        _mm512_stream_si512(d + i + 1, z1);
        _mm512_stream_si512(d + i + 2, z2);
        _mm512_stream_si512(d + i + 3, z3);
    }
    _mm_sfence();
}

__attribute__((target("movdir64b"))) void b_ceil_movdir64b_copy(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < n; i += 64)
        _movdir64b(d + i, s + i);
    _mm_sfence();
}

/* The flush loops fence as vidmm_flush(WRITEBACK) is specified to (include/vidmm/kernels.h): a
 * store fence before, so the lines hold the caller's stores, and one after, so the write-backs
 * are complete on return. */
__attribute__((target("clwb"))) void b_ceil_clwb(void *p, size_t n)
{
    unsigned char *c = p, *end = c + n;
    size_t line = b_env.m.line;
    _mm_sfence();
    for (; c < end; c += line)
        _mm_clwb(c);
    _mm_sfence();
}

__attribute__((target("clflushopt"))) void b_ceil_clflushopt(void *p, size_t n)
{
    unsigned char *c = p, *end = c + n;
    size_t line = b_env.m.line;
    _mm_sfence();
    for (; c < end; c += line)
        _mm_clflushopt(c);
    _mm_sfence();
}

void b_ceil_clflush(void *p, size_t n)
{
    unsigned char *c = p, *end = c + n;
    size_t line = b_env.m.line;
    /* CLFLUSH is ordered with stores by itself (SDM vol. 2A, CLFLUSH); the fences are kept so
     * the three loops differ only in the instruction. */
    _mm_sfence();
    for (; c < end; c += line)
        _mm_clflush(c);
    _mm_sfence();
}

#else /* !B_X86 */

void b_cpuid_probe(struct b_machine *m)
{
    m->line = 64;
}

/* Never called: b_ceiling_cases() adds no case on other architectures. */
void b_ceil_nt_copy_sse2(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void b_ceil_nt_copy_avx2(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void b_ceil_nt_copy_avx512(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void b_ceil_movdir64b_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void b_ceil_clwb(void *p, size_t n) { (void)p; (void)n; }
void b_ceil_clflushopt(void *p, size_t n) { (void)p; (void)n; }
void b_ceil_clflush(void *p, size_t n) { (void)p; (void)n; }

#endif

const char *b_ceiling_skip_reason(enum b_call call)
{
    const struct b_machine *m = &b_env.m;
    switch (call) {
    case B_CALL_CEIL_NT_SSE2: return m->has_sse2 ? NULL : "cpu lacks sse2";
    case B_CALL_CEIL_NT_AVX2: return m->has_avx2 ? NULL : "cpu lacks avx2";
    case B_CALL_CEIL_NT_AVX512: return m->has_avx512f ? NULL : "cpu lacks avx512";
    case B_CALL_CEIL_MOVDIR64B: return m->has_movdir64b ? NULL : "cpu lacks movdir64b";
    case B_CALL_CEIL_CLWB: return m->has_clwb ? NULL : "cpu lacks clwb";
    case B_CALL_CEIL_CLFLUSHOPT: return m->has_clflushopt ? NULL : "cpu lacks clflushopt";
    case B_CALL_CEIL_CLFLUSH: return m->has_clflush ? NULL : "cpu lacks clflush";
    default: return NULL;
    }
}

void b_nt_ceiling_name(char *out, size_t cap, enum vidmm_backend b, size_t bytes)
{
    const char *isa = NULL;
    if (!B_X86) {
        if (cap > 0)
            out[0] = '\0';
        return;
    }
    switch (b) {
    case VIDMM_BACKEND_SSE2: isa = "sse2"; break;
    case VIDMM_BACKEND_AVX2: isa = "avx2"; break;
    case VIDMM_BACKEND_AVX512: isa = "avx512"; break;
    default: isa = b_env.m.best_nt; break;  /* scalar and AUTO: the best loop the CPU has */
    }
    if (isa == NULL) {
        if (cap > 0)
            out[0] = '\0';
        return;
    }
    snprintf(out, cap, "ceiling/nt_copy/%s/%zu", isa, bytes);
}

void b_ceiling_cases(size_t bytes)
{
    if (!B_X86)
        return;
    static const struct { const char *isa; enum b_call call; } nt[] = {
        { "sse2", B_CALL_CEIL_NT_SSE2 },
        { "avx2", B_CALL_CEIL_NT_AVX2 },
        { "avx512", B_CALL_CEIL_NT_AVX512 },
    };
    for (size_t i = 0; i < sizeof(nt) / sizeof(nt[0]); i++) {
        struct b_case *c = b_case_add("ceiling", "nt_copy", nt[i].isa, bytes, b_copy_body);
        c->call = nt[i].call;
        c->ref = B_REF_MEMCPY;
        b_ref_name(c->ref_name, sizeof(c->ref_name), c->ref, bytes);
    }
    struct b_case *c = b_case_add("ceiling", "direct_copy", "movdir64b", bytes, b_copy_body);
    c->call = B_CALL_CEIL_MOVDIR64B;
    c->ref = B_REF_MEMCPY;
    b_ref_name(c->ref_name, sizeof(c->ref_name), c->ref, bytes);

    static const struct { const char *insn; enum b_call call; } fl[] = {
        { "clwb", B_CALL_CEIL_CLWB },
        { "clflushopt", B_CALL_CEIL_CLFLUSHOPT },
        { "clflush", B_CALL_CEIL_CLFLUSH },
    };
    for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
        c = b_case_add("ceiling", "flush", fl[i].insn, bytes, b_flush_body);
        c->call = fl[i].call;
        if (fl[i].call == B_CALL_CEIL_CLFLUSH)
            c->pre_skip = b_clflush_quick_skip(bytes);
    }
}
