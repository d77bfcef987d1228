/* SPDX-License-Identifier: MIT */
/* bench/bench_main.c - vidmm_bench: builds the case table, selects cases by mode and filter,
 * runs them through Google Benchmark (bench/shim), then prints the tables and writes the summary
 * JSON (bench/b_report.c).
 *
 * One program for every path family, rather than one per family: the ratios need the memcpy,
 * memset and bare-loop references measured in the same run as the cases they divide. */
#define _GNU_SOURCE
#include "b_common.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* bench_engine.c: the video memory manager's cases (engine/...), added once, after the sizes. */
void b_engine_cases(void);
/* bench_io.c: the disk tier's I/O cases (io/...) and their fio references, added once. */
void b_io_cases(void);

static void help(void)
{
    fputs("vidmm_bench - vidmm's benchmark suite (Google Benchmark behind a C shim)\n"
          "\n"
          "  --vbench_mode=quick|full|targets|smoke|wall\n"
          "        quick (default): every case, --benchmark_min_time=0.05, 5 repetitions,\n"
          "          random interleaving, CLFLUSH only up to 4 MiB; swizzle: the named backends\n"
          "          on 4 MiB surfaces of 4-byte elements, everything else at AUTO, no boxes of\n"
          "          16-byte elements (bench/bench_swizzle.c); the engine cases\n"
          "          (bench/bench_engine.c, ~10 s); the disk tier's I/O cases next to fio\n"
          "          and the engine's lock of a swapped-out allocation (bench/bench_io.c,\n"
          "          ~40 s). ~4.3 minutes on 2 cores.\n"
          "        full: every case, --benchmark_min_time=0.5, 5 repetitions, random\n"
          "          interleaving, CLFLUSH at every size.\n"
          "        targets: only the cases of the issue's target table (and their references),\n"
          "          --benchmark_min_time=0.2, 5 repetitions, random interleaving.\n"
          "        smoke: every case of quick mode once, as briefly as it runs\n"
          "          (--benchmark_min_time=0.001, 1 repetition, one round beside the\n"
          "          references): a check that each case runs (ctest's bench_smoke), not a\n"
          "          measurement.\n"
          "        wall: quick mode's cases, but not through Google Benchmark: each case that has a\n"
          "          memcpy/memset reference is timed in bursts interleaved with it (quads C R R C /\n"
          "          R C C R), its ratio the fastest reference burst over the fastest case burst\n"
          "          (bench/b_wall.c); the runs of tools/bench_gate.sh --wall. Usually with\n"
          "          --vbench_filter. Every burst goes to wall-bursts.tsv in --vbench_out_dir.\n"
          "  --vbench_wall_case_ms=MS   wall mode: time per case (default 250; 6 quads at least)\n"
          "  --vbench_wall_burst_us=US  wall mode: least length of a burst (default 250; and at\n"
          "        least 10 calls)\n"
          "  --vbench_wall_peer=IN:OUT[:lead]  wall mode: take turns with another vidmm_bench\n"
          "        through two FIFOs (tools/bench_gate.sh --wall runs A and B so); 'lead' on one\n"
          "        side\n"
          "  --vbench_filter=REGEX   run only cases whose name matches the POSIX extended regular\n"
          "        expression (names: path/variant/backend/bytes), plus the memcpy/memset and\n"
          "        ceiling cases they are compared with. 'swizzle|deswizzle' runs the tiling\n"
          "        cases alone (swizzle/bl_e4/auto/4194304, deswizzle/morton_e4_box64/...);\n"
          "        '^engine/' the video memory manager's (engine/lock_unlock/resident/65536,\n"
          "        engine/create_destroy/live/10000, ...; bench/bench_engine.c); '^io/' the disk\n"
          "        tier's (io/write_qd32/uring/1048576, io/read_qd1/threads/65536, ...; '^io/lock'\n"
          "        the engine's locks of a swapped-out 4 MiB allocation next to fio; files in\n"
          "        $VIDMM_BENCH_DIR, else the build tree's bench-io/; bench/bench_io.c).\n"
          "  --vbench_out_dir=DIR    where the JSON files go (default: bench-results)\n"
          "  --vbench_raw_log=FILE   Google Benchmark's console output (context, warnings, the\n"
          "        table of every run) goes to FILE; the terminal gets the report alone\n"
          "  --vbench_progress       show progress on stderr: repetitions done of all, elapsed\n"
          "        time, an estimate of the time left\n"
          "  --vbench_commit=SHA     recorded in the outputs (default: $VIDMM_BENCH_COMMIT, else\n"
          "        \"unknown\")\n"
          "Google Benchmark flags given after these override the mode's defaults (the last one\n"
          "wins); --benchmark_filter filters the same names with \"/manual_time\" appended.\n"
          "Figures are the best repetition (a target on a median says so); ratios divide figures of\n"
          "the same run.\n\n",
          stdout);
}

