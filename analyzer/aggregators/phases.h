// The phases aggregator: device memory (all devices) against the top-level NVTX ranges
// ("forward", "backward", "optimizer"): for each range name, how often it ran, its highest peak
// and its largest rise. The ranges and the pairing with memory live in the kernel activity stream
// (activity_stream.h), which needs the memory samples in time order: this feeds them and reads
// the result.
#pragma once

#include <cstdint>

#include "activity_stream.h"
#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class PhaseAggregator {
 public:
  explicit PhaseAggregator(ActivityStream& acts) : acts_(acts) {}
  // After each applied event: a sample whenever some device's totals changed.
  void after(uint64_t t, const LiveState& live) {
    if (!live.changed().empty()) acts_.sample(t, live.device_bytes_all());
  }
  // rep->phases, highest peak first; after the stream's finish().
  void finish(TraceReport* rep) const {
    for (const PhaseSummary& ph : acts_.phases())
      rep->phases.push_back({ph.name, ph.count, ph.max_peak_bytes, ph.max_growth_bytes});
  }

 private:
  ActivityStream& acts_;
};

}  // namespace vt::analyzer
