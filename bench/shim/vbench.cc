// SPDX-License-Identifier: MIT
// bench/shim/vbench.cc - the one C++ file of the benchmarks: implements bench/shim/vbench.h on
// top of Google Benchmark (Debian libbenchmark-dev 1.7.1), registers the C bodies, times them
// with the monotonic clock as manual time, and collects every run for the C report.
#include "vbench.h"

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// One registered case and what the runs of it produced.
struct Case {
    std::string name;                 // the stable name, without Google Benchmark's suffixes
    vbench_fn fn = nullptr;
    const void *arg = nullptr;
    vbench_status status = VBENCH_NOT_RUN;
    std::string reason;               // skip or failure reason
    std::vector<double> rep_s;        // measured seconds per iteration, one per repetition
    std::vector<double> rep_iters;    // iterations of each repetition
    double agg_median_s = 0;          // only when Google Benchmark reported aggregates alone
    bool first_rep_done = false;      // progress: the first repetition has been measured
};

// Filled before any run starts and never resized afterwards, so the Case pointers a running
// body holds stay valid.
std::vector<Case> g_cases;
std::unordered_map<std::string, int> g_index;
void (*g_help)(void) = nullptr;

// vbench_set_console(): where the console output goes, and the progress display.
std::string g_raw_log;
bool g_progress = false;
// What the progress display needs of the command line, read by vbench_init() before Google
// Benchmark removes its flags: 1.7.1's defaults are 0.5 s and 1 repetition.
double g_min_time = 0.5;
long g_repetitions = 1;
// Progress: repetitions measured so far, of how many; when the run started; what was shown.
size_t g_done = 0, g_total = 0;
Clock::time_point g_run_t0;
double g_last_shown = -1;
int g_last_tenth = 0;
bool g_tty = false;

double seconds_since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

struct vbench_state {
    benchmark::State *gb;     // nullptr: a direct run (vbench_time_direct())
    Case *c;
    Clock::time_point t0;     // when the clock last started
    double batch_s;           // measured time of the current batch so far
    double attempt_s;         // measured time of the batches of this attempt that ended
    uint64_t bytes_per_iter;
    bool in_batch;            // a batch handed out by vbench_keep_running_batch() is running
    bool running;             // the clock runs (not paused)
    bool flagged;             // vbench_skip() or vbench_fail() was called
    uint64_t direct_iters;    // a direct run: the iterations of its one batch
    bool direct_handed;       // a direct run: the batch was handed out
};

