/* SPDX-License-Identifier: MIT */
/* tests/engine/test_range_views.c - a swizzling range's view across every transition it can
 * take (issue 25, item 1). A range keeps one view for all the allocations locked through it:
 * the view grows when a larger surface comes, keeps its size for a smaller one, passes from one
 * allocation to another, is write-protected between locks (the write-watch leaves the pages
 * not written protected until the next lock lifts them), is replaced by a lazy view where the
 * device asks for one, and works without a write-watch where the kernel gives none.
 *
 * The first emulator-style program to grow a view crashed: range-lock, write and unlock a
 * 256x256x4 block-linear surface, then range-lock a 1024x1024x4 one through the same (only)
 * range - the growth destroyed the write-watch but kept "protected", and the next step lifted
 * the protection through the destroyed watch (SIGSEGV). 'grow_*' are that sequence.
 *
 * 'machine_*' is a model-based state machine: random sequences (seeded, reproducible) of
 * allocations of mixed sizes, layouts, mip chains and arrays sharing one or two ranges -
 * create, destroy (also while locked), whole and narrow locks, READ_ONLY or writable, random
 * writes into the view, unlock, eviction - checked against a model that holds every
 * allocation's packed linear bytes: each lock's view must show the model, and after each
 * unlock the allocation's tiled bytes (read back through vidmm_gpu_access() while it is in
 * its segment) must untile to it. Run per way of finding written pages: the write-watch for
 * every part (VIDMM_RANGE_DIRTY=watch), the snapshot (=snapshot), the default, lazy views, and
 * no userfaultfd at all (a seccomp filter makes UFFDIO_API fail, as on a kernel without it). */
#define _GNU_SOURCE
#include "t_engine.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>

#define SEG_SIZE (48 * T_MiB)

enum mode { WATCH, SNAPSHOT, AUTO, LAZY, NO_UFFD };
static const char *const mode_name[] = { "watch", "snapshot", "auto", "lazy", "no-uffd" };

/* No userfaultfd: every UFFDIO_API ioctl fails with EINVAL, as it does where the kernel lacks
 * the features asked for. Criterion runs each test in a process of its own, so the filter stays
 * with this test. */
static void forbid_uffd(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)UFFDIO_API, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EINVAL & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof f / sizeof f[0]), f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        cr_skip_test("cannot install a seccomp filter here (%s): the no-userfaultfd case is not run", strerror(errno));
}

