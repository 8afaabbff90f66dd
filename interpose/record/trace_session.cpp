// The trace's life in one process: opened lazily by the first acquiring call (a process that
// never allocates CUDA memory leaves no file), a process record and one record per device,
// a fresh file for a forked child, and the clean-close mark on the way out. Policy on fork: the
// child forgets the parent's file and writes its own, <path>.<pid> or vramtrace.<pid>.trace,
// once it makes a CUDA memory call (children of exec are traced through the inherited
// LD_PRELOAD in the same way). Also the count of events that could not be recorded (kept until
// the header exists, then added to it), and record() itself.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "load_steps.h"
#include "backward_context.h"
#include "clock.h"
#include "env_config.h"
#include "driver_api.h"
#include "lookup_log.h"
#include "region_marks.h"
#include "log.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "own_work.h"
#include "reentry_guard.h"
#include "deferred_events.h"
#include "gpu_processes.h"
#include "activity_recorder.h"
#include "graph_state.h"
#include "live_tracker.h"
#include "loaded_symbol.h"
#include "pool_sync.h"
#include "python_code_index.h"
#include "shm_summary.h"
#include "module_map.h"
#include "native_stack.h"
#include "python_frames.h"
#include "stack_capture.h"
#include "stack_room.h"
#include "stack_index.h"
#include <sys/prctl.h>
#include "lookup_gaps.h"
#include "meta_records.h"
#include "torch_hooks.h"

extern "C" void vt_run_on_stack(void (*fn)(void*), void* arg, void* top);

namespace vt {

TraceFile g_file;
std::atomic<uint32_t> g_generation{1};
std::atomic<int> g_trace_status{kTraceNotOpen};
std::atomic<int> g_device_records{kDeviceRecordsPending};

namespace {

std::atomic<int>& g_status = g_trace_status;
constexpr int kNotOpen = kTraceNotOpen, kOpen = kTraceOpen, kOff = kTraceOff, kNullSink = kTraceNullSink;
std::atomic<int>& g_devices = g_device_records;
constexpr int kDevicesPending = kDeviceRecordsPending, kDevicesWriting = kDeviceRecordsWriting,
              kDevicesDone = kDeviceRecordsDone;
pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
std::atomic<uint64_t> g_lost_before_open{0};  // counted before the header existed

// Context, code and pool-location ops made before the trace opened (format/accounting.h, rule 14):
// they open no trace (a process that only creates a context leaves no file), but the first
// context's cost is known only from its own event, so a few are held and written when the trace
// opens, before the event that opened it. Without stacks; beyond kHeld (~28 KiB of them: a
// process that loads that many modules before its first allocation), counted and said in a note.
constexpr int kHeld = 256;
Event g_held[kHeld];
int g_held_n = 0;
uint64_t g_held_dropped = 0;
bool g_held_written = false;  // once the trace opened: nothing is held any more
std::atomic_flag g_held_lock = ATOMIC_FLAG_INIT;

bool opens_no_trace(const OpInfo& op) { return op.kind == MemKind::Code || op.kind == MemKind::PoolConfig; }

void hold_until_open(const Event& e) {
  while (g_held_lock.test_and_set(std::memory_order_acquire)) {
  }
  if (!g_held_written) {
    if (g_held_n < kHeld) g_held[g_held_n++] = e;
    else g_held_dropped++;
  }
  g_held_lock.clear(std::memory_order_release);
}

// Called by the thread that opened the trace (its chunk), at time t.
void write_held(uint64_t t) {
  while (g_held_lock.test_and_set(std::memory_order_acquire)) {
  }
  for (int i = 0; i < g_held_n; ++i) {
    Event ev = g_held[i];
    ev.t_ns = t;  // (records of a chunk go forward in time; they came before the opening event)
    ev.stack = 0;
    encode_event(ev);
    track_event(ev);
  }
  if (g_held_dropped) {
    char text[200];
    int n = snprintf(text, sizeof text,
                     "%llu context, module and pool calls made before the trace opened were not recorded "
                     "(more than %d): their memory is in the unexplained remainder",
                     static_cast<unsigned long long>(g_held_dropped), kHeld);
    uint8_t buf[sizeof text];
    format::PayloadWriter p(buf, sizeof buf);
    format::encode<format::NoteSchema>(p, format::NoteRecord{format::Text(text, n > 0 ? strnlen(text, sizeof text) : 0)});
    write_meta(format::kTagNote, p.data(), p.size(), t);
  }
  g_held_n = 0;
  g_held_dropped = 0;
  g_held_written = true;
  g_held_lock.clear(std::memory_order_release);
}

size_t read_file(const char* path, char* buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r <= 0) break;
    n += size_t(r);
  }
  close(fd);
  return n;
}

