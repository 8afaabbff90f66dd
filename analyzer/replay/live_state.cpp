// See live_state.h.
#include "live_state.h"

#include <algorithm>
#include <cstring>

namespace vt::analyzer {

const char* bucket_name(Bucket b) {
  switch (b) {
    case Bucket::Device: return "device";
    case Bucket::Managed: return "managed";
    case Bucket::PinnedHost: return "pinned_host";
    case Bucket::Imported: return "imported";
    default: return "?";
  }
}

void PoolState::merge_extent(uint64_t lo, uint64_t hi) {
  // Usually a warm pool reuses a known range.
  auto next = extents.upper_bound(lo);
  if (next != extents.begin() && std::prev(next)->second >= hi) return;
  next = extents.lower_bound(lo);
  if (next != extents.begin()) {
    auto prev = std::prev(next);
    if (prev->second >= lo) {
      lo = prev->first;
      hi = std::max(hi, prev->second);
      extent_bytes -= prev->second - prev->first;
      next = extents.erase(prev);
    }
  }
  while (next != extents.end() && next->first <= hi) {
    hi = std::max(hi, next->second);
    extent_bytes -= next->second - next->first;
    next = extents.erase(next);
  }
  extents.emplace_hint(next, lo, hi);
  extent_bytes += hi - lo;
}

void PoolState::subtract_extent(uint64_t lo, uint64_t hi) {
  auto it = extents.upper_bound(lo);
  if (it != extents.begin()) --it;  // the extent that may start before lo
  while (it != extents.end() && it->first < hi) {
    const uint64_t a = it->first, b = it->second;
    if (b <= lo) {
      ++it;
      continue;
    }
    it = extents.erase(it);
    extent_bytes -= b - a;
    if (a < lo) {
      extents.emplace_hint(it, a, lo);
      extent_bytes += lo - a;
    }
    if (b > hi) {  // the rest of this extent stays; the next ones start beyond it
      extents.emplace_hint(it, hi, b);
      extent_bytes += b - hi;
      return;
    }
  }
}

void PoolState::clear_extents() {
  extents.clear();
  extent_bytes = 0;
  forget_changes();
  changes_dropped = false;
}

// The longest run of `ranges` (sorted, disjoint) that no range of `used` (sorted, disjoint: live
// allocations) covers. A used range may start before a range and reach into it.
template <typename Ranges>
static uint64_t longest_uncovered(const Ranges& ranges, const std::vector<std::pair<uint64_t, uint64_t>>& used) {
  uint64_t best = 0;
  for (const auto& [lo, hi] : ranges) {
    uint64_t cursor = lo;
    auto it = std::lower_bound(used.begin(), used.end(), std::make_pair(lo, uint64_t(0)));
    if (it != used.begin()) cursor = std::max(cursor, std::min(hi, std::prev(it)->second));
    for (; it != used.end() && it->first < hi; ++it) {
      if (it->first > cursor) best = std::max(best, it->first - cursor);
      cursor = std::max(cursor, it->second);
    }
    if (hi > cursor) best = std::max(best, hi - cursor);
  }
  return best;
}

uint64_t PoolState::largest_free_gap(const LiveState& live) const {
  std::vector<std::pair<uint64_t, uint64_t>> used;
  if (changes_dropped) {  // free space: the extents less every live stream-ordered allocation
    for (const auto& e : live.live())
      if (live.info(e.second).kind == MemKind::Async) used.push_back({e.first, e.first + e.second.size});
    std::sort(used.begin(), used.end());
    return longest_uncovered(extents, used);
  }
  // Since the last trim the extents were the live allocations, so the free space is what was
  // freed since, less what of it was handed out again and is live: no walk of the live map
  // (the fragmentation samples call this; with many blocks live the walk and its sort were
  // most of a report).
  auto catch_up = [](auto& sorted, const auto& list) {  // sort the new tail, merge it in
    const size_t old = sorted.size();
    sorted.insert(sorted.end(), list.begin() + long(old), list.end());
    std::sort(sorted.begin() + long(old), sorted.end());
    std::inplace_merge(sorted.begin(), sorted.begin() + long(old), sorted.end());
  };
  catch_up(freed_sorted, freed_since_trim);
  catch_up(allocated_sorted, allocated_since_trim);
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : freed_sorted)
    if (!merged.empty() && r.first <= merged.back().second) merged.back().second = std::max(merged.back().second, r.second);
    else merged.push_back(r);
  for (size_t i = 0; i < allocated_sorted.size(); ++i) {  // (addresses in order: the ranges come sorted)
    const uint64_t addr = allocated_sorted[i];
    if (i && addr == allocated_sorted[i - 1]) continue;
    if (auto a = live.live().find(addr); a != live.live().end() && live.info(a->second).kind == MemKind::Async)
      used.push_back({addr, addr + a->second.size});
  }
  return longest_uncovered(merged, used);
}


