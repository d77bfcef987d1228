/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_resident_lists.c - vidmm_submit() and vidmm_make_resident() of a list
 * whose allocations are all placed where their references may use them take a path of their
 * own (lib/engine/submit.c list_resident()), and it must do exactly what the general path does:
 * the same return codes with the same precedence, the same fences, the same "where", the same
 * LRU order (so the same eviction order), the same statistics, paging log and driver calls, and
 * a refused call changes nothing. Every list that is not such a list must take the general
 * path from the start.
 *
 * How: twins. Each test builds the same device and the same history twice (the engine is
 * deterministic: the same calls give the same handles, offsets and fences) and makes the same
 * call on both. On the twin GENERAL the call is made to take the general path: the device's
 * count of allocations being converted by a lock (vidmm_device.converting) is raised around
 * the call, which sends every list the general way (list_resident() leaves it to the general
 * path's vm_wait_converting()) and changes nothing else: with no allocation actually
 * converting, vm_wait_converting() looks at the list and returns. Then everything observable
 * is compared, and some engine state besides: each allocation's LRU stamp and fences, the
 * eviction buckets in order, the device's clock and last fence.
 *
 * Which path ran: the general path's place_all() writes every listed allocation's scratch
 * vm_alloc.sub_count (its first position in the list); the resident list's path never touches
 * it. A test sets it to PROBE before the call and reads it after. */
#include "t_engine.h"

#include <string.h>
#include "engine/engine.h" /* struct vidmm_device: the twin GENERAL's switch, the path probe, the LRU order */

#define FAST 0
#define GENERAL 1
#define PROBE 0xFFFFFFF0u
#define MAXH 512u
#define MAXLIST 1024u

/* Which path a call is expected to take on the twin FAST. */
enum path { PATH_FAST, PATH_GENERAL };

struct twin {
    vidmm_device *dev[2];
    struct t_rec rec[2];
    struct vidmm_driver drv[2];
    vidmm_handle h[MAXH];       /* every allocation the test made (the same on both) */
    uint32_t nh;
};

/* The standard three segments (t_engine.h: CPU-visible memory, local memory, an aperture), the
 * recording driver's cache callbacks (its flushes are compared), and 'timeout_ns'. */
static void twin_init_ex(struct twin *t, uint64_t timeout_ns)
{
    memset(t, 0, sizeof *t);
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, 0);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, 0);
    for (int k = 0; k < 2; k++) {
        t_rec_init(&t->rec[k]);
        t->drv[k] = t_rec_driver(&t->rec[k], false, false, true);
        struct vidmm_device_desc d = t_ddesc(segs, 3);
        d.driver = &t->drv[k];
        d.wait_timeout_ns = timeout_ns;
        t->dev[k] = t_dev(&d);
    }
    /* Handles carry their device's tag (issue 25): the twins share one, so that the same calls
     * give them the same handles and one handle names the same allocation on both. */
    t->dev[GENERAL]->handle_tag = t->dev[FAST]->handle_tag;
}

static void twin_init(struct twin *t)
{
    twin_init_ex(t, 0);
}

static void twin_fini(struct twin *t)
{
    for (int k = 0; k < 2; k++)
        vidmm_device_destroy(t->dev[k]);
}

/* twin_alloc() creates the same allocation on both; returns its handle (the same on both). */
static vidmm_handle twin_alloc(struct twin *t, const struct vidmm_alloc_desc *d)
{
    vidmm_handle h0 = t_alloc(t->dev[FAST], d), h1 = t_alloc(t->dev[GENERAL], d);
    cr_assert_eq(h0, h1, "the twins gave different handles (%u, %u)", h0, h1);
    cr_assert_lt(t->nh, MAXH);
    t->h[t->nh++] = h0;
    return h0;
}

static vidmm_handle twin_alloc_simple(struct twin *t, uint64_t size, uint32_t set, uint32_t prio, uint32_t flags)
{
    struct vidmm_alloc_desc d = t_adesc(size, set);
    d.priority = prio;
    d.flags |= flags;
    return twin_alloc(t, &d);
}

/* twin_use() submits 'h' with 'ref_flags' on both and signals the fence: a use, idle again. */
static void twin_use(struct twin *t, vidmm_handle h, uint32_t ref_flags)
{
    for (int k = 0; k < 2; k++)
        t_use(t->dev[k], h, ref_flags);
}

static void twin_signal_all(struct twin *t)
{
    for (int k = 0; k < 2; k++) {
        pthread_mutex_lock(&t->dev[k]->mu);
        const uint64_t f = t->dev[k]->fence_issued;
        pthread_mutex_unlock(&t->dev[k]->mu);
        if (f)
            t_signal(t->dev[k], f);
    }
}

/* The twin GENERAL's switch (see the file comment). */
static void force_general(vidmm_device *dev, bool on)
{
    pthread_mutex_lock(&dev->mu);
    if (on)
        dev->converting++;
    else
        dev->converting--;
    pthread_mutex_unlock(&dev->mu);
}

static void probe_arm(vidmm_device *dev, const vidmm_handle *h, uint32_t n)
{
    pthread_mutex_lock(&dev->mu);
    for (uint32_t i = 0; i < n; i++) {
        struct vm_alloc *a = vm_lookup(dev, h[i]);
        if (a)
            a->sub_count = PROBE;
    }
    pthread_mutex_unlock(&dev->mu);
}

/* Whether the general path's place_all() ran over 'h' (every entry that names an allocation). */
static bool probe_general(vidmm_device *dev, const vidmm_handle *h, uint32_t n)
{
    bool general = false, fast = false;
    pthread_mutex_lock(&dev->mu);
    for (uint32_t i = 0; i < n; i++) {
        const struct vm_alloc *a = vm_lookup(dev, h[i]);
        if (!a)
            continue;
        if (a->sub_count == PROBE)
            fast = true;
        else
            general = true;
    }
    pthread_mutex_unlock(&dev->mu);
    cr_assert(!(general && fast), "the general path placed only part of the list");
    return general;
}

