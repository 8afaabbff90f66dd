#!/usr/bin/env bash
# A fork's cost, untraced and traced (docs/security.md, "Threads, forks and a second copy").
# Usage: bench/run_fork_cost.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
bin=$build/bench/fork_cost
[ -x "$bin" ] || { echo "run_fork_cost.sh: $bin missing (build the fork_cost target)" >&2; exit 2; }
export LD_LIBRARY_PATH=$build/lib/fakecuda
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "== untraced"; "$bin"
echo "== traced"; VRAMTRACE_OUTPUT=$dir LD_PRELOAD=$build/lib/libvramtrace.so "$bin"
