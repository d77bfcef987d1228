/* SPDX-License-Identifier: MIT */
/* bench/b_wall.c - --vbench_mode=wall, the runs of tools/bench_gate.sh --wall: every selected
 * case that has a same-run reference (the memcpy or memset of the same bytes) is timed in short
 * bursts interleaved with that reference, and its figure is the fastest reference burst over
 * the fastest case burst. With --vbench_wall_peer the run takes turns with the other build's run
 * (below), so that both builds meet the same moments of the machine.
 *
 * Why (measured on the project's shared 2-core KVM guest, Intel Xeon Cascade Lake, while three
 * other agents built code: load average 2 to 9):
 * - Google Benchmark's repetitions (quick mode, 15 of 0.02 s, the best of them) time a case and
 *   its reference at different moments; an injected 10% slowdown of the 256 KiB fill read -7% to
 *   +29% from one A/B session to the next (10 sessions of 6 rounds), and three quick runs of one
 *   build a minute apart at load 9 gave that fill 1.59, 1.67 and 2.05 times memset's speed.
 * - Bursts of 2 ms are mostly spoilt at that load: 256 KiB memset bursts took 4.4 to 30 us a
 *   call, whole bursts preempted, and a mean or a trimmed mean of bursts moves with the load (the
 *   interquartile mean of 48 quads, fill over memset, re-measured every 0.5 s in one process:
 *   0.95-0.97 in quiet moments, 0.86-0.91 in busy ones).
 * - The fastest bursts are steady: over 96 bursts of each per run, the fastest memset burst was
 *   4.4-4.6 us a call in 28 of 32 runs, the fastest fill burst 4.6-4.8 us (build A) and 5.0-5.3 us
 *   (the build slowed by 10%). A shared machine only ever adds time, so the minimum over many
 *   short bursts is the estimator (minimum of k), where a mean over long ones is not.
 * - But whether a run meets a quiet moment at all depends on the minute: at load 7 the fastest
 *   256 KiB fill burst of one build ranged 4573-7447 ns across its runs (0.25 s of bursts each),
 *   and two runs one after the other (ABBA) met different minutes. Hence the turns: A's and B's
 *   runs alternate every ~30 ms of a case, F S S F F S S F, and their fastest bursts come from
 *   the same minutes. Turns of one 2 ms burst were tried first and dropped: a process woken every
 *   2 ms was preempted far more than one that keeps running (not one clean 256 KiB memset burst
 *   of 48 in some runs).
 * Quads C R R C and R C C R (alternating) keep each case's bursts next to its reference's.
 *
 * A burst is at least WALL_BURST_S long and at least WALL_MIN_CALLS calls: its time is the mean
 * of its calls, and a slow path taken once in N calls is in every burst only when bursts hold N
 * calls or more - with fewer, some bursts miss it and the fastest burst is one of those. Ten
 * covers the one-call-in-ten slowdown of the WALL self-test build (bench/gate/CMakeLists.txt);
 * a rarer slow path needs longer bursts (--vbench_wall_burst_us).
 *
 * Figures: ratio_memcpy / ratio_memset of the summary JSON hold the ratio (reference time over
 * the case's, as in the other modes), wall_case_ns / wall_ref_ns the two fastest bursts (ns a
 * call), wall_quads how many quads; gbps and ns_per_call are the fastest burst. Every burst goes
 * to wall-bursts.tsv. */
#include "b_common.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long the quads (4 bursts: the case twice, its reference twice) of one case go on, the
 * fewest quads a case gets however slow it is (solo), how long a burst lasts at least and how
 * many calls it makes at least. Short bursts, many of them: at load 8 the fastest of 32 bursts
 * of 1 ms (16 quads) was still a preempted one in a third of the runs of the 256 KiB fill. */
#define WALL_CASE_S_DEFAULT 0.25
#define WALL_MIN_QUADS 6
#define WALL_BURST_S_DEFAULT 250e-6
#define WALL_MIN_CALLS 10
/* With a peer: the turns each side takes per case (their quads share wall_case_s). */
#define WALL_TURNS 8

static double wall_case_s = WALL_CASE_S_DEFAULT;
static double wall_burst_s = WALL_BURST_S_DEFAULT;

int b_wall_config(double case_s, double burst_s)
{
    if (!(case_s >= 1e-3 && case_s <= 60) || !(burst_s >= 1e-5 && burst_s <= 1.0))
        return -1;
    wall_case_s = case_s;
    wall_burst_s = burst_s;
    return 0;
}

