#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/test.sh - build and run every test suite: the release build (gcc: every backend against
# the scalar reference, goldens, packaging checks, benchmark smoke tests), AddressSanitizer +
# UndefinedBehaviorSanitizer built with clang (the project's clang build: everything, the
# benchmarks and the libFuzzer targets too, warnings errors in CI), ThreadSanitizer (the
# concurrency tests), the portable scalar-only build (its kernel, swizzle, dispatch and corpus
# replay suites - CMakePresets.json's test preset leaves out the engine's: an x86 build with
# scalar kernels is what the valgrind mode runs them on, VIDMM_BACKEND=scalar, and the generic
# build runs them on scalar kernels too) and the generic one (lib/arch/generic: no CPU
# detection, no SIMD, no flush instruction), each through its CMake preset and CTest; then two
# modes of their own:
#   valgrind  the engine's test programs under valgrind memcheck with the scalar backend, and the
#             kernel suites and corpus replays with the SSE2 and AVX2 backends, every test process
#             traced, as many programs at a time as there are CPUs (VIDMM_VALGRIND_JOBS); any
#             memcheck error or definite leak fails;
#   fuzz      every libFuzzer target (the asan-ubsan build's) for VIDMM_FUZZ_SECONDS (60) each, as
#             many at once as there are CPUs, seeded with its corpus tests/fuzz/corpus/<name>/
#             (new inputs go to a temporary directory, crash inputs to build/asan-ubsan/fuzz/artifacts/);
#             any crash fails.
# Ends with a summary line for each, with its wall and CPU time. Usage:
# tools/test.sh [preset-or-mode...]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/deps.sh
. tools/deps.sh

presets=("$@")
# One build per configuration, shared by its consumers (issue 29): the clang build is the
# sanitizers' and the fuzzers' (a release build with clang, preset 'clang', stays for users).
# Until 2026-12-07 CI built gcc ASan, clang release and clang libFuzzer apart: 1,020 s of its
# 3,320 s of CPU; the one clang ASan build of all three took 390 s here.
[ ${#presets[@]} -gt 0 ] || presets=(release asan-ubsan tsan scalar-only generic valgrind fuzz)
mode_pkgs=()
for p in "${presets[@]}"; do
  case $p in
    clang) mode_pkgs+=("${VIDMM_DEB_PACKAGES_CLANG[@]}") ;;
    valgrind) mode_pkgs+=("${VIDMM_DEB_PACKAGES_VALGRIND[@]}") ;;
    asan-ubsan | fuzz) mode_pkgs+=("${VIDMM_DEB_PACKAGES_FUZZ[@]}") ;;
  esac
done
vidmm_deps "${mode_pkgs[@]}"

jobs=$(nproc 2>/dev/null || echo 2)
extra=()
# Warnings are errors in CI only, so a newer compiler's new warning does not stop a user.
[ "${CI:-}" = "true" ] && extra+=(-DVIDMM_WERROR=ON)
# ccache in front of the compilers (VIDMM_CCACHE=0: not; tools/deps.sh). A preset's build gains
# little from it on a fresh machine (each preset has flags of its own), a rebuild much.
mapfile -t launcher < <(vidmm_ccache_args)
extra+=("${launcher[@]}")

declare -A summary t_build t_run
status=0

# Wall time of each preset or mode: t_build (configure and build) and t_run (its tests), in
# seconds, shown in the summary so that a slow stage is seen at once; with the CPU time its
# processes took (user + system), which a machine shared with other work changes less.
now() { date +%s; }
times_file=$(mktemp "${TMPDIR:-/tmp}/vidmm-times.XXXXXX")
trap 'rm -f "$times_file"' EXIT
# mark: m_wall, the clock, and m_cpu, the CPU seconds of this shell's finished children (bash's
# 'times', which must run in this shell, not in a subshell).
mark() {
  times >"$times_file"
  m_wall=$(date +%s)
  m_cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' \
          "$times_file")
}
# span <variable> <wall> <cpu>: sets the variable to "N s (M s CPU)", from the marks given to now.
span() {
  mark
  printf -v "$1" '%s s (%s s CPU)' "$((m_wall - $2))" "$((m_cpu - $3))"
}
mark
t_all=$m_wall
c_all=$m_cpu

