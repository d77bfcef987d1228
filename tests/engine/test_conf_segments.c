/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_segments.c - conformance: the segment table. One test per rule of
 * spec 2.3 (DXGK_SEGMENTFLAGS, suite seg_flags) and of spec 15.1 (segment table validation,
 * suite item15_01). A refused vidmm_device_create() must return VIDMM_E_INVALID_ARG and leave
 * '*out' as it was; each refusal is paired with a positive control that differs only in the
 * rule under test, so a test cannot pass because the table was refused for another reason. */
#include "t_engine.h"

#include <stdlib.h>
#include <string.h>

#define B1 0x10000000ull
#define B2 0x20000000ull
#define B3 0x40000000ull

/* A CPU-visible memory segment every table below starts with, so a rule is tested on the
 * second segment, not only on the first. */
static struct vidmm_segment_desc base_seg(void)
{
    return t_mem_seg(B1, 1 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
}

/* Table {base, s} refused; {base, ok} accepted. */
static void pair(struct vidmm_segment_desc bad, struct vidmm_segment_desc ok, const char *why)
{
    struct vidmm_segment_desc t[2] = { base_seg(), bad };
    t_segs_refused(t, 2, why);
    t[1] = ok;
    t_segs_ok(t, 2, why);
}

/* =============================================================================================
 * spec 2.3: DXGK_SEGMENTFLAGS, one test per rule of the table.
 * =========================================================================================== */

/* spec 2.3 bit 0 (Aperture): "address space only, no storage; paging in = mapping the
 * backing-store pages" - placing an allocation in an aperture emits MAP_APERTURE_SEGMENT and
 * no FILL (spec 15.8/15.9), and the aperture's "used" counts the mapped bytes. */
Test(seg_flags, aperture_pages_in_by_mapping)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_APE));
    t_log_clear(dev);
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    struct t_log_buf *log = malloc(sizeof(*log));
    t_log_take(dev, log);
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_MAP_APERTURE_SEGMENT, h), 1, "expected one MAP");
    cr_assert_eq(t_log_count(log, VIDMM_PAGING_FILL, h), 0, "a FILL targeted an aperture segment");
    cr_assert_eq(t_stats(dev).paging_ops[VIDMM_PAGING_FILL], 0, "a FILL was issued for an aperture segment");
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert_eq(in.where, VIDMM_WHERE_APERTURE);
    cr_assert_eq(in.segment_id, T_APE);
    struct vidmm_stats st = t_stats(dev);
    cr_assert_eq(st.segments[T_APE - 1].used, 64 * T_KiB);
    t_expect_fill(dev, h, 0, 64 * T_KiB, T_FILL);
    free(log);
    vidmm_device_destroy(dev);
}

/* spec 2.3 bit 1 (Agp): "must be the only flag set, otherwise adapter initialization fails". */
Test(seg_flags, agp_must_be_alone)
{
    struct vidmm_segment_desc agp = t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_AGP);
    struct vidmm_segment_desc bad = agp;
    bad.flags |= VIDMM_SEGMENT_CPU_VISIBLE;
    pair(bad, agp, "AGP | CPU_VISIBLE");
    bad = agp;
    bad.flags |= VIDMM_SEGMENT_APERTURE;
    pair(bad, agp, "AGP | APERTURE");
    bad = agp;
    bad.flags |= VIDMM_SEGMENT_USE_BANKING;
    bad.bank_count = 1;
    pair(bad, agp, "AGP | USE_BANKING");
}

/* spec 2.3 bit 1 (Agp): "Only one AGP segment". */
Test(seg_flags, agp_at_most_one)
{
    struct vidmm_segment_desc t[3] = { base_seg(), t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_AGP),
                                       t_mem_seg(B3, 1 * T_MiB, VIDMM_SEGMENT_AGP) };
    t_segs_refused(t, 3, "two AGP segments");
    t_segs_ok(t, 2, "one AGP segment");
}

/* spec 2.3 bit 2 (CpuVisible): "memory segment CPU-accessible"; "no meaning for aperture
 * segments" - accepted on an aperture, and a lock in a CPU-visible memory segment points into
 * the segment (the residency's host view, spec 15.14). */
