#!/usr/bin/env python3
"""Runs one real-PyTorch workload (workloads.py) under `vramtrace run` on the simulated GPU and
checks vramtrace's report against PyTorch's own view of the same run (oracles.py).

    run.py BUILD NAME [--gpu]   one line per check (ok / FAIL / gap), exit 1 on any FAIL
    run.py BUILD --list         the workloads' names

Needs BUILD/tests/realtorch/env.sh (setup.sh). With --gpu, on a real GPU instead: the machine's
`python3` (VT_RT_GPU_PYTHON) with its CUDA PyTorch, the real driver and NVML, and BUILD a build or
a staged one (scripts/gpu_stage.sh: bin/, lib/, tests/realtorch/lib/); the workloads size
themselves from the device, the simulated driver's settings are left out, and one needing more
devices than there are is skipped. Leaves everything in OUT/NAME/ (BUILD/tests/realtorch/out, or
VT_RT_OUT_DIR): the program's stdout and stderr, the trace, report.json, report.txt, PyTorch's
marks.jsonl and the report at each mark (at-*.json)."""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracles  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

TIMEOUT = 300  # seconds per program run (a hang is a failure, never a stuck ctest)


def read_env(build):
    env = {}
    with open(os.path.join(build, "tests", "realtorch", "env.sh")) as f:
        for line in f:
            if "=" in line and not line.startswith("#"):
                k, v = line.rstrip("\n").split("=", 1)
                env[k] = v
    return env


