// api_memory.cpp — plain device memory: cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2,
// cuMemAllocManaged, cuMemGetInfo_v2, cuMemGetAddressRange_v2, cuPointerGetAttribute (the device
// ordinal only). Device allocations get synthetic addresses in the device's 2 MiB pages (page_heap.h) and count against the
// device; managed memory is a real lazy host mapping that counts nowhere (it is not resident
// until touched). cuMemAlloc and cuMemFree are "potentially unsafe" while streams capture.
#include "state.h"

#include <sys/mman.h>
#include <unistd.h>

using namespace fc;

namespace {

Bytes page_round(Bytes n) { return round_up(n, static_cast<Bytes>(sysconf(_SC_PAGESIZE))); }

CUresult alloc_device(State &s, CUcontext ctx, Bytes size, CUdeviceptr *dptr) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > (1ull << 60)) return CUDA_ERROR_OUT_OF_MEMORY;  // keeps the rounding exact
  const int dev = s.ctxs[ctx].device;
  Device &d = s.devices[dev];
  CUdeviceptr addr = d.heap.alloc(s.va, &d, round_up(size, kAllocRound));
  if (!addr) return CUDA_ERROR_OUT_OF_MEMORY;
  Alloc &a = s.allocs[addr];
  a.kind = Kind::Device;
  a.size = size;
  a.device = dev;
  a.ctx = ctx;
  *dptr = addr;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fc {

void free_plain_alloc(State &s, std::map<CUdeviceptr, Alloc>::iterator it) {
  Alloc &a = it->second;
  if (a.kind == Kind::Managed) {
    munmap(reinterpret_cast<void *>(it->first), page_round(a.size));
  } else {
    Device &d = s.devices[a.device];
    d.heap.free(s.va, &d, it->first);
  }
  s.allocs.erase(it);
}

void memory_release_ctx(State &s, CUcontext ctx) {
  for (auto it = s.allocs.begin(); it != s.allocs.end();) {
    auto next = std::next(it);
    if (it->second.ctx == ctx &&
        (it->second.kind == Kind::Device || it->second.kind == Kind::Managed))
      free_plain_alloc(s, it);
    it = next;
  }
}

CUresult free_any(State &s, std::map<CUdeviceptr, Alloc>::iterator it) {
  switch (it->second.kind) {
    case Kind::Device:
    case Kind::Managed: free_plain_alloc(s, it); return CUDA_SUCCESS;
    case Kind::PoolBlock: pool_return_block(s, it); return CUDA_SUCCESS;  // allowed, as on a GPU
    case Kind::PoolImport: pool_close_import(s, it); return CUDA_SUCCESS;
    case Kind::ExternalBuffer:  // "must be freed using cuMemFree"
      s.va.free(it->first, it->second.va_size);
      s.allocs.erase(it);
      return CUDA_SUCCESS;
    case Kind::IpcImport: return CUDA_ERROR_INVALID_VALUE;  // needs cuIpcCloseMemHandle
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace fc

FC_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  maybe_raise("cuMemAlloc_v2");
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  if (CUresult r = check_unsafe_call(s)) return r;
  return alloc_device(s, ctx, bytesize, dptr);
}

FC_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                   size_t Height, unsigned int ElementSizeBytes) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!dptr || !pPitch) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
    return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  if (CUresult r = check_unsafe_call(s)) return r;
  if (WidthInBytes == 0 || Height == 0 || WidthInBytes > (1ull << 40) || Height > (1ull << 40))
    return CUDA_ERROR_INVALID_VALUE;
  Bytes pitch = round_up(WidthInBytes, kAllocRound);  // rows start 512-byte aligned
  if (pitch > (1ull << 60) / Height) return CUDA_ERROR_OUT_OF_MEMORY;
  if (CUresult r = alloc_device(s, ctx, pitch * Height, dptr)) return r;
  *pPitch = pitch;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  if (CUresult r = check_unsafe_call(s)) return r;
  CUresult graph_result;
  if (graph_free_live(s, dptr, &graph_result)) return graph_result;
  auto it = s.allocs.find(dptr);
  if (it == s.allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  return free_any(s, it);
}

FC_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  // Real memory because programs touch managed buffers from the host; NORESERVE so a huge
  // allocation costs nothing until touched.
  void *p = mmap(nullptr, page_round(bytesize), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  CUdeviceptr addr = reinterpret_cast<CUdeviceptr>(p);
  Alloc &a = s.allocs[addr];
  a.kind = Kind::Managed;
  a.size = bytesize;
  a.device = s.ctxs[ctx].device;
  a.ctx = ctx;
  *dptr = addr;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  maybe_raise("cuMemGetInfo_v2");
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  vmm_reap(s);  // memory another process released last
  const Device &d = s.devices[s.ctxs[ctx].device];
  Bytes taken = d.used + d.foreign;
  *free = taken >= d.total ? 0 : d.total - taken;
  *total = d.total;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = current_ctx(s, &ctx)) return r;
  CUdeviceptr base = 0;
  Bytes size = 0;
  auto it = s.allocs.upper_bound(dptr);
  if (it != s.allocs.begin() && dptr < std::prev(it)->first + std::prev(it)->second.size) {
    base = std::prev(it)->first;
    size = std::prev(it)->second.size;
  } else if (graph_address_range(s, dptr, &base, &size)) {
  } else {
    // VMM: the answer is the single mapping containing dptr, not the whole reservation.
    auto r = s.reservations.upper_bound(dptr);
    if (r == s.reservations.begin()) return CUDA_ERROR_NOT_FOUND;
    const auto &maps = std::prev(r)->second.mappings;
    auto m = maps.upper_bound(dptr);
    if (m == maps.begin() || dptr >= std::prev(m)->first + std::prev(m)->second.size)
      return CUDA_ERROR_NOT_FOUND;
    base = std::prev(m)->first;
    size = std::prev(m)->second.size;
  }
  if (pbase) *pbase = base;
  if (psize) *psize = size;
  return CUDA_SUCCESS;
}

// Only CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL is modelled ("the device against which the memory was
// allocated"): an allocation's device (an IPC or pool import: the exporter's), a VMM mapping's
// physical memory's device. Other attributes answer CUDA_ERROR_NOT_SUPPORTED.
FC_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) return CUDA_ERROR_NOT_SUPPORTED;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  int device = -1;
  auto it = s.allocs.upper_bound(ptr);
  if (it != s.allocs.begin() && ptr < std::prev(it)->first + std::prev(it)->second.size) {
    device = std::prev(it)->second.device;
  } else if (const Mapping *m = mapping_at(s, ptr, nullptr); m && !m->multicast && s.phys.count(m->object)) {
    device = s.phys[m->object].device;
  }
  if (device < 0) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<int *>(data) = device;
  return CUDA_SUCCESS;
}
