// The writer of this process's shared-memory summary for `vramtrace top` (layout, liveness rules
// and the reader's checks: format/shm_layout.h; docs/top.md).
#pragma once

namespace vt {

// Creates the segment when the trace opens (file mode only), after removing this user's stale
// summaries; no-op on failure. errno is preserved.
void open_shm_summary(const char* trace_path);
// Rewrites it from the live tracker (called by the sampler thread).
void update_shm_summary();
void close_shm_summary();   // at exit
void forget_shm_summary();  // after fork, in the child: drops the parent's mapping (and so its lock)


}  // namespace vt