namespace {

// "m:ss" of 's' seconds.
std::string clock_text(double s)
{
    char buf[32];
    long t = s > 0 ? static_cast<long>(s + 0.5) : 0;
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", t / 60, t % 60);
    return buf;
}

// Shows the progress after a repetition of case 'name' ('last': the run is over). On a terminal
// one line is rewritten at most five times a second; elsewhere a line is printed at every tenth,
// so a CI log gets ten.
void progress_show(const std::string &name, bool last)
{
    double el = seconds_since(g_run_t0);
    size_t total = std::max(g_total, g_done + (last ? 0 : 1));
    size_t done = last ? total : g_done;
    int pct = total ? static_cast<int>(100 * done / total) : 100;
    std::string left = done > 0 && done < total ? "~" + clock_text(el * static_cast<double>(total - done) /
                                                                  static_cast<double>(done)) + " left"
                                                : "";
    if (g_tty) {
        if (!last && el - g_last_shown < 0.2)
            return;
        g_last_shown = el;
        std::fprintf(stderr, "\r\033[K[%zu/%zu] %3d%%  %s elapsed%s%s  %.40s%s", done, total, pct,
                     clock_text(el).c_str(), left.empty() ? "" : ", ", left.c_str(), last ? "" : name.c_str(),
                     last ? "\n" : "");
    } else if (last || pct / 10 > g_last_tenth) {
        g_last_tenth = pct / 10;
        std::fprintf(stderr, "[%zu/%zu] %3d%%  %s elapsed%s%s\n", done, total, pct, clock_text(el).c_str(),
                     left.empty() ? "" : ", ", left.c_str());
    }
    std::fflush(stderr);
}

// Counts a repetition when this attempt was one. Google Benchmark 1.7.1 measures the first
// repetition of a case in attempts of growing iteration counts until one is significant - an
// error, 1e9 iterations, or measured (here: manual) time of at least --benchmark_min_time -
// and every later repetition in one attempt with that count (DoOneRepetition() in its
// benchmark_runner.cc). Only the display depends on this.
void progress_note(Case &c, const vbench_state &st, benchmark::State &s)
{
    if (!g_progress)
        return;
    if (!c.first_rep_done) {
        if (!(s.error_occurred() || s.iterations() >= 1000000000 || st.attempt_s >= g_min_time))
            return;
        c.first_rep_done = true;
    }
    g_done++;
    progress_show(c.name, false);
}

// Runs one attempt of a case. Google Benchmark calls it several times per case: while it grows
// the iteration count until the measured time reaches --benchmark_min_time, then once per
// repetition.
void run_case(int id, benchmark::State &s)
{
    Case &c = g_cases[static_cast<size_t>(id)];
    vbench_state st{};
    st.gb = &s;
    st.c = &c;
    c.fn(&st, c.arg);
    if (!s.error_occurred() && st.bytes_per_iter != 0)
        s.SetBytesProcessed(static_cast<int64_t>(s.iterations()) * static_cast<int64_t>(st.bytes_per_iter));
    progress_note(c, st, s);
}

void flag(vbench_state *st, vbench_status status, const char *prefix, const char *reason)
{
    if (st->flagged || (st->gb != nullptr && st->gb->error_occurred()))
        return;
    st->flagged = true;
    st->c->status = status;
    st->c->reason = reason ? reason : "";
    st->running = false;
    if (st->gb == nullptr)
        return;
    std::string msg = std::string(prefix) + st->c->reason;
    st->gb->SkipWithError(msg.c_str());
}

// The display reporter: forwards to Google Benchmark's own console (or --benchmark_format)
// reporter and keeps every run. It is the display reporter rather than the file reporter so
// that the file output (--benchmark_out) stays Google Benchmark's untouched JSON; for the same
// reason the console filtering of repetitions is done here and not with
// --benchmark_display_aggregates_only, which would hide the repetitions from us too.
class Collector : public benchmark::BenchmarkReporter {
public:
    Collector(benchmark::BenchmarkReporter *inner, bool aggregates_only)
        : inner_(inner), aggregates_only_(aggregates_only) {}

    bool ReportContext(const Context &context) override { return inner_->ReportContext(context); }

    void ReportRuns(const std::vector<Run> &runs) override
    {
        std::vector<Run> shown;
        for (const Run &r : runs) {
            keep(r);
            if (!aggregates_only_ || r.repetitions <= 1) {
                shown.push_back(r);
            } else if (r.error_occurred) {
                // A skipped case is reported once per repetition; one line says it.
                if (errors_shown_.insert(r.run_name.function_name).second)
                    shown.push_back(r);
            } else if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
                // Of the aggregates, the median alone: the mean, stddev and cv rows stay in the
                // JSON file, and the report after the run prints the best repetition.
                shown.push_back(r);
            }
        }
        if (!shown.empty())
            inner_->ReportRuns(shown);
    }

    void Finalize() override { inner_->Finalize(); }

private:
    static void keep(const Run &r)
    {
        auto it = g_index.find(r.run_name.function_name);
        if (it == g_index.end())
            return;
        Case &c = g_cases[static_cast<size_t>(it->second)];
        if (r.error_occurred) {
            // vbench_skip()/vbench_fail() set the status already; anything else is Google
            // Benchmark's own complaint.
            if (c.status != VBENCH_SKIPPED && c.status != VBENCH_FAILED) {
                c.status = VBENCH_FAILED;
                c.reason = r.error_message;
            }
            return;
        }
        if (r.iterations <= 0)
            return;
        // With UseManualTime, real_accumulated_time is the sum of the times the shim handed
        // over with SetIterationTime().
        double per_iter = r.real_accumulated_time / static_cast<double>(r.iterations);
        if (r.run_type == Run::RT_Aggregate) {
            if (r.aggregate_name == "median")
                c.agg_median_s = per_iter;
            return;
        }
        c.rep_s.push_back(per_iter);
        c.rep_iters.push_back(static_cast<double>(r.iterations));
        if (c.status == VBENCH_NOT_RUN)
            c.status = VBENCH_OK;
    }

