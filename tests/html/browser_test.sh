#!/usr/bin/env bash
# The HTML report in a real browser: traces programs on the simulated driver (one argument of
# the traced command is hostile markup), renders a trace page and a job page with
# `vramtrace report --format html`, loads each in headless Chromium with tests/html/interact.js
# appended (zoom, hover, click, search), and checks the DOM after the scripts ran
# (tests/html/check_dom.py) and that the page logged nothing to the console (script errors,
# CSP refusals). Screenshots of the untouched pages go to BUILD_DIR/tests/html/.
# Usage: tests/html/browser_test.sh BUILD_DIR. Prints one line; exit 0 when it passed or when
# Chromium is not installed (skipped).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: browser_test.sh BUILD_DIR}" && pwd)
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "browser_test: skipped: chromium not installed"
  exit 0
fi
out=$build/tests/html
mkdir -p "$out"
work=$(mktemp -d /tmp/vramtrace-html.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "browser_test: FAILED: $*"
  exit 1
}

# Traces: the demo workload (peak, pinned memory, a pool, leak, growth, an OOM), and a leak
# that runs the device out of memory, with hostile text in its command line (shown in the
# trace page's header) and in its file name (shown in the job page's rank table).
hostile='</script><img src=x onerror=alert(1)><!-- "&'"'"
hostile_name='<img src=x onerror=alert(2)>.trace'
export LD_LIBRARY_PATH=$build/lib/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$work/job"
"$build/bin/vramtrace" run -o "$work/job/demo.trace" -- "$build/tests/programs/demo_workload" >/dev/null 2>&1 ||
  [ -s "$work/job/demo.trace" ] || fail "tracing demo_workload produced no trace"
FAKECUDA_TOTAL_BYTES=4GiB "$build/bin/vramtrace" run -o "$work/job/$hostile_name" -- \
  "$build/tests/programs/oom_scenarios" leak "$hostile" >/dev/null 2>&1 || fail "tracing oom_scenarios leak failed"
"$build/bin/vramtrace" report "$work/job/$hostile_name" --format html -o "$out/report.html" || fail "report --format html failed"
"$build/bin/vramtrace" report "$work/job" --format html -o "$out/job.html" || fail "job report --format html failed"

# One Chromium run per page: flags that work unprivileged, offline, in a container. Headless
# Chromium now and then never exits after a screenshot on a loaded machine (seen once in CI: the
# job page's screenshot, 180 s): a run gets 60 s, and one that ran out is tried once more with a
# fresh profile. Its output, not its exit, is what the checks below judge.
browse_once() {
  timeout -k 5 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$(mktemp -d "$work/profile.XXXXXX")" \
    --virtual-time-budget=5000 "$@"
}
browse() {
  local rc=0 dump
  dump=$(mktemp "$work/stdout.XXXXXX")
  browse_once "$@" >"$dump" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "browser_test: chromium did not finish in 60 s; once more" >&2
    rc=0
    browse_once "$@" >"$dump" || rc=$?  # (what the first run printed is dropped)
  fi
  cat "$dump"
  return "$rc"
}
# Renders $out/NAME.html into $work/NAME.dom, failing on a load error or a console message.
dom_of() {
  browse --enable-logging=stderr --v=0 --dump-dom "file://$out/$1.html" >"$work/$1.dom" 2>"$work/$1.log" ||
    fail "chromium could not load $1.html"
  if grep -F 'CONSOLE' "$work/$1.log" | grep -F "file://$out/$1.html" >"$work/$1.console"; then
    fail "$1.html logged to the console: $(head -3 "$work/$1.console")"
  fi
}
pages=0
for page in report job; do
  kind=trace text=$hostile
  [ "$page" = job ] && kind=job text=$hostile_name
  url="file://$out/$page.html"
  # A copy with the interaction script, allowed by the page's own CSP nonce.
  python3 - "$out/$page.html" "$here/interact.js" "$work/$page.test.html" <<'PY' || fail "cannot prepare $page.html"
