// The recorder: turns Events into trace records. Owns the process's TraceFile, the lazy open on
// the first acquiring call, the per-thread chunk writers, fork handling and the clean-close mark.
// Hot path: one relaxed load, a TLS chunk, ~20 bytes of varints, one release store; no lock is
// held while the stack is unwound. Locks an event can take, after unwinding, one at a time:
//   - the live tracker's shard spinlock, once per successful event (interpose/live_tracker.h
//     lists which call takes which);
//   - the module map's mutex, once per stack seen for the first time (its frames are checked
//     against the modules known; a rescan only when a library was loaded since: module_map.cpp);
//   - the trace file's growth mutex, once per new 1 MiB window (trace_file.cpp), and the open
//     mutex on the first acquiring call (the lazy open).
#pragma once

#include "event.h"

namespace vt {

// Records `e`. Opens the trace on the first Acquire event; drops events while tracing is off.
void record(const Event& e);
// The same with a stack already captured (`frames` as capture_stack gives them).
void record_with_stack(const Event& e, const uint64_t* frames, int n);

// Counts `n` events that could not be recorded, in the trace header. Async-signal-safe.
void count_lost_events(uint64_t n);

// True once the trace is open (Release events are only worth recording then).
bool recording();

// True while tracing may still start (not disabled by configuration or a failure).
bool tracing_possible();

// The open trace's path (absolute), or nullptr while none is open.
const char* trace_path();

}  // namespace vt
