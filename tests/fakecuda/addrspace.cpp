// addrspace.cpp — synthetic device addresses. Fresh space comes from large PROT_NONE,
// MAP_NORESERVE host reservations: they cost no memory (a simulated 80 GiB device is
// free) but guarantee that device pointers never alias host pointers, as UVA does on a
// real GPU. Exactly-sized freed ranges are reused LIFO so traces see address reuse.
#include "addrspace.h"

#include <sys/mman.h>

#include <cstdio>

namespace fc {
namespace {

constexpr uint64_t kChunkBytes = 64ull << 30;  // VA reserved per host mapping
constexpr uint64_t kChunkAlign = 2ull << 20;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

uint64_t AddressSpace::reserve_host_va(uint64_t size, uint64_t hint) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (hint) flags |= MAP_FIXED_NOREPLACE;
  void *p = mmap(reinterpret_cast<void *>(hint), size, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED) return 0;
  if (hint && reinterpret_cast<uint64_t>(p) != hint) {  // pre-4.17 kernels treat it as a hint
    munmap(p, size);
    return 0;
  }
  return reinterpret_cast<uint64_t>(p);
}

bool AddressSpace::overlaps_live(uint64_t addr, uint64_t size, uint64_t *overlap_end) const {
  auto it = live_.upper_bound(addr);
  if (it != live_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second > addr) {
      if (overlap_end) *overlap_end = prev->first + prev->second;
      return true;
    }
  }
  if (it != live_.end() && it->first < addr + size) {
    if (overlap_end) *overlap_end = it->first + it->second;
    return true;
  }
  return false;
}

bool AddressSpace::inside_chunk(uint64_t addr, uint64_t size) const {
  for (const Chunk &c : chunks_)
    if (addr >= c.base && addr + size <= c.end) return true;
  return false;
}

void AddressSpace::drop_freed_overlapping(uint64_t addr, uint64_t size) {
  // Entries in freed_by_size_ are dropped lazily: alloc() re-checks freed_.
  auto it = freed_.upper_bound(addr);
  if (it != freed_.begin()) --it;
  while (it != freed_.end() && it->first < addr + size) {
    if (it->first + it->second > addr) it = freed_.erase(it);
    else ++it;
  }
}

uint64_t AddressSpace::alloc(uint64_t size, uint64_t align) {
  auto bucket = freed_by_size_.find(size);
  if (bucket != freed_by_size_.end()) {
    std::vector<uint64_t> &stack = bucket->second;
    while (!stack.empty()) {
      uint64_t a = stack.back();
      auto f = freed_.find(a);
      if (f == freed_.end() || f->second != size) {  // stale: overlapped by an alloc_at
        stack.pop_back();
        continue;
      }
      if (a & (align - 1)) break;  // don't scan: fresh space is just as good
      stack.pop_back();
      freed_.erase(f);
      live_[a] = size;
      return a;
    }
    if (stack.empty()) freed_by_size_.erase(bucket);
  }

  for (Chunk &c : chunks_) {
    uint64_t a = align_up(c.bump, align);
    uint64_t end;
    while (a + size <= c.end && overlaps_live(a, size, &end)) a = align_up(end, align);
    if (a + size > c.end) continue;
    c.bump = a + size;
    drop_freed_overlapping(a, size);
    live_[a] = size;
    return a;
  }

  uint64_t want = align_up(size + align, kChunkAlign);
  if (want < kChunkBytes) want = kChunkBytes;
  uint64_t base = reserve_host_va(want + kChunkAlign, 0);
  if (!base) {
    // ulimit -v or similar: fall back to addresses nothing maps in practice.
    static bool warned = false;
    if (!warned) {
      warned = true;
      fprintf(stderr, "fakecuda: cannot reserve host address space; device addresses may alias host ones\n");
    }
    base = fallback_next_;
    fallback_next_ += want + kChunkAlign;
  }
  Chunk c{align_up(base, kChunkAlign), 0, 0};
  c.end = c.base + want;
  c.bump = c.base;
  uint64_t a = align_up(c.bump, align);
  c.bump = a + size;
  chunks_.push_back(c);
  live_[a] = size;
  return a;
}

uint64_t AddressSpace::alloc_at(uint64_t addr, uint64_t size) {
  if (!addr || addr + size < addr || overlaps_live(addr, size, nullptr)) return 0;
  if (!inside_chunk(addr, size)) {
    // Outside our reservations the range must be free in the host address space too.
    if (!reserve_host_va(size, addr)) return 0;
    chunks_.push_back(Chunk{addr, addr + size, addr + size});
  }
  drop_freed_overlapping(addr, size);
  live_[addr] = size;
  return addr;
}

void AddressSpace::free(uint64_t addr, uint64_t size) {
  auto it = live_.find(addr);
  if (it == live_.end()) return;
  live_.erase(it);
  freed_[addr] = size;
  freed_by_size_[size].push_back(addr);
}

}  // namespace fc
