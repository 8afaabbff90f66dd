#!/usr/bin/env bash
# Runs the Python frame walker suite (test_frames.py loaded by ctypes, test_frames.py again with
# the shim LD_PRELOADed and initialised from its constructor before Py_Initialize, as
# libvramtrace.so would be, then bench_frames.py) under every CPython
# 3.10-3.13 on this machine: pyenv's /root/.pyenv/versions/3.1x.*/bin/python3.1x, else python3.1x
# on PATH; plus the distribution's /usr/bin/python3.* when it is a different (e.g. statically
# linked) build. Prints which versions were absent; exits non-zero if any present one fails.
# Usage: tests/python/run_all.sh [PATH/TO/libpyalloc.so]   (default: build/tests/python/libpyalloc.so)
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=$(readlink -f "${1:-$here/../../build/tests/python/libpyalloc.so}")
if [ ! -f "$lib" ]; then
  echo "run_all.sh: $lib not found (build the pyalloc target first)" >&2
  exit 2
fi

pythons=()
missing=()
for m in 10 11 12 13; do
  found=""
  for p in /root/.pyenv/versions/3.$m.*/bin/python3.$m; do
    [ -x "$p" ] && found=$p && break
  done
  [ -z "$found" ] && found=$(command -v "python3.$m" 2>/dev/null || true)
  if [ -n "$found" ]; then pythons+=("$found"); else missing+=("3.$m"); fi
  # A system interpreter of the same minor that is a separate build (statically linked on Debian).
  sys=/usr/bin/python3.$m
  if [ -x "$sys" ] && [ "$(readlink -f "$sys")" != "$(readlink -f "$found")" ]; then pythons+=("$sys"); fi
done

failed=()
for py in "${pythons[@]}"; do
  echo "=== $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
  if ! timeout 600 "$py" "$here/test_frames.py" "$lib"; then
    failed+=("$py (tests)")
    continue
  fi
  if ! LD_PRELOAD="$lib" PYALLOC_EARLY_INIT=1 timeout 600 "$py" "$here/test_frames.py" "$lib"; then
    failed+=("$py (preloaded)")
    continue
  fi
  timeout 300 "$py" "$here/bench_frames.py" "$lib" || failed+=("$py (bench)")
done

[ ${#missing[@]} -gt 0 ] && echo "skipped (absent): ${missing[*]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all present CPython versions passed: ${#pythons[@]} interpreter(s)"
