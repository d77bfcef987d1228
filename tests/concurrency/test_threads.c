/* SPDX-License-Identifier: MIT */
/* tests/concurrency/test_threads.c - many threads making the library's first kernel call at the
 * same moment, then copying, filling and flushing at once. Built and run under ThreadSanitizer
 * (the tsan preset registers only this suite), where a data race in the lazy dispatch, the
 * option table, the copy-to-WC calibration or the log hook is reported as a failure.
 *
 * Threads never call Criterion's assertions (they abort the test from the wrong thread): each
 * records its first failure, and the main thread asserts after joining.
 *
 * The TSan build compiles this file against tests/common/t_lite.h instead of Criterion, whose
 * runner cannot start under TSan (the reason is in t_lite.h); the tests read the same. */
#ifdef T_LITE_HARNESS
#  include "t_lite.h" /* the ThreadSanitizer build: see t_lite.h */
#else
#  include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t_helpers.h"

/* A backend name vidmm_option_set_string() takes but no CPU of this architecture runs: the
 * fallback warning's trigger (an unknown name is refused when set: issue 25). */
#if defined(__aarch64__)
#  define FOREIGN_BACKEND "avx2"
#else
#  define FOREIGN_BACKEND "neon"
#endif

/* More threads than cores (2 here), so the scheduler interleaves them mid-call. */
#define N_THREADS 12
#define T_TIMEOUT 120

struct shared {
    pthread_barrier_t start;
    const unsigned char *src; /* read by every thread at once */
    size_t src_len;
    int iterations;
};

struct worker {
    pthread_t tid;
    int index;
    struct shared *sh;
    enum vidmm_backend active;
    const char *backend_name;
    const char *wc_variant;
    char failure[256];
};

#define FAIL(w, ...)                                                              \
    do {                                                                          \
        if ((w)->failure[0] == '\0')                                              \
            snprintf((w)->failure, sizeof((w)->failure), __VA_ARGS__);            \
        return;                                                                   \
    } while (0)

/* One round of work on private buffers (and the shared, read-only source): every kind of copy,
 * fill and flush, each result checked. */
