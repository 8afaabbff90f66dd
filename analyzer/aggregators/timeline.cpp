// See timeline.h.
#include "aggregators/timeline.h"

namespace vt::analyzer {

void Timeline::coarsen() {
  width_ *= 2;
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& p : points_) {
    uint64_t b = (p.first - t0_) / width_;
    if (!merged.empty() && (merged.back().first - t0_) / width_ == b) {
      if (p.second > merged.back().second) merged.back() = p;
    } else {
      merged.push_back(p);
    }
  }
  points_ = std::move(merged);
  set_last_bucket((points_.back().first - t0_) / width_);
}

void Timeline::add_point(uint64_t t, uint64_t v) {
  if (points_.empty()) t0_ = t;
  points_.push_back({t, v});
  set_last_bucket((t - t0_) / width_);
  if (points_.size() > 2 * target_) coarsen();
}

void TimelineAggregator::finish(TraceReport* rep) {
  for (auto& [device, series] : series_)  // (by device, then bucket: kSeriesBuckets is in bucket order)
    for (int i = 0; i < kSeries; ++i)
      if (series.tl[i].started()) rep->timeline.push_back({device, bucket_name(kSeriesBuckets[i]), series.tl[i].take()});
}

}  // namespace vt::analyzer
