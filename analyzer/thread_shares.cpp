// See thread_shares.h.
#include "thread_shares.h"

#include <algorithm>

namespace vt::analyzer {

void ThreadShares::slow(uint32_t row, uint32_t tid, int sign, uint64_t bytes, uint64_t row_bytes) {
  if (row >= owner_.size()) owner_.resize(std::max<size_t>(size_t(row) + 1, owner_.size() * 2), 0);
  uint32_t& owner = owner_[row];
  if (owner == 0) {  // the row's first allocation
    owner = tid + 1;
    if (!first_) first_ = tid + 1;
    else if (first_ != tid + 1) several_ = true;
    return;
  }
  if (owner != kMany) {  // a second thread: what the row holds so far is its one thread's
    several_ = true;
    bytes_[uint64_t(row) << 32 | (owner - 1)] = row_bytes;
    owner = kMany;
  }
  uint64_t& b = bytes_[uint64_t(row) << 32 | tid];
  b = sign > 0 ? b + bytes : b - std::min(b, bytes);
}

uint32_t ThreadShares::threads_at(uint32_t row) const {
  if (row >= owner_.size() || owner_[row] == 0) return 0;
  if (owner_[row] != kMany) return 1;
  uint32_t n = 0;
  for (const auto& [key, b] : bytes_) n += uint32_t(key >> 32) == row;
  return n;
}

std::vector<std::pair<uint32_t, uint64_t>> ThreadShares::of(uint32_t row, uint64_t row_bytes) const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  uint32_t tid = 0;
  if (one_owner(row, &tid)) {
    out.push_back({tid, row_bytes});
    return out;
  }
  if (row >= owner_.size() || owner_[row] != kMany) return out;
  for (const auto& [key, b] : bytes_)
    if (uint32_t(key >> 32) == row && b) out.push_back({uint32_t(key), b});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  return out;
}

}  // namespace vt::analyzer
