#!/usr/bin/env bash
# Installs what is missing, builds, and traces a small training-like workload with
# `vramtrace run`: on the real GPU when an NVIDIA driver answers, else on the simulated device.
# Then shows what the trace holds. Usage: scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
scripts/build.sh >/dev/null
out=$(mktemp -d /tmp/vramtrace-demo.XXXXXX)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "== real GPU: $(nvidia-smi -L | head -1)"
else
  echo "== no GPU here: using the simulated device (build/lib/fakecuda, 16 GiB) and its stand-in NVML"
  export LD_LIBRARY_PATH=$PWD/build/lib/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export VRAMTRACE_KERNELS=0  # CUPTI needs a real GPU
  # A real GPU has NVML, whose process list (this process's row included) tells this process's
  # first CUDA context from other processes' memory at the OOM; the stand-in answers for the
  # simulated device (tests/fakenvml: no other processes, this one as the driver counts it).
  export VRAMTRACE_NVML_LIBRARY=$PWD/build/tests/programs/libfakenvml.so
fi
set +e
build/bin/vramtrace run -o "$out" -- build/tests/programs/demo_workload
status=$?
set -e
echo "== the program exited with $status (its own status, passed through)"
for t in "$out"/*.trace; do
  echo "== vramtrace info $t (the first lines)"
  build/bin/vramtrace info "$t" | head -12 || true
  echo "== first events (vramtrace dump $t | head)"
  build/bin/vramtrace dump --no-stacks "$t" | head -3 || true  # head closes the pipe early
  echo "== vramtrace report $t"
  build/bin/vramtrace report "$t" --top 3
  build/bin/vramtrace report "$t" --format html -o "${t%.trace}.html"
  echo "== HTML report: ${t%.trace}.html"
done
