// What is live right now, inside the traced process: bytes per device and bucket, the peak per
// device, and bytes per call site. Fed by the recorder with every event it writes; read by the
// public API (include/vramtrace.h: the pytest plugin's limits) and the shared-memory summary that
// `vramtrace top` shows. The accounting rules are the analyzer's (format/accounting.h), so a live
// figure equals the report's for the same events (tests/unit/accounting_test.cpp replays the
// same sequences through both and compares every figure).
//
// What track_event takes (on the hook path, after the real call returned and after the event
// was encoded; never while unwinding, never two at once, none held across a system call except
// the rare mmap that grows a table):
//   - address-keyed allocations and frees (cuMemAlloc, cuMemFree, the stream-ordered, host,
//     managed, array and IPC calls): no lock. The traced program's frees carry only an address,
//     so the size and place of every live allocation are kept in a lock-free map
//     (live_table.h), which blocks only while one thread grows it (rare: the table doubles).
//   - cuMemAllocFromPoolAsync: additionally reads the pool table without a lock.
//   - cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap: the VMM spinlock (mappings and the handles'
//     release state), released before the handle map is touched.
//   - cuMemPoolCreate, cuMemPoolDestroy: the pool table's spinlock.
//   - a context teardown: none (the map's live entries of that context are taken out one by one).
//   - reservations, trims, lookups, graph nodes and graph pool samples: none (atomics).
// Shared cache lines written per event: once a second thread allocates, none for the byte counts
// (each thread adds to its own counters, live_counters.h, and the peak becomes a figure sampled
// at each query until vramtrace_reset_peak() asks for an exact one); the call site's counter
// when the event has a stack.
// Counters are atomics (relaxed). Memory comes from mmap, never malloc: the hook may run inside
// the program's malloc.
#pragma once

#include <cstdint>

#include "accounting.h"
#include "event.h"
#include "shm_layout.h"

namespace vt {

using format::kTrackedDevices;  // devices 0..15 apart (shm_layout.h); the others (and -1) share a row
inline constexpr int kLiveDevice = int(Bucket::Device);

// Applies an event (a failed one changes nothing: rule 1).
void track_event(const Event& e);

// The row of a device's figures (devices beyond kTrackedDevices, and -1, share the last).
inline int live_row(int device) { return device >= 0 && device < kTrackedDevices ? device : kTrackedDevices; }

// What each op is to the tracker, decided at compile time from the rules: the hot cases are an
// address-keyed allocation or free; a stream-ordered one also checks that it was not captured
// (rule 8: then it is a graph node).
enum class Hot : uint8_t { kOther, kFree, kFreeAsync, kAllocate, kAllocateAsync };
struct HotOp {
  Hot hot;
  uint8_t bucket;
};
constexpr HotOp hot_op(const OpInfo& op) {
  const Effect fx = effect_of(op);
  const bool async = op.kind == MemKind::Async;
  if (fx == Effect::Free) return {async ? Hot::kFreeAsync : Hot::kFree, 0};
  if (fx == Effect::Allocate) return {async ? Hot::kAllocateAsync : Hot::kAllocate, uint8_t(bucket_of(op.kind))};
  return {Hot::kOther, 0};
}
constexpr bool is_hot(HookId id) { return hot_op(kOps[int(id)]).hot != Hot::kOther; }

// The hot cases' work on the live map (live_tracker.cpp; out of line: they are the map's).
void track_address_added(uint64_t key, uint64_t size, uint64_t context, uint32_t stack, uint8_t row, uint8_t bucket);
void track_address_removed(uint64_t key);
// What a stream-ordered allocation's placement takes of its Event (rule 4: placed by its pool),
// copied out so that the hook's Event keeps its fields in registers (event.h, copy_of).
struct PoolAllocation {
  uint64_t addr, size, context, aux;  // aux: the pool, where the op names it (kEvAux in fields)
  uint32_t stack;
  int32_t device;
  uint8_t fields, bucket;
};
inline PoolAllocation pool_allocation(const Event& e, uint8_t bucket) {
  return {e.addr, e.size, e.context, e.aux, e.stack, e.device, e.fields, bucket};
}
void track_pool_allocation(const PoolAllocation& a);

inline bool captured_async(const Event& e) { return (e.fields & format::kEvAux2) && e.aux2 != 0; }

// track_event for a hot op known at compile time, inlined into its hook (recorder.h): the
// dispatch on the op folds away. The same rules, in the same order, as track_event's.
template <HookId Id>
__attribute__((always_inline)) inline void track_hot(const Event& e) {
  constexpr HotOp h = hot_op(kOps[int(Id)]);
  static_assert(h.hot != Hot::kOther, "track_hot is for allocations and frees by address");
  if (!changes_memory(e.result)) return;  // rule 1
  if constexpr (h.hot == Hot::kFree || h.hot == Hot::kFreeAsync) {
    if (h.hot == Hot::kFreeAsync && captured_async(e)) return;
    if (is_memory_key(e.addr)) track_address_removed(e.addr);
  } else if constexpr (h.hot == Hot::kAllocateAsync) {
    if (!captured_async(e) && is_memory_key(e.addr)) track_pool_allocation(pool_allocation(e, h.bucket));
  } else {
    if (is_memory_key(e.addr)) track_address_added(e.addr, e.size, e.context, e.stack, uint8_t(live_row(e.device)), h.bucket);
  }
}

int64_t live_bytes(int device, int bucket);  // device -1: all devices; a device >= kTrackedDevices: the shared row
int64_t peak_bytes(int device);              // device bucket; -1: the highest row (live_counters.h: exact or sampled)
void reset_peak(int device);     // -1: every device; from then on the peak is exact (live_counters.h)

// Live device bytes of stack id `stack`, all devices (ids above the table size share slot 0).
int64_t site_bytes(uint32_t stack);
inline constexpr uint32_t kTrackedStacks = 1u << 16;

// Pools created in the trace that the tracker places (by their location) at once, live at the
// same time; allocations from pools beyond count on their event's device (the analyzer has no
// such limit: the figures then differ).
inline constexpr int kTrackedPools = 256;

// The device pools created or named in this run that live on `device` (at most `max`): the
// pools whose figures an allocation failure reads (pool_usage.h). Lock-free.
int tracked_device_pools(int32_t device, uint64_t* out, int max);

void forget_live_state();  // after fork: the child starts with nothing live

}  // namespace vt