uint32_t SiteTable::insert(const SiteKey& k) {
  uint32_t r = uint32_t(rows_.size());
  if (k.stack >= dense_.size() && uint64_t(k.stack) < 2 * uint64_t(r) + 65536)
    dense_.resize(std::max<size_t>(size_t(k.stack) + 1, dense_.size() * 2), 0);
  // Once the array grows over an id the hash holds, that id's rows stay chained from the hash.
  uint32_t* head = head_of(k.stack);
  if (!head) head = k.stack < dense_.size() ? &dense_[k.stack] : &sparse_[k.stack];
  rows_.push_back({k, *head, {}});
  *head = r + 1;
  return r;
}

const DeviceTotals* LiveState::find_other_device(int device) const {
  auto it = other_.find(device);
  return it == other_.end() ? nullptr : &slots_[size_t(it->second)];
}

DeviceTotals& LiveState::new_device_slot(int device) {
  size_t i = size_t(device + 1);
  int32_t* slot = i < kDirect ? &direct_[i] : &other_.try_emplace(device, -1).first->second;
  if (*slot < 0) {
    *slot = int32_t(slots_.size());
    slots_.push_back(DeviceTotals{});
    slots_.back().device = device;
  }
  last_device_ = device;
  last_totals_ = &slots_[size_t(*slot)];
  return *last_totals_;
}

// account, add and remove_alloc run once or twice per event: always inlined into their callers,
// which saves their register spills (~45 instructions per event in callgrind).
__attribute__((always_inline)) inline void LiveState::account(const AllocInfo& a, int64_t sign) {
  DeviceTotals& d = device_slot(a.device);
  if (sign < 0 && a.bucket == Bucket::Device) dropping(d);
  const uint64_t delta = uint64_t(sign) * a.size;
  d.bytes[int(a.bucket)] += delta;
  if (a.bucket == Bucket::Device) {
    d.kinds[int(a.kind) & (kKindSlots - 1)] += delta;
    device_all_ += delta;
    d.version++;
  } else if (a.bucket == Bucket::Imported) {
    imported_all_ += delta;
    imported_max_ = std::max(imported_max_, imported_all_);
  }
  if (changed_.empty() || (changed_.back() != a.device &&
                           std::find(changed_.begin(), changed_.end(), a.device) == changed_.end()))
    changed_.push_back(a.device);
  SiteBytes& s = sites_.at(a.site);
  threads_.change(a.site, a.tid, int(sign), a.size, s.bytes);
  s.bytes += delta;
  uint64_t before = s.count;
  s.count += uint64_t(sign);
  if (__builtin_expect((before == 0) != (s.count == 0), 0)) held_change(a.site, s.count != 0);
}

void LiveState::held_change(uint32_t row, bool held) {
  if (held) {
    if (row >= held_pos_.size()) held_pos_.resize(std::max<size_t>(size_t(row) + 1, held_pos_.size() * 2), 0);
    held_.push_back(row);
    held_pos_[row] = uint32_t(held_.size());
    return;
  }
  uint32_t at = held_pos_[row] - 1, last = held_.back();
  held_[at] = last;
  held_pos_[last] = at + 1;
  held_.pop_back();
  held_pos_[row] = 0;
}

