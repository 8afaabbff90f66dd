"""PyTorch checks vramtrace: the oracles of the real-PyTorch workloads (run.py).

For every workload, from the same run:
  marks     torch.cuda.memory_stats() at each vt_marks.mark() against the report's figures at that
            region mark: allocated, reserved, inactive split, both peaks, segments, blocks, the
            allocation retries and the OutOfMemoryErrors, per device;
  recorder  torch.cuda.memory._snapshot() at each mark against `vramtrace peak --at mark:NAME`:
            the same segments and the same live blocks, address by address, and the same user line
            for >= 99% of the live bytes (blocks PyTorch recorded no Python frame for, those its
            autograd thread made, must name the script's backward() line);
  oom       every OutOfMemoryError message the program printed against the report's quote of it,
            figure by figure, and the verdict the workload expects;
  report    fragmentation's worst moment while the program ran (never in its teardown), and the
            leaks without PyTorch's cache;
  gate      (workloads with `gate`) `vramtrace check --max-allocated/--max-reserved` at PyTorch's
            own peaks passes and 1 byte under fails; --max-leak 0 passes;
  at        `vramtrace peak --at mark:NAME`'s PyTorch figures against memory_stats() at that mark;
  perfetto  `vramtrace export --perfetto`: valid (tests/perfetto/check_export.py), and its PyTorch
            counters at each mark equal memory_stats() there (allocated, reserved, inactive split),
            their maxima so far max_memory_allocated() / max_memory_reserved().
Documented gaps (docs/gpu-validation.md, "Real PyTorch on the simulated GPU") print as `gap` and do
not fail."""
import json
import os
import re
import subprocess
from dataclasses import dataclass, field


class Checks:
    def __init__(self, name):
        self.name, self.failed, self.passed = name, 0, 0

    def line(self, tag, what, detail=None):
        print(f"{tag:5} {self.name}: {what}", flush=True)
        if detail:
            for d in str(detail).rstrip().split("\n")[-40:]:
                print(f"      {d}")

    def ok(self, what):
        self.passed += 1
        self.line("ok", what)

    def fail(self, what, detail=None):
        self.failed += 1
        self.line("FAIL", what, detail)

    def gap(self, what):
        self.line("gap", what)

    def note(self, what):
        self.line("info", what)

    def equal(self, what, ours, theirs, detail=None):
        if ours == theirs:
            self.ok(f"{what}: {ours}")
        else:
            self.fail(f"{what}: vramtrace / the program {ours!r}, expected {theirs!r}", detail)

    def finish(self):
        print(f"{self.name}: {self.passed} checks passed, {self.failed} failed", flush=True)
        return 1 if self.failed else 0


@dataclass
class Context:
    spec: dict
    script: str
    report: dict
    marks: list
    at: dict
    program_output: str
    out: str
    torch: dict = field(default_factory=dict)
    vt: str = ""      # the vramtrace binary, for checks that run a command on the trace
    trace: str = ""   # the program's trace


def file_line(line):
    """'train.py:18 in step' -> 'train.py:18'."""
    return line.split(" in ", 1)[0] if line else line


def backward_lines(script):
    name = os.path.basename(script)
    with open(script) as f:
        return {f"{name}:{i}" for i, text in enumerate(f, 1) if ".backward(" in text}


def check_all(c, x):
    t = x.report.get("torch")
    if not t:
        c.fail("the report has no PyTorch section")
        return
    x.torch = t
    want_mode = x.spec.get("mode", "caching allocator")
    c.equal("allocator mode", t["mode"], want_mode)
    asynchronous = want_mode.startswith("cudaMallocAsync")
    c.equal("block layer", t["layer"], "not used" if asynchronous else "on", detail=t.get("layer_detail"))
    if asynchronous:
        check_async_marks(c, x)
    elif t["layer"] == "on":
        check_marks(c, x)
        check_recorder(c, x)
        check_fragmentation_moment(c, x)
        check_leaks(c, x)
        check_cache_flushes(c, x)
        check_at_figures(c, x)
        check_perfetto(c, x)
        if x.spec.get("gate"):
            check_gate(c, x)
        if x.spec.get("one_thread_leaks"):
            check_one_thread_leaks(c, x)
    check_ooms(c, x)


