/* SPDX-License-Identifier: MIT */
/* tests/fuzz/fuzz_engine.c - model-based fuzz target of the video memory manager: the input
 * bytes choose a device and a sequence of operations (create / destroy, submit with GPU writes,
 * signal, lock / unlock with random flags and page lists, renaming Discard locks, evict,
 * make-resident, priorities, GPU access, trimming to the budget, device removal, with or without
 * a paging thread and a disk tier), each run against the engine and against an executable model
 * of the rules. After every step:
 *   - return codes are the model's, exactly, wherever a rule decides them (validation, relock,
 *     busy with and without DONOT_WAIT, the device's wait timeout, pinned, locked, removed);
 *     where placement decides (room, fragmentation) the code is one the contract allows and a
 *     success is checked for where it put the allocation;
 *   - a refused lock, unlock or eviction changed nothing (every allocation's query);
 *   - every allocation's content equals the model's byte for byte (vidmm_gpu_access reads), as
 *     does what every lock pointer shows;
 *   - placements lie inside their segment and never overlap; a pinned allocation never moves;
 *   - a DONOT_WAIT call never blocks: it must return within a second (no other thread signals
 *     anything here, so a wait would be for ever; calls without it are bounded by the device's
 *     wait_timeout_ns of 2 ms).
 * A mismatch prints the step and aborts (libFuzzer's crash; the replay test's failure).
 *
 * Input: byte 0 device shape (bit 0: a paging thread; bit 1: a disk tier with a 256 KiB budget;
 * bit 2: VIDMM_DEVICE_CACHE_COHERENT; bit 3: the segment table of issue 17's cases - a
 * PitchAlignment segment, a 64 KB-page aperture with a commit limit, an adapter aperture limit;
 * bit 4: the disk tier's I/O on its thread pool instead of in the calling thread),
 * then one operation per 4 bytes (opcode, then three
 * argument bytes); missing bytes read as 0. Rules cited are shared/spec/wddm-vidmm.md's. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "vidmm/vidmm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PG 4096u
#define MAX_GROUPS 8
#define MAX_INST 4
#define MAX_STEPS 96
#define TIMEOUT_NS 2000000ull /* the device's wait_timeout_ns: it bounds waits for the GPU only */

/* Segments: 1 CPU-visible memory, 2 memory the CPU cannot see, 3 an aperture. */
static const struct vidmm_segment_desc segs[3] = {
    { 0x10000000ull, 1u << 20, 1u << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL },
    { 0x20000000ull, 512u << 10, 512u << 10, 0, 0, NULL },
    { 0x40000000ull, 1u << 20, 1u << 20, VIDMM_SEGMENT_APERTURE, 0, NULL },
};
/* The second shape (input byte 0, bit 3), for the segment kinds of issue 17: segment 2 is a
 * PitchAlignment segment (allocations take their PitchAlignedSize there), segment 3 an aperture
 * of 64 KB pages (Alignment 64 KB) that may map half its size, and the adapter 768 KiB of
 * apertures at most - placements near the commit limits. */
static const struct vidmm_segment_desc segs_alt[3] = {
    { 0x10000000ull, 1u << 20, 1u << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL },
    { 0x20000000ull, 512u << 10, 512u << 10, VIDMM_SEGMENT_PITCH_ALIGNMENT, 0, NULL },
    { 0x40000000ull, 1u << 20, 512u << 10, VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_USE_64KB_PAGES, 0, NULL },
};
static const uint32_t sets[6] = { 0x1, 0x3, 0x5, 0x7, 0x6, 0x2 }; /* supported sets drawn from */

struct inst {
    vidmm_handle h;
    unsigned char *bytes;       /* what the content must be */
    bool known;                 /* false: a Discard made it undefined until fully written */
    uint64_t read_fence, write_fence;
    uint32_t locks, lock_flags;
    unsigned char *lock_ptr;
};

struct group {
    bool live;
    uint64_t size;
    uint32_t flags, set;
    struct inst in[MAX_INST];
    uint32_t ninst, cur;
    bool placed_once;           /* pinned: where it was first placed */
    uint32_t pin_seg;
    uint64_t pin_off;
};

struct fz {
    const uint8_t *p;
    size_t n;
    vidmm_device *dev;
    bool removed, cache_coherent, disk, alt;
    bool async_io;              /* the disk tier's I/O runs on a thread pool: write-outs may be
                                   in flight during any call */
    const struct vidmm_segment_desc *segs;
    uint64_t issued, done;
    bool stalled;               /* a call timed out with paging queued behind the GPU */
    /* GPU writes of submitted work, done just before their fence is signalled (as a GPU runs
     * it): if the engine moved or unmapped the memory meanwhile, they land in the wrong place
     * and the content check sees it. */
    struct pending {
        struct group *g;
        vidmm_handle h;
        unsigned char *at;
        uint64_t off, len, fence;
    } pend[64];
    int npend;
    struct group g[MAX_GROUPS];
    int step;
    char swap[64];
    unsigned rnd;
};

static struct fz *cur_fz;
static int trace = -1; /* VIDMM_FUZZ_TRACE=1: print every operation (to minimise a finding) */

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_engine: step %d: ", cur_fz ? cur_fz->step : -1);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define CHECK(c, ...) do { if (!(c)) fail(__VA_ARGS__); } while (0)

