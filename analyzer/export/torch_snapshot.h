// `vramtrace export --torch-snapshot OUT.pickle TRACE`: a trace as PyTorch's memory snapshot, the
// pickle torch.cuda.memory._dump_snapshot() writes, which pytorch.org/memory_viz,
// torch.cuda._memory_viz and the tools built on them read. Field by field as PyTorch 2.6's
// _snapshot() (docs/torch-snapshot.md says which fields each reader needs):
//   - segments: PyTorch's segments live at the end of the trace, each with its blocks (the live
//     ones `active_allocated`, the free pieces between them `inactive`), and, unless torch_only,
//     every other live device allocation of the process as a segment of its own holding one
//     block, its first frame naming its owner ("<outside PyTorch: libnccl.so.2>"), and the
//     driver's own memory (contexts, modules, the graph pool) a segment each;
//   - device_traces: per device, every action in order, without PyTorch's ring-buffer cap:
//     segment_alloc / segment_free (PyTorch's cudaMalloc and cudaFree), segment_map /
//     segment_unmap (its expandable segments: adjacent pages in a row are one action), alloc, free_requested +
//     free_completed (one after the other: the hook sees the free), oom; memory outside PyTorch as
//     segment_alloc + alloc and free_requested + free_completed + segment_free;
//   - frames: the Python frames first (innermost first), then the native ones, as PyTorch's
//     stacks="all" writes them;
//   - sizes are the requests and streams the blocks' (torch alloc / torch stream alloc records);
//     free blocks and segments' frames follow PyTorch's Block objects (torch_free_blocks.h); what
//     the trace does not have (an older trace, the probes off) is said in the "vramtrace" entry,
//     not guessed;
//   - last, one `snapshot` action per device: the end of the trace, which `segments` describe.
// Without PyTorch's block records (JAX, CuPy, raw CUDA, cudaMallocAsync), every device allocation
// is a segment with one block, and the pickle's "vramtrace" entry says so.
// Two passes over the trace: the first finds which driver allocations held PyTorch's blocks (its
// segments) and reads every stack; the second writes. Memory: the live allocations and blocks,
// the distinct stacks' frames; the actions go to a temporary file per device as they are written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolizer.h"

namespace vt::analyzer {

struct TorchSnapshotOptions {
  bool torch_only = false;     // leave out the memory PyTorch cannot see
  bool native = true;          // native frames after the Python ones
  size_t max_frames = 64;      // per stack (Python frames first)
  SymbolizerOptions symbolizer;
};

struct TorchSnapshotStats {
  bool block_layer = false;  // the trace has PyTorch's block records
  uint64_t actions = 0, segments = 0, blocks = 0, outside_segments = 0, stacks = 0;
  uint64_t blocks_without_segment = 0;  // blocks in no segment the trace knows (should stay 0)
  uint64_t requests_known = 0;          // allocs whose request the trace has (torch alloc records)
  bool streams_known = false;           // the hook looked the streams up (its status record says so)
  std::vector<std::string> problems;    // the reader's
};

// Writes the snapshot of `trace` to `out_path` (analyzer/io/output_file.h: replaced once complete).
// Returns the exit status (0, or 2 with one line in *error).
int export_torch_snapshot_file(const std::string& trace, const std::string& out_path, const TorchSnapshotOptions& opt,
                               std::string* error, TorchSnapshotStats* stats = nullptr);

}  // namespace vt::analyzer
