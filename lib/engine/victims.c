/* SPDX-License-Identifier: MIT */
/* lib/engine/victims.c - the allocations resident in a segment, in eviction order (spec 15.4):
 * lowest priority first, least recently used first within a priority. One doubly linked list
 * per priority value in use, kept in use order (a use moves an allocation to the tail, O(1)),
 * and the lists in an array sorted by priority (few distinct values in practice: the five
 * D3DDDI levels). Eviction walks from the front and stops as soon as there is room, so making
 * room costs the victims it takes, not the allocations it leaves. */
#include <stdlib.h>
#include <string.h>
#include "engine/engine.h"

/* Index of the bucket of 'prio', or of where it would go (and *found false). */
static uint32_t bucket_find(const struct vm_segment *s, uint32_t prio, bool *found)
{
    uint32_t lo = 0, hi = s->nbuckets;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->buckets[mid].prio < prio)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < s->nbuckets && s->buckets[lo].prio == prio;
    return lo;
}

static struct vm_bucket *bucket_get(struct vm_segment *s, uint32_t prio)
{
    bool found;
    uint32_t i = bucket_find(s, prio, &found);
    if (found)
        return &s->buckets[i];
    if (s->nbuckets == s->cap_buckets) {
        uint32_t cap = s->cap_buckets ? s->cap_buckets * 2 : 8;
        struct vm_bucket *b = realloc(s->buckets, sizeof *b * cap);
        if (!b)
            return NULL;
        s->buckets = b;
        s->cap_buckets = cap;
    }
    memmove(&s->buckets[i + 1], &s->buckets[i], sizeof *s->buckets * (s->nbuckets - i));
    s->buckets[i].prio = prio;
    s->buckets[i].head = s->buckets[i].tail = NULL;
    s->nbuckets++;
    return &s->buckets[i];
}

/* Put 'a' in bucket 'b' in use order (a->lru), searching from the tail: an allocation just
 * used goes straight to the end. */
static void bucket_insert(struct vm_bucket *b, struct vm_alloc *a)
{
    struct vm_alloc *after = b->tail;
    while (after && after->lru > a->lru)
        after = after->res_prev;
    a->res_prev = after;
    a->res_next = after ? after->res_next : b->head;
    if (a->res_next)
        a->res_next->res_prev = a;
    else
        b->tail = a;
    if (after)
        after->res_next = a;
    else
        b->head = a;
}

int vm_res_link(struct vm_segment *s, struct vm_alloc *a)
{
    struct vm_bucket *b = bucket_get(s, a->g->priority);
    if (!b)
        return VIDMM_E_NO_MEMORY;
    a->bucket_prio = a->g->priority;
    a->in_bucket = true;
    bucket_insert(b, a);
    if (a->pinned)
        s->pinned_bytes += a->space;
    return 0;
}

void vm_res_unlink(struct vm_segment *s, struct vm_alloc *a)
{
    if (!a->in_bucket)
        return;
    a->in_bucket = false;
    bool found;
    uint32_t i = bucket_find(s, a->bucket_prio, &found);
    if (!found)
        return;
    struct vm_bucket *b = &s->buckets[i];
    if (a->res_prev)
        a->res_prev->res_next = a->res_next;
    else
        b->head = a->res_next;
    if (a->res_next)
        a->res_next->res_prev = a->res_prev;
    else
        b->tail = a->res_prev;
    a->res_prev = a->res_next = NULL;
    if (a->pinned)
        s->pinned_bytes -= a->space;
    if (!b->head) {
        memmove(&s->buckets[i], &s->buckets[i + 1], sizeof *s->buckets * (s->nbuckets - i - 1));
        s->nbuckets--;
    }
}

struct vm_bucket *vm_res_bucket(struct vm_segment *s, uint32_t prio)
{
    bool found;
    uint32_t i = bucket_find(s, prio, &found);
    return found ? &s->buckets[i] : NULL;
}

void vm_res_touch(struct vm_segment *s, struct vm_alloc *a)
{
    if (!a->in_bucket)
        return;
    struct vm_bucket *b = vm_res_bucket(s, a->bucket_prio);
    if (b)
        vm_bucket_touch(b, a);
}

void vm_res_reprioritise(struct vm_segment *s, struct vm_alloc *a)
{
    if (!a->in_bucket || a->bucket_prio == a->g->priority)
        return;
    vm_res_unlink(s, a);
    vm_res_link(s, a); /* no memory for a new bucket: it is no victim until it moves */
}
