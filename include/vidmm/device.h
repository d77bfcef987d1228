/* SPDX-License-Identifier: MIT */
/* include/vidmm/device.h - the video memory manager: a device made of segments, allocations
 * placed in them and paged between segments, apertures and system memory, submissions with
 * allocation lists and fences, CPU locks, swizzling ranges, renaming, eviction and statistics.
 *
 * The model is the WDDM 1.x video memory manager (VidMm). Every structure and flag below
 * mirrors a WDDM one, named in its comment, and every rule cited as "spec 15.n" is item n of
 * section 15 of shared/spec/wddm-vidmm.md. The caller plays three parts:
 *   - the user-mode driver: it creates allocations, locks them, submits work;
 *   - the GPU: it executes submitted work (reading and writing the allocations' bytes where
 *     vidmm_submit() said they live, or through vidmm_gpu_access()) and signals the fences;
 *   - optionally the kernel-mode driver: it may carry out paging operations, program
 *     swizzling ranges and maintain caches through the callbacks of struct vidmm_driver.
 * Without driver callbacks a built-in executor moves the bytes with the library's kernels. */
#ifndef VIDMM_DEVICE_H
#define VIDMM_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "api.h"
#include "common.h"
#include "swizzle.h"

VIDMM_BEGIN_DECLS

/* ---------------------------------------------------------------------------------------------
 * Thread safety (the contract of every call below).
 *
 * Every call may be made from any thread, concurrently with any other call on the same device,
 * except vidmm_device_destroy(): it is the device's last call and runs alone (no call on the
 * device may be running or start; the pointers the device handed out become invalid).
 * vidmm_device_create() touches no shared state. Concurrent calls on the same allocation take
 * effect one after the other, in an order the engine picks (two unlocks of an allocation
 * locked once: one unlocks it, the other is refused as "not locked"). The engine does not
 * order the caller's own accesses to memory it handed out (lock pointers, vidmm_residency.cpu)
 * beyond the lock and fence rules: the caller does.
 *
 * One mutex per device guards the bookkeeping. It is released whenever a call waits (for the
 * GPU, for paging, for disk I/O) and, in vidmm_lock(), vidmm_lock_region() and vidmm_unlock(),
 * while a swizzling range's view is untiled or tiled back (issue 16), so that a thread
 * converting a large surface holds up no call on another allocation. Paging operations run on
 * the paging threads (paging_threads 0: on the thread of a call waiting for them) without the
 * mutex; the driver's paging callback is called there, one operation at a time, in queued order
 * (on a WDDM2 device, paging queues' priorities may reorder operations that touch nothing in
 * common: wddm2.h "Paging queues"). The driver's swizzling-range and cache callbacks are called
 * with the mutex held and must not call back into the device. A lazy range view's page faults are served by a thread of the view: any
 * thread may touch the view while the lock lasts.
 *
 * Call by call, what it may wait for (the device mutex aside, which is held for bookkeeping
 * only unless said otherwise):
 *   vidmm_device_create()        nothing.
 *   vidmm_device_destroy()       the paging operation running now; the paging threads' exit.
 *   vidmm_device_remove()        a lock or unlock converting an allocation's bytes on another
 *                                thread (its lock then ends like every other).
 *   vidmm_alloc_create(), vidmm_alloc_query(), vidmm_set_priority(), vidmm_fence_signal(),
 *   vidmm_fence_completed(), vidmm_paging_fence_completed(), vidmm_paging_log_read(),
 *   vidmm_get_stats()            nothing (vidmm_fence_signal() wakes the calls waiting).
 *   vidmm_alloc_destroy()        paging queued for it (which may wait for the GPU), its disk
 *                                I/O, and other threads' calls placing, locking or converting it.
 *   vidmm_make_resident(), vidmm_submit()
 *                                the paging they cause (which may wait for the GPU: DONOT_WAIT
 *                                and wait_timeout_ns bound that), disk read-backs, and a lock or
 *                                unlock converting a listed allocation on another thread - never
 *                                a conversion of an allocation not listed.
 *   vidmm_make_resident_async()  nothing: it starts the reads.
 *   vidmm_paging_fence_wait(), vidmm_fence_wait()
 *                                their fence (or the timeout).
 *   vidmm_trim_to_budget()       with 'wait', the write-outs in flight.
 *   vidmm_evict()                the paging of the evictions it made; an allocation locked,
 *                                converting or held by another call is refused (VIDMM_E_BUSY).
 *   vidmm_gpu_access()           a lock or unlock converting that allocation, its queued paging,
 *                                its disk read-back, another vidmm_gpu_access() or
 *                                vidmm_invalidate_cache() of it copying; the 'n' bytes are then
 *                                copied with the device mutex released from 64 KiB on (held
 *                                below): meanwhile a lock, unlock, submission, make-resident or
 *                                access of that allocation waits, nothing moves it, and calls
 *                                on other allocations go on.
 *   vidmm_lock(), vidmm_lock_region()
 *                                the GPU (unless DONOT_WAIT / IGNORE_SYNC say otherwise), the
 *                                paging of its placement or eviction, a disk read-back, a
 *                                vidmm_gpu_access() or vidmm_invalidate_cache() working on its
 *                                bytes with the mutex released. A range
 *                                view is untiled (or a lazy view armed) with the mutex released;
 *                                meanwhile the allocation counts as range-locked: another lock
 *                                of it is refused (spec 6.3 rule 8), an unlock, submission or
 *                                vidmm_gpu_access() of it waits, no eviction takes it.
 *   vidmm_unlock()               a lock or unlock converting a listed allocation on another
 *                                thread; then it tiles back what was written through its range
 *                                views (and drops lazy views' pages) with the mutex released, the
 *                                allocations held as above; PermanentSysMem copy-backs are
 *                                paging operations, waited for unless they (or other paging
 *                                queued or running) wait for the GPU.
 *   vidmm_invalidate_cache()     a lock or unlock converting that allocation, or another call
 *                                working on its bytes; the engine's own cache maintenance of
 *                                64 KiB or more runs with the mutex released (as
 *                                vidmm_gpu_access() copies), the driver's callback with it held.
 *   vidmm_paging_queue_create(), vidmm_paging_queue_completed() (wddm2.h)
 *                                nothing.
 *   vidmm_paging_queue_wait()    the paging its fence value waits for (or the timeout), run on
 *                                the caller's thread when there is no paging thread.
 *   vidmm_paging_queue_destroy() the paging of the queue's last value, as the wait above,
 *                                bounded by wait_timeout_ns; the queue must not be used by
 *                                another thread meanwhile.
 *   vidmm_wddm2_set_budget(), vidmm_wddm2_change_reservation() (wddm2.h)
 *                                nothing; the process's budget callbacks are then called on
 *                                the calling thread, the device mutex released.
 *   vidmm_wddm2_register_budget_callback()
 *                                nothing.
 *   vidmm_wddm2_unregister_budget_callback()
 *                                the callback's calls running on other threads.
 * ------------------------------------------------------------------------------------------- */

typedef struct vidmm_device vidmm_device;

