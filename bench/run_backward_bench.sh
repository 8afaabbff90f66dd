#!/usr/bin/env bash
# What lending a backward's Python frames costs a block event of PyTorch's autograd worker
# (docs/python-frames.md, "Backward"): bench/backward_bench.py under callgrind, the worker's block
# events inside an engine call entered from 32 Python frames (lent) and outside any (not lent);
# instructions per event of our hook body (vt::torch_block, inclusive) in each, and the trace's
# last block event's Python frame count as the proof that frames were lent.
# Usage: bench/run_backward_bench.sh [BUILD_DIR] [PYTHON]   (default: build, python3)
# Environment: PAIRS (default 20000).
set -uo pipefail
build=$(realpath "${1:-build}")
py=$("${2:-python3}" -c 'import sys; print(sys.executable)')  # the interpreter itself (not a pyenv shim)
here=$(cd "$(dirname "$0")" && pwd)
pairs=${PAIRS:-20000}
lib=$build/lib/libvramtrace.so dir=$build/tests/torch cli=$build/bin/vramtrace
for f in "$lib" "$dir/autograd/libtorch_python.so" "$cli"; do
  [ -e "$f" ] || { echo "run_backward_bench.sh: $f missing (build first)" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "run_backward_bench.sh: valgrind is needed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export LD_LIBRARY_PATH=$build/lib/fakecuda VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0
echo "== $("$py" -c 'import sys; print("CPython %d.%d.%d" % sys.version_info[:3])') ($py), $pairs pairs"
for mode in inside outside; do
  rm -rf "$out/t" && mkdir "$out/t"
  LD_PRELOAD=$lib VRAMTRACE_OUTPUT=$out/t valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    --toggle-collect='vt::torch_block*' "$py" "$here/backward_bench.py" "$dir" "$mode" "$pairs" 32 \
    >/dev/null 2>"$out/log" || { echo "   $mode: the bench failed: $(tail -3 "$out/log")"; exit 1; }
  ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out/cg")
  [ "${ir:-0}" -gt 0 ] || { echo "run_backward_bench.sh: $mode: callgrind counted nothing in vt::torch_block (renamed or inlined?)" >&2; exit 1; }
  frames=$("$cli" dump "$out"/t/*.trace | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    e = json.loads(line)
    if e.get("op") == "torch_block":
        n = sum(1 for f in e.get("stack", []) if f["python"])
print(n)')
  if [ "$mode" = inside ] && [ "${frames:-0}" -le 0 ]; then
    echo "run_backward_bench.sh: no Python frames were lent to the worker's block events" >&2; exit 1
  fi
  awk -v ir="$ir" -v n="$pairs" -v m="$mode" -v f="$frames" \
    'BEGIN { printf "   %-7s %.0f instructions per block event (vt::torch_block inclusive), %d Python frames lent\n", m, ir / (2 * n), f }'
done
