/* SPDX-License-Identifier: MIT */
/* tests/engine/test_conf_wddm2_budget.c - conformance: per-process budgets per segment group on
 * a WDDM2 device (spec 12, 15.22): Budget / CurrentUsage / CurrentReservation /
 * AvailableForReservation for LOCAL and NON_LOCAL, counting only LocalBudgetGroup /
 * NonLocalBudgetGroup segments, ChangeVideoMemoryReservation within [0,
 * AvailableForReservation], and budget changes seen through NumBytesToTrim (make-resident and
 * evict) and the budget-change callbacks (when called, with what, calls back into the library,
 * unregistration). */
#include "t_wddm2.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#define Q (256 * T_KiB)

static struct vidmm_video_memory_info qvm(vidmm_device *dev, uint32_t process, uint32_t group)
{
    struct vidmm_video_memory_info i;
    memset(&i, 0, sizeof i);
    i.size_of = sizeof i;
    int rc = vidmm_wddm2_query_video_memory(dev, process, group, &i);
    cr_assert_eq(rc, 0, "vidmm_wddm2_query_video_memory() returned %d (%s)", rc, vidmm_strerror(rc));
    return i;
}

/* spec 12: D3DKMT_QUERYVIDEOMEMORYINFO MemorySegmentGroup LOCAL = 0, NON_LOCAL = 1. */
Test(wddm2_budget, group_values)
{
    cr_assert_eq(VIDMM_SEGMENT_GROUP_LOCAL, 0);
    cr_assert_eq(VIDMM_SEGMENT_GROUP_NON_LOCAL, 1);
}

/* spec 15.22: "counting only LocalBudgetGroup (LOCAL) and NonLocalBudgetGroup (NON_LOCAL)
 * segments" - the budget of a fresh process is its group's segments' total; nothing used. */
Test(wddm2_budget, initial_values)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_video_memory_info l = qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL);
    struct vidmm_video_memory_info n = qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL);
    cr_assert_eq(l.budget, W2_LOCAL_MAX);
    cr_assert_eq(n.budget, W2_NONLOCAL_MAX);
    cr_assert(l.current_usage == 0 && l.current_reservation == 0 && n.current_usage == 0);
    cr_assert_eq(l.available_for_reservation, W2_LOCAL_MAX);
    cr_assert_eq(n.available_for_reservation, W2_NONLOCAL_MAX);
    vidmm_device_destroy(dev);
}

/* spec 15.22: segments outside both groups make no budget at all. */
Test(wddm2_budget, unflagged_segments_count_nowhere)
{
    struct vidmm_segment_desc segs[2];
    segs[0] = t_mem_seg(T_VIS_BASE, T_MiB, VIDMM_SEGMENT_CPU_VISIBLE);
    segs[1] = t_aper_seg(T_APE_BASE, T_MiB, VIDMM_SEGMENT_APPLICATION_TARGET);
    struct vidmm_device_desc d = t_ddesc(segs, 2);
    d.flags |= VIDMM_DEVICE_WDDM2;
    vidmm_device *dev = t_dev(&d);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).budget, 0);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL).budget, 0);
    vidmm_handle h = t_alloc_simple(dev, Q, T_SET(1));
    w2_resident(dev, h); /* charged nowhere: a budget of 0 does not stop it */
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, 0);
    vidmm_device_destroy(dev);
}

/* spec 12: CurrentUsage follows MakeResident / Evict, per group, per process. */
Test(wddm2_budget, usage_follows_residency)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle l = t_alloc_simple(dev, Q, T_SET(T_LOC)), a = t_alloc_simple(dev, 2 * Q, T_SET(T_APE));
    struct vidmm_alloc_desc od = t_adesc(Q, T_SET(T_VIS));
    od.process = T_OTHER_PROC;
    vidmm_handle o = t_alloc(dev, &od);
    w2_resident(dev, l);
    w2_resident(dev, l); /* a second reference charges nothing more */
    w2_resident(dev, a);
    w2_resident(dev, o);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, Q);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL).current_usage, 2 * Q);
    cr_assert_eq(qvm(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, Q);
    w2_evict(dev, l, 0);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, Q);
    w2_evict(dev, l, VIDMM_EVICT_ONLY_IF_NECESSARY); /* off the list: uncharged though still there */
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, 0);
    T_OK(vidmm_alloc_destroy(dev, a));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL).current_usage, 0);
    vidmm_device_destroy(dev);
}

