#!/usr/bin/env bash
# A source build without the CUDA toolkit's headers stops at configure time with one line saying
# what is missing and how to point at a toolkit, not CMake's FindCUDAToolkit error trail. The
# toolkit is hidden by mounting an empty folder over it in a private mount namespace (unshare -m:
# skipped, 77, where that is not allowed). Usage: no_toolkit_test.sh SOURCE_DIR
set -uo pipefail
src=$(realpath "${1:?usage: no_toolkit_test.sh SOURCE_DIR}")
nvcc=$(command -v nvcc || echo "${CUDAToolkit_ROOT:-${CUDA_HOME:-/usr/local/cuda}}/bin/nvcc")
toolkit=$(realpath "$(dirname "$nvcc")/..")
[ -f "$toolkit/include/cuda.h" ] || { echo "SKIP: no toolkit found to hide ($toolkit)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/empty"
unshare -m true 2>/dev/null || { echo "SKIP: unshare -m is not allowed here"; exit 77; }
unshare -m sh -c "mount --bind '$work/empty' '$toolkit' && PATH=/usr/bin:/bin cmake -S '$src' -B '$work/build' -DVRAMTRACE_BUILD_TESTS=OFF -DVRAMTRACE_BUILD_BENCH=OFF" > "$work/log" 2>&1
status=$?
[ $status -ne 0 ] || { echo "FAIL: configured without the toolkit's headers"; exit 1; }
tr -s ' \n' ' ' < "$work/log" | grep -q "vramtrace needs the CUDA toolkit's headers to build (cuda.h and cupti.h" ||
  { echo "FAIL: no clear line about the toolkit's headers:"; tail -20 "$work/log"; exit 1; }
! grep -q "Could NOT find CUDAToolkit\|FindCUDAToolkit.cmake" "$work/log" ||
  { echo "FAIL: CMake's own error trail came with it:"; tail -20 "$work/log"; exit 1; }
echo "PASS: without the toolkit's headers, configure stops with one line saying what is missing"
