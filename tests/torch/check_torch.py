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


def check_blocks(events, forwarded=True, extra_forwards=0, probes=True):
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
    elif forwarded and not status[0]["message"].split(";")[0].endswith("/libc10.so"):
        fail(f"status: {status[0]['message']}")
    elif not forwarded and "not forwarded" not in status[0]["message"]:
        fail(f"status: {status[0]['message']}")
    elif probes and ("; requested sizes seen" not in status[0]["message"] or not status[0]["message"].endswith("; streams seen")):
        fail(f"status: the request probe or the stream lookup is not on: {status[0]['message']}")
    elif not probes and not status[0]["message"].endswith(
            "; requested sizes not seen: VRAMTRACE_TORCH_REQUESTS=0; streams not seen"):
        fail(f"status: VRAMTRACE_TORCH_REQUESTS=0 not said: {status[0]['message']}")
    if not probes:  # turned off: no request, no stream, the allocator object untouched
        handed = [b for b in blocks if b["size"] > 0]
        if any("requested" in b or "stream" in b for b in handed):
            fail("VRAMTRACE_TORCH_REQUESTS=0: blocks carry a request or a stream")
        if expect.get("vtable_intact") != 1:
            fail("VRAMTRACE_TORCH_REQUESTS=0: the allocator's virtual table was changed")
        return
    if expect.get("vtable_intact") != 0:
        fail("the request probe is on, yet the allocator's virtual table is its own")
    # The requests (the probe on the allocator's allocate, request_probe.h): every block handed out
    # through it carries the size asked for, no larger than the block and rounding into it; only
    # the calls that entered allocate() before the probe was installed (at the first block) lack
    # it, and so do the stand-in's direct calls (fc10_slow_malloc, the bench loop: PyTorch's
    # raw_alloc is another entry too): nearly all of a run's blocks carry it.
    handed = [b for b in blocks if b["size"] > 0]
    without = [b for b in handed if "requested" not in b]
    if len(handed) >= 20 and len(without) > len(handed) // 20:
        fail(f"{len(without)} of {len(handed)} blocks handed out carry no requested size")
    for b in handed:
        r = b.get("requested")
        if r is not None and not (0 < r <= b["size"] and (r + 511) // 512 * 512 <= b["size"]):
            fail(f"block of {b['size']} bytes: requested {r}")
            break
    # The streams (current_stream.h): the blocks each stream's thread handed out carry it, the
    # others none (the default stream).
    if "streams" in expect:
        seen = {}
        for b in handed:
            if "stream" in b:
                seen[str(b["stream"])] = seen.get(str(b["stream"]), 0) + 1
        if seen != expect["streams"]:
            fail(f"blocks per stream: {seen}, the workload allocated {expect['streams']}")
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
    if expect.get("errno_changes"):
        fail(f"errno changed across {expect['errno_changes']} block reports")
    return blocks


def line_key(frame):
    return f"{frame[0].rsplit('/', 1)[-1]}:{frame[1]} in {frame[2]}"


def torch_ooms(rep):
    return [o for o in rep["ooms"] if "torch" in o]


def check_message(o, want):
    """The report words PyTorch's figures as its own OutOfMemoryError does."""
    msg = o["torch"]["message"]
    if msg not in want:
        fail(f"PyTorch's message\n  {want}\ndoes not contain the report's\n  {msg}")


def check_report(case, events):
    rep = report()
    text = report_text()
    t = rep.get("torch")
    if t is None:
        fail("no torch section in the report")
        return
    if case in ("bad_reserved", "stray_block"):
        want = "total_reserved says" if case == "bad_reserved" else "lies in no segment"
        if t["layer"] != "off" or want not in t["layer_detail"] or t["devices"]:
            fail(f"layer {t['layer']}: {t['layer_detail']} (devices: {len(t['devices'])})")
        if "block events: off" not in text:
            fail("the text report does not say the layer is off")
        if not rep["peak"]["bytes"]:
            fail("the driver-level figures are gone too")
        return
    if case == "unavailable":
        if t["layer"] != "unavailable" or "no block event arrived" not in t["layer_detail"]:
            fail(f"layer {t['layer']}: {t['layer_detail']}")
        return
    if case == "async":
        if t["layer"] != "not used" or "cudaMallocAsync" not in t["mode"]:
            fail(f"mode {t['mode']}, layer {t['layer']}")
        return
    if t["layer"] != "on" or t["mode"] != "caching allocator":
        fail(f"mode {t['mode']}, layer {t['layer']}: {t['layer_detail']}")
        return
    # The figures at each mark equal the allocator's own (memory_stats terms).
    marks = {(m["name"], m["kind"]): m for m in t["marks"]}
    names = {"allocated": "allocated_bytes", "reserved": "reserved_bytes", "inactive_split": "inactive_split_bytes",
             "largest_free": "largest_free_block_bytes", "segments": "segments", "blocks": "blocks"}
    for name, st in expect["marks"].items():
        for kind in ("begin", "end"):
            m = marks.get((name, kind))
            if not m:
                fail(f"no figures at mark {name} ({kind})")
                continue
            for k, jk in names.items():
                if m[jk] != st[k]:
                    fail(f"mark {name}: {jk} {m[jk]}, the allocator says {st[k]}")
    # The peak: the highest total_allocated of the block records, and where it was reached.
    blocks = [e for e in events if e["op"] == "torch_block"]
    dev = t["devices"][0]
    if blocks and dev["peak_allocated_bytes"] != max(b["total_allocated"] for b in blocks):
        fail(f"peak allocated {dev['peak_allocated_bytes']}, the records' highest is {max(b['total_allocated'] for b in blocks)}")
    if blocks and dev["peak_reserved_bytes"] != max(b["total_reserved"] for b in blocks):
        fail(f"peak reserved {dev['peak_reserved_bytes']}")
    held = dev["at_peak"]["figures"]
    if held["allocated_bytes"] != dev["peak_allocated_bytes"]:
        fail(f"the view at the peak shows {held['allocated_bytes']} allocated")
    if sum(h["bytes"] for h in dev["at_peak"]["holders"]) > held["allocated_bytes"]:
        fail("holders add up to more than allocated")
    ooms = torch_ooms(rep)
    if len(ooms) != len(expect["ooms"]):
        fail(f"{len(ooms)} PyTorch OOMs in the report, {len(expect['ooms'])} raised")
    for o, want in zip(ooms, expect["ooms"]):
        check_message(o, want)
        if "PyTorch: " + o["torch"]["message"] not in text:
            fail("the text report lacks PyTorch's message")
    if expect["forwarded_oom"] != len(expect["ooms"]):
        fail(f"{expect['forwarded_oom']} OOM reports reached libc10.so, {len(expect['ooms'])} were made")
    verdicts = [o["verdict"] for o in ooms]
    want_verdict = {"report_threads": None, "report_fragmented": "fragmentation", "report_live_set": "live_set_too_large",
                    "report_kept_alive": "leak_growth", "report_outside": "outside_pytorch"}[case]
    if want_verdict and (not verdicts or any(v != want_verdict for v in verdicts)):
        fail(f"verdicts {verdicts}, expected {want_verdict}: {[o['causes'][:2] for o in ooms]}")
    if case == "report_threads":
        top = dev["at_peak"]["holders"][0]
        worker_large = [v for v in expect["blocks"].values() if v[2].endswith("worker")]
        lines = {line_key(v) for v in worker_large}
        if top["line"] not in lines:
            fail(f"the top holder at the peak is {top['line']}, not one of the worker lines {lines}")
    if case == "report_fragmented":
        o = ooms[0]["torch"]
        if not (o["reserved_unallocated_bytes"] >= o["block_bytes"] > o["at_oom"]["figures"]["largest_free_block_bytes"]):
            fail(f"not the fragmentation case: {o['reserved_unallocated_bytes']} {o['block_bytes']} {o['at_oom']['figures']}")
        if "expandable_segments:True" not in " ".join(ooms[0]["remedies"]):
            fail(f"remedies: {ooms[0]['remedies']}")
        want_line = line_key(expect["lines"]["request"])
        if want_line not in " ".join(ooms[0]["remedies"]) + text:
            pass  # the request line is shown in the stack ("requested at")
    if case == "report_kept_alive":
        kept = line_key(expect["lines"]["kept"])
        if kept not in ooms[0]["remedies"][0]:
            fail(f"the remedy does not name {kept}: {ooms[0]['remedies'][0]}")
        if not any(g["line"] == kept for g in t["growth"]):
            fail(f"{kept} is not among the growing lines: {[g['line'] for g in t['growth']]}")
    if case == "report_live_set":
        holders = line_key(expect["lines"]["holders"])
        if holders not in " ".join(ooms[-1]["remedies"]):
            fail(f"the remedies do not name {holders}: {ooms[-1]['remedies']}")
    if case == "report_outside":
        if "libnccl.so.2" not in ooms[0]["causes"][0]["summary"]:
            fail(f"the cause does not name libnccl.so.2: {ooms[0]['causes'][0]['summary']}")


events = dump()
ops = {e["op"] for e in events}
if case == "blocks":
    check_blocks(events)
elif case == "unforwarded":
    check_blocks(events, forwarded=False)
elif case == "no_requests":
    check_blocks(events, probes=False)
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
elif case.startswith("report_") or case in ("bad_reserved", "stray_block", "unavailable", "async"):
    check_report(case, events)
else:
    fail(f"unknown case {case}")

for f in failures:
    print("FAIL", f)
print(("PASS" if not failures else "FAIL") + f" {case}: {len(events)} events")
sys.exit(1 if failures else 0)
