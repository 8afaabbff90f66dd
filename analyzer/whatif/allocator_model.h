// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.6:
// DeviceCachingAllocator) for one device, under any AllocConf: what `vramtrace whatif` replays a
// recorded run's block requests through. It follows the allocator's rules step by step (docs/
// metrics.md, "What if"): the request rounded (512 B, or roundup_power2_divisions), the small
// (<= 1 MiB, 2 MiB segments) and large pools (20 MiB segments for 1-10 MiB, else the request
// rounded to 2 MiB), best fit by (size, address), splitting (small: a remainder of 512 B; large: more
// than 1 MiB, and never a block of max_split_size or more), an oversize block serving a request
// within max_non_split_rounding of it, merging neighbours on free, and on a miss: the garbage
// collection (threshold under a memory fraction), a new segment, then freeing oversize cached
// blocks and retrying, then freeing every unsplit cached block and retrying (the flush), else out
// of memory. Expandable segments: one per pool, mapped in 2 MiB (small) or 20 MiB (large) pages at
// the lowest address that fits, fully free pages unmapped by the flush.
//
// One stream: a trace does not say on which stream a block was allocated (the hook is given the
// block alone), so every block is on one; cross-stream frees (recordStream) are not modelled.
// Segments get made-up addresses, in order; where the real driver gave addresses that sort
// otherwise, a tie between equal free blocks may go another way (rare, and said in docs).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include "alloc_conf.h"

namespace vt::analyzer {

// What a replay drives: PyTorch's native caching allocator (below) or, for
// backend:cudaMallocAsync, the driver's pool (driver_pool_model.h). A handle names a block handed
// out (0: out of memory).
class AllocatorModel {
 public:
  struct Stats {
    uint64_t allocated = 0, reserved = 0;          // now (PyTorch's allocated_bytes, reserved_bytes)
    uint64_t peak_allocated = 0, peak_reserved = 0;
    uint64_t unallocated_at_peak = 0;              // reserved - allocated when reserved peaked
    uint64_t largest_free_at_peak = 0;             // the largest cached block then
    uint64_t flushes = 0;                          // misses that emptied the cache to retry (num_alloc_retries)
    uint64_t ooms = 0;
    uint64_t segments_allocated = 0;               // cudaMalloc calls, or page ranges mapped
  };
  virtual ~AllocatorModel() = default;
  // `stream`: the cudaStream_t the block is handed out on (PyTorch keeps a pool per stream).
  virtual uint64_t malloc(uint64_t size, uint64_t stream = 0) = 0;
  virtual void free(uint64_t handle) = 0;
  virtual void empty_cache() = 0;                  // torch.cuda.empty_cache()
  virtual uint64_t block_size(uint64_t handle) const = 0;
  const Stats& stats() const { return stats_; }

 protected:
  Stats stats_;
};

// The model `settings` name: the driver's pool for backend:cudaMallocAsync, else PyTorch's own.
std::unique_ptr<AllocatorModel> make_allocator_model(const AllocConf& conf, uint64_t device_total, double memory_fraction,
                                                     std::function<uint64_t()> others);

class CachingAllocatorModel final : public AllocatorModel {
 public:
  // `device_total`: the device's memory; `others()` gives what the device holds that is not this
  // allocator's at the moment of a request (other allocations of the process, its contexts,
  // other processes): a segment fits when reserved + others() + its size <= device_total.
  // `memory_fraction` > 0: torch.cuda.set_per_process_memory_fraction (also what makes
  // garbage_collection_threshold act, as in PyTorch).
  CachingAllocatorModel(const AllocConf& conf, uint64_t device_total, double memory_fraction,
                        std::function<uint64_t()> others);
  ~CachingAllocatorModel();
  CachingAllocatorModel(const CachingAllocatorModel&) = delete;
  CachingAllocatorModel& operator=(const CachingAllocatorModel&) = delete;

  // A request of `size` bytes on `stream`; an opaque handle (0: out of memory, after the flush).
  // Blocks of one stream are never handed out on another (PyTorch's pools are per stream: a
  // cached block of stream A does not serve stream B), nor do expandable segments mix streams.
  uint64_t malloc(uint64_t size, uint64_t stream = 0) override;
  void free(uint64_t handle) override;
  void empty_cache() override;

  // The block a handle names: its size (the request rounded, or the unsplit block).
  uint64_t block_size(uint64_t handle) const override;
  uint64_t largest_free_block() const;  // the largest cached block now (torch.cuda cacheInfo)
  void reset_peaks();

  struct Block;
  struct Pool;
  struct Segment;

 private:
  struct Params;
  bool get_free_block(Params& p);
  bool alloc_block(Params& p);
  bool release_available_cached_blocks(const Params& p);
  void release_cached_blocks();
  void release_blocks(Pool& pool);
  void release_block(Block* b);
  void garbage_collect();
  Block* alloc_found_block(Params& p);
  void free_block(Block* b);
  uint64_t try_merge(Block* dst, Block* src, Pool& pool);
  Block* try_allocate_expandable(Pool& pool, uint64_t size, uint64_t stream);
  Block* find_expandable_block(Pool& pool, uint64_t size, uint64_t stream);
  bool map_block(Block* to_map, uint64_t size);
  void unmap_block(Block* b);
  bool device_fits(uint64_t bytes) const;
  uint64_t round_size(uint64_t size) const;
  void note_reserved();
  uint64_t segment_address(uint64_t size);

  AllocConf conf_;
  uint64_t total_;
  uint64_t allowed_;      // the memory fraction's bound (set_fraction), else the device
  bool set_fraction_;
  std::function<uint64_t()> others_;
  std::unique_ptr<Pool> small_, large_;
  std::vector<std::unique_ptr<Segment>> expandable_;
  absl::flat_hash_set<Block*> allocated_;  // handed out: reachable for the destructor
  uint64_t next_address_ = 0x7f0000000000ull;
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> freed_addresses_;  // size -> released segments' addresses
};

}  // namespace vt::analyzer
