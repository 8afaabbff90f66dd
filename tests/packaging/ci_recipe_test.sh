#!/usr/bin/env bash
# docs/ci.md's GitHub Actions recipe, its shell steps run as written (the block between
# <!-- ci-recipe --> and <!-- /ci-recipe -->, read with PyYAML): `uses:` steps are left out
# (checkout, artifacts), so the wheel is put where download-artifact would (wheels/), the
# baseline is absent (the first run on a branch), and `python` is a fresh venv's. The suite
# allocates on the simulated GPU. The gate passes; a suite that runs out of memory makes the
# gate step fail with exit 1; the report and traces the upload step names exist.
# Usage: ci_recipe_test.sh WHEEL BUILD_DIR SOURCE_DIR   (tests/packaging/wheel_test.sh calls it)
set -uo pipefail
whl=$(realpath "${1:?usage: ci_recipe_test.sh WHEEL BUILD_DIR SOURCE_DIR}")
build=$(realpath "${2:?usage}")
src=$(realpath "${3:?usage}")
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
$py -c "import yaml" 2>/dev/null || fail "PyYAML is needed to read the recipe (apt-get install python3-yaml)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
awk '$0 == "<!-- ci-recipe -->" {on = 1; next} $0 == "<!-- /ci-recipe -->" {on = 0} on && !/^```/' "$src/docs/ci.md" > "$work/recipe.yml"
$py - "$work/recipe.yml" "$work/steps" <<'PY' || fail "cannot read the recipe's steps"
import os, sys, yaml
jobs = yaml.safe_load(open(sys.argv[1]))["jobs"]
steps = next(iter(jobs.values()))["steps"]
os.makedirs(sys.argv[2])
n = 0
for step in steps:
    if "run" in step:
        n += 1
        with open(os.path.join(sys.argv[2], "%02d %s" % (n, step.get("name", "step"))), "w") as f:
            f.write(step["run"])
    elif "with" in step and "path" in step["with"] and step.get("uses", "").startswith("actions/upload-artifact"):
        with open(os.path.join(sys.argv[2], "uploads"), "a") as f:
            f.write(step["with"]["path"] + "\n")
assert n >= 4, "fewer than 4 shell steps"
PY
# The job's machine: a checkout with a tests/ suite, the wheel downloaded, a Python on PATH.
job() {  # job DIR SUITE_MODE: a fresh job folder
  mkdir -p "$1/wheels" "$1/tests" && cp "$whl" "$1/wheels/"
  cat > "$1/tests/test_gpu.py" <<PYTEST
import ctypes, os

def test_allocates():
    c = ctypes.CDLL("libcuda.so.1")
    assert c.cuInit(0) == 0
    d, x, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    assert c.cuDeviceGet(ctypes.byref(d), 0) == 0
    assert c.cuDevicePrimaryCtxRetain(ctypes.byref(x), d) == 0 and c.cuCtxSetCurrent(x) == 0
    size = (64 << 30) if "$2" == "oom" else (256 << 20)  # the simulated GPU has 16 GiB
    rc = c.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size))
    assert rc == (2 if "$2" == "oom" else 0)
    if rc == 0:
        c.cuMemFree_v2(p)
PYTEST
}
$py -m venv --system-site-packages "$work/venv" > "$work/log" 2>&1 || fail "no venv: $(tail -1 "$work/log")"
export PATH="$work/venv/bin:$PATH" LD_LIBRARY_PATH="$build/lib/fakecuda" VRAMTRACE_KERNELS=0 PIP_NO_INDEX=1
run_steps() {  # run_steps DIR: each shell step with bash -e, as Actions does; stops at the first failure
  local dir=$1 step rc
  for step in "$work"/steps/[0-9]*; do
    (cd "$dir" && bash -e "$step") > "$dir/step.log" 2>&1
    rc=$?
    if ((rc)); then echo "$(basename "$step"): exit $rc"; cat "$dir/step.log" >> "$dir/all.log"; return 1; fi
    cat "$dir/step.log" >> "$dir/all.log"
  done
}
job "$work/pass" fits
run_steps "$work/pass" > "$work/pass.result" || fail "the recipe failed on a suite within its limits: $(cat "$work/pass.result"): $(tail -15 "$work/pass/all.log")"
command -v vramtrace | grep -q "^$work/venv/bin/" || fail "the install step did not put vramtrace on PATH"
grep -q "1 passed" "$work/pass/all.log" || fail "the traced suite did not pass: $(tail -5 "$work/pass/all.log")"
grep -qE "^ +256 MiB +tests/test_gpu.py::test_allocates" "$work/pass/all.log" || fail "--vram-report did not give the test's 256 MiB: $(grep -A3 "GPU memory per test" "$work/pass/all.log")"
while read -r path; do
  for p in $path; do [ -e "$work/pass/$p" ] || fail "the upload step names $p, which the steps did not write"; done
done < <(printf '%b\n' "$(cat "$work/steps/uploads")")
grep -q "<html" "$work/pass/vram-report.html" || fail "the HTML report is not a page"
job "$work/oom" oom
run_steps "$work/oom" > "$work/oom.result" && fail "the gate passed a suite that ran out of memory"
grep -q "Gate: exit 1" "$work/oom.result" || fail "the OOM suite failed elsewhere than the gate with exit 1: $(cat "$work/oom.result"): $(tail -8 "$work/oom/all.log")"
echo "PASS: docs/ci.md's recipe: install, trace, gate (passes; exit 1 on an OOM), HTML report and traces to upload"
