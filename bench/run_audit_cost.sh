#!/usr/bin/env bash
# What the optional LD_AUDIT module (interpose/entry/audit_module.cpp) costs, in instructions
# (callgrind, independent of load): (1) per hooked event, bench/run_hook_instructions.sh with and
# without LD_AUDIT=libvramtrace_audit.so (glibc asks the module only when a symbol is bound, so
# the hook path itself should not change); (2) at binding time, a Python start that imports eight
# extension modules (each binding of theirs to libc is shown to the module once), with and
# without it. docs/PERFORMANCE.md, "The LD_AUDIT module". Usage: bench/run_audit_cost.sh [BUILD_DIR]
set -euo pipefail
build=$(realpath "${1:-build}")
here=$(cd "$(dirname "$0")" && pwd)
audit=$build/lib/libvramtrace_audit.so
[ -f "$audit" ] || { echo "run_audit_cost: $audit missing (build first)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "run_audit_cost: valgrind is not installed" >&2; exit 2; }
echo "== hook path, without the module"
"$here/run_hook_instructions.sh" "$build"
echo "== hook path, with LD_AUDIT=$audit"
LD_AUDIT=$audit "$here/run_hook_instructions.sh" "$build"
py=$(python3 -c 'import sys; print(sys.executable)')
script="import json, decimal, sqlite3, ctypes, ssl, hashlib, lzma, bz2"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out/none" "$py" -c "$script" 2>/dev/null
LD_AUDIT=$audit valgrind --tool=callgrind --callgrind-out-file="$out/audit" "$py" -c "$script" 2>/dev/null
none=$(sed -n 's/^summary: //p' "$out/none")
with=$(sed -n 's/^summary: //p' "$out/audit")
python3 -c "import sys; n, a = int(sys.argv[1]), int(sys.argv[2]); print('== python start (%s): %d instructions without the module, %d with (+%d, +%.2f%%)' % (sys.argv[3], n, a, a - n, 100.0 * (a - n) / n))" "$none" "$with" "$py"
