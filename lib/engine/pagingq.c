/* SPDX-License-Identifier: MIT */
/* lib/engine/pagingq.c - WDDM2 paging queues (include/vidmm/wddm2.h "Paging queues", spec 12):
 * a priority for the paging of the make-residents and reclaims that name the queue, and a
 * paging fence per queue.
 *
 * The priority is a class on each queued operation (vm_pop.cls, set by vm_emit() from
 * vidmm_device.emit_cls while such a call pages); paging.c decides what runs first. A queue's
 * fence value is passed when every operation it waits for has run: it records, per class, the
 * newest queued operation among the last operations of the call's allocations (need[]), and
 * since each class runs in its own fence order, "class c has run up to need[c]" (cls_done) says
 * it - or paging_done, which says it for every class. Values pass in order: a value waits for
 * the values before it, as a monitored fence's do. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

struct vm_pq_value {
    uint64_t value;
    uint64_t need[VM_NCLS];     /* 0: nothing of that class */
};

struct vidmm_paging_queue {
    vidmm_device *dev;
    struct vidmm_paging_queue *next;
    uint32_t process;
    uint8_t cls;                /* VM_CLS_*: priority + 1 */
    uint64_t issued, done;      /* the fence: last value given, last value passed */
    struct vm_pq_value *pend;   /* values given and not passed, oldest first */
    size_t npend, cap;
};

static bool value_passed(const vidmm_device *dev, const struct vm_pq_value *v)
{
    for (unsigned c = 0; c < VM_NCLS; c++)
        if (v->need[c] > dev->paging_done && v->need[c] > dev->cls_done[c])
            return false;
    return true;
}

static void progress_one(vidmm_device *dev, struct vidmm_paging_queue *q)
{
    size_t k = 0;
    while (k < q->npend && value_passed(dev, &q->pend[k]))
        q->done = q->pend[k++].value;
    if (k) {
        memmove(q->pend, q->pend + k, sizeof *q->pend * (q->npend - k));
        q->npend -= k;
    }
}

void vm_pq_progress(vidmm_device *dev)
{
    for (struct vidmm_paging_queue *q = dev->w2.queues; q; q = q->next)
        if (q->npend)
            progress_one(dev, q);
}

void vm_pq_free_all(vidmm_device *dev)
{
    while (dev->w2.queues) {
        struct vidmm_paging_queue *q = dev->w2.queues;
        dev->w2.queues = q->next;
        free(q->pend);
        free(q);
    }
}

struct vidmm_paging_queue *vm_pq_lookup(vidmm_device *dev, const struct vidmm_paging_queue *q)
{
    for (struct vidmm_paging_queue *k = dev->w2.queues; k; k = k->next)
        if (k == q)
            return k;
    return NULL;
}

int vm_pq_check(const struct vidmm_paging_queue *q, struct vm_alloc *const *u, size_t n, const char *call)
{
    for (size_t i = 0; i < n; i++)
        if (u[i]->g->desc.process != q->process && !(u[i]->g->desc.kind & VIDMM_ALLOC_KIND_SHARED))
            return vidmm_refuse(call, "queue", "an allocation of another process than the paging queue's", "12");
    return 0;
}

uint8_t vm_pq_class(const struct vidmm_paging_queue *q)
{
    return q->cls;
}

int vm_pq_reserve(struct vidmm_paging_queue *q)
{
    if (q->npend < q->cap)
        return 0;
    size_t cap = q->cap ? q->cap * 2 : 8;
    struct vm_pq_value *p = realloc(q->pend, sizeof *p * cap);
    if (!p)
        return VIDMM_E_NO_MEMORY;
    q->pend = p;
    q->cap = cap;
    return 0;
}

uint64_t vm_pq_issue(vidmm_device *dev, struct vidmm_paging_queue *q, struct vm_alloc *const *u, size_t n,
                     bool *pending)
{
    struct vm_pq_value v;
    memset(&v, 0, sizeof v);
    v.value = ++q->issued;
    for (size_t i = 0; i < n; i++) {
        const uint64_t f = u[i]->paging_fence;
        if (f <= dev->paging_done)
            continue;
        const int c = vm_paging_class_of(dev, f);
        if (c >= 0 && f > v.need[c])
            v.need[c] = f;
    }
    if (q->npend == 0 && value_passed(dev, &v)) {
        q->done = v.value;
        *pending = false;
    } else {
        q->pend[q->npend++] = v; /* room made by vm_pq_reserve() */
        *pending = true;
    }
    return v.value;
}

