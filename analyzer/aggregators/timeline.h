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
    if (in_last_bucket(t))
      raise_last(t, v);
    else
      add_point(t, v);
  }
  // The fast path, apart: `t` falls in the last bucket (never while the series is empty), where
  // only a higher value replaces the last point.
  bool in_last_bucket(uint64_t t) const { return t < next_edge_; }
  void raise_last(uint64_t t, uint64_t v) {
    if (v > points_.back().second) points_.back() = {t, v};
  }
  bool started() const { return !points_.empty(); }
  // A point in a new bucket (the first one starts the series).
  void add_point(uint64_t t, uint64_t v);
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
  void after(uint64_t t, const LiveState& live) {
    for (int device : live.changed()) after_device(t, device, *live.find_device(device));
  }
  // The same for one device the event changed, with its totals (the pass's loop feeds the peaks too).
  __attribute__((always_inline)) void after_device(uint64_t t, int device, const DeviceTotals& totals) {
    if (device != series_device_) {
      series_of_ = &series_.try_emplace(device, points_).first->second;  // std::map: the pointer stays valid
      series_device_ = device;
    }
    const std::array<uint64_t, kBuckets>& bytes = totals.bytes;
    // (Unrolled by hand, the values read first: ~54 instructions an event with a unique_ptr and
    // a call per bucket, issue 43.)
    const uint64_t d = bytes[int(Bucket::Device)], m = bytes[int(Bucket::Managed)], h = bytes[int(Bucket::PinnedHost)];
    Series& s = *series_of_;
    step(s.tl[0], t, d);
    step(s.tl[1], t, m);
    step(s.tl[2], t, h);
  }
  // rep->timeline: by device, then bucket.
  void finish(TraceReport* rep);

 private:
  __attribute__((always_inline)) static void step(Timeline& tl, uint64_t t, uint64_t v) {
    if (tl.in_last_bucket(t))
      tl.raise_last(t, v);
    else if (v || tl.started())  // a series starts at its first non-zero value
      tl.add_point(t, v);
  }
  static constexpr int kSeries = 3;
  static constexpr Bucket kSeriesBuckets[kSeries] = {Bucket::Device, Bucket::Managed, Bucket::PinnedHost};  // (bucket order: the report's)
  struct Series {
    explicit Series(size_t points) : tl{Timeline(points), Timeline(points), Timeline(points)} {}
    std::array<Timeline, kSeries> tl;
  };
  size_t points_;
  std::map<int, Series> series_;
  int series_device_ = -1000;  // the last device looked up: events come in long runs on one
  Series* series_of_ = nullptr;
};

}  // namespace vt::analyzer
