/* SPDX-License-Identifier: MIT */
/* lib/engine/device.c - devices: segment-table validation (spec 15.1), creation and
 * destruction, removal (15.27), handles, fences, statistics and the paging log. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine/engine.h"

#define VM_DEFAULT_RESERVE (64ull << 30)
#define VM_MIN_DEFAULT_RESERVE (1ull << 30)
#define VM_DEFAULT_LOG 65536u

/* ---------------------------------------------------------------------------------------------
 * Segment table validation (spec 2.3 and 15.1).
 * ------------------------------------------------------------------------------------------- */
#define REFUSE(field, rule, spec) vidmm_refuse("vidmm_device_create", field, rule, spec)

static int check_segment(const struct vidmm_segment_desc *s)
{
    const uint32_t f = s->flags;
    const bool aperture = (f & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP)) != 0;
    if (f & VIDMM_SEGMENT_RESERVED_MASK)
        return REFUSE("segments[].flags", "reserved bits set", "2.3");
    if (f & VIDMM_SEGMENT_RESERVED_SYSMEM) /* "system use; driver must not set" */
        return REFUSE("segments[].flags", "RESERVED_SYSMEM is for system use", "2.3");
    if (s->size == 0 || s->size % VIDMM_PAGE_SIZE)
        return REFUSE("segments[].size", "0 or not a multiple of the page size", "15.1");
    if (s->commit_limit % VIDMM_PAGE_SIZE)
        return REFUSE("segments[].commit_limit", "not a multiple of the page size", "15.1");
    if (s->base_address + s->size < s->base_address)
        return REFUSE("segments[].base_address", "base_address + size wraps", "2.1");
    if (aperture ? (s->commit_limit == 0 || s->commit_limit > s->size) : s->commit_limit != s->size)
        return REFUSE("segments[].commit_limit", aperture ? "0 or above the aperture's size" : "differs from a memory segment's size",
                      "15.1");
    if ((f & VIDMM_SEGMENT_AGP) && f != VIDMM_SEGMENT_AGP) /* Agp must be the only flag */
        return REFUSE("segments[].flags", "AGP with another flag", "15.1");
    if ((f & VIDMM_SEGMENT_CACHE_COHERENT) && !(f & VIDMM_SEGMENT_APERTURE))
        return REFUSE("segments[].flags", "CACHE_COHERENT without APERTURE", "15.1");
    if ((f & VIDMM_SEGMENT_POPULATED_FROM_SYSMEM) && aperture)
        return REFUSE("segments[].flags", "POPULATED_FROM_SYSMEM on an aperture", "15.1");
    const uint32_t hib = VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE | VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE;
    if ((f & hib) && !(f & VIDMM_SEGMENT_PRESERVED_DURING_STANDBY))
        return REFUSE("segments[].flags", "a hibernate flag without PRESERVED_DURING_STANDBY", "15.1");
    if ((f & hib) == hib) /* 111 and 011 are not among the valid combinations */
        return REFUSE("segments[].flags", "both hibernate flags", "15.1");
    if ((f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE) && (f & VIDMM_SEGMENT_CPU_VISIBLE))
        return REFUSE("segments[].flags", "SUPPORTS_CPU_HOST_APERTURE with CPU_VISIBLE", "15.1");
    if ((f & VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE) && !(f & VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE))
        return REFUSE("segments[].flags", "SUPPORTS_CACHED_CPU_HOST_APERTURE without SUPPORTS_CPU_HOST_APERTURE",
                      "15.1");
    if (f & VIDMM_SEGMENT_USE_BANKING) {
        if (s->bank_count == 0 || s->bank_count > VIDMM_MAX_BANKS)
            return REFUSE("segments[].bank_count", "not in 1..127", "15.1");
        if (s->bank_count > 1 && !s->bank_ends)
            return REFUSE("segments[].bank_ends", "NULL with several banks", "2.1");
        uint64_t prev = 0;
        for (uint32_t i = 0; i + 1 < s->bank_count; i++) {
            uint64_t e = s->bank_ends[i];
            if (e <= prev || e >= s->size) /* strictly increasing, inside the segment */
                return REFUSE("segments[].bank_ends", "not strictly increasing below the size", "15.1");
            prev = e;
        }
    } else if (s->bank_count != 0 || s->bank_ends) {
        return REFUSE("segments[].bank_count", "banks without USE_BANKING", "15.1");
    }
    /* SystemMemoryEndAddress: "set non-zero only with PartiallyPreservedDuringHibernate", an
     * inclusive offset in the segment (spec 2.2). */
    if (s->system_memory_end && !(f & VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE))
        return REFUSE("segments[].system_memory_end", "non-zero without PARTIALLY_PRESERVED_DURING_HIBERNATE", "2.2");
    if (s->system_memory_end >= s->size)
        return REFUSE("segments[].system_memory_end", "not an offset in the segment (>= size)", "2.2");
    if (s->system_memory_end && aperture) /* never purged (its content is system memory): it would mean nothing */
        return REFUSE("segments[].system_memory_end", "on an aperture segment", "2.2");
    return 0;
}

