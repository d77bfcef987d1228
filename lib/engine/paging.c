/* SPDX-License-Identifier: MIT */
/* lib/engine/paging.c - the paging queue: operations run in the order emitted, on the paging
 * threads (or on a waiting caller's thread when there are none), through the driver's paging
 * callback or the built-in executor, with the retry protocol of spec 9.1 / 15.7, and are
 * recorded in the paging log (15.28).
 *
 * WDDM2 paging queues (include/vidmm/wddm2.h, pagingq.c) give operations a priority class.
 * While the queue holds one class only - always on a WDDM1 device - it runs in emission order.
 * With several, the first queued operation of the highest class present runs first when it
 * conflicts with no operation queued before it (conflicts(): the same allocation, overlapping
 * bytes or segment ranges, the same aperture's mapping, overlapping page-table entries; an
 * operation with no allocation, a SynchronousPaging one or one that waits for the GPU never
 * jumps); otherwise what blocks it goes first, by the same rule (pick()). So each class runs in
 * its own emission order, and an operation never passes one whose bytes it could see or change:
 * content is as safe as in FIFO order. paging_done stays "every operation up to here has run" (the oldest queued
 * operation's fence less one), which is what every wait in the engine relies on; cls_done
 * tells a paging queue's fence that a higher class's operations ran ahead. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

/* A driver asking for a fresh paging buffer this many times for one operation is broken. */
#define VM_MAX_RETRIES 65536u

static int run_one(vidmm_device *dev, const struct timespec *dl);

uint64_t vm_emit(vidmm_device *dev, const struct vm_pop *p)
{
    while (dev->q_len == dev->q_cap) {
        size_t cap = dev->q_cap * 2;
        struct vm_pop *q = malloc(sizeof *q * cap);
        if (q) {
            for (size_t i = 0; i < dev->q_len; i++)
                q[i] = dev->q[(dev->q_head + i) % dev->q_cap];
            free(dev->q);
            dev->q = q;
            dev->q_cap = cap;
            dev->q_head = 0;
            break;
        }
        /* No memory to grow the queue: let it drain instead. A paging operation is never
         * dropped. */
        if (dev->nthreads == 0 && !dev->executing)
            run_one(dev, NULL);
        else
            pthread_cond_wait(&dev->paging_cv, &dev->mu);
    }
    struct vm_pop *slot = &dev->q[(dev->q_head + dev->q_len) % dev->q_cap];
    *slot = *p;
    slot->op.fence = ++dev->paging_issued;
    slot->cls = dev->emit_cls;
    dev->q_n[slot->cls]++;
    if (p->sync) {
        dev->sync_paging_fence = slot->op.fence; /* later submissions wait for it (spec 15.25) */
        dev->sync_paging_handle = p->op.allocation;
    }
    dev->q_len++;
    if (p->op.type < 8) /* WDDM2 hook: UPDATE_PAGE_TABLE (11) has no counter in vidmm_stats */
        dev->st.paging_ops[p->op.type]++;
    pthread_cond_broadcast(&dev->paging_cv);
    return slot->op.fence;
}

static bool may_be_busy(uint32_t type)
{
    return type == VIDMM_PAGING_TRANSFER || type == VIDMM_PAGING_DISCARD_CONTENT ||
           type == VIDMM_PAGING_SPECIAL_LOCK_TRANSFER;
}

/* Paged bytes are cold: whoever uses them next (the GPU after a page-in, nobody soon after an
 * eviction) gains nothing from having them in the cache. Streaming stores from half the L2 up:
 * they ran 1.6x faster on 1 MiB transfers under memory pressure (10.5 -> 17 GB/s, bench
 * engine/submit_pressure); below, ordinary stores, as the cached copy policy says. */
#define VM_PAGING_NT_MIN (256u << 10)

static const struct vidmm_kernel_opts *paging_opts(uint64_t size)
{
    static const struct vidmm_kernel_opts nt = { sizeof nt, VIDMM_BACKEND_AUTO, VIDMM_STRATEGY_NONTEMPORAL, 0 };
    return size >= VM_PAGING_NT_MIN ? &nt : NULL;
}

