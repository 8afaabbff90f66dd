/* A program built with a sanitizer (tests/CMakeLists.txt builds it with -fsanitize=thread and
 * -fsanitize=address): its runtime calls dlsym and dlvsym while it sets up its interceptors,
 * before they work, so libvramtrace's stubs must find glibc's functions without calling any.
 * Allocates 1 MiB through dlopen + dlsym; prints "ok" (tests/e2e/isolated_open_test.cpp). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) return 2;
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(cuda, "cuInit");
  CUresult (*get)(CUdevice*, int) = (CUresult(*)(CUdevice*, int))dlsym(cuda, "cuDeviceGet");
  CUresult (*retain)(CUcontext*, CUdevice) = (CUresult(*)(CUcontext*, CUdevice))dlsym(cuda, "cuDevicePrimaryCtxRetain");
  CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(cuda, "cuCtxSetCurrent");
  CUresult (*alloc)(CUdeviceptr*, size_t) = (CUresult(*)(CUdeviceptr*, size_t))dlsym(cuda, "cuMemAlloc_v2");
  if (!init || !get || !retain || !set || !alloc) return 2;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (init(0) || get(&dev, 0) || retain(&ctx, dev) || set(ctx) || alloc(&p, 1 << 20)) return 3;
  printf("ok\n");
  return 0;
}
