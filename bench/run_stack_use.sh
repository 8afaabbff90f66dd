#!/usr/bin/env bash
# The hook's stack use (docs/security.md, "Stack use"): bench/stack_use untraced, traced with
# stacks on and with stacks off. Figures are bytes of a painted thread stack touched; the
# difference from the untraced run is vramtrace's.
# Usage: bench/run_stack_use.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
bin=$build/bench/stack_use
[ -x "$bin" ] || { echo "run_stack_use.sh: $bin missing (build the stack_use target)" >&2; exit 2; }
export LD_LIBRARY_PATH=$build/lib/fakecuda
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "== untraced"; "$bin" first
echo "== traced, stacks on"; VRAMTRACE_OUTPUT=$dir LD_PRELOAD=$build/lib/libvramtrace.so "$bin" first
echo "== traced, stacks off"; VRAMTRACE_OUTPUT=$dir VRAMTRACE_STACK_DEPTH=0 LD_PRELOAD=$build/lib/libvramtrace.so "$bin" first
