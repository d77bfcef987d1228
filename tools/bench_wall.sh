# SPDX-License-Identifier: MIT
# tools/bench_wall.sh - tools/bench_gate.sh --wall A B: the wall-clock comparison of two builds,
# reported, never enforced (CI does not run it: on this shared 2-core machine wall time moves by
# 4-20% from run to run; the instruction-count gate is what CI enforces). Sourced by
# tools/bench_gate.sh after its option parsing, with its snapshot functions and $tmp, $out,
# $jobs, $root defined; not run on its own.
#
# A and B are each
#   - a git revision (HEAD, main, a tag, a hash): its committed tree, copied out with git archive;
#   - worktree (or .): the work tree as git sees it;
#   - a build directory that holds a built vidmm_bench (build/release, or build/wall-a of an
#     earlier --wall): used as it is, nothing is built - how the same two builds are compared
#     many times over.
# Revisions are built in build/wall-a and build/wall-b (fresh, Release, nice -n 10, -j$jobs)
# through bench/gate/CMakeLists.txt with VIDMM_GATE_WALL=ON: the revision vendored with
# add_subdirectory(), as the gate builds it, its vidmm_bench built with the static library. The
# work tree's bench/ is copied over each revision's first (the same cases and the same timing
# code on both sides, as the gate's rows always come from the work tree); --own-bench keeps each
# revision's own bench/ (needed when the work tree's bench/ uses API the revision lacks).
# --cmake-a ARG / --cmake-b ARG add a cmake argument to one side's build (repeatable), e.g.
# --cmake-b -DVIDMM_BENCH_SELFTEST_SLOWDOWN=WALL, the check that a 10% slowdown is seen.
#
# Rounds: --rounds N (default 15) rounds, all in one session. A round starts A's and B's
# vidmm_bench together (--vbench_mode=wall, cases matching --filter, default wall_filter below),
# joined by two FIFOs in the round's folder, and they take turns (bench/b_wall.c): per case 8
# turns a side of ~30 ms, in the order F S S F F S S F, F the lead - A in odd rounds, B in even
# ones. In its turns a run times the case in short bursts (250 us or more, 10 calls or more)
# interleaved with the memcpy (memset for fills) of the same bytes, quads C R R C / R C C R, and
# reports the fastest burst of each (bench/b_wall.c says why: on this shared machine only the
# fastest of many short bursts is steady, means and Google Benchmark's repetitions move with the
# load, and whether a run meets a quiet moment at all depends on the minute - so the two sides
# take turns within the same minutes rather than running one after the other). A round's figure
# per row: log of B's fastest case burst over its fastest reference burst minus the same of A.
# Per row: the median over rounds (a change of B's time against A's, positive = slower), its
# distribution-free interval - the order statistics d(k) and d(n+1-k) of the n round figures,
# k the largest with P(Binomial(n, 1/2) < k) <= 2.5% (the sign test's interval: at least 95%
# for any distribution of independent rounds from 6 rounds up; 15 rounds: d(4) to d(12), 96.5%),
# and the verdict - slower or faster when the whole interval lies beyond +-margin (--margin PCT,
# default 3), else no measurable change. (It replaced a bootstrap of the median, whose
# percentile interval is too narrow with a few rounds.)
#
# It refuses (exit 2) to compare runs whose mode, CPU model, CPU features or active backend
# differ (the summary JSON's context): a build that chose another backend measures another code.
# Results in --out DIR (default build/wall-report): runs/rN/{a,b} (every run's summary, report and
# wall-bursts.tsv, each burst's time), samples.tsv, wall-table.tsv (the interval's coverage last),
# table.txt, report.md and wall-change.svg. Two bench/ trees of before --vbench_mode=wall cannot
# be compared (--own-bench with an older revision): the tool says so.
# Exit status: 0 no row slower; 1 a row slower (a report: CI does not run this); 2 usage, build
# or run error, or runs that cannot be compared.

# shellcheck shell=bash
# shellcheck disable=SC2154  # tmp, root, jobs, wall_* are set by tools/bench_gate.sh, which sources this

# The default rows: the public fill at 256 KiB and 4 MiB (vidmm_fill32(), which the WALL slowdown
# slows) and four 4 MiB swizzle rows that nothing slows - ~9 s a round at load 7, ~2-2.5 min
# for 15 rounds.
# shellcheck disable=SC2034  # read by tools/bench_gate.sh
wall_filter='^fill/auto/auto/(262144|4194304)$|^(de)?swizzle/(bl|intel_y)_e4/auto/4194304$'

