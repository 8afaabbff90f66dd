#!/usr/bin/env bash
# The walker's verdicts end to end (status_e2e.cpp, a fake CPython 3.14 in the process, the real
# libvramtrace.so): for each mode, stderr and the trace must say the same thing once.
#   ok:        no "Python frames" line on stderr; config "on"/"ok"; one note "Python frames on: ...";
#              both allocations carry the fake /src/train.py frames
#   mismatch:  one stderr line "Python frames off: ... interpreter_frame.owner ..."; the config record
#              "refused" with the same text; no note; no Python frames
#   selfcheck: one stderr line "Python frames off: Python self-check: ..."; config "on"; one note with
#              the same text; Python frames on the first allocation only
#   newer:     one stderr line "Python frames: CPython 3.16 is newer ..." and the same config message
#              ("on"); one note "Python frames on: ... frames from now on"; frames on the second
#              allocation only (after the self-check)
# Usage: tests/python/status_e2e.sh BUILD_DIR
set -uo pipefail
build=$(realpath "${1:?usage: status_e2e.sh BUILD_DIR}")
here=$(cd "$(dirname "$0")" && pwd)
fails=0
for mode in ok mismatch selfcheck newer; do
  out=$(mktemp -d)
  if ! env LD_LIBRARY_PATH="$build/lib/fakecuda" VRAMTRACE_OUTPUT="$out" VRAMTRACE_KERNELS=0 \
      "$build/tests/python/python_status_e2e" "$here/fixtures" "$build/lib/libvramtrace.so" "$mode" \
      >"$out/stdout" 2>"$out/stderr"; then
    echo "FAIL $mode: the program failed: $(tail -3 "$out/stderr")"
    fails=$((fails + 1)); rm -rf "$out"; continue
  fi
  python3 - "$mode" "$build/bin/vramtrace" "$out" <<'PY' || fails=$((fails + 1))
import glob, json, subprocess, sys
mode, vt, out = sys.argv[1:4]
traces = glob.glob(out + "/*.trace")
bad = []
if len(traces) != 1:
    print("FAIL %s: %d traces" % (mode, len(traces))); sys.exit(1)
expect = open(out + "/stdout").read().split()[1]  # "expect FILE:LINE:QUALNAME"
err = [l for l in open(out + "/stderr", errors="replace").read().splitlines() if "Python frames" in l]
info = json.loads(subprocess.run([vt, "info", traces[0]], capture_output=True, text=True, check=True).stdout)
py, notes = info["python_frames"], info["notes"]
allocs = []
for line in subprocess.run([vt, "dump", traces[0]], capture_output=True, text=True, check=True).stdout.splitlines():
    e = json.loads(line)
    if e["op"] == "cuMemAlloc_v2":
        f = [g for g in e.get("stack", []) if g["python"]]
        allocs.append("%s:%s:%s" % (f[0]["file"], f[0]["line"], f[0]["function"]) if f else None)
if mode == "ok":
    if err: bad.append("stderr: %s" % err)
    if py != {"status": "on", "message": "ok"}: bad.append("config: %s" % py)
    if notes != ["Python frames on: the self-check against CPython's frame API passed"]: bad.append("notes: %s" % notes)
    if allocs != [expect, expect]: bad.append("frames: %s, expected %s twice" % (allocs, expect))
elif mode == "mismatch":
    want = ("CPython 3.14's debug offsets disagree with the layout table "
            "(interpreter_frame.owner is 83, the table has 74)")
    if err != ["vramtrace: Python frames off: " + want]: bad.append("stderr: %s" % err)
    if py != {"status": "refused", "message": want}: bad.append("config: %s" % py)
    if notes: bad.append("notes: %s" % notes)
    if allocs != [None, None]: bad.append("frames: %s" % allocs)
elif mode == "newer":
    want = ("CPython 3.16 is newer than this build knows; its debug offsets match 3.15's for every field "
            "read, so it is read as 3.15 once a self-check on the main thread passes")
    if err != ["vramtrace: Python frames: " + want]: bad.append("stderr: %s" % err)
    if py != {"status": "on", "message": want}: bad.append("config: %s" % py)
    if notes != ["Python frames on: the self-check against CPython's frame API passed: frames from now on"]:
        bad.append("notes: %s" % notes)
    if allocs != [None, expect]: bad.append("frames: %s, expected none then %s" % (allocs, expect))
else:
    want = "Python self-check: instruction offset mismatch"
    if err != ["vramtrace: Python frames off: " + want]: bad.append("stderr: %s" % err)
    if py != {"status": "on", "message": "ok"}: bad.append("config: %s" % py)
    if notes != ["Python frames off: " + want]: bad.append("notes: %s" % notes)
    if allocs != [expect, None]: bad.append("frames: %s, expected %s then none" % (allocs, expect))
for b in bad:
    print("FAIL %s: %s" % (mode, b))
print("%s %s" % ("FAIL" if bad else "ok", mode))
sys.exit(1 if bad else 0)
PY
  rm -rf "$out"
done
[ $fails -eq 0 ]