static uint8_t take(struct fz *f)
{
    if (f->n == 0)
        return 0;
    f->n--;
    return *f->p++;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Deterministic bytes for CPU and GPU writes. */
static void scribble(struct fz *f, unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        f->rnd = f->rnd * 1103515245u + 12345u;
        p[i] = (unsigned char)(f->rnd >> 16);
    }
}

static bool busy(const struct fz *f, const struct inst *in, bool writes_only)
{
    if (in->write_fence > f->done)
        return true;
    return !writes_only && in->read_fence > f->done;
}

static bool cached(const struct group *g)
{
    return (g->flags & VIDMM_ALLOC_CACHED) != 0;
}

static bool pinned(const struct group *g)
{
    return (g->flags & VIDMM_ALLOC_OVERLAY) != 0;
}

/* PermanentSysMem while locked: the CPU works on the system-memory copy and the segment copy
 * the GPU uses is refreshed only at unlock (spec 4.1) - the two differ meanwhile. The model
 * checks the CPU's view at the lock, and leaves the GPU's alone (no GPU access) until unlock. */
static bool split_view(const struct group *g, const struct inst *in)
{
    return (g->flags & VIDMM_ALLOC_PERMANENT_SYSMEM) && in->locks;
}

/* A DONOT_WAIT call returned: it must not have waited (nothing else signals in this process). */
static void no_block(uint64_t t0, const char *what)
{
    uint64_t ms = (now_ns() - t0) / 1000000u;
    CHECK(ms < 1000, "%s with DONOT_WAIT blocked for %llu ms", what, (unsigned long long)ms);
}

/* ---------------------------------------------------------------------------------------------
 * The invariants, after every step.
 * ------------------------------------------------------------------------------------------- */
struct placed {
    uint32_t seg;
    uint64_t off, len;
    vidmm_handle h;
};

static void check_all(struct fz *f)
{
    if (f->removed)
        return;
    struct placed pl[MAX_GROUPS * MAX_INST];
    int np = 0;
    for (int i = 0; i < MAX_GROUPS; i++) {
        struct group *g = &f->g[i];
        if (!g->live)
            continue;
        for (uint32_t k = 0; k < g->ninst; k++) {
            struct inst *in = &g->in[k];
            struct vidmm_alloc_info q = { .size_of = sizeof q };
            int rc = vidmm_alloc_query(f->dev, in->h, &q);
            CHECK(rc == 0, "query of 0x%x: %s", in->h, vidmm_strerror(rc));
            CHECK(q.lock_count == in->locks, "0x%x: lock count %u, model %u", in->h, q.lock_count, in->locks);
            if (q.where == VIDMM_WHERE_SEGMENT || q.where == VIDMM_WHERE_APERTURE) {
                CHECK(q.segment_id >= 1 && q.segment_id <= 3, "0x%x in segment %u", in->h, q.segment_id);
                CHECK((g->set >> (q.segment_id - 1)) & 1, "0x%x in segment %u outside its set 0x%x", in->h,
                      q.segment_id, g->set);
                const struct vidmm_segment_desc *s = &f->segs[q.segment_id - 1];
                CHECK(q.offset + q.size <= s->size && q.offset % PG == 0, "0x%x at 0x%llx+0x%llx outside segment %u",
                      in->h, (unsigned long long)q.offset, (unsigned long long)q.size, q.segment_id);
                pl[np++] = (struct placed){ q.segment_id, q.offset, q.size, in->h };
                if (pinned(g) && k == 0) {
                    if (!g->placed_once) {
                        g->placed_once = true;
                        g->pin_seg = q.segment_id;
                        g->pin_off = q.offset;
                    }
                    CHECK(q.segment_id == g->pin_seg && q.offset == g->pin_off,
                          "pinned 0x%x moved from %u:0x%llx to %u:0x%llx", in->h, g->pin_seg,
                          (unsigned long long)g->pin_off, q.segment_id, (unsigned long long)q.offset);
                }
            } else if (pinned(g) && k == 0 && g->placed_once) {
                fail("pinned 0x%x left its segment (where %u)", in->h, q.where);
            }
            if (!in->known || split_view(g, in))
                continue;
            /* One buffer for every read (the largest allocation is 48 pages), compared with
             * memcmp first: the byte loop under ASan made this check most of an input's time. */
            static unsigned char buf[48 * PG];
            rc = vidmm_gpu_access(f->dev, in->h, 0, buf, g->size, false);
            if (rc == VIDMM_E_TIMEOUT && f->stalled)
                continue; /* its paging waits behind the GPU: the model will see it later */
            CHECK(rc == 0, "gpu_access read of 0x%x: %s", in->h, vidmm_strerror(rc));
            if (memcmp(buf, in->bytes, g->size) != 0)
                for (uint64_t b = 0; b < g->size; b++)
                    CHECK(buf[b] == in->bytes[b], "0x%x: byte %llu is 0x%02x, model 0x%02x", in->h,
                          (unsigned long long)b, buf[b], in->bytes[b]);
        }
    }
    for (int a = 0; a < np; a++)
        for (int b = a + 1; b < np; b++)
            CHECK(pl[a].seg != pl[b].seg || pl[a].off + pl[a].len <= pl[b].off || pl[b].off + pl[b].len <= pl[a].off,
                  "0x%x and 0x%x overlap in segment %u", pl[a].h, pl[b].h, pl[a].seg);
}

/* Snapshot of every allocation's query, for "a refused call changed nothing". */
struct snap {
    int n;
    struct vidmm_alloc_info q[MAX_GROUPS * MAX_INST];
};