/* The built-in executor: what the Microsoft sample drivers do (spec 15.10), with the kernels. */
static uint32_t builtin(struct vm_pop *p, bool idle)
{
    struct vidmm_paging_op *op = &p->op;
    if (may_be_busy(op->type) && !idle && !(op->flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE))
        return VIDMM_STATUS_ALLOCATION_BUSY; /* the "GPU" must finish with it first */
    switch (op->type) {
    case VIDMM_PAGING_TRANSFER:
    case VIDMM_PAGING_SPECIAL_LOCK_TRANSFER: {
        struct vm_group *g = p->a ? p->a->g : NULL;
        int err = 0;
        if (g && (op->flags & VIDMM_TRANSFER_SWIZZLE)) {
            /* Tiling writes the surface's elements only: the bytes between and after them (tile
             * padding, the rest of the allocation) would keep what the segment held before -
             * another allocation's bytes. They read as zero instead. */
            if (g->swz_padded)
                memset(op->dst_ptr, 0, (size_t)g->size);
            else if (g->tiled_size < g->size)
                memset((uint8_t *)op->dst_ptr + g->tiled_size, 0, (size_t)(g->size - g->tiled_size));
            err = vidmm_swizzle_surface(&g->layout, &g->surface, op->dst_ptr, (size_t)g->size, op->src_ptr,
                                        (size_t)g->linear_size);
        }
        else if (g && (op->flags & VIDMM_TRANSFER_UNSWIZZLE))
            err = vidmm_deswizzle_surface(&g->layout, &g->surface, op->src_ptr, (size_t)g->size, op->dst_ptr,
                                          (size_t)g->linear_size);
        else
            err = vidmm_copy_ex(op->dst_ptr, op->src_ptr, (size_t)op->size, VIDMM_MEM_CACHED, paging_opts(op->size));
        return err ? 0xC01E0106u /* STATUS_GRAPHICS_ALLOCATION_INVALID */ : VIDMM_STATUS_SUCCESS;
    }
    case VIDMM_PAGING_FILL:
        return vidmm_fill32_ex(op->dst_ptr, op->fill_pattern, (size_t)op->size, VIDMM_MEM_CACHED,
                               paging_opts(op->size))
                   ? 0xC01E0106u : VIDMM_STATUS_SUCCESS;
    default:
        return VIDMM_STATUS_SUCCESS; /* discard: nothing; map / unmap: done by the engine */
    }
}

#define VM_LOC_HOLE (offsetof(struct vidmm_location, segment_address) - sizeof(uint32_t))
_Static_assert(sizeof(struct vidmm_location) == sizeof(uint32_t) + VM_LOC_HOLE + sizeof(uint64_t),
               "vidmm_location: a hole other than after segment_id");
_Static_assert(sizeof(struct vidmm_paging_op) == 12 * sizeof(uint32_t) + 5 * sizeof(uint64_t) +
                                                     2 * VM_LOC_HOLE + 2 * sizeof(void *),
               "vidmm_paging_op: a hole other than its locations' (log_op() zeroes those)");

static void log_op(vidmm_device *dev, const struct vidmm_paging_op *op)
{
    if (!dev->log)
        return;
    if (dev->log_len == dev->log_cap) {
        dev->log_head = (dev->log_head + 1) % dev->log_cap;
        dev->log_len--;
        dev->st.paging_log_dropped++;
    }
    /* Its padding zeroed - the 4 bytes after each vidmm_location's segment_id, the record's
     * only holes (asserted below) - so that records compare and hash as bytes: a struct copy
     * need not carry padding, and clang's did not (its ASan build: the same operations, logs
     * whose bytes differed between two devices). */
    struct vidmm_paging_op *r = &dev->log[(dev->log_head + dev->log_len) % dev->log_cap];
    *r = *op;
    memset((char *)&r->src + sizeof(r->src.segment_id), 0, VM_LOC_HOLE);
    memset((char *)&r->dst + sizeof(r->dst.segment_id), 0, VM_LOC_HOLE);
    dev->log_len++;
}

/* wait_idle() waits until the GPU is done with 'a' (mutex held). With a deadline (a caller's
 * thread running the queue itself) it may give up: VIDMM_E_TIMEOUT. */
static int wait_fence(vidmm_device *dev, uint64_t f, const struct timespec *dl)
{
    if (dev->fence_done >= f || dev->removed)
        return 0;
    /* The queue now waits for the GPU: callers that asked not to wait stop waiting for it. */
    dev->paging_blocked++;
    dev->paging_blocked_on = f;
    pthread_cond_broadcast(&dev->paging_cv);
    int err = 0;
    while (dev->fence_done < f && !dev->removed) {
        if (vm_cond_wait(dev, &dev->fence_cv, dl) != 0 && dev->fence_done < f && !dev->removed) {
            err = VIDMM_E_TIMEOUT;
            break;
        }
    }
    dev->paging_blocked--;
    return err;
}

