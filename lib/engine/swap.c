/* SPDX-License-Identifier: MIT */
/* lib/engine/swap.c - the disk tier: backing stores beyond the system-memory budget are written
 * to the swap file (lib/engine/io/io.h) and their memory released; a lock, submission or
 * make-resident reads them back, with a paging fence to wait on or poll.
 *
 * States of an allocation (vm_alloc.swap): NONE - no disk copy; WRITING - a write-out runs, the
 * content is still in memory and fully usable; ON_DISK - the content is only in the swap file
 * (where == DISK); READING - it comes back. A write-out completes into ON_DISK only if nothing
 * used the content meanwhile (the content generation is unchanged, no lock, no call holds it);
 * otherwise the disk copy is dropped and the memory kept: a write-out never loses or hides a
 * change. A failed write-out keeps the memory and backs off; a failed read-back (I/O error or
 * checksum mismatch) is reported as VIDMM_E_IO and the content marked lost - never returned
 * corrupt.
 *
 * The I/O layer's callbacks take the device mutex; requests are therefore submitted only after
 * the mutex is released (vm_unlock_and_page()). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine/engine.h"

#define VM_SWAP_BACKOFF_NS 100000000ull /* after a failed write-out, 100 ms before the next */
/* Released memory kept faulted in for read-backs. A shmem page costs 2-4 us to fault in and
 * clear and about as much to punch out (perf: shmem_add_to_page_cache, clear_page_erms,
 * filemap_remove_folio) - 3-4 ms per 4 MiB, three times the disk's read of it here. Up to this
 * much written-out memory is therefore kept, not released, and reused as the target of the
 * next read-back (it is overwritten whole). */
#define VM_WARM_MAX (32ull << 20)

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static size_t crc_count(uint64_t len)
{
    return (size_t)((len + VMIO_BLOCK - 1) / VMIO_BLOCK);
}

int vm_swap_open(vidmm_device *dev, const struct vidmm_device_desc *d)
{
    dev->budget = d->sysmem_budget;
    dev->st.sysmem_budget = d->sysmem_budget;
    if (!d->swap_path)
        return 0;
    /* The warm set starts empty: all of the arena's range taken, ranges given in as they come. */
    if (vmr_init(&dev->warm, dev->arena_space.size) != 0 || vmr_take(&dev->warm, 0, dev->arena_space.size) != 0)
        return VIDMM_E_NO_MEMORY;
    uint64_t max = d->swap_max;
    if (!max)
        for (uint32_t i = 0; i < d->segment_count; i++)
            max += 4 * d->segments[i].size;
    struct vmio_config c;
    memset(&c, 0, sizeof c);
    c.path = d->swap_path;
    c.max_size = max;
    c.queue_depth = d->io_queue_depth;
    c.rings = d->paging_threads ? d->paging_threads : 1; /* one ring per paging thread */
    c.backend = (int)d->io_backend;
    int err = vmio_open(&c, &dev->io);
    if (err)
        return err;
    struct vmio_stats s;
    vmio_get_stats(dev->io, &s);
    dev->st.io_backend = (uint32_t)vmio_backend(dev->io);
    dev->st.io_direct = vmio_direct(dev->io);
    dev->st.swap_size = s.space_size;
    return 0;
}

