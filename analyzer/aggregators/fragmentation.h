// The fragmentation aggregator: the most VMM address space reserved and mapped at any instant,
// and at the end of the trace each memory pool's inferred footprint, live bytes and largest free
// gap (docs/metrics.md, "fragmentation"). The VMM figures at the peak come from the peak
// aggregator, the cache flushes from the cache-flush aggregator.
#pragma once

#include <algorithm>
#include <cstdint>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class FragmentationAggregator {
 public:
  // After each applied event.
  void after(const LiveState& live) {
    reserved_max_ = std::max(reserved_max_, live.reserved_va());
    mapped_max_ = std::max(mapped_max_, live.mapped_va());
  }
  // rep->fragmentation: the VMM maxima and the pools, in order of their keys.
  void finish(const LiveState& live, TraceReport* rep) const;

 private:
  uint64_t reserved_max_ = 0, mapped_max_ = 0;
};

}  // namespace vt::analyzer
