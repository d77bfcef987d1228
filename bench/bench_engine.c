/* SPDX-License-Identifier: MIT */
/* bench/bench_engine.c - the video memory manager (vidmm/device.h, lib/engine/): the costs
 * issue 4 sets targets for, through the public API only.
 *
 *   engine/lock_unlock/resident/65536        vidmm_lock() (flags 0) + vidmm_unlock() of a 64 KiB
 *       allocation made resident in a CPU-visible memory segment; one paging thread. The target
 *       is on the median repetition (b_report.c), not the best.
 *   engine/create_destroy/live/N             vidmm_alloc_create() + vidmm_alloc_destroy() of a
 *       64 KiB allocation (never placed) with N = 1000, 10000, 100000 others alive.
 *   engine/create_place_destroy/live/N       the same with vidmm_make_resident() in between, 4 KiB
 *       allocations, N others resident in a 1 GiB segment. The N were placed with one free 4 KiB
 *       hole after each (2N placed, every other one destroyed), so the segment's free space is N
 *       blocks, not one: placement has to search a large free-space structure, as it does in a
 *       long-running process, rather than bump a pointer. No paging thread (the caller runs the
 *       4 KiB FILL), so that a thread hand-off does not hide what placement costs.
 *   engine/submit_pressure/64x1MiB/134217728 vidmm_submit() of 64 allocations of 1 MiB into a full
 *       64 MiB segment, then vidmm_fence_signal(): 128 allocations, the two halves submitted in
 *       turn, so that every submission evicts the other half (64 MiB out) and pages its own in
 *       (64 MiB in). The built-in executor, one paging thread. GB/s counts both directions.
 *   engine/evict_pagein/builtin/134217728    vidmm_evict() then vidmm_make_resident() of one
 *       64 MiB allocation in a 64 MiB memory segment: 2 x 64 MiB through the built-in executor,
 *       next to the same run's memcpy of 64 MiB (so "x libc" is the ratio to two memcpys) and
 *       bare streaming-store copy loop of 64 MiB ("x ceiling").
 *
 * The last number of a name is what one iteration moves, in bytes, for the two paging cases; for
 * the others it is the allocation size (lock) or the number of live allocations, and those cases
 * move no bytes (b_case.bytes is 0: the table shows no GB/s for them).
 *
 * Each case's device and live allocations are built the first time the case runs and kept until
 * the program exits (Google Benchmark calls a body once per repetition, interleaved with the other
 * cases): building 100000 live allocations takes a fraction of a second and is never timed. The
 * first run of each case checks that the calls do what they should before any figure counts. */
#include "b_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one function bench_main.c calls (declared there too: b_common.h is shared). */
void b_engine_cases(void);

#define ENG_LOCK_SIZE (64 * B_KiB)
#define ENG_CREATE_SIZE (64 * B_KiB)
#define ENG_PLACED_SIZE (4 * B_KiB)
#define ENG_PLACED_SEGMENT ((size_t)1024 * B_MiB)
#define ENG_PRESSURE_SEGMENT (64 * B_MiB)
#define ENG_PRESSURE_SIZE (1 * B_MiB)
#define ENG_PRESSURE_ALLOCS 128u
#define ENG_PRESSURE_REFS 64u
#define ENG_EVICT_SIZE (64 * B_MiB)
/* make_resident() batch while building a fixture: small, because the engine's place_all()
 * (lib/engine/submit.c) compares every reference with every other one, so a list's cost grows
 * with the square of its length. */
#define ENG_SETUP_BATCH 256u

enum eng_kind { ENG_LOCK, ENG_CREATE, ENG_CREATE_PLACED, ENG_PRESSURE, ENG_EVICT };

struct eng_spec {
    enum eng_kind kind;
    const char *variant, *backend;
    uint64_t label;        /* the last component of the name */
    uint64_t bytes;        /* bytes one iteration moves (0: none) */
    uint32_t live;         /* ENG_CREATE*: allocations alive during the loop */
};

