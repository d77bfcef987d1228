/* SPDX-License-Identifier: MIT */
/* tests/engine/test_swap.c - the disk tier built into the engine (lib/engine/swap.c): backing
 * stores beyond the system-memory budget are written to the swap file, their memory released,
 * and read back by locks, submissions and make-resident - on every I/O backend, with every byte
 * checked across every round trip. Faults are injected through the I/O layer's test hook (EIO,
 * short transfers, corrupted reads) and a real ENOSPC comes from a 4 MiB tmpfs the test mounts
 * (root only; a skip that says why otherwise): nothing is ever lost or returned corrupt - a
 * failed read-back is VIDMM_E_IO and the allocation says its content was lost. */
#ifdef T_LITE_HARNESS
#  include "t_lite.h"
#else
#  include <criterion/criterion.h>
#endif
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "t_helpers.h"
#include "engine/engine.h" /* struct vidmm_device: the test reaches the I/O layer's fault hook */

#define SEG (4u << 20)
#define ASZ (1u << 20)
#define N 16

static const char *const backend_name[] = { "auto", "uring", "threads", "sync" };

struct rig {
    vidmm_device *dev;
    char dir[256];
    char path[320];
    vidmm_handle h[N];
    unsigned char *want[N];
    struct t_rng rng;
    bool mounted;
};

static void make_dir(struct rig *r)
{
    const char *base = getenv("VIDMM_TEST_SWAP_DIR");
    snprintf(r->dir, sizeof r->dir, "%s/vidmm-swap-XXXXXX", base ? base : "/var/tmp");
    cr_assert_not_null(mkdtemp(r->dir), "mkdtemp(%s): %s", r->dir, strerror(errno));
    snprintf(r->path, sizeof r->path, "%s/swap", r->dir);
}

static void rig_open(struct rig *r, uint32_t backend, uint64_t budget, uint64_t swap_max, uint32_t threads)
{
    struct vidmm_segment_desc segs[1] = { { 0x10000000ull, SEG, SEG, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 } };
    struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
    dd.segments = segs;
    dd.segment_count = 1;
    dd.paging_threads = threads;
    dd.sysmem_budget = budget;
    dd.swap_path = r->path;
    dd.swap_max = swap_max;
    dd.io_backend = backend;
    int err = vidmm_device_create(&dd, &r->dev);
    if (err == VIDMM_E_UNSUPPORTED)
        cr_skip("I/O backend %s cannot run here", backend_name[backend]);
    cr_assert_eq(err, 0, "device_create (backend %s): %s", backend_name[backend], vidmm_strerror(err));
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(r->dev, &st), 0);
    if (backend != VIDMM_IO_AUTO)
        cr_assert_eq(st.io_backend, backend, "asked for %s, runs %u", backend_name[backend], st.io_backend);
    cr_assert_eq(st.sysmem_budget, budget);
    for (int i = 0; i < N; i++) {
        struct vidmm_alloc_desc d = { .size_of = sizeof d };
        d.size = ASZ;
        d.flags = VIDMM_ALLOC_CPU_VISIBLE;
        d.priority = VIDMM_PRIORITY_NORMAL;
        d.supported_read_set = d.supported_write_set = 0x1;
        d.fill_pattern = 0x11111111u * (uint32_t)(i % 15 + 1);
        cr_assert_eq(vidmm_alloc_create(r->dev, &d, &r->h[i]), 0);
        r->want[i] = malloc(ASZ);
        cr_assert_not_null(r->want[i]);
        memset(r->want[i], (int)(d.fill_pattern & 0xFF), ASZ);
    }
}

static void rig_close(struct rig *r)
{
    for (int i = 0; i < N; i++)
        free(r->want[i]);
    vidmm_device_destroy(r->dev);
    unlink(r->path);
    if (r->mounted)
        umount2(r->dir, MNT_DETACH);
    rmdir(r->dir);
}

/* GPU writes to allocation i through a submission (pages it in: evictions push others out to
 * system memory, and the budget pushes system memory out to disk). */