/* ---------------------------------------------------------------------------------------------
 * Comparing the twins.
 * ------------------------------------------------------------------------------------------- */

static void compare_where(const struct twin *t, const struct vidmm_residency *w0, const struct vidmm_residency *w1,
                          uint32_t n, const char *what)
{
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(w0[i].segment_id, w1[i].segment_id, "%s: where[%u].segment_id %u / %u", what, i,
                     w0[i].segment_id, w1[i].segment_id);
        cr_assert_eq(w0[i].offset, w1[i].offset, "%s: where[%u].offset", what, i);
        cr_assert_eq(w0[i].gpu_address, w1[i].gpu_address, "%s: where[%u].gpu_address", what, i);
        const struct vidmm_residency *w[2] = { &w0[i], &w1[i] };
        for (int k = 0; k < 2; k++) {
            if (w[k]->segment_id == 0) {
                cr_assert_null(w[k]->cpu, "%s: where[%u].cpu without a segment", what, i);
                continue;
            }
            const uint8_t *base = t->dev[k]->seg[w[k]->segment_id - 1].cpu;
            cr_assert_eq((const uint8_t *)w[k]->cpu, base + w[k]->offset, "%s: where[%u].cpu (twin %d)", what, i, k);
        }
    }
}

static void compare_stats(const struct twin *t, const char *what)
{
    struct vidmm_stats s[2];
    for (int k = 0; k < 2; k++)
        s[k] = t_stats(t->dev[k]);
#define SAME(f) cr_assert_eq(s[0].f, s[1].f, "%s: stats." #f " %llu / %llu", what, (unsigned long long)s[0].f, \
                             (unsigned long long)s[1].f)
    SAME(allocations);
    SAME(sysmem_used);
    SAME(submissions);
    SAME(locks);
    SAME(renames);
    for (int i = 0; i < 8; i++)
        SAME(paging_ops[i]);
    SAME(bytes_paged_in);
    SAME(bytes_paged_out);
    SAME(evictions);
    SAME(cache_flushes);
    SAME(cache_invalidates);
    for (int i = 0; i < 3; i++) {
        SAME(segments[i].used);
        SAME(segments[i].largest_free);
        SAME(segments[i].allocations);
    }
#undef SAME
}

/* Both paging logs drained and compared record by record (the host pointers aside). */
static void compare_logs(const struct twin *t, const char *what)
{
    static struct t_log_buf b[2];
    for (int k = 0; k < 2; k++)
        t_log_take(t->dev[k], &b[k]);
    cr_assert_eq(b[0].n, b[1].n, "%s: %zu / %zu paging records", what, b[0].n, b[1].n);
    for (size_t i = 0; i < b[0].n; i++) {
        struct vidmm_paging_op x = b[0].op[i], y = b[1].op[i];
        x.src_ptr = y.src_ptr = NULL;
        x.dst_ptr = y.dst_ptr = NULL;
        if (memcmp(&x, &y, sizeof x) != 0) {
            t_log_dump(&b[0], "twin FAST");
            t_log_dump(&b[1], "twin GENERAL");
            cr_assert_fail("%s: paging record %zu differs (%s of %u / %s of %u)", what, i, t_op_name(x.type),
                           x.allocation, t_op_name(y.type), y.allocation);
        }
    }
}

static void compare_rec(struct twin *t, const char *what)
{
    uint32_t nf[2], ni[2];
    size_t fn[2], in[2];
    for (int k = 0; k < 2; k++) {
        pthread_mutex_lock(&t->rec[k].mu);
        nf[k] = t->rec[k].n_flush;
        ni[k] = t->rec[k].n_inval;
        fn[k] = t->rec[k].flush_n;
        in[k] = t->rec[k].inval_n;
        pthread_mutex_unlock(&t->rec[k].mu);
    }
    cr_assert_eq(nf[0], nf[1], "%s: %u / %u cache flushes by the driver", what, nf[0], nf[1]);
    cr_assert_eq(fn[0], fn[1], "%s: last flush of %zu / %zu bytes", what, fn[0], fn[1]);
    cr_assert_eq(ni[0], ni[1], "%s: %u / %u cache invalidations", what, ni[0], ni[1]);
    cr_assert_eq(in[0], in[1], "%s: last invalidation of %zu / %zu bytes", what, in[0], in[1]);
}

/* The eviction buckets of segment 's' of both twins: the same priorities, the same allocations
 * in the same (LRU) order. */
static void compare_buckets(const struct vm_segment *s0, const struct vm_segment *s1, const char *what)
{
    cr_assert_eq(s0->nbuckets, s1->nbuckets, "%s: %u / %u buckets", what, s0->nbuckets, s1->nbuckets);
    for (uint32_t b = 0; b < s0->nbuckets; b++) {
        cr_assert_eq(s0->buckets[b].prio, s1->buckets[b].prio, "%s: bucket %u's priority", what, b);
        const struct vm_alloc *x = s0->buckets[b].head, *y = s1->buckets[b].head;
        for (uint32_t pos = 0; x || y; pos++, x = x->res_next, y = y->res_next) {
            cr_assert(x && y, "%s: bucket %u (priority %u) is longer on twin %s", what, b, s0->buckets[b].prio,
                      x ? "FAST" : "GENERAL");
            cr_assert_eq(x->handle, y->handle, "%s: LRU order, bucket %u (priority %u) position %u: %u / %u", what, b,
                         s0->buckets[b].prio, pos, x->handle, y->handle);
        }
    }
}

