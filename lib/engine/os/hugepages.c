/* SPDX-License-Identifier: MIT */
/* lib/engine/os/hugepages.c - host memory for memory segments on the best huge-page tier the
 * host offers: libhugetlbfs, explicit hugetlb pages, transparent huge pages, base pages.
 *
 * Keeping libhugetlbfs quiet. The library never prints, but libhugetlbfs 2.23 does: its
 * default verbosity is 2, so a get_huge_pages() that fails writes "libhugetlbfs: WARNING:
 * get_huge_pages: New region mapping failed ..." to stderr (seen on Debian 12's 2.23-5). The
 * level comes from HUGETLB_VERBOSE, read once by the library's constructor, which has run
 * before any code of ours (libhugetlbfs is a dependency, so it is initialised first); the
 * variable behind it is a local symbol. Setting the environment would be too late and, like
 * redirecting stderr, racy in a threaded process. So the rule is to call get_huge_pages() only
 * when it is known to succeed:
 *  - libhugetlbfs must have a huge page size (gethugepagesize() > 0) and a way to map it. In
 *    2.23 get_huge_pages() maps MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB when that size is the
 *    kernel's default one (and the kernel has MAP_HUGETLB, since 2.6.32), with no hugetlbfs
 *    mount at all; only other sizes, or HUGETLB_FEATURES overrides, go through a file in the
 *    mount hugetlbfs_find_path_for_size() names, which must then exist and be writable (mkstemp
 *    there failing prints an ERROR). "No mount" therefore does not mean "will fail" here.
 *  - the pages must be there. Instead of adding up sysfs counters (free - resv, surplus,
 *    overcommit, hugetlb cgroup limits, cpuset nodes: each can decide), the probe asks the
 *    kernel: an mmap(MAP_HUGETLB) of the same length and page size takes the same reservation
 *    get_huge_pages() will take, then is unmapped at once (nothing is faulted in, so this costs
 *    two system calls). When the probe fails, so would libhugetlbfs: the tier is skipped without
 *    calling it. The probe, the call and every other reservation this file makes (the hugetlb
 *    tier, the availability probe) happen under 'pool_lock', so no thread of this process can
 *    take the pages in between.
 * What is left: another process draining the pool in the microseconds between the probe and the
 * call; for a size that goes through a hugetlbfs file, the process running out of descriptors
 * (mkstemp failing prints an ERROR); and whatever a user asks for with HUGETLB_VERBOSE >= 3.
 * (On kernels with MAP_PRIVATE reservations, 2.6.27+, 2.23 does not prefault: traced, its
 * get_huge_pages() is then one mmap(MAP_HUGETLB) and nothing else.)
 *
 * The libhugetlbfs tier is freed with munmap(base, map_size), not free_huge_pages(): 2.23's
 * free_huge_pages() only looks the length up in /proc/self/maps (fopen, which can fail when the
 * process is out of descriptors, leaking the region and printing an ERROR) and then calls
 * munmap() with it; we know the length. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <hugetlbfs.h>
#include "common/internal.h"
#include "engine/os/os.h"

#ifndef MAP_HUGE_SHIFT
#  define MAP_HUGE_SHIFT 26
#endif
#ifndef PR_GET_THP_DISABLE
#  define PR_GET_THP_DISABLE 42
#endif

/* The explicit tier's page size: the 2 MiB PMD-level page of x86-64 (and of AArch64 with 4 KiB
 * base pages), asked for by size (MAP_HUGE_2MB) so that a 1 GiB default pool is not used. */
#define HUGETLB_PAGE ((size_t)2 << 20)
#define THP_SYSFS "/sys/kernel/mm/transparent_hugepage/"

/* Resolved once per process (pthread_once orders the writes before every reader). */
struct hp_config {
    int tier_cap;            /* first tier VIDMM_HUGE_TIER allows */
    size_t lib_page;         /* libhugetlbfs's huge page size; 0: the tier is unusable */
    bool lib_needs_mount;    /* get_huge_pages() goes through a hugetlbfs file, not MAP_HUGETLB */
    const char *lib_mount;   /* that mount (libhugetlbfs's static storage), or NULL */
    size_t thp_page;         /* the PMD size transparent huge pages use */
};

static struct hp_config hp_cfg;
static pthread_once_t hp_once = PTHREAD_ONCE_INIT;

/* Serialises taking pages from the huge page pool (see the top of the file). */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const tier_names[] = { "libhugetlbfs", "hugetlb", "thp", "base" };

/* read_text() reads a small /proc or /sys file into 'buf' (NUL-terminated); returns its length
 * or -1. */
static ssize_t read_text(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return n > 0 ? (ssize_t)n : -1;
}

