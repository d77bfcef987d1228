/* SPDX-License-Identifier: MIT */
/* tests/engine/bench_wddm2_residency.c - how long WDDM2 residency calls take on 1, 64 and 4096
 * allocations, each next to the WDDM1 path doing the same work (issue 15: "MakeResident of an
 * already-resident set of 4096 allocations <= 100 us"; deliverable 8: "each next to the WDDM1
 * path doing the same work"). Not a test and not registered with CTest: run it by hand.
 *
 * For each list size two devices are made (b_wddm2.h): one 64 MiB CPU-visible memory segment,
 * no paging thread, the list's allocations of 4 KiB (process 1) made resident - one created
 * with VIDMM_DEVICE_WDDM2, one without. Each round measures, on the same handles, every step
 * below on one side, then every step on the other (WDDM2 first in even rounds, WDDM1 first in
 * odd ones, so that neither always runs in the other's wake; a side's steps run back to back,
 * so that its warm call is warm):
 *   make-resident, already resident   WDDM2: one vidmm_wddm2_make_resident() call of the list,
 *                                     every one resident with its paging done (one more
 *                                     reference each); WDDM1: one vidmm_make_resident() of the
 *                                     list (WDDM1 has no references: the set stays as it is).
 *                                     First right after the round before paged the list through
 *                                     the caches (cold), then once more at once (warm);
 *   evict, dropping a reference       WDDM2 only: the Evict that takes the warm call's extra
 *                                     reference back (nothing moves; WDDM1 has no counterpart);
 *   evict                             WDDM2: one vidmm_wddm2_evict() call taking the list off
 *                                     the residency list (transfers out queued: the call), then
 *                                     the paging it queued run to the end (its paging); WDDM1:
 *                                     one vidmm_evict() of the list, which evicts and waits for
 *                                     its own paging, so only the two totals compare;
 *   make-resident, not resident       WDDM2: one call paging the list back in (page-ins queued),
 *                                     then its paging fence waited for; WDDM1: one
 *                                     vidmm_make_resident(), which waits for its paging.
 * Then, on the 4096-allocation devices, offer + reclaim round trips (vidmm_offer() then
 * vidmm_reclaim(), priority NORMAL, not discarded) of one resident allocation and of 64: the
 * same calls on both devices - offer and reclaim work on WDDM1 devices too (wddm2.h, spec 11,
 * 15.20) - 1000 pairs per round, the round's mean per pair.
 * The calls and the waits are timed apart: the call is the residency work, the wait the
 * copies. Prints the median round of each in microseconds: first the WDDM2 figures of 4096
 * allocations with issue 15's targets, then the table of both models, the ratio being
 * WDDM2 / WDDM1 (below 1: WDDM2 is faster). No figure is checked against anything: a failing
 * call ends the program with status 1, and that is all it asserts.
 *
 * usage: bench_wddm2_residency [rounds (default 11)] */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "b_wddm2.h"

#define ASIZE 4096u
#define NMAX 4096u
#define PAIRS 1000u     /* offer + reclaim pairs per round */

static const uint32_t sizes[] = { 1, 64, NMAX };
#define NSIZES (sizeof sizes / sizeof sizes[0])
static const uint32_t offer_counts[] = { 1, 64 };
#define NOFFER (sizeof offer_counts / sizeof offer_counts[0])

/* What is timed, one row per operation and list size; a WDDM1 entry left NAN has no
 * counterpart. */
enum op {
    OP_COLD,            /* make-resident, already resident, cold */
    OP_WARM,            /* the same at once after */
    OP_DROP,            /* WDDM2 Evict of the extra reference */
    OP_EV_CALL,         /* WDDM2 Evict that evicts: the call */
    OP_EV_PAGING,       /* its paging */
    OP_EV_TOTAL,        /* call + paging; WDDM1: vidmm_evict() */
    OP_MR_CALL,         /* WDDM2 MakeResident of a set not resident: the call */
    OP_MR_PAGING,       /* its paging */
    OP_MR_TOTAL,        /* call + paging; WDDM1: vidmm_make_resident() */
    OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
    "make-resident, resident (cold)", "make-resident, resident (warm)", "evict, drops the extra reference",
    "evict (call)", "evict's paging (transfers out)", "evict + its paging", "make-resident, not resident",
    "its paging (transfers in)", "make-resident + its paging",
};