/* compare() compares everything the twins show after a call, and the engine state the two
 * paths keep (see the file comment). Drains the paging logs. */
static void compare(struct twin *t, const char *what)
{
    compare_stats(t, what);
    compare_logs(t, what);
    compare_rec(t, what);
    for (uint32_t i = 0; i < t->nh; i++) {
        struct vidmm_alloc_info q0 = t_query(t->dev[FAST], t->h[i]), q1 = t_query(t->dev[GENERAL], t->h[i]);
        cr_assert_eq(q0.where, q1.where, "%s: %u's where %u / %u", what, t->h[i], q0.where, q1.where);
        cr_assert_eq(q0.segment_id, q1.segment_id, "%s: %u's segment", what, t->h[i]);
        cr_assert_eq(q0.offset, q1.offset, "%s: %u's offset", what, t->h[i]);
        cr_assert_eq(q0.gpu_address, q1.gpu_address, "%s: %u's GPU address", what, t->h[i]);
        cr_assert_eq(q0.lock_count, q1.lock_count, "%s: %u's lock count", what, t->h[i]);
        cr_assert_eq(q0.dirty, q1.dirty, "%s: %u's dirty %d / %d", what, t->h[i], q0.dirty, q1.dirty);
        cr_assert_eq(q0.busy, q1.busy, "%s: %u's busy %d / %d", what, t->h[i], q0.busy, q1.busy);
        cr_assert_eq(q0.current, q1.current, "%s: %u's current instance", what, t->h[i]);
    }
    for (int k = 0; k < 2; k++)
        pthread_mutex_lock(&t->dev[k]->mu);
    vidmm_device *d0 = t->dev[FAST], *d1 = t->dev[GENERAL];
    cr_assert_eq(d0->clock, d1->clock, "%s: LRU clock %llu / %llu", what, (unsigned long long)d0->clock,
                 (unsigned long long)d1->clock);
    cr_assert_eq(d0->fence_issued, d1->fence_issued, "%s: last fence issued", what);
    for (uint32_t i = 0; i < t->nh; i++) {
        const struct vm_alloc *x = vm_lookup(d0, t->h[i]), *y = vm_lookup(d1, t->h[i]);
        cr_assert(x && y, "%s: %u gone", what, t->h[i]);
        cr_assert_eq(x->lru, y->lru, "%s: %u's LRU stamp %llu / %llu", what, t->h[i], (unsigned long long)x->lru,
                     (unsigned long long)y->lru);
        cr_assert_eq(x->read_fence, y->read_fence, "%s: %u's read fence", what, t->h[i]);
        cr_assert_eq(x->write_fence, y->write_fence, "%s: %u's write fence", what, t->h[i]);
        cr_assert_eq(x->gpu_wrote, y->gpu_wrote, "%s: %u's gpu_wrote", what, t->h[i]);
        cr_assert_eq(x->cpu_wrote, y->cpu_wrote, "%s: %u's cpu_wrote", what, t->h[i]);
        cr_assert_eq(x->hold, y->hold, "%s: %u's hold", what, t->h[i]);
        cr_assert_eq(x->hold, 0, "%s: %u still held", what, t->h[i]);
    }
    for (uint32_t s = 0; s < d0->nseg; s++)
        compare_buckets(&d0->seg[s], &d1->seg[s], what);
    compare_buckets(&d0->sysmem, &d1->sysmem, what);
    for (int k = 0; k < 2; k++)
        pthread_mutex_unlock(&t->dev[k]->mu);
}

/* ---------------------------------------------------------------------------------------------
 * The calls, on both twins.
 * ------------------------------------------------------------------------------------------- */

/* twin_submit() submits 'refs' on both twins (the GENERAL one by the general path), checks that
 * the twin FAST took 'path' (when the call succeeded: a refused call reaches no placement on
 * either path) and that both gave the same code, fence and "where", then compares them.
 * Returns the code. */
static int twin_submit(struct twin *t, const struct vidmm_alloc_ref *refs, uint32_t n, uint32_t flags, enum path path,
                       const char *what)
{
    static vidmm_handle hs[MAXLIST];
    static struct vidmm_residency w[2][MAXLIST];
    cr_assert_leq(n, MAXLIST);
    for (uint32_t i = 0; i < n; i++)
        hs[i] = refs[i].allocation;
    int rc[2];
    uint64_t fence[2];
    for (int k = 0; k < 2; k++) {
        memset(w[k], 0xA5, sizeof w[k][0] * n);
        fence[k] = 0x1234u;
        probe_arm(t->dev[k], hs, n);
        if (k == GENERAL)
            force_general(t->dev[k], true);
        rc[k] = vidmm_submit(t->dev[k], refs, n, flags, w[k], &fence[k]);
        if (k == GENERAL)
            force_general(t->dev[k], false);
    }
    cr_assert_eq(rc[FAST], rc[GENERAL], "%s: vidmm_submit() returned %d (%s), the general path %d (%s)", what, rc[FAST],
                 vidmm_strerror(rc[FAST]), rc[GENERAL], vidmm_strerror(rc[GENERAL]));
    cr_assert_eq(fence[FAST], fence[GENERAL], "%s: fence %llu, the general path's %llu", what,
                 (unsigned long long)fence[FAST], (unsigned long long)fence[GENERAL]);
    if (rc[FAST] == 0) {
        compare_where(t, w[FAST], w[GENERAL], n, what);
        cr_assert(probe_general(t->dev[GENERAL], hs, n), "%s: the twin GENERAL did not take the general path", what);
        cr_assert_eq(probe_general(t->dev[FAST], hs, n), path == PATH_GENERAL, "%s: the list took the %s path", what,
                     path == PATH_GENERAL ? "resident list's" : "general");
    } else {
        cr_assert_eq(fence[FAST], 0x1234u, "%s: a refused submission wrote its fence", what);
    }
    compare(t, what);
    return rc[FAST];
}

