// Prints which library unwinds the C++ exceptions of a library opened with RTLD_LOCAL after an
// allocation was traced with its stack, then throws one. Traced, it must be libgcc_s, as untraced:
// libunwind.so.8 exports the same _Unwind_* names, and when libvramtrace.so linked it, its copy sat
// in the global scope ahead of libgcc_s (interpose/stacks/unwinder_library.h).
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 3;
  if (cuMemAlloc(&p, 1 << 20)) return 4;  // a stack is captured: the unwinder has run
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 5;
  const char* (*unwinder)(void) = (const char* (*)(void))dlsym(lib, "thrower_unwinder");
  int (*throw_one)(int) = (int (*)(int))dlsym(lib, "thrower_throw");
  if (!unwinder || !throw_one) return 6;
  printf("unwinder %s\ncaught %d\n", unwinder(), throw_one(7));
  cuMemFree(p);
  return 0;
}
