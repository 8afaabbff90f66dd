// See leaks.h.
#include "aggregators/leaks.h"

#include <algorithm>

#include "aggregators/site_groups.h"

namespace vt::analyzer {

namespace {

absl::flat_hash_map<SiteKey, uint64_t> device_sites(const LiveState& live) {
  absl::flat_hash_map<SiteKey, uint64_t> snap;
  for (const auto& [k, b] : live.sites())
    if (k.bucket == Bucket::Device && b.bytes) snap.emplace(k, b.bytes);
  return snap;
}

// A growing site's count: its allocations live now (at the failure, or at the end).
void count_live(const LiveState& live, std::vector<GrowthSite>& sites) {
  for (GrowthSite& g : sites) {
    const SiteBytes* b = live.site(SiteKey{g.site.stack_id, g.site.device, Bucket::Device});
    g.site.count = b ? b->count : 0;
  }
}

}  // namespace

void LeakAggregator::checkpoint(const LiveState& live, uint64_t now) {
  t_.push_back(now);
  snaps_.push_back(device_sites(live));
  if (snaps_.size() > 128) {  // keep every other one, sample half as often from now on
    size_t w = 0;
    for (size_t i = 0; i < snaps_.size(); i += 2, ++w) {
      snaps_[w] = std::move(snaps_[i]);
      t_[w] = t_[i];
    }
    snaps_.resize(w);
    t_.resize(w);
    every_ *= 2;
  }
}

// A site grows when it reached a new high at 3 or more checkpoints spread over at least a third
// of them, by at least min_bytes above where it started.
std::vector<GrowthSite> LeakAggregator::growth(const LiveState* now_state, uint64_t now, uint64_t min_bytes) const {
  std::vector<uint64_t> times = t_;
  std::vector<const Snapshot*> snaps;
  for (const auto& s : snaps_) snaps.push_back(&s);
  Snapshot current;
  if (now_state) {
    current = device_sites(*now_state);
    snaps.push_back(&current);
    times.push_back(now);
  }
  std::vector<GrowthSite> out;
  size_t k = snaps.size();
  if (k < 4) return out;
  absl::flat_hash_map<SiteKey, bool> seen;
  for (const auto* s : snaps)
    for (const auto& [key, b] : *s) seen.emplace(key, true);
  for (const auto& [key, unused] : seen) {
    uint64_t hi = 0, first = 0;
    int highs = 0;
    size_t first_high = 0, last_high = 0;
    for (size_t i = 0; i < k; ++i) {
      auto it = snaps[i]->find(key);
      uint64_t v = it == snaps[i]->end() ? 0 : it->second;
      if (i == 0) first = v;
      if (v > hi) {
        if (i > 0 || v > 0) {
          if (highs == 0) first_high = i;
          last_high = i;
          ++highs;
        }
        hi = v;
      }
    }
    uint64_t growth = hi > first ? hi - first : 0;
    if (highs >= 3 && (last_high - first_high) * 3 >= k - 1 && growth >= min_bytes) {
      GrowthSite g;
      g.site.stack_id = key.stack;
      g.site.device = key.device;
      g.site.kind = bucket_name(key.bucket);
      g.site.bytes = hi;
      g.growth_bytes = growth;
      g.new_highs = highs;
      g.first_t_ns = times[first_high];
      g.last_t_ns = times[last_high];
      out.push_back(g);
    }
  }
  // Ties in a fixed order: the hash map's iteration order changes from run to run.
  std::sort(out.begin(), out.end(), [](const GrowthSite& a, const GrowthSite& b) {
    if (a.growth_bytes != b.growth_bytes) return a.growth_bytes > b.growth_bytes;
    if (a.site.stack_id != b.site.stack_id) return a.site.stack_id < b.site.stack_id;
    return a.site.device < b.site.device;
  });
  return out;
}

std::vector<GrowthSite> LeakAggregator::grew_before(const LiveState& live, uint64_t now, uint64_t min_bytes) const {
  std::vector<GrowthSite> out = growth(&live, now, min_bytes);
  count_live(live, out);
  return out;
}

void LeakAggregator::finish(const LiveState& live, size_t top, TraceReport* rep) const {
  rep->end = rep->process.closed_cleanly ? "clean_exit" : "killed";
  rep->leaks = site_groups(live.sites(), 0, false);
  for (const SiteGroup& g : rep->leaks) {
    rep->leak_bytes += g.bytes;
    rep->leak_count += g.count;
  }
  if (rep->leaks.size() > top) rep->leaks.resize(top);
  rep->teardown = site_groups(live.teardown(), 0, false);
  for (const SiteGroup& g : rep->teardown) {
    rep->teardown_bytes += g.bytes;
    rep->teardown_count += g.count;
  }
  if (rep->teardown.size() > top) rep->teardown.resize(top);
  uint64_t peak_bytes = rep->peaks.empty() ? 0 : rep->peaks[0].bytes;
  rep->growth = growth(nullptr, 0, std::max<uint64_t>(1 << 20, peak_bytes / 100));
  count_live(live, rep->growth);
  if (rep->growth.size() > top) rep->growth.resize(top);
}

}  // namespace vt::analyzer
