// See lookups.h.
#include "aggregators/lookups.h"

#include "meta_records.h"

namespace vt::analyzer {

void LookupAggregator::on_record(const Record& r) {
  format::LookupRecord rec;
  if (!r.payload || !format::decode<format::LookupSchema>(r.payload, r.payload_len, &rec)) return;
  if (rec.kind == format::kLookupReached) {
    if (!out_.lookups_reached) out_.first_lookup = std::string(rec.symbol);
    out_.lookups_reached = true;
  } else if (rec.kind == format::kLookupGap && seen_.insert(std::string(rec.symbol)).second) {
    out_.unhooked.push_back({std::string(rec.symbol), format::lookup_category_name(rec.category), rec.version, rec.flags});
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
