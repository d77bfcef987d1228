#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/test.sh - build and run every test suite: the release build (every backend against the
# scalar reference, goldens, packaging checks), AddressSanitizer + UndefinedBehaviorSanitizer,
# ThreadSanitizer (the concurrency tests) and the portable scalar-only build. Ends with the
# test runner's summary of each. Usage: tools/test.sh [preset...]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/deps.sh
. tools/deps.sh
vidmm_deps

presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(release asan-ubsan tsan scalar-only)
jobs=$(nproc 2>/dev/null || echo 2)
extra=()
# Warnings are errors in CI only, so a newer compiler's new warning does not stop a user.
[ "${CI:-}" = "true" ] && extra+=(-DVIDMM_WERROR=ON)

declare -A summary
status=0
for p in "${presets[@]}"; do
  echo "=== vidmm: $p: configure and build"
  cmake --preset "$p" "${extra[@]}" >/dev/null
  # The build's own status decides, not the filter's: PIPESTATUS is read before anything else
  # runs (an '|| true' after the pipe would replace it with true's).
  set +e
  cmake --build --preset "$p" -j"$jobs" 2>&1 | grep -Ev '^\[ *[0-9]+%\]|^-- '
  build_status=${PIPESTATUS[0]}
  set -e
  [ "$build_status" -eq 0 ] || { echo "vidmm: $p: build failed" >&2; exit 1; }
  echo "=== vidmm: $p: tests"
  log="build/$p/ctest.log"
  if ctest --preset "$p" -j"$jobs" 2>&1 | tee "$log"; then :; else status=1; fi
  summary[$p]=$(grep -E 'tests passed|tests failed' "$log" | tail -n 1)
  skipped=$(grep -c '\*\*\*Skipped' "$log" || true)
  [ "$skipped" -gt 0 ] && summary[$p]+=" ($skipped skipped: see 'Skipped' above)"
done

echo
echo "=== vidmm test summary"
for p in "${presets[@]}"; do
  printf '%-12s %s\n' "$p" "${summary[$p]:-no result}"
done
exit $status
