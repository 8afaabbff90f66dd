// The exported live query API (include/vramtrace.h): reads live_tracker.h and marks regions
// (region_marks.h). Every entry point leaves errno as it found it. Only libvramtrace.so has these
// exports; the recorder's own objects (and the unit tests linking them) do not.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "live_tracker.h"
#include "python_frames.h"
#include "recorder.h"
#include "region_marks.h"
#include "torch_hooks.h"
#include "trace_format.h"
#include "vramtrace.h"

#define VT_API extern "C" __attribute__((visibility("default")))

VT_API int vramtrace_api_version(void) { return VRAMTRACE_API_VERSION; }
VT_API int vramtrace_active(void) { return vt::tracing_possible() ? 1 : 0; }
VT_API int64_t vramtrace_live_bytes(int device) {
  return vt::tracing_possible() ? vt::live_bytes(device, vt::kLiveDevice) : -1;
}
VT_API int64_t vramtrace_live_bytes_kind(int device, int kind) {
  return vt::tracing_possible() ? vt::live_bytes(device, kind) : -1;
}
VT_API int64_t vramtrace_peak_bytes(int device) { return vt::tracing_possible() ? vt::peak_bytes(device) : -1; }
VT_API int vramtrace_reset_peak(int device) {
  if (!vt::tracing_possible()) return -1;
  vt::reset_peak(device);
  vt::reset_tensor_peak(device);
  return 0;
}
VT_API int64_t vramtrace_tensor_bytes(int device) { return vt::tracing_possible() ? vt::tensor_bytes(device) : -1; }
VT_API int64_t vramtrace_tensor_peak_bytes(int device) {
  return vt::tracing_possible() ? vt::tensor_peak_bytes(device) : -1;
}
// Opt-in check of the Python frame walker against CPython's own frame API: call it from Python
// with the GIL held (ctypes.PyDLL(None).vramtrace_python_self_test()). 1: the walk matched; 0: it
// did not (the walker is then off for the process) or it could not run here.
VT_API int vramtrace_python_self_test(void) {
  int saved = errno;
  int ok = vt::py::self_test_with_gil() ? 1 : 0;
  errno = saved;
  return ok;
}
VT_API int vramtrace_region_begin(const char* name) {
  int saved = errno;
  int r = vt::region(vt::format::kRegionBegin, name);
  errno = saved;
  return r;
}
VT_API int vramtrace_region_end(const char* name) {
  int saved = errno;
  int r = vt::region(vt::format::kRegionEnd, name);
  errno = saved;
  return r;
}
// The trace this process writes (the pytest plugin reads it back for a failing test's call
// sites): its length, the path copied into out[cap] (cut to fit, NUL-terminated); -1 when no
// trace is open yet (before the first CUDA memory call) or tracing is off.
VT_API int vramtrace_trace_path(char* out, size_t cap) {
  int saved = errno;
  const char* p = vt::trace_path();
  int n = -1;
  if (p) {
    n = int(strlen(p));
    if (out && cap) snprintf(out, cap, "%s", p);
  }
  errno = saved;
  return n;
}
