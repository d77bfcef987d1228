/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_queue.c - conformance: WDDM2 paging queues (spec 12:
 * D3DKMTCreatePagingQueue, D3DDDI_PAGINGQUEUE_PRIORITY; include/vidmm/wddm2.h "Paging queues") -
 * creation rules, the priority's effect on the order paging runs in (on the waiting thread and
 * on a paging thread), the conflicts that keep that order, each queue's fence (in order, waiting
 * for every operation its allocations need), the default queue of callers built before the
 * queue field existed, and a destroy with work pending. */
#include "t_wddm2.h"

#include <stdlib.h>

#define SZ (128 * T_KiB)
#define LOW VIDMM_PAGING_QUEUE_PRIORITY_BELOW_NORMAL
#define HIGH VIDMM_PAGING_QUEUE_PRIORITY_ABOVE_NORMAL

static vidmm_paging_queue *mkq(vidmm_device *dev, int32_t priority)
{
    vidmm_paging_queue *q = NULL;
    T_OK(vidmm_paging_queue_create(dev, T_PROC, priority, &q));
    cr_assert_not_null(q);
    return q;
}

/* vidmm_wddm2_make_resident() of 'n' handles on 'q' (NULL: the default queue). */
static int mrq(vidmm_device *dev, vidmm_paging_queue *q, const vidmm_handle *h, uint32_t n, uint64_t *fence)
{
    struct vidmm_make_resident_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = h;
    a.count = n;
    a.queue = q;
    int rc = vidmm_wddm2_make_resident(dev, &a);
    if (fence)
        *fence = a.paging_fence;
    return rc;
}

static void destroyq(vidmm_paging_queue *q)
{
    T_OK(vidmm_paging_queue_destroy(q));
}

static uint64_t sum_of(vidmm_device *dev, vidmm_handle h, uint64_t size)
{
    uint8_t *buf = malloc((size_t)size);
    cr_assert_not_null(buf);
    t_read(dev, h, 0, buf, (size_t)size);
    uint64_t s = 1469598103934665603ull;
    for (uint64_t i = 0; i < size; i++)
        s = (s ^ buf[i]) * 1099511628211ull;
    free(buf);
    return s;
}

/* =============================================================================================
 * Creation.
 * =========================================================================================== */

/* spec 12: D3DDDI_PAGINGQUEUE_PRIORITY is BELOW_NORMAL -1, NORMAL 0, ABOVE_NORMAL 1; anything
 * else is refused and creates nothing; WDDM1 devices have no paging queues. */
Test(wddm2_queue, create_rules)
{
    vidmm_device *dev = w2_dev();
    vidmm_paging_queue *q = (vidmm_paging_queue *)(uintptr_t)0x1234;
    T_RC(vidmm_paging_queue_create(dev, T_PROC, -2, &q), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_paging_queue_create(dev, T_PROC, 2, &q), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_paging_queue_create(dev, T_PROC, INT32_MIN, &q), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_paging_queue_create(NULL, T_PROC, 0, &q), VIDMM_E_INVALID_ARG);
    cr_assert_eq((uintptr_t)q, 0x1234u, "a refused create wrote '*out'");
    T_RC(vidmm_paging_queue_create(dev, T_PROC, 0, NULL), VIDMM_E_INVALID_ARG);
    for (int32_t p = LOW; p <= HIGH; p++)
        destroyq(mkq(dev, p));
    T_OK(vidmm_paging_queue_destroy(NULL));
    cr_assert_eq(vidmm_paging_queue_completed(NULL), 0);
    T_RC(vidmm_paging_queue_wait(NULL, 0, 0), VIDMM_E_INVALID_ARG);
    vidmm_device *w1 = t_dev_std();
    T_RC(vidmm_paging_queue_create(w1, T_PROC, 0, &q), VIDMM_E_INVALID_ARG);
    cr_assert_eq((uintptr_t)q, 0x1234u);
    vidmm_device_destroy(w1);
    /* Queues left alive are freed with the device. */
    (void)mkq(dev, HIGH);
    vidmm_device_destroy(dev);
}

/* wddm2.h: a queue's fence starts at 0 and grows by one per call naming it; a value never
 * returned cannot be waited for. */
