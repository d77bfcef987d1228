#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench_gate.sh - the performance-regression gate CI enforces: instruction counts under
# Valgrind's Callgrind, which are reproducible to the instruction where wall time on this shared
# 2-core machine moves by 4-20%. Two revisions are built in the same run, each row of
# bench/gate/gate_main.c (a fixed amount of work: every swizzle layout both ways at three sizes
# and a box, copy, fill, flush, the engine's create/destroy, lock/unlock, submit, evict + page-in,
# the disk tier's write-out and read-back through the synchronous I/O backend; since issue 25 also
# one-reference submits, lists of distinct priorities, range locks, write-watch, swizzle plans,
# WDDM2 residency, VA translation and offer/reclaim; since issue 31 range locks with tracking off
# and plans with a forced walk) runs once under each, and a row whose count
# grows by more than the threshold fails the gate.
#
#   tools/bench_gate.sh                 the base revision against the work tree (see below)
#   tools/bench_gate.sh --base REV      REV against the work tree (e.g. --base HEAD: uncommitted changes)
#   tools/bench_gate.sh --selftest      proves the gate: the tree built twice, identically, must show
#                                       no change (< 0.1% in every row), and built once more with
#                                       VIDMM_BENCH_SELFTEST_SLOWDOWN (a few percent more instructions
#                                       in vidmm_fill32() and vidmm_evict()) must be flagged in exactly
#                                       the rows that call them
#   tools/bench_gate.sh --wall A B      wall-clock comparison, reported and never enforced (CI does not
#                                       run it): A and B (git revisions, worktree, or build directories
#                                       holding a built vidmm_bench) run at once, taking turns, each
#                                       case in short bursts against the same run's memcpy/memset; per row
#                                       the median change, its 95% (sign-test) interval and a verdict
#                                       (faster, slower, no measurable change), a Markdown report and an
#                                       SVG chart. Options:
#                                       --rounds N (15), --filter REGEX, --margin PCT (3), --cmake-a ARG,
#                                       --cmake-b ARG, --own-bench, --bench-arg ARG; see tools/bench_wall.sh
#   tools/bench_gate.sh OLD.json NEW.json [--tolerance=0.10 ...]
#                                       the wall-clock summaries of tools/bench.sh (bench/bench_gate.c;
#                                       noisy, reported only: see --help of that mode with --json-help)
# Options: --threshold PCT (default 1), --backends LIST (default: avx2,sse2,scalar, those the CPU
# has; --selftest: the widest), --jobs N (build parallelism, default 1), --out DIR (default
# build/gate-report or build/gate-selftest), --keep (keep the source snapshots in /tmp),
# --accept REGEX (rows over the threshold that match are reported, not failed), --harness DIR
# (another project's gate harness instead of bench/gate/: see "The gate in another project").
#
# The gate in another project (an emulator gating its own use of vidmm, README "Gating an
# emulator's own use of vidmm"): --harness DIR names a CMake project that, like bench/gate/CMakeLists.txt, takes
# -DVIDMM_GATE_SOURCE=<a vidmm tree>, add_subdirectory()s it and builds an executable vidmm_gate at
# the top of its build directory that prints its row names with --list, takes --backend NAME
# (exit 2 when it cannot run it) and --swap-dir DIR, and brackets each row with
# CALLGRIND_ZERO_STATS, CALLGRIND_TOGGLE_COLLECT (on, then off) and CALLGRIND_DUMP_STATS_AT(row).
# The two vidmm trees are this script's checkout (the vendored copy: a git submodule, or any git
# clone) at --base REV and as it is; the harness is used from DIR as it is, on both sides.
#
# A slowdown that is the price of a fix is accepted in the commit that makes it, with a trailer
# line naming the rows (an extended regex over "backend:path") and why, e.g.
#   Bench-gate-accept: ^[a-z0-9]+:(de)?swizzle/morton/ the XOR-run check costs ~400 instructions a call
# Every such line in the commits after the base revision counts.
#
# The base revision, when --base is not given: the merge base with main (or origin/main) when
# HEAD is not on it, else HEAD~1 - on main, CI gates the last commit. Where there is none - a
# clone with one commit, a shallow clone cut at HEAD, a tree outside git - the gate is an error
# (exit 2), never a pass: comparing the tree with itself would pass any change. Fetch the
# history (git fetch --unshallow) or name a base with --base REV. The self-test needs no base.
#
# Scaling rows: rows named ".../n<N>" (the same work per element at list lengths N, the reps
# keeping the elements per row equal) are compared one by one like every row, and each family
# is also compared as the ratio of its longest list's count to its shortest's: a change whose
# cost grows with the list moves the ratio even where a saving elsewhere keeps each row under
# the threshold. A ratio that grows by more than the threshold fails the gate as a row does
# (named "backend:path/n<max>:n<min>"; --accept and the trailers match that name).
#
# Both revisions are copied out of git first (git archive for the base, the tracked and
# untracked-but-not-ignored files for the work tree) into /tmp/gate-XXXXXX, so edits made while
# the gate builds cannot mix into a build; the harness (bench/gate/) always comes from the work
# tree and vendors the measured tree with add_subdirectory(), so an old revision needs no gate of
# its own. Builds: build/gate-{old,new,twin,slow}/ (Release, static library), fresh each run, with
# nice -n 10. Results: the output directory holds counts-<build>.tsv, the table, the build and
# Valgrind logs.
#
# Exit status: 0 pass; 1 a regression (or the self-test failed; --wall: a row slower); 2 usage,
# build or run error (--wall: also runs of different modes, CPUs or backends).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ---------------------------------------------------------------------------------------------
# The wall-clock summaries mode (two JSON files): the previous gate, kept for tools/bench.sh's
# output. It compares ratios to same-run references and widens its tolerance to the runs' noise.
# ---------------------------------------------------------------------------------------------
json_mode=0
for a in "$@"; do
  case $a in
    *.json) json_mode=1 ;;
    --json-help) json_mode=1 ;;
  esac
