// PyTorch's block layer: every block (tensor storage) the CUDA caching allocator hands out or
// takes back, with zero code change. libc10_cuda.so imports c10::reportMemoryUsageToProfiler and
// c10::reportOutOfMemoryToProfiler from libc10.so; it binds them at load time through the global
// scope, where a preloaded libvramtrace.so comes first, so our definitions below take every call.
// Each is recorded (format/trace_format.h: kTagTorchBlock, kTagTorchOom) with the calling thread's
// stack and always forwarded to the real function (torch.profiler's memory profiling depends on
// it), found among the loaded objects (loaded_symbol.h: torch loads libc10.so RTLD_LOCAL, so
// RTLD_NEXT finds nothing).
//
// Validated as the calls arrive: CUDA devices only (CPU blocks are reported while a profiler runs:
// ignored), a device index in range, sizes that are non-zero multiples of 512, and per device the
// running sum of sizes equal to total_allocated. The first violation turns the block layer off
// for the rest of the run, with one line on stderr and a status record (kTagTorchStatus) saying
// why; the driver-level events go on. What needs the driver's view (total_reserved against the
// segments, every block inside a segment) is checked by the analyzer (analyzer/aggregators/
// torch_hooks.h).
//
// These hooks run under the allocator's per-device mutex, often without the GIL, on any thread:
// they take no lock, never the GIL (the stack walk reads the thread's own frames, as for driver
// events), keep errno, and follow the reentry rules of reentry_guard.h. Per device, calls are
// serialized by that mutex, so a relaxed atomic per device keeps the running sum exact.
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <atomic>

#include "clock.h"
#include "current_stream.h"
#include "driver_api.h"
#include "gpu_processes.h"
#include "loaded_symbol.h"
#include "log.h"
#include "own_work.h"
#include "pytorch_records.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "reentry_guard.h"
#include "request_probe.h"
#include "stack_capture.h"
#include "torch_hooks.h"
#include "trace_format.h"


