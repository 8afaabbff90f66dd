#!/usr/bin/env bash
# The pytest plugin on a small suite: under `vramtrace run` the test over its limit fails, the one
# under passes, --vram-report lists peaks and the trace has one region per test; without vramtrace
# the plugin says it is not active and enforces nothing; a failure names its call sites; nothing
# lands in a test's captured teardown;
# a malformed marker is pytest's usage error before any test runs. Usage: run.sh BUILD_DIR
set -uo pipefail
build=$(realpath "${1:?usage: run.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
$py -c "import pytest" 2>/dev/null || { echo "FAIL: pytest is not installed for $py (apt-get install python3-pytest)"; exit 1; }
export PYTHONPATH="$here/../../pytest_plugin" LD_LIBRARY_PATH="$build/lib/fakecuda" PYTHONDONTWRITEBYTECODE=1
out=$(mktemp -d)
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out/log"; exit 1; }

"$build/bin/vramtrace" run -o "$out" -- $py -m pytest -p pytest_vramtrace -p no:cacheprovider --vram-report -q "$here/suite" > "$out/log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "expected pytest to exit 1 (one failure), got $rc"
grep -q "1 failed, 2 passed" "$out/log" || fail "expected '1 failed, 2 passed'"
grep -q "peak GPU memory 200 MiB (209715200 bytes) exceeds limit_vram 100 MiB (104857600 bytes)" "$out/log" || fail "no limit message"
grep -q "FAILED .*test_over_limit" "$out/log" || fail "test_over_limit did not fail"
# The failure names the call sites that held the memory at the test's peak, Python lines first.
grep -q "largest holders of device memory at the test's peak (vramtrace):" "$out/log" || fail "no call sites in the failure"
grep -qE "^ +200 MiB in 1 allocation: alloc_and_free \(test_memory.py:[0-9]+\) < test_over_limit \(test_memory.py:[0-9]+\)$" "$out/log" ||
  fail "the failure does not name alloc_and_free < test_over_limit"
grep -q "10.0 MiB  .*test_under_limit" "$out/log" || fail "--vram-report lacks test_under_limit's peak"
# The limit fails the test's call phase like an assertion: no output lands in its teardown.
"$build/bin/vramtrace" run -o "$out/ra/" -- $py -m pytest -p pytest_vramtrace -p no:cacheprovider -rA "$here/suite" > "$out/log" 2>&1
grep -q "Captured .* teardown" "$out/log" && fail "stray output captured in a teardown"
grep -q "1 failed, 2 passed" "$out/log" || fail "-rA: expected '1 failed, 2 passed'"

# A malformed marker is pytest's usage error (exit 4) naming the test, before anything runs.
for suite in bad_marker no_argument; do
  "$build/bin/vramtrace" run -o "$out/$suite/" -- $py -m pytest -p pytest_vramtrace -p no:cacheprovider -q "$here/$suite" > "$out/log" 2>&1
  rc=$?
  [ $rc -eq 4 ] || fail "$suite: expected pytest's usage error (exit 4), got $rc"
  grep -q "Traceback\|pytest_vramtrace/__init__.py" "$out/log" && fail "$suite: a traceback from the plugin"
  grep -q "passed" "$out/log" && fail "$suite: tests ran despite the bad marker"
done
grep -q "ERROR: .*test_no_argument.py::test_no_size: limit_vram takes one size" "$out/log" || fail "no_argument: no usage line"
$py -m pytest -p pytest_vramtrace -p no:cacheprovider -q "$here/bad_marker" > "$out/log" 2>&1
[ $? -eq 4 ] || fail "bad_marker without vramtrace: expected exit 4"
grep -q "ERROR: .*test_bad_marker.py::test_bad_size: limit_vram: 'lots' is not a size" "$out/log" || fail "bad_marker: no usage line"

trace=$(ls "$out"/*.trace | head -1)
regions=$("$build/bin/vramtrace" report "$trace" --format json | $py -c 'import json,sys; print(" ".join(r["name"].split("::")[-1] for r in json.load(sys.stdin)["regions"]))')
[ "$regions" = "test_under_limit test_over_limit test_unmarked" ] || fail "regions in the trace: '$regions'"

$py -m pytest -p pytest_vramtrace -p no:cacheprovider -q "$here/suite" > "$out/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "without vramtrace the suite should pass (limits not enforced), got $rc"
grep -q "vramtrace: not active" "$out/log" || fail "no 'not active' notice without vramtrace"
# A suite without limits, run without vramtrace: the plugin says nothing (it loads in every run once installed).
$py -m pytest -p pytest_vramtrace -p no:cacheprovider -q "$here/no_limits" > "$out/log" 2>&1
[ $? -eq 0 ] || fail "no_limits: expected exit 0"
grep -q "vramtrace" "$out/log" && fail "no_limits: the plugin spoke without being asked"
rm -rf "$out"
echo "PASS pytest plugin: limit enforced under vramtrace, peaks reported, regions per test, inactive without it"
