/* SPDX-License-Identifier: MIT */
/* examples/wddm2_frame_loop.c - a small WDDM2-style frame loop on vidmm: two processes share
 * one device's video memory, each with its own GPU virtual-address space and budget. Every
 * frame, each process makes its frame's residency set resident (render target, two textures,
 * one of its regenerable caches), submits work naming GPU VAs, plays the GPU (reads the
 * textures and the cache through vidmm_va_translate(), checks them, draws into the render
 * target), and afterwards offers the cache it used: when memory runs short the engine
 * discards offered caches first, and the process regenerates one when a later reclaim says
 * its content was discarded. Midway the host shrinks one process's budget, and the system
 * goes through a standby. Every byte the spec says must survive is checked; the program
 * prints a short summary and exits 0 when nothing was lost or refused unexpectedly.
 *
 * Build: part of the vidmm build (examples/CMakeLists.txt); run: ./wddm2_frame_loop [frames]. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vidmm/vidmm.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define PAGE ((uint64_t)VIDMM_PAGE_SIZE)

#define NPROC 2
#define NTEX 4
#define NCACHE 4
#define RT_SIZE (512 * KiB)
#define TEX_SIZE (256 * KiB)
#define CACHE_SIZE (512 * KiB)
#define VRAM_SIZE (6 * MiB)     /* segment 1: local video memory */
#define GART_SIZE (4 * MiB)     /* segment 2: an aperture (system memory the GPU can map) */

struct buffer {
    vidmm_handle h;
    uint64_t va;
    uint64_t size;
    uint32_t seed;              /* what its content is derived from */
    uint32_t gen;               /* caches: regenerated this many times */
    bool offered;
};

struct proc {
    uint32_t id;
    vidmm_va_space *sp;
    struct buffer rt, tex[NTEX], cache[NCACHE];
    uint32_t quality;           /* textures per frame: 2, or 1 under a small budget */
};

static struct {
    unsigned frames, make_resident_calls, make_resident_retries, over_budget, offers, reclaims_ok,
        reclaims_discarded, regenerations, checked_bytes_mib, mismatches, errors;
    uint64_t checked_bytes;
} st;

static void fail(const char *what, int rc)
{
    fprintf(stderr, "wddm2_frame_loop: %s: %d (%s)\n", what, rc, vidmm_strerror(rc));
    st.errors++;
}

/* The content of a buffer: a cheap function of its seed and the byte position. */
static uint8_t content_byte(uint32_t seed, uint64_t i)
{
    uint32_t x = seed * 2654435761u ^ (uint32_t)(i >> 2) * 40503u;
    return (uint8_t)(x >> (8 * (i & 3)));
}

/* The GPU side: write or check 'b''s bytes through the process's page tables, page by page,
 * as an emulated GPU would (vidmm_va_translate() per access). */
static void gpu_fill(struct proc *p, const struct buffer *b)
{
    for (uint64_t off = 0; off < b->size; off += PAGE) {
        struct vidmm_va_translation t;
        int rc = vidmm_va_translate(p->sp, b->va + off, &t);
        if (rc) {
            fail("translate (write)", rc);
            return;
        }
        uint8_t *dst = t.cpu;
        for (uint64_t i = 0; i < PAGE; i++)
            dst[i] = content_byte(b->seed, off + i);
    }
}

static bool gpu_check(struct proc *p, const struct buffer *b, const char *what)
{
    for (uint64_t off = 0; off < b->size; off += PAGE) {
        struct vidmm_va_translation t;
        int rc = vidmm_va_translate(p->sp, b->va + off, &t);
        if (rc) {
            fail("translate (read)", rc);
            return false;
        }
        const uint8_t *src = t.cpu;
        for (uint64_t i = 0; i < PAGE; i++) {
            if (src[i] != content_byte(b->seed, off + i)) {
                fprintf(stderr, "wddm2_frame_loop: process %u: %s: byte %" PRIu64 " lost\n", p->id, what, off + i);
                st.mismatches++;
                return false;
            }
        }
    }
    st.checked_bytes += b->size;
    return true;
}