static void work_once(struct worker *w, unsigned char *dst, size_t cap, struct t_rng *r)
{
    const struct shared *sh = w->sh;
    size_t n = t_rng_len(r, 1, cap - 64);
    size_t soff = t_rng_below(r, 64), doff = t_rng_below(r, 64);
    enum vidmm_mem_kind kind = (enum vidmm_mem_kind)t_rng_below(r, VIDMM_MEM_KIND_COUNT_);
    if (n + soff > sh->src_len)
        n = sh->src_len - soff;
    int rc;

    memset(dst, T_SENTINEL, cap + 64);
    switch (t_rng_below(r, 4)) {
    case 0:
        rc = vidmm_copy(dst + doff, sh->src + soff, n, kind);
        break;
    case 1:
        rc = vidmm_copy_to_wc(dst + doff, sh->src + soff, n);
        break;
    case 2:
        rc = vidmm_copy_from_wc(dst + doff, sh->src + soff, n);
        break;
    default: {
        struct vidmm_kernel_opts o = t_opts(VIDMM_BACKEND_SCALAR, VIDMM_STRATEGY_AUTO);
        rc = vidmm_copy_ex(dst + doff, sh->src + soff, n, kind, &o);
        break;
    }
    }
    if (rc != 0)
        FAIL(w, "thread %d: copy of %zu bytes returned %d", w->index, n, rc);
    if (memcmp(dst + doff, sh->src + soff, n) != 0)
        FAIL(w, "thread %d: copy of %zu bytes (kind %s) is wrong", w->index, n, t_kind_label(kind));
    if (t_find_not(dst, doff, T_SENTINEL) >= 0 || t_find_not(dst + doff + n, cap + 64 - doff - n, T_SENTINEL) >= 0)
        FAIL(w, "thread %d: copy of %zu bytes wrote outside its range", w->index, n);

    size_t fn = n & ~(size_t)3;
    uint32_t pattern = 0x01000000u * (unsigned)(w->index + 1) + 0x00030201u;
    memset(dst, T_SENTINEL, cap + 64);
    rc = vidmm_fill32(dst + doff, pattern, fn, kind);
    if (rc != 0)
        FAIL(w, "thread %d: fill of %zu bytes returned %d", w->index, fn, rc);
    for (size_t i = 0; i < fn; i++)
        if (dst[doff + i] != (unsigned char)(pattern >> (8 * (i % 4))))
            FAIL(w, "thread %d: fill of %zu bytes wrong at byte %zu", w->index, fn, i);
    if (t_find_not(dst + doff + fn, cap + 64 - doff - fn, T_SENTINEL) >= 0)
        FAIL(w, "thread %d: fill wrote past its end", w->index);

    uint64_t sum = t_checksum(dst, cap + 64);
    enum vidmm_flush_op op = (enum vidmm_flush_op)(1 + t_rng_below(r, 3));
    rc = vidmm_flush(dst + doff, fn, op);
    /* VIDMM_E_UNSUPPORTED only where no instruction can do 'op' (the generic architecture
     * layer has none, VIDMM_ARCH=generic); it touches nothing, which the checksum checks. */
    if (rc != 0 && !(rc == VIDMM_E_UNSUPPORTED && vidmm_flush_insn(op) == VIDMM_FLUSH_INSN_AUTO))
        FAIL(w, "thread %d: flush op %d of %zu bytes returned %d", w->index, (int)op, fn, rc);
    if (t_checksum(dst, cap + 64) != sum)
        FAIL(w, "thread %d: flush changed memory", w->index);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct t_rng r;
    const size_t cap = (size_t)256 << 10;
    unsigned char *dst = malloc(cap + 64);
    t_rng_init(&r, 1000 + (uint64_t)w->index);
    if (dst == NULL) {
        snprintf(w->failure, sizeof(w->failure), "thread %d: out of memory", w->index);
        pthread_barrier_wait(&w->sh->start);
        return NULL;
    }

    pthread_barrier_wait(&w->sh->start);
    /* The race under test: these are the first library calls of the process (or the first
     * after vidmm_kernels_reset()), made by every thread at once. Different threads start with
     * different entry points so each lazy path is raced from several sides. */
    switch (w->index % 4) {
    case 0:
        w->active = vidmm_backend_active();
        break;
    case 1:
        work_once(w, dst, cap, &r);
        w->active = vidmm_backend_active();
        break;
    case 2:
        w->wc_variant = vidmm_wc_copy_variant();
        w->active = vidmm_backend_active();
        break;
    default:
        (void)vidmm_flush_insn(VIDMM_FLUSH_WRITEBACK);
        w->backend_name = vidmm_backend_name();
        w->active = vidmm_backend_active();
        break;
    }
    w->backend_name = vidmm_backend_name();
    for (int i = 0; i < w->sh->iterations && w->failure[0] == '\0'; i++)
        work_once(w, dst, cap, &r);
    if (w->wc_variant == NULL)
        w->wc_variant = vidmm_wc_copy_variant();
    free(dst);
    return NULL;
}

/* run_round() starts N_THREADS workers on the same barrier, joins them and checks that they
 * all saw the same backend and copy-to-WC variant and did their work correctly. */
