// The activity buffers handed to CUPTI: a fixed number of fixed-size buffers, recycled, so
// kernel recording costs bounded memory whatever the workload. Each buffer cycles
//   FREE --lend (CUPTI asks)--> LENT --complete (CUPTI returns it)--> DONE --drain--> FREE.
// lend() and complete() run on CUPTI's threads and on application threads (CUDA 13 hands each
// launching thread its own buffer): they are lock-free and allocate nothing. drain() runs on one
// thread at a time (the caller serialises it) and decodes in the order buffers were completed.
// When every buffer is lent or waiting to be drained, lend() gives CUPTI none and CUPTI drops
// records (it counts them: cuptiActivityGetNumDroppedRecords) rather than us growing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace vt::cupti {

class BufferPool {
 public:
  static constexpr int kMaxBuffers = 64;

  // Uses [base, base + count * size) (8-byte aligned, as CUPTI requires). count <= kMaxBuffers.
  void init(uint8_t* base, size_t size, int count);

  uint8_t* lend();                                    // nullptr when none is free
  bool complete(uint8_t* buffer, size_t valid_bytes); // false: not one of ours (ignored)
  // A lent buffer CUPTI handed back where it must not be decoded (to another client's callback,
  // after vramtrace stepped aside): straight back to FREE. False: not one of ours, or not lent.
  bool reclaim(uint8_t* buffer);
  // Every lent buffer back to FREE (the libcupti they were lent to was finalised: it will never
  // return them). Returns how many.
  int reclaim_all_lent();
  bool owns(const uint8_t* buffer) const {
    return base_ && buffer >= base_ && buffer < base_ + size_t(count_) * size_ && size_t(buffer - base_) % size_ == 0;
  }

  // Calls fn(ctx, buffer, valid_bytes) for every completed buffer, oldest first, then frees it.
  // Returns how many were drained.
  using DrainFn = void (*)(void* ctx, uint8_t* buffer, size_t valid);
  int drain(DrainFn fn, void* ctx);

  size_t buffer_size() const { return size_; }
  int count() const { return count_; }
  int in_state(int state) const;  // for tests and the early-wake heuristic
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t take_refused() { return refused_.exchange(0, std::memory_order_relaxed); }

  enum State : uint32_t { kFree = 0, kLent = 1, kDone = 2, kDraining = 3 };

 private:
  struct Slot {
    std::atomic<uint32_t> state{kFree};
    size_t valid = 0;
    uint64_t seq = 0;
  };
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  int count_ = 0;
  Slot slots_[kMaxBuffers];
  std::atomic<uint32_t> hint_{0};
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace vt::cupti
