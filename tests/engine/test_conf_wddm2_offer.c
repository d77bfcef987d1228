/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_offer.c - conformance: offer and reclaim (spec 11, 15.20) on
 * WDDM2 and WDDM1 devices - the list and count rules with their exact codes, offered
 * allocations discarded first (LOW, NORMAL, HIGH) by DISCARD_CONTENT and never transferred,
 * AUTO priorities, deferred and immediate offers, ALLOW_DECOMMIT, the refusal of locks and
 * submissions of offered allocations, reclaim's OK / DISCARDED / NOT_COMMITTED and the debug
 * pattern, and the re-paging of residency-listed allocations with a paging fence. The spec
 * text each test checks is quoted above it. */
#include "t_wddm2.h"

#include <stdlib.h>

#define Q (256 * T_KiB)
#define H (512 * T_KiB)

static vidmm_handle mk(vidmm_device *dev, uint64_t size, uint32_t set, uint32_t priority)
{
    struct vidmm_alloc_desc d = t_adesc(size, set);
    d.priority = priority;
    return t_alloc(dev, &d);
}

static int offer_rc(vidmm_device *dev, const vidmm_handle *h, uint32_t n, uint32_t prio, uint32_t flags)
{
    struct vidmm_offer_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = h;
    a.count = n;
    a.priority = prio;
    a.flags = flags;
    return vidmm_offer(dev, &a);
}

static void offer1(vidmm_device *dev, vidmm_handle h, uint32_t prio, uint32_t flags)
{
    int rc = offer_rc(dev, &h, 1, prio, flags);
    cr_assert_eq(rc, 0, "vidmm_offer(%u) returned %d (%s)", h, rc, vidmm_strerror(rc));
}

static int reclaim_rc(vidmm_device *dev, const vidmm_handle *h, uint32_t n, uint32_t *results, bool *discarded,
                      uint64_t *fence)
{
    struct vidmm_reclaim_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = h;
    a.count = n;
    a.results = results;
    a.discarded = discarded;
    a.paging_fence = 0xFEFEFEFEu;
    int rc = vidmm_reclaim(dev, &a);
    if (fence)
        *fence = a.paging_fence;
    return rc;
}

/* reclaim1() reclaims 'h', waits for its paging fence, and returns its result. */
static uint32_t reclaim1(vidmm_device *dev, vidmm_handle h)
{
    uint32_t r = 0xFF;
    bool d = false;
    uint64_t f = 0;
    int rc = reclaim_rc(dev, &h, 1, &r, &d, &f);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "vidmm_reclaim(%u) returned %d (%s)", h, rc, vidmm_strerror(rc));
    cr_assert_eq(d, r != VIDMM_RECLAIM_OK, "pDiscarded disagrees with the result");
    if (rc == VIDMM_PENDING)
        T_OK(vidmm_wddm2_paging_fence_wait(dev, f, UINT64_MAX));
    return r;
}

/* Random content written at once into 'h' (wherever it is), kept in 'buf'. */
static void fill_random(vidmm_device *dev, vidmm_handle h, void *buf, size_t n, uint32_t seed)
{
    t_bytes(buf, n, seed);
    t_write(dev, h, 0, buf, n);
}

static void expect_content(vidmm_device *dev, vidmm_handle h, const void *want, size_t n, const char *what)
{
    void *got = malloc(n);
    cr_assert_not_null(got);
    t_read(dev, h, 0, got, n);
    cr_assert(memcmp(got, want, n) == 0, "%s: the content changed", what);
    free(got);
}

/* =============================================================================================
 * Argument rules.
 * =========================================================================================== */

/* spec 11: "exactly one of pResources / HandleList is non-NULL"; "allocation_count must be
 * 1..10240 ... else -EINVAL"; D3DDDI_OFFER_PRIORITY "NONE = 0 (not to be used in an offer
 * call)"; spec 15.20: "Exactly one of resource list / handle list and count 1..10240, else
 * STATUS_INVALID_PARAMETER". Nothing changes. */
Test(offer, offer_rules)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, h);
    struct t_snap s;
    t_snap1(&s, dev, h);
    vidmm_handle *many = calloc(VIDMM_OFFER_MAX + 1, sizeof *many);
    cr_assert_not_null(many);
    for (uint32_t i = 0; i <= VIDMM_OFFER_MAX; i++)
        many[i] = h;
    struct vidmm_offer_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = &h;
    a.count = 1;
    a.priority = VIDMM_OFFER_PRIORITY_LOW;
    struct vidmm_offer_args b = a;
    b.resources = &h; /* both lists */
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.allocations = NULL; /* neither */
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.count = 0;
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.allocations = many;
    b.count = VIDMM_OFFER_MAX + 1;
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.priority = 0; /* D3DDDI_OFFER_PRIORITY_NONE */
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b.priority = VIDMM_OFFER_PRIORITY_AUTO + 1;
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.flags = 0x4; /* D3DKMT_OFFER_FLAGS: bits 2-31 reserved */
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.reserved = 1;
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.size_of = sizeof b - 1;
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    vidmm_handle mixed[2] = { h, T_BAD_HANDLE };
    b = a;
    b.allocations = mixed;
    b.count = 2;
    T_REFUSED(&s, vidmm_offer(dev, &b), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_offer(dev, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_offer(NULL, &a), VIDMM_E_INVALID_ARG);
    /* Still not offered: a submission-like use is accepted. */
    T_OK(w2_mr_rc(dev, &h, 1, 0, NULL));
    /* The upper bound itself is accepted. */
    b = a;
    b.allocations = many;
    b.count = VIDMM_OFFER_MAX;
    T_OK(vidmm_offer(dev, &b));
    free(many);
    vidmm_device_destroy(dev);
}

/* spec 11 / 15.20: the same list and count rules for reclaim. Nothing changes: the allocation
 * stays offered. */
