/* SPDX-License-Identifier: MIT */
/* include/vidmm/wddm2.h - the WDDM 2.x memory model on a device created with
 * VIDMM_DEVICE_WDDM2 (device.h): GPU virtual-address spaces whose page-table entries follow
 * the allocations they map, residency by a per-device residency list with per-allocation
 * reference counts (MakeResident / Evict), and per-process budgets per segment group.
 * Every rule cited as "spec 15.n" is item n of section 15 of shared/spec/wddm-vidmm.md,
 * "spec 12" its section 12.
 *
 * WDDM2 mode in one paragraph. The device's WDDM1-only mechanisms are refused with
 * VIDMM_E_INVALID_ARG: swizzling ranges (a non-zero vidmm_device_desc.swizzling_ranges,
 * VIDMM_DEVICE_LAZY_RANGES), renaming (vidmm_alloc_desc.max_renaming != 0), the WDDM1-only
 * allocation flags (a WDDM2 device reads the WDDM2 flag layout, below: no Swizzled, no
 * UseAlternateVA), residency through allocation lists (vidmm_submit(), vidmm_make_resident()), and
 * the lock flags that ask for renaming or a swizzling range (DISCARD, NO_EXISTING_REFERENCE,
 * ACQUIRE_APERTURE, USE_ALTERNATE_VA). A device has at most 30 segments (ID 31 is the
 * implicit system-memory segment, spec 15.1). Allocations become resident only through
 * vidmm_wddm2_make_resident(); an allocation on the residency list (reference count above 0)
 * is never chosen as an eviction victim. Work is submitted with vidmm_va_submit(), which
 * names GPU virtual-address ranges; touching a range that is unmapped, or whose allocation is
 * not on the residency list, is a GPU page fault: the faulting process's device is removed
 * (spec 12, 15.21; Processes below). The CPU locks an allocation with vidmm_wddm2_lock2() (Lock2: no flags, no renaming, no waiting
 * for the GPU, spec 6.6, 15.23); vidmm_wddm2_update_alloc_property() changes its segment sets
 * and preference (spec 12). Every function here returns VIDMM_E_INVALID_ARG on a device not
 * created in WDDM2 mode (offer, reclaim and power transitions excepted: see their section).
 *
 * Thread safety: every function is safe to call from several threads, except that a VA space
 * must not be used (translated, mapped, submitted to) while or after it is destroyed. */
#ifndef VIDMM_WDDM2_H
#define VIDMM_WDDM2_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "api.h"
#include "common.h"
#include "device.h"

VIDMM_BEGIN_DECLS

/* ---------------------------------------------------------------------------------------------
 * Processes (issue 27 items 4 and 5; Doc MAKERESIDENT, Doc NONRES).
 *
 * A vidmm device is the adapter; each process using it has, in WDDM, a device of its own, and
 * an allocation belongs to the process that created it (vidmm_alloc_desc.process). Every WDDM2
 * call names its process: a VA space's calls its space's process, a paging queue's its
 * queue's, Lock2 its 'process' argument, and the calls below through a 'process' field or
 * argument (vidmm_wddm2_make_resident() through its queue too). Give processes non-zero ids:
 * 0 in a 'process' field names no process (a caller built before the field existed, or one
 * that never sets it) and such a call is checked for nothing of this section; the two calls
 * with a 'process' argument refuse 0. VA spaces, paging queues and Lock2 take 0 as an id like
 * any other, but a process 0 cannot be named, so a fault in its space removes the whole vidmm
 * device, as before this section. Offer and reclaim check ownership on WDDM1 devices too.
 *
 *  - Ownership: "all allocations must be created on the device hPagingQueue is created for"
 *    (Doc MAKERESIDENT). A call that names process P and lists an allocation created by
 *    another process that is not VIDMM_ALLOC_KIND_SHARED is refused with VIDMM_E_INVALID_ARG,
 *    nothing changed: make-resident, evict, offer, reclaim, Lock2, Unlock2, the residency
 *    query, UpdateAllocationProperty, and vidmm_va_map() (the space's process). A shared
 *    allocation may be listed by every process (it was opened from its shared handle); only its
 *    creator may lock it (spec 6.3 rule 10).
 *  - Removal: a GPU page fault removes the device "for the application that generated the
 *    error" (Doc NONRES) - the faulting process's, not the adapter: from then on every call
 *    naming that process returns VIDMM_E_DEVICE_REMOVED (its VA space's and paging queues'
 *    calls, those whose 'process' names it, Lock2, vidmm_alloc_create() of an allocation of
 *    it), except vidmm_va_space_destroy(), vidmm_paging_queue_destroy(), vidmm_alloc_destroy()
 *    and the budget calls. Its allocations stay (destroy them) but lose what the removed
 *    device held: their Lock2 locks (ended as by the last Unlock2: a PermanentSysMem copy goes
 *    back; a Lock2 waiting for paging when the fault came returns VIDMM_E_DEVICE_REMOVED), and,
 *    its shared allocations excepted (other processes may hold them), their residency
 *    references (off the residency list, off its budget: victims like any other) and their
 *    Unmoveable pins. Every other process goes on untouched. The removal ends when the
 *    process has destroyed its VA space and every paging queue - as an application destroys its
 *    removed device and creates a new one: it may then create them again. Engine policy: a
 *    MUST_SUCCEED make-resident that fails still removes the whole vidmm device (the call may
 *    name no process), and so does a failed paging operation (the adapter's fault).
 * ------------------------------------------------------------------------------------------- */

/* A success status, not an error: the call did what it was asked but paging it queued is
 * still in flight; wait for the paging fence it returned (vidmm_wddm2_paging_fence_wait())
 * before the GPU uses the allocations (STATUS_PENDING 0x103 / E_PENDING, spec 12).
 * vidmm_error_to_ntstatus() and vidmm_error_to_hresult() map it. */
#define VIDMM_PENDING 1

/* ---------------------------------------------------------------------------------------------
 * Allocation flags (spec 4.2): a WDDM2 device reads vidmm_alloc_desc.flags in the
 * DXGK_ALLOCATIONINFOFLAGS_WDDM2_0 layout. Bits 0-6, 8, 9 and 14-18 are WDDM1's (device.h
 * VIDMM_ALLOC_*: CPU_VISIBLE, PERMANENT_SYSMEM, CACHED, PROTECTED, EXISTING_*,
 * FROM_END_OF_SEGMENT, OVERLAY, CAPTURE, HISTORY_BUFFER, ACCESSED_PHYSICALLY,
 * EXPLICIT_RESIDENCY_NOTIFICATION, HARDWARE_PROTECTED, CPU_VISIBLE_ON_DEMAND) with WDDM1's
 * rules; the three below take the places of WDDM1's Swizzled, UseAlternateVA and LinkInstanced;
 * WDDM1's SynchronousPaging (bit 11) and LinkMirrored (bit 12) are reserved. So a WDDM2
 * allocation is never swizzled (it takes no tiled layout), never an alternate-VA primary, and
 * a reserved bit set is VIDMM_E_INVALID_ARG. The three WDDM2 flags are accepted and change
 * nothing in this model: its GPU VAs have 4 KiB pages only, it has no video protected region,
 * and every aperture allocation is reachable by the CPU through Lock2 already.
 * ------------------------------------------------------------------------------------------- */
#define VIDMM_W2_ALLOC_DISABLE_LARGE_PAGE_MAPPING 0x00000080u /* bit 7 (WDDM2.1: normal page tables) */
#define VIDMM_W2_ALLOC_CREATE_IN_VPR              0x00000400u /* bit 10 (WDDM2.1+; reserved before) */
#define VIDMM_W2_ALLOC_MAP_APERTURE_CPU_VISIBLE   0x00002000u /* bit 13 (WDDM2.9+; reserved before) */
#define VIDMM_W2_ALLOC_RESERVED_MASK              0xFFF81800u /* bits 11 (DXGK_ALLOC_RESERVED17),
                                                                 12 (Reserved02), 19-31 */

