// PyTorch's block layer (torch_hooks.cpp): the bodies of the exported c10 profiler hooks, and
// the allocator configuration record written when the trace opens.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt {

// One block handed out (size > 0) or taken back (size < 0) by PyTorch's caching allocator on
// device `index` of type `type` (c10::DeviceType), with its totals after the change. Checks and
// records it; preserves errno. `caller`: the return address into libc10_cuda (stacks start there).
void torch_block(void* ptr, int64_t size, size_t total_allocated, size_t total_reserved, int type, int index,
                 uint64_t caller);
// PyTorch's out-of-memory report, just before it raises OutOfMemoryError.
void torch_oom(int64_t size, size_t total_allocated, size_t total_reserved, int type, int index, uint64_t caller);

// The PYTORCH_* allocator variables (kTagTorchConfig), when one is set; at trace open.
void write_torch_config(uint64_t t);

}  // namespace vt
