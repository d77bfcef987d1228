/* SPDX-License-Identifier: MIT */
/* lib/engine/rangeset.h - the free space of a segment (or of the backing-store arena) as an
 * address-ordered balanced tree of free blocks, each node also knowing the largest block below
 * it. Placement asks for the lowest (or highest) address in a window where 'len' bytes fit at
 * an aligned start; subtrees whose largest block is too small, or that lie outside the window,
 * are never entered, so a search visits O(log n) nodes when every block is a multiple of the
 * alignment (the common case: page-sized blocks, page alignment) and degrades gracefully - it
 * never scans the allocations - otherwise.
 *
 * The tree is a treap whose priorities are a hash of the block start: the shape depends only
 * on the set of blocks, never on randomness, so placement is deterministic (spec 15.28). */
#ifndef VIDMM_LIB_ENGINE_RANGESET_H
#define VIDMM_LIB_ENGINE_RANGESET_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct vmr_node;

struct vmr_set {
    struct vmr_node *root;
    struct vmr_node *spare;     /* free nodes */
    void *chunks;               /* node memory, freed by vmr_destroy */
    uint64_t size;              /* the managed range is [0, size) */
    uint64_t free_bytes;
    size_t blocks;              /* free blocks in the tree */
};

/* vmr_init() makes [0, size) one free block. Returns 0 or VIDMM_E_NO_MEMORY. */
int vmr_init(struct vmr_set *s, uint64_t size);
void vmr_destroy(struct vmr_set *s);

/* vmr_find() looks for 'len' bytes at an address that is a multiple of 'align' (a power of
 * two) inside the window [lo, hi): the lowest such address, or the highest when 'top_down'.
 * Returns true with '*out' set, false when nothing fits. Changes nothing. */
bool vmr_find(const struct vmr_set *s, uint64_t lo, uint64_t hi, uint64_t len, uint64_t align, bool top_down,
              uint64_t *out);

/* vmr_take() marks [start, start + len) used; it must lie inside one free block (as vmr_find
 * returned). vmr_give() marks it free again, merging with free neighbours. Both return 0 or
 * VIDMM_E_NO_MEMORY (no node could be had; nothing changed), VIDMM_E_INVALID_ARG (the range is
 * not wholly free / already free; nothing changed). */
int vmr_take(struct vmr_set *s, uint64_t start, uint64_t len);
int vmr_give(struct vmr_set *s, uint64_t start, uint64_t len);

/* vmr_largest() returns the size of the largest free block (0 when full). */
uint64_t vmr_largest(const struct vmr_set *s);

/* vmr_last_visits() returns how many tree nodes the calling thread's last vmr_find() visited
 * (the tests check that placement does not scan). */
size_t vmr_last_visits(void);

/* vmr_is_free() tells whether [start, start + len) lies wholly inside one free block. */
bool vmr_is_free(const struct vmr_set *s, uint64_t start, uint64_t len);

#endif /* VIDMM_LIB_ENGINE_RANGESET_H */