Test(offer, reclaim_rules)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    offer1(dev, h, VIDMM_OFFER_PRIORITY_NORMAL, 0);
    struct t_snap s;
    t_snap1(&s, dev, h);
    vidmm_handle *many = calloc(VIDMM_OFFER_MAX + 1, sizeof *many);
    cr_assert_not_null(many);
    for (uint32_t i = 0; i <= VIDMM_OFFER_MAX; i++)
        many[i] = h;
    uint32_t res[2] = { 0x77, 0x77 };
    struct vidmm_reclaim_args a;
    memset(&a, 0, sizeof a);
    a.size_of = sizeof a;
    a.allocations = &h;
    a.count = 1;
    a.results = res;
    struct vidmm_reclaim_args b = a;
    b.resources = &h;
    T_REFUSED(&s, vidmm_reclaim(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.allocations = NULL;
    T_REFUSED(&s, vidmm_reclaim(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.count = 0;
    T_REFUSED(&s, vidmm_reclaim(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.allocations = many;
    b.count = VIDMM_OFFER_MAX + 1;
    b.results = NULL;
    T_REFUSED(&s, vidmm_reclaim(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.reserved = 9;
    T_REFUSED(&s, vidmm_reclaim(dev, &b), VIDMM_E_INVALID_ARG);
    b = a;
    b.size_of = 8;
    T_REFUSED(&s, vidmm_reclaim(dev, &b), VIDMM_E_INVALID_ARG);
    vidmm_handle mixed[2] = { h, T_BAD_HANDLE };
    b = a;
    b.allocations = mixed;
    b.count = 2;
    T_REFUSED(&s, vidmm_reclaim(dev, &b), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_reclaim(dev, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_reclaim(NULL, &a), VIDMM_E_INVALID_ARG);
    cr_assert_eq(res[0], 0x77u, "a refused reclaim wrote a result");
    /* Still offered: MakeResident is refused until the reclaim. */
    T_RC(w2_mr_rc(dev, &h, 1, 0, NULL), VIDMM_E_INVALID_ARG);
    /* The upper bound itself is accepted (an allocation listed 10240 times reports 10240 OKs). */
    b = a;
    b.allocations = many;
    b.count = VIDMM_OFFER_MAX;
    b.results = NULL;
    int rc = vidmm_reclaim(dev, &b);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "10240 entries: %d (%s)", rc, vidmm_strerror(rc));
    rc = w2_mr_rc(dev, &h, 1, 0, NULL);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "reclaimed, then made resident: %d (%s)", rc, vidmm_strerror(rc));
    free(many);
    vidmm_device_destroy(dev);
}

/* spec 11: "D3DKMT_OFFER_FLAGS (WDDM2): OfferImmediately bit 0, AllowDecommit bit 1" - WDDM2
 * flags, refused on a WDDM1 device, where an offer without flags works (offer exists since
 * WDDM 1.2). */
Test(offer, wddm1_offer_without_flags_only)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    t_use(dev, h, 0);
    struct t_snap s;
    t_snap1(&s, dev, h);
    T_REFUSED(&s, offer_rc(dev, &h, 1, VIDMM_OFFER_PRIORITY_LOW, VIDMM_OFFER_IMMEDIATELY), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, offer_rc(dev, &h, 1, VIDMM_OFFER_PRIORITY_LOW, VIDMM_OFFER_ALLOW_DECOMMIT), VIDMM_E_INVALID_ARG);
    offer1(dev, h, VIDMM_OFFER_PRIORITY_LOW, 0);
    uint64_t f = 1;
    uint32_t r = 9;
    T_RC(reclaim_rc(dev, &h, 1, &r, NULL, &f), 0);
    cr_assert_eq(r, VIDMM_RECLAIM_OK);
    cr_assert_eq(f, 0, "WDDM1 reclaim returned a paging fence");
    vidmm_device_destroy(dev);
}

/* Engine policy (wddm2.h): a pinned or a locked allocation cannot be offered (a pinned one is
 * never discarded, spec 10; a lock's pointer must stay valid, spec 6.4). */
Test(offer, locked_or_pinned_refused)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(T_VIS));
    t_use(dev, h, 0);
    struct vidmm_alloc_desc d = t_adesc(128 * T_KiB, T_SET(T_VIS)); /* fits the top 20 % */
    d.flags |= VIDMM_ALLOC_OVERLAY;
    vidmm_handle ov = t_alloc(dev, &d);
    t_use(dev, ov, 0);
    (void)t_lock(dev, h, 0);
    struct t_snap s;
    vidmm_handle both[2] = { ov, h };
    t_snap(&s, dev, both, 2);
    T_REFUSED(&s, offer_rc(dev, &h, 1, VIDMM_OFFER_PRIORITY_LOW, 0), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, offer_rc(dev, &ov, 1, VIDMM_OFFER_PRIORITY_LOW, 0), VIDMM_E_INVALID_ARG);
    /* A list with one bad entry offers none of them. */
    vidmm_handle ok = t_alloc_simple(dev, Q, T_SET(T_VIS));
    vidmm_handle list[2] = { ok, h };
    T_RC(offer_rc(dev, list, 2, VIDMM_OFFER_PRIORITY_LOW, 0), VIDMM_E_INVALID_ARG);
    t_use(dev, ok, 0); /* not offered: accepted */
    t_unlock(dev, h);
    offer1(dev, h, VIDMM_OFFER_PRIORITY_LOW, 0);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Discard order and the discard itself.
 * =========================================================================================== */

/* spec 11: "LOW: ... discarded before other offered allocations; NORMAL ...; HIGH ... discarded
 * last"; spec 15.20: "offered allocations are discard candidates ordered LOW < NORMAL < HIGH";
 * 15.5: "offered+discarded emits DISCARD_CONTENT" (no transfer). Offered resident-listed
 * allocations may go; listed ones that are not offered never do (spec 12). */
Test(offer, discarded_low_then_normal_then_high)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = t_alloc_simple(dev, Q, T_SET(T_VIS));
        w2_resident(dev, a[i]);
    }
    /* Offered in the order HIGH, LOW, NORMAL: the order of discards is LOW, NORMAL, HIGH. */
    offer1(dev, a[0], VIDMM_OFFER_PRIORITY_HIGH, 0);
    offer1(dev, a[1], VIDMM_OFFER_PRIORITY_LOW, 0);
    offer1(dev, a[2], VIDMM_OFFER_PRIORITY_NORMAL, 0);
    const int order[3] = { 1, 2, 0 };
    static struct t_log_buf b;
    for (int k = 0; k < 3; k++) {
        t_log_clear(dev);
        vidmm_handle n = t_alloc_simple(dev, Q, T_SET(T_VIS));
        w2_resident(dev, n);
        t_log_take(dev, &b);
        const vidmm_handle gone = a[order[k]];
        cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, gone, 0), 0, "step %d: %u not discarded", k, gone);
        cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, gone), 0, "step %d: an offered allocation was transferred",
                     k);
        cr_assert_eq(w2_status(dev, gone, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
        cr_assert_eq(w2_refs(dev, gone), 1, "the discard changed its residency references");
        for (int j = k + 1; j < 3; j++)
            cr_assert_eq(w2_status(dev, a[order[j]], NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY, "step %d: %d went early", k,
                         j);
        cr_assert_eq(w2_status(dev, a[3], NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY, "a listed, unoffered allocation went");
    }
    /* Nothing offered is left: the next one does not fit (every other allocation is listed). */
    vidmm_handle n = t_alloc_simple(dev, Q, T_SET(T_VIS));
    T_RC(w2_mr_rc(dev, &n, 1, 0, NULL), VIDMM_E_NO_MEMORY);
    vidmm_device_destroy(dev);
}

/* spec 15.20: offered allocations are the first candidates: before an allocation that is not
 * offered, even one of lower eviction priority and older use (spec 15.4 alone would take it). */
Test(offer, offered_before_any_unoffered)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle low = mk(dev, H, T_SET(T_VIS), VIDMM_PRIORITY_MINIMUM);
    vidmm_handle high = mk(dev, H, T_SET(T_VIS), VIDMM_PRIORITY_HIGH);
    t_use(dev, low, 0);
    t_use(dev, high, 0);
    offer1(dev, high, VIDMM_OFFER_PRIORITY_HIGH, 0);
    t_log_clear(dev);
    vidmm_handle z = t_alloc_simple(dev, H, T_SET(T_VIS));
    t_use(dev, z, 0);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, high, 0), 0, "the offered allocation was not discarded");
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, low), 0, "the MINIMUM allocation was evicted");
    cr_assert_eq(t_query(dev, low).where, VIDMM_WHERE_SEGMENT);
    vidmm_device_destroy(dev);
}

