/* SPDX-License-Identifier: MIT */
/* tests/common/t_helpers.c - the shared test helpers declared in t_helpers.h. */
#define _GNU_SOURCE
#include "t_helpers.h"

#ifdef T_LITE_HARNESS
#  include "t_lite.h" /* the ThreadSanitizer build: see t_lite.h */
#else
#  include <criterion/criterion.h>
#endif
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* tests/CMakeLists.txt says which SIMD backends the library was built with, so that a backend
 * left out of the build is told apart from one the CPU lacks. */
#ifndef T_BUILT_SSE2
#  define T_BUILT_SSE2 0
#endif
#ifndef T_BUILT_AVX2
#  define T_BUILT_AVX2 0
#endif
#ifndef T_BUILT_AVX512
#  define T_BUILT_AVX512 0
#endif
#ifndef T_BUILT_MOVDIR64B
#  define T_BUILT_MOVDIR64B 0
#endif
#ifndef T_BUILT_NEON
#  define T_BUILT_NEON 0
#endif
#ifndef T_ARCH_X86
#  define T_ARCH_X86 0
#endif

/* ---------------------------------------------------------------------------------------------
 * Seed and PRNG.
 * ------------------------------------------------------------------------------------------- */

/* Any fixed value will do; this one spells "vidmm" in ASCII. */
#define T_DEFAULT_SEED 0x766964606dull

static unsigned long long seed_value;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static void seed_read(void)
{
    const char *env = getenv("VIDMM_TEST_SEED");
    seed_value = T_DEFAULT_SEED;
    if (env != NULL && *env != '\0') {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(env, &end, 0);
        if (errno == 0 && *end == '\0')
            seed_value = v;
    }
}

unsigned long long t_seed(void)
{
    /* Once, because the concurrency suite draws numbers from several threads. */
    pthread_once(&seed_once, seed_read);
    return seed_value;
}

/* SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
 * one add and three multiply-xorshift steps, good enough to pick lengths and offsets, and
 * every state, zero included, is a valid seed. */
uint64_t t_rng_next(struct t_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void t_rng_init(struct t_rng *r, uint64_t stream)
{
    r->state = (uint64_t)t_seed() ^ (stream * 0xD1B54A32D192ED03ull);
    (void)t_rng_next(r);
}

size_t t_rng_below(struct t_rng *r, size_t bound)
{
    /* The modulo bias is below 2^-40 for the bounds used here: irrelevant for test inputs. */
    return (size_t)(t_rng_next(r) % bound);
}

size_t t_rng_len(struct t_rng *r, size_t lo, size_t hi)
{
    /* Pick a bit length between those of lo and hi, then a value of that length, clamped. */
    unsigned lo_bits = 0, hi_bits = 0;
    while (lo_bits < 63 && ((size_t)1 << lo_bits) <= lo)
        lo_bits++;
    while (hi_bits < 63 && ((size_t)1 << hi_bits) <= hi)
        hi_bits++;
    unsigned bits = lo_bits + (unsigned)t_rng_below(r, hi_bits - lo_bits + 1);
    size_t top = bits ? ((size_t)1 << bits) - 1 : 0;
    size_t v = (size_t)t_rng_next(r) & top;
    if (v < lo)
        v = lo + (v % (hi - lo + 1));
    if (v > hi)
        v = hi;
    return v;
}

void t_rng_bytes(struct t_rng *r, void *p, size_t n)
{
    unsigned char *d = p;
    while (n >= 8) {
        uint64_t w = t_rng_next(r);
        memcpy(d, &w, 8);
        d += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = t_rng_next(r);
        memcpy(d, &w, n);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Guarded regions.
 * ------------------------------------------------------------------------------------------- */

static char fault_context[256];

void t_fault_context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fault_context, sizeof(fault_context), fmt, ap);
    va_end(ap);
}

/* Only async-signal-safe calls here: write() and hand-made hex. */
static void fault_handler(int sig, siginfo_t *si, void *uctx)
{
    static const char hex[] = "0123456789abcdef";
    char addr[2 + 16];
    uintptr_t a = (uintptr_t)si->si_addr;
    (void)uctx;
    addr[0] = '0';
    addr[1] = 'x';
    for (int i = 0; i < 16; i++)
        addr[2 + i] = hex[(a >> (60 - 4 * i)) & 15];
    static const char m1[] = "\n*** memory fault at ";
    static const char m2[] = " (a guard page?) during: ";
    ssize_t r = write(2, m1, sizeof(m1) - 1);
    r = write(2, addr, sizeof(addr));
    r = write(2, m2, sizeof(m2) - 1);
    r = write(2, fault_context, strnlen(fault_context, sizeof(fault_context)));
    r = write(2, "\n", 1);
    (void)r;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_fault_handler(void)
{
    static bool installed;
    if (installed)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    installed = true;
}

void t_region_init(struct t_region *g, size_t len)
{
    install_fault_handler();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (len + page - 1) / page * page;
    if (body == 0)
        body = page;

    g->map_len = body + 2 * page;
    g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(g->map != MAP_FAILED, "mmap of %zu bytes failed: %s", g->map_len, strerror(errno));
    unsigned char *base = g->map;
    cr_assert(mprotect(base, page, PROT_NONE) == 0, "mprotect (leading guard): %s", strerror(errno));
    cr_assert(mprotect(base + page + body, page, PROT_NONE) == 0, "mprotect (trailing guard): %s",
              strerror(errno));
    g->lo = base + page;
    g->hi = base + page + body;
}

void t_region_fini(struct t_region *g)
{
    if (g->map != NULL && g->map != MAP_FAILED)
        munmap(g->map, g->map_len);
    memset(g, 0, sizeof(*g));
}

/* ---------------------------------------------------------------------------------------------
 * Byte checks.
 * ------------------------------------------------------------------------------------------- */

ptrdiff_t t_find_not(const void *p, size_t n, unsigned char v)
{
    /* Eight bytes at a time (no shared state, so threads may call it concurrently); the byte
     * loop only locates the difference. */
    const unsigned char *s = p;
    const uint64_t vv = 0x0101010101010101ull * v;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w != vv)
            break;
    }
    for (; i < n; i++)
        if (s[i] != v)
            return (ptrdiff_t)i;
    return -1;
}

