// See live_at.h.
#include "aggregators/live_at.h"

#include "aggregators/site_groups.h"

namespace vt::analyzer {

bool LiveAtAggregator::on_mark(uint64_t t, const RegionMark& mark, const LiveState& live) {
  if (mark_.empty() || taken_ || !mark.begin || mark.name != mark_) return false;
  instant_ = t;
  mark_found_ = true;
  return take(t, live);
}

bool LiveAtAggregator::take(uint64_t t, const LiveState& live) {
  if ((since_ < 0 && mark_.empty()) || taken_) return false;
  if (!origin_known_ && mark_.empty()) {  // the first event: the origin is the header's start, or this event when earlier
    origin_known_ = true;
    uint64_t origin = header_start_ && header_start_ < t ? header_start_ : t;
    instant_ = origin + uint64_t(since_) < origin ? ~0ull : origin + uint64_t(since_);
    at_ = instant_;
    if (t <= at_) return false;  // the instant is later: wait for the event after it
  }
  taken_ = true;
  at_ = ~0ull;
  for (const SiteTable::Row& row : live.sites())
    if (row.b.bytes || row.b.count) rows_.push_back(row);
  for (const DeviceTotals& d : live.devices()) devices_[d.device] = d.bytes;
  return true;
}

void LiveAtAggregator::finish(const LiveState& live, TraceReport* rep) {
  if (since_ < 0 && mark_.empty()) return;
  LiveAt& out = rep->live_at;
  out.asked = true;
  out.mark = mark_;
  out.mark_found = mark_found_;
  if (!taken_) {  // the instant is past the last event, the mark never came (or the trace has none): the end state
    bool known = origin_known_;
    take(~0ull, live);
    out.past_end = true;
    if (!mark_.empty()) instant_ = rep->last_t_ns;
    else if (!known) instant_ = header_start_ + uint64_t(since_);
  }
  out.t_ns = instant_;
  for (const auto& [device, b] : devices_) {
    if (!b[int(Bucket::Device)] && !b[int(Bucket::PinnedHost)] && !b[int(Bucket::Managed)]) continue;
    out.devices.push_back({device, b[int(Bucket::Device)], b[int(Bucket::PinnedHost)], b[int(Bucket::Managed)]});
    out.device_bytes += b[int(Bucket::Device)];
  }
  out.live_set = site_groups(rows_, -1, false);
}

}  // namespace vt::analyzer