static void snap(struct fz *f, struct snap *s)
{
    s->n = 0;
    for (int i = 0; i < MAX_GROUPS; i++)
        for (uint32_t k = 0; f->g[i].live && k < f->g[i].ninst; k++) {
            struct vidmm_alloc_info *q = &s->q[s->n++];
            memset(q, 0, sizeof *q);
            q->size_of = sizeof *q;
            vidmm_alloc_query(f->dev, f->g[i].in[k].h, q);
        }
}

static void unchanged(struct fz *f, const struct snap *a, const char *what)
{
    struct snap b;
    snap(f, &b);
    CHECK(a->n == b.n, "%s changed the allocations", what);
    for (int i = 0; i < a->n; i++) {
        const struct vidmm_alloc_info *x = &a->q[i], *y = &b.q[i];
        /* With the thread-pool I/O a write-out started earlier may complete meanwhile. */
        const bool written_out = f->async_io && x->where == VIDMM_WHERE_SYSMEM && y->where == VIDMM_WHERE_DISK;
        CHECK((x->where == y->where || written_out) && x->segment_id == y->segment_id && x->offset == y->offset &&
                  x->lock_count == y->lock_count && x->current == y->current && x->dirty == y->dirty,
              "%s was refused but changed allocation %d (where %u->%u seg %u->%u off 0x%llx->0x%llx locks %u->%u)",
              what, i, x->where, y->where, x->segment_id, y->segment_id, (unsigned long long)x->offset,
              (unsigned long long)y->offset, x->lock_count, y->lock_count);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Operations.
 * ------------------------------------------------------------------------------------------- */
static struct group *pick_group(struct fz *f, uint8_t b)
{
    for (int k = 0; k < MAX_GROUPS; k++) {
        struct group *g = &f->g[(b + k) % MAX_GROUPS];
        if (g->live)
            return g;
    }
    return NULL;
}

static void op_create(struct fz *f, uint8_t a, uint8_t b, uint8_t c)
{
    struct group *g = NULL;
    for (int k = 0; k < MAX_GROUPS && !g; k++)
        if (!f->g[k].live)
            g = &f->g[k];
    if (!g)
        return;
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    d.size = (uint64_t)(a % 48 + 1) * PG;
    d.priority = VIDMM_PRIORITY_LOW + (uint32_t)(c % 4) * 0x20000000u;
    d.flags = VIDMM_ALLOC_CPU_VISIBLE;
    d.fill_pattern = 0x01010101u * (uint32_t)(c | 1);
    d.max_renaming = MAX_INST; /* the model holds that many instances */
    uint32_t set = sets[b % 6];
    switch ((b >> 3) % 8) {
    case 1: d.flags |= VIDMM_ALLOC_CACHED; break;
    case 2: d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM; break;
    case 3: /* pinned: one segment, read and write alike */
        d.flags |= VIDMM_ALLOC_OVERLAY;
        set = 0x1;
        d.size = (uint64_t)(a % 8 + 1) * PG;
        break;
    case 4: /* the aperture alone: aperture placements under pressure (issue 17, case 1) */
        set = 0x4;
        break;
    default: break;
    }
    d.supported_read_set = d.supported_write_set = set;
    if (f->alt && (set & 0x4))
        d.alignment = 65536; /* spec 15.2: a multiple of 64 KB with a Use64KBPages segment */
    if (f->alt && (set & 0x2))
        d.pitch_aligned_size = d.size + (uint64_t)(a % 4) * PG + (a & 1) * 100; /* spec 15.2 */
    d.eviction_set = (set & 0x4) && (c & 0x10) ? 0x4 : 0;
    /* Invalid descriptors now and then, each breaking one rule of spec 15.2: refused, nothing
     * created. */
    int bad = (b >> 6) == 3 ? (int)(c % 4) + 1 : 0;
    if (bad == 1) d.alignment = 3 * PG;                 /* not a power of two */
    if (bad == 2) d.priority = 0;                        /* priority 0 */
    if (bad == 3) d.flags |= 0x80000000u;                /* reserved bit */
    if (bad == 4) d.preferred_segment = 3 | (1u << 30);  /* reserved bits of the preference */
    vidmm_handle h = 0xDEADBEEFu;
    int rc = vidmm_alloc_create(f->dev, &d, &h);
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "create after removal: %s", vidmm_strerror(rc));
        return;
    }
    if (bad) {
        CHECK(rc == VIDMM_E_INVALID_ARG && h == 0xDEADBEEFu, "create with rule %d broken: %s", bad, vidmm_strerror(rc));
        return;
    }
    CHECK(rc == 0, "create of %llu bytes: %s", (unsigned long long)d.size, vidmm_strerror(rc));
    memset(g, 0, sizeof *g);
    g->live = true;
    g->size = d.size;
    g->flags = d.flags;
    g->set = set;
    g->ninst = 1;
    g->in[0].h = h;
    g->in[0].known = true;
    g->in[0].bytes = malloc(d.size);
    for (uint64_t i = 0; i < d.size; i++)
        g->in[0].bytes[i] = (unsigned char)(d.fill_pattern >> (8 * (i & 3)));
}

static void free_group(struct group *g)
{
    for (uint32_t k = 0; k < g->ninst; k++)
        free(g->in[k].bytes);
    memset(g, 0, sizeof *g);
}