/* An allocation handle (a D3DKMT_HANDLE). 0 is never a valid handle. Each rename instance of
 * an allocation has a handle of its own (spec 7). A handle names an allocation of the device
 * that made it only: given to another device it is refused (VIDMM_E_INVALID_ARG) - always while
 * at most 16 devices are alive together - and once its allocation is destroyed it names
 * nothing until its slot has been reused 256 times. Its bits are not an interface. */
typedef uint32_t vidmm_handle;

#define VIDMM_MAX_SEGMENTS 31u          /* segment IDs are 1..31 (5-bit fields, spec 1) */
#define VIDMM_MAX_BANKS 127u            /* bank IDs are 1..127 (7-bit fields) */
#define VIDMM_PAGE_SIZE 4096u           /* sizes and commit limits are multiples of this */

/* ---------------------------------------------------------------------------------------------
 * Segments: DXGK_SEGMENTFLAGS bits (spec 2.3), exact values.
 * ------------------------------------------------------------------------------------------- */
#define VIDMM_SEGMENT_APERTURE                  0x00000001u
#define VIDMM_SEGMENT_AGP                       0x00000002u
#define VIDMM_SEGMENT_CPU_VISIBLE               0x00000004u
#define VIDMM_SEGMENT_USE_BANKING               0x00000008u
#define VIDMM_SEGMENT_CACHE_COHERENT            0x00000010u
#define VIDMM_SEGMENT_PITCH_ALIGNMENT           0x00000020u
#define VIDMM_SEGMENT_POPULATED_FROM_SYSMEM     0x00000040u
#define VIDMM_SEGMENT_PRESERVED_DURING_STANDBY  0x00000080u
#define VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE 0x00000100u
#define VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE 0x00000200u
#define VIDMM_SEGMENT_DIRECT_FLIP               0x00000400u
#define VIDMM_SEGMENT_USE_64KB_PAGES            0x00000800u
#define VIDMM_SEGMENT_RESERVED_SYSMEM           0x00001000u
#define VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE 0x00002000u
#define VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE 0x00004000u
#define VIDMM_SEGMENT_APPLICATION_TARGET        0x00008000u
#define VIDMM_SEGMENT_VPR_SUPPORTED             0x00010000u
#define VIDMM_SEGMENT_VPR_PRESERVED_DURING_STANDBY 0x00020000u
#define VIDMM_SEGMENT_ENCRYPTED_PAGING_SUPPORTED 0x00040000u
#define VIDMM_SEGMENT_LOCAL_BUDGET_GROUP        0x00080000u
#define VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP     0x00100000u
#define VIDMM_SEGMENT_POPULATED_BY_RESERVED_DDR 0x00200000u
#define VIDMM_SEGMENT_RESERVED_MASK             0xFFC00000u

/* One segment (DXGK_SEGMENTDESCRIPTOR, spec 2.1; system_memory_end from DESCRIPTOR3/4, spec
 * 2.2). Its ID is its index in the table plus 1. A memory segment (no APERTURE / AGP flag) is
 * host memory the engine owns; an aperture segment is a window of addresses into which
 * backing-store pages are mapped, not copied.
 * Versions: the table is read with the stride vidmm_device_desc.segment_desc_size gives (as
 * DXGK_QUERYSEGMENTOUT4.SegmentDescriptorStride). The first layout ended before
 * system_memory_end (VIDMM_SEGMENT_DESC_SIZE_0 bytes): a table of that layout reads
 * system_memory_end as 0. */
struct vidmm_segment_desc {
    uint64_t base_address;      /* BaseAddress: the GPU address of segment offset 0 */
    uint64_t size;              /* Size: bytes, a multiple of VIDMM_PAGE_SIZE, > 0 */
    uint64_t commit_limit;      /* CommitLimit: == size for a memory segment; at most size for
                                   an aperture segment (bytes it may map at once) */
    uint32_t flags;             /* VIDMM_SEGMENT_* */
    uint32_t bank_count;        /* NbOfBanks, only with USE_BANKING: 1..127 */
    const uint64_t *bank_ends;  /* pBankRangeTable: bank_count - 1 strictly increasing end
                                   offsets of banks 1..n-1, each < size (read during create) */
    /* SystemMemoryEndAddress (spec 2.2, DXGK_SEGMENTDESCRIPTOR3/4): "for a segment partly made
     * of system memory, driver-reserved memory spans segment offsets 0..SystemMemoryEndAddress
     * inclusive, BIOS-reserved memory the rest; allocations beyond it are purged on hibernate;
     * set non-zero only with PartiallyPreservedDuringHibernate". 0: not given (the whole
     * segment follows the engine's partial-purge policy, wddm2.h "Power transitions");
     * otherwise an inclusive offset below 'size', on a memory segment (not an aperture) with
     * PARTIALLY_PRESERVED_DURING_HIBERNATE: on hibernate and hybrid sleep the bytes at offsets
     * 0..system_memory_end are kept (with the allocations lying wholly there), those above it
     * are lost (the allocations reaching above it are purged). Anything else is refused at
     * create (VIDMM_E_INVALID_ARG). */
    uint64_t system_memory_end;
};
/* Bytes of the first struct vidmm_segment_desc, which ended before system_memory_end: a
 * segment_desc_size (stride) the engine accepts besides sizeof(struct vidmm_segment_desc). */
#define VIDMM_SEGMENT_DESC_SIZE_0 offsetof(struct vidmm_segment_desc, system_memory_end)

/* ---------------------------------------------------------------------------------------------
 * Driver callbacks: what a driver model may stand in for. Every callback is optional.
 * ------------------------------------------------------------------------------------------- */

/* Paging operations (DXGK_BUILDPAGINGBUFFER_OPERATION, spec 9.2; same values). */
enum vidmm_paging_type {
    VIDMM_PAGING_TRANSFER = 0,
    VIDMM_PAGING_FILL = 1,
    VIDMM_PAGING_DISCARD_CONTENT = 2,
    VIDMM_PAGING_READ_PHYSICAL = 3,
    VIDMM_PAGING_WRITE_PHYSICAL = 4,
    VIDMM_PAGING_MAP_APERTURE_SEGMENT = 5,
    VIDMM_PAGING_UNMAP_APERTURE_SEGMENT = 6,
    VIDMM_PAGING_SPECIAL_LOCK_TRANSFER = 7,
    VIDMM_PAGING_UPDATE_PAGE_TABLE = 11     /* WDDM2 devices: GPU VA page-table entries (wddm2.h
                                               says how the record's fields are used) */
};

/* DXGK_TRANSFERFLAGS (spec 9.4) in vidmm_paging_op.flags of a TRANSFER / SPECIAL_LOCK_TRANSFER;
 * DISCARD_CONTENT uses bit 0 as AllocationIsIdle; MAP_APERTURE_SEGMENT bit 0 as CacheCoherent. */
#define VIDMM_TRANSFER_SWIZZLE            0x01u
#define VIDMM_TRANSFER_UNSWIZZLE          0x02u
#define VIDMM_TRANSFER_ALLOCATION_IS_IDLE 0x04u
#define VIDMM_TRANSFER_START              0x08u
#define VIDMM_TRANSFER_END                0x10u
#define VIDMM_DISCARD_ALLOCATION_IS_IDLE  0x01u
#define VIDMM_MAP_CACHE_COHERENT          0x01u

