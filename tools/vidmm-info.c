/* SPDX-License-Identifier: MIT */
/* tools/vidmm-info.c - report what this machine, OS and build of vidmm offer: version, CPU
 * features, the kernel backend in use, cache sizes, which huge-page tiers work, and whether
 * io_uring and userfaultfd are usable. Meant for bug reports and for checking a host before a
 * benchmark run.
 *
 * Every probe is tried for real (a huge page is mapped and touched, a NOP goes round the ring)
 * because the sysctls and files alone do not say whether a call will succeed: seccomp, cgroup
 * limits and kernel configuration all interfere. A probe that fails is reported with the errno
 * string and, where the cause is knowable, the setting behind it; it never changes the exit
 * status. The exit status is non-zero only when the library itself misbehaves (vidmm_cpu_info()
 * fails or a small copy/fill self-check gives wrong bytes), or on a bad command line.
 *
 * Nothing here changes a system setting; the probes only map, touch and unmap their own memory.
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <vidmm/vidmm.h>

#ifdef VIDMM_INFO_HAVE_LIBURING
#  include <liburing.h>
#endif
#ifdef VIDMM_INFO_HAVE_HUGETLBFS
/* hugetlbfs.h uses size_t without including anything (libhugetlbfs 2.23). */
#  include <hugetlbfs.h>
#endif

#define MIB (1024u * 1024u)
/* The huge page size every probe asks for: x86-64's PMD size and the default hugetlb size on
 * x86-64 and 4 KiB-granule AArch64. THP only ever gives PMD-sized pages to anonymous memory. */
#define HUGE_2M (2u * MIB)

/* ---------------------------------------------------------------------------------------------
 * Output. The same calls print either an indented text report or one JSON object, so the two
 * formats can never disagree about what was probed. Text labels are for people; JSON keys are
 * stable identifiers for scripts (snake_case, sizes in bytes).
 * ------------------------------------------------------------------------------------------- */
#define MAX_DEPTH 8

static bool json;
static int depth;                   /* objects open below the root */
static bool first_member[MAX_DEPTH + 1];

static void indent(int n)
{
    for (int i = 0; i < n; i++)
        fputs("  ", stdout);
}

static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        default:
            if (*p < 0x20)
                printf("\\u%04x", *p);
            else
                putchar(*p);
        }
    }
    putchar('"');
}

/* Starts one member: the key and separator in JSON, the aligned label in text. */
static void member(const char *key, const char *label)
{
    if (json) {
        if (!first_member[depth])
            putchar(',');
        first_member[depth] = false;
        putchar('\n');
        indent(depth + 1);
        json_string(key);
        fputs(": ", stdout);
    } else {
        char buf[80];
        snprintf(buf, sizeof buf, "%s:", label);
        indent(depth);
        printf("%-*s ", 30 - 2 * depth, buf);
    }
}

static void out_begin(void)
{
    if (json)
        putchar('{');
    depth = 0;
    first_member[0] = true;
}

static void out_end(void)
{
    if (json)
        fputs("\n}\n", stdout);
}

static void obj_begin(const char *key, const char *label)
{
    if (json) {
        member(key, label);
        putchar('{');
    } else {
        indent(depth);
        printf("%s:\n", label);
    }
    if (depth < MAX_DEPTH)
        depth++;
    first_member[depth] = true;
}

static void obj_end(void)
{
    if (json) {
        putchar('\n');
        indent(depth);
        putchar('}');
    }
    if (depth > 0)
        depth--;
}

static void out_str(const char *key, const char *label, const char *value)
{
    member(key, label);
    if (json) {
        if (value)
            json_string(value);
        else
            fputs("null", stdout);
    } else {
        printf("%s\n", value ? value : "(none)");
    }
}

static void out_u64(const char *key, const char *label, uint64_t v)
{
    member(key, label);
    printf(json ? "%" PRIu64 : "%" PRIu64 "\n", v);
}

/* A signed value where -1 means "could not be read" (null in JSON). */
static void out_i64_or_unknown(const char *key, const char *label, int64_t v)
{
    member(key, label);
    if (v < 0)
        fputs(json ? "null" : "(unknown)\n", stdout);
    else
        printf(json ? "%" PRId64 : "%" PRId64 "\n", v);
}

static void out_bool(const char *key, const char *label, bool v)
{
    member(key, label);
    if (json)
        fputs(v ? "true" : "false", stdout);
    else
        puts(v ? "yes" : "no");
}

static void out_hex(const char *key, const char *label, uint64_t v)
{
    member(key, label);
    /* JSON has no hex literals; scripts get the number, people get hex. */
    printf(json ? "%" PRIu64 : "0x%" PRIx64 "\n", v);
}

static void human_size(char *buf, size_t len, uint64_t bytes)
{
    if (bytes >= MIB && bytes % MIB == 0)
        snprintf(buf, len, "%" PRIu64 " MiB", bytes / MIB);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, len, "%" PRIu64 " KiB", bytes / 1024);
    else
        snprintf(buf, len, "%" PRIu64 " B", bytes);
}

/* A size in bytes; 0 is printed as unknown when 'zero_unknown'. */
static void out_size(const char *key, const char *label, uint64_t bytes, bool zero_unknown)
{
    member(key, label);
    if (zero_unknown && bytes == 0) {
        fputs(json ? "null" : "(unknown)\n", stdout);
        return;
    }
    if (json) {
        printf("%" PRIu64, bytes);
    } else {
        char buf[32];
        human_size(buf, sizeof buf, bytes);
        printf("%s\n", buf);
    }
}

