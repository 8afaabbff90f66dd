// See live_counters.h.
#include "live_counters.h"

namespace vt::live {

Counters g_counters;
__thread uint32_t t_counter_thread __attribute__((tls_model("initial-exec"))) = 0;

namespace {
int used_sets() {
  const uint32_t n = g_counters.threads.load(std::memory_order_acquire);
  return n < uint32_t(kThreadSets) ? int(n) : kThreadSets;
}
}  // namespace

uint32_t number_this_thread() {
  uint32_t me = g_counters.threads.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (me == 0) me = 1;  // (after 4 billion threads: share the first set)
  return t_counter_thread = me;
}

void add_to_own_first(int row, int bucket, int64_t delta) {
  number_this_thread();
  add_to_own(row, bucket, delta);
}

void add_slow(uintptr_t owner, int row, int bucket, int64_t delta) {
  std::atomic<uintptr_t>& o = g_counters.owner;
  for (;;) {
    if (owner == kPerThread) return add_to_own(row, bucket, delta);
    if (owner == kPinned) {
      uint32_t me = t_counter_thread;
      if (me) {  // added to its own set while the mode changed: moved over first
        CounterSet& s = g_counters.sets[(me - 1) % kThreadSets];
        if (s.dirty.load(std::memory_order_seq_cst)) take_in(s);
      }
      return add_shared(row, bucket, delta);
    }
    const uintptr_t me = this_thread();
    if (owner == me) return add_shared(row, bucket, delta);
    // The first thread to add owns the shared counters; a second one ends that for this run
    // (unless the peak was pinned meanwhile: the exchange fails and the loop sees why).
    const uintptr_t next = owner == kNoOwner ? me : kPerThread;
    if (o.compare_exchange_strong(owner, next, std::memory_order_acq_rel)) owner = next;
  }
}

void take_in(CounterSet& set) {
  set.dirty.store(0, std::memory_order_seq_cst);  // before the exchanges: a later add marks it again
  for (int r = 0; r < kRows; ++r)
    for (int b = 0; b < kBuckets; ++b) {
      if (!set.bytes[r][b].load(std::memory_order_relaxed)) continue;
      const int64_t v = set.bytes[r][b].exchange(0, std::memory_order_seq_cst);
      const int64_t now = g_counters.shared.bytes[r][b].fetch_add(v, std::memory_order_relaxed) + v;
      if (b == kDeviceBucket && v > 0) raise_peak(r, now);
    }
}

int64_t bytes(int row, int bucket) {
  int64_t sum = g_counters.shared.bytes[row][bucket].load(std::memory_order_relaxed);
  const int n = used_sets();
  for (int i = 0; i < n; ++i) sum += g_counters.sets[i].bytes[row][bucket].load(std::memory_order_relaxed);
  return sum;
}

int64_t peak(int row) {
  if (g_counters.owner.load(std::memory_order_relaxed) == kPerThread) raise_peak(row, bytes(row, kDeviceBucket));
  return g_counters.peak[row].load(std::memory_order_relaxed);
}

void reset_peak(int row) {
  Counters& c = g_counters;
  if (c.owner.exchange(kPinned, std::memory_order_seq_cst) != kPinned) {
    const int n = used_sets();
    for (int i = 0; i < n; ++i) take_in(c.sets[i]);
  }
  for (int r = 0; r < kRows; ++r)
    if (row < 0 || r == row) c.peak[r].store(c.shared.bytes[r][kDeviceBucket].load(std::memory_order_relaxed));
}

void forget_in_child() {
  Counters& c = g_counters;
  auto zero = [](auto& a) {  // (only where needed: a page stored to is copied into the child)
    if (a.load(std::memory_order_relaxed)) a.store(0, std::memory_order_relaxed);
  };
  auto clear = [&](CounterSet& s) {
    for (auto& r : s.bytes)
      for (auto& b : r) zero(b);
    zero(s.dirty);
  };
  clear(c.shared);
  for (CounterSet& s : c.sets) clear(s);
  for (auto& p : c.peak) zero(p);
  c.owner.store(this_thread(), std::memory_order_relaxed);  // the one thread the child has
}

}  // namespace vt::live
