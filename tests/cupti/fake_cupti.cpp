// A stand-in libcupti.so.13 for CPU-only tests: the handful of entry points vramtrace uses (and
// a second client calls), with canned behaviour:
//   - one subscriber at a time (a second gets CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
//     FAKECUPTI_BUSY=<name> makes every subscribe fail that way, naming <name> (Nsight-like);
//   - cuptiActivityFlushAll produces one batch of synthetic records of the enabled kinds (two
//     kernels, a memcpy, a memset, a MEMORY2 allocation, a pool, an NVTX range), stamped with
//     CLOCK_REALTIME like the real CUPTI, and hands them to the registered callbacks; a forced
//     flush adds one kernel without timestamps (an unfinished record);
//   - FAKECUPTI_IN_FLIGHT=N: the first N forced flushes after the callbacks are registered also
//     hand over one kernel without timestamps, kinds enabled or not (kernels still running);
//   - FAKECUPTI_LATE_BUFFER=1: the first forced flush also takes a buffer from the callbacks
//     registered then and keeps it; it is completed (one kernel in it) by the first flush after
//     the callbacks are registered again, to the callbacks of then (a buffer CUPTI's worker
//     returns late, to whoever is registered when it does);
//   - cuptiFinalize logs the name of the thread calling it ("finalize on NAME");
//   - every call is logged: fakecupti_log() in-process, and appended to $FAKECUPTI_LOG.
// Built with -Bsymbolic like the real one (its own calls never reach vramtrace's wrappers).
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "synthetic_buffer.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::recursive_mutex g_mu;
std::string g_log;
bool g_subscribed = false;
CUpti_BuffersCallbackRequestFunc g_req = nullptr;
CUpti_BuffersCallbackCompleteFunc g_done = nullptr;
uint64_t g_enabled = 0;  // bit per kind < 64
uint32_t g_batch = 0;
int g_in_flight = -1;           // FAKECUPTI_IN_FLIGHT left; -1: not read yet
uint8_t* g_late = nullptr;      // FAKECUPTI_LATE_BUFFER's buffer
size_t g_late_size = 0;
bool g_late_taken = false, g_late_armed = false;

void log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log(const char* fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  std::lock_guard<std::recursive_mutex> l(g_mu);
  g_log += line;
  g_log += '\n';
  if (const char* path = getenv("FAKECUPTI_LOG")) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      std::string s = std::string(line) + "\n";
      (void)!write(fd, s.data(), s.size());
      close(fd);
    }
  }
}

uint64_t realtime() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

bool on(CUpti_ActivityKind k) { return k < 64 && (g_enabled >> k) & 1; }

void produce(bool forced) {
  if (!g_req || !g_done || !g_enabled) return;
  uint8_t* buf = nullptr;
  size_t size = 0, max = 0;
  g_req(&buf, &size, &max);
  if (!buf) {
    log("no buffer");
    return;
  }
  synth::Builder b{buf, size};
  uint64_t now = realtime();
  uint32_t n = ++g_batch;
  if (on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) {
    b.kernel("_Z9fake_gemmPfS_S_i", now - 60000, now - 40000, 7, 100 + n);
    b.kernel("_Z9fake_reluPfi", now - 39000, now - 38000, 7, 200 + n);
    if (forced) b.kernel("_Z10unfinishedv", 0, 0, 7, 300 + n);
  }
  if (on(CUPTI_ACTIVITY_KIND_MEMCPY)) b.memcpy_rec(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, now - 70000, now - 65000, 7);
  if (on(CUPTI_ACTIVITY_KIND_MEMSET)) b.memset_rec(0, 4096, now - 64000, now - 63000, 7);
  if (on(CUPTI_ACTIVITY_KIND_MEMORY2)) b.memory(true, 0x7f00dead0000ull + uint64_t(n) * 0x100000, 1 << 20, now - 80000);
  if (on(CUPTI_ACTIVITY_KIND_MEMORY_POOL) && n == 1) b.pool(0x5000, 2 << 20, now - 90000);
  if (on(CUPTI_ACTIVITY_KIND_MARKER)) {
    b.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, n, now - 100000, 42, "step");
    b.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, n, now - 30000, 42, nullptr);
  }
  g_done(nullptr, 0, buf, size, b.len);
}

}  // namespace

FAKE_EXPORT const char* fakecupti_log() {
  static std::string copy;
  std::lock_guard<std::recursive_mutex> l(g_mu);
  copy = g_log;
  return copy.c_str();
}
FAKE_EXPORT int fakecupti_subscribed() {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  return g_subscribed;
}

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t* v) {
  *v = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char** s) {
  switch (r) {
    case CUPTI_SUCCESS: *s = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    default: *s = "CUPTI_ERROR_UNKNOWN"; break;
  }
  return CUPTI_SUCCESS;
}

