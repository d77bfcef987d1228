#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench.sh - the main job: build the release preset and run vidmm's benchmark suite
# (bench/, Google Benchmark behind a C shim). While it runs it shows how far it is (repetitions
# done of all, elapsed, time left); then it prints one table per path family, the cases that
# cannot run on this machine (once per reason), the table of the issues' targets, and where
# everything was written.
#
#   tools/bench.sh                  quick mode: every case, best of 5 short runs (~5 min on 2 cores)
#   tools/bench.sh --full           every case, 5 runs 10x longer, CLFLUSH at all sizes (~50 min)
#   tools/bench.sh --targets        only the target table's cases, 5 runs each (~3 min)
#   tools/bench.sh 'copy_wc/'       quick mode, cases matching a regex (plus their references)
#   tools/bench.sh 'swizzle|deswizzle'   the tiling cases only, with their memcpy references
#   tools/bench.sh '^engine/'       the video memory manager cases only (~10 s), with their references
#   tools/bench.sh '^io/'           the disk tier's I/O cases next to fio (~60 s; files in $VIDMM_BENCH_DIR,
#                                   else build/release/bench-io/); '^io/lock' only the engine's lock of a
#                                   swapped-out 4 MiB allocation next to fio (~4 s)
#   tools/bench.sh -- --benchmark_min_time=0.2   any Google Benchmark flag after --
#   --no-build (run what is built), --out DIR (where run folders go), --build-dir DIR (default
#   build/release, the release preset's; another directory is configured Release the same way),
#   --plots (also the pictures: report/ in the run's folder, below)
#
# Every run gets a folder of its own, DIR/<UTC date-time>-<mode>/ (DIR: build/release/bench-results/),
# and DIR/latest points at the last one:
#   report.txt           what the terminal showed after the run (the tables)
#   lock-paths.txt       the CPU-access rows (bench/bench_lock_paths.c), also in report.txt
#   raw.log              Google Benchmark's own console output: its context block, its warnings and
#                        the row of every case and repetition
#   build.log            the build's output
#   gbench-<mode>.json   Google Benchmark's JSON (names carry its "/manual_time" suffix); cases that
#                        cannot run here are not in it, so Google Benchmark's tools/compare.py
#                        reads two of them without stumbling on error rows
#   summary-<mode>.json  one row per case with ratios, and the target table
#   report/              with --plots: report.md (a table per path family) next to
#                        throughput-<family>.svg, GB/s against size per backend and variant with
#                        the same-run memcpy/memset and the hardware-ceiling lines (gnuplot,
#                        installed through tools/deps.sh; tools/bench_report.sh says why). Also
#                        for any earlier run: tools/bench_report.sh RUN/summary-<mode>.json RUN/report
# Compare two runs' wall-clock figures with tools/bench_gate.sh OLD/summary-<mode>.json
# NEW/summary-<mode>.json (noisy on a shared machine: reported, not a gate). The gate CI enforces
# counts instructions instead: tools/bench_gate.sh with no argument.
set -euo pipefail

usage() {
  awk 'NR > 2 && /^set -euo/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=quick
filter=
out=
build=1
build_dir=
plots=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --targets) mode=targets ;;
    --filter) [ $# -ge 2 ] || { echo "bench.sh: --filter needs a regex" >&2; exit 2; }; filter=$2; shift ;;
    --filter=*) filter=${1#--filter=} ;;
    --out) [ $# -ge 2 ] || { echo "bench.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift ;;
    --out=*) out=${1#--out=} ;;
    --build-dir) [ $# -ge 2 ] || { echo "bench.sh: --build-dir needs a directory" >&2; exit 2; }; build_dir=$2; shift ;;
    --build-dir=*) build_dir=${1#--build-dir=} ;;
    --no-build) build=0 ;;
    --plots) plots=1 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra+=("$@"); break ;;
    --benchmark_*) extra+=("$1") ;;
    -*) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      if [ -n "$filter" ]; then echo "bench.sh: one filter only" >&2; exit 2; fi
      filter=$1 ;;
  esac
  shift
done

# shellcheck source=tools/deps.sh
. "$root/tools/deps.sh"
# fio is the disk tier's reference (bench/bench_io.c runs it beside the io_uring backend): the
# benchmark needs it, the tests do not.
VIDMM_DEB_PACKAGES+=(fio)
vidmm_deps

cd "$root"
# The commit goes into both JSON files; "-dirty" when the tree differs from it.
commit=${VIDMM_BENCH_COMMIT:-}
if [ -z "$commit" ]; then
  if commit=$(git -C "$root" rev-parse --verify -q HEAD 2>/dev/null); then
    git -C "$root" diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
  else
    commit=unknown
  fi
fi

