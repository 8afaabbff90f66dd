// See allocator_model.h. Function by function, the DeviceCachingAllocator methods of the same name
// (PyTorch 2.6), less what one stream, no CUDA graphs and no events leave out.
#include "allocator_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace vt::analyzer {

namespace {

constexpr uint64_t kMinBlockSize = 512;           // every size is rounded to at least 512 B
constexpr uint64_t kSmallSize = 1ull << 20;       // the largest "small" request
constexpr uint64_t kSmallBuffer = 2ull << 20;     // small requests share 2 MiB segments
constexpr uint64_t kLargeBuffer = 20ull << 20;    // 1-10 MiB requests share 20 MiB segments
constexpr uint64_t kMinLargeAlloc = 10ull << 20;  // from here a segment is the request rounded
constexpr uint64_t kRoundLarge = 2ull << 20;      // ... to 2 MiB

uint64_t allocation_size(uint64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

// PyTorch's roundup_power2_next_division.
uint64_t next_division(uint64_t size, uint64_t divisions) {
  if (is_pow2(size)) return size;
  uint64_t floor = 1ull << (63 - __builtin_clzll(size));
  uint64_t step = floor >> (63 - __builtin_clzll(divisions));
  if (step == 0) return floor << 1;
  uint64_t down = size & ~(step - 1);
  return down == size ? size : down + step;
}

}  // namespace

// An expandable segment: address space for 1 1/8 of the device, mapped page by page.
struct CachingAllocatorModel::Segment {
  uint64_t base = 0, page = 0;
  std::vector<bool> mapped;  // per page
  uint64_t size() const { return page * mapped.size(); }
};

struct CachingAllocatorModel::Block {
  uint64_t ptr = 0, size = 0;
  uint64_t stream = 0;  // the stream it belongs to (a split or merged piece keeps its segment's)
  bool allocated = false;
  bool is_mapped = true;  // false: unmapped address space of an expandable segment
  Block *prev = nullptr, *next = nullptr;
  Pool* pool = nullptr;
  Segment* segment = nullptr;  // expandable, else null
  int64_t gc_base = 0;
  bool is_split() const { return prev || next; }
};

namespace {
struct BySize {
  bool operator()(const CachingAllocatorModel::Block* a, const CachingAllocatorModel::Block* b) const;
};
struct ByAddress {
  bool operator()(const CachingAllocatorModel::Block* a, const CachingAllocatorModel::Block* b) const;
};
}  // namespace

struct CachingAllocatorModel::Pool {
  explicit Pool(bool small) : is_small(small) {}
  std::set<Block*, BySize> blocks;
  std::set<Block*, ByAddress> unmapped;
  bool is_small;
  int64_t free_block_calls = 0;  // get_free_blocks_call_count: the garbage collector's clock
  void insert(Block* b) {
    b->gc_base = free_block_calls;
    blocks.insert(b);
  }
};

namespace {
// As PyTorch's BlockComparatorSize and BlockComparatorAddress: the stream first, so a search
// keyed by (stream, size) finds the best fit of that stream's blocks only.
bool BySize::operator()(const CachingAllocatorModel::Block* a, const CachingAllocatorModel::Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
}
bool ByAddress::operator()(const CachingAllocatorModel::Block* a, const CachingAllocatorModel::Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  return a->ptr < b->ptr;
}
}  // namespace

struct CachingAllocatorModel::Params {
  uint64_t size = 0, alloc_size = 0, stream = 0;
  Pool* pool = nullptr;
  Block* block = nullptr;
};

CachingAllocatorModel::CachingAllocatorModel(const AllocConf& conf, uint64_t device_total, double memory_fraction,
                                             std::function<uint64_t()> others)
    : conf_(conf),
      total_(device_total),
      allowed_(memory_fraction > 0 ? uint64_t(memory_fraction * double(device_total)) : device_total),
      set_fraction_(memory_fraction > 0),
      others_(std::move(others)),
      small_(new Pool(true)),
      large_(new Pool(false)) {}

CachingAllocatorModel::~CachingAllocatorModel() {
  // Every block is in a pool, or allocated, or a neighbour of one: delete each chain once, from its head.
  std::set<Block*> heads;
  auto add = [&](Block* b) {
    while (b->prev) b = b->prev;
    heads.insert(b);
  };
  for (Pool* p : {small_.get(), large_.get()}) {
    for (Block* b : p->blocks) add(b);
    for (Block* b : p->unmapped) add(b);
  }
  for (Block* b : allocated_) add(b);
  for (Block* h : heads)
    for (Block* b = h; b;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
}

uint64_t CachingAllocatorModel::round_size(uint64_t size) const {
  if (size < kMinBlockSize) return kMinBlockSize;
  uint64_t divisions = conf_.divisions_for(size);
  if (divisions > 1 && size > kMinBlockSize * divisions) return next_division(size, divisions);
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

bool CachingAllocatorModel::device_fits(uint64_t bytes) const {
  uint64_t others = others_ ? others_() : 0;
  return stats_.reserved + others + bytes <= total_;
}

void CachingAllocatorModel::note_reserved() {
  if (stats_.reserved > stats_.peak_reserved) {
    stats_.peak_reserved = stats_.reserved;
    stats_.unallocated_at_peak = stats_.reserved - stats_.allocated;
    stats_.largest_free_at_peak = largest_free_block();
  }
}

uint64_t CachingAllocatorModel::largest_free_block() const {
  uint64_t best = 0;
  for (const Pool* p : {small_.get(), large_.get()}) {
    if (p->blocks.empty()) continue;
    if ((*p->blocks.begin())->stream == (*p->blocks.rbegin())->stream) {  // one stream: the last is the largest
      best = std::max(best, (*p->blocks.rbegin())->size);
      continue;
    }
    for (const Block* b : p->blocks) best = std::max(best, b->size);
  }
  return best;
}

void CachingAllocatorModel::reset_peaks() {
  stats_.peak_allocated = stats_.allocated;
  stats_.peak_reserved = stats_.reserved;
  stats_.unallocated_at_peak = stats_.reserved - stats_.allocated;
  stats_.largest_free_at_peak = largest_free_block();
}

uint64_t CachingAllocatorModel::block_size(uint64_t handle) const {
  return handle ? reinterpret_cast<const Block*>(handle)->size : 0;
}

uint64_t CachingAllocatorModel::malloc(uint64_t orig_size, uint64_t stream) {
  Params p;
  p.stream = stream;
  p.size = round_size(orig_size);
  p.pool = p.size <= kSmallSize ? small_.get() : large_.get();
  p.alloc_size = allocation_size(p.size);
  bool found = get_free_block(p);
  if (!found) {
    if (set_fraction_ && conf_.garbage_collection_threshold > 0) garbage_collect();
    found = alloc_block(p) || (release_available_cached_blocks(p) && alloc_block(p));
    if (!found) {
      stats_.flushes++;
      release_cached_blocks();
      found = alloc_block(p);
    }
  }
  if (!found) {
    stats_.ooms++;
    return 0;
  }
  return reinterpret_cast<uint64_t>(alloc_found_block(p));
}

bool CachingAllocatorModel::get_free_block(Params& p) {
  Pool& pool = *p.pool;
  if (set_fraction_ && conf_.garbage_collection_threshold > 0) ++pool.free_block_calls;
  Block key;
  key.size = p.size;
  key.stream = p.stream;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
  if ((*it)->segment) {
    if (conf_.expandable_segments) {
      // Best fit counts what an expandable block can grow into (the unmapped space after it).
      auto expandable_size = [](Block* b) { return b->size + (b->next && !b->next->is_mapped ? b->next->size : 0); };
      auto next = std::next(it);
      while ((*it)->segment && next != pool.blocks.end() && (*next)->stream == p.stream &&
             expandable_size(*next) < expandable_size(*it))
        it = next++;
    } else {
      do ++it;
      while (it != pool.blocks.end() && (*it)->segment && (*it)->stream == p.stream);
      if (it == pool.blocks.end() || (*it)->stream != p.stream) return false;
    }
  }
  if (p.size < conf_.max_split_size && (*it)->size >= conf_.max_split_size) return false;
  if (p.size >= conf_.max_split_size && (*it)->size >= p.size + conf_.max_non_split_rounding) return false;
  p.block = *it;
  pool.blocks.erase(it);
  return true;
}

bool CachingAllocatorModel::alloc_block(Params& p) {
  if (set_fraction_ && stats_.reserved + p.alloc_size > allowed_) return false;
  if (conf_.expandable_segments) {
    p.block = try_allocate_expandable(*p.pool, p.size, p.stream);
    return p.block != nullptr;
  }
  if (!device_fits(p.alloc_size)) return false;
  Block* b = new Block;
  b->ptr = segment_address(p.alloc_size);
  if (getenv("VT_WHATIF_DEBUG")) fprintf(stderr, "seg %s %llu\n", conf_.text.c_str(), (unsigned long long)(p.alloc_size >> 20));
  b->size = p.alloc_size;
  b->stream = p.stream;
  b->pool = p.pool;
  stats_.reserved += p.alloc_size;
  stats_.segments_allocated++;
  p.block = b;
  return true;
}

bool CachingAllocatorModel::release_available_cached_blocks(const Params& p) {
  if (conf_.max_split_size == AllocConf::kNoLimit) return false;
  Pool& pool = *p.pool;
  Block key;
  key.size = std::max<uint64_t>(p.size, conf_.max_split_size);
  key.stream = p.stream;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->segment || (*it)->stream != p.stream) {
    // No single block is large enough: free the stream's oversize blocks, the largest first
    // (never an expandable segment's: those are only unmapped, by the flush).
    if (it == pool.blocks.begin()) return false;
    uint64_t released = 0;
    --it;
    while (released < key.size && (*it)->size >= conf_.max_split_size && (*it)->stream == p.stream) {
      auto cur = it;
      bool first = cur == pool.blocks.begin();
      if (!first) --it;
      if (!(*cur)->segment) {
        released += (*cur)->size;
        release_block(*cur);
      }
      if (first) break;
    }
    return released >= key.size;
  }
  release_block(*it);
  return true;
}

// Where the driver puts a new segment: the address of the last freed segment of the same size
// (drivers reuse virtual addresses), else new address space above the rest.
uint64_t CachingAllocatorModel::segment_address(uint64_t size) {
  auto it = freed_addresses_.find(size);
  if (it != freed_addresses_.end() && !it->second.empty()) {
    uint64_t a = it->second.back();
    it->second.pop_back();
    return a;
  }
  uint64_t a = next_address_;
  next_address_ += (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
  return a;
}

void CachingAllocatorModel::release_block(Block* b) {
  // Only whole cudaMalloc'd segments (unsplit, not expandable) come here.
  freed_addresses_[b->size].push_back(b->ptr);
  stats_.reserved -= b->size;
  b->pool->blocks.erase(b);
  delete b;
}

void CachingAllocatorModel::release_cached_blocks() {
  release_blocks(*large_);
  release_blocks(*small_);
}

void CachingAllocatorModel::release_blocks(Pool& pool) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* b = *it++;
    if (b->segment) to_unmap.push_back(b);
    else if (!b->prev && !b->next) release_block(b);
  }
  for (Block* b : to_unmap) {
    unmap_block(b);
    if (!b->prev && !b->next) {  // the whole segment is unmapped: its address space goes too
      auto seg = std::find_if(expandable_.begin(), expandable_.end(), [&](auto& s) { return s.get() == b->segment; });
      pool.unmapped.erase(b);
      if (seg != expandable_.end()) expandable_.erase(seg);
      delete b;
    }
  }
}

void CachingAllocatorModel::garbage_collect() {
  uint64_t threshold = uint64_t(conf_.garbage_collection_threshold * double(allowed_));
  if (stats_.reserved <= threshold) return;
  uint64_t target = stats_.reserved - threshold, reclaimed = 0;
  Pool& pool = *large_;
  auto age = [&](Block* b) { return uint64_t(pool.free_block_calls - b->gc_base); };
  uint64_t total_age = 0;
  int freeable = 0;
  for (Block* b : pool.blocks)  // (an expandable segment's free block is split: its unmapped rest follows)
    if (!b->is_split() && !b->segment) total_age += age(b), ++freeable;
  if (freeable == 0) return;
  bool freed = true;
  while (reclaimed < target && freed && freeable > 0) {
    double threshold_age = double(total_age) / freeable;
    freed = false;
    for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
      Block* b = *it++;
      if (!b->is_split() && !b->segment && double(age(b)) >= threshold_age) {
        freed = true;
        reclaimed += b->size;
        total_age -= age(b);
        freeable--;
        release_block(b);
      }
    }
  }
}

