// Who holds a call site's live bytes, thread by thread (the thread that allocated them, wherever
// they are released): what attributes a leak or a growth to its thread, and what tells a thread's
// own growth from concurrency (aggregators/growth_rule.h). Rows are a per-site table's rows
// (live_state.h's SiteTable). A site only one thread allocates at costs a compare per change and
// keeps nothing more; a site a second thread allocates at keeps its bytes per thread from then on.
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
    if (row < owner_.size() && owner_[row] == tid + 1) return;
    slow(row, tid, sign, bytes, row_bytes);
  }
  // More than one thread has allocated (anywhere): false for most programs.
  bool several() const { return several_; }
  uint32_t first_tid() const { return first_ ? first_ - 1 : 0; }
  // The one thread that allocated at `row` (true), or false: none, or several (then by_thread).
  bool one_owner(uint32_t row, uint32_t* tid) const {
    if (row >= owner_.size() || owner_[row] == 0 || owner_[row] == kMany) return false;
    *tid = owner_[row] - 1;
    return true;
  }
  // Bytes per (row, tid) of the rows several threads allocated at (zeros included).
  template <typename F>
  void for_each_shared(F f) const {
    for (const auto& [key, bytes] : bytes_) f(uint32_t(key >> 32), uint32_t(key), bytes);
  }
  // How many threads allocated at `row` (0: none yet).
  uint32_t threads_at(uint32_t row) const;
  // The threads holding `row_bytes` at `row`, biggest first.
  std::vector<std::pair<uint32_t, uint64_t>> of(uint32_t row, uint64_t row_bytes) const;

 private:
  static constexpr uint32_t kMany = 0xffffffffu;
  void slow(uint32_t row, uint32_t tid, int sign, uint64_t bytes, uint64_t row_bytes);
  PodArray<uint32_t> owner_;  // per row: its one thread + 1, kMany, or 0 (none yet)
  absl::flat_hash_map<uint64_t, uint64_t> bytes_;  // (row << 32 | tid) -> bytes, rows owned by kMany
  uint32_t first_ = 0;  // the first thread that allocated + 1
  bool several_ = false;
};

}  // namespace vt::analyzer
