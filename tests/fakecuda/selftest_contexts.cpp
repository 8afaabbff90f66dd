// selftest_contexts.cpp — what contexts and code cost in cuMemGetInfo: primary contexts (the
// first retain creates one), created and green contexts, the limits that reserve memory, and
// modules and libraries (eager and lazy loading). Runs in child processes, since the cost is
// configured once per process (FAKECUDA_CONTEXT_BYTES, FAKECUDA_MODULE_BYTES,
// CUDA_MODULE_LOADING).
#include "selftest.h"

#include <cstring>

namespace selftest {
namespace {

constexpr size_t kCtx = 100 * MiB, kModule = 4 * MiB, kTotal2 = 2 * GiB;

size_t free_now() {
  size_t f = 0, t = 0;
  OK(cuMemGetInfo_v2(&f, &t));
  CHECK(t == kTotal2);
  return f;
}

const unsigned char kImage[16] = {0x7f, 'E', 'L', 'F'};  // opaque to the simulator

}  // namespace

// Child "contexts <lazy|eager>".
int contexts_child(const char *mode) {
  const bool eager = strcmp(mode, "eager") == 0;
  OK(cuInit(0));
  // A created context makes cuMemGetInfo possible before any primary context exists.
  CUcontext probe = nullptr;
  OK(cuCtxCreate(&probe, nullptr, 0, 0));
  const size_t start = free_now();
  CHECK(start == kTotal2 - kCtx);  // the probe itself

  // Primary context: the first retain creates (and charges) it; the last release frees it.
  CUcontext primary = nullptr, again = nullptr;
  OK(cuDevicePrimaryCtxRetain(&primary, 0));
  CHECK(free_now() == start - kCtx);
  OK(cuDevicePrimaryCtxRetain(&again, 0));
  CHECK(again == primary && free_now() == start - kCtx);
  OK(cuDevicePrimaryCtxRelease(0));
  CHECK(free_now() == start - kCtx);
  OK(cuDevicePrimaryCtxRelease(0));
  CHECK(free_now() == start);
  OK(cuDevicePrimaryCtxRetain(&primary, 0));
  OK(cuDevicePrimaryCtxReset(0));  // a reset destroys it too
  CHECK(free_now() == start);
  CUcontext other = nullptr;
  OK(cuDevicePrimaryCtxRetain(&other, 1));  // another device's context costs that device
  CHECK(free_now() == start);
  OK(cuDevicePrimaryCtxRelease(1));

  // Created contexts, every ABI variant.
  CUcontext c2 = nullptr;
  OK(cuCtxCreate(&c2, nullptr, 0, 0));
  CHECK(free_now() == start - kCtx);  // (c2 is current now; same device)
  auto create_v2 = reinterpret_cast<PFN_cuCtxCreate_v3020>(proc("cuCtxCreate", 3020, 0));
  CUcontext c3 = nullptr;
  if (create_v2) OK(create_v2(&c3, 0, 0));
  CHECK(free_now() == start - 2 * kCtx);
  OK(cuCtxDestroy(c3));
  OK(cuCtxDestroy(c2));
  OK(cuCtxSetCurrent(probe));
  CHECK(free_now() == start);

  // VDPAU contexts (api_interop.cpp) are created contexts: both ABI variants, made current.
  using VdpauCreate = CUresult (*)(CUcontext *, unsigned, CUdevice, uint32_t, void *);
  auto vdpau_v2 = reinterpret_cast<VdpauCreate>(proc("cuVDPAUCtxCreate", 3020, 0));
  auto vdpau_v1 = reinterpret_cast<VdpauCreate>(proc("cuVDPAUCtxCreate", 3010, 0));
  void *vdp_proc = reinterpret_cast<void *>(&free_now);  // never called
  CUcontext v1 = nullptr, v2 = nullptr, cur = nullptr;
  if (vdpau_v2 && vdpau_v1) {
    CHECK_RC(vdpau_v2(&v2, 0, 0, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
    CHECK_RC(vdpau_v2(&v2, 0, 0, 0xffffffffu, vdp_proc), CUDA_ERROR_INVALID_VALUE);  // VDP_INVALID_HANDLE
    CHECK(free_now() == start);
    OK(vdpau_v2(&v2, 0, 0, 1, vdp_proc));
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == v2 && free_now() == start - kCtx);
    OK(vdpau_v1(&v1, 0, 0, 1, vdp_proc));
    CHECK(free_now() == start - 2 * kCtx);
    OK(cuCtxDestroy(v1));
    OK(cuCtxDestroy(v2));
  }
  OK(cuCtxSetCurrent(probe));
  CHECK(free_now() == start);

  // Green contexts cost what a context costs, and their memory goes with them.
  CUdevResource sm;
  OK(cuDeviceGetDevResource(0, &sm, CU_DEV_RESOURCE_TYPE_SM));
  CHECK(sm.sm.smCount == 132);
  CUdevResourceDesc desc = nullptr;
  OK(cuDevResourceGenerateDesc(&desc, &sm, 1));
  CUgreenCtx green = nullptr;
  OK(cuGreenCtxCreate(&green, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
  CHECK(free_now() == start - kCtx);
  CUcontext gctx = nullptr;
  OK(cuCtxFromGreenCtx(&gctx, green));
  OK(cuCtxPushCurrent(gctx));
  CUdeviceptr p = 0;
  OK(cuMemAlloc(&p, 10 * MiB));
  CHECK(free_now() == start - kCtx - 10 * MiB);
  CHECK_RC(cuCtxDestroy(gctx), CUDA_ERROR_INVALID_CONTEXT);  // cuGreenCtxDestroy is the way
  OK(cuCtxPopCurrent(nullptr));
  OK(cuGreenCtxDestroy(green));
  CHECK(free_now() == start);

  // Limits that reserve memory: local memory for every resident thread, the malloc heap.
  size_t v = 0;
  OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
  CHECK(v == 1024);
  OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048));
  CHECK(free_now() == start - 264 * MiB);  // 132 SMs x 2048 threads x 1 KiB more
  OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
  CHECK(v == 2048);
  OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 72 * MiB));
  CHECK(free_now() == start - 264 * MiB - 64 * MiB);
  OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024));
  OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8 * MiB));
  CHECK(free_now() == start);
  CHECK_RC(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1ull << 41), CUDA_ERROR_INVALID_VALUE);
  CHECK_RC(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 64 * 1024), CUDA_ERROR_OUT_OF_MEMORY);  // 16.5 GiB
  CHECK(free_now() == start);

  // Modules cost their context's device until unloaded.
  CUmodule mod = nullptr;
  OK(cuModuleLoadData(&mod, kImage));
  CHECK(free_now() == start - kModule);
  CUfunction fn = nullptr;
  OK(cuModuleGetFunction(&fn, mod, "kernel"));
  OK(cuModuleUnload(mod));
  CHECK(free_now() == start);
  CHECK_RC(cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE);
  CHECK_RC(cuModuleLoad(&mod, "/nonexistent/kernels.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
  OK(cuModuleLoad(&mod, "/proc/self/exe"));
  CHECK(free_now() == start - kModule);
  OK(cuCtxCreate(&c2, nullptr, 0, 0));
  OK(cuModuleLoadData(&mod, kImage));
  CHECK(free_now() == start - 2 * kModule - kCtx);
  OK(cuCtxDestroy(c2));  // its module goes with it
  OK(cuCtxSetCurrent(probe));
  CHECK(free_now() == start - kModule);

  // Libraries: lazily loaded on first need in a context (the default), or at once (EAGER).
  CUlibrary lib = nullptr;
  OK(cuLibraryLoadData(&lib, kImage, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CHECK(free_now() == start - kModule - (eager ? kModule : 0));
  CUkernel k = nullptr;
  OK(cuLibraryGetKernel(&k, lib, "kernel"));
  CHECK(free_now() == start - kModule - (eager ? kModule : 0));  // a kernel handle loads nothing
  OK(cuKernelGetFunction(&fn, k));
  CHECK(free_now() == start - 2 * kModule);
  CUmodule lm = nullptr;
  OK(cuLibraryGetModule(&lm, lib));  // already loaded here
  CHECK(free_now() == start - 2 * kModule);
  CHECK_RC(cuModuleUnload(lm), CUDA_ERROR_INVALID_HANDLE);  // the library's: cuLibraryUnload
  OK(cuLibraryUnload(lib));
  CHECK(free_now() == start - kModule);
  CHECK_RC(cuLibraryLoadFromFile(&lib, "/nonexistent.fatbin", nullptr, nullptr, 0, nullptr, nullptr, 0),
           CUDA_ERROR_FILE_NOT_FOUND);

  // No room for a context: creating one fails and changes nothing.
  CUdeviceptr big = 0;
  OK(cuMemAlloc(&big, free_now() - 50 * MiB));
  CHECK_RC(cuCtxCreate(&c2, nullptr, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_RC(cuDevicePrimaryCtxRetain(&primary, 0), CUDA_ERROR_OUT_OF_MEMORY);
  unsigned flags = 0;
  int active = 1;
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  CHECK(active == 0);
  CHECK(free_now() == 50 * MiB);
  OK(cuMemFree(big));
  OK(cuCtxDestroy(probe));
  return g_failures > 0 ? 1 : 0;
}

void test_context_costs() {
  const std::vector<std::string> env = {"FAKECUDA_CONTEXT_BYTES=100MiB", "FAKECUDA_MODULE_BYTES=4MiB",
                                        "FAKECUDA_TOTAL_BYTES=2GiB", "FAKECUDA_FOREIGN_BYTES=0", "FAKECUDA_LOG="};
  for (const char *mode : {"lazy", "eager"}) {
    std::vector<std::string> e = env;
    e.push_back(std::string("CUDA_MODULE_LOADING=") + (strcmp(mode, "eager") == 0 ? "EAGER" : "LAZY"));
    int rc = run_child({"contexts", mode}, e);
    if (rc != 0) {
      fprintf(stderr, "FAIL context costs (%s loading): child exited %d\n", mode, rc);
      g_failures++;
    }
  }
}

}  // namespace selftest
