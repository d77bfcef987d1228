/* SPDX-License-Identifier: MIT */
/* lib/engine/rangeset.c - free blocks in an address-ordered treap augmented with the largest
 * block of each subtree (see rangeset.h). */
#include <stdlib.h>
#include "common/internal.h"
#include "engine/rangeset.h"

struct vmr_node {
    uint64_t start, len;
    uint64_t max;               /* largest len in this subtree */
    uint32_t prio;
    struct vmr_node *l, *r;
};

/* Nodes come from chunks of this many, chained through their first node's 'r' pointer. */
#define VMR_CHUNK 256

static uint32_t prio_of(uint64_t start)
{
    /* A fixed mix (the 64-bit finaliser of MurmurHash3): a deterministic "random" priority. */
    uint64_t x = start ^ 0x9E3779B97F4A7C15ull;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}

static inline uint64_t max_of(const struct vmr_node *n)
{
    return n ? n->max : 0;
}

static inline void pull(struct vmr_node *n)
{
    uint64_t m = n->len, a = max_of(n->l), b = max_of(n->r);
    if (a > m)
        m = a;
    if (b > m)
        m = b;
    n->max = m;
}

/* Reserve 'want' spare nodes, so that the mutation that follows cannot fail half-way. */
static int reserve(struct vmr_set *s, int want)
{
    int have = 0;
    for (struct vmr_node *n = s->spare; n && have < want; n = n->r)
        have++;
    if (have >= want)
        return 0;
    struct vmr_node *c = calloc(VMR_CHUNK, sizeof *c);
    if (!c)
        return VIDMM_E_NO_MEMORY;
    c[0].r = s->chunks;
    s->chunks = c;
    for (int i = 1; i < VMR_CHUNK; i++) {
        c[i].r = s->spare;
        s->spare = &c[i];
    }
    return 0;
}

static struct vmr_node *node_new(struct vmr_set *s, uint64_t start, uint64_t len)
{
    struct vmr_node *n = s->spare; /* reserve() made sure there is one */
    s->spare = n->r;
    n->start = start;
    n->len = len;
    n->max = len;
    n->prio = prio_of(start);
    n->l = n->r = NULL;
    return n;
}

static void node_free(struct vmr_set *s, struct vmr_node *n)
{
    n->l = NULL;
    n->r = s->spare;
    s->spare = n;
}

/* split(): keys < key go to *a, keys >= key to *b. */
static void split(struct vmr_node *t, uint64_t key, struct vmr_node **a, struct vmr_node **b)
{
    if (!t) {
        *a = *b = NULL;
        return;
    }
    if (t->start < key) {
        split(t->r, key, &t->r, b);
        pull(t);
        *a = t;
    } else {
        split(t->l, key, a, &t->l);
        pull(t);
        *b = t;
    }
}

static struct vmr_node *merge(struct vmr_node *a, struct vmr_node *b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    if (a->prio >= b->prio) {
        a->r = merge(a->r, b);
        pull(a);
        return a;
    }
    b->l = merge(a, b->l);
    pull(b);
    return b;
}

static struct vmr_node *insert(struct vmr_node *t, struct vmr_node *n)
{
    if (!t)
        return n;
    if (n->prio > t->prio) {
        split(t, n->start, &n->l, &n->r);
        pull(n);
        return n;
    }
    if (n->start < t->start)
        t->l = insert(t->l, n);
    else
        t->r = insert(t->r, n);
    pull(t);
    return t;
}

/* erase() unlinks the node starting at 'key' (it exists) and returns it in '*out'. */
static struct vmr_node *erase(struct vmr_node *t, uint64_t key, struct vmr_node **out)
{
    if (t->start == key) {
        *out = t;
        return merge(t->l, t->r);
    }
    if (key < t->start)
        t->l = erase(t->l, key, out);
    else
        t->r = erase(t->r, key, out);
    pull(t);
    return t;
}

/* The free block with the greatest start <= addr, or NULL. */
static struct vmr_node *floor_node(struct vmr_node *t, uint64_t addr)
{
    struct vmr_node *best = NULL;
    while (t) {
        if (t->start <= addr) {
            best = t;
            t = t->r;
        } else {
            t = t->l;
        }
    }
    return best;
}

/* The free block with the smallest start > addr, or NULL. */
static struct vmr_node *above_node(struct vmr_node *t, uint64_t addr)
{
    struct vmr_node *best = NULL;
    while (t) {
        if (t->start > addr) {
            best = t;
            t = t->l;
        } else {
            t = t->r;
        }
    }
    return best;
}

int vmr_init(struct vmr_set *s, uint64_t size)
{
    s->root = NULL;
    s->spare = NULL;
    s->chunks = NULL;
    s->size = size;
    s->free_bytes = 0;
    s->blocks = 0;
    if (size == 0)
        return 0;
    if (reserve(s, 1) != 0)
        return VIDMM_E_NO_MEMORY;
    s->root = node_new(s, 0, size);
    s->free_bytes = size;
    s->blocks = 1;
    return 0;
}

void vmr_destroy(struct vmr_set *s)
{
    struct vmr_node *c = s->chunks;
    while (c) {
        struct vmr_node *next = c[0].r;
        free(c);
        c = next;
    }
    s->root = s->spare = NULL;
    s->chunks = NULL;
    s->free_bytes = 0;
    s->blocks = 0;
}