static const struct eng_spec specs[] = {
    { ENG_LOCK, "lock_unlock", "resident", ENG_LOCK_SIZE, 0, 0 },
    { ENG_CREATE, "create_destroy", "live", 1000, 0, 1000 },
    { ENG_CREATE, "create_destroy", "live", 10000, 0, 10000 },
    { ENG_CREATE, "create_destroy", "live", 100000, 0, 100000 },
    { ENG_CREATE_PLACED, "create_place_destroy", "live", 1000, 0, 1000 },
    { ENG_CREATE_PLACED, "create_place_destroy", "live", 10000, 0, 10000 },
    { ENG_CREATE_PLACED, "create_place_destroy", "live", 100000, 0, 100000 },
    { ENG_PRESSURE, "submit_pressure", "64x1MiB", 2 * ENG_PRESSURE_REFS * ENG_PRESSURE_SIZE,
      2 * ENG_PRESSURE_REFS * ENG_PRESSURE_SIZE, 0 },
    { ENG_EVICT, "evict_pagein", "builtin", 2 * ENG_EVICT_SIZE, 2 * ENG_EVICT_SIZE, 0 },
};
#define ENG_NSPECS (sizeof(specs) / sizeof(specs[0]))

/* What a case keeps between its runs. */
struct eng_fixture {
    int state;                     /* 0 not built, 1 ready, -1 building failed */
    char why[160];                 /* the failure, reported on every run */
    vidmm_device *dev;
    vidmm_handle h;                /* ENG_LOCK, ENG_EVICT: the allocation */
    void *cpu;                     /* ENG_LOCK: where make-resident placed it */
    vidmm_handle *live;            /* ENG_CREATE*: the live allocations; ENG_PRESSURE: all 128 */
    uint32_t nlive;
    struct vidmm_alloc_ref *refs;  /* ENG_PRESSURE: two lists of 64 */
    unsigned half;                 /* ENG_PRESSURE: the list submitted next */
};
static struct eng_fixture fixtures[ENG_NSPECS];
static bool cleanup_registered;

/* ---------------------------------------------------------------------------------------------
 * Devices and allocations.
 * ------------------------------------------------------------------------------------------- */

/* A device with one memory segment of 'size' bytes. 'reserve' is the backing-store address
 * space (the cases that evict need it; the others only need it to be small). */
static int eng_device(uint64_t size, uint32_t seg_flags, uint32_t threads, uint64_t reserve, vidmm_device **out)
{
    struct vidmm_segment_desc s;
    memset(&s, 0, sizeof(s));
    s.base_address = 0x100000000ull;
    s.size = size;
    s.commit_limit = size;
    s.flags = seg_flags;
    struct vidmm_device_desc d = VIDMM_DEVICE_DESC_INIT;
    d.segments = &s;
    d.segment_count = 1;
    d.paging_threads = threads;
    d.sysmem_reserve = reserve;
    return vidmm_device_create(&d, out);
}

static struct vidmm_alloc_desc eng_alloc_desc(uint64_t size, uint32_t flags)
{
    struct vidmm_alloc_desc d;
    memset(&d, 0, sizeof(d));
    d.size_of = sizeof(d);
    d.size = size;
    d.preferred_segment = 1;        /* SegmentId0 = 1 */
    d.supported_read_set = 1;
    d.supported_write_set = 1;
    d.flags = flags;
    d.priority = VIDMM_PRIORITY_NORMAL;
    return d;
}

static void fixture_free(struct eng_fixture *f)
{
    vidmm_device_destroy(f->dev);   /* frees every allocation still alive */
    free(f->live);
    free(f->refs);
    f->dev = NULL;
    f->live = NULL;
    f->refs = NULL;
}

static void eng_cleanup(void)
{
    for (size_t i = 0; i < ENG_NSPECS; i++)
        fixture_free(&fixtures[i]);
}

