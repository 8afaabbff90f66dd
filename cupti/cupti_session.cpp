// The kernel recorder's life in one process (states in session.h): the helper thread that
// loads libcupti, subscribes, enables the activity kinds and then flushes every 100 ms; the
// buffer callbacks CUPTI calls; stepping aside for another CUPTI client (finalising our copy on
// the helper thread when the client uses another one, and keeping our late buffers from the
// client's callbacks) and taking CUPTI back when it lets go; the forced flush at exit. Memory
// tracing never depends on any of it.
//
// Threads: CUPTI calls buffer_requested / buffer_completed on its own threads and on
// application threads; they only move buffers between pool states (lock-free, no allocation,
// no trace writing; the trampolines given to another client also count the records of a buffer
// of ours with cuptiActivityGetNextRecord, or call the client's own callback). All decoding and
// trace writing happens with g_ctl held: on the helper thread (or the one that takes CUPTI back
// after a client let go), or on the thread that makes us step aside or exit. g_ctl is never taken
// on a driver hook path; the one place that waits for it on a foreign thread (another client's
// cuptiSubscribe) waits at most 5 s and then lets the client proceed regardless, and the wait for
// our thread's cuptiFinalize (a client of another libcupti copy) at most 3 s more.
#include "cupti_session.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include "activity_encoder.h"
#include "activity_format.h"
#include "buffer_pool.h"
#include "clock.h"
#include "clock_align.h"
#include "activity_recorder.h"
#include "flush_loop.h"
#include "loader.h"
#include "log.h"
#include "name_table.h"
#include "other_tools.h"
#include "own_work.h"
#include "recorder_port.h"
#include "status_record.h"
#include "wrapped_list.h"

extern char** environ;

namespace vt::cupti {

namespace fmt = format;

namespace {

enum State : int { kIdle = 0, kLoading, kActive, kAside, kOff, kStopped };

// 16 x 1 MiB: ~4000 kernel records each, so even a launch-bound program (~100k kernels/s)
// fills ~3 of them per 100 ms flush. CUDA 13 would lend one per launching thread (autograd per
// device, pin-memory and NCCL threads exhaust 16): configure_buffers_locked turns per-thread
// buffers off, so the pool is shared by the process.
constexpr size_t kBufferSize = size_t(1) << 20;
constexpr int kBufferCount = 16;
// CUPTI's own device buffers (timestamps of kernels, copies and sets) cost device memory, ~3 MB
// each and up to 250 per context by default: they could cause the very OOM being diagnosed. At
// most 8 per context; when they fill faster than CUPTI drains them, it drops records (counted).
constexpr size_t kDeviceBuffersPerContext = 8;
constexpr uint64_t kFlushIntervalNs = 100'000'000;

std::atomic<int> g_state{kIdle};
std::atomic<long> g_started_pid{0};
std::atomic<bool> g_foreign{false};
std::atomic<bool> g_exiting{false};
std::atomic<bool> g_loader_done{true};
pthread_mutex_t g_ctl = PTHREAD_MUTEX_INITIALIZER;

LoadedCupti g_lib;
CuptiApi g_api_cupti;
bool g_api_ok = false;
CUpti_SubscriberHandle g_subscriber = nullptr;
CUpti_ActivityKind g_kinds[8];
int g_n_kinds = 0;
ClockAlign g_clock;
NameTable g_names;
BufferPool g_pool;
Waker g_waker;
alignas(Encoder) unsigned char g_encoder_mem[sizeof(Encoder)];
Encoder* g_encoder = nullptr;
uint64_t g_incomplete_reported = 0;

// Handing CUPTI over and back (step_aside_locked, resume_main).
std::atomic<CUpti_BuffersCallbackRequestFunc> g_their_request{nullptr};
std::atomic<CUpti_BuffersCallbackCompleteFunc> g_their_complete{nullptr};
std::atomic<uint64_t> g_handover_dropped{0};  // records in our buffers completed after the handover
std::atomic<int64_t> g_aside_ns{0};
// cuptiFinalize for a client of another libcupti copy, done by the helper thread:
enum Finalize : int { kNoFinalize = 0, kFinalizeAsked, kFinalizeAnswered, kFinalizeAbandoned };
std::atomic<int> g_finalize{kNoFinalize};
constexpr int kFinalizeTries = 100;          // forced flushes, 10 ms apart, for kernels to finish
constexpr int kFinalizeWaitMs = 3000;        // how long the client's call waits for the answer
bool g_exit_handler = false;
// MEMORY2 (a CUPTI record, so a callback inside CUPTI, for every allocation including each
// stream-ordered one): VRAMTRACE_CUPTI_MEMORY=0 leaves it off (docs/PERFORMANCE.md).
bool g_memory_activity = true;

bool lock_for(pthread_mutex_t* mu, int ms) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t ns = uint64_t(ts.tv_nsec) + uint64_t(ms) * 1000000ull;
  ts.tv_sec += time_t(ns / 1000000000ull);
  ts.tv_nsec = long(ns % 1000000000ull);
  return pthread_mutex_timedlock(mu, &ts) == 0;
}

// ---- CUPTI's callbacks: buffers only ----

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = g_pool.lend();
  *size = *buffer ? g_pool.buffer_size() : 0;
  if (!*buffer) g_waker.wake();
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  if (!g_pool.complete(buffer, valid)) {
    // One of the other client's, lent before it let go and completed after we took CUPTI back.
    if (CUpti_BuffersCallbackCompleteFunc theirs = g_their_complete.load(std::memory_order_acquire))
      theirs(ctx, stream, buffer, size, valid);
    return;
  }
  if (g_pool.in_state(BufferPool::kDone) * 2 >= g_pool.count()) g_waker.wake();  // drain early
}

