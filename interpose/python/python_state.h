// Internal: the process-wide walker state shared by python_runtime.cpp (which fills it once),
// python_walk.cpp, python_describe.cpp and python_selftest.cpp (which read it), plus the raw
// memory-read helper they all use.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "python_layouts.h"

namespace vt::py::detail {

struct Runtime {
  const Layout* L = nullptr;
  int minor = 0;
  // Addresses of the interpreter's static type objects: the ob_type checks compare against them.
  uintptr_t code_type = 0, frame_type = 0, unicode_type = 0, bytes_type = 0;
  void* (*get_tstate)() = nullptr;   // PyGILState_GetThisThreadState: a TSS read, GIL-free
  void* (*main_interp)() = nullptr;  // PyInterpreterState_Main: returns _PyRuntime's field
  // The main interpreter, cached once non-null (null before Py_Initialize). A thread state whose
  // interp field differs (sub-interpreter, stale TSS value) is not walked.
  mutable std::atomic<uintptr_t> interp{0};
};

// The runtime when the walker is usable, else null. After the first call: one acquire load.
const Runtime* active();
// Permanently disables the walker (self-test mismatch); `why` must be a static string.
void disable(const char* why);

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

}  // namespace vt::py::detail
