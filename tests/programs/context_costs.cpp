// What contexts and code cost, on the simulated driver, linked with -lcuda (tests/e2e/
// context_test.cpp runs it under libvramtrace.so and checks the report's "fidelity" figures
// against the ones printed here, each the change of cuMemGetInfo's free memory the program itself
// saw). Two contexts (the first with nothing current, the second with the first current), a
// module, a library loaded lazily by cuKernelGetFunction, two allocations, a limit raised at the
// peak; then the module, library and second context go and an allocation fails (the OOM shows
// what is left). Also cuMemGetMemPool / cuMemSetMemPool on the host location and a stream-ordered
// allocation from that host pool (pinned host memory, not device memory).
// `context_costs vdpau`: VDPAU interop contexts instead (cudaVDPAU.h, declared here: its header
// needs VDPAU's). A created context, then cuVDPAUCtxCreate_v2 with 16 MiB allocated in it and
// the CUDA 3.1 cuVDPAUCtxCreate at the peak; both destroyed (the 16 MiB with the first), then an
// allocation fails.
// `context_costs modules N`: N module loads before the first allocation (modules_main).
// Prints "name value" lines (bytes).
#include <cuda.h>
#include <stdint.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "context_costs: %s failed: %d\n", what, int(r));
    exit(1);
  }
}

size_t free_now() {
  size_t f = 0, t = 0;
  check(cuMemGetInfo(&f, &t), "cuMemGetInfo");
  return f;
}
size_t total() {
  size_t f = 0, t = 0;
  check(cuMemGetInfo(&f, &t), "cuMemGetInfo");
  return t;
}

constexpr size_t MiB = 1 << 20;
const char kImage[] = "opaque to the simulator";

}  // namespace

// cudaVDPAU.h (VdpDevice is a uint32_t, VdpGetProcAddress a function of VDPAU's).
typedef int VdpStatus;
typedef VdpStatus VdpGetProcAddress(uint32_t device, uint32_t function_id, void** function_pointer);
extern "C" CUresult cuVDPAUCtxCreate_v2(CUcontext* pCtx, unsigned int flags, CUdevice device, uint32_t vdpDevice,
                                        VdpGetProcAddress* vdpGetProcAddress);
extern "C" CUresult cuVDPAUCtxCreate(CUcontext* pCtx, unsigned int flags, CUdevice device, uint32_t vdpDevice,
                                     VdpGetProcAddress* vdpGetProcAddress);

namespace {

// What a VDPAU application would pass (the simulated driver never calls it).
VdpStatus vdp_get_proc_address(uint32_t, uint32_t, void** fn) {
  *fn = nullptr;
  return 1;
}

int vdpau_main() {
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext c1, v2, v1;
  check(cuCtxCreate(&c1, nullptr, 0, dev), "cuCtxCreate");
  const size_t first_ctx = total() - free_now();
  CUdeviceptr a;
  check(cuMemAlloc(&a, 32 * MiB), "cuMemAlloc");
  size_t f0 = free_now();
  check(cuVDPAUCtxCreate_v2(&v2, 0, dev, 1, vdp_get_proc_address), "cuVDPAUCtxCreate_v2");
  const size_t vdpau_v2 = f0 - free_now();
  CUdeviceptr b;
  check(cuMemAlloc(&b, 16 * MiB), "cuMemAlloc (in the VDPAU context)");
  f0 = free_now();
  check(cuVDPAUCtxCreate(&v1, 0, dev, 1, vdp_get_proc_address), "cuVDPAUCtxCreate");
  const size_t vdpau_v1 = f0 - free_now();
  const size_t used_at_peak = total() - free_now();
  printf("first_context %zu\nvdpau_v2 %zu\nvdpau_v1 %zu\nused_at_peak %zu\ntracked_at_peak %zu\n", first_ctx,
         vdpau_v2, vdpau_v1, used_at_peak, 48 * MiB);
  check(cuCtxDestroy(v1), "cuCtxDestroy (VDPAU, 3.1)");
  check(cuCtxDestroy(v2), "cuCtxDestroy (VDPAU)");  // b goes with it
  check(cuCtxSetCurrent(c1), "cuCtxSetCurrent");
  CUdeviceptr huge;
  if (cuMemAlloc(&huge, size_t(1) << 40) != CUDA_ERROR_OUT_OF_MEMORY) return 1;
  printf("used_at_oom %zu\nteardown_bytes %zu\n", total() - free_now(), 16 * MiB);
  check(cuMemFree(a), "cuMemFree");
  check(cuCtxDestroy(c1), "cuCtxDestroy");
  return 0;
}

}  // namespace