/* ---------------------------------------------------------------------------------------------
 * GPU virtual addresses.
 *
 * A VA space is the GPU virtual-address space of one process on the device (WDDM gives every
 * process its own): 48 bits, 4 KiB pages, address 0 never handed out. Reserve a range, map an
 * allocation (or a page range of it) into it, and the space's page-table entries point at the
 * allocation's current placement. Whenever the allocation is paged in, moves or is evicted,
 * the engine queues an UPDATE_PAGE_TABLE paging operation per mapping - in the paging log and
 * through the driver's paging callback like every paging operation - and the entries change
 * when that operation runs, in order with the transfers around it. An entry never points at
 * memory that does not hold its allocation, for a GPU that executes the paging log in order:
 * the records that make entries invalid come before the TRANSFER, DISCARD_CONTENT or
 * UNMAP_APERTURE_SEGMENT that empties the old place (an eviction, a discard, a move - to
 * another segment or to an aperture for Lock2 - and the save of an allocation kept in place
 * across a power transition), and the records that make them valid again come after the
 * TRANSFER, FILL or MAP_APERTURE_SEGMENT that fills the new place (or the restore). A move
 * therefore writes its entries twice: invalid, then valid at the new place. Entries of a
 * non-resident allocation stay mapped but invalid; vidmm_va_translate() then says
 * VIDMM_E_NOT_AVAILABLE.
 *
 * UPDATE_PAGE_TABLE records (struct vidmm_paging_op) carry:
 *   src.segment_address  the GPU VA of the first entry written (src.segment_id 0);
 *   offset_in_pages      its page number (VA / 4096);
 *   size                 bytes covered (entries x 4096);
 *   dst                  where the first entry points (segment ID, BaseAddress + offset), and
 *                        dst_ptr the host view of those bytes; {0, 0} and NULL when the entries
 *                        are made invalid (eviction) or cleared (unmap);
 *   mdl_offset           the page of the allocation the first entry maps;
 *   swizzling_range_data the process of the VA space;
 *   flags                VIDMM_UPDATE_PAGE_TABLE_* below.
 * ------------------------------------------------------------------------------------------- */

/* DXGK_UPDATEPAGETABLEFLAGS (spec 9.4), exact values, in UPDATE_PAGE_TABLE records. */
#define VIDMM_UPDATE_PAGE_TABLE_REPEAT          0x1u  /* (never set by the engine) */
#define VIDMM_UPDATE_PAGE_TABLE_INITIAL_UPDATE  0x2u  /* the entries of a new mapping */
#define VIDMM_UPDATE_PAGE_TABLE_NOTIFY_EVICTION 0x4u  /* made invalid: the allocation was evicted */
#define VIDMM_UPDATE_PAGE_TABLE_USE_64KB_PAGES  0x8u  /* the target segment has USE_64KB_PAGES */

#define VIDMM_VA_BITS 48u               /* a VA space covers [0, 2^48) */
#define VIDMM_VA_RESERVE_ALIGN 65536u   /* reservations the engine places start 64 KiB-aligned */

typedef struct vidmm_va_space vidmm_va_space;
typedef struct vidmm_paging_queue vidmm_paging_queue; /* see Paging queues below */

/* vidmm_va_space_create() creates the VA space of 'process' on 'dev' (one per process at a
 * time). Returns: 0 with '*out' set; VIDMM_E_INVALID_ARG (NULL, not a WDDM2 device, the
 * process already has a VA space); VIDMM_E_NO_MEMORY; VIDMM_E_DEVICE_REMOVED (the device, or the
 * process's while a paging queue of its removed device lives: Processes, above).
 * Lifetime: until vidmm_va_space_destroy() or the device's destroy, whichever is first. */
VIDMM_API int vidmm_va_space_create(vidmm_device *dev, uint32_t process, vidmm_va_space **out);

/* vidmm_va_space_destroy() unmaps everything mapped in 'sp' and frees it. It waits for
 * nothing: paging queued for it finishes later. NULL is ignored. */
VIDMM_API void vidmm_va_space_destroy(vidmm_va_space *sp);

/* vidmm_va_reserve() reserves 'size' bytes of GPU VA (a multiple of 4096, > 0) at 'base', or,
 * with base 0, at the lowest VIDMM_VA_RESERVE_ALIGN-aligned address where they fit.
 * Returns: 0 with '*va' set; VIDMM_E_INVALID_ARG (NULL, size 0 or not page-aligned, base not
 * page-aligned, the range leaves the space or overlaps a reservation: '*va' untouched);
 * VIDMM_E_NO_MEMORY (no room left, or no host memory); VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_va_reserve(vidmm_va_space *sp, uint64_t base, uint64_t size, uint64_t *va);

/* vidmm_va_free() frees the reservation starting at 'va', unmapping what is mapped in it.
 * Returns 0, VIDMM_E_INVALID_ARG (no reservation starts at 'va'), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_va_free(vidmm_va_space *sp, uint64_t va);

/* vidmm_va_map() maps bytes [offset, offset + size) of allocation 'h' at GPU VA 'va'
 * (MapGpuVirtualAddress): the range must lie inside one reservation and overlap no mapping;
 * 'va', 'offset' and 'size' are multiples of 4096, size > 0, and the allocation (of the
 * space's process, or KIND_SHARED) is at least offset + size bytes (rounded size). Queues one
 * UPDATE_PAGE_TABLE operation (INITIAL_UPDATE) writing the entries: valid at once when the
 * allocation is resident and that operation has run, mapped-invalid otherwise.
 * Returns: 0; VIDMM_E_INVALID_ARG (any rule above broken: nothing mapped); VIDMM_E_NO_MEMORY;
 * VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_va_map(vidmm_va_space *sp, uint64_t va, vidmm_handle h, uint64_t offset, uint64_t size);

/* vidmm_va_unmap() removes every mapping inside [va, va + size): at least one, and none may
 * straddle the range's ends. Queues an UPDATE_PAGE_TABLE operation per mapping clearing its
 * entries. Returns 0, VIDMM_E_INVALID_ARG (nothing removed), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_va_unmap(vidmm_va_space *sp, uint64_t va, uint64_t size);

/* Where a GPU VA lives now. */
struct vidmm_va_translation {
    uint32_t segment_id;        /* memory or aperture segment */
    uint32_t reserved;
    uint64_t offset;            /* byte offset in the segment */
    void *cpu;                  /* host view of that byte, for the caller acting as the GPU */
};

/* vidmm_va_translate() translates 'va' through the page-table entries as the paging queue has
 * left them: no lock is taken, nothing is written but '*out' (a few loads; the emulator's GPU
 * may call it per memory access). Valid while the allocation stays where it is: an allocation
 * on the residency list does not move while work using it runs.
 * Returns: 0; VIDMM_E_INVALID_ARG ('va' maps nothing, or is beyond 2^48, or a NULL argument);
 * VIDMM_E_NOT_AVAILABLE (mapped, but the allocation is not resident: a GPU access here is a
 * page fault). */
VIDMM_API int vidmm_va_translate(const vidmm_va_space *sp, uint64_t va, struct vidmm_va_translation *out);

/* One GPU VA range a submission reads or writes. */
struct vidmm_va_ref {
    uint64_t va;
    uint64_t size;              /* > 0 */
    uint32_t flags;             /* VIDMM_REF_WRITE (device.h) or 0 */
    uint32_t reserved;          /* 0 */
};

