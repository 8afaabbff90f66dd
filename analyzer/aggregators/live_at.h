// The live-at aggregator (`--at 12.5s`): what was live at one chosen instant — bytes per device
// and bucket, and the live set by call site — taken from the replay just before the first event
// after the instant (so it is the state at the instant), or at the end of the trace when the
// instant is past it. The instant is relative to the trace's start as the reports count it (the
// header's start, or the first event when that came earlier), known at the first event.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class LiveAtAggregator {
 public:
  // since_start_ns < 0: not asked (one compare per event).
  LiveAtAggregator(int64_t since_start_ns, uint64_t header_start_ns)
      : since_(since_start_ns), header_start_(header_start_ns), at_(since_start_ns < 0 ? ~0ull : 0) {}
  // Before each event that changes memory is applied.
  void before(uint64_t t, const LiveState& live) {
    if (t > at_) take(t, live);
  }
  void finish(const LiveState& live, TraceReport* rep);  // rep->live_at (stacks by id)

 private:
  void take(uint64_t t, const LiveState& live);
  int64_t since_;
  uint64_t header_start_;
  uint64_t at_;  // the first event when asked (it fixes the origin), then the instant; ~0 when done
  bool origin_known_ = false, taken_ = false;
  uint64_t instant_ = 0;
  std::vector<SiteTable::Row> rows_;
  std::map<int, std::array<uint64_t, kBuckets>> devices_;
};

}  // namespace vt::analyzer
