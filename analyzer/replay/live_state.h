// The replay of a trace: which memory is live at each instant, and whose. Applies events in time
// order, by the accounting rules of format/accounting.h (the in-process live tracker applies the
// same rules), and keeps: live allocations by address, VMM handles, mappings and reservations,
// pools and the address ranges they handed out, contexts, live bytes per device and kind, and live
// bytes per (stack, device, kind), and per device the graph pool and graph memory nodes. Memory is
// bounded by live allocations and distinct stacks.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "accounting.h"
#include "address_map.h"
#include "pod_array.h"
#include "thread_shares.h"
#include "trace_reader.h"

namespace vt::analyzer {

using vt::Bucket;
using vt::kBuckets;
const char* bucket_name(Bucket b);

// A live allocation, as the replay keeps it (its address or handle is the map's key): 16 bytes,
// its site row, and its context, pool and kind as a row of AllocAttrs shared by every allocation
// with the same three. With the fields inline (40 bytes, a 56-byte slot at load <= 1/2) a trace
// with 1 M allocations live took ~150 B of RSS per live allocation; with a class row per site
// (context, pool, kind and site: 32 bytes with its chain) a trace where every allocation has a
// new stack took 16 B of RSS more per stack (docs/PERFORMANCE.md, "Many distinct stacks").
struct Alloc {
  static constexpr bool kHasSlotFlag = true;  // address_map.h: the slot's flag is bit 0 of attrs_used
  uint64_t size = 0;
  uint32_t site = 0;        // its row in LiveState::sites()
  uint32_t attrs_used = 0;  // its row in LiveState's AllocAttrs << 1, | 1 while the slot is used
  uint32_t attrs() const { return attrs_used >> 1; }
  bool slot_flag() const { return attrs_used & 1; }
  void set_slot_flag(bool u) { attrs_used = (attrs_used & ~1u) | uint32_t(u); }
};

// What many live allocations share: their context, pool, kind and thread (the one that allocated),
// once per distinct four (the thread fits in what was padding).
struct AllocAttrs {
  uint64_t context = 0;
  uint64_t pool = 0;  // Async: the pool (or 0 for the device's current pool)
  MemKind kind = MemKind::None;
  uint32_t tid = 0;
  bool operator==(const AllocAttrs& o) const {
    return context == o.context && pool == o.pool && kind == o.kind && tid == o.tid;
  }
  template <typename H>
  friend H AbslHashValue(H h, const AllocAttrs& a) {
    return H::combine(std::move(h), a.context, a.pool, uint8_t(a.kind), a.tid);
  }
};
static_assert(sizeof(AllocAttrs) == 24);

// Everything about one live allocation (LiveState::info), for the readers of the live set.
struct AllocInfo {
  uint64_t size = 0;
  uint64_t context = 0;
  uint64_t pool = 0;
  uint32_t stack = 0;
  uint32_t site = 0;
  int32_t device = -1;
  MemKind kind = MemKind::None;
  Bucket bucket = Bucket::Device;
  uint32_t tid = 0;  // the thread that allocated it
};

struct SiteKey {
  uint32_t stack;
  int32_t device;
  Bucket bucket;
  bool operator==(const SiteKey& o) const { return stack == o.stack && device == o.device && bucket == o.bucket; }
  template <typename H>
  friend H AbslHashValue(H h, const SiteKey& k) {
    return H::combine(std::move(h), k.stack, k.device, uint8_t(k.bucket));
  }
};
struct SiteBytes {
  uint64_t bytes = 0;
  uint64_t count = 0;
};

// The replay touches it on every event (address_map.h).
using AllocMap = AddressMap<Alloc>;

// Bytes and count per (stack, device, bucket). Rows are never removed (their number is bounded
// by distinct stacks), so an allocation keeps its row's index and its release needs no lookup.
// Rows whose count fell to zero stay, with zero bytes and count.
// The index is by stack id: ids are dense from 1, so a dense array of each stack's first row,
// and a stack's rows for other devices and buckets chained from it (a stack nearly always
// allocates on one device and bucket). Beside the row (32 bytes, its chain link included) that
// is 4 bytes per stack; the
// hash map it replaces (absl, SiteKey -> row) took ~30 more, a third of the RSS per distinct
// stack left once the stack store was flat (docs/PERFORMANCE.md, "Many distinct stacks").
class SiteTable {
 public:
  struct Row {
    SiteKey key;
    uint32_t next = 0;  // the table's: the next row of the same stack + 1 (0 = none), in what was padding
    SiteBytes b;
  };
  using Rows = PodArray<Row>;
  // Runs for every new allocation class (live_state.h): inlined, the insertion out of line.
  __attribute__((always_inline)) uint32_t row(const SiteKey& k) {
    uint32_t* head = head_of(k.stack);
    for (uint32_t r = head ? *head : 0; r; r = rows_[r - 1].next)
      if (rows_[r - 1].key == k) return r - 1;
    return insert(k);
  }
  SiteBytes& at(uint32_t i) { return rows_[i].b; }
  const Rows& rows() const { return rows_; }
  // The row of `k`, or kNone.
  static constexpr uint32_t kNone = 0xffffffffu;
  uint32_t find_row(const SiteKey& k) const {
    const uint32_t* head = head_of(k.stack);
    for (uint32_t r = head ? *head : 0; r; r = rows_[r - 1].next)
      if (rows_[r - 1].key == k) return r - 1;
    return kNone;
  }
  const SiteBytes* find(const SiteKey& k) const {
    const uint32_t* head = head_of(k.stack);
    for (uint32_t r = head ? *head : 0; r; r = rows_[r - 1].next)
      if (rows_[r - 1].key == k) return &rows_[r - 1].b;
    return nullptr;
  }

