// The peak aggregator: each device's highest live device-bucket bytes, when it was reached, what
// made it up then (the live set by call site, bytes by op kind, VMM reserved and mapped), and the
// question "what ran then" put to the kernel activity; also the peaks of pinned host and managed
// memory. A slowly leaking run reaches a new peak every few events, so a new peak only marks the
// device (and notes the VMM figures, which can change without the device's bytes changing); the
// rows are copied when its bytes are about to go down (LiveState's before-drop callback) or at the
// end — until then they are the peak's — raw (sorting and symbolizing happen once, at the end).
#pragma once

#include <array>
#include <map>
#include <vector>

#include "activity_stream.h"
#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class PeakAggregator {
 public:
  // Registers itself as `live`'s before-drop callback: it must stay where it is.
  PeakAggregator(LiveState& live, ActivityStream& acts);
  PeakAggregator(const PeakAggregator&) = delete;
  PeakAggregator& operator=(const PeakAggregator&) = delete;

  // After each applied event. A device's new peak is also told to on_peak(device, totals), for
  // the aggregators that need the instant of each peak (the fidelity's readings): the rule "a new
  // peak" is kept here, once, and their own loop over the devices is saved (~35 instructions an
  // event, issue 43).
  void after(uint64_t t) { after(t, [](int, const DeviceTotals&) {}); }
  template <class OnPeak>
  void after(uint64_t t, OnPeak&& on_peak) {
    for (int device : live_.changed()) after_device(t, device, *live_.find_device(device), on_peak);
  }
  // The same for one device the event changed, with its totals (the pass's loop over the changed
  // devices feeds the timeline too: one loop, ~10 instructions per event less, issue 43).
  template <class OnPeak>
  __attribute__((always_inline)) void after_device(uint64_t t, int device, const DeviceTotals& totals, OnPeak&& on_peak) {
    uint64_t v = totals.bytes[int(Bucket::Device)];
    Dev& d = dev(device);
    if (v > d.bytes) {
      d.bytes = v;
      d.t = t;
      d.pending = true;
      live_.watch_next_drop(device);
      d.vmm_reserved = live_.reserved_va();  // two figures: taken at the instant, not with the rows
      d.vmm_mapped = live_.mapped_va();
      watch_activity(d, t);
      on_peak(device, totals);
    }
    // Pinned host and managed memory are the process's, whichever device's context made them:
    // their peaks are of the sums over devices. (Most events change neither: one test then.)
    const uint64_t pinned = totals.bytes[int(Bucket::PinnedHost)], managed = totals.bytes[int(Bucket::Managed)];
    if (__builtin_expect((pinned ^ d.pinned) | (managed ^ d.managed), 0)) {
      pinned_total_ += pinned - d.pinned;
      managed_total_ += managed - d.managed;
      d.pinned = pinned;
      d.managed = managed;
      pinned_peak_ = std::max(pinned_peak_, pinned_total_);
      managed_peak_ = std::max(managed_peak_, managed_total_);
    }
  }

  // rep->peaks (highest first, live sets cut to `top`), the pinned/managed peaks, and the VMM
  // figures at the highest peak (rep->fragmentation).
  void finish(size_t top, TraceReport* rep);
  // The activity question asked for a device's peak (kNoQuery for a device without one).
  ActivityStream::QueryId activity_query(int device) const;

 private:
  struct Dev {
    uint64_t bytes = 0, t = 0;
    bool pending = false;  // a new peak not yet snapshotted
    std::vector<SiteTable::Row> rows;
    std::array<uint64_t, kKindSlots> kinds{};
    uint64_t vmm_reserved = 0, vmm_mapped = 0;
    uint64_t pinned = 0, managed = 0;  // the device's pinned host and managed bytes, last seen
    ActivityStream::QueryId activity = ActivityStream::kNoQuery;
  };
  static void before_drop(void* self, int device);
  void snapshot(int device);
  std::vector<uint32_t> held_;  // snapshot()'s scratch: the device's held site rows
  Dev& dev(int device) {  // the last device looked up: events come in long runs on one device
    if (device != cached_device_) {
      cached_ = &devs_[device];  // std::map: the pointer stays valid
      cached_device_ = device;
    }
    return *cached_;
  }
  // Asked at every new peak, not when it is snapshotted: the kernels of the instant are answered
  // as their records arrive, and nothing is kept to answer later.
  void watch_activity(Dev& d, uint64_t t) {
    if (d.activity == ActivityStream::kNoQuery)
      d.activity = acts_.watch_moving(t);
    else
      acts_.move(d.activity, t);  // the superseded peak's question is dropped
  }

  LiveState& live_;
  ActivityStream& acts_;
  std::map<int, Dev> devs_;
  int cached_device_ = -1000;
  Dev* cached_ = nullptr;
  uint64_t pinned_peak_ = 0, managed_peak_ = 0;
  uint64_t pinned_total_ = 0, managed_total_ = 0;  // over devices, now
};

}  // namespace vt::analyzer
