// The live tracker's counters (interpose/live/live_counters.h) through their modes: exact while one
// thread allocates, each thread's own counters once a second one does (no shared line written,
// live figures still exact sums, the peak sampled at queries), and exact again for the rest of
// the run after a reset, including a thread that added to its own counters as the mode changed.
#include <catch2/catch.hpp>

#include <thread>

#include "live_counters.h"
#include "live_tracker.h"

using namespace vt;

namespace {
constexpr int64_t MiB = 1 << 20;
constexpr int kDev = live::kDeviceBucket;
int64_t shared_device_bytes() { return live::g_counters.shared.bytes[0][kDev].load(); }
}  // namespace

TEST_CASE("live counters: one thread keeps the shared counters and an exact peak") {
  forget_live_state();
  live::add_bytes(0, kDev, 3 * MiB);
  live::add_bytes(0, kDev, 5 * MiB);
  live::add_bytes(0, kDev, -5 * MiB);  // no query in between: the peak is still seen
  CHECK_FALSE((live::g_counters.owner.load() == live::kPerThread));
  CHECK(shared_device_bytes() == 3 * MiB);
  CHECK(peak_bytes(0) == 8 * MiB);
  CHECK(live_bytes(0, kLiveDevice) == 3 * MiB);
}

TEST_CASE("live counters: a second thread makes every thread count on its own, sums stay exact") {
  forget_live_state();
  live::add_bytes(0, kDev, 2 * MiB);
  std::thread([] { live::add_bytes(0, kDev, 4 * MiB); }).join();
  REQUIRE((live::g_counters.owner.load() == live::kPerThread));
  const int64_t shared_before = shared_device_bytes();
  live::add_bytes(0, kDev, 10 * MiB);
  live::add_bytes(0, kDev, -10 * MiB);
  live::add_bytes(1, int(Bucket::Managed), 1 * MiB);
  CHECK(shared_device_bytes() == shared_before);  // nothing shared was written
  CHECK(live_bytes(0, kLiveDevice) == 6 * MiB);
  CHECK(live_bytes(-1, int(Bucket::Managed)) == 1 * MiB);
  // Sampled: the query raises the peak to what is live now; the 10 MiB between two queries is
  // the high a per-thread peak can miss (live_counters.h says so).
  CHECK(peak_bytes(0) == 6 * MiB);
}

TEST_CASE("live counters: a reset takes every thread's counts in and pins the exact mode") {
  forget_live_state();
  live::add_bytes(0, kDev, 2 * MiB);
  std::thread([] { live::add_bytes(0, kDev, 4 * MiB); }).join();
  REQUIRE((live::g_counters.owner.load() == live::kPerThread));
  reset_peak(-1);
  CHECK_FALSE((live::g_counters.owner.load() == live::kPerThread));
  CHECK(shared_device_bytes() == 6 * MiB);
  CHECK(peak_bytes(0) == 6 * MiB);
  // A thread that was adding to its own counters as the mode changed (its add landed after the
  // reset took them in): its next event moves them over, so the peak counts them.
  std::thread([] {
    live::add_to_own(0, kDev, 1 * MiB);
    live::add_bytes(0, kDev, 1 * MiB);
  }).join();
  CHECK(shared_device_bytes() == 8 * MiB);
  CHECK(peak_bytes(0) == 8 * MiB);
  std::thread([] { live::add_bytes(0, kDev, 1 * MiB); }).join();  // more threads: still shared
  CHECK_FALSE((live::g_counters.owner.load() == live::kPerThread));
  live::add_bytes(0, kDev, 7 * MiB);
  live::add_bytes(0, kDev, -7 * MiB);
  CHECK(peak_bytes(0) == 16 * MiB);  // exact: the high between two queries is seen
  CHECK(live_bytes(0, kLiveDevice) == 9 * MiB);
}

TEST_CASE("live counters: after fork the child starts exact with its one thread") {
  forget_live_state();
  std::thread([] { live::add_bytes(0, kDev, 4 * MiB); }).join();
  live::add_bytes(0, kDev, 1 * MiB);
  REQUIRE((live::g_counters.owner.load() == live::kPerThread));
  forget_live_state();  // what the child does right after fork
  CHECK(live_bytes(0, kLiveDevice) == 0);
  live::add_bytes(0, kDev, 3 * MiB);
  live::add_bytes(0, kDev, -3 * MiB);
  CHECK_FALSE((live::g_counters.owner.load() == live::kPerThread));
  CHECK(peak_bytes(0) == 3 * MiB);
}