build_dir=${build_dir:-$root/build/release}
case $build_dir in /*) ;; *) build_dir=$root/$build_dir ;; esac
out=${out:-$build_dir/bench-results}
case $out in /*) ;; *) out=$root/$out ;; esac
run_dir=$out/$(date -u +%Y%m%d-%H%M%S)-$mode
mkdir -p "$run_dir"
# 'latest' is replaced in one step (a new link renamed over the old one).
ln -sfn "$(basename "$run_dir")" "$out/latest.tmp" && mv -T "$out/latest.tmp" "$out/latest"

t0=$(date +%s)
if [ "$build" -eq 1 ]; then
  # vidmm_install_set: what 'cmake --install' of this tree installs (the library, vidmm-info), so
  # that the README's install step works after the main job too.
  printf 'bench.sh: building vidmm_bench and what installs in %s (log: %s) ... ' "$build_dir" "$run_dir/build.log"
  set +e
  {
    if [ "$build_dir" = "$root/build/release" ]; then
      cmake --preset release &&
        cmake --build --preset release --target vidmm_bench vidmm_bench_gate bench_lock_paths vidmm_install_set -j "$(nproc)"
    else
      # The release preset's flags (CMakePresets.json: -O3).
      cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS_RELEASE=-O3 -DNDEBUG" \
        "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG" &&
        cmake --build "$build_dir" --target vidmm_bench vidmm_bench_gate bench_lock_paths vidmm_install_set -j "$(nproc)"
    fi
  } >"$run_dir/build.log" 2>&1
  st=$?
  set -e
  if [ "$st" -ne 0 ]; then
    echo "FAILED"
    tail -n 40 "$run_dir/build.log" >&2
    exit 2
  fi
  echo "$(($(date +%s) - t0)) s"
fi
bin="$build_dir/bench/vidmm_bench"
[ -x "$bin" ] || { echo "bench.sh: $bin not built (drop --no-build)" >&2; exit 2; }

args=(--vbench_mode="$mode" --vbench_out_dir="$run_dir" --vbench_commit="$commit"
      --vbench_raw_log="$run_dir/raw.log" --vbench_progress)
[ -n "$filter" ] && args+=(--vbench_filter="$filter")
echo "bench.sh: $mode mode${filter:+, cases matching '$filter'}; results in $run_dir"
t1=$(date +%s)
set +e
"$bin" "${args[@]}" "${extra[@]}" | tee "$run_dir/report.txt"
rc=${PIPESTATUS[0]}
set -e
# The CPU-access rows (issue 31: write-tracked plain locks, range locks eager and lazy, the
# first lock of a fresh surface, range unlocks), each against the untracked / eager path in the
# same process, alternating, with its target and "NOT met" where the median misses it: their own
# program (bench/bench_lock_paths.c: devices, not kernels), ~20-40 s at 9 rounds. Left out when
# a filter names other cases.
lock_rc=0
if [ -z "$filter" ] || [[ "lock" =~ $filter ]]; then
  lp=$build_dir/bench/bench_lock_paths
  rounds=9
  [ "$mode" = full ] && rounds=21
  if [ -x "$lp" ]; then
    echo
    echo "bench.sh: CPU-access paths (bench_lock_paths $rounds: medians of $rounds rounds, ratio to the plain/eager path)"
    set +e
    "$lp" "$rounds" | tee "$run_dir/lock-paths.txt" | tee -a "$run_dir/report.txt"
    lock_rc=${PIPESTATUS[0]}
    set -e
    echo "bench.sh: CPU-access rows NOT met: $(grep -cE 'NOT met( *$|  \(mean)' "$run_dir/lock-paths.txt" || true) (lock-paths.txt)" |
      tee -a "$run_dir/report.txt"
  else
    echo "bench.sh: $lp not built: no CPU-access rows" >&2
    lock_rc=2
  fi
fi
t2=$(date +%s)
[ "$rc" -ne 0 ] || rc=$lock_rc

echo
# Debian's libbenchmark 1.7.1 is built without NDEBUG, so Google Benchmark prints "Library was
# built as DEBUG. Timings may be affected." (in raw.log). That is its own code - the runner, the
# reporters; the timed loops are vidmm's, built Release, and timed by the shim's own clock
# (bench/shim/vbench.h, "Timing"), so the warning does not apply to these figures.
if grep -q 'built as DEBUG' "$run_dir/raw.log" 2>/dev/null; then
  echo "bench.sh: note: Google Benchmark's \"Library was built as DEBUG\" (raw.log) is about Debian's build of"
  echo "  Google Benchmark itself; vidmm and the timed loops are built Release and timed by the shim's clock."
fi
if [ "$plots" -eq 1 ] && [ -s "$run_dir/summary-$mode.json" ]; then
  # shellcheck source=tools/bench_report.sh
  . "$root/tools/bench_report.sh"
  md=$(report_throughput "$run_dir/summary-$mode.json" "$run_dir/report")
  echo "bench.sh: pictures   $md${report_no_plots:+ (no pictures: $report_no_plots)}"
fi
echo "bench.sh: $mode mode: build $((t1 - t0)) s, run $((t2 - t1)) s, total $((t2 - t0)) s; exit $rc"
echo "bench.sh: report      $run_dir/report.txt (raw Google Benchmark output: raw.log)"
echo "bench.sh: JSON        $run_dir/gbench-$mode.json, $run_dir/summary-$mode.json"
echo "bench.sh: latest run  $out/latest"
echo "bench.sh: compare two runs (wall clock): tools/bench_gate.sh OLD/summary-$mode.json $out/latest/summary-$mode.json"
exit "$rc"
