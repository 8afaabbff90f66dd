#!/usr/bin/env bash
# The wheel as a user gets it:
#   - `pip wheel .` builds it offline under pip's build isolation with the system's python3 and no
#     setuptools or wheel package (the project's own backend, wheel/backend/), tagged
#     py3-none-manylinux_2_X_<machine>;
#   - the tag matches what the binaries really need, checked with binutils alone (binary_rules.sh),
#     and the carried libraries have names of their own;
#   - on an older glibc than the tag promises (Debian bullseye's 2.31) the CLI refuses to start for
#     the reason the tag gives, and on a newer one (trixie's 2.41) the CLI and libvramtrace.so work
#     (2.34 and 2.35 themselves: no Debian release has them; not tried);
#   - `pip install --no-index` puts it into a fresh venv; `vramtrace` and `python -m vramtrace` trace
#     a program on the simulated device and report it; the pytest plugin registers by its entry point;
#   - docs/ci.md's GitHub Actions recipe runs with it (ci_recipe_test.sh).
# Usage: wheel_test.sh BUILD_DIR (for the simulated driver and the test programs).
set -uo pipefail
build=$(realpath "${1:?usage: wheel_test.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/log" ] && tail -40 "$work/log"; exit 1; }
$py -m pip --version >/dev/null 2>&1 || fail "pip is needed for $py (apt-get install python3-pip)"
$py -m venv --help >/dev/null 2>&1 || fail "python3-venv is needed"