static void run_round(struct shared *sh, int round)
{
    struct worker w[N_THREADS];
    memset(w, 0, sizeof(w));
    cr_assert_eq(pthread_barrier_init(&sh->start, NULL, N_THREADS), 0);
    for (int i = 0; i < N_THREADS; i++) {
        w[i].index = i;
        w[i].sh = sh;
        cr_assert_eq(pthread_create(&w[i].tid, NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        cr_assert_eq(pthread_join(w[i].tid, NULL), 0);
    pthread_barrier_destroy(&sh->start);

    for (int i = 0; i < N_THREADS; i++)
        cr_assert(w[i].failure[0] == '\0', "round %d: %s" T_CTX_FMT, round, w[i].failure, T_CTX_ARGS);
    for (int i = 0; i < N_THREADS; i++) {
        cr_assert_neq(w[i].active, VIDMM_BACKEND_AUTO);
        cr_assert_eq(w[i].active, w[0].active, "round %d: thread %d saw backend %s, thread 0 saw %s", round, i,
                     vidmm_backend_to_string(w[i].active), vidmm_backend_to_string(w[0].active));
        cr_assert_str_eq(w[i].backend_name, vidmm_backend_to_string(w[0].active));
        cr_assert_not_null(w[i].wc_variant);
    }
    /* The copy-to-WC choice settles once: after the round, everyone asks and gets one answer. */
    const char *settled = vidmm_wc_copy_variant();
    cr_assert_str_eq(vidmm_wc_copy_variant(), settled);
    cr_assert_eq(vidmm_backend_active(), w[0].active, "the backend changed after the first round of calls");
}

static unsigned char *make_source(size_t len)
{
    struct t_rng r;
    unsigned char *src = malloc(len);
    cr_assert_not_null(src);
    t_rng_init(&r, 42);
    t_rng_bytes(&r, src, len);
    return src;
}

/* The first kernel call of the process, from every thread at once, then a few rounds again
 * after vidmm_kernels_reset() (which itself runs with no kernel call in flight, as its
 * contract requires; pthread_join/create order it against the workers). */
Test(threads, first_call_race, .timeout = T_TIMEOUT)
{
    struct shared sh;
    sh.src_len = (size_t)512 << 10;
    sh.src = make_source(sh.src_len);
    sh.iterations = 6;
    run_round(&sh, 0);
    for (int round = 1; round <= 4; round++) {
        vidmm_kernels_reset();
        run_round(&sh, round);
    }
    free((void *)sh.src);
}

/* Longer concurrent use after the choice is made: the steady state must be race-free too. */
Test(threads, concurrent_kernels, .timeout = T_TIMEOUT)
{
    struct shared sh;
    sh.src_len = (size_t)512 << 10;
    sh.src = make_source(sh.src_len);
    sh.iterations = 40;
    (void)vidmm_backend_active();
    run_round(&sh, 0);
    free((void *)sh.src);
}

/* Each forced backend, raced the same way (the dispatcher reads the option during the race). */
Test(threads, forced_backend_race, .timeout = T_TIMEOUT)
{
    struct shared sh;
    sh.src_len = (size_t)256 << 10;
    sh.src = make_source(sh.src_len);
    sh.iterations = 3;
    for (int b = VIDMM_BACKEND_SCALAR; b < VIDMM_BACKEND_COUNT_; b++) {
        if (!vidmm_backend_supported((enum vidmm_backend)b))
            continue;
        cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, vidmm_backend_to_string((enum vidmm_backend)b)), 0);
        vidmm_kernels_reset();
        run_round(&sh, b);
        cr_assert_eq((int)vidmm_backend_active(), b);
    }
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, NULL), 0);
    vidmm_kernels_reset();
    free((void *)sh.src);
}

/* ---------------------------------------------------------------------------------------------
 * The log hook under concurrency.
 * ------------------------------------------------------------------------------------------- */

struct hook_race {
    pthread_barrier_t start;
    struct t_log *logs[2];
    atomic_int stop;
    enum vidmm_backend seen[N_THREADS];
};

struct hook_arg {
    struct hook_race *hr;
    int index;
};

static void *first_caller(void *arg)
{
    struct hook_arg *a = arg;
    pthread_barrier_wait(&a->hr->start);
    a->hr->seen[a->index] = vidmm_backend_active();
    return NULL;
}

static void *hook_swapper(void *arg)
{
    struct hook_race *hr = arg;
    pthread_barrier_wait(&hr->start);
    for (int i = 0; !atomic_load(&hr->stop); i++)
        vidmm_set_log_fn(t_log_record, hr->logs[i & 1], VIDMM_LOG_WARN);
    return NULL;
}

/* A backend request the dispatcher must refuse, with every thread making the first call at
 * once. kernels.h: every thread sees the same choice; common.h/STYLE.md: the bad value logs one
 * warning. The hook sleeps inside the first warning, holding that thread in the middle of the
 * choice, so that the others arrive while the choice is still being made: a dispatcher that
 * lets each of them choose (and warn) again is caught deterministically. */
