// The c10 profiler hooks libvramtrace.so exports (interpose/entry/exports.map): libc10_cuda.so binds its
// calls to c10::reportMemoryUsageToProfiler / reportOutOfMemoryToProfiler here, since a preloaded
// library comes first. Only the shared library has them (never the recorder's objects, which test
// binaries link): their bodies are torch_hooks.cpp's.
#include <cstddef>
#include <cstdint>

#include "torch_hooks.h"

#define VT_EXPORT __attribute__((visibility("default")))

// The definitions libc10_cuda.so binds to. The real function is called last, outside any scope
// of ours: whatever it does (throw, allocate, take the GIL) happens as it would without us.
namespace c10 {
VT_EXPORT __attribute__((noinline)) void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size,
                                                                     size_t total_allocated, size_t total_reserved,
                                                                     Device device) {
  vt::torch_block(ptr, alloc_size, total_allocated, total_reserved, int(device.type_), device.index_,
                  reinterpret_cast<uint64_t>(__builtin_return_address(0)));
  if (vt::UsageFn real = vt::real_usage_hook()) real(ptr, alloc_size, total_allocated, total_reserved, device);
}

VT_EXPORT __attribute__((noinline)) void reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated,
                                                                     size_t total_reserved, Device device) {
  vt::torch_oom(alloc_size, total_allocated, total_reserved, int(device.type_), device.index_,
                reinterpret_cast<uint64_t>(__builtin_return_address(0)));
  if (vt::OomFn real = vt::real_oom_hook()) real(alloc_size, total_allocated, total_reserved, device);
}
}  // namespace c10
