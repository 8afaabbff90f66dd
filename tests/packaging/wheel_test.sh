#!/usr/bin/env bash
# `pip wheel --no-build-isolation .` at the repository root builds the vramtrace wheel offline
# (Debian's setuptools and wheel, no package index); it installs into a fresh venv, whose
# `vramtrace` and `python -m vramtrace` trace a program on the simulated device and report it;
# the pytest plugin registers through its entry point; the shipped binaries need only glibc
# (ldd_check.sh). Usage: wheel_test.sh BUILD_DIR (for the simulated driver and a test program).
set -uo pipefail
build=$(realpath "${1:?usage: wheel_test.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/log" ] && tail -40 "$work/log"; exit 1; }
$py -c "import setuptools, wheel" 2>/dev/null || fail "setuptools and wheel are needed for $py (apt-get install python3-setuptools python3-wheel)"
$py -m pip --version >/dev/null 2>&1 || fail "pip is needed for $py (apt-get install python3-pip)"
$py -m venv --help >/dev/null 2>&1 || fail "python3-venv is needed"

# The wheel, built offline: no index, no build isolation (the backend comes from the system).
# setup.py configures a portable CMake build of its own (VRAMTRACE_PORTABLE=ON; the ctest build
# is not) in BUILD_DIR/wheel-build, as `pip install .` does in build-wheel/, and reuses it the
# next time (only its two targets are rebuilt).
export VRAMTRACE_WHEEL_BUILD_DIR=${VRAMTRACE_WHEEL_BUILD_DIR:-$build/wheel-build} CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
(cd "$repo" && PIP_NO_INDEX=1 $py -m pip wheel --no-build-isolation --no-deps -w "$work/dist" .) > "$work/log" 2>&1 ||
  fail "pip wheel failed"
whl=$(ls "$work"/dist/vramtrace-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || fail "no wheel in $work/dist"
case $(basename "$whl") in *-py3-none-linux_x86_64.whl) ;; *) fail "unexpected wheel tag: $(basename "$whl")" ;; esac
contents=$($py -m zipfile -l "$whl")
for f in vramtrace/bin/vramtrace vramtrace/lib/libvramtrace.so vramtrace/lib/libvramtrace_audit.so vramtrace/__main__.py pytest_vramtrace/__init__.py \
         pytest_vramtrace/call_sites.py entry_points.txt; do
  grep -q "$f" <<<"$contents" || fail "the wheel lacks $f"
done
rm -rf "$repo/vramtrace.egg-info"  # setuptools leaves it in the source tree
wb=$VRAMTRACE_WHEEL_BUILD_DIR
[ ! -e "$wb/lib/vramtrace" ] && [ ! -e "$wb/bdist.linux-x86_64" ] || fail "setuptools wrote into the CMake build folder"

# A fresh venv (the system's pytest visible to it), the wheel installed without an index.
$py -m venv --system-site-packages "$work/venv" > "$work/log" 2>&1 || fail "venv creation failed"
"$work/venv/bin/python" -m pip install --no-index --no-deps "$whl" > "$work/log" 2>&1 || fail "pip install of the wheel failed"
vt="$work/venv/bin/vramtrace"
[ -x "$vt" ] || fail "no vramtrace on the venv's PATH"
v=$("$vt" --version) || fail "vramtrace --version failed"
[[ $v =~ ^vramtrace\ [0-9]+\.[0-9]+\.[0-9]+\ \(trace\ format ]] || fail "vramtrace --version: $v"
[ "$("$work/venv/bin/python" -m vramtrace --version)" = "$v" ] || fail "python -m vramtrace --version differs"
pkg=$("$work/venv/bin/python" -c "import vramtrace, os; print(os.path.dirname(vramtrace.__file__))")

# Tracing from the installed package (not the build tree): its library, the simulated driver.
cd "$work"
export LD_LIBRARY_PATH="$build/lib/fakecuda" VRAMTRACE_KERNELS=0
"$vt" run -o "$work/traces/" -- "$build/tests/programs/lookup_direct" > "$work/log" 2>&1 || fail "vramtrace run failed"
grep -q "1 trace file" "$work/log" || fail "vramtrace run wrote no trace"
trace=$(ls "$work"/traces/*.trace | head -1)
"$work/venv/bin/python" -m vramtrace report "$trace" > "$work/log" 2>&1 || fail "python -m vramtrace report failed"
grep -q "^PEAK" "$work/log" || fail "the report has no PEAK section"
# It preloaded the package's own library.
"$vt" run -o "$work/t2/" -- sh -c 'echo "$LD_PRELOAD"' > "$work/log" 2>&1
grep -q "^$pkg/lib/libvramtrace.so" "$work/log" || fail "run did not preload the package's library: $(head -1 "$work/log")"
# A Python program under python -m vramtrace run.
"$work/venv/bin/python" -m vramtrace run -o "$work/t3/" -- "$work/venv/bin/python" -c \
  "import ctypes; c = ctypes.CDLL('libcuda.so.1'); c.cuInit(0); d = ctypes.c_int(); x = ctypes.c_void_p(); c.cuDeviceGet(ctypes.byref(d), 0); c.cuDevicePrimaryCtxRetain(ctypes.byref(x), d); c.cuCtxSetCurrent(x); p = ctypes.c_uint64(); assert c.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0" \
  > "$work/log" 2>&1 || fail "python -m vramtrace run -- python failed"
grep -q "1 trace file" "$work/log" || fail "python -m vramtrace run wrote no trace"

# The pytest plugin, registered by its entry point (no -p).
if "$work/venv/bin/python" -c "import pytest" 2>/dev/null; then
  "$work/venv/bin/python" -m pytest --markers > "$work/log" 2>&1 || fail "pytest --markers failed"
  grep -q "@pytest.mark.limit_vram" "$work/log" || fail "the plugin is not registered (no limit_vram marker)"
  "$work/venv/bin/python" -m pytest --help > "$work/log" 2>&1
  grep -q -- "--vram-report" "$work/log" || fail "the plugin's --vram-report option is missing"
else
  fail "pytest is not importable in the venv (apt-get install python3-pytest)"
fi

# What the wheel ships depends on glibc alone.
"$here/ldd_check.sh" "$pkg/bin/vramtrace" "$pkg/lib/libvramtrace.so" || exit 1
"$here/ldd_check.sh" "$pkg/bin/vramtrace" "$pkg/lib/libvramtrace_audit.so" || exit 1
echo "PASS wheel: built offline, installed in a venv, traces and reports from there, plugin registered, glibc-only binaries"