    benchmark::BenchmarkReporter *inner_;
    bool aggregates_only_;
    std::unordered_set<std::string> errors_shown_;
};

void help_printer()
{
    if (g_help)
        g_help();
    benchmark::PrintDefaultHelp();
}

}  // namespace

extern "C" {

bool vbench_keep_running_batch(vbench_state *st, uint64_t *n)
{
    if (st->gb == nullptr) {
        // A direct run: one batch of the iterations asked for, then the end.
        if (st->in_batch) {
            if (st->running)
                st->batch_s += seconds_since(st->t0);
            st->attempt_s += st->batch_s;
            st->in_batch = false;
            st->running = false;
        }
        if (st->direct_handed || st->flagged)
            return false;
        st->direct_handed = true;
        *n = st->direct_iters;
        st->batch_s = 0;
        st->in_batch = true;
        st->running = true;
        st->t0 = Clock::now();
        return true;
    }
    benchmark::State &s = *st->gb;
    if (st->in_batch) {
        if (st->running)
            st->batch_s += seconds_since(st->t0);
        // SetIterationTime() only adds to the manual time, so one call per batch is the sum of
        // the batch's iterations.
        if (!s.error_occurred())
            s.SetIterationTime(st->batch_s);
        st->attempt_s += st->batch_s;
        st->in_batch = false;
        st->running = false;
    }
    // Hand out every iteration Google Benchmark still wants in one batch: max_iterations is
    // what it asked for, iterations() what has been consumed (0 before the first batch). With
    // nothing left, a batch of 1 makes KeepRunningBatch() finish the run and return false.
    benchmark::IterationCount left = s.max_iterations - s.iterations();
    if (left <= 0 || s.error_occurred())
        left = 1;
    if (!s.KeepRunningBatch(left))
        return false;
    *n = static_cast<uint64_t>(left);
    st->batch_s = 0;
    st->in_batch = true;
    st->running = true;
    st->t0 = Clock::now();
    return true;
}

void vbench_pause(vbench_state *st)
{
    if (st->in_batch && st->running) {
        st->batch_s += seconds_since(st->t0);
        st->running = false;
    }
}

void vbench_resume(vbench_state *st)
{
    if (st->in_batch && !st->running) {
        st->running = true;
        st->t0 = Clock::now();
    }
}

void vbench_set_bytes_per_iteration(vbench_state *st, uint64_t bytes)
{
    st->bytes_per_iter = bytes;
}

void vbench_skip(vbench_state *st, const char *reason)
{
    flag(st, VBENCH_SKIPPED, "skipped: ", reason);
}

void vbench_fail(vbench_state *st, const char *reason)
{
    flag(st, VBENCH_FAILED, "failed: ", reason);
}

void vbench_counter(vbench_state *st, const char *name, double value, enum vbench_counter_kind kind)
{
    if (st->gb == nullptr)
        return;
    benchmark::Counter::Flags f = benchmark::Counter::kDefaults;
    if (kind == VBENCH_COUNTER_RATE)
        f = benchmark::Counter::kIsRate;
    else if (kind == VBENCH_COUNTER_PER_ITERATION)
        f = benchmark::Counter::kAvgIterations;
    st->gb->counters[name] = benchmark::Counter(value, f);
}

int vbench_register(const char *name, vbench_fn fn, const void *arg)
{
    std::string key(name);
    if (g_index.count(key) != 0)
        return -1;
    int id = static_cast<int>(g_cases.size());
    Case c;
    c.name = key;
    c.fn = fn;
    c.arg = arg;
    g_cases.push_back(std::move(c));
    g_index.emplace(key, id);
    benchmark::RegisterBenchmark(key.c_str(), [id](benchmark::State &s) { run_case(id, s); })
        ->UseManualTime();
    return id;
}

int vbench_init(int *argc, char **argv, void (*help)(void))
{
    g_help = help;
    // The last value of a flag wins, as in Google Benchmark.
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (std::strncmp(a, "--benchmark_min_time=", 21) == 0)
            g_min_time = std::atof(a + 21);
        else if (std::strncmp(a, "--benchmark_repetitions=", 24) == 0)
            g_repetitions = std::max(1L, std::atol(a + 24));
    }
    benchmark::Initialize(argc, argv, help_printer);
    return benchmark::ReportUnrecognizedArguments(*argc, argv) ? -1 : 0;
}

