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
 * argument bytes); missing bytes read as 0. Rules cited are shared/spec/wddm-vidmm.md's.
 * Byte 0 = 0xFF (W2_MARK, a shape no WDDM1 input of the corpus has) selects a WDDM2 device and
 * WDDM2 operation sequences instead: see "WDDM2 operation sequences" below; byte 0 = 0xFE
 * (SR_MARK) swizzled allocations of mixed sizes sharing few swizzling ranges: see
 * "Swizzling-range sequences". */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include "vidmm/vidmm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PG 4096u
#define MAX_GROUPS 8
#define MAX_INST 4
#define MAX_STEPS 96
#define MAX_PAGES 80 /* the largest allocation op_create() makes: 79 pages (a write-tracked size) */
#define TIMEOUT_NS 2000000ull /* the device's wait_timeout_ns: it bounds waits for the GPU only */

/* Segments: 1 CPU-visible memory, 2 memory the CPU cannot see, 3 an aperture. */
static const struct vidmm_segment_desc segs[3] = {
    { 0x10000000ull, 1u << 20, 1u << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 },
    { 0x20000000ull, 512u << 10, 512u << 10, 0, 0, NULL, 0 },
    { 0x40000000ull, 1u << 20, 1u << 20, VIDMM_SEGMENT_APERTURE, 0, NULL, 0 },
};
/* The second shape (input byte 0, bit 3), for the segment kinds of issue 17: segment 2 is a
 * PitchAlignment segment (allocations take their PitchAlignedSize there), segment 3 an aperture
 * of 64 KB pages (Alignment 64 KB) that may map half its size, and the adapter 768 KiB of
 * apertures at most - placements near the commit limits. */
static const struct vidmm_segment_desc segs_alt[3] = {
    { 0x10000000ull, 1u << 20, 1u << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 },
    { 0x20000000ull, 512u << 10, 512u << 10, VIDMM_SEGMENT_PITCH_ALIGNMENT, 0, NULL, 0 },
    { 0x40000000ull, 1u << 20, 512u << 10, VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_USE_64KB_PAGES, 0, NULL, 0 },
};
static const uint32_t sets[6] = { 0x1, 0x3, 0x5, 0x7, 0x6, 0x2 }; /* supported sets drawn from */

struct inst {
    vidmm_handle h;
    unsigned char *bytes;       /* what the content must be */
    bool known;                 /* false: a Discard made it undefined until fully written */
    uint64_t read_fence, write_fence;
    uint32_t locks, lock_flags;
    unsigned char *lock_ptr;
    bool reading;               /* a DONOT_WAIT lock started its read-back from the disk tier,
                                   which may complete at any time after (device.h) */
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
    unsigned char *seg1_cpu;    /* segment 1's memory, once a residency showed it */
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

/* Segment 1's pages that no allocation holds are not write-protected: the pages plain locks
 * of Cached allocations leave armed are lifted when the allocation leaves its place (lib/engine
 * lock.c vm_watch_leave()), or the next occupant's every first write takes a fault. Read from
 * /proc/self/pagemap's uffd-wp bit (57); nothing to see where userfaultfd is not had. */
static void check_armed(const struct fz *f, const struct placed *pl, int np)
{
    if (f->seg1_cpu == NULL)
        return;
    enum { N = (1u << 20) / PG };
    static uint64_t e[N];
    const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    const ssize_t k = pread(fd, e, sizeof e, (off_t)((uintptr_t)f->seg1_cpu / PG * sizeof e[0]));
    close(fd);
    if (k != (ssize_t)sizeof e)
        return;
    for (uint32_t i = 0; i < N; i++) {
        if (!((e[i] >> 57) & 1))
            continue;
        bool held = false;
        for (int a = 0; a < np && !held; a++)
            held = pl[a].seg == 1 && (uint64_t)i * PG >= pl[a].off && (uint64_t)i * PG < pl[a].off + pl[a].len;
        CHECK(held, "page %u of segment 1 is write-protected and no allocation holds it", i);
    }
}

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
            /* One buffer for every read (the largest allocation is MAX_PAGES), compared with
             * memcmp first: the byte loop under ASan made this check most of an input's time. */
            static unsigned char buf[MAX_PAGES * PG];
            if (g->size > sizeof buf)
                fail("0x%x: %llu bytes, more than the model's largest", in->h, (unsigned long long)g->size);
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
    check_armed(f, pl, np);
}

/* Snapshot of every allocation's query, for "a refused call changed nothing". */
struct snap {
    int n;
    struct vidmm_alloc_info q[MAX_GROUPS * MAX_INST];
    bool reading[MAX_GROUPS * MAX_INST];
};

static void snap(struct fz *f, struct snap *s)
{
    s->n = 0;
    for (int i = 0; i < MAX_GROUPS; i++)
        for (uint32_t k = 0; f->g[i].live && k < f->g[i].ninst; k++) {
            struct vidmm_alloc_info *q = &s->q[s->n];
            memset(q, 0, sizeof *q);
            q->size_of = sizeof *q;
            vidmm_alloc_query(f->dev, f->g[i].in[k].h, q);
            struct inst *in = &f->g[i].in[k];
            if (in->reading && q->where != VIDMM_WHERE_DISK)
                in->reading = false; /* read back (or moved on): nothing left in flight */
            s->reading[s->n++] = in->reading;
        }
}