const PoolState* LiveState::request_pool(const Record& r) const {
  uint64_t key = allocation_pool(r, [this](uint64_t location) { return current_pool(location); });
  auto p = pools_.find(key ? key : default_pool_key(r.device));
  return p == pools_.end() ? nullptr : &p->second;
}

PoolState& LiveState::pool_of(uint64_t pool, int device) {
  uint64_t key = pool ? pool : default_pool_key(device);
  PoolState& p = pool_slot(key);
  if (p.device < 0 && !p.placed) p.device = device;  // a pool seen only by its allocations: theirs
  return p;
}

// A stack nearly always allocates with one context, pool and kind, on one thread or a few: a small
// cache by site and thread first, inline (a site several threads allocate at missed a hint by site
// at each change of thread: a call and ~27 instructions for half the allocations of a 4-thread
// trace, issue 43); then the site row's hint (the attrs row of its last allocation: more sites
// than the cache holds); then the hash.
__attribute__((always_inline)) inline uint32_t LiveState::attrs_of(const AllocInfo& a) {
  uint32_t& cached = attrs_cache_[(a.site * 0x9E3779B1u ^ a.tid * 0x85EBCA77u) >> (32 - kAttrsCacheBits)];
  if (cached) {
    const AllocAttrs& k = attrs_[cached - 1];
    if (k.context == a.context && k.pool == a.pool && k.kind == a.kind && k.tid == a.tid) return cached - 1;
  }
  const uint32_t row = new_attrs(a);
  cached = row + 1;
  return row;
}

uint32_t LiveState::new_attrs(const AllocInfo& a) {
  const AllocAttrs k{a.context, a.pool, a.kind, a.tid};
  const uint32_t hint = a.site < site_attrs_.size() ? site_attrs_[a.site] : 0;
  if (hint && attrs_[hint - 1] == k) return hint - 1;
  auto [it, inserted] = attrs_index_.try_emplace(k, uint32_t(attrs_.size()));
  // (a row index needs 31 bits: more distinct contexts and pools than that share the last row)
  if (inserted) {
    if (attrs_.size() < (1u << 31) - 1) attrs_.push_back(k);
    else it->second = uint32_t(attrs_.size() - 1);
  }
  if (a.site >= site_attrs_.size()) site_attrs_.resize(std::max<size_t>(size_t(a.site) + 1, site_attrs_.size() * 2), 0);
  site_attrs_[a.site] = it->second + 1;
  return it->second;
}

__attribute__((always_inline)) inline void LiveState::add(uint64_t key, const AllocInfo& in, AllocMap& map) {
  AllocInfo a = in;
  a.site = sites_.row(SiteKey{a.stack, a.device, a.bucket});
  Alloc rec{a.size, a.site, attrs_of(a) << 1};
  auto [it, inserted] = map.emplace(key, rec);
  if (!inserted) {  // an address handed out twice without a free we saw: the old one is gone
    remove_alloc(it, map, false);
    it = map.emplace(key, rec).first;
  }
  account(a, +1);
  if (a.kind == MemKind::Async) {
    PoolState& p = pool_of(a.pool, a.device);
    p.live_bytes += a.size;
    p.note_change(p.allocated_since_trim, key);
    p.merge_extent(key, key + a.size);
  }
}

__attribute__((always_inline)) inline void LiveState::remove_alloc(AllocMap::iterator it, AllocMap& map, bool teardown) {
  const AllocInfo a = info(it->second);
  const uint64_t key = it->first;
  map.erase(it);
  account(a, -1);
  if (a.kind == MemKind::Async) {
    PoolState& p = pool_of(a.pool, a.device);
    p.live_bytes -= std::min(p.live_bytes, a.size);
    p.note_change(p.freed_since_trim, std::make_pair(key, key + a.size));
  }
  if (teardown) {
    SiteBytes& s = teardown_.at(teardown_.row(SiteKey{a.stack, a.device, a.bucket}));
    s.bytes += a.size;
    s.count += 1;
  }
}

