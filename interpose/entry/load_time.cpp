// The one load-time entry point of libvramtrace.so: every step it takes when the loader runs its
// constructors, in order (load_steps.h says where each lives). Priority 102 runs it right after
// common/'s log setup (101) and before anything a C++ global's initializer or another library's
// constructor could call into: the hooks may run from then on.
//
// The order, and why:
//  1. stand down behind another copy of ours loaded first (it traces; this copy must not even
//     patch libunwind's descriptors);
//  2. open libunwind (RTLD_LOCAL), then 3. guard its descriptors before anything unwinds;
//  4. our quick_exit handler, 5. the loader-walk counter's fork handlers (the shared library's
//     own exports: weak here, so that the unit tests, which link the recorder alone, run without);
//  6. the live table's per-thread announce key and how threads announce (membarrier);
//  7. the fork order around libunwind's one-time setup (its prepare handler takes the setup lock);
//  8. find the Python interpreter: dlsym lookups take the loader lock, so before any hook can run
//     under an allocator's lock;
//  9. copy the VRAMTRACE_ environment and the working directory (a program may change both);
// 10. the fork handler that resets our state in a child, registered before any of our locks can
//     be taken; 11. the page that tells a child of a raw fork or clone (no atfork handlers).
#include "load_steps.h"

namespace vt::load_steps {
__attribute__((weak)) void close_at_quick_exit();
__attribute__((weak)) void count_walks_across_forks();
}  // namespace vt::load_steps

namespace {

using Step = void (*)();

__attribute__((constructor(102))) void at_load() {
  namespace s = vt::load_steps;
  const Step steps[] = {
      s::stand_down_behind_another_copy,
      s::open_unwinder,
      s::guard_at_load,
      s::close_at_quick_exit,
      s::count_walks_across_forks,
      s::prepare_live_table,
      s::order_forks_after_unwinder_setup,
      s::find_python_early,
      s::remember_environment,
      s::handle_forks,
      s::arm_fork_marker,
  };
  for (Step step : steps)
    if (step) step();  // (a weak step is null where its file is not linked)
}

}  // namespace