static void unchanged(struct fz *f, const struct snap *a, const char *what)
{
    struct snap b;
    snap(f, &b);
    CHECK(a->n == b.n, "%s changed the allocations", what);
    for (int i = 0; i < a->n; i++) {
        const struct vidmm_alloc_info *x = &a->q[i], *y = &b.q[i];
        /* With the thread-pool I/O a write-out started earlier may complete meanwhile, and so may
         * a read-back that an earlier DONOT_WAIT lock started (its answer was busy). */
        const bool written_out = f->async_io && x->where == VIDMM_WHERE_SYSMEM && y->where == VIDMM_WHERE_DISK;
        const bool read_back = a->reading[i] && x->where == VIDMM_WHERE_DISK && y->where == VIDMM_WHERE_SYSMEM;
        CHECK((x->where == y->where || written_out || read_back) && x->segment_id == y->segment_id &&
                  x->offset == y->offset &&
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
    /* Now and then one large enough for the plain locks' write tracking (lock.c: 256 KiB and
     * more), and a PermanentSysMem one filled with zeros, whose backing store is a hole until
     * written (tracked by its data: lock.c watch_arm()). */
    const bool tracked_size = (a & 0x80) && ((b >> 3) % 8 == 1 || (b >> 3) % 8 == 2 || (b >> 3) % 8 == 5);
    if (tracked_size)
        d.size = (uint64_t)(64 + a % 16) * PG;
    switch ((b >> 3) % 8) {
    case 1: d.flags |= VIDMM_ALLOC_CACHED; break;
    case 5: /* Cached, tracked where it can be: the pages its locks leave armed in segment 1 */
        if (tracked_size) {
            d.flags |= VIDMM_ALLOC_CACHED;
            set |= 0x1;
        }
        break;
    case 2:
        d.flags |= VIDMM_ALLOC_PERMANENT_SYSMEM;
        if (c & 0x40) {
            d.fill_pattern = 0;
            d.size = (uint64_t)(64 + a % 16) * PG;
        }
        break;
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
        /* DONOT_WAIT busy: the read-back of a referenced allocation written out to the disk tier
         * was started (device.h vidmm_submit()) and may complete at any time after; the next
         * snapshot forgets it for those not on the disk. */
        if (dnw && rc == VIDMM_E_BUSY)
            for (uint32_t k = 0; k < n; k++)
                ins[k]->reading = true;
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
        if (where[k].segment_id == 1 && where[k].cpu != NULL)
            f->seg1_cpu = (unsigned char *)where[k].cpu - where[k].offset;
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
    /* A Cached allocation of a tracked size: a plain writable lock a quarter of the time (one
     * in 16 of the random flags is one), the lock whose end leaves pages armed (lib/engine
     * lock.c watch_end()). */
    const bool plain_write = cached(g) && g->size >= 64 * PG && (c & 0xC0) == 0x40;
    if (plain_write)
        flags = 0;
    uint32_t pages[2];
    uint32_t npages = 0;
    const uint32_t total = (uint32_t)(g->size / PG);
    if ((c & 0x2) && !plain_write) {
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
            else if (dnw)
                in->reading = true; /* the read-back may have been started before the answer */
            return;
        }
        if (rc == VIDMM_E_BUSY && dnw && (on_disk || f->async_io)) {
            if (on_disk)
                in->reading = true;
            return; /* its read-back from the disk tier was started, or (writable) its write-out is
                       in flight: DONOT_WAIT says busy (device.h) */
        }
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
    if (rc == 0 && w.segment_id == 1 && w.cpu != NULL)
        f->seg1_cpu = (unsigned char *)w.cpu - w.offset;
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
 * WDDM2 operation sequences (input byte 0 = W2_MARK; include/vidmm/wddm2.h).
 *
 * Byte 1 is the WDDM2 shape: bit 0 a paging thread; bits 1-2 the power flags of the two
 * memory segments (none; standby-preserved / all-preserved; standby-preserved + partially
 * preserved in hibernate / none; all preserved); bits 3-4 the number of processes, 1 + (x % 3),
 * each with its VA space. Then one operation per 4 bytes, as above. The device has budget
 * groups: segment 1 (512 KiB of CPU-visible memory) and 2 (256 KiB the CPU cannot see) LOCAL,
 * segment 3 (a 512 KiB aperture) NON_LOCAL. The GPU is the fuzzer: a va_submit's writes go through
 * vidmm_va_translate()'s host pointers at once, and its fence is signalled in the same step,
 * so that the GPU is idle between steps (power transitions need it; Lock2 does not wait for
 * fences, spec 6.6). The model holds, per allocation, its content, residency references,
 * charged budget group, offer state and Lock2 count; per process its budgets, reservations,
 * VA reservations and mappings. After every step (paging drained first):
 *   - every allocation's query: lock count, residency references and status, placement inside
 *     its supported set, no overlaps;
 *   - content byte for byte (vidmm_gpu_access reads), also through every Lock2 pointer, and
 *     through every mapped GPU VA's translation - except offered allocations, whose content may
 *     go: their reclaim must report OK with the content intact, or DISCARDED / NOT_COMMITTED
 *     only after the engine issued a DISCARD_CONTENT for them (the paging log), and then the
 *     content reads as VIDMM_DISCARDED_PATTERN;
 *   - every mapping translates to its allocation's segment + offset, or NOT_AVAILABLE when
 *     the allocation is not resident;
 *   - every process's budget, usage (the model's sum of its resident-listed allocations),
 *     reservation and AvailableForReservation per group.
 * Return codes are the model's wherever a rule decides them (refcounts, budgets and
 * NumBytesToTrim, GPU page faults, offers, Lock2 placement rules, update-property moves). */
#define W2_MARK 0xFFu
#define W2_ALLOCS 8
#define W2_PROCS 3
#define W2_RES 4
#define W2_MAPS 16
#define W2_PROC_ID(k) (7u + (uint32_t)(k))
#define W2_VA_FIXED 0x10000000000ull /* explicit reservations go above this */

static const uint32_t w2_sets[7] = { 0x1, 0x3, 0x5, 0x7, 0x4, 0x6, 0x2 };

struct w2a {
    bool live;
    vidmm_handle h;
    uint32_t proc;              /* index of the creating process */
    bool shared;
    uint64_t size;
    uint32_t flags, set, pref;
    unsigned char *bytes;
    uint32_t refs;              /* residency references */
    int group;                  /* the budget group charged while refs > 0, -1 none */
    bool offered, decommit_asked, discard_seen;
    uint32_t locks;
    unsigned char *lock_ptr;
};

struct w2res {
    bool live;
    uint64_t va, size;
};

struct w2map {
    bool live;
    uint32_t proc;
    uint64_t va, size, off;
    int ai;
};

/* The paging log replayed as a GPU executing it in order would (issue 27): which allocation each
 * page of each segment holds, and every page-table entry the UPDATE_PAGE_TABLE records wrote;
 * after every record, each valid entry must point at a page its allocation holds. */
#define W2_SEG_PAGES 128        /* the largest segment: 512 KiB */
#define W2_PTES 1024
struct w2pte {
    uint32_t proc, seg;         /* seg 0: invalid */
    uint64_t vapage, page;      /* page: index in the segment */
    vidmm_handle h;
};

struct w2 {
    vidmm_handle owner[3][W2_SEG_PAGES];
    struct w2pte pte[W2_PTES];
    uint32_t npte;
    unsigned long records;
    uint32_t nprocs;
    vidmm_va_space *sp[W2_PROCS];
    bool gone[W2_PROCS];        /* its device removed by a GPU fault (issue 27 item 5) */
    uint32_t faults;
    uint64_t budget[W2_PROCS][2], resv[W2_PROCS][2];
    struct w2res res[W2_PROCS][W2_RES];
    struct w2map map[W2_MAPS];
    struct w2a a[W2_ALLOCS];
    uint64_t group_max[2];
    struct vidmm_segment_desc segs[3];
};

static int w2_seg_group(uint32_t seg)
{
    return seg == 3 ? 1 : 0; /* 1, 2 LOCAL; 3 NON_LOCAL */
}

static bool w2_placed(const struct vidmm_alloc_info *q)
{
    return q->where == VIDMM_WHERE_SEGMENT || q->where == VIDMM_WHERE_APERTURE;
}

static void w2_query(struct fz *f, const struct w2a *x, struct vidmm_alloc_info *q)
{
    memset(q, 0, sizeof *q);
    q->size_of = sizeof *q;
    int rc = vidmm_alloc_query(f->dev, x->h, q);
    CHECK(rc == 0, "query of 0x%x: %s", x->h, vidmm_strerror(rc));
}

static struct w2a *w2_pick(struct w2 *w, uint8_t b)
{
    for (int k = 0; k < W2_ALLOCS; k++) {
        struct w2a *x = &w->a[(b + k) % W2_ALLOCS];
        if (x->live)
            return x;
    }
    return NULL;
}

/* Every paging operation issued so far has run (walking up from the completed fence until a
 * wait is refused: the last issued fence is not public). */
static void w2_drain(struct fz *f)
{
    uint64_t pf = vidmm_wddm2_paging_fence_completed(f->dev);
    while (vidmm_wddm2_paging_fence_wait(f->dev, pf + 1, UINT64_MAX) == 0)
        pf++;
}

/* The paging log since the last look: a DISCARD_CONTENT of an offered allocation is what may
 * make its reclaim say DISCARDED. */
/* The pages [l, l + size) of a segment location take owner 'h' (0: they hold nothing). */
static void w2_own(struct w2 *w, const struct vidmm_location *l, uint64_t size, vidmm_handle h)
{
    if (l->segment_id < 1 || l->segment_id > 3)
        return;
    const struct vidmm_segment_desc *sd = &w->segs[l->segment_id - 1];
    for (uint64_t k = 0; k < (size + PG - 1) / PG; k++) {
        const uint64_t page = (l->segment_address - sd->base_address) / PG + k;
        CHECK(page < W2_SEG_PAGES && page < sd->size / PG, "a paging record reaches past segment %u",
              l->segment_id);
        w->owner[l->segment_id - 1][page] = h;
    }
}

static void w2_replay(struct w2 *w, const struct vidmm_paging_op *op)
{
    switch (op->type) {
    case VIDMM_PAGING_TRANSFER:
    case VIDMM_PAGING_SPECIAL_LOCK_TRANSFER:
        if (op->src.segment_id && !(op->dst.segment_id == op->src.segment_id &&
                                    op->dst.segment_address == op->src.segment_address))
            w2_own(w, &op->src, op->size, 0); /* the old place is empty now */
        if (op->dst.segment_id)
            w2_own(w, &op->dst, op->size, op->allocation);
        break;
    case VIDMM_PAGING_FILL:
    case VIDMM_PAGING_MAP_APERTURE_SEGMENT:
        w2_own(w, &op->dst, op->size, op->allocation);
        break;
    case VIDMM_PAGING_DISCARD_CONTENT:
    case VIDMM_PAGING_UNMAP_APERTURE_SEGMENT:
        w2_own(w, &op->dst, op->size, 0);
        break;
    case VIDMM_PAGING_UPDATE_PAGE_TABLE:
        for (uint64_t k = 0; k < op->size / PG; k++) {
            const uint32_t proc = op->swizzling_range_data;
            const uint64_t vapage = op->offset_in_pages + k;
            uint64_t page = 0;
            if (op->dst.segment_id)
                page = (op->dst.segment_address - w->segs[op->dst.segment_id - 1].base_address) / PG + k;
            uint32_t i = 0;
            while (i < w->npte && !(w->pte[i].proc == proc && w->pte[i].vapage == vapage))
                i++;
            CHECK(i < W2_PTES, "more page-table entries than the model holds");
            if (i == w->npte)
                w->npte++;
            w->pte[i] = (struct w2pte){ proc, op->dst.segment_id, vapage, page, op->allocation };
        }
        break;
    default:
        break;
    }
    w->records++;
    for (uint32_t i = 0; i < w->npte; i++) {
        const struct w2pte *e = &w->pte[i];
        CHECK(!e->seg || w->owner[e->seg - 1][e->page] == e->h,
              "paging record %lu (type %u of 0x%x): the valid entry of VA page 0x%llx of process %u points at "
              "page %llu of segment %u, which holds 0x%x, not 0x%x",
              w->records, op->type, op->allocation, (unsigned long long)e->vapage, e->proc,
              (unsigned long long)e->page, e->seg, w->owner[e->seg - 1][e->page], e->h);
    }
}

static void w2_read_log(struct fz *f, struct w2 *w)
{
    struct vidmm_paging_op ops[64];
    size_t n;
    while ((n = vidmm_paging_log_read(f->dev, ops, 64)) > 0)
        for (size_t i = 0; i < n; i++) {
            w2_replay(w, &ops[i]);
            for (int k = 0; ops[i].type == VIDMM_PAGING_DISCARD_CONTENT && k < W2_ALLOCS; k++)
                if (w->a[k].live && w->a[k].h == ops[i].allocation && w->a[k].offered)
                    w->a[k].discard_seen = true;
        }
}

static uint64_t w2_usage(const struct w2 *w, uint32_t p, int g)
{
    uint64_t u = 0;
    for (int k = 0; k < W2_ALLOCS; k++)
        if (w->a[k].live && w->a[k].proc == p && w->a[k].refs && w->a[k].group == g)
            u += w->a[k].size;
    return u;
}

static uint64_t w2_available(const struct w2 *w, uint32_t p, int g)
{
    uint64_t others = 0;
    for (uint32_t k = 0; k < w->nprocs; k++)
        if (k != p)
            others += w->resv[k][g];
    return others >= w->group_max[g] ? 0 : w->group_max[g] - others;
}

/* The group a make-resident charges: the segment it is in, else its placement order's first
 * (the preferred segment when in the set, then ascending ID). */
static int w2_charge_group(struct fz *f, const struct w2a *x)
{
    struct vidmm_alloc_info q;
    w2_query(f, x, &q);
    if (w2_placed(&q))
        return w2_seg_group(q.segment_id);
    if (x->pref && (x->set >> (x->pref - 1)) & 1)
        return w2_seg_group(x->pref);
    for (uint32_t id = 1; id <= 3; id++)
        if ((x->set >> (id - 1)) & 1)
            return w2_seg_group(id);
    return -1;
}

static void w2_forget_maps(struct w2 *w, int ai)
{
    for (int m = 0; m < W2_MAPS; m++)
        if (w->map[m].live && w->map[m].ai == ai)
            w->map[m].live = false;
}

static void w2_check_bytes(const unsigned char *got, const unsigned char *want, uint64_t n, vidmm_handle h,
                           const char *what)
{
    if (memcmp(got, want, (size_t)n) != 0)
        for (uint64_t b = 0; b < n; b++)
            CHECK(got[b] == want[b], "0x%x (%s): byte %llu is 0x%02x, model 0x%02x", h, what, (unsigned long long)b,
                  got[b], want[b]);
}

/* A mapped page: where it translates to, against the allocation's placement and content. */
static void w2_check_translation(struct fz *f, struct w2 *w, const struct w2map *m, uint64_t page)
{
    const struct w2a *x = &w->a[m->ai];
    struct vidmm_alloc_info q;
    w2_query(f, x, &q);
    struct vidmm_va_translation t;
    memset(&t, 0, sizeof t);
    const uint64_t va = m->va + page * PG, aoff = m->off + page * PG;
    int rc = vidmm_va_translate(w->sp[m->proc], va + 100, &t);
    if (!w2_placed(&q)) {
        CHECK(rc == VIDMM_E_NOT_AVAILABLE, "translate of 0x%llx (0x%x, where %u): %s", (unsigned long long)va, x->h,
              q.where, vidmm_strerror(rc));
        return;
    }
    CHECK(rc == 0, "translate of 0x%llx (0x%x at %u:0x%llx): %s", (unsigned long long)va, x->h, q.segment_id,
          (unsigned long long)q.offset, vidmm_strerror(rc));
    CHECK(t.segment_id == q.segment_id && t.offset == q.offset + aoff + 100 && t.cpu,
          "0x%llx translates to %u:0x%llx, 0x%x is at %u:0x%llx (+0x%llx)", (unsigned long long)va, t.segment_id,
          (unsigned long long)t.offset, x->h, q.segment_id, (unsigned long long)q.offset,
          (unsigned long long)aoff + 100);
    if (!x->offered)
        w2_check_bytes((const unsigned char *)t.cpu - 100, x->bytes + aoff, PG, x->h, "through its GPU VA");
}

static void w2_check(struct fz *f, struct w2 *w)
{
    if (f->removed)
        return;
    w2_drain(f);
    w2_read_log(f, w);
    struct placed pl[W2_ALLOCS];
    int np = 0;
    for (int i = 0; i < W2_ALLOCS; i++) {
        struct w2a *x = &w->a[i];
        if (!x->live)
            continue;
        struct vidmm_alloc_info q;
        w2_query(f, x, &q);
        CHECK(q.lock_count == x->locks, "0x%x: lock count %u, model %u", x->h, q.lock_count, x->locks);
        uint32_t st = 0, refs = 0;
        int rc = vidmm_wddm2_query_residency(f->dev, &x->h, 1, &st, &refs);
        CHECK(rc == 0, "query_residency: %s", vidmm_strerror(rc));
        CHECK(refs == x->refs, "0x%x: %u residency references, model %u", x->h, refs, x->refs);
        const uint32_t want_st = q.where == VIDMM_WHERE_SEGMENT ? VIDMM_RESIDENCY_IN_GPU_MEMORY
                               : q.where == VIDMM_WHERE_APERTURE ? VIDMM_RESIDENCY_IN_SHARED_MEMORY
                                                                 : VIDMM_RESIDENCY_NOT_RESIDENT;
        CHECK(st == want_st, "0x%x: residency status %u, where %u", x->h, st, q.where);
        /* The query naming a process (issue 27 item 4): its creator's answers the same (or says
         * its device was removed); another's is refused unless shared. */
        for (uint32_t p = 0; p < w->nprocs; p++) {
            uint32_t st2 = 77, refs2 = 77;
            rc = vidmm_wddm2_query_residency_process(f->dev, W2_PROC_ID(p), &x->h, 1, &st2, &refs2);
            const int want = w->gone[p] ? VIDMM_E_DEVICE_REMOVED : p != x->proc && !x->shared ? VIDMM_E_INVALID_ARG : 0;
            CHECK(rc == want && (rc ? st2 == 77 && refs2 == 77 : st2 == st && refs2 == refs),
                  "query_residency_process of 0x%x by process %u: %s (%u, %u), model %s (%u, %u)", x->h, p,
                  vidmm_strerror(rc), st2, refs2, vidmm_strerror(want), st, refs);
        }
        if (w2_placed(&q)) {
            CHECK(q.segment_id >= 1 && q.segment_id <= 3 && ((x->set >> (q.segment_id - 1)) & 1),
                  "0x%x in segment %u outside its set 0x%x", x->h, q.segment_id, x->set);
            CHECK(q.offset + q.size <= w->segs[q.segment_id - 1].size, "0x%x past its segment's end", x->h);
            pl[np++] = (struct placed){ q.segment_id, q.offset, q.size, x->h };
        }
        if (x->offered)
            continue;
        static unsigned char buf[32 * PG];
        rc = vidmm_gpu_access(f->dev, x->h, 0, buf, x->size, false);
        CHECK(rc == 0, "gpu_access read of 0x%x: %s", x->h, vidmm_strerror(rc));
        w2_check_bytes(buf, x->bytes, x->size, x->h, "content");
        if (x->locks)
            w2_check_bytes(x->lock_ptr, x->bytes, x->size, x->h, "through its Lock2 pointer");
    }
    for (int a = 0; a < np; a++)
        for (int b = a + 1; b < np; b++)
            CHECK(pl[a].seg != pl[b].seg || pl[a].off + pl[a].len <= pl[b].off || pl[b].off + pl[b].len <= pl[a].off,
                  "0x%x and 0x%x overlap in segment %u", pl[a].h, pl[b].h, pl[a].seg);
    for (int m = 0; m < W2_MAPS; m++) {
        if (!w->map[m].live)
            continue;
        w2_check_translation(f, w, &w->map[m], 0);
        if (w->map[m].size > PG)
            w2_check_translation(f, w, &w->map[m], w->map[m].size / PG - 1);
    }
    for (uint32_t p = 0; p < w->nprocs; p++)
        for (int g = 0; g < 2; g++) {
            struct vidmm_video_memory_info vi = { .size_of = sizeof vi };
            int rc = vidmm_wddm2_query_video_memory(f->dev, W2_PROC_ID(p), (uint32_t)g, &vi);
            CHECK(rc == 0, "query_video_memory: %s", vidmm_strerror(rc));
            CHECK(vi.current_usage == w2_usage(w, p, g) && vi.budget == w->budget[p][g] &&
                      vi.current_reservation == w->resv[p][g] && vi.available_for_reservation == w2_available(w, p, g),
                  "process %u group %d: usage %llu budget %llu reservation %llu available %llu, model %llu %llu %llu "
                  "%llu",
                  p, g, (unsigned long long)vi.current_usage, (unsigned long long)vi.budget,
                  (unsigned long long)vi.current_reservation, (unsigned long long)vi.available_for_reservation,
                  (unsigned long long)w2_usage(w, p, g), (unsigned long long)w->budget[p][g],
                  (unsigned long long)w->resv[p][g], (unsigned long long)w2_available(w, p, g));
        }
}

/* The device was removed (a GPU page fault, a failed MUST_SUCCEED): every later call says so,
 * every lock ended. The run ends there. */
static void w2_removed(struct fz *f, struct w2 *w)
{
    f->removed = true;
    for (int i = 0; i < W2_ALLOCS; i++)
        w->a[i].locks = 0;
    struct w2a *x = w2_pick(w, 0);
    if (!x)
        return;
    void *p = NULL;
    int rc = vidmm_wddm2_lock2(f->dev, W2_PROC_ID(x->proc), x->h, 0, &p);
    CHECK(rc == VIDMM_E_DEVICE_REMOVED, "lock2 after removal: %s", vidmm_strerror(rc));
    struct vidmm_make_resident_args mr = { .size_of = sizeof mr, .allocations = &x->h, .count = 1 };
    rc = vidmm_wddm2_make_resident(f->dev, &mr);
    CHECK(rc == VIDMM_E_DEVICE_REMOVED, "make_resident after removal: %s", vidmm_strerror(rc));
}

/* What the WDDM2 sequences reached, for fuzz_engine_random's check that the generator still
 * gets there (issue 27 items 4 and 5): inputs, process removals by a fault, calls refused for
 * naming another process's allocation, make-residents and submissions that succeeded while a
 * process was removed, removed processes that made a new space. */
unsigned long fuzz_engine_w2_inputs, fuzz_engine_w2_gone, fuzz_engine_w2_foreign, fuzz_engine_w2_after_gone,
    fuzz_engine_w2_revived;
static bool w2_any_gone(const struct w2 *w);

static bool w2_any_gone(const struct w2 *w)
{
    for (uint32_t p = 0; p < w->nprocs; p++)
        if (w->gone[p])
            return true;
    return false;
}

/* A GPU fault in process p's work removed p's device, not the vidmm device (Doc NONRES,
 * wddm2.h Processes): the Lock2 locks of its allocations end, its own allocations leave the
 * residency list, its shared ones keep their references; every other process goes on. */
static void w2_gone(struct w2 *w, uint32_t p)
{
    fuzz_engine_w2_gone++;
    w->gone[p] = true;
    for (int i = 0; i < W2_ALLOCS; i++) {
        struct w2a *x = &w->a[i];
        if (!x->live || x->proc != p)
            continue;
        x->locks = 0; /* only the creator locks, shared or not */
        x->lock_ptr = NULL;
        if (x->shared)
            continue; /* its references may be another process's */
        x->refs = 0;
        x->group = -1;
    }
}

/* The process a residency call names (issue 27 item 4), chosen by 'sel': mostly the owner of
 * the first listed allocation, now and then none (0) or any process - perhaps another's. */
struct w2_caller {
    bool named;
    uint32_t p;                 /* index, when named */
};

static struct w2_caller w2_caller(const struct w2 *w, uint8_t sel, const struct w2a *first)
{
    switch (sel & 3) {
    case 2: return (struct w2_caller){ false, 0 };
    case 3: return (struct w2_caller){ true, (uint32_t)(sel >> 2) % w->nprocs };
    default: return (struct w2_caller){ true, first->proc };
    }
}

static uint32_t w2_caller_id(struct w2_caller c)
{
    return c.named ? W2_PROC_ID(c.p) : 0;
}

/* What the engine answers first for a call naming 'c' over 'xs': the named process removed,
 * or a listed allocation of another process that is not shared; 0: neither. */
static int w2_caller_refusal(const struct w2 *w, struct w2_caller c, struct w2a *const *xs, uint32_t n)
{
    if (!c.named)
        return 0;
    if (w->gone[c.p])
        return VIDMM_E_DEVICE_REMOVED;
    for (uint32_t i = 0; i < n; i++)
        if (xs[i]->proc != c.p && !xs[i]->shared) {
            fuzz_engine_w2_foreign++;
            return VIDMM_E_INVALID_ARG;
        }
    return 0;
}

static void w2_create(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    struct w2a *x = NULL;
    for (int k = 0; k < W2_ALLOCS && !x; k++)
        if (!w->a[k].live)
            x = &w->a[k];
    if (!x)
        return;
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    d.size = (uint64_t)(a % 32 + 1) * PG;
    d.priority = VIDMM_PRIORITY_LOW + (uint32_t)(c % 4) * 0x20000000u;
    d.flags = (c & 3) ? VIDMM_ALLOC_CPU_VISIBLE : 0;
    if ((c & 0xC) == 0xC && (c & 3))
        d.flags |= VIDMM_ALLOC_CACHED; /* CPU_VISIBLE only (spec 15.2) */
    d.fill_pattern = 0x01010101u * (uint32_t)(a | 1);
    const uint32_t proc = (uint32_t)(b % w->nprocs);
    d.process = W2_PROC_ID(proc);
    d.kind = (c & 0x30) == 0x30 ? VIDMM_ALLOC_KIND_SHARED : 0;
    const uint32_t set = w2_sets[(b >> 2) % 7];
    d.supported_read_set = d.supported_write_set = set;
    /* Spec 3.3, 15.2: WDDM2 ignores the read set - now and then one that names other segments,
     * or none the device has; the model places by the write set alone (issue 27). */
    if (a & 0x80)
        d.supported_read_set = (a & 0x40) ? 1u << 12 : (~set & 0x7u);
    uint32_t pref = 0;
    if (c & 0x40)
        for (uint32_t id = 1; id <= 3; id++)
            if ((set >> (id - 1)) & 1)
                pref = id; /* the highest of the set: not the ascending order's first */
    d.preferred_segment = pref;
    const bool bad = (b >> 5) == 7; /* renaming: a WDDM1 mechanism, refused */
    if (bad)
        d.max_renaming = 2;
    vidmm_handle h = 0xDEADBEEFu;
    int rc = vidmm_alloc_create(f->dev, &d, &h);
    if (w->gone[proc]) { /* its device removed (issue 27 item 5) */
        CHECK(rc == VIDMM_E_DEVICE_REMOVED && h == 0xDEADBEEFu, "create by a removed process: %s", vidmm_strerror(rc));
        return;
    }
    if (bad) {
        CHECK(rc == VIDMM_E_INVALID_ARG && h == 0xDEADBEEFu, "create with renaming on WDDM2: %s", vidmm_strerror(rc));
        return;
    }
    CHECK(rc == 0, "create of %llu bytes, flags 0x%x set 0x%x: %s", (unsigned long long)d.size, d.flags, set,
          vidmm_strerror(rc));
    fuzz_engine_w2_after_gone += w2_any_gone(w);
    memset(x, 0, sizeof *x);
    x->live = true;
    x->h = h;
    x->proc = proc;
    x->shared = d.kind != 0;
    x->size = d.size;
    x->flags = d.flags;
    x->set = set;
    x->pref = pref;
    x->group = -1;
    x->bytes = malloc(d.size);
    for (uint64_t i = 0; i < d.size; i++)
        x->bytes[i] = (unsigned char)(d.fill_pattern >> (8 * (i & 3)));
}

static void w2_destroy(struct fz *f, struct w2 *w, uint8_t a)
{
    struct w2a *x = w2_pick(w, a);
    if (!x)
        return;
    int rc = vidmm_alloc_destroy(f->dev, x->h);
    CHECK(rc == 0, "destroy of 0x%x: %s", x->h, vidmm_strerror(rc));
    w2_forget_maps(w, (int)(x - w->a));
    free(x->bytes);
    memset(x, 0, sizeof *x);
}

/* Reservations and mappings: a, b, c choose; the model says which calls are refused. */
static void w2_va(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    const uint32_t p = (uint32_t)(a % w->nprocs);
    vidmm_va_space *sp = w->sp[p];
    struct w2res *r = &w->res[p][(a >> 2) % W2_RES];
    if (w->gone[p]) { /* its device removed: every call of its space refused (issue 27 item 5) */
        uint64_t va = 0x1234;
        int rc = (c & 1) ? vidmm_va_reserve(sp, 0, PG, &va) : vidmm_va_unmap(sp, r->live ? r->va : PG, PG);
        CHECK(rc == VIDMM_E_DEVICE_REMOVED && va == 0x1234, "VA call of a removed process: %s", vidmm_strerror(rc));
        return;
    }
    switch (c % 4) {
    case 0: { /* reserve */
        if (r->live)
            break;
        uint64_t size = (uint64_t)(b % 16 + 1) * PG + ((c & 0x80) ? 100 : 0);
        uint64_t base = (b & 0x10) ? W2_VA_FIXED + (uint64_t)(b >> 5) * 0x10000u : 0;
        bool overlap = false;
        for (int k = 0; k < W2_RES && base; k++) {
            const struct w2res *o = &w->res[p][k];
            overlap |= o->live && base < o->va + o->size && o->va < base + size;
        }
        uint64_t va = 0x1234;
        int rc = vidmm_va_reserve(sp, base, size, &va);
        if ((c & 0x80) || overlap) {
            CHECK(rc == VIDMM_E_INVALID_ARG && va == 0x1234, "reserve of 0x%llx at 0x%llx (overlap %d): %s",
                  (unsigned long long)size, (unsigned long long)base, overlap, vidmm_strerror(rc));
            break;
        }
        CHECK(rc == 0, "reserve of 0x%llx at 0x%llx: %s", (unsigned long long)size, (unsigned long long)base,
              vidmm_strerror(rc));
        CHECK(base ? va == base : va && va % VIDMM_VA_RESERVE_ALIGN == 0, "reserved at 0x%llx", (unsigned long long)va);
        for (int k = 0; k < W2_RES; k++) {
            const struct w2res *o = &w->res[p][k];
            CHECK(!o->live || va + size <= o->va || o->va + o->size <= va, "reservation 0x%llx overlaps 0x%llx",
                  (unsigned long long)va, (unsigned long long)o->va);
        }
        *r = (struct w2res){ true, va, size };
        break;
    }
    case 1: { /* free (or a VA where no reservation starts) */
        if (!r->live)
            break;
        const bool bad = (b & 7) == 0;
        int rc = vidmm_va_free(sp, r->va + (bad ? PG : 0));
        if (bad && r->size > PG) {
            CHECK(rc == VIDMM_E_INVALID_ARG, "free inside a reservation: %s", vidmm_strerror(rc));
            break;
        }
        if (bad) { /* one page: va + PG may start another reservation */
            bool starts = false;
            for (int k = 0; k < W2_RES; k++)
                starts |= w->res[p][k].live && w->res[p][k].va == r->va + PG;
            CHECK(rc == (starts ? 0 : VIDMM_E_INVALID_ARG), "free at 0x%llx: %s", (unsigned long long)r->va + PG,
                  vidmm_strerror(rc));
            if (starts)
                for (int k = 0; k < W2_RES; k++)
                    if (w->res[p][k].live && w->res[p][k].va == r->va + PG)
                        r = &w->res[p][k];
            if (!starts)
                break;
        } else {
            CHECK(rc == 0, "free of 0x%llx: %s", (unsigned long long)r->va, vidmm_strerror(rc));
        }
        for (int m = 0; m < W2_MAPS; m++)
            if (w->map[m].live && w->map[m].proc == p && w->map[m].va >= r->va && w->map[m].va < r->va + r->size)
                w->map[m].live = false;
        r->live = false;
        break;
    }
    case 2: { /* map: mostly an allocation the space's process may map */
        struct w2a *x = NULL;
        for (int k = 0; k < W2_ALLOCS && !x && !(c & 0x80); k++) {
            struct w2a *y = &w->a[(b + k) % W2_ALLOCS];
            if (y->live && (y->proc == p || y->shared))
                x = y;
        }
        if (!x)
            x = w2_pick(w, b);
        struct w2map *m = NULL;
        for (int k = 0; k < W2_MAPS && !m; k++)
            if (!w->map[k].live)
                m = &w->map[k];
        if (!r->live && x && m) { /* a reservation first, where the engine puts it */
            uint64_t va = 0;
            int rc = vidmm_va_reserve(sp, 0, 16 * PG, &va);
            CHECK(rc == 0 && va && va % VIDMM_VA_RESERVE_ALIGN == 0, "reserve of 16 pages: %s at 0x%llx",
                  vidmm_strerror(rc), (unsigned long long)va);
            for (int k = 0; k < W2_RES; k++) {
                const struct w2res *o = &w->res[p][k];
                CHECK(!o->live || va + 16 * PG <= o->va || o->va + o->size <= va,
                      "reservation 0x%llx overlaps 0x%llx", (unsigned long long)va, (unsigned long long)o->va);
            }
            *r = (struct w2res){ true, va, 16 * PG };
        }
        if (!r->live || !x || !m)
            break;
        const uint64_t pages = r->size / PG;
        const uint64_t at = r->va + (uint64_t)(b % pages) * PG;
        uint64_t size = (uint64_t)((c >> 2) % 8 + 1) * PG;
        uint64_t off = (uint64_t)((c >> 5) % 4) * PG;
        if (!(c & 0x80)) { /* mostly inside the allocation; now and then past its end */
            off = off < x->size ? off : 0;
            size = size < x->size - off ? size : x->size - off;
        }
        bool ok = at + size <= r->va + r->size && off + size <= x->size && (x->proc == p || x->shared);
        for (int k = 0; k < W2_MAPS; k++) {
            const struct w2map *o = &w->map[k];
            ok &= !(o->live && o->proc == p && at < o->va + o->size && o->va < at + size);
        }
        int rc = vidmm_va_map(sp, at, x->h, off, size);
        CHECK(rc == (ok ? 0 : VIDMM_E_INVALID_ARG), "map of 0x%x+0x%llx at 0x%llx (0x%llx bytes): %s, model %s", x->h,
              (unsigned long long)off, (unsigned long long)at, (unsigned long long)size, vidmm_strerror(rc),
              ok ? "ok" : "refused");
        if (ok)
            *m = (struct w2map){ true, p, at, size, off, (int)(x - w->a) };
        break;
    }
    default: { /* unmap [va, va + size) of a reservation: at least one mapping, none straddling */
        if (!r->live)
            break;
        const uint64_t pages = r->size / PG;
        const uint64_t at = r->va + (uint64_t)(b % pages) * PG;
        const uint64_t size = (uint64_t)((b >> 4) % 8 + 1) * PG;
        int inside = 0;
        bool straddle = false;
        for (int k = 0; k < W2_MAPS; k++) {
            const struct w2map *o = &w->map[k];
            if (!o->live || o->proc != p || o->va + o->size <= at || at + size <= o->va)
                continue;
            if (o->va >= at && o->va + o->size <= at + size)
                inside++;
            else
                straddle = true;
        }
        const bool ok = inside && !straddle;
        int rc = vidmm_va_unmap(sp, at, size);
        CHECK(rc == (ok ? 0 : VIDMM_E_INVALID_ARG), "unmap of 0x%llx+0x%llx (%d inside, straddle %d): %s",
              (unsigned long long)at, (unsigned long long)size, inside, straddle, vidmm_strerror(rc));
        for (int k = 0; ok && k < W2_MAPS; k++) {
            struct w2map *o = &w->map[k];
            if (o->live && o->proc == p && o->va >= at && o->va + o->size <= at + size)
                o->live = false;
        }
        break;
    }
    }
}

static struct w2map *w2_map_at(struct w2 *w, uint32_t p, uint64_t va)
{
    for (int k = 0; k < W2_MAPS; k++)
        if (w->map[k].live && w->map[k].proc == p && va >= w->map[k].va && va < w->map[k].va + w->map[k].size)
            return &w->map[k];
    return NULL;
}

/* Translations beyond the checks after every step: a VA that maps nothing and one beyond the
 * space are refused. */
static void w2_translate(struct fz *f, struct w2 *w, uint8_t a, uint8_t b)
{
    const uint32_t p = (uint32_t)(a % w->nprocs);
    const struct w2res *r = &w->res[p][(a >> 2) % W2_RES];
    struct vidmm_va_translation t;
    memset(&t, 0, sizeof t);
    int rc = vidmm_va_translate(w->sp[p], (1ull << VIDMM_VA_BITS) + (uint64_t)b * PG, &t);
    CHECK(rc == VIDMM_E_INVALID_ARG, "translate beyond the space: %s", vidmm_strerror(rc));
    if (!r->live)
        return;
    const uint64_t va = r->va + (uint64_t)(b % (r->size / PG)) * PG;
    struct w2map *m = w2_map_at(w, p, va);
    if (!m) {
        rc = vidmm_va_translate(w->sp[p], va, &t);
        CHECK(rc == VIDMM_E_INVALID_ARG, "translate of unmapped 0x%llx: %s", (unsigned long long)va,
              vidmm_strerror(rc));
        return;
    }
    w2_check_translation(f, w, m, (va - m->va) / PG);
}

/* vidmm_va_submit() of up to three ranges of one process: the model says where the GPU faults
 * (an unmapped page, or one whose allocation is off the residency list) and where an offered
 * allocation is refused first; the GPU then writes the written ranges through their
 * translations, and the fence is signalled. */
static void w2_submit(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    /* Now and then a range that may fault: one in eight (a fault removes one process, and the
     * run goes on with the others - issue 27 item 5). */
    const bool wild = (b & 0x7) == 0;
    uint32_t p = (uint32_t)(a % w->nprocs);
    for (int j = 0; j < W2_MAPS && !wild; j++) { /* the process of a mapping the GPU may use */
        const struct w2map *o = &w->map[(b + j) % W2_MAPS];
        if (o->live && w->a[o->ai].refs && !w->a[o->ai].offered) {
            p = o->proc;
            break;
        }
    }
    struct vidmm_va_ref refs[3];
    uint32_t n = 0;
    for (uint32_t k = 0; k < (a >> 2) % 3 + 1u; k++) {
        const struct w2map *m = NULL;
        for (int j = 0; j < W2_MAPS && !m; j++) {
            const struct w2map *o = &w->map[(b + k * 5 + j) % W2_MAPS];
            if (o->live && o->proc == p && (wild || (w->a[o->ai].refs && !w->a[o->ai].offered)))
                m = o;
        }
        if (!m && wild) {
            const struct w2res *r = &w->res[p][k % W2_RES];
            if (r->live)
                refs[n++] = (struct vidmm_va_ref){ r->va, PG, VIDMM_REF_WRITE, 0 };
            continue;
        }
        if (!m)
            continue;
        const uint64_t pages = m->size / PG, first = (c >> k) % pages;
        const uint64_t len = wild && (c & 0x80) ? m->size - first * PG + PG : (pages - first) * PG;
        refs[n++] = (struct vidmm_va_ref){ m->va + first * PG, len, ((c >> (k + 3)) & 1) ? VIDMM_REF_WRITE : 0, 0 };
    }
    if (n == 0)
        return;
    if (w->gone[p]) { /* its device removed (issue 27 item 5) */
        uint64_t fence = 0;
        int rc = vidmm_va_submit(w->sp[p], refs, n, 0, &fence);
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "va_submit of a removed process: %s", vidmm_strerror(rc));
        return;
    }
    /* The model: page by page, ref by ref, the first offered mapping or fault decides. */
    int want = 0;
    uint64_t fault_va = 0;
    vidmm_handle fault_h = 0;
    for (uint32_t i = 0; i < n && !want; i++)
        for (uint64_t x = refs[i].va; x < refs[i].va + refs[i].size && !want;) {
            const struct w2map *m = w2_map_at(w, p, x);
            if (m && w->a[m->ai].offered) {
                want = VIDMM_E_INVALID_ARG;
            } else if (!m || !w->a[m->ai].refs) {
                want = VIDMM_E_DEVICE_REMOVED;
                fault_va = x;
                fault_h = m ? w->a[m->ai].h : 0;
            } else {
                x = m->va + m->size;
            }
        }
    uint64_t fence = 0;
    int rc = vidmm_va_submit(w->sp[p], refs, n, 0, &fence);
    if (trace)
        fprintf(stderr, "  va_submit of %u ranges: %s, model %s\n", n, vidmm_strerror(rc), vidmm_strerror(want));
    if (want == VIDMM_E_DEVICE_REMOVED) {
        CHECK(rc == want, "va_submit touching 0x%llx (0x%x, not resident-listed): %s", (unsigned long long)fault_va,
              fault_h, vidmm_strerror(rc));
        struct vidmm_gpu_fault gf = { .size_of = sizeof gf };
        rc = vidmm_wddm2_last_fault(f->dev, &gf);
        CHECK(rc == 0 && gf.va == fault_va && gf.process == W2_PROC_ID(p) && gf.allocation == fault_h,
              "last_fault: %s, va 0x%llx process %u allocation 0x%x, model 0x%llx %u 0x%x", vidmm_strerror(rc),
              (unsigned long long)gf.va, gf.process, gf.allocation, (unsigned long long)fault_va, W2_PROC_ID(p),
              fault_h);
        w->faults++;
        w2_gone(w, p); /* that process's device only: the run goes on */
        return;
    }
    if (want) {
        CHECK(rc == want, "va_submit touching an offered allocation: %s", vidmm_strerror(rc));
        return;
    }
    if (rc == VIDMM_E_NO_MEMORY)
        return; /* a resident-listed allocation could not be brought back (no room) */
    CHECK(rc == 0, "va_submit of %u ranges: %s", n, vidmm_strerror(rc));
    fuzz_engine_w2_after_gone += w2_any_gone(w);
    struct vidmm_gpu_fault gf = { .size_of = sizeof gf };
    CHECK(vidmm_wddm2_last_fault(f->dev, &gf) == (w->faults ? 0 : VIDMM_E_NOT_AVAILABLE), "a fault without one");
    for (uint32_t i = 0; i < n; i++) {
        if (!(refs[i].flags & VIDMM_REF_WRITE))
            continue;
        for (uint64_t x = refs[i].va; x < refs[i].va + refs[i].size; x += PG) {
            const struct w2map *m = w2_map_at(w, p, x);
            struct w2a *y = &w->a[m->ai];
            struct vidmm_va_translation t;
            int trc = vidmm_va_translate(w->sp[p], x, &t);
            CHECK(trc == 0, "translate of 0x%llx in submitted work: %s", (unsigned long long)x, vidmm_strerror(trc));
            const uint64_t aoff = m->off + (x - m->va), len = 64 + (x / PG + c) % 64;
            scribble(f, y->bytes + aoff + 1000, (size_t)len);
            memcpy((unsigned char *)t.cpu + 1000, y->bytes + aoff + 1000, (size_t)len);
        }
    }
    rc = vidmm_fence_signal(f->dev, fence);
    CHECK(rc == 0, "signal %llu: %s", (unsigned long long)fence, vidmm_strerror(rc));
}

/* Up to three handles (repeats allowed), for the list calls. */
static uint32_t w2_list(struct w2 *w, uint8_t a, uint8_t b, vidmm_handle *h, struct w2a **xs)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < (uint32_t)(a % 3) + 1u; k++) {
        struct w2a *x = w2_pick(w, (uint8_t)(b + k * (a >> 2)));
        if (!x)
            break;
        xs[n] = x;
        h[n++] = x->h;
    }
    return n;
}

