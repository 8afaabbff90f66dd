"""`vramtrace export --torch-snapshot` against PyTorch's own recorder, on the simulated GPU with
real PyTorch: snapshot_workload.py records PyTorch's history (stacks="python") and dumps
torch.cuda.memory._snapshot(), then is SIGKILLed; the trace, exported with --torch-only --stacks
python, must be that snapshot: the same segments and blocks (address, size, state), the same
actions in the same order (segment_alloc, alloc, free_requested, free_completed, segment_free,
oom; addresses and segment sizes equal, an alloc's size PyTorch's block size where PyTorch gives
the request), the same Python frames (file, line) for every alloc; PyTorch's torch.cuda._memory_viz
reads the export and its segments() flame lines equal those of PyTorch's own snapshot (the
rounding PyTorch shows as <gaps> counted back into its block). Without --torch-only, memory a
library took from the driver itself (libvt_outside.so, 48 MiB) is one more segment, labelled, and
so is the driver's context (the size vramtrace's report gives it).
    torch_snapshot_check.py BUILD     one line per check (ok / FAIL), exit 1 on any FAIL"""
import os
import pickle
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import oracles  # noqa: E402
from run import program_env, read_env  # noqa: E402

ACTIONS = {"segment_alloc", "segment_free", "segment_map", "segment_unmap", "alloc", "free_requested", "free_completed", "oom"}
# The allocator's two ways to get memory: cudaMalloc'd segments, and expandable segments (VMM).
CONFIGS = {"segments": {}, "expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}}


def round_size(n):  # PyTorch's CUDACachingAllocator round_size (no roundup_power2_divisions)
    return 512 if n < 512 else 512 * ((n + 511) // 512)


def main(build):
    rt = read_env(build)
    status = 0
    for name, conf in CONFIGS.items():
        status |= check(build, rt, name, conf)
    return status


def check(build, rt, name, conf):
    out = os.path.join(build, "tests", "realtorch", "out", "torch_snapshot", name)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    checks = oracles.Checks("torch_snapshot " + name)
    vt = os.path.join(build, "bin", "vramtrace")
    theirs_path = os.path.join(out, "pytorch.pickle")
    env = program_env(build, rt, out, {}, False)
    env.update(conf)
    env["VT_OUTSIDE_BYTES"] = str(48 << 20)
    p = subprocess.run([vt, "run", "-o", out + "/", "--", rt["VT_RT_PYTHON"], os.path.join(HERE, "snapshot_workload.py"),
                        theirs_path], env=env, capture_output=True, text=True, timeout=300)
    checks.equal("the workload was SIGKILLed after its snapshot (vramtrace run dies of the same signal)",
                 p.returncode in (-9, 128 + 9), True, detail=f"exit {p.returncode}\n" + p.stdout + p.stderr)
    traces = [f for f in os.listdir(out) if f.endswith(".trace")]
    if len(traces) != 1 or not os.path.exists(theirs_path):
        checks.fail("one trace and PyTorch's snapshot", detail=p.stdout + p.stderr)
        return checks.finish()
    trace = os.path.join(out, traces[0])
    ours_path, full_path = os.path.join(out, "vramtrace.pickle"), os.path.join(out, "vramtrace-full.pickle")
    for args, path in ((["--torch-only", "--stacks", "python"], ours_path), ([], full_path)):
        e = subprocess.run([vt, "export", "--torch-snapshot", path, trace] + args, capture_output=True, text=True, timeout=300)
        checks.equal(f"export {' '.join(args) or '(everything)'} exits 0", e.returncode, 0, detail=e.stderr)
    theirs = pickle.load(open(theirs_path, "rb"))
    ours = pickle.load(open(ours_path, "rb"))
    full = pickle.load(open(full_path, "rb"))

    # Segments and blocks.
    def segs(s):
        return [(g["device"], g["address"], g["total_size"], g["segment_type"], g["is_expandable"], g["allocated_size"],
                 g["active_size"], g["stream"], [(b["address"], b["size"], b["state"]) for b in g["blocks"]])
                for g in s["segments"]]
    checks.equal(f"segments and their blocks ({len(theirs['segments'])} segments)", segs(ours), segs(theirs))

    # Actions.
    t_list = [e for e in theirs["device_traces"][0] if e["action"] in ACTIONS]
    o_all = ours["device_traces"][0]
    # The export ends with a `snapshot` action (PyTorch records one where it takes a snapshot; its
    # own dump was taken before this run's end): the active bytes of the segments it gives.
    o_list = o_all[:-1] if o_all and o_all[-1]["action"] == "snapshot" else o_all
    checks.equal("the last action is a snapshot of the segments' active bytes",
                 (o_all[-1]["action"], o_all[-1]["size"]) if o_all else None,
                 ("snapshot", sum(g["active_size"] for g in ours["segments"])))
    checks.equal(f"the actions in order, with their streams ({len(t_list)})",
                 [(e["action"], e.get("addr"), e["stream"]) for e in o_list],
                 [(e["action"], e.get("addr"), e["stream"]) for e in t_list])
    checks.equal("a side stream's blocks are on it", len({e["stream"] for e in t_list}) >= 2, True)
    if len(o_list) == len(t_list):
        # Sizes: a segment's equal; an alloc's (and its frees') the request PyTorch recorded, which
        # the hook sees through its request probe (docs/trace-format.md, torch alloc), installed
        # at cudart's first lookup, before the first tensor.
        bad = []
        for o, t in zip(o_list, t_list):
            want = {round_size(t["size"]), t["size"]} if t["action"] == "oom" else {t["size"]}
            if o["size"] not in want:
                bad.append((t["action"], t.get("addr"), o["size"], t["size"]))
        checks.equal("sizes: segments equal, allocs and frees PyTorch's requests", bad, [])
        req = lambda snap: sorted((b["address"], b["state"], b["requested_size"]) for g in snap["segments"]
                                  for b in g["blocks"])
        checks.equal("every block's requested_size equals PyTorch's, free ones included (the last request freed into them)",
                     req(ours), req(theirs))
        seg_frames = lambda snap: [(g["address"], [(f["filename"], f["line"]) for f in g["frames"]]) for g in snap["segments"]]
        checks.equal("segments' frames: the cudaMalloc's while the first block was never split, else none (PyTorch's)",
                     seg_frames(ours), seg_frames(theirs))
        frames = [(t.get("addr"), [(f["filename"], f["line"]) for f in o["frames"]], [(f["filename"], f["line"]) for f in t["frames"]])
                  for o, t in zip(o_list, t_list) if t["action"] == "alloc"]
        checks.equal(f"Python frames of every alloc ({len(frames)})", [f for f in frames if f[1] != f[2]], [])
        checks.equal("one oom action", sum(1 for e in o_list if e["action"] == "oom"), 1)
    lo, hi = o_list[0]["time_us"], o_list[-1]["time_us"]
    checks.equal("time_us within 10 s of PyTorch's", abs(lo - t_list[0]["time_us"]) < 10_000_000, True,
                 detail=f"ours {lo}, theirs {t_list[0]['time_us']}")
    checks.equal("time_us never goes back", all(a["time_us"] <= b["time_us"] for a, b in zip(o_list, o_list[1:])), True)
    checks.equal("the pickle says what the hook cannot see", "rounded" in ours["vramtrace"]["note"], True)

    # Memory outside PyTorch, only without --torch-only: the library's 48 MiB as a segment of its
    # own, and the driver's own memory (its context here) as vramtrace's report counts it at the OOM.
    rep = subprocess.run([vt, "report", trace, "--format", "json"], capture_output=True, text=True, timeout=300)
    import json
    contexts = json.loads(rep.stdout)["ooms"][0]["fidelity"]["contexts_bytes"] if rep.returncode == 0 else None
    outside = sorted((g["vramtrace_owner"], g["total_size"], g["blocks"][0]["frames"][0]["filename"])
                     for g in full["segments"] if "vramtrace_owner" in g)
    checks.equal("outside PyTorch: the library's 48 MiB and the driver's contexts (the report's figure), labelled", outside,
                 sorted([("libvt_outside.so", 48 << 20, "<outside PyTorch: libvt_outside.so>"),
                         ("the CUDA driver: CUDA contexts", contexts, "<outside PyTorch: CUDA contexts>")]))
    checks.equal("outside PyTorch: PyTorch's segments unchanged beside it",
                 [g["address"] for g in full["segments"] if "vramtrace_owner" not in g], [g["address"] for g in theirs["segments"]])
    names = {e["action"] for e in full["device_traces"][0]}
    checks.equal("outside PyTorch: its actions are in the timeline", {"segment_alloc", "alloc"} <= names, True)

    # PyTorch's own reader: 2.6's (the PyTorch that ran), and the newest in Debian (sid's, a file of
    # the standard library only).
    viz = subprocess.run([rt["VT_RT_PYTHON"], "-c", VIZ, ours_path, theirs_path, full_path, out, ""], env=env,
                         capture_output=True, text=True, timeout=300)
    checks.equal("torch.cuda._memory_viz (2.6) reads the export: segments() lines, memory() and segsum() equal PyTorch's, "
                 "trace_plot/segment_plot write",
                 viz.returncode, 0, detail=viz.stdout + viz.stderr)
    newest = subprocess.run([os.path.join(os.path.dirname(HERE), "fetch.sh"), "--newest-memory-viz"], capture_output=True,
                            text=True, timeout=600)
    if newest.returncode == 0:
        module = newest.stdout.strip()
        version = open(os.path.join(os.path.dirname(module), "version.txt")).read().strip()
        viz = subprocess.run([rt["VT_RT_PYTHON"], "-c", VIZ, ours_path, theirs_path, full_path, out, module], env=env,
                             capture_output=True, text=True, timeout=300)
        checks.equal(f"{version}'s _memory_viz reads the export: segments() lines, memory() and segsum() equal PyTorch 2.6's "
                     "snapshot's, plots write",
                     viz.returncode, 0, detail=viz.stdout + viz.stderr)
    elif os.environ.get("VRAMTRACE_REQUIRE_REAL_TORCH") == "1":
        checks.fail("the newest PyTorch's _memory_viz could not be fetched", detail=newest.stderr)
    else:
        checks.gap("the newest PyTorch's _memory_viz: not tried (sid cannot be reached)")
    return checks.finish()


# Run with the real PyTorch: the flame lines of segments() (sizes of a block's <gaps> line, PyTorch's
# rounding, counted back into the line before it), and the HTML pages its plots write.
VIZ = r"""
import importlib.util, pickle, sys, os
if sys.argv[5]:  # another PyTorch's module, loaded from its file
    spec = importlib.util.spec_from_file_location("memory_viz_other", sys.argv[5])
    mv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mv)
else:
    from torch.cuda import _memory_viz as mv
ours, theirs, full = (pickle.load(open(p, "rb")) for p in sys.argv[1:4])
def lines(s):
    out = {}
    last = None
    for line in mv.segments(s, format_flamegraph=lambda x: x).splitlines():
        key, size = line.rsplit(" ", 1)
        if key.endswith(";<gaps>") and last is not None:
            out[last] += int(size)
            continue
        out[key] = out.get(key, 0) + int(size)
        last = key
    return out
a, b = lines(ours), lines(theirs)
if a != b:
    print("segments() differ:\n ours  ", sorted(a.items())[:20], "\n theirs", sorted(b.items())[:20])
    sys.exit(1)
# memory() and segsum() as text.
for name in ("memory", "segsum"):
    fn = getattr(mv, name, None)
    if fn is None:
        continue
    kw = {"format_flamegraph": lambda x: x} if name == "memory" else {}
    if fn(ours, **kw) != fn(theirs, **kw):
        print(name + "() differs:\n", fn(ours, **kw)[:1500], "\n----\n", fn(theirs, **kw)[:1500])
        sys.exit(1)
for name, s in (("ours", ours), ("full", full)):
    for plot, html in (("trace_plot", mv.trace_plot(s)), ("segment_plot", mv.segment_plot(s))):
        assert "snapshot.pickle" in html and len(html) > 1000, plot
        open(os.path.join(sys.argv[4], name + ("-other-" if sys.argv[5] else "-") + plot + ".html"), "w").write(html)
print(len(a), "flame lines equal")
"""

if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