static void op_destroy(struct fz *f, uint8_t a)
{
    struct group *g = pick_group(f, a);
    if (!g)
        return;
    int rc = vidmm_alloc_destroy(f->dev, g->in[a % g->ninst].h);
    if (rc == VIDMM_E_TIMEOUT && f->stalled && !f->removed)
        return; /* its paging waits behind the GPU: not destroyed */
    CHECK(rc == (f->removed ? VIDMM_E_DEVICE_REMOVED : 0), "destroy: %s", vidmm_strerror(rc));
    free_group(g);
}

static void op_submit(struct fz *f, uint8_t a, uint8_t b, uint8_t c)
{
    struct vidmm_alloc_ref refs[3];
    struct inst *ins[3];
    struct group *gs[3];
    uint32_t n = 0;
    for (uint32_t k = 0; k < (a % 3) + 1u; k++) {
        struct group *g = pick_group(f, (uint8_t)(b + k * 3));
        if (!g)
            break;
        bool dup = false;
        for (uint32_t j = 0; j < n; j++)
            dup |= gs[j] == g;
        if (dup)
            continue;
        if (split_view(g, &g->in[g->cur]))
            continue;
        gs[n] = g;
        ins[n] = &g->in[g->cur];
        refs[n].allocation = ins[n]->h;
        refs[n].flags = (c >> k) & 1 ? VIDMM_REF_WRITE : 0;
        n++;
    }
    if (n == 0)
        return;
    const bool dnw = (a & 0x40) != 0;
    struct vidmm_residency where[3];
    uint64_t fence = 0;
    const uint64_t t0 = now_ns();
    int rc = vidmm_submit(f->dev, refs, n, dnw ? VIDMM_SUBMIT_DONOT_WAIT : 0, where, &fence);
    if (dnw)
        no_block(t0, "vidmm_submit");
    if (trace) {
        fprintf(stderr, "  submit of %u: %s, fence %llu:", n, vidmm_strerror(rc), (unsigned long long)fence);
        for (uint32_t k = 0; k < n && rc == 0; k++)
            fprintf(stderr, " 0x%x%s at %u:0x%llx", refs[k].allocation, refs[k].flags & VIDMM_REF_WRITE ? " (w)" : "",
                    where[k].segment_id, (unsigned long long)where[k].offset);
        fputc('\n', stderr);
    }
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "submit after removal: %s", vidmm_strerror(rc));
        return;
    }
    bool locked = false;
    for (uint32_t k = 0; k < n; k++)
        locked |= ins[k]->locks != 0;
    if (rc != 0) {
        /* Placement decides these; which ones the contract allows depends on the flags. */
        CHECK(rc == VIDMM_E_NO_VIDEO_MEMORY || rc == VIDMM_E_CANT_EVICT_PINNED || (dnw && rc == VIDMM_E_BUSY) ||
                  (!dnw && rc == VIDMM_E_TIMEOUT) || (locked && rc == VIDMM_E_CANT_RENDER_LOCKED),
              "submit (DONOT_WAIT %d, locked %d): %s", dnw, locked, vidmm_strerror(rc));
        CHECK(fence == 0, "a failed submission issued fence %llu", (unsigned long long)fence);
        /* Victims it evicted stay evicted (device.h); one the GPU still used leaves paging
         * queued that waits for the GPU. */
        if (rc == VIDMM_E_TIMEOUT || f->issued > f->done)
            f->stalled = true;
        return;
    }
    CHECK(fence == f->issued + 1, "fence %llu after %llu", (unsigned long long)fence, (unsigned long long)f->issued);
    f->issued = fence;
    for (uint32_t k = 0; k < n; k++) {
        CHECK(where[k].segment_id >= 1 && where[k].segment_id <= 3 && ((gs[k]->set >> (where[k].segment_id - 1)) & 1),
              "0x%x submitted in segment %u", refs[k].allocation, where[k].segment_id);
        ins[k]->read_fence = fence;
        if (refs[k].flags & VIDMM_REF_WRITE) {
            ins[k]->write_fence = fence;
            /* The GPU writes part of it where the submission said it lives: later, before the
             * fence is signalled (PermanentSysMem at once: its CPU copy's push-back at unlock
             * would race a late write by design). */
            uint64_t off = (uint64_t)(c % 16) * 64 % gs[k]->size, len = gs[k]->size - off < 512 ? gs[k]->size - off : 512;
            if (!(gs[k]->flags & VIDMM_ALLOC_PERMANENT_SYSMEM) && f->npend < 64) {
                f->pend[f->npend++] = (struct pending){ gs[k], ins[k]->h, where[k].cpu, off, len, fence };
            } else {
                scribble(f, ins[k]->bytes + off, (size_t)len);
                memcpy((unsigned char *)where[k].cpu + off, ins[k]->bytes + off, (size_t)len);
            }
        }
    }
}

/* The GPU's deferred writes of every fence up to 'to' (still live instances only: the GPU does
 * not touch a destroyed allocation). */
static void gpu_run(struct fz *f, uint64_t to)
{
    int keep = 0;
    for (int i = 0; i < f->npend; i++) {
        struct pending *p = &f->pend[i];
        if (p->fence > to) {
            f->pend[keep++] = *p;
            continue;
        }
        if (!p->g->live || f->removed)
            continue;
        struct inst *in = NULL;
        for (uint32_t k = 0; k < p->g->ninst; k++)
            if (p->g->in[k].h == p->h)
                in = &p->g->in[k];
        if (!in)
            continue;
        scribble(f, in->bytes + p->off, (size_t)p->len);
        memcpy(p->at + p->off, in->bytes + p->off, (size_t)p->len);
    }
    f->npend = keep;
}

