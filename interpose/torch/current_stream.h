// The CUDA stream a PyTorch block is handed out on. PyTorch's caching allocator keeps a pool per
// stream and its own recorder (memory snapshots) gives every block, segment and action its stream;
// c10::reportMemoryUsageToProfiler (torch_hooks.cpp) is not told it. A tensor's allocate(n) takes
// the calling thread's current stream on the block's device: the block hook, on the same thread
// inside the same allocate, asks libc10_cuda.so for that stream with the exported functions
// PyTorch itself uses, c10::cuda::getCurrentCUDAStream(DeviceIndex) and CUDAStream::stream().
// They read a thread-local table (no lock, no CUDA call, no allocation once streams are set up,
// which the allocate that called us already did).
//
// Not seen: a block PyTorch hands out on a stream it is given rather than the current one
// (raw_alloc_with_stream: rare, cuDNN/cub workspaces take the current stream too) is shown on the
// current stream. Without the functions (another architecture's ABI, a PyTorch that renamed them,
// VRAMTRACE_TORCH_REQUESTS=0) every block is on stream 0, PyTorch's default stream.
#pragma once

#include <cstdint>

namespace vt {

// Once, beside install_request_probe (`skip`: an address inside libvramtrace.so). True when both
// functions were found outside libvramtrace.so. Not thread-safe: the caller runs it once.
bool resolve_current_stream(const void* skip);

// The calling thread's current stream on `device` (a cudaStream_t's value: 0 the default stream);
// 0 when resolve_current_stream found nothing.
uint64_t current_stream(int device);

}  // namespace vt