 private:
  // The stack's first row + 1 (0 = none yet), nullptr when it has no slot.
  const uint32_t* head_of(uint32_t stack) const {
    if (stack < dense_.size() && dense_[stack]) return &dense_[stack];
    if (!sparse_.empty()) {  // (the array may have grown over ids the hash holds)
      auto it = sparse_.find(stack);
      if (it != sparse_.end()) return &it->second;
    }
    return nullptr;
  }
  uint32_t* head_of(uint32_t stack) { return const_cast<uint32_t*>(std::as_const(*this).head_of(stack)); }
  __attribute__((noinline)) uint32_t insert(const SiteKey& k);
  Rows rows_;
  // Stack id -> its first row + 1. Ids far beyond the rows seen (damaged or hand-made traces: any
  // 32-bit value) go to the hash, so no id sizes the array.
  PodArray<uint32_t> dense_;
  absl::flat_hash_map<uint32_t, uint32_t> sparse_;
};

// Slots for device bytes by op kind: MemKind values, with room to spare (a kind is masked into it).
inline constexpr int kKindSlots = 32;
static_assert(int(MemKind::Sharing) < kKindSlots);
static_assert(int(MemKind::PoolConfig) < kKindSlots);

// Live bytes of one device (-1 = unknown) by bucket, and its device-bucket bytes by op kind.
struct DeviceTotals {
  int32_t device = -1;
  std::array<uint64_t, kBuckets> bytes{};
  std::array<uint64_t, kKindSlots> kinds{};
  // CUDA graphs (format/accounting.h, rules 8 and 9): the driver's graph pool as last sampled
  // (its reserved bytes are also in bytes[Device] and kinds[GraphPool]), and the graph memory
  // nodes made (no memory), of which the stream-ordered allocations captured into graphs.
  uint64_t graph_reserved = 0, graph_used = 0, graph_reserved_max = 0;
  uint64_t graph_nodes = 0, graph_node_bytes = 0;
  uint64_t captured = 0, captured_bytes = 0;
  // Contexts and code (rule 14), by CodeCategory: their own figure, not in bytes[] (signed: a
  // measured cost may be negative; the report shows at least 0).
  std::array<int64_t, size_t(CodeCategory::kCount)> code{};
  // Bumped whenever bytes[Device] changes: two instants with the same version had the same
  // device figures (a driver reading taken after the peak, before anything changed, is the peak's).
  uint64_t version = 0;
  // The before-drop callback wants this device's next drop (watch_next_drop): a peak not yet
  // snapshotted. Without it, a call per free (~15 instructions, issue 43).
  bool drop_watched = false;
};

// A context or code cost (rule 14), as long as it is not given back.
struct CodeEntry {
  uint64_t key = 0, context = 0;
  int32_t device = -1;
  CodeCategory category = CodeCategory::Context;
  int64_t bytes = 0;
  bool after_only = false;  // measured without a `before` (CodeCost::after_only)
  uint64_t t_ns = 0;        // when it was measured
};

class LiveState;

// A live multicast object (format/accounting.h, rule 12): no memory of its own, kept apart.
struct MulticastState {
  uint64_t size = 0, bound = 0;  // its size; the bytes bound to it now
  uint32_t stack = 0;            // where it was created
  int32_t device = -1;           // the creating event's
  uint32_t team = 0, added = 0;  // devices in its team, and added so far
};

// A pool as far as events show it: where its memory counts, the address ranges it handed out
// since it was created or trimmed (its inferred footprint) and the bytes of its live allocations.
// What changed since the last trim is kept too (up to kMaxChanges of each), so that a trim, which
// makes the footprint the pool's live allocations, subtracts what was freed since instead of
// walking every live allocation: a loop that frees and synchronizes each step with many blocks
// live in a threshold-0 pool (the default pool's) paid a pass over all of them per step
// (docs/PERFORMANCE.md, "Release at synchronize").
struct PoolState {
  int32_t device = -1;
  Bucket bucket = Bucket::Device;  // pinned host for a pool at a host location
  bool placed = false;  // created in the trace: its allocations count where it lives (rule 4)
  std::map<uint64_t, uint64_t> extents;  // start -> end, merged
  uint64_t extent_bytes = 0;             // their sum: the footprint
  uint64_t live_bytes = 0;
  uint64_t release_threshold = 0;  // free memory kept at a synchronize (rule 15)
  uint64_t max_size = 0;           // cuMemPoolCreate's maxSize: the pool grows no larger (0: no limit)
  static constexpr size_t kMaxChanges = 1 << 12;  // 96 KiB per pool that never trims
  std::vector<std::pair<uint64_t, uint64_t>> freed_since_trim;  // [start, end) of each free
  std::vector<uint64_t> allocated_since_trim;                    // each allocation's address
  bool changes_dropped = false;  // more than kMaxChanges: the next trim walks the live allocations
  // The two lists sorted, as far as the last largest_free_gap() read them: the lists only grow
  // between trims, so each sample sorts what came since and merges it in (a sort of up to
  // 4096 changes per fragmentation sample was ~10% of a churn report).
  mutable std::vector<std::pair<uint64_t, uint64_t>> freed_sorted;
  mutable std::vector<uint64_t> allocated_sorted;
  void forget_changes() {  // after a trim, or when the lists are dropped
    freed_since_trim.clear();
    allocated_since_trim.clear();
    freed_sorted.clear();
    allocated_sorted.clear();
  }
  uint64_t footprint() const { return extent_bytes; }
  uint64_t largest_free_gap(const LiveState& live) const;
  void merge_extent(uint64_t lo, uint64_t hi);
  void subtract_extent(uint64_t lo, uint64_t hi);
  void clear_extents();
  template <typename V, typename T>
  void note_change(V& list, const T& change) {
    if (changes_dropped) return;
    if (list.size() < kMaxChanges) {
      list.push_back(change);
      return;
    }
    changes_dropped = true;  // (a pool that never trims, PyTorch's: kept no longer)
    std::vector<std::pair<uint64_t, uint64_t>>().swap(freed_since_trim);
    std::vector<uint64_t>().swap(allocated_since_trim);
    std::vector<std::pair<uint64_t, uint64_t>>().swap(freed_sorted);
    std::vector<uint64_t>().swap(allocated_sorted);
  }
};

class LiveState {
 public:
  LiveState() = default;
  LiveState(const LiveState&) = delete;  // (its caches point into its own maps)
  LiveState& operator=(const LiveState&) = delete;
  // Applies one event by the rules of format/accounting.h (a failed one changes nothing);
  // changed() then lists the devices whose totals it changed, and the before-drop callback has
  // run before any device's device-bucket bytes went down (so a peak can be snapshotted first).
  void apply(const Record& r) { apply(r, r.op ? effect_of(*r.op, r) : Effect::None); }
  // The same, `fx` being effect_of(*r.op, r) (the pass works it out once per event).
  void apply(const Record& r, Effect fx);

