#!/usr/bin/env bash
# The GPU checks, for a machine with an NVIDIA GPU, CUDA 13 (nvcc), and optionally PyTorch, CuPy
# and JAX. Uses a build made elsewhere (build/bin, build/lib, build/tests/programs and build/bench carried along)
# or builds one. Writes a summary to ${OUT:-/tmp}/gpu-results.txt. Usage: tests/gpu/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp}
results=$OUT/gpu-results.txt
: > "$results"
log() { echo "$*" | tee -a "$results"; }
vt=$PWD/build/bin/vramtrace
[ -x "$vt" ] || scripts/build.sh >/dev/null
log "date: $(date -u +%FT%TZ)"
log "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
fails=0
check() {  # check NAME -- CMD... ; then conditions via CHECKS array
  local name=$1; shift
  local dir; dir=$(mktemp -d)
  local t0=$SECONDS
  "$vt" run -o "$dir" -- "$@" > "$dir.log" 2>&1
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "${ALLOW_RC:-0}" != "$rc" ]; then
    log "FAIL $name: exit $rc: $(tail -3 "$dir.log" | tr '\n' ' ')"; fails=$((fails+1)); return
  fi
  python3 tests/gpu/check_trace.py "$vt" "$dir" "$name" "${CHECKS[@]}" | tee -a "$results" || fails=$((fails+1))
  # The lookup safety net on the real driver and runtime: which memory entry points escaped the
  # hooks (listed, for docs/gpu-validation.md), and a runtime no lookup of which reached us (FAIL).
  for t in "$dir"/*.trace; do
    [ -e "$t" ] || continue
    "$vt" info "$t" 2>/dev/null | python3 -c '
import json, sys
x = json.load(sys.stdin)["interception"]
gaps = ", ".join(g["symbol"] + " (" + g["category"] + ")" for g in x["unhooked"]) or "none"
libs = ", ".join(l["path"] + " (" + l["how"] + ")" for l in x.get("isolated_libraries", [])) or "none"
print(("FAIL" if x["cudart_unreached"] else "info") + " " + sys.argv[1] + ": lookups reached vramtrace: "
      + str(x["lookups_reached"]) + "; unhooked memory entry points: " + gaps + "; libraries out of reach: " + libs)
sys.exit(1 if x["cudart_unreached"] else 0)' "$name" | tee -a "$results"
    [ "${PIPESTATUS[1]}" = 0 ] || fails=$((fails+1))
  done
  log "  ($((SECONDS-t0)) s, $(ls "$dir" | wc -l) trace file(s))"
}

# Whether the real libcuda.so.1 has a version table: without one, dlvsym finds its functions and
# the dlvsym stub matters (docs/interception.md, "The three ways in"). Info only.
python3 - <<'PY' | tee -a "$results"
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
print(f"info libcuda-versions: {path}: version table {table}; "
      f"dlvsym(handle, cuMemAlloc_v2, any version) {'finds it' if found else 'finds nothing'}")
PY

# Raw CUDA, cudart static and shared: one event per allocation, the failure with free/total.
work=$(mktemp -d)
nvcc -O2 -cudart static tests/gpu/alloc_paths.cu -o "$work/alloc_static" &&
nvcc -O2 -cudart shared tests/gpu/alloc_paths.cu -o "$work/alloc_shared" || log "FAIL nvcc build"
for v in static shared; do
  CHECKS=("cuMemAlloc_v2==2" "cuMemAllocPitch_v2==1" "cuMemAllocManaged==1" "cuMemHostAlloc==1"
          "any:cuMemAllocAsync|cuMemAllocAsync_ptsz==1" "failed==1" "cuMemFree_v2==3")
  check "cudart-$v" "$work/alloc_$v"
done

# Rule 14 with the real NVML: the first process list follows the first context within the
# second the analyzer allows (the context's hook waits for it: how long, for docs/PERFORMANCE.md),
# and the peak's breakdown names the other processes (FAIL if no list came at all).
if [ -x "$work/alloc_shared" ]; then
  dir=$(mktemp -d)
  "$vt" run -o "$dir" -- "$work/alloc_shared" > "$dir.log" 2>&1
  python3 - "$vt" "$dir" <<'PY' | tee -a "$results"; [ "${PIPESTATUS[0]}" = 0 ] || fails=$((fails+1))
import glob, json, subprocess, sys
vt, d = sys.argv[1:3]
t = glob.glob(d + "/*.trace")[0]
recs = [json.loads(l) for l in subprocess.run([vt, "dump", "--meta", "--no-stacks", t], capture_output=True, text=True).stdout.splitlines() if l.startswith("{")]
ctx = [r["t_ns"] for r in recs if r.get("kind") == "code" and r.get("op", "").startswith(("cuDevicePrimaryCtxRetain", "cuCtxCreate"))]
lists = [r for r in recs if r.get("record") == "gpu processes"]
rep = json.loads(subprocess.run([vt, "report", t, "--format", "json"], capture_output=True, text=True).stdout)
fid = rep.get("peak", {}).get("fidelity", {})
ok = bool(ctx and lists)
gap = (lists[0]["t_ns"] - ctx[0]) / 1e6 if ok else -1
print(("PASS" if ok and 0 <= gap <= 1000 else "FAIL") + f" nvml-first-list: {len(lists)} list(s), the first {gap:.2f} ms after the first context; "
      f"peak: contexts {fid.get('contexts_bytes')} B, other processes {fid.get('other_processes_bytes')} B, unexplained {fid.get('unexplained_bytes')} B")
sys.exit(0 if ok and 0 <= gap <= 1000 else 1)
PY
fi

# Rule 15: the report's footprint of the default pool follows the driver's release at synchronize.
if nvcc -O2 tests/gpu/pool_release.cu -o "$work/pool_release" 2>>"$results"; then
  dir=$(mktemp -d)
  "$vt" run -o "$dir" -- "$work/pool_release" > "$dir.out" 2>&1
  python3 - "$vt" "$dir" "$dir.out" <<'PY' | tee -a "$results"; [ "${PIPESTATUS[0]}" = 0 ] || fails=$((fails+1))
import glob, json, subprocess, sys
vt, d, out = sys.argv[1:4]
fig = dict(l.split() for l in open(out) if l.count(" ") == 1 and l.split()[1].isdigit())
traces = glob.glob(d + "/*.trace")
rep = json.loads(subprocess.run([vt, "report", traces[0], "--format", "json"], capture_output=True, text=True).stdout) if traces else {}
pools = {p["pool"]: p["footprint_bytes"] for p in rep.get("fragmentation", {}).get("pools", [])}
want = int(fig.get("reserved_after_sync_threshold_max", -1))
got = max(pools.values()) if pools else -1
ok = want > 0 and got == want
print(("PASS" if ok else "FAIL") + f" pool-release: driver reserved {fig}, report footprints {pools}")
sys.exit(0 if ok else 1)
PY
else log "FAIL nvcc pool_release"; fails=$((fails+1)); fi

# The simulated driver's model against this driver (tests/programs/driver_figures dlopens the
# real libcuda.so.1): every figure the model assumes, and where it differs (info, for tests/fakecuda).
if [ -x build/tests/programs/driver_figures ]; then
  build/tests/programs/driver_figures --check > "$work/figures.txt" 2> "$work/figures.err"
  log "info driver model: $(tr '\n' ' ' < "$work/figures.txt")"
  [ -s "$work/figures.err" ] && log "info driver model differs: $(tr '\n' ' ' < "$work/figures.err")"
fi

# The lookup paths against the real driver: every hooked pointer handed out is ours.
for mode in dlsym procaddr procaddr-ptsz procaddr-v1; do
  if build/tests/programs/lookup_dynamic "$mode" --expect-hooked >/dev/null 2>&1; then :; fi
  out=$(LD_PRELOAD=$PWD/build/lib/libvramtrace.so VRAMTRACE_OUTPUT=$work build/tests/programs/lookup_dynamic "$mode" --expect-hooked 2>&1)
  rc=$?
  # exit 10/11 = the workload hit something the real driver refuses (own IPC handle); 3 = unhooked
  if [ $rc -eq 3 ]; then log "FAIL lookup-$mode: $out"; fails=$((fails+1)); else log "PASS lookup-$mode (workload exit $rc)"; fi
done

# Frameworks.
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  CHECKS=("cuMemAlloc_v2>=2" "cuMemHostAlloc>=1" "failed>=1")
  check torch-default python3 tests/gpu/frameworks.py torch
  CHECKS=("cuMemCreate>=1" "cuMemMap>=1" "cuMemAddressReserve>=1" "failed>=1")
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True check torch-expandable python3 tests/gpu/frameworks.py torch
  CHECKS=("any:cuMemAllocAsync|cuMemAllocAsync_ptsz|cuMemAllocFromPoolAsync|cuMemAllocFromPoolAsync_ptsz>=2" "failed>=1")
  PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync check torch-async python3 tests/gpu/frameworks.py torch
  # Attribution: the 3 GiB allocation is attributed to its line of the script, in every mode.
  for conf in "" "expandable_segments:True" "backend:cudaMallocAsync"; do
    dir=$(mktemp -d)
    PYTORCH_CUDA_ALLOC_CONF=$conf "$vt" run -o "$dir" -- python3 tests/gpu/torch_lines.py > "$dir.log" 2>&1
    want=$(grep -m1 '^EXPECT ' "$dir.log" | cut -d' ' -f2)
    if [ -n "$want" ] && python3 tests/gpu/check_lines.py "$vt" "$dir" "$want" | tee -a "$results" | grep -q PASS; then :;
    else log "FAIL torch-lines ${conf:-default}"; fails=$((fails+1)); fi
  done
  # PyTorch's block layer (issue 13; NOT RUN YET on a GPU: written without one): memory_stats() at
  # marks, the OOM verdicts and PyTorch's message figures, torch.profiler still recording memory,
  # in the three allocator modes; then the cost of a training step with and without vramtrace.
  for conf in "" "expandable_segments:True" "backend:cudaMallocAsync"; do
    for what in marks frag live profiler; do
      dir=$(mktemp -d)
      PYTORCH_CUDA_ALLOC_CONF=$conf "$vt" run -o "$dir" -- python3 tests/gpu/torch_blocks.py "$what" "$dir.json" > "$dir.log" 2>&1
      python3 tests/gpu/check_torch_blocks.py "$vt" "$dir" "$dir.json" "$conf" | tee -a "$results" | tail -1 | grep -q '^PASS' ||
        fails=$((fails+1))
    done
  done
  dir=$(mktemp -d)
  python3 tests/gpu/torch_blocks.py steps "$dir/plain.json" >/dev/null 2>&1
  "$vt" run -o "$dir" -- python3 tests/gpu/torch_blocks.py steps "$dir/traced.json" >/dev/null 2>&1
  python3 - "$dir/plain.json" "$dir/traced.json" <<'PY' | tee -a "$results"
import json, sys
a, b = (json.load(open(p))["ms_per_step"] for p in sys.argv[1:3])
print(("PASS" if b <= a * 1.02 else "FAIL") + f" torch-step-cost: {a:.3f} ms/step plain, {b:.3f} traced ({(b / a - 1) * 100:+.1f}%, target <= +2%)")
PY
else log "SKIP torch (not installed or no GPU)"; fi
if python3 -c "import cupy" 2>/dev/null; then
  CHECKS=("cuMemAlloc_v2>=1"); check cupy-default python3 tests/gpu/frameworks.py cupy
  CHECKS=("any:cuMemAllocAsync|cuMemAllocAsync_ptsz|cuMemAllocFromPoolAsync|cuMemAllocFromPoolAsync_ptsz>=1")
  check cupy-async python3 tests/gpu/frameworks.py cupy-async
else log "SKIP cupy"; fi
if python3 -c "import jax" 2>/dev/null; then
  CHECKS=("any:cuMemCreate|cuMemAlloc_v2>=1"); check jax python3 tests/gpu/frameworks.py jax
else log "SKIP jax"; fi

# SIGKILL mid-run: everything recorded before the kill is readable.
if python3 -c "import torch" 2>/dev/null; then
  dir=$(mktemp -d)
  "$vt" run -o "$dir" -- python3 -c "
import torch, os, signal
xs = [torch.empty(1 << 20, device='cuda') for _ in range(200)]
torch.cuda.synchronize(); os.kill(os.getpid(), signal.SIGKILL)" >/dev/null 2>&1
  n=$(for f in "$dir"/*; do "$vt" dump "$f" 2>/dev/null; done | grep -c cuMemAlloc)
  if [ "$n" -ge 1 ]; then log "PASS torch-sigkill ($n allocations read back)"; else log "FAIL torch-sigkill"; fails=$((fails+1)); fi
fi
# doctor and top against nvidia-smi: the same GPUs and memory figures (within 1%: they are read
# moments apart).
if "$vt" doctor --json > "$work/doctor.json" 2>/dev/null || [ -s "$work/doctor.json" ]; then
  smi=$(nvidia-smi --query-gpu=index,memory.total,memory.used --format=csv,noheader,nounits)
  if python3 - "$work/doctor.json" "$smi" <<'PY' | tee -a "$results" | grep -q '^PASS'; then :; else fails=$((fails+1)); fi
import json, sys
doc = json.load(open(sys.argv[1]))
text = json.dumps(doc)
rows = [r.split(",") for r in sys.argv[2].strip().splitlines()]
ok = True
for idx, total, used in rows:
    total_b = int(total) * 1024 * 1024
    if str(total_b)[:3] not in text:   # doctor reports bytes; compare the leading digits
        ok = False
        print(f"  GPU {idx}: nvidia-smi total {total} MiB not found in doctor --json")
print(("PASS" if ok else "FAIL") + f" doctor vs nvidia-smi ({len(rows)} GPUs)")
PY
else log "FAIL doctor --json produced nothing"; fails=$((fails+1)); fi
"$vt" top --once > "$work/top.txt" 2>&1 && grep -q "^GPU 0" "$work/top.txt" && log "PASS top --once lists GPU 0" || { log "FAIL top --once"; fails=$((fails+1)); }

# Issue 16's large-node scaling, on this machine's cores (the GPU machines have 16): report -j N of
# a 64-rank job against -j 1 (outputs checked identical by the script). A measurement for
# docs/PERFORMANCE.md ("Job directories"), not a pass or a failure. Needs build/bench carried.
if [ -x build/bench/gen_trace ]; then
  bench/run_job_bench.sh build 64 500000 1 2>&1 | sed 's/^/info job scaling: /' | tee -a "$results"
else
  log "info job scaling: not measured (build/bench/gen_trace not carried)"
fi

log "failures: $fails"
exit $((fails > 0))