/* One side of a transfer. segment_id 0 is system memory: the allocation's backing store (an
 * MDL in WDDM), and segment_address is then 0 (the chunk's first page is in mdl_offset). */
struct vidmm_location {
    uint32_t segment_id;
    uint64_t segment_address;   /* BaseAddress + offset in the segment */
};

/* One paging operation, as DXGKARG_BUILDPAGINGBUFFER carries it (spec 9.3), plus the host
 * pointers a driver model needs to carry it out. Records of this type also make the paging
 * log (vidmm_paging_log_read()), whose records have their padding bytes zeroed: they compare
 * and hash as bytes. */
struct vidmm_paging_op {
    uint32_t type;              /* enum vidmm_paging_type */
    uint32_t flags;             /* see above */
    vidmm_handle allocation;    /* 0: a raw copy with no allocation (never swizzled) */
    uint32_t driver_data;       /* vidmm_alloc_desc.driver_data of the allocation (hAllocation) */
    uint64_t size;              /* TransferSize / FillSize; MAP/UNMAP: NumberOfPages * 4096 */
    uint32_t transfer_offset;   /* TransferOffset: 0 unless the transfer is split */
    uint32_t mdl_offset;        /* MdlOffset: first page of the chunk in the backing store */
    struct vidmm_location src;  /* TRANSFER: Source */
    struct vidmm_location dst;  /* TRANSFER: Destination; FILL / MAP / UNMAP / DISCARD: the segment */
    uint64_t offset_in_pages;   /* MAP / UNMAP: OffsetInPages in the aperture */
    uint32_t fill_pattern;      /* FILL: FillPattern */
    uint32_t multipass_offset;  /* MultipassOffset: 0 on the first call, kept across retries;
                                   a driver may advance it before asking for a retry */
    uint32_t swizzling_range_id;   /* SPECIAL_LOCK_TRANSFER */
    uint32_t swizzling_range_data; /* SPECIAL_LOCK_TRANSFER */
    uint64_t fence;             /* the paging fence this operation belongs to */
    /* Host view, for whoever carries the operation out (not part of the WDDM record). */
    const void *src_ptr;        /* TRANSFER: source bytes */
    void *dst_ptr;              /* TRANSFER / FILL: destination bytes */
};

/* Status values a driver callback returns: NTSTATUS, exact values (spec 13). */
#define VIDMM_STATUS_SUCCESS                          0x00000000u
#define VIDMM_STATUS_INSUFFICIENT_DMA_BUFFER          0xC01E0001u
#define VIDMM_STATUS_ALLOCATION_BUSY                  0xC01E0102u
#define VIDMM_STATUS_UNSWIZZLING_APERTURE_UNAVAILABLE 0xC01E0107u
#define VIDMM_STATUS_UNSWIZZLING_APERTURE_UNSUPPORTED 0xC01E0108u

/* DXGKARG_ACQUIRESWIZZLINGRANGE / RELEASESWIZZLINGRANGE (spec 8.3). */
struct vidmm_swizzling_range_args {
    vidmm_handle allocation;
    uint32_t driver_data;       /* the allocation's vidmm_alloc_desc.driver_data */
    uint32_t private_data;      /* PrivateDriverData of the lock */
    uint32_t range_id;          /* 0-based */
    uint32_t segment_id;        /* where the allocation is */
    uint64_t range_size;        /* in: the allocation's size */
    uint64_t cpu_translated_address; /* in/out */
};

struct vidmm_driver {
    /* paging: carry out 'op' (DxgkDdiBuildPagingBuffer + the GPU executing it). Return
     * SUCCESS; INSUFFICIENT_DMA_BUFFER to be called again with the same arguments (and your
     * multipass_offset); ALLOCATION_BUSY (TRANSFER, DISCARD_CONTENT, SPECIAL_LOCK_TRANSFER
     * only) to be called again once the allocation is idle, with ALLOCATION_IS_IDLE set. Any
     * other value is fatal: the device is removed (spec 15.7). NULL: the built-in executor.
     * Called from a paging thread, one operation at a time, in order. */
    uint32_t (*paging)(void *arg, struct vidmm_paging_op *op);
    /* Swizzling ranges (spec 8.3): return SUCCESS, UNSWIZZLING_APERTURE_UNAVAILABLE (the
     * engine releases another range and retries) or UNSWIZZLING_APERTURE_UNSUPPORTED. NULL:
     * every acquisition succeeds. Serialised among themselves. */
    uint32_t (*acquire_swizzling_range)(void *arg, struct vidmm_swizzling_range_args *a);
    uint32_t (*release_swizzling_range)(void *arg, const struct vidmm_swizzling_range_args *a);
    /* Cache maintenance (spec 15.24) of [p, p + n). NULL: vidmm_flush() writeback /
     * writeback-and-invalidate. */
    void (*flush_cpu_cache)(void *arg, void *p, size_t n);
    void (*invalidate_cpu_cache)(void *arg, void *p, size_t n);
    void *arg;
};

/* ---------------------------------------------------------------------------------------------
 * Devices.
 * ------------------------------------------------------------------------------------------- */

/* Device flags. */
#define VIDMM_DEVICE_CACHE_COHERENT  0x1u  /* the adapter snoops CPU caches: IgnoreSync locks of
                                              Cached allocations are allowed (spec 6.3 rule 4).
                                              Without it they are allowed only for allocations
                                              whose set has a CACHE_COHERENT aperture segment */
#define VIDMM_DEVICE_LOG_PAGING      0x2u  /* keep the paging log (vidmm_paging_log_read()) */
#define VIDMM_DEVICE_LAZY_RANGES     0x4u  /* swizzling-range locks untile lazily: the lock maps
                                              a linear view at once and each page is untiled on
                                              its first access (a handler thread serves the
                                              faults, kernel accesses included); unlock tiles
                                              back the pages written. Where the kernel gives no
                                              full userfaultfd with WP_ASYNC (Linux 6.7), or
                                              VIDMM_LAZY=off, the eager view is used instead.
                                              The view must not be touched after the unlock.
                                              Each lock is lazy or eager by the allocation's
                                              history; an allocation's first writable lock is
                                              eager (its pages written are sampled to choose
                                              the next).
                                              From Linux 6.8 the view's pages are recycled
                                              rather than freed at unlock (up to the linear
                                              size stays committed, as the eager view's
                                              buffer does); VIDMM_LAZY=copy frees them. */
#define VIDMM_DEVICE_WDDM2           0x8u  /* the WDDM 2.x model (include/vidmm/wddm2.h): GPU
                                              VAs, residency lists, budgets; WDDM1-only
                                              mechanisms refused. Needs swizzling_ranges 0 and
                                              at most 30 segments. */

/* Memory tiers behind memory segments, best first (statistics say which was obtained). */
enum vidmm_memory_tier {
    VIDMM_TIER_LIBHUGETLBFS = 0,  /* libhugetlbfs get_huge_pages() */
    VIDMM_TIER_HUGETLB = 1,       /* explicit huge pages, mmap(MAP_HUGETLB) */
    VIDMM_TIER_THP = 2,           /* transparent huge pages, madvise(MADV_HUGEPAGE) */
    VIDMM_TIER_BASE = 3           /* base pages */
};