/* spec 12: "D3DKMT_CHANGEVIDEOMEMORYRESERVATION sets Reservation in [0,
 * AvailableForReservation]"; 15.22: outside it -> STATUS_INVALID_PARAMETER. */
Test(wddm2_budget, reservation_range)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 3 * Q));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_reservation, 3 * Q);
    /* Another process may reserve what is left, not more. */
    struct vidmm_video_memory_info o = qvm(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL);
    cr_assert_eq(o.available_for_reservation, W2_LOCAL_MAX - 3 * Q);
    T_RC(vidmm_wddm2_change_reservation(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL, W2_LOCAL_MAX - 3 * Q + T_PG),
         VIDMM_E_INVALID_ARG);
    cr_assert_eq(qvm(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_reservation, 0,
                 "a refused reservation changed it");
    T_OK(vidmm_wddm2_change_reservation(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL, W2_LOCAL_MAX - 3 * Q));
    /* A process's own reservation does not limit its next one. */
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 3 * Q));
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 0));
    T_RC(vidmm_wddm2_change_reservation(dev, T_PROC, 2, 0), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_change_reservation(NULL, T_PROC, 0, 0), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* wddm2.h: the budget never goes below the reservation (the host's shrink stops there). */
Test(wddm2_budget, budget_not_below_reservation)
{
    vidmm_device *dev = w2_dev();
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 2 * Q));
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).budget, 2 * Q);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 3 * Q));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).budget, 3 * Q);
    vidmm_device_destroy(dev);
}

/* spec 15.22: "budget changes are observable through NumBytesToTrim": the host shrinks the
 * budget under what is resident; the next make-resident says by how much to trim. */
Test(wddm2_budget, shrink_seen_through_bytes_to_trim)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, 2 * Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    struct vidmm_video_memory_info i = qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL);
    cr_assert(i.current_usage > i.budget);
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, &b, 1, 0, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, 2 * Q, "usage 2Q + Q over a budget of Q");
    vidmm_device_destroy(dev);
}

/* wddm2.h: queries change nothing and refuse bad arguments, '*out' untouched. */
Test(wddm2_budget, query_rules)
{
    vidmm_device *dev = w2_dev();
    struct vidmm_video_memory_info i;
    memset(&i, 0xAB, sizeof i);
    i.size_of = sizeof i;
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 2, &i), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 0, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_query_video_memory(NULL, T_PROC, 0, &i), VIDMM_E_INVALID_ARG);
    i.size_of = sizeof i - 1;
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 0, &i), VIDMM_E_INVALID_ARG);
    cr_assert_eq(i.budget, 0xABABABABABABABABull, "a refused query wrote its output");
    vidmm_device_destroy(dev);
    dev = t_dev_std();
    i.size_of = sizeof i;
    T_RC(vidmm_wddm2_query_video_memory(dev, T_PROC, 0, &i), VIDMM_E_INVALID_ARG); /* WDDM1 device */
    T_RC(vidmm_wddm2_change_reservation(dev, T_PROC, 0, 0), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* spec 15.22: NumBytesToTrim after the host shrinks the budget below usage, from Evict too: what
 * the process is still over its budget after the eviction, 0 once it is not. */
Test(wddm2_budget, shrink_seen_through_evict_bytes_to_trim)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, 2 * Q, T_SET(T_VIS)), b = t_alloc_simple(dev, Q, T_SET(T_VIS));
    w2_resident(dev, a);
    w2_resident(dev, b);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, 3 * Q);
    uint64_t trim = 0;
    T_OK(w2_evict_rc(dev, &b, 1, 0, &trim));
    cr_assert_eq(trim, Q, "usage 2Q over a budget of Q after evicting b");
    T_OK(w2_evict_rc(dev, &a, 1, 0, &trim));
    cr_assert_eq(trim, 0, "nothing over the budget any more");
    vidmm_device_destroy(dev);
}

