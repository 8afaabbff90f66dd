#!/usr/bin/env bash
# The GPU checks, as one call on the lent GPU machine (docs/gpu-validation.md, "The one-call
# procedure"). It never builds: it runs what scripts/gpu_stage.sh staged in build-gpu/ (a CLI that
# needs only glibc, the library with the libunwind and liblzma it loads, the test programs, the
# CUDA programs compiled here). Preflight first (seconds; it stops at once when the tools cannot
# run), then sections in order of value, each under `timeout` and each started only while the
# budget allows; results are appended section by section, so a section can be run again alone.
#
#   tests/gpu/device_run.sh                          on a GPU machine, build-gpu/ carried
#   VT_GPU_DRYRUN=1 tests/gpu/device_run.sh          here: the same sections on the simulated driver
#                                                    and the real PyTorch of tests/realtorch (BUILD's
#                                                    set-up); what needs a GPU says so and moves on
# Environment:
#   OUT               where results.txt and logs.tar.gz go (default: a new folder under /tmp)
#   VT_GPU_STAGE      the staged folder (default build-gpu/; a dry run: build/)
#   VT_GPU_SECTIONS   only these sections (comma-separated: preflight always runs)
#   VT_GPU_REQUIRE    frameworks that must be there (torch,cupy,jax): their SKIP is a FAIL
#   VT_GPU_BUDGET     seconds for all sections (default 450); VT_GPU_SECTION_TIMEOUT caps each one
#   VT_GPU_PYTHON     the python with PyTorch (default python3; a dry run: tests/realtorch's)
# Lines in results.txt: "SECTION STATUS NAME: detail" with STATUS PASS, FAIL (the tail of its log
# follows, indented), SKIP, INFO, MEASURE; NOT-RUN when the budget was spent. The last line sums
# them up. logs.tar.gz holds every section's log and what the checks ran (traces over 2 MB left
# out). Exit 0 when nothing failed, 1 when something did, 2 when preflight failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
dry=${VT_GPU_DRYRUN:-0}
stage=${VT_GPU_STAGE:-$([[ $dry == 1 ]] && echo build || echo build-gpu)}
[[ -d $stage ]] || { echo "device_run: no staged folder $stage (scripts/gpu_stage.sh makes build-gpu/)" >&2; exit 2; }
stage=$(cd "$stage" && pwd)
OUT=${OUT:-$(mktemp -d /tmp/vt-gpu-out.XXXXXX)}
mkdir -p "$OUT"
results=$OUT/results.txt
logs=$(mktemp -d /tmp/vt-gpu-logs.XXXXXX)
budget=${VT_GPU_BUDGET:-450}
t_start=$(date +%s)
export repo dry stage logs results
export vt=$stage/bin/vramtrace
export py=${VT_GPU_PYTHON:-python3}
export require=",${VT_GPU_REQUIRE:-},"
if [[ $dry == 1 ]]; then
  # The simulated stack: the driver, NVML and, for Python, tests/realtorch's PyTorch (its stand-in
  # runtime and stubs come first on the library path, then the simulated driver).
  export sim_nvml=$stage/tests/realtorch/lib/libnvidia-ml.so.1
  export sim_path=$stage/lib/fakecuda
  if [[ -f $stage/tests/realtorch/env.sh ]]; then
    source "$stage/tests/realtorch/env.sh"
    sim_path=$VT_RT_LIBRARY_PATH
    [[ -n ${VT_GPU_PYTHON:-} ]] || py=$VT_RT_PYTHON
  fi
fi
export VT_RT_GPU_PYTHON=$py

