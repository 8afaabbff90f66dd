// The one pass over a trace: each record, in time order, goes to the replay (LiveState: what is
// live, whose) and to the aggregators that turn it into a report's figures, each in
// aggregators/ with its own job. This file is only the dispatch: which record goes where, and in
// which order (a cache flush looks at the state before an event, everything else after it; a
// peak is snapshotted before its bytes go down, inside the replay; PyTorch's block records go to
// their own aggregator, which follows the segments after each event). analyze_trace runs it over a
// TraceReader; tests feed it synthetic records.
#pragma once

#include <cstdint>

#include "aggregators/allocation_stats.h"
#include "aggregators/cache_flush.h"
#include "aggregators/fidelity.h"
#include "aggregators/fragmentation.h"
#include "aggregators/kernel_activity.h"
#include "aggregators/leaks.h"
#include "aggregators/lookups.h"
#include "aggregators/live_at.h"
#include "aggregators/snapshots.h"
#include "aggregators/oom.h"
#include "aggregators/peak.h"
#include "aggregators/phases.h"
#include "aggregators/regions.h"
#include "aggregators/sharing.h"
#include "aggregators/timeline.h"
#include "aggregators/torch_blocks.h"
#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class AnalysisPass {
 public:
  // `process`: the trace header's (its pid and clock base are needed from the first record on).
  AnalysisPass(const ProcessInfo& process, const AnalysisOptions& opt);
  AnalysisPass(const AnalysisPass&) = delete;
  AnalysisPass& operator=(const AnalysisPass&) = delete;

  // Every record of the reader, then one by one (synthetic records, in tests).
  void feed_all(TraceReader& reader);
  void feed(const Record& r);
  uint64_t events() const { return events_; }
  // Fills *rep with every figure of the pass (stacks by id, not yet symbolized; verdicts not yet
  // judged). rep->process must be set first (the end of the run depends on its clean close).
  void finish(TraceReport* rep);
  // The lookup safety net's part, which needs the modules (after finish).
  void finish_interception(const StackStore& stacks, TraceReport* rep) {
    lookups_.finish(stacks, rep->process.version_minor, rep);
  }

 private:
  void feed_ahead(TraceReader& reader);  // feed_all's loop once the live map outgrows the caches
  void dispatch(const Record& r);
  void event(const Record& r);  // a memory event with a known op
  void count(const Record& r);

  AnalysisOptions opt_;
  LiveState live_;
  uint64_t events_ = 0, failed_ = 0, first_t_ = 0, last_t_ = 0;
  uint64_t pid_;  // the traced process (NVML's lists name it among the others)
  bool progress_;
  KernelActivityAggregator activity_;
  PeakAggregator peaks_;
  LeakAggregator leaks_;
  OomAggregator ooms_;
  CacheFlushAggregator cache_flushes_;
  RegionAggregator regions_;
  PhaseAggregator phases_;
  TimelineAggregator timeline_;
  FragmentationAggregator fragmentation_;
  TorchAggregator torch_;
  LookupAggregator lookups_;
  std::vector<std::string> notes_;  // the recorder's notes (kTagNote), at most 8 distinct
  AllocationStatsAggregator allocations_;
  LiveAtAggregator live_at_;
  SnapshotAggregator snapshots_;
  SharingAggregator sharing_;
  FidelityAggregator fidelity_;
};

}  // namespace vt::analyzer