/* vidmm_va_submit() submits work of the space's process that accesses the listed VA ranges,
 * and returns in '*fence' a submission fence the caller (the GPU) signals with
 * vidmm_fence_signal() once the work is done. Before "scheduling" it the engine brings back
 * every allocation of the list that is on the residency list but was evicted (spec 12: VidMm
 * makes the residency list resident before a device's work runs) and waits for the paging of
 * every referenced allocation. As vidmm_submit() does (spec 15.24), what the CPU wrote to a
 * referenced Cached allocation in a segment that does not snoop is flushed first
 * (flush_cpu_cache), and one the submission writes there is invalidated before the CPU next
 * reads it (invalidate_cpu_cache at the next lock). A range that touches an unmapped page, or
 * a page whose allocation is not on the residency list, is a GPU page fault: the device of the
 * space's process is removed (spec 12, 15.21, Doc NONRES; Processes, above),
 * vidmm_wddm2_last_fault() says where, and VIDMM_E_DEVICE_REMOVED is returned.
 * Returns: 0; VIDMM_E_INVALID_ARG (NULL - 'fence' included: the fence is what ends the work's
 * use of its allocations - count 0 or > 65536, flags not 0, a ref with size 0,
 * a range that wraps or leaves the space, unknown ref flags: nothing submitted);
 * VIDMM_E_NO_MEMORY (a resident-listed allocation could not be brought back);
 * VIDMM_E_TIMEOUT; VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_va_submit(vidmm_va_space *sp, const struct vidmm_va_ref *refs, uint32_t count, uint32_t flags,
                              uint64_t *fence);

/* The GPU page fault that removed a process's device (the latest). */
struct vidmm_gpu_fault {
    size_t size_of;             /* sizeof(struct vidmm_gpu_fault), set by the caller */
    uint64_t va;                /* the first faulting address */
    uint32_t process;           /* of the VA space */
    vidmm_handle allocation;    /* mapped there, 0 when nothing was mapped */
};

/* vidmm_wddm2_last_fault() describes the latest GPU page fault, which removed the device of
 * its process. Returns 0, VIDMM_E_NOT_AVAILABLE (no fault happened), VIDMM_E_INVALID_ARG.
 * Works after removal. */
VIDMM_API int vidmm_wddm2_last_fault(vidmm_device *dev, struct vidmm_gpu_fault *out);

/* ---------------------------------------------------------------------------------------------
 * Residency (spec 12, 15.21).
 * ------------------------------------------------------------------------------------------- */

/* D3DDDI_MAKERESIDENT_FLAGS and D3DDDI_EVICT_FLAGS, exact values. */
#define VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER 0x1u /* succeed over the current budget, still
                                                      not over the maximum budget */
#define VIDMM_MAKE_RESIDENT_MUST_SUCCEED      0x2u /* a failure puts the device in error */
#define VIDMM_EVICT_ONLY_IF_NECESSARY         0x1u /* keep the copy until its space is needed */
#define VIDMM_EVICT_NOT_WRITTEN_TO            0x2u /* the GPU did not write it: may be dropped */

#define VIDMM_RESIDENCY_MAX 10240u      /* D3DKMT_MAKERESIDENT_ALLOC_MAX: handles per call */

/* D3DDDI_MAKERESIDENT. */
struct vidmm_make_resident_args {
    size_t size_of;                     /* sizeof(struct vidmm_make_resident_args) */
    const vidmm_handle *allocations;    /* AllocationList */
    uint32_t count;                     /* NumAllocations, 1..VIDMM_RESIDENCY_MAX */
    uint32_t flags;                     /* VIDMM_MAKE_RESIDENT_* */
    uint32_t made_resident;             /* out: NumAllocations made resident (count or 0) */
    uint32_t reserved;
    uint64_t paging_fence;              /* out: PagingFenceValue - of 'queue' when one is given */
    uint64_t bytes_to_trim;             /* out: NumBytesToTrim */
    /* 0.2 (issue 15): size_of is VIDMM_MAKE_RESIDENT_ARGS_V1_SIZE (a caller built before this
     * field: 'queue' is not read, the device's default queue is used) or at least the whole
     * struct; any other size is refused. */
    vidmm_paging_queue *queue;          /* hPagingQueue: NULL, the device's default queue */
    /* 0.4 (issue 27): size_of VIDMM_MAKE_RESIDENT_ARGS_V2_SIZE (before it: not read, 0). */
    uint32_t process;                   /* the calling process (Processes, above); 0: the
                                           queue's, or none without a queue */
};
/* size_of of the arguments before 'queue', and before 'process', was added. */
#define VIDMM_MAKE_RESIDENT_ARGS_V1_SIZE offsetof(struct vidmm_make_resident_args, queue)
#define VIDMM_MAKE_RESIDENT_ARGS_V2_SIZE offsetof(struct vidmm_make_resident_args, process)

/* vidmm_wddm2_make_resident() adds every listed allocation to the device's residency list, one
 * reference per listing, and pages in those not resident (MakeResident). Atomic: on failure no
 * reference count changed. An allocation is charged to its process's budget (see Budgets)
 * when its count leaves 0. With a 'queue' (see Paging queues) its paging has that queue's
 * priority and 'paging_fence' is a fence of that queue; every listed allocation must then be
 * of the queue's process or KIND_SHARED, as with a 'process' (which, with a queue, must be
 * the queue's).
 * Returns:
 *  - 0: every allocation resident now; 'paging_fence' is its last paging operation (passed);
 *  - VIDMM_PENDING: listed, but paging is in flight: wait for 'paging_fence'
 *    (vidmm_wddm2_paging_fence_wait(), with a queue vidmm_paging_queue_wait()) before the GPU
 *    uses them;
 *  - VIDMM_E_NO_MEMORY: over the process's budget in a group (with CANT_TRIM_FURTHER: over
 *    its maximum budget), or the allocations do not fit the segments even after evicting
 *    everything not on the residency list; 'bytes_to_trim' says how much to evict before
 *    retrying; nothing changed (allocations paged in before the failure stay, off the list);
 *  - VIDMM_E_DEVICE_REMOVED: removed (the device, or the named process's), or MUST_SUCCEED
 *    failed and removed it;
 *  - VIDMM_E_INVALID_ARG: NULL, size_of too small, count 0 or > 10240, unknown flags, an
 *    unknown handle, not a WDDM2 device, a queue not of this device (or destroyed), a
 *    'process' that is not the queue's, an allocation of another process than the named one
 *    and not shared: nothing changed;
 *  - VIDMM_E_NOT_AVAILABLE: a listed allocation is locked (vidmm_wddm2_lock2(), vidmm_lock())
 *    while not resident and has no aperture segment in its set: it may not be committed to a
 *    memory segment until unlocked (spec 6.6); nothing changed;
 *  - VIDMM_E_IO: an allocation on the disk tier could not be read back. */
VIDMM_API int vidmm_wddm2_make_resident(vidmm_device *dev, struct vidmm_make_resident_args *args);

/* D3DKMT_EVICT. */
struct vidmm_evict_args {
    size_t size_of;                     /* sizeof(struct vidmm_evict_args) */
    const vidmm_handle *allocations;
    uint32_t count;                     /* 1..VIDMM_RESIDENCY_MAX */
    uint32_t flags;                     /* VIDMM_EVICT_* */
    uint64_t bytes_to_trim;             /* out: NumBytesToTrim, what the processes of the listed
                                           allocations are still over their budgets */
    /* 0.4 (issue 27): size_of VIDMM_EVICT_ARGS_V1_SIZE (before it: not read, 0). */
    uint32_t process;                   /* the calling process (Processes, above); 0: none */
};
#define VIDMM_EVICT_ARGS_V1_SIZE offsetof(struct vidmm_evict_args, process)

/* vidmm_wddm2_evict() drops one reference per listing (Evict). An allocation whose count
 * reaches 0 leaves the residency list and its budget, and is evicted now - its eviction
 * queued: it must not be used any more - unless EVICT_ONLY_IF_NECESSARY (it then stays where
 * it is, a victim like any other once space is needed). With NOT_WRITTEN_TO an allocation the
 * engine knows to be unwritten since its page-in is dropped (DISCARD_CONTENT) instead of
 * transferred; a written one is transferred anyway. Locked or pinned allocations stay where
 * they are. Returns 0; VIDMM_E_INVALID_ARG (NULL, size_of neither V1 nor at least the whole
 * struct, count 0 or > 10240, unknown flags, an unknown handle, an allocation of another
 * process than the named one and not shared, more listings of an allocation than references
 * it has, not a WDDM2 device: nothing changed); VIDMM_E_DEVICE_REMOVED (the device, or the
 * named process's). */
