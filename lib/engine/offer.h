/* SPDX-License-Identifier: MIT */
/* lib/engine/offer.h - offer and reclaim (offer.c) and power transitions (power.c) inside the
 * engine (include/vidmm/wddm2.h, "Offer and reclaim" and "Power transitions"): what an
 * allocation and a device carry for them, and the hooks the rest of the engine calls. Included
 * by engine.h; everything here is guarded by the device mutex. */
#ifndef VIDMM_LIB_ENGINE_OFFER_H
#define VIDMM_LIB_ENGINE_OFFER_H

#include <stdint.h>
#include <stdbool.h>

struct vm_alloc;
struct vm_segment;
typedef struct vidmm_device vidmm_device;

/* Per allocation (struct vm_alloc.offer). */
struct vm_offer_alloc {
    /* Whether and at which priority it is offered: struct vm_alloc's hot line (engine.h
     * offer_prio). */
    uint8_t lost;               /* what a reclaim will report: VIDMM_RECLAIM_OK (0),
                                   VIDMM_RECLAIM_DISCARDED, VIDMM_RECLAIM_NOT_COMMITTED */
    bool decommit;              /* offered with VIDMM_OFFER_ALLOW_DECOMMIT */
    uint64_t after;             /* the offer takes effect once this submission fence has
                                   passed (0: at once, OFFER_IMMEDIATELY) */
    struct vm_alloc *prev, *next; /* in dev->offer.head[prio - 1], in offer order */
    uint32_t tag;               /* scratch of the call walking a list */
};

/* Per device (vidmm_device.offer). */
struct vm_offer_dev {
    struct vm_alloc *head[3], *tail[3]; /* offered allocations per priority, LOW first */
    uint32_t count;             /* offered allocations */
    uint32_t tag;
};

/* ---------------------------------------------------------------------------------------------
 * Hooks (each call site says "WDDM2 hook" or "offer hook" in a comment).
 * ------------------------------------------------------------------------------------------- */
/* vm_offer_refuse_use() - lock.c check_lock(), submit.c check_refs(), gpuva.c vidmm_va_submit(),
 * residency.c vidmm_wddm2_make_resident(): an offered allocation must be reclaimed before it is
 * locked or used for rendering (spec 6.3 rule 9, 11, 15.20). Returns 0, or VIDMM_E_INVALID_ARG
 * (logged with 'call') when 'a' is offered. */
int vm_offer_refuse_use(const struct vm_alloc *a, const char *call);
/* vm_offer_victim() - place.c make_room(): the next offered allocation of segment 's' to
 * discard for 'placing' - LOW before NORMAL before HIGH, in offer order within a priority -
 * skipping offers not in effect yet, and busy ones when 'donot_wait'. NULL when none. */
struct vm_alloc *vm_offer_victim(vidmm_device *dev, const struct vm_segment *s, const struct vm_alloc *placing,
                                 bool donot_wait);
/* vm_offer_discard() - discards offered allocation 'a' from its segment (no transfer): a
 * DISCARD_CONTENT operation for a memory segment, an unmap for an aperture. */
void vm_offer_discard(vidmm_device *dev, struct vm_alloc *a);
/* vm_offer_discardable() - place.c evictable(): 'a' is offered and its offer in effect, so it
 * may go even while on the residency list (it is discarded, never transferred). */
bool vm_offer_discardable(const vidmm_device *dev, const struct vm_alloc *a);
/* vm_offer_forget() - alloc.c vm_instance_free(): 'a' leaves the offered lists. */
void vm_offer_forget(vidmm_device *dev, struct vm_alloc *a);
/* vm_offer_trim_sysmem() - swap.c vm_budget(): while system memory is over its budget, offered
 * content in system memory is dropped before anything is written to disk: with ALLOW_DECOMMIT
 * the backing store goes (reclaim says NOT_COMMITTED), else its pages only (DISCARDED). swap.c
 * write_candidate() never writes an offered allocation out. */
void vm_offer_trim_sysmem(vidmm_device *dev);
/* vm_offer_check_list() - submit.c check_refs(): a list entry's OfferPriority (device.h
 * VIDMM_REF_OFFER_PRIORITY) is a priority and 'a' may be offered. 0 or VIDMM_E_INVALID_ARG.
 * vm_offer_after_submit() - vidmm_submit(), once the submission's fence is issued and 'a''s
 * fences set: 'a' offered with that priority, in effect once that fence has passed. */
int vm_offer_check_list(const vidmm_device *dev, const struct vm_alloc *a, uint32_t prio, const char *call);
void vm_offer_after_submit(vidmm_device *dev, struct vm_alloc *a, uint32_t prio);
/* vm_offer_mark_lost() - power.c: 'a''s content is gone (offered, discarded by a purge). */
void vm_offer_mark_lost(vidmm_device *dev, struct vm_alloc *a, bool decommitted);

#endif /* VIDMM_LIB_ENGINE_OFFER_H */
