/* SPDX-License-Identifier: MIT */
/* lib/engine/engine.h - the video memory manager's state, shared by the engine's files.
 *
 * Concurrency: one mutex per device guards every field below except where a comment says
 * otherwise; no call holds it while bytes move. Paging operations are planned under the mutex
 * (metadata changes at once: an evicted allocation's space is free as soon as its transfer is
 * queued) and executed afterwards, strictly in the order queued, by the paging threads (or by
 * the waiting caller when there are none). FIFO execution is what keeps content safe: a
 * transfer out of a range always runs before a transfer into the same range planned later.
 * Whoever needs an allocation's bytes waits until paging has passed its last operation
 * (vm_alloc.paging_fence). Range locks and unlocks convert a view's bytes with the mutex
 * released too, the allocation marked 'converting' meanwhile (lock.c says the protocol). */
#ifndef VIDMM_LIB_ENGINE_ENGINE_H
#define VIDMM_LIB_ENGINE_ENGINE_H

#include <pthread.h>
#include <stdint.h>
#include <stdbool.h>
#include "common/internal.h"
#include "vidmm/device.h"
#include "vidmm/writewatch.h"
#include "vidmm/kernels.h"
#include "vidmm/swizzle.h"
#include "engine/rangeset.h"
#include "engine/os/os.h"
#include "engine/io/io.h"
#include "engine/wddm2.h"     /* WDDM2 hook: the WDDM2 model's state (gpuva.c, residency.c) */
#include "engine/offer.h"     /* offer hook: offer / reclaim and power-transition state (offer.c, power.c) */

#define VM_MAX_RANGES 64u
#define VM_SWAP_BATCH 64u           /* disk I/O requests started per call at most */

/* The disk tier's states of an allocation (lib/engine/swap.c). */
enum vm_swap_state { VM_SWAP_NONE = 0, VM_SWAP_WRITING, VM_SWAP_RELEASING, VM_SWAP_ON_DISK, VM_SWAP_READING };
#define VM_MAX_THREADS 64u
/* A handle is generation (8 bits) | device tag (4 bits) | index (20 bits), index >= 1 (device.c
 * vm_handle_new()): a stale handle of a reused slot differs in its generation, one of another
 * device in its tag, and vm_lookup() refuses both with the one compare of the whole handle. */
#define VM_HANDLE_INDEX_BITS 20u
#define VM_HANDLE_INDEX_MASK ((1u << VM_HANDLE_INDEX_BITS) - 1u)
#define VM_HANDLE_TAG_BITS 4u
#define VM_HANDLE_GEN_SHIFT (VM_HANDLE_INDEX_BITS + VM_HANDLE_TAG_BITS)
/* struct vidmm_device's 'magic': VM_DEV_LIVE from vidmm_device_create() to vidmm_device_destroy(),
 * VM_DEV_DEAD after it, while the device's shell waits in the quarantine (device.c). */
#define VM_DEV_LIVE 0x4d4d4456u  /* "VDMM" */
#define VM_DEV_DEAD 0x44414544u  /* "DEAD" */
#define VM_DEV_DYING 0x44594e47u /* "DYNG": vidmm_device_destroy() running (a second one is refused) */

struct vm_alloc;

struct vm_bucket {
    uint32_t prio;
    struct vm_alloc *head, *tail;   /* least recently used first */
};

struct vm_segment {
    uint32_t id;                /* 1-based */
    uint32_t flags;             /* VIDMM_SEGMENT_* */
    bool aperture;              /* APERTURE or AGP: maps backing-store pages */
    uint64_t base_address, size, commit_limit;
    uint64_t system_memory_end; /* SystemMemoryEndAddress (spec 2.2): 0, or the last offset
                                   a hibernate keeps (PARTIALLY_PRESERVED_DURING_HIBERNATE) */
    uint32_t bank_count;        /* 0 without USE_BANKING */
    uint64_t *bank_start, *bank_end;
    struct vmr_set space;       /* free space (offsets) */
    uint64_t used;              /* bytes placed or mapped */
    uint32_t count;             /* allocations in it */
    uint8_t *cpu;               /* host view of offset 0 */
    struct vmos_region mem;     /* memory segments */
    struct vmos_aperture ap;    /* aperture segments */
    /* Allocations in it, as eviction candidates (spec 15.4): one list per priority value,
     * least recently used first; the lists sorted by priority. */
    struct vm_bucket *buckets;
    uint32_t nbuckets, cap_buckets;
    uint64_t pinned_bytes;      /* pinned allocations in it */
};

