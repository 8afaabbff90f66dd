// The accounting rules, written once: for every event, what memory it makes live or frees, under
// which key, on which device and in which bucket, and when a VMM release really frees. Used by
// the two replays of the same events — the in-process live tracker (interpose/live/live_tracker.cpp:
// `vramtrace top`, the query API, the pytest plugin's limits) and the analyzer's replay
// (analyzer/replay/live_state.cpp: every report) — so that they cannot disagree; the data structures
// differ (the tracker's are lock-light and heap-free on the hook path), the rules do not.
// tests/unit/accounting_test.cpp replays the same sequences, fixed and random, through both and
// compares every figure. Header-only: the preload library and the analyzer both include it.
// The CUDA semantics behind each rule: docs/metrics.md, "Accounting rules".
//
// The rules:
//  1. Only successful calls change memory (a failed call changed nothing in the driver). An OOM is
//     an acquire that failed with CUDA_ERROR_OUT_OF_MEMORY (is_out_of_memory).
//  2. Keys: memory of the address-keyed kinds (device, pitch, managed, pinned and registered host,
//     stream-ordered, arrays and mipmapped arrays, IPC and pool-pointer imports, external
//     mappings) is known by the address its acquire returned and its
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
//       current pool of the event's device (allocation_pool): the pool last made current for
//       that device's location, pinned type (cuDeviceSetMemPool, cuMemSetMemPool with a device
//       location; cuMemGetMemPool reports it), placed by its own location like any pool (a pool
//       created at the host, or making managed memory, and made current counts there, not as
//       device memory) and trimmed by its handle. Destroying a current pool makes the default
//       pool current again (cuda.h), as does a pool created anew at that handle (rule 3). The
//       default pool's allocations count on the event's device under default_pool_key, as do
//       those from a pool the trace did not see created (created before tracing started, or
//       already destroyed); once cuMemGetDefaultMemPool named its handle for a device location,
//       a trim or release threshold (rule 15) of that handle reaches them too. A set or reported current pool
//       that the trace did not see created lives at the location it was made current for; one
//       it saw created keeps its creation's location.
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
//     (graph_node_device). Their frees (free nodes, captured frees) change nothing: a free node,
//     and so a captured cuMemFreeAsync, can only free a graph allocation (cuda.h), which is
//     graph pool memory (rule 9); a captured free of memory allocated outside any graph fails
//     in the driver (rule 1: the memory stays live until its real free). A child graph node
//     (cuGraphAddNode of type GRAPH: which parent a child went into) changes nothing either.
//  9. The graph pool. The driver takes the memory of graph allocations at upload and launch with
//     no API call; the graph ops carry a sample of the device's graph pool (size: reserved
//     bytes, aux: used bytes, cuDeviceGetGraphMemAttribute's *_MEM_CURRENT) taken after the call.
//     A sample sets the pool's figures (it is not a delta); the reserved bytes count as device
//     memory of kind graph_pool, on the sampled device (graph_pool_device), so peaks and OOMs
//     include them. An op without a sample (SIZE absent: it could not be read) changes nothing.
// 10. Imported memory is another process's (or another API's): it counts in the imported bucket,
//     never as device memory, in a peak, as a leak or as an allocation of this process; the
//     report lists what is imported at the end apart from the leaks. Four ways in, one rule:
//     - cuIpcOpenMemHandle (legacy IPC) and cuMemPoolImportPointer (a pointer of an exported
//       pool): address-keyed, their size from cuMemGetAddressRange, freed by cuIpcCloseMemHandle
//       and by cuMemFree(Async) respectively, on the event's device, which for these the
//       recorder sets to the memory's (cuPointerGetAttribute's DEVICE_ORDINAL: the exporter's
//       device, as a VMM import's location names it);
//     - cuMemImportFromShareableHandle: a VMM handle, keyed by the handle like VMM memory, on
//       the device of its location (cuMemGetAllocationPropertiesFromHandle; the event's device
//       when that could not be read). No driver call tells a handle's size: it is what its
//       mappings show, each cuMemMap of it raising it to offset + size when larger
//       (import_size_after_map), and it is freed by rule 5 like any handle. Mappings hold no
//       memory (rule 7), so mapping an import adds nothing to the owner's figures (those are in
//       the owner's trace). An import of this process's own export is a second handle of memory
//       its cuMemCreate counted: it counts as imported too, in that bucket only;
//     - what is mapped from external memory (rule 13).
// 11. Handle references: cuMemCreate and cuMemImportFromShareableHandle give a handle one
//     reference, each cuMemRetainAllocationHandle (which returns the value that mapped the
//     address: AUX) one more, and each cuMemRelease takes one. Rule 5's release is the last
//     reference's: the release of a retained handle frees nothing. A new handle (rule 3) starts
//     with one reference; a retain of a handle the trace never saw made counts no memory.
// 12. Multicast. A multicast object (cuMulticastCreate: handle AUX, size SIZE, team AUX2) holds no
//     memory of its own: each team device's memory is the physical memory bound to it
//     (cuMulticastBindMem / BindAddr, unbound by cuMulticastUnbind), which cuMemCreate counted
//     on that memory's device. So the object and its bindings are in no bucket (never device
//     memory, a peak or a leak); the replay keeps each live object with its creating site, its
//     team (cuMulticastAddDevice) and its bound bytes (bind: + SIZE, unbind: - SIZE), and the
//     report lists them by site. The object goes like VMM memory (rule 5: the later of its
//     handle's last release and its last unmap; it is mapped with cuMemMap). A binding keeps the
//     physical memory bound allocated (cuda.h, cuMemRelease: the memory is freed when all its
//     mappings are unmapped and all references released, and a binding is one): memory released
//     and unmapped while still bound stays live, in its bucket, until its last binding goes,
//     by cuMulticastUnbind or with the multicast object itself (rule 5 applied to the object).
//     A binding (McBinding) is known by its object, its offset in it and the binding event's
//     device, which cuMulticastUnbind names (its `dev`, the device of the memory it unbinds);
//     its memory is cuMulticastBindMem's handle, or for cuMulticastBindAddr the handle mapped
//     at its address (the replay's mappings, rule 5). A bind at a bound key replaces the old
//     binding (rule 3).
// 13. External memory (cuImportExternalMemory) belongs to another API and holds nothing by
//     itself here; what this process maps of it counts as imported (rule 10), address-keyed, on
//     the event's device: a buffer (cuExternalMemoryGetMappedBuffer, SIZE its size; freed by
//     cuMemFree) or a mipmapped array (cuExternalMemoryGetMappedMipmappedArray, SIZE from its
//     descriptor; freed by cuMipmappedArrayDestroy). cuDestroyExternalMemory frees no mapping
//     (cuda.h: they must be freed explicitly). Exports (cuMemExportToShareableHandle,
//     cuIpcGetMemHandle, cuMemPoolExportPointer, cuMemPoolExportToShareableHandle,
//     cuMemGetHandleForAddressRange) and cuMemPoolImportFromShareableHandle hold no memory:
//     an export marks the live allocation it shares (the report's shared allocations, by site).
//     Mipmapped arrays of this process (cuMipmappedArrayCreate) are device memory of kind array.
// 14. Contexts and code. Creating a context (cuCtxCreate*, cuGLCtxCreate*, cuVDPAUCtxCreate*, cuGreenCtxCreate, the
//     first cuDevicePrimaryCtxRetain of a device: later ones are not recorded), loading code
//     (cuModuleLoad*, cuLibraryLoad*, and lazy loading: the first cuLibraryGetModule /
//     cuKernelGetFunction of an object in a context that changed the free memory) and cuCtxSetLimit
//     carry the device's free memory before and after the call (cuMemGetInfo, read by the hook).
//     What it cost (code_cost) is before - after (may be negative: a limit lowered). A context
//     creation without a `before` (no context on that device to ask: the first one) costs what
//     the device uses after it beyond what is accounted there already (tracked allocations and
//     earlier costs): this includes other processes' memory at that moment (docs/metrics.md),
//     so such a cost is marked (CodeCost::after_only): the OOM report keeps it apart from the
//     measured ones (analyzer/judge/oom_verdict.h, split_unattributed). The recorder asks NVML for the
//     device's processes right after its first context: the first list within a second of the
//     cost takes what it lists for other processes off it, and the cost is then measured
//     (first_context_list; LiveState::other_processes_listed).
//     Each cost is kept under its key (code_key: the object made, or for a limit the event's
//     context) and belongs to a context (code_context: a context made is its own; code goes with
//     the context it was loaded in). An unload (cuModuleUnload, cuLibraryUnload) gives back the
//     costs under its key; a teardown (rule 6, also cuCtxDestroy v1, cuCtxDetach,
//     cuGreenCtxDestroy) gives back every cost of that context. These bytes are counted per
//     device in their own figure (contexts, code), never as allocations: not live, not in a
//     peak's bytes, not leaks.
// 15. Release at synchronize. A pool keeps at most its release threshold of reserved memory it
//     does not use and gives the rest back at the next stream, event or context synchronize
//     (cuda.h, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; 0 for a new pool and the default pool, so by
//     default a pool empties at every synchronize; PyTorch and XLA set it to the maximum). The
//     threshold is cuMemPoolSetAttribute's (pool_release_threshold: AUX the pool, SIZE the value;
//     a pool the trace did not see created is its event device's default pool). A kTagPoolSync
//     record (a synchronize after a stream-ordered free or a threshold change, in a context of
//     its device) releases, in every pool living on that device whose inferred footprint is
//     above its threshold, what it does not use down to the threshold, as
//     cuMemPoolTrimTo(threshold): free ranges go largest first (the last in part) until the
//     footprint is the threshold or its live allocations (which of its free blocks the driver
//     keeps is not known, only their merged ranges: the footprint is right, its gaps estimated).
//     cuMemPoolTrimTo(keep) is the same trim with its own `keep`.
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
// Memory of another process or API (rule 10).
constexpr bool is_imported(MemKind k) {
  return k == MemKind::IpcImport || k == MemKind::VmmImport || k == MemKind::ExternalMapping;
}
constexpr Bucket bucket_of(MemKind k) {
  return k == MemKind::Managed                                      ? Bucket::Managed
         : k == MemKind::PinnedHost || k == MemKind::RegisteredHost ? Bucket::PinnedHost
         : is_imported(k)                                           ? Bucket::Imported
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
                                  1u << unsigned(MemKind::IpcImport) | 1u << unsigned(MemKind::ExternalMapping);
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
  ImportHandle,   // an imported VMM handle (key: aux; location: aux2; rule 10)
  RetainHandle,   // one more reference to handle aux (rule 11)
  CreateMulticast,  // multicast object aux of size bytes, team aux2 (rule 12)
  AddDevice,      // a device joined multicast object aux's team
  Bind,           // size bytes bound to multicast object aux
  Unbind,         // size bytes unbound from it
  Export,         // shares a live allocation (addr) or handle (aux), or a pool: no memory (rule 13)
  Code,           // a context or code cost measured around the call (rule 14)
  CodeRelease,    // the costs under a key given back (rule 14)
  PlacePool,      // pool aux lives at location aux2 (a location's pool named: rule 4)
  CurrentPool,    // pool aux is location aux2's current pool (and lives there if not placed: rule 4)
  PoolAttribute,  // pool aux's attribute aux2 set to size (the release threshold: rule 15)
};

