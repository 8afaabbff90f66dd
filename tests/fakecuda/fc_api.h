// fc_api.h — what every entry-point file of the simulated driver includes first: cuda.h in
// the mode the driver itself is built in, and the FC_API export marker.
//
// __CUDA_API_VERSION_INTERNAL makes cuda.h declare every exported variant under its own
// name (cuMemAlloc is the CUDA 2.0 one, cuMemAlloc_v2 the current one, cuMemAllocAsync_ptsz
// the per-thread-stream one) and leaves no renaming macro behind, so each definition in
// api_*.cpp is checked against the header's declaration of exactly that export.
// _ODR keeps the enums identical to what applications see (no *_MAX members).
#pragma once

#if defined(__cuda_cuda_h__) && !defined(__CUDA_API_VERSION_INTERNAL)
#error "fc_api.h must be included before cuda.h"
#endif
#define __CUDA_API_VERSION_INTERNAL 1
#define __CUDA_API_VERSION_INTERNAL_ODR 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include <type_traits>

// The library is built with -fvisibility=hidden; only the driver entry points are exported.
#define FC_API extern "C" __attribute__((visibility("default")))
