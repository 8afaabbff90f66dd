// api_vmm.cpp — the virtual memory management API: cuMemGetAllocationGranularity,
// cuMemCreate/cuMemRelease (physical handles), cuMemAddressReserve/cuMemAddressFree (VA
// ranges), cuMemMap/cuMemUnmap, cuMemSetAccess. Physical memory with a device location
// counts against that device; it is freed once released AND no longer mapped.
#include "state.h"

using namespace fc;

namespace {

bool aligned(uint64_t v) { return v % kGranularity == 0; }

CUresult location_device(const State &s, const CUmemLocation &loc, int *device) {
  switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (check_device(s, loc.id)) return CUDA_ERROR_INVALID_VALUE;
      *device = loc.id;
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: *device = -1; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult prop_device(const State &s, const CUmemAllocationProp *prop, int *device) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  return location_device(s, prop->location, device);
}

// Frees physical memory once nothing holds it any more.
void maybe_free(State &s, std::map<CUmemGenericAllocationHandle, PhysHandle>::iterator it) {
  if (!it->second.released || it->second.mappings > 0) return;
  if (it->second.device >= 0) uncharge(s.devices[it->second.device], it->second.size);
  s.phys.erase(it);
}

void drop_mapping(State &s, const Mapping &m) {
  auto it = s.phys.find(m.handle);
  if (it == s.phys.end()) return;
  it->second.mappings--;
  maybe_free(s, it);
}

// The reservation wholly containing [ptr, ptr+size), or end().
std::map<CUdeviceptr, Reservation>::iterator containing(State &s, CUdeviceptr ptr, Bytes size) {
  auto it = s.reservations.upper_bound(ptr);
  if (it == s.reservations.begin()) return s.reservations.end();
  --it;
  if (ptr + size < ptr || ptr + size > it->first + it->second.size) return s.reservations.end();
  return it;
}

}  // namespace

namespace fc {

void vmm_release_ctx(State &s, CUcontext ctx) {
  for (auto r = s.reservations.begin(); r != s.reservations.end();) {
    if (r->second.ctx != ctx) {
      ++r;
      continue;
    }
    for (auto &[addr, m] : r->second.mappings) drop_mapping(s, m);
    s.va.free(r->first, r->second.size);
    r = s.reservations.erase(r);
  }
  for (auto h = s.phys.begin(); h != s.phys.end();) {
    if (h->second.ctx != ctx) {
      ++h;
      continue;
    }
    // The memory goes away, so do mappings of it inside other contexts' reservations.
    for (auto &[base, r] : s.reservations)
      for (auto m = r.mappings.begin(); m != r.mappings.end();)
        m = m->second.handle == h->first ? r.mappings.erase(m) : std::next(m);
    if (h->second.device >= 0) uncharge(s.devices[h->second.device], h->second.size);
    h = s.phys.erase(h);
  }
}

}  // namespace fc

FC_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  int device;
  if (!granularity || prop_device(s, prop, &device)) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  int device;
  if (!handle || flags != 0 || prop_device(s, prop, &device)) return CUDA_ERROR_INVALID_VALUE;
  if (size == 0 || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  if (device >= 0)
    if (CUresult r = charge(s.devices[device], size)) return r;
  CUcontext ctx = nullptr;
  current_ctx(s, &ctx);  // VMM needs no context; tag it with the current one if any
  CUmemGenericAllocationHandle h = new_handle(s, 4);
  PhysHandle &p = s.phys[h];
  p.size = size;
  p.device = device;
  p.ctx = ctx;
  *handle = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.phys.find(handle);
  if (it == s.phys.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  it->second.released = true;
  maybe_free(s, it);  // still mapped: lives on until the last cuMemUnmap
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                    unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!ptr || flags != 0 || size == 0 || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment & (alignment - 1)) return CUDA_ERROR_INVALID_VALUE;
  if (alignment < kGranularity) alignment = kGranularity;
  CUdeviceptr base = 0;
  if (addr && addr % alignment == 0) base = s.va.alloc_at(addr, size);  // a hint, honoured if free
  if (!base) base = s.va.alloc(size, alignment);
  if (!base) return CUDA_ERROR_OUT_OF_MEMORY;
  CUcontext ctx = nullptr;
  current_ctx(s, &ctx);
  Reservation &r = s.reservations[base];
  r.size = size;
  r.ctx = ctx;
  *ptr = base;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.reservations.find(ptr);
  if (it == s.reservations.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
  if (!it->second.mappings.empty()) return CUDA_ERROR_INVALID_VALUE;  // unmap first
  s.va.free(ptr, size);
  s.reservations.erase(it);
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                         unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (flags != 0 || size == 0 || !aligned(ptr) || !aligned(size) || !aligned(offset))
    return CUDA_ERROR_INVALID_VALUE;
  auto h = s.phys.find(handle);
  if (h == s.phys.end() || h->second.released) return CUDA_ERROR_INVALID_VALUE;
  if (offset > h->second.size || size > h->second.size - offset) return CUDA_ERROR_INVALID_VALUE;
  auto r = containing(s, ptr, size);
  if (r == s.reservations.end()) return CUDA_ERROR_INVALID_VALUE;
  auto &maps = r->second.mappings;
  auto next = maps.lower_bound(ptr);
  if (next != maps.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (next != maps.begin() && std::prev(next)->first + std::prev(next)->second.size > ptr)
    return CUDA_ERROR_INVALID_VALUE;
  maps[ptr] = Mapping{size, offset, handle};
  h->second.mappings++;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  auto r = containing(s, ptr, size);
  if (r == s.reservations.end()) return CUDA_ERROR_INVALID_VALUE;
  auto &maps = r->second.mappings;
  // Whole mappings only: nothing may straddle either end of the range.
  auto first = maps.lower_bound(ptr);
  if (first != maps.begin() && std::prev(first)->first + std::prev(first)->second.size > ptr)
    return CUDA_ERROR_INVALID_VALUE;
  auto last = maps.lower_bound(ptr + size);
  if (first == last) return CUDA_ERROR_INVALID_VALUE;
  if (std::prev(last)->first + std::prev(last)->second.size > ptr + size) return CUDA_ERROR_INVALID_VALUE;
  for (auto m = first; m != last;) {
    drop_mapping(s, m->second);
    m = maps.erase(m);
  }
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    int device;
    if (location_device(s, desc[i].location, &device)) return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
  }
  auto r = containing(s, ptr, size);
  if (r == s.reservations.end()) return CUDA_ERROR_INVALID_VALUE;
  // Every byte of the range must be mapped.
  const auto &maps = r->second.mappings;
  CUdeviceptr at = ptr;
  auto m = maps.upper_bound(ptr);
  if (m == maps.begin()) return CUDA_ERROR_INVALID_VALUE;
  for (--m; at < ptr + size; ++m) {
    if (m == maps.end() || m->first > at || m->first + m->second.size <= at) return CUDA_ERROR_INVALID_VALUE;
    at = m->first + m->second.size;
  }
  return CUDA_SUCCESS;
}