/* twin_make_resident(): the same for vidmm_make_resident(). */
static int twin_make_resident(struct twin *t, const vidmm_handle *hs, uint32_t n, enum path path, const char *what)
{
    static struct vidmm_residency w[2][MAXLIST];
    cr_assert_leq(n, MAXLIST);
    int rc[2];
    for (int k = 0; k < 2; k++) {
        memset(w[k], 0xA5, sizeof w[k][0] * n);
        probe_arm(t->dev[k], hs, n);
        if (k == GENERAL)
            force_general(t->dev[k], true);
        rc[k] = vidmm_make_resident(t->dev[k], hs, n, w[k]);
        if (k == GENERAL)
            force_general(t->dev[k], false);
    }
    cr_assert_eq(rc[FAST], rc[GENERAL], "%s: vidmm_make_resident() returned %d (%s), the general path %d (%s)", what,
                 rc[FAST], vidmm_strerror(rc[FAST]), rc[GENERAL], vidmm_strerror(rc[GENERAL]));
    if (rc[FAST] == 0) {
        compare_where(t, w[FAST], w[GENERAL], n, what);
        cr_assert(probe_general(t->dev[GENERAL], hs, n), "%s: the twin GENERAL did not take the general path", what);
        cr_assert_eq(probe_general(t->dev[FAST], hs, n), path == PATH_GENERAL, "%s: the list took the %s path", what,
                     path == PATH_GENERAL ? "resident list's" : "general");
    }
    compare(t, what);
    return rc[FAST];
}

/* twin_eviction_order() makes an allocation of the whole of segment 'seg' resident on both
 * twins (every fence signalled first: idle victims), which evicts everything in it in eviction
 * order (lowest priority first, least recently used first): the paging logs compare. */
static void twin_eviction_order(struct twin *t, uint32_t seg, uint64_t size, const char *what)
{
    twin_signal_all(t);
    compare(t, what); /* the logs drained */
    vidmm_handle big = twin_alloc_simple(t, size, T_SET(seg), VIDMM_PRIORITY_NORMAL, 0);
    for (int k = 0; k < 2; k++)
        t_resident(t->dev[k], big, NULL);
    compare(t, what);
}

static void refs_of(struct vidmm_alloc_ref *refs, const vidmm_handle *h, const uint32_t *flags, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        refs[i].allocation = h[i];
        refs[i].flags = flags ? flags[i] : 0;
    }
}

/* ---------------------------------------------------------------------------------------------
 * The fixture: allocations in both memory segments and the aperture, of three priorities, one
 * of them Cached (a memory segment does not snoop: its CPU writes are flushed before GPU use),
 * used in a scrambled order so that the LRU order is not the creation order.
 * ------------------------------------------------------------------------------------------- */
enum { A_VIS0, A_VIS1, A_VIS2, A_VIS3, A_LOC0, A_LOC_HI, A_APE, A_CACHED, A_IDLE, A_LOW, NA };

static void fixture(struct twin *t, vidmm_handle *a)
{
    twin_init(t);
    a[A_VIS0] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    a[A_VIS1] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    a[A_VIS2] = twin_alloc_simple(t, 128 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    a[A_VIS3] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    a[A_LOC0] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_LOC), VIDMM_PRIORITY_NORMAL, 0);
    a[A_LOC_HI] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_LOC), VIDMM_PRIORITY_HIGH, 0);
    a[A_APE] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_APE), VIDMM_PRIORITY_NORMAL, 0);
    a[A_CACHED] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, VIDMM_ALLOC_CACHED);
    a[A_IDLE] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0); /* never listed below */
    a[A_LOW] = twin_alloc_simple(t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_LOW, 0);
    static const int order[NA] = { A_LOW, A_VIS3, A_APE, A_VIS0, A_LOC_HI, A_IDLE, A_VIS2, A_CACHED, A_LOC0, A_VIS1 };
    for (int i = 0; i < NA; i++)
        twin_use(t, a[order[i]], (i & 1) ? VIDMM_REF_WRITE : 0);
    compare(t, "fixture");
}