/* The descriptor's size up to the end of 'field': an older caller's shorter descriptor ends
 * before the fields added since, which then read as 0. Sizes accepted: the current one (or
 * more), and exactly those of the descriptors before wait_timeout_ns and before
 * segment_desc_size were added. */
#define DESC_HAS(d, field) ((d)->size >= offsetof(struct vidmm_device_desc, field) + sizeof((d)->field))
#define DESC_SIZE_0_1 offsetof(struct vidmm_device_desc, wait_timeout_ns)
#define DESC_SIZE_0_2 offsetof(struct vidmm_device_desc, segment_desc_size)

/* read_desc(): the caller's descriptor 'in' as this version's, in '*d', its segment table
 * copied to 'segs' in this version's layout (d->segments points there): the fields past a
 * shorter descriptor's end, and those past the end of a segment of the first layout
 * (system_memory_end), read as 0. Everything after reads '*d' only, never the caller's table
 * through another stride. Checks the size, the stride and the table's extent; the rest is
 * check_desc()'s. */
static int read_desc(const struct vidmm_device_desc *in, struct vidmm_device_desc *d,
                     struct vidmm_segment_desc segs[VIDMM_MAX_SEGMENTS])
{
    if (!in)
        return REFUSE("desc", "NULL", "device.h");
    /* sizeof (or more), or exactly an earlier version's: any other size is a caller's mistake
     * (one that holds every field but not the tail padding included). */
    if (in->size < sizeof *in && in->size != DESC_SIZE_0_1 && in->size != DESC_SIZE_0_2)
        return REFUSE("desc->size", "neither sizeof(struct vidmm_device_desc) nor an earlier version's", "device.h");
    memset(d, 0, sizeof *d);
    memcpy(d, in, in->size < sizeof *d ? in->size : sizeof *d);
    d->size = sizeof *d;
    /* The stride (SegmentDescriptorStride, spec 2.2): an older caller's table has the first
     * layout; 0 is this version's (device.h). */
    size_t stride = DESC_HAS(in, segment_desc_size) ? in->segment_desc_size : VIDMM_SEGMENT_DESC_SIZE_0;
    if (stride == 0)
        stride = sizeof(struct vidmm_segment_desc);
    if (stride != sizeof(struct vidmm_segment_desc) && stride != VIDMM_SEGMENT_DESC_SIZE_0)
        return REFUSE("segment_desc_size", "neither sizeof(struct vidmm_segment_desc) nor VIDMM_SEGMENT_DESC_SIZE_0",
                      "2.2");
    d->segment_desc_size = (uint32_t)sizeof(struct vidmm_segment_desc);
    if (!in->segments || in->segment_count == 0 || in->segment_count > VIDMM_MAX_SEGMENTS)
        return REFUSE("segment_count", "no segment table, or not in 1..31", "15.1");
    const unsigned char *table = (const unsigned char *)in->segments;
    for (uint32_t i = 0; i < in->segment_count; i++) {
        memset(&segs[i], 0, sizeof segs[i]);
        memcpy(&segs[i], table + (size_t)i * stride, stride);
    }
    d->segments = segs;
    return 0;
}