/* spec 11: "D3DKMT_RECLAIMALLOCATIONS ... pDiscarded[i] = TRUE if the content was discarded";
 * D3DDDI_RECLAIM_RESULT DISCARDED = 1; spec 15.20: "discarded content left undefined, filled
 * with a debug pattern". */
Test(offer, discarded_reports_discarded_and_reads_debug_pattern)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
    t_use(dev, a, VIDMM_REF_WRITE);
    static uint8_t buf[H];
    fill_random(dev, a, buf, sizeof buf, 1);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    t_use(dev, big, 0);
    cr_assert_eq(t_query(dev, a).where, VIDMM_WHERE_NONE, "discarded content still somewhere");
    uint32_t r[2] = { 9, 9 };
    bool d[2] = { false, false };
    vidmm_handle twice[2] = { a, a };
    T_RC(reclaim_rc(dev, twice, 2, r, d, NULL), 0);
    cr_assert_eq(r[0], VIDMM_RECLAIM_DISCARDED);
    cr_assert_eq(r[1], VIDMM_RECLAIM_DISCARDED, "a duplicate entry reported another result");
    cr_assert(d[0] && d[1]);
    t_expect_fill(dev, a, 0, H, VIDMM_DISCARDED_PATTERN);
    /* Reclaimed: usable again, and a second reclaim says OK. */
    cr_assert_eq(reclaim1(dev, a), VIDMM_RECLAIM_OK);
    t_use(dev, a, 0);
    vidmm_device_destroy(dev);
}

/* D3DDDI_RECLAIM_RESULT OK = 0 ("the content is intact"): offered, never needed, reclaimed -
 * same bytes, nothing paged. */
Test(offer, undisturbed_reports_ok_content_intact)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
    w2_resident(dev, a);
    static uint8_t buf[H];
    fill_random(dev, a, buf, sizeof buf, 2);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, VIDMM_OFFER_ALLOW_DECOMMIT);
    const uint64_t before = t_paging_total(dev);
    uint64_t f = 0;
    uint32_t r = 9;
    T_RC(reclaim_rc(dev, &a, 1, &r, NULL, &f), 0);
    cr_assert_eq(r, VIDMM_RECLAIM_OK);
    cr_assert_eq(t_paging_total(dev), before, "reclaiming an intact resident allocation paged");
    cr_assert_leq(f, vidmm_wddm2_paging_fence_completed(dev));
    expect_content(dev, a, buf, sizeof buf, "offer + reclaim");
    vidmm_device_destroy(dev);
}

/* spec 10 / 15.5: a PermanentSysMem copy that is clean is current, so dropping the segment
 * copy loses nothing: reclaim says OK and the bytes are intact. */