void vm_swap_close(vidmm_device *dev)
{
    /* Queued I/O is cancelled and every callback runs before this returns: afterwards no
     * allocation is WRITING or READING. Called without the mutex (the callbacks take it). */
    vmio_close(dev->io);
    dev->io = NULL;
    vmr_destroy(&dev->warm);
    free(dev->io_out);
    dev->io_out = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Paging fences of disk reads: they complete in any order; the completed value is the highest
 * fence below every outstanding one.
 * ------------------------------------------------------------------------------------------- */
static int fence_add(vidmm_device *dev, uint64_t f)
{
    if (dev->n_io_out == dev->cap_io_out) {
        size_t cap = dev->cap_io_out ? dev->cap_io_out * 2 : 64;
        uint64_t *p = realloc(dev->io_out, sizeof *p * cap);
        if (!p)
            return VIDMM_E_NO_MEMORY;
        dev->io_out = p;
        dev->cap_io_out = cap;
    }
    dev->io_out[dev->n_io_out++] = f; /* issued in increasing order: the array stays sorted */
    return 0;
}

static void fence_done(vidmm_device *dev, uint64_t f)
{
    for (size_t i = 0; i < dev->n_io_out; i++) {
        if (dev->io_out[i] == f) {
            memmove(&dev->io_out[i], &dev->io_out[i + 1], sizeof *dev->io_out * (dev->n_io_out - i - 1));
            dev->n_io_out--;
            return;
        }
    }
}

static uint64_t fence_completed(const vidmm_device *dev)
{
    return dev->n_io_out ? dev->io_out[0] - 1 : dev->io_fence_issued;
}

/* ---------------------------------------------------------------------------------------------
 * Completions (on the I/O layer's threads).
 * ------------------------------------------------------------------------------------------- */
static void drop_disk_copy(vidmm_device *dev, struct vm_alloc *a)
{
    vmio_space_free(dev->io, a->swap_off, a->g->size);
    free(a->swap_crc);
    a->swap_crc = NULL;
    a->swap = VM_SWAP_NONE;
}

/* The same in two steps, so that the slow part - punching the extent out of the swap file
 * (a millisecond on ext4) - runs after the mutex is released and the waiters are woken. */
struct disk_copy {
    uint64_t off, len;
    uint32_t *crc;
};

static struct disk_copy detach_disk_copy(struct vm_alloc *a)
{
    struct disk_copy c = { a->swap_off, a->g->size, a->swap_crc };
    a->swap_crc = NULL;
    a->swap = VM_SWAP_NONE;
    return c;
}

static void free_disk_copy(vidmm_device *dev, struct disk_copy c)
{
    vmio_space_free(dev->io, c.off, c.len);
    free(c.crc);
}

static void write_done(void *arg, struct vmio_req *req, int err)
{
    struct vm_alloc *a = arg;
    vidmm_device *dev = a->dev;
    pthread_mutex_lock(&dev->mu);
    dev->writing -= req->len;
    if (!err && a->where == VIDMM_WHERE_SYSMEM && a->gen == a->gen_at_write && !a->lock_count && !a->hold &&
        !a->dying && !a->altva && a->paging_fence <= dev->paging_done) {
        /* The disk copy is the content now; the memory leaves the allocation. */
        const uint64_t off = a->backing_off, len = a->g->size;
        dev->sysmem_used -= len;
        a->has_backing = false;
        a->backing_valid = false;
        a->backing = NULL;
        vm_set_where(dev, a, VIDMM_WHERE_DISK);
        dev->st.swap_writes++;
        dev->st.swap_bytes_written += req->len;
        if (dev->warm_bytes + len <= VM_WARM_MAX && vmr_give(&dev->warm, off, len) == 0) {
            dev->warm_bytes += len; /* kept for the next read-back */
            a->swap = VM_SWAP_ON_DISK;
            pthread_cond_broadcast(&dev->io_cv);
            pthread_mutex_unlock(&dev->mu);
            return;
        }
        /* Back to the system, outside the mutex (a punch costs about a millisecond); meanwhile
         * the allocation is RELEASING, which every user waits for. */
        a->swap = VM_SWAP_RELEASING;
        pthread_mutex_unlock(&dev->mu);
        vmos_arena_release(&dev->arena, (size_t)off, (size_t)len);
        pthread_mutex_lock(&dev->mu);
        vmr_give(&dev->arena_space, off, len);
        a->swap = VM_SWAP_ON_DISK;
        pthread_cond_broadcast(&dev->io_cv);
        pthread_mutex_unlock(&dev->mu);
        return;
    }
    if (err) {
        /* Nothing lost: the content is still in memory. Try others later. */
        dev->st.swap_write_failures++;
        dev->backoff_until = now_ns() + VM_SWAP_BACKOFF_NS;
    }
    /* Failed, or used meanwhile: the memory copy is the content; the disk copy goes. */
    struct disk_copy c = detach_disk_copy(a);
    pthread_cond_broadcast(&dev->io_cv);
    pthread_mutex_unlock(&dev->mu);
    free_disk_copy(dev, c);
}

/* undo_read() takes back a read that never read the data (mutex held): the disk copy stays
 * the content, the memory meant for it goes back (to the warm set while there is room), and
 * whoever waits hears 'err'. */
static void undo_read(vidmm_device *dev, struct vm_alloc *a, int err)
{
    const uint64_t off = a->backing_off, len = a->g->size;
    if (dev->warm_bytes + len <= VM_WARM_MAX && vmr_give(&dev->warm, off, len) == 0) {
        dev->warm_bytes += len;
    } else {
        vmos_arena_release(&dev->arena, (size_t)off, (size_t)len);
        vmr_give(&dev->arena_space, off, len);
    }
    dev->sysmem_used -= len;
    a->has_backing = false;
    a->backing = NULL;
    a->swap = VM_SWAP_ON_DISK;
    a->io_err = err;
    fence_done(dev, a->io_fence);
    pthread_cond_broadcast(&dev->io_cv);
}

static void read_done(void *arg, struct vmio_req *req, int err)
{
    struct vm_alloc *a = arg;
    vidmm_device *dev = a->dev;
    pthread_mutex_lock(&dev->mu);
    if (err && err != VIDMM_E_IO) {
        /* Not the data (the layer could not stage the read: out of memory): the disk copy is
         * intact and stays; the caller hears the error and may try again. */
        undo_read(dev, a, err);
        pthread_mutex_unlock(&dev->mu);
        return;
    }
    if (err) {
        /* Never return it corrupt: the content is lost, and says so; it starts again as its
         * fill pattern so the allocation stays usable. */
        dev->st.swap_read_failures++;
        a->content_lost = true;
        a->io_err = VIDMM_E_IO;
        if (a->g->desc.fill_pattern)
            vidmm_fill32(a->backing, a->g->desc.fill_pattern, (size_t)a->g->size, VIDMM_MEM_CACHED);
        else
            memset(a->backing, 0, (size_t)a->g->size);
    } else {
        dev->st.swap_reads++;
        dev->st.swap_bytes_read += req->len;
    }
    struct disk_copy c = detach_disk_copy(a);
    a->backing_valid = true;
    vm_set_where(dev, a, VIDMM_WHERE_SYSMEM);
    fence_done(dev, a->io_fence);
    pthread_cond_broadcast(&dev->io_cv);
    pthread_mutex_unlock(&dev->mu);
    free_disk_copy(dev, c); /* after the waiters are woken */
}

/* ---------------------------------------------------------------------------------------------
 * Starting I/O (mutex held): requests are collected in dev->pending and submitted by
 * vm_unlock_and_page() once the mutex is released.
 * ------------------------------------------------------------------------------------------- */
static void pend(vidmm_device *dev, struct vm_alloc *a)
{
    dev->pending[dev->npending++] = &a->req;
}

static bool write_candidate(const vidmm_device *dev, const struct vm_alloc *a)
{
    return a->swap == VM_SWAP_NONE && a->where == VIDMM_WHERE_SYSMEM && a->has_backing && a->backing_valid &&
           !a->g->desc.existing_memory && !a->lock_count && !a->hold && !a->pinned && !a->altva && !a->dying &&
           a->paging_fence <= dev->paging_done && !vm_busy(dev, a, false) &&
           !vm_offer_discardable(dev, a); /* offer hook: offered content is dropped, never written out */
}

static bool start_write(vidmm_device *dev, struct vm_alloc *a)
{
    uint64_t off;
    if (vmio_space_alloc(dev->io, a->g->size, &off) != 0)
        return false; /* the swap file is full */
    uint32_t *crc = malloc(sizeof *crc * crc_count(a->g->size));
    if (!crc) {
        vmio_space_free(dev->io, off, a->g->size);
        return false;
    }
    a->swap = VM_SWAP_WRITING;
    a->swap_off = off;
    a->swap_crc = crc;
    a->gen_at_write = a->gen;
    memset(&a->req, 0, sizeof a->req);
    a->req.op = VMIO_WRITE;
    a->req.buf = a->backing;
    a->req.len = a->g->size;
    a->req.off = off;
    a->req.crc = crc;
    a->req.done = write_done;
    a->req.arg = a;
    dev->writing += a->g->size;
    pend(dev, a);
    return true;
}

/* The coldest backing stores go out until memory is within budget: lowest priority first,
 * least recently there first (dev->sysmem's lists). */
void vm_budget(vidmm_device *dev)
{
    if (!dev->budget || dev->removed || dev->sysmem_used <= dev->budget + dev->writing)
        return; /* budget 0: no limit */
    /* Stale copies of resident allocations go first: no I/O, nothing to read back. */
    vm_release_stale_backing(dev);
    vm_offer_trim_sysmem(dev); /* offer hook: offered content in system memory goes next, no I/O (offer.c) */
    if (!dev->io || dev->sysmem_used <= dev->budget + dev->writing)
        return;
    if (dev->backoff_until && now_ns() < dev->backoff_until)
        return;
    dev->backoff_until = 0;
    for (uint32_t bi = 0; bi < dev->sysmem.nbuckets; bi++) {
        for (struct vm_alloc *a = dev->sysmem.buckets[bi].head; a; a = a->res_next) {
            if (dev->sysmem_used <= dev->budget + dev->writing || dev->npending == VM_SWAP_BATCH)
                return;
            if (!write_candidate(dev, a))
                continue;
            if (!start_write(dev, a)) {
                dev->backoff_until = now_ns() + VM_SWAP_BACKOFF_NS;
                return;
            }
        }
    }
}

/* Memory for a read-back: a warm range if one fits (already faulted in), else a fresh one.
 * Returns true when the pages are cold (worth populating while the disk reads). */
static int read_target(vidmm_device *dev, struct vm_alloc *a, bool *cold)
{
    uint64_t off;
    const uint64_t len = a->g->size;
    *cold = false;
    if (dev->warm_bytes >= len && vmr_find(&dev->warm, 0, dev->warm.size, len, VIDMM_PAGE_SIZE, false, &off) &&
        vmr_take(&dev->warm, off, len) == 0) {
        dev->warm_bytes -= len;
        a->has_backing = true;
        a->backing_off = off;
        a->backing = dev->arena.base + off;
        dev->sysmem_used += len;
        return 0;
    }
    *cold = true;
    return vm_backing_ensure(dev, a); /* counts the memory in */
}

/* Start reading 'a' back (it is ON_DISK). */
static int start_read(vidmm_device *dev, struct vm_alloc *a, bool *cold)
{
    int err = fence_add(dev, dev->io_fence_issued + 1);
    if (err)
        return err;
    if ((err = read_target(dev, a, cold)) != 0) {
        dev->n_io_out--; /* the fence just added */
        return err;
    }
    a->io_fence = ++dev->io_fence_issued;
    a->swap = VM_SWAP_READING;
    memset(&a->req, 0, sizeof a->req);
    a->req.op = VMIO_READ;
    a->req.buf = a->backing;
    a->req.len = a->g->size;
    a->req.off = a->swap_off;
    a->req.crc = a->swap_crc;
    a->req.done = read_done;
    a->req.arg = a;
    pend(dev, a);
    return 0;
}

/* Submit what was collected; the mutex is released first. */
static void submit_pending(vidmm_device *dev)
{
    struct vmio_req *reqs[VM_SWAP_BATCH + 1];
    unsigned n = dev->npending;
    memcpy(reqs, dev->pending, sizeof *reqs * n);
    dev->npending = 0;
    pthread_mutex_unlock(&dev->mu);
    int err = n ? vmio_submit(dev->io, reqs, n) : 0;
    if (err) {
        /* Refused (cannot happen with well-formed requests): undone, nothing lost - a write-out
         * keeps its memory (write_done with an error), a read-back its disk copy. */
        for (unsigned i = 0; i < n; i++) {
            if (reqs[i]->op == VMIO_WRITE) {
                reqs[i]->done(reqs[i]->arg, reqs[i], err);
            } else {
                struct vm_alloc *a = reqs[i]->arg;
                pthread_mutex_lock(&dev->mu);
                undo_read(dev, a, err);
                pthread_mutex_unlock(&dev->mu);
            }
        }
    }
}

void vm_unlock_and_page(vidmm_device *dev)
{
    vm_budget(dev);
    if (dev->npending)
        submit_pending(dev);
    else
        pthread_mutex_unlock(&dev->mu);
}

/* vm_swap_in() brings back from disk every allocation of 'as' that is there, and waits for
 * the write-outs in flight of the others (their backing store is being read by the I/O layer:
 * nothing may write it meanwhile). Mutex held on entry and exit; released while waiting. With
 * 'wait' false the reads are only started, and VIDMM_E_BUSY says one runs. '*fence' (may be
 * NULL) receives the highest paging fence of the reads. The allocations stay valid across the
 * wait: the call holds them. */
int vm_swap_in(vidmm_device *dev, struct vm_alloc *const *as, uint32_t n, bool wait, uint64_t *fence)
{
    if (!dev->io)
        return 0;
    uint64_t f = 0;
    bool reading = false, writing = false;
    struct vm_alloc *started[VM_SWAP_BATCH];
    uint32_t nstarted = 0;
    int err = 0;
    for (uint32_t i = 0; i < n && !err; i++) {
        struct vm_alloc *a = as[i];
        bool cold = false;
        if (a->swap == VM_SWAP_ON_DISK && dev->npending < VM_SWAP_BATCH && (err = start_read(dev, a, &cold)) == 0 &&
            cold)
            started[nstarted++] = a;
        if (a->swap == VM_SWAP_READING) {
            reading = true;
            if (a->io_fence > f)
                f = a->io_fence;
        }
        writing |= a->swap == VM_SWAP_WRITING || a->swap == VM_SWAP_RELEASING;
    }
    if (fence)
        *fence = f ? f : fence_completed(dev);
    if (err || (!reading && !writing))
        return err;
    for (uint32_t i = 0; i < n; i++)
        as[i]->hold++;
    if (dev->npending) {
        submit_pending(dev);
        /* While the disk reads, fault the released pages back in with one call each, so the
         * copy out of the staging buffer does not take a page fault per 4 KiB (held: valid). */
        for (uint32_t i = 0; i < nstarted; i++)
            vmos_arena_populate(&dev->arena, (size_t)started[i]->backing_off, (size_t)started[i]->g->size);
        pthread_mutex_lock(&dev->mu);
    }
    for (uint32_t i = 0; i < n; i++)
        while (as[i]->swap == VM_SWAP_WRITING || as[i]->swap == VM_SWAP_RELEASING ||
               (wait && as[i]->swap == VM_SWAP_READING))
            pthread_cond_wait(&dev->io_cv, &dev->mu);
    for (uint32_t i = 0; i < n; i++) {
        struct vm_alloc *a = as[i];
        a->hold--;
        if (a->io_err) {
            err = a->io_err; /* reported once, by a call that waited for it */
            if (wait)
                a->io_err = 0;
        }
    }
    if (dev->hold_waiters)
        pthread_cond_broadcast(&dev->paging_cv);
    if (!wait && !err)
        for (uint32_t i = 0; i < n && !err; i++)
            if (as[i]->swap == VM_SWAP_READING)
                err = VIDMM_E_BUSY;
    return err;
}

/* An allocation about to be freed: its I/O must be over (waits, mutex held), its disk copy
 * goes. */
void vm_swap_forget(vidmm_device *dev, struct vm_alloc *a)
{
    a->dying = true;
    while (a->swap == VM_SWAP_WRITING || a->swap == VM_SWAP_RELEASING || a->swap == VM_SWAP_READING)
        pthread_cond_wait(&dev->io_cv, &dev->mu);
    if (a->swap == VM_SWAP_ON_DISK)
        drop_disk_copy(dev, a); /* where stays DISK; it has no memory since it went out */
}

/* ---------------------------------------------------------------------------------------------
 * Public calls.
 * ------------------------------------------------------------------------------------------- */
int vidmm_make_resident_async(vidmm_device *dev, const vidmm_handle *handles, uint32_t count,
                              uint64_t *paging_fence)
{
    VM_DEV_CHECK(dev);
    if (!dev || !handles || count == 0 || count > 65536 || !paging_fence)
        return vidmm_refuse(__func__, !dev ? "dev" : !handles ? "handles" : !paging_fence ? "paging_fence" : "count",
                            "NULL, or count not in 1..65536", "device.h");
    pthread_mutex_lock(&dev->mu);
    int err = vm_check_handles(dev, handles, count);
    uint64_t f = fence_completed(dev);
    for (uint32_t i = 0; !err && i < count; i += VM_SWAP_BATCH) {
        struct vm_alloc *as[VM_SWAP_BATCH];
        uint32_t n = count - i < VM_SWAP_BATCH ? count - i : VM_SWAP_BATCH;
        for (uint32_t k = 0; k < n; k++)
            as[k] = vm_lookup(dev, handles[i + k]);
        /* Twice: an allocation whose write-out was still releasing its memory is waited for
         * by the first pass, and its read started by the second. */
        for (int pass = 0; pass < 2 && !err; pass++) {
            uint64_t fi = 0;
            int e = vm_swap_in(dev, as, n, false, &fi);
            if (e && e != VIDMM_E_BUSY)
                err = e;
            if (fi > f)
                f = fi;
        }
    }
    if (!err)
        *paging_fence = f;
    vm_unlock_and_page(dev);
    return err;
}

uint64_t vidmm_paging_fence_completed(vidmm_device *dev)
{
    if (vm_dev_check(dev, __func__))
        return 0;
    if (!dev)
        return 0;
    pthread_mutex_lock(&dev->mu);
    uint64_t f = fence_completed(dev);
    pthread_mutex_unlock(&dev->mu);
    return f;
}

int vidmm_paging_fence_wait(vidmm_device *dev, uint64_t fence, uint64_t timeout_ns)
{
    VM_DEV_CHECK(dev);
    if (!dev)
        return vidmm_refuse(__func__, "dev", "NULL", "device.h");
    struct timespec dl;
    vm_deadline(timeout_ns, &dl);
    pthread_mutex_lock(&dev->mu);
    int err = fence > dev->io_fence_issued ? vidmm_refuse(__func__, "fence", "never issued", "device.h") : 0;
    while (!err && fence_completed(dev) < fence) {
        if (timeout_ns == UINT64_MAX)
            pthread_cond_wait(&dev->io_cv, &dev->mu);
        else if (pthread_cond_timedwait(&dev->io_cv, &dev->mu, &dl) != 0 && fence_completed(dev) < fence)
            err = VIDMM_E_TIMEOUT;
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

int vidmm_trim_to_budget(vidmm_device *dev, bool wait)
{
    VM_DEV_CHECK(dev);
    if (!dev)
        return vidmm_refuse(__func__, "dev", "NULL", "device.h");
    pthread_mutex_lock(&dev->mu);
    if (dev->removed) {
        pthread_mutex_unlock(&dev->mu);
        return VIDMM_E_DEVICE_REMOVED;
    }
    dev->backoff_until = 0;
    vm_unlock_and_page(dev);
    if (wait) {
        pthread_mutex_lock(&dev->mu);
        while (dev->writing)
            pthread_cond_wait(&dev->io_cv, &dev->mu);
        pthread_mutex_unlock(&dev->mu);
    }
    return 0;
}

void vm_swap_stats(vidmm_device *dev, struct vidmm_stats *out)
{
    if (!dev->io)
        return;
    struct vmio_stats s;
    vmio_get_stats(dev->io, &s);
    out->swap_used = s.space_used;
    out->swap_size = s.space_size;
    out->swap_in_flight = s.in_flight;
    out->swap_max_in_flight = s.max_in_flight;
    out->swap_warm_bytes = dev->warm_bytes;
}