# ---- what the sections call (exported: each section runs in a shell of its own under timeout) --
pass() { echo "@@PASS $1: ${*:2}"; }
info() { echo "@@INFO $1: ${*:2}"; }
measure() { echo "@@MEASURE $1: ${*:2}"; }
# fail NAME MESSAGE [LOG]: the last lines of LOG follow it into results.txt.
fail() {
  echo "@@FAIL $1: $2"
  [[ -n ${3:-} && -f ${3:-} ]] && tail -n 15 "$3" | sed 's/^/@@TAIL /'
  return 0
}
# skip FRAMEWORK NAME MESSAGE: a FAIL when VT_GPU_REQUIRE names FRAMEWORK ("-": none).
skip() { echo "@@SKIP $1 $2: ${*:3}"; }
gpu_only() { skip - "$1" "needs a GPU (dry run on the simulated driver)"; }
# Runs a program the way this run's programs run: on the simulated stack in a dry run.
sim() {
  if [[ $dry == 1 ]]; then
    # (the stand-in NVML's total is the simulated device's 16 GiB, as a real NVML agrees with its driver)
    env LD_LIBRARY_PATH=$sim_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} VRAMTRACE_NVML_LIBRARY=$sim_nvml VRAMTRACE_KERNELS=0 \
      FAKENVML_TOTAL_BYTES=$((16 << 30)) "$@"
  else
    "$@"
  fi
}
has_torch() { sim "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; }
has_module() { [[ $dry != 1 ]] && "$py" -c "import $1" >/dev/null 2>&1; }
# traced NAME PROGRAM ARGS...: `vramtrace run` into a fresh folder under the logs; prints the folder.
traced() {
  local name=$1 d
  shift
  d=$(mktemp -d "$logs/work/$name.XXXX")
  sim "$vt" run -o "$d/" -- "$@" >"$d/run.log" 2>&1
  echo $? >"$d/rc"
  echo "$d"
}
trace_in() { ls -S "$1"/*.trace 2>/dev/null | head -n 1; }
export -f pass info measure fail skip gpu_only sim has_torch has_module traced trace_in

# ---- the sections -------------------------------------------------------------------------------

sec_preflight() {
  local v
  v=$("$vt" --version 2>&1) && pass cli "$v" || { fail cli "the staged CLI does not run: $v"; return; }
  local d=$logs/work/preflight
  mkdir -p "$d"
  if LD_PRELOAD=$stage/lib/libvramtrace.so VRAMTRACE_OUTPUT=$d/true.trace /bin/true 2>"$d/preload.err" &&
     ! grep -q . "$d/preload.err"; then
    pass library "libvramtrace.so loads into a program ($(ls "$stage"/lib/*.so* | xargs -n1 basename | tr '\n' ' '))"
  else
    fail library "libvramtrace.so does not load cleanly" "$d/preload.err"
  fi
  info machine "$(uname -m), $(nproc) CPUs, $(ldd --version 2>&1 | head -n 1)"
  if [[ $dry == 1 ]]; then
    info gpu "none: a dry run on the simulated driver (library path $sim_path)"
  else
    info gpu "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 2 | tr '\n' ' ')"
    for tool in nvcc compute-sanitizer nsys; do
      info "$tool" "$(command -v "$tool" >/dev/null && "$tool" --version 2>&1 | tail -n 1 || echo 'not found')"
    done
  fi
  v=$(sim "$py" -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda,
torch.cuda.is_available(), torch.cuda.device_count())' 2>&1 | tail -n 1)
  if has_torch; then pass torch "python $v"; else skip torch torch "no PyTorch with CUDA in $py: $v"; fi
  for m in cupy jax; do
    if has_module "$m"; then info "$m" "$("$py" -c "import $m; print($m.__version__)" 2>&1 | tail -n 1)"
    else skip "$m" "$m" "not installed"; fi
  done
}

# PyTorch's own figures against the report (tests/realtorch's oracles, on the real GPU): in the
# three allocator modes, a real fragmentation OOM and a real live-set OOM.
realtorch() {  # realtorch WORKLOAD...
  local w rc
  for w in "$@"; do
    VT_RT_OUT_DIR=$logs/work/realtorch python3 "$repo/tests/realtorch/run.py" "$stage" "$w" $([[ $dry == 1 ]] || echo --gpu) \
      >"$logs/work/realtorch-$w.log" 2>&1
    rc=$?
    local summary
    summary=$(tail -n 1 "$logs/work/realtorch-$w.log")
    case $rc in
      0) pass "torch-$w" "$summary" ;;
      77) skip - "torch-$w" "$(grep -m1 SKIP "$logs/work/realtorch-$w.log")" ;;
      *) fail "torch-$w" "$summary: $(grep -m3 '^FAIL' "$logs/work/realtorch-$w.log" | cut -c1-300 | tr '\n' ' ')" "$logs/work/realtorch-$w.log" ;;
    esac
    grep -h '^gap' "$logs/work/realtorch-$w.log" | sed "s/^gap  */@@INFO torch-$w: gap: /"
  done
}
export -f realtorch
sec_torch_blocks() {
  has_torch || { skip torch torch-blocks "no PyTorch with CUDA"; return; }
  mkdir -p "$logs/work/realtorch"
  realtorch mlp_adamw grad_accumulation transformer_expandable mlp_cuda_malloc_async oom_fragmentation oom_live_set
}
sec_torch_more() {
  has_torch || { skip torch torch-more "no PyTorch with CUDA"; return; }
  mkdir -p "$logs/work/realtorch"
  realtorch oom_outside oom_other_process oom_kept_alive memory_fraction cuda_graph dataloader_pinned profiler_memory \
    empty_cache two_devices
}

# The lookup paths reach the hooks; what each framework was handed unhooked.
interception() {  # interception NAME DIR: a FAIL when a runtime was loaded and no lookup reached us
  local t
  t=$(trace_in "$2")
  [[ -n $t ]] || { fail "$1" "no trace (exit $(cat "$2/rc"))" "$2/run.log"; return; }
  "$vt" info "$t" 2>/dev/null | python3 -c '
import json, sys
x = json.load(sys.stdin).get("interception", {})
gaps = ", ".join(g["symbol"] + " (" + g["category"] + ")" for g in x.get("unhooked", [])) or "none"
libs = ", ".join(l["path"] + " (" + l["how"] + ")" for l in x.get("isolated_libraries", [])) or "none"
line = ("lookups reached vramtrace: " + str(x.get("lookups_reached")) + "; unhooked memory entry points: " + gaps +
        "; libraries out of reach: " + libs)
print(("@@FAIL " if x.get("cudart_unreached") else "@@PASS ") + sys.argv[1] + ": " + line)' "$1"
}
export -f interception
sec_lookups() {
  local mode rc
  for mode in dlsym procaddr procaddr-ptsz procaddr-v1; do
    local d=$logs/work/lookup-$mode
    mkdir -p "$d"
    LD_PRELOAD=$stage/lib/libvramtrace.so VRAMTRACE_OUTPUT=$d/ sim "$stage/tests/programs/lookup_dynamic" "$mode" \
      --expect-hooked --lookups-only >"$d/out.log" 2>&1
    rc=$?
    # 0: every hooked entry point handed out is ours; 3: one is not; anything else: it never got there.
    case $rc in
      0) pass "lookup-$mode" "every hooked pointer handed out is vramtrace's" ;;
      3) fail "lookup-$mode" "$(grep -m5 unhooked "$d/out.log" | tr '\n' ' ')" "$d/out.log" ;;
      *) fail "lookup-$mode" "exit $rc before the lookups were checked" "$d/out.log" ;;
    esac
  done
  # Whether the real libcuda.so.1 has a version table: without one, dlvsym finds its functions and
  # the dlvsym stub matters (docs/interception.md, "The three ways in").
  sim python3 - <<'PY'
