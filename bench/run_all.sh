#!/usr/bin/env bash
# Re-measures every figure docs/PERFORMANCE.md states as current ("Current figures"), one
# benchmark after the other, and prints one line per figure:
#   NAME <TAB> VALUE UNIT <TAB> target and whether it is met <TAB> the command
# It exits non-zero, naming the figure, when a benchmark fails or yields 0, nothing or NaN. A
# target that is not met is printed as "NOT MET" and is not a failure (the doc says so).
# Not in ctest or CI: 5-7 minutes on the project's 2-core VM (5 min 15 s on 2026-12-07; too slow
# for CI, and its times need a quiet machine). Wall-clock figures depend on
# the machine's load: the load average is printed beside them; instruction counts (callgrind) do not.
# Usage: bench/run_all.sh [BUILD_DIR] [--only NAME]...   (default build; NAME: one group of figures,
#        hook, heaptrack, job, churn, shapes, report50m, html10m, jobs10k, hookns, export, whatif,
#        symbolize, audit, python, backward, torch; --only may be given more than once)
# Needs: the build's vramtrace, vramtrace_cli, vramtrace_audit, threads, fakecuda, gen_trace,
#   gen_shapes, gen_modules_trace, malloc_pairs, mem_latency, hook_bench, py_event_helper, fake_c10_cuda_default,
#   fake_torch_cpu and fake_torch_python targets; valgrind, /usr/bin/time,
#   heaptrack (its preload library) and python3. TMPDIR needs ~1.5 GB.
# Environment: JOBS_TRACES (default 10000: the traces of the "10,000 traces" target),
#   PYTHON (default python3), PYTHONS (the interpreters of the Python-part figure; default $PYTHON).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build only=""
while [ $# -gt 0 ]; do
  case $1 in
    --only) only="$only $2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) build=$1; shift ;;
  esac
