#!/usr/bin/env bash
# The pytest plugin on a small suite: under `vramtrace run` the test over its limit fails, the one
# under passes, --vram-report lists peaks and the trace has one region per test; without vramtrace
# the plugin says it is not active and enforces nothing. Usage: run.sh BUILD_DIR
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
grep -q "10.0 MiB  .*test_under_limit" "$out/log" || fail "--vram-report lacks test_under_limit's peak"
trace=$(ls "$out"/*.trace | head -1)
regions=$("$build/bin/vramtrace" report "$trace" --format json | $py -c 'import json,sys; print(" ".join(r["name"].split("::")[-1] for r in json.load(sys.stdin)["regions"]))')
[ "$regions" = "test_under_limit test_over_limit test_unmarked" ] || fail "regions in the trace: '$regions'"

$py -m pytest -p pytest_vramtrace -p no:cacheprovider -q "$here/suite" > "$out/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "without vramtrace the suite should pass (limits not enforced), got $rc"
grep -q "vramtrace: not active" "$out/log" || fail "no 'not active' notice without vramtrace"
rm -rf "$out"
echo "PASS pytest plugin: limit enforced under vramtrace, peaks reported, regions per test, inactive without it"
