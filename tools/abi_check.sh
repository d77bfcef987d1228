#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/abi_check.sh - check the dynamic symbol table of libvidmm.so against lib/vidmm.map and
# the public headers: what a program can link to must be exactly what we publish, in a version
# node, under the right SONAME.
#
# usage: abi_check.sh --lib <libvidmm.so> --map <vidmm.map> [--soname <libvidmm.so.N>]
#                     [--headers <include/vidmm>] [--test-hooks]
#
# Checks, each reported on its own line; the exit status is 1 if any fails, 77 (CTest skip) when
# nm or readelf is missing, 2 on a bad command line:
#  - every exported (defined, dynamic) symbol starts with vidmm_, carries a version, that version
#    is a node of the map, and the node's global patterns cover the name: a symbol slipping out
#    unversioned or under a foreign node would silently become ABI;
#  - with --headers: every exported function is declared VIDMM_API in a public header, and every
#    VIDMM_API declaration is exported (a declared but missing symbol is a link error for users).
#    vidmm_test_* symbols are hooks of VIDMM_TEST_HOOKS builds: allowed only with --test-hooks;
#  - the SONAME is the expected one (libvidmm.so.<major>): it is what binaries record;
#  - no text relocations and no executable stack, which would make every process loading the
#    library pay (copy-on-write text) or weaken it (executable stack).
set -u

lib="" map="" soname="" headers="" test_hooks=0
while [ $# -gt 0 ]; do
  case "$1" in
    --lib) lib="$2"; shift 2 ;;
    --map) map="$2"; shift 2 ;;
    --soname) soname="$2"; shift 2 ;;
    --headers) headers="$2"; shift 2 ;;
    --test-hooks) test_hooks=1; shift ;;
    -h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "abi_check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [ -z "$lib" ] || [ -z "$map" ]; then
  echo "abi_check: --lib and --map are required" >&2
  exit 2
fi
for tool in nm readelf awk; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "abi_check: SKIP: '$tool' not found (Debian: binutils)" >&2
    exit 77
  fi
done
for f in "$lib" "$map"; do
  [ -r "$f" ] || { echo "abi_check: cannot read '$f'" >&2; exit 2; }
done

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }
# words LIST: a newline-separated list on one line, for messages.
words() { tr '\n' ' ' <<<"$1" | sed 's/ *$//'; }