void vbench_add_context(const char *key, const char *value)
{
    benchmark::AddCustomContext(key, value);
}

int vbench_set_console(const char *raw_log, bool progress)
{
    g_raw_log = raw_log ? raw_log : "";
    g_progress = progress;
    if (!g_raw_log.empty()) {
        // Created (truncated) now, so that a path that cannot be written fails before any case.
        std::FILE *f = std::fopen(g_raw_log.c_str(), "w");
        if (f == nullptr)
            return -1;
        std::fclose(f);
    }
    return 0;
}

size_t vbench_run(bool console_aggregates_only)
{
    // CreateDefaultDisplayReporter() honours --benchmark_format and --benchmark_color; the
    // reporter it returns is owned by Google Benchmark (a function-local static), not by us.
    benchmark::BenchmarkReporter *inner = benchmark::CreateDefaultDisplayReporter();
    Collector collector(inner, console_aggregates_only);
    std::ofstream raw;
    if (!g_raw_log.empty()) {
        // The context block and Google Benchmark's warnings go to the error stream, the table to
        // the output stream: both to the log.
        raw.open(g_raw_log, std::ios::out | std::ios::app);
        if (raw.is_open()) {
            inner->SetOutputStream(&raw);
            inner->SetErrorStream(&raw);
            collector.SetOutputStream(&raw);
            collector.SetErrorStream(&raw);
        }
    }
    g_total = g_cases.size() * static_cast<size_t>(g_repetitions);
    g_done = 0;
    g_tty = isatty(STDERR_FILENO) != 0;
    g_run_t0 = Clock::now();
    size_t matched = benchmark::RunSpecifiedBenchmarks(&collector);
    if (g_progress && g_done > 0)
        progress_show("", true);
    benchmark::Shutdown();
    return matched;
}

int vbench_result(int id, struct vbench_result *out)
{
    if (id < 0 || static_cast<size_t>(id) >= g_cases.size())
        return -1;
    const Case &c = g_cases[static_cast<size_t>(id)];
    struct vbench_result zero{};
    *out = zero;
    out->status = c.status;
    out->reason = c.reason.c_str();
    if (c.status != VBENCH_OK)
        return 0;
    if (c.rep_s.empty()) {
        out->reps = 1;
        out->best_s = out->median_s = c.agg_median_s;
        return 0;
    }
    std::vector<double> sorted(c.rep_s);
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    out->reps = static_cast<int>(n);
    out->best_s = sorted.front();
    out->median_s = (n % 2) ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    auto best = std::min_element(c.rep_s.begin(), c.rep_s.end());
    out->iterations = c.rep_iters[static_cast<size_t>(best - c.rep_s.begin())];
    return 0;
}

int vbench_time_direct(int id, uint64_t iters, double *seconds)
{
    if (id < 0 || static_cast<size_t>(id) >= g_cases.size() || iters == 0)
        return -1;
    Case &c = g_cases[static_cast<size_t>(id)];
    if (c.status == VBENCH_SKIPPED || c.status == VBENCH_FAILED)
        return -1;
    vbench_state st{};
    st.c = &c;
    st.direct_iters = iters;
    c.fn(&st, c.arg);
    if (st.flagged || !st.direct_handed)
        return -1;
    *seconds = st.attempt_s;
    return 0;
}

int vbench_add_direct(int id, double seconds_per_iter, double iters)
{
    if (id < 0 || static_cast<size_t>(id) >= g_cases.size())
        return -1;
    Case &c = g_cases[static_cast<size_t>(id)];
    c.rep_s.push_back(seconds_per_iter);
    c.rep_iters.push_back(iters);
    if (c.status == VBENCH_NOT_RUN)
        c.status = VBENCH_OK;
    return 0;
}

uint64_t vbench_now_ns(void)
{
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

}  // extern "C"
