#!/usr/bin/env bash
# A job directory of RANKS traces of bench/gen_trace's mix (EVENTS each, RANK=0..RANKS-1), then
# `vramtrace report DIR --format json` timed with -j 1, -j 2 and -j $(nproc) (best of REPEAT wall
# times each; outputs checked identical). Prints one line per -j with the speedup over -j 1.
# Usage: bench/run_job_bench.sh BUILD_DIR [RANKS] [EVENTS] [REPEAT]   (default 16 500000 3)
set -euo pipefail
build=$(cd "${1:?usage: run_job_bench.sh BUILD_DIR [RANKS] [EVENTS] [REPEAT]}" && pwd)
ranks=${2:-16} events=${3:-500000} repeat=${4:-3}
work=$(mktemp -d /tmp/vramtrace-jobbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/job"
for r in $(seq 0 $((ranks - 1))); do
  RANK=$r "$build/bench/gen_trace" "$work/job/rank$r.trace" "$events" >/dev/null 2>&1
done
echo "job: $ranks ranks x $events events ($(du -sh "$work/job" | cut -f1)), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
best() {  # best wall seconds of $repeat runs of report -j $1
  local b=
  for _ in $(seq "$repeat"); do
    local s e
    s=$(date +%s.%N)
    "$build/bin/vramtrace" report "$work/job" --format json -j "$1" -o "$work/out.$1.json" 2>/dev/null
    e=$(date +%s.%N)
    b=$(python3 -c "import sys; t=$e-$s; b='$b'; print(min(t, float(b)) if b else t)")
  done
  echo "$b"
}
t1=$(best 1)
for j in 1 2 $(nproc); do
  t=$([ "$j" = 1 ] && echo "$t1" || best "$j")
  cmp -s "$work/out.1.json" "$work/out.$j.json" || { echo "-j $j: output differs from -j 1"; exit 1; }
  python3 -c "print(f'-j $j: {$t:.2f} s, {$ranks * $events / $t / 1e6:.1f} M events/s, speedup {$t1 / $t:.2f}x')"
done