// The trampolines the other client's registration gets instead of its own callbacks.
void CUPTIAPI their_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  if (CUpti_BuffersCallbackRequestFunc theirs = g_their_request.load(std::memory_order_acquire)) {
    theirs(buffer, size, max_records);
    return;
  }
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
}

void CUPTIAPI their_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  if (g_pool.owns(buffer)) {  // ours, lent before the handover: counted, never shown to them
    uint64_t n = 0;
    CUpti_Activity* rec = nullptr;
    if (g_api_ok)
      while (g_api_cupti.get_next_record(buffer, valid, &rec) == CUPTI_SUCCESS) ++n;
    g_pool.reclaim(buffer);
    g_handover_dropped.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  if (CUpti_BuffersCallbackCompleteFunc theirs = g_their_complete.load(std::memory_order_acquire))
    theirs(ctx, stream, buffer, size, valid);
}

void CUPTIAPI subscriber_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// ---- decoding (g_ctl held) ----

void sink_write(void*, uint8_t tag, const uint8_t* p, size_t n) { port::write_record(tag, p, n, now_ns()); }

void drain_one(void*, uint8_t* buffer, size_t valid) {
  g_encoder->decode_buffer(buffer, valid, g_api_cupti.get_next_record);
}

void report_lost_locked() {
  size_t dropped = 0;
  if (g_api_cupti.get_dropped && g_api_cupti.get_dropped(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped)
    write_status(fmt::kCuptiDropped, fmt::kCuptiLostDropped, int64_t(dropped), "cuptiActivityGetNumDroppedRecords");
  if (uint64_t late = g_handover_dropped.exchange(0))
    write_status(fmt::kCuptiDropped, fmt::kCuptiLostHandover, int64_t(late), "completed after the handover");
  if (uint64_t refused = g_pool.take_refused())
    write_status(fmt::kCuptiDropped, fmt::kCuptiLostNoBuffer, int64_t(refused), "activity buffer pool exhausted");
  if (g_encoder && g_encoder->stats.incomplete > g_incomplete_reported) {
    write_status(fmt::kCuptiDropped, fmt::kCuptiLostIncomplete,
                 int64_t(g_encoder->stats.incomplete - g_incomplete_reported), "records without timestamps");
    g_incomplete_reported = g_encoder->stats.incomplete;
  }
}

void drain_locked() {
  if (!g_encoder) return;
  g_pool.drain(drain_one, nullptr);
  report_lost_locked();
}

bool cupti_now(uint64_t* out) { return g_api_cupti.get_timestamp(out) == CUPTI_SUCCESS; }

void resample_clock_locked(int tries) {
  ClockSample s = sample_offset(now_ns, cupti_now, tries);
  if (g_clock.update(s)) write_status(fmt::kCuptiClock, g_clock.window(), g_clock.offset(), "cuptiGetTimestamp");
}

// ---- start-up (helper thread, g_ctl held) ----

// Why kernels are not recorded goes into the trace always (`vramtrace report` says it); on stderr
// only under `vramtrace run` (once per run: every rank of a job has the same reason) or when
// kernels were asked for (VRAMTRACE_KERNELS=1). Under a plain LD_PRELOAD every child process of a
// test suite said it, and tests comparing stderr failed.
bool say_why_on_stderr() {
  const char* session = getenv("VRAMTRACE_SESSION");
  const char* kernels = getenv("VRAMTRACE_KERNELS");
  return (session && *session) || (kernels && strcmp(kernels, "1") == 0);
}

void unavailable(uint8_t why, int64_t result, const char* text, const char* line) {
  g_state.store(kOff, std::memory_order_release);
  write_status(fmt::kCuptiUnavailable, why, result, text);
  if (line && say_why_on_stderr()) log_line_once_per_run("%s", line);
}

void at_exit_wait_for_helper();

bool ensure_library_locked() {
  if (g_api_ok) return true;
  if (!g_lib.handle) {
    if (!load_cupti(&g_lib)) return false;
    // Loading libcupti registered its static destructors, which exit runs before every handler
    // registered earlier (start()'s wait too): the wait for this start-up to end is registered
    // again after them, so an exit meanwhile does not tear those down under it.
    atexit(at_exit_wait_for_helper);
  }
  const char* missing = nullptr;
  if (!resolve_api(g_lib.handle, &g_api_cupti, &missing)) {
    char line[1400];
    snprintf(line, sizeof line, "%s lacks %s; recording memory only", g_lib.path, missing);
    unavailable(fmt::kCuptiWhyMissingSymbol, 0, missing, line);
    return false;
  }
  g_api_ok = true;
  return true;
}

bool subscribe_locked() {
  char old_name[128] = {};
  CUptiResult r;
  if (g_api_cupti.subscribe_v2) {
    CUpti_SubscriberParams p = {};
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "vramtrace";
    p.oldSubscriberName = old_name;
    p.oldSubscriberSize = sizeof old_name;
    r = g_api_cupti.subscribe_v2(&g_subscriber, subscriber_callback, nullptr, &p);
  } else {
    r = g_api_cupti.subscribe(&g_subscriber, subscriber_callback, nullptr);
  }
  if (r == CUPTI_SUCCESS) return true;
  char buf[64], line[512];
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    snprintf(line, sizeof line, "CUPTI is in use by %s; kernel activity off, recording memory only",
             old_name[0] ? old_name : "another tool");
    unavailable(fmt::kCuptiWhyOtherClient, r, old_name, line);
  } else {
    char text[256];
    snprintf(text, sizeof text, "cuptiSubscribe: %s", result_text(g_api_cupti, r, buf, sizeof buf));
    snprintf(line, sizeof line, "CUPTI unavailable (%s); recording memory only", text);
    unavailable(fmt::kCuptiWhyError, r, text, line);
  }
  return false;
}