void LiveState::drop_context(uint64_t ctx) {
  std::vector<uint64_t> gone;  // erase() moves entries: collect first
  for (const auto& e : live_)
    if (attrs_[e.second.attrs()].context == ctx) gone.push_back(e.first);
  for (uint64_t addr : gone) remove_alloc(live_.find(addr), live_, true);
  release_code([ctx](const CodeEntry& c) { return c.context == ctx || c.key == ctx; });  // rule 14
}

// Rule 14: a measured cost, in its device's figure for its category.
void LiveState::add_code(const OpInfo& op, const Record& r) {
  const int32_t device = code_device(op, r);
  const uint64_t key = code_key(op, r);
  if (makes_context(op.id)) release_code([key](const CodeEntry& c) { return c.key == key; });  // rule 3
  const DeviceTotals* d = find_device(device);
  uint64_t accounted = d ? d->bytes[int(Bucket::Device)] : 0;
  if (d)
    for (int64_t b : d->code) accounted += b > 0 ? uint64_t(b) : 0;
  const CodeCost cost = code_cost(op, r, device_total(device), accounted);
  if (!cost.known) return;
  const CodeCategory category = code_category(op);
  code_.push_back(CodeEntry{key, code_context(op, r), device, category, cost.bytes, cost.after_only, r.t_ns});
  device_slot(device).code[size_t(category)] += cost.bytes;
}

uint64_t LiveState::other_processes_listed(int device, uint64_t others, uint64_t t) {
  uint64_t taken = 0;
  for (CodeEntry& c : code_) {
    if (c.device != device || !c.after_only || !first_context_list(c.t_ns, t)) continue;
    const uint64_t off = std::min(c.bytes > 0 ? uint64_t(c.bytes) : 0, others - std::min(others, taken));
    c.bytes -= int64_t(off);
    c.after_only = false;
    device_slot(device).code[size_t(c.category)] -= int64_t(off);
    taken += off;
  }
  return taken;
}

template <typename Pred>
void LiveState::release_code(Pred gone) {
  size_t kept = 0;
  for (const CodeEntry& c : code_) {
    if (gone(c))
      device_slot(c.device).code[size_t(c.category)] -= c.bytes;
    else
      code_[kept++] = c;
  }
  code_.resize(kept);
}

// Rule 4: a pool destroyed (or created anew) is current nowhere: the default pool is.
void LiveState::forget_current_pool(uint64_t pool) {
  for (auto it = current_pools_.begin(); it != current_pools_.end();) {
    auto cur = it++;
    if (cur->second == pool) current_pools_.erase(cur);
  }
  current_cache_valid_ = false;
  for (auto it = default_pools_.begin(); it != default_pools_.end();) {  // (a handle made anew)
    auto cur = it++;
    if (cur->second == pool) default_pools_.erase(cur);
  }
}

// Rule 5: a handle's memory goes at the later of its last release (rule 11) and its last unmap;
// a multicast object likewise (rule 12).
void LiveState::free_handle_if_done(uint64_t handle) {
  auto u = handle_use_.find(handle);
  if (u == handle_use_.end() || u->second.mappings > 0 || u->second.refs.held()) return;  // still in use
  bool freed = handle_freed(u->second.refs.released, 0);
  handle_use_.erase(u);  // unmapped, unretained, unbound and not released is the same as no entry
  if (!freed) return;
  auto it = handles_.find(handle);
  if (it != handles_.end()) remove_alloc(it, handles_, false);
  multicasts_.erase(handle);
  drop_bindings(handle);  // rule 12: a multicast object's bindings go with it
}

// Rule 12: bindings hold the memory they bind.
uint64_t LiveState::handle_mapped_at(uint64_t va) const {
  auto it = mappings_.upper_bound(va);
  if (it == mappings_.begin()) return 0;
  --it;
  return va - it->first < it->second.size ? it->second.handle : 0;
}

