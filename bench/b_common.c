/* SPDX-License-Identifier: MIT */
/* bench/b_common.c - the case table, the machine description and the buffers shared by every
 * benchmark file. */
#define _GNU_SOURCE
#include "b_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

const size_t b_sizes[B_NSIZES] = {
    4 * B_KiB,    /* L1 */
    256 * B_KiB,  /* L2 */
    4 * B_MiB,    /* L3 */
    64 * B_MiB,   /* DRAM */
    256 * B_MiB   /* DRAM, and the 256 MiB target of the issue */
};

struct b_env b_env;

/* Every kernel x backend x variant x size comes to ~300 cases, and the swizzle cases (family x
 * element size x direction x backend x surface or box) to ~570 more; 2048 leaves room. */
#define B_MAX_CASES 2048
static struct b_case cases[B_MAX_CASES];
static size_t ncases;

struct b_case *b_case_add(const char *path, const char *variant, const char *backend, size_t bytes,
                          vbench_fn body)
{
    if (ncases == B_MAX_CASES) {
        fprintf(stderr, "vidmm_bench: more than %d cases; raise B_MAX_CASES\n", B_MAX_CASES);
        exit(2);
    }
    struct b_case *c = &cases[ncases++];
    memset(c, 0, sizeof(*c));
    snprintf(c->path, sizeof(c->path), "%s", path);
    snprintf(c->variant, sizeof(c->variant), "%s", variant);
    snprintf(c->backend, sizeof(c->backend), "%s", backend);
    snprintf(c->name, sizeof(c->name), "%s/%s/%s/%zu", path, variant, backend, bytes);
    c->bytes = bytes;
    c->body = body;
    c->ref_case = c->ceil_case = -1;
    c->id = -1;
    return c;
}

bool b_first_run(const struct b_case *c)
{
    static bool seen[B_MAX_CASES];
    size_t i = (size_t)(c - cases);
    if (i >= ncases || seen[i])
        return false;
    seen[i] = true;
    return true;
}

size_t b_case_count(void)
{
    return ncases;
}

struct b_case *b_case_at(size_t i)
{
    return i < ncases ? &cases[i] : NULL;
}

int b_case_find(const char *name)
{
    if (name == NULL || name[0] == '\0')
        return -1;
    for (size_t i = 0; i < ncases; i++)
        if (strcmp(cases[i].name, name) == 0)
            return (int)i;
    return -1;
}

void b_ref_name(char *out, size_t cap, enum b_ref ref, size_t bytes)
{
    if (ref == B_REF_MEMCPY)
        snprintf(out, cap, "baseline/memcpy/libc/%zu", bytes);
    else if (ref == B_REF_MEMSET)
        snprintf(out, cap, "baseline/memset/libc/%zu", bytes);
    else if (cap > 0)
        out[0] = '\0';
}

/* ---------------------------------------------------------------------------------------------
 * The machine.
 * ------------------------------------------------------------------------------------------- */

static void note_mismatch(struct b_machine *m, const char *what, bool ours, bool lib)
{
    if (ours == lib)
        return;
    size_t len = strlen(m->feature_mismatch);
    snprintf(m->feature_mismatch + len, sizeof(m->feature_mismatch) - len, "%s%s: cpuid %s, vidmm %s",
             len ? "; " : "", what, ours ? "yes" : "no", lib ? "yes" : "no");
}

void b_machine_init(void)
{
    struct b_machine *m = &b_env.m;
    memset(m, 0, sizeof(*m));
    m->cpu.size = sizeof(m->cpu);
    if (vidmm_cpu_info(&m->cpu) != 0)
        fprintf(stderr, "vidmm_bench: vidmm_cpu_info() failed\n");
#if defined(__x86_64__) || defined(__i386__)
    m->x86 = true;
#endif
    b_cpuid_probe(m);
    /* The first kernel call would choose the backend and calibrate the copy-to-WC variant
     * (a few milliseconds); do both here, outside any timed loop. */
    m->active_backend = vidmm_backend_name();
    m->wc_variant = vidmm_wc_copy_variant();
    m->best_nt = m->has_avx512f ? "avx512" : m->has_avx2 ? "avx2" : m->has_sse2 ? "sse2" : NULL;
    if (m->x86) {
        uint64_t f = m->cpu.features;
        note_mismatch(m, "avx2", m->has_avx2, (f & VIDMM_CPU_AVX2) != 0);
        note_mismatch(m, "avx512f", m->has_avx512f, (f & VIDMM_CPU_AVX512F) != 0);
        note_mismatch(m, "clwb", m->has_clwb, (f & VIDMM_CPU_CLWB) != 0);
        note_mismatch(m, "clflushopt", m->has_clflushopt, (f & VIDMM_CPU_CLFLUSHOPT) != 0);
        note_mismatch(m, "movdir64b", m->has_movdir64b, (f & VIDMM_CPU_MOVDIR64B) != 0);
        if (m->line != m->cpu.cache_line) {
            size_t len = strlen(m->feature_mismatch);
            snprintf(m->feature_mismatch + len, sizeof(m->feature_mismatch) - len,
                     "%sline: cpuid %u, vidmm %u", len ? "; " : "", m->line, (unsigned)m->cpu.cache_line);
        }
    }
}