/* One allocation as created, shared by its rename instances. */
struct vm_group {
    struct vidmm_alloc_desc desc;   /* as given, pointers cleared */
    struct vidmm_tile_layout layout; /* SWIZZLED */
    struct vidmm_surface_desc surface;
    struct vidmm_equation equation;
    uint64_t size;              /* rounded to the page */
    uint64_t linear_size;       /* SWIZZLED: packed linear size */
    uint64_t tiled_size;        /* SWIZZLED: bytes of the tiled surface (<= size) */
    bool swz_padded;            /* SWIZZLED: the tiled surface has bytes no element maps to */
    uint32_t supported;         /* read | write set */
    uint32_t priority;
    uint32_t ninst, cap;        /* rename instances */
    struct vm_alloc **inst;
    uint32_t current;           /* index of the current instance */
    uint32_t tag;               /* submission being checked, and the newest instance seen in it */
    uint64_t seen_seq;
};

enum vm_lock_mode {
    VM_LOCK_NONE = 0,
    VM_LOCK_DIRECT,             /* pointer to where the content is (segment or backing store) */
    VM_LOCK_RANGE,              /* through a swizzling range: the linear view */
    VM_LOCK_ALTVA,              /* UseAlternateVA: a fresh view of the backing store */
    VM_LOCK_LOCK2               /* WDDM2 hook: a Lock2 (lock2.c) - the pointer is where the
                                   content is, as VM_LOCK_DIRECT; ended by Unlock2 only */
};

