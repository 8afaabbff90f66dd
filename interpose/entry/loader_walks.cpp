// The exported dl_iterate_phdr: walks of the loader's list of objects (dl_iterate_phdr) across fork.
//
// dl_iterate_phdr holds the loader's list lock while it runs its callbacks, and glibc's fork
// resets the loader's main lock in the child but not that one: a fork while another thread walks
// the list leaves the child's list locked for good. Untraced, such a child hangs only if it walks
// the list itself; traced, our unwinder (libunwind) and module scans walk it at the child's first
// memory call. So libvramtrace exports dl_iterate_phdr and counts every walk in the process while
// it runs (libunwind's, ours, the program's): a fork waits a little for walks in flight, and a
// child forked while one still ran makes no walk of its own (its native stacks are off, lookups
// read the list unlocked: loaded_symbol.h); the program's own walks are left as they would be
// untraced.
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>

#include "load_steps.h"
#include "loaded_symbol.h"
#include "native_stack.h"

namespace vt {

namespace {

using IterateFn = int (*)(int (*)(dl_phdr_info*, size_t, void*), void*);

std::atomic<IterateFn> g_real{nullptr};
std::atomic<int> g_walks{0};  // walks running now, in all threads
thread_local int t_walks __attribute__((tls_model("initial-exec"))) = 0;  // this thread's share

IterateFn real_iterate() {
  IterateFn fn = g_real.load(std::memory_order_acquire);
  if (fn) return fn;
  // The definition after ours (a sanitizer runtime preloaded before us has its own, which calls
  // ours), found without calling anything: the first call may come while a runtime sets up.
  fn = reinterpret_cast<IterateFn>(definition_after("dl_iterate_phdr", _DYNAMIC));
  g_real.store(fn, std::memory_order_release);
  return fn;
}

struct Counted {
  Counted() {
    ++t_walks;
    g_walks.fetch_add(1, std::memory_order_seq_cst);
  }
  ~Counted() {  // (also when a callback throws)
    g_walks.fetch_sub(1, std::memory_order_release);
    --t_walks;
  }
};

// Before a fork: walks of other threads in flight are waited for, 20 ms at most (a callback may
// wait for the very thread that forks). No cancellation point in here: this runs inside fork().
void before_fork() {
  if (g_walks.load(std::memory_order_seq_cst) <= t_walks) return;
  timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    sched_yield();
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (g_walks.load(std::memory_order_seq_cst) > t_walks &&
           (now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 20000000L);
}

void after_fork_in_child() {
  // The counter is the parent's at the fork: a walk of another thread was holding the lock.
  if (g_walks.load(std::memory_order_relaxed) > t_walks) {
    mark_loader_list_locked();
    g_native_depth.store(0, std::memory_order_relaxed);  // (before the trace opens again: unwinding walks it)
  }
  g_walks.store(t_walks, std::memory_order_relaxed);
}

void count_walks_across_forks() {
  real_iterate();
  pthread_atfork(before_fork, nullptr, after_fork_in_child);
}

}  // namespace

}  // namespace vt

// Every walk of the process passes here (the library is preloaded: first in the lookup order;
// -Bsymbolic binds our own calls here too).
extern "C" __attribute__((visibility("default"))) int dl_iterate_phdr(int (*callback)(dl_phdr_info*, size_t, void*),
                                                                      void* data) {
  vt::IterateFn real = vt::real_iterate();
  if (!real) return 0;
  vt::Counted counted;
  return real(callback, data);
}

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void count_walks_across_forks() { vt::count_walks_across_forks(); }
}  // namespace vt::load_steps
