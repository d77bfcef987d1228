/* SPDX-License-Identifier: MIT */
/* lib/engine/wddm2.h - the WDDM2 model's state inside the engine (include/vidmm/wddm2.h):
 * what an allocation and a device carry for GPU VA spaces (gpuva.c) and residency and budgets
 * (residency.c), and the hooks the rest of the engine calls (Lock2 and UpdateAllocationProperty:
 * lock2.c). Included by engine.h; everything
 * here is guarded by the device mutex unless a comment says otherwise. */
#ifndef VIDMM_LIB_ENGINE_WDDM2_H
#define VIDMM_LIB_ENGINE_WDDM2_H

#include <stdint.h>
#include <stdbool.h>
#include "vidmm/wddm2.h"

struct vm_alloc;
struct vm_pop;
struct vm_va_map;
struct vm_va_space_list;
struct vidmm_va_space;
struct vidmm_paging_queue;

/* What the content of a resident allocation was when it was paged in, for NOT_WRITTEN_TO
 * evictions (residency.c): only then does the engine know a dropped copy can be rebuilt. */
enum vm_w2_origin {
    VM_W2_ORIGIN_UNKNOWN = 0,   /* transfer it out */
    VM_W2_ORIGIN_FILL,          /* it was the fill pattern: page in by FILL again */
    VM_W2_ORIGIN_BACKING        /* the backing store still holds it */
};

/* Per allocation (struct vm_alloc.w2). */
struct vm_w2_alloc {
    /* The residency count and the list scratch are in struct vm_alloc's hot line (engine.h:
     * w2_res_count, w2_tag, w2_n). */
    int32_t group;              /* budget group charged while w2_res_count > 0, -1: none */
    uint32_t process;           /* charged process */
    uint32_t pte_seg;           /* what its entries point at, as queued: segment ID (0: invalid) */
    uint64_t charged;           /* bytes charged */
    struct vm_va_map *maps;     /* its GPU VA mappings (a_next list) */
    uint64_t pte_off;           /* with pte_seg: the offset in that segment */
    uint8_t origin;             /* enum vm_w2_origin, while placed */
};

struct vm_w2_proc {
    uint32_t process;
    uint64_t budget[2], usage[2], reservation[2];
    uint64_t need[2];           /* scratch of a make-resident: bytes it would add */
    uint32_t tag;               /* scratch: the call that last touched 'need' */
    bool removed;               /* its device was removed by a GPU fault (wddm2.h Processes) */
};

/* A budget-change callback's registration. */
struct vm_w2_bcb {
    uint64_t cookie;
    uint32_t process;
    bool gone;                  /* unregistering: no new call starts */
    uint32_t busy;              /* calls running now (mutex released) */
    vidmm_budget_callback cb;
    void *arg;
};

/* Per device (vidmm_device.w2). */
struct vm_w2_dev {
    bool on;                    /* VIDMM_DEVICE_WDDM2 */
    uint64_t group_max[2];      /* sizes of the segments of each budget group */
    struct vm_w2_proc *procs;
    uint32_t nprocs, cap_procs;
    struct vidmm_va_space *spaces;  /* live VA spaces */
    struct vidmm_va_space *dead;    /* destroyed, freed once paging passed their last op */
    uint32_t tag;
    uint32_t nremoved;          /* processes with 'removed' set: 0 skips every lookup */
    bool faulted;
    uint64_t fault_va;
    uint32_t fault_process;
    vidmm_handle fault_alloc;
    struct vidmm_paging_queue *queues; /* live paging queues (pagingq.c) */
    struct vm_w2_bcb *bcbs;     /* budget callbacks, in registration order (residency.c) */
    uint32_t nbcbs, cap_bcbs;
    uint64_t next_cookie;
};

/* ---------------------------------------------------------------------------------------------
 * Hooks (each call site says "WDDM2 hook" in a comment).
 * ------------------------------------------------------------------------------------------- */
/* device.c check_desc(): the WDDM2 rules of the descriptor (no swizzling ranges, no lazy
 * ranges, at most 30 segments, a segment in one budget group). 0 or VIDMM_E_INVALID_ARG. */