/* One instance of an allocation: what is placed, evicted, locked and submitted. */
struct vm_alloc {
    /* Hot: everything a MakeResident of an allocation already resident reads and writes
     * (residency.c, issue 15) sits in the first 64 bytes - one cache line, as instances are
     * allocated 64-byte aligned (alloc.c). So the WDDM2 residency count and list scratch and the
     * offer state live here rather than in their hooks' structs (w2, offer). With them over two
     * lines, 4096 allocations took 52 or 100-150 us from one process to the next (the second
     * line's misses, depending on where the pages landed); spread over the struct, seven. */
    vidmm_handle handle;
    uint8_t where;              /* enum vidmm_where */
    uint8_t swap;               /* enum vm_swap_state: the disk tier's state */
    bool in_bucket;             /* in its segment's bucket (res_prev, res_next) */
    bool in_sysmem;             /* in dev->sysmem's lists */
    struct vm_segment *seg;     /* SEGMENT / APERTURE */
    uint32_t bucket_prio;       /* the bucket it is in */
    uint32_t w2_res_count;      /* WDDM2 residency references: MakeResident minus Evict */
    uint64_t paging_fence;      /* last paging operation that touches it */
    uint64_t lru;               /* last use, device clock */
    struct vm_alloc *res_prev, *res_next; /* in its segment's bucket */
    uint32_t w2_tag;            /* WDDM2: scratch of the call walking a list (residency.c, gpuva.c) */
    uint16_t w2_n;              /* scratch: its listings in that list (<= 10240), or flags */
    uint8_t offer_prio;         /* offer hook: 0 not offered; else VIDMM_OFFER_PRIORITY_LOW..HIGH
                                   (AUTO resolved at the offer) (offer.h) */
    /* The rest. Its first line also holds what a WDDM1 submission or make-resident of a list
     * already placed reads and writes besides the hot line (submit.c list_resident()): the
     * lock count, the group, the fences, seq, dirty - two lines an allocation rather than
     * four. A make-resident of 4096 resident allocations missed a 1 MiB cache 6.6 times an
     * allocation with them spread over the struct, 3.2 times so (Callgrind's cache
     * simulation), and took 78 us against 104 (vidmm_submit(): 121 against 173). */
    uint32_t hold;              /* calls placing or locking it right now: not a victim */
    uint32_t lock_count;
    struct vm_group *g;
    uint64_t read_fence, write_fence; /* last submission fences that read / wrote it */
    uint64_t seq;               /* when it became its group's current instance */
    bool dirty;
    struct vm_w2_alloc w2;      /* WDDM2 hook: budget charge, GPU VA mappings (wddm2.h) */
    struct vm_offer_alloc offer; /* offer hook: what a reclaim will report (offer.h) */
    vidmm_device *dev;
    uint32_t index;             /* instance index in g->inst */
    uint64_t offset, space;     /* in seg: offset and bytes taken */
    bool has_backing;           /* a backing store exists (arena range or existing memory) */
    bool backing_valid;         /* the backing store holds the content (or is the content) */
    uint64_t backing_off;       /* arena offset */
    uint8_t *backing;           /* host view of the backing store */
    bool evicted_swizzled;      /* the system-memory copy is tiled (SWIZZLED only) */
    bool pinned;
    /* locks */
    uint32_t lock_mode;         /* enum vm_lock_mode */
    uint32_t lock_flags;        /* flags of the first lock */
    uint8_t *lock_ptr;          /* what the first lock returned (page lists add to it) */
    int range;                  /* swizzling range held (cached) or -1 */
    void *altva;                /* UseAlternateVA view */
    size_t altva_len;
    uint32_t altva_range;
    uint32_t *dirty_pages;      /* PermanentSysMem: pages listed by writable locks */
    uint32_t ndirty_pages, cap_dirty_pages;
    bool dirty_all_pages;
    bool cpu_wrote;             /* Cached, CPU wrote it in a non-coherent segment: flush before GPU use */
    bool cpu_partial;           /* with cpu_wrote: only the pages of 'cpu_dirty' were written */
    uint64_t *cpu_dirty;        /* Cached: pages written under watched plain locks (bitmap) */
    /* Issue 16: a plain writable lock without a page list records which pages the CPU writes
     * (lock.c, watch_*): 'wt' is the tracker of the pool the lock pointer is in, armed over
     * [wt_ptr, wt_ptr + size) from the lock to its end. */
    struct vmos_wtrack *wt;
    uint8_t *wt_ptr;
    uint32_t wt_skip, wt_backoff; /* locks left unwatched, and the current back-off */
    /* Issue 31: tracking that never costs more than it saves (lock.c "The policy"). The lock
     * arms pages [wt_lo, wt_lo + wt_n) of it - all of them, or a probe window whose outside
     * counts as written; 'wt_dense' once a lock switched to dense (the rest disarmed, every page
     * written); 'wt_frac' the written fraction (of 4096) the last tracked lock saw,
     * 'wt_seen' whether one did; 'wt_fstar' the break-even fraction (of 4096) of this lock;
     * 'wt_probes' the probes made (where the next window goes). */
    uint32_t wt_lo, wt_n, wt_probes;
    uint16_t wt_frac, wt_fstar;
    bool wt_seen, wt_dense;
    bool wt_met;                /* a writable plain lock of it has been planned (the first goes
                                   untracked when nothing is known: lock.c watch_plan()) */
    bool wt_hole;               /* the backing store was a hole at the lock: nothing armed, the
                                   pages holding data at the end are the ones written */
    bool wt_holey;              /* the last such lock ended with holes left in the store (a hint:
                                   the next one that finds none clears it) */
    uint8_t *wt_reg;            /* its backing store, registered with the arena's tracker from
                                   its first armed lock to its release (vm_watch_forget()) */
    uint8_t *wt_left;           /* its segment copy, where the end of a lock tracked whole left
                                   its pages armed (private memory, not lifted: lock.c
                                   watch_end()) until another writer comes or it leaves that place
                                   (vm_watch_leave()); NULL: nothing left armed */
    bool wt_lift;               /* a submission let the GPU write it while pages were left armed
                                   (submit.c vm_cache_gpu_use()): its locks' ends lift again */
    /* the disk tier */
    uint64_t swap_off;          /* its extent in the swap file */
    uint32_t *swap_crc;         /* a CRC32C per VMIO_BLOCK of the extent */
    uint64_t gen, gen_at_write; /* content generation: CPU writes in system memory bump it */
    uint64_t io_fence;          /* paging fence of its read-back */
    int io_err;                 /* a failed read-back, for the call that waits for it */
    bool content_lost;
    bool dying;
    struct vmio_req req;
    bool gpu_wrote;             /* Cached, GPU wrote it there: invalidate before CPU use */
    bool sub_write;             /* scratch of the call checking a list */
    uint32_t sub_count;
    /* Issue 16, lock.c: a lock or unlock of it is in progress with the device mutex released
     * (a range view being untiled or tiled back: this allocation's, or another's of the same
     * unlock list). Set and cleared under the mutex, always with 'hold' raised and the lock
     * counted (lock_count): nothing evicts, moves or destroys it meanwhile; another unlock, a
     * submission and vidmm_gpu_access() wait (paging_cv, convert_waiters); another range lock
     * is refused by the relock rules. vidmm_gpu_access() and vidmm_invalidate_cache() of large
     * ranges set it too, with 'hold' raised but not locked (lock.c vm_convert_begin()): a lock
     * then waits. */
    bool converting;
};

/* The part of a swizzled surface a range lock untiles and tiles back (issue 16, lock.c): the
 * subresources [mip0, mip0 + nmip) x [layer0, layer0 + nlayer), and with 'has_box' only 'box'
 * of the one subresource. 'whole': the whole surface (the whole-allocation lock). */
struct vm_part {
    bool whole, has_box;
    uint32_t mip0, nmip, layer0, nlayer;
    struct vidmm_box box;
};

