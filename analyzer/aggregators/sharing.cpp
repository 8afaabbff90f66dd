// See sharing.h.
#include "aggregators/sharing.h"

#include <algorithm>

namespace vt::analyzer {

void SharingAggregator::before(const Record& r, const LiveState& live) {
  switch (effect_of(*r.op, r)) {
    case Effect::Export: {
      ++exports_;
      // What it shares: an address-keyed allocation (IPC, a pool pointer, a DMA-BUF range that
      // starts at one) or a VMM handle. A pool export shares no allocation of its own.
      const bool handle = r.op->id == HookId::cuMemExportToShareableHandle;
      const AllocMap& m = handle ? live.vmm_handles() : live.live();
      const uint64_t key = handle ? r.aux : r.addr;
      if (!(r.fields & (handle ? format::kEvAux : format::kEvAddr))) return;
      auto it = m.find(key);
      if (it == m.end()) return;
      const AllocInfo a = live.info(it->second);
      if (!shared_keys_.insert({handle, key, a.size, a.stack}).second) return;  // shared before
      Site& s = shared_[{{a.stack, a.device}, bucket_name(a.bucket)}];
      s.bytes += a.size;
      s.count += 1;
      return;
    }
    case Effect::CreateMulticast: {
      if (!(r.fields & format::kEvAux)) return;
      Site& s = multicast_[{r.stack, r.device}];
      s.bytes += r.size;
      s.count += 1;
      return;
    }
    default: return;
  }
}

namespace {

template <typename Map, typename Kind>
std::vector<SiteGroup> groups(const Map& m, Kind kind, uint64_t* bytes, uint64_t* count) {
  std::vector<SiteGroup> out;
  for (const auto& [k, s] : m) {
    SiteGroup g;
    g.bytes = s.bytes;
    g.count = s.count;
    kind(k, &g);
    *bytes += s.bytes;
    *count += s.count;
    out.push_back(g);
  }
  for (SiteGroup& g : out) g.share = *bytes ? double(g.bytes) / double(*bytes) : 0;
  std::sort(out.begin(), out.end(), [](const SiteGroup& a, const SiteGroup& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  });
  return out;
}

}  // namespace

void SharingAggregator::finish(const LiveState& live, TraceReport* rep) const {
  SharingReport& s = rep->sharing;
  s.imported_max_bytes = live.imported_max();
  s.exports = exports_;
  s.shared = groups(
      shared_,
      [](const auto& k, SiteGroup* g) {
        g->stack_id = k.first.first;
        g->device = k.first.second;
        g->kind = k.second;
      },
      &s.shared_bytes, &s.shared_count);
  s.multicast = groups(
      multicast_,
      [](const auto& k, SiteGroup* g) {
        g->stack_id = k.first;
        g->device = k.second;
        g->kind = kind_name(MemKind::Multicast);
      },
      &s.multicast_bytes, &s.multicast_objects);
  for (const auto& [handle, m] : live.multicasts()) {
    s.multicast_live += 1;
    s.multicast_live_bytes += m.size;
    s.multicast_bound_bytes += m.bound;
  }
}

}  // namespace vt::analyzer
