/* A partial driver: libcuda.so.1 with only the few functions a minimal program calls, each passed
 * to the simulated driver (loaded privately by its path). A compatibility or trimmed libcuda may
 * lack what vramtrace asks the driver for on its own (cuCtxGetDevice, cuDeviceGetName...): the
 * traced program must run as it does without vramtrace (issue 38: it crashed at its first
 * allocation). build/lib/fakecuda-partial/libcuda.so.1. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

static void* real(const char* name) {
  static void* lib;
  if (!lib) lib = dlopen(VT_FAKECUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  void* f = lib ? dlsym(lib, name) : NULL;
  if (!f) abort();
  return f;
}

#define FORWARD(name, params, args)                                  \
  __attribute__((visibility("default"))) int name params {           \
    static int (*f) params;                                          \
    if (!f) f = (int (*) params)real(#name);                         \
    return f args;                                                   \
  }

FORWARD(cuInit, (unsigned flags), (flags))
FORWARD(cuDeviceGet, (int* dev, int ordinal), (dev, ordinal))
FORWARD(cuDevicePrimaryCtxRetain, (void** ctx, int dev), (ctx, dev))
FORWARD(cuCtxSetCurrent, (void* ctx), (ctx))
FORWARD(cuCtxGetCurrent, (void** ctx), (ctx))
FORWARD(cuMemAlloc_v2, (unsigned long long* p, size_t n), (p, n))
FORWARD(cuMemFree_v2, (unsigned long long p), (p))
