#!/usr/bin/env bash
# Sets up real PyTorch on the simulated GPU for a build tree: fetches Debian's CUDA PyTorch
# (fetch.sh), generates and builds the NVIDIA-library stubs from what it imports (stubgen.py), checks
# that every library of the unpacked root finds its dependencies inside it or among the stand-ins
# (closure.py: trixie's ld.so would silently take this machine's), and writes BUILD/tests/realtorch/env.sh,
# which the workloads' runner and the demo source:
#   VT_RT_PYTHON       the python3.13 launcher
#   VT_RT_LIBRARY_PATH the stubs, the stand-ins and the simulated driver, in that order
#   VT_RT_VERSIONS     the packages and versions used
#
#   tests/realtorch/setup.sh BUILD
#
# Exit 0: ready. Exit 77 (ctest's skip) with one line when Debian's packages cannot be had, unless
# VRAMTRACE_REQUIRE_REAL_TORCH=1 (CI, where they can: then it is exit 1, a failure). Exit 1 on any
# other failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: setup.sh BUILD}" && pwd)
out=$build/tests/realtorch
for f in "$out/lib/libcudart.so.12" "$out/lib/libnvidia-ml.so.1" "$build/lib/fakecuda/libcuda.so.1" "$build/lib/libvramtrace.so"; do
  [[ -e $f ]] || { echo "realtorch setup: $f is missing (build the 'realtorch' target)" >&2; exit 1; }
done
rm -f "$out/env.sh"  # (a failed or skipped set-up leaves none: the workloads then skip or fail)
t0=$(date +%s%N)
set +e
launcher=$("$here/fetch.sh")
rc=$?
set -e
if ((rc == 3)); then
  if [[ ${VRAMTRACE_REQUIRE_REAL_TORCH:-} == 1 ]]; then
    echo "realtorch setup: FAILED: Debian's PyTorch could not be fetched, and VRAMTRACE_REQUIRE_REAL_TORCH=1 (CI) makes that a failure" >&2
    exit 1
  fi
  echo "realtorch setup: SKIPPED: Debian's PyTorch could not be fetched (above); real-PyTorch tests skip" >&2
  exit 77
fi
((rc == 0)) || exit 1
cache=$(dirname "$launcher")
root=$cache/root
t1=$(date +%s%N)

# Stubs for the NVIDIA libraries, from what the unpacked PyTorch imports (a new PyTorch, new stubs).
stubs=$out/stubs
rm -rf "$stubs.new" && mkdir -p "$stubs.new/src"
python3 "$here/stubgen.py" "$root" "$stubs.new/src" >"$stubs.new/list.txt"
while read -r soname n; do
  cc -std=c11 -O1 -w -shared -fPIC -o "$stubs.new/$soname" -Wl,-soname,"$soname" \
    -Wl,--version-script="$stubs.new/src/$soname.map" "$stubs.new/src/$soname.c"
done <"$stubs.new/list.txt"
rm -rf "$stubs" && mv "$stubs.new" "$stubs"

provided=(libcudart.so.12 libcuda.so.1 libnvidia-ml.so.1 $(cut -d' ' -f1 "$stubs/list.txt"))
if ! python3 "$here/closure.py" "$root" --provided "${provided[@]}" >"$out/closure.txt" 2>&1; then
  echo "realtorch setup: FAILED: libraries of the unpacked PyTorch need what is not there (fetch.sh's list misses a package):" >&2
  cat "$out/closure.txt" >&2
  exit 1
fi
t2=$(date +%s%N)
cat >"$out/env.sh" <<ENV
# Written by tests/realtorch/setup.sh: real PyTorch on the simulated GPU for this build tree.
VT_RT_PYTHON=$launcher
VT_RT_LIBRARY_PATH=$stubs:$out/lib:$build/lib/fakecuda
VT_RT_VERSIONS=$cache/versions.txt
ENV
echo "realtorch setup: ready in $(( (t2 - t0) / 1000000 )) ms (fetch $(( (t1 - t0) / 1000000 )) ms); $(grep -E '^(python3-torch-cuda|python3.13-minimal) ' "$cache/versions.txt" | paste -sd, -)" >&2