/* One side of the comparison: a device with its handles and its timings. */
struct side {
    bool wddm2;
    vidmm_device *dev;
    vidmm_handle h[NMAX];
    double *t[OP_COUNT];        /* [round], microseconds */
    double *orc[NOFFER];        /* offer + reclaim, [round], microseconds per pair */
};

static int failed(const char *what, bool wddm2, uint32_t n, int rc)
{
    fprintf(stderr, "bench_wddm2_residency: %s (%s device, %u allocations): %s\n", what, wddm2 ? "WDDM2" : "WDDM1", n,
            vidmm_strerror(rc));
    return 1;
}

/* The steps of a round, in order; each is run on one side, then on the other. */
enum step { STEP_COLD, STEP_WARM, STEP_DROP, STEP_EVICT, STEP_MAKE_RESIDENT, STEP_COUNT };

static int run_step(struct side *s, enum step st, unsigned k, uint32_t n)
{
    uint64_t fence = 0, t0, t1, t2;
    int rc = 0;
    switch (st) {
    case STEP_COLD:
    case STEP_WARM:
        t0 = b_now_ns();
        rc = s->wddm2 ? b_w2_make_resident(s->dev, s->h, n, &fence) : vidmm_make_resident(s->dev, s->h, n, NULL);
        t1 = b_now_ns();
        s->t[st == STEP_COLD ? OP_COLD : OP_WARM][k] = b_us(t0, t1);
        if (rc)
            return failed("make-resident of a resident set", s->wddm2, n, rc);
        /* Back to one reference after the cold call: nothing moves, nothing timed. (The warm
         * call's reference is dropped by STEP_DROP, timed.) */
        if (s->wddm2 && st == STEP_COLD && (rc = b_w2_evict(s->dev, s->h, n)) != 0)
            return failed("evict of the extra reference", true, n, rc);
        return 0;
    case STEP_DROP:
        if (!s->wddm2)
            return 0; /* no references on WDDM1 */
        t0 = b_now_ns();
        rc = b_w2_evict(s->dev, s->h, n);
        t1 = b_now_ns();
        s->t[OP_DROP][k] = b_us(t0, t1);
        return rc ? failed("evict of the extra reference", true, n, rc) : 0;
    case STEP_EVICT:
        t0 = b_now_ns();
        if (s->wddm2) {
            rc = b_w2_evict(s->dev, s->h, n);
            t1 = b_now_ns();
            if (!rc)
                rc = b_w2_drain(s->dev);
            t2 = b_now_ns();
            s->t[OP_EV_CALL][k] = b_us(t0, t1);
            s->t[OP_EV_PAGING][k] = b_us(t1, t2);
        } else {
            rc = vidmm_evict(s->dev, s->h, n);
            t2 = b_now_ns();
        }
        s->t[OP_EV_TOTAL][k] = b_us(t0, t2);
        return rc ? failed("evict", s->wddm2, n, rc) : 0;
    case STEP_MAKE_RESIDENT:
        t0 = b_now_ns();
        if (s->wddm2) {
            rc = b_w2_make_resident(s->dev, s->h, n, &fence);
            t1 = b_now_ns();
            if (!rc)
                rc = vidmm_wddm2_paging_fence_wait(s->dev, fence, UINT64_MAX);
            t2 = b_now_ns();
            s->t[OP_MR_CALL][k] = b_us(t0, t1);
            s->t[OP_MR_PAGING][k] = b_us(t1, t2);
        } else {
            rc = vidmm_make_resident(s->dev, s->h, n, NULL);
            t2 = b_now_ns();
        }
        s->t[OP_MR_TOTAL][k] = b_us(t0, t2);
        return rc ? failed("make-resident of a set not resident", s->wddm2, n, rc) : 0;
    case STEP_COUNT:
        break;
    }
    return 0;
}