static int wait_idle(vidmm_device *dev, const struct vm_alloc *a, const struct timespec *dl)
{
    return wait_fence(dev, a->read_fence > a->write_fence ? a->read_fence : a->write_fence, dl);
}

/* The ring: 'i'-th queued operation from the oldest; take one out / put it back at 'i'. */
static struct vm_pop *q_at(vidmm_device *dev, size_t i)
{
    return &dev->q[(dev->q_head + i) % dev->q_cap];
}

static struct vm_pop q_take(vidmm_device *dev, size_t at)
{
    struct vm_pop p = *q_at(dev, at);
    for (size_t i = at; i > 0; i--) /* the older ones move up by one: order kept */
        *q_at(dev, i) = *q_at(dev, i - 1);
    dev->q_head = (dev->q_head + 1) % dev->q_cap;
    dev->q_len--;
    dev->q_n[p.cls]--;
    return p;
}

static void q_put(vidmm_device *dev, size_t at, const struct vm_pop *p)
{
    dev->q_head = (dev->q_head + dev->q_cap - 1) % dev->q_cap;
    dev->q_len++;
    for (size_t i = 0; i < at; i++)
        *q_at(dev, i) = *q_at(dev, i + 1);
    *q_at(dev, at) = *p;
    dev->q_n[p->cls]++;
}

/* What an operation touches, for conflicts(): up to two host byte ranges and two segment
 * ranges (the bytes of the whole allocation from each address: an over-estimate is safe). */
struct vm_touch {
    uintptr_t ptr[2];
    uint64_t seg_addr[2];
    uint32_t seg[2];
    uint64_t len;
};

static void touch_of(const struct vm_pop *p, struct vm_touch *t)
{
    const struct vidmm_paging_op *op = &p->op;
    uint64_t len = op->size;
    if (p->a) {
        if (p->a->g->size > len)
            len = p->a->g->size;
        if (p->a->g->linear_size > len)
            len = p->a->g->linear_size;
    }
    t->len = len ? len : 1;
    const bool reads = op->type == VIDMM_PAGING_TRANSFER || op->type == VIDMM_PAGING_SPECIAL_LOCK_TRANSFER;
    t->ptr[0] = reads ? (uintptr_t)op->src_ptr : 0;
    t->ptr[1] = (uintptr_t)op->dst_ptr;
    t->seg[0] = reads ? op->src.segment_id : 0;
    t->seg_addr[0] = op->src.segment_address;
    t->seg[1] = op->dst.segment_id;
    t->seg_addr[1] = op->dst.segment_address;
}

static bool overlap(uint64_t a, uint64_t b, uint64_t len)
{
    return a < b + len && b < a + len;
}

static bool is_mapping(uint32_t type)
{
    return type == VIDMM_PAGING_MAP_APERTURE_SEGMENT || type == VIDMM_PAGING_UNMAP_APERTURE_SEGMENT;
}

/* conflicts(): may 'x' not run before 'y', queued before it? (See the file comment.) */
static bool conflicts(const struct vm_pop *x, const struct vm_pop *y)
{
    if (!y->a || x->a == y->a || x->a->g == y->a->g)
        return true;
    const uint32_t tx = x->op.type, ty = y->op.type;
    if (tx == VIDMM_PAGING_UPDATE_PAGE_TABLE || ty == VIDMM_PAGING_UPDATE_PAGE_TABLE) {
        /* Entries of different allocations: only the same entries' order matters. */
        if (tx != ty || x->va_space != y->va_space)
            return false;
        const uint64_t px = x->op.offset_in_pages, py = y->op.offset_in_pages;
        const uint64_t nx = (x->op.size + VIDMM_PAGE_SIZE - 1) / VIDMM_PAGE_SIZE;
        const uint64_t ny = (y->op.size + VIDMM_PAGE_SIZE - 1) / VIDMM_PAGE_SIZE;
        return px < py + ny && py < px + nx;
    }
    struct vm_touch a, b;
    touch_of(x, &a);
    touch_of(y, &b);
    const uint64_t len = a.len > b.len ? a.len : b.len;
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 2; k++) {
            if (a.ptr[i] && b.ptr[k] && overlap(a.ptr[i], b.ptr[k], len))
                return true;
            if (!a.seg[i] || a.seg[i] != b.seg[k])
                continue;
            /* The same aperture's mapping, or overlapping ranges of one segment. */
            if (is_mapping(tx) || is_mapping(ty) || overlap(a.seg_addr[i], b.seg_addr[k], len))
                return true;
        }
    }
    return false;
}

