/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_alloc.c - conformance: allocation creation. One test per rule of spec
 * 4.1 (DXGK_ALLOCATIONINFOFLAGS, suite alloc_flags, named after the bit) and of spec 15.2
 * (allocation creation validation, suite item15_02). A refused vidmm_alloc_create() returns
 * VIDMM_E_INVALID_ARG, leaves '*out' as it was, and changes neither the statistics nor the
 * paging log (t_alloc_refused); each refusal is paired with a control that differs only in the
 * rule under test and is accepted. */
#include "t_engine.h"

#include <stdlib.h>
#include <string.h>

/* A descriptor valid on the standard device: CPU-visible memory + aperture. */
static struct vidmm_alloc_desc std_desc(void)
{
    return t_adesc(64 * T_KiB, T_SET(T_VIS) | T_SET(T_APE));
}

static struct vidmm_alloc_desc primary_desc(void)
{
    struct vidmm_alloc_desc d = std_desc();
    d.kind = VIDMM_ALLOC_KIND_PRIMARY;
    return d;
}

/* 'bad' refused, 'ok' accepted, on the standard device. */
static void pair(vidmm_device *dev, const struct vidmm_alloc_desc *bad, const struct vidmm_alloc_desc *ok,
                 const char *why)
{
    t_alloc_refused(dev, bad, why);
    vidmm_handle h = T_OUT_SENTINEL;
    int rc = vidmm_alloc_create(dev, ok, &h);
    cr_assert_eq(rc, 0, "%s (positive control): vidmm_alloc_create() returned %d (%s)", why, rc, vidmm_strerror(rc));
    T_OK(vidmm_alloc_destroy(dev, h));
}

/* Flags 'f' refused, 'g' accepted, on otherwise std_desc(). */
static void pair_flags(vidmm_device *dev, uint32_t f, uint32_t g, const char *why)
{
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.flags = f;
    ok.flags = g;
    pair(dev, &bad, &ok, why);
}

/* Primary with flags 'f' refused; the same flags on a non-primary accepted. */
static void primary_refuses(vidmm_device *dev, uint32_t f, const char *why)
{
    struct vidmm_alloc_desc bad = primary_desc(), ok = std_desc();
    bad.flags = f;
    ok.flags = f;
    static char page[4 * 64 * 1024] __attribute__((aligned(4096)));
    if (f & (VIDMM_ALLOC_EXISTING_SYSMEM | VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM))
        bad.existing_memory = ok.existing_memory = page;
    pair(dev, &bad, &ok, why);
}

static void *page_buffer(size_t n)
{
    void *p = NULL;
    cr_assert_eq(posix_memalign(&p, 4096, n), 0);
    memset(p, 0x11, n);
    return p;
}

/* =============================================================================================
 * spec 15.2: allocation creation validation.
 * =========================================================================================== */

/* spec 15.2 / device.h: "It is placed nowhere yet: the first submission, lock or make-resident
 * places it. Its content starts as 'fill_pattern' repeated." */
Test(item15_02, creation_places_nothing)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_stats before = t_stats(dev);
    t_log_clear(dev);
    struct vidmm_alloc_desc d = std_desc();
    d.priority = VIDMM_PRIORITY_HIGH + 5;
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_paging_op op;
    cr_assert_eq(vidmm_paging_log_read(dev, &op, 1), 0, "creation emitted a paging operation");
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_NONE);
    cr_assert_eq(in.segment_id, 0);
    cr_assert_eq(in.size, 64 * T_KiB);
    cr_assert_eq(in.priority, VIDMM_PRIORITY_HIGH + 5);
    cr_assert_eq(in.lock_count, 0);
    cr_assert_not(in.dirty);
    cr_assert_not(in.busy);
    cr_assert_not(in.pinned);
    cr_assert_eq(in.instance, 0);
    cr_assert_eq(in.current, h);
    struct vidmm_stats after = t_stats(dev);
    cr_assert_eq(after.allocations, before.allocations + 1);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(after.segments[i].used, before.segments[i].used, "creation used segment %d space", i + 1);
    t_expect_fill(dev, h, 0, 64 * T_KiB, T_FILL);
    vidmm_device_destroy(dev);
}

