// api_pool.cpp — stream-ordered allocation and memory pools: cuMemAllocAsync,
// cuMemAllocFromPoolAsync, cuMemFreeAsync (and their _ptsz exports), cuMemPool*, the
// per-device pool API (cuDevice{GetDefault,Get,Set}MemPool) and CUDA 13's per-location one
// (cuMem{GetDefault,Get,Set}MemPool, device/host/host-NUMA locations, pinned or managed).
//
// Model (of the driver's observed behaviour: not measured by this project): a pool reserves
// memory in chunks of whole 2 MiB pages and splits them between its allocations. A request is
// rounded to 512 B (the alignment the real asynchronous allocator is observed to use) and takes
// the best-fitting free range of the pool — the smallest that holds it, the lowest address among
// equal lengths — using its start and leaving the rest free; when no free range holds it, the
// pool reserves a new chunk, the request rounded up to 2 MiB, and splits that. A free gives its
// range back and coalesces it with the free ranges next to it in the same chunk (never across
// chunks, which are separate reservations). So USED_MEM_CURRENT is the bytes of the live
// allocations (each rounded to 512 B) and RESERVED_MEM_CURRENT the bytes of the chunks; a pool
// can still hold free memory that a larger request cannot use — free ranges in different chunks,
// or kept apart by live allocations (the "fragmentation" OOM tests rely on this). A device pool's
// chunks are pages of its own (page_heap.h), charged to the device (cuMemGetInfo) while
// reserved; a maxSize caps the chunks' bytes. Host and managed pools split the same way, with
// chunks of real host memory that count against no device. Freed memory stays in the pool until
// a stream/event/context synchronize trims it to its release threshold, or cuMemPoolTrimTo:
// trimming releases chunks that are entirely free, largest first, and never part of a chunk.
// On a capturing stream cuMemAllocAsync/cuMemFreeAsync add graph nodes instead (virtual
// addresses, no memory).
#include "config.h"
#include "state.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

using namespace fc;

namespace {

Pool *find_pool(State &s, CUmemoryPool h) {
  auto it = s.pools.find(h);
  return it == s.pools.end() || it->second.destroyed ? nullptr : &it->second;
}

Bytes host_round(Bytes n) { return round_up(n, static_cast<Bytes>(sysconf(_SC_PAGESIZE))); }

// The unit in which a pool reserves memory (a chunk is the request rounded up to it).
constexpr Bytes kChunkRound = PageHeap::kPage;

// Records [addr, addr+len) of `chunk` (based at `base`) as free, coalescing it with the free
// ranges next to it in that chunk.
void add_free(Pool &p, CUdeviceptr base, Pool::Chunk &chunk, CUdeviceptr addr, Bytes len) {
  Bytes off = addr - base;
  auto next = chunk.free_runs.lower_bound(off);
  if (next != chunk.free_runs.end() && next->first == off + len) {
    p.free_ranges.erase({next->second, base + next->first});
    len += next->second;
    next = chunk.free_runs.erase(next);
  }
  if (next != chunk.free_runs.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      p.free_ranges.erase({prev->second, base + prev->first});
      off = prev->first;
      len += prev->second;
      chunk.free_runs.erase(prev);
    }
  }
  chunk.free_runs[off] = len;
  p.free_ranges.insert({len, base + off});
}

// The chunk holding `addr` (which must be in one).
std::map<CUdeviceptr, Pool::Chunk>::iterator chunk_of(Pool &p, CUdeviceptr addr) {
  return std::prev(p.chunks.upper_bound(addr));
}

// Gives an entirely free chunk back: to the device (its pages) or to the host.
void release_chunk(State &s, Pool &p, std::map<CUdeviceptr, Pool::Chunk>::iterator it) {
  const CUdeviceptr base = it->first;
  const Bytes size = it->second.size;
  p.free_ranges.erase({size, base});  // entirely free: one range, the whole chunk
  p.chunks.erase(it);
  if (p.device >= 0) {
    p.heap.free(s.va, &s.devices[p.device], base);
  } else {
    munmap(reinterpret_cast<void *>(base), host_round(size));
    p.host_reserved -= size;
  }
}

