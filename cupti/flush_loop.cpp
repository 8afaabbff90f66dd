// See flush_loop.h.
#include "flush_loop.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

namespace vt::cupti {

void FlushLoop::run() {
  uint64_t next = hooks.now(hooks.ctx) + interval_ns;
  for (;;) {
    bool woken = hooks.wait_until(hooks.ctx, next);
    uint64_t t = hooks.now(hooks.ctx);
    if (t < next) {  // woken early, or a spurious return (EINTR): not a deadline yet
      if (woken) {
        ++early_ticks;
        if (!hooks.tick(hooks.ctx, false)) return;
      }
      continue;
    }
    ++periodic_ticks;
    if (!hooks.tick(hooks.ctx, true)) return;
    // Next deadline on the fixed grid; skip the ones a slow flush already passed.
    next += interval_ns;
    uint64_t after = hooks.now(hooks.ctx);
    if (next <= after) next += ((after - next) / interval_ns + 1) * interval_ns;
  }
}

void Waker::wake() {
  word_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

bool Waker::wait_until(uint64_t deadline, uint64_t now) {
  uint32_t cur = word_.load(std::memory_order_acquire);
  if (cur != seen_) {
    seen_ = cur;
    return true;
  }
  if (deadline <= now) return false;
  uint64_t left = deadline - now;
  timespec ts{time_t(left / 1000000000ull), long(left % 1000000000ull)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, cur, &ts, nullptr, 0);
  cur = word_.load(std::memory_order_acquire);
  if (cur != seen_) {
    seen_ = cur;
    return true;
  }
  return false;
}

}  // namespace vt::cupti
