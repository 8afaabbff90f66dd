// The start the simulated-driver test programs share: cuInit, then device `ordinal`'s primary
// context retained and made current. `check` is the program's own (it names the program when a
// call fails and exits).
#pragma once

#include <cuda.h>

template <typename Check>
CUdevice make_primary_context_current(Check check, int ordinal = 0) {
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return dev;
}