struct vm_range {
    bool acquired;
    struct vm_alloc *a;
    uint32_t private_data;
    uint32_t segment_id;
    uint64_t lru;
    bool active;                /* inside a lock */
    uint8_t *view;              /* the linear view (page-aligned) */
    uint8_t *snap;              /* what the view showed when the lock began (writable locks
                                   without a write-watch) */
    size_t view_len;
    size_t view_defined;        /* bytes from the view's start that some untiling has written (a
                                   Discard lock shows them as they are: lock.c range_open()) */
    /* The pages of the view the CPU wrote (os.h vmos_wtrack_*: userfaultfd's asynchronous
     * write-protect; the engine installs no signal handler). Made on the view's first writable
     * lock unless dev->range_watch is off; 'ww_failed' once the kernel refused it (then the
     * snapshot is compared, as before). 'ww_armed': this lock's writes are being recorded;
     * 'ww_protected': pages of the view are still write-protected since (lock.c range_open()
     * lifts it before untiling). */
    struct vmos_wtrack *ww;
    bool ww_failed, ww_armed, ww_protected;
    /* The lazy view (VIDMM_DEVICE_LAZY_RANGES): filled per page on first access while a lock
     * holds it (lazy_armed), its written pages tiled back at unlock. 'lazy_failed' once the
     * kernel refused one: the eager view serves from then on. */
    struct vmos_lazy *lazy;
    bool lazy_failed, lazy_armed, lazy_writable;
    struct vm_lazy_fill *fill;  /* what the lazy view's handler untiles from (lock.c) */
    /* Lazy or eager, chosen per lock from this range's last locks of allocation 'hist_a' (lock.c
     * range_want_lazy()): 'hist_cost' the work of the last lock as a lazy view did it or would
     * have, in bytes of eager untiling (UINT64_MAX: nothing known); 'hist_skip' eager locks to go
     * before a lazy one probes again ('hist_waiting': counting them), 'hist_backoff' the last such
     * wait; 'hist_eager' this lock went eager by history, 'hist_probe' as the end of a wait,
     * its write-watch probe (range_want_track()) standing in for the lazy probe; 'hist_guess'
     * 'hist_cost' is such a probe's (writes only: what the lock reads is not seen); 'hist_sparse'
     * an eager lock's write-watch saw little written: the wait's end probes lazy. */
    /* Tracked or not, per eager writable lock of a whole part (lock.c range_want_track()): the
     * write-watch's verdict on the last tracked lock of allocation 'tr_a' ('tr_dense': it wrote
     * more than the break-even), the untracked locks to go before the next tracked one
     * ('tr_skip') and the last such wait ('tr_backoff'); 'untracked': this lock tiles back its
     * whole part at unlock, with neither write-watch nor snapshot. */
    const struct vm_alloc *tr_a;
    uint32_t tr_skip, tr_backoff;
    uint64_t tr_limit;          /* pages written above which this tracked lock counts as dense */
    bool tr_dense, untracked;
    /* An untracked lock that probes (lock.c range_want_track()): 'tr_n' pages write-watched at
     * each of VM_TRACK_PROBE_SPANS places 'tr_stride' pages apart, the first at page 'tr_lo';
     * 'tr_probes' moves them. */
    bool tr_probe;
    bool hist_guess;            /* (with the hist_ fields below: in this padding, so that the
                                   struct keeps its size - the device holds VM_MAX_RANGES) */
    uint32_t tr_lo, tr_n, tr_stride, tr_probes;
    const struct vm_alloc *hist_a;
    uint64_t hist_cost;
    uint32_t hist_skip, hist_backoff;
    bool hist_waiting, hist_eager, hist_probe, hist_sparse;
    struct vm_part part;        /* what this lock untiled and tiles back (narrow locks) */
};

/* A queued paging operation. */
struct vm_pop {
    struct vidmm_paging_op op;
    struct vm_alloc *a;         /* NULL for raw operations */
    bool sync;                  /* SynchronousPaging: wait for idle first */
    bool swizzled_geometry;     /* a carries the layout for SWIZZLE / UNSWIZZLE */
    /* MAP / UNMAP: the engine maps the pages itself (the "hardware" part) */
    struct vm_segment *seg;
    uint64_t arena_off;
    uint64_t gpu_fence;         /* UNMAP: the submission fence that must have passed first (the
                                   GPU may still use the pages: issue 17) */
    /* WDDM2 hook, UPDATE_PAGE_TABLE (gpuva.c): the VA space whose entries it writes, and the
     * value of its first entry (the next ones follow page by page). */
    struct vidmm_va_space *va_space;
    uint64_t pte;
    uint8_t cls;                /* WDDM2 hook: its paging-queue priority class, VM_CLS_* (paging.c) */
};

/* The write trackers of plain locks (lock.c watch_*): one per pool a lock pointer can be in -
 * the backing-store arena, each memory segment's memory - each made on its first need, and
 * 'failed' once the kernel refused it. */