static CUptiResult do_subscribe(CUpti_SubscriberHandle* s, char* old_name, size_t old_size) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  const char* busy = getenv("FAKECUPTI_BUSY");
  if (busy || g_subscribed) {
    if (old_name && old_size) snprintf(old_name, old_size, "%s", busy ? busy : "earlier subscriber");
    log("subscribe refused");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  g_subscribed = true;
  *s = reinterpret_cast<CUpti_SubscriberHandle>(uintptr_t(0x1000));
  log("subscribe ok");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* s, CUpti_CallbackFunc, void*) {
  return do_subscribe(s, nullptr, 0);
}

FAKE_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* s, CUpti_CallbackFunc, void*, CUpti_SubscriberParams* p) {
  if (p && p->subscriberName) log("subscriber name %s", p->subscriberName);
  return do_subscribe(s, p ? p->oldSubscriberName : nullptr, p ? p->oldSubscriberSize : 0);
}

FAKE_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  g_subscribed = false;
  log("unsubscribe");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiFinalize() {
  char name[32] = {};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  log("finalize on %s", name);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* t) {
  *t = realtime();
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r, CUpti_BuffersCallbackCompleteFunc c) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  g_req = r;
  g_done = c;
  if (g_late_taken) g_late_armed = true;
  log("register callbacks");
  return CUPTI_SUCCESS;
}

// Attributes: logged as "set attribute A V" (V read as the size given); the device buffer size
// reads 3 MiB, as CUPTI's default is about that. FAKECUPTI_NO_ATTRIBUTES=1 refuses them all.
FAKE_EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute a, size_t* size, void* value) {
  if (getenv("FAKECUPTI_NO_ATTRIBUTES")) return CUPTI_ERROR_NOT_SUPPORTED;
  unsigned long long v = 0;
  if (size && value && *size <= sizeof v) memcpy(&v, value, *size);
  log("set attribute %d %llu", int(a), v);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetAttribute(CUpti_ActivityAttribute a, size_t* size, void* value) {
  if (getenv("FAKECUPTI_NO_ATTRIBUTES")) return CUPTI_ERROR_NOT_SUPPORTED;
  if (a != CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE || !size || *size < sizeof(size_t)) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t v = size_t(3) << 20;
  memcpy(value, &v, sizeof v);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc) {
  log("register timestamp callback");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  g_enabled |= 1ull << (k & 63);
  log("enable %d", int(k));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnableContext(CUcontext, CUpti_ActivityKind k) { return cuptiActivityEnable(k); }

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  g_enabled &= ~(1ull << (k & 63));
  log("disable %d", int(k));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  // Periodic flushes are not logged one by one (there are ten a second); forced ones are.
  if (flag) log("flush forced");
  if (g_late_armed && g_late && g_done) {
    synth::Builder b{g_late, g_late_size};
    uint64_t now = realtime();
    b.kernel("_Z4latev", now - 5000, now - 4000, 7, 999);
    uint8_t* late = g_late;
    g_late = nullptr;
    g_late_armed = false;
    log("late buffer completed");
    g_done(nullptr, 0, late, g_late_size, b.len);
  }
  if (flag && !g_late_taken && getenv("FAKECUPTI_LATE_BUFFER") && g_req) {
    size_t max = 0;
    g_req(&g_late, &g_late_size, &max);
    g_late_taken = g_late != nullptr;
  }
  if (g_in_flight < 0) g_in_flight = getenv("FAKECUPTI_IN_FLIGHT") ? atoi(getenv("FAKECUPTI_IN_FLIGHT")) : 0;
  if (flag && g_in_flight > 0 && g_req && g_done) {
    --g_in_flight;
    uint8_t* buf = nullptr;
    size_t size = 0, max = 0;
    g_req(&buf, &size, &max);
    if (buf) {
      synth::Builder b{buf, size};
      b.kernel("_Z7runningv", 0, 0, 7, 777);
      g_done(nullptr, 0, buf, size, b.len);
    }
  }
  produce(flag != 0);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** rec) {
  return synth::next_record(buffer, valid, rec);
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT int InitializeInjectionNvtx2(const void* (*)(uint32_t)) {
  log("nvtx injection");
  return 1;
}

FAKE_EXPORT int InitializeInjectionNvtxExtension(void*) {
  log("nvtx extension");
  return 1;
}
