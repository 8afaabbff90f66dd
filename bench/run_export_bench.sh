#!/usr/bin/env bash
# `vramtrace export --perfetto` against `vramtrace report` on bench/gen_trace's mix: for each
# event count, the trace is generated, then the export and the JSON report are timed with
# /usr/bin/time (wall, user, max RSS; best of REPEAT), and the export's size per trace event
# printed. Instruction counts (noise-free): run the two commands under valgrind --tool=callgrind.
# Usage: bench/run_export_bench.sh BUILD_DIR [EVENTS...]   (default 1000000 10000000; REPEAT=3)
set -euo pipefail
build=$(cd "${1:?usage: run_export_bench.sh BUILD_DIR [EVENTS...]}" && pwd)
shift
counts=("${@:-1000000 10000000}")
[ $# -gt 0 ] || counts=(1000000 10000000)
repeat=${REPEAT:-3}
work=$(mktemp -d /tmp/vramtrace-exportbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
vt=$build/bin/vramtrace
best() {  # best "wall user rss" of $repeat runs of the command
  local b= line
  for _ in $(seq "$repeat"); do
    line=$(/usr/bin/time -f "%e %U %M" "$@" 2>&1 >/dev/null | tail -1)
    if [ -z "$b" ] || python3 -c "import sys; sys.exit(0 if float('${line%% *}') < float('${b%% *}') else 1)"; then b=$line; fi
  done
  echo "$b"
}
for n in "${counts[@]}"; do
  "$build/bench/gen_trace" "$work/t.trace" "$n" >/dev/null 2>&1
  read -r ew eu er <<<"$(best "$vt" export --perfetto "$work/t.json" "$work/t.trace")"
  read -r rw ru rr <<<"$(best "$vt" report "$work/t.trace" --format json -o "$work/r.json")"
  bytes=$(stat -c %s "$work/t.json")
  python3 -c "print(f'$n events: export {$ew} s wall {$eu} s user {$er} KB, {$bytes/1e6:.1f} MB ({$bytes/$n:.2f} B/event); report {$rw} s wall {$ru} s user {$rr} KB')"
done
