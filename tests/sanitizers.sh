#!/usr/bin/env bash
# Everything vramtrace runs outside traced programs, under sanitizers: configures build-sanitize/
# with -DVRAMTRACE_SANITIZE=SANITIZERS (default address,undefined; CMakeLists.txt: common, format,
# the analyzer, the doctor, the CLI and the unit tests are built with them, libvramtrace.so and
# what it links never are: it runs inside programs built without them), builds the CLI and the
# unit tests there, runs those unit tests, then runs ctest's command-line tests of BUILD_DIR
# (default build/, already built: e2e, doctor and golden) against the sanitized CLI
# (VRAMTRACE_TEST_CLI). Every finding is written to build-sanitize/finding.* (log_path, so test
# output stays undisturbed) and aborts the command; any such file fails this script. The preload
# library is BUILD_DIR's (build-sanitize/lib/libvramtrace.so links to it).
# Usage: tests/sanitizers.sh [BUILD_DIR] [SANITIZERS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sanitizers=${2:-address,undefined}
out=build-sanitize
jobs=${VT_SANITIZE_JOBS:-$(nproc)}
[ -x "$build/tests/e2e_tests" ] || { echo "sanitizers.sh: $build/tests/e2e_tests missing (build $build first)" >&2; exit 2; }
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Release -DVRAMTRACE_SANITIZE="$sanitizers" -DVRAMTRACE_BUILD_BENCH=OFF \
  "${launcher[@]}" >/dev/null
cmake --build "$out" -j"$jobs" --target vramtrace_cli unit_tests stack_index_tests
mkdir -p "$out/lib"
ln -sf "$(cd "$build/lib" && pwd)/libvramtrace.so" "$out/lib/libvramtrace.so"
rm -f "$out"/finding.*
log=$PWD/$out/finding
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$log
# verify_asan_link_order=0: some tests run the CLI with libvramtrace.so preloaded into it.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:verify_asan_link_order=0:log_path=$log
export LSAN_OPTIONS=log_path=$log:suppressions=$PWD/tests/lsan.supp  # (glibc's dlerror buffer: see the file)
rc=0
"$out/tests/unit_tests" >"$out/unit_tests.log" 2>&1 || { rc=$?; tail -40 "$out/unit_tests.log" >&2; }
"$out/tests/stack_index_tests" >"$out/stack_index_tests.log" 2>&1 || { rc=$?; tail -40 "$out/stack_index_tests.log" >&2; }
export VRAMTRACE_TEST_CLI=$PWD/$out/bin/vramtrace
(cd "$build" && ctest -j"$jobs" -R '^(e2e|doctor|golden):' --output-on-failure) || rc=$?
if ls "$out"/finding.* >/dev/null 2>&1; then
  echo "sanitizers.sh: findings ($sanitizers):" >&2
  cat "$out"/finding.* >&2
  exit 1
fi
[ "$rc" = 0 ] || { echo "sanitizers.sh: tests failed under $sanitizers (rc $rc)" >&2; exit "$rc"; }
echo "sanitizers ($sanitizers): the unit tests and the CLI tests passed against $VRAMTRACE_TEST_CLI, no finding"
