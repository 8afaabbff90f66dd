#!/usr/bin/env bash
# Generates a synthetic trace (bench/gen_trace: 50 million events by default, 4 threads, stacks
# on) in a temporary directory, reads it back with bench/reader_bench in each mode (one process
# per mode and repetition, best of REPS), prints a table, and deletes the trace.
# Usage: bench/run_reader_bench.sh [EVENTS] [BUILD_DIR]    (defaults: 50000000, build)
# Environment: REPS (default 2), TMPDIR (where the trace goes, default /tmp; needs ~12 bytes per
# event), VRAMTRACE_STACK_DEPTH (for the generator; default 64, 0 = no stacks).
set -euo pipefail
events=${1:-50000000}
build=${2:-build}
reps=${REPS:-2}
gen=$build/bench/gen_trace
bench=$build/bench/reader_bench
for b in "$gen" "$bench"; do
  [ -x "$b" ] || { echo "run_reader_bench.sh: $b missing (build the gen_trace and reader_bench targets)" >&2; exit 2; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/vt-reader-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
trace=$dir/synthetic.vt

echo "== generating $events events into $trace"
"$gen" "$trace" "$events"

echo "== reading ($reps run(s) per mode, best shown; $(nproc) CPUs, $(uname -r))"
printf '%-7s %12s %9s %9s %13s %12s %10s %10s %10s\n' mode events open_s read_s "M events/s" "peak RSS MiB" "anon MiB" "file MiB" "trace MiB"
for mode in scan live stacks; do
  best=""
  best_rate=0
  for ((i = 0; i < reps; ++i)); do
    line=$("$bench" "$trace" "$mode")
    rate=$(sed -n 's/.*events_per_s=\([0-9]*\).*/\1/p' <<<"$line")
    [ -n "$rate" ] || { echo "run_reader_bench.sh: $mode: no events_per_s in reader_bench's output: $line" >&2; exit 1; }
    if [ "$rate" -gt "$best_rate" ]; then best_rate=$rate; best=$line; fi
  done
  [ "$best_rate" -gt 0 ] || { echo "run_reader_bench.sh: $mode: 0 events/s" >&2; exit 1; }
  get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $best"; }
  printf '%-7s %12s %9s %9s %13.2f %12s %10s %10s %10s\n' "$mode" "$(get events)" "$(get open_s)" "$(get read_s)" \
    "$(awk -v r="$best_rate" 'BEGIN {print r / 1e6}')" "$(get maxrss_mib)" "$(get rss_anon_mib)" "$(get rss_file_mib)" "$(get file_mib)"
  case $mode in
    live) echo "        $(grep -o 'live_blocks=.*' <<<"$best")" ;;
    stacks) echo "        $(grep -o 'stacks=[0-9]* modules=[0-9]*' <<<"$best")" ;;
  esac
done
