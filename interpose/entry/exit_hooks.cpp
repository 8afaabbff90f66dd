// _exit and _Exit: a program that leaves through them runs no exit handlers, so without these the
// trace would read as killed. They mark the trace closed and how (the status), then end the
// process the way glibc's _exit does (exit_group), without looking up the real function: the
// loader's lock may be held by another thread at that moment.
//
// quick_exit(status) runs the at_quick_exit handlers and then glibc's own _exit, inside libc,
// which no export reaches: the trace read as killed. Ours notes the status and calls glibc's; a
// handler of ours, registered when the library loads (so it runs after the program's, which may
// still free memory), marks the trace closed with it.
#include <link.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "load_steps.h"
#include "loaded_symbol.h"
#include "recorder.h"

namespace {
[[noreturn]] void leave(int status) {
  vt::mark_quick_exit(status);
  for (;;) syscall(SYS_exit_group, status);
}

std::atomic<int> g_quick_exit_status{0};
using QuickExitFn = void (*)(int);
std::atomic<QuickExitFn> g_real_quick_exit{nullptr};

void close_at_quick_exit() {
  // glibc's, found without a call (as loader_walks.cpp finds dl_iterate_phdr).
  g_real_quick_exit.store(reinterpret_cast<QuickExitFn>(vt::definition_after("quick_exit", _DYNAMIC)));
  at_quick_exit([] { vt::mark_quick_exit(g_quick_exit_status.load()); });
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) void _exit(int status) { leave(status); }
__attribute__((visibility("default"))) void _Exit(int status) noexcept { leave(status); }
__attribute__((visibility("default"))) void quick_exit(int status) noexcept {
  g_quick_exit_status.store(status);
  if (QuickExitFn real = g_real_quick_exit.load()) real(status);
  leave(status);  // (no glibc quick_exit found: as it would end, without the handlers)
}
}

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void close_at_quick_exit() { ::close_at_quick_exit(); }
}  // namespace vt::load_steps
