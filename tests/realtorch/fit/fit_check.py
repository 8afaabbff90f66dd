"""`vramtrace fit` against real PyTorch, on the simulated GPU: each workload runs under vramtrace at
three small batch sizes; `vramtrace fit` predicts the peaks at twice the largest, which the
workload then runs for real (without vramtrace): peak allocated within 5% and reserved within 10%
of PyTorch's own (max_memory_allocated / max_memory_reserved), and the first two runs must predict
the third within 1%. On a small device, the largest batch fit finds must run. Further out (8x the
largest run, and 10% above the largest batch found) PyTorch's kernels may allocate what the small
runs never did: those figures are printed as gaps, not checked (docs/metrics.md, "Fit").
    fit_check.py BUILD     one line per check (ok / FAIL), exit 1 on any FAIL"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RT = os.path.dirname(HERE)
sys.path.insert(0, RT)
import oracles  # noqa: E402
from probe_runs import run_probe  # noqa: E402
from run import read_env  # noqa: E402

# name: (script, the small batches traced, the batch predicted (checked), one further out (shown),
# the small device for --max-batch)
WORKLOADS = {
    "transformer": (os.path.join(HERE, "fit_transformer.py"), [4, 8, 16], 32, 128, "3GiB"),
    "mlp": (os.path.join(HERE, "fit_mlp.py"), [64, 128, 256], 512, 2048, "2GiB"),
}


def real(build, rt, out, script, batch, device, tag, traced=False):
    env = {"BATCH": str(batch)}
    if device:
        env["FAKECUDA_TOTAL_BYTES"] = device
    return run_probe(build, rt, out, script, env, tag, traced)


def main(build):
    rt = read_env(build)
    out = os.path.join(build, "tests", "realtorch", "out", "fit")
    os.makedirs(out, exist_ok=True)
    for root, dirs, files in os.walk(out, topdown=False):
        for f in files:
            os.unlink(os.path.join(root, f))
        for d in dirs:
            os.rmdir(os.path.join(root, d))
    vt = os.path.join(build, "bin", "vramtrace")
    checks = oracles.Checks("fit")
    for name, (script, small, target, far, device) in WORKLOADS.items():
        runs = [real(build, rt, out, script, b, device, f"{name}.b{b}", traced=True) for b in small]
        traces = [r["trace"] for r in runs]
        predicted = {}
        for t in (target, far):
            p = subprocess.run([vt, "fit"] + traces + ["--batch", ",".join(map(str, small)), "--target", str(t),
                                                       "--max-batch", "--format", "json"],
                               capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                checks.fail(f"{name}: vramtrace fit --target {t} exits 0", detail=p.stderr)
                break
            predicted[t] = json.loads(p.stdout)
        if len(predicted) != 2:
            continue
        j = predicted[target]
        checks.equal(f"{name}: the first two runs predict the third within 1%",
                     j["check"]["allocated_error"] <= 0.01 and j["check"]["reserved_error"] <= 0.01, True, detail=str(j["check"]))
        for t in (target, far):
            want = real(build, rt, out, script, t, device, f"{name}.b{t}")
            pa, pr = predicted[t]["target"]["peak_allocated_bytes"], predicted[t]["target"]["peak_reserved_bytes"]
            ea, er = abs(pa - want["peak_allocated"]) / want["peak_allocated"], abs(pr - want["peak_reserved"]) / want["peak_reserved"]
            detail = (f"predicted allocated {pa} reserved {pr}; PyTorch allocated {want['peak_allocated']} "
                      f"reserved {want['peak_reserved']}")
            what = f"{name}: batches {small} predict batch {t}: allocated {100 * ea:.2f}% and reserved {100 * er:.2f}% off"
            if t == target:
                checks.equal(f"{what} (within 5% and 10%)", ea <= 0.05 and er <= 0.10, True, detail=detail)
                checks.equal(f"{name}: the same outcome at batch {t}", predicted[t]["target"]["fits"], not want["ended_in_oom"])
            else:
                checks.gap(f"{what} (8x the largest run: not checked)")
        # The largest batch that fits the device the runs were on: it runs; 10% more is shown.
        m = int(j["max_batch"])
        if m < 1:
            checks.fail(f"{name}: a largest batch is found", detail=str(j))
            continue
        at = real(build, rt, out, script, m, device, f"{name}.max")
        over = real(build, rt, out, script, int(m * 1.1) + 1, device, f"{name}.over")
        checks.equal(f"{name}: the largest batch fit finds on {device} ({m}) runs", at["ended_in_oom"], False)
        checks.gap(f"{name}: 10% more ({int(m * 1.1) + 1}) " + ("runs out of memory" if over["ended_in_oom"] else
                                                                "still runs: the prediction is conservative there"))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
