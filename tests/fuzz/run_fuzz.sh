#!/usr/bin/env bash
# Fuzzes the trace reader, symbolizer, analysis, diff, check and export (tests/fuzz/reader_fuzz.cpp)
# with libFuzzer under AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer). Needs clang (and, on Debian,
# the libclang-rt-NN-dev package); no CMake. Builds into build-fuzz/ beside the sources.
#
#   tests/fuzz/run_fuzz.sh [SECONDS]   fuzz for SECONDS (default 60), seeded with the kept corpus;
#                                      new inputs go to build-fuzz/corpus, a crash to
#                                      build-fuzz/crashes/ (exit 1)
#   tests/fuzz/run_fuzz.sh --replay    run every kept input once (tests/fuzz/corpus), exit 1 on
#                                      any failure
#   tests/fuzz/run_fuzz.sh --merge     add to tests/fuzz/corpus the fewest inputs of
#                                      build-fuzz/corpus that reach new edges (check them with
#                                      --replay before committing)
#
# Environment: CXX (default clang++), VT_FUZZ_BUILD (default <repo>/build-fuzz), VT_FUZZ_JOBS
# (parallel fuzzing processes, default 1), VT_FUZZ_MAX_LEN (default 135168: a 64 KiB header and
# a 64 KiB chunk plus slack).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${VT_FUZZ_BUILD:-$repo/build-fuzz}
cxx=${CXX:-clang++}
jobs=${VT_FUZZ_JOBS:-1}
max_len=${VT_FUZZ_MAX_LEN:-135168}
mode=fuzz
seconds=60
case "${1:-}" in
  --replay) mode=replay ;;
  --merge) mode=merge ;;
  -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
  '') ;;
  *[!0-9]*) echo "run_fuzz.sh: usage: run_fuzz.sh [SECONDS | --replay | --merge]" >&2; exit 2 ;;
  *) seconds=$1 ;;
esac

mkdir -p "$out"
bin=$out/reader_fuzz
srcs=("$here/reader_fuzz.cpp")
while read -r line; do  # tests/fuzz/reader_sources.txt: one list for this script and CMake
  case $line in '#'* | '') continue ;; esac
  for f in "$repo"/$line; do srcs+=("$f"); done
done < "$here/reader_sources.txt"
# CUresult names, generated from the toolkit's cuda.h as the CMake build does (analyzer/CMakeLists.txt).
cuda_h=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}/include/cuda.h
cmake -DCUDA_H="$cuda_h" -DOUT="$out/cuda_result_names.inc" -P "$repo/analyzer/render/cuda_result_names.cmake" ||
  { echo "fuzz: cannot generate the CUresult names from $cuda_h (set CUDA_HOME)" >&2; exit 2; }
# Rebuild when any source or header it depends on is newer than the binary.
stale=0
if [ ! -x "$bin" ]; then
  stale=1
else
  for f in "${srcs[@]}" "$out/cuda_result_names.inc" "$repo"/analyzer/*.h "$repo"/analyzer/*/*.h "$repo"/format/*.h "$repo"/common/*.h; do
    if [ "$f" -nt "$bin" ]; then stale=1; break; fi
  done
fi
# The analyzer's folders, each on the include path (as analyzer/CMakeLists.txt puts them).
analyzer_dirs=(-I"$repo/analyzer")
for d in "$repo"/analyzer/*/; do analyzer_dirs+=(-I"${d%/}"); done
# Abseil's hash maps (the analysis); Debian's libabsl-dev ships pkg-config files.
absl_libs=$(pkg-config --libs absl_flat_hash_map absl_hash 2>/dev/null ||
  echo "-labsl_raw_hash_set -labsl_hash -labsl_city -labsl_low_level_hash -labsl_hashtablez_sampler -labsl_base")