static vidmm_device *vdev(uint32_t ranges, enum mode m)
{
    struct vidmm_segment_desc seg = t_mem_seg(T_VIS_BASE, SEG_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(&seg, 1);
    dd.swizzling_ranges = ranges;
    if (m == LAZY)
        dd.flags |= VIDMM_DEVICE_LAZY_RANGES;
    if (m == NO_UFFD)
        forbid_uffd();
    if (m == WATCH || m == SNAPSHOT)
        cr_assert_eq(setenv("VIDMM_RANGE_DIRTY", m == SNAPSHOT ? "snapshot" : "watch", 1), 0);
    vidmm_device *dev = t_dev(&dd);
    unsetenv("VIDMM_RANGE_DIRTY");
    return dev;
}

/* ---------------------------------------------------------------------------------------------
 * The reported sequence.
 * ------------------------------------------------------------------------------------------- */
static unsigned char *lock_whole(vidmm_device *dev, vidmm_handle h, uint32_t flags)
{
    struct vidmm_lock_args a = t_largs(h, VIDMM_LOCK_ACQUIRE_APERTURE | flags);
    int rc = vidmm_lock(dev, &a);
    cr_assert_eq(rc, 0, "range lock of %u: %d (%s)", h, rc, vidmm_strerror(rc));
    cr_assert_not_null(a.data);
    return a.data;
}

/* The packed linear bytes of 's' untiled from 'tiled'. */
static unsigned char *untiled(const struct t_surf *s, const unsigned char *tiled)
{
    unsigned char *lin = malloc((size_t)s->linear);
    cr_assert_not_null(lin);
    T_OK(vidmm_deswizzle_surface(&s->layout, &s->desc, tiled, (size_t)s->tiled, lin, (size_t)s->linear));
    return lin;
}

/* The allocation's tiled bytes, read where it lives, untiled: must be 'want'. */
static void expect_tiled(vidmm_device *dev, vidmm_handle h, const struct t_surf *s, const unsigned char *want,
                         const char *what)
{
    unsigned char *tiled = malloc((size_t)s->tiled);
    cr_assert_not_null(tiled);
    t_read(dev, h, 0, tiled, (size_t)s->tiled);
    unsigned char *lin = untiled(s, tiled);
    for (size_t i = 0; i < (size_t)s->linear; i++)
        if (lin[i] != want[i])
            cr_assert_fail("%s: linear byte %zu of %llu is %#x in the tiled surface, want %#x", what, i,
                     (unsigned long long)s->linear, lin[i], want[i]);
    free(lin);
    free(tiled);
}

/* Whether this process gets the write-watch a range view uses (userfaultfd asynchronous
 * write-protect on anonymous memory). Without it the view falls back to the snapshot, no watch
 * is ever made, and the growth defect cannot arise: the tests that need one skip, saying so. */
static void need_view_watch(void)
{
    void *p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    struct vidmm_writewatch_desc d = { sizeof d, p, 4 * 4096, VIDMM_WRITEWATCH_UFFD, VIDMM_WRITEWATCH_QUIET };
    vidmm_writewatch *ww = NULL;
    int rc = vidmm_writewatch_create(&d, &ww);
    if (rc == 0)
        vidmm_writewatch_destroy(ww);
    munmap(p, 4 * 4096);
    if (rc != 0)
        cr_skip_test("no userfaultfd write-watch here (%s): range views use the snapshot, and a growing view's "
                     "write-watch - what this test is for - never exists",
                     vidmm_strerror(rc));
}

static void grow_sequence(enum mode m, uint32_t ranges)
{
    if (m == AUTO || m == WATCH)
        need_view_watch();
    vidmm_device *dev = vdev(ranges, m);
    struct t_surf small, big;
    t_surf_init(&small, VIDMM_TILING_BLOCK_LINEAR, 256, 256, 1, 4, 1, 1);
    t_surf_init(&big, VIDMM_TILING_BLOCK_LINEAR, 1024, 1024, 1, 4, 1, 1);
    t_surf_sizes(&small);
    t_surf_sizes(&big);
    unsigned char *ts = malloc((size_t)small.tiled), *tb = malloc((size_t)big.tiled);
    cr_assert(ts && tb);
    vidmm_handle hs = t_surf_alloc(dev, &small, ts, 11), hb = t_surf_alloc(dev, &big, tb, 12);
    unsigned char *ms = untiled(&small, ts), *mb = untiled(&big, tb);

    for (int round = 0; round < 3; round++) {
        /* The small surface first: the view is made at its size and left protected. */
        unsigned char *v = lock_whole(dev, hs, 0);
        cr_assert_eq(memcmp(v, ms, (size_t)small.linear), 0, "round %d: the small view", round);
        for (size_t off = 0; off < (size_t)small.linear; off += 3 * 4096 + 68)
            v[off] = ms[off] = (unsigned char)(v[off] ^ (0x5A + round));
        t_unlock(dev, hs);
        expect_tiled(dev, hs, &small, ms, "the small surface after its unlock");
        /* Then the big one through the same range: the view grows. */
        v = lock_whole(dev, hb, 0);
        cr_assert_eq(memcmp(v, mb, (size_t)big.linear), 0, "round %d: the grown view", round);
        for (size_t off = 7; off < (size_t)big.linear; off += 17 * 4096 + 132)
            v[off] = mb[off] = (unsigned char)(v[off] ^ (0xA5 + round));
        t_unlock(dev, hb);
        expect_tiled(dev, hb, &big, mb, "the big surface after its unlock");
    }
    T_OK(vidmm_alloc_destroy(dev, hs));
    T_OK(vidmm_alloc_destroy(dev, hb));
    vidmm_device_destroy(dev);
    free(ts);
    free(tb);
    free(ms);
    free(mb);
}

Test(range_views, grow_after_written_lock_auto) { grow_sequence(AUTO, 1); }
Test(range_views, grow_after_written_lock_watch) { grow_sequence(WATCH, 1); }
Test(range_views, grow_after_written_lock_snapshot) { grow_sequence(SNAPSHOT, 1); }
Test(range_views, grow_after_written_lock_lazy) { grow_sequence(LAZY, 1); }
Test(range_views, grow_after_written_lock_no_uffd) { grow_sequence(NO_UFFD, 1); }

/* A lock that never ends (its allocation destroyed while locked) leaves the view protected; a
 * larger surface then grows it. */
Test(range_views, grow_after_lock_ended_by_destroy)
{
    need_view_watch();
    vidmm_device *dev = vdev(1, WATCH);
    struct t_surf small, big;
    t_surf_init(&small, VIDMM_TILING_BLOCK_LINEAR, 256, 256, 1, 4, 1, 1);
    t_surf_init(&big, VIDMM_TILING_BLOCK_LINEAR, 512, 1024, 1, 4, 1, 1);
    t_surf_sizes(&small);
    t_surf_sizes(&big);
    unsigned char *ts = malloc((size_t)small.tiled), *tb = malloc((size_t)big.tiled);
    cr_assert(ts && tb);
    vidmm_handle hs = t_surf_alloc(dev, &small, ts, 21);
    unsigned char *v = lock_whole(dev, hs, 0);
    v[100] ^= 1;
    T_OK(vidmm_alloc_destroy(dev, hs)); /* the lock ends with it */
    vidmm_handle hb = t_surf_alloc(dev, &big, tb, 22);
    unsigned char *mb = untiled(&big, tb);
    v = lock_whole(dev, hb, 0);
    cr_assert_eq(memcmp(v, mb, (size_t)big.linear), 0, "the grown view");
    v[5000] = mb[5000] = (unsigned char)(v[5000] + 1);
    t_unlock(dev, hb);
    expect_tiled(dev, hb, &big, mb, "after the unlock");
    vidmm_device_destroy(dev);
    free(ts);
    free(tb);
    free(mb);
}

/* ---------------------------------------------------------------------------------------------
 * The state machine.
 * ------------------------------------------------------------------------------------------- */
#define SLOTS 5

/* The surfaces the machine draws from: small to 4 MiB, so that views grow and shrink. */
static void pick_surface(struct t_surf *s, uint32_t k)
{
    switch (k % 8) {
    case 0: t_surf_init(s, VIDMM_TILING_BLOCK_LINEAR, 64, 64, 1, 4, 1, 1); break;
    case 1: t_surf_init(s, VIDMM_TILING_BLOCK_LINEAR, 256, 256, 1, 4, 1, 1); break;
    case 2: t_surf_init(s, VIDMM_TILING_BLOCK_LINEAR, 1024, 1024, 1, 4, 1, 1); break;
    case 3: t_surf_init(s, VIDMM_TILING_BLOCK_LINEAR, 512, 256, 1, 8, 4, 1); break;
    case 4: t_surf_init(s, VIDMM_TILING_INTEL_Y, 512, 128, 1, 4, 1, 1); break;
    case 5: t_surf_init(s, VIDMM_TILING_BLOCK_LINEAR, 128, 64, 8, 4, 1, 1); break;
    case 6: t_surf_init(s, VIDMM_TILING_INTEL_X, 1024, 512, 1, 4, 1, 1); break;
    default: t_surf_init(s, VIDMM_TILING_MORTON, 256, 128, 1, 2, 2, 3); break;
    }
    t_surf_sizes(s);
}

struct slot {
    bool used, locked, writable;
    vidmm_handle h;
    struct t_surf s;
    unsigned char *model;          /* packed linear bytes */
    unsigned char *data;           /* the lock's pointer */
    uint64_t part_off;             /* where 'data' is in the packed linear order */
    struct vidmm_lock_region reg;  /* the lock's region (whole: mip = layer = ALL) */
    bool narrow;
};

struct machine {
    vidmm_device *dev;
    struct slot s[SLOTS];
    uint64_t rng;
    unsigned steps, grows, locks, narrow, writes, evicts, destroys_locked;
    size_t largest_view;
};

static uint32_t rnd(struct machine *m, uint32_t n)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return (uint32_t)(m->rng >> 11) % n;
}

