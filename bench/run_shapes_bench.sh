#!/usr/bin/env bash
# Issue 16's two analysis shapes: `vramtrace report --format json` over traces from bench/gen_shapes
# where (a) every event has a new 24-frame stack (1 M and 5 M events) and (b) 1 M and 2 M
# allocations are live at once (5 M and 10 M events), and a 5 M-event bench/gen_trace churn trace
# for comparison. For each: CPU seconds (user + sys: the analysis runs on one core), events/s per
# core and max RSS (/usr/bin/time), best of REPS runs. With BASE_CLI set, the same for that CLI
# (e.g. main's build) and the two reports compared byte for byte. With CALLGRIND=1, instruction
# counts of one run of each (valgrind), which do not depend on the machine's load.
# Wall and CPU times on a shared 2-core VM move by +-30% with other builds: read them with the
# instruction counts and compare CLIs only within one run of this script.
# Usage: bench/run_shapes_bench.sh [BUILD_DIR]   (default build)
# Environment: REPS (default 3), BASE_CLI, CALLGRIND, TMPDIR (~2 GB of traces, deleted afterwards),
#   SHAPES (default "stacks1m stacks5m live1m live2m churn5m").
set -euo pipefail
build=${1:-build}
reps=${REPS:-3}
cli=$build/bin/vramtrace
gen=$build/bench/gen_shapes
churn=$build/bench/gen_trace
for x in "$cli" "$gen" "$churn"; do [ -x "$x" ] || { echo "run_shapes_bench.sh: $x missing (build it)" >&2; exit 2; }; done
[ -x /usr/bin/time ] || { echo "run_shapes_bench.sh: /usr/bin/time missing (Debian: time)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/vt-shapes-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT

make_trace() {  # NAME -> $dir/NAME.vt
  case $1 in
    stacks1m) "$gen" stacks "$dir/$1.vt" 1000000 ;;
    stacks5m) "$gen" stacks "$dir/$1.vt" 5000000 ;;
    live1m) "$gen" live "$dir/$1.vt" 5000000 1000000 ;;
    live2m) "$gen" live "$dir/$1.vt" 10000000 2000000 ;;
    churn5m) "$churn" "$dir/$1.vt" 5000000 ;;
    *) echo "run_shapes_bench.sh: unknown shape $1" >&2; exit 2 ;;
  esac
}

# best CLI TRACE OUT: prints "cpu_s events/s max_rss_kib" of the fastest of REPS runs
best() {
  local b_cpu="" b_rss=0
  for ((i = 1; i <= reps; ++i)); do
    /usr/bin/time -f '%U %S %M' -o "$dir/time" "$1" report "$2" --format json -o "$3" 2>/dev/null
    read -r user sys rss <"$dir/time"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
    if [ -z "$b_cpu" ] || awk -v a="$cpu" -v b="$b_cpu" 'BEGIN {exit !(a < b)}'; then b_cpu=$cpu; fi
    [ "$rss" -gt "$b_rss" ] && b_rss=$rss
  done
  echo "$b_cpu $b_rss"
}

printf '%-9s %10s %-5s %8s %12s %12s %s\n' shape events cli cpu_s "M events/s" "max RSS MiB" note
for shape in ${SHAPES:-stacks1m stacks5m live1m live2m churn5m}; do
  make_trace "$shape" >/dev/null 2>&1
  t=$dir/$shape.vt
  events=$("$cli" info "$t" 2>/dev/null | sed -n 's/^  "events": *\([0-9]*\).*/\1/p')
  clis=("new:$cli")
  [ -n "${BASE_CLI:-}" ] && clis=("base:$BASE_CLI" "${clis[@]}")
  for c in "${clis[@]}"; do
    name=${c%%:*}
    bin=${c#*:}
    read -r cpu rss <<<"$(best "$bin" "$t" "$dir/$shape.$name.json")"
    [ -n "$events" ] && [ "$events" -gt 0 ] || { echo "run_shapes_bench.sh: $shape: cannot count the trace's events" >&2; exit 1; }
    awk -v c="$cpu" 'BEGIN {exit !(c > 0)}' || { echo "run_shapes_bench.sh: $shape: no measurable CPU time ('$cpu')" >&2; exit 1; }
    rate=$(awk -v e="$events" -v c="$cpu" 'BEGIN {printf "%.2f", e / c / 1e6}')
    note=""
    if [ "$name" = new ] && [ -n "${BASE_CLI:-}" ]; then
      cmp -s "$dir/$shape.base.json" "$dir/$shape.new.json" && note="report identical to base" || note="REPORT DIFFERS from base"
    fi
    if [ "${CALLGRIND:-}" = 1 ]; then
      ir=$(valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" "$bin" report "$t" --format json -o "$dir/cg.json" 2>&1 |
        sed -n 's/.*refs: *//p' | tr -d ,)
      note="$note ${ir} instructions ($(awk -v i="$ir" -v e="$events" 'BEGIN {printf "%.0f", i / e}')/event)"
    fi
    printf '%-9s %10s %-5s %8s %12s %12s %s\n' "$shape" "$events" "$name" "$cpu" "$rate" "$((rss / 1024))" "$note"
  done
  rm -f "$t" "$dir"/*.json
done
echo "($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the end: times are noisy on a shared machine)"
