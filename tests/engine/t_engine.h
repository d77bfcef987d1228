/* SPDX-License-Identifier: MIT */
/* tests/engine/t_engine.h - what the engine conformance suites (tests/engine/test_conf_*.c)
 * share: segment tables and devices, allocation descriptors, submissions and fences, the
 * paging log, a recording driver, the swizzled-surface fixture, and the "nothing changed"
 * snapshot every refused call is checked against.
 *
 * Every device these helpers make keeps the paging log (VIDMM_DEVICE_LOG_PAGING) and runs its
 * paging operations on the calling thread (paging_threads 0) unless a test asks otherwise, so
 * a test reads the exact operations its last call caused. Segments are a few MiB at most. */
#ifndef VIDMM_TESTS_T_ENGINE_H
#define VIDMM_TESTS_T_ENGINE_H

#ifdef T_LITE_HARNESS
#  include "t_lite.h" /* the ThreadSanitizer build: see tests/common/t_lite.h */
#else
#  include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vidmm/vidmm.h"

#define T_KiB 1024ull
#define T_MiB (1024ull * 1024ull)
#define T_PG ((uint64_t)VIDMM_PAGE_SIZE)

/* Segment set bit of segment ID 'id' (spec 1: bit n = ID n + 1). */
#define T_SET(id) (1u << ((id) - 1u))

/* A PreferredSegment value (spec 3.1): SegmentIdN in bits 6N..6N+4, DirectionN in bit 6N+5. */
#define T_PREF(n, id) ((uint32_t)(id) << (6u * (n)))
#define T_PREF_DOWN(n) (1u << (6u * (n) + 5u))
/* A HintedBank value (spec 3.2): BankN in bits 8N..8N+6, DirectionN in bit 8N+7. */
#define T_BANK(n, id) ((uint32_t)(id) << (8u * (n)))
#define T_BANK_DOWN(n) (1u << (8u * (n) + 7u))

#define T_PROC 100u           /* the process every test allocation is created by */
#define T_OTHER_PROC 200u     /* a second process */
#define T_FILL 0x5A3CC3A5u    /* default fill pattern */
#define T_DRV_DATA 0x00C0FFEEu
#define T_BAD_HANDLE 0x7FFFFF00u
#define T_OUT_SENTINEL ((vidmm_handle)0xDEADBEEFu)

/* ---------------------------------------------------------------------------------------------
 * The standard device: three segments.
 *   ID 1 T_VIS: memory segment, CPU_VISIBLE,      1 MiB at GPU address 0x10000000
 *   ID 2 T_LOC: memory segment, not CPU-visible,  1 MiB at GPU address 0x20000000
 *   ID 3 T_APE: aperture segment,                 2 MiB at GPU address 0x40000000
 * ------------------------------------------------------------------------------------------- */
#define T_VIS 1u
#define T_LOC 2u
#define T_APE 3u
#define T_VIS_BASE 0x10000000ull
#define T_LOC_BASE 0x20000000ull
#define T_APE_BASE 0x40000000ull
#define T_VIS_SIZE (1 * T_MiB)
#define T_LOC_SIZE (1 * T_MiB)
#define T_APE_SIZE (2 * T_MiB)

struct vidmm_segment_desc t_mem_seg(uint64_t base, uint64_t size, uint32_t flags);
struct vidmm_segment_desc t_aper_seg(uint64_t base, uint64_t size, uint32_t flags);

/* t_segs_pack_v0() writes 'segs' to 'dst' in the first layout of struct vidmm_segment_desc
 * (VIDMM_SEGMENT_DESC_SIZE_0 bytes each, without system_memory_end), as a caller built against
 * that header would pass them. 'dst' holds count * VIDMM_SEGMENT_DESC_SIZE_0 bytes. */
void t_segs_pack_v0(void *dst, const struct vidmm_segment_desc *segs, uint32_t count);

/* A device descriptor over 'segs' with the test defaults (log on, no paging thread). */
struct vidmm_device_desc t_ddesc(const struct vidmm_segment_desc *segs, uint32_t count);

