// api_legacy.cpp — exported older-ABI variants. Where the old ABI matches the current one
// (or is a subset of it) the variant forwards to the current implementation; the CUDA 13
// runtime asks for several of them by version, so they must resolve like on a real driver.
// The v1 cuMemAlloc only exists so that tests can check that cuGetProcAddress("cuMemAlloc",
// version < 3020) returns the v1 pointer: a 32-bit pointer cannot hold a simulated address.
#include "fc_legacy.h"

FC_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

FC_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

FC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

FC_API CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

FC_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

FC_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);  // execution affinity is not simulated
}

FC_API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}
