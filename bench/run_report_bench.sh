#!/usr/bin/env bash
# The analysis throughput target (issue 4: >= 10 M events/s per core, < 1 GiB resident): runs the
# full `vramtrace report --format json` over a generated trace REPS times and prints each run's
# CPU time (user + sys: the analysis is single-threaded, so this is time on one core), events/s
# per core and max RSS, then the best and the median. Shared machines are noisy: trust the best
# and the median together, not one run.
# Usage: bench/run_report_bench.sh [EVENTS | TRACE] [BUILD_DIR]   (defaults: 50000000, build)
#   EVENTS generates a trace with bench/gen_trace in a temporary directory (deleted afterwards);
#   an existing TRACE file is used as it is.
# Environment: REPS (default 5), TMPDIR (where a generated trace goes; ~12.5 bytes per event).
set -euo pipefail
arg=${1:-50000000}
build=${2:-build}
reps=${REPS:-5}
cli=$build/bin/vramtrace
gen=$build/bench/gen_trace
[ -x "$cli" ] || { echo "run_report_bench.sh: $cli missing (build the vramtrace_cli target)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "run_report_bench.sh: /usr/bin/time missing (Debian: time)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/vt-report-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
if [ -f "$arg" ]; then
  trace=$arg
else
  [ -x "$gen" ] || { echo "run_report_bench.sh: $gen missing (build the gen_trace target)" >&2; exit 2; }
  trace=$dir/synthetic.vt
  echo "== generating $arg events into $trace"
  "$gen" "$trace" "$arg"
fi
events=$("$cli" info "$trace" | sed -n 's/^  "events": *\([0-9]*\).*/\1/p')
[ -n "$events" ] && [ "$events" -gt 0 ] || { echo "run_report_bench.sh: cannot count the events of $trace" >&2; exit 2; }

echo "== vramtrace report --format json, $reps run(s); $events events, $(du -m "$trace" | cut -f1) MiB trace, $(nproc) CPUs, $(uname -r)"
printf '%-4s %9s %9s %9s %14s %12s\n' run user_s sys_s cpu_s "M events/s" "max RSS MiB"
rates=()
for ((i = 1; i <= reps; ++i)); do
  /usr/bin/time -f '%U %S %M' -o "$dir/time" "$cli" report "$trace" --format json -o "$dir/report.json"
  read -r user sys rss_kib <"$dir/time"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
  awk -v c="$cpu" 'BEGIN {exit !(c > 0)}' || { echo "run_report_bench.sh: run $i took no measurable CPU time ('$user' '$sys')" >&2; exit 1; }
  rate=$(awk -v e="$events" -v c="$cpu" 'BEGIN {printf "%.2f", e / c / 1e6}')
  rates+=("$rate")
  printf '%-4s %9s %9s %9s %14s %12s\n' "$i" "$user" "$sys" "$cpu" "$rate" "$((rss_kib / 1024))"
done
sorted=$(printf '%s\n' "${rates[@]}" | sort -g)
best=$(tail -1 <<<"$sorted")
median=$(sed -n "$(((reps + 1) / 2))p" <<<"$sorted")
echo "best $best M events/s per core, median $median (target >= 10)"
