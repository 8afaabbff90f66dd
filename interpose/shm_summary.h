// A small shared-memory summary of a traced process, for `vramtrace top`: live bytes per device
// and kind, peaks, the call sites holding the most right now (stack ids: `top` symbolizes them
// from the trace file named here). /dev/shm/vramtrace.<pid>, mode 0600, rewritten every 250 ms by
// the sampler thread under a sequence lock, removed at exit. Layout: docs/top.md.
#pragma once

#include <atomic>
#include <cstdint>

namespace vt {

struct ShmSummary {
  char magic[8];                // "VTSHM01"
  uint32_t version;             // 1
  uint32_t size;                // sizeof(ShmSummary)
  std::atomic<uint64_t> seq;    // odd while being written
  uint64_t pid;
  uint64_t updated_realtime_ns;
  char trace_path[1024];
  int64_t live[16][4];          // [device][device, managed, pinned_host, imported]
  int64_t peak[16];
  struct Site {
    uint32_t stack;
    int32_t device;             // -1: all devices together
    int64_t bytes;
  } top[16];
};

// Creates the segment when the trace opens (file mode only); no-op on failure.
void open_shm_summary(const char* trace_path);
// Rewrites it from the live tracker (called by the sampler thread).
void update_shm_summary();
void close_shm_summary();   // at exit
void forget_shm_summary();  // after fork: the child's pid gets its own

}  // namespace vt