Test(seg_flags, cpu_visible_memory_and_aperture)
{
    struct vidmm_segment_desc t[2] = { base_seg(), t_aper_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE) };
    t_segs_ok(t, 2, "APERTURE | CPU_VISIBLE");
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 16 * T_KiB, T_SET(T_VIS));
    struct vidmm_residency where;
    t_resident(dev, h, &where);
    void *p = t_lock(dev, h, 0);
    cr_assert_eq(p, where.cpu, "lock in a CPU-visible memory segment: %p, the segment location is %p", p, where.cpu);
    t_unlock(dev, h);
    vidmm_device_destroy(dev);
}

/* spec 2.3 bit 3 (UseBanking): "Segment split into banks (NbOfBanks/pBankRangeTable)" - with
 * UseBanking NbOfBanks is 1..127; without it no bank table may be given (spec 15.1). */
Test(seg_flags, use_banking_needs_banks)
{
    struct vidmm_segment_desc ok = t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_USE_BANKING);
    ok.bank_count = 1;
    struct vidmm_segment_desc bad = ok;
    bad.bank_count = 0;
    pair(bad, ok, "USE_BANKING with 0 banks");
    static const uint64_t ends[1] = { 512 * T_KiB };
    struct vidmm_segment_desc plain = t_mem_seg(B2, 1 * T_MiB, 0);
    bad = plain;
    bad.bank_count = 2;
    bad.bank_ends = ends;
    pair(bad, plain, "bank table without USE_BANKING");
}

/* spec 2.3 bit 4 (CacheCoherent): "Only valid together with Aperture". */
Test(seg_flags, cache_coherent_only_with_aperture)
{
    pair(t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_CACHE_COHERENT),
         t_aper_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_CACHE_COHERENT), "memory segment | CACHE_COHERENT");
}

/* spec 2.3 bit 5 (PitchAlignment): "Cannot be used as an eviction segment" - an allocation
 * naming a PitchAlignment aperture in its EvictionSegmentSet is refused (spec 15.2). */
Test(seg_flags, pitch_alignment_not_eviction_segment)
{
    struct vidmm_segment_desc t[3] = { base_seg(), t_aper_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_PITCH_ALIGNMENT),
                                       t_aper_seg(B3, 1 * T_MiB, 0) };
    struct vidmm_device_desc d = t_ddesc(t, 3);
    vidmm_device *dev = t_dev(&d);
    struct vidmm_alloc_desc a = t_adesc(64 * T_KiB, T_SET(1) | T_SET(2) | T_SET(3));
    a.pitch_aligned_size = 64 * T_KiB;
    a.eviction_set = T_SET(2);
    t_alloc_refused(dev, &a, "eviction set naming a PitchAlignment aperture");
    a.eviction_set = T_SET(3);
    vidmm_handle h = t_alloc(dev, &a);
    cr_assert_neq(h, 0);
    vidmm_device_destroy(dev);
}

/* spec 2.3 bit 5 (PitchAlignment): "VidMm uses Size for the backing store but PitchAlignedSize
 * for segment space". */
Test(seg_flags, pitch_alignment_uses_pitch_aligned_size)
{
    struct vidmm_segment_desc s = t_mem_seg(B1, 1 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_PITCH_ALIGNMENT);
    struct vidmm_device_desc d = t_ddesc(&s, 1);
    vidmm_device *dev = t_dev(&d);
    struct vidmm_alloc_desc a = t_adesc(64 * T_KiB, T_SET(1));
    a.pitch_aligned_size = 96 * T_KiB;
    vidmm_handle h1 = t_alloc(dev, &a);
    vidmm_handle h2 = t_alloc(dev, &a);
    t_resident(dev, h1, NULL);
    t_resident(dev, h2, NULL);
    struct vidmm_alloc_info i1 = t_query(dev, h1), i2 = t_query(dev, h2);
    cr_assert_eq(i1.size, 96 * T_KiB, "segment space of a pitch-aligned allocation: %llu",
                 (unsigned long long)i1.size);
    cr_assert_eq(i1.offset, 0);
    cr_assert_eq(i2.offset, 96 * T_KiB, "second allocation at %llu, expected after 96 KiB",
                 (unsigned long long)i2.offset);
    struct vidmm_stats st = t_stats(dev);
    cr_assert_eq(st.segments[0].used, 192 * T_KiB);
    vidmm_device_destroy(dev);
}

