/* SPDX-License-Identifier: MIT */
/* bench/shim/vbench.h - a small C face of Google Benchmark, so that benchmark bodies are C.
 *
 * The shape follows IREE's C benchmark shim (an opaque state, a batched keep-running loop,
 * pause/resume, bytes processed, skip-with-error, counters and a register call); the code is
 * ours. Only bench/shim/vbench.cc includes <benchmark/benchmark.h>.
 *
 * A body looks like this:
 *
 *     static void b_copy_body(vbench_state *st, const void *arg)
 *     {
 *         uint64_t n, i;
 *         vbench_set_bytes_per_iteration(st, bytes);
 *         while (vbench_keep_running_batch(st, &n))
 *             for (i = 0; i < n; i++)
 *                 memcpy(dst, src, bytes);
 *     }
 *
 * Timing. Every case is timed by the shim with the monotonic clock and handed to Google
 * Benchmark as manual time (UseManualTime), one figure per batch. So pausing costs two clock
 * reads (about 20-40 ns), not Google Benchmark's PauseTiming(), which also reads the process
 * CPU clock and is documented as "relatively heavyweight". A side effect: Google Benchmark
 * appends "/manual_time" to the names in its own output; the names passed to vbench_register()
 * are the stable ones.
 *
 * Threading: one benchmark thread; nothing here is thread safe. */
#ifndef VBENCH_H
#define VBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The state of one run of one case. Valid only inside the body it was passed to. */
typedef struct vbench_state vbench_state;

/* A benchmark body. 'arg' is the pointer given to vbench_register(). */
typedef void (*vbench_fn)(vbench_state *st, const void *arg);

/* ---------------------------------------------------------------------------------------------
 * Inside a body.
 * ------------------------------------------------------------------------------------------- */

/* vbench_keep_running_batch() returns true while the body should run more iterations, and
 * stores in '*n' how many (always > 0) to run before calling it again. One C-to-C++ call
 * serves a whole batch, so the loop costs the same as a bare C loop; the clock starts when it
 * returns true and stops at the next call. A body must call it until it returns false, unless
 * it called vbench_skip() or vbench_fail() before its first call. */
bool vbench_keep_running_batch(vbench_state *st, uint64_t *n);

/* vbench_pause() stops the clock, vbench_resume() starts it again; work done in between is
 * not timed (re-dirtying cache lines before a flush, for instance). Pausing a paused clock or
 * resuming a running one does nothing. Only valid inside the keep-running loop. */
void vbench_pause(vbench_state *st);
void vbench_resume(vbench_state *st);

/* vbench_set_bytes_per_iteration() declares how many bytes one iteration moves; the shim
 * reports iterations * bytes as Google Benchmark's bytes processed (bytes_per_second). */
void vbench_set_bytes_per_iteration(vbench_state *st, uint64_t bytes);

/* vbench_skip() marks the case as not runnable here ("cpu lacks avx512"); vbench_fail() marks
 * it as broken (a kernel returned an error or a wrong result). Both appear as errors in Google
 * Benchmark's output, prefixed "skipped: " or "failed: ", and never as a figure. Call either
 * at most once, then return (before the loop, or break out of it). 'reason' is copied. */
void vbench_skip(vbench_state *st, const char *reason);
void vbench_fail(vbench_state *st, const char *reason);

/* How Google Benchmark shows a per-case counter. */
enum vbench_counter_kind {
    VBENCH_COUNTER_PLAIN = 0,         /* the value as given */
    VBENCH_COUNTER_RATE = 1,          /* value / measured seconds */
    VBENCH_COUNTER_PER_ITERATION = 2  /* value / iterations */
};

/* vbench_counter() sets counter 'name' of this run to 'value'. */
void vbench_counter(vbench_state *st, const char *name, double value, enum vbench_counter_kind kind);

/* ---------------------------------------------------------------------------------------------
 * The driver.
 * ------------------------------------------------------------------------------------------- */

/* vbench_register() adds a case named 'name' (copied) running 'fn' with 'arg' (which must
 * outlive vbench_run()). Cases run in registration order (unless Google Benchmark's random
 * interleaving is on). Returns the case id (0, 1, ...), or -1 when 'name' is already taken. */
int vbench_register(const char *name, vbench_fn fn, const void *arg);

/* vbench_init() hands the command line to Google Benchmark, which removes the flags it knows.
 * 'help' (may be NULL) is printed before Google Benchmark's own --help text.
 * Returns 0, or -1 when arguments are left that nobody recognised (they have been printed). */
int vbench_init(int *argc, char **argv, void (*help)(void));

/* vbench_add_context() adds 'key' = 'value' to the context block of Google Benchmark's
 * output (its JSON "context" object). Call before vbench_run(). */
void vbench_add_context(const char *key, const char *value);

/* vbench_set_console() chooses where vbench_run() writes Google Benchmark's console output:
 * its context block (CPU, caches, its own warnings), and its table of every run. 'raw_log' is a
 * file to write them to instead of stdout/stderr (NULL: the terminal, as by default), so that
 * a caller can print a report of its own. With 'progress', vbench_run() also shows on stderr
 * how far it is: repetitions done of all, elapsed time and an estimate of the time left - one
 * line rewritten in place on a terminal, a line at every tenth otherwise (a CI log). Call
 * before vbench_run(). Returns 0, or -1 when 'raw_log' cannot be opened (errno set). */
int vbench_set_console(const char *raw_log, bool progress);

/* vbench_run() runs the selected cases, printing Google Benchmark's console table and writing
 * its file output (--benchmark_out). With 'console_aggregates_only', a case run with
 * repetitions shows only its median row on the console, and a skipped one a single line (the
 * file keeps everything). Returns the number of cases Google Benchmark matched. */
size_t vbench_run(bool console_aggregates_only);

/* What happened to a case. */
enum vbench_status {
    VBENCH_NOT_RUN = 0,  /* filtered out, or only listed */
    VBENCH_OK = 1,
    VBENCH_SKIPPED = 2,
    VBENCH_FAILED = 3
};

struct vbench_result {
    enum vbench_status status;
    int reps;             /* measured repetitions */
    double best_s;        /* fastest repetition: measured seconds per iteration */
    double median_s;      /* median repetition (the mean of the middle two for even counts) */
    double iterations;    /* iterations of the fastest repetition */
    const char *reason;   /* skip or failure reason, "" otherwise; valid until exit */
};

/* vbench_result() fills '*out' for case 'id'. Returns 0, or -1 for an unknown id. */
int vbench_result(int id, struct vbench_result *out);

/* vbench_time_direct() runs case 'id''s body once outside Google Benchmark: its keep-running
 * loop gets exactly 'iters' iterations in one batch, and '*seconds' receives their measured time
 * (pauses excluded). For drivers of their own that interleave short bursts of two cases
 * (vidmm_bench --vbench_mode=wall). Counters are dropped. Returns 0; -1 for an unknown id or
 * when the body skipped or failed (vbench_result() then says which and why). */
int vbench_time_direct(int id, uint64_t iters, double *seconds);

/* vbench_add_direct() records 'seconds' per iteration as one repetition of case 'id' (status
 * OK unless it skipped or failed), so that vbench_result() reports what a driver of its own
 * measured. Returns 0, or -1 for an unknown id. */
int vbench_add_direct(int id, double seconds_per_iter, double iters);

/* vbench_now_ns() reads the clock the shim times with (monotonic), in nanoseconds. */
uint64_t vbench_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* VBENCH_H */
