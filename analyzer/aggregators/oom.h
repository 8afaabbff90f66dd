// The OOM aggregator: every allocation that failed for lack of memory, with the state of the
// process at that instant — its live device memory and by kind, what is not attributable to it,
// what its pools cache and its VMM handles hold unmapped, the top holders, what grew before — and
// NVML's list of the other processes on that device (the record written right after the failure).
// The verdict is judged once the stacks are symbolized (oom_verdict.h, after the pass).
#pragma once

#include <cstdint>
#include <vector>

#include "activity_stream.h"
#include "aggregators/first_and_latest.h"
#include "aggregators/leaks.h"
#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class OomAggregator {
 public:
  OomAggregator(uint64_t own_pid, size_t top) : own_pid_(own_pid), top_(top) {}

  // An acquire that failed with out of memory (format/accounting.h, is_out_of_memory); `live` is
  // the state the failure met. Asks `acts` what ran at that instant.
  void on_oom(const Record& r, const LiveState& live, const LeakAggregator& growth, ActivityStream& acts);
  // NVML's process list of a device, taken at t (this process itself is left out): the latest
  // OOM of the device without one gets it if it failed at most kOomListWindowNs before (the recorder writes an OOM's own list with the
  // failure's time; when NVML was not ready then, the sampler thread's list within that window
  // still says who held the device; a later one does not).
  void on_gpu_processes(const GpuProcessList& list, uint64_t t);
  // NVML's list onto one OOM: its rows, the other processes, this process's own figure.
  static void take_gpu_processes(OomReport& o, const GpuProcessList& list, uint64_t own_pid);
  static constexpr uint64_t kOomListWindowNs = 1'000'000'000;
  // The pools' own figures read at the failure: they replace the modelled cache of the latest
  // failure on that device that has none yet.
  void on_pool_usage(const PoolUsageList& list);

  // One per OOM kept, in order: what ran at each.
  const std::vector<ActivityStream::QueryId>& activity_queries() const { return queries_; }
  void finish(TraceReport* rep) {
    rep->ooms_omitted = ooms_.left_out();  // (before the move empties the list)
    rep->ooms = std::move(ooms_.items());
  }

 private:
  uint64_t own_pid_;
  size_t top_;
  FirstAndLatest<OomReport> ooms_;  // bounded: the first ones and the latest (first_and_latest.h)
  std::vector<ActivityStream::QueryId> queries_;  // the latest's moves with it
};

}  // namespace vt::analyzer
