// Per-thread re-entrancy guard in initial-exec TLS (no allocation, no __tls_get_addr).
// A hook that runs while this thread is already inside a hook (the driver calling back into an
// exported name, or our own bookkeeping) forwards to the real function without recording.
#pragma once

namespace vt {

extern thread_local bool t_in_hook __attribute__((tls_model("initial-exec")));

class ReentryGuard {
 public:
  ReentryGuard() : entered_(!t_in_hook) {
    if (entered_) t_in_hook = true;
  }
  ~ReentryGuard() {
    if (entered_) t_in_hook = false;
  }
  bool entered() const { return entered_; }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;

 private:
  bool entered_;
};

}  // namespace vt
