// api_vmm.cpp — the virtual memory management API: cuMemGetAllocationGranularity,
// cuMemCreate/cuMemRelease (physical memory and its handles), cuMemRetainAllocationHandle,
// cuMemGetAllocationPropertiesFromHandle, cuMemExportToShareableHandle /
// cuMemImportFromShareableHandle (POSIX fd handles, across processes: shareable.h),
// cuMemAddressReserve/cuMemAddressFree (VA ranges), cuMemMap/cuMemUnmap (physical memory or
// multicast objects, api_multicast.cpp), cuMemSetAccess.
//
// Model (cuMemRelease's documentation): physical memory with a device location counts against
// that device once, however many handles, imports and mappings refer to it. It is freed when
// every handle value is released (cuMemCreate and each import give one reference, each
// cuMemRetainAllocationHandle one more), every mapping and multicast binding is gone, every
// shareable fd this process exported is closed, and no other process holds an import of it.
// An import in another process refers to the exporter's memory: it counts for the exporter's
// device, not the importer's.
#include "shareable.h"
#include "state.h"

#include <unistd.h>

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

// The reservation wholly containing [ptr, ptr+size), or end().
std::map<CUdeviceptr, Reservation>::iterator containing(State &s, CUdeviceptr ptr, Bytes size) {
  auto it = s.reservations.upper_bound(ptr);
  if (it == s.reservations.begin()) return s.reservations.end();
  --it;
  if (ptr + size < ptr || ptr + size > it->first + it->second.size) return s.reservations.end();
  return it;
}

CUmemGenericAllocationHandle add_handle(State &s, uint64_t object, bool multicast) {
  CUmemGenericAllocationHandle h = new_handle(s, 4);
  s.handles[h] = Handle{object, multicast, 1};
  if (multicast) s.multicasts[object].handles++;
  else s.phys[object].handles++;
  return h;
}

// A physical allocation of another process, already imported here, or 0.
uint64_t find_remote(State &s, const SharedObject *o) {
  for (auto &[id, p] : s.phys)
    if (p.remote && p.shared && p.shared->pid == o->pid && p.shared->id == o->id) return id;
  return 0;
}

}  // namespace

