// Memory grouped by call site, as every list of a report shows it (the live set at a peak, the
// holders at an OOM, leaks, teardown): rows of the replay's per-site table become SiteGroups,
// biggest first, each with its share; and device bytes by op kind.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

// Rows with bytes or a count, as groups sorted by bytes (then stack id). device_bucket_only: only
// device-bucket rows of `device`; otherwise every row (every device and bucket).
std::vector<SiteGroup> site_groups(const SiteTable::Row* rows, size_t n, int device, bool device_bucket_only);
inline std::vector<SiteGroup> site_groups(const SiteTable::Rows& rows, int device, bool device_bucket_only) {
  return site_groups(rows.data(), rows.size(), device, device_bucket_only);
}
inline std::vector<SiteGroup> site_groups(const std::vector<SiteTable::Row>& rows, int device, bool device_bucket_only) {
  return site_groups(rows.data(), rows.size(), device, device_bucket_only);
}

// Each group's threads (SiteGroup::threads) from the shares of `table`'s rows, when more than one
// thread of the process allocated.
void attach_threads(std::vector<SiteGroup>& groups, const SiteTable& table, const ThreadShares& shares);

// Device-bucket bytes by op kind, by kind name, the kinds with memory only.
std::map<std::string, uint64_t> bytes_by_kind(const std::array<uint64_t, kKindSlots>& kinds);
std::map<std::string, uint64_t> bytes_by_kind(const LiveState& live, int device);

}  // namespace vt::analyzer