import ctypes, subprocess
dl = ctypes.CDLL(None)
dl.dlopen.restype = dl.dlvsym.restype = ctypes.c_void_p
dl.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
dl.dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
h = dl.dlopen(b"libcuda.so.1", 2)
found = bool(h and dl.dlvsym(h, b"cuMemAlloc_v2", b"VRAMTRACE_ANY"))
path = next((l.split()[-1] for l in open("/proc/self/maps") if "libcuda.so" in l), "?")
try:
    dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    table = "yes" if "VERSYM" in dyn else "no" if dyn else "unknown"
except OSError:
    table = "unknown (no readelf)"
print(f"@@INFO libcuda-versions: {path}: version table {table}; "
      f"dlvsym(handle, cuMemAlloc_v2, any version) {'finds it' if found else 'finds nothing'}")
PY
  if has_torch; then
    local d
    for conf in "" expandable_segments:True backend:cudaMallocAsync; do
      d=$(PYTORCH_CUDA_ALLOC_CONF=$conf traced "torch-$conf" "$py" "$repo/tests/gpu/frameworks.py" torch)
      interception "interception-torch-${conf:-default}" "$d"
      d=$(PYTORCH_CUDA_ALLOC_CONF=$conf traced "lines-$conf" "$py" "$repo/tests/gpu/torch_lines.py")
      local want
      want=$(grep -m1 '^EXPECT ' "$d/run.log" | cut -d' ' -f2)
      if [[ -n $want ]] && python3 "$repo/tests/gpu/check_lines.py" "$vt" "$d" "$want" >"$d/check.log" 2>&1; then
        pass "torch-lines-${conf:-default}" "$(cat "$d/check.log")"
      else
        fail "torch-lines-${conf:-default}" "the 3 GiB tensor is not attributed to $want" "$d/check.log"
      fi
    done
  else skip torch interception-torch "no PyTorch with CUDA"; fi
  for m in cupy jax; do
    if has_module "$m"; then
      interception "interception-$m" "$(traced "$m" "$py" "$repo/tests/gpu/frameworks.py" "$m")"
    else skip "$m" "interception-$m" "not installed"; fi
  done
}

