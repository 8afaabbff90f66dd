// Known call chains for the symbolization tests (built with -g -O2): an inlined function, a
// regular one, and a function in a library dlopen'ed after the first allocation. Prints the line
// of each allocating call so the test knows what to expect.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>

namespace demo {

__attribute__((always_inline)) inline CUresult middle_alloc(CUdeviceptr* p) {
  printf("middle_alloc %d\n", __LINE__ + 1);
  return cuMemAlloc(p, 1 << 20);
}

__attribute__((noinline)) CUresult outer_alloc(CUdeviceptr* p) {
  printf("outer_alloc %d\n", __LINE__ + 1);
  CUresult r = middle_alloc(p);
  asm volatile("" ::: "memory");  // keep this frame a real call, not a tail call
  return r;
}

}  // namespace demo

int main(int argc, char** argv) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 2;
  CUdeviceptr p;
  printf("main %d\n", __LINE__ + 1);
  if (demo::outer_alloc(&p)) return 3;
  void* lib = dlopen(argc > 1 ? argv[1] : "libstack_plugin.so", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 4;
  }
  auto plugin_alloc = reinterpret_cast<int (*)()>(dlsym(lib, "plugin_alloc"));
  return plugin_alloc() == 0 ? 0 : 5;
}