const char *b_backend_skip_reason(enum vidmm_backend b)
{
    static char reasons[VIDMM_BACKEND_COUNT_][96];
    if (b == VIDMM_BACKEND_AUTO || vidmm_backend_supported(b))
        return NULL;
    if ((unsigned)b >= VIDMM_BACKEND_COUNT_)
        return "unknown backend";
    const char *name = vidmm_backend_to_string(b);
    uint64_t need = 0, f = b_env.m.cpu.features;
    switch (b) {
    case VIDMM_BACKEND_SSE2: need = VIDMM_CPU_SSE2; break;
    case VIDMM_BACKEND_AVX2: need = VIDMM_CPU_AVX2; break;
    case VIDMM_BACKEND_AVX512: need = VIDMM_CPU_AVX512F | VIDMM_CPU_AVX512BW | VIDMM_CPU_AVX512VL; break;
    case VIDMM_BACKEND_NEON: need = VIDMM_CPU_NEON; break;
    default: break;
    }
    char *r = reasons[b];
    if (need != 0 && (f & need) == need)
        snprintf(r, sizeof(reasons[b]), "%s backend not built or disabled (VIDMM_DISABLE_CPU_FEATURES)",
                 name ? name : "?");
    else
        snprintf(r, sizeof(reasons[b]), "cpu lacks %s", name ? name : "?");
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Buffers.
 * ------------------------------------------------------------------------------------------- */

void *b_map_prefaulted(size_t n)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#endif
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    /* MAP_POPULATE maps the zero page in for reads only on some kernels; writing every page is
     * what guarantees no page fault is ever timed. No transparent huge pages are asked for:
     * they made no measurable difference on the project's machine (shared/perf-notes.md,
     * "Block-linear tiling"), and base pages are what most callers' buffers get. */
    memset(p, 0, n);
    return p;
}

int b_buffers_alloc(size_t cap)
{
    b_env.src = b_map_prefaulted(cap);
    b_env.dst = b_map_prefaulted(cap);
    if (b_env.src == NULL || b_env.dst == NULL) {
        fprintf(stderr, "vidmm_bench: cannot map 2 x %zu MiB of buffers\n", cap / B_MiB);
        return -1;
    }
    b_env.cap = cap;
    /* A non-repeating source (xorshift64), so a copy that drops or reorders bytes is caught by
     * the check after the first call. */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t off = 0; off + 8 <= cap; off += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(b_env.src + off, &x, 8);
    }
    return 0;
}

void b_dirty(void *p, size_t n, uint64_t seq)
{
    unsigned char *c = p;
    /* A 64-byte stride dirties every line on every CPU with lines of 64 bytes or more. */
    for (size_t off = 0; off + 8 <= n; off += 64)
        memcpy(c + off, &seq, 8);
}

#if defined(__x86_64__) || defined(__i386__)
const enum vidmm_backend b_backends[] = { VIDMM_BACKEND_SCALAR, VIDMM_BACKEND_SSE2, VIDMM_BACKEND_AVX2,
                                          VIDMM_BACKEND_AVX512 };
#elif defined(__aarch64__) || defined(__arm__)
const enum vidmm_backend b_backends[] = { VIDMM_BACKEND_SCALAR, VIDMM_BACKEND_NEON };
#else
const enum vidmm_backend b_backends[] = { VIDMM_BACKEND_SCALAR };
#endif
const size_t b_nbackends = sizeof(b_backends) / sizeof(b_backends[0]);

const char *b_clflush_quick_skip(size_t bytes)
{
    if (b_env.mode == B_MODE_FULL || bytes <= B_QUICK_CLFLUSH_MAX)
        return NULL;
    return "clflush stops at 4 MiB outside --full (~150 ns a line)";
}

int b_mkdir_p(const char *dir)
{
    char path[1024];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

double b_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double b_median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