/* spec 15.2 / 3.3: "Size > 0, rounded up to the page size". */
Test(item15_02, size_positive_and_rounded)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.size = 0;
    ok.size = 5000;
    pair(dev, &bad, &ok, "size 0");
    vidmm_handle h = t_alloc(dev, &ok);
    cr_assert_eq(t_query(dev, h).size, 8192, "size 5000 rounds to %llu", (unsigned long long)t_query(dev, h).size);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_stats(dev).segments[T_VIS - 1].used, 8192);
    vidmm_device_destroy(dev);
}

/* spec 15.2 / 3.3: "AllocationPriority != 0". */
Test(item15_02, priority_nonzero)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.priority = 0;
    ok.priority = 1;
    pair(dev, &bad, &ok, "priority 0");
    vidmm_device_destroy(dev);
}

/* device.h: a bad descriptor - NULL desc, NULL out, size_of too small. */
Test(item15_02, bad_descriptor)
{
    vidmm_device *dev = t_dev_std();
    struct t_snap s;
    t_snap(&s, dev, NULL, 0);
    vidmm_handle h = T_OUT_SENTINEL;
    T_REFUSED(&s, vidmm_alloc_create(dev, NULL, &h), VIDMM_E_INVALID_ARG);
    cr_assert_eq(h, T_OUT_SENTINEL);
    struct vidmm_alloc_desc d = std_desc();
    T_REFUSED(&s, vidmm_alloc_create(dev, &d, NULL), VIDMM_E_INVALID_ARG);
    struct vidmm_alloc_desc bad = d;
    bad.size_of = sizeof(bad) - 1;
    pair(dev, &bad, &d, "size_of too small");
    vidmm_device_destroy(dev);
}

/* spec 15.2: "(as engine policy) 0 or a power of two" alignment. */
Test(item15_02, alignment_power_of_two)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.alignment = 3;
    ok.alignment = 8192;
    pair(dev, &bad, &ok, "alignment 3");
    bad.alignment = 3 * 4096;
    pair(dev, &bad, &ok, "alignment 12 KiB");
    ok.alignment = 0;
    pair(dev, &bad, &ok, "alignment 12 KiB (control: 0)");
    vidmm_device_destroy(dev);
}

/* spec 15.2: "PitchAlignedSize == 0 or >= Size". */
Test(item15_02, pitch_aligned_size_at_least_size)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.pitch_aligned_size = 32 * T_KiB;
    ok.pitch_aligned_size = 64 * T_KiB;
    pair(dev, &bad, &ok, "pitch_aligned_size < size");
    vidmm_device_destroy(dev);
}

/* spec 15.2: "PitchAlignment segments allowed in the supported set only if PitchAlignedSize != 0". */
Test(item15_02, pitch_segment_needs_pitch_aligned_size)
{
    struct vidmm_segment_desc s[2] = { t_mem_seg(T_VIS_BASE, 1 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE),
                                       t_mem_seg(T_LOC_BASE, 1 * T_MiB, VIDMM_SEGMENT_PITCH_ALIGNMENT) };
    struct vidmm_device_desc dd = t_ddesc(s, 2);
    vidmm_device *dev = t_dev(&dd);
    struct vidmm_alloc_desc bad = t_adesc(64 * T_KiB, T_SET(1) | T_SET(2)), ok = bad;
    ok.pitch_aligned_size = 80 * T_KiB;
    pair(dev, &bad, &ok, "PitchAlignment segment in the set, pitch_aligned_size 0");
    bad.supported_read_set = T_SET(1);
    bad.supported_write_set = T_SET(2);
    pair(dev, &bad, &ok, "PitchAlignment segment in the write set only, pitch_aligned_size 0");
    vidmm_device_destroy(dev);
}