/* PAIRS offer + reclaim round trips of the 'count' handles from 'first', the content kept;
 * stores the mean per pair. */
static int offer_reclaim(struct side *s, unsigned slot, unsigned k, uint32_t first, uint32_t count)
{
    uint32_t results[64];
    struct vidmm_offer_args oa;
    memset(&oa, 0, sizeof oa);
    oa.size_of = sizeof oa;
    oa.allocations = &s->h[first];
    oa.count = count;
    oa.priority = VIDMM_OFFER_PRIORITY_NORMAL;
    struct vidmm_reclaim_args ra;
    memset(&ra, 0, sizeof ra);
    ra.size_of = sizeof ra;
    ra.allocations = &s->h[first];
    ra.count = count;
    ra.results = results;
    int rc = 0;
    const uint64_t t0 = b_now_ns();
    for (unsigned i = 0; !rc && i < PAIRS; i++) {
        rc = vidmm_offer(s->dev, &oa);
        if (!rc)
            rc = vidmm_reclaim(s->dev, &ra);
        for (uint32_t j = 0; !rc && j < count; j++)
            if (results[j] != VIDMM_RECLAIM_OK)
                rc = VIDMM_E_INVALID_ARG; /* discarded: not what is measured */
    }
    s->orc[slot][k] = b_us(t0, b_now_ns()) / PAIRS;
    return rc ? failed("offer + reclaim", s->wddm2, count, rc) : 0;
}

static double med(double *v, unsigned rounds)
{
    return isnan(v[0]) ? NAN : b_median(v, rounds);
}

/* A figure in microseconds, or "-" for none. */
static const char *fmt_us(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, v < 10 ? "%.3f" : "%.1f", v);
    return buf;
}

static void print_row(const char *name, uint32_t n, double w2, double w1)
{
    char a[24], b[24], r[24] = "-";
    if (!isnan(w1) && !isnan(w2) && w1 > 0)
        snprintf(r, sizeof r, "%.2f", w2 / w1);
    printf("  %-34s %6u %11s %11s %7s\n", name, n, fmt_us(a, sizeof a, w2), fmt_us(b, sizeof b, w1), r);
}

