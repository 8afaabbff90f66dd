// See live_state.h.
#include "live_state.h"

#include <algorithm>
#include <cstring>

namespace vt::analyzer {

namespace {
constexpr uint32_t kLocationDevice = 1;

}  // namespace

const char* bucket_name(Bucket b) {
  switch (b) {
    case Bucket::Device: return "device";
    case Bucket::Managed: return "managed";
    case Bucket::PinnedHost: return "pinned_host";
    case Bucket::Imported: return "imported";
    default: return "?";
  }
}

uint64_t PoolState::footprint() const {
  uint64_t sum = 0;
  for (const auto& [lo, hi] : extents) sum += hi - lo;
  return sum;
}

uint64_t PoolState::largest_free_gap(const AllocMap& live) const {
  std::vector<std::pair<uint64_t, uint64_t>> used;
  for (const auto& e : live)
    if (e.second.kind == MemKind::Async) used.push_back({e.first, e.first + e.second.size});
  std::sort(used.begin(), used.end());
  uint64_t best = 0;
  for (const auto& [lo, hi] : extents) {
    uint64_t cursor = lo;
    auto it = std::lower_bound(used.begin(), used.end(), std::make_pair(lo, uint64_t(0)));
    for (; it != used.end() && it->first < hi; ++it) {
      if (it->first > cursor) best = std::max(best, it->first - cursor);
      cursor = std::max(cursor, it->second);
    }
    if (hi > cursor) best = std::max(best, hi - cursor);
  }
  return best;
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
  last_slot_ = *slot;
  return slots_[size_t(*slot)];
}

// account, add and remove_alloc run once or twice per event: always inlined into their callers,
// which saves their register spills (~45 instructions per event in callgrind).
__attribute__((always_inline)) inline void LiveState::account(const Alloc& a, int64_t sign) {
  if (sign < 0 && a.bucket == Bucket::Device && before_drop_) before_drop_(before_drop_ctx_, a.device);
  const uint64_t delta = uint64_t(sign) * a.size;
  DeviceTotals& d = device_slot(a.device);
  d.bytes[int(a.bucket)] += delta;
  if (a.bucket == Bucket::Device) {
    d.kinds[int(a.kind) & (kKindSlots - 1)] += delta;
    device_all_ += delta;
  }
  if (changed_.empty() || (changed_.back() != a.device &&
                           std::find(changed_.begin(), changed_.end(), a.device) == changed_.end()))
    changed_.push_back(a.device);
  SiteBytes& s = sites_.at(a.site);
  s.bytes += delta;
  s.count += uint64_t(sign);
}

PoolState& LiveState::pool_of(uint64_t pool, int device) {
  uint64_t key = pool ? pool : default_pool_key(device);
  PoolState& p = pools_[key];
  if (p.device < 0) p.device = device;
  return p;
}

__attribute__((always_inline)) inline void LiveState::add(uint64_t key, const Alloc& a, AllocMap& map) {
  uint32_t site = sites_.row(SiteKey{a.stack, a.device, a.bucket});
  auto [it, inserted] = map.emplace(key, a);
  if (!inserted) {  // an address handed out twice without a free we saw: the old one is gone
    remove_alloc(it, map, false);
    it = map.emplace(key, a).first;
  }
  it->second.site = site;
  account(it->second, +1);
  if (a.kind == MemKind::Async) {
    PoolState& p = pool_of(a.pool, a.device);
    p.live_bytes += a.size;
    uint64_t lo = key, hi = key + a.size;
    // Merge [lo, hi) into the pool's extents; usually a warm pool reuses a known range.
    auto next = p.extents.upper_bound(lo);
    if (next != p.extents.begin() && std::prev(next)->second >= hi) return;
    next = p.extents.lower_bound(lo);
    if (next != p.extents.begin()) {
      auto prev = std::prev(next);
      if (prev->second >= lo) {
        lo = prev->first;
        hi = std::max(hi, prev->second);
        next = p.extents.erase(prev);
      }
    }
    while (next != p.extents.end() && next->first <= hi) {
      hi = std::max(hi, next->second);
      next = p.extents.erase(next);
    }
    p.extents[lo] = hi;
  }
}

__attribute__((always_inline)) inline void LiveState::remove_alloc(AllocMap::iterator it, AllocMap& map, bool teardown) {
  const Alloc a = it->second;
  map.erase(it);
  account(a, -1);
  if (a.kind == MemKind::Async) {
    PoolState& p = pool_of(a.pool, a.device);
    p.live_bytes -= std::min(p.live_bytes, a.size);
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
    if (e.second.context == ctx) gone.push_back(e.first);
  for (uint64_t addr : gone) remove_alloc(live_.find(addr), live_, true);
}

void LiveState::maybe_free_handle(uint64_t handle) {
  auto it = handles_.find(handle);
  if (it == handles_.end()) return;
  if (handle_maps_[handle] > 0) {
    released_[handle] = true;  // the driver frees it when its last mapping goes
    return;
  }
  handle_maps_.erase(handle);
  released_.erase(handle);
  remove_alloc(it, handles_, false);
}

uint64_t LiveState::handle_bytes_unmapped(int device) const {
  uint64_t sum = 0;
  for (const auto& e : handles_) {
    auto m = handle_maps_.find(e.first);
    if (e.second.device == device && (m == handle_maps_.end() || m->second == 0)) sum += e.second.size;
  }
  return sum;
}

uint64_t LiveState::pool_cached_bytes(int device) const {
  uint64_t sum = 0;
  for (const auto& [key, p] : pools_)
    if (p.device == device) {
      uint64_t f = p.footprint();
      sum += f > p.live_bytes ? f - p.live_bytes : 0;
    }
  return sum;
}

void LiveState::apply(const Record& r) {
  changed_.clear();
  if (!r.op || r.result != 0) return;  // a failed call changed nothing
  const OpInfo& op = *r.op;
  auto alloc = [&r, &op] {  // what an acquire adds (releases need none)
    Alloc a;
    a.size = r.size;
    a.context = r.context;
    a.stack = r.stack;
    a.device = r.device;
    a.kind = op.kind;
    a.bucket = bucket_of(op.kind);
    return a;
  };
  if (keyed_by_address(op.kind)) {
    if (op.action == Action::Acquire) {
      Alloc a = alloc();
      if (op.kind == MemKind::Async && r.has(format::kEvAux)) {
        a.pool = r.aux;
        auto p = pools_.find(r.aux);
        if (p != pools_.end() && p->second.device >= 0) a.device = p->second.device;
      }
      add(r.addr, a, live_);
    } else {
      auto it = live_.find(r.addr);
      if (it == live_.end())
        ++unmatched_frees_;
      else
        remove_alloc(it, live_, false);
    }
    return;
  }
  switch (op.kind) {
    case MemKind::VmmPhysical:
      if (op.action == Action::Acquire) {
        Alloc a = alloc();
        uint32_t type = uint32_t(r.aux2 >> 32);
        if (type == kLocationDevice) {
          a.device = int32_t(uint32_t(r.aux2));
        } else {
          a.bucket = Bucket::PinnedHost;
        }
        add(r.aux, a, handles_);
      } else {
        maybe_free_handle(r.aux);
      }
      break;
    case MemKind::VmmMapping:
      if (op.action == Action::Acquire) {
        mappings_[r.addr] = {r.size, r.aux};
        handle_maps_[r.aux]++;
        mapped_total_ += r.size;
      } else {
        for (auto it = mappings_.lower_bound(r.addr); it != mappings_.end() && it->first < r.addr + r.size;) {
          uint64_t h = it->second.handle;
          mapped_total_ -= std::min(mapped_total_, it->second.size);
          it = mappings_.erase(it);
          if (--handle_maps_[h] <= 0 && released_.count(h)) {
            handle_maps_[h] = 0;
            maybe_free_handle(h);
          }
        }
      }
      break;
    case MemKind::VmmReservation:
      if (op.action == Action::Acquire) {
        reservations_[r.addr] = r.size;
        reserved_total_ += r.size;
      } else {
        auto it = reservations_.find(r.addr);
        if (it != reservations_.end()) {
          reserved_total_ -= std::min(reserved_total_, it->second);
          reservations_.erase(it);
        }
      }
      break;
    case MemKind::Pool: {
      HookId id = HookId(op.code - 1);
      if (id == HookId::cuMemPoolCreate) {
        PoolState& p = pools_[r.aux];
        p.device = uint32_t(r.aux2 >> 32) == kLocationDevice ? int32_t(uint32_t(r.aux2)) : r.device;
      } else if (id == HookId::cuMemPoolDestroy) {
        pools_.erase(r.aux);
      } else {  // cuMemPoolTrimTo: what is not live goes back to the device
        uint64_t key = pools_.count(r.aux) ? r.aux : default_pool_key(r.device);
        auto it = pools_.find(key);
        if (it != pools_.end()) {
          it->second.extents.clear();
          for (const auto& e : live_) {
            const Alloc& al = e.second;
            if (al.kind == MemKind::Async && (al.pool ? al.pool : default_pool_key(al.device)) == key)
              it->second.extents[e.first] = e.first + al.size;
          }
        }
      }
      break;
    }
    case MemKind::Context: {
      HookId id = HookId(op.code - 1);
      uint64_t ctx = id == HookId::cuCtxDestroy_v2 ? r.aux : r.aux2;
      if (ctx) drop_context(ctx);
      break;
    }
    default: break;  // None; the address-keyed kinds returned above
  }
}

}  // namespace vt::analyzer