namespace vt {

namespace {

constexpr int kCudaType = 1;
// Native frames of a block event (the configured depth still caps it; an OOM report gets the full
// depth). Blocks are 10-100x more frequent than driver calls, their user is in the Python frames
// (captured apart, all of them), and what lies beyond the first 16 native frames of a tensor
// allocation is torch's dispatcher and the interpreter: unwinding them would cost ~85
// instructions each (3.10 runs one C eval frame per Python call: 64 frames, 2x the whole budget).
constexpr int kBlockNativeFrames = 16;
constexpr int kDevices = 128;  // c10::DeviceIndex is an int8_t
constexpr const char* kUsageName = "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE";
constexpr const char* kOomName = "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE";


std::atomic<int64_t> g_sum[kDevices];   // blocks reported on each device, bytes: total_allocated
std::atomic<int64_t> g_peak[kDevices];  // the highest g_sum since the start or the last reset
enum : int { kUnseen = 0, kOn = 1, kOff = 2 };
std::atomic<int> g_state{kUnseen};
char g_off_reason[200];
std::atomic<uint32_t> g_announced{0};  // the trace generation that holds our "on" status record

std::atomic<bool> g_resolved{false};
std::atomic<UsageFn> g_real_usage{nullptr};
std::atomic<OomFn> g_real_oom{nullptr};
std::atomic<const char*> g_real_path{""};
std::atomic<bool> g_probe_claimed{false};  // one thread installs the request probe
std::atomic<bool> g_probe_done{false};
bool g_probe_on = false;
bool g_streams_on = false;  // current_stream.h found its functions
char g_probe_why[96];

void own_marker() {}  // an address inside libvramtrace.so: the object find_loaded_symbol skips

// The request probe and the stream lookup, once (the first caller installs them).
void install_probes() {
  bool unclaimed = false;
  if (g_probe_claimed.compare_exchange_strong(unclaimed, true)) {
    g_probe_on = install_request_probe(reinterpret_cast<const void*>(&own_marker), g_probe_why, sizeof g_probe_why);
    g_streams_on = resolve_current_stream(reinterpret_cast<const void*>(&own_marker));
    g_probe_done.store(true, std::memory_order_release);
  }
}

// Idempotent: racing threads find the same functions.
__attribute__((noinline)) void resolve() {
  int saved = errno;
  const char* path = "";
  void* usage = find_loaded_symbol(kUsageName, reinterpret_cast<const void*>(&own_marker), &path);
  void* oom = find_loaded_symbol(kOomName, reinterpret_cast<const void*>(&own_marker), nullptr);
  g_real_usage.store(reinterpret_cast<UsageFn>(usage), std::memory_order_relaxed);
  g_real_oom.store(reinterpret_cast<OomFn>(oom), std::memory_order_relaxed);
  g_real_path.store(usage ? path : "", std::memory_order_relaxed);
  g_resolved.store(true, std::memory_order_release);
  install_probes();
  errno = saved;
}
inline void resolve_once() {
  if (__builtin_expect(!g_resolved.load(std::memory_order_acquire), 0)) resolve();
}

void write_status(uint8_t state, const char* message) {
  uint8_t payload[320];
  format::PayloadWriter w(payload, sizeof payload);
  format::TorchStatusRecord rec;
  rec.state = state;
  rec.forwarded = g_real_usage.load(std::memory_order_relaxed) ? 1 : 0;
  rec.message = format::Text(message, strnlen(message, 256));
  format::encode<format::TorchStatusSchema>(w, rec);
  write_meta(format::kTagTorchStatus, payload, w.size(), now_ns());
}

// Once per trace (a forked child writes its own): the block layer is on, and where calls go.
void announce_on() {
  uint32_t gen = g_generation.load(std::memory_order_relaxed);
  if (__builtin_expect(g_announced.load(std::memory_order_relaxed) == gen, 1)) return;
  g_announced.store(gen, std::memory_order_relaxed);
  char text[300];
  const char* path = g_real_path.load(std::memory_order_relaxed);
  int n;
  if (g_real_usage.load(std::memory_order_relaxed))
    n = snprintf(text, sizeof text, "forwarding to %s", *path ? path : "the real function");
  else
    n = snprintf(text, sizeof text, "the real function was not found in any loaded object: calls are not forwarded");
  if (n > 0 && size_t(n) < sizeof text && g_probe_done.load(std::memory_order_acquire))
    snprintf(text + n, sizeof text - size_t(n), "; requested sizes %s%s%s; streams %s", g_probe_on ? "seen" : "not seen",
             g_probe_on ? "" : ": ", g_probe_on ? "" : g_probe_why, g_streams_on ? "seen" : "not seen");
  write_status(format::kTorchOn, text);
}

// The first violation wins: one line on stderr, one status record; no block events after it.
__attribute__((noinline, format(printf, 1, 2))) void fall_back(const char* fmt, ...) {
  int expected = g_state.load();
  do {
    if (expected == kOff) return;
  } while (!g_state.compare_exchange_weak(expected, kOff));
  OwnWork own;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_off_reason, sizeof g_off_reason, fmt, ap);
  va_end(ap);
  log_line("PyTorch block events off, driver-level figures only: %s", g_off_reason);
  if (recording()) write_status(format::kTorchOff, g_off_reason);
}

// The checks a call must pass (see the header comment). False: the layer is off now.
bool valid(int index, int64_t size, size_t total_allocated) {
  if (index < 0 || index >= kDevices) {
    fall_back("a block on CUDA device index %d, out of range", index);
    return false;
  }
  uint64_t magnitude = size < 0 ? uint64_t(0) - uint64_t(size) : uint64_t(size);
  if (size == 0 || magnitude % 512 != 0) {
    fall_back("a block of %lld bytes on device %d, not a non-zero multiple of 512", static_cast<long long>(size), index);
    return false;
  }
  int64_t sum = g_sum[index].fetch_add(size, std::memory_order_relaxed) + size;
  if (sum != int64_t(total_allocated)) {
    fall_back("device %d: the blocks reported add up to %lld bytes, total_allocated says %llu", index,
              static_cast<long long>(sum), static_cast<unsigned long long>(total_allocated));
    return false;
  }
  return true;
}

}  // namespace

__attribute__((noinline)) void torch_block(void* ptr, int64_t size, size_t total_allocated, size_t total_reserved,
                                           int type, int index, uint64_t caller) {
  if (type != kCudaType || !tracing_possible()) return;
  int* err = &errno;
  int saved = *err;
  resolve_once();
  if (g_state.load(std::memory_order_relaxed) != kOff && valid(index, size, total_allocated)) {
    if (size > 0) {  // (PyTorch calls under its allocator's lock: the totals come in order)
      int64_t high = g_peak[index].load(std::memory_order_relaxed);
      while (int64_t(total_allocated) > high &&
             !g_peak[index].compare_exchange_weak(high, int64_t(total_allocated), std::memory_order_relaxed)) {
      }
    }
    int unseen = kUnseen;  // (a CAS: a racing fall_back's kOff must not be overwritten)
    if (g_state.load(std::memory_order_relaxed) == kUnseen) g_state.compare_exchange_strong(unseen, kOn);
    HookScope scope;
    if (__builtin_expect(scope.nested_in_our_work(), 0)) {
      count_lost_events(1);  // a signal handler inside our own work: no chunk to write to
    } else if (recording()) {
      announce_on();
      // The request, when the probe saw it on this thread for this block (request_probe.h), and
      // the thread's current stream, which allocate() handed the block out on (current_stream.h).
      uint64_t requested = size > 0 ? take_request() : 0;
      if (requested > uint64_t(size)) requested = 0;
      uint64_t stream = size > 0 ? current_stream(index) : 0;
      if (stream) {  // TorchStreamAllocSchema's order; the recorder appends the stack id
        uint64_t f[7] = {uint64_t(index), reinterpret_cast<uint64_t>(ptr), uint64_t(size), requested, stream,
                         total_allocated, total_reserved};
        record_layer_event(format::kTagTorchStreamAlloc, now_ns(), f, 7, caller, kBlockNativeFrames);
      } else if (requested) {  // TorchAllocSchema's order
        uint64_t f[6] = {uint64_t(index), reinterpret_cast<uint64_t>(ptr), uint64_t(size), requested,
                         total_allocated, total_reserved};
        record_layer_event(format::kTagTorchAlloc, now_ns(), f, 6, caller, kBlockNativeFrames);
      } else {  // TorchBlockSchema's order (format/pytorch_records.h)
        uint64_t f[5] = {uint64_t(index), reinterpret_cast<uint64_t>(ptr), format::zigzag(size), total_allocated,
                         total_reserved};
        record_layer_event(format::kTagTorchBlock, now_ns(), f, 5, caller, kBlockNativeFrames);
      }
    }
  }
  *err = saved;
}