// Releases entirely free chunks, largest first (lowest address first within a size), as long
// as the pool keeps at least `keep` reserved. A chunk with a live allocation stays whole.
void trim(State &s, Pool &p, Bytes keep) {
  std::vector<std::pair<Bytes, CUdeviceptr>> idle;
  for (const auto &[base, c] : p.chunks)
    if (c.live == 0) idle.push_back({c.size, base});
  std::stable_sort(idle.begin(), idle.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  for (const auto &[size, base] : idle) {
    const Bytes reserved = p.reserved();
    if (size > reserved || reserved - size < keep) continue;  // (keep may be ~0: no overflow)
    release_chunk(s, p, p.chunks.find(base));
  }
}

void note_high(Pool &p) {
  p.reserved_high = std::max(p.reserved_high, p.reserved());
  p.used_high = std::max(p.used_high, p.used);
}

// A new chunk of `bytes` (whole 2 MiB pages) for pool `p`, entirely free, or 0 (OOM, or above
// the pool's maxSize).
CUdeviceptr grow(State &s, Pool &p, Bytes bytes) {
  CUdeviceptr base = 0;
  if (p.device >= 0) {
    Device &d = s.devices[p.device];
    base = p.heap.alloc(s.va, &d, bytes);
    if (base && p.max_size && p.heap.charged() > p.max_size) {
      p.heap.free(s.va, &d, base);
      return 0;
    }
  } else {
    if (p.max_size && p.host_reserved + bytes > p.max_size) return 0;
    // Host and managed pool memory is real: programs write into it from the CPU.
    void *m = mmap(nullptr, host_round(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return 0;
    p.host_reserved += bytes;
    base = reinterpret_cast<CUdeviceptr>(m);
  }
  if (!base) return 0;
  Pool::Chunk &c = p.chunks[base];
  c.size = bytes;
  c.free_runs[0] = bytes;
  p.free_ranges.insert({bytes, base});
  return base;
}

CUresult pool_alloc(State &s, CUcontext ctx, CUmemoryPool ph, size_t bytesize, CUdeviceptr *dptr) {
  Pool *p = find_pool(s, ph);
  if (!p || p->imported) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize > (1ull << 60)) return CUDA_ERROR_OUT_OF_MEMORY;
  const Bytes want = round_up(bytesize, kAllocRound);
  // Best fit: the smallest free range that holds the request, the lowest address among equals.
  auto fit = p->free_ranges.lower_bound({want, 0});
  if (fit == p->free_ranges.end()) {
    if (!grow(s, *p, round_up(want, kChunkRound))) return CUDA_ERROR_OUT_OF_MEMORY;
    fit = p->free_ranges.lower_bound({want, 0});  // the new chunk: no other range holds it
  }
  const Bytes len = fit->first;
  const CUdeviceptr addr = fit->second;
  p->free_ranges.erase(fit);
  auto chunk = chunk_of(*p, addr);
  chunk->second.free_runs.erase(addr - chunk->first);
  if (len > want) {  // split: the rest stays free
    chunk->second.free_runs[addr - chunk->first + want] = len - want;
    p->free_ranges.insert({len - want, addr + want});
  }
  chunk->second.live++;
  p->used += want;
  p->blocks_in_use++;
  note_high(*p);
  Alloc &a = s.allocs[addr];
  a.kind = Kind::PoolBlock;
  a.size = bytesize;
  a.block = want;
  a.device = p->device >= 0 ? p->device : s.ctxs[ctx].device;
  a.ctx = ctx;
  a.pool = ph;
  *dptr = addr;
  return CUDA_SUCCESS;
}

// Gives the range of an in-use allocation back to its pool (coalesced with its free
// neighbours) and returns its chunk; the allocation stays in the table.
std::map<CUdeviceptr, Pool::Chunk>::iterator give_back(Pool &p, CUdeviceptr addr, Bytes block) {
  auto chunk = chunk_of(p, addr);
  chunk->second.live--;
  add_free(p, chunk->first, chunk->second, addr, block);
  return chunk;
}

// Takes an in-use block out of the allocation table and out of its pool's "used".
Pool &detach_block(State &s, std::map<CUdeviceptr, Alloc>::iterator it) {
  Pool &p = s.pools[it->second.pool];
  p.used -= it->second.block;
  p.blocks_in_use--;
  return p;
}

void drop_pool_if_done(State &s, CUmemoryPool h) {
  auto it = s.pools.find(h);
  if (it != s.pools.end() && it->second.destroyed && it->second.blocks_in_use == 0) s.pools.erase(it);
}

CUmemLocation device_location(int dev) {
  CUmemLocation loc{};
  loc.type = CU_MEM_LOCATION_TYPE_DEVICE;
  loc.id = dev;
  return loc;
}

// The location of a pool's memory as an allocation node states it.
CUmemPoolProps node_props(const Pool &p) {
  CUmemPoolProps props{};
  props.allocType = p.alloc_type;
  props.location = p.location;
  return props;
}

// `from_pool`: cuMemAllocFromPoolAsync, where `pool` must be given; otherwise the current pool
// of the stream's device is used.
CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, bool from_pool, CUstream hStream,
                     bool ptsz) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!dptr || (from_pool && !pool)) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  const int dev = s.ctxs[ctx].device;
  if (!from_pool) pool = pool_current(s, CU_MEM_ALLOCATION_TYPE_PINNED, device_location(dev));
  CUresult err = CUDA_SUCCESS;
  Capture *c = capture_of(s, hStream, ptsz, &err);
  if (err) return err;
  if (c) {  // captured: an allocation node, memory only when the graph runs
    Pool *p = find_pool(s, pool);
    if (!p || p->imported || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEM_ALLOC_NODE_PARAMS params{};
    params.poolProps = node_props(*p);
    if (p->alloc_type != CU_MEM_ALLOCATION_TYPE_PINNED || p->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
      params.poolProps.location = device_location(dev);
    params.bytesize = bytesize;
    CUgraphNode node;
    if (CUresult r = graph_add_alloc_node(s, c->graph, c->deps.data(), c->deps.size(), &params, &node)) return r;
    capture_add(s, *c, node);
    *dptr = params.dptr;
    return CUDA_SUCCESS;
  }
  return pool_alloc(s, ctx, pool, bytesize, dptr);
}

CUresult free_async(CUdeviceptr dptr, CUstream hStream, bool ptsz) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  CUcontext ctx;
  if (CUresult r = stream_ctx(s, hStream, &ctx)) return r;
  CUresult err = CUDA_SUCCESS;
  Capture *c = capture_of(s, hStream, ptsz, &err);
  if (err) return err;
  if (c) {  // captured: a free node; only graph allocations can be freed in a graph
    CUgraphNode node;
    if (CUresult r = graph_add_free_node(s, c->graph, c->deps.data(), c->deps.size(), dptr, &node)) {
      c->invalidated = true;
      return r;
    }
    capture_add(s, *c, node);
    return CUDA_SUCCESS;
  }
  CUresult graph_result;
  if (graph_free_live(s, dptr, &graph_result)) return graph_result;
  auto it = s.allocs.find(dptr);
  if (it == s.allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  return free_any(s, it);
}

// The slot of a (type, location) pair; INVALID_VALUE for pairs without pools.
CUresult slot_key(const State &s, CUmemAllocationType type, const CUmemLocation &loc, PoolKey *key) {
  if (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED)
    return CUDA_ERROR_INVALID_VALUE;
  switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (check_device(s, loc.id)) return CUDA_ERROR_INVALID_DEVICE;
      *key = {type, loc.type, loc.id};
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST: *key = {type, loc.type, 0}; return CUDA_SUCCESS;  // id ignored
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      if (loc.id < 0) return CUDA_ERROR_INVALID_VALUE;
      *key = {type, loc.type, loc.id};
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_NONE:  // managed memory without a preferred location
      if (type != CU_MEM_ALLOCATION_TYPE_MANAGED) return CUDA_ERROR_INVALID_VALUE;
      *key = {type, loc.type, 0};
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUmemoryPool make_pool(State &s, CUmemAllocationType type, const CUmemLocation &loc, bool is_default) {
  CUmemoryPool h = new_handle_as<CUmemoryPool>(s, 2);
  Pool &p = s.pools[h];
  p.alloc_type = type;
  p.location = loc;
  if (loc.type == CU_MEM_LOCATION_TYPE_HOST) p.location.id = 0;
  p.device = type == CU_MEM_ALLOCATION_TYPE_PINNED && loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : -1;
  p.is_default = is_default;
  return h;
}

PoolSlot &slot(State &s, const PoolKey &key) {
  PoolSlot &sl = s.pool_slots[key];
  if (!sl.default_pool) {
    CUmemLocation loc{};
    loc.type = static_cast<CUmemLocationType>(std::get<1>(key));
    loc.id = std::get<2>(key);
    sl.default_pool = make_pool(s, static_cast<CUmemAllocationType>(std::get<0>(key)), loc, true);
    sl.current = sl.default_pool;
  }
  return sl;
}

PoolKey pool_key(const Pool &p) { return {p.alloc_type, p.location.type, p.location.id}; }

}  // namespace

namespace fc {

CUmemoryPool pool_current(State &s, CUmemAllocationType type, const CUmemLocation &loc) {
  PoolKey key;
  if (slot_key(s, type, loc, &key)) return nullptr;
  return slot(s, key).current;
}

void pool_return_block(State &s, std::map<CUdeviceptr, Alloc>::iterator it) {
  const CUdeviceptr addr = it->first;
  const Bytes block = it->second.block;
  const CUmemoryPool h = it->second.pool;
  Pool &p = detach_block(s, it);
  s.allocs.erase(it);
  auto chunk = give_back(p, addr, block);
  if (p.destroyed) {  // a destroyed pool keeps only the chunks still in use
    if (chunk->second.live == 0) release_chunk(s, p, chunk);
    drop_pool_if_done(s, h);
  }
}

void pool_release_ctx(State &s, CUcontext ctx) {
  // Allocations the context still holds are freed, and their memory goes back to the device
  // where that empties a chunk; the pool itself is per device.
  for (auto it = s.allocs.begin(); it != s.allocs.end();) {
    auto next = std::next(it);
    if (it->second.kind == Kind::PoolBlock && it->second.ctx == ctx) {
      const CUdeviceptr addr = it->first;
      const Bytes block = it->second.block;
      const CUmemoryPool h = it->second.pool;
      Pool &p = detach_block(s, it);
      s.allocs.erase(it);
      auto chunk = give_back(p, addr, block);
      if (chunk->second.live == 0) release_chunk(s, p, chunk);
      drop_pool_if_done(s, h);
    }
    it = next;
  }
}

void pool_sync_device(State &s, int device) {
  for (auto &[h, p] : s.pools)
    if (!p.destroyed && !p.imported && (p.device == device || p.device < 0)) trim(s, p, p.release_threshold);
}

void pool_trim_device(State &s, int device) {
  for (auto &[h, p] : s.pools)
    if (!p.destroyed && !p.imported && p.device == device) trim(s, p, 0);
}

}  // namespace fc

namespace {
// FAKECUDA_SHARE_NOTHING: no lock, no accounting, nothing shared between threads, so that a
// benchmark with many threads measures the caller, not this driver's one mutex. Each thread has
// its own 2^36-byte range and reuses what it freed last (a warm pool hands the same addresses
// back too): a free goes on the freeing thread's short list, an allocation of the same rounded
// size takes it. The real driver's per-thread cost is not modelled.
struct ShareNothing {
  static constexpr int kKept = 64;
  uint64_t base = 0, offset = 0;
  uint64_t freed[kKept];
  int n = 0;
};
thread_local ShareNothing t_share_nothing;

CUresult share_nothing_alloc(CUdeviceptr *dptr, size_t bytesize) {
  static std::atomic<uint64_t> next_thread{1};
  ShareNothing &t = t_share_nothing;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (t.n > 0) {  // (sizes are not checked: the benchmarks free and allocate one size)
    *dptr = t.freed[--t.n];
    return CUDA_SUCCESS;
  }
  if (!t.base) t.base = 0x500000000000ull + (next_thread.fetch_add(1) % 4096) * (1ull << 36);
  size_t step = round_up(bytesize ? bytesize : 1, kAllocRound);
  if (step >= (1ull << 36)) return CUDA_ERROR_OUT_OF_MEMORY;
  if (t.offset + step > (1ull << 36)) t.offset = 0;
  *dptr = t.base + t.offset;
  t.offset += step;
  return CUDA_SUCCESS;
}

CUresult share_nothing_free(CUdeviceptr dptr) {
  ShareNothing &t = t_share_nothing;
  if (dptr && t.n < ShareNothing::kKept) t.freed[t.n++] = dptr;
  return CUDA_SUCCESS;
}
}  // namespace

FC_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  if (fc::config().share_nothing) return share_nothing_alloc(dptr, bytesize);
  maybe_raise("cuMemAllocAsync");
  return alloc_async(dptr, bytesize, nullptr, false, hStream, false);
}
FC_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  return alloc_async(dptr, bytesize, nullptr, false, hStream, true);
}