static void op_signal(struct fz *f, uint8_t a)
{
    if (f->issued == f->done)
        return;
    uint64_t to = f->done + 1 + a % (f->issued - f->done);
    gpu_run(f, to);
    int rc = vidmm_fence_signal(f->dev, to);
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "signal after removal: %s", vidmm_strerror(rc));
        return;
    }
    CHECK(rc == 0, "signal %llu: %s", (unsigned long long)to, vidmm_strerror(rc));
    f->done = to;
    if (f->done == f->issued)
        f->stalled = false; /* nothing queued can wait for the GPU any more */
}

/* The lock flags drawn from (reserved bits and the alternate VA aside, both always refused here). */
static const uint32_t lock_bits[8] = { VIDMM_LOCK_READ_ONLY, VIDMM_LOCK_WRITE_ONLY, VIDMM_LOCK_DONOT_WAIT,
                                       VIDMM_LOCK_IGNORE_SYNC, VIDMM_LOCK_DISCARD, VIDMM_LOCK_NO_EXISTING_REFERENCE,
                                       VIDMM_LOCK_IGNORE_READ_SYNC, VIDMM_LOCK_ENTIRE };

static void op_lock(struct fz *f, uint8_t a, uint8_t b, uint8_t c)
{
    struct group *g = pick_group(f, a);
    if (!g)
        return;
    struct inst *in = &g->in[(a >> 4) % g->ninst];
    uint32_t flags = 0;
    for (int k = 0; k < 8; k++)
        if ((b >> k) & 1)
            flags |= lock_bits[k];
    if ((c & 0xE0) == 0xE0)
        flags |= (c & 1) ? VIDMM_LOCK_USE_ALTERNATE_VA | VIDMM_LOCK_ACQUIRE_APERTURE : 0x00100000u;
    uint32_t pages[2];
    uint32_t npages = 0;
    const uint32_t total = (uint32_t)(g->size / PG);
    if (c & 0x2) {
        pages[npages++] = (c >> 2) % (total + 1); /* one past the end now and then */
        if (c & 0x10)
            pages[npages++] = (c >> 3) % total;
    }
    struct vidmm_lock_args la = { in->h, 0, npages, npages ? pages : NULL, flags, 0, NULL };
    /* The model: validation in the spec's order (6.3; Discard neutralises first). */
    const bool discard = (flags & VIDMM_LOCK_DISCARD) && !pinned(g);
    const uint32_t ef = discard ? flags & ~(VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_DONOT_WAIT) : flags;
    int want = 0;
    if (flags & 0xFFFFF800u)
        want = VIDMM_E_INVALID_ARG;
    else if ((ef & VIDMM_LOCK_READ_ONLY) && (ef & VIDMM_LOCK_WRITE_ONLY))
        want = VIDMM_E_INVALID_ARG;
    else if ((ef & VIDMM_LOCK_ENTIRE) && npages)
        want = VIDMM_E_INVALID_ARG;
    else if (npages && (pages[0] >= total || pages[npages - 1] >= total))
        want = VIDMM_E_INVALID_ARG;
    else if ((ef & (VIDMM_LOCK_IGNORE_SYNC | VIDMM_LOCK_IGNORE_READ_SYNC)) &&
             ((cached(g) && !f->cache_coherent) || !(g->set & 0x4)))
        want = VIDMM_E_INVALID_ARG; /* rule 4: no coherency, or no aperture in its set */
    else if (ef & VIDMM_LOCK_USE_ALTERNATE_VA)
        want = VIDMM_E_INVALID_ARG; /* rule 7: not a primary */
    int rc;
    struct snap s;
    snap(f, &s);
    const bool dnw = (ef & VIDMM_LOCK_DONOT_WAIT) != 0;
    struct vidmm_alloc_info qi = { .size_of = sizeof qi };
    const bool on_disk = !f->removed && vidmm_alloc_query(f->dev, in->h, &qi) == 0 && qi.where == VIDMM_WHERE_DISK;
    const uint64_t t0 = now_ns();
    rc = vidmm_lock(f->dev, &la);
    if (dnw)
        no_block(t0, "vidmm_lock");
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "lock after removal: %s", vidmm_strerror(rc));
        return;
    }
    if (want) {
        CHECK(rc == want, "lock 0x%x flags 0x%x pages %u: %s, model %s", in->h, flags, npages, vidmm_strerror(rc),
              vidmm_strerror(want));
        unchanged(f, &s, "a refused lock");
        return;
    }
    if (in->locks) { /* a plain relock nests: same pointer (15.12) */
        if (rc == VIDMM_E_BUSY && dnw && f->async_io && (in->lock_flags & VIDMM_LOCK_READ_ONLY) &&
            !(flags & VIDMM_LOCK_READ_ONLY))
            return; /* a writable relock waits for a write-out in flight: DONOT_WAIT says busy */
        CHECK(rc == 0, "relock of 0x%x flags 0x%x: %s", in->h, flags, vidmm_strerror(rc));
        CHECK((unsigned char *)la.data == in->lock_ptr + (npages ? (size_t)pages[0] * PG : 0),
              "a relock returned another pointer");
        in->locks++;
        if (!(flags & VIDMM_LOCK_READ_ONLY))
            in->lock_flags &= ~VIDMM_LOCK_READ_ONLY; /* the content may change from here on */
    } else if (discard) {
        /* Renaming (15.18): never an instance the GPU still uses or a lock holds; when it has
         * to make a new one and cannot, BUSY. Paging queued behind the GPU may hold it up. */
        if (rc != 0) {
            CHECK(rc == VIDMM_E_BUSY || (f->stalled && rc == VIDMM_E_TIMEOUT), "Discard lock: %s", vidmm_strerror(rc));
            return;
        }
        struct inst *got = NULL;
        for (uint32_t k = 0; k < g->ninst; k++)
            if (g->in[k].h == la.allocation)
                got = &g->in[k];
        if (!got) {
            CHECK(g->ninst < MAX_INST, "more instances than the model holds");
            got = &g->in[g->ninst++];
            memset(got, 0, sizeof *got);
            got->h = la.allocation;
            got->bytes = malloc(g->size);
        }
        CHECK(!busy(f, got, false), "Discard returned 0x%x, which the GPU still uses", got->h);
        CHECK(got->locks == 0, "Discard returned 0x%x, which another lock holds", got->h);
        g->cur = (uint32_t)(got - g->in);
        got->known = false; /* a Discard's content is undefined */
        in = got;
        in->locks = 1;
        in->lock_flags = flags;
        in->lock_ptr = (unsigned char *)la.data - (npages ? (size_t)pages[0] * PG : 0);
    } else {
        /* Busy (15.13): IgnoreSync only with DonotWait; IgnoreReadSync waits for writes only. */
        const bool skip = (ef & VIDMM_LOCK_IGNORE_SYNC) && dnw;
        const bool b_ = !skip && busy(f, in, (ef & VIDMM_LOCK_IGNORE_READ_SYNC) != 0);
        if (b_) {
            CHECK(rc == (dnw ? VIDMM_E_BUSY : VIDMM_E_TIMEOUT), "lock of busy 0x%x flags 0x%x: %s", in->h, flags,
                  vidmm_strerror(rc));
            if (!on_disk)
                unchanged(f, &s, "a lock of a busy allocation");
            return;
        }
        if (rc == VIDMM_E_BUSY && dnw && (on_disk || f->async_io))
            return; /* its read-back from the disk tier was started, or (writable) its write-out is
                       in flight: DONOT_WAIT says busy (device.h) */
        if (rc != 0) {
            /* Not busy by the rule, yet it must move (out of segment 2, which the CPU cannot
             * see) while the GPU still uses it, or paging queued earlier waits for the GPU. */
            CHECK(rc == (dnw ? VIDMM_E_BUSY : VIDMM_E_TIMEOUT) && (busy(f, in, false) || f->stalled),
                  "lock of 0x%x flags 0x%x: %s", in->h, flags, vidmm_strerror(rc));
            if (rc == VIDMM_E_TIMEOUT)
                f->stalled = true;
            return;
        }
        in->locks = 1;
        in->lock_flags = flags;
        in->lock_ptr = (unsigned char *)la.data - (npages ? (size_t)pages[0] * PG : 0);
    }
    /* What the pointer shows is the content (a whole-allocation view from lock_ptr). */
    if (in->known)
        CHECK(memcmp(in->lock_ptr, in->bytes, g->size) == 0, "the lock of 0x%x shows other bytes", in->h);
    /* A PermanentSysMem lock with a page list marks only those pages written (spec 6.4: "VidMm
     * marks only those pages dirty"): the CPU keeps to them, as the contract asks. */
    const bool listed_only = (g->flags & VIDMM_ALLOC_PERMANENT_SYSMEM) && npages;
    if (!(flags & VIDMM_LOCK_READ_ONLY) && listed_only) {
        uint64_t off = (uint64_t)pages[c & 1 ? npages - 1 : 0] * PG + (c % 32) * 16;
        scribble(f, in->bytes + off, 300);
        memcpy(in->lock_ptr + off, in->bytes + off, 300);
    } else if (!(flags & VIDMM_LOCK_READ_ONLY)) {
        if (!in->known) { /* write it all: known again */
            scribble(f, in->bytes, g->size);
            memcpy(in->lock_ptr, in->bytes, g->size);
            in->known = true;
        } else {
            uint64_t off = (uint64_t)(npages ? pages[0] : 0) * PG + (c % 32) * 16;
            if (off < g->size) {
                uint64_t len = g->size - off < 300 ? g->size - off : 300;
                scribble(f, in->bytes + off, (size_t)len);
                memcpy(in->lock_ptr + off, in->bytes + off, (size_t)len);
            }
        }
    }
}

