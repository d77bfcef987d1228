/* SPDX-License-Identifier: MIT */
/* tests/engine/test_refusals25.c - issue 25, item 5: every refusal of the engine explains
 * itself, and no misuse of a device hangs or is taken for another's. One test per defect, each
 * failing on the engine before its fix (main at bd5e243):
 *   1. a swap directory that does not exist: VIDMM_E_IO and a line naming the path and why;
 *   2. vidmm_submit() / vidmm_va_submit() without a fence pointer: refused (the work's fence,
 *      the only way to end its use, could not be had), nothing changed;
 *   3. vidmm_device_destroy() twice: the second is refused with its line, never a hang, and
 *      other calls given the destroyed device are refused the same way;
 *   4. a handle of device A given to device B, where the same index is live: refused, nothing
 *      changed in B. */
#include "t_engine.h"
#include "t_helpers.h"
#include "t_wddm2.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The DEBUG (refusal) or WARN line a call logged: exactly one, which names every string of
 * 'want' (NULL-terminated). */
static void expect_line(struct t_log *log, enum vidmm_log_level level, const char *call, const char *const *want)
{
    const char *msg = level == VIDMM_LOG_DEBUG ? log->first_debug : log->first_warn;
    cr_assert_eq(atomic_load(&log->count[level]), 1, "%s: %d lines at level %d, want 1 (first: \"%s\")", call,
                 atomic_load(&log->count[level]), (int)level, msg);
    for (size_t i = 0; want[i] != NULL; i++)
        cr_assert_not_null(strstr(msg, want[i]), "%s: the line does not name '%s': \"%s\"", call, want[i], msg);
}

/* 1. */
Test(refusals25, swap_directory_missing_names_path_and_errno)
{
    static struct vidmm_segment_desc segs[1];
    segs[0] = t_mem_seg(T_VIS_BASE, T_VIS_SIZE, VIDMM_SEGMENT_CPU_VISIBLE);
    struct vidmm_device_desc d = t_ddesc(segs, 1);
    d.swap_path = "/nonexistent-vidmm-issue25/dir/swap";
    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_WARN);
    vidmm_device *dev = (vidmm_device *)(uintptr_t)0x1;
    int rc = vidmm_device_create(&d, &dev);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    cr_assert_eq(rc, VIDMM_E_IO, "vidmm_device_create() returned %d (%s), want VIDMM_E_IO", rc, vidmm_strerror(rc));
    cr_assert_eq(dev, (vidmm_device *)(uintptr_t)0x1, "'*out' written on failure");
    const char *want[] = { "vidmm_device_create", "swap_path", d.swap_path, strerror(ENOENT), NULL };
    expect_line(&log, VIDMM_LOG_WARN, "vidmm_device_create", want);
}

/* 2. */
Test(refusals25, submit_without_fence_pointer_refused)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    struct vidmm_alloc_ref ref = { h, VIDMM_REF_WRITE };
    struct t_snap s;
    struct t_log log;
    t_snap1(&s, dev, h);
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_DEBUG);
    T_REFUSED(&s, vidmm_submit(dev, &ref, 1, 0, NULL, NULL), VIDMM_E_INVALID_ARG);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    const char *want[] = { "vidmm_submit", "fence", "NULL", "spec device.h", NULL };
    expect_line(&log, VIDMM_LOG_DEBUG, "vidmm_submit", want);
    cr_assert_eq(t_stats(dev).submissions, s.stats.submissions, "a submission was counted");
    /* With a fence pointer the same submission goes, and its fence ends its use. */
    uint64_t f = 0;
    T_OK(vidmm_submit(dev, &ref, 1, 0, NULL, &f));
    cr_assert_gt(f, 0);
    T_OK(vidmm_fence_signal(dev, f));
    vidmm_device_destroy(dev);
}

Test(refusals25, va_submit_without_fence_pointer_refused)
{
    vidmm_device *dev = w2_dev();
    vidmm_va_space *sp = w2_space(dev, T_PROC);
    uint64_t va = w2_reserve(sp, 0, T_MiB);
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    w2_map(sp, va, h, 0, 64 * T_KiB);
    w2_resident(dev, h);
    struct vidmm_va_ref ref = { va, 64, VIDMM_REF_WRITE, 0 };
    struct t_snap s;
    struct t_log log;
    t_snap1(&s, dev, h);
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_DEBUG);
    T_REFUSED(&s, vidmm_va_submit(sp, &ref, 1, 0, NULL), VIDMM_E_INVALID_ARG);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    const char *want[] = { "vidmm_va_submit", "fence", "NULL", "spec wddm2.h", NULL };
    expect_line(&log, VIDMM_LOG_DEBUG, "vidmm_va_submit", want);
    uint64_t f = 0;
    T_OK(vidmm_va_submit(sp, &ref, 1, 0, &f));
    T_OK(vidmm_fence_signal(dev, f));
    vidmm_device_destroy(dev);
}

