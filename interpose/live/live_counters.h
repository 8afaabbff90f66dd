// The live tracker's byte counters: bytes per device row and bucket, and the device peak. They
// are written on every allocation and free, so where they live decides what threads share.
//
// Two modes:
//   - shared (exact): one set of counters every thread adds to, and the peak raised from the
//     very total each add produced. The tracker starts here, and stays here while only one
//     thread has allocated: a single-threaded program's peak is exact from its first event.
//   - per thread: once a second thread allocates, each thread adds to its own set (its own
//     cache lines: nothing written per event is shared between threads), and the live figures
//     are the shared set plus the sum of every thread's. The peak is then a figure sampled at
//     each query of it (peak_bytes; `vramtrace top`'s summary asks every 250 ms): it can miss a
//     short-lived high between two queries.
// vramtrace_reset_peak() (the pytest plugin calls it before each test) asks for an exact peak:
// it moves every thread's counts into the shared set and pins the shared mode for the rest of
// the run. A thread that was adding to its own set at that instant finds its set marked and
// moves it over at its next event.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "accounting.h"
#include "shm_layout.h"

namespace vt::live {

inline constexpr int kRows = format::kTrackedDevices + 1;  // last row: the other devices
inline constexpr int kDeviceBucket = int(Bucket::Device);
inline constexpr int kThreadSets = 64;  // threads beyond share sets (atomic adds: still exact sums)

struct alignas(64) CounterSet {
  std::atomic<int64_t> bytes[kRows][kBuckets];
  std::atomic<uint8_t> dirty;  // added to since the last move into the shared set
};

// Who may add to the shared counters without a check: a thread (its thread pointer) while it is
// the only one that has added, or one of the states below.
inline constexpr uintptr_t kNoOwner = 0;    // nobody has added yet
inline constexpr uintptr_t kPerThread = 1;  // two threads have: each adds to its own set
inline constexpr uintptr_t kPinned = 2;     // an exact peak was asked for: shared, for good

struct Counters {
  CounterSet shared;
  alignas(64) std::atomic<int64_t> peak[kRows];
  alignas(64) std::atomic<uintptr_t> owner{kNoOwner};  // read by every event, written 3 times at most
  std::atomic<uint32_t> threads{0};                    // thread numbers handed out
  CounterSet sets[kThreadSets];
};
extern Counters g_counters;

// This thread's number (1, 2, ...; 0 while it has none): which set is its own.
extern __thread uint32_t t_counter_thread __attribute__((tls_model("initial-exec")));

// One instruction on x86-64 (%fs:0), unlike a thread-local's address: the single-thread path
// pays only a compare for knowing that it is alone.
inline uintptr_t this_thread() {
#if defined(__has_builtin) && __has_builtin(__builtin_thread_pointer)
  return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
#else
  return uintptr_t(pthread_self());
#endif
}

uint32_t number_this_thread();                                      // once per thread
void add_slow(uintptr_t owner, int row, int bucket, int64_t delta);  // the other states
void take_in(CounterSet& set);                                      // a set into the shared one

inline void raise_peak(int row, int64_t now) {
  std::atomic<int64_t>& p = g_counters.peak[row];
  int64_t seen = p.load(std::memory_order_relaxed);
  while (now > seen && !p.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

// `rising`: the delta may raise the peak (known where the caller is inlined: a free never does).
__attribute__((always_inline)) inline void add_shared(int row, int bucket, int64_t delta, bool rising = true) {
  const int64_t now = g_counters.shared.bytes[row][bucket].fetch_add(delta, std::memory_order_relaxed) + delta;
  if (rising && bucket == kDeviceBucket && delta > 0) raise_peak(row, now);
}

void add_to_own_first(int row, int bucket, int64_t delta);  // the thread's first add: numbers it

__attribute__((always_inline)) inline void add_to_own(int row, int bucket, int64_t delta) {
  const uint32_t me = t_counter_thread;
  if (__builtin_expect(me == 0, 0)) return add_to_own_first(row, bucket, delta);
  CounterSet& s = g_counters.sets[(me - 1) % kThreadSets];
  s.bytes[row][bucket].fetch_add(delta, std::memory_order_seq_cst);  // (lock xadd, as relaxed)
  s.dirty.store(1, std::memory_order_release);                        // after the add: take_in's mark
}

// Adds `delta` bytes to (row, bucket). On the hook path: no lock; out of line only in the rare
// states (the first event, the switch, the pinned mode).
__attribute__((always_inline)) inline void add_bytes(int row, int bucket, int64_t delta, bool rising = true) {
  const uintptr_t owner = g_counters.owner.load(std::memory_order_relaxed);
  if (__builtin_expect(owner == this_thread(), 1)) return add_shared(row, bucket, delta, rising);
  if (owner == kPerThread) return add_to_own(row, bucket, delta);
  add_slow(owner, row, bucket, delta);
}

int64_t bytes(int row, int bucket);  // shared + every thread's set
int64_t peak(int row);               // per thread: raised to the current figure first
void reset_peak(int row);            // -1: every row; pins the shared mode
void forget_in_child();              // after fork: nothing live, shared mode, this thread first

}  // namespace vt::live
