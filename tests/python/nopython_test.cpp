// The walker in a process without Python: init() must say kUnavailable, every entry point must
// return "nothing" at ~zero cost. Exit status 0 on success; prints the per-call cost.
#include <time.h>

#include <cstdio>

#include "python_frames.h"

int main() {
  const char* why = nullptr;
  vt::py::Status s = vt::py::init(&why);
  if (s != vt::py::Status::kUnavailable) {
    std::printf("FAIL: init() = %d (%s), expected kUnavailable\n", static_cast<int>(s), why);
    return 1;
  }
  vt::py::RawFrame raw[32];
  vt::py::CodeInfo info;
  if (vt::py::capture(raw, 32) != 0 || vt::py::thread_has_state() || vt::py::describe_code(0x1000, &info) ||
      vt::py::self_test_with_gil()) {
    std::printf("FAIL: something reported Python frames without Python\n");
    return 1;
  }
  constexpr int kIters = 10000000;
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int sum = 0;
  for (int i = 0; i < kIters; ++i) sum += vt::py::capture(raw, 32);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / kIters;
  std::printf("ok: no Python (%s); capture() costs %.2f ns when unavailable%s\n", why, ns, sum ? " ?!" : "");
  return sum != 0;
}
