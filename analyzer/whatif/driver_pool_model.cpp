// See driver_pool_model.h.
#include "driver_pool_model.h"

#include <algorithm>

namespace vt::analyzer {

namespace {
constexpr uint64_t kPage = 2ull << 20;
uint64_t pages(uint64_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }
}  // namespace

DriverPoolModel::DriverPoolModel(uint64_t device_total, double memory_fraction, std::function<uint64_t()> others)
    : total_(device_total),
      allowed_(memory_fraction > 0 ? uint64_t(memory_fraction * double(device_total)) : device_total),
      others_(std::move(others)) {}

bool DriverPoolModel::fits(uint64_t reserved) const {
  uint64_t others = others_ ? others_() : 0;
  return reserved <= allowed_ && reserved + others <= total_;
}

void DriverPoolModel::set_reserved(uint64_t r) {
  if (r > stats_.reserved) stats_.segments_allocated++;
  stats_.reserved = r;
  if (r > stats_.peak_reserved) {
    stats_.peak_reserved = r;
    stats_.unallocated_at_peak = r - std::min(r, stats_.allocated);
    stats_.largest_free_at_peak = stats_.unallocated_at_peak;  // no fragmentation modelled
  }
}

uint64_t DriverPoolModel::malloc(uint64_t size, uint64_t) {
  if (size == 0) size = 1;
  const uint64_t used = stats_.allocated + size;
  uint64_t reserved = std::max(stats_.reserved, pages(used));
  if (!fits(reserved)) {  // PyTorch's retry: synchronize, trim the pool to what is in use, once
    stats_.flushes++;
    set_reserved(pages(stats_.allocated));
    reserved = pages(used);
    if (!fits(reserved)) {
      stats_.ooms++;
      return 0;
    }
  }
  stats_.allocated = used;
  stats_.peak_allocated = std::max(stats_.peak_allocated, used);
  set_reserved(reserved);
  uint64_t h = next_++;
  live_[h] = size;
  return h;
}

void DriverPoolModel::free(uint64_t handle) {
  auto it = live_.find(handle);
  if (it == live_.end()) return;
  stats_.allocated -= it->second;
  live_.erase(it);
}

void DriverPoolModel::empty_cache() { set_reserved(pages(stats_.allocated)); }

uint64_t DriverPoolModel::block_size(uint64_t handle) const {
  auto it = live_.find(handle);
  return it == live_.end() ? 0 : it->second;
}

std::unique_ptr<AllocatorModel> make_allocator_model(const AllocConf& conf, uint64_t device_total, double memory_fraction,
                                                     std::function<uint64_t()> others) {
  if (conf.cuda_malloc_async) return std::make_unique<DriverPoolModel>(device_total, memory_fraction, std::move(others));
  return std::make_unique<CachingAllocatorModel>(conf, device_total, memory_fraction, std::move(others));
}

}  // namespace vt::analyzer