static void w2_make_resident(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    vidmm_handle h[3];
    struct w2a *xs[3];
    const uint32_t n = w2_list(w, a, b, h, xs);
    if (n == 0)
        return;
    uint32_t flags = c & VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER;
    if ((c & 0x30) == 0x30)
        flags |= VIDMM_MAKE_RESIDENT_MUST_SUCCEED;
    const bool bad = (c & 0xC0) == 0xC0 && (c & 2);
    if (bad)
        flags |= 0x4;
    const struct w2_caller who = w2_caller(w, (uint8_t)(a >> 5), xs[0]);
    /* The model, in the engine's order of refusals: flags, the named process (removed, or
     * another's allocation), offered, locked outside the segments it may use, then the budgets
     * before anything changes. */
    int want = bad ? VIDMM_E_INVALID_ARG : w2_caller_refusal(w, who, xs, n);
    for (uint32_t i = 0; i < n && !want; i++)
        if (xs[i]->offered)
            want = VIDMM_E_INVALID_ARG;
    int group[3];
    bool placed[3];
    for (uint32_t i = 0; i < n; i++) {
        struct vidmm_alloc_info q;
        w2_query(f, xs[i], &q);
        placed[i] = w2_placed(&q);
        if (!want && xs[i]->locks && !w2_placed(&q) && !(xs[i]->set & 0x4))
            want = VIDMM_E_NOT_AVAILABLE;
        group[i] = xs[i]->refs ? xs[i]->group : w2_charge_group(f, xs[i]);
    }
    uint64_t need[W2_PROCS][2] = { { 0 } };
    for (uint32_t i = 0; i < n; i++) {
        bool first = true;
        for (uint32_t j = 0; j < i; j++)
            first &= xs[j] != xs[i];
        if (first && !xs[i]->refs && group[i] >= 0)
            need[xs[i]->proc][group[i]] += xs[i]->size;
    }
    uint64_t trim = 0;
    for (uint32_t p = 0; p < w->nprocs; p++)
        for (int g = 0; g < 2; g++) {
            const uint64_t u = w2_usage(w, p, g);
            const uint64_t limit = (flags & VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER) ? w->group_max[g] : w->budget[p][g];
            if (need[p][g] && u + need[p][g] > w->budget[p][g] && u + need[p][g] > limit)
                trim += u + need[p][g] - limit; /* what to evict before retrying (issue 27) */
        }
    if (!want && trim)
        want = VIDMM_E_NO_MEMORY;
    struct vidmm_make_resident_args mr = { .size_of = sizeof mr, .allocations = h, .count = n, .flags = flags };
    mr.process = w2_caller_id(who);
    mr.bytes_to_trim = 0xFEFEFEFEu;
    int rc = vidmm_wddm2_make_resident(f->dev, &mr);
    if (trace)
        fprintf(stderr, "  make_resident of %u flags 0x%x: %s, model %s, trim %llu model %llu\n", n, flags,
                vidmm_strerror(rc), vidmm_strerror(want), (unsigned long long)mr.bytes_to_trim,
                (unsigned long long)trim);
    const bool must = (flags & VIDMM_MAKE_RESIDENT_MUST_SUCCEED) != 0;
    if (want && want != VIDMM_E_INVALID_ARG && want != VIDMM_E_DEVICE_REMOVED && must) {
        CHECK(rc == VIDMM_E_DEVICE_REMOVED, "MUST_SUCCEED make_resident failing with %s: %s", vidmm_strerror(want),
              vidmm_strerror(rc));
        w2_removed(f, w);
        return;
    }
    if (want) {
        CHECK(rc == want, "make_resident of %u (flags 0x%x, process %u): %s, model %s", n, flags, mr.process,
              vidmm_strerror(rc), vidmm_strerror(want));
        if (want == VIDMM_E_NO_MEMORY)
            CHECK(mr.bytes_to_trim == trim && mr.made_resident == 0, "NumBytesToTrim %llu, model %llu (made %u)",
                  (unsigned long long)mr.bytes_to_trim, (unsigned long long)trim, mr.made_resident);
        return; /* the references are checked unchanged after the step */
    }
    if (rc == VIDMM_E_DEVICE_REMOVED && must) {
        w2_removed(f, w); /* no room: MUST_SUCCEED removed it */
        return;
    }
    if (rc == VIDMM_E_NO_MEMORY) {
        /* No room even after evicting what is off the list: NumBytesToTrim is then the size of
         * the allocation that found none (one not placed before the call), not a budget's. */
        bool one = false;
        for (uint32_t i = 0; i < n; i++)
            one |= !placed[i] && mr.bytes_to_trim == xs[i]->size;
        CHECK(one && mr.made_resident == 0, "make_resident within the budgets: no room, NumBytesToTrim %llu",
              (unsigned long long)mr.bytes_to_trim);
        return;
    }
    CHECK(rc == 0 || rc == VIDMM_PENDING, "make_resident of %u (flags 0x%x): %s", n, flags, vidmm_strerror(rc));
    CHECK(mr.made_resident == n && mr.bytes_to_trim == 0, "made %u of %u resident, NumBytesToTrim %llu",
          mr.made_resident, n, (unsigned long long)mr.bytes_to_trim);
    fuzz_engine_w2_after_gone += w2_any_gone(w);
    if (rc == VIDMM_PENDING) {
        rc = vidmm_wddm2_paging_fence_wait(f->dev, mr.paging_fence, UINT64_MAX);
        CHECK(rc == 0, "paging_fence_wait: %s", vidmm_strerror(rc));
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!xs[i]->refs)
            xs[i]->group = group[i];
        xs[i]->refs++;
        struct vidmm_alloc_info q;
        w2_query(f, xs[i], &q);
        CHECK(w2_placed(&q), "0x%x not resident after make_resident (where %u)", xs[i]->h, q.where);
    }
}