Test(offer, clean_sysmem_copy_survives_discard)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(H, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle a = t_alloc(dev, &d);
    static uint8_t buf[H];
    fill_random(dev, a, buf, sizeof buf, 3); /* into its system-memory copy */
    t_use(dev, a, 0);                        /* paged in, read only: clean */
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    t_log_clear(dev);
    vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    t_use(dev, big, 0);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, a, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, a), 0);
    cr_assert_eq(reclaim1(dev, a), VIDMM_RECLAIM_OK);
    expect_content(dev, a, buf, sizeof buf, "clean PermanentSysMem copy");
    vidmm_device_destroy(dev);
}

/* spec 15.5: "A 'discardable' eviction (content not needed, NotWrittenTo, offered+discarded)
 * emits DISCARD_CONTENT" - also when the eviction is asked for: vidmm_evict() (WDDM1) and an
 * Evict that takes an offered allocation off the residency list (WDDM2). */
Test(offer, explicit_evict_discards_offered)
{
    vidmm_device *d1 = t_dev_std();
    vidmm_handle a = t_alloc_simple(d1, Q, T_SET(T_VIS));
    t_use(d1, a, VIDMM_REF_WRITE);
    offer1(d1, a, VIDMM_OFFER_PRIORITY_HIGH, 0);
    t_log_clear(d1);
    t_evict(d1, a);
    static struct t_log_buf b;
    t_log_take(d1, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, a, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, a), 0);
    cr_assert_eq(reclaim1(d1, a), VIDMM_RECLAIM_DISCARDED);
    vidmm_device_destroy(d1);

    vidmm_device *d2 = w2_dev();
    vidmm_handle c = t_alloc_simple(d2, Q, T_SET(T_VIS));
    w2_resident(d2, c);
    offer1(d2, c, VIDMM_OFFER_PRIORITY_HIGH, 0);
    t_log_clear(d2);
    w2_evict(d2, c, 0);
    w2_drain(d2);
    t_log_take(d2, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, c, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, c), 0);
    cr_assert_eq(reclaim1(d2, c), VIDMM_RECLAIM_DISCARDED);
    vidmm_device_destroy(d2);
}

/* spec 10: PermanentSysMem "eviction = discard if clean, transfer if dirty": a dirty one's
 * system-memory copy is stale, so discarding its segment copy loses the content - DISCARDED
 * (an offered allocation is never transferred). */
Test(offer, dirty_sysmem_copy_lost_by_discard)
{
    vidmm_device *dev = t_dev_std();
    struct vidmm_alloc_desc d = t_adesc(H, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
    vidmm_handle a = t_alloc(dev, &d);
    t_use(dev, a, VIDMM_REF_WRITE); /* the GPU wrote it: dirty */
    cr_assert(t_query(dev, a).dirty);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    t_log_clear(dev);
    vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    t_use(dev, big, 0);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, a, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, a), 0, "an offered dirty allocation was transferred");
    cr_assert_eq(reclaim1(dev, a), VIDMM_RECLAIM_DISCARDED);
    t_expect_fill(dev, a, 0, H, VIDMM_DISCARDED_PATTERN);
    vidmm_device_destroy(dev);
}

/* spec 12 / 9.2 (WDDM2): a discard is a placement change like an eviction: the GPU VA's
 * page-table entries are made invalid (UPDATE_PAGE_TABLE with NOTIFY_EVICTION), so the GPU
 * cannot read freed memory through them. */
Test(offer, discard_invalidates_gpu_va)
{
    vidmm_device *dev = w2_dev();
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
    w2_resident(dev, a);
    const uint64_t va = w2_reserve(sp, 0, H);
    w2_map(sp, va, a, 0, H);
    w2_drain(dev);
    struct vidmm_va_translation tr;
    T_OK(vidmm_va_translate(sp, va, &tr));
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    t_log_clear(dev);
    vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    w2_resident(dev, big);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    const ptrdiff_t u = w2_log_upt(&b, a, 0);
    cr_assert_geq(u, 0, "no page-table update for the discarded allocation");
    cr_assert(b.op[u].flags & VIDMM_UPDATE_PAGE_TABLE_NOTIFY_EVICTION);
    cr_assert_eq(b.op[u].dst.segment_id, 0);
    T_RC(vidmm_va_translate(sp, va, &tr), VIDMM_E_NOT_AVAILABLE);
    vidmm_device_destroy(dev);
}

/* spec 15.9 / 10: in an aperture the content is the backing store: an offered allocation there
 * is unmapped (no transfer) and keeps its content. */
Test(offer, aperture_offered_is_unmapped_not_lost)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, T_MiB, T_SET(T_APE));
    static uint8_t buf[T_MiB];
    fill_random(dev, a, buf, sizeof buf, 4);
    t_use(dev, a, 0);
    cr_assert_eq(t_query(dev, a).where, VIDMM_WHERE_APERTURE);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    t_log_clear(dev);
    vidmm_handle big = t_alloc_simple(dev, 1536 * T_KiB, T_SET(T_APE));
    t_use(dev, big, 0);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_UNMAP_APERTURE_SEGMENT, a, 0), 0);
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, a), 0);
    cr_assert_eq(reclaim1(dev, a), VIDMM_RECLAIM_OK);
    expect_content(dev, a, buf, sizeof buf, "aperture");
    vidmm_device_destroy(dev);
}

/* spec 15.20: "AUTO mapped from priority: < NORMAL -> LOW, < HIGH -> NORMAL, else HIGH". Three
 * AUTO offers made in the reverse order are discarded MINIMUM's first, then NORMAL's, HIGH's. */