void disable_locked() {
  for (int i = 0; i < g_n_kinds; ++i) g_api_cupti.disable(g_kinds[i]);
  g_n_kinds = 0;
}

void undo_locked() {
  disable_locked();
  if (g_subscriber) g_api_cupti.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
}

bool buffers_ready() {
  static uint8_t* base = nullptr;
  if (!base) {
    void* p = mmap(nullptr, kBufferSize * kBufferCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) return false;
    base = static_cast<uint8_t*>(p);
    g_pool.init(base, kBufferSize, kBufferCount);
  }
  return true;
}

void at_exit_flush();

// Before the buffer callbacks are registered (CUPTI reads these then): one activity buffer pool
// for the process, CUPTI's device buffers capped; the status record says what held.
void configure_buffers_locked() {
  bool shared = false;
  size_t device_buffers = 0, device_buffer_bytes = 0;
  if (g_api_cupti.set_attribute) {
    uint8_t per_thread = 0;
    size_t n = sizeof per_thread;
    shared = g_api_cupti.set_attribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &n, &per_thread) == CUPTI_SUCCESS;
    size_t limit = kDeviceBuffersPerContext;
    n = sizeof limit;
    if (g_api_cupti.set_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &n, &limit) == CUPTI_SUCCESS)
      device_buffers = limit;
  }
  if (g_api_cupti.get_attribute) {
    size_t bytes = 0, n = sizeof bytes;
    if (g_api_cupti.get_attribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &n, &bytes) == CUPTI_SUCCESS)
      device_buffer_bytes = bytes;
  }
  write_status(fmt::kCuptiBuffers, device_buffers, int64_t(device_buffer_bytes), shared ? "per process" : "per thread");
}

