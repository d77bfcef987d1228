/* SPDX-License-Identifier: MIT */
/* bench/bench_io.c - the disk tier's I/O layer (lib/engine/io/io.h): write-out and read-back
 * throughput of the io_uring and thread-pool backends, next to fio with its io_uring engine on
 * the same file system, block size and queue depth (issue 5).
 *
 *   io/write_qd<D>/<backend>/<bs>   one iteration writes IO_TOTAL bytes (64 MiB) as requests of
 *   io/read_qd<D>/<backend>/<bs>    'bs' bytes (64 KiB, 1 MiB, 4 MiB), all handed to
 *       vmio_submit() at once, the layer keeping D (1, 8, 32) I/Os in flight, and waits for the
 *       last callback; reads check every block's CRC32C, writes compute them. <backend> is
 *       "uring" or "threads". The staging memory is bs x D (at most 128 MiB), so one request is
 *       one I/O, as one fio block is.
 *
 *   io/<dir>_qd<D>/uring_unstaged/1048576   io_uring with vmio_config.unstaged (the bench
 *       buffers are page-aligned private memory: no staging copy), for comparison; 1 MiB only.
 *
 * The targets (1 MiB, depth 32) are not the ratio of a case's best repetition to fio's best
 * run measured minutes apart - this virtual disk's speed wanders by 2x within seconds - but the
 * median of paired rounds (io_pairs()): fio, the io_uring backend and the thread pool back to
 * back on the same bytes, the order rotating. The lock target likewise (sw_rounds()).
 *
 * The name ends in the block size; b_case.bytes is IO_TOTAL, so GB/s is what the disk tier
 * moves. Each layer (one per backend x bs x D, 18 in all, ~420 MiB of staging) is opened the
 * first time one of its cases runs, written once in full (untimed: every later write overwrites
 * allocated blocks, and reads find data with known CRCs; the first read-back is compared byte
 * for byte), and kept until the program exits, when its file is removed.
 *
 * fio (the Debian package; tools/bench.sh installs it) runs from the io_uring case of the same
 * direction, bs and D, before that case's timed loop (untimed), on <dir>/fio.tmp of IO_TOTAL
 * bytes: --ioengine=io_uring --fixedbufs --registerfiles, --direct=1 when the layer got O_DIRECT
 * on that file system, and the best of up to FIO_RUNS runs is kept (the cases are the best of
 * their repetitions too). Its file is laid out (written in full) once first, as ours is. Where
 * fio is missing, the fio figures and the ratios to them are n/a, never a pass.
 *
 * The engine's disk tier, through the public API (issue 5's second target: a lock of a swapped-out
 * 4 MiB allocation within 2x the time to read 4 MiB at the measured disk bandwidth):
 *
 *   io/lock_swapped/uring/4194304     vidmm_lock(READ_ONLY) + vidmm_unlock() of a 4 MiB CPU-visible
 *   io/lock_swapped/threads/4194304   allocation written out to the swap file before every
 *       iteration. A device with one 16 MiB CPU-visible memory segment, one paging thread, a
 *       1 MiB system-memory budget and its swap file beside the I/O cases' files; io_backend AUTO
 *       (which must give io_uring, else the case is skipped) or THREADS, default queue depth. The
 *       allocation is never placed (its locks give the system-memory backing store); its content
 *       is written once and checked after the first read-back. The swap file is created by the
 *       case before the device (a file the device finds at swap_path is used and left in place,
 *       where the device would make its own nameless), so that the case holds a descriptor of it.
 *       Untimed, before each lock: vidmm_trim_to_budget(wait), then vidmm_alloc_query() must say
 *       VIDMM_WHERE_DISK (the case fails, saying what it found, if it never does); where the file
 *       is not O_DIRECT, fdatasync + POSIX_FADV_DONTNEED; and either way mincore() over the whole
 *       file must find none of its pages in the page cache, so the read-back reaches the device
 *       (a file system that keeps them, such as tmpfs, has no device: the case is skipped there,
 *       and fails if it happens after the first lock). Timed: the lock,
 *       which reads the allocation back and waits for it, and the unlock (which only queues the
 *       next write-out). b_case.bytes is 4 MiB: GB/s is the read-back's effective bandwidth.
 *   io/lock_sysmem/uring/4194304      the same pair on the same kind of device with a 64 MiB
 *       budget: the allocation stays in system memory (for scale; it moves no bytes).
 *
 * Their reference is fio reading 4 MiB blocks at queue depth 1 (fio/read/4194304/1, measured by
 * the swapped cases too, so it exists whichever cases run): a lock reads one 4 MiB allocation with
 * nothing else in flight, which is what one fio request at depth 1 does; the deeper depths
 * measure aggregate throughput that no single request sees. fio, not our io/read_qd1 case: the
 * disk's bandwidth must not depend on the code under test. The target (b_report.c) is the median
 * repetition's time per lock over 4 MiB / fio's bandwidth, <= 2.
 *
 * The files go to $VIDMM_BENCH_DIR, else to VIDMM_BENCH_IO_DIR (the build tree: the file system
 * the library would use by default). */
#define _GNU_SOURCE
#include "b_common.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#ifdef VIDMM_BENCH_IO_LAYER
#  include "engine/io/io.h"
#endif

/* The functions bench_main.c and b_report.c call (declared there too: b_common.h is shared). */
void b_io_cases(void);
double b_io_ref_gbps(const char *name, const char **why);
double b_io_paired_ratio(const char *name, const char *ref, int *rounds, const char **why);
void b_io_report_print(void);
void b_io_write_json(FILE *f);

#ifndef VIDMM_BENCH_IO_DIR
#  define VIDMM_BENCH_IO_DIR "bench-io"
#endif

/* Bytes one iteration moves: 64 MiB; in smoke mode (ctest's bench_smoke: does each case run?)
 * 8 MiB, which every block size and depth still cuts into requests (2 of 4 MiB at least) - the
 * 90 cases' 64 MiB passes made most of the smoke test's 50-80 s here, waiting for the disk. */
#define IO_TOTAL ((size_t)(b_env.mode == B_MODE_SMOKE ? 8 : 64) * B_MiB)
#define IO_MAX_STAGING_MIB 128u
/* fio runs per direction, block size and depth: the best is kept. Each moves FIO_LOOPS x
 * IO_TOTAL bytes (~0.1-0.2 s at 1.5-3 GB/s; longer at queue depth 1 and 64 KiB). */
