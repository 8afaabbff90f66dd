// OwnWork: the scope of vramtrace's own slow-path work on a program's thread (opening the trace,
// growing it, messages, module scans, NVML, CUPTI start-up). While it lasts:
//   - cancellation is disabled, so a pending deferred pthread_cancel cannot strike at one of our
//     open()/write()/usleep() calls while we hold a lock or half-built state (it strikes at the
//     program's next cancellation point instead, as it would without us);
//   - SIGPIPE, SIGXFSZ and SIGTTOU are blocked, and a SIGPIPE/SIGXFSZ our own write or growth
//     raised is consumed on the way out (one that was already pending is left for the program);
//   - errno is restored at the end.
// With block_async_signals, every asynchronous signal is blocked as well: for the one lock a
// signal handler's hook could also need (resolving the driver).
// Costs a few syscalls: never on the warm hook path (docs/PERFORMANCE.md).
// Also start_helper_thread: how each of our background threads starts.
#pragma once

#include <signal.h>

namespace vt {

class OwnWork {
 public:
  explicit OwnWork(bool block_async_signals = false);
  ~OwnWork();
  // True when `sig` (SIGPIPE or SIGXFSZ) was already pending when the scope began: a write that
  // could raise it again must not be made, or the program would see it twice.
  bool was_pending(int sig) const { return sigismember(&pending_before_, sig) == 1; }
  OwnWork(const OwnWork&) = delete;
  OwnWork& operator=(const OwnWork&) = delete;

 private:
  int errno_;
  int cancel_state_;
  sigset_t old_mask_;
  sigset_t pending_before_;
};

// Starts fn(arg) on a detached thread of ours that takes no signal meant for the program (every
// signal is blocked in it; the caller's mask is unchanged). False when the thread could not be
// created.
bool start_helper_thread(void* (*fn)(void*), void* arg);
// This process's pid: getpid(), or where a sandbox denies it (seccomp), what /proc/self names;
// 0 when neither answers.
long process_id();

// Helper threads started and not yet ended (0 in a forked child).
int live_helper_threads();
// True when the program's own threads are all gone (its main thread left with pthread_exit and
// the others ended) and only helper threads keep the process alive: the process would have ended
// with status 0 without them. Reads /proc.
bool only_helper_threads_left();

}  // namespace vt
