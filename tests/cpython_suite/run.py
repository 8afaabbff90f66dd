"""CPython's own regression tests, untraced and traced, compared case by case (issue 38): every
interpreter (the runner's children included) has CUDA memory live (sitecustomize.py), once
without vramtrace and once under `vramtrace run`; a case that passes untraced must pass traced.

Usage: run.py BUILD [MODULE...]    (default: the modules below)
Exit: 0 every case agrees; 1 a case passed untraced and not traced (listed); 77 no CPython with
its test package here (skipped, said)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The modules of the attack round that found our defects: processes, signals, descriptors,
# threads, alternate stacks, fork.
MODULES = ["test_subprocess", "test_os", "test_posix", "test_signal", "test_threading", "test_fork1",
           "test_wait3", "test_wait4", "test_faulthandler", "test_select", "test_pty", "test_resource",
           "test_tempfile", "test_shutil"]
TIMEOUT = 900
CASE = re.compile(r"^(test\w*) \(([\w.]+)\)(?:\n.*?)? \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
                  re.M | re.S)


def find_python():
    """A CPython whose standard library has its test package (pyenv's builds do; Debian's
    python3 needs libpython3.X-testsuite)."""
    candidates = [os.environ.get("VT_CPYTHON_SUITE_PYTHON", "")]
    # (3.11 first: the version of the attack round)
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0-9]*/bin/python3.1[0-9]")),
                         key=lambda p: (not os.path.basename(p).startswith("python3.11"), p))
    candidates += [shutil.which(n) or "" for n in ("python3.11", "python3.12", "python3.13", "python3")]
    for c in candidates:
        if not c or not os.access(c, os.X_OK):
            continue
        r = subprocess.run([c, "-c", "import test.support, test.libregrtest"], capture_output=True)
        if r.returncode == 0:
            return c
    return None


def run_suite(python, modules, env, out):
    cmd = [python, "-m", "test", "-v", "--timeout", "300"] + modules
    t0 = time.time()
    with open(out, "w") as f:
        r = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=TIMEOUT)
    with open(out, errors="replace") as f:
        text = f.read()
    cases = {}
    for m in CASE.finditer(text):
        where, name = m.group(2), m.group(1)  # 3.11+: "name (module.Class.name)"; 3.10: "name (module.Class)"
        cases[where if where.endswith("." + name) else f"{where}.{name}"] = m.group(3)
    return cases, r.returncode, time.time() - t0


def main():
    if len(sys.argv) < 2 or not os.path.isfile(os.path.join(sys.argv[1], "lib", "libvramtrace.so")):
        print("usage: run.py BUILD [MODULE...]  (BUILD: a build tree with lib/libvramtrace.so)", file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    modules = sys.argv[2:] or MODULES
    python = find_python()
    if not python:
        print("cpython suite: SKIPPED: no CPython with its test package here (pyenv's builds have it; "
              "Debian: libpython3.X-testsuite)")
        return 77
    vt = os.path.join(build, "bin", "vramtrace")
    work = tempfile.mkdtemp(prefix="vt-cpython-suite.")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMTRACE_", "FAKECUDA_", "PYTHON"))}
    base.pop("LD_PRELOAD", None)
    base.update({"LD_LIBRARY_PATH": os.path.join(build, "lib", "fakecuda"), "PYTHONPATH": HERE,
                 "VT_CUDA_EVERYWHERE": "1", "VRAMTRACE_KERNELS": "0", "TMPDIR": work})
    print(f"cpython suite: {python}, {len(modules)} modules: {' '.join(modules)}")
    plain, prc, psecs = run_suite(python, modules, base, os.path.join(work, "untraced.log"))
    print(f"  untraced: {len(plain)} cases in {psecs:.0f} s (exit {prc})")
    traced_env = dict(base, VRAMTRACE_OUTPUT=os.path.join(work, "traces"))
    os.makedirs(traced_env["VRAMTRACE_OUTPUT"])
    # (what `vramtrace run` sets up; every child the runner starts inherits it)
    traced_env["LD_PRELOAD"] = os.path.join(build, "lib", "libvramtrace.so")
    traced, trc, tsecs = run_suite(python, modules, traced_env, os.path.join(work, "traced.log"))
    traces = glob.glob(os.path.join(traced_env["VRAMTRACE_OUTPUT"], "*.trace"))
    print(f"  traced:   {len(traced)} cases in {tsecs:.0f} s (exit {trc}), {len(traces)} traces written")
    worse = sorted(c for c, v in plain.items() if v in ("ok", "skipped") and traced.get(c) not in ("ok", "skipped"))
    worse += sorted(c for c in plain if c not in traced and plain[c] == "ok")
    failed = False
    if len(plain) < 5 * len(modules):
        print(f"cpython suite: FAILED: only {len(plain)} cases parsed from the untraced run ({work}/untraced.log)")
        failed = True
    if not traces:
        print("cpython suite: FAILED: no trace was written: CUDA was not live under vramtrace")
        failed = True
    for c in worse:
        print(f"  {c}: untraced {plain[c]}, traced {traced.get(c, 'missing')}")
    if worse:
        print(f"cpython suite: FAILED: {len(worse)} of {len(plain)} cases passed untraced and not traced "
              f"(logs: {work}/untraced.log, {work}/traced.log)")
        failed = True
    if failed:
        return 1
    print(f"cpython suite: ok: {len(plain)} cases agree untraced and traced")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