VIDMM_API int vidmm_wddm2_evict(vidmm_device *dev, struct vidmm_evict_args *args);

/* D3DKMT_ALLOCATIONRESIDENCYSTATUS. */
#define VIDMM_RESIDENCY_IN_GPU_MEMORY    1u  /* RESIDENTINGPUMEMORY: in a memory segment */
#define VIDMM_RESIDENCY_IN_SHARED_MEMORY 2u  /* RESIDENTINSHAREDMEMORY: mapped in an aperture */
#define VIDMM_RESIDENCY_NOT_RESIDENT     3u  /* NOTRESIDENT */

/* vidmm_wddm2_query_residency() (D3DKMTQueryAllocationResidency) stores in 'status[i]' where
 * allocation i is placed (paging may still be in flight) and, when 'refs' is not NULL, its
 * residency reference count in 'refs[i]'. Returns 0, VIDMM_E_INVALID_ARG (NULL, count 0 or
 * > 10240, an unknown handle: nothing written), VIDMM_E_DEVICE_REMOVED. It names no process;
 * vidmm_wddm2_query_residency_process() (0.4) names 'process' (Processes, above): an
 * allocation of another process, not shared, is then refused (VIDMM_E_INVALID_ARG, nothing
 * written), and a removed process gets VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_wddm2_query_residency(vidmm_device *dev, const vidmm_handle *handles, uint32_t count,
                                          uint32_t *status, uint32_t *refs);
VIDMM_API int vidmm_wddm2_query_residency_process(vidmm_device *dev, uint32_t process, const vidmm_handle *handles,
                                                  uint32_t count, uint32_t *status, uint32_t *refs);

/* vidmm_wddm2_paging_fence_completed() returns the paging fence up to which every operation
 * has run (operations of a higher-priority paging queue past it may have run too);
 * vidmm_wddm2_paging_fence_wait() waits until 'fence' has (running the paging queue on this
 * thread when the device has no paging thread), 'timeout_ns' UINT64_MAX: forever. Returns 0,
 * VIDMM_E_TIMEOUT, VIDMM_E_INVALID_ARG (never issued), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API uint64_t vidmm_wddm2_paging_fence_completed(vidmm_device *dev);
VIDMM_API int vidmm_wddm2_paging_fence_wait(vidmm_device *dev, uint64_t fence, uint64_t timeout_ns);

/* ---------------------------------------------------------------------------------------------
 * Paging queues (spec 12: D3DKMTCreatePagingQueue, D3DDDI_PAGINGQUEUE_PRIORITY).
 *
 * A paging queue carries the paging of the make-residents and reclaims that name it, with its
 * own paging fence: a 64-bit value that starts at 0 and grows by one per such call (the
 * monitored fence D3D12 waits on); the value a call returns has passed once every paging
 * operation the call's allocations need - queued by this call or earlier, on any queue - has
 * run. A queue's fence passes its values in order. Calls that name no queue use the device's
 * default queue, of priority NORMAL, whose fence is the device's paging fence above
 * (vidmm_wddm2_paging_fence_wait()); so does everything else that pages (evictions, Lock2,
 * submissions, WDDM1 calls).
 *
 * What the priority changes, exactly: the order in which queued paging operations run - on the
 * paging threads, or on the thread that waits when the device has none - and nothing else
 * (not placement, not eviction choices, not budgets). While operations of several priorities
 * are queued, the oldest operation of the highest priority runs next, before older operations
 * of lower priorities, unless it touches what one of those touches (the same allocation, the
 * same bytes or segment range, the same aperture's mapping, the same page-table entries): then
 * the operation it waits for runs first, chosen by the same rule (the oldest of its own
 * priority, unless something older blocks that one in turn). An operation that waits for the
 * GPU, is SynchronousPaging or has no allocation never runs ahead of an older one. Operations
 * of one priority run in the order queued. An operation that has started is never interrupted.
 * The paging log and the driver's paging callback see the order they ran in; each record's
 * 'fence' stays the device paging fence given when it was queued (so the log's fences are not
 * increasing when a priority reordered it), and vidmm_wddm2_paging_fence_completed() is the
 * fence up to which every operation has run.
 * ------------------------------------------------------------------------------------------- */

/* D3DDDI_PAGINGQUEUE_PRIORITY, exact values. */
#define VIDMM_PAGING_QUEUE_PRIORITY_BELOW_NORMAL (-1)
#define VIDMM_PAGING_QUEUE_PRIORITY_NORMAL 0
#define VIDMM_PAGING_QUEUE_PRIORITY_ABOVE_NORMAL 1

/* vidmm_paging_queue_create() (D3DKMTCreatePagingQueue) creates a paging queue of 'process' on
 * 'dev' with 'priority' (VIDMM_PAGING_QUEUE_PRIORITY_*). Returns: 0 with '*out' set;
 * VIDMM_E_INVALID_ARG (NULL, an unknown priority, not a WDDM2 device: '*out' untouched);
 * VIDMM_E_NO_MEMORY; VIDMM_E_DEVICE_REMOVED (the device, or the process's: Processes, above -
 * its queues' waits say so too; destroying them works, and ends the removal with the last).
 * Lifetime: until vidmm_paging_queue_destroy() succeeds or the device's destroy. */
VIDMM_API int vidmm_paging_queue_create(vidmm_device *dev, uint32_t process, int32_t priority,
                                        vidmm_paging_queue **out);

/* vidmm_paging_queue_destroy() (D3DKMTDestroyPagingQueue) destroys 'q'. Work still pending on it
 * is not dropped - paging is never dropped - but waited for first: the call returns once the
 * queue's last fence value has passed (running the paging itself when the device has no paging
 * thread), as a wait under the device's wait_timeout_ns. Returns: 0 (destroyed; NULL is
 * ignored); VIDMM_E_TIMEOUT (the pending paging waits for the GPU beyond wait_timeout_ns: the
 * queue is not destroyed and stays usable). On a removed device it waits for nothing and
 * destroys the queue (0). */
VIDMM_API int vidmm_paging_queue_destroy(vidmm_paging_queue *q);

/* vidmm_paging_queue_completed() returns the last value of 'q''s paging fence that has passed
 * (0: none; NULL: 0). vidmm_paging_queue_wait() waits until 'fence' has passed (running the
 * paging on this thread when the device has no paging thread), 'timeout_ns' UINT64_MAX:
 * forever. Returns 0, VIDMM_E_TIMEOUT, VIDMM_E_INVALID_ARG (NULL, a value never returned by the
 * queue), VIDMM_E_DEVICE_REMOVED.
 * Thread safety: as every device call; 'q' must not be destroyed meanwhile. */
VIDMM_API uint64_t vidmm_paging_queue_completed(vidmm_paging_queue *q);
VIDMM_API int vidmm_paging_queue_wait(vidmm_paging_queue *q, uint64_t fence, uint64_t timeout_ns);