/* A size in bytes where -1 means "could not be read". */
static void out_size_or_unknown(const char *key, const char *label, int64_t bytes)
{
    if (bytes < 0)
        out_i64_or_unknown(key, label, -1);
    else
        out_size(key, label, (uint64_t)bytes, false);
}

static void out_list(const char *key, const char *label, const char *const *items, size_t n)
{
    member(key, label);
    if (json) {
        putchar('[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                fputs(", ", stdout);
            json_string(items[i]);
        }
        putchar(']');
    } else {
        if (n == 0)
            fputs("(none)", stdout);
        for (size_t i = 0; i < n; i++)
            printf("%s%s", i ? " " : "", items[i]);
        putchar('\n');
    }
}

/* The verdict of one probe: "usable" plus a sentence saying what was seen or why it failed. */
static void out_status(bool usable, const char *detail)
{
    if (json) {
        member("usable", "usable");
        fputs(usable ? "true" : "false", stdout);
        member("detail", "detail");
        json_string(detail);
    } else {
        member("status", "status");
        printf("%s%s%s\n", usable ? "usable" : "not usable", *detail ? ": " : "", detail);
    }
}

/* The verdict of a self-check: "passed" plus what was checked or what went wrong. */
static void out_check(bool passed, const char *detail)
{
    if (json) {
        member("passed", "passed");
        fputs(passed ? "true" : "false", stdout);
        member("detail", "detail");
        json_string(detail);
    } else {
        member("status", "status");
        printf("%s: %s\n", passed ? "passed" : "FAILED", detail);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Small readers for /proc and /sys. Each returns -1 (or false) when the file is missing or
 * unreadable, which the report shows as unknown rather than guessing.
 * ------------------------------------------------------------------------------------------- */
static bool read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return true;
}

static int64_t read_long(const char *path)
{
    char buf[64];
    if (!read_file(path, buf, sizeof buf))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf)
        return -1;
    return v;
}

