// See site_groups.h.
#include "aggregators/site_groups.h"

#include <algorithm>

#include "op_table.h"

namespace vt::analyzer {

std::vector<SiteGroup> site_groups(const SiteTable::Row* rows, size_t n, int device, bool device_bucket_only) {
  std::vector<SiteGroup> out;
  uint64_t total = 0;
  for (const SiteTable::Row* row = rows; row != rows + n; ++row) {
    const SiteKey& k = row->key;
    const SiteBytes& b = row->b;
    if (device_bucket_only && (k.bucket != Bucket::Device || k.device != device)) continue;
    if (!b.bytes && !b.count) continue;
    SiteGroup g;
    g.bytes = b.bytes;
    g.count = b.count;
    g.stack_id = k.stack;
    g.device = k.device;
    g.kind = bucket_name(k.bucket);
    total += b.bytes;
    out.push_back(g);
  }
  for (SiteGroup& g : out) g.share = total ? double(g.bytes) / double(total) : 0;
  std::sort(out.begin(), out.end(), [](const SiteGroup& a, const SiteGroup& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.stack_id < b.stack_id;
  });
  return out;
}

void attach_threads(std::vector<SiteGroup>& groups, const SiteTable& table, const ThreadShares& shares) {
  if (!shares.several()) return;
  for (SiteGroup& g : groups) {
    Bucket bucket = Bucket::Device;
    for (int b = 0; b < kBuckets; ++b)
      if (g.kind == bucket_name(Bucket(b))) bucket = Bucket(b);
    const uint32_t row = table.find_row(SiteKey{g.stack_id, g.device, bucket});
    if (row == SiteTable::kNone) continue;
    for (const auto& [tid, bytes] : shares.of(row, g.bytes)) g.threads.push_back({tid, std::min(bytes, g.bytes), ""});
  }
}

std::map<std::string, uint64_t> bytes_by_kind(const std::array<uint64_t, kKindSlots>& kinds) {
  std::map<std::string, uint64_t> out;
  for (int k = 0; k < kKindSlots; ++k) {
    MemKind kind = MemKind(k);
    bool device_memory = kind == MemKind::Device || kind == MemKind::Async || kind == MemKind::VmmPhysical || kind == MemKind::Array ||
                         kind == MemKind::GraphPool;
    if (device_memory && kinds[k]) out[kind_name(kind)] = kinds[k];
  }
  return out;
}

std::map<std::string, uint64_t> bytes_by_kind(const LiveState& live, int device) {
  const DeviceTotals* d = live.find_device(device);
  return d ? bytes_by_kind(d->kinds) : std::map<std::string, uint64_t>{};
}

}  // namespace vt::analyzer
