// The fidelity aggregator: what each device's used memory (the driver's total - free, what
// nvidia-smi shows) was made of, at its peak and at each OOM: tracked allocations by kind,
// contexts and code (format/accounting.h, rule 14), what stream-ordered pools keep free, CUPTI's
// buffers, other processes (NVML), and the unexplained remainder. The driver is read at failed
// allocations (free/total) and around context and code ops (free after them); the peak takes the
// reading at its state (taken after it, before anything changed) or else the nearest in time,
// and says so. Each reading keeps the figures of its own instant, so the remainder never mixes
// two instants. O(devices) state; OOM readings one per OOM.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "aggregators/first_and_latest.h"
#include "live_state.h"
#include "report_model.h"
#include "trace_reader.h"

namespace vt::analyzer {

class FidelityAggregator {
 public:
  explicit FidelityAggregator(uint64_t own_pid) : own_pid_(own_pid) {}
  // A failed acquire, before anything else sees it (`oom`: one of the report's OOMs, in order).
  void on_failed(const Record& r, const LiveState& live, bool oom);
  // A new peak of the device bucket on `device` at t (the peak aggregator finds it).
  void on_peak(int device, uint64_t t, const DeviceTotals& totals) {
    if (device != dev_key_) {
      dev_ = &devs_[device];
      dev_key_ = device;
    }
    Dev& d = *dev_;
    d.peak = totals.bytes[int(Bucket::Device)];
    d.peak_t = t;
    d.peak_version = totals.version;
    d.before_is_last = true;
    d.after.valid = false;
  }
  // After each applied event: the reading of a context or code op. Inline: it runs once per
  // event, and a call cost ~20 instructions of the ~1,000 an event takes (issue 43).
  void after(const Record& r, const LiveState& live) {
    if (__builtin_expect(r.op->kind == MemKind::Code && r.op->action == Action::Acquire, 0)) after_code(r, live);
  }
  // NVML's list at t; `taken`: what it took off the device's first context (rule 14, out of
  // `after_only_before`, the after-only costs the device had just before).
  void on_gpu_processes(const GpuProcessList& list, uint64_t t, uint64_t after_only_before, uint64_t taken);
  // Fills rep->peaks[].fidelity and rep->ooms[].fidelity (after the peaks, OOMs and the kernel
  // recording are in rep).
  void finish(TraceReport* rep) const;

 private:
  struct Reading {
    bool valid = false;
    uint64_t t = 0, version = 0, free = 0, total = 0;
    std::array<uint64_t, kKindSlots> kinds{};
    uint64_t tracked = 0, contexts = 0, modules = 0, pool_cached = 0;
    uint64_t context_count = 0;  // live contexts on the device (rule 14's entries)
    uint64_t after_only = 0;     // of contexts, the costs measured without a `before`
  };
  struct Dev {
    uint64_t peak = 0, peak_t = 0, peak_version = 0;
    Reading last, before, after;  // the latest reading; those before and after the peak
    // `before` is `last` (not copied at each new peak: a slowly growing run reaches one every few
    // events, and a Reading is ~330 bytes); copied when `last` is about to be replaced.
    bool before_is_last = false;
    const Reading& before_peak() const { return before_is_last ? last : before; }
  };
  struct Nvml {
    uint64_t t = 0, bytes = 0;
  };
  struct Correction {
    uint64_t t = 0, after_only_before = 0, taken = 0;
  };
  void after_code(const Record& r, const LiveState& live);  // a code op's reading of free
  Reading read(const LiveState& live, int device, uint64_t t, uint64_t free, uint64_t total) const;
  // The correction that came after an instant at t whose after-only costs were `after_only`.
  const Correction* correction_after(int device, uint64_t t, uint64_t after_only) const;
  void reading(int device, const Reading& x);
  Fidelity explain(const Reading& x, uint64_t instant, bool at_instant, const KernelRecording& k) const;

  uint64_t own_pid_;
  std::map<int, Dev> devs_;
  int dev_key_ = -2;        // the device of dev_ (events come device by device: no map lookup each)
  Dev* dev_ = nullptr;      // (std::map: the pointer stays valid)
  std::map<int, std::vector<Nvml>> nvml_;
  std::map<int, std::vector<Correction>> corrections_;
  FirstAndLatest<Reading> ooms_;  // one per OOM kept (the OOM aggregator's policy), matched by time
};

}  // namespace vt::analyzer
