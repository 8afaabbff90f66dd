// api_host.cpp — page-locked host memory: cuMemHostAlloc, cuMemAllocHost_v2,
// cuMemFreeHost, cuMemHostRegister_v2, cuMemHostUnregister, cuMemHostGetDevicePointer_v2.
// Pinned buffers are real, page-aligned host memory (programs write into them) and do not
// count against any device. Under UVA the device pointer equals the host pointer.
#include "state.h"

#include <unistd.h>

#include <cstdlib>

using namespace fc;

namespace {

constexpr unsigned kHostAllocFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

CUresult host_alloc(void **pp, size_t bytesize, unsigned flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pp || (flags & ~kHostAllocFlags)) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  const Bytes page = static_cast<Bytes>(sysconf(_SC_PAGESIZE));
  if (bytesize > (1ull << 60)) return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = aligned_alloc(page, round_up(bytesize, page));
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  s.host_allocs[p] = HostBlock{bytesize, ctx};
  *pp = p;
  return CUDA_SUCCESS;
}

// The pinned block (ours or registered) containing p, if any.
bool find_pinned(State &s, const void *p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto h = s.host_allocs.upper_bound(const_cast<void *>(p));
  if (h != s.host_allocs.begin()) {
    auto prev = std::prev(h);
    if (a < reinterpret_cast<uintptr_t>(prev->first) + prev->second.size) return true;
  }
  auto r = s.host_registered.upper_bound(a);
  return r != s.host_registered.begin() && a < std::prev(r)->first + std::prev(r)->second.size;
}

}  // namespace

namespace fc {

void host_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.host_allocs.begin(); it != s.host_allocs.end();) {
    if (it->second.ctx == ctx) {
      ::free(it->first);
      it = s.host_allocs.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = s.host_registered.begin(); it != s.host_registered.end();)
    it = it->second.ctx == ctx ? s.host_registered.erase(it) : std::next(it);
}

}  // namespace fc

FC_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  return host_alloc(pp, bytesize, Flags);
}

FC_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) { return host_alloc(pp, bytesize, 0); }

FC_API CUresult cuMemFreeHost(void *p) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  auto it = s.host_allocs.find(p);
  if (it == s.host_allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  ::free(p);
  s.host_allocs.erase(it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!p || bytesize == 0 || (Flags & ~kHostRegisterFlags)) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a + bytesize < a) return CUDA_ERROR_INVALID_VALUE;
  // Any overlap with an existing registration is refused, as by the real driver.
  auto next = s.host_registered.lower_bound(a);
  if (next != s.host_registered.end() && next->first < a + bytesize)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (next != s.host_registered.begin() && std::prev(next)->first + std::prev(next)->second.size > a)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  s.host_registered[a] = HostBlock{bytesize, ctx};
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemHostUnregister(void *p) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  if (!s.host_registered.erase(reinterpret_cast<uintptr_t>(p)))
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pdptr || !p || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  if (!find_pinned(s, p)) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
