// See stack_frames.h.
#include "stack_frames.h"

#include <algorithm>
#include <cstring>

namespace vt::analyzer {

uint64_t* StackFrames::begin_add(uint32_t id, uint32_t n) {
  pending_ = false;
  if (n > kMaxFrames || contains(id)) return nullptr;
  // A stack's frames never straddle two blocks: start a new one when they do not fit (the tail
  // left is under one stack's frames). Blocks are allocated, not zeroed: the kernel
  // maps their pages as frames are written.
  if (blocks_.empty() || used_ + n > kBlockFrames) {
    blocks_.emplace_back(new uint64_t[kBlockFrames]);
    used_ = 0;
  }
  pending_id_ = id;
  pending_n_ = n;
  pending_off_ = (uint64_t(blocks_.size() - 1) << kBlockShift) + used_;
  pending_ = true;
  return blocks_.back().get() + used_;
}

void StackFrames::commit() {
  if (!pending_) return;
  pending_ = false;
  used_ += pending_n_;
  uint64_t e = kPresent | (pending_off_ << kLenBits) | pending_n_;
  uint32_t id = pending_id_;
  // Ids are dense from 1: the array grows with them (doubling). An id far beyond the stacks
  // seen (a damaged or hand-made trace: any 32-bit value) goes to the hash instead.
  if (id >= dense_.size() && uint64_t(id) < 2 * uint64_t(count_) + 65536)
    dense_.resize(std::max<size_t>(size_t(id) + 1, dense_.size() * 2), 0);
  if (id < dense_.size())
    dense_[id] = e;
  else
    sparse_.emplace(id, e);
  ++count_;
}

bool StackFrames::add(uint32_t id, const uint64_t* frames, uint32_t n) {
  uint64_t* out = begin_add(id, n);
  if (!out) return false;
  if (n) memcpy(out, frames, n * sizeof *frames);
  commit();
  return true;
}

size_t StackFrames::bytes() const {
  return blocks_.size() * kBlockFrames * sizeof(uint64_t) + dense_.capacity() * sizeof(uint64_t) +
         sparse_.size() * 2 * sizeof(AddressMap<uint64_t>::Slot);
}

}  // namespace vt::analyzer