#define FIO_RUNS_QUICK 2
/* fio computes bandwidth over its runtime in whole milliseconds: one pass over 64 MiB (~20 ms
 * here) would quantise it in steps of 5%, so each run makes this many passes over the file. */
#define FIO_LOOPS 4
#define FIO_RUNS_FULL 5
/* Paired rounds of the target cases (1 MiB, depth 32): quick / full. */
#define IO_PAIRS_QUICK 9
#define IO_PAIRS_FULL 9
#define IO_MAX_PAIRS 9

static const size_t io_bs[] = { 64 * B_KiB, 1 * B_MiB, 4 * B_MiB };
static const uint32_t io_qd[] = { 1, 8, 32 };
#define IO_NBS (sizeof(io_bs) / sizeof(io_bs[0]))
#define IO_NQD (sizeof(io_qd) / sizeof(io_qd[0]))
/* uring_unstaged: io_uring with vmio_config.unstaged (the bench buffers are page-aligned
 * private anonymous memory, so every I/O moves straight from or into them), for comparison with
 * the staged path the engine uses; 1 MiB blocks only. */
enum { IO_URING = 0, IO_THREADS = 1, IO_URING_UNSTAGED = 2, IO_NBACKENDS = 3 };
static const char *const io_backend_label[IO_NBACKENDS] = { "uring", "threads", "uring_unstaged" };

struct io_spec {
    int write;          /* 1 write, 0 read */
    int backend;        /* IO_URING, IO_THREADS, IO_URING_UNSTAGED */
    size_t bs;
    uint32_t qd;
    int ibs, iqd;       /* indexes into io_bs, io_qd */
};

static struct io_spec specs[2 * IO_NBACKENDS * IO_NBS * IO_NQD];
static size_t nspecs;

/* fio's figure for each direction x bs x depth: bytes/s, NAN until measured. */
struct fio_fig {
    double best;
    int runs;
    char why[160];      /* why there is no figure */
    /* Paired rounds (io_pairs()): the io_uring backend's GB/s over fio's and over the thread
     * pool's, each measured back to back in the same round. */
    int npairs;
    double vs_fio[IO_MAX_PAIRS], vs_threads[IO_MAX_PAIRS];
};
static struct fio_fig fio_figs[2][IO_NBS][IO_NQD];

static const char *io_dir(void)
{
    const char *d = getenv("VIDMM_BENCH_DIR");
    return d != NULL && *d != '\0' ? d : VIDMM_BENCH_IO_DIR;
}

/* ---------------------------------------------------------------------------------------------
 * fio.
 * ------------------------------------------------------------------------------------------- */

static int fio_state; /* 0 unknown, 1 present, -1 missing */
static bool fio_laid_out;

static void fio_cleanup(void)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/fio.tmp", io_dir());
    unlink(p);
}

static bool fio_present(void)
{
    if (fio_state == 0) {
        FILE *p = popen("fio --version 2>/dev/null", "r");
        char line[64] = "";
        if (p != NULL) {
            if (fgets(line, sizeof(line), p) == NULL)
                line[0] = '\0';
            fio_state = pclose(p) == 0 && strncmp(line, "fio-", 4) == 0 ? 1 : -1;
        } else {
            fio_state = -1;
        }
    }
    return fio_state > 0;
}

/* Runs fio once; returns bytes/s of direction 'write', or NAN with 'why' set. Its JSON has one
 * job whose "read" and "write" objects each carry "bw_bytes". */
static double fio_run(int write, size_t bs, uint32_t qd, bool direct, size_t size, char *why, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "fio --name=vidmm --filename='%s/fio.tmp' --ioengine=io_uring --fixedbufs --registerfiles "
             "--rw=%s --bs=%zu --iodepth=%u --size=%zu --loops=%d --direct=%d --output-format=json 2>/dev/null",
             io_dir(), write ? "write" : "read", bs, qd, size, FIO_LOOPS, direct ? 1 : 0);
    FILE *p = popen(cmd, "r");
    if (p == NULL) {
        snprintf(why, cap, "popen(fio) failed: %s", strerror(errno));
        return NAN;
    }
    size_t len = 0, bcap = 1 << 16;
    char *out = malloc(bcap);
    for (size_t got; out != NULL && (got = fread(out + len, 1, bcap - 1 - len, p)) > 0;) {
        len += got;
        if (len + 1 == bcap) {
            char *o = realloc(out, bcap * 2);
            if (o == NULL)
                break;
            out = o;
            bcap *= 2;
        }
    }
    int st = pclose(p);
    if (out == NULL) {
        snprintf(why, cap, "out of memory");
        return NAN;
    }
    out[len] = '\0';
    double bw = NAN;
    const char *sec = strstr(out, write ? "\"write\" : {" : "\"read\" : {");
    const char *k = sec ? strstr(sec, "\"bw_bytes\"") : NULL;
    const char *colon = k ? strchr(k, ':') : NULL;
    if (st != 0 || colon == NULL)
        snprintf(why, cap, "fio failed (exit status %d) or printed no bandwidth (run it by hand: %.60s...)", st, cmd);
    else
        bw = strtod(colon + 1, NULL);
    free(out);
    if (!(bw > 0) && !isnan(bw)) {
        snprintf(why, cap, "fio reported no bandwidth");
        bw = NAN;
    }
    return bw;
}

static void fio_measure(const struct io_spec *sp, bool direct)
{
    struct fio_fig *ff = &fio_figs[sp->write][sp->ibs][sp->iqd];
    int runs = b_env.mode == B_MODE_FULL ? FIO_RUNS_FULL : b_env.mode == B_MODE_SMOKE ? 1 : FIO_RUNS_QUICK;
    if (ff->runs >= runs)
        return;
    if (!fio_present()) {
        snprintf(ff->why, sizeof(ff->why), "fio not installed (tools/bench.sh installs it: apt-get install fio)");
        ff->runs = runs;
        return;
    }
    if (!fio_laid_out) {
        /* Written once in full, so every run below overwrites or reads allocated blocks. */
        char why[160];
        atexit(fio_cleanup);
        (void)fio_run(1, B_MiB, 8, direct, IO_TOTAL, why, sizeof(why)); /* FIO_LOOPS passes: plenty */
        fio_laid_out = true;
    }
    double bw = fio_run(sp->write, sp->bs, sp->qd, direct, IO_TOTAL, ff->why, sizeof(ff->why));
    ff->runs++;
    if (!isnan(bw) && (isnan(ff->best) || bw > ff->best)) {
        ff->best = bw;
        ff->why[0] = '\0';
    }
}