/* t_dev() creates a device from 'd' and fails the test if that fails. */
vidmm_device *t_dev(const struct vidmm_device_desc *d);
/* The standard device, with 'ranges' swizzling ranges and driver 'drv' (may be NULL). */
vidmm_device *t_dev_std_ex(uint32_t ranges, const struct vidmm_driver *drv, uint32_t extra_flags);
vidmm_device *t_dev_std(void);
/* A device with one CPU-visible memory segment of 'size' bytes at 0x10000000. */
vidmm_device *t_dev_one(uint64_t size);

/* Device creation that must be refused with VIDMM_E_INVALID_ARG, leaving '*out' untouched;
 * and its positive control, which must succeed. */
void t_create_refused(const struct vidmm_device_desc *d, const char *why);
void t_create_ok(const struct vidmm_device_desc *d, const char *why);
void t_segs_refused(const struct vidmm_segment_desc *segs, uint32_t count, const char *why);
void t_segs_ok(const struct vidmm_segment_desc *segs, uint32_t count, const char *why);

/* ---------------------------------------------------------------------------------------------
 * Allocations.
 * ------------------------------------------------------------------------------------------- */

/* A valid descriptor: 'size' bytes, read and write sets 'set', CPU_VISIBLE, NORMAL priority,
 * process T_PROC, driver data T_DRV_DATA, fill pattern T_FILL. */
struct vidmm_alloc_desc t_adesc(uint64_t size, uint32_t set);
vidmm_handle t_alloc(vidmm_device *dev, const struct vidmm_alloc_desc *d);
vidmm_handle t_alloc_simple(vidmm_device *dev, uint64_t size, uint32_t set);
/* Creation that must be refused with VIDMM_E_INVALID_ARG: '*out' untouched, the statistics and
 * the paging log unchanged. */
void t_alloc_refused(vidmm_device *dev, const struct vidmm_alloc_desc *d, const char *why);

struct vidmm_alloc_info t_query(vidmm_device *dev, vidmm_handle h);
uint64_t t_round(uint64_t size);

/* ---------------------------------------------------------------------------------------------
 * Submissions, residency, fences.
 * ------------------------------------------------------------------------------------------- */
uint64_t t_submit(vidmm_device *dev, const vidmm_handle *h, const uint32_t *ref_flags, uint32_t n,
                  struct vidmm_residency *where);
uint64_t t_submit1(vidmm_device *dev, vidmm_handle h, uint32_t ref_flags, struct vidmm_residency *where);
/* t_use() submits 'h' (read) and signals the fence at once: placed, touched, idle again. */
void t_use(vidmm_device *dev, vidmm_handle h, uint32_t ref_flags);
void t_resident(vidmm_device *dev, vidmm_handle h, struct vidmm_residency *where);
void t_signal(vidmm_device *dev, uint64_t fence);
void t_evict(vidmm_device *dev, vidmm_handle h);

/* Locks. t_lock() fails the test unless the lock succeeds and returns args.data. */
struct vidmm_lock_args t_largs(vidmm_handle h, uint32_t flags);
void *t_lock(vidmm_device *dev, vidmm_handle h, uint32_t flags);
void t_unlock(vidmm_device *dev, vidmm_handle h);

/* Content through vidmm_gpu_access(). */
void t_read(vidmm_device *dev, vidmm_handle h, uint64_t off, void *buf, size_t n);
void t_write(vidmm_device *dev, vidmm_handle h, uint64_t off, const void *buf, size_t n);
/* t_expect_fill() checks that 'n' bytes from 'off' are the 32-bit pattern 'pat' repeated. */
void t_expect_fill(vidmm_device *dev, vidmm_handle h, uint64_t off, size_t n, uint32_t pat);
bool t_is_fill(const void *p, size_t n, uint32_t pat);
/* Deterministic bytes from 'seed'. */
void t_bytes(void *p, size_t n, uint32_t seed);

/* ---------------------------------------------------------------------------------------------
 * The paging log.
 * ------------------------------------------------------------------------------------------- */