/* NumBytesToTrim of an eviction: what the listed allocations' processes are over budget. */
static uint64_t w2_over(const struct w2 *w, struct w2a *const *xs, uint32_t n)
{
    uint64_t over = 0;
    for (uint32_t p = 0; p < w->nprocs; p++) {
        bool listed = false;
        for (uint32_t i = 0; i < n; i++)
            listed |= xs[i]->proc == p;
        for (int g = 0; listed && g < 2; g++) {
            const uint64_t u = w2_usage(w, p, g);
            over += u > w->budget[p][g] ? u - w->budget[p][g] : 0;
        }
    }
    return over;
}

static void w2_evict(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    vidmm_handle h[3];
    struct w2a *xs[3];
    const uint32_t n = w2_list(w, a, b, h, xs);
    if (n == 0)
        return;
    const uint32_t flags = c & (VIDMM_EVICT_ONLY_IF_NECESSARY | VIDMM_EVICT_NOT_WRITTEN_TO);
    const struct w2_caller who = w2_caller(w, (uint8_t)(a >> 5), xs[0]);
    const int refusal = w2_caller_refusal(w, who, xs, n);
    bool ok = true;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t times = 0;
        for (uint32_t j = 0; j < n; j++)
            times += xs[j] == xs[i];
        ok &= times <= xs[i]->refs;
    }
    struct vidmm_evict_args ea = { .size_of = sizeof ea, .allocations = h, .count = n, .flags = flags };
    ea.process = w2_caller_id(who);
    int rc = vidmm_wddm2_evict(f->dev, &ea);
    if (refusal) {
        CHECK(rc == refusal, "evict of %u by process %u: %s, model %s", n, ea.process, vidmm_strerror(rc),
              vidmm_strerror(refusal));
        return;
    }
    if (trace)
        fprintf(stderr, "  evict of %u flags 0x%x: %s, model %s, trim %llu\n", n, flags, vidmm_strerror(rc),
                ok ? "success" : "refused", (unsigned long long)ea.bytes_to_trim);
    if (!ok) {
        CHECK(rc == VIDMM_E_INVALID_ARG, "evict of %u with more listings than references: %s", n, vidmm_strerror(rc));
        return;
    }
    CHECK(rc == 0, "evict of %u (flags 0x%x): %s", n, flags, vidmm_strerror(rc));
    fuzz_engine_w2_after_gone += w2_any_gone(w);
    for (uint32_t i = 0; i < n; i++)
        if (--xs[i]->refs == 0)
            xs[i]->group = -1;
    CHECK(ea.bytes_to_trim == w2_over(w, xs, n), "evict: NumBytesToTrim %llu, model %llu",
          (unsigned long long)ea.bytes_to_trim, (unsigned long long)w2_over(w, xs, n));
    for (uint32_t i = 0; i < n; i++) {
        if (xs[i]->refs || xs[i]->locks || (flags & VIDMM_EVICT_ONLY_IF_NECESSARY))
            continue;
        struct vidmm_alloc_info q;
        w2_query(f, xs[i], &q);
        CHECK(!w2_placed(&q), "0x%x still in segment %u after its last eviction", xs[i]->h, q.segment_id);
    }
}

