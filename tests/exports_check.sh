#!/usr/bin/env bash
# The preload library's exports (interpose/entry/exports.map: dlsym, dlvsym, dlopen, dlmopen, dl_iterate_phdr, the cu*
# driver hooks, the CUPTI wrappers, InitializeInjectionNvtx2, the vramtrace_* query API, PyTorch's hooks) are defined in libvramtrace.so
# and nowhere else: a test binary or the CLI defining one would interpose on the process's own
# dlsym or driver calls. Usage: exports_check.sh LIBVRAMTRACE BINARY...
set -uo pipefail
lib=${1:?usage: exports_check.sh LIBVRAMTRACE BINARY...}
shift
# The names come from the map itself (its global section; a glob such as cu* becomes a pattern).
set -f  # (the globs are the map's, never file names)
map=$(dirname "$0")/../interpose/entry/exports.map
names=$(sed -n '/global:/,/local:/p' "$map" | sed 's|/\*.*\*/||' | tr -d ' \t;' | grep -vE '^(global:|local:|)$')
pattern="^($(printf '%s\n' $names | sed 's/\*$/[A-Za-z0-9_]*/' | paste -sd'|'))$"
exported() { nm --defined-only "$1" | awk '$2 ~ /^[TtWw]$/ {print $3}' | grep -E "$pattern" | sort -u; }
# The check must be able to fail: the library itself defines them.
n=$(exported "$lib" | wc -l)
if [ "$n" -lt 10 ]; then echo "FAIL: $lib defines only $n of the exported names (the pattern is wrong)"; exit 1; fi
fail=0
for b in "$@"; do
  found=$(exported "$b" | head -5 | tr '\n' ' ')
  if [ -n "$found" ]; then echo "FAIL: $b defines $found"; fail=1; fi
done
# The library takes nothing from libstdc++ (the wheel and the GPU stage carry none for it): a
# function-local static's guard or an exception would import CXXABI/GLIBCXX symbols.
cxx=$(nm -D --undefined-only "$lib" | grep -E '@(CXXABI|GLIBCXX)_' | head -3 | tr '\n' ' ')
if [ -n "$cxx" ]; then echo "FAIL: $lib imports from libstdc++: $cxx"; fail=1; fi
[ "$fail" = 0 ] && echo "PASS: none of $# binaries defines a name libvramtrace.so exports ($n names); it imports nothing from libstdc++"
exit "$fail"