/* =============================================================================================
 * Budget-change callbacks (wddm2.h; the D3D12 budget-change event).
 * =========================================================================================== */
#define MAX_SEEN 8
struct seen {
    uint32_t n;
    struct vidmm_budget_change ch[MAX_SEEN];
    vidmm_device *dev;
    /* re-entry test */
    struct vidmm_video_memory_info inside;
    int inside_rc;
    uint64_t unregister_cookie; /* 0: none */
    int unregister_rc;
    vidmm_handle trim;          /* evicted from the callback when not 0 */
    int trim_rc;
};

static void on_budget(void *arg, const struct vidmm_budget_change *c)
{
    struct seen *s = arg;
    if (s->n < MAX_SEEN)
        s->ch[s->n] = *c;
    s->n++;
    if (s->dev) {
        /* Calls back into the library: the device mutex is not held. */
        memset(&s->inside, 0, sizeof s->inside);
        s->inside.size_of = sizeof s->inside;
        s->inside_rc = vidmm_wddm2_query_video_memory(s->dev, c->process, c->group, &s->inside);
        if (s->trim) {
            s->trim_rc = w2_evict_rc(s->dev, &s->trim, 1, 0, NULL);
            s->trim = 0;
        }
        if (s->unregister_cookie) {
            s->unregister_rc = vidmm_wddm2_unregister_budget_callback(s->dev, s->unregister_cookie);
            s->unregister_cookie = 0;
        }
    }
}

static uint64_t reg(vidmm_device *dev, uint32_t process, struct seen *s)
{
    uint64_t cookie = 0;
    T_OK(vidmm_wddm2_register_budget_callback(dev, process, on_budget, s, &cookie));
    cr_assert_neq(cookie, 0);
    return cookie;
}

/* wddm2.h: a new Budget value of the process, in either group, calls its callbacks once each,
 * with the new budget, the previous one and the current usage; the same value, another process's
 * change, or a shrink the reservation clamps back to the same budget call nothing. */
Test(wddm2_budget, callback_on_host_change)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, 2 * Q, T_SET(T_VIS));
    w2_resident(dev, a);
    struct seen s, s2;
    memset(&s, 0, sizeof s);
    memset(&s2, 0, sizeof s2);
    reg(dev, T_PROC, &s);
    reg(dev, T_PROC, &s2);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s2.n, 1, "the second registration was not called");
    cr_assert_eq(s.ch[0].size_of, sizeof s.ch[0]);
    cr_assert_eq(s.ch[0].process, T_PROC);
    cr_assert_eq(s.ch[0].group, VIDMM_SEGMENT_GROUP_LOCAL);
    cr_assert_eq(s.ch[0].budget, Q);
    cr_assert_eq(s.ch[0].previous_budget, W2_LOCAL_MAX);
    cr_assert_eq(s.ch[0].current_usage, 2 * Q, "usage above the new budget");
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q)); /* the same value */
    T_OK(vidmm_wddm2_set_budget(dev, T_OTHER_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(s.n, 1, "called without a change of its process's budget");
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_NON_LOCAL, 3 * Q));
    cr_assert_eq(s.n, 2);
    cr_assert_eq(s.ch[1].group, VIDMM_SEGMENT_GROUP_NON_LOCAL);
    cr_assert_eq(s.ch[1].budget, 3 * Q);
    cr_assert_eq(s.ch[1].previous_budget, W2_NONLOCAL_MAX);
    cr_assert_eq(s.ch[1].current_usage, 0);
    /* Refused calls notify nothing. */
    T_RC(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, W2_LOCAL_MAX + 1), VIDMM_E_INVALID_ARG);
    cr_assert_eq(s.n, 2);
    /* The reservation clamps a shrink: 2Q reserved, the budget already 2Q, asked Q: no change. */
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 2 * Q));
    cr_assert_eq(s.n, 3);
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 2 * Q));
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(s.n, 3, "a clamped shrink that left the budget as it was notified");
    vidmm_device_destroy(dev);
}

