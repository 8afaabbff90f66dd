#!/usr/bin/env bash
# The install tree works for a user of the query API: `cmake --install` into a temporary prefix,
# the prefix moved elsewhere (both the CMake package and the .pc file must be relocatable), then
# a tiny consumer (consumer/) built against it with CMake (find_package(vramtrace),
# vramtrace::api) and with pkg-config (vramtrace.pc), and run: alone (the API answers "not
# tracing") and under the installed `vramtrace run`, which must find the installed
# libvramtrace.so by itself. Usage: check.sh BUILD_DIR
set -uo pipefail
build=$(realpath "${1:?usage: check.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && tail -30 "$tmp/log"; exit 1; }

cmake --install "$build" --prefix "$tmp/staged" >"$tmp/log" 2>&1 || fail "cmake --install"
mv "$tmp/staged" "$tmp/prefix"
p=$tmp/prefix
[ -f "$p/include/vramtrace.h" ] || fail "include/vramtrace.h not installed"
[ -x "$p/bin/vramtrace" ] || fail "bin/vramtrace not installed"
lib=$(find "$p" -name libvramtrace.so | head -1)
[ -n "$lib" ] || fail "libvramtrace.so not installed"
pc=$(find "$p" -name vramtrace.pc | head -1)
[ -n "$pc" ] || fail "vramtrace.pc not installed"
[ -n "$(find "$p" -name vramtraceConfig.cmake)" ] || fail "vramtraceConfig.cmake not installed"

# CMake.
cmake -S "$here/consumer" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$p" >"$tmp/log" 2>&1 || fail "consumer: cmake configure"
cmake --build "$tmp/cmake-build" >"$tmp/log" 2>&1 || fail "consumer: cmake build"
# pkg-config.
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs vramtrace) || fail "pkg-config vramtrace"
inc=$(printf '%s\n' $flags | sed -n 's/^-I//p' | head -1)
[ -n "$inc" ] && [ "$(realpath "$inc")" = "$(realpath "$p/include")" ] ||
  fail "pkg-config --cflags does not point into the moved prefix: $flags"
cc "$here/consumer/consumer.c" $flags -o "$tmp/pc-consumer" >"$tmp/log" 2>&1 || fail "consumer: cc with pkg-config flags"

for c in "$tmp/cmake-build/consumer" "$tmp/pc-consumer"; do
  out=$("$c") || fail "$c failed"
  [ "$out" = "active=-1 version=3" ] || fail "$c alone printed '$out'"
  out=$(env -u VRAMTRACE_LIBRARY "$p/bin/vramtrace" run -o "$tmp/" -- "$c" 2>"$tmp/log") || fail "vramtrace run $c"
  [ "$out" = "active=1 version=3" ] || fail "$c under the installed vramtrace run printed '$out'"
done
echo "PASS: installed into a prefix, moved it; a consumer built with CMake and with pkg-config runs alone and under the installed vramtrace run"
