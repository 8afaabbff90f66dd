// The recorder: turns Events into trace records. Owns the process's TraceFile, the lazy open on
// the first acquiring call, the per-thread chunk writers, fork handling and the clean-close mark.
// Hot path: one acquire load, the stack (unwound with no lock of ours held), a TLS chunk, ~20
// bytes of varints, one release store, then the live tracker.
//
// Locks on the hook path, exactly (docs/interception.md, "Locks"), one at a time:
//   every event that         the live tracker's (live_tracker.h lists which call takes which):
//   changes memory           none for an address-keyed allocation or free (a lock-free map all
//                            threads share, since a free carries only an address; it waits only
//                            while another thread grows the table), the VMM and the pool table's
//                            spinlocks for those calls.
//   a stack seen first       module_map.cpp's mutex, while checking that every frame's module is
//                            recorded (and, when one is missing after a dlopen, while rescanning
//                            with dl_iterate_phdr, which takes the loader's own lock). The stack
//                            and code tables themselves take no lock (insert-only, CAS); a thread
//                            that finds an entry another thread is still writing spins and yields
//                            until its id is published.
//   a chunk claim that       trace_file.cpp's grow mutex, once per 1 MiB window (16 chunks):
//   needs a new window       posix_fallocate and mmap of the next window.
//   the first acquire        the open mutex (trace_session.cpp), once per process and per fork.
//   the first failure        waits up to 1 s, once per process, for the sampler thread to load
//                            NVML (gpu_processes.cpp); later failures wait for nothing.
// None of these is held while unwinding, while calling the driver, or across a call back into
// the program; the region API (region_marks.cpp) takes its own mutex, but it is not a hook.
#pragma once

#include <atomic>
#include <cstdint>

#include "event.h"
#include "live_tracker.h"
#include "stack_capture.h"
#include "thread_writer.h"

namespace vt {

// Whether the trace is open (trace_session.cpp writes it; every hook reads it, inlined).
enum TraceStatus : int { kTraceNotOpen = 0, kTraceOpen = 1, kTraceOff = 2, kTraceNullSink = 3 };
extern std::atomic<int> g_trace_status;

// Records `e`. Opens the trace on the first Acquire event; drops events while tracing is off.
void record_slow(Event& e);  // every case (trace_session.cpp), on a copy it may write the stack id into

// What record()'s common case reads, inlined into every hook: the trace is open and its device
// records are written (kDeviceRecordsDone, reset at fork), this thread's record is written for
// this trace (t_described_generation == g_generation) and no stack is wanted.
enum DeviceRecords : int { kDeviceRecordsPending = 0, kDeviceRecordsWriting = 1, kDeviceRecordsDone = 2 };
extern std::atomic<int> g_device_records;
extern __thread uint32_t t_described_generation __attribute__((tls_model("initial-exec")));
void encode_event(const Event& e);  // recorder.cpp

__attribute__((always_inline)) inline void record(const Event& e) {
  if (__builtin_expect(g_device_records.load(std::memory_order_acquire) == kDeviceRecordsDone &&
                           t_described_generation == g_generation.load(std::memory_order_relaxed) &&
                           !stack_wanted_for(kOps[int(e.op)].action),
                       1)) {
    encode_event(e);
    track_event(e);
    return;
  }
  Event copy = e;
  record_slow(copy);
}
// record() for an op known at compile time, in its hook: an allocation or free by address is
// encoded and tracked inline (thread_writer.h, track_hot), its op's constants folded.
template <HookId Id>
__attribute__((always_inline)) inline void record_op(const Event& e) {
  if constexpr (is_hot(Id)) {
    // A free takes this path with stacks on too, unless VRAMTRACE_FREE_STACKS=1.
    if (__builtin_expect(g_device_records.load(std::memory_order_acquire) == kDeviceRecordsDone &&
                             t_described_generation == g_generation.load(std::memory_order_relaxed) &&
                             !stack_wanted_for(kOps[int(Id)].action),
                         1)) {
      encode_event_inline(e);
      track_hot<Id>(e);
      return;
    }
    Event copy = copy_of(e);
    record_slow(copy);
  } else {
    record(e);
  }
}
// The same with a stack already captured (`frames` as capture_stack gives them).
void record_with_stack(const Event& e, const uint64_t* frames, int n);

// A record of a layer above the driver (PyTorch's block events): `n` varints (at most 10), then
// the stack id of the calling thread's stack from `caller_ip`: at most `max_native` native frames
// (and the configured depth), then its Python frames. Written only while the trace is open (these
// records never open it); call inside a HookScope, nothing of ours held.
void record_layer_event(uint8_t tag, uint64_t t, const uint64_t* fields, int n, uint64_t caller_ip, int max_native);

// Counts `n` events that could not be recorded, in the trace header. Async-signal-safe.
void count_lost_events(uint64_t n);

// The process leaves through _exit/_Exit(status) (exit_hooks.cpp): the trace is marked closed,
// and how, unless this is a vfork child (it shares our memory, not our trace).
void mark_quick_exit(int status);

// True once the trace is open (Release events are only worth recording then).
inline bool recording() {
  int s = g_trace_status.load(std::memory_order_acquire);
  return s == kTraceOpen || s == kTraceNullSink;
}

// True while tracing may still start (not disabled by configuration or a failure).
inline bool tracing_possible() { return g_trace_status.load(std::memory_order_relaxed) != kTraceOff; }

// The open trace's path (absolute), or nullptr while none is open.
const char* trace_path();

}  // namespace vt
