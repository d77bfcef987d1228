/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_pte_order.c - conformance: a GPU page-table entry never points at
 * memory that does not hold its allocation (issue 27, item 3; wddm2.h "GPU virtual
 * addresses": the entries change "in order with the transfers around it").
 *
 * A simulator executes the paging log in order. If the UPDATE_PAGE_TABLE record that makes a
 * mapping invalid comes after the TRANSFER, DISCARD_CONTENT or UNMAP_APERTURE_SEGMENT that
 * empties the old place, a GPU between the two reads freed - or already reused - memory through
 * a valid entry; if the record that makes it valid comes before the TRANSFER or FILL that fills
 * the new place, it reads what was there before. So: invalidate first, validate last.
 *
 * The checker replays the log record by record, keeping which allocation's content each page
 * of each segment holds (a TRANSFER or FILL into a segment gives its pages to the record's
 * allocation, a MAP_APERTURE_SEGMENT too; a TRANSFER out of a segment, a DISCARD_CONTENT and an
 * UNMAP_APERTURE_SEGMENT empty them) and every page-table entry the UPDATE_PAGE_TABLE records
 * wrote; after each record, every valid entry must point at a page its allocation holds.
 * Scenarios: page-in, page-out by Evict, eviction under pressure, a move by
 * UpdateAllocationProperty, Lock2's move to an aperture, a discarded offer, and a standby that
 * saves and restores a pinned allocation in a purged segment. */
#include "t_wddm2.h"

#include <stdlib.h>
#include <stdio.h>

#define K64 (64 * T_KiB)
#define PG 4096u

/* ---------------------------------------------------------------------------------------------
 * The log replay.
 * ------------------------------------------------------------------------------------------- */
#define R_MAX 8192
struct owner {
    uint32_t seg;
    uint64_t page;              /* segment address / 4096 */
    vidmm_handle h;             /* 0: holds nothing */
};
struct pte {
    uint32_t proc;
    uint64_t vapage;
    uint32_t seg;               /* 0: invalid */
    uint64_t page;
    vidmm_handle h;
};
struct replay {
    struct owner own[R_MAX];
    size_t nown;
    struct pte pte[R_MAX];
    size_t npte;
    size_t records, updates, valid_checked;
};

static void set_owner(struct replay *r, uint32_t seg, uint64_t page, vidmm_handle h)
{
    for (size_t i = 0; i < r->nown; i++)
        if (r->own[i].seg == seg && r->own[i].page == page) {
            r->own[i].h = h;
            return;
        }
    cr_assert_lt(r->nown, R_MAX);
    r->own[r->nown++] = (struct owner){ seg, page, h };
}

static vidmm_handle owner_of(const struct replay *r, uint32_t seg, uint64_t page)
{
    for (size_t i = 0; i < r->nown; i++)
        if (r->own[i].seg == seg && r->own[i].page == page)
            return r->own[i].h;
    return 0;
}

static void own_range(struct replay *r, const struct vidmm_location *l, uint64_t size, vidmm_handle h)
{
    for (uint64_t k = 0; k < (size + PG - 1) / PG; k++)
        set_owner(r, l->segment_id, l->segment_address / PG + k, h);
}

static void set_pte(struct replay *r, uint32_t proc, uint64_t vapage, uint32_t seg, uint64_t page, vidmm_handle h)
{
    for (size_t i = 0; i < r->npte; i++)
        if (r->pte[i].proc == proc && r->pte[i].vapage == vapage) {
            r->pte[i] = (struct pte){ proc, vapage, seg, page, h };
            return;
        }
    cr_assert_lt(r->npte, R_MAX);
    r->pte[r->npte++] = (struct pte){ proc, vapage, seg, page, h };
}

/* Replays 'b' from a device whose segments held nothing. Returns the index of the first record
 * after which a valid entry points at a page its allocation does not hold (what is wrong in
 * 'why'), or -1. */
static ptrdiff_t replay(const struct t_log_buf *b, struct replay *r, char *why, size_t cap)
{
    for (size_t i = 0; i < b->n; i++) {
        const struct vidmm_paging_op *op = &b->op[i];
        switch (op->type) {
        case VIDMM_PAGING_TRANSFER:
        case VIDMM_PAGING_SPECIAL_LOCK_TRANSFER:
            if (op->src.segment_id != 0 &&
                !(op->dst.segment_id == op->src.segment_id && op->dst.segment_address == op->src.segment_address))
                own_range(r, &op->src, op->size, 0); /* the old place is empty now */
            if (op->dst.segment_id != 0)
                own_range(r, &op->dst, op->size, op->allocation);
            break;
        case VIDMM_PAGING_FILL:
        case VIDMM_PAGING_MAP_APERTURE_SEGMENT:
            own_range(r, &op->dst, op->size, op->allocation);
            break;
        case VIDMM_PAGING_DISCARD_CONTENT:
        case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT:
            own_range(r, &op->dst, op->size, 0);
            break;
        case VIDMM_PAGING_UPDATE_PAGE_TABLE:
            r->updates++;
            for (uint64_t k = 0; k < op->size / PG; k++)
                set_pte(r, op->swizzling_range_data, op->offset_in_pages + k, op->dst.segment_id,
                        op->dst.segment_id ? op->dst.segment_address / PG + k : 0, op->allocation);
            break;
        default:
            break;
        }
        r->records++;
        for (size_t k = 0; k < r->npte; k++) {
            const struct pte *e = &r->pte[k];
            if (e->seg == 0)
                continue;
            r->valid_checked++;
            const vidmm_handle holder = owner_of(r, e->seg, e->page);
            if (holder != e->h) {
                snprintf(why, cap,
                         "after record %zu (%s of %u), the valid entry of VA page %#llx of process %u points at "
                         "segment %u page %#llx, which holds %s%u, not allocation %u",
                         i, t_op_name(op->type), op->allocation, (unsigned long long)e->vapage, e->proc, e->seg,
                         (unsigned long long)e->page, holder ? "allocation " : "nothing: ", holder, e->h);
                return (ptrdiff_t)i;
            }
        }
    }
    return -1;
}

/* The whole log of 'dev' since its creation, replayed. */
static void check_log(vidmm_device *dev, const char *what)
{
    w2_drain(dev);
    static struct t_log_buf b;
    static struct replay r;
    char why[256];
    memset(&r, 0, sizeof r);
    t_log_take(dev, &b);
    if (replay(&b, &r, why, sizeof why) >= 0) {
        t_log_dump(&b, what);
        cr_assert_fail("%s: %s", what, why);
    }
    cr_assert_gt(r.updates, 0, "%s: no UPDATE_PAGE_TABLE record: the scenario maps nothing", what);
    cr_log_info("%s: %zu records, %zu page-table updates, %zu valid entries checked", what, r.records, r.updates,
                r.valid_checked);
}

/* A space of T_PROC with a 1 MiB reservation; 'h' mapped at its start (its first 'size' bytes). */
static vidmm_va_space *mapped(vidmm_device *dev, vidmm_handle h, uint64_t size, uint64_t *va)
{
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    *va = w2_reserve(sp, 0, T_MiB);
    w2_map(sp, *va, h, 0, size);
    return sp;
}

/* The checker itself: a log whose invalidation comes after the transfer that empties the place
 * fails it; the same log in the right order passes. (Without this the checker could pass
 * anything.) */
Test(wddm2_pte_order, checker_catches_a_late_invalidation)
{
    static struct t_log_buf b;
    static struct replay r;
    memset(&b, 0, sizeof b);
    struct vidmm_paging_op *op = b.op;
    const struct vidmm_location seg = { 1, 0x10000000ull }, none = { 0, 0 };
    op[0] = (struct vidmm_paging_op){ .type = VIDMM_PAGING_FILL, .allocation = 7, .size = 2 * PG, .dst = seg };
    op[1] = (struct vidmm_paging_op){ .type = VIDMM_PAGING_UPDATE_PAGE_TABLE, .allocation = 7, .size = 2 * PG,
                                      .offset_in_pages = 16, .dst = seg, .swizzling_range_data = 5 };
    op[2] = (struct vidmm_paging_op){ .type = VIDMM_PAGING_UPDATE_PAGE_TABLE, .allocation = 7, .size = 2 * PG,
                                      .offset_in_pages = 16, .dst = none, .swizzling_range_data = 5 };
    op[3] = (struct vidmm_paging_op){ .type = VIDMM_PAGING_TRANSFER, .allocation = 7, .size = 2 * PG, .src = seg,
                                      .dst = none };
    b.n = 4;
    char why[256];
    memset(&r, 0, sizeof r);
    cr_assert_eq(replay(&b, &r, why, sizeof why), -1, "invalidate, then transfer out: %s", why);
    cr_assert_eq(r.updates, 2);
    /* The late order: the checker must fail it, at the transfer. */
    b.op[2] = op[3];
    b.op[3] = (struct vidmm_paging_op){ .type = VIDMM_PAGING_UPDATE_PAGE_TABLE, .allocation = 7, .size = 2 * PG,
                                        .offset_in_pages = 16, .dst = none, .swizzling_range_data = 5 };
    memset(&r, 0, sizeof r);
    cr_assert_eq(replay(&b, &r, why, sizeof why), 2, "the checker passed a late invalidation");
    /* An early validation (before the fill) fails it too. */
    b.op[0] = (struct vidmm_paging_op){ .type = VIDMM_PAGING_UPDATE_PAGE_TABLE, .allocation = 7, .size = 2 * PG,
                                        .offset_in_pages = 16, .dst = seg, .swizzling_range_data = 5 };
    b.op[1] = (struct vidmm_paging_op){ .type = VIDMM_PAGING_FILL, .allocation = 7, .size = 2 * PG, .dst = seg };
    b.n = 2;
    memset(&r, 0, sizeof r);
    cr_assert_eq(replay(&b, &r, why, sizeof why), 0, "the checker passed an early validation");
}

/* Page-in (FILL of a fresh allocation, TRANSFER of one with content) and page-out by Evict. */
Test(wddm2_pte_order, page_in_and_evict)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, K64, T_SET(T_VIS));
    uint64_t va;
    vidmm_va_space *sp = mapped(dev, h, K64, &va);
    for (int round = 0; round < 3; round++) {
        w2_resident(dev, h);
        uint8_t x = (uint8_t)(0x30 + round);
        t_write(dev, h, 0, &x, 1); /* written: the eviction transfers it out */
        w2_evict(dev, h, 0);
    }
    check_log(dev, "page-in and Evict");
    (void)sp;
    vidmm_device_destroy(dev);
}