/* spec 15.2 / 3.1: "every PreferredSegment ID (0 terminates the list) in supported set". */
Test(item15_02, preferred_segments_supported)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.preferred_segment = T_PREF(0, T_LOC);
    ok.preferred_segment = T_PREF(0, T_APE);
    pair(dev, &bad, &ok, "SegmentId0 not in the set");
    bad.preferred_segment = T_PREF(0, T_VIS) | T_PREF(1, T_LOC);
    ok.preferred_segment = T_PREF(0, T_VIS) | T_PREF(1, T_APE);
    pair(dev, &bad, &ok, "SegmentId1 not in the set");
    bad.preferred_segment = T_PREF(0, T_APE) | T_PREF(1, T_VIS) | T_PREF(2, T_VIS) | T_PREF(3, T_VIS) |
                            T_PREF(4, T_LOC);
    pair(dev, &bad, &ok, "SegmentId4 not in the set");
    bad.preferred_segment = T_PREF(0, 9);
    pair(dev, &bad, &ok, "SegmentId0 beyond the segment count");
    vidmm_device_destroy(dev);
}

/* spec 15.2: "(0 terminates the list)" - IDs after the first 0 are not read. */
Test(item15_02, preferred_list_stops_at_zero)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = std_desc();
    d.preferred_segment = T_PREF(0, T_APE) | T_PREF(1, 0) | T_PREF(2, T_LOC);
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).segment_id, T_APE);
    vidmm_device_destroy(dev);
}

/* Engine policy (brief): "read_set|write_set == 0 -> INVALID_ARG; a set naming a segment ID >
 * segment_count -> INVALID_ARG". */
Test(item15_02, segment_sets_valid)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.supported_read_set = bad.supported_write_set = 0;
    pair(dev, &bad, &ok, "empty read and write sets");
    bad = std_desc();
    bad.supported_read_set |= T_SET(4);
    pair(dev, &bad, &ok, "read set names segment 4 of 3");
    bad = std_desc();
    bad.supported_write_set |= 0x80000000u;
    pair(dev, &bad, &ok, "write set names segment 32");
    /* Read-only or write-only sets are fine. */
    ok.supported_write_set = 0;
    pair(dev, &bad, &ok, "write set names segment 32 (control: empty write set)");
    vidmm_device_destroy(dev);
}

/* spec 15.2 / 3.3: "EvictionSegmentSet subset of aperture segments". */
Test(item15_02, eviction_set_apertures_only)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.eviction_set = T_SET(T_LOC);
    ok.eviction_set = T_SET(T_APE);
    pair(dev, &bad, &ok, "eviction set names a memory segment");
    bad.eviction_set = T_SET(T_APE) | T_SET(T_VIS);
    pair(dev, &bad, &ok, "eviction set names an aperture and a memory segment");
    bad.eviction_set = T_SET(5);
    pair(dev, &bad, &ok, "eviction set names segment 5 of 3");
    vidmm_device_destroy(dev);
}

/* spec 15.2: "ExistingSysMem pointer and size page-aligned" (brief: pointer without the flag,
 * flag without a pointer, or an unaligned pointer -> INVALID_ARG). */
Test(item15_02, existing_memory_pointer)
{
    vidmm_device *dev = t_dev_std();
    unsigned char *mem = page_buffer(128 * T_KiB);
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    ok.flags |= VIDMM_ALLOC_EXISTING_SYSMEM;
    ok.existing_memory = mem;
    bad.existing_memory = mem;
    pair(dev, &bad, &ok, "existing_memory without EXISTING_SYSMEM");
    bad = ok;
    bad.existing_memory = NULL;
    pair(dev, &bad, &ok, "EXISTING_SYSMEM without existing_memory");
    bad = ok;
    bad.existing_memory = mem + 64;
    pair(dev, &bad, &ok, "EXISTING_SYSMEM with an unaligned pointer");
    bad = ok;
    bad.flags = VIDMM_ALLOC_CPU_VISIBLE | VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM;
    bad.existing_memory = mem + 100;
    ok.flags = bad.flags;
    pair(dev, &bad, &ok, "EXISTING_KERNEL_SYSMEM with an unaligned pointer");
    vidmm_device_destroy(dev);
    free(mem);
}

/* Engine policy (brief): "SWIZZLED without layout/surface, or tiled size > rounded size ->
 * INVALID_ARG; layout/surface given without SWIZZLED -> INVALID_ARG". */