import re, sys
page, script = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2], encoding="utf-8").read()
nonce = re.search(r"script-src 'nonce-([A-Za-z0-9]+)'", page).group(1)
at = page.rindex("</body>")
open(sys.argv[3], "w", encoding="utf-8").write(page[:at] + f'<script nonce="{nonce}">\n{script}</script>\n' + page[at:])
PY
  test_url="file://$work/$page.test.html"
  browse --enable-logging=stderr --v=0 --dump-dom "$test_url" >"$work/$page.dom" 2>"$work/$page.log" ||
    fail "chromium could not load $page.html (see $work/$page.log)"
  # Console messages of the page itself (errors, CSP refusals) fail the test; Chromium's own
  # noise (D-Bus, GPU probing) is not from the page.
  if grep -F 'CONSOLE' "$work/$page.log" | grep -F "$test_url" >"$work/$page.console"; then
    fail "$page.html logged to the console: $(head -3 "$work/$page.console")"
  fi
  if ! python3 "$here/check_dom.py" "$kind" "$work/$page.dom" "$text" >"$work/$page.problems"; then
    fail "$page.html: $(paste -sd';' "$work/$page.problems")"
  fi
  browse --screenshot="$out/$page.png" --window-size=1400,1000 --hide-scrollbars --run-all-compositor-stages-before-draw \
    "$url" >/dev/null 2>&1 ||
    fail "chromium could not take a screenshot of $page.html"
  [ -s "$out/$page.png" ] || fail "no screenshot of $page.html"
  pages=$((pages + 1))
done
# A click on the demo's timeline: the live set at that moment (the screenshot in docs/timeline-click.png).
"$build/bin/vramtrace" report "$work/job/demo.trace" --format html -o "$work/demo.html" || fail "report --format html (demo) failed"
python3 - "$work/demo.html" "$here/click_timeline.js" "$work/demo.click.html" <<'PY' || fail "cannot prepare demo.html"
import re, sys
page, script = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2], encoding="utf-8").read()
nonce = re.search(r"script-src 'nonce-([A-Za-z0-9]+)'", page).group(1)
at = page.rindex("</body>")
open(sys.argv[3], "w", encoding="utf-8").write(page[:at] + f'<script nonce="{nonce}">\n{script}</script>\n' + page[at:])
PY
browse --dump-dom "file://$work/demo.click.html" >"$work/demo.click.dom" 2>/dev/null || fail "chromium could not load demo.click.html"
grep -q '<div class="snapshot"><h4>Live at ' "$work/demo.click.dom" || fail "a click on the demo's timeline showed no live set"
browse --screenshot="$out/timeline-click.png" --window-size=1400,1900 --hide-scrollbars --run-all-compositor-stages-before-draw \
  "file://$work/demo.click.html" >/dev/null 2>&1 || fail "chromium could not take a screenshot of the timeline click"
[ -s "$out/timeline-click.png" ] || fail "no screenshot of the timeline click"
pages=$((pages + 1))
# A PyTorch page (the stand-in caching allocator, tests/torch): its section, the tensor timeline,
# PyTorch's OOM message, the user-frames switch.
VRAMTRACE_OUTPUT="$work/torch.trace" LD_PRELOAD="$build/lib/libvramtrace.so" VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0 \
  FAKECUDA_TOTAL_BYTES=512MiB python3 "$here/../torch/torch_workload.py" kept_alive "$build/tests/torch/default" \
  "$work/torch.json" >/dev/null 2>&1 || fail "the PyTorch stand-in workload failed"
"$build/bin/vramtrace" report "$work/torch.trace" --format html -o "$out/torch.html" || fail "report --format html (torch) failed"
dom_of torch
python3 "$here/check_dom.py" torch "$work/torch.dom" >"$work/torch.problems" || fail "torch.html: $(paste -sd';' "$work/torch.problems")"
browse --screenshot="$out/torch.png" --window-size=1400,1000 --hide-scrollbars --run-all-compositor-stages-before-draw \
  "file://$out/torch.html" >/dev/null 2>&1 || fail "chromium could not take a screenshot of torch.html"
pages=$((pages + 1))
# PyTorch pages driven (tests/html/torch_interact.js, issue 37): the tensor timeline's state at each
# OOM is PyTorch's allocated then, the flame graph's user frames hold no interpreter/ctypes/libffi
# or library frame, the last OOM comes first, PyTorch's cache flushes are listed. kept_alive: one
# OOM; live_set: two (the first caught by the program, the second its last).
VRAMTRACE_OUTPUT="$work/torch2.trace" LD_PRELOAD="$build/lib/libvramtrace.so" VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0 \
  FAKECUDA_TOTAL_BYTES=512MiB python3 "$here/../torch/torch_workload.py" live_set "$build/tests/torch/default" \
  "$work/torch2.json" >/dev/null 2>&1 || fail "the PyTorch stand-in workload (live_set) failed"