# -- memory_stats() at the marks -------------------------------------------------------------------

FIGURES = [("allocated", "allocated_bytes"), ("reserved", "reserved_bytes"), ("inactive_split", "inactive_split_bytes"),
           ("max_allocated", "peak_allocated_bytes"), ("max_reserved", "peak_reserved_bytes"),
           ("segments", "segments"), ("blocks", "blocks"),
           ("num_alloc_retries", "alloc_retries"), ("num_ooms", "ooms")]


def check_marks(c, x):
    ours = {(m["name"], m["device"]): m for m in x.torch.get("marks", []) if m["kind"] == "begin"}
    figures = FIGURES
    if x.torch["mode"].endswith("expandable segments"):
        # PyTorch 2.6's memory_stats() does not count expandable segments in segment.all.current
        # (its snapshot lists them, and so does the report): that figure is left out here.
        c.gap("memory_stats()'s segment count leaves expandable segments out (PyTorch's snapshot lists them); "
              "not compared")
        figures = [f for f in FIGURES if f[0] != "segments"]
    compared = 0
    for m in x.marks:
        for dev, theirs in m.get("devices", {}).items():
            mine = ours.get((m["tag"], int(dev)))
            if mine is None:
                if any(theirs[k] for k, _ in figures):
                    c.fail(f"mark {m['tag']!r} device {dev}: no figures in the report (PyTorch: {theirs})")
                continue
            bad = [f"{k}: vramtrace {mine[j]}, PyTorch {theirs[k]}" for k, j in figures if mine[j] != theirs[k]]
            compared += 1
            if bad:
                c.fail(f"mark {m['tag']!r} device {dev}: memory_stats() differs", "\n".join(bad))
            else:
                c.ok(f"mark {m['tag']!r} device {dev}: {len(figures)} figures equal memory_stats() "
                     f"(allocated {theirs['allocated']}, reserved {theirs['reserved']})")
    if not compared:
        c.fail("no mark was compared")


def check_async_marks(c, x):
    """cudaMallocAsync: every tensor is a stream-ordered allocation. PyTorch's figures are the pool's
    USED_MEM (each allocation as the pool hands it out: its size rounded up to 512 B); vramtrace
    counts the sizes asked for. Equal within 512 B per live allocation."""
    compared = 0
    for i, m in enumerate(x.marks):
        at = x.at.get(m["tag"])
        if not at or "devices" not in m:
            continue
        live = at["live_at"]
        for dev, theirs in m["devices"].items():
            ours = next((d["bytes"] for d in live["by_device"] if d["device"] == int(dev)), 0)
            count = sum(g["count"] for g in live["live_set"] if g["device"] == int(dev) and g["kind"] == "device")
            diff = theirs["allocated"] - ours
            compared += 1
            if 0 <= diff < 512 * max(count, 1):
                c.ok(f"mark {m['tag']!r} device {dev}: PyTorch's allocated {theirs['allocated']} (the pool's used "
                     f"memory) = vramtrace's live {ours} bytes in {count} allocations, rounded to 512 B")
            else:
                c.fail(f"mark {m['tag']!r} device {dev}: PyTorch's allocated {theirs['allocated']}, vramtrace's live "
                       f"{ours} bytes in {count} allocations (more than the 512 B rounding apart)")
    if not compared:
        c.fail("no mark was compared")


# -- PyTorch's recorder at the marks ---------------------------------------------------------------

