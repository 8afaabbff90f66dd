// Kernel activity (CUPTI) as the rest of libvramtrace sees it: two calls. Everything else in
// cupti/ is private to this feature. The records: format/activity_records.h; the policies:
// docs/trace-format.md, "Kernel activity records".
// (Not named cupti.h: this directory is on the include path and would shadow the toolkit's.)
#pragma once

#include <cstdint>

namespace vt::cupti {

// Called once when the trace opens (interpose/record/trace_session.cpp, open_trace), on the opening thread,
// with the opening event's time `t`. `enabled` is Config::kernels (VRAMTRACE_KERNELS),
// `memory_activity` Config::cupti_memory (VRAMTRACE_CUPTI_MEMORY: the MEMORY2 kind). Starts a
// helper thread (signals blocked) that loads libcupti and then flushes it every 100 ms; never
// blocks the caller, never loads a library on the caller's thread. Writes one kCuptiUnavailable
// status record when off. The final forced flush needs no call from the trace's close path: an
// exit handler registered once CUPTI is up runs before CUPTI's and cudart's own; the library
// destructor would be too late (libcupti, loaded after us, is finalised before it).
void start(bool enabled, bool memory_activity, uint64_t t);

// For interpose/entry/dlsym_hook.cpp: `found` is what dlsym(handle, name) returned for a name starting
// with "cupti"; returns our wrapper instead when `name` is one we watch (wrapped_list.h), and
// remembers `found` as the function that wrapper forwards to. Otherwise returns `found`.
void* swap_dlsym(const char* name, void* found);

}  // namespace vt::cupti