# Kernel activity: kernels, copies and NVTX on the same clock; every allocation CUPTI saw, seen;
# torch.profiler steps vramtrace aside and it resumes after the window.
expect_activity() {  # expect_activity NAME DIR CONDITION...
  local name=$1 dir=$2 t
  shift 2
  t=$(trace_in "$dir")
  [[ -n $t ]] || { fail "$name" "no trace (exit $(cat "$dir/rc"))" "$dir/run.log"; return; }
  "$vt" export --perfetto "$dir/out.json" "$t" 2>"$dir/export.err" || { fail "$name" "export failed" "$dir/export.err"; return; }
  python3 - "$dir/out.json" "$name" "$@" <<'PY'
import json, re, sys
path, name, *conds = sys.argv[1:]
j = json.load(open(path))
ev, ka = j["traceEvents"], j["otherData"]["kernel_activity"]
kernels = [e for e in ev if e.get("cat") == "kernel"]
copies = [e for e in ev if e.get("cat") in ("memcpy", "memset")]
nvtx = [e for e in ev if e.get("cat") == "nvtx" and e["ph"] == "X"]
allocs = [e for e in ev if e.get("cat") == "allocation"]
cov = ka.get("coverage")
bad = []
for c in conds:
    if c == "recorded": ok = ka.get("recorded") is True
    elif c == "stepped_aside": ok = ka.get("stepped_aside") is True
    elif c.startswith("kernels>="): ok = len(kernels) >= int(c[9:])
    elif c.startswith("kernel~="): ok = any(re.search(c[8:], e["name"]) for e in kernels)
    elif c.startswith("nvtx~="): ok = any(re.search(c[6:], e["name"]) for e in nvtx)
    elif c == "copies": ok = len(copies) > 0
    elif c == "coverage": ok = cov is not None and cov["cupti_allocations"] > 0 and cov["fraction"] == 1.0
    elif c == "in_run": ok = bool(kernels) and all(e["ts"] >= 0 for e in kernels)
    elif c == "after_alloc": ok = bool(kernels) and bool(allocs) and min(e["ts"] for e in kernels) > min(e["ts"] for e in allocs)
    elif c.startswith("unavailable~="): ok = re.search(c[13:], ka.get("unavailable", "")) is not None
    else: ok = False
    if not ok: bad.append(c)
detail = "kernels=%d copies=%d nvtx=%d lost=%s coverage=%s" % (
    len(kernels), len(copies), len(nvtx), ka.get("lost_records"),
    "%d/%d" % (cov["matched"], cov["cupti_allocations"]) if cov else "-")
if cov and cov["missed"]: detail += " missed=%s" % json.dumps(cov["missed"][:3])
if ka.get("unavailable"): detail += " unavailable=%s" % ka["unavailable"]
print(("@@PASS " if not bad else "@@FAIL ") + name + ": " + detail + ("" if not bad else "  failed: " + " ".join(bad)))
PY
}
export -f expect_activity
sec_cupti() {
  [[ $dry == 1 ]] && { gpu_only cupti; return; }
  local g=$stage/gpu d
  d=$(traced raw-static "$g/kernels")
  expect_activity raw-static "$d" recorded "kernels>=40" "kernel~=vec_add" "kernel~=scale" "nvtx~=^step$" copies in_run after_alloc coverage
  d=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} traced raw-shared "$g/kernels_shared")
  expect_activity raw-shared "$d" recorded "kernels>=40" "kernel~=vec_add" "nvtx~=^step$" coverage
  d=$(mktemp -d "$logs/work/nokernels.XXXX")
  "$vt" run --no-kernels -o "$d/" -- "$g/kernels" >"$d/run.log" 2>&1
  echo $? >"$d/rc"
  expect_activity raw-no-kernels "$d" "unavailable~=disabled"
  if command -v compute-sanitizer >/dev/null; then
    d=$(mktemp -d "$logs/work/sanitizer.XXXX")
    compute-sanitizer --target-processes all --print-limit 5 "$vt" run -o "$d/" -- "$g/kernels" >"$d/run.log" 2>&1
    echo $? >"$d/rc"
    [[ $(cat "$d/rc") == 0 ]] || fail compute-sanitizer "exit $(cat "$d/rc")" "$d/run.log"
    expect_activity compute-sanitizer "$d" "unavailable~=other_tool|other_client"
  else skip - compute-sanitizer "not installed"; fi
  if has_torch; then
    d=$(traced torch-default "$py" "$repo/tests/gpu/torch_kernels.py")
    expect_activity torch-kernels-default "$d" recorded "kernels>=10" "nvtx~=^step$" in_run coverage
    d=$(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync traced torch-async "$py" "$repo/tests/gpu/torch_kernels.py")
    expect_activity torch-kernels-async "$d" recorded "kernels>=10" coverage
    local bare with st t
    bare=$("$py" "$repo/tests/gpu/torch_kernels.py" profiler 2>&1 | grep profiler_cuda_events)
    d=$(traced torch-profiler "$py" "$repo/tests/gpu/torch_kernels.py" profiler)
    with=$(grep profiler_cuda_events "$d/run.log")
    if [[ -n $with && ${with##* } -gt 0 ]]; then pass torch-profiler-kernels "bare '$bare', under vramtrace '$with'"
    else fail torch-profiler-kernels "bare '$bare', under vramtrace '$with'" "$d/run.log"; fi
    expect_activity torch-profiler-trace "$d" recorded stepped_aside
    t=$(trace_in "$d")
    st=$("$vt" report --format json "$t" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernels"]["status"])' 2>&1)
    case $st in
      *"except while another client held it"*) pass torch-profiler-resumed "$st" ;;
      *) fail torch-profiler-resumed "$st (Kineto may keep its subscription: TEARDOWN_CUPTI)" ;;
    esac
  else skip torch torch-kernels "no PyTorch with CUDA"; fi
  if has_module cupy; then
    d=$(traced cupy "$py" -c "import cupy as cp; a = cp.random.rand(1 << 24, dtype=cp.float32); b = a * 2; print(float(b.sum()))")
    expect_activity cupy-kernels "$d" recorded "kernels>=1" coverage
  else skip cupy cupy-kernels "not installed"; fi
}

# Raw CUDA through cudart, static and shared: one driver event per allocation, a failure with
# the device's free and total.
sec_raw_cuda() {
  [[ $dry == 1 ]] && { gpu_only raw-cuda; return; }
  local v d
  for v in static shared; do
    d=$(LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} traced "cudart-$v" "$stage/gpu/alloc_$v")
    local out
    out=$(python3 "$repo/tests/gpu/check_trace.py" "$vt" "$d" "cudart-$v" "cuMemAlloc_v2==2" "cuMemAllocPitch_v2==1" \
      "cuMemAllocManaged==1" "cuMemHostAlloc==1" "any:cuMemAllocAsync|cuMemAllocAsync_ptsz==1" "failed==1" "cuMemFree_v2==3" 2>&1)
    case $out in
      *"PASS "*) pass "cudart-$v" "${out#*PASS cudart-$v }" ;;
      *) echo "$out" >"$d/check.log"; fail "cudart-$v" "$(tail -n 1 <<<"$out")" "$d/check.log" ;;
    esac
    interception "interception-cudart-$v" "$d"
  done
}

