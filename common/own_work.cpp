// See own_work.h.
#include "own_work.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

namespace {
std::atomic<int> g_helpers{0};  // helper threads started and not yet ended

// What a starting helper runs: a slot of a small static table (the injected library links no C++
// runtime: no operator new), free again once the thread has read it.
struct HelperStart {
  void* (*fn)(void*);
  void* arg;
  std::atomic<bool> taken{false};
};
HelperStart g_starts[16];

void* run_helper(void* p) {
  auto* slot = static_cast<HelperStart*>(p);
  void* (*fn)(void*) = slot->fn;
  void* arg = slot->arg;
  slot->taken.store(false, std::memory_order_release);
  void* r = fn(arg);
  g_helpers.fetch_sub(1, std::memory_order_release);
  return r;
}

// A forked child has none of its parent's threads.
__attribute__((constructor)) void forget_helpers_across_forks() {
  pthread_atfork(nullptr, nullptr, [] {
    g_helpers.store(0, std::memory_order_relaxed);
    for (HelperStart& h : g_starts) h.taken.store(false, std::memory_order_relaxed);
  });
}
}  // namespace

bool start_helper_thread(void* (*fn)(void*), void* arg) {
  HelperStart* start = nullptr;
  for (HelperStart& h : g_starts)
    if (!h.taken.exchange(true, std::memory_order_acq_rel)) {
      start = &h;
      break;
    }
  if (!start) return false;  // (16 starting at once: never, with our three kinds of helper)
  start->fn = fn;
  start->arg = arg;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the new thread inherits this mask
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // 2 MiB of stack, not the default 8 (RLIMIT_STACK): loading NVML or libcupti needs far less, and
  // the address space is the program's (one under RLIMIT_AS met ours; docs/security.md).
  pthread_attr_setstacksize(&attr, 2u << 20);
  g_helpers.fetch_add(1, std::memory_order_acq_rel);  // (before it runs: never counted short)
  const bool started = pthread_create(&thread, &attr, run_helper, start) == 0;
  if (!started) {
    g_helpers.fetch_sub(1, std::memory_order_release);
    start->taken.store(false, std::memory_order_release);
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started;
}

int live_helper_threads() { return g_helpers.load(std::memory_order_acquire); }

long process_id() {
  long pid = syscall(SYS_getpid);
  if (pid > 0) return pid;
  char link[32];
  ssize_t n = readlink("/proc/self", link, sizeof link - 1);  // (the pid, as a name)
  if (n <= 0) return 0;
  link[n] = '\0';
  return strtol(link, nullptr, 10);
}

namespace {
// The text of /proc/self/... after the command name's closing ')' (the name may hold spaces and
// parentheses), or nullptr.
const char* after_comm(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0) return nullptr;
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');
  return p && p[1] == ' ' ? p + 2 : nullptr;
}
}  // namespace

bool only_helper_threads_left() {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/self/task/%ld/stat", process_id());
  const char* main_state = after_comm(path, buf, sizeof buf);
  if (!main_state || *main_state != 'Z') return false;  // the main thread is still running
  const char* p = after_comm("/proc/self/stat", buf, sizeof buf);
  for (int field = 3; p && field < 20; ++field) {  // to num_threads, the 20th
    p = strchr(p, ' ');
    if (p) ++p;
  }
  // The zombie main thread still counts; a helper starting or ending errs towards "not yet".
  return p && strtol(p, nullptr, 10) == 1 + live_helper_threads();
}

}  // namespace vt
