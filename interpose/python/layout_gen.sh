#!/usr/bin/env bash
# Offline: prints the python_layouts.h rows by compiling layout_gen.c against each installed
# CPython 3.10-3.13's headers (pyenv layout; pass include dirs as arguments to override).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
incs=("$@")
if [ ${#incs[@]} -eq 0 ]; then
  for m in 10 11 12 13; do
    for d in /root/.pyenv/versions/3.$m.*/include/python3.$m; do [ -d "$d" ] && incs+=("$d"); done
  done
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for inc in "${incs[@]}"; do
  echo "  // from $inc"
  cc -std=c11 -w -I"$inc" "$here/layout_gen.c" -o "$tmp/gen"
  "$tmp/gen"
done
