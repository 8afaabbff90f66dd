// Where a stream-ordered pool may have given memory back: at a synchronize, a pool keeps at most
// its release threshold of free memory (format/accounting.h, rule 15). This component owns the
// mark that such a release is possible (set by stream-ordered frees and release-threshold
// changes) and the kTagPoolSync record the first successful synchronize after it writes (for
// the calling context's device), so that a program that synchronizes without freeing writes
// nothing and the analyzer's pool footprints follow the driver's.
#pragma once

#include <atomic>

namespace vt {

extern std::atomic<bool> g_pool_release_possible;
// Set at the first stream-ordered allocation: from then on a cuMemFree may give one back to its
// pool too (cuMemFree of stream-ordered memory is allowed), so it sets the mark as well.
extern std::atomic<bool> g_stream_ordered_seen;

// On the hook path of every stream-ordered free: one load of a line written once per
// synchronize that finds the mark set, not per event.
inline void pool_memory_freed() {
  if (!g_pool_release_possible.load(std::memory_order_relaxed))
    g_pool_release_possible.store(true, std::memory_order_relaxed);
}

inline void stream_ordered_allocated() {
  if (!g_stream_ordered_seen.load(std::memory_order_relaxed)) g_stream_ordered_seen.store(true, std::memory_order_relaxed);
}
// A successful cuMemFree: it may have been of stream-ordered memory (nothing to do before any).
inline void plain_memory_freed() {
  if (g_stream_ordered_seen.load(std::memory_order_relaxed)) pool_memory_freed();
}

// After a successful synchronize, outside our own work: writes the record when the mark was set.
void pools_synchronized();

void forget_pool_sync();  // after fork

}  // namespace vt
