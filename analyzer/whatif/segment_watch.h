// Which of PyTorch's segments a driver release frees, and when that is torch.cuda.empty_cache()
// (whatif.h and fit.h replay it): the driver allocations and VMM reservations live in the trace,
// marked once a PyTorch block lands in one.
#pragma once

#include <cstdint>
#include <map>

#include "trace_reader.h"

namespace vt::analyzer {

inline bool is_allocation_kind(MemKind k) { return k == MemKind::Device || k == MemKind::Managed || k == MemKind::Async; }

// A driver allocation (or VMM reservation) live in the trace, and whether PyTorch's blocks were in it.
struct WatchedRegion {
  uint64_t size = 0;
  bool torch = false;
};
using WatchedRegions = std::map<uint64_t, WatchedRegion>;

inline WatchedRegion* containing(WatchedRegions& m, uint64_t addr, uint64_t size) {
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return nullptr;
  --it;
  return addr + size <= it->first + it->second.size ? &it->second : nullptr;
}

// Which of PyTorch's segments a driver release frees, and when that is torch.cuda.empty_cache():
// PyTorch releases segments on its own only after a failed allocation (the flush before its
// retry), which the model does by itself; a release with no failure since the last block is the
// program's empty_cache() (one per run of releases).
class SegmentWatch {
 public:
  // An event of the device's driver: true when it released PyTorch's cached memory by empty_cache().
  bool on_event(const Record& rec) {
    if (!rec.op) return false;
    if (rec.result != 0) {
      if (rec.op->action == Action::Acquire) failed_since_block_ = true;
      return false;
    }
    MemKind k = rec.op->kind;
    bool release = false;
    if (k == MemKind::VmmReservation) {
      if (rec.op->action == Action::Acquire && rec.size) reservations_[rec.addr] = WatchedRegion{rec.size, false};
      else if (rec.op->action == Action::Release) reservations_.erase(rec.addr);
    } else if (k == MemKind::VmmMapping && rec.op->action == Action::Release && rec.size) {
      WatchedRegion* r = containing(reservations_, rec.addr, rec.size);
      release = r && r->torch;
    } else if (is_allocation_kind(k)) {
      if (rec.op->action == Action::Acquire && rec.size) {
        allocations_[rec.addr] = WatchedRegion{rec.size, false};
      } else if (rec.op->action == Action::Release) {
        auto it = allocations_.find(rec.addr);
        if (it != allocations_.end()) {
          release = it->second.torch;
          allocations_.erase(it);
        }
      }
    }
    if (!release || failed_since_block_ || emptied_since_block_) return false;
    emptied_since_block_ = true;
    return true;
  }
  void on_block(uint64_t addr, uint64_t size) {
    failed_since_block_ = emptied_since_block_ = false;
    if (WatchedRegion* r = containing(allocations_, addr, size)) r->torch = true;
    else if (WatchedRegion* v = containing(reservations_, addr, size)) v->torch = true;
  }

 private:
  WatchedRegions allocations_, reservations_;
  bool failed_since_block_ = false, emptied_since_block_ = false;
};

}  // namespace vt::analyzer
