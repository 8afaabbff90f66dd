// See thread_shares.h.
#include "thread_shares.h"

#include <algorithm>

namespace vt::analyzer {

void ThreadShares::slow(uint32_t row, uint32_t tid, int sign, uint64_t bytes, uint64_t row_bytes) {
  if (row >= owner_.size()) {
    owner_.resize(std::max<size_t>(size_t(row) + 1, owner_.size() * 2), 0);
    first_owner_.resize(owner_.size(), 0);
  }
  uint32_t& owner = owner_[row];
  if (owner == 0) {  // the row's first allocation
    owner = tid + 1;
    first_owner_[row] = tid + 1;
    if (!first_) first_ = tid + 1;
    else if (first_ != tid + 1) several_ = true;
    return;
  }
  if (!(owner & kShared)) {  // a second thread: what the row holds so far is its one thread's
    several_ = true;
    Block b{};
    b.row = row;
    b.tid[0] = owner;
    b.bytes[0] = row_bytes;
    owner = kShared | uint32_t(blocks_.size());
    blocks_.push_back(b);
  }
  Block& b = blocks_[owner & ~kShared];
  for (int i = 0; i < kSlots; ++i) {
    if (b.tid[i] == tid + 1) return add(b.bytes[i], sign, bytes);
    if (b.tid[i] == 0) {
      b.tid[i] = tid + 1;
      return add(b.bytes[i], sign, bytes);
    }
  }
  add(overflow_[uint64_t(row) << 32 | tid], sign, bytes);
}

uint32_t ThreadShares::threads_at(uint32_t row) const {
  if (row >= owner_.size() || owner_[row] == 0) return 0;
  if (!(owner_[row] & kShared)) return 1;
  uint32_t n = 0;
  for_each_shared([&](uint32_t r, uint32_t, uint64_t) { n += r == row; });
  return n;
}

std::vector<std::pair<uint32_t, uint64_t>> ThreadShares::of(uint32_t row, uint64_t row_bytes) const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  uint32_t tid = 0;
  if (one_owner(row, &tid)) {
    out.push_back({tid, row_bytes});
    return out;
  }
  if (row >= owner_.size() || !(owner_[row] & kShared)) return out;
  for_each_shared([&](uint32_t r, uint32_t t, uint64_t b) {
    if (r == row && b) out.push_back({t, b});
  });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  return out;
}

}  // namespace vt::analyzer