static int gpu_write(struct rig *r, int i)
{
    struct vidmm_alloc_ref ref = { r->h[i], VIDMM_REF_WRITE };
    struct vidmm_residency w;
    uint64_t f;
    int err = vidmm_submit(r->dev, &ref, 1, 0, &w, &f);
    if (err)
        return err;
    size_t off = t_rng_below(&r->rng, ASZ - 4096);
    t_rng_bytes(&r->rng, r->want[i] + off, 4096);
    memcpy((unsigned char *)w.cpu + off, r->want[i] + off, 4096);
    return vidmm_fence_signal(r->dev, f);
}

static void check(struct rig *r, int i, const char *when)
{
    struct vidmm_lock_args la = { r->h[i], 0, 0, NULL, VIDMM_LOCK_READ_ONLY, 0, NULL };
    int err = vidmm_lock(r->dev, &la);
    cr_assert_eq(err, 0, "%s: lock %d: %s", when, i, vidmm_strerror(err));
    ptrdiff_t d = t_find_diff(la.data, r->want[i], ASZ);
    cr_assert_eq(vidmm_unlock(r->dev, 1, &r->h[i]), 0);
    cr_assert(d < 0, "%s: allocation %d differs at byte %td", when, i, d);
}

static uint32_t where(struct rig *r, int i)
{
    struct vidmm_alloc_info in = { .size_of = sizeof in };
    cr_assert_eq(vidmm_alloc_query(r->dev, r->h[i], &in), 0);
    return in.where;
}

/* Trims to the budget and returns the first allocation the disk tier wrote out (fails the
 * test when none went). */
static int trim_and_find_on_disk(struct rig *r)
{
    cr_assert_eq(vidmm_trim_to_budget(r->dev, true), 0);
    for (int i = 0; i < N; i++)
        if (where(r, i) == VIDMM_WHERE_DISK)
            return i;
    cr_assert_fail("nothing went to disk");
    return -1;
}

/* 16 MiB of allocations, 4 MiB of segment, 4 MiB of system-memory budget: at least half of the
 * content is on disk at any time. */
static void round_trips(uint32_t backend, uint32_t threads)
{
    struct rig r;
    memset(&r, 0, sizeof r);
    t_rng_init(&r.rng, backend * 10 + threads);
    make_dir(&r);
    rig_open(&r, backend, 4u << 20, 64u << 20, threads);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            cr_assert_eq(gpu_write(&r, i), 0, "round %d submit %d", round, i);
        cr_assert_eq(vidmm_trim_to_budget(r.dev, true), 0);
        int on_disk = 0;
        for (int i = 0; i < N; i++)
            on_disk += where(&r, i) == VIDMM_WHERE_DISK;
        struct vidmm_stats st = { .size_of = sizeof st };
        cr_assert_eq(vidmm_get_stats(r.dev, &st), 0);
        cr_assert_leq(st.sysmem_used, (uint64_t)(4u << 20) + ASZ, "system memory %llu over the budget",
                      (unsigned long long)st.sysmem_used);
        cr_assert_geq(on_disk, N / 2, "round %d: only %d allocations on disk", round, on_disk);
        for (int i = N - 1; i >= 0; i--) /* reads back what went out, in another order */
            check(&r, i, "after a round trip through the disk");
    }
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(r.dev, &st), 0);
    cr_assert_gt(st.swap_writes, (uint64_t)N, "%llu write-outs", (unsigned long long)st.swap_writes);
    cr_assert_gt(st.swap_reads, (uint64_t)N);
    cr_assert_eq(st.swap_bytes_written, st.swap_writes * ASZ);
    cr_assert_eq(st.swap_read_failures, 0u);
    cr_assert_gt(st.swap_max_in_flight, 0u);
    rig_close(&r);
}

Test(swap, round_trips_uring, .timeout = 120)
{
    round_trips(VIDMM_IO_URING, 1);
}

Test(swap, round_trips_threads, .timeout = 120)
{
    round_trips(VIDMM_IO_THREADS, 2);
}

Test(swap, round_trips_sync, .timeout = 120)
{
    round_trips(VIDMM_IO_SYNC, 0);
}

/* An asynchronous make-resident returns a paging fence at once; once it has passed, a lock finds
 * the content in memory. A DonotWait lock of an allocation on disk starts the read and says
 * busy. */