/* Records why building failed; returns -1. */
static int fail_build(struct eng_fixture *f, const char *what, int rc)
{
    snprintf(f->why, sizeof(f->why), "%s returned %d (%s)", what, rc, vidmm_strerror(rc));
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * Building each fixture (untimed). Each returns 0 or -1 with f->why set.
 * ------------------------------------------------------------------------------------------- */

static int build_lock(struct eng_fixture *f)
{
    int rc = eng_device(16 * B_MiB, VIDMM_SEGMENT_CPU_VISIBLE, 1, 64 * B_MiB, &f->dev);
    if (rc != 0)
        return fail_build(f, "vidmm_device_create", rc);
    struct vidmm_alloc_desc d = eng_alloc_desc(ENG_LOCK_SIZE, VIDMM_ALLOC_CPU_VISIBLE);
    if ((rc = vidmm_alloc_create(f->dev, &d, &f->h)) != 0)
        return fail_build(f, "vidmm_alloc_create", rc);
    struct vidmm_residency where;
    if ((rc = vidmm_make_resident(f->dev, &f->h, 1, &where)) != 0)
        return fail_build(f, "vidmm_make_resident", rc);
    f->cpu = where.cpu;
    return 0;
}

static int build_create(struct eng_fixture *f, uint32_t live)
{
    /* Big enough for all of them, should they ever be placed (address space only). */
    int rc = eng_device((uint64_t)(live + 1) * ENG_CREATE_SIZE, 0, 1, 64 * B_MiB, &f->dev);
    if (rc != 0)
        return fail_build(f, "vidmm_device_create", rc);
    f->live = malloc(sizeof(*f->live) * live);
    if (f->live == NULL)
        return fail_build(f, "malloc", VIDMM_E_NO_MEMORY);
    struct vidmm_alloc_desc d = eng_alloc_desc(ENG_CREATE_SIZE, 0);
    for (uint32_t i = 0; i < live; i++) {
        if ((rc = vidmm_alloc_create(f->dev, &d, &f->live[i])) != 0)
            return fail_build(f, "vidmm_alloc_create", rc);
        f->nlive++;
    }
    return 0;
}

static int build_placed(struct eng_fixture *f, uint32_t live)
{
    int rc = eng_device(ENG_PLACED_SEGMENT, 0, 0, 64 * B_MiB, &f->dev);
    if (rc != 0)
        return fail_build(f, "vidmm_device_create", rc);
    uint32_t n = 2 * live;
    vidmm_handle *all = malloc(sizeof(*all) * n);
    f->live = malloc(sizeof(*f->live) * live);
    if (all == NULL || f->live == NULL) {
        free(all);
        return fail_build(f, "malloc", VIDMM_E_NO_MEMORY);
    }
    struct vidmm_alloc_desc d = eng_alloc_desc(ENG_PLACED_SIZE, 0);
    uint32_t made = 0;
    for (; made < n && rc == 0; made++)
        rc = vidmm_alloc_create(f->dev, &d, &all[made]);
    if (rc != 0) {
        free(all);   /* the device frees the allocations */
        return fail_build(f, "vidmm_alloc_create", rc);
    }
    /* Placed in order, bottom-up: allocation i lands at offset i * 4 KiB. */
    for (uint32_t i = 0; i < n && rc == 0; i += ENG_SETUP_BATCH)
        rc = vidmm_make_resident(f->dev, all + i, n - i < ENG_SETUP_BATCH ? n - i : ENG_SETUP_BATCH, NULL);
    if (rc != 0) {
        free(all);
        return fail_build(f, "vidmm_make_resident", rc);
    }
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        if (i & 1)
            rc = vidmm_alloc_destroy(f->dev, all[i]);
        else
            f->live[f->nlive++] = all[i];
    }
    free(all);
    if (rc != 0)
        return fail_build(f, "vidmm_alloc_destroy", rc);
    struct vidmm_stats s = { .size_of = sizeof(s) };
    if ((rc = vidmm_get_stats(f->dev, &s)) != 0)
        return fail_build(f, "vidmm_get_stats", rc);
    if (s.segments[0].allocations != live) {
        snprintf(f->why, sizeof(f->why), "%u allocations resident after building, expected %u",
                 (unsigned)s.segments[0].allocations, (unsigned)live);
        return -1;
    }
    return 0;
}

/* One submission of the next half, and its fence signalled at once (the "GPU" is done). */
static int pressure_step(struct eng_fixture *f)
{
    uint64_t fence = 0;
    int rc = vidmm_submit(f->dev, f->refs + f->half * ENG_PRESSURE_REFS, ENG_PRESSURE_REFS, 0, NULL, &fence);
    if (rc != 0)
        return rc;
    f->half ^= 1u;
    return vidmm_fence_signal(f->dev, fence);
}

