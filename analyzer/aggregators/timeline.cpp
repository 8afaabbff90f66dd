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

void TimelineAggregator::finish(TraceReport* rep) {
  for (auto& [device, series] : series_)
    for (int b = 0; b < kBuckets; ++b)
      if (series[b]) rep->timeline.push_back({device, bucket_name(Bucket(b)), series[b]->take()});
}

}  // namespace vt::analyzer