static bool starts(const char *s, const char *prefix, const char **rest)
{
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) != 0)
        return false;
    *rest = s + n;
    return true;
}

/* Why case 'c' cannot run here, known before the run: the mode leaves it out (pre_skip), or the
 * CPU lacks its backend, its bare loop's instruction, its flush instruction or MOVDIR64B. Such
 * cases are not registered: Google Benchmark would report each as an error row, once per
 * repetition, and keep those rows in its JSON (where compare.py stumbles on them); the report
 * lists them once per reason instead. Returns NULL when the case may run. */
static const char *skip_here(const struct b_case *c)
{
    const struct b_machine *m = &b_env.m;
    const char *why = c->pre_skip;
    if (why == NULL)
        why = b_backend_skip_reason(c->backend_id);
    if (why == NULL)
        why = b_ceiling_skip_reason(c->call);
    if (why == NULL && c->call == B_CALL_FLUSH_EX) {
        if (c->insn == VIDMM_FLUSH_INSN_CLWB && !m->has_clwb)
            why = "cpu lacks clwb";
        else if (c->insn == VIDMM_FLUSH_INSN_CLFLUSHOPT && !m->has_clflushopt)
            why = "cpu lacks clflushopt";
        else if (c->insn == VIDMM_FLUSH_INSN_CLFLUSH && !m->has_clflush)
            why = "cpu lacks clflush";
    }
    if (why == NULL && c->strategy == VIDMM_STRATEGY_MOVDIR64B && !m->has_movdir64b)
        why = "cpu lacks movdir64b";
    return why;
}

/* Marks the memcpy/memset and ceiling cases of every selected case as selected too. */
static void select_references(void)
{
    for (size_t i = 0; i < b_case_count(); i++) {
        struct b_case *c = b_case_at(i);
        if (!c->selected)
            continue;
        if (c->ref_case >= 0)
            b_case_at((size_t)c->ref_case)->selected = true;
        if (c->ceil_case >= 0)
            b_case_at((size_t)c->ceil_case)->selected = true;
    }
}

