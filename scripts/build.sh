#!/usr/bin/env bash
# Configures and builds into build/ (Release); installs nothing (scripts/deps.sh does that, and
# demo.sh and test.sh run it first). Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
export CUDAToolkit_ROOT=${CUDAToolkit_ROOT:-${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