static void op_unlock(struct fz *f, uint8_t a)
{
    struct group *g = pick_group(f, a);
    if (!g)
        return;
    struct inst *in = &g->in[(a >> 4) % g->ninst];
    struct snap s;
    snap(f, &s);
    int rc = vidmm_unlock(f->dev, 1, &in->h);
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "unlock after removal: %s", vidmm_strerror(rc));
        return;
    }
    if (in->locks == 0) {
        CHECK(rc == VIDMM_E_INVALID_ARG, "unlock of unlocked 0x%x: %s", in->h, vidmm_strerror(rc));
        unchanged(f, &s, "a refused unlock");
        return;
    }
    CHECK(rc == 0, "unlock of 0x%x: %s", in->h, vidmm_strerror(rc));
    if (--in->locks == 0) {
        in->lock_ptr = NULL;
        /* PermanentSysMem: the written pages go back to the segment copy by a transfer that
         * waits while the GPU still uses it (the unlock does not wait): paging stalls. */
        if ((g->flags & VIDMM_ALLOC_PERMANENT_SYSMEM) && busy(f, in, false))
            f->stalled = true;
    }
}

static void op_evict(struct fz *f, uint8_t a)
{
    struct group *g = pick_group(f, a);
    if (!g)
        return;
    struct inst *in = &g->in[g->cur];
    struct snap s;
    snap(f, &s);
    int rc = vidmm_evict(f->dev, &in->h, 1);
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "evict after removal: %s", vidmm_strerror(rc));
        return;
    }
    int want = pinned(g) ? VIDMM_E_CANT_EVICT_PINNED : (in->locks || busy(f, in, false)) ? VIDMM_E_BUSY : 0;
    if (want == 0 && rc == VIDMM_E_TIMEOUT && f->stalled)
        return; /* queued behind paging that waits for the GPU */
    CHECK(rc == want, "evict of 0x%x: %s, model %s", in->h, vidmm_strerror(rc), vidmm_strerror(want));
    if (want)
        unchanged(f, &s, "a refused eviction");
}

