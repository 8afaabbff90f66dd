// See cache_flush.h.
#include "aggregators/cache_flush.h"

namespace vt::analyzer {

void CacheFlushAggregator::step(const Record& r, const LiveState& live) {
  if (r.op->action == Action::Release && r.op->kind == MemKind::Device) {
    auto it = live.live().find(r.addr);
    if (it != live.live().end()) {
      pending_.f.freed_bytes += it->second.size;
      pending_.f.freed_count++;
    }
  } else if (r.op->action == Action::Acquire) {
    if (r.op->code == pending_.op && r.size == pending_.f.requested_bytes && pending_.f.freed_count > 0) {
      pending_.f.retry_succeeded = true;
      flushes_.push_back(pending_.f);
    }
    pending_.active = false;
  }
}

}  // namespace vt::analyzer
