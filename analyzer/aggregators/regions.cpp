// See regions.h.
#include "aggregators/regions.h"

namespace vt::analyzer {

void RegionAggregator::on_mark(uint64_t t, const RegionMark& m, uint64_t device_bytes, const uint64_t* tensors) {
  if (m.begin) {
    RegionReport g;
    g.name = m.name;
    g.t_begin = t;
    g.start_bytes = g.peak_bytes = device_bytes;
    g.t_peak = t;
    if (tensors) {
      g.tensors = true;
      g.tensor_start_bytes = g.tensor_peak_bytes = g.tensor_end_bytes = *tensors;
      g.t_tensor_peak = t;
    }
    open_.push_back(regions_.size());
    regions_.push_back(std::move(g));
    return;
  }
  for (size_t i = open_.size(); i-- > 0;)
    if (regions_[open_[i]].name == m.name) {
      RegionReport& g = regions_[open_[i]];
      g.t_end = t;
      g.end_bytes = device_bytes;
      g.closed = true;
      open_.erase(open_.begin() + long(i));
      return;
    }
}

void RegionAggregator::finish(uint64_t last_t, uint64_t device_bytes, TraceReport* rep) {
  for (size_t i : open_) {  // never ended: the trace stopped inside them
    regions_[i].t_end = last_t;
    regions_[i].end_bytes = device_bytes;
  }
  rep->regions = std::move(regions_);
}

}  // namespace vt::analyzer