if [ "$stale" = 1 ]; then
  echo "fuzz: building $bin with $cxx" >&2
  if ! "$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer -DNDEBUG \
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
      "${analyzer_dirs[@]}" -I"$repo/format" -I"$repo/common" -I"$out" \
      "${srcs[@]}" -ldw -lelf $absl_libs -pthread -o "$bin.tmp"; then
    echo "fuzz: build failed (clang with libFuzzer needed: apt-get install clang libclang-rt-dev or libclang-rt-14-dev)" >&2
    exit 2
  fi
  mv "$bin.tmp" "$bin"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
corpus=$here/corpus
dict=$here/reader.dict
common=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len="$max_len" -dict="$dict" -print_final_stats=1)

case $mode in
  replay)
    shopt -s nullglob
    inputs=("$corpus"/*)
    if [ ${#inputs[@]} = 0 ]; then echo "fuzz: no corpus in $corpus" >&2; exit 2; fi
    log=$out/replay.log
    # Given files, libFuzzer runs each once and exits non-zero on the first failure.
    if "$bin" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 "${inputs[@]}" >"$log" 2>&1; then
      echo "fuzz replay: ${#inputs[@]} inputs, $(cat "${inputs[@]}" | wc -c) bytes, no failure"
    else
      tail -n 60 "$log" >&2
      echo "fuzz replay: FAILED (log: $log)"
      exit 1
    fi
    ;;
  merge)
    if [ ! -d "$out/corpus" ]; then echo "fuzz: nothing to merge ($out/corpus missing)" >&2; exit 2; fi
    before=$(ls "$corpus" | wc -l)
    # Edges only (no hit-count buckets) and inputs of at most 4 KiB: the fewest files that keep
    # every edge the fuzzer reached.
    "$bin" -timeout=10 -rss_limit_mb=2048 -merge=1 -use_counters=0 -max_len=4096 \
      "$corpus" "$out/corpus" >"$out/merge.log" 2>&1
    echo "fuzz merge: $before -> $(ls "$corpus" | wc -l) inputs, $(du -sh "$corpus" | cut -f1) in $corpus"
    ;;
  fuzz)
    mkdir -p "$out/corpus" "$out/crashes"
    cp -n "$corpus"/* "$out/corpus/" 2>/dev/null || true
    log=$out/fuzz.log
    rc=0
    if [ "$jobs" -gt 1 ]; then
      # Each job writes fuzz-N.log into the current directory.
      rm -f "$out"/fuzz-*.log
      (cd "$out" && "$bin" "${common[@]}" -max_total_time="$seconds" -artifact_prefix="$out/crashes/" \
        -jobs="$jobs" -workers="$jobs" "$out/corpus") >"$log" 2>&1 || rc=$?
      cat "$out"/fuzz-*.log >>"$log" 2>/dev/null || true
    else
      "$bin" "${common[@]}" -max_total_time="$seconds" -artifact_prefix="$out/crashes/" \
        "$out/corpus" >"$log" 2>&1 || rc=$?
    fi
    runs=$( (grep -o 'stat::number_of_executed_units: [0-9]*' "$log" || true) | awk '{s+=$2} END {print s+0}')
    cov=$( (grep -o 'cov: [0-9]* ft: [0-9]*' "$log" || true) | tail -n 1)
    n=$(ls "$out/corpus" | wc -l)
    if [ "$rc" != 0 ] || grep -q 'ERROR: \(AddressSanitizer\|LeakSanitizer\|libFuzzer\)\|runtime error:' "$log"; then
      grep -m 1 -A 40 'ERROR: \|runtime error:' "$log" >&2 || tail -n 40 "$log" >&2
      echo "fuzz: CRASH after ${seconds}s budget ($runs runs); input in $out/crashes/: $(ls "$out/crashes" | tr '\n' ' '); log $log"
      exit 1
    fi
    echo "fuzz: ${seconds}s, $runs runs ($((runs / (seconds > 0 ? seconds : 1)))/s), $cov, corpus $n inputs, no crash"
    ;;
esac