done
build=$(realpath "$build")
cli=$build/bin/vramtrace lib=$build/lib/libvramtrace.so
py=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')  # the interpreter itself, not a pyenv shim (callgrind)
work=$(mktemp -d "${TMPDIR:-/tmp}/vt-run-all.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$build/lib/fakecuda
start=$(date +%s)
failed=()

die() {  # die FIGURE MESSAGE: the run stops here, naming the figure
  echo "run_all.sh: FAILED: $1: $2" >&2
  [ -s "$work/log" ] && { echo "--- last lines of its output:" >&2; tail -15 "$work/log" >&2; }
  exit 1
}
# emit NAME VALUE UNIT TARGET COMMAND; TARGET is "<= N", ">= N" or "-" (no target)
emit() {
  local name=$1 value=$2 unit=$3 target=$4 command=$5 verdict=""
  python3 -c 'import math,sys; v=float(sys.argv[1]); sys.exit(0 if math.isfinite(v) and v > 0 else 1)' "$value" 2>/dev/null ||
    die "$name" "no figure (got '$value')"
  if [ "$target" != - ]; then
    if python3 -c 'import sys; v=float(sys.argv[1]); op, t = sys.argv[2].split(); sys.exit(0 if (v <= float(t) if op == "<=" else v >= float(t)) else 1)' "$value" "$target"; then
      verdict="target $target: met"
    else
      verdict="target $target: NOT MET"
    fi
  fi
  printf '%s\t%s %s\t%s\t%s\n' "$name" "$value" "$unit" "${verdict:--}" "$command"
}
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# run FIGURE CMD...: runs a benchmark with its output in $work/log; a non-zero exit stops the run
run() {
  local fig=$1; shift
  "$@" >"$work/log" 2>&1 || die "$fig" "exit $? from: $*"
}
for f in "$cli" "$lib" "$build/tests/programs/threads" "$build/bench/gen_trace" "$build/bench/gen_shapes"; do
  [ -x "$f" ] || [ -f "$f" ] || die setup "$f missing (build it)"
done
command -v valgrind >/dev/null || die setup "valgrind is not installed"
[ -x /usr/bin/time ] || die setup "/usr/bin/time is not installed"
echo "# run_all.sh: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null) $(date -u '+%F %T UTC'), $(nproc) CPUs, load $(load)"
# The machine beside its figures: those bound by cache misses follow its memory latency.
echo "# machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); $("$build/bench/mem_latency" 2>/dev/null | head -1 || echo "memory latency: bench/mem_latency not built")"

# max RSS (KiB) and CPU seconds (user + sys) of one report: "cpu rss"
report_time() {  # TRACE [FORMAT] [OUT]
  /usr/bin/time -f '%U %S %M %e' -o "$work/time" "$cli" report "$1" --format "${2:-json}" -o "${3:-/dev/null}" >/dev/null 2>&1 ||
    return 1
  awk '{ printf "%.3f %d %.3f\n", $1 + $2, $3, $4 }' "$work/time"
}
best_of() {  # N TRACE: the least CPU and the largest RSS of N reports: "cpu rss"
  local n=$1 t=$2 b="" r=0 c rs w
  for _ in $(seq "$n"); do
    read -r c rs w <<<"$(report_time "$t")" || return 1
    [ -n "$c" ] || return 1
    if [ -z "$b" ] || awk -v a="$c" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$c; fi
    [ "$rs" -gt "$r" ] && r=$rs
  done
  echo "$b $r"
}
events_of() { "$cli" info "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])'; }

# --- The hook, callgrind (exact) -------------------------------------------------------------
if want hook; then
  c="bench/run_hook_instructions.sh BUILD"
  run hook_no_stack "$here/run_hook_instructions.sh" "$build"
  v=$(sed -n 's/.*added by the hook \([0-9.]*\).*/\1/p' "$work/log")
  emit hook_no_stack_per_event "$v" "instructions/event" "<= 350" "$c"
  c="bench/run_hook_instructions.sh --depth 64 --frames 21 BUILD"
  run hook_stacks_24 "$here/run_hook_instructions.sh" --depth 64 --frames 21 "$build"
  v=$(sed -n 's/.*(\([0-9]*\) per alloc\/free pair).*/\1/p' "$work/log")
  emit hook_stacks_24_frames_per_pair "$v" "instructions/pair" "<= 3400" "$c"
  c="bench/run_hook_instructions.sh --depth 64 --frames 21 --free-stacks BUILD"
  run hook_free_stacks_24 "$here/run_hook_instructions.sh" --depth 64 --frames 21 --free-stacks "$build"
  v=$(sed -n 's/.*(\([0-9]*\) per alloc\/free pair).*/\1/p' "$work/log")
  emit hook_stacks_24_frames_free_stacks_per_pair "$v" "instructions/pair" - "$c"
fi

# --- The hook beside heaptrack (CPU time) ----------------------------------------------------
if want heaptrack; then
  c="bench/run_vs_heaptrack.sh BUILD"
  "$here/run_vs_heaptrack.sh" "$build" >"$work/log" 2>&1
  rc=$?
  [ $rc = 0 ] || [ $rc = 1 ] || die vs_heaptrack "exit $rc from $c"  # 1: vramtrace above heaptrack (reported below)
  v=$(sed -n 's/.*vramtrace \(-\{0,1\}[0-9]*\) ns.*/\1/p' "$work/log")
  h=$(sed -n 's/.*heaptrack \(-\{0,1\}[0-9]*\) ns.*/\1/p' "$work/log")
  emit heaptrack_added_per_event "$h" "ns/event (load $(load))" - "$c"
  emit vramtrace_added_per_event_24_frames "$v" "ns/event (load $(load))" "<= $h" "$c"
fi

# --- A job's -j 2 speedup (wall time) ----------------------------------------------------------
if want job; then
  c="bench/run_job_bench.sh BUILD 16 500000 7"
  run job "$here/run_job_bench.sh" "$build" 16 500000 7
  v=$(sed -n 's/^-j 2: .*speedup \([0-9.]*\)x.*/\1/p' "$work/log")  # the median of 7 interleaved rounds
  emit job_16_ranks_j2_speedup "$v" "x (load $(load))" ">= 1.8" "$c"
fi

# --- The analyzer on churn: marginal instructions per event (callgrind) -------------------------
if want churn; then
  # Three pairs of traces, the median of their marginals: gen_trace's four threads interleave
  # differently each run, and the reader's merge costs more where they alternate more often, so
  # one pair's figure moved by up to ±20 around the others'. The Perfetto export is counted on the
  # first pair, against the report's on the same files.
  cg() {  # cg NAME ARGS...: instructions of one vramtrace command under callgrind
    run "$1" valgrind --tool=callgrind --callgrind-out-file="$work/cg" "$cli" "${@:2}"
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$work/cg"
  }
  marginals=() export_marginal=0
  for pair in 1 2 3; do
    for n in 1000000 2000000; do
      run churn_gen "$build/bench/gen_trace" "$work/churn$n.trace" "$n"
      eval "i$n=$(cg churn_callgrind report "$work/churn$n.trace" --format json -o "$work/churn$n.json")"
      [ $pair = 1 ] && eval "e$n=$(cg churn_export_callgrind export --perfetto "$work/churn$n.perfetto.json" "$work/churn$n.trace")"
    done
    marginals+=("$(python3 -c "print('%.1f' % ((${i2000000:-0} - ${i1000000:-0}) / 1e6))")")
    [ $pair = 1 ] && export_marginal=$(python3 -c "print('%.1f' % ((${e2000000:-0} - ${e1000000:-0}) / 1e6))")
  done
  v=$(printf '%s\n' "${marginals[@]}" | sort -n | sed -n 2p)
  emit churn_report_marginal_per_event "$v" "instructions/event (median; pairs: ${marginals[*]})" "<= 720" \
    "3 x (gen_trace T1 1000000, gen_trace T2 2000000; valgrind --tool=callgrind vramtrace report T --format json -o R; (I2 - I1) / 1e6), the median"
  emit churn_export_marginal_per_event "$export_marginal" "instructions/event (the report's on the same pair: ${marginals[0]})" - \
    "the first pair above; valgrind --tool=callgrind vramtrace export --perfetto R T; (I2 - I1) / 1e6"
  emit export_perfetto_vs_report_instructions "$(python3 -c "print('%.3f' % ($export_marginal / ${marginals[0]}))")" "x" "<= 1" \
    "the first pair above: the export's marginal instructions per event / the report's"
  b=$("$cli" info "$work/churn1000000.trace" | python3 -c 'import json,sys; j=json.load(sys.stdin); print("%.2f" % (j["record_bytes"] / j["events"]))')
  emit churn_trace_bytes_per_event "$b" "record bytes/event" "<= 24" "gen_trace T 1000000; vramtrace info T: record_bytes / events"
  rm -f "$work"/churn*
fi

# --- Issue 16 / 43's analysis shapes (CPU time, max RSS) ---------------------------------------
if want shapes; then
  for n in 1000000 2000000; do
    VRAMTRACE_FREE_STACKS=1 run shapes_gen "$build/bench/gen_shapes" stacks "$work/st$n.trace" "$n"
  done
  e1=$(events_of "$work/st1000000.trace") e2=$(events_of "$work/st2000000.trace")
  read -r c1 r1 <<<"$(best_of 3 "$work/st1000000.trace")" || die stacks "report failed"
  read -r c2 r2 <<<"$(best_of 3 "$work/st2000000.trace")" || die stacks "report failed"
  cmd="VRAMTRACE_FREE_STACKS=1 gen_shapes stacks T N; /usr/bin/time vramtrace report T --format json -o /dev/null, best CPU of 3"
  emit stacks_2m_events_per_s "$(python3 -c "print('%.2f' % ($e2 / $c2 / 1e6))")" "M events/s per core (load $(load))" ">= 5" "$cmd (N = 2000000)"
  emit stacks_rss_per_stack "$(python3 -c "print('%.1f' % (($r2 - $r1) * 1024 / ($e2 - $e1)))")" "B/stack" "<= 100" "$cmd; (RSS at N = 2000000 - RSS at N = 1000000) / the stacks between"
  emit stacks_trace_bytes_per_event "$(python3 -c "import os; print('%.1f' % (os.path.getsize('$work/st1000000.trace') / $e1))")" "B/event (file)" "<= 60" "VRAMTRACE_FREE_STACKS=1 gen_shapes stacks T 1000000; file size / events"
  rm -f "$work"/st*
  run shapes_gen "$build/bench/gen_trace" "$work/base.trace" 100000
  read -r _ rb <<<"$(best_of 1 "$work/base.trace")" || die live "report failed"
  run shapes_gen "$build/bench/gen_shapes" live "$work/live1m.trace" 5000000 1000000
  read -r cl1 rl1 <<<"$(best_of 3 "$work/live1m.trace")" || die live "report failed"
  el1=$(events_of "$work/live1m.trace")
  rm -f "$work/live1m.trace"
  run shapes_gen "$build/bench/gen_shapes" live "$work/live2m.trace" 10000000 2000000
  read -r cl2 rl2 <<<"$(best_of 3 "$work/live2m.trace")" || die live "report failed"
  el2=$(events_of "$work/live2m.trace")
  rm -f "$work"/live* "$work/base.trace"
  cmd="gen_shapes live T E L; /usr/bin/time vramtrace report T --format json -o /dev/null, best CPU of 3"
  emit live_1m_events_per_s "$(python3 -c "print('%.2f' % ($el1 / $cl1 / 1e6))")" "M events/s per core (load $(load))" ">= 8" "$cmd (E = 5000000, L = 1000000)"
  emit live_2m_events_per_s "$(python3 -c "print('%.2f' % ($el2 / $cl2 / 1e6))")" "M events/s per core (load $(load))" - "$cmd (E = 10000000, L = 2000000)"
  emit live_2m_bytes_per_live "$(python3 -c "print('%.1f' % (($rl2 - $rb) * 1024 / 2e6))")" "B/live allocation (RSS $((rl2 / 1024)) MiB, base $((rb / 1024)) MiB)" "<= 64" "$cmd (E = 10000000, L = 2000000); (RSS - RSS of a gen_trace 100000 report) / 2000000"
fi

# --- 50 M events: throughput, memory, OOMs (issue 4, issue 43) ---------------------------------
if want report50m; then
  run report50m_gen "$build/bench/gen_trace" "$work/gen50m.trace" 50000000
  e=$(events_of "$work/gen50m.trace")
  read -r c r <<<"$(best_of 3 "$work/gen50m.trace")" || die report50m "report failed"
  cmd="gen_trace T 50000000; /usr/bin/time vramtrace report T --format json -o R, best CPU of 3"
  emit report_50m_events_per_s "$(python3 -c "print('%.2f' % ($e / $c / 1e6))")" "M events/s per core (load $(load))" ">= 10" "$cmd"
  emit report_50m_max_rss "$(python3 -c "print('%.1f' % ($r / 1024))")" "MiB" "<= 1024" "$cmd"
  "$cli" report "$work/gen50m.trace" --format json -o "$work/r50.json" >/dev/null 2>&1 || die report50m "report failed"
  python3 - "$work/r50.json" >"$work/ooms" <<'PY' || die report_50m_ooms "no OOMs in the report"
import json, sys
j = json.load(open(sys.argv[1]))
o = j.get("ooms")
n = len(o) if isinstance(o, list) else len(o.get("events", o.get("items", []))) if isinstance(o, dict) else 0
omitted = j.get("ooms_omitted", o.get("ooms_omitted", 0) if isinstance(o, dict) else 0)
print(n, omitted)
PY
  read -r nd no <"$work/ooms"
  emit report_50m_ooms_detailed "$nd" "OOMs in the JSON, $no omitted (counted)" - "$cmd"
  rm -f "$work/gen50m.trace" "$work/r50.json"
fi

# --- The HTML report at 10 M events (issue 16) ---------------------------------------------------
if want html10m; then
  run html10m_gen "$build/bench/gen_trace" "$work/gen10m.trace" 10000000
  read -r c r w <<<"$(report_time "$work/gen10m.trace" html "$work/r.html")" || die html10m "report failed"
  cmd="gen_trace T 10000000; /usr/bin/time vramtrace report T --format html -o R.html"
  emit html_10m_wall "$w" "s wall (load $(load))" "<= 2" "$cmd"
  emit html_10m_size "$(python3 -c "import os; print('%.0f' % (os.path.getsize('$work/r.html') / 1000))")" "KB" "<= 1000" "$cmd"
  rm -f "$work/gen10m.trace" "$work/r.html"
fi

# --- A job of 10,000 small traces (issue 38 / 43) -------------------------------------------------
if want jobs10k; then
  n=${JOBS_TRACES:-10000}
  mkdir -p "$work/jobs"
  seq 1 "$n" | xargs -P 2 -I{} env VRAMTRACE_OUTPUT="$work/jobs/r{}.trace" LD_PRELOAD="$lib" \
    "$build/tests/programs/threads" 2 20 >"$work/log" 2>&1 || die jobs10k "a traced run failed"
  [ "$(ls "$work/jobs" | wc -l)" = "$n" ] || die jobs10k "$(ls "$work/jobs" | wc -l) traces, not $n"
  /usr/bin/time -f '%e' -o "$work/time" "$cli" report "$work/jobs" --format json -j 2 -o "$work/jobs.json" >"$work/log" 2>&1 ||
    die jobs10k "report failed"
  emit "jobs_${n}_traces_j2_wall" "$(cat "$work/time")" "s wall (load $(load))" "$([ "$n" = 10000 ] && echo "<= 60" || echo -)" \
    "$n x (LD_PRELOAD=libvramtrace.so threads 2 20); /usr/bin/time vramtrace report DIR --format json -j 2 -o R"
  rm -rf "$work/jobs" "$work/jobs.json"
fi

# --- The hook in nanoseconds (Google Benchmark, CPU time: load-dependent) ------------------------
if want hookns; then
  hb=$build/bench/hook_bench
  [ -x "$hb" ] || die hookns "$hb missing (build the hook_bench target)"
  gb() {  # gb OUT FILTER [VAR=VALUE...]: medians of 5 x 0.5 s, JSON in $work/OUT.json
    local o=$1 f=$2; shift 2
    env "$@" "$hb" --benchmark_filter="$f" --benchmark_min_time=0.5 --benchmark_repetitions=5 \
      --benchmark_report_aggregates_only=true --benchmark_out="$work/$o.json" --benchmark_out_format=json \
      >"$work/log" 2>&1 || die hookns "hook_bench ($o) failed"
  }
  med() {  # med OUT NAME: the median CPU ns per iteration (one pair: 2 events) of benchmark NAME
    python3 - "$work/$1.json" "$2" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median" and b["run_name"] == sys.argv[2]:
        assert b["time_unit"] == "ns"
        print("%.1f" % b["cpu_time"])
PY
  }
  mkdir -p "$work/hb1" "$work/hb2" "$work/hb3" "$work/hb4"
  one='BM_AllocFreeAsync<direct>' eight='BM_AllocFreeAsync<direct>/real_time/threads:8' deep='BM_AllocFreeAsync32Frames'
  gb untraced "^($one|$deep)\$"
  gb nostack "^$one\$" LD_PRELOAD="$lib" VRAMTRACE_STACK_DEPTH=0 VRAMTRACE_OUTPUT="$work/hb1"
  gb stacks "^$deep\$" LD_PRELOAD="$lib" VRAMTRACE_OUTPUT="$work/hb2"
  gb sn_untraced "^$one" FAKECUDA_SHARE_NOTHING=1
  gb sn_nostack "^$one" FAKECUDA_SHARE_NOTHING=1 LD_PRELOAD="$lib" VRAMTRACE_STACK_DEPTH=0 VRAMTRACE_OUTPUT="$work/hb3"
  cmd="hook_bench --benchmark_filter=F --benchmark_min_time=0.5 --benchmark_repetitions=5, untraced and with LD_PRELOAD=libvramtrace.so VRAMTRACE_OUTPUT=DIR"
  u=$(med untraced "$one") t=$(med nostack "$one")
  emit hook_ns_no_stacks_per_event "$(python3 -c "print('%.0f' % (($t - $u) / 2))")" "ns/event CPU (pair $u -> $t ns; load $(load))" "<= 150" "$cmd VRAMTRACE_STACK_DEPTH=0, F = $one: (traced - untraced) / 2"
  u=$(med untraced "$deep") t=$(med stacks "$deep")
  emit hook_ns_32_frames_per_event "$(python3 -c "print('%.0f' % (($t - $u) / 2))")" "ns/event CPU (pair $u -> $t ns; load $(load))" "<= 1500" "$cmd, F = $deep: (traced - untraced) / 2"
  u1=$(med sn_untraced "$one") t1=$(med sn_nostack "$one") u8=$(med sn_untraced "$eight") t8=$(med sn_nostack "$eight")
  emit hook_8_threads_vs_1 "$(python3 -c "print('%.2f' % (($t8 - $u8) / ($t1 - $u1)))")" "x (added CPU per pair: 1 thread $(python3 -c "print('%.0f' % ($t1 - $u1))") ns, 8 threads $(python3 -c "print('%.0f' % ($t8 - $u8))") ns; load $(load))" "<= 1.3" \
    "FAKECUDA_SHARE_NOTHING=1 $cmd VRAMTRACE_STACK_DEPTH=0, F = ^$one: added CPU per pair with 8 threads / with 1"
  b=$(for f in "$work"/hb1/*.trace; do "$cli" info "$f"; done | python3 -c 'import json,sys
d = json.JSONDecoder(); s = sys.stdin.read().strip(); e = r = 0
while s:
    j, i = d.raw_decode(s); s = s[i:].strip(); e += j["events"]; r += j["record_bytes"]
print("%.2f" % (r / e))')
  emit hook_bench_trace_bytes_per_event_no_stacks "$b" "record bytes/event" "<= 24" "the traces of hook_bench with VRAMTRACE_STACK_DEPTH=0 above; vramtrace info: record_bytes / events"
  rm -rf "$work"/hb*
fi

# --- Export, what-if, symbolization, LD_AUDIT --------------------------------------------------------
if want export; then
  c="REPEAT=3 bench/run_export_bench.sh BUILD 10000000"
  REPEAT=3 run export "$here/run_export_bench.sh" "$build" 10000000
  read -r eu ru bpe <<<"$(sed -n 's/.*export [0-9.]* s wall \([0-9.]*\) s user.*(\([0-9.]*\) B\/event); report [0-9.]* s wall \([0-9.]*\) s user.*/\1 \3 \2/p' "$work/log")"
  emit export_perfetto_vs_report_cpu "$(python3 -c "print('%.2f' % ($eu / $ru))")" "x (export $eu s, report $ru s user; load $(load))" "<= 1" "$c: export's user time / the report's"
  emit export_perfetto_bytes_per_event "$bpe" "B/event" - "$c"
fi
if want whatif; then
  mkdir -p "$work/wi"
  c="LD_PRELOAD=libvramtrace.so VRAMTRACE_OUTPUT=T FAKECUDA_CONTEXT_BYTES=0 python3 bench/gen_torch_blocks.py BUILD/tests/torch/default 22000 4600000"
  [ -e "$build/tests/torch/default/libc10_cuda.so" ] || die whatif "the stand-in allocator is not built (fake_c10_cuda_default)"
  FAKECUDA_CONTEXT_BYTES=0 LD_PRELOAD="$lib" VRAMTRACE_OUTPUT="$work/wi/b.trace" \
    run whatif_gen "$py" "$here/gen_torch_blocks.py" "$build/tests/torch/default" 22000 4600000
  e=$(python3 -c "import os; print('%.0f MB trace' % (os.path.getsize('$work/wi/b.trace') / 1e6))")
  /usr/bin/time -f '%e %M' -o "$work/time" "$cli" whatif "$work/wi/b.trace" --alloc-conf expandable_segments:True >"$work/log" 2>&1 || die whatif "whatif failed"
  read -r w r <"$work/time"
  emit whatif_two_settings_wall "$w" "s wall ($e, $((r / 1024)) MiB; load $(load))" "<= 20" "$c; /usr/bin/time vramtrace whatif T --alloc-conf expandable_segments:True (the run's settings and one other)"
  /usr/bin/time -f '%e %M' -o "$work/time" "$cli" whatif "$work/wi/b.trace" --sweep >"$work/log" 2>&1 || die whatif "whatif --sweep failed"
  read -r w r <"$work/time"
  emit whatif_sweep_wall "$w" "s wall ($((r / 1024)) MiB; load $(load))" "<= 70" "$c; /usr/bin/time vramtrace whatif T --sweep (seven settings)"
  rm -rf "$work/wi"
fi
if want symbolize; then
  c="bench/run_symbolize_bench.sh 80000 BUILD"
  run symbolize "$here/run_symbolize_bench.sh" 80000 "$build"
  emit symbolize_80k_modules_dump "$(sed -n 's/^dump .*: \([0-9.]*\) s/\1/p' "$work/log")" "s wall (load $(load))" - "$c"
  emit symbolize_80k_modules_report "$(sed -n 's/^report .*: \([0-9.]*\) s/\1/p' "$work/log")" "s wall (load $(load))" - "$c"
fi
if want audit; then
  c="bench/run_audit_cost.sh BUILD"
  run audit "$here/run_audit_cost.sh" "$build"
  read -r a b <<<"$(sed -n 's/.*added by the hook \([0-9.]*\).*/\1/p' "$work/log" | tr '\n' ' ')"
  emit audit_hook_no_stack_without_module "$a" "instructions/event" - "$c"
  emit audit_hook_no_stack_with_module "$b" "instructions/event" "<= $(python3 -c "print($a + 1)")" "$c"
  emit audit_python_start_added "$(sed -n 's/.*(+[0-9]*, +\([0-9.]*\)%).*/\1/p' "$work/log")" "% instructions" - "$c"
fi

# --- The Python part of an event, a PyTorch block event (stand-ins; CPU time and callgrind) -------
if want python; then
  for p in ${PYTHONS:-$py}; do
    exe=$("$p" -c 'import sys; print(sys.executable)' 2>/dev/null) || die python "$p does not run"
    p=$exe
    c="PAIRS=100000 BATCHES=5 ROUNDS=3 CG_PAIRS=5000 bench/run_py_bench.sh BUILD $p"
    PAIRS=100000 BATCHES=5 ROUNDS=3 CG_PAIRS=5000 run python "$here/run_py_bench.sh" "$build" "$p"
    ver=$(sed -n 's/^== CPython \([0-9.]*\).*/\1/p' "$work/log" | head -1)
    v=$(sed -n 's/.*Python part per allocation.*: \(-\{0,1\}[0-9]*\) ns.*/\1/p' "$work/log")
    emit "python_part_32_frames_$ver" "$v" "ns/allocation (load $(load))" "<= 300" "$c"
    v=$(sed -n 's/.*: \([0-9]*\) for the Python part.*/\1/p' "$work/log")
    emit "python_part_32_frames_instructions_$ver" "$v" "instructions/pair" - "$c"
  done
fi
if want backward; then
  c="bench/run_backward_bench.sh BUILD $py"
  run backward "$here/run_backward_bench.sh" "$build" "$py"
  a=$(sed -n 's/^ *inside *\([0-9]*\) instructions.*/\1/p' "$work/log") b=$(sed -n 's/^ *outside *\([0-9]*\) instructions.*/\1/p' "$work/log")
  emit backward_lent_frames_added "$((a - b))" "instructions/block event ($a lent, $b not)" - "$c"
fi
if want torch; then
  c="PAIRS=50000 BATCHES=3 ROUNDS=3 CG_PAIRS=5000 bench/run_torch_bench.sh BUILD $py"
  PAIRS=50000 BATCHES=3 ROUNDS=3 CG_PAIRS=5000 run torch "$here/run_torch_bench.sh" "$build" "$py"
  v=$(sed -n 's/.*added per block event: \(-\{0,1\}[0-9]*\) ns.*/\1/p' "$work/log")
  emit torch_block_event_added "$v" "ns/event (load $(load))" "<= 1000" "$c"
  v=$(sed -n 's/.*untraced: \([0-9]*\) added.*/\1/p' "$work/log")
  emit torch_block_event_added_instructions "$v" "instructions/event" - "$c"
fi
echo "# run_all.sh: done in $(( $(date +%s) - start )) s, load $(load)"
