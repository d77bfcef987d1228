#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench.sh - the main job: build the release preset and run vidmm's benchmark suite
# (bench/, Google Benchmark behind a C shim), printing the table of every path, the table of the
# issue's targets, and the paths of the two JSON files it wrote.
#
#   tools/bench.sh                  quick mode: every case, best of 5 short runs (~4 min on 2 cores)
#   tools/bench.sh --full           every case, 5 runs 10x longer, CLFLUSH at all sizes (~50 min)
#   tools/bench.sh --targets        only the target table's cases, 5 runs each (~3 min)
#   tools/bench.sh 'copy_wc/'       quick mode, cases matching a regex (plus their references)
#   tools/bench.sh 'swizzle|deswizzle'   the tiling cases only, with their memcpy references
#   tools/bench.sh '^engine/'       the video memory manager cases only (~10 s), with their references
#   tools/bench.sh '^io/'           the disk tier's I/O cases next to fio (~60 s; files in $VIDMM_BENCH_DIR,
#                                   else build/release/bench-io/); '^io/lock' only the engine's lock of a
#                                   swapped-out 4 MiB allocation next to fio (~4 s)
#   tools/bench.sh -- --benchmark_min_time=0.2   any Google Benchmark flag after --
#
# Outputs (default build/release/bench-results/, --out DIR to change):
#   gbench-<mode>.json   Google Benchmark's own JSON (names carry its "/manual_time" suffix)
#   summary-<mode>.json  one row per case with ratios, and the target table; compare two of them
#                        with tools/bench_gate.sh OLD NEW
set -euo pipefail

usage() {
  sed -n '3,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=quick
filter=
out=
build=1
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
    --no-build) build=0 ;;
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

t0=$(date +%s)
if [ "$build" -eq 1 ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release --target vidmm_bench vidmm_bench_gate -j "$(nproc)"
fi
bin="$root/build/release/bench/vidmm_bench"
[ -x "$bin" ] || { echo "bench.sh: $bin not built (drop --no-build)" >&2; exit 2; }
out=${out:-$root/build/release/bench-results}
mkdir -p "$out"

args=(--vbench_mode="$mode" --vbench_out_dir="$out" --vbench_commit="$commit")
[ -n "$filter" ] && args+=(--vbench_filter="$filter")
t1=$(date +%s)
set +e
"$bin" "${args[@]}" "${extra[@]}"
rc=$?
set -e
t2=$(date +%s)

echo
echo "bench.sh: $mode mode: build $((t1 - t0)) s, run $((t2 - t1)) s, total $((t2 - t0)) s; exit $rc"
echo "bench.sh: Google Benchmark JSON  $out/gbench-$mode.json"
echo "bench.sh: summary JSON           $out/summary-$mode.json"
echo "bench.sh: compare two summaries: tools/bench_gate.sh OLD.json $out/summary-$mode.json"
exit $rc