  // Called before an event lowers the device bytes of `device` (peak bookkeeping).
  using BeforeDrop = void (*)(void* ctx, int device);
  void on_before_drop(BeforeDrop fn, void* ctx) {
    before_drop_ = fn;
    before_drop_ctx_ = ctx;
  }
  // Only a watched device's drop calls it, once: the next one (a device that has totals).
  void watch_next_drop(int device) { device_slot(device).drop_watched = true; }

  uint64_t bytes(int device, Bucket b) const {
    const DeviceTotals* d = find_device(device);
    return d ? d->bytes[int(b)] : 0;
  }
  // Device-bucket bytes summed over all devices.
  uint64_t device_bytes_all() const { return device_all_; }
  // Imported bytes summed over all devices (rule 10), and their highest.
  uint64_t imported_bytes_all() const { return imported_all_; }
  uint64_t imported_max() const { return imported_max_; }
  // Devices whose totals the last apply() changed (usually one).
  const std::vector<int>& changed() const { return changed_; }
  // The allocation the last applied event freed (a free, Effect::Free, that found one): its size
  // and bucket; false for any other event. Read after apply instead of a second lookup.
  bool freed_now(uint64_t* size, Bucket* bucket) const {
    if (!freed_now_) return false;
    *size = freed_size_;
    *bucket = freed_bucket_;
    return true;
  }
  // Every device seen so far, in order of first appearance.
  const std::vector<DeviceTotals>& devices() const { return slots_; }
  const DeviceTotals* find_device(int device) const {
    // The aggregators ask for the devices an event changed: the last one accounted, usually.
    if (device == last_device_) return last_totals_;
    size_t i = size_t(device + 1);  // device -1 (unknown) is index 0
    if (i < kDirect) return direct_[i] < 0 ? nullptr : &slots_[size_t(direct_[i])];
    return find_other_device(device);
  }
  const SiteTable::Rows& sites() const { return sites_.rows(); }
  const SiteTable& site_table() const { return sites_; }
  // The rows of sites() with live allocations (count > 0), in no particular order: what a
  // checkpoint or a peak snapshot reads, so that their cost follows the live sites rather than
  // every stack the trace ever had (a trace where each event has a new stack has millions).
  const PodArray<uint32_t>& held_sites() const { return held_; }
  // Who holds each row of sites(), thread by thread (thread_shares.h).
  const ThreadShares& thread_shares() const { return threads_; }
  const SiteBytes* site(const SiteKey& k) const { return sites_.find(k); }
  const AllocMap& live() const { return live_; }
  // Whether looking up live() misses the caches (then feed_all prefetches a few records ahead).
  bool lookups_miss() const { return live_.beyond_cache(); }
  // Starts loading what apply(r) will look up first (feed_all calls it a few records ahead).
  void prefetch(const Record& r) const {
    if (r.addr) live_.prefetch(r.addr);
  }
  // The whole of a live allocation of live() or vmm_handles().
  AllocInfo info(const Alloc& a) const {
    const AllocAttrs& c = attrs_[a.attrs()];
    const SiteKey& k = sites_.rows()[a.site].key;
    return AllocInfo{a.size, c.context, c.pool, k.stack, a.site, k.device, c.kind, k.bucket, c.tid};
  }
  const AllocMap& vmm_handles() const { return handles_; }
  const absl::flat_hash_map<uint64_t, MulticastState>& multicasts() const { return multicasts_; }
  // Rule 14: the device's memory (its device record), for a context measured without `before`.
  void set_device_total(int device, uint64_t bytes) { totals_[device] = bytes; }
  uint64_t device_total(int device) const {
    auto it = totals_.find(device);
    return it == totals_.end() ? 0 : it->second;
  }
  const std::vector<CodeEntry>& code_costs() const { return code_; }
  // A device's contexts and code, each at least 0.
  uint64_t code_bytes(int device, CodeCategory c) const {
    const DeviceTotals* d = find_device(device);
    return d && d->code[size_t(c)] > 0 ? uint64_t(d->code[size_t(c)]) : 0;
  }
  // Of them, the costs measured without a `before` (a first context: CodeCost::after_only).
  uint64_t code_after_only_bytes(int device) const {
    uint64_t n = 0;
    for (const CodeEntry& c : code_)
      if (c.device == device && c.after_only && c.bytes > 0) n += uint64_t(c.bytes);
    return n;
  }
  const absl::flat_hash_map<uint64_t, PoolState>& pools() const { return pools_; }