Test(wddm2_queue, fence_values)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_paging_queue *q = mkq(dev, 0);
    cr_assert_eq(vidmm_paging_queue_completed(q), 0);
    T_RC(vidmm_paging_queue_wait(q, 1, 0), VIDMM_E_INVALID_ARG);
    T_OK(vidmm_paging_queue_wait(q, 0, 0));
    uint64_t f1, f2;
    T_RC(mrq(dev, q, &h, 1, &f1), VIDMM_PENDING);
    cr_assert_eq(f1, 1);
    T_OK(vidmm_paging_queue_wait(q, f1, UINT64_MAX));
    cr_assert_eq(vidmm_paging_queue_completed(q), 1);
    T_RC(mrq(dev, q, &h, 1, &f2), 0); /* resident: nothing to wait for */
    cr_assert_eq(f2, 2);
    cr_assert_eq(vidmm_paging_queue_completed(q), 2);
    T_RC(vidmm_paging_queue_wait(q, 3, 0), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, h), 2);
    destroyq(q);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Priority.
 * =========================================================================================== */

/* wddm2.h: with operations of several priorities queued, the oldest of the highest priority runs
 * first; one priority runs in queued order. Queued LOW, NORMAL (default queue), HIGH, the device
 * without a paging thread: waiting for HIGH's fence runs HIGH's page-in alone; then NORMAL's,
 * then LOW's. */
Test(wddm2_queue, priority_orders_paging)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle c = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle c2 = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_paging_queue *lo = mkq(dev, LOW), *hi = mkq(dev, HIGH);
    t_log_clear(dev);
    uint64_t fa, fb, fc, fc2;
    T_RC(mrq(dev, lo, &a, 1, &fa), VIDMM_PENDING);
    T_RC(mrq(dev, NULL, &b, 1, &fb), VIDMM_PENDING);
    T_RC(mrq(dev, hi, &c, 1, &fc), VIDMM_PENDING);
    T_RC(mrq(dev, hi, &c2, 1, &fc2), VIDMM_PENDING);
    cr_assert_eq(fc2, fc + 1);
    T_OK(vidmm_paging_queue_wait(hi, fc, UINT64_MAX));
    struct t_log_buf *log = malloc(sizeof *log);
    cr_assert_not_null(log);
    t_log_take(dev, log);
    cr_assert_eq(log->n, 1, "waiting for the high queue's first value ran %zu operations", log->n);
    cr_assert_eq(log->op[0].allocation, c, "the high-priority page-in did not run first");
    cr_assert_eq(vidmm_paging_queue_completed(hi), fc);
    cr_assert_eq(vidmm_paging_queue_completed(lo), 0, "the low queue's page-in ran");
    cr_assert_lt(vidmm_wddm2_paging_fence_completed(dev), fb, "the default queue's page-in ran");
    T_OK(vidmm_paging_queue_wait(lo, fa, UINT64_MAX));
    t_log_take(dev, log);
    cr_assert_eq(log->n, 3);
    cr_assert_eq(log->op[0].allocation, c2, "HIGH's second page-in did not run before NORMAL and LOW");
    cr_assert_eq(log->op[1].allocation, b, "NORMAL did not run before LOW");
    cr_assert_eq(log->op[2].allocation, a);
    /* The records keep the device fence each was queued with: not increasing here. */
    cr_assert_gt(log->op[0].fence, log->op[2].fence);
    cr_assert_eq(vidmm_paging_queue_completed(hi), fc2);
    cr_assert_geq(vidmm_wddm2_paging_fence_completed(dev), fb);
    free(log);
    destroyq(lo);
    destroyq(hi);
    vidmm_device_destroy(dev);
}

/* wddm2.h: an operation does not run before an older one that touches the same bytes. A
 * resident allocation filling the segment is evicted (its transfer out queued, NORMAL); a HIGH
 * page-in into the same range must wait for it - else the transfer would save the new content.
 * The evicted content survives (checksum), and the log has the transfer first. */
