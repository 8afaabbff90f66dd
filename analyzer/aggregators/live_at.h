// The live-at aggregator (`--at 12.5s`, `--at mark:NAME`): what was live at one chosen instant —
// bytes per device and bucket, and the live set by call site — taken from the replay just before
// the first event after the instant (so it is the state at the instant), at the first begin of
// the vramtrace region NAME, or at the end of the trace when the instant is past it (or the mark
// never came). The instant is relative to the trace's start as the reports count it (the
// header's start, or the first event when that came earlier), known at the first event.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class LiveAtAggregator {
 public:
  // since_start_ns < 0: not asked (one compare per event).
  LiveAtAggregator(int64_t since_start_ns, std::string mark, uint64_t header_start_ns)
      : since_(mark.empty() ? since_start_ns : -1),
        mark_(std::move(mark)),
        header_start_(header_start_ns),
        at_(since_ < 0 ? ~0ull : 0) {}
  // Before each event that changes memory (or PyTorch's block records) is applied; true when the
  // live set was taken now (the other views of that instant are taken too).
  bool before(uint64_t t, const LiveState& live) {
    if (__builtin_expect(t <= at_, 1)) return false;
    return take(t, live);
  }
  // A vramtrace region mark; true when it is the one asked for (the live set was taken).
  bool on_mark(uint64_t t, const RegionMark& mark, const LiveState& live);
  void finish(const LiveState& live, TraceReport* rep);  // rep->live_at (stacks by id)

 private:
  bool take(uint64_t t, const LiveState& live);
  int64_t since_;
  std::string mark_;
  uint64_t header_start_;
  uint64_t at_;  // the first event when asked (it fixes the origin), then the instant; ~0 when done
  bool origin_known_ = false, taken_ = false, mark_found_ = false;
  uint64_t instant_ = 0;
  std::vector<SiteTable::Row> rows_;
  std::map<int, std::array<uint64_t, kBuckets>> devices_;
};

}  // namespace vt::analyzer