/* spec 2.3 bit 6 (PopulatedFromSystemMemory): "Invalid/ignored on aperture segments"; spec 15.1
 * "PopulatedFromSystemMemory not on apertures". */
Test(seg_flags, populated_from_sysmem_not_on_aperture)
{
    pair(t_aper_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_POPULATED_FROM_SYSMEM),
         t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_POPULATED_FROM_SYSMEM), "APERTURE | POPULATED_FROM_SYSMEM");
}

/* spec 2.3 bits 7-9: valid (Standby, Hibernate, Partial) combinations are 110, 101, 100, 000. */
Test(seg_flags, preserved_valid_combinations)
{
    static const uint32_t ok[] = {
        0,
        VIDMM_SEGMENT_PRESERVED_DURING_STANDBY,
        VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE,
        VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE,
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct vidmm_segment_desc t[2] = { base_seg(), t_mem_seg(B2, 1 * T_MiB, ok[i]) };
        t_segs_ok(t, 2, "valid preservation combination");
    }
}

/* spec 2.3 bit 8 (PreservedDuringHibernate): "Only valid if PreservedDuringStandby" (010). */
Test(seg_flags, preserved_hibernate_needs_standby)
{
    pair(t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE),
         t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY),
         "PRESERVED_DURING_HIBERNATE without STANDBY");
}

/* spec 2.3 bit 9 (PartiallyPreservedDuringHibernate): "Only valid if PreservedDuringStandby"
 * (001). */
Test(seg_flags, partially_preserved_needs_standby)
{
    pair(t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE),
         t_mem_seg(B2, 1 * T_MiB,
                   VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY),
         "PARTIALLY_PRESERVED_DURING_HIBERNATE without STANDBY");
}

/* spec 2.3 bits 7-9: "all others invalid" - Hibernate and Partial never together (011, 111). */
Test(seg_flags, hibernate_and_partial_exclusive)
{
    const uint32_t hp = VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE | VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE;
    struct vidmm_segment_desc ok = t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_PRESERVED_DURING_STANDBY);
    pair(t_mem_seg(B2, 1 * T_MiB, hp), ok, "HIBERNATE | PARTIAL (011)");
    pair(t_mem_seg(B2, 1 * T_MiB, hp | VIDMM_SEGMENT_PRESERVED_DURING_STANDBY), ok, "STANDBY | HIBERNATE | PARTIAL (111)");
}

/* spec 2.3 bit 10 (DirectFlip): a flag with no restriction of its own: accepted. */
Test(seg_flags, direct_flip_accepted)
{
    struct vidmm_segment_desc t[2] = { base_seg(), t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_DIRECT_FLIP) };
    t_segs_ok(t, 2, "DIRECT_FLIP");
}

/* spec 2.3 bit 11 (Use64KBPages): "any allocation that can be paged into this segment must have
 * Alignment a multiple of 64 KB" (checked at allocation creation, spec 15.2). */
Test(seg_flags, use_64kb_pages_alignment)
{
    struct vidmm_segment_desc t[2] = { base_seg(), t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_USE_64KB_PAGES) };
    struct vidmm_device_desc d = t_ddesc(t, 2);
    vidmm_device *dev = t_dev(&d);
    struct vidmm_alloc_desc a = t_adesc(64 * T_KiB, T_SET(1) | T_SET(2));
    a.alignment = 4096;
    t_alloc_refused(dev, &a, "alignment 4 KiB with a Use64KBPages segment in the set");
    a.alignment = 32 * T_KiB;
    t_alloc_refused(dev, &a, "alignment 32 KiB with a Use64KBPages segment in the set");
    a.alignment = 64 * T_KiB;
    t_alloc(dev, &a);
    /* Not in the set: no constraint. */
    a.supported_read_set = a.supported_write_set = T_SET(1);
    a.alignment = 4096;
    t_alloc(dev, &a);
    vidmm_device_destroy(dev);
}