static int create(vidmm_device *dev, struct proc *p, struct buffer *b, uint64_t size, uint32_t seed, uint32_t prio,
                  uint32_t set)
{
    struct vidmm_alloc_desc d;
    memset(&d, 0, sizeof d);
    d.size_of = sizeof d;
    d.size = size;
    d.supported_read_set = d.supported_write_set = set; /* bit 0: VRAM, bit 1: the aperture */
    d.preferred_segment = 1;
    d.flags = VIDMM_ALLOC_CPU_VISIBLE;
    d.priority = prio;
    d.process = p->id;
    b->size = size;
    b->seed = seed;
    int rc = vidmm_alloc_create(dev, &d, &b->h);
    if (!rc)
        rc = vidmm_va_reserve(p->sp, 0, size, &b->va);
    if (!rc)
        rc = vidmm_va_map(p->sp, b->va, b->h, 0, size);
    return rc;
}

/* make_resident() makes 'n' buffers resident, waiting for the paging. Over budget or out of
 * room, the process offers its caches not in the set and tries again (the engine discards
 * offered allocations first); a budget that still does not fit lowers the quality. */
static int make_resident(vidmm_device *dev, struct proc *p, vidmm_handle *h, uint32_t n)
{
    for (int attempt = 0;; attempt++) {
        struct vidmm_make_resident_args a;
        memset(&a, 0, sizeof a);
        a.size_of = sizeof a;
        a.allocations = h;
        a.count = n;
        st.make_resident_calls++;
        int rc = vidmm_wddm2_make_resident(dev, &a);
        if (rc == VIDMM_PENDING)
            rc = vidmm_wddm2_paging_fence_wait(dev, a.paging_fence, UINT64_MAX);
        if (rc != VIDMM_E_NO_MEMORY || attempt == 2)
            return rc;
        st.make_resident_retries++;
        /* NumBytesToTrim: offer what can be regenerated, then retry. */
        for (int c = 0; c < NCACHE; c++) {
            struct buffer *b = &p->cache[c];
            bool in_set = false;
            for (uint32_t k = 0; k < n; k++)
                in_set |= h[k] == b->h;
            if (in_set || b->offered)
                continue;
            struct vidmm_offer_args o;
            memset(&o, 0, sizeof o);
            o.size_of = sizeof o;
            o.allocations = &b->h;
            o.count = 1;
            o.priority = VIDMM_OFFER_PRIORITY_LOW;
            if (vidmm_offer(dev, &o) == 0) {
                b->offered = true;
                st.offers++;
            }
        }
    }
}

/* reclaim() takes cache 'b' back; discarded content is regenerated by the GPU later. Returns
 * whether it must be regenerated. */
static bool reclaim(vidmm_device *dev, struct buffer *b)
{
    if (!b->offered)
        return false;
    struct vidmm_reclaim_args r;
    memset(&r, 0, sizeof r);
    r.size_of = sizeof r;
    r.allocations = &b->h;
    r.count = 1;
    uint32_t result = VIDMM_RECLAIM_OK;
    r.results = &result;
    int rc = vidmm_reclaim(dev, &r);
    if (rc == VIDMM_PENDING)
        rc = vidmm_wddm2_paging_fence_wait(dev, r.paging_fence, UINT64_MAX);
    if (rc)
        fail("reclaim", rc);
    b->offered = false;
    if (result == VIDMM_RECLAIM_OK) {
        st.reclaims_ok++;
        return false;
    }
    st.reclaims_discarded++;
    return true;
}