# The wheel, offline, with pip's build isolation (the backend sees no site-packages: no setuptools).
# Its portable CMake build lives in BUILD_DIR/wheel-build and is reused the next time.
export VRAMTRACE_WHEEL_BUILD_DIR=${VRAMTRACE_WHEEL_BUILD_DIR:-$build/wheel-build} CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
start=$(date +%s)
(cd "$repo" && PIP_NO_INDEX=1 $py -m pip wheel --no-deps -w "$work/dist" .) > "$work/log" 2>&1 || fail "pip wheel failed"
echo "pip wheel: $(($(date +%s) - start)) s (the CMake build in $VRAMTRACE_WHEEL_BUILD_DIR reused when there)"
whl=$(ls "$work"/dist/vramtrace-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || fail "no wheel in $work/dist"
[[ $(basename "$whl") =~ ^vramtrace-[0-9.]+-py3-none-(manylinux_2_[0-9]+_(x86_64|aarch64))\.whl$ ]] ||
  fail "unexpected wheel name: $(basename "$whl")"
tag=${BASH_REMATCH[1]}
[ "${BASH_REMATCH[2]}" = "$(uname -m)" ] || fail "$tag is not for this machine ($(uname -m))"
contents=$($py -m zipfile -l "$whl")
for f in vramtrace/bin/vramtrace vramtrace/lib/libvramtrace.so vramtrace/lib/libvramtrace_audit.so 'vramtrace/lib/libunwind-[0-9a-f]*.so.8' \
         'vramtrace/lib/liblzma-[0-9a-f]*.so.5' vramtrace/__main__.py pytest_vramtrace/__init__.py pytest_vramtrace/call_sites.py \
         'dist-info/entry_points.txt' 'dist-info/RECORD' 'dist-info/WHEEL'; do
  grep -q "$f" <<<"$contents" || fail "the wheel lacks $f"
done
! grep -qE 'vramtrace/lib/lib(unwind|lzma)\.so' <<<"$contents" || fail "a library is carried under its usual name"
[ ! -e "$repo/build-python" ] && ! ls -d "$repo"/*.egg-info >/dev/null 2>&1 || fail "the build wrote into the source tree"
grep -q "^Tag: py3-none-$tag$" <<<"$($py -c "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); print(z.read([n for n in z.namelist() if n.endswith('/WHEEL')][0]).decode())" "$whl")" ||
  fail "the WHEEL file's tag differs from the file name's"

grep -qF "pip install $(basename "$whl")" "$repo/README.md" || fail "README.md's quick start does not name this wheel ($(basename "$whl"))"

# The sdist (PEP 517's build_sdist): the tracked files and PKG-INFO, no build output.
$py -c "import sys; sys.path.insert(0, '$repo/wheel/backend'); import pep517_hooks; print(pep517_hooks.build_sdist('$work/sdist'))" \
  > "$work/log" 2>&1 || fail "build_sdist failed"
sdist=$work/sdist/$(tail -1 "$work/log")
listing=$($py -c "import sys, tarfile; print('\n'.join(tarfile.open(sys.argv[1]).getnames()))" "$sdist") || fail "the sdist is not a tar.gz"
for f in pyproject.toml PKG-INFO wheel/backend/pep517_hooks.py CMakeLists.txt interpose/stacks/unwinder_library.cpp; do
  grep -qx "vramtrace-[0-9.]*/$f" <<<"$listing" || fail "the sdist lacks $f"
done
! grep -qE '^vramtrace-[0-9.]*/(build|build-wheel|build-python)/' <<<"$listing" || fail "the sdist carries build output"

# The tag against the binaries' real needs.
mkdir "$work/unpacked" && (cd "$work/unpacked" && $py -m zipfile -e "$whl" .) || fail "cannot unpack the wheel"
"$here/binary_rules.sh" "$work/unpacked/vramtrace/bin/vramtrace" "$work/unpacked/vramtrace/lib" "$tag" || exit 1
# The backend's own rule refuses binaries that break the promise (the build fails).
$py "$here/elf_needs_test.py" "$work/unpacked" "$tag" "$build/bin/vramtrace" || exit 1

# A fresh venv (the system's pytest visible to it), the wheel installed without an index.
$py -m venv --system-site-packages "$work/venv" > "$work/log" 2>&1 || fail "venv creation failed"
"$work/venv/bin/python" -m pip install --no-index --no-deps "$whl" > "$work/log" 2>&1 || fail "pip install of the wheel failed"
vt="$work/venv/bin/vramtrace"
[ -x "$vt" ] || fail "no vramtrace on the venv's PATH"
v=$("$vt" --version) || fail "vramtrace --version failed"
[[ $v =~ ^vramtrace\ [0-9]+\.[0-9]+\.[0-9]+\ \(trace\ format ]] || fail "vramtrace --version: $v"
[ "$("$work/venv/bin/python" -m vramtrace --version)" = "$v" ] || fail "python -m vramtrace --version differs"
pkg=$("$work/venv/bin/python" -c "import vramtrace, os; print(os.path.dirname(vramtrace.__file__))")
[ -x "$pkg/bin/vramtrace" ] && [ -x "$pkg/lib/libvramtrace.so" ] || fail "pip lost the binaries' execute bits"

# Tracing from the installed package (not the build tree): its library, the simulated driver.
cd "$work"
export LD_LIBRARY_PATH="$build/lib/fakecuda" VRAMTRACE_KERNELS=0
"$vt" run -o "$work/traces/" -- "$build/tests/programs/lookup_direct" > "$work/log" 2>&1 || fail "vramtrace run failed"
grep -q "1 trace file" "$work/log" || fail "vramtrace run wrote no trace"
trace=$(ls "$work"/traces/*.trace | head -1)
"$work/venv/bin/python" -m vramtrace report "$trace" > "$work/log" 2>&1 || fail "python -m vramtrace report failed"
grep -q "^PEAK" "$work/log" || fail "the report has no PEAK section"
# Native stacks came through the carried libunwind: no note says they were off ...
! grep -q "native stacks off" "$work/log" || fail "the installed library could not open its libunwind: $(grep "native stacks off" "$work/log")"
# ... which one does when the copy is missing: the program runs on, its trace says why.
cp -r "$pkg/lib" "$work/lib-without-unwind" && rm "$work"/lib-without-unwind/libunwind-*
VRAMTRACE_OUTPUT="$work/nounwind.trace" LD_PRELOAD="$work/lib-without-unwind/libvramtrace.so" "$build/tests/programs/lookup_direct" > "$work/log" 2>&1 ||
  fail "without its libunwind the traced program failed"
grep -q "vramtrace: native stacks off: cannot open libunwind-" "$work/log" || fail "no line said native stacks were off"
"$vt" report "$work/nounwind.trace" > "$work/log" 2>&1 || fail "the report of a trace without stacks failed"
grep -q "note: the recorder: native stacks off" "$work/log" || fail "the trace does not say native stacks were off"
# It preloaded the package's own library.
"$vt" run -o "$work/t2/" -- sh -c 'echo "$LD_PRELOAD"' > "$work/log" 2>&1
grep -q "^$pkg/lib/libvramtrace.so" "$work/log" || fail "run did not preload the package's library: $(head -1 "$work/log")"
# A Python program under python -m vramtrace run.
"$work/venv/bin/python" -m vramtrace run -o "$work/t3/" -- "$work/venv/bin/python" -c \
  "import ctypes; c = ctypes.CDLL('libcuda.so.1'); c.cuInit(0); d = ctypes.c_int(); x = ctypes.c_void_p(); c.cuDeviceGet(ctypes.byref(d), 0); c.cuDevicePrimaryCtxRetain(ctypes.byref(x), d); c.cuCtxSetCurrent(x); p = ctypes.c_uint64(); assert c.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0" \
  > "$work/log" 2>&1 || fail "python -m vramtrace run -- python failed"
grep -q "1 trace file" "$work/log" || fail "python -m vramtrace run wrote no trace"

# The pytest plugin, registered by its entry point (no -p).
"$work/venv/bin/python" -c "import pytest" 2>/dev/null || fail "pytest is not importable in the venv (apt-get install python3-pytest)"
"$work/venv/bin/python" -m pytest --markers > "$work/log" 2>&1 || fail "pytest --markers failed"
grep -q "@pytest.mark.limit_vram" "$work/log" || fail "the plugin is not registered (no limit_vram marker)"
"$work/venv/bin/python" -m pytest --help > "$work/log" 2>&1
grep -q -- "--vram-report" "$work/log" || fail "the plugin's --vram-report option is missing"

# docs/ci.md's GitHub Actions recipe with this wheel.
unset VRAMTRACE_OUTPUT
"$here/ci_recipe_test.sh" "$whl" "$build" "$repo" || exit 1

# Other glibc versions, each started with its own loader (tests/packaging/debian_libc.sh).
if old=$("$here/debian_libc.sh" bullseye 2>"$work/log"); then
  "$old/ld-linux-x86-64.so.2" --library-path "$old" "$pkg/bin/vramtrace" --version > "$work/log" 2>&1 &&
    fail "the CLI started on glibc 2.31, below the tag's $tag: the tag promises too much"
  grep -q "GLIBC_2\.3[2-9]' not found\|GLIBC_2\.[4-9][0-9]' not found" "$work/log" || fail "on glibc 2.31 the CLI failed for another reason: $(head -2 "$work/log")"
  echo "glibc 2.31 (bullseye): refused as the tag says ($(grep -o "GLIBC_2\.[0-9]*' not found" "$work/log" | head -1))"
else
  echo "glibc 2.31 (bullseye): not tried: $(cat "$work/log")"
fi
if new=$("$here/debian_libc.sh" trixie 2>"$work/log"); then
  run_on() { "$new/ld-linux-x86-64.so.2" --library-path "$new:$build/lib/fakecuda:/usr/lib/$(uname -m)-linux-gnu" "$@"; }
  [ "$(run_on "$pkg/bin/vramtrace" --version)" = "$v" ] || fail "the CLI does not run on glibc 2.41"
  VRAMTRACE_OUTPUT="$work/t4.trace" run_on --preload "$pkg/lib/libvramtrace.so" "$build/tests/programs/lookup_direct" > "$work/log" 2>&1 ||
    fail "a program traced by the wheel's library on glibc 2.41 failed"
  run_on "$pkg/bin/vramtrace" report "$work/t4.trace" > "$work/log" 2>&1 || fail "the CLI on glibc 2.41 cannot report the trace"
  grep -q "^PEAK" "$work/log" || fail "the report on glibc 2.41 has no PEAK section"
  echo "glibc 2.41 (trixie): the CLI and libvramtrace.so run"
else
  echo "glibc 2.41 (trixie): not tried: $(cat "$work/log")"
fi
echo "PASS wheel $tag: built offline under build isolation, its tag matches the binaries, installs in a venv, traces and reports, plugin registered"