Test(item15_02, swizzled_layout)
{
    vidmm_device *dev = t_dev_std();
    struct t_swz z;
    t_swz_init(&z);
    struct vidmm_alloc_desc ok = t_swz_desc(&z, T_SET(T_VIS)), bad = ok;
    bad.layout = NULL;
    pair(dev, &bad, &ok, "SWIZZLED without a layout");
    bad = ok;
    bad.surface = NULL;
    pair(dev, &bad, &ok, "SWIZZLED without a surface");
    bad = ok;
    bad.size = z.tiled_size - 2 * T_PG;
    pair(dev, &bad, &ok, "SWIZZLED, tiled size above the allocation size");
    bad = ok;
    bad.flags &= ~VIDMM_ALLOC_SWIZZLED;
    struct vidmm_alloc_desc plain = ok;
    plain.flags &= ~VIDMM_ALLOC_SWIZZLED;
    plain.layout = NULL;
    plain.surface = NULL;
    pair(dev, &bad, &plain, "layout and surface without SWIZZLED");
    bad = plain;
    bad.surface = &z.surface;
    pair(dev, &bad, &plain, "surface without SWIZZLED");
    vidmm_device_destroy(dev);
}

/* spec 15.2: "reserved bits 0" (DXGK_ALLOCATIONINFOFLAGS bits 19-31). */
Test(item15_02, reserved_flag_bits)
{
    vidmm_device *dev = t_dev_std();
    for (unsigned bit = 19; bit < 32; bit++)
        pair_flags(dev, VIDMM_ALLOC_CPU_VISIBLE | (1u << bit), VIDMM_ALLOC_CPU_VISIBLE, "a reserved allocation flag");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * spec 4.1: DXGK_ALLOCATIONINFOFLAGS, bit by bit.
 * =========================================================================================== */

/* spec 4.1 bit 0 (CpuVisible): "Required for pfnLockCb to succeed". */
Test(alloc_flags, b00_cpu_visible_required_to_lock)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = std_desc();
    d.flags = 0;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    struct t_snap s;
    t_snap1(&s, dev, h);
    struct vidmm_lock_args a = t_largs(h, 0);
    T_REFUSED(&s, vidmm_lock(dev, &a), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 1 (PermanentSysMem): "Requires CpuVisible. Not on the primary." */
Test(alloc_flags, b01_permanent_sysmem_rules)
{
    vidmm_device *dev = t_dev_std();
    pair_flags(dev, VIDMM_ALLOC_PERMANENT_SYSMEM, VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_CPU_VISIBLE,
               "PERMANENT_SYSMEM without CPU_VISIBLE");
    primary_refuses(dev, VIDMM_ALLOC_PERMANENT_SYSMEM | VIDMM_ALLOC_CPU_VISIBLE, "PERMANENT_SYSMEM on the primary");
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 1 (PermanentSysMem): "On eviction, content is discarded (not paged out) if not
 * dirty" and "Lock always returns the system-memory backing store". */
Test(alloc_flags, b01_permanent_sysmem_behaviour)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle h = t_alloc(dev, &d);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    void *p = t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert_neq(p, where.cpu, "a PermanentSysMem lock returned the segment location, not the backing store");
    cr_assert(t_is_fill(p, 64 * T_KiB, T_FILL), "the backing store does not hold the content");
    t_unlock(dev, h);
    t_log_clear(dev);
    t_evict(dev, h);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_DISCARD_CONTENT, h), 1, "clean PermanentSysMem eviction: no DISCARD");
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_TRANSFER, h), 0, "clean PermanentSysMem eviction transferred");
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SYSMEM);
    t_expect_fill(dev, h, 0, 64 * T_KiB, T_FILL);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 2 (Cached): "Requires CpuVisible. Not on the primary." */