Test(offer, auto_priority_from_eviction_priority)
{
    vidmm_device *dev = w2_dev();
    const uint32_t prio[3] = { VIDMM_PRIORITY_HIGH, VIDMM_PRIORITY_NORMAL, VIDMM_PRIORITY_MINIMUM };
    vidmm_handle a[3];
    for (int i = 0; i < 3; i++) {
        a[i] = mk(dev, Q, T_SET(T_VIS), prio[i]);
        w2_resident(dev, a[i]);
    }
    vidmm_handle pad = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, pad);
    for (int i = 0; i < 3; i++)
        offer1(dev, a[i], VIDMM_OFFER_PRIORITY_AUTO, 0);
    const int order[3] = { 2, 1, 0 };
    for (int k = 0; k < 3; k++) {
        vidmm_handle n = t_alloc_simple(dev, Q, T_SET(T_VIS));
        w2_resident(dev, n);
        cr_assert_eq(w2_status(dev, a[order[k]], NULL), VIDMM_RESIDENCY_NOT_RESIDENT, "step %d", k);
        for (int j = k + 1; j < 3; j++)
            cr_assert_eq(w2_status(dev, a[order[j]], NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY, "step %d", k);
    }
    vidmm_device_destroy(dev);
}

/* spec 11: "dxgkrnl defers the actual offer (non-blocking) until the GPU is done" with the work
 * submitted before it: until then the allocation is evicted like any other (its content kept).
 * With OfferImmediately (D3DKMT_OFFER_FLAGS bit 0) the offer is in effect at once: discarded
 * even while the GPU still uses it - the discard waiting for the GPU in the paging queue. */
Test(offer, deferred_until_gpu_done_unless_immediately)
{
    for (int immediate = 0; immediate < 2; immediate++) {
        vidmm_device *dev = w2_dev();
        vidmm_va_space *sp = w2_space(dev, T_PROC);
        vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
        w2_resident(dev, a);
        static uint8_t buf[H];
        fill_random(dev, a, buf, sizeof buf, 5);
        const uint64_t va = w2_reserve(sp, 0, H);
        w2_map(sp, va, a, 0, H);
        w2_drain(dev);
        struct vidmm_va_ref ref = { va, H, 0, 0 };
        uint64_t fence = 0;
        T_OK(vidmm_va_submit(sp, &ref, 1, 0, &fence));
        offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, immediate ? VIDMM_OFFER_IMMEDIATELY : 0);
        w2_evict(dev, a, VIDMM_EVICT_ONLY_IF_NECESSARY); /* off the list, still in place */
        struct t_later l;
        t_signal_later(&l, dev, fence, 50, NULL);
        vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
        w2_resident(dev, big); /* waits for the GPU either way (transfer or discard of a busy one) */
        t_later_join(&l);
        const uint32_t r = reclaim1(dev, a);
        if (immediate) {
            cr_assert_eq(r, VIDMM_RECLAIM_DISCARDED, "OFFER_IMMEDIATELY: not discarded");
        } else {
            cr_assert_eq(r, VIDMM_RECLAIM_OK, "a deferred offer took effect before the GPU was done");
            expect_content(dev, a, buf, sizeof buf, "deferred offer");
        }
        vidmm_device_destroy(dev);
    }
}

/* D3DKMT_OFFER_FLAGS AllowDecommit and D3DDDI_RECLAIM_RESULT NOT_COMMITTED = 2: the discarded
 * allocation's system memory is decommitted too; reclaim says NOT_COMMITTED; the allocation is
 * usable again (engine policy) and reads the debug pattern. */
Test(offer, allow_decommit_reports_not_committed)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
    static uint8_t buf[H];
    fill_random(dev, a, buf, sizeof buf, 6); /* a system-memory copy exists (committed) */
    w2_resident(dev, a);                     /* paged in: that copy is stale now */
    const uint64_t used = t_stats(dev).sysmem_used;
    cr_assert_geq(used, H);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, VIDMM_OFFER_ALLOW_DECOMMIT);
    vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    w2_resident(dev, big);
    cr_assert_eq(t_stats(dev).sysmem_used, used - H, "the backing store was not decommitted");
    uint32_t r = 9;
    bool d = false;
    uint64_t f;
    int rc = reclaim_rc(dev, &a, 1, &r, &d, &f);
    cr_assert(rc == 0 || rc == VIDMM_E_NO_MEMORY, "%d (%s)", rc, vidmm_strerror(rc)); /* listed, no room back */
    cr_assert_eq(r, VIDMM_RECLAIM_NOT_COMMITTED);
    cr_assert(d);
    t_expect_fill(dev, a, 0, H, VIDMM_DISCARDED_PATTERN);
    vidmm_device_destroy(dev);
}

/* Offered content in system memory under memory pressure: dropped before anything else, never
 * written out - with AllowDecommit (D3DKMT_OFFER_FLAGS bit 1) its commit goes too
 * (NOT_COMMITTED, sysmem_used drops), without it the commit stays (DISCARDED, still counted).
 * An allocation that is not offered keeps its content. */
