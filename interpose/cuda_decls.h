// The CUDA driver API as the hooks see it: cuda.h plus the exported names cuda.h does not
// declare in a normal build (the _ptsz variants and the 4-argument v1 cuGetProcAddress).
// Types only: nothing here is linked; every real function is found at run time.
#pragma once

#include <cuda.h>

// cuda.h maps the name to cuGetProcAddress_v2; the v1 export is a distinct function.
#undef cuGetProcAddress

extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
}