def check_recorder(c, x):
    backward = backward_lines(x.script)
    total = agree = 0
    disagreements = {}
    for m in x.marks:
        if m.get("segments") is None:
            continue
        at = x.at.get(m["tag"])
        if not at or not at.get("live_at", {}).get("mark_found"):
            c.fail(f"mark {m['tag']!r}: `peak --at mark:` did not find the mark")
            continue
        ours = at["live_at"].get("torch", [])
        our_segments = {(d["device"], s["address"], s["size"]) for d in ours for s in d["segments"]}
        their_segments = {(s["device"], s["address"], s["total_size"]) for s in m["segments"]}
        if our_segments == their_segments:
            c.ok(f"mark {m['tag']!r}: the same {len(our_segments)} segments as torch.cuda.memory._snapshot()")
        else:
            c.fail(f"mark {m['tag']!r}: segments differ from torch.cuda.memory._snapshot()",
                   f"only vramtrace: {sorted(our_segments - their_segments)[:8]}\n"
                   f"only PyTorch: {sorted(their_segments - our_segments)[:8]}")
        our_blocks = {(b["address"], b["size"]): b["line"] for d in ours for s in d["segments"] for b in s["blocks"]}
        their_blocks = {(b["address"], b["size"]): b for s in m["segments"] for b in s["blocks"]}
        if set(our_blocks) == set(their_blocks):
            c.ok(f"mark {m['tag']!r}: the same {len(our_blocks)} live blocks, address by address")
        else:
            c.fail(f"mark {m['tag']!r}: live blocks differ from torch.cuda.memory._snapshot()",
                   f"only vramtrace: {sorted(set(our_blocks) - set(their_blocks))[:8]}\n"
                   f"only PyTorch: {sorted(set(their_blocks) - set(our_blocks))[:8]}")
        for key, theirs in their_blocks.items():
            if key not in our_blocks:
                continue
            mine = file_line(our_blocks[key])
            total += key[1]
            expected = theirs["line"]
            if expected is None:  # no Python frame: PyTorch's autograd thread (gradients)
                good = mine in backward
                expected = "the backward() line " + "/".join(sorted(backward))
            else:
                good = mine == expected
            if good:
                agree += key[1]
            else:
                d = disagreements.setdefault((mine, expected), [0, 0, theirs["frames"]])
                d[0] += 1
                d[1] += key[1]
    if total:
        share = agree / total
        detail = "\n".join(f"vramtrace {m!r}, PyTorch {e!r}: {n} blocks, {b} bytes (PyTorch's frames {f})"
                           for (m, e), (n, b, f) in sorted(disagreements.items(), key=lambda kv: -kv[1][1])[:8])
        if share >= 0.99:
            c.ok(f"the user's line PyTorch recorded is vramtrace's for {share:.2%} of live bytes over the marks")
            if detail:
                c.note("the rest: " + detail.replace("\n", "; "))
        else:
            c.fail(f"the user's line PyTorch recorded is vramtrace's for only {share:.2%} of live bytes", detail)


# -- OOMs ----------------------------------------------------------------------------------------

MESSAGE = re.compile(r"CUDA out of memory\. (Tried to allocate .*?is reserved by PyTorch but unallocated\.)")
ALLOWED = re.compile(r"(\d+(?:\.\d+)? (?:bytes|KiB|MiB|GiB)) allowed; ")


def check_ooms(c, x):
    messages = []
    for m in MESSAGE.finditer(x.program_output):
        if not messages or messages[-1] != m.group(1):  # (a traceback repeats the message)
            messages.append(m.group(1))
    ooms = [o for o in x.report.get("ooms", []) if o.get("torch")]
    c.equal("OutOfMemoryErrors the program printed / PyTorch OOMs in the report", len(ooms), len(messages))
    for theirs, o in zip(messages, ooms):
        mine = o["torch"]["message"]
        allowed = ALLOWED.search(theirs)
        if allowed:  # set_per_process_memory_fraction: its limit is not in the trace (a known gap)
            c.gap(f"PyTorch's message states the memory fraction's limit ({allowed.group(1)} allowed), "
                  "which the trace does not record")
            theirs = ALLOWED.sub("", theirs)
        c.equal("the report's quote of PyTorch's OutOfMemoryError", mine, theirs)
    want = x.spec.get("verdict")
    if want:
        c.equal("the OOM's verdict", ooms[-1]["verdict"] if ooms else None, want,
                detail=json.dumps(ooms[-1].get("causes"), indent=1) if ooms else None)
    elif ooms and not messages:
        c.fail("the report has an OOM the program never raised")


