#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench_gate.sh - the benchmark regression gate: compares two summary JSON files written by
# tools/bench.sh and fails (exit 1) when a case's ratio to its same-run reference (memcpy,
# memset or the bare loop) fell by more than the tolerance, widened to the noise the two runs
# themselves showed (--fixed: the tolerance alone). Ratios, never absolute GB/s.
#
#   tools/bench_gate.sh [--tolerance=0.10] [--fixed] [--strict] [--verbose] [--only=REGEX] OLD NEW
#
# Gate on summaries of the same mode; --targets or --full runs (5 repetitions of 0.2-0.5 s) are
# steadier than quick ones, and a machine running other jobs moves ratios by 10-20% by itself.
#
# A thin wrapper: builds vidmm_bench_gate (bench/bench_gate.c) in the release tree when it is
# missing, then runs it with the same arguments. Exit status: 0 pass, 1 regression, 2 usage.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gate="$root/build/release/bench/vidmm_bench_gate"
if [ ! -x "$gate" ]; then
  # shellcheck source=tools/deps.sh
  . "$root/tools/deps.sh"
  vidmm_deps
  (cd "$root" && cmake --preset release >/dev/null && cmake --build --preset release --target vidmm_bench_gate) >&2
fi
exec "$gate" "$@"