/* The CPU writes the Cached allocation (a plain lock), on both twins. */
static void cpu_writes(struct twin *t, vidmm_handle h)
{
    for (int k = 0; k < 2; k++) {
        unsigned char *p = t_lock(t->dev[k], h, 0);
        memset(p + 4096, 0x3C, 200);
        t_unlock(t->dev[k], h);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Lists that take the resident list's path.
 * ------------------------------------------------------------------------------------------- */

/* Reads and writes, duplicates (the same flags, and read + write where both sets hold the
 * segment), two memory segments, an aperture, three priorities, the Cached allocation flushed:
 * the same as the general path, call after call, busy or not, and the same eviction order. */
Test(resident_lists, submit_matches_the_general_path, .timeout = 60)
{
    struct twin t;
    vidmm_handle a[NA];
    fixture(&t, a);
    cpu_writes(&t, a[A_CACHED]);
    const vidmm_handle h[] = { a[A_VIS3], a[A_VIS0], a[A_LOC_HI], a[A_CACHED], a[A_APE], a[A_VIS1],
                               a[A_VIS3], a[A_LOC0], a[A_VIS2],   a[A_VIS0],   a[A_LOW] };
    const uint32_t f[] = { VIDMM_REF_WRITE, 0, 0, 0, VIDMM_REF_WRITE, VIDMM_REF_DO_NOT_RETIRE, 0, VIDMM_REF_WRITE, 0, 0,
                           VIDMM_REF_WRITE };
    const uint32_t n = sizeof h / sizeof h[0];
    struct vidmm_alloc_ref refs[sizeof h / sizeof h[0]];
    refs_of(refs, h, f, n);
    uint32_t flushes = t.rec[FAST].n_flush;
    T_OK(twin_submit(&t, refs, n, 0, PATH_FAST, "first submission"));
    cr_assert_gt(t.rec[FAST].n_flush, flushes, "the CPU's writes to the Cached allocation were not flushed");
    /* Again, after the CPU wrote it again (a lock waits for the GPU: the fences signalled). */
    twin_signal_all(&t);
    cpu_writes(&t, a[A_CACHED]);
    flushes = t.rec[FAST].n_flush;
    T_OK(twin_submit(&t, refs, n, 0, PATH_FAST, "second submission"));
    cr_assert_gt(t.rec[FAST].n_flush, flushes, "the CPU's second writes were not flushed");
    /* Once more, the fence before not signalled (busy), with DONOT_WAIT. */
    T_OK(twin_submit(&t, refs, n, VIDMM_SUBMIT_DONOT_WAIT, PATH_FAST, "third submission, busy, DONOT_WAIT"));
    /* Reversed. */
    struct vidmm_alloc_ref rev[sizeof h / sizeof h[0]];
    for (uint32_t i = 0; i < n; i++)
        rev[i] = refs[n - 1 - i];
    T_OK(twin_submit(&t, rev, n, 0, PATH_FAST, "reversed"));
    /* One entry, no "where" (a NULL fence pointer is refused: issue 25). */
    for (int k = 0; k < 2; k++) {
        uint64_t fence = 0;
        if (k == GENERAL)
            force_general(t.dev[k], true);
        T_OK(vidmm_submit(t.dev[k], &refs[5], 1, 0, NULL, &fence));
        if (k == GENERAL)
            force_general(t.dev[k], false);
    }
    compare(&t, "one entry, no where");
    twin_eviction_order(&t, T_VIS, T_VIS_SIZE, "eviction of segment 1 after the submissions");
    twin_eviction_order(&t, T_LOC, T_LOC_SIZE, "eviction of segment 2 after the submissions");
    twin_fini(&t);
}

Test(resident_lists, make_resident_matches_the_general_path, .timeout = 60)
{
    struct twin t;
    vidmm_handle a[NA];
    fixture(&t, a);
    /* 20 entries: past the 16 the general path keeps on the stack. */
    const vidmm_handle h[] = { a[A_VIS2], a[A_LOC0], a[A_APE], a[A_VIS0], a[A_LOW], a[A_LOC_HI], a[A_VIS2],
                               a[A_CACHED], a[A_VIS1], a[A_VIS3], a[A_VIS0], a[A_VIS0], a[A_APE], a[A_LOC0],
                               a[A_VIS1], a[A_LOW], a[A_VIS2], a[A_LOC_HI], a[A_CACHED], a[A_VIS3] };
    const uint32_t n = sizeof h / sizeof h[0];
    T_OK(twin_make_resident(&t, h, n, PATH_FAST, "make-resident of 20"));
    T_OK(twin_make_resident(&t, h + 3, 5, PATH_FAST, "make-resident of 5"));
    T_OK(twin_make_resident(&t, &h[7], 1, PATH_FAST, "make-resident of 1"));
    for (int k = 0; k < 2; k++) {
        if (k == GENERAL)
            force_general(t.dev[k], true);
        T_OK(vidmm_make_resident(t.dev[k], h, n, NULL));
        if (k == GENERAL)
            force_general(t.dev[k], false);
    }
    compare(&t, "make-resident, no where");
    twin_eviction_order(&t, T_VIS, T_VIS_SIZE, "eviction of segment 1 after the make-residents");
    twin_eviction_order(&t, T_LOC, T_LOC_SIZE, "eviction of segment 2 after the make-residents");
    twin_fini(&t);
}

/* Lists longer than the prefetch distance: 600 entries over 200 allocations of two segments,
 * reads and writes, every allocation listed three times; then the same list with its last
 * entry naming nothing, and with its last entry's allocation evicted. */
Test(resident_lists, long_lists, .timeout = 60)
{
    struct twin t;
    twin_init(&t);
    vidmm_handle a[200];
    for (uint32_t i = 0; i < 200; i++)
        a[i] = twin_alloc_simple(&t, 4 * T_KiB, T_SET(i % 3 ? T_VIS : T_LOC), i % 5 ? VIDMM_PRIORITY_NORMAL
                                                                                     : VIDMM_PRIORITY_HIGH, 0);
    for (uint32_t i = 0; i < 200; i++)
        twin_use(&t, a[(i * 7) % 200], 0);
    compare(&t, "setup");
    static struct vidmm_alloc_ref refs[600];
    static vidmm_handle hs[600];
    for (uint32_t i = 0; i < 600; i++) {
        refs[i].allocation = hs[i] = a[(i * 13 + i / 200) % 200];
        refs[i].flags = (i % 7 == 3) ? VIDMM_REF_WRITE : 0;
    }
    /* An allocation written by one entry and read by another: both sets hold its segment. */
    T_OK(twin_submit(&t, refs, 600, 0, PATH_FAST, "600 entries"));
    T_OK(twin_make_resident(&t, hs, 600, PATH_FAST, "make-resident of 600"));
    const vidmm_handle last = refs[599].allocation;
    refs[599].allocation = hs[599] = T_BAD_HANDLE;
    struct t_snap s;
    t_snap(&s, t.dev[FAST], a, 8);
    T_RC(twin_submit(&t, refs, 600, 0, PATH_GENERAL, "600 entries, the last unknown"), VIDMM_E_INVALID_ARG);
    T_RC(twin_make_resident(&t, hs, 600, PATH_GENERAL, "make-resident of 600, the last unknown"), VIDMM_E_INVALID_ARG);
    t_unchanged(&s, "refused lists of 600");
    refs[599].allocation = hs[599] = last;
    twin_signal_all(&t);
    for (int k = 0; k < 2; k++)
        t_evict(t.dev[k], last);
    compare(&t, "evicted");
    T_OK(twin_submit(&t, refs, 600, 0, PATH_GENERAL, "600 entries, the last evicted"));
    twin_signal_all(&t);
    for (int k = 0; k < 2; k++)
        t_evict(t.dev[k], last);
    T_OK(twin_make_resident(&t, hs, 600, PATH_GENERAL, "make-resident of 600, the last evicted"));
    twin_fini(&t);
}

/* ---------------------------------------------------------------------------------------------
 * Lists that must take the general path.
 * ------------------------------------------------------------------------------------------- */

/* Bad lists are refused with the general path's code, in its order, and change nothing. */
Test(resident_lists, refused_lists, .timeout = 60)
{
    struct twin t;
    vidmm_handle a[NA];
    fixture(&t, a);
    struct t_snap s;
    t_snap(&s, t.dev[FAST], a, 8);
    struct vidmm_alloc_ref refs[4] = { { a[A_VIS0], 0 }, { a[A_LOC0], VIDMM_REF_WRITE }, { a[A_VIS1], 0 },
                                       { T_BAD_HANDLE, 0 } };
    T_RC(twin_submit(&t, refs, 4, 0, PATH_GENERAL, "an unknown handle last"), VIDMM_E_INVALID_ARG);
    const vidmm_handle hs[4] = { a[A_VIS0], a[A_LOC0], a[A_VIS1], T_BAD_HANDLE };
    T_RC(twin_make_resident(&t, hs, 4, PATH_GENERAL, "make-resident, an unknown handle last"), VIDMM_E_INVALID_ARG);
    refs[3] = (struct vidmm_alloc_ref){ a[A_VIS2], 0x80u };
    T_RC(twin_submit(&t, refs, 4, 0, PATH_GENERAL, "unknown flags last"), VIDMM_E_INVALID_ARG);
    refs[3] = (struct vidmm_alloc_ref){ a[A_VIS2], VIDMM_REF_OFFER_PRIORITY(5) };
    T_RC(twin_submit(&t, refs, 4, 0, PATH_GENERAL, "OfferPriority 5 last"), VIDMM_E_INVALID_ARG);
    t_unchanged(&s, "refused lists");
    /* An OfferPriority that is valid offers the allocation: the general way, the same result. */
    refs[3] = (struct vidmm_alloc_ref){ a[A_VIS2], VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_NORMAL) };
    T_OK(twin_submit(&t, refs, 4, 0, PATH_GENERAL, "OfferPriority NORMAL last"));
    /* Now offered: a list using it is refused, and changes nothing. */
    t_snap(&s, t.dev[FAST], a, 8);
    refs[3] = (struct vidmm_alloc_ref){ a[A_VIS2], 0 };
    T_RC(twin_submit(&t, refs, 4, 0, PATH_GENERAL, "an offered allocation last"), VIDMM_E_INVALID_ARG);
    const vidmm_handle ho[3] = { a[A_VIS0], a[A_VIS2], a[A_VIS1] };
    T_RC(twin_make_resident(&t, ho, 3, PATH_GENERAL, "make-resident, an offered allocation"), VIDMM_E_INVALID_ARG);
    t_unchanged(&s, "lists with an offered allocation");
    /* A removed device (its allocations can no longer be queried: the codes only). */
    refs[3] = (struct vidmm_alloc_ref){ a[A_VIS3], 0 };
    for (int k = 0; k < 2; k++) {
        T_OK(vidmm_device_remove(t.dev[k]));
        uint64_t fence = 0x1234u;
        T_RC(vidmm_submit(t.dev[k], refs, 4, 0, NULL, &fence), VIDMM_E_DEVICE_REMOVED);
        cr_assert_eq(fence, 0x1234u);
        T_RC(vidmm_make_resident(t.dev[k], hs, 3, NULL), VIDMM_E_DEVICE_REMOVED);
    }
    twin_fini(&t);
}

/* An allocation listed twice, read then written (or written then read), placed in a segment of
 * its read set but not of its write set: the general path moves it into its write set (the
 * list is one write reference). Read twice, it stays: the resident list's path. */
Test(resident_lists, read_and_write_of_one_allocation, .timeout = 60)
{
    struct twin t;
    twin_init(&t);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_LOC));
    d.supported_write_set = T_SET(T_LOC);
    d.preferred_segment = T_PREF(0, T_VIS) | T_PREF(1, T_LOC);
    vidmm_handle h = twin_alloc(&t, &d);
    vidmm_handle o = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    twin_use(&t, o, 0);
    twin_use(&t, h, 0);
    cr_assert_eq(t_query(t.dev[FAST], h).segment_id, T_VIS, "read, it should be in its preferred segment 1");
    compare(&t, "setup");
    struct vidmm_alloc_ref rr[3] = { { h, 0 }, { o, VIDMM_REF_WRITE }, { h, 0 } };
    T_OK(twin_submit(&t, rr, 3, 0, PATH_FAST, "read twice"));
    cr_assert_eq(t_query(t.dev[FAST], h).segment_id, T_VIS);
    twin_signal_all(&t); /* moving it waits for the GPU */
    struct vidmm_alloc_ref rw[3] = { { h, 0 }, { o, 0 }, { h, VIDMM_REF_WRITE } };
    T_OK(twin_submit(&t, rw, 3, 0, PATH_GENERAL, "read, then written"));
    cr_assert_eq(t_query(t.dev[FAST], h).segment_id, T_LOC, "written, it should have moved to segment 2");
    /* Back to segment 1, then written first. */
    twin_signal_all(&t);
    for (int k = 0; k < 2; k++)
        t_evict(t.dev[k], h);
    twin_use(&t, h, 0);
    cr_assert_eq(t_query(t.dev[FAST], h).segment_id, T_VIS);
    compare(&t, "back in segment 1");
    struct vidmm_alloc_ref wr[2] = { { h, VIDMM_REF_WRITE }, { h, 0 } };
    T_OK(twin_submit(&t, wr, 2, 0, PATH_GENERAL, "written, then read"));
    cr_assert_eq(t_query(t.dev[FAST], h).segment_id, T_LOC);
    /* A make-resident may use either set: where it is now. */
    const vidmm_handle hh[2] = { h, h };
    T_OK(twin_make_resident(&t, hh, 2, PATH_FAST, "make-resident twice"));
    twin_fini(&t);
}