static void op_resident(struct fz *f, uint8_t a)
{
    struct group *g = pick_group(f, a);
    if (!g)
        return;
    struct inst *in = &g->in[g->cur];
    struct vidmm_residency w;
    int rc = vidmm_make_resident(f->dev, &in->h, 1, &w);
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "make_resident after removal: %s", vidmm_strerror(rc));
        return;
    }
    CHECK(rc == 0 || rc == VIDMM_E_NO_VIDEO_MEMORY || rc == VIDMM_E_CANT_EVICT_PINNED || rc == VIDMM_E_TIMEOUT ||
              (in->locks && rc == VIDMM_E_CANT_RENDER_LOCKED),
          "make_resident of 0x%x: %s", in->h, vidmm_strerror(rc));
    if (rc == VIDMM_E_TIMEOUT || (rc != 0 && f->issued > f->done))
        f->stalled = true;
    if (rc == 0)
        CHECK(w.segment_id >= 1 && w.segment_id <= 3 && ((g->set >> (w.segment_id - 1)) & 1),
              "made resident in segment %u", w.segment_id);
}

static void op_gpu_write(struct fz *f, uint8_t a, uint8_t b)
{
    struct group *g = pick_group(f, a);
    if (!g)
        return;
    struct inst *in = &g->in[(a >> 4) % g->ninst];
    if (!in->known || split_view(g, in))
        return;
    uint64_t off = (uint64_t)b * 61 % g->size, len = g->size - off < 200 ? g->size - off : 200;
    unsigned char buf[200];
    scribble(f, buf, (size_t)len);
    int rc = vidmm_gpu_access(f->dev, in->h, off, buf, (size_t)len, true);
    if (f->removed) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "gpu_access after removal: %s", vidmm_strerror(rc));
        return;
    }
    if (rc == VIDMM_E_TIMEOUT && f->stalled)
        return;
    CHECK(rc == 0, "gpu_access write of 0x%x: %s", in->h, vidmm_strerror(rc));
    memcpy(in->bytes + off, buf, (size_t)len);
    /* Outside the range: refused, nothing written. */
    rc = vidmm_gpu_access(f->dev, in->h, g->size - 1, buf, 2, true);
    CHECK(rc == VIDMM_E_INVALID_ARG, "gpu_access past the end: %s", vidmm_strerror(rc));
}

/* A READ_ONLY lock and a writable relock inside it in one step, right after the engine was
 * told to trim to its budget without waiting: with the thread-pool I/O shape a write-out of the
 * allocation may still be in flight at both locks (issue 17, case 2: the writable relock must
 * wait for it and mark the content changed, or the stale disk copy becomes the content). */
static void op_nested_lock(struct fz *f, uint8_t a, uint8_t b)
{
    struct group *g = pick_group(f, a);
    if (!g || g->in[(a >> 4) % g->ninst].locks)
        return;
    if (f->disk && !f->removed) {
        /* Out of its segment (refusals are the model's business elsewhere), then write-outs. */
        struct inst *in = &g->in[(a >> 4) % g->ninst];
        if (!pinned(g) && !busy(f, in, false))
            (void)vidmm_evict(f->dev, &in->h, 1);
        CHECK(vidmm_trim_to_budget(f->dev, false) == 0, "trim_to_budget");
    }
    op_lock(f, a, 0x01 /* READ_ONLY */, 0);
    op_lock(f, a, (uint8_t)(b & 0x04) /* DONOT_WAIT now and then */, (uint8_t)(b & 0x1C));
}

