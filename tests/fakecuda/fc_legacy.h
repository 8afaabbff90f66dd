// fc_legacy.h — declarations of the exported older-ABI variants that the simulator models by
// forwarding to the current implementation (cuda.h hides them behind macros such as
// cuCtxDestroy -> cuCtxDestroy_v2). Include it only where those names are defined
// (api_legacy.cpp): it #undefs the macros, so afterwards the plain names mean the v1 functions.
// Every other old variant is a NOT_SUPPORTED stub (stubs.cpp).
#pragma once

#include "fc_api.h"

#undef cuGetProcAddress
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuIpcOpenMemHandle
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuStreamDestroy
#undef cuMemHostRegister

// CUDA 11.3 ABI: no symbolStatus argument (defined in proc_table.cpp).
FC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
// Variants the CUDA 13 runtime itself asks for by version (cuDeviceGetUuid 9020,
// cuDevicePrimaryCtxRelease/Reset 7000, cuCtxCreate 3020, cuIpcOpenMemHandle 4010), and the
// other old variants whose ABI equals the current one.
FC_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
FC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
FC_API CUresult cuDevicePrimaryCtxReset(CUdevice dev);
FC_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
FC_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
FC_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev);
FC_API CUresult cuCtxDestroy(CUcontext ctx);
FC_API CUresult cuCtxPushCurrent(CUcontext ctx);
FC_API CUresult cuCtxPopCurrent(CUcontext *pctx);
FC_API CUresult cuStreamDestroy(CUstream hStream);
FC_API CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
FC_API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
