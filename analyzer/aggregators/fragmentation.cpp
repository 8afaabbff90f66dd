// See fragmentation.h.
#include "aggregators/fragmentation.h"

#include <cstdio>
#include <utility>
#include <vector>

namespace vt::analyzer {

// Worst = the most free bytes outside the largest free gap (free space no single request larger
// than that gap can use); the first such moment.
void FragmentationAggregator::sample(uint64_t t, const LiveState& live) {
  for (const auto& [key, p] : live.pools()) {
    uint64_t footprint = p.footprint();
    uint64_t free_b = footprint > p.live_bytes ? footprint - p.live_bytes : 0;
    if (!free_b) continue;
    uint64_t largest = p.largest_free_gap(live);
    uint64_t unusable = free_b > largest ? free_b - largest : 0;
    Worst& w = worst_[key];
    if (unusable > w.unusable) w = {t, footprint, p.live_bytes, largest, unusable};
  }
}

void FragmentationAggregator::finish(const LiveState& live, TraceReport* rep) {
  Fragmentation& f = rep->fragmentation;
  f.vmm_reserved_bytes_max = live.reserved_va_max();
  f.vmm_mapped_bytes_max = live.mapped_va_max();
  std::vector<std::pair<uint64_t, const PoolState*>> pools;  // by key: a stable report order
  for (const auto& [key, p] : live.pools()) pools.push_back({key, &p});
  std::sort(pools.begin(), pools.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [key, pool] : pools) {
    const PoolState& p = *pool;
    PoolFragmentation pf;
    char name[40];
    if (is_default_pool_key(key))
      snprintf(name, sizeof name, "default:%d", int(uint32_t(key)));
    else
      snprintf(name, sizeof name, "0x%llx", static_cast<unsigned long long>(key));
    pf.pool = name;
    pf.device = p.device;
    pf.footprint_bytes = p.footprint();
    pf.live_bytes = p.live_bytes;
    pf.largest_free_gap_bytes = p.largest_free_gap(live);
    uint64_t free_b = pf.footprint_bytes > pf.live_bytes ? pf.footprint_bytes - pf.live_bytes : 0;
    pf.fragmentation = free_b ? 1.0 - double(pf.largest_free_gap_bytes) / double(free_b) : 0;
    auto w = worst_.find(key);
    if (w != worst_.end() && w->second.unusable > (free_b > pf.largest_free_gap_bytes ? free_b - pf.largest_free_gap_bytes : 0)) {
      pf.worst_t_ns = w->second.t;
      pf.worst_footprint_bytes = w->second.footprint;
      pf.worst_live_bytes = w->second.live;
      pf.worst_largest_free_gap_bytes = w->second.largest;
      uint64_t wf = w->second.footprint - w->second.live;
      pf.worst_fragmentation = wf ? 1.0 - double(w->second.largest) / double(wf) : 0;
    }
    f.pools.push_back(pf);
  }
}

}  // namespace vt::analyzer
