#!/usr/bin/env bash
# Kernel activity (CUPTI) on a real GPU, for a machine with an NVIDIA GPU and CUDA 13 (nvcc),
# optionally PyTorch, CuPy, compute-sanitizer and nsys. Checks, each a PASS/FAIL line:
#   - kernels, copies and NVTX ranges are recorded and land inside the run, after the
#     allocations they use (clock alignment), for a raw CUDA program;
#   - interception covers every allocation CUPTI reports (coverage 100%) for the raw program,
#     PyTorch (default and cudaMallocAsync allocators) and CuPy;
#   - torch.profiler still records CUDA kernels while vramtrace runs (vramtrace steps aside), and
#     the trace says when; once the profiler window closes vramtrace records again (resumed);
#   - --no-kernels, compute-sanitizer and nsys leave CUPTI to the tool (status "unavailable");
#   - MEASURE memory2-cost: ns per cudaMallocAsync/cudaFreeAsync pair bare, under vramtrace with
#     CUPTI's MEMORY2 kind on (default) and off (VRAMTRACE_CUPTI_MEMORY=0), and with no kernels:
#     the figure docs/PERFORMANCE.md ("CUPTI MEMORY2") waits for.
# Uses build/ (build/bin/vramtrace, build/lib/libvramtrace.so) or builds it. Writes a summary to
# ${OUT:-/tmp}/cupti-results.txt. Usage: tests/gpu/cupti_checks.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp}
results=$OUT/cupti-results.txt
: > "$results"
log() { echo "$*" | tee -a "$results"; }
vt=$PWD/build/bin/vramtrace
[ -x "$vt" ] || scripts/build.sh >/dev/null
log "date: $(date -u +%FT%TZ)"
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
fails=0
work=$(mktemp -d)

# expect NAME DIR CONDITION...: export the (single) trace in DIR to Perfetto JSON and check it.
expect() {
  local name=$1 dir=$2; shift 2
  local trace
  trace=$(ls "$dir"/vramtrace.* 2>/dev/null | grep -v '\.json$' | head -1)
  if [ -z "$trace" ]; then log "FAIL $name: no trace in $dir"; fails=$((fails+1)); return; fi
  if ! "$vt" export --perfetto "$dir/out.json" "$trace" 2>>"$dir/export.err"; then
    log "FAIL $name: export: $(tail -1 "$dir/export.err")"; fails=$((fails+1)); return
  fi
  python3 - "$dir/out.json" "$name" "$@" <<'PY' | tee -a "$results"
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
    elif c == "before_aside": ok = bool(kernels) and max(e["ts"] for e in kernels) < ka.get("stepped_aside_ts_us", -1)
    elif c.startswith("unavailable~="): ok = re.search(c[13:], ka.get("unavailable", "")) is not None
    else: ok = False
    if not ok: bad.append(c)
detail = "kernels=%d copies=%d nvtx=%d lost=%s coverage=%s" % (
    len(kernels), len(copies), len(nvtx), ka.get("lost_records"),
    "%d/%d" % (cov["matched"], cov["cupti_allocations"]) if cov else "-")
if cov and cov["missed"]: detail += " missed=%s" % json.dumps(cov["missed"][:3])
if ka.get("unavailable"): detail += " unavailable=%s" % ka["unavailable"]
print(("PASS " if not bad else "FAIL ") + name + ": " + detail + ("" if not bad else "  failed: " + " ".join(bad)))
sys.exit(1 if bad else 0)
PY
  [ "${PIPESTATUS[0]}" -eq 0 ] || fails=$((fails+1))
}

# run NAME -- CMD...: vramtrace run into a fresh directory; prints the directory.
run() {
  local name=$1; shift; [ "$1" = "--" ] && shift
  local dir; dir=$(mktemp -d "$work/$name.XXXX")
  "$vt" run -o "$dir" -- "$@" > "$dir/run.log" 2>&1
  local rc=$?
  # (stdout is the directory: notes go to stderr and the results file)
  [ $rc -eq 0 ] || echo "note $name: exit $rc: $(tail -2 "$dir/run.log" | tr '\n' ' ')" | tee -a "$results" >&2
  echo "$dir"
}

