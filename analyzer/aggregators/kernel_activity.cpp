// See kernel_activity.h.
#include "aggregators/kernel_activity.h"

#include <cstdio>

namespace vt::analyzer {

namespace {

KernelRef kernel_ref(const ActivityStream& acts, const KernelActivity& k) {
  return {acts.display_name(k.name_id), k.device, k.stream, k.start_ns, k.end_ns};
}

ActivityAt activity_at(const ActivityStream& acts, ActivityStream::QueryId q) {
  ActivityAt a;
  if (q == ActivityStream::kNoQuery) return a;
  ActivityAnswer ans = acts.answer(q);
  for (const KernelActivity& k : ans.running) a.running.push_back(kernel_ref(acts, k));
  for (const KernelActivity& k : ans.last_before) a.last_before.push_back(kernel_ref(acts, k));
  a.nvtx = std::move(ans.nvtx);
  return a;
}

}  // namespace

void KernelActivityAggregator::finish(uint64_t last_t, const std::function<ActivityStream::QueryId(int)>& peak_query,
                                      const std::vector<ActivityStream::QueryId>& oom_queries, TraceReport* rep) {
  acts_.finish(last_t);
  const RecorderState& st = acts_.recorder();
  KernelRecording& k = rep->kernels;
  k.recorded = st.started;
  k.kernels = acts_.kernel_count();
  if (!st.seen)
    k.status = "no kernel activity in this trace";
  else if (st.stepped_aside && st.resumed)
    k.status = "CUPTI recorded kernels, except while another client held it (" + std::to_string(st.gaps.size()) +
               (st.gaps.size() == 1 ? " gap)" : " gaps)");
  else if (st.stepped_aside)
    k.status = "CUPTI recorded until another client took it (" + st.stepped_aside_for + ")";
  else if (st.started)
    k.status = "CUPTI recorded kernels" + (st.library.empty() ? std::string() : " (" + st.library + ")");
  else
    k.status = "kernel activity unavailable" + (st.detail.empty() ? std::string() : ": " + st.detail);
  if (st.started) {
    k.device_buffers = st.device_buffers;
    k.device_buffer_bytes = st.device_buffer_bytes;
    k.activity_buffers = st.activity_buffers;
    k.lost_records = st.lost_records;
    k.refused_buffers = st.refused_buffers;
    const CoverageResult& c = acts_.coverage();  // missed: the first 20 only
    k.cupti_allocations = c.cupti_allocations;
    k.matched = c.matched;
    k.coverage = c.fraction;
    for (const CuptiAllocation& m : c.missed) {
      if (k.missed.size() >= 20) break;
      char b[64];
      snprintf(b, sizeof b, "0x%llx %llu bytes", static_cast<unsigned long long>(m.address),
               static_cast<unsigned long long>(m.bytes));
      k.missed.push_back(b);
    }
  }
  if (acts_.kernel_count() == 0 && acts_.range_count() == 0) return;
  for (DevicePeak& p : rep->peaks) p.activity = activity_at(acts_, peak_query(p.device));
  for (size_t i = 0; i < rep->ooms.size() && i < oom_queries.size(); ++i)
    rep->ooms[i].activity = activity_at(acts_, oom_queries[i]);
}

}  // namespace vt::analyzer
