// See torch_free_blocks.h.
#include "torch_free_blocks.h"

#include <algorithm>

namespace vt::analyzer {

TorchFreeBlocks::Segment* TorchFreeBlocks::segment_of(uint64_t addr, uint64_t* start) {
  auto it = segments_.upper_bound(addr);
  if (it == segments_.begin()) return nullptr;
  --it;
  if (addr >= it->second.end) return nullptr;
  *start = it->first;
  return &it->second;
}

TorchFreeBlocks::Pieces::iterator TorchFreeBlocks::containing(Pieces& pieces, uint64_t addr) {
  auto it = pieces.upper_bound(addr);
  if (it == pieces.begin()) return pieces.end();
  --it;
  return addr < it->first + it->second.size ? it : pieces.end();
}

// What lies in [lo, hi) goes; a piece reaching outside keeps its outside parts, and its request.
void TorchFreeBlocks::erase_range(Pieces& pieces, uint64_t lo, uint64_t hi) {
  auto it = pieces.upper_bound(lo);
  if (it != pieces.begin() && std::prev(it)->first + std::prev(it)->second.size > lo) --it;
  while (it != pieces.end() && it->first < hi) {
    const uint64_t p_lo = it->first, p_hi = it->first + it->second.size;
    const Piece p = it->second;
    it = pieces.erase(it);
    if (p_lo < lo) pieces[p_lo] = Piece{lo - p_lo, p.requested};
    if (p_hi > hi) it = pieces.emplace(hi, Piece{p_hi - hi, p.requested}).first;
  }
}

void TorchFreeBlocks::insert_merged(Pieces& pieces, uint64_t addr, Piece p, uint64_t seg_lo, uint64_t seg_hi) {
  erase_range(pieces, addr, addr + p.size);
  auto next = pieces.find(addr + p.size);
  if (next != pieces.end() && next->first < seg_hi) {
    p.size += next->second.size;
    pieces.erase(next);
  }
  auto it = pieces.lower_bound(addr);
  if (it != pieces.begin()) {
    auto prev = std::prev(it);
    if (prev->first >= seg_lo && prev->first + prev->second.size == addr) {
      addr = prev->first;
      p.size += prev->second.size;
      pieces.erase(prev);
    }
  }
  pieces[addr] = p;
}

void TorchFreeBlocks::segment_alloc(uint64_t addr, uint64_t size, uint32_t stack) {
  if (size == 0) return;
  segment_free(addr);
  segments_[addr] = Segment{addr + size, false, stack, true};
  erase_range(free_, addr, addr + size);
  free_[addr] = Piece{size, 0};
}

void TorchFreeBlocks::segment_free(uint64_t addr) {
  auto it = segments_.find(addr);
  if (it == segments_.end()) return;
  erase_range(free_, addr, it->second.end);
  erase_range(unmapped_, addr, it->second.end);
  segments_.erase(it);
}

void TorchFreeBlocks::reservation(uint64_t addr, uint64_t size) {
  if (size == 0) return;
  segment_free(addr);
  segments_[addr] = Segment{addr + size, true, 0, false};
  erase_range(unmapped_, addr, addr + size);
  unmapped_[addr] = Piece{size, 0};
}

void TorchFreeBlocks::reservation_free(uint64_t addr) { segment_free(addr); }

// map_block: the unmapped block's object becomes the mapped pages (its request), the unmapped
// pages after them a new block; the mapped pages absorb the free blocks beside them.
void TorchFreeBlocks::map(uint64_t addr, uint64_t size, uint32_t stack) {
  uint64_t lo;
  Segment* seg = segment_of(addr, &lo);
  if (!seg || !seg->expandable || size == 0) return;
  const uint64_t hi = addr + std::min(size, seg->end - addr);  // (a damaged size does not wrap)
  auto first = containing(unmapped_, addr);
  const uint64_t requested = first != unmapped_.end() ? first->second.requested : 0;
  uint64_t after = 0;  // where the last unmapped block it maps into ends
  for (auto it = first != unmapped_.end() ? first : unmapped_.lower_bound(addr); it != unmapped_.end() && it->first < hi; ++it)
    after = std::max(after, it->first + it->second.size);
  erase_range(unmapped_, addr, after > hi ? after : hi);
  if (after > hi) unmapped_[hi] = Piece{after - hi, 0};
  insert_merged(free_, addr, Piece{hi - addr, requested}, lo, seg->end);
  if (addr == lo && !seg->has_stack) seg->stack = stack, seg->has_stack = true;
}

// unmap_block: the free block's object becomes the unmapped pages (its request, merged with the
// unmapped blocks beside them); the mapped pages left before and after are new blocks.
void TorchFreeBlocks::unmap(uint64_t addr, uint64_t size) {
  uint64_t lo;
  Segment* seg = segment_of(addr, &lo);
  if (!seg || !seg->expandable || size == 0) return;
  const uint64_t hi = addr + std::min(size, seg->end - addr);  // (a damaged size does not wrap)
  auto b = containing(free_, addr);
  const uint64_t requested = b != free_.end() ? b->second.requested : 0;
  if (b != free_.end()) {
    const uint64_t b_lo = b->first, b_hi = b->first + b->second.size;
    free_.erase(b);
    if (b_lo < addr) free_[b_lo] = Piece{addr - b_lo, 0};
    if (b_hi > hi) free_[hi] = Piece{b_hi - hi, 0};
  }
  erase_range(free_, addr, hi);
  insert_merged(unmapped_, addr, Piece{hi - addr, requested}, lo, seg->end);
}

// alloc_found_block: a block that fits whole is handed out as it is; one that is split leaves
// its free rest, its own object, after the new block.
void TorchFreeBlocks::alloc(uint64_t addr, uint64_t size) {
  uint64_t lo;
  Segment* seg = segment_of(addr, &lo);
  auto f = containing(free_, addr);
  if (!seg || f == free_.end()) return;
  const uint64_t f_lo = f->first, f_hi = f->first + f->second.size;
  const Piece p = f->second;
  free_.erase(f);
  if (f_lo == addr && f_hi == addr + size) return;
  if (f_lo == lo) seg->has_stack = false;  // the segment's first block was split: a new one heads it
  if (f_lo < addr) free_[f_lo] = Piece{addr - f_lo, p.requested};
  if (f_hi > addr + size) free_[addr + size] = Piece{f_hi - (addr + size), p.requested};
}

void TorchFreeBlocks::free(uint64_t addr, uint64_t size, uint64_t requested) {
  uint64_t lo;
  Segment* seg = segment_of(addr, &lo);
  if (!seg || size == 0) return;
  insert_merged(free_, addr, Piece{std::min(size, seg->end - addr), requested}, lo, seg->end);
}

uint64_t TorchFreeBlocks::free_requested(uint64_t addr) const {
  auto it = free_.find(addr);
  return it != free_.end() ? it->second.requested : 0;
}

uint32_t TorchFreeBlocks::segment_stack(uint64_t addr) const {
  auto it = segments_.find(addr);
  return it != segments_.end() && it->second.has_stack ? it->second.stack : 0;
}

}  // namespace vt::analyzer