Test(swap, async_read_back_and_fences, .timeout = 60)
{
    struct rig r;
    memset(&r, 0, sizeof r);
    t_rng_init(&r.rng, 7);
    make_dir(&r);
    rig_open(&r, VIDMM_IO_AUTO, 2u << 20, 64u << 20, 1);
    for (int i = 0; i < N; i++)
        cr_assert_eq(gpu_write(&r, i), 0);
    int on = trim_and_find_on_disk(&r);
    uint64_t f = 0;
    cr_assert_eq(vidmm_make_resident_async(r.dev, &r.h[on], 1, &f), 0);
    cr_assert_gt(f, 0u);
    cr_assert_eq(vidmm_paging_fence_wait(r.dev, f, 10ull * 1000000000ull), 0);
    cr_assert_geq(vidmm_paging_fence_completed(r.dev), f);
    cr_assert_eq(where(&r, on), VIDMM_WHERE_SYSMEM);
    check(&r, on, "after an asynchronous read-back");
    cr_assert_eq(vidmm_paging_fence_wait(r.dev, f + 1000, 0), VIDMM_E_INVALID_ARG);
    /* DonotWait on another one on disk. */
    int other = trim_and_find_on_disk(&r);
    struct vidmm_lock_args la = { r.h[other], 0, 0, NULL, VIDMM_LOCK_DONOT_WAIT, 0, NULL };
    int err = vidmm_lock(r.dev, &la);
    if (err == 0) { /* the read finished before the lock looked (sync backend, or a fast disk) */
        cr_assert_eq(vidmm_unlock(r.dev, 1, &r.h[other]), 0);
    } else {
        cr_assert_eq(err, VIDMM_E_BUSY, "DonotWait lock of an allocation on disk: %s", vidmm_strerror(err));
    }
    check(&r, other, "after a DonotWait read-back");
    rig_close(&r);
}

/* Injected faults: a failed write-out (EIO) and a short one keep the content in memory; a
 * read-back whose data is corrupted (checksum mismatch) or fails (EIO) is reported as
 * VIDMM_E_IO, never returned corrupt, and the allocation says its content was lost. */
Test(swap, injected_faults, .timeout = 60)
{
    struct rig r;
    memset(&r, 0, sizeof r);
    t_rng_init(&r.rng, 9);
    make_dir(&r);
    rig_open(&r, VIDMM_IO_AUTO, 2u << 20, 64u << 20, 1);
    /* Write-outs fail with EIO: nothing goes to disk, nothing is lost. */
    vmio_test_inject(r.dev->io, VMIO_WRITE, 1000, -EIO, 0, false);
    for (int i = 0; i < N; i++)
        cr_assert_eq(gpu_write(&r, i), 0);
    cr_assert_eq(vidmm_trim_to_budget(r.dev, true), 0);
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(r.dev, &st), 0);
    cr_assert_gt(st.swap_write_failures, 0u, "the injected EIO never happened");
    for (int i = 0; i < N; i++) {
        cr_assert_neq(where(&r, i), VIDMM_WHERE_DISK, "allocation %d on disk after a failed write", i);
        check(&r, i, "after failed write-outs");
    }
    vmio_test_inject(r.dev->io, VMIO_WRITE, 0, 0, 0, false);
    /* Short writes are finished by the I/O layer. */
    vmio_test_inject(r.dev->io, VMIO_WRITE, 4, 0, 8192, false);
    cr_assert_eq(vidmm_trim_to_budget(r.dev, true), 0);
    for (int i = 0; i < N; i++)
        check(&r, i, "after short write-outs");
    /* Corrupt a read-back: VIDMM_E_IO, content lost, never returned corrupt. */
    int on = trim_and_find_on_disk(&r);
    vmio_test_inject(r.dev->io, VMIO_READ, 1, 0, 0, true);
    struct vidmm_lock_args la = { r.h[on], 0, 0, NULL, VIDMM_LOCK_READ_ONLY, 0, NULL };
    cr_assert_eq(vidmm_lock(r.dev, &la), VIDMM_E_IO, "a corrupted read-back was not reported");
    struct vidmm_alloc_info in = { .size_of = sizeof in };
    cr_assert_eq(vidmm_alloc_query(r.dev, r.h[on], &in), 0);
    cr_assert(in.content_lost, "content not marked lost");
    cr_assert_eq(vidmm_lock(r.dev, &la), 0, "a lost allocation stays usable");
    unsigned char pat = (unsigned char)(0x11 * (on % 15 + 1));
    cr_assert_eq(t_find_not(la.data, ASZ, pat), -1, "lost content is not the fill pattern");
    cr_assert_eq(vidmm_unlock(r.dev, 1, &r.h[on]), 0);
    memset(r.want[on], pat, ASZ);
    cr_assert_eq(vidmm_get_stats(r.dev, &st), 0);
    cr_assert_eq(st.swap_read_failures, 1u);
    /* A failing read (EIO) likewise. */
    int on2 = trim_and_find_on_disk(&r);
    vmio_test_inject(r.dev->io, VMIO_READ, 1, -EIO, 0, false);
    struct vidmm_alloc_ref ref = { r.h[on2], 0 };
    uint64_t fence;
    cr_assert_eq(vidmm_submit(r.dev, &ref, 1, 0, NULL, &fence), VIDMM_E_IO);
    memset(r.want[on2], (unsigned char)(0x11 * (on2 % 15 + 1)), ASZ);
    /* Every other allocation intact. */
    for (int i = 0; i < N; i++)
        check(&r, i, "after injected read faults");
    rig_close(&r);
}

