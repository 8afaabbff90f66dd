// The PyTorch aggregator: PyTorch's caching allocator in its own terms, from the block records
// (torch_records.h) laid over the driver-level segments. It keeps every live block by address
// inside the segment (cuMemAlloc) or expandable segment (mapped VMM range) that holds it, so that
// at every instant it knows, per device, what memory_stats() would say — allocated, reserved,
// inactive split, the largest free block (docs/metrics.md, "PyTorch") — and checks the records
// against the driver's view as it goes: every block inside a known segment, no two blocks
// overlapping, the running sums equal to the allocator's totals. The first disagreement turns
// the PyTorch figures off for the trace (the report says why; driver-level figures stay).
//
// Per device it reports: the allocated peak (snapshotted lazily, like the peak aggregator: when
// a free is about to go below a new high) with the live tensors by call site and the segment
// view, the reserved peak, fragmentation at its worst moment, a timeline of allocated / reserved
// / inactive split; the figures at every vramtrace region mark; at each PyTorch OOM the same view
// plus the memory of this process outside PyTorch and the tensor sites that grew before it; and
// the tensor sites that grew over the run (aggregators/growth_rule.h).
//
// Cost: nothing for traces without PyTorch (one branch per event); with it, the segments are
// taken from the replay at the first block record, then every block costs a few ordered-map and
// hash operations; snapshots cost the distinct call sites and the segments, never the blocks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include "aggregators/first_and_latest.h"
#include "aggregators/growth_rule.h"
#include "aggregators/leaks.h"
#include "aggregators/timeline.h"
#include "live_state.h"
#include "report_model.h"
#include "torch_records.h"

namespace vt::analyzer {

class TorchAggregator {
 public:
  TorchAggregator(uint64_t own_pid, size_t top, size_t timeline_points)
      : own_pid_(own_pid), top_(top), timeline_points_(timeline_points) {}
  TorchAggregator(const TorchAggregator&) = delete;
  TorchAggregator& operator=(const TorchAggregator&) = delete;

  // A record with a torch tag (is_torch_record); `live` is the replay at that instant.
  void on_record(const Record& r, const LiveState& live);
  // After each successful driver event has been applied (segments come and go).
  void after(const Record& r) {
    if (__builtin_expect(tracking_, 0)) driver_event(r);
  }
  // A failed driver allocation that ran out of memory (PyTorch's first attempt, or its retry after
  // freeing the cache): what num_alloc_retries counts.
  void on_failed(const Record& r);
  // NVML's process list of a device at t: PyTorch's latest OOM there without one takes it (the
  // recorder reads it as PyTorch does for its message).
  void on_gpu_processes(const GpuProcessList& list, uint64_t t);
  // A vramtrace region mark: the figures of every device, named.
  void on_mark(uint64_t t, const RegionMark& mark);
  // PyTorch's allocated bytes now, all devices (memory_allocated summed); false while the block
  // layer is not followed (no block yet, or the analysis turned it off).
  bool allocated_now(uint64_t* bytes) const {
    if (!tracking_ || !valid_) return false;
    *bytes = allocated_all_;
    return true;
  }
  // One device's figures now (memory_stats()'s current values), false as allocated_now: what the
  // Perfetto export draws after every record, so its counters are these figures exactly.
  bool figures_now(int device, TorchFigures* out) const {
    if (!tracking_ || !valid_) return false;
    *out = figures(device);
    return true;
  }
  // `--at`: the segments and blocks of every device as they are now.
  void take_live_at();
  // At the end, before the leaks are counted: what of the process's live driver memory is
  // PyTorch's (its segments: the cache and the tensors in it), and the tensors still allocated.
  AllocatorAtExit at_exit(const LiveState& live) const;
  // rep->torch, and each PyTorch OOM attached to the failed driver call it followed (or added).
  // After the OOM and kernel activity aggregators have finished.
  void finish(TraceReport* rep);

 private:
  struct Region {  // a contiguous range blocks can live in: a segment, or merged mapped VMM ranges
    uint64_t hi = 0;
    uint64_t owner = 0;  // the segment's address, or the VMM reservation's
    int device = -1;
    bool expandable = false;
    uint64_t allocated = 0, blocks = 0;
    std::multiset<uint64_t> gaps;  // the free pieces between its blocks
  };
  struct Owner {  // a segment, or an expandable segment (one VMM reservation)
    int device = -1;
    bool expandable = false;
    bool torch = false;  // has held a block: PyTorch's, counted in reserved
    uint64_t bytes = 0;  // its size, or its mapped bytes
    uint32_t stack = 0;
  };
  struct Block {
    uint64_t size = 0;
    uint32_t stack = 0;
    uint32_t site = 0;  // row in sites_
    uint32_t tid = 0;   // by this thread
    uint64_t t = 0;     // handed out then
  };
  struct SiteSnap {
    uint64_t t = 0, total = 0;
    std::vector<std::pair<uint32_t, uint64_t>> rows;  // (row in sites_, bytes), bytes > 0
  };
  struct Dev {
    uint64_t allocated = 0, reserved = 0, inactive = 0, segments = 0, blocks = 0;
    uint64_t freed = 0;  // bytes taken back so far
    std::vector<SiteSnap> snaps;  // the tensor timeline's finished buckets
    SiteSnap bucket;              // the current bucket's high so far
    bool bucket_pending = false;  // the current state is a new bucket high not yet snapshotted
    uint64_t last_block_t = 0;
    std::multiset<uint64_t> gaps;  // free pieces of PyTorch's regions on this device
    uint64_t peak = 0, peak_t = 0, peak_reserved = 0, peak_reserved_t = 0;
    bool pending = false;  // a new allocated peak not yet snapshotted
    TorchView peak_view;
    uint64_t worst_waste = 0, worst_t = 0;
    TorchFigures worst;
    uint64_t ooms = 0;
    std::unique_ptr<Timeline> allocated_tl, reserved_tl, inactive_tl;
  };
  struct PendingOom {
    TorchOom rec;
    uint64_t t = 0;
    uint32_t stack = 0;
    TorchOomInfo info;
    uint64_t process_device_bytes = 0;
    std::map<std::string, uint64_t> process_by_kind;
    uint64_t since = 0;  // the device's last block before it: failed driver calls after it are this request's
    bool nvml = false;
    GpuProcessList processes;  // NVML's list as PyTorch read it for its message
  };

