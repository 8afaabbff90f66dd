// A stand-in for PyTorch's libc10.so: the two profiler hooks the CUDA caching allocator reports
// to, with PyTorch's exact signatures (c10/core/Allocator.h), counting the calls that reach them
// (a preloaded libvramtrace.so takes the calls and must forward them here). Built in three
// variants (tests/torch/CMakeLists.txt):
//   default        both functions, today's signature
//   FAKE_C10_OLD_SIGNATURE  only the old (ptr, size, device) form of reportMemoryUsageToProfiler
//   FAKE_C10_ABSENT         neither (a future PyTorch that dropped them)
#include <atomic>
#include <cstdint>
#include <cstdio>

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace c10 {
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
// c10::Device: 2 bytes, trivially copyable, passed in a register.
struct Device {
  DeviceType type_;
  int8_t index_;
};
static_assert(sizeof(Device) == 2);
}  // namespace c10

namespace {
std::atomic<uint64_t> g_usage{0}, g_oom{0};
std::atomic<int64_t> g_last_size{0};
std::atomic<uint64_t> g_last_allocated{0}, g_last_reserved{0};
std::atomic<int> g_last_device{-1};
}  // namespace

namespace c10 {
#if !defined(FAKE_C10_ABSENT) && !defined(FAKE_C10_OLD_SIGNATURE)
FAKE_EXPORT void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, size_t total_allocated,
                                             size_t total_reserved, Device device) {
  (void)ptr;
  g_last_size.store(alloc_size);
  g_last_allocated.store(total_allocated);
  g_last_reserved.store(total_reserved);
  g_last_device.store(int(device.type_) << 8 | uint8_t(device.index_));
  g_usage.fetch_add(1);
}
FAKE_EXPORT void reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                                             Device device) {
  g_last_size.store(alloc_size);
  g_last_allocated.store(total_allocated);
  g_last_reserved.store(total_reserved);
  g_last_device.store(int(device.type_) << 8 | uint8_t(device.index_));
  g_oom.fetch_add(1);
}
#endif
#if defined(FAKE_C10_OLD_SIGNATURE)
// PyTorch 1.x: no totals.
FAKE_EXPORT void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, Device device) {
  (void)ptr;
  (void)device;
  g_last_size.store(alloc_size);
  g_usage.fetch_add(1);
}
#endif
}  // namespace c10

extern "C" {
// What reached the real functions: calls, and the arguments of the last one (device as type << 8 | index).
FAKE_EXPORT uint64_t fake_c10_usage_calls() { return g_usage.load(); }
FAKE_EXPORT uint64_t fake_c10_oom_calls() { return g_oom.load(); }
FAKE_EXPORT int64_t fake_c10_last_size() { return g_last_size.load(); }
FAKE_EXPORT uint64_t fake_c10_last_allocated() { return g_last_allocated.load(); }
FAKE_EXPORT uint64_t fake_c10_last_reserved() { return g_last_reserved.load(); }
FAKE_EXPORT int fake_c10_last_device() { return g_last_device.load(); }
}