Test(offer, sysmem_pressure_drops_offered_content)
{
    static struct vidmm_segment_desc segs[3];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[1] = t_mem_seg(T_LOC_BASE, T_LOC_SIZE, VIDMM_SEGMENT_LOCAL_BUDGET_GROUP);
    segs[2] = t_aper_seg(T_APE_BASE, T_APE_SIZE, VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP);
    struct vidmm_device_desc dd = t_ddesc(segs, 3);
    dd.flags |= VIDMM_DEVICE_WDDM2;
    dd.sysmem_budget = T_PG;
    vidmm_device *dev = t_dev(&dd);
    vidmm_handle plain = t_alloc_simple(dev, Q, T_SET(T_VIS));
    vidmm_handle keep = t_alloc_simple(dev, Q, T_SET(T_VIS));
    vidmm_handle drop = t_alloc_simple(dev, Q, T_SET(T_VIS));
    static uint8_t pb[Q], kb[Q], db[Q];
    fill_random(dev, plain, pb, sizeof pb, 7);
    fill_random(dev, keep, kb, sizeof kb, 8);
    fill_random(dev, drop, db, sizeof db, 9);
    cr_assert_eq(t_query(dev, drop).where, VIDMM_WHERE_SYSMEM);
    const uint64_t used = t_stats(dev).sysmem_used;
    cr_assert_eq(used, 3 * Q);
    offer1(dev, keep, VIDMM_OFFER_PRIORITY_LOW, 0);
    cr_assert_eq(t_query(dev, keep).where, VIDMM_WHERE_NONE, "over budget: offered content stayed");
    cr_assert_eq(t_stats(dev).sysmem_used, used, "without ALLOW_DECOMMIT the commit goes too");
    offer1(dev, drop, VIDMM_OFFER_PRIORITY_HIGH, VIDMM_OFFER_ALLOW_DECOMMIT);
    cr_assert_eq(t_query(dev, drop).where, VIDMM_WHERE_NONE);
    cr_assert_eq(t_stats(dev).sysmem_used, used - Q, "ALLOW_DECOMMIT: the commit stayed");
    cr_assert_eq(reclaim1(dev, keep), VIDMM_RECLAIM_DISCARDED);
    cr_assert_eq(reclaim1(dev, drop), VIDMM_RECLAIM_NOT_COMMITTED);
    t_expect_fill(dev, keep, 0, Q, VIDMM_DISCARDED_PATTERN);
    t_expect_fill(dev, drop, 0, Q, VIDMM_DISCARDED_PATTERN);
    expect_content(dev, plain, pb, sizeof pb, "not offered");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Use of an offered allocation.
 * =========================================================================================== */

/* spec 11: "After offering, the allocation must be reclaimed before it is locked or used for
 * rendering"; spec 15.20: "locking or submitting an offered allocation ->
 * STATUS_INVALID_PARAMETER". WDDM1: vidmm_submit() and vidmm_make_resident(). Nothing changes;
 * after the reclaim both work. */
Test(offer, wddm1_submission_refused_until_reclaim)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS));
    vidmm_handle other = t_alloc_simple(dev, Q, T_SET(T_VIS));
    t_use(dev, a, 0);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_NORMAL, 0);
    struct t_snap s;
    t_snap1(&s, dev, a);
    struct vidmm_alloc_ref refs[2] = { { other, 0 }, { a, VIDMM_REF_WRITE } };
    uint64_t fence = 0;
    T_REFUSED(&s, vidmm_submit(dev, refs, 2, 0, NULL, &fence), VIDMM_E_INVALID_ARG);
    cr_assert_eq(fence, 0);
    cr_assert_eq(t_query(dev, other).where, VIDMM_WHERE_NONE, "a refused submission placed another allocation");
    T_REFUSED(&s, vidmm_make_resident(dev, &a, 1, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(reclaim1(dev, a), VIDMM_RECLAIM_OK);
    t_use(dev, a, VIDMM_REF_WRITE);
    t_resident(dev, a, NULL);
    vidmm_device_destroy(dev);
}

/* spec 15.20 on a WDDM2 device: a submission naming a VA of an offered allocation is refused
 * (STATUS_INVALID_PARAMETER) before it runs - not a GPU fault, the device stays - and
 * MakeResident of it is refused too (engine policy: reclaim first). */
Test(offer, wddm2_submission_and_make_resident_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    const uint64_t va = w2_reserve(sp, 0, Q);
    w2_map(sp, va, a, 0, Q);
    w2_drain(dev);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    struct t_snap s;
    t_snap1(&s, dev, a);
    struct vidmm_va_ref ref = { va + T_PG, T_PG, VIDMM_REF_WRITE, 0 };
    uint64_t fence = 0;
    T_REFUSED(&s, vidmm_va_submit(sp, &ref, 1, 0, &fence), VIDMM_E_INVALID_ARG);
    struct vidmm_gpu_fault gf = { sizeof gf, 0, 0, 0 };
    T_RC(vidmm_wddm2_last_fault(dev, &gf), VIDMM_E_NOT_AVAILABLE);
    T_REFUSED(&s, w2_mr_rc(dev, &a, 1, 0, NULL), VIDMM_E_INVALID_ARG);
    cr_assert_eq(w2_refs(dev, a), 1, "a refused make-resident took a reference");
    cr_assert_eq(reclaim1(dev, a), VIDMM_RECLAIM_OK);
    T_OK(vidmm_va_submit(sp, &ref, 1, 0, &fence));
    T_OK(vidmm_fence_signal(dev, fence));
    vidmm_device_destroy(dev);
}

/* spec 6.3 rule 9: "Retired or offered allocations cannot be locked" (15.20: INVALID_PARAMETER).
 * Needs the check in lib/engine/lock.c check_lock() (vm_offer_refuse_use(), see offer.h): lock.c
 * is being changed by another engineer - enable this test once it is wired. */
Test(offer, lock_refused_until_reclaim)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS));
    t_use(dev, a, 0);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    struct t_snap s;
    t_snap1(&s, dev, a);
    struct vidmm_lock_args la = t_largs(a, 0);
    T_REFUSED(&s, vidmm_lock(dev, &la), VIDMM_E_INVALID_ARG);
    cr_assert_eq(reclaim1(dev, a), VIDMM_RECLAIM_OK);
    (void)t_lock(dev, a, 0);
    t_unlock(dev, a);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Reclaim on a WDDM2 device.
 * =========================================================================================== */

/* spec 11: "WDDM2 reclaim automatically pages the allocation back in if it is on the device
 * residency list; ReclaimAllocations2 is asynchronous and returns a paging fence to wait on
 * before GPU use ... Right after reclaim returns the backing store is valid". */
