#!/usr/bin/env bash
# The Python part of an event (issue 14 target: <= 300 ns at 32 frames): bench/py_event_bench.py
# under libvramtrace.so (writing a trace, stacks on) with VRAMTRACE_PYTHON=1 and =0, interleaved
# ROUNDS times; per allocation = median with - median without (a free carries no stack unless
# VRAMTRACE_FREE_STACKS=1). Then callgrind: instructions per
# alloc/free pair inside the recorder's stacked path (vt::record_slow: walk, intern, encode, live
# tracker; a free takes it only with VRAMTRACE_FREE_STACKS=1) with and without Python frames, and
# the inclusive instructions of the walker, of stack interning and of the native unwinder. A
# callgrind figure of 0 (a function renamed or inlined away) stops the script with an error.
# Usage: bench/run_py_bench.sh [BUILD_DIR] [PYTHON...]   (default: build; every CPython 3.10-3.15
#        tests/python/pythons.sh finds)
# Environment: PAIRS (default 200000), BATCHES (default 7), ROUNDS (default 3), CG_PAIRS (default
#        20000; 0 skips callgrind).
set -uo pipefail
build=$(realpath "${1:-build}")
shift || true
here=$(cd "$(dirname "$0")" && pwd)
pairs=${PAIRS:-200000} batches=${BATCHES:-7} rounds=${ROUNDS:-3} cg_pairs=${CG_PAIRS:-20000}
lib=$build/lib/libvramtrace.so helper=$build/bench/libpy_event_helper.so cli=$build/bin/vramtrace
for f in "$lib" "$helper" "$cli"; do [ -e "$f" ] || { echo "run_py_bench.sh: $f missing (build first)" >&2; exit 2; }; done
if [ $# -eq 0 ]; then
  source "$here/../tests/python/pythons.sh"
  pythons_summary
else
  pythons=("$@")
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=() measured=0
export LD_LIBRARY_PATH=$build/lib/fakecuda VRAMTRACE_KERNELS=0
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
run() {  # run PY PYTHON_ON ARGS... -> the bench's output line
  local py=$1 on=$2
  shift 2
  rm -rf "$out/t" && mkdir "$out/t"
  VRAMTRACE_OUTPUT=$out/t VRAMTRACE_PYTHON=$on LD_PRELOAD=$lib "$py" "$here/py_event_bench.py" "$helper" "$@"
}
for py in "${pythons[@]}"; do
  ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
  echo "== CPython $ver ($py)"
  # The Python frames must really be in the trace: the last allocation's stack has 32 of them.
  run "$py" 1 time 10 1 >/dev/null || { echo "   the bench failed"; failed+=("$ver: the bench failed"); continue; }
  got=$("$cli" dump "$out"/t/*.trace | python3 -c '
import json, sys
n = -1
for line in sys.stdin:
    e = json.loads(line)
    if e.get("op") == "cuMemAllocAsync":
        n = sum(1 for f in e.get("stack", []) if f["python"])
print(n)')
  echo "   Python frames in the traced stack: $got"
  [ "$got" = 32 ] || { echo "   expected 32: the walker is not capturing here, figures skipped"; failed+=("$ver: $got Python frames, not 32"); continue; }
  on=() off=()
  for r in $(seq "$rounds"); do
    on+=("$(run "$py" 1 time "$pairs" "$batches" | sed -n 's/.*median \([0-9.]*\) ns.*/\1/p')")
    off+=("$(run "$py" 0 time "$pairs" "$batches" | sed -n 's/.*median \([0-9.]*\) ns.*/\1/p')")
  done
  m_on=$(printf '%s\n' "${on[@]}" | median) m_off=$(printf '%s\n' "${off[@]}" | median)
  if [ -z "$m_on" ] || [ -z "$m_off" ]; then
    echo "   no timing from the bench (with: '${on[*]}', without: '${off[*]}')"; failed+=("$ver: no timing"); continue
  fi
  echo "   ns/pair with Python frames: ${on[*]} (median $m_on); without: ${off[*]} (median $m_off)"
  awk -v a="$m_on" -v b="$m_off" 'BEGIN { printf "   Python part per allocation (a free carries no stack): %.0f ns\n", a - b }'
  [ "$cg_pairs" -gt 0 ] && command -v valgrind >/dev/null || continue
  # Instructions inside the recorder (vt::record_slow: capture, intern, encode, live tracker; the
  # simulated driver and the interpreter excluded) at CG_PAIRS and 2 x CG_PAIRS pairs: the
  # difference is CG_PAIRS pairs' worth (start-up and the first events' records cancel out).
  for on in 1 0; do
    for k in 1 2; do
      rm -rf "$out/t" && mkdir "$out/t"
      VRAMTRACE_OUTPUT=$out/t VRAMTRACE_PYTHON=$on LD_PRELOAD=$lib valgrind --tool=callgrind --trace-children=yes \
        --collect-atstart=no '--toggle-collect=vt::record_slow(*' --callgrind-out-file="$out/cg.$on.$k" \
        "$py" "$here/py_event_bench.py" "$helper" loop $((k * cg_pairs)) >/dev/null 2>"$out/vg" ||
        { echo "   callgrind run failed: $(tail -2 "$out/vg")"; failed+=("$ver: callgrind run failed"); continue 3; }
    done
  done
  ir() { sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$1"; }
  per_event() { awk -v a="$1" -v b="$2" -v n="$cg_pairs" 'BEGIN { printf "%.0f", (a - b) / n }'; }
  with=$(per_event "$(ir "$out/cg.1.2")" "$(ir "$out/cg.1.1")")
  without=$(per_event "$(ir "$out/cg.0.2")" "$(ir "$out/cg.0.1")")
  if [ "${with:-0}" -le 0 ] || [ "${without:-0}" -le 0 ]; then
    echo "run_py_bench.sh: callgrind counted nothing in vt::record_slow ($with, $without): renamed or inlined?" >&2
    exit 1
  fi
  measured=$((measured + 1))
  echo "   callgrind, instructions per alloc/free pair in the recorder: $with with Python frames, $without without:" \
    "$((with - without)) for the Python part"
  fn_ir() {  # inclusive instructions of the first function matching $2 in callgrind file $1
    callgrind_annotate --inclusive=yes "$1" 2>/dev/null | grep -F "$2" | head -1 | awk '{ gsub(",", "", $1); print $1 + 0 }'
  }
  for fn in 'vt::py::capture_keys(' 'vt::py::capture(' 'vt::stack_id(' 'vt::capture_native('; do
    for on in 1 0; do
      a=$(fn_ir "$out/cg.$on.2" "$fn") b=$(fn_ir "$out/cg.$on.1" "$fn")
      [ -n "$a" ] && [ -n "$b" ] && echo "     $(per_event "$a" "$b") per pair in ${fn%(} (inclusive), Python frames $([ $on = 1 ] && echo on || echo off)"
    done
  done
done
# Fail loudly: a Python that gave no figure, or no Python at all, is an error, not a quiet 0.
if [ ${#failed[@]} -gt 0 ] || [ "${#pythons[@]}" -eq 0 ]; then
  echo "run_py_bench.sh: no figure for: ${failed[*]:-every Python (none found)}" >&2
  exit 1
fi