# ---- a raw CUDA program: kernels, copies, NVTX, pools ----
cat > "$work/kernels.cu" <<'CU'
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
__global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void scale(float* a, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= s;
}
int main() {
  const int n = 1 << 24;
  const size_t bytes = n * sizeof(float);  // 64 MiB: drawn as an allocation instant
  float *a, *b, *c, *h;
  nvtxRangePushA("setup");
  cudaMalloc(&a, bytes); cudaMalloc(&b, bytes); cudaMalloc(&c, bytes);
  cudaMallocHost(&h, bytes);
  cudaMemset(a, 0, bytes);
  cudaMemcpy(b, h, bytes, cudaMemcpyHostToDevice);
  nvtxRangePop();
  for (int step = 0; step < 20; ++step) {
    nvtxRangePushA("step");
    vec_add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    scale<<<(n + 255) / 256, 256>>>(c, 2.0f, n);
    float* t;
    cudaMallocAsync(&t, bytes, 0);
    cudaMemsetAsync(t, 0, bytes, 0);
    cudaFreeAsync(t, 0);
    nvtxRangePop();
  }
  cudaDeviceSynchronize();
  cudaFree(a); cudaFree(b); cudaFree(c); cudaFreeHost(h);
  return 0;
}
CU
if nvcc -O2 -o "$work/kernels" "$work/kernels.cu" 2>"$work/nvcc.log" &&
   nvcc -O2 -cudart shared -o "$work/kernels_shared" "$work/kernels.cu" 2>>"$work/nvcc.log"; then
  d=$(run raw-static -- "$work/kernels")
  expect raw-static "$d" recorded "kernels>=40" "kernel~=vec_add" "kernel~=scale" "nvtx~=^step$" copies in_run after_alloc coverage
  d=$(run raw-shared -- "$work/kernels_shared")
  expect raw-shared "$d" recorded "kernels>=40" "kernel~=vec_add" "nvtx~=^step$" coverage
  d=$(mktemp -d "$work/nokernels.XXXX"); "$vt" run --no-kernels -o "$d" -- "$work/kernels" > "$d/run.log" 2>&1
  expect raw-no-kernels "$d" "unavailable~=disabled"
  if command -v compute-sanitizer >/dev/null; then
    d=$(mktemp -d "$work/sanitizer.XXXX")
    compute-sanitizer --target-processes all --print-limit 5 "$vt" run -o "$d" -- "$work/kernels" > "$d/run.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then log "FAIL compute-sanitizer: exit $rc: $(tail -3 "$d/run.log" | tr '\n' ' ')"; fails=$((fails+1)); fi
    expect compute-sanitizer "$d" "unavailable~=other_tool|other_client"
  else log "SKIP compute-sanitizer (not installed)"; fi
  if command -v nsys >/dev/null; then
    d=$(mktemp -d "$work/nsys.XXXX")
    nsys profile -t cuda,nvtx -o "$d/report" "$vt" run -o "$d" -- "$work/kernels" > "$d/run.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then log "FAIL nsys: exit $rc: $(tail -3 "$d/run.log" | tr '\n' ' ')"; fails=$((fails+1)); fi
    expect nsys "$d" "unavailable~=other_tool|other_client"
  else log "SKIP nsys (not installed)"; fi
else
  log "FAIL nvcc build: $(tail -3 "$work/nvcc.log" | tr '\n' ' ')"; fails=$((fails+1))
fi

