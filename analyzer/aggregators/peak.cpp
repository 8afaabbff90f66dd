// See peak.h.
#include "aggregators/peak.h"

#include <algorithm>

#include "aggregators/site_groups.h"

namespace vt::analyzer {

PeakAggregator::PeakAggregator(LiveState& live, ActivityStream& acts) : live_(live), acts_(acts) {
  live_.on_before_drop(&PeakAggregator::before_drop, this);
}

void PeakAggregator::before_drop(void* self, int device) {
  auto* p = static_cast<PeakAggregator*>(self);
  if (p->dev(device).pending) p->snapshot(device);
}

void PeakAggregator::snapshot(int device) {
  Dev& d = devs_[device];
  d.rows.clear();
  // The held rows only (not every stack the trace had), in row order as before.
  held_.clear();
  for (uint32_t i : live_.held_sites()) {
    const SiteTable::Row& row = live_.sites()[i];
    if (row.key.bucket == Bucket::Device && row.key.device == device) held_.push_back(i);
  }
  std::sort(held_.begin(), held_.end());
  for (uint32_t i : held_) d.rows.push_back(live_.sites()[i]);
  const DeviceTotals* totals = live_.find_device(device);
  d.kinds = totals ? totals->kinds : std::array<uint64_t, kKindSlots>{};
  d.pending = false;
}

ActivityStream::QueryId PeakAggregator::activity_query(int device) const {
  auto it = devs_.find(device);
  return it == devs_.end() ? ActivityStream::kNoQuery : it->second.activity;
}

void PeakAggregator::finish(size_t top, TraceReport* rep) {
  for (auto& [device, d] : devs_) {
    if (d.pending) snapshot(device);
    if (!d.bytes) continue;
    DevicePeak p;
    p.device = device;
    p.bytes = d.bytes;
    p.t_ns = d.t;
    p.by_kind = bytes_by_kind(d.kinds);
    p.live_set = site_groups(d.rows, device, true);
    if (p.live_set.size() > top) {
      for (size_t i = top; i < p.live_set.size(); ++i) p.left_out_bytes += p.live_set[i].bytes;
      p.left_out_sites = p.live_set.size() - top;
      p.live_set.resize(top);
    }
    rep->peaks.push_back(std::move(p));
  }
  std::sort(rep->peaks.begin(), rep->peaks.end(), [](const DevicePeak& a, const DevicePeak& b) { return a.bytes > b.bytes; });
  if (!rep->peaks.empty()) {
    const Dev& highest = devs_[rep->peaks[0].device];
    rep->fragmentation.vmm_reserved_bytes_at_peak = highest.vmm_reserved;
    rep->fragmentation.vmm_mapped_bytes_at_peak = highest.vmm_mapped;
  }
  rep->pinned_host_peak_bytes = pinned_peak_;
  rep->managed_peak_bytes = managed_peak_;
}

}  // namespace vt::analyzer
