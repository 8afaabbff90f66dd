#!/usr/bin/env bash
# The command-line tests (ctest's e2e, doctor and golden tests) against a vramtrace binary built with
# UndefinedBehaviorSanitizer: configures and builds build-ubsan/ (-DVRAMTRACE_UBSAN=ON, the CLI
# only: the analyzer, the doctor and tools/), then runs those tests of BUILD_DIR (default build/,
# already built) with VRAMTRACE_TEST_CLI pointing at it. Every finding is written to
# build-ubsan/ubsan.* (UBSAN_OPTIONS log_path, so test output is undisturbed) and aborts the command;
# any such file fails this script. The preload library is the normal one (it runs inside traced
# programs, not part of this build): build-ubsan/lib/libvramtrace.so links to BUILD_DIR's.
# Usage: tests/ubsan_cli.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=build-ubsan
jobs=${VT_UBSAN_JOBS:-$(nproc)}
[ -x "$build/tests/e2e_tests" ] || { echo "ubsan_cli.sh: $build/tests/e2e_tests missing (build $build first)" >&2; exit 2; }
cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Release -DVRAMTRACE_UBSAN=ON -DVRAMTRACE_PORTABLE=OFF -DVRAMTRACE_BUILD_TESTS=OFF \
  -DVRAMTRACE_BUILD_BENCH=OFF >/dev/null
cmake --build "$out" -j"$jobs" --target vramtrace_cli
mkdir -p "$out/lib"
ln -sf "$(cd "$build/lib" && pwd)/libvramtrace.so" "$out/lib/libvramtrace.so"
rm -f "$out"/ubsan.*
export VRAMTRACE_TEST_CLI=$PWD/$out/bin/vramtrace
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$PWD/$out/ubsan
rc=0
(cd "$build" && ctest -j"$jobs" -R '^(e2e|doctor|golden):' --output-on-failure) || rc=$?
if ls "$out"/ubsan.* >/dev/null 2>&1; then
  echo "ubsan_cli.sh: undefined behaviour in the CLI:" >&2
  cat "$out"/ubsan.* >&2
  exit 1
fi
[ "$rc" = 0 ] || { echo "ubsan_cli.sh: CLI tests failed under UBSan (rc $rc)" >&2; exit "$rc"; }
echo "ubsan cli: the CLI tests passed against $VRAMTRACE_TEST_CLI, no undefined behaviour"
