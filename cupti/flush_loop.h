// When kernel records are pulled out of CUPTI. CUPTI hands records over only when a buffer is
// full or on cuptiActivityFlushAll, so whatever it still holds is lost if the process dies: the
// flusher thread calls flush every `interval` (100 ms) so a crash loses at most that much.
// Fixed rate (deadlines do not drift by the flush's own cost) and no catch-up burst after a
// slow flush. Between deadlines, a wake-up (the buffer pool running low) drains completed
// buffers early without asking CUPTI for a flush. The clock, the wait and the work are
// injected, so tests run the policy on a fake clock; cupti/cupti_session.cpp supplies real ones.
#pragma once

#include <atomic>
#include <cstdint>

namespace vt::cupti {

struct FlushHooks {
  uint64_t (*now)(void* ctx);
  // Waits until `deadline` (monotonic ns) or a wake-up; true when woken early.
  bool (*wait_until)(void* ctx, uint64_t deadline);
  // The work: periodic = true at a deadline (flush CUPTI + drain), false on an early wake-up
  // (drain only). Returns false to end the loop.
  bool (*tick)(void* ctx, bool periodic);
  void* ctx;
};

struct FlushLoop {
  uint64_t interval_ns = 100'000'000;
  FlushHooks hooks{};
  uint64_t periodic_ticks = 0, early_ticks = 0;

  // Runs until tick() returns false.
  void run();
};

// A futex-backed wake-up for the real loop: wake() from any thread (lock-free, async-safe),
// wait_until() on the flusher thread.
class Waker {
 public:
  void wake();
  bool wait_until(uint64_t deadline_ns, uint64_t now_ns);

 private:
  std::atomic<uint32_t> word_{0};
  uint32_t seen_ = 0;
};

}  // namespace vt::cupti
