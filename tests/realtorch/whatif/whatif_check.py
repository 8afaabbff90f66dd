"""`vramtrace whatif` against real PyTorch, on the simulated GPU: each workload runs once under
vramtrace with PyTorch's default settings, and once for real (without vramtrace) under each other
setting; `vramtrace whatif` replays the default run's trace under every setting, and its figures
must be PyTorch's own: peak reserved within 2% (the model under the run's own settings too), peak
allocated within 2%, and the same OOM outcome (the script ends in an OutOfMemoryError or not).
Writes the agreement table (markdown, as docs/metrics.md shows it) to out/whatif/agreement.md.
    whatif_check.py BUILD [WORKLOAD...]    one line per check (ok / FAIL), exit 1 on any FAIL"""
import concurrent.futures
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RT = os.path.dirname(HERE)
sys.path.insert(0, RT)
import oracles  # noqa: E402
from probe_runs import run_probe  # noqa: E402
from run import program_env, read_env  # noqa: E402

W = os.path.join(RT, "workloads")
# name: (script, environment). Devices of 2-3 GiB where the settings decide whether it fits.
WORKLOADS = {
    "transformer_block": (os.path.join(W, "transformer_block.py"), {}),
    "mlp_adamw": (os.path.join(W, "mlp_adamw.py"), {}),
    "cnn_no_cudnn": (os.path.join(W, "cnn_no_cudnn.py"), {}),
    "grad_accumulation": (os.path.join(W, "grad_accumulation.py"), {}),
    "activation_checkpointing": (os.path.join(W, "activation_checkpointing.py"), {}),
    "inference_no_grad": (os.path.join(W, "inference_no_grad.py"), {}),
    "empty_cache": (os.path.join(W, "empty_cache.py"), {}),
    "oom_fragmentation": (os.path.join(W, "oom_fragmentation.py"), {"FAKECUDA_TOTAL_BYTES": "2GiB"}),
    "oom_live_set": (os.path.join(W, "oom_live_set.py"), {"FAKECUDA_TOTAL_BYTES": "3GiB"}),
    "varying_batch": (os.path.join(HERE, "varying_batch.py"), {"FAKECUDA_TOTAL_BYTES": "2GiB"}),
    "mixed_sizes": (os.path.join(HERE, "mixed_sizes.py"), {"FAKECUDA_TOTAL_BYTES": "2GiB"}),
    "two_streams": (os.path.join(HERE, "two_streams.py"), {"FAKECUDA_TOTAL_BYTES": "2GiB"}),
}
SETTINGS = [
    "expandable_segments:True",
    "max_split_size_mb:32",
    "roundup_power2_divisions:4",
    "roundup_power2_divisions:[256:1,512:2,>:8]",
    "expandable_segments:True,max_split_size_mb:64",
    "garbage_collection_threshold:0.6",
]
TOLERANCE = 0.02
# Shown, not checked: the driver's pool is approximated (driver_pool_model.h), and this driver is
# the simulated one, whose pool is not NVIDIA's.
SHOWN = ["backend:cudaMallocAsync"]
# PYTORCH_CUDA_ALLOC_CONF strings whatif must accept or refuse as PyTorch does (its parser: c10's
# CUDAAllocatorConfig::parseArgs, reached through torch.cuda.memory._set_allocator_settings).
CONF_CASES = [
    "expandable_segments:True", "expandable_segments:False", "expandable_segments:true", "max_split_size_mb:21",
    "max_split_size_mb:20", "max_split_size_mb:512", "max_split_size_mb:64MB", "max_split_size_mb:-1",
    "garbage_collection_threshold:0.6", "garbage_collection_threshold:0", "garbage_collection_threshold:1.0",
    "garbage_collection_threshold:0.5x", "roundup_power2_divisions:4", "roundup_power2_divisions:3",
    "roundup_power2_divisions:0", "roundup_power2_divisions:[256:1,512:2,>:8]", "roundup_power2_divisions:[300:2]",
    "roundup_power2_divisions:[64:8,>:4]", "roundup_power2_divisions:[256:3]", "max_non_split_rounding_mb:64",
    "max_non_split_rounding_mb:20", "expandable_segments:True,max_split_size_mb:64", "expandable_segments:True,,max_split_size_mb:64",
    "expandable_segments:True max_split_size_mb:64", "foo:1", "max_split_size_mb", "release_lock_on_cudamalloc:True",
    "garbage_collection_threshold:0.8,max_split_size_mb:128,roundup_power2_divisions:2",
]
PARSE = """import json, sys, torch
torch.cuda.init()
out = {}
for s in json.loads(sys.argv[1]):
    try:
        torch.cuda.memory._set_allocator_settings(s)
        out[s] = True
    except Exception as e:
        out[s] = False
print(json.dumps(out))
"""


def run_one(build, rt, out, name, setting, traced):
    script, extra = WORKLOADS[name]
    tag = name + ("" if not setting else "." + "".join(c if c.isalnum() else "_" for c in setting))
    env = dict(extra, **({"PYTORCH_CUDA_ALLOC_CONF": setting} if setting else {}))
    return run_probe(build, rt, out, script, env, tag if setting or not traced else name + ".trace", traced, cwd=W)


def pct(a, b):
    return abs(a - b) / b if b else (0 if a == b else 1)


