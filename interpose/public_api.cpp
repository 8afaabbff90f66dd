// The exported live query API (include/vramtrace.h): reads live_tracker.h, and writes region
// records into the trace. Regions begun before the trace opens (before the first CUDA memory
// call) are kept and written when it does. Every entry point leaves errno as it found it.
#include <pthread.h>

#include <cerrno>

#include <cstdio>
#include <cstring>

#include "clock.h"
#include "live_tracker.h"
#include "python_frames.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "reentry_guard.h"
#include "trace_format.h"
#include "../include/vramtrace.h"

namespace vt {

namespace {

constexpr int kMaxPending = 32;
struct Pending {
  char name[200];
};
Pending g_pending[kMaxPending];
int g_pending_count = 0;
pthread_mutex_t g_region_mu = PTHREAD_MUTEX_INITIALIZER;

void write_region(uint8_t kind, const char* name, uint64_t t) {
  uint8_t payload[256];
  size_t n = strnlen(name, 200);
  uint8_t* q = format::put_varint(payload, kind);
  q = format::put_varint(q, n);
  memcpy(q, name, n);
  write_meta(format::kTagRegion, payload, size_t(q - payload) + n, t);
}

int region(uint8_t kind, const char* name) {
  if (!name || !tracing_possible()) return -1;
  HookScope scope;
  if (scope.nested_in_our_work()) {  // a signal handler interrupted our own work on this thread
    count_lost_events(1);
    return 0;
  }
  uint64_t t = now_ns();
  pthread_mutex_lock(&g_region_mu);
  if (recording()) {
    write_region(kind, name, t);
  } else if (kind == format::kRegionBegin && g_pending_count < kMaxPending) {
    snprintf(g_pending[g_pending_count++].name, sizeof g_pending[0].name, "%s", name);
  } else if (kind == format::kRegionEnd) {
    for (int i = g_pending_count - 1; i >= 0; --i)
      if (strcmp(g_pending[i].name, name) == 0) {  // begun and ended before any CUDA call
        g_pending[i] = g_pending[--g_pending_count];
        break;
      }
  }
  pthread_mutex_unlock(&g_region_mu);
  return 0;
}

}  // namespace

void flush_pending_regions(uint64_t t) {
  pthread_mutex_lock(&g_region_mu);
  for (int i = 0; i < g_pending_count; ++i) write_region(format::kRegionBegin, g_pending[i].name, t);
  g_pending_count = 0;
  pthread_mutex_unlock(&g_region_mu);
}

}  // namespace vt

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
  return 0;
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
