"""One run of a workload script under real PyTorch on the simulated GPU, with PyTorch's own peaks
read at its end (whatif/probe.py), traced by vramtrace or not: what the whatif and fit checks
compare vramtrace's predictions with."""
import json
import os
import subprocess

from run import program_env

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "whatif", "probe.py")


def run_probe(build, rt, out, script, env_extra, tag, traced=False, cwd=None):
    """PyTorch's figures (probe.py's JSON); with `traced`, also "trace": the trace's path."""
    probe = os.path.join(out, tag + ".json")
    env = program_env(build, rt, out, {"env": env_extra}, False)
    env.pop("VT_RT_OUT", None)  # PyTorch's own recorder off: it changes nothing the checks read
    cmd = [rt["VT_RT_PYTHON"], PROBE, script, probe]
    tdir = os.path.join(out, tag + ".d")
    if traced:
        os.makedirs(tdir, exist_ok=True)
        cmd = [os.path.join(build, "bin", "vramtrace"), "run", "-o", tdir + "/", "--"] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=cwd or os.path.dirname(script))
    if p.returncode != 0 or not os.path.exists(probe):
        raise RuntimeError(f"{tag}: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-3000:]}")
    with open(probe) as f:
        result = json.load(f)
    if traced:
        result["trace"] = os.path.join(tdir, next(f for f in os.listdir(tdir) if f.endswith(".trace")))
    return result
