// PyTorch's block layer (torch_hooks.cpp): the bodies of the exported c10 profiler hooks
// (torch_exports.cpp), and the allocator configuration record written when the trace opens.
#pragma once

#include <cstddef>
#include <cstdint>

namespace c10 {
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
// c10::Device (c10/core/Device.h): 2 bytes, trivially copyable, passed in one register.
struct Device {
  DeviceType type_;
  int8_t index_;
};
static_assert(sizeof(Device) == 2);
}  // namespace c10

namespace vt {

// PyTorch's own profiler hooks, which the exported wrappers (torch_exports.cpp) call last: found
// once among the loaded objects (libc10.so's), nullptr when none defines them.
using UsageFn = void (*)(void*, int64_t, size_t, size_t, c10::Device);
using OomFn = void (*)(int64_t, size_t, size_t, c10::Device);
UsageFn real_usage_hook();
OomFn real_oom_hook();

// One block handed out (size > 0) or taken back (size < 0) by PyTorch's caching allocator on
// device `index` of type `type` (c10::DeviceType), with its totals after the change. Checks and
// records it; preserves errno. `caller`: the return address into libc10_cuda (stacks start there).
void torch_block(void* ptr, int64_t size, size_t total_allocated, size_t total_reserved, int type, int index,
                 uint64_t caller);
// PyTorch's out-of-memory report, just before it raises OutOfMemoryError.
void torch_oom(int64_t size, size_t total_allocated, size_t total_reserved, int type, int index, uint64_t caller);

// PyTorch's allocated bytes (torch.cuda.memory_allocated) on CUDA device `device` as of its latest
// block, -1 for all devices summed; the highest since the start or the last reset_tensor_peak
// (device -1: the highest device). -1 when the block layer is not on (no block yet, or off).
int64_t tensor_bytes(int device);
int64_t tensor_peak_bytes(int device);
void reset_tensor_peak(int device);  // to the current figure; device -1: every device

// The request probe and the stream lookup (request_probe.h, current_stream.h) before PyTorch's
// first block, when its allocator is loaded already: called at the first driver lookup (cudart's
// start, which PyTorch's CUDA initialization makes before any allocation), so that the first
// tensor's request is seen too. Otherwise the first block installs them.
void torch_early_probes();

// The PYTORCH_* allocator variables (kTagTorchConfig), when one is set; at trace open.
void write_torch_config(uint64_t t);

}  // namespace vt