Test(wddm2_queue, conflicts_keep_order)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    vidmm_handle other = t_alloc_simple(dev, SZ, T_SET(T_LOC));
    w2_resident(dev, a);
    uint8_t *bytes = malloc(T_VIS_SIZE);
    cr_assert_not_null(bytes);
    t_bytes(bytes, T_VIS_SIZE, 77);
    t_write(dev, a, 0, bytes, T_VIS_SIZE);
    free(bytes);
    const uint64_t sum = sum_of(dev, a, T_VIS_SIZE);
    vidmm_paging_queue *lo = mkq(dev, LOW), *hi = mkq(dev, HIGH);
    uint64_t fo, fb;
    T_RC(mrq(dev, lo, &other, 1, &fo), VIDMM_PENDING); /* an older LOW operation it may pass */
    t_log_clear(dev);
    w2_evict(dev, a, 0);
    T_RC(mrq(dev, hi, &b, 1, &fb), VIDMM_PENDING);
    T_OK(vidmm_paging_queue_wait(hi, fb, UINT64_MAX));
    struct t_log_buf *log = malloc(sizeof *log);
    cr_assert_not_null(log);
    t_log_take(dev, log);
    const ptrdiff_t out = t_log_find(log, VIDMM_PAGING_TRANSFER, a, 0);
    const ptrdiff_t in = t_log_find(log, VIDMM_PAGING_FILL, b, 0);
    cr_assert(out >= 0 && in >= 0, "no transfer out of a or fill of b");
    cr_assert_lt(out, in, "the page-in ran before the transfer out of the same range");
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, other), 0, "the LOW page-in ran before HIGH");
    cr_assert_eq(sum_of(dev, a, T_VIS_SIZE), sum, "the evicted content was lost");
    free(log);
    T_OK(vidmm_paging_queue_wait(lo, fo, UINT64_MAX));
    destroyq(lo);
    destroyq(hi);
    vidmm_device_destroy(dev);
}

/* wddm2.h: a queue's fence value waits for every operation its allocations need, of any queue:
 * an allocation already being paged in by a LOW queue, made resident again on a HIGH queue,
 * gives a HIGH value that passes only once the LOW page-in has run. */
