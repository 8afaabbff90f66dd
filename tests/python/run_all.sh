#!/usr/bin/env bash
# Runs the Python frame walker suite (test_frames.py loaded by ctypes, test_frames.py again with
# the shim LD_PRELOADed and initialised from its constructor before Py_Initialize, as
# libvramtrace.so would be, then bench_frames.py) under every CPython 3.10-3.15 found
# (tests/python/pythons.sh: pyenv, PATH, the distribution's own build, Debian's newer suites for
# 3.14/3.15). Prints which interpreters were tested and which versions were skipped and why;
# exits non-zero if any present one fails, or if fetching 3.14/3.15 failed other than by being
# unavailable.
# Usage: tests/python/run_all.sh [PATH/TO/libpyalloc.so]   (default: build/tests/python/libpyalloc.so)
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=$(readlink -f "${1:-$here/../../build/tests/python/libpyalloc.so}")
if [ ! -f "$lib" ]; then
  echo "run_all.sh: $lib not found (build the pyalloc target first)" >&2
  exit 2
fi
source "$here/pythons.sh"

failed=()
for py in "${pythons[@]}"; do
  echo "=== $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
  export VT_PYTHON_LAUNCHER=$py
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

pythons_summary
if [ ${#failed[@]} -gt 0 ] || [ ${#errors[@]} -gt 0 ] || [ ${#pythons[@]} -eq 0 ]; then
  [ ${#failed[@]} -gt 0 ] && echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all ${#pythons[@]} interpreter(s) passed"
