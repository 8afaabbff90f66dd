#!/usr/bin/env bash
# Installs the Debian packages that are missing, and checks that the CUDA toolkit headers are
# present. Sourced by demo.sh and test.sh (build.sh installs nothing). VT_DEPS says which set:
#   build (default)  what building and the demo need;
#   test             that and what only the tests need (a browser, clang's fuzzing runtime,
#                    Node.js for the shared byte-size cases, pytest, tmux, zsh, valgrind,
#                    man, venv/pip, and patchelf and the static compression libraries for the
#                    wheel).
# It asks before using sudo (not root, at a terminal); elsewhere it needs VRAMTRACE_DEPS_YES=1
# (CI sets it) or it stops with the command to run.
set -euo pipefail
build_packages=(cmake make g++ libabsl-dev nlohmann-json3-dev catch2 libcli11-dev libunwind-dev libdw-dev libelf-dev
                libbenchmark-dev python3 pkgconf
                debian-archive-keyring)  # (the demo's real PyTorch is fetched from Debian, verified with it)
test_packages=(clang libclang-rt-14-dev chromium nodejs python3-pytest tmux zsh valgrind groff-base man-db
               python3-venv python3-pip python3-yaml patchelf libbz2-dev zlib1g-dev liblzma-dev)
packages=("${build_packages[@]}")
[ "${VT_DEPS:-build}" = test ] && packages+=("${test_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
    if [ "${VRAMTRACE_DEPS_YES:-}" != 1 ]; then
      echo "vramtrace: these Debian packages are missing: ${missing[*]}" >&2
      if [ -t 0 ]; then
        read -r -p "vramtrace: install them with sudo apt-get? [y/N] " answer
        [[ $answer == [yY]* ]] || { echo "vramtrace: not installed; install them and run again" >&2; exit 1; }
      else
        echo "vramtrace: run: sudo apt-get install ${missing[*]}  (or set VRAMTRACE_DEPS_YES=1 to let this script do it)" >&2
        exit 1
      fi
    fi
  fi
  echo "vramtrace: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cuda_root=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
if [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "vramtrace: the CUDA toolkit headers were not found at $cuda_root (set CUDA_HOME)" >&2
  exit 1
fi
export CUDAToolkit_ROOT=$cuda_root