static int build_pressure(struct eng_fixture *f)
{
    int rc = eng_device(ENG_PRESSURE_SEGMENT, 0, 1, 2 * ENG_PRESSURE_ALLOCS * ENG_PRESSURE_SIZE, &f->dev);
    if (rc != 0)
        return fail_build(f, "vidmm_device_create", rc);
    f->live = malloc(sizeof(*f->live) * ENG_PRESSURE_ALLOCS);
    f->refs = malloc(sizeof(*f->refs) * ENG_PRESSURE_ALLOCS);
    if (f->live == NULL || f->refs == NULL)
        return fail_build(f, "malloc", VIDMM_E_NO_MEMORY);
    struct vidmm_alloc_desc d = eng_alloc_desc(ENG_PRESSURE_SIZE, 0);
    for (uint32_t i = 0; i < ENG_PRESSURE_ALLOCS; i++) {
        if ((rc = vidmm_alloc_create(f->dev, &d, &f->live[i])) != 0)
            return fail_build(f, "vidmm_alloc_create", rc);
        f->nlive++;
        f->refs[i].allocation = f->live[i];
        f->refs[i].flags = 0;
    }
    /* Four submissions: each half is filled in, evicted (its backing store is created and
     * touched) and paged back in once, so the timed ones find every page present. */
    for (int i = 0; i < 4 && rc == 0; i++)
        rc = pressure_step(f);
    if (rc != 0)
        return fail_build(f, "vidmm_submit/vidmm_fence_signal", rc);
    return 0;
}

static int build_evict(struct eng_fixture *f)
{
    int rc = eng_device(ENG_EVICT_SIZE, 0, 1, 2 * ENG_EVICT_SIZE, &f->dev);
    if (rc != 0)
        return fail_build(f, "vidmm_device_create", rc);
    struct vidmm_alloc_desc d = eng_alloc_desc(ENG_EVICT_SIZE, 0);
    if ((rc = vidmm_alloc_create(f->dev, &d, &f->h)) != 0)
        return fail_build(f, "vidmm_alloc_create", rc);
    if ((rc = vidmm_make_resident(f->dev, &f->h, 1, NULL)) != 0)
        return fail_build(f, "vidmm_make_resident", rc);
    /* Content the check can recognise: the suite's source pattern. */
    if (b_env.src == NULL || b_env.cap < ENG_EVICT_SIZE)
        return fail_build(f, "the bench buffers", VIDMM_E_NO_MEMORY);
    if ((rc = vidmm_gpu_access(f->dev, f->h, 0, b_env.src, ENG_EVICT_SIZE, true)) != 0)
        return fail_build(f, "vidmm_gpu_access", rc);
    /* One round trip: the first eviction creates and touches the backing store. */
    if ((rc = vidmm_evict(f->dev, &f->h, 1)) != 0)
        return fail_build(f, "vidmm_evict", rc);
    if ((rc = vidmm_make_resident(f->dev, &f->h, 1, NULL)) != 0)
        return fail_build(f, "vidmm_make_resident", rc);
    return 0;
}