/* ENOSPC from a real file system: the swap file on a 4 MiB tmpfs, 16 MiB of content over a
 * 2 MiB budget. Write-outs that do not fit fail; their content stays in memory, intact. */
Test(swap, enospc_on_small_tmpfs, .timeout = 60)
{
    struct rig r;
    memset(&r, 0, sizeof r);
    t_rng_init(&r.rng, 13);
    make_dir(&r);
    if (geteuid() != 0 || mount("vidmm-test", r.dir, "tmpfs", 0, "size=4m") != 0) {
        int e = errno;
        rmdir(r.dir);
        cr_skip("cannot mount a 4 MiB tmpfs at %s (%s): run the suite as root for the ENOSPC test", r.dir,
                geteuid() != 0 ? "not root" : strerror(e));
    }
    r.mounted = true;
    rig_open(&r, VIDMM_IO_AUTO, 2u << 20, 64u << 20, 1); /* the file may grow past the file system */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++)
            cr_assert_eq(gpu_write(&r, i), 0);
        cr_assert_eq(vidmm_trim_to_budget(r.dev, true), 0);
        for (int i = 0; i < N; i++)
            check(&r, i, "with the swap file system full");
    }
    struct vidmm_stats st = { .size_of = sizeof st };
    cr_assert_eq(vidmm_get_stats(r.dev, &st), 0);
    cr_assert_gt(st.swap_write_failures, 0u, "no write-out failed on a 4 MiB file system");
    cr_assert_gt(st.swap_writes, 0u, "nothing fitted on the file system at all");
    rig_close(&r);
}

/* Destruction with I/O in flight: write-outs just started, reads just started. */
Test(swap, destroy_with_io_in_flight, .timeout = 60)
{
    for (int k = 0; k < 4; k++) {
        struct rig r;
        memset(&r, 0, sizeof r);
        t_rng_init(&r.rng, 20u + (uint64_t)k);
        make_dir(&r);
        rig_open(&r, k % 2 ? VIDMM_IO_THREADS : VIDMM_IO_AUTO, 1u << 20, 64u << 20, 1);
        for (int i = 0; i < N; i++)
            cr_assert_eq(gpu_write(&r, i), 0);
        cr_assert_eq(vidmm_trim_to_budget(r.dev, k >= 2), 0); /* k < 2: destroy while writing */
        if (k >= 2) {
            uint64_t f;
            cr_assert_eq(vidmm_make_resident_async(r.dev, r.h, N, &f), 0); /* destroy while reading */
        }
        rig_close(&r);
    }
}

/* A read-back refused for want of memory (ENOMEM: nothing is said about the data) leaves the
 * disk copy as the content: the call reports VIDMM_E_NO_MEMORY, the allocation stays on disk,
 * nothing is marked lost, and the next call reads it back intact. */
