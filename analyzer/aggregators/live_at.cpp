// See live_at.h.
#include "aggregators/live_at.h"

#include "aggregators/site_groups.h"

namespace vt::analyzer {

void LiveAtAggregator::take(uint64_t t, const LiveState& live) {
  if (since_ < 0 || taken_) return;
  if (!origin_known_) {  // the first event: the origin is the header's start, or this event when earlier
    origin_known_ = true;
    uint64_t origin = header_start_ && header_start_ < t ? header_start_ : t;
    instant_ = origin + uint64_t(since_) < origin ? ~0ull : origin + uint64_t(since_);
    at_ = instant_;
    if (t <= at_) return;  // the instant is later: wait for the event after it
  }
  taken_ = true;
  at_ = ~0ull;
  for (const SiteTable::Row& row : live.sites())
    if (row.b.bytes || row.b.count) rows_.push_back(row);
  for (const DeviceTotals& d : live.devices()) devices_[d.device] = d.bytes;
}

void LiveAtAggregator::finish(const LiveState& live, TraceReport* rep) {
  if (since_ < 0) return;
  LiveAt& out = rep->live_at;
  out.asked = true;
  if (!taken_) {  // the instant is past the last event (or the trace has none): the end state
    bool known = origin_known_;
    take(~0ull, live);
    out.past_end = true;
    if (!known) instant_ = header_start_ + uint64_t(since_);
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
