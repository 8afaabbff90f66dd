"""Checks a trace of torch_workload.py (run.sh runs each case):

    python3 check_torch.py VRAMTRACE TRACE EXPECT_JSON CASE STDERR_LOG

CASE says what must hold: the block layer's events (blocks), each way it must stay silent or turn
itself off (oldsig, absent, unforwarded, bad_totals, unaligned, cpu_events), and the report's
PyTorch figures and verdicts (report_* cases). Prints one FAIL line per failure and exits 1."""
import json
import subprocess
import sys

vt, trace, expect_path, case, log_path = sys.argv[1:6]
expect = json.load(open(expect_path))
log = open(log_path, errors="replace").read()
failures = []


def fail(msg):
    failures.append(msg)


def dump():
    out = subprocess.run([vt, "dump", trace], capture_output=True, text=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def report():
    out = subprocess.run([vt, "report", trace, "--format", "json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def report_text():
    return subprocess.run([vt, "report", trace], capture_output=True, text=True, check=True).stdout


def innermost_python(stack):
    for f in stack:
        if f["python"]:
            return f
    return None


def check_blocks(events, forwarded=True, extra_forwards=0):
    blocks = [e for e in events if e["op"] == "torch_block"]
    status = [e for e in events if e["op"] == "torch_status"]
    if len(blocks) != expect["reports"]:
        fail(f"{len(blocks)} block events, the allocator reported {expect['reports']}")
    if forwarded and expect["forwarded"] != expect["reports"] + extra_forwards:
        fail(f"{expect['forwarded']} calls reached libc10.so, {expect['reports']} were made")
    if not forwarded and expect["forwarded"] != 0:
        fail(f"{expect['forwarded']} calls reached a libc10.so that does not define the function")
    if len(status) != 1 or status[0].get("state") != "on":
        fail(f"status records: {status}")
    elif forwarded and not status[0]["message"].endswith("/libc10.so"):
        fail(f"status: {status[0]['message']}")
    elif not forwarded and "not forwarded" not in status[0]["message"]:
        fail(f"status: {status[0]['message']}")
    # The totals: per device, the running sum of sizes is total_allocated after each block.
    running = {}
    for b in blocks:
        running[b["device"]] = running.get(b["device"], 0) + b["size"]
        if running[b["device"]] != b["total_allocated"]:
            fail(f"at {b['t_ns']}: running sum {running[b['device']]} != total_allocated {b['total_allocated']}")
            break
        if b["size"] % 512:
            fail(f"size {b['size']} is not a multiple of 512")
    # Tracked allocations: the right thread and the Python line that made them.
    allocs = {str(b["address"]): b for b in blocks if b["size"] > 0}
    for addr, (file, line, func, tid) in expect["blocks"].items():
        b = allocs.get(addr)
        if not b:
            fail(f"no block event for {addr} ({file}:{line})")
            continue
        if b["tid"] != tid:
            fail(f"{addr}: thread {b['tid']}, made on {tid}")
        f = innermost_python(b.get("stack", []))
        if not f or (f["file"], f["line"], f["function"]) != (file, line, func):
            fail(f"{addr}: innermost Python frame {f and (f['file'], f['line'], f['function'])}, expected {(file, line, func)}")
    if "PyTorch block events off" in log:
        fail("stderr: " + log)
    return blocks


events = dump()
ops = {e["op"] for e in events}
if case == "blocks":
    check_blocks(events)
elif case == "unforwarded":
    check_blocks(events, forwarded=False)
elif case in ("oldsig", "absent"):
    # The function never reaches us: no block events, no status; the driver-level events remain.
    if ops & {"torch_block", "torch_status", "torch_oom"}:
        fail(f"torch records in a trace where the layer cannot work: {sorted(ops)}")
    if "cuMemAlloc_v2" not in ops:
        fail("no driver-level segments")
    if case == "oldsig" and expect["forwarded"] != expect["reports"]:
        fail(f"the old-signature function got {expect['forwarded']} of {expect['reports']} calls")
elif case in ("bad_totals", "unaligned"):
    blocks = [e for e in events if e["op"] == "torch_block"]
    status = [e for e in events if e["op"] == "torch_status"]
    want = "add up to" if case == "bad_totals" else "not a non-zero multiple of 512"
    if len(blocks) != 9:
        fail(f"{len(blocks)} block events; the 10th is the first bad one")
    if [s.get("state") for s in status] != ["on", "off"] or want not in status[-1].get("message", ""):
        fail(f"status records: {status}")
    if log.count("PyTorch block events off") != 1 or want not in log:
        fail(f"stderr must say it once: {log!r}")
    if expect["forwarded"] != expect["reports"]:
        fail(f"forwarding must go on after the layer turns off: {expect['forwarded']} of {expect['reports']}")
elif case == "cpu_events":
    # The CPU reports (one per allocation) are ignored, and still forwarded.
    allocs = sum(1 for e in events if e["op"] == "torch_block" and e["size"] > 0)
    check_blocks(events, extra_forwards=allocs)
else:
    fail(f"unknown case {case}")

for f in failures:
    print("FAIL", f)
print(("PASS" if not failures else "FAIL") + f" {case}: {len(events)} events")
sys.exit(1 if failures else 0)
