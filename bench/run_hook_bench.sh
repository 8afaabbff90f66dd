#!/usr/bin/env bash
# Runs bench/hook_bench untraced, traced and with a null sink, then prints the bytes per event of
# the traced run. Usage: bench/run_hook_bench.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
bench=$build/bench/hook_bench
lib=$(realpath "$build/lib/libvramtrace.so")
export LD_LIBRARY_PATH=$(realpath "$build/lib/fakecuda")
out=$(mktemp -d)
mkdir -p "$out/nostacks"
args=(--benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true)
echo "== untraced (simulated driver only)"
"$bench" "${args[@]}"
echo "== traced (trace file in $out)"
VRAMTRACE_OUTPUT=$out LD_PRELOAD=$lib "$bench" "${args[@]}"
echo "== traced, no stacks (VRAMTRACE_STACK_DEPTH=0)"
VRAMTRACE_STACK_DEPTH=0 VRAMTRACE_OUTPUT=$out/nostacks LD_PRELOAD=$lib "$bench" "${args[@]}"
echo "== traced, null sink (hook, event and stack capture, no file)"
VRAMTRACE_SINK=null LD_PRELOAD=$lib "$bench" "${args[@]}"
echo "== bytes per event of the traced run"
for f in "$out"/*.trace "$out"/nostacks/*.trace; do
  "$build/bin/vramtrace" info "$f" | python3 -c 'import json,sys; j=json.load(sys.stdin); print("events %d, record bytes %d -> %.2f bytes/event, file %d bytes" % (j["events"], j["record_bytes"], j["record_bytes"]/max(1,j["events"]), j["file_bytes"]))'
done
rm -rf "$out"
