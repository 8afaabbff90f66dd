// What a report says in PyTorch's own terms (memory_stats(), memory_summary(), the OutOfMemoryError
// message), as plain data: filled by the PyTorch aggregator (aggregators/torch_blocks.h) from the
// block records, judged by torch_verdict.h, rendered by torch_render.cpp. Formulas:
// docs/metrics.md, "PyTorch"; JSON names: docs/report-schema.md, "torch".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolizer.h"

namespace vt::analyzer {

struct SiteGroup;  // report_model.h

// Of a group's bytes (report_model.h's SiteGroup, a growth), what one thread allocated.
struct ThreadShare {
  uint32_t tid = 0;
  uint64_t bytes = 0;
  std::string name;  // the thread's name as the trace recorded it ("" when none)
};

// `from`'s shares added to `to`'s (groups merged by line), biggest first.
void add_thread_shares(std::vector<ThreadShare>& to, const std::vector<ThreadShare>& from);

// One device at one instant, as torch.cuda.memory_stats() counts it.
struct TorchFigures {
  uint64_t allocated = 0;           // live blocks: allocated_bytes.all.current
  uint64_t reserved = 0;            // segments (expandable: their mapped bytes): reserved_bytes.all.current
  uint64_t inactive_split = 0;      // free bytes inside non-expandable segments that hold a live block
  uint64_t largest_free_block = 0;  // the largest free piece of any segment
  uint64_t segments = 0, blocks = 0;
  uint64_t reserved_unallocated() const { return reserved > allocated ? reserved - allocated : 0; }
};

// One segment at an instant: a cudaMalloc'd segment, or an expandable segment's mapped range.
struct TorchSegment {
  uint64_t address = 0, size = 0;
  uint64_t allocated = 0, blocks = 0;
  uint64_t largest_free = 0;
  bool expandable = false;
  uint32_t stack_id = 0;     // where it was allocated (the driver call)
  std::vector<Frame> stack;
  uint64_t free() const { return size > allocated ? size - allocated : 0; }
};

// The state of a device at the peak, at an OOM: figures, the live tensors by call site (merged by
// the user's line once symbolized), and the segments with the most free space.
struct TorchView {
  int device = -1;
  uint64_t t_ns = 0;
  TorchFigures figures;
  std::vector<SiteGroup> holders;
  std::vector<TorchSegment> segments;  // most free space first
  uint64_t segments_not_shown = 0;
};

// A tensor line whose live bytes kept rising (the growth rule of docs/metrics.md, over block events).
struct TorchGrowth {
  uint32_t stack_id = 0;
  std::vector<Frame> stack;
  int device = -1;
  uint64_t bytes = 0, growth_bytes = 0, count = 0;
  int new_highs = 0;
  uint64_t first_t_ns = 0, last_t_ns = 0;
  uint64_t kept_bytes = 0;       // of the growth, what it kept across iterations (its floor's rise; metrics.md)
  uint64_t freed_meanwhile = 0;  // bytes other lines allocated and gave back on that device while it grew
  std::vector<ThreadShare> threads;  // whose own tensors there grew (their growth), when several threads allocated
  uint32_t threads_at_site = 0;      // with threads: the threads that allocated tensors there
};

// PyTorch's OutOfMemoryError: the figures of its message, what we saw, and why it did not fit.
struct TorchOomInfo {
  uint64_t t_ns = 0;
  int device = -1;
  uint64_t block_size = 0;         // the rounded request the allocator could not place
  uint64_t tried_to_allocate = 0;  // the segment it asked the driver for ("Tried to allocate")
  uint64_t device_total = 0, device_free = 0;  // cudaMemGetInfo, as in the message
  uint64_t allocated = 0, reserved = 0;         // the allocator's totals at the failure
  TorchView view;
  uint64_t outside_bytes = 0;  // device memory of this process outside PyTorch's segments
  std::vector<SiteGroup> outside;  // by call site (named by library once symbolized)
  std::vector<TorchGrowth> grew_before;
  std::string message;  // PyTorch's figures, as its message words them
  int driver_attempts = 0;  // failed driver allocations of this request (2: before and after the cache flush)
  bool fits_in_a_free_block = false;  // (never true at a real OOM: for the evidence)
};

// A named instant (a vramtrace region's begin or end): the figures of every device with blocks,
// and what memory_stats() counts since the start: the peaks (max_memory_allocated/reserved, never
// reset here: torch.cuda.reset_peak_memory_stats() is not seen), the allocation retries (a request
// whose first attempt failed and that freed the cache to try again: num_alloc_retries) and the
// OutOfMemoryErrors (num_ooms).
struct TorchMark {
  std::string name;
  bool begin = false;
  uint64_t t_ns = 0;
  int device = -1;
  TorchFigures figures;
  uint64_t peak_allocated = 0, peak_reserved = 0;
  uint64_t alloc_retries = 0, ooms = 0;
};

// PyTorch's memory at a chosen instant (`--at`): every segment with every live block, address by
// address, each block with its call site (like torch.cuda.memory._snapshot(), without free blocks).
struct TorchLiveBlock {
  uint64_t address = 0, size = 0;
  uint32_t stack_id = 0;
  std::string line;  // the user's line, once symbolized
  uint64_t t_ns = 0;  // when PyTorch handed it out (a test's own tensors are those since its start)
};
struct TorchLiveSegment {
  uint64_t address = 0, size = 0;
  bool expandable = false;
  std::vector<TorchLiveBlock> blocks;  // by address
};
struct TorchLiveDevice {
  int device = -1;
  TorchFigures figures;
  std::vector<TorchLiveSegment> segments;  // by address
};

// Live tensor bytes by line over time (like memory_viz's Active Memory Timeline, aggregated so
// that it stays small at millions of blocks): the state at the end of each time bucket.
struct TorchLineSeries {
  uint32_t stack_id = 0;
  std::vector<Frame> stack;
  std::string line;  // set once symbolized (the user's line)
  std::vector<uint64_t> values;  // one per time
};
struct TorchTensorTimeline {
  std::vector<uint64_t> t_ns;
  std::vector<TorchLineSeries> lines;  // the biggest lines (by their highest bytes), biggest first
  std::vector<uint64_t> other;         // every other line, summed
};

struct TorchDevice {
  int device = -1;
  uint64_t peak_allocated = 0, peak_allocated_t_ns = 0;  // max_memory_allocated
  uint64_t peak_reserved = 0, peak_reserved_t_ns = 0;    // max_memory_reserved
  TorchView peak;  // at the allocated peak
  // Fragmentation at its worst: the moment, while tensors were being placed, with the most
  // inactive split (free memory inside segments that still hold tensors).
  uint64_t worst_fragmentation_t_ns = 0;
  TorchFigures worst_fragmentation;
  double worst_fragmentation_ratio = 0;  // inactive split / reserved
  uint64_t end_allocated = 0, end_reserved = 0;
  // Timeline (max-preserving, like the report's): allocated, reserved, inactive split.
  std::vector<std::pair<uint64_t, uint64_t>> allocated_points, reserved_points, inactive_split_points;
  TorchTensorTimeline tensors;
};

struct TorchReport {
  bool present = false;  // any torch record, or libc10_cuda.so in the process
  // The allocator's mode: "caching allocator", "caching allocator, expandable segments",
  // "cudaMallocAsync backend", "caching disabled (PYTORCH_NO_CUDA_MEMORY_CACHING)".
  std::string mode;
  // The block layer: "on" (figures below), "off" (the recorder or the analysis turned it off:
  // driver-level figures only), "unavailable" (libc10_cuda.so was loaded, segments appeared, no
  // block event ever came: a PyTorch that changed the call), "not used" (the mode needs none).
  std::string layer;
  std::string layer_detail;  // where calls were forwarded, or why it is off / unavailable
  bool forwarded = false;
  uint64_t invalid_t_ns = 0;  // when the analysis turned it off (0: it did not)
  std::string alloc_conf, no_caching;  // PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF), PYTORCH_NO_CUDA_MEMORY_CACHING
  uint64_t block_events = 0, oom_events = 0;
  bool expandable_seen = false;  // blocks lived in expandable segments (mapped VMM ranges)
  std::vector<TorchDevice> devices;
  std::vector<TorchMark> marks;
  std::vector<TorchGrowth> growth;  // over the whole run
  bool live_at_taken = false;            // `--at` was asked and the block layer was on then
  std::vector<TorchLiveDevice> live_at;  // its segments and blocks
  bool figures() const { return layer == "on"; }
};

}  // namespace vt::analyzer