Test(threads, fallback_warns_once, .timeout = T_TIMEOUT)
{
    struct t_log log;
    struct hook_race hr;
    struct hook_arg args[N_THREADS];
    pthread_t tids[N_THREADS];

    (void)vidmm_backend_active(); /* the automatic choice, for comparison */
    enum vidmm_backend automatic = vidmm_backend_active();

    t_log_reset(&log);
    atomic_store(&log.delay_ms, 50);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_WARN);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, FOREIGN_BACKEND), 0);
    vidmm_kernels_reset();

    memset(&hr, 0, sizeof(hr));
    cr_assert_eq(pthread_barrier_init(&hr.start, NULL, N_THREADS), 0);
    for (int i = 0; i < N_THREADS; i++) {
        args[i].hr = &hr;
        args[i].index = i;
        cr_assert_eq(pthread_create(&tids[i], NULL, first_caller, &args[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        cr_assert_eq(pthread_join(tids[i], NULL), 0);
    pthread_barrier_destroy(&hr.start);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);

    for (int i = 0; i < N_THREADS; i++)
        cr_assert_eq(hr.seen[i], automatic, "thread %d fell back to %s, want %s", i,
                     vidmm_backend_to_string(hr.seen[i]), vidmm_backend_to_string(automatic));
    cr_assert_eq(atomic_load(&log.count[VIDMM_LOG_WARN]), 1,
                 "%d threads making the first call with VIDMM_BACKEND=" FOREIGN_BACKEND " logged %d warnings, want 1",
                 N_THREADS, atomic_load(&log.count[VIDMM_LOG_WARN]));
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, NULL), 0);
    vidmm_kernels_reset();
}

/* Swapping the hook while messages are delivered (common.h: safe at any time; a message racing
 * the swap may reach the previous hook). The warning must reach one of the two hooks; how many
 * times is fallback_warns_once's question. What TSan checks here is the swap itself. */
Test(threads, hook_swap_during_delivery, .timeout = T_TIMEOUT)
{
    struct t_log a, b;
    struct hook_race hr;
    struct hook_arg args[N_THREADS - 1];
    pthread_t tids[N_THREADS];

    t_log_reset(&a);
    t_log_reset(&b);
    memset(&hr, 0, sizeof(hr));
    hr.logs[0] = &a;
    hr.logs[1] = &b;
    vidmm_set_log_fn(t_log_record, &a, VIDMM_LOG_WARN);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, FOREIGN_BACKEND), 0);
    vidmm_kernels_reset();

    cr_assert_eq(pthread_barrier_init(&hr.start, NULL, N_THREADS), 0);
    cr_assert_eq(pthread_create(&tids[0], NULL, hook_swapper, &hr), 0);
    for (int i = 0; i < N_THREADS - 1; i++) {
        args[i].hr = &hr;
        args[i].index = i;
        cr_assert_eq(pthread_create(&tids[i + 1], NULL, first_caller, &args[i]), 0);
    }
    for (int i = 1; i < N_THREADS; i++)
        cr_assert_eq(pthread_join(tids[i], NULL), 0);
    atomic_store(&hr.stop, 1);
    cr_assert_eq(pthread_join(tids[0], NULL), 0);
    pthread_barrier_destroy(&hr.start);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);

    int total = atomic_load(&a.count[VIDMM_LOG_WARN]) + atomic_load(&b.count[VIDMM_LOG_WARN]);
    cr_assert_geq(total, 1, "the fallback warning reached neither hook");
    cr_assert_eq(atomic_load(&a.count[VIDMM_LOG_ERROR]) + atomic_load(&b.count[VIDMM_LOG_ERROR]), 0);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_BACKEND, NULL), 0);
    vidmm_kernels_reset();
}

/* Two hooks, each installed with its own argument. A hook must never be called with the other
 * hook's argument: the argument belongs to the hook it was installed with (common.h), and a
 * user's hook casts it to its own type. One thread swaps the hooks as fast as it can (allowed
 * at any time); the main thread, alone in the kernels, makes the library log over and over -
 * a reset and a fresh choice log the chosen backend (INFO) and, with a bogus feature mask, a
 * warning - so deliveries overlap swaps many thousands of times. */
struct tagged_hook {
    const char *tag;
    atomic_int calls;
    atomic_int foreign;
};

static struct tagged_hook hook_a_state = { "a", 0, 0 }, hook_b_state = { "b", 0, 0 };