static void op_misc(struct fz *f, uint8_t a, uint8_t b)
{
    struct group *g = pick_group(f, a);
    switch (b % 8) {
    case 0:
    case 1:
    case 2:
        if (g) {
            uint32_t prio = VIDMM_PRIORITY_MINIMUM + (uint32_t)(b % 5) * 0x28000000u;
            int rc = vidmm_set_priority(f->dev, &g->in[0].h, &prio, 1);
            CHECK(rc == (f->removed ? VIDMM_E_DEVICE_REMOVED : 0), "set_priority: %s", vidmm_strerror(rc));
        }
        break;
    case 3:
    case 4: {
        int rc = vidmm_trim_to_budget(f->dev, (b & 8) != 0);
        CHECK(rc == (f->removed ? VIDMM_E_DEVICE_REMOVED : 0), "trim_to_budget: %s", vidmm_strerror(rc));
        break;
    }
    case 5: {
        /* Argument checks: refused, nothing changed. */
        struct snap s;
        snap(f, &s);
        int rc = vidmm_unlock(f->dev, 0, NULL);
        CHECK(rc == VIDMM_E_INVALID_ARG, "unlock(0, NULL): %s", vidmm_strerror(rc));
        struct vidmm_alloc_ref r = { 0x7FFFFF00u, 0 };
        uint64_t fence = 0;
        rc = vidmm_submit(f->dev, &r, 1, 0, NULL, &fence);
        CHECK(rc == (f->removed ? VIDMM_E_DEVICE_REMOVED : VIDMM_E_INVALID_ARG), "submit of a bad handle: %s",
              vidmm_strerror(rc));
        rc = vidmm_fence_signal(f->dev, f->issued + 1);
        CHECK(rc == (f->removed ? VIDMM_E_DEVICE_REMOVED : VIDMM_E_INVALID_ARG), "signal of a fence never issued: %s",
              vidmm_strerror(rc));
        if (!f->removed)
            unchanged(f, &s, "refused calls");
        break;
    }
    case 6:
        if (a > 0xF0 && !f->removed) { /* rarely: a TDR (15.27) */
            CHECK(vidmm_device_remove(f->dev) == 0, "remove");
            f->removed = true;
            CHECK(vidmm_device_remove(f->dev) == VIDMM_E_DEVICE_REMOVED, "second remove");
            for (int i = 0; i < MAX_GROUPS; i++)
                for (uint32_t k = 0; k < f->g[i].ninst; k++)
                    f->g[i].in[k].locks = 0; /* every lock ends */
        }
        break;
    default:
        op_nested_lock(f, a, b >> 3);
        break;
    }
}

/* ---------------------------------------------------------------------------------------------
 * The target.
 * ------------------------------------------------------------------------------------------- */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz *f = calloc(1, sizeof *f);
    if (!f)
        return 0;
    cur_fz = f;
    f->p = data;
    f->n = size;
    f->rnd = 1;
    if (trace < 0)
        trace = getenv("VIDMM_FUZZ_TRACE") != NULL;
    const uint8_t shape = take(f);
    if (trace)
        fprintf(stderr, "input of %zu bytes, shape %u\n", size, shape);
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    f->alt = (shape & 8) != 0;
    f->segs = f->alt ? segs_alt : segs;
    dd.segments = f->segs;
    dd.segment_count = 3;
    dd.aperture_commit_limit = f->alt ? 768u << 10 : 0;
    dd.paging_threads = shape & 1;
    dd.wait_timeout_ns = TIMEOUT_NS;
    dd.sysmem_reserve = 64u << 20;
    f->cache_coherent = (shape & 4) != 0;
    dd.flags = f->cache_coherent ? VIDMM_DEVICE_CACHE_COHERENT : 0;
    if (shape & 2) {
        snprintf(f->swap, sizeof f->swap, "/tmp/vidmm-fuzz-%d-swap", (int)getpid());
        dd.swap_path = f->swap;
        /* The thread-pool shape keeps little in memory, so that write-outs start often. */
        dd.sysmem_budget = shape & 16 ? 32u << 10 : 256u << 10;
        /* Synchronous I/O is deterministic: in the calling thread. Bit 4 takes the thread pool,
         * so that write-outs are in flight while locks and submissions come (issue 17, case 2:
         * a writable relock inside a READ_ONLY lock must wait for the write-out). */
        f->async_io = (shape & 16) != 0;
        dd.io_backend = f->async_io ? VIDMM_IO_THREADS : VIDMM_IO_SYNC;
        f->disk = true;
    }
    int rc = vidmm_device_create(&dd, &f->dev);
    CHECK(rc == 0, "device_create: %s", vidmm_strerror(rc));
    for (f->step = 0; f->step < MAX_STEPS && f->n > 0; f->step++) {
        const uint8_t op = take(f), a = take(f), b = take(f), c = take(f);
        if (trace)
            fprintf(stderr, "step %d: op %u (%u) a %u b %u c %u\n", f->step, op % 12u, op, a, b, c);
        switch (op % 12) {
        case 0:
        case 1: op_create(f, a, b, c); break;
        case 2: op_destroy(f, a); break;
        case 3:
        case 4: op_submit(f, a, b, c); break;
        case 5: op_signal(f, a); break;
        case 6:
        case 7: op_lock(f, a, b, c); break;
        case 8: op_unlock(f, a); break;
        case 9: op_evict(f, a); op_resident(f, b); break;
        case 10: op_gpu_write(f, a, b); break;
        default: op_misc(f, a, b); break;
        }
        check_all(f);
    }
    /* The end: every fence signalled, every lock released, content still the model's. */
    if (!f->removed && f->issued > f->done) {
        gpu_run(f, f->issued);
        CHECK(vidmm_fence_signal(f->dev, f->issued) == 0, "final signal");
        f->done = f->issued;
        f->stalled = false;
    }
    for (int i = 0; i < MAX_GROUPS && !f->removed; i++)
        for (uint32_t k = 0; f->g[i].live && k < f->g[i].ninst; k++)
            while (f->g[i].in[k].locks) {
                CHECK(vidmm_unlock(f->dev, 1, &f->g[i].in[k].h) == 0, "final unlock");
                f->g[i].in[k].locks--;
            }
    check_all(f);
    vidmm_device_destroy(f->dev);
    for (int i = 0; i < MAX_GROUPS; i++)
        free_group(&f->g[i]);
    cur_fz = NULL;
    free(f);
    return 0;
}
