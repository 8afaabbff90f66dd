// fc_legacy.h — declarations of the exported older-ABI variants that cuda.h hides behind
// macros (cuMemAlloc -> cuMemAlloc_v2, cuGetProcAddress -> cuGetProcAddress_v2, ...).
// Include it only where those names must be referenced (api_legacy.cpp, proc_table.cpp):
// it #undefs the macros, so afterwards the plain names mean the v1 functions.
#pragma once

#include "fc_api.h"

#undef cuMemAlloc
#undef cuGetProcAddress
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuIpcOpenMemHandle

// cuda.h only defines the 32-bit device pointer for the driver's own build (same
// definition; repeating an identical typedef is harmless).
typedef unsigned int CUdeviceptr_v1;

// CUDA 2.0 ABI: 32-bit size and device pointer (cudaTypedefs.h: PFN_cuMemAlloc_v2000,
// only visible to the driver's own build, hence the local typedef).
FC_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize);
// CUDA 11.3 ABI: no symbolStatus argument.
FC_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
// Variants the CUDA 13 runtime itself asks for by version (cuDeviceGetUuid 9020,
// cuDevicePrimaryCtxRelease/Reset 7000, cuCtxCreate 3020, cuIpcOpenMemHandle 4010), plus
// cuCtxCreate_v3 so that no version maps to a wrong ABI.
FC_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
FC_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
FC_API CUresult cuDevicePrimaryCtxReset(CUdevice dev);
FC_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
FC_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                               unsigned int flags, CUdevice dev);
FC_API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);

// The driver-build-only PFN typedefs of cudaTypedefs.h, restated.
namespace fc {
typedef CUresult (*PFN_cuMemAlloc_v2000_local)(CUdeviceptr_v1 *dptr, unsigned int bytesize);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease_v7000_local)(CUdevice_v1 dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxReset_v7000_local)(CUdevice_v1 dev);
typedef CUresult (*PFN_cuIpcOpenMemHandle_v4010_local)(CUdeviceptr_v2 *pdptr, CUipcMemHandle_v1 handle,
                                                         unsigned int Flags);
}  // namespace fc
static_assert(std::is_same_v<decltype(&cuMemAlloc), fc::PFN_cuMemAlloc_v2000_local>);
static_assert(std::is_same_v<decltype(&cuGetProcAddress), PFN_cuGetProcAddress_v11030>);
static_assert(std::is_same_v<decltype(&cuDeviceGetUuid), PFN_cuDeviceGetUuid_v9020>);
static_assert(std::is_same_v<decltype(&cuDevicePrimaryCtxRelease), fc::PFN_cuDevicePrimaryCtxRelease_v7000_local>);
static_assert(std::is_same_v<decltype(&cuDevicePrimaryCtxReset), fc::PFN_cuDevicePrimaryCtxReset_v7000_local>);
static_assert(std::is_same_v<decltype(&cuCtxCreate_v2), PFN_cuCtxCreate_v3020>);
static_assert(std::is_same_v<decltype(&cuCtxCreate_v3), PFN_cuCtxCreate_v11040>);
static_assert(std::is_same_v<decltype(&cuIpcOpenMemHandle), fc::PFN_cuIpcOpenMemHandle_v4010_local>);