static int check_desc(const struct vidmm_device_desc *d)
{
    if (!d->segments || d->segment_count == 0 || d->segment_count > VIDMM_MAX_SEGMENTS)
        return REFUSE("segment_count", "no segment table, or not in 1..31", "15.1");
    if (d->flags & ~(VIDMM_DEVICE_CACHE_COHERENT | VIDMM_DEVICE_LOG_PAGING | VIDMM_DEVICE_LAZY_RANGES |
                     VIDMM_DEVICE_WDDM2))
        return REFUSE("flags", "unknown bits", "device.h");
    int w2err = vm_w2_check_desc(d); /* WDDM2 hook: the WDDM2 mode's rules (residency.c) */
    if (w2err)
        return w2err;
    if (d->paging_threads > VM_MAX_THREADS)
        return REFUSE("paging_threads", "above 64", "device.h");
    if (d->swizzling_ranges > VM_MAX_RANGES)
        return REFUSE("swizzling_ranges", "above 64", "device.h");
    if (d->memory_tier > VIDMM_TIER_BASE)
        return REFUSE("memory_tier", "unknown tier", "device.h");
    if (d->aperture_commit_limit % VIDMM_PAGE_SIZE)
        return REFUSE("aperture_commit_limit", "not a multiple of the page size", "15.1");
    if (d->sysmem_reserve % VIDMM_PAGE_SIZE)
        return REFUSE("sysmem_reserve", "not a multiple of the page size", "device.h");
    if (d->sysmem_budget % VIDMM_PAGE_SIZE)
        return REFUSE("sysmem_budget", "not a multiple of the page size", "device.h");
    unsigned agp = 0;
    for (uint32_t i = 0; i < d->segment_count; i++) {
        int err = check_segment(&d->segments[i]);
        if (err)
            return err;
        agp += (d->segments[i].flags & VIDMM_SEGMENT_AGP) != 0;
    }
    return agp > 1 ? REFUSE("segments[].flags", "more than one AGP segment", "15.1") : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Creation and destruction.
 * ------------------------------------------------------------------------------------------- */
static void segment_fini(struct vm_segment *s)
{
    if (s->aperture) {
        if (s->ap.base)
            vmos_aperture_destroy(&s->ap);
    } else if (s->mem.base) {
        vmos_region_free(&s->mem);
    }
    vmr_destroy(&s->space);
    free(s->buckets);
    free(s->bank_start);
    free(s->bank_end);
    memset(s, 0, sizeof *s);
}

static int segment_init(vidmm_device *dev, struct vm_segment *s, uint32_t id, const struct vidmm_segment_desc *d,
                        int tier)
{
    (void)dev;
    s->id = id;
    s->flags = d->flags;
    s->aperture = (d->flags & (VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_AGP)) != 0;
    s->base_address = d->base_address;
    s->size = d->size;
    s->commit_limit = d->commit_limit;
    s->system_memory_end = d->system_memory_end;
    if (vmr_init(&s->space, d->size) != 0)
        return VIDMM_E_NO_MEMORY;
    if (d->flags & VIDMM_SEGMENT_USE_BANKING) {
        s->bank_count = d->bank_count;
        s->bank_start = malloc(sizeof(uint64_t) * d->bank_count);
        s->bank_end = malloc(sizeof(uint64_t) * d->bank_count);
        if (!s->bank_start || !s->bank_end)
            return VIDMM_E_NO_MEMORY;
        /* Bank 1 starts at 0, bank n ends where the table says, the last at Size (spec 2.1). */
        for (uint32_t i = 0; i < d->bank_count; i++) {
            s->bank_start[i] = i ? d->bank_ends[i - 1] : 0;
            s->bank_end[i] = i + 1 < d->bank_count ? d->bank_ends[i] : d->size;
        }
    }
    int err;
    if (s->aperture) {
        err = vmos_aperture_init(&s->ap, (size_t)d->size);
        s->cpu = s->ap.base;
    } else {
        err = vmos_region_alloc((size_t)d->size, tier, &s->mem);
        s->cpu = s->mem.base;
    }
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Destroyed devices and handle tags.
 *
 * A destroyed device's struct is not freed at once: its shell (every resource released, 'magic'
 * VM_DEV_DEAD) waits in a quarantine of the last VM_QUARANTINE destroyed, so that a call given
 * it - a second vidmm_device_destroy() above all, which waited for ever on the freed paging
 * state - reads memory still allocated (AddressSanitizer agrees) and is refused. The shell
 * pushed out is freed then; a call given a device destroyed longer ago reads freed memory, which
 * no check can make safe (device.h says what is guaranteed). Shells cost ~sizeof(struct
 * vidmm_device) each, held until the process ends.
 *
 * Each live device has one of 16 handle tags, the lowest no live device has, so that the
 * handles of up to 16 devices alive together never name one another's allocations (beyond 16 a
 * tag is shared, and such handles are again told apart only when the index is free in the other
 * device), and devices made one after another make the same handles from the same calls (the
 * paging logs of two runs compare equal: test_model, test_conf_paging). Both under 'shells_mu'.
 * ------------------------------------------------------------------------------------------- */
