#!/usr/bin/env python3
"""The pytest plugin under real PyTorch on the simulated GPU: a suite (pytest_suite/) run under
`vramtrace run` in two orders. Each test's figure (--vram-report) must be what PyTorch itself says
the test allocated above its start (conftest.py: max_memory_allocated() during the call minus
memory_allocated() at its start), the same in both orders, and the analyzer's region figures must
agree; the test over its limit fails naming its own line.

    pytest_plugin_check.py BUILD     one line per check (ok / FAIL), exit 1 on any FAIL"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import oracles  # noqa: E402
from run import program_env, read_env  # noqa: E402

SUITE = os.path.join(HERE, "pytest_suite")
TESTS = ["test_one_tensor", "test_train_step", "test_leaves_cache", "test_too_big"]
ORDERS = {"forward": TESTS, "reverse": ["test_leaves_cache", "test_too_big", "test_train_step", "test_one_tensor"]}


def run_order(build, rt, out, order):
    os.makedirs(out, exist_ok=True)
    env = program_env(build, rt, out, {}, False)
    env["PYTHONPATH"] = os.path.join(HERE, "..", "..", "pytest_plugin")
    env["VT_RT_TORCH_FIGURES"] = os.path.join(out, "torch.jsonl")
    ids = ["test_training.py::" + t for t in ORDERS[order]]
    cmd = [os.path.join(build, "bin", "vramtrace"), "run", "-o", out + "/", "--", rt["VT_RT_PYTHON"], "-m", "pytest",
           "-p", "pytest_vramtrace", "-p", "no:cacheprovider", "--vram-report", "-q"] + ids
    p = subprocess.run(cmd, env=env, cwd=SUITE, capture_output=True, text=True, timeout=600)
    with open(os.path.join(out, "pytest.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    plugin = {m.group(1).split("::")[-1]: int(m.group(2))
              for m in re.finditer(r"^\s*\S+ \S+  (\S+)  \((\d+) bytes\)$", p.stdout, re.M)}
    with open(env["VT_RT_TORCH_FIGURES"]) as f:
        torch_own = {json.loads(line)["test"].split("::")[-1]: json.loads(line)["own_peak"] for line in f}
    traces = [os.path.join(out, n) for n in os.listdir(out) if n.endswith(".trace")]
    return p, plugin, torch_own, traces


def main():
    build = os.path.abspath(sys.argv[1])
    rt = read_env(build)
    vt = os.path.join(build, "bin", "vramtrace")
    root = os.path.join(build, "tests", "realtorch", "out", "pytest_plugin")
    checks = oracles.Checks("pytest_plugin")
    figures = {}
    for order in ORDERS:
        out = os.path.join(root, order)
        subprocess.run(["rm", "-rf", out])
        p, plugin, torch_own, traces = run_order(build, rt, out, order)
        log = (p.stdout + p.stderr)[-3000:]
        checks.equal(f"{order}: pytest's exit status (one test over its limit)", p.returncode, 1, detail=log)
        checks.equal(f"{order}: outcome", "1 failed, 3 passed" in p.stdout, True, detail=log)
        for t in TESTS:
            checks.equal(f"{order}: {t}: the plugin's figure is PyTorch's own (allocated above the start)",
                         plugin.get(t), torch_own.get(t), detail=log)
        figures[order] = plugin
        m = re.search(r"peak of PyTorch tensors allocated during the test (\S+ \S+) \((\d+) bytes\) exceeds limit_vram 100 MiB",
                      p.stdout)
        checks.equal(f"{order}: test_too_big fails with its tensors' figure", m.group(2) if m else None,
                     str(torch_own.get("test_too_big")), detail=log)
        checks.equal(f"{order}: the failure names the test's own line",
                     bool(re.search(r"^\s+300 MiB in 1 tensor: test_training\.py:\d+ in test_too_big$", p.stdout, re.M)), True,
                     detail=log)
        if len(traces) != 1:
            checks.fail(f"{order}: expected one trace, found {len(traces)}")
            continue
        rep = json.loads(subprocess.run([vt, "report", traces[0], "--format", "json"], capture_output=True, text=True,
                                        timeout=300).stdout)
        regions = {r["name"].split("::")[-1]: r for r in rep.get("regions", [])}
        for t in TESTS:
            a = (regions.get(t) or {}).get("allocated") or {}
            checks.equal(f"{order}: {t}: the report's region figure (allocated above its start)",
                         a.get("peak_above_start_bytes"), torch_own.get(t))
    for t in TESTS:
        checks.equal(f"{t}: the same figure in both orders", figures["forward"].get(t), figures["reverse"].get(t))
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