struct vm_wtracks {
    struct vmos_wtrack *arena;  /* a memfd mapped shared: see lock.c watch_end() on the lift */
    bool arena_failed;
    struct vmos_wtrack *seg[VIDMM_MAX_SEGMENTS];
    bool seg_failed[VIDMM_MAX_SEGMENTS];
};

/* Paging-queue priority classes (include/vidmm/wddm2.h "Paging queues"): a queue's priority
 * + 1. Every operation not emitted for a paging queue of another priority is NORMAL. */
#define VM_CLS_BELOW_NORMAL 0u
#define VM_CLS_NORMAL 1u
#define VM_CLS_ABOVE_NORMAL 2u
#define VM_NCLS 3u

/* vidmm_device.lock_watch, from VIDMM_LOCK_DIRTY: auto (the policy), off (nothing tracked),
 * always and probe (tests), and data: a store with holes goes by its data (lock.c watch_arm()),
 * nothing is ever armed and nothing measured - for a process that owns userfaultfd itself, and
 * for runs that must not depend on timing (the gate's engine/lock_holes row). */
enum { VM_WATCH_UNKNOWN = 0, VM_WATCH_AUTO = 1, VM_WATCH_OFF = 2, VM_WATCH_ALWAYS = 3, VM_WATCH_PROBE = 4, VM_WATCH_DATA = 5 };

struct vidmm_device {
    uint32_t magic;             /* VM_DEV_LIVE, VM_DEV_DEAD once destroyed (vm_dev_check()) */
    uint32_t handle_tag;        /* this device's tag in its handles, 0..15 (vm_handle_new()) */
    pthread_mutex_t mu;
    pthread_cond_t fence_cv;    /* submission fences progressed */
    pthread_cond_t paging_cv;   /* paging progressed, or the queue got work */
    bool removed;
    uint32_t flags;
    uint64_t wait_timeout_ns;   /* 0: callers wait for the GPU as long as it takes */
    uint32_t nseg;
    struct vm_segment seg[VIDMM_MAX_SEGMENTS];
    struct vidmm_driver drv;
    bool has_paging_cb;
    uint64_t aperture_commit_limit, aperture_committed;

    /* backing stores */
    struct vm_segment sysmem;   /* only its lists: allocations whose content is in system memory */
    struct vmos_arena arena;
    struct vmr_set arena_space;
    uint64_t sysmem_used;

    /* handles: index -> instance; generation in the top 8 bits of a handle */
    struct vm_alloc **table;
    uint8_t *gen;
    uint32_t table_cap, table_top;
    uint32_t *free_idx;
    uint32_t nfree;
    uint64_t live;
    /* freed instances kept for reuse (alloc.c vm_instance_new()), linked through res_next */
    struct vm_alloc *inst_cache;
    uint32_t inst_cached;

    /* submission fences */
    uint64_t fence_issued, fence_done;

    /* paging */
    struct vm_pop *q;           /* ring, in fence order (an operation taken from its middle
                                   leaves the rest in order) */
    size_t q_cap, q_head, q_len;
    size_t q_n[VM_NCLS];        /* queued operations per priority class */
    uint64_t paging_issued;
    uint64_t paging_done;       /* every operation up to this fence has run (a higher class's
                                   operation past it may have run too: cls_done) */
    uint64_t cls_done[VM_NCLS]; /* the last operation of each class that has run: a class runs
                                   in fence order, so every one of it up to there has */
    uint64_t exec_fence;        /* the operation running now (executing), and its class */
    uint8_t exec_cls;
    uint8_t emit_cls;           /* the class vm_emit() gives operations (set by a call that
                                   pages for a paging queue, VM_CLS_NORMAL otherwise) */
    uint64_t sync_paging_fence; /* the last paging operation of a SynchronousPaging allocation:
                                   no submission is issued before it completed (spec 15.25) */
    vidmm_handle sync_paging_handle; /* whose operation that is */
    uint64_t fatal_fence;       /* the paging fence whose failure removed the device, 0 if none */
    bool executing;             /* a thread is running an operation */
    uint32_t paging_blocked;    /* the running operation waits for a submission fence */
    uint64_t paging_blocked_on; /* ... this one (paging.c wait_fence()) */
    uint32_t hold_waiters;      /* destroys waiting for holders to let go (paging_cv) */
    uint32_t convert_waiters;   /* calls waiting for a lock's conversion to end (paging_cv; lock.c) */
    uint32_t converting;        /* allocations marked 'converting' now: 0 lets vm_wait_converting()
                                   skip its lookups (the common case: submit pays nothing) */
    bool stopping;
    uint32_t nthreads;
    pthread_t threads[VM_MAX_THREADS];