static size_t read_size(const char *path)
{
    char buf[64];
    if (read_text(path, buf, sizeof buf) < 0)
        return 0;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    return end != buf ? (size_t)v : 0;
}

/* The kernel's default huge page size, from the "Hugepagesize:" line of /proc/meminfo; 0 if none. */
static size_t kernel_default_huge_page(void)
{
    char buf[4096];
    if (read_text("/proc/meminfo", buf, sizeof buf) < 0)
        return 0;
    const char *p = strstr(buf, "Hugepagesize:");
    if (p == NULL)
        return 0;
    unsigned long long kb = strtoull(p + strlen("Hugepagesize:"), NULL, 10);
    return (size_t)kb << 10;
}

static bool is_pow2(size_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

static unsigned log2_size(size_t v)
{
    unsigned s = 0;
    while (v > 1) {
        v >>= 1;
        s++;
    }
    return s;
}

static void hp_init(void)
{
    hp_cfg.tier_cap = VMOS_TIER_LIBHUGETLBFS;
    const char *env = getenv("VIDMM_HUGE_TIER");
    if (env != NULL && *env != '\0') {
        int found = -1;
        for (int t = 0; t <= VMOS_TIER_BASE; t++)
            if (strcasecmp(env, tier_names[t]) == 0)
                found = t;
        if (found >= 0)
            hp_cfg.tier_cap = found;
        else
            vidmm_log(VIDMM_LOG_WARN, "VIDMM_HUGE_TIER=%s: not libhugetlbfs, hugetlb, thp or base; ignored",
                      env);
    }

    long lib = gethugepagesize();
    if (lib > 0 && is_pow2((size_t)lib)) {
        hp_cfg.lib_page = (size_t)lib;
        /* HUGETLB_FEATURES can switch MAP_HUGETLB off inside libhugetlbfs; then even the default
         * size goes through a file, so ask for a mount whenever it is set. */
        hp_cfg.lib_needs_mount = (size_t)lib != kernel_default_huge_page() || getenv("HUGETLB_FEATURES") != NULL;
        hp_cfg.lib_mount = hugetlbfs_find_path_for_size(lib);
        if (hp_cfg.lib_needs_mount && hp_cfg.lib_mount == NULL)
            hp_cfg.lib_page = 0;
    }

    size_t pmd = read_size(THP_SYSFS "hpage_pmd_size");
    hp_cfg.thp_page = is_pow2(pmd) ? pmd : HUGETLB_PAGE;
}

static const struct hp_config *config(void)
{
    pthread_once(&hp_once, hp_init);
    return &hp_cfg;
}

int vmos_huge_tier_cap(void)
{
    return config()->tier_cap;
}

/* ---------------------------------------------------------------------------------------------
 * Probes
 * ------------------------------------------------------------------------------------------- */

/* hugetlb_map() maps 'len' bytes of private anonymous huge pages of size 'page'. The reservation
 * is taken here, so the pages cannot be missing at first touch (no SIGBUS). Call under pool_lock. */
static void *hugetlb_map(size_t len, size_t page)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (int)(log2_size(page) << MAP_HUGE_SHIFT);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* lib_can_map() tells whether get_huge_pages() has a way to map pages (the pool is probed apart). */
static bool lib_can_map(const struct hp_config *c)
{
    if (c->lib_page == 0)
        return false;
    return !c->lib_needs_mount || access(c->lib_mount, W_OK | X_OK) == 0;
}

/* thp_usable() tells whether madvise(MADV_HUGEPAGE) memory can get transparent huge pages: the
 * system setting is not [never] and the process has not opted out with PR_SET_THP_DISABLE (1;
 * Linux 6.18 reports 3 for "disabled except where advised", which still serves us). */
static bool thp_usable(void)
{
#ifdef MADV_HUGEPAGE
    char buf[128];
    if (read_text(THP_SYSFS "enabled", buf, sizeof buf) < 0 || strstr(buf, "[never]") != NULL)
        return false;
    return prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 1;
#else
    return false;
#endif
}

unsigned vmos_tiers_available(void)
{
    const struct hp_config *c = config();
    unsigned bits = 1u << VMOS_TIER_BASE;
    if (thp_usable())
        bits |= 1u << VMOS_TIER_THP;
    bool lib = lib_can_map(c);
    pthread_mutex_lock(&pool_lock);
    void *p = hugetlb_map(HUGETLB_PAGE, HUGETLB_PAGE);
    if (p != NULL) {
        munmap(p, HUGETLB_PAGE);
        bits |= 1u << VMOS_TIER_HUGETLB;
    }
    if (lib && (p = hugetlb_map(c->lib_page, c->lib_page)) != NULL) {
        munmap(p, c->lib_page);
        bits |= 1u << VMOS_TIER_LIBHUGETLBFS;
    }
    pthread_mutex_unlock(&pool_lock);
    return bits;
}

/* ---------------------------------------------------------------------------------------------
 * Regions
 * ------------------------------------------------------------------------------------------- */

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) & ~(a - 1);
}