# Each run: vidmm_bench --vbench_mode=wall with its defaults (0.25 s a case, bursts of 250 us and
# 10 calls or more: bench/b_wall.c); --bench-arg flags (--vbench_wall_case_ms=,
# --vbench_wall_burst_us=) come after these and win.
wall_default_args=()

wall_die() { echo "bench_gate.sh --wall: $*" >&2; exit 2; }
wsay() { echo "=== bench_gate --wall: $*"; }

# wall_bin DIR: the vidmm_bench of a build directory, or nothing.
wall_bin() {
  local d=$1 c
  for c in "$d/bench/vidmm_bench" "$d/vidmm/bench/vidmm_bench" "$d/vidmm_bench"; do
    if [ -f "$c" ] && [ -x "$c" ]; then echo "$c"; return 0; fi
  done
  return 1
}

# wall_side NAME SPEC CMAKE_ARGS...: sets wall_bin_NAME and wall_label_NAME, building when SPEC is
# a revision or the work tree.
wall_side() {
  local name=$1 spec=$2 src dir log bin rev t0 st
  shift 2
  if [ -d "$spec" ] && bin=$(wall_bin "$spec"); then
    [ $# -eq 0 ] || wall_die "--cmake-$name applies to a revision, not to the build directory $spec"
    printf -v "wall_bin_$name" '%s' "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
    printf -v "wall_label_$name" '%s' "build directory $spec ($bin)"
    return 0
  fi
  if [ -d "$spec" ] && [ "$spec" != . ]; then
    wall_die "$spec: a directory without a built vidmm_bench (bench/vidmm_bench)"
  fi
  if [ "$spec" = worktree ] || [ "$spec" = . ]; then
    src="$tmp/new"
    printf -v "wall_label_$name" '%s' "the work tree$wall_dirty"
  else
    [ "$in_git" -eq 1 ] || wall_die "$spec: not a build directory, and this is not a git checkout"
    rev=$(git -C "$root" rev-parse --verify -q "$spec^{commit}") || wall_die "$spec: no such revision or build directory"
    src="$tmp/side-$name"
    snapshot_rev "$rev" "$src"
    if [ "$wall_own_bench" -eq 0 ]; then
      rm -rf "$src/bench"
      cp -a "$tmp/new/bench" "$src/bench"
    fi
    printf -v "wall_label_$name" '%s' "$spec = $(git -C "$root" log -1 --format='%h %s' "$rev" | cut -c1-90)"
  fi
  dir="$root/build/wall-$name"
  log="$out/build-$name.log"
  rm -rf "$dir"
  t0=$(date +%s)
  set +e
  {
    nice -n 10 cmake -S "$tmp/new/bench/gate" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DVIDMM_GATE_SOURCE="$src" \
      -DVIDMM_GATE_WALL=ON "$@" &&
      nice -n 10 cmake --build "$dir" --target vidmm_bench -j"$jobs"
  } >"$log" 2>&1
  st=$?
  set -e
  if [ "$st" -ne 0 ]; then
    echo "bench_gate.sh --wall: building $name ($spec) failed; the end of $log:" >&2
    tail -n 30 "$log" >&2
    [ "$wall_own_bench" -eq 0 ] &&
      echo "bench_gate.sh --wall: the work tree's bench/ may use API $spec lacks: try --own-bench" >&2
    exit 2
  fi
  bin=$(wall_bin "$dir") || wall_die "$dir: no vidmm_bench after the build (see $log)"
  printf -v "wall_bin_$name" '%s' "$bin"
  local extra=
  [ $# -gt 0 ] && extra=" with $*"
  local lv="wall_label_$name"
  printf -v "wall_label_$name" '%s' "${!lv}$extra (built in $dir)"
  wsay "built $name in $(($(date +%s) - t0)) s ($dir)"
}

# wall_context SUMMARY: the fields that must agree between runs, one line.
wall_context() {
  awk '
    /^  "context": \{/ { c = 1; next }
    c && /^  \}/ { exit }
    c && /^    "(mode|cpu_vendor|cpu_model|cpu_features_usable|backend)": / {
      line = $0; sub(/^ +/, "", line); sub(/,$/, "", line); s = s (s == "" ? "" : "; ") line }
    END { print s }' "$1"
}

# wall_samples SUMMARY ROUND POS SIDE: appends the summary's rows to samples.tsv (round, position,
# side, row, fastest case burst and fastest reference burst in ns a call, reference).
wall_samples() {
  awk -v r="$2" -v p="$3" -v s="$4" '
    function field(k,   m) {
      if (!match($0, "\"" k "\": (\"[^\"]*\"|[^,}]*)")) return ""
      m = substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 4)
      gsub(/"/, "", m)
      return m == "null" ? "" : m
    }
    /^    \{"name": / && field("status") == "ok" && field("wall_case_ns") != "" && field("wall_ref_ns") != "" {
      print r "\t" p "\t" s "\t" field("name") "\t" field("wall_case_ns") "\t" field("wall_ref_ns") "\t" field("baseline")
    }' "$1" >>"$out/samples.tsv"
}

# wall_check RUNDIR LABEL: the run's summary exists and its context matches the first run's.
wall_check() {
  local d=$1 label=$2 ctx
  [ -s "$d/summary-wall.json" ] || wall_die "$label wrote no summary; see $d/report.txt"
  ctx=$(wall_context "$d/summary-wall.json")
  if [ -z "$wall_ctx" ]; then
    wall_ctx=$ctx
    wall_ctx_from=$label
  elif [ "$ctx" != "$wall_ctx" ]; then
    echo "bench_gate.sh --wall: refusing to compare runs of different modes, CPUs or backends:" >&2
    echo "  $wall_ctx_from: $wall_ctx" >&2
    echo "  $label: $ctx" >&2
    exit 2
  fi
}

# wall_round ROUND LEAD: one round - A's and B's vidmm_bench started together, taking turns
# through two FIFOs (bench/b_wall.c), LEAD (a or b) opening each case; both sides' rows go to
# samples.tsv (position 1 the lead, 2 the other).
wall_round() {
  local r=$1 lead=$2 side peer d bin bv st=0 pa pb
  local rd="$out/runs/r$r"
  mkdir -p "$rd/a" "$rd/b"
  rm -f "$rd/fifo-ab" "$rd/fifo-ba"
  mkfifo "$rd/fifo-ab" "$rd/fifo-ba"
  for side in a b; do
    bv="wall_bin_$side"
    bin=${!bv}
    d="$rd/$side"
    # A reads fifo-ba and writes fifo-ab, B the other way round.
    if [ "$side" = a ]; then peer="$rd/fifo-ba:$rd/fifo-ab"; else peer="$rd/fifo-ab:$rd/fifo-ba"; fi
    [ "$side" = "$lead" ] && peer="$peer:lead"
    (cd "$d" && exec "$bin" --vbench_mode=wall --vbench_filter="$wall_filter_re" --vbench_out_dir="$d" \
       --vbench_commit="wall-$side" --vbench_wall_peer="$peer" "${wall_default_args[@]}" "${wall_gb_args[@]}" \
       >"$d/report.txt" 2>&1) &
    if [ "$side" = a ]; then pa=$!; else pb=$!; fi
  done
  wait "$pa" || st=$?
  wait "$pb" || st=$?
  rm -f "$rd/fifo-ab" "$rd/fifo-ba"
  if [ "$st" -ne 0 ]; then
    for side in a b; do
      if grep -q 'unknown --vbench_mode=wall' "$rd/$side/report.txt"; then
        wall_die "$side has no --vbench_mode=wall (a bench/ older than it: --own-bench with an older revision, or a build directory of an older tree)"
      fi
      echo "bench_gate.sh --wall: round $r, $side: the end of $rd/$side/report.txt:" >&2
      tail -n 5 "$rd/$side/report.txt" >&2
    done
    wall_die "round $r: a run exited $st"
  fi
  for side in a b; do
    wall_check "$rd/$side" "round $r ($side)"
    if [ "$side" = "$lead" ]; then wall_samples "$rd/$side/summary-wall.json" "$r" 1 "$side"
    else wall_samples "$rd/$side/summary-wall.json" "$r" 2 "$side"; fi
  done
}

# wall_stats: samples.tsv -> wall-table.tsv (rows slower first, then faster, then the others; by
# name within each).
wall_stats() {
  awk -F'\t' -v margin="$wall_margin" '
    function sort(v, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    }
    function pct(x) { return (exp(x) - 1) * 100 }
    function lower(cur, x) { return cur == "" || x + 0 < cur + 0 ? x + 0 : cur }
    {
      k = $4 SUBSEP $1 SUBSEP $3; ref[$4] = $7
      mc[k] = lower(mc[k], $5); mr[k] = lower(mr[k], $6)
      rows[$4] = 1; rounds[$1] = 1
    }
    END {
      for (row in rows) {
        n = 0; la = 0; lb = 0
        for (r in rounds) {
          ka = row SUBSEP r SUBSEP "a"; kb = row SUBSEP r SUBSEP "b"
          if (!(ka in mc) || !(kb in mc)) continue
          # log of (case / reference) times, B against A: + = B slower
          d[++n] = log(mc[kb] / mr[kb]) - log(mc[ka] / mr[ka])
          la += log(mr[ka] / mc[ka]); lb += log(mr[kb] / mc[kb])
        }
        if (n == 0) continue
        sort(d, n)
        m = n % 2 ? d[(n + 1) / 2] : (d[n / 2] + d[n / 2 + 1]) / 2
        # The distribution-free interval of the median: [d(k), d(n+1-k)] with the largest k whose
        # tail P(Binomial(n, 1/2) < k) stays within 2.5% (k = 1 below 6 rounds: then wider odds).
        k = 1; c = 0; p = 0.5 ^ n; tail = p
        while (1) {
          p = p * (n - c) / (c + 1); c++
          if (tail + p > 0.025 || k + 1 > n + 1 - (k + 1)) break
          tail += p; k++
        }
        lo = d[k]; hi = d[n + 1 - k]
        v = pct(lo) > margin ? "slower" : pct(hi) < -margin ? "faster" : "no measurable change"
        o = v == "slower" ? 0 : v == "faster" ? 1 : 2
        printf "%d\t%s\t%d\t%.3f\t%.3f\t%.3f\t%s\t%.4f\t%.4f\t%s\t%.1f\n", o, row, n, pct(m), pct(lo), pct(hi), v,
               exp(la / n), exp(lb / n), ref[row], 100 * (1 - 2 * tail)
        delete d
      }
    }' "$out/samples.tsv" | LC_ALL=C sort -t"$(printf '\t')" -k1,1n -k2,2 | cut -f2- >"$out/wall-table.body"
  {
    echo "# $wall_nrounds rounds (one run a side, A and B in turns), cases matching '$wall_filter_re'; verdict margin ±$wall_margin%"
    echo "# context of every run: $wall_ctx"
    cat "$out/wall-table.body"
  } >"$out/wall-table.tsv"
  rm -f "$out/wall-table.body"
}

wall_main() {
  local t_start r lead
  t_start=$(date +%s)
  out=$(cd "$out" && pwd)   # the runs work in their own folders
  in_git=0
  git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 && in_git=1
  wall_dirty=
  [ "$in_git" -eq 1 ] && ! git -C "$root" diff --quiet HEAD -- 2>/dev/null && wall_dirty=" (uncommitted changes included)"
  # The harness (bench/gate/) and, unless --own-bench, the cases come from the work tree.
  snapshot_worktree "$tmp/new"
  wall_side a "$wall_a" "${wall_cmake_a[@]}"
  wall_side b "$wall_b" "${wall_cmake_b[@]}"
  wsay "A: $wall_label_a"
  wsay "B: $wall_label_b"
  : >"$out/samples.tsv"
  wall_ctx=
  wall_nrounds=$wall_rounds
  for ((r = 1; r <= wall_rounds; r++)); do
    if [ $((r % 2)) -eq 1 ]; then lead=a; else lead=b; fi
    wall_round "$r" "$lead"
    wsay "round $r/$wall_rounds (A and B in turns, $(echo "$lead" | tr 'ab' 'AB') first) done, $(($(date +%s) - t_start)) s"
  done
  wall_stats
  {
    echo "# B against A, wall clock: change of time per call, each side ÷ the same run's memcpy/memset"
    echo "# A: $wall_label_a"
    echo "# B: $wall_label_b"
    sed -n 's/^# /# /p' "$out/wall-table.tsv"
    printf '%-44s %6s %9s %21s  %-22s %8s %8s\n' "row" "rounds" "change" "interval" "verdict" "A÷ref" "B÷ref"
    awk -F'\t' '!/^#/ { printf "%-44s %6d %+8.2f%% [%+8.2f%%, %+8.2f%%]  %-22s %8.3f %8.3f\n", $1, $2, $3, $4, $5, $6, $7, $8 }' \
      "$out/wall-table.tsv"
  } | tee "$out/table.txt"
  local md
  md=$(report_wall "$out/wall-table.tsv" "$out" "$wall_label_a" "$wall_label_b" "$wall_margin")
  local nslow nfast
  nslow=$(awk -F'\t' '!/^#/ && $6 == "slower"' "$out/wall-table.tsv" | wc -l)
  nfast=$(awk -F'\t' '!/^#/ && $6 == "faster"' "$out/wall-table.tsv" | wc -l)
  echo
  wsay "$nslow row(s) slower, $nfast faster, the others no measurable change ($(($(date +%s) - t_start)) s;" \
       "report $md${report_no_plots:+ - no chart: $report_no_plots})"
  echo "Wall clock on a shared machine: a report, not a gate (tools/bench_gate.sh without --wall is the gate)."
  [ "$nslow" -eq 0 ]
}
