// The growth rule (docs/metrics.md, "growth"), written once for every layer that has call sites:
// per-site checkpoints taken every N events (N doubling as the run gets longer, so at most ~128
// are kept), and which sites of such a series grew. Used by the leaks aggregator (driver-level
// sites) and the PyTorch aggregator (tensor sites).
//
// Where more than one thread allocates, the checkpoints also keep each site's bytes thread by
// thread (aggregators/thread_shares.h), and a site's growth must be its threads' own: concurrency
// (more threads holding their temporaries at once) raises a site's total, never one thread's.
#pragma once

#include <cstdint>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "live_state.h"
#include "thread_shares.h"

namespace vt::analyzer {

using SiteSnapshot = absl::flat_hash_map<SiteKey, uint64_t>;  // bytes per site

// A site's bytes that one thread allocated.
struct ThreadSiteKey {
  SiteKey site;
  uint32_t tid = 0;
  bool operator==(const ThreadSiteKey& o) const { return site == o.site && tid == o.tid; }
  template <typename H>
  friend H AbslHashValue(H h, const ThreadSiteKey& k) {
    return H::combine(std::move(h), k.site, k.tid);
  }
};
// Sites' bytes thread by thread at one checkpoint. While one thread has allocated (most programs)
// nothing is kept: every site's bytes are that thread's.
struct ThreadSiteSnapshot {
  bool one_thread = true;
  uint32_t tid = 0;  // that thread (while one_thread)
  absl::flat_hash_map<ThreadSiteKey, uint64_t> bytes;
};

// The threads' checkpoint of a site table's device-bucket rows: `rows` with `shares`, the rows
// to look at (with bytes) listed in `candidates` (n of them; nullptr: every row).
ThreadSiteSnapshot thread_snapshot(const ThreadShares& shares, const SiteTable::Rows& rows, const uint32_t* candidates,
                                   size_t n);

class SiteCheckpoints {
 public:
  // After each event: true when a checkpoint is due now (then call add(), which starts the next
  // countdown, after the cadence may have doubled).
  bool due() { return --countdown_ == 0; }
  void add(uint64_t t, SiteSnapshot snap, ThreadSiteSnapshot threads);
  const std::vector<uint64_t>& times() const { return t_; }
  const std::vector<SiteSnapshot>& snapshots() const { return snaps_; }
  const std::vector<ThreadSiteSnapshot>& thread_snapshots() const { return threads_; }

 private:
  uint64_t every_ = 8;      // events between checkpoints: doubles as the run gets longer
  uint64_t countdown_ = 8;  // events until the next one (no division per event)
  std::vector<uint64_t> t_;
  std::vector<SiteSnapshot> snaps_;
  std::vector<ThreadSiteSnapshot> threads_;
};

struct ThreadGrowth {
  uint32_t tid = 0;
  uint64_t growth = 0;  // its own bytes at the site: highest minus where they started
};

struct GrowthHit {
  SiteKey key;
  uint64_t high = 0, growth = 0;  // its highest bytes; highest minus where it started
  int new_highs = 0;
  size_t first_high = 0, last_high = 0;  // indexes into the series
  std::vector<ThreadGrowth> threads;     // whose own bytes grew (biggest first); empty: one thread allocated
};

// A site grows when it reached a new high at 3 or more checkpoints spread over at least a third
// of them, by at least min_bytes above where it started. Needs 4 checkpoints. Where the series
// has threads (`threads`, one per checkpoint, or none: one thread), a site's hit stands only when the
// threads whose own bytes there grew by the same rule (any amount) grew by min_bytes together;
// they are its `threads`. Biggest growth first, ties by stack id then device (hash order changes
// from run to run).
std::vector<GrowthHit> growing_sites(const std::vector<const SiteSnapshot*>& series,
                                     const std::vector<const ThreadSiteSnapshot*>& threads, uint64_t min_bytes);

}  // namespace vt::analyzer
