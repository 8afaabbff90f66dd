// What libvramtrace.so does when it is loaded, one step per function, each defined at the end of
// the file that owns its state; load_time.cpp runs them, in the order written there. Nothing else
// in interpose/ runs at load (no other constructor; C++ globals are constant- or zero-initialized,
// or initialize only themselves).
#pragma once

namespace vt::load_steps {

void stand_down_behind_another_copy();    // trace_session.cpp
void open_unwinder();                     // unwinder_library.cpp (unwinder_library.h)
void guard_at_load();                     // unwinder_fds.cpp
void close_at_quick_exit();               // exit_hooks.cpp (the shared library only)
void count_walks_across_forks();          // loader_walks.cpp (the shared library only)
void prepare_live_table();                // live_table.cpp
void order_forks_after_unwinder_setup();  // native_stack.cpp
void find_python_early();                 // stack_capture.cpp
void remember_environment();              // load_environment.cpp
void handle_forks();                      // trace_session.cpp
void arm_fork_marker();                   // trace_session.cpp

}  // namespace vt::load_steps