static void hook_a(void *arg, enum vidmm_log_level level, const char *msg)
{
    (void)level;
    (void)msg;
    atomic_fetch_add(&hook_a_state.calls, 1);
    if (arg != &hook_a_state)
        atomic_fetch_add(&hook_a_state.foreign, 1);
}

static void hook_b(void *arg, enum vidmm_log_level level, const char *msg)
{
    (void)level;
    (void)msg;
    atomic_fetch_add(&hook_b_state.calls, 1);
    if (arg != &hook_b_state)
        atomic_fetch_add(&hook_b_state.foreign, 1);
}

static atomic_int swapper_stop;

static void *tagged_swapper(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !atomic_load_explicit(&swapper_stop, memory_order_relaxed); i++) {
        if (i & 1)
            vidmm_set_log_fn(hook_b, &hook_b_state, VIDMM_LOG_INFO);
        else
            vidmm_set_log_fn(hook_a, &hook_a_state, VIDMM_LOG_INFO);
    }
    return NULL;
}

Test(threads, hook_gets_its_own_arg, .timeout = T_TIMEOUT)
{
    pthread_t swapper;
    vidmm_set_log_fn(hook_a, &hook_a_state, VIDMM_LOG_INFO);
    /* vidmm_option_set_string() refuses an unknown feature name (issue 25); the environment's
     * is warned about at each fresh choice. This test process is fresh: not read yet. */
    cr_assert_eq(setenv("VIDMM_DISABLE_CPU_FEATURES", "nosuchfeature", 1), 0);
    atomic_store(&swapper_stop, 0);
    cr_assert_eq(pthread_create(&swapper, NULL, tagged_swapper, NULL), 0);
    for (int i = 0; i < 20000; i++) {
        vidmm_kernels_reset();
        (void)vidmm_backend_active();
        if (atomic_load(&hook_a_state.foreign) + atomic_load(&hook_b_state.foreign) > 0)
            break;
    }
    atomic_store(&swapper_stop, 1);
    cr_assert_eq(pthread_join(swapper, NULL), 0);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    cr_assert_eq(vidmm_option_set_string(VIDMM_OPT_DISABLE_CPU_FEATURES, NULL), 0);
    vidmm_kernels_reset();

    int calls = atomic_load(&hook_a_state.calls) + atomic_load(&hook_b_state.calls);
    cr_assert_gt(calls, 0, "no message was delivered: the test exercised nothing");
    cr_assert_eq(atomic_load(&hook_a_state.foreign), 0,
                 "hook a was called %d times (of %d) with hook b's argument: vidmm_set_log_fn() publishes the "
                 "function and its argument separately, so a message racing the swap pairs them wrongly",
                 atomic_load(&hook_a_state.foreign), atomic_load(&hook_a_state.calls));
    cr_assert_eq(atomic_load(&hook_b_state.foreign), 0,
                 "hook b was called %d times (of %d) with hook a's argument: vidmm_set_log_fn() publishes the "
                 "function and its argument separately, so a message racing the swap pairs them wrongly",
                 atomic_load(&hook_b_state.foreign), atomic_load(&hook_b_state.calls));
}

/* ---------------------------------------------------------------------------------------------
 * One swizzle plan shared by every thread (swizzle.h: immutable once made): each thread untiles
 * its own boxes of one tiled surface through it, again and again, and tiles them into its own
 * surface; each result must equal the one-shot calls' made before the threads started.
 * ------------------------------------------------------------------------------------------- */
#define PLAN_W 256u
#define PLAN_H 256u
#define PLAN_E 4u

struct plan_shared {
    pthread_barrier_t start;
    const vidmm_swizzle_plan *plan;
    const unsigned char *tiled;     /* the surface every thread reads */
    const unsigned char *want;      /* its linear image (the one-shot deswizzle) */
    uint64_t tiled_size;
};

struct plan_worker {
    pthread_t tid;
    int index;
    struct plan_shared *sh;
    char failure[256];
};