/* ---------------------------------------------------------------------------------------------
 * CPU access: Lock2 / Unlock2 (spec 6.6, 15.23), and UpdateAllocationProperty (spec 12).
 *
 * Lock2 is WDDM2's lock: no flags (D3DDDICB_LOCK2FLAGS has every bit reserved), no renaming, no
 * swizzling range, and no waiting for the GPU - the engine does not look at submission fences
 * at all; the caller (the UMD) waits on its own fences first, or answers WasStillDrawing itself
 * (spec 6.6). It waits only for the engine's own paging of the allocation (its page-in, the move
 * below, a PermanentSysMem copy fetched back), so that the bytes behind the pointer are its
 * content; that paging, for an allocation the GPU still uses, runs after the GPU is done with
 * it as all paging does (spec 15.7, 15.25) - a UMD that waited for its fences first, as WDDM2
 * asks, never meets that. Where the pointer goes, by where the allocation is
 * (spec 6.6, 15.23; "aperture": a segment of its supported set with VIDMM_SEGMENT_APERTURE):
 *   not resident (never placed, in system memory, on the disk tier - read back first), or
 *   mapped in an aperture segment        its system-memory backing store: always locks;
 *   CPU_VISIBLE, not CACHED, in a CPU-visible memory segment
 *                                        the segment's CPU view: always locks;
 *   CACHED, in any memory segment (no CPU/memory-segment coherency); CPU_VISIBLE in a memory
 *   segment that is not CPU-visible; not CPU_VISIBLE, in any memory segment
 *                                        moved to an aperture of its supported set first, then
 *                                        locked there; without one refused (VIDMM_E_INVALID_ARG).
 * PERMANENT_SYSMEM and EXISTING_* allocations lock their system-memory copy wherever they are,
 * as vidmm_lock() does (a copy the GPU wrote comes back first, the copy goes back to the segment
 * at the last Unlock2). A non-CPU_VISIBLE allocation may thus be locked only if it supports an
 * aperture or is not resident.
 *
 * While locked (any lock count above 0) the allocation does not move: it is never an eviction
 * victim, vidmm_wddm2_evict() leaves it where it is, vidmm_evict() says VIDMM_E_BUSY, and a
 * placement that is not in a segment keeps it out of memory segments - it may only be mapped
 * into an aperture (its pointer is the backing store), so that a locked allocation with no
 * aperture in its set cannot be made resident until it is unlocked
 * (vidmm_wddm2_make_resident() says VIDMM_E_NOT_AVAILABLE). An offered allocation cannot be
 * locked (reclaim it first). Lock2 nests: a Lock2 of a locked allocation adds a reference and
 * returns the same pointer (dxgkrnl's per-allocation refcount, spec 6.6); the mapping ends at
 * the Unlock2 that brings the count to 0, and the pointer must not be used after it. Engine
 * policy: an allocation locked by vidmm_lock() cannot be Lock2'd, and one locked by
 * vidmm_wddm2_lock2() can be neither vidmm_lock()ed nor vidmm_unlock()ed (VIDMM_E_INVALID_ARG):
 * the two lock kinds do not mix. The lock counts as a CPU write (dirty in its segment; CACHED:
 * flushed before the GPU next reads it). Destroying the allocation or removing the device ends
 * its locks.
 * ------------------------------------------------------------------------------------------- */

/* vidmm_wddm2_lock2() (D3DKMTLock2 / pfnLock2Cb) locks allocation 'h' for the CPU and stores
 * the pointer in '*data'. 'process' is the caller's process: a KIND_SHARED allocation may be
 * locked only by its creator (spec 6.3 rule 10), one that is not shared only by the process that
 * created it (Processes, above).
 * Returns: 0 with '*data' set; VIDMM_E_INVALID_ARG (NULL 'dev' or 'data', 'flags' not 0, not a
 * WDDM2 device, an unknown handle, an allocation of another process, an offered
 * allocation, one locked by vidmm_lock(), a lock count at its maximum, or a placement that
 * forbids the lock - see above: '*data' untouched, nothing changed); VIDMM_E_NO_VIDEO_MEMORY or
 * VIDMM_E_CANT_EVICT_PINNED (the move to an aperture found no room: other allocations may
 * have been evicted, this one is where it was); VIDMM_E_NO_MEMORY (no backing store);
 * VIDMM_E_IO (the disk tier could not read it back); VIDMM_E_TIMEOUT (its paging had not run
 * after the device's wait_timeout_ns - below: not locked, '*data' untouched, its paging stays
 * queued); VIDMM_E_DEVICE_REMOVED.
 * Lifetime: '*data' is valid until the Unlock2 that ends the lock, the allocation's destroy or
 * the device's removal, whichever is first.
 * Thread safety: as every device call; it waits for the allocation's paging (and disk
 * read-back) only, never for a submission fence itself - but paging runs in fence order, so
 * paging queued before the allocation's that waits for the GPU (another allocation's eviction
 * waiting for it to go idle; a PermanentSysMem copy-back of this one queued behind such an
 * eviction by the last Unlock2) is waited for too: up to wait_timeout_ns, without limit where
 * that is 0 (on a device without paging threads, then, only another thread signalling the fence
 * ends the wait). */
VIDMM_API int vidmm_wddm2_lock2(vidmm_device *dev, uint32_t process, vidmm_handle h, uint32_t flags, void **data);

/* vidmm_wddm2_unlock2() (D3DKMTUnlock2 / pfnUnlock2Cb) drops one Lock2 reference of 'h'; at 0
 * the lock ends. Returns 0; VIDMM_E_INVALID_ARG (NULL, not a WDDM2 device, an unknown handle,
 * an allocation not locked - spec 6.6: dxgkrnl's "Allocation is not locked" - or locked by
 * vidmm_lock(): nothing changed); VIDMM_E_DEVICE_REMOVED. It names no process;
 * vidmm_wddm2_unlock2_process() (0.4) names 'process', which must be the allocation's (only its
 * creator could lock it): else VIDMM_E_INVALID_ARG, nothing changed; a removed process gets
 * VIDMM_E_DEVICE_REMOVED (its locks ended with its device). */
VIDMM_API int vidmm_wddm2_unlock2(vidmm_device *dev, vidmm_handle h);
VIDMM_API int vidmm_wddm2_unlock2_process(vidmm_device *dev, uint32_t process, vidmm_handle h);

/* D3DDDI_UPDATEALLOCPROPERTY's PropertyMaskValue bits (spec 12), exact values. */
#define VIDMM_UPDATE_SET_ACCESSED_PHYSICALLY   0x1u
#define VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET 0x2u
#define VIDMM_UPDATE_SET_PREFERRED_SEGMENT     0x4u
#define VIDMM_UPDATE_SET_UNMOVEABLE            0x8u
/* D3DDDI_UPDATEALLOCPROPERTY_FLAGS, exact values: the new values of the properties. */
#define VIDMM_UPDATE_ACCESSED_PHYSICALLY       0x1u
#define VIDMM_UPDATE_UNMOVEABLE                0x2u

/* D3DDDI_UPDATEALLOCPROPERTY. */
struct vidmm_update_alloc_property_args {
    size_t size_of;                     /* sizeof(struct vidmm_update_alloc_property_args) */
    vidmm_handle allocation;            /* hAllocation */
    uint32_t supported_segment_set;     /* SupportedSegmentSet (SET_SUPPORTED_SEGMENT_SET) */
    uint32_t preferred_segment;         /* PreferredSegment, a DXGK_SEGMENTPREFERENCE value
                                           (SET_PREFERRED_SEGMENT) */
    uint32_t flags;                     /* VIDMM_UPDATE_ACCESSED_PHYSICALLY / _UNMOVEABLE */
    uint32_t property_mask;             /* VIDMM_UPDATE_SET_*, at least one */
    uint32_t reserved;                  /* 0 */
    uint64_t paging_fence;              /* out: PagingFenceValue - the move's last paging
                                           operation; 0 when nothing moved */
    /* 0.4 (issue 27): size_of VIDMM_UPDATE_ALLOC_PROPERTY_ARGS_V1_SIZE (before it: not read). */
    uint32_t process;                   /* the calling process (Processes, above); 0: none */
};
#define VIDMM_UPDATE_ALLOC_PROPERTY_ARGS_V1_SIZE offsetof(struct vidmm_update_alloc_property_args, process)

