"""Checks a real-PyTorch trace of torch_blocks.py (tests/gpu/run.sh; NOT RUN YET):

    python3 check_torch_blocks.py VRAMTRACE TRACE_DIR EXPECT.json ALLOC_CONF

Block events present in default and expandable modes (the layer "not used" under cudaMallocAsync);
the figures at each mark equal torch.cuda.memory_stats(); PyTorch's OOM figures in the report equal
those of its own message; the verdict of the fragmentation OOM (default mode) and of the live-set
OOM; torch.profiler still recorded memory; blocks of the autograd workers name the loss.backward()
line (marks). Prints PASS/FAIL lines."""
import glob
import json
import subprocess
import sys

vt, trace_dir, expect_path, conf = sys.argv[1:5]
expect = json.load(open(expect_path))
traces = sorted(glob.glob(trace_dir + "/*.trace*"))
name = f"torch-blocks-{expect['mode']}-{conf or 'default'}"
failures = []
rep = json.loads(subprocess.run([vt, "report", traces[0], "--format", "json"], capture_output=True, text=True).stdout)
t = rep.get("torch") or {}
async_mode = "cudaMallocAsync" in conf
if async_mode:
    if t.get("layer") != "not used":
        failures.append(f"layer {t.get('layer')} under cudaMallocAsync")
elif t.get("layer") != "on":
    failures.append(f"layer {t.get('layer')}: {t.get('layer_detail')}")
else:
    marks = {(m["name"], m["kind"]): m for m in t["marks"]}
    for mname, st in expect["marks"].items():
        m = marks.get((mname, "end"))
        if not m:
            failures.append(f"no mark {mname}")
            continue
        for k, jk in (("allocated", "allocated_bytes"), ("reserved", "reserved_bytes"), ("inactive_split", "inactive_split_bytes")):
            if "expandable" in conf and k == "inactive_split":
                continue  # PyTorch counts none there, neither do we: both 0 (checked by equality anyway below)
            if m[jk] != st[k]:
                failures.append(f"mark {mname}: {jk} {m[jk]}, memory_stats says {st[k]}")
    ooms = [o for o in rep["ooms"] if "torch" in o]
    if len(ooms) != len(expect["ooms"]):
        failures.append(f"{len(ooms)} PyTorch OOMs reported, {len(expect['ooms'])} raised")
    for o, msg in zip(ooms, expect["ooms"]):
        if o["torch"]["message"].split(" Of the allocated")[0] not in msg:
            failures.append(f"message figures differ:\n  report: {o['torch']['message']}\n  torch:  {msg}")
    if expect["mode"] == "frag" and not conf and ooms and ooms[0]["verdict"] != "fragmentation":
        failures.append(f"fragmentation OOM judged {ooms[0]['verdict']}")
    if expect["mode"] == "live" and ooms and ooms[-1]["verdict"] != "live_set_too_large":
        failures.append(f"live-set OOM judged {ooms[-1]['verdict']}")
if expect.get("backward_line") and not async_mode:
    # Blocks of PyTorch's autograd workers (pt_autograd_N: a thread state, no frames) carry the
    # frames of the main thread waiting in the engine: the loss.backward() line among them.
    file, line = expect["backward_line"]
    dump = subprocess.run([vt, "dump", traces[0]], capture_output=True, text=True).stdout
    blocks = [e for e in map(json.loads, dump.splitlines()) if e.get("op") == "torch_block" and e["size"] > 0
              and str(e.get("thread", "")).startswith("pt_autograd")]
    if not blocks:
        failures.append("no block allocated on a pt_autograd thread")
    lost = [b for b in blocks if not any(f.get("python") and f["file"].endswith("/" + file) and f["line"] == line
                                         for f in b.get("stack", []))]
    if lost:
        failures.append(f"{len(lost)} of {len(blocks)} autograd-worker blocks do not name {file}:{line}")
if expect["mode"] == "profiler" and not expect.get("profiler_memory_bytes"):
    failures.append("torch.profiler(profile_memory=True) recorded no memory under vramtrace")
for f in failures:
    print(f"FAIL {name}: {f}")
print(("PASS " if not failures else "FAIL ") + name)
sys.exit(1 if failures else 0)
