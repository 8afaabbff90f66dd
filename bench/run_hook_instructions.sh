#!/usr/bin/env bash
# Counts the instructions the hook adds per event without stacks (issue 16's target: <= 350),
# as everything the calling thread runs because of it: callgrind on tests/programs/threads
# (one thread, alternating cuMemAlloc/cuMemFree and cuMemAllocAsync/cuMemFreeAsync pairs on the
# simulated driver), untraced and traced, N = 20000 and 40000 iterations; per event =
# ((traced 40000 - traced 20000) - (untraced 40000 - untraced 20000)) / 40000 events. The
# worker thread's own count (callgrind --separate-threads) is exact and independent of load,
# and of how callgrind names functions. docs/PERFORMANCE.md, "Current figures".
# With --depth D, the traced runs unwind up to D native frames per event (VRAMTRACE_STACK_DEPTH=D;
# the worker's stacks are 3 frames deep, --frames F adds F frames below its loop, for both the
# untraced and traced runs), and with --free-stacks frees too (VRAMTRACE_FREE_STACKS=1). The
# figure is also given per alloc/free pair (2 events).
# Usage: bench/run_hook_instructions.sh [--max N] [--depth D] [--frames F] [--free-stacks] [BUILD_DIR]
#        (exit 1 when the per-event figure is above N)
set -euo pipefail
max=""
depth=0
frames=0
free_stacks=0
while [ $# -gt 0 ]; do
  case $1 in
    --max) max=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --free-stacks) free_stacks=1; shift ;;
    *) break ;;
  esac
done
build=$(realpath "${1:-build}")
command -v valgrind >/dev/null || { echo "run_hook_instructions: valgrind is not installed" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export LD_LIBRARY_PATH=$build/lib/fakecuda
worker_total() {  # the largest thread total of one run's files: the worker's
  local best=0 n
  for f in "$1"-*; do
    n=$(sed -n 's/^summary: //p' "$f" | head -1)
    ((n > best)) && best=$n
  done
  echo "$best"
}
count() {  # count MODE N
  local f=$out/$1.$2
  if [ "$1" = traced ]; then
    mkdir -p "$out/traces"
    env LD_PRELOAD="$build/lib/libvramtrace.so" VRAMTRACE_STACK_DEPTH="$depth" VRAMTRACE_FREE_STACKS="$free_stacks" \
      VRAMTRACE_OUTPUT="$out/traces" \
      valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$f" \
      "$build/tests/programs/threads" 1 "$2" "$frames" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 2; }
  else
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$f" \
      "$build/tests/programs/threads" 1 "$2" "$frames" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 2; }
  fi
  worker_total "$f"
}
u1=$(count untraced 20000); u2=$(count untraced 40000)
t1=$(count traced 20000); t2=$(count traced 40000)
for n in "$u1" "$u2" "$t1" "$t2"; do  # a run callgrind counted nothing of is an error, not a 0
  [ "${n:-0}" -gt 0 ] || { echo "run_hook_instructions: callgrind counted no worker thread ($u1 $u2 $t1 $t2)" >&2; exit 2; }
done
python3 - "$u1" "$u2" "$t1" "$t2" "$max" <<'EOF'
import sys
u1, u2, t1, t2 = (int(x) for x in sys.argv[1:5])
mx = sys.argv[5]
events = 40000
untraced, traced = (u2 - u1) / events, (t2 - t1) / events
added = traced - untraced
print("instructions per event on the calling thread: untraced %.1f, traced %.1f, added by the hook %.1f"
      " (%.0f per alloc/free pair)" % (untraced, traced, added, 2 * added))
if mx and added > float(mx):
    print("run_hook_instructions: %.1f instructions per event is above the target of %s" % (added, mx), file=sys.stderr)
    sys.exit(1)
EOF
