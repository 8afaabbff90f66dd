#!/usr/bin/env bash
# A job directory of RANKS traces of bench/gen_trace's mix (EVENTS each, RANK=0..RANKS-1), then
# `vramtrace report DIR --format json` timed with -j 1, -j 2 and -j $(nproc), in REPEAT rounds that
# run each -j once, one after another (outputs checked identical). Prints one line per -j: its
# median wall time and the median of its speedups over -j 1 in the same round. (Interleaved: a
# VM's speed drifts by 10-15% over seconds; timing all -j 1 runs first and all -j 2 runs later
# measured the drift as much as the threads.)
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
js="1 2"
[ "$(nproc)" -gt 2 ] && js="$js $(nproc)"
for _ in $(seq "$repeat"); do
  for j in $js; do
    s=$(date +%s.%N)
    "$build/bin/vramtrace" report "$work/job" --format json -j "$j" -o "$work/out.$j.json" 2>/dev/null
    e=$(date +%s.%N)
    echo "$j $s $e" >>"$work/times"
    cmp -s "$work/out.1.json" "$work/out.$j.json" || { echo "-j $j: output differs from -j 1"; exit 1; }
  done
done
python3 - "$work/times" "$ranks" "$events" "$js" <<'EOF'
import statistics, sys
times, ranks, events, js = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
runs = {j: [] for j in js}
for line in open(times):
    j, s, e = line.split()
    runs[j].append(float(e) - float(s))
for j in js:
    t = statistics.median(runs[j])
    speedup = statistics.median(a / b for a, b in zip(runs["1"], runs[j]))
    rounds = ", ".join(f"{a / b:.2f}" for a, b in zip(runs["1"], runs[j]))
    print(f"-j {j}: {t:.2f} s, {ranks * events / t / 1e6:.1f} M events/s, speedup {speedup:.2f}x"
          f" (median of {len(runs[j])} rounds: {rounds})")
EOF