Test(offer, reclaim_pages_residency_listed_back_with_fence)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
    w2_resident(dev, a);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    w2_resident(dev, big); /* discards 'a' (still listed) */
    cr_assert_eq(w2_status(dev, a, NULL), VIDMM_RESIDENCY_NOT_RESIDENT);
    w2_evict(dev, big, 0); /* room again */
    w2_drain(dev);
    t_log_clear(dev);
    uint32_t r = 9;
    uint64_t f = 0;
    T_RC(reclaim_rc(dev, &a, 1, &r, NULL, &f), VIDMM_PENDING);
    cr_assert_eq(r, VIDMM_RECLAIM_DISCARDED);
    cr_assert_gt(f, vidmm_wddm2_paging_fence_completed(dev), "the paging fence already passed");
    T_OK(vidmm_wddm2_paging_fence_wait(dev, f, UINT64_MAX));
    cr_assert_eq(w2_status(dev, a, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    static struct t_log_buf b;
    t_log_take(dev, &b);
    const ptrdiff_t t = t_log_find(&b, VIDMM_PAGING_TRANSFER, a, 0);
    cr_assert_geq(t, 0, "not paged back in");
    cr_assert_eq(b.op[t].dst.segment_id, T_VIS);
    t_expect_fill(dev, a, 0, H, VIDMM_DISCARDED_PATTERN);
    /* Not listed: reclaimed where it is, no paging, fence 0. */
    vidmm_handle c = t_alloc_simple(dev, Q, T_SET(T_VIS));
    offer1(dev, c, VIDMM_OFFER_PRIORITY_HIGH, 0);
    T_RC(reclaim_rc(dev, &c, 1, &r, NULL, &f), 0);
    cr_assert_eq(f, 0);
    vidmm_device_destroy(dev);
}

/* Resource lists (pResources) name the allocation as created: on a WDDM2 device (no renaming)
 * the same as the handle list. Results per entry. */
Test(offer, resource_list)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    w2_resident(dev, b);
    struct vidmm_offer_args oa;
    memset(&oa, 0, sizeof oa);
    oa.size_of = sizeof oa;
    vidmm_handle both[2] = { a, b };
    oa.resources = both;
    oa.count = 2;
    oa.priority = VIDMM_OFFER_PRIORITY_NORMAL;
    T_OK(vidmm_offer(dev, &oa));
    T_RC(w2_mr_rc(dev, &b, 1, 0, NULL), VIDMM_E_INVALID_ARG); /* offered through the resource list */
    vidmm_handle big = t_alloc_simple(dev, H, T_SET(T_VIS));
    w2_resident(dev, big); /* 'a' (offered first, same priority) goes */
    struct vidmm_reclaim_args ra;
    memset(&ra, 0, sizeof ra);
    ra.size_of = sizeof ra;
    ra.resources = both;
    ra.count = 2;
    uint32_t r[2] = { 9, 9 };
    ra.results = r;
    int rc = vidmm_reclaim(dev, &ra);
    cr_assert(rc == 0 || rc == VIDMM_PENDING || rc == VIDMM_E_NO_MEMORY, "%d (%s)", rc, vidmm_strerror(rc));
    cr_assert_eq(r[0], VIDMM_RECLAIM_DISCARDED);
    cr_assert_eq(r[1], VIDMM_RECLAIM_OK);
    vidmm_device_destroy(dev);
}

/* Destroying an offered allocation takes it off the offered lists: later discards never see it. */
Test(offer, destroy_offered)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
    vidmm_handle b = t_alloc_simple(dev, H, T_SET(T_VIS));
    w2_resident(dev, a);
    w2_resident(dev, b);
    offer1(dev, a, VIDMM_OFFER_PRIORITY_LOW, 0);
    offer1(dev, b, VIDMM_OFFER_PRIORITY_LOW, 0);
    T_OK(vidmm_alloc_destroy(dev, a));
    vidmm_handle c = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    w2_resident(dev, c);
    w2_evict(dev, c, 0); /* room for 'b' to be paged back in at its reclaim */
    cr_assert_eq(reclaim1(dev, b), VIDMM_RECLAIM_DISCARDED);
    cr_assert_eq(w2_status(dev, b, NULL), VIDMM_RESIDENCY_IN_GPU_MEMORY);
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * WDDM1: OfferPriority in the allocation list (device.h VIDMM_REF_OFFER_PRIORITY).
 * =========================================================================================== */

/* spec 11: "WDDM1: an allocation can also be offered through D3DDDI_ALLOCATIONLIST.OfferPriority
 * (offered after that DMA buffer completes)"; spec 4.5: OfferPriority is bits 2-4 (0x1C). While
 * the submission's fence has not passed, the offer is not in effect: memory pressure pages the
 * allocation out by transfer and the reclaim says OK, content intact. Once it has passed, the
 * same pressure discards it (DISCARD_CONTENT, no transfer): DISCARDED. Both ways it is offered
 * from the submission on: a new submission or a lock is refused until the reclaim. */
