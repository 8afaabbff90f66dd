/* A plugin that reaches the driver both ways a library does: a linked cuMemAlloc (-lcuda) and
 * dlopen + dlsym of the driver. Opened with RTLD_DEEPBIND, both bind inside its own dependencies
 * (libcuda, libc), past the preloaded libvramtrace: tests/e2e/isolated_open_test.cpp. */
#include <cuda.h>
#include <dlfcn.h>

int plugin_alloc_linked(size_t bytes) {
  CUdeviceptr p;
  return (int)cuMemAlloc(&p, bytes);
}

int plugin_alloc_dlsym(size_t bytes) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return -1;
  CUresult (*alloc)(CUdeviceptr*, size_t) = (CUresult(*)(CUdeviceptr*, size_t))dlsym(lib, "cuMemAlloc_v2");
  CUdeviceptr p;
  int r = alloc ? (int)alloc(&p, bytes) : -2;
  dlclose(lib);
  return r;
}

/* Everything from here: the driver's start, a context and an allocation (a program whose only
 * CUDA calls are the plugin's, in another namespace). */
int plugin_init_and_alloc(size_t bytes) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
    return -1;
  return (int)cuMemAlloc(&p, bytes);
}
