#!/usr/bin/env bash
# What a PyTorch block event costs (issue 13 target: <= 1 us added, with Python frames):
# bench/torch_block_bench.py (malloc/free pairs of a cached block in the stand-in caching
# allocator, from 32 Python frames) with libvramtrace.so preloaded (trace written, stacks on,
# Python frames on) and without it, interleaved ROUNDS times; per event = (median with - median
# without) / 2. Then callgrind: instructions per event of the allocator's malloc and free (block
# events included) with and without vramtrace, the difference per event, and the inclusive
# instructions of our hook body (vt::torch_block).
# Usage: bench/run_torch_bench.sh [BUILD_DIR] [PYTHON]   (default: build, python3)
# Environment: PAIRS (default 200000), BATCHES (default 7), ROUNDS (default 3), CG_PAIRS
#        (default 20000; 0 skips callgrind).
set -uo pipefail
build=$(realpath "${1:-build}")
py=$("${2:-python3}" -c 'import sys; print(sys.executable)')  # the interpreter itself (not a pyenv shim: callgrind)
here=$(cd "$(dirname "$0")" && pwd)
pairs=${PAIRS:-200000} batches=${BATCHES:-7} rounds=${ROUNDS:-3} cg_pairs=${CG_PAIRS:-20000}
lib=$build/lib/libvramtrace.so libdir=$build/tests/torch/default cli=$build/bin/vramtrace
for f in "$lib" "$libdir/libc10_cuda.so" "$cli"; do [ -e "$f" ] || { echo "run_torch_bench.sh: $f missing (build first)" >&2; exit 2; }; done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export LD_LIBRARY_PATH=$build/lib/fakecuda VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
run() {  # run TRACED ARGS... -> the bench's output line
  local traced=$1
  shift
  rm -rf "$out/t" && mkdir "$out/t"
  if [ "$traced" = 1 ]; then
    VRAMTRACE_OUTPUT=$out/t LD_PRELOAD=$lib "$py" "$here/torch_block_bench.py" "$libdir" "$@"
  else
    "$py" "$here/torch_block_bench.py" "$libdir" "$@"
  fi
}
echo "== $("$py" -c 'import sys; print("CPython %d.%d.%d" % sys.version_info[:3])') ($py)"
# The block events must really be in the trace, with their 32 Python frames.
run 1 time 10 1 >/dev/null || { echo "   the bench failed"; exit 1; }
got=$("$cli" dump "$out"/t/*.trace | python3 -c '
import json, sys
n, blocks = -1, 0
for line in sys.stdin:
    e = json.loads(line)
    if e.get("op") == "torch_block":
        blocks += 1
        n = sum(1 for f in e.get("stack", []) if f["python"])
print(blocks, n)')
echo "   block events, Python frames in the last one's stack: $got"
[ "${got#* }" = 32 ] || { echo "   expected 32 Python frames: figures skipped"; exit 1; }
with=() without=()
for r in $(seq "$rounds"); do
  with+=("$(run 1 time "$pairs" "$batches" | sed -n 's/.*median \([0-9.]*\) ns.*/\1/p')")
  without+=("$(run 0 time "$pairs" "$batches" | sed -n 's/.*median \([0-9.]*\) ns.*/\1/p')")
done
m_with=$(printf '%s\n' "${with[@]}" | median) m_without=$(printf '%s\n' "${without[@]}" | median)
[ -n "$m_with" ] && [ -n "$m_without" ] || { echo "run_torch_bench.sh: no timing from the bench (traced: '${with[*]}', untraced: '${without[*]}')" >&2; exit 1; }
echo "   CPU ns/pair traced: ${with[*]} (median $m_with); untraced: ${without[*]} (median $m_without)"
awk -v a="$m_with" -v b="$m_without" 'BEGIN { printf "   added per block event: %.0f ns\n", (a - b) / 2 }'
[ "$cg_pairs" -gt 0 ] && command -v valgrind >/dev/null || exit 0
ir() { sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$1"; }
for traced in 1 0; do
  for k in 1 2; do
    rm -rf "$out/t" && mkdir "$out/t"
    env $([ $traced = 1 ] && echo "LD_PRELOAD=$lib VRAMTRACE_OUTPUT=$out/t") valgrind --tool=callgrind \
      --collect-atstart=no '--toggle-collect=*device_malloc*' '--toggle-collect=*device_free*' \
      --callgrind-out-file="$out/cg.$traced.$k" \
      "$py" "$here/torch_block_bench.py" "$libdir" loop $((k * cg_pairs)) >/dev/null 2>"$out/vg" ||
      { echo "   callgrind run failed: $(tail -2 "$out/vg")"; exit 1; }
  done
done
per_event() { awk -v a="$1" -v b="$2" -v n="$cg_pairs" 'BEGIN { printf "%.0f", (a - b) / (2 * n) }'; }
t=$(per_event "$(ir "$out/cg.1.2")" "$(ir "$out/cg.1.1")") u=$(per_event "$(ir "$out/cg.0.2")" "$(ir "$out/cg.0.1")")
if [ "${t:-0}" -le 0 ] || [ "${u:-0}" -le 0 ] || [ "$t" -le "$u" ]; then
  echo "run_torch_bench.sh: callgrind counted no block events ($t traced, $u untraced): a function renamed or inlined away?" >&2
  exit 1
fi
echo "   callgrind, instructions per block event (allocator included): $t traced, $u untraced: $((t - u)) added"
fn_ir() { callgrind_annotate --inclusive=yes "$1" 2>/dev/null | grep -F "$2" | head -1 | awk '{ gsub(",", "", $1); print $1 + 0 }'; }
a=$(fn_ir "$out/cg.1.2" 'vt::torch_block(') b=$(fn_ir "$out/cg.1.1" 'vt::torch_block(')
[ -n "$a" ] && [ -n "$b" ] && echo "     $(per_event "$a" "$b") per event in vt::torch_block (inclusive: checks, stack, record)"
