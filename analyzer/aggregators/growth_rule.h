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
#include <functional>
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
// Sites' bytes thread by thread at one checkpoint, kept only for the sites more than one thread
// had allocated at by then: a site without entries holds its first thread's bytes (its one owner
// so far). While one thread has allocated in the process (most programs) nothing is kept.
struct ThreadSiteSnapshot {
  bool one_thread = true;
  absl::flat_hash_map<ThreadSiteKey, uint64_t> bytes;
};
// The first thread that allocated at a site (false: not known).
using FirstOwner = std::function<bool(const SiteKey&, uint32_t*)>;

// The threads' checkpoint of a site table's device-bucket rows (`rows` with `shares`).
ThreadSiteSnapshot thread_snapshot(const ThreadShares& shares, const SiteTable::Rows& rows);

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
// has threads (`threads`, one per checkpoint, or none: one thread; `first_owner` for the sites
// without entries), a site's hit stands only when the
// threads whose own bytes there grew by the same rule (any amount) grew by min_bytes together;
// they are its `threads`. Biggest growth first, ties by stack id then device (hash order changes
// from run to run).
std::vector<GrowthHit> growing_sites(const std::vector<const SiteSnapshot*>& series,
                                     const std::vector<const ThreadSiteSnapshot*>& threads, const FirstOwner& first_owner,
                                     uint64_t min_bytes);

}  // namespace vt::analyzer