# -- the remedies' allocator settings, applied ---------------------------------------------------

SETTING = re.compile(r"`PYTORCH_CUDA_ALLOC_CONF=([^`]*)`")
CONFIG_ERROR = re.compile(r"CachingAllocator option|Unrecognized|must be > |RuntimeError")


def check_remedy_settings(c, x, rerun):
    """Each PYTORCH_CUDA_ALLOC_CONF the OOM's remedies write, given to the same script (rerun(conf) ->
    (exit status, output)): PyTorch accepts it (no "Unrecognized CachingAllocator option", no value
    error); the script then ends cleanly or in an OutOfMemoryError, nothing else."""
    ooms = [o for o in x.report.get("ooms", []) if o.get("torch")]
    settings = sorted({m for o in ooms for r in o["remedies"] for m in SETTING.findall(r)})
    if not settings:
        c.fail("the OOM's remedies write no PYTORCH_CUDA_ALLOC_CONF", "\n".join(r for o in ooms for r in o["remedies"]))
        return
    for conf in settings:
        rc, output = rerun(conf)
        error = CONFIG_ERROR.search(output)
        if error or rc not in (0, 1) or (rc == 1 and "OutOfMemoryError" not in output):
            c.fail(f"PyTorch does not accept the remedy's PYTORCH_CUDA_ALLOC_CONF={conf} (exit {rc})", output[-2000:])
        else:
            c.ok(f"PyTorch accepts the remedy's PYTORCH_CUDA_ALLOC_CONF={conf}: the script "
                 + ("then fits" if rc == 0 else "runs to its OutOfMemoryError"))


# -- the report's sections -----------------------------------------------------------------------

def check_fragmentation_moment(c, x):
    """Fragmentation's worst moment falls while the program ran: no later than its last mark or
    OOM (the interpreter's teardown comes after both)."""
    last = max([m["t_ns"] for m in x.torch.get("marks", [])] + [0] +
               [max(o["t_ns"], o.get("torch", {}).get("t_ns", 0)) for o in x.report.get("ooms", [])])
    for d in x.torch["devices"]:
        w = d["worst_fragmentation"]
        if not w["figures"]["inactive_split_bytes"]:
            c.ok(f"device {d['device']}: no inactive split at any allocation: no fragmentation headline")
        elif w["t_ns"] <= last:
            c.ok(f"device {d['device']}: fragmentation's worst moment is while the program ran, not in its teardown")
        else:
            c.fail(f"device {d['device']}: fragmentation's worst moment ({w['t_ns']}) is after the last mark/OOM ({last})")


def check_cache_flushes(c, x):
    """The cache flushes the HTML page lists (analyzer/html/sections.js cacheFlushes: the report's
    fragmentation.cache_flushes, and each PyTorch OOM whose flush is not one of them: PyTorch frees
    its cache and retries before it raises) up to each mark are memory_stats()'s num_alloc_retries
    then. (With max_split_size_mb a retry can follow a partial release the driver layer cannot tell
    from a flush: not compared.)"""
    if "max_split_size_mb" in (x.torch.get("alloc_conf") or ""):
        return
    times = [f["t_ns"] for f in x.report["fragmentation"]["cache_flushes"]]
    failed = [f["t_ns"] for f in x.report["fragmentation"]["cache_flushes"] if not f["retry_succeeded"]]
    since = -1
    for o in x.report.get("ooms", []):
        if not o.get("torch"):
            continue
        if not any(since < t <= o["t_ns"] for t in failed):
            times.append(o["t_ns"])
        since = o["t_ns"]
    at = {m["name"]: m["t_ns"] for m in x.torch.get("marks", []) if m["kind"] == "begin"}
    for m in x.marks:
        if m["tag"] not in at or "devices" not in m:
            continue
        theirs = sum(d["num_alloc_retries"] for d in m["devices"].values())
        c.equal(f"mark {m['tag']!r}: the cache flushes the page lists so far / PyTorch's num_alloc_retries",
                sum(1 for t in times if t <= at[m["tag"]]), theirs)


