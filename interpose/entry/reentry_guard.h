// Where this thread is with respect to our hooks, in initial-exec TLS (no allocation, no
// __tls_get_addr), and what a hook that starts now may do:
//   kPhaseNone  not in a hook: record normally.
//   kPhaseReal  every hook below on this stack is inside the real driver function, holding
//               nothing of ours: a hook that starts now (a signal handler interrupting the driver
//               call) records normally too.
//   kPhaseOurs  our own work is under way (locks, the thread's chunk, the live tracker may be
//               half-updated): a hook that starts now is a signal handler interrupting it (or our
//               own bookkeeping). It forwards to the driver and queues its event without locks
//               (deferred_events.h); the interrupted scope records the queue when it is done.
// HookScope is used by every hook and by the other entry points that write to the trace.
#pragma once

#include <atomic>
#include <cstdint>

#include "deferred_events.h"

namespace vt {

enum : uint8_t { kPhaseNone = 0, kPhaseOurs = 1, kPhaseReal = 2 };
extern __thread uint8_t t_phase __attribute__((tls_model("initial-exec")));

class HookScope {
 public:
  HookScope() : prev_(t_phase) { t_phase = kPhaseOurs; }
  ~HookScope() {
    if (!nested_in_our_work()) leave();
  }
  // Started inside our own work on this thread: record nothing now, queue instead.
  bool nested_in_our_work() const { return prev_ == kPhaseOurs; }
  // Around the real driver call (not when nested in our work: what is below still holds ours).
  void real_call_begin() {
    if (!nested_in_our_work()) t_phase = kPhaseReal;
  }
  void real_call_end() {
    if (!nested_in_our_work()) t_phase = kPhaseOurs;
  }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

 private:
  void leave() {
    // Events queued by handlers that interrupted us are recorded here, still in kPhaseOurs;
    // once the phase is back to a safe one no handler queues any more.
    for (;;) {
      if (__builtin_expect(has_deferred_events(), 0)) record_deferred_events();
      t_phase = prev_;
      std::atomic_signal_fence(std::memory_order_seq_cst);
      if (__builtin_expect(!has_deferred_events(), 1) || release_deferred_queue()) return;
      t_phase = kPhaseOurs;  // one arrived just before the phase changed
    }
  }
  uint8_t prev_;
};

}  // namespace vt
