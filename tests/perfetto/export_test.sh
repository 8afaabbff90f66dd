#!/usr/bin/env bash
# The Perfetto export of bench/gen_trace's mix (1 M events, 64-frame stacks): opened by real
# JSON consumers and checked for the trace-event format's structure and a size budget.
#   - check_export.py: every "sf" in stackFrames, parents present, no cycles, counters monotonic
#     per track, instants agree with otherData.policy, and at most MAX_BPE bytes per trace event
#     (the target is 5 MB per 1 M events; bytes, never time);
#   - parse_export.js (node, V8's JSON.parse) resolves every stack through its parents;
#   - headless Chromium, when installed, JSON.parses it in a page (the browser that opens it).
# Usage: tests/perfetto/export_test.sh BUILD_DIR. Prints one line per consumer; exit 1 on failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: export_test.sh BUILD_DIR}" && pwd)
events=${EVENTS:-1000000}
max_bpe=${MAX_BPE:-5}
work=$(mktemp -d /tmp/vramtrace-perfetto.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "export_test: FAILED: $*"
  exit 1
}
"$build/bench/gen_trace" "$work/mix.trace" "$events" >/dev/null 2>&1 || fail "gen_trace failed"
"$build/bin/vramtrace" export --perfetto "$work/mix.json" "$work/mix.trace" || fail "export --perfetto failed"
python3 "$here/check_export.py" "$work/mix.json" --events "$events" --max-bytes-per-event "$max_bpe" --expect-stacks ||
  fail "check_export.py"
node=$(command -v node || command -v nodejs || true)
[ -n "$node" ] || fail "node is not installed (apt-get install nodejs)"
"$node" "$here/parse_export.js" "$work/mix.json" || fail "parse_export.js"
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "export_test: chromium not installed: the browser check did not run"
  exit 0
fi
python3 - "$work/mix.json" "$work/page.html" <<'PY'
import sys
data = open(sys.argv[1], encoding="utf-8").read().replace("</", "<\\/")  # still the same JSON
open(sys.argv[2], "w", encoding="utf-8").write(
    '<!doctype html><script type="application/json" id="t">' + data + '</script><pre id="out">not run</pre><script>'
    'try { const t = JSON.parse(document.getElementById("t").textContent);'
    ' document.getElementById("out").textContent = "parsed " + t.traceEvents.length + " events " +'
    ' Object.keys(t.stackFrames).length + " frames"; }'
    ' catch (e) { document.getElementById("out").textContent = "error " + e; }</script>')
PY
"$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update \
  --disable-sync --user-data-dir="$work/profile" --virtual-time-budget=10000 --dump-dom "file://$work/page.html" \
  >"$work/dom" 2>"$work/log" || fail "chromium could not load the page (see its log)"
line=$(grep -o '<pre id="out">[^<]*' "$work/dom" | sed 's/.*>//')
case "$line" in
  parsed*) echo "export_test: chromium: $line" ;;
  *) fail "chromium: ${line:-no result}" ;;
esac