namespace fc {

// Frees physical memory once nothing holds it any more (see the header comment).
void phys_maybe_free(State &s, uint64_t id) {
  auto it = s.phys.find(id);
  if (it == s.phys.end()) return;
  Phys &p = it->second;
  if (p.handles > 0 || p.mappings > 0 || p.binds > 0) return;
  if (p.remote) {
    p.shared->importers.fetch_sub(1);
  } else {
    if (shared_exports_open(p.exports)) return;               // a shareable fd is still open here
    if (p.shared && p.shared->importers.load() > 0) return;   // another process still holds it
    if (p.charged) uncharge(s.devices[p.device], p.size);
  }
  shared_unmap(p.shared);
  if (p.shared_fd >= 0) close(p.shared_fd);
  s.phys.erase(it);
}

void vmm_reap(State &s) {
  std::vector<uint64_t> idle;
  for (auto &[id, p] : s.phys)
    if (p.handles == 0 && p.mappings == 0 && p.binds == 0) idle.push_back(id);
  for (uint64_t id : idle) phys_maybe_free(s, id);
  multicast_reap(s);
}

void drop_mapping(State &s, const Mapping &m) {
  if (m.multicast) {
    auto it = s.multicasts.find(m.object);
    if (it == s.multicasts.end()) return;
    it->second.mappings--;
    multicast_maybe_free(s, m.object);
    return;
  }
  auto it = s.phys.find(m.object);
  if (it == s.phys.end()) return;
  it->second.mappings--;
  phys_maybe_free(s, m.object);
}

// The mapping containing `ptr`, or null.
const Mapping *mapping_at(State &s, CUdeviceptr ptr, CUdeviceptr *base) {
  auto r = s.reservations.upper_bound(ptr);
  if (r == s.reservations.begin()) return nullptr;
  const auto &maps = std::prev(r)->second.mappings;
  auto m = maps.upper_bound(ptr);
  if (m == maps.begin() || ptr >= std::prev(m)->first + std::prev(m)->second.size) return nullptr;
  if (base) *base = std::prev(m)->first;
  return &std::prev(m)->second;
}

void vmm_release_ctx(State &s, CUcontext ctx) {
  for (auto r = s.reservations.begin(); r != s.reservations.end();) {
    if (r->second.ctx != ctx) {
      ++r;
      continue;
    }
    std::vector<Mapping> maps;
    for (auto &[addr, m] : r->second.mappings) maps.push_back(m);
    s.va.free(r->first, r->second.size);
    r = s.reservations.erase(r);
    for (const Mapping &m : maps) drop_mapping(s, m);
  }
  // The context's memory goes away, whoever still refers to it in this process.
  for (auto h = s.phys.begin(); h != s.phys.end();) {
    if (h->second.ctx != ctx || h->second.remote) {
      ++h;
      continue;
    }
    const uint64_t id = h->first;
    for (auto &[base, r] : s.reservations)
      for (auto m = r.mappings.begin(); m != r.mappings.end();)
        m = !m->second.multicast && m->second.object == id ? r.mappings.erase(m) : std::next(m);
    for (auto &[mid, mc] : s.multicasts)
      for (auto b = mc.binds.begin(); b != mc.binds.end();) b = b->second.phys == id ? mc.binds.erase(b) : std::next(b);
    for (auto hv = s.handles.begin(); hv != s.handles.end();)
      hv = !hv->second.multicast && hv->second.object == id ? s.handles.erase(hv) : std::next(hv);
    if (h->second.charged) uncharge(s.devices[h->second.device], h->second.size);
    shared_unmap(h->second.shared);
    if (h->second.shared_fd >= 0) close(h->second.shared_fd);
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

FC_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  int device;
  if (!handle || flags != 0 || prop_device(s, prop, &device)) return CUDA_ERROR_INVALID_VALUE;
  if (prop->requestedHandleTypes & ~unsigned(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_NOT_SUPPORTED;  // fabric (no IMEX channel here) and Windows handles
  if (size == 0 || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  vmm_reap(s);
  if (device >= 0)
    if (CUresult r = charge(s.devices[device], size)) return r;
  CUcontext ctx = nullptr;
  current_ctx(s, &ctx);  // VMM needs no context; tag it with the current one if any
  const uint64_t id = s.next_id++;
  Phys &p = s.phys[id];
  p.size = size;
  p.device = device;
  p.charged = device >= 0;
  p.ctx = ctx;
  p.prop = *prop;
  p.prop.win32HandleMetaData = nullptr;
  *handle = add_handle(s, id, false);
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.handles.find(handle);
  if (it == s.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.refs > 0) return CUDA_SUCCESS;  // a retained reference is still out
  const Handle h = it->second;
  s.handles.erase(it);
  if (h.multicast) {
    s.multicasts[h.object].handles--;
    multicast_maybe_free(s, h.object);
  } else {
    s.phys[h.object].handles--;
    phys_maybe_free(s, h.object);  // still mapped: lives on until the last cuMemUnmap
  }
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  const Mapping *m = mapping_at(s, reinterpret_cast<CUdeviceptr>(addr), nullptr);
  if (!m) return CUDA_ERROR_INVALID_VALUE;  // "If the address requested is not mapped, the function will fail"
  // "The same handle value used to map the memory", even if that value was released since.
  auto it = s.handles.find(m->handle);
  if (it != s.handles.end()) {
    it->second.refs++;
  } else {
    s.handles[m->handle] = Handle{m->object, m->multicast, 1};
    if (m->multicast) s.multicasts[m->object].handles++;
    else s.phys[m->object].handles++;
  }
  *handle = m->handle;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.handles.find(handle);
  if (!prop || it == s.handles.end() || it->second.multicast) return CUDA_ERROR_INVALID_VALUE;
  *prop = s.phys[it->second.object].prop;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                             CUmemAllocationHandleType handleType, unsigned long long flags) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto it = s.handles.find(handle);
  if (!shareableHandle || flags != 0 || it == s.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  if (handleType == CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  if (it->second.multicast) return multicast_export(s, it->second.object, static_cast<int *>(shareableHandle));
  Phys &p = s.phys[it->second.object];
  if (!(p.prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
  if (p.remote) return CUDA_ERROR_NOT_PERMITTED;  // re-exporting an import is not simulated
  if (!p.shared) {
    p.shared = shared_create(1, &p.shared_fd);
    if (!p.shared) return CUDA_ERROR_OUT_OF_MEMORY;
    p.shared->id = it->second.object;
    p.shared->size = p.size;
    p.shared->device = p.device;
    p.shared->prop = p.prop;
  }
  int fd = shared_export(p.shared_fd, &p.exports);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *static_cast<int *>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                               CUmemAllocationHandleType shHandleType) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if (shHandleType == CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));  // the fd is passed by value
  if (SharedObject *mc = shared_open(fd, 2)) return multicast_import(s, mc, handle);
  SharedObject *o = shared_open(fd, 1);
  if (!o) return CUDA_ERROR_INVALID_VALUE;
  if (o->pid == getpid()) {  // our own export: the same memory, one more handle
    const uint64_t id = o->id;
    shared_unmap(o);
    if (!s.phys.count(id) || s.phys[id].remote) return CUDA_ERROR_INVALID_VALUE;
    *handle = add_handle(s, id, false);
    return CUDA_SUCCESS;
  }
  uint64_t id = find_remote(s, o);
  if (id) {
    shared_unmap(o);
  } else {
    id = s.next_id++;
    Phys &p = s.phys[id];
    p.size = o->size;
    p.device = o->device < static_cast<int>(s.devices.size()) ? o->device : -1;
    p.prop = o->prop;
    p.remote = true;
    p.shared = o;
    current_ctx(s, &p.ctx);
    o->importers.fetch_add(1);
  }
  *handle = add_handle(s, id, false);
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
  std::unique_lock<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (flags != 0 || size == 0 || !aligned(ptr) || !aligned(size) || !aligned(offset))
    return CUDA_ERROR_INVALID_VALUE;
  auto h = s.handles.find(handle);
  if (h == s.handles.end()) return CUDA_ERROR_INVALID_VALUE;
  const Handle hv = h->second;
  const Bytes object_size = hv.multicast ? s.multicasts[hv.object].size : s.phys[hv.object].size;
  if (offset > object_size || size > object_size - offset) return CUDA_ERROR_INVALID_VALUE;
  // "A call to cuMemMap will block until all devices have been added" (multicast).
  if (hv.multicast)
    if (CUresult r = multicast_wait_team(s, lock, hv.object)) return r;
  auto r = containing(s, ptr, size);
  if (r == s.reservations.end()) return CUDA_ERROR_INVALID_VALUE;
  auto &maps = r->second.mappings;
  auto next = maps.lower_bound(ptr);
  if (next != maps.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (next != maps.begin() && std::prev(next)->first + std::prev(next)->second.size > ptr)
    return CUDA_ERROR_INVALID_VALUE;
  if (!s.handles.count(handle)) return CUDA_ERROR_INVALID_VALUE;  // released while we waited
  maps[ptr] = Mapping{size, offset, handle, hv.object, hv.multicast};
  if (hv.multicast) s.multicasts[hv.object].mappings++;
  else s.phys[hv.object].mappings++;
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
  std::vector<Mapping> dropped;
  for (auto m = first; m != last;) {
    dropped.push_back(m->second);
    m = maps.erase(m);
  }
  for (const Mapping &m : dropped) drop_mapping(s, m);
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