/* spec 2.3 bit 12 (ReservedSysMem): "System use; driver must not set." Assumption: the engine
 * plays the driver's side of the table, so a table that sets it is refused like a reserved
 * bit (spec 15.1 does not list it explicitly). */
Test(seg_flags, reserved_sysmem_refused)
{
    pair(t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_RESERVED_SYSMEM), t_mem_seg(B2, 1 * T_MiB, 0), "RESERVED_SYSMEM");
}

/* spec 2.3 bit 13 (SupportsCpuHostAperture): "cannot be combined with CpuVisible". */
Test(seg_flags, cpu_host_aperture_not_with_cpu_visible)
{
    pair(t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE | VIDMM_SEGMENT_CPU_VISIBLE),
         t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE), "CPU_HOST_APERTURE | CPU_VISIBLE");
}

/* spec 2.3 bit 14 (SupportsCachedCpuHostAperture): "Requires SupportsCpuHostAperture". */
Test(seg_flags, cached_cpu_host_aperture_needs_cpu_host_aperture)
{
    pair(t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE),
         t_mem_seg(B2, 1 * T_MiB,
                   VIDMM_SEGMENT_SUPPORTS_CACHED_CPU_HOST_APERTURE | VIDMM_SEGMENT_SUPPORTS_CPU_HOST_APERTURE),
         "CACHED_CPU_HOST_APERTURE alone");
}

/* spec 2.3 bits 15-21 (ApplicationTarget, Vpr*, EncryptedPaging, budget groups,
 * PopulatedByReservedDDR): informational WDDM2 bits with no rule of their own: accepted. */
Test(seg_flags, informational_bits_accepted)
{
    static const uint32_t bits[] = { VIDMM_SEGMENT_APPLICATION_TARGET, VIDMM_SEGMENT_VPR_SUPPORTED,
                                     VIDMM_SEGMENT_VPR_PRESERVED_DURING_STANDBY,
                                     VIDMM_SEGMENT_ENCRYPTED_PAGING_SUPPORTED, VIDMM_SEGMENT_LOCAL_BUDGET_GROUP,
                                     VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP, VIDMM_SEGMENT_POPULATED_BY_RESERVED_DDR };
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
        struct vidmm_segment_desc t[2] = { base_seg(), t_mem_seg(B2, 1 * T_MiB, bits[i]) };
        t_segs_ok(t, 2, "informational segment flag");
    }
}

/* spec 2.3 bits 22-31: "Reserved, must be 0"; spec 15.1 "reserved bits 0". */
Test(seg_flags, reserved_bits_refused)
{
    for (unsigned bit = 22; bit < 32; bit++) {
        pair(t_mem_seg(B2, 1 * T_MiB, 1u << bit), t_mem_seg(B2, 1 * T_MiB, 0), "a reserved segment flag bit");
    }
}

/* =============================================================================================
 * spec 15.1: segment table validation.
 * =========================================================================================== */

/* spec 15.1 / spec 1: "IDs 1..N" - a segment's ID is its index in the table plus 1; its GPU
 * addresses are BaseAddress + offset. */
Test(item15_01, ids_are_index_plus_one)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_stats st = t_stats(dev);
    cr_assert_eq(st.segment_count, 3);
    cr_assert_eq(st.segments[0].size, T_VIS_SIZE);
    cr_assert_eq(st.segments[1].size, T_LOC_SIZE);
    cr_assert_eq(st.segments[2].size, T_APE_SIZE);
    static const uint64_t bases[3] = { T_VIS_BASE, T_LOC_BASE, T_APE_BASE };
    for (uint32_t id = 1; id <= 3; id++) {
        vidmm_handle h = t_alloc_simple(dev, 8 * T_KiB, T_SET(id));
        struct vidmm_residency where;
        t_resident(dev, h, &where);
        struct vidmm_alloc_info in = t_query(dev, h);
        cr_assert_eq(in.segment_id, id, "allocation restricted to set bit %u placed in segment %u", id - 1,
                     in.segment_id);
        cr_assert_eq(where.segment_id, id);
        cr_assert_eq(in.gpu_address, bases[id - 1] + in.offset);
        cr_assert_eq(where.gpu_address, in.gpu_address);
        cr_assert_eq(where.offset, in.offset);
    }
    vidmm_device_destroy(dev);
}

