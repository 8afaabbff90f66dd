// The accounting rules, written once: for every event, what memory it makes live or frees, under
// which key, on which device and in which bucket, and when a VMM release really frees. Used by
// the two replays of the same events — the in-process live tracker (interpose/live_tracker.cpp:
// `vramtrace top`, the query API, the pytest plugin's limits) and the analyzer's replay
// (analyzer/live_state.cpp: every report) — so that they cannot disagree; the data structures
// differ (the tracker's are lock-light and heap-free on the hook path), the rules do not.
// tests/unit/accounting_test.cpp replays the same sequences, fixed and random, through both and
// compares every figure. Header-only: the preload library and the analyzer both include it.
// The CUDA semantics behind each rule: docs/metrics.md, "Accounting rules".
//
// The rules:
//  1. Only successful calls change memory (a failed call changed nothing in the driver). An OOM is
//     an acquire that failed with CUDA_ERROR_OUT_OF_MEMORY (is_out_of_memory).
//  2. Keys: memory of the address-keyed kinds (device, pitch, managed, pinned and registered host,
//     stream-ordered, arrays, IPC imports) is known by the address its acquire returned and its
//     release passes; VMM physical memory by its handle, in a key space of its own (a handle never
//     matches an address). Key 0 is no memory (a successful acquire always returns an address;
//     0 only comes from a damaged trace).
//  3. A second acquire at a live key means its free was not seen: the old allocation is dropped
//     before the new one counts (a new VMM handle starts unreleased; a mapping at a mapped address
//     replaces the old mapping). A release of a key that is not live changes nothing.
//  4. Device and bucket (bucket_of): the event's device (its context's), except that
//     - VMM physical memory counts where its location says (placement_at): on that device for a
//       device location, in the pinned-host bucket of the event's device for a host location;
//     - a stream-ordered allocation counts where its pool lives (from_pool): a pool created in the
//       trace is placed by its location like VMM memory (cuMemPoolCreate with a host location
//       makes pinned memory); cuMemAllocFromPoolAsync names its pool; cuMemAllocAsync takes the
//       device's current pool, whose handle the trace does not hold, so it counts on the event's
//       device (default_pool_key), as does an allocation from a pool the trace did not see
//       created (created before tracing started, or already destroyed).
//  5. VMM physical memory is freed when its handle has been released AND its last mapping is
//     unmapped, whichever comes last (cuMemRelease: "the memory allocation will be freed when all
//     outstanding mappings to the memory are unmapped and when all outstanding references to the
//     handle are also released"): PyTorch's expandable segments and XLA release the handle right
//     after mapping it, and the memory stays until the unmap. cuMemUnmap(va, size) removes every
//     mapping that starts inside [va, va + size).
//  6. A context teardown (cuCtxDestroy, cuDevicePrimaryCtxReset, the last
//     cuDevicePrimaryCtxRelease; torn_down_context) frees every address-keyed allocation made in
//     that context. VMM physical memory belongs to no context (its handle and its location
//     name it; it can be mapped into any context's address space) and stays until rule 5.
//  7. Pools, mappings and reservations hold no memory of their own: a pool's footprint is what
//     its allocations took; VMM memory is its physical handles.
//  8. CUDA graphs. A graph memory node (cuGraphAddMemAllocNode, cuGraphAddNode(_v2) of type
//     MEM_ALLOC) and a stream-ordered allocation made while its stream captured a graph (the
//     recorder marks it captured: aux2 = 1) hold a virtual address and no memory: they never
//     count as live, in a peak or as a leak, only in the device's graph node count and bytes
//     (graph_node_device). Their frees (free nodes, captured frees) change nothing: a captured
//     free of memory allocated outside the graph frees it only when the graph runs, which no
//     call shows (docs/metrics.md).
//  9. The graph pool. The driver takes the memory of graph allocations at upload and launch with
//     no API call; the graph ops carry a sample of the device's graph pool (size: reserved
//     bytes, aux: used bytes, cuDeviceGetGraphMemAttribute's *_MEM_CURRENT) taken after the call.
//     A sample sets the pool's figures (it is not a delta); the reserved bytes count as device
//     memory of kind graph_pool, on the sampled device (graph_pool_device), so peaks and OOMs
//     include them. An op without a sample (SIZE absent: it could not be read) changes nothing.
#pragma once

#include <cstdint>

#include "op_table.h"
#include "trace_format.h"

