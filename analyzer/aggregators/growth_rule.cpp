// See growth_rule.h.
#include "aggregators/growth_rule.h"

#include <algorithm>
#include <map>

namespace vt::analyzer {

ThreadSiteSnapshot thread_snapshot(const ThreadShares& shares, const SiteTable::Rows& rows) {
  ThreadSiteSnapshot out;
  if (!shares.several()) return out;
  out.one_thread = false;
  shares.for_each_shared([&](uint32_t r, uint32_t tid, uint64_t bytes) {
    if (bytes && r < rows.size() && rows[r].key.bucket == Bucket::Device) out.bytes.emplace(ThreadSiteKey{rows[r].key, tid}, bytes);
  });
  return out;
}

void SiteCheckpoints::add(uint64_t t, SiteSnapshot snap, ThreadSiteSnapshot threads) {
  t_.push_back(t);
  snaps_.push_back(std::move(snap));
  threads_.push_back(std::move(threads));
  if (snaps_.size() > 128) {  // keep every other one, sample half as often from now on
    size_t w = 0;
    for (size_t i = 0; i < snaps_.size(); i += 2, ++w) {
      if (w == i) continue;  // (no self-move: it may empty a container)
      snaps_[w] = std::move(snaps_[i]);
      threads_[w] = std::move(threads_[i]);
      t_[w] = t_[i];
    }
    snaps_.resize(w);
    threads_.resize(w);
    t_.resize(w);
    every_ *= 2;
  }
  countdown_ = every_;
}

namespace {

// The rule on one series of values (docs/metrics.md, "growth"); min_bytes aside.
bool series_grows(const std::vector<uint64_t>& v, GrowthHit* out) {
  const size_t k = v.size();
  uint64_t hi = 0;
  int highs = 0;
  size_t first_high = 0, last_high = 0;
  for (size_t i = 0; i < k; ++i) {
    if (v[i] > hi) {
      if (i > 0 || v[i] > 0) {
        if (highs == 0) first_high = i;
        last_high = i;
        ++highs;
      }
      hi = v[i];
    }
  }
  out->high = hi;
  out->growth = hi > v[0] ? hi - v[0] : 0;
  out->new_highs = highs;
  out->first_high = first_high;
  out->last_high = last_high;
  return highs >= 3 && (last_high - first_high) * 3 >= k - 1;
}

}  // namespace

std::vector<GrowthHit> growing_sites(const std::vector<const SiteSnapshot*>& snaps,
                                     const std::vector<const ThreadSiteSnapshot*>& threads, const FirstOwner& first_owner,
                                     uint64_t min_bytes) {
  std::vector<GrowthHit> out;
  const size_t k = snaps.size();
  if (k < 4) return out;
  absl::flat_hash_map<SiteKey, bool> seen;
  for (const auto* s : snaps)
    for (const auto& [key, b] : *s) seen.emplace(key, true);
  std::vector<uint64_t> v(k);
  for (const auto& [key, unused] : seen) {
    for (size_t i = 0; i < k; ++i) {
      auto it = snaps[i]->find(key);
      v[i] = it == snaps[i]->end() ? 0 : it->second;
    }
    GrowthHit h;
    h.key = key;
    if (series_grows(v, &h) && h.growth >= min_bytes) out.push_back(std::move(h));
  }
  // Threads: each hit's series thread by thread, in one pass over the thread checkpoints.
  bool have_threads = threads.size() == k;
  bool several = false;
  for (const auto* t : threads) several = several || !t->one_thread;
  if (have_threads && several && !out.empty()) {
    absl::flat_hash_map<SiteKey, size_t> hit_of;
    for (size_t h = 0; h < out.size(); ++h) hit_of.emplace(out[h].key, h);
    std::vector<std::map<uint32_t, std::vector<uint64_t>>> per_thread(out.size());
    auto put = [&](size_t h, uint32_t tid, size_t i, uint64_t b) {
      std::vector<uint64_t>& series = per_thread[h][tid];
      series.resize(k, 0);
      series[i] = b;
    };
    std::vector<uint32_t> owner(out.size(), 0);
    std::vector<bool> owned(out.size(), false);
    for (size_t h = 0; h < out.size(); ++h) owned[h] = first_owner && first_owner(out[h].key, &owner[h]);
    for (size_t i = 0; i < k; ++i) {
      std::vector<bool> split(out.size(), false);  // the site has entries here: several threads by then
      for (const auto& [key, b] : threads[i]->bytes)
        if (auto it = hit_of.find(key.site); it != hit_of.end()) {
          put(it->second, key.tid, i, b);
          split[it->second] = true;
        }
      for (size_t h = 0; h < out.size(); ++h)  // one owner so far: the site's bytes are its first thread's
        if (!split[h] && owned[h])
          if (auto it = snaps[i]->find(out[h].key); it != snaps[i]->end() && it->second) put(h, owner[h], i, it->second);
    }
    std::vector<GrowthHit> kept;
    for (size_t h = 0; h < out.size(); ++h) {
      uint64_t own = 0;
      for (const auto& [tid, series] : per_thread[h]) {
        GrowthHit t;
        if (series_grows(series, &t) && t.growth) {
          out[h].threads.push_back({tid, t.growth});
          own += t.growth;
        }
      }
      if (own < min_bytes) continue;  // concurrency: no thread's own bytes grew enough
      std::sort(out[h].threads.begin(), out[h].threads.end(), [](const ThreadGrowth& a, const ThreadGrowth& b) {
        return a.growth != b.growth ? a.growth > b.growth : a.tid < b.tid;
      });
      kept.push_back(std::move(out[h]));
    }
    out = std::move(kept);
  }
  std::sort(out.begin(), out.end(), [](const GrowthHit& a, const GrowthHit& b) {
    if (a.growth != b.growth) return a.growth > b.growth;
    if (a.key.stack != b.key.stack) return a.key.stack < b.key.stack;
    return a.key.device < b.key.device;
  });
  return out;
}

}  // namespace vt::analyzer