struct vidmm_device_desc {
    size_t size;                        /* sizeof(struct vidmm_device_desc) */
    const struct vidmm_segment_desc *segments; /* the segment table (read during create) */
    uint32_t segment_count;             /* 1..31 */
    uint32_t flags;                     /* VIDMM_DEVICE_* */
    uint32_t paging_threads;            /* threads that run paging operations; 0: the calling
                                           thread runs them */
    uint32_t swizzling_ranges;          /* DXGK_DRIVERCAPS.NumberOfSwizzlingRanges, 0..64 */
    uint64_t aperture_commit_limit;     /* DXGK_DRIVERCAPS.ApertureSegmentCommitLimit; 0: none */
    /* sysmem_budget: bytes of backing stores kept in memory (0: no limit). It counts every
     * backing store the engine holds in memory (vidmm_stats.sysmem_used): content evicted to
     * system memory, PermanentSysMem copies (also while resident), and stale copies of
     * allocations now in a memory segment. Not counted: segments, EXISTING_* caller memory,
     * swizzling-range views. After every call, stale copies are released first (no I/O needed),
     * then with a disk tier the coldest stores are written out; stores that are locked, busy,
     * pinned or mapped by an alternate VA stay, so the budget can be exceeded while they do. */
    uint64_t sysmem_budget;
    uint64_t sysmem_reserve;            /* address space for backing stores; 0: 64 GiB */
    uint32_t paging_log_capacity;       /* records kept by the paging log; 0: 65536 */
    uint32_t memory_tier;               /* best enum vidmm_memory_tier to try; 0: all */
    const struct vidmm_driver *driver;  /* NULL: built-in executor, no callbacks (copied) */
    /* The disk tier: backing stores beyond sysmem_budget go to this swap file (NULL: no disk
     * tier). When no file exists at swap_path, the file is created without a name in its
     * directory (O_TMPFILE, or created and unlinked at once): nothing is left on disk when the
     * device is destroyed or the process dies. An existing regular file is used (truncated)
     * and left in place. */
    const char *swap_path;
    uint64_t swap_max;                  /* bytes of swap file at most; 0: 4 x the segments' sizes */
    uint32_t io_backend;                /* enum vidmm_io_backend; the environment's
                                           VIDMM_IO_BACKEND=uring|threads|sync overrides AUTO */
    uint32_t io_queue_depth;            /* requests in flight per ring; 0: 32 */
    /* How long a call without a DONOT_WAIT flag waits for the GPU (a submission fence it needs
     * signalled) before it gives up with VIDMM_E_TIMEOUT; 0 (the default): it waits as long as
     * it takes, as WDDM does. A lock, eviction or make-resident that times out changed nothing;
     * a submission or make-resident that timed out after queueing paging that waits for the GPU
     * leaves that paging queued (it completes once the GPU signals; no fence was issued). A
     * descriptor whose 'size' ends before this field (an older caller) reads it as 0. */
    uint64_t wait_timeout_ns;
    /* (The descriptor's 'size' is sizeof(struct vidmm_device_desc) or, from an older caller,
     * exactly the size of an earlier version: any other is refused.)
     * The stride of 'segments' in bytes (DXGK_QUERYSEGMENTOUT4.SegmentDescriptorStride, spec
     * 2.2): sizeof(struct vidmm_segment_desc), or VIDMM_SEGMENT_DESC_SIZE_0 for a table of the
     * first layout (without system_memory_end). 0 reads as sizeof(struct vidmm_segment_desc)
     * of this version (the layout with system_memory_end), so that a descriptor zeroed and
     * given its 'size' reads the table its own header declares. Any other value is refused
     * (VIDMM_E_INVALID_ARG). A descriptor whose 'size' ends before this field (an older
     * caller) has a table of the first layout: its stride is VIDMM_SEGMENT_DESC_SIZE_0. */
    uint32_t segment_desc_size;
};
#define VIDMM_DEVICE_DESC_INIT { sizeof(struct vidmm_device_desc), NULL, 0, 0, 1, 0, 0, 0, 0, 0, 0, NULL, \
                                 NULL, 0, 0, 0, 0, sizeof(struct vidmm_segment_desc) }

/* How the disk tier moves bytes. */
enum vidmm_io_backend {
    VIDMM_IO_AUTO = 0,          /* io_uring, else the thread pool */
    VIDMM_IO_URING = 1,         /* io_uring (liburing) */
    VIDMM_IO_THREADS = 2,       /* a pool of threads calling pread / pwrite */
    VIDMM_IO_SYNC = 3           /* pread / pwrite in the calling thread */
};

/* vidmm_device_create() validates the segment table (spec 15.1) and creates a device, its
 * segments' memory and its paging threads. The table is read through the stride
 * 'segment_desc_size' (or, from a descriptor that ends before that field, in the first layout).
 * Returns: 0, VIDMM_E_INVALID_ARG (a rule of spec 15.1 broken - system_memory_end non-zero
 * without PARTIALLY_PRESERVED_DURING_HIBERNATE or not below the segment's size among them, spec
 * 2.2 - or a bad descriptor: 'size' of no version, a stride of no layout), VIDMM_E_NO_MEMORY,
 * VIDMM_E_IO (the swap file at 'swap_path' could not be opened, created or sized: a
 * VIDMM_LOG_WARN line names the path and the system's reason). */
VIDMM_API int vidmm_device_create(const struct vidmm_device_desc *desc, vidmm_device **out);

/* vidmm_device_destroy() frees everything: every allocation, lock and mapping. It waits for the
 * paging operation running now, not for the GPU: queued operations that have not run are
 * dropped (their bytes are being freed), and unsignalled fences are not waited for. Pointers the
 * device handed out become invalid. NULL is ignored.
 * A destroyed device: the device's own memory (a few tens of KiB) is kept, marked destroyed,
 * until eight more devices have been destroyed, and every call given it meanwhile - a second
 * vidmm_device_destroy() included - does nothing but return VIDMM_E_INVALID_ARG (void calls:
 * nothing, 0) with one VIDMM_LOG_DEBUG line "<call>: dev: <address> was destroyed". Given one
 * destroyed longer ago, a call reads freed memory: that cannot be caught, and is undefined. */
VIDMM_API void vidmm_device_destroy(vidmm_device *dev);

/* vidmm_device_remove() simulates a TDR / PnP stop (spec 15.27): outstanding locks are
 * invalidated, pinned allocations unpinned, and every later call but destroy returns
 * VIDMM_E_DEVICE_REMOVED. Returns 0 or VIDMM_E_DEVICE_REMOVED (already removed). */
VIDMM_API int vidmm_device_remove(vidmm_device *dev);

/* ---------------------------------------------------------------------------------------------
 * Allocations.
 * ------------------------------------------------------------------------------------------- */

