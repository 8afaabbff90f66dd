#!/usr/bin/env bash
# A job directory of 16 ranks from bench/gen_trace (RANK=0..15, one rank damaged: its trace cut
# short), analysed three ways that must agree:
#   - `vramtrace report DIR -j 1` (one trace after another) and -j 2 / -j 16: byte-identical text
#     and JSON;
#   - a directory of the ranks' own summaries (`vramtrace report TRACE --format json -o rankN.json`,
#     as each node would make them: docs/scale.md): the same job table, damage and per-rank reports
#     as from the traces; a summary cut short is reported as unreadable, the others still count.
# Usage: tests/scale/job_test.sh BUILD_DIR. Prints one line; exit 1 on the first difference.
set -euo pipefail
build=$(cd "${1:?usage: job_test.sh BUILD_DIR}" && pwd)
vt=$build/bin/vramtrace
work=$(mktemp -d /tmp/vramtrace-job.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "job_test: FAILED: $*"
  exit 1
}
mkdir -p "$work/job" "$work/sums"
for r in $(seq 0 15); do
  RANK=$r "$build/bench/gen_trace" "$work/job/rank$r.trace" $((100000 + r * 7000)) >/dev/null 2>&1 || fail "gen_trace rank $r"
done
# Rank 5 died mid-write: its trace is cut (damaged, figures are lower bounds).
head -c $(($(stat -c %s "$work/job/rank5.trace") * 2 / 3)) "$work/job/rank5.trace" >"$work/cut" && mv "$work/cut" "$work/job/rank5.trace"
for fmt in json text; do
  "$vt" report "$work/job" --format $fmt -j 1 -o "$work/j1.$fmt" 2>/dev/null || fail "report -j 1 --format $fmt"
  for j in 2 16; do
    "$vt" report "$work/job" --format $fmt -j $j -o "$work/j$j.$fmt" 2>/dev/null || fail "report -j $j --format $fmt"
    cmp -s "$work/j1.$fmt" "$work/j$j.$fmt" || fail "-j $j --format $fmt differs from -j 1: $(diff "$work/j1.$fmt" "$work/j$j.$fmt" | head -3)"
  done
done
"$vt" report "$work/job" --format json -o "$work/default.json" 2>/dev/null || fail "report (default -j)"
cmp -s "$work/j1.json" "$work/default.json" || fail "the default -j differs from -j 1"
grep -q '"traces": 16' "$work/j1.json" || fail "the job does not have 16 traces"
grep -q '"damaged": 1' "$work/j1.json" || fail "the cut trace is not counted as damaged"

# Per-rank summaries, then the job from them.
for r in $(seq 0 15); do
  "$vt" report "$work/job/rank$r.trace" --format json -o "$work/sums/rank$r.json" 2>/dev/null || fail "summary of rank $r"
done
echo '{"not": "a vramtrace report"}' >"$work/sums/other.json"  # another tool's file: passed over
"$vt" report "$work/sums" --format json -o "$work/sums.json" 2>/dev/null || fail "report of the summaries"
"$vt" report "$work/sums" --format text -o "$work/sums.txt" 2>/dev/null || fail "report of the summaries (text)"
python3 - "$work/j1.json" "$work/sums.json" <<'PY' || fail "the job from summaries differs from the job from traces"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for key in ("job", "ranks", "problems", "reports"):
    if a[key] != b[key]:
        print(f"'{key}' differs: {json.dumps(a[key])[:200]} vs {json.dumps(b[key])[:200]}")
        sys.exit(1)
PY
# The text: the same header, problems and table (up to the peak line); the per-rank sections stay in the summaries.
table() { sed -n '1,/^  peak: max/p' "$1"; }
[ "$(table "$work/j1.text")" = "$(table "$work/sums.txt")" ] || fail "the text job table from summaries differs: $(diff <(table "$work/j1.text") <(table "$work/sums.txt") | head -4)"
# A summary cut short (its node died while writing): unreadable, named, and the rest still counts.
head -c 100 "$work/sums/rank3.json" >"$work/cut" && mv "$work/cut" "$work/sums/rank3.json"
"$vt" report "$work/sums" --format json -o "$work/cut.json" 2>/dev/null || fail "report of the summaries with one cut short"
python3 - "$work/cut.json" <<'PY' || fail "a cut summary is not reported as unreadable"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["job"]["traces"] == 15 and j["job"]["unreadable"] == 1, j["job"]
assert any(p["kind"] == "unreadable" and p["path"].endswith("rank3.json") for p in j["problems"]), j["problems"]
PY
"$vt" report "$work/sums" --format html -o "$work/x.html" 2>"$work/err" && fail "html of summaries should be refused"
[ "$(wc -l <"$work/err")" = 1 ] || fail "html of summaries: not one error line: $(cat "$work/err")"
echo "job_test: ok (16 ranks: -j 1/2/16 identical in text and JSON; summaries give the same job table, damage and reports)"
