#!/usr/bin/env bash
# Offline: prints the python_layouts.h rows by compiling layout_gen.c against each CPython's
# headers: pyenv's 3.10-3.13 (/root/.pyenv/versions) and 3.14/3.15 from Debian's newer suites
# (scripts/debian-python.sh unpacks them with their -dev headers). For 3.13+ it also
# builds the free-threaded flavour (-DPy_GIL_DISABLED: the layouts are pure header arithmetic)
# and, given a directory, writes each flavour's _Py_DebugOffsets block there as
# debug_offsets_3.N[t].bin (tests/python/fixtures/ keeps them).
# Usage: interpose/python/layout_gen.sh [FIXTURE_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fixtures=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen() {  # gen MINOR FLAGS...
  local m=$1
  shift
  cc -std=c11 -w -I"$tmp" "$@" "$here/layout_gen.c" -o "$tmp/gen"
  local ft=""
  for a in "$@"; do [ "$a" = -DPy_GIL_DISABLED=1 ] && ft=t; done
  if [ -n "$fixtures" ] && [ "$m" -ge 13 ]; then
    "$tmp/gen" "$fixtures/debug_offsets_3.$m$ft.bin"
  else
    "$tmp/gen"
  fi
}
for m in 10 11 12 13; do
  for d in /root/.pyenv/versions/3.$m.*/include/python3.$m; do
    [ -d "$d" ] || continue
    if [ $m -eq 13 ]; then  # the .debug_offsets initializer inside _PyRuntimeState_INIT
      { echo '#define _Py_DebugOffsets_INIT(debug_cookie) { \'
        sed -n '/^        \.debug_offsets = { \\$/,/^        }, \\$/p' "$d/internal/pycore_runtime_init.h" | sed '1d;$d'
        echo '}'; } >"$tmp/debug_offsets_313_init.h"
    fi
    gen $m -I"$d"
    [ $m -ge 13 ] && gen $m -I"$d" -DPy_GIL_DISABLED=1
    break
  done
done
for m in 14 15; do
  launcher=$("$here/../../scripts/debian-python.sh" 3.$m) || continue
  root=$(dirname "$launcher")/root/usr/include
  gen $m -I"$root/python3.$m" -I"$root"
  gen $m -I"$root/python3.$m" -I"$root" -DPy_GIL_DISABLED=1
done
