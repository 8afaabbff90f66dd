#!/usr/bin/env bash
# PyTorch's newest release in Debian (sid's libtorch2.14, a CPU build) still exports the functions
# vramtrace interposes, under the very names libvramtrace.so exports them, and libtorch_python still
# calls Engine::execute by name (the binding the backward hook relies on):
#   c10::reportMemoryUsageToProfiler, c10::reportOutOfMemoryToProfiler   libc10.so
#   torch::autograd::Engine::execute                                     libtorch_cpu.so (defined),
#                                                                        libtorch_python.so (imported)
#   tests/realtorch/newest_exports.sh BUILD
# Exit 77 (skip) when sid cannot be reached, unless VRAMTRACE_REQUIRE_REAL_TORCH=1 (then 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: newest_exports.sh BUILD}" && pwd)
set +e
dir=$("$here/fetch.sh" --newest)
rc=$?
set -e
if ((rc == 3)); then
  [[ ${VRAMTRACE_REQUIRE_REAL_TORCH:-} == 1 ]] && { echo "newest_exports: FAILED: sid's libtorch could not be fetched (VRAMTRACE_REQUIRE_REAL_TORCH=1)" >&2; exit 1; }
  echo "newest_exports: SKIPPED: sid's libtorch could not be fetched" >&2
  exit 77
fi
((rc == 0)) || exit 1
echo "newest_exports: $(cat "${dir%/usr/lib/x86_64-linux-gnu}/version.txt" 2>/dev/null)"
ours=$(nm -D --defined-only "$build/lib/libvramtrace.so" | awk '$3 ~ /^_ZN3c10|^_ZN5torch/ {print $3}' | sort)
[[ $(wc -l <<<"$ours") -eq 3 ]] || { echo "newest_exports: FAILED: libvramtrace.so should export 3 PyTorch names, found: $ours" >&2; exit 1; }
fail=0
check() {  # check LIBRARY KIND NAME
  local lib=$(ls "$dir"/$1.so.* 2>/dev/null | head -n 1)
  if [[ -z $lib ]]; then echo "FAIL $1: not in the package" >&2; fail=1; return; fi
  local names
  names=$(nm -D "$2" "$lib" | awk '{print $NF}')  # (not piped into grep -q: pipefail would see nm's SIGPIPE)
  if grep -qxF "$3" <<<"$names"; then
    echo "ok   $(basename "$lib") $([[ $2 == --defined-only ]] && echo exports || echo imports) $3"
  else
    echo "FAIL $(basename "$lib") does not $([[ $2 == --defined-only ]] && echo export || echo import) $3" >&2; fail=1
  fi
}
for name in $ours; do
  case $name in
    _ZN3c10*) check libc10 --defined-only "$name" ;;
    _ZN5torch*) check libtorch_cpu --defined-only "$name"; check libtorch_python --undefined-only "$name" ;;
  esac
done
exit $fail