uint32_t vm_pq_process(const struct vidmm_paging_queue *q)
{
    return q->process;
}

bool vm_pq_any(const vidmm_device *dev, uint32_t process)
{
    for (const struct vidmm_paging_queue *q = dev->w2.queues; q; q = q->next)
        if (q->process == process)
            return true;
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * The public calls.
 * ------------------------------------------------------------------------------------------- */
int vidmm_paging_queue_create(vidmm_device *dev, uint32_t process, int32_t priority, vidmm_paging_queue **out)
{
    VM_DEV_CHECK(dev);
    static const char call[] = "vidmm_paging_queue_create";
    if (!dev || !out)
        return vidmm_refuse(call, !dev ? "dev" : "out", "NULL", "wddm2.h");
    if (priority < VIDMM_PAGING_QUEUE_PRIORITY_BELOW_NORMAL || priority > VIDMM_PAGING_QUEUE_PRIORITY_ABOVE_NORMAL)
        return vidmm_refuse(call, "priority", "not a D3DDDI_PAGINGQUEUE_PRIORITY value (-1, 0, 1)", "12");
    struct vidmm_paging_queue *q = calloc(1, sizeof *q);
    if (!q)
        return VIDMM_E_NO_MEMORY;
    q->dev = dev;
    q->process = process;
    q->cls = (uint8_t)(priority + 1);
    int err = vm_w2_enter(dev, call);
    if (!err && vm_w2_proc_removed(dev, process))
        err = VIDMM_E_DEVICE_REMOVED; /* its device removed: destroy its objects first */
    if (!err) {
        q->next = dev->w2.queues;
        dev->w2.queues = q;
        *out = q;
    }
    pthread_mutex_unlock(&dev->mu);
    if (err)
        free(q);
    return err;
}

/* wait_value(): wait (mutex held) until 'q''s fence has passed 'value', or 'dl'. */
static int wait_value(vidmm_device *dev, struct vidmm_paging_queue *q, uint64_t value, const struct timespec *dl)
{
    while (q->done < value && !dev->removed && !vm_w2_proc_removed(dev, q->process)) {
        if (!dev->executing && !dev->q_len) {
            vm_pq_progress(dev); /* nothing left to run: every operation has */
            if (q->done < value)
                break;
            continue;
        }
        int err = vm_paging_run_some(dev, dl);
        if (err && q->done < value)
            return err;
    }
    if (dev->removed || vm_w2_proc_removed(dev, q->process))
        return VIDMM_E_DEVICE_REMOVED;
    return 0;
}

int vidmm_paging_queue_destroy(vidmm_paging_queue *q)
{
    if (!q)
        return 0;
    vidmm_device *dev = q->dev;
    pthread_mutex_lock(&dev->mu);
    if (!dev->removed && !vm_w2_proc_removed(dev, q->process)) {
        struct timespec dl;
        int err = wait_value(dev, q, q->issued, vm_deadline_for(dev, &dl) ? &dl : NULL);
        if (err == VIDMM_E_TIMEOUT) {
            pthread_mutex_unlock(&dev->mu);
            return err;
        }
    }
    for (struct vidmm_paging_queue **k = &dev->w2.queues; *k; k = &(*k)->next) {
        if (*k == q) {
            *k = q->next;
            break;
        }
    }
    vm_w2_object_gone(dev, q->process); /* its process's removal may end (wddm2.h Processes) */
    pthread_mutex_unlock(&dev->mu);
    free(q->pend);
    free(q);
    return 0;
}

uint64_t vidmm_paging_queue_completed(vidmm_paging_queue *q)
{
    if (!q)
        return 0;
    pthread_mutex_lock(&q->dev->mu);
    uint64_t v = q->done;
    pthread_mutex_unlock(&q->dev->mu);
    return v;
}

int vidmm_paging_queue_wait(vidmm_paging_queue *q, uint64_t fence, uint64_t timeout_ns)
{
    static const char call[] = "vidmm_paging_queue_wait";
    if (!q)
        return vidmm_refuse(call, "q", "NULL", "wddm2.h");
    vidmm_device *dev = q->dev;
    struct timespec dl;
    if (timeout_ns != UINT64_MAX)
        vm_deadline(timeout_ns, &dl);
    pthread_mutex_lock(&dev->mu);
    int err;
    if (fence > q->issued)
        err = vidmm_refuse(call, "fence", "never returned by this paging queue", "wddm2.h");
    else
        err = wait_value(dev, q, fence, timeout_ns == UINT64_MAX ? NULL : &dl);
    pthread_mutex_unlock(&dev->mu);
    return err;
}