static void w2_budget(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    const uint32_t p = (uint32_t)(a % w->nprocs);
    const int g = (a >> 2) & 1;
    switch (c % 3) {
    case 0: {
        const uint64_t bytes = (uint64_t)b * 4096u; /* up to ~1 MiB: above both maxima at the top */
        int rc = vidmm_wddm2_set_budget(f->dev, W2_PROC_ID(p), (uint32_t)g, bytes);
        if (bytes > w->group_max[g]) {
            CHECK(rc == VIDMM_E_INVALID_ARG, "set_budget above the maximum: %s", vidmm_strerror(rc));
            break;
        }
        CHECK(rc == 0, "set_budget: %s", vidmm_strerror(rc));
        w->budget[p][g] = bytes < w->resv[p][g] ? w->resv[p][g] : bytes;
        break;
    }
    case 1: {
        const uint64_t bytes = (uint64_t)b * 4096u;
        int rc = vidmm_wddm2_change_reservation(f->dev, W2_PROC_ID(p), (uint32_t)g, bytes);
        if (bytes > w2_available(w, p, g)) {
            CHECK(rc == VIDMM_E_INVALID_ARG, "reservation above AvailableForReservation: %s", vidmm_strerror(rc));
            break;
        }
        CHECK(rc == 0, "change_reservation: %s", vidmm_strerror(rc));
        w->resv[p][g] = bytes;
        if (w->budget[p][g] < bytes)
            w->budget[p][g] = bytes;
        break;
    }
    default: {
        /* Refused queries leave the result alone; an unknown process has the maximum. */
        struct vidmm_video_memory_info vi = { .size_of = sizeof vi };
        vi.budget = 77;
        int rc = vidmm_wddm2_query_video_memory(f->dev, W2_PROC_ID(p), 2, &vi);
        CHECK(rc == VIDMM_E_INVALID_ARG && vi.budget == 77, "query of group 2: %s", vidmm_strerror(rc));
        rc = vidmm_wddm2_query_video_memory(f->dev, 1000u + b, (uint32_t)g, &vi);
        CHECK(rc == 0 && vi.budget == w->group_max[g] && vi.current_usage == 0 && vi.current_reservation == 0,
              "query of an unknown process: %s", vidmm_strerror(rc));
        break;
    }
    }
}

static void w2_offer(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    vidmm_handle h[3];
    struct w2a *xs[3];
    const uint32_t n = w2_list(w, a, b, h, xs);
    if (n == 0)
        return;
    struct vidmm_offer_args oa = { .size_of = sizeof oa, .count = n };
    if (c & 0x80)
        oa.resources = h; /* no renaming on WDDM2: the same */
    else
        oa.allocations = h;
    oa.priority = (c & 0x70) == 0x70 ? 0 : (uint32_t)(c >> 4) % 4 + 1;
    oa.flags = c & (VIDMM_OFFER_IMMEDIATELY | VIDMM_OFFER_ALLOW_DECOMMIT);
    const struct w2_caller who = w2_caller(w, (uint8_t)(a >> 5), xs[0]);
    oa.process = w2_caller_id(who);
    const int refusal = oa.priority == 0 ? VIDMM_E_INVALID_ARG : w2_caller_refusal(w, who, xs, n);
    bool ok = !refusal;
    for (uint32_t i = 0; i < n; i++)
        ok &= xs[i]->locks == 0;
    int rc = vidmm_offer(f->dev, &oa);
    CHECK(rc == (ok ? 0 : refusal ? refusal : VIDMM_E_INVALID_ARG), "offer of %u (priority %u, process %u): %s", n,
          oa.priority, oa.process, vidmm_strerror(rc));
    for (uint32_t i = 0; ok && i < n; i++) {
        xs[i]->offered = true;
        xs[i]->decommit_asked |= (oa.flags & VIDMM_OFFER_ALLOW_DECOMMIT) != 0;
    }
}

static void w2_reclaim(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    vidmm_handle h[3];
    struct w2a *xs[3];
    const uint32_t n = w2_list(w, a, b, h, xs);
    if (n == 0)
        return;
    w2_drain(f);
    w2_read_log(f, w);
    uint32_t results[3] = { 99, 99, 99 };
    bool discarded[3] = { true, true, true };
    struct vidmm_reclaim_args ra = { .size_of = sizeof ra, .count = n, .results = results, .discarded = discarded };
    if (c & 0x80)
        ra.resources = h;
    else
        ra.allocations = h;
    const struct w2_caller who = w2_caller(w, (uint8_t)(a >> 5), xs[0]);
    ra.process = w2_caller_id(who);
    const int refusal = w2_caller_refusal(w, who, xs, n);
    int rc = vidmm_reclaim(f->dev, &ra);
    if (refusal) {
        CHECK(rc == refusal && results[0] == 99, "reclaim of %u by process %u: %s (result %u), model %s", n,
              ra.process, vidmm_strerror(rc), results[0], vidmm_strerror(refusal));
        return;
    }
    if (trace)
        fprintf(stderr, "  reclaim of %u: %s, results %u %u %u\n", n, vidmm_strerror(rc), results[0], results[1],
                results[2]);
    bool listed = false;
    for (uint32_t i = 0; i < n; i++)
        listed |= xs[i]->refs != 0;
    CHECK(rc == 0 || rc == VIDMM_PENDING || (listed && rc == VIDMM_E_NO_MEMORY), "reclaim of %u: %s", n,
          vidmm_strerror(rc));
    for (uint32_t i = 0; i < n; i++) {
        struct w2a *x = xs[i];
        const uint32_t r = results[i];
        CHECK(r <= VIDMM_RECLAIM_NOT_COMMITTED && discarded[i] == (r != VIDMM_RECLAIM_OK), "reclaim result %u / %d",
              r, discarded[i]);
        for (uint32_t j = 0; j < i; j++)
            CHECK(xs[j] != x || results[j] == r, "one allocation listed twice, results %u and %u", results[j], r);
        if (!x->offered) {
            CHECK(r == VIDMM_RECLAIM_OK, "reclaim of 0x%x, not offered, says %u", x->h, r);
            continue;
        }
        /* Discarded only when the engine discarded it (a DISCARD_CONTENT of it since the offer);
         * NOT_COMMITTED only when an offer allowed the decommit. */
        CHECK(r == VIDMM_RECLAIM_OK || x->discard_seen, "reclaim of 0x%x says %u without a discard", x->h, r);
        CHECK(r != VIDMM_RECLAIM_NOT_COMMITTED || x->decommit_asked, "reclaim of 0x%x says NOT_COMMITTED", x->h);
        if (r != VIDMM_RECLAIM_OK)
            for (uint64_t k = 0; k < x->size; k++)
                x->bytes[k] = (unsigned char)(VIDMM_DISCARDED_PATTERN >> (8 * (k & 3)));
    }
    for (uint32_t i = 0; i < n; i++) {
        xs[i]->offered = xs[i]->decommit_asked = xs[i]->discard_seen = false;
    }
    if (rc == VIDMM_PENDING) {
        rc = vidmm_wddm2_paging_fence_wait(f->dev, ra.paging_fence, UINT64_MAX);
        CHECK(rc == 0, "paging_fence_wait: %s", vidmm_strerror(rc));
    }
    /* Content OK: the checks after the step compare it byte for byte. */
}

