// The fragmentation aggregator: the most VMM address space reserved and mapped at any instant,
// and each memory pool's inferred footprint, live bytes and largest free gap at the end of the
// trace and at its worst moment (docs/metrics.md, "fragmentation"): pools are sampled every N
// events (N doubling as the run gets longer, like the growth checkpoints: the largest free gap
// costs a pass over the live allocations) and at every OOM. The VMM figures at the peak come from
// the peak aggregator, the cache flushes from the cache-flush aggregator. PyTorch's segments: the
// PyTorch aggregator.
#pragma once

#include <algorithm>
#include <cstdint>

#include <absl/container/flat_hash_map.h>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class FragmentationAggregator {
 public:
  // After each applied event.
  void after(uint64_t t, const LiveState& live) {
    if (__builtin_expect(!live.pools().empty(), 0) && --countdown_ == 0) {
      sample(t, live);
      if (++samples_ % 128 == 0) every_ *= 2;
      countdown_ = every_;
    }
  }
  // A failed allocation on `device`: its pools at that instant (the moment that mattered).
  void on_oom(uint64_t t, const LiveState& live) { sample(t, live); }
  // rep->fragmentation: the VMM maxima and the pools, in order of their keys, each with its worst.
  void finish(const LiveState& live, TraceReport* rep);

 private:
  struct Worst {
    uint64_t t = 0, footprint = 0, live = 0, largest = 0, unusable = 0;
  };
  void sample(uint64_t t, const LiveState& live);
  uint64_t every_ = 64, countdown_ = 64, samples_ = 0;
  absl::flat_hash_map<uint64_t, Worst> worst_;  // by pool key
};

}  // namespace vt::analyzer
