#!/usr/bin/env bash
# What tracing costs the process beyond the hook (docs/security.md): the hook's stack use
# (bench/stack_use: bytes of a painted thread stack touched; "Stack use") and a fork's time and
# the pages its handlers copy into the child (bench/fork_cost; "Threads, forks and a second
# copy"), each untraced, traced with stacks on, and (stack use) traced with stacks off.
# Usage: bench/run_process_costs.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
for b in stack_use fork_cost; do
  [ -x "$build/bench/$b" ] || { echo "run_process_costs.sh: $build/bench/$b missing (build the $b target)" >&2; exit 2; }
done
export LD_LIBRARY_PATH=$build/lib/fakecuda
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
lib=$build/lib/libvramtrace.so
echo "== stack use, untraced"; "$build/bench/stack_use" first
echo "== stack use, traced, stacks on"; VRAMTRACE_OUTPUT=$dir LD_PRELOAD=$lib "$build/bench/stack_use" first
echo "== stack use, traced, stacks off"; VRAMTRACE_OUTPUT=$dir VRAMTRACE_STACK_DEPTH=0 LD_PRELOAD=$lib "$build/bench/stack_use" first
echo "== fork, untraced"; "$build/bench/fork_cost"
echo "== fork, traced"; VRAMTRACE_OUTPUT=$dir LD_PRELOAD=$lib "$build/bench/fork_cost"
