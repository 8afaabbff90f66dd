// Region records (kTagRegion): vramtrace_region_begin/end (include/vramtrace.h, exported by
// public_api.cpp) mark named spans of the program in the trace. A region begun before the trace
// opens (before the first CUDA memory call) is kept and written when it opens. Takes one mutex
// (g_region_mu) around the write: regions are rare, and the pending list needs it.
#include "region_marks.h"

#include <pthread.h>

#include <cstdio>
#include <cstring>

#include "clock.h"
#include "meta_records.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "reentry_guard.h"

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
  uint8_t buf[256];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::RegionSchema>(p, format::RegionRecord{kind, format::Text(name, strnlen(name, 200))});
  write_meta(format::kTagRegion, p.data(), p.size(), t);
}

}  // namespace

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

void flush_pending_regions(uint64_t t) {
  pthread_mutex_lock(&g_region_mu);
  for (int i = 0; i < g_pending_count; ++i) write_region(format::kRegionBegin, g_pending[i].name, t);
  g_pending_count = 0;
  pthread_mutex_unlock(&g_region_mu);
}

void forget_region_lock() { pthread_mutex_init(&g_region_mu, nullptr); }

}  // namespace vt

