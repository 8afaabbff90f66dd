// The CUPTI client inside a library of its own, loaded RTLD_LOCAL with its own libcupti (Kineto
// inside libtorch_cuda.so, which Python dlopens RTLD_LOCAL): its libcupti is not in the global
// scope. libcupti_local_client.so links the fake libcupti (build/tests/cupti/fake); vramtrace is
// told to load another copy of it (VRAMTRACE_CUPTI_LIBRARY). Usage: cupti_local_client LIB
// Prints "key=value" lines, then vramtrace's copy's call log after "ours:" and the client's
// copy's after "log:".
#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr a = 0, b = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuMemAlloc(&a, 1 << 20) != CUDA_SUCCESS)
    return 2;
  const char* ours_path = getenv("VRAMTRACE_CUPTI_LIBRARY");
  void* ours = nullptr;
  for (int i = 0; i < 600 && !ours; ++i) {  // vramtrace's helper loads its copy
    ours = ours_path ? dlopen(ours_path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
    if (!ours) usleep(5000);
  }
  auto ours_subscribed = ours ? reinterpret_cast<int (*)()>(dlsym(ours, "fakecupti_subscribed")) : nullptr;
  for (int i = 0; i < 600 && ours_subscribed && !ours_subscribed(); ++i) usleep(5000);
  printf("vramtrace_subscribed=%d\n", ours_subscribed ? ours_subscribed() : -1);
  usleep(250 * 1000);
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  auto session = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "client_session")) : nullptr;
  int rc = session ? session() : 3;
  if (cuMemAlloc(&b, 2 << 20) != CUDA_SUCCESS) return 2;
  cuMemFree(b);
  cuMemFree(a);
  auto ours_log = ours ? reinterpret_cast<const char* (*)()>(dlsym(ours, "fakecupti_log")) : nullptr;
  printf("ours:\n%s", ours_log ? ours_log() : "");
  auto their_log = lib ? reinterpret_cast<const char* (*)()>(dlsym(lib, "client_log")) : nullptr;
  printf("log:\n%s", their_log ? their_log() : "");
  fflush(stdout);
  return rc;
}