/* 3. The second destroy used to wait for ever on the freed device's paging state. The shell of
 * a destroyed device stays allocated a while (device.h), so this reads no freed memory: the
 * AddressSanitizer build runs it too. */
Test(refusals25, destroy_twice_refused_not_hung, .timeout = 30)
{
    vidmm_device *dev = t_dev_std();
    vidmm_handle h = t_alloc_simple(dev, 64 * T_KiB, T_SET(T_VIS));
    t_use(dev, h, 0);
    vidmm_device_destroy(dev);

    struct t_log log;
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_DEBUG);
    vidmm_device_destroy(dev);
    char addr[32];
    snprintf(addr, sizeof(addr), "%p", (void *)dev);
    const char *want[] = { "vidmm_device_destroy", "dev", addr, "destroyed", NULL };
    expect_line(&log, VIDMM_LOG_DEBUG, "vidmm_device_destroy", want);

    /* Every public call given it is refused the same way. */
    struct vidmm_alloc_desc d = t_adesc(64 * T_KiB, T_SET(T_VIS));
    vidmm_handle out = T_OUT_SENTINEL;
    t_log_reset(&log);
    cr_assert_eq(vidmm_alloc_create(dev, &d, &out), VIDMM_E_INVALID_ARG);
    cr_assert_eq(out, T_OUT_SENTINEL, "'*out' written");
    const char *want_create[] = { "vidmm_alloc_create", "dev", "destroyed", NULL };
    expect_line(&log, VIDMM_LOG_DEBUG, "vidmm_alloc_create", want_create);
    t_log_reset(&log);
    cr_assert_eq(vidmm_fence_wait(dev, 1, UINT64_MAX), VIDMM_E_INVALID_ARG);
    const char *want_wait[] = { "vidmm_fence_wait", "destroyed", NULL };
    expect_line(&log, VIDMM_LOG_DEBUG, "vidmm_fence_wait", want_wait);
    cr_assert_eq(vidmm_fence_completed(dev), 0);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);

    /* Devices made since are unaffected. */
    vidmm_device *again = t_dev_std();
    vidmm_handle h2 = t_alloc_simple(again, 64 * T_KiB, T_SET(T_VIS));
    t_use(again, h2, 0);
    vidmm_device_destroy(again);
}

/* 4. Two devices, one allocation each, made the same way: each is its device's first, so both
 * sit at the same index of their handle tables, alive. Device A's handle given to device B
 * used to name B's allocation. */
Test(refusals25, handle_of_another_device_refused)
{
    vidmm_device *a = t_dev_std(), *b = t_dev_std();
    vidmm_handle ha = t_alloc_simple(a, 64 * T_KiB, T_SET(T_VIS));
    vidmm_handle hb = t_alloc_simple(b, 64 * T_KiB, T_SET(T_VIS));
    t_use(b, hb, 0);
    cr_assert_neq(ha, hb, "two devices gave their first allocations the same handle 0x%x", ha);

    struct t_snap s;
    struct t_log log;
    t_snap1(&s, b, hb);
    t_log_reset(&log);
    vidmm_set_log_fn(t_log_record, &log, VIDMM_LOG_DEBUG);
    struct vidmm_alloc_info info;
    memset(&info, 0, sizeof info);
    info.size_of = sizeof info;
    T_REFUSED(&s, vidmm_alloc_query(b, ha, &info), VIDMM_E_INVALID_ARG);
    char hx[16];
    snprintf(hx, sizeof(hx), "0x%x", ha);
    const char *want[] = { "vidmm_alloc_query", "handle", hx, "spec 15.11", NULL };
    expect_line(&log, VIDMM_LOG_DEBUG, "vidmm_alloc_query", want);
    t_log_reset(&log);
    T_REFUSED(&s, vidmm_alloc_destroy(b, ha), VIDMM_E_INVALID_ARG);
    struct vidmm_alloc_ref ref = { ha, VIDMM_REF_WRITE };
    uint64_t f = 0;
    T_REFUSED(&s, vidmm_submit(b, &ref, 1, 0, NULL, &f), VIDMM_E_INVALID_ARG);
    T_REFUSED(&s, vidmm_evict(b, &ha, 1), VIDMM_E_INVALID_ARG);
    vidmm_set_log_fn(NULL, NULL, VIDMM_LOG_WARN);
    cr_assert_eq(f, 0, "'*fence' written");

    /* Each device still takes its own. */
    T_OK(vidmm_alloc_query(b, hb, &info));
    T_OK(vidmm_alloc_query(a, ha, &info));
    T_OK(vidmm_alloc_destroy(b, hb));
    T_OK(vidmm_alloc_destroy(a, ha));
    vidmm_device_destroy(b);
    vidmm_device_destroy(a);
}
