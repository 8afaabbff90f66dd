// The leaks and growth aggregator. Leaks: what is live at the end of the trace, by call site, and
// apart from them what only a context teardown released. Growth (docs/metrics.md, "growth"): the
// call sites whose live device bytes kept reaching new highs across the run, from per-site
// snapshots taken every N events (N doubling as the run gets longer, so at most ~128 are kept);
// the OOM aggregator asks it what grew before a failure.
#pragma once

#include <cstdint>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class LeakAggregator {
 public:
  // After each applied event.
  void after(uint64_t t, const LiveState& live) {
    if (--countdown_ == 0) {
      checkpoint(live, t);
      countdown_ = every_;
    }
  }
  // The sites that grew by at least min_bytes over the checkpoints and `live` at `now` (a
  // failure), biggest growth first, each with its allocations live now.
  std::vector<GrowthSite> grew_before(const LiveState& live, uint64_t now, uint64_t min_bytes) const;

  // rep->end, leaks, teardown and growth (the last against the highest peak: rep->peaks first).
  void finish(const LiveState& live, size_t top, TraceReport* rep) const;

 private:
  using Snapshot = absl::flat_hash_map<SiteKey, uint64_t>;  // device-bucket bytes per site
  void checkpoint(const LiveState& live, uint64_t now);
  std::vector<GrowthSite> growth(const LiveState* now_state, uint64_t now, uint64_t min_bytes) const;

  uint64_t every_ = 8;      // events between checkpoints: doubles as the run gets longer
  uint64_t countdown_ = 8;  // events until the next one (no division per event)
  std::vector<uint64_t> t_;
  std::vector<Snapshot> snaps_;
};

}  // namespace vt::analyzer
