// A stand-in for PyTorch's libc10_cuda.so: a small caching allocator shaped like
// DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp), over the simulated driver
// (tests/fakecuda), reporting every block it hands out and takes back to libc10.so's profiler
// hooks, which it imports (linked -z now, like the real one). Per device, under one recursive
// mutex held across the report (as PyTorch does):
//   - sizes round to 512 B; requests up to 1 MiB come from 2 MiB "small" segments, up to 10 MiB
//     from 20 MiB segments, larger ones get a segment of their own rounded to 2 MiB;
//   - the best-fitting free block of the pool is split (small: a remainder of >= 512 B; large:
//     > 1 MiB); frees merge with free neighbours, so a segment whose blocks are all free is one
//     block again, and free space inside a segment that still holds a block is an inactive split;
//   - when cuMemAlloc fails, every cached segment that is entirely free is cuMemFree'd and the
//     allocation retried (a cache flush); when that fails too, reportOutOfMemoryToProfiler is
//     called and the call returns 0 with PyTorch's OutOfMemoryError text in fc10_oom_message().
// Its own figures (fc10_stats) are computed from its blocks, independently of vramtrace, so a
// test can compare the report with them.
//
// FAKE_C10_MODE (read by fc10_init) makes it misreport, for the fallback tests:
//   bad_totals    from the 10th report on, total_allocated is 512 B too high
//   unaligned     from the 10th report on, the size reported is 1 B larger
//   bad_reserved  from the 10th report on, total_reserved is 2 MiB too high
//   cpu_events    every allocation is also reported once for a CPU device (must be ignored)
//   stray_block   from the 10th report on, addresses are reported 1 TiB off (in no segment)
// Variants (CMakeLists.txt): FAKE_C10_OLD_SIGNATURE calls the old (ptr, size, device) function;
// FAKE_C10_ABSENT calls nothing.
#include <cuda.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#define FAKE_EXPORT __attribute__((visibility("default")))

namespace c10 {
enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
struct Device {
  DeviceType type_;
  int8_t index_;
};
#if defined(FAKE_C10_OLD_SIGNATURE)
void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, Device device);
#elif !defined(FAKE_C10_ABSENT)
void reportMemoryUsageToProfiler(void* ptr, int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                                 Device device);
void reportOutOfMemoryToProfiler(int64_t alloc_size, size_t total_allocated, size_t total_reserved, Device device);
#endif
}  // namespace c10

