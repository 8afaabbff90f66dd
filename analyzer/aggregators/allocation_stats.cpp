// See allocation_stats.h.
#include "aggregators/allocation_stats.h"

#include <algorithm>

#include "op_table.h"

namespace vt::analyzer {

void AllocationStatsAggregator::enter(const Record& r, uint64_t key, uint64_t size) {
  // A key seen live again lost its free (accounting rule 3): the old one is not counted freed.
  // (Checked here only, for allocations that enter the list: an old entry re-allocated by a small
  // one can still be marked freed by that one's free, a damaged trace's case.)
  for (uint64_t& k : keys_)
    if (k == key) k = 0;

  size_t slot = largest_.size();
  if (largest_.size() >= keep_) {
    auto smallest = std::min_element(largest_.begin(), largest_.end(),
                                      [](const LargeAllocation& a, const LargeAllocation& b) { return a.bytes < b.bytes; });
    if (smallest == largest_.end() || smallest->bytes >= size) return;
    slot = size_t(smallest - largest_.begin());
  } else {
    largest_.emplace_back();
    keys_.push_back(0);
  }
  LargeAllocation& a = largest_[slot];
  a = LargeAllocation{};
  a.bytes = size;
  a.t_ns = r.t_ns;
  a.device = r.device;
  a.kind = kind_name(r.op->kind);
  a.op = r.op->name;
  a.stack_id = r.stack;
  keys_[slot] = key;
  if (largest_.size() == keep_)
    min_largest_ = std::min_element(largest_.begin(), largest_.end(), [](const LargeAllocation& x, const LargeAllocation& y) {
                     return x.bytes < y.bytes;
                   })->bytes;
}

void AllocationStatsAggregator::freed(uint64_t key, uint64_t t) {
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key) {
      largest_[i].freed = true;
      largest_[i].freed_t_ns = t;
      keys_[i] = 0;
      return;
    }
}

void AllocationStatsAggregator::finish(TraceReport* rep) {
  AllocationStats& s = rep->allocations;
  s.count = count_;
  s.bytes = bytes_;
  s.freed = freed_;
  s.largest = largest_;
  std::sort(s.largest.begin(), s.largest.end(), [](const LargeAllocation& a, const LargeAllocation& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.t_ns < b.t_ns;
  });
  int lo = 0, hi = 15;
  while (lo < 16 && !histogram_[lo]) ++lo;
  while (hi >= 0 && !histogram_[hi]) --hi;
  for (int b = lo; b <= hi; ++b)
    s.histogram.push_back({b == 0 ? 0 : 1024ull << (2 * (b - 1)), b == 15 ? 0 : 1024ull << (2 * b), histogram_[b],
                           histogram_bytes_[b]});
}

}  // namespace vt::analyzer