/* wddm2.h: a reservation raising the budget notifies; one below the budget does not. */
Test(wddm2_budget, callback_on_reservation_raise)
{
    vidmm_device *dev = w2_dev();
    struct seen s;
    memset(&s, 0, sizeof s);
    reg(dev, T_PROC, &s);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(s.n, 1);
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q / 2));
    cr_assert_eq(s.n, 1, "a reservation below the budget notified");
    T_OK(vidmm_wddm2_change_reservation(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 3 * Q));
    cr_assert_eq(s.n, 2);
    cr_assert_eq(s.ch[1].budget, 3 * Q);
    cr_assert_eq(s.ch[1].previous_budget, Q);
    cr_assert_eq(s.ch[1].group, VIDMM_SEGMENT_GROUP_LOCAL);
    vidmm_device_destroy(dev);
}

/* wddm2.h: the callback runs after the device mutex is released - it may query, evict (trim)
 * and unregister itself; the query inside sees the new budget and the usage before the trim. A
 * callback run with the mutex held would deadlock here (hence the timeout). */
Test(wddm2_budget, callback_may_call_back, .timeout = 20)
{
    vidmm_device *dev = w2_dev();
    vidmm_handle a = t_alloc_simple(dev, 2 * Q, T_SET(T_VIS));
    w2_resident(dev, a);
    struct seen s;
    memset(&s, 0, sizeof s);
    s.dev = dev;
    s.trim = a;
    const uint64_t cookie = reg(dev, T_PROC, &s);
    s.unregister_cookie = cookie;
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.inside_rc, 0);
    cr_assert_eq(s.inside.budget, Q);
    cr_assert_eq(s.inside.current_usage, 2 * Q);
    cr_assert_eq(s.trim_rc, 0, "the evict from the callback returned %d", s.trim_rc);
    cr_assert_eq(s.unregister_rc, 0);
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, 0, "the trim did not take");
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 2 * Q));
    cr_assert_eq(s.n, 1, "called after unregistering itself");
    T_RC(vidmm_wddm2_unregister_budget_callback(dev, cookie), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(dev);
}

/* wddm2.h: unregistration rules; after it the callback is not called. */
Test(wddm2_budget, callback_rules)
{
    vidmm_device *dev = w2_dev();
    struct seen s;
    memset(&s, 0, sizeof s);
    uint64_t cookie = 77;
    T_RC(vidmm_wddm2_register_budget_callback(dev, T_PROC, NULL, &s, &cookie), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_register_budget_callback(dev, T_PROC, on_budget, &s, NULL), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_register_budget_callback(NULL, T_PROC, on_budget, &s, &cookie), VIDMM_E_INVALID_ARG);
    cr_assert_eq(cookie, 77, "a refused registration wrote the cookie");
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q));
    cr_assert_eq(s.n, 0, "a refused registration is called");
    const uint64_t c1 = reg(dev, T_PROC, &s), c2 = reg(dev, T_PROC, &s);
    cr_assert_neq(c1, c2);
    T_RC(vidmm_wddm2_unregister_budget_callback(dev, 0), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_unregister_budget_callback(dev, c2 + 100), VIDMM_E_INVALID_ARG);
    T_RC(vidmm_wddm2_unregister_budget_callback(NULL, c1), VIDMM_E_INVALID_ARG);
    T_OK(vidmm_wddm2_unregister_budget_callback(dev, c1));
    T_RC(vidmm_wddm2_unregister_budget_callback(dev, c1), VIDMM_E_INVALID_ARG);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 2 * Q));
    cr_assert_eq(s.n, 1, "the unregistered callback was called (or the other was not)");
    /* Left registered: freed with the device. */
    vidmm_device *w1 = t_dev_std();
    T_RC(vidmm_wddm2_register_budget_callback(w1, T_PROC, on_budget, &s, &cookie), VIDMM_E_INVALID_ARG);
    vidmm_device_destroy(w1);
    vidmm_device_remove(dev);
    T_RC(vidmm_wddm2_register_budget_callback(dev, T_PROC, on_budget, &s, &cookie), VIDMM_E_DEVICE_REMOVED);
    T_OK(vidmm_wddm2_unregister_budget_callback(dev, c2)); /* works after removal */
    vidmm_device_destroy(dev);
}

