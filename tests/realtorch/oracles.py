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
            leaks without PyTorch's cache.
Documented gaps (docs/gpu-validation.md, "Real PyTorch on the simulated GPU") print as `gap` and do
not fail."""
import json
import os
import re
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
