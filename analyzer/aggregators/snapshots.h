// The snapshots aggregator: the live set at evenly spaced instants of the run (the biggest call
// sites and the bytes per device), so that clicking a point of the HTML timeline can say what
// was live then without the page holding every allocation. Instants are edges of a grid that
// starts 1 us wide and doubles (dropping every other snapshot) whenever there are more than 2x
// the target, as the timeline's buckets do. A snapshot is taken at the first event after an edge,
// before that event is applied: it is exactly the state at the edge, and it holds until that
// event, so the snapshot at or before any instant is the state then, or at most one grid step
// old. `--at` gives the full live set at any instant; these are its summary.
//
// Cost: each snapshot visits the call-site rows that hold live allocations (LiveState::held_sites);
// the target shrinks when there are many (64 snapshots up to 16 Ki rows, proportionally fewer
// beyond, at least 8), so a million live sites cost at most ~16 M row visits.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class SnapshotAggregator {
 public:
  static constexpr size_t kSites = 8;    // call sites kept per snapshot (the rest is "other")
  static constexpr size_t kStacks = 64;  // distinct stacks kept over all snapshots

  // Before each event that changes memory is applied.
  void before(uint64_t t, const LiveState& live) {
    if (t > next_edge_) take(t, live);
  }
  void finish(TraceReport* rep);  // rep->snapshots (stacks by id)

 private:
  void take(uint64_t t, const LiveState& live);
  void coarsen();
  size_t target(size_t rows) const;
  bool started_ = false;
  uint64_t t0_ = 0, width_ = 1000, next_edge_ = 0;  // next_edge_ = 0: the first event starts the grid
  std::vector<Snapshot> snaps_;
};

}  // namespace vt::analyzer