#ifdef VIDMM_BENCH_IO_LAYER

/* ---------------------------------------------------------------------------------------------
 * One layer per backend x bs x depth, with its requests.
 * ------------------------------------------------------------------------------------------- */

struct io_fixture {
    int state;                  /* 0 not opened, 1 ready, -1 failed */
    char why[200];
    struct vmio *io;
    char path[512];
    uint64_t off;
    size_t n;                   /* requests per iteration */
    struct vmio_req *reqs;
    struct vmio_req **ptrs;
    uint32_t *crc;              /* IO_TOTAL / VMIO_BLOCK, shared by the write and read cases */
    pthread_mutex_t m;
    pthread_cond_t c;
    size_t pending;
    int err;
};
static struct io_fixture fixtures[IO_NBACKENDS][IO_NBS][IO_NQD];
static bool cleanup_registered;

static void io_done(void *arg, struct vmio_req *req, int err)
{
    struct io_fixture *f = arg;
    (void)req;
    pthread_mutex_lock(&f->m);
    if (err != 0 && f->err == 0)
        f->err = err;
    if (--f->pending == 0)
        pthread_cond_signal(&f->c);
    pthread_mutex_unlock(&f->m);
}

/* One iteration: IO_TOTAL bytes in 'bs' requests, all submitted at once; waits for the last. */
static int io_pass(struct io_fixture *f, int op)
{
    unsigned char *buf = op == VMIO_WRITE ? b_env.src : b_env.dst;
    for (size_t i = 0; i < f->n; i++) {
        f->reqs[i].op = op;
        f->reqs[i].buf = buf + i * (IO_TOTAL / f->n);
    }
    pthread_mutex_lock(&f->m);
    f->pending = f->n;
    f->err = 0;
    pthread_mutex_unlock(&f->m);
    int rc = vmio_submit(f->io, f->ptrs, (unsigned)f->n);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&f->m);
    while (f->pending > 0)
        pthread_cond_wait(&f->c, &f->m);
    rc = f->err;
    pthread_mutex_unlock(&f->m);
    return rc;
}

static int fixture_open(const struct io_spec *sp, struct io_fixture *f);

/* FIO_LOOPS passes of 'f', as one fio run makes: bytes/s, or NAN on an error. */
static double io_loops(struct io_fixture *f, int op)
{
    double t0 = b_now_s();
    for (int i = 0; i < FIO_LOOPS; i++)
        if (io_pass(f, op) != 0)
            return NAN;
    return (double)IO_TOTAL * FIO_LOOPS / (b_now_s() - t0);
}

/* The target cases' paired rounds. This machine's virtual disk moves anywhere from 2 to 5 GB/s
 * from one second to the next (other guests share the host), so figures measured minutes apart
 * compare the host's moods, not the code. Each round therefore runs fio, the io_uring backend
 * and the thread pool back to back on the same bytes (FIO_LOOPS passes of IO_TOTAL each, the
 * order rotating from round to round), and keeps the two ratios of that round; the report gives
 * their medians. Run once per spec, after its timed loop. */
static void io_pairs(const struct io_spec *sp, struct io_fixture *fu, bool direct)
{
    struct fio_fig *ff = &fio_figs[sp->write][sp->ibs][sp->iqd];
    int want = b_env.mode == B_MODE_FULL ? IO_PAIRS_FULL : b_env.mode == B_MODE_SMOKE ? 1 : IO_PAIRS_QUICK;
    if (ff->npairs > 0 || !fio_present())
        return;
    struct io_spec ts = *sp;
    ts.backend = IO_THREADS;
    struct io_fixture *ft = &fixtures[IO_THREADS][sp->ibs][sp->iqd];
    if (ft->state == 0)
        ft->state = fixture_open(&ts, ft) == 0 ? 1 : -1;
    if (ft->state < 0)
        return;
    int op = sp->write ? VMIO_WRITE : VMIO_READ;
    for (int k = 0; k < want; k++) {
        double bw[3] = { NAN, NAN, NAN }; /* uring, fio, threads */
        char why[160];
        for (int j = 0; j < 3; j++) {
            int which = (j + k) % 3;
            if (which == 0)
                bw[0] = io_loops(fu, op);
            else if (which == 1)
                bw[1] = fio_run(sp->write, sp->bs, sp->qd, direct, IO_TOTAL, why, sizeof(why));
            else
                bw[2] = io_loops(ft, op);
        }
        if (isnan(bw[0]) || isnan(bw[1]) || isnan(bw[2]))
            return; /* n/a rather than a partial figure */
        ff->vs_fio[ff->npairs] = bw[0] / bw[1];
        ff->vs_threads[ff->npairs] = bw[0] / bw[2];
        ff->npairs++;
    }
}

static void fixture_close(struct io_fixture *f)
{
    if (f->io != NULL)
        vmio_close(f->io); /* removes the file it created */
    f->io = NULL;
    free(f->reqs);
    free(f->ptrs);
    free(f->crc);
    f->reqs = NULL;
    f->ptrs = NULL;
    f->crc = NULL;
    if (f->state != 0) {
        pthread_cond_destroy(&f->c);
        pthread_mutex_destroy(&f->m);
    }
    f->state = 0;
}

static void io_cleanup(void)
{
    for (size_t b = 0; b < IO_NBACKENDS; b++)
        for (size_t i = 0; i < IO_NBS; i++)
            for (size_t j = 0; j < IO_NQD; j++)
                fixture_close(&fixtures[b][i][j]);
}

static int fail_open(struct io_fixture *f, const char *what, int rc)
{
    snprintf(f->why, sizeof(f->why), "%s: %s", what, vidmm_strerror(rc));
    return -1;
}