/* vidmm_wddm2_update_alloc_property() (pfnUpdateAllocationPropertyCb, WDDM 2.1) changes the
 * properties 'property_mask' names, for every later placement:
 *   SET_SUPPORTED_SEGMENT_SET  the supported segment set (WDDM2 has one set: it becomes the
 *                              read and the write set, spec 15.2);
 *   SET_PREFERRED_SEGMENT      the placement preference (spec 3.1, 15.3): the next placement
 *                              follows it, nothing moves for it;
 *   SET_ACCESSED_PHYSICALLY    the ACCESSED_PHYSICALLY allocation flag, to flags' value;
 *   SET_UNMOVEABLE             engine policy: Unmoveable 1 pins the allocation as Overlay /
 *                              Capture are pinned (never a victim, never moved once placed);
 *                              0 unpins it (not an Overlay / Capture one: those stay pinned).
 * The changed descriptor must pass every creation rule of spec 15.2 (sets of existing
 * segments, not empty, each preferred ID in the set, 64 KB alignment for USE_64KB_PAGES
 * segments, PitchAlignedSize for PITCH_ALIGNMENT ones, EXPLICIT_RESIDENCY_NOTIFICATION only
 * with ACCESSED_PHYSICALLY, ...). When the new set excludes the segment the allocation is in,
 * it moves: an allocation on the residency list is placed again in the new set (its paging
 * queued: wait for 'paging_fence' before the GPU uses it); one that is not is evicted (the next
 * make-resident places it). Mappings of its GPU VAs follow (UPDATE_PAGE_TABLE).
 * Returns: 0 (paging done, or none); VIDMM_PENDING (the move's paging is in flight: wait for
 * 'paging_fence'); VIDMM_E_INVALID_ARG (NULL, size_of neither V1 nor at least the whole
 * struct, property_mask 0 or unknown bits, unknown flags, reserved not 0, not a WDDM2 device,
 * an unknown handle, an allocation of another process than the named one and not shared, a
 * rule of spec 15.2 broken); VIDMM_E_UNSUPPORTED (EXISTING_* memory with a set of apertures only);
 * VIDMM_E_NO_VIDEO_MEMORY (no segment of the new set could ever hold it, or no room for the
 * move even after eviction - other allocations may have been evicted); VIDMM_E_BUSY (it
 * would have to move but is locked or being placed by another call); VIDMM_E_CANT_EVICT_PINNED
 * (it would have to move but is pinned - or the move found no room because pinned or locked
 * allocations hold it, as a placement says: spec 15.4); VIDMM_E_NO_MEMORY;
 * VIDMM_E_DEVICE_REMOVED. On every
 * failure the allocation's properties are unchanged. */
VIDMM_API int vidmm_wddm2_update_alloc_property(vidmm_device *dev, struct vidmm_update_alloc_property_args *args);

/* ---------------------------------------------------------------------------------------------
 * Budgets (spec 12, 15.22).
 *
 * Each process has, per segment group, a Budget, a CurrentUsage and a CurrentReservation. The
 * LOCAL group is the segments flagged VIDMM_SEGMENT_LOCAL_BUDGET_GROUP, the NON_LOCAL group
 * those flagged VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP (a segment with both flags is refused at
 * creation); other segments count in no budget. A group's maximum budget is the sum of its
 * segments' sizes, and every process's budget starts there. Usage: the rounded sizes of the
 * process's allocations on the residency list, each charged to the group of the segment it was
 * in when its count left 0 - or, not resident then, of the first segment of its placement order
 * (PreferredSegment, then ascending ID); an allocation whose segment is in no group is charged
 * nowhere.
 * ------------------------------------------------------------------------------------------- */
#define VIDMM_SEGMENT_GROUP_LOCAL 0u        /* D3DKMT_MEMORY_SEGMENT_GROUP_LOCAL */
#define VIDMM_SEGMENT_GROUP_NON_LOCAL 1u    /* D3DKMT_MEMORY_SEGMENT_GROUP_NON_LOCAL */

/* vidmm_wddm2_set_budget() is the host's side: it sets the budget of 'process' in 'group'
 * (another process grew, memory shrank). The budget never goes below the process's
 * reservation: a smaller value sets it to the reservation. Its effect shows in NumBytesToTrim
 * (of the next make-resident and evict of the process's allocations) and the budget callbacks
 * (vidmm_wddm2_register_budget_callback(), called before it returns). Nothing is evicted for
 * it: usage may stay above the budget until the process trims. Returns 0, VIDMM_E_INVALID_ARG (unknown group, bytes above the
 * group's maximum budget, not a WDDM2 device), VIDMM_E_NO_MEMORY, VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_wddm2_set_budget(vidmm_device *dev, uint32_t process, uint32_t group, uint64_t bytes);

/* A budget change, as the budget-change callback receives it (the D3D12 budget-change event,
 * IDXGIAdapter3::RegisterVideoMemoryBudgetChangeNotificationEvent, with the values a
 * QueryVideoMemoryInfo right after the change would give). */
struct vidmm_budget_change {
    size_t size_of;                     /* sizeof(struct vidmm_budget_change), set by the engine */
    uint32_t process;
    uint32_t group;                     /* VIDMM_SEGMENT_GROUP_* */
    uint64_t budget;                    /* the new Budget */
    uint64_t previous_budget;           /* the Budget before the change */
    uint64_t current_usage;             /* CurrentUsage when it changed (above 'budget': the
                                           process should trim, NumBytesToTrim says how much) */
};
typedef void (*vidmm_budget_callback)(void *arg, const struct vidmm_budget_change *change);

/* vidmm_wddm2_register_budget_callback() registers 'cb' to be told of every change of the budget
 * of 'process' on 'dev', in either group, and stores a cookie for the unregistration in
 * '*cookie' (never 0). A change is a new Budget value: vidmm_wddm2_set_budget() giving another
 * value (a value that leaves the budget as it was, or the reservation clamping it back to it,
 * changes nothing), vidmm_wddm2_change_reservation() raising the budget to the reservation.
 * When: on the thread of the call that changed it, after that call has released the device
 * mutex and before it returns - once per registration and changed group, in registration order;
 * 'change' is valid during the callback only. So the callback may call back into the library
 * on the device (query, evict, make resident, set budgets - its own changes notify in turn -,
 * unregister itself or another), anything but destroy the device. Several registrations per
 * process are allowed.
 * Returns: 0 with '*cookie' set; VIDMM_E_INVALID_ARG (NULL 'dev', 'cb' or 'cookie', not a WDDM2
 * device: nothing registered); VIDMM_E_NO_MEMORY; VIDMM_E_DEVICE_REMOVED.
 * Lifetime: until vidmm_wddm2_unregister_budget_callback() or the device's destroy. */
VIDMM_API int vidmm_wddm2_register_budget_callback(vidmm_device *dev, uint32_t process, vidmm_budget_callback cb,
                                                   void *arg, uint64_t *cookie);

/* vidmm_wddm2_unregister_budget_callback() ends registration 'cookie': when it returns, the
 * callback is not running on another thread and is not called again (called from inside that
 * callback, it waits for the other threads' calls only). Returns 0, VIDMM_E_INVALID_ARG (NULL,
 * an unknown or already unregistered cookie). Works on a removed device. */
VIDMM_API int vidmm_wddm2_unregister_budget_callback(vidmm_device *dev, uint64_t cookie);

/* D3DKMT_QUERYVIDEOMEMORYINFO's results (spec 12). */
struct vidmm_video_memory_info {
    size_t size_of;                     /* sizeof(struct vidmm_video_memory_info), set by the caller */
    uint64_t budget;                    /* Budget */
    uint64_t current_usage;             /* CurrentUsage */
    uint64_t current_reservation;       /* CurrentReservation */
    uint64_t available_for_reservation; /* AvailableForReservation: the group's maximum budget
                                           less what the other processes reserved (engine
                                           policy: the spec gives no formula) */
};

/* vidmm_wddm2_query_video_memory() (D3DKMTQueryVideoMemoryInfo) describes the budget of
 * 'process' in 'group'. A process the device has not seen has the maximum budget, no usage and
 * no reservation. Returns 0, VIDMM_E_INVALID_ARG (NULL, size_of too small, unknown group, not
 * a WDDM2 device: '*out' untouched), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_wddm2_query_video_memory(vidmm_device *dev, uint32_t process, uint32_t group,
                                             struct vidmm_video_memory_info *out);

/* vidmm_wddm2_change_reservation() (D3DKMTChangeVideoMemoryReservation) sets the reservation
 * of 'process' in 'group': the memory it needs at least, which its budget never goes below (a
 * budget under the new reservation is raised to it, and the budget callbacks are told before
 * the call returns). Returns 0, VIDMM_E_INVALID_ARG (unknown
 * group, 'bytes' above AvailableForReservation - spec 15.22 - or not a WDDM2 device: nothing
 * changed), VIDMM_E_NO_MEMORY, VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_wddm2_change_reservation(vidmm_device *dev, uint32_t process, uint32_t group, uint64_t bytes);

/* =============================================================================================
 * Offer and reclaim, power transitions (issue 15 deliverables 4 and 6). Unlike everything
 * above, these work on every device, WDDM1 or WDDM2: offer / reclaim and the segments' standby
 * and hibernate flags date from WDDM 1.2 (Windows 8, spec 2.3, 11). Where the two models
 * differ it is said.
 * =========================================================================================== */