constexpr Effect effect_rule(const OpInfo& op) {
  const bool acquire = op.action == Action::Acquire;
  if (keyed_by_address(op.kind)) return acquire ? Effect::Allocate : Effect::Free;
  switch (op.kind) {
    case MemKind::VmmPhysical:
      return !acquire                                          ? Effect::ReleaseHandle
             : op.id == HookId::cuMemRetainAllocationHandle    ? Effect::RetainHandle
                                                               : Effect::CreateHandle;
    case MemKind::VmmImport: return Effect::ImportHandle;
    case MemKind::Multicast:
      return op.id == HookId::cuMulticastCreate      ? Effect::CreateMulticast
             : op.id == HookId::cuMulticastAddDevice ? Effect::AddDevice
             : op.id == HookId::cuMulticastUnbind    ? Effect::Unbind
                                                     : Effect::Bind;
    case MemKind::Sharing:
      return op.id == HookId::cuMemPoolImportFromShareableHandle || op.id == HookId::cuImportExternalMemory ||
                     op.id == HookId::cuDestroyExternalMemory
                 ? Effect::None
                 : Effect::Export;
    case MemKind::VmmMapping: return acquire ? Effect::Map : Effect::Unmap;
    case MemKind::VmmReservation: return acquire ? Effect::Reserve : Effect::Unreserve;
    case MemKind::Pool:
      return op.id == HookId::cuMemPoolCreate    ? Effect::CreatePool
             : op.id == HookId::cuMemPoolDestroy ? Effect::DestroyPool
                                                               : Effect::TrimPool;
    case MemKind::Context: return Effect::Teardown;
    case MemKind::GraphNode: return acquire ? Effect::GraphNode : Effect::None;
    case MemKind::GraphPool: return Effect::GraphPool;
    case MemKind::Code: return acquire ? Effect::Code : Effect::CodeRelease;
    case MemKind::PoolConfig:
      return op.id == HookId::cuMemPoolSetAttribute    ? Effect::PoolAttribute
             : op.id == HookId::cuMemGetDefaultMemPool ? Effect::PlacePool
                                                       : Effect::CurrentPool;
    default: return Effect::None;
  }
}
// effect_rule of every op, worked out at compile time: the replay asks for it several times per
// event (the cascade above was ~10 instructions each time).
struct EffectTable {
  Effect of[kHookCount] = {};
  constexpr EffectTable() {
    for (int i = 0; i < kHookCount; ++i) of[i] = effect_rule(kOps[i]);
  }
};
inline constexpr EffectTable kEffects{};
constexpr Effect effect_of(const OpInfo& op) { return kEffects.of[size_t(op.id)]; }

