#!/usr/bin/env bash
# vramtrace's hook beside heaptrack's, per event, on the same shape (issue 43): one worker thread,
# its loop F calls deeper (24 frames with the default F=21), N iterations of an allocation and its
# free (2N events). heaptrack hooks malloc: bench/malloc_pairs under its preload library (raw
# output to a file, no interpreter process). vramtrace hooks the driver: tests/programs/threads on
# the simulated driver (stacks on, 64 frames at most; frees without a stack, as heaptrack's).
# heaptrack records nothing under valgrind, so this is CPU time (user + sys of the process, its
# rusage), each program untraced and traced at N and 2N iterations, ROUNDS rounds interleaved;
# per event added = (median traced (2N - N) - median untraced (2N - N)) / 2N: start-up and exit
# cancel. Exit 1 when vramtrace adds more per event than heaptrack (the issue's target), 2 when
# something is missing.
# Usage: bench/run_vs_heaptrack.sh [BUILD_DIR]
# Environment: N (default 500000), F (default 21), ROUNDS (default 5), HEAPTRACK_PRELOAD.
set -euo pipefail
build=$(realpath "${1:-build}")
n=${N:-500000} frames=${F:-21} rounds=${ROUNDS:-5}
ht_lib=${HEAPTRACK_PRELOAD:-/usr/lib/heaptrack/libheaptrack_preload.so}
m=$build/bench/malloc_pairs p=$build/tests/programs/threads
for f in "$m" "$p" "$build/lib/libvramtrace.so"; do
  [ -f "$f" ] || { echo "run_vs_heaptrack.sh: $f missing (build first)" >&2; exit 2; }
done
[ -f "$ht_lib" ] || { echo "run_vs_heaptrack.sh: $ht_lib missing (Debian: apt-get install heaptrack)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cpu() {  # cpu NAME VAR=VALUE... -- PROGRAM ARGS...: appends the run's CPU seconds to $out/NAME
  # (the variables reach the program alone: a preload library in the timer would trace it too)
  local name=$1
  shift
  python3 - "$out/$name" "$@" <<'PY' || { echo "run_vs_heaptrack.sh: $name failed" >&2; exit 2; }
import os, resource, subprocess, sys
dest, args = sys.argv[1], sys.argv[2:]
cut = args.index("--")
env = dict(os.environ, **dict(a.split("=", 1) for a in args[:cut]))
r = subprocess.run(args[cut + 1:], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if r.returncode != 0:
    sys.stderr.write(r.stderr.decode(errors="replace")[-500:])
    sys.exit(1)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(dest, "a").write("%.4f\n" % (u.ru_utime + u.ru_stime))
PY
}
fake=LD_LIBRARY_PATH=$build/lib/fakecuda
for r in $(seq "$rounds"); do
  for k in 1 2; do  # N and 2N iterations: the difference leaves start-up and exit out
    cpu malloc.$k X=1 -- "$m" $((k * n)) "$frames"
    rm -f "$out/ht.raw"
    cpu heaptrack.$k LD_PRELOAD="$ht_lib" DUMP_HEAPTRACK_OUTPUT="$out/ht.raw" -- "$m" $((k * n)) "$frames"
    [ -s "$out/ht.raw" ] || { echo "run_vs_heaptrack.sh: heaptrack wrote nothing" >&2; exit 2; }
    cpu driver.$k "$fake" -- "$p" 1 $((k * n)) "$frames"
    rm -rf "$out/traces" && mkdir "$out/traces"
    cpu vramtrace.$k "$fake" LD_PRELOAD="$build/lib/libvramtrace.so" VRAMTRACE_STACK_DEPTH=64 \
      VRAMTRACE_OUTPUT="$out/traces" -- "$p" 1 $((k * n)) "$frames"
  done
done
python3 - "$out" "$n" "$frames" <<'PY'
import statistics, sys
out, n, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def marginal(k):  # CPU seconds of N more iterations (2N events), per round
    a = [float(x) for x in open(f"{out}/{k}.1")]
    b = [float(x) for x in open(f"{out}/{k}.2")]
    return [y - x for x, y in zip(a, b)]
runs = {k: marginal(k) for k in ("malloc", "heaptrack", "driver", "vramtrace")}
med = {k: statistics.median(v) for k, v in runs.items()}
ht = (med["heaptrack"] - med["malloc"]) / (2 * n) * 1e9
vr = (med["vramtrace"] - med["driver"]) / (2 * n) * 1e9
print(f"stack depth {frames + 3} frames; CPU s of {2 * n} more events (2N - N iterations), {len(runs['malloc'])} interleaved rounds:")
for k in runs:
    print(f"  {k:10s} {' '.join('%.4f' % x for x in runs[k])}  median {med[k]:.4f}")
print(f"added per event: heaptrack {ht:.0f} ns (malloc/free), vramtrace {vr:.0f} ns (cuMemAlloc/cuMemFree)")
sys.exit(0 if vr <= ht else 1)
PY