    /* swizzling ranges */
    uint32_t nranges;
    bool range_watch;           /* find what the CPU wrote through a range with a write-watch
                                   (VIDMM_RANGE_DIRTY=snapshot turns it off) */
    bool range_untracked;       /* VIDMM_RANGE_DIRTY=off: no eager range lock tracked (a
                                   baseline for the benchmarks; lock.c range_want_track()) */
    bool range_watch_small;     /* narrow parts below VM_PART_SNAPSHOT_MAX too (lock.c; issue 16:
                                   VIDMM_RANGE_DIRTY=watch) */
    bool lazy_ranges;           /* VIDMM_DEVICE_LAZY_RANGES, unless VIDMM_LAZY=off */
    bool lazy_always;           /* VIDMM_LAZY_HISTORY=off: every range lock lazy, whatever its history */
    uint8_t lock_watch;         /* plain writable locks record the pages written, so that the
                                   copy-back and the cache flush cover only those (lock.c; issue
                                   16): VM_WATCH_*, from VIDMM_LOCK_DIRTY read at the first lock
                                   that could use it */
    struct vm_wtracks *wtracks; /* the write trackers of plain locks (lock.c), made on first need */
    uint32_t move_ns[2];        /* issue 31: what moving a page costs here, measured on the
                                   device's own large moves (ns a page, a running average; 0:
                                   none yet): [0] a copy (paging.c TRANSFER), [1] a cache flush
                                   (submit.c) - vm_note_move() */
    struct vm_range ranges[VM_MAX_RANGES];
    pthread_mutex_t range_cb_mu; /* serialises the driver's range callbacks */

    /* the disk tier (swap.c) */
    struct vmio *io;            /* NULL: no disk tier */
    uint64_t budget;            /* sysmem_budget */
    uint64_t writing;           /* bytes of write-outs in flight */
    uint64_t backoff_until;     /* no write-out before (CLOCK_MONOTONIC ns) after a failure */
    struct vmr_set warm;        /* arena ranges of written-out allocations kept faulted in for
                                   read-backs (taken in arena_space too) */
    uint64_t warm_bytes;
    pthread_cond_t io_cv;       /* a disk read or write completed */
    uint64_t io_fence_issued;
    uint64_t *io_out;           /* paging fences of reads in flight, increasing */
    size_t n_io_out, cap_io_out;
    struct vmio_req *pending[VM_SWAP_BATCH + 1]; /* to submit once the mutex is released */
    unsigned npending;

    /* log */
    struct vidmm_paging_op *log;
    uint32_t log_cap, log_head, log_len;

    uint64_t clock;             /* LRU clock */
    uint32_t tag;               /* submission planning tag */
    struct vidmm_stats st;      /* counters (segments[] filled on query) */
    struct vm_w2_dev w2;        /* WDDM2 hook: the WDDM2 model's device state (wddm2.h) */
    struct vm_offer_dev offer;  /* offer hook: the offered allocations by priority (offer.h) */
};

/* device.c */
/* vm_dev_check(): 0 for a live device; for NULL, or a device destroyed (its shell still in the
 * quarantine: device.h says how long), the refusal's line and VIDMM_E_INVALID_ARG. Every public
 * call taking a device calls it before anything else touches the device: one compare. */
int vm_refuse_dev(const vidmm_device *dev, const char *call);
static inline int vm_dev_check(const vidmm_device *dev, const char *call)
{
    if (VIDMM_LIKELY(dev != NULL && dev->magic == VM_DEV_LIVE))
        return 0;
    return vm_refuse_dev(dev, call);
}
#define VM_DEV_CHECK(dev)                                                                          \
    do {                                                                                           \
        int dev_err_ = vm_dev_check(dev, __func__);                                                \
        if (dev_err_)                                                                              \
            return dev_err_;                                                                       \
    } while (0)
/* vm_lookup(): the live instance 'h' names, NULL if none (inline: residency calls look up
 * thousands in a row). */
static inline struct vm_alloc *vm_lookup(vidmm_device *dev, vidmm_handle h)
{
    uint32_t i = h & VM_HANDLE_INDEX_MASK;
    if (i == 0 || i > dev->table_top)
        return NULL;
    struct vm_alloc *a = dev->table[i];
    return a && a->handle == h ? a : NULL;
}
int vm_handle_new(vidmm_device *dev, struct vm_alloc *a);
void vm_handle_free(vidmm_device *dev, vidmm_handle h);
/* vm_deadline_for(): the deadline of a wait starting now under the device's wait_timeout_ns;
 * false when the device has none (wait as long as it takes). */