// ---- rule 15 ----

inline constexpr uint64_t kPoolAttrReleaseThreshold = 4;  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
// The release threshold an attribute event sets (false: it sets another attribute, or no value).
template <typename E>
constexpr bool pool_release_threshold(const E& e, uint64_t* value) {
  if (!(e.fields & format::kEvAux2) || e.aux2 != kPoolAttrReleaseThreshold || !(e.fields & format::kEvSize)) return false;
  *value = e.size;
  return true;
}

// ---- rule 2 ----

constexpr bool is_memory_key(uint64_t key) { return key != 0; }

// ---- rule 4 ----

// A CUmemLocation as the recorder writes it (interpose/entry/describe.h): type << 32 | id, with the
// CUmemLocationType values of cuda.h (describe.h checks them against it).
inline constexpr uint32_t kLocationDevice = 1;            // CU_MEM_LOCATION_TYPE_DEVICE
inline constexpr uint32_t kLocationHost = 2;              // CU_MEM_LOCATION_TYPE_HOST
inline constexpr uint32_t kLocationHostNuma = 3;          // CU_MEM_LOCATION_TYPE_HOST_NUMA
inline constexpr uint32_t kLocationHostNumaCurrent = 4;   // CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT
constexpr uint32_t location_type(uint64_t location) { return location_type_of(location); }
constexpr bool location_is_host(uint64_t location) {
  return location_type(location) >= kLocationHost && location_type(location) <= kLocationHostNumaCurrent;
}

