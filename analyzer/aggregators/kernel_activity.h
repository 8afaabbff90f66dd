// The kernel activity aggregator: CUPTI's records (kernels, NVTX markers, its allocation records,
// the recorder's status) go into one ActivityStream (activity_stream.h), which other aggregators
// ask what ran at an instant (a peak, an OOM). Once CUPTI is known to record, every intercepted
// allocation goes to the coverage cross-check. At the end: the recorder's status, the kernel
// count, the coverage, and the answers to the questions asked.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "activity_stream.h"
#include "report_model.h"

namespace vt::analyzer {

class KernelActivityAggregator {
 public:
  explicit KernelActivityAggregator(uint64_t base_ns) : acts_(base_ns) {}

  // Takes an activity record (true); any other record is left to the caller (false), after it
  // has gone to the cross-check.
  bool take(const Record& r) {
    if (acts_.add(r)) {
      if (!cupti_on_ && r.tag == format::kTagCuptiStatus) cupti_on_ = acts_.recorder().started;
      return true;
    }
    if (cupti_on_) cross_check(r);
    return false;
  }
  // A memory event (never an activity record): only the cross-check's.
  void on_event(const Record& r) {
    if (cupti_on_) cross_check(r);
  }
  ActivityStream& stream() { return acts_; }

  // rep->kernels, and what ran at each device's peak (`peak_query`) and at each OOM
  // (`oom_queries`, one per rep->ooms). After the peaks and OOMs are in *rep.
  void finish(uint64_t last_t, const std::function<ActivityStream::QueryId(int device)>& peak_query,
              const std::vector<ActivityStream::QueryId>& oom_queries, TraceReport* rep);

 private:
  void cross_check(const Record& r) {
    InterceptedAllocation a;
    if (intercepted_allocation(r, &a)) acts_.intercepted(a);
  }
  ActivityStream acts_;
  bool cupti_on_ = false;  // allocations go to the cross-check only then
};

}  // namespace vt::analyzer