CachingAllocatorModel::Block* CachingAllocatorModel::alloc_found_block(Params& p) {
  Block* block = p.block;
  uint64_t remaining_size = block->size - p.size;
  bool split = (block->pool->is_small || conf_.expandable_segments)
                   ? remaining_size >= kMinBlockSize
                   : (p.size < conf_.max_split_size && remaining_size > kSmallSize);
  if (split) {
    Block* remaining = block;
    block = new Block;
    block->ptr = remaining->ptr;
    block->size = p.size;
    block->stream = remaining->stream;
    block->pool = remaining->pool;
    block->segment = remaining->segment;
    block->prev = remaining->prev;
    if (block->prev) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->ptr += p.size;
    remaining->size -= p.size;
    remaining->pool->insert(remaining);
  }
  block->allocated = true;
  allocated_.insert(block);
  stats_.allocated += block->size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  note_reserved();
  return block;
}

void CachingAllocatorModel::free(uint64_t handle) {
  if (!handle) return;
  Block* b = reinterpret_cast<Block*>(handle);
  if (!allocated_.erase(b)) return;  // not a live handle: nothing to free
  b->allocated = false;
  stats_.allocated -= b->size;
  free_block(b);
}

void CachingAllocatorModel::free_block(Block* b) {
  Pool& pool = *b->pool;
  try_merge(b, b->prev, pool);
  try_merge(b, b->next, pool);
  pool.insert(b);
}

