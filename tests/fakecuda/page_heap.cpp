// page_heap.cpp — see page_heap.h. Small blocks go first-fit into the lowest page with room,
// so a freed slot is handed out again before a new page is opened (the driver's allocator
// reuses its pages the same way); a page's free runs are coalesced on free.
#include "page_heap.h"

#include "state.h"

namespace fc {

uint64_t PageHeap::alloc(AddressSpace &va, Device *dev, uint64_t size) {
  if (size <= kSmallMax) {
    for (auto &[base, page] : pages_) {
      for (auto run = page.free_runs.begin(); run != page.free_runs.end(); ++run) {
        if (run->second < size) continue;
        const uint64_t off = run->first, len = run->second;
        page.free_runs.erase(run);
        if (len > size) page.free_runs[off + size] = len - size;
        page.live++;
        small_[base + off] = {base, size};
        return base + off;
      }
    }
    if (dev && charge(*dev, kPage)) return 0;
    const uint64_t base = va.alloc(kPage, kPage);
    if (!base) {
      if (dev) uncharge(*dev, kPage);
      return 0;
    }
    Page &page = pages_[base];
    if (size < kPage) page.free_runs[size] = kPage - size;
    page.live = 1;
    small_[base] = {base, size};
    charged_ += kPage;
    return base;
  }
  const uint64_t bytes = (size + kPage - 1) / kPage * kPage;
  if (dev && charge(*dev, bytes)) return 0;
  const uint64_t a = va.alloc(bytes, kPage);
  if (!a) {
    if (dev) uncharge(*dev, bytes);
    return 0;
  }
  large_[a] = bytes;
  charged_ += bytes;
  return a;
}

void PageHeap::free(AddressSpace &va, Device *dev, uint64_t addr) {
  auto l = large_.find(addr);
  if (l != large_.end()) {
    if (dev) uncharge(*dev, l->second);
    charged_ -= l->second;
    va.free(addr, l->second);
    large_.erase(l);
    return;
  }
  auto s = small_.find(addr);
  if (s == small_.end()) return;
  const uint64_t base = s->second.first, size = s->second.second;
  small_.erase(s);
  Page &page = pages_[base];
  if (--page.live == 0) {
    if (dev) uncharge(*dev, kPage);
    charged_ -= kPage;
    va.free(base, kPage);
    pages_.erase(base);
    return;
  }
  // Return the run and merge it with its neighbours.
  uint64_t off = addr - base, len = size;
  auto next = page.free_runs.lower_bound(off);
  if (next != page.free_runs.end() && next->first == off + len) {
    len += next->second;
    next = page.free_runs.erase(next);
  }
  if (next != page.free_runs.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      len += prev->second;
      page.free_runs.erase(prev);
    }
  }
  page.free_runs[off] = len;
}

}  // namespace fc
