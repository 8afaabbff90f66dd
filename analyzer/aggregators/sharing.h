// Sharing as the report shows it (format/accounting.h, rules 10 to 13): the allocations this
// process exported (once each, by the site that allocated them), its multicast objects by
// creating site (they hold no memory: rule 12), and the most it had imported at once. What is
// imported at the end comes from the leak aggregator, which keeps it out of the leaks.
// Per event: one kind test in the dispatch; only exports and multicast creations come here.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class SharingAggregator {
 public:
  static bool wants(const OpInfo& op) { return op.kind == MemKind::Sharing || op.kind == MemKind::Multicast; }
  // Before a successful event of wants() is applied to `live` (an export looks up what it shares).
  void before(const Record& r, const LiveState& live);
  void finish(const LiveState& live, TraceReport* rep) const;  // rep->sharing, but its imported part

 private:
  struct Site {
    uint64_t bytes = 0, count = 0;
  };
  using SiteId = std::pair<uint32_t, int>;  // stack, device
  uint64_t exports_ = 0;
  std::set<std::tuple<int, uint64_t, uint64_t, uint32_t>> shared_keys_;  // (space, key, size, stack): once each
  std::map<std::pair<SiteId, std::string>, Site> shared_;  // by allocation site and bucket
  std::map<SiteId, Site> multicast_;                      // created, by creating site
};

}  // namespace vt::analyzer