/* DXGK_ALLOCATIONINFOFLAGS (WDDM1 layout, spec 4.1), exact values. */
#define VIDMM_ALLOC_CPU_VISIBLE           0x00000001u
#define VIDMM_ALLOC_PERMANENT_SYSMEM      0x00000002u
#define VIDMM_ALLOC_CACHED                0x00000004u
#define VIDMM_ALLOC_PROTECTED             0x00000008u
#define VIDMM_ALLOC_EXISTING_SYSMEM       0x00000010u
#define VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM 0x00000020u
#define VIDMM_ALLOC_FROM_END_OF_SEGMENT   0x00000040u
#define VIDMM_ALLOC_SWIZZLED              0x00000080u
#define VIDMM_ALLOC_OVERLAY               0x00000100u
#define VIDMM_ALLOC_CAPTURE               0x00000200u
#define VIDMM_ALLOC_USE_ALTERNATE_VA      0x00000400u
#define VIDMM_ALLOC_SYNCHRONOUS_PAGING    0x00000800u
#define VIDMM_ALLOC_LINK_MIRRORED         0x00001000u
#define VIDMM_ALLOC_LINK_INSTANCED        0x00002000u
#define VIDMM_ALLOC_HISTORY_BUFFER        0x00004000u
#define VIDMM_ALLOC_ACCESSED_PHYSICALLY   0x00008000u
#define VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION 0x00010000u
#define VIDMM_ALLOC_HARDWARE_PROTECTED    0x00020000u
#define VIDMM_ALLOC_CPU_VISIBLE_ON_DEMAND 0x00040000u
#define VIDMM_ALLOC_RESERVED_MASK         0xFFF80000u

/* What the runtime knows about an allocation beyond DXGK_ALLOCATIONINFO. */
#define VIDMM_ALLOC_KIND_PRIMARY          0x1u  /* the primary (scan-out) surface */
#define VIDMM_ALLOC_KIND_SHARED           0x2u  /* shared: only 'process' may lock it */

/* D3DDDI_ALLOCATIONPRIORITY_* (spec 5). */
#define VIDMM_PRIORITY_MINIMUM 0x28000000u
#define VIDMM_PRIORITY_LOW     0x50000000u
#define VIDMM_PRIORITY_NORMAL  0x78000000u
#define VIDMM_PRIORITY_HIGH    0xA0000000u
#define VIDMM_PRIORITY_MAXIMUM 0xC8000000u

/* An allocation (DXGK_ALLOCATIONINFO, spec 3.3). Segment sets: bit n = segment ID n + 1. */
struct vidmm_alloc_desc {
    size_t size_of;                 /* sizeof(struct vidmm_alloc_desc) */
    uint64_t size;                  /* Size: > 0; rounded up to VIDMM_PAGE_SIZE */
    uint32_t alignment;             /* Alignment in bytes: 0 or a power of two; a multiple of
                                       64 KB when a supported segment has USE_64KB_PAGES */
    uint64_t pitch_aligned_size;    /* PitchAlignedSize: 0, or >= size (PITCH_ALIGNMENT segments) */
    uint32_t hinted_bank;           /* DXGK_SEGMENTBANKPREFERENCE value (spec 3.2) */
    uint32_t preferred_segment;     /* DXGK_SEGMENTPREFERENCE value (spec 3.1) */
    uint32_t supported_read_set;    /* SupportedReadSegmentSet */
    uint32_t supported_write_set;   /* SupportedWriteSegmentSet */
    uint32_t eviction_set;          /* EvictionSegmentSet: aperture segments only */
    uint32_t max_renaming;          /* MaximumRenamingListLength: 0 = no cap */
    uint32_t flags;                 /* VIDMM_ALLOC_* (DXGK_ALLOCATIONINFOFLAGS) */
    uint32_t priority;              /* AllocationPriority: != 0 */
    uint32_t kind;                  /* VIDMM_ALLOC_KIND_* */
    uint32_t process;               /* the creating process (any id); shared: who may lock */
    uint32_t driver_data;           /* handed back in paging operations and range callbacks */
    uint32_t fill_pattern;          /* FillPattern of the first page-in (content starts as it) */
    void *existing_memory;          /* EXISTING_SYSMEM / EXISTING_KERNEL_SYSMEM: page-aligned,
                                       'size' bytes (rounded), owned by the caller, outlives the
                                       allocation */
    /* SWIZZLED: the tiled layout of the content (copied; the equation too). The allocation
     * holds the tiled surface; locks through a swizzling range see the packed linear order. */
    const struct vidmm_tile_layout *layout;
    const struct vidmm_surface_desc *surface;
};

/* vidmm_alloc_create() validates 'desc' (spec 15.2) and creates an allocation. It is placed
 * nowhere yet: the first submission or make-resident places it in a segment (a lock before
 * that gives its system-memory backing store, as WDDM locks a non-resident allocation). Its
 * content starts as 'fill_pattern' repeated; no memory is committed for it here (a
 * PermanentSysMem copy too is committed at its first use). Returns: 0 with '*out' set,
 * VIDMM_E_INVALID_ARG (a rule of spec 15.2 broken; logged at VIDMM_LOG_DEBUG with the rule),
 * VIDMM_E_NO_VIDEO_MEMORY (larger than any segment of its set could ever hold: its size - the
 * top 20 % for Overlay / Capture - and for an aperture its CommitLimit and the adapter's
 * ApertureSegmentCommitLimit), VIDMM_E_NO_MEMORY (larger than the sysmem_reserve, no host
 * memory, or the device already holds 1,048,575 allocation instances - a handle's index has 20
 * bits beside its generation and its device's tag), VIDMM_E_UNSUPPORTED (EXISTING_* memory whose read or write set has no memory
 * segment: caller memory cannot be mapped into an aperture here), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_alloc_create(vidmm_device *dev, const struct vidmm_alloc_desc *desc, vidmm_handle *out);

/* vidmm_alloc_destroy() destroys an allocation and all its rename instances ('h' may name any
 * instance). It waits for nothing: the caller stops using it first. Locks held on it end.
 * Returns 0, VIDMM_E_INVALID_ARG (unknown handle), VIDMM_E_DEVICE_REMOVED (and destroys it),
 * VIDMM_E_TIMEOUT (paging queued for it waits for the GPU beyond the device's wait_timeout_ns:
 * nothing destroyed). */
VIDMM_API int vidmm_alloc_destroy(vidmm_device *dev, vidmm_handle h);

/* Where an allocation's current content is. */
enum vidmm_where {
    VIDMM_WHERE_NONE = 0,        /* never placed, content is the fill pattern */
    VIDMM_WHERE_SEGMENT = 1,     /* in a memory segment */
    VIDMM_WHERE_APERTURE = 2,    /* backing-store pages mapped in an aperture segment */
    VIDMM_WHERE_SYSMEM = 3,      /* evicted to its system-memory backing store */
    VIDMM_WHERE_DISK = 4         /* written out to the swap file (the disk tier) */
};

struct vidmm_alloc_info {
    size_t size_of;              /* sizeof(struct vidmm_alloc_info), set by the caller */
    uint32_t where;              /* enum vidmm_where */
    uint32_t segment_id;         /* SEGMENT / APERTURE: its ID; else 0 */
    uint64_t offset;             /* in the segment */
    uint64_t gpu_address;        /* segment BaseAddress + offset */
    uint64_t size;               /* rounded size (the space it takes: pitch_aligned_size in
                                    a PITCH_ALIGNMENT segment) */
    uint32_t priority;
    uint32_t lock_count;
    bool dirty;                  /* written since its current copy was paged in */
    bool busy;                   /* referenced by an unsignalled submission fence */
    bool evicted_swizzled;       /* SWIZZLED and WHERE_SYSMEM: the copy is tiled (spec 8.1) */
    bool pinned;                 /* Overlay / Capture (until device removal) */
    uint32_t instance;           /* rename instance index of 'h' */
    vidmm_handle current;        /* the allocation's current instance */
    bool content_lost;           /* the disk tier could not read it back intact (checksum or I/O
                                    error): its content was reset to the fill pattern */
};