static void m_create(struct machine *m, struct slot *sl)
{
    pick_surface(&sl->s, rnd(m, 8));
    unsigned char *tiled = malloc((size_t)sl->s.tiled);
    cr_assert_not_null(tiled);
    sl->h = t_surf_alloc(m->dev, &sl->s, tiled, rnd(m, 1u << 30));
    sl->model = untiled(&sl->s, tiled);
    free(tiled);
    sl->used = true;
    sl->locked = false;
}

static void m_destroy(struct machine *m, struct slot *sl)
{
    if (sl->locked)
        m->destroys_locked++;
    T_OK(vidmm_alloc_destroy(m->dev, sl->h));
    free(sl->model);
    memset(sl, 0, sizeof *sl);
}

/* A subresource's packed linear offset and pitches. */
static struct vidmm_subresource_info m_sub(const struct slot *sl, uint32_t mip, uint32_t layer)
{
    struct vidmm_subresource_info si = { .size = sizeof si };
    T_OK(vidmm_surface_subresource(&sl->s.layout, &sl->s.desc, mip, layer, &si));
    return si;
}

/* Calls 'fn' for each row run of the lock's part: its offset in the packed linear order and
 * its length. */
typedef void (*row_fn)(struct machine *m, struct slot *sl, size_t lin_off, size_t len, void *arg);
static void for_rows(struct machine *m, struct slot *sl, row_fn fn, void *arg)
{
    if (!sl->narrow) {
        fn(m, sl, 0, (size_t)sl->s.linear, arg);
        return;
    }
    const struct vidmm_lock_region *r = &sl->reg;
    const size_t e = sl->s.desc.element_bytes;
    const uint32_t mips = sl->s.desc.mip_levels, layers = sl->s.desc.array_layers;
    for (uint32_t layer = 0; layer < layers; layer++)
        for (uint32_t mip = 0; mip < mips; mip++) {
            if ((r->mip != VIDMM_LOCK_REGION_ALL && r->mip != mip) || (r->layer != VIDMM_LOCK_REGION_ALL && r->layer != layer))
                continue;
            struct vidmm_subresource_info si = m_sub(sl, mip, layer);
            struct vidmm_box b = (r->flags & VIDMM_LOCK_REGION_BOX) ? r->box
                                                                   : (struct vidmm_box){ 0, 0, 0, si.width, si.height, si.depth };
            const size_t row = (size_t)si.width * e, slice = row * si.height;
            for (uint32_t z = b.z; z < b.z + b.depth; z++)
                for (uint32_t y = b.y; y < b.y + b.height; y++)
                    fn(m, sl, (size_t)si.linear_offset + z * slice + y * row + (size_t)b.x * e, (size_t)b.width * e, arg);
        }
}