/* A field of /proc/meminfo ("HugePages_Free"), as printed (kB for sizes, a count otherwise). */
static int64_t meminfo_field(const char *name)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    size_t len = strlen(name);
    int64_t v = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, name, len) == 0 && line[len] == ':') {
            v = strtoll(line + len + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* The bracketed choice of a sysfs mode file ("always [madvise] never" -> "madvise"). */
static bool sysfs_mode(const char *path, char *out, size_t len)
{
    char buf[256];
    if (!read_file(path, buf, sizeof buf))
        return false;
    char *lb = strchr(buf, '['), *rb = lb ? strchr(lb, ']') : NULL;
    if (!lb || !rb)
        return false;
    snprintf(out, len, "%.*s", (int)(rb - lb - 1), lb + 1);
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * Version, CPU and kernels: everything the library itself reports.
 * ------------------------------------------------------------------------------------------- */
static void report_version(void)
{
    obj_begin("version", "version");
    out_str("library", "library", vidmm_version_string());
    out_u64("library_number", "library number", vidmm_version_number());
    out_str("header", "built against", VIDMM_VERSION_STRING);
    obj_end();
}

/* Collects the names of the set bits of 'mask' that the library can name. */
static size_t feature_names(uint64_t mask, const char **names, size_t cap)
{
    size_t n = 0;
    for (unsigned i = 0; i < 64 && n < cap; i++) {
        uint64_t bit = 1ull << i;
        const char *name = vidmm_cpu_feature_name(bit);
        if ((mask & bit) && name)
            names[n++] = name;
    }
    return n;
}

static void report_options(void)
{
    /* Only the environment is shown: it is what a bug report needs to reproduce the run, and
     * the library has already folded it into the values printed elsewhere. */
    obj_begin("environment", "environment");
    for (int i = 0; i < VIDMM_OPT_COUNT_; i++) {
        const char *name = vidmm_option_name((enum vidmm_option)i);
        if (name)
            out_str(name, name, getenv(name));
    }
    obj_end();
}

/* Returns false when the library gave an error it must not give on any machine. */
static bool report_cpu(void)
{
    struct vidmm_cpu_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    int rc = vidmm_cpu_info(&info);

    obj_begin("cpu", "cpu");
    if (rc < 0) {
        out_str("error", "error", vidmm_strerror(rc));
        obj_end();
        return false;
    }
    out_str("vendor", "vendor", info.vendor[0] ? info.vendor : NULL);
    out_str("model", "model", info.model[0] ? info.model : NULL);

    const char *names[64];
    size_t n = feature_names(info.features, names, 64);
    out_list("features", "features (cpu+os)", names, n);
    n = feature_names(info.usable, names, 64);
    out_list("usable", "usable", names, n);
    n = feature_names(info.features & ~info.usable, names, 64);
    out_list("masked", "masked", names, n);
    out_str("disable_cpu_features", "VIDMM_DISABLE_CPU_FEATURES",
            vidmm_option_get_string(VIDMM_OPT_DISABLE_CPU_FEATURES));

    out_size("cache_line", "cache line", info.cache_line, true);
    out_size("llc_bytes", "last-level cache", info.llc_bytes, true);
    out_size("l2_bytes", "L2 cache", info.l2_bytes, true);
    out_size("nt_threshold", "NT threshold", info.nt_threshold, false);
    out_str("stream_linear_rows", "stream linear rows",
            (info.store_policy & VIDMM_STORE_POLICY_STREAM_LINEAR_ROWS)
                ? "yes (streaming stores beyond the NT threshold)"
                : "no (ordinary stores)");
    obj_end();
    return true;
}

/* A copy and a fill of a few odd-sized, misaligned buffers through the chosen backend. A tool
 * that reports a backend should at least know that the backend moves bytes correctly. */
static bool kernels_self_check(char *why, size_t len)
{
    enum { N = 4096 + 67 };
    static unsigned char src[N + 64], dst[N + 64];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131u + 7u);
    memset(dst, 0, sizeof dst);
    int rc = vidmm_copy(dst + 3, src + 1, N, VIDMM_MEM_CACHED);
    if (rc < 0) {
        snprintf(why, len, "vidmm_copy: %s", vidmm_strerror(rc));
        return false;
    }
    if (memcmp(dst + 3, src + 1, N) != 0 || dst[2] != 0 || dst[N + 3] != 0) {
        snprintf(why, len, "vidmm_copy wrote wrong bytes");
        return false;
    }
    rc = vidmm_fill32(dst + 1, 0x11223344u, 4096, VIDMM_MEM_CACHED);
    if (rc < 0) {
        snprintf(why, len, "vidmm_fill32: %s", vidmm_strerror(rc));
        return false;
    }
    static const unsigned char le[4] = { 0x44, 0x33, 0x22, 0x11 };
    for (size_t i = 0; i < 4096; i++) {
        if (dst[1 + i] != le[i % 4]) {
            snprintf(why, len, "vidmm_fill32 wrote wrong bytes at offset %zu", i);
            return false;
        }
    }
    snprintf(why, len, "copy and fill32 give the expected bytes");
    return true;
}

static bool report_kernels(void)
{
    obj_begin("kernels", "kernels");
    out_str("backend", "backend", vidmm_backend_name());

    obj_begin("backends_supported", "backends supported");
    for (int b = VIDMM_BACKEND_SCALAR; b < VIDMM_BACKEND_COUNT_; b++) {
        const char *name = vidmm_backend_to_string((enum vidmm_backend)b);
        if (name)
            out_bool(name, name, vidmm_backend_supported((enum vidmm_backend)b));
    }
    obj_end();

    out_str("wc_copy_variant", "copy-to-WC variant", vidmm_wc_copy_variant());

    static const struct { enum vidmm_flush_op op; const char *key, *label; } ops[] = {
        { VIDMM_FLUSH_WRITEBACK, "writeback", "writeback" },
        { VIDMM_FLUSH_WRITEBACK_INVALIDATE, "writeback_invalidate", "writeback+invalidate" },
        { VIDMM_FLUSH_INVALIDATE, "invalidate", "invalidate" },
    };
    obj_begin("flush_insn", "flush instruction");
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        enum vidmm_flush_insn insn = vidmm_flush_insn(ops[i].op);
        /* AUTO here means no instruction: vidmm_flush() returns VIDMM_E_UNSUPPORTED. */
        out_str(ops[i].key, ops[i].label, insn == VIDMM_FLUSH_INSN_AUTO ? NULL : vidmm_flush_insn_name(insn));
    }
    obj_end();

    char why[128];
    bool ok = kernels_self_check(why, sizeof why);
    obj_begin("self_check", "self-check");
    out_check(ok, why);
    obj_end();
    obj_end();
    return ok;
}

/* ---------------------------------------------------------------------------------------------
 * Huge pages, in the order the engine tries them (DESIGN.md "Memory").
 * ------------------------------------------------------------------------------------------- */
struct hugetlb_pool {
    int64_t nr_hugepages, nr_overcommit, total, free, rsvd, surp, page_kb;
};

static void read_hugetlb_pool(struct hugetlb_pool *p)
{
    p->nr_hugepages = read_long("/proc/sys/vm/nr_hugepages");
    p->nr_overcommit = read_long("/proc/sys/vm/nr_overcommit_hugepages");
    p->total = meminfo_field("HugePages_Total");
    p->free = meminfo_field("HugePages_Free");
    p->rsvd = meminfo_field("HugePages_Rsvd");
    p->surp = meminfo_field("HugePages_Surp");
    p->page_kb = meminfo_field("Hugepagesize");
}

/* Why a hugetlb mapping of one default-sized page most likely failed, from the pool counters.
 * Free pages already promised to other mappings (Rsvd) cannot be had either. */
static const char *hugetlb_pool_hint(const struct hugetlb_pool *p)
{
    if (p->nr_hugepages == 0 && p->nr_overcommit <= 0)
        return "no huge pages reserved (vm.nr_hugepages=0, vm.nr_overcommit_hugepages=0)";
    if (p->free >= 0 && p->rsvd >= 0 && p->free - p->rsvd <= 0 && p->nr_overcommit <= 0)
        return "every reserved huge page is in use or promised";
    return "";
}

#ifdef VIDMM_INFO_HAVE_HUGETLBFS
/* get_huge_pages() with stderr sent to a temporary file: libhugetlbfs prints its own account of
 * a failure ("New region mapping failed ...") there, and that belongs in the report's detail
 * line rather than interleaved with the report. '*err' receives errno; 'msg' the first line the
 * library printed, without its "libhugetlbfs: " prefix ("" when it printed nothing). */
static void *get_huge_pages_captured(size_t size, int *err, char *msg, size_t len)
{
    msg[0] = '\0';
    FILE *tmp = tmpfile();
    int saved = -1;
    fflush(stderr);
    if (tmp) {
        saved = dup(STDERR_FILENO);
        if (saved >= 0 && dup2(fileno(tmp), STDERR_FILENO) < 0) {
            close(saved);
            saved = -1;
        }
    }
    errno = 0;
    void *p = get_huge_pages(size, GHP_DEFAULT);
    *err = errno;
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    if (tmp) {
        rewind(tmp);
        size_t n = fread(msg, 1, len - 1, tmp);
        msg[n] = '\0';
        fclose(tmp);
        msg[strcspn(msg, "\n")] = '\0';
        const char *prefix = "libhugetlbfs: ";
        if (strncmp(msg, prefix, strlen(prefix)) == 0)
            memmove(msg, msg + strlen(prefix), strlen(msg + strlen(prefix)) + 1);
    }
    return p;
}

static void probe_libhugetlbfs(const struct hugetlb_pool *pool)
{
    char detail[512], said[200], sz[32];
    bool ok = false;

    errno = 0;
    long size = gethugepagesize();
    int size_err = errno;
    const char *mount = hugetlbfs_find_path();
    out_size_or_unknown("page_size", "page size", size > 0 ? size : -1);
    out_str("mount", "hugetlbfs mount", mount);

    if (size <= 0) {
        snprintf(detail, sizeof detail, "gethugepagesize(): %s (kernel without hugetlb support?)",
                 strerror(size_err ? size_err : ENOSYS));
    } else {
        int err;
        human_size(sz, sizeof sz, (uint64_t)size);
        void *p = get_huge_pages_captured((size_t)size, &err, said, sizeof said);
        if (!p) {
            const char *hint = hugetlb_pool_hint(pool);
            snprintf(detail, sizeof detail, "get_huge_pages(%s): %s%s%s%s%s%s", sz,
                     strerror(err ? err : ENOMEM), *hint ? " - " : "", hint,
                     *said ? " [libhugetlbfs: " : "", said, *said ? "]" : "");
        } else {
            /* The reservation is taken at map time; touching proves a page was really given. */
            memset(p, 0x5a, (size_t)size);
            free_huge_pages(p);
            ok = true;
            snprintf(detail, sizeof detail, "get_huge_pages(%s) mapped and touched one page%s", sz,
                     mount ? "" : " (no hugetlbfs mount: the library used MAP_HUGETLB)");
        }
    }
    out_status(ok, detail);
}
#endif

static void probe_explicit(const struct hugetlb_pool *pool)
{
    char detail[512];
    bool ok = false;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB;
#ifdef MAP_HUGE_2MB
    flags |= MAP_HUGE_2MB; /* ask for 2 MiB even where the default hugetlb size differs */
#endif
    void *p = mmap(NULL, HUGE_2M, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        const char *hint = hugetlb_pool_hint(pool);
        snprintf(detail, sizeof detail, "mmap(MAP_HUGETLB, 2 MiB): %s%s%s", strerror(err),
                 *hint ? " - " : "", hint);
    } else {
        /* A private hugetlb mapping reserves its page in mmap(), so the write cannot SIGBUS. */
        memset(p, 0x5a, HUGE_2M);
        munmap(p, HUGE_2M);
        ok = true;
        snprintf(detail, sizeof detail, "mmap(MAP_HUGETLB, 2 MiB) mapped and touched one page");
    }
    out_status(ok, detail);
    out_i64_or_unknown("nr_hugepages", "vm.nr_hugepages", pool->nr_hugepages);
    out_i64_or_unknown("nr_overcommit_hugepages", "vm.nr_overcommit_hugepages", pool->nr_overcommit);
    out_i64_or_unknown("total", "HugePages_Total", pool->total);
    out_i64_or_unknown("free", "HugePages_Free", pool->free);
    out_i64_or_unknown("reserved", "HugePages_Rsvd", pool->rsvd);
    out_i64_or_unknown("surplus", "HugePages_Surp", pool->surp);
}

/* AnonHugePages (kB) of the /proc/self/smaps mapping that contains 'addr', -1 if not found. */
static int64_t smaps_anon_huge_kb(uintptr_t addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    bool inside = false;
    int64_t kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        /* A mapping header starts with "lo-hi "; a field line ("AnonHugePages:") never scans
         * as two hex numbers joined by '-'. */
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            inside = addr >= lo && addr < hi;
            continue;
        }
        if (inside && strncmp(line, "AnonHugePages:", 14) == 0) {
            kb = strtoll(line + 14, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

static void probe_thp(void)
{
    char enabled[32] = "", defrag[32] = "", detail[256];
    bool have_enabled = sysfs_mode("/sys/kernel/mm/transparent_hugepage/enabled", enabled, sizeof enabled);
    bool have_defrag = sysfs_mode("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag);
    bool ok = false;
    int64_t kb = -1;

    /* Over-allocate so a 2 MiB-aligned 2 MiB window exists inside: THP maps a huge page only
     * where a whole aligned PMD range lies in one VMA. */
    size_t len = 2 * HUGE_2M;
    unsigned char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        snprintf(detail, sizeof detail, "mmap of 4 MiB anonymous memory: %s", strerror(errno));
    } else {
        uintptr_t a = ((uintptr_t)base + HUGE_2M - 1) & ~(uintptr_t)(HUGE_2M - 1);
        if (madvise((void *)a, HUGE_2M, MADV_HUGEPAGE) != 0) {
            int err = errno;
            snprintf(detail, sizeof detail, "madvise(MADV_HUGEPAGE): %s%s", strerror(err),
                     err == EINVAL ? " (kernel built without CONFIG_TRANSPARENT_HUGEPAGE?)" : "");
        } else {
            /* The huge page is allocated at the first fault in the window; writing all of it
             * also covers a kernel that faults 4 KiB first and collapses later (khugepaged). */
            memset((void *)a, 0x5a, HUGE_2M);
            kb = smaps_anon_huge_kb(a);
            if (kb < 0) {
                snprintf(detail, sizeof detail, "could not read /proc/self/smaps for the probed range");
            } else if (kb >= (int64_t)(HUGE_2M / 1024)) {
                ok = true;
                snprintf(detail, sizeof detail, "madvise(MADV_HUGEPAGE) on a 2 MiB-aligned region gave %" PRId64 " kB AnonHugePages", kb);
            } else {
                const char *why = "";
                if (have_enabled && strcmp(enabled, "never") == 0)
                    why = " - THP mode is 'never'";
                else if (have_defrag && strcmp(defrag, "never") == 0)
                    why = " - defrag is 'never' and no free 2 MiB block was at hand";
                else
                    why = " - no free 2 MiB block (memory fragmented?) or a cgroup/prctl disables THP";
                snprintf(detail, sizeof detail, "madvise(MADV_HUGEPAGE) succeeded but the region got %" PRId64 " kB AnonHugePages%s", kb, why);
            }
        }
        munmap(base, len);
    }
    out_status(ok, detail);
    out_str("enabled", "enabled", have_enabled ? enabled : NULL);
    out_str("defrag", "defrag", have_defrag ? defrag : NULL);
    out_i64_or_unknown("anon_huge_kb", "AnonHugePages (kB)", kb);
}

static void report_huge_pages(void)
{
    struct hugetlb_pool pool;
    read_hugetlb_pool(&pool);

    obj_begin("huge_pages", "huge pages");
    out_size_or_unknown("default_size", "default hugetlb size", pool.page_kb >= 0 ? pool.page_kb * 1024 : -1);

    obj_begin("libhugetlbfs", "libhugetlbfs");
#ifdef VIDMM_INFO_HAVE_HUGETLBFS
    probe_libhugetlbfs(&pool);
#else
    out_status(false, "vidmm-info was built without libhugetlbfs (install libhugetlbfs-dev and rebuild)");
#endif
    obj_end();

    obj_begin("explicit", "explicit (MAP_HUGETLB)");
    probe_explicit(&pool);
    obj_end();

    obj_begin("transparent", "transparent (THP)");
    probe_thp();
    obj_end();
    obj_end();
}

/* ---------------------------------------------------------------------------------------------
 * io_uring and userfaultfd: the disk tier and the fault-driven paging of the engine.
 * ------------------------------------------------------------------------------------------- */
#ifdef VIDMM_INFO_HAVE_LIBURING
/* Opcodes the disk tier may use: NOP to FSYNC came with io_uring itself (5.1), READ and WRITE
 * (no iovec) with 5.6. */
static const struct { int op; const char *name; } uring_ops[] = {
    { IORING_OP_NOP, "nop" },
    { IORING_OP_READV, "readv" },
    { IORING_OP_WRITEV, "writev" },
    { IORING_OP_READ_FIXED, "read_fixed" },
    { IORING_OP_WRITE_FIXED, "write_fixed" },
    { IORING_OP_FSYNC, "fsync" },
    { IORING_OP_READ, "read" },
    { IORING_OP_WRITE, "write" },
};

static void probe_io_uring(int64_t disabled)
{
    char detail[256];
    bool ok = false;
    struct io_uring ring;
    int rc = io_uring_queue_init(8, &ring, 0);
    if (rc < 0) {
        const char *hint = "";
        if (rc == -ENOSYS)
            hint = " - kernel built without io_uring";
        else if (rc == -EPERM && disabled == 2)
            hint = " - kernel.io_uring_disabled=2";
        else if (rc == -EPERM && disabled == 1)
            hint = " - kernel.io_uring_disabled=1 and this process is not in kernel.io_uring_group";
        else if (rc == -EPERM)
            hint = " - blocked by a seccomp filter or LSM (containers often block io_uring)";
        else if (rc == -ENOMEM)
            hint = " - kernels before 5.12 charge rings to RLIMIT_MEMLOCK";
        snprintf(detail, sizeof detail, "io_uring_queue_init: %s%s", strerror(-rc), hint);
        out_status(false, detail);
        return;
    }

    /* One NOP round trip: setup alone can succeed where submission is later refused. */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    struct io_uring_cqe *cqe = NULL;
    const uint64_t tag = 0x766964606d6dull; /* any value; checks the CQE is ours */
    if (!sqe) {
        snprintf(detail, sizeof detail, "io_uring_get_sqe returned no entry on a fresh ring");
    } else {
        io_uring_prep_nop(sqe);
        sqe->user_data = tag; /* set directly: io_uring_sqe_set_data64() needs liburing 2.2 */
        rc = io_uring_submit(&ring);
        if (rc != 1) {
            snprintf(detail, sizeof detail, "io_uring_submit(NOP): %s", rc < 0 ? strerror(-rc) : "nothing submitted");
        } else if ((rc = io_uring_wait_cqe(&ring, &cqe)) < 0) {
            snprintf(detail, sizeof detail, "io_uring_wait_cqe(NOP): %s", strerror(-rc));
        } else {
            if (cqe->user_data != tag)
                snprintf(detail, sizeof detail, "NOP completion carried the wrong user_data");
            else if (cqe->res < 0)
                snprintf(detail, sizeof detail, "NOP completed with %s", strerror(-cqe->res));
            else {
                ok = true;
                snprintf(detail, sizeof detail, "ring set up and a NOP went round");
            }
            io_uring_cqe_seen(&ring, cqe);
        }
    }
    out_status(ok, detail);
    out_hex("features", "ring features", ring.features);

    struct io_uring_probe *probe = io_uring_get_probe_ring(&ring);
    if (probe) {
        const char *names[sizeof uring_ops / sizeof uring_ops[0]];
        size_t n = 0;
        for (size_t i = 0; i < sizeof uring_ops / sizeof uring_ops[0]; i++)
            if (io_uring_opcode_supported(probe, uring_ops[i].op))
                names[n++] = uring_ops[i].name;
        out_list("ops", "ops supported", names, n);
        io_uring_free_probe(probe);
    } else {
        out_str("ops", "ops supported", NULL); /* IORING_REGISTER_PROBE needs 5.6 */
    }
    io_uring_queue_exit(&ring);
}
#endif

static void report_io_uring(const char *kernel)
{
    /* kernel.io_uring_disabled appeared in 6.6: 0 everyone, 1 only io_uring_group, 2 nobody. */
    int64_t disabled = read_long("/proc/sys/kernel/io_uring_disabled");
    obj_begin("io_uring", "io_uring");
#ifdef VIDMM_INFO_HAVE_LIBURING
    probe_io_uring(disabled);
#else
    out_status(false, "vidmm-info was built without liburing (install liburing-dev and rebuild)");
#endif
    out_str("kernel", "kernel", kernel);
    out_bool("io_uring_disabled_present", "io_uring_disabled sysctl", disabled >= 0);
    out_i64_or_unknown("io_uring_disabled", "kernel.io_uring_disabled", disabled);
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        bool unlimited = rl.rlim_cur == RLIM_INFINITY;
        out_bool("memlock_unlimited", "RLIMIT_MEMLOCK unlimited", unlimited);
        if (!unlimited)
            out_size("memlock_limit", "RLIMIT_MEMLOCK", (uint64_t)rl.rlim_cur, false);
    }
    obj_end();
}

static const struct { uint64_t bit; const char *name; } uffd_features[] = {
    { UFFD_FEATURE_PAGEFAULT_FLAG_WP, "pagefault_flag_wp" },
    { UFFD_FEATURE_EVENT_FORK, "event_fork" },
    { UFFD_FEATURE_EVENT_REMAP, "event_remap" },
    { UFFD_FEATURE_EVENT_REMOVE, "event_remove" },
    { UFFD_FEATURE_MISSING_HUGETLBFS, "missing_hugetlbfs" },
    { UFFD_FEATURE_MISSING_SHMEM, "missing_shmem" },
    { UFFD_FEATURE_EVENT_UNMAP, "event_unmap" },
    { UFFD_FEATURE_SIGBUS, "sigbus" },
    { UFFD_FEATURE_THREAD_ID, "thread_id" },
#ifdef UFFD_FEATURE_MINOR_HUGETLBFS
    { UFFD_FEATURE_MINOR_HUGETLBFS, "minor_hugetlbfs" },
#endif
#ifdef UFFD_FEATURE_MINOR_SHMEM
    { UFFD_FEATURE_MINOR_SHMEM, "minor_shmem" },
#endif
#ifdef UFFD_FEATURE_EXACT_ADDRESS
    { UFFD_FEATURE_EXACT_ADDRESS, "exact_address" },
#endif
#ifdef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
    { UFFD_FEATURE_WP_HUGETLBFS_SHMEM, "wp_hugetlbfs_shmem" },
#endif
#ifdef UFFD_FEATURE_WP_UNPOPULATED
    { UFFD_FEATURE_WP_UNPOPULATED, "wp_unpopulated" },
#endif
#ifdef UFFD_FEATURE_MOVE
    { UFFD_FEATURE_MOVE, "move" },
#endif
};

/* Completes the UFFDIO_API handshake on 'fd' (and closes it); returns 0 or an errno value. */
static int uffd_handshake(int fd, uint64_t *features)
{
    struct uffdio_api api;
    memset(&api, 0, sizeof api);
    api.api = UFFD_API;
    api.features = 0; /* ask for nothing; the kernel answers with everything it offers */
    int err = ioctl(fd, UFFDIO_API, &api) == 0 ? 0 : errno;
    close(fd);
    *features = api.features;
    return err;
}

static void report_userfaultfd(void)
{
    /* vm.unprivileged_userfaultfd (5.2+): 0 means only CAP_SYS_PTRACE may handle kernel-mode
     * faults; user-mode-only handles (UFFD_USER_MODE_ONLY, 5.11+) are allowed regardless,
     * and that is all the engine needs since it only faults on its own user mappings. */
    int64_t unpriv = read_long("/proc/sys/vm/unprivileged_userfaultfd");
    char detail[256];
    bool ok = false;
    uint64_t features = 0;
    const char *mode = NULL;

    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    int err = fd < 0 ? errno : 0;
    if (fd < 0 && err == EPERM) {
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
        if (fd >= 0)
            mode = "user-mode-only";
    } else if (fd >= 0) {
        mode = "full";
    }
    if (fd < 0) {
        const char *hint = "";
        if (err == ENOSYS)
            hint = " - kernel built without CONFIG_USERFAULTFD";
        else if (err == EPERM)
            hint = " - vm.unprivileged_userfaultfd=0 and no CAP_SYS_PTRACE, or blocked by seccomp";
        snprintf(detail, sizeof detail, "userfaultfd(O_CLOEXEC|O_NONBLOCK): %s%s", strerror(err), hint);
    } else if ((err = uffd_handshake(fd, &features)) != 0) {
        snprintf(detail, sizeof detail, "ioctl(UFFDIO_API): %s", strerror(err));
    } else {
        ok = true;
        snprintf(detail, sizeof detail, "userfaultfd() and UFFDIO_API succeeded (%s)", mode);
    }

    obj_begin("userfaultfd", "userfaultfd");
    out_status(ok, detail);
    out_str("mode", "mode", mode);
    out_i64_or_unknown("unprivileged_userfaultfd", "vm.unprivileged_userfaultfd", unpriv);
    if (ok) {
        const char *names[sizeof uffd_features / sizeof uffd_features[0]];
        size_t n = 0;
        for (size_t i = 0; i < sizeof uffd_features / sizeof uffd_features[0]; i++)
            if (features & uffd_features[i].bit)
                names[n++] = uffd_features[i].name;
        out_hex("features", "API features", features);
        out_list("feature_names", "feature names", names, n);
    }

    /* /dev/userfaultfd (6.1+) is the other door: its file mode, not the sysctl, decides who may
     * create handles through it. */
    char dev_buf[160];
    bool dev_ok = false;
    int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev < 0) {
        snprintf(dev_buf, sizeof dev_buf, "open(/dev/userfaultfd): %s", strerror(errno));
    } else {
#ifdef USERFAULTFD_IOC_NEW
        int ufd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
        uint64_t f;
        if (ufd < 0)
            snprintf(dev_buf, sizeof dev_buf, "ioctl(USERFAULTFD_IOC_NEW): %s", strerror(errno));
        else if ((err = uffd_handshake(ufd, &f)) != 0)
            snprintf(dev_buf, sizeof dev_buf, "ioctl(UFFDIO_API): %s", strerror(err));
        else {
            dev_ok = true;
            snprintf(dev_buf, sizeof dev_buf, "USERFAULTFD_IOC_NEW and UFFDIO_API succeeded");
        }
#else
        snprintf(dev_buf, sizeof dev_buf, "built with kernel headers older than 6.1");
#endif
        close(dev);
    }
    obj_begin("dev_userfaultfd", "/dev/userfaultfd");
    out_status(dev_ok, dev_buf);
    obj_end();
    obj_end();
}

/* ---------------------------------------------------------------------------------------------
 * --tune-write: the measured swizzle plans' table for this machine (include/vidmm/swizzle.h,
 * "Measured plans").
 * ------------------------------------------------------------------------------------------- */

/* tune_write() measures the common kinds of copy - whole surfaces of each layout family at 4 and
 * 16 bytes an element (the Intel tilings, laid out in bytes, once), of the sizes in 'sizes_mib',
 * both directions, on the backend in use - and writes the table to 'path'. Returns the exit
 * status: 0, or 1 when a plan or the file fails. */
static int tune_write(const char *path, const unsigned *sizes_mib, unsigned nsizes)
{
    static const struct {
        const char *name;
        enum vidmm_tiling tiling;
        uint32_t amd_mode;
        bool bytes;
    } lays[] = {
        { "block_linear", VIDMM_TILING_BLOCK_LINEAR, 0, false }, { "intel_x", VIDMM_TILING_INTEL_X, 0, true },
        { "intel_y", VIDMM_TILING_INTEL_Y, 0, true },            { "intel_4", VIDMM_TILING_INTEL_4, 0, true },
        { "d3d_4k", VIDMM_TILING_D3D_STD_4K, 0, false },         { "d3d_64k", VIDMM_TILING_D3D_STD_64K, 0, false },
        { "amd_64k_s", VIDMM_TILING_AMD_GFX10, 9, false },       { "morton", VIDMM_TILING_MORTON, 0, false },
    };
    struct timespec t0, t1;
    unsigned kinds = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned si = 0; si < nsizes; si++) {
        for (size_t li = 0; li < sizeof(lays) / sizeof(lays[0]); li++) {
            for (uint32_t elem = 4; elem <= 16; elem *= 4) {
                if (lays[li].bytes && elem != 4)
                    continue;
                const uint32_t e = lays[li].bytes ? 1 : elem;
                const uint64_t px = ((uint64_t)sizes_mib[si] << 20) / e;
                uint32_t w = 1;
                while ((uint64_t)w * w < px)
                    w <<= 1;
                struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(lays[li].tiling);
                struct vidmm_surface_desc d = { sizeof(d), w, (uint32_t)(px / w), 1, e, 1, 1, 1, 1 };
                vidmm_swizzle_plan *p;
                l.amd_swizzle_mode = lays[li].amd_mode;
                int rc = vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &p);
                if (rc == 0) {
                    rc = vidmm_swizzle_plan_measure(p, 0);
                    vidmm_swizzle_plan_destroy(p);
                }
                if (rc != 0) {
                    fprintf(stderr, "vidmm-info: measuring %s %ux%u x %u bytes: %s\n", lays[li].name, w,
                            (unsigned)(px / w), e, vidmm_strerror(rc));
                    return 1;
                }
                kinds++;
            }
        }
    }
    /* The measured parallel threshold (struct vidmm_swizzle_threads, min_bytes 0) of each
     * family at 1 and 4 MiB - where it mostly falls - on every CPU of the pool: a plan's twenty
     * learning copies a direction, the verdicts saved with the winners. */
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned learnt = 0;
    static const unsigned thr_mib[] = { 1, 4 };
    for (unsigned si = 0; ncpu >= 2 && si < sizeof(thr_mib) / sizeof(thr_mib[0]); si++) {
        const size_t bytes = (size_t)thr_mib[si] << 20;
        /* Page-aligned buffers, as a texture's are: bands start on lines (an unaligned buffer can
         * leave a copy one band, which teaches the threshold nothing). */
        unsigned char *lin = aligned_alloc(4096, bytes), *tiled = NULL;
        for (size_t li = 0; lin != NULL && li < sizeof(lays) / sizeof(lays[0]); li++) {
            const uint32_t e = lays[li].bytes ? 1 : 4;
            const uint64_t px = bytes / e;
            uint32_t w = 1;
            while ((uint64_t)w * w < px)
                w <<= 1;
            struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(lays[li].tiling);
            struct vidmm_surface_desc d = { sizeof(d), w, (uint32_t)(px / w), 1, e, 1, 1, 1, 1 };
            l.amd_swizzle_mode = lays[li].amd_mode;
            uint64_t tn = 0;
            vidmm_swizzle_plan *p;
            if (vidmm_surface_tiled_size(&l, &d, &tn) != 0 ||
                (tiled = aligned_alloc(4096, ((size_t)tn + 4095) & ~(size_t)4095)) == NULL ||
                vidmm_swizzle_plan_create(&l, &d, VIDMM_SWIZZLE_PLAN_SURFACE, 0, NULL, &p) != 0) {
                free(tiled);
                tiled = NULL;
                continue;
            }
            struct vidmm_swizzle_threads th = VIDMM_SWIZZLE_THREADS_INIT;
            th.threads = ncpu > VIDMM_SWIZZLE_MAX_THREADS ? VIDMM_SWIZZLE_MAX_THREADS : (uint32_t)ncpu;
            memset(lin, 0x5a, bytes);
            /* Each direction's twenty in a row: a kind's samples follow copies of its own. */
            if (vidmm_swizzle_plan_set_threads(p, &th) == 0)
                for (int k = 0; k < 40; k++)
                    if ((k < 20 ? vidmm_swizzle_plan_swizzle(p, NULL, tiled, (size_t)tn, lin, bytes, 0, 0)
                                : vidmm_swizzle_plan_deswizzle(p, NULL, tiled, (size_t)tn, lin, bytes, 0, 0)) != 0)
                        break;
            learnt++;
            vidmm_swizzle_plan_destroy(p);
            free(tiled);
            tiled = NULL;
        }
        free(lin);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int rc = vidmm_swizzle_tune_save(path);
    if (rc != 0) {
        fprintf(stderr, "vidmm-info: writing %s: %s\n", path, vidmm_strerror(rc));
        return 1;
    }
    struct vidmm_swizzle_tune_stats st = { .size = sizeof(st) };
    vidmm_swizzle_tune_stats(&st);
    printf("vidmm-info: measured %u kinds of copy both ways (%u winners) and the parallel threshold of %u on %ld "
           "threads, on %s in %.0f ms; wrote %s\n", kinds, st.entries, learnt, ncpu >= 2 ? ncpu : 1L,
           vidmm_backend_name(),
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6, path);
    return fflush(stdout) != 0 ? 1 : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Main.
 * ------------------------------------------------------------------------------------------- */
static void usage(FILE *f)
{
    fputs("usage: vidmm-info [--json] [--help]\n"
          "       vidmm-info --tune-write FILE [--tune-sizes MIB[,MIB...]]\n"
          "Report the vidmm version, CPU features, the kernel backend in use, cache sizes, and\n"
          "whether huge pages (libhugetlbfs, MAP_HUGETLB, THP), io_uring and userfaultfd work here.\n"
          "\n"
          "  --json   print one JSON object instead of text\n"
          "  --help   print this help\n"
          "  --tune-write FILE  measure the swizzle walks of the common kinds of copy on this machine\n"
          "           (whole surfaces of each layout, 4 and 16-byte elements, both directions, about\n"
          "           20 ms each) and write the measured plans' table to FILE, for\n"
          "           VIDMM_SWIZZLE_TUNE_FILE; no report is printed\n"
          "  --tune-sizes LIST  the surface sizes measured, in MiB (default 4,64)\n"
          "\n"
          "The VIDMM_* environment variables (VIDMM_BACKEND, VIDMM_DISABLE_CPU_FEATURES, ...) are\n"
          "honoured, so the report shows what a program run with the same environment would use.\n"
          "Failed probes are reported, not fatal: the exit status is 0 unless the library itself\n"
          "misbehaves (1) or the command line is wrong (2).\n", f);
}

int main(int argc, char **argv)
{
    const char *tune_path = NULL;
    unsigned tune_sizes[8] = { 4, 64 }, ntune = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--tune-write") == 0 && i + 1 < argc) {
            tune_path = argv[++i];
        } else if (strcmp(argv[i], "--tune-sizes") == 0 && i + 1 < argc) {
            const char *q = argv[++i];
            ntune = 0;
            while (*q != '\0') {
                char *end;
                unsigned long v = strtoul(q, &end, 10);
                if (end == q || v == 0 || v > 1024 || ntune == 8 || (*end != ',' && *end != '\0')) {
                    fprintf(stderr, "vidmm-info: --tune-sizes: '%s' is not a list of 1..1024 MiB\n", argv[i]);
                    return 2;
                }
                tune_sizes[ntune++] = (unsigned)v;
                q = *end == ',' ? end + 1 : end;
            }
            if (ntune == 0) {
                fprintf(stderr, "vidmm-info: --tune-sizes: an empty list\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "vidmm-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    if (tune_path != NULL)
        return tune_write(tune_path, tune_sizes, ntune);

    struct utsname uts;
    char kernel[sizeof uts.release + sizeof uts.machine + 2] = "";
    if (uname(&uts) == 0)
        snprintf(kernel, sizeof kernel, "%s %s", uts.release, uts.machine);

    bool healthy = true;
    out_begin();
    report_version();
    out_str("os", "kernel", kernel[0] ? kernel : NULL);
    healthy &= report_cpu();
    healthy &= report_kernels();
    report_options();
    report_huge_pages();
    report_io_uring(kernel[0] ? kernel : NULL);
    report_userfaultfd();
    out_end();

    if (fflush(stdout) != 0 || ferror(stdout))
        return 1;
    return healthy ? 0 : 1;
}
