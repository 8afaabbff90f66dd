// A small training-like program for the demo, written against the driver API and loading
// libcuda.so.1 at run time, so it runs on a real GPU and on the simulated device alike:
// weights (cuMemAlloc), per-step activations (stream-ordered), a pinned staging buffer, one
// buffer leaked per step (a loss "kept with its graph"), and at the end a request that cannot
// fit. Exits 0 when the out-of-memory error came back as expected.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#undef cuGetProcAddress

typedef CUresult (*GetProc)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

#define FN(name, type) reinterpret_cast<type>(lookup(#name))

static GetProc g_get;
static void* lookup(const char* name) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult st;
  if (g_get(name, &p, 12000, 0, &st) != CUDA_SUCCESS || !p) {
    fprintf(stderr, "demo: the driver has no %s\n", name);
    exit(2);
  }
  return p;
}

int main() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "demo: cannot load libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  g_get = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  auto init = FN(cuInit, CUresult (*)(unsigned));
  auto device_get = FN(cuDeviceGet, CUresult (*)(CUdevice*, int));
  auto retain = FN(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext*, CUdevice));
  auto set_current = FN(cuCtxSetCurrent, CUresult (*)(CUcontext));
  auto stream_create = FN(cuStreamCreate, CUresult (*)(CUstream*, unsigned));
  auto sync = FN(cuStreamSynchronize, CUresult (*)(CUstream));
  auto mem_alloc = FN(cuMemAlloc, CUresult (*)(CUdeviceptr*, size_t));
  auto mem_free = FN(cuMemFree, CUresult (*)(CUdeviceptr));
  auto alloc_async = FN(cuMemAllocAsync, CUresult (*)(CUdeviceptr*, size_t, CUstream));
  auto free_async = FN(cuMemFreeAsync, CUresult (*)(CUdeviceptr, CUstream));
  auto host_alloc = FN(cuMemHostAlloc, CUresult (*)(void**, size_t, unsigned));
  auto free_host = FN(cuMemFreeHost, CUresult (*)(void*));
  auto mem_info = FN(cuMemGetInfo, CUresult (*)(size_t*, size_t*));

  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  if (init(0) || device_get(&dev, 0) || retain(&ctx, dev) || set_current(ctx) || stream_create(&s, 0)) {
    fprintf(stderr, "demo: no usable CUDA device\n");
    return 2;
  }
  size_t free_b = 0, total_b = 0;
  mem_info(&free_b, &total_b);

  CUdeviceptr weights[4];
  for (CUdeviceptr& w : weights) mem_alloc(&w, 256u << 20);  // 1 GiB of "weights"
  void* staging;
  host_alloc(&staging, 64u << 20, 0);
  CUdeviceptr kept[20];
  for (int step = 0; step < 20; ++step) {
    CUdeviceptr act[8];
    for (CUdeviceptr& a : act) alloc_async(&a, 32u << 20, s);  // activations
    mem_alloc(&kept[step], 8u << 20);                           // leaked every step
    for (CUdeviceptr a : act) free_async(a, s);
    sync(s);
  }
  CUdeviceptr too_big;
  CUresult r = mem_alloc(&too_big, total_b + (1ull << 30));  // more than the device has
  printf("demo: %zu MiB device; 20 steps; final request of %zu MiB -> CUresult %d\n", total_b >> 20,
         size_t((total_b + (1ull << 30)) >> 20), int(r));
  free_host(staging);
  for (CUdeviceptr w : weights) mem_free(w);
  return r == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}