#define VM_QUARANTINE 8u
#define VM_HANDLE_TAGS (1u << VM_HANDLE_TAG_BITS)
static pthread_mutex_t shells_mu = PTHREAD_MUTEX_INITIALIZER;
static vidmm_device *shells[VM_QUARANTINE];
static unsigned shells_next;
static uint32_t tag_users[VM_HANDLE_TAGS]; /* live devices with each tag */

/* The tag fewest live devices have, the lowest of those: unshared while 16 or fewer live. */
static uint32_t tag_take(void)
{
    pthread_mutex_lock(&shells_mu);
    uint32_t t = 0;
    for (uint32_t c = 1; c < VM_HANDLE_TAGS; c++)
        if (tag_users[c] < tag_users[t])
            t = c;
    tag_users[t]++;
    pthread_mutex_unlock(&shells_mu);
    return t;
}

static void tag_give(uint32_t t)
{
    pthread_mutex_lock(&shells_mu);
    if (tag_users[t] > 0)
        tag_users[t]--; /* counted: a tag shared beyond 16 devices is free only when all are gone */
    pthread_mutex_unlock(&shells_mu);
}

/* quarantine() ends a destroyed device: its tag goes back, its shell waits in the quarantine and
 * the oldest shell there is freed. */
static void quarantine(vidmm_device *dev)
{
    dev->magic = VM_DEV_DEAD;
    tag_give(dev->handle_tag);
    pthread_mutex_lock(&shells_mu);
    vidmm_device *old = shells[shells_next];
    shells[shells_next] = dev;
    shells_next = (shells_next + 1) % VM_QUARANTINE;
    pthread_mutex_unlock(&shells_mu);
    free(old);
}

int vm_refuse_dev(const vidmm_device *dev, const char *call)
{
    if (dev == NULL)
        return vidmm_refuse(call, "dev", "NULL", "device.h");
    if (!vidmm_log_enabled(VIDMM_LOG_DEBUG))
        return VIDMM_E_INVALID_ARG;
    if (dev->magic == VM_DEV_DEAD)
        vidmm_log(VIDMM_LOG_DEBUG, "%s: dev: %p was destroyed (spec device.h)", call, (const void *)dev);
    else
        vidmm_log(VIDMM_LOG_DEBUG, "%s: dev: %p is not a live device (magic 0x%x, not 0x%x) (spec device.h)", call,
                  (const void *)dev, dev->magic, VM_DEV_LIVE);
    return VIDMM_E_INVALID_ARG;
}

/* device_release() releases everything a device holds but its struct. */
static void device_release(vidmm_device *dev)
{
    vm_swap_close(dev);
    vm_instance_cache_free(dev);
    if (dev->wtracks) { /* before the memory they track goes */
        vmos_wtrack_destroy(dev->wtracks->arena);
        for (uint32_t i = 0; i < VIDMM_MAX_SEGMENTS; i++)
            vmos_wtrack_destroy(dev->wtracks->seg[i]);
        free(dev->wtracks);
        dev->wtracks = NULL; /* what allocations freed after this left armed goes with its memory */
    }
    for (uint32_t i = 0; i < dev->nseg; i++)
        segment_fini(&dev->seg[i]);
    for (uint32_t i = 0; i < dev->nranges; i++) {
        vmos_wtrack_destroy(dev->ranges[i].ww); /* before its memory goes */
        vmos_lazy_destroy(dev->ranges[i].lazy);
        vm_lazy_fill_free(dev->ranges[i].fill);
        free(dev->ranges[i].view), free(dev->ranges[i].snap);
    }
    free(dev->sysmem.buckets);
    vm_w2_fini(dev); /* WDDM2 hook: VA spaces and process budgets (residency.c) */
    if (dev->arena.base)
        vmos_arena_destroy(&dev->arena);
    vmr_destroy(&dev->arena_space);
    free(dev->table);
    free(dev->gen);
    free(dev->free_idx);
    free(dev->q);
    free(dev->log);
    pthread_mutex_destroy(&dev->range_cb_mu);
    pthread_cond_destroy(&dev->paging_cv);
    pthread_cond_destroy(&dev->io_cv);
    pthread_cond_destroy(&dev->fence_cv);
    pthread_mutex_destroy(&dev->mu);
}

