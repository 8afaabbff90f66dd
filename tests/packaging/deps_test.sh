#!/usr/bin/env bash
# scripts/deps.sh asks before using sudo, never runs it unasked where nobody can answer, and the
# demo's set has none of the test-only packages. Fakes id, dpkg, sudo and apt-get on PATH.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/bin"
cat > "$work/bin/id" <<'X'
#!/bin/sh
[ "$1" = -u ] && echo 1000 || /usr/bin/id "$@"
X
cat > "$work/bin/dpkg" <<'X'
#!/bin/sh
# Every package is installed except those named in $MISSING.
for m in $MISSING; do [ "$2" = "$m" ] && exit 1; done
exit 0
X
printf '#!/bin/sh\necho "sudo $*" >> "%s/calls"\n' "$work" > "$work/bin/sudo"
printf '#!/bin/sh\necho "apt-get $*" >> "%s/calls"\n' "$work" > "$work/bin/apt-get"
chmod +x "$work/bin"/*
run() {  # VT_DEPS MISSING [env...]: sources deps.sh with stdin not a terminal
  local deps=$1 missing=$2
  shift 2
  # The caller's own VRAMTRACE_DEPS_YES (.ci/run exports it) must not answer for the cases.
  env -u VRAMTRACE_DEPS_YES PATH="$work/bin:$PATH" MISSING="$missing" VT_DEPS="$deps" "$@" \
    bash -c "source '$repo/scripts/deps.sh'" </dev/null >"$work/out" 2>&1
}

# Not root, nobody to ask: no sudo, the command to run instead, exit 1.
rm -f "$work/calls"
run build cmake
[ $? -eq 1 ] || fail "expected exit 1 without a terminal to ask at"
[ ! -e "$work/calls" ] || fail "sudo/apt-get ran unasked: $(cat "$work/calls")"
grep -q "sudo apt-get install cmake" "$work/out" || fail "no command given: $(cat "$work/out")"
# VRAMTRACE_DEPS_YES=1 (CI): it installs, through sudo.
run build cmake VRAMTRACE_DEPS_YES=1
[ $? -eq 0 ] || fail "VRAMTRACE_DEPS_YES=1 should install: $(cat "$work/out")"
grep -q "sudo apt-get install -y -qq cmake" "$work/calls" || fail "no install: $(cat "$work/calls")"
# At a terminal: asked; "n" installs nothing.
rm -f "$work/calls"
printf 'n\n' | env -u VRAMTRACE_DEPS_YES PATH="$work/bin:$PATH" MISSING=cmake script -qec "bash -c \"source '$repo/scripts/deps.sh'\"" /dev/null >"$work/out" 2>&1
grep -q "install them with sudo apt-get? \[y/N\]" "$work/out" || fail "not asked: $(cat "$work/out")"
[ ! -e "$work/calls" ] || fail "installed after 'n': $(cat "$work/calls")"
# The demo's set (build) has no test-only package; the test set has them.
rm -f "$work/calls"
run build "chromium libclang-rt-14-dev clang python3-pytest tmux" VRAMTRACE_DEPS_YES=1
[ ! -e "$work/calls" ] || fail "the build set installs test-only packages: $(cat "$work/calls")"
run test "chromium libclang-rt-14-dev" VRAMTRACE_DEPS_YES=1
grep -q "install -y -qq libclang-rt-14-dev chromium" "$work/calls" || fail "the test set lacks the test packages: $(cat "$work/calls" 2>/dev/null)"
echo "PASS deps.sh: asks before sudo, never unasked; the demo installs no test-only package"
