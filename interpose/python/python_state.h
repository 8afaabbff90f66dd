// Internal: the process-wide walker state shared by python_runtime.cpp (which fills it once),
// python_walk.cpp, python_describe.cpp and python_selftest.cpp (which read it), plus the raw
// memory-read helpers they all use.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "python_frames.h"
#include "python_layouts.h"

namespace vt::py::detail {

struct Runtime;
// One walker per table row, every offset an immediate (python_walk.cpp).
using WalkFn = int (*)(const Runtime* rt, uintptr_t ts, RawFrame* out, int max);
using KeyWalkFn = int (*)(const Runtime* rt, uintptr_t ts, uint64_t* out, int max, KeyMemo* memo);
WalkFn walker_for(const Layout* L);
KeyWalkFn key_walker_for(const Layout* L);

struct Runtime {
  const Layout* L = nullptr;
  WalkFn walk = nullptr;
  KeyWalkFn walk_keys = nullptr;
  int minor = 0;        // the interpreter's own minor; > L->minor when a newer one is read with
                        // the newest row (its debug offsets agree with that row)
  bool newer = false;   // that case: frames wait for the self-check (python_selftest.cpp)
  // Addresses of the interpreter's static type objects: the ob_type checks compare against them.
  uintptr_t code_type = 0, frame_type = 0, unicode_type = 0, bytes_type = 0;
  void* (*get_tstate)() = nullptr;   // PyGILState_GetThisThreadState: a thread-local read, GIL-free
  void* (*main_interp)() = nullptr;  // PyInterpreterState_Main: returns _PyRuntime's field
  int (*add_pending)(int (*)(void*), void*) = nullptr;  // Py_AddPendingCall (the self-check)
  // The main interpreter, cached once non-null (null before Py_Initialize). A thread state whose
  // interp field differs (sub-interpreter, stale TSS value) is not walked.
  mutable std::atomic<uintptr_t> interp{0};
};

// The runtime when the walker is usable, else null. After the first call: one acquire load.
const Runtime* active();
// The runtime init() accepted, even while a newer minor still waits for its self-check (null if
// init() refused the interpreter or has not finished).
const Runtime* accepted();
// Permanently disables the walker (self-test mismatch); `why` must be a static string.
void disable(const char* why);
// A newer minor passed its self-check: frames from now on.
void enable_after_check();
// The status listener (set_status_listener), or null.
void report_status(bool on, const char* why);
// A newer minor waits for its self-check: capture() asks for it to be scheduled.
extern std::atomic<bool> g_check_wanted;
// Queues the one-time self-check on the main thread (python_selftest.cpp); cheap once done.
void schedule_self_check();

// Unchecked read of a T at address p. Callers validate alignment/non-null before following it.
template <class T>
inline T ld(uintptr_t p) {
  T v;
  std::memcpy(&v, reinterpret_cast<const void*>(p), sizeof v);
  return v;
}

inline bool ptr_ok(uintptr_t p) { return p >= 4096 && (p & 7) == 0; }

// The calling thread's PyThreadState if it belongs to the main interpreter, else 0.
inline uintptr_t this_thread_state(const Runtime* rt) {
  uintptr_t ts = reinterpret_cast<uintptr_t>(rt->get_tstate());
  if (!ptr_ok(ts)) return 0;
  uintptr_t interp = rt->interp.load(std::memory_order_relaxed);
  if (interp == 0) {
    interp = reinterpret_cast<uintptr_t>(rt->main_interp());
    if (interp == 0) return 0;
    rt->interp.store(interp, std::memory_order_relaxed);
  }
  return ld<uintptr_t>(ts + rt->L->ts_interp) == interp ? ts : 0;
}

// capture() for a given runtime (the self-check walks before the walker is published).
inline int capture_with(const Runtime* rt, RawFrame* out, int max) {
  if (max <= 0 || !rt) return 0;
  uintptr_t ts = this_thread_state(rt);
  return ts ? rt->walk(rt, ts, out, max) : 0;
}

}  // namespace vt::py::detail