static void check_row(struct machine *m, struct slot *sl, size_t off, size_t len, void *arg)
{
    (void)m;
    const unsigned char *v = sl->data + (off - sl->part_off);
    if (memcmp(v, sl->model + off, len) != 0)
        for (size_t i = 0; i < len; i++)
            if (v[i] != sl->model[off + i])
                cr_assert_fail("step %u: the view of %u shows %#x at linear byte %zu, the model %#x (%s)", *(unsigned *)arg,
                         sl->h, v[i], off + i, sl->model[off + i], sl->narrow ? "narrow lock" : "whole lock");
}

static void write_row(struct machine *m, struct slot *sl, size_t off, size_t len, void *arg)
{
    (void)arg;
    /* One row in eight of a narrow part, or a few spans of a whole view, gets new bytes. */
    const bool whole = !sl->narrow;
    const unsigned spans = whole ? 1 + rnd(m, 6) : (rnd(m, 8) == 0);
    for (unsigned k = 0; k < spans; k++) {
        size_t n = 1 + rnd(m, whole ? 3 * 4096 : (uint32_t)len);
        if (n > len)
            n = len;
        const size_t at = off + rnd(m, (uint32_t)(len - n + 1));
        unsigned char *v = sl->data + (at - sl->part_off);
        const unsigned char x = (unsigned char)(1 + rnd(m, 255));
        for (size_t i = 0; i < n; i++)
            v[i] = sl->model[at + i] = (unsigned char)(v[i] ^ x);
        m->writes++;
    }
}

