#!/usr/bin/env bash
# Allocations PyTorch's autograd workers make in backward name the Python line that called
# backward: backward_workload.py through the stand-in engine under libvramtrace.so, checked by
# check_backward.py, on every CPython 3.10-3.15 found (pythons.sh); then the same run without
# vramtrace (the stand-in works alone) and with vramtrace but no frames to lend (VRAMTRACE_PYTHON=0).
# Usage: tests/torch/backward_run.sh BUILD_DIR
set -uo pipefail
build=$(realpath "${1:?usage: backward_run.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
fails=0 ran=0

run() {  # python [env...]
  local py=$1; shift
  local out; out=$(mktemp -d)
  ran=$((ran+1))
  echo -n "$(basename "$py")${*:+ $*}: "
  if ! timeout 120 env LD_LIBRARY_PATH="$build/lib/fakecuda" LD_PRELOAD="$build/lib/libvramtrace.so" \
      VRAMTRACE_OUTPUT="$out" VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0 "$@" \
      "$py" "$here/backward_workload.py" "$build/tests/torch" "$out/expect.json" > "$out/stdout" 2> "$out/log"; then
    echo "FAIL: the workload failed or hung: $(tail -3 "$out/log")"; fails=$((fails+1)); rm -rf "$out"; return
  fi
  if [ "$(cat "$out/stdout")" != "backward workload done" ] || [ -s "$out/log" ]; then
    echo "FAIL: the output changed: $(head -3 "$out/stdout") / stderr: $(head -3 "$out/log")"; fails=$((fails+1))
  fi
  if [ "$*" = "VRAMTRACE_PYTHON=0" ]; then
    # No Python frames anywhere, nothing lent: the stacks hold native frames only.
    if "$build/bin/vramtrace" dump "$out"/*.trace | grep -q '"python": *true'; then
      echo "FAIL: Python frames with VRAMTRACE_PYTHON=0"; fails=$((fails+1))
    else
      echo "ok (no Python frames)"
    fi
  else
    python3 "$here/check_backward.py" "$build/bin/vramtrace" "$(ls "$out"/*.trace)" "$out/expect.json" || fails=$((fails+1))
  fi
  rm -rf "$out"
}

source "$here/../python/pythons.sh"
for py in "${pythons[@]}"; do run "$py"; done
run "$(command -v python3)" VRAMTRACE_PYTHON=0
# Without vramtrace: the stand-in's own behaviour (the raised call is caught, the program ends well).
ran=$((ran+1)); out=$(mktemp -d)
if LD_LIBRARY_PATH="$build/lib/fakecuda" FAKECUDA_CONTEXT_BYTES=0 python3 "$here/backward_workload.py" \
    "$build/tests/torch" "$out/expect.json" > "$out/log" 2>&1 && grep -q "backward workload done" "$out/log"; then
  echo "no vramtrace: ok"
else
  echo "FAIL no vramtrace: $(tail -3 "$out/log")"; fails=$((fails+1))
fi
rm -rf "$out"
pythons_summary
echo "$ran runs, $fails failed"
[ ${#errors[@]} -eq 0 ] && [ "$fails" -eq 0 ]