struct timespec;
bool vm_deadline_for(const vidmm_device *dev, struct timespec *dl);
/* vm_cond_wait(): pthread_cond_wait on the device mutex, until 'dl' if not NULL; returns
 * VIDMM_E_TIMEOUT when the deadline passed (the caller checks its condition again). */
int vm_cond_wait(vidmm_device *dev, pthread_cond_t *cv, const struct timespec *dl);
/* vm_enter() takes the device mutex (held on return either way) and finds 'h'; NULL with '*err'
 * (VIDMM_E_DEVICE_REMOVED, VIDMM_E_INVALID_ARG) when the call cannot go on. */
struct vm_alloc *vm_enter_(vidmm_device *dev, vidmm_handle h, int *err, const char *call);
#define vm_enter(dev, h, err) vm_enter_(dev, h, err, __func__)
/* vm_check_handles(): the device is not removed and every handle is known (mutex held). */
int vm_check_handles_(vidmm_device *dev, const vidmm_handle *h, uint32_t n, const char *call);
#define vm_check_handles(dev, h, n) vm_check_handles_(dev, h, n, __func__)
/* vm_refuse_handle(): VIDMM_E_INVALID_ARG for a handle naming nothing, logged (vidmm_refuse()). */
int vm_refuse_handle(const char *call, vidmm_handle h);
/* vm_deadline(): CLOCK_REALTIME now + timeout_ns, for pthread_cond_timedwait (UINT64_MAX: now). */
void vm_deadline(uint64_t timeout_ns, struct timespec *dl);

/* alloc.c */
bool vm_busy(const vidmm_device *dev, const struct vm_alloc *a, bool writes_only);
struct vm_alloc *vm_instance_new(vidmm_device *dev, struct vm_group *g);
void vm_instance_free(vidmm_device *dev, struct vm_alloc *a);
/* vm_instance_cache_free() frees the instances the device keeps for reuse (device destroy). */
void vm_instance_cache_free(vidmm_device *dev);
int vm_backing_ensure(vidmm_device *dev, struct vm_alloc *a);
/* vm_backing_release(): the backing store's pages go back to the system (no paging may still
 * read or write them); caller memory (EXISTING_*) is left alone. */
void vm_backing_release(vidmm_device *dev, struct vm_alloc *a);
/* vm_release_stale_backing(): while system memory is over budget, the backing stores of
 * allocations whose content is in a memory segment (stale copies) are released. */
void vm_release_stale_backing(vidmm_device *dev);
int vm_materialize(vidmm_device *dev, struct vm_alloc *a);
void vm_set_where(vidmm_device *dev, struct vm_alloc *a, uint32_t where);
void vm_sysmem_unlist(vidmm_device *dev, struct vm_alloc *a);
void vm_touch(vidmm_device *dev, struct vm_alloc *a);
/* lock.c: frees what a lazy view's handler untiled from (NULL is ignored). */
void vm_lazy_fill_free(struct vm_lazy_fill *f);

/* victims.c */
int vm_res_link(struct vm_segment *s, struct vm_alloc *a);
void vm_res_unlink(struct vm_segment *s, struct vm_alloc *a);
void vm_res_touch(struct vm_segment *s, struct vm_alloc *a);
/* vm_res_bucket(): the bucket of priority 'prio' in 's', NULL if none. It stays where it is
 * until an allocation is linked into or unlinked from 's' (vm_res_link(), vm_res_unlink()). */
struct vm_bucket *vm_res_bucket(struct vm_segment *s, uint32_t prio);
void vm_res_reprioritise(struct vm_segment *s, struct vm_alloc *a);

/* place.c */
enum vm_place_use { VM_USE_READ = 1, VM_USE_WRITE = 2, VM_USE_ANY = 3, VM_USE_MEMORY_ONLY = 4,
                    VM_USE_APERTURE_ONLY = 8, VM_USE_CPU_VISIBLE = 16 };
int vm_make_resident(vidmm_device *dev, struct vm_alloc *a, unsigned use, bool donot_wait);
int vm_evict_one(vidmm_device *dev, struct vm_alloc *a, bool unswizzle, bool special);
void vm_unplace(vidmm_device *dev, struct vm_alloc *a);
uint8_t *vm_content_ptr(vidmm_device *dev, struct vm_alloc *a);

/* paging.c */
int vm_paging_start(vidmm_device *dev, uint32_t threads);
void vm_paging_stop(vidmm_device *dev);
uint64_t vm_emit(vidmm_device *dev, const struct vm_pop *p);
int vm_wait_paging(vidmm_device *dev, uint64_t fence);
int vm_wait_paging_locked(vidmm_device *dev, uint64_t fence);
int vm_wait_paging_until(vidmm_device *dev, uint64_t fence, const struct timespec *dl);
int vm_wait_paging_nowait(vidmm_device *dev, uint64_t fence);
/* vm_paging_class_of(): the class of queued or running operation 'fence'; -1 when it has run. */
int vm_paging_class_of(const vidmm_device *dev, uint64_t fence);
/* vm_paging_run_some(): one step of a waiter that runs the queue itself (no paging threads)
 * or waits for those that do, as vm_wait_paging_until() does; VIDMM_E_TIMEOUT at 'dl'. */
