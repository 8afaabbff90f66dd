// See lookups.h.
#include "aggregators/lookups.h"

#include "meta_records.h"

namespace vt::analyzer {

namespace {
// A recorder writes each name once and at most 17 opens; a crafted trace may write any number,
// so past these the rest are dropped (the memory-relevant names are ~200).
constexpr size_t kMaxGaps = 512, kMaxOpens = 64;
}  // namespace

void LookupAggregator::on_record(const Record& r) {
  format::LookupRecord rec;
  if (!r.payload || !format::decode<format::LookupSchema>(r.payload, r.payload_len, &rec)) return;
  if (rec.kind == format::kLookupReached) {
    if (!out_.lookups_reached) out_.first_lookup = std::string(rec.symbol);
    out_.lookups_reached = true;
  } else if (rec.kind == format::kLookupGap && seen_.size() < kMaxGaps && seen_.insert(std::string(rec.symbol)).second) {
    out_.unhooked.push_back({std::string(rec.symbol), format::lookup_category_name(rec.category), rec.version, rec.flags});
  } else if (rec.kind == format::kLookupIsolatedOpen) {
    bool other = rec.version == 1;
    std::string key = (other ? "n:" : "d:") + std::string(rec.symbol);
    if (opens_.size() < kMaxOpens && opens_.insert(key).second) out_.isolated.push_back({std::string(rec.symbol), other, rec.flags, !other && rec.category == 1});
  }
}

void LookupAggregator::finish(const StackStore& stacks, uint32_t minor, TraceReport* rep) {
  for (const ModuleInfo& m : stacks.modules) {
    size_t slash = m.path.rfind('/');
    if (m.path.compare(slash == std::string::npos ? 0 : slash + 1, 10, "libcudart.") == 0) out_.cudart_loaded = true;
  }
  out_.cudart_unreached = minor >= 1 && out_.cudart_loaded && !out_.lookups_reached;
  rep->interception = std::move(out_);
}

}  // namespace vt::analyzer
