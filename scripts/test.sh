#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test: ctest (unit,
# end-to-end against the simulated driver, the simulated driver's self-test, the install tree) and
# the Python suites for each CPython 3.10-3.15 found (3.14/3.15 unpacked from Debian's newer suites
# by scripts/debian-python.sh when not installed; tests/python/pythons.sh prints which were tested
# and which skipped, and why), the unit tests and the command-line tests once more under
# AddressSanitizer + UndefinedBehaviorSanitizer (tests/sanitizers.sh), and the kept fuzz corpus
# under ASan+UBSan with libFuzzer. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VT_DEPS=test source scripts/deps.sh  # the test-only packages too
scripts/build.sh -DVRAMTRACE_WERROR=ON
cd build
ctest --output-on-failure -j"$(nproc)"
cd ..
# The unit and command-line tests again, everything but libvramtrace.so sanitized (build-sanitize/).
tests/sanitizers.sh build
# The kept fuzz corpus under ASan+UBSan (clang); timed fuzzing when VRAMTRACE_FUZZ_SECONDS is set.
if command -v clang++ >/dev/null; then
  tests/fuzz/run_fuzz.sh --replay
  if [ -n "${VRAMTRACE_FUZZ_SECONDS:-}" ]; then tests/fuzz/run_fuzz.sh "$VRAMTRACE_FUZZ_SECONDS"; fi
fi