int main(int argc, char **argv)
{
    const unsigned rounds = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 11;
    if (rounds == 0)
        return 2;
    struct side *side[2]; /* [0] WDDM2, [1] WDDM1 */
    double res[NSIZES][OP_COUNT][2];
    double orc[NOFFER][2];
    for (unsigned s = 0; s < 2; s++) {
        side[s] = calloc(1, sizeof *side[s]);
        if (!side[s])
            return 1;
        side[s]->wddm2 = s == 0;
        for (unsigned o = 0; o < OP_COUNT; o++)
            if ((side[s]->t[o] = malloc(sizeof(double) * rounds)) == NULL)
                return 1;
        for (unsigned o = 0; o < NOFFER; o++)
            if ((side[s]->orc[o] = malloc(sizeof(double) * rounds)) == NULL)
                return 1;
    }
    for (unsigned z = 0; z < NSIZES; z++) {
        const uint32_t n = sizes[z];
        for (unsigned s = 0; s < 2; s++) {
            int rc = b_setup(side[s]->wddm2, n, ASIZE, true, &side[s]->dev, side[s]->h);
            if (rc)
                return failed("setup", side[s]->wddm2, n, rc);
            for (unsigned o = 0; o < OP_COUNT; o++)
                for (unsigned k = 0; k < rounds; k++)
                    side[s]->t[o][k] = NAN;
        }
        /* A side runs its whole round at once: its warm call follows its own cold call and
         * Evict, as an application's would, not the other device's work. */
        for (unsigned k = 0; k < rounds; k++)
            for (unsigned i = 0; i < 2; i++)
                for (unsigned st = 0; st < STEP_COUNT; st++)
                    if (run_step(side[i ^ (k & 1)], (enum step)st, k, n))
                        return 1;
        for (unsigned o = 0; o < OP_COUNT; o++)
            for (unsigned s = 0; s < 2; s++)
                res[z][o][s] = med(side[s]->t[o], rounds);
        if (n == NMAX) {
            /* Offer + reclaim on these devices, every allocation resident: round k takes the
             * handles from k * count on, so that rounds do not reuse one allocation's lines. */
            for (unsigned k = 0; k < rounds; k++)
                for (unsigned o = 0; o < NOFFER; o++)
                    for (unsigned i = 0; i < 2; i++) {
                        const uint32_t c = offer_counts[o];
                        if (offer_reclaim(side[i ^ (k & 1)], o, k, (uint32_t)((k * c) % (NMAX - c + 1)), c))
                            return 1;
                    }
            for (unsigned o = 0; o < NOFFER; o++)
                for (unsigned s = 0; s < 2; s++)
                    orc[o][s] = b_median(side[s]->orc[o], rounds);
        }
        for (unsigned s = 0; s < 2; s++) {
            vidmm_device_destroy(side[s]->dev);
            side[s]->dev = NULL;
        }
    }

    /* Issue 15's figures, as before the WDDM1 comparison (README and notes quote these lines). */
    double(*r4)[2] = res[NSIZES - 1];
    printf("WDDM2 residency, %u allocations of %u bytes, median of %u rounds, us (backend %s)\n", NMAX, ASIZE, rounds,
           vidmm_backend_name());
    printf("  make-resident, already resident : %8.1f us cold, %.1f us warm (target <= 100 warm: %s)\n",
           r4[OP_COLD][0], r4[OP_WARM][0], r4[OP_WARM][0] <= 100.0 ? "met" : "not met");
    printf("  evict (call)                    : %8.1f us\n", r4[OP_EV_CALL][0]);
    printf("  evict's paging (transfers out)  : %8.1f us\n", r4[OP_EV_PAGING][0]);
    printf("  make-resident, not resident     : %8.1f us\n", r4[OP_MR_CALL][0]);
    printf("  its paging (transfers in)       : %8.1f us\n", r4[OP_MR_PAGING][0]);
    printf("  offer + reclaim, one resident   : %8.3f us (target <= 1)\n", orc[0][0]);

    printf("\nWDDM2 next to WDDM1, allocations of %u bytes, median of %u rounds, the sides alternating in each round, us\n"
           "  WDDM1: a device without VIDMM_DEVICE_WDDM2; make-resident is vidmm_make_resident() (no references),\n"
           "  evict is vidmm_evict(), which waits for its own paging (only its total compares), offer + reclaim\n"
           "  are vidmm_offer() + vidmm_reclaim() as on WDDM2 (they work on WDDM1 devices). ratio = WDDM2 / WDDM1\n",
           ASIZE, rounds);
    printf("  %-34s %6s %11s %11s %7s\n", "operation", "allocs", "WDDM2 us", "WDDM1 us", "ratio");
    for (unsigned o = 0; o < OP_COUNT; o++)
        for (unsigned z = 0; z < NSIZES; z++)
            print_row(op_name[o], sizes[z], res[z][o][0], res[z][o][1]);
    for (unsigned o = 0; o < NOFFER; o++)
        print_row("offer + reclaim (per pair)", offer_counts[o], orc[o][0], orc[o][1]);
    for (unsigned s = 0; s < 2; s++) {
        for (unsigned o = 0; o < OP_COUNT; o++)
            free(side[s]->t[o]);
        for (unsigned o = 0; o < NOFFER; o++)
            free(side[s]->orc[o]);
        free(side[s]);
    }
    return 0;
}