  // VMM: mapped ranges (va -> size, physical handle) and reserved ranges (va -> size).
  struct Mapping {
    uint64_t size, handle;
  };
  const std::map<uint64_t, Mapping>& mappings() const { return mappings_; }
  const std::map<uint64_t, uint64_t>& reservations() const { return reservations_; }

  uint64_t reserved_va() const { return reserved_total_; }
  uint64_t mapped_va() const { return mapped_total_; }
  // Their highest so far (kept here, where they rise: a test per VMM event, not two per event).
  uint64_t reserved_va_max() const { return reserved_max_; }
  uint64_t mapped_va_max() const { return mapped_max_; }
  uint64_t handle_bytes_unmapped(int device) const;
  uint64_t pool_cached_bytes(int device) const;
  // Rule 15: a synchronize in a context of `device` (a kTagPoolSync record).
  // Rule 14: NVML listed `others` bytes of other processes on `device` at `t`; a first context
  // measured just before takes them off (first_context_list). Returns the bytes taken off.
  uint64_t other_processes_listed(int device, uint64_t others, uint64_t t);
  void pools_synchronized(int device);  // device pools' inferred footprint minus live bytes

  // Freed by a context teardown rather than by a free (reported apart from leaks).
  const SiteTable::Rows& teardown() const { return teardown_.rows(); }
  uint64_t unmatched_frees() const { return unmatched_frees_; }

