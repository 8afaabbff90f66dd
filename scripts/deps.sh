#!/usr/bin/env bash
# Installs the build and test dependencies from Debian packages when any is missing, and checks
# that the CUDA toolkit headers are present. Sourced by demo.sh and test.sh.
set -euo pipefail
packages=(cmake make g++ clang libclang-rt-14-dev chromium libabsl-dev nlohmann-json3-dev catch2 libcli11-dev libunwind-dev
          libdw-dev libelf-dev libbenchmark-dev python3 python3-pytest pkgconf tmux zsh groff-base man-db
          debian-archive-keyring)  # (the keyring: scripts/debian-python.sh verifies the newer suites with it)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "vramtrace: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cuda_root=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
if [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "vramtrace: the CUDA toolkit headers were not found at $cuda_root (set CUDA_HOME)" >&2
  exit 1
fi
export CUDAToolkit_ROOT=$cuda_root