struct Placement {
  int32_t device;
  Bucket bucket;
};
// Where memory at `location` counts (VMM physical memory, a pool's allocations). A location of
// no known type (a driver newer than this build, or none recorded) counts on the event's device.
// A pool making managed memory (kLocationManaged) counts as managed memory: not device memory.
constexpr Placement placement_at(uint64_t location, int32_t event_device) {
  return (location & kLocationManaged)
             ? Placement{location_type(location) == kLocationDevice ? int32_t(uint32_t(location)) : event_device,
                         Bucket::Managed}
         : location_type(location) == kLocationDevice ? Placement{int32_t(uint32_t(location)), Bucket::Device}
         : location_is_host(location)               ? Placement{event_device, Bucket::PinnedHost}
                                                    : Placement{event_device, Bucket::Device};
}
// Where an allocation from a pool placed at `pool` counts.
constexpr Placement from_pool(Placement pool, int32_t event_device) {
  return {pool.device >= 0 ? pool.device : event_device, pool.bucket};
}

// The location whose current pool cuMemAllocAsync takes: the event's device, pinned memory.
constexpr uint64_t device_pool_location(int32_t device) { return uint64_t(kLocationDevice) << 32 | uint32_t(device); }
// Whether a pool made current at `location` (a CurrentPool event's aux2) is one cuMemAllocAsync
// can take: a device location of pinned memory. (The current pools of host locations and of
// managed memory serve no stream-ordered call of the driver API: the replays keep none.)
constexpr bool is_device_pool_location(uint64_t location) {
  return location_type(location) == kLocationDevice && !(location & kLocationManaged);
}
// The pool a stream-ordered allocation came from: the one it names (cuMemAllocFromPoolAsync:
// aux), else its device's current pool, `current(device_pool_location(device))` (the replay's
// table of CurrentPool events: 0 when none was seen, the default pool).
template <typename E, typename Current>
constexpr uint64_t allocation_pool(const E& e, Current current) {
  return (e.fields & format::kEvAux) ? e.aux : current(device_pool_location(e.device));
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

// ---- rules 10 and 11 ----

// An imported handle's size after a mapping of [offset, offset + size) of it (rule 10).
template <typename E>
constexpr uint64_t import_size_after_map(uint64_t known, const E& map) {
  const uint64_t offset = (map.fields & format::kEvAux2) ? map.aux2 : 0;
  const uint64_t end = offset + map.size < offset ? ~0ull : offset + map.size;  // saturating
  return end > known ? end : known;
}
// A handle's references (rule 11), as both replays keep them: released = its first reference
// (from cuMemCreate or the import) is gone, retains = the references retains added and releases
// have not yet taken. A release takes the first one first (which one does not matter: only the
// count does).
// `bindings`: the multicast bindings of its memory (rule 12), which hold it like a reference
// but no cuMemRelease takes.
struct HandleRefs {
  bool released = false;
  uint32_t retains = 0;
  uint32_t bindings = 0;
  void release() {
    if (!released)
      released = true;
    else if (retains > 0)
      --retains;
  }
  bool referenced() const { return !released || retains > 0; }
  // Held beyond its first reference: retained or bound (its memory stays when released).
  bool held() const { return retains > 0 || bindings > 0; }
  // A new handle at this value (rule 3): one reference; the bindings, like the mappings, stay.
  void renew() {
    released = false;
    retains = 0;
  }
};

// ---- rule 12 ----

// A multicast binding: object `mc`, at `offset` in it, made on `device`, of handle `handle`'s memory.
struct McBinding {
  uint64_t mc, offset, handle;
  int32_t device;
};
// The binding a bind event makes; `handle` is the memory's (bound_handle).
template <typename E>
constexpr McBinding binding_of(HookId op, const E& e, uint64_t handle) {
  return {e.aux, op == HookId::cuMulticastBindAddr ? e.aux2 : e.addr, handle, e.device};
}
// cuMulticastBindMem names the memory's handle; cuMulticastBindAddr its address (0 here: the
// replay finds the handle mapped there).
template <typename E>
constexpr uint64_t bound_handle(HookId op, const E& e) {
  return op == HookId::cuMulticastBindMem ? e.aux2 : 0;
}
constexpr bool binds_by_address(HookId op) { return op == HookId::cuMulticastBindAddr; }
// Whether two bindings are at one key (a bind replacing another), or an unbind removes `b`.
constexpr bool same_binding(const McBinding& a, const McBinding& b) {
  return a.mc == b.mc && a.offset == b.offset && a.device == b.device;
}
template <typename E>
constexpr bool unbind_removes(const McBinding& b, const E& unbind) {
  return b.mc == unbind.aux && b.offset == unbind.addr && b.device == int32_t(uint32_t(unbind.aux2));
}

// ---- rule 6 ----

// The context a teardown event tore down, 0 when none (a primary context release that was not
// the last keeps it alive: the recorder writes aux2 = 0 then).
template <typename E>
constexpr uint64_t torn_down_context(HookId op, const E& e) {
  return op == HookId::cuCtxDestroy_v2 || op == HookId::cuCtxDestroy || op == HookId::cuCtxDetach ||
                 op == HookId::cuGreenCtxDestroy
             ? e.aux
             : e.aux2;
}

// ---- rule 8 ----

// CU_GRAPH_NODE_TYPE_MEM_ALLOC and CU_GRAPH_NODE_TYPE_GRAPH, and the ownership bit a child graph
// node's type word carries when the child was moved in (interpose/entry/describe.h checks them against
// cuda.h).
inline constexpr uint64_t kGraphNodeMemAlloc = 10;
inline constexpr uint64_t kGraphNodeGraph = 4;
inline constexpr uint64_t kGraphChildMoved = 1ull << 32;
// A stream-ordered op the recorder marked as made during stream capture.
template <typename E>
constexpr bool captured(const OpInfo& op, const E& e) {
  return op.kind == MemKind::Async && (e.fields & format::kEvAux2) && e.aux2 != 0;
}
// What an event does, when that depends on the event too (captured stream-ordered ops; a
// cuGraphAddNode that adds no memory node): every replay calls this one.
template <typename E>
constexpr Effect effect_of(const OpInfo& op, const E& e) {
  // Both exceptions need the aux2 field, which most events lack: one test for them (the replay
  // calls this once per event: ~9 instructions as a call, issue 43).
  if (__builtin_expect(!(e.fields & format::kEvAux2), 1)) return effect_of(op);
  if (captured(op, e)) return op.action == Action::Acquire ? Effect::GraphNode : Effect::None;
  if (op.kind == MemKind::GraphNode && op.action == Action::Acquire &&
      ((e.fields & format::kEvAux2) && e.aux2 != kGraphNodeMemAlloc) &&
      (op.id == HookId::cuGraphAddNode || op.id == HookId::cuGraphAddNode_v2))
    return Effect::None;  // a kernel, copy, free... node
  return effect_of(op);
}
// The device a graph memory node's memory will come from: its location's (cuGraphAddMemAllocNode
// names one), else the event's.
template <typename E>
constexpr int32_t graph_node_device(const OpInfo& op, const E& e) {
  return op.id == HookId::cuGraphAddMemAllocNode && (e.fields & format::kEvAux2) &&
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

// ---- rule 14 ----

// The event flag of the field that holds meaning `f` for `op` (0: none of them).
constexpr uint8_t field_flag(const OpInfo& op, Field f) {
  return op.fields.addr == f   ? uint8_t(format::kEvAddr)
         : op.fields.size == f ? uint8_t(format::kEvSize)
         : op.fields.aux == f  ? uint8_t(format::kEvAux)
         : op.fields.aux2 == f ? uint8_t(format::kEvAux2)
                               : uint8_t(0);
}
template <typename E>
constexpr bool field_value(const OpInfo& op, const E& e, Field f, uint64_t* v) {
  const uint8_t flag = field_flag(op, f);
  if (!flag || !(e.fields & flag)) return false;
  *v = flag == format::kEvAddr ? e.addr : flag == format::kEvSize ? e.size : flag == format::kEvAux ? e.aux : e.aux2;
  return true;
}

enum class CodeCategory : uint8_t { Context, Module, kCount };  // contexts (and their limits), code
constexpr bool makes_context(HookId id) {
  return id == HookId::cuCtxCreate || id == HookId::cuCtxCreate_v2 || id == HookId::cuCtxCreate_v3 ||
         id == HookId::cuCtxCreate_v4 || id == HookId::cuDevicePrimaryCtxRetain || id == HookId::cuGreenCtxCreate ||
         id == HookId::cuGLCtxCreate || id == HookId::cuGLCtxCreate_v2 || id == HookId::cuVDPAUCtxCreate ||
         id == HookId::cuVDPAUCtxCreate_v2;
}
constexpr CodeCategory code_category(const OpInfo& op) {
  return makes_context(op.id) || op.id == HookId::cuCtxSetLimit ? CodeCategory::Context : CodeCategory::Module;
}
template <typename E>
constexpr uint64_t code_key(const OpInfo& op, const E& e) {
  uint64_t v = 0;
  return field_value(op, e, Field::CodeObject, &v) ? v : e.context;
}
template <typename E>
constexpr uint64_t code_context(const OpInfo& op, const E& e) {
  return makes_context(op.id) ? code_key(op, e) : e.context;
}
// The device whose free memory was read: the one a context was made on, else the event's.
template <typename E>
constexpr int32_t code_device(const OpInfo& op, const E& e) {
  uint64_t v = 0;
  return field_value(op, e, Field::Device, &v) ? int32_t(uint32_t(v)) : e.device;
}
struct CodeCost {
  bool known;
  int64_t bytes;
  bool after_only = false;  // a first context, no `before`: may include other processes' memory
};
// `total`: the device's memory (its device record); `accounted`: what the device's figures
// already hold (tracked device memory and earlier costs), for a context made without a `before`.
template <typename E>
constexpr CodeCost code_cost(const OpInfo& op, const E& e, uint64_t total, uint64_t accounted) {
  uint64_t before = 0, after = 0;
  if (!field_value(op, e, Field::FreeAfter, &after)) return {false, 0};
  if (field_value(op, e, Field::FreeBefore, &before)) return {true, int64_t(before - after)};
  if (!makes_context(op.id) || total == 0 || after > total) return {false, 0};
  const uint64_t used = total - after;
  return {true, used > accounted ? int64_t(used - accounted) : 0, true};
}
// A first context's cost (after_only) holds the other processes' memory of its moment. The
// recorder asks NVML for the device's processes as soon as the context exists (within
// milliseconds): the first list of the device that comes at most this long after the cost was
// measured names them, and what it lists for others comes off the cost (at most all of it).
// The cost is then measured (not after_only). A later list may see other processes that came or
// went since, so none does.
inline constexpr uint64_t kFirstContextListWindowNs = 1'000'000'000;
constexpr bool first_context_list(uint64_t measured_ns, uint64_t list_ns) {
  return list_ns >= measured_ns && list_ns - measured_ns <= kFirstContextListWindowNs;
}

}  // namespace vt