static int build(const struct eng_spec *sp, struct eng_fixture *f)
{
    if (!cleanup_registered) {
        atexit(eng_cleanup);
        cleanup_registered = true;
    }
    switch (sp->kind) {
    case ENG_LOCK: return build_lock(f);
    case ENG_CREATE: return build_create(f, sp->live);
    case ENG_CREATE_PLACED: return build_placed(f, sp->live);
    case ENG_PRESSURE: return build_pressure(f);
    case ENG_EVICT: return build_evict(f);
    }
    snprintf(f->why, sizeof(f->why), "unknown engine case");
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * What the timed loops call.
 * ------------------------------------------------------------------------------------------- */

static int lock_pair(vidmm_device *dev, struct vidmm_lock_args *la, const vidmm_handle *h)
{
    int rc = vidmm_lock(dev, la);
    if (rc != 0)
        return rc;
    return vidmm_unlock(dev, 1, h);
}

static int create_destroy(vidmm_device *dev, const struct vidmm_alloc_desc *d)
{
    vidmm_handle h;
    int rc = vidmm_alloc_create(dev, d, &h);
    if (rc != 0)
        return rc;
    return vidmm_alloc_destroy(dev, h);
}

static int create_place_destroy(vidmm_device *dev, const struct vidmm_alloc_desc *d)
{
    vidmm_handle h;
    int rc = vidmm_alloc_create(dev, d, &h);
    if (rc != 0)
        return rc;
    int rc2 = vidmm_make_resident(dev, &h, 1, NULL);
    rc = vidmm_alloc_destroy(dev, h);
    return rc2 != 0 ? rc2 : rc;
}

static int evict_pagein(vidmm_device *dev, const vidmm_handle *h)
{
    int rc = vidmm_evict(dev, h, 1);
    if (rc != 0)
        return rc;
    return vidmm_make_resident(dev, h, 1, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * First-run checks (untimed): the call works and does what the case says it measures.
 * ------------------------------------------------------------------------------------------- */

static const char *check(const struct eng_spec *sp, struct eng_fixture *f, char *msg, size_t cap)
{
    int rc = 0;
    switch (sp->kind) {
    case ENG_LOCK: {
        struct vidmm_lock_args la;
        memset(&la, 0, sizeof(la));
        la.allocation = f->h;
        if ((rc = vidmm_lock(f->dev, &la)) != 0)
            break;
        void *p = la.data;
        if ((rc = vidmm_unlock(f->dev, 1, &f->h)) != 0)
            break;
        if (p != f->cpu)
            return "the lock did not return the allocation's segment address";
        return NULL;
    }
    case ENG_CREATE:
    case ENG_CREATE_PLACED: {
        bool placed = sp->kind == ENG_CREATE_PLACED;
        struct vidmm_alloc_desc d = eng_alloc_desc(placed ? ENG_PLACED_SIZE : ENG_CREATE_SIZE, 0);
        vidmm_handle h;
        struct vidmm_alloc_info info = { .size_of = sizeof(info) };
        if ((rc = vidmm_alloc_create(f->dev, &d, &h)) != 0)
            break;
        if (placed && (rc = vidmm_make_resident(f->dev, &h, 1, NULL)) == 0)
            rc = vidmm_alloc_query(f->dev, h, &info);
        int rc2 = vidmm_alloc_destroy(f->dev, h);
        if (rc == 0)
            rc = rc2;
        if (rc != 0)
            break;
        if (placed && info.where != VIDMM_WHERE_SEGMENT)
            return "make-resident did not place the allocation in the segment";
        struct vidmm_stats s = { .size_of = sizeof(s) };
        if ((rc = vidmm_get_stats(f->dev, &s)) != 0)
            break;
        if (s.allocations != sp->live) {
            snprintf(msg, cap, "%llu allocations alive, expected %u", (unsigned long long)s.allocations,
                     (unsigned)sp->live);
            return msg;
        }
        return NULL;
    }
    case ENG_PRESSURE: {
        struct vidmm_stats a = { .size_of = sizeof(a) }, b = { .size_of = sizeof(b) };
        if ((rc = vidmm_get_stats(f->dev, &a)) != 0 || (rc = pressure_step(f)) != 0 ||
            (rc = vidmm_get_stats(f->dev, &b)) != 0)
            break;
        uint64_t in = b.bytes_paged_in - a.bytes_paged_in, out = b.bytes_paged_out - a.bytes_paged_out;
        uint64_t want = (uint64_t)ENG_PRESSURE_REFS * ENG_PRESSURE_SIZE;
        if (in != want || out != want) {
            snprintf(msg, cap, "a submission paged %llu bytes in and %llu out, expected %llu each",
                     (unsigned long long)in, (unsigned long long)out, (unsigned long long)want);
            return msg;
        }
        return NULL;
    }
    case ENG_EVICT: {
        /* The bytes really travel: out to the backing store (read there while evicted), back in,
         * 64 MiB counted each way. */
        struct vidmm_stats a = { .size_of = sizeof(a) }, b = { .size_of = sizeof(b) };
        struct vidmm_alloc_info info = { .size_of = sizeof(info) };
        if ((rc = vidmm_get_stats(f->dev, &a)) != 0 || (rc = vidmm_evict(f->dev, &f->h, 1)) != 0 ||
            (rc = vidmm_alloc_query(f->dev, f->h, &info)) != 0)
            break;
        if (info.where != VIDMM_WHERE_SYSMEM)
            return "the allocation is not in system memory after vidmm_evict()";
        memset(b_env.dst, 0, ENG_EVICT_SIZE);
        if ((rc = vidmm_gpu_access(f->dev, f->h, 0, b_env.dst, ENG_EVICT_SIZE, false)) != 0)
            break;
        if (memcmp(b_env.dst, b_env.src, ENG_EVICT_SIZE) != 0)
            return "the backing store differs from the content after an eviction";
        if ((rc = vidmm_make_resident(f->dev, &f->h, 1, NULL)) != 0 || (rc = vidmm_get_stats(f->dev, &b)) != 0)
            break;
        uint64_t in = b.bytes_paged_in - a.bytes_paged_in, out = b.bytes_paged_out - a.bytes_paged_out;
        if (in != ENG_EVICT_SIZE || out != ENG_EVICT_SIZE) {
            snprintf(msg, cap, "a round trip paged %llu bytes in and %llu out, expected %llu each",
                     (unsigned long long)in, (unsigned long long)out, (unsigned long long)ENG_EVICT_SIZE);
            return msg;
        }
        memset(b_env.dst, 0, ENG_EVICT_SIZE);
        if ((rc = vidmm_gpu_access(f->dev, f->h, 0, b_env.dst, ENG_EVICT_SIZE, false)) != 0)
            break;
        if (memcmp(b_env.dst, b_env.src, ENG_EVICT_SIZE) != 0)
            return "the content differs after evictions and page-ins";
        return NULL;
    }
    }
    if (rc == 0)
        return "unknown engine case";
    snprintf(msg, cap, "returned %d (%s)", rc, vidmm_strerror(rc));
    return msg;
}

/* ---------------------------------------------------------------------------------------------
 * The body.
 * ------------------------------------------------------------------------------------------- */

static void b_engine_body(vbench_state *st, const void *arg)
{
    const struct b_case *c = arg;
    const struct eng_spec *sp = c->spec;
    struct eng_fixture *f = &fixtures[sp - specs];
    if (f->state == 0)
        f->state = build(sp, f) == 0 ? 1 : -1;
    if (f->state < 0) {
        vbench_fail(st, f->why);
        return;
    }
    if (b_first_run(c)) {
        char msg[160];
        const char *why = check(sp, f, msg, sizeof(msg));
        if (why != NULL) {
            f->state = -1;
            snprintf(f->why, sizeof(f->why), "%s", why);
            vbench_fail(st, why);
            return;
        }
    }

    if (sp->bytes != 0)
        vbench_set_bytes_per_iteration(st, sp->bytes);
    int rc = 0;
    vidmm_device *dev = f->dev;
    switch (sp->kind) {
    case ENG_LOCK: {
        struct vidmm_lock_args la;
        memset(&la, 0, sizeof(la));
        la.allocation = f->h;
        la.flags = 0;
        const vidmm_handle h = f->h;
        B_TIMED(st, rc, lock_pair(dev, &la, &h));
        break;
    }
    case ENG_CREATE: {
        const struct vidmm_alloc_desc d = eng_alloc_desc(ENG_CREATE_SIZE, 0);
        B_TIMED(st, rc, create_destroy(dev, &d));
        break;
    }
    case ENG_CREATE_PLACED: {
        const struct vidmm_alloc_desc d = eng_alloc_desc(ENG_PLACED_SIZE, 0);
        B_TIMED(st, rc, create_place_destroy(dev, &d));
        break;
    }
    case ENG_PRESSURE:
        B_TIMED(st, rc, pressure_step(f));
        break;
    case ENG_EVICT: {
        const vidmm_handle h = f->h;
        B_TIMED(st, rc, evict_pagein(dev, &h));
        break;
    }
    }
    if (rc != 0)
        vbench_fail(st, "a timed call returned an error");
}

void b_engine_cases(void)
{
    for (size_t i = 0; i < ENG_NSPECS; i++) {
        const struct eng_spec *sp = &specs[i];
        struct b_case *c = b_case_add("engine", sp->variant, sp->backend, (size_t)sp->bytes, b_engine_body);
        /* The name ends in the case's parameter, which is not always the bytes it moves. */
        snprintf(c->name, sizeof(c->name), "engine/%s/%s/%llu", sp->variant, sp->backend,
                 (unsigned long long)sp->label);
        c->spec = sp;
        if (sp->kind == ENG_EVICT) {
            /* Two memcpys of 64 MiB move what one iteration moves: the ratio of the GB/s is the
             * ratio to memcpy. */
            c->ref = B_REF_MEMCPY;
            b_ref_name(c->ref_name, sizeof(c->ref_name), B_REF_MEMCPY, ENG_EVICT_SIZE);
            /* And to two runs of the bare streaming-store loop: the machine's copy ceiling. */
            b_nt_ceiling_name(c->ceil_name, sizeof(c->ceil_name), VIDMM_BACKEND_AUTO, ENG_EVICT_SIZE);
        }
    }
}
