#!/usr/bin/env bash
# The parallel job analysis (`vramtrace report DIR -j N`, analyzer/job/job_parallel.cpp) under
# ThreadSanitizer: builds the CLI in build-tsan/ with -DVRAMTRACE_SANITIZE=thread, writes a job
# directory of RANKS traces with BUILD_DIR's bench/gen_trace (one of them cut short, one not a
# trace at all, so the error paths run on the workers too), then runs the report with -j 1, 2 and
# 8 in each format, failing on any TSan report or when an output differs from -j 1's.
# Usage: tests/tsan_jobs.sh [BUILD_DIR] [RANKS]   (default build, 12)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} ranks=${2:-12}
[ -x "$build/bench/gen_trace" ] || { echo "tsan_jobs.sh: $build/bench/gen_trace missing (build $build first)" >&2; exit 2; }
out=build-tsan
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Release -DVRAMTRACE_SANITIZE=thread -DVRAMTRACE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$out" -j"${VT_SANITIZE_JOBS:-$(nproc)}" --target vramtrace_cli
work=$(mktemp -d /tmp/vramtrace-tsan.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/job"
for r in $(seq 0 $((ranks - 1))); do
  RANK=$r "$build/bench/gen_trace" "$work/job/rank$r.trace" $((20000 + r * 5000)) >/dev/null 2>&1
done
head -c 300000 "$work/job/rank1.trace" >"$work/job/rank1-cut.trace"  # cut short: damaged
echo "not a trace" >"$work/job/notes.trace"                             # unreadable
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:log_path=$work/tsan"
rc=0
for format in json text html; do
  for j in 1 2 8; do
    "$out/bin/vramtrace" report "$work/job" --format "$format" -j "$j" -o "$work/out.$format.$j" 2>"$work/err.$format.$j" || {
      code=$?
      # The job's damaged and unreadable traces make report exit non-zero; TSan exits 66.
      [ "$code" = 66 ] && { rc=1; echo "tsan_jobs.sh: ThreadSanitizer stopped -j $j --format $format" >&2; }
    }
    # (The HTML page's CSP nonce is random per page: masked.)
    sed -Ei 's/nonce(-|=")[A-Za-z0-9]+/nonce\1N/g' "$work/out.$format.$j"
    [ "$j" = 1 ] || cmp -s "$work/out.$format.1" "$work/out.$format.$j" || { rc=1; echo "tsan_jobs.sh: -j $j --format $format differs from -j 1" >&2; }
  done
done
if ls "$work"/tsan.* >/dev/null 2>&1; then
  cat "$work"/tsan.* >&2
  rc=1
fi
[ "$rc" = 0 ] || exit 1
echo "tsan_jobs.sh: $ranks ranks + 2 bad files, -j 1/2/8 x json/text/html: identical outputs, no ThreadSanitizer report"