/* Where 'len' bytes at an 'align'-multiple fit in block n clipped to [lo, hi), lowest or
 * highest; UINT64_MAX when they do not. */
static uint64_t fit_in(const struct vmr_node *n, uint64_t lo, uint64_t hi, uint64_t len, uint64_t align,
                       bool top_down)
{
    uint64_t b = n->start > lo ? n->start : lo;
    uint64_t e = n->start + n->len < hi ? n->start + n->len : hi;
    if (e <= b || e - b < len)
        return UINT64_MAX;
    if (!top_down) {
        uint64_t a = (b + align - 1) & ~(align - 1);
        if (a < b || a > e || e - a < len)
            return UINT64_MAX;
        return a;
    }
    uint64_t a = (e - len) & ~(align - 1);
    return a >= b ? a : UINT64_MAX;
}

static _Thread_local size_t visits;

size_t vmr_last_visits(void)
{
    return visits;
}

static uint64_t find_low(const struct vmr_node *t, uint64_t lo, uint64_t hi, uint64_t len, uint64_t align)
{
    while (t && t->max >= len) {
        visits++;
        /* Blocks on the left end before t starts: none reaches past lo unless t starts past it. */
        if (t->start > lo && t->l && t->l->max >= len) {
            uint64_t r = find_low(t->l, lo, hi, len, align);
            if (r != UINT64_MAX)
                return r;
        }
        if (t->start >= hi)
            return UINT64_MAX; /* t and everything on its right start at or past hi */
        uint64_t r = fit_in(t, lo, hi, len, align, false);
        if (r != UINT64_MAX)
            return r;
        t = t->r;
    }
    return UINT64_MAX;
}

static uint64_t find_high(const struct vmr_node *t, uint64_t lo, uint64_t hi, uint64_t len, uint64_t align)
{
    while (t && t->max >= len) {
        visits++;
        /* Blocks on the right start after t ends: none starts below hi unless t ends below it. */
        if (t->start + t->len < hi && t->r && t->r->max >= len) {
            uint64_t r = find_high(t->r, lo, hi, len, align);
            if (r != UINT64_MAX)
                return r;
        }
        if (t->start + t->len <= lo)
            return UINT64_MAX; /* t and everything on its left end at or before lo */
        uint64_t r = fit_in(t, lo, hi, len, align, true);
        if (r != UINT64_MAX)
            return r;
        t = t->l;
    }
    return UINT64_MAX;
}

bool vmr_find(const struct vmr_set *s, uint64_t lo, uint64_t hi, uint64_t len, uint64_t align, bool top_down,
              uint64_t *out)
{
    if (len == 0 || align == 0 || (align & (align - 1)) || hi > s->size || lo >= hi || hi - lo < len)
        return false;
    visits = 0;
    uint64_t r = top_down ? find_high(s->root, lo, hi, len, align) : find_low(s->root, lo, hi, len, align);
    if (r == UINT64_MAX)
        return false;
    *out = r;
    return true;
}

bool vmr_is_free(const struct vmr_set *s, uint64_t start, uint64_t len)
{
    const struct vmr_node *n = floor_node(s->root, start);
    return n && len <= n->len && start - n->start <= n->len - len;
}

int vmr_take(struct vmr_set *s, uint64_t start, uint64_t len)
{
    if (len == 0 || !vmr_is_free(s, start, len))
        return VIDMM_E_INVALID_ARG;
    if (reserve(s, 2) != 0)
        return VIDMM_E_NO_MEMORY;
    struct vmr_node *n = floor_node(s->root, start), *old;
    uint64_t b = n->start, e = n->start + n->len;
    s->root = erase(s->root, b, &old);
    node_free(s, old);
    s->blocks--;
    if (start > b) {
        s->root = insert(s->root, node_new(s, b, start - b));
        s->blocks++;
    }
    if (start + len < e) {
        s->root = insert(s->root, node_new(s, start + len, e - (start + len)));
        s->blocks++;
    }
    s->free_bytes -= len;
    return 0;
}

int vmr_give(struct vmr_set *s, uint64_t start, uint64_t len)
{
    if (len == 0 || start > s->size || s->size - start < len)
        return VIDMM_E_INVALID_ARG;
    struct vmr_node *prev = floor_node(s->root, start);
    struct vmr_node *next = above_node(s->root, start);
    if (prev && prev->start + prev->len > start)
        return VIDMM_E_INVALID_ARG; /* overlaps a free block */
    if (next && next->start < start + len)
        return VIDMM_E_INVALID_ARG;
    if (reserve(s, 1) != 0)
        return VIDMM_E_NO_MEMORY;
    uint64_t b = start, e = start + len;
    struct vmr_node *old;
    if (prev && prev->start + prev->len == start) {
        b = prev->start;
        s->root = erase(s->root, prev->start, &old);
        node_free(s, old);
        s->blocks--;
    }
    if (next && next->start == e) {
        e = next->start + next->len;
        s->root = erase(s->root, next->start, &old);
        node_free(s, old);
        s->blocks--;
    }
    s->root = insert(s->root, node_new(s, b, e - b));
    s->blocks++;
    s->free_bytes += len;
    return 0;
}

uint64_t vmr_largest(const struct vmr_set *s)
{
    return max_of(s->root);
}
