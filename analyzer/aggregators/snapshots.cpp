// See snapshots.h.
#include "aggregators/snapshots.h"

#include <algorithm>


namespace vt::analyzer {

size_t SnapshotAggregator::target(size_t rows) const {
  constexpr size_t kTarget = 64, kRows = 16384;
  return rows <= kRows ? kTarget : std::max<size_t>(8, kTarget * kRows / rows);
}

void SnapshotAggregator::take(uint64_t t, const LiveState& live) {
  if (!started_) {  // the grid starts at the first event, its first edge (taken at the next event)
    started_ = true;
    t0_ = t;
    next_edge_ = t;
    return;
  }
  // t is the first event after next_edge_: the state now is the state at that instant, and it
  // stays so until t (the snapshot stands for every instant in between).
  Snapshot s;
  s.t_ns = next_edge_;
  s.until_ns = t;
  for (const DeviceTotals& d : live.devices())
    if (d.bytes[int(Bucket::Device)]) s.devices.push_back({d.device, d.bytes[int(Bucket::Device)]});
  // The biggest rows, by bytes then stack id (as every list of the report sorts them), then
  // device and bucket: held_sites() has no order of its own, the output must have one.
  std::vector<const SiteTable::Row*> top;
  auto bigger = [](const SiteTable::Row* a, const SiteTable::Row* b) {
    if (a->b.bytes != b->b.bytes) return a->b.bytes > b->b.bytes;
    if (a->key.stack != b->key.stack) return a->key.stack < b->key.stack;
    if (a->key.device != b->key.device) return a->key.device < b->key.device;
    return a->key.bucket < b->key.bucket;
  };
  const SiteTable::Rows& rows = live.sites();
  for (uint32_t i : live.held_sites()) {  // the rows with live allocations only
    const SiteTable::Row& row = rows[i];
    if (!row.b.bytes) continue;
    s.total_bytes += row.b.bytes;
    if (top.size() < kSites) {
      top.push_back(&row);
      std::push_heap(top.begin(), top.end(), bigger);
    } else if (bigger(&row, top.front())) {
      std::pop_heap(top.begin(), top.end(), bigger);
      top.back() = &row;
      std::push_heap(top.begin(), top.end(), bigger);
    }
  }
  std::sort(top.begin(), top.end(), bigger);
  for (const SiteTable::Row* r : top)
    s.sites.push_back({r->key.stack, r->key.device, bucket_name(r->key.bucket), r->b.bytes, r->b.count});
  snaps_.push_back(std::move(s));
  uint64_t k = (t - t0_ + width_ - 1) / width_;  // the first edge at or after t
  next_edge_ = t0_ + k * width_;
  if (next_edge_ < t0_) next_edge_ = ~0ull;  // saturate where it would wrap
  if (snaps_.size() > 2 * target(live.held_sites().size())) coarsen();
}

// Twice the width: only snapshots at even multiples of the new width stay on the grid.
void SnapshotAggregator::coarsen() {
  width_ *= 2;
  size_t kept = 0;
  for (size_t i = 0; i < snaps_.size(); ++i)
    if ((snaps_[i].t_ns - t0_) % width_ == 0) {
      if (kept != i) snaps_[kept] = std::move(snaps_[i]);  // (a self-move would empty its vectors)
      ++kept;
    }
  snaps_.resize(kept);
  uint64_t k = (next_edge_ - t0_ + width_ - 1) / width_;  // the next edge on the new grid
  next_edge_ = t0_ + k * width_;
}

void SnapshotAggregator::finish(TraceReport* rep) {
  // At most kStacks distinct stacks in all (the page carries each symbolized): those with the
  // most bytes in any snapshot. A trace where every event has a new stack would otherwise bring
  // up to 8 per snapshot; the sites of the others count in the snapshot's "other call sites".
  std::map<uint32_t, uint64_t> best;
  for (const Snapshot& s : snaps_)
    for (const Snapshot::Site& x : s.sites) best[x.stack_id] = std::max(best[x.stack_id], x.bytes);
  if (best.size() > kStacks) {
    std::vector<std::pair<uint64_t, uint32_t>> order;
    for (const auto& [id, bytes] : best) order.push_back({bytes, id});
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::map<uint32_t, bool> keep;
    for (size_t i = 0; i < kStacks; ++i) keep[order[i].second] = true;
    for (Snapshot& s : snaps_)
      s.sites.erase(std::remove_if(s.sites.begin(), s.sites.end(), [&](const Snapshot::Site& x) { return !keep.count(x.stack_id); }),
                    s.sites.end());
  }
  rep->snapshots.interval_ns = started_ ? width_ : 0;
  rep->snapshots.at = std::move(snaps_);
}

}  // namespace vt::analyzer