double b_wall_case_s(void)
{
    return wall_case_s;
}

double b_wall_burst_s(void)
{
    return wall_burst_s;
}

/* One burst of case 'id': 'k' calls; returns seconds per call, or a negative value. */
static double burst(int id, uint64_t k)
{
    double s;
    if (vbench_time_direct(id, k, &s) != 0 || !(s > 0))
        return -1;
    double per = s / (double)k;
    vbench_add_direct(id, per, (double)k);
    return per;
}

/* Calls per burst of case 'id': about wall_burst_s of them, at least WALL_MIN_CALLS; 0 when the
 * case skipped or failed. */
static uint64_t calibrate(int id)
{
    double best = INFINITY, s;
    for (int i = 0; i < 3; i++) {   /* the first also runs the case's result check */
        if (vbench_time_direct(id, 1, &s) != 0)
            return 0;
        if (s < best)
            best = s;
    }
    /* A second look with several calls: a single call pays for a cold instruction cache and
     * branch predictors that a burst does not. */
    if (vbench_time_direct(id, 8, &s) != 0)
        return 0;
    if (s / 8 < best)
        best = s / 8;
    uint64_t k = best > 0 ? (uint64_t)(wall_burst_s / best) : 1;
    if (k > 1000000)
        k = 1000000;
    return k < WALL_MIN_CALLS ? WALL_MIN_CALLS : k;
}

/* ---------------------------------------------------------------------------------------------
 * Turns with a peer (--vbench_wall_peer): the other build's run takes turns with this one.
 *
 * Two FIFOs join the runs; one of them runs at any moment, the other waits in read(). Per case
 * each side first calibrates (the lead, then the other), then the two take WALL_TURNS turns each
 * in the order F S S F F S S F (F the lead), each turn quads for wall_case_s / WALL_TURNS, one
 * quad at least. The token passed is the case's number and a hash of its name: two runs whose
 * case lists differ stop (exit 2) instead of comparing different cases; a run that stops (an
 * error, a failed case) ends the other's with an end of file.
 * ------------------------------------------------------------------------------------------- */

static int peer_in = -1, peer_out = -1;
static bool peer_lead = true;   /* solo: every slot is ours */
static bool have_turn = true;

struct wall_token {
    uint32_t ordinal;
    uint32_t hash;
};

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void peer_die(const char *what)
{
    fprintf(stderr, "vidmm_bench: wall mode: %s\n", what);
    exit(2);
}

int b_wall_peer(const char *spec, bool lead)
{
    char in[1024], out[1024];
    const char *colon = strchr(spec, ':');
    if (colon == NULL || (size_t)(colon - spec) >= sizeof(in) || strlen(colon + 1) >= sizeof(out))
        return -1;
    memcpy(in, spec, (size_t)(colon - spec));
    in[colon - spec] = '\0';
    strcpy(out, colon + 1);
    signal(SIGPIPE, SIG_IGN);   /* a peer that died: EPIPE, then exit 2 */
    /* Opening a FIFO blocks until its other end is opened: the lead opens its writing end
     * first, the other side its reading end first. */
    if (lead) {
        peer_out = open(out, O_WRONLY | O_CLOEXEC);
        peer_in = peer_out < 0 ? -1 : open(in, O_RDONLY | O_CLOEXEC);
    } else {
        peer_in = open(in, O_RDONLY | O_CLOEXEC);
        peer_out = peer_in < 0 ? -1 : open(out, O_WRONLY | O_CLOEXEC);
    }
    if (peer_in < 0 || peer_out < 0) {
        fprintf(stderr, "vidmm_bench: --vbench_wall_peer=%s: %s\n", spec, strerror(errno));
        return -1;
    }
    peer_lead = lead;
    have_turn = lead;
    return 0;
}