#define T_LOG_MAX 1024
struct t_log_buf {
    size_t n;
    struct vidmm_paging_op op[T_LOG_MAX];
};
/* t_log_take() drains the whole log into 'b' (fails the test if it holds T_LOG_MAX or more). */
void t_log_take(vidmm_device *dev, struct t_log_buf *b);
void t_log_clear(vidmm_device *dev);
/* Index of the first record of 'type' for allocation 'h' (h 0: any) from index 'from', or -1. */
ptrdiff_t t_log_find(const struct t_log_buf *b, uint32_t type, vidmm_handle h, size_t from);
size_t t_log_count(const struct t_log_buf *b, uint32_t type, vidmm_handle h);
const char *t_op_name(uint32_t type);
/* t_log_dump() prints the records (Criterion info log), for failure diagnosis. */
void t_log_dump(const struct t_log_buf *b, const char *title);

/* ---------------------------------------------------------------------------------------------
 * "Nothing changed": a snapshot of the statistics, of chosen allocations (query + content
 * checksum through vidmm_gpu_access) and an empty paging log; t_unchanged() compares.
 * ------------------------------------------------------------------------------------------- */
#define T_SNAP_MAX 8
struct t_snap {
    vidmm_device *dev;
    struct vidmm_stats stats;
    uint32_t n;
    vidmm_handle h[T_SNAP_MAX];
    struct vidmm_alloc_info info[T_SNAP_MAX];
    uint64_t sum[T_SNAP_MAX];
};
/* t_snap() drains the paging log, then records. 'h' may be NULL when 'n' is 0. */
void t_snap(struct t_snap *s, vidmm_device *dev, const vidmm_handle *h, uint32_t n);
void t_snap1(struct t_snap *s, vidmm_device *dev, vidmm_handle h);
void t_unchanged(const struct t_snap *s, const char *what);
struct vidmm_stats t_stats(vidmm_device *dev);
/* Paging operations issued so far (statistics), queued or run: the engine may run an issued
 * operation later than the call that issued it, so "no paging" checks use this as well as the
 * log. */
uint64_t t_paging_total(vidmm_device *dev);

