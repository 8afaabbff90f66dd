// The job's scheduler (analyzer/job/job_parallel.h): every trace's steps run once each, in order,
// whatever the number of workers; a trace whose replay fails goes no further; an exception in a
// step reaches the caller; and while one worker symbolizes, another whose replay ended does not
// symbolize too but replays the next trace (the symbols of a job's binaries are read once).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "job_parallel.h"

using vt::analyzer::for_each_trace_parallel;
using vt::analyzer::TraceSteps;

TEST_CASE("job scheduler: each trace's steps once, in order, on any number of workers") {
  for (unsigned jobs : {1u, 2u, 3u, 8u})
    for (size_t n : {size_t(0), size_t(1), size_t(5), size_t(40)}) {
      INFO("jobs " << jobs << ", " << n << " traces");
      // 0 = not started; then 1 replayed, 2 symbolized, 3 after, 4 rendered; -1 out of order.
      std::vector<std::atomic<int>> state(n);
      for (auto& s : state) s = 0;
      auto step = [&](size_t i, int from) {
        int expected = from;
        if (!state[i].compare_exchange_strong(expected, from + 1)) state[i] = -1;
      };
      TraceSteps steps;
      steps.replay = [&](size_t i) {
        step(i, 0);
        return i % 7 != 3;  // these cannot be read: no further step
      };
      steps.symbolize = [&](size_t i) { step(i, 1); };
      steps.after = [&](size_t i) { step(i, 2); };
      steps.render = [&](size_t i) { step(i, 3); };
      for_each_trace_parallel(n, jobs, steps);
      for (size_t i = 0; i < n; ++i) CHECK(state[i] == (i % 7 == 3 ? 1 : 4));
      // Without render: the other steps all the same.
      for (auto& s : state) s = 0;
      steps.render = nullptr;
      for_each_trace_parallel(n, jobs, steps);
      for (size_t i = 0; i < n; ++i) CHECK(state[i] == (i % 7 == 3 ? 1 : 3));
    }
}

TEST_CASE("job scheduler: an exception in a step reaches the caller") {
  for (unsigned jobs : {1u, 2u, 4u}) {
    TraceSteps steps;
    steps.replay = [](size_t i) {
      if (i == 3) throw std::runtime_error("replay");
      return true;
    };
    steps.symbolize = [](size_t) {};
    steps.after = [](size_t) {};
    CHECK_THROWS_WITH(for_each_trace_parallel(10, jobs, steps), "replay");
    steps.replay = [](size_t) { return true; };
    steps.render = [](size_t i) {
      if (i == 6) throw std::runtime_error("render");
    };
    CHECK_THROWS_WITH(for_each_trace_parallel(10, jobs, steps), "render");
  }
}

TEST_CASE("job scheduler: while one worker symbolizes, the other replays the next traces instead") {
  // The first symbolization holds on until three more traces were replayed (by the other worker,
  // meanwhile), and checks that no other symbolization started; trace 4's replay waits for it to
  // end, so the other worker never holds kMaxPendingTraces pending traces before then.
  static_assert(vt::analyzer::kMaxPendingTraces == 4, "the traces below assume 4");
  std::mutex mu;
  std::condition_variable cv;
  int replayed = 0;
  bool first_done = false, timed_out = false, overlap = false;
  std::atomic<int> symbolized{0};
  auto wait = [&](std::unique_lock<std::mutex>& lock, auto ready) {
    if (!cv.wait_for(lock, std::chrono::seconds(20), ready)) timed_out = true;
  };
  TraceSteps steps;
  steps.replay = [&](size_t i) {
    std::unique_lock<std::mutex> lock(mu);
    if (i >= 4) wait(lock, [&] { return first_done; });
    ++replayed;
    cv.notify_all();
    return true;
  };
  steps.symbolize = [&](size_t) {
    const bool first = symbolized.fetch_add(1) == 0;
    std::unique_lock<std::mutex> lock(mu);
    if (!first) {
      if (!first_done) overlap = true;  // started while the first one runs
      return;
    }
    wait(lock, [&] { return replayed >= 4; });
    first_done = true;
    cv.notify_all();
  };
  steps.after = [](size_t) {};
  for_each_trace_parallel(8, 2, steps);
  CHECK_FALSE(timed_out);
  CHECK_FALSE(overlap);
  CHECK(symbolized == 8);
}