FC_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream hStream) {
  return alloc_async(dptr, bytesize, pool, true, hStream, false);
}
FC_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream hStream) {
  return alloc_async(dptr, bytesize, pool, true, hStream, true);
}

FC_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  if (fc::config().share_nothing) return share_nothing_free(dptr);
  return free_async(dptr, hStream, false);
}
FC_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream, true);
}

FC_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool || !poolProps) return CUDA_ERROR_INVALID_VALUE;
  const CUmemLocation &loc = poolProps->location;
  const unsigned types = poolProps->handleTypes;
  if (types & ~unsigned(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) return CUDA_ERROR_NOT_SUPPORTED;  // fabric, win32
  if (poolProps->allocType == CU_MEM_ALLOCATION_TYPE_PINNED) {
    switch (loc.type) {
      case CU_MEM_LOCATION_TYPE_DEVICE:
        if (check_device(s, loc.id)) return CUDA_ERROR_INVALID_VALUE;
        break;
      case CU_MEM_LOCATION_TYPE_HOST:  // "not IPC capable": handleTypes must be 0
        if (types) return CUDA_ERROR_INVALID_VALUE;
        break;
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (loc.id < 0) return CUDA_ERROR_INVALID_VALUE;
        break;
      default: return CUDA_ERROR_INVALID_VALUE;  // HOST_NUMA_CURRENT included, as documented
    }
  } else if (poolProps->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED) {
    PoolKey key;
    if (slot_key(s, CU_MEM_ALLOCATION_TYPE_MANAGED, loc, &key)) return CUDA_ERROR_INVALID_VALUE;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUmemoryPool h = make_pool(s, poolProps->allocType, loc, false);
  Pool &p = s.pools[h];
  p.max_size = poolProps->maxSize;
  p.handle_types = static_cast<CUmemAllocationHandleType>(types);
  *pool = h;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!p || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  if (!p->imported) trim(s, *p, 0);
  for (auto &[key, sl] : s.pool_slots)
    if (sl.current == pool) sl.current = sl.default_pool;
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
  if (!p->imported) trim(s, *p, minBytesToKeep);
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
      p->reserved_high = p->reserved();
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
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *out = p->reserved(); return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *out = p->reserved_high; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *out = p->used; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *out = p->used_high; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

FC_API CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, pool);
  if (!p || (!map && count)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || check_device(s, map[i].location.id))
      return CUDA_ERROR_INVALID_VALUE;
    if (map[i].flags > CU_MEM_ACCESS_FLAGS_PROT_READWRITE) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;  // access is not simulated
}