static void *plan_worker_main(void *arg)
{
    struct plan_worker *w = arg;
    const struct plan_shared *sh = w->sh;
    const size_t pitch = PLAN_W * PLAN_E;
    unsigned char *lin = malloc(pitch * PLAN_H), *mine = calloc(1, (size_t)sh->tiled_size);
    struct t_rng r;
    t_rng_init(&r, 5000 + (uint64_t)w->index);
    pthread_barrier_wait(&w->sh->start);
    if (lin == NULL || mine == NULL) {
        snprintf(w->failure, sizeof(w->failure), "thread %d: out of memory", w->index);
        goto out;
    }
    for (int it = 0; it < 40 && w->failure[0] == '\0'; it++) {
        struct vidmm_box b;
        b.x = (uint32_t)t_rng_below(&r, PLAN_W);
        b.y = (uint32_t)t_rng_below(&r, PLAN_H);
        b.z = 0;
        b.width = 1 + (uint32_t)t_rng_below(&r, PLAN_W - b.x);
        b.height = 1 + (uint32_t)t_rng_below(&r, PLAN_H - b.y);
        b.depth = 1;
        int rc = vidmm_swizzle_plan_deswizzle(sh->plan, &b, sh->tiled, (size_t)sh->tiled_size, lin, pitch * PLAN_H,
                                              pitch, 0);
        if (rc != 0) {
            snprintf(w->failure, sizeof(w->failure), "thread %d: plan deswizzle returned %d", w->index, rc);
            break;
        }
        for (uint32_t y = 0; y < b.height; y++)
            if (memcmp(lin + y * pitch, sh->want + (b.y + y) * pitch + b.x * PLAN_E, b.width * PLAN_E) != 0) {
                snprintf(w->failure, sizeof(w->failure), "thread %d: box (%u,%u)+(%ux%u) row %u differs", w->index,
                         b.x, b.y, b.width, b.height, y);
                break;
            }
        rc = vidmm_swizzle_plan_swizzle(sh->plan, &b, mine, (size_t)sh->tiled_size, lin, pitch * PLAN_H, pitch, 0);
        if (rc != 0)
            snprintf(w->failure, sizeof(w->failure), "thread %d: plan swizzle returned %d", w->index, rc);
    }
out:
    free(lin);
    free(mine);
    return NULL;
}

Test(threads, shared_swizzle_plan, .timeout = T_TIMEOUT)
{
    struct vidmm_tile_layout l = VIDMM_TILE_LAYOUT_INIT(VIDMM_TILING_BLOCK_LINEAR);
    struct vidmm_surface_desc s;
    memset(&s, 0, sizeof(s));
    s.size = sizeof(s);
    s.width = PLAN_W;
    s.height = PLAN_H;
    s.depth = 1;
    s.element_bytes = PLAN_E;
    s.block_width = s.block_height = 1;
    s.mip_levels = 1;
    s.array_layers = 1;
    struct plan_shared sh;
    cr_assert_eq(vidmm_surface_tiled_size(&l, &s, &sh.tiled_size), 0);
    const size_t lsz = (size_t)PLAN_W * PLAN_H * PLAN_E;
    unsigned char *tiled = malloc((size_t)sh.tiled_size), *want = malloc(lsz);
    cr_assert(tiled != NULL && want != NULL);
    struct t_rng r;
    t_rng_init(&r, 4242);
    t_rng_bytes(&r, tiled, (size_t)sh.tiled_size);
    cr_assert_eq(vidmm_deswizzle_surface(&l, &s, tiled, (size_t)sh.tiled_size, want, lsz), 0);
    vidmm_swizzle_plan *plan;
    cr_assert_eq(vidmm_swizzle_plan_create(&l, &s, 0, 0, NULL, &plan), 0);
    sh.plan = plan;
    sh.tiled = tiled;
    sh.want = want;
    struct plan_worker w[N_THREADS];
    cr_assert_eq(pthread_barrier_init(&sh.start, NULL, N_THREADS), 0);
    for (int i = 0; i < N_THREADS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].index = i;
        w[i].sh = &sh;
        cr_assert_eq(pthread_create(&w[i].tid, NULL, plan_worker_main, &w[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++)
        cr_assert_eq(pthread_join(w[i].tid, NULL), 0);
    pthread_barrier_destroy(&sh.start);
    for (int i = 0; i < N_THREADS; i++)
        cr_assert_eq(w[i].failure[0], '\0', "%s", w[i].failure);
    vidmm_swizzle_plan_destroy(plan);
    free(tiled);
    free(want);
}