// `context_costs modules N`: a context and N module loads before the first allocation (the
// recorder holds these until the trace opens), then one allocation; prints what they cost.
int modules_main(int n) {
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext c;
  check(cuCtxCreate(&c, nullptr, 0, dev), "cuCtxCreate");
  const size_t f0 = free_now();
  for (int i = 0; i < n; ++i) {
    CUmodule m;
    check(cuModuleLoadData(&m, kImage), "cuModuleLoadData");
  }
  printf("modules %zu\n", f0 - free_now());
  CUdeviceptr a;
  check(cuMemAlloc(&a, 32 * MiB), "cuMemAlloc");
  return 0;
}

int main(int argc, char** argv) {
  check(cuInit(0), "cuInit");
  if (argc > 1 && strcmp(argv[1], "vdpau") == 0) return vdpau_main();
  if (argc > 2 && strcmp(argv[1], "modules") == 0) return modules_main(atoi(argv[2]));
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext c1, c2;
  check(cuCtxCreate(&c1, nullptr, 0, dev), "cuCtxCreate (first)");
  const size_t first_ctx = total() - free_now();
  CUdeviceptr a;
  check(cuMemAlloc(&a, 32 * MiB), "cuMemAlloc");
  size_t f0 = free_now();
  check(cuCtxCreate(&c2, nullptr, 0, dev), "cuCtxCreate (second)");
  const size_t second_ctx = f0 - free_now();

  f0 = free_now();
  CUmodule m;
  check(cuModuleLoadData(&m, kImage), "cuModuleLoadData");
  const size_t module = f0 - free_now();
  CUlibrary lib;
  check(cuLibraryLoadData(&lib, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData");
  CUkernel k;
  check(cuLibraryGetKernel(&k, lib, "kernel"), "cuLibraryGetKernel");
  f0 = free_now();
  CUfunction fn;
  check(cuKernelGetFunction(&fn, k), "cuKernelGetFunction");
  check(cuKernelGetFunction(&fn, k), "cuKernelGetFunction (again)");
  const size_t lazy = f0 - free_now();

  // A host pool: its allocations are pinned host memory, not the device's.
  CUmemLocation host;
  memset(&host, 0, sizeof host);
  host.type = CU_MEM_LOCATION_TYPE_HOST;
  CUmemoryPool hp;
  check(cuMemGetMemPool(&hp, &host, CU_MEM_ALLOCATION_TYPE_PINNED), "cuMemGetMemPool (host)");
  check(cuMemSetMemPool(&host, CU_MEM_ALLOCATION_TYPE_PINNED, hp), "cuMemSetMemPool (host)");
  cuuint64_t threshold = 0;
  check(cuMemPoolSetAttribute(hp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), "cuMemPoolSetAttribute");
  CUdeviceptr h;
  check(cuMemAllocFromPoolAsync(&h, 8 * MiB, hp, nullptr), "cuMemAllocFromPoolAsync (host pool)");

  CUdeviceptr b;
  check(cuMemAlloc(&b, 64 * MiB), "cuMemAlloc");
  f0 = free_now();
  check(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 72 * MiB), "cuCtxSetLimit");
  const size_t limit = f0 - free_now();
  const size_t used_at_peak = total() - free_now();

  printf("first_context %zu\nsecond_context %zu\nmodule %zu\nlazy %zu\nlimit %zu\nused_at_peak %zu\n", first_ctx,
         second_ctx, module, lazy, limit, used_at_peak);
  printf("tracked_at_peak %zu\n", 96 * MiB);

  check(cuMemFreeAsync(h, nullptr), "cuMemFreeAsync");
  check(cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  check(cuModuleUnload(m), "cuModuleUnload");
  check(cuLibraryUnload(lib), "cuLibraryUnload");
  check(cuCtxDestroy(c2), "cuCtxDestroy (second)");  // b and the limit go with it
  check(cuCtxSetCurrent(c1), "cuCtxSetCurrent");
  CUdeviceptr huge;
  CUresult r = cuMemAlloc(&huge, size_t(1) << 40);
  if (r != CUDA_ERROR_OUT_OF_MEMORY) {
    fprintf(stderr, "context_costs: a 1 TiB cuMemAlloc returned %d\n", int(r));
    return 1;
  }
  printf("used_at_oom %zu\n", total() - free_now());
  check(cuMemFree(a), "cuMemFree");
  check(cuCtxDestroy(c1), "cuCtxDestroy (first)");
  return 0;
}