static void frame(vidmm_device *dev, struct proc *p, unsigned f)
{
    struct buffer *tex[2] = { &p->tex[f % NTEX], &p->tex[(f + 1) % NTEX] };
    struct buffer *cache = &p->cache[f % NCACHE];
    const bool regen = reclaim(dev, cache);
    vidmm_handle set[4] = { p->rt.h, cache->h, tex[0]->h, tex[1]->h };
    uint32_t n = 2 + p->quality;
    int rc = make_resident(dev, p, set, n);
    if (rc == VIDMM_E_NO_MEMORY && p->quality > 1) {
        st.over_budget++;
        p->quality = 1; /* the budget shrank: render with fewer textures */
        n = 3;
        rc = make_resident(dev, p, set, n);
    }
    if (rc) {
        fail("make resident", rc);
        return;
    }
    struct vidmm_va_ref refs[4] = { { p->rt.va, p->rt.size, VIDMM_REF_WRITE, 0 },
                                    { cache->va, cache->size, regen ? VIDMM_REF_WRITE : 0, 0 },
                                    { tex[0]->va, tex[0]->size, 0, 0 },
                                    { tex[1]->va, tex[1]->size, 0, 0 } };
    uint64_t fence = 0;
    rc = vidmm_va_submit(p->sp, refs, n, 0, &fence);
    if (rc) {
        fail("submit", rc);
        return;
    }
    /* The GPU: the last frame's image must still be there, the textures and (unless
     * regenerated now) the cache intact; then draw. */
    if (f > 0)
        gpu_check(p, &p->rt, "render target");
    for (uint32_t k = 0; k < p->quality; k++)
        gpu_check(p, tex[k], "texture");
    if (regen) {
        cache->gen++;
        cache->seed = 0xCAC00000u + p->id * 256u + (uint32_t)(cache - p->cache) * 16u + cache->gen;
        gpu_fill(p, cache);
        st.regenerations++;
    } else {
        gpu_check(p, cache, "cache");
    }
    p->rt.seed = 0x57000000u + p->id * 4096u + f;
    gpu_fill(p, &p->rt);
    if ((rc = vidmm_fence_signal(dev, fence)) != 0)
        fail("fence", rc);
    /* The frame's references go; what is not needed soon may be evicted when room is needed. */
    struct vidmm_evict_args e;
    memset(&e, 0, sizeof e);
    e.size_of = sizeof e;
    e.allocations = set + 1;
    e.count = n - 1;
    e.flags = VIDMM_EVICT_ONLY_IF_NECESSARY;
    if ((rc = vidmm_wddm2_evict(dev, &e)) != 0)
        fail("evict", rc);
    /* The cache can be regenerated: offer it until it is needed again. Even caches are costly
     * to rebuild (HIGH: discarded last), odd ones cheap (LOW: discarded first). */
    struct vidmm_offer_args o;
    memset(&o, 0, sizeof o);
    o.size_of = sizeof o;
    o.allocations = &cache->h;
    o.count = 1;
    o.priority = (f % NCACHE) % 2 ? VIDMM_OFFER_PRIORITY_LOW : VIDMM_OFFER_PRIORITY_HIGH;
    if ((rc = vidmm_offer(dev, &o)) != 0)
        fail("offer", rc);
    else
        cache->offered = true, st.offers++;
}