/* Spec 15.18: an older rename instance after a newer one is refused (VIDMM_E_INVALID_INSTANCE),
 * even when both are placed, and changes nothing; in order, the list takes the resident list's
 * path. An unknown handle after the misordered pair wins: check_refs() looks at handles first. */
Test(resident_lists, rename_instances, .timeout = 60)
{
    struct twin t;
    twin_init(&t);
    vidmm_handle h0 = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE), VIDMM_PRIORITY_NORMAL, 0);
    vidmm_handle o = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    twin_use(&t, o, 0);
    vidmm_handle h1 = 0;
    for (int k = 0; k < 2; k++) {
        t_submit1(t.dev[k], h0, VIDMM_REF_WRITE, NULL); /* busy: a Discard renames it */
        struct vidmm_lock_args la = t_largs(h0, VIDMM_LOCK_DISCARD);
        T_OK(vidmm_lock(t.dev[k], &la));
        cr_assert_neq(la.allocation, h0);
        cr_assert(k == FAST || la.allocation == h1);
        h1 = la.allocation;
        t_unlock(t.dev[k], h1);
        t_submit1(t.dev[k], h1, 0, NULL); /* the new instance placed too */
    }
    t.h[t.nh++] = h1;
    compare(&t, "setup");
    cr_assert_eq(t_query(t.dev[FAST], h0).where, VIDMM_WHERE_SEGMENT);
    cr_assert_eq(t_query(t.dev[FAST], h1).where, VIDMM_WHERE_SEGMENT);
    vidmm_handle hs[2] = { h0, h1 };
    struct t_snap s;
    t_snap(&s, t.dev[FAST], hs, 2);
    struct vidmm_alloc_ref bad[3] = { { h1, 0 }, { o, 0 }, { h0, 0 } };
    T_RC(twin_submit(&t, bad, 3, 0, PATH_GENERAL, "the older instance after the newer"), VIDMM_E_INVALID_INSTANCE);
    struct vidmm_alloc_ref bad2[4] = { { h0, 0 }, { h1, 0 }, { o, 0 }, { h0, VIDMM_REF_WRITE } };
    T_RC(twin_submit(&t, bad2, 4, 0, PATH_GENERAL, "older, newer, older"), VIDMM_E_INVALID_INSTANCE);
    const vidmm_handle mbad[3] = { h1, o, h0 };
    T_RC(twin_make_resident(&t, mbad, 3, PATH_GENERAL, "make-resident, the older after the newer"),
         VIDMM_E_INVALID_INSTANCE);
    struct vidmm_alloc_ref bad3[4] = { { h1, 0 }, { h0, 0 }, { o, 0 }, { T_BAD_HANDLE, 0 } };
    T_RC(twin_submit(&t, bad3, 4, 0, PATH_GENERAL, "misordered, then an unknown handle"), VIDMM_E_INVALID_ARG);
    t_unchanged(&s, "misordered instances");
    struct vidmm_alloc_ref ok[4] = { { h0, 0 }, { o, VIDMM_REF_WRITE }, { h1, 0 }, { h1, VIDMM_REF_WRITE } };
    T_OK(twin_submit(&t, ok, 4, 0, PATH_FAST, "the older instance, then the newer"));
    const vidmm_handle mok[3] = { h0, h0, h1 };
    T_OK(twin_make_resident(&t, mok, 3, PATH_FAST, "make-resident, in order"));
    twin_signal_all(&t);
    twin_fini(&t);
}

