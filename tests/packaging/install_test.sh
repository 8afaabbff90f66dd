#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the CLI, the library, the header, the man page
# (renders with man), the bash and zsh completions, the pytest plugin with its entry point; the
# installed CLI traces a program with the installed library, and pytest loads the installed
# plugin without -p. Usage: install_test.sh BUILD_DIR
set -uo pipefail
build=$(realpath "${1:?usage: install_test.sh BUILD_DIR}")
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$prefix" > "$prefix/.log" 2>&1 || { cat "$prefix/.log"; fail "cmake --install failed"; }
for f in bin/vramtrace lib/libvramtrace.so lib/libvramtrace_audit.so include/vramtrace.h lib/pkgconfig/vramtrace.pc share/man/man1/vramtrace.1 \
         share/bash-completion/completions/vramtrace share/zsh/site-functions/_vramtrace; do
  [ -s "$prefix/$f" ] || fail "$f is not installed"
done
page=$(MANWIDTH=100 man -l "$prefix/share/man/man1/vramtrace.1" 2>&1) || fail "the installed man page does not render"
grep -q "vramtrace run \[OPTIONS\] \[--\] CMD ARGS" <<<"$page" || fail "the installed man page lacks run"
bash --norc -c "source '$prefix/share/bash-completion/completions/vramtrace' && complete -p vramtrace" >/dev/null ||
  fail "the installed bash completion does not load"
site=$(cd "$prefix" && ls -d lib/python3*/site-packages 2>/dev/null | head -1)
[ -n "$site" ] || fail "the pytest plugin is not installed under lib/python3*/site-packages"
[ -f "$prefix/$site/pytest_vramtrace/__init__.py" ] || fail "pytest_vramtrace is not installed"
grep -q "vramtrace = pytest_vramtrace" "$prefix/$site"/pytest_vramtrace-*.dist-info/entry_points.txt ||
  fail "the plugin's entry point is not installed"
# The installed CLI uses the installed library.
out=$(cd "$prefix" && LD_LIBRARY_PATH="$build/lib/fakecuda" VRAMTRACE_KERNELS=0 \
      "$prefix/bin/vramtrace" run -o "$prefix/traces/" -- sh -c 'echo "$LD_PRELOAD"; exec '"$build"'/tests/programs/lookup_direct' 2>&1)
grep -q "^$(realpath "$prefix")/lib/libvramtrace.so" <<<"$out" || fail "the installed CLI did not preload the installed library: $out"
grep -q "1 trace file" <<<"$out" || fail "no trace from the installed CLI: $out"
# pytest finds the installed plugin through its entry point.
if /usr/bin/python3 -c "import pytest" 2>/dev/null; then
  # (Output captured first: grep -q closing the pipe early would SIGPIPE pytest and, with
  # pipefail, fail the check whenever pytest was still writing.)
  markers=$(PYTHONPATH="$prefix/$site" /usr/bin/python3 -m pytest --markers -p no:cacheprovider 2>&1)
  grep -q "@pytest.mark.limit_vram" <<<"$markers" || fail "pytest did not load the installed plugin: $(tail -3 <<<"$markers")"
fi
echo "PASS install: CLI, library, header, man page, completions and the pytest plugin; the installed CLI traces"
