// The regions aggregator: named regions marked with vramtrace_region_begin / _end (one test, one
// step), each with the device bytes (all devices) at its start and end and the most live inside
// it, and when that was reached (the pytest plugin asks for the live set then: --at); with
// PyTorch's block layer, the same for its allocated bytes (its tensors). An end closes the latest
// open region of that name; a region never ended is closed at the trace's last event.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "report_model.h"

namespace vt::analyzer {

class RegionAggregator {
 public:
  // `tensors`: PyTorch's allocated bytes now, when its block layer is followed (else nullptr).
  void on_mark(uint64_t t, const RegionMark& m, uint64_t device_bytes, const uint64_t* tensors);
  // After each applied event: device_bytes are all devices' live device-bucket bytes.
  void after(uint64_t t, uint64_t device_bytes) {
    if (open_.empty()) return;
    for (size_t i : open_)
      if (device_bytes > regions_[i].peak_bytes) {
        regions_[i].peak_bytes = device_bytes;
        regions_[i].t_peak = t;
      }
  }
  // After each PyTorch block: its allocated bytes, all devices.
  void after_tensors(uint64_t t, uint64_t allocated) {
    for (size_t i : open_) {
      RegionReport& g = regions_[i];
      if (!g.tensors) {  // the first block inside it: nothing of PyTorch's was allocated before
        g.tensors = true;
        g.tensor_start_bytes = g.tensor_peak_bytes = 0;
        g.t_tensor_peak = g.t_begin;
      }
      if (allocated > g.tensor_peak_bytes) {
        g.tensor_peak_bytes = allocated;
        g.t_tensor_peak = t;
      }
      g.tensor_end_bytes = allocated;
    }
  }
  void finish(uint64_t last_t, uint64_t device_bytes, TraceReport* rep);

 private:
  std::vector<RegionReport> regions_;
  std::vector<size_t> open_;  // indices into regions_, in order of opening
};

}  // namespace vt::analyzer
