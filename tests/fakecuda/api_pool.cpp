// api_pool.cpp — stream-ordered allocation and memory pools: cuMemAllocAsync,
// cuMemAllocFromPoolAsync, cuMemFreeAsync (and their _ptsz exports), cuMemPool*, and
// cuDevice{GetDefault,Get,Set}MemPool.
//
// Model: a pool holds whole blocks of physical memory (counted as "used" on its device).
// An allocation takes the best-fitting free block whole, without splitting, or grows the
// pool by a new block; so a pool can hold free memory that a larger request cannot use
// (the "fragmentation" OOM tests rely on this). Freed blocks stay in the pool until a
// synchronize trims the pool down to its release threshold, or cuMemPoolTrimTo.
#include "state.h"

#include <algorithm>

using namespace fc;

namespace {

Pool *find_pool(State &s, CUmemoryPool h) {
  auto it = s.pools.find(h);
  return it == s.pools.end() || it->second.destroyed ? nullptr : &it->second;
}

void release_block(State &s, Pool &p, CUdeviceptr addr, Bytes size) {
  p.reserved -= size;
  if (p.device >= 0) uncharge(s.devices[p.device], size);
  s.va.free(addr, size);
}

// Releases free blocks, largest first, while the pool keeps at least `keep` reserved.
void trim(State &s, Pool &p, Bytes keep) {
  auto it = p.free_blocks.end();
  while (p.reserved > keep && it != p.free_blocks.begin()) {
    --it;
    const Bytes size = it->first;
    std::vector<CUdeviceptr> &addrs = it->second;
    while (!addrs.empty() && p.reserved - size >= keep) {
      release_block(s, p, addrs.front(), size);  // oldest first: recent ones are warm
      addrs.erase(addrs.begin());
    }
    if (addrs.empty()) it = p.free_blocks.erase(it);  // the next --it reaches the smaller sizes
  }
}

void note_high(Pool &p) {
  p.reserved_high = std::max(p.reserved_high, p.reserved);
  p.used_high = std::max(p.used_high, p.used);
}

CUresult pool_alloc(State &s, CUcontext ctx, CUmemoryPool ph, size_t bytesize, CUdeviceptr *dptr) {
  Pool *p = find_pool(s, ph);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize > (1ull << 60)) return CUDA_ERROR_OUT_OF_MEMORY;
  const Bytes want = round_up(bytesize, kAllocRound);
  CUdeviceptr addr = 0;
  Bytes block = 0;
  auto fit = p->free_blocks.lower_bound(want);  // best fit: smallest block that is big enough
  if (fit != p->free_blocks.end()) {
    block = fit->first;
    addr = fit->second.back();  // LIFO within a size: the address a GPU would hand back
    fit->second.pop_back();
    if (fit->second.empty()) p->free_blocks.erase(fit);
  } else {
    block = want;
    if (p->max_size && p->reserved + block > p->max_size) return CUDA_ERROR_OUT_OF_MEMORY;
    if (p->device >= 0)
      if (CUresult r = charge(s.devices[p->device], block)) return r;
    addr = s.va.alloc(block, kAllocRound);
    if (!addr) {
      if (p->device >= 0) uncharge(s.devices[p->device], block);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    p->reserved += block;
  }
  p->used += block;
  p->blocks_in_use++;
  note_high(*p);
  Alloc &a = s.allocs[addr];
  a.kind = Kind::PoolBlock;
  a.size = bytesize;
  a.charged = block;
  a.va_size = block;
  a.device = p->device >= 0 ? p->device : s.ctxs[ctx].device;
  a.ctx = ctx;
  a.pool = ph;
  *dptr = addr;
  return CUDA_SUCCESS;
}

// Takes an in-use block out of the allocation table and out of its pool's "used".
Pool &detach_block(State &s, std::map<CUdeviceptr, Alloc>::iterator it) {
  Pool &p = s.pools[it->second.pool];
  p.used -= it->second.charged;
  p.blocks_in_use--;
  return p;
}

void drop_pool_if_done(State &s, CUmemoryPool h) {
  auto it = s.pools.find(h);
  if (it != s.pools.end() && it->second.destroyed && it->second.blocks_in_use == 0) s.pools.erase(it);
}

// `from_pool`: cuMemAllocFromPoolAsync, where `pool` must be given; otherwise the device's
// current pool is used.
CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, bool from_pool, CUstream hStream) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!dptr || (from_pool && !pool)) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  if (!from_pool) pool = s.devices[s.ctxs[ctx].device].current_pool;
  return pool_alloc(s, ctx, pool, bytesize, dptr);
}

