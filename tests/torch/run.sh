#!/usr/bin/env bash
# PyTorch's block layer end to end, without PyTorch: torch_workload.py drives the stand-in
# libc10_cuda.so (tests/torch/) under libvramtrace.so and the simulated driver; check_torch.py
# checks the trace and the report. Each case: CHECK SCENARIO VARIANT [VAR=VALUE...].
# The block events' Python lines are checked on every CPython 3.10-3.15 found (pythons.sh).
# Usage: tests/torch/run.sh BUILD_DIR [CASE_FILTER]
set -uo pipefail
build=$(realpath "${1:?usage: run.sh BUILD_DIR [FILTER]}")
filter=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
fails=0 ran=0

run_case() {  # python check scenario variant [env...]
  local py=$1 check=$2 scenario=$3 variant=$4; shift 4
  local name="$check/$scenario/$variant${*:+ $*} ($(basename "$py"))"
  [ -n "$filter" ] && [[ "$name" != *"$filter"* ]] && return 0
  local out; out=$(mktemp -d)
  ran=$((ran+1))
  if ! timeout 120 env LD_LIBRARY_PATH="$build/lib/fakecuda" LD_PRELOAD="$build/lib/libvramtrace.so" \
      VRAMTRACE_OUTPUT="$out" VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0 VT_FAKE_NCCL="$build/tests/torch/libnccl.so.2" \
      "$@" "$py" "$here/torch_workload.py" "$scenario" "$build/tests/torch/$variant" "$out/expect.json" \
      > "$out/log" 2>&1; then
    echo "FAIL $name: the workload failed or hung: $(tail -3 "$out/log")"; fails=$((fails+1)); rm -rf "$out"; return
  fi
  echo -n "$name: "
  python3 "$here/check_torch.py" "$build/bin/vramtrace" "$(ls "$out"/*.trace)" "$out/expect.json" "$check" "$out/log" \
    || fails=$((fails+1))
  rm -rf "$out"
}

py3=$(command -v python3)
run_case "$py3" blocks threads default
run_case "$py3" blocks deadlock_probe default
run_case "$py3" unforwarded threads unforwarded
run_case "$py3" oldsig threads oldsig
run_case "$py3" absent threads absent
run_case "$py3" bad_totals threads default FAKE_C10_MODE=bad_totals
run_case "$py3" unaligned threads default FAKE_C10_MODE=unaligned
run_case "$py3" cpu_events threads default FAKE_C10_MODE=cpu_events
run_case "$py3" no_requests threads default VRAMTRACE_TORCH_REQUESTS=0
# The report in PyTorch's terms: figures at marks, peaks, each OOM verdict with PyTorch's message.
run_case "$py3" report_threads threads default
run_case "$py3" report_fragmented fragmented default FAKECUDA_TOTAL_BYTES=170MiB
run_case "$py3" report_live_set live_set default FAKECUDA_TOTAL_BYTES=1GiB
run_case "$py3" report_kept_alive kept_alive default FAKECUDA_TOTAL_BYTES=512MiB
run_case "$py3" report_outside outside default FAKECUDA_TOTAL_BYTES=1GiB VT_FAKE_NCCL_BYTES=734003200
# The analysis turns the PyTorch figures off when the records disagree with the driver's view.
run_case "$py3" bad_reserved threads default FAKE_C10_MODE=bad_reserved
run_case "$py3" stray_block threads default FAKE_C10_MODE=stray_block
# No block event from a loaded libc10_cuda.so: said so; a mode that needs none: said so.
run_case "$py3" unavailable threads absent
run_case "$py3" unavailable threads oldsig
run_case "$py3" async threads absent PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync

# Without vramtrace the stand-in works on its own: every report reaches libc10.so.
if [ -z "$filter" ]; then
  ran=$((ran+1)); out=$(mktemp -d)
  if LD_LIBRARY_PATH="$build/lib/fakecuda" FAKECUDA_CONTEXT_BYTES=0 "$py3" "$here/torch_workload.py" threads \
      "$build/tests/torch/default" "$out/expect.json" > "$out/log" 2>&1 &&
      python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); sys.exit(0 if e["forwarded"] == e["reports"] > 0 else 1)' "$out/expect.json"; then
    echo "PASS no vramtrace: the stand-in's reports reach libc10.so"
  else
    echo "FAIL no vramtrace: $(tail -3 "$out/log")"; fails=$((fails+1))
  fi
  rm -rf "$out"
fi

# The Python lines of block events on every interpreter.
source "$here/../python/pythons.sh"
for py in "${pythons[@]}"; do
  [ "$py" = "$py3" ] && continue
  run_case "$py" blocks threads default
done
[ -z "$filter" ] && pythons_summary
echo "$ran cases, $fails failed"
[ "$ran" -gt 0 ] && [ "$fails" -eq 0 ]