/* An allocation placed but with paging still queued for it: the general path waits for that
 * paging (here it waits for the GPU, so DONOT_WAIT says VIDMM_E_BUSY, and a wait times out),
 * and so must the list. Made so: a make-resident evicting a busy allocation times out, the
 * new one placed behind the eviction's transfer, which waits for the GPU. */
Test(resident_lists, paging_still_queued, .timeout = 60)
{
    struct twin t;
    twin_init_ex(&t, 20ull * 1000 * 1000);
    vidmm_handle h = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    vidmm_handle o = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_LOC), VIDMM_PRIORITY_NORMAL, 0);
    twin_use(&t, o, 0);
    uint64_t f = 0;
    for (int k = 0; k < 2; k++)
        f = t_submit1(t.dev[k], h, VIDMM_REF_WRITE, NULL);
    vidmm_handle big = twin_alloc_simple(&t, T_VIS_SIZE, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    for (int k = 0; k < 2; k++)
        T_RC(vidmm_make_resident(t.dev[k], &big, 1, NULL), VIDMM_E_TIMEOUT);
    compare(&t, "setup");
    for (int k = 0; k < 2; k++) {
        pthread_mutex_lock(&t.dev[k]->mu);
        const struct vm_alloc *b = vm_lookup(t.dev[k], big);
        cr_assert(b->where == VIDMM_WHERE_SEGMENT && b->paging_fence > t.dev[k]->paging_done,
                  "the test needs an allocation placed with its paging queued");
        pthread_mutex_unlock(&t.dev[k]->mu);
    }
    struct vidmm_alloc_ref refs[2] = { { o, 0 }, { big, 0 } };
    T_RC(twin_submit(&t, refs, 2, VIDMM_SUBMIT_DONOT_WAIT, PATH_GENERAL, "DONOT_WAIT, paging queued"), VIDMM_E_BUSY);
    T_RC(twin_submit(&t, refs, 2, 0, PATH_GENERAL, "paging queued that waits for the GPU"), VIDMM_E_TIMEOUT);
    const vidmm_handle hs[2] = { o, big };
    T_RC(twin_make_resident(&t, hs, 2, PATH_GENERAL, "make-resident, paging queued"), VIDMM_E_TIMEOUT);
    for (int k = 0; k < 2; k++)
        t_signal(t.dev[k], f);
    T_OK(twin_submit(&t, refs, 2, 0, PATH_GENERAL, "the GPU done: the general path waits for the paging"));
    T_OK(twin_submit(&t, refs, 2, 0, PATH_FAST, "paging done"));
    twin_signal_all(&t);
    twin_fini(&t);
}

