#!/usr/bin/env bash
# Symbolization with many modules: bench/gen_modules_trace writes a trace of N modules and N
# allocations from N distinct addresses (one per module), then `vramtrace dump` (every stack
# symbolized) and `vramtrace report` run on it; best wall time of REPS runs each.
# Usage: bench/run_symbolize_bench.sh [N] [BUILD_DIR]     (defaults: 80000, build; REPS=3)
set -euo pipefail
n=${1:-80000}
build=${2:-build}
reps=${REPS:-3}
gen=$build/bench/gen_modules_trace
cli=$build/bin/vramtrace
for b in "$gen" "$cli"; do
  [ -x "$b" ] || { echo "run_symbolize_bench.sh: $b missing (build gen_modules_trace and vramtrace_cli)" >&2; exit 2; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/vt-symbolize-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$gen" "$dir/modules.trace" "$n"
for cmd in dump report; do
  best=""
  for ((i = 0; i < reps; ++i)); do
    s=$(date +%s%N)
    "$cli" "$cmd" "$dir/modules.trace" >/dev/null
    t=$(($(date +%s%N) - s))
    if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
  done
  printf '%-7s N=%-8s best of %d: %d.%02d s\n' "$cmd" "$n" "$reps" $((best / 1000000000)) $((best / 10000000 % 100))
done