// Called with g_open_mu held: its 32 KiB of buffers are static, not on the stack of a thread
// whose first memory call this may be (a 32 KiB thread stack, a signal's alternate stack).
void write_process_record(uint64_t t) {
  int driver = 0;
  if (g_api.driver_get_version) g_api.driver_get_version(&driver);
  static char cmdline[8192], exe[8192];
  size_t n = read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
  main_program_path(exe, sizeof exe);  // (not ld.so when the program was started through it)
  format::ProcessRecord r{uint64_t(driver), format::Text(cmdline, n), format::Text(exe, strlen(exe))};
  static uint8_t payload[16384 + 32];
  format::PayloadWriter p(payload, sizeof payload);
  format::encode<format::ProcessSchema>(p, r);
  write_meta(format::kTagProcess, p.data(), p.size(), t);
}

// Devices are known once cuInit has run; until then this is retried on later events.
void write_device_records(uint64_t t) {
  int expected = kDevicesPending;
  if (!g_devices.compare_exchange_strong(expected, kDevicesWriting)) return;
  int count = 0;
  // (A partial or compatibility driver may lack any of these: nothing is called unchecked.)
  if (!g_api.device_get_count || !g_api.device_get || g_api.device_get_count(&count) != CUDA_SUCCESS || count <= 0) {
    g_devices.store(kDevicesPending);
    return;
  }
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (g_api.device_get(&dev, i) != CUDA_SUCCESS) continue;
    size_t total = 0;
    char name[256] = {};
    CUuuid uuid = {};
    if (g_api.device_total_mem) g_api.device_total_mem(&total, dev);
    if (g_api.device_get_name) g_api.device_get_name(name, sizeof name - 1, dev);
    if (g_api.device_get_uuid) g_api.device_get_uuid(&uuid, dev);
    format::DeviceRecord r{uint64_t(i), total, format::Text(name, strlen(name)),
                           format::Text(uuid.bytes, sizeof uuid.bytes)};
    uint8_t buf[512];
    format::PayloadWriter p(buf, sizeof buf);
    format::encode<format::DeviceSchema>(p, r);
    write_meta(format::kTagDevice, p.data(), p.size(), t);
  }
  g_devices.store(kDevicesDone, std::memory_order_release);
}

// Two copies of libvramtrace.so in one process (an installed wheel's beside a build tree's, an
// exported LD_PRELOAD beside `vramtrace run` of another install): the program's calls bind to the
// first in load order, which traces; a later copy stands down for good (its forked children too),
// silently: the copy in use says so when its trace opens (only processes that use CUDA speak).
bool g_stood_down = false;

volatile uint8_t* g_fork_marker = nullptr;  // see arm_fork_marker
void stand_down_behind_another_copy() {
  if (!other_vramtrace(_DYNAMIC, true)) return;
  g_stood_down = true;
  g_status.store(kOff);
}

void say_if_another_copy_stood_down() {
  const char* other = other_vramtrace(_DYNAMIC, false);
  if (!other) return;
  Dl_info self;
  const char* mine = dladdr(reinterpret_cast<void*>(&say_if_another_copy_stood_down), &self) && self.dli_fname
                         ? self.dli_fname : "?";
  log_line_once_per_run("two copies of libvramtrace.so are loaded: %s traces, %s (loaded after it) stands down", mine,
                        other);
}

