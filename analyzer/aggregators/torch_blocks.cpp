// See torch_blocks.h.
#include "aggregators/torch_blocks.h"

#include <algorithm>
#include <cstdio>

#include "aggregators/oom.h"
#include "aggregators/site_groups.h"

namespace vt::analyzer {

namespace {

std::string hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

bool is_segment_op(const OpInfo& op) {
  return op.kind == MemKind::Device || op.kind == MemKind::VmmMapping || op.kind == MemKind::VmmReservation;
}

// PyTorch's segment sizes (c10/cuda/CUDACachingAllocator.cpp, get_allocation_size): what a request
// of `size` (already rounded) asks the driver for when no cached block fits.
uint64_t allocation_size(uint64_t size) {
  constexpr uint64_t kSmallSize = 1 << 20, kSmallBuffer = 2 << 20, kLargeBuffer = 20 << 20, kMinLargeAlloc = 10 << 20,
                     kRoundLarge = 2 << 20;
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

}  // namespace

void TorchAggregator::on_record(const Record& r, const LiveState& live) {
  seen_ = true;
  switch (r.tag) {
    case format::kTagTorchBlock:
    case format::kTagTorchAlloc:
    case format::kTagTorchStreamAlloc: {
      TorchBlock b;
      ++block_events_;
      if (!decode_torch_block(r, &b)) {
        invalidate(r.t_ns, "a damaged block record");
        return;
      }
      if (!valid_) return;
      if (!tracking_) start_tracking(live);
      on_block(r.t_ns, r.tid, b);
      return;
    }
    case format::kTagTorchOom: {
      TorchOom o;
      ++oom_events_;
      if (decode_torch_oom(r, &o) && valid_) {
        if (!tracking_) start_tracking(live);
        on_oom(r.t_ns, o, live);
      }
      return;
    }
    case format::kTagTorchStatus: {
      TorchStatus s;
      if (!decode_torch_status(r, &s)) return;
      // An "off" status is final; an "on" one says where calls went.
      if (!status_seen_ || !s.on) status_ = s;
      status_seen_ = true;
      return;
    }
    case format::kTagTorchConfig:
      config_seen_ = decode_torch_config(r, &config_);
      return;
    default: return;
  }
}

void TorchAggregator::invalidate(uint64_t t, const std::string& why) {
  if (!valid_) return;
  valid_ = false;
  invalid_t_ = t;
  invalid_why_ = why;
  tracking_ = false;
  // What was built is of no use now: the report gives driver-level figures only.
  regions_.clear();
  owners_.clear();
  blocks_.clear();
}

// The segments that exist when the first block arrives, taken from the replay: device allocations
// and mapped VMM ranges (with their reservations). From then on driver_event() follows them.
void TorchAggregator::start_tracking(const LiveState& live) {
  tracking_ = true;
  for (const auto& slot : live.live()) {
    const AllocInfo a = live.info(slot.second);
    if (a.kind != MemKind::Device) continue;
    owners_[slot.first] = Owner{a.device, false, false, a.size, a.stack};
    add_region(slot.first, slot.first + a.size, slot.first, a.device, false);
  }
  for (const auto& [lo, size] : live.reservations()) {
    reservations_[lo] = lo + size;
    owners_[lo] = Owner{-1, true, false, 0, 0};
  }
  for (const auto& [va, m] : live.mappings()) {
    auto h = live.vmm_handles().find(m.handle);
    int device = h != live.vmm_handles().end() ? live.info(h->second).device : -1;
    auto res = reservations_.upper_bound(va);
    uint64_t owner = va;
    if (res != reservations_.begin() && std::prev(res)->second >= va + m.size) owner = std::prev(res)->first;
    Owner& o = owners_[owner];
    o.expandable = true;
    if (o.device < 0) o.device = device;
    o.bytes += m.size;
    add_region(va, va + m.size, owner, device, true);
  }
}

void TorchAggregator::driver_event(const Record& r) {
  if (!r.op || !is_segment_op(*r.op)) return;
  const OpInfo& op = *r.op;
  bool acquire = op.action == Action::Acquire;
  if (op.kind == MemKind::Device) {
    if (acquire) {
      owners_[r.addr] = Owner{r.device, false, false, r.size, r.stack};
      add_region(r.addr, r.addr + r.size, r.addr, r.device, false);
      return;
    }
    auto it = owners_.find(r.addr);
    if (it == owners_.end() || it->second.expandable) return;
    Owner o = it->second;
    remove_range(r.addr, r.addr + o.bytes, r.t_ns);
    if (!valid_) return;
    if (o.torch) {
      Dev& d = dev(o.device);
      d.reserved -= std::min(d.reserved, o.bytes);
      d.segments -= d.segments ? 1 : 0;
    }
    owners_.erase(r.addr);
    return;
  }
  if (op.kind == MemKind::VmmReservation) {
    if (acquire) {
      reservations_[r.addr] = r.addr + r.size;
      owners_[r.addr] = Owner{r.device, true, false, 0, r.stack};
    } else {
      reservations_.erase(r.addr);
      auto it = owners_.find(r.addr);
      if (it != owners_.end() && it->second.bytes == 0) owners_.erase(it);
    }
    return;
  }
  // VMM mappings: the ranges of an expandable segment that hold memory.
  auto res = reservations_.upper_bound(r.addr);
  uint64_t owner = r.addr;
  if (res != reservations_.begin() && std::prev(res)->second >= r.addr + r.size) owner = std::prev(res)->first;
  if (acquire) {
    Owner& o = owners_[owner];
    o.expandable = true;
    if (o.device < 0) o.device = r.device;
    o.bytes += r.size;
    if (o.torch) {
      Dev& d = dev(o.device);
      d.reserved += r.size;
    }
    add_region(r.addr, r.addr + r.size, owner, o.device, true);
  } else {
    auto it = owners_.find(owner);
    remove_range(r.addr, r.addr + r.size, r.t_ns);
    if (!valid_ || it == owners_.end()) return;
    Owner& o = it->second;
    o.bytes -= std::min(o.bytes, r.size);
    if (o.torch) {
      Dev& d = dev(o.device);
      d.reserved -= std::min(d.reserved, r.size);
    }
  }
}

void TorchAggregator::gap_add(Region& g, uint64_t v) {
  g.gaps.insert(v);
  auto o = owners_.find(g.owner);
  if (o != owners_.end() && o->second.torch) dev(g.device).gaps.insert(v);
}

void TorchAggregator::gap_remove(Region& g, uint64_t v) {
  auto it = g.gaps.find(v);
  if (it != g.gaps.end()) g.gaps.erase(it);
  auto o = owners_.find(g.owner);
  if (o != owners_.end() && o->second.torch) {
    std::multiset<uint64_t>& dg = dev(g.device).gaps;
    auto jt = dg.find(v);
    if (jt != dg.end()) dg.erase(jt);
  }
}

// Free bytes of a segment that still holds a block: PyTorch's inactive split (never for
// expandable segments, which it does not count there).
uint64_t TorchAggregator::inactive_of(const Region& g, uint64_t lo) const {
  if (g.expandable || !g.allocated) return 0;
  auto o = owners_.find(g.owner);
  if (o == owners_.end() || !o->second.torch) return 0;
  return g.hi - lo - g.allocated;
}

void TorchAggregator::add_region(uint64_t lo, uint64_t hi, uint64_t owner, int device, bool expandable) {
  if (hi <= lo) return;
  auto [it, inserted] = regions_.emplace(lo, Region{});
  if (!inserted) return;  // a range the driver gave twice: damage, kept as it was
  Region& g = it->second;
  g.hi = hi;
  g.owner = owner;
  g.device = device;
  g.expandable = expandable;
  if (expandable) {  // merge with the adjacent mapped ranges of the same reservation
    if (it != regions_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.hi == lo && prev->second.owner == owner && prev->second.expandable) {
        for (uint64_t v : std::vector<uint64_t>(prev->second.gaps.begin(), prev->second.gaps.end())) gap_remove(prev->second, v);
        prev->second.hi = hi;
        regions_.erase(it);
        it = prev;
      }
    }
    auto next = std::next(it);
    if (next != regions_.end() && next->first == it->second.hi && next->second.owner == owner && next->second.expandable) {
      for (uint64_t v : std::vector<uint64_t>(next->second.gaps.begin(), next->second.gaps.end())) gap_remove(next->second, v);
      for (uint64_t v : std::vector<uint64_t>(it->second.gaps.begin(), it->second.gaps.end())) gap_remove(it->second, v);
      it->second.hi = next->second.hi;
      it->second.allocated += next->second.allocated;
      it->second.blocks += next->second.blocks;
      regions_.erase(next);
    }
  }
  rebuild_gaps(it);
}

// The free pieces of a region, from its blocks (after it was created, merged or cut).
void TorchAggregator::rebuild_gaps(std::map<uint64_t, Region>::iterator it) {
  Region& g = it->second;
  for (uint64_t v : std::vector<uint64_t>(g.gaps.begin(), g.gaps.end())) gap_remove(g, v);
  uint64_t at = it->first, allocated = 0, blocks = 0;
  for (auto b = blocks_.lower_bound(it->first); b != blocks_.end() && b->first < g.hi; ++b) {
    if (b->first > at) gap_add(g, b->first - at);
    at = b->first + b->second.size;
    allocated += b->second.size;
    ++blocks;
  }
  if (g.hi > at) gap_add(g, g.hi - at);
  g.allocated = allocated;
  g.blocks = blocks;
}

// Regions (or parts of them) in [lo, hi) are gone: freed or unmapped. A live block there means the
// records and the driver disagree.
void TorchAggregator::remove_range(uint64_t lo, uint64_t hi, uint64_t t) {
  auto b = blocks_.lower_bound(lo);
  if (b != blocks_.end() && b->first < hi) {
    invalidate(t, "segment memory at " + hex(lo) + " went back to the driver while it held a live block (" + hex(b->first) + ")");
    return;
  }
  auto it = regions_.upper_bound(lo);
  if (it != regions_.begin()) --it;
  while (it != regions_.end() && it->first < hi) {
    uint64_t rlo = it->first;
    Region g = it->second;
    if (g.hi <= lo) {
      ++it;
      continue;
    }
    uint64_t inactive = inactive_of(g, rlo);
    Dev* d = nullptr;
    auto o = owners_.find(g.owner);
    if (o != owners_.end() && o->second.torch) d = &dev(g.device);
    if (d) d->inactive -= std::min(d->inactive, inactive);
    for (uint64_t v : std::vector<uint64_t>(it->second.gaps.begin(), it->second.gaps.end())) gap_remove(it->second, v);
    it = regions_.erase(it);
    // What remains on either side of the cut stays a region of the same owner.
    for (auto [plo, phi] : {std::pair<uint64_t, uint64_t>{rlo, std::min(lo, g.hi)}, {std::max(hi, rlo), g.hi}}) {
      if (phi <= plo || (plo >= lo && phi <= hi)) continue;
      auto [nt, ok] = regions_.emplace(plo, Region{});
      if (!ok) continue;
      nt->second.hi = phi;
      nt->second.owner = g.owner;
      nt->second.device = g.device;
      nt->second.expandable = g.expandable;
      rebuild_gaps(nt);
      if (d) d->inactive += inactive_of(nt->second, plo);
      it = std::next(nt);
    }
  }
}

void TorchAggregator::make_torch(uint64_t owner_key, Owner& o, uint64_t t) {
  o.torch = true;
  segment_stacks_.insert(o.stack);
  expandable_seen_ |= o.expandable;
  judge_fragmentation(t, o.device);  // PyTorch needed a new segment: what the others' free space was
  Dev& d = dev(o.device);
  d.reserved += o.bytes;
  d.segments++;
  auto it = o.expandable ? regions_.lower_bound(owner_key) : regions_.find(owner_key);
  for (; it != regions_.end(); ++it) {
    if (it->second.owner != owner_key) {
      if (!o.expandable) break;
      auto res = reservations_.find(owner_key);
      if (res == reservations_.end() || it->first >= res->second) break;
      continue;
    }
    for (uint64_t v : it->second.gaps) d.gaps.insert(v);
    d.inactive += inactive_of(it->second, it->first);
    if (!o.expandable) break;
  }
}

TorchAggregator::SiteSnap TorchAggregator::site_snapshot(int device, uint64_t t) const {
  SiteSnap s;
  s.t = t;
  const SiteTable::Rows& rows = sites_.rows();
  for (uint32_t i = 0; i < rows.size(); ++i)
    if (rows[i].b.bytes && rows[i].key.device == device) {
      s.rows.push_back({i, rows[i].b.bytes});
      s.total += rows[i].b.bytes;
    }
  return s;
}

// The current bucket ends: each device's high goes to its timeline.
void TorchAggregator::next_bucket() {
  for (auto& [device, d] : devs_) {
    if (d.bucket_pending) d.bucket = site_snapshot(device, d.bucket.t);
    if (d.bucket_pending || d.bucket.t) d.snaps.push_back(std::move(d.bucket));
    d.bucket = SiteSnap{};
    d.bucket_pending = false;
    if (d.snaps.size() > 2 * kTensorSnaps) {  // pairs become one bucket: the higher of the two
      size_t w = 0;
      for (size_t i = 0; i + 1 < d.snaps.size(); i += 2)
        d.snaps[w++] = std::move(d.snaps[i + 1].total >= d.snaps[i].total ? d.snaps[i + 1] : d.snaps[i]);
      d.snaps.resize(w);
      snap_width_ *= 2;
    }
  }
}

void TorchAggregator::on_block(uint64_t t, uint32_t tid, const TorchBlock& b) {
  // A block in a new time bucket: the last one's highs go to the tensor timeline.
  if (!snap_next_) {
    snap_t0_ = t;
    snap_next_ = t + snap_width_;
  } else if (t >= snap_next_) {
    next_bucket();
    snap_next_ = snap_t0_ + ((t - snap_t0_) / snap_width_ + 1) * snap_width_;
  }
  uint64_t size = b.size < 0 ? uint64_t(0) - uint64_t(b.size) : uint64_t(b.size);
  const uint64_t addr = b.addr, end = addr + size;
  const int device = b.device;
  auto rit = regions_.upper_bound(addr);
  if (rit == regions_.begin() || std::prev(rit)->second.hi < end || end < addr) {
    invalidate(t, "a block at " + hex(addr) + " (" + std::to_string(size) + " bytes) lies in no segment the driver layer saw");
    return;
  }
  --rit;
  Region& g = rit->second;
  const uint64_t lo = rit->first;
  if (g.device >= 0 && g.device != device) {
    invalidate(t, "a block of device " + std::to_string(device) + " lies in a segment of device " + std::to_string(g.device));
    return;
  }
  Dev& d = dev(device);
  if (b.size > 0) {
    Owner& o = owners_[g.owner];
    if (!o.torch) {
      if (o.device < 0) o.device = device;
      if (g.device < 0) g.device = device;
      make_torch(g.owner, o, t);
    }
    auto next = blocks_.lower_bound(addr);
    uint64_t right = next != blocks_.end() && next->first < g.hi ? next->first : g.hi;
    uint64_t left = lo;
    if (next != blocks_.begin()) {
      auto prev = std::prev(next);
      if (prev->first >= lo) left = prev->first + prev->second.size;
    }
    if (left > addr || end > right) {
      invalidate(t, "a block at " + hex(addr) + " (" + std::to_string(size) + " bytes) overlaps a live block");
      return;
    }
    uint64_t before = inactive_of(g, lo);
    gap_remove(g, right - left);
    if (addr > left) gap_add(g, addr - left);
    if (right > end) gap_add(g, right - end);
    g.allocated += size;
    g.blocks++;
    d.inactive += inactive_of(g, lo) - before;  // (may wrap and come back: unsigned arithmetic)
    uint32_t row = sites_.row(SiteKey{b.stack, device, Bucket::Device});
    SiteBytes& s = sites_.at(row);
    threads_.change(row, tid, +1, size, s.bytes);
    s.bytes += size;
    s.count++;
    blocks_.emplace_hint(next, addr, Block{size, b.stack, row, tid, t});
    d.allocated += size;
    allocated_all_ += size;
    d.blocks++;
  } else {
    auto it = blocks_.find(addr);
    if (it == blocks_.end() || it->second.size != size) {
      invalidate(t, it == blocks_.end() ? "a block at " + hex(addr) + " was taken back without being handed out"
                                        : "a block at " + hex(addr) + " was taken back with another size");
      return;
    }
    if (d.pending && d.allocated >= d.peak) {  // the peak is about to be left: its view, now
      d.peak_view = view(device, d.peak_t);
      d.pending = false;
    }
    if (d.bucket_pending) {  // so is the bucket's high
      d.bucket = site_snapshot(device, d.bucket.t);
      d.bucket_pending = false;
    }
    auto next = std::next(it);
    uint64_t right = next != blocks_.end() && next->first < g.hi ? next->first : g.hi;
    uint64_t left = lo;
    if (it != blocks_.begin()) {
      auto prev = std::prev(it);
      if (prev->first >= lo) left = prev->first + prev->second.size;
    }
    uint64_t before = inactive_of(g, lo);
    if (addr > left) gap_remove(g, addr - left);
    if (right > end) gap_remove(g, right - end);
    gap_add(g, right - left);
    g.allocated -= size;
    g.blocks--;
    d.inactive += inactive_of(g, lo) - before;
    SiteBytes& s = sites_.at(it->second.site);
    threads_.change(it->second.site, it->second.tid, -1, size, s.bytes);
    s.bytes -= std::min(s.bytes, size);
    s.count -= s.count ? 1 : 0;
    if (row_freed_.size() <= it->second.site) row_freed_.resize(size_t(it->second.site) + 1, 0);
    row_freed_[it->second.site] += size;
    blocks_.erase(it);
    d.allocated -= size;
    allocated_all_ -= size;
    d.blocks--;
    d.freed += size;
  }
  if (d.allocated != b.total_allocated) {
    invalidate(t, "device " + std::to_string(device) + ": the live blocks add up to " + std::to_string(d.allocated) +
                      " bytes, PyTorch's total_allocated says " + std::to_string(b.total_allocated));
    return;
  }
  if (d.reserved != b.total_reserved) {
    invalidate(t, "device " + std::to_string(device) + ": PyTorch's segments seen by the driver layer hold " +
                      std::to_string(d.reserved) + " bytes, its total_reserved says " + std::to_string(b.total_reserved));
    return;
  }
  after_block(t, device, b.size > 0);
}

void TorchAggregator::after_block(uint64_t t, int device, bool allocation) {
  Dev& d = dev(device);
  d.last_block_t = t;
  if (allocation)  // the request was placed (after a retry, or not)
    if (auto it = retries_.find(device); it != retries_.end()) it->second.failed_in_request = false;
  last_block_t_ = t;
  if (d.allocated > d.bucket.total || (!d.bucket.t && !d.bucket_pending)) {
    d.bucket.total = d.allocated;  // a new high of the bucket: snapshotted before the next free
    d.bucket.t = t;
    d.bucket_pending = true;
  }
  if (d.allocated > d.peak) {
    d.peak = d.allocated;
    d.peak_t = t;
    d.pending = true;
  }
  if (d.reserved > d.peak_reserved) {
    d.peak_reserved = d.reserved;
    d.peak_reserved_t = t;
  }
  if (!d.allocated_tl) {
    d.allocated_tl = std::make_unique<Timeline>(timeline_points_);
    d.reserved_tl = std::make_unique<Timeline>(timeline_points_);
    d.inactive_tl = std::make_unique<Timeline>(timeline_points_);
  }
  d.allocated_tl->add(t, d.allocated);
  d.reserved_tl->add(t, d.reserved);
  d.inactive_tl->add(t, d.inactive);
  if (checkpoints_.due()) {
    SiteSnapshot snap;
    for (const SiteTable::Row& row : sites_.rows())
      if (row.b.bytes) snap.emplace(row.key, row.b.bytes);
    size_t before = checkpoints_.times().size();
    checkpoints_.add(t, std::move(snap), thread_snapshot(threads_, sites_.rows()));
    std::vector<std::pair<int, uint64_t>> freed;
    for (const auto& [dv, dd] : devs_) freed.push_back({dv, dd.freed});
    freed_at_.push_back(std::move(freed));
    site_freed_at_.push_back(site_freed_changes());
    if (checkpoints_.times().size() <= before) {  // it kept every other one: so do we
      size_t w = 0;
      for (size_t i = 0; i < freed_at_.size(); i += 2, ++w) {
        // A dropped checkpoint's changes belong to the next kept one, unless it changed them again
        // (the values only grow): the series has an odd length here, so every dropped one has one.
        if (i > 0)
          for (const auto& [key, v] : site_freed_at_[i - 1]) site_freed_at_[i].emplace(key, v);
        if (w == i) continue;  // (a self-move would empty a vector)
        freed_at_[w] = std::move(freed_at_[i]);
        site_freed_at_[w] = std::move(site_freed_at_[i]);
      }
      freed_at_.resize(w);
      site_freed_at_.resize(w);
    }
  }
}

// Fragmentation at its worst: the most inactive split (free space inside segments that still
// hold a tensor: the cache flush of a failing request cannot release it, and no request larger
// than its pieces can use it; whole free segments are neither: the flush gives them back), judged
// when it hurt: when a request found no free piece large enough and PyTorch took a new segment
// from the driver, and at an OOM. Never after a free, so the interpreter's teardown (tensors
// going, the cache intact) cannot set the headline, nor a segment still being filled.
void TorchAggregator::judge_fragmentation(uint64_t t, int device) {
  Dev& d = dev(device);
  uint64_t waste = d.inactive;
  if (waste > d.worst_waste) {
    d.worst_waste = waste;
    d.worst_t = t;
    d.worst = figures(device);
  }
}

SiteSnapshot TorchAggregator::site_freed_changes() {
  SiteSnapshot out;
  const SiteTable::Rows& rows = sites_.rows();
  row_freed_seen_.resize(row_freed_.size(), 0);
  for (size_t i = 0; i < row_freed_.size() && i < rows.size(); ++i)
    if (row_freed_[i] != row_freed_seen_[i]) {
      out.emplace(rows[i].key, row_freed_[i]);
      row_freed_seen_[i] = row_freed_[i];
    }
  return out;
}

SiteSnapshot TorchAggregator::site_freed_now() const {
  SiteSnapshot out;
  const SiteTable::Rows& rows = sites_.rows();
  for (size_t i = 0; i < row_freed_.size() && i < rows.size(); ++i)
    if (row_freed_[i]) out.emplace(rows[i].key, row_freed_[i]);
  return out;
}

// A growing tensor site, in PyTorch's terms (docs/metrics.md, "Tensors kept alive across
// iterations"). `series` is the checkpoints (and `now` last, at an OOM). What the site kept: when
// its bytes dropped since its first high (its temporaries went back: an iteration ended), how far
// its floor rose, from where it started to the lowest it went after its last drop before its
// last high; a forward pass still filling up when the device ran out is no such thing. Without
// any drop, all its growth. freed_meanwhile: the other lines' churn while it grew (below).
FirstOwner TorchAggregator::first_owner() const {
  return [this](const SiteKey& k, uint32_t* tid) { return threads_.first_owner(sites_.find_row(k), tid); };
}

TorchGrowth TorchAggregator::growth_of(const GrowthHit& h, const std::vector<const SiteSnapshot*>& series,
                                       const std::vector<uint64_t>& times,
                                       const std::vector<std::pair<int, uint64_t>>* now_freed,
                                       const SiteSnapshot* now_site_freed) const {
  TorchGrowth g;
  g.stack_id = h.key.stack;
  g.device = h.key.device;
  g.bytes = h.high;
  g.growth_bytes = h.growth;
  g.new_highs = h.new_highs;
  g.first_t_ns = times[h.first_high];
  g.last_t_ns = times[h.last_high];
  for (const ThreadGrowth& th : h.threads) g.threads.push_back({th.tid, th.growth, ""});
  if (!h.threads.empty()) g.threads_at_site = threads_.threads_at(sites_.find_row(h.key));
  const SiteBytes* sb = sites_.find(h.key);
  g.count = sb ? sb->count : 0;
  auto value = [&](size_t i) {
    auto it = series[i]->find(h.key);
    return it == series[i]->end() ? uint64_t(0) : it->second;
  };
  // (Drops after its last high are the end of the run or the unwinding of an OOM: not counted.)
  size_t last_drop = 0;
  for (size_t i = h.first_high + 1; i <= h.last_high; ++i)
    if (value(i) < value(i - 1)) last_drop = i;
  size_t until = h.last_high;
  g.kept_bytes = h.growth;
  if (last_drop) {
    until = last_drop;
    for (size_t i = last_drop; i <= h.last_high; ++i)
      if (value(i) < value(until)) until = i;
    const uint64_t start = value(0), floor = value(until);
    g.kept_bytes = floor > start ? floor - start : 0;
  }
  auto site_freed = [&](size_t i) -> uint64_t {  // (the latest change at or before checkpoint i)
    if (i >= site_freed_at_.size() && now_site_freed) {
      auto it = now_site_freed->find(h.key);
      return it == now_site_freed->end() ? 0 : it->second;
    }
    for (size_t j = std::min(i + 1, site_freed_at_.size()); j-- > 0;)
      if (auto it = site_freed_at_[j].find(h.key); it != site_freed_at_[j].end()) return it->second;
    return 0;
  };
  // The loop's temporaries: what other lines of the device allocated and gave back meanwhile (at
  // least what they gave back beyond what they held when it started: a backward pass freeing the
  // forward's activations as gradients appear churns nothing of its own).
  const size_t from = std::min(h.first_high, until);
  uint64_t all = freed_between(h.key.device, from, until, now_freed);
  uint64_t own = site_freed(until) > site_freed(from) ? site_freed(until) - site_freed(from) : 0;
  uint64_t held_elsewhere = 0;
  for (const auto& [key, bytes] : *series[from])
    if (key.device == h.key.device && !(key == h.key)) held_elsewhere += bytes;
  uint64_t elsewhere = all > own ? all - own : 0;
  g.freed_meanwhile = elsewhere > held_elsewhere ? elsewhere - held_elsewhere : 0;
  return g;
}

// The tensor sites that grew over the checkpoints and then now (`t`: a failure, or the end of
// the run, so what was kept after the last checkpoint counts too), biggest growth first.
std::vector<TorchGrowth> TorchAggregator::grown_until(uint64_t t, uint64_t min_growth) const {
  std::vector<const SiteSnapshot*> series;
  for (const SiteSnapshot& s : checkpoints_.snapshots()) series.push_back(&s);
  SiteSnapshot now;
  for (const SiteTable::Row& row : sites_.rows())
    if (row.b.bytes) now.emplace(row.key, row.b.bytes);
  series.push_back(&now);
  std::vector<const ThreadSiteSnapshot*> threads;
  for (const ThreadSiteSnapshot& s : checkpoints_.thread_snapshots()) threads.push_back(&s);
  const ThreadSiteSnapshot now_threads = thread_snapshot(threads_, sites_.rows());
  threads.push_back(&now_threads);
  std::vector<uint64_t> times = checkpoints_.times();
  times.push_back(t);
  std::vector<std::pair<int, uint64_t>> now_freed;
  for (const auto& [dv, dd] : devs_) now_freed.push_back({dv, dd.freed});
  const SiteSnapshot now_site_freed = site_freed_now();
  std::vector<TorchGrowth> out;
  for (const GrowthHit& h : growing_sites(series, threads, first_owner(), min_growth))
    out.push_back(growth_of(h, series, times, &now_freed, &now_site_freed));
  return out;
}

// Bytes taken back on `device` between checkpoints `from` and `to` (an index past the last one
// means `now`).
uint64_t TorchAggregator::freed_between(int device, size_t from, size_t to,
                                        const std::vector<std::pair<int, uint64_t>>* now) const {
  auto at = [&](size_t i) -> uint64_t {
    const std::vector<std::pair<int, uint64_t>>* v = i < freed_at_.size() ? &freed_at_[i] : now;
    if (!v) return 0;
    for (const auto& [dv, f] : *v)
      if (dv == device) return f;
    return 0;
  };
  uint64_t a = at(from), b = at(to);
  return b > a ? b - a : 0;
}

TorchFigures TorchAggregator::figures(int device) const {
  TorchFigures f;
  auto it = devs_.find(device);
  if (it == devs_.end()) return f;
  const Dev& d = it->second;
  f.allocated = d.allocated;
  f.reserved = d.reserved;
  f.inactive_split = d.inactive;
  f.largest_free_block = d.gaps.empty() ? 0 : *d.gaps.rbegin();
  f.segments = d.segments;
  f.blocks = d.blocks;
  return f;
}

// Figures, live tensors by call site (all of them: merged by line once symbolized) and the
// segments of the device with the most free space.
TorchView TorchAggregator::view(int device, uint64_t t) const {
  TorchView v;
  v.device = device;
  v.t_ns = t;
  v.figures = figures(device);
  v.holders = site_groups(sites_.rows(), device, true);
  for (SiteGroup& h : v.holders) h.kind = "tensor";
  for (const auto& [lo, g] : regions_) {
    if (g.device != device) continue;
    auto o = owners_.find(g.owner);
    if (o == owners_.end() || !o->second.torch) continue;
    TorchSegment s;
    s.address = lo;
    s.size = g.hi - lo;
    s.allocated = g.allocated;
    s.blocks = g.blocks;
    s.largest_free = g.gaps.empty() ? 0 : *g.gaps.rbegin();
    s.expandable = g.expandable;
    s.stack_id = o->second.stack;
    v.segments.push_back(s);
  }
  std::sort(v.segments.begin(), v.segments.end(), [](const TorchSegment& a, const TorchSegment& b) {
    return a.free() != b.free() ? a.free() > b.free() : a.address < b.address;
  });
  if (v.segments.size() > top_) {
    v.segments_not_shown = v.segments.size() - top_;
    v.segments.resize(top_);
  }
  return v;
}

// The VMM physical memory handles mapped into PyTorch's segments (its expandable segments).
absl::flat_hash_set<uint64_t> TorchAggregator::torch_vmm_handles(const LiveState& live) const {
  absl::flat_hash_set<uint64_t> out;
  for (const auto& [va, m] : live.mappings()) {
    auto rit = regions_.upper_bound(va);
    if (rit == regions_.begin()) continue;
    --rit;
    auto ow = owners_.find(rit->second.owner);
    if (rit->second.hi > va && ow != owners_.end() && ow->second.torch) out.insert(m.handle);
  }
  return out;
}

void TorchAggregator::on_failed(const Record& r) {
  if (!r.op || (r.op->kind != MemKind::Device && r.op->kind != MemKind::VmmPhysical)) return;
  Retries& x = retries_[r.device];
  if (x.failed_in_request) return;  // the retry's failure: one retry per request
  x.failed_in_request = true;
  x.count++;  // PyTorch frees its cache and tries again (num_alloc_retries)
}

void TorchAggregator::on_oom(uint64_t t, const TorchOom& o, const LiveState& live) {
  {
    Dev& d = dev(o.device);
    Retries& x = retries_[o.device];
    // No driver call failed: a memory fraction was reached. PyTorch still freed its cache and
    // tried once more before giving up.
    if (!x.failed_in_request) x.count++;
    x.failed_in_request = false;
    d.ooms++;
    judge_fragmentation(t, o.device);
  }
  PendingOom p;
  p.rec = o;
  p.t = t;
  TorchOomInfo& info = p.info;
  info.t_ns = t;
  info.device = o.device;
  info.block_size = o.size > 0 ? uint64_t(o.size) : 0;
  info.tried_to_allocate = allocation_size(info.block_size);
  info.device_total = o.device_total;
  info.device_free = o.device_free;
  info.allocated = o.total_allocated;
  info.reserved = o.total_reserved;
  info.view = view(o.device, t);
  info.fits_in_a_free_block = info.view.figures.largest_free_block >= info.block_size;
  // This process's device memory that is not PyTorch's: the device allocations outside its
  // segments (NCCL, cuBLAS workspaces of other libraries, raw CUDA), by call site.
  absl::flat_hash_map<uint32_t, std::pair<uint64_t, uint64_t>> outside;  // stack -> bytes, count
  for (const auto& slot : live.live()) {
    const AllocInfo a = live.info(slot.second);
    if (a.bucket != Bucket::Device || a.device != o.device) continue;
    auto ow = owners_.find(slot.first);
    if (ow != owners_.end() && ow->second.torch) continue;
    auto& e = outside[a.stack];
    e.first += a.size;
    e.second++;
    info.outside_bytes += a.size;
  }
  // VMM physical memory on the device that no PyTorch region maps (JAX, NCCL's cuMem buffers...).
  const absl::flat_hash_set<uint64_t> torch_handles = torch_vmm_handles(live);
  for (const auto& slot : live.vmm_handles()) {
    const AllocInfo a = live.info(slot.second);
    if (a.bucket != Bucket::Device || a.device != o.device || torch_handles.count(slot.first)) continue;
    auto& e = outside[a.stack];
    e.first += a.size;
    e.second++;
    info.outside_bytes += a.size;
  }
  for (const auto& [stack, bc] : outside) {
    SiteGroup g;
    g.stack_id = stack;
    g.bytes = bc.first;
    g.count = bc.second;
    g.device = o.device;
    g.kind = "device";
    g.share = info.outside_bytes ? double(bc.first) / double(info.outside_bytes) : 0;
    info.outside.push_back(g);
  }
  std::sort(info.outside.begin(), info.outside.end(), [](const SiteGroup& a, const SiteGroup& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  });
  if (info.outside.size() > top_) info.outside.resize(top_);
  // The tensor sites that grew up to the failure: the checkpoints, then now.
  const uint64_t min_growth = std::max<uint64_t>(1 << 20, o.device_total / 1000);
  for (TorchGrowth& g : grown_until(t, min_growth)) {
    if (g.device != o.device) continue;
    info.grew_before.push_back(std::move(g));
    if (info.grew_before.size() == top_) break;
  }
  p.since = dev(o.device).last_block_t;
  p.process_device_bytes = live.bytes(o.device, Bucket::Device);
  p.process_by_kind = bytes_by_kind(live, o.device);
  ooms_.next() = std::move(p);
}

void TorchAggregator::on_gpu_processes(const GpuProcessList& list, uint64_t t) {
  std::vector<PendingOom>& ooms = ooms_.items();
  for (auto it = ooms.rbegin(); it != ooms.rend(); ++it)
    if (it->rec.device == list.device && !it->nvml && t >= it->t && t - it->t <= OomAggregator::kOomListWindowNs) {
      it->nvml = true;
      it->processes = list;
      return;
    }
}

void TorchAggregator::on_mark(uint64_t t, const RegionMark& mark) {
  if (!tracking_ || !valid_) return;
  for (const auto& [device, d] : devs_) {
    TorchMark m{mark.name, mark.begin, t, device, figures(device)};
    m.peak_allocated = d.peak;
    m.peak_reserved = d.peak_reserved;
    auto x = retries_.find(device);
    m.alloc_retries = x == retries_.end() ? 0 : x->second.count;
    m.ooms = d.ooms;
    marks_.push_back(std::move(m));
  }
}

void TorchAggregator::take_live_at() {
  if (live_at_taken_ || !tracking_ || !valid_) return;
  live_at_taken_ = true;
  for (const auto& [device, d] : devs_) {
    (void)d;
    TorchLiveDevice ld;
    ld.device = device;
    ld.figures = figures(device);
    uint64_t last_owner = 0;
    for (const auto& [lo, g] : regions_) {
      auto o = owners_.find(g.owner);
      if (g.device != device || o == owners_.end() || !o->second.torch) continue;
      // An expandable segment's mapped ranges are one segment, as PyTorch lists it (adjacent
      // ranges of another reservation are another segment).
      const bool same = g.expandable && !ld.segments.empty() && ld.segments.back().expandable && last_owner == g.owner &&
                        ld.segments.back().address + ld.segments.back().size == lo;
      last_owner = g.owner;
      if (same) {
        ld.segments.back().size += g.hi - lo;
      } else {
        ld.segments.push_back(TorchLiveSegment{lo, g.hi - lo, g.expandable, {}});
      }
      for (auto b = blocks_.lower_bound(lo); b != blocks_.end() && b->first < g.hi; ++b)
        ld.segments.back().blocks.push_back(TorchLiveBlock{b->first, b->second.size, b->second.stack, {}, b->second.t});
    }
    live_at_.push_back(std::move(ld));
  }
}

AllocatorAtExit TorchAggregator::at_exit(const LiveState& live) const {
  AllocatorAtExit x;
  if (!tracking_ || !valid_ || (status_seen_ && !status_.on)) return x;
  x.known = true;
  absl::flat_hash_map<SiteKey, SiteBytes> by_site;
  auto add = [&](const AllocInfo& a) {
    SiteBytes& b = by_site[SiteKey{a.stack, a.device, a.bucket}];
    b.bytes += a.size;
    b.count++;
  };
  for (const auto& slot : live.live()) {
    auto ow = owners_.find(slot.first);
    if (ow == owners_.end() || !ow->second.torch || ow->second.expandable) continue;
    add(live.info(slot.second));
  }
  // An expandable segment's memory: the physical handles mapped into PyTorch's reservations.
  const absl::flat_hash_set<uint64_t> handles = torch_vmm_handles(live);
  for (const auto& slot : live.vmm_handles())
    if (handles.count(slot.first)) add(live.info(slot.second));
  for (const auto& [key, b] : by_site) x.segments.push_back(SiteTable::Row{key, 0, b});
  for (const SiteTable::Row& row : sites_.rows())
    if (row.b.bytes || row.b.count) x.tensors.push_back(row);
  x.tensor_table = &sites_;
  x.tensor_threads = &threads_;
  x.segment_stacks = segment_stacks_;
  for (const SiteTable::Row& row : x.segments) x.segment_stacks.insert(row.key.stack);
  for (const auto& [device, d] : devs_) {
    x.reserved += d.reserved;
    x.segment_count += d.segments;
    x.allocated += d.allocated;
  }
  return x;
}

void TorchAggregator::finish(TraceReport* rep) {
  TorchReport& tr = rep->torch;
  tr.present = seen_;
  if (!seen_) return;
  tr.block_events = block_events_;
  tr.oom_events = oom_events_;
  tr.forwarded = status_.forwarded;
  tr.expandable_seen = expandable_seen_;
  if (config_seen_) {
    tr.alloc_conf = !config_.cuda_alloc_conf.empty() ? config_.cuda_alloc_conf : config_.alloc_conf;
    tr.no_caching = config_.no_caching;
  }
  if (status_seen_ && !status_.on) {
    tr.layer = "off";
    tr.layer_detail = "the recorder turned it off: " + status_.message;
  } else if (!valid_) {
    tr.layer = "off";
    tr.layer_detail = "the records disagree with the driver's view: " + invalid_why_;
    tr.invalid_t_ns = invalid_t_;
  } else if (block_events_ || oom_events_) {
    tr.layer = "on";
    tr.layer_detail = status_.message;
  }  // else no block record at all: finish_torch says why (the mode, the loaded modules)
  if (!tr.figures() || !valid_) return;
  for (auto& [device, d] : devs_) {
    if (d.pending) d.peak_view = view(device, d.peak_t);
    TorchDevice td;
    td.device = device;
    td.peak_allocated = d.peak;
    td.peak_allocated_t_ns = d.peak_t;
    td.peak_reserved = d.peak_reserved;
    td.peak_reserved_t_ns = d.peak_reserved_t;
    td.peak = std::move(d.peak_view);
    td.worst_fragmentation_t_ns = d.worst_t;
    td.worst_fragmentation = d.worst;
    td.worst_fragmentation_ratio = d.worst.reserved ? double(d.worst.inactive_split) / double(d.worst.reserved) : 0;
    td.end_allocated = d.allocated;
    td.end_reserved = d.reserved;
    if (d.allocated_tl) {
      td.allocated_points = d.allocated_tl->take();
      td.reserved_points = d.reserved_tl->take();
      td.inactive_split_points = d.inactive_tl->take();
    }
    tr.devices.push_back(std::move(td));
  }
  // The tensor timeline of each device: its 64 biggest sites by their highest bytes (merged by
  // line once symbolized, torch_verdict.cpp), the others summed.
  next_bucket();
  const SiteTable::Rows& rows = sites_.rows();
  for (TorchDevice& td : tr.devices) {
    const std::vector<SiteSnap>& snaps = devs_[td.device].snaps;
    std::vector<uint64_t> high(rows.size(), 0);
    for (const SiteSnap& s : snaps)
      for (const auto& [row, bytes] : s.rows) high[row] = std::max(high[row], bytes);
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < rows.size(); ++i)
      if (high[i]) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return high[a] != high[b] ? high[a] > high[b] : a < b; });
    if (order.size() > 64) order.resize(64);
    std::vector<int> slot(rows.size(), -1);
    TorchTensorTimeline& tl = td.tensors;
    for (uint32_t i : order) {
      slot[i] = int(tl.lines.size());
      TorchLineSeries ls;
      ls.stack_id = rows[i].key.stack;
      ls.values.assign(snaps.size(), 0);
      tl.lines.push_back(std::move(ls));
    }
    tl.other.assign(snaps.size(), 0);
    for (size_t k = 0; k < snaps.size(); ++k) {
      tl.t_ns.push_back(snaps[k].t);
      for (const auto& [row, bytes] : snaps[k].rows) {
        if (slot[row] >= 0)
          tl.lines[size_t(slot[row])].values[k] = bytes;
        else
          tl.other[k] += bytes;
      }
    }
  }
  tr.marks = std::move(marks_);
  tr.live_at_taken = live_at_taken_;
  tr.live_at = std::move(live_at_);
  // The tensor sites that grew over the whole run.
  uint64_t highest = 0;
  for (const TorchDevice& td : tr.devices) highest = std::max(highest, td.peak_allocated);
  // Only what was kept across iterations: a forward pass filling up and then freed is no growth.
  const uint64_t min_growth = std::max<uint64_t>(1 << 20, highest / 100);
  for (TorchGrowth& g : grown_until(rep->last_t_ns, min_growth)) {
    if (g.kept_bytes < min_growth || g.freed_meanwhile < g.kept_bytes) continue;
    tr.growth.push_back(std::move(g));
    if (tr.growth.size() == top_) break;
  }
  // Each PyTorch OOM belongs to the failed driver allocations of the same request on its device
  // (those since its last block: the first attempt and the retry after the cache flush): the last
  // one carries it, the others go (one OutOfMemoryError, one report). Without any (a memory
  // fraction reached: no driver call), it is an OOM of its own.
  // What the program raised: PyTorch's OutOfMemoryErrors are the OOMs (a failed cudaMalloc it
  // recovered from is none), so theirs is the count of those not detailed.
  if (!ooms_.items().empty()) rep->ooms_omitted = ooms_.left_out();
  for (PendingOom& p : ooms_.items()) {
    OomReport* match = nullptr;
    int attempts = 0;
    for (OomReport& o : rep->ooms)
      if (o.device == p.rec.device && o.t_ns > p.since && o.t_ns <= p.t && !o.torch) {
        match = &o;
        ++attempts;
      }
    if (match) {
      uint64_t keep = match->t_ns;
      match->torch = true;  // (marked first: the erase below moves the elements)
      rep->ooms.erase(std::remove_if(rep->ooms.begin(), rep->ooms.end(),
                                     [&](const OomReport& o) {
                                       return o.device == p.rec.device && o.t_ns > p.since && o.t_ns < keep && !o.torch;
                                     }),
                      rep->ooms.end());
      match = nullptr;
      for (OomReport& o : rep->ooms)
        if (o.torch && o.t_ns == keep && o.device == p.rec.device && !o.torch_info.t_ns) match = &o;
    }
    if (!match) {
      OomReport o;
      o.t_ns = p.t;
      o.op = "PyTorch caching allocator";
      o.device = p.rec.device;
      o.requested_bytes = p.info.block_size;
      o.device_free_bytes = p.rec.device_free;
      o.device_total_bytes = p.rec.device_total;
      o.process_device_bytes = p.process_device_bytes;
      o.process_by_kind = p.process_by_kind;
      uint64_t used = o.device_total_bytes > o.device_free_bytes ? o.device_total_bytes - o.device_free_bytes : 0;
      o.not_attributable_bytes = used > o.process_device_bytes ? used - o.process_device_bytes : 0;
      o.stack_id = p.rec.stack;
      rep->ooms.push_back(std::move(o));
      match = &rep->ooms.back();
    }
    match->torch = true;
    if (p.nvml) OomAggregator::take_gpu_processes(*match, p.processes, own_pid_);  // (read as PyTorch read it)
    p.info.driver_attempts = attempts;
    match->torch_info = std::move(p.info);
    if (!match->stack_id) match->stack_id = p.rec.stack;
  }
  // A failed cudaMalloc that PyTorch recovered from (it freed its cache and the retry worked: a
  // cache flush, num_alloc_retries) raised nothing in the program: no OOM of its own. The flush
  // stays in the fragmentation section.
  for (const CacheFlush& f : rep->fragmentation.cache_flushes) {
    if (!f.retry_succeeded) continue;
    rep->ooms.erase(std::remove_if(rep->ooms.begin(), rep->ooms.end(),
                                   [&](const OomReport& o) { return !o.torch && o.t_ns == f.t_ns && devs_.count(o.device); }),
                    rep->ooms.end());
  }
  std::stable_sort(rep->ooms.begin(), rep->ooms.end(), [](const OomReport& a, const OomReport& b) { return a.t_ns < b.t_ns; });
}

}  // namespace vt::analyzer