# configure <preset>
configure() {
  echo "=== vidmm: $1: configure and build"
  cmake --preset "$1" "${extra[@]}" >/dev/null
}

# build <preset> [target...]: the whole tree, or the targets named. The build's own status
# decides, not the filter's: PIPESTATUS is read before anything else runs (an '|| true' after
# the pipe would replace it with true's). A failed build stops the command.
build() {
  local p=$1 st
  shift
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  set +e
  cmake --build --preset "$p" -j"$jobs" "${targets[@]}" 2>&1 | grep -Ev '^\[ *[0-9]+%\]|^-- '
  st=${PIPESTATUS[0]}
  set -e
  [ "$st" -eq 0 ] || { echo "vidmm: $p: build failed" >&2; exit 1; }
}

# targets_matching <build dir> <extended regex>: the build's targets whose names match, sorted
# (the Makefile generator's 'help' lists them as '... name').
targets_matching() {
  cmake --build "$1" --target help | sed -n 's/^\.\.\. \([A-Za-z0-9_.-]*\).*$/\1/p' | grep -E "$2" | sort -u || true
}

# The corpus directory of a fuzz target or of its replay program: fuzz_<name>[_replay] ->
# tests/fuzz/corpus/<name>.
corpus_of() {
  local n=${1#fuzz_}
  echo "tests/fuzz/corpus/${n%_replay}"
}

# ---------------------------------------------------------------------------------------------
# CTest presets
# ---------------------------------------------------------------------------------------------
run_ctest_preset() {
  local p=$1 log skipped golden why t0 c0
  mark; t0=$m_wall; c0=$m_cpu
  configure "$p"
  build "$p"
  span "t_build[$p]" "$t0" "$c0"
  mark; t0=$m_wall; c0=$m_cpu
  echo "=== vidmm: $p: tests"
  log="build/$p/ctest.log"
  if ctest --preset "$p" -j"$jobs" 2>&1 | tee "$log"; then :; else status=1; fi
  span "t_run[$p]" "$t0" "$c0"
  summary[$p]=$(grep -E 'tests passed|tests failed' "$log" | tail -n 1)
  skipped=$(grep -c '\*\*\*Skipped' "$log" || true)
  [ "$skipped" -gt 0 ] && summary[$p]+=" ($skipped skipped: see 'Skipped' above)"
  # The golden tests skip where the golden vectors are absent (a clone without the project's
  # shared directory): the summary names that and where they were looked for (the tests' own
  # skip message, in CTest's log of their output), so a run without them never reads as a pass.
  # A golden test also skips for a backend the build or the CPU lacks (test_golden.avx2 in the
  # scalar-only build): only the vectors' own absence, as the tests say it, is named here.
  golden=$(grep -E '\*\*\*Skipped' "$log" | grep -c ' test_golden' || true)
  if [ "$golden" -gt 0 ]; then
    why=$(grep -ho 'golden vectors unavailable: [^"]*' "build/$p/Testing/Temporary/LastTest.log" 2>/dev/null |
          head -n 1 || true)
    [ -z "$why" ] || summary[$p]+="; golden tests skipped, $why (README: golden vectors)"
  fi
  return 0
}

# ---------------------------------------------------------------------------------------------
# valgrind: the engine's suites (conformance, defects, model, disk tier and its I/O layer, range
# sets, memory tiers) and the engine fuzz corpus replay, built with -g and internal assertions
# (preset 'valgrind'). Not test_os: it checks the OS layer's own mappings (a 64 GiB reservation
# among them), which valgrind replaces with its own. The preset builds the suites against the
# forking runner of tests/common/t_lite.h (VIDMM_TEST_LITE; tests/common/lite/criterion/
# criterion.h): each test is a fork() of the runner under memcheck, a fresh process memcheck
# checks to its exit, where Criterion re-executed the program for every test and so started
# memcheck afresh each time (issue 29: that start - the program, its 20 shared libraries and
# their debug information, the engine's first calls translated - was most of the mode's 13-14
# minutes here: test_conf_lock's 54 tests took 108 s, 4 s of CPU a test). --trace-children
# stays, for a test that executes a program. Each process writes its own log, and the mode
# fails on a failed test or on any log whose ERROR SUMMARY is not 0 (memcheck errors, and
# definite leaks through --errors-for-leak-kinds). VIDMM_BACKEND=scalar: valgrind
# 3.19 has no AVX-512, and the scalar kernels are the reference. Under valgrind the library
# falls back by itself to a smaller address-space reservation and to the thread-pool disk I/O
# (a thread in io_uring_enter() stops every other one there), each with a logged warning.
# VIDMM_VALGRIND_PROGRAMS (an extended regex of target names) runs others instead. Programs run
# side by side, the longest first (vg_weight), each with its tests in parallel as under CTest.
#
# The SIMD backends under memcheck too (issue 29): for each of VIDMM_VALGRIND_BACKENDS (sse2
# avx2 avx512; empty: none), the kernel suites' tests of that backend (test_copy's copy_<b>/*, test_fill's fill_<b>/*,
# test_reference's reference_<b>/*: every length, alignment and guard case, every layout against
# the reference model; 43, 30 and 26 s a backend here, two programs at once, load 6-8) and the engine corpus replay with the backend forced (the engine's paging
# copies, fills and swizzles through it), each run named <program>.<backend>; and the swizzle
# corpus replay (fuzz_swizzle_replay), which calls every backend the CPU has in one process. The
# scalar kernels are what every engine program runs. A backend valgrind's CPU lacks (avx512:
# valgrind 3.19 has none) is reported skipped, with the reason, never run as a pass.
# ---------------------------------------------------------------------------------------------
VG_PROGRAMS=${VIDMM_VALGRIND_PROGRAMS:-'^(test_conf_[a-z0-9_]+|test_defects[0-9]+|test_contract[0-9]+|test_model|test_swap|test_io|test_rangeset|test_tiers|test_narrow_locks|test_lock_dirty|fuzz_engine_replay|fuzz_swizzle_replay)$'}
VG_BACKENDS=${VIDMM_VALGRIND_BACKENDS-sse2 avx2 avx512}
# The programs run once per backend: kernel suites (their <name>_<backend> suites) and replays.
VG_BACKEND_PROGRAMS=(test_copy test_fill test_reference fuzz_engine_replay)
# The programs that raise the huge page pool when run as root (those linking engine/t_hugepool.c):
# each runs alone, after the others, as CTest runs them (RUN_SERIAL, tests/engine/os.cmake says
# why: any other program's devices take pages of the raised pool).
VG_ALONE='^(test_os|test_tiers|test_writewatch)$'
# Programs run at once, and tests at once within each (t_lite's -j, Criterion's spelling). A
# program's last tests, and a corpus replay (one process), leave a CPU idle: with two programs
# at once, the other fills it.
VG_PROGRAM_JOBS=${VIDMM_VALGRIND_JOBS:-$jobs}

# vg_weight <program>: how long it is expected to run, to start the longest first: its seconds in
# the last run here (build/valgrind/memcheck-times.txt), else the tests it has (Criterion's
# --list: "suite: N tests" lines), or for a corpus replay - one long process that replays every
# input - the inputs in its corpus (70 took 17-23 s here, the time of 10-15 tests).
vg_weight() {
  local t=$1 last p=${1%.*} suite='[^:]*'
  last=$(awk -v t="$t" '$1 == t { print $2 }' build/valgrind/memcheck-times.txt 2>/dev/null)
  # A run <program>.<backend> of a kernel suite: the tests of its <suite>_<backend> suite.
  [[ $t == *.* ]] && suite="${p#test_}_${t##*.}"
  if [ -n "$last" ]; then
    echo "$last"
  elif [[ $p == fuzz_*_replay ]]; then
    find "$(corpus_of "$p")" -type f 2>/dev/null | wc -l
  else
    "build/valgrind/tests/$p" --list 2>/dev/null | sed -n "s/^$suite: \([0-9][0-9]*\) tests\{0,1\}\$/\1/p" |
      awk '{ s += $1 } END { print s + 0 }'
  fi
}

# A pool of background jobs, for the modes whose programs run side by side. pool_start <name>
# <command...> starts the command (a function, typically) in the background; pool_wait <report>
# waits for any one of them and calls '<report> <name> <exit status> <seconds>', in this shell.
declare -A pool_name pool_t0
pool_n=0
pool_start() {
  local name=$1
  shift
  "$@" &
  pool_name[$!]=$name
  pool_t0[$!]=$(now)
  pool_n=$((pool_n + 1))
}
pool_wait() {
  local pid= rc=0
  wait -n -p pid || rc=$?
  [ -n "$pid" ] && [ -n "${pool_name[$pid]:-}" ] || { echo "vidmm: lost track of a background job" >&2; exit 2; }
  pool_n=$((pool_n - 1))
  "$1" "${pool_name[$pid]}" "$rc" "$(($(now) - pool_t0[$pid]))"
  unset "pool_name[$pid]" "pool_t0[$pid]"
}

# vg_run <run>: the program under memcheck, every test process traced, each writing its own
# log. Its exit status is the mode's verdict on the program, with the logs' ERROR SUMMARY lines.
# A run <program>.<backend> forces that backend (a replay) or runs that backend's suite (a kernel
# suite); a plain <program> runs with the scalar backend.
vg_run() {
  local t=$1 p=${1%.*} be=scalar args=(--short-filename -j"$jobs")
  if [[ $t == *.* ]]; then
    be=${t##*.}
    args+=("--filter=${p#test_}_$be/*")
  fi
  [[ $p == fuzz_*_replay ]] && args=("$(corpus_of "$p")")
  # No per-test time limit but a test's own .timeout, as under Criterion (t_lite's default of
  # 60 s is for the TSan build); the 30 minutes of 'timeout' bound the program.
  VIDMM_TEST_LITE_TIMEOUT=0 VIDMM_BACKEND=$be exec timeout -k 30 1800 \
    valgrind --tool=memcheck --trace-children=yes --error-exitcode=99 --num-callers=32 \
    --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --vgdb=no \
    --log-file="$logs/$t.%p.log" "build/valgrind/tests/$p" "${args[@]}" >"$logs/$t.out" 2>&1
}

# vg_report <program> <exit status> <seconds>: its line; for a failed program, the end of its
# output and the logs of the processes with errors. Counts into n_prog, n_fail and n_err
# (run_valgrind's).
vg_report() {
  local t=$1 rc=$2 secs=$3 bad errs f
  n_prog=$((n_prog + 1))
  echo "$t $secs" >>"$logs/times.txt"
  # Every process's log ends with its ERROR SUMMARY; one that is not 0 names the culprit. (A
  # process killed before its end writes none: a test worker's death fails its test anyway.)
  bad=$(grep -l -E 'ERROR SUMMARY: [1-9]' "$logs/$t".*.log 2>/dev/null || true)
  errs=$(cat "$logs/$t".*.log 2>/dev/null | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' |
         awk '{ s += $1 } END { print s + 0 }')
  printf '%-24s %4d s exit %-3d memcheck errors %-4s %s\n' "$t" "$secs" "$rc" "$errs" \
    "$(grep -h -E 'Synthesis|Skipped:' "$logs/$t.out" | sed -e 's/^\[====\] //' -e 's/ (run with.*//' | tac | paste -sd ' ')"
  if [ "$rc" -ne 0 ] || [ -n "$bad" ]; then
    n_fail=$((n_fail + 1))
    n_err=$((n_err + errs))
    echo "--- $t: output" >&2
    tail -n 60 "$logs/$t.out" >&2
    for f in $bad; do
      echo "--- $f" >&2
      head -n 150 "$f" >&2
    done
  fi
}

run_valgrind() {
  local dir=build/valgrind t n_prog=0 n_err=0 n_fail=0 t0 c0
  mark; t0=$m_wall; c0=$m_cpu
  configure valgrind
  local progs=()
  mapfile -t progs < <(targets_matching "$dir" "$VG_PROGRAMS")
  if [ ${#progs[@]} -eq 0 ]; then
    echo "vidmm: valgrind: no engine test program in $dir" >&2
    status=1
    summary[valgrind]="no program to run"
    return 0
  fi
  local be_progs=() be_runs=() be_ran=() be_skipped=() b p
  [ -z "$VG_BACKENDS" ] || mapfile -t be_progs < <(targets_matching "$dir" "^($(IFS='|'; echo "${VG_BACKEND_PROGRAMS[*]}"))\$")
  build valgrind $(printf '%s\n' "${progs[@]}" "${be_progs[@]}" | sort -u)
  span "t_build[valgrind]" "$t0" "$c0"
  mark; t0=$m_wall; c0=$m_cpu
  # Each backend asked for, where valgrind's CPU has it: the replay exits 77 for a backend it
  # cannot run (tests/fuzz/fuzz_replay.c) before it reads any input.
  for b in $VG_BACKENDS; do
    if [ ! -x "$dir/tests/fuzz_engine_replay" ]; then
      be_skipped+=("$b (no fuzz_engine_replay to probe it with)")
    elif VIDMM_BACKEND=$b valgrind --tool=none --log-file=/dev/null "$dir/tests/fuzz_engine_replay" /dev/null \
         >/dev/null 2>&1; [ $? -eq 77 ]; then
      be_skipped+=("$b (not on valgrind's CPU or this one)")
    else
      be_ran+=("$b")
      for p in "${be_progs[@]}"; do be_runs+=("$p.$b"); done
    fi
  done
  echo "=== vidmm: valgrind: memcheck, $VG_PROGRAM_JOBS programs at once: scalar backend: ${progs[*]}"
  [ -z "$VG_BACKENDS" ] || echo "=== vidmm: valgrind: backends $VG_BACKENDS: ${be_runs[*]:-none}${be_skipped:+; skipped: ${be_skipped[*]}}"
  logs=$dir/memcheck
  rm -rf "$logs"
  mkdir -p "$logs"
  local queue=() alone=()
  for t in "${progs[@]}" "${be_runs[@]}"; do
    if [[ ${t%.*} == fuzz_*_replay ]] && [ -z "$(find "$(corpus_of "${t%.*}")" -type f 2>/dev/null | head -n 1)" ]; then
      echo "$t: no corpus in $(corpus_of "${t%.*}"): nothing to replay (its CTest replay fails for that)"
      continue
    fi
    if [[ $t =~ $VG_ALONE ]]; then alone+=("$t"); else queue+=("$t"); fi
  done
  mapfile -t queue < <(for t in "${queue[@]}"; do echo "$(vg_weight "$t") $t"; done | sort -k1,1nr -k2,2 | cut -d' ' -f2)
  for t in "${queue[@]}"; do
    [ "$pool_n" -lt "$VG_PROGRAM_JOBS" ] || pool_wait vg_report
    pool_start "$t" vg_run "$t"
  done
  while [ "$pool_n" -gt 0 ]; do pool_wait vg_report; done
  for t in "${alone[@]}"; do
    pool_start "$t" vg_run "$t"
    pool_wait vg_report
  done
  cp "$logs/times.txt" "$dir/memcheck-times.txt" 2>/dev/null || true
  summary[valgrind]="$((n_prog - n_fail)) of $n_prog programs clean"
  [ "$n_fail" -eq 0 ] || { summary[valgrind]+=" ($n_err memcheck errors; logs in $logs)"; status=1; }
  [ -z "$VG_BACKENDS" ] || summary[valgrind]+=" (scalar; ${#be_runs[@]} of them with ${be_ran[*]:-no other backend}${be_skipped:+; skipped: ${be_skipped[*]}})"
  span "t_run[valgrind]" "$t0" "$c0"
  return 0
}

# ---------------------------------------------------------------------------------------------
# fuzz: every libFuzzer binary of the asan-ubsan preset (clang, VIDMM_FUZZ=ON: the library
# instrumented for coverage) - the list tests/CMakeLists.txt writes to
# build/asan-ubsan/fuzzers.txt, so a tests/fuzz/fuzz_<name>.c registered with vidmm_add_fuzz_target()
# is picked up as it is - for VIDMM_FUZZ_SECONDS each. The repository's corpus is read, never written: new
# inputs go to a temporary directory deleted afterwards. A crash, a leak, a sanitizer report, an
# input running longer than 60 s or an out-of-memory fails the mode; the reproducer is kept in
# build/asan-ubsan/fuzz/artifacts/ and named in the output. After the asan-ubsan preset (the
# default order) its build is there and this mode only runs; alone it configures and builds it.
# ---------------------------------------------------------------------------------------------
# fz_run <target>: the libFuzzer binary for $secs from its corpus, new inputs in $work/<target>.
fz_run() {
  local t=$1 corpus seeds=()
  corpus=$(corpus_of "$t")
  [ -d "$corpus" ] && seeds=("$corpus")
  ASAN_SYMBOLIZER_PATH=$sym UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    exec timeout -k 30 $((secs + 600)) "$fz_dir/tests/$t" -max_total_time="$secs" -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$fz_out/artifacts/$t-" "$work/$t" "${seeds[@]}" >"$fz_out/$t.log" 2>&1
}

# fz_report <target> <exit status> <seconds>: its line; for a failure the end of its log and the
# reproducer. Counts into n_fail (run_fuzz's).
fz_report() {
  local t=$1 rc=$2 log=$fz_out/$1.log execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  printf '%-24s exit %-3d %s executions in %s s, %s new inputs\n' "$t" "$rc" "${execs:-?}" "$secs" \
    "$(find "$work/$t" -type f | wc -l)"
  summary[fuzz]+="${summary[fuzz]:+, }$t ${execs:-?} execs"
  if [ "$rc" -ne 0 ]; then
    n_fail=$((n_fail + 1))
    echo "--- $t: exit $rc; the end of $log:" >&2
    tail -n 80 "$log" >&2
    find "$fz_out/artifacts" -name "$t-*" -printf 'reproducer: %p\n' >&2 || true
    summary[fuzz]+=" (FAILED)"
  fi
}

run_fuzz() {
  local dir=build/asan-ubsan t corpus n_fail=0 t0 c0
  secs=${VIDMM_FUZZ_SECONDS:-60}
  mark; t0=$m_wall; c0=$m_cpu
  [[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "vidmm: VIDMM_FUZZ_SECONDS=$secs: not a number of seconds" >&2; exit 2; }
  fz_dir=$dir
  fz_out=$dir/fuzz
  rm -f "$dir/fuzzers.txt"
  echo "=== vidmm: fuzz: the asan-ubsan build's libFuzzer targets"
  configure asan-ubsan
  local targets=()
  [ -f "$dir/fuzzers.txt" ] && mapfile -t targets < <(grep -E '^[A-Za-z0-9_]+$' "$dir/fuzzers.txt" | sort -u)
  if [ ${#targets[@]} -eq 0 ]; then
    echo "vidmm: fuzz: no libFuzzer target in $dir" >&2
    status=1
    summary[fuzz]="no target"
    return 0
  fi
  build asan-ubsan "${targets[@]}"
  span "t_build[fuzz]" "$t0" "$c0"
  mark; t0=$m_wall; c0=$m_cpu
  mkdir -p "$fz_out/artifacts"
  work=$(mktemp -d "${TMPDIR:-/tmp}/vidmm-fuzz.XXXXXX")
  sym=/usr/lib/llvm-14/bin/llvm-symbolizer
  [ -x "$sym" ] || sym=$(command -v llvm-symbolizer || true)
  summary[fuzz]=""
  # The fuzzers are single-threaded: as many run at once as there are CPUs, each for its full time.
  for t in "${targets[@]}"; do
    corpus=$(corpus_of "$t")
    [ -d "$corpus" ] || echo "vidmm: fuzz: $t has no corpus ($corpus)" >&2
    mkdir -p "$work/$t"
    rm -f "$fz_out/artifacts/$t-"*
    [ "$pool_n" -lt "$jobs" ] || pool_wait fz_report
    echo "=== vidmm: fuzz: $t for $secs s (corpus $corpus)"
    pool_start "$t" fz_run "$t"
  done
  while [ "$pool_n" -gt 0 ]; do pool_wait fz_report; done
  rm -rf "$work"
  [ "$n_fail" -eq 0 ] || status=1
  span "t_run[fuzz]" "$t0" "$c0"
  return 0
}

for p in "${presets[@]}"; do
  case $p in
    valgrind) run_valgrind ;;
    fuzz) run_fuzz ;;
    *) run_ctest_preset "$p" ;;
  esac
done

echo
echo "=== vidmm test summary (wall time: configure + build, then tests)"
for p in "${presets[@]}"; do
  printf '%-12s %s' "$p" "${summary[$p]:-no result}"
  [ -z "${t_build[$p]:-}" ] || printf ' [build %s, tests %s]' "${t_build[$p]}" "${t_run[$p]:-?}"
  echo
done
span total "$t_all" "$c_all"
printf '%-12s %s (load average now: %s)\n' total "$total" "$(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