/* ---------------------------------------------------------------------------------------------
 * Offer and reclaim (spec 11, 15.20).
 *
 * An offered allocation's content may be thrown away: when a segment needs room, offered
 * allocations placed there go first - LOW before NORMAL before HIGH, in offer order within a
 * priority, before any allocation that is not offered - and go by a DISCARD_CONTENT paging
 * operation, never by a transfer (an offered allocation in an aperture is only unmapped: its
 * content is its backing store). An offered allocation on the residency list may go too. Its
 * content survives a discard only when a clean system-memory copy exists (PERMANENT_SYSMEM,
 * EXISTING_*). An offered allocation cannot be locked (spec 6.3 rule 9) nor used by the GPU
 * (vidmm_submit(), vidmm_make_resident(), vidmm_va_submit(), vidmm_wddm2_make_resident()):
 * those calls return VIDMM_E_INVALID_ARG (STATUS_INVALID_PARAMETER, spec 15.20) until it is
 * reclaimed. vidmm_gpu_access() (the caller's debugger view) still works.
 *
 * On a WDDM1 device an allocation may also be offered by the submission that uses it, with an
 * OfferPriority in its allocation-list entry (device.h VIDMM_REF_OFFER_PRIORITY, spec 11: "offer
 * after this DMA buffer completes"): as a vidmm_offer() right after that submission, in effect
 * once its fence has passed.
 *
 * The offer takes effect once the GPU has finished the work submitted before it (spec 11:
 * dxgkrnl defers it, without blocking); VIDMM_OFFER_IMMEDIATELY puts it in effect at once (a
 * discard of an allocation the GPU still uses then waits in the paging queue for the GPU, as
 * every DISCARD_CONTENT does, spec 15.7). Offered content in system memory is dropped too
 * while the device's system memory is over its sysmem_budget - before anything is written to
 * the disk tier, which never writes an offered allocation out (the OS drops offered pages
 * rather than page them to disk): its pages go, its commit stays (still counted in
 * sysmem_used; reclaim says DISCARDED). With VIDMM_OFFER_ALLOW_DECOMMIT the whole backing store
 * goes instead (NOT_COMMITTED), there and at a discard from a segment. Both flags are
 * D3DKMT_OFFER_FLAGS, WDDM2 only: refused on a WDDM1 device.
 *
 * Lists (both calls): exactly one of 'resources' and 'allocations' (spec 11: pResources /
 * HandleList), 1..VIDMM_OFFER_MAX entries. An 'allocations' entry names that rename instance;
 * a 'resources' entry names the allocation as created - every rename instance of it (the
 * engine has no runtime resources; on a WDDM2 device, without renaming, both are the same).
 * ------------------------------------------------------------------------------------------- */

/* D3DKMT_OFFER_PRIORITY / D3DDDI_OFFER_PRIORITY, exact values (NONE = 0 is not for offers). */
#define VIDMM_OFFER_PRIORITY_LOW    1u  /* content useless: discarded first */
#define VIDMM_OFFER_PRIORITY_NORMAL 2u  /* useful, easy to regenerate */
#define VIDMM_OFFER_PRIORITY_HIGH   3u  /* useful, hard to regenerate: discarded last */
#define VIDMM_OFFER_PRIORITY_AUTO   4u  /* from the eviction priority (engine policy, spec 15.20):
                                           below VIDMM_PRIORITY_NORMAL LOW, below
                                           VIDMM_PRIORITY_HIGH NORMAL, else HIGH */
/* D3DKMT_OFFER_FLAGS, exact values (WDDM2 devices only). */
#define VIDMM_OFFER_IMMEDIATELY     0x1u
#define VIDMM_OFFER_ALLOW_DECOMMIT  0x2u
/* D3DDDI_RECLAIM_RESULT, exact values. */
#define VIDMM_RECLAIM_OK            0u  /* the content is intact */
#define VIDMM_RECLAIM_DISCARDED     1u  /* the content was discarded */
#define VIDMM_RECLAIM_NOT_COMMITTED 2u  /* discarded, and its system memory decommitted too
                                           (ALLOW_DECOMMIT). Engine policy: the allocation
                                           stays usable after the reclaim, as after DISCARDED
                                           (DXGI tells applications to recreate such a
                                           resource; the kernel interface says no more) */
#define VIDMM_OFFER_MAX 10240u          /* entries per call (dxgkrnl's limit, spec 11) */
/* What discarded content reads as once reclaimed (spec 15.20: "left undefined, filled with a
 * debug pattern"), as 32-bit words. */
#define VIDMM_DISCARDED_PATTERN 0xDEADD15Cu

/* D3DKMT_OFFERALLOCATIONS. */
struct vidmm_offer_args {
    size_t size_of;                     /* sizeof(struct vidmm_offer_args) */
    const vidmm_handle *resources;      /* pResources, or NULL */
    const vidmm_handle *allocations;    /* HandleList, or NULL */
    uint32_t count;                     /* NumAllocations, 1..VIDMM_OFFER_MAX */
    uint32_t priority;                  /* VIDMM_OFFER_PRIORITY_* */
    uint32_t flags;                     /* VIDMM_OFFER_* (WDDM2 devices only) */
    uint32_t reserved;                  /* 0 */
    /* 0.4 (issue 27): size_of VIDMM_OFFER_ARGS_V1_SIZE (before it: not read, 0). */
    uint32_t process;                   /* the calling process (Processes, above); 0: none */
};
#define VIDMM_OFFER_ARGS_V1_SIZE offsetof(struct vidmm_offer_args, process)

/* vidmm_offer() offers the listed allocations (D3DKMTOfferAllocations). Offering one again
 * moves it to the end of its new priority's list. Nothing is discarded by the call itself
 * (except offered content in system memory while the device is over its sysmem_budget).
 * Returns: 0; VIDMM_E_INVALID_ARG (NULL, size_of too small, not exactly one list, count not in
 * 1..10240, priority NONE or unknown, unknown flags, flags on a WDDM1 device, reserved not 0,
 * an unknown handle, an allocation of another process than the named one and not shared, a
 * pinned allocation, a locked one - unlock it first: nothing changed);
 * VIDMM_E_DEVICE_REMOVED (the device, or the named process's).
 * Thread safety: as every device call. */
VIDMM_API int vidmm_offer(vidmm_device *dev, const struct vidmm_offer_args *args);

/* D3DKMT_RECLAIMALLOCATIONS2. */
struct vidmm_reclaim_args {
    size_t size_of;                     /* sizeof(struct vidmm_reclaim_args) */
    const vidmm_handle *resources;      /* pResources, or NULL */
    const vidmm_handle *allocations;    /* HandleList, or NULL */
    uint32_t count;                     /* NumAllocations, 1..VIDMM_OFFER_MAX */
    uint32_t reserved;                  /* 0 */
    uint32_t *results;                  /* out, or NULL: pResults, VIDMM_RECLAIM_* per entry (a
                                           resource: the worst of its instances) */
    bool *discarded;                    /* out, or NULL: pDiscarded (result != OK) per entry;
                                           with neither array the caller must assume the
                                           content lost (spec 11) */
    uint64_t paging_fence;              /* out: PagingFenceValue - WDDM2: the last paging
                                           operation bringing the resident-listed ones back
                                           (with 'queue', that queue's fence); WDDM1: 0 */
    /* 0.2 (issue 15): size_of is VIDMM_RECLAIM_ARGS_V1_SIZE (not read: the default queue) or
     * at least the whole struct; any other size is refused. */
    vidmm_paging_queue *queue;          /* hPagingQueue (WDDM2): NULL, the default queue */
    /* 0.4 (issue 27): size_of VIDMM_RECLAIM_ARGS_V2_SIZE (before it: not read, 0). */
    uint32_t process;                   /* the calling process (Processes, above); 0: the
                                           queue's, or none without a queue */
};
/* size_of of the arguments before 'queue', and before 'process', was added. */
#define VIDMM_RECLAIM_ARGS_V1_SIZE offsetof(struct vidmm_reclaim_args, queue)
#define VIDMM_RECLAIM_ARGS_V2_SIZE offsetof(struct vidmm_reclaim_args, process)

