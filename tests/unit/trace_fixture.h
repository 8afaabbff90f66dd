// Writes traces for reader tests: a forked child records the given events through the real
// recorder (vt::record) into `path` and exits, so each trace comes from a fresh process.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "event.h"
#include "recorder.h"
#include "../shared/test_dirs.h"

namespace fixture {

inline std::string temp_dir() { return vt::test_dirs::make("/tmp/vt-unit-"); }  // removed at exit

// Runs `body` in a child whose trace goes to `path`; `clean` chooses exit() or _exit().
inline int write_trace(const std::string& path, const std::function<void()>& body, bool clean = true) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("VRAMTRACE_OUTPUT", path.c_str(), 1);
    setenv("VRAMTRACE_KERNELS", "0", 1);  // no CUPTI helper thread (and chunk) in reader tests
    body();
    if (clean) exit(0);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

// A deterministic event of every shape, number i of thread `lane` (0 or 1).
inline vt::Event make_event(int i, int lane) {
  using vt::HookId;
  vt::Event e;
  e.t_ns = 1000000 + uint64_t(i) * 20 + uint64_t(lane) * 7;  // lanes never tie
  e.context = 0x5000 + uint64_t(i / 1000);
  e.device = (i / 500) % 3 - 1;
  switch (i % 5) {
    case 0:
      e.set_op(HookId::cuMemAlloc_v2);
      e.set_addr(0x7f0000000000ull + uint64_t(i) * 4096);
      e.set_size(uint64_t(i) * 512 + 1);
      break;
    case 1:
      e.set_op(HookId::cuMemFree_v2);
      e.set_addr(0x7f0000000000ull + uint64_t(i - 1) * 4096);
      break;
    case 2:
      e.set_op(HookId::cuMemAllocAsync_ptsz);
      e.set_addr(0x7e0000000000ull - uint64_t(i) * 8192);
      e.set_size(1ull << (i % 40));
      e.set_stream(0x100 + uint64_t(i % 3));
      break;
    case 3:
      e.set_op(HookId::cuMemMap);
      e.set_addr(0x200000000ull);
      e.set_size(2 << 20);
      e.set_aux(uint64_t(i) * 3);
      e.set_aux2(uint64_t(i) << 21);
      break;
    default:
      e.set_op(HookId::cuMemAlloc_v2);
      e.result = 2;  // CUDA_ERROR_OUT_OF_MEMORY
      e.set_size(1ull << 40);
      e.free_bytes = 123456789ull + uint64_t(i);
      e.total_bytes = 1ull << 34;
      break;
  }
  return e;
}

}  // namespace fixture