// The activity kinds vramtrace records; returns their kCuptiKind* bits (0: CUPTI refused all).
uint32_t enable_kinds_locked() {
  static const struct {
    CUpti_ActivityKind kind;
    uint32_t bit;
  } kWanted[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, fmt::kCuptiKindKernel}, {CUPTI_ACTIVITY_KIND_MEMCPY, fmt::kCuptiKindMemcpy},
      {CUPTI_ACTIVITY_KIND_MEMSET, fmt::kCuptiKindMemset},           {CUPTI_ACTIVITY_KIND_MEMORY2, fmt::kCuptiKindMemory},
      {CUPTI_ACTIVITY_KIND_MEMORY_POOL, fmt::kCuptiKindMemoryPool},  {CUPTI_ACTIVITY_KIND_MARKER, fmt::kCuptiKindNvtx},
  };
  uint32_t mask = 0;
  g_n_kinds = 0;
  for (const auto& w : kWanted)
    if ((w.kind != CUPTI_ACTIVITY_KIND_MEMORY2 || g_memory_activity) && g_api_cupti.enable(w.kind) == CUPTI_SUCCESS) {
      g_kinds[g_n_kinds++] = w.kind;
      mask |= w.bit;
    }
  return mask;
}

bool init_locked() {
  char var[64];
  if (other_tool_in_env(environ, var, sizeof var)) {
    char line[256];
    snprintf(line, sizeof line, "another CUDA tool is attached (%s is set); kernel activity off, recording memory only", var);
    unavailable(fmt::kCuptiWhyOtherTool, 0, var, line);
    return false;
  }
  if (g_foreign.load()) {
    unavailable(fmt::kCuptiWhyOtherClient, 0, "another CUPTI client started first",
                "another CUPTI client is active; kernel activity off, recording memory only");
    return false;
  }
  if (!ensure_library_locked()) {
    if (g_state.load() != kOff && g_lib.simulated_driver)
      unavailable(fmt::kCuptiWhyNotFound, 0, "simulated driver",
                  "CUPTI not loaded: the driver is vramtrace's simulated one; recording memory only");
    else if (g_state.load() != kOff)
      unavailable(fmt::kCuptiWhyNotFound, 0, g_lib.path, "CUPTI not found; recording memory only");
    return false;
  }
  if (g_exiting.load()) return false;
  if (!subscribe_locked()) return false;

  resample_clock_locked(7);
  if (!g_clock.known() || !buffers_ready()) {
    undo_locked();
    unavailable(fmt::kCuptiWhyError, 0, g_clock.known() ? "activity buffers: mmap failed" : "cuptiGetTimestamp failed",
                "CUPTI unavailable (no timestamps or buffers); recording memory only");
    return false;
  }
  if (!g_encoder)  // placement: nothing here may need libstdc++ (libvramtrace links only libc)
    g_encoder = new (g_encoder_mem) Encoder(port::trace_start_ns(), &g_clock, &g_names,
                                            RecordSink{sink_write, nullptr});
  configure_buffers_locked();
  CUptiResult r = g_api_cupti.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    char buf[64], text[256];
    snprintf(text, sizeof text, "cuptiActivityRegisterCallbacks: %s", result_text(g_api_cupti, r, buf, sizeof buf));
    undo_locked();
    unavailable(fmt::kCuptiWhyError, r, text, "CUPTI unavailable (cuptiActivityRegisterCallbacks failed); recording memory only");
    return false;
  }

  uint32_t mask = enable_kinds_locked();
  if (!mask) {
    undo_locked();
    unavailable(fmt::kCuptiWhyNoKinds, 0, "cuptiActivityEnable refused every kind",
                "CUPTI enabled no activity kind; recording memory only");
    return false;
  }
  if (g_exiting.load() || g_foreign.load()) {  // arrived while we were starting: back out
    undo_locked();
    g_state.store(g_exiting.load() ? kStopped : kAside);
    if (!g_exiting.load()) write_status(fmt::kCuptiSteppedAside, 0, int64_t(now_ns()), "another client during start-up");
    return false;
  }
  uint32_t version = 0;
  g_api_cupti.get_version(&version);
  g_state.store(kActive, std::memory_order_release);
  write_status(fmt::kCuptiStarted, version, mask, g_lib.path);
  // Registered now, after CUPTI's own initialisation: exit handlers run last-registered first,
  // so ours runs before CUPTI's and before cudart's context teardown.
  if (!g_exit_handler) atexit(at_exit_flush);
  g_exit_handler = true;
  return true;
}