int main(int argc, char **argv)
{
    const char *mode_s = "quick", *filter = NULL, *out_dir = "bench-results", *raw_log = NULL;
    bool progress = false, wall = false;
    double wall_case_ms = 0, wall_burst_us = 0;
    const char *wall_peer = NULL;
    const char *commit = getenv("VIDMM_BENCH_COMMIT");
    const char *gb_out = NULL, *v;

    /* Google Benchmark's argv: the mode's defaults first, then everything we do not own, so that
     * a flag on the command line overrides a default (Google Benchmark keeps the last value). */
    char **gargv = calloc((size_t)argc + 8, sizeof(char *));
    char **rest = calloc((size_t)argc + 1, sizeof(char *));
    if (gargv == NULL || rest == NULL)
        return 2;
    int nrest = 0;
    for (int i = 1; i < argc; i++) {
        if (starts(argv[i], "--vbench_mode=", &v))
            mode_s = v;
        else if (starts(argv[i], "--vbench_filter=", &v))
            filter = v;
        else if (starts(argv[i], "--vbench_out_dir=", &v))
            out_dir = v;
        else if (starts(argv[i], "--vbench_commit=", &v))
            commit = v;
        else if (starts(argv[i], "--vbench_raw_log=", &v))
            raw_log = v;
        else if (strcmp(argv[i], "--vbench_progress") == 0)
            progress = true;
        else if (starts(argv[i], "--vbench_wall_case_ms=", &v))
            wall_case_ms = atof(v);
        else if (starts(argv[i], "--vbench_wall_burst_us=", &v))
            wall_burst_us = atof(v);
        else if (starts(argv[i], "--vbench_wall_peer=", &v))
            wall_peer = v;
        else {
            if (starts(argv[i], "--benchmark_out=", &v))
                gb_out = v;
            rest[nrest++] = argv[i];
        }
    }
    if (commit == NULL || commit[0] == '\0')
        commit = "unknown";
    if (strcmp(mode_s, "quick") == 0) {
        b_env.mode = B_MODE_QUICK;
    } else if (strcmp(mode_s, "full") == 0) {
        b_env.mode = B_MODE_FULL;
    } else if (strcmp(mode_s, "targets") == 0) {
        b_env.mode = B_MODE_TARGETS;
    } else if (strcmp(mode_s, "smoke") == 0) {
        b_env.mode = B_MODE_SMOKE;
    } else if (strcmp(mode_s, "wall") == 0) {
        b_env.mode = B_MODE_QUICK;   /* quick mode's case table, timed by b_wall.c */
        wall = true;
    } else {
        fprintf(stderr, "vidmm_bench: unknown --vbench_mode=%s (quick, full, targets, smoke, wall)\n", mode_s);
        return 2;
    }
    if (wall_peer != NULL && !wall) {
        fprintf(stderr, "vidmm_bench: --vbench_wall_peer goes with --vbench_mode=wall\n");
        return 2;
    }
    if ((wall_case_ms != 0 || wall_burst_us != 0) &&
        (!wall || b_wall_config(wall_case_ms ? wall_case_ms * 1e-3 : b_wall_case_s(),
                                wall_burst_us ? wall_burst_us * 1e-6 : b_wall_burst_s()) != 0)) {
        fprintf(stderr, "vidmm_bench: --vbench_wall_case_ms (1-60000) and --vbench_wall_burst_us (10-1000000) "
                        "go with --vbench_mode=wall\n");
        return 2;
    }

    static char out_flag[1200], gb_json[1100], summary[1100], args[2048];
    int gargc = 0;
    gargv[gargc++] = argv[0];
    if (wall) {
        /* No Google Benchmark run: it only parses the command line (and rejects unknown flags). */
    } else if (b_env.mode == B_MODE_QUICK) {
        /* ~0.05 s of measured time per case and repetition: one pass over the ~300 cases takes
         * ~30 s on the project's 2-core machine (AMD EPYC, Zen 3), so five interleaved passes
         * (best of 5; a case and its references meet different moments of the machine) take
         * ~140 s, leaving room for the build within the 5 minutes of the main job. One pass was
         * too noisy there while other jobs ran: a ratio moved by 20% from run to run. The
         * swizzle cases add ~70 s (~156 running cases; bench_swizzle.c trims the quick set),
         * the engine cases ~10 s (9 cases, their devices built once: bench_engine.c), the disk
         * tier's I/O cases ~35 s (36 cases of 64 MiB per iteration and 36 fio runs:
         * bench_io.c), its engine-level lock cases ~4 s (3 cases, ~5 locks of a swapped-out
         * 4 MiB allocation per repetition, each after an untimed write-out): ~250 s in all. */
        gargv[gargc++] = "--benchmark_min_time=0.05";
        gargv[gargc++] = "--benchmark_repetitions=5";
        gargv[gargc++] = "--benchmark_enable_random_interleaving=true";
    } else if (b_env.mode == B_MODE_SMOKE) {
        /* Each case once: the shortest measured time Google Benchmark takes (a case slower than
         * 1 ms runs one iteration), one repetition, in registration order. */
        gargv[gargc++] = "--benchmark_min_time=0.001";
        gargv[gargc++] = "--benchmark_repetitions=1";
        gargv[gargc++] = "--benchmark_enable_random_interleaving=false";
    } else if (b_env.mode == B_MODE_FULL) {
        gargv[gargc++] = "--benchmark_min_time=0.5";
        gargv[gargc++] = "--benchmark_repetitions=5";
        gargv[gargc++] = "--benchmark_enable_random_interleaving=true";
    } else {
        gargv[gargc++] = "--benchmark_min_time=0.2";
        gargv[gargc++] = "--benchmark_repetitions=5";
        gargv[gargc++] = "--benchmark_enable_random_interleaving=true";
    }
    if (wall) {
        snprintf(args, sizeof(args), "wall: bursts of %.0f us or more, %.0f ms a case", b_wall_burst_s() * 1e6,
                 b_wall_case_s() * 1e3);
    } else if (gb_out == NULL) {
        snprintf(gb_json, sizeof(gb_json), "%s/gbench-%s.json", out_dir, mode_s);
        snprintf(out_flag, sizeof(out_flag), "--benchmark_out=%s", gb_json);
        gargv[gargc++] = out_flag;
        gargv[gargc++] = "--benchmark_out_format=json";
        gb_out = gb_json;
    }
    for (int i = 0; i < nrest; i++)
        gargv[gargc++] = rest[i];
    gargv[gargc] = NULL;
    size_t alen = 0;
    for (int i = 1; !wall && i < gargc && alen < sizeof(args); i++)
        alen += (size_t)snprintf(args + alen, sizeof(args) - alen, "%s%s", i > 1 ? " " : "", gargv[i]);

    if (vbench_init(&gargc, gargv, help) != 0)
        return 2;
    if (b_mkdir_p(out_dir) != 0) {
        fprintf(stderr, "vidmm_bench: cannot create %s: %s\n", out_dir, strerror(errno));
        return 2;
    }

    time_t now = time(NULL);
    struct tm tm;
    char date[32];
    gmtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);

    b_machine_init();

    /* Size by size, so that each case runs close in time to the references of its size. */
    for (size_t i = 0; i < B_NSIZES; i++) {
        b_ceiling_cases(b_sizes[i]);
        b_copy_cases(b_sizes[i]);
        b_fill_cases(b_sizes[i]);
        b_flush_cases(b_sizes[i]);
        b_swizzle_cases(b_sizes[i]);
    }
    b_engine_cases();
    b_io_cases();
    for (size_t i = 0; i < b_case_count(); i++) {
        struct b_case *c = b_case_at(i);
        c->ref_case = b_case_find(c->ref_name);
        c->ceil_case = b_case_find(c->ceil_name);
        c->selected = b_env.mode != B_MODE_TARGETS;
    }
    if (b_env.mode == B_MODE_TARGETS)
        b_target_cases();
    if (filter != NULL) {
        regex_t re;
        int err = regcomp(&re, filter, REG_EXTENDED | REG_NOSUB);
        if (err != 0) {
            char buf[256];
            regerror(err, &re, buf, sizeof(buf));
            fprintf(stderr, "vidmm_bench: bad --vbench_filter: %s\n", buf);
            return 2;
        }
        for (size_t i = 0; i < b_case_count(); i++) {
            struct b_case *c = b_case_at(i);
            if (c->selected && regexec(&re, c->name, 0, NULL, 0) != 0)
                c->selected = false;
        }
        regfree(&re);
    }
    select_references();

    size_t cap = 0;
    int nsel = 0;
    for (size_t i = 0; i < b_case_count(); i++) {
        struct b_case *c = b_case_at(i);
        if (!c->selected)
            continue;
        nsel++;
        if ((c->skipped_here = skip_here(c)) != NULL)
            continue;
        if (c->bytes > cap)
            cap = c->bytes;
        if (c->buf_bytes > cap)
            cap = c->buf_bytes;
        if (c->body == b_flush_body && cap < B_FLUSH_GROUP_BYTES)
            cap = B_FLUSH_GROUP_BYTES;
    }
    if (nsel == 0) {
        fprintf(stderr, "vidmm_bench: no case matches\n");
        return 2;
    }
    if (cap == 0)
        cap = 4 * B_KiB;   /* only cases that move no bytes (engine/lock_unlock, ...) */
    if (b_buffers_alloc(cap) != 0 || b_swizzle_alloc() != 0)
        return 2;
    for (size_t i = 0; i < b_case_count(); i++) {
        struct b_case *c = b_case_at(i);
        if (c->selected && c->skipped_here == NULL)
            c->id = vbench_register(c->name, c->body, c);
    }

    char buf[64];
    vbench_add_context("vidmm_version", vidmm_version_string());
    vbench_add_context("vidmm_commit", commit);
    vbench_add_context("vidmm_backend", b_env.m.active_backend);
    vbench_add_context("vidmm_wc_copy_variant", b_env.m.wc_variant);
    vbench_add_context("vidmm_flush_writeback", vidmm_flush_insn_name(vidmm_flush_insn(VIDMM_FLUSH_WRITEBACK)));
    vbench_add_context("vidmm_flush_writeback_invalidate",
                       vidmm_flush_insn_name(vidmm_flush_insn(VIDMM_FLUSH_WRITEBACK_INVALIDATE)));
    vbench_add_context("vidmm_flush_invalidate", vidmm_flush_insn_name(vidmm_flush_insn(VIDMM_FLUSH_INVALIDATE)));
    vbench_add_context("cpu_model", b_env.m.cpu.model);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)b_env.m.cpu.nt_threshold);
    vbench_add_context("vidmm_nt_threshold", buf);
    vbench_add_context("vbench_mode", mode_s);

    if (vbench_set_console(raw_log, progress) != 0) {
        fprintf(stderr, "vidmm_bench: cannot write %s: %s\n", raw_log, strerror(errno));
        return 2;
    }
    static char bursts_tsv[1100];
    snprintf(bursts_tsv, sizeof(bursts_tsv), "%s/wall-bursts.tsv", out_dir);
    if (wall_peer != NULL) {
        /* IN:OUT, or IN:OUT:lead */
        static char spec[2100];
        snprintf(spec, sizeof(spec), "%s", wall_peer);
        size_t sl = strlen(spec);
        bool lead = sl > 5 && strcmp(spec + sl - 5, ":lead") == 0;
        if (lead)
            spec[sl - 5] = '\0';
        if (b_wall_peer(spec, lead) != 0)
            return 2;
    }
    uint64_t t0 = vbench_now_ns();
    if (wall) {
        if (b_wall_run(progress, bursts_tsv) < 0)
            return 2;
    } else {
        vbench_run(true);
    }
    double wall_s = (double)(vbench_now_ns() - t0) / 1e9;

    int ran = 0;
    for (size_t i = 0; i < b_case_count(); i++) {
        struct vbench_result r;
        const struct b_case *c = b_case_at(i);
        if (c->id >= 0 && vbench_result(c->id, &r) == 0 && r.status != VBENCH_NOT_RUN)
            ran++;
    }
    if (ran == 0)
        return 0;   /* --benchmark_list_tests, or a --benchmark_filter that matched nothing */

    snprintf(summary, sizeof(summary), "%s/summary-%s.json", out_dir, mode_s);
    struct b_run_info run = { commit, date, mode_s, wall ? "" : gb_out, args, wall_s };
    b_report_print(&run);
    int rc = b_report_write_summary(summary, &run);
    if (wall)
        printf("\nsummary JSON: %s\n", rc == 0 ? summary : "(not written)");
    else
        printf("\nGoogle Benchmark JSON: %s\nsummary JSON:          %s\n", gb_out, rc == 0 ? summary : "(not written)");
    int failed = b_report_failed();
    if (failed > 0)
        printf("%d case(s) FAILED (see the table)\n", failed);
    return failed > 0 || rc != 0 ? 1 : 0;
}
