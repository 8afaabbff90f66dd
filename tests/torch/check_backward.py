"""Checks a trace of backward_workload.py (backward_run.sh runs it on each CPython):

    python3 check_backward.py VRAMTRACE TRACE EXPECT_JSON

Every block the engine's worker allocated while one thread was inside the engine names that
thread's Python line as its innermost Python frame (and its outermost frame as outermost); the
others (outside the engine, after an exception left it, two threads inside) name no Python frame; an
OOM in backward says so, in the report and its summary; and
the report's peak holder points at the first backward's line. Prints FAIL lines, exits 1 on any."""
import json
import subprocess
import sys

vt, trace, expect_path = sys.argv[1:4]
expect = json.load(open(expect_path))
failures = []
out = subprocess.run([vt, "dump", trace], capture_output=True, text=True, check=True).stdout
events = [json.loads(l) for l in out.splitlines()]
blocks = {str(e["address"]): e for e in events if e.get("op") == "torch_block" and e["size"] > 0}


def python_frames(e):
    return [f for f in e.get("stack", []) if f.get("python")]


for addr, (file, line, func, outermost) in expect["lent"].items():
    b = blocks.get(addr)
    if not b:
        failures.append(f"no block event for {addr} ({func})")
        continue
    if b["tid"] != expect["worker_tid"]:
        failures.append(f"{addr}: made on thread {b['tid']}, not the engine's worker {expect['worker_tid']}")
    py = python_frames(b)
    got = py and (py[0]["file"], py[0]["line"], py[0]["function"])
    if got != (file, line, func):
        failures.append(f"{addr}: innermost Python frame {got}, expected {(file, line, func)} (the engine call)")
    if py and py[-1]["function"].rsplit(".", 1)[-1] != outermost:
        failures.append(f"{addr}: outermost lent frame {py[-1]['function']}, expected {outermost}")
for addr in expect["none"]:
    b = blocks.get(addr)
    if not b:
        failures.append(f"no block event for {addr}")
    elif python_frames(b):
        f = python_frames(b)[0]
        failures.append(f"{addr}: lent {f['file']}:{f['line']} {f['function']}, but no one thread was inside the engine then")
report = json.loads(subprocess.run([vt, "report", trace, "--format", "json"], capture_output=True, text=True, check=True).stdout)
text = subprocess.run([vt, "report", trace], capture_output=True, text=True, check=True).stdout
file, line, func = expect["peak_line"][:3]
where = f"{file.rsplit('/', 1)[-1]}:{line}"
if where not in text:
    failures.append(f"the report does not name {where} (the backward that held the peak):\n{text}")
# The OOM in backward: requested (the report says) in backward, on the autograd thread, at the
# line that ran backward.
ooms = report.get("ooms", [])
file, line, func = expect["oom_line"]
where = f"{file.rsplit('/', 1)[-1]}:{line}"
if len(ooms) != 1:
    failures.append(f"{len(ooms)} OOMs reported, 1 made")
else:
    if ooms[0].get("autograd_thread") != "pt_autograd_0":
        failures.append(f"OOM autograd_thread: {ooms[0].get('autograd_thread')}")
    py = [f for f in ooms[0]["stack"] if f.get("python")]
    if not py or (py[0]["file"], py[0]["line"]) != (file, line):
        failures.append(f"OOM requested at {py[:1]}, expected {where}")
    if f"requested at (in backward, on PyTorch's autograd thread pt_autograd_0)" not in text:
        failures.append("the OOM section does not say it was requested in backward")
summary = subprocess.run([vt, "summary", trace], capture_output=True, text=True, check=True).stdout
if f"at {where} in {func} (in backward)" not in summary:
    failures.append(f"the summary's OOM line does not say {where} in {func} (in backward):\n{summary}")
for f in failures:
    print("FAIL " + f)
print(f"{len(expect['lent'])} lent, {len(expect['none'])} not lent: {'ok' if not failures else 'FAILED'}")
sys.exit(1 if failures else 0)