/* Eviction under pressure: an allocation evicted only if necessary is paged out when another
 * needs its room; then paged back in elsewhere (a move through system memory). */
Test(wddm2_pte_order, eviction_under_pressure)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, 512 * T_KiB, T_SET(T_VIS)), b = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS));
    uint64_t va;
    vidmm_va_space *sp = mapped(dev, a, 512 * T_KiB, &va);
    w2_map(sp, va + 512 * T_KiB, b, 0, 256 * T_KiB);
    w2_resident(dev, a);
    uint8_t x = 1;
    t_write(dev, a, 0, &x, 1);
    w2_evict(dev, a, VIDMM_EVICT_ONLY_IF_NECESSARY);
    w2_resident(dev, b); /* needs a's room */
    w2_evict(dev, b, VIDMM_EVICT_ONLY_IF_NECESSARY);
    w2_resident(dev, a);
    check_log(dev, "eviction under pressure");
    vidmm_device_destroy(dev);
}

/* UpdateAllocationProperty: a new segment set without the current segment moves the allocation
 * (on the residency list, at once). */
Test(wddm2_pte_order, move_by_update_property)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle h = t_alloc_simple(dev, K64, T_SET(T_VIS) | T_SET(T_LOC));
    uint64_t va;
    (void)mapped(dev, h, K64, &va);
    w2_resident(dev, h);
    const uint32_t from = t_query(dev, h).segment_id;
    struct vidmm_update_alloc_property_args u;
    memset(&u, 0, sizeof u);
    u.size_of = sizeof u;
    u.allocation = h;
    u.supported_segment_set = from == T_VIS ? T_SET(T_LOC) : T_SET(T_VIS);
    u.property_mask = VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET;
    int rc = vidmm_wddm2_update_alloc_property(dev, &u);
    cr_assert(rc == 0 || rc == VIDMM_PENDING, "update_alloc_property: %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_neq(t_query(dev, h).segment_id, from, "nothing moved");
    check_log(dev, "a move by UpdateAllocationProperty");
    vidmm_device_destroy(dev);
}

