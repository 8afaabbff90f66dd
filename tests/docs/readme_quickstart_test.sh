#!/usr/bin/env bash
# README.md's PyTorch quick start, run as written on the simulated GPU with real PyTorch: the
# commands between <!-- quickstart:commands --> and <!-- /quickstart:commands --> run in a folder
# holding train.py (scripts/demo_train.py), with `vramtrace` (this build's) and a `python` (Debian's
# CUDA PyTorch, tests/realtorch) first on PATH; the pip line is left to the wheel test
# (tests/packaging/wheel_test.sh installs the wheel the same way). The sample output the README
# shows, between <!-- quickstart:output --> and <!-- /quickstart:output -->, must be what
# `vramtrace summary` printed in its PyTorch block, line by line (times masked: they differ run to run).
# Usage: readme_quickstart_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(realpath "${1:?usage: readme_quickstart_test.sh BUILD_DIR SOURCE_DIR}")
src=$(realpath "${2:?usage: readme_quickstart_test.sh BUILD_DIR SOURCE_DIR}")
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$build/tests/realtorch/env.sh" ] || { echo "SKIP: real PyTorch is not set up (tests/realtorch/setup.sh)"; exit 77; }
source "$build/tests/realtorch/env.sh"
between() {  # between MARK FILE: the fenced block's lines between <!-- MARK --> and <!-- /MARK -->
  awk -v b="<!-- $1 -->" -v e="<!-- /$1 -->" '$0 == b {on = 1; next} $0 == e {on = 0} on && !/^```/' "$2"
}
commands=$(between quickstart:commands "$src/README.md")
sample=$(between quickstart:output "$src/README.md")
[ -n "$commands" ] || fail "README.md has no quick-start commands block"
[ -n "$sample" ] || fail "README.md has no quick-start output block"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
ln -s "$build/bin/vramtrace" "$work/bin/vramtrace"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$VT_RT_PYTHON" > "$work/bin/python" && chmod +x "$work/bin/python"
cp "$src/scripts/demo_train.py" "$work/train.py"
cd "$work"
export PATH="$work/bin:$PATH" LD_LIBRARY_PATH=$VT_RT_LIBRARY_PATH VRAMTRACE_KERNELS=0
export VRAMTRACE_NVML_LIBRARY=$build/tests/realtorch/lib/libnvidia-ml.so.1
ran=0
summary=
while IFS= read -r line; do
  cmd=${line%%#*}  # the comment after the command
  cmd=${cmd%"${cmd##*[![:space:]]}"}
  [ -n "$cmd" ] || continue
  case $cmd in
    pip\ *) echo "skipped (the wheel test installs the wheel): $cmd"; continue ;;
  esac
  echo "\$ $cmd"
  out=$(bash -c "$cmd" 2>&1)
  status=$?
  case $cmd in
    vramtrace\ run\ *) [ $status -eq 1 ] || fail "$cmd exited $status (train.py's own OOM exits 1): $out" ;;
    *) [ $status -eq 0 ] || fail "$cmd exited $status: $out" ;;
  esac
  case $cmd in vramtrace\ summary\ *) summary=$out ;; esac
  ran=$((ran + 1))
done <<<"$commands"
((ran >= 3)) || fail "only $ran of the quick start's commands ran"
[ -n "$summary" ] || fail "the quick start has no vramtrace summary command"
[ -f report.html ] && grep -q "<html" report.html || fail "the quick start wrote no HTML report"
mask() { sed -E 's/[0-9]+\.[0-9]+ s\b/T s/g; s/ +$//'; }
diff <(echo "$sample" | mask) <(echo "$summary" | sed -n '/^  PyTorch /,/^$/p' | sed '/^$/d' | mask) > "$work/diff" ||
  fail "the README's sample output is not what vramtrace summary prints now (< README, > now):
$(cat "$work/diff")"
echo "PASS: the README's quick start ran ($ran commands) and printed the sample it shows"
