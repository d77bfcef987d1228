#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/bench_report.sh - pictures and summaries of the wall-clock benchmarks: sourced by
# tools/bench.sh (--plots: throughput against size per backend, with the memcpy/memset and
# hardware-ceiling lines) and by tools/bench_gate.sh --wall (the A/B comparison as a chart); run
# alone it draws the plots of one summary:
#
#   tools/bench_report.sh SUMMARY.json OUTDIR      writes OUTDIR/report.md and OUTDIR/*.svg
#
# The plots are SVG drawn by gnuplot. Why gnuplot: one Debian package (gnuplot-nox: no X, its
# SVG terminal is built in) that reads the whitespace-separated tables awk already writes, with
# nothing to import and no Python stack to keep in step with Debian (matplotlib pulls in numpy and
# a font and Tk stack); SVG because it is text, small, and shows at any zoom in a browser or a
# forge's Markdown view. gnuplot is installed through tools/deps.sh like every other package, and
# never assumed: without it (not root, no network) the Markdown summary is still written, and says
# the pictures are missing and why.
#
# Every function here reads the summary JSON that bench/b_report.c writes (schema
# vidmm-bench-summary/1: one case per line), so awk is enough to read it.

# report_deps: makes sure gnuplot is there (tools/deps.sh); returns 1, with the reason in
# $report_no_plots, when it cannot be.
report_deps() {
  report_no_plots=
  if command -v gnuplot >/dev/null 2>&1; then
    return 0
  fi
  # shellcheck source=tools/deps.sh
  [ "$(type -t vidmm_deps)" = function ] || . "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
  if ! vidmm_deps "${VIDMM_DEB_PACKAGES_PLOT[@]}" 2>"${TMPDIR:-/tmp}/vidmm-report-deps.$$"; then
    report_no_plots="gnuplot is not installed ($(tail -n 1 "${TMPDIR:-/tmp}/vidmm-report-deps.$$" | sed 's/^ *//'))"
    rm -f "${TMPDIR:-/tmp}/vidmm-report-deps.$$"
    return 1
  fi
  rm -f "${TMPDIR:-/tmp}/vidmm-report-deps.$$"
  command -v gnuplot >/dev/null 2>&1 || { report_no_plots="gnuplot not found after installing"; return 1; }
}

# summary_cases SUMMARY: one tab-separated line per case that ran:
# name path variant backend bytes gbps baseline ceiling ratio(to baseline) ratio_ceiling
summary_cases() {
  awk '
    function field(k,   m) {
      if (!match($0, "\"" k "\": (\"[^\"]*\"|[^,}]*)")) return ""
      m = substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 4)
      gsub(/"/, "", m)
      return m == "null" ? "" : m
    }
    /^    \{"name": / {
      if (field("status") != "ok") next
      r = field("ratio_memcpy"); if (r == "") r = field("ratio_memset")
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", field("name"), field("path"), field("variant"),
             field("backend"), field("bytes"), field("gbps"), field("baseline"), field("ceiling"), r,
             field("ratio_ceiling")
    }' "$1"
}

# summary_context SUMMARY KEY: the value of a string or number of the summary's context.
summary_context() {
  awk -v k="$2" '
    /^  "context": \{/ { in_ctx = 1; next }
    in_ctx && /^  \}/ { exit }
    in_ctx && index($0, "    \"" k "\": ") == 1 {
      v = substr($0, length(k) + 9); sub(/,$/, "", v); gsub(/^"|"$/, "", v); print v; exit
    }' "$1"
}

# size_label BYTES
size_label() {
  awk -v b="$1" 'BEGIN {
    if (b >= 1048576 && b % 1048576 == 0) printf "%d MiB", b / 1048576
    else if (b >= 1024 && b % 1024 == 0) printf "%d KiB", b / 1024
    else printf "%d B", b }'
}