void after_fork_in_child() {
  // Only this thread exists now, and a lock another thread of the parent held at the fork stays
  // held: each is made anew. Drop the parent's file; the next acquiring call opens ours.
  pthread_mutex_init(&g_open_mu, nullptr);
  forget_driver_lock();
  forget_lookup_log_lock();
  forget_region_lock();
  g_file.abandon();
  g_devices.store(kDevicesPending);
  forget_stacks();
  forget_backward_context();
  forget_modules();
  forget_live_state();
  forget_pool_sync();
  forget_graph_state();
  forget_python_codes();
  forget_shm_summary();
  forget_gpu_process_sampler();
  forget_deferred_events();
  g_lost_before_open.store(0);
  g_held_lock.clear();
  g_held_n = 0;
  g_held_dropped = 0;
  g_held_written = false;  // (the child's first context was the parent's: nothing to hold)
  g_generation.fetch_add(1);
  if (g_fork_marker) *g_fork_marker = 1;
  g_status.store(g_stood_down ? kOff : kNotOpen);
  // Forked inside our own work: a signal handler that interrupted a hook of this thread called
  // fork (we never do). The child's hooks would take themselves for that handler's nested calls
  // and queue their events for a scope that never resumes there (the child leaves with _exit, or
  // from the handler): its events were lost. The state that work held was the parent's, reset
  // above: the child records as any thread outside our work.
  if (t_phase == kPhaseOurs) t_phase = kPhaseNone;
}

// Registered when the library loads, before any of our locks can be taken: a fork while another
// thread opens the trace or resolves the driver must leave the child with them free (registered
// at the trace's opening, the handler came too late for a fork during that opening).
void handle_forks() { pthread_atfork(nullptr, nullptr, after_fork_in_child); }

// A child of the raw fork or clone system call (sandboxes, some runtimes) runs no atfork handler:
// it held the parent's trace and wrote its events into it under the parent's pid. One private
// page marked MADV_WIPEONFORK reads 0 in every child, however it was made; the first event of
// such a child finds it so and does what the handler would have (one load per event). Re-armed
// after every fork; without the kernel's support (before 4.14) no page, no check.
void arm_fork_marker() {
  int saved = errno;
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED && madvise(p, 4096, MADV_WIPEONFORK) == 0) {
    g_fork_marker = static_cast<volatile uint8_t*>(p);
    *g_fork_marker = 1;
  } else if (p != MAP_FAILED) {
    munmap(p, 4096);
  }
  errno = saved;
}

__attribute__((noinline, cold)) void forked_without_handlers() {
  after_fork_in_child();  // (re-arms the marker)
}

// Before anything is recorded (driver events and PyTorch's block records alike).
inline void reset_if_forked_without_handlers() {
  if (__builtin_expect(g_fork_marker && *g_fork_marker == 0, 0)) forked_without_handlers();
}

format::FileHeader* open_header() {
  return g_status.load(std::memory_order_acquire) == kOpen ? g_file.header() : nullptr;
}

// Opening, under g_open_mu: run on a stack of ours (open_stack()), not the caller's.
void open_locked(void* arg) {
  const uint64_t t = *static_cast<uint64_t*>(arg);
  int status = g_status.load();
  if (status != kNotOpen) return;
  static Config cfg;  // (4 KiB: static under g_open_mu, like the process record's buffers)
  cfg = Config{};
  status = kOff;
  say_if_another_copy_stood_down();
  bool configured = load_config(&cfg, process_id());
  if (configured) configure_stacks(cfg);
  if (configured && cfg.null_sink) {
    status = kNullSink;
  } else if (configured && g_file.open(cfg, process_id(), long(getppid()))) {
    write_process_record(t);
    write_stack_config(t);
    write_torch_config(t);
    write_lookup_records(t);  // the lookups made before the trace opened (cudart's init)
    open_shm_summary(g_file.path());
    start_gpu_process_sampler();
    cupti::start(cfg.kernels, cfg.cupti_memory, t);
    flush_pending_regions(t);
    write_device_records(t);
    write_held(t);
    status = kOpen;
  }
  g_status.store(status, std::memory_order_release);
  if (status == kOpen) count_lost_events(0);  // what was lost before the header existed
}

// The stack opening runs on: opening takes ~12 KiB (configuration, the file, CUPTI's load), too
// much for a program thread with a small stack whose call is the process's first. Mapped once,
// with a guard page below, kept for the process's life (and its children's); nullptr when it
// cannot be mapped (then the caller's stack). Under g_open_mu.
constexpr size_t kOpenStack = 512 << 10, kGuard = 4096;
void* open_stack() {
  static void* top = nullptr;
  static bool tried = false;
  if (!tried) {
    tried = true;
    void* p = mmap(nullptr, kOpenStack + kGuard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      if (mprotect(p, kGuard, PROT_NONE) == 0) top = static_cast<char*>(p) + kGuard + kOpenStack;
      else munmap(p, kOpenStack + kGuard);
    }
  }
  return top;
}