Test(wddm2_queue, value_waits_for_other_queues)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_paging_queue *lo = mkq(dev, LOW), *hi = mkq(dev, HIGH);
    uint64_t fl, fh;
    T_RC(mrq(dev, lo, &a, 1, &fl), VIDMM_PENDING);
    T_RC(mrq(dev, hi, &a, 1, &fh), VIDMM_PENDING);
    cr_assert_eq(vidmm_paging_queue_completed(hi), 0);
    t_log_clear(dev);
    T_OK(vidmm_paging_queue_wait(hi, fh, UINT64_MAX));
    struct t_log_buf *log = malloc(sizeof *log);
    cr_assert_not_null(log);
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, a), 1, "the HIGH value passed before a's page-in ran");
    cr_assert_eq(vidmm_paging_queue_completed(lo), fl);
    cr_assert_eq(w2_status(dev, a, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    free(log);
    destroyq(lo);
    destroyq(hi);
    vidmm_device_destroy(dev);
}

/* wddm2.h: a queue's values pass in order - a value whose own paging is done still waits for
 * the values before it. */
Test(wddm2_queue, values_pass_in_order)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle r = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    w2_resident(dev, r);
    vidmm_paging_queue *q = mkq(dev, HIGH);
    uint64_t f1, f2;
    T_RC(mrq(dev, q, &a, 1, &f1), VIDMM_PENDING);
    T_RC(mrq(dev, q, &r, 1, &f2), VIDMM_PENDING); /* r is resident, but value 1 has not passed */
    cr_assert_eq(vidmm_paging_queue_completed(q), 0);
    T_OK(vidmm_paging_queue_wait(q, f2, UINT64_MAX));
    cr_assert_eq(vidmm_paging_queue_completed(q), f2);
    cr_assert_eq(w2_status(dev, a, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    destroyq(q);
    vidmm_device_destroy(dev);
}

/* A paging thread: the operations queued while it runs a long one are taken by priority. The
 * driver's paging callback holds the first operation until the test has queued LOW, NORMAL and
 * HIGH page-ins; the callback then sees HIGH, NORMAL, LOW. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool entered, open;
    uint32_t n;
    vidmm_handle order[16];
};

static uint32_t gate_paging(void *arg, struct vidmm_paging_op *op)
{
    struct gate *g = arg;
    pthread_mutex_lock(&g->mu);
    if (g->n < 16)
        g->order[g->n] = op->allocation;
    g->n++;
    g->entered = true;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    if (op->type == VIDMM_PAGING_FILL)
        vidmm_fill32(op->dst_ptr, op->fill_pattern, (size_t)op->size, VIDMM_MEM_CACHED);
    else if (op->type == VIDMM_PAGING_TRANSFER)
        memcpy(op->dst_ptr, op->src_ptr, (size_t)op->size);
    return VIDMM_STATUS_SUCCESS;
}

Test(wddm2_queue, paging_thread_takes_priority)
{
    struct gate g;
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    struct vidmm_driver drv;
    memset(&drv, 0, sizeof drv);
    drv.paging = gate_paging;
    drv.arg = &g;
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP);
    struct vidmm_device_desc d = t_ddesc(segs, 3);
    d.flags |= VIDMM_DEVICE_WDDM2;
    d.driver = &drv;
    d.paging_threads = 1;
    vidmm_device *dev = t_dev(&d);
    vidmm_handle first = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle a = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_handle c = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_paging_queue *lo = mkq(dev, LOW), *hi = mkq(dev, HIGH);
    uint64_t ff, fa, fb, fc;
    T_RC(mrq(dev, NULL, &first, 1, &ff), VIDMM_PENDING);
    pthread_mutex_lock(&g.mu);
    while (!g.entered)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);
    T_RC(mrq(dev, lo, &a, 1, &fa), VIDMM_PENDING);
    T_RC(mrq(dev, NULL, &b, 1, &fb), VIDMM_PENDING);
    T_RC(mrq(dev, hi, &c, 1, &fc), VIDMM_PENDING);
    pthread_mutex_lock(&g.mu);
    g.open = true;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    T_OK(vidmm_paging_queue_wait(lo, fa, UINT64_MAX));
    T_OK(vidmm_paging_queue_wait(hi, fc, UINT64_MAX));
    T_OK(vidmm_wddm2_paging_fence_wait(dev, fb, UINT64_MAX));
    pthread_mutex_lock(&g.mu);
    cr_assert_eq(g.n, 4);
    cr_assert_eq(g.order[0], first);
    cr_assert_eq(g.order[1], c, "the paging thread did not take the HIGH page-in first");
    cr_assert_eq(g.order[2], b);
    cr_assert_eq(g.order[3], a);
    pthread_mutex_unlock(&g.mu);
    destroyq(lo);
    destroyq(hi);
    vidmm_device_destroy(dev);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
}

/* =============================================================================================
 * The queue field and its rules.
 * =========================================================================================== */

/* wddm2.h: 'queue' is read only when size_of covers it: a caller built before it passes the
 * smaller size and gets the default queue (the device's paging fence); smaller still is
 * refused. Reclaim alike. */
Test(wddm2_queue, old_size_of_uses_default_queue)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    struct vidmm_make_resident_args a;
    memset(&a, 0, sizeof a);
    a.size_of = VIDMM_MAKE_RESIDENT_ARGS_V1_SIZE;
    a.allocations = &h;
    a.count = 1;
    a.queue = (vidmm_paging_queue *)(uintptr_t)0x10; /* past size_of: never read */
    T_RC(vidmm_wddm2_make_resident(dev, &a), VIDMM_PENDING);
    cr_assert_gt(a.paging_fence, vidmm_wddm2_paging_fence_completed(dev));
    T_OK(vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX));
    cr_assert_eq(w2_refs(dev, h), 1);
    a.size_of = VIDMM_MAKE_RESIDENT_ARGS_V1_SIZE - 1;
    T_RC(vidmm_wddm2_make_resident(dev, &a), VIDMM_E_INVALID_ARG);
    a.size_of = VIDMM_MAKE_RESIDENT_ARGS_V1_SIZE + 1; /* cuts 'queue' */
    T_RC(vidmm_wddm2_make_resident(dev, &a), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, h), 1);
    /* Reclaim: an offered resident-listed allocation, discarded by an eviction. */
    struct vidmm_offer_args o;
    memset(&o, 0, sizeof o);
    o.size_of = sizeof o;
    o.allocations = &h;
    o.count = 1;
    o.priority = VIDMM_OFFER_PRIORITY_LOW;
    T_OK(vidmm_offer(dev, &o));
    struct vidmm_reclaim_args r;
    memset(&r, 0, sizeof r);
    r.size_of = VIDMM_RECLAIM_ARGS_V1_SIZE - 1;
    r.allocations = &h;
    r.count = 1;
    r.queue = (vidmm_paging_queue *)(uintptr_t)0x10;
    T_RC(vidmm_reclaim(dev, &r), VIDMM_E_INVALID_ARG);
    r.size_of = sizeof r - 1;
    T_RC(vidmm_reclaim(dev, &r), VIDMM_E_INVALID_ARG);
    r.size_of = VIDMM_RECLAIM_ARGS_V1_SIZE;
    int rc = vidmm_reclaim(dev, &r);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "reclaim: %d (%s)", rc, vidmm_strerror(rc));
    T_OK(vidmm_wddm2_paging_fence_wait(dev, r.paging_fence, UINT64_MAX));
    vidmm_device_destroy(dev);
}

