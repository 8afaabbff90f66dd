// Putting CUPTI's timestamps on the trace's clock (CLOCK_MONOTONIC, interpose/clock.h).
//
// CUPTI stamps records with CLOCK_REALTIME on Linux (GPU timestamps are mapped onto it by
// CUPTI). We do NOT register cuptiActivityRegisterTimestampCallback: that setting is
// process-wide, cannot be unregistered, and CUPTI's own header warns that changing it
// mid-session leaves earlier records on the old clock; a client that arrives after we step aside
// (Kineto without its TSC option, Nsight) expects CUPTI's default clock, and our callback would
// still be in place. Instead we measure the offset: now_ns() and cuptiGetTimestamp() read back to
// back, the tightest of a few tries, offset = cupti - (before + after) / 2, error <= window / 2.
// NTP slews both clocks alike; a step of the wall clock changes the offset, so it is re-measured
// at every flush and a new value is recorded (a kCuptiClock status record) when it moved.
#pragma once

#include <atomic>
#include <cstdint>

namespace vt::cupti {

struct ClockSample {
  int64_t offset = 0;   // CUPTI timestamp - monotonic, ns
  uint64_t window = 0;  // the two monotonic reads' distance: the measurement's uncertainty
  bool ok = false;
};

using MonoFn = uint64_t (*)();
using CuptiTimeFn = bool (*)(uint64_t* out);

// The sample with the smallest window out of `tries`.
ClockSample sample_offset(MonoFn mono, CuptiTimeFn cupti, int tries);

class ClockAlign {
 public:
  // Takes `s` if it is the first one or it moved by more than the measurements' noise
  // (max(2 us, 2 * (s.window + current window))). Returns true when the offset changed.
  bool update(const ClockSample& s);
  int64_t offset() const { return offset_.load(std::memory_order_relaxed); }
  uint64_t window() const { return window_.load(std::memory_order_relaxed); }
  bool known() const { return known_.load(std::memory_order_acquire); }
  // A CUPTI timestamp on the monotonic clock (0 stays 0: "not recorded").
  uint64_t to_mono(uint64_t cupti_ts) const {
    if (cupti_ts == 0) return 0;
    return uint64_t(int64_t(cupti_ts) - offset());
  }

  static constexpr uint64_t kMinStepNs = 2000;

 private:
  std::atomic<int64_t> offset_{0};
  std::atomic<uint64_t> window_{0};
  std::atomic<bool> known_{false};
};

}  // namespace vt::cupti
