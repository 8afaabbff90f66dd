#!/usr/bin/env bash
# Records the golden traces of one format version (tests/golden/README.md): runs each workload of
# the test programs under libvramtrace.so and the simulated driver, trims each trace to the chunks
# its header counts, damages two copies on purpose, and gzips them into tests/golden/vMAJOR.MINOR/.
# Then writes their expected outputs (regenerate.sh). Run it only for a new format version: the
# traces of an existing version are never re-recorded (they are what older builds wrote).
# Usage: tests/golden/record.sh BUILD_DIR [--replace]
#   --replace  overwrite an existing version folder (only while that version is not yet merged)
# The programs run from a staging folder, /tmp/vramtrace-golden, so the paths recorded in the
# traces (exe, argv, module map) name no checkout.
set -euo pipefail
build=$(realpath "${1:?usage: record.sh BUILD_DIR [--replace]}")
replace=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
fmt_h=$here/../../format/trace_format.h
major=$(sed -n 's/.*kVersionMajor = \([0-9]*\);.*/\1/p' "$fmt_h")
minor=$(sed -n 's/.*kVersionMinor = \([0-9]*\);.*/\1/p' "$fmt_h")
[ -n "$major" ] && [ -n "$minor" ] || { echo "record.sh: cannot find the format version in trace_format.h" >&2; exit 2; }
out=$here/v$major.$minor
if [ -e "$out" ] && [ "$replace" != --replace ]; then
  echo "record.sh: $out exists; goldens of a released format are never re-recorded (see README.md)" >&2
  exit 2
fi

stage=/tmp/vramtrace-golden
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/traces"
trap 'rm -rf "$stage"' EXIT
cp "$build/lib/libvramtrace.so" "$build/lib/fakecuda/libcuda.so.1" "$build/tests/programs/libfakenvml.so" \
  "$build/tests/cupti/fake/libcupti.so.13" "$stage/lib/"
for p in lookup_direct golden_workloads oom_scenarios threads api_user lifecycle cupti_client; do
  cp "$build/tests/programs/$p" "$stage/bin/"
done
cp "$here/golden_python.py" "$stage/bin/"

# record NAME [VAR=VALUE...] -- PROGRAM ARGS...: one trace, from a fixed environment.
record() {
  local name=$1
  shift
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  (cd "$stage" && env -i PATH=/usr/bin:/bin HOME=/nonexistent LD_LIBRARY_PATH="$stage/lib" \
    LD_PRELOAD="$stage/lib/libvramtrace.so" VRAMTRACE_OUTPUT="$stage/traces/$name.trace" VRAMTRACE_KERNELS=0 \
    "${env[@]}" "$@" >"$stage/traces/$name.log" 2>&1) || {
    local rc=$?
    # crash-kill ends in SIGKILL on purpose
    [ "$name" = killed ] && [ "$rc" = 137 ] || { echo "record.sh: $name failed ($rc):"; cat "$stage/traces/$name.log"; exit 1; }
  }
  [ -f "$stage/traces/$name.trace" ] || { echo "record.sh: $name left no trace"; cat "$stage/traces/$name.log"; exit 1; }
}

B=$stage/bin
record ops -- "$B/lookup_direct"
record vmm FAKECUDA_TOTAL_BYTES=32MiB -- "$B/golden_workloads" vmm
record cache_flush FAKECUDA_TOTAL_BYTES=96MiB -- "$B/golden_workloads" cache-flush
record multi_device FAKECUDA_DEVICES=2 -- "$B/golden_workloads" multi-device
record oom_leak FAKECUDA_TOTAL_BYTES=1GiB -- "$B/oom_scenarios" leak
record oom_nvml FAKECUDA_TOTAL_BYTES=8GiB FAKECUDA_FOREIGN_BYTES=6GiB VRAMTRACE_NVML_LIBRARY="$stage/lib/libfakenvml.so" \
  FAKENVML_PROCESSES=1:5368709120,999999:1073741824 -- "$B/oom_scenarios" others
record oom_fragmentation FAKECUDA_TOTAL_BYTES=4GiB -- "$B/oom_scenarios" fragmentation
record threads -- "$B/threads" 4 12
record regions -- "$B/api_user"
record killed -- "$B/lifecycle" crash-kill 20
record cupti VRAMTRACE_KERNELS=1 VRAMTRACE_CUPTI_LIBRARY="$stage/lib/libcupti.so.13" \
  NVTX_INJECTION64_PATH="$stage/lib/libvramtrace.so" -- "$B/cupti_client" nvtx
python=$(command -v python3)
record python -- "$python" "$B/golden_python.py"
# A second interpreter whose line tables differ (3.11 vs 3.13 formats), when one is installed.
py313=$(ls -d /root/.pyenv/versions/3.13*/bin/python3 2>/dev/null | head -1 || true)
if [ -n "$py313" ]; then record python313 -- "$py313" "$B/golden_python.py"; else echo "record.sh: no CPython 3.13: python313 not recorded"; fi

# Trim each trace to the header slot and the chunks its header counts (the writer grows the file
# by 1 MiB windows; the zero tail says nothing).
trim() {
  local f=$1 n
  n=$(od -An -t u8 -j 72 -N 8 "$f" | tr -d ' ')
  truncate -s $(((n + 1) * 65536)) "$f"
}
for f in "$stage"/traces/*.trace; do trim "$f"; done

# Damaged copies of the threads trace: one cut in the middle of the records of its chunk 2 (a
# copy that stopped), one whose chunk 1 header is overwritten (a corrupt block) and with a run of
# 0xff bytes (an endless varint) in the middle of chunk 2's records.
used_of() { od -An -t u4 -j $((65536 * ($2 + 1) + 4)) -N 4 "$1" | tr -d ' '; }
t=$stage/traces/threads.trace
used2=$(used_of "$t" 2)
[ "$used2" -gt 200 ] || { echo "record.sh: chunk 2 of the threads trace holds only $used2 bytes"; exit 1; }
cp "$t" "$stage/traces/truncated.trace"
truncate -s $((65536 * 3 + 32 + used2 / 2)) "$stage/traces/truncated.trace"
cp "$t" "$stage/traces/corrupt.trace"
printf 'XXXX' | dd of="$stage/traces/corrupt.trace" bs=1 seek=$((65536 * 2)) conv=notrunc status=none
printf '\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff' |
  dd of="$stage/traces/corrupt.trace" bs=1 seek=$((65536 * 3 + 32 + used2 / 2)) conv=notrunc status=none

rm -rf "$out"
mkdir -p "$out"
for f in "$stage"/traces/*.trace; do
  gzip -9 -n -c "$f" >"$out/$(basename "$f").gz"
done
"$here/regenerate.sh" "$build" "$out"
du -ch "$out"/*.gz | tail -1