Test(alloc_flags, b02_cached_rules)
{
    vidmm_device *dev = t_dev_std();
    pair_flags(dev, VIDMM_ALLOC_CACHED, VIDMM_ALLOC_CACHED | VIDMM_ALLOC_CPU_VISIBLE, "CACHED without CPU_VISIBLE");
    primary_refuses(dev, VIDMM_ALLOC_CACHED | VIDMM_ALLOC_CPU_VISIBLE, "CACHED on the primary");
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 3 (Protected): "Not combinable with PermanentSysMem, ExistingSysMem,
 * ExistingKernelSysMem. Not on the primary." */
Test(alloc_flags, b03_protected_rules)
{
    vidmm_device *dev = t_dev_std();
    const uint32_t cv = VIDMM_ALLOC_CPU_VISIBLE, pr = VIDMM_ALLOC_PROTECTED;
    pair_flags(dev, cv | pr | VIDMM_ALLOC_PERMANENT_SYSMEM, cv | pr, "PROTECTED | PERMANENT_SYSMEM");
    unsigned char *mem = page_buffer(64 * T_KiB);
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.existing_memory = mem;
    bad.flags = cv | pr | VIDMM_ALLOC_EXISTING_SYSMEM;
    ok.flags = cv | pr;
    pair(dev, &bad, &ok, "PROTECTED | EXISTING_SYSMEM");
    bad.flags = cv | pr | VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM;
    pair(dev, &bad, &ok, "PROTECTED | EXISTING_KERNEL_SYSMEM");
    primary_refuses(dev, cv | pr, "PROTECTED on the primary");
    vidmm_device_destroy(dev);
    free(mem);
}

/* spec 4.1 bit 4 (ExistingSysMem): "Not combinable with PermanentSysMem, Protected,
 * ExistingKernelSysMem. Not on the primary." */
Test(alloc_flags, b04_existing_sysmem_rules)
{
    vidmm_device *dev = t_dev_std();
    unsigned char *mem = page_buffer(64 * T_KiB);
    const uint32_t cv = VIDMM_ALLOC_CPU_VISIBLE, ex = VIDMM_ALLOC_EXISTING_SYSMEM;
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.existing_memory = ok.existing_memory = mem;
    ok.flags = cv | ex;
    bad.flags = cv | ex | VIDMM_ALLOC_PERMANENT_SYSMEM;
    pair(dev, &bad, &ok, "EXISTING_SYSMEM | PERMANENT_SYSMEM");
    bad.flags = cv | ex | VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM;
    pair(dev, &bad, &ok, "EXISTING_SYSMEM | EXISTING_KERNEL_SYSMEM");
    primary_refuses(dev, cv | ex, "EXISTING_SYSMEM on the primary");
    vidmm_device_destroy(dev);
    free(mem);
}

/* spec 4.1 bit 4 (ExistingSysMem): "Use an existing user-mode range as backing store ... Same
 * lock semantics as PermanentSysMem" - a lock returns the caller's memory. */
Test(alloc_flags, b04_existing_sysmem_is_backing_store)
{
    vidmm_device *dev = t_dev_std();
    unsigned char *mem = page_buffer(64 * T_KiB);
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_EXISTING_SYSMEM;
    d.existing_memory = mem;
    vidmm_handle h = t_alloc(dev, &d);
    void *p = t_lock(dev, h, 0);
    cr_assert_eq(p, (void *)mem, "lock of an EXISTING_SYSMEM allocation returned %p, not the caller's memory %p", p,
                 (void *)mem);
    t_unlock(dev, h);
    t_resident(dev, h, NULL);
    p = t_lock(dev, h, VIDMM_LOCK_READ_ONLY);
    cr_assert_eq(p, (void *)mem, "lock of a resident EXISTING_SYSMEM allocation returned %p, not %p", p, (void *)mem);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
    free(mem);
}

/* spec 4.1 bit 5 (ExistingKernelSysMem): "Not combinable with PermanentSysMem, Protected,
 * ExistingSysMem. Not on the primary." and the lock returns the given range. */
Test(alloc_flags, b05_existing_kernel_sysmem)
{
    vidmm_device *dev = t_dev_std();
    unsigned char *mem = page_buffer(64 * T_KiB);
    const uint32_t cv = VIDMM_ALLOC_CPU_VISIBLE, ek = VIDMM_ALLOC_EXISTING_KERNEL_SYSMEM;
    struct vidmm_alloc_desc bad = std_desc(), ok = std_desc();
    bad.existing_memory = ok.existing_memory = mem;
    ok.flags = cv | ek;
    bad.flags = cv | ek | VIDMM_ALLOC_PERMANENT_SYSMEM;
    pair(dev, &bad, &ok, "EXISTING_KERNEL_SYSMEM | PERMANENT_SYSMEM");
    primary_refuses(dev, cv | ek, "EXISTING_KERNEL_SYSMEM on the primary");
    vidmm_handle h = t_alloc(dev, &ok);
    void *p = t_lock(dev, h, 0);
    cr_assert_eq(p, (void *)mem);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
    free(mem);
}

/* spec 4.1 bit 6 (FromEndOfSegment): "Scan segment space from the end instead of the start". */
Test(alloc_flags, b06_from_end_of_segment)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_FROM_END_OF_SEGMENT;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert_eq(in.offset, T_VIS_SIZE - 64 * T_KiB, "FROM_END_OF_SEGMENT placed at %llu",
                 (unsigned long long)in.offset);
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 7 (Swizzled): "VidMm tracks swizzle state" - an eviction under memory pressure
 * keeps it swizzled (spec 8.1) and the query says so. */
Test(alloc_flags, b07_swizzled_state_tracked)
{
    vidmm_device *dev = t_dev_std();
    struct t_swz z;
    t_swz_init(&z);
    struct vidmm_alloc_desc d = t_swz_desc(&z, T_SET(T_VIS));
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    t_log_clear(dev);
    t_evict(dev, h);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    ptrdiff_t i = t_log_find(log, VIDMM_PAGING_TRANSFER, h, 0);
    cr_assert_geq(i, 0, "no TRANSFER on eviction");
    cr_assert_eq(log->op[i].flags & (VIDMM_TRANSFER_SWIZZLE | VIDMM_TRANSFER_UNSWIZZLE), 0,
                 "a memory-pressure eviction converted the swizzled allocation");
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_SYSMEM);
    cr_assert(in.evicted_swizzled, "evicted_swizzled false after a plain eviction");
    free(log);
    vidmm_device_destroy(dev);
}