static int fixture_open(const struct io_spec *sp, struct io_fixture *f)
{
    if (!cleanup_registered) {
        atexit(io_cleanup);
        cleanup_registered = true;
    }
    pthread_mutex_init(&f->m, NULL);
    pthread_cond_init(&f->c, NULL);
    if (b_env.src == NULL || b_env.dst == NULL || b_env.cap < IO_TOTAL)
        return fail_open(f, "the bench buffers", VIDMM_E_NO_MEMORY);
    if (b_mkdir_p(io_dir()) != 0) {
        snprintf(f->why, sizeof(f->why), "cannot create %s: %s", io_dir(), strerror(errno));
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/swap-%s-%zu-%u", io_dir(), io_backend_label[sp->backend], sp->bs, sp->qd);
    uint64_t staging = (uint64_t)sp->bs * sp->qd / B_MiB;
    if (staging < 1)
        staging = 1;
    if (staging > IO_MAX_STAGING_MIB)
        staging = IO_MAX_STAGING_MIB;
    struct vmio_config cfg = { f->path, IO_TOTAL, sp->qd, 1, (uint32_t)staging,
                               sp->backend == IO_THREADS ? VMIO_BACKEND_THREADS : VMIO_BACKEND_URING,
                               sp->backend == IO_URING_UNSTAGED };
    int rc = vmio_open(&cfg, &f->io);
    if (rc == VIDMM_E_UNSUPPORTED && sp->backend != IO_THREADS) {
        snprintf(f->why, sizeof(f->why), "skip: io_uring refused by this kernel (the thread pool runs instead)");
        return -1;
    }
    if (rc != 0)
        return fail_open(f, "vmio_open", rc);
    if ((rc = vmio_space_alloc(f->io, IO_TOTAL, &f->off)) != 0)
        return fail_open(f, "vmio_space_alloc", rc);
    f->n = IO_TOTAL / sp->bs;
    f->reqs = calloc(f->n, sizeof(*f->reqs));
    f->ptrs = calloc(f->n, sizeof(*f->ptrs));
    f->crc = calloc(IO_TOTAL / VMIO_BLOCK, sizeof(uint32_t));
    if (f->reqs == NULL || f->ptrs == NULL || f->crc == NULL)
        return fail_open(f, "calloc", VIDMM_E_NO_MEMORY);
    for (size_t i = 0; i < f->n; i++) {
        struct vmio_req *r = &f->reqs[i];
        r->len = sp->bs;
        r->off = f->off + i * sp->bs;
        r->crc = f->crc + i * (sp->bs / VMIO_BLOCK);
        r->done = io_done;
        r->arg = f;
        f->ptrs[i] = r;
    }
    /* Lay the file out and check one round trip. */
    if ((rc = io_pass(f, VMIO_WRITE)) != 0)
        return fail_open(f, "the first write", rc);
    memset(b_env.dst, 0, IO_TOTAL);
    if ((rc = io_pass(f, VMIO_READ)) != 0)
        return fail_open(f, "the first read", rc);
    if (memcmp(b_env.src, b_env.dst, IO_TOTAL) != 0) {
        snprintf(f->why, sizeof(f->why), "the read-back differs from what was written");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The body.
 * ------------------------------------------------------------------------------------------- */

static void b_io_body(vbench_state *st, const void *arg)
{
    const struct b_case *c = arg;
    const struct io_spec *sp = c->spec;
    struct io_fixture *f = &fixtures[sp->backend][sp->ibs][sp->iqd];
    if (f->state == 0)
        f->state = fixture_open(sp, f) == 0 ? 1 : -1;
    if (f->state < 0) {
        if (strncmp(f->why, "skip: ", 6) == 0)
            vbench_skip(st, f->why + 6);
        else
            vbench_fail(st, f->why);
        return;
    }
    if (sp->backend == IO_URING)
        fio_measure(sp, vmio_direct(f->io));

    vbench_set_bytes_per_iteration(st, IO_TOTAL);
    int rc = 0;
    if (sp->write)
        B_TIMED(st, rc, io_pass(f, VMIO_WRITE));
    else
        B_TIMED(st, rc, io_pass(f, VMIO_READ));
    if (rc != 0)
        vbench_fail(st, rc == VIDMM_E_IO ? "an I/O failed (VIDMM_E_IO: error or checksum mismatch)"
                                         : "an I/O failed");
    else if (sp->backend == IO_URING && sp->bs == B_MiB && sp->qd == 32)
        io_pairs(sp, f, vmio_direct(f->io));
}

#else /* !VIDMM_BENCH_IO_LAYER */

static void b_io_body(vbench_state *st, const void *arg)
{
    (void)arg;
    vbench_skip(st, "the I/O layer is internal to the static library: configure with VIDMM_BUILD_STATIC=ON");
}

#endif

/* ---------------------------------------------------------------------------------------------
 * The engine's disk tier, through the public API (issue 5's second target): a lock of a
 * swapped-out 4 MiB allocation, next to the time fio takes to read 4 MiB.
 * ------------------------------------------------------------------------------------------- */

#define SW_SIZE (4 * B_MiB)
#define SW_SEGMENT (16 * B_MiB)
#define SW_BUDGET_SWAPPED (1 * B_MiB)   /* below the allocation: it goes out after every call */
#define SW_BUDGET_SYSMEM (64 * B_MiB)   /* above it: it stays in memory */
/* Trims (with their waits) before a case gives up on reaching the disk tier: a write-out that
 * found the content used meanwhile is dropped and started again by the next trim. */
#define SW_COLD_TRIES 4

enum { SW_SWAPPED_AUTO, SW_SWAPPED_THREADS, SW_SYSMEM, SW_NSPECS };

struct sw_spec {
    const char *variant, *backend;
    uint32_t io_backend;        /* enum vidmm_io_backend asked for */
    bool swapped;               /* written out before every timed lock */
};

static const struct sw_spec sw_specs[SW_NSPECS] = {
    { "lock_swapped", "uring", VIDMM_IO_AUTO, true },      /* AUTO must give io_uring here */
    { "lock_swapped", "threads", VIDMM_IO_THREADS, true },
    { "lock_sysmem", "uring", VIDMM_IO_AUTO, false },
};

struct sw_fixture {
    int state;                  /* 0 not built, 1 ready, -1 failed */
    char why[240];              /* "skip: ..." for a backend that cannot run here */
    vidmm_device *dev;
    vidmm_handle h;
    char path[512];             /* the swap file, created here (the device leaves it in place) */
    int fd;                     /* the swap file, for fdatasync + POSIX_FADV_DONTNEED + mincore */
    bool direct;                /* the engine opened it with O_DIRECT */
};
static struct sw_fixture sw_fixtures[SW_NSPECS];
/* Paired rounds of the swapped cases (sw_rounds()): median lock+unlock time of the round over
 * the time fio's qd1 run of the same round takes to read SW_SIZE. */
#define SW_LOCKS_PER_ROUND 7
static double sw_round_ratio[SW_NSPECS][IO_MAX_PAIRS];
static int sw_nrounds[SW_NSPECS];
static bool sw_cleanup_registered;

static void sw_cleanup(void)
{
    for (size_t i = 0; i < SW_NSPECS; i++) {
        struct sw_fixture *f = &sw_fixtures[i];
        if (f->fd > 0)
            close(f->fd);
        f->fd = -1;
        vidmm_device_destroy(f->dev); /* leaves the swap file sw_build() created */
        f->dev = NULL;
        if (f->path[0] != '\0')
            unlink(f->path);
    }
}

static int sw_fail(struct sw_fixture *f, const char *what, int rc)
{
    snprintf(f->why, sizeof(f->why), "%s returned %d (%s)", what, rc, vidmm_strerror(rc));
    return -1;
}

static const char *sw_where_name(uint32_t w)
{
    static const char *const names[] = { "NONE", "SEGMENT", "APERTURE", "SYSMEM", "DISK" };
    return w < sizeof(names) / sizeof(names[0]) ? names[w] : "?";
}

/* The pages of file 'fd' in the page cache (mincore() of a mapping of it, which faults nothing
 * in), or -1 with errno set. */
static long sw_cached_pages(int fd)
{
    struct stat stt;
    if (fstat(fd, &stt) != 0)
        return -1;
    if (stt.st_size == 0)
        return 0;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)stt.st_size, n = (len + pg - 1) / pg;
    unsigned char *vec = malloc(n);
    void *p = vec == NULL ? MAP_FAILED : mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    long cached = -1;
    if (p != MAP_FAILED) {
        if (mincore(p, len, vec) == 0) {
            cached = 0;
            for (size_t i = 0; i < n; i++)
                cached += vec[i] & 1;
        }
        munmap(p, len);
    }
    free(vec);
    return cached;
}

/* Untimed, before every timed lock of a swapped case: the allocation's content only in the swap
 * file (where == DISK), and none of the file in the page cache - dropped where the file is not
 * O_DIRECT, never there where it is (checked, not assumed) - so the read-back reaches the file
 * system's device as fio's reads do. Returns 0; -2 when pages of the file stay in memory (a
 * file system without a device behind it, such as tmpfs: the case cannot run there); or -1,
 * with 'why' set either way. */
static int sw_make_cold(struct sw_fixture *f, char *why, size_t cap)
{
    struct vidmm_alloc_info info = { .size_of = sizeof(info) };
    int rc = 0;
    for (int i = 0; i < SW_COLD_TRIES; i++) {
        if ((rc = vidmm_trim_to_budget(f->dev, true)) != 0 || (rc = vidmm_alloc_query(f->dev, f->h, &info)) != 0)
            break;
        if (info.where == VIDMM_WHERE_DISK)
            break;
        /* Placed in a segment (nothing here places it, but should the engine): out to its
         * backing store, which the next trim writes out. */
        if ((info.where == VIDMM_WHERE_SEGMENT || info.where == VIDMM_WHERE_APERTURE) &&
            (rc = vidmm_evict(f->dev, &f->h, 1)) != 0)
            break;
    }
    if (rc != 0) {
        snprintf(why, cap, "making the allocation cold: %d (%s)", rc, vidmm_strerror(rc));
        return -1;
    }
    if (info.where != VIDMM_WHERE_DISK) {
        struct vidmm_stats s = { .size_of = sizeof(s) };
        (void)vidmm_get_stats(f->dev, &s);
        snprintf(why, cap,
                 "the allocation never reached the disk tier: where=%s after %d trims (sysmem_used %llu, budget "
                 "%llu, swap_writes %llu, swap_write_failures %llu)",
                 sw_where_name(info.where), SW_COLD_TRIES, (unsigned long long)s.sysmem_used,
                 (unsigned long long)s.sysmem_budget, (unsigned long long)s.swap_writes,
                 (unsigned long long)s.swap_write_failures);
        return -1;
    }
    if (!f->direct) {
        /* Written back first: POSIX_FADV_DONTNEED drops clean pages only. */
        if (fdatasync(f->fd) != 0 || posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED) != 0) {
            snprintf(why, cap, "dropping the swap file's page cache: %s", strerror(errno));
            return -1;
        }
    }
    long cached = sw_cached_pages(f->fd);
    if (cached < 0) {
        snprintf(why, cap, "mincore() of the swap file: %s", strerror(errno));
        return -1;
    }
    if (cached > 0) {
        struct statfs sf;
        long type = fstatfs(f->fd, &sf) == 0 ? (long)sf.f_type : 0;
        snprintf(why, cap, "%ld pages of the swap file (%s) stay in memory on its file system (%s): no lock "
                 "reads from a disk there (VIDMM_BENCH_DIR: a directory on one)", cached,
                 f->direct ? "O_DIRECT" : "buffered, dropped",
                 type == TMPFS_MAGIC ? "tmpfs" : type == RAMFS_MAGIC ? "ramfs" : "not tmpfs");
        return -2;
    }
    return 0;
}

static int sw_lock_unlock(vidmm_device *dev, struct vidmm_lock_args *la, const vidmm_handle *h)
{
    int rc = vidmm_lock(dev, la);
    if (rc != 0)
        return rc;
    return vidmm_unlock(dev, 1, h);
}

static int sw_build(const struct sw_spec *sp, struct sw_fixture *f)
{
    f->fd = -1;
    if (!sw_cleanup_registered) {
        atexit(sw_cleanup);
        sw_cleanup_registered = true;
    }
    if (b_env.src == NULL || b_env.dst == NULL || b_env.cap < SW_SIZE)
        return sw_fail(f, "the bench buffers", VIDMM_E_NO_MEMORY);
    if (b_mkdir_p(io_dir()) != 0) {
        snprintf(f->why, sizeof(f->why), "cannot create %s: %s", io_dir(), strerror(errno));
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/swap-%s-%s", io_dir(), sp->variant, sp->backend);
    /* Created here, with a name (a leftover of a killed run replaced): the device uses a file it
     * finds at swap_path and leaves it in place (include/vidmm/device.h), where it would create
     * its own nameless, so this descriptor is of the file the device reads. sw_cleanup() removes
     * it. */
    unlink(f->path);
    if ((f->fd = open(f->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        snprintf(f->why, sizeof(f->why), "cannot create the swap file %.160s: %s", f->path, strerror(errno));
        f->path[0] = '\0';
        return -1;
    }

    struct vidmm_segment_desc seg;
    memset(&seg, 0, sizeof(seg));
    seg.base_address = 0x100000000ull;
    seg.size = SW_SEGMENT;
    seg.commit_limit = SW_SEGMENT;
    seg.flags = VIDMM_SEGMENT_CPU_VISIBLE;
    struct vidmm_device_desc d = VIDMM_DEVICE_DESC_INIT;
    d.segments = &seg;
    d.segment_count = 1;
    d.paging_threads = 1;
    d.sysmem_reserve = 64 * B_MiB;
    d.sysmem_budget = sp->swapped ? SW_BUDGET_SWAPPED : SW_BUDGET_SYSMEM;
    d.swap_path = f->path;
    d.io_backend = sp->io_backend;
    int rc = vidmm_device_create(&d, &f->dev);
    if (rc != 0)
        return sw_fail(f, "vidmm_device_create", rc);
    struct vidmm_stats s = { .size_of = sizeof(s) };
    if ((rc = vidmm_get_stats(f->dev, &s)) != 0)
        return sw_fail(f, "vidmm_get_stats", rc);
    if (sp->io_backend == VIDMM_IO_AUTO && s.io_backend != VIDMM_IO_URING) {
        snprintf(f->why, sizeof(f->why), "skip: the disk tier's AUTO backend is not io_uring here (backend %u: "
                 "VIDMM_IO_BACKEND set, or io_uring refused)", (unsigned)s.io_backend);
        return -1;
    }
    f->direct = s.io_direct != 0;

    struct vidmm_alloc_desc ad;
    memset(&ad, 0, sizeof(ad));
    ad.size_of = sizeof(ad);
    ad.size = SW_SIZE;
    ad.preferred_segment = 1;
    ad.supported_read_set = 1;
    ad.supported_write_set = 1;
    ad.flags = VIDMM_ALLOC_CPU_VISIBLE;
    ad.priority = VIDMM_PRIORITY_NORMAL;
    if ((rc = vidmm_alloc_create(f->dev, &ad, &f->h)) != 0)
        return sw_fail(f, "vidmm_alloc_create", rc);
    /* The content, written once through a lock: never placed, the lock gives the system-memory
     * backing store (and every later lock does too). */
    struct vidmm_lock_args la;
    memset(&la, 0, sizeof(la));
    la.allocation = f->h;
    if ((rc = vidmm_lock(f->dev, &la)) != 0)
        return sw_fail(f, "vidmm_lock (to write the content)", rc);
    memcpy(la.data, b_env.src, SW_SIZE);
    if ((rc = vidmm_unlock(f->dev, 1, &f->h)) != 0)
        return sw_fail(f, "vidmm_unlock", rc);

    /* One untimed round trip, checked: the lock reads back from the disk tier (swapped) or
     * finds the content in memory (sysmem), byte for byte. */
    char why[200];
    struct vidmm_stats a = { .size_of = sizeof(a) }, b = { .size_of = sizeof(b) };
    struct vidmm_alloc_info info = { .size_of = sizeof(info) };
    if (sp->swapped) {
        if ((rc = sw_make_cold(f, why, sizeof(why))) != 0) {
            /* A file system that keeps the file in memory is this machine's, not a fault. */
            snprintf(f->why, sizeof(f->why), "%s%s", rc == -2 ? "skip: " : "", why);
            return -1;
        }
    } else if ((rc = vidmm_trim_to_budget(f->dev, true)) != 0 || (rc = vidmm_alloc_query(f->dev, f->h, &info)) != 0) {
        return sw_fail(f, "vidmm_trim_to_budget/vidmm_alloc_query", rc);
    } else if (info.where != VIDMM_WHERE_SYSMEM) {
        snprintf(f->why, sizeof(f->why), "the allocation is in %s, not in system memory, under a %zu MiB budget",
                 sw_where_name(info.where), SW_BUDGET_SYSMEM / B_MiB);
        return -1;
    }
    memset(&la, 0, sizeof(la));
    la.allocation = f->h;
    la.flags = VIDMM_LOCK_READ_ONLY;
    if ((rc = vidmm_get_stats(f->dev, &a)) != 0 || (rc = vidmm_lock(f->dev, &la)) != 0)
        return sw_fail(f, "vidmm_lock (READ_ONLY)", rc);
    bool same = memcmp(la.data, b_env.src, SW_SIZE) == 0;
    if ((rc = vidmm_unlock(f->dev, 1, &f->h)) != 0 || (rc = vidmm_get_stats(f->dev, &b)) != 0)
        return sw_fail(f, "vidmm_unlock", rc);
    if (!same) {
        snprintf(f->why, sizeof(f->why), "the locked content differs from what was written");
        return -1;
    }
    uint64_t reads = b.swap_reads - a.swap_reads, bytes = b.swap_bytes_read - a.swap_bytes_read;
    if (sp->swapped ? reads != 1 || bytes != SW_SIZE : reads != 0) {
        snprintf(f->why, sizeof(f->why), "the lock read back %llu allocation(s), %llu bytes, from the disk tier; "
                 "expected %s", (unsigned long long)reads, (unsigned long long)bytes,
                 sp->swapped ? "1, 4 MiB" : "none");
        return -1;
    }
    return 0;
}

/* The lock target's paired rounds, as io_pairs() does for throughput: the disk's speed moves
 * too much between the fio reference run and the case's repetitions. Each round runs fio's 4 MiB
 * qd1 read, then SW_LOCKS_PER_ROUND cold locks (each made cold untimed first), or the other way
 * round on odd rounds, and keeps median lock time / (SW_SIZE at fio's bandwidth). Once per spec. */
static void sw_rounds(const struct sw_spec *sp, struct sw_fixture *f)
{
    size_t si = (size_t)(sp - sw_specs);
    int want = b_env.mode == B_MODE_FULL ? IO_PAIRS_FULL : b_env.mode == B_MODE_SMOKE ? 1 : IO_PAIRS_QUICK;
    if (sw_nrounds[si] > 0 || !fio_present())
        return;
    struct vidmm_lock_args la;
    for (int k = 0; k < want; k++) {
        double lock_s[SW_LOCKS_PER_ROUND], fio_bw = NAN;
        char why[240];
        for (int part = 0; part < 2; part++) {
            if ((part == 0) == (k % 2 == 0)) {
                fio_bw = fio_run(0, SW_SIZE, 1, f->direct, IO_TOTAL, why, sizeof(why));
                continue;
            }
            for (int j = 0; j < SW_LOCKS_PER_ROUND; j++) {
                if (sw_make_cold(f, why, sizeof(why)) != 0)
                    return;
                memset(&la, 0, sizeof(la));
                la.allocation = f->h;
                la.flags = VIDMM_LOCK_READ_ONLY;
                double t0 = b_now_s();
                if (sw_lock_unlock(f->dev, &la, &f->h) != 0)
                    return;
                lock_s[j] = b_now_s() - t0;
            }
        }
        if (!(fio_bw > 0))
            return;
        sw_round_ratio[si][sw_nrounds[si]++] = b_median(lock_s, SW_LOCKS_PER_ROUND) / ((double)SW_SIZE / fio_bw);
    }
}

static void b_sw_body(vbench_state *st, const void *arg)
{
    const struct b_case *c = arg;
    const struct sw_spec *sp = c->spec;
    struct sw_fixture *f = &sw_fixtures[sp - sw_specs];
    if (f->state == 0)
        f->state = sw_build(sp, f) == 0 ? 1 : -1;
    if (f->state < 0) {
        if (strncmp(f->why, "skip: ", 6) == 0)
            vbench_skip(st, f->why + 6);
        else
            vbench_fail(st, f->why);
        return;
    }
    if (sp->swapped) {
        /* The reference (untimed): fio reading 4 MiB blocks at queue depth 1 on the same file
         * system, O_DIRECT as the engine's swap file is. */
        struct io_spec ref = { 0, IO_URING, SW_SIZE, 1, -1, -1 };
        for (size_t k = 0; k < IO_NBS; k++)
            if (io_bs[k] == ref.bs)
                ref.ibs = (int)k;
        for (size_t k = 0; k < IO_NQD; k++)
            if (io_qd[k] == ref.qd)
                ref.iqd = (int)k;
        if (ref.ibs < 0 || ref.iqd < 0) {
            vbench_fail(st, "bench_io.c: no fio figure at 4 MiB / qd1 (io_bs, io_qd)");
            return;
        }
        fio_measure(&ref, f->direct);
        vbench_set_bytes_per_iteration(st, SW_SIZE);
    }

    vidmm_device *dev = f->dev;
    const vidmm_handle h = f->h;
    struct vidmm_lock_args la;
    memset(&la, 0, sizeof(la));
    la.allocation = h;
    la.flags = VIDMM_LOCK_READ_ONLY;
    int rc = 0;
    char why[240] = "";
    uint64_t n, i;
    if (!sp->swapped) {
        B_TIMED(st, rc, sw_lock_unlock(dev, &la, &h));
    } else {
        while (rc == 0 && vbench_keep_running_batch(st, &n)) {
            for (i = 0; i < n && rc == 0; i++) {
                vbench_pause(st);
                if (sw_make_cold(f, why, sizeof(why)) != 0)
                    rc = -1;
                vbench_resume(st);
                if (rc == 0)
                    rc = sw_lock_unlock(dev, &la, &h);
                b_clobber();
            }
        }
    }
    if (why[0] == '\0' && rc == 0 && sp->swapped)
        sw_rounds(sp, f);
    if (why[0] != '\0') {
        vbench_fail(st, why);
    } else if (rc != 0) {
        snprintf(why, sizeof(why), "a timed lock/unlock returned %d (%s)", rc, vidmm_strerror(rc));
        vbench_fail(st, why);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Cases and what the report asks.
 * ------------------------------------------------------------------------------------------- */

void b_io_cases(void)
{
    for (int w = 1; w >= 0; w--)
        for (size_t i = 0; i < IO_NBS; i++)
            for (size_t j = 0; j < IO_NQD; j++) {
                fio_figs[w][i][j].best = NAN;
                snprintf(fio_figs[w][i][j].why, sizeof(fio_figs[w][i][j].why), "not run");
                for (int b = 0; b < IO_NBACKENDS; b++) {
                    if (b == IO_URING_UNSTAGED && io_bs[i] != B_MiB)
                        continue;
                    struct io_spec *sp = &specs[nspecs++];
                    sp->write = w;
                    sp->backend = b;
                    sp->bs = io_bs[i];
                    sp->qd = io_qd[j];
                    sp->ibs = (int)i;
                    sp->iqd = (int)j;
                    char variant[24];
                    snprintf(variant, sizeof(variant), "%s_qd%u", w ? "write" : "read", io_qd[j]);
                    struct b_case *c = b_case_add("io", variant, io_backend_label[b], IO_TOTAL, b_io_body);
                    /* The name ends in the block size; 'bytes' is what one iteration moves. */
                    snprintf(c->name, sizeof(c->name), "io/%s/%s/%zu", variant, io_backend_label[b], io_bs[i]);
                    c->spec = sp;
                }
            }
    for (size_t i = 0; i < SW_NSPECS; i++) {
        const struct sw_spec *sp = &sw_specs[i];
        /* A lock of an allocation in memory moves no bytes: no GB/s for it. */
        struct b_case *c = b_case_add("io", sp->variant, sp->backend, sp->swapped ? SW_SIZE : 0, b_sw_body);
        snprintf(c->name, sizeof(c->name), "io/%s/%s/%zu", sp->variant, sp->backend, SW_SIZE);
        c->buf_bytes = SW_SIZE; /* the content comes from b_env.src */
        c->spec = sp;
    }
}

/* "fio/<write|read>/<bs>/<qd>" -> fio's GB/s (1e9 bytes/s), or NAN with '*why'. */
/* The median over the paired rounds (io_pairs()) of case 'name' ("io/<write|read>_qd<D>/uring/
 * <bs>") over 'ref' ("fio" or "threads"), or NAN with '*why'; '*rounds' says how many. */
double b_io_paired_ratio(const char *name, const char *ref, int *rounds, const char **why)
{
    char dir[8];
    unsigned qd;
    size_t bs;
    *rounds = 0;
    *why = "no paired rounds (fio missing, or the case did not run)";
    for (size_t si = 0; si < SW_NSPECS; si++) {
        char n[B_NAME_MAX];
        snprintf(n, sizeof(n), "io/%s/%s/%zu", sw_specs[si].variant, sw_specs[si].backend, SW_SIZE);
        if (strcmp(n, name) != 0 || sw_nrounds[si] == 0)
            continue;
        double v[IO_MAX_PAIRS];
        memcpy(v, sw_round_ratio[si], sizeof(double) * (size_t)sw_nrounds[si]);
        *rounds = sw_nrounds[si];
        *why = NULL;
        return b_median(v, sw_nrounds[si]);
    }
    if (sscanf(name, "io/%5[a-z]_qd%u/uring/%zu", dir, &qd, &bs) != 3)
        return NAN;
    int w = strcmp(dir, "write") == 0;
    for (size_t i = 0; i < IO_NBS; i++)
        for (size_t j = 0; j < IO_NQD; j++) {
            const struct fio_fig *ff = &fio_figs[w][i][j];
            if (io_bs[i] != bs || io_qd[j] != qd || ff->npairs == 0)
                continue;
            double v[IO_MAX_PAIRS];
            memcpy(v, strcmp(ref, "fio") == 0 ? ff->vs_fio : ff->vs_threads, sizeof(double) * (size_t)ff->npairs);
            *rounds = ff->npairs;
            *why = NULL;
            return b_median(v, ff->npairs);
        }
    return NAN;
}

double b_io_ref_gbps(const char *name, const char **why)
{
    char dir[8];
    size_t bs;
    unsigned qd;
    *why = "no such fio figure";
    if (sscanf(name, "fio/%7[a-z]/%zu/%u", dir, &bs, &qd) != 3)
        return NAN;
    int w = strcmp(dir, "write") == 0;
    for (size_t i = 0; i < IO_NBS; i++)
        for (size_t j = 0; j < IO_NQD; j++)
            if (io_bs[i] == bs && io_qd[j] == qd) {
                const struct fio_fig *ff = &fio_figs[w][i][j];
                if (isnan(ff->best)) {
                    *why = ff->why[0] ? ff->why : "fio not run";
                    return NAN;
                }
                *why = NULL;
                return ff->best / 1e9;
            }
    return NAN;
}

static double case_gbps(const char *name)
{
    int idx = b_case_find(name);
    struct vbench_result r;
    const struct b_case *c = idx >= 0 ? b_case_at((size_t)idx) : NULL;
    if (c == NULL || c->id < 0 || vbench_result(c->id, &r) != 0 || r.status != VBENCH_OK || !(r.best_s > 0))
        return NAN;
    return (double)c->bytes / r.best_s / 1e9;
}

static void print_val(double v, const char *fmt, int width)
{
    if (isnan(v))
        printf("%*s", width, "-");
    else
        printf(fmt, width, v);
}

/* The table of every measured direction x bs x depth: our backends beside fio. */
void b_io_report_print(void)
{
    bool any = false;
    for (size_t k = 0; k < nspecs && !any; k++) {
        char name[B_NAME_MAX];
        snprintf(name, sizeof(name), "io/%s_qd%u/uring/%zu", specs[k].write ? "write" : "read", specs[k].qd,
                 specs[k].bs);
        int idx = b_case_find(name);
        any = idx >= 0 && b_case_at((size_t)idx)->id >= 0;
    }
    if (!any)
        return;
    printf("\n---- disk tier I/O (bench/bench_io.c): %s, %zu MiB per iteration ----\n", io_dir(), IO_TOTAL / B_MiB);
    printf("%-6s %8s %4s %10s %10s %10s %9s %9s\n", "dir", "bs", "qd", "uring GB/s", "threads", "fio GB/s", "x fio",
           "x threads");
    for (int w = 1; w >= 0; w--)
        for (size_t i = 0; i < IO_NBS; i++)
            for (size_t j = 0; j < IO_NQD; j++) {
                char nu[B_NAME_MAX], nt[B_NAME_MAX], nf[B_NAME_MAX];
                const char *dir = w ? "write" : "read", *why;
                snprintf(nu, sizeof(nu), "io/%s_qd%u/uring/%zu", dir, io_qd[j], io_bs[i]);
                snprintf(nt, sizeof(nt), "io/%s_qd%u/threads/%zu", dir, io_qd[j], io_bs[i]);
                snprintf(nf, sizeof(nf), "fio/%s/%zu/%u", dir, io_bs[i], io_qd[j]);
                int iu = b_case_find(nu);
                if (iu < 0 || b_case_at((size_t)iu)->id < 0)
                    continue;
                double u = case_gbps(nu), t = case_gbps(nt), fv = b_io_ref_gbps(nf, &why);
                printf("%-6s %7zuK %4u ", dir, io_bs[i] / B_KiB, io_qd[j]);
                print_val(u, "%*.3f", 10);
                printf(" ");
                print_val(t, "%*.3f", 10);
                printf(" ");
                print_val(fv, "%*.3f", 10);
                printf(" ");
                print_val(u / fv, "%*.3f", 9);
                printf(" ");
                print_val(u / t, "%*.3f", 9);
                if (isnan(fv) && why != NULL)
                    printf("  (fio: %s)", why);
                printf("\n");
            }
    for (int w = 1; w >= 0; w--)
        for (size_t i = 0; i < IO_NBS; i++)
            for (size_t j = 0; j < IO_NQD; j++) {
                const struct fio_fig *ff = &fio_figs[w][i][j];
                if (ff->npairs == 0)
                    continue;
                printf("paired rounds, %s %zuK qd%u: uring / fio", w ? "write" : "read", io_bs[i] / B_KiB, io_qd[j]);
                for (int k = 0; k < ff->npairs; k++)
                    printf(" %.3f", ff->vs_fio[k]);
                printf("; uring / threads");
                for (int k = 0; k < ff->npairs; k++)
                    printf(" %.3f", ff->vs_threads[k]);
                printf("\n");
            }
}

/* The fio figures, for the summary JSON ("io_reference": one object per measured one). */
void b_io_write_json(FILE *f)
{
    fputs("  \"io_reference\": [", f);
    bool first = true;
    for (int w = 1; w >= 0; w--)
        for (size_t i = 0; i < IO_NBS; i++)
            for (size_t j = 0; j < IO_NQD; j++) {
                const struct fio_fig *ff = &fio_figs[w][i][j];
                if (ff->runs == 0)
                    continue;
                fprintf(f, "%s\n    {\"name\": \"fio/%s/%zu/%u\", \"tool\": \"fio io_uring\", \"runs\": %d, \"gbps\": ",
                        first ? "" : ",", w ? "write" : "read", io_bs[i], io_qd[j], ff->runs);
                if (isnan(ff->best))
                    fputs("null", f);
                else
                    fprintf(f, "%.6g", ff->best / 1e9);
                fputs(", \"reason\": ", f);
                if (isnan(ff->best)) {
                    fputc('"', f);
                    for (const char *s = ff->why; *s; s++)
                        if (*s == '"' || *s == '\\')
                            fprintf(f, "\\%c", *s);
                        else if ((unsigned char)*s >= 0x20)
                            fputc(*s, f);
                    fputc('"', f);
                } else {
                    fputs("null", f);
                }
                fputc('}', f);
                first = false;
            }
    fputs(first ? "],\n" : "\n  ],\n", f);
}