namespace {

constexpr uint64_t kMinBlockSize = 512;
constexpr uint64_t kSmallSize = 1 << 20;
constexpr uint64_t kSmallBuffer = 2 << 20;
constexpr uint64_t kLargeBuffer = 20 << 20;
constexpr uint64_t kMinLargeAlloc = 10 << 20;
constexpr uint64_t kRoundLarge = 2 << 20;

struct Segment;
struct Block {
  uint64_t ptr, size;
  bool allocated = false;
  bool small;
  Block *prev = nullptr, *next = nullptr;
  Segment* seg;
};
struct Segment {
  uint64_t base, size;
};
struct BySize {
  bool operator()(const Block* a, const Block* b) const { return a->size != b->size ? a->size < b->size : a->ptr < b->ptr; }
};

enum Mode { kNormal, kBadTotals, kUnaligned, kBadReserved, kCpuEvents, kStrayBlock };
Mode g_mode = kNormal;

struct DeviceAllocator {
  std::recursive_mutex mu;
  int index = 0;
  CUcontext ctx = nullptr;
  std::set<Block*, BySize> small_free, large_free;
  std::unordered_map<uint64_t, Block*> active;
  std::set<Segment*> segments;
  uint64_t allocated = 0, reserved = 0;
  uint64_t reports = 0;
};
std::vector<DeviceAllocator*> g_devices;
std::atomic<uint64_t> g_errno_changed{0};  // reports after which errno was not what it was before
thread_local char t_oom_message[1024];

uint64_t round_size(uint64_t s) { return s < kMinBlockSize ? kMinBlockSize : (s + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize; }
uint64_t allocation_size(uint64_t s) {
  if (s <= kSmallSize) return kSmallBuffer;
  if (s < kMinLargeAlloc) return kLargeBuffer;
  return (s + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// PyTorch's format_size (c10/core/Allocator.h): bytes up to 1 KiB, then KiB, MiB, GiB with 2 decimals.
std::string format_size(uint64_t size) {
  char b[64];
  if (size <= 1024)
    snprintf(b, sizeof b, "%llu bytes", static_cast<unsigned long long>(size));
  else if (size <= 1048576)
    snprintf(b, sizeof b, "%.2f KiB", double(size) / 1024.0);
  else if (size <= 1073741824ull)
    snprintf(b, sizeof b, "%.2f MiB", double(size) / 1048576.0);
  else
    snprintf(b, sizeof b, "%.2f GiB", double(size) / 1073741824.0);
  return b;
}

void report(DeviceAllocator& d, uint64_t ptr, int64_t size) {
  uint64_t n = ++d.reports;
  uint64_t allocated = d.allocated, reserved = d.reserved;
  if (n >= 10 && g_mode == kBadTotals) allocated += 512;
  if (n >= 10 && g_mode == kUnaligned) size += size > 0 ? 1 : -1;
  if (n >= 10 && g_mode == kBadReserved) reserved += 2 << 20;
  if (n >= 10 && g_mode == kStrayBlock) ptr += 1ull << 40;
  c10::Device dev{c10::DeviceType::CUDA, int8_t(d.index)};
#if defined(FAKE_C10_OLD_SIGNATURE)
  (void)allocated, (void)reserved;
  c10::reportMemoryUsageToProfiler(reinterpret_cast<void*>(ptr), size, dev);
#elif !defined(FAKE_C10_ABSENT)
  errno = 4242 + int(n % 7);  // the program's errno must come back as it was (the stand-in libc10 keeps it)
  int before = errno;
  c10::reportMemoryUsageToProfiler(reinterpret_cast<void*>(ptr), size, allocated, reserved, dev);
  if (errno != before) g_errno_changed.fetch_add(1);
  if (g_mode == kCpuEvents && size > 0)
    c10::reportMemoryUsageToProfiler(reinterpret_cast<void*>(0x1000), 3, 3, 0, c10::Device{c10::DeviceType::CPU, -1});
#else
  (void)dev, (void)allocated, (void)reserved, (void)ptr, (void)size;
#endif
}

std::set<Block*, BySize>& pool_of(DeviceAllocator& d, bool small) { return small ? d.small_free : d.large_free; }

Block* new_segment(DeviceAllocator& d, uint64_t alloc_size, bool small) {
  CUdeviceptr p = 0;
  if (cuMemAlloc(&p, alloc_size) != CUDA_SUCCESS) return nullptr;
  auto* seg = new Segment{uint64_t(p), alloc_size};
  d.segments.insert(seg);
  d.reserved += alloc_size;
  return new Block{uint64_t(p), alloc_size, false, small, nullptr, nullptr, seg};
}

// Frees every cached segment that is one free block (PyTorch's release_cached_blocks).
void release_cached(DeviceAllocator& d) {
  for (auto* pool : {&d.small_free, &d.large_free}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {
        ++it;
        continue;
      }
      cuMemFree(CUdeviceptr(b->ptr));
      d.reserved -= b->size;
      d.segments.erase(b->seg);
      delete b->seg;
      delete b;
      it = pool->erase(it);
    }
  }
}

bool should_split(const Block* b, uint64_t size) {
  uint64_t remaining = b->size - size;
  return b->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
}

uint64_t device_malloc(DeviceAllocator& d, uint64_t orig) {
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  cuCtxSetCurrent(d.ctx);
  uint64_t size = round_size(orig);
  bool small = size <= kSmallSize;
  auto& pool = pool_of(d, small);
  uint64_t alloc_size = allocation_size(size);
  Block key{};
  key.ptr = 0;
  key.size = size;
  Block* b = nullptr;
  auto it = pool.lower_bound(&key);
  if (it != pool.end()) {
    b = *it;
    pool.erase(it);
  }
  if (!b) b = new_segment(d, alloc_size, small);
  if (!b) {
    release_cached(d);  // a cache flush, then the retry
    b = new_segment(d, alloc_size, small);
  }
  if (!b) {
    size_t free_b = 0, total_b = 0;
    cuMemGetInfo(&free_b, &total_b);
#if !defined(FAKE_C10_OLD_SIGNATURE) && !defined(FAKE_C10_ABSENT)
    c10::reportOutOfMemoryToProfiler(int64_t(size), d.allocated, d.reserved, c10::Device{c10::DeviceType::CUDA, int8_t(d.index)});
#endif
    snprintf(t_oom_message, sizeof t_oom_message,
             "CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. Of the "
             "allocated memory %s is allocated by PyTorch, and %s is reserved by PyTorch but unallocated. If reserved "
             "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
             "fragmentation.",
             format_size(alloc_size).c_str(), d.index, format_size(total_b).c_str(), format_size(free_b).c_str(),
             format_size(d.allocated).c_str(), format_size(d.reserved - d.allocated).c_str());
    return 0;
  }
  if (should_split(b, size)) {
    Block* front = new Block{b->ptr, size, false, small, b->prev, b, b->seg};
    if (b->prev) b->prev->next = front;
    b->prev = front;
    b->ptr += size;
    b->size -= size;
    pool.insert(b);
    b = front;
  }
  b->allocated = true;
  d.allocated += b->size;
  d.active[b->ptr] = b;
  report(d, b->ptr, int64_t(b->size));
  return b->ptr;
}

int device_free(DeviceAllocator& d, uint64_t ptr) {
  std::lock_guard<std::recursive_mutex> lock(d.mu);
  auto it = d.active.find(ptr);
  if (it == d.active.end()) return -1;
  Block* b = it->second;
  d.active.erase(it);
  b->allocated = false;
  d.allocated -= b->size;
  uint64_t orig_size = b->size;
  auto& pool = pool_of(d, b->small);
  for (Block* n : {b->prev, b->next}) {  // merge with free neighbours
    if (!n || n->allocated) continue;
    pool.erase(n);
    if (n == b->prev) {
      b->ptr = n->ptr;
      b->prev = n->prev;
      if (b->prev) b->prev->next = b;
    } else {
      b->next = n->next;
      if (b->next) b->next->prev = b;
    }
    b->size += n->size;
    delete n;
  }
  pool.insert(b);
  report(d, ptr, -int64_t(orig_size));
  return 0;
}

DeviceAllocator* device(int i) { return i >= 0 && size_t(i) < g_devices.size() ? g_devices[size_t(i)] : nullptr; }

// PyTorch's allocator object, as vramtrace's request probe finds it (interpose/torch/request_probe.h):
// c10::Allocator's virtual table begins with the two destructors and allocate(n), which returns a
// DataPtr (a class with a destructor: returned through a hidden pointer). Tensors are allocated
// through it (fc10_malloc), on the thread's current device. (Named types: the exported variable
// must not have internal linkage.)
thread_local int t_current_device = 0;
}  // namespace
namespace fake_c10 {
struct DataPtr {
  void* ptr = nullptr;
  void* ctx = nullptr;
  void (*deleter)(void*) = nullptr;
  ~DataPtr() {}
};
struct Allocator {
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t n) = 0;
  virtual void copy_data(void* dest, const void* src, size_t count) const { memcpy(dest, src, count); }
};
struct FakeCachingAllocator final : Allocator {
  DataPtr allocate(size_t n) override {
    DataPtr p;
    DeviceAllocator* d = device(t_current_device);
    p.ptr = reinterpret_cast<void*>(d ? device_malloc(*d, n) : 0);
    return p;
  }
};
FakeCachingAllocator g_caching_allocator;
}  // namespace fake_c10

namespace c10::cuda::CUDACachingAllocator {
FAKE_EXPORT std::atomic<fake_c10::Allocator*> allocator{&fake_c10::g_caching_allocator};
}

// The thread's current stream, as vramtrace's block hook asks libc10_cuda.so for it
// (interpose/torch/current_stream.h): c10::cuda::getCurrentCUDAStream(DeviceIndex) returns a
// CUDAStream (a Device and a StreamId, 16 bytes), CUDAStream::stream() its cudaStream_t. Here the
// StreamId is the cudaStream_t itself, set per thread and device by fc10_set_stream.
namespace {
thread_local uint64_t t_stream[8];
}
namespace c10::cuda {
class FAKE_EXPORT CUDAStream {
 public:
  CUDAStream(int8_t device, int64_t id) : device_type_(1), device_(device), id_(id) {}
  void* stream() const;