uint64_t CachingAllocatorModel::try_merge(Block* dst, Block* src, Pool& pool) {
  if (!src || src->allocated || dst->is_mapped != src->is_mapped) return 0;
  if (dst->prev == src) {
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
  } else {
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  uint64_t subsumed = src->size;
  dst->size += subsumed;
  if (src->is_mapped) pool.blocks.erase(src);
  else pool.unmapped.erase(src);
  delete src;
  return subsumed;
}

void CachingAllocatorModel::empty_cache() { release_cached_blocks(); }

// --- expandable segments ---

CachingAllocatorModel::Block* CachingAllocatorModel::find_expandable_block(Pool& pool, uint64_t size, uint64_t stream) {
  auto allocatable = [](Block* b) { return b && !b->allocated; };
  auto has_room = [&](Block* b) {
    uint64_t bytes = 0;
    while (bytes < size && allocatable(b)) bytes += b->size, b = b->next;
    return bytes >= size;
  };
  Block key;  // the stream's unmapped blocks, lowest address first
  key.stream = stream;
  for (auto it = pool.unmapped.lower_bound(&key); it != pool.unmapped.end() && (*it)->stream == stream; ++it) {
    Block* c = *it;
    if (allocatable(c->prev)) c = c->prev;
    if (has_room(c)) return c;
  }
  auto seg = std::make_unique<Segment>();
  seg->page = pool.is_small ? kSmallBuffer : kLargeBuffer;
  uint64_t space = total_ + total_ / 8;
  seg->mapped.assign((space + seg->page - 1) / seg->page, false);
  seg->base = next_address_;
  next_address_ += seg->size();
  Block* c = new Block;
  c->ptr = seg->base;
  c->size = seg->size();
  c->stream = stream;
  c->pool = &pool;
  c->is_mapped = false;
  c->segment = seg.get();
  expandable_.push_back(std::move(seg));
  pool.unmapped.insert(c);
  return c;
}

bool CachingAllocatorModel::map_block(Block* to_map, uint64_t size) {
  Segment& s = *to_map->segment;
  uint64_t begin = (to_map->ptr - s.base) / s.page;
  uint64_t end = (to_map->ptr + size - s.base + s.page - 1) / s.page;
  uint64_t bytes = (end - begin) * s.page;
  if (end > s.mapped.size() || !device_fits(bytes)) return false;  // cuMemCreate ran out of memory
  for (uint64_t i = begin; i < end; i++) s.mapped[i] = true;
  Pool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->is_mapped = true;
  if (bytes < to_map->size) {
    Block* rest = new Block;
    rest->ptr = to_map->ptr + bytes;
    rest->size = to_map->size - bytes;
    rest->stream = to_map->stream;
    rest->pool = &pool;
    rest->is_mapped = false;
    rest->segment = to_map->segment;
    rest->prev = to_map;
    rest->next = to_map->next;
    if (rest->next) rest->next->prev = rest;
    to_map->next = rest;
    pool.unmapped.insert(rest);
    to_map->size = bytes;
  }
  try_merge(to_map, to_map->prev, pool);
  try_merge(to_map, to_map->next, pool);
  pool.insert(to_map);
  stats_.reserved += bytes;
  stats_.segments_allocated++;
  return true;
}

CachingAllocatorModel::Block* CachingAllocatorModel::try_allocate_expandable(Pool& pool, uint64_t size,
                                                                            uint64_t stream) {
  Block* c = find_expandable_block(pool, size, stream);
  if (!c->is_mapped && !map_block(c, std::min(c->size, size))) return nullptr;
  while (c->size < size) {
    Block* next = c->next;
    if (!map_block(next, std::min(size - c->size, next->size))) return nullptr;
    c = next;
  }
  pool.blocks.erase(c);
  return c;
}

void CachingAllocatorModel::unmap_block(Block* b) {
  Segment& s = *b->segment;
  uint64_t begin = (b->ptr - s.base + s.page - 1) / s.page;  // whole free pages only
  uint64_t end = (b->ptr + b->size - s.base) / s.page;
  if (begin >= end) return;
  Pool& pool = *b->pool;
  pool.blocks.erase(b);
  uint64_t unmapped_ptr = s.base + begin * s.page, unmapped_size = (end - begin) * s.page;
  uint64_t before = unmapped_ptr - b->ptr;
  if (before > 0) {
    Block* f = new Block;
    f->ptr = b->ptr;
    f->size = before;
    f->stream = b->stream;
    f->pool = &pool;
    f->segment = b->segment;
    f->prev = b->prev;
    if (f->prev) f->prev->next = f;
    f->next = b;
    b->prev = f;
    pool.insert(f);
  }
  uint64_t after = b->size - (before + unmapped_size);
  if (after > 0) {
    Block* f = new Block;
    f->ptr = unmapped_ptr + unmapped_size;
    f->size = after;
    f->stream = b->stream;
    f->pool = &pool;
    f->segment = b->segment;
    f->next = b->next;
    if (f->next) f->next->prev = f;
    f->prev = b;
    b->next = f;
    pool.insert(f);
  }
  for (uint64_t i = begin; i < end; i++) s.mapped[i] = false;
  b->ptr = unmapped_ptr;
  b->size = unmapped_size;
  b->is_mapped = false;
  try_merge(b, b->prev, pool);
  try_merge(b, b->next, pool);
  pool.unmapped.insert(b);
  stats_.reserved -= unmapped_size;
}

}  // namespace vt::analyzer