void LiveState::bind(const McBinding& b) {
  for (size_t i = 0; i < bindings_.size(); ++i)
    if (same_binding(bindings_[i], b)) {  // rule 3: the old binding is gone
      const uint64_t old = bindings_[i].handle;
      bindings_.erase(bindings_.begin() + long(i));
      unbound(old);
      break;
    }
  if (!is_memory_key(b.handle)) return;
  bindings_.push_back(b);
  handle_use_[b.handle].refs.bindings++;
}

void LiveState::unbound(uint64_t handle) {
  auto u = handle_use_.find(handle);
  if (u == handle_use_.end() || u->second.refs.bindings == 0) return;
  u->second.refs.bindings--;
  free_handle_if_done(handle);
}

void LiveState::drop_bindings(uint64_t mc) {
  std::vector<uint64_t> gone;
  size_t kept = 0;
  for (const McBinding& b : bindings_) {
    if (b.mc == mc)
      gone.push_back(b.handle);
    else
      bindings_[kept++] = b;
  }
  bindings_.resize(kept);
  for (uint64_t h : gone) unbound(h);
}

void LiveState::release_handle(uint64_t handle) {
  handle_use_[handle].refs.release();
  free_handle_if_done(handle);
}

// Rule 10: a mapping of an imported handle tells its size.
void LiveState::import_mapped(const Record& map) {
  auto it = handles_.find(map.aux);
  if (it == handles_.end()) return;
  AllocInfo a = info(it->second);
  if (a.kind != MemKind::VmmImport) return;
  const uint64_t size = import_size_after_map(a.size, map);
  if (size == a.size) return;
  account(a, -1);
  it->second.size = a.size = size;
  account(a, +1);
}

void LiveState::unmap(uint64_t va, uint64_t size) {
  for (auto it = mappings_.lower_bound(va); it != mappings_.end() && unmap_removes(it->first, va, size);) {
    uint64_t h = it->second.handle;
    mapped_total_ -= std::min(mapped_total_, it->second.size);
    it = mappings_.erase(it);
    auto u = handle_use_.find(h);
    if (u != handle_use_.end() && u->second.mappings > 0) u->second.mappings--;
    free_handle_if_done(h);
  }
}

uint64_t LiveState::handle_bytes_unmapped(int device) const {
  uint64_t sum = 0;
  for (const auto& e : handles_) {
    auto u = handle_use_.find(e.first);
    const AllocInfo a = info(e.second);
    if (a.device == device && a.kind != MemKind::VmmImport && (u == handle_use_.end() || u->second.mappings == 0))
      sum += e.second.size;  // (an import is another process's memory: rule 10)
  }
  return sum;
}

uint64_t LiveState::pool_cached_bytes(int device) const {
  uint64_t sum = 0;
  for (const auto& [key, p] : pools_)
    if (p.device == device && p.bucket == Bucket::Device) {
      uint64_t f = p.footprint();
      sum += f > p.live_bytes ? f - p.live_bytes : 0;
    }
  return sum;
}

std::vector<uint64_t> LiveState::pool_keys(uint64_t handle, int device) const {
  std::vector<uint64_t> keys{pools_.count(handle) ? handle : default_pool_key(device)};
  for (const auto& [location, named] : default_pools_)  // rule 4: the default pool by its handle
    if (named == handle) keys.push_back(default_pool_key(int32_t(uint32_t(location))));
  return keys;
}

// The key of the pool a live allocation is in (pool_of's).
static uint64_t pool_key(const AllocInfo& a) { return a.pool ? a.pool : default_pool_key(a.device); }

