#!/usr/bin/env bash
# Stages what tests/gpu/device_run.sh runs on the lent GPU machine, which has no network and no
# -dev packages (../shared/knowledge/gpu-machine.md), into build-gpu/ (git-ignored, carried):
#   bin/vramtrace                 the portable CLI: glibc (and libgcc_s) only
#   lib/libvramtrace.so, lib/libvramtrace_audit.so, and the libunwind and liblzma copies the
#                                 library opens, beside it under names of their own (as in the
#                                 wheel: cmake/carried_libraries.cmake)
#   tests/programs/               lookup_dynamic, driver_figures (glibc and libstdc++)
#   tests/realtorch/lib/          libvt_outside.so (the library of oom_outside.py)
#   bench/gen_trace               for the job-scaling measurement
#   gpu/                          the CUDA programs, compiled here with nvcc for sm_90: alloc_static,
#                                 alloc_shared, pool_release, kernels, kernels_shared, async_pairs
#   STAGED                        the commit, the date and what was checked
# Then it checks the rules: every binary needs nothing but glibc, libstdc++/libgcc_s (programs),
# the CUDA driver and runtime the machine has, and what the folder ships in lib/; no glibc symbol newer than
# 2.34 in the CLI and library; the folder under 32 MiB. Last it prints the one device call.
#   scripts/gpu_stage.sh          (VT_GPU_PORTABLE_BUILD names the portable build folder: default
#                                  build-gpu-work/, configured as the wheel's)
set -euo pipefail
cd "$(dirname "$0")/.."
VT_DEPS=${VT_DEPS:-test} source scripts/deps.sh  # (patchelf and the static compression libraries of the portable build)
stage=build-gpu
work=${VT_GPU_PORTABLE_BUILD:-build-gpu-work}
nvcc=${NVCC:-$CUDAToolkit_ROOT/bin/nvcc}
jobs=$(nproc)
say() { echo "gpu_stage: $*" >&2; }
die() { echo "gpu_stage: FAILED: $*" >&2; exit 1; }

# The portable CLI and library (the wheel's configuration), and the small programs from build/.
if [[ ! -f $work/CMakeCache.txt ]]; then
  cmake -S . -B "$work" -DCMAKE_BUILD_TYPE=Release -DVRAMTRACE_BUILD_TESTS=OFF -DVRAMTRACE_BUILD_BENCH=OFF \
    -DVRAMTRACE_PORTABLE=ON >/dev/null
fi
grep -q "VRAMTRACE_PORTABLE:BOOL=ON" "$work/CMakeCache.txt" || die "$work is not configured with -DVRAMTRACE_PORTABLE=ON"
cmake --build "$work" -j"$jobs" --target vramtrace_cli vramtrace vramtrace_audit >/dev/null
[[ -f build/CMakeCache.txt ]] || cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs" --target lookup_dynamic driver_figures realtorch_outside gen_trace >/dev/null

rm -rf "$stage"
mkdir -p "$stage"/{bin,lib,tests/programs,tests/realtorch/lib,bench,gpu}
cp "$work/bin/vramtrace" "$stage/bin/"
cp "$work/lib/libvramtrace.so" "$work/lib/libvramtrace_audit.so" "$stage/lib/"
# The libraries libvramtrace.so carries, as the wheel does.
while read -r lib; do [[ $lib == libvramtrace* ]] || cp "$work/lib/$lib" "$stage/lib/"; done <"$work/wheel_libraries.txt"
cp build/tests/programs/lookup_dynamic build/tests/programs/driver_figures "$stage/tests/programs/"
cp build/tests/realtorch/lib/libvt_outside.so "$stage/tests/realtorch/lib/"
cp build/bench/gen_trace "$stage/bench/"
[[ -x $nvcc ]] || die "no nvcc at $nvcc (the CUDA toolkit: CUDA_HOME)"
cu() {  # cu OUTPUT SOURCE [nvcc options]: for the H200 (sm_90), with PTX for later GPUs
  "$nvcc" -O2 -arch=sm_90 -o "$stage/gpu/$1" "tests/gpu/$2" "${@:3}" || die "nvcc $2"
}
cu alloc_static alloc_paths.cu -cudart static
cu alloc_shared alloc_paths.cu -cudart shared
cu pool_release pool_release.cu -cudart static
cu kernels kernels.cu -cudart static
cu kernels_shared kernels.cu -cudart shared
cu async_pairs async_pairs.cu -cudart static
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* "$stage"/tests/programs/* "$stage"/bench/* 2>/dev/null || true

# The rules.
tests/packaging/binary_rules.sh "$stage/bin/vramtrace" "$stage/lib" >&2 || die "binary rules (above)"
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1|libstdc\+\+\.so\.6|libcuda\.so\.1|libcudart\.so\.13)$'
for f in "$stage"/lib/libvramtrace_audit.so "$stage"/tests/programs/* "$stage"/tests/realtorch/lib/* "$stage"/bench/* "$stage"/gpu/*; do
  for d in $(ldd "$f" 2>/dev/null | awk '{print $1}'); do
    [[ $d =~ $allowed || -f $stage/lib/$d ]] || die "$f needs $d, which the GPU machine may not have"
  done
done
# The staged pieces work together: the CLI runs a program with the staged library preloaded (on
# the simulated driver, when build/ has it) and reads its trace back.
if [[ -f build/lib/fakecuda/libcuda.so.1 ]]; then
  t=$(mktemp -d /tmp/gpu-stage-check.XXXXXX)
  LD_LIBRARY_PATH=$PWD/build/lib/fakecuda "$stage/bin/vramtrace" run -o "$t/" -- \
    "$stage/tests/programs/lookup_dynamic" dlsym --expect-hooked >"$t/run.log" 2>&1 ||
    die "the staged CLI and library do not trace lookup_dynamic: $(tail -n 3 "$t/run.log")"
  "$stage/bin/vramtrace" info "$t"/*.trace >/dev/null || die "the staged CLI cannot read the staged library's trace"
  rm -rf "$t"
  say "the staged CLI traced lookup_dynamic through the staged library (simulated driver) and read it back"
fi
size=$(du -sb "$stage" | cut -f1)
((size <= 32 * 1024 * 1024)) || die "$stage is $((size >> 20)) MiB, over the 32 MiB rule (the device tool carries 64 MiB with the tree)"
{
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!build-gpu' || echo ' (with uncommitted changes)')"
  echo "staged $(date -u +%FT%TZ) on $(uname -m), $(ldd --version | head -n 1)"
  echo "$((size >> 10)) KiB; the CLI and library pass tests/packaging/binary_rules.sh; $(ls "$stage/gpu" | tr '\n' ' ')"
} >"$stage/STAGED"
say "$stage: $((size >> 10)) KiB, $(find "$stage" -type f | wc -l) files, the rules hold"
cat <<EOF
The device call (the run tool of the tool library: one call, build-gpu/ carried, a budget of 450 s
for the sections and a timeout that leaves room for one rerun of a failed section):
  run(command="VT_GPU_REQUIRE=torch,cupy,jax tests/gpu/device_run.sh", carry=["build-gpu"], timeout_s=540)
A rerun of some sections only:
  run(command="VT_GPU_SECTIONS=torch-blocks,cupti tests/gpu/device_run.sh", carry=["build-gpu"], timeout_s=300)
Then give_back, and record the run in docs/gpu-validation.md (\$OUT/results.txt and logs.tar.gz come back).
EOF
