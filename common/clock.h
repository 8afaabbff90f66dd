// The one clock of a trace: CLOCK_MONOTONIC in nanoseconds (vDSO, ~20 ns). The file header
// records the matching CLOCK_REALTIME so readers can show wall time.
#pragma once

#include <cstdint>
#include <ctime>

namespace vt {
inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
inline uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
}  // namespace vt