def check_leaks(c, x):
    """PyTorch's cache at exit is not a leak: the leaks are its tensors still allocated (and memory
    outside PyTorch)."""
    leaks = x.report["leaks"]
    cache = leaks.get("pytorch_cache")
    if not cache:
        c.fail("the leaks do not say what of the memory at exit is PyTorch's cache")
        return
    end_allocated = sum(d["end"]["allocated_bytes"] for d in x.torch["devices"])
    end_reserved = sum(d["end"]["reserved_bytes"] for d in x.torch["devices"])
    tensors = sum(g["bytes"] for g in leaks["groups"] if g["kind"] == "tensor")
    device = sum(g["bytes"] for g in leaks["groups"] if g["kind"] == "device")  # driver allocations left
    c.equal("PyTorch's cache at exit (reserved)", cache["reserved_bytes"], end_reserved)
    if x.spec.get("cublas_workspace"):  # a matmul ran: PyTorch's cuBLAS workspace is still allocated, named apart
        c.equal("PyTorch's cuBLAS workspace at exit, named apart from the leaks",
                (cache["cublas_workspace_bytes"] > 0, tensors), (True, 0))
    # (the report's group list is cut at --top: when it is, the sums are lower bounds)
    if tensors <= end_allocated and device <= outside_bytes(x):
        c.ok(f"leaks {leaks['bytes']} bytes: PyTorch's tensors still allocated ({tensors}), device memory outside "
             f"PyTorch ({device}), pinned host memory; not its {cache['cached_bytes']} cached bytes")
    else:
        c.fail(f"leaks {leaks['bytes']} bytes, of which tensors {tensors} (PyTorch's end allocated {end_allocated}), "
               f"device memory {device} (outside PyTorch: {outside_bytes(x)}; cache {cache['cached_bytes']})")


def check_one_thread_leaks(c, x):
    """One thread of 32 keeps its outputs: the growth is its line on it alone; the other threads'
    temporaries at the same line (more of them at once as threads start) are no growth."""
    with open(os.path.join(x.out, "leaker.json")) as f:
        leaker = json.load(f)
    growth = [(file_line(g["line"]), [t["tid"] for t in g.get("threads", [])], g.get("threads_at_site"))
              for g in x.torch.get("growth", [])]
    c.equal("the tensor lines that grew, their threads, and the threads that allocated there", growth,
            [(leaker["line"], [leaker["tid"]], 32)])
    c.equal("driver-level growth sites listed (PyTorch's segments are its reserved memory, not listed)",
            len(x.report["leaks"]["growth"]), 0)
    with open(os.path.join(x.out, "report.txt")) as f:
        text = f.read()
    want = f"on thread {leaker['tid']} (1 of the 32 threads that allocated there)"
    if want in text:
        c.ok(f"the text report says '{want}'")
    else:
        c.fail(f"the text report does not say '{want}'", text[-3000:])


