// See own_work.h.
#include "own_work.h"

#include <pthread.h>

#include <cerrno>
#include <ctime>

namespace vt {

namespace {
constexpr int kRaisedByUs[] = {SIGPIPE, SIGXFSZ};  // generated synchronously by a write or growth
constexpr int kFaults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};

// Signals the kernel raises for a fault of this very instruction cannot be blocked usefully.
void fill_async(sigset_t* s) {
  sigfillset(s);
  for (int sig : kFaults) sigdelset(s, sig);
}
}  // namespace

OwnWork::OwnWork(bool block_async_signals) : errno_(errno) {
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state_);
  sigset_t block;
  if (block_async_signals) {
    fill_async(&block);
  } else {
    sigemptyset(&block);
    for (int sig : kRaisedByUs) sigaddset(&block, sig);
    sigaddset(&block, SIGTTOU);  // blocked: a background write to a tostop terminal just proceeds
  }
  pthread_sigmask(SIG_BLOCK, &block, &old_mask_);
  sigpending(&pending_before_);
}

OwnWork::~OwnWork() {
  sigset_t now;
  sigpending(&now);
  for (int sig : kRaisedByUs) {
    if (sigismember(&now, sig) != 1 || sigismember(&pending_before_, sig) == 1) continue;
    // Ours: take it before the mask comes back. sigtimedwait is a cancellation point, but
    // cancellation is still disabled here.
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    timespec zero = {0, 0};
    sigtimedwait(&one, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  int ignored;
  pthread_setcancelstate(cancel_state_, &ignored);
  errno = errno_;
}

bool start_helper_thread(void* (*fn)(void*), void* arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits this mask
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  const bool started = pthread_create(&thread, &attr, fn, arg) == 0;
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started;
}

}  // namespace vt
