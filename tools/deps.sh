#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/deps.sh - make sure the Debian packages vidmm's build, tests and benchmarks need are
# installed. Sourced by tools/test.sh and tools/bench.sh. As root it installs what is missing
# with apt-get; otherwise it prints the exact apt-get line and fails.
VIDMM_DEB_PACKAGES=(cmake make gcc g++ pkg-config libcriterion-dev libbenchmark-dev liburing-dev
                    libhugetlbfs-dev git ca-certificates ccache)
# What single modes and presets of tools/test.sh need besides, installed only when they run:
# valgrind memcheck; the clang preset's compilers (clang 14: clang and clang++); libFuzzer (clang 14
# and its runtime libraries, which the clang package only recommends) with llvm-symbolizer, so a
# crash's stack names functions and lines.
# shellcheck disable=SC2034  # used by tools/test.sh, which sources this file
VIDMM_DEB_PACKAGES_VALGRIND=(valgrind)
# shellcheck disable=SC2034
VIDMM_DEB_PACKAGES_CLANG=(clang)
# shellcheck disable=SC2034
VIDMM_DEB_PACKAGES_FUZZ=(clang libclang-rt-14-dev llvm-14)
# The pictures of tools/bench.sh --plots and tools/bench_gate.sh --wall (tools/bench_report.sh says
# why gnuplot): the build without X, whose SVG terminal is built in.
# shellcheck disable=SC2034
VIDMM_DEB_PACKAGES_PLOT=(gnuplot-nox)

# vidmm_ccache_args: the CMake arguments that put ccache (one of the packages above) in front of
# the C and C++ compilers, one a line; with VIDMM_CCACHE=0, or where ccache is missing, empty
# launchers instead, so that a build directory configured with ccache before goes without it.
# tools/test.sh's presets and tools/bench_gate.sh's builds use it: the gate builds two revisions
# and its self-test the same tree three times, which share every unchanged object through the
# cache (ccache's own directory, ~/.cache/ccache unless CCACHE_DIR says otherwise).
vidmm_ccache_args() {
  local l=
  [ "${VIDMM_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1 && l=ccache
  printf '%s\n' "-DCMAKE_C_COMPILER_LAUNCHER=$l" "-DCMAKE_CXX_COMPILER_LAUNCHER=$l"
}

# vidmm_deps [package...]: the common packages and the ones named.
vidmm_deps() {
  local missing=() p
  for p in "${VIDMM_DEB_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local line="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "vidmm: missing Debian packages. Run as root:" >&2
    echo "  apt-get update && $line" >&2
    return 1
  fi
  echo "vidmm: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
    || { echo "vidmm: '$line' failed" >&2; return 1; }
}