# The driver: the default pool's release at synchronize (rule 15), NVML's first list after the
# first context (rule 14), the simulated driver's model against this driver.
sec_driver() {
  local d
  if [[ $dry == 1 ]]; then
    gpu_only pool-release
    gpu_only nvml-first-list
  else
    d=$(traced pool-release "$stage/gpu/pool_release")
    python3 - "$vt" "$d" <<'PY'
import glob, json, subprocess, sys
vt, d = sys.argv[1:3]
fig = dict(l.split() for l in open(d + "/run.log") if l.count(" ") == 1 and l.split()[1].isdigit())
traces = glob.glob(d + "/*.trace")
rep = json.loads(subprocess.run([vt, "report", traces[0], "--format", "json"], capture_output=True, text=True).stdout) if traces else {}
pools = {p["pool"]: p["footprint_bytes"] for p in rep.get("fragmentation", {}).get("pools", [])}
want = int(fig.get("reserved_after_sync_threshold_max", -1))
got = max(pools.values()) if pools else -1
print(("@@PASS" if want > 0 and got == want else "@@FAIL") + f" pool-release: driver reserved {fig}, report footprints {pools}")
PY
    d=$(traced nvml-first-list "$stage/gpu/alloc_static")
    python3 - "$vt" "$d" <<'PY'
import glob, json, subprocess, sys
vt, d = sys.argv[1:3]
t = glob.glob(d + "/*.trace")[0]
recs = [json.loads(l) for l in subprocess.run([vt, "dump", "--meta", "--no-stacks", t], capture_output=True, text=True).stdout.splitlines() if l.startswith("{")]
ctx = [r["t_ns"] for r in recs if r.get("kind") == "code" and r.get("op", "").startswith(("cuDevicePrimaryCtxRetain", "cuCtxCreate"))]
lists = [r for r in recs if r.get("record") == "gpu processes"]
rep = json.loads(subprocess.run([vt, "report", t, "--format", "json"], capture_output=True, text=True).stdout)
fid = rep.get("peak", {}).get("fidelity") or {}
gap = (lists[0]["t_ns"] - ctx[0]) / 1e6 if ctx and lists else -1
print(("@@PASS" if 0 <= gap <= 1000 else "@@FAIL") + f" nvml-first-list: {len(lists)} list(s), the first {gap:.2f} ms after the first context; "
      f"peak: contexts {fid.get('contexts_bytes')} B, other processes {fid.get('other_processes_bytes')} B, unexplained {fid.get('unexplained_bytes')} B")
PY
  fi
  d=$logs/work/driver-figures
  mkdir -p "$d"
  if sim "$stage/tests/programs/driver_figures" --check >"$d/figures.txt" 2>"$d/figures.err"; then
    info driver-model "$(tr '\n' ' ' <"$d/figures.txt")"
  else
    info driver-model "differs from the simulated driver's model: $(tr '\n' ' ' <"$d/figures.err" | cut -c1-600)"
  fi
}