/* Common body of Overlay and Capture (spec 4.1 bits 8, 9): pinned, "Limited to the last 20 %
 * of a segment", "not evictable" (vidmm_evict -> CANT_EVICT_PINNED, nothing changed). */
static void pinned_flag(uint32_t flag)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    d.flags |= flag;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert(in.pinned);
    cr_assert_eq(in.where, VIDMM_WHERE_SEGMENT);
    cr_assert_geq(in.offset * 5, T_VIS_SIZE * 4, "pinned allocation at %llu, below 80 %% of the segment",
                  (unsigned long long)in.offset);
    cr_assert_leq(in.offset + 64 * T_KiB, T_VIS_SIZE);
    struct t_snap s;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, vidmm_evict(dev, &h, 1), VIDMM_E_CANT_EVICT_PINNED);
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 8 (Overlay): pinned, last 20 %, not evictable. */
Test(alloc_flags, b08_overlay_pinned)
{
    pinned_flag(VIDMM_ALLOC_OVERLAY);
}

/* spec 4.1 bit 9 (Capture): "Pinned like Overlay, same rules". */
Test(alloc_flags, b09_capture_pinned)
{
    pinned_flag(VIDMM_ALLOC_CAPTURE);
}

/* spec 4.1 bit 10 (UseAlternateVA): "Only valid on the primary allocation (any other allocation
 * with it is not created)". */
Test(alloc_flags, b10_use_alternate_va_only_primary)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc bad = std_desc(), ok = primary_desc();
    bad.flags |= VIDMM_ALLOC_USE_ALTERNATE_VA;
    ok.flags |= VIDMM_ALLOC_USE_ALTERNATE_VA;
    pair(dev, &bad, &ok, "USE_ALTERNATE_VA on a non-primary");
    bad.kind = VIDMM_ALLOC_KIND_SHARED;
    pair(dev, &bad, &ok, "USE_ALTERNATE_VA on a shared non-primary");
    vidmm_device_destroy(dev);
}

/* spec 4.1 bits 11-13 (SynchronousPaging, LinkMirrored, LinkInstanced): no creation rule of
 * their own: accepted (behaviour of SynchronousPaging: item15_25). */