def main(build, names):
    rt = read_env(build)
    out = os.path.join(build, "tests", "realtorch", "out", "whatif")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        path = os.path.join(out, f)
        if os.path.isdir(path):
            for g in os.listdir(path):
                os.unlink(os.path.join(path, g))
        else:
            os.unlink(path)
    vt = os.path.join(build, "bin", "vramtrace")
    jobs = [(n, "", True) for n in names] + [(n, s, False) for n in names for s in SETTINGS + SHOWN]
    real = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {pool.submit(run_one, build, rt, out, n, s, t): (n, s) for n, s, t in jobs}
        for fut, key in futures.items():
            real[key] = fut.result()
    checks = oracles.Checks("whatif")
    rows = []
    for name in names:
        tdir = os.path.join(out, name + ".trace.d")
        traces = [f for f in os.listdir(tdir) if f.endswith(".trace")]
        if len(traces) != 1:
            checks.fail(f"{name}: one trace", detail=str(traces))
            continue
        args = [vt, "whatif", os.path.join(tdir, traces[0]), "--format", "json"]
        for s in SETTINGS + SHOWN:
            args += ["--alloc-conf", s]
        p = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            checks.fail(f"{name}: vramtrace whatif exits 0", detail=p.stderr)
            continue
        j = json.loads(p.stdout)
        by_conf = {s["alloc_conf"]: s for s in j["settings"]}
        by_conf[""] = j["model_check"]
        for setting in SHOWN:
            m, r = by_conf[setting], real[(name, setting)]
            model_oom = m["new_oom"] is not None or any(o["would_happen"] for o in m["ooms"])
            checks.gap(f"{name} under {setting} (approximate, not checked): peak reserved whatif {m['peak_reserved_bytes'] >> 20} "
                       f"MiB, PyTorch {r['peak_reserved'] >> 20} MiB; OOM whatif {model_oom}, PyTorch {r['ended_in_oom']}")
        for setting in [""] + SETTINGS:
            m, r = by_conf[setting], real[(name, setting)]
            model_oom = m["new_oom"] is not None or any(o["would_happen"] for o in m["ooms"])
            label = f"{name} under {setting or 'the defaults (the run itself)'}"
            same_oom = model_oom == r["ended_in_oom"]
            checks.equal(f"{label}: the same OOM outcome ({'OOM' if r['ended_in_oom'] else 'no OOM'})", model_oom,
                         r["ended_in_oom"])
            e_res, e_all = pct(m["peak_reserved_bytes"], r["peak_reserved"]), pct(m["peak_allocated_bytes"], r["peak_allocated"])
            detail = (f"model reserved {m['peak_reserved_bytes']} allocated {m['peak_allocated_bytes']}; "
                      f"PyTorch reserved {r['peak_reserved']} allocated {r['peak_allocated']}")
            checks.equal(f"{label}: peak reserved within 2% ({100 * e_res:.2f}%)", e_res <= TOLERANCE, True, detail=detail)
            checks.equal(f"{label}: peak allocated within 2% ({100 * e_all:.2f}%)", e_all <= TOLERANCE, True, detail=detail)
            rows.append((name, setting or "(the run's own: defaults)", r["peak_reserved"], m["peak_reserved_bytes"], e_res,
                         "OOM" if r["ended_in_oom"] else "fits", "OOM" if model_oom else "fits", same_oom))
    # A run recorded under expandable segments that empties its cache (the unmapping is its
    # empty_cache()): the model under the run's own settings gives PyTorch's peaks.
    if "empty_cache" in names:
        r = run_probe(build, rt, out, WORKLOADS["empty_cache"][0], {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                      "empty_cache.expandable.trace", True, cwd=W)
        p = subprocess.run([vt, "whatif", r["trace"], "--alloc-conf", "expandable_segments:False", "--format", "json"],
                           capture_output=True, text=True, timeout=300)
        j = json.loads(p.stdout) if p.returncode == 0 else {}
        m = j.get("model_check", {})
        checks.equal("empty_cache recorded under expandable_segments:True: its empty_cache() seen, the model's peaks PyTorch's",
                     (j.get("recorded", {}).get("empty_cache_calls"), m.get("peak_reserved_bytes"), m.get("peak_allocated_bytes")),
                     (1, r["peak_reserved"], r["peak_allocated"]), detail=p.stderr)

    # The settings' syntax: accepted or refused as PyTorch does.
    env = program_env(build, rt, out, {}, False)
    p = subprocess.run([rt["VT_RT_PYTHON"], "-c", PARSE, json.dumps(CONF_CASES)], env=env, capture_output=True, text=True,
                       timeout=300, cwd=W)
    theirs = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 and p.stdout.strip() else {}
    some_trace = next((os.path.join(out, n + ".trace.d", f) for n in names for f in os.listdir(os.path.join(out, n + ".trace.d"))
                       if f.endswith(".trace")), None)
    if not theirs or not some_trace:
        checks.fail("PyTorch's parser ran on the settings", detail=p.stderr[-2000:])
    else:
        ours = {c: subprocess.run([vt, "whatif", some_trace, "--alloc-conf", c, "--format", "json"], capture_output=True,
                                  text=True, timeout=120).returncode == 0 for c in CONF_CASES}
        checks.equal(f"--alloc-conf accepts and refuses what PyTorch does ({len(CONF_CASES)} settings)",
                     {c: v for c, v in ours.items() if v != theirs.get(c)}, {})
    with open(os.path.join(out, "agreement.md"), "w") as f:
        f.write("| workload | PYTORCH_CUDA_ALLOC_CONF | PyTorch's peak reserved | whatif's | apart | PyTorch | whatif |\n")
        f.write("|---|---|---:|---:|---:|---|---|\n")
        for n, s, a, b, e, ro, mo, same in rows:
            f.write(f"| {n} | `{s}` | {a / 2**20:.1f} MiB | {b / 2**20:.1f} MiB | {100 * e:.2f}% | {ro} | {mo} |\n")
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1]), sys.argv[2:] or list(WORKLOADS)))