ptrdiff_t t_find_diff(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    if (n == 0 || memcmp(x, y, n) == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return (ptrdiff_t)i;
    return -1;
}

uint64_t t_checksum(const void *p, size_t n)
{
    /* FNV-1a over 8-byte words, then the tail's bytes: one load in eight (the sanitizers and
     * valgrind check each). Each step is a bijection of the word, so any one word that
     * differs changes the sum, as any one byte did byte by byte. */
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

/* ---------------------------------------------------------------------------------------------
 * Backends.
 * ------------------------------------------------------------------------------------------- */

const char *t_backend_label(enum vidmm_backend b)
{
    switch (b) {
    case VIDMM_BACKEND_AUTO: return "auto";
    case VIDMM_BACKEND_SCALAR: return "scalar";
    case VIDMM_BACKEND_SSE2: return "sse2";
    case VIDMM_BACKEND_AVX2: return "avx2";
    case VIDMM_BACKEND_AVX512: return "avx512";
    case VIDMM_BACKEND_NEON: return "neon";
    default: return "?";
    }
}

/* The instructions each backend is built for, as kernels.h names them: AVX-512 means F + BW +
 * VL; the AVX2 backend also relies on AVX and on SSE4.1 streaming loads. */
uint64_t t_backend_cpu_bits(enum vidmm_backend b)
{
    const uint64_t avx2 = VIDMM_CPU_SSE2 | VIDMM_CPU_SSE41 | VIDMM_CPU_AVX | VIDMM_CPU_AVX2;
    switch (b) {
    case VIDMM_BACKEND_SCALAR: return 0;
    case VIDMM_BACKEND_SSE2: return VIDMM_CPU_SSE2;
    case VIDMM_BACKEND_AVX2: return avx2;
    case VIDMM_BACKEND_AVX512: return avx2 | VIDMM_CPU_AVX512F | VIDMM_CPU_AVX512BW | VIDMM_CPU_AVX512VL;
    case VIDMM_BACKEND_NEON: return VIDMM_CPU_NEON;
    default: return ~0ull;
    }
}

bool t_backend_built(enum vidmm_backend b)
{
    switch (b) {
    case VIDMM_BACKEND_SCALAR: return true;
    case VIDMM_BACKEND_SSE2: return T_BUILT_SSE2;
    case VIDMM_BACKEND_AVX2: return T_BUILT_AVX2;
    case VIDMM_BACKEND_AVX512: return T_BUILT_AVX512;
    case VIDMM_BACKEND_NEON: return T_BUILT_NEON;
    default: return false;
    }
}

bool t_movdir64b_built(void)
{
    return T_BUILT_MOVDIR64B;
}

bool t_arch_x86(void)
{
    return T_ARCH_X86;
}

uint64_t t_cpu_usable(void)
{
    struct vidmm_cpu_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    cr_assert_eq(vidmm_cpu_info(&info), 0, "vidmm_cpu_info() failed");
    return info.usable;
}

/* The names of the missing features, for the skip message ("CPU lacks avx512f,avx512bw"). */
static void missing_features(uint64_t need, uint64_t have, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int bit = 0; bit < 64; bit++) {
        uint64_t m = 1ull << bit;
        if (!(need & m) || (have & m))
            continue;
        const char *name = vidmm_cpu_feature_name(m);
        int w = snprintf(out + len, cap - len, "%s%s", len ? "," : "", name ? name : "?");
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
    }
}

void t_require_backend(enum vidmm_backend b)
{
    const char *name = t_backend_label(b);
    uint64_t need = t_backend_cpu_bits(b), usable = t_cpu_usable();
    bool built = t_backend_built(b), cpu_ok = (usable & need) == need;
    bool supported = vidmm_backend_supported(b);

    if (built && cpu_ok) {
        cr_assert(supported, "backend %s is built and the CPU has its features, but "
                  "vidmm_backend_supported() says no", name);
        return;
    }
    cr_assert(!supported, "vidmm_backend_supported(%s) is true although %s", name,
              built ? "the CPU lacks its features" : "the backend is not built");

    /* The library must refuse the backend cleanly: VIDMM_E_UNSUPPORTED, nothing written. */
    unsigned char src[64], dst[64];
    memset(src, 0x11, sizeof(src));
    memset(dst, T_SENTINEL, sizeof(dst));
    struct vidmm_kernel_opts o = t_opts(b, VIDMM_STRATEGY_AUTO);
    int rc = vidmm_copy_ex(dst, src, sizeof(dst), VIDMM_MEM_CACHED, &o);
    cr_assert_eq(rc, VIDMM_E_UNSUPPORTED, "vidmm_copy_ex(backend=%s) returned %d, want VIDMM_E_UNSUPPORTED", name, rc);
    rc = vidmm_fill32_ex(dst, 0x01020304u, sizeof(dst), VIDMM_MEM_CACHED, &o);
    cr_assert_eq(rc, VIDMM_E_UNSUPPORTED, "vidmm_fill32_ex(backend=%s) returned %d, want VIDMM_E_UNSUPPORTED", name,
                 rc);
    cr_assert_eq(t_find_not(dst, sizeof(dst), T_SENTINEL), -1, "a refused %s call wrote to the destination", name);

    if (!built)
        cr_skip_test("the %s backend is not built (VIDMM_ARCH / VIDMM_SIMD / VIDMM_NO_*)", name);
    char missing[128];
    missing_features(need, usable, missing, sizeof(missing));
    struct vidmm_cpu_info info;
    memset(&info, 0, sizeof(info));
    info.size = sizeof(info);
    if (vidmm_cpu_info(&info) == 0 && (info.features & need) == need)
        cr_skip_test("%s masked by VIDMM_DISABLE_CPU_FEATURES (%s)", name, missing);
    cr_skip_test("CPU lacks %s (needs %s)", name, missing);
}

struct vidmm_kernel_opts t_opts(enum vidmm_backend b, enum vidmm_strategy s)
{
    struct vidmm_kernel_opts o = VIDMM_KERNEL_OPTS_INIT;
    o.backend = b;
    o.strategy = s;
    return o;
}

const char *t_strategy_label(enum vidmm_strategy s)
{
    switch (s) {
    case VIDMM_STRATEGY_AUTO: return "auto";
    case VIDMM_STRATEGY_TEMPORAL: return "temporal";
    case VIDMM_STRATEGY_NONTEMPORAL: return "nontemporal";
    case VIDMM_STRATEGY_MOVDIR64B: return "movdir64b";
    case VIDMM_STRATEGY_STREAM_LOAD: return "stream_load";
    case VIDMM_STRATEGY_LIBC: return "libc";
    default: return "?";
    }
}

const char *t_kind_label(enum vidmm_mem_kind k)
{
    switch (k) {
    case VIDMM_MEM_CACHED: return "cached";
    case VIDMM_MEM_NONCOHERENT: return "noncoherent";
    case VIDMM_MEM_WRITE_COMBINED: return "write_combined";
    default: return "?";
    }
}

/* ---------------------------------------------------------------------------------------------
 * Log recorder.
 * ------------------------------------------------------------------------------------------- */

void t_log_reset(struct t_log *log)
{
    for (int i = 0; i < 4; i++)
        atomic_store(&log->count[i], 0);
    atomic_store(&log->delay_ms, 0);
    atomic_store(&log->seen, 0);
    log->first_warn[0] = '\0';
    log->first_debug[0] = '\0';
}

void t_log_record(void *arg, enum vidmm_log_level level, const char *msg)
{
    struct t_log *log = arg;
    int first = atomic_fetch_add(&log->seen, 1) == 0;
    int prev = (unsigned)level < 4 ? atomic_fetch_add(&log->count[level], 1) : 1;

    /* Only the first warning writes the text, so concurrent deliveries never race on it. */
    if (level == VIDMM_LOG_WARN && prev == 0)
        snprintf(log->first_warn, sizeof(log->first_warn), "%s", msg);
    if (level == VIDMM_LOG_DEBUG && prev == 0)
        snprintf(log->first_debug, sizeof(log->first_debug), "%s", msg);
    int delay = atomic_load(&log->delay_ms);
    if (first && delay > 0) {
        struct timespec ts = { delay / 1000, (long)(delay % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
}
