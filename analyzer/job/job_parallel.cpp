// See job_parallel.h.
#include "job_parallel.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

}  // namespace vt::analyzer