/* vidmm_alloc_query() describes allocation 'h'. Returns 0, VIDMM_E_INVALID_ARG,
 * VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_alloc_query(vidmm_device *dev, vidmm_handle h, struct vidmm_alloc_info *info);

/* vidmm_set_priority() sets the priority of 'count' allocations (all instances) at once
 * (pfnSetPriorityCb, spec 5 / 15.19); it takes effect at the next placement. Any value is
 * allowed. Returns 0, VIDMM_E_INVALID_ARG (unknown handle, count 0, NULL arrays: nothing
 * changed), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_set_priority(vidmm_device *dev, const vidmm_handle *handles, const uint32_t *priorities,
                                 uint32_t count);

/* vidmm_make_resident() places allocations as a submission referencing them would, without a
 * fence (the "explicit make-resident"). 'where' (may be NULL) receives their placement.
 * Returns as vidmm_submit(). */
struct vidmm_residency;
VIDMM_API int vidmm_make_resident(vidmm_device *dev, const vidmm_handle *handles, uint32_t count,
                                  struct vidmm_residency *where);

/* vidmm_make_resident_async() starts reading back from the disk tier every listed allocation
 * that was written out, and returns at once with '*paging_fence': once that fence has passed
 * (vidmm_paging_fence_wait() / vidmm_paging_fence_completed()), a lock, submission or
 * make-resident of them has no disk read to wait for. Allocations not on disk need nothing.
 * Returns 0, VIDMM_E_INVALID_ARG, VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_make_resident_async(vidmm_device *dev, const vidmm_handle *handles, uint32_t count,
                                        uint64_t *paging_fence);

/* vidmm_paging_fence_completed() returns the last paging fence of the disk tier all of whose
 * reads have completed; vidmm_paging_fence_wait() waits for 'fence' (timeout as
 * vidmm_fence_wait()). Returns 0, VIDMM_E_TIMEOUT, VIDMM_E_INVALID_ARG (never issued). */
VIDMM_API uint64_t vidmm_paging_fence_completed(vidmm_device *dev);
VIDMM_API int vidmm_paging_fence_wait(vidmm_device *dev, uint64_t fence, uint64_t timeout_ns);

/* vidmm_trim_to_budget() writes out the coldest backing stores until system memory is within
 * sysmem_budget (what the engine also does after every call), and with 'wait' waits until every
 * write-out in flight has completed. Returns 0, VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_trim_to_budget(vidmm_device *dev, bool wait);

/* vidmm_evict() evicts allocations from their segments now (to their eviction segment or the
 * backing store), as memory pressure would. Locked, pinned and busy allocations are refused.
 * Returns 0, VIDMM_E_INVALID_ARG, VIDMM_E_CANT_EVICT_PINNED, VIDMM_E_BUSY (locked or busy),
 * VIDMM_E_NO_MEMORY, VIDMM_E_DEVICE_REMOVED; the allocations before the failing one stay
 * evicted. */
VIDMM_API int vidmm_evict(vidmm_device *dev, const vidmm_handle *handles, uint32_t count);

/* ---------------------------------------------------------------------------------------------
 * Submissions and fences.
 * ------------------------------------------------------------------------------------------- */

/* D3DDDI_ALLOCATIONLIST entry (spec 4.5). */
#define VIDMM_REF_WRITE            0x1u  /* WriteOperation: the GPU writes it */
#define VIDMM_REF_DO_NOT_RETIRE    0x2u  /* DoNotRetireInstance */
/* OfferPriority, bits 2-4 (0x1C, WDDM 1.2): a VIDMM_OFFER_PRIORITY_* value (wddm2.h: LOW 1,
 * NORMAL 2, HIGH 3, AUTO 4; 0 NONE) in VIDMM_REF_OFFER_PRIORITY(p). Not NONE: the allocation is
 * offered by this submission, "after this DMA buffer completes" (spec 11) - offered when the
 * submission is issued (from then on it cannot be locked or submitted until reclaimed, as after
 * vidmm_offer()), its offer in effect (its content discardable) once the submission's fence has
 * passed. Values 5-7, or a pinned or locked allocation, are refused (VIDMM_E_INVALID_ARG). */
#define VIDMM_REF_OFFER_PRIORITY_SHIFT 2u
#define VIDMM_REF_OFFER_PRIORITY_MASK  0x1Cu
#define VIDMM_REF_OFFER_PRIORITY(p)    (((uint32_t)(p) << VIDMM_REF_OFFER_PRIORITY_SHIFT) & VIDMM_REF_OFFER_PRIORITY_MASK)
struct vidmm_alloc_ref {
    vidmm_handle allocation;
    uint32_t flags;              /* VIDMM_REF_* */
};

/* Where a referenced allocation lives for the submitted work. */
struct vidmm_residency {
    uint32_t segment_id;         /* memory or aperture segment */
    uint32_t reserved;
    uint64_t offset;             /* in the segment */
    uint64_t gpu_address;        /* segment BaseAddress + offset */
    void *cpu;                   /* host view of those bytes, for the caller acting as the GPU:
                                    valid until the submission's fence is signalled */
};

/* Submission flags. */
#define VIDMM_SUBMIT_DONOT_WAIT 0x1u  /* fail with VIDMM_E_BUSY rather than wait for the GPU:
                                         a busy allocation the placement needs to move or
                                         evict, paging queued ahead that waits for the GPU, a
                                         SynchronousPaging operation of a busy allocation */

/* vidmm_submit() makes every listed allocation resident (reading back from the disk tier what
 * was written out: with VIDMM_SUBMIT_DONOT_WAIT such a read is started and VIDMM_E_BUSY
 * returned; a read that fails its checksum returns VIDMM_E_IO; placing and evicting as spec 15.3-5
 * say; locked ones per spec 15.17: one whose content is in its backing store is used through
 * an aperture segment of its set, and one locked in place in a CPU-visible memory segment
 * stays there - the lock's pointer must stay valid and segment memory cannot be remapped under
 * it; without an aperture segment in its set either way VIDMM_E_CANT_RENDER_LOCKED), waits for the paging that needs, marks written ones dirty,
 * and returns in '*fence' a fence value the caller (the GPU) signals once it has executed the
 * work ('fence' must not be NULL: the listed allocations stay busy until that fence, or a later
 * one, is signalled). 'where' (may be NULL) receives one entry per reference. An allocation listed twice is
 * one reference (write if either is). A reference with an OfferPriority (VIDMM_REF_OFFER_PRIORITY)
 * offers its allocation once the submission is issued, in effect when its fence has passed.
 * Returns: 0; VIDMM_E_INVALID_ARG (NULL 'refs' or 'fence', bad handle, count 0 or > 65536, unknown flags, an offered
 * allocation, an OfferPriority above AUTO or on a pinned or locked allocation),
 * VIDMM_E_INVALID_INSTANCE (rename instances out of order, spec
 * 15.18), VIDMM_E_NO_VIDEO_MEMORY, VIDMM_E_CANT_EVICT_PINNED, VIDMM_E_CANT_RENDER_LOCKED,
 * VIDMM_E_BUSY (DONOT_WAIT), VIDMM_E_TIMEOUT (the device's wait_timeout_ns passed waiting
 * for the GPU: the paging queued for it completes once the GPU signals), VIDMM_E_DEVICE_REMOVED.
 * On failure no fence is issued; the allocations already paged in for it stay where they are.
 * When the list does not fit as placed (its own placements fragmenting a segment), its idle
 * allocations are evicted and the list placed again, largest first, before
 * VIDMM_E_NO_VIDEO_MEMORY. A submission returns only once every earlier paging operation of a
 * SynchronousPaging allocation has completed (spec 15.25). Pinned allocations never move: one
 * placed outside the set a reference needs gives VIDMM_E_CANT_EVICT_PINNED. */