void LiveState::trim_pools(const std::vector<uint64_t>& keys, uint64_t keep) {
  std::vector<uint64_t> walk;  // pools whose changes were too many to keep
  std::vector<std::pair<uint64_t, std::map<uint64_t, uint64_t>>> before;  // with `keep`: their extents
  for (uint64_t key : keys) {
    auto it = pools_.find(key);
    if (it == pools_.end()) continue;
    PoolState& p = it->second;
    const uint64_t keep_here = keep == kKeepThreshold ? p.release_threshold : keep;
    if (keep_here) {
      if (keep_here >= p.footprint()) continue;  // it keeps all it has: nothing goes
      before.emplace_back(key, p.extents);
    }
    if (!p.live_bytes) {  // nothing of its is live
      p.clear_extents();
    } else if (p.changes_dropped) {
      p.clear_extents();
      walk.push_back(key);
    } else {
      // Its extents are its live allocations at the last trim and every range handed out
      // since: less what was freed since, and what was freed and handed out again is live.
      for (const auto& [lo, hi] : p.freed_since_trim) p.subtract_extent(lo, hi);
      for (uint64_t addr : p.allocated_since_trim)
        if (auto a = live_.find(addr); a != live_.end()) {
          const AllocInfo al = info(a->second);
          if (al.kind == MemKind::Async && pool_key(al) == key) p.merge_extent(addr, addr + al.size);
        }
      p.forget_changes();
    }
  }
  if (!walk.empty())
    for (const auto& e : live_) {  // one pass for all of them: their live allocations are what stays
      const AllocInfo al = info(e.second);
      if (al.kind != MemKind::Async) continue;
      const uint64_t key = pool_key(al);
      if (std::find(walk.begin(), walk.end(), key) != walk.end()) pool_slot(key).merge_extent(e.first, e.first + al.size);
    }
  // A trim that keeps some: the free ranges go largest first until what is left is what it keeps
  // (the last one in part: the driver's blocks are not known, only their merged ranges); the
  // ranges kept are free space again, as if freed after the trim (largest_free_gap reads them).
  for (auto& [key, old] : before) {
    PoolState& p = pool_slot(key);
    const uint64_t keep_here = keep == kKeepThreshold ? p.release_threshold : keep;
    std::vector<std::pair<uint64_t, uint64_t>> free;  // old extents less what is live now
    for (const auto& [lo, hi] : old) {
      uint64_t at = lo;
      auto e = p.extents.upper_bound(lo);
      if (e != p.extents.begin()) --e;  // a live extent may start before lo
      for (; e != p.extents.end() && e->first < hi; ++e) {
        if (e->second <= at) continue;
        if (e->first > at) free.emplace_back(at, e->first);
        at = std::max(at, e->second);
      }
      if (at < hi) free.emplace_back(at, hi);
    }
    std::stable_sort(free.begin(), free.end(),
                     [](const auto& a, const auto& b) { return a.second - a.first > b.second - b.first; });
    uint64_t left = p.extent_bytes;
    for (const auto& r : free) left += r.second - r.first;  // the footprint before the trim
    for (const auto& [lo, hi] : free) {
      const uint64_t give = std::min(hi - lo, left > keep_here ? left - keep_here : 0);
      left -= give;
      if (lo + give < hi) {  // kept, all or its start
        p.merge_extent(lo, hi - give);
        p.note_change(p.freed_since_trim, std::make_pair(lo, hi - give));
      }
    }
  }
}

void LiveState::pools_synchronized(int device) {
  std::vector<uint64_t> release;
  for (const auto& [key, p] : pools_)
    if (p.device == device) {
      const uint64_t f = p.footprint();
      if (f > p.release_threshold && f > p.live_bytes) release.push_back(key);
    }
  trim_pools(release, kKeepThreshold);
}

// Rule 9: a sample sets the pool's figures; its reserved bytes are device memory of kind graph_pool.
void LiveState::graph_pool_sampled(int device, uint64_t reserved, uint64_t used) {
  DeviceTotals& d = device_slot(device);
  const uint64_t before = d.graph_reserved;
  if (reserved < before) dropping(d);
  const uint64_t delta = reserved - before;  // modular: a drop subtracts
  d.bytes[int(Bucket::Device)] += delta;
  d.kinds[int(MemKind::GraphPool)] += delta;
  device_all_ += delta;
  d.graph_reserved = reserved;
  d.graph_used = used;
  d.graph_reserved_max = std::max(d.graph_reserved_max, reserved);
  if (delta) d.version++;
  if (delta && std::find(changed_.begin(), changed_.end(), device) == changed_.end()) changed_.push_back(device);
}