/* A locked allocation: the general path decides (spec 15.17: rendering with it locked needs an
 * aperture in its set; locked in a CPU-visible memory segment it stays there). */
Test(resident_lists, locked_allocations, .timeout = 60)
{
    struct twin t;
    twin_init(&t);
    vidmm_handle v = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    vidmm_handle va = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE), VIDMM_PRIORITY_NORMAL, 0);
    vidmm_handle o = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_LOC), VIDMM_PRIORITY_NORMAL, 0);
    twin_use(&t, v, 0);
    twin_use(&t, va, 0);
    twin_use(&t, o, 0);
    for (int k = 0; k < 2; k++) {
        t_lock(t.dev[k], v, 0);
        t_lock(t.dev[k], va, 0);
    }
    compare(&t, "setup");
    struct vidmm_alloc_ref r1[2] = { { o, 0 }, { v, 0 } };
    T_RC(twin_submit(&t, r1, 2, 0, PATH_GENERAL, "locked, no aperture in its set"), VIDMM_E_CANT_RENDER_LOCKED);
    struct vidmm_alloc_ref r2[2] = { { o, 0 }, { va, VIDMM_REF_WRITE } };
    T_OK(twin_submit(&t, r2, 2, 0, PATH_GENERAL, "locked, an aperture in its set"));
    const vidmm_handle hs[2] = { va, o };
    T_OK(twin_make_resident(&t, hs, 2, PATH_GENERAL, "make-resident, locked"));
    for (int k = 0; k < 2; k++) {
        t_unlock(t.dev[k], v);
        t_unlock(t.dev[k], va);
    }
    T_OK(twin_submit(&t, r2, 2, 0, PATH_FAST, "unlocked again"));
    twin_signal_all(&t);
    twin_fini(&t);
}

/* Spec 15.25: no submission is issued before the last paging operation of a SynchronousPaging
 * allocation has completed - also one whose list has nothing to page. Made so: evicting a busy
 * SynchronousPaging allocation waits for the GPU, and the make-resident that needed its room
 * times out with that operation queued. A make-resident does not wait for it. */
Test(resident_lists, synchronous_paging_pending, .timeout = 60)
{
    struct twin t;
    twin_init_ex(&t, 20ull * 1000 * 1000);
    vidmm_handle sp = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL,
                                        VIDMM_ALLOC_SYNCHRONOUS_PAGING);
    vidmm_handle o = twin_alloc_simple(&t, 64 * T_KiB, T_SET(T_LOC), VIDMM_PRIORITY_NORMAL, 0);
    twin_use(&t, o, 0);
    uint64_t f = 0;
    for (int k = 0; k < 2; k++)
        f = t_submit1(t.dev[k], sp, VIDMM_REF_WRITE, NULL);
    vidmm_handle big = twin_alloc_simple(&t, T_VIS_SIZE, T_SET(T_VIS), VIDMM_PRIORITY_NORMAL, 0);
    for (int k = 0; k < 2; k++)
        T_RC(vidmm_make_resident(t.dev[k], &big, 1, NULL), VIDMM_E_TIMEOUT);
    compare(&t, "setup");
    for (int k = 0; k < 2; k++) {
        pthread_mutex_lock(&t.dev[k]->mu);
        cr_assert(t.dev[k]->sync_paging_fence > t.dev[k]->paging_done,
                  "the test needs a SynchronousPaging operation queued");
        pthread_mutex_unlock(&t.dev[k]->mu);
    }
    struct vidmm_alloc_ref r = { o, VIDMM_REF_WRITE };
    T_RC(twin_submit(&t, &r, 1, VIDMM_SUBMIT_DONOT_WAIT, PATH_GENERAL, "DONOT_WAIT, SynchronousPaging queued"),
         VIDMM_E_BUSY);
    T_RC(twin_submit(&t, &r, 1, 0, PATH_GENERAL, "SynchronousPaging queued, waiting for the GPU"), VIDMM_E_TIMEOUT);
    T_OK(twin_make_resident(&t, &o, 1, PATH_FAST, "make-resident, SynchronousPaging queued"));
    for (int k = 0; k < 2; k++)
        t_signal(t.dev[k], f);
    T_OK(twin_submit(&t, &r, 1, 0, PATH_GENERAL, "the GPU done: the general path waits for the paging"));
    T_OK(twin_submit(&t, &r, 1, 0, PATH_FAST, "paging done"));
    twin_signal_all(&t);
    twin_fini(&t);
}