namespace vt {

// ---- buckets ----

// How memory of each kind is accounted: device memory (cuMemAlloc, stream-ordered, VMM physical
// on a device, arrays), managed, pinned host (incl. registered host memory) and imported (IPC).
enum class Bucket : uint8_t { Device, Managed, PinnedHost, Imported, kCount };
inline constexpr int kBuckets = int(Bucket::kCount);
constexpr Bucket bucket_of(MemKind k) {
  return k == MemKind::Managed                                      ? Bucket::Managed
         : k == MemKind::PinnedHost || k == MemKind::RegisteredHost ? Bucket::PinnedHost
         : k == MemKind::IpcImport                                  ? Bucket::Imported
                                                                    : Bucket::Device;
}

// ---- rule 1 ----

constexpr bool changes_memory(int32_t result) { return result == 0; }  // CUDA_SUCCESS
// CUresult of an allocation that failed for lack of memory (CUDA_ERROR_OUT_OF_MEMORY).
inline constexpr int32_t kResultOutOfMemory = 2;
constexpr bool is_out_of_memory(const OpInfo& op, int32_t result) {
  return op.action == Action::Acquire && result == kResultOutOfMemory;
}

// ---- what an event does ----

// Memory known by the address (or array handle) its acquire returned and its release takes.
constexpr bool keyed_by_address(MemKind k) {
  constexpr uint32_t kAddressed = 1u << unsigned(MemKind::Device) | 1u << unsigned(MemKind::Managed) |
                                  1u << unsigned(MemKind::PinnedHost) | 1u << unsigned(MemKind::RegisteredHost) |
                                  1u << unsigned(MemKind::Async) | 1u << unsigned(MemKind::Array) |
                                  1u << unsigned(MemKind::IpcImport);
  return unsigned(k) < 32 && (kAddressed >> unsigned(k) & 1);  // one test on the hook's path
}

enum class Effect : uint8_t {
  None,           // lookups: no memory
  Allocate,       // an address-keyed allocation becomes live (key: addr)
  Free,           // and goes (key: addr)
  CreateHandle,   // VMM physical memory (key: aux, the handle; location: aux2)
  ReleaseHandle,  // its handle released (key: aux): freed now or at its last unmap (rule 5)
  Map,            // a mapping [addr, addr + size) of handle aux
  Unmap,          // every mapping starting in [addr, addr + size)
  Reserve,        // VA reserved at addr, size bytes
  Unreserve,
  CreatePool,     // pool aux at location aux2
  DestroyPool,    // pool aux
  TrimPool,       // pool aux gives back what is not live
  Teardown,       // a context's memory goes (torn_down_context)
  GraphNode,      // a graph memory node or captured allocation: addr, size bytes, no memory (rule 8)
  GraphPool,      // a sample of the device's graph pool: size reserved, aux used (rule 9)
};

constexpr Effect effect_of(const OpInfo& op) {
  const bool acquire = op.action == Action::Acquire;
  if (keyed_by_address(op.kind)) return acquire ? Effect::Allocate : Effect::Free;
  switch (op.kind) {
    case MemKind::VmmPhysical: return acquire ? Effect::CreateHandle : Effect::ReleaseHandle;
    case MemKind::VmmMapping: return acquire ? Effect::Map : Effect::Unmap;
    case MemKind::VmmReservation: return acquire ? Effect::Reserve : Effect::Unreserve;
    case MemKind::Pool:
      return HookId(op.code - 1) == HookId::cuMemPoolCreate    ? Effect::CreatePool
             : HookId(op.code - 1) == HookId::cuMemPoolDestroy ? Effect::DestroyPool
                                                               : Effect::TrimPool;
    case MemKind::Context: return Effect::Teardown;
    case MemKind::GraphNode: return acquire ? Effect::GraphNode : Effect::None;
    case MemKind::GraphPool: return Effect::GraphPool;
    default: return Effect::None;
  }
}

// ---- rule 2 ----

constexpr bool is_memory_key(uint64_t key) { return key != 0; }

// ---- rule 4 ----

// A CUmemLocation as the recorder writes it (interpose/describe.h): type << 32 | id, with the
// CUmemLocationType values of cuda.h (describe.h checks them against it).
inline constexpr uint32_t kLocationDevice = 1;            // CU_MEM_LOCATION_TYPE_DEVICE
inline constexpr uint32_t kLocationHost = 2;              // CU_MEM_LOCATION_TYPE_HOST
inline constexpr uint32_t kLocationHostNuma = 3;          // CU_MEM_LOCATION_TYPE_HOST_NUMA
inline constexpr uint32_t kLocationHostNumaCurrent = 4;   // CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT
constexpr uint32_t location_type(uint64_t location) { return uint32_t(location >> 32); }
constexpr bool location_is_host(uint64_t location) {
  return location_type(location) >= kLocationHost && location_type(location) <= kLocationHostNumaCurrent;
}

struct Placement {
  int32_t device;
  Bucket bucket;
};
// Where memory at `location` counts (VMM physical memory, a pool's allocations). A location of
// no known type (a driver newer than this build, or none recorded) counts on the event's device.
constexpr Placement placement_at(uint64_t location, int32_t event_device) {
  return location_type(location) == kLocationDevice ? Placement{int32_t(uint32_t(location)), Bucket::Device}
         : location_is_host(location)               ? Placement{event_device, Bucket::PinnedHost}
                                                    : Placement{event_device, Bucket::Device};
}
// Where an allocation from a pool placed at `pool` counts.
constexpr Placement from_pool(Placement pool, int32_t event_device) {
  return {pool.device >= 0 ? pool.device : event_device, pool.bucket};
}

// The pool a stream-ordered allocation came from: the one it names (cuMemAllocFromPoolAsync:
// aux), else 0, the device's current pool.
template <typename E>
constexpr uint64_t named_pool(const E& e) {
  return (e.fields & format::kEvAux) ? e.aux : 0;
}
// The key of the device's current pool (its handle unseen): one per device.
inline constexpr uint64_t kDefaultPoolTag = 0xdefa000000000000ull;
constexpr uint64_t default_pool_key(int32_t device) { return kDefaultPoolTag | uint32_t(device); }
constexpr bool is_default_pool_key(uint64_t key) { return (key >> 48) == (kDefaultPoolTag >> 48); }

// ---- rule 5 ----

constexpr bool handle_freed(bool released, uint32_t mappings) { return released && mappings == 0; }
constexpr bool unmap_removes(uint64_t mapping_va, uint64_t va, uint64_t size) {
  return mapping_va >= va && mapping_va - va < size;
}

// ---- rule 6 ----

// The context a teardown event tore down, 0 when none (a primary context release that was not
// the last keeps it alive: the recorder writes aux2 = 0 then).
template <typename E>
constexpr uint64_t torn_down_context(HookId op, const E& e) {
  return op == HookId::cuCtxDestroy_v2 ? e.aux : e.aux2;
}

// ---- rule 8 ----

// CU_GRAPH_NODE_TYPE_MEM_ALLOC (interpose/describe.h checks it against cuda.h).
inline constexpr uint64_t kGraphNodeMemAlloc = 10;
// A stream-ordered op the recorder marked as made during stream capture.
template <typename E>
constexpr bool captured(const OpInfo& op, const E& e) {
  return op.kind == MemKind::Async && (e.fields & format::kEvAux2) && e.aux2 != 0;
}
// What an event does, when that depends on the event too (captured stream-ordered ops; a
// cuGraphAddNode that adds no memory node): every replay calls this one.
template <typename E>
constexpr Effect effect_of(const OpInfo& op, const E& e) {
  if (captured(op, e)) return op.action == Action::Acquire ? Effect::GraphNode : Effect::None;
  if (op.kind == MemKind::GraphNode && op.action == Action::Acquire &&
      ((e.fields & format::kEvAux2) && e.aux2 != kGraphNodeMemAlloc) &&
      (HookId(op.code - 1) == HookId::cuGraphAddNode || HookId(op.code - 1) == HookId::cuGraphAddNode_v2))
    return Effect::None;  // a kernel, copy, free... node
  return effect_of(op);
}
// The device a graph memory node's memory will come from: its location's (cuGraphAddMemAllocNode
// names one), else the event's.
template <typename E>
constexpr int32_t graph_node_device(const OpInfo& op, const E& e) {
  return HookId(op.code - 1) == HookId::cuGraphAddMemAllocNode && (e.fields & format::kEvAux2) &&
                 location_type(e.aux2) == kLocationDevice
             ? int32_t(uint32_t(e.aux2))
             : e.device;
}

// ---- rule 9 ----

template <typename E>
constexpr bool has_graph_pool_sample(const E& e) {
  return (e.fields & format::kEvSize) != 0;
}
// The device a graph pool sample is of: cuDeviceGraphMemTrim's argument, else the event's.
template <typename E>
constexpr int32_t graph_pool_device(HookId op, const E& e) {
  return op == HookId::cuDeviceGraphMemTrim && (e.fields & format::kEvAux2) ? int32_t(e.aux2) : e.device;
}

}  // namespace vt