FC_API CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  Pool *p = find_pool(s, memPool);
  if (!p || !flags || !location) return CUDA_ERROR_INVALID_VALUE;
  // A pool's memory is accessible where it resides (a device pool from its device).
  const bool own = location->type == p->location.type && location->id == p->location.id;
  *flags = own ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  *pool_out = slot(s, {CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE, dev}).default_pool;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_device(s, dev)) return r;
  *pool = slot(s, {CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE, dev}).current;
  return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (CUresult r = check_device(s, dev)) return r;
  Pool *p = find_pool(s, pool);
  if (!p || p->imported || p->device != dev) return CUDA_ERROR_INVALID_VALUE;
  slot(s, {CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE, dev}).current = pool;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool_out || !location) return CUDA_ERROR_INVALID_VALUE;
  PoolKey key;
  if (CUresult r = slot_key(s, type, *location, &key)) return r;
  *pool_out = slot(s, key).default_pool;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemGetMemPool(CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!pool_out || !location) return CUDA_ERROR_INVALID_VALUE;
  PoolKey key;
  if (CUresult r = slot_key(s, type, *location, &key)) return r;
  *pool_out = slot(s, key).current;
  return CUDA_SUCCESS;
}

FC_API CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool) {
  State &s = state();
  std::lock_guard<DriverMutex> lock(s.mu);
  if (CUresult r = require_init(s)) return r;
  if (!location) return CUDA_ERROR_INVALID_VALUE;
  PoolKey key;
  if (CUresult r = slot_key(s, type, *location, &key)) return r;
  Pool *p = find_pool(s, pool);
  // "The location and allocation type specified must match those of the pool."
  if (!p || p->imported || pool_key(*p) != key) return CUDA_ERROR_INVALID_VALUE;
  slot(s, key).current = pool;
  return CUDA_SUCCESS;
}