VIDMM_API int vidmm_submit(vidmm_device *dev, const struct vidmm_alloc_ref *refs, uint32_t count,
                           uint32_t flags, struct vidmm_residency *where, uint64_t *fence);

/* vidmm_fence_signal() marks every submission fence up to 'fence' executed (fences complete in
 * order). Returns 0, VIDMM_E_INVALID_ARG (a fence never issued), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_fence_signal(vidmm_device *dev, uint64_t fence);

/* vidmm_fence_completed() returns the last signalled fence (0 when none). */
VIDMM_API uint64_t vidmm_fence_completed(vidmm_device *dev);

/* vidmm_fence_wait() waits until 'fence' is signalled or 'timeout_ns' passes (UINT64_MAX:
 * forever). Returns 0, VIDMM_E_TIMEOUT, VIDMM_E_INVALID_ARG (never issued),
 * VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_fence_wait(vidmm_device *dev, uint64_t fence, uint64_t timeout_ns);

/* vidmm_gpu_access() reads (write = false) or writes 'n' bytes at 'offset' of allocation 'h'
 * wherever its content is now - segment, aperture, backing store - without moving it: the
 * caller acting as the GPU (or a debugger). A write marks it dirty. Content on the disk tier is
 * read back first, and paging queued for the allocation is waited for (it may itself wait for
 * the GPU). Returns 0, VIDMM_E_INVALID_ARG (range outside the allocation), VIDMM_E_TIMEOUT (the
 * device's wait_timeout_ns passed while the allocation's queued paging waited for the GPU:
 * nothing read or written), VIDMM_E_IO (the read-back failed: the content was reset to the fill
 * pattern), VIDMM_E_NO_MEMORY (a first write could not commit the backing store),
 * VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_gpu_access(vidmm_device *dev, vidmm_handle h, uint64_t offset, void *buf, size_t n,
                               bool write);

/* ---------------------------------------------------------------------------------------------
 * CPU locks (pfnLockCb / pfnUnlockCb, spec 6).
 * ------------------------------------------------------------------------------------------- */

/* D3DDDICB_LOCKFLAGS (spec 6.2), exact values. */
#define VIDMM_LOCK_READ_ONLY           0x001u
#define VIDMM_LOCK_WRITE_ONLY          0x002u
#define VIDMM_LOCK_DONOT_WAIT          0x004u
#define VIDMM_LOCK_IGNORE_SYNC         0x008u
#define VIDMM_LOCK_ENTIRE              0x010u
#define VIDMM_LOCK_DONOT_EVICT         0x020u
#define VIDMM_LOCK_ACQUIRE_APERTURE    0x040u
#define VIDMM_LOCK_DISCARD             0x080u
#define VIDMM_LOCK_NO_EXISTING_REFERENCE 0x100u
#define VIDMM_LOCK_USE_ALTERNATE_VA    0x200u
#define VIDMM_LOCK_IGNORE_READ_SYNC    0x400u
#define VIDMM_LOCK_RESERVED_MASK       0xFFFFF800u

/* D3DDDICB_LOCK (spec 6.1). */
struct vidmm_lock_args {
    vidmm_handle allocation;     /* in; out: the new instance after a renaming Discard */
    uint32_t private_data;       /* PrivateDriverData: passed to the range callbacks; ranges
                                    are cached per (allocation, private_data) */
    uint32_t page_count;         /* NumPages */
    const uint32_t *pages;       /* pPages: page indices (0 = first page) */
    uint32_t flags;              /* VIDMM_LOCK_* */
    uint32_t process;            /* the locking process (shared allocations: must be the creator) */
    void *data;                  /* out: pData (a page list: the first listed page). For a lock
                                    through a swizzling range: the packed linear surface */
};

/* vidmm_lock() locks an allocation for CPU access: validation (spec 6.3 / 15.11, Discard
 * neutralising DONOT_WAIT and IGNORE_SYNC first), relock rules (15.12), synchronisation
 * (15.13), placement (15.14), swizzled locks (15.15, 8.2: a swizzling range only for an
 * allocation in a CPU-visible memory segment, else the unswizzling eviction), alternate VAs
 * (15.16), renaming (15.18: a Discard, with NO_EXISTING_REFERENCE too, never gets an instance
 * the GPU still uses or another lock holds). An allocation written out to the disk tier is read
 * back first. Returns: 0; VIDMM_E_INVALID_ARG; VIDMM_E_BUSY (DONOT_WAIT and the lock would wait
 * for the GPU - the allocation busy, an eviction or copy-back of a busy allocation, paging
 * queued ahead that waits for the GPU, a read-back from disk -, or a Discard that could not
 * rename); VIDMM_E_NOT_AVAILABLE (no aperture and DONOT_EVICT); VIDMM_E_CANT_EVICT_PINNED;
 * VIDMM_E_NO_MEMORY; VIDMM_E_IO (the read-back failed: the content is lost, reset to the fill
 * pattern); VIDMM_E_TIMEOUT (the device's wait_timeout_ns passed while busy: nothing changed);
 * VIDMM_E_DEVICE_REMOVED. Blocks while the allocation is busy unless told not to. */
VIDMM_API int vidmm_lock(vidmm_device *dev, struct vidmm_lock_args *args);

/* Narrow locks (issue 16): a swizzling-range lock of part of a SWIZZLED allocation - one mip
 * level, one array layer, one subresource, or a box of one subresource - untiles only that
 * part, and its unlock tiles back only what the CPU wrote inside it. The view is laid out as
 * the whole-allocation lock's (the packed linear surface: layer 0 mips 0..M-1, layer 1 ...);
 * 'args->data' points at the part's first element and the pitches below step through it.
 * Bytes of the view outside the part are unspecified (not the surface's) and writes to them
 * are not tiled back. */
#define VIDMM_LOCK_REGION_ALL   UINT32_MAX  /* as 'mip' / 'layer': every mip / every layer */
#define VIDMM_LOCK_REGION_BOX   0x1u        /* 'box' selects a box of subresource (mip, layer) */