  uint64_t allocated_all_ = 0;  // every device's allocated, summed

  void start_tracking(const LiveState& live);
  void driver_event(const Record& r);
  void on_block(uint64_t t, uint32_t tid, const TorchBlock& b);
  void on_oom(uint64_t t, const TorchOom& o, const LiveState& live);
  void invalidate(uint64_t t, const std::string& why);

  void add_region(uint64_t lo, uint64_t hi, uint64_t owner, int device, bool expandable);
  void remove_range(uint64_t lo, uint64_t hi, uint64_t t);  // unmapped or freed: the regions in it
  void rebuild_gaps(std::map<uint64_t, Region>::iterator it);
  void gap_add(Region& g, uint64_t v);
  void gap_remove(Region& g, uint64_t v);
  void make_torch(uint64_t owner_key, Owner& o, uint64_t t);
  uint64_t inactive_of(const Region& g, uint64_t lo) const;
  absl::flat_hash_set<uint64_t> torch_vmm_handles(const LiveState& live) const;

  TorchFigures figures(int device) const;
  TorchView view(int device, uint64_t t) const;
  void after_block(uint64_t t, int device, bool allocation);
  void judge_fragmentation(uint64_t t, int device);
  Dev& dev(int device) { return devs_[device]; }

  uint64_t own_pid_;
  size_t top_, timeline_points_;
  bool seen_ = false;      // any torch record
  bool tracking_ = false;  // segments are being followed (from the first block record)
  bool valid_ = true;
  uint64_t invalid_t_ = 0;
  std::string invalid_why_;
  TorchStatus status_;
  bool status_seen_ = false;
  TorchConfig config_;
  bool config_seen_ = false;
  uint64_t block_events_ = 0, oom_events_ = 0;

  std::map<uint64_t, Region> regions_;  // by start, disjoint
  absl::flat_hash_map<uint64_t, Owner> owners_;
  std::map<uint64_t, uint64_t> reservations_;  // VMM reservations: start -> end
  std::map<uint64_t, Block> blocks_;           // live blocks by address
  std::map<int, Dev> devs_;
  SiteTable sites_;  // live tensor bytes per (stack, device)
  ThreadShares threads_;  // and per thread
  absl::flat_hash_set<uint32_t> segment_stacks_;  // where PyTorch's segments were allocated
  SiteCheckpoints checkpoints_;
  std::vector<std::vector<std::pair<int, uint64_t>>> freed_at_;  // per checkpoint: (device, Dev::freed)
  bool expandable_seen_ = false;
  uint64_t freed_between(int device, size_t from, size_t to, const std::vector<std::pair<int, uint64_t>>* now) const;
  // num_alloc_retries per device, kept apart from devs_: a failed driver allocation of another
  // library on a device PyTorch never used must not make it one of PyTorch's devices.
  struct Retries {
    uint64_t count = 0;
    bool failed_in_request = false;  // a driver allocation failed since the device's last block
  };
  absl::flat_hash_map<int, Retries> retries_;
  std::vector<uint64_t> row_freed_;  // bytes taken back so far, per row of sites_
  // Per checkpoint, row_freed_ of the sites whose value changed since the one before (so a run with
  // many distinct tensor stacks keeps what changed, not every site at every checkpoint);
  // site_freed(i) is the latest value at or before checkpoint i.
  std::vector<SiteSnapshot> site_freed_at_;
  std::vector<uint64_t> row_freed_seen_;  // row_freed_ at the last checkpoint
  SiteSnapshot site_freed_changes();
  SiteSnapshot site_freed_now() const;
  FirstOwner first_owner() const;  // for growing_sites: a tensor site's first thread
  TorchGrowth growth_of(const GrowthHit& h, const std::vector<const SiteSnapshot*>& series, const std::vector<uint64_t>& times,
                        const std::vector<std::pair<int, uint64_t>>* now_freed, const SiteSnapshot* now_site_freed) const;
  std::vector<TorchGrowth> grown_until(uint64_t t, uint64_t min_growth) const;
  std::vector<TorchMark> marks_;
  // The tensor timeline: per device and time bucket, live bytes per site at the bucket's highest
  // allocated (taken lazily, like the peak: before the first free after a new bucket high).
  // Buckets start 1 ms wide and double whenever a device has more than 2 x kTensorSnaps.
  static constexpr size_t kTensorSnaps = 512;
  SiteSnap site_snapshot(int device, uint64_t t) const;
  void next_bucket();
  uint64_t snap_t0_ = 0, snap_width_ = 1'000'000, snap_next_ = 0, last_block_t_ = 0;
  FirstAndLatest<PendingOom> ooms_;  // bounded (first_and_latest.h)
  bool live_at_taken_ = false;
  std::vector<TorchLiveDevice> live_at_;
};

}  // namespace vt::analyzer