Test(alloc_flags, b11_b13_accepted)
{
    vidmm_device *dev = t_dev_std();
    static const uint32_t f[] = { VIDMM_ALLOC_SYNCHRONOUS_PAGING, VIDMM_ALLOC_LINK_MIRRORED,
                                  VIDMM_ALLOC_LINK_INSTANCED };
    for (size_t i = 0; i < 3; i++) {
        struct vidmm_alloc_desc d = std_desc();
        d.flags |= f[i];
        vidmm_handle h = t_alloc(dev, &d);
        t_resident(dev, h, NULL);
    }
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 14 (HistoryBuffer): "Requires CpuVisible ... all other flags must be 0" (spec
 * 15.2: "HistoryBuffer alone (+Cached)"). */
Test(alloc_flags, b14_history_buffer_alone)
{
    vidmm_device *dev = t_dev_std();
    const uint32_t hb = VIDMM_ALLOC_HISTORY_BUFFER, cv = VIDMM_ALLOC_CPU_VISIBLE;
    pair_flags(dev, hb, hb | cv, "HISTORY_BUFFER without CPU_VISIBLE");
    pair_flags(dev, hb | cv | VIDMM_ALLOC_FROM_END_OF_SEGMENT, hb | cv | VIDMM_ALLOC_CACHED,
               "HISTORY_BUFFER | FROM_END_OF_SEGMENT");
    pair_flags(dev, hb | cv | VIDMM_ALLOC_SYNCHRONOUS_PAGING, hb | cv, "HISTORY_BUFFER | SYNCHRONOUS_PAGING");
    pair_flags(dev, hb | cv | VIDMM_ALLOC_OVERLAY, hb | cv, "HISTORY_BUFFER | OVERLAY");
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 15 (AccessedPhysically): "allocated contiguously in GPU memory segments" - accepted;
 * every allocation is contiguous here. */
Test(alloc_flags, b15_accessed_physically_accepted)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = std_desc();
    d.flags |= VIDMM_ALLOC_ACCESSED_PHYSICALLY;
    vidmm_handle h = t_alloc(dev, &d);
    t_resident(dev, h, NULL);
    cr_assert_eq(t_query(dev, h).where, VIDMM_WHERE_SEGMENT);
    vidmm_device_destroy(dev);
}

/* spec 4.1 bit 16 (ExplicitResidencyNotification): "Only valid with AccessedPhysically". */
Test(alloc_flags, b16_explicit_residency_needs_accessed_physically)
{
    vidmm_device *dev = t_dev_std();
    const uint32_t cv = VIDMM_ALLOC_CPU_VISIBLE, ern = VIDMM_ALLOC_EXPLICIT_RESIDENCY_NOTIFICATION;
    pair_flags(dev, cv | ern, cv | ern | VIDMM_ALLOC_ACCESSED_PHYSICALLY,
               "EXPLICIT_RESIDENCY_NOTIFICATION without ACCESSED_PHYSICALLY");
    vidmm_device_destroy(dev);
}

/* spec 4.1 bits 17, 18 (HardwareProtected, CpuVisibleOnDemand): no rule of their own: accepted. */
Test(alloc_flags, b17_b18_accepted)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = std_desc();
    d.flags |= VIDMM_ALLOC_HARDWARE_PROTECTED;
    t_alloc(dev, &d);
    d = std_desc();
    d.flags |= VIDMM_ALLOC_CPU_VISIBLE_ON_DEMAND;
    t_alloc(dev, &d);
    vidmm_device_destroy(dev);
}

/* spec 4.1 bits 19-31: "DXGK_ALLOC_RESERVED*, must be 0" (each bit alone). */
Test(alloc_flags, b19_b31_reserved)
{
    vidmm_device *dev = t_dev_std();
    for (unsigned bit = 19; bit < 32; bit++) {
        struct vidmm_alloc_desc bad = std_desc();
        bad.flags = 1u << bit;
        t_alloc_refused(dev, &bad, "a reserved allocation flag alone");
    }
    vidmm_device_destroy(dev);
}
