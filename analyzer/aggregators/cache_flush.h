// The cache-flush aggregator: an allocation that failed for lack of memory, then frees of device
// memory, then the same request again (same op, same size) that succeeds — a caching allocator
// (PyTorch's, CuPy's) emptying its cache to retry. Each such sequence is one CacheFlush: what it
// freed and that the retry worked. Any other acquire in between ends the sequence unrecorded.
#pragma once

#include <cstdint>
#include <vector>

#include "live_state.h"
#include "report_model.h"

namespace vt::analyzer {

class CacheFlushAggregator {
 public:
  // An out-of-memory failure: a sequence starts (replacing one still open); when it is the retry
  // of the open one, after frees, that flush is recorded as one whose retry failed too.
  void on_oom(const Record& r) {
    if (pending_.active && r.op->code == pending_.op && r.size == pending_.f.requested_bytes && pending_.f.freed_count > 0)
      flushes_.push_back(pending_.f);  // (retry_succeeded stays false)
    pending_ = {true, CacheFlush{r.t_ns, r.size, 0, 0, false}, r.op->code};
  }
  // Before a successful event is applied (`live` still holds what a free releases).
  void before(const Record& r, const LiveState& live) {
    if (pending_.active) step(r, live);
  }
  void finish(TraceReport* rep) { rep->fragmentation.cache_flushes = std::move(flushes_); }

 private:
  void step(const Record& r, const LiveState& live);
  struct Pending {
    bool active = false;
    CacheFlush f;
    uint8_t op = 0;  // the failed request's op code
  } pending_;
  std::vector<CacheFlush> flushes_;
};

}  // namespace vt::analyzer
