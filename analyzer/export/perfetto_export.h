// `vramtrace export --perfetto OUT.json TRACE`: a trace as Chrome trace-event JSON, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. One pass over the trace, written as it
// is read (memory: live allocations, open NVTX ranges, kernel names, the instants to draw: a
// few per counter interval), so large traces export.
//
// What is drawn (pid = CUDA device ordinal, the host process = its pid):
//   - counters ("C"): "driver memory" per device, one series per kind (device, managed,
//     pinned_host, imported), replayed with LiveState; with PyTorch's block records, PyTorch's
//     figures per device ("PyTorch allocated", "PyTorch reserved", "PyTorch inactive split"),
//     computed by the report's own PyTorch aggregator and drawn at every record that changes one
//     (never thinned: their maxima are max_memory_allocated / max_memory_reserved);
//   - slices ("X"): kernels, memcpys and memsets on a track per (device, stream);
//   - NVTX ranges ("X") on a track per thread of the host process, NVTX marks ("i");
//   - instants ("i"): every failed allocation, and allocations of at least alloc_threshold
//     bytes, with op, size, address and the user's line (args.site); the call stack is "sf",
//     a node of the top-level "stackFrames" prefix tree (perfetto_stacks.h); PyTorch's tensors
//     (blocks handed out) of at least alloc_threshold bytes likewise, cat "tensor". Instants are
//     written after the pass, once every stack record has been read;
//   - instants on the host process: vramtrace region marks (cat "region"), written in the pass,
//     and the moment PyTorch's figures stopped, when they did (cat "pytorch").
// otherData.pytorch says whether PyTorch's figures were drawn (the report's torch.layer) and each
// device's peaks.
// otherData holds the trace's identity, the kernel recorder's state (recorded, stepped aside,
// lost records) and, when CUPTI reported allocations, the coverage cross-check (CoverageStream).
// Aggregation, so big traces stay usable (also described in docs/trace-format.md, "Perfetto export"):
//   - driver counters: at most two samples per device per counter_interval (the window's highest
//     total at its instant, then the window's last value), so peaks are never smoothed away;
//   - allocations below the threshold are not drawn one by one (the counters include them);
//   - equal large (or failed) allocations (device, stack, op, size) in one counter interval are
//     one instant with args.count, and so are equal large tensors (device, stack, size);
//   - kernels and copies shorter than min_slice (default 0: off) merge, per stream, with their
//     short neighbours less than min_slice apart into one "N kernels" slice.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "symbolizer.h"

namespace vt::analyzer {

struct PerfettoOptions {
  uint64_t counter_interval_ns = 100'000;        // 100 us
  uint64_t alloc_threshold_bytes = 64ull << 20;  // 64 MiB
  uint64_t min_slice_ns = 0;
  bool stacks = true;
  size_t max_frames = 24;
  SymbolizerOptions symbolizer;
};

struct PerfettoStats {
  uint64_t counter_samples = 0, kernels = 0, copies = 0, merged_slices = 0, nvtx_ranges = 0;
  uint64_t instants = 0, allocations_not_drawn = 0, allocations_merged = 0;
  uint64_t torch_samples = 0, tensor_instants = 0, tensors_not_drawn = 0, tensors_merged = 0;  // PyTorch's
  std::vector<std::string> problems, damage;  // the reader's (damage: those that lost records)
};

// Writes the JSON for `trace` to `out`. Returns false with one line in *error when the trace
// cannot be opened; a damaged trace exports what is intact (problems in the JSON's otherData).
bool export_perfetto(const std::string& trace, std::ostream& out, const PerfettoOptions& opt, PerfettoStats* stats,
                     std::string* error);

// The same into a file (analyzer/io/output_file.h: replaced only once all of it was written).
// Returns the process exit status.
int export_perfetto_file(const std::string& trace, const std::string& out_path, const PerfettoOptions& opt,
                         std::string* error, PerfettoStats* stats = nullptr);

}  // namespace vt::analyzer
