// Asks the driver for every entry point there is, the way cudart and cudaGetDriverEntryPoint
// callers do: dlsym(libcuda, "cuGetProcAddress_v2"), the "" probe, cuInit, the self-lookup of
// "cuGetProcAddress", then one lookup through it for every variant of the toolkit's PFN
// typedefs (base name, the variant's CUDA version, flags 2 for a per-thread-stream variant).
// Under VRAMTRACE_DEBUG_LOOKUPS this logs what a process is handed for each one
// (tests/e2e/lookup_gaps_test.cpp); then it allocates and frees 1 MiB so that a trace opens.
// Exit 0 when every lookup and the allocation succeeded, 1 otherwise.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>

typedef CUresult (*GetProcV2)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

namespace {
struct Variant {
  const char* base;
  int version;
  int per_thread;
};
const Variant kVariants[] = {
#define FC_ENTRY(base, version, per_thread, symbol, pfn, params) {#base, version, per_thread},
#include "entry_points.inc"
#include "entry_points_interop.inc"
#undef FC_ENTRY
};
}  // namespace

int main() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  auto first = reinterpret_cast<GetProcV2>(dlsym(lib, "cuGetProcAddress_v2"));
  auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(lib, "cuInit"));
  if (!first || !init) return 2;
  void* p = nullptr;
  CUdriverProcAddressQueryResult st;
  first("", &p, 0, 0, &st);  // cudart's probe; fails
  if (init(0) != CUDA_SUCCESS) return 2;
  void* self = nullptr;
  if (first("cuGetProcAddress", &self, 12000, 0, &st) != CUDA_SUCCESS || !self) return 2;
  auto get = reinterpret_cast<GetProcV2>(self);
  int failed = 0;
  for (const Variant& v : kVariants) {
    void* fn = nullptr;
    cuuint64_t flags = v.per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
    if (get(v.base, &fn, v.version, flags, &st) != CUDA_SUCCESS || !fn) {
      fprintf(stderr, "lookup failed: %s %d %llu\n", v.base, v.version, static_cast<unsigned long long>(flags));
      failed++;
    }
  }
  // One allocation, so that a trace opens and keeps what the lookups were handed (its lookup
  // records: interpose/entry/lookup_gaps.h).
  void *dev_get = nullptr, *retain = nullptr, *set_current = nullptr, *alloc = nullptr, *release = nullptr;
  get("cuDeviceGet", &dev_get, 12000, 0, &st);
  get("cuDevicePrimaryCtxRetain", &retain, 12000, 0, &st);
  get("cuCtxSetCurrent", &set_current, 12000, 0, &st);
  get("cuMemAlloc", &alloc, 12000, 0, &st);
  get("cuMemFree", &release, 12000, 0, &st);
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr d = 0;
  if (!dev_get || !retain || !set_current || !alloc || !release ||
      reinterpret_cast<CUresult (*)(CUdevice*, int)>(dev_get)(&dev, 0) != CUDA_SUCCESS ||
      reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(retain)(&ctx, dev) != CUDA_SUCCESS ||
      reinterpret_cast<CUresult (*)(CUcontext)>(set_current)(ctx) != CUDA_SUCCESS ||
      reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(alloc)(&d, 1 << 20) != CUDA_SUCCESS ||
      reinterpret_cast<CUresult (*)(CUdeviceptr)>(release)(d) != CUDA_SUCCESS) {
    fprintf(stderr, "the allocation after the sweep failed\n");
    failed++;
  }
  printf("%zu lookups, %d failed\n", sizeof kVariants / sizeof kVariants[0], failed);
  return failed ? 1 : 0;
}