done
if [ "$json_mode" -eq 1 ]; then
  gate="$root/build/release/bench/vidmm_bench_gate"
  if [ ! -x "$gate" ]; then
    # shellcheck source=tools/deps.sh
    . "$root/tools/deps.sh"
    vidmm_deps
    (cd "$root" && cmake --preset release >/dev/null && cmake --build --preset release --target vidmm_bench_gate) >&2
  fi
  args=()
  for a in "$@"; do [ "$a" = "--json-help" ] && args+=(--help) || args+=("$a"); done
  exec "$gate" "${args[@]}"
fi

usage() {
  awk 'NR > 2 && /^set -euo/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"
}

selftest=0
base=
threshold=1
backends=
jobs=1
out=
keep=0
accept=
harness=
wall=0
wall_rounds=15
wall_filter_re=
wall_margin=3
wall_own_bench=0
wall_cmake_a=()
wall_cmake_b=()
wall_gb_args=()
need() { [ "$1" -ge 2 ] || { echo "bench_gate.sh: $2 needs $3" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --wall) [ $# -ge 3 ] || { echo "bench_gate.sh: --wall needs two sides: A B (revisions, worktree or build directories)" >&2; exit 2; }
            wall=1; wall_a=$2; wall_b=$3; shift 2 ;;
    --rounds) need $# "$1" "a number"; wall_rounds=$2; shift ;;
    --filter) need $# "$1" "a regex"; wall_filter_re=$2; shift ;;
    --margin) need $# "$1" "a percentage"; wall_margin=$2; shift ;;
    --cmake-a) need $# "$1" "a cmake argument"; wall_cmake_a+=("$2"); shift ;;
    --cmake-b) need $# "$1" "a cmake argument"; wall_cmake_b+=("$2"); shift ;;
    --bench-arg) need $# "$1" "a vidmm_bench argument"; wall_gb_args+=("$2"); shift ;;
    --own-bench) wall_own_bench=1 ;;
    --harness) need $# "$1" "a directory"; harness=$2; shift ;;
    --selftest) selftest=1 ;;
    --base) [ $# -ge 2 ] || { echo "bench_gate.sh: --base needs a revision" >&2; exit 2; }; base=$2; shift ;;
    --base=*) base=${1#--base=} ;;
    --threshold) [ $# -ge 2 ] || { echo "bench_gate.sh: --threshold needs a percentage" >&2; exit 2; }; threshold=$2; shift ;;
    --threshold=*) threshold=${1#--threshold=} ;;
    --backends) [ $# -ge 2 ] || { echo "bench_gate.sh: --backends needs a list" >&2; exit 2; }; backends=$2; shift ;;
    --backends=*) backends=${1#--backends=} ;;
    --jobs) [ $# -ge 2 ] || { echo "bench_gate.sh: --jobs needs a number" >&2; exit 2; }; jobs=$2; shift ;;
    --jobs=*) jobs=${1#--jobs=} ;;
    -j*) jobs=${1#-j} ;;
    --out) [ $# -ge 2 ] || { echo "bench_gate.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift ;;
    --out=*) out=${1#--out=} ;;
    --keep) keep=1 ;;
    --accept) [ $# -ge 2 ] || { echo "bench_gate.sh: --accept needs a regex" >&2; exit 2; }; accept=$2; shift ;;
    --accept=*) accept=${1#--accept=} ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_gate.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $threshold =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "bench_gate.sh: --threshold $threshold: not a percentage" >&2; exit 2; }
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "bench_gate.sh: --jobs $jobs: not a number" >&2; exit 2; }
if [ -n "$harness" ]; then
  [ -f "$harness/CMakeLists.txt" ] || { echo "bench_gate.sh: --harness $harness: no CMakeLists.txt there" >&2; exit 2; }
  [ "$selftest" -eq 0 ] || { echo "bench_gate.sh: --selftest proves vidmm's own harness; drop --harness" >&2; exit 2; }
  harness=$(cd "$harness" && pwd)
