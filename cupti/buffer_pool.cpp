// See buffer_pool.h.
#include "buffer_pool.h"

namespace vt::cupti {

void BufferPool::init(uint8_t* base, size_t size, int count) {
  base_ = base;
  size_ = size;
  count_ = count > kMaxBuffers ? kMaxBuffers : count;
  for (int i = 0; i < kMaxBuffers; ++i) slots_[i].state.store(kFree, std::memory_order_relaxed);
}

uint8_t* BufferPool::lend() {
  uint32_t start = hint_.fetch_add(1, std::memory_order_relaxed);
  for (int k = 0; k < count_; ++k) {
    int i = int((start + uint32_t(k)) % uint32_t(count_));
    uint32_t expected = kFree;
    if (slots_[i].state.compare_exchange_strong(expected, kLent, std::memory_order_acquire))
      return base_ + size_t(i) * size_;
  }
  refused_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

bool BufferPool::complete(uint8_t* buffer, size_t valid) {
  if (!base_ || buffer < base_ || buffer >= base_ + size_t(count_) * size_) return false;
  size_t off = size_t(buffer - base_);
  if (off % size_ != 0) return false;
  Slot& s = slots_[off / size_];
  if (s.state.load(std::memory_order_relaxed) != kLent) return false;
  s.valid = valid > size_ ? size_ : valid;
  s.seq = seq_.fetch_add(1, std::memory_order_relaxed);
  s.state.store(kDone, std::memory_order_release);
  return true;
}

bool BufferPool::reclaim(uint8_t* buffer) {
  if (!base_ || buffer < base_ || buffer >= base_ + size_t(count_) * size_) return false;
  size_t off = size_t(buffer - base_);
  if (off % size_ != 0) return false;
  uint32_t expected = kLent;
  return slots_[off / size_].state.compare_exchange_strong(expected, kFree, std::memory_order_acq_rel);
}

int BufferPool::reclaim_all_lent() {
  int n = 0;
  for (int i = 0; i < count_; ++i) {
    uint32_t expected = kLent;
    n += slots_[i].state.compare_exchange_strong(expected, kFree, std::memory_order_acq_rel);
  }
  return n;
}

int BufferPool::drain(DrainFn fn, void* ctx) {
  int drained = 0;
  for (;;) {
    // Oldest completed buffer first (count_ is small: a scan is cheaper than a queue).
    int pick = -1;
    uint64_t best = 0;
    for (int i = 0; i < count_; ++i) {
      if (slots_[i].state.load(std::memory_order_acquire) != kDone) continue;
      if (pick < 0 || slots_[i].seq < best) {
        pick = i;
        best = slots_[i].seq;
      }
    }
    if (pick < 0) return drained;
    Slot& s = slots_[pick];
    s.state.store(kDraining, std::memory_order_relaxed);
    fn(ctx, base_ + size_t(pick) * size_, s.valid);
    s.state.store(kFree, std::memory_order_release);
    ++drained;
  }
}

int BufferPool::in_state(int state) const {
  int n = 0;
  for (int i = 0; i < count_; ++i) n += slots_[i].state.load(std::memory_order_relaxed) == uint32_t(state);
  return n;
}

}  // namespace vt::cupti