static void m_lock(struct machine *m, struct slot *sl)
{
    const bool ro = rnd(m, 4) == 0;
    struct vidmm_lock_args a = t_largs(sl->h, VIDMM_LOCK_ACQUIRE_APERTURE | (ro ? VIDMM_LOCK_READ_ONLY : 0));
    struct vidmm_lock_region r = VIDMM_LOCK_REGION_INIT;
    sl->narrow = rnd(m, 3) == 0;
    if (sl->narrow) {
        const uint32_t kind = rnd(m, 3);
        r.mip = rnd(m, sl->s.desc.mip_levels);
        r.layer = rnd(m, sl->s.desc.array_layers);
        if (kind == 0 && sl->s.desc.array_layers > 1)
            r.mip = VIDMM_LOCK_REGION_ALL; /* one layer */
        else if (kind == 1) {
            struct vidmm_subresource_info si = m_sub(sl, r.mip, r.layer);
            r.flags = VIDMM_LOCK_REGION_BOX;
            r.box.width = 1 + rnd(m, si.width);
            r.box.height = 1 + rnd(m, si.height);
            r.box.depth = 1 + rnd(m, si.depth);
            r.box.x = rnd(m, si.width - r.box.width + 1);
            r.box.y = rnd(m, si.height - r.box.height + 1);
            r.box.z = rnd(m, si.depth - r.box.depth + 1);
        }
    }
    int rc = sl->narrow ? vidmm_lock_region(m->dev, &a, &r) : vidmm_lock(m->dev, &a);
    cr_assert_eq(rc, 0, "step %u: %s lock of %u: %d (%s)", m->steps, sl->narrow ? "narrow" : "whole", sl->h, rc,
                 vidmm_strerror(rc));
    cr_assert_not_null(a.data);
    sl->locked = true;
    sl->writable = !ro;
    sl->data = a.data;
    sl->part_off = sl->narrow ? r.offset : 0;
    sl->reg = r;
    m->locks++;
    m->narrow += sl->narrow;
    unsigned step = m->steps;
    for_rows(m, sl, check_row, &step);
}

static void m_unlock(struct machine *m, struct slot *sl)
{
    int rc = vidmm_unlock(m->dev, 1, &sl->h);
    cr_assert_eq(rc, 0, "step %u: unlock of %u: %d (%s)", m->steps, sl->h, rc, vidmm_strerror(rc));
    sl->locked = false;
    struct vidmm_alloc_info info = t_query(m->dev, sl->h);
    if (info.where == VIDMM_WHERE_SEGMENT) {
        char what[64];
        snprintf(what, sizeof what, "step %u: after the unlock of %u", m->steps, sl->h);
        expect_tiled(m->dev, sl->h, &sl->s, sl->model, what);
    }
}

/* The end of an episode: every allocation read back through a READ_ONLY whole lock, then gone
 * with the device. */