struct vidmm_lock_region {
    size_t size_of;              /* sizeof(struct vidmm_lock_region), set by the caller */
    uint32_t flags;              /* VIDMM_LOCK_REGION_* */
    uint32_t mip;                /* a mip level, or VIDMM_LOCK_REGION_ALL */
    uint32_t layer;              /* an array layer (0 for 3D), or VIDMM_LOCK_REGION_ALL */
    struct vidmm_box box;        /* VIDMM_LOCK_REGION_BOX: elements (blocks for compressed
                                    formats; bytes for the Intel tilings) of the subresource */
    /* out, on success */
    uint64_t offset;             /* where 'args->data' is in the packed linear surface */
    uint64_t row_pitch;          /* bytes from a row of the first selected subresource to the next */
    uint64_t slice_pitch;        /* bytes from a slice (3D) to the next */
    uint64_t layer_pitch;        /* bytes from a mip of one layer to the same mip of the next */
};
/* Every mip of every layer, no box (the whole allocation): set mip, layer or the box from here. */
#define VIDMM_LOCK_REGION_INIT { sizeof(struct vidmm_lock_region), 0, VIDMM_LOCK_REGION_ALL,         \
                                 VIDMM_LOCK_REGION_ALL, { 0, 0, 0, 0, 0, 0 }, 0, 0, 0, 0 }

/* vidmm_lock_region() is vidmm_lock() of the part of the allocation 'region' names (a narrow
 * lock). 'args->flags' must include ACQUIRE_APERTURE (a narrow lock is a swizzling-range lock),
 * and neither USE_ALTERNATE_VA nor LOCK_ENTIRE nor a page list. mip = layer =
 * VIDMM_LOCK_REGION_ALL without a box is the whole allocation. Where no range can be had and the allocation is
 * evicted unswizzled instead (spec 8.2), or it already was, the whole allocation is converted
 * by that one UNSWIZZLE transfer (its system-memory copy is linear or tiled as a whole, spec
 * 8.1) and 'args->data' points at the part in it. A range lock, narrow or not, issues no
 * paging operation: only the part is converted, by the engine, as the range's hardware would.
 * Returns as vidmm_lock(); VIDMM_E_INVALID_ARG besides (logged with the rule, nothing
 * changed) for: a NULL 'region', 'size_of' too small, unknown region flags, an allocation not
 * SWIZZLED (no tiling layout), a lock without ACQUIRE_APERTURE or with USE_ALTERNATE_VA,
 * LOCK_ENTIRE or a page list, a mip or layer out of range, a box with VIDMM_LOCK_REGION_ALL,
 * an empty box, a box outside the subresource. */
VIDMM_API int vidmm_lock_region(vidmm_device *dev, struct vidmm_lock_args *args, struct vidmm_lock_region *region);

/* vidmm_unlock() unlocks 'count' allocations (D3DDDICB_UNLOCK): a swizzled range's view is
 * tiled back unless the lock was READ_ONLY (what was written; a narrow lock's part only); a
 * PermanentSysMem allocation resident in a segment gets the listed pages transferred back -
 * done, and in the paging log, when the call returns, unless the GPU still uses the
 * allocation or other paging waits for the GPU, queued before the transfer or running beside
 * it (the transfer then waits for the GPU, the unlock does not). A writable lock
 * without a page list of an allocation of 256 KiB or more records which pages the CPU (or the
 * kernel, e.g. read(2) into it) wrote, where the kernel offers userfaultfd's asynchronous
 * write-protect (Linux 6.7): the transfer back covers those pages, and for a Cached
 * allocation the cache flush before the GPU next reads it too; elsewhere, or with
 * VIDMM_LOCK_DIRTY=off, every page counts as written. The record is per page of the memory
 * behind the allocation: where that memory is on transparent huge pages the kernel resolves a
 * write for the whole 2 MiB page, and every 4 KiB page of it counts as written (more is
 * transferred or flushed, never less). Returns 0, VIDMM_E_INVALID_ARG (count 0, NULL, a handle not locked:
 * nothing unlocked), VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_unlock(vidmm_device *dev, uint32_t count, const vidmm_handle *handles);

/* vidmm_invalidate_cache() (D3DKMTInvalidateCache): cache maintenance of bytes
 * [offset, offset + n) of 'h' where it lives, for callers that share it with the GPU outside
 * locks. Returns 0, VIDMM_E_INVALID_ARG, VIDMM_E_DEVICE_REMOVED. */
VIDMM_API int vidmm_invalidate_cache(vidmm_device *dev, vidmm_handle h, uint64_t offset, uint64_t n);

/* ---------------------------------------------------------------------------------------------
 * Introspection.
 * ------------------------------------------------------------------------------------------- */

/* vidmm_paging_log_read() moves up to 'max' of the oldest paging-log records into 'out' and
 * returns how many (0 when empty or logging is off). Records come in the order operations were
 * issued. When the log is full the oldest records are dropped (counted in the statistics). */
VIDMM_API size_t vidmm_paging_log_read(vidmm_device *dev, struct vidmm_paging_op *out, size_t max);

struct vidmm_segment_stats {
    uint64_t size;
    uint64_t used;               /* bytes placed (memory) or mapped (aperture) */
    uint64_t largest_free;
    uint32_t allocations;        /* resident in it */
    uint32_t memory_tier;        /* enum vidmm_memory_tier (memory segments); apertures: BASE */
};

struct vidmm_stats {
    size_t size_of;              /* sizeof(struct vidmm_stats), set by the caller */
    uint32_t segment_count;
    uint32_t paging_threads;
    uint64_t allocations;        /* live allocations (instances) */
    uint64_t sysmem_used;        /* bytes of backing stores in memory */
    uint64_t submissions, locks, renames;
    uint64_t paging_ops[8];      /* by enum vidmm_paging_type, types 0-7 (UPDATE_PAGE_TABLE is
                                    counted in the paging log only) */
    uint64_t bytes_paged_in;     /* into segments (transfers and fills) */
    uint64_t bytes_paged_out;    /* out of segments */
    uint64_t evictions;
    uint64_t ranges_acquired, ranges_released;
    uint64_t paging_log_dropped;
    uint64_t cache_flushes, cache_invalidates;
    struct vidmm_segment_stats segments[VIDMM_MAX_SEGMENTS];
    /* The disk tier. */
    uint64_t sysmem_budget;      /* as configured (0: none) */
    uint32_t io_backend;         /* enum vidmm_io_backend running (AUTO: no disk tier) */
    uint32_t io_direct;          /* the swap file is open with O_DIRECT */
    uint64_t swap_size, swap_used;
    uint64_t swap_writes, swap_reads;           /* allocations written out / read back */
    uint64_t swap_bytes_written, swap_bytes_read;
    uint64_t swap_in_flight, swap_max_in_flight; /* I/O requests queued or running (queue depth) */
    uint64_t swap_write_failures;               /* write-outs that failed: the content stayed */
    uint64_t swap_read_failures;                /* read-backs that failed: content lost */
    uint64_t swap_warm_bytes;   /* memory of written-out allocations kept (at most 32 MiB) so
                                   that read-backs need not fault fresh pages in */
};

/* vidmm_get_stats() fills '*out'. Returns 0, VIDMM_E_INVALID_ARG (size_of too small). Works
 * after removal. */
VIDMM_API int vidmm_get_stats(vidmm_device *dev, struct vidmm_stats *out);

VIDMM_END_DECLS

#endif /* VIDMM_DEVICE_H */