int64_t tensor_bytes(int device) {
  if (g_state.load(std::memory_order_acquire) != kOn || device < -1 || device >= kDevices) return -1;
  if (device >= 0) return g_sum[device].load(std::memory_order_relaxed);
  int64_t all = 0;
  for (const auto& s : g_sum) all += s.load(std::memory_order_relaxed);
  return all;
}

int64_t tensor_peak_bytes(int device) {
  if (g_state.load(std::memory_order_acquire) != kOn || device < -1 || device >= kDevices) return -1;
  if (device >= 0) return g_peak[device].load(std::memory_order_relaxed);
  int64_t high = 0;
  for (const auto& p : g_peak) high = std::max(high, p.load(std::memory_order_relaxed));
  return high;
}

void reset_tensor_peak(int device) {
  for (int d = 0; d < kDevices; ++d)
    if (device < 0 || d == device) g_peak[d].store(g_sum[d].load(std::memory_order_relaxed), std::memory_order_relaxed);
}

__attribute__((noinline)) void torch_oom(int64_t size, size_t total_allocated, size_t total_reserved, int type,
                                         int index, uint64_t caller) {
  if (type != kCudaType || !tracing_possible()) return;
  int* err = &errno;
  int saved = *err;
  resolve_once();
  if (g_state.load(std::memory_order_relaxed) != kOff && index >= 0 && index < kDevices) {
    HookScope scope;
    if (__builtin_expect(scope.nested_in_our_work(), 0)) {
      count_lost_events(1);
    } else if (recording()) {
      take_request();  // (the failed request's note: not for a later block)
      // What PyTorch's message quotes: cudaMemGetInfo, read just before this call.
      size_t free_b = 0, total_b = 0;
      if (g_api.mem_get_info) {
        scope.real_call_begin();
        if (g_api.mem_get_info(&free_b, &total_b) != CUDA_SUCCESS) free_b = total_b = 0;
        scope.real_call_end();
      }
      announce_on();
      // TorchOomSchema's order (format/pytorch_records.h); the recorder appends the stack id.
      uint64_t f[6] = {uint64_t(index), format::zigzag(size), total_allocated, total_reserved, free_b, total_b};
      const uint64_t t = now_ns();
      record_layer_event(format::kTagTorchOom, t, f, 6, caller, kMaxCaptureSlots);
      // NVML's list now, as PyTorch reads it for its message ("this process has X in use"): with
      // a memory fraction reached no driver call failed to take it.
      record_gpu_processes(index, t);
    }
  }
  *err = saved;
}

void torch_early_probes() {
  if (g_probe_claimed.load(std::memory_order_acquire) || !loader_list_usable()) return;
  int saved = errno;
  // Only once PyTorch's allocator is there: before it is loaded, the first block installs them.
  if (find_loaded_symbol(kTorchAllocatorSymbol, reinterpret_cast<const void*>(&own_marker), nullptr)) install_probes();
  errno = saved;
}

UsageFn real_usage_hook() {
  resolve_once();
  return g_real_usage.load(std::memory_order_relaxed);
}

OomFn real_oom_hook() {
  resolve_once();
  return g_real_oom.load(std::memory_order_relaxed);
}

void write_torch_config(uint64_t t) {
  const char* names[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING"};
  const char* values[3];
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    values[i] = getenv(names[i]);
    any |= values[i] != nullptr;
  }
  if (!any) return;  // PyTorch's defaults (or no PyTorch): traces without it stay as they were
  uint8_t payload[3 * (format::kMaxVarint + 512)];
  format::PayloadWriter w(payload, sizeof payload);
  auto text = [](const char* v) { return format::Text(v ? v : "", v ? strnlen(v, 512) : 0); };
  format::TorchConfigRecord rec;
  rec.cuda_alloc_conf = text(values[0]);
  rec.alloc_conf = text(values[1]);
  rec.no_caching = text(values[2]);
  format::encode<format::TorchConfigSchema>(w, rec);
  write_meta(format::kTagTorchConfig, payload, w.size(), t);
}

}  // namespace vt