Test(swap, read_enomem_keeps_the_disk_copy, .timeout = 60)
{
    struct rig r;
    memset(&r, 0, sizeof r);
    t_rng_init(&r.rng, 31);
    make_dir(&r);
    rig_open(&r, VIDMM_IO_AUTO, 2u << 20, 64u << 20, 1);
    for (int i = 0; i < N; i++)
        cr_assert_eq(gpu_write(&r, i), 0);
    int on = trim_and_find_on_disk(&r);
    vmio_test_inject(r.dev->io, VMIO_READ, 1, -ENOMEM, 0, false);
    struct vidmm_lock_args la = { r.h[on], 0, 0, NULL, VIDMM_LOCK_READ_ONLY, 0, NULL };
    cr_assert_eq(vidmm_lock(r.dev, &la), VIDMM_E_NO_MEMORY);
    struct vidmm_alloc_info in = { .size_of = sizeof in };
    cr_assert_eq(vidmm_alloc_query(r.dev, r.h[on], &in), 0);
    cr_assert_eq(in.where, VIDMM_WHERE_DISK, "the disk copy was given up");
    cr_assert_not(in.content_lost);
    check(&r, on, "after a read-back refused for memory");
    rig_close(&r);
}

/* Issue 12, defect 18: a swap file never outlives its process. A child creates a device with a
 * disk tier, has content written out (the file is in use), checks that no file has a name in
 * the swap directory meanwhile, and is killed (SIGKILL: no destroy, no cleanup of any kind).
 * The directory must be empty afterwards - the kernel freed the nameless file with the child. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

Test(swap, no_file_left_after_crash, .timeout = 60)
{
    struct rig r;
    memset(&r, 0, sizeof r);
    make_dir(&r);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct vidmm_segment_desc segs[1] = { { 0x10000000ull, SEG, SEG, VIDMM_SEGMENT_CPU_VISIBLE, 0, NULL, 0 } };
        struct vidmm_device_desc dd = VIDMM_DEVICE_DESC_INIT;
        dd.segments = segs;
        dd.segment_count = 1;
        dd.sysmem_budget = ASZ;
        dd.swap_path = r.path;
        /* 1 GiB of address space is plenty here. Not the default: in a forked child memcheck
         * spends minutes and gigabytes marking a reservation of tens of GiB (the 32 GiB it
         * falls back to under valgrind: 7.6 GB resident after 20 s, still going). */
        dd.sysmem_reserve = 1ull << 30;
        vidmm_device *dev;
        if (vidmm_device_create(&dd, &dev) != 0)
            _exit(10);
        for (int i = 0; i < 4; i++) {
            struct vidmm_alloc_desc d = { .size_of = sizeof d, .size = ASZ, .flags = VIDMM_ALLOC_CPU_VISIBLE,
                                          .priority = VIDMM_PRIORITY_NORMAL, .supported_read_set = 1,
                                          .supported_write_set = 1, .fill_pattern = 0x01010101u * (uint32_t)(i + 1) };
            vidmm_handle h;
            struct vidmm_lock_args la = { 0 };
            if (vidmm_alloc_create(dev, &d, &h) != 0)
                _exit(11);
            la.allocation = h;
            if (vidmm_lock(dev, &la) != 0 || vidmm_unlock(dev, 1, &h) != 0) /* content in system memory */
                _exit(12);
        }
        if (vidmm_trim_to_budget(dev, true) != 0)
            _exit(13);
        struct vidmm_stats st = { .size_of = sizeof st };
        vidmm_get_stats(dev, &st);
        if (st.swap_writes == 0)
            _exit(14);
        if (dir_entries(r.dir) != 0)
            _exit(15); /* the file in use has a name */
        raise(SIGKILL);
        _exit(16);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(!WIFEXITED(status), "the child failed before the crash: exit code %d (15: the swap file had a name "
                                  "while in use)", WEXITSTATUS(status));
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    int left = dir_entries(r.dir);
    cr_assert_eq(left, 0, "%d file(s) left in %s after the process died", left, r.dir);
    rmdir(r.dir);
}