bool open_trace(uint64_t t) {
  OwnWork own;  // file creation, config messages, CUPTI start: no cancellation, no SIGPIPE
  pthread_mutex_lock(&g_open_mu);
  if (g_status.load() == kNotOpen) {
#if defined(__x86_64__) || defined(__aarch64__)
    if (void* top = open_stack()) vt_run_on_stack(open_locked, &t, top);
    else open_locked(&t);
#else
    open_locked(&t);
#endif
  }
  const int status = g_status.load();
  pthread_mutex_unlock(&g_open_mu);
  if (status == kOpen) await_first_gpu_process_lists();  // contexts made before the trace opened
  return status == kOpen || status == kNullSink;
}

}  // namespace

const char* trace_path() { return g_status.load(std::memory_order_acquire) == kOpen ? g_file.path() : nullptr; }

// Once per thread and trace: its kernel id and name (autograd workers, NCCL threads...).
__thread uint32_t t_described_generation __attribute__((tls_model("initial-exec"))) = 0;

static __attribute__((noinline)) void write_thread_record(uint32_t gen, uint64_t t) {
  t_described_generation = gen;
  char name[17] = {};
  prctl(PR_GET_NAME, name, 0, 0, 0);
  format::ThreadRecord r{uint32_t(gettid()), python_frames_on() && py::thread_has_state() ? format::kThreadHasPython : 0,
                         format::Text(name, strnlen(name, 16))};
  uint8_t buf[64];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::ThreadSchema>(p, r);
  write_meta(format::kTagThread, p.data(), p.size(), t);
}

// Before the thread's first event or layer record of a trace (inlined: a compare per event).
static __attribute__((always_inline)) inline void write_thread_record_once(uint64_t t) {
  uint32_t gen = g_generation.load(std::memory_order_relaxed);
  if (__builtin_expect(t_described_generation != gen, 0)) write_thread_record(gen, t);
}

void count_lost_events(uint64_t n) {
  if (n) g_lost_before_open.fetch_add(n, std::memory_order_relaxed);
  // Moved into the header once there is one (re-checked: the trace may open meanwhile).
  if (format::FileHeader* h = open_header())
    if (uint64_t pending = g_lost_before_open.exchange(0, std::memory_order_relaxed))
      __atomic_add_fetch(&h->events_lost, pending, __ATOMIC_RELAXED);
}

namespace {

// The trace status an event may be recorded under, or -1 when it is not recorded.
inline int status_for(const Event& e) {
  reset_if_forked_without_handlers();
  int status = g_status.load(std::memory_order_acquire);
  if (status == kOpen) return status;
  if (status == kOff) return -1;
  if (status == kNotOpen) {
    const OpInfo& op = kOps[int(e.op)];
    if (opens_no_trace(op)) {
      hold_until_open(e);
      return -1;
    }
    if ((op.action != Action::Acquire && op.action != Action::Control) || !open_trace(e.t_ns)) return -1;
    status = g_status.load(std::memory_order_relaxed);
  }
  return status;
}

// What comes before any event of the trace: false for the null sink (capture only, no file).
__attribute__((always_inline)) inline bool before_event(int status, const Event& e) {
  if (status == kNullSink) return false;
  if (g_devices.load(std::memory_order_relaxed) != kDevicesDone && e.result == 0) write_device_records(e.t_ns);
  write_thread_record_once(e.t_ns);
  return true;
}

// The event with its stack's id set in `e` itself.
__attribute__((always_inline)) inline void record_captured_into(int status, Event& e, const uint64_t* frames, int n) {
  if (!before_event(status, e)) return;
  if (n > 0) e.stack = stack_id(frames, n, e.t_ns);  // (else its stack is 0, as described)
  encode_event_inline(e);  // (inlined here: every event with a stack comes this way)
  track_event(e);
}

__attribute__((always_inline)) inline void record_captured(int status, const Event& e, const uint64_t* frames, int n) {
  if (n > 0) {
    Event ev = e;
    return record_captured_into(status, ev, frames, n);
  }
  if (!before_event(status, e)) return;
  encode_event(e);  // no stack: the event as described (its stack is 0), without a copy
  track_event(e);
}

// The capture and the frames it fills, out of record(): when stacks are off, the hook does not
// set up this 2.5 KiB frame at all.
__attribute__((noinline)) void record_unwound(int status, Event& e, uint64_t caller) {
  // Unwinding happens here, with no lock of ours held.
  uint64_t frames[kMaxCaptureSlots + kOwnFrames];
  int skip;
  int n = capture_stack_in_place(frames, kMaxCaptureSlots, caller, &skip);
  record_captured_into(status, e, frames + skip, n);
}

}  // namespace

