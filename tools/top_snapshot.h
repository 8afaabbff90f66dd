// What `vramtrace top` shows, gathered once per refresh: the GPUs NVML sees with their processes,
// and the processes traced by vramtrace on this machine, read from their shared-memory summaries
// (format/shm_layout.h: only the caller's own, live ones; stale ones are removed) with their
// top call sites symbolized from each trace. The text form (--once, a pipe) and the terminal UI
// (tools/tui/) both draw from a TopSnapshot.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu_info.h"
#include "symbolizer.h"
#include "trace_reader.h"

namespace vt::cli {

struct TracedSite {
  uint32_t stack = 0;
  int device = -1;  // -1: all devices together
  uint64_t bytes = 0;
  std::vector<analyzer::Frame> frames;  // innermost first; empty when the trace cannot be read
  std::string label;                    // innermost meaningful frame < its caller
};

struct TracedDevice {
  int index = 0;
  uint64_t live = 0, peak = 0, managed = 0, pinned_host = 0, imported = 0;
};

struct TracedProcess {
  uint64_t pid = 0;
  bool other_namespace = false;  // the writer's pid namespace is not ours
  std::string trace_path;
  std::vector<TracedDevice> devices;  // those with anything live or a peak
  std::vector<TracedSite> sites;      // largest first
  uint64_t live() const;              // device bytes, all devices
  uint64_t peak() const;
};

struct TopSnapshot {
  std::string when;  // local time of the snapshot, "2026-01-02 03:04:05"
  std::vector<GpuInfo> gpus;
  std::string gpus_why;  // why there are none
  std::string user;
  bool root = false;
  std::vector<TracedProcess> processes;  // by /dev/shm name
  int foreign = 0;                       // other users' summaries, not read
};

// Takes snapshots; keeps each trace's reader and symbolizer between them (traces only grow).
class TopSource {
 public:
  TopSnapshot take();

 private:
  struct Labels {
    std::unique_ptr<analyzer::TraceReader> reader;
    std::unique_ptr<analyzer::Symbolizer> sym;
  };
  const std::vector<analyzer::Frame>* frames(const std::string& trace, uint32_t stack);
  std::map<std::string, Labels> cache_;
};

// The text form: what --once prints, and `top` on a pipe at each refresh. Strings escaped.
std::string top_text(const TopSnapshot& s);

}  // namespace vt::cli
