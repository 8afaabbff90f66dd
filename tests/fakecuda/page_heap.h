// page_heap.h — device memory in 2 MiB pages, the unit in which the driver's allocator takes
// memory from the GPU and in which cuMemGetInfo moves. A request (rounded to 512 B) of up to
// 1 MiB is packed with others into shared pages; a larger one gets pages of its own. A page
// is charged to its device when its first block is placed and uncharged when its last block
// goes. One heap per device serves cuMemAlloc/cuMemAllocPitch and arrays; every device
// memory pool has its own, from which it takes its chunks, whole pages each (api_pool.cpp).
#pragma once

#include <cstdint>
#include <map>

#include "addrspace.h"

namespace fc {

struct Device;

class PageHeap {
 public:
  static constexpr uint64_t kPage = 2ull << 20;
  static constexpr uint64_t kSmallMax = 1ull << 20;
  static constexpr uint64_t kAlign = 512;

  // Places `size` bytes (a multiple of kAlign), charging new pages to `dev` (nullptr: charge
  // nothing). Returns 0 when the device cannot hold the new pages (nothing changed then).
  uint64_t alloc(AddressSpace &va, Device *dev, uint64_t size);
  // Frees a block placed by alloc, uncharging the pages that became empty.
  void free(AddressSpace &va, Device *dev, uint64_t addr);
  uint64_t charged() const { return charged_; }
  bool contains(uint64_t addr) const { return small_.count(addr) || large_.count(addr); }

 private:
  struct Page {
    std::map<uint64_t, uint64_t> free_runs;  // offset -> length
    int live = 0;
  };
  std::map<uint64_t, Page> pages_;                            // page base -> page
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> small_;  // addr -> (page base, size)
  std::map<uint64_t, uint64_t> large_;                        // addr -> bytes (whole pages)
  uint64_t charged_ = 0;
};

}  // namespace fc
