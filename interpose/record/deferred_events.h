// Events of hooks that ran while this thread was inside our own work (a signal handler that
// interrupted a hook: see reentry_guard.h). They may take no lock of ours and must not touch the
// thread's chunk or the live tracker, so they are queued here, lock-free and async-signal-safe,
// and recorded by the interrupted scope when its work is done. A thread borrows a queue from a
// fixed pool only while it holds events; an event that finds no room is counted as lost in the
// trace header (FileHeader::events_lost), never dropped silently. A queued event's stack is its
// call site alone (unwinding from inside our own unwinding is not safe).
#pragma once

#include <cstdint>

#include "event.h"

namespace vt {

struct DeferredQueue;
// __thread, not thread_local: no TLS wrapper call on the hook path (nothing to initialise).
extern __thread DeferredQueue* t_deferred __attribute__((tls_model("initial-exec")));

// Async-signal-safe. False when there was no room: the event was counted as lost.
bool defer_event(const Event& e);
inline bool has_deferred_events() { return t_deferred != nullptr; }
// Records this thread's queued events (kPhaseOurs, nothing of ours held).
void record_deferred_events();
// Hands an empty queue back to the pool (false: it is not empty after all).
bool release_deferred_queue();
// After fork: every queue is free again in the child.
void forget_deferred_events();

}  // namespace vt
