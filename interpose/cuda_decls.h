// The CUDA driver API as the hooks see it: cuda.h plus the exported names cuda.h does not
// declare in a normal build (the _ptsz variants and the 4-argument v1 cuGetProcAddress).
// Types only: nothing here is linked; every real function is found at run time.
#pragma once

#include <cuda.h>

// cuda.h maps these names to their _v2 exports; the older exports are distinct functions that
// the driver still hands out for older versions (cudart asks for some of them).
#undef cuGetProcAddress
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxRelease
#undef cuIpcOpenMemHandle

extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuDevicePrimaryCtxReset(CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);
}