"$build/bin/vramtrace" report "$work/torch2.trace" --format html -o "$out/torch2.html" || fail "report --format html (torch2) failed"
for page in torch torch2; do
  python3 - "$out/$page.html" "$here/torch_interact.js" "$work/$page.drive.html" <<'PY' || fail "cannot prepare $page.html"
import re, sys
page, script = open(sys.argv[1], encoding="utf-8").read(), open(sys.argv[2], encoding="utf-8").read()
nonce = re.search(r"script-src 'nonce-([A-Za-z0-9]+)'", page).group(1)
at = page.rindex("</body>")
open(sys.argv[3], "w", encoding="utf-8").write(page[:at] + f'<script nonce="{nonce}">\n{script}</script>\n' + page[at:])
PY
  browse --dump-dom "file://$work/$page.drive.html" >"$work/$page.drive.dom" 2>/dev/null || fail "chromium could not load $page.drive.html"
  result=$(python3 -c 'import re, sys; m = re.search(r"data-vt-torch=\"([^\"]*)\"", open(sys.argv[1]).read()); print(m.group(1) if m else "did not run")' \
    "$work/$page.drive.dom")
  [ "$result" = ok ] || fail "$page.html (tests/html/torch_interact.js): $result"
done
pages=$((pages + 1))
# An OOM in backward (the stand-in autograd engine, tests/torch/backward_workload.py): its card's
# heading says so, with the autograd thread's name.
VRAMTRACE_OUTPUT="$work/backward.trace" LD_PRELOAD="$build/lib/libvramtrace.so" VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0 \
  python3 "$here/../torch/backward_workload.py" "$build/tests/torch" "$work/backward.json" >/dev/null 2>&1 ||
  fail "the stand-in backward workload failed"
"$build/bin/vramtrace" report "$work/backward.trace" --format html -o "$out/backward.html" || fail "report --format html (backward) failed"
dom_of backward
grep -qF "<h4>Requested at (in backward, on PyTorch's autograd thread pt_autograd_0)</h4>" "$work/backward.dom" ||
  fail "backward.html: the OOM card does not say it was requested in backward"
pages=$((pages + 1))
# Memory shared with other processes (tests/programs/sharing.cpp, VMM export, import and retain):
# the leaks section's "Shared memory" block with the imports' call sites.
VRAMTRACE_OUTPUT="$work/sharing.trace" LD_PRELOAD="$build/lib/libvramtrace.so" VRAMTRACE_KERNELS=0 FAKECUDA_CONTEXT_BYTES=0 \
  "$build/tests/programs/sharing" vmm >/dev/null 2>&1 || fail "tracing the sharing program failed"
"$build/bin/vramtrace" report "$work/sharing.trace" --format html -o "$out/sharing.html" || fail "report --format html (sharing) failed"
dom_of sharing
python3 - "$work/sharing.dom" <<'PY' || fail "sharing.html: no shared-memory block with the imports' call sites"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r'<div class="sharing"><h3>Shared memory.*?</div>', dom, re.S)
sys.exit(0 if block and re.search(r"Imported: <strong>[1-9][0-9.]* MiB</strong>", dom) and
         'data-vt-status="ok"' in dom and '<table class="groups"' in dom[block.start():] else 1)
PY
pages=$((pages + 1))
# A library opened with RTLD_DEEPBIND (tests/programs/isolated_open.cpp): the header's chip and
# the line naming it (report "interception").
VRAMTRACE_OUTPUT="$work/isolated.trace" LD_PRELOAD="$build/lib/libvramtrace.so" VRAMTRACE_KERNELS=0 \
  "$build/tests/programs/isolated_open" deepbind >/dev/null 2>&1 || fail "tracing the isolated_open program failed"
"$build/bin/vramtrace" report "$work/isolated.trace" --format html -o "$out/isolated.html" || fail "report --format html (isolated) failed"
dom_of isolated
python3 - "$work/isolated.dom" <<'PY' || fail "isolated.html: the header does not name the RTLD_DEEPBIND library"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
sys.exit(0 if '<span class="chip bad">memory calls escaped the hooks' in dom and
         re.search(r"<li>2 libraries opened where the hooks cannot reach[^<]*libvt_isolated_plugin\.so \(RTLD_DEEPBIND\)", dom)
         else 1)
PY
pages=$((pages + 1))
echo "browser_test: ok ($pages pages rendered and driven without console errors; screenshots in $out)"