// ---- the helper thread ----

uint64_t hook_now(void*) { return now_ns(); }
bool hook_wait(void*, uint64_t deadline) { return g_waker.wait_until(deadline, now_ns()); }
// Each flush loop has a generation (run_flush_loop): a loop that had not yet noticed a step
// aside when CUPTI was taken back (a new loop started) ends instead of running beside it.
std::atomic<int> g_generation{0};
bool hook_tick(void* ctx, bool periodic) {
  if (g_state.load(std::memory_order_acquire) != kActive) return false;
  if (*static_cast<const int*>(ctx) != g_generation.load(std::memory_order_acquire)) return false;
  pthread_mutex_lock(&g_ctl);
  bool go = g_state.load() == kActive;
  if (go) {
    if (periodic) {
      g_api_cupti.flush_all(0);  // completed buffers only: no stall, no device sync
      resample_clock_locked(3);
    }
    drain_locked();
  }
  pthread_mutex_unlock(&g_ctl);
  return go;
}

// After stepping aside for a client of another libcupti copy (asked by step_aside_locked, on
// the client's thread): cuptiFinalize detaches our copy so theirs can attach, but never from the
// client's thread and never with kernels in flight. Forced flushes until one returns no
// unfinished record (CUPTI hands records of running kernels over without timestamps), then
// finalize; kernels still running after kFinalizeTries flushes: finalize is skipped (the client
// may then be refused by its copy, which says so; a crash inside CUPTI is worse).
void finalize_if_asked() {
  if (g_finalize.load() != kFinalizeAsked) return;
  pthread_mutex_lock(&g_ctl);
  int tries = 0;
  bool in_flight = true;
  while (tries < kFinalizeTries && !g_exiting.load() && g_finalize.load() == kFinalizeAsked) {
    ++tries;
    uint64_t before = g_encoder ? g_encoder->stats.incomplete : 0;
    g_api_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    drain_locked();
    if ((g_encoder ? g_encoder->stats.incomplete : 0) == before) {
      in_flight = false;
      break;
    }
    usleep(10000);
  }
  int asked = kFinalizeAsked;
  if (g_finalize.compare_exchange_strong(asked, kFinalizeAnswered)) {
    if (!in_flight) {
      g_api_cupti.finalize();
      g_pool.reclaim_all_lent();  // a finalised CUPTI never returns what it still held
      write_status(fmt::kCuptiFinalize, fmt::kCuptiFinalizeDone, tries, "cuptiFinalize on vramtrace's thread");
    } else if (g_exiting.load()) {
      write_status(fmt::kCuptiFinalize, fmt::kCuptiFinalizeTimeout, tries, "process exiting: cuptiFinalize skipped");
    } else {
      write_status(fmt::kCuptiFinalize, fmt::kCuptiFinalizeInFlight, tries, "kernels in flight: cuptiFinalize skipped");
      log_line("kernels stayed in flight; vramtrace's libcupti was not finalised, so the other CUPTI client's copy may "
               "be refused");
    }
  }
  pthread_mutex_unlock(&g_ctl);
}