/* wddm2.h: the queue must be a live queue of the device, and the allocations of its process
 * (or shared); refused with nothing changed. */
Test(wddm2_queue, queue_rules)
{
    vidmm_device *dev = w2_dev(), *dev2 = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    struct vidmm_alloc_desc od = t_adesc(SZ, T_SET(T_VIS));
    od.process = T_OTHER_PROC;
    vidmm_handle theirs = t_alloc(dev, &od);
    od.kind = VIDMM_ALLOC_KIND_SHARED;
    vidmm_handle shared = t_alloc(dev, &od);
    vidmm_paging_queue *q = mkq(dev, HIGH), *q2 = mkq(dev2, HIGH);
    struct t_snap s;
    vidmm_handle both[2] = { h, theirs };
    t_snap(&s, dev, both, 2);
    T_REFUSED(&s, mrq(dev, q2, &h, 1, NULL), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, mrq(dev, q, both, 2, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, h), 0);
    cr_assert_eq(w2_refs(dev, theirs), 0);
    cr_assert_eq(vidmm_paging_queue_completed(q), 0);
    T_RC(vidmm_paging_queue_wait(q, 1, 0), VIDMM_E_INVALID_ARG); /* no value given */
    uint64_t f;
    int rc = mrq(dev, q, &shared, 1, &f);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "a shared allocation on the queue: %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_eq(f, 1);
    /* Reclaim: the same rules. */
    struct vidmm_reclaim_args r;
    memset(&r, 0, sizeof r);
    r.size_of = sizeof r;
    r.allocations = &theirs;
    r.count = 1;
    r.queue = q;
    T_RC(vidmm_reclaim(dev, &r), VIDMM_E_INVALID_ARG);
    r.queue = q2;
    r.allocations = &h;
    T_RC(vidmm_reclaim(dev, &r), VIDMM_E_INVALID_ARG);
    r.queue = q;
    rc = vidmm_reclaim(dev, &r); /* pending while value 1 is */
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "reclaim on the queue: %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_eq(r.paging_fence, 2, "a reclaim on the queue gives its next value");
    T_OK(vidmm_paging_queue_wait(q, 2, UINT64_MAX));
    destroyq(q);
    destroyq(q2);
    vidmm_device_destroy(dev2);
    vidmm_device_destroy(dev);
}

/* wddm2.h: reclaim on a queue pages the resident-listed allocations back with the queue's
 * priority and returns a value of the queue's fence. */
Test(wddm2_queue, reclaim_on_queue)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    vidmm_handle big = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    vidmm_handle low = t_alloc_simple(dev, SZ, T_SET(T_LOC));
    w2_resident(dev, h);
    struct vidmm_offer_args o;
    memset(&o, 0, sizeof o);
    o.size_of = sizeof o;
    o.allocations = &h;
    o.count = 1;
    o.priority = VIDMM_OFFER_PRIORITY_LOW;
    o.flags = VIDMM_OFFER_IMMEDIATELY;
    T_OK(vidmm_offer(dev, &o));
    w2_resident(dev, big); /* discards h to make room */
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    w2_evict(dev, big, 0);
    w2_drain(dev);
    vidmm_paging_queue *lo = mkq(dev, LOW), *hi = mkq(dev, HIGH);
    uint64_t fl;
    T_RC(mrq(dev, lo, &low, 1, &fl), VIDMM_PENDING);
    struct vidmm_reclaim_args r;
    uint32_t result = 99;
    memset(&r, 0, sizeof r);
    r.size_of = sizeof r;
    r.allocations = &h;
    r.count = 1;
    r.results = &result;
    r.queue = hi;
    T_RC(vidmm_reclaim(dev, &r), VIDMM_PENDING);
    cr_assert_eq(result, VIDMM_RECLAIM_DISCARDED);
    cr_assert_eq(r.paging_fence, 1);
    t_log_clear(dev);
    T_OK(vidmm_paging_queue_wait(hi, r.paging_fence, UINT64_MAX));
    struct t_log_buf *log = malloc(sizeof *log);
    cr_assert_not_null(log);
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, low), 0, "the LOW page-in ran before the HIGH reclaim");
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    free(log);
    T_OK(vidmm_paging_queue_wait(lo, fl, UINT64_MAX));
    destroyq(lo);
    destroyq(hi);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Destroy with work pending.
 * =========================================================================================== */

