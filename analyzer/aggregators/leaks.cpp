// See leaks.h.
#include "aggregators/leaks.h"

#include <functional>

#include <algorithm>
#include <utility>

#include <absl/container/flat_hash_map.h>

#include "aggregators/site_groups.h"
#include "user_frames.h"

namespace vt::analyzer {

namespace {

SiteSnapshot device_sites(const LiveState& live) {
  SiteSnapshot snap;
  const SiteTable::Rows& rows = live.sites();
  for (uint32_t i : live.held_sites()) {  // (a row with bytes has live allocations)
    const SiteTable::Row& row = rows[i];
    if (row.key.bucket == Bucket::Device && row.b.bytes) snap.emplace(row.key, row.b.bytes);
  }
  return snap;
}

// A growing site's count: its allocations live now (at the failure, or at the end).
void count_live(const LiveState& live, std::vector<GrowthSite>& sites) {
  for (GrowthSite& g : sites) {
    const SiteBytes* b = live.site(SiteKey{g.site.stack_id, g.site.device, Bucket::Device});
    g.site.count = b ? b->count : 0;
  }
}

ThreadSiteSnapshot device_threads(const LiveState& live) {
  return thread_snapshot(live.thread_shares(), live.sites());
}

// A growth's threads, named at symbolizing.
std::vector<ThreadShare> shares_of(const GrowthHit& h) {
  std::vector<ThreadShare> out;
  for (const ThreadGrowth& t : h.threads) out.push_back({t.tid, t.growth, ""});
  return out;
}

}  // namespace

void LeakAggregator::checkpoint(const LiveState& live, uint64_t now) {
  checkpoints_.add(now, device_sites(live), device_threads(live));
}

std::vector<GrowthSite> LeakAggregator::growth(const LiveState& live, const LiveState* now_state, uint64_t now,
                                               uint64_t min_bytes) const {
  std::vector<uint64_t> times = checkpoints_.times();
  std::vector<const SiteSnapshot*> snaps;
  for (const auto& s : checkpoints_.snapshots()) snaps.push_back(&s);
  std::vector<const ThreadSiteSnapshot*> threads;
  for (const auto& s : checkpoints_.thread_snapshots()) threads.push_back(&s);
  SiteSnapshot current;
  ThreadSiteSnapshot current_threads;
  if (now_state) {
    current = device_sites(*now_state);
    current_threads = device_threads(*now_state);
    snaps.push_back(&current);
    threads.push_back(&current_threads);
    times.push_back(now);
  }
  std::vector<GrowthSite> out;
  FirstOwner owner = [&live](const SiteKey& k, uint32_t* tid) {
    return live.thread_shares().first_owner(live.site_table().find_row(k), tid);
  };
  for (const GrowthHit& h : growing_sites(snaps, threads, owner, min_bytes)) {
    GrowthSite g;
    g.site.stack_id = h.key.stack;
    g.site.device = h.key.device;
    g.site.kind = bucket_name(h.key.bucket);
    g.site.bytes = h.high;
    g.growth_bytes = h.growth;
    g.new_highs = h.new_highs;
    g.first_t_ns = times[h.first_high];
    g.last_t_ns = times[h.last_high];
    g.site.threads = shares_of(h);
    if (!h.threads.empty() && now_state)
      g.threads_at_site = now_state->thread_shares().threads_at(now_state->site_table().find_row(h.key));
    out.push_back(g);
  }
  return out;
}

std::vector<GrowthSite> LeakAggregator::grew_before(const LiveState& live, uint64_t now, uint64_t min_bytes) const {
  std::vector<GrowthSite> out = growth(live, &live, now, min_bytes);
  count_live(live, out);
  return out;
}

void LeakAggregator::finish(const LiveState& live, const AllocatorAtExit& cache, size_t top, TraceReport* rep) const {
  rep->end = rep->process.closed_cleanly ? "clean_exit" : "killed";
  // Imported memory is another process's: what is still open at the end is no leak of this one
  // (format/accounting.h, rule 10), and the report lists it apart.
  SharingReport& sh = rep->sharing;
  std::vector<SiteGroup> groups;
  if (!cache.known) {
    groups = site_groups(live.sites(), 0, false);
    attach_threads(groups, live.site_table(), live.thread_shares());
  } else {
    // The caching allocator's segments leave the driver-level rows; its live tensors come instead.
    absl::flat_hash_map<SiteKey, SiteBytes> cached;
    for (const SiteTable::Row& row : cache.segments) cached[row.key] = row.b;
    std::vector<SiteTable::Row> rows;
    for (const SiteTable::Row& row : live.sites()) {
      SiteTable::Row r = row;
      if (auto it = cached.find(row.key); it != cached.end()) {
        r.b.bytes -= std::min(r.b.bytes, it->second.bytes);
        r.b.count -= std::min(r.b.count, it->second.count);
      }
      if (r.b.bytes || r.b.count) rows.push_back(r);
    }
    groups = site_groups(rows, 0, false);
    attach_threads(groups, live.site_table(), live.thread_shares());
    std::vector<SiteGroup> tensors = site_groups(cache.tensors, 0, false);
    if (cache.tensor_table && cache.tensor_threads) attach_threads(tensors, *cache.tensor_table, *cache.tensor_threads);
    for (SiteGroup& g : tensors) g.kind = "tensor";
    groups.insert(groups.end(), tensors.begin(), tensors.end());
    std::stable_sort(groups.begin(), groups.end(), [](const SiteGroup& a, const SiteGroup& b) { return a.bytes > b.bytes; });
    TorchCacheAtExit& c = rep->torch_cache_at_exit;
    c.known = true;
    c.reserved_bytes = cache.reserved;
    c.segments = cache.segment_count;
    c.allocated_bytes = cache.allocated;
  }
  for (SiteGroup& g : groups) {
    const bool imported = g.kind == bucket_name(Bucket::Imported);
    (imported ? sh.imported_bytes : rep->leak_bytes) += g.bytes;
    (imported ? sh.imported_count : rep->leak_count) += g.count;
    (imported ? sh.imported : rep->leaks).push_back(std::move(g));
  }
  for (std::vector<SiteGroup>* v : {&rep->leaks, &sh.imported}) {
    uint64_t total = 0;
    for (const SiteGroup& g : *v) total += g.bytes;
    for (SiteGroup& g : *v) g.share = total ? double(g.bytes) / double(total) : 0;
    if (v->size() > top) v->resize(top);
  }
  rep->teardown = site_groups(live.teardown(), 0, false);
  for (const SiteGroup& g : rep->teardown) {
    rep->teardown_bytes += g.bytes;
    rep->teardown_count += g.count;
  }
  if (rep->teardown.size() > top) rep->teardown.resize(top);
  uint64_t peak_bytes = rep->peaks.empty() ? 0 : rep->peaks[0].bytes;
  // The checkpoints, then the end: what a thread kept after the last checkpoint (up to 2 x its
  // cadence of events) counts too.
  rep->growth = growth(live, &live, rep->last_t_ns, std::max<uint64_t>(1 << 20, peak_bytes / 100));
  if (cache.known) {  // PyTorch's segments are its reserved memory: the tensor lines say what grew
    auto segment = [&](const GrowthSite& g) { return cache.segment_stacks.count(g.site.stack_id) > 0; };
    rep->torch_segment_growth = std::count_if(rep->growth.begin(), rep->growth.end(), segment);
    rep->growth.erase(std::remove_if(rep->growth.begin(), rep->growth.end(), segment), rep->growth.end());
  }
  count_live(live, rep->growth);
  if (rep->growth.size() > top) rep->growth.resize(top);
}

namespace {

// PyTorch's CUDA libraries: the caching host allocator lives in libtorch_cuda.so (its functions
// are local symbols, stripped in distributed builds: the module is the evidence that remains).
bool torch_cuda_library(const std::string& module) {
  return module.rfind("libtorch_cuda.so", 0) == 0 || module.rfind("libc10_cuda.so", 0) == 0;
}

}  // namespace

void take_out_of_leaks(TraceReport* rep, const std::function<bool(const SiteGroup&)>& is_cache, uint64_t* bytes,
                       uint64_t* count) {
  std::vector<SiteGroup> kept;
  uint64_t total = 0;
  for (SiteGroup& g : rep->leaks) {
    if (is_cache(g)) {
      *bytes += g.bytes;
      if (count) *count += g.count;
      rep->leak_bytes -= std::min(rep->leak_bytes, g.bytes);
      rep->leak_count -= std::min(rep->leak_count, g.count);
      continue;
    }
    total += g.bytes;
    kept.push_back(std::move(g));
  }
  for (SiteGroup& g : kept) g.share = total ? double(g.bytes) / double(total) : 0;
  rep->leaks = std::move(kept);
}

void torch_host_cache_out_of_leaks(TraceReport* rep) {
  if (!rep->torch.present) return;
  TorchHostCacheAtExit& c = rep->torch_host_cache_at_exit;
  take_out_of_leaks(
      rep,
      [](const SiteGroup& g) {
        return g.kind == bucket_name(Bucket::PinnedHost) && torch_cuda_library(stack_library(g.stack));
      },
      &c.bytes, &c.count);
}

}  // namespace vt::analyzer