/* first_of(): the oldest queued operation of class 'c' at or before index 'to'. */
static size_t first_of(vidmm_device *dev, uint8_t c, size_t to)
{
    size_t at = 0;
    while (at < to && q_at(dev, at)->cls != c)
        at++;
    return at;
}

/* pick(): which queued operation runs next (several classes queued; see the file comment). The
 * candidate is the oldest operation of the highest class; when an older operation blocks it,
 * the oldest of that one's class is the candidate instead (what the high class waits for runs
 * first), and so on: each step goes to an older operation, so it ends - at the latest at the
 * oldest one, which nothing blocks. */
static size_t pick(vidmm_device *dev)
{
    int c = (int)VM_NCLS - 1;
    while (!dev->q_n[c])
        c--;
    if (dev->q_n[c] == dev->q_len)
        return 0;
    size_t at = first_of(dev, (uint8_t)c, dev->q_len - 1);
    while (at) {
        const struct vm_pop *x = q_at(dev, at);
        if (!x->a || x->sync || x->gpu_fence)
            return 0;
        size_t i = 0;
        while (i < at && !conflicts(x, q_at(dev, i)))
            i++;
        if (i == at)
            return at;
        at = first_of(dev, q_at(dev, i)->cls, i);
    }
    return 0;
}

int vm_paging_class_of(const vidmm_device *dev, uint64_t fence)
{
    if (fence <= dev->paging_done)
        return -1;
    if (dev->executing && dev->exec_fence == fence)
        return dev->exec_cls;
    size_t lo = 0, hi = dev->q_len; /* the ring is in fence order */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const uint64_t f = dev->q[(dev->q_head + mid) % dev->q_cap].op.fence;
        if (f == fence)
            return dev->q[(dev->q_head + mid) % dev->q_cap].cls;
        if (f < fence)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* run_one() runs the next queued operation: the oldest, or what pick() says. Called with the
 * mutex held, the queue not empty and nobody executing; returns with the mutex held. 'dl'
 * (NULL: none) is the deadline of the caller whose thread runs it: an operation that would
 * wait for the GPU beyond it goes back to its place in the queue, untouched, and
 * VIDMM_E_TIMEOUT is returned. */
static int run_one(vidmm_device *dev, const struct timespec *dl)
{
    dev->executing = true;
    /* One class queued (every WDDM1 device, and WDDM2 without paging queues): the oldest. */
    const size_t at = dev->q_n[VM_CLS_NORMAL] == dev->q_len ? 0 : pick(dev);
    struct vm_pop p = q_take(dev, at);
    dev->exec_fence = p.op.fence;
    dev->exec_cls = p.cls;
    const struct vidmm_paging_op pristine = p.op;
    uint32_t status = VIDMM_STATUS_SUCCESS;
    unsigned tries = 0;
    bool ran = false; /* after a removal the queue drains without running anything */
    while (!dev->removed) {
        ran = true;
        bool idle = !p.a || !vm_busy(dev, p.a, false);
        if (p.gpu_fence > dev->fence_done && tries == 0 &&
            wait_fence(dev, p.gpu_fence, dl) != 0) {
            /* An unmap whose pages the GPU may still use: not run, back where it was. */
            q_put(dev, at, &p);
            dev->executing = false;
            pthread_cond_broadcast(&dev->paging_cv);
            return VIDMM_E_TIMEOUT;
        }
        if (dl && !idle && may_be_busy(p.op.type) && !(p.op.flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE) &&
            tries == 0 && wait_idle(dev, p.a, dl) != 0) {
            /* Not run at all: back where it was in the queue for whoever runs it next. */
            q_put(dev, at, &p);
            dev->executing = false;
            pthread_cond_broadcast(&dev->paging_cv);
            return VIDMM_E_TIMEOUT;
        }
        idle = !p.a || !vm_busy(dev, p.a, false);
        if (p.sync && may_be_busy(p.op.type) && !(p.op.flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE)) {
            /* SynchronousPaging: nothing is issued for it before it is idle (spec 15.25). */
            if (!idle)
                wait_idle(dev, p.a, NULL);
            if (dev->removed)
                break;
            p.op.flags |= VIDMM_TRANSFER_ALLOCATION_IS_IDLE;
            idle = true;
        }
        /* The engine maps and unmaps aperture pages itself (the hardware); a driver callback
         * then programs its own tables. */
        int merr = 0;
        if (p.op.type == VIDMM_PAGING_MAP_APERTURE_SEGMENT && tries == 0)
            merr = vmos_aperture_map(&p.seg->ap, (size_t)(p.op.offset_in_pages * VIDMM_PAGE_SIZE), &dev->arena,
                                     (size_t)p.arena_off, (size_t)p.op.size);
        else if (p.op.type == VIDMM_PAGING_UNMAP_APERTURE_SEGMENT && tries == 0)
            merr = vmos_aperture_unmap(&p.seg->ap, (size_t)(p.op.offset_in_pages * VIDMM_PAGE_SIZE),
                                       (size_t)p.op.size);
        else if (p.op.type == VIDMM_PAGING_UPDATE_PAGE_TABLE && tries == 0)
            vm_va_apply(&p); /* WDDM2 hook: the engine writes the entries (the MMU's part, gpuva.c) */
        pthread_mutex_unlock(&dev->mu);
        const uint64_t t0 = p.op.type == VIDMM_PAGING_TRANSFER && p.op.size >= VM_MOVE_TIMED_MIN ? vm_now_ns() : 0;
        if (merr)
            status = 0xC0000017u; /* STATUS_NO_MEMORY: fatal below */
        else if (dev->has_paging_cb)
            status = dev->drv.paging(dev->drv.arg, &p.op);
        else
            status = builtin(&p, idle);
        const uint64_t t1 = t0 ? vm_now_ns() : 0;
        pthread_mutex_lock(&dev->mu);
        if (t0 && status == VIDMM_STATUS_SUCCESS && !(p.op.flags & (VIDMM_TRANSFER_SWIZZLE | VIDMM_TRANSFER_UNSWIZZLE)))
            vm_note_move(dev, 0, t1 - t0, p.op.size); /* what a copy-back costs (lock.c) */
        if (status == VIDMM_STATUS_SUCCESS)
            break;
        if (++tries >= VM_MAX_RETRIES)
            break;
        uint32_t mp = p.op.multipass_offset;
        uint32_t flags = p.op.flags;
        p.op = pristine; /* "the same arguments" again, but the driver's progress */
        p.op.multipass_offset = mp;
        p.op.flags = pristine.flags | (flags & VIDMM_TRANSFER_ALLOCATION_IS_IDLE);
        if (status == VIDMM_STATUS_INSUFFICIENT_DMA_BUFFER)
            continue; /* a fresh paging buffer, same operation (spec 9.1) */
        if (status == VIDMM_STATUS_ALLOCATION_BUSY && may_be_busy(p.op.type) && p.a) {
            wait_idle(dev, p.a, NULL);
            p.op.flags |= VIDMM_TRANSFER_ALLOCATION_IS_IDLE;
            continue;
        }
        break; /* anything else is fatal */
    }
    if (status != VIDMM_STATUS_SUCCESS && !dev->removed) {
        vidmm_log(VIDMM_LOG_ERROR, "paging operation %u of allocation 0x%x failed with 0x%08x: device removed",
                  p.op.type, p.op.allocation, status);
        dev->removed = true;
        dev->fatal_fence = p.op.fence;
        pthread_cond_broadcast(&dev->fence_cv);
    }
    if (ran && status == VIDMM_STATUS_SUCCESS)
        log_op(dev, &p.op);
    dev->cls_done[p.cls] = p.op.fence;
    /* Everything before the oldest queued operation has run (the ring is in fence order). */
    dev->paging_done = dev->q_len ? dev->q[dev->q_head].op.fence - 1 : dev->paging_issued;
    dev->executing = false;
    if (dev->w2.queues)
        vm_pq_progress(dev); /* WDDM2 hook: paging queues' fences (pagingq.c) */
    pthread_cond_broadcast(&dev->paging_cv);
    return 0;
}

static void *paging_thread(void *arg)
{
    vidmm_device *dev = arg;
    pthread_mutex_lock(&dev->mu);
    for (;;) {
        if (dev->q_len && !dev->executing) {
            run_one(dev, NULL);
            continue;
        }
        if (dev->stopping)
            break;
        pthread_cond_wait(&dev->paging_cv, &dev->mu);
    }
    pthread_mutex_unlock(&dev->mu);
    return NULL;
}

int vm_paging_start(vidmm_device *dev, uint32_t threads)
{
    dev->q_cap = 64;
    dev->emit_cls = VM_CLS_NORMAL;
    dev->q = malloc(sizeof *dev->q * dev->q_cap);
    if (!dev->q)
        return VIDMM_E_NO_MEMORY;
    for (uint32_t i = 0; i < threads; i++) {
        if (pthread_create(&dev->threads[i], NULL, paging_thread, dev) != 0) {
            vm_paging_stop(dev);
            return VIDMM_E_NO_MEMORY;
        }
        dev->nthreads = i + 1;
    }
    return 0;
}

void vm_paging_stop(vidmm_device *dev)
{
    pthread_mutex_lock(&dev->mu);
    dev->stopping = true;
    pthread_cond_broadcast(&dev->paging_cv);
    pthread_mutex_unlock(&dev->mu);
    for (uint32_t i = 0; i < dev->nthreads; i++)
        pthread_join(dev->threads[i], NULL);
    dev->nthreads = 0;
}

/* vm_wait_paging_until(): wait (mutex held) until paging has passed 'fence', running the queue
 * on this thread when there are no paging threads; VIDMM_E_TIMEOUT at deadline 'dl' (NULL:
 * none) - the operations stay queued. */
int vm_paging_run_some(vidmm_device *dev, const struct timespec *dl)
{
    /* The deadline bounds waiting for the GPU, not for the CPU's copying: a paging thread
     * that runs is waited for as long as it takes (it wakes this thread when it starts
     * waiting for a fence: wait_fence()). Once the fence it waits for has passed, the wait is
     * for the paging thread to get a CPU again - on a loaded machine that may take longer
     * than the deadline, and it is not the GPU: no deadline then. */
    if (dev->nthreads == 0 && !dev->executing && dev->q_len)
        return run_one(dev, dl);
    const bool gpu = dev->paging_blocked && dev->fence_done < dev->paging_blocked_on;
    int err = vm_cond_wait(dev, &dev->paging_cv, gpu ? dl : NULL);
    if (err == VIDMM_E_TIMEOUT && dev->paging_blocked && dev->fence_done >= dev->paging_blocked_on)
        err = 0; /* the fence passed meanwhile: the next wait has no deadline */
    return err;
}

int vm_wait_paging_until(vidmm_device *dev, uint64_t fence, const struct timespec *dl)
{
    while (dev->paging_done < fence) {
        int err = vm_paging_run_some(dev, dl);
        if (err && dev->paging_done < fence)
            return err;
    }
    if (dev->fatal_fence && fence >= dev->fatal_fence)
        return VIDMM_E_ALLOCATION_INVALID;
    return 0;
}

/* vm_wait_paging_nowait(): the same for a caller that asked not to wait for the GPU (DONOT_WAIT):
 * paging that runs without the GPU is waited for; VIDMM_E_BUSY as soon as the queue must wait
 * for a submission fence - an operation queued earlier for a busy allocation, by this thread
 * or another. Its own operations stay queued. */
int vm_wait_paging_nowait(vidmm_device *dev, uint64_t fence)
{
    struct timespec now;
    vm_deadline(0, &now);
    while (dev->paging_done < fence) {
        if (dev->paging_blocked)
            return VIDMM_E_BUSY;
        if (dev->nthreads == 0 && !dev->executing && dev->q_len) {
            if (run_one(dev, &now) != 0 && dev->paging_done < fence)
                return VIDMM_E_BUSY;
        } else {
            pthread_cond_wait(&dev->paging_cv, &dev->mu);
        }
    }
    if (dev->fatal_fence && fence >= dev->fatal_fence)
        return VIDMM_E_ALLOCATION_INVALID;
    return 0;
}

/* vm_wait_paging_locked(): the same with the device's wait timeout from now. */
int vm_wait_paging_locked(vidmm_device *dev, uint64_t fence)
{
    if (dev->paging_done >= fence)
        return dev->fatal_fence && fence >= dev->fatal_fence ? VIDMM_E_ALLOCATION_INVALID : 0;
    struct timespec dl;
    return vm_wait_paging_until(dev, fence, vm_deadline_for(dev, &dl) ? &dl : NULL);
}

int vm_wait_paging(vidmm_device *dev, uint64_t fence)
{
    pthread_mutex_lock(&dev->mu);
    int err = vm_wait_paging_locked(dev, fence);
    pthread_mutex_unlock(&dev->mu);
    return err;
}