/* CPU writes: through the Lock2 pointer while locked, else vidmm_gpu_access(). */
static void w2_write(struct fz *f, struct w2a *x, uint8_t c)
{
    const uint64_t off = (uint64_t)c * 97 % x->size, len = x->size - off < 300 ? x->size - off : 300;
    scribble(f, x->bytes + off, (size_t)len);
    if (x->locks) {
        memcpy(x->lock_ptr + off, x->bytes + off, (size_t)len);
        return;
    }
    int rc = vidmm_gpu_access(f->dev, x->h, off, x->bytes + off, (size_t)len, true);
    CHECK(rc == 0, "gpu_access write of 0x%x: %s", x->h, vidmm_strerror(rc));
}

static void w2_lock2(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    struct w2a *x = w2_pick(w, a);
    if (!x)
        return;
    const uint32_t p = (b & 0x80) ? (uint32_t)(b % w->nprocs) : x->proc;
    const uint32_t flags = (b & 0x7F) == 0x7F ? 1u : 0u;
    struct vidmm_alloc_info q;
    w2_query(f, x, &q);
    /* The model (spec 6.6, 15.23). 1: the lock moves it to an aperture first. */
    int want = 0;
    if (flags)
        want = VIDMM_E_INVALID_ARG;
    else if (w->gone[p])
        want = VIDMM_E_DEVICE_REMOVED; /* its device removed (issue 27 item 5) */
    else if (x->offered || p != x->proc) /* only the creator locks, shared or not (issue 27 item 4) */
        want = VIDMM_E_INVALID_ARG;
    else if (!x->locks && q.where == VIDMM_WHERE_SEGMENT &&
             ((x->flags & VIDMM_ALLOC_CACHED) || !(x->flags & VIDMM_ALLOC_CPU_VISIBLE) || q.segment_id == 2))
        want = (x->set & 0x4) ? 1 : VIDMM_E_INVALID_ARG;
    void *ptr = (void *)0x1234;
    int rc = vidmm_wddm2_lock2(f->dev, W2_PROC_ID(p), x->h, flags, &ptr);
    if (trace)
        fprintf(stderr, "  lock2 of 0x%x (where %u seg %u): %s, model %d\n", x->h, q.where, q.segment_id,
                vidmm_strerror(rc), want);
    if (want < 0) {
        CHECK(rc == want && ptr == (void *)0x1234, "lock2 of 0x%x (flags %u, offered %d, process %u): %s, model %s",
              x->h, flags, x->offered, p, vidmm_strerror(rc), vidmm_strerror(want));
        return;
    }
    if (want == 1 && (rc == VIDMM_E_NO_VIDEO_MEMORY || rc == VIDMM_E_CANT_EVICT_PINNED))
        return; /* no room in the aperture: it stays where it was */
    CHECK(rc == 0, "lock2 of 0x%x (where %u seg %u): %s", x->h, q.where, q.segment_id, vidmm_strerror(rc));
    fuzz_engine_w2_after_gone += w2_any_gone(w);
    if (x->locks) {
        CHECK(ptr == x->lock_ptr, "a nested Lock2 returned another pointer");
    } else {
        x->lock_ptr = ptr;
        w2_query(f, x, &q);
        CHECK(q.where != VIDMM_WHERE_SEGMENT ||
                  (q.segment_id == 1 && (x->flags & VIDMM_ALLOC_CPU_VISIBLE) && !(x->flags & VIDMM_ALLOC_CACHED)),
              "0x%x locked in memory segment %u (flags 0x%x)", x->h, q.segment_id, x->flags);
    }
    x->locks++;
    w2_check_bytes(x->lock_ptr, x->bytes, x->size, x->h, "at Lock2");
    if (c & 1)
        w2_write(f, x, c);
}

static void w2_unlock2(struct fz *f, struct w2 *w, uint8_t a)
{
    struct w2a *x = w2_pick(w, a);
    if (!x)
        return;
    int rc, want = x->locks ? 0 : VIDMM_E_INVALID_ARG;
    if (a & 0x80) { /* naming a process (issue 27 item 4): the creator's, or another's */
        const uint32_t p = (a & 0x40) ? (uint32_t)(a >> 3) % w->nprocs : x->proc;
        rc = vidmm_wddm2_unlock2_process(f->dev, W2_PROC_ID(p), x->h);
        want = w->gone[p] ? VIDMM_E_DEVICE_REMOVED : p != x->proc ? VIDMM_E_INVALID_ARG : want;
    } else {
        rc = vidmm_wddm2_unlock2(f->dev, x->h);
    }
    CHECK(rc == want, "unlock2 of 0x%x (%u locks): %s, model %s", x->h, x->locks, vidmm_strerror(rc),
          vidmm_strerror(want));
    if (rc == 0 && --x->locks == 0)
        x->lock_ptr = NULL;
}

static void w2_update(struct fz *f, struct w2 *w, uint8_t a, uint8_t b, uint8_t c)
{
    struct w2a *x = w2_pick(w, a);
    if (!x)
        return;
    struct vidmm_update_alloc_property_args ua = { .size_of = sizeof ua, .allocation = x->h };
    uint32_t set = x->set, pref = x->pref;
    if (c & 1) {
        ua.property_mask |= VIDMM_UPDATE_SET_SUPPORTED_SEGMENT_SET;
        ua.supported_segment_set = set = (b & 0xE0) == 0xE0 ? 0x8 : w2_sets[b % 7];
    }
    if (c & 2) {
        ua.property_mask |= VIDMM_UPDATE_SET_PREFERRED_SEGMENT;
        ua.preferred_segment = pref = (uint32_t)(c >> 2) % 4; /* 0: none */
    }
    const bool ok = ua.property_mask && !(set & ~0x7u) && set && (!pref || ((set >> (pref - 1)) & 1));
    struct vidmm_alloc_info q;
    w2_query(f, x, &q);
    const bool must_move = w2_placed(&q) && !((set >> (q.segment_id - 1)) & 1);
    const struct w2_caller who = w2_caller(w, (uint8_t)(a >> 5), x);
    ua.process = w2_caller_id(who);
    int rc = vidmm_wddm2_update_alloc_property(f->dev, &ua);
    const int refusal = ua.property_mask ? w2_caller_refusal(w, who, &x, 1) : 0;
    if (refusal) {
        CHECK(rc == refusal, "update_alloc_property by process %u: %s, model %s", ua.process, vidmm_strerror(rc),
              vidmm_strerror(refusal));
        return;
    }
    if (trace)
        fprintf(stderr, "  update of 0x%x: mask %u set 0x%x pref %u (move %d): %s\n", x->h, ua.property_mask, set, pref,
                must_move, vidmm_strerror(rc));
    if (!ok) {
        CHECK(rc == VIDMM_E_INVALID_ARG, "update_alloc_property mask %u set 0x%x pref %u: %s", ua.property_mask, set,
              pref, vidmm_strerror(rc));
        return;
    }
    if (must_move && x->locks) {
        CHECK(rc == VIDMM_E_BUSY, "update_alloc_property moving a locked allocation: %s", vidmm_strerror(rc));
        return;
    }
    /* No room in the new set: unchanged. CANT_EVICT_PINNED when locked allocations stand in the
     * way (the placement's code, place.c; wddm2.h names it only for a pinned allocation). */
    if (must_move && x->refs &&
        (rc == VIDMM_E_NO_VIDEO_MEMORY || rc == VIDMM_E_NO_MEMORY || rc == VIDMM_E_CANT_EVICT_PINNED))
        return;
    CHECK(rc == 0 || rc == VIDMM_PENDING, "update_alloc_property of 0x%x (set 0x%x, move %d): %s", x->h, set,
          must_move, vidmm_strerror(rc));
    if (rc == VIDMM_PENDING) {
        rc = vidmm_wddm2_paging_fence_wait(f->dev, ua.paging_fence, UINT64_MAX);
        CHECK(rc == 0, "paging_fence_wait: %s", vidmm_strerror(rc));
    }
    x->set = set;
    x->pref = pref;
    if (must_move) {
        w2_query(f, x, &q);
        CHECK(x->refs && !x->offered ? w2_placed(&q) : !w2_placed(&q) || ((set >> (q.segment_id - 1)) & 1),
              "0x%x after a move out of its set: where %u", x->h, q.where);
    }
}

/* The GPU touches VA page 1 of process p's space, which nothing ever maps (engine-placed
 * reservations are 64 KiB-aligned above 0, fixed ones above W2_VA_FIXED): a fault that
 * removes p's device and no other (issue 27 item 5). */
static void w2_fault(struct fz *f, struct w2 *w, uint8_t a)
{
    const uint32_t p = (uint32_t)(a % w->nprocs);
    struct vidmm_va_ref ref = { PG, PG, (a & 0x80) ? VIDMM_REF_WRITE : 0, 0 };
    uint64_t fence = 0x77;
    int rc = vidmm_va_submit(w->sp[p], &ref, 1, 0, &fence);
    if (trace)
        fprintf(stderr, "  fault in process %u (removed %d): %s\n", p, w->gone[p], vidmm_strerror(rc));
    CHECK(rc == VIDMM_E_DEVICE_REMOVED && fence == 0x77, "va_submit of an unmapped page: %s", vidmm_strerror(rc));
    if (w->gone[p])
        return; /* refused before it ran: no new fault */
    struct vidmm_gpu_fault gf = { .size_of = sizeof gf };
    rc = vidmm_wddm2_last_fault(f->dev, &gf);
    CHECK(rc == 0 && gf.va == PG && gf.process == W2_PROC_ID(p) && gf.allocation == 0,
          "last_fault: %s, va 0x%llx process %u allocation 0x%x", vidmm_strerror(rc), (unsigned long long)gf.va,
          gf.process, gf.allocation);
    w->faults++;
    w2_gone(w, p);
}

/* Process p destroys its VA space and creates a new one - as an application whose device was
 * removed destroys it and creates another (issue 27 item 5: the removal ends with its last
 * device object; the fuzzer makes no paging queues) - or simply starts over. Its mappings and
 * reservations go; the destroyed space's entries are not written any more, so the replay
 * forgets them (after reading every record queued before the destroy). */
static void w2_recreate(struct fz *f, struct w2 *w, uint8_t a)
{
    uint32_t p = (uint32_t)(a % w->nprocs);
    for (uint32_t k = 0; k < w->nprocs; k++) /* a removed one, when there is one */
        if (w->gone[k])
            p = k;
    w2_drain(f);
    w2_read_log(f, w);
    vidmm_va_space_destroy(w->sp[p]);
    w->sp[p] = NULL;
    for (int m = 0; m < W2_MAPS; m++)
        if (w->map[m].live && w->map[m].proc == p)
            w->map[m].live = false;
    memset(w->res[p], 0, sizeof w->res[p]);
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->npte; i++)
        if (w->pte[i].proc != W2_PROC_ID(p))
            w->pte[k++] = w->pte[i];
    w->npte = k;
    int rc = vidmm_va_space_create(f->dev, W2_PROC_ID(p), &w->sp[p]);
    if (trace)
        fprintf(stderr, "  recreate the space of process %u (removed %d): %s\n", p, w->gone[p], vidmm_strerror(rc));
    CHECK(rc == 0, "va_space_create after destroying the old space (removed %d): %s", w->gone[p], vidmm_strerror(rc));
    fuzz_engine_w2_revived += w->gone[p];
    w->gone[p] = false;
}

static void w2_power(struct fz *f, struct w2 *w, uint8_t a)
{
    struct vidmm_power_args pa = { .size_of = sizeof pa };
    pa.state = (a & 0xF0) == 0xF0 ? 4 : (uint32_t)a % 3 + 1;
    int rc = vidmm_power_transition(f->dev, &pa);
    if (trace)
        fprintf(stderr, "  power %u: %s, evicted %u discarded %u restored %u repaged %u purged %llu\n", pa.state,
                vidmm_strerror(rc), pa.evicted, pa.discarded, pa.restored, pa.repaged,
                (unsigned long long)pa.purged_bytes);
    if (pa.state == 4) {
        CHECK(rc == VIDMM_E_INVALID_ARG, "power state 4: %s", vidmm_strerror(rc));
        return;
    }
    CHECK(rc == 0, "power transition %u: %s", pa.state, vidmm_strerror(rc));
    uint32_t offered = 0, locked = 0;
    for (int k = 0; k < W2_ALLOCS; k++) {
        offered += w->a[k].live && w->a[k].offered;
        locked += w->a[k].live && w->a[k].locks;
    }
    CHECK(pa.discarded <= offered, "power: %u discarded, %u offered", pa.discarded, offered);
    (void)locked;
}