/* Lock2 of a CPU-visible allocation in a segment the CPU cannot see moves it to an aperture. */
Test(wddm2_pte_order, lock2_move_to_aperture)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_alloc_desc d = t_adesc(K64, T_SET(T_LOC) | T_SET(T_APE));
    d.preferred_segment = T_LOC;
    vidmm_handle h = t_alloc(dev, &d);
    uint64_t va;
    (void)mapped(dev, h, K64, &va);
    w2_resident(dev, h);
    cr_assert_eq(t_query(dev, h).segment_id, T_LOC);
    void *p = NULL;
    int rc = vidmm_wddm2_lock2(dev, T_PROC, h, 0, &p);
    cr_assert_eq(rc, 0, "lock2: %d (%s)", rc, vidmm_strerror(rc));
    cr_assert_eq(t_query(dev, h).segment_id, T_APE, "Lock2 did not move it to the aperture");
    T_OK(vidmm_wddm2_unlock2(dev, h));
    check_log(dev, "Lock2's move to an aperture");
    vidmm_device_destroy(dev);
}

/* An offered allocation discarded when another needs its room. */
Test(wddm2_pte_order, discarded_offer)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, 768 * T_KiB, T_SET(T_VIS)), b = t_alloc_simple(dev, 512 * T_KiB, T_SET(T_VIS));
    uint64_t va;
    (void)mapped(dev, a, 768 * T_KiB, &va);
    w2_resident(dev, a);
    w2_evict(dev, a, VIDMM_EVICT_ONLY_IF_NECESSARY);
    struct vidmm_offer_args o;
    memset(&o, 0, sizeof o);
    o.size_of = sizeof o;
    o.allocations = &a;
    o.count = 1;
    o.priority = VIDMM_OFFER_PRIORITY_LOW;
    T_OK(vidmm_offer(dev, &o));
    w2_resident(dev, b); /* a's room: a is discarded */
    check_log(dev, "a discarded offer");
    vidmm_device_destroy(dev);
}

/* A standby purges the segments not preserved: a pinned allocation there is saved and restored
 * in place - its entries must not stay valid while its place holds nothing. */
Test(wddm2_pte_order, standby_saves_and_restores_pinned)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_alloc_desc d = t_adesc(K64, T_SET(T_VIS));
    d.flags |= VIDMM_ALLOC_OVERLAY;
    vidmm_handle h = t_alloc(dev, &d);
    uint64_t va;
    (void)mapped(dev, h, K64, &va);
    w2_resident(dev, h);
    uint8_t x = 9;
    t_write(dev, h, 0, &x, 1);
    struct vidmm_power_args p;
    memset(&p, 0, sizeof p);
    p.size_of = sizeof p;
    p.state = VIDMM_POWER_STANDBY;
    T_OK(vidmm_power_transition(dev, &p));
    cr_assert_eq(p.restored, 1, "the pinned allocation was not saved and restored");
    check_log(dev, "a standby with a pinned allocation");
    uint8_t y = 0;
    t_read(dev, h, 0, &y, 1);
    cr_assert_eq(y, 9);
    vidmm_device_destroy(dev);
}
