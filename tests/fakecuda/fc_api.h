// fc_api.h — what every entry-point file of the simulated driver includes: cuda.h, the
// FC_API export marker, and declarations for exported names cuda.h does not declare in
// a normal build (the _ptsz variants), each checked against cudaTypedefs.h.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <type_traits>

// The library is built with -fvisibility=hidden; only the driver entry points are exported.
#define FC_API extern "C" __attribute__((visibility("default")))

// Per-thread-default-stream exports. cuda.h only declares them when the application
// defines CUDA_API_PER_THREAD_DEFAULT_STREAM, so declare them here with the signature of
// the base function and prove it equals the PFN typedef the real driver is built against.
FC_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
FC_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
FC_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream);
FC_API CUresult cuStreamSynchronize_ptsz(CUstream hStream);

static_assert(std::is_same_v<decltype(&cuMemAllocAsync_ptsz), PFN_cuMemAllocAsync_v11020_ptsz>);
static_assert(std::is_same_v<decltype(&cuMemFreeAsync_ptsz), PFN_cuMemFreeAsync_v11020_ptsz>);
static_assert(std::is_same_v<decltype(&cuMemAllocFromPoolAsync_ptsz),
                             PFN_cuMemAllocFromPoolAsync_v11020_ptsz>);
static_assert(std::is_same_v<decltype(&cuStreamSynchronize_ptsz), PFN_cuStreamSynchronize_v7000_ptsz>);
