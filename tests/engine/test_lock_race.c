/* SPDX-License-Identifier: MIT */
/* tests/engine/test_lock_race.c - a WDDM1 lock must hand out where the content is when it
 * returns, not where it was when it began. vidmm_lock() takes its pointer, then waits for the
 * allocation's paging with the device mutex released; a vidmm_make_resident() on another thread
 * may page the allocation in meanwhile. The lock then has to take its pointer again, or the
 * CPU writes into the backing store the content has left, and they are lost. (The same race
 * was found in vidmm_wddm2_lock2() by the Lock2 stress test; this is its WDDM1 twin.)
 *
 * Deterministic: the driver's paging callback holds the eviction's transfer until the test
 * lets it go; the lock waits for that transfer, the make-resident queues the page-in behind it,
 * then both run. */
#define _GNU_SOURCE
#include "t_engine.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ASIZE (64 * T_KiB)

/* A driver whose paging callback blocks the first TRANSFER after 'armed' until 'open'. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool armed, held, open;
};

static uint32_t gated_paging(void *arg, struct vidmm_paging_op *op)
{
    struct gate *g = arg;
    if (op->type == VIDMM_PAGING_TRANSFER) {
        pthread_mutex_lock(&g->mu);
        if (g->armed && !g->open) {
            g->held = true;
            pthread_cond_broadcast(&g->cv);
            while (!g->open)
                pthread_cond_wait(&g->cv, &g->mu);
        }
        pthread_mutex_unlock(&g->mu);
        if (op->dst_ptr && op->src_ptr && op->dst_ptr != op->src_ptr)
            memcpy(op->dst_ptr, op->src_ptr, op->size);
    } else if (op->type == VIDMM_PAGING_FILL && op->dst_ptr) {
        uint8_t *p = op->dst_ptr;
        for (uint64_t i = 0; i < op->size; i += 4)
            memcpy(p + i, &op->fill_pattern, 4);
    }
    return VIDMM_STATUS_SUCCESS;
}

struct call {
    vidmm_device *dev;
    vidmm_handle h;
    int rc;
    uint8_t *ptr;
};

static void *evict_main(void *arg)
{
    struct call *c = arg;
    c->rc = vidmm_evict(c->dev, &c->h, 1);
    return NULL;
}

static void *lock_main(void *arg)
{
    struct call *c = arg;
    struct vidmm_lock_args a = t_largs(c->h, 0);
    c->rc = vidmm_lock(c->dev, &a);
    c->ptr = a.data;
    return NULL;
}

static void *resident_main(void *arg)
{
    struct call *c = arg;
    c->rc = vidmm_make_resident(c->dev, &c->h, 1, NULL);
    return NULL;
}

static void pause_ms(unsigned ms)
{
    struct timespec ts = { 0, (long)ms * 1000000L };
    nanosleep(&ts, NULL);
}

Test(lock_race, pointer_after_a_page_in_during_the_wait, .timeout = 60)
{
    struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false };
    struct vidmm_driver drv;
    memset(&drv, 0, sizeof drv);
    drv.arg = &g;
    drv.paging = gated_paging;
    static struct vidmm_segment_desc segs[1];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc dd = t_ddesc(segs, 1);
    dd.driver = &drv;
    dd.paging_threads = 1;
    dd.wait_timeout_ns = 30ull * 1000000000u;
    vidmm_device *dev = t_dev(&dd);
    vidmm_handle h = t_alloc_simple(dev, ASIZE, T_SET(T_VIS));
    T_OK(vidmm_make_resident(dev, &h, 1, NULL));
    uint8_t *buf = malloc(ASIZE);
    cr_assert_not_null(buf);
    memset(buf, 0x11, ASIZE);
    t_write(dev, h, 0, buf, ASIZE);

    pthread_mutex_lock(&g.mu);
    g.armed = true;
    pthread_mutex_unlock(&g.mu);
    struct call ev = { dev, h, -1, NULL }, lk = { dev, h, -1, NULL }, mr = { dev, h, -1, NULL };
    pthread_t te, tl, tm;
    cr_assert_eq(pthread_create(&te, NULL, evict_main, &ev), 0);
    pthread_mutex_lock(&g.mu);
    while (!g.held)
        pthread_cond_wait(&g.cv, &g.mu); /* the eviction's transfer is held */
    pthread_mutex_unlock(&g.mu);
    cr_assert_eq(pthread_create(&tl, NULL, lock_main, &lk), 0);
    pause_ms(150); /* the lock took its pointer (the backing store) and waits for the transfer */
    cr_assert_eq(pthread_create(&tm, NULL, resident_main, &mr), 0);
    pause_ms(150); /* the make-resident queued the page-in behind it */
    pthread_mutex_lock(&g.mu);
    g.open = true;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(te, NULL);
    pthread_join(tl, NULL);
    pthread_join(tm, NULL);
    cr_assert_eq(ev.rc, 0, "vidmm_evict: %s", vidmm_strerror(ev.rc));
    cr_assert_eq(lk.rc, 0, "vidmm_lock: %s", vidmm_strerror(lk.rc));
    cr_assert_eq(mr.rc, 0, "vidmm_make_resident: %s", vidmm_strerror(mr.rc));

    cr_assert_eq(memcmp(lk.ptr, buf, ASIZE), 0, "the lock's pointer does not show the content");
    memset(lk.ptr, 0x5A, ASIZE);
    t_unlock(dev, h);
    uint8_t *got = malloc(ASIZE);
    cr_assert_not_null(got);
    t_read(dev, h, 0, got, ASIZE);
    size_t i = 0;
    while (i < ASIZE && got[i] == 0x5A)
        i++;
    cr_assert_eq(i, (size_t)ASIZE, "the write through the lock was lost: byte %zu is 0x%02x", i, i < ASIZE ? got[i] : 0);
    free(got);
    free(buf);
    vidmm_device_destroy(dev);
}
