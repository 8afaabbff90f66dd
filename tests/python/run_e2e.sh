#!/usr/bin/env bash
# End-to-end Python stacks on every CPython 3.10-3.15 found (tests/python/pythons.sh):
# e2e_workload.py runs under libvramtrace.so against the simulated driver, e2e_check.py checks the
# innermost Python frame of each allocation in `vramtrace dump` and the trace's config record.
# Prints which interpreters were tested and which versions were skipped and why.
# Usage: tests/python/run_e2e.sh BUILD_DIR
set -uo pipefail
build=$(realpath "${1:?usage: run_e2e.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/pythons.sh"
fails=0; ran=0; passed=0
for py in "${pythons[@]}"; do
  v=$("$py" -c 'import sys; print(sys.version.split()[0])')
  out=$(mktemp -d)
  if ! timeout 120 env LD_LIBRARY_PATH="$build/lib/fakecuda" LD_PRELOAD="$build/lib/libvramtrace.so" \
      VRAMTRACE_OUTPUT="$out" VRAMTRACE_KERNELS=0 "$py" "$here/e2e_workload.py" "$out/expect.json" \
      "$build/tests/python/libvt_e2e_helper.so" > "$out/log" 2>&1; then
    echo "FAIL $py ($v): the workload failed or hung: $(tail -3 "$out/log")"; fails=$((fails+1)); rm -rf "$out"; continue
  fi
  ran=$((ran+1))
  echo -n "$py ($v): "
  if python3 "$here/e2e_check.py" "$build/bin/vramtrace" "$(ls "$out"/*.trace)" "$out/expect.json" "$out/log"; then
    passed=$((passed+1))
  else
    fails=$((fails+1))
  fi
  rm -rf "$out"
done
pythons_summary
echo "$passed passed, $fails failed"
[ "$ran" -gt 0 ] && [ "$fails" -eq 0 ] && [ ${#errors[@]} -eq 0 ]
