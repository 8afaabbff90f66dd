// See job_parallel.h.
#include "job_parallel.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace vt::analyzer {

unsigned online_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return unsigned(n);
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? unsigned(n) : 1;
}

void for_each_parallel(size_t n, unsigned jobs, const std::function<void(size_t)>& work) {
  size_t threads = std::min<size_t>(jobs ? jobs : 1, n);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) work(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex failed_lock;
  std::exception_ptr failed;  // the first exception (bad_alloc...) is rethrown here, as serially
  auto worker = [&] {
    try {
      for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) work(i);
    } catch (...) {
      next.store(n);  // the others stop after their current trace
      std::lock_guard<std::mutex> g(failed_lock);
      if (!failed) failed = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();  // this thread is one of the workers
  for (std::thread& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

void for_each_trace_parallel(size_t n, unsigned jobs, const TraceSteps& steps) {
  size_t threads = std::min<size_t>(jobs ? jobs : 1, n);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i)
      if (steps.replay(i)) {
        steps.symbolize(i);
        steps.after(i);
        if (steps.render) steps.render(i);
      }
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> symbolizing{false};  // a worker's turn to symbolize is taken
  std::atomic<bool> stop{false};         // a worker failed: the others stop at their next step
  std::mutex lock;                       // guards ready and failed
  std::deque<size_t> ready;              // analysed, not yet rendered
  std::exception_ptr failed;
  auto worker = [&] {
    bool turn = false;  // this worker holds the turn
    try {
      std::deque<size_t> pending;  // replayed here, not yet symbolized, in index order
      bool drained = false;        // no trace left to replay
      while (!stop.load(std::memory_order_relaxed)) {
        if (!pending.empty()) {
          bool idle = false;
          turn = symbolizing.compare_exchange_strong(idle, true, std::memory_order_acquire);
          if (turn || drained || pending.size() >= kMaxPendingTraces) {
            size_t i = pending.front();
            pending.pop_front();
            steps.symbolize(i);
            if (turn) symbolizing.store(false, std::memory_order_release);
            turn = false;
            steps.after(i);
            if (steps.render) {
              std::lock_guard<std::mutex> g(lock);
              ready.push_back(i);
            }
            continue;
          }
        }
        if (!drained) {
          size_t i = next.fetch_add(1, std::memory_order_relaxed);
          if (i >= n) drained = true;
          else if (steps.replay(i)) pending.push_back(i);
          continue;
        }
        // Nothing left to replay or symbolize here: render what any worker has analysed. (A
        // worker that adds to `ready` later renders it itself before it stops.)
        size_t i;
        {
          std::lock_guard<std::mutex> g(lock);
          if (ready.empty()) break;
          i = ready.front();
          ready.pop_front();
        }
        steps.render(i);
      }
    } catch (...) {
      if (turn) symbolizing.store(false, std::memory_order_release);
      stop.store(true);
      std::lock_guard<std::mutex> g(lock);
      if (!failed) failed = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace vt::analyzer