/* vidmm_reclaim() reclaims the listed allocations (D3DKMTReclaimAllocations2): they are no
 * longer offered and may be locked and used again. Results are computed before anything
 * changes, so an allocation listed twice reports the same result twice. Discarded content
 * reads as VIDMM_DISCARDED_PATTERN from then on (its backing store is committed for it).
 * Reclaiming an allocation that is not offered reports OK. On a WDDM2 device, every listed
 * allocation on the residency list that is not resident is paged back in (spec 11); wait for
 * 'paging_fence' before the GPU uses it. Right after the call the backing store is valid (a
 * lock need not wait for the fence).
 * With a 'queue' (WDDM2) that paging has the queue's priority and 'paging_fence' is a fence of
 * the queue, as for vidmm_wddm2_make_resident().
 * Returns: 0 (paging done); VIDMM_PENDING (WDDM2: paging in flight, wait for 'paging_fence');
 * VIDMM_E_INVALID_ARG (NULL, size_of too small, not exactly one list, count not in 1..10240,
 * reserved not 0, an unknown handle, a queue not of this device, a 'process' not the queue's,
 * an allocation of another process than the named one (or the queue's) and not shared:
 * nothing changed); VIDMM_E_NO_MEMORY (no backing store for
 * discarded content: nothing changed; or, WDDM2, a resident-listed allocation could not be
 * paged back in: then every allocation is reclaimed, the results are written, and those not
 * paged in stay evicted - vidmm_va_submit() brings them back or fails);
 * VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_reclaim(vidmm_device *dev, struct vidmm_reclaim_args *args);

/* ---------------------------------------------------------------------------------------------
 * Power transitions (spec 2.3, 15.26).
 *
 * vidmm_power_transition() simulates the system entering standby or hibernate and resuming.
 * A memory segment is purged unless its flags preserve it (spec 2.3):
 *   standby                  purged unless PRESERVED_DURING_STANDBY;
 *   hibernate, hybrid sleep  purged unless PRESERVED_DURING_HIBERNATE; a segment with
 *                            PARTIALLY_PRESERVED_DURING_HIBERNATE is partially purged.
 * Aperture segments are never purged: their content is system memory, which standby keeps and
 * hibernate saves. Purging a segment keeps every content the spec says must survive and drops
 * only what can be re-created (Display docs, "Standby hibernate optimizations"):
 *  - an offered allocation (its offer in effect) is discarded: reclaim reports DISCARDED (or
 *    NOT_COMMITTED with ALLOW_DECOMMIT), unless a clean system-memory copy exists;
 *  - an allocation the engine keeps in place - pinned (Overlay / Capture), locked, or being
 *    placed or converted by another call - is saved to system memory (a TRANSFER to segment 0,
 *    into host memory the call holds for it, not its backing store, so that nothing recorded
 *    about that store changes) and, after the purge, restored at the same place (TRANSFER
 *    back): its address and a lock's pointer stay valid;
 *  - every other allocation is evicted as memory pressure would evict it (to its eviction
 *    aperture or its backing store); its next use pages it in again - and on a WDDM2 device the
 *    allocations on the residency list are paged back in by the resume itself (VidMm makes the
 *    residency list resident before the device's work runs, spec 12).
 * Then the segment's memory loses its bytes: every byte of it not held by an allocation is
 * overwritten with VIDMM_POWER_PURGE_PATTERN (32-bit words), so that a caller still reading
 * the segment (a stale pointer) sees the loss. The partially purged segment:
 *  - with a system_memory_end (struct vidmm_segment_desc, spec 2.2 SystemMemoryEndAddress:
 *    "allocations beyond it are purged on hibernate"), offsets 0..system_memory_end are kept:
 *    an allocation lying wholly there keeps its place and bytes (not paged at all: no
 *    TRANSFER, no DISCARD_CONTENT, and on a WDDM2 device no UPDATE_PAGE_TABLE), whether kept in
 *    place, offered or neither; an allocation reaching beyond the end - straddling it included
 *    - is purged as above (evicted; saved and restored in place; or, offered, discarded), and
 *    only the bytes above the end are overwritten: the free bytes at or below it keep theirs
 *    (purged_bytes counts the bytes above it);
 *  - without one (0), engine policy (the public sources define no more than "partially
 *    purged"): the allocations kept in place keep their bytes there (the preserved part) and
 *    are not saved and restored; everything else is purged as above, and every byte no
 *    allocation holds is overwritten.
 * In standby the segment is preserved whole (the flag requires PRESERVED_DURING_STANDBY).
 * The GPU must be idle (every submission fence signalled: the OS drains the GPU before a power
 * transition). Paging queued before the call runs first. The call returns when the device is
 * back and every paging operation it queued has run.
 * ------------------------------------------------------------------------------------------- */
#define VIDMM_POWER_STANDBY      1u
#define VIDMM_POWER_HIBERNATE    2u
#define VIDMM_POWER_HYBRID_SLEEP 3u     /* behaves as hibernate (spec 2.3) */
#define VIDMM_POWER_PURGE_PATTERN 0xDEADBEEFu

struct vidmm_power_args {
    size_t size_of;                     /* sizeof(struct vidmm_power_args) */
    uint32_t state;                     /* VIDMM_POWER_* */
    uint32_t reserved;                  /* 0 */
    uint32_t evicted;                   /* out: allocations paged out to keep their content */
    uint32_t discarded;                 /* out: offered allocations whose content was dropped */
    uint32_t restored;                  /* out: allocations saved and restored in place */
    uint32_t repaged;                   /* out: WDDM2: residency-listed allocations paged back */
    uint64_t purged_bytes;              /* out: segment bytes overwritten */
    uint64_t paging_fence;              /* out: the last paging operation of the transition */
};

/* vidmm_power_transition() runs one standby / hibernate cycle as described above.
 * Returns: 0; VIDMM_E_INVALID_ARG (NULL, size_of too small, unknown state, reserved not 0:
 * nothing changed); VIDMM_E_BUSY (a submission fence is not signalled: nothing changed, and
 * nothing waited for - checked before the paging queued earlier is waited for, since that
 * paging may itself wait for the GPU: with work outstanding the call returns at once, whatever
 * wait_timeout_ns says; signal the fences and call again);
 * VIDMM_E_NO_MEMORY (no backing store for an allocation to page out, or no host memory for the
 * save area of one kept in place: nothing changed - every store is had before the purge
 * starts, so restoring the pinned and locked allocations never needs memory: they go back to
 * the place they never left, from their save areas); VIDMM_E_TIMEOUT (paging queued before the
 * call, or by another thread meanwhile, still ran after the device's wait_timeout_ns - which
 * happens only when another thread submitted work during the call: before the purge nothing
 * changed; during it, the allocations already paged out stay paged out with their content,
 * nothing was overwritten and nothing is restored, since nothing left its place);
 * VIDMM_E_DEVICE_REMOVED. A residency-listed allocation that cannot be paged back in at the
 * resume (no room) stays evicted and the call still returns 0: vidmm_va_submit() brings it
 * back or fails.
 * Thread safety: safe to call concurrently with other calls, which take effect before or
 * after the purge; the caller acting as the GPU does nothing during the call. */
VIDMM_API int vidmm_power_transition(vidmm_device *dev, struct vidmm_power_args *args);

VIDMM_END_DECLS

#endif /* VIDMM_WDDM2_H */
