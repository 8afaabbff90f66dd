// backend:cudaMallocAsync, as `vramtrace whatif` replays it: PyTorch hands each request to
// cudaMallocAsync on the device's default memory pool (c10/cuda/CUDAMallocAsyncAllocator.cpp),
// whose release threshold it sets to the maximum, so the pool keeps what it reserved until
// torch.cuda.empty_cache() or a failed allocation trims it (cudaMemPoolTrimTo) before one retry.
// The pool's own allocator is the driver's and is not published: it is modelled as VMM-backed
// without fragmentation, reserving 2 MiB pages as its use grows (reserved = the most in use since
// the last trim, rounded up to 2 MiB), a trim taking it down to what is in use. The figures are
// an approximation, and the output says so.
#pragma once

#include <cstdint>
#include <functional>

#include <absl/container/flat_hash_map.h>

#include "allocator_model.h"

namespace vt::analyzer {

class DriverPoolModel final : public AllocatorModel {
 public:
  DriverPoolModel(uint64_t device_total, double memory_fraction, std::function<uint64_t()> others);
  uint64_t malloc(uint64_t size, uint64_t stream = 0) override;  // (one pool: streams are not modelled)
  void free(uint64_t handle) override;
  void empty_cache() override;
  uint64_t block_size(uint64_t handle) const override;

 private:
  bool fits(uint64_t reserved) const;
  void set_reserved(uint64_t r);
  uint64_t total_, allowed_;
  std::function<uint64_t()> others_;
  absl::flat_hash_map<uint64_t, uint64_t> live_;  // handle -> size
  uint64_t next_ = 1;
};

}  // namespace vt::analyzer