CUresult free_async(CUdeviceptr dptr, CUstream hStream) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  auto it = s.allocs.find(dptr);
  if (it == s.allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  switch (it->second.kind) {
    case Kind::PoolBlock: pool_return_block(s, it); return CUDA_SUCCESS;
    case Kind::Device:
    case Kind::Managed: free_plain_alloc(s, it); return CUDA_SUCCESS;
    case Kind::IpcImport: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

namespace fc {

void pool_return_block(State &s, std::map<CUdeviceptr, Alloc>::iterator it) {
  const CUdeviceptr addr = it->first;
  const Bytes block = it->second.charged;
  const CUmemoryPool h = it->second.pool;
  Pool &p = detach_block(s, it);
  s.allocs.erase(it);
  if (p.destroyed) {
    release_block(s, p, addr, block);
    drop_pool_if_done(s, h);
  } else {
    p.free_blocks[block].push_back(addr);
  }
}

void pool_release_ctx(State &s, CUcontext ctx) {
  // Blocks the context still uses go back to the device; the pool itself is per device.
  for (auto it = s.allocs.begin(); it != s.allocs.end();) {
    auto next = std::next(it);
    if (it->second.kind == Kind::PoolBlock && it->second.ctx == ctx) {
      const CUdeviceptr addr = it->first;
      const Bytes block = it->second.charged;
      const CUmemoryPool h = it->second.pool;
      Pool &p = detach_block(s, it);
      s.allocs.erase(it);
      release_block(s, p, addr, block);
      drop_pool_if_done(s, h);
    }
    it = next;
  }
}

void pool_sync_device(State &s, int device) {
  for (auto &[h, p] : s.pools)
    if (!p.destroyed && (p.device == device || p.device < 0)) trim(s, p, p.release_threshold);
}

void pool_trim_device(State &s, int device) {
  for (auto &[h, p] : s.pools)
    if (!p.destroyed && p.device == device) trim(s, p, 0);
}

}  // namespace fc

FC_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  maybe_raise("cuMemAllocAsync");
  return alloc_async(dptr, bytesize, nullptr, false, hStream);
}
FC_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, false, hStream);
}

FC_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream hStream) {
  return alloc_async(dptr, bytesize, pool, true, hStream);
}
FC_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream) {
  return alloc_async(dptr, bytesize, pool, true, hStream);
}

FC_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream); }
FC_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

FC_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool || !poolProps) return CUDA_ERROR_INVALID_VALUE;
  const CUmemLocation &loc = poolProps->location;
  int device = -1;
  if (poolProps->allocType == CU_MEM_ALLOCATION_TYPE_PINNED) {
    switch (loc.type) {
      case CU_MEM_LOCATION_TYPE_DEVICE:
        if (check_device(s, loc.id)) return CUDA_ERROR_INVALID_VALUE;
        device = loc.id;
        break;
      case CU_MEM_LOCATION_TYPE_HOST:
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: break;  // host memory: no device charge
      default: return CUDA_ERROR_INVALID_VALUE;
    }
  } else if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_MANAGED) {
    return CUDA_ERROR_INVALID_VALUE;  // managed pools: not resident, never charged
  }
  CUmemoryPool h = reinterpret_cast<CUmemoryPool>(new_handle(s, 2));
  Pool &p = s.pools[h];
  p.device = device;
  p.max_size = poolProps->maxSize;
  *pool = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!p || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  trim(s, *p, 0);
  for (Device &d : s.devices)
    if (d.current_pool == pool) d.current_pool = d.default_pool;
  // Blocks still in use keep their memory until freed (the real driver defers the same way).
  if (p->blocks_in_use == 0) s.pools.erase(pool);
  else p->destroyed = true;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  trim(s, *p, minBytesToKeep);
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
  // The reuse attributes are ints, the others cuuint64_t: read only what the caller gave.
  auto v64 = [value] { return *static_cast<const cuuint64_t *>(value); };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *static_cast<int *>(value);
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->release_threshold = v64(); return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:  // only a reset to 0 (= current) is allowed
      if (v64() != 0) return CUDA_ERROR_INVALID_VALUE;
      p->reserved_high = p->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (v64() != 0) return CUDA_ERROR_INVALID_VALUE;
      p->used_high = p->used;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;  // the *_CURRENT values are read-only
  }
}

FC_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!p || !value) return CUDA_ERROR_INVALID_VALUE;
  cuuint64_t *out = static_cast<cuuint64_t *>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *static_cast<int *>(value) = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *out = p->release_threshold; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *out = p->reserved; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *out = p->reserved_high; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *out = p->used; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *out = p->used_high; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

FC_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  *pool_out = s.devices[dev].default_pool;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  *pool = s.devices[dev].current_pool;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  Pool *p = find_pool(s, pool);
  if (!p || p->device != dev) return CUDA_ERROR_INVALID_VALUE;
  s.devices[dev].current_pool = pool;
  return CUDA_SUCCESS;
}