int vm_w2_check_desc(const struct vidmm_device_desc *d);
/* device.c vidmm_device_create() / device_free(). */
void vm_w2_init(vidmm_device *dev, const struct vidmm_device_desc *d);
void vm_w2_fini(vidmm_device *dev);
/* alloc.c check_alloc(): renaming refused in WDDM2 mode (USE_ALTERNATE_VA does not exist in
 * the WDDM2 flag layout: vm_w2_check_flags()). */
int vm_w2_check_alloc(const vidmm_device *dev, const struct vidmm_alloc_desc *d);
/* vm_w2_leaving() (gpuva.c): invalidates 'a''s page-table entries before the paging record that
 * empties its placement is queued; vm_w2_placed() validates them after the one that fills the
 * next. */
void vm_w2_leaving(vidmm_device *dev, struct vm_alloc *a, bool evicting);
/* The flags of the WDDM2 layout (spec 4.2) a WDDM1 reading would take for something else. */
#define VM_W2_ALLOC_OWN \
    (VIDMM_W2_ALLOC_DISABLE_LARGE_PAGE_MAPPING | VIDMM_W2_ALLOC_CREATE_IN_VPR | VIDMM_W2_ALLOC_MAP_APERTURE_CPU_VISIBLE)
/* vm_w2_check_flags(): a WDDM2 device's allocation flags, in their layout: reserved bits 0,
 * HistoryBuffer alone. The WDDM1 rules of the bits the layouts share follow (alloc.c). */
int vm_w2_check_flags(uint32_t flags);
/* lock.c vidmm_lock() (to be wired): DISCARD, NO_EXISTING_REFERENCE, ACQUIRE_APERTURE and
 * USE_ALTERNATE_VA refused in WDDM2 mode. 0 or VIDMM_E_INVALID_ARG. */
int vm_w2_check_lock(const vidmm_device *dev, uint32_t lock_flags);
/* submit.c: allocation-list residency (vidmm_submit(), vidmm_make_resident()) refused. */
int vm_w2_refuse_list(const vidmm_device *dev, const char *call);
/* vm_w2_enter() takes the device mutex (held on return either way) for WDDM2 call 'call' and
 * returns VIDMM_E_DEVICE_REMOVED, the refusal of a device not created WDDM2, or 0. */
int vm_w2_enter(vidmm_device *dev, const char *call);
/* alloc.c vm_set_where(): the allocation's placement may have changed; queue the page-table
 * updates of its mappings (gpuva.c). Cheap when it has none. */
void vm_w2_placed(vidmm_device *dev, struct vm_alloc *a);
/* alloc.c vm_instance_free(): its mappings go, its references and charge too. */
void vm_w2_alloc_free(vidmm_device *dev, struct vm_alloc *a);
/* paging.c run_one(): an UPDATE_PAGE_TABLE operation runs - write its entries. */
void vm_va_apply(const struct vm_pop *p);

/* Processes (include/vidmm/wddm2.h "Processes", issue 27 items 4 and 5; residency.c).
 * vm_w2_proc_removed(): 'process''s device was removed by a GPU fault. vm_w2_named(): the
 * check of a call naming 'process' (0: none): VIDMM_E_DEVICE_REMOVED when removed, else 0.
 * vm_w2_owned(): 'a' may be listed by a call naming 'process' (0, its creator, or shared), else
 * VIDMM_E_INVALID_ARG logged with 'call'; vm_w2_owned_list() the same over 'u'.
 * vm_w2_remove_process(): a GPU fault in 'process''s work - its device removed, its
 * allocations' references, Lock2 locks and pins dropped; 0, or VIDMM_E_NO_MEMORY (no state for
 * it: the caller removes the whole device). vm_w2_object_gone(): a VA space or paging queue of
 * 'process' was destroyed: its removal ends once it has neither. Mutex held for all. */
bool vm_w2_proc_removed(const vidmm_device *dev, uint32_t process);
int vm_w2_named(const vidmm_device *dev, uint32_t process);
int vm_w2_owned(const struct vm_alloc *a, uint32_t process, const char *call);
int vm_w2_owned_list(struct vm_alloc *const *u, size_t n, uint32_t process, const char *call);
/* vm_w2_named_list() (residency.c): the process checks of a residency call over 'u' - by its
 * paging 'queue' (NULL: none; a live queue of 'dev', a 'process' other than the queue's refused,
 * room for a fence value reserved, '*q' set) or by 'process' alone. 0, VIDMM_E_DEVICE_REMOVED,
 * VIDMM_E_INVALID_ARG (logged with 'call') or VIDMM_E_NO_MEMORY. */