// Each case is one effect of format/accounting.h; the rules are numbered there.
void LiveState::apply(const Record& r, Effect fx) {
  changed_.clear();
  freed_now_ = false;
  if (fx == Effect::None || !changes_memory(r.result)) return;  // (no op: None) rule 1
  const OpInfo& op = *r.op;
  auto alloc = [&r, &op] {  // what an acquire adds, on the event's device (rule 4)
    AllocInfo a;
    a.size = r.size;
    a.context = r.context;
    a.stack = r.stack;
    a.device = r.device;
    a.kind = op.kind;
    a.bucket = bucket_of(op.kind);
    a.tid = r.tid;
    return a;
  };
  switch (fx) {
    case Effect::Allocate: {
      if (!is_memory_key(r.addr)) return;  // rule 2
      AllocInfo a = alloc();
      if (op.kind == MemKind::Async) {  // rule 4: where its pool lives
        a.pool = allocation_pool(r, [this](uint64_t location) { return current_pool(location); });
        const PoolState* p = a.pool ? find_pool(a.pool) : nullptr;
        if (p && p->placed) {
          Placement at = from_pool({p->device, p->bucket}, r.device);
          a.device = at.device;
          a.bucket = at.bucket;
        }
      }
      add(r.addr, a, live_);  // rule 3: replaces what was live there
      return;
    }
    case Effect::Free: {
      if (!is_memory_key(r.addr)) return;
      auto it = live_.find(r.addr);
      if (it == live_.end()) {
        ++unmatched_frees_;  // rule 3: nothing to free
        return;
      }
      freed_now_ = true;
      freed_size_ = it->second.size;
      freed_bucket_ = info(it->second).bucket;
      remove_alloc(it, live_, false);
      return;
    }
    case Effect::CreateHandle:
    case Effect::ImportHandle: {
      if (!is_memory_key(r.aux)) return;
      AllocInfo a = alloc();
      Placement at = placement_at(r.aux2, r.device);  // rule 4
      a.device = at.device;
      a.bucket = at.bucket;
      if (fx == Effect::ImportHandle) {  // rule 10: imported; its size comes with its mappings
        a.bucket = Bucket::Imported;
        a.size = 0;
      }
      auto u = handle_use_.find(r.aux);
      if (u != handle_use_.end()) u->second.refs.renew();  // rule 3: a new handle; its mappings stay
      multicasts_.erase(r.aux);
      add(r.aux, a, handles_);
      return;
    }
    case Effect::RetainHandle:  // rule 11
      if (is_memory_key(r.aux)) handle_use_[r.aux].refs.retains++;
      return;
    case Effect::ReleaseHandle:  // rules 5, 11 and 12
      if (is_memory_key(r.aux)) release_handle(r.aux);
      return;
    case Effect::Map: {
      auto old = mappings_.find(r.addr);
      if (old != mappings_.end()) unmap(r.addr, 1);  // rule 3: a mapping there is gone
      mappings_[r.addr] = {r.size, r.aux};
      handle_use_[r.aux].mappings++;
      mapped_total_ += r.size;
      mapped_max_ = std::max(mapped_max_, mapped_total_);
      if (is_memory_key(r.aux)) import_mapped(r);  // rule 10
      return;
    }
    case Effect::CreateMulticast: {  // rule 12: kept apart, no memory
      // (A handle value live as memory too is a damaged trace: that memory stays as it is, so
      // that the figures stay the tracker's, which keeps no multicast objects.)
      if (!is_memory_key(r.aux)) return;
      MulticastState m;
      m.size = r.size;
      m.stack = r.stack;
      m.device = r.device;
      m.team = uint32_t(r.aux2);
      multicasts_[r.aux] = m;
      return;
    }
    case Effect::AddDevice:
    case Effect::Bind:
    case Effect::Unbind: {
      if (fx == Effect::Bind)  // rule 12: the binding holds the memory bound
        bind(binding_of(op.id, r, binds_by_address(op.id) ? handle_mapped_at(r.addr) : bound_handle(op.id, r)));
      if (fx == Effect::Unbind)
        for (size_t i = 0; i < bindings_.size(); ++i)
          if (unbind_removes(bindings_[i], r)) {
            const uint64_t h = bindings_[i].handle;
            bindings_.erase(bindings_.begin() + long(i));
            unbound(h);
            break;
          }
      auto m = multicasts_.find(r.aux);
      if (m == multicasts_.end()) return;
      if (fx == Effect::AddDevice) m->second.added++;
      else if (fx == Effect::Bind) m->second.bound += r.size;
      else m->second.bound -= std::min(m->second.bound, r.size);
      return;
    }
    case Effect::Export: return;  // rule 13: no memory (the sharing aggregator notes it)
    case Effect::Unmap:
      unmap(r.addr, r.size);  // rule 5
      return;
    case Effect::Reserve:
      reservations_[r.addr] = r.size;
      reserved_total_ += r.size;
      reserved_max_ = std::max(reserved_max_, reserved_total_);
      return;
    case Effect::Unreserve: {
      auto it = reservations_.find(r.addr);
      if (it != reservations_.end()) {
        reserved_total_ -= std::min(reserved_total_, it->second);
        reservations_.erase(it);
      }
      return;
    }
    case Effect::Code:
      add_code(op, r);
      return;
    case Effect::CodeRelease: {
      const uint64_t key = code_key(op, r);
      release_code([key](const CodeEntry& c) { return c.key == key; });
      return;
    }
    case Effect::CreatePool:
    case Effect::PlacePool:
    case Effect::CurrentPool: {
      if (!is_memory_key(r.aux)) return;
      if (fx == Effect::CreatePool) forget_current_pool(r.aux);  // rule 3: a new pool, current nowhere
      if (fx != Effect::CreatePool && (r.fields & format::kEvAux2) && is_device_pool_location(r.aux2))
        (fx == Effect::CurrentPool ? current_pools_ : default_pools_)[r.aux2] = r.aux;
      current_cache_valid_ = false;
      PoolState& p = pool_slot(r.aux);
      if (fx == Effect::CreatePool) p.max_size = (r.fields & format::kEvSize) ? r.size : 0;
      if (fx == Effect::CurrentPool && p.placed) return;  // a pool seen created keeps its location
      Placement at = placement_at(r.aux2, r.device);
      p.device = at.device;
      p.bucket = at.bucket;
      p.placed = true;
      return;
    }
    case Effect::DestroyPool:
      if (is_memory_key(r.aux)) {
        pools_.erase(r.aux);
        pool_cache_ = nullptr;  // (it may have been that one)
        forget_current_pool(r.aux);  // the default pool is current again
      }
      return;
    case Effect::TrimPool:  // what is not live goes back to the device, down to what it keeps
      trim_pools(pool_keys(r.aux, r.device), r.size);
      return;
    case Effect::PoolAttribute: {  // rule 15: the release threshold
      uint64_t threshold;
      if (is_memory_key(r.aux) && pool_release_threshold(r, &threshold))
        for (uint64_t key : pool_keys(r.aux, r.device)) pool_of(key, r.device).release_threshold = threshold;
      return;
    }
    case Effect::Teardown:
      if (uint64_t ctx = torn_down_context(op.id, r)) drop_context(ctx);  // rule 6
      return;
    case Effect::GraphNode: {  // rule 8: counted, never live
      DeviceTotals& d = device_slot(graph_node_device(op, r));
      d.graph_nodes += 1;
      d.graph_node_bytes += r.size;
      if (captured(op, r)) {
        d.captured += 1;
        d.captured_bytes += r.size;
      }
      return;
    }
    case Effect::GraphPool:
      if (has_graph_pool_sample(r)) graph_pool_sampled(graph_pool_device(op.id, r), r.size, r.aux);
      return;
    case Effect::None: return;
  }
}

}  // namespace vt::analyzer
