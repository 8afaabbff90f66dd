// See growth_rule.h.
#include "aggregators/growth_rule.h"

#include <algorithm>

namespace vt::analyzer {

void SiteCheckpoints::add(uint64_t t, SiteSnapshot snap) {
  t_.push_back(t);
  snaps_.push_back(std::move(snap));
  if (snaps_.size() > 128) {  // keep every other one, sample half as often from now on
    size_t w = 0;
    for (size_t i = 0; i < snaps_.size(); i += 2, ++w) {
      if (w == i) continue;  // (no self-move: it may empty a container)
      snaps_[w] = std::move(snaps_[i]);
      t_[w] = t_[i];
    }
    snaps_.resize(w);
    t_.resize(w);
    every_ *= 2;
  }
  countdown_ = every_;
}

std::vector<GrowthHit> growing_sites(const std::vector<const SiteSnapshot*>& snaps, uint64_t min_bytes) {
  std::vector<GrowthHit> out;
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
    if (highs >= 3 && (last_high - first_high) * 3 >= k - 1 && growth >= min_bytes)
      out.push_back({key, hi, growth, highs, first_high, last_high});
  }
  std::sort(out.begin(), out.end(), [](const GrowthHit& a, const GrowthHit& b) {
    if (a.growth != b.growth) return a.growth > b.growth;
    if (a.key.stack != b.key.stack) return a.key.stack < b.key.stack;
    return a.key.device < b.key.device;
  });
  return out;
}

}  // namespace vt::analyzer