def program_env(build, rt, out, spec, gpu):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMTRACE_", "FAKECUDA_", "FAKENVML_", "PYTORCH_"))}
    env.pop("LD_PRELOAD", None)
    lib = os.path.join(build, "tests", "realtorch", "lib")
    env.update({
        "VT_RT_OUT": out,
        "VT_RT_OUTSIDE_LIBRARY": os.path.join(lib, "libvt_outside.so"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    if not gpu:
        env.update({
            "LD_LIBRARY_PATH": rt["VT_RT_LIBRARY_PATH"],
            "VRAMTRACE_NVML_LIBRARY": os.path.join(lib, "libnvidia-ml.so.1"),  # as on a GPU: NVML lists the process
            "VRAMTRACE_KERNELS": "0",  # CUPTI needs a real GPU
        })
    env.update({k: v for k, v in spec.get("env", {}).items() if not (gpu and k.startswith("FAKECUDA_"))})
    return env


def gpu_count(python, env):
    p = subprocess.run([python, "-c", "import torch; print(torch.cuda.device_count())"], env=env,
                       capture_output=True, text=True, timeout=120)
    return int(p.stdout.strip() or 0)


def start_other_process(python, env, share):
    """Another process holding `share` of device 0 (a real one on a GPU); returns it when it holds it."""
    code = ("import sys, time, torch\n"
            "free, total = torch.cuda.mem_get_info()\n"
            f"x = torch.empty(int(total * {share}), dtype=torch.uint8, device='cuda')\n"
            "print('holding', flush=True)\n"
            "sys.stdin.read()\n")
    p = subprocess.Popen([python, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "holding":
        p.kill()
        raise RuntimeError("the other process could not take its share of the GPU")
    return p


def run_program(cmd, env, out, name):
    t0 = time.monotonic()
    with open(os.path.join(out, name + ".stdout"), "w") as so, open(os.path.join(out, name + ".stderr"), "w") as se:
        try:
            p = subprocess.run(cmd, env=env, stdout=so, stderr=se, timeout=TIMEOUT,
                               cwd=os.path.join(HERE, "workloads"))
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    with open(os.path.join(out, name + ".stdout")) as so, open(os.path.join(out, name + ".stderr")) as se:
        return rc, so.read(), se.read(), time.monotonic() - t0


def parse_size(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
    for u, m in units.items():
        if text.endswith(u):
            return int(float(text[:-len(u)]) * m)
    return int(text)


def vramtrace_json(vt, args, path):
    p = subprocess.run([vt] + args + ["--format", "json", "-o", path], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"vramtrace {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    with open(path) as f:
        return json.load(f)


def main():
    build = os.path.abspath(sys.argv[1])
    if sys.argv[2] == "--list":
        print("\n".join(WORKLOADS))
        return 0
    name = sys.argv[2]
    gpu = "--gpu" in sys.argv[3:]
    spec = WORKLOADS[name]
    rt = {"VT_RT_PYTHON": os.environ.get("VT_RT_GPU_PYTHON", "python3")} if gpu else read_env(build)
    python = rt["VT_RT_PYTHON"]
    vt = os.path.join(build, "bin", "vramtrace")
    out = os.path.join(os.environ.get("VT_RT_OUT_DIR") or os.path.join(build, "tests", "realtorch", "out"), name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = program_env(build, rt, out, spec, gpu)
    checks = oracles.Checks(name)
    devices = int(spec.get("env", {}).get("FAKECUDA_DEVICES", 1))
    if gpu and devices > 1 and gpu_count(python, env) < devices:
        checks.line("SKIP", f"needs {devices} GPUs")
        return 77
    other = None
    if spec.get("other_process"):
        share = spec["other_process"]
        if gpu:
            other = start_other_process(python, env, share)
        else:
            # A real process, so that its pid names something; the simulated driver takes its
            # memory from the device, NVML lists it with its bytes.
            other = subprocess.Popen(["sleep", "600"], stdin=subprocess.PIPE)
            held = int(parse_size(spec["env"]["FAKECUDA_TOTAL_BYTES"]) * share)
            env["FAKECUDA_FOREIGN_BYTES"] = str(held)
            if not spec.get("nvml_lists_none"):
                env["FAKENVML_PROCESSES"] = f"{other.pid}:{held}"
    try:
        script = os.path.join(HERE, "workloads", spec["script"])
        rc, stdout, stderr, secs = run_program([vt, "run", "-o", os.path.join(out, "trace") + "/", "--",
                                                python, script], env, out, "program")
        checks.note(f"ran {spec['script']} under vramtrace in {secs:.1f} s (exit {rc})")
        checks.equal("the program's exit status", rc, spec.get("rc", 0), detail=stderr[-2000:])
        traces = sorted((os.path.join(out, "trace", f) for f in os.listdir(os.path.join(out, "trace"))
                         if f.endswith(".trace")), key=os.path.getsize)
        if not traces:
            checks.fail("no trace was written", stderr[-2000:])
            return checks.finish()
        trace = traces[-1]  # the training process (DataLoader workers write none: no CUDA there)
        with open(os.path.join(out, "report.txt"), "w") as f:
            subprocess.run([vt, "report", trace], stdout=f, stderr=subprocess.STDOUT, timeout=120)
        report = vramtrace_json(vt, ["report", trace], os.path.join(out, "report.json"))
        marks = []
        if os.path.exists(os.path.join(out, "marks.jsonl")):
            with open(os.path.join(out, "marks.jsonl")) as f:
                marks = [json.loads(line) for line in f]
        at = {}
        for i, m in enumerate(marks):
            at[m["tag"]] = vramtrace_json(vt, ["peak", trace, "--at", "mark:" + m["tag"]], os.path.join(out, f"at-{i}.json"))
        context = oracles.Context(spec=spec, script=script, report=report, marks=marks, at=at,
                                  program_output=stdout + stderr, out=out, vt=vt, trace=trace)
        oracles.check_all(checks, context)
        if spec.get("remedies_apply"):
            def rerun(conf):
                d = os.path.join(out, "remedy")
                os.makedirs(d, exist_ok=True)
                rrc, rout, rerr, _ = run_program([python, script], dict(env, VT_RT_OUT=d, PYTORCH_CUDA_ALLOC_CONF=conf),
                                                 d, "program")
                return rrc, rout + rerr
            oracles.check_remedy_settings(checks, context, rerun)
        if spec.get("plain_too"):
            plain = os.path.join(out, "plain")
            os.makedirs(plain)
            penv = dict(env, VT_RT_OUT=plain)
            prc, _, pstderr, psecs = run_program([python, script], penv, plain, "program")
            checks.note(f"ran {spec['script']} without vramtrace in {psecs:.1f} s (exit {prc})")
            checks.equal("the program's exit status without vramtrace", prc, spec.get("rc", 0), detail=pstderr[-2000:])
            oracles.check_profiler(checks, out, plain)
    finally:
        if other:
            other.kill()
            other.wait()
            if other.stdout:
                other.stdout.close()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
