#!/usr/bin/env bash
# tests/gpu/device_run.sh before any GPU, on the simulated driver with tests/realtorch's PyTorch:
#   tests/gpu/device_run_test.sh BUILD dry-run   the whole dry run passes, PyTorch required (ctest:
#                                                "gpu: device_run.sh's dry run ...")
#   tests/gpu/device_run_test.sh BUILD           its failure paths, each failing for the right reason
#                                                (ctest: "gpu: device_run.sh fails for the right reason")
# BUILD must have tests/realtorch set up (else exit 77, or 1 under VRAMTRACE_REQUIRE_REAL_TORCH=1).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: device_run_test.sh BUILD}" && pwd)
if [[ ! -f $build/tests/realtorch/env.sh ]]; then
  [[ ${VRAMTRACE_REQUIRE_REAL_TORCH:-} == 1 ]] && { echo "FAIL: no realtorch set-up in $build" >&2; exit 1; }
  echo "SKIPPED: no realtorch set-up in $build (Debian's PyTorch could not be fetched)" >&2
  exit 77
fi
work=$(mktemp -d /tmp/device-run-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
# expect NAME WANT_RC PATTERN... -- ENV...: runs device_run.sh with ENV, wants exit WANT_RC and
# every PATTERN (grep -E) in its results.
expect() {
  local name=$1 want=$2
  shift 2
  local patterns=()
  while [[ $1 != -- ]]; do patterns+=("$1"); shift; done
  shift
  local out=$work/$name
  env VT_GPU_DRYRUN=1 VT_GPU_STAGE="$build" OUT="$out" "$@" "$here/device_run.sh" >"$work/$name.log" 2>&1
  local rc=$?
  local bad=""
  [[ $rc == "$want" ]] || bad="exit $rc, wanted $want"
  for p in "${patterns[@]}"; do
    grep -qE "$p" "$out/results.txt" 2>/dev/null || bad+="${bad:+; }no line matching '$p'"
  done
  [[ -s $out/logs.tar.gz ]] || bad+="${bad:+; }no logs.tar.gz"
  if [[ -z $bad ]]; then
    echo "ok   $name"
  else
    echo "FAIL $name: $bad"
    sed 's/^/     /' "$out/results.txt" 2>/dev/null | tail -n 25
    failures=$((failures + 1))
  fi
}

if [[ ${2:-} == dry-run ]]; then
  # Every section as on a GPU, what needs one skipped and said; PyTorch's checks must all run.
  expect dry-run 0 '^preflight PASS torch: python' '^torch-blocks PASS torch-oom_fragmentation' \
    '^torch-blocks PASS torch-mlp_cuda_malloc_async' '^lookups PASS lookup-procaddr:' '^frameworks PASS doctor-gpus' \
    '^torch-more PASS torch-oom_kept_alive' '^cupti SKIP cupti: needs a GPU' '^summary: [0-9]+ passed, 0 failed, [0-9]+ skipped, 0 not run' \
    -- VT_GPU_REQUIRE=torch VT_GPU_BUDGET=900
  grep -E '^summary|^[a-z-]+ END' "$work/dry-run/results.txt"
  exit $((failures > 0))
fi

# PyTorch required but not there (the machine's python3 has no torch): preflight fails, nothing runs.
expect torch-required 2 '^preflight FAIL torch: .*VT_GPU_REQUIRE names torch' '^preflight failed: nothing else runs' \
  '^summary: 2 passed, 1 failed' -- VT_GPU_PYTHON=python3 VT_GPU_REQUIRE=torch
# Not required: a SKIP, and the sections go on (their torch parts skipped too).
expect torch-optional 0 '^preflight SKIP torch: no PyTorch with CUDA' '^torch-blocks SKIP torch-blocks: no PyTorch' \
  '^summary: [0-9]+ passed, 0 failed' -- VT_GPU_PYTHON=python3 VT_GPU_SECTIONS=torch-blocks
# A CUDA framework required and missing (no CuPy here): a FAIL, not a skip.
expect cupy-required 2 '^preflight FAIL cupy: not installed \(VT_GPU_REQUIRE names cupy\)' -- VT_GPU_REQUIRE=cupy
# A staged CLI that does not run: preflight says so and stops.
broken=$work/broken-stage
mkdir -p "$broken/bin"
cp -r "$build/lib" "$broken/lib"
printf '#!/bin/sh\necho "cannot execute: wrong ELF class" >&2\nexit 126\n' >"$broken/bin/vramtrace"
chmod +x "$broken/bin/vramtrace"
expect broken-cli 2 '^preflight FAIL cli: the staged CLI does not run: cannot execute' -- VT_GPU_STAGE="$broken"
# A check that fails carries the tail of its log: a lookup that hands out an unhooked pointer.
unhooked=$work/unhooked-stage
mkdir -p "$unhooked/tests/programs"
for f in "$build"/*; do [[ $(basename "$f") == tests ]] || ln -s "$f" "$unhooked/$(basename "$f")"; done
for f in "$build"/tests/*; do [[ $(basename "$f") == programs ]] || ln -s "$f" "$unhooked/tests/$(basename "$f")"; done
printf '#!/bin/sh\necho "unhooked: cuMemAlloc_v2" >&2\necho "line from the failing program" >&2\nexit 3\n' \
  >"$unhooked/tests/programs/lookup_dynamic"
chmod +x "$unhooked/tests/programs/lookup_dynamic"
expect lookup-unhooked 1 '^lookups FAIL lookup-dlsym: unhooked: cuMemAlloc_v2' '^    line from the failing program' \
  '^lookups PASS interception-torch-default' -- VT_GPU_STAGE="$unhooked" VT_GPU_SECTIONS=lookups
# The budget spent: later sections are NOT-RUN, said, and no FAIL.
expect budget 0 '^torch-blocks NOT-RUN: .* it needs 60' '^measure NOT-RUN: .* it needs 30' '^summary: .* 0 failed, .* 2 not run' \
  -- VT_GPU_BUDGET=30 VT_GPU_SECTIONS=torch-blocks,measure
# A section that outlives its time is stopped and is a FAIL, with the tail of its log.
expect timeout 1 '^torch-blocks FAIL the section ran out of its 5 s and was stopped' \
  -- VT_GPU_SECTION_TIMEOUT=5 VT_GPU_SECTIONS=torch-blocks
echo "device_run_test: $failures failure(s)"
exit $((failures > 0))