void run_flush_loop() {
  int generation = g_generation.load();
  FlushLoop loop;
  loop.interval_ns = kFlushIntervalNs;
  loop.hooks = FlushHooks{hook_now, hook_wait, hook_tick, &generation};
  loop.run();
  finalize_if_asked();  // the loop ends when we stepped aside (or at exit)
}

void* helper_main(void*) {
  prctl(PR_SET_NAME, "vramtrace-cupti", 0, 0, 0);
  pthread_mutex_lock(&g_ctl);
  bool ok = init_locked();
  if (!ok && g_state.load() == kLoading) g_state.store(kOff);
  g_loader_done.store(true, std::memory_order_release);
  pthread_mutex_unlock(&g_ctl);
  if (!ok) return nullptr;
  run_flush_loop();
  return nullptr;
}

// The other client let CUPTI go (cuptiUnsubscribe / cuptiFinalize returned): subscribe again,
// set the buffers up and enable our kinds again, say where the gap was, and flush as before.
// On its own thread (the client's call has returned by then); any refusal leaves us aside.
std::atomic<int> g_resume_id{0};
void* resume_main(void*) {
  prctl(PR_SET_NAME, "vramtrace-cupti", 0, 0, 0);
  pthread_mutex_lock(&g_ctl);
  bool ok = false;
  if (g_state.load() == kAside && !g_exiting.load() && g_api_ok && g_encoder) {
    CUpti_SubscriberParams p = {};
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "vramtrace";
    CUptiResult r = g_api_cupti.subscribe_v2 ? g_api_cupti.subscribe_v2(&g_subscriber, subscriber_callback, nullptr, &p)
                                             : g_api_cupti.subscribe(&g_subscriber, subscriber_callback, nullptr);
    if (r == CUPTI_SUCCESS) {
      configure_buffers_locked();
      if (g_api_cupti.register_callbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS && enable_kinds_locked()) {
        ok = true;
      } else {
        undo_locked();
      }
    } else {
      g_subscriber = nullptr;
    }
  }
  if (ok) {
    int id = g_resume_id.load();
    g_generation.fetch_add(1);
    resample_clock_locked(3);
    g_foreign.store(false);
    g_state.store(kActive, std::memory_order_release);
    write_status(fmt::kCuptiResumed, uint64_t(id) + 1, g_aside_ns.load(), wrapped_name(id));
  }
  g_loader_done.store(true, std::memory_order_release);
  pthread_mutex_unlock(&g_ctl);
  if (ok) run_flush_loop();
  return nullptr;
}

// ---- stepping aside and exit ----

