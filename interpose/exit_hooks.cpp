// _exit and _Exit: a program that leaves through them runs no exit handlers, so without these the
// trace would read as killed. They mark the trace closed and how (the status), then end the
// process the way glibc's _exit does (exit_group), without looking up the real function: the
// loader's lock may be held by another thread at that moment.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

#include "recorder.h"

namespace {
[[noreturn]] void leave(int status) {
  vt::mark_quick_exit(status);
  for (;;) syscall(SYS_exit_group, status);
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) void _exit(int status) { leave(status); }
__attribute__((visibility("default"))) void _Exit(int status) noexcept { leave(status); }
}
