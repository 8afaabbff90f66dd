// api_multicast.cpp — multicast objects (NVLink SHARP / NVLS): cuMulticastGetGranularity,
// cuMulticastCreate, cuMulticastAddDevice, cuMulticastBindMem, cuMulticastBindAddr,
// cuMulticastUnbind; the object is a CUmemGenericAllocationHandle that cuMemMap maps,
// cuMemRelease releases and cuMemExportToShareableHandle shares (api_vmm.cpp).
//
// Model (cuda.h's documentation): a multicast object holds no memory of its own — it is an
// address on the switch through which the bound memory of each team device is reached (NCCL
// issue #1306: the MC buffer is "only a multi-cast handle" over the UC buffers). Its memory cost
// is the memory bound to it, which stays allocated while bound even after its handle is
// released and unmapped. Binding and mapping wait until the whole team has been added (counted
// across processes through the shared handle). Minimum granularity 2 MiB; the recommended one
// is 512 MiB, and callers that round their buffers to it (NCCL, TransformerEngine) pay for that
// rounding in cuMemCreate.
#include "shareable.h"
#include "state.h"

#include <time.h>
#include <unistd.h>

using namespace fc;

namespace {

Multicast *find_mc(State &s, CUmemGenericAllocationHandle h, uint64_t *id) {
  auto it = s.handles.find(h);
  if (it == s.handles.end() || !it->second.multicast) return nullptr;
  *id = it->second.object;
  return &s.multicasts[it->second.object];
}

unsigned team_added(const Multicast &mc) {
  return mc.shared ? static_cast<unsigned>(mc.shared->devices_added.load()) : static_cast<unsigned>(mc.devices.size());
}

bool aligned(Bytes v) { return v % kMulticastMinimum == 0; }

CUresult props_ok(const CUmulticastObjectProp *prop) {
  if (!prop || prop->numDevices == 0 || prop->flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (prop->handleTypes & CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_SUPPORTED;
  if (prop->handleTypes & ~(unsigned long long)(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult bind(State &s, std::unique_lock<DriverMutex> &lock, CUmemGenericAllocationHandle mcHandle, Bytes mcOffset,
              uint64_t phys_id, Bytes memOffset, Bytes size) {
  uint64_t id;
  Multicast *mc = find_mc(s, mcHandle, &id);
  if (!mc) return CUDA_ERROR_INVALID_VALUE;
  Phys &p = s.phys[phys_id];
  if (!aligned(mcOffset) || !aligned(memOffset) || size == 0 || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  if (memOffset > p.size || size > p.size - memOffset) return CUDA_ERROR_INVALID_VALUE;
  if (mcOffset > mc->size || size > mc->size - mcOffset) return CUDA_ERROR_INVALID_VALUE;
  if (p.device < 0 || !mc->devices.count(p.device)) return CUDA_ERROR_INVALID_DEVICE;  // not on a team device
  // "Externally shareable as well as imported multicast objects can be bound only to externally
  // shareable memory."
  if ((mc->handle_types || mc->remote) && !p.prop.requestedHandleTypes) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = multicast_wait_team(s, lock, id)) return r;
  mc = &s.multicasts[id];
  auto ph = s.phys.find(phys_id);
  if (ph == s.phys.end()) return CUDA_ERROR_INVALID_VALUE;  // released while we waited
  auto key = std::make_pair(ph->second.device, mcOffset);
  if (mc->binds.count(key)) return CUDA_ERROR_INVALID_VALUE;
  mc->binds[key] = Binding{phys_id, memOffset, size};
  ph->second.binds++;
  return CUDA_SUCCESS;
}

}  // namespace

namespace fc {

void multicast_maybe_free(State &s, uint64_t id) {
  auto it = s.multicasts.find(id);
  if (it == s.multicasts.end()) return;
  Multicast &mc = it->second;
  if (mc.handles > 0 || mc.mappings > 0) return;
  if (mc.remote) {
    mc.shared->importers.fetch_sub(1);
  } else {
    if (shared_exports_open(mc.exports)) return;
    if (mc.shared && mc.shared->importers.load() > 0) return;
  }
  std::vector<uint64_t> bound;
  for (auto &[key, b] : mc.binds) bound.push_back(b.phys);
  shared_unmap(mc.shared);
  if (mc.shared_fd >= 0) close(mc.shared_fd);
  s.multicasts.erase(it);
  for (uint64_t p : bound) {  // the bindings go with the object; the memory may go with them
    auto ph = s.phys.find(p);
    if (ph == s.phys.end()) continue;
    ph->second.binds--;
    phys_maybe_free(s, p);
  }
}

void multicast_reap(State &s) {
  std::vector<uint64_t> idle;
  for (auto &[id, mc] : s.multicasts)
    if (mc.handles == 0 && mc.mappings == 0) idle.push_back(id);
  for (uint64_t id : idle) multicast_maybe_free(s, id);
}

CUresult multicast_wait_team(State &s, std::unique_lock<DriverMutex> &lock, uint64_t id) {
  for (int waited_ms = 0;; ++waited_ms) {
    auto it = s.multicasts.find(id);
    if (it == s.multicasts.end()) return CUDA_ERROR_INVALID_VALUE;
    if (team_added(it->second) >= it->second.num_devices) return CUDA_SUCCESS;
    if (waited_ms >= 10000) return CUDA_ERROR_NOT_READY;
    lock.unlock();
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, nullptr);
    lock.lock();
  }
}

CUresult multicast_export(State &s, uint64_t id, int *fd) {
  Multicast &mc = s.multicasts[id];
  if (!(mc.handle_types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_INVALID_VALUE;
  if (mc.remote) return CUDA_ERROR_NOT_PERMITTED;
  if (!mc.shared) {
    mc.shared = shared_create(2, &mc.shared_fd);
    if (!mc.shared) return CUDA_ERROR_OUT_OF_MEMORY;
    mc.shared->id = id;
    mc.shared->size = mc.size;
    mc.shared->num_devices = mc.num_devices;
    mc.shared->devices_added.store(static_cast<int32_t>(mc.devices.size()));
  }
  int out = shared_export(mc.shared_fd, &mc.exports);
  if (out < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *fd = out;
  return CUDA_SUCCESS;
}

CUresult multicast_import(State &s, SharedObject *o, CUmemGenericAllocationHandle *handle) {
  uint64_t id = 0;
  if (o->pid == getpid()) {
    id = o->id;
    shared_unmap(o);
    if (!s.multicasts.count(id) || s.multicasts[id].remote) return CUDA_ERROR_INVALID_VALUE;
  } else {
    for (auto &[mid, mc] : s.multicasts)
      if (mc.remote && mc.shared->pid == o->pid && mc.shared->id == o->id) id = mid;
    if (id) {
      shared_unmap(o);
    } else {
      id = s.next_id++;
      Multicast &mc = s.multicasts[id];
      mc.size = o->size;
      mc.num_devices = o->num_devices;
      mc.handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      mc.shared = o;
      mc.remote = true;
      current_ctx(s, &mc.ctx);
      o->importers.fetch_add(1);
    }
  }
  CUmemGenericAllocationHandle h = new_handle(s, 4);
  s.handles[h] = Handle{id, true, 1};
  s.multicasts[id].handles++;
  *handle = h;
  return CUDA_SUCCESS;
}

}  // namespace fc

FC_API CUresult cuMulticastGetGranularity(size_t *granularity, const CUmulticastObjectProp *prop,
                                          CUmulticastGranularity_flags option) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = props_ok(prop)) return r;
  switch (option) {
    case CU_MULTICAST_GRANULARITY_MINIMUM: *granularity = kMulticastMinimum; return CUDA_SUCCESS;
    case CU_MULTICAST_GRANULARITY_RECOMMENDED: *granularity = kMulticastRecommended; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

FC_API CUresult cuMulticastCreate(CUmemGenericAllocationHandle *mcHandle, const CUmulticastObjectProp *prop) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!mcHandle) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = props_ok(prop)) return r;
  if (prop->size == 0 || !aligned(prop->size)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t id = s.next_id++;
  Multicast &mc = s.multicasts[id];
  mc.size = prop->size;
  mc.num_devices = prop->numDevices;
  mc.handle_types = static_cast<CUmemAllocationHandleType>(prop->handleTypes);
  current_ctx(s, &mc.ctx);
  CUmemGenericAllocationHandle h = new_handle(s, 4);
  s.handles[h] = Handle{id, true, 1};
  mc.handles = 1;
  *mcHandle = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  uint64_t id;
  Multicast *mc = find_mc(s, mcHandle, &id);
  if (!mc || mc->devices.count(dev) || team_added(*mc) >= mc->num_devices) return CUDA_ERROR_INVALID_VALUE;
  mc->devices.insert(dev);
  if (mc->shared) mc->shared->devices_added.fetch_add(1);
  return CUDA_SUCCESS;
}

FC_API CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                                   CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                                   unsigned long long flags) {
  State &s = state();
  std::unique_lock<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  auto mem = s.handles.find(memHandle);
  if (flags != 0 || mem == s.handles.end() || mem->second.multicast) return CUDA_ERROR_INVALID_VALUE;
  return bind(s, lock, mcHandle, mcOffset, mem->second.object, memOffset, size);
}

FC_API CUresult cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset, CUdeviceptr memptr,
                                    size_t size, unsigned long long flags) {
  State &s = state();
  std::unique_lock<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUdeviceptr base = 0;
  const Mapping *m = mapping_at(s, memptr, &base);
  // VMM memory only: binding cudaMallocAsync pool memory is not simulated.
  if (flags != 0 || !m || m->multicast) return CUDA_ERROR_INVALID_VALUE;
  if (memptr - base + size > m->size) return CUDA_ERROR_INVALID_VALUE;
  return bind(s, lock, mcHandle, mcOffset, m->object, m->offset + (memptr - base), size);
}

FC_API CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  uint64_t id;
  Multicast *mc = find_mc(s, mcHandle, &id);
  if (!mc || !aligned(mcOffset) || !aligned(size)) return CUDA_ERROR_INVALID_VALUE;
  auto b = mc->binds.find({dev, mcOffset});
  if (b == mc->binds.end() || b->second.size != size) return CUDA_ERROR_INVALID_VALUE;  // must match the bind
  const uint64_t phys = b->second.phys;
  mc->binds.erase(b);
  s.phys[phys].binds--;
  phys_maybe_free(s, phys);
  return CUDA_SUCCESS;
}
