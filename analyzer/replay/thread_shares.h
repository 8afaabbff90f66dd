// Who holds a call site's live bytes, thread by thread (the thread that allocated them, wherever
// they are released): what attributes a leak or a growth to its thread, and what tells a thread's
// own growth from concurrency (aggregators/growth_rule.h). Rows are a per-site table's rows
// (live_state.h's SiteTable). A site only one thread allocates at costs a compare per change and
// keeps nothing more; a site a second thread allocates at keeps its bytes per thread from then
// on: its first 4 threads in a block of its own (a scan of 4: a hash lookup per event cost ~80
// instructions on a 4-thread trace, docs/PERFORMANCE.md), the others in a hash.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "pod_array.h"

namespace vt::analyzer {

class ThreadShares {
 public:
  // `bytes` allocated (sign +1) or released (-1) at site row `row` by thread `tid` (for a release,
  // the thread that allocated them); `row_bytes`: the row's bytes before this change.
  __attribute__((always_inline)) void change(uint32_t row, uint32_t tid, int sign, uint64_t bytes, uint64_t row_bytes) {
    if (row < owner_.size()) {
      const uint32_t o = owner_[row];
      if (o == tid + 1) return;
      if (o & kShared) {  // the thread's slot in the row's block, inline
        Block& b = blocks_[o & ~kShared];
        for (int i = 0; i < kSlots; ++i)
          if (b.tid[i] == tid + 1) return add(b.bytes[i], sign, bytes);
      }
    }
    slow(row, tid, sign, bytes, row_bytes);
  }
  // More than one thread has allocated (anywhere): false for most programs.
  bool several() const { return several_; }
  // The one thread that allocated at `row` (true), or false: none, or several (then of()).
  bool one_owner(uint32_t row, uint32_t* tid) const {
    if (row >= owner_.size() || owner_[row] == 0 || (owner_[row] & kShared)) return false;
    *tid = owner_[row] - 1;
    return true;
  }
  // The first thread that allocated at `row` (false: none yet): the owner of all its bytes while
  // no other thread had allocated there.
  bool first_owner(uint32_t row, uint32_t* tid) const {
    if (row >= first_owner_.size() || first_owner_[row] == 0) return false;
    *tid = first_owner_[row] - 1;
    return true;
  }
  // f(row, tid, bytes) for every thread of the rows several threads allocated at (zeros included).
  template <typename F>
  void for_each_shared(F f) const {
    for (const Block& b : blocks_)
      for (int i = 0; i < kSlots; ++i)
        if (b.tid[i]) f(b.row, b.tid[i] - 1, b.bytes[i]);
    for (const auto& [key, bytes] : overflow_) f(uint32_t(key >> 32), uint32_t(key), bytes);
  }
  // How many threads allocated at `row` (0: none yet).
  uint32_t threads_at(uint32_t row) const;
  // The threads holding `row_bytes` at `row`, biggest first.
  std::vector<std::pair<uint32_t, uint64_t>> of(uint32_t row, uint64_t row_bytes) const;

 private:
  static constexpr uint32_t kShared = 0x80000000u;  // owner_: | the row's block
  static constexpr int kSlots = 4;
  struct Block {
    uint32_t row;
    uint32_t tid[kSlots];  // + 1; 0: free
    uint64_t bytes[kSlots];
  };
  void slow(uint32_t row, uint32_t tid, int sign, uint64_t bytes, uint64_t row_bytes);
  static void add(uint64_t& b, int sign, uint64_t bytes) { b = sign > 0 ? b + bytes : b - (b < bytes ? b : bytes); }
  PodArray<uint32_t> owner_;        // per row: its one thread + 1, kShared | its block, or 0 (none yet)
  PodArray<uint32_t> first_owner_;  // per row: its first thread + 1, or 0
  PodArray<Block> blocks_;
  absl::flat_hash_map<uint64_t, uint64_t> overflow_;  // (row << 32 | tid) -> bytes: a row's 5th thread on
  uint32_t first_ = 0;  // the first thread that allocated + 1
  bool several_ = false;
};

}  // namespace vt::analyzer
