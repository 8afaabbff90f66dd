// The recorder: turns Events into trace records. Owns the process's TraceFile, the lazy open on
// the first acquiring call, the per-thread chunk writers, fork handling and the clean-close mark.
// Hot path: one relaxed load, a TLS chunk, ~20 bytes of varints, one release store. No locks.
#pragma once

#include "event.h"

namespace vt {

// Records `e`. Opens the trace on the first Acquire event; drops events while tracing is off.
void record(const Event& e);
// The same with a stack already captured (`frames` as capture_stack gives them).
void record_with_stack(const Event& e, const uint64_t* frames, int n);

// A record of a layer above the driver (PyTorch's block events): `n` varints (at most 10), then
// the stack id of the calling thread's stack from `caller_ip`: at most `max_native` native frames
// (and the configured depth), then its Python frames. Written only while the trace is open (these
// records never open it); call inside a HookScope, nothing of ours held.
void record_layer_event(uint8_t tag, uint64_t t, const uint64_t* fields, int n, uint64_t caller_ip, int max_native);

// Counts `n` events that could not be recorded, in the trace header. Async-signal-safe.
void count_lost_events(uint64_t n);

// True once the trace is open (Release events are only worth recording then).
bool recording();

// True while tracing may still start (not disabled by configuration or a failure).
bool tracing_possible();

}  // namespace vt