static int w2_run(const uint8_t *data, size_t size)
{
    struct fz *f = calloc(1, sizeof *f);
    struct w2 *w = calloc(1, sizeof *w);
    if (!f || !w) {
        free(f);
        free(w);
        return 0;
    }
    cur_fz = f;
    f->p = data;
    f->n = size;
    f->rnd = 1;
    fuzz_engine_w2_inputs++;
    const uint8_t shape = take(f);
    if (trace)
        fprintf(stderr, "WDDM2 input of %zu bytes, shape %u\n", size + 1, shape);
    static const uint32_t power[4][2] = {
        { 0, 0 },
        { VIDMM_SEGMENT_PRESERVED_DURING_STANDBY,
          VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE },
        { VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PARTIALLY_PRESERVED_DURING_HIBERNATE, 0 },
        { VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE,
          VIDMM_SEGMENT_PRESERVED_DURING_STANDBY | VIDMM_SEGMENT_PRESERVED_DURING_HIBERNATE },
    };
    const uint32_t *pw = power[(shape >> 1) & 3];
    w->segs[0] = (struct vidmm_segment_desc){ 0x10000000ull, 512u << 10, 512u << 10,
                                              VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP | pw[0], 0,
                                              NULL, 0 };
    w->segs[1] = (struct vidmm_segment_desc){ 0x20000000ull, 256u << 10, 256u << 10,
                                              VIDMM_SEGMENT_LOCAL_BUDGET_GROUP | pw[1], 0, NULL, 0 };
    w->segs[2] = (struct vidmm_segment_desc){ 0x40000000ull, 512u << 10, 512u << 10,
                                              VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP, 0, NULL, 0 };
    w->group_max[0] = (512u << 10) + (256u << 10);
    w->group_max[1] = 512u << 10;
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = w->segs;
    dd.segment_count = 3;
    dd.paging_threads = shape & 1;
    dd.wait_timeout_ns = TIMEOUT_NS;
    dd.sysmem_reserve = 64u << 20;
    dd.flags = VIDMM_DEVICE_WDDM2 | VIDMM_DEVICE_LOG_PAGING;
    int rc = vidmm_device_create(&dd, &f->dev);
    CHECK(rc == 0, "WDDM2 device_create: %s", vidmm_strerror(rc));
    static const uint32_t nprocs[4] = { 1, 2, 3, 2 }; /* mostly several: one's removal leaves others */
    w->nprocs = nprocs[(shape >> 3) & 3];
    for (uint32_t p = 0; p < w->nprocs; p++) {
        rc = vidmm_va_space_create(f->dev, W2_PROC_ID(p), &w->sp[p]);
        CHECK(rc == 0, "va_space_create: %s", vidmm_strerror(rc));
        w->budget[p][0] = w->group_max[0];
        w->budget[p][1] = w->group_max[1];
    }
    for (f->step = 0; f->step < MAX_STEPS && f->n > 0 && !f->removed; f->step++) {
        const uint8_t op = take(f), a = take(f), b = take(f), c = take(f);
        if (trace)
            fprintf(stderr, "step %d: w2 op %u (%u) a %u b %u c %u\n", f->step, op % 16u, op, a, b, c);
        switch (op % 16) {
        case 0:
        case 1: w2_create(f, w, a, b, c); break;
        case 2: w2_destroy(f, w, a); break;
        case 3:
        case 4: w2_va(f, w, a, b, c); break;
        case 5: w2_translate(f, w, a, b); break;
        case 6: w2_submit(f, w, a, b, c); break;
        case 7: w2_make_resident(f, w, a, b, c); break;
        case 8: w2_evict(f, w, a, b, c); break;
        case 9: w2_budget(f, w, a, b, c); break;
        case 10: w2_offer(f, w, a, b, c); break;
        case 11: w2_reclaim(f, w, a, b, c); break;
        case 12: w2_lock2(f, w, a, b, c); break;
        case 13: w2_unlock2(f, w, a); break;
        case 14: w2_update(f, w, a, b, c); break;
        default:
            if ((b & 7) == 0)
                w2_power(f, w, a);
            else if ((b & 7) >= 1 && (b & 7) <= 3)
                w2_recreate(f, w, a);
            else if ((b & 7) == 4)
                w2_fault(f, w, a);
            else if (w2_pick(w, a) && !w2_pick(w, a)->offered)
                w2_write(f, w2_pick(w, a), c);
            break;
        }
        w2_check(f, w);
    }
    /* The end: every lock released, content still the model's. */
    for (int i = 0; i < W2_ALLOCS && !f->removed; i++)
        while (w->a[i].live && w->a[i].locks) {
            CHECK(vidmm_wddm2_unlock2(f->dev, w->a[i].h) == 0, "final unlock2");
            w->a[i].locks--;
        }
    w2_check(f, w);
    for (uint32_t p = 0; p < w->nprocs; p++)
        vidmm_va_space_destroy(w->sp[p]);
    vidmm_device_destroy(f->dev);
    for (int i = 0; i < W2_ALLOCS; i++)
        free(w->a[i].bytes);
    cur_fz = NULL;
    free(w);
    free(f);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Swizzling-range sequences (input byte 0 = SR_MARK; issue 25): SWIZZLED allocations of mixed
 * sizes, layouts, mip chains, arrays and 3D sharing one or two swizzling ranges, so that a
 * range's view grows, shrinks, passes from one allocation to another, is written, left
 * protected by its write-watch, lazily filled, or read and written through a narrow lock.
 *
 * Byte 1 is the shape: bit 0 two ranges (else one); bit 1 lazy views (VIDMM_DEVICE_LAZY_RANGES);
 * bits 2-3 how written pages are found: 0 the default, 1 the snapshot (VIDMM_RANGE_DIRTY=
 * snapshot), 2 the write-watch for every part (=watch); bit 4 a paging thread. Then one
 * operation per 4 bytes. The model holds each allocation's packed linear bytes; after each
 * step the allocation it worked on, and every eighth step each allocation, if not locked,
 * reads back (vidmm_gpu_access) as the model: tiled where it is
 * in its segment or was evicted tiled, linear where it was evicted unswizzled (spec 8.1); a
 * lock's view must show the model over its part when the lock returns; every call here must
 * succeed (nothing in these sequences is refused by a rule).
 * ------------------------------------------------------------------------------------------- */
#define SR_MARK 0xFEu
#define SR_SLOTS 6

struct sr_slot {
    bool live, locked, writable, narrow;
    vidmm_handle h;
    struct vidmm_tile_layout layout;
    struct vidmm_surface_desc desc;
    uint64_t tiled, linear;
    unsigned char *model;           /* packed linear bytes */
    unsigned char *data;            /* the lock's pointer */
    uint64_t part_off;              /* where 'data' is in the packed linear order */
    struct vidmm_lock_region reg;
};

struct sr {
    struct sr_slot s[SR_SLOTS];
    uint32_t ranges;
    uint64_t largest;               /* the largest surface a range has shown */
    unsigned grows;
};

/* Inputs (since the process started) whose sequence grew a range's view, and how many views
 * grew in all: the random driver reports them (fuzz_engine_random.c). A growth is counted when
 * a lock takes a range - the device's ranges_acquired count moves - for a surface larger than
 * every one a range showed before on this device: a lower bound with two ranges. */
unsigned long fuzz_engine_sr_inputs, fuzz_engine_sr_grown_inputs, fuzz_engine_sr_grows, fuzz_engine_sr_discards;

static void sr_surface(struct sr_slot *sl, uint8_t k)
{
    static const struct { uint8_t t, e; uint16_t w, h, d, mips, layers; } kinds[12] = {
        { VIDMM_TILING_BLOCK_LINEAR, 4, 32, 32, 1, 1, 1 },     { VIDMM_TILING_BLOCK_LINEAR, 4, 128, 128, 1, 1, 1 },
        { VIDMM_TILING_BLOCK_LINEAR, 4, 256, 256, 1, 1, 1 },   { VIDMM_TILING_BLOCK_LINEAR, 4, 512, 512, 1, 1, 1 },
        { VIDMM_TILING_BLOCK_LINEAR, 8, 256, 128, 1, 4, 1 },   { VIDMM_TILING_BLOCK_LINEAR, 4, 64, 32, 8, 1, 1 },
        { VIDMM_TILING_BLOCK_LINEAR, 4, 128, 64, 1, 3, 4 },    { VIDMM_TILING_INTEL_Y, 4, 256, 96, 1, 1, 1 },
        { VIDMM_TILING_INTEL_X, 4, 512, 256, 1, 1, 1 },        { VIDMM_TILING_MORTON, 2, 128, 128, 1, 2, 3 },
        { VIDMM_TILING_D3D_STD_64K, 4, 320, 200, 1, 1, 1 },    { VIDMM_TILING_BLOCK_LINEAR, 16, 96, 72, 1, 2, 1 },
    };
    const unsigned i = k % 12u;
    sl->layout = (struct vidmm_tile_layout)VIDMM_TILE_LAYOUT_INIT((enum vidmm_tiling)kinds[i].t);
    memset(&sl->desc, 0, sizeof sl->desc);
    sl->desc.size = sizeof sl->desc;
    sl->desc.width = kinds[i].w;
    sl->desc.height = kinds[i].h;
    sl->desc.depth = kinds[i].d;
    sl->desc.element_bytes = kinds[i].e;
    sl->desc.block_width = sl->desc.block_height = 1;
    sl->desc.mip_levels = kinds[i].mips;
    sl->desc.array_layers = kinds[i].layers;
    CHECK(vidmm_surface_tiled_size(&sl->layout, &sl->desc, &sl->tiled) == 0, "surface kind %u: tiled size", i);
    CHECK(vidmm_surface_linear_size(&sl->layout, &sl->desc, &sl->linear) == 0, "surface kind %u: linear size", i);
}

/* The allocation's bytes as vidmm_gpu_access() reads them, packed linear: 'where' says how. */
static void sr_expect(struct fz *f, const struct sr_slot *sl, const char *what)
{
    struct vidmm_alloc_info q = { .size_of = sizeof q };
    CHECK(vidmm_alloc_query(f->dev, sl->h, &q) == 0, "%s: query", what);
    const bool tiled = q.where == VIDMM_WHERE_SEGMENT || q.where == VIDMM_WHERE_APERTURE ||
                       (q.where == VIDMM_WHERE_SYSMEM && q.evicted_swizzled);
    const size_t n = (size_t)(tiled ? sl->tiled : sl->linear);
    unsigned char *raw = malloc(n), *lin = tiled ? malloc((size_t)sl->linear) : raw;
    CHECK(raw && lin, "no memory");
    int rc = vidmm_gpu_access(f->dev, sl->h, 0, raw, n, false);
    CHECK(rc == 0, "%s: gpu_access read of %u: %s", what, sl->h, vidmm_strerror(rc));
    if (tiled)
        CHECK(vidmm_deswizzle_surface(&sl->layout, &sl->desc, raw, n, lin, (size_t)sl->linear) == 0, "deswizzle");
    for (size_t i = 0; i < (size_t)sl->linear; i++)
        CHECK(lin[i] == sl->model[i], "%s: allocation %u (where %u, %s) linear byte %zu is %#x, model %#x", what, sl->h,
              q.where, tiled ? "tiled" : "linear", i, lin[i], sl->model[i]);
    if (tiled)
        free(lin);
    free(raw);
}

/* Calls 'fn' on each row run of slot 'sl''s locked part (its packed linear offset and length). */
static void sr_rows(struct fz *f, struct sr_slot *sl, void (*fn)(struct fz *, struct sr_slot *, size_t, size_t, uint8_t),
                    uint8_t arg)
{
    if (!sl->narrow) {
        fn(f, sl, 0, (size_t)sl->linear, arg);
        return;
    }
    const struct vidmm_lock_region *r = &sl->reg;
    const size_t e = sl->desc.element_bytes;
    for (uint32_t layer = 0; layer < sl->desc.array_layers; layer++)
        for (uint32_t mip = 0; mip < sl->desc.mip_levels; mip++) {
            if ((r->mip != VIDMM_LOCK_REGION_ALL && r->mip != mip) || (r->layer != VIDMM_LOCK_REGION_ALL && r->layer != layer))
                continue;
            struct vidmm_subresource_info si = { .size = sizeof si };
            CHECK(vidmm_surface_subresource(&sl->layout, &sl->desc, mip, layer, &si) == 0, "subresource");
            struct vidmm_box b = (r->flags & VIDMM_LOCK_REGION_BOX) ? r->box
                                                                   : (struct vidmm_box){ 0, 0, 0, si.width, si.height, si.depth };
            const size_t row = (size_t)si.width * e, slice = row * si.height;
            for (uint32_t z = b.z; z < b.z + b.depth; z++)
                for (uint32_t y = b.y; y < b.y + b.height; y++)
                    fn(f, sl, (size_t)si.linear_offset + z * slice + y * row + (size_t)b.x * e, (size_t)b.width * e, arg);
        }
}

static void sr_check_row(struct fz *f, struct sr_slot *sl, size_t off, size_t len, uint8_t arg)
{
    (void)f;
    (void)arg;
    const unsigned char *v = sl->data + (off - sl->part_off);
    for (size_t i = 0; i < len; i++)
        CHECK(v[i] == sl->model[off + i], "the %s view of %u shows %#x at linear byte %zu, model %#x",
              sl->narrow ? "narrow" : "whole", sl->h, v[i], off + i, sl->model[off + i]);
}

static void sr_write_row(struct fz *f, struct sr_slot *sl, size_t off, size_t len, uint8_t arg)
{
    /* Bytes [at, at + n) of the row, chosen by the operation's byte and the running scribble. */
    unsigned char x[1];
    scribble(f, x, 1);
    if (sl->narrow && (x[0] & 7) != 0)
        return; /* one row in eight of a narrow part */
    size_t n = 1 + ((size_t)arg * 97u + x[0]) % (sl->narrow ? len : 3 * PG);
    if (n > len)
        n = len;
    const size_t at = off + ((size_t)x[0] * 4099u + (size_t)arg * 131u) % (len - n + 1);
    unsigned char *v = sl->data + (at - sl->part_off);
    scribble(f, sl->model + at, n);
    memcpy(v, sl->model + at, n);
}

/* Every byte of the row rewritten (after a Discard lock: the model knows the view again). */
static void sr_fill_row(struct fz *f, struct sr_slot *sl, size_t off, size_t len, uint8_t arg)
{
    (void)arg;
    scribble(f, sl->model + off, len);
    memcpy(sl->data + (off - sl->part_off), sl->model + off, len);
}

static struct sr_slot *sr_pick(struct sr *s, uint8_t a)
{
    return &s->s[a % SR_SLOTS];
}

static void sr_create(struct fz *f, struct sr *s, uint8_t a, uint8_t b)
{
    struct sr_slot *sl = sr_pick(s, a);
    if (sl->live)
        return;
    sr_surface(sl, b);
    struct vidmm_alloc_desc d = { .size_of = sizeof d };
    d.size = sl->tiled;
    d.supported_read_set = d.supported_write_set = 0x1;
    d.priority = VIDMM_PRIORITY_NORMAL;
    d.flags = VIDMM_ALLOC_SWIZZLED | VIDMM_ALLOC_CPU_VISIBLE;
    d.layout = &sl->layout;
    d.surface = &sl->desc;
    int rc = vidmm_alloc_create(f->dev, &d, &sl->h);
    CHECK(rc == 0, "create of a %llu-byte swizzled allocation: %s", (unsigned long long)sl->tiled, vidmm_strerror(rc));
    /* Placed, and given tiled content: the model is its untiling. */
    rc = vidmm_make_resident(f->dev, &sl->h, 1, NULL);
    CHECK(rc == 0, "make_resident: %s", vidmm_strerror(rc));
    unsigned char *tiled = malloc((size_t)sl->tiled);
    sl->model = malloc((size_t)sl->linear);
    CHECK(tiled && sl->model, "no memory");
    scribble(f, tiled, (size_t)sl->tiled);
    rc = vidmm_gpu_access(f->dev, sl->h, 0, tiled, (size_t)sl->tiled, true);
    CHECK(rc == 0, "gpu_access write: %s", vidmm_strerror(rc));
    CHECK(vidmm_deswizzle_surface(&sl->layout, &sl->desc, tiled, (size_t)sl->tiled, sl->model, (size_t)sl->linear) == 0,
          "deswizzle");
    free(tiled);
    sl->live = true;
}

static void sr_destroy(struct fz *f, struct sr *s, uint8_t a)
{
    struct sr_slot *sl = sr_pick(s, a);
    if (!sl->live)
        return;
    int rc = vidmm_alloc_destroy(f->dev, sl->h); /* a lock held on it ends with it */
    CHECK(rc == 0, "destroy: %s", vidmm_strerror(rc));
    free(sl->model);
    memset(sl, 0, sizeof *sl);
}

static void sr_lock(struct fz *f, struct sr *s, uint8_t a, uint8_t b, uint8_t c)
{
    struct sr_slot *sl = sr_pick(s, a);
    if (!sl->live || sl->locked)
        return;
    struct vidmm_lock_args la;
    memset(&la, 0, sizeof la);
    la.allocation = sl->h;
    la.flags = VIDMM_LOCK_ACQUIRE_APERTURE | ((b & 3) == 0 ? VIDMM_LOCK_READ_ONLY : 0);
    struct vidmm_lock_region r = VIDMM_LOCK_REGION_INIT;
    sl->narrow = (b & 0x0C) == 0;
    /* A whole writable lock is a Discard one now and then (c is free for whole locks): its view
     * shows undefined bytes (lock.c range_open() does not untile it), so the model rewrites all
     * of it below rather than checking it - the dynamic-texture pattern. */
    const bool discard = !sl->narrow && (b & 3) != 0 && (c & 1);
    if (discard)
        la.flags |= VIDMM_LOCK_DISCARD;
    if (sl->narrow) {
        r.mip = (uint32_t)(c % sl->desc.mip_levels);
        r.layer = (uint32_t)((c >> 2) % sl->desc.array_layers);
        if ((b & 0x30) == 0x10 && sl->desc.array_layers > 1)
            r.mip = VIDMM_LOCK_REGION_ALL;
        else if ((b & 0x30) == 0x20 && sl->desc.mip_levels > 1)
            r.layer = VIDMM_LOCK_REGION_ALL;
        else if (b & 0x20) {
            struct vidmm_subresource_info si = { .size = sizeof si };
            CHECK(vidmm_surface_subresource(&sl->layout, &sl->desc, r.mip, r.layer, &si) == 0, "subresource");
            unsigned char x[4];
            scribble(f, x, 4);
            r.flags = VIDMM_LOCK_REGION_BOX;
            r.box.width = 1 + x[0] % si.width;
            r.box.height = 1 + x[1] % si.height;
            r.box.depth = 1 + x[2] % si.depth;
            r.box.x = x[3] % (si.width - r.box.width + 1);
            r.box.y = (uint32_t)(x[0] ^ x[3]) % (si.height - r.box.height + 1);
            r.box.z = x[1] % (si.depth - r.box.depth + 1);
        }
    }
    struct vidmm_stats st0 = { .size_of = sizeof st0 }, st1 = { .size_of = sizeof st1 };
    CHECK(vidmm_get_stats(f->dev, &st0) == 0, "stats");
    int rc = sl->narrow ? vidmm_lock_region(f->dev, &la, &r) : vidmm_lock(f->dev, &la);
    CHECK(rc == 0 && la.data != NULL, "%s range lock of %u (%llu linear bytes): %s", sl->narrow ? "narrow" : "whole",
          sl->h, (unsigned long long)sl->linear, vidmm_strerror(rc));
    CHECK(vidmm_get_stats(f->dev, &st1) == 0, "stats");
    if (st1.ranges_acquired > st0.ranges_acquired && sl->linear > s->largest) {
        if (s->largest != 0)
            s->grows++;
        s->largest = sl->linear;
    }
    sl->locked = true;
    sl->writable = !(la.flags & VIDMM_LOCK_READ_ONLY);
    sl->data = la.data;
    sl->part_off = sl->narrow ? r.offset : 0;
    sl->reg = r;
    if (discard) {
        /* Idle and never submitted: the current instance is renamed to itself (spec 7). */
        CHECK(la.allocation == sl->h, "a Discard lock of idle %u returned instance %u", sl->h, la.allocation);
        fuzz_engine_sr_discards++;
        sr_rows(f, sl, sr_fill_row, 0);
        return;
    }
    sr_rows(f, sl, sr_check_row, 0);
}

static void sr_write(struct fz *f, struct sr *s, uint8_t a, uint8_t b)
{
    struct sr_slot *sl = sr_pick(s, a);
    if (sl->live && sl->locked && sl->writable)
        sr_rows(f, sl, sr_write_row, b);
}

static void sr_unlock(struct fz *f, struct sr *s, uint8_t a)
{
    struct sr_slot *sl = sr_pick(s, a);
    if (!sl->live || !sl->locked)
        return;
    int rc = vidmm_unlock(f->dev, 1, &sl->h);
    CHECK(rc == 0, "unlock of %u: %s", sl->h, vidmm_strerror(rc));
    sl->locked = false;
}

static void sr_move(struct fz *f, struct sr *s, uint8_t a, uint8_t b)
{
    struct sr_slot *sl = sr_pick(s, a);
    if (!sl->live || sl->locked)
        return;
    int rc = (b & 1) ? vidmm_evict(f->dev, &sl->h, 1) : vidmm_make_resident(f->dev, &sl->h, 1, NULL);
    CHECK(rc == 0, "%s of %u: %s", (b & 1) ? "evict" : "make_resident", sl->h, vidmm_strerror(rc));
}

static int sr_run(const uint8_t *data, size_t size)
{
    struct fz *f = calloc(1, sizeof *f);
    struct sr *s = calloc(1, sizeof *s);
    if (!f || !s) {
        free(f);
        free(s);
        return 0;
    }
    cur_fz = f;
    f->p = data;
    f->n = size;
    f->rnd = 1;
    const uint8_t shape = take(f);
    if (trace)
        fprintf(stderr, "swizzling-range input of %zu bytes, shape %u\n", size + 1, shape);
    static const struct vidmm_segment_desc seg = { 0x10000000ull, 16u << 20, 16u << 20, VIDMM_SEGMENT_CPU_VISIBLE, 0,
                                                   NULL, 0 };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = &seg;
    dd.segment_count = 1;
    dd.swizzling_ranges = s->ranges = 1 + (shape & 1);
    dd.paging_threads = (shape >> 4) & 1;
    dd.wait_timeout_ns = TIMEOUT_NS;
    dd.sysmem_reserve = 64u << 20;
    dd.flags = (shape & 2) ? VIDMM_DEVICE_LAZY_RANGES : 0;
    const unsigned dirty = (shape >> 2) & 3;
    if (dirty == 1 || dirty == 2)
        setenv("VIDMM_RANGE_DIRTY", dirty == 1 ? "snapshot" : "watch", 1);
    int rc = vidmm_device_create(&dd, &f->dev);
    unsetenv("VIDMM_RANGE_DIRTY");
    CHECK(rc == 0, "device_create: %s", vidmm_strerror(rc));
    for (f->step = 0; f->step < MAX_STEPS && f->n > 0; f->step++) {
        const uint8_t op = take(f), a = take(f), b = take(f), c = take(f);
        if (trace)
            fprintf(stderr, "step %d: sr op %u (%u) a %u b %u c %u\n", f->step, op % 8u, op, a, b, c);
        switch (op % 8) {
        case 0:
        case 1: sr_create(f, s, a, b); break;
        case 2: sr_destroy(f, s, a); break;
        case 3:
        case 4: sr_lock(f, s, a, b, c); break;
        case 5: sr_write(f, s, a, b); break;
        case 6: sr_unlock(f, s, a); break;
        default: sr_move(f, s, a, b); break;
        }
        /* The slot the step worked on at once, every slot every eighth step (an untiling of
         * up to six surfaces per step would make the valgrind replay crawl). */
        for (int i = 0; i < SR_SLOTS; i++)
            if (s->s[i].live && !s->s[i].locked && ((f->step & 7) == 7 || i == a % SR_SLOTS))
                sr_expect(f, &s->s[i], "after the step");
    }
    /* The end: every lock released, every allocation's content the model's. */
    for (int i = 0; i < SR_SLOTS; i++) {
        struct sr_slot *sl = &s->s[i];
        if (sl->live && sl->locked)
            sr_unlock(f, s, (uint8_t)i);
        if (sl->live)
            sr_expect(f, sl, "at the end");
        free(sl->model);
    }
    vidmm_device_destroy(f->dev);
    fuzz_engine_sr_inputs++;
    fuzz_engine_sr_grown_inputs += s->grows > 0;
    fuzz_engine_sr_grows += s->grows;
    cur_fz = NULL;
    free(s);
    free(f);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The target.
 * ------------------------------------------------------------------------------------------- */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (trace < 0)
        trace = getenv("VIDMM_FUZZ_TRACE") != NULL;
    if (size > 0 && data[0] == W2_MARK)
        return w2_run(data + 1, size - 1);
    if (size > 0 && data[0] == SR_MARK)
        return sr_run(data + 1, size - 1);
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
    /* Bits 5-6: the plain locks' write tracking as the tests force it (VIDMM_LOCK_DIRTY, read at
     * the device's first lock that could track): every eligible lock tracked whole, each a
     * probe, or by the stores' data alone (3); else (0) the policy, which on a machine that
     * finds tracking dear tracks nothing. */
    static const char *const watch_modes[4] = { NULL, "always", "probe", "data" };
    const unsigned watch = (shape >> 5) & 3;
    if (watch != 0)
        setenv("VIDMM_LOCK_DIRTY", watch_modes[watch], 1);
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
    if (watch != 0)
        unsetenv("VIDMM_LOCK_DIRTY");
    for (int i = 0; i < MAX_GROUPS; i++)
        free_group(&f->g[i]);
    cur_fz = NULL;
    free(f);
    return 0;
}
