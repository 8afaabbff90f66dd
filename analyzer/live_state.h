// The replay of a trace: which memory is live at each instant, and whose. Applies events in time
// order and keeps: live allocations by address, VMM handles, mappings and reservations, pools and
// the address ranges they handed out, contexts, live bytes per device and kind, and live bytes
// per (stack, device, kind). Memory is bounded by live allocations and distinct stacks.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "trace_reader.h"

namespace vt::analyzer {

using vt::Bucket;
using vt::kBuckets;
const char* bucket_name(Bucket b);

struct Alloc {
  uint64_t size = 0;
  uint64_t context = 0;
  uint64_t pool = 0;  // Async: the pool (or 0 for the device's current pool)
  uint64_t t_ns = 0;
  uint32_t stack = 0;
  int32_t device = -1;
  MemKind kind = MemKind::None;
  Bucket bucket = Bucket::Device;
};

struct SiteKey {
  uint32_t stack;
  int32_t device;
  Bucket bucket;
  bool operator==(const SiteKey& o) const { return stack == o.stack && device == o.device && bucket == o.bucket; }
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const {
    return std::hash<uint64_t>()((uint64_t(k.stack) << 32) ^ (uint64_t(uint32_t(k.device)) << 8) ^ uint64_t(k.bucket));
  }
};
struct SiteBytes {
  uint64_t bytes = 0;
  uint64_t count = 0;
};

// A pool as far as events show it: the address ranges it handed out since it was created or
// trimmed (its inferred footprint) and the bytes of its live allocations.
struct PoolState {
  int32_t device = -1;
  std::map<uint64_t, uint64_t> extents;  // start -> end, merged
  uint64_t live_bytes = 0;
  uint64_t footprint() const;
  uint64_t largest_free_gap(const std::unordered_map<uint64_t, Alloc>& live) const;
};

class LiveState {
 public:
  // Applies one event. Returns the device whose device-bucket bytes went down (a release), or -2
  // when none did; lets the caller snapshot a peak before it is left.
  void apply(const Record& r);

  // Called before an event lowers the device bytes of `device` (peak bookkeeping).
  using BeforeDrop = void (*)(void* ctx, int device);
  void on_before_drop(BeforeDrop fn, void* ctx) {
    before_drop_ = fn;
    before_drop_ctx_ = ctx;
  }

  uint64_t bytes(int device, Bucket b) const {
    size_t i = size_t(device + 1);  // device -1 (unknown) is slot 0
    return i < flat_.size() ? flat_[i][int(b)] : 0;
  }
  // Devices whose totals the last apply() changed (usually one).
  const std::vector<int>& changed() const { return changed_; }
  const std::map<int, std::array<uint64_t, kBuckets>>& totals() const { return totals_; }
  const std::unordered_map<SiteKey, SiteBytes, SiteKeyHash>& sites() const { return sites_; }
  const std::unordered_map<uint64_t, Alloc>& live() const { return live_; }
  const std::unordered_map<uint64_t, Alloc>& vmm_handles() const { return handles_; }
  const std::unordered_map<uint64_t, PoolState>& pools() const { return pools_; }

  // Live bytes per device and op kind (device, async, vmm_physical, array, ...).
  const std::map<int, std::array<uint64_t, 16>>& kind_totals() const { return kind_totals_; }

  uint64_t reserved_va() const { return reserved_total_; }
  uint64_t mapped_va() const { return mapped_total_; }
  uint64_t handle_bytes_unmapped(int device) const;
  uint64_t pool_cached_bytes(int device) const;  // inferred pool footprint minus live async bytes

  // Freed by a context teardown rather than by a free (reported apart from leaks).
  const std::unordered_map<SiteKey, SiteBytes, SiteKeyHash>& teardown() const { return teardown_; }
  uint64_t unmatched_frees() const { return unmatched_frees_; }

 private:
  void add(uint64_t key, const Alloc& a, std::unordered_map<uint64_t, Alloc>& map);
  void remove_alloc(std::unordered_map<uint64_t, Alloc>::iterator it, std::unordered_map<uint64_t, Alloc>& map,
                    bool teardown);
  void drop_context(uint64_t ctx);
  void account(const Alloc& a, int64_t sign);
  void maybe_free_handle(uint64_t handle);
  PoolState& pool_of(uint64_t pool, int device);

  std::unordered_map<uint64_t, Alloc> live_;     // by address (or array handle)
  std::unordered_map<uint64_t, Alloc> handles_;  // VMM physical handles
  struct Mapping {
    uint64_t size, handle;
  };
  std::map<uint64_t, Mapping> mappings_;          // va -> mapping
  std::unordered_map<uint64_t, int> handle_maps_;  // handle -> mapping count
  std::unordered_map<uint64_t, bool> released_;   // handle released while still mapped
  std::map<uint64_t, uint64_t> reservations_;     // va -> size
  std::unordered_map<uint64_t, PoolState> pools_;
  std::map<int, std::array<uint64_t, kBuckets>> totals_;
  std::vector<std::array<uint64_t, kBuckets>> flat_;  // the same by device + 1, for bytes()
  std::map<int, std::array<uint64_t, 16>> kind_totals_;
  std::unordered_map<SiteKey, SiteBytes, SiteKeyHash> sites_;
  std::unordered_map<SiteKey, SiteBytes, SiteKeyHash> teardown_;
  uint64_t reserved_total_ = 0, mapped_total_ = 0, unmatched_frees_ = 0;
  std::vector<int> changed_;
  BeforeDrop before_drop_ = nullptr;
  void* before_drop_ctx_ = nullptr;
};

}  // namespace vt::analyzer