/* T_REFUSED(snap, expr, err): 'expr' returns 'err' and nothing in 'snap' changed. */
#define T_REFUSED(snap, expr, err)                                                                  \
    do {                                                                                           \
        int t_rc_ = (expr);                                                                        \
        cr_assert_eq(t_rc_, (err), "%s returned %d (%s), expected %d (%s)", #expr, t_rc_,          \
                     vidmm_strerror(t_rc_), (int)(err), vidmm_strerror(err));                      \
        t_unchanged((snap), #expr);                                                                \
    } while (0)

#define T_OK(expr)                                                                                 \
    do {                                                                                           \
        int t_rc_ = (expr);                                                                        \
        cr_assert_eq(t_rc_, 0, "%s returned %d (%s), expected 0", #expr, t_rc_, vidmm_strerror(t_rc_)); \
    } while (0)

#define T_RC(expr, err)                                                                            \
    do {                                                                                           \
        int t_rc_ = (expr);                                                                        \
        cr_assert_eq(t_rc_, (err), "%s returned %d (%s), expected %d (%s)", #expr, t_rc_,          \
                     vidmm_strerror(t_rc_), (int)(err), vidmm_strerror(err));                      \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * A recording driver (struct vidmm_driver): records every callback; the paging callback
 * carries operations out like the Microsoft samples (TRANSFER = memcpy, FILL = 32-bit stores,
 * the others no-ops) and can be told to answer one call with a given status.
 * ------------------------------------------------------------------------------------------- */
#define T_REC_MAX 512
enum t_rec_mode {
    T_REC_OK = 0,
    T_REC_DMA_ONCE,     /* the first call of the first op of type 'mode_type': advance
                           multipass_offset to 7 and return INSUFFICIENT_DMA_BUFFER */
    T_REC_BUSY_ONCE,    /* the first TRANSFER without ALLOCATION_IS_IDLE: ALLOCATION_BUSY */
    T_REC_FATAL_ONCE    /* the first op of type 'mode_type': a fatal status (0xC0000001) */
};
struct t_rec {
    pthread_mutex_t mu;
    /* Paging: every call, retries included. */
    uint32_t n_ops;
    struct vidmm_paging_op ops[T_REC_MAX];
    bool flag_at[T_REC_MAX];          /* value of 'flag' when the call came */
    uint32_t status_ret[T_REC_MAX];   /* what the callback returned */
    enum t_rec_mode mode;
    uint32_t mode_type;
    bool mode_done;
    /* Swizzling ranges. */
    uint32_t n_acq, n_rel;
    struct vidmm_swizzling_range_args acq[64], rel[64];
    uint32_t acq_status[64];          /* answer to acquire call i (0 = SUCCESS) */
    uint32_t acq_default;             /* answer after the scripted ones */
    /* Cache maintenance. */
    uint32_t n_flush, n_inval;
    void *flush_p, *inval_p;
    size_t flush_n, inval_n;
    /* Set by t_signal_later() just before it signals. */
    atomic_bool flag;
};
void t_rec_init(struct t_rec *r);
/* The driver struct over 'r': paging, ranges, cache callbacks each when asked. */
struct vidmm_driver t_rec_driver(struct t_rec *r, bool paging, bool ranges, bool cache);
/* Copies of the recorded calls, taken under the lock. */
uint32_t t_rec_ops(struct t_rec *r);

/* ---------------------------------------------------------------------------------------------
 * A thread that signals a fence later (for tests of calls that block until idle).
 * ------------------------------------------------------------------------------------------- */
struct t_later {
    pthread_t th;
    vidmm_device *dev;
    uint64_t fence;
    unsigned ms;
    atomic_bool *flag;
    int rc;
};
void t_signal_later(struct t_later *l, vidmm_device *dev, uint64_t fence, unsigned ms, atomic_bool *flag);
void t_later_join(struct t_later *l);

/* ---------------------------------------------------------------------------------------------
 * Swizzled surfaces: a 64 x 64 surface of 4-byte elements in Morton order (16 KiB tiled and
 * linear, a real permutation of the bytes).
 * ------------------------------------------------------------------------------------------- */
struct t_swz {
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc surface;
    uint64_t tiled_size, linear_size;
};
void t_swz_init(struct t_swz *s);
/* A SWIZZLED | CPU_VISIBLE descriptor for the surface (size = tiled size). */
struct vidmm_alloc_desc t_swz_desc(const struct t_swz *s, uint32_t set);
/* The packed linear order of 'tiled' (linear_size bytes into 'linear'). */
void t_deswz(const struct t_swz *s, const void *tiled, void *linear);
void t_swz(const struct t_swz *s, const void *linear, void *tiled);

/* ---------------------------------------------------------------------------------------------
 * Swizzled surfaces of any shape (the range-lock suites: test_lazy_ranges.c,
 * test_narrow_locks.c, test_unprivileged.c): t_surf_init() describes one (block 1 x 1),
 * t_surf_sizes() fills its tiled and packed linear sizes, t_surf_alloc() makes a resident
 * swizzled allocation of it (t_adesc() with SWIZZLED, segment 1) holding random tiled bytes,
 * also left in 'tiled'.
 * ------------------------------------------------------------------------------------------- */
struct t_surf {
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc desc;
    struct vidmm_equation eq;
    uint64_t tiled, linear;
};
void t_surf_init(struct t_surf *s, enum vidmm_tiling t, uint32_t w, uint32_t h, uint32_t d, uint32_t e,
                 uint32_t mips, uint32_t layers);
void t_surf_sizes(struct t_surf *s);
vidmm_handle t_surf_alloc(vidmm_device *dev, const struct t_surf *s, unsigned char *tiled, uint32_t seed);
/* Pages of [p, p + n) (from the page holding p) in memory, by mincore(). */
size_t t_resident_pages(const void *p, size_t n);
/* Whether this process gets the write tracking a shared memory mapping (what the backing-store
 * arena is) needs: a userfaultfd write-watch on a memfd mapping (Linux 6.7 with WP_ASYNC and
 * PAGEMAP_SCAN, a full userfaultfd or one for user faults, no valgrind). 0, or what
 * vidmm_writewatch_create() said. (test_lock_dirty.c, test_unprivileged.c) */
int t_wp_async_shared(void);

#endif /* VIDMM_TESTS_T_ENGINE_H */