// `e` is the caller's own copy (recorder.h): the stack id is written into it.
__attribute__((noinline)) void record_slow(Event& e) {
  int status = status_for(e);
  if (status < 0) return;
  if (!stack_wanted_for(kOps[int(e.op)].action)) return record_captured(status, e, nullptr, 0);
  if (__builtin_expect(!unwind_room_ok(), 0)) {  // a small alternate signal stack, a small thread stack
    if (status == kOpen) note_short_stack(e.t_ns);
    return record_captured(status, e, nullptr, 0);
  }
  record_unwound(status, e, e.caller_ip ? e.caller_ip : reinterpret_cast<uint64_t>(__builtin_return_address(0)));
}

void mark_quick_exit(int status) {
  if (g_status.load(std::memory_order_acquire) != kOpen) return;
  if (g_file.owner_pid() != uint64_t(process_id())) return;  // a vfork child: touch nothing
  OwnWork own;
  HookScope scope;
  uint64_t t = now_ns();
  if (!scope.nested_in_our_work()) write_meta(format::kTagEnd, nullptr, 0, t);  // as mark_clean_exit
  g_file.mark_quick_exit(t, status);
  close_shm_summary();
}

void record_layer_event(uint8_t tag, uint64_t t, const uint64_t* fields, int n, uint64_t caller_ip, int max_native) {
  reset_if_forked_without_handlers();  // (these records never open a trace: the child's next event does)
  int status = g_status.load(std::memory_order_acquire);
  if ((status != kOpen && status != kNullSink) || n < 0 || n >= kMaxVarintFields) return;
  if (__builtin_expect(!unwind_room_ok(), 0)) {  // (as record_slow)
    if (status == kNullSink) return;
    if (status == kOpen) note_short_stack(t);
    write_thread_record_once(t);
    uint64_t v[kMaxVarintFields];
    memcpy(v, fields, size_t(n) * sizeof *v);
    v[n] = 0;
    encode_varint_record(tag, t, v, n + 1);
    return;
  }
  uint64_t buf[kMaxCaptureSlots + kOwnFrames];
  if (max_native < 0) max_native = 0;
  int cap = max_native < kMaxCaptureSlots - kMaxPythonFrames ? max_native + kMaxPythonFrames : kMaxCaptureSlots;
  int skip;
  int depth = capture_stack_in_place(buf, cap, caller_ip, &skip);  // (the unwinder stops at cap - kMaxPythonFrames)
  const uint64_t* frames = buf + skip;
  if (status == kNullSink) return;
  write_thread_record_once(t);
  uint64_t v[kMaxVarintFields];
  memcpy(v, fields, size_t(n) * sizeof *v);
  v[n] = stack_id(frames, depth, t);
  encode_varint_record(tag, t, v, n + 1);
}

void record_with_stack(const Event& e, const uint64_t* frames, int n) {
  int status = status_for(e);
  if (status >= 0) record_captured(status, e, frames, n);
}

namespace {

// Runs at exit (and dlclose). glibc may run it before the destructors of libraries loaded later
// (cudart, torch), whose frees still reach our hooks: so it only marks the trace, tears nothing
// down, and events after it are still written.
__attribute__((destructor)) void mark_clean_exit() {
  if (g_status.load(std::memory_order_acquire) != kOpen) return;
  // A child made by the raw fork system call (no atfork handler ran: it still holds the parent's
  // trace) must not mark the parent's live trace closed, nor remove its summary.
  if (g_file.owner_pid() != uint64_t(process_id())) return;
  OwnWork own;
  HookScope scope;
  uint64_t t = now_ns();
  // exit() from a signal handler that interrupted our work: the thread's chunk may be mid-record,
  // so only the header is marked.
  if (!scope.nested_in_our_work()) write_meta(format::kTagEnd, nullptr, 0, t);
  g_file.mark_closed(t);
  close_shm_summary();
}

}  // namespace
}  // namespace vt

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void stand_down_behind_another_copy() { vt::stand_down_behind_another_copy(); }
void handle_forks() { vt::handle_forks(); }
void arm_fork_marker() { vt::arm_fork_marker(); }
}  // namespace vt::load_steps