int vm_paging_run_some(vidmm_device *dev, const struct timespec *dl);

/* submit.c. vm_cache_gpu_use(): spec 15.24 for a submission in which the GPU uses 'a' (writes
 * it when 'write'), vidmm_submit() and vidmm_va_submit() alike: the CPU's writes to a Cached
 * allocation in a segment that does not snoop are flushed first, and a GPU write there makes
 * the next CPU access invalidate first (lock.c, lock2.c). Mutex held. */
void vm_cache_gpu_use(vidmm_device *dev, struct vm_alloc *a, bool write);
/* lock.c. vm_note_move(): 'ns' spent moving 'bytes' as a copy (kind 0) or a cache flush (kind 1),
 * for the plain locks' tracking policy; moves under VM_MOVE_TIMED_MIN say little and are ignored
 * - the callers do not even read the clock for them (two clock reads cost more than a small
 * move's bookkeeping: the gate's rows of small transfers grew 1-2.5% with them). Called with
 * dev->mu held. vm_now_ns(): CLOCK_MONOTONIC in ns. */
#define VM_MOVE_TIMED_MIN (256u * 1024u)
void vm_note_move(vidmm_device *dev, int kind, uint64_t ns, uint64_t bytes);
/* lock.c. vm_watch_forget(): the backing store of 'a' goes back to the arena - its tracking
 * registration ends first. Called with dev->mu held. */
void vm_watch_forget(vidmm_device *dev, struct vm_alloc *a);
/* lock.c. vm_watch_leave(): 'a' leaves its place in a segment - the pages its locks left armed
 * there are lifted first (the next occupant's writes would take a fault each). Called with
 * dev->mu held (place.c give_space()). */
void vm_watch_leave(vidmm_device *dev, struct vm_alloc *a);
uint64_t vm_now_ns(void);

/* swap.c */
int vm_swap_open(vidmm_device *dev, const struct vidmm_device_desc *d);
void vm_swap_close(vidmm_device *dev);
void vm_budget(vidmm_device *dev);
void vm_unlock_and_page(vidmm_device *dev);
int vm_swap_in(vidmm_device *dev, struct vm_alloc *const *as, uint32_t n, bool wait, uint64_t *fence);
void vm_swap_forget(vidmm_device *dev, struct vm_alloc *a);
void vm_swap_stats(vidmm_device *dev, struct vidmm_stats *out);

/* lock.c */
void vm_range_release_alloc(vidmm_device *dev, struct vm_alloc *a);
/* vm_locks_drop(): every lock of 'a' ends (removal, destroy); waits (mutex released) for a
 * conversion of its bytes in progress to finish first. */
void vm_locks_drop(vidmm_device *dev, struct vm_alloc *a);
/* vm_wait_converting(): when a listed allocation is being converted by a lock or unlock
 * (vm_alloc.converting), waits once on paging_cv and returns true: the mutex was released, the
 * caller looks everything up again. False at once when none is. */
bool vm_wait_converting(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count);
/* vm_convert_begin() marks 'a' converting and held and releases the device mutex, for a call
 * that works on its bytes meanwhile (vidmm_gpu_access(), vidmm_invalidate_cache());
 * vm_convert_end() takes the mutex back, clears the marks and wakes the waiters. Nothing moves,
 * evicts, writes out or destroys 'a' in between; a lock, unlock, submission or make-resident
 * of it waits. */
void vm_convert_begin(vidmm_device *dev, struct vm_alloc *a);
void vm_convert_end(vidmm_device *dev, struct vm_alloc *a);

/* vm_bucket_touch(): 'a', in bucket 'b', goes to its tail - the most recently used (its lru
 * is the newest). vm_res_touch() without the bucket search, for a caller touching many. */
static inline void vm_bucket_touch(struct vm_bucket *b, struct vm_alloc *a)
{
    if (b->tail == a)
        return;
    if (a->res_prev)
        a->res_prev->res_next = a->res_next;
    else
        b->head = a->res_next;
    a->res_next->res_prev = a->res_prev;
    a->res_prev = b->tail;
    a->res_next = NULL;
    b->tail->res_next = a;
    b->tail = a;
}

/* Small helpers. */
static inline uint64_t vm_round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

#endif /* VIDMM_LIB_ENGINE_ENGINE_H */