/* spec 15.1: "IDs 1..N with N <= 31" - 0 segments and 32 segments are refused. */
Test(item15_01, segment_count_1_to_31)
{
    static struct vidmm_segment_desc t[32];
    for (unsigned i = 0; i < 32; i++)
        t[i] = t_mem_seg(0x10000000ull * (i + 1), 64 * T_KiB, VIDMM_SEGMENT_CPU_VISIBLE);
    t_segs_refused(t, 0, "zero segments");
    t_segs_refused(t, 32, "32 segments");
    t_segs_ok(t, 31, "31 segments");
    t_segs_ok(t, 1, "1 segment");
}

/* spec 15.1: "Size ... multiples of the page size" (and > 0, device.h). */
Test(item15_01, size_page_multiple)
{
    struct vidmm_segment_desc bad = t_mem_seg(B2, 1 * T_MiB + 512, 0);
    pair(bad, t_mem_seg(B2, 1 * T_MiB, 0), "memory segment size not a page multiple");
    bad = t_aper_seg(B2, 1 * T_MiB, 0);
    bad.size = 1 * T_MiB + 4095;
    bad.commit_limit = 1 * T_MiB;
    pair(bad, t_aper_seg(B2, 1 * T_MiB, 0), "aperture size not a page multiple");
    bad = t_mem_seg(B2, 0, 0);
    pair(bad, t_mem_seg(B2, 4096, 0), "segment size 0");
}

/* spec 15.1: "CommitLimit multiples of the page size". */
Test(item15_01, commit_limit_page_multiple)
{
    struct vidmm_segment_desc bad = t_aper_seg(B2, 1 * T_MiB, 0);
    bad.commit_limit = 512 * T_KiB + 100;
    struct vidmm_segment_desc ok = bad;
    ok.commit_limit = 512 * T_KiB;
    pair(bad, ok, "aperture commit limit not a page multiple");
}

/* spec 15.1 / 2.1: "CommitLimit == Size for memory segments". */
Test(item15_01, memory_commit_equals_size)
{
    struct vidmm_segment_desc bad = t_mem_seg(B2, 1 * T_MiB, 0);
    bad.commit_limit = 512 * T_KiB;
    pair(bad, t_mem_seg(B2, 1 * T_MiB, 0), "memory segment commit limit below its size");
    bad.commit_limit = 2 * T_MiB;
    pair(bad, t_mem_seg(B2, 1 * T_MiB, 0), "memory segment commit limit above its size");
}

/* spec 2.1: an aperture's CommitLimit "the driver may set it lower" - at most Size. */
Test(item15_01, aperture_commit_at_most_size)
{
    struct vidmm_segment_desc bad = t_aper_seg(B2, 1 * T_MiB, 0);
    bad.commit_limit = 2 * T_MiB;
    struct vidmm_segment_desc ok = bad;
    ok.commit_limit = 256 * T_KiB;
    pair(bad, ok, "aperture commit limit above its size");
}

/* spec 15.1: "bank table strictly increasing". */
Test(item15_01, bank_table_strictly_increasing)
{
    static const uint64_t equal[3] = { 256 * T_KiB, 256 * T_KiB, 768 * T_KiB };
    static const uint64_t down[3] = { 512 * T_KiB, 256 * T_KiB, 768 * T_KiB };
    static const uint64_t good[3] = { 256 * T_KiB, 512 * T_KiB, 768 * T_KiB };
    struct vidmm_segment_desc s = t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_USE_BANKING);
    s.bank_count = 4;
    struct vidmm_segment_desc ok = s;
    ok.bank_ends = good;
    s.bank_ends = equal;
    pair(s, ok, "equal bank ends");
    s.bank_ends = down;
    pair(s, ok, "decreasing bank ends");
}