void step_aside_locked(int id, void* target) {
  int64_t when = int64_t(now_ns());
  g_api_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  disable_locked();
  g_api_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  drain_locked();
  g_api_cupti.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
  // A client using another copy of libcupti cannot attach while ours still is: ours is
  // finalised, by the helper thread (finalize_if_asked), which on_foreign_call waits for.
  Dl_info mine{}, theirs{};
  if (target && g_api_cupti.finalize && dladdr(reinterpret_cast<void*>(g_api_cupti.subscribe), &mine) &&
      dladdr(target, &theirs) && mine.dli_fbase != theirs.dli_fbase)
    g_finalize.store(kFinalizeAsked);
  g_aside_ns.store(when);
  g_state.store(kAside, std::memory_order_release);
  write_status(fmt::kCuptiSteppedAside, uint64_t(id) + 1, when, wrapped_name(id));
  log_line("another CUPTI client started (%s); kernel activity recording stopped here, memory tracing continues",
           wrapped_name(id));
  g_waker.wake();
}

void at_exit_flush() {
  OwnWork own;
  g_exiting.store(true);
  if (g_state.load() == kAside && g_handover_dropped.load() && lock_for(&g_ctl, 2000)) {
    if (uint64_t late = g_handover_dropped.exchange(0))
      write_status(fmt::kCuptiDropped, fmt::kCuptiLostHandover, int64_t(late), "completed after the handover");
    pthread_mutex_unlock(&g_ctl);
    return;
  }
  if (g_state.load() != kActive || !lock_for(&g_ctl, 2000)) return;
  if (g_state.load() == kActive) {
    g_api_cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    drain_locked();
    g_state.store(kStopped, std::memory_order_release);
    write_status(fmt::kCuptiStopped, 1, int64_t(g_encoder ? g_encoder->stats.written : 0), "exit");
  }
  pthread_mutex_unlock(&g_ctl);
  g_waker.wake();
}

// In a forked child the helper thread is gone and CUPTI and CUDA belong to the parent: the
// inherited exit handlers must do nothing, and g_ctl may have been held by the helper at fork.
void after_fork_in_child() {
  pthread_mutex_init(&g_ctl, nullptr);
  if (g_state.load() != kIdle) g_state.store(kOff);
  g_loader_done.store(true);
}

// Registered before the helper starts (an exit during its dlopen) and again once libcupti is
// loaded (exit handlers run last-registered first: then before libcupti's own): if the process
// exits while the helper is still inside dlopen or CUPTI's start-up, wait (at most 2 s) for it
// to get out, so CUPTI is not torn down under it. Handlers libcupti registers later, during its
// start-up, still run before this wait.
void at_exit_wait_for_helper() {
  g_exiting.store(true);
  for (int i = 0; i < 400 && !g_loader_done.load(std::memory_order_acquire); ++i) usleep(5000);
}

}  // namespace

// ---- entry points ----

void start(bool enabled, bool memory_activity, uint64_t t) {
  g_memory_activity = memory_activity;
  long pid = process_id();
  long started = g_started_pid.load();
  if (started == pid) return;
  g_started_pid.store(pid);
  if (started != 0) {  // a forked child: CUDA and CUPTI belong to the parent
    g_state.store(kOff);
    write_status(fmt::kCuptiUnavailable, fmt::kCuptiWhyForked, 0, "forked child", t);
    return;
  }
  if (!enabled) {
    g_state.store(kOff);
    write_status(fmt::kCuptiUnavailable, fmt::kCuptiWhyDisabled, 0, "VRAMTRACE_KERNELS=0", t);
    return;
  }
  g_state.store(kLoading);
  g_loader_done.store(false);
  atexit(at_exit_wait_for_helper);
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  if (!start_helper_thread(helper_main, nullptr)) {
    g_state.store(kOff);
    g_loader_done.store(true);
    write_status(fmt::kCuptiUnavailable, fmt::kCuptiWhyError, 0, "pthread_create failed", t);
  }
}

