#!/usr/bin/env python3
"""Runs one real-PyTorch workload (workloads.py) under `vramtrace run` on the simulated GPU and
checks vramtrace's report against PyTorch's own view of the same run (oracles.py).

    run.py BUILD NAME        one line per check (ok / FAIL / gap), exit 1 on any FAIL
    run.py BUILD --list      the workloads' names

Needs BUILD/tests/realtorch/env.sh (setup.sh). Leaves everything in BUILD/tests/realtorch/out/NAME/:
the program's stdout and stderr, the trace, report.json, report.txt, PyTorch's marks.jsonl and
the report at each mark (at-*.json)."""
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


def program_env(build, rt, out, spec):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMTRACE_", "FAKECUDA_", "FAKENVML_", "PYTORCH_"))}
    env.pop("LD_PRELOAD", None)
    lib = os.path.join(build, "tests", "realtorch", "lib")
    env.update({
        "LD_LIBRARY_PATH": rt["VT_RT_LIBRARY_PATH"],
        "VRAMTRACE_NVML_LIBRARY": os.path.join(lib, "libnvidia-ml.so.1"),  # as on a GPU: NVML lists the process
        "VRAMTRACE_KERNELS": "0",  # CUPTI needs a real GPU
        "VT_RT_OUT": out,
        "VT_RT_OUTSIDE_LIBRARY": os.path.join(lib, "libvt_outside.so"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(spec.get("env", {}))
    return env


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
    spec = WORKLOADS[name]
    rt = read_env(build)
    vt = os.path.join(build, "bin", "vramtrace")
    out = os.path.join(build, "tests", "realtorch", "out", name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = program_env(build, rt, out, spec)
    other = None
    if spec.get("other_process"):
        # Another process on the GPU: a real one, so that its pid names something; the simulated
        # driver takes its memory from the device, NVML lists it with its bytes.
        other = subprocess.Popen(["sleep", "600"])
        env["FAKECUDA_FOREIGN_BYTES"] = str(spec["other_process"])
        env["FAKENVML_PROCESSES"] = f"{other.pid}:{spec['other_process']}"
    checks = oracles.Checks(name)
    try:
        script = os.path.join(HERE, "workloads", spec["script"])
        rc, stdout, stderr, secs = run_program([vt, "run", "-o", os.path.join(out, "trace") + "/", "--",
                                                rt["VT_RT_PYTHON"], script], env, out, "program")
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
                                  program_output=stdout + stderr, out=out)
        oracles.check_all(checks, context)
        if spec.get("plain_too"):
            plain = os.path.join(out, "plain")
            os.makedirs(plain)
            penv = dict(env, VT_RT_OUT=plain)
            prc, _, pstderr, psecs = run_program([rt["VT_RT_PYTHON"], script], penv, plain, "program")
            checks.note(f"ran {spec['script']} without vramtrace in {psecs:.1f} s (exit {prc})")
            checks.equal("the program's exit status without vramtrace", prc, spec.get("rc", 0), detail=pstderr[-2000:])
            oracles.check_profiler(checks, out, plain)
    finally:
        if other:
            other.kill()
            other.wait()
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
