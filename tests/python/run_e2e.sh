#!/usr/bin/env bash
# End-to-end Python stacks on every CPython 3.10-3.13 present: e2e_workload.py runs under
# libvramtrace.so against the simulated driver, e2e_check.py checks the innermost Python frame of
# each allocation in `vramtrace dump`. Usage: tests/python/run_e2e.sh BUILD_DIR
set -uo pipefail
build=$(realpath "${1:?usage: run_e2e.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
fails=0; ran=0; passed=0
for v in 3.10 3.11 3.12 3.13; do
  py=""
  for c in /root/.pyenv/versions/$v.*/bin/python$v "$(command -v python$v 2>/dev/null)"; do
    [ -x "$c" ] && { py=$c; break; }
  done
  if [ -z "$py" ]; then echo "SKIP python$v: not installed"; continue; fi
  out=$(mktemp -d)
  if ! timeout 120 env LD_LIBRARY_PATH="$build/lib/fakecuda" LD_PRELOAD="$build/lib/libvramtrace.so" \
      VRAMTRACE_OUTPUT="$out" "$py" "$here/e2e_workload.py" "$out/expect.json" "$build/tests/python/libvt_e2e_helper.so" \
      > "$out/log" 2>&1; then
    echo "FAIL python$v: the workload failed or hung: $(tail -3 "$out/log")"; fails=$((fails+1)); continue
  fi
  ran=$((ran+1))
  echo -n "python$v ($("$py" -c 'import sys; print(sys.version.split()[0])')): "
  if python3 "$here/e2e_check.py" "$build/bin/vramtrace" "$(ls "$out"/*.trace)" "$out/expect.json"; then
    passed=$((passed+1))
  else
    fails=$((fails+1))
  fi
  rm -rf "$out"
done
echo "$passed passed, $fails failed"
[ "$ran" -gt 0 ] && [ "$fails" -eq 0 ]