# report_throughput SUMMARY OUTDIR: for every path family measured at two sizes or more, a plot
# of GB/s against size, one line per variant and backend, with the family's same-run reference
# (memcpy or memset, dashed) and the hardware ceilings its cases name (bare loops of
# bench/bench_ceiling.c, dotted); then OUTDIR/report.md with the pictures and a table per family.
report_throughput() {
  local summary=$1 dir=$2 tsv fam plot=1 series s f title
  mkdir -p "$dir"
  tsv="$dir/cases.tsv"
  summary_cases "$summary" >"$tsv"
  report_deps || plot=0
  local md="$dir/report.md"
  {
    echo "# vidmm bench: throughput against size"
    echo
    echo "Run of $(summary_context "$summary" date), commit \`$(summary_context "$summary" commit)\`," \
         "mode $(summary_context "$summary" mode); CPU $(summary_context "$summary" cpu_model)," \
         "active backend $(summary_context "$summary" backend). Figures are each case's best repetition;" \
         "dashed: the C library's memcpy/memset of the same bytes in the same run, dotted: the bare" \
         "hardware loops (bench/bench_ceiling.c). Wall-clock figures of a shared machine: ratios" \
         "of the same run compare, absolute GB/s drift."
    echo
    [ "$plot" -eq 1 ] || echo "_No pictures: ${report_no_plots}._" && echo
  } >"$md"
  # Families with cases at two sizes or more (the swizzle families are measured at 4 and 64 MiB);
  # family names are single words.
  # shellcheck disable=SC2013
  for fam in $(awk -F'\t' '$2 != "baseline" && $2 != "ceiling" { s[$2 "\t" $5] = 1 }
                          END { for (k in s) { split(k, p, "\t"); n[p[1]]++ }
                                for (f in n) if (n[f] >= 2) print f }' "$tsv" | sort); do
    rm -rf "$dir/data-$fam"
    mkdir -p "$dir/data-$fam"
    # One data file per series: the family's variant/backend lines, its references, its ceilings
    # (named with @ for /).
    awk -F'\t' -v fam="$fam" -v d="$dir/data-$fam" '
      $2 == fam { k = $3 "@" $4; print $5, $6 >> (d "/" k ".case"); ref[$7] = 1
                  c = $8; if (c != "") { sub(/\/[0-9]+$/, "", c); ceil[c] = 1 } }
      { all[$1] = $5 " " $6 }
      END {
        for (n in all) {
          b = n; sub(/\/[0-9]+$/, "", b)
          for (r in ref) { rb = r; sub(/\/[0-9]+$/, "", rb); if (rb == b) { x = b; gsub("/", "@", x); print all[n] >> (d "/" x ".ref") } }
          for (c in ceil) if (c == b) { x = b; gsub("/", "@", x); print all[n] >> (d "/" x ".ceil") }
        }
      }' "$tsv"
    for f in "$dir/data-$fam"/*; do sort -n -o "$f" "$f"; done
    title="$fam: GB/s against size (best repetition)"
    if [ "$plot" -eq 1 ]; then
      series=()
      for s in "$dir/data-$fam"/*.case; do
        series+=("'$s' using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 title '$(basename "$s" .case | tr @ /)'")
      done
      for s in "$dir/data-$fam"/*.ref; do
        [ -e "$s" ] || continue
        series+=("'$s' using 1:2 with lines lw 2.5 dt 2 lc rgb 'black' title '$(basename "$s" .ref | tr @ /) (same run)'")
      done
      for s in "$dir/data-$fam"/*.ceil; do
        [ -e "$s" ] || continue
        series+=("'$s' using 1:2 with lines lw 2.5 dt 3 title '$(basename "$s" .ceil | tr @ /) (hardware ceiling)'")
      done
      local IFS=,
      # The script is kept beside the picture (rerun it with gnuplot to change the look).
      cat >"$dir/throughput-$fam.gp" <<EOF
set terminal svg size 900,540 dynamic noenhanced font 'sans,11'
set output '$dir/throughput-$fam.svg'
set title '$title'
set logscale x 2
set xlabel 'bytes per call'
set ylabel 'GB/s'
set yrange [0:*]
set grid
set key outside right top
set format x '%.0b%BB'
plot ${series[*]}
EOF
      unset IFS
      gnuplot "$dir/throughput-$fam.gp" 2>>"$dir/gnuplot.log" ||
        echo "bench_report.sh: gnuplot failed for $fam (see $dir/gnuplot.log)" >&2
    fi
    {
      echo "## $fam"
      echo
      [ "$plot" -eq 1 ] && echo "![$fam](throughput-$fam.svg)" && echo
      echo "| case | GB/s | x reference | x ceiling |"
      echo "|---|---:|---:|---:|"
      awk -F'\t' -v fam="$fam" '$2 == fam { printf "| `%s` | %.2f | %s | %s |\n", $1, $6,
             $9 == "" ? "-" : sprintf("%.3f", $9), $10 == "" ? "-" : sprintf("%.3f", $10) }' "$tsv" |
        sort -t'/' -k2,2 -k3,3 -k4,4n
      echo
    } >>"$md"
  done
  echo "$md"
}

# report_wall TABLE OUTDIR A_LABEL B_LABEL MARGIN: the chart of a --wall comparison (one bar per
# row: the median change of B against A with its confidence interval, coloured by verdict; the
# margin dashed) and OUTDIR/report.md. TABLE: tools/bench_gate.sh --wall's wall-table.tsv
# (row, rounds, change %, ci low %, ci high %, verdict, A ratio, B ratio, reference, the
# interval's coverage %).
report_wall() {
  local table=$1 dir=$2 la=$3 lb=$4 margin=$5 plot=1 md="$2/report.md" n
  report_deps || plot=0
  n=$(grep -vc '^#' "$table" || true)
  if [ "$plot" -eq 1 ] && [ "$n" -gt 0 ]; then
    # y: row index (first row on top); x: change in percent with the interval as an error bar.
    awk -F'\t' '!/^#/ { i++; c = $6 == "slower" ? 1 : $6 == "faster" ? 2 : 3
                        printf "%d\t%s\t%s\t%s\t%d\t\"%s\"\n", i, $3, $4, $5, c, $1 }' \
      "$table" >"$dir/wall-chart.dat"
    cat >"$dir/wall-change.gp" <<EOF
set terminal svg size 900,$((160 + 34 * n)) dynamic noenhanced font 'sans,11'
set output '$dir/wall-change.svg'
set title 'B against A: median change of time per call (÷ same-run memcpy/memset), interval of the median'
set xlabel 'change of B against A, % (positive: B slower)'
set yrange [$n + 0.7:0.3]
set ytics () nomirror
set grid x
set key off
set arrow from 0, graph 0 to 0, graph 1 nohead lc rgb 'black'
set arrow from $margin, graph 0 to $margin, graph 1 nohead dt 2 lc rgb 'gray40'
set arrow from -$margin, graph 0 to -$margin, graph 1 nohead dt 2 lc rgb 'gray40'
set palette defined (1 '#c0392b', 2 '#27ae60', 3 '#7f8c8d')
set cbrange [1:3]
unset colorbox
plot '$dir/wall-chart.dat' using 2:1:3:4:5:ytic(6) with xerrorbars pt 7 ps 1.2 lw 2 lc palette
EOF
    gnuplot "$dir/wall-change.gp" 2>>"$dir/gnuplot.log" ||
      echo "bench_report.sh: gnuplot failed for the comparison chart (see $dir/gnuplot.log)" >&2
  fi
  {
    echo "# vidmm wall-clock comparison"
    echo
    echo "A: $la  "
    echo "B: $lb"
    echo
    sed -n 's/^# //p' "$table"
    echo
    if [ "$plot" -eq 1 ] && [ -s "$dir/wall-change.svg" ]; then
      echo "![change of B against A](wall-change.svg)"
    else
      echo "_No chart: ${report_no_plots:-no rows}._"
    fi
    echo
    echo "| row | rounds | change | interval (coverage) | verdict | A ÷ ref | B ÷ ref | reference |"
    echo "|---|---:|---:|---|---|---:|---:|---|"
    awk -F'\t' '!/^#/ { printf "| `%s` | %d | %+.2f%% | [%+.2f%%, %+.2f%%] (%.1f%%) | %s | %.3f | %.3f | %s |\n",
                        $1, $2, $3, $4, $5, $10, $6, $7, $8, $9 }' "$table"
    echo
    echo "Change: the median over rounds of B's time per call against A's. In a round A's and B's runs"
    echo "take turns; each times every case in short bursts interleaved with its reference (memcpy or"
    echo "memset of the same bytes: bench/b_wall.c), and a side's figure is its fastest case burst over"
    echo "its fastest reference burst. Positive is slower. The interval is the"
    echo "distribution-free (sign-test) interval of that median over the rounds, its coverage in"
    echo "brackets (at least 95% from 6 rounds up). A verdict needs the whole interval beyond ±$margin%;"
    echo "otherwise: no measurable change."
  } >"$md"
  echo "$md"
}

# Run alone: the throughput report of one summary.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  if [ $# -ne 2 ]; then
    echo "usage: tools/bench_report.sh SUMMARY.json OUTDIR" >&2
    exit 2
  fi
  report_throughput "$1" "$2"
fi