/* wddm2.h: when the unregistration returns, the callback is not running on another thread. */
struct slow {
    atomic_bool in, done;
};

static void on_budget_slow(void *arg, const struct vidmm_budget_change *c)
{
    (void)c;
    struct slow *s = arg;
    atomic_store(&s->in, true);
    struct timespec ts = { 0, 100 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    atomic_store(&s->done, true);
}

struct setter {
    vidmm_device *dev;
    int rc;
};

static void *set_thread(void *arg)
{
    struct setter *t = arg;
    t->rc = vidmm_wddm2_set_budget(t->dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, Q);
    return NULL;
}

Test(wddm2_budget, unregister_waits_for_running_callback)
{
    vidmm_device *dev = w2_dev();
    struct slow s;
    atomic_init(&s.in, false);
    atomic_init(&s.done, false);
    uint64_t cookie = 0;
    T_OK(vidmm_wddm2_register_budget_callback(dev, T_PROC, on_budget_slow, &s, &cookie));
    struct setter t = { dev, -99 };
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, set_thread, &t), 0);
    while (!atomic_load(&s.in))
        sched_yield();
    T_OK(vidmm_wddm2_unregister_budget_callback(dev, cookie));
    cr_assert(atomic_load(&s.done), "the unregistration returned while the callback ran");
    pthread_join(th, NULL);
    T_OK(t.rc);
    vidmm_device_destroy(dev);
}

/* issue 27 (wddm2.h: "'bytes_to_trim' says how much to evict before retrying"): with
 * CantTrimFurther the limit a MakeResident fails against is the group's maximum budget, so
 * NumBytesToTrim is what the request is over that maximum - not over the current budget, which
 * the flag allows exceeding. Budget 16P, usage 24P, a 48P request, a 64P group: 8P. */
Test(wddm2_budget, cant_trim_further_bytes_to_trim_against_the_maximum)
{
    const uint64_t P = W2_LOCAL_MAX / 64;
    vidmm_device *dev = w2_dev();
    vidmm_handle used = t_alloc_simple(dev, 24 * P, T_SET(T_VIS));
    vidmm_handle req[2] = { t_alloc_simple(dev, 24 * P, T_SET(T_VIS) | T_SET(T_LOC)),
                            t_alloc_simple(dev, 24 * P, T_SET(T_VIS) | T_SET(T_LOC)) };
    w2_resident(dev, used);
    T_OK(vidmm_wddm2_set_budget(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL, 16 * P));
    cr_assert_eq(qvm(dev, T_PROC, VIDMM_SEGMENT_GROUP_LOCAL).current_usage, 24 * P);
    struct vidmm_make_resident_args r;
    T_RC(w2_mr_rc(dev, req, 2, VIDMM_MAKE_RESIDENT_CANT_TRIM_FURTHER, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, 8 * P, "usage 24P + 48P over the 64P maximum is 8P, reported %llu P",
                 (unsigned long long)(r.bytes_to_trim / P));
    /* Without the flag the current budget is the limit: 24P + 48P over 16P. */
    T_RC(w2_mr_rc(dev, req, 2, 0, &r), VIDMM_E_NO_MEMORY);
    cr_assert_eq(r.bytes_to_trim, 56 * P);
    vidmm_device_destroy(dev);
}