# --- the map: "node <name>" and "<global|local> <node> <pattern>" lines ------------------------
# Comments (/* */ and #) are dropped, then the file is split into tokens around { } ; :.
map_rules=$(awk '
  { text = text $0 "\n" }
  END {
    gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
    gsub(/#[^\n]*/, " ", text)
    gsub(/[{};:]/, " & ", text)
    n = split(text, t, /[ \t\n]+/)
    depth = 0
    for (i = 1; i <= n; i++) {
      tok = t[i]
      if (tok == "") continue
      if (depth == 0) {
        if (t[i + 1] == "{") { node = tok; depth = 1; section = "global"; i++; print "node", node }
        continue            # the parent node name and ";" after "}"
      }
      if (tok == "}") { depth = 0; continue }
      if ((tok == "global" || tok == "local") && t[i + 1] == ":") { section = tok; i++; continue }
      if (tok == ";") continue
      print section, node, tok
    }
  }' "$map")
nodes=$(awk '$1 == "node" { print $2 }' <<<"$map_rules")
if [ -z "$nodes" ]; then
  fail "no version node found in $map"
else
  pass "map nodes: $(words "$nodes")"
fi

# node_covers NODE NAME: the node has a global pattern matching NAME (shell glob, as ld uses).
node_covers() {
  local node="$1" name="$2" sect n pat
  while read -r sect n pat; do
    if [ "$sect" != global ] || [ "$n" != "$node" ]; then continue; fi
    # shellcheck disable=SC2053 # the pattern is meant to be a glob
    [[ "$name" == $pat ]] && return 0
  done <<<"$map_rules"
  return 1
}

# --- exported symbols --------------------------------------------------------------------------
# --with-symbol-versions makes binutils before 2.35 print the @VERSION suffix too.
if ! nm_out=$(nm -D --defined-only --with-symbol-versions "$lib" 2>&1); then
  fail "nm -D $lib: $nm_out"
  nm_out=""
fi
exported=()   # the vidmm_ names that pass every check below
named=()      # every exported vidmm_ name, valid or not, for the header comparison
bad=0
while read -r _addr type sym; do
  [ -n "${sym:-}" ] || continue
  name="${sym%%@*}"
  version=""
  [[ "$sym" == *@* ]] && version="${sym##*@}"
  # The linker defines one absolute symbol per version node, named after it.
  if [ "$type" = A ] && grep -qxF "$name" <<<"$nodes"; then
    continue
  fi
  if [[ "$name" != vidmm_* ]]; then
    fail "exported symbol '$sym' ($type) does not start with vidmm_"; bad=1; continue
  fi
  named+=("$name")
  if [ -z "$version" ]; then
    fail "exported symbol '$name' has no version"; bad=1; continue
  fi
  if ! grep -qxF "$version" <<<"$nodes"; then
    fail "exported symbol '$name' has version '$version', which is not a node of the map"; bad=1; continue
  fi
  if ! node_covers "$version" "$name"; then
    fail "exported symbol '$name' is in node '$version' but no global pattern of that node names it"
    bad=1; continue
  fi
  exported+=("$name")
done <<<"$nm_out"
if [ ${#named[@]} -eq 0 ]; then
  fail "no vidmm_ symbol is exported by $lib"
elif [ $bad -eq 0 ]; then
  pass "${#exported[@]} exported symbols, all vidmm_* and versioned by the map"
fi

# --- public headers ------------------------------------------------------------------------------
if [ -n "$headers" ]; then
  # Every "VIDMM_API ... name(...);" declaration, comments and preprocessor lines removed and
  # lines joined first, so a declaration split over lines is still seen whole.
  declared=$(awk '
    { if ($0 ~ /^[ \t]*#/) next; text = text $0 " " }
    END {
      gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
      while (match(text, /VIDMM_API[^;{}]*[;{]/)) {
        decl = substr(text, RSTART, RLENGTH)
        text = substr(text, RSTART + RLENGTH)
        p = index(decl, "(")
        if (p == 0) { sub(/[ \t]*[;{]$/, "", decl); n = split(decl, w, /[^A-Za-z0-9_]+/); print w[n]; continue }
        head = substr(decl, 1, p - 1)
        sub(/[ \t]+$/, "", head)
        n = split(head, w, /[^A-Za-z0-9_]+/)
        print w[n]
      }
    }' "$headers"/*.h | sort -u)
  exported_sorted=$(printf '%s\n' "${named[@]}" | sort -u)
  missing=$(comm -23 <(echo "$declared") <(echo "$exported_sorted") | grep -v '^vidmm_test_' || true)
  extra=$(comm -13 <(echo "$declared") <(echo "$exported_sorted") || true)
  hooks=$(grep '^vidmm_test_' <<<"$extra" || true)
  extra=$(grep -v '^vidmm_test_' <<<"$extra" || true)
  if [ -n "$missing" ]; then
    fail "declared VIDMM_API in $headers but not exported: $(words "$missing")"
  else
    pass "every VIDMM_API declaration ($(grep -c . <<<"$declared")) is exported"
  fi
  if [ -n "$extra" ]; then
    fail "exported but not declared in any public header: $(words "$extra")"
  else
    pass "every exported symbol is declared in a public header"
  fi
  if [ -n "$hooks" ] && [ $test_hooks -eq 0 ]; then
    fail "test hooks exported by a build without --test-hooks: $(words "$hooks")"
  fi
fi

# --- dynamic section and program headers ----------------------------------------------------------
dyn=$(readelf -d "$lib" 2>&1)
got_soname=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' <<<"$dyn")
if [ -n "$soname" ]; then
  if [ "$got_soname" = "$soname" ]; then
    pass "SONAME $got_soname"
  else
    fail "SONAME is '${got_soname:-<none>}', expected '$soname'"
  fi
elif [ -z "$got_soname" ]; then
  fail "no SONAME"
fi
if grep -q '(TEXTREL)' <<<"$dyn" || grep -Eq '\(FLAGS\).*TEXTREL' <<<"$dyn"; then
  fail "the library has text relocations (some object was not compiled as PIC)"
else
  pass "no text relocations"
fi
stack=$(readelf -lW "$lib" 2>/dev/null | awk '$1 == "GNU_STACK" { print $(NF - 1) }')
if [ -z "$stack" ]; then
  fail "no GNU_STACK program header: loaders assume an executable stack"
elif [[ "$stack" == *E* ]]; then
  fail "GNU_STACK is '$stack': the library asks for an executable stack (an object lacks .note.GNU-stack)"
else
  pass "stack not executable ($stack)"
fi

if [ $failures -ne 0 ]; then
  echo "abi_check: $failures check(s) failed for $lib"
  exit 1
fi
echo "abi_check: $lib passes"