 private:
  static constexpr size_t kDirect = 1025;  // devices -1..1023 indexed directly
  void add(uint64_t key, const AllocInfo& a, AllocMap& map);
  void remove_alloc(AllocMap::iterator it, AllocMap& map, bool teardown);
  void drop_context(uint64_t ctx);
  void add_code(const OpInfo& op, const Record& r);
  template <typename Pred>
  void release_code(Pred gone);
  void account(const AllocInfo& a, int64_t sign);
  void graph_pool_sampled(int device, uint64_t reserved, uint64_t used);
  // The pools a trim or attribute of pool `handle` reaches (rules 4 and 15): that pool (the
  // event device's default pool when the trace never saw it), and the default pool of each device
  // whose handle cuMemGetDefaultMemPool named it.
  std::vector<uint64_t> pool_keys(uint64_t handle, int device) const;
  // Each pool in `keys` gives back what it does not use, down to `keep` bytes of footprint
  // (cuMemPoolTrimTo's minBytesToKeep; kKeepThreshold: each pool's release threshold, rule 15):
  // with 0 its footprint becomes its live allocations.
  static constexpr uint64_t kKeepThreshold = ~0ull;
  void trim_pools(const std::vector<uint64_t>& keys, uint64_t keep);
  uint32_t attrs_of(const AllocInfo& a);  // finds or adds a's AllocAttrs row (a.site set)
  __attribute__((noinline)) uint32_t new_attrs(const AllocInfo& a);
  DeviceTotals& device_slot(int device) {  // events come in long runs on one device
    return device == last_device_ ? *last_totals_ : new_device_slot(device);
  }
  DeviceTotals& new_device_slot(int device);
  void dropping(DeviceTotals& d) {  // d's device bytes are about to go down
    if (!d.drop_watched) return;
    d.drop_watched = false;
    if (before_drop_) before_drop_(before_drop_ctx_, d.device);
  }
  const DeviceTotals* find_other_device(int device) const;
  void release_handle(uint64_t handle);
  void unmap(uint64_t va, uint64_t size);
  void free_handle_if_done(uint64_t handle);
  PoolState& pool_of(uint64_t pool, int device);

 public:
  // The pool a stream-ordered request `r` (a failed one too) draws from, by rule 4: the one it
  // names, else its device's current one; nullptr when the trace saw neither.
  const PoolState* request_pool(const Record& r) const;

 private:

  AllocMap live_;     // by address (or array handle)
  AllocMap handles_;  // VMM physical handles
  struct HandleUse {  // a VMM handle's mappings and references (rules 5 and 11)
    uint32_t mappings = 0;
    HandleRefs refs;
  };
  void import_mapped(const Record& map);
  absl::flat_hash_map<uint64_t, MulticastState> multicasts_;  // live multicast objects (rule 12)
  std::map<uint64_t, Mapping> mappings_;                   // va -> mapping
  absl::flat_hash_map<uint64_t, HandleUse> handle_use_;    // handles mapped or released, not yet freed
  std::map<uint64_t, uint64_t> reservations_;        // va -> size
  absl::flat_hash_map<uint64_t, PoolState> pools_;
  absl::flat_hash_map<uint64_t, uint64_t> current_pools_;  // device location -> its current pool (rule 4)
  // The last pool and current pool looked up: stream-ordered allocations come from one pool in
  // long runs (three hash lookups per allocation and free were ~25 instructions per event of
  // churn). pools_ changes only through pool_slot (an insertion moves entries: the slot it
  // returns is cached anew) and the erase in apply (which drops the cache); current_pools_
  // changes drop current_cache_valid_.
  PoolState* pool_cache_ = nullptr;
  uint64_t pool_cache_key_ = 0;
  mutable uint64_t current_cache_location_ = 0, current_cache_pool_ = 0;
  mutable bool current_cache_valid_ = false;
  PoolState& pool_slot(uint64_t key) {
    if (key != pool_cache_key_ || !pool_cache_) {
      pool_cache_ = &pools_[key];
      pool_cache_key_ = key;
    }
    return *pool_cache_;
  }
  const PoolState* find_pool(uint64_t key) {
    if (key == pool_cache_key_ && pool_cache_) return pool_cache_;
    auto it = pools_.find(key);
    if (it == pools_.end()) return nullptr;
    pool_cache_ = &it->second;
    pool_cache_key_ = key;
    return pool_cache_;
  }
  uint64_t current_pool(uint64_t location) const {
    if (current_cache_valid_ && location == current_cache_location_) return current_cache_pool_;
    auto c = current_pools_.find(location);
    current_cache_location_ = location;
    current_cache_pool_ = c == current_pools_.end() ? uint64_t(0) : c->second;
    current_cache_valid_ = true;
    return current_cache_pool_;
  }
  absl::flat_hash_map<uint64_t, uint64_t> default_pools_;  // device location -> its default pool's handle, once named
  std::vector<McBinding> bindings_;                          // multicast bindings (rule 12)
  uint64_t handle_mapped_at(uint64_t va) const;
  void bind(const McBinding& b);
  void unbound(uint64_t handle);
  void drop_bindings(uint64_t mc);
  void forget_current_pool(uint64_t pool);
  std::vector<CodeEntry> code_;
  std::map<int, uint64_t> totals_;  // device -> total bytes
  std::vector<DeviceTotals> slots_;
  std::array<int32_t, kDirect> direct_ = make_direct();  // device + 1 -> index in slots_, -1 = none
  absl::flat_hash_map<int, int32_t> other_;              // the same for devices outside -1..1023
  // The device looked up last and its totals: slots_ grows only in new_device_slot, which sets
  // both (a pointer, not an index: ~16 instructions per event less, issue 43).
  int last_device_ = -2;
  DeviceTotals* last_totals_ = nullptr;
  uint64_t device_all_ = 0, imported_all_ = 0, imported_max_ = 0;
  PodArray<AllocAttrs> attrs_;                       // distinct (context, pool, kind, thread)
  ThreadShares threads_;
  absl::flat_hash_map<AllocAttrs, uint32_t> attrs_index_;  // -> its row in attrs_
  PodArray<uint32_t> site_attrs_;  // site row -> the row of attrs_ its last allocation had + 1 (0 = none)
  static constexpr int kAttrsCacheBits = 10;
  std::array<uint32_t, 1 << kAttrsCacheBits> attrs_cache_{};  // by (site, thread): a row of attrs_ + 1
  SiteTable sites_;
  PodArray<uint32_t> held_;      // rows of sites_ with count > 0
  PodArray<uint32_t> held_pos_;  // row -> its index in held_ + 1 (0 = not held)
  __attribute__((noinline)) void held_change(uint32_t row, bool held);
  SiteTable teardown_;
  uint64_t reserved_total_ = 0, mapped_total_ = 0, unmatched_frees_ = 0;
  uint64_t reserved_max_ = 0, mapped_max_ = 0;
  std::vector<int> changed_;
  bool freed_now_ = false;  // freed_now()
  uint64_t freed_size_ = 0;
  Bucket freed_bucket_ = Bucket::Device;
  BeforeDrop before_drop_ = nullptr;
  void* before_drop_ctx_ = nullptr;

  static std::array<int32_t, kDirect> make_direct() {
    std::array<int32_t, kDirect> a;
    a.fill(-1);
    return a;
  }
};

}  // namespace vt::analyzer
