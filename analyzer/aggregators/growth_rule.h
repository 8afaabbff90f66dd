// The growth rule (docs/metrics.md, "growth"), written once for every layer that has call sites:
// per-site checkpoints taken every N events (N doubling as the run gets longer, so at most ~128
// are kept), and which sites of such a series grew. Used by the leaks aggregator (driver-level
// sites) and the PyTorch aggregator (tensor sites).
#pragma once

#include <cstdint>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "live_state.h"

namespace vt::analyzer {

using SiteSnapshot = absl::flat_hash_map<SiteKey, uint64_t>;  // bytes per site

class SiteCheckpoints {
 public:
  // After each event: true when a checkpoint is due now (then call add(), which starts the next
  // countdown, after the cadence may have doubled).
  bool due() { return --countdown_ == 0; }
  void add(uint64_t t, SiteSnapshot snap);
  const std::vector<uint64_t>& times() const { return t_; }
  const std::vector<SiteSnapshot>& snapshots() const { return snaps_; }

 private:
  uint64_t every_ = 8;      // events between checkpoints: doubles as the run gets longer
  uint64_t countdown_ = 8;  // events until the next one (no division per event)
  std::vector<uint64_t> t_;
  std::vector<SiteSnapshot> snaps_;
};

struct GrowthHit {
  SiteKey key;
  uint64_t high = 0, growth = 0;  // its highest bytes; highest minus where it started
  int new_highs = 0;
  size_t first_high = 0, last_high = 0;  // indexes into the series
};

// A site grows when it reached a new high at 3 or more checkpoints spread over at least a third
// of them, by at least min_bytes above where it started. Needs 4 checkpoints. Biggest growth
// first, ties by stack id then device (hash order changes from run to run).
std::vector<GrowthHit> growing_sites(const std::vector<const SiteSnapshot*>& series, uint64_t min_bytes);

}  // namespace vt::analyzer