int vidmm_device_create(const struct vidmm_device_desc *in, vidmm_device **out)
{
    if (!out)
        return REFUSE("out", "NULL", "device.h");
    /* From here on 'desc' is this version's descriptor, whatever version the caller's was. */
    struct vidmm_device_desc copy;
    struct vidmm_segment_desc segs[VIDMM_MAX_SEGMENTS];
    const struct vidmm_device_desc *const desc = &copy;
    int err = read_desc(in, &copy, segs);
    if (!err)
        err = check_desc(desc);
    if (err)
        return err;
    vidmm_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return VIDMM_E_NO_MEMORY;
    dev->handle_tag = tag_take();
    pthread_mutex_init(&dev->mu, NULL);
    pthread_cond_init(&dev->fence_cv, NULL);
    pthread_cond_init(&dev->paging_cv, NULL);
    pthread_cond_init(&dev->io_cv, NULL);
    pthread_mutex_init(&dev->range_cb_mu, NULL);
    dev->flags = desc->flags;
    vm_w2_init(dev, desc); /* WDDM2 hook (residency.c) */
    dev->wait_timeout_ns = desc->wait_timeout_ns; /* 0 past an older descriptor's end (read_desc()) */
    dev->aperture_commit_limit = desc->aperture_commit_limit;
    if (desc->driver) {
        dev->drv = *desc->driver;
        dev->has_paging_cb = desc->driver->paging != NULL;
    }
    dev->nranges = desc->swizzling_ranges;
    for (uint32_t i = 0; i < dev->nranges; i++)
        dev->ranges[i].a = NULL;
    /* What the CPU wrote through a swizzling range: a write-watch where the kernel offers
     * userfaultfd's asynchronous write-protect, else a snapshot compared at unlock.
     * VIDMM_RANGE_DIRTY=snapshot forces the snapshot (tests, and a way out). */
    const char *rd = getenv("VIDMM_RANGE_DIRTY");
    dev->range_watch = !(rd != NULL && strcmp(rd, "snapshot") == 0);
    /* Issue 16: VIDMM_RANGE_DIRTY=watch watches small narrow parts too (lock.c; tests). */
    dev->range_watch_small = rd != NULL && strcmp(rd, "watch") == 0;
    /* Issue 31: VIDMM_RANGE_DIRTY=off tiles back the whole part of every eager writable lock
     * (the untracked baseline of bench_lock_paths; tests). */
    dev->range_untracked = rd != NULL && strcmp(rd, "off") == 0;
    const char *lz = getenv("VIDMM_LAZY");
    dev->lazy_ranges = (desc->flags & VIDMM_DEVICE_LAZY_RANGES) && !(lz != NULL && strcmp(lz, "off") == 0);
    const char *lh = getenv("VIDMM_LAZY_HISTORY");
    dev->lazy_always = lh != NULL && strcmp(lh, "off") == 0;
    dev->st.size_of = sizeof dev->st;
    dev->st.segment_count = desc->segment_count;
    dev->st.paging_threads = desc->paging_threads;

    uint64_t reserve = desc->sysmem_reserve ? desc->sysmem_reserve : VM_DEFAULT_RESERVE;
    err = vmos_arena_init(&dev->arena, (size_t)reserve);
    /* The default reservation is address space only, but not every process has 64 GiB of it
     * to give (a 32-bit-wide address-space limit, RLIMIT_AS, valgrind's own limits): halved
     * until it fits, down to 1 GiB, with a warning. A size the caller chose is not changed. */
    while (err == VIDMM_E_NO_MEMORY && !desc->sysmem_reserve && reserve > VM_MIN_DEFAULT_RESERVE) {
        reserve /= 2;
        err = vmos_arena_init(&dev->arena, (size_t)reserve);
        if (!err)
            vidmm_log(VIDMM_LOG_WARN, "vidmm_device_create: the default %llu GiB system-memory reservation failed; "
                                      "using %llu MiB (set sysmem_reserve to choose)",
                      (unsigned long long)(VM_DEFAULT_RESERVE >> 30), (unsigned long long)(reserve >> 20));
    }
    if (err || (err = vmr_init(&dev->arena_space, reserve)) != 0)
        goto fail;
    for (uint32_t i = 0; i < desc->segment_count; i++) {
        dev->nseg = i + 1;
        if ((err = segment_init(dev, &dev->seg[i], i + 1, &desc->segments[i], (int)desc->memory_tier)) != 0)
            goto fail;
    }
    if (dev->flags & VIDMM_DEVICE_LOG_PAGING) {
        dev->log_cap = desc->paging_log_capacity ? desc->paging_log_capacity : VM_DEFAULT_LOG;
        dev->log = malloc(sizeof *dev->log * dev->log_cap);
        if (!dev->log) {
            err = VIDMM_E_NO_MEMORY;
            goto fail;
        }
    }
    if ((err = vm_swap_open(dev, desc)) != 0)
        goto fail;
    if ((err = vm_paging_start(dev, desc->paging_threads)) != 0)
        goto fail;
    dev->magic = VM_DEV_LIVE;
    *out = dev;
    return 0;
fail:
    device_release(dev);
    tag_give(dev->handle_tag); /* never seen by the caller: no shell to keep */
    free(dev);
    return err;
}

