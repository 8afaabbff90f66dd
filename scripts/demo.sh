#!/usr/bin/env bash
# The main job, end to end: a PyTorch training script (scripts/demo_train.py) that keeps every
# step's logits alive runs under `vramtrace run` until its torch.OutOfMemoryError; then
# `vramtrace summary` and `vramtrace report` say why, in PyTorch's terms, and the HTML page is
# written. Usage: scripts/demo.sh
#   - with an NVIDIA GPU and a python3 whose torch sees it: on the real GPU;
#   - without one: Debian's real CUDA build of PyTorch on the simulated GPU (tests/realtorch:
#     fetched once into ~/.cache/vramtrace/realtorch, ~600 MB; kernels compute nothing, the
#     allocator, the OOM and autograd are PyTorch's own);
#   - when Debian's packages cannot be reached either: the small C workload on the simulated driver.
# Installs missing packages and builds only what the demo needs (not the test suite).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
out=$(mktemp -d /tmp/vramtrace-demo.XXXXXX)
say() { echo "== $*"; }

gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
torch_gpu=0
if ((gpu)) && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then torch_gpu=1; fi
fetch_pid=
if ((!gpu)); then
  # The packages download and unpack while vramtrace builds (the cache makes later runs instant).
  tests/realtorch/fetch.sh >"$out/fetch.log" 2>&1 &
  fetch_pid=$!
fi
export CUDAToolkit_ROOT=${CUDAToolkit_ROOT:-${CUDA_HOME:-/usr/local/cuda}}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(vramtrace_cli vramtrace)
((gpu)) || targets+=(realtorch)
((gpu && !torch_gpu)) && targets+=(demo_workload)
cmake --build build -j"$(nproc)" --target "${targets[@]}" >"$out/build.log" 2>&1 ||
  { tail -n 30 "$out/build.log" >&2; echo "vramtrace: the build failed (above; $out/build.log)" >&2; exit 1; }
vt=$PWD/build/bin/vramtrace

python=()
if ((torch_gpu)); then
  say "real GPU: $(nvidia-smi -L | head -n 1), PyTorch $(python3 -c 'import torch; print(torch.__version__)')"
  python=(python3)
elif ((gpu)); then
  say "real GPU: $(nvidia-smi -L | head -n 1); no python3 with CUDA PyTorch here: the C workload instead"
else
  set +e
  wait "$fetch_pid"
  VRAMTRACE_REQUIRE_REAL_TORCH=0 tests/realtorch/setup.sh build >>"$out/fetch.log" 2>&1
  rc=$?
  set -e
  if ((rc == 0)); then
    source build/tests/realtorch/env.sh
    say "no GPU here: Debian's CUDA PyTorch ($(awk '$1 == "python3-torch-cuda" {print $2}' "$VT_RT_VERSIONS")) on the" \
        "simulated GPU (16 GiB; kernels compute nothing, PyTorch's allocator and OOM are its own)"
    export LD_LIBRARY_PATH=$VT_RT_LIBRARY_PATH
    export VRAMTRACE_NVML_LIBRARY=$PWD/build/tests/realtorch/lib/libnvidia-ml.so.1  # (NVML lists the process, as on a GPU)
    export VRAMTRACE_KERNELS=0  # CUPTI needs a real GPU
    python=("$VT_RT_PYTHON")
  else
    say "no GPU here, and Debian's PyTorch could not be fetched ($(grep -m1 -E 'fetch:|FAILED' "$out/fetch.log" || echo "see $out/fetch.log")): the C workload on the simulated driver instead"
    cmake --build build -j"$(nproc)" --target demo_workload fakecuda fakenvml >>"$out/build.log" 2>&1
    export LD_LIBRARY_PATH=$PWD/build/lib/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export VRAMTRACE_NVML_LIBRARY=$PWD/build/tests/programs/libfakenvml.so
    export VRAMTRACE_KERNELS=0
  fi
fi

if ((${#python[@]})); then
  say "vramtrace run -- python scripts/demo_train.py   (a training loop that keeps every step's logits)"
  set +e
  "$vt" run -o "$out/" -- "${python[@]}" scripts/demo_train.py 2>&1 | grep -vE '^  File |^    ' | tail -n 12
  status=${PIPESTATUS[0]}
  set -e
else
  set +e
  "$vt" run -o "$out/" -- build/tests/programs/demo_workload
  status=$?
  set -e
fi
say "the program exited with $status (its own status, passed through)"
trace=$(ls -S "$out"/*.trace 2>/dev/null | head -n 1)
[[ -n $trace ]] || { echo "vramtrace: no trace was written (above)" >&2; exit 1; }
say "vramtrace summary $trace"
"$vt" summary "$trace" --top 3 | sed '/^ALLOCATION SIZES/,$d'
say "vramtrace oom $trace   (the verdict, its evidence, what to do)"
"$vt" oom "$trace" --top 3
"$vt" report "$trace" --format html -o "${trace%.trace}.html"
say "the whole report: vramtrace report $trace"
say "HTML report: ${trace%.trace}.html"