/* Before a slot: takes the turn when the slot is ours, hands it over when it is not. */
static void slot(bool ours, uint32_t ordinal, uint32_t hash)
{
    struct wall_token t;
    if (peer_in < 0 || ours == have_turn)
        return;
    if (ours) {
        ssize_t r;
        size_t got = 0;
        while (got < sizeof(t)) {
            r = read(peer_in, (char *)&t + got, sizeof(t) - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                peer_die("the other run stopped (it failed, or its cases differ from these)");
            got += (size_t)r;
        }
        if (t.ordinal != ordinal || t.hash != hash)
            peer_die("the other run is at another case: the two builds' case lists differ (--own-bench?)");
        have_turn = true;
    } else {
        t.ordinal = ordinal;
        t.hash = hash;
        ssize_t r;
        do
            r = write(peer_out, &t, sizeof(t));
        while (r < 0 && errno == EINTR);
        if (r != (ssize_t)sizeof(t))
            peer_die("the other run stopped (it failed, or its cases differ from these)");
        have_turn = false;
    }
}

int b_wall_run(bool progress, const char *bursts_tsv)
{
    FILE *tsv = fopen(bursts_tsv, "w");
    if (tsv == NULL) {
        fprintf(stderr, "vidmm_bench: cannot write %s\n", bursts_tsv);
        return -1;
    }
    int done = 0, total = 0;
    for (size_t i = 0; i < b_case_count(); i++) {
        const struct b_case *c = b_case_at(i);
        if (c->id >= 0 && c->ref_case >= 0 && b_case_at((size_t)c->ref_case)->id >= 0)
            total++;
    }
    double t_start = b_now_s();
    uint32_t ordinal = 0;
    const int turns = peer_in < 0 ? 1 : WALL_TURNS;
    for (size_t i = 0; i < b_case_count(); i++) {
        struct b_case *c = b_case_at(i);
        if (c->id < 0 || c->ref_case < 0)
            continue;
        int rid = b_case_at((size_t)c->ref_case)->id;
        if (rid < 0)
            continue;
        uint32_t h = name_hash(c->name);
        ordinal++;
        /* Calibration: the lead's turn, then the other's. */
        uint64_t kc = 0, kr = 0;
        for (int side = 0; side < 2; side++) {
            bool ours = (side == 0) == peer_lead;
            if (peer_in < 0 && !ours)
                continue;
            slot(ours, ordinal, h);
            if (ours) {
                kc = calibrate(c->id);
                kr = calibrate(rid);
            }
        }
        if (kc == 0 || kr == 0) {
            if (peer_in >= 0)
                peer_die("a case failed or was skipped with a peer (see the report)");
            continue;   /* skipped or failed: the report says why */
        }
        /* Turns F S S F F S S F ..., F the lead: each side's turns centred on the same instants;
         * a turn is quads for wall_case_s / turns (one quad at least). Solo: one turn. */
        double min_c = INFINITY, min_r = INFINITY;
        bool ok = true;
        int j = 0;
        for (int t = 0; t < 2 * turns && ok; t++) {
            bool lead_turn = (t % 4 == 0 || t % 4 == 3);
            bool ours = lead_turn == peer_lead;
            if (peer_in < 0 && !ours)
                continue;
            slot(ours, ordinal, h);
            if (!ours)
                continue;
            double t_turn = b_now_s();
            int q0 = j;
            while (ok && (j - q0 < 1 || b_now_s() - t_turn < wall_case_s / turns ||
                          (turns == 1 && j < WALL_MIN_QUADS))) {
                for (int p = 0; p < 4 && ok; p++) {
                    /* Quad j: C R R C for even j, R C C R for odd j. */
                    bool is_case = (p == 0 || p == 3) == (j % 2 == 0);
                    double s = burst(is_case ? c->id : rid, is_case ? kc : kr);
                    ok = s > 0;
                    fprintf(tsv, "%s\t%d\t%s\t%.1f\n", c->name, j, is_case ? "C" : "R", s * 1e9);
                    if (is_case && s < min_c)
                        min_c = s;
                    if (!is_case && s < min_r)
                        min_r = s;
                }
                j++;
            }
        }
        if (!ok) {
            if (peer_in >= 0)
                peer_die("a burst failed with a peer (see the report)");
            continue;   /* no figure rather than a partial one */
        }
        c->wall_case_s = min_c;
        c->wall_ref_s = min_r;
        c->wall_quads = j;
        done++;
        if (progress)
            fprintf(stderr, "[%d/%d] %s: %.3f (fastest bursts: reference %.0f ns, case %.0f ns a call; %d quads of "
                    "%llu + %llu calls), %.1f s\n", done, total, c->name, min_r / min_c, min_r * 1e9, min_c * 1e9,
                    j, (unsigned long long)kc, (unsigned long long)kr, b_now_s() - t_start);
    }
    /* A peer still waiting for a turn reads the end of the FIFO: a mismatch. */
    if (peer_in >= 0) {
        close(peer_out);
        close(peer_in);
    }
    fclose(tsv);
    return done;
}