int vm_w2_named_list(vidmm_device *dev, struct vidmm_paging_queue *queue, uint32_t process, struct vm_alloc *const *u,
                     size_t n, struct vidmm_paging_queue **q, const char *call);
int vm_w2_remove_process(vidmm_device *dev, uint32_t process);
void vm_w2_object_gone(vidmm_device *dev, uint32_t process);
/* lock2.c, for vm_w2_remove_process(): 'a''s Lock2 locks end (as by its last Unlock2) and,
 * with 'unpin', its Unmoveable pin goes (Overlay / Capture stay pinned). */
void vm_lock2_process_gone(vidmm_device *dev, struct vm_alloc *a, bool unpin);
/* pagingq.c: the process of a live queue; whether 'process' has a live queue. gpuva.c:
 * whether it has a VA space. */
uint32_t vm_pq_process(const struct vidmm_paging_queue *q);
bool vm_pq_any(const vidmm_device *dev, uint32_t process);
bool vm_va_has_space(const vidmm_device *dev, uint32_t process);

/* lock2.c: a locked allocation (Lock2, or a plain lock) that is not placed and has no aperture
 * segment in its supported set cannot be made resident while the lock lasts (spec 6.6: not
 * committed to a memory segment). residency.c vidmm_wddm2_make_resident(), before anything
 * changes. 0 or VIDMM_E_NOT_AVAILABLE (logged with 'call'). */
int vm_lock2_refuse_commit(const vidmm_device *dev, const struct vm_alloc *a, const char *call);
/* lock.c, for lock2.c: the pointer of a plain lock without flags where 'a' is now (lock_direct()),
 * and the end of one lock level (unlock_one()). */
int vm_lock_plain(vidmm_device *dev, struct vm_alloc *a, uint8_t **ptr);
void vm_unlock_one(vidmm_device *dev, struct vm_alloc *a);
/* alloc.c, for lock2.c: the creation rules (spec 15.2) on a changed descriptor. */
int vm_check_alloc_desc(const vidmm_device *dev, const struct vidmm_alloc_desc *d);

/* pagingq.c. vm_pq_progress(): paging ran (paging.c run_one(), device mutex held): pass the
 * queues' fence values whose operations have all run. vm_pq_free_all(): device destroy. */
void vm_pq_progress(vidmm_device *dev);
void vm_pq_free_all(vidmm_device *dev);
/* vm_pq_lookup(): 'q' if it is a live queue of 'dev', else NULL. vm_pq_check(): every listed
 * allocation of 'q''s process or shared, else VIDMM_E_INVALID_ARG (logged with 'call'). */
struct vidmm_paging_queue *vm_pq_lookup(vidmm_device *dev, const struct vidmm_paging_queue *q);
int vm_pq_check(const struct vidmm_paging_queue *q, struct vm_alloc *const *u, size_t n, const char *call);
/* vm_pq_class(): the class (VM_CLS_*) of 'q''s paging. vm_pq_reserve(): room for one more
 * fence value, before the call changes anything (0 or VIDMM_E_NO_MEMORY). vm_pq_issue(), after
 * a successful vm_pq_reserve(): the next value of 'q''s fence, passing once every operation up
 * to each allocation's 'paging_fence' has run; '*pending' says it has not yet. */
uint8_t vm_pq_class(const struct vidmm_paging_queue *q);
int vm_pq_reserve(struct vidmm_paging_queue *q);
uint64_t vm_pq_issue(vidmm_device *dev, struct vidmm_paging_queue *q, struct vm_alloc *const *u, size_t n,
                     bool *pending);

/* gpuva.c, for residency.c. */
void vm_va_spaces_free(vidmm_device *dev);
void vm_va_alloc_unmap_all(vidmm_device *dev, struct vm_alloc *a);

#endif /* VIDMM_LIB_ENGINE_WDDM2_H */