int main(int argc, char **argv)
{
    const unsigned frames = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 60;
    struct vidmm_segment_desc segs[2];
    memset(segs, 0, sizeof segs);
    segs[0].base_address = 0x100000000ull;
    segs[0].size = segs[0].commit_limit = VRAM_SIZE;
    segs[0].flags = VIDMM_SEGMENT_CPU_VISIBLE | VIDMM_SEGMENT_LOCAL_BUDGET_GROUP; /* not preserved in standby */
    segs[1].base_address = 0x200000000ull;
    segs[1].size = segs[1].commit_limit = GART_SIZE;
    segs[1].flags = VIDMM_SEGMENT_APERTURE | VIDMM_SEGMENT_NONLOCAL_BUDGET_GROUP;
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = segs;
    dd.segment_count = 2;
    dd.flags = VIDMM_DEVICE_WDDM2;
    dd.paging_threads = 1;
    vidmm_device *dev = NULL;
    int rc = vidmm_device_create(&dd, &dev);
    if (rc) {
        fail("device create", rc);
        return 1;
    }
    struct proc procs[NPROC];
    memset(procs, 0, sizeof procs);
    for (int i = 0; i < NPROC && !st.errors; i++) {
        struct proc *p = &procs[i];
        p->id = 1000u + (uint32_t)i;
        p->quality = 2;
        if ((rc = vidmm_va_space_create(dev, p->id, &p->sp)) != 0) {
            fail("VA space", rc);
            break;
        }
        /* The render target may fall back to the aperture; textures and caches need VRAM. */
        rc = create(dev, p, &p->rt, RT_SIZE, 0, VIDMM_PRIORITY_HIGH, 0x3);
        for (int t = 0; !rc && t < NTEX; t++)
            rc = create(dev, p, &p->tex[t], TEX_SIZE, 0x7E000000u + p->id * 16u + (uint32_t)t, VIDMM_PRIORITY_NORMAL,
                        0x1);
        for (int c = 0; !rc && c < NCACHE; c++)
            rc = create(dev, p, &p->cache[c], CACHE_SIZE, 0xCAC00000u + p->id * 256u + (uint32_t)c * 16u,
                        VIDMM_PRIORITY_LOW, 0x1);
        if (rc) {
            fail("create", rc);
            break;
        }
        /* Upload the textures and caches (the application writing them once). */
        for (int t = 0; t < NTEX + NCACHE; t++) {
            struct buffer *b = t < NTEX ? &p->tex[t] : &p->cache[t - NTEX];
            uint8_t *tmp = malloc(b->size);
            if (!tmp)
                return 1;
            for (uint64_t k = 0; k < b->size; k++)
                tmp[k] = content_byte(b->seed, k);
            if ((rc = vidmm_gpu_access(dev, b->h, 0, tmp, b->size, true)) != 0)
                fail("upload", rc);
            free(tmp);
        }
        /* The render target stays on the residency list for the whole run. */
        if ((rc = make_resident(dev, p, &p->rt.h, 1)) != 0)
            fail("render target", rc);
    }
    struct vidmm_power_args pw;
    memset(&pw, 0, sizeof pw);
    for (unsigned f = 0; f < frames && !st.errors; f++) {
        if (f == frames / 2) {
            /* The host needs memory: the second process's local budget shrinks to 1.25 MiB. */
            if ((rc = vidmm_wddm2_set_budget(dev, procs[1].id, VIDMM_SEGMENT_GROUP_LOCAL, 1280 * KiB)) != 0)
                fail("set budget", rc);
        }
        if (f == frames * 3 / 4) {
            /* The laptop lid closes: standby (local video memory is not preserved). */
            pw.size_of = sizeof pw;
            pw.state = VIDMM_POWER_STANDBY;
            if ((rc = vidmm_power_transition(dev, &pw)) != 0)
                fail("standby", rc);
        }
        for (int i = 0; i < NPROC; i++)
            frame(dev, &procs[i], f);
        st.frames++;
    }
    struct vidmm_stats s;
    memset(&s, 0, sizeof s);
    s.size_of = sizeof s;
    (void)vidmm_get_stats(dev, &s);
    printf("wddm2_frame_loop: %u frames x %d processes on %llu KiB of video memory\n", st.frames, NPROC,
           (unsigned long long)(VRAM_SIZE / KiB));
    for (int i = 0; i < NPROC; i++) {
        struct vidmm_video_memory_info vm;
        memset(&vm, 0, sizeof vm);
        vm.size_of = sizeof vm;
        if (vidmm_wddm2_query_video_memory(dev, procs[i].id, VIDMM_SEGMENT_GROUP_LOCAL, &vm) == 0)
            printf("  process %u: local budget %llu KiB, usage %llu KiB, %u texture(s) per frame\n", procs[i].id,
                   (unsigned long long)(vm.budget / KiB), (unsigned long long)(vm.current_usage / KiB),
                   procs[i].quality);
    }
    printf("  make-resident calls %u (%u retried after offering caches, %u over budget)\n", st.make_resident_calls,
           st.make_resident_retries, st.over_budget);
    printf("  offers %u, reclaims %u intact / %u discarded, caches regenerated %u\n", st.offers, st.reclaims_ok,
           st.reclaims_discarded, st.regenerations);
    printf("  standby: %u evicted, %u discarded, %u paged back\n", pw.evicted, pw.discarded, pw.repaged);
    printf("  paging: %llu evictions, %llu MiB in, %llu MiB out; %llu MiB checked, %u lost, %u errors\n",
           (unsigned long long)s.evictions, (unsigned long long)(s.bytes_paged_in / MiB),
           (unsigned long long)(s.bytes_paged_out / MiB), (unsigned long long)(st.checked_bytes / MiB), st.mismatches,
           st.errors);
    for (int i = 0; i < NPROC; i++)
        vidmm_va_space_destroy(procs[i].sp);
    vidmm_device_destroy(dev);
    /* Success: nothing lost, nothing refused, and the run did exercise discards. */
    return st.mismatches == 0 && st.errors == 0 && st.frames == frames ? 0 : 1;
}