static bool fits(size_t size, size_t page)
{
    return size <= SIZE_MAX - (page - 1);
}

static void set_region(struct vmos_region *r, void *base, size_t size, size_t map_size, size_t page,
                       int tier)
{
    r->base = base;
    r->size = size;
    r->map_size = map_size;
    r->page_size = page;
    r->tier = tier;
}

static bool try_libhugetlbfs(const struct hp_config *c, size_t size, struct vmos_region *r)
{
    size_t page = c->lib_page;
    if (!lib_can_map(c) || !fits(size, page))
        return false;
    size_t len = round_up(size, page);
    void *p = NULL;
    pthread_mutex_lock(&pool_lock);
    void *probe = hugetlb_map(len, page);
    if (probe != NULL) {
        munmap(probe, len);
        p = get_huge_pages(len, GHP_DEFAULT);
    }
    pthread_mutex_unlock(&pool_lock);
    if (p == NULL)
        return false;
    set_region(r, p, size, len, page, VMOS_TIER_LIBHUGETLBFS);
    return true;
}

static bool try_hugetlb(size_t size, struct vmos_region *r)
{
    if (!fits(size, HUGETLB_PAGE))
        return false;
    size_t len = round_up(size, HUGETLB_PAGE);
    pthread_mutex_lock(&pool_lock);
    void *p = hugetlb_map(len, HUGETLB_PAGE);
    pthread_mutex_unlock(&pool_lock);
    if (p == NULL)
        return false;
    set_region(r, p, size, len, HUGETLB_PAGE, VMOS_TIER_HUGETLB);
    return true;
}

/* try_thp() maps 'size' rounded up to the PMD size at a PMD-aligned address (a huge page can
 * only back an aligned range): it maps one PMD less a page more than needed and trims both ends. */
static bool try_thp(const struct hp_config *c, size_t size, struct vmos_region *r)
{
#ifdef MADV_HUGEPAGE
    size_t page = c->thp_page, pg = vmos_page_size();
    if (!thp_usable() || !fits(size, page) || round_up(size, page) > SIZE_MAX - (page - pg))
        return false;
    size_t len = round_up(size, page), over = len + page - pg;
    uint8_t *p = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return false;
    uint8_t *a = (uint8_t *)round_up((uintptr_t)p, page);
    if (a > p)
        munmap(p, (size_t)(a - p));
    if (p + over > a + len)
        munmap(a + len, (size_t)(p + over - (a + len)));
    if (madvise(a, len, MADV_HUGEPAGE) != 0) {
        munmap(a, len);
        return false;
    }
    set_region(r, a, size, len, page, VMOS_TIER_THP);
    return true;
#else
    (void)c;
    (void)size;
    (void)r;
    return false;
#endif
}

static bool try_base(size_t size, struct vmos_region *r)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return false;
    set_region(r, p, size, size, vmos_page_size(), VMOS_TIER_BASE);
    return true;
}

static bool try_tier(const struct hp_config *c, int tier, size_t size, struct vmos_region *r)
{
    switch (tier) {
    case VMOS_TIER_LIBHUGETLBFS: return try_libhugetlbfs(c, size, r);
    case VMOS_TIER_HUGETLB: return try_hugetlb(size, r);
    case VMOS_TIER_THP: return try_thp(c, size, r);
    default: return try_base(size, r);
    }
}

int vmos_region_alloc(size_t size, int first_tier, struct vmos_region *out)
{
    if (out == NULL || size == 0 || (size & (vmos_page_size() - 1)) != 0 ||
        first_tier < VMOS_TIER_LIBHUGETLBFS || first_tier > VMOS_TIER_BASE)
        return VIDMM_E_INVALID_ARG;
    const struct hp_config *c = config();
    struct vmos_region r;
    for (int t = first_tier > c->tier_cap ? first_tier : c->tier_cap; t <= VMOS_TIER_BASE; t++) {
        if (try_tier(c, t, size, &r)) {
            *out = r;
            return 0;
        }
    }
    return VIDMM_E_NO_MEMORY;
}

/* Every tier is one mapping of map_size bytes at base (libhugetlbfs's too: see the top). */
void vmos_region_free(struct vmos_region *r)
{
    if (r == NULL)
        return;
    if (r->base != NULL)
        munmap(r->base, r->map_size);
    memset(r, 0, sizeof *r);
}