 private:
  int8_t device_type_, device_;
  int64_t id_;
};
void* CUDAStream::stream() const { return reinterpret_cast<void*>(id_); }
FAKE_EXPORT CUDAStream getCurrentCUDAStream(int8_t device) {
  return CUDAStream(device, device >= 0 && device < 8 ? int64_t(t_stream[device]) : 0);
}
}  // namespace c10::cuda

extern "C" {

// Creates the primary context of `devices` devices. 0 on success.
FAKE_EXPORT int fc10_init(int devices) {
  const char* m = getenv("FAKE_C10_MODE");
  if (m && strcmp(m, "bad_totals") == 0) g_mode = kBadTotals;
  if (m && strcmp(m, "unaligned") == 0) g_mode = kUnaligned;
  if (m && strcmp(m, "bad_reserved") == 0) g_mode = kBadReserved;
  if (m && strcmp(m, "cpu_events") == 0) g_mode = kCpuEvents;
  if (m && strcmp(m, "stray_block") == 0) g_mode = kStrayBlock;
  if (cuInit(0) != CUDA_SUCCESS) return -1;
  for (int i = 0; i < devices; ++i) {
    auto* d = new DeviceAllocator;
    d->index = i;
    CUdevice dev;
    if (cuDeviceGet(&dev, i) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&d->ctx, dev) != CUDA_SUCCESS) return -1;
    g_devices.push_back(d);
  }
  return 0;
}

// The calling thread's current stream on `dev` from now on (0: the default stream).
FAKE_EXPORT void fc10_set_stream(int dev, uint64_t stream) {
  if (dev >= 0 && dev < 8) t_stream[dev] = stream;
}

// A block of at least `size` bytes on `dev`; 0 when out of memory (fc10_oom_message says why).
FAKE_EXPORT uint64_t fc10_malloc(int dev, uint64_t size) {
  if (!device(dev)) return 0;
  t_current_device = dev;
  fake_c10::DataPtr p = c10::cuda::CUDACachingAllocator::allocator.load()->allocate(size);
  return reinterpret_cast<uint64_t>(p.ptr);
}

// fc10_malloc after holding the device's allocator mutex for `ms` milliseconds (the deadlock
// probe: another thread, holding the GIL, waits for that mutex meanwhile).
FAKE_EXPORT uint64_t fc10_slow_malloc(int dev, uint64_t size, int ms) {
  DeviceAllocator* d = device(dev);
  if (!d) return 0;
  std::lock_guard<std::recursive_mutex> lock(d->mu);
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
  return device_malloc(*d, size);
}

// `pairs` malloc/free pairs of `size` bytes (a cached block after the first: block events only, no
// driver call) and the thread CPU nanoseconds they took (the machine is shared: wall time would
// count other processes); -1 if one failed (bench/run_torch_bench.sh).
__attribute__((noinline)) FAKE_EXPORT int fc10_bench_loop(int dev, uint64_t size, int pairs) {
  DeviceAllocator* d = device(dev);
  int bad = !d;
  for (int i = 0; i < pairs && d; ++i) {
    uint64_t p = device_malloc(*d, size);
    bad |= !p || device_free(*d, p) != 0;
  }
  return bad;
}
FAKE_EXPORT double fc10_bench_time(int dev, uint64_t size, int pairs) {
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  int bad = fc10_bench_loop(dev, size, pairs);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  return bad ? -1.0 : double(b.tv_sec - a.tv_sec) * 1e9 + double(b.tv_nsec - a.tv_nsec);
}

FAKE_EXPORT int fc10_free(int dev, uint64_t ptr) {
  DeviceAllocator* d = device(dev);
  return d ? device_free(*d, ptr) : -1;
}

FAKE_EXPORT void fc10_empty_cache(int dev) {
  if (DeviceAllocator* d = device(dev)) {
    std::lock_guard<std::recursive_mutex> lock(d->mu);
    cuCtxSetCurrent(d->ctx);
    release_cached(*d);
  }
}

// PyTorch's CachingHostAllocator (libtorch_cuda.so in PyTorch): pinned host memory taken from the
// driver for pin_memory=True and kept for reuse until exit (never freed). The address; 0 on failure.
FAKE_EXPORT uint64_t fc10_host_alloc(uint64_t size) {
  DeviceAllocator* d = device(0);
  void* p = nullptr;
  if (!d || cuCtxSetCurrent(d->ctx) != CUDA_SUCCESS || cuMemHostAlloc(&p, size, 0) != CUDA_SUCCESS) return 0;
  return uint64_t(reinterpret_cast<uintptr_t>(p));
}

FAKE_EXPORT const char* fc10_oom_message() { return t_oom_message; }

// 1 while the allocator object's virtual table is its own (vramtrace's request probe gives it a
// copy: interpose/torch/request_probe.h; VRAMTRACE_TORCH_REQUESTS=0 must leave it alone).
FAKE_EXPORT int fc10_vtable_intact() {
  fake_c10::FakeCachingAllocator fresh;
  return *reinterpret_cast<void**>(&fake_c10::g_caching_allocator) == *reinterpret_cast<void**>(&fresh);
}

// Blocks handed out and taken back on `dev` so far (each one a report to libc10.so).
FAKE_EXPORT uint64_t fc10_reports(int dev) {
  DeviceAllocator* d = device(dev);
  return d ? d->reports : 0;
}

// What reached libc10.so's real functions (through vramtrace when it is preloaded).
uint64_t fake_c10_usage_calls();
uint64_t fake_c10_oom_calls();
FAKE_EXPORT uint64_t fc10_forwarded_usage() { return fake_c10_usage_calls(); }
FAKE_EXPORT uint64_t fc10_forwarded_oom() { return fake_c10_oom_calls(); }
FAKE_EXPORT uint64_t fc10_errno_changes() { return g_errno_changed.load(); }

// The allocator's own figures, as memory_stats() defines them: out[0] allocated, [1] reserved,
// [2] inactive split (free bytes in segments that hold an allocated block), [3] segments,
// [4] largest free block, [5] allocated blocks.
FAKE_EXPORT void fc10_stats(int dev, uint64_t* out) {
  DeviceAllocator* d = device(dev);
  memset(out, 0, 6 * sizeof *out);
  if (!d) return;
  std::lock_guard<std::recursive_mutex> lock(d->mu);
  std::unordered_map<Segment*, std::pair<uint64_t, uint64_t>> per_seg;  // allocated, free
  for (auto& [p, b] : d->active) per_seg[b->seg].first += b->size;
  for (auto* pool : {&d->small_free, &d->large_free})
    for (Block* b : *pool) {
      per_seg[b->seg].second += b->size;
      if (b->size > out[4]) out[4] = b->size;
    }
  for (auto& [s, af] : per_seg)
    if (af.first) out[2] += af.second;
  out[0] = d->allocated;
  out[1] = d->reserved;
  out[3] = d->segments.size();
  out[5] = d->active.size();
}

}  // extern "C"