def check_gate(c, x):
    """`vramtrace check` in PyTorch's terms: --max-allocated and --max-reserved at PyTorch's own
    max_memory_allocated() / max_memory_reserved() pass, and 1 byte under them fail; --max-leak 0
    passes (a clean run: PyTorch's device cache, cuBLAS workspace and pinned host cache are no
    leaks). PyTorch's peaks are those of the last mark: the gate workloads allocate nothing after it."""
    last = next((m for m in reversed(x.marks) if m.get("devices")), None)
    if not last:
        c.fail("no mark with PyTorch's figures to gate against")
        return
    peak = {k: max(d[k] for d in last["devices"].values()) for k in ("max_allocated", "max_reserved")}

    def check(*limits):
        p = subprocess.run([x.vt, "check", x.trace, *limits], capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout + p.stderr

    rc, out = check("--max-allocated", str(peak["max_allocated"]), "--max-reserved", str(peak["max_reserved"]),
                    "--max-leak", "0")
    if rc == 0:
        c.ok(f"check --max-allocated {peak['max_allocated']} --max-reserved {peak['max_reserved']} (PyTorch's own "
             f"peaks) --max-leak 0: passes")
    else:
        c.fail(f"check at PyTorch's own peaks with --max-leak 0: exit {rc}", out)
    for flag, rule, key in (("--max-allocated", "max_allocated", "max_allocated"),
                            ("--max-reserved", "max_reserved", "max_reserved")):
        rc, out = check(flag, str(peak[key] - 1))
        want = f"FAIL {rule}: PyTorch's peak {key[4:]} "
        if rc == 1 and out.startswith(want) and f"({peak[key]} bytes)" in out:
            c.ok(f"check {flag} {peak[key] - 1} (1 byte under PyTorch's max_memory_{key[4:]}): fails with its figure")
        else:
            c.fail(f"check {flag} {peak[key] - 1}: exit {rc}, expected 1 and a line starting {want!r}", out)


# -- `peak --at mark:` and the Perfetto export, in PyTorch's terms ---------------------------------

AT_FIGURES = [("allocated", "allocated_bytes"), ("reserved", "reserved_bytes"),
              ("inactive_split", "inactive_split_bytes"), ("segments", "segments"), ("blocks", "blocks")]


def check_at_figures(c, x):
    """`peak --at mark:NAME` answers with memory_stats()'s figures of that instant (allocated,
    reserved, reserved but unallocated, inactive split, segments, tensors), per device."""
    figures = AT_FIGURES
    if x.torch["mode"].endswith("expandable segments"):  # (memory_stats() leaves them out: check_marks)
        figures = [f for f in AT_FIGURES if f[0] != "segments"]
    compared = 0
    for m in x.marks:
        at = x.at.get(m["tag"])
        if not at or not m.get("devices"):
            continue
        ours = {d["device"]: d["figures"] for d in at["live_at"].get("torch", [])}
        for dev, theirs in m["devices"].items():
            mine = ours.get(int(dev))
            if mine is None:
                if theirs["reserved"]:
                    c.fail(f"peak --at mark:{m['tag']!r} device {dev}: no PyTorch figures (PyTorch: {theirs})")
                continue
            compared += 1
            bad = [f"{k}: vramtrace {mine[j]}, PyTorch {theirs[k]}" for k, j in figures if mine[j] != theirs[k]]
            unallocated = theirs["reserved"] - theirs["allocated"]
            if mine["reserved_unallocated_bytes"] != unallocated:
                bad.append(f"reserved but unallocated: vramtrace {mine['reserved_unallocated_bytes']}, PyTorch {unallocated}")
            if bad:
                c.fail(f"peak --at mark:{m['tag']!r} device {dev}: differs from memory_stats()", "\n".join(bad))
            else:
                c.ok(f"peak --at mark:{m['tag']!r} device {dev}: allocated, reserved, reserved but unallocated, "
                     f"inactive split{', segments' if len(figures) == len(AT_FIGURES) else ''} and tensors equal "
                     f"memory_stats()")
    if not compared:
        c.fail("no `peak --at mark:` was compared")


COUNTERS = {"PyTorch allocated": "allocated", "PyTorch reserved": "reserved", "PyTorch inactive split": "inactive_split"}


def check_perfetto(c, x):
    """The Perfetto export in PyTorch's terms. Its PyTorch counters are drawn at every record that
    changes them and the region marks where they are in the trace, so the counters written before a
    mark are the state at that mark: their last values must be memory_stats()'s current figures
    there, and their highest values so far max_memory_allocated() / max_memory_reserved()."""
    out = os.path.join(x.out, "perfetto.json")
    p = subprocess.run([x.vt, "export", "--perfetto", out, x.trace], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        c.fail(f"export --perfetto: exit {p.returncode}", p.stderr)
        return
    here = os.path.dirname(os.path.abspath(__file__))
    v = subprocess.run(["python3", os.path.join(here, "..", "perfetto", "check_export.py"), out],
                       capture_output=True, text=True, timeout=300)
    if v.returncode == 0:
        c.ok("export --perfetto: valid trace-event JSON (" + v.stdout.strip() + ")")
    else:
        c.fail("export --perfetto: check_export.py", v.stdout + v.stderr)
    with open(out) as f:
        events = json.load(f)["traceEvents"]
    now, high = {}, {}  # device -> figure -> bytes, as of the event being read
    seen = {}  # mark name -> begins seen so far
    at_marks = {}  # (name, n-th begin) -> (now, high) copies
    for e in events:
        if e.get("ph") == "C" and e.get("name") in COUNTERS:
            k, b = COUNTERS[e["name"]], e["args"]["bytes"]
            now.setdefault(e["pid"], {})[k] = b
            h = high.setdefault(e["pid"], {})
            h[k] = max(h.get(k, 0), b)
        elif e.get("cat") == "region" and e["args"].get("mark") == "begin":
            n = seen.get(e["name"], 0)
            seen[e["name"]] = n + 1
            at_marks[(e["name"], n)] = ({d: dict(f) for d, f in now.items()}, {d: dict(f) for d, f in high.items()})
    if not now:
        c.fail("export --perfetto: no PyTorch counter")
        return
    compared, seen = 0, {}
    for m in x.marks:
        n = seen.get(m["tag"], 0)
        seen[m["tag"]] = n + 1
        if (m["tag"], n) not in at_marks:
            c.fail(f"export --perfetto: no region mark {m['tag']!r}")
            continue
        mine_now, mine_high = at_marks[(m["tag"], n)]
        for dev, theirs in m.get("devices", {}).items():
            d_now, d_high = mine_now.get(int(dev), {}), mine_high.get(int(dev), {})
            want = {"allocated": theirs["allocated"], "reserved": theirs["reserved"],
                    "inactive_split": theirs["inactive_split"], "max allocated": theirs["max_allocated"],
                    "max reserved": theirs["max_reserved"]}
            got = {"allocated": d_now.get("allocated", 0), "reserved": d_now.get("reserved", 0),
                   "inactive_split": d_now.get("inactive_split", 0), "max allocated": d_high.get("allocated", 0),
                   "max reserved": d_high.get("reserved", 0)}
            compared += 1
            if got == want:
                c.ok(f"export --perfetto at mark {m['tag']!r} device {dev}: the PyTorch counters equal memory_stats() "
                     f"(allocated {got['allocated']}, reserved {got['reserved']}, inactive split {got['inactive_split']}; "
                     f"their maxima so far max_memory_allocated {got['max allocated']}, max_memory_reserved "
                     f"{got['max reserved']})")
            else:
                c.fail(f"export --perfetto at mark {m['tag']!r} device {dev}: the PyTorch counters differ from "
                       "memory_stats()", "\n".join(f"{k}: vramtrace {got[k]}, PyTorch {want[k]}" for k in want
                                                   if got[k] != want[k]))
    if not compared:
        c.fail("export --perfetto: no mark was compared")


def outside_bytes(x):
    return max([o.get("torch", {}).get("outside_bytes", 0) for o in x.report.get("ooms", [])] + [0])


def check_profiler(c, traced, plain):
    with open(os.path.join(traced, "profiler.json")) as f:
        a = json.load(f)
    with open(os.path.join(plain, "profiler.json")) as f:
        b = json.load(f)
    c.equal("torch.profiler's CUDA memory events with vramtrace / without",
            (a["cuda_memory_events"], a["cuda_bytes_allocated"], a["cuda_bytes_freed"]),
            (b["cuda_memory_events"], b["cuda_bytes_allocated"], b["cuda_bytes_freed"]))
    c.equal("the sizes of those events, in order", a["sizes"] == b["sizes"], True)
    if not a["cuda_memory_events"]:
        c.fail("the profiler recorded no CUDA memory event")
