// The allocation-statistics aggregator (`vramtrace summary`, memray's `stats`): how many
// allocations the run made and how many bytes in all, how their sizes spread (powers of 4), and
// the largest ones with when they were made and freed. Counts successful address-keyed
// allocations and VMM physical handles (accounting.h's Allocate and CreateHandle), imports
// excepted (rule 10: another process's memory); a free counts
// when the replay holds what it frees (LiveState: no map of its own). Per event a few
// instructions: only an allocation that enters the largest, or the free of one as big, goes further.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "accounting.h"
#include "live_state.h"
#include "report_model.h"
#include "trace_reader.h"

namespace vt::analyzer {

class AllocationStatsAggregator {
 public:
  explicit AllocationStatsAggregator(size_t keep = 10) : keep_(keep) {}
  // Before each successful event (rule 1 already applied by the caller) is applied to `live`: a
  // free counts when what it frees is live there.
  // `fx`: effect_of(*r.op, r), which the pass works out once per event (a captured allocation is
  // a graph node, no memory: rule 8). (Always inlined: a call per event was ~10 instructions of
  // its ~34, issue 43.)
  void before(const Record& r, const LiveState& live) { before(r, effect_of(*r.op, r), live); }
  __attribute__((always_inline)) void before(const Record& r, Effect fx, const LiveState& live) {
    if (fx == Effect::Allocate || fx == Effect::CreateHandle) {
      if (is_imported(r.op->kind)) return;  // another process's memory (rule 10)
      uint64_t size = r.has(format::kEvSize) ? r.size : 0;
      count(size);
      // Only one that enters the largest is looked at further (most are smaller).
      if (largest_.size() < keep_ || size > min_largest_) enter(r, fx == Effect::CreateHandle ? r.aux : r.addr, size);
    } else if (fx == Effect::ReleaseHandle) {  // (a free: after(), from what LiveState removed)
      auto it = live.vmm_handles().find(r.aux);
      if (it == live.vmm_handles().end()) return;  // nothing live to free (rule 3)
      if (live.info(it->second).bucket == Bucket::Imported) return;  // not an allocation of ours
      ++freed_;
      if (it->second.size >= min_largest_) freed(it->first, r.t_ns);
    }
  }
  // After LiveState applied the event: a free, counted from the allocation it removed.
  void after(const Record& r, const LiveState& live) {
    uint64_t size;
    Bucket bucket;
    if (!live.freed_now(&size, &bucket) || bucket == Bucket::Imported) return;  // not an allocation of ours
    ++freed_;
    // Only an allocation as big as the smallest of the largest can be one of them.
    if (size >= min_largest_) freed(r.addr, r.t_ns);
  }
  void finish(TraceReport* rep);  // rep->allocations (stacks by id)

 private:
  void count(uint64_t size) {
    ++count_;
    bytes_ = size > ~bytes_ ? ~0ull : bytes_ + size;
    const int b = kBucketOfHighBit[63 - __builtin_clzll(size | 1)];
    ++histogram_[b];
    histogram_bytes_[b] = size > ~histogram_bytes_[b] ? ~0ull : histogram_bytes_[b] + size;
  }
  // A size's histogram bucket by its highest set bit: [0]: < 1 KiB, [i]: [4^(i-1) KiB, 4^i KiB),
  // [15]: the rest (a table: the arithmetic was ~8 instructions per allocation).
  static constexpr std::array<uint8_t, 64> kBucketOfHighBit = [] {
    std::array<uint8_t, 64> t{};
    for (int bit = 0; bit < 64; ++bit) t[size_t(bit)] = uint8_t(bit < 10 ? 0 : std::min(15, 1 + (bit - 10) / 2));
    return t;
  }();
  void enter(const Record& r, uint64_t key, uint64_t size);
  void freed(uint64_t key, uint64_t t);
  size_t keep_;
  uint64_t count_ = 0, bytes_ = 0, freed_ = 0;
  uint64_t histogram_[16] = {};  // [0]: < 1 KiB, [i]: [4^(i-1) KiB, 4^i KiB), [15]: the rest
  uint64_t histogram_bytes_[16] = {};
  std::vector<LargeAllocation> largest_;  // at most keep_, unsorted; the smallest is replaced
  std::vector<uint64_t> keys_;  // largest_[i]'s key (addr or handle) while it is live, else 0
  uint64_t min_largest_ = 0;    // the smallest of largest_ once it is full
};

}  // namespace vt::analyzer