void on_foreign_call(int id, void* target) {
  if (id == k_cuptiUnsubscribe) return;  // letting go, not starting (after_foreign_call)
  g_foreign.store(true);
  int s = g_state.load(std::memory_order_acquire);
  if (s != kLoading && s != kActive) return;  // idle: start() will see g_foreign; else nothing held
  OwnWork own;  // g_ctl is held below, over CUPTI calls and a message: nothing may cancel us there
  if (!lock_for(&g_ctl, 5000)) return;  // never hold the other client up for long
  if (g_state.load() == kActive) step_aside_locked(id, target);
  pthread_mutex_unlock(&g_ctl);
  if (g_finalize.load() != kFinalizeAsked) return;
  for (int i = 0; i < kFinalizeWaitMs / 5 && g_finalize.load() == kFinalizeAsked; ++i) usleep(5000);
  int asked = kFinalizeAsked;
  if (g_finalize.compare_exchange_strong(asked, kFinalizeAbandoned))  // the helper never answered
    write_status(fmt::kCuptiFinalize, fmt::kCuptiFinalizeTimeout, 0, "vramtrace's thread did not answer");
}

void after_foreign_call(int id, CUptiResult result) {
  if (result != CUPTI_SUCCESS || (id != k_cuptiUnsubscribe && id != k_cuptiFinalize)) return;
  if (g_state.load(std::memory_order_acquire) != kAside || g_exiting.load()) return;
  g_resume_id.store(id);
  g_finalize.store(kNoFinalize);
  g_loader_done.store(false);  // an exit meanwhile waits for it to be out of CUPTI's start-up
  if (!start_helper_thread(resume_main, nullptr)) g_loader_done.store(true);  // we stay aside
}

void their_buffer_callbacks(CUpti_BuffersCallbackRequestFunc* rq, CUpti_BuffersCallbackCompleteFunc* cm) {
  if (!*rq || !*cm) return;
  g_their_request.store(*rq, std::memory_order_release);
  g_their_complete.store(*cm, std::memory_order_release);
  *rq = their_requested;
  *cm = their_completed;
}

void* cupti_handle() { return g_lib.handle; }

namespace {
// Loads libcupti if needed (NVTX's first call is on an application thread but never inside a
// driver hook, and NVTX itself dlopens its injection library there: loading libcupti on this
// thread is safe). False when kernels are off or CUPTI belongs to someone else.
bool nvtx_library_ready() {
  const char* k = getenv("VRAMTRACE_KERNELS");
  const char* d = getenv("VRAMTRACE_DISABLE");
  if ((k && strcmp(k, "0") == 0) || (d && *d && strcmp(d, "0") != 0)) return false;
  char var[64];
  int s = g_state.load();
  if (g_foreign.load() || s == kOff || s == kAside || s == kStopped || other_tool_in_env(environ, var, sizeof var))
    return false;
  if (!lock_for(&g_ctl, 2000)) return false;
  if (g_api_ok || (g_lib.handle || load_cupti(&g_lib))) {
    const char* missing = nullptr;
    if (!g_api_ok && resolve_api(g_lib.handle, &g_api_cupti, &missing)) g_api_ok = true;
  }
  bool ok = g_api_ok;
  pthread_mutex_unlock(&g_ctl);
  return ok;
}
}  // namespace

int nvtx_inject(NvtxGetExportTable get) {
  OwnWork own;  // loading libcupti under g_ctl
  int (*init)(NvtxGetExportTable) = nvtx_library_ready() ? g_api_cupti.nvtx_init : nullptr;
  return init ? init(get) : 0;
}

int nvtx_ext_inject(void* module_info) {
  OwnWork own;
  int (*init)(void*) = nvtx_library_ready() ? g_api_cupti.nvtx_ext_init : nullptr;
  return init ? init(module_info) : 0;
}

}  // namespace vt::cupti