Test(offer, wddm1_list_offer_after_dma_buffer)
{
    cr_assert_eq(VIDMM_REF_OFFER_PRIORITY_MASK, 0x1Cu);
    cr_assert_eq(VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_HIGH), 0xCu);
    for (int signalled = 0; signalled < 2; signalled++) {
        vidmm_device *dev = t_dev_std();
        vidmm_handle a = t_alloc_simple(dev, H, T_SET(T_VIS));
        t_use(dev, a, VIDMM_REF_WRITE);
        static uint8_t buf[H];
        fill_random(dev, a, buf, sizeof buf, 11);
        struct vidmm_alloc_ref ref = { a, VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_LOW) };
        uint64_t f = 0;
        T_OK(vidmm_submit(dev, &ref, 1, 0, NULL, &f));
        /* Offered from here on. */
        struct t_snap s;
        t_snap1(&s, dev, a);
        struct vidmm_alloc_ref again = { a, 0 };
        uint64_t f2 = 0;
        T_REFUSED(&s, vidmm_submit(dev, &again, 1, 0, NULL, &f2), VIDMM_E_INVALID_ARG);
        struct vidmm_lock_args la = t_largs(a, VIDMM_LOCK_DONOT_WAIT);
        T_REFUSED(&s, vidmm_lock(dev, &la), VIDMM_E_INVALID_ARG);
        struct t_later l;
        if (signalled)
            t_signal(dev, f);
        else
            t_signal_later(&l, dev, f, 50, NULL); /* the pressure below waits for it */
        t_log_clear(dev);
        vidmm_handle big = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
        t_use(dev, big, 0);
        if (!signalled)
            t_later_join(&l);
        static struct t_log_buf b;
        t_log_take(dev, &b);
        const uint32_t r = reclaim1(dev, a);
        if (signalled) {
            cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, a, 0), 0, "not discarded");
            cr_assert_eq(t_log_count(&b, VIDMM_PAGING_TRANSFER, a), 0, "an offered allocation was transferred");
            cr_assert_eq(r, VIDMM_RECLAIM_DISCARDED);
        } else {
            cr_assert_eq(t_log_count(&b, VIDMM_PAGING_DISCARD_CONTENT, a), 0,
                         "discarded before the submission's fence passed");
            cr_assert_geq(t_log_find(&b, VIDMM_PAGING_TRANSFER, a, 0), 0);
            cr_assert_eq(r, VIDMM_RECLAIM_OK, "the offer took effect before the DMA buffer completed");
            expect_content(dev, a, buf, sizeof buf, "offered by the list, fence not passed");
        }
        t_use(dev, a, 0); /* reclaimed: usable again */
        vidmm_device_destroy(dev);
    }
}

/* OfferPriority values: NONE offers nothing; LOW, NORMAL, HIGH, AUTO offer (AUTO from the
 * eviction priority, as vidmm_offer()); 5-7 are refused with nothing changed - the submission
 * not issued; a pinned allocation cannot be offered (refused, nothing changed). The priority
 * orders the discards like vidmm_offer()'s: LOW goes before HIGH. */
Test(offer, wddm1_list_offer_priorities_and_rules)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle a = t_alloc_simple(dev, Q, T_SET(T_VIS));
    struct vidmm_alloc_desc od = t_adesc(128 * T_KiB, T_SET(T_VIS)); /* fits the top 20 % */
    od.flags |= VIDMM_ALLOC_OVERLAY;
    vidmm_handle pinned = t_alloc(dev, &od);
    t_use(dev, a, 0);
    t_use(dev, pinned, 0);
    struct t_snap s;
    vidmm_handle both[2] = { a, pinned };
    t_snap(&s, dev, both, 2);
    const uint64_t before = vidmm_fence_completed(dev);
    uint64_t f = 0;
    for (uint32_t p = 5; p <= 7; p++) {
        struct vidmm_alloc_ref bad = { a, VIDMM_REF_OFFER_PRIORITY(p) };
        T_REFUSED(&s, vidmm_submit(dev, &bad, 1, 0, NULL, &f), VIDMM_E_INVALID_ARG);
    }
    struct vidmm_alloc_ref pin = { pinned, VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_LOW) };
    T_REFUSED(&s, vidmm_submit(dev, &pin, 1, 0, NULL, &f), VIDMM_E_INVALID_ARG);
    struct vidmm_alloc_ref two[2] = { { a, 0 }, { pinned, VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_AUTO) } };
    T_REFUSED(&s, vidmm_submit(dev, two, 2, 0, NULL, &f), VIDMM_E_INVALID_ARG);
    cr_assert_eq(f, 0);
    cr_assert_eq(vidmm_fence_completed(dev), before);
    vidmm_device_destroy(dev);

    /* NONE offers nothing; HIGH and LOW are discarded LOW first; AUTO offers. */
    dev = t_dev_std();
    vidmm_handle lo = t_alloc_simple(dev, Q, T_SET(T_VIS)), hi = t_alloc_simple(dev, Q, T_SET(T_VIS));
    vidmm_handle none = t_alloc_simple(dev, Q, T_SET(T_VIS)), au = t_alloc_simple(dev, Q, T_SET(T_VIS));
    struct vidmm_alloc_ref list[4] = {
        { hi, VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_HIGH) },
        { lo, VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_LOW) | VIDMM_REF_WRITE },
        { none, VIDMM_REF_WRITE },
        { au, VIDMM_REF_OFFER_PRIORITY(VIDMM_OFFER_PRIORITY_AUTO) },
    };
    T_OK(vidmm_submit(dev, list, 4, 0, NULL, &f));
    t_signal(dev, f);
    t_use(dev, none, 0); /* NONE: not offered */
    struct vidmm_alloc_ref au_again = { au, 0 };
    T_RC(vidmm_submit(dev, &au_again, 1, 0, NULL, &f), VIDMM_E_INVALID_ARG); /* AUTO: offered */
    t_log_clear(dev);
    vidmm_handle big = t_alloc_simple(dev, Q, T_SET(T_VIS));
    t_use(dev, big, 0); /* one 256 KiB place needed: the LOW one goes */
    static struct t_log_buf b;
    t_log_take(dev, &b);
    cr_assert_geq(t_log_find(&b, VIDMM_PAGING_DISCARD_CONTENT, lo, 0), 0, "the LOW offer was not discarded first");
    cr_assert_eq(t_log_count(&b, VIDMM_PAGING_DISCARD_CONTENT, hi), 0, "HIGH discarded before LOW");
    cr_assert_eq(reclaim1(dev, lo), VIDMM_RECLAIM_DISCARDED);
    cr_assert_eq(reclaim1(dev, hi), VIDMM_RECLAIM_OK);
    vidmm_device_destroy(dev);
}