/* spec 15.1 / 2.1: bank ends "< Size" (the last bank ends at Size, which is not listed). */
Test(item15_01, bank_ends_below_size)
{
    static const uint64_t at_size[1] = { 1 * T_MiB };
    static const uint64_t good[1] = { 512 * T_KiB };
    struct vidmm_segment_desc s = t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_USE_BANKING);
    s.bank_count = 2;
    struct vidmm_segment_desc ok = s;
    ok.bank_ends = good;
    s.bank_ends = at_size;
    pair(s, ok, "bank end == segment size");
    s.bank_ends = NULL;
    pair(s, ok, "two banks without a bank table");
}

/* spec 15.1: "NbOfBanks <= 127". */
Test(item15_01, bank_count_at_most_127)
{
    static uint64_t ends[127];
    for (unsigned i = 0; i < 127; i++)
        ends[i] = (uint64_t)(i + 1) * T_PG;
    struct vidmm_segment_desc s = t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_USE_BANKING);
    s.bank_ends = ends;
    s.bank_count = 128;
    struct vidmm_segment_desc ok = s;
    ok.bank_count = 127;
    pair(s, ok, "128 banks");
}

/* device.h: "VIDMM_E_INVALID_ARG (a rule of spec 15.1 broken, or a bad descriptor)" - NULL
 * descriptor, NULL out, desc->size too small, segments NULL, more than 64 swizzling ranges or
 * paging threads. */
Test(item15_01, bad_descriptor)
{
    struct vidmm_segment_desc s = base_seg();
    struct vidmm_device_desc d = t_ddesc(&s, 1);
    vidmm_device *dev = (vidmm_device *)(uintptr_t)0x5EA7BEEFu;
    T_RC(vidmm_device_create(NULL, &dev), VIDMM_E_INVALID_ARG);
    cr_assert_eq(dev, (vidmm_device *)(uintptr_t)0x5EA7BEEFu);
    T_RC(vidmm_device_create(&d, NULL), VIDMM_E_INVALID_ARG);
    struct vidmm_device_desc bad = d;
    bad.size = sizeof(bad) - 1;
    t_create_refused(&bad, "desc->size < sizeof");
    bad = d;
    bad.segments = NULL;
    t_create_refused(&bad, "segments NULL");
    bad = d;
    bad.swizzling_ranges = 65;
    t_create_refused(&bad, "65 swizzling ranges");
    bad.swizzling_ranges = 64;
    t_create_ok(&bad, "64 swizzling ranges");
    bad = d;
    bad.paging_threads = 65;
    t_create_refused(&bad, "65 paging threads");
    bad.paging_threads = 2;
    t_create_ok(&bad, "2 paging threads");
    t_create_ok(&d, "the base descriptor");
}

/* spec 15.1: the table is "read during create" (device.h) - changing it afterwards changes
 * nothing. */
Test(item15_01, table_copied_at_create)
{
    struct vidmm_segment_desc s[2] = { base_seg(), t_mem_seg(B2, 1 * T_MiB, VIDMM_SEGMENT_CPU_VISIBLE) };
    struct vidmm_device_desc d = t_ddesc(s, 2);
    vidmm_device *dev = t_dev(&d);
    s[1].base_address = 0x70000000ull;
    s[1].size = 4096;
    s[1].commit_limit = 4096;
    struct vidmm_stats st = t_stats(dev);
    cr_assert_eq(st.segments[1].size, 1 * T_MiB);
    vidmm_handle h = t_alloc_simple(dev, 8 * T_KiB, T_SET(2));
    t_resident(dev, h, NULL);
    struct vidmm_alloc_info in = t_query(dev, h);
    cr_assert_eq(in.gpu_address, B2 + in.offset);
    vidmm_device_destroy(dev);
}
