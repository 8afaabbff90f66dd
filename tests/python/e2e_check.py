"""Checks a trace of e2e_workload.py: python3 e2e_check.py VRAMTRACE TRACE EXPECT_JSON [STDERR_LOG].
For each expected allocation size, the event's innermost Python frame must be the expected file,
line and function (native frames around it); "null" means no Python frame at all. The trace's
config record must say Python frames were on, the one note must say the self-check on the main
thread passed (no "Python frames off"), and the workload's stderr must not say so either. An
allocation made inside an installed library is named by its caller's line in the summary."""
import json
import subprocess
import sys

vt, trace, expect_path = sys.argv[1:4]
log = open(sys.argv[4], errors="replace").read() if len(sys.argv) > 4 else ""
expect = json.load(open(expect_path))
library = expect.pop("library")
deep = expect.pop("deep")
dump = subprocess.run([vt, "dump", trace], capture_output=True, text=True, check=True).stdout
events = {}
count = 0
for line in dump.splitlines():
    e = json.loads(line)
    count += 1
    if e["op"] == "cuMemAlloc_v2" and str(e.get("size")) in expect:
        events[str(e["size"])] = e
failures = []
for size, want in expect.items():
    e = events.get(size)
    if not e:
        failures.append(f"{size}: no event")
        continue
    py = [f for f in e.get("stack", []) if f["python"]]
    if want is None:
        if py:
            failures.append(f"{size}: expected no Python frame, got {py[0]}")
        continue
    if not py:
        failures.append(f"{size}: no Python frame in {e.get('stack')}")
        continue
    f = py[0]
    file, line, func = want
    if f["file"] != file or f["function"] != func or (line is not None and f["line"] != line):
        failures.append(f"{size}: innermost Python frame {f['file']}:{f['line']}:{f['function']}, expected {file}:{line}:{func}")
    # Native frames remain below (ctypes/libffi) and above (the interpreter).
    if not any(not g["python"] for g in e["stack"]):
        failures.append(f"{size}: no native frames")
# Below twelve C-to-Python callbacks the native stack (64 frames) is cut before the outer eval
# loops: the Python frames it could not place must still come in order, outermost last.
e = next((json.loads(l) for l in dump.splitlines() if json.loads(l).get("size") == deep["size"]), None)
py = [[f["file"], f["line"], f["function"]] for f in (e or {}).get("stack", []) if f["python"]]
if py[:2] != deep["frames"] or not py or py[-1][2] != "<module>":
    failures.append(f"deep stack: Python frames {py[:3]} ... {py[-1:]}, expected {deep['frames']} ... <module>")
# An allocation made inside an installed library: the library's frame is marked in the JSON and
# the one-line answers name the caller's line in the user's file.
e = next((json.loads(l) for l in dump.splitlines() if json.loads(l).get("size") == library["size"]), None)
py = [f for f in (e or {}).get("stack", []) if f["python"]]
if not py or "/site-packages/vt_fakelib/" not in py[0]["file"]:
    failures.append(f"library allocation: innermost Python frame {py[:1]}")
rep = json.loads(subprocess.run([vt, "report", trace, "--format", "json"], capture_output=True, text=True, check=True).stdout)
top = rep["peak"]["by_device"][0]["live_set"][0]
flags = [(f["file"].split("/")[-1], f.get("library", False)) for f in top["stack"] if f["python"]][:2]
if flags != [("__init__.py", True), (library["caller"][0], False)]:
    failures.append(f"library allocation at the peak: Python frames (file, library) {flags}")
summary = subprocess.run([vt, "summary", trace], capture_output=True, text=True, check=True).stdout
want = "largest holder 64.0 MiB in 1 allocation: {}:{} in {}".format(*library["caller"])
if want not in summary:
    failures.append(f"summary: no '{want}' in {[l for l in summary.splitlines() if 'largest holder' in l]}")
info = json.loads(subprocess.run([vt, "info", trace], capture_output=True, text=True, check=True).stdout)
if info["python_frames"] != {"status": "on", "message": "ok"}:
    failures.append(f"config record: {info['python_frames']}")
if info["notes"] != ["Python frames on: the self-check against CPython's frame API passed"]:
    failures.append(f"notes (the self-check on the main thread must have passed, once): {info['notes']}")
if "Python frames" in log:
    failures.append("stderr: " + " | ".join(l for l in log.splitlines() if "Python frames" in l))
if count < 6000:
    failures.append(f"only {count} events (the stress loop makes 6000)")
for f in failures:
    print("FAIL", f)
print(("PASS" if not failures else "FAIL") + f" {len(expect)} allocations checked, {count} events")
sys.exit(1 if failures else 0)
