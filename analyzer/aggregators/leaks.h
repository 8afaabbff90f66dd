// The leaks and growth aggregator. Leaks: what is live at the end of the trace, by call site, and
// apart from them what only a context teardown released and what is imported (another
// process's memory: rep->sharing.imported). Growth (docs/metrics.md, "growth"): the
// call sites whose live device bytes kept reaching new highs across the run, from per-site
// checkpoints (aggregators/growth_rule.h, the rule shared with the PyTorch aggregator);
// the OOM aggregator asks it what grew before a failure.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "aggregators/growth_rule.h"
#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

// What of the live memory at the end belongs to a caching allocator (PyTorch's segments): its
// cache is no leak; what it still hands out (its tensors) is counted in its place.
struct AllocatorAtExit {
  bool known = false;                    // the allocator was followed to the end
  std::vector<SiteTable::Row> segments;  // its live driver allocations, by the driver call's site
  std::vector<SiteTable::Row> tensors;   // its live blocks, by their site (bucket Device)
  uint64_t reserved = 0, segment_count = 0, allocated = 0;
  const SiteTable* tensor_table = nullptr;  // the tensors' sites and who holds them (the allocator's own)
  const ThreadShares* tensor_threads = nullptr;
  absl::flat_hash_set<uint32_t> segment_stacks;  // where its segments were allocated (its reserved memory)
};

class LeakAggregator {
 public:
  // After each applied event.
  void after(uint64_t t, const LiveState& live) {
    if (checkpoints_.due()) checkpoint(live, t);
  }
  // The sites that grew by at least min_bytes over the checkpoints and `live` at `now` (a
  // failure), biggest growth first, each with its allocations live now.
  std::vector<GrowthSite> grew_before(const LiveState& live, uint64_t now, uint64_t min_bytes) const;

  // rep->end, leaks, teardown and growth (the last against the highest peak: rep->peaks first);
  // with `cache` known, its segments leave the leaks and its tensors join them (kind "tensor").
  void finish(const LiveState& live, const AllocatorAtExit& cache, size_t top, TraceReport* rep) const;

 private:
  void checkpoint(const LiveState& live, uint64_t now);
  std::vector<GrowthSite> growth(const LiveState& live, const LiveState* now_state, uint64_t now, uint64_t min_bytes) const;

  SiteCheckpoints checkpoints_;  // device-bucket bytes per site
};

// Once stacks are symbolized (the library that made a call is known then): moves the pinned host
// memory that PyTorch's own CUDA libraries allocated (its CachingHostAllocator's cache) out of the
// leaks into rep->torch_host_cache_at_exit. Pinned memory that anything else allocated (the
// user's code, another library, torch.cuda.cudart() calls) stays a leak. As for the cuBLAS
// workspaces, only the groups the report kept (--top) are looked at.
void torch_host_cache_out_of_leaks(TraceReport* rep);

// Moves the leak groups `is_cache` picks out of the leaks (their bytes and count off the totals,
// the others' shares recomputed), adding them to *bytes and *count (may be null): what PyTorch
// keeps for the process's life (its caches, cuBLAS workspaces) is not a leak.
void take_out_of_leaks(TraceReport* rep, const std::function<bool(const SiteGroup&)>& is_cache, uint64_t* bytes,
                       uint64_t* count);

}  // namespace vt::analyzer