/* wddm2.h: a destroy does not drop the queue's paging; it runs it (no paging thread) and
 * returns 0 once the queue's last value has passed. */
Test(wddm2_queue, destroy_runs_pending_work)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_paging_queue *q = mkq(dev, LOW);
    uint64_t f;
    T_RC(mrq(dev, q, &h, 1, &f), VIDMM_PENDING);
    t_log_clear(dev);
    const uint64_t before = vidmm_wddm2_paging_fence_completed(dev);
    T_OK(vidmm_paging_queue_destroy(q));
    cr_assert_gt(vidmm_wddm2_paging_fence_completed(dev), before, "the destroy dropped or left the paging");
    struct t_log_buf *log = malloc(sizeof *log);
    cr_assert_not_null(log);
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, h), 1);
    free(log);
    cr_assert_eq(w2_status(dev, h, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    cr_assert_eq(w2_refs(dev, h), 1);
    vidmm_device_destroy(dev);
}

/* wddm2.h: pending paging that waits for the GPU beyond the device's wait_timeout_ns makes the
 * destroy fail with VIDMM_E_TIMEOUT; the queue stays usable and is destroyed once the GPU is
 * done. The page-in waits behind the transfer out of a busy allocation in the same range. */
Test(wddm2_queue, destroy_times_out_on_busy_gpu)
{
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP);
    struct vidmm_device_desc d = t_ddesc(segs, 3);
    d.flags |= VIDMM_DEVICE_WDDM2;
    d.wait_timeout_ns = 50ull * 1000 * 1000;
    vidmm_device *dev = t_dev(&d);
    vidmm_handle a = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, T_VIS_SIZE, T_SET(T_VIS));
    w2_resident(dev, a);
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    const uint64_t va = w2_reserve(sp, 0, T_VIS_SIZE);
    w2_map(sp, va, a, 0, T_VIS_SIZE);
    w2_drain(dev);
    struct vidmm_va_ref ref = { va, T_VIS_SIZE, VIDMM_REF_WRITE, 0 };
    uint64_t gpu = 0;
    T_OK(vidmm_va_submit(sp, &ref, 1, 0, &gpu));
    w2_evict(dev, a, 0); /* its transfer out waits for the GPU */
    vidmm_paging_queue *q = mkq(dev, HIGH);
    uint64_t f;
    T_RC(mrq(dev, q, &b, 1, &f), VIDMM_PENDING);
    T_RC(vidmm_paging_queue_destroy(q), VIDMM_E_TIMEOUT);
    cr_assert_eq(vidmm_paging_queue_completed(q), 0, "the queue's page-in ran before the transfer out");
    T_RC(vidmm_paging_queue_wait(q, f, 0), VIDMM_E_TIMEOUT); /* still a queue */
    T_OK(vidmm_fence_signal(dev, gpu));
    T_OK(vidmm_paging_queue_destroy(q));
    cr_assert_eq(w2_status(dev, b, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    vidmm_va_space_destroy(sp);
    vidmm_device_destroy(dev);
}

/* A removed device: destroy waits for nothing; waits say DEVICE_REMOVED. */
Test(wddm2_queue, removed_device)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, SZ, T_SET(T_VIS));
    vidmm_paging_queue *q = mkq(dev, LOW), *q2 = mkq(dev, HIGH);
    uint64_t f;
    T_RC(mrq(dev, q, &h, 1, &f), VIDMM_PENDING);
    vidmm_device_remove(dev);
    T_RC(vidmm_paging_queue_wait(q, f, UINT64_MAX), VIDMM_E_DEVICE_REMOVED);
    T_RC(mrq(dev, q, &h, 1, NULL), VIDMM_E_DEVICE_REMOVED);
    vidmm_paging_queue *q3 = NULL;
    T_RC(vidmm_paging_queue_create(dev, T_PROC, 0, &q3), VIDMM_E_DEVICE_REMOVED);
    cr_assert_null(q3);
    T_OK(vidmm_paging_queue_destroy(q));
    T_OK(vidmm_paging_queue_destroy(q2));
    vidmm_device_destroy(dev);
}