void vidmm_device_destroy(vidmm_device *dev)
{
    if (!dev)
        return;
    if (vm_dev_check(dev, __func__))
        return;
    /* One destroy only: two threads destroying the same device at once (misuse) must not both
     * tear it down - the second finds it dying and is refused. */
    uint32_t live = VM_DEV_LIVE;
    if (!__atomic_compare_exchange_n(&dev->magic, &live, VM_DEV_DYING, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        (void)vm_refuse_dev(dev, __func__);
        return;
    }
    /* The GPU is gone with the device: nothing waits for its fences any more (paging that
     * would, and blocked callers, see the device removed), and what is still queued is
     * drained without being run - every byte is about to be freed. */
    pthread_mutex_lock(&dev->mu);
    dev->removed = true;
    pthread_cond_broadcast(&dev->fence_cv);
    pthread_cond_broadcast(&dev->paging_cv);
    vm_wait_paging_until(dev, dev->paging_issued, NULL);
    pthread_mutex_unlock(&dev->mu);
    vm_paging_stop(dev);
    vm_swap_close(dev); /* I/O in flight is cancelled or completes first */
    pthread_mutex_lock(&dev->mu);
    for (uint32_t i = 1; i <= dev->table_top; i++) {
        struct vm_alloc *a = dev->table[i];
        if (a && a->index == 0) { /* free groups through their first instance */
            struct vm_group *g = a->g;
            for (uint32_t k = g->ninst; k-- > 0;)
                vm_instance_free(dev, g->inst[k]);
            free(g->inst);
            free(g);
        }
    }
    pthread_mutex_unlock(&dev->mu);
    device_release(dev);
    quarantine(dev);
}

int vidmm_device_remove(vidmm_device *dev)
{
    VM_DEV_CHECK(dev);
    if (!dev)
        return vidmm_refuse(__func__, "dev", "NULL", "device.h");
    pthread_mutex_lock(&dev->mu);
    if (dev->removed) {
        pthread_mutex_unlock(&dev->mu);
        return VIDMM_E_DEVICE_REMOVED;
    }
    dev->removed = true;
    /* Every lock ends, every pin goes (spec 15.27); blocked waiters wake and see the removal. */
    for (uint32_t i = 1; i <= dev->table_top; i++) {
        struct vm_alloc *a = dev->table[i];
        if (!a)
            continue;
        vm_locks_drop(dev, a);
        if (a->pinned && a->seg && a->in_bucket)
            a->seg->pinned_bytes -= a->space; /* its list no longer counts it as pinned */
        a->pinned = false;
    }
    pthread_cond_broadcast(&dev->fence_cv);
    pthread_cond_broadcast(&dev->paging_cv);
    pthread_mutex_unlock(&dev->mu);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Handles: a table of instances; a handle is (generation << 24) | (device tag << 20) | index,
 * index >= 1, so a stale handle of a reused slot, or one of another device, is refused.
 * ------------------------------------------------------------------------------------------- */
int vm_handle_new(vidmm_device *dev, struct vm_alloc *a)
{
    uint32_t i;
    if (dev->nfree) {
        i = dev->free_idx[--dev->nfree];
    } else {
        if (dev->table_top + 1 >= dev->table_cap) {
            uint32_t cap = dev->table_cap ? dev->table_cap * 2 : 1024;
            if (cap > VM_HANDLE_INDEX_MASK + 1)
                return VIDMM_E_NO_MEMORY;
            struct vm_alloc **t = realloc(dev->table, sizeof *t * cap);
            if (!t)
                return VIDMM_E_NO_MEMORY;
            dev->table = t;
            uint8_t *g = realloc(dev->gen, cap);
            if (!g)
                return VIDMM_E_NO_MEMORY;
            dev->gen = g;
            uint32_t *f = realloc(dev->free_idx, sizeof *f * cap);
            if (!f)
                return VIDMM_E_NO_MEMORY;
            dev->free_idx = f;
            memset(dev->table + dev->table_cap, 0, sizeof *t * (cap - dev->table_cap));
            memset(dev->gen + dev->table_cap, 0, cap - dev->table_cap);
            dev->table_cap = cap;
        }
        i = ++dev->table_top;
    }
    dev->table[i] = a;
    a->handle = ((uint32_t)dev->gen[i] << VM_HANDLE_GEN_SHIFT) | (dev->handle_tag << VM_HANDLE_INDEX_BITS) | i;
    dev->live++;
    return 0;
}

void vm_handle_free(vidmm_device *dev, vidmm_handle h)
{
    uint32_t i = h & VM_HANDLE_INDEX_MASK;
    dev->table[i] = NULL;
    dev->gen[i]++;
    dev->free_idx[dev->nfree++] = i;
    dev->live--;
}

struct vm_alloc *vm_enter_(vidmm_device *dev, vidmm_handle h, int *err, const char *call)
{
    pthread_mutex_lock(&dev->mu);
    struct vm_alloc *a = vm_lookup(dev, h);
    *err = dev->removed ? VIDMM_E_DEVICE_REMOVED : a ? 0 : vm_refuse_handle(call, h);
    return *err ? NULL : a;
}

int vm_check_handles_(vidmm_device *dev, const vidmm_handle *h, uint32_t n, const char *call)
{
    if (dev->removed)
        return VIDMM_E_DEVICE_REMOVED;
    for (uint32_t i = 0; i < n; i++)
        if (!vm_lookup(dev, h[i]))
            return vm_refuse_handle(call, h[i]);
    return 0;
}

int vm_refuse_handle(const char *call, vidmm_handle h)
{
    if (vidmm_log_enabled(VIDMM_LOG_DEBUG))
        vidmm_log(VIDMM_LOG_DEBUG, "%s: handle: 0x%x (index %u, device tag %u, generation %u) names no live "
                                   "allocation of this device (spec 15.11)", call, h, h & VM_HANDLE_INDEX_MASK,
                  (h >> VM_HANDLE_INDEX_BITS) & (VM_HANDLE_TAGS - 1u), h >> VM_HANDLE_GEN_SHIFT);
    return VIDMM_E_INVALID_ARG;
}

void vm_deadline(uint64_t timeout_ns, struct timespec *dl)
{
    clock_gettime(CLOCK_REALTIME, dl);
    if (timeout_ns != UINT64_MAX) {
        uint64_t ns = (uint64_t)dl->tv_nsec + timeout_ns % 1000000000ull;
        dl->tv_sec += (time_t)(timeout_ns / 1000000000ull + ns / 1000000000ull);
        dl->tv_nsec = (long)(ns % 1000000000ull);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Submission fences.
 * ------------------------------------------------------------------------------------------- */
bool vm_deadline_for(const vidmm_device *dev, struct timespec *dl)
{
    if (!dev->wait_timeout_ns)
        return false;
    vm_deadline(dev->wait_timeout_ns, dl);
    return true;
}

int vm_cond_wait(vidmm_device *dev, pthread_cond_t *cv, const struct timespec *dl)
{
    if (!dl) {
        pthread_cond_wait(cv, &dev->mu);
        return 0;
    }
    return pthread_cond_timedwait(cv, &dev->mu, dl) == ETIMEDOUT ? VIDMM_E_TIMEOUT : 0;
}

int vidmm_fence_signal(vidmm_device *dev, uint64_t fence)
{
    VM_DEV_CHECK(dev);
    if (!dev)
        return vidmm_refuse(__func__, "dev", "NULL", "device.h");
    pthread_mutex_lock(&dev->mu);
    int err = 0;
    if (dev->removed)
        err = VIDMM_E_DEVICE_REMOVED;
    else if (fence > dev->fence_issued)
        err = vidmm_refuse(__func__, "fence", "never issued", "device.h");
    else if (fence > dev->fence_done) {
        dev->fence_done = fence;
        pthread_cond_broadcast(&dev->fence_cv);
    }
    pthread_mutex_unlock(&dev->mu);
    return err;
}

uint64_t vidmm_fence_completed(vidmm_device *dev)
{
    if (vm_dev_check(dev, __func__))
        return 0;
    if (!dev)
        return 0;
    pthread_mutex_lock(&dev->mu);
    uint64_t f = dev->fence_done;
    pthread_mutex_unlock(&dev->mu);
    return f;
}

int vidmm_fence_wait(vidmm_device *dev, uint64_t fence, uint64_t timeout_ns)
{
    VM_DEV_CHECK(dev);
    if (!dev)
        return vidmm_refuse(__func__, "dev", "NULL", "device.h");
    struct timespec dl;
    vm_deadline(timeout_ns, &dl);
    pthread_mutex_lock(&dev->mu);
    int err = 0;
    if (fence > dev->fence_issued)
        err = vidmm_refuse(__func__, "fence", "never issued", "device.h");
    while (!err && dev->fence_done < fence) {
        if (dev->removed) {
            err = VIDMM_E_DEVICE_REMOVED;
            break;
        }
        if (timeout_ns == UINT64_MAX) {
            pthread_cond_wait(&dev->fence_cv, &dev->mu);
        } else if (pthread_cond_timedwait(&dev->fence_cv, &dev->mu, &dl) == ETIMEDOUT &&
                   dev->fence_done < fence) {
            err = VIDMM_E_TIMEOUT;
        }
    }
    if (!err && dev->removed)
        err = VIDMM_E_DEVICE_REMOVED;
    pthread_mutex_unlock(&dev->mu);
    return err;
}

/* ---------------------------------------------------------------------------------------------
 * Statistics and the paging log.
 * ------------------------------------------------------------------------------------------- */
int vidmm_get_stats(vidmm_device *dev, struct vidmm_stats *out)
{
    VM_DEV_CHECK(dev);
    if (!dev || !out || out->size_of < sizeof *out)
        return vidmm_refuse(__func__, !dev ? "dev" : "out", "NULL, or size_of too small", "device.h");
    pthread_mutex_lock(&dev->mu);
    *out = dev->st;
    out->size_of = sizeof *out;
    out->allocations = dev->live;
    out->sysmem_used = dev->sysmem_used;
    for (uint32_t i = 0; i < dev->nseg; i++) {
        const struct vm_segment *s = &dev->seg[i];
        struct vidmm_segment_stats *o = &out->segments[i];
        o->size = s->size;
        o->used = s->used;
        o->largest_free = vmr_largest(&s->space);
        o->allocations = s->count;
        o->memory_tier = s->aperture ? VIDMM_TIER_BASE : (uint32_t)s->mem.tier;
    }
    vm_swap_stats(dev, out);
    pthread_mutex_unlock(&dev->mu);
    return 0;
}

size_t vidmm_paging_log_read(vidmm_device *dev, struct vidmm_paging_op *out, size_t max)
{
    if (vm_dev_check(dev, __func__))
        return 0;
    if (!dev || !out)
        return 0;
    pthread_mutex_lock(&dev->mu);
    size_t n = 0;
    while (n < max && dev->log_len) {
        out[n++] = dev->log[dev->log_head];
        dev->log_head = (dev->log_head + 1) % dev->log_cap;
        dev->log_len--;
    }
    pthread_mutex_unlock(&dev->mu);
    return n;
}