static void m_finish(struct machine *m)
{
    for (unsigned i = 0; i < SLOTS; i++) {
        struct slot *sl = &m->s[i];
        if (!sl->used)
            continue;
        if (sl->locked)
            m_unlock(m, sl);
        unsigned char *v = lock_whole(m->dev, sl->h, VIDMM_LOCK_READ_ONLY);
        cr_assert_eq(memcmp(v, sl->model, (size_t)sl->s.linear), 0, "step %u: the final read of slot %u", m->steps, i);
        t_unlock(m->dev, sl->h);
        m_destroy(m, sl);
    }
    vidmm_device_destroy(m->dev);
    m->dev = NULL;
    m->largest_view = 0;
}

/* 'steps' random steps in episodes of EPISODE, each on a new device (its ranges' views start
 * empty, so that they grow again). */
#define EPISODE 40
static void run_machine(enum mode m_, uint32_t ranges, uint64_t seed, unsigned steps)
{
    struct machine m;
    memset(&m, 0, sizeof m);
    m.rng = seed * 0x9E3779B97F4A7C15ull | 1;
    for (m.steps = 0; m.steps < steps; m.steps++) {
        if (m.steps % EPISODE == 0) {
            if (m.dev != NULL)
                m_finish(&m);
            m.dev = vdev(ranges, m_);
        }
        /* Half the steps go to a locked allocation when there is one, so that locks end. */
        struct slot *sl = &m.s[rnd(&m, SLOTS)];
        if (rnd(&m, 2) == 0)
            for (unsigned i = 0, at = rnd(&m, SLOTS); i < SLOTS; i++)
                if (m.s[(at + i) % SLOTS].locked) {
                    sl = &m.s[(at + i) % SLOTS];
                    break;
                }
        const uint32_t op = rnd(&m, 16);
        if (!sl->used) {
            m_create(&m, sl);
            continue;
        }
        if (sl->locked) {
            if (op < 5 && sl->writable)
                for_rows(&m, sl, write_row, NULL);
            else if (op == 5)
                m_destroy(&m, sl);
            else
                m_unlock(&m, sl);
            continue;
        }
        if (op < 10) {
            /* A lock takes a range (and so a view) when the allocation is in its segment and
             * no other lock holds a range; a view then grows at least when the surface is larger
             * than every one a range has shown (the count is a lower bound with two ranges). */
            bool others = false;
            for (unsigned i = 0; i < SLOTS; i++)
                others |= m.s[i].used && m.s[i].locked;
            const size_t lin = (size_t)sl->s.linear;
            if (!others && t_query(m.dev, sl->h).where == VIDMM_WHERE_SEGMENT && lin > m.largest_view) {
                if (m.largest_view != 0)
                    m.grows++;
                m.largest_view = lin;
            }
            m_lock(&m, sl);
        } else if (op < 12) {
            t_evict(m.dev, sl->h);
            m.evicts++;
        } else if (op < 13) {
            m_destroy(&m, sl);
        } else {
            /* Back into the segment (a submit), then the tiled bytes must be the model. */
            t_resident(m.dev, sl->h, NULL);
            expect_tiled(m.dev, sl->h, &sl->s, sl->model, "after making it resident");
        }
    }
    m_finish(&m);
    cr_log_info("%s, %u range(s), seed %llu: %u steps, %u locks (%u narrow), %u views grown, %u writes, %u evictions, "
                "%u allocations destroyed while locked",
                mode_name[m_], ranges, (unsigned long long)seed, steps, m.locks, m.narrow, m.grows, m.writes, m.evicts,
                m.destroys_locked);
    cr_assert_gt(m.grows, 0, "the sequence never grew a view: it does not test what it is for");
}

static void machine(enum mode m)
{
    run_machine(m, 1, 1, 400);
    run_machine(m, 2, 2, 400);
}

Test(range_views, machine_watch, .timeout = 300) { machine(WATCH); }
Test(range_views, machine_snapshot, .timeout = 300) { machine(SNAPSHOT); }
Test(range_views, machine_auto, .timeout = 300) { machine(AUTO); }
Test(range_views, machine_lazy, .timeout = 300) { machine(LAZY); }
Test(range_views, machine_no_uffd, .timeout = 300) { machine(NO_UFFD); }
