// addrspace.h — the simulated device virtual address space: hands out synthetic device
// addresses that no host mapping can ever occupy (UVA), with real-GPU-like reuse.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace fc {

class AddressSpace {
 public:
  // A free range of exactly `size` bytes freed most recently (LIFO) if suitably aligned,
  // else fresh space. `align` must be a power of two. Returns 0 only if the host refuses
  // to reserve more address space.
  uint64_t alloc(uint64_t size, uint64_t align);
  // Exactly [addr, addr+size) if no live range overlaps it, else 0.
  uint64_t alloc_at(uint64_t addr, uint64_t size);
  void free(uint64_t addr, uint64_t size);

 private:
  struct Chunk {
    uint64_t base, end, bump;
  };
  bool overlaps_live(uint64_t addr, uint64_t size, uint64_t *overlap_end) const;
  bool inside_chunk(uint64_t addr, uint64_t size) const;
  void drop_freed_overlapping(uint64_t addr, uint64_t size);
  uint64_t reserve_host_va(uint64_t size, uint64_t hint_addr);

  std::vector<Chunk> chunks_;
  std::map<uint64_t, uint64_t> live_;                         // addr -> size
  std::map<uint64_t, uint64_t> freed_;                        // addr -> size
  std::map<uint64_t, std::vector<uint64_t>> freed_by_size_;   // size -> addrs, LIFO (lazy)
  uint64_t fallback_next_ = 0x500000000000ull;
};

}  // namespace fc