# ---- MEMORY2's cost: a stream-ordered allocation pair, with and without ----
cat > "$work/async_pairs.cu" <<'CU'
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
int main() {
  cudaStream_t s;
  cudaStreamCreate(&s);
  void* p = nullptr;
  for (int i = 0; i < 1000; ++i) { cudaMallocAsync(&p, 1 << 20, s); cudaFreeAsync(p, s); }  // warm the pool
  cudaStreamSynchronize(s);
  const int n = 200000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) { cudaMallocAsync(&p, 1 << 20, s); cudaFreeAsync(p, s); }
  cudaStreamSynchronize(s);
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
  printf("ns_per_pair %.1f\n", ns);
  return 0;
}
CU
if nvcc -O2 -o "$work/async_pairs" "$work/async_pairs.cu" 2>>"$work/nvcc.log"; then
  pair() { grep -o 'ns_per_pair [0-9.]*' | tail -1 | cut -d' ' -f2; }
  m_bare=$("$work/async_pairs" | pair)
  d=$(mktemp -d "$work/m2on.XXXX"); m_on=$("$vt" run -o "$d" -- "$work/async_pairs" 2>/dev/null | pair)
  d=$(mktemp -d "$work/m2off.XXXX"); m_off=$(VRAMTRACE_CUPTI_MEMORY=0 "$vt" run -o "$d" -- "$work/async_pairs" 2>/dev/null | pair)
  d=$(mktemp -d "$work/m2nok.XXXX"); m_nok=$("$vt" run --no-kernels -o "$d" -- "$work/async_pairs" 2>/dev/null | pair)
  log "MEASURE memory2-cost: ns per cudaMallocAsync+cudaFreeAsync pair: bare ${m_bare:-?}, vramtrace with MEMORY2 ${m_on:-?}, VRAMTRACE_CUPTI_MEMORY=0 ${m_off:-?}, --no-kernels ${m_nok:-?}"
else log "FAIL nvcc build (async_pairs): $(tail -3 "$work/nvcc.log" | tr '\n' ' ')"; fails=$((fails+1)); fi

# ---- PyTorch ----
cat > "$work/torch_work.py" <<'PY'
import sys, torch
x = torch.randn(4096, 4096, device="cuda")
for i in range(10):
    torch.cuda.nvtx.range_push("step")
    y = x @ x
    z = torch.relu(y).sum()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
if len(sys.argv) > 1 and sys.argv[1] == "profiler":
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(5):
            y = x @ x
        torch.cuda.synchronize()
    n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    print("profiler_cuda_events", n)
    # After the window: vramtrace should record again (if Kineto let CUPTI go).
    import time
    time.sleep(0.3)
    for i in range(10):
        y = x @ x
    torch.cuda.synchronize()
    time.sleep(0.5)
    sys.exit(0 if n > 0 else 7)
PY
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  d=$(run torch-default -- python3 "$work/torch_work.py")
  expect torch-default "$d" recorded "kernels>=10" "nvtx~=^step$" in_run coverage
  d=$(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync run torch-async -- python3 "$work/torch_work.py")
  expect torch-async "$d" recorded "kernels>=10" coverage
  # torch.profiler without vramtrace, then with it: both must see CUDA kernels.
  bare=$(python3 "$work/torch_work.py" profiler 2>&1 | grep profiler_cuda_events)
  d=$(run torch-profiler -- python3 "$work/torch_work.py" profiler)
  with=$(grep profiler_cuda_events "$d/run.log")
  if [ -n "$with" ] && [ "${with##* }" -gt 0 ]; then log "PASS torch-profiler-kernels: bare '$bare', under vramtrace '$with'"
  else log "FAIL torch-profiler-kernels: bare '$bare', under vramtrace '$with' $(tail -3 "$d/run.log" | tr '\n' ' ')"; fails=$((fails+1)); fi
  expect torch-profiler-trace "$d" recorded stepped_aside
  # The window closed: did Kineto let go (cuptiUnsubscribe / cuptiFinalize) and vramtrace resume?
  t=$(ls "$d"/vramtrace.* 2>/dev/null | grep -v '\.json$' | head -1)
  st=$("$vt" report --format json "$t" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernels"]["status"])' 2>&1)
  case "$st" in
    *"except while another client held it"*) log "PASS torch-profiler-resumed: $st";;
    *) log "FAIL torch-profiler-resumed: $st (Kineto may keep its subscription: TEARDOWN_CUPTI)"; fails=$((fails+1));;
  esac
else log "SKIP torch (not installed or no GPU)"; fi

# ---- CuPy ----
if python3 -c "import cupy" 2>/dev/null; then
  d=$(run cupy -- python3 -c "import cupy as cp; a = cp.random.rand(1 << 24, dtype=cp.float32); b = a * 2; print(float(b.sum()))")
  expect cupy "$d" recorded "kernels>=1" coverage
  d=$(run cupy-async -- python3 -c "import cupy as cp; cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc); a = cp.ones(1 << 24); print(float((a * 3).sum()))")
  expect cupy-async "$d" recorded "kernels>=1" coverage
else log "SKIP cupy (not installed)"; fi

log "failures: $fails"
exit $((fails > 0))