fi
if [ "$wall" -eq 1 ]; then
  if [ "$selftest" -eq 1 ] || [ -n "$base" ] || [ -n "$harness" ]; then
    echo "bench_gate.sh: --wall goes without --selftest, --base and --harness" >&2
    exit 2
  fi
  [[ $wall_rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench_gate.sh: --rounds $wall_rounds: not a number" >&2; exit 2; }
  [[ $wall_margin =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "bench_gate.sh: --margin $wall_margin: not a percentage" >&2; exit 2; }
elif [ -n "$wall_filter_re" ] || [ "$wall_own_bench" -eq 1 ] || [ ${#wall_cmake_a[@]} -gt 0 ] ||
     [ ${#wall_cmake_b[@]} -gt 0 ] || [ ${#wall_gb_args[@]} -gt 0 ]; then
  echo "bench_gate.sh: --filter, --own-bench, --cmake-a/-b and --bench-arg go with --wall" >&2
  exit 2
fi

# shellcheck source=tools/deps.sh
. "$root/tools/deps.sh"
if [ "$wall" -eq 1 ]; then
  vidmm_deps   # the build's packages (Google Benchmark); gnuplot when the report draws
else
  vidmm_deps "${VIDMM_DEB_PACKAGES_VALGRIND[@]}"
fi

t_start=$(date +%s)
if [ "$wall" -eq 1 ]; then
  out=${out:-$root/build/wall-report}
elif [ "$selftest" -eq 1 ]; then
  out=${out:-$root/build/gate-selftest}
else
  out=${out:-$root/build/gate-report}
fi
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d /tmp/gate-XXXXXX)
cleanup() {
  if [ "$keep" -eq 1 ]; then
    echo "bench_gate.sh: sources kept in $tmp" >&2
  else
    rm -rf "$tmp" "$root/build/gate-src" "$root/build/gate-harness"
  fi
}
trap cleanup EXIT

say() { echo "=== bench_gate: $*"; }

# ---------------------------------------------------------------------------------------------
# Sources.
# ---------------------------------------------------------------------------------------------

in_git=0
git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=1

# snapshot_worktree DEST: the work tree as git sees it (tracked files as they are now, untracked
# files that are not ignored; build/ is ignored), or everything but build/ outside git.
snapshot_worktree() {
  mkdir -p "$1"
  if [ "$in_git" -eq 1 ]; then
    (cd "$root" && git ls-files -z --cached --others --exclude-standard |
       while IFS= read -r -d '' f; do
         if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi   # deleted files are gone
       done | tar --null -T - -cf -) | tar -xf - -C "$1"
  else
    (cd "$root" && tar --exclude=./build -cf - .) | tar -xf - -C "$1"
  fi
}

# snapshot_rev REV DEST: the committed tree of REV.
snapshot_rev() {
  mkdir -p "$2"
  git -C "$root" archive --format=tar "$1" | tar -xf - -C "$2"
}

if [ "$wall" -eq 1 ]; then
  # shellcheck source=tools/bench_report.sh
  . "$root/tools/bench_report.sh"
  # shellcheck source=tools/bench_wall.sh
  . "$root/tools/bench_wall.sh"
  wall_filter_re=${wall_filter_re:-$wall_filter}
  set +e
  (set -e; wall_main)
  st=$?
  set -e
  exit "$st"
fi

# ---------------------------------------------------------------------------------------------
# Builds and runs.
# ---------------------------------------------------------------------------------------------

# build NAME SOURCE [cmake -D...]: the harness of the work-tree snapshot against SOURCE, in
# build/gate-NAME (fresh), Release. Fails the gate (exit 2) with the log's end.
#
# Every build compiles its tree at one path, build/gate-src (SOURCE is copied there first), with
# the harness at build/gate-harness: the same file then has the same compile command in every
# build, and with ccache (tools/deps.sh installs it; VIDMM_CCACHE=0 turns it off) an unchanged
# file is compiled once for all of them - the base revision and the work tree, the self-test's
# three builds, and the gate's and the self-test's runs. The self-test's twin build is compiled
# anew (CCACHE_RECACHE), so that the identical pair is still two compilations of every file.
# The ccache counts of each build are in $out/ccache-NAME.log.
mapfile -t launcher < <(vidmm_ccache_args)
stage="$root/build/gate-src"
harness_staged=0
build() {
  local name=$1 src=$2 dir="$root/build/gate-$1" log="$out/build-$1.log" st cc=() hits miss
  shift 2
  rm -rf "$dir" "$stage"
  mkdir -p "$stage"
  cp -a "$src/." "$stage/"
  if [ -z "$harness" ] && [ "$harness_staged" -eq 0 ]; then
    rm -rf "$root/build/gate-harness"
    mkdir -p "$root/build/gate-harness"
    cp -a "$tmp/new/bench/gate/." "$root/build/gate-harness/"
    harness_staged=1
  fi
  [ "$name" = twin ] && cc+=(CCACHE_RECACHE=1)
  local t0
  t0=$(date +%s)
  set +e
  {
    nice -n 10 cmake -S "${harness:-$root/build/gate-harness}" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
      -DVIDMM_GATE_SOURCE="$stage" "${launcher[@]}" "$@" &&
      env CCACHE_STATSLOG="$out/ccache-$name.log" "${cc[@]}" nice -n 10 cmake --build "$dir" -j"$jobs"
  } >"$log" 2>&1
  st=$?
  set -e
  if [ "$st" -ne 0 ]; then
    echo "bench_gate.sh: building $name ($src) failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    if [ "$name" = old ]; then
      echo "bench_gate.sh: the base revision does not build with this tree's harness (bench/gate/gate_main.c" >&2
      echo "  uses the public API as it is now); compare against a later revision with --base REV" >&2
    fi
    exit 2
  fi
  hits=
  if [ -f "$out/ccache-$name.log" ]; then
    hits=$(grep -c -E '^(direct|preprocessed)_cache_hit$' "$out/ccache-$name.log" || true)
    miss=$(grep -c -E '^(cache_miss|recache)$' "$out/ccache-$name.log" || true)
    hits="; ccache: $hits hits, $miss compiled"
  fi
  say "built $name in $(($(date +%s) - t0)) s ($dir$hits)"
}

# supported BUILD BACKEND: whether BACKEND runs under Valgrind on this machine (Valgrind presents
# its own CPU: AVX2 at most; vidmm_gate refuses a backend it cannot run with exit 2).
supported() {
  local log="$out/probe-$2.log"
  valgrind --tool=none --log-file=/dev/null "$root/build/gate-$1/vidmm_gate" --backend "$2" --list >"$log" 2>&1
}

# measure BUILD BACKEND [SLOT]: runs the build's vidmm_gate under Callgrind with BACKEND and
# writes $out/counts-BUILD-BACKEND.tsv (row, instructions). Every run sees the same binary path
# length, arguments and environment (the binary is copied to one place per slot, $tmp/bin1 or
# $tmp/bin2, env -i): the stack the program starts with is then the same, and so is every stack
# buffer's alignment. Two runs at once (measure_pair) use the two slots; the self-test measures
# its identical pair that way too, so a difference the slot made would fail it.
measure() {
  local b=$1 be=$2 slot=${3:-1} cg="$tmp/cg-$1-$2" log="$out/valgrind-$1-$2.log" st n
  local bin="$tmp/bin$slot" swap="$tmp/swap$slot"
  mkdir -p "$cg" "$bin" "$swap"
  cp "$root/build/gate-$b/vidmm_gate" "$bin/vidmm_gate"
  set +e
  (cd "$swap" && env -i PATH=/usr/bin:/bin HOME=/nonexistent LC_ALL=C \
     valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$cg/cg" \
     "$bin/vidmm_gate" --backend "$be" --swap-dir "$swap") >"$log" 2>&1
  st=$?
  set -e
  if [ "$st" -ne 0 ]; then
    echo "bench_gate.sh: vidmm_gate ($b, $be) exited $st under Callgrind; the end of $log:" >&2
    tail -n 30 "$log" >&2
    exit 2
  fi
  # One dump per row, in order: cg.1, cg.2, ... ("desc: Trigger: Client Request: <row>" and
  # "totals: <Ir>"); the final cg holds what ran outside the rows.
  : >"$out/counts-$b-$be.tsv"
  n=1
  while [ -f "$cg/cg.$n" ]; do
    awk -v be="$be" '/^desc: Trigger: Client Request: /{ r = substr($0, 32) }
                     /^totals: /{ t = $2 }
                     END { if (r == "" || t == "") exit 1; print be ":" r "\t" t }' "$cg/cg.$n" \
      >>"$out/counts-$b-$be.tsv" || { echo "bench_gate.sh: $cg/cg.$n: no row name or total" >&2; exit 2; }
    n=$((n + 1))
  done
  # The rows expected: the list as the program gives it under Valgrind, where a path the kernel
  # offers natively may be refused (the write-watch rows exist only for the backends there).
  local want
  want=$(cd "$swap" && env -i PATH=/usr/bin:/bin HOME=/nonexistent LC_ALL=C \
           valgrind --tool=none --log-file=/dev/null "$bin/vidmm_gate" --backend "$be" --list | wc -l)
  if [ $((n - 1)) -ne "$want" ]; then
    echo "bench_gate.sh: $b ($be): $((n - 1)) rows counted, $want expected; see $log" >&2
    exit 2
  fi
  sed -n 's/^# vidmm_gate: //p' "$log" | head -n 1 >"$out/header-$b-$be.txt"
  rm -rf "$cg"
}

# measure_pair BACKEND BUILD [BUILD]: measures the builds with BACKEND, the first in slot 1 and
# the second in slot 2, at once when --jobs allows two (Callgrind counts instructions, which the
# other run does not change), else one after the other. A failed run stops the gate (exit 2).
measure_pair() {
  local be=$1 a=$2 b=${3:-} t0 pa pb st=0
  t0=$(date +%s)
  if [ -n "$b" ] && [ "$jobs" -ge 2 ]; then
    measure "$a" "$be" 1 &
    pa=$!
    measure "$b" "$be" 2 &
    pb=$!
    wait "$pa" || st=$?
    wait "$pb" || st=$?
    [ "$st" -eq 0 ] || exit "$st"
    say "measured $a and $b ($be) side by side in $(($(date +%s) - t0)) s"
  else
    measure "$a" "$be" 1
    [ -z "$b" ] || measure "$b" "$be" 1
    say "measured $a${b:+ and $b} ($be) in $(($(date +%s) - t0)) s"
  fi
}

# compare OLD NEW TITLE [changed]: the table of every row of counts-OLD-*.tsv against
# counts-NEW-*.tsv (change = new / old - 1): rows growing by more than the threshold first,
# largest first, then the others by name. Written to $out/table-OLD-NEW.txt, and to stdout whole
# or, with 'changed', only the rows whose count changed. Sets $flagged (the rows over the
# threshold, one a line) and $maxabs (the largest |change|, percent).
compare() {
  local a=$1 b=$2 title=$3 only=${4:-} ta tb raw="$out/compare-$1-$2.raw" table="$out/table-$1-$2.txt" be
  ta="$out/counts-$a.all.tsv"
  tb="$out/counts-$b.all.tsv"
  cat "$out"/counts-"$a"-*.tsv >"$ta"
  cat "$out"/counts-"$b"-*.tsv >"$tb"
  # Both sides must have run the same configuration (backend, version line).
  for be in "${run_backends[@]}"; do
    if ! cmp -s "$out/header-$a-$be.txt" "$out/header-$b-$be.txt"; then
      echo "bench_gate.sh: $a and $b ran different configurations for $be:" >&2
      cat "$out/header-$a-$be.txt" "$out/header-$b-$be.txt" >&2
      exit 2
    fi
  done
  # One line per row: R, 0 for a regression (1 otherwise), the sort key, row, old, new, change.
  awk -F'\t' -v thr="$threshold" -v a="$a" -v b="$b" '
    NR == FNR { old[$1] = $2; next }
    {
      if (!($1 in old)) { print "M\t" $1 " (only in " b ")"; next }
      seen[$1] = 1
      ch = ($2 - old[$1]) * 100.0 / (old[$1] > 0 ? old[$1] : 1)
      reg = ch > thr
      printf "R\t%d\t%.6f\t%s\t%d\t%d\t%.6f\n", reg ? 0 : 1, reg ? -ch : 0, $1, old[$1], $2, ch
    }
    END { for (r in old) if (!(r in seen)) print "M\t" r " (only in " a ")" }' "$ta" "$tb" >"$raw"
  # A row on one side only is a row the harness guards with a feature macro (a call the other
  # revision lacks): nothing to compare it with, so it is listed, not gated - and never counted
  # as a pass of its own. (It used to stop the gate, which broke --base against older trees.)
  local onesided
  onesided=$(sed -n 's/^M\t/ /p' "$raw" | tr '\n' ' ')
  # Scaling families (see the top): per "backend:path/n" the shortest and longest lists' rows,
  # one more R line each whose old and new counts are the two ratios, in millionths.
  awk -F'\t' -v thr="$threshold" '
    $1 == "R" && match($4, /\/n[0-9]+$/) {
      fam = substr($4, 1, RSTART); n = substr($4, RSTART + 2) + 0
      if (!(fam in lo) || n < lo[fam]) { lo[fam] = n; lo_o[fam] = $5; lo_n[fam] = $6 }
      if (!(fam in hi) || n > hi[fam]) { hi[fam] = n; hi_o[fam] = $5; hi_n[fam] = $6 }
    }
    END {
      for (fam in lo) {
        if (lo[fam] == hi[fam] || lo_o[fam] <= 0 || lo_n[fam] <= 0) continue
        ro = hi_o[fam] * 1e6 / lo_o[fam]; rn = hi_n[fam] * 1e6 / lo_n[fam]
        ch = (rn - ro) * 100.0 / ro
        reg = ch > thr
        printf "R\t%d\t%.6f\t%sn%d:n%d\t%d\t%d\t%.6f\tratio\n", reg ? 0 : 1, reg ? -ch : 0, fam, hi[fam], lo[fam], ro, rn, ch
      }
    }' "$raw" >"$raw.scaling"
  cat "$raw.scaling" >>"$raw"
  {
    echo "# $title"
    printf '%-46s %14s %14s %10s\n' "row (backend:path)" "old Ir" "new Ir" "change"
    grep '^R' "$raw" | LC_ALL=C sort -t"$(printf '\t')" -k2,2n -k3,3g -k4,4 |
      awk -F'\t' '{ printf "%-46s %14d %14d %+9.3f%%%s\n", $4, $5, $6, $7,
                     ($2 == 0 ? "  REGRESSION" : "") ($8 == "ratio" ? "  (ratio x 1e6: longest list / shortest)" : "") }'
    awk -F'\t' -v thr="$threshold" '
      $1 == "R" { a = $7 < 0 ? -$7 : $7; if (a > m) m = a; if ($5 != $6) c++; if ($2 == 0) r++; n++ }
      END { printf "# %d rows: %d changed, %d over +%s%%, largest |change| %.4f%%\n", n, c, r, thr, m }' "$raw"
    [ -z "$onesided" ] || echo "# not compared, on one side only:$onesided"
  } >"$table"
  flagged=$(awk -F'\t' '$1 == "R" && $2 == 0 { print $4 }' "$raw")
  maxabs=$(awk -F'\t' '$1 == "R" { a = $7 < 0 ? -$7 : $7; if (a > m) m = a } END { printf "%.4f", m }' "$raw")
  if [ -n "$only" ]; then
    awk 'NR <= 2 || /^#/ || $2 != $3' "$table"
  else
    cat "$table"
  fi
}

# The backends to run: the list asked for, or the default, keeping those Valgrind runs here.
choose_backends() {
  local build=$1 want b
  # Widest first: the self-test keeps only the first that runs. The scalar backend's swizzles
  # are the reference walk, ~40x the instructions of the others (~25 s of the ~35 s a build's
  # three runs take here), but a caller may be on it.
  want=${backends:-avx2 sse2 scalar}
  want=${want//,/ }
  run_backends=()
  local skipped=()
  for b in $want; do
    if [ "$b" = avx512 ]; then
      skipped+=("avx512 (Valgrind 3.19 has no AVX-512)")
    elif supported "$build" "$b"; then
      run_backends+=("$b")
      [ "$selftest" -eq 1 ] && [ -z "$backends" ] && break
    else
      skipped+=("$b (not on this CPU, or not under Valgrind)")
    fi
  done
  [ ${#run_backends[@]} -gt 0 ] || { echo "bench_gate.sh: no backend runs here: ${skipped[*]}" >&2; exit 2; }
  say "backends: ${run_backends[*]}${skipped:+; skipped: ${skipped[*]}}"
}

# ---------------------------------------------------------------------------------------------
# --selftest
# ---------------------------------------------------------------------------------------------
# The rows the slowdown touches: vidmm_fill32() is what every fill/ row calls (the engine calls
# vidmm_fill32_ex() for its FILL operations, and vidmm_fill32() only for non-zero fill patterns,
# which no row uses), and vidmm_evict() what engine/evict_pagein calls (the engine's own
# evictions in submit_pressure go through vm_evict_one()).
SLOWED_ROWS='^[a-z0-9]+:(fill/|engine/evict_pagein/)'
NOISE_MAX=0.1

if [ "$selftest" -eq 1 ]; then
  say "self-test: snapshot of the work tree in $tmp/new"
  snapshot_worktree "$tmp/new"
  build new "$tmp/new"
  build twin "$tmp/new"
  build slow "$tmp/new" -DVIDMM_BENCH_SELFTEST_SLOWDOWN=ON
  choose_backends new
  for be in "${run_backends[@]}"; do
    measure_pair "$be" new twin
    measure_pair "$be" slow
  done
  fail=0
  echo
  compare new twin "identical builds (build/gate-new against build/gate-twin): every row must change by < $NOISE_MAX%" changed
  if [ -n "$flagged" ] || awk -v m="$maxabs" -v lim="$NOISE_MAX" 'BEGIN { exit !(m >= lim) }'; then
    echo "SELFTEST FAIL: identical builds differ (largest |change| $maxabs%)"
    fail=1
  else
    echo "identical pair: OK (largest |change| $maxabs%)"
  fi
  echo
  compare new slow "VIDMM_BENCH_SELFTEST_SLOWDOWN (build/gate-new against build/gate-slow): exactly the fill/ and engine/evict_pagein/ rows must be flagged"
  expected=$(cut -f1 "$out/counts-new.all.tsv" | grep -E "$SLOWED_ROWS" | sort || true)
  got=$(printf '%s\n' "$flagged" | sed '/^$/d' | sort)
  if [ -z "$expected" ]; then
    echo "SELFTEST FAIL: no row matches $SLOWED_ROWS"
    fail=1
  elif [ "$expected" != "$got" ]; then
    echo "SELFTEST FAIL: flagged rows differ from the slowed ones"
    diff <(echo "$expected") <(echo "$got") | sed -n 's/^< /  not flagged: /p; s/^> /  flagged but not slowed: /p'
    fail=1
  else
    echo "slowed pair: OK ($(echo "$expected" | wc -l) slowed rows flagged, no other)"
  fi
  echo
  say "self-test $([ "$fail" -eq 0 ] && echo PASSED || echo FAILED) in $(($(date +%s) - t_start)) s; tables in $out"
  exit "$fail"
fi

# ---------------------------------------------------------------------------------------------
# The gate.
# ---------------------------------------------------------------------------------------------
base_note=
no_base() {
  echo "bench_gate.sh: no base revision: $1. The gate compares two revisions and will not pass by" >&2
  echo "  comparing the tree with itself: fetch the history (git fetch --unshallow) or name one with --base REV" >&2
  exit 2
}
if [ -z "$base" ]; then
  if [ "$in_git" -eq 0 ]; then
    no_base "not a git checkout"
  else
    for ref in main origin/main; do
      if mb=$(git -C "$root" merge-base HEAD "$ref" 2>/dev/null) &&
         [ "$mb" != "$(git -C "$root" rev-parse HEAD)" ]; then
        base=$mb
        base_note="the merge base with $ref"
        break
      fi
    done
    if [ -z "$base" ]; then
      if git -C "$root" rev-parse -q --verify 'HEAD~1^{commit}' >/dev/null; then
        base=HEAD~1
        base_note="HEAD~1 (the last commit is gated)"
      elif [ "$(git -C "$root" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
        no_base "HEAD's parent is not in this shallow clone"
      elif git -C "$root" rev-parse -q --verify 'HEAD^{commit}' >/dev/null; then
        no_base "HEAD has no parent (a clone with one commit)"
      else
        no_base "no commit yet"
      fi
    fi
  fi
fi
[ "$in_git" -eq 1 ] || no_base "--base $base, but not a git checkout"
snapshot_worktree "$tmp/new"
rev=$(git -C "$root" rev-parse --verify -q "$base^{commit}") || { echo "bench_gate.sh: $base: no such revision" >&2; exit 2; }
say "old: $base = $(git -C "$root" log -1 --format='%h %s' "$rev" | cut -c1-100)${base_note:+ ($base_note)}"
snapshot_rev "$rev" "$tmp/old"
old_src="$tmp/old"
dirty=
[ "$in_git" -eq 1 ] && ! git -C "$root" diff --quiet HEAD -- 2>/dev/null && dirty=" with uncommitted changes"
say "new: the work tree$dirty"
build old "$old_src"
build new "$tmp/new"
choose_backends new
for be in "${run_backends[@]}"; do
  measure_pair "$be" old new
done
echo
compare old new "instructions per row (Callgrind), old = $base, new = the work tree"
echo
# Accepted slowdowns: --accept, and the Bench-gate-accept trailers of the commits gated.
while IFS= read -r line; do
  re=${line%% *}
  [ -n "$re" ] && accept="${accept:+$accept|}($re)"
done < <(git -C "$root" log --format=%B "$rev..HEAD" | sed -n 's/^Bench-gate-accept: *//p')
if [ -n "$accept" ] && [ -n "$flagged" ]; then
  ok=$(printf '%s\n' "$flagged" | grep -E -- "$accept" || true)
  if [ -n "$ok" ]; then
    say "accepted (Bench-gate-accept / --accept '$accept'):"
    printf '%s\n' "$ok" | sed 's/^/  /'
    flagged=$(printf '%s\n' "$flagged" | grep -v -E -- "$accept" || true)
  fi
fi
n_reg=$(printf '%s\n' "$flagged" | sed '/^$/d' | wc -l)
if [ "$n_reg" -gt 0 ]; then
  say "FAIL: $n_reg row(s) grew by more than $threshold% ($(($(date +%s) - t_start)) s; table in $out)"
  exit 1
fi
say "PASS: no row grew by more than $threshold% ($(($(date +%s) - t_start)) s; table in $out)"
