// The timeline aggregator: live bytes per device and bucket (device, pinned host, managed) over
// the run, each series downsampled as it grows to at most ~2x AnalysisOptions::timeline_points
// points, keeping the maximum of every bucket of time (a peak never disappears from the plot).
#pragma once

#include <array>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

// Max-preserving downsampling of one series into at most ~2x `target` buckets of time, which
// start 1 us wide and double whenever there are too many (so a 27 ms run gets as many points as an
// hour-long one, each bucket ~run length / target wide). Times only grow.
class Timeline {
 public:
  explicit Timeline(size_t target) : target_(target) {}
  void add(uint64_t t, uint64_t v) {
    if (points_.empty()) {
      t0_ = t;
    } else if (t < next_edge_) {  // still in the last bucket: no division
      if (v > points_.back().second) points_.back() = {t, v};
      return;
    }
    points_.push_back({t, v});
    set_last_bucket((t - t0_) / width_);
    if (points_.size() > 2 * target_) coarsen();
  }
  std::vector<std::pair<uint64_t, uint64_t>> take() { return std::move(points_); }

 private:
  void coarsen();
  void set_last_bucket(uint64_t b) {
    uint64_t edge = t0_ + (b + 1) * width_;
    next_edge_ = edge > t0_ ? edge : ~0ull;  // saturate where it would wrap
  }
  size_t target_;
  uint64_t t0_ = 0, width_ = 1000, next_edge_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> points_;
};

class TimelineAggregator {
 public:
  explicit TimelineAggregator(size_t points) : points_(points) {}
  // After each applied event: a point for every bucket of every device the event changed (a
  // series starts at its first non-zero value).
  __attribute__((always_inline)) void after(uint64_t t, const LiveState& live) {
    for (int device : live.changed()) {
      if (device != series_device_) {
        series_of_ = &series_[device];  // std::map: the pointer stays valid
        series_device_ = device;
      }
      const std::array<uint64_t, kBuckets>& bytes = live.find_device(device)->bytes;
      for (Bucket b : {Bucket::Device, Bucket::PinnedHost, Bucket::Managed}) add(*series_of_, b, t, bytes[int(b)]);
    }
  }
  // rep->timeline: by device, then bucket.
  void finish(TraceReport* rep);

 private:
  using Series = std::array<std::unique_ptr<Timeline>, kBuckets>;
  void add(Series& s, Bucket b, uint64_t t, uint64_t v) {
    auto& tl = s[int(b)];
    if (!tl) {
      if (!v) return;
      tl = std::make_unique<Timeline>(points_);
    }
    tl->add(t, v);
  }
  size_t points_;
  std::map<int, Series> series_;
  int series_device_ = -1000;  // the last device looked up: events come in long runs on one
  Series* series_of_ = nullptr;
};

}  // namespace vt::analyzer