# Frameworks and the CLI against the machine: CuPy, JAX, a SIGKILL mid-run, doctor and top.
sec_frameworks() {
  local d
  if has_module cupy; then
    d=$(traced cupy "$py" "$repo/tests/gpu/frameworks.py" cupy)
    python3 "$repo/tests/gpu/check_trace.py" "$vt" "$d" cupy-default "cuMemAlloc_v2>=1" | sed 's/^\(PASS\|FAIL\) /@@\1 /; s/^  /@@INFO /'
    d=$(traced cupy-async "$py" "$repo/tests/gpu/frameworks.py" cupy-async)
    python3 "$repo/tests/gpu/check_trace.py" "$vt" "$d" cupy-async \
      "any:cuMemAllocAsync|cuMemAllocAsync_ptsz|cuMemAllocFromPoolAsync|cuMemAllocFromPoolAsync_ptsz>=1" | sed 's/^\(PASS\|FAIL\) /@@\1 /; s/^  /@@INFO /'
  else skip cupy cupy "not installed"; fi
  if has_module jax; then
    d=$(traced jax "$py" "$repo/tests/gpu/frameworks.py" jax)
    python3 "$repo/tests/gpu/check_trace.py" "$vt" "$d" jax "any:cuMemCreate|cuMemAlloc_v2>=1" | sed 's/^\(PASS\|FAIL\) /@@\1 /; s/^  /@@INFO /'
    info jax-processes "$(ls "$d"/*.trace 2>/dev/null | wc -l) trace file(s) (JAX's compiler children included)"
  else skip jax jax "not installed"; fi
  if has_torch; then
    d=$(traced sigkill "$py" -c "
import torch, os, signal
xs = [torch.empty(1 << 20, device='cuda') for _ in range(200)]
torch.cuda.synchronize(); os.kill(os.getpid(), signal.SIGKILL)")
    local n end
    n=$(for f in "$d"/*.trace; do "$vt" dump "$f" 2>/dev/null; done | grep -c cuMemAlloc)
    end=$("$vt" report "$(trace_in "$d")" --format json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["leaks"]["end"])' 2>&1)
    if [[ $n -ge 1 && $end == killed && $(cat "$d/rc") == 137 ]]; then pass torch-sigkill "$n allocations read back, end '$end', exit 137"
    else fail torch-sigkill "$n allocations read back, end '$end', exit $(cat "$d/rc")" "$d/run.log"; fi
  else skip torch torch-sigkill "no PyTorch with CUDA"; fi
  d=$logs/work/doctor
  mkdir -p "$d"
  sim "$vt" doctor --json >"$d/doctor.json" 2>"$d/doctor.err"
  local smi
  if [[ $dry == 1 ]]; then smi="0, $((16 * 1024)), 0"  # the simulated device: 16 GiB, as nvidia-smi would say
  else smi=$(nvidia-smi --query-gpu=index,memory.total --format=csv,noheader,nounits 2>&1); fi
  python3 - "$d/doctor.json" "$smi" <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError as e:
    print(f"@@FAIL doctor-gpus: doctor --json is not JSON ({e})"); sys.exit()
gpus = {c["data"]["index"]: c["data"]["total_bytes"] for c in doc["checks"] if c["id"] == "gpus.device" and "index" in c.get("data", {})}
rows = [[x.strip() for x in r.split(",")] for r in sys.argv[2].strip().splitlines()]
bad = []
for idx, total, *_ in rows:
    got = gpus.get(int(idx))
    if got is None or abs(got / 2**20 - int(total)) > 1:  # nvidia-smi prints whole MiB
        bad.append(f"GPU {idx}: nvidia-smi {total} MiB, doctor {got} bytes")
if len(gpus) != len(rows):
    bad.append(f"doctor lists {len(gpus)} GPUs, nvidia-smi {len(rows)}")
print(("@@PASS" if not bad else "@@FAIL") + f" doctor-gpus: {len(rows)} GPU(s), totals within 1 MiB of nvidia-smi's" +
      ("" if not bad else ": " + "; ".join(bad)))
PY
  if sim "$vt" top --once >"$d/top.txt" 2>&1 && grep -q "^GPU 0" "$d/top.txt"; then pass top-once "lists GPU 0"
  else fail top-once "does not list GPU 0" "$d/top.txt"; fi
}

# Measurements, if time is left: CUPTI MEMORY2's cost, a training step's, the job analysis on
# this machine's cores.
sec_measure() {
  local g=$stage/gpu
  if [[ $dry == 1 ]]; then
    gpu_only memory2-cost
  else
    local m_bare m_on m_off m_nok d
    pair() { grep -o 'ns_per_pair [0-9.]*' | tail -n 1 | cut -d' ' -f2; }
    m_bare=$("$g/async_pairs" | pair)
    d=$(mktemp -d "$logs/work/m2.XXXX")
    m_on=$("$vt" run -o "$d/on/" -- "$g/async_pairs" 2>/dev/null | pair)
    m_off=$(VRAMTRACE_CUPTI_MEMORY=0 "$vt" run -o "$d/off/" -- "$g/async_pairs" 2>/dev/null | pair)
    m_nok=$("$vt" run --no-kernels -o "$d/nok/" -- "$g/async_pairs" 2>/dev/null | pair)
    measure memory2-cost "ns per cudaMallocAsync+cudaFreeAsync pair: bare ${m_bare:-?}, vramtrace with MEMORY2 ${m_on:-?}," \
      "VRAMTRACE_CUPTI_MEMORY=0 ${m_off:-?}, --no-kernels ${m_nok:-?}"
  fi
  if [[ $dry != 1 ]] && has_torch; then
    # Three interleaved pairs (plain, traced), the medians: a MEASURE, not a verdict.
    local d i plain=() traced_ms=()
    d=$(mktemp -d "$logs/work/steps.XXXX")
    for i in 1 2 3; do
      "$py" "$repo/tests/gpu/step_cost.py" "$d/plain$i.json" >/dev/null 2>&1
      "$vt" run -o "$d/t$i/" -- "$py" "$repo/tests/gpu/step_cost.py" "$d/traced$i.json" >/dev/null 2>&1
    done
    python3 - "$d" <<'PY'
import glob, json, statistics, sys
d = sys.argv[1]
ms = lambda k: [json.load(open(f))["ms_per_step"] for f in sorted(glob.glob(f"{d}/{k}*.json"))]
a, b = ms("plain"), ms("traced")
if len(a) == 3 and len(b) == 3:
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"@@MEASURE torch-step-cost: median {ma:.3f} ms/step plain, {mb:.3f} traced ({(mb / ma - 1) * 100:+.1f}%; target <= +2%); "
          f"runs plain {[round(x, 3) for x in a]}, traced {[round(x, 3) for x in b]}")
else:
    print(f"@@FAIL torch-step-cost: {len(a)} plain and {len(b)} traced runs finished of 3 each")
PY
  else gpu_only torch-step-cost; fi
  if [[ -x $stage/bench/gen_trace ]]; then
    LD_LIBRARY_PATH=$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$repo/bench/run_job_bench.sh" "$stage" 64 500000 1 2>&1 |
      sed 's/^/@@MEASURE job-scaling: /'
  else info job-scaling "not measured (bench/gen_trace not staged)"; fi
}
export -f sec_preflight sec_torch_blocks sec_torch_more sec_lookups sec_cupti sec_raw_cuda sec_driver sec_frameworks sec_measure

# ---- the runner ---------------------------------------------------------------------------------
mkdir -p "$logs/work"
passed=0 failed=0 skipped=0 notrun=0
note() { echo "$*" >>"$results"; }
section() {  # section NAME FUNCTION SECONDS_NEEDED
  local name=$1 fn=$2 need=$3
  if [[ $name != preflight && -n ${VT_GPU_SECTIONS:-} && ",$VT_GPU_SECTIONS," != *",$name,"* ]]; then return 0; fi
  local left=$((t_start + budget - $(date +%s)))
  if ((left < need)); then
    note "$name NOT-RUN: $left s of the budget left, it needs $need"
    notrun=$((notrun + 1))
    return 0
  fi
  local log=$logs/$name.log t0=$(date +%s) limit=$left
  [[ $name != preflight && -n ${VT_GPU_SECTION_TIMEOUT:-} ]] && ((VT_GPU_SECTION_TIMEOUT < limit)) && limit=$VT_GPU_SECTION_TIMEOUT
  note "$name START at $(date -u +%T), $left s of the budget left"
  timeout --kill-after=10 "$limit" bash -c "$fn" >"$log" 2>&1
  local rc=$?
  local kind fw rest
  while IFS= read -r line; do
    case $line in
      @@PASS*) note "$name PASS ${line#@@PASS }"; passed=$((passed + 1)) ;;
      @@FAIL*) note "$name FAIL ${line#@@FAIL }"; failed=$((failed + 1)) ;;
      @@TAIL*) note "    ${line#@@TAIL }" ;;
      @@INFO*) note "$name INFO ${line#@@INFO }" ;;
      @@MEASURE*) note "$name MEASURE ${line#@@MEASURE }" ;;
      @@SKIP*)
        read -r kind fw rest <<<"$line"
        if [[ $fw != - && $require == *",$fw,"* ]]; then
          note "$name FAIL $rest (VT_GPU_REQUIRE names $fw)"
          failed=$((failed + 1))
        else
          note "$name SKIP $rest"
          skipped=$((skipped + 1))
        fi ;;
    esac
  done <"$log"
  if ((rc == 124 || rc == 137)); then
    note "$name FAIL the section ran out of its $limit s and was stopped"
    tail -n 15 "$log" | sed 's/^@@//; s/^/    /' >>"$results"
    failed=$((failed + 1))
  fi
  note "$name END after $(($(date +%s) - t0)) s"
}

note "device_run $(date -u +%FT%TZ): $([[ $dry == 1 ]] && echo "DRY RUN (simulated driver)" || echo GPU), stage $stage, budget $budget s, commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || cat "$stage/STAGED" 2>/dev/null | head -n 1)"
failed_before=$failed
section preflight sec_preflight 5
if ((failed > failed_before)) || grep -q "^preflight FAIL cli\|^preflight FAIL library" "$results"; then
  note "preflight failed: nothing else runs"
  status=2
else
  section torch-blocks sec_torch_blocks 60
  section lookups sec_lookups 20
  section cupti sec_cupti 30
  section raw-cuda sec_raw_cuda 10
  section driver sec_driver 10
  section frameworks sec_frameworks 20
  section torch-more sec_torch_more 60
  section measure sec_measure 30
  status=$((failed > 0))
fi
note "summary: $passed passed, $failed failed, $skipped skipped, $notrun not run, $(($(date +%s) - t_start)) s"
# Everything the checks ran, for the record: traces over 2 MB left out (the results say what they showed).
find "$logs" -type f -size +2M -delete
tar -czf "$OUT/logs.tar.gz" -C "$logs" . 2>/dev/null
while (($(stat -c %s "$OUT/logs.tar.gz") > 15 * 1024 * 1024)); do  # (files come back up to 16 MiB)
  find "$logs" -type f -printf '%s %p\n' | sort -rn | head -n 20 | cut -d' ' -f2- | xargs rm -f
  tar -czf "$OUT/logs.tar.gz" -C "$logs" . 2>/dev/null
done
rm -rf "$logs"
cat "$results"
exit $status
